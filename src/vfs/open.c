/*
 * open.c: recovery, when the engine opens a volume (paper §4.3), as a
 * state machine in the writer's core: no I/O of its own (it sends through
 * v->io on the volume's node endpoints), driven by the core's events
 * (vcore.c routes them here while v->rcv is set). The real driver runs it
 * on the volume's I/O thread (vol_open waits for it); the simulator runs
 * it with everything else, so a crash can land between any two messages.
 *
 * A new writer takes a new epoch from the coordinator (vol_open in
 * volume.c), then here, in three rounds to every segment of every PG:
 *
 *  1. State (SegQuery): fences older writers (a segment refuses anything
 *     from an older epoch from then on) and reports the segment's VDL hint
 *     and truncations. A read quorum of every PG must answer.
 *  2. Scan (SegQuery, scan): installs on each segment every truncation the
 *     read quorum knows of, so that what it then reports comes from a chain
 *     those truncations cleaned, and returns its tail at the hint and its
 *     records above the hint, whole, a page at a time. vfs/recovery.c finds
 *     the VDL those records prove, across PGs, and each PG's tail there.
 *  3. Adopt and truncate (Append): to every segment, the writer's
 *     truncation (vdl, base + LAL], installed first (with the older ones
 *     of round 2 before it: a segment checks that it reaches no more than
 *     LAL past those, node/segment.c), and every record on the PG's chain
 *     in (hint, vdl], re-stamped with the new epoch. A write quorum of
 *     every PG must take both.
 *
 * Membership (member.h): rounds 1 and 2 ask a PG's current segments only
 * (slots 0..NCOPIES-1), and their read quorum counts only those (M3: a
 * next segment is still being hydrated and is never counted). Round 3
 * also goes to each next segment, and its write quorum counts positions
 * (M1): a position in transition counts when its current segment took
 * the Appends and its next one took them and reports an SCL at or above
 * the PG's last adopted record (M2: by SCL alone). Request k of rounds 1
 * and 2 is current segment k = pg * NCOPIES + pos; round 3's next
 * segments are nk + pg * NCOPIES + pos.
 *
 * Rules this keeps (DESIGN.md §4, invariants 1-3):
 *  - Recovery serves only a VDL that is durable: every record up to it is
 *    at a write quorum of its PG when the volume opens, even an MTR that a
 *    single segment held (round 3). Before, such an MTR was counted from
 *    one copy; a later recovery without that copy lost the commits built
 *    on it.
 *  - Adopted records carry the new epoch, so no older truncation can cut
 *    them, even one this recovery never saw (rule T, record.h).
 *  - No segment's VDL hint rises above what a write quorum holds: the
 *    Appends of round 3 carry the old hint; the writer's later Appends
 *    carry its VDL.
 *  - Each PG's next record links to the tail the chain proves, never to a
 *    record a segment merely holds.
 *  - No LSN a crashed writer could have handed out is used again: the
 *    truncation reaches base + LAL, base being the VDL or the end of any
 *    earlier truncation.
 *  - The writer's page-LSN table (vfs/pagelsn.h) learns the last LSN of
 *    every page the adopted records touch, and keeps nothing above the VDL.
 *
 * Between rounds 2 and 3, the data-loss alarm (lost): a VDL proved below
 * one a segment heard means acknowledged commits are gone (recovery.h
 * recover_lost). Recovery stops with ERR_DATA_LOSS, which vol_open never
 * retries; round 3 is never sent: this writer truncates nothing.
 *
 * An interrupted recovery is harmless: round 1 changes only epochs; round
 * 2 installs truncations that are valid forever; round 3's truncation cuts
 * only records of older epochs above a VDL that covers every acknowledged
 * commit, and its adopted copies are the same records.
 *
 * The rounds' requests, who is waited for and who is given up (rule W:
 * a slow machine makes recovery slower, never fails it) are rcvround.c;
 * round 3 and the volume's opening at the end are rcvadopt.c; the state
 * they share is rcv_int.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "lib/log.h"
#include "member.h"
#include "vfs/rcv_int.h"

/* ---- request bodies ---------------------------------------------------- */

