#!/usr/bin/env bash
# Lab 2: quorums. The handout's steps, as commands, for the assignment in
# LAB_AZ (the AZ to take out), LAB_NODE (AZ+1's one more node) and
# LAB_SLOW (the node to slow): `auralog lab start 2` names each student's.
. "$(dirname "$0")/../lib.sh"
AZ=${LAB_AZ:-B} NODE=${LAB_NODE:-A1} SLOW=${LAB_SLOW:-C1}
auralog sql "drop table if exists lab02; create table lab02(step text, i int);"
step auralog fault az-down "$AZ"
auralog fault az-down "$AZ"
for i in $(seq 1 20); do echo "insert into lab02 values('az-down', $i);"; done | auralog sql
auralog status | tail -2
step auralog fault node-stop "$NODE"
auralog fault node-stop "$NODE"
step 'auralog sql "select count(*) from lab02"   # reads still work (3 of 6: Vr)'
auralog sql "select count(*) from lab02;"
step 'auralog sql "insert ..."   # waits, then fails: no write quorum (the error names the VDL)'
if auralog sql "insert into lab02 values('az-plus-one', 1);"; then
  echo "unexpected: the commit went through with 3 of 6 segments"; exit 1
fi
step 'auralog sql --wait 5 "select count(*) from lab02"   # waits 5 s, then fails: it would show a row not durable'
# As a student's shell does, with no AURALOG_ENGINE: `auralog sql` asks the
# coordinator for the writer and waits while it holds the read back.
if (unset AURALOG_ENGINE; auralog sql --wait 5 "select count(*) from lab02;"); then
  echo "unexpected: a read showed a commit that is not durable"; exit 1
fi
step "auralog fault az-up $AZ; auralog fault node-start $NODE"
auralog fault az-up "$AZ"
auralog fault node-start "$NODE"
sleep 1
auralog sql "select step, count(*) from lab02 group by step;"
step "auralog fault slow $SLOW 300, then 20 commits"
auralog fault slow "$SLOW" 300
t0=$(date +%s%N)
for i in $(seq 1 20); do echo "insert into lab02 values('slow', $i);"; done | auralog sql
t1=$(date +%s%N)
auralog fault slow "$SLOW" 0
echo "20 commits with $SLOW 300 ms late: $(( (t1 - t0) / 20000000 )) ms each"
