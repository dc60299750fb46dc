/*
 * vwait.c: where SQLite's threads wait around the writer's core (the
 * driver's other half; volume.c has the I/O thread, opening and closing).
 *
 * A commit (vol_ship) grows the volume first if a page lies past its last
 * PG (a round trip to the coordinator, without the lock), waits while the
 * core refuses more records (the LAL, UNDURABLE_MAX) and hands the MTR to
 * the core (ship.c), which the I/O thread sends; vol_wait waits for the
 * VDL to reach a commit (embedded use; the engine server waits in its loop
 * instead, vol_on_durable). The community binlog's two phases (ship.c P0)
 * wait for the VCL, then commit. A page read (vol_read, a replica's
 * vol_read_at) queues a read in the core and waits for its answer.
 *
 * Locking (vdrv.h): every call takes v->drv->mu around the core and waits
 * on v->drv->cond, which the core's notify broadcasts; it wakes the I/O
 * thread with uv_async_send after queueing work. No libuv handle is
 * touched here.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "lib/log.h"
#include "param.h"
#include "record.h"
#include "vfs/vdrv.h"
#include "vfs/volume.h"
#include "vfs/volume_int.h"

/* ---- the commit path: waiting around the core (ship.c) -------------------- */

/* Grow the volume so that page_no has a PG (called without the lock): a
 * quarter more than needed (growing is a round trip), in requests of at
 * most GROW_MAX_PGS_PER_REQUEST PGs (the coordinator refuses larger ones),
 * so a write far past the end of a young volume grows it in steps. */
static int grow(struct volume *v, uint32_t page_no, char *why, size_t whylen)
{
  uint32_t need = page_no / v->pg_pages + 1;
  if (need > MAX_PGS) {
    snprintf(why, whylen, "volume %s is full (%d protection groups of %u pages)", v->name,
             MAX_PGS, v->pg_pages);
    return -1;
  }
  uint32_t want = need + need / 4;
  if (want > MAX_PGS)
    want = MAX_PGS;
  for (;;) {
    pthread_mutex_lock(&v->drv->mu);
    size_t have = v->npgs;
    pthread_mutex_unlock(&v->drv->mu);
    if (need <= have)
      return 0;
    Env req = AURALOG__ENVELOPE__INIT;
    Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
    g.name = v->name;
    g.npgs = want - have > GROW_MAX_PGS_PER_REQUEST ? (uint32_t)have + GROW_MAX_PGS_PER_REQUEST
                                                   : want;
    req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
    req.grow_volume = &g;
    Env *rep = vol_coord_call(v->coord, &req, AURALOG__ENVELOPE__BODY_VOLUME, why, whylen);
    if (rep == NULL)
      return -1;
    pthread_mutex_lock(&v->drv->mu);
    size_t before = v->npgs;
    vol_adopt(v, rep->volume);
    size_t after = v->npgs;
    pthread_mutex_unlock(&v->drv->mu);
    wire_free(rep);
    uv_async_send(&v->drv->wake);
    if (after <= before && after < need) {
      snprintf(why, whylen, "volume %s did not grow past %zu protection groups", v->name,
               after);
      return -1;
    }
  }
}


uint64_t vol_ship(struct volume *v, const struct mtr_page *pages, size_t n,
                  char *why, size_t whylen)
{
  return vol_ship_bl(v, pages, n, NULL, 0, why, whylen);
}

uint64_t vol_ship_bl(struct volume *v, const struct mtr_page *pages, size_t n, uint8_t *bl,
                     size_t bllen, char *why, size_t whylen)
{
  if (bl && !v->has_binlog) {
    free(bl);                 /* no binlog PG: events stay in the engine (binlog.c) */
    bl = NULL;
  }
  uint32_t maxpage = 0;
  for (size_t i = 0; i < n; i++)
    if (pages[i].page_no > maxpage)
      maxpage = pages[i].page_no;
  size_t nrec = n + (bl != NULL);
  if (grow(v, maxpage, why, whylen) != 0) {
    free(bl);
    return 0;
  }
  pthread_mutex_lock(&v->drv->mu);
  /* Wait while the core refuses (LAL, memory) until the VDL catches up. */
  struct timespec dl;
  vol_deadline_in(&dl, COMMIT_DEADLINE_MS);
  while (!v->fenced && vcore_ship_refusal(v, nrec, why, whylen) != 0)
    if (pthread_cond_timedwait(&v->drv->cond, &v->drv->mu, &dl) != 0)
      break;
  if (vcore_ship_refusal(v, nrec, why, whylen) != 0) {
    pthread_mutex_unlock(&v->drv->mu);
    free(bl);
    return 0;
  }
  uint64_t cpl = vcore_ship_bl(v, pages, n, bl, bllen);
  v->cpl_t[v->ncpls - 1].cut_us = now_us();   /* stage timings, before the I/O thread can send */
  vcore_feed_mtr(v, pages, n, cpl);    /* the read replicas' stream (vfs/feed.c) */
  pthread_mutex_unlock(&v->drv->mu);
  uv_async_send(&v->drv->wake);
  return cpl;
}


/* ---- the community binlog's two phases (ship.c P0) ------------------------ */

