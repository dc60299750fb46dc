#!/usr/bin/env bash
# Lab 4: gossip and catch-up. The handout's steps, as commands, for the AZ
# in LAB_AZ (`auralog lab start 4` names each student's).
. "$(dirname "$0")/../lib.sh"
AZ=${LAB_AZ:-C}
auralog sql "drop table if exists lab04; create table lab04(i int, pad text);"
step auralog fault partition "$AZ"
auralog fault partition "$AZ"
for i in $(seq 1 50); do echo "insert into lab04 values($i, printf('%0200d', $i));"; done | auralog sql
sleep 2.5                        # the coordinator sees the AZ fall behind its peers
auralog status | tail -2
step auralog fault heal
auralog fault heal
sleep 2
auralog status | tail -2
step "grep 'gossip: ' \$AURALOG_DIR/log/${AZ}1.log"
grep 'gossip: ' "$AURALOG_DIR/log/${AZ}1.log" | tail -2
