/*
 * segment.h: one segment of a protection group, as a pure state machine
 * (paper §2.2, §3.3 steps 1-3, §4.2.1).
 *
 * A segment holds the records of one PG. Records may arrive out of order
 * or with holes (a lost batch); each carries a backlink to the previous
 * record of its PG, so the segment can tell a hole from the end of the log.
 * The SCL (segment complete LSN) is the greatest LSN up to which the chain
 * of backlinks has no hole: every record of the PG at or below it is here.
 *
 * No I/O here: the driver (node/node.c with node/store.c) persists what
 * seg_admit() accepts and calls seg_add() only after the records are
 * durable, so the SCL never counts a record that a crash could lose.
 *
 * Interface:
 *   seg_init / seg_free  set up / release
 *   seg_epoch            check (and raise) the writer epoch seen
 *   seg_admit            is this record new, a duplicate, or refused?
 *   seg_add              a record is now durable: chain it, advance the SCL
 *   seg_has_trunc / seg_add_trunc   the truncations held (rule T, record.h)
 *   seg_heard_note / seg_heard_below   the VDLs heard, per writer epoch
 *   seg_trunc_ok         the bound a truncation must keep to be installed
 *                        (DESIGN.md §4, invariant 9), on every path
 *   seg_rechain          start the chain again from a record (after a
 *                        truncation, or at load): the driver then seg_add()s
 *                        every stored record above it
 *
 * Invariants (the driver keeps them with the store):
 *   - scl and every record in pend are durable on disk: seg_add() is called
 *     only after the commit that stored the record;
 *   - no held record is cut by a held truncation (rule T): a truncation is
 *     installed by deleting what it cuts in the same transaction, and
 *     seg_admit() refuses what a held truncation cuts;
 *   - every held record at or below scl is on the PG's chain of backlinks
 *     that ends at scl (seg_admit refuses a record that a held one jumps
 *     over, or that jumps over a held one).
 */
#ifndef AURALOG_SEGMENT_H
#define AURALOG_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include "param.h"
#include "record.h"

/* A durable record above the SCL, waiting for the hole below it to fill. */
struct pend {
  uint64_t lsn;
  uint64_t prev;
};

/* The highest VDL a writer of `epoch` told this segment (an Append's). */
struct heard {
  uint64_t epoch;
  uint64_t vdl;
};

/* A truncation this segment held and forgot once every member held it
 * (rule TF, node/tforget.c): counted as held, never installed again, and
 * dropped once every member is seen without its proof. Memory only. */
struct tomb {
  uint64_t epoch, from, to;
  uint32_t seen;         /* peers seen without its proof */
};

/* A segment of a volume's binlog PG (issue 29; seg_is_binlog below): it
 * holds REC_BINLOG records only, and keeps them as they came: never made
 * into pages (bg.c), never GC'd by the PGMRPL but released by retention
 * (nbinlog.c), never read as a page, never staged to the backup. */
