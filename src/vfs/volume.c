/*
 * volume.c: the engine's side of a volume (see volume.h), the real
 * driver around the writer's core (vcore.c, ship.c, read.c; the struct is
 * in volume_int.h): the I/O thread and its libuv loop, opening and
 * closing, and a read replica's volume. Where SQLite's threads wait for
 * commits and reads is vwait.c; recovery at open is open.c, reports to
 * the coordinator report.c.
 *
 * Locking (vdrv.h): v->drv->mu guards the core's state, which SQLite's threads
 * (vol_ship, vol_read, stats) and the I/O thread (every event from the
 * network and the timer) touch; the core is always called with it held.
 * The I/O thread is the only one that touches libuv handles and sends;
 * other threads queue work in the core and wake it with uv_async_send.
 * The core's notify hook wakes the threads waiting on v->drv->cond.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>
#include <sodium.h>

#include "lib/log.h"
#include "net/net.h"
#include "param.h"
#include "record.h"
#include "net/proof.h"
#include "net/rpc.h"
#include "vfs/quorum.h"
#include "vfs/volume.h"
#include "vfs/vdrv.h"
#include "vfs/volume_int.h"

/* Publish the frame counts of the node conns in v->st (with v->drv->mu held,
 * on the I/O thread, which alone touches them). */
void net_sync(struct volume *v)
{
  v->st.net_bytes_out = v->drv->ni.count.bytes_out;
  v->st.net_msgs_out = v->drv->ni.count.msgs_out;
  v->st.net_bytes_in = v->drv->ni.count.bytes_in;
  v->st.net_msgs_in = v->drv->ni.count.msgs_in;
}

static void wake_waiters(void *arg)
{
  struct volume *v = arg;
  pthread_cond_broadcast(&v->drv->cond);
}

/* ---- I/O thread: the core's events ---------------------------------------- */

static void drv_msg(void *core, struct ep *e, const Env *env)
{
  struct volume *v = core;
  pthread_mutex_lock(&v->drv->mu);
  vcore_on_msg(v, e, env);
  net_sync(v);                  /* this answer, and what it sent */
  pthread_mutex_unlock(&v->drv->mu);
}

static void drv_up(void *core, struct ep *e)
{
  struct volume *v = core;
  pthread_mutex_lock(&v->drv->mu);
  vcore_on_up(v, e);
  net_sync(v);
  pthread_mutex_unlock(&v->drv->mu);
}

static void drv_down(void *core, struct ep *e)
{
  struct volume *v = core;
  pthread_mutex_lock(&v->drv->mu);
  vcore_on_down(v, e);
  if (v->closing != 3)
    vcore_wake(v);
  pthread_mutex_unlock(&v->drv->mu);
}

static void on_wake(uv_async_t *h)
{
  struct volume *v = h->data;
  pthread_mutex_lock(&v->drv->mu);
  /* vol_open waits for recovery, which runs here like every other event. */
  if (!v->opened && v->rcv == NULL && v->closing == 0)
    v->rcv = rcv_start(v, v->id, v->npgs);
  if (v->drv->nmembers)
    vol_members_drain(v);       /* the lease probe's news (vprobe.c) */
  vcore_wake(v);
  net_sync(v);
  int stop = v->closing == 3;
  pthread_mutex_unlock(&v->drv->mu);
  if (stop)
    uv_stop(&v->drv->loop);
}

static void on_tick(uv_timer_t *t)
{
  struct volume *v = t->data;
  pthread_mutex_lock(&v->drv->mu);
  vcore_tick(v);
  net_sync(v);
  int opened = v->opened;
  pthread_mutex_unlock(&v->drv->mu);
  if (opened && !v->reader && ++v->drv->ticks % (ENGINE_STAT_MS / VOL_TICK_MS) == 0)
    vol_report(v);
  else if (!opened && !v->reader && ++v->drv->rticks % (ENGINE_STAT_MS / VOL_TICK_MS) == 0)
    vol_report_recovering(v);
}

static void close_handle(uv_handle_t *h, void *arg)
{
  (void)arg;
  if (!uv_is_closing(h)) {
    if (h->type == UV_TCP && h->data)
      conn_close(h->data);
    else
      uv_close(h, NULL);
  }
}

