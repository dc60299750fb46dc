#!/usr/bin/env bash
# Lab 11: the writes that go on while a node is lost and repaired and
# another is drained: one row per transaction, numbered 1, 2, 3 ... in
# table lab11, until it is stopped (Ctrl-C, or kill). An insert that
# fails says so; `auralog lab check 11` counts the rows, and a number
# missing is a write that failed (or an acknowledged one lost).
#
# LAB11_GAP: seconds between two inserts (default 0.1).
set -u
if [ -z "${AURALOG:-}" ]; then
  AURALOG=$(command -v auralog || echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/auralog")
fi
auralog() { "$AURALOG" "$@"; }
auralog sql "create table if not exists lab11(i integer primary key, at text);" || exit 1
# Go on from the last row: the loop may be started again.
i=$(auralog sql "select coalesce(max(i), 0) from lab11;") || exit 1
echo "writing rows from $((i + 1)) on into lab11 (Ctrl-C stops)"
while :; do
  i=$((i + 1))
  if ! auralog sql "insert into lab11 values($i, datetime('now'));" > /dev/null; then
    echo "insert $i FAILED"
  elif (( i % 100 == 0 )); then
    echo "$i rows"
  fi
  sleep "${LAB11_GAP:-0.1}"
done
