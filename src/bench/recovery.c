/*
 * recovery.c: `auralog bench recovery` (being written).
 */
#include "bench/bench.h"
#include "lib/log.h"

int bench_recovery_main(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  die("bench recovery: not built yet");
}