static void *io_main(void *arg)
{
  struct volume *v = arg;
  uv_run(&v->drv->loop, UV_RUN_DEFAULT);
  uv_walk(&v->drv->loop, close_handle, NULL);
  uv_run(&v->drv->loop, UV_RUN_DEFAULT);
  uv_loop_close(&v->drv->loop);
  return NULL;
}

/* ---- the public side ----------------------------------------------------------- */

Env *vol_coord_call(const char *coord, Env *req, int want, char *why, size_t whylen)
{
  char err[256];
  Env *rep = rpc_once(coord, req, RPC_TIMEOUT_MS, err, sizeof err);
  if (rep == NULL) {
    snprintf(why, whylen, "coordinator: %s", err);
    return NULL;
  }
  if (rpc_expect(rep, want, err, sizeof err) != 0) {
    snprintf(why, whylen, "coordinator: %s", err);
    wire_free(rep);
    return NULL;
  }
  return rep;
}

/* Stop the I/O thread and free v. */
/* The engine server's reads mode, for the volumes this process opens: 1
 * for --reads immediate (reported: vol_engine_stat). */
static int reads_default;
/* engine --create: a dropped name may be made again (coord/roles.c R3). */
static int recreate_default;

static int binlog_default;
static uint64_t rf_xid_default;

void vol_rollforward_xid(uint64_t xid)
{
  rf_xid_default = xid;
}

void vol_binlog_default(int on)
{
  binlog_default = on;
}

int vol_has_binlog(const struct volume *v)
{
  return v->has_binlog;
}

void vol_recreate_default(int on)
{
  recreate_default = on;
}

/* The key pair a promoted replica's engine opens with: the one its beats
 * announced (vfs/promote.c passes its seed in AURALOG_WRITER_SEED), so the
 * coordinator knows it for the replica it chose (coord/failover.c).
 * Anyone else: a new pair, the same for every attempt of one open, so a
 * retry is recognized as the epoch's own writer's. */
static int writer_signer(struct auth_signer *s, char *why, size_t whylen)
{
  if (auth_init() != 0) {
    snprintf(why, whylen, "libsodium failed to start");
    return -1;
  }
  const char *hex = getenv("AURALOG_WRITER_SEED");
  uint8_t seed[AUTH_SEED_BYTES];
  size_t got = 0;
  if (hex && *hex && sodium_hex2bin(seed, sizeof seed, hex, strlen(hex), NULL, &got, NULL) == 0 &&
      got == sizeof seed) {
    auth_signer_seed(s, seed);
    sodium_memzero(seed, sizeof seed);
    return 0;
  }
  auth_signer_new(s);
  return 0;
}

void vol_reads_default(int immediate)
{
  reads_default = immediate;
}

/* A volume (and its driver's state) as the coordinator's description in
 * rep says: NULL with why (rep freed) if it has no PG. The writer's open
 * and a replica's reader both start here. */
static struct volume *vol_alloc(const char *name, const char *coord, Env *rep, char *why,
                                size_t whylen)
{
  const Auralog__Volume *vd = rep->volume;
  if (vd->pg_pages == 0 || vd->n_pgs == 0) {
    snprintf(why, whylen, "coordinator: volume %s has no protection group", name);
    wire_free(rep);
    return NULL;
  }
  struct volume *v = calloc(1, sizeof *v);
  v->drv = calloc(1, sizeof *v->drv);
  v->reads_immediate = reads_default;   /* its first report, sent while it opens, says it */
  snprintf(v->name, sizeof v->name, "%s", name);
  snprintf(v->coord, sizeof v->coord, "%s", coord);
  v->id = vd->id;
  v->epoch = vd->epoch;
  v->page_size = vd->page_size;
  v->pg_pages = vd->pg_pages;
  return v;
}

/* Start v's driver: its loop (the network, the waiters' wake-up, the
 * VOL_TICK_MS tick, the first report after `ticks` more) and the I/O
 * thread that runs it. The writer's volume and a replica's reader both. */