static void free_query(Env *e)
{
  free(e->seg_query);           /* its truncs are the recovery's, shared */
}

/* Did reply rep say a newer writer exists? Then why says so. */
int rcv_stale(struct rcv *c, const Env *rep)
{
  if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
      rep->error->code == ERR_STALE_EPOCH) {
    snprintf(c->why, sizeof c->why, "%s", rep->error->msg);
    c->err = ERR_STALE_EPOCH;
    return 1;
  }
  return 0;
}

/* PG index p's number. */
uint32_t rcv_pg_no(const struct rcv *c, size_t p)
{
  return p < c->ndata ? (uint32_t)p : BINLOG_PG;
}

/* PG number pg's index; UINT32_MAX for one this recovery does not know. */
static uint32_t ipg(const struct rcv *c, uint32_t pg)
{
  if (pg == BINLOG_PG)
    return c->npgs > c->ndata ? (uint32_t)c->ndata : UINT32_MAX;
  return pg < c->ndata ? pg : UINT32_MAX;
}

/* Did a read quorum of every PG answer? If not, why says which did not. */
static int read_quorums(struct rcv *c, const char *what)
{
  for (size_t p = 0; p < c->npgs; p++) {
    int answered = 0;
    for (int s = 0; s < NCOPIES; s++)
      answered += c->live[p * NCOPIES + (size_t)s];
    if (answered < VR) {
      snprintf(c->why, sizeof c->why, "pg %zu: %d of %d segments %s; recovery needs a "
               "read quorum of %d", p, answered, NCOPIES, what, VR);
      c->err = ERR_UNAVAILABLE;
      return 0;
    }
  }
  return 1;
}

void rcv_fail(struct rcv *c)
{
  c->phase = R_FAILED;
  vcore_notify(c->v);
}

/* ---- round 1: every segment's state; asking fences older writers -------- */

/* A SegQuery of the new epoch to segment k, added to the round. */
static Auralog__SegQuery *query(struct rcv *c, size_t k)
{
  struct volume *v = c->v;
  Env *e = rcv_round_add(&c->cur, v->pgs[rcv_pg_no(c, k / NCOPIES)].node[k % NCOPIES], k);
  Auralog__SegQuery *q = calloc(1, sizeof *q);
  auralog__seg_query__init(q);
  q->volume_id = c->vol_id;
  q->pg = rcv_pg_no(c, k / NCOPIES);
  q->epoch = v->epoch;
  q->ticket = vol_ticket(v);
  e->body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
  e->seg_query = q;
  return q;
}

static void state_ask(struct rcv *c)
{
  for (size_t k = 0; k < c->nk; k++)
    query(c, k);
  c->phase = R_STATE;
  rcv_ask(c, free_query);
}

static void scan_ask(struct rcv *c);

/* Would the segment that answered si take t in a scan (node/segment.c
 * seg_trunc_ok, B1-B3)? It holds t already (or t lies at or below its GC
 * point); or, from its GC point up, t starts at or above every VDL it
 * heard from a writer of an epoch below t's and every range of t's epoch
 * it holds, and ends at most LAL above the highest of that start, the
 * truncations of older epochs it holds, and base (those of older epochs
 * the scan installs before t). */
