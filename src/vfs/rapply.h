/*
 * rapply.h: a read replica's apply rule (paper §4.2.4), with no I/O.
 *
 * Aurora's replicas share the writer's storage and add no storage writes:
 * the writer streams them its redo, and a replica applies a record only
 * if its page is in the replica's buffer cache, only at or below the VDL,
 * and a whole mini-transaction at a time. This is that rule, as a plain
 * state machine: records and VDLs in, a read point and page changes out.
 * vfs/replica.c drives it (its locks, the cache, reads from storage), and
 * tests/unit/test_rapply.c drives it directly.
 *
 * The stream (vfs/feed.c, the writer's side): a ReplicaStart names
 *   start  the writer's last CPL when the replica subscribed: every MTR
 *          it shipped so far ends at or below it;
 *   from   its next LSN then: every record from there on follows, in LSN
 *          order with no gap (LSNs are handed out one by one, ship.c), in
 *          ReplicaFeeds that also carry the VDL;
 *   tails  each PG's last record at or below start.
 *
 * The read point rp (valid once serving is set):
 *  - rp is the VDL the replica applied through: it becomes start once the
 *    VDL reaches start (storage holds every record up to it at a write
 *    quorum, and the cache is empty), then moves to the highest CPL at or
 *    below the VDL told whose records have all arrived (ra_target). It
 *    never exceeds a VDL the writer told, and never ends inside an MTR:
 *    invariant R1 (no data above the VDL) and R2 (no partial MTR).
 *  - ra_advance moves rp and applies every record in (old rp, new rp] to
 *    its page if the page is cached; a page not cached is left alone (it
 *    is read from storage at the new read point when asked for).
 *  - ra_need(pg) is the PG's last record at or below rp: the `need` of a
 *    storage read at rp (node.c on_read_page builds the page as of it).
 *    Exact: the start's tails, then every record the replica moved past.
 *
 * A stream that skips an LSN, goes back, or holds more than
 * REPLICA_BEHIND_MAX unapplied records is refused (ra_feed -1): the
 * driver drops its cache and subscribes again (vfs/replica.c says why).
 */
#ifndef AURALOG_RAPPLY_H
#define AURALOG_RAPPLY_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct rapply {
  uint32_t page_size, pg_pages;
  uint64_t epoch;             /* the writer's, from the start */
  int started;                /* a start came */
  uint64_t start;             /* the first read point */
  int serving;                /* rp is a read point (0 is one: an empty volume's) */
  uint64_t rp;                /* the read point */
  uint64_t vdl;               /* the highest VDL told */
  uint64_t next;              /* the LSN the next record must carry */
  Rec **q;                    /* records above rp, in LSN order: q[head..n) */
  size_t head, n, cap;
  uint64_t *tail;             /* per PG: its last record at or below rp */
  size_t ntail;
  uint64_t applied, skipped, mtrs;  /* records applied to cached pages; left for
                                       storage (page not cached); MTRs passed */
};

void ra_init(struct rapply *ra);
void ra_free(struct rapply *ra);

/* Start over from a ReplicaStart: forget every record, the read point and
 * the tails; take the writer's epoch, geometry, start point and tails. */
void ra_start(struct rapply *ra, const Auralog__ReplicaStart *s);

/* Take a feed: records (copied) that continue the stream, and the VDL.
 * 0, or -1 with why (no start yet, a gap, the VDL going back, too far
 * behind): the replica must start over. */
int ra_feed(struct rapply *ra, Rec *const *recs, size_t n, uint64_t vdl, char *why,
            size_t whylen);

/* May the replica take a read point now (a start came and the VDL has
 * reached it)? */
int ra_ready(const struct rapply *ra);
/* The read point it may take now (rules above), once ra_ready: >= rp. */
uint64_t ra_target(const struct rapply *ra);

/* The cached page page_no to apply the record of lsn to, or NULL (not
 * cached). The driver sets the cached page's LSN. */
typedef uint8_t *(*ra_page_fn)(void *arg, uint32_t page_no, uint64_t lsn);

/* Move the read point to target (from ra_target, ra_ready), applying each
 * record in (rp, target] to its cached page; serving from then on.
 * Returns the records passed. */
size_t ra_advance(struct rapply *ra, uint64_t target, ra_page_fn page, void *arg);

/* The PG's last record at or below the read point (0: none). */
uint64_t ra_need(const struct rapply *ra, uint32_t pg);

/* Records held above the read point. */
size_t ra_pending(const struct rapply *ra);

#endif