static void drv_start(struct volume *v, unsigned ticks)
{
  uv_loop_init(&v->drv->loop);
  netio_init(&v->drv->ni, &v->drv->loop, v, drv_msg, drv_up, drv_down);
  v->io = &v->drv->ni.io;
  v->notify = wake_waiters;
  v->notify_arg = v;
  uv_async_init(&v->drv->loop, &v->drv->wake, on_wake);
  v->drv->wake.data = v;
  uv_timer_init(&v->drv->loop, &v->drv->tick);
  v->drv->tick.data = v;
  uv_timer_start(&v->drv->tick, on_tick, VOL_TICK_MS, VOL_TICK_MS);
  v->drv->ticks = ticks;
  pthread_create(&v->drv->thread, NULL, io_main, v);
}

static void teardown(struct volume *v)
{
  pthread_mutex_lock(&v->drv->mu);
  v->closing = 3;
  pthread_mutex_unlock(&v->drv->mu);
  uv_async_send(&v->drv->wake);
  pthread_join(v->drv->thread, NULL);
  netio_free(&v->drv->ni);
  vol_members_drain(v);         /* frees what is left */
  vcore_probe_free(&v->drv->mout);
  vcore_free(v);
  pthread_mutex_destroy(&v->drv->mu);
  pthread_cond_destroy(&v->drv->cond);
  free(v->drv);
  free(v);
}

/* A report to the coordinator, now (no answer comes), signed as v's
 * writer on its connection (coord/roles.c R4: else it is ignored). */
static void report_now(struct volume *v, const char *coord, Env *env)
{
  char err[200];
  struct rpc r;
  size_t len;
  uint8_t sig[AUTH_SIG_BYTES];
  if (rpc_open(&r, coord, 1000, err, sizeof err) != 0)
    return;
  vol_writer_seal(v, env, r.bind, sig);
  uint8_t *frame = wire_frame(env, &len);
  if (frame)
    rpc_send_raw(&r, frame, len);
  free(frame);
  rpc_close(&r);
}

/* A conditional open (a promotion's, or its retry) names a key the
 * coordinator already knows, the chosen replica's or the epoch's writer's:
 * both public, so it proves it holds it on this connection (writer_sig,
 * coord/roles.c R1 coord_key_proved). */
static Env *open_proved(const char *coord, Env *req, const struct auth_signer *key,
                        uint64_t if_epoch, char *why, size_t whylen)
{
  char err[256];
  struct rpc r;
  uint8_t sig[AUTH_SIG_BYTES];
  if (rpc_open(&r, coord, RPC_TIMEOUT_MS, err, sizeof err) != 0) {
    snprintf(why, whylen, "coordinator: %s", err);
    return NULL;
  }
  role_writer_seal(req, key, r.bind, 0, if_epoch, sig);
  Env *rep = rpc_call(&r, req, RPC_TIMEOUT_MS, err, sizeof err);
  rpc_close(&r);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, err, sizeof err) != 0) {
    snprintf(why, whylen, "coordinator: %s", err);
    wire_free(rep);
    return NULL;
  }
  return rep;
}

/* One attempt: a new epoch, recovery. *err: why it failed (rcv_error):
 * ERR_UNAVAILABLE only for lack of segments (a quorum), so another attempt
 * may succeed. */
