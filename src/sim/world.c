/*
 * world.c: the simulated cluster's hosts (see world.h): the coordinator
 * and six storage nodes, each the real core (coord.h, node.h) on the
 * simulated network and a simulated disk, and the run loop.
 *
 * A node's events, as node/main.c makes them from libuv: every message
 * goes to node_on_msg, and once the messages of one instant are in, the
 * turn ends (node_end_turn: the group commit, then the acks); its timers
 * fire every HEARTBEAT_MS and GOSSIP_MS, from a phase drawn per start. A
 * crash throws the core away after disk_crash() (the open transaction is
 * lost, and lmdb's commits since the node's last checkpoint, but for a
 * prefix drawn from the seed: a power loss) and hfile_crash() (its hot
 * log keeps what was synced, and a drawn part of what was not); a restart
 * opens a new core on the same disk and hot log, which replays the log.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/log.h"
#include "param.h"
#include "sim/simint.h"

#define COORD_ADDR "coord:1"

/* ---- the run's fingerprint ------------------------------------------------ */

static void mix(uint64_t *h, uint64_t x)
{
  *h ^= x + 0x9e3779b97f4a7c15ull + (*h << 6) + (*h >> 2);
  *h *= 0x100000001b3ull;
}

static void mix_str(uint64_t *h, const char *s)
{
  while (s && *s)
    mix(h, (uint8_t)*s++);
}

void world_hash(struct world *w, const char *tag, uint64_t a, uint64_t b)
{
  mix_str(&w->hash, tag);
  mix(&w->hash, a);
  mix(&w->hash, b);
}

