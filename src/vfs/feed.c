/*
 * feed.c: the writer's side of its read replicas (paper §4.2.4).
 *
 * Aurora's replicas add no storage writes: the writer streams them the
 * same redo it ships to storage, and each applies it to the pages it has
 * cached (vfs/rapply.h, vfs/rvol.h). Here, in `auralog engine`:
 *   - a replica connects to the engine's SQL port and says ReplicaHello;
 *     the engine answers ReplicaStart (vol_feed_start: the stream's start
 *     point, first LSN and each PG's tail, taken under the lock that hands
 *     out LSNs) and from then on sends every record shipped, in LSN order,
 *     with the VDL, in ReplicaFeeds;
 *   - records are copied as vol_ship hands them out (vol_on_rec, on the
 *     SQL writer thread) and sent from the loop whenever it wakes (a
 *     commit shipped, the VDL advanced, the tick): the feed is batched by
 *     the load, as the Appends are;
 *   - the replica acknowledges its read point (ReplicaAck); the engine
 *     measures its lag (LSNs: VDL minus applied; ms: from sending a VDL to
 *     the ack of having applied it, on the writer's clock) and folds the
 *     oldest read point of every replica heard from in the last
 *     REPLICA_GONE_MS into the PGMRPL it sends the segments (vcore.c), so
 *     node GC never frees a version a replica may still read (invariant
 *     R6; a replica silent longer has its reads below the GC point refused
 *     by the segments, never answered wrong, and when it is heard again it
 *     is dropped, so that it starts over: feed_ack); status
 *     shows each replica (report.c).
 *
 * The writer never waits for a replica (invariant R5): sending only
 * queues on the replica's connection; one that lets more than
 * REPLICA_QUEUE_MAX bytes pile up is dropped (it subscribes again and
 * starts over from storage, rvol.h R4), and one that goes away only
 * leaves the list (and the PGMRPL). Commits never look at replicas.
 *
 * Threads: on_rec runs on the SQL writer thread (under the volume's lock);
 * everything else on the engine's loop. fmu guards the records copied.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hist.h"
#include "lib/log.h"
#include "net/net.h"
#include "param.h"
#include "record.h"
#include "vfs/engine_int.h"
#include "vfs/volume.h"

/* A replica's read transactions as its last ack told (the read-age
 * rule, vfs/rvol.h), for status. */
struct readers {
  char holder[ADDR_MAX_LEN + 1];
  uint64_t held_ms, cancelled, warned;
  uint32_t readers, max_age_ms;
  int warn;
};

struct sub {
  struct conn *c;
  char addr[ADDR_MAX_LEN + 1];
  uint64_t from;              /* its stream's first LSN */
  uint64_t start;             /* its first read point */
  uint64_t applied, min_rp, resyncs;
  uint64_t lag_ms;
  uint64_t echo_us;           /* the last feed it acknowledged applying */
  int acked;                  /* it has acknowledged a read point */
  unsigned long long heard;   /* ms: its last ack (or hello) */
  struct readers rd;          /* its read transactions, from its last ack */
};

static struct {
  pthread_mutex_t fmu;
  int active;                 /* a replica listens: copy records */
  Rec **recs;                 /* copied, not yet sent, in LSN order */
  size_t n, cap;
  struct sub subs[REPLICAS_MAX];
  size_t nsubs;
  uint64_t sent_vdl;          /* the VDL the last feed carried */
  struct hist lag;            /* under fmu: feed_lag_json */
} F = {.fmu = PTHREAD_MUTEX_INITIALIZER};

/* ---- what status shows of a replica's readers, and its lag ------------------ */

static void readers_note(struct readers *rd, const Auralog__ReplicaAck *a)
{
  snprintf(rd->holder, sizeof rd->holder, "%s", a->holder ? a->holder : "");
  rd->held_ms = a->held_ms;
  rd->readers = a->readers;
  rd->cancelled = a->cancelled;
  rd->warned = a->warned;
  rd->max_age_ms = a->max_read_age_ms;
  rd->warn = a->read_age_warn;
}

static void readers_stat(Auralog__ReplicaStat *rs, struct readers *rd)
{
  rs->holder = rd->holder;
  rs->held_ms = rd->held_ms;
  rs->readers = rd->readers;
  rs->cancelled = rd->cancelled;
  rs->warned = rd->warned;
  rs->max_read_age_ms = rd->max_age_ms;
  rs->read_age_action = (char *)(rd->warn ? "warn" : "cancel");
}

/* The lag sample of an ack (oldest_echo_us, the writer's now_us when it
 * sent the oldest feed with a new VDL that this ack's batch applied):
 * send -> the replica's loop -> its apply thread (waiting for readers
 * too) -> its ack -> back here. */
