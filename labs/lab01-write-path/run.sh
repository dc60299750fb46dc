#!/usr/bin/env bash
# Lab 1: the write path. The handout's steps, as commands, for the row in
# LAB_ROW and the count in LAB_COUNT (`auralog lab start 1` names each
# student's).
. "$(dirname "$0")/../lib.sh"
ROW=${LAB_ROW:-7} COUNT=${LAB_COUNT:-50}
step 'auralog sql "create table lab01(...)" and 100 one-row transactions'
auralog sql "drop table if exists lab01; create table lab01(id integer primary key, name text, n int);"
for i in $(seq 1 100); do echo "insert into lab01 values($i, 'row-$i', 0);"; done | auralog sql
sleep 0.5                       # the engine reports every 200 ms: status shows the last report
step auralog status
auralog status | head -2
c0=$(field commits); b0=$(field redo_bytes); r0=$(field records)
step "$COUNT transactions that each update row $ROW"
for i in $(seq 1 "$COUNT"); do echo "update lab01 set n = n + 1 where id = $ROW;"; done | auralog sql
sleep 0.5
c1=$(field commits); b1=$(field redo_bytes); r1=$(field records)
bytes=$(( (b1 - b0) / (c1 - c0) / 6 )); recs=$(( (r1 - r0) / (c1 - c0) ))
echo "per one-row update: $recs records, $bytes bytes of redo per segment; page size $(field page_size)"