struct segment {
  uint64_t volume_id;
  uint32_t pg;
  uint32_t first_page;   /* pages [first_page, first_page + npages) */
  uint32_t npages;
  uint32_t page_size;
  uint64_t scl;          /* every record of the PG <= scl is held */
  uint64_t max_lsn;      /* highest LSN held */
  uint64_t epoch;        /* highest writer epoch seen (fencing, §4.3) */
  uint64_t vdl;          /* highest writer VDL heard: a durable point */
  /* The VDLs heard per writer epoch, by epoch (seg_heard_note): both
   * epoch and vdl strictly increase along it (an entry another makes moot
   * is dropped), so the highest VDL heard below an epoch is the last
   * entry below it. The bound on truncations (seg_trunc_ok) reads it. */
  struct heard heard[HEARD_MAX];
  size_t nheard;
  struct trunc *truncs;  /* truncations held; records they cut are refused */
  size_t ntruncs;
  struct tomb *tombs;    /* ... and those forgotten (rule TF): held all the same */
  size_t ntombs;
  struct pend *pend;     /* held records above scl, sorted by lsn */
  size_t npend, cap;
  /* Background work (node/bg.c, node/store_pages.c): the driver's state,
   * kept here so that it lives and dies with the segment. */
  uint64_t gc_lsn;       /* records <= gc_lsn are materialized; the chain starts here */
  uint8_t *imaged;       /* bit per page: it has a version at or below gc_lsn */
  uint64_t *floor;       /* per page (NULL: none): served only at or above this point */
  uint16_t *unmat;       /* per page (NULL: none counted): records above its newest version */
  uint64_t pgmrpl;       /* the writer's minimum read point, as heard (memory only) */
  uint64_t pgmrpl_tail;  /* ... and the PG's last record at or below it, on the writer's chain */
  uint64_t catchup;      /* catching up to a peer's GC point by page versions (bg.c) */
  unsigned rechains;     /* seg_rechain calls: a scrub that saw the chain change starts again */
  unsigned long long catchup_at;  /* ... since then */
  uint64_t scl_seen;     /* the SCL when bg.c last saw it move (memory only) ... */
  unsigned long long scl_seen_at;  /* ... and when: a stuck SCL (maybe_catch_up) */
  unsigned long long cut_refused_at;  /* when it last refused a peer's or the writer's range */
  uint64_t nrecs, nimgs, bytes;  /* held, as counted since load (status) */
  uint64_t oldest_img;   /* LSN of the oldest page version held (0: none) */
  /* A binlog segment's durable end as the writer names it (nbinlog.c D1;
   * memory only, as pgmrpl): the latest (vdl, vdl_tail) its writer of the
   * segment's epoch told, and the highest tail found held on the chain. */
  uint64_t bl_vdl, bl_tail, bl_ok;
  /* Membership (member.h), as the coordinator's Assigns say (node/member.c):
   * durable in SegMeta.seg (a store written before them loads 0s), and
   * mepoch and mepoch_min only ever rise. */
  uint64_t mepoch;       /* the PG's membership epoch */
  uint64_t mepoch_min;   /* M5: an Append or gossip below it is refused */
  uint64_t since;        /* the PG's mepoch when this segment came in */
  uint32_t pos;          /* its position in the PG, 0..NCOPIES-1 */
  uint8_t next;          /* an incoming segment, being hydrated (M2) */
  /* Hydration (node/gossip.c, node/bg.c; memory only, for status): bytes
   * of records and page versions taken from PG peers since load. */
  uint64_t pulled;
  /* Who filled it (memory only, SegStat.from_writer / from_peers): records
   * new to it from the writer's Appends, and records and page versions
   * new to it from PG peers, since the node started. */
  uint64_t from_writer, from_peers;
  /* Continuous backup (node/nbackup.c; memory only: a restarted node
   * learns it again from the writer, its peers and the object store). */
  struct seg_bk {
    uint64_t vdl, tail;    /* the writer's latest (vdl, vdl_tail) pair: the PG's last
                              record at or below vdl is tail (vdl 0: none heard) */
    uint64_t point;        /* the PG's backup point as known here: every record of
                              the PG at or below it is in the object store */
    uint8_t listed;        /* as the PG's uploader, it read the PG's point from the
                              store (NBK_LIST) since it took the PG over */
    uint8_t busy;          /* a listing or an upload of it is in flight */
    uint8_t uploader;      /* this node stages the PG now (rule U) */
    uint64_t clock[2 * BK_CLOCK_MAX];  /* (unix ms, vdl) pairs noted from Appends, a ring */
    unsigned nclock;       /* ever noted: the next goes to nclock % BK_CLOCK_MAX */
    unsigned long long fail_at;   /* the last upload failed then: try again after a pause */
    uint64_t base_ms;      /* wall ms of the PG's newest base image in the store (0: none) */
    uint64_t base_point;   /* ... and the backup point then */
    uint64_t keep_ms;      /* the volume's retention, as the store last said (0: not read) */
    uint8_t retain;        /* a retention pass is due (after a base image) */
    unsigned long long moved_at, warned_at;   /* the point last rose; the last warning */
  } bk;
};