void world_trace(struct world *w, const char *fmt, ...)
{
  if (w->o.trace == NULL && !w->o.verbose)
    return;
  char line[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  FILE *f = w->o.trace ? w->o.trace : stderr;
  fprintf(f, "%8llu ev %s\n", (unsigned long long)sim_now(w->clock), line);
}

static void on_net(void *arg, const struct simnet_ev *ev)
{
  struct world *w = arg;
  mix(&w->hash, (uint64_t)ev->kind);
  mix(&w->hash, ev->t);
  mix_str(&w->hash, ev->from);
  mix_str(&w->hash, ev->to);
  mix(&w->hash, (uint64_t)ev->body_case);
  mix(&w->hash, ev->bytes);
  w->res->msgs += ev->kind == SIMNET_DELIVER;
  static const char *const kinds[] = {
    "send", "deliver", "drop", "cutdrop", "lost", "dup", "bad", "connect", "accept", "up",
    "close", "crash", "restart", "fatal", "cut", "heal"};
  if (w->o.trace && ev->kind != SIMNET_SEND && ev->kind >= 0 &&
      ev->kind < (int)(sizeof kinds / sizeof kinds[0]))
    fprintf(w->o.trace, "%8llu net %s %s %s %d %u\n", (unsigned long long)ev->t,
            kinds[ev->kind], ev->from[0] ? ev->from : "-", ev->to[0] ? ev->to : "-",
            ev->body_case, ev->bytes);
}

/* ---- storage nodes -------------------------------------------------------- */

void node_check_dead(struct simnode *sn)
{
  if (sn->n && hfile_dead(sn->hfile))
    node_crash(sn);
}

static void node_turn(void *arg)
{
  struct simnode *sn = arg;
  sn->turn_at = 0;
  if (sn->n)
    node_end_turn(sn->n);
  node_check_dead(sn);
}

static void n_msg(void *arg, struct ep *e, const Env *env)
{
  struct simnode *sn = arg;
  if (sn->n == NULL)
    return;
  if (rogue_from(sn->w, e))
    rogue_node_msg(sn, e, env);    /* the rogue member's: delivered, and checked */
  else
    node_on_msg(sn->n, e, env);
  node_check_dead(sn);
  node_kick(sn);             /* the messages of this instant share one turn */
}

/* One turn (one group commit) for whatever sn took in at this instant:
 * messages, or a backup job its driver handed back (objsim.c). */
void node_kick(struct simnode *sn)
{
  uint64_t now = sim_now(sn->w->clock);
  if (sn->n == NULL || sn->turn_at == now + 1)
    return;
  sn->turn_at = now + 1;
  sim_at(sn->w->clock, now, node_turn, sn);
}

static void n_up(void *arg, struct ep *e)
{
  struct simnode *sn = arg;
  if (sn->n)
    node_on_up(sn->n, e);
}

static void n_down(void *arg, struct ep *e)
{
  struct simnode *sn = arg;
  if (sn->n)
    node_on_down(sn->n, e);
}

static void n_fatal(void *arg, const char *why)
{
  struct simnode *sn = arg;
  violation(sn->w, "node %s stopped: %s", sn->id, why);
}

/* A timer event carries its node and the node's start it belongs to. */
struct ntimer {
  struct simnode *sn;
  unsigned gen;
  int which;                 /* 0: heartbeat, 1: gossip */
};

static void node_timer(void *arg)
{
  struct ntimer *t = arg;
  struct simnode *sn = t->sn;
  if (sn->gen != t->gen || sn->n == NULL) {
    free(t);                 /* the node crashed since: this chain ends */
    return;
  }
  if (t->which == 0)
    node_heartbeat(sn->n);
  else
    gossip_tick(sn->n);
  node_check_dead(sn);
  if (sn->n == NULL) {
    free(t);
    return;
  }
  if (sn->turn_at == 0) {    /* a truncation or a pull may have staged work */
    sn->turn_at = sim_now(sn->w->clock) + 1;
    sim_at(sn->w->clock, sim_now(sn->w->clock), node_turn, sn);
  }
  sim_after(sn->w->clock, t->which == 0 ? HEARTBEAT_MS : GOSSIP_MS, node_timer, t);
}

static void node_timers(struct simnode *sn)
{
  for (int which = 0; which < 2; which++) {
    struct ntimer *t = malloc(sizeof *t);
    *t = (struct ntimer){sn, sn->gen, which};
    uint64_t period = which == 0 ? HEARTBEAT_MS : GOSSIP_MS;
    sim_after(sn->w->clock, 1 + rng_uniform(&sn->w->rng, period), node_timer, t);
  }
}

static struct simhost_cb node_cb(struct simnode *sn)
{
  return (struct simhost_cb){.arg = sn, .on_msg = n_msg, .on_up = n_up,
                             .on_down = n_down, .on_fatal = n_fatal};
}

void sim_key_seed(const struct world *w, const char *what, uint64_t i, uint8_t seed[32])
{
  uint64_t in[2] = {w->o.seed, i};
  crypto_generichash_state st;
  crypto_generichash_init(&st, NULL, 0, 32);
  crypto_generichash_update(&st, (const uint8_t *)what, strlen(what));
  crypto_generichash_update(&st, (const uint8_t *)in, sizeof in);
  crypto_generichash_final(&st, seed, 32);
}

static void node_boot(struct simnode *sn)
{
  char why[256];
  struct world *w = sn->w;
  uint8_t seed[32];
  sn->n = calloc(1, sizeof *sn->n);
  hfile_arm(sn->hfile, 0);   /* a new life: a death planned for the last one is moot */
  sim_key_seed(w, "node identity", (uint64_t)sn->i, seed);   /* its disk's: the same */
  auth_signer_seed(&sn->n->ident, seed);
  if (store_open_hot(&sn->n->st, disk_kv(sn->disk), hfile_file(sn->hfile), SIM_HOTLOG_CKPT,
                     SIM_HOTLOG_CHUNK, why, sizeof why) != 0 ||
      node_init(sn->n, simhost_io(sn->h), sn->id, sn->az, sn->addr, COORD_ADDR, NULL,
                NULL, why, sizeof why) != 0) {
    violation(w, "node %s cannot start: %s", sn->id, why);
    free(sn->n);
    sn->n = NULL;
    return;
  }
  sn->n->gc_peer_wait_ms = SIM_GC_PEER_WAIT_MS;
  objsim_node_up(sn);        /* with backup on, in the runs that have it */
  const struct hotlog *hl = sn->n->st.hl;
  w->res->hl_replays += hl->replayed > 0;
  w->res->hl_replayed += sn->n->st.replayed;
  w->res->hl_damaged += hl->damaged;
  node_timers(sn);
}

/* Add a node's background counters to the run's (it is about to go). */
static void bg_tally(struct world *w, const struct node *n)
{
  w->res->bg_coalesced += n->coalesced;
  w->res->bg_gc_records += n->gc_records;
  w->res->bg_scrubbed += n->scrubbed;
  w->res->bg_damage += n->damage_found + n->st.met_damage;
  w->res->bg_repaired += n->repaired;
  w->res->bg_catchups += n->catchups;
  w->res->truncs_refused += n->truncs_refused + n->st.truncs_refused;
  w->res->truncs_forgotten += n->truncs_forgotten;
}

void node_crash(struct simnode *sn)
{
  if (sn->n == NULL)
    return;
  world_trace(sn->w, "node %s crashes", sn->id);
  world_hash(sn->w, "ncrash", (uint64_t)sn->i, 0);
  check_rcache(sn->w, sn);
  simnet_crash(sn->h);
  bg_tally(sn->w, sn->n);
  /* The open transaction is lost, and lmdb's unsynced commits but for a
   * drawn prefix; the hot log keeps what it synced and a drawn part of
   * the rest (a torn frame, if one was being written). */
  member_node_down(sn);       /* what it held, for the membership checks */
  objsim_node_down(sn);       /* its backup jobs go with it */
  uint64_t torn = hfile_stats(sn->hfile)->torn;
  sn->w->res->hl_commit_deaths += hfile_dead(sn->hfile);
  sn->w->res->hl_checkpoints += sn->n->st.checkpoints;
  disk_crash_keep(sn->disk, rng_u64(&sn->w->rng));
  hfile_crash(sn->hfile, rng_u64(&sn->w->rng));
  sn->w->res->hl_torn += hfile_stats(sn->hfile)->torn - torn;
  node_free(sn->n);
  store_close(&sn->n->st);
  free(sn->n);
  sn->n = NULL;
  sn->gen++;
  sn->turn_at = 0;
}

void node_restart(struct simnode *sn)
{
  /* A node lost for good never comes back; a spare comes up only once the
   * volume is placed (member.c). */
  if (sn->n || sn->lost || (sn->spare && !sn->w->spares_up))
    return;
  world_trace(sn->w, "node %s restarts", sn->id);
  world_hash(sn->w, "nrestart", (uint64_t)sn->i, 0);
  struct simhost_cb cb = node_cb(sn);
  simnet_restart(sn->h, &cb);
  node_boot(sn);
}

/* ---- the coordinator ------------------------------------------------------ */

static void c_msg(void *arg, struct ep *e, const Env *env)
{
  struct world *w = arg;
  if (w->co && rogue_from(w, e))
    rogue_coord_msg(w, e, env);    /* the rogue member's: delivered, and checked */
  else if (w->co)
    coord_on_msg(w->co, e, env);
}

static void c_down(void *arg, struct ep *e)
{
  struct world *w = arg;
  if (w->co)
    coord_on_down(w->co, e);
}

static void coord_timer(void *arg)
{
  struct world *w = arg;
  if (w->co)
    coord_tick(w->co);
  sim_after(w->clock, HEARTBEAT_MS, coord_timer, w);
}

/* The coordinator's process dies: its metadata's open transaction is
 * lost, what it committed (every epoch it handed out) stays. */
void coord_crash(struct world *w)
{
  if (w->co == NULL)
    return;
  world_trace(w, "coordinator crashes");
  world_hash(w, "ccrash", 0, 0);
  simnet_crash(w->coord_h);
  disk_crash(w->coord_disk);
  coord_free(w->co);
  meta_close(&w->co->meta);
  free(w->co);
  w->co = NULL;
}

void coord_restart(struct world *w)
{
  char why[256];
  if (w->co)
    return;
  world_trace(w, "coordinator restarts");
  world_hash(w, "crestart", 0, 0);
  struct simhost_cb ccb = {.arg = w, .on_msg = c_msg, .on_down = c_down};
  simnet_restart(w->coord_h, &ccb);
  w->co = calloc(1, sizeof *w->co);
  uint8_t seed[32];
  sim_key_seed(w, "coordinator", 0, seed);
  auth_signer_seed(&w->co->signer, seed);
  memcpy(w->co->op_pk, w->op.pk, AUTH_PK_BYTES);
  w->co->have_op_pk = 1;
  w->co->failover = sfo_on(w);   /* failover.c */
  w->co->repair_after_ms = SIM_REPAIR_AFTER_MS;   /* member.c */
  if (meta_open_kv(&w->co->meta, disk_kv(w->coord_disk), why, sizeof why) != 0 ||
      coord_init(w->co, simhost_io(w->coord_h), why, sizeof why) != 0)
    violation(w, "the coordinator cannot restart: %s", why);
}

/* ---- the world ------------------------------------------------------------ */

struct world *world_new(const struct sim_opts *o)
{
  char why[256];
  struct world *w = calloc(1, sizeof *w);
  w->o = *o;
  w->res = &w->rs;
  if (w->o.time_ms == 0)
    w->o.time_ms = SIM_TIME_MS;
  rng_seed(&w->rng, o->seed);
  rng_fork(&w->nrng, &w->rng);
  w->hash = 0xcbf29ce484222325ull;
  w->clock = simclock_new();
  struct rng nr;
  rng_fork(&nr, &w->rng);
  w->net = simnet_new(w->clock, &nr);
  simnet_trace(w->net, on_net, w);
  objsim_new(w);             /* the object store, in runs with backup faults */

  w->coord_disk = disk_new();
  w->co = calloc(1, sizeof *w->co);
  struct simhost_cb ccb = {.arg = w, .on_msg = c_msg, .on_down = c_down};
  w->coord_h = simnet_add(w->net, COORD_ADDR, "", &ccb);
  {
    uint8_t seed[32];
    auth_init();
    sim_key_seed(w, "coordinator", 0, seed);
    auth_signer_seed(&w->co->signer, seed);
    sim_key_seed(w, "operator", 0, seed);
    auth_signer_seed(&w->op, seed);
    memcpy(w->co->op_pk, w->op.pk, AUTH_PK_BYTES);
    w->co->have_op_pk = 1;
  }
  if (meta_open_kv(&w->co->meta, disk_kv(w->coord_disk), why, sizeof why) != 0 ||
      coord_init(w->co, simhost_io(w->coord_h), why, sizeof why) != 0)
    die("sim: coordinator: %s", why);
  sim_after(w->clock, HEARTBEAT_MS, coord_timer, w);

  for (int i = 0; i < SIM_NODES; i++) {
    struct simnode *sn = &w->nodes[i];
    sn->w = w;
    sn->i = i;
    /* A1 A2 B1 B2 C1 C2, then the spares A3 B3 C3. */
    sn->spare = i >= SIM_BASE_NODES;
    snprintf(sn->az, sizeof sn->az, "%c", 'A' + sim_node_az(i));
    snprintf(sn->id, sizeof sn->id, "%s%d", sn->az, sn->spare ? 3 : i % 2 + 1);
    snprintf(sn->addr, sizeof sn->addr, "%s:1", sn->id);
    sn->disk = disk_new();
    sn->hfile = hfile_new();
    struct simhost_cb cb = node_cb(sn);
    sn->h = simnet_add(w->net, sn->addr, sn->az, &cb);
    if (sn->spare)
      simnet_crash(sn->h);     /* not yet: member_spares_boot */
    else
      node_boot(sn);
  }
  for (int i = 0; i < SIM_WRITERS; i++) {
    struct simwriter *wr = &w->wr[i];
    wr->w = w;
    wr->i = i;
    /* w1, w2; the third is the replica's host (failover.c) */
    if (i == 2)
      snprintf(wr->addr, sizeof wr->addr, "r1:1");
    else
      snprintf(wr->addr, sizeof wr->addr, "w%d:1", i + 1);
  }
  replica_new(w);
  w->co->failover = sfo_on(w);   /* with a replica, failover (failover.c) */
  w->co->repair_after_ms = SIM_REPAIR_AFTER_MS;   /* member.c: repairs within a run */
  w->members_probe = 1;      /* every run: the writer learns membership by its probes */
  return w;
}

static void writer0_start(void *arg)
{
  writer_start(arg);
}

void world_run(struct world *w, struct sim_result *r)
{
  struct sim_result *rs = w->res;
  nemesis_plan(w);
  /* The nodes register first; then the writer creates the volume. */
  sim_after(w->clock, 300 + rng_uniform(&w->rng, 200), writer0_start, &w->wr[0]);
  uint64_t end = w->o.time_ms + SIM_HEAL_MS + SIM_SETTLE_MS;
  while (!w->stop && sim_step(w->clock)) {
    rs->steps++;
    uint64_t now = sim_now(w->clock);
    if (!w->healed && now >= w->o.time_ms) {
      nemesis_heal_all(w);
      w->healed = 1;
      w->heal_at = now;
    }
    check_step(w);
    if (now >= end || (w->o.max_steps && rs->steps >= w->o.max_steps))
      break;
  }
  if (!w->stop && (w->o.max_steps == 0 || rs->steps < w->o.max_steps)) {
    check_end(w);
    bkcheck_end(w);          /* the backup catches up; restores (bkcheck.c) */
  }
  rs->sim_ms = sim_now(w->clock);
  rs->hash = w->hash;
  rs->sched = w->sched;
  rs->nsched = w->nsched;
  w->sched = NULL;
  *r = *rs;
}

static int free_arg(void *arg, void *ctx)
{
  (void)ctx;
  free(arg);
  return 1;
}

void world_free(struct world *w)
{
  sim_cancel_fn(w->clock, node_timer, free_arg, NULL);
  writer_free_timers(w);
  nemesis_free(w);
  rogue_free(w);
  sfo_free(w);
  replica_free(w);
  for (int i = 0; i < SIM_WRITERS; i++)
    writer_crash(&w->wr[i]);
  for (int i = 0; i < SIM_NODES; i++) {
    struct simnode *sn = &w->nodes[i];
    if (sn->n) {
      disk_crash(sn->disk);
      bg_tally(w, sn->n);
      node_free(sn->n);
      store_close(&sn->n->st);
      free(sn->n);
    }
  }
  if (w->co) {
    coord_free(w->co);
    meta_close(&w->co->meta);
    free(w->co);
  }
  objsim_free(w);
  free(w->bk_vdls);
  simnet_free(w->net);
  simclock_free(w->clock);
  for (int i = 0; i < SIM_NODES; i++) {
    free(w->nodes[i].held);
    disk_free(w->nodes[i].disk);
    hfile_free(w->nodes[i].hfile);
  }
  disk_free(w->coord_disk);
  workload_free(w);
  if (w->vdesc)
    auralog__volume__free_unpacked(w->vdesc, NULL);
  free(w->sched);
  free(w);
}