static struct volume *open_once(const char *coord, const char *name,
                                const char *engine_addr, uint32_t pg_pages, uint64_t if_epoch,
                                const struct auth_signer *wsigner, uint64_t *took, int *err,
                                char *why, size_t whylen)
{
  *err = ERR_INTERNAL;
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  /* A key pair of this writer's own: its ticket names the public half,
   * its truncation, probes and reports carry its signature. */
  struct auth_signer signer = *wsigner;
  ov.name = (char *)name;
  ov.create = 1;
  ov.recreate = recreate_default;
  ov.binlog = binlog_default;
  ov.pg_pages = pg_pages;
  ov.writer = 1;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, signer.pk};
  ov.addr = (char *)(engine_addr ? engine_addr : "");
  ov.if_epoch = if_epoch;
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  Env *rep = if_epoch ? open_proved(coord, &req, &signer, if_epoch, why, whylen)
                      : vol_coord_call(coord, &req, AURALOG__ENVELOPE__BODY_VOLUME, why, whylen);
  if (rep == NULL)
    return NULL;
  unsigned long long answered = now_ms();
  const Auralog__Volume *vd = rep->volume;
  *took = vd->epoch;
  struct volume *v = vol_alloc(name, coord, rep, why, whylen);
  if (v == NULL)
    return NULL;
  snprintf(v->engine_addr, sizeof v->engine_addr, "%s", engine_addr ? engine_addr : "");
  if (vd->lease_left_ms)
    v->st.serve_after_ms = answered + vd->lease_left_ms;
  pthread_mutex_init(&v->drv->mu, NULL);
  pthread_cond_init(&v->drv->cond, NULL);
  vol_adopt(v, vd);
  v->mseq = vd->mseq;         /* member.h M4: the membership it opens with */
  v->signer = signer;
  v->rf_xid = rf_xid_default;
  if (vd->ticket)
    vol_set_ticket(v, vd->ticket->sig.data, vd->ticket->sig.len);
  wire_free(rep);
  drv_start(v, ENGINE_STAT_MS / VOL_TICK_MS - 1);   /* report at the first tick */
  uv_async_send(&v->drv->wake);
  /* Recovery runs on the I/O thread (on_wake starts it); wait for it. */
  int rc;
  pthread_mutex_lock(&v->drv->mu);
  while (v->rcv == NULL || (rc = rcv_result(v->rcv, why, whylen)) == 0)
    pthread_cond_wait(&v->drv->cond, &v->drv->mu);
  *err = rcv_error(v->rcv);
  uint64_t proved = rcv_vdl(v->rcv);
  rcv_free(v->rcv);
  v->rcv = NULL;
  v->opened = rc == 1;
  pthread_mutex_unlock(&v->drv->mu);
  if (rc != 1) {
    if (*err == ERR_DATA_LOSS) {
      /* The alarm, for the cluster's journal (coord/journal.c): the one
       * report this writer makes. */
      Env env = AURALOG__ENVELOPE__INIT;
      Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
      es.volume = (char *)name;
      es.addr = v->engine_addr;
      es.epoch = v->epoch;
      es.vdl = proved;
      es.data_loss = why;
      env.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
      env.engine_stat = &es;
      report_now(v, coord, &env);
    }
    teardown(v);
    return NULL;
  }
  /* Tell the coordinator now, before serving, so that the truncation is in
   * the volume's history even if this engine dies at once. */
  {
    Env env;
    Auralog__EngineStat es;
    Auralog__TruncRange tr;
    vol_engine_stat(v, &env, &es, &tr);
    report_now(v, coord, &env);
  }
  loginfo("volume %s open: epoch %llu, vdl %llu, %zu pg%s, recovery %llu ms%s", name,
          (unsigned long long)v->epoch, (unsigned long long)v->q.vdl, v->npgs,
          v->npgs == 1 ? "" : "s", (unsigned long long)v->st.recovery_ms,
          v->st.trunc_to > v->st.trunc_from ? ", truncated above the vdl" : "");
  return v;
}

int vol_open_again(int err)
{
  return err == ERR_UNAVAILABLE;
}

/* Recovery needs a read quorum of every PG, then a write quorum. Segments
 * may be briefly missing (nodes that just came back have not yet heard of
 * a PG made while they were down): an engine tries again, with a new
 * epoch each time, for up to RECOVERY_RETRY_MS before it gives up; for
 * that alone (vol_open_again): a data-loss alarm (ERR_DATA_LOSS, open.c)
 * is final, and trying again would take epoch after epoch to prove the
 * same VDL. Waits grow from 500 ms to 4 s: each try fences and scans
 * every PG, work that slows the very thing it waits for (a next segment
 * filling from its peers: member.h M2). */
struct volume *vol_open(const char *coord, const char *name, const char *engine_addr,
                        uint32_t pg_pages, char *why, size_t whylen)
{
  return vol_open_if(coord, name, engine_addr, pg_pages, 0, why, whylen);
}

/* A promotion's retry is conditional on the epoch its last attempt took:
 * if another writer took a newer one meanwhile, this one gives up rather
 * than fence it (coord/failover.c F1). */