/* Is a page (an index from first_page) imaged / its floor (0: none)? */
static inline int seg_imaged(const struct segment *s, uint32_t i)
{
  return s->imaged && (s->imaged[i / 8] >> (i % 8)) & 1;
}
static inline uint64_t seg_floor(const struct segment *s, uint32_t i)
{
  return s->floor ? s->floor[i] : 0;
}

void seg_init(struct segment *s, uint64_t volume_id, uint32_t pg,
              uint32_t first_page, uint32_t npages, uint32_t page_size);
void seg_free(struct segment *s);

/* A batch from a writer of the given epoch. Returns ERR_STALE_EPOCH (with
 * "fenced by epoch N" in why) if a newer epoch was seen; otherwise raises
 * s->epoch to epoch and returns ERR_NONE. */
int seg_epoch(struct segment *s, uint64_t epoch, char *why, size_t whylen);

/* Decide about one record. Returns ERR_NONE and sets *dup (1: already held,
 * nothing to store; 0: new, store it), or an error: ERR_OUT_OF_RANGE (page
 * not in this segment, bytes or copies outside the segment's page),
 * ERR_BAD_MSG / ERR_BAD_CRC (malformed), or ERR_CONFLICT (cut by a held
 * truncation, or its backlink contradicts records already held). Does not
 * change s. */
int seg_admit(const struct segment *s, const Rec *r, int *dup, char *why,
              size_t whylen);

/* Is the truncation (epoch, from, to] held? */
int seg_has_trunc(const struct segment *s, uint64_t epoch, uint64_t from, uint64_t to);

/* Hold the truncation (epoch, from, to] (no-op if empty, or this very
 * range is held). The driver has checked it (seg_trunc_ok) and deleted, in
 * the same transaction, every record it cuts. */
void seg_add_trunc(struct segment *s, const struct trunc *t);

/* A writer of epoch told this segment its VDL (0: nothing). Returns 1 if
 * that changed what the segment holds (its SegMeta is then rewritten). */
int seg_heard_note(struct segment *s, uint64_t epoch, uint64_t vdl);

/* The highest VDL heard from writers of epochs below epoch (0: none); in
 * *who (if not NULL) the epoch it is attributed to. */
uint64_t seg_heard_below(const struct segment *s, uint64_t epoch, uint64_t *who);

/* May s install truncation t? ERR_NONE, or ERR_CONFLICT with a one-line
 * reason in why. base: the highest `to` of the truncations of epochs
 * below t's installed along with it (earlier in the same message), 0 if
 * none. Held ranges and those wholly at or below the GC point pass. */
int seg_trunc_ok(const struct segment *s, const struct trunc *t, uint64_t base, char *why,
                 size_t whylen);

/* Of t[0..n), heard together (one message, or a SegMeta at start), which
 * s may install: checked oldest epoch first (ord[0..n): that order), each
 * with the older ones taken before it as its base. fate[i]: 0 held or
 * empty, 1 to install, 2 refused (then refused(arg, &t[i], why) is called,
 * if not NULL). bounded 0: none is checked (a planted bug). Returns how
 * many are to install. */
size_t seg_trunc_pick(const struct segment *s, const struct trunc *t, size_t n, int bounded,
                      size_t *ord, uint8_t *fate,
                      void (*refused)(void *arg, const struct trunc *t, const char *why),
                      void *arg);

/* Forget every pending record and let the chain end at base (0: the PG's
 * start): the driver then seg_add()s every stored record above base. base
 * must be a held record on the chain (or 0), so everything at or below it
 * is still held. */
void seg_rechain(struct segment *s, uint64_t base);

/* The record (lsn, prev) is durable. Chains it and advances the SCL over
 * every hole this fills. Idempotent. Returns the new SCL. */
uint64_t seg_add(struct segment *s, uint64_t lsn, uint64_t prev);

/* Is s a segment of its volume's binlog PG? */
static inline int seg_is_binlog(const struct segment *s)
{
  return s->pg == BINLOG_PG;
}

#endif
