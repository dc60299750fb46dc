/*
 * read.c: a page as of a read point, from one segment (paper §4.2.3).
 *
 * vcore_read() takes the read point (the VDL when the read starts) and
 * `need`, the PG's last record at or below it (pg_need), and queues
 * the request; vcore_flush asks one segment (read_dispatch): one
 * known complete to need first, then any reachable one, a node that let a
 * read time out or served a stale page lately last (paper §2.1: the
 * quorum, and reads, route around an outlier); a segment that refuses, is
 * slow or answers a page the end-to-end check refuses is left for another.
 * Within each of those, the fastest: each node's read round trip is a
 * moving average, and reads rotate among the segments within 2x the
 * fastest's plus READ_NEAR_MS (on one machine, all of them), skipping one
 * that answers late but in time (two nodes 300 ms slow once made a full
 * scan take minutes while four fast segments were complete: the crash
 * campaign's point 100). A latency not measured for READ_LAT_MS is
 * unknown again, so a node that healed is tried and gets its share back.
 *
 * Rules kept here (DESIGN.md §4, invariant 4):
 *  - need is exact: the PG's last record at or below the read point, from
 *    the writer's own list, not from what was freed (which lags: a segment
 *    one record behind once served an older page, and an update was lost);
 *  - a read carries the writer's epoch (a newer one fences it) and its
 *    truncation (a segment without it may hold records it cut);
 *  - the page LSN is checked end to end against the writer's page-LSN
 *    table (vfs/pagelsn.h has the rule): never above need; equal to the
 *    page's last LSN when the writer knows it and it is at or below the
 *    read point; never below what an earlier read of it showed. A reply
 *    that fails never reaches SQLite; it is counted (stale_pages), its
 *    node named in a log line and avoided for READ_STALE_MS, and another
 *    segment is asked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "lib/log.h"
#include "vfs/volume_int.h"

uint64_t pg_need(const struct pgout *g, uint64_t lsn)
{
  if (PLANTED(BUG_NEED_FREED))
    return g->durable_tail;
  size_t lo = g->head, hi = g->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->recs[mid]->r.lsn <= lsn)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > g->head ? g->recs[lo - 1]->r.lsn : g->durable_tail;
}

uint64_t pg_freed_at(const struct pgout *g, uint64_t lsn)
{
  if (g->freed == NULL || g->freed_n == 0)
    return 0;
  unsigned n = g->freed_n < FREED_RING ? g->freed_n : FREED_RING;
  unsigned first = g->freed_n - n;           /* the oldest still in the ring */
  if (g->freed[first % FREED_RING] > lsn)
    return 0;                                /* older than the ring: unknown */
  /* The ring is in LSN order, with no gap from its oldest: the last entry
   * at or below lsn is the PG's last record at or below it. */
  unsigned lo = 0, hi = n;
  while (lo < hi) {
    unsigned mid = lo + (hi - lo) / 2;
    if (g->freed[(first + mid) % FREED_RING] <= lsn)
      lo = mid + 1;
    else
      hi = mid;
  }
  return g->freed[(first + lo - 1) % FREED_RING];
}

/* What node n's reads are known to take, ms x 16; 0 (worth a try) if
 * never measured or not for READ_LAT_MS. */
static uint32_t read_lat(const struct vnode *n, unsigned long long now)
{
  if (n->read_lat_at == 0 || now - n->read_lat_at > READ_LAT_MS)
    return 0;
  return n->read_ms16;
}

/* Node n answered a read sent at sent_at: a quarter of the new sample,
 * or all of it when what was known is forgotten (a healed node is not
 * held to its old average). */
static void read_learn(struct vnode *n, unsigned long long sent_at, unsigned long long now)
{
  unsigned long long ms = now > sent_at ? now - sent_at : 0;
  uint32_t sample = (uint32_t)(ms < 60000 ? ms : 60000) * 16;
  int known = n->read_lat_at != 0 && now - n->read_lat_at <= READ_LAT_MS;
  n->read_ms16 = known ? (3 * n->read_ms16 + sample) / 4 : sample;
  n->read_lat_at = now ? now : 1;
}

