/*
 * rcvadopt.c: recovery's round 3 (paper §4.3; the rounds are open.c's):
 * the writer's truncation (vdl, base + LAL] and the records the scan
 * proved above the hint, re-stamped with the new epoch, to every segment
 * of every PG, current and next; then the volume opens at the VDL.
 *
 * Rules kept here (open.c says why each holds across the rounds):
 *  - A PG counts as written only when a write quorum of its positions took
 *    both the truncation and the adopted records (M1; a next segment by
 *    its SCL alone, M2), so every record up to the VDL is at a write
 *    quorum when the volume opens, even an MTR one segment held.
 *  - The truncation goes first in every Append, so a segment never holds
 *    an adopted record beside one of an older epoch the truncation cuts.
 *  - The Appends carry the old VDL hint: no segment's hint rises above
 *    what a write quorum holds before the writer's own Appends.
 *  - Each PG's next record links to the tail the chain proved (finish).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "lib/log.h"
#include "member.h"
#include "vfs/rcv_int.h"

/* ---- round 3: the truncation (vdl, base + LAL], and the records the walk
 * proved above the hint, adopted, to every segment. base is the VDL, or
 * the end of an earlier truncation if higher: a writer that recovered,
 * wrote and crashed before anything was durable handed out LSNs up to
 * there + LAL. A brand-new volume (every segment answered, nothing written
 * anywhere) needs none of it. */

static void finish(struct rcv *c);

static void free_append(Env *e)
{
  if (e->append) {
    free(e->append->records);
    free(e->append);
  }
}

/* Round 3's Appends of PG p to one segment (node, request slot k): the
 * truncation and the PG's adopted records recs[0..n), in order, in
 * Appends of at most RECOVERY_PAGE records and half a frame each (all of
 * them, and the truncation, in every Append: a segment takes them in
 * order on one connection). */
static void adopt_to(struct rcv *c, size_t p, int node, size_t k, Rec **recs, size_t n_all)
{
  struct volume *v = c->v;
  size_t off = 0;
  do {
    size_t n = 0, bytes = 0;
    while (off + n < n_all && n < RECOVERY_PAGE) {
      size_t b = auralog__record__get_packed_size(recs[off + n]) + 8;
      if (n > 0 && bytes + b > FRAME_MAX / 2)
        break;
      bytes += b;
      n++;
    }
    Env *e = rcv_round_add(&c->cur, node, k);
    Auralog__Append *a = calloc(1, sizeof *a);
    auralog__append__init(a);
    a->volume_id = c->vol_id;
    a->pg = rcv_pg_no(c, p);
    a->epoch = v->epoch;
    a->mepoch = v->pgs[rcv_pg_no(c, p)].mepoch;  /* member.h M5 */
    a->vdl = c->hint;         /* not vdl: see the rules above */
    a->ticket = vol_ticket(v);
    if (c->to > c->vdl) {
      a->trunc = &c->wtr;
      a->before = c->tp;      /* what it may rest on: the scan's, again */
      a->n_before = c->ntr;
    }
    a->records = calloc(n + 1, sizeof *a->records);
    memcpy(a->records, recs + off, n * sizeof *a->records);
    a->n_records = n;
    e->body_case = AURALOG__ENVELOPE__BODY_APPEND;
    e->append = a;
    off += n;
  } while (off < n_all);
}