static int keeps_bound(const struct trunc *t, const Auralog__SegInfo *si, uint64_t base)
{
  if (t->to <= t->from || t->to <= si->gc_lsn)
    return 1;
  /* What it forgot once every member held it (rule TF, node/tforget.c)
   * it counts as held, in the bound too. */
  size_t nu = si->n_truncs + si->n_forgot;
  for (size_t i = 0; i < nu; i++) {
    const Auralog__TruncRange *u = i < si->n_truncs ? si->truncs[i] : si->forgot[i - si->n_truncs];
    if (u->epoch == t->epoch && u->from == t->from && u->to == t->to)
      return 1;
  }
  uint64_t start = t->from > si->gc_lsn ? t->from : si->gc_lsn, h = start > base ? start : base;
  for (size_t i = 0; i < nu; i++) {
    const Auralog__TruncRange *u = i < si->n_truncs ? si->truncs[i] : si->forgot[i - si->n_truncs];
    if (u->epoch == t->epoch && start < u->from)
      return 0;
    if (u->epoch < t->epoch && u->to > h)
      h = u->to;
  }
  for (size_t i = 0; i + 1 < si->n_heard; i += 2)
    if (si->heard[i] < t->epoch && si->heard[i + 1] > start)
      return 0;
  return t->to <= h || t->to - h <= LAL;
}

static int by_epoch(const void *a, const void *b)
{
  const struct trunc *x = a, *y = b;
  return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

/* Invariant 9, across segments: the truncations round 1 learned go on
 * (to the scan, to the walk that proves the VDL, to the end this writer's
 * own rests on) only if every segment that answered would take them,
 * oldest epoch first, each resting on the older ones kept (keeps_bound).
 * A writer's own always would: it starts at a VDL its recovery proved, at
 * or above every VDL a writer before it announced (recovery.h), and ends
 * LAL past the older truncations it rests on, which go before it. One that
 * would not kept only some segments' bound: signed with a fenced old
 * writer's key (its signatures hold) over a range above what those
 * segments heard, or reaching LAL past what only they know. Carried on, it
 * made every other segment refuse the scan (no writer could open again),
 * cut in the walk records others know to be durable (a false data-loss
 * alarm), or stretched this writer's own range beyond what they take, and
 * each failed recovery's range the next one's, LAL further each time (the
 * simulator's rogue member found all three). It is left where it is
 * (those segments cut only what they alone held) and counted. */
static void bounded_everywhere(struct rcv *c)
{
  const struct round *r1 = &c->cur;
  size_t keep = 0, n = c->ntr;
  struct trunc *all = malloc((n + 1) * sizeof *all);
  if (n) {                   /* (c->tr is NULL when none: qsort's and memcpy's UB) */
    qsort(c->tr, n, sizeof *c->tr, by_epoch);
    memcpy(all, c->tr, n * sizeof *all);
  }
  for (size_t j = 0; j < n; j++) {
    uint64_t base = 0;         /* the older ones kept, which the scan installs first */
    for (size_t x = 0; x < keep; x++)
      if (c->tr[x].epoch < all[j].epoch && c->tr[x].to > base)
        base = c->tr[x].to;
    /* B3 among what it learned: of two ranges of one epoch, the one that
     * starts lower is not its writer's (it truncates from what it proved). */
    int ok = 1;
    for (size_t x = 0; x < n && ok; x++)
      ok = !(all[x].epoch == all[j].epoch && all[x].from > all[j].from);
    for (size_t i = 0; i < r1->n && ok; i++) {
      const Env *rep = r1->rep[i];
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO)
        ok = keeps_bound(&all[j], rep->seg_info, base);
    }
    if (!ok) {
      logwarn("recovery: truncation (%llu, %llu] of epoch %llu is out of a segment's bound "
              "(below a VDL it heard from an older epoch, or past the LAL): not carried on",
              (unsigned long long)all[j].from, (unsigned long long)all[j].to,
              (unsigned long long)all[j].epoch);
      c->v->st.truncs_unbounded++;
      continue;
    }
    c->tr[keep++] = all[j];
    if (all[j].to > c->trunc_to)
      c->trunc_to = all[j].to;
  }
  c->ntr = keep;
  free(all);
}

