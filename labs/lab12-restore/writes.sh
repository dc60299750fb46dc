#!/usr/bin/env bash
# Lab 12: the writes that go on before and after the mistake: one row per
# transaction, numbered 1, 2, 3 ... in table lab12_log, until it is
# stopped (Ctrl-C, or kill). They make the volume move on, so that the
# point you restore to matters: the restored volume has the rows written
# up to it, and none after.
#
# LAB12_GAP: seconds between two inserts (default 0.1).
set -u
if [ -z "${AURALOG:-}" ]; then
  AURALOG=$(command -v auralog || echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/auralog")
fi
auralog() { "$AURALOG" "$@"; }
auralog sql "create table if not exists lab12_log(i integer primary key, at text);" || exit 1
# Go on from the last row: the loop may be started again.
i=$(auralog sql "select coalesce(max(i), 0) from lab12_log;") || exit 1
echo "writing rows from $((i + 1)) on into lab12_log (Ctrl-C stops)"
while :; do
  i=$((i + 1))
  if ! auralog sql "insert into lab12_log values($i, strftime('%H:%M:%f', 'now'));" > /dev/null; then
    echo "insert $i FAILED"
  elif (( i % 100 == 0 )); then
    echo "$i rows"
  fi
  sleep "${LAB12_GAP:-0.1}"
done
