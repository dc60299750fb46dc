# labs/lib.sh: what every lab's run.sh shares. `auralog lab run N` sets
# AURALOG (the binary), AURALOG_DIR, AURALOG_COORD, AURALOG_ENGINE and
# ANSWERS (where the reference answers go).
set -euo pipefail
auralog() { "$AURALOG" "$@"; }
# A number from `auralog status --json`: the first "NAME": number in it.
# The volume's own fields come before the nodes', whose counters share some
# names (commits). sed reads to the end, so no SIGPIPE under pipefail.
field() { auralog status --json | grep -o "\"$1\": *[0-9]*" | sed -n '1s/.*: *//p'; }
step() { printf '\n$ %s\n' "$*"; }
