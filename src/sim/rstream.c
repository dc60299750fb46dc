/*
 * rstream.c: the simulated read replica's stream with its writer (paper
 * §4.2.4; replica.c is the replica): the writer's side of vfs/feed.c.
 *
 * A subscription is answered with a ReplicaStart from the serving
 * writer's core (vcore_feed_start); then every record of every MTR it
 * ships goes out as vcore_feed_mtr hands it to v->on_rec, and its VDL as
 * it advances (replica_writer_event, after each of the writer's events).
 * The replica's acks come back the other way. Each way is a TCP stream:
 * in order, each message after 1..REP_DELAY_MS, none lost while the
 * stream lasts (a message of a broken stream never arrives). A writer
 * crash, a writer that stops serving, a replica crash, the stream-cut
 * fault or a feed the replica refuses breaks it; the replica subscribes
 * again REP_RETRY_MS later (once the cut heals) and starts over.
 *
 * The writer folds the replica's last acked read point (its stream's
 * start before the first) into its PGMRPL, replica_floor, while it heard
 * from it within SIM_REPLICA_GONE_MS, as feed.c's publish does; a stream
 * whose floor it once let go is marked lapsed (R6 is not claimed for it).
 */
#include <stdlib.h>
#include <string.h>

#include "sim/simint.h"

#define REP_DELAY_MS  8         /* a stream message takes 1 .. this */
#define REP_RETRY_MS  200       /* it subscribes again after a broken stream */

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

void rstream_ack(struct simreplica *rep, uint64_t rp)
{
  send_msg(rep, RM_ACK, NULL, 0, rp);
}

/* vcore_feed_mtr's on_rec: the serving writer shipped record r. */
static void on_rec(void *arg, const Rec *r)
{
  struct simreplica *rep = arg;
  if (rep->stream && r->lsn >= rep->w_from)   /* from its stream on, as feed.c send_to */
    send_feed(rep, r, rep->told);
}

/* The stream ends: the writer forgets the replica (and its floor). */
void rstream_break(struct simreplica *rep, const char *why)
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
  rstream_retry(rep);
}

struct simwriter *rstream_serving_writer(struct world *w)
{
  struct simwriter *best = NULL;
  for (int i = 0; i < SIM_WRITERS; i++) {
    struct simwriter *wr = &w->wr[i];
    if (wr->state == W_SERVING && wr->v && !wr->v->fenced && !wr->stopped &&
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
  struct simwriter *wr = rstream_serving_writer(w);
  if (wr == NULL || rep->cut) {
    rstream_retry(rep);
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
  rep->w_from = s.from;
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

void rstream_retry(struct simreplica *rep)
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
    rstream_break(rep, "its writer stopped serving");
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
    rstream_break(rep, "its writer crashed");
}

static void deliver(void *arg)
{
  struct rmsg *m = arg;
  struct simreplica *rep = m->rep;
  struct world *w = rep->w;
  if (m->stream != rep->stream || !rep->up || w->stop)
    goto out;                   /* a broken stream's: never arrives */
  if (m->kind == RM_ACK) {
    if (rep->lapsed == rep->stream ||
        sim_now(w->clock) - rep->w_heard > SIM_REPLICA_GONE_MS) {
      /* feed.c feed_ack: heard again after the writer let its floor go
       * (GC may have passed its read point): it starts over. */
      rstream_break(rep, "heard again after its floor was let go");
      goto out;
    }
    rep->w_acked = m->rp;
    rep->w_heard = sim_now(w->clock);
    if (rep->src)
      replica_writer_event(rep->src);
    goto out;
  }
  if (m->kind == RM_START) {
    Auralog__ReplicaStart *s = auralog__replica_start__unpack(NULL, m->len, m->buf);
    replica_take_start(rep, s);
    rep->taken = m->stream;
    auralog__replica_start__free_unpacked(s, NULL);
  } else {
    Auralog__ReplicaFeed *f = auralog__replica_feed__unpack(NULL, m->len, m->buf);
    replica_take_feed(rep, f);
    auralog__replica_feed__free_unpacked(f, NULL);
  }
  replica_advance(rep);
out:
  free(m->buf);
  free(m);
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

void rstream_free(struct world *w)
{
  sim_cancel_fn(w->clock, deliver, free_msg, NULL);
  sim_cancel_fn(w->clock, subscribe, keep_arg, NULL);
}
