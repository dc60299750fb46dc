#!/usr/bin/env bash
# Lab 8: inside a segment. The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
rows() { for i in $(seq "$1" "$2"); do echo "insert into lab08 values($i, printf('%0200d', $i));"; done | auralog sql > /dev/null; }
auralog sql "drop table if exists lab08; create table lab08(i int, pad text);"

# Part 1: a hole, and who fills it.
step auralog fault gossip C1 off
auralog fault gossip C1 off
step auralog fault drop C1 1
auralog fault drop C1 1
step "auralog sql \"insert into lab08 values(0, 'lost on C1');\""
auralog sql "insert into lab08 values(0, 'lost on C1');"
sleep 1.5                        # the writer stops waiting for C1's answer (1 s)
step "20 rows, one transaction each"
rows 1 20
sleep 1.5                        # the coordinator sees C1's hole for a while
step "auralog status | grep 'pg 0 '"
auralog status | grep 'pg 0 '
step auralog fault gossip C1 on
auralog fault gossip C1 on
sleep 1
step "auralog status | grep 'pg 0 '"
auralog status | grep 'pg 0 '

# Part 2: coalescing and GC under a reader's read point. The replica
# cancels a reader older than 5 s, so the reader, the writes and the look
# at status are one command line (one step: no pause between them).
step "(echo 'begin;'; echo 'select count(*) from lab08;'; sleep 4; echo 'commit;') | auralog sql --replica 1 & sleep 1; for i in \$(seq 21 60); do echo \"insert into lab08 values(\$i, 'x');\"; done | auralog sql; sleep 1; auralog status | sed -n '/^pgmrpl/p; /^oldest read point/p; /^storage/,/^  C2 /p'"
(echo 'begin;'; echo 'select count(*) from lab08;'; sleep 4; echo 'commit;') | auralog sql --replica 1 &
reader=$!
sleep 1
rows 21 60
sleep 1
auralog status | sed -n '/^pgmrpl/p; /^oldest read point/p; /^storage/,/^  C2 /p'
wait "$reader"                   # the reader commits: its read point goes
step "auralog sql \"insert into lab08 values(61, 'after the reader');\""
auralog sql "insert into lab08 values(61, 'after the reader');"
sleep 2                          # the segments hear the new PGMRPL; GC runs every second
step "auralog status | sed -n '/^pgmrpl/p; /^oldest read point/p; /^storage/,/^  C2 /p'"
auralog status | sed -n '/^pgmrpl/p; /^oldest read point/p; /^storage/,/^  C2 /p'
