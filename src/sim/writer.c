/*
 * writer.c: a writer host in the simulator: the writer's volume core
 * (volume_int.h, recovery in open.c) on the simulated network, opened the
 * way vol_open opens it.
 *
 * Opening: connect to the coordinator, OpenVolume (a new epoch; the
 * volume is created by the first writer), GrowVolume to SIM_PGS PGs, then
 * set the core up from the description and start recovery (rcv_start).
 * The core's events come from the network and a VOL_TICK_MS timer; after
 * each, the host looks at the core as the real driver's waiters do:
 * recovery over (serve, or try again later), fenced (stop), VDL advanced
 * (the workload's acks), and lets the workload go on.
 *
 * A crash throws the core away with everything it held: commits in
 * flight have an unknown outcome until the next recovery decides them.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "param.h"
#include "net/proof.h"
#include "sim/simint.h"

#define COORD_ADDR "coord:1"
#define VOLUME_NAME "sim"
#define REOPEN_MS 500            /* a failed open is tried again after this */

static void reopen_later(struct simwriter *wr);
static void open_failed(struct simwriter *wr);

/* The data-loss alarm (vfs/open.c): recovery proved vdl, below a VDL a
 * segment heard. Within the fault model it must never ring (recovery.h
 * recover_lost): a violation. Beyond it (--beyond) it may, and it must
 * then be true: an acknowledged (or kept) commit of an older epoch lies
 * above vdl. A true one ends the run: the writer refuses to open, as the
 * engine exits, and only an operator can go on (no commit resumes, so the
 * liveness checks have nothing to check). */
static void data_loss(struct simwriter *wr, uint64_t vdl, const char *why)
{
  struct world *w = wr->w;
  if (!w->o.beyond) {
    violation(w, "recovery raised a data-loss alarm within the fault model: %s", why);
    return;
  }
  const struct txrec *t = NULL;
  for (size_t i = 0; i < w->ntxs && t == NULL; i++)
    if (w->txs[i].epoch < wr->epoch && w->txs[i].cpl > vdl &&
        (w->txs[i].state == TX_ACKED || w->txs[i].state == TX_KEPT))
      t = &w->txs[i];
  if (t == NULL) {
    violation(w, "a false data-loss alarm: no acknowledged commit lies above the VDL %llu "
              "recovery proved: %s", (unsigned long long)vdl, why);
    return;
  }
  w->res->data_loss_alarms++;
  world_trace(w, "writer %d: data-loss alarm beyond the fault model (commit %llu of epoch "
              "%llu is missing): it refuses to open; the run ends", wr->i,
              (unsigned long long)t->cpl, (unsigned long long)t->epoch);
  w->stop = 1;
}

/* It serves: the workload may go on (after a promotion, only once the
 * old writer's lease may have run out: failover.c F3). */
static void serve(struct simwriter *wr)
{
  wr->state = W_SERVING;
  wr->if_epoch = 0;          /* open: a promotion's condition is spent */
  sfo_serving(wr);
  replica_volume_ready(wr->w);
}

