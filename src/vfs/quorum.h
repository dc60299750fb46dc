/*
 * quorum.h: the writer's view of durability (paper §4.1, §4.2.1), as a pure
 * state machine.
 *
 * The writer hands out LSNs, one per record, in increasing order, never
 * more than LAL above the VDL (back-pressure: allocation must wait while
 * next_lsn > vdl + lal). Each record belongs to one protection group and
 * is sent to that PG's segments, numbered by slot (member.h): slot p <
 * NCOPIES is position p's current segment, slot NCOPIES + p its incoming
 * next one while a membership change moves it. Each segment's
 * acknowledgement is recorded here. A record is at write quorum when VW
 * positions of its PG count for it (member.h M1, member_positions): a
 * position counts when its current segment holds the record and, if the
 * position is in transition (q_set_trans), its next segment holds it too.
 * With no transition that is VW distinct segments of the six.
 *   VCL: the highest LSN such that every record at or below it is at
 *        write quorum;
 *   VDL: the highest CPL (last record of a mini-transaction) <= VCL.
 * A commit is durable when vdl >= its commit LSN. VCL and VDL never go
 * down.
 *
 * LSNs after start are contiguous: every LSN from start_lsn on is one
 * record. LSNs in (vdl, start_lsn) (a truncated range after recovery) hold
 * no records and are skipped.
 *
 * No I/O, no threads: the volume driver (volume.c) calls these under its
 * lock.
 */
#ifndef AURALOG_QUORUM_H
#define AURALOG_QUORUM_H

#include <stddef.h>
#include <stdint.h>

#include "param.h"

struct qrec {
  uint64_t lsn;
  uint32_t pg;
  uint8_t cpl;         /* last record of its MTR */
  uint16_t acks;       /* bit i: segment slot i of the PG holds it (i < NSLOTS) */
};

struct quorum {
  uint64_t next_lsn;   /* next LSN to hand out */
  uint64_t vcl, vdl;
  uint64_t lal;
  uint64_t floor;      /* start_lsn - 1: the end of the truncated range */
  int vw;              /* write quorum */
  struct qrec *q;      /* records above vcl, in LSN order: a ring */
  size_t head, n, cap;
  /* Per PG, bit p: position p has a next segment (member.h), set by
   * q_set_trans; PGs at or past ntrans have none. */
  uint8_t *trans;
  size_t ntrans;
};

/* Start with nothing pending: vcl = vdl = vdl, first LSN handed out is
 * start_lsn (> vdl). */
void q_init(struct quorum *q, uint64_t vdl, uint64_t start_lsn, uint64_t lal, int vw);
void q_free(struct quorum *q);

/* Can n more LSNs be handed out now? The limit counts from the VDL, or
 * from the end of the range recovery truncated if that is higher (no
 * record can be durable inside it): next_lsn + n - 1 <= max(vdl, floor) + lal.
 * A recovery truncates up to max(vdl, highest earlier truncation) + LAL,
 * so it covers every LSN a crashed writer could have handed out. */
int q_can_alloc(const struct quorum *q, size_t n);

/* Hand out the next LSN, for a record of pg; cpl marks the last record of
 * its MTR. The caller has checked q_can_alloc. */
uint64_t q_alloc(struct quorum *q, uint32_t pg, int cpl);

/* Segment slot of pg durably holds record lsn. LSNs not pending (already
 * at quorum, or never handed out, or of another pg) are ignored, and so
 * is a next segment's (slot >= NCOPIES): a segment still being hydrated
 * may hold this record above a hole, so only its SCL counts (member.h M2).
 * Returns 1 if the VDL advanced. */
int q_ack(struct quorum *q, uint32_t pg, int slot, uint64_t lsn);

/* Segment slot of pg is complete up to scl (its SCL): it holds every
 * record of pg at or below scl, for any slot 0..NSLOTS-1 (M2). Returns 1
 * if the VDL advanced. */
int q_ack_upto(struct quorum *q, uint32_t pg, int slot, uint64_t scl);

/* Membership (member.h). Bit p of trans: position p of pg has a next
 * segment (slot NCOPIES + p), which must then hold a record too for the
 * position to count (M1). Pending records are counted again under it:
 * returns 1 if the VDL advanced (it can, when a transition ends). */
int q_set_trans(struct quorum *q, uint32_t pg, uint8_t trans);
/* The transition mask of pg (0: none). */
uint8_t q_trans(const struct quorum *q, uint32_t pg);
/* pg's segments moved between slots: map[s] is old slot s's new slot, or
 * -1 if that segment left. Each pending record of pg keeps the acks of the
 * segments that stay, under their new slots (a finish moves bit NCOPIES+p
 * to p; a next that changes loses its bit). Does not advance by itself:
 * call q_set_trans after it (a stricter state in between is safe). */
void q_remap(struct quorum *q, uint32_t pg, const int map[NSLOTS]);

/* Records handed out and not yet below the VCL. */
size_t q_pending(const struct quorum *q);
/* The i-th oldest of them (i < q_pending): its PG, LSN and acks so far. */
const struct qrec *q_pending_at(const struct quorum *q, size_t i);

#endif
