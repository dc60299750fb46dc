#!/usr/bin/env bash
# Lab 9: read replicas, their lag, a long reader holding GC, failover.
# The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
# The writer changes in step 3: let every `auralog sql` ask the
# coordinator who writes now, rather than keep the first writer's address.
unset AURALOG_ENGINE
now() { date +%s%3N; }
# A number from status --json's read_hold object (the PGMRPL, what holds
# it, the segments' lowest GC point) or its failover object.
hold() { auralog status --json | grep -o '"read_hold":{[^}]*}' | grep -o "\"$1\": *[0-9]*" |
         sed 's/.*: *//'; }
failovers() { auralog status --json | grep -o '"failovers": *[0-9]*' | sed 's/.*: *//'; }
# Run a test until it passes, for at most $1 ms.
within() {
  local t=$(( $(now) + $1 )); shift
  until "$@"; do
    [ "$(now)" -lt "$t" ] || { echo "gave up waiting: $*"; exit 1; }
    sleep 0.05
  done
}
write() { auralog sql "insert into lab09(step, at) values('$1', $(now));"; }

step 'auralog sql "create table lab09 ..."; then 20 inserts, each its own transaction'
auralog sql "drop table if exists lab09;
             create table lab09(id integer primary key, step text, at integer);"
for i in $(seq 1 20); do write step1; done
step 'auralog sql --replica 1 "select count(*) from lab09;"   # the replica has them'
replica_has() { [ "$(auralog sql --replica 1 'select count(*) from lab09;' 2>/dev/null)" = "$1" ]; }
within 5000 replica_has 20
auralog sql --replica 1 "select count(*) from lab09;"
step 'auralog status | grep -E "^(pgmrpl|replica)"   # its applied VDL and its lag'
# The writer lists its replica in its next report (every 200 ms).
replica_listed() { auralog status | grep -q '^replica '; }
within 5000 replica_listed
auralog status | grep -E '^(pgmrpl|replica)'

step "for i in \$(seq 1 100); do auralog sql \"insert into lab09(step) values('held');\"; sleep 0.1; done &   # a writer, for ten seconds or so"
for i in $(seq 1 100); do write held > /dev/null 2>&1 || true; sleep 0.1; done &
loader=$!
line="(echo 'BEGIN;'; echo 'SELECT count(*) FROM lab09;'; sleep 4; echo 'SELECT count(*) FROM lab09;'; echo 'COMMIT;') | auralog sql --replica 1 & sleep 2; auralog status | grep -A1 '^oldest read point'; auralog status | sed -n '/^storage/,/^pgs/p'"
# One pasted line (the handout's): a person who typed the reader's
# statements would pass the replica's --max-read-age (5 s) before the
# second count, and never see it equal the first.
step_now "$line"
# The binary itself, not the auralog() function: $! must be the client.
( echo 'BEGIN;'; echo 'SELECT count(*) FROM lab09;'; sleep 4; echo 'SELECT count(*) FROM lab09;'
  echo 'COMMIT;' ) | "$AURALOG" sql --replica 1 > "$AURALOG_DIR/lab09-reader.out" 2>&1 &
reader=$!
sleep 2
# Until the replica has reported its reader's read point held 1.5 s.
held_long() { [ "$(hold held_ms)" -ge 1500 ] 2>/dev/null; }
within 2500 held_long
held=$(hold pgmrpl)
auralog status | grep -A1 '^oldest read point'
auralog status | sed -n '/^storage/,/^pgs/p' | sed '$d'
wait "$reader" || echo "(the reader failed: see below)"
echo "the reader's two counts (one snapshot, whatever the writer did):"
cat "$AURALOG_DIR/lab09-reader.out"
# A person is slower than the ten-second writer: it has ended before they
# look again, so nothing is written after the PGMRPL moves on. The
# segments hear it all the same (the writer tells an idle PG's segments a
# PGMRPL that moved, vtell.c vtell_pgmrpl), and GC passes the old point.
kill "$loader" 2>/dev/null || true
wait "$loader" 2>/dev/null || true
step 'auralog status   # again, until every segment'"'"'s gc point has passed the old read point'
gc_past() { [ "$(hold min_gc_lsn)" -gt "$held" ]; }
within 15000 gc_past
auralog status | sed -n '/^storage/,/^pgs/p' | sed '$d'
step 'auralog fault writer-crash   # kill the writer'
before=$(failovers)
auralog fault writer-crash
step 'auralog status   # until the coordinator has promoted the replica'
promoted() { [ "$(failovers)" -gt "$before" ]; }
within 15000 promoted
auralog status | grep -A1 '^failover'
step 'auralog cluster up   # the old writer comes back, as a read replica'
auralog cluster up | grep -E '^  (engine|R[0-9]+) '
step 'auralog sql "insert ..."; auralog sql --replica 1 "select count(*) from lab09;"'
write step3
n=$(auralog sql "select count(*) from lab09;")
within 10000 replica_has "$n"
auralog sql --replica 1 "select count(*) from lab09;"
within 5000 replica_listed
auralog status | grep -E '^(engine|replica)'