static void state_done(struct rcv *c)
{
  struct round *r1 = &c->cur;
  for (size_t i = 0; i < r1->n; i++) {
    const Env *rep = r1->rep[i];
    size_t k = r1->seg[i];
    if (rcv_stale(c, rep))
      return rcv_fail(c);
    if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO) {
      const Auralog__SegInfo *si = rep->seg_info;
      c->live[k] = 1;
      c->heard[k] = si->vdl;
      if (si->backs_up && si->pg < c->v->npgs)
        c->v->pgs[si->pg].backed_up = 1;   /* vtell.c vtell_vdl */
      if (si->max_lsn > c->max_held)
        c->max_held = si->max_lsn;
      if (si->max_lsn || si->vdl || si->n_truncs)
        c->clean = 0;
      for (size_t j = 0; j < si->n_truncs; j++) {
        const Auralog__TruncRange *t = si->truncs[j];
        size_t x = 0;
        while (x < c->ntr && !(c->tr[x].epoch == t->epoch && c->tr[x].from == t->from &&
                               c->tr[x].to == t->to))
          x++;
        if (x == c->ntr) {
          c->tr = realloc(c->tr, (c->ntr + 1) * sizeof *c->tr);
          c->tr[c->ntr] = (struct trunc){t->epoch, t->from, t->to};
          trunc_proof_from_pb(&c->tr[c->ntr++].proof, t);   /* passed on as heard */
        }
      }
    } else {
      c->clean = 0;
    }
  }
  if (!read_quorums(c, "answer"))
    return rcv_fail(c);
  bounded_everywhere(c);
  /* The hint: the highest VDL a writer told any segment. A writer's VDL is
   * an LSN it handed out, so it cannot lie above every record held: a hint
   * that does is no point to scan from. Its records are gone (or the segment
   * is damaged or hostile): unless the scan proves it, the alarm (lost). */
  for (size_t i = 0; i < r1->n; i++) {
    size_t k = r1->seg[i];
    if (!c->live[k])
      continue;
    uint64_t h = r1->rep[i]->seg_info->vdl;
    if (h > c->max_held)
      logwarn("recovery: pg %zu: a segment's VDL hint %llu lies above every "
              "record held (%llu); not a point to scan from", k / NCOPIES,
              (unsigned long long)h, (unsigned long long)c->max_held);
    else if (h > c->hint && !PLANTED(BUG_SCAN_FROM_ZERO))
      c->hint = h;
  }
  rcv_round_free(&c->cur, free_query);
  /* Round 2 carries every truncation round 1 learned. */
  c->after = calloc(c->nk + 1, sizeof *c->after);
  c->want = calloc(c->nk + 1, 1);
  for (size_t k = 0; k < c->nk; k++) {
    c->after[k] = c->hint;
    c->want[k] = c->live[k];
  }
  c->tp = calloc(c->ntr + 1, sizeof *c->tp);
  c->tv = calloc(c->ntr + 1, sizeof *c->tv);
  for (size_t j = 0; j < c->ntr; j++) {
    auralog__trunc_range__init(&c->tv[j]);
    c->tv[j].epoch = c->tr[j].epoch;
    c->tv[j].from = c->tr[j].from;
    c->tv[j].to = c->tr[j].to;
    trunc_proof_to_pb(&c->tr[j].proof, &c->tv[j]);
    c->tp[j] = &c->tv[j];
  }
  c->phase = R_SCAN;
  c->page = 0;
  scan_ask(c);
}

/* ---- round 2: install the truncations, then the tails at the hint and the
 * records above it, a page at a time. */


static const char *node_name(const struct rcv *c, size_t k)
{
  const struct vnode *n = &c->v->nodes[c->v->pgs[rcv_pg_no(c, k / NCOPIES)].node[k % NCOPIES]];
  return n->id[0] ? n->id : n->addr;
}

/* The data-loss alarm (the invariant: recovery.h recover_lost), on the VDL
 * the scan proved: 1 if a segment heard a higher one; why names it, the
 * log every such segment, a line per PG. */
