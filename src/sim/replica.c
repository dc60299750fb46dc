/*
 * replica.c: a read replica in the simulator (paper §4.2.4), driving the
 * same apply rule the real replica does (vfs/rapply.h).
 *
 * The stream with its writer (a ReplicaStart, then every record shipped
 * and the VDL, in order; acks back) is rstream.c's. Here, the replica:
 *
 *   the apply  replica_take_start, replica_take_feed: ra_start and
 *              ra_feed, as rvol.c does (a refused feed: start over);
 *              replica_advance moves the read point to ra_target and
 *              applies records to the pages it caches (ra_advance),
 *              unless a reader holds the point (R3: a simulated long
 *              reader now and then, or a storage read in flight).
 *   the reads  now and then a page at the read point: from its cache, or
 *              through its own volume core in reader mode (v->reader: its
 *              writer's epoch and truncation, no writes) on the simulated
 *              network, with need = ra_need(pg) as rvol_read_page does;
 *              a page read may be kept in the cache.
 *   the host   start, crash (cache, stream and core lost), restart; on
 *              the engine host that is not the writer's (r1 first, w1
 *              after a failover: failover.c decides), once nothing else
 *              runs there.
 *   failover   it beats the coordinator with its read point every
 *              ENGINE_STAT_MS; promoted, it ends, and a writer starts on
 *              its host (failover.c: the beats, the promotion).
 *
 * Checks (check.c lists them with the rest):
 *   - every replica read, from the cache or from storage, equals the
 *     shadow's page at the read point (shadow_page);
 *   - R1: the read point is never above the highest VDL the stream told;
 *   - R2: it is always the stream's start or the CPL of an MTR whose
 *     records all arrived;
 *   - R6: while the newest writer's PGMRPL holds the read point (heard
 *     from, never let go in this stream), no segment's GC point passes
 *     the replica's need (check_gc);
 *   - at the end, it has caught up with its writer (replica_end);
 *   - a storage read may be refused (a node's GC passed a point no longer
 *     held, a newer epoch, nodes down): counted, never answered wrong.
 *
 * The replica draws from its own generator (seeded from the run's seed),
 * and exists only in runs that allow its fault kinds (world.h F_REPLICAS),
 * so the schedules of runs without it are what they were. One replica:
 * after a promotion the old writer's host comes back as it (as `cluster
 * up` does), so there is one for the next failover.
 */
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "sim/simint.h"
#include "vfs/rapply.h"

#define REP_TICK_MS   50        /* its timer: reads, acks, the long reader */
#define REP_READ_MS   400       /* a storage read not answered by then is refused */

static uint32_t page_of(int k)
{
  return (uint32_t)(k / SIM_PAGES) * PG_PAGES + (uint32_t)(k % SIM_PAGES);
}

static int slot_of(uint32_t page_no)
{
  uint32_t pg = page_no / PG_PAGES, i = page_no % PG_PAGES;
  return pg < SIM_PGS && i < SIM_PAGES ? (int)(pg * SIM_PAGES + i) : -1;
}

/* ---- the replica's side --------------------------------------------------------- */

/* The cached page to apply a record to (ra_page_fn). */
static uint8_t *cached_page(void *arg, uint32_t page_no, uint64_t lsn)
{
  struct simreplica *rep = arg;
  (void)lsn;
  int k = slot_of(page_no);
  return k >= 0 && rep->cached[k] ? rep->cache[k] : NULL;
}

static void drop_cache(struct simreplica *rep)
{
  memset(rep->cached, 0, sizeof rep->cached);
}

/* Move the read point as far as the rule allows, unless a reader holds
 * it (R3); then check R1 and R2, and tell the writer. */