struct volume *vol_open_if(const char *coord, const char *name, const char *engine_addr,
                           uint32_t pg_pages, uint64_t if_epoch, char *why, size_t whylen)
{
  unsigned long long give_up = now_ms() + RECOVERY_RETRY_MS;
  long wait_ms = 500;
  struct auth_signer signer;
  if (writer_signer(&signer, why, whylen) != 0)
    return NULL;
  for (;;) {
    int err;
    uint64_t took = 0;
    struct volume *v = open_once(coord, name, engine_addr, pg_pages, if_epoch, &signer, &took,
                                 &err, why, whylen);
    if (if_epoch && took)
      if_epoch = took;
    if (v || !vol_open_again(err) || now_ms() + (unsigned long long)wait_ms > give_up)
      return v;
    logwarn_rl("volume %s: %s; trying again in %ld ms", name, why, wait_ms);
    struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    wait_ms = wait_ms * 2 < 4000 ? wait_ms * 2 : 4000;
  }
}

uint32_t vol_page_size(const struct volume *v)
{
  return v->page_size;
}

const char *vol_name(const struct volume *v)
{
  return v->name;
}

void vol_deadline_in(struct timespec *ts, int ms)
{
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000;
  if (ts->tv_nsec >= 1000000000) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000;
  }
}

uint64_t vol_vdl(struct volume *v)
{
  pthread_mutex_lock(&v->drv->mu);
  uint64_t vdl = v->q.vdl;
  pthread_mutex_unlock(&v->drv->mu);
  return vdl;
}

void vol_on_durable(struct volume *v, void (*fn)(void *, uint64_t), void *arg)
{
  pthread_mutex_lock(&v->drv->mu);
  v->durable_fn = fn;
  v->durable_arg = arg;
  pthread_mutex_unlock(&v->drv->mu);
}

void vol_get_stats(struct volume *v, struct vol_stats *st)
{
  pthread_mutex_lock(&v->drv->mu);
  *st = v->st;
  st->epoch = v->epoch;
  st->vdl = v->q.vdl;
  st->vcl = v->q.vcl;
  st->next_lsn = v->q.next_lsn;
  st->lal = v->q.lal;
  st->pending = q_pending(&v->q);
  st->refusing = v->refusing;   /* kept by vcore.c on_ack: no walk over every PG */
  pthread_mutex_unlock(&v->drv->mu);
}

int vol_commit_times(struct volume *v, uint64_t lsn, struct vol_ctime *out)
{
  int rc = -1;
  pthread_mutex_lock(&v->drv->mu);
  if (v->ctimes) {
    /* The ring holds the last min(nctimes, STAGE_TIMES_RING), in LSN order. */
    uint64_t lo = v->nctimes > STAGE_TIMES_RING ? v->nctimes - STAGE_TIMES_RING : 0;
    uint64_t hi = v->nctimes;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (v->ctimes[mid % STAGE_TIMES_RING].lsn < lsn)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo < v->nctimes && v->ctimes[lo % STAGE_TIMES_RING].lsn == lsn) {
      *out = v->ctimes[lo % STAGE_TIMES_RING];
      rc = 0;
    }
  }
  pthread_mutex_unlock(&v->drv->mu);
  return rc;
}

void vol_close(struct volume *v)
{
  char why[256];
  pthread_mutex_lock(&v->drv->mu);
  uint64_t last = v->ncpls ? v->cpls[v->ncpls - 1] : 0;
  pthread_mutex_unlock(&v->drv->mu);
  if (last && vol_wait(v, last, COMMIT_DEADLINE_MS, why, sizeof why) != 0)
    logwarn("closing %s: %s", v->name, why);
  /* The I/O thread sends the final VDL to every segment (on_wake); wait a
   * moment for the acks, then stop it. */
  pthread_mutex_lock(&v->drv->mu);
  v->closing = 1;
  pthread_mutex_unlock(&v->drv->mu);
  uv_async_send(&v->drv->wake);
  struct timespec dl;
  vol_deadline_in(&dl, 1000);
  pthread_mutex_lock(&v->drv->mu);
  while ((v->closing == 1 || v->nfl > 0) && !v->fenced)
    if (pthread_cond_timedwait(&v->drv->cond, &v->drv->mu, &dl) != 0)
      break;
  pthread_mutex_unlock(&v->drv->mu);
  teardown(v);
}

