/*
 * rvol.c: a read replica's volume inside the auralog VFS (paper §4.2.4);
 * see rvol.h for the rules (R3: the snapshot window; R4: catching up).
 *
 * Threads: the replica's loop pushes the writer's messages into the inbox
 * (its own lock: the loop never waits for a reader or a storage read);
 * the apply thread takes them and, under the volume's VFS lock (vv->mu),
 * feeds the apply rule (rapply.c) and moves the read point; SQLite's
 * threads read pages under the same lock (vfs.c). The apply rule's state
 * is guarded by vv->mu.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "param.h"
#include "vfs/rapply.h"
#include "vfs/rvol.h"
#include "vfs/vdrv.h"
#include "vfs/vfs_int.h"
#include "vfs/volume.h"

/* A message waiting for the apply thread: a packed Envelope. */
struct inmsg {
  uint8_t *buf;
  size_t len;
  struct inmsg *next;
};

struct rvol {
  struct vvol *vv;
  struct rapply ra;           /* under vv->mu */
  int broken;                 /* the stream broke: feeds wait for a new start */
  int want_resync;
  char why[200];
  uint64_t resyncs;
  uint64_t expired;           /* read transactions whose snapshot it moved past (R3) */
  uint64_t echo_us;           /* sent_us of the newest feed applied whole */
  uint64_t last_vdl, last_us; /* the newest feed taken: its VDL and sent_us */
  /* Feeds that told a new VDL, not yet applied through it: (vdl, sent_us),
   * in order; the oldest applied since the last ack is the one that waited
   * longest (the writer's lag histogram, feed.c). */
  struct { uint64_t vdl, us; } vq[REPLICA_LAG_RING];
  size_t vq_head, vq_n;
  uint64_t oldest_echo_us;    /* sent_us of the oldest feed applied since rvol_take_echo */
  /* The read-age rule (rvol.h): --max-read-age and --read-age-action. */
  int max_age_ms;             /* 0: none */
  int warn;                   /* 1: warn past it, 0: cancel past it */
  uint64_t warned;            /* read transactions past it, warned of */
  void (*on_applied)(void *);
  void *arg;
  pthread_mutex_t in_mu;      /* guards the inbox */
  pthread_cond_t in_cv;
  struct inmsg *in, **in_tail;
  pthread_t thread;
};

/* ---- the VFS's calls (vv->mu held) ---------------------------------------- */

uint64_t rvol_read_point(struct vvol *vv)
{
  return vv->rep->ra.rp;
}

int rvol_read_page(struct vvol *vv, uint32_t pno, uint8_t *out, uint64_t *lsn, char *why,
                   size_t whylen)
{
  const struct rapply *ra = &vv->rep->ra;
  if (!ra->serving || ra->pg_pages == 0) {
    snprintf(why, whylen, "the replica has no read point yet (waiting for its writer's "
             "stream)");
    return -1;
  }
  /* R1: every read is at the read point, which is at or below a VDL told
   * and ends a whole MTR; need is exact (rapply.h). */
  return vol_read_at(vv->vol, pno, ra->rp, ra_need(ra, pno / ra->pg_pages), out, lsn, why,
                     whylen);
}

/* The client of this thread's request (auralog_vfs_set_client). */
static __thread char client[64];

void auralog_vfs_set_client(const char *who)
{
  snprintf(client, sizeof client, "%s", who ? who : "");
}

void rvol_hold(struct vvol *vv, struct afile *f)
{
  f->snap = vv->rep->ra.rp;
  f->snap_ms = now_ms();
  snprintf(f->who, sizeof f->who, "%s", client[0] ? client : "(local)");
  f->cancelled = f->warned = 0;
  f->hnext = vv->holders;
  vv->holders = f;
}

void rvol_release(struct vvol *vv, struct afile *f)
{
  for (struct afile **pp = &vv->holders; *pp; pp = &(*pp)->hnext)
    if (*pp == f) {
      *pp = f->hnext;
      break;
    }
  f->hnext = NULL;
  f->snap = 0;
  f->cancelled = 0;
  pthread_cond_broadcast(&vv->idle);   /* the apply thread may move the point */
}

