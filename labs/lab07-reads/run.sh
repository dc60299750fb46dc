#!/usr/bin/env bash
# Lab 7: what a reader sees. The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
first=$AURALOG_ENGINE                     # the writer now: durable reads
second=127.0.0.1:$(( ${first##*:} + 1 ))  # a second writer, started in step 3
unset AURALOG_ENGINE                      # plain `auralog sql` asks the coordinator who writes
out=$AURALOG_DIR/labs
mkdir -p "$out"
auralog sql "drop table if exists lab07; create table lab07(k int, step text);
  insert into lab07 values(1, 'before'), (2, 'before'), (3, 'before');"
# "waiting" while a background client has no answer yet.
state() { if kill -0 "$1" 2>/dev/null; then echo waiting; else echo answered; fi; }

step 'auralog fault az-down B; auralog fault az-down C   # only AZ A: no write quorum'
auralog fault az-down B; auralog fault az-down C
step "auralog sql \"insert into lab07 values(4, 'durable');\" &"
auralog sql "insert into lab07 values(4, 'durable');" > "$out/lab07-insert4.out" 2>&1 &
w=$!
sleep 0.5
step 'auralog sql "select count(*) from lab07;" &   # durable reads'
auralog sql "select count(*) from lab07;" > "$out/lab07-select4.out" 2>&1 &
r=$!
sleep 2
echo "after 2 s: the insert is $(state $w), the select is $(state $r)"
step 'auralog fault az-up B; auralog fault az-up C'
auralog fault az-up B; auralog fault az-up C
if wait "$w"; then echo "the insert: acknowledged"; else echo "the insert: $(cat "$out/lab07-insert4.out")"; fi
wait "$r" || true
echo "the select: $(cat "$out/lab07-select4.out")"
sleep 0.5                                 # the coordinator sees the VDL move

step "auralog engine --listen $second --reads immediate &   # a second writer"
# The binary itself, not the auralog() function: $! must be the engine.
"$AURALOG" engine --listen "$second" --reads immediate > "$AURALOG_DIR/log/engine-lab07.log" 2>&1 &
pid=$!
until auralog sql --engine "$second" "select 1" > /dev/null 2>&1; do sleep 0.1; done
step "auralog sql --engine $first \"select count(*) from lab07;\"   # the first writer, until it refuses"
# Until its next lease probe it has not heard of the new epoch, and may
# still answer (within its lease); then it refuses, for good.
for i in $(seq 100); do
  if msg=$(auralog sql --engine "$first" "select count(*) from lab07;" 2>&1); then
    echo "answered: $msg"
  else
    echo "$msg"; break
  fi
  sleep 0.05
done

step 'auralog fault az-down B; auralog fault az-down C'
auralog fault az-down B; auralog fault az-down C
step "auralog sql --engine $second \"insert into lab07 values(5, 'immediate');\" &"
auralog sql --engine "$second" "insert into lab07 values(5, 'immediate');" \
  > "$out/lab07-insert5.out" 2>&1 &
w=$!
sleep 0.5
step "auralog sql --engine $second \"select count(*) from lab07;\"   # immediate reads"
auralog sql --engine "$second" "select count(*) from lab07;"
sleep 2                                   # the coordinator records the stall
echo "after 2 s: the insert is $(state $w)"
step 'auralog status   # the writer counts the replies that showed data above its VDL'
auralog status | grep '^reads' || true

# One command line: the coordinator would promote the replica 2.5 s after
# the crash (while B and C are down), and engine-crash would then crash
# it rather than the fenced first writer.
step "pkill -9 -f 'engine --listen $second'; auralog fault partition A; auralog fault engine-crash; auralog cluster up   # the second writer crashes: row 5 was never acknowledged"
# By its address, not a job number: %1 may be another job, or a wrapper
# (sudo, a shell function) whose death leaves the engine running.
pkill -9 -f "engine --listen $second" || true
auralog fault partition A
auralog fault engine-crash
auralog cluster up | tail -1
wait "$pid" 2>/dev/null || true
wait "$w" || true
echo "the insert: $(cat "$out/lab07-insert5.out")"
step 'auralog fault heal'
auralog fault heal

step 'auralog sql "select count(*) from lab07;"'
auralog sql "select count(*) from lab07;"
step 'auralog sql "select step, count(*) from lab07 group by step;"'
auralog sql "select step, count(*) from lab07 group by step;"
step 'auralog status   # the epoch now, and the newest truncation'
auralog status | grep '^volume'
auralog status | grep 'truncated' | tail -1
step "auralog sql \"insert into lab07 values(6, 'after');\""
auralog sql "insert into lab07 values(6, 'after');"