void vol_writer_seal(struct volume *v, Env *env, const uint8_t bind[AUTH_BIND_BYTES],
                     uint8_t sig[AUTH_SIG_BYTES])
{
  if (v->have_ticket)
    role_writer_seal(env, &v->signer, bind, v->id, v->epoch, sig);
}

int vol_drop(const char *coord, const char *name, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__DropVolume d = AURALOG__DROP_VOLUME__INIT;
  d.name = (char *)name;
  req.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
  req.drop_volume = &d;
  Env *rep = vol_coord_call(coord, &req, AURALOG__ENVELOPE__BODY_OK, why, whylen);
  wire_free(rep);
  return rep ? 0 : -1;
}

int vol_fenced(struct volume *v, char *why, size_t whylen)
{
  pthread_mutex_lock(&v->drv->mu);
  int fenced = v->fenced;
  if (fenced)
    snprintf(why, whylen, "%s: a newer writer opened volume %s; this engine must stop",
             v->fenced_why, v->name);
  pthread_mutex_unlock(&v->drv->mu);
  return fenced;
}

/* ---- for the engine server: durable reads, the read lease (engine.c) ---- */

uint64_t vol_last_cpl(struct volume *v)
{
  pthread_mutex_lock(&v->drv->mu);
  uint64_t cpl = v->last_cpl;
  pthread_mutex_unlock(&v->drv->mu);
  return cpl;
}

int vol_read_seen(struct volume *v, uint64_t seen, int immediate)
{
  uint64_t vdl = vol_vdl(v);
  if (seen <= vdl)
    return 0;
  pthread_mutex_lock(&v->drv->mu);
  if (immediate) {
    v->dirty_reads++;
    if (seen > v->dirty_lsn)
      v->dirty_lsn = seen;
  } else {
    v->held_reads++;
  }
  pthread_mutex_unlock(&v->drv->mu);
  return 1;
}

void vol_fence(struct volume *v, const char *why)
{
  pthread_mutex_lock(&v->drv->mu);
  vol_fence_locked(v, why);
  pthread_mutex_unlock(&v->drv->mu);
}

/* ---- read replicas (paper §4.2.4): the replica's volume, the writer's feed -- */

/* A replica's volume learns of the writer's new PGs from the coordinator:
 * at each new stream, and when a read names a PG it does not know; and of
 * its PGs' membership changes (member.h): a PG whose mepoch is newer than
 * the one it holds is taken whole, so that its reads go to the current
 * segments (a segment that left answers ERR_UNKNOWN_SEGMENT: read.c asks
 * for this then, vol_read_at). */
static int reader_adopt(struct volume *v, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = v->name;
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  Env *rep = vol_coord_call(v->coord, &req, AURALOG__ENVELOPE__BODY_VOLUME, why, whylen);
  if (rep == NULL)
    return -1;
  pthread_mutex_lock(&v->drv->mu);
  /* A reader's core sends nothing and holds no record: a change applies
   * here, on the replica's thread, as vol_adopt does. */
  for (size_t p = 0; p < rep->volume->n_pgs && p < v->npgs; p++)
    vcore_on_membership(v, rep->volume->pgs[p]);
  if (rep->volume->binlog && rep->volume->binlog->n_segments)
    vcore_on_membership(v, rep->volume->binlog);   /* (a PG it holds: as the others) */
  vol_adopt(v, rep->volume);
  v->probe_soon = 0;
  pthread_mutex_unlock(&v->drv->mu);
  wire_free(rep);
  uv_async_send(&v->drv->wake);   /* connect to the nodes of new PGs */
  return 0;
}

int vol_read_at(struct volume *v, uint32_t page_no, uint64_t rp, uint64_t need, uint8_t *out,
                uint64_t *page_lsn, char *why, size_t whylen)
{
  uint64_t at[2] = {rp, need};
  /* A PG the writer made since this replica last asked (its record is
   * there, need > 0): ask the coordinator, never guess a zero page. */
  if (need && page_no / v->pg_pages >= vol_npgs(v) && reader_adopt(v, why, whylen) != 0)
    return -1;
  /* A segment it read from is no member any more (read.c): take the
   * PGs' membership again, at most every ENGINE_STAT_MS. */
  pthread_mutex_lock(&v->drv->mu);
  int stale = v->probe_soon && now_ms() >= v->drv->members_asked_at + ENGINE_STAT_MS;
  if (stale)
    v->drv->members_asked_at = now_ms();
  pthread_mutex_unlock(&v->drv->mu);
  if (stale) {
    char err[200];
    if (reader_adopt(v, err, sizeof err) != 0)
      logwarn_rl("volume %s: cannot refresh its membership: %s", v->name, err);
  }
  return vol_read_common(v, page_no, at, out, page_lsn, why, whylen);
}

