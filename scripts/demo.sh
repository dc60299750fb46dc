#!/usr/bin/env bash
# make demo: start the local cluster (coordinator, 6 storage nodes two per
# AZ, engine), run a write workload through SQL while showing the VDL
# advance, then the redo bytes shipped per transaction beside the page size.
set -euo pipefail
bin=${1:-build/auralog}
dir=${AURALOG_DIR:-$HOME/.auralog}

echo "== auralog cluster up --dir $dir"
"$bin" cluster up --dir "$dir"
conf="$dir/cluster.json"
get() { sed -n "s/.*\"$1\":[[:space:]]*\"\([^\"]*\)\".*/\1/p" "$conf"; }
# Every command finds the cluster by its directory (cluster.json), and sql
# the writer through the coordinator (after a failover, a former replica).
export AURALOG_DIR="$dir"
unset AURALOG_COORD AURALOG_ENGINE

field() { "$bin" status --json | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }

echo
echo "== a write workload: 5 rounds of 200 one-row transactions"
"$bin" sql "create table if not exists demo(id integer primary key, name text, n int);
            insert or ignore into demo(id, name, n)
              with recursive g(i) as (select 1 union all select i + 1 from g where i < 1000)
              select i, 'row-' || i, 0 from g;"
sleep 0.5                      # the engine reports every 200 ms
c0=$(field commits); b0=$(field redo_bytes)
for round in 1 2 3 4 5; do
  for i in $(seq 1 200); do echo "update demo set n = n + 1 where id = $(( (round * 200 + i) % 1000 + 1 ));"; done |
    "$bin" sql
  sleep 0.3
  printf "  round %d: vdl %-8s vcl %-8s commits %s\n" "$round" "$(field vdl)" "$(field vcl)" "$(field commits)"
done
c1=$(field commits); b1=$(field redo_bytes)
ps=$(field page_size)
echo
echo "== redo shipped per transaction (one small row updated)"
awk -v c=$((c1 - c0)) -v b=$((b1 - b0)) -v ps="$ps" 'BEGIN {
  printf "  %d commits, %d bytes of redo on the wire to 6 segments\n", c, b
  printf "  %.0f bytes per transaction per segment, page size %d: %.0fx smaller than shipping the page\n", b / c / 6, ps, ps / (b / c / 6) }'
echo
"$bin" status
echo
echo "The cluster keeps running. Try:"
echo "  $bin sql                     # an SQL shell on the engine"
echo "  $bin status --watch          # redraws every second"
echo "  $bin cluster down            # stop it"
echo
echo "Dashboard: $(get dashboard)   (open it in a browser)"
echo "First lab: labs/lab01-write-path/README.md (then: $bin lab check 1)"
echo "Benchmarks: $bin bench   (about two minutes, a cluster of its own; see bench/README.md)"