/* May segment slot s of g take read r in pass `pass`? */
static int read_may(const struct volume *v, const struct pgout *g, const struct readreq *r,
                    int s, int pass, unsigned long long now)
{
  if (g->node[s] < 0)
    return 0;
  const struct vnode *n = &v->nodes[g->node[s]];
  if (r->tried & (1u << s) || !n->up)
    return 0;
  if (pass == 0 && g->scl[s] < r->need)
    return 0;
  if (pass < 2 && (now < n->read_slow_until || now < n->stale_until))
    return 0;
  return 1;
}

void read_dispatch(struct volume *v, struct readreq *r)
{
  struct pgout *g = &v->pgs[r->pg];
  int pick = -1;
  /* A segment known complete to the read point first (§4.2.3), then any
   * reachable one (it answers "not complete" if it is behind). Current
   * segments only (slots 0..NCOPIES-1, member.h): a next one is still
   * being hydrated, and may lack versions below its SCL's records. */
  /* Passes: complete and not known slow; not known slow; any. In each,
   * the first in the page's rotation that is near the fastest. */
  unsigned long long now = io_now(v->io);
  for (int pass = 0; pass < 3 && pick < 0; pass++) {
    uint32_t best = UINT32_MAX;
    for (int s = 0; s < NCOPIES; s++)
      if (read_may(v, g, r, s, pass, now)) {
        uint32_t l = read_lat(&v->nodes[g->node[s]], now);
        best = l < best ? l : best;
      }
    if (best == UINT32_MAX)
      continue;
    uint32_t near = 2 * best + READ_NEAR_MS * 16;
    for (int k = 0; k < NCOPIES; k++) {
      int s = (int)((r->page_no + (unsigned)k) % NCOPIES);
      if (read_may(v, g, r, s, pass, now) && read_lat(&v->nodes[g->node[s]], now) <= near) {
        pick = s;
        break;
      }
    }
  }
  if (pick < 0) {
    /* Everyone reachable refused (or no one is reachable yet): start
     * over shortly; a node coming up dispatches it at once. */
    int any_up = 0;
    for (int s = 0; s < NCOPIES; s++)
      any_up |= g->node[s] >= 0 && v->nodes[g->node[s]].up;
    r->tried = 0;
    r->retry_at = any_up ? now + 50 : 0;
    return;
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
  rp.volume_id = v->id;
  rp.pg = r->pg;
  rp.page_no = r->page_no;
  rp.read_point = r->rp;
  rp.need = r->need;
  rp.epoch = v->epoch;
  Auralog__TruncRange tr;
  /* A segment without it may hold cut records. A replica carries its
   * writer's. */
  rp.trunc = v->reader ? v->rtrunc : vol_own_trunc(v, &tr);
  env.req = ++v->next_req;
  env.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
  env.read_page = &rp;
  r->node = g->node[pick];
  r->tried |= 1u << pick;
  if (io_send(v->io, v->nodes[r->node].c, &env) == 0) {
    r->req = env.req;
    r->sent_at = now;
  }
}

void read_done(struct volume *v, struct readreq *r, const Env *env)
{
  r->req = 0;
  read_learn(&v->nodes[r->node], r->sent_at, io_now(v->io));
  if (env->body_case == AURALOG__ENVELOPE__BODY_PAGE &&
      env->page->data.len == v->page_size) {
    /* End to end (invariants 4, 8; vfs/pagelsn.h): the page must carry
     * the LSN the writer knows it to have at the read point. A segment
     * that answers another version is not believed: the page never
     * reaches SQLite, the node is counted, named and avoided for a while,
     * and another segment is asked. */
    uint64_t got = env->page->page_lsn, want = 0;
    int verdict = PLANTED(BUG_NO_PAGE_CHECK) ? PL_OK
                  : pl_check(&v->plsn, r->page_no, r->rp, r->need, got, &want);
    if (verdict != PL_OK) {
      struct vnode *n = &v->nodes[r->node];
      v->st.stale_pages++;
      snprintf(v->st.stale_node, sizeof v->st.stale_node, "%s", n->addr);
      n->stale_until = io_now(v->io) + READ_STALE_MS;
      snprintf(r->why, sizeof r->why, "node %s served page %u (pg %u) as of %llu, %s %llu "
               "at read point %llu: refused", n->addr, r->page_no, r->pg,
               (unsigned long long)got, pl_verdict(verdict), (unsigned long long)want,
               (unsigned long long)r->rp);
      logwarn_rl("volume %s: %s; trying another segment (%llu stale pages refused so far)",
                 v->name, r->why, (unsigned long long)v->st.stale_pages);
      read_dispatch(v, r);
      return;
    }
    pl_learn(&v->plsn, r->page_no, got);        /* at least this from now on */
    v->nodes[r->node].read_slow_until = 0;     /* it answered in time */
    if (!r->abandoned)
      memcpy(r->out, env->page->data.data, v->page_size);
    r->page_lsn = got;
    r->done = 1;
    r->rc = 0;
    v->st.pages_read++;
  } else {
    if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
        env->error->code == ERR_STALE_EPOCH && v->reader) {
      /* A replica's writer was replaced: this read fails now (no segment
       * serves that epoch any more); the replica follows the new writer
       * (vfs/replica.c), it is not fenced. */
      snprintf(r->why, sizeof r->why, "%s", env->error->msg);
      r->done = 1;
      r->rc = -1;
      return;
    }
    if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
        env->error->code == ERR_STALE_EPOCH) {
      vol_fence_locked(v, env->error->msg);
      snprintf(r->why, sizeof r->why, "%s", env->error->msg);
      return;
    }
    snprintf(r->why, sizeof r->why, "%s",
             env->body_case == AURALOG__ENVELOPE__BODY_ERROR ? env->error->msg
                                                              : "unexpected reply");
    /* A replica's segment may have left its PG (member.h M6) since it
     * took the description: it asks the coordinator again (volume.c
     * vol_read_at); the writer learns changes from its lease probe. */
    if (v->reader && env->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
        env->error->code == ERR_UNKNOWN_SEGMENT)
      v->probe_soon = 1;
    read_dispatch(v, r);        /* try another segment */
  }
}

