/*
 * replica.c: a read replica in the simulator (paper §4.2.4), driving the
 * same apply rule the real replica does (vfs/rapply.h).
 *
 * The replica host has two halves, as vfs/rvol.c and vfs/feed.c do:
 *
 *   the stream  The serving writer answers a subscription with a
 *               ReplicaStart built by its core (vcore_feed_start), then
 *               sends every record of every MTR it ships (vcore_feed_mtr,
 *               through v->on_rec) and its VDL as it advances. Messages
 *               go as on a TCP stream: in order, each after a few ms,
 *               none lost while the stream lasts. A writer crash, a
 *               replica crash or the stream-cut fault breaks it; the
 *               replica subscribes again (after the cut heals) and
 *               starts over: a new start, its cache dropped. A feed the
 *               rule refuses (ra_feed -1) does the same.
 *   the reader  Its own volume core in reader mode (v->reader: its
 *               writer's epoch and truncation, no writes) on the
 *               simulated network, for pages it does not cache: a read at
 *               the read point with need = ra_need(pg), as rvol_read_page
 *               does. Pages read may be kept in its cache, where
 *               ra_advance applies the stream's records to them.
 *
 * The replica acknowledges its read point to the writer (over the stream,
 * after a delay); the writer folds it into its PGMRPL (replica_floor, as
 * feed.c's publish does) while the replica was heard within
 * SIM_REPLICA_GONE_MS; before the first ack, the stream's start holds it.
 * A simulated long reader holds the read point for a while now and then
 * (R3: the point does not move while it or a storage read holds it).
 *
 * Checks (check.c lists them with the rest):
 *   - every replica read, from the cache or from storage, equals the
 *     shadow's page at the read point (shadow_page);
 *   - R1: the read point is never above the highest VDL the stream told;
 *   - R2: it is always the stream's start or the CPL of an MTR whose
 *     records all arrived;
 *   - R6: while the newest writer's PGMRPL holds the read point, no
 *     segment's GC point passes the replica's need (check_gc);
 *   - a storage read may be refused (a node's GC passed a point no longer
 *     held, a newer epoch, nodes down): counted, never answered wrong.
 *
 * The replica draws from its own generator (seeded from the run's seed),
 * and exists only in runs that allow its fault kinds (world.h F_REPLICAS),
 * so the schedules of runs without it are what they were.
 */
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "sim/simint.h"
#include "vfs/rapply.h"

#define REP_ADDR      "r1:1"
#define REP_TICK_MS   50        /* its timer: reads, acks, the long reader */
#define REP_DELAY_MS  8         /* a stream message takes 1 .. this */
#define REP_RETRY_MS  200       /* it subscribes again after a broken stream */
#define REP_READ_MS   400       /* a storage read not answered by then is refused */
#define REP_NPAGES    (SIM_PGS * SIM_PAGES)

enum { RM_START, RM_FEED, RM_ACK };

/* A message on the stream (either way). */
struct rmsg {
  struct simreplica *rep;
  uint64_t stream;
  int kind;
  uint8_t *buf;               /* RM_START, RM_FEED: a packed ReplicaStart, ReplicaFeed */
  size_t len;
  uint64_t rp;                /* RM_ACK: the read point */
};