/* The read transactions holding the read point now (not cancelled), and
 * the oldest of them. vv->mu held. */
static int live_holders(struct vvol *vv, struct afile **oldest)
{
  int n = 0;
  *oldest = NULL;
  for (struct afile *f = vv->holders; f; f = f->hnext)
    if (f->snap == vv->rep->ra.rp && !f->cancelled) {
      n++;
      if (*oldest == NULL || f->snap_ms <= (*oldest)->snap_ms)
        *oldest = f;
    }
  return n;
}

int rvol_snap_ok(struct vvol *vv, const struct afile *f, char *why, size_t whylen)
{
  if (f->lock < SQLITE_LOCK_SHARED)
    return 0;
  if (f->cancelled) {
    snprintf(why, whylen, "this read transaction was cancelled: it held the replica's read "
             "point %llu for more than %d ms (auralog replica --max-read-age), and with it "
             "the volume's PGMRPL and every storage node's GC; start the transaction again",
             (unsigned long long)f->snap, vv->rep->max_age_ms);
    return -1;
  }
  if (f->snap == vv->rep->ra.rp)
    return 0;
  snprintf(why, whylen, "this read transaction began at read point %llu and the replica has "
           "moved on to %llu; start the transaction again", (unsigned long long)f->snap,
           (unsigned long long)vv->rep->ra.rp);
  return -1;
}

int rvol_lock_shared(struct vvol *vv, char *why, size_t whylen)
{
  struct timespec dl;
  struct rvol *r = vv->rep;
  /* A new reader waits while the point moves: at most until the oldest
   * reader is cancelled (a window lasts max-read-age at most), or, with
   * no cancelling, READ_DEADLINE_MS. */
  vol_deadline_in(&dl, READ_DEADLINE_MS + (r->warn ? 0 : r->max_age_ms));
  while (vv->hold_readers || !r->ra.serving)
    if (pthread_cond_timedwait(&vv->idle, &vv->mu, &dl) != 0)
      break;
  if (!vv->hold_readers && r->ra.serving)
    return 0;
  if (!r->ra.serving) {
    snprintf(why, whylen, "the replica has not caught up with its writer yet (no read point "
             "after %d ms)%s%s", READ_DEADLINE_MS, r->why[0] ? ": " : "", r->why);
  } else {
    struct afile *old;
    live_holders(vv, &old);
    snprintf(why, whylen, "the replica's read point cannot move: client %s's read "
             "transaction has held it for %llu ms (auralog replica --max-read-age %d, "
             "--read-age-action %s)", old ? old->who : "?",
             old ? now_ms() - old->snap_ms : 0, r->max_age_ms, r->warn ? "warn" : "cancel");
  }
  return -1;
}

/* ---- the apply thread ----------------------------------------------------- */

/* The cached page to apply a record to (rapply.h ra_page_fn). */
static uint8_t *cached_page(void *arg, uint32_t page_no, uint64_t lsn)
{
  struct vvol *vv = arg;
  struct cpage *c = pm_get(&vv->cache, page_no);
  if (c == NULL)
    return NULL;
  c->lsn = lsn;
  return c->data;
}

/* R3: wait (vv->mu held) until no read transaction holds the read point,
 * new ones waiting meanwhile. The read-age rule (rvol.h): a client may
 * leave a read transaction open for as long as it likes (BEGIN; SELECT
 * ...; and silence), and while it does the replica falls behind and the
 * whole volume's GC stops; so past max_age_ms since it began, it is
 * cancelled (its next statement or storage read fails, rvol_snap_ok) and
 * the point moves once no younger one holds it; or, with warn, it is
 * logged once and waited for. */
