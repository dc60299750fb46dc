/*
 * open.c: recovery, when the engine opens a volume (paper §4.3).
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
 *     truncation (vdl, base + LAL], installed first, and every record on
 *     the PG's chain in (hint, vdl], re-stamped with the new epoch. A
 *     write quorum of every PG must take both.
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
 *
 * An interrupted recovery is harmless: round 1 changes only epochs; round
 * 2 installs truncations that are valid forever; round 3's truncation cuts
 * only records of older epochs above a VDL that covers every acknowledged
 * commit, and its adopted copies are the same records.
 *
 * Every round goes to every segment at once, pipelined per node (ask_all):
 * recovery takes a few round trips and group commits per node, whatever
 * the number of PGs or the length of the log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "rpc.h"
#include "vfs/recovery.h"
#include "vfs/volume_int.h"

struct nodeconn {
  char addr[ADDR_MAX_LEN + 1];
  struct rpc r;
  int ok;
};

/* Recovery asks every segment of every PG, twice (state, then the
 * truncation). One request after another, that is 2 x 6 x PGs round trips,
 * each waiting for the node's fsync: recovery time would grow with the
 * volume. Instead every request of a round goes out at once, pipelined on
 * one connection per node, and the answers are collected after: a node
 * answers all of its segments' requests in one loop turn and one group
 * commit, so a round costs about one round trip and one fsync per node,
 * whatever the number of PGs (paper §4.3: recovery is parallel).
 *
 * ask_all sends req[k] to the node nc[slot[k]] for k < n and puts each
 * answer in rep[k] (NULL: no answer; the node is then given up for the
 * rest of recovery). Frames are counted in *cnt. */
static void ask_all(struct nodeconn *nc, size_t nn, Env *const *req, const int *slot,
                    size_t n, Env **rep, struct net_count *cnt)
{
  char why[200];
  size_t *left = calloc(nn + 1, sizeof *left);
  for (size_t k = 0; k < n; k++) {
    struct nodeconn *c = &nc[slot[k]];
    rep[k] = NULL;
    if (!c->ok)
      continue;
    req[k]->req = k + 1;       /* the answer names its request */
    size_t len;
    uint8_t *f = wire_frame(req[k], &len);
    cnt->bytes_out += len;
    cnt->msgs_out++;            /* sent, or at least tried */
    if (f == NULL || rpc_send_raw(&c->r, f, len) != 0) {
      rpc_close(&c->r);
      c->ok = 0;
    } else {
      left[slot[k]]++;
    }
    free(f);
  }
  for (size_t i = 0; i < nn; i++) {
    /* A node that stops answering for this long is given up. */
    while (nc[i].ok && left[i] > 0) {
      Env *e = rpc_recv(&nc[i].r, 2000, why, sizeof why);
      if (e == NULL || e->req == 0 || e->req > n || rep[e->req - 1] != NULL ||
          slot[e->req - 1] != (int)i) {
        wire_free(e);
        rpc_close(&nc[i].r);
        nc[i].ok = 0;
        break;
      }
      cnt->bytes_in += 4 + auralog__envelope__get_packed_size(e);
      cnt->msgs_in++;
      rep[e->req - 1] = e;
      left[i]--;
    }
  }
  free(left);
}

/* The requests of one round, built up as they are added. */
struct round {
  Env **req;                 /* owned: each with its body */
  int *slot;                 /* node of each */
  size_t *seg;               /* p * NCOPIES + s of each */
  Env **rep;
  size_t n, cap;
};

static Env *round_add(struct round *r, int slot, size_t seg)
{
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->req = realloc(r->req, r->cap * sizeof *r->req);
    r->slot = realloc(r->slot, r->cap * sizeof *r->slot);
    r->seg = realloc(r->seg, r->cap * sizeof *r->seg);
  }
  Env *e = calloc(1, sizeof *e);
  auralog__envelope__init(e);
  r->req[r->n] = e;
  r->slot[r->n] = slot;
  r->seg[r->n] = seg;
  r->n++;
  return e;
}

/* Free the requests (their bodies are freed by the caller's free_body). */
static void round_free(struct round *r, void (*free_body)(Env *))
{
  for (size_t k = 0; k < r->n; k++) {
    if (free_body)
      free_body(r->req[k]);
    free(r->req[k]);
    if (r->rep)
      wire_free(r->rep[k]);
  }
  free(r->req);
  free(r->slot);
  free(r->seg);
  free(r->rep);
  memset(r, 0, sizeof *r);
}

static void ask_round(struct nodeconn *nc, size_t nn, struct round *r, struct net_count *cnt)
{
  r->rep = calloc(r->n + 1, sizeof *r->rep);
  ask_all(nc, nn, r->req, r->slot, r->n, r->rep, cnt);
}

