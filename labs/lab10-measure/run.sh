#!/usr/bin/env bash
# Lab 10: measuring honestly. The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
# One load for every run, so that runs can be set side by side.
# AURALOG_BENCH_PORT: the bench's private cluster's ports (default: the
# bench's own, 200 above this cluster's coordinator port).
# LAB10_DURATION (default 2) and LAB10_GROUPS (default "5 10"): a quicker
# demo (tests) measures less; the handout's steps are the defaults.
load=(--tables 1 --rows 1000 --clients 8 --duration "${LAB10_DURATION:-2}" --warmup 0
      --no-limit)
[ -n "${AURALOG_BENCH_PORT:-}" ] && load+=(--base-port "$AURALOG_BENCH_PORT")
bench() { auralog bench "$@" "${load[@]}" 2>&1 | grep -v -E '^[a-z-]+ +(loading|warm-up|measuring) '; }
step "auralog bench --systems auralog,sqlite-wal-full,sqlite-delete-full ${load[*]}"
bench --systems auralog,sqlite-wal-full,sqlite-delete-full
for g in ${LAB10_GROUPS-5 10}; do
  step "auralog bench --systems auralog --group $g ${load[*]}"
  bench --systems auralog --group "$g"
done