static void lag_note(const Auralog__ReplicaAck *a, uint64_t now)
{
  if (a->oldest_echo_us == 0 || a->oldest_echo_us > now)
    return;
  pthread_mutex_lock(&F.fmu);
  hist_add(&F.lag, (double)(now - a->oldest_echo_us));
  pthread_mutex_unlock(&F.fmu);
}

cJSON *feed_lag_json(void)
{
  pthread_mutex_lock(&F.fmu);
  cJSON *o = hist_json(&F.lag);
  pthread_mutex_unlock(&F.fmu);
  return o;
}

static Rec *rec_copy(const Rec *r)
{
  size_t len = auralog__record__get_packed_size(r);
  uint8_t *buf = malloc(len ? len : 1);
  auralog__record__pack(r, buf);
  Rec *c = auralog__record__unpack(NULL, len, buf);
  free(buf);
  return c;
}

/* vol_on_rec: the SQL writer thread, the volume's lock held. */
static void on_rec(void *arg, const Rec *r)
{
  (void)arg;
  pthread_mutex_lock(&F.fmu);
  if (F.active) {
    if (F.n == F.cap) {
      F.cap = F.cap ? 2 * F.cap : 256;
      F.recs = realloc(F.recs, F.cap * sizeof *F.recs);
    }
    F.recs[F.n++] = rec_copy(r);
  }
  pthread_mutex_unlock(&F.fmu);
}

static struct sub *find(struct conn *c)
{
  for (size_t i = 0; i < F.nsubs; i++)
    if (F.subs[i].c == c)
      return &F.subs[i];
  return NULL;
}

/* Tell the volume the replicas' oldest read point and their stats. */
static void publish(void)
{
  Auralog__ReplicaStat rs[REPLICAS_MAX];
  const Auralog__ReplicaStat *rp[REPLICAS_MAX];
  uint64_t vdl = vol_vdl(E.vol), floor = 0;
  unsigned long long now = now_ms();
  for (size_t i = 0; i < F.nsubs; i++) {
    struct sub *s = &F.subs[i];
    /* R6: its oldest read point bounds the PGMRPL while it is heard from
     * (before its first ack: its start, the point it will read at). */
    uint64_t mrp = s->acked && s->min_rp ? s->min_rp : s->start;
    if (now - s->heard <= REPLICA_GONE_MS && mrp && (floor == 0 || mrp < floor))
      floor = mrp;
    auralog__replica_stat__init(&rs[i]);
    rs[i].addr = s->addr;
    rs[i].applied = s->applied;
    rs[i].lag_lsn = vdl > s->applied ? vdl - s->applied : 0;
    rs[i].lag_ms = s->lag_ms;
    rs[i].min_read_point = mrp;
    rs[i].resyncs = s->resyncs;
    readers_stat(&rs[i], &s->rd);
    rp[i] = &rs[i];
  }
  vol_set_replicas(E.vol, floor, rp, F.nsubs);
}

void feed_hello(struct conn *c, const Env *env)
{
  const Auralog__ReplicaHello *h = env->replica_hello;
  if (E.vol == NULL || strcmp(h->volume, E.volume) != 0) {
    conn_error(c, env->req, ERR_BAD_MSG, E.vol ? "this engine serves another volume"
                                               : "this engine has no volume to replicate");
    return;
  }
  struct sub *s = find(c);
  if (s == NULL) {
    if (F.nsubs == REPLICAS_MAX) {
      conn_error(c, env->req, ERR_UNAVAILABLE, "this writer feeds as many replicas as it may "
                 "(REPLICAS_MAX)");
      return;
    }
    s = &F.subs[F.nsubs++];
    memset(s, 0, sizeof *s);
    s->c = c;
    conn_ref(c);
  }
  snprintf(s->addr, sizeof s->addr, "%s", h->addr[0] ? h->addr : c->peer);
  /* Copy records from now on, then take the start: every record from its
   * `from` is then copied (vol_feed_start holds the LSN lock). */
  pthread_mutex_lock(&F.fmu);
  F.active = 1;
  pthread_mutex_unlock(&F.fmu);
  vol_on_rec(E.vol, on_rec, NULL);
  Auralog__ReplicaStart st;
  Auralog__PgLast **tails = calloc(MAX_PGS, sizeof *tails);
  Auralog__TruncRange tr;
  if (vol_feed_start(E.vol, &st, tails, &tr) != 0) {
    free(tails);
    conn_error(c, env->req, ERR_STALE_EPOCH, "this writer is fenced: ask the new one");
    feed_closed(c);           /* not subscribed */
    return;
  }
  s->from = st.from;
  s->start = st.start;
  s->applied = 0;
  s->acked = 0;
  s->heard = now_ms();
  Env out = AURALOG__ENVELOPE__INIT;
  out.req = env->req;
  out.body_case = AURALOG__ENVELOPE__BODY_REPLICA_START;
  out.replica_start = &st;
  conn_send(c, &out);
  for (size_t i = 0; i < st.n_tails; i++)
    free(tails[i]);
  free(tails);
  loginfo("replica %s subscribed: stream from LSN %llu, first read point %llu",
          s->addr, (unsigned long long)st.from, (unsigned long long)st.start);
  publish();
}

