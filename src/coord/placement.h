/*
 * placement.h: where the six segments of a protection group go (paper §2.1).
 *
 * Aurora survives "AZ+1": a whole AZ and one more node down. With V = 6
 * copies, 2 per AZ, losing an AZ costs 2 copies and one more node a third,
 * leaving 3 = Vr (a read quorum, so the volume can be repaired) while AZ
 * loss alone leaves 4 = Vw (writes go on). That only holds if the copies of
 * a PG are on distinct nodes, 2 in each of the 3 AZs: this file keeps it.
 *
 * Pure: takes the known nodes, returns a choice. Prefers nodes that are up,
 * then nodes with fewer segments (spread the load), then the smaller id (so
 * the choice is deterministic and a test or lab can predict it).
 */
#ifndef AURALOG_PLACEMENT_H
#define AURALOG_PLACEMENT_H

#include <stddef.h>
#include "param.h"

struct pnode {
  const char *id;
  char az;               /* 'A', 'B' or 'C' */
  int up;
  unsigned nsegs;        /* segments it hosts already */
};

/* Choose nodes for one PG. Returns 0 and fills out[] with NCOPIES indices
 * into nodes (two of AZ A, two of B, two of C, in that order), or -1 with a
 * one-line reason if some AZ has fewer than COPIES_PER_AZ nodes. */
int place_pg(const struct pnode *nodes, size_t n, size_t out[NCOPIES],
             char *why, size_t whylen);

#endif