static int lost(struct rcv *c)
{
  size_t w = 0, n = recover_lost(c->vdl, c->heard, c->nk, &w), npg = 0;
  for (size_t p = 0; n && p < c->npgs; p++) {
    char segs[512];
    size_t len = 0;
    for (size_t k = p * NCOPIES; k < (p + 1) * NCOPIES && len < sizeof segs; k++)
      if (c->heard[k] > c->vdl)
        len += (size_t)snprintf(segs + len, sizeof segs - len, "%s%s heard %llu",
                                len ? ", " : "", node_name(c, k),
                                (unsigned long long)c->heard[k]);
    if (len > 0 && ++npg)
      logwarn("recovery: data loss: pg %zu: recovery proves VDL %llu (the segments that "
              "answered hold no record above %llu) but the segments on %s", p,
              (unsigned long long)c->vdl, (unsigned long long)c->max_held, segs);
  }
  if (n == 0)
    return 0;
  snprintf(c->why, sizeof c->why, "data loss: recovery proves VDL %llu but pg %zu segment "
           "on node %s heard VDL %llu from an earlier writer (%zu segment%s in %zu pg%s "
           "heard above %llu); acknowledged commits above %llu are missing: refusing to "
           "open; nothing truncated", (unsigned long long)c->vdl, w / NCOPIES,
           node_name(c, w), (unsigned long long)c->heard[w], n, n == 1 ? "" : "s", npg,
           npg == 1 ? "" : "s", (unsigned long long)c->vdl, (unsigned long long)c->vdl);
  c->err = ERR_DATA_LOSS;
  return 1;
}

/* The community binlog (ship.c P0, recovery.h recover_rollforward): the
 * transaction the engine's binlog file names last (v->rf_xid), if it lies
 * above the VDL proved, was prepared, whole, before the file had it: its
 * commit record is written now, at its XID, with this epoch, and adopted
 * with its records, so the VDL the volume serves from includes it. A
 * binlog entry whose MTR is not whole here is left to the engine, which
 * cuts it from the file (the commit never happened). */
static void rollforward(struct rcv *c)
{
  struct volume *v = c->v;
  uint64_t xid = v->rf_xid;
  if (xid <= c->vdl + 1 || c->nr == 0 || PLANTED(BUG_NO_ROLLFORWARD))
    return;
  uint32_t pg, *ml_pg = calloc(c->npgs + 2, sizeof *ml_pg);
  uint64_t prev, *ml_last = calloc(c->npgs + 2, sizeof *ml_last);
  size_t at, nml;
  if (!recover_rollforward(c->vdl, xid, c->rm, c->nr, c->tr, c->ntr, c->npgs, c->tails, &pg,
                           &prev, &at, ml_pg, ml_last, &nml)) {
    logwarn("recovery: the binlog's last transaction (xid %llu) has no whole prepared MTR "
            "above vdl %llu: not rolled forward", (unsigned long long)xid,
            (unsigned long long)c->vdl);
    free(ml_pg);
    free(ml_last);
    return;
  }
  Rec *r = calloc(1, sizeof *r);
  auralog__record__init(r);
  r->lsn = xid;
  r->prev_lsn = prev;
  r->page_no = ((const Rec *)c->rm[at].rec)->page_no;
  r->flags = REC_CPL;
  r->epoch = v->epoch;
  r->prev_cpl = c->vdl;
  c->rf_ml = calloc(nml + 1, sizeof *c->rf_ml);
  c->rf_mlp = calloc(nml + 1, sizeof *c->rf_mlp);
  for (size_t k = 0; k < nml; k++) {
    auralog__pg_last__init(&c->rf_ml[k]);
    c->rf_ml[k].pg = rcv_pg_no(c, ml_pg[k]);
    c->rf_ml[k].lsn = ml_last[k];
    c->rf_mlp[k] = &c->rf_ml[k];
  }
  r->mtr = c->rf_mlp;
  r->n_mtr = nml;
  rec_seal(r);
  c->rf = r;
  if (c->nr == c->caprm) {
    c->caprm = 2 * c->caprm;
    c->rm = realloc(c->rm, c->caprm * sizeof *c->rm);
  }
  struct rmeta *m = &c->rm[c->nr++];   /* the highest LSN: rm stays in LSN order */
  memset(m, 0, sizeof *m);
  m->lsn = xid;
  m->prev = prev;
  m->epoch = v->epoch;
  m->pg = pg;
  m->cpl = 1;
  m->prev_cpl = c->vdl;
  m->mtr_pg = ml_pg;
  m->mtr_last = ml_last;
  m->nmtr = nml;
  m->rec = r;
  m->adopt = 1;
  loginfo("recovery: the binlog holds xid %llu, prepared above vdl %llu: its commit record "
          "is written now (rolled forward)", (unsigned long long)xid,
          (unsigned long long)c->vdl);
  v->st.rolled_forward = xid;
  c->vdl = xid;
}

