/*
 * ship.c: the commit path of a volume (paper §4.1, §4.2.1-4.2.2).
 *
 * vol_ship() turns one mini-transaction (one SQLite write transaction)
 * into records: an LSN each, handed out while the LAL and the memory held
 * by records not yet durable (UNDURABLE_MAX) allow; a backlink to the
 * previous record of its PG; the last one the MTR's CPL, listing the MTR's
 * last LSN in every PG it touched and the previous CPL. The I/O thread
 * (volume.c) sends them. vol_wait() waits until the VDL reaches a commit;
 * a commit that does not get there by the deadline has an unknown
 * outcome, and the reason says so.
 *
 * Invariant: every record handed an LSN stays in its PG's list until the
 * VDL passes it (volume.c advance), so it can be sent again to a segment
 * that reconnects.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "vfs/volume_int.h"

/* Grow the volume so that page_no has a PG (called without the lock). */
static int grow(struct volume *v, uint32_t page_no, char *why, size_t whylen)
{
  uint32_t need = page_no / v->pg_pages + 1;
  pthread_mutex_lock(&v->mu);
  size_t have = v->npgs;
  pthread_mutex_unlock(&v->mu);
  if (need <= have)
    return 0;
  if (need > MAX_PGS) {
    snprintf(why, whylen, "volume %s is full (%d protection groups)", v->name, MAX_PGS);
    return -1;
  }
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
  g.name = v->name;
  g.npgs = need + need / 4;     /* a little ahead: growing is a round trip */
  if (g.npgs > MAX_PGS)
    g.npgs = MAX_PGS;
  req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
  req.grow_volume = &g;
  Env *rep = vol_coord_call(v->coord, &req, AURALOG__ENVELOPE__BODY_VOLUME, why, whylen);
  if (rep == NULL)
    return -1;
  pthread_mutex_lock(&v->mu);
  vol_adopt(v, rep->volume);
  pthread_mutex_unlock(&v->mu);
  wire_free(rep);
  uv_async_send(&v->wake);
  return 0;
}

static struct orec *make_rec(const struct mtr_page *p, uint32_t pg, uint64_t lsn,
                             uint64_t prev)
{
  struct orec *o = calloc(1, sizeof *o);
  auralog__record__init(&o->r);
  size_t bytes = diff_bytes(p->ranges, p->nranges);
  o->g = calloc(p->nranges + 1, sizeof *o->g);
  o->gp = calloc(p->nranges + 1, sizeof *o->gp);
  o->data = malloc(bytes + 1);
  size_t off = 0;
  for (size_t i = 0; i < p->nranges; i++) {
    const struct drange *d = &p->ranges[i];
    auralog__range__init(&o->g[i]);
    o->g[i].off = d->off;
    o->gp[i] = &o->g[i];
    if (d->copy) {           /* no bytes: the segment copies within the page */
      o->g[i].from = d->from;
      o->g[i].len = d->len;
      continue;
    }
    memcpy(o->data + off, p->after + d->off, d->len);
    o->g[i].data.data = o->data + off;
    o->g[i].data.len = d->len;
    off += d->len;
  }
  (void)pg;
  o->bytes = sizeof *o + bytes + p->nranges * (sizeof *o->g + sizeof *o->gp);
  o->r.lsn = lsn;
  o->r.prev_lsn = prev;
  o->r.page_no = p->page_no;
  o->r.flags = p->flags;
  o->r.ranges = o->gp;
  o->r.n_ranges = p->nranges;
  return o;
}

