# labs/lib.sh: what every lab's run.sh shares. `auralog lab run N` sets
# AURALOG (the binary), AURALOG_DIR, AURALOG_COORD, AURALOG_ENGINE and
# ANSWERS (where the reference answers go).
set -euo pipefail
auralog() { "$AURALOG" "$@"; }
# A number from `auralog status --json`.
field() { auralog status --json | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
step() { printf '\n$ %s\n' "$*"; }