struct simreplica {
  struct world *w;
  struct rng rng;
  struct simhost *h;
  int up;
  unsigned gen;               /* +1 per crash: stale timers check it */
  /* The stream; the writer's side. */
  uint64_t stream, nstreams;  /* the live one (0: none) */
  struct simwriter *src;      /* its writer */
  uint64_t out_at, back_at;   /* the last message's arrival, each way (ordered) */
  uint64_t told;              /* the VDL last sent */
  uint64_t w_start, w_acked, w_heard;  /* the writer's view: start, last ack, when */
  int cut;                    /* the stream-cut fault holds it down */
  int silent;                 /* the replica-silent fault: its acks are lost */
  uint64_t lapsed;            /* a stream whose floor the writer let go a while */
  int retry;                  /* a subscription is scheduled */
  /* The replica's side. */
  struct rapply ra;
  struct volume *v;           /* its reader core (NULL while down) */
  uint64_t taken;             /* the stream whose start it took */
  uint64_t start, vdl_told, got_next;   /* this stream's, as arrived (R1, R2) */
  uint64_t *cpls;             /* CPLs arrived above the read point */
  size_t ncpls, capcpls;
  int cached[REP_NPAGES];
  uint8_t cache[REP_NPAGES][SIM_PAGE_SIZE];
  uint64_t hold_until;        /* the long reader holds the read point until then */
  uint64_t next_read;
  struct rread {
    struct readreq *r;
    uint8_t *buf;
    int k;
    uint64_t since;
  } rd[2];
  size_t nrd;
};

static uint32_t page_of(int k)
{
  return (uint32_t)(k / SIM_PAGES) * PG_PAGES + (uint32_t)(k % SIM_PAGES);
}

static int slot_of(uint32_t page_no)
{
  uint32_t pg = page_no / PG_PAGES, i = page_no % PG_PAGES;
  return pg < SIM_PGS && i < SIM_PAGES ? (int)(pg * SIM_PAGES + i) : -1;
}

/* ---- the stream --------------------------------------------------------------- */

static void deliver(void *arg);

static void send_msg(struct simreplica *rep, int kind, uint8_t *buf, size_t len, uint64_t rp)
{
  if (kind == RM_ACK && rep->silent)
    return;                     /* lost on the way */
  struct rmsg *m = malloc(sizeof *m);
  *m = (struct rmsg){rep, rep->stream, kind, buf, len, rp};
  uint64_t *last = kind == RM_ACK ? &rep->back_at : &rep->out_at;
  uint64_t at = sim_now(rep->w->clock) + 1 + rng_uniform(&rep->rng, REP_DELAY_MS);
  if (at < *last)
    at = *last;                 /* a stream: in order */
  *last = at;
  sim_at(rep->w->clock, at, deliver, m);
}

static void send_feed(struct simreplica *rep, const Rec *r, uint64_t vdl)
{
  Auralog__ReplicaFeed f = AURALOG__REPLICA_FEED__INIT;
  Rec *recs[1] = {(Rec *)r};
  f.records = recs;
  f.n_records = r ? 1 : 0;
  f.vdl = vdl;
  size_t len = auralog__replica_feed__get_packed_size(&f);
  uint8_t *buf = malloc(len ? len : 1);
  auralog__replica_feed__pack(&f, buf);
  send_msg(rep, RM_FEED, buf, len, 0);
}

/* vcore_feed_mtr's on_rec: the serving writer shipped record r. */
static void on_rec(void *arg, const Rec *r)
{
  struct simreplica *rep = arg;
  if (rep->stream)
    send_feed(rep, r, rep->told);
}

static void retry_later(struct simreplica *rep);

/* The stream ends: the writer forgets the replica (and its floor). */
static void stream_break(struct simreplica *rep, const char *why)
{
  if (rep->stream == 0)
    return;
  struct world *w = rep->w;
  world_trace(w, "replica: stream %llu breaks: %s", (unsigned long long)rep->stream, why);
  world_hash(w, "rbreak", rep->stream, 0);
  if (rep->src && rep->src->v) {
    rep->src->v->on_rec = NULL;
    rep->src->v->replica_floor = 0;
  }
  rep->stream = 0;
  rep->src = NULL;
  retry_later(rep);
}

static struct simwriter *serving_writer(struct world *w)
{
  struct simwriter *best = NULL;
  for (int i = 0; i < SIM_WRITERS; i++) {
    struct simwriter *wr = &w->wr[i];
    if (wr->state == W_SERVING && wr->v && !wr->v->fenced &&
        (best == NULL || wr->epoch > best->epoch))
      best = wr;
  }
  return best;
}