/* Look at the core after an event (the driver's waiters, in volume.c). */
static void after_event_core(struct simwriter *wr)
{
  struct world *w = wr->w;
  struct volume *v = wr->v;
  if (v == NULL || wr->stopped)
    return;
  if (wr->state == W_RECOVERING) {
    if (cm_recovering(wr))      /* --community: it may die here (cbinlog.c) */
      return;
    char why[512];
    int rc = rcv_result(v->rcv, why, sizeof why);
    if (rc == 0)
      return;
    int err = rcv_error(v->rcv);
    uint64_t proved = rcv_vdl(v->rcv);
    rcv_counts(v->rcv, &w->res->rcv_asked_again, &w->res->rcv_restarted);
    rcv_free(v->rcv);
    v->rcv = NULL;
    if (rc < 0) {
      world_trace(w, "writer %d: recovery in epoch %llu failed: %s", wr->i,
                  (unsigned long long)wr->epoch, why);
      world_hash(w, "rcvfail", wr->epoch, 0);
      w->res->rcv_failed++;
      if (err == ERR_DATA_LOSS) {     /* never tried again, as in vol_open */
        wr->state = W_FAILED;         /* refused, not interrupted */
        writer_crash(wr);
        data_loss(wr, proved, why);
        return;
      }
      /* Fenced in its recovery: a newer writer opened the volume. vol_open
       * tries again only for lack of a quorum; the engine exits, and the
       * volume is the newer writer's. Opened again here, the two writers
       * fenced each other's recoveries for good once a recovery took
       * longer than REOPEN_MS (a node lost for good: each waited
       * RCV_CONNECT_MS for it): seed 9474, no commit after the heal.
       * (With failover the coordinator says who writes: failover.c.) */
      if (err == ERR_STALE_EPOCH && !sfo_on(w)) {
        world_trace(w, "writer %d: fenced in its recovery: it exits, as the engine does",
                    wr->i);
        writer_crash(wr);       /* down, and not opened again */
        return;
      }
      open_failed(wr);        /* a promotion: on the epoch it took */
      return;
    }
    v->opened = 1;
    wr->state = W_SERVING;
    wr->last_vdl = v->q.vdl;
    w->res->recoveries++;
    world_trace(w, "writer %d: epoch %llu serves from vdl %llu (truncated to %llu)",
                wr->i, (unsigned long long)wr->epoch, (unsigned long long)v->q.vdl,
                (unsigned long long)v->st.trunc_to);
    world_hash(w, "serve", wr->epoch, v->q.vdl);
    workload_recovered(wr, v->q.vdl);
    cm_recovered(wr, v->q.vdl);   /* --community: the file after the open (cbinlog.c) */
    sfo_recovered(wr);
    if (sim_now(w->clock) < wr->serve_after) {
      world_trace(w, "writer %d waits %llu ms for the old writer's lease to run out", wr->i,
                  (unsigned long long)(wr->serve_after - sim_now(w->clock)));
      wr->state = W_WAITING;
      writer_poke_at(wr, wr->serve_after);
    } else {
      serve(wr);
    }
  }
  if (wr->state == W_WAITING && !v->fenced) {
    if (sim_now(w->clock) < wr->serve_after)
      return;
    serve(wr);
  }
  if (wr->state != W_SERVING && wr->state != W_WAITING)
    return;
  if (v->fenced) {
    world_trace(w, "writer %d (epoch %llu) fenced: %s", wr->i,
                (unsigned long long)wr->epoch, v->fenced_why);
    world_hash(w, "fenced", wr->epoch, 0);
    rogue_keep(wr);              /* a fenced old writer's key: the rogue's (rogue.c) */
    workload_acked(wr);
    wr->state = W_FAILED;
    sfo_fenced(wr);
    return;
  }
  workload_acked(wr);
  workload_step(wr);
}

static void after_event(struct simwriter *wr)
{
  after_event_core(wr);
  replica_writer_event(wr);      /* its stream: the VDL, the end, the floor */
}

/* ---- the host's events ------------------------------------------------------ */

/* The open failed: it tries again later, a promotion on the same
 * condition (vol_open_if). */
static void open_failed(struct simwriter *wr)
{
  uint64_t ife = wr->if_epoch, from = wr->promoted_from;
  writer_crash(wr);
  wr->if_epoch = ife;
  wr->promoted_from = from;
  reopen_later(wr);
}

