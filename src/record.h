/*
 * record.h: redo records and page versions (paper §3.1, §4.2.3).
 *
 * A record holds the byte ranges that one mini-transaction changed in one
 * page: the after-image minus the before-image. A new page is a delta
 * against a zero page. Each record carries the LSN of the previous record
 * of its protection group (the backlink), from which a segment computes its
 * SCL (node/segment.c), and a CRC over its content.
 *
 * A page as of read point R is the newest stored image at or below R with
 * that page's records in (image LSN, R] applied in LSN order: page_build().
 *
 * Interface:
 *   rec_crc / rec_seal   compute / set a record's CRC
 *   rec_check            validate a record against a page size (ERR_* code)
 *   rec_apply            apply one record to a page buffer
 *   page_build           a page as of a read point
 */
#ifndef AURALOG_RECORD_H
#define AURALOG_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "auralog.pb-c.h"

typedef Auralog__Record Rec;

#define REC_CPL 1u          /* flags: last record of its MTR (a CPL, §4.1) */
#define REC_ZERO 2u         /* flags: the page starts from zeros (a new page) */
#define REC_BINLOG 4u        /* flags: a binlog record (Record.binlog; issue 29): in the
                              * binlog PG only, a CPL, no ranges, never applied to a page */
#define REC_FLAGS_KNOWN (REC_CPL | REC_ZERO | REC_BINLOG)

/* A range of LSNs that a recovery of epoch `epoch` truncated (paper §4.3):
 * (from, to]. from is the VDL that recovery proved.
 *
 * Rule T (the truncation rule): a truncation of epoch e cuts a record of
 * epoch r, LSN l, if and only if from < l <= to and r < e. A truncation
 * never cuts a record of its own epoch or a newer one.
 *
 * Why this is safe and enough:
 *  - Writer e writes its truncation before its first record, and every
 *    LSN it hands out is above `to`: its own records are outside its range.
 *  - A newer writer's records are never cut by an older truncation. Before
 *    this rule an old, interrupted recovery's range (written to one segment,
 *    then spread by gossip) deleted a newer epoch's acknowledged commits.
 *  - An older epoch's record that a recovery of epoch e proves durable
 *    (above every durable point the segments heard) is adopted: recovery
 *    re-stamps it with epoch e and writes it to a write quorum before the
 *    volume serves (vfs/open.c). So no truncation of an epoch <= e, seen or
 *    not, can cut it, and every later recovery proves a VDL at or above it.
 *  - Hence a record on the durable chain is never cut, and every record a
 *    truncation cuts lies above a proven VDL: it was never acknowledged.
 * Truncations never expire or shrink: a segment that learns an old one
 * late still cuts the old records it covers. A segment stops carrying
 * one only when no record it cuts can reach it any more: below its GC
 * point (store_gc), or once every member of its PG holds it (rule TF,
 * node/tforget.c); it counts such a one as held all the same.
 *
 * Its authority travels with it (auth.h): the ticket of its epoch (the
 * writer's public key, the coordinator's signature) and the writer's
 * signature on (volume, epoch, from, to). A node installs one only if
 * both hold; one read from the node's own disk is trusted as it is. */
struct trunc_proof {
  uint8_t writer_pk[32];
  uint8_t ticket_sig[64];
  uint8_t sig[64];
  int have;                    /* 0: none (an old one, or never sent) */
};

struct trunc {
  uint64_t epoch, from, to;
  struct trunc_proof proof;
  uint32_t seen;               /* a node's: peers seen holding it (node/tforget.c) */
};

/* The proof of a TruncRange, and back (pb's bytes point into t). */
void trunc_proof_from_pb(struct trunc_proof *p, const Auralog__TruncRange *pb);
void trunc_proof_to_pb(const struct trunc_proof *p, Auralog__TruncRange *pb);

/* Rule T over a list: is the record (lsn, epoch) cut by any of t[0..n)? */
int trunc_cuts(const struct trunc *t, size_t n, uint64_t lsn, uint64_t epoch);

uint32_t rec_crc(const Rec *r);
void rec_seal(Rec *r);

/* Returns ERR_NONE if r is well formed for pages of page_size bytes (LSN and
 * backlink in order, ranges sorted, non-empty, inside the page, CRC right);
 * otherwise an ERR_* code with a one-line reason in why. */
int rec_check(const Rec *r, uint32_t page_size, char *why, size_t whylen);
/* rec_check without the CRC (for a record whose CRC the wire checked). */
int rec_check_shape(const Rec *r, uint32_t page_size, char *why, size_t whylen);

/* Apply r to page (page_size bytes): zero it first if REC_ZERO, then copy
 * the ranges. r must have passed rec_check. */
void rec_apply(uint8_t *page, uint32_t page_size, const Rec *r);

/* Build the page as of read_point into out (page_size bytes): start from
 * base (page_size bytes, or NULL for a zero page) whose LSN is base_lsn, and
 * apply every record of recs[0..n) with base_lsn < lsn <= read_point. recs
 * must be in increasing LSN order and all for the same page. Returns the
 * page LSN: the LSN of the newest change applied (base_lsn if none). */
uint64_t page_build(uint8_t *out, uint32_t page_size, const uint8_t *base,
                    uint64_t base_lsn, Rec *const *recs, size_t n,
                    uint64_t read_point);

#endif
