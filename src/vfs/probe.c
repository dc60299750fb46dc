/*
 * probe.c: the engine's read lease (engine_int.h; the lease's rules are
 * lease.h's).
 *
 * A writer that a newer one fenced learns it from storage only at its
 * next write; until then its cache would go on answering reads. So, on the
 * loop, the engine asks the coordinator for the volume's epoch every
 * ENGINE_STAT_MS (on_probe_tick: a Volume request on a conn of its own,
 * reconnected after RECONNECT_MS when it closes). An answer with its own
 * epoch renews the lease from the time the probe was sent; a newer epoch
 * fences the volume for good, and the replies waiting on it fail. A
 * thread that runs SQL checks the lease before each job (worker.c refuse()).
 *
 * The probe is also how the writer learns its PGs' membership changes
 * (member.h M4): it carries the membership sequence the writer applied and
 * each PG in transition with the mepoch it uses since which VCL
 * (vol_probe_fill), and the answer lists the PGs changed since, which the
 * volume applies on its I/O thread (vol_members).
 *
 * lease_start takes the first lease before the engine serves, with one
 * blocking request. The lease's state is logged when it changes: a lab
 * watches it in the log.
 */
#include <pthread.h>

#include "lib/log.h"
#include "net/net.h"
#include "param.h"
#include "net/rpc.h"
#include "vfs/engine_int.h"
#include "vfs/lease.h"
#include "vfs/volume.h"

/* Log the lease's state when it changes (a lab watches it in the log). */
static void lease_show(void)
{
  char why[300];
  pthread_mutex_lock(&E.lmu);
  int ok = lease_valid(&E.lease, now_ms(), READ_LEASE_MS, why, sizeof why);
  pthread_mutex_unlock(&E.lmu);
  if (ok != E.lease_shown) {
    if (ok)
      loginfo("read lease renewed: the coordinator confirms epoch %llu",
              (unsigned long long)E.epoch);
    else
      logwarn("%s", why);
  }
  E.lease_shown = ok;
}

/* Ask the coordinator for the volume's epoch (its answer: on_probe_answer). */
static void probe_send(void)
{
  if (E.probe == NULL || !E.probe->connected)
    return;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vh.name = E.volume;
  vh.page_size = E.page_size;
  vh.epoch = E.epoch;
  vol_probe_fill(E.vol, &vh);       /* member.h M4: mseq, the PGs in transition */
  env.req = ++E.probe_seq;
  env.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  env.volume = &vh;
  uint8_t sig[AUTH_SIG_BYTES];      /* coord/roles.c R4: the writer's own probe */
  vol_writer_seal(E.vol, &env, E.probe->bind, sig);
  unsigned long long at = now_ms();  /* before it leaves: never later */
  if (conn_send(E.probe, &env) == 0) {
    pthread_mutex_lock(&E.lmu);
    lease_sent(&E.lease, env.req, at);
    pthread_mutex_unlock(&E.lmu);
  }
  vol_probe_free(&vh);
}

/* A newer epoch: fence the volume for good (its writes and page reads
 * fail from now on, as after a node's refusal). */
static void lease_fence(void)
{
  char why[300];
  pthread_mutex_lock(&E.lmu);
  lease_valid(&E.lease, now_ms(), READ_LEASE_MS, why, sizeof why);
  pthread_mutex_unlock(&E.lmu);
  vol_fence(E.vol, why);
  release();                 /* replies waiting on a fenced volume fail now */
}

static void on_probe_answer(struct conn *c, const Env *env)
{
  (void)c;
  if (env->body_case == AURALOG__ENVELOPE__BODY_VOLUME) {
    pthread_mutex_lock(&E.lmu);
    enum lease_event ev = lease_answer(&E.lease, env->req, env->volume->epoch);
    pthread_mutex_unlock(&E.lmu);
    if (ev == LEASE_FENCED)
      lease_fence();
    else
      vol_members(E.vol, env->volume);   /* the PGs whose membership changed */
  } else if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR) {
    pthread_mutex_lock(&E.lmu);
    lease_drop(&E.lease, env->req);
    pthread_mutex_unlock(&E.lmu);
    if (E.lease_shown)
      logwarn_rl("read lease: the coordinator refused a probe: %s", env->error->msg);
  }
  lease_show();
}

static void on_probe_connected(struct conn *c, int status)
{
  if (status == 0 && c == E.probe)
    probe_send();
}

static void on_probe_closed(struct conn *c)
{
  if (E.probe != c)
    return;
  E.probe = NULL;
  E.probe_retry_at = now_ms() + RECONNECT_MS;
  pthread_mutex_lock(&E.lmu);
  lease_lost(&E.lease);      /* no answer comes on a closed conn */
  pthread_mutex_unlock(&E.lmu);
}

void on_probe_tick(uv_timer_t *t)
{
  (void)t;
  log_tick(now_ms());          /* counts of repeated warnings whose window is over */
  if (E.probe == NULL) {
    if (now_ms() >= E.probe_retry_at) {
      E.probe = net_connect(E.loop, E.coord, on_probe_connected, on_probe_answer,
                            on_probe_closed, &E);
      if (E.probe == NULL)
        E.probe_retry_at = now_ms() + RECONNECT_MS;
    }
  } else {
    probe_send();
  }
  lease_show();
}

/* The first lease, before serving: the epoch came from the coordinator
 * after t0 (vol_open asked for it), so it holds from t0; recovery may
 * have taken longer than a lease, so ask once more, now, and wait. */
void lease_start(unsigned long long t0)
{
  char why[300];
  lease_init(&E.lease, E.epoch, t0);
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vh.name = E.volume;
  vh.page_size = E.page_size;
  vh.epoch = E.epoch;
  vol_probe_fill(E.vol, &vh);
  req.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  req.volume = &vh;
  uint64_t id = ++E.probe_seq;
  lease_sent(&E.lease, id, now_ms());
  Env *rep = rpc_once(E.coord, &req, RPC_TIMEOUT_MS, why, sizeof why);
  vol_probe_free(&vh);
  if (rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why) == 0 &&
      lease_answer(&E.lease, id, rep->volume->epoch) == LEASE_FENCED)
    lease_fence();
  else if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_VOLUME)
    vol_members(E.vol, rep->volume);
  else if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_VOLUME)
    logwarn_rl("read lease: cannot ask the coordinator: %s", why);
  wire_free(rep);
  lease_drop(&E.lease, id);
  E.lease_shown = 1;         /* log only a change from here on */
}
