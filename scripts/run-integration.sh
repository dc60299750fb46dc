#!/usr/bin/env bash
# scripts/run-integration.sh: run the integration test binaries, TEST_JOBS
# of them at a time (default 2), each binary's output kept whole.
#
# usage: scripts/run-integration.sh LOGDIR BINARY...
#
# Every integration test takes its ports, directories and namespace names
# from its own id (tests/integration/harness.c), so two binaries never
# collide and may run side by side: on a 2-core machine that halves the
# wall time of a suite that mostly waits (heartbeats, leases, failover
# detection, a lab's steps). Each binary's output goes to LOGDIR/NAME.log
# and is printed whole when it ends, followed by "== NAME: N s", so two
# binaries' lines never interleave. A failing binary does not stop the
# others; the script exits 1 at the end, naming every one that failed.
# TEST_JOBS=1 runs them one after the other, as before.
set -u
logdir=$1
shift
jobs=${TEST_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-integration: TEST_JOBS must be a number, not '$jobs'" >&2; exit 2; }
mkdir -p "$logdir"
rm -f "$logdir"/*.rc

declare -A started_at
running=()
failed=()

# Print a finished binary's log and note its result.
finish() {
  local t=$1 name rc
  name=$(basename "$t")
  rc=$(cat "$logdir/$name.rc" 2>/dev/null || echo 1)
  echo "== $t"
  cat "$logdir/$name.log"
  echo "== $t: $(( $(date +%s) - ${started_at[$t]} )) s$([ "$rc" = 0 ] || echo ", FAILED (exit $rc)")"
  [ "$rc" = 0 ] || failed+=("$name")
}

# Wait until one of the running binaries has ended; finish it.
reap() {
  while :; do
    local i
    for i in "${!running[@]}"; do
      local t=${running[$i]}
      if [ -e "$logdir/$(basename "$t").rc" ]; then
        wait "${pids[$i]}" 2>/dev/null
        finish "$t"
        unset 'running[i]' 'pids[i]'
        running=("${running[@]}")
        pids=("${pids[@]}")
        return
      fi
    done
    sleep 0.2
  done
}

pids=()
for t in "$@"; do
  while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
  name=$(basename "$t")
  started_at[$t]=$(date +%s)
  echo "== $t started"
  ( "$t" > "$logdir/$name.log" 2>&1 < /dev/null; echo $? > "$logdir/$name.rc" ) &
  running+=("$t")
  pids+=("$!")
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "integration: FAILED: ${failed[*]} (their whole output is above, and in $logdir)"
  exit 1
fi
echo "integration: all $# binaries passed"
