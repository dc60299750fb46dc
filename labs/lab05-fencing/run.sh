#!/usr/bin/env bash
# Lab 5: epochs and fencing. The handout's steps, as commands, for the
# rows in LAB_COUNT (`auralog lab start 5` names each student's).
. "$(dirname "$0")/../lib.sh"
COUNT=${LAB_COUNT:-1}
# FIRST: the writer now (what `lab start 5` and `auralog status` print).
# A student's shell names no engine: each `auralog sql` below without
# --engine asks the coordinator who writes, as the student's does.
first=$AURALOG_ENGINE
unset AURALOG_ENGINE
auralog sql "drop table if exists lab05; create table lab05(writer text);"
second=127.0.0.1:$(( ${first##*:} + 1 ))
step "auralog engine --listen $second &   # a second writer"
# The binary itself, not the auralog() function: $! must be the engine.
"$AURALOG" engine --listen "$second" > "$AURALOG_DIR/log/engine-second.log" 2>&1 &
pid=$!
until auralog sql --engine "$second" "select 1" > /dev/null 2>&1; do sleep 0.1; done
for i in $(seq 1 "$COUNT"); do echo "insert into lab05 values('second');"; done |
  auralog sql --engine "$second"
step "auralog sql --engine $first \"insert ...\"   # through the first engine, named"
if msg=$(auralog sql --engine "$first" "insert into lab05 values('first-after');" 2>&1); then
  echo "unexpected: the first engine still writes"; exit 1
fi
echo "$msg"
# One pasted line, as the handout's: with a person's pause after the
# second engine stops, the coordinator (no writer heard for 2.5 s) would
# promote the replica first, and engine-crash would crash that new writer.
step "pkill -f \"engine --listen $second\"; auralog fault engine-crash; auralog cluster up   # stop the second, replace the fenced one"
kill "$pid"; wait "$pid" || true
auralog fault engine-crash
auralog cluster up | tail -1
auralog sql "select writer, count(*) from lab05 group by writer;"
step 'auralog status --json   # the truncations: each recovery'"'"'s, with its epoch'
auralog status --json | grep -o '"truncations":\[[^]]*\]'
