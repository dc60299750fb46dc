#!/usr/bin/env bash
# make demo: start the local cluster (coordinator + 6 storage nodes, two
# per AZ) as real processes, then show what the coordinator sees.
set -euo pipefail
bin=${1:-build/auralog}
dir=${AURALOG_DIR:-$HOME/.auralog}

echo "== auralog cluster up --dir $dir"
"$bin" cluster up --dir "$dir"
echo
echo "== auralog status"
"$bin" status --coord "$(sed -n 's/.*"coord": *"\([^"]*\)".*/\1/p' "$dir/cluster.json")"
echo
echo "The cluster keeps running. Try:"
echo "  $bin status --watch          # redraws every second"
echo "  $bin status --json           # what labs and checks read"
echo "  $bin cluster down            # stop it"
