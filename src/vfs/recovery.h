/*
 * recovery.h: the VDL a recovering writer can prove from storage alone
 * (paper §4.3), as a pure function.
 *
 * Every segment remembers the highest VDL a writer told it (a hint sent
 * with each batch): every record at or below the highest hint any segment
 * holds was durable. Above it, the writer may have acknowledged more
 * commits than any hint says, so recovery looks at the records themselves.
 * A read quorum of every PG reports the records it holds above its hint;
 * an acknowledged MTR's records are at write quorum, so the union of a
 * read quorum holds each of them (Vr + Vw > V).
 *
 * The cross-PG check: an MTR's CPL record lists, for each PG the MTR
 * touched, the LSN of the MTR's last record there, and links to the
 * previous MTR's CPL (a volume-wide chain). Walking that chain from the
 * hint, an MTR counts only if every PG it touched is complete through its
 * last record there: the PG's backlink chain, followed from the PG's tail
 * at the hint through the union of records, reaches it. The walk stops at
 * the first MTR that fails; that MTR and everything after it will be
 * truncated, so a transaction spanning PGs is kept whole or not at all.
 *
 * Records inside a range some earlier recovery truncated are ignored: a
 * segment that was down then may still hold them.
 */
#ifndef AURALOG_RECOVERY_H
#define AURALOG_RECOVERY_H

#include <stddef.h>
#include <stdint.h>

struct rmeta {
  uint64_t lsn, prev;        /* the record and its PG backlink */
  uint32_t pg;
  int cpl;                   /* last record of its MTR */
  uint64_t prev_cpl;         /* CPL only: the previous MTR's CPL */
  const uint32_t *mtr_pg;    /* CPL only: PGs the MTR touched ... */
  const uint64_t *mtr_last;  /* ... and its last LSN in each */
  size_t nmtr;
};

struct rtrunc {
  uint64_t from, to;         /* (from, to] was truncated */
};

/* hint: the highest VDL hint of any answering segment. start[k]: PG k's
 * last record at or below hint (0 if none). recs: records above their
 * segment's hint from a read quorum of every PG, in any order, duplicates
 * allowed (the array is sorted in place). Returns the VDL. */
uint64_t recover_vdl(uint64_t hint, const uint64_t *start, size_t npgs,
                     struct rmeta *recs, size_t n, const struct rtrunc *tr, size_t ntr);

#endif