static void open_reply(struct simwriter *wr, const Env *env)
{
  struct world *w = wr->w;
  if (env->body_case != AURALOG__ENVELOPE__BODY_VOLUME) {
    const char *msg = env->body_case == AURALOG__ENVELOPE__BODY_ERROR ? env->error->msg
                                                                     : "unexpected answer";
    world_trace(w, "writer %d: coordinator: %s", wr->i, msg);
    /* A promotion refused (F1: the epoch moved on) is over: the process
     * exits, and its host is the replica's again. */
    if (wr->if_epoch && env->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
        env->error->code == ERR_STALE_EPOCH) {
      sfo_refused(wr, msg);
      wr->if_epoch = wr->promoted_from = 0;
    }
    open_failed(wr);
    return;
  }
  const Auralog__Volume *vd = env->volume;
  if (wr->asked == 0) {
    wr->epoch = vd->epoch;
    if (vd->ticket && vd->ticket->sig.len == sizeof wr->tk_sig) {
      memcpy(wr->tk_sig, vd->ticket->sig.data, sizeof wr->tk_sig);
      wr->tk_len = sizeof wr->tk_sig;
    }
    /* Epochs are durable at the coordinator before anyone hears of them
     * (§4.3): none is handed out twice, even across its crashes. (Not
     * "never one below the newest heard": two answers may cross on their
     * way, a lower epoch arriving after a higher one handed out later;
     * seed 1135 once flagged exactly that.) */
    for (size_t k = 0; k < w->nissued; k++)
      if (w->issued[k] == vd->epoch)
        violation(w, "the coordinator handed out epoch %llu twice: two writers could "
                  "share an epoch", (unsigned long long)vd->epoch);
    w->issued = realloc(w->issued, (w->nissued + 1) * sizeof *w->issued);
    w->issued[w->nissued++] = vd->epoch;
    if (vd->epoch > w->max_issued)
      w->max_issued = vd->epoch;
    sfo_opened(wr, vd);
    rogue_epoch(w);              /* older writers' keys are old now: it strikes */
    if (vd->n_pgs < SIM_PGS) {
      Env req = AURALOG__ENVELOPE__INIT;
      Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
      g.name = VOLUME_NAME;
      g.npgs = SIM_PGS;
      req.req = 2;
      req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
      req.grow_volume = &g;
      io_send(simhost_io(wr->h), wr->coord, &req);
      wr->asked = 1;
      wr->asked_at = sim_now(w->clock);
      return;
    }
  }
  /* Done with the coordinator (its on_down comes now: nothing to do). */
  struct ep *c = wr->coord;
  wr->coord = NULL;
  simhost_io(wr->h)->close(simhost_io(wr->h)->ctx, c);
  /* Set the core up as vol_open does, and recover. */
  struct volume *v = calloc(1, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", VOLUME_NAME);
  snprintf(v->coord, sizeof v->coord, "%s", COORD_ADDR);
  v->id = vd->id;
  v->epoch = wr->epoch;
  v->page_size = vd->page_size;
  v->pg_pages = vd->pg_pages;
  v->io = simhost_io(wr->h);
  v->signer = wr->signer;
  vol_set_ticket(v, wr->tk_sig, wr->tk_len);
  vol_adopt(v, vd);
  v->mseq = vd->mseq;          /* member.h M4: the membership it opens with */
  /* The description, for the read replica's core (replica.c). */
  if (w->vdesc)
    auralog__volume__free_unpacked(w->vdesc, NULL);
  size_t len = auralog__volume__get_packed_size(vd);
  uint8_t *buf = malloc(len ? len : 1);
  auralog__volume__pack(vd, buf);
  w->vdesc = auralog__volume__unpack(NULL, len, buf);
  free(buf);
  objsim_retention(w, vd->id);   /* the operator sets the backup's (once: objsim.c) */
  wr->v = v;
  wr->state = W_RECOVERING;
  world_trace(w, "writer %d: epoch %llu recovers %zu pgs", wr->i,
              (unsigned long long)wr->epoch, v->npgs);
  world_hash(w, "recover", wr->epoch, v->npgs);
  v->rf_xid = cm_last_xid(wr);   /* --community: as community_open (cbinlog.c) */
  cm_recovery_starts(wr);
  v->rcv = rcv_start(v, v->id, v->npgs);
  vcore_wake(v);
}

static void w_msg(void *arg, struct ep *e, const Env *env)
{
  struct simwriter *wr = arg;
  if (sfo_writer_msg(wr, e, env)) {
    after_event(wr);
    return;
  }
  if (wr->state == W_OPENING) {
    if (e == wr->coord)
      open_reply(wr, env);
    return;
  }
  if (wr->v) {
    vcore_on_msg(wr->v, e, env);
    after_event(wr);
  }
}

static void w_up(void *arg, struct ep *e)
{
  struct simwriter *wr = arg;
  if (wr->state == W_OPENING && e == wr->coord) {
    Env req = AURALOG__ENVELOPE__INIT;
    Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
    ov.name = VOLUME_NAME;
    ov.create = 1;
    ov.writer = 1;
    ov.page_size = SIM_PAGE_SIZE;
    ov.binlog = wr->w->o.binlog;
    if (sfo_on(wr->w)) {       /* failover.c: who writes, and a promotion's condition */
      ov.addr = wr->addr;
      ov.if_epoch = wr->if_epoch;
      wr->open_sent = wr->asked_at = sim_now(wr->w->clock);
    }
    /* A promotion opens with the key its replica's beats proved
     * (vfs/promote.c; coord/failover.c gives the epoch only to it); any
     * other open is the operator's engine, a new key each time. */
    uint8_t seed[32], sig[AUTH_SIG_BYTES], bind[AUTH_BIND_BYTES];
    if (ov.if_epoch)
      sfo_promote_seed(wr->w, wr->i, seed);
    else
      sim_key_seed(wr->w, "writer", (uint64_t)wr->i << 32 | wr->opens++, seed);
    auth_signer_seed(&wr->signer, seed);
    wr->tk_len = 0;
    ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, wr->signer.pk};
    req.req = 1;
    req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
    req.open_volume = &ov;
    io_binding(simhost_io(wr->h), e, bind);
    if (!ov.if_epoch)
      role_op_seal(&req, &wr->w->op, bind, sig);
    else                       /* it holds the key it names (roles.c R1) */
      role_writer_seal(&req, &wr->signer, bind, 0, ov.if_epoch, sig);
    io_send(simhost_io(wr->h), e, &req);
    return;
  }
  if (sfo_writer_up(wr, e))
    return;
  if (wr->v) {
    vcore_on_up(wr->v, e);
    after_event(wr);
  }
}