void rcv_adopt_ask(struct rcv *c)
{
  struct volume *v = c->v;
  /* LAB 25 BEGIN: the truncation range (§4.3). Set c->to, the end of
   * the range (c->vdl, c->to] every segment will drop records of older
   * epochs from: every LSN the last writer may have handed out. A writer
   * hands out LSNs up to LAL past the higher of its VDL and the end of the
   * last truncation (q_can_alloc), so c->to is LAL past the higher of
   * c->vdl and c->trunc_to (the highest end of the truncations the read
   * quorum reported): a writer that recovered, truncated to trunc_to and
   * crashed before anything it wrote was durable left the VDL where it
   * was, below its records. A clean volume (c->clean: nothing held
   * anywhere) needs none: c->to = c->vdl.
   * stub: c->to = c->vdl;
   */
  uint64_t base = c->vdl > c->trunc_to ? c->vdl : c->trunc_to;
  c->to = c->clean || PLANTED(BUG_NO_TRUNC) ? c->vdl : base + LAL;
  /* LAB 25 END */
  for (size_t i = 0; i < c->nr; i++)
    if (PLANTED(BUG_NO_ADOPT))
      c->rm[i].adopt = 0;
    else if (c->rm[i].adopt) {
      Rec *rec = c->rm[i].rec;
      rec->epoch = v->epoch;    /* adopted: rule T, record.h */
      rec_seal(rec);
      c->nadopt++;
    }
  auralog__trunc_range__init(&c->wtr);
  c->wtr.epoch = v->epoch;
  c->wtr.from = c->vdl;
  c->wtr.to = c->to;
  /* Signed by this writer: segments install it only so (auth.h). */
  auth_trunc_sign(&v->signer, c->vol_id, v->epoch, c->vdl, c->to, v->trunc_sig);
  vol_trunc_proof(v, &c->wtr, v->trunc_sig);
  c->phase = R_ADOPT;
  if (c->clean)
    return finish(c);
  /* rm is sorted by LSN: each PG's adopted records, in order (adopt_to). */
  size_t npgs = c->npgs;
  size_t *first = calloc(npgs + 1, sizeof *first), *cnt = calloc(npgs + 1, sizeof *cnt);
  Rec **byp = calloc(c->nadopt + 1, sizeof *byp);
  for (size_t i = 0; i < c->nr; i++)
    if (c->rm[i].adopt)
      cnt[c->rm[i].pg]++;
  for (size_t p = 1; p < npgs; p++)
    first[p] = first[p - 1] + cnt[p - 1];
  size_t *fill = calloc(npgs + 1, sizeof *fill);
  for (size_t i = 0; i < c->nr; i++)
    if (c->rm[i].adopt)
      byp[first[c->rm[i].pg] + fill[c->rm[i].pg]++] = c->rm[i].rec;
  for (size_t k = 0; k < c->nk; k++)
    if (c->live[k])
      adopt_to(c, k / NCOPIES, v->pgs[rcv_pg_no(c, k / NCOPIES)].node[k % NCOPIES], k, byp + first[k / NCOPIES],
               cnt[k / NCOPIES]);
  /* Each next segment too (M1): a position in transition counts only
   * when both of its segments hold what recovery keeps. */
  for (size_t p = 0; p < npgs; p++)
    for (int pos = 0; pos < NCOPIES; pos++)
      if (v->pgs[rcv_pg_no(c, p)].node[NCOPIES + pos] >= 0)
        adopt_to(c, p, v->pgs[rcv_pg_no(c, p)].node[NCOPIES + pos], c->nk + p * NCOPIES + (size_t)pos,
                 byp + first[p], cnt[p]);
  free(first);
  free(cnt);
  free(fill);
  free(byp);
  rcv_ask(c, free_append);
}

