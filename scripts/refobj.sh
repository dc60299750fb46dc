#!/usr/bin/env bash
# scripts/refobj.sh ARCH LAB LEVEL: in a student repository (auralog lab
# export; ref/README.md), the reference objects make links in place of the
# lab files the student has not touched. The Makefile calls it.
#
# Prints ref/ARCH/PATH.o when every file listed in ref/ARCH/PATH.sha256
# (PATH.c and the headers it includes, hashed as exported) is unchanged
# and PATH.c holds no body of lab LAB (a number; "all" or a lab's name:
# of any lab), so that `make grade LAB=N` always compiles the student's
# own lab N.
# LEVEL is make's MAKELEVEL: notes go to stderr at the top level only.
arch=$1 lab=$2 level=${3:-0}
note() { [ "$level" = 0 ] && echo "note: $*" >&2; }
[ -d ref ] || exit 0
if [ ! -d "ref/$arch" ]; then
  have=$(cd ref && ls -d */ 2>/dev/null | tr -d / | xargs)
  note "ref/ has the reference lab objects for ${have:-no machine}, not $arch:" \
       "every lab file is compiled, and the labs you have not done (20-25) are" \
       "stubs here, so the cluster and simulator work once you have done them in order"
  exit 0
fi
case $lab in
  '') begin='' ;;
  *[!0-9]*) begin='LAB [0-9]+ BEGIN' ;;   # all, or a lab's name: every lab
  *) begin="LAB $lab BEGIN" ;;
esac
find "ref/$arch" -name '*.sha256' | sort | while read -r sums; do
  obj=${sums%.sha256}.o
  src=${sums#ref/"$arch"/}
  src=${src%.sha256}.c
  [ -f "$obj" ] && [ -f "$src" ] || continue
  if [ -n "$begin" ] && grep -Eq "^[[:space:]]*/\\* $begin" "$src"; then
    continue                 # graded: the student's own code
  fi
  if sha256sum --status -c "$sums" 2>/dev/null; then
    echo "$obj"
  elif grep -F "  $src" "$sums" | sha256sum --status -c 2>/dev/null; then
    note "$src is compiled from its stub, though you have not changed it:" \
         "a file it includes changed since the export (see ref/README.md)"
  fi
done
