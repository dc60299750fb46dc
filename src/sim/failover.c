/*
 * failover.c: failover in the simulator (coord/failover.c has the rules,
 * F1-F5; vfs/promote.c is the real replica's side; seed 002 for Aurora's
 * failover to a replica, paper §4.3 for the epochs that make it safe).
 *
 * On in exactly the runs with a read replica (--faults replicas: world.h),
 * so every older seed's run without one is what it was. What it adds
 * around the cores, as the real processes' drivers do, and nothing
 * protocol-level (the decisions are the coordinator core's, fo_*):
 *
 *   the coordinator  runs with --failover (world.c): its fo_tick detects a
 *                 writer silent for WRITER_LOST_MS and chooses a replica.
 *   lease probes  (also in runs where PG membership changes: w->members_probe;
 *                 sfo_probing) a writer, once recovered, asks the coordinator for the
 *                 volume's epoch every ENGINE_STAT_MS on a conn of its own
 *                 (vfs/probe.c): its read lease (vfs/lease.h) and the
 *                 detector's proof of life. An answer naming a newer epoch
 *                 fences it (F2). Its page reads wait for a valid lease, as
 *                 the engine's SQL does.
 *   beats         the replica sends a ReplicaBeat (its read point) every
 *                 ENGINE_STAT_MS; an answer that says promote makes it the
 *                 writer: its replica process ends (cache, stream, reader
 *                 core: nothing survives, P1) and a writer starts on its
 *                 host with OpenVolume.if_epoch = the lost writer's epoch
 *                 (writer.c, which runs the same open and recovery as any
 *                 writer, from storage only). A refused open (the epoch
 *                 moved on: F1) ends that writer; the host is a replica
 *                 again. A promoted writer whose recovery fails retries
 *                 on the epoch it took (vol_open_if). It serves only once
 *                 the old writer's lease may have run out (lease_left_ms,
 *                 the W_WAITING state: F3).
 *   the hosts     two engine hosts, w1 (w->wr[0]) and r1 (w->wr[2]): the
 *                 writer runs on the one whose writer took the newer epoch,
 *                 the replica on the other (sfo_writer_slot). So after a
 *                 promotion the old writer's host is the replica's: a
 *                 writer there that a fault restarts comes back as the
 *                 replica instead (sfo_start_as_replica, from writer_start),
 *                 and an old writer still running there (fenced, or about
 *                 to be) makes way for it. That is what `auralog cluster up`
 *                 does in a real cluster (cluster.c), and it keeps one
 *                 replica in the world for the next failover rather than
 *                 none, with one host fewer than a second replica slot
 *                 would need (rstream.c feeds one replica). w2 (w->wr[1])
 *                 stays the second-writer fault's host.
 *   the operator  sfo_cluster_up, `cluster up` after a fault heals, a
 *                 writer is fenced, a promoted writer serves, and at the
 *                 final heal: the old writer makes way, the replica
 *                 starts, and with no writer at all it waits up to
 *                 SIM_PROMOTE_WAIT_MS for a promotion (cluster.c
 *                 wait_promotion) before it restarts the writer in place
 *                 (an unconditional open: the race F1 settles).
 *                 sfo_ask_failover: `auralog failover`, a Failover to the
 *                 coordinator from a host of its own.
 *
 * Checks (check.c lists them with the rest):
 *   F1 a promotion from epoch E takes epoch E+1 or none (sfo_opened); and
 *      no two writers serve in one epoch (check_step);
 *   F2 an old writer, fenced, never has a commit acknowledged that the new
 *      one's recovery did not keep (workload.c, as for every recovery);
 *   F3 a promoted writer starts serving only when no older writer still
 *      alive holds a valid read lease (sfo_serving);
 *   and, as in every run: no acknowledged commit lost across the failover,
 *   replica reads equal the shadow, commits resume after the final heal.
 */
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "net/proof.h"
#include "sim/simint.h"

#define COORD_ADDR "coord:1"
#define OP_ADDR "op:1"
#define VOLUME_NAME "sim"
#define OPERATOR_MS 500             /* the operator runs `cluster up` this long after a failover */
#define SIM_PROMOTE_WAIT_MS 3000    /* ... and waits this long for a promotion before it
                                     * restarts a lost writer in place (cluster.c waits
                                     * WRITER_LOST_MS + PROMOTE_MS + WRITER_OPEN_MS) */
#define SIM_EXEC_MS 300             /* a promoted replica's writer opens 1..this later (the
                                     * exec, the engine's start: promote.c) */

