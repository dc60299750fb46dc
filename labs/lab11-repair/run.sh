#!/usr/bin/env bash
# Lab 11: repair and drain. The handout's steps, as commands, for the
# assignment in LAB_POS (the position of pg 0 whose node to lose for good)
# and LAB_DRAIN_POS (whose node to drain): `auralog lab start 11` names
# each student's (and the nodes there now, NODE and DRAIN).
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
# The node at position $1 of pg 0 now (its current segment; pgs come in order).
node_at() {
  auralog status --json | grep -o "\"node\":\"[A-C][0-9]*\",\"az\":\"[A-C]\",\"scl\":[0-9]*,\"pos\":$1,\"next\":false" |
    sed -n '1s/"node":"\([^"]*\)".*/\1/p'
}
NODE=$(node_at "${LAB_POS:-3}") DRAIN=$(node_at "${LAB_DRAIN_POS:-4}")
[ -n "$NODE" ] && [ -n "$DRAIN" ] || { echo "no node at position ${LAB_POS:-3} or ${LAB_DRAIN_POS:-4} of pg 0"; exit 1; }
echo "position ${LAB_POS:-3} of pg 0 is on $NODE (NODE); position ${LAB_DRAIN_POS:-4} on $DRAIN (DRAIN)"
membership() { auralog status | sed -n '/^membership/,/^nodes/{/^nodes/!p}; /^  AZ /p; /^  pg [0-9]* *pages/p'; }
# The PGs' segments in `status --json` (its "pgs", the last part): node $1's.
segs() { local js; js=$(auralog status --json); echo "${js##*\"pgs\":}" | grep -o "\"node\":\"$1\""; }
hosts() { segs "$1" > /dev/null; }
# A spare in AZ $1: a node up, in service, hosting no segment. None: add one.
spare() {
  local id
  for id in $(auralog status --json | grep -o "\"id\":\"[A-C][0-9]*\",\"az\":\"$1\",\"addr\":\"[^\"]*\",\"state\":\"up\"" |
              sed 's/"id":"\([^"]*\)".*/\1/'); do
    hosts "$id" || return 0
  done
  step auralog node add --az "$1"
  auralog node add --az "$1"
}

step auralog status
auralog status | sed -n '/^nodes/,/^storage/{/^storage/!p}'
spare "${NODE:0:1}"
spare "${DRAIN:0:1}"
# The writes go on through both parts (the handout: a second terminal).
step "bash labs/lab11-repair/writes.sh &"
bash "$here/writes.sh" > "$AURALOG_DIR/lab11-writes.out" 2>&1 &
writes=$!
trap 'kill $writes 2>/dev/null || true' EXIT
sleep 1

# Part 1: a node lost for good, and its repair.
step auralog fault node-stop "$NODE"
auralog fault node-stop "$NODE"
# Watch: the node down; after REPAIR_AFTER_MS its positions move to spares
# (">" next segments hydrating), then the spares' segments are current.
for k in $(seq 1 60); do
  step auralog status
  membership
  hosts "$NODE" || break
  sleep 1
done
hosts "$NODE" && { echo "$NODE still hosts segments after a minute: no repair"; exit 1; }
sleep 1
step "auralog status   # the time to repair, in the membership section"
membership

# Part 2: a node drained for patching, the writes still going on.
step auralog node drain "$DRAIN"
auralog node drain "$DRAIN"
step auralog status
membership

step "kill %1   # the writes stop"
kill "$writes"
wait "$writes" 2>/dev/null || true
trap - EXIT
tail -3 "$AURALOG_DIR/lab11-writes.out"
if grep -q FAILED "$AURALOG_DIR/lab11-writes.out"; then
  echo "an insert failed"; exit 1
fi
step 'auralog sql "select count(*), min(i), max(i) from lab11;"'
auralog sql "select count(*), min(i), max(i) from lab11;"
# The node lost comes back: it holds only stale copies, and drops them.
step auralog fault node-start "$NODE"
auralog fault node-start "$NODE"
