#!/usr/bin/env bash
# netns-cluster.sh: the cluster across "machines". Each AZ runs in a Linux
# network namespace of its own (a stand-in for a small VM), with its own
# address on a bridge; the coordinator and the engine run in the host's
# namespace. Taking out an AZ cuts its link, as a network failure would,
# while its processes keep running.
#
#   netns-cluster.sh up [DIR]          start it (root: namespaces need it)
#   netns-cluster.sh cut A|B|C [DIR]   cut an AZ's link
#   netns-cluster.sh restore A|B|C [DIR]   mend it
#   netns-cluster.sh down [DIR]        stop it, remove what its `up` made
#
# Several at once (two students on one machine, or a student and `make
# test`): every name comes from DIR (default /tmp/auralog-netns). The
# namespaces, bridge and links are alg<ID>-..., ID six hex digits of
# DIR's path's hash, and the subnet is 10.77.N.0/24 with N the first one
# no other netns cluster holds; `up` writes them to DIR/netns.env and
# `down` removes only those. Tools find the cluster by DIR/cluster.json
# (auralog status --dir DIR, or AURALOG_DIR=DIR).
#
# On real VMs the recipe is the same without namespaces: make the key once
# (`auralog cluster key --dir D` prints D/cluster.key), copy it to every VM
# (scp, mode 0600), then on each VM run
#   auralog node --key KEY --az X --id X1 --listen VM_IP:7401 --coord COORD_IP:7400
#   auralog node --key KEY --az X --id X2 --listen VM_IP:7402 --coord COORD_IP:7400
# on one more `auralog coord --key KEY --listen COORD_IP:7400 --operator
# D/operator.pub` and `auralog engine --key KEY --listen COORD_IP:7500
# --coord COORD_IP:7400 --operator D/operator.key` (the operator's key stays
# with the operator: never copy it to a node's VM),
# and take an AZ out by stopping its VM's network (or the VM). Tools need
# the key too: export AURALOG_KEY=KEY. The key is taken from $AURALOG_KEY
# if set (a lab passes its cluster's), else DIR/cluster.key.
#
# AURALOG (default build/auralog) is the binary.
set -euo pipefail
cmd=${1:-}
bin=$(readlink -f "${AURALOG:-build/auralog}")

usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