static void w_down(void *arg, struct ep *e)
{
  struct simwriter *wr = arg;
  if (wr->state == W_OPENING && e == wr->coord) {
    wr->coord = NULL;
    writer_crash(wr);
    reopen_later(wr);
    return;
  }
  if (sfo_writer_down(wr, e))
    return;
  if (wr->v) {
    vcore_on_down(wr->v, e);
    vcore_wake(wr->v);
    after_event(wr);
  }
}

struct wtimer {
  struct simwriter *wr;
  unsigned gen;
};

static void w_tick(void *arg)
{
  struct wtimer *t = arg;
  struct simwriter *wr = t->wr;
  if (wr->gen != t->gen || wr->state == W_DOWN) {
    free(t);
    return;
  }
  /* An answer that never comes (lost on a connection that stays up):
   * the request times out, as vol_coord_call's does (failover runs: the
   * others' schedules are what they were). */
  if (wr->state == W_OPENING && !wr->stopped && sfo_on(wr->w) && wr->asked_at &&
      sim_now(wr->w->clock) - wr->asked_at > RPC_TIMEOUT_MS) {
    world_trace(wr->w, "writer %d: the coordinator did not answer its open", wr->i);
    open_failed(wr);
  }
  if (wr->v && !wr->stopped) {  /* a paused process has no timers */
    vcore_tick(wr->v);
    after_event(wr);
  }
  if (wr->gen == t->gen)
    sfo_writer_tick(wr);
  sim_after(wr->w->clock, VOL_TICK_MS, w_tick, t);
}

/* ---- start, crash ------------------------------------------------------------ */

