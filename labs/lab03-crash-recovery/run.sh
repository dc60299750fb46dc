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
  t=0
  while [ ! -e "$stop" ]; do
    t=$((t + 1))
    q="begin;"; for k in 1 2 3 4 5; do q="$q insert into lab03 values($t, $k);"; done
    if auralog sql "$q commit;" 2>/dev/null; then echo "$t" >> "$acks"; fi
  done
) &
writer=$!
sleep 1.5
step auralog fault engine-crash
auralog fault engine-crash
step auralog cluster up
auralog cluster up | tail -1
sleep 1                          # the writer goes on against the recovered engine
touch "$stop"                    # then stop it (by hand: Ctrl-C)
wait "$writer" || true
rm -f "$stop"
step auralog status
auralog status | head -3
echo "$(wc -l < "$acks") transactions acknowledged"
