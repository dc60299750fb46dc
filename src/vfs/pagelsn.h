/*
 * pagelsn.h: the writer's page-LSN table, and the end-to-end check of a
 * page read against it (paper §4.2.3; DESIGN.md §4, invariants 4 and 8).
 *
 * A storage node answers a read at read point R with the page and its
 * page LSN, the LSN of the newest record it applied. A node whose disk
 * silently lost records (a damaged lmdb page, a bug) can answer an OLDER
 * version of the page, with no error, and its SCL cannot tell. The writer
 * does not rely on the node's own scrub: for every page it knows, it
 * remembers the LSN the page must carry, and a reply that disagrees is
 * rejected (never reaches SQLite) and another segment is asked (read.c).
 *
 * The table holds, per page, one of:
 *  - EXACT L: the LSN of the last record of the page, as this writer
 *    knows for sure: a record it cut itself (vcore_ship), or one its
 *    recovery proved on the PG's chain in (hint, vdl] and adopted (open.c).
 *  - FLOOR F: a lower bound, learned from a reply that passed the check
 *    (a page last written before this writer opened and since read). F is
 *    a record of the page at or below the VDL, so the page as of any read
 *    point R >= F carries an LSN >= F, whichever segment answers.
 *  - nothing (unknown).
 * and, for a page the writer changed above the VDL (records not yet
 * durable: a read at a read point below them must not see them), what it
 * knew of the page before the first of those changes, B, and that first
 * change's LSN, L1 (the side map `before`). Entries there leave once the
 * VDL passes the page's last LSN (swept as the writer writes).
 *
 * The rule a reply with page LSN `got` keeps (pl_check), for a read at
 * read point R whose `need` is the PG's last record at or below R:
 *  - always got <= need (so got <= R);
 *  - EXACT L <= R: got == L;
 *  - L > R (a newer change not yet at the read point), with B and L1
 *    known: if R < L1, the page is as of B: EXACT B <= R: got == B, FLOOR
 *    B <= R: got >= B; if L1 <= R < L (several changes above the VDL, the
 *    read point between them) nothing more is known;
 *  - FLOOR F <= R: got >= F.
 *
 * What it cannot catch: a page last written before this writer opened,
 * at or below the segments' VDL hint (recovery scans only above it), on
 * its FIRST read: the first answer is believed (and becomes a floor). A
 * stale first answer only weakens later checks of that page (its floor is
 * lower than the truth); it never makes a good answer fail. A node that
 * answers an older page with the right page LSN (a bad page image under
 * a good LSN) is the CRCs' business, not this table's.
 *
 * Truncation: a recovery cuts everything above its VDL; pl_truncate(vdl)
 * forgets every entry above it: the page goes back to what was known
 * before its first change above the VDL if that change was cut too (B,
 * when L1 > vdl), or becomes unknown. Entries at or below a VDL are never
 * cut.
 *
 * Memory: a hash map of the pages touched (open addressing, linear
 * probing), 12 bytes a slot, at most 3/4 full and at least 3/8 after it
 * grows: at most PL_BYTES_PER_PAGE bytes per page touched, whatever the
 * size of the volume (plus the side map: 20 bytes a slot, for the pages
 * changed above the VDL only) (a flat array would cost 8 bytes for every page up
 * to the highest one: 128 MiB for a 64 GiB volume of 4 KiB pages).
 *
 * Pure: no I/O, no clock, no lock (the volume's lock covers it).
 */
#ifndef AURALOG_PAGELSN_H
#define AURALOG_PAGELSN_H

#include <stddef.h>
#include <stdint.h>

#define PL_BYTES_PER_PAGE 32    /* 12-byte slots, at least 3/8 used */

/* A hash map from page number to k LSNs (pagelsn.c). */
struct plmap {
  uint32_t *page;            /* slot: page number, or PL_FREE */
  uint64_t *val;             /* slot i: val[k*i .. k*i+k) */
  size_t cap, n, k;          /* slots (0 or a power of two); entries; LSNs per entry */
};

struct pagelsn {
  struct plmap last;         /* page -> its LSN, with PL_FLOOR_BIT if a floor */
  struct plmap before;       /* page -> {B, L1} while it has changes above the VDL */
  size_t sweep_at;           /* sweep `before` when it holds this many (0: 64) */
};

enum { PL_UNKNOWN = 0, PL_EXACT, PL_FLOOR };

/* Verdicts of pl_check. */
enum {
  PL_OK = 0,
  PL_ABOVE_NEED,             /* got > need: a record above the read point */
  PL_NOT_EXACT,              /* EXACT L <= R and got != L */
  PL_BELOW_FLOOR,            /* FLOOR F <= R and got < F */
};

/* An empty table (a zeroed struct pagelsn is one too). */
void pl_init(struct pagelsn *t);
void pl_free(struct pagelsn *t);

/* Page's last record is lsn, for sure, at or below the VDL (recovery
 * proved it). */
void pl_set(struct pagelsn *t, uint32_t page, uint64_t lsn);
/* The writer cut record lsn of page while the VDL is vdl (lsn > vdl). */
void pl_write(struct pagelsn *t, uint32_t page, uint64_t lsn, uint64_t vdl);
/* A reply that passed the check said page is as of lsn: page's LSN is at
 * least lsn from now on (no effect on an EXACT entry or a higher floor). */
void pl_learn(struct pagelsn *t, uint32_t page, uint64_t lsn);
/* PL_UNKNOWN, or PL_EXACT / PL_FLOOR with the LSN in *lsn. */
int pl_get(const struct pagelsn *t, uint32_t page, uint64_t *lsn);
/* A recovery truncated everything above vdl: forget those entries. */
void pl_truncate(struct pagelsn *t, uint64_t vdl);

/* Check a reply (see the rule above): PL_OK, or why not, with *want the
 * LSN it broke (need, L or F). */
int pl_check(const struct pagelsn *t, uint32_t page, uint64_t read_point, uint64_t need,
             uint64_t got, uint64_t *want);
/* The verdict in words ("expected exactly", ...). */
const char *pl_verdict(int verdict);

size_t pl_count(const struct pagelsn *t);
size_t pl_bytes(const struct pagelsn *t);   /* heap memory held */

#endif
