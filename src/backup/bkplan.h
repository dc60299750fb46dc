/*
 * bkplan.h: what a backup holds, and which objects restore a point.
 *
 * A PG's backup is base images and log pieces (bkfmt.h). The PG can be
 * restored to a point L when some base at AT <= L (or the empty PG at
 * LSN 0: every PG's chain starts from zero pages) is followed by pieces
 * that leave no gap up to L: each piece (from, to] holds every record of
 * the PG in its range, so a run of pieces whose ranges chain (each from at
 * or below the last to) holds every record from AT to its end. Pieces may
 * overlap (two segments staged the PG while the uploader changed hands):
 * their records agree, being below a VDL, and the walk takes the one that
 * reaches furthest.
 *
 * The listing is the truth: nothing else records which pieces exist, so a
 * piece written is counted whoever wrote it, and one deleted (retention)
 * is not.
 *
 * Interface:
 *   bk_scan     list what the store holds of one volume, by PG
 *   bk_reach    how far a PG's pieces reach from a point, without a gap
 *   bk_plan     the base and pieces that restore a PG to L (-1: none do)
 *   bk_window   the newest run of points a PG can be restored to
 *   bk_retain   what retention lets go of
 *   bk_drop     take one object out (restore: it failed its checks), so
 *               that plans go around it
 *   bk_volset_free
 */
#ifndef AURALOG_BKPLAN_H
#define AURALOG_BKPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "backup/objstore.h"

struct bk_span {
  uint64_t from, to;
  uint64_t bytes;
};

struct bk_base {
  uint64_t at, ms;           /* its point, and when it was staged (unix ms) */
  uint64_t bytes;
};

struct bk_pgset {
  int present;               /* the store holds something of this PG */
  struct bk_base *bases;     /* base images, by point then time */
  size_t nbases;
  struct bk_span *logs;      /* log pieces, by from then to */
  size_t nlogs;
  uint64_t bytes;            /* all its objects */
  size_t cap_b, cap_l;
};

struct bk_volset {
  uint64_t vol;
  struct bk_pgset *pgs;      /* by PG number: [0, npgs) */
  size_t npgs;               /* 1 + the highest PG seen */
};

int bk_scan(struct objstore *o, uint64_t vol, struct bk_volset *vs, char *why, size_t whylen);
void bk_volset_free(struct bk_volset *vs);

/* Add one object to vs as a listing names it (bk_scan; tests). */
void bk_volset_add(struct bk_volset *vs, const char *key, uint64_t bytes);
/* Sort what was added (bk_scan does it). */
void bk_volset_sort(struct bk_volset *vs);

/* Take the object (kind, a, b: as in its key, bkfmt.h struct bk_key) out
 * of p, as if the listing had not named it: every plan, reach and window
 * computed from p afterwards goes around it. 0, or -1 if p has no such
 * object. p stays sorted and present (the PG did have a backup). */
int bk_drop(struct bk_pgset *p, int kind, uint64_t a, uint64_t b);

/* The furthest point reached from start by chaining pieces (start itself
 * if none goes on from it). path, if given, gets the pieces' indexes in
 * order (room for p->nlogs). */
uint64_t bk_reach(const struct bk_pgset *p, uint64_t start, size_t *path, size_t *npath);

/* The newest base at or below L (*base: its index, SIZE_MAX for the empty
 * PG) from which the pieces reach L, and those pieces (path, as
 * bk_reach): 0, or -1 if the PG cannot be restored to L. */
int bk_plan(const struct bk_pgset *p, uint64_t L, size_t *base, size_t *path, size_t *npath);

/* The newest run of restorable points [*lo, *hi] (0 if none: *lo > *hi
 * then, as 1 > 0). */
int bk_window(const struct bk_pgset *p, uint64_t *lo, uint64_t *hi);

/* Retention: every point staged within keep_ms of now_ms stays
 * restorable, so the newest base staged at or before now_ms - keep_ms is
 * kept, and what only older points need goes: older bases, and pieces that
 * end at or below that base's point. fn is called for each object to
 * delete (its kind, and a, b as in its key: bkfmt.h struct bk_key);
 * returns how many. Nothing goes while no base is that old. */
size_t bk_retain(const struct bk_pgset *p, uint64_t now_ms, uint64_t keep_ms,
                 void (*fn)(void *arg, int kind, uint64_t a, uint64_t b), void *arg);

#endif
