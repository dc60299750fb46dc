/*
 * recovery.h: the VDL a recovering writer can prove from storage alone
 * (paper §4.3), as a pure function.
 *
 * Every segment remembers the highest VDL a writer told it (a hint sent
 * with each batch): every record at or below the highest hint any segment
 * holds was durable. Above it, the writer may have acknowledged more
 * commits than any hint says, so recovery looks at the records themselves.
 * A read quorum of every PG reports the records it holds above the hint;
 * an acknowledged MTR's records are at write quorum, so the union of a
 * read quorum holds each of them (Vr + Vw > V).
 *
 * Each PG's chain: from the PG's last record at or below the hint, follow
 * the backlinks through the union (in LSN order, a record whose backlink
 * is the chain's current end extends it; of two that link back to the same
 * record, a fork, the lower LSN does, and the other is off the chain with
 * everything that links to it). Records that a known truncation cuts (rule T,
 * record.h: a range of an older epoch's recovery, for records of epochs
 * below it) are left out first: a segment that was down may still hold
 * them.
 *
 * The cross-PG check: an MTR's CPL record lists, for each PG the MTR
 * touched, the LSN of the MTR's last record there, and links to the
 * previous MTR's CPL (a volume-wide chain). Walking that chain from the
 * hint, an MTR counts only if its CPL and its last record in every PG it
 * touched are on their PGs' chains. The walk stops at the first MTR that
 * fails; that MTR and everything after it will be truncated, so a
 * transaction spanning PGs is kept whole or not at all.
 *
 * What the walk proves may rest on records only one segment holds (an MTR
 * that never reached a write quorum, so was never acknowledged, but whose
 * records all survived somewhere). recover_vdl marks every record on the
 * chains in (hint, vdl] `adopt`: the recovering writer re-stamps them with
 * its epoch and writes them to a write quorum of their PG before the
 * volume serves (vfs/open.c). Only then is the VDL durable.
 */
#ifndef AURALOG_RECOVERY_H
#define AURALOG_RECOVERY_H

#include <stddef.h>
#include <stdint.h>
#include "record.h"

struct rmeta {
  uint64_t lsn, prev;        /* the record and its PG backlink */
  uint64_t epoch;            /* the epoch it carries (rule T) */
  uint32_t pg;
  int cpl;                   /* last record of its MTR */
  uint64_t prev_cpl;         /* CPL only: the previous MTR's CPL */
  const uint32_t *mtr_pg;    /* CPL only: PGs the MTR touched ... */
  const uint64_t *mtr_last;  /* ... and its last LSN in each */
  size_t nmtr;
  void *rec;                 /* the caller's record, carried along */
  int adopt;                 /* out: on its PG's chain in (hint, vdl] */
};

/* hint: the highest VDL hint of any answering segment. start[k]: PG k's
 * last record at or below hint (0 if none). recs: records above their
 * segment's hint from a read quorum of every PG, in any order, duplicates
 * allowed (the array is sorted in place by LSN; of the copies of one LSN
 * the one with the highest epoch counts, the others get adopt = 0). tr:
 * every truncation the read quorum holds. Returns the VDL; tails[k] (if
 * not NULL) is PG k's last record at or below it: the next record of PG k
 * links back to it. */
uint64_t recover_vdl(uint64_t hint, const uint64_t *start, size_t npgs,
                     struct rmeta *recs, size_t n, const struct trunc *tr, size_t ntr,
                     uint64_t *tails);

/* The community binlog's roll-forward (ship.c P0, issue 29), after
 * recover_vdl, on the same recs (sorted now) and tails. xid: the newest
 * XID of the engine's binlog file, above vdl: the transaction whose events
 * that file holds was prepared (its page records at write quorum, no CPL)
 * before they were written there, so its records are all among recs.
 * RF1: it is rolled forward only if every LSN from the first counting
 * record above vdl to xid - 1 is there, chained on its PG, and none is a
 * CPL: one whole prepared MTR. Then those records get adopt, tails[] move
 * to them, and *pg, *prev, *page_at (the index in recs of record xid - 1,
 * whose page the commit record names), ml_pg/ml_last (its shape, room
 * for npgs + 1, the commit record's own PG included, *nml of them) say
 * what commit record to write at xid; returns 1. Else 0, nothing moved:
 * the MTR is truncated as any partial one. */
int recover_rollforward(uint64_t vdl, uint64_t xid, struct rmeta *recs, size_t n,
                        const struct trunc *tr, size_t ntr, size_t npgs, uint64_t *tails,
                        uint32_t *pg, uint64_t *prev, size_t *page_at, uint32_t *ml_pg,
                        uint64_t *ml_last, size_t *nml);

/* The data-loss check, on the VDL recover_vdl proved. heard[k]: the
 * highest VDL segment k of the recovery said a writer told it (0: none,
 * or it never answered), for nk segments. Returns how many heard a VDL
 * above vdl (0: none did, the VDL may be served); *worst, when some did,
 * is the one that heard the highest (the first such in k order).
 *
 * INVARIANT (why any is an alarm, paper §4.3, DESIGN.md §4 invariant 1):
 * within the fault model a recovery proves a VDL at or above every VDL a
 * segment heard. A writer announces VDL Y only once every record up to Y
 * is at a write quorum (Vw = 4 of 6) of every PG; the read quorum (Vr = 3
 * of 6) recovery reads of each PG intersects that write quorum (Vr + Vw >
 * V), so the records it scans chain each PG up to Y, Y is a CPL whose MTR
 * is whole there, and Y is at or below the VCL they show: the walk passes
 * it. So a proved VDL below a heard one means records a write quorum once
 * held are gone from every segment that answered: storage lost beyond
 * the fault model, or a log cut by hand. The commits in (vdl, heard] were
 * acknowledged. Truncating above vdl would make their loss final (and each
 * segment that heard more refuses that truncation: node/trunc.c
 * node_writer_trunc_ok), so recovery must stop and say so instead. */
size_t recover_lost(uint64_t vdl, const uint64_t *heard, size_t nk, size_t *worst);

#endif
