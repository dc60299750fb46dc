#!/usr/bin/env bash
# Lab 3: crash recovery. The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
auralog sql "drop table if exists lab03; create table lab03(txn int, k int);"
acks="$AURALOG_DIR/labs/lab03-acks.txt"
: > "$acks"
step 'a writer commits transactions of 5 rows, noting each acknowledged one'
(
  for t in $(seq 1 300); do
    q="begin;"; for k in 1 2 3 4 5; do q="$q insert into lab03 values($t, $k);"; done
    if auralog sql "$q commit;" 2>/dev/null; then echo "$t" >> "$acks"; fi
  done
) &
writer=$!
sleep 0.6
step auralog fault engine-crash
auralog fault engine-crash
step auralog cluster up
auralog cluster up | tail -1
wait "$writer" || true
step auralog status
auralog status | head -3
echo "$(wc -l < "$acks") transactions acknowledged"
cat > "$ANSWERS" <<ANS
epoch: $(field epoch)
lost_acknowledged: no, every acknowledged transaction is there, whole
truncated_because: nothing above the vdl was acknowledged, and a partial mtr must not be seen
ANS
echo "reference answers written to $ANSWERS"
