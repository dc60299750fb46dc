/*
 * bench.c: `auralog bench`.
 */
#include <string.h>

#include "bench/bench.h"
#include "lib/log.h"
#include "roles.h"

int bench_main(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "append") == 0)
    return bench_append_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "recovery") == 0)
    return bench_recovery_main(argc - 1, argv + 1);
  die("bench: not built yet");
}