void feed_ack(struct conn *c, const Env *env)
{
  struct sub *s = find(c);
  if (s == NULL)
    return;                   /* not subscribed (any more): nothing to note */
  const Auralog__ReplicaAck *a = env->replica_ack;
  unsigned long long silent = now_ms() - s->heard;
  if (s->acked && silent > REPLICA_GONE_MS) {
    /* R6's other half: silent this long, its read point stopped holding
     * the PGMRPL (publish), so GC may have passed it, and its reads there
     * would be refused for as long as it stays. It starts over from
     * storage instead (rvol.h R4), at a point GC keeps. */
    logwarn("replica %s was silent for %llu ms: its read point no longer held GC; "
            "dropped (it will subscribe again and start from storage)", s->addr, silent);
    conn_close(c);
    feed_closed(c);
    return;
  }
  s->applied = a->applied;
  s->min_rp = a->min_read_point;
  s->resyncs = a->resyncs;
  s->acked = 1;
  s->heard = now_ms();
  /* Measured once per feed applied, at its first ack: an idle replica
   * acks the same feed again and again, and its lag is what the last
   * VDL took to reach it. */
  uint64_t now = now_us();
  readers_note(&s->rd, a);
  lag_note(a, now);
  if (a->echo_us && a->echo_us != s->echo_us && a->echo_us <= now) {
    s->lag_ms = (now - a->echo_us) / 1000;
    s->echo_us = a->echo_us;
  }
  publish();
}

int feed_closed(struct conn *c)
{
  struct sub *s = find(c);
  if (s == NULL)
    return 0;
  loginfo("replica %s left", s->addr);
  conn_unref(s->c);
  *s = F.subs[--F.nsubs];
  if (F.nsubs == 0) {
    pthread_mutex_lock(&F.fmu);
    F.active = 0;
    pthread_mutex_unlock(&F.fmu);
  }
  publish();
  return 1;
}

/* Send s the records in recs[0..n) from its stream on, and the VDL, in
 * feeds that fit a frame. */
static void send_to(struct sub *s, Rec **recs, size_t n, uint64_t vdl, uint64_t now)
{
  size_t i = 0;
  while (i < n && recs[i]->lsn < s->from)
    i++;
  do {
    size_t j = i, bytes = 0;
    while (j < n && j - i < BATCH_MAX &&
           (j == i || bytes + auralog__record__get_packed_size(recs[j]) <= FRAME_MAX / 2))
      bytes += auralog__record__get_packed_size(recs[j++]);
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__ReplicaFeed f = AURALOG__REPLICA_FEED__INIT;
    f.records = recs + i;
    f.n_records = j - i;
    f.vdl = vdl;
    f.sent_us = now;
    env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_FEED;
    env.replica_feed = &f;
    conn_send(s->c, &env);
    i = j;
  } while (i < n);
}

void feed_pump(void)
{
  if (F.nsubs == 0 || E.vol == NULL)
    return;
  /* The VDL first, then the records: every record at or below that VDL
   * was shipped before it was read, so it is among them (or was sent). */
  uint64_t vdl = vol_vdl(E.vol);
  pthread_mutex_lock(&F.fmu);
  Rec **recs = F.recs;
  size_t n = F.n;
  F.recs = NULL;
  F.n = F.cap = 0;
  pthread_mutex_unlock(&F.fmu);
  if (n == 0 && vdl == F.sent_vdl) {
    free(recs);
    return;
  }
  uint64_t now = now_us();
  for (size_t k = 0; k < F.nsubs;) {
    struct sub *s = &F.subs[k];
    size_t queued = uv_stream_get_write_queue_size((uv_stream_t *)&s->c->tcp);
    if (queued > REPLICA_QUEUE_MAX || s->c->closing) {
      /* R5: never wait for a replica; it subscribes again (rvol.h R4). */
      logwarn("replica %s is %zu bytes behind on its stream: dropped (it will subscribe "
              "again and start from storage)", s->addr, queued);
      struct conn *c = s->c;
      conn_close(c);
      feed_closed(c);
      continue;
    }
    send_to(s, recs, n, vdl, now);
    k++;
  }
  F.sent_vdl = vdl;
  for (size_t i = 0; i < n; i++)
    auralog__record__free_unpacked(recs[i], NULL);
  free(recs);
}

void feed_tick(void)
{
  /* A replica that stopped acking no longer holds the PGMRPL down. */
  if (F.nsubs)
    publish();
  feed_pump();
}
