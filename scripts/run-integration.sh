#!/usr/bin/env bash
# scripts/run-integration.sh: run the integration test binaries, TEST_JOBS
# of them at a time (default 2), each binary's output kept whole; and the
# observe labs' paced runs in a lane of their own beside them.
#
# usage: [TEST_PACED="BINARY..."] scripts/run-integration.sh LOGDIR BINARY...
#
# A BINARY may be given as BINARY:PATTERN, to run only the tests PATTERN
# names (AURALOG_TEST_FILTER), or BINARY:-PATTERN, all but those
# (AURALOG_TEST_SKIP): one long binary then runs as two halves in two
# lanes (`make unit` does so with unit_sim). TEST_LABEL names the suite
# in the last line (default: integration).
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
#
# The paced runs: a lab binary's tests named *_paced do the lab's steps
# with a person's pause before each (AURALOG_PACE_S, default 3 s). They
# cost wall time, not CPU, so they run apart: the TEST_JOBS lanes run
# every binary without them (AURALOG_TEST_SKIP='*_paced'), and one more
# lane (TEST_PACED_JOBS, default 1) runs each binary of TEST_PACED with
# only them (AURALOG_TEST_FILTER='*_paced'), from the start, its log
# LOGDIR/NAME-paced.log. AURALOG_PACE_S=5 runs them at 5 s a step.
#
# Once the paced runs are done, their lane takes the other binaries too,
# from the end of the queue (the short ones; the long ones go first from
# its front), so the suite ends in three lanes rather than two idling a
# third. The load stays what it was while the paced runs ran: three
# binaries' clusters at once. TEST_PACED_JOBS=0 leaves the paced runs out
# and adds no lane (nor does an empty TEST_PACED).
set -u
logdir=$1
shift
jobs=${TEST_JOBS:-2}
pjobs=${TEST_PACED_JOBS:-1}
pace=${AURALOG_PACE_S:-3}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-integration: TEST_JOBS must be a number, not '$jobs'" >&2; exit 2; }
[[ $pjobs =~ ^[0-9]+$ ]] || { echo "run-integration: TEST_PACED_JOBS must be a number, not '$pjobs'" >&2; exit 2; }
[[ $pace =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "run-integration: AURALOG_PACE_S must be a number of seconds, not '$pace'" >&2; exit 2; }
mkdir -p "$logdir"
rm -f "$logdir"/*.rc

declare -A started_at bin_of lane_of filter_of skip_of
running=()
pids=()
failed=()
queue=()                       # the TEST_JOBS lanes' runs, by name
pqueue=()                      # the paced lane's
for t in "$@"; do
  spec=
  [[ $t == *:* ]] && { spec=${t#*:}; t=${t%%:*}; }
  n=$(basename "$t") m=$(basename "$t") k=1
  while [ -n "${bin_of[$m]:-}" ]; do k=$((k + 1)); m=$n$k; done
  n=$m                         # unit_sim, unit_sim2, ...
  queue+=("$n"); bin_of[$n]=$t; lane_of[$n]=cpu
  case $spec in
    '') skip_of[$n]='*_paced' ;;
    -*) skip_of[$n]=${spec#-} ;;
    *) filter_of[$n]=$spec ;;
  esac
done
[ "$pjobs" -gt 0 ] || TEST_PACED=
spare=0                        # lanes the paced runs leave when done
[ -n "${TEST_PACED:-}" ] && spare=$pjobs
for t in ${TEST_PACED:-}; do
  n=$(basename "$t")-paced; pqueue+=("$n"); bin_of[$n]=$t; lane_of[$n]=paced
done

start() {
  local n=$1 t=${bin_of[$1]}
  started_at[$n]=$(date +%s)
  echo "== $n started"
  if [ "${lane_of[$n]}" = paced ]; then
    ( AURALOG_TEST_FILTER='*_paced' AURALOG_PACE_S=$pace "$t" > "$logdir/$n.log" 2>&1 < /dev/null
      echo $? > "$logdir/$n.rc" ) &
  else
    local envs=()
    [ -n "${filter_of[$n]:-}" ] && envs+=("AURALOG_TEST_FILTER=${filter_of[$n]}")
    [ -n "${skip_of[$n]:-}" ] && envs+=("AURALOG_TEST_SKIP=${skip_of[$n]}")
    ( env ${envs[@]+"${envs[@]}"} "$t" > "$logdir/$n.log" 2>&1 < /dev/null
      echo $? > "$logdir/$n.rc" ) &
  fi
  running+=("$n")
  pids+=("$!")
}

# Runs of a lane now.
in_lane() {
  local n c=0
  for n in "${running[@]}"; do [ "${lane_of[$n]}" = "$1" ] && c=$((c + 1)); done
  echo "$c"
}

# Print a finished run's log and note its result.
finish() {
  local n=$1 rc
  rc=$(cat "$logdir/$n.rc" 2>/dev/null || echo 1)
  local what=
  [ "${lane_of[$n]}" = paced ] && what=" (paced, $pace s a step)"
  [ -n "${filter_of[$n]:-}" ] && what=" (only ${filter_of[$n]})"
  [ -n "${skip_of[$n]:-}" ] && [ "${skip_of[$n]}" != '*_paced' ] && what=" (all but ${skip_of[$n]})"
  echo "== ${bin_of[$n]}$what"
  cat "$logdir/$n.log"
  echo "== $n: $(( $(date +%s) - ${started_at[$n]} )) s$([ "$rc" = 0 ] || echo ", FAILED (exit $rc)")"
  [ "$rc" = 0 ] || failed+=("$n")
}

# Wait until one of the running binaries has ended; finish it.
reap() {
  while :; do
    local i
    for i in "${!running[@]}"; do
      local n=${running[$i]}
      if [ -e "$logdir/$n.rc" ]; then
        wait "${pids[$i]}" 2>/dev/null
        finish "$n"
        unset 'running[i]' 'pids[i]'
        running=("${running[@]}")
        pids=("${pids[@]}")
        return
      fi
    done
    wait -n 2>/dev/null || sleep 0.05    # until one of them ends
  done
}

total=$(( ${#queue[@]} + ${#pqueue[@]} ))
while [ $(( ${#queue[@]} + ${#pqueue[@]} )) -gt 0 ]; do
  if [ "${#pqueue[@]}" -gt 0 ] && [ "$(in_lane paced)" -lt "$pjobs" ]; then
    start "${pqueue[0]}"; pqueue=("${pqueue[@]:1}")
  elif [ "${#queue[@]}" -gt 0 ] && [ "$(in_lane cpu)" -lt "$jobs" ]; then
    start "${queue[0]}"; queue=("${queue[@]:1}")
  elif [ "${#queue[@]}" -gt 0 ] && [ "${#pqueue[@]}" -eq 0 ] &&
       [ $(( ${#running[@]} - $(in_lane cpu) )) -lt "$spare" ]; then
    # The paced lane, its own runs done, takes the queue's last binary.
    n=${queue[-1]}; queue=("${queue[@]:0:${#queue[@]}-1}")
    lane_of[$n]=spare; start "$n"
  else
    reap
  fi
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

# A CI log keeps only its tail, and a failing binary's output scrolled
# away under the others'. So each failure is told again here, last: the
# lines of every failed test, from its "[ RUN" to its "[  FAILED" or
# "[  ERROR" (at most 40: the assertion and what the test printed before
# it), or, where no test says it failed (a crash, a hang killed), the
# log's last 30 lines.
failure_lines() {
  awk '
    /^\[ RUN      \]/ { n = 0 }
    { buf[n++ % 40] = $0 }
    /^\[  (FAILED|ERROR) +\] [^ ]/ && !/test\(s\)/ && !seen[$NF]++ {
      k = n > 40 ? n - 40 : 0
      for (i = k; i < n; i++) print "  " buf[i % 40]
      said = 1; n = 0
    }
    END { exit said ? 0 : 1 }' "$1" || tail -n 30 "$1" | sed 's/^/  /'
}
if [ "${#failed[@]}" -gt 0 ]; then
  for n in "${failed[@]}"; do
    echo "== why $n failed (from $logdir/$n.log):"
    failure_lines "$logdir/$n.log"
  done
  echo "${TEST_LABEL:-integration}: FAILED: ${failed[*]} (their whole output is above, and in $logdir)"
  exit 1
fi
echo "${TEST_LABEL:-integration}: all $total runs passed"