/* Subscribe to the serving writer: it answers a ReplicaStart. */
static void subscribe(void *arg)
{
  struct simreplica *rep = arg;
  struct world *w = rep->w;
  rep->retry = 0;
  if (!rep->up || rep->stream || w->stop)
    return;
  struct simwriter *wr = serving_writer(w);
  if (wr == NULL || rep->cut) {
    retry_later(rep);
    return;
  }
  Auralog__ReplicaStart s;
  Auralog__PgLast *tails[MAX_PGS];
  Auralog__TruncRange tr;
  vcore_feed_start(wr->v, &s, tails, &tr);
  rep->stream = ++rep->nstreams;
  rep->src = wr;
  rep->told = s.vdl;
  rep->w_start = s.start;
  rep->w_acked = 0;
  rep->w_heard = sim_now(w->clock);
  wr->v->on_rec = on_rec;
  wr->v->on_rec_arg = rep;
  wr->v->replica_floor = s.start;
  size_t len = auralog__replica_start__get_packed_size(&s);
  uint8_t *buf = malloc(len ? len : 1);
  auralog__replica_start__pack(&s, buf);
  for (size_t i = 0; i < s.n_tails; i++)
    free(tails[i]);
  send_msg(rep, RM_START, buf, len, 0);
  world_trace(w, "replica: stream %llu from writer %d (epoch %llu): start %llu, from %llu, "
              "vdl %llu", (unsigned long long)rep->stream, wr->i,
              (unsigned long long)wr->epoch, (unsigned long long)s.start,
              (unsigned long long)s.from, (unsigned long long)s.vdl);
  world_hash(w, "rsub", s.start, s.from);
  w->res->replica_starts++;
}

static void retry_later(struct simreplica *rep)
{
  if (rep->retry || !rep->up)
    return;
  rep->retry = 1;
  sim_after(rep->w->clock, REP_RETRY_MS, subscribe, rep);
}

/* The writer's side, after each of its events: its VDL goes out as it
 * advances, a writer that stopped serving ends the stream, and the
 * replica's read point bounds its PGMRPL while heard (feed.c publish). */
void replica_writer_event(struct simwriter *wr)
{
  struct simreplica *rep = wr->w->rep;
  if (rep == NULL || rep->src != wr || rep->stream == 0)
    return;
  if (wr->state != W_SERVING || wr->v == NULL || wr->v->fenced) {
    stream_break(rep, "its writer stopped serving");
    return;
  }
  if (wr->v->q.vdl > rep->told) {
    rep->told = wr->v->q.vdl;
    send_feed(rep, NULL, rep->told);
  }
  uint64_t mrp = rep->w_acked ? rep->w_acked : rep->w_start;
  int heard = sim_now(wr->w->clock) - rep->w_heard <= SIM_REPLICA_GONE_MS;
  wr->v->replica_floor = heard ? mrp : 0;
  if (!heard && rep->lapsed != rep->stream) {
    rep->lapsed = rep->stream;  /* GC may pass its point from now on (R6 no more) */
    wr->w->res->replica_lapses++;
    world_hash(wr->w, "rlapse", rep->stream, 0);
  }
}

/* The writer dies (writer_crash): its stream with it. */
void replica_writer_gone(struct simwriter *wr)
{
  struct simreplica *rep = wr->w->rep;
  if (rep && rep->src == wr)
    stream_break(rep, "its writer crashed");
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
static void advance(struct simreplica *rep)
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
  send_msg(rep, RM_ACK, NULL, 0, ra->rp);
}

static void take_start(struct simreplica *rep, const Auralog__ReplicaStart *s)
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

static void take_feed(struct simreplica *rep, const Auralog__ReplicaFeed *f)
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
    stream_break(rep, why);
  }
}