static void scan_ask(struct rcv *c)
{
  for (size_t k = 0; k < c->nk; k++) {
    if (!c->want[k])
      continue;
    Auralog__SegQuery *q = query(c, k);
    q->scan = 1;
    q->from = c->hint;
    q->after = c->after[k];
    q->max = RECOVERY_PAGE;
    if (c->page == 0) {
      q->truncs = c->tp;        /* the same for every segment */
      q->n_truncs = c->ntr;
    }
  }
  if (c->cur.n == 0) {
    if (!read_quorums(c, "answered the scan"))
      return rcv_fail(c);
    c->vdl = recover_vdl(c->hint, c->start, c->npgs, c->rm, c->nr, c->tr, c->ntr,
                         c->tails);
    if (PLANTED(BUG_VDL_FROM_HINT)) {
      c->vdl = c->hint;
      memcpy(c->tails, c->start, c->npgs * sizeof *c->tails);
      for (size_t i = 0; i < c->nr; i++)
        c->rm[i].adopt = 0;
    }
    rollforward(c);
    if (lost(c))
      return rcv_fail(c);
    return rcv_adopt_ask(c);
  }
  rcv_ask(c, free_query);
}

static void scan_done(struct rcv *c)
{
  struct round *r2 = &c->cur;
  for (size_t i = 0; i < r2->n; i++) {
    size_t k = r2->seg[i];
    Env *rep = r2->rep[i];
    c->want[k] = 0;
    if (rcv_stale(c, rep))
      return rcv_fail(c);
    if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO) {
      c->live[k] = 0;
      continue;
    }
    const Auralog__SegInfo *si = rep->seg_info;
    size_t p = k / NCOPIES;
    if (si->vdl > c->heard[k])
      c->heard[k] = si->vdl;
    if (c->page == 0 && si->tail > c->start[p] && si->tail <= c->hint)
      c->start[p] = si->tail;
    for (size_t j = 0; j < si->n_recs; j++) {
      Rec *rec = si->recs[j];
      if (rec->lsn <= c->after[k])
        continue;               /* a scan answers above `after` only */
      if (c->nr == c->caprm) {
        c->caprm = c->caprm ? 2 * c->caprm : 256;
        c->rm = realloc(c->rm, c->caprm * sizeof *c->rm);
      }
      struct rmeta *m = &c->rm[c->nr++];
      memset(m, 0, sizeof *m);
      m->lsn = rec->lsn;
      m->prev = rec->prev_lsn;
      m->epoch = rec->epoch;
      m->pg = (uint32_t)p;
      m->cpl = (rec->flags & REC_CPL) != 0;
      m->prev_cpl = rec->prev_cpl;
      m->nmtr = rec->n_mtr;
      uint32_t *mp = calloc(rec->n_mtr + 1, sizeof *mp);
      uint64_t *ml = calloc(rec->n_mtr + 1, sizeof *ml);
      for (size_t q = 0; q < rec->n_mtr; q++) {
        mp[q] = ipg(c, rec->mtr[q]->pg);
        ml[q] = rec->mtr[q]->lsn;
      }
      m->mtr_pg = mp;
      m->mtr_last = ml;
      m->rec = rec;
      c->after[k] = rec->lsn;
    }
    if (si->more && si->n_recs)
      c->want[k] = 1;           /* another page */
    /* Keep the answer: rm points into it. */
    c->scans = realloc(c->scans, (c->nscans + 1) * sizeof *c->scans);
    c->scans[c->nscans++] = rep;
    r2->rep[i] = NULL;
  }
  rcv_round_free(&c->cur, free_query);
  c->page++;
  scan_ask(c);
}