int sfo_on(const struct world *w)
{
  return w->rep != NULL;
}

/* The engine host the writer belongs on: the one whose writer took the
 * newer epoch (w1 first). The replica's is the other. */
int sfo_writer_slot(struct world *w)
{
  return w->wr[2].epoch > w->wr[0].epoch ? 2 : 0;
}

static struct simwriter *other_engine(struct world *w, const struct simwriter *wr)
{
  return &w->wr[wr->i == 0 ? 2 : 0];
}

/* writer_start's hook: on the replica's host, a writer restarted by a
 * fault (not a promotion) comes back as the replica; a host the replica
 * runs on starts no writer. 1: no writer starts. */
int sfo_start_as_replica(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (!sfo_on(w) || wr->i == 1)
    return 0;
  /* The replica runs there (the host came back as it while a promotion
   * that another writer superseded waited to try again): it stays. */
  if (w->rep->up && w->rep->slot == wr->i)
    return 1;
  if (wr->if_epoch || sfo_writer_slot(w) == wr->i)
    return 0;
  world_trace(w, "writer %d's host is the replica's now: it starts as the replica", wr->i);
  if (w->rep->up == 0) {
    replica_restart(w);
    w->res->fo_as_replica += w->rep->up;
  }
  return 1;
}

/* One process per host: the replica and a writer never share one. */
void sfo_check(struct world *w)
{
  if (!sfo_on(w) || !w->rep->up)
    return;
  const struct simwriter *wr = &w->wr[w->rep->slot];
  if (wr->state != W_DOWN)
    violation(w, "host %s runs the replica and writer %d (state %d) at once", wr->addr,
              wr->i, wr->state);
}

/* ---- the operator ----------------------------------------------------------- */

static int any_writer(const struct world *w)
{
  for (int i = 0; i < SIM_WRITERS; i++)
    if (w->wr[i].state != W_DOWN && w->wr[i].state != W_FAILED)
      return 1;
  return 0;
}

static void up_event(void *arg)
{
  sfo_cluster_up(arg);
}

static void up_later(struct world *w, uint64_t ms)
{
  sim_after(w->clock, ms, up_event, w);
}

void sfo_cluster_up(struct world *w)
{
  if (!sfo_on(w) || w->stop)
    return;
  uint64_t now = sim_now(w->clock);
  struct simwriter *wr = &w->wr[sfo_writer_slot(w)], *old = other_engine(w, wr);
  /* The old writer on the replica's host (a newer epoch exists: it is
   * fenced, or will be) makes way; a promotion still opening there, or a
   * paused process, is left alone. */
  if (old->state != W_DOWN && !(old->if_epoch && old->state == W_OPENING) && !old->stopped &&
      old->epoch < wr->epoch) {
    world_trace(w, "cluster up: writer %d (epoch %llu) is not the writer (epoch %llu is): "
                "it makes way for the replica", old->i, (unsigned long long)old->epoch,
                (unsigned long long)wr->epoch);
    writer_crash(old);
  }
  if (!w->rep->up && old->state == W_DOWN && !old->held) {
    replica_restart(w);
    w->res->fo_as_replica += w->rep->up;
  }
  if (any_writer(w)) {
    w->fo_wait_until = 0;
    return;
  }
  /* No writer: a replica that runs may be promoted; wait for it a while. */
  if (w->rep->up && (w->fo_wait_until == 0 || now < w->fo_wait_until)) {
    if (w->fo_wait_until == 0) {
      w->fo_wait_until = now + SIM_PROMOTE_WAIT_MS;
      up_later(w, SIM_PROMOTE_WAIT_MS);
      world_trace(w, "cluster up: no writer; waiting for a promotion");
    }
    return;
  }
  w->fo_wait_until = 0;
  if (wr->state == W_FAILED)
    writer_crash(wr);
  world_trace(w, "cluster up: no writer; writer %d restarts in place", wr->i);
  writer_start(wr);
}

/* `auralog failover`: a Failover to the coordinator. */
static void op_msg(void *arg, struct ep *e, const Env *env)
{
  struct world *w = arg;
  if (e != w->op_ep)
    return;
  if (env->body_case == AURALOG__ENVELOPE__BODY_WRITER) {
    w->res->fo_manual++;
    world_trace(w, "failover: the coordinator promotes %s from epoch %llu",
                env->writer->promoting, (unsigned long long)env->writer->if_epoch);
    world_hash(w, "fomanual", env->writer->if_epoch, 0);
  } else {
    world_trace(w, "failover refused: %s", env->body_case == AURALOG__ENVELOPE__BODY_ERROR
                                           ? env->error->msg : "unexpected answer");
  }
  const struct io *io = simhost_io(w->op_h);
  io->close(io->ctx, e);
}