void replica_advance(struct simreplica *rep)
{
  struct world *w = rep->w;
  struct rapply *ra = &rep->ra;
  uint64_t now = sim_now(w->clock);
  if (!ra_ready(ra) || now < rep->hold_until || rep->nrd > 0)
    return;
  uint64_t t = ra_target(ra);
  if (ra->serving && t <= ra->rp)
    return;
  size_t k = ra_advance(ra, t, cached_page, rep);
  w->res->replica_applied += k;
  world_hash(w, "radvance", ra->rp, k);
  if (ra->rp > rep->vdl_told)
    violation(w, "replica moved its read point to %llu, above the highest VDL its writer "
              "told it (%llu): R1, data above the VDL", (unsigned long long)ra->rp,
              (unsigned long long)rep->vdl_told);
  int whole = ra->rp == rep->start;
  for (size_t i = 0; i < rep->ncpls && !whole; i++)
    whole = rep->cpls[i] == ra->rp;
  if (!whole || rep->got_next <= ra->rp)
    violation(w, "replica moved its read point to %llu, which is not the CPL of an MTR "
              "whose records all arrived (start %llu, records arrived below %llu): R2, a "
              "partial MTR", (unsigned long long)ra->rp, (unsigned long long)rep->start,
              (unsigned long long)rep->got_next);
  size_t j = 0;
  for (size_t i = 0; i < rep->ncpls; i++)
    if (rep->cpls[i] > ra->rp)
      rep->cpls[j++] = rep->cpls[i];
  rep->ncpls = j;
  rstream_ack(rep, ra->rp);
}

void replica_take_start(struct simreplica *rep, const Auralog__ReplicaStart *s)
{
  drop_cache(rep);
  ra_start(&rep->ra, s);
  rep->start = s->start;
  rep->vdl_told = s->vdl;
  rep->got_next = s->from;
  rep->ncpls = 0;
  /* The reader core follows the writer (vol_reader_follow): its epoch
   * and truncation go with every read. */
  rep->v->epoch = s->epoch;
  if (rep->v->rtrunc)
    auralog__trunc_range__free_unpacked(rep->v->rtrunc, NULL);
  rep->v->rtrunc = NULL;
  if (s->trunc) {
    size_t len = auralog__trunc_range__get_packed_size(s->trunc);
    uint8_t *buf = malloc(len ? len : 1);
    auralog__trunc_range__pack(s->trunc, buf);
    rep->v->rtrunc = auralog__trunc_range__unpack(NULL, len, buf);
    free(buf);
  }
}

void replica_take_feed(struct simreplica *rep, const Auralog__ReplicaFeed *f)
{
  struct world *w = rep->w;
  char why[200];
  for (size_t i = 0; i < f->n_records; i++) {
    const Rec *r = f->records[i];
    if (r->lsn == rep->got_next)
      rep->got_next++;
    if (r->flags & REC_CPL) {
      if (rep->ncpls == rep->capcpls) {
        rep->capcpls = rep->capcpls ? 2 * rep->capcpls : 64;
        rep->cpls = realloc(rep->cpls, rep->capcpls * sizeof *rep->cpls);
      }
      rep->cpls[rep->ncpls++] = r->lsn;
    }
  }
  if (f->vdl > rep->vdl_told)
    rep->vdl_told = f->vdl;
  if (ra_feed(&rep->ra, f->records, f->n_records, f->vdl, why, sizeof why) != 0) {
    world_trace(w, "replica: feed refused: %s; starting over", why);
    w->res->replica_refused_feeds++;
    rstream_break(rep, why);
  }
}

/* ---- reads ---------------------------------------------------------------------- */

static void check_page(struct simreplica *rep, int k, const uint8_t *got, uint64_t rp,
                       const char *from, uint64_t need, uint64_t lsn)
{
  static const uint8_t zero[SIM_PAGE_SIZE];
  const uint8_t *want = shadow_page(rep->w, page_of(k), rp);
  int wrong = memcmp(got, want ? want : zero, SIM_PAGE_SIZE) != 0;
  trace_read(rep->w, "rep", page_of(k), rp, lsn, wrong);
  if (wrong)
    violation(rep->w, "replica read page %u at rp %llu (%s, need %llu, page lsn %llu) and "
              "got a version no transaction at or below that point left", page_of(k),
              (unsigned long long)rp, from, (unsigned long long)need,
              (unsigned long long)lsn);
  rep->w->res->replica_reads++;
  world_hash(rep->w, "rread", page_of(k), rp);
}

static void unlink_read(struct simreplica *rep, struct readreq *r)
{
  struct readreq **pp = &rep->v->reads;
  while (*pp && *pp != r)
    pp = &(*pp)->next;
  if (*pp)
    *pp = r->next;
}

/* A read refused: did a node's GC pass its need (the point was no
 * longer held), or did it while the writer's PGMRPL held it? */
