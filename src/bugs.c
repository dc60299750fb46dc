/*
 * bugs.c: the planted-bug switch (see bugs.h).
 */
#include <string.h>

#include "bugs.h"

unsigned planted_bugs;

const char *const bug_names[BUG_N] = {
  "wq3", "no-trunc", "trunc-any-epoch", "vdl-from-hint", "need-freed", "no-adopt",
  "no-fence", "no-page-check", "stale-version", "replica-past-vdl",
  "no-replica-floor", "promote-no-if-epoch", "scan-from-zero", "trunc-unbounded-scan",
  "next-acks", "next-only", "finish-early", "gc-past-backup", "no-rollforward",
};

int bug_by_name(const char *s)
{
  for (int i = 0; i < BUG_N; i++)
    if (strcmp(bug_names[i], s) == 0)
      return i;
  return -1;
}
