#!/usr/bin/env bash
# tests/integration/export_leaks.sh ROOT EXPORT: does the student
# repository EXPORT (auralog lab export) hold any line of a reference body
# of the instructor's tree ROOT? test_export.c runs it.
#
# The reference bodies are read from ROOT itself (the lines between each
# "/* LAB N BEGIN ... */" comment and its "/* LAB N END */"), so the check
# follows the code. A body line counts when it is distinctive: at least
# 16 characters once trimmed, and found nowhere in ROOT outside the
# bodies (leaving out what labs/instructor-only lists, as the export
# does); a line such as "return 0;" would prove nothing. Each is looked
# for, as a whole trimmed line, in every file of EXPORT and in every line
# of its history (git log -p --all).
#
# Prints "N distinctive lines in M bodies", then each leak as
# "WHERE: LINE", and exits 1 if there is any (2: bad input).
set -euo pipefail
[ $# = 2 ] && [ -d "$1/src" ] && [ -d "$2" ] || { echo "usage: $0 ROOT EXPORT" >&2; exit 2; }
root=$(cd "$1" && pwd) export=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Lines of ROOT's files inside (in=1) or outside (in=0) the marked bodies,
# trimmed; the BEGIN comment itself is outside (the export keeps it),
# and so is the code of its "stub:" lines (the export's code).
split='
  FNR == 1 { if (state) { print FILENAME ": a LAB BEGIN without its END" > "/dev/stderr"; bad = 1 } state = 0 }
  { t = $0; sub(/^[ \t]+/, "", t); sub(/[ \t]+$/, "", t) }
  state == 0 && t ~ /^\/\* LAB [0-9]+ BEGIN/ { state = index(t, "*/") ? 2 : 1; print t >> outf; next }
  state == 1 && t ~ /^\* stub:/ { s = substr(t, 8); sub(/^[ \t]+/, "", s); print s >> outf }
  state == 1 { print t >> outf; if (index(t, "*/")) state = 2; next }
  state == 2 && t ~ /^\/\* LAB [0-9]+ END/ { state = 0; print t >> outf; next }
  state == 2 { print t >> inf; next }
  { print t >> outf }
  END { if (state || bad) exit 1 }'

cd "$root"
skip=()
if [ -f labs/instructor-only ]; then
  while read -r p; do
    p=${p%%#*}; p=${p%/}; p=${p#./}; p=$(echo "$p" | xargs)
    [ -n "$p" ] && skip+=(-path "./$p" -prune -o)
  done < labs/instructor-only
fi
find . \( -name .git -o -path './build*' -o -name 'sim-seed-*.trace' \) -prune -o \
     "${skip[@]}" -type f -print0 | xargs -0 grep -IlZ '' |
  xargs -0 awk -v inf="$tmp/in" -v outf="$tmp/out" "$split"
bodies=$(grep -rlE '^[[:space:]]*/\* LAB [0-9]+ BEGIN' src | wc -l)
sort -u "$tmp/out" > "$tmp/outside"
awk 'length($0) >= 16' "$tmp/in" | sort -u | comm -23 - "$tmp/outside" > "$tmp/distinct"
echo "$(wc -l < "$tmp/distinct") distinctive lines in the bodies of $bodies files"
[ -s "$tmp/distinct" ] || { echo "no distinctive line found: is $root the reference?"; exit 2; }

cd "$export"
leaks=0
# Every file of the export, text or not (grep -a), trimmed lines.
while IFS= read -r -d '' f; do
  if sed 's/^[ \t]*//; s/[ \t]*$//' "$f" | grep -axqF -f "$tmp/distinct"; then
    sed 's/^[ \t]*//; s/[ \t]*$//' "$f" | grep -axF -f "$tmp/distinct" | sed "s|^|$f: |"
    leaks=1
  fi
done < <(find . -name .git -prune -o -type f -print0)
# Its history: every version of every file, every commit.
if [ -d .git ]; then
  if git log -p --all --format= | cut -c2- | sed 's/^[ \t]*//; s/[ \t]*$//' |
       grep -axF -f "$tmp/distinct" | sed 's|^|git log -p --all: |'; then
    leaks=1
  fi
fi
exit $leaks