static void refused(struct simreplica *rep, const struct readreq *r)
{
  struct world *w = rep->w;
  w->res->replica_refused++;
  int passed = 0;
  for (int i = 0; i < SIM_NODES; i++) {
    struct node *n = w->nodes[i].n;
    for (size_t k = 0; n && k < n->nsegs; k++)
      passed |= n->segs[k]->pg == r->pg && n->segs[k]->gc_lsn > r->need;
  }
  if (!passed)
    return;
  w->res->replica_gc_refused++;
  if (rep->stream && rep->lapsed == rep->stream)
    w->res->replica_gc_lapsed++;
  else if (rep->stream && rep->src && rep->src->v && rep->src->v->replica_floor &&
           rep->src->v->replica_floor <= r->rp)
    w->res->replica_gc_held++;
}

/* Storage reads that finished (or gave up): against the shadow. */
static void reads_check(struct simreplica *rep)
{
  struct world *w = rep->w;
  uint64_t now = sim_now(w->clock);
  for (size_t i = 0; i < rep->nrd;) {
    struct rread *x = &rep->rd[i];
    struct readreq *r = x->r;
    if (!r->done && now - x->since < REP_READ_MS) {
      i++;
      continue;
    }
    if (!r->done) {
      /* Refused everywhere so far: given up (the core frees it). */
      r->abandoned = 1;
      refused(rep, r);
      world_hash(w, "rgiveup", r->page_no, r->rp);
    } else if (r->rc != 0) {
      refused(rep, r);
      unlink_read(rep, r);
      free(r);
    } else {
      check_page(rep, x->k, x->buf, r->rp, "from storage", r->need, r->page_lsn);
      /* Kept in the cache now and then: the point has not moved (R3). */
      if (r->rp == rep->ra.rp && rng_uniform(&rep->rng, 2) == 0) {
        memcpy(rep->cache[x->k], x->buf, SIM_PAGE_SIZE);
        rep->cached[x->k] = 1;
      }
      unlink_read(rep, r);
      free(r);
    }
    free(x->buf);
    rep->rd[i] = rep->rd[--rep->nrd];
  }
  if (rep->nrd == 0)
    replica_advance(rep);
}

static void read_one(struct simreplica *rep)
{
  struct rapply *ra = &rep->ra;
  if (!ra->serving || rep->nrd == sizeof rep->rd / sizeof rep->rd[0])
    return;
  int k = (int)rng_uniform(&rep->rng, REP_NPAGES);
  if (rep->cached[k]) {
    check_page(rep, k, rep->cache[k], ra->rp, "from its cache", 0, 0);
    rep->w->res->replica_cache_reads++;
    return;
  }
  uint8_t *buf = malloc(SIM_PAGE_SIZE);
  uint32_t p = page_of(k);
  struct readreq *r = vcore_read_at(rep->v, p, buf, ra->rp, ra_need(ra, p / ra->pg_pages));
  if (r == NULL) {
    check_page(rep, k, buf, ra->rp, "beyond the volume", 0, 0);
    free(buf);
    return;
  }
  rep->rd[rep->nrd++] = (struct rread){r, buf, k, sim_now(rep->w->clock)};
  vcore_wake(rep->v);
}

/* R6 (vfs/feed.c): once the replica reads at a point of its live stream,
 * heard from, the newest writer's PGMRPL holds that point (its floor is at
 * or below it), and no segment frees a record the replica may still need:
 * every GC point is at or below ra_need. */
static void check_gc(struct simreplica *rep)
{
  struct world *w = rep->w;
  struct rapply *ra = &rep->ra;
  struct simwriter *wr = rep->src;
  if (!rep->stream || rep->taken != rep->stream || rep->lapsed == rep->stream ||
      !ra->serving || ra->rp == 0 ||
      wr == NULL || wr->v == NULL || wr->epoch != w->max_issued ||
      sim_now(w->clock) - rep->w_heard > SIM_REPLICA_GONE_MS / 2)
    return;
  if (wr->v->replica_floor == 0 || wr->v->replica_floor > ra->rp) {
    violation(w, "the writer's PGMRPL does not hold the replica's read point %llu (its "
              "floor: %llu): R6", (unsigned long long)ra->rp,
              (unsigned long long)wr->v->replica_floor);
    return;
  }
  for (int i = 0; i < SIM_NODES && !w->stop; i++) {
    struct node *n = w->nodes[i].n;
    for (size_t k = 0; n && k < n->nsegs; k++) {
      const struct segment *s = n->segs[k];
      if (s->pg < SIM_PGS && s->gc_lsn > ra_need(ra, s->pg))
        violation(w, "node %s pg %u: GC point %llu is above the replica's need %llu at its "
                  "read point %llu, which the writer's PGMRPL holds (floor %llu): R6",
                  w->nodes[i].id, s->pg, (unsigned long long)s->gc_lsn,
                  (unsigned long long)ra_need(ra, s->pg), (unsigned long long)ra->rp,
                  (unsigned long long)wr->v->replica_floor);
    }
  }
}

