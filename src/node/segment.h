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
 */
#ifndef AURALOG_SEGMENT_H
#define AURALOG_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include "record.h"

/* A durable record above the SCL, waiting for the hole below it to fill. */
struct pend {
  uint64_t lsn;
  uint64_t prev;
};

/* A range of LSNs a recovering writer truncated (§4.3): (from, to]. */
struct trunc {
  uint64_t epoch, from, to;
};

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
  struct trunc *truncs;  /* truncated ranges; records in them are refused */
  size_t ntruncs;
  struct pend *pend;     /* held records above scl, sorted by lsn */
  size_t npend, cap;
};

void seg_init(struct segment *s, uint64_t volume_id, uint32_t pg,
              uint32_t first_page, uint32_t npages, uint32_t page_size);
void seg_free(struct segment *s);

/* A batch from a writer of the given epoch. Returns ERR_STALE_EPOCH (with
 * "fenced by epoch N" in why) if a newer epoch was seen; otherwise raises
 * s->epoch to epoch and returns ERR_NONE. */
int seg_epoch(struct segment *s, uint64_t epoch, char *why, size_t whylen);

/* Decide about one record. Returns ERR_NONE and sets *dup (1: already held,
 * nothing to store; 0: new, store it), or an error: ERR_OUT_OF_RANGE (page
 * not in this segment, bytes outside the page) or ERR_CONFLICT (the
 * record's backlink contradicts records already held). Does not change s. */
int seg_admit(const struct segment *s, const Rec *r, int *dup, char *why,
              size_t whylen);

/* A writer of epoch truncated (from, to]: forget pending records in it,
 * and if the SCL was above from, bring it down to tail (the highest record
 * held at or below from, which the driver looked up). From now on records
 * in the range are refused. Call after the records are deleted on disk. */
void seg_truncate(struct segment *s, uint64_t epoch, uint64_t from, uint64_t to,
                  uint64_t tail);

/* The record (lsn, prev) is durable. Chains it and advances the SCL over
 * every hole this fills. Idempotent. Returns the new SCL. */
uint64_t seg_add(struct segment *s, uint64_t lsn, uint64_t prev);

#endif