static void free_query(Env *e)
{
  free(e->seg_query);           /* its truncs are the round's, shared */
}

static void free_append(Env *e)
{
  if (e->append) {
    free(e->append->records);
    free(e->append);
  }
}

/* Did reply rep say a newer writer exists? Then why says so. */
static int stale(const Env *rep, char *why, size_t whylen)
{
  if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
      rep->error->code == ERR_STALE_EPOCH) {
    snprintf(why, whylen, "%s", rep->error->msg);
    return 1;
  }
  return 0;
}

/* Did a read quorum of every PG answer (live[p * NCOPIES + s])? If not,
 * why says which PG did not. */
static int read_quorums(const uint8_t *live, size_t npgs, const char *what, char *why,
                        size_t whylen)
{
  for (size_t p = 0; p < npgs; p++) {
    int answered = 0;
    for (int s = 0; s < NCOPIES; s++)
      answered += live[p * NCOPIES + (size_t)s];
    if (answered < VR) {
      snprintf(why, whylen, "pg %zu: %d of %d segments %s; recovery needs a read quorum "
               "of %d", p, answered, NCOPIES, what, VR);
      return 0;
    }
  }
  return 1;
}

int recover(struct volume *v, const Auralog__Volume *vd, char *why, size_t whylen)
{
  unsigned long long t0 = now_ms();
  size_t npgs = vd->n_pgs, nk = npgs * NCOPIES, nn = 0;
  struct nodeconn *nc = calloc(nk + 1, sizeof *nc);
  int *slotnc = calloc(nk + 1, sizeof *slotnc);
  for (size_t p = 0; p < npgs; p++)
    for (int s = 0; s < NCOPIES; s++) {
      const char *addr = vd->pgs[p]->segments[s]->addr;
      size_t i = 0;
      while (i < nn && strcmp(nc[i].addr, addr) != 0)
        i++;
      if (i == nn) {
        char err[200];
        snprintf(nc[nn].addr, sizeof nc[nn].addr, "%s", addr);
        nc[nn].ok = rpc_open(&nc[nn].r, addr, 1000, err, sizeof err) == 0;
        nn++;
      }
      slotnc[p * NCOPIES + (size_t)s] = (int)i;
    }
  int rc = -1, clean = 1;
  uint64_t hint = 0, max_held = 0, trunc_to = 0, vdl = 0;
  struct round r1 = {0}, r2 = {0}, r3 = {0};
  struct trunc *tr = NULL;
  size_t ntr = 0;
  struct rmeta *rm = NULL;
  size_t nr = 0, caprm = 0;
  Env **scans = NULL;          /* every scan answer, kept: rm points into them */
  size_t nscans = 0;
  uint64_t *start = calloc(npgs + 1, sizeof *start);
  uint64_t *tails = calloc(npgs + 1, sizeof *tails);
  uint8_t *live = calloc(nk + 1, 1);       /* answered every round so far */

  /* ---- round 1: every segment's state; asking fences older writers. */
  for (size_t k = 0; k < nk; k++) {
    Env *e = round_add(&r1, slotnc[k], k);
    Auralog__SegQuery *q = calloc(1, sizeof *q);
    auralog__seg_query__init(q);
    q->volume_id = vd->id;
    q->pg = (uint32_t)(k / NCOPIES);
    q->epoch = v->epoch;
    e->body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
    e->seg_query = q;
  }
  ask_round(nc, nn, &r1, &v->net);
  for (size_t k = 0; k < nk; k++) {
    const Env *rep = r1.rep[k];
    if (stale(rep, why, whylen))
      goto out;
    if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO) {
      const Auralog__SegInfo *si = rep->seg_info;
      live[k] = 1;
      if (si->max_lsn > max_held)
        max_held = si->max_lsn;
      if (si->max_lsn || si->vdl || si->n_truncs)
        clean = 0;
      for (size_t i = 0; i < si->n_truncs; i++) {
        const Auralog__TruncRange *t = si->truncs[i];
        size_t j = 0;
        while (j < ntr && !(tr[j].epoch == t->epoch && tr[j].from == t->from &&
                            tr[j].to == t->to))
          j++;
        if (j == ntr) {
          tr = realloc(tr, (ntr + 1) * sizeof *tr);
          tr[ntr++] = (struct trunc){t->epoch, t->from, t->to};
        }
        if (t->to > trunc_to)
          trunc_to = t->to;
      }
    } else {
      clean = 0;
    }
  }
  if (!read_quorums(live, npgs, "answer", why, whylen))
    goto out;
  /* The hint: the highest VDL a writer told any segment. A writer's VDL is
   * an LSN it handed out, so it cannot lie above every record held: a hint
   * that does is not believed (a damaged or hostile segment). */
  for (size_t k = 0; k < nk; k++)
    if (live[k]) {
      uint64_t h = r1.rep[k]->seg_info->vdl;
      if (h > max_held)
        logwarn("recovery: pg %zu: a segment's VDL hint %llu lies above every "
                "record held (%llu); ignored", k / NCOPIES, (unsigned long long)h,
                (unsigned long long)max_held);
      else if (h > hint)
        hint = h;
    }

  /* ---- round 2: install the truncations, then the tails at the hint and
   * the records above it, a page at a time. */
  uint64_t *after = calloc(nk + 1, sizeof *after);
  uint8_t *want = calloc(nk + 1, 1);
  for (size_t k = 0; k < nk; k++) {
    after[k] = hint;
    want[k] = live[k];
  }
  /* Every truncation round 1 learned, as the scans carry them. */
  Auralog__TruncRange **tp = calloc(ntr + 1, sizeof *tp);
  Auralog__TruncRange *tv = calloc(ntr + 1, sizeof *tv);
  for (size_t j = 0; j < ntr; j++) {
    auralog__trunc_range__init(&tv[j]);
    tv[j].epoch = tr[j].epoch;
    tv[j].from = tr[j].from;
    tv[j].to = tr[j].to;
    tp[j] = &tv[j];
  }
  for (int page = 0;; page++) {
    round_free(&r2, free_query);
    for (size_t k = 0; k < nk; k++) {
      if (!want[k])
        continue;
      Env *e = round_add(&r2, slotnc[k], k);
      Auralog__SegQuery *q = calloc(1, sizeof *q);
      auralog__seg_query__init(q);
      q->volume_id = vd->id;
      q->pg = (uint32_t)(k / NCOPIES);
      q->epoch = v->epoch;
      q->scan = 1;
      q->from = hint;
      q->after = after[k];
      q->max = RECOVERY_PAGE;
      if (page == 0) {
        q->truncs = tp;         /* the same for every segment, freed below */
        q->n_truncs = ntr;
      }
      e->body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
      e->seg_query = q;
    }
    if (r2.n == 0)
      break;
    ask_round(nc, nn, &r2, &v->net);
    for (size_t i = 0; i < r2.n; i++) {
      size_t k = r2.seg[i];
      Env *rep = r2.rep[i];
      want[k] = 0;
      if (stale(rep, why, whylen)) {
        free(after);
        free(want);
        free(tp);
        free(tv);
        goto out;
      }
      if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO) {
        live[k] = 0;
        continue;
      }
      const Auralog__SegInfo *si = rep->seg_info;
      size_t p = k / NCOPIES;
      if (page == 0 && si->tail > start[p] && si->tail <= hint)
        start[p] = si->tail;
      for (size_t j = 0; j < si->n_recs; j++) {
        Rec *rec = si->recs[j];
        if (rec->lsn <= after[k])
          continue;             /* a scan answers above `after` only */
        if (nr == caprm) {
          caprm = caprm ? 2 * caprm : 256;
          rm = realloc(rm, caprm * sizeof *rm);
        }
        struct rmeta *m = &rm[nr++];
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
          mp[q] = rec->mtr[q]->pg;
          ml[q] = rec->mtr[q]->lsn;
        }
        m->mtr_pg = mp;
        m->mtr_last = ml;
        m->rec = rec;
        after[k] = rec->lsn;
      }
      if (si->more && si->n_recs)
        want[k] = 1;            /* another page */
      /* Keep the answer: rm points into it. */
      scans = realloc(scans, (nscans + 1) * sizeof *scans);
      scans[nscans++] = rep;
      r2.rep[i] = NULL;
    }
  }
  free(after);
  free(want);
  free(tp);
  free(tv);
  if (!read_quorums(live, npgs, "answered the scan", why, whylen))
    goto out;
  vdl = recover_vdl(hint, start, npgs, rm, nr, tr, ntr, tails);

  /* ---- round 3: the truncation (vdl, base + LAL], and the records the
   * walk proved above the hint, adopted, to every segment. base is the
   * VDL, or the end of an earlier truncation if higher: a writer that
   * recovered, wrote and crashed before anything was durable handed out
   * LSNs up to there + LAL. A brand-new volume (every segment answered,
   * nothing written anywhere) needs none of it. */
  uint64_t base = vdl > trunc_to ? vdl : trunc_to;
  uint64_t to = clean ? vdl : base + LAL;
  size_t nadopt = 0;
  for (size_t i = 0; i < nr; i++)
    if (rm[i].adopt) {
      Rec *rec = rm[i].rec;
      rec->epoch = v->epoch;    /* adopted: rule T, record.h */
      rec_seal(rec);
      nadopt++;
    }
  Auralog__TruncRange wtr = AURALOG__TRUNC_RANGE__INIT;
  wtr.epoch = v->epoch;
  wtr.from = vdl;
  wtr.to = to;
  uint8_t *acked = calloc(nk + 1, 1);
  if (!clean) {
    /* rm is sorted by LSN: each PG's adopted records, in order, in Appends
     * of at most RECOVERY_PAGE records (all of them, and the truncation,
     * in every Append: a segment takes them in order on one connection). */
    size_t *first = calloc(npgs + 1, sizeof *first), *cnt = calloc(npgs + 1, sizeof *cnt);
    Rec **byp = calloc(nadopt + 1, sizeof *byp);
    for (size_t i = 0; i < nr; i++)
      if (rm[i].adopt)
        cnt[rm[i].pg]++;
    for (size_t p = 1; p < npgs; p++)
      first[p] = first[p - 1] + cnt[p - 1];
    size_t *fill = calloc(npgs + 1, sizeof *fill);
    for (size_t i = 0; i < nr; i++)
      if (rm[i].adopt)
        byp[first[rm[i].pg] + fill[rm[i].pg]++] = rm[i].rec;
    for (size_t k = 0; k < nk; k++) {
      if (!live[k])
        continue;
      size_t p = k / NCOPIES;
      size_t off = 0;
      do {
        /* At most RECOVERY_PAGE records and half a frame in one Append. */
        size_t c = 0, bytes = 0;
        while (off + c < cnt[p] && c < RECOVERY_PAGE) {
          size_t b = auralog__record__get_packed_size(byp[first[p] + off + c]) + 8;
          if (c > 0 && bytes + b > FRAME_MAX / 2)
            break;
          bytes += b;
          c++;
        }
        Env *e = round_add(&r3, slotnc[k], k);
        Auralog__Append *a = calloc(1, sizeof *a);
        auralog__append__init(a);
        a->volume_id = vd->id;
        a->pg = (uint32_t)p;
        a->epoch = v->epoch;
        a->vdl = hint;          /* not vdl: see the rules above */
        if (to > vdl)
          a->trunc = &wtr;
        a->records = calloc(c + 1, sizeof *a->records);
        memcpy(a->records, byp + first[p] + off, c * sizeof *a->records);
        a->n_records = c;
        e->body_case = AURALOG__ENVELOPE__BODY_APPEND;
        e->append = a;
        off += c;
      } while (off < cnt[p]);
    }
    free(first);
    free(cnt);
    free(fill);
    free(byp);
    ask_round(nc, nn, &r3, &v->net);
    memset(acked, 1, nk);
    for (size_t i = 0; i < r3.n; i++) {
      const Env *rep = r3.rep[i];
      size_t k = r3.seg[i];
      if (stale(rep, why, whylen))
        goto out3;
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_APPEND_ACK) {
        if (rep->append_ack->scl > v->pgs[k / NCOPIES].scl[k % NCOPIES])
          v->pgs[k / NCOPIES].scl[k % NCOPIES] = rep->append_ack->scl;
      } else {
        acked[k] = 0;
      }
    }
    for (size_t k = 0; k < nk; k++)
      if (!live[k])
        acked[k] = 0;
    for (size_t p = 0; p < npgs; p++) {
      int n = 0;
      for (int s = 0; s < NCOPIES; s++)
        n += acked[p * NCOPIES + (size_t)s];
      if (n < VW) {
        snprintf(why, whylen, "pg %zu: the truncation and the records to keep reached "
                 "%d of %d segments; recovery needs a write quorum of %d", p, n,
                 NCOPIES, VW);
        goto out3;
      }
    }
  }
  for (size_t p = 0; p < npgs; p++)
    v->pgs[p].tail = v->pgs[p].durable_tail = tails[p];
  q_init(&v->q, vdl, to + 1, LAL, VW);
  v->last_cpl = vdl;
  v->st.recovery_ms = now_ms() - t0;
  v->st.trunc_from = vdl;
  v->st.trunc_to = to;
  net_sync(v);                  /* no I/O thread yet: no lock needed */
  if (nadopt)
    loginfo("recovery: %zu record%s above the segments' durable point %llu kept and "
            "written to a write quorum", nadopt, nadopt == 1 ? "" : "s",
            (unsigned long long)hint);
  rc = 0;
out3:
  free(acked);
out:
  for (size_t i = 0; i < nr; i++) {
    free((void *)rm[i].mtr_pg);
    free((void *)rm[i].mtr_last);
  }
  free(rm);
  free(tr);
  free(start);
  free(tails);
  free(live);
  round_free(&r1, free_query);
  round_free(&r2, free_query);
  round_free(&r3, free_append);
  for (size_t i = 0; i < nscans; i++)
    wire_free(scans[i]);
  free(scans);
  for (size_t i = 0; i < nn; i++)
    if (nc[i].ok)
      rpc_close(&nc[i].r);
  free(nc);
  free(slotnc);
  return rc;
}