static void window_open(struct rvol *r)
{
  struct vvol *vv = r->vv;
  struct afile *old;
  vv->hold_readers = 1;
  while (live_holders(vv, &old) > 0) {
    unsigned long long age = now_ms() - old->snap_ms;
    int wait = 1000;                /* a warning's look, at least every second */
    if (r->max_age_ms && age >= (unsigned long long)r->max_age_ms) {
      if (!r->warn) {
        old->cancelled = 1;
        r->expired++;
        logwarn_rl("replica of %s: cancelled client %s's read transaction: it held read "
                   "point %llu for %llu ms (--max-read-age %d ms)", vv->name, old->who,
                   (unsigned long long)old->snap, age, r->max_age_ms);
        continue;
      }
      if (!old->warned) {
        old->warned = 1;
        r->warned++;
        logwarn("replica of %s: client %s's read transaction has held read point %llu for "
                "%llu ms (--max-read-age %d ms, --read-age-action warn): the replica's lag, "
                "the volume's PGMRPL and every node's GC wait for it", vv->name, old->who,
                (unsigned long long)old->snap, age, r->max_age_ms);
      }
    } else if (r->max_age_ms && (unsigned long long)r->max_age_ms - age < (unsigned long long)wait) {
      wait = (int)((unsigned long long)r->max_age_ms - age);
    }
    struct timespec dl;
    vol_deadline_in(&dl, wait > 0 ? wait : 1);
    pthread_cond_timedwait(&vv->idle, &vv->mu, &dl);
  }
}

/* After the point moved (or not): every holder's snapshot is older now. */
static void window_close(struct vvol *vv)
{
  vv->hold_readers = 0;
  pthread_cond_broadcast(&vv->idle);
}

/* The committed size at the read point: page 1's header (read from
 * storage at the new point if not cached). */
static void refresh_size(struct rvol *r)
{
  char why[256];
  const uint8_t *p1 = committed_page(r->vv, 0, why, sizeof why);
  if (p1 == NULL) {
    logwarn_rl("replica: cannot read page 1 at %llu: %s", (unsigned long long)r->ra.rp, why);
    return;
  }
  uint64_t hs = header_size(p1);
  r->vv->size = hs;
}

/* A new stream (R4): drop the cache, start over. vv->mu held. */
static void take_start(struct rvol *r, const Auralog__ReplicaStart *s)
{
  struct vvol *vv = r->vv;
  char why[180];
  /* Outside the lock: a round trip to the coordinator (new PGs). */
  pthread_mutex_unlock(&vv->mu);
  int rc = vol_reader_follow(vv->vol, s->epoch, s->trunc, why, sizeof why);
  pthread_mutex_lock(&vv->mu);
  if (rc != 0) {
    snprintf(r->why, sizeof r->why, "%s", why);
    r->want_resync = 1;
    r->broken = 1;
    return;
  }
  int was_serving = r->ra.serving;
  window_open(r);
  pm_clear(&vv->cache);
  ra_start(&r->ra, s);
  window_close(vv);
  if (was_serving || r->resyncs)
    r->resyncs++;
  r->broken = 0;
  r->want_resync = 0;
  r->why[0] = 0;
  r->last_vdl = s->vdl;
  r->last_us = 0;
  r->vq_n = 0;                 /* a new stream: its feeds are timed afresh */
  r->oldest_echo_us = 0;
  loginfo("replica of %s: stream from LSN %llu, read point %llu once the vdl (%llu) reaches "
          "it (epoch %llu)", vv->name, (unsigned long long)s->from,
          (unsigned long long)s->start, (unsigned long long)s->vdl,
          (unsigned long long)s->epoch);
}

