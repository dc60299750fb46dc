/*
 * nbinlog.h: a storage node's side of the enhanced binlog's consumers
 * (issue 29; seed 003): serving a binlog segment's records to readers, and
 * releasing the oldest of them (retention). nbinlog.c says why and how.
 *
 * Events (called by the node's core, node.c and bg.c):
 *   nbl_on_read    a BinlogRead arrived: answer BinlogRecs (or an Error)
 *   nbl_on_assign  an Assign arrived: note each volume's keep point
 *                  (Assign.binlog_keep)
 *   nbl_retain     the background pass (bg_work): release what retention
 *                  no longer keeps, in a transaction of its own
 *   nbl_free       the node is gone (memory only)
 * Pure, for the tests:
 *   nbl_durable        the point up to which a binlog segment vouches
 *   nbl_releases       the retention rule itself (R3 in nbinlog.c), and
 *   nbl_release_count  the same over a list of records, oldest first
 */
#ifndef AURALOG_NBINLOG_H
#define AURALOG_NBINLOG_H

#include <stddef.h>
#include <stdint.h>

#include "net/wire.h"

struct node;
struct segment;
struct ep;

void nbl_on_read(struct node *n, struct ep *c, uint64_t req, const Auralog__BinlogRead *br);
void nbl_on_assign(struct node *n, const Auralog__Assign *as);
/* Returns 0, or -1 if a transaction failed (rolled back, reported). */
int nbl_retain(struct node *n);
void nbl_free(struct node *n);

/* Where a binlog segment's vouching ends (nbinlog.c D1): the PG's last
 * record at or below the writer's VDL, as the writer named it, once found
 * held on the chain; every binlog record at or below it is on this
 * segment, and no truncation cuts it. */
uint64_t nbl_durable(struct node *n, const struct segment *s);

/* The keep point the node holds for volume vol: 1 with *keep, or 0 when no
 * registered consumer holds it (or no Assign came since the node started:
 * then nbl_retain releases nothing at all). */
int nbl_keep_of(const struct node *n, uint64_t vol, uint64_t *keep);

/* One of a segment's oldest records, oldest first, as retention sees it. */
struct nbl_cand {
  uint64_t lsn;
  uint64_t len;              /* its stored bytes */
  uint64_t wall_ms;          /* its transaction's commit time (0: unknown) */
};

/* Does the oldest record c go, the segment holding held bytes? (R3) */
int nbl_releases(const struct nbl_cand *c, uint64_t held, uint64_t newest_ms,
                 uint64_t keep_bytes, uint64_t keep_ms);
/* How many of c[0..n) to release (a prefix): c holds the segment's oldest
 * records, every one at or below the bound (R2); held: the bytes of
 * records the segment holds in all; newest_ms: the commit time of its
 * newest durable record (0: unknown); keep_bytes, keep_ms: the limits. */
size_t nbl_release_count(const struct nbl_cand *c, size_t n, uint64_t held,
                         uint64_t newest_ms, uint64_t keep_bytes, uint64_t keep_ms);

#endif