static void op_up(void *arg, struct ep *e)
{
  struct world *w = arg;
  if (e != w->op_ep)
    return;
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Failover f = AURALOG__FAILOVER__INIT;
  f.volume = VOLUME_NAME;
  f.to = "";
  req.req = 1;
  req.body_case = AURALOG__ENVELOPE__BODY_FAILOVER;
  req.failover = &f;
  uint8_t sig[AUTH_SIG_BYTES], bind[AUTH_BIND_BYTES];
  io_binding(simhost_io(w->op_h), e, bind);
  role_op_seal(&req, &w->op, bind, sig);     /* the operator's (coord/roles.c R2) */
  io_send(simhost_io(w->op_h), e, &req);
}

static void op_down(void *arg, struct ep *e)
{
  struct world *w = arg;
  if (e == w->op_ep)
    w->op_ep = NULL;
}

void sfo_ask_failover(struct world *w)
{
  if (!sfo_on(w) || w->op_ep)
    return;
  struct simhost_cb cb = {.arg = w, .on_msg = op_msg, .on_up = op_up, .on_down = op_down};
  if (w->op_h == NULL)
    w->op_h = simnet_add(w->net, OP_ADDR, "", &cb);
  const struct io *io = simhost_io(w->op_h);
  world_trace(w, "failover asked");
  w->op_ep = io->connect(io->ctx, COORD_ADDR);
}

/* ---- the writer: its epoch, its lease ------------------------------------------ */

/* Its OpenVolume was answered with an epoch (vd). */
void sfo_opened(struct simwriter *wr, const Auralog__Volume *vd)
{
  struct world *w = wr->w;
  if (!sfo_probing(w))
    return;
  uint64_t now = sim_now(w->clock);
  if (!sfo_on(w)) {
    /* Probing for membership alone (member.h M4): the lease it keeps
     * knows its epoch, so that only a newer one fences it. */
    lease_init(&wr->lease, vd->epoch, wr->open_sent);
    wr->probe_seq = 0;
    return;
  }
  if (wr->if_epoch) {
    /* F1: a conditional open takes the epoch after the one it names, or
     * none: else two writers opened for one lost one. */
    if (vd->epoch != wr->if_epoch + 1)
      violation(w, "writer %d, promoted from epoch %llu, took epoch %llu: the volume had "
                "moved on, and the promotion still opened (F1: one epoch, one writer)",
                wr->i, (unsigned long long)wr->if_epoch, (unsigned long long)vd->epoch);
    if (!wr->promoted_from) {
      wr->promoted_from = wr->if_epoch;
      w->res->fo_promoted++;
    }
    wr->if_epoch = vd->epoch;   /* a retry is conditional on the epoch it took */
  }
  wr->serve_after = now + vd->lease_left_ms;
  lease_init(&wr->lease, vd->epoch, wr->open_sent);
  wr->probe_seq = 0;
}

int sfo_probing(const struct world *w)
{
  return sfo_on(w) || w->members_probe;
}

static void probe_send(struct simwriter *wr)
{
  if (wr->probe == NULL || wr->v == NULL)
    return;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vh.name = VOLUME_NAME;
  vh.page_size = SIM_PAGE_SIZE;
  vh.epoch = wr->epoch;
  /* member.h M4: the membership it applied, each PG in transition with
   * the mepoch it uses since which VCL (vfs/vmember.c). */
  vcore_probe_fill(wr->v, &vh);
  wr->v->probe_soon = 0;
  env.req = ++wr->probe_seq;
  env.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  env.volume = &vh;
  uint8_t sig[AUTH_SIG_BYTES], bind[AUTH_BIND_BYTES];
  io_binding(simhost_io(wr->h), wr->probe, bind);
  role_writer_seal(&env, &wr->signer, bind, wr->v->id, wr->epoch, sig);   /* roles.c R4 */
  lease_sent(&wr->lease, env.req, sim_now(wr->w->clock));   /* before it leaves */
  io_send(simhost_io(wr->h), wr->probe, &env);
  vcore_probe_free(&vh);
}

static void probe_connect(struct simwriter *wr)
{
  const struct io *io = simhost_io(wr->h);
  wr->probe = io->connect(io->ctx, COORD_ADDR);
}