static void take_feed(struct rvol *r, const Auralog__ReplicaFeed *f)
{
  if (r->broken)
    return;
  char why[200];
  if (ra_feed(&r->ra, f->records, f->n_records, f->vdl, why, sizeof why) != 0) {
    logwarn("replica of %s: %s; subscribing again (drops the cache)", r->vv->name, why);
    snprintf(r->why, sizeof r->why, "%s", why);
    r->broken = 1;
    r->want_resync = 1;
    return;
  }
  /* A feed that tells a new VDL is timed until it is applied (advance);
   * one that only brings records (their VDL is still to come) is not. */
  uint64_t top = r->vq_n ? r->vq[(r->vq_head + r->vq_n - 1) % REPLICA_LAG_RING].vdl : r->ra.rp;
  if (f->vdl > top && f->sent_us && r->vq_n < REPLICA_LAG_RING) {
    r->vq[(r->vq_head + r->vq_n) % REPLICA_LAG_RING].vdl = f->vdl;
    r->vq[(r->vq_head + r->vq_n) % REPLICA_LAG_RING].us = f->sent_us;
    r->vq_n++;
  }
  r->last_vdl = f->vdl;
  r->last_us = f->sent_us;
}

/* Move the read point as far as the rule allows. vv->mu held. */
static int advance(struct rvol *r)
{
  struct vvol *vv = r->vv;
  if (!ra_ready(&r->ra))
    return 0;
  uint64_t t = ra_target(&r->ra);
  if (r->ra.serving && t <= r->ra.rp)
    return 0;
  /* The first read point needs no window: no reader has read anything
   * (a SHARED lock waits for it). Every later move does (R3). */
  int first = !r->ra.serving;
  if (!first)
    window_open(r);
  ra_advance(&r->ra, t, cached_page, vv);
  refresh_size(r);
  if (first)
    pthread_cond_broadcast(&vv->idle);  /* (no holder: a SHARED lock waited for the point) */
  else
    window_close(vv);
  if (r->last_vdl <= r->ra.rp && r->last_us)
    r->echo_us = r->last_us;
  /* The feeds applied through now; the oldest waited longest. */
  while (r->vq_n && r->vq[r->vq_head].vdl <= r->ra.rp) {
    if (r->oldest_echo_us == 0)
      r->oldest_echo_us = r->vq[r->vq_head].us;
    r->vq_head = (r->vq_head + 1) % REPLICA_LAG_RING;
    r->vq_n--;
  }
  return 1;
}

static void *apply_main(void *arg)
{
  struct rvol *r = arg;
  struct vvol *vv = r->vv;
  for (;;) {
    pthread_mutex_lock(&r->in_mu);
    while (r->in == NULL)
      pthread_cond_wait(&r->in_cv, &r->in_mu);
    struct inmsg *list = r->in;
    r->in = NULL;
    r->in_tail = &r->in;
    pthread_mutex_unlock(&r->in_mu);
    pthread_mutex_lock(&vv->mu);
    while (list) {
      struct inmsg *m = list;
      list = m->next;
      Env *env = m->buf ? auralog__envelope__unpack(NULL, m->len, m->buf) : NULL;
      if (m->buf == NULL)               /* the stream's end (rvol_unsubscribed) */
        r->broken = 1;
      else if (env && env->body_case == AURALOG__ENVELOPE__BODY_REPLICA_START)
        take_start(r, env->replica_start);
      else if (env && env->body_case == AURALOG__ENVELOPE__BODY_REPLICA_FEED)
        take_feed(r, env->replica_feed);
      if (env)
        auralog__envelope__free_unpacked(env, NULL);
      free(m->buf);
      free(m);
    }
    int moved = advance(r);
    int tell = moved || r->want_resync;
    pthread_mutex_unlock(&vv->mu);
    if (tell && r->on_applied)
      r->on_applied(r->arg);
  }
  return NULL;
}

/* ---- the process's calls -------------------------------------------------- */

static void inbox_put(struct rvol *r, uint8_t *buf, size_t len)
{
  struct inmsg *m = calloc(1, sizeof *m);
  m->buf = buf;
  m->len = len;
  pthread_mutex_lock(&r->in_mu);
  *r->in_tail = m;
  r->in_tail = &m->next;
  pthread_cond_signal(&r->in_cv);
  pthread_mutex_unlock(&r->in_mu);
}