/* ---- the host ------------------------------------------------------------------- */

static void r_msg(void *arg, struct ep *e, const Env *env)
{
  struct simreplica *rep = arg;
  if (sfo_replica_msg(rep, e, env))
    return;
  if (rep->v) {
    vcore_on_msg(rep->v, e, env);
    reads_check(rep);
  }
}

static void r_up(void *arg, struct ep *e)
{
  struct simreplica *rep = arg;
  if (sfo_replica_up(rep, e))
    return;
  if (rep->v)
    vcore_on_up(rep->v, e);
}

static void r_down(void *arg, struct ep *e)
{
  struct simreplica *rep = arg;
  if (sfo_replica_down(rep, e))
    return;
  if (rep->v) {
    vcore_on_down(rep->v, e);
    vcore_wake(rep->v);
  }
}

struct rtimer {
  struct simreplica *rep;
  unsigned gen;
};

static void r_tick(void *arg)
{
  struct rtimer *t = arg;
  struct simreplica *rep = t->rep;
  struct world *w = rep->w;
  if (t->gen != rep->gen || !rep->up) {
    free(t);
    return;
  }
  uint64_t now = sim_now(w->clock);
  vcore_tick(rep->v);
  reads_check(rep);
  /* A long reader now and then: it holds the read point (and, through
   * the acks, the writer's PGMRPL) for up to a few seconds. */
  int settling = w->healed && now >= w->heal_at + SIM_HEAL_MS;
  if (rep->ra.serving && now >= rep->hold_until && rng_uniform(&rep->rng, 40) == 0 &&
      !settling) {
    rep->hold_until = now + rng_range(&rep->rng, 200, 3000);
    w->res->replica_holds++;
    world_hash(w, "rhold", rep->ra.rp, rep->hold_until);
  }
  if (now >= rep->next_read) {
    rep->next_read = now + 1 + rng_uniform(&rep->rng, 2 * SIM_READ_MS);
    read_one(rep);
  }
  replica_advance(rep);
  check_gc(rep);
  /* Heard from: its point, or this stream's start until it has one (an
   * older point, from before the stream, acked now would pull the
   * writer's floor below what GC passed while no stream held it). */
  if (rep->stream && rep->taken == rep->stream)
    rstream_ack(rep, rep->ra.serving ? rep->ra.rp : rep->start);
  sfo_replica_tick(rep);         /* its beats to the coordinator (failover.c) */
  sim_after(w->clock, REP_TICK_MS, r_tick, t);
}

/* The replica process starts (at the run's start, or after a crash) on
 * the engine host of w->wr[slot] (r1 first; failover.c says which):
 * an empty cache, no stream yet. */
static void rep_start(struct simreplica *rep, int slot)
{
  struct world *w = rep->w;
  struct simwriter *host = &w->wr[slot];
  struct simhost_cb cb = {.arg = rep, .on_msg = r_msg, .on_up = r_up, .on_down = r_down};
  if (host->h == NULL)
    host->h = simnet_add(w->net, host->addr, "", &cb);
  else
    simnet_restart(host->h, &cb);
  rep->h = host->h;
  rep->slot = slot;
  rep->started = 1;
  rep->coord = NULL;
  rep->beat_at = 0;
  rep->promoting = 0;
  rep->up = 1;
  rep->gen++;
  ra_init(&rep->ra);
  drop_cache(rep);
  rep->hold_until = 0;
  world_trace(w, "replica starts");
  world_hash(w, "rstart", rep->gen, 0);
  struct rtimer *t = malloc(sizeof *t);
  *t = (struct rtimer){rep, rep->gen};
  sim_after(w->clock, 1 + rng_uniform(&rep->rng, REP_TICK_MS), r_tick, t);
  rstream_retry(rep);
}