struct volume *vol_open_reader(const char *coord, const char *name, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = (char *)name;
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;          /* not a writer: no epoch taken, nothing fenced */
  Env *rep = vol_coord_call(coord, &req, AURALOG__ENVELOPE__BODY_VOLUME, why, whylen);
  if (rep == NULL)
    return NULL;
  const Auralog__Volume *vd = rep->volume;
  struct volume *v = vol_alloc(name, coord, rep, why, whylen);
  if (v == NULL)
    return NULL;
  v->reader = 1;
  v->opened = 1;                  /* no recovery: the writer's is the volume's */
  pthread_mutex_init(&v->drv->mu, NULL);
  pthread_cond_init(&v->drv->cond, NULL);
  vol_adopt(v, vd);
  wire_free(rep);
  drv_start(v, 0);
  uv_async_send(&v->drv->wake);
  return v;
}

int vol_reader_follow(struct volume *v, uint64_t epoch, const Auralog__TruncRange *trunc,
                      char *why, size_t whylen)
{
  /* The writer's volume may have grown since: take on its new PGs. */
  if (reader_adopt(v, why, whylen) != 0)
    return -1;
  pthread_mutex_lock(&v->drv->mu);
  v->epoch = epoch;
  if (v->rtrunc)
    auralog__trunc_range__free_unpacked(v->rtrunc, NULL);
  v->rtrunc = NULL;
  if (trunc) {
    size_t len = auralog__trunc_range__get_packed_size(trunc);
    uint8_t *buf = malloc(len ? len : 1);
    auralog__trunc_range__pack(trunc, buf);
    v->rtrunc = auralog__trunc_range__unpack(NULL, len, buf);
    free(buf);
  }
  pthread_mutex_unlock(&v->drv->mu);
  return 0;
}

size_t vol_npgs(struct volume *v)
{
  pthread_mutex_lock(&v->drv->mu);
  size_t n = v->npgs;
  pthread_mutex_unlock(&v->drv->mu);
  return n;
}

void vol_on_rec(struct volume *v, void (*fn)(void *arg, const Rec *r), void *arg)
{
  pthread_mutex_lock(&v->drv->mu);
  v->on_rec = fn;
  v->on_rec_arg = arg;
  pthread_mutex_unlock(&v->drv->mu);
}

int vol_feed_start(struct volume *v, Auralog__ReplicaStart *s, Auralog__PgLast **tails,
                   Auralog__TruncRange *tr)
{
  pthread_mutex_lock(&v->drv->mu);
  if (v->reader || !v->opened || v->fenced) {
    pthread_mutex_unlock(&v->drv->mu);
    return -1;
  }
  vcore_feed_start(v, s, tails, tr);
  pthread_mutex_unlock(&v->drv->mu);
  return 0;
}

void vol_set_replicas(struct volume *v, uint64_t floor, const Auralog__ReplicaStat *const *rs,
                      size_t n)
{
  pthread_mutex_lock(&v->drv->mu);
  v->replica_floor = floor;
  if (n > REPLICAS_MAX)
    n = REPLICAS_MAX;
  for (size_t i = 0; i < n; i++) {
    /* Copied whole: rs points into the feed's state, which its thread
     * changes after this returns (the reader's holder on each ack). */
    v->drv->rstat[i] = *rs[i];
    snprintf(v->drv->raddr[i], sizeof v->drv->raddr[i], "%s", rs[i]->addr);
    v->drv->rstat[i].addr = v->drv->raddr[i];
    snprintf(v->drv->rholder[i], sizeof v->drv->rholder[i], "%s",
             rs[i]->holder ? rs[i]->holder : "");
    v->drv->rstat[i].holder = v->drv->rholder[i];
  }
  v->drv->nrstat = n;
  pthread_mutex_unlock(&v->drv->mu);
}
