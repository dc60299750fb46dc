/*
 * open.c: recovery, when the engine opens a volume (paper §4.3).
 *
 * A new writer takes a new epoch from the coordinator (vol_open in
 * volume.c), then here: asks every segment of every PG for its state,
 * which fences older writers (a segment refuses anything from an older
 * epoch); needs a read quorum of every PG; finds the VDL the records
 * prove (vfs/recovery.c: the CPL chain across PGs, from the highest
 * durable point any segment heard); and writes the truncation range
 * (vdl, base + LAL] to a write quorum of every PG, so that no record the
 * crashed writer left above the VDL can ever count, and no LSN it might
 * have handed out is used again. Only then does the volume serve.
 *
 * Both rounds go to every segment at once, pipelined per node (ask_all):
 * recovery takes about two round trips and two group commits per node,
 * whatever the number of PGs or the length of the log.
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

int recover(struct volume *v, const Auralog__Volume *vd, char *why, size_t whylen)
{
  unsigned long long t0 = now_ms();
  size_t nn = 0;
  struct nodeconn *nc = calloc(vd->n_pgs * NCOPIES + 1, sizeof *nc);
  int *slotnc = calloc(vd->n_pgs * NCOPIES + 1, sizeof *slotnc);
  for (size_t p = 0; p < vd->n_pgs; p++)
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

  /* Round 1: every segment's state. Asking fences older writers. */
  Auralog__SegInfo **info = calloc(vd->n_pgs * NCOPIES + 1, sizeof *info);
  Env **reps = calloc(vd->n_pgs * NCOPIES + 1, sizeof *reps);
  uint64_t vdl = 0, hint = 0, trunc_to = 0;
  int clean = 1, rc = -1;
  size_t nr = 0, ntr = 0;
  struct rmeta *rm = NULL;
  struct rtrunc *tr = NULL;
  uint64_t *start = calloc(vd->n_pgs + 1, sizeof *start);
  size_t nk = vd->n_pgs * NCOPIES;
  Env *envs = calloc(nk + 1, sizeof *envs), **reqs = calloc(nk + 1, sizeof *reqs);
  Auralog__SegQuery *qs = calloc(nk + 1, sizeof *qs);
  Auralog__Truncate *ts = calloc(nk + 1, sizeof *ts);
  Env **reps2 = calloc(nk + 1, sizeof *reps2);
  for (size_t k = 0; k < nk; k++) {
    auralog__envelope__init(&envs[k]);
    auralog__seg_query__init(&qs[k]);
    qs[k].volume_id = vd->id;
    qs[k].pg = (uint32_t)(k / NCOPIES);
    qs[k].epoch = v->epoch;
    envs[k].body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
    envs[k].seg_query = &qs[k];
    reqs[k] = &envs[k];
  }
  ask_all(nc, nn, reqs, slotnc, nk, reps, &v->net);
  for (size_t p = 0; p < vd->n_pgs; p++) {
    int answered = 0;
    for (int s = 0; s < NCOPIES; s++) {
      size_t k = p * NCOPIES + (size_t)s;
      Env *rep = reps[k];
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
          rep->error->code == ERR_STALE_EPOCH) {
        snprintf(why, whylen, "%s", rep->error->msg);
        goto out;
      }
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO) {
        info[k] = rep->seg_info;
        answered++;
        if (info[k]->vdl > hint)
          hint = info[k]->vdl;
      }
    }
    if (answered < VR) {
      snprintf(why, whylen, "pg %zu: %d of %d segments answer; recovery needs a read "
               "quorum of %d", p, answered, NCOPIES, VR);
      goto out;
    }
    if (answered < NCOPIES)
      clean = 0;
  }
  /* The provable VDL (vfs/recovery.c): from the highest hint, walk the
   * MTRs whose records the read quorums hold, across PGs. */
  size_t cap = 0;
  for (size_t k = 0; k < vd->n_pgs * NCOPIES; k++)
    if (info[k]) {
      cap += info[k]->n_recs;
      ntr += info[k]->n_truncs;
    }
  rm = calloc(cap + 1, sizeof *rm);
  tr = calloc(ntr + 1, sizeof *tr);
  ntr = 0;
  for (size_t k = 0; k < vd->n_pgs * NCOPIES; k++) {
    const Auralog__SegInfo *si = info[k];
    if (si == NULL)
      continue;
    size_t p = k / NCOPIES;
    if (si->tail > start[p] && si->tail <= hint)
      start[p] = si->tail;
    for (size_t i = 0; i < si->n_truncs; i++) {
      tr[ntr++] = (struct rtrunc){si->truncs[i]->from, si->truncs[i]->to};
      if (si->truncs[i]->to > trunc_to)
        trunc_to = si->truncs[i]->to;
    }
    for (size_t i = 0; i < si->n_recs; i++) {
      const Rec *r = si->recs[i];
      if (r->lsn <= hint) {
        if (r->lsn > start[p])
          start[p] = r->lsn;
        continue;
      }
      struct rmeta *m = &rm[nr++];
      m->lsn = r->lsn;
      m->prev = r->prev_lsn;
      m->pg = (uint32_t)p;
      m->cpl = (r->flags & REC_CPL) != 0;
      m->prev_cpl = r->prev_cpl;
      m->nmtr = r->n_mtr;
      uint32_t *mp = calloc(r->n_mtr + 1, sizeof *mp);
      uint64_t *ml = calloc(r->n_mtr + 1, sizeof *ml);
      for (size_t j = 0; j < r->n_mtr; j++) {
        mp[j] = r->mtr[j]->pg;
        ml[j] = r->mtr[j]->lsn;
      }
      m->mtr_pg = mp;
      m->mtr_last = ml;
    }
  }
  vdl = recover_vdl(hint, start, vd->n_pgs, rm, nr, tr, ntr);
  /* A brand-new volume (every segment answered, nothing written anywhere)
   * needs no truncation; any other open writes one, as in the paper. */
  for (size_t k = 0; k < vd->n_pgs * NCOPIES; k++)
    if (info[k] && (info[k]->max_lsn || info[k]->vdl || info[k]->n_truncs))
      clean = 0;

  /* Round 2: truncate (vdl, base + LAL] on a write quorum of every PG and
   * learn each PG's tail at or below vdl. Every record above the VDL is
   * gone for good, and no LSN the crashed writer could have handed out is
   * ever used again. base is the VDL, or the end of an earlier truncation
   * if higher: a writer that recovered, wrote and crashed before anything
   * was durable handed out LSNs up to there + LAL. */
  uint64_t base = vdl > trunc_to ? vdl : trunc_to;
  uint64_t to = clean ? base : base + LAL;
  for (size_t k = 0; k < nk; k++) {
    auralog__envelope__init(&envs[k]);
    auralog__truncate__init(&ts[k]);
    ts[k].volume_id = vd->id;
    ts[k].pg = (uint32_t)(k / NCOPIES);
    ts[k].epoch = v->epoch;
    ts[k].from = vdl;
    ts[k].to = to > vdl ? to : vdl;
    envs[k].body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
    envs[k].truncate = &ts[k];
  }
  ask_all(nc, nn, reqs, slotnc, nk, reps2, &v->net);
  for (size_t p = 0; p < vd->n_pgs; p++) {
    int acked = 0;
    struct pgout *g = &v->pgs[p];
    for (int s = 0; s < NCOPIES; s++) {
      Env *rep = reps2[p * NCOPIES + (size_t)s];
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO) {
        acked++;
        if (rep->seg_info->tail > g->tail)
          g->durable_tail = g->tail = rep->seg_info->tail;
        g->scl[s] = rep->seg_info->scl;
      } else if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
                 rep->error->code == ERR_STALE_EPOCH) {
        snprintf(why, whylen, "%s", rep->error->msg);
        goto out;
      }
    }
    if (acked < VW) {
      snprintf(why, whylen, "pg %zu: the truncation reached %d of %d segments; it "
               "needs a write quorum of %d", p, acked, NCOPIES, VW);
      goto out;
    }
  }
  q_init(&v->q, vdl, to + 1, LAL, VW);
  v->last_cpl = vdl;
  v->st.recovery_ms = now_ms() - t0;
  v->st.trunc_from = vdl;
  v->st.trunc_to = clean ? vdl : to;
  net_sync(v);                  /* no I/O thread yet: no lock needed */
  rc = 0;
out:
  for (size_t i = 0; i < nr; i++) {
    free((void *)rm[i].mtr_pg);
    free((void *)rm[i].mtr_last);
  }
  free(rm);
  free(tr);
  free(start);
  for (size_t k = 0; k < nk; k++) {
    wire_free(reps[k]);
    wire_free(reps2[k]);
  }
  free(envs);
  free(reqs);
  free(qs);
  free(ts);
  free(reps2);
  for (size_t i = 0; i < nn; i++)
    if (nc[i].ok)
      rpc_close(&nc[i].r);
  free(reps);
  free(info);
  free(nc);
  free(slotnc);
  return rc;
}