/* The reader core, as vol_open_reader sets it up, from the volume's
 * description (the coordinator's last answer to a writer). */
static void core_new(struct simreplica *rep)
{
  const Auralog__Volume *vd = rep->w->vdesc;
  struct volume *v = calloc(1, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", vd->name ? vd->name : "sim");
  v->id = vd->id;
  v->epoch = vd->epoch;
  v->page_size = vd->page_size;
  v->pg_pages = vd->pg_pages;
  v->reader = 1;
  v->opened = 1;
  v->io = simhost_io(rep->h);
  vol_adopt(v, vd);
  rep->v = v;
}

static void core_free(struct simreplica *rep)
{
  if (rep->v == NULL)
    return;
  for (size_t i = 0; i < rep->nrd; i++) {
    int listed = 0;
    for (struct readreq *r = rep->v->reads; r && !listed; r = r->next)
      listed = r == rep->rd[i].r;
    if (!listed)
      free(rep->rd[i].r);
    free(rep->rd[i].buf);
  }
  rep->nrd = 0;
  vcore_free(rep->v);
  free(rep->v);
  rep->v = NULL;
}

/* At the end (check_end): once the writer stopped committing and the
 * heal settled, the replica follows it again and has caught up: its read
 * point is the writer's VDL. */
void replica_end(struct world *w)
{
  struct simreplica *rep = w->rep;
  struct simwriter *wr = rstream_serving_writer(w);
  if (rep == NULL || wr == NULL || w->stop)
    return;
  if (!rep->up || !rep->stream || rep->taken != rep->stream || !rep->ra.serving ||
      rep->ra.rp != wr->v->q.vdl)
    violation(w, "liveness: the replica did not catch up with writer %d within %d ms "
              "after the heal settled (%s, read point %llu, the writer's VDL %llu)", wr->i,
              SIM_SETTLE_MS, !rep->up ? "down" : !rep->stream ? "no stream"
                             : rep->taken != rep->stream ? "no start yet" : "serving",
              (unsigned long long)rep->ra.rp, (unsigned long long)wr->v->q.vdl);
}

void replica_crash(struct world *w)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL || !rep->up)
    return;
  world_trace(w, "replica crashes");
  world_hash(w, "rcrash", rep->gen, 0);
  rstream_break(rep, "the replica crashed");
  simnet_crash(rep->h);
  core_free(rep);
  ra_free(&rep->ra);
  rep->up = 0;
  rep->gen++;
  rep->coord = NULL;
}

/* The replica starts again, on the engine host that is not the writer's,
 * if nothing runs there (an old writer there makes way first: failover.c)
 * and no fault holds it down. */
void replica_restart(struct world *w)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL || rep->up || w->vdesc == NULL)
    return;
  int slot = sfo_writer_slot(w) == 0 ? 2 : 0;
  if (w->wr[slot].state != W_DOWN || w->wr[slot].held)
    return;
  rep_start(rep, slot);
  core_new(rep);
}

void replica_silent(struct world *w, int on)
{
  if (w->rep)
    w->rep->silent = on;
}

void replica_cut(struct world *w, int on)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL)
    return;
  rep->cut = on;
  if (on)
    rstream_break(rep, "the stream was cut");
}

/* The first writer serves: the volume exists; the replica starts. */
void replica_volume_ready(struct world *w)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL || rep->started || w->vdesc == NULL)
    return;
  replica_restart(w);
}

void replica_new(struct world *w)
{
  if (!(w->o.faults & F_REPLICAS))
    return;
  struct simreplica *rep = calloc(1, sizeof *rep);
  rep->w = w;
  uint8_t seed[32];
  sim_key_seed(w, "replica", 0, seed);
  uint64_t s;
  memcpy(&s, seed, sizeof s);
  rng_seed(&rep->rng, s);
  w->rep = rep;
}

static int free_arg(void *arg, void *ctx)
{
  (void)ctx;
  free(arg);
  return 1;
}

void replica_free(struct world *w)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL)
    return;
  sim_cancel_fn(w->clock, r_tick, free_arg, NULL);
  rstream_free(w);
  core_free(rep);
  ra_free(&rep->ra);
  free(rep->cpls);
  free(rep);
  w->rep = NULL;
}
