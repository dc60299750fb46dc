#!/usr/bin/env bash
# Lab 6: across machines (network namespaces as stand-ins). The handout's
# steps, as commands. Needs root, for the namespaces.
. "$(dirname "$0")/../lib.sh"
ns="$(dirname "$AURALOG")/../scripts/netns-cluster.sh"
nsdir="$AURALOG_DIR/netns"
export AURALOG_KEY="${AURALOG_KEY:-$AURALOG_DIR/cluster.key}"   # this cluster's key: the netns one shares it
AURALOG="$AURALOG" "$ns" down "$nsdir" > /dev/null 2>&1 || true
step "scripts/netns-cluster.sh up $nsdir"
AURALOG="$AURALOG" "$ns" up "$nsdir"
export AURALOG_DIR="$nsdir"      # tools find the netns cluster by its cluster.json
unset AURALOG_COORD AURALOG_ENGINE
auralog status | sed -n 3,6p
auralog sql "drop table if exists lab06; create table lab06(step text, i int);"
step "scripts/netns-cluster.sh cut B $nsdir"
"$ns" cut B "$nsdir"
sleep 1.5                        # the coordinator misses B's heartbeats
auralog status | sed -n 3,6p
state=$(auralog status --json | grep -o '"id":"B1","az":"B","addr":"[^"]*","state":"[a-z]*"' | sed 's/.*"state":"//; s/"//')
for i in $(seq 1 20); do echo "insert into lab06 values('cut', $i);"; done | auralog sql
sleep 0.5                        # the writer reports its commits to the coordinator
step "scripts/netns-cluster.sh restore B $nsdir"
"$ns" restore B "$nsdir"
sleep 2.5                        # B comes back and catches up by gossip
auralog status | tail -2
echo "the netns cluster keeps running: scripts/netns-cluster.sh down $nsdir stops it"
echo "b_state_during_cut: $state"
