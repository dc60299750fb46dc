#!/usr/bin/env bash
# Lab 3: crash recovery. The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
auralog sql "drop table if exists lab03; create table lab03(txn int, k int);"
acks="$AURALOG_DIR/labs/lab03-acks.txt"
: > "$acks"
stop="$AURALOG_DIR/labs/lab03-stop"
rm -f "$stop"
step 'a writer commits transactions of 5 rows until stopped, noting each acknowledged one'
(
  unset AURALOG_ENGINE           # each statement asks the coordinator who writes now
  t=0
  while [ ! -e "$stop" ]; do
    t=$((t + 1))
    q="begin;"; for k in 1 2 3 4 5; do q="$q insert into lab03 values($t, $k);"; done
    if auralog sql "$q commit;" 2>/dev/null; then echo "$t" >> "$acks"; fi
  done
) &
writer=$!
sleep 1.5
e=$(field epoch)
step auralog fault writer-crash
auralog fault writer-crash
step auralog cluster up
auralog cluster up | tail -1
# The coordinator promotes the replica once the writer has been silent
# WRITER_LOST_MS (a cluster with --no-failover: `up` restarted it in place);
# the new writer recovers the volume, and the load goes on against it.
for i in $(seq 1 100); do [ "$(field epoch)" -gt "$e" ] 2>/dev/null && break; sleep 0.1; done
sleep 1
touch "$stop"                    # then stop it (by hand: Ctrl-C)
wait "$writer" || true
rm -f "$stop"
step auralog status
auralog status | head -3
echo "$(wc -l < "$acks") transactions acknowledged"