void rvol_push(struct rvol *r, const Env *env)
{
  size_t len = auralog__envelope__get_packed_size(env);
  uint8_t *buf = malloc(len ? len : 1);
  auralog__envelope__pack(env, buf);
  inbox_put(r, buf, len);
}

void rvol_unsubscribed(struct rvol *r)
{
  inbox_put(r, NULL, 0);       /* unpacks to NULL: the stream ended */
}

void rvol_get_stats(struct rvol *r, struct rvol_stats *st)
{
  struct vvol *vv = r->vv;
  pthread_mutex_lock(&vv->mu);
  memset(st, 0, sizeof *st);
  st->serving = r->ra.serving;
  st->epoch = r->ra.epoch;
  st->rp = r->ra.rp;
  st->vdl = r->ra.vdl;
  st->echo_us = r->echo_us;
  st->applied = r->ra.applied;
  st->skipped = r->ra.skipped;
  st->mtrs = r->ra.mtrs;
  st->pending = ra_pending(&r->ra);
  st->resyncs = r->resyncs;
  st->expired = r->expired;
  st->warned = r->warned;
  st->max_age_ms = r->max_age_ms;
  st->warn = r->warn;
  struct afile *old;
  st->readers = live_holders(vv, &old);
  if (old) {
    snprintf(st->holder, sizeof st->holder, "%s", old->who);
    st->held_ms = now_ms() - old->snap_ms;
  }
  st->want_resync = r->want_resync;
  snprintf(st->why, sizeof st->why, "%s", r->why);
  pthread_mutex_unlock(&vv->mu);
}

uint64_t rvol_take_echo(struct rvol *r)
{
  pthread_mutex_lock(&r->vv->mu);
  uint64_t us = r->oldest_echo_us;
  r->oldest_echo_us = 0;
  pthread_mutex_unlock(&r->vv->mu);
  return us;
}

void rvol_set_read_age(struct rvol *r, int max_age_ms, int warn)
{
  pthread_mutex_lock(&r->vv->mu);
  r->max_age_ms = max_age_ms;
  r->warn = warn;
  pthread_cond_broadcast(&r->vv->idle);
  pthread_mutex_unlock(&r->vv->mu);
}

struct rvol *rvol_open(const char *coord, const char *name, size_t cache_pages,
                       void (*on_applied)(void *arg), void *arg, char *why, size_t whylen)
{
  pthread_mutex_lock(&reg_mu);
  for (struct vvol *o = vols; o; o = o->next)
    if (strcmp(o->name, name) == 0) {
      pthread_mutex_unlock(&reg_mu);
      snprintf(why, whylen, "volume %s is already open in this process", name);
      return NULL;
    }
  struct volume *vol = vol_open_reader(coord, name, why, whylen);
  if (vol == NULL) {
    pthread_mutex_unlock(&reg_mu);
    return NULL;
  }
  struct vvol *vv = calloc(1, sizeof *vv);
  snprintf(vv->name, sizeof vv->name, "%s", name);
  vv->refs = 1;                /* the replica's own: the volume stays open */
  vv->vol = vol;
  vv->ps = vol_page_size(vol);
  vv->cache_pages = cache_pages < 8 ? 8 : cache_pages;
  pthread_mutex_init(&vv->mu, NULL);
  pthread_cond_init(&vv->idle, NULL);
  pm_init(&vv->cache, vv->ps);
  pm_init(&vv->ov, vv->ps);
  struct rvol *r = calloc(1, sizeof *r);
  r->vv = vv;
  ra_init(&r->ra);
  r->max_age_ms = REPLICA_MAX_READ_AGE_MS;
  r->on_applied = on_applied;
  r->arg = arg;
  pthread_mutex_init(&r->in_mu, NULL);
  pthread_cond_init(&r->in_cv, NULL);
  r->in_tail = &r->in;
  vv->rep = r;
  vv->next = vols;
  vols = vv;
  pthread_mutex_unlock(&reg_mu);
  pthread_create(&r->thread, NULL, apply_main, r);
  return r;
}