void writer_start(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (wr->state != W_DOWN || wr->held || sfo_start_as_replica(wr))
    return;
  struct simhost_cb cb = {.arg = wr, .on_msg = w_msg, .on_up = w_up, .on_down = w_down};
  if (wr->h == NULL)
    wr->h = simnet_add(w->net, wr->addr, "", &cb);
  else
    simnet_restart(wr->h, &cb);
  wr->gen++;
  wr->state = W_OPENING;
  wr->asked = 0;
  world_trace(w, "writer %d starts", wr->i);
  world_hash(w, "wstart", (uint64_t)wr->i, 0);
  const struct io *io = simhost_io(wr->h);
  wr->coord = io->connect(io->ctx, COORD_ADDR);
  struct wtimer *t = malloc(sizeof *t);
  *t = (struct wtimer){wr, wr->gen};
  sim_after(w->clock, 1 + rng_uniform(&w->rng, VOL_TICK_MS), w_tick, t);
  if (wr->coord == NULL) {
    writer_crash(wr);
    reopen_later(wr);
  }
}

static void reopen(void *arg)
{
  struct simwriter *wr = arg;
  struct world *w = wr->w;
  /* A writer whose open failed tries again, as an engine restarted by its
   * operator would (a new epoch each time); one a fault crashed on purpose
   * is restarted by that fault instead. */
  if (wr->state == W_DOWN && !w->stop)
    writer_start(wr);
}

static void reopen_later(struct simwriter *wr)
{
  sim_after(wr->w->clock, REOPEN_MS, reopen, wr);
}

static void poke(void *arg)
{
  struct wtimer *t = arg;
  struct simwriter *wr = t->wr;
  if (wr->gen == t->gen && wr->state != W_DOWN) {
    wr->poke_at = 0;
    after_event(wr);
  }
  free(t);
}

/* The workload wants to go on at time t (its next transaction). */
void writer_poke_at(struct simwriter *wr, uint64_t t)
{
  if (wr->poke_at && wr->poke_at <= t + 1)
    return;
  struct wtimer *p = malloc(sizeof *p);
  *p = (struct wtimer){wr, wr->gen};
  wr->poke_at = t + 1;
  sim_at(wr->w->clock, t, poke, p);
}

static int free_arg(void *arg, void *ctx)
{
  (void)ctx;
  free(arg);
  return 1;
}

void writer_free_timers(struct world *w)
{
  sim_cancel_fn(w->clock, w_tick, free_arg, NULL);
  sim_cancel_fn(w->clock, poke, free_arg, NULL);
}

/* The writer's process dies: everything in memory is gone. */
void writer_crash(struct simwriter *wr)
{
  if (wr->state == W_DOWN)
    return;
  struct world *w = wr->w;
  if (w->res && wr->state == W_RECOVERING) {
    w->res->recoveries_interrupted++;
    if (wr->v && wr->v->rcv)
      rcv_counts(wr->v->rcv, &w->res->rcv_asked_again, &w->res->rcv_restarted);
  }
  world_trace(w, "writer %d crashes (state %d)", wr->i, wr->state);
  world_hash(w, "wcrash", (uint64_t)wr->i, (uint64_t)wr->state);
  rogue_keep(wr);                /* its key outlives it, for the rogue (rogue.c) */
  if (wr->h)
    simnet_crash(wr->h);
  workload_crashed(wr);
  replica_writer_gone(wr);
  if (wr->v) {
    vcore_free(wr->v);
    free(wr->v);
    wr->v = NULL;
  }
  wr->coord = NULL;
  wr->state = W_DOWN;
  wr->gen++;
  wr->poke_at = 0;
  /* failover.c's: a crash ends a promotion (a restart is in place), a
   * pause, the lease probes' conn. */
  wr->probe = NULL;
  wr->asked_at = 0;
  wr->stopped = 0;
  wr->if_epoch = wr->promoted_from = 0;
  wr->serve_after = 0;
}

void writer_crash_restart(struct simwriter *wr)
{
  writer_crash(wr);
  reopen_later(wr);
}

/* The workload queued work in the core: send it (the driver's async wake). */
void writer_kick(struct simwriter *wr)
{
  if (wr->v)
    vcore_wake(wr->v);
}
