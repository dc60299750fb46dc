/*
 * placement.h: where the six segments of a protection group go (paper §2.1).
 *
 * Aurora survives "AZ+1": a whole AZ and one more node down. With V = 6
 * copies, 2 per AZ, losing an AZ costs 2 copies and one more node a third,
 * leaving 3 = Vr (a read quorum, so the volume can be repaired) while AZ
 * loss alone leaves 4 = Vw (writes go on). That only holds if the copies of
 * a PG are on distinct nodes, 2 in each of the 3 AZs: this file keeps it.
 *
 * Pure: takes the known nodes, returns a choice. Never a node that is
 * draining or retired (out). Prefers nodes that are up,
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
  int out;               /* draining or retired: it takes no new segment */
};

/* Choose nodes for one PG. Returns 0 and fills out[] with NCOPIES indices
 * into nodes (two of AZ A, two of B, two of C, in that order), or -1 with a
 * one-line reason if some AZ has fewer than COPIES_PER_AZ nodes. */
int place_pg(const struct pnode *nodes, size_t n, size_t out[NCOPIES],
             char *why, size_t whylen);

/* A spare for one position of a PG (member.h M7): a node of AZ az that is
 * up, not out, and not one of the PG's nodes (taken[0..ntaken), its
 * current and next segments'); the fewest segments first, then the
 * smallest id. Its index, or n if there is none. */
size_t place_spare(const struct pnode *nodes, size_t n, char az, const char *const *taken,
                   size_t ntaken);

#endif
