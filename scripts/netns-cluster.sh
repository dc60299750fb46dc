#!/usr/bin/env bash
# netns-cluster.sh: the cluster across "machines". Each AZ runs in a Linux
# network namespace of its own (a stand-in for a small VM), with its own
# address on a bridge; the coordinator and the engine run in the host's
# namespace. Taking out an AZ cuts its link, as a network failure would,
# while its processes keep running.
#
#   netns-cluster.sh up [DIR]        start it (root: namespaces need it)
#   netns-cluster.sh cut A|B|C       cut an AZ's link
#   netns-cluster.sh restore A|B|C   mend it
#   netns-cluster.sh down [DIR]      stop everything, remove the namespaces
#
# On real VMs the recipe is the same without namespaces: make the key once
# (`auralog cluster key --dir D` prints D/cluster.key), copy it to every VM
# (scp, mode 0600), then on each VM run
#   auralog node --key KEY --az X --id X1 --listen VM_IP:7401 --coord COORD_IP:7400
#   auralog node --key KEY --az X --id X2 --listen VM_IP:7402 --coord COORD_IP:7400
# on one more `auralog coord --key KEY --listen COORD_IP:7400` and
# `auralog engine --key KEY --listen COORD_IP:7500 --coord COORD_IP:7400`,
# and take an AZ out by stopping its VM's network (or the VM). Tools need
# the key too: export AURALOG_KEY=KEY. The key is taken from $AURALOG_KEY
# if set (a lab passes its cluster's), else DIR/cluster.key.
#
# Addresses: 10.77.0.0/24, only inside the namespaces and bridge this
# script makes. AURALOG (default build/auralog) is the binary.
set -euo pipefail
cmd=${1:-}
bin=$(readlink -f "${AURALOG:-build/auralog}")
net=10.77.0
br=alg-br0
ctl=$net.1

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
need_root() {
  [ "$(id -u)" -eq 0 ] || { echo "netns-cluster.sh: network namespaces need root (sudo)" >&2; exit 1; }
}
az_ok() { case "${1:-}" in A|B|C) ;; *) echo "netns-cluster.sh: say A, B or C" >&2; exit 2 ;; esac; }
lower() { echo "$1" | tr 'A-Z' 'a-z'; }

start() {   # name, command...: run in the background, pid file, log
  local name=$1; shift
  "$@" > "$dir/log/$name.log" 2>&1 &
  echo $! > "$dir/run/$name.pid"
}

case "$cmd" in
up)
  need_root
  dir=$(readlink -f "${2:-/tmp/auralog-netns}")
  if ip link show $br > /dev/null 2>&1; then
    echo "netns-cluster.sh: $br exists: a netns cluster is up already (down first)" >&2; exit 1
  fi
  mkdir -p "$dir/log" "$dir/run" "$dir/data"
  # The cluster key: $AURALOG_KEY if given (a lab passes its cluster's),
  # else DIR/cluster.key, made once. On real machines this one file is
  # what you copy to each (mode 0600).
  key=${AURALOG_KEY:-$("$bin" cluster key --dir "$dir")}
  export AURALOG_KEY="$key"
  ip link add $br type bridge
  ip addr add $ctl/24 dev $br
  ip link set $br up
  i=1
  for az in A B C; do
    ns=alg-$(lower $az); i=$((i + 10))
    ip netns add $ns
    ip link add alg-$(lower $az) type veth peer name eth0 netns $ns
    ip link set alg-$(lower $az) master $br up
    ip -n $ns link set lo up
    ip -n $ns addr add $net.$i/24 dev eth0
    ip -n $ns link set eth0 up
  done
  start coord "$bin" coord --listen $ctl:7400 --data "$dir/data/coord"
  sleep 0.3
  i=1
  for az in A B C; do
    ns=alg-$(lower $az); i=$((i + 10))
    for k in 1 2; do
      start $az$k ip netns exec $ns "$bin" node --az $az --id $az$k --listen $net.$i:740$k \
        --coord $ctl:7400 --data "$dir/data/$az$k"
    done
  done
  for t in $(seq 1 100); do   # all six registered?
    [ "$(AURALOG_COORD=$ctl:7400 "$bin" status --json | grep -o '"state":"up"' | wc -l)" -ge 6 ] && break
    sleep 0.1
  done
  start engine "$bin" engine --listen $ctl:7500 --coord $ctl:7400
  for t in $(seq 1 100); do
    "$bin" sql --engine $ctl:7500 "select 1" > /dev/null 2>&1 && break
    sleep 0.1
  done
  printf '{"coord": "%s:7400", "engine": "%s:7500", "netns": true}\n' $ctl $ctl > "$dir/cluster.json"
  echo "netns cluster up in $dir: AZ A at $net.11, B at $net.21, C at $net.31 (2 nodes each)"
  echo "cluster key: $key (every member and tool needs it: export AURALOG_KEY=$key)"
  echo "coordinator $ctl:7400, engine $ctl:7500:"
  echo "  export AURALOG_COORD=$ctl:7400 AURALOG_ENGINE=$ctl:7500 AURALOG_KEY=$key"
  ;;
cut|restore)
  need_root; az_ok "${2:-}"
  ip link set alg-$(lower "$2") "$([ "$cmd" = cut ] && echo down || echo up)"
  echo "AZ $2: link $([ "$cmd" = cut ] && echo cut || echo restored)"
  ;;
down)
  need_root
  dir=$(readlink -f "${2:-/tmp/auralog-netns}")
  for p in "$dir"/run/*.pid; do
    [ -f "$p" ] || continue
    kill "$(cat "$p")" 2> /dev/null || true
    rm -f "$p"
  done
  sleep 0.3
  for az in a b c; do ip netns del alg-$az 2> /dev/null || true; done
  ip link del $br 2> /dev/null || true
  echo "netns cluster down"
  ;;
*) usage ;;
esac
