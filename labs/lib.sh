# labs/lib.sh: what every lab's run.sh shares. `auralog lab run N` sets
# AURALOG (the binary), AURALOG_DIR, AURALOG_COORD and AURALOG_ENGINE.
# No script holds answers: `lab run` computes the reference answers from
# the demo's history in the cluster's journal (src/lab/check.c).
#
# AURALOG_PACE_S=N waits N seconds before each step, as a person does who
# reads what the last command printed and types the next one (default 0:
# at machine speed). A check must pass at either pace: `make test` runs
# every observe lab's steps again at AURALOG_PACE_S=3 (its "paced" runs).
set -euo pipefail
# Run by hand: the auralog on PATH, else the one built beside labs/.
if [ -z "${AURALOG:-}" ]; then
  AURALOG=$(command -v auralog || echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/auralog")
  export AURALOG
fi
# Run by hand: the cluster the commands find by default (auralog's own
# default, which `cluster up` uses): the steps keep files there.
AURALOG_DIR=${AURALOG_DIR:-$HOME/.auralog}
export AURALOG_DIR
pace=${AURALOG_PACE_S:-0}
if ! [[ $pace =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
  echo "AURALOG_PACE_S must be a number of seconds, not '$pace'" >&2
  exit 2
fi
auralog() { "$AURALOG" "$@"; }
# A number from `auralog status --json`: the first "NAME": number in it.
# The volume's own fields come before the nodes', whose counters share some
# names (commits). sed reads to the end, so no SIGPIPE under pipefail.
field() { auralog status --json | grep -o "\"$1\": *[0-9]*" | sed -n '1s/.*: *//p'; }
# A step of the handout: a person's pause first (AURALOG_PACE_S), then
# the command as they would type it.
step() {
  [ "$pace" = 0 ] || sleep "$pace"
  printf '\n$ %s\n' "$*"
}
# A step the handout asks for at once, against a clock (a replica cancels
# a reader at 5 s): a person hurries, and pauses 3 s at most.
step_now() {
  local p
  p=$(awk -v p="$pace" 'BEGIN { print (p < 3 ? p : 3) }')
  [ "$p" = 0 ] || sleep "$p"
  printf '\n$ %s\n' "$*"
}
# Run by hand (not by `lab run`): the writer is whoever the coordinator says.
if [ -z "${AURALOG_ENGINE:-}" ]; then
  AURALOG_ENGINE=$(auralog status --json | grep -o '"writer": *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/')
  export AURALOG_ENGINE
fi
# demo-mark: run by hand, these steps are a demo, not a student's work:
# the journal says so (`auralog lab note`), and `lab check` leaves the
# span out. A student types the steps with the AZ and node `lab start`
# named. (`lab run` marks its own span: AURALOG_LAB_RUN.)
if [ -z "${AURALOG_LAB_RUN:-}" ]; then
  _demo_lab=$(basename "$(cd "$(dirname "$0")" && pwd)" | sed -n 's/^lab0*\([0-9]*\)-.*/\1/p')
  auralog lab note demo-begin "${_demo_lab:-0}"
  trap 'auralog lab note demo-end "${_demo_lab:-0}" || true' EXIT
  echo "(a demo: run by hand, these steps never count for auralog lab check)"
fi
# end demo-mark