static void deliver(void *arg)
{
  struct rmsg *m = arg;
  struct simreplica *rep = m->rep;
  struct world *w = rep->w;
  if (m->stream != rep->stream || !rep->up || w->stop)
    goto out;                   /* a broken stream's: never arrives */
  if (m->kind == RM_ACK) {
    rep->w_acked = m->rp;
    rep->w_heard = sim_now(w->clock);
    if (rep->src)
      replica_writer_event(rep->src);
    goto out;
  }
  if (m->kind == RM_START) {
    Auralog__ReplicaStart *s = auralog__replica_start__unpack(NULL, m->len, m->buf);
    take_start(rep, s);
    rep->taken = m->stream;
    auralog__replica_start__free_unpacked(s, NULL);
  } else {
    Auralog__ReplicaFeed *f = auralog__replica_feed__unpack(NULL, m->len, m->buf);
    take_feed(rep, f);
    auralog__replica_feed__free_unpacked(f, NULL);
  }
  advance(rep);
out:
  free(m->buf);
  free(m);
}

/* ---- reads ---------------------------------------------------------------------- */

static void check_page(struct simreplica *rep, int k, const uint8_t *got, uint64_t rp,
                       const char *from, uint64_t need, uint64_t lsn)
{
  static const uint8_t zero[SIM_PAGE_SIZE];
  const uint8_t *want = shadow_page(rep->w, page_of(k), rp);
  if (memcmp(got, want ? want : zero, SIM_PAGE_SIZE) != 0)
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
    advance(rep);
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
  if (rep->v) {
    vcore_on_msg(rep->v, e, env);
    reads_check(rep);
  }
}

static void r_up(void *arg, struct ep *e)
{
  struct simreplica *rep = arg;
  if (rep->v)
    vcore_on_up(rep->v, e);
}

static void r_down(void *arg, struct ep *e)
{
  struct simreplica *rep = arg;
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
  advance(rep);
  check_gc(rep);
  /* Heard from: its point, or this stream's start until it has one (an
   * older point, from before the stream, acked now would pull the
   * writer's floor below what GC passed while no stream held it). */
  if (rep->stream && rep->taken == rep->stream)
    send_msg(rep, RM_ACK, NULL, 0, rep->ra.serving ? rep->ra.rp : rep->start);
  sim_after(w->clock, REP_TICK_MS, r_tick, t);
}

/* The replica process starts (at the run's start, or after a crash):
 * an empty cache, no stream yet. */
static void rep_start(struct simreplica *rep)
{
  struct world *w = rep->w;
  struct simhost_cb cb = {.arg = rep, .on_msg = r_msg, .on_up = r_up, .on_down = r_down};
  if (rep->h == NULL)
    rep->h = simnet_add(w->net, REP_ADDR, "", &cb);
  else
    simnet_restart(rep->h, &cb);
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
  retry_later(rep);
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
  struct simwriter *wr = serving_writer(w);
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
  stream_break(rep, "the replica crashed");
  simnet_crash(rep->h);
  core_free(rep);
  ra_free(&rep->ra);
  rep->up = 0;
  rep->gen++;
}

void replica_restart(struct world *w)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL || rep->up || w->vdesc == NULL)
    return;
  rep_start(rep);
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
    stream_break(rep, "the stream was cut");
}

/* The first writer serves: the volume exists; the replica starts. */
void replica_volume_ready(struct world *w)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL || rep->h || w->vdesc == NULL)
    return;
  rep_start(rep);
  core_new(rep);
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

static int keep_arg(void *arg, void *ctx)
{
  (void)arg;
  (void)ctx;
  return 1;
}

static int free_msg(void *arg, void *ctx)
{
  (void)ctx;
  struct rmsg *m = arg;
  free(m->buf);
  free(m);
  return 1;
}

void replica_free(struct world *w)
{
  struct simreplica *rep = w->rep;
  if (rep == NULL)
    return;
  sim_cancel_fn(w->clock, r_tick, free_arg, NULL);
  sim_cancel_fn(w->clock, deliver, free_msg, NULL);
  sim_cancel_fn(w->clock, subscribe, keep_arg, NULL);
  core_free(rep);
  ra_free(&rep->ra);
  free(rep->cpls);
  free(rep);
  w->rep = NULL;
}