/* Recovered: it proves itself alive from now on (probe.c). */
void sfo_recovered(struct simwriter *wr)
{
  if (!sfo_probing(wr->w))
    return;
  wr->probe_at = sim_now(wr->w->clock) + ENGINE_STAT_MS;
  if (wr->probe == NULL)
    probe_connect(wr);
}

void sfo_writer_tick(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (!sfo_probing(w) || wr->stopped || (wr->state != W_SERVING && wr->state != W_WAITING))
    return;
  uint64_t now = sim_now(w->clock);
  /* A node refused an Append for a stale membership (M5): ask now. */
  if (now < wr->probe_at && !(wr->v && wr->v->probe_soon))
    return;
  wr->probe_at = now + ENGINE_STAT_MS;
  if (wr->probe == NULL)
    probe_connect(wr);          /* its on_up sends one */
  else
    probe_send(wr);
}

int sfo_writer_up(struct simwriter *wr, struct ep *e)
{
  if (e == NULL || e != wr->probe)
    return 0;
  probe_send(wr);
  return 1;
}

int sfo_writer_down(struct simwriter *wr, struct ep *e)
{
  if (e == NULL || e != wr->probe)
    return 0;
  wr->probe = NULL;
  lease_lost(&wr->lease);       /* no answer comes on a closed conn */
  return 1;
}

int sfo_writer_msg(struct simwriter *wr, struct ep *e, const Env *env)
{
  if (e == NULL || e != wr->probe)
    return 0;
  if (env->body_case == AURALOG__ENVELOPE__BODY_VOLUME) {
    if (lease_answer(&wr->lease, env->req, env->volume->epoch) == LEASE_FENCED && wr->v) {
      char why[200];
      snprintf(why, sizeof why, "fenced: the coordinator names epoch %llu (a lease probe)",
               (unsigned long long)env->volume->epoch);
      vol_fence_locked(wr->v, why);
    } else if (wr->v && !wr->v->fenced) {
      vcore_on_members(wr->v, env->volume);   /* the PGs whose membership changed */
    }
  } else {
    lease_drop(&wr->lease, env->req);
  }
  return 1;
}

/* May it serve reads now (worker.c refuse())? */
int sfo_lease_ok(struct simwriter *wr)
{
  char why[300];
  return !sfo_on(wr->w) ||
         lease_valid(&wr->lease, sim_now(wr->w->clock), READ_LEASE_MS, why, sizeof why);
}

/* It starts serving. F3 for a promotion: no older writer still alive
 * holds a lease. */
void sfo_serving(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (!sfo_on(w) || !wr->promoted_from)
    return;
  w->res->fo_promoted_served++;
  uint64_t now = sim_now(w->clock);
  for (int i = 0; i < SIM_WRITERS; i++) {
    struct simwriter *o = &w->wr[i];
    char why[300];
    if (o != wr && o->state == W_SERVING && o->epoch < wr->epoch && o->v && !o->v->fenced &&
        lease_valid(&o->lease, now, READ_LEASE_MS, why, sizeof why))
      violation(w, "promoted writer %d (epoch %llu) serves while writer %d (epoch %llu) still "
                "holds a read lease (granted at %llu): a client could read there what a "
                "commit here changed (F3)", wr->i, (unsigned long long)wr->epoch, o->i,
                (unsigned long long)o->epoch, (unsigned long long)o->lease.granted_at);
  }
  up_later(w, OPERATOR_MS);     /* the operator brings the old writer back as the replica */
}

/* It was fenced (W_FAILED). */
void sfo_fenced(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (!sfo_on(w))
    return;
  w->res->fo_fenced++;
  up_later(w, OPERATOR_MS);
}

/* Its conditional open was refused: the promotion is over (F1). */
void sfo_refused(struct simwriter *wr, const char *why)
{
  struct world *w = wr->w;
  w->res->fo_refused++;
  world_trace(w, "writer %d: promotion from epoch %llu refused: %s", wr->i,
              (unsigned long long)wr->if_epoch, why);
  world_hash(w, "forefused", wr->if_epoch, 0);
}

/* writer-stop: the writer's process pauses (on) or resumes: nothing in or
 * out, no timer, while paused. */
