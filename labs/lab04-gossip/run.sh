#!/usr/bin/env bash
# Lab 4: gossip and catch-up. The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
auralog sql "drop table if exists lab04; create table lab04(i int, pad text);"
step auralog fault partition C
auralog fault partition C
for i in $(seq 1 50); do echo "insert into lab04 values($i, printf('%0200d', $i));"; done | auralog sql
sleep 0.5
auralog status | tail -2
step auralog fault heal
auralog fault heal
sleep 2
auralog status | tail -2
step "grep 'gossip: ' \$AURALOG_DIR/log/C1.log"
grep 'gossip: ' "$AURALOG_DIR/log/C1.log" | tail -2
cat > "$ANSWERS" <<ANS
who_resends: their peers, by gossip; the engine does not resend durable records
scl_meaning: a hole in the chain of backlinks keeps the scl below it
ANS
echo "reference answers written to $ANSWERS"