void rcv_adopt_done(struct rcv *c)
{
  struct volume *v = c->v;
  struct round *r3 = &c->cur;
  /* acked[k]: segment k took every Append sent to it (current segments:
   * k < nk, only those still live; next ones: nk + pg * NCOPIES + pos,
   * with their highest SCL in nscl). */
  uint8_t *acked = calloc(2 * c->nk + 1, 1);
  uint64_t *nscl = calloc(c->nk + 1, sizeof *nscl);
  memcpy(acked, c->live, c->nk);
  for (size_t p = 0; p < c->npgs; p++)
    for (int pos = 0; pos < NCOPIES; pos++)
      acked[c->nk + p * NCOPIES + (size_t)pos] = v->pgs[rcv_pg_no(c, p)].node[NCOPIES + pos] >= 0;
  for (size_t i = 0; i < r3->n; i++) {
    const Env *rep = r3->rep[i];
    size_t k = r3->seg[i];
    if (rcv_stale(c, rep)) {
      free(acked);
      free(nscl);
      return rcv_fail(c);
    }
    size_t p = (k < c->nk ? k : k - c->nk) / NCOPIES;
    int s = (int)((k < c->nk ? k : k - c->nk) % NCOPIES) + (k < c->nk ? 0 : NCOPIES);
    if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_APPEND_ACK) {
      if (rep->append_ack->scl > v->pgs[rcv_pg_no(c, p)].scl[s])
        v->pgs[rcv_pg_no(c, p)].scl[s] = rep->append_ack->scl;
      if (k >= c->nk && rep->append_ack->scl > nscl[k - c->nk])
        nscl[k - c->nk] = rep->append_ack->scl;
    } else {
      acked[k] = 0;
    }
  }
  /* Each PG's last adopted record: a next segment holds them all when its
   * SCL reaches it (M2). */
  uint64_t *last = calloc(c->npgs + 1, sizeof *last);
  for (size_t i = 0; i < c->nr; i++)
    if (c->rm[i].adopt && c->rm[i].lsn > last[c->rm[i].pg])
      last[c->rm[i].pg] = c->rm[i].lsn;
  for (size_t p = 0; p < c->npgs; p++) {
    uint16_t held = 0;
    for (int s = 0; s < NCOPIES; s++) {
      if (acked[p * NCOPIES + (size_t)s])
        held |= (uint16_t)(1u << s);
      size_t kn = p * NCOPIES + (size_t)s;
      if (acked[c->nk + kn] && nscl[kn] >= last[p])
        held |= (uint16_t)(1u << (NCOPIES + s));
    }
    int n = member_positions(held, v->pgs[rcv_pg_no(c, p)].trans);   /* M1 */
    if (n < (PLANTED(BUG_WQ3) ? VW - 1 : VW)) {
      snprintf(c->why, sizeof c->why, "pg %zu: the truncation and the records to keep "
               "reached %d of %d segments; recovery needs a write quorum of %d", p, n,
               NCOPIES, VW);
      c->err = ERR_UNAVAILABLE;
      free(acked);
      free(nscl);
      free(last);
      return rcv_fail(c);
    }
  }
  free(acked);
  free(nscl);
  free(last);
  rcv_round_free(&c->cur, free_append);
  finish(c);
}

/* Serve from the proved VDL: the quorum tracker starts above the
 * truncation, each PG's next record links to the tail the chain proved. */
static void finish(struct rcv *c)
{
  struct volume *v = c->v;
  for (size_t p = 0; p < c->npgs; p++)
    v->pgs[rcv_pg_no(c, p)].tail = v->pgs[rcv_pg_no(c, p)].durable_tail = c->tails[p];
  q_init(&v->q, c->vdl, c->to + 1, LAL, PLANTED(BUG_WQ3) ? VW - 1 : VW);
  v->last_cpl = c->vdl;
  /* Membership (member.h M4): the writer serves with the membership its
   * open named, next segments included, used since the VDL it proved:
   * in each PG, since the PG's last record at or below it (a segment's
   * SCL is per PG: an idle PG's never reaches the volume's VDL). */
  for (size_t p = 0; p < c->npgs; p++) {
    q_set_trans(&v->q, rcv_pg_no(c, p), v->pgs[rcv_pg_no(c, p)].trans);
    v->pgs[rcv_pg_no(c, p)].adopted_at = c->tails[p];
  }
  /* The page-LSN table (vfs/pagelsn.h): nothing above the VDL survives the
   * truncation; a page the chains touched in (hint, vdl] has its last
   * record among the adopted ones (rm is in LSN order). Pages last written
   * at or below the hint stay unknown. */
  pl_truncate(&v->plsn, c->vdl);
  for (size_t i = 0; i < c->nr; i++)
    if (c->rm[i].adopt && !(((const Rec *)c->rm[i].rec)->flags & REC_BINLOG))
      pl_set(&v->plsn, ((const Rec *)c->rm[i].rec)->page_no, c->rm[i].lsn);
  v->st.recovery_ms = io_now(v->io) - c->t0;
  v->st.trunc_from = c->vdl;
  v->st.trunc_to = c->to;
  /* The older truncations its own may rest on (its end is LAL past the
   * highest of theirs): its first Appends to each segment carry them. */
  free(v->before);
  v->before = calloc(c->ntr + 1, sizeof *v->before);
  if (c->ntr)                /* (c->tr is NULL when none: memcpy's UB) */
    memcpy(v->before, c->tr, c->ntr * sizeof *c->tr);
  v->nbefore = c->ntr;
  if (c->nadopt)
    loginfo("recovery: %zu record%s above the segments' durable point %llu kept and "
            "written to a write quorum", c->nadopt, c->nadopt == 1 ? "" : "s",
            (unsigned long long)c->hint);
  c->phase = R_DONE;
  vcore_notify(v);
}