void sfo_stop(struct simwriter *wr, int on)
{
  struct world *w = wr->w;
  if (wr->h == NULL)
    return;
  for (int i = 0; i < SIM_NODES; i++)
    (on ? simnet_cut : simnet_heal)(wr->h, w->nodes[i].h);
  (on ? simnet_cut : simnet_heal)(wr->h, w->coord_h);
  world_hash(w, on ? "wstop" : "wcont", (uint64_t)wr->i, wr->epoch);
  if (on) {
    wr->stopped = 1;
    replica_writer_gone(wr);     /* its stream to the replica breaks too */
    return;
  }
  if (wr->stopped) {
    wr->stopped = 0;
    world_trace(w, "writer %d (epoch %llu) resumes", wr->i, (unsigned long long)wr->epoch);
    writer_poke_at(wr, sim_now(w->clock));
  }
}

/* The key a replica on engine host slot beats with, and opens with when
 * promoted (vfs/promote.c passes it to the engine it becomes). */
void sfo_promote_seed(const struct world *w, int slot, uint8_t seed[32])
{
  sim_key_seed(w, "promote", (uint64_t)slot, seed);
}

/* ---- the replica: beats, promotion ---------------------------------------------- */

struct ptimer {
  struct simreplica *rep;
  unsigned gen;
  uint64_t if_epoch;
};

/* The replica becomes the writer (promote.c's exec): nothing of it
 * survives; a writer starts on its host, its open conditional. */
static void promote_now(void *arg)
{
  struct ptimer *t = arg;
  struct simreplica *rep = t->rep;
  struct world *w = rep->w;
  if (t->gen == rep->gen && rep->up && !w->stop) {
    struct simwriter *wr = &w->wr[rep->slot];
    w->res->fo_promotions++;
    world_trace(w, "replica promoted: it opens as writer %d from epoch %llu", wr->i,
                (unsigned long long)t->if_epoch);
    world_hash(w, "promote", t->if_epoch, (uint64_t)wr->i);
    replica_crash(w);
    wr->if_epoch = t->if_epoch;
    writer_start(wr);
  }
  free(t);
}

static void beat(struct simreplica *rep)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReplicaBeat b = AURALOG__REPLICA_BEAT__INIT;
  b.volume = VOLUME_NAME;
  b.addr = (char *)simhost_addr(rep->h);
  b.applied = rep->ra.serving ? rep->ra.rp : 0;
  b.epoch = rep->v ? rep->v->epoch : 0;
  /* The key it would write with, proved (coord/roles.c R1). */
  struct auth_signer k;
  uint8_t seed[32], sig[AUTH_SIG_BYTES], bind[AUTH_BIND_BYTES];
  sfo_promote_seed(rep->w, rep->slot, seed);
  auth_signer_seed(&k, seed);
  b.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, k.pk};
  env.req = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_BEAT;
  env.replica_beat = &b;
  io_binding(simhost_io(rep->h), rep->coord, bind);
  role_writer_seal(&env, &k, bind, 0, 0, sig);
  io_send(simhost_io(rep->h), rep->coord, &env);
}

void sfo_replica_tick(struct simreplica *rep)
{
  uint64_t now = sim_now(rep->w->clock);
  if (!rep->up || now < rep->beat_at)
    return;
  rep->beat_at = now + ENGINE_STAT_MS;
  if (rep->coord == NULL) {
    const struct io *io = simhost_io(rep->h);
    rep->coord = io->connect(io->ctx, COORD_ADDR);   /* its on_up beats */
  } else {
    beat(rep);
  }
}

int sfo_replica_up(struct simreplica *rep, struct ep *e)
{
  if (e == NULL || e != rep->coord)
    return 0;
  beat(rep);
  return 1;
}

int sfo_replica_down(struct simreplica *rep, struct ep *e)
{
  if (e == NULL || e != rep->coord)
    return 0;
  rep->coord = NULL;
  return 1;
}

int sfo_replica_msg(struct simreplica *rep, struct ep *e, const Env *env)
{
  if (e == NULL || e != rep->coord)
    return 0;
  if (env->body_case == AURALOG__ENVELOPE__BODY_WRITER && env->writer->promote &&
      env->writer->if_epoch && !rep->promoting) {
    /* Not inside the host's own delivery: its process ends, and the
     * writer's opens after the exec and the engine's start. */
    struct ptimer *t = malloc(sizeof *t);
    *t = (struct ptimer){rep, rep->gen, env->writer->if_epoch};
    rep->promoting = 1;
    sim_after(rep->w->clock, 1 + rng_uniform(&rep->rng, SIM_EXEC_MS), promote_now, t);
  }
  return 1;
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

void sfo_free(struct world *w)
{
  sim_cancel_fn(w->clock, promote_now, free_arg, NULL);
  sim_cancel_fn(w->clock, up_event, keep_arg, NULL);
}
