/*
 * quorum.c: the writer's view of durability (see quorum.h; paper §4.1,
 * §4.2.1).
 *
 * Aurora never waits for a log record synchronously. The writer hands out
 * LSNs, ships records to the six segments of each record's protection
 * group, and counts acknowledgements as they come back, in any order. Two
 * points summarise them: the VCL (every record up to it has a write quorum)
 * and the VDL (the last mini-transaction end, CPL, at or below the VCL). A
 * commit is durable once the VDL reaches its commit LSN. While a
 * membership change moves a position of a PG (member.h), the write quorum
 * counts positions, not segments: M1 (member_positions). The LAL bounds how
 * far LSN allocation may run ahead of the VDL, which gives back-pressure
 * and lets recovery bound what could be outstanding.
 *
 * Representation: the records above the VCL, in LSN order, in a ring
 * q[head], q[head+1], ... (mod cap), n of them. Invariants:
 *   - n == 0, or q[head] is the record vcl's successor: the oldest record
 *     not yet counted into the VCL, and it is not at write quorum (the
 *     advance loop pops it the moment it is);
 *   - LSNs of the ring are contiguous: q[head + i].lsn == q[head].lsn + i,
 *     and the last one is next_lsn - 1. So the record of lsn L is found by
 *     arithmetic, no search. (Records are allocated at next_lsn only, and
 *     every LSN from start_lsn on is a record.)
 *   - vdl <= vcl, and both only grow: they change only when the head is
 *     popped, to the popped LSN, which is above every LSN popped before.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "member.h"
#include "param.h"
#include "vfs/quorum.h"

/* acks is one bit per segment slot, current and next (member.h). */
_Static_assert(NSLOTS <= 16, "struct qrec.acks holds one bit per slot");

#define QCAP_MIN 64

void q_init(struct quorum *q, uint64_t vdl, uint64_t start_lsn, uint64_t lal, int vw)
{
  assert(start_lsn > vdl);
  assert(vw >= 1 && vw <= NCOPIES);
  memset(q, 0, sizeof *q);
  q->next_lsn = start_lsn;
  q->floor = start_lsn - 1;
  q->vcl = q->vdl = vdl;    /* LSNs in (vdl, start_lsn) are no records */
  q->lal = lal;
  q->vw = vw;
}

void q_free(struct quorum *q)
{
  free(q->q);
  q->q = NULL;
  q->head = q->n = q->cap = 0;
  free(q->trans);
  q->trans = NULL;
  q->ntrans = 0;
}

uint8_t q_trans(const struct quorum *q, uint32_t pg)
{
  return pg < q->ntrans ? q->trans[pg] : 0;
}

int q_can_alloc(const struct quorum *q, size_t n)
{
  /* LAB 22 BEGIN: the LAL (§4.2.1). May n more LSNs be handed out?
   * Only while the last of them, next_lsn + n - 1, stays within lal of
   * the VDL (or of floor, the end of the last truncation, if higher).
   * Mind n == 0 and unsigned arithmetic.
   * stub: (void)q;
   * stub: (void)n;
   * stub: return 1;
   */
  /* next_lsn + n - 1 <= base + lal, written so that n == 0 cannot wrap. */
  uint64_t base = q->vdl > q->floor ? q->vdl : q->floor;
  return q->next_lsn + n <= base + q->lal + 1;
  /* LAB 22 END */
}

/* Double the ring. A full ring wraps at cap: its records are [head, cap)
 * then [0, head). After realloc, moving [0, head) to [cap, cap + head)
 * makes them contiguous from head again, without moving head. */
static void q_grow(struct quorum *q)
{
  size_t ncap = q->cap ? 2 * q->cap : QCAP_MIN;
  struct qrec *nq = realloc(q->q, ncap * sizeof *nq);
  if (nq == NULL)
    abort();                /* the writer cannot go on without its state */
  if (q->head + q->n > q->cap)
    memcpy(nq + q->cap, nq, (q->head + q->n - q->cap) * sizeof *nq);
  q->q = nq;
  q->cap = ncap;
}

uint64_t q_alloc(struct quorum *q, uint32_t pg, int cpl)
{
  if (q->n == q->cap)
    q_grow(q);
  struct qrec *r = &q->q[(q->head + q->n) % q->cap];
  r->lsn = q->next_lsn++;
  r->pg = pg;
  r->cpl = cpl != 0;
  r->acks = 0;
  q->n++;
  return r->lsn;
}

