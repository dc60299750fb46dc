#!/usr/bin/env bash
# Lab 13: the binlog, community against enhanced. The handout's steps, as
# commands, for the table in LAB_TABLE and LAB_TXNS transactions (`auralog
# lab start 13` names each student's). LAB_BENCH_S, LAB_SIZES and
# LAB_BENCH_PORT / LAB_REC_PORT shorten or place the benches (a test's
# own ports).
. "$(dirname "$0")/../lib.sh"
T=${LAB_TABLE:-lab13_orders} K=${LAB_TXNS:-60}
S=${LAB_BENCH_S:-5} SIZES=${LAB_SIZES:-8,32,64}
ports=()
[ -n "${LAB_BENCH_PORT:-}" ] && ports=(--base-port "$LAB_BENCH_PORT")
rports=()
[ -n "${LAB_REC_PORT:-}" ] && rports=(--base-port "$LAB_REC_PORT")

step "auralog bench binlog --clients 8 --rounds 1 --duration $S"
auralog bench binlog --clients 8 --rounds 1 --duration "$S" --no-limit "${ports[@]}"

step "auralog bench recovery --binlog community,enhanced --sizes $SIZES --repeats 1"
auralog bench recovery --binlog community,enhanced --sizes "$SIZES" --repeats 1 "${rports[@]}"

# The replica needs the volume's binlog in the storage tier.
step auralog binlog status
if ! auralog binlog status > /dev/null 2>&1; then
  step "auralog cluster down; auralog cluster up --binlog enhanced   # the volume keeps a binlog"
  auralog cluster down
  auralog cluster up --binlog enhanced > /dev/null
fi
auralog binlog status

step "auralog sql \"create table $T(i integer primary key, note text);\""
auralog sql "create table $T(i integer primary key, note text);"
replica="$AURALOG_DIR/labs/lab13-replica.db"
mkdir -p "$AURALOG_DIR/labs"
step "auralog binlog apply --into $replica --name lab13 --follow &"
"$AURALOG" binlog apply --into "$replica" --name lab13 --follow > "$AURALOG_DIR/lab13-apply.out" 2>&1 &
apply=$!
trap 'kill $apply 2>/dev/null || true' EXIT

step "for i in \$(seq 1 $K); do auralog sql \"insert into $T values(\$i, 'tx \$i');\"; done"
for i in $(seq 1 "$K"); do auralog sql "insert into $T values($i, 'tx $i');"; done

# The stream has every transaction once it is durable (the binlog's
# segments hear so within a tick of the writer going idle), and the
# consumer catches up.
step auralog binlog status
for k in $(seq 1 60); do
  n=$(auralog binlog tail --from 0 | grep -cF "  $T  insert" || true)
  last=$(auralog binlog tail --from 0 | grep -F "  $T  insert" | tail -1 | cut -d: -f1)
  pos=$(auralog binlog status | awk '$1 == "lab13" && $2 == "at" { print $3 }')
  [ "$n" = "$K" ] && [ -n "$pos" ] && [ "$pos" -ge "$last" ] && break
  sleep 0.5
done
auralog binlog status
step "kill %1   # the consumer stops"
kill "$apply"
wait "$apply" 2>/dev/null || true
trap - EXIT

step "auralog sql \"select count(*), sum(i) from $T;\""
auralog sql "select count(*), sum(i) from $T;"
step "sqlite3 $replica \"select count(*), sum(i) from $T;\""
sqlite3 "$replica" "select count(*), sum(i) from $T;"
step "auralog binlog tail --from $((last - 10))"
auralog binlog tail --from $((last - 10))