uint64_t vol_ship(struct volume *v, const struct mtr_page *pages, size_t n,
                  char *why, size_t whylen)
{
  uint32_t maxpage = 0;
  for (size_t i = 0; i < n; i++)
    if (pages[i].page_no > maxpage)
      maxpage = pages[i].page_no;
  if (grow(v, maxpage, why, whylen) != 0)
    return 0;
  pthread_mutex_lock(&v->mu);
  /* Back-pressure: LSNs (the LAL, §4.2.1) and memory. Every record not yet
   * durable stays here to be sent again; without a write quorum nothing
   * becomes durable, so the engine stops taking commits after
   * UNDURABLE_MAX bytes of them rather than growing until it dies. Wait
   * until the VDL catches up. */
  struct timespec dl;
  vol_deadline_in(&dl, COMMIT_DEADLINE_MS);
  while (!v->fenced && (!q_can_alloc(&v->q, n) || v->undurable > UNDURABLE_MAX))
    if (pthread_cond_timedwait(&v->cond, &v->mu, &dl) != 0)
      break;
  if (v->fenced || !q_can_alloc(&v->q, n) || v->undurable > UNDURABLE_MAX) {
    if (v->fenced)
      snprintf(why, whylen, "%s", v->fenced_why);
    else if (v->undurable > UNDURABLE_MAX)
      snprintf(why, whylen, "storage has no write quorum: %zu MiB of redo wait to be "
               "durable (limit %u MiB); nothing more is taken until they are",
               v->undurable >> 20, UNDURABLE_MAX >> 20);
    else
      snprintf(why, whylen, "storage is more than LAL=%d LSNs behind (vdl %llu): "
               "not enough segments acknowledge", LAL, (unsigned long long)v->q.vdl);
    pthread_mutex_unlock(&v->mu);
    return 0;
  }
  /* The CPL lists, per PG the MTR touched, its last record there: recovery
   * can then tell a whole MTR from a partial one across PGs. */
  Auralog__PgLast *ml = calloc(n, sizeof *ml);
  size_t nml = 0;
  struct orec *last = NULL;
  for (size_t i = 0; i < n; i++) {
    uint32_t pg = pages[i].page_no / v->pg_pages;
    struct pgout *g = &v->pgs[pg];
    uint64_t lsn = q_alloc(&v->q, pg, i == n - 1);
    struct orec *o = make_rec(&pages[i], pg, lsn, g->tail);
    o->r.epoch = v->epoch;      /* sealed below: rule T (node/segment.h) */
    g->tail = lsn;
    g->ring_lsn[g->ring_n % TAIL_PER_PG] = lsn;
    g->ring_cpl[g->ring_n % TAIL_PER_PG] = i == n - 1;
    g->ring_n++;
    if (g->n == g->cap) {
      g->cap = g->cap ? 2 * g->cap : 64;
      g->recs = realloc(g->recs, g->cap * sizeof *g->recs);
    }
    g->recs[g->n++] = o;
    v->undurable += o->bytes;
    if (pages[i].page_no >= v->npage_lsn) {
      size_t cap = v->npage_lsn ? v->npage_lsn : 1024;
      while (cap <= pages[i].page_no)
        cap *= 2;
      v->page_lsn = realloc(v->page_lsn, cap * sizeof *v->page_lsn);
      memset(v->page_lsn + v->npage_lsn, 0, (cap - v->npage_lsn) * sizeof *v->page_lsn);
      v->npage_lsn = cap;
    }
    v->page_lsn[pages[i].page_no] = lsn;
    size_t j = 0;
    while (j < nml && ml[j].pg != pg)
      j++;
    if (j == nml) {
      auralog__pg_last__init(&ml[nml++]);
      ml[j].pg = pg;
    }
    ml[j].lsn = lsn;
    last = o;
    if (i < n - 1)
      rec_seal(&o->r);
  }
  last->r.flags |= REC_CPL;
  last->r.prev_cpl = v->last_cpl;
  last->ml = ml;
  last->mlp = calloc(nml, sizeof *last->mlp);
  for (size_t j = 0; j < nml; j++)
    last->mlp[j] = &ml[j];
  last->r.mtr = last->mlp;
  last->r.n_mtr = nml;
  rec_seal(&last->r);
  uint64_t cpl = last->r.lsn;
  v->last_cpl = cpl;
  if (v->ncpls == v->capcpls) {
    v->capcpls = v->capcpls ? 2 * v->capcpls : 64;
    v->cpls = realloc(v->cpls, v->capcpls * sizeof *v->cpls);
  }
  v->cpls[v->ncpls++] = cpl;
  v->st.records += n;
  pthread_mutex_unlock(&v->mu);
  uv_async_send(&v->wake);
  return cpl;
}

/* Why commit lsn is not durable yet (called with v->mu held). */
static void stalled(struct volume *v, uint64_t lsn, int waited_ms, char *why, size_t whylen)
{
  if (v->fenced)
    snprintf(why, whylen, "%s", v->fenced_why);
  else
    snprintf(why, whylen, "commit %llu not durable after %d ms: storage has no write "
             "quorum (vdl %llu; %zu records wait for %d of %d acks); the commit may "
             "still become durable or be truncated at the next recovery",
             (unsigned long long)lsn, waited_ms, (unsigned long long)v->q.vdl,
             q_pending(&v->q), VW, NCOPIES);
}

int vol_wait(struct volume *v, uint64_t lsn, int timeout_ms, char *why, size_t whylen)
{
  struct timespec dl;
  vol_deadline_in(&dl, timeout_ms);
  pthread_mutex_lock(&v->mu);
  while (v->q.vdl < lsn && !v->fenced)
    if (pthread_cond_timedwait(&v->cond, &v->mu, &dl) != 0)
      break;
  int rc = v->q.vdl >= lsn ? 0 : -1;
  if (rc != 0)
    stalled(v, lsn, timeout_ms, why, whylen);
  pthread_mutex_unlock(&v->mu);
  return rc;
}

void vol_stalled(struct volume *v, uint64_t lsn, int waited_ms, char *why, size_t whylen)
{
  pthread_mutex_lock(&v->mu);
  stalled(v, lsn, waited_ms, why, whylen);
  pthread_mutex_unlock(&v->mu);
}