/* The pending record of lsn, or NULL if lsn is not pending. */
static struct qrec *q_find(struct quorum *q, uint64_t lsn)
{
  if (q->n == 0)
    return NULL;
  uint64_t first = q->q[q->head].lsn;
  if (lsn < first || lsn - first >= q->n)
    return NULL;            /* at quorum already, or never handed out */
  return &q->q[(q->head + (size_t)(lsn - first)) % q->cap];
}

/* Pop every record at the head that has its write quorum, moving the VCL
 * (and, at a CPL, the VDL) up to it. Returns 1 if the VDL moved. */
static int q_advance(struct quorum *q)
{
  /* LAB 22 BEGIN: the VCL and the VDL (§4.1). Pop records off the head
   * of the ring while the head has its write quorum: vw positions of its
   * PG count for it (member.h M1: member_positions(r->acks,
   * q_trans(q, r->pg)); with no membership change under way, that is vw
   * of its acks bits). The VCL becomes each popped LSN, the VDL each
   * popped CPL. Keep the ring's invariants (head, n; head = 0 once
   * empty). Return 1 if the VDL moved.
   * stub: (void)q;
   * stub: return 0;
   */
  uint64_t old_vdl = q->vdl;
  while (q->n > 0) {
    struct qrec *r = &q->q[q->head];
    if (member_positions(r->acks, q_trans(q, r->pg)) < q->vw)
      break;
    q->vcl = r->lsn;
    if (r->cpl)
      q->vdl = r->lsn;
    q->head = (q->head + 1) % q->cap;
    q->n--;
  }
  if (q->n == 0)
    q->head = 0;            /* keeps the ring unwrapped while it can be */
  return q->vdl != old_vdl;
  /* LAB 22 END */
}

int q_ack(struct quorum *q, uint32_t pg, int slot, uint64_t lsn)
{
  /* M2: a next segment (slot NCOPIES + p) may hold this record above a
   * hole its hydration has not filled yet; only its SCL says it holds
   * everything up to it (q_ack_upto). */
  if (slot < 0 || slot >= NCOPIES)
    return 0;
  struct qrec *r = q_find(q, lsn);
  if (r == NULL || r->pg != pg)
    return 0;               /* a stale or misdirected ack changes nothing */
  r->acks |= (uint16_t)(1u << slot);   /* a duplicate sets the same bit */
  return q_advance(q);
}

int q_ack_upto(struct quorum *q, uint32_t pg, int slot, uint64_t scl)
{
  if (slot < 0 || slot >= NSLOTS || q->n == 0)
    return 0;
  /* Records at or below the VCL are at quorum already; only the pending
   * ones up to scl can change. O(pending), which the LAL bounds. */
  uint64_t first = q->q[q->head].lsn;
  if (scl < first)
    return 0;
  size_t upto = scl - first >= q->n ? q->n : (size_t)(scl - first) + 1;
  for (size_t i = 0; i < upto; i++) {
    struct qrec *r = &q->q[(q->head + i) % q->cap];
    if (r->pg == pg)
      r->acks |= (uint16_t)(1u << slot);
  }
  return q_advance(q);
}

int q_set_trans(struct quorum *q, uint32_t pg, uint8_t trans)
{
  trans &= (uint8_t)((1u << NCOPIES) - 1);
  if (pg >= q->ntrans) {
    if (trans == 0)
      return 0;             /* none, as before */
    size_t n = q->ntrans ? q->ntrans : 64;
    while (n <= pg)
      n *= 2;
    uint8_t *t = realloc(q->trans, n);
    if (t == NULL)
      abort();              /* the writer cannot go on without its state */
    memset(t + q->ntrans, 0, n - q->ntrans);
    q->trans = t;
    q->ntrans = n;
  }
  q->trans[pg] = trans;
  return q_advance(q);      /* fewer transitions: records may be at quorum now */
}

void q_remap(struct quorum *q, uint32_t pg, const int map[NSLOTS])
{
  for (size_t i = 0; i < q->n; i++) {
    struct qrec *r = &q->q[(q->head + i) % q->cap];
    if (r->pg != pg)
      continue;
    uint16_t acks = 0;
    for (int s = 0; s < NSLOTS; s++)
      if ((r->acks & (1u << s)) && map[s] >= 0 && map[s] < NSLOTS)
        acks |= (uint16_t)(1u << map[s]);
    r->acks = acks;
  }
}

size_t q_pending(const struct quorum *q)
{
  return q->n;
}

const struct qrec *q_pending_at(const struct quorum *q, size_t i)
{
  return &q->q[(q->head + i) % q->cap];
}