/* Unlink finished or abandoned reads; free the abandoned ones. */
void read_reap(struct volume *v)
{
  struct readreq **pp = &v->reads;
  while (*pp) {
    struct readreq *r = *pp;
    if (r->done || (r->abandoned && r->req == 0)) {
      *pp = r->next;
      if (r->abandoned)
        free(r);
    } else {
      pp = &r->next;
    }
  }
}

/* Start a read of page_no as of the VDL into out: the request is queued
 * (vcore_flush sends it). NULL: the page was never written (a zero page;
 * out is zeroed). The caller waits for r->done. */
struct readreq *vcore_read(struct volume *v, uint32_t page_no, uint8_t *out)
{
  uint32_t pg = page_no / v->pg_pages;
  if (pg >= v->npgs) {
    memset(out, 0, v->page_size);
    return NULL;
  }
  return vcore_read_at(v, page_no, out, v->q.vdl, pg_need(&v->pgs[pg], v->q.vdl));
}

struct readreq *vcore_read_at(struct volume *v, uint32_t page_no, uint8_t *out, uint64_t rp,
                              uint64_t need)
{
  uint32_t pg = page_no / v->pg_pages;
  if (pg >= v->npgs) {
    memset(out, 0, v->page_size);
    return NULL;
  }
  struct readreq *r = calloc(1, sizeof *r);
  r->pg = pg;
  r->page_no = page_no;
  r->rp = rp;                   /* the read point (§4.2.3) */
  r->need = need;
  r->out = out;
  r->next = v->reads;
  v->reads = r;
  return r;
}