# The names of the cluster in $dir: ID from its path (IFNAMSIZ allows 15
# characters: alg<ID>br, alg<ID>a are 11).
names() {
  id=$(printf '%s' "$dir" | sha1sum | cut -c1-6)
  br=alg${id}br
}
# Read what `up` chose (the subnet), or fail with a line saying so.
load() {
  names
  [ -f "$dir/netns.env" ] || { echo "netns-cluster.sh: no netns cluster in $dir (up first)" >&2; exit 1; }
  . "$dir/netns.env"
  ctl=$net.1
}
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
  dir=$(readlink -m "${2:-/tmp/auralog-netns}")
  names
  if ip link show $br > /dev/null 2>&1; then
    echo "netns-cluster.sh: $br exists: the netns cluster in $dir is up already (down first)" >&2
    exit 1
  fi
  mkdir -p "$dir/log" "$dir/run" "$dir/data"
  # The first 10.77.N.0/24 no interface on this machine holds (another
  # netns cluster's bridge holds 10.77.N.1). Two `up`s at once choose one
  # after the other: the lock is held until the bridge has its address.
  exec 9> /run/lock/auralog-netns.lock
  flock 9
  net=
  for n in $(seq 0 254); do
    ip -o -4 addr show | grep -q " 10\.77\.$n\." || { net=10.77.$n; break; }
  done
  [ -n "$net" ] || { echo "netns-cluster.sh: every 10.77.N.0/24 is in use" >&2; exit 1; }
  ctl=$net.1
  printf 'net=%s\n' "$net" > "$dir/netns.env"
  # The cluster key: $AURALOG_KEY if given (a lab passes its cluster's),
  # else DIR/cluster.key, made once. On real machines this one file is
  # what you copy to each (mode 0600).
  key=${AURALOG_KEY:-$("$bin" cluster key --dir "$dir")}
  # The operator's key beside DIR's (made by `cluster key`): the
  # coordinator gets its public half, the engine the key; nodes nothing.
  "$bin" cluster key --dir "$dir" > /dev/null
  export AURALOG_KEY="$key"
  ip link add $br type bridge
  ip addr add $ctl/24 dev $br
  ip link set $br up
  flock -u 9
  i=1
  for az in A B C; do
    ns=alg$id-$(lower $az); i=$((i + 10))
    ip netns add $ns
    ip link add alg$id$(lower $az) type veth peer name eth0 netns $ns
    ip link set alg$id$(lower $az) master $br up
    ip -n $ns link set lo up
    ip -n $ns addr add $net.$i/24 dev eth0
    ip -n $ns link set eth0 up
  done
  start coord "$bin" coord --listen $ctl:7400 --data "$dir/data/coord" \
    --operator "$dir/operator.pub"
  sleep 0.3
  i=1
  for az in A B C; do
    ns=alg$id-$(lower $az); i=$((i + 10))
    for k in 1 2; do
      start $az$k ip netns exec $ns "$bin" node --az $az --id $az$k --listen $net.$i:740$k \
        --coord $ctl:7400 --data "$dir/data/$az$k"
    done
  done
  for t in $(seq 1 100); do   # all six registered?
    [ "$(AURALOG_COORD=$ctl:7400 "$bin" status --json 2>/dev/null | grep -o '"state":"up"' | wc -l)" -ge 6 ] && break
    sleep 0.1
  done
  start engine "$bin" engine --listen $ctl:7500 --coord $ctl:7400 \
    --operator "$dir/operator.key"
  served=
  for t in $(seq 1 100); do
    "$bin" sql --engine $ctl:7500 "select 1" > /dev/null 2>&1 && { served=1; break; }
    sleep 0.1
  done
  [ -n "$served" ] || { echo "netns-cluster.sh: the engine does not answer yet; its log ends:" >&2
                        tail -3 "$dir/log/engine.log" >&2; }
  printf '{"coord": "%s:7400", "engine": "%s:7500", "netns": true}\n' $ctl $ctl > "$dir/cluster.json"
  echo "netns cluster up in $dir: AZ A at $net.11, B at $net.21, C at $net.31 (2 nodes each)"
  echo "cluster key: $key (every member and tool needs it: export AURALOG_KEY=$key)"
  echo "coordinator $ctl:7400, engine $ctl:7500; tools find it by its directory:"
  echo "  export AURALOG_DIR=$dir AURALOG_KEY=$key"
  ;;
cut|restore)
  need_root; az_ok "${2:-}"
  dir=$(readlink -m "${3:-/tmp/auralog-netns}")
  load
  ip link set alg$id$(lower "$2") "$([ "$cmd" = cut ] && echo down || echo up)"
  echo "AZ $2: link $([ "$cmd" = cut ] && echo cut || echo restored)"
  ;;
down)
  need_root
  dir=$(readlink -m "${2:-/tmp/auralog-netns}")
  names
  # Every process of this cluster gone before anything of it is reused:
  # a node still running from before would keep its segment's store and
  # its old address, and a next `up` in this directory would find its
  # engine's recovery answered by nobody. SIGTERM, then up to 5 s, then
  # SIGKILL for what is left.
  pids=
  for p in "$dir"/run/*.pid; do
    [ -f "$p" ] || continue
    pid=$(cat "$p")
    kill "$pid" 2> /dev/null && pids="$pids $pid"
    rm -f "$p"
  done
  for t in $(seq 1 50); do
    left=
    for pid in $pids; do kill -0 "$pid" 2> /dev/null && left="$left $pid"; done
    pids=$left
    [ -z "$pids" ] && break
    sleep 0.1
  done
  for pid in $pids; do kill -9 "$pid" 2> /dev/null || true; done
  # Only what this directory's `up` made: its own names.
  # The links first (deleting a namespace frees its veth pair only later).
  for az in a b c; do ip link del alg$id$az 2> /dev/null || true; done
  for az in a b c; do ip netns del alg$id-$az 2> /dev/null || true; done
  ip link del $br 2> /dev/null || true
  rm -f "$dir/netns.env"
  echo "netns cluster in $dir down"
  ;;
*) usage ;;
esac