uint64_t vol_prepare(struct volume *v, const struct mtr_page *pages, size_t n, char *why,
                     size_t whylen)
{
  uint32_t maxpage = 0;
  for (size_t i = 0; i < n; i++)
    if (pages[i].page_no > maxpage)
      maxpage = pages[i].page_no;
  if (grow(v, maxpage, why, whylen) != 0)
    return 0;
  pthread_mutex_lock(&v->drv->mu);
  struct timespec dl;
  vol_deadline_in(&dl, COMMIT_DEADLINE_MS);
  /* Room for the commit record too: it must follow at once (P0). */
  while (!v->fenced && vcore_ship_refusal(v, n + 1, why, whylen) != 0)
    if (pthread_cond_timedwait(&v->drv->cond, &v->drv->mu, &dl) != 0)
      break;
  if (vcore_ship_refusal(v, n + 1, why, whylen) != 0) {
    pthread_mutex_unlock(&v->drv->mu);
    return 0;
  }
  uint64_t last = vcore_prepare(v, pages, n);
  vcore_feed_mtr(v, pages, n, last);   /* the replicas' stream: no CPL yet, nothing applied */
  pthread_mutex_unlock(&v->drv->mu);
  uv_async_send(&v->drv->wake);
  return last;
}

int vol_wait_vcl(struct volume *v, uint64_t lsn, int timeout_ms, char *why, size_t whylen)
{
  struct timespec dl;
  vol_deadline_in(&dl, timeout_ms);
  pthread_mutex_lock(&v->drv->mu);
  v->vcl_waiter = lsn;
  while (v->q.vcl < lsn && !v->fenced)
    if (pthread_cond_timedwait(&v->drv->cond, &v->drv->mu, &dl) != 0)
      break;
  v->vcl_waiter = 0;
  int rc = v->q.vcl >= lsn ? 0 : -1;
  if (rc != 0)
    vcore_stalled(v, lsn, timeout_ms, why, whylen);
  pthread_mutex_unlock(&v->drv->mu);
  return rc;
}

uint64_t vol_commit_prepared(struct volume *v)
{
  pthread_mutex_lock(&v->drv->mu);
  uint64_t cpl = vcore_commit_prepared(v);
  v->cpl_t[v->ncpls - 1].cut_us = now_us();
  vcore_feed_rec(v, cpl);
  pthread_mutex_unlock(&v->drv->mu);
  uv_async_send(&v->drv->wake);
  return cpl;
}

int vol_wait(struct volume *v, uint64_t lsn, int timeout_ms, char *why, size_t whylen)
{
  struct timespec dl;
  vol_deadline_in(&dl, timeout_ms);
  pthread_mutex_lock(&v->drv->mu);
  while (v->q.vdl < lsn && !v->fenced)
    if (pthread_cond_timedwait(&v->drv->cond, &v->drv->mu, &dl) != 0)
      break;
  int rc = v->q.vdl >= lsn ? 0 : -1;
  if (rc != 0)
    vcore_stalled(v, lsn, timeout_ms, why, whylen);
  pthread_mutex_unlock(&v->drv->mu);
  return rc;
}

void vol_stalled(struct volume *v, uint64_t lsn, int waited_ms, char *why, size_t whylen)
{
  pthread_mutex_lock(&v->drv->mu);
  vcore_stalled(v, lsn, waited_ms, why, whylen);
  pthread_mutex_unlock(&v->drv->mu);
}

/* ---- page reads: waiting around the core (read.c) -------------------------- */

/* A read at the VDL (at: NULL), or at read point at[0] with need at[1]. */
int vol_read_common(struct volume *v, uint32_t page_no, const uint64_t *at, uint8_t *out,
                    uint64_t *page_lsn, char *why, size_t whylen)
{
  pthread_mutex_lock(&v->drv->mu);
  if (v->fenced) {
    snprintf(why, whylen, "%s", v->fenced_why);
    pthread_mutex_unlock(&v->drv->mu);
    return -1;
  }
  struct readreq *r;
  if (at == NULL) {
    r = vcore_read(v, page_no, out);
  } else if (page_no / v->pg_pages >= v->npgs) {
    memset(out, 0, v->page_size);   /* a PG not made yet: never written */
    r = NULL;
  } else {
    r = vcore_read_at(v, page_no, out, at[0], at[1]);
  }
  if (r == NULL) {              /* never written: a zero page */
    pthread_mutex_unlock(&v->drv->mu);
    *page_lsn = 0;
    return 0;
  }
  pthread_mutex_unlock(&v->drv->mu);
  uv_async_send(&v->drv->wake);

  struct timespec dl;
  vol_deadline_in(&dl, READ_DEADLINE_MS);
  pthread_mutex_lock(&v->drv->mu);
  while (!r->done)
    if (pthread_cond_timedwait(&v->drv->cond, &v->drv->mu, &dl) != 0)
      break;
  int rc = r->done ? r->rc : -1;
  if (r->done) {
    *page_lsn = r->page_lsn;
    /* done reads are unlinked by the I/O thread; make sure, then free */
    struct readreq **pp = &v->reads;
    while (*pp && *pp != r)
      pp = &(*pp)->next;
    if (*pp)
      *pp = r->next;
    if (rc != 0)
      snprintf(why, whylen, "cannot read page %u of %s as of %llu: %s", page_no, v->name,
               (unsigned long long)r->rp, r->why);
    free(r);
  } else {
    snprintf(why, whylen, "cannot read page %u of %s as of %llu in %d ms: %s", page_no,
             v->name, (unsigned long long)r->rp, READ_DEADLINE_MS,
             r->why[0] ? r->why : "no segment answered");
    r->abandoned = 1;           /* the I/O thread frees it */
  }
  pthread_mutex_unlock(&v->drv->mu);
  return rc;
}

int vol_read(struct volume *v, uint32_t page_no, uint8_t *out, uint64_t *page_lsn,
             char *why, size_t whylen)
{
  return vol_read_common(v, page_no, NULL, out, page_lsn, why, whylen);
}
