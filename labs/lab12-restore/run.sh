#!/usr/bin/env bash
# Lab 12: backup and restore. The handout's steps, as commands, for the
# table in LAB_TABLE with LAB_ROWS rows (`auralog lab start 12` names each
# student's), restored into volume LAB_INTO.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
T=${LAB_TABLE:-lab12_orders} N=${LAB_ROWS:-500} INTO=${LAB_INTO:-lab12_restored}
# A retry on the same cluster: the name is taken, a restore makes a new volume.
k=2
while auralog status --volume "$INTO" --json 2>/dev/null | grep -q '"exists": *true'; do
  INTO=${LAB_INTO:-lab12_restored}$k
  k=$((k + 1))
done

step auralog backup status
auralog backup status
# The writes go on through the lab (the handout: a second terminal, or &).
step "bash labs/lab12-restore/writes.sh &"
bash "$here/writes.sh" > "$AURALOG_DIR/lab12-writes.out" 2>&1 &
writes=$!
trap 'kill $writes 2>/dev/null || true' EXIT
sleep 2

step "auralog sql \"create table $T(...); with recursive s(i) as (...) insert into $T ...\""
auralog sql "create table $T(i integer primary key, note text); with recursive s(i) as (select 1 union all select i + 1 from s where i < $N) insert into $T select i, 'row ' || i from s;"
step "auralog sql \"select count(*) from $T;\""
auralog sql "select count(*) from $T;"
sleep 2
# A retry: the journal already names an earlier drop of T; ours is the next.
drops() { auralog journal --kind ddl --all | grep -F ": drop table $T at lsn " || true; }
before=$(drops | wc -l)
step "auralog sql \"drop table $T;\"   # the mistake"
auralog sql "drop table $T;"
sleep 2
step "kill %1   # the writes stop"
kill "$writes"
wait "$writes" 2>/dev/null || true
trap - EXIT
tail -2 "$AURALOG_DIR/lab12-writes.out"

# Find the moment: the drop's commit LSN, in the journal.
step "auralog journal --kind ddl"
auralog journal --kind ddl --last 6
for k in $(seq 1 20); do
  [ "$(drops | wc -l)" -gt "$before" ] && break
  sleep 0.5                    # the writer reports it once the VDL covers it
done
[ "$(drops | wc -l)" -gt "$before" ] || { echo "the journal has no new drop of $T"; exit 1; }
D=$(drops | tail -1 | awk '{print $NF}')
echo "the drop committed at lsn $D"

# The backup must reach just before it (it stages every half second).
step auralog backup status
for k in $(seq 1 60); do
  hi=$(auralog backup status | sed -n 's/^restorable: any LSN from [0-9]* to \([0-9]*\).*/\1/p')
  [ -n "$hi" ] && [ "$hi" -ge $((D - 1)) ] && break
  sleep 0.5
done
auralog backup status | tail -1

step "auralog restore --to-lsn $((D - 1)) --into $INTO"
auralog restore --to-lsn $((D - 1)) --into "$INTO"

# Serve the restored volume with an engine of its own, and look.
w=$(auralog status --json | grep -o '"writer": *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/')
port=127.0.0.1:$(( ${w##*:} + 3 ))
step "auralog engine --volume $INTO --listen $port &"
"$AURALOG" engine --volume "$INTO" --listen "$port" > "$AURALOG_DIR/log/engine-$INTO.log" 2>&1 &
eng=$!
trap 'kill $eng 2>/dev/null || true' EXIT
until auralog sql --engine "$port" "select 1" > /dev/null 2>&1; do sleep 0.1; done
step "auralog sql --engine $port \"select count(*), min(i), max(i) from $T; select count(*) from lab12_log;\""
auralog sql --engine "$port" "select count(*), min(i), max(i) from $T; select count(*) from lab12_log;"
step "auralog sql \"select count(*) from lab12_log;\"   # the live volume"
auralog sql "select count(*) from lab12_log;"
step "kill %2   # the restored volume's engine stops"
kill "$eng"
wait "$eng" 2>/dev/null || true
trap - EXIT