/* ---- events ---------------------------------------------------------------- */

/* The round in flight is answered (or given up): go on. */
void rcv_step(struct rcv *c)
{
  if (c->cur.left > 0 || c->phase >= R_DONE)
    return;
  switch (c->phase) {
  case R_STATE: state_done(c); break;
  case R_SCAN: scan_done(c); break;
  case R_ADOPT: rcv_adopt_done(c); break;
  }
}

struct rcv *rcv_start(struct volume *v, uint64_t vol_id, size_t npgs)
{
  struct rcv *c = calloc(1, sizeof *c);
  c->v = v;
  c->vol_id = vol_id;
  c->ndata = npgs;
  c->npgs = npgs + (v->has_binlog != 0);
  c->nk = c->npgs * NCOPIES;
  c->nn = v->nnodes;
  c->t0 = io_now(v->io);
  c->clean = 1;
  c->gone = calloc(c->nn + 1, 1);
  c->left = calloc(c->nn + 1, sizeof *c->left);
  c->last = calloc(c->nn + 1, sizeof *c->last);
  c->asked = calloc(c->nn + 1, sizeof *c->asked);
  c->patience = calloc(c->nn + 1, sizeof *c->patience);
  c->start = calloc(c->npgs + 1, sizeof *c->start);
  c->tails = calloc(c->npgs + 1, sizeof *c->tails);
  c->live = calloc(c->nk + 1, 1);
  c->heard = calloc(c->nk + 1, sizeof *c->heard);
  state_ask(c);
  return c;
}

/* The round in flight: 1 state, 2 scan, 3 adopt; 0 when over (for the
 * simulator's nemesis, which crashes a writer in a chosen round). */
int rcv_round(const struct rcv *c)
{
  return c->phase < R_DONE ? c->phase : 0;
}

/* Why it failed (ERR_NONE while running or once it serves):
 * ERR_UNAVAILABLE only for lack of a quorum (another attempt may
 * succeed), ERR_DATA_LOSS for the alarm (no attempt will: never retry). */
int rcv_error(const struct rcv *c)
{
  return c->phase != R_FAILED ? ERR_NONE : c->err ? c->err : ERR_INTERNAL;
}

/* The VDL the scan round proved (0 before it). */
uint64_t rcv_vdl(const struct rcv *c)
{
  return c->vdl;
}

/* 0: running; 1: the volume serves; -1: failed, with why. */
int rcv_result(const struct rcv *c, char *why, size_t whylen)
{
  if (c->phase == R_FAILED) {
    snprintf(why, whylen, "%s", c->why);
    return -1;
  }
  return c->phase == R_DONE;
}

void rcv_free(struct rcv *c)
{
  if (c == NULL)
    return;
  rcv_round_free(&c->cur, c->free_body);
  for (size_t i = 0; i < c->nr; i++) {
    free((void *)c->rm[i].mtr_pg);
    free((void *)c->rm[i].mtr_last);
  }
  free(c->rm);
  free(c->rf);
  free(c->rf_ml);
  free(c->rf_mlp);
  for (size_t i = 0; i < c->nscans; i++)
    wire_free(c->scans[i]);
  free(c->scans);
  free(c->tr);
  free(c->tp);
  free(c->tv);
  free(c->start);
  free(c->tails);
  free(c->after);
  free(c->want);
  free(c->live);
  free(c->heard);
  free(c->gone);
  free(c->left);
  free(c->last);
  free(c->asked);
  free(c->patience);
  free(c);
}
