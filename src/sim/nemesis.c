/*
 * nemesis.c: the faults a seed mixes into a run, and the final heal.
 *
 * A schedule is drawn from the seed (or given: the shrinker replays a
 * smaller one): about one fault every FAULT_EVERY_MS of the run, each of a
 * kind the run allows (--faults), at a random time, on a random target,
 * healing after a random duration. The kinds:
 *   engine-crash     the serving writer dies; it restarts (a new epoch and
 *                    a recovery) after the duration
 *   node-crash       a storage node dies and restarts on its disk; one in
 *                    three dies during its next group commit instead, after
 *                    writing its hot-log frame and before syncing it (a
 *                    torn frame for the restart to stop at)
 *   az-down          both nodes of an AZ die
 *   az1-down         an AZ and one more node die (writes stall: §2.1)
 *   partition        an AZ is cut off from everyone else
 *   pair-cut         two hosts cannot talk (node-node, or writer-node)
 *   slow             one node's messages take 100-500 ms longer (an outlier,
 *                    a slow disk: its acks and pages come late)
 *   recovery-crash   the writer dies, restarts, and dies again during its
 *                    recovery; then restarts for good
 *   corrupt          a bit flips in a stored record or page version of a
 *                    node, which restarts on it (its load must cope) or goes
 *                    on serving (its reads and scrub must: node/scrub.c); or
 *                    in its hot log, which it restarts on (its replay skips
 *                    the damaged frame)
 *   second-writer    another writer opens the volume (a newer epoch); the
 *                    first must be fenced
 *   drop, dup, reorder   the network loses, repeats, reorders messages
 *   az1-swap         an AZ and one more node go down; when they come back,
 *                    the other three go down at that instant and the writer
 *                    dies: its recovery reads only what the first three
 *                    hold (within the model: three down at any time)
 *   split-write      the writer is cut off from all but one to three nodes
 *                    (K), so its commits reach only K (not durable), then
 *                    it dies; it recovers with every node up (recovery may
 *                    keep those partial commits) and commits on top; then
 *                    K goes down and the writer dies again: what the first
 *                    recovery kept must not rest on K alone
 *   coord-crash      the coordinator dies and restarts on its metadata: nodes
 *                    register again, and an epoch it handed out is never
 *                    handed out again
 *   stale-read       a node serves every page without its newest record,
 *                    with no error (a disk that silently lost records, the
 *                    lab fault `stale`): the writer's page LSN check
 *                    (vfs/pagelsn.h) must refuse those pages. Not in
 *                    `all` (world.h F_ALL): with recoveries, a stale node
 *                    can still show an old page the writer has no way to
 *                    know is old (the gaps pagelsn.h lists)
 *   stale-trunc      partial commits on one or two nodes (K), the writer
 *                    dies, K goes down, and the next recovery (which does
 *                    not see K, so truncates what K holds) is cut short
 *                    after a few ms; K comes back and two of the others go
 *                    down, and a third recovery (which sees K, not the
 *                    truncation) keeps K's commits; then everyone is back
 *                    and the old truncation spreads by gossip: it must not
 *                    cut what the newer epoch kept (rule T)
 *   replica-crash    the read replica (replica.c) dies, its cache and stream
 *                    with it; it restarts after the duration and subscribes
 *                    again
 *   stream-cut       the writer-replica stream breaks and cannot be made
 *                    again for the duration; the replica keeps serving reads
 *                    at its old read point meanwhile, which the writer's
 *                    PGMRPL no longer holds: node GC may pass it, and such
 *                    a read must be refused, never answered wrong
 *   replica-silent   the replica's acks stop reaching its writer for the
 *                    duration (the stream stays up): past
 *                    SIM_REPLICA_GONE_MS the writer's PGMRPL lets it go
 *                    (feed.c), node GC may pass its point, and its reads
 *                    there must be refused, never answered wrong
 *   writer-lost      the writer dies and its host stays down for 1-7 s, long
 *                    enough, often, for the coordinator's detector
 *                    (WRITER_LOST_MS) to promote the replica; then the
 *                    operator's `cluster up` (failover.c) brings the host
 *                    back: as the writer in place if no promotion took an
 *                    epoch (after a wait for one: the race F1 settles), as
 *                    the replica if one did
 *   writer-stop      the writer's process pauses for 1-7 s (nothing in or
 *                    out, no timer) and resumes with all it had: a newer
 *                    writer may exist by then, which must fence it (F2)
 *   manual-failover  `auralog failover` at a random moment, the writer
 *                    alive or not; half the time the operator also
 *                    restarts the writer in place a moment later, racing
 *                    the promotion for the next epoch (F1: exactly one of
 *                    the two opens gets it)
 *   promote-crash    a failover is asked, and the promoted writer dies in a
 *                    round of its recovery (F4: a promotion interrupted
 *                    halfway is only a lost writer: the detector, the
 *                    replica or a restart in place takes over)
 *   (These seven only in runs with a replica: --faults replicas, world.h;
 *   so is failover.)
 *   rogue            a member with the cluster key and no role (rogue.c)
 *                    attacks for the duration: writer-opens and promotions
 *                    it was not given, truncations forged or signed with a
 *                    fenced old writer's key (out of bounds) on every node
 *                    path, drops, faults and failovers without the
 *                    operator, lease probes and reports without the
 *                    writer's proof, beats in a replica's name. Each must
 *                    be refused or change nothing (roguecheck.c checks
 *                    which), and the shadow model must find nothing lost
 *   rogue-unfinished the same, also holding the keys of writers that died
 *                    inside their recovery: it can cut commits acknowledged
 *                    and never announced (a gap rogue.c describes). Not in
 *                    `all` (world.h F_ALL): asked for by name
 *   store-down       the object store the nodes back up to (objsim.c)
 *                    fails every call for the duration, then answers again
 *                    with all it held: uploads and listings are tried again,
 *                    the backup point stands still meanwhile, and node GC
 *                    must wait for it (invariant 11)
 *   store-slow       the store's calls take hundreds of ms for the duration
 *   store-rot        objects in the store are damaged where they lie: one as
 *                    it starts and one more every ROT_EVERY_MS while it lasts,
 *                    bytes flipped or cut short (torn); for good, until
 *                    retention deletes it or an upload of the same key
 *                    replaces it.
 *                    Restores must go around it or refuse (restore.c R4;
 *                    bkcheck.c checks which). The nodes never read an
 *                    object back, so nothing else sees it
 *   (These three only in runs with the store: --faults backup, world.h.)
 *   slow-recovery    the writer dies and restarts into a recovery that
 *                    must wait (vfs/rcvround.c rule W): half the time an AZ and
 *                    one more node answer 2.2-4 s late, past RCV_ANSWER_MS,
 *                    so no round has a write quorum without one of them
 *                    and each must wait, asking again; half the time the
 *                    AZ is cut off (the simulated network refuses its
 *                    connections: down, to recovery) and the other node
 *                    dies, and comes back 2.5-4.5 s later with the AZ
 *                    still cut off: attempts fail for want of a quorum
 *                    until it is back, then one serves. Never a failed
 *                    open for want of patience. Not in `all`: asked for by
 *                    name
 *
 * The paper's fault model (§2.1): at most an AZ and one more node are
 * unavailable at once (the object store is not a node: its faults count
 * for none). A fault that would take more is skipped, unless
 * the run is --beyond (liveness only). At time_ms everything heals.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/simint.h"

#define FAULT_EVERY_MS 2500     /* one fault per this much run, on average */
#define FAULT_MIN_MS   200      /* a fault lasts at least ... */
#define FAULT_MAX_MS   6000     /* ... and at most this long */
#define SLOW_MS        400      /* the extra delay of a slow node's messages */
#define ROT_EVERY_MS   1000     /* store-rot damages one more object this often */

const char *const fault_names[F_NKINDS] = {
  "engine-crash", "node-crash", "az-down", "az1-down", "partition", "pair-cut", "slow",
  "recovery-crash", "corrupt", "second-writer", "drop", "dup", "reorder", "az1-swap",
  "split-write", "stale-trunc", "coord-crash", "stale-read", "replica-crash", "stream-cut",
  "replica-silent", "writer-lost", "writer-stop", "manual-failover", "promote-crash",
  "rogue", "rogue-unfinished", "node-lost", "store-down", "store-slow", "store-rot",
  "slow-recovery",
};

/* The nodes of AZ az: its two base nodes and its spare. */
static unsigned az_nodes(int az)
{
  unsigned m = 0;
  for (int i = 0; i < SIM_NODES; i++)
    if (sim_node_az(i) == az)
      m |= 1u << i;
  return m;
}

/* Would taking the nodes in mask down (besides those down now, and those
 * lost) leave every PG within an AZ plus one node? Counted over each PG's
 * current segments (member.c): a node that hosts none of a PG's is no
 * loss to it, and a lost node's segments count as unavailable until a
 * repair moves them. (With every PG on the six base nodes, as before any
 * repair, this is the node rule it always was.) */
static int within_model(const struct world *w, unsigned mask)
{
  unsigned down = mask;
  for (int i = 0; i < SIM_NODES; i++)
    if (w->nodes[i].n == NULL || w->nodes[i].down_by || w->nodes[i].lost)
      down |= 1u << i;
  for (int k = 0; k < SIM_PGS + (w->o.binlog != 0); k++) {   /* the binlog PG too */
    unsigned unav = down & member_pg_nodes(w, k < SIM_PGS ? k : BINLOG_PG);
    int ok = 0;
    for (int az = 0; az < 3 && !ok; az++) {
      unsigned rest = unav & ~az_nodes(az);
      ok = rest == 0 || (rest & (rest - 1)) == 0;
    }
    if (!ok)
      return 0;
  }
  return 1;
}

static struct simwriter *current(struct world *w)
{
  struct simwriter *best = NULL;
  for (int i = 0; i < SIM_WRITERS; i++)
    if (w->wr[i].state != W_DOWN && w->wr[i].state != W_FAILED &&
        (best == NULL || w->wr[i].epoch >= best->epoch))
      best = &w->wr[i];
  return best;
}

/* ---- one fault's start and end ------------------------------------------------ */

struct act {
  struct world *w;
  struct fault_ev ev;
  int phase;                 /* 0: start, 1: heal, 2+: kind-specific steps */
  unsigned mask;             /* nodes it took down */
  unsigned keep;             /* split-write, stale-trunc: K; slow-recovery: its nodes */
  uint64_t epoch;            /* stale-trunc: the epoch of the recovery cut short */
  uint64_t since;            /* ... and when it started */
  struct simwriter *wr;      /* the writer it crashed */
  struct simhost *other;     /* pair-cut: the other end */
  unsigned count;            /* store-rot: objects damaged so far */
};

static void act_run(void *arg);

static void later(struct act *a, uint64_t dt, int phase)
{
  a->phase = phase;
  sim_after(a->w->clock, dt, act_run, a);
}

static void nodes_take(struct act *a, unsigned mask, int crash)
{
  struct world *w = a->w;
  for (int i = 0; i < SIM_NODES; i++)
    if (mask & (1u << i)) {
      w->nodes[i].down_by |= 1u << a->ev.kind;
      if (crash)
        node_crash(&w->nodes[i]);
    }
  a->mask = mask;
}

static void nodes_give(struct act *a, int restart)
{
  struct world *w = a->w;
  for (int i = 0; i < SIM_NODES; i++)
    if (a->mask & (1u << i)) {
      w->nodes[i].down_by &= ~(1u << a->ev.kind);
      if (restart && w->nodes[i].down_by == 0)
        node_restart(&w->nodes[i]);
    }
}

static void start(struct act *a)
{
  struct world *w = a->w;
  const struct fault_ev *e = &a->ev;
  int node = e->target % SIM_BASE_NODES, az = e->target % 3;
  unsigned azmask = az_nodes(az);
  unsigned other = 1u << ((2 * ((az + 1 + e->target2 % 2) % 3)) + e->target2 / 2 % 2);
  unsigned mask = 0;
  if (e->kind == F_NODE_LOST && e->target2 % 2)
    node = SIM_BASE_NODES + az;         /* half the time a spare (it may host segments) */
  switch (e->kind) {
  case F_NODE_CRASH: case F_CORRUPT: case F_NODE_LOST: mask = 1u << node; break;
  case F_AZ_DOWN: case F_PARTITION: mask = azmask; break;
  case F_AZ1_DOWN: case F_AZ1_SWAP: mask = azmask | other; break;
  case F_SLOW_RECOVERY: mask = e->target2 % 2 ? azmask | other : 0; break;
  case F_PAIR_CUT: mask = e->target2 % 2 ? 1u << node : 0; break;
  default: break;
  }
  if (e->kind == F_NODE_LOST && (w->lost_one || w->nodes[node].lost)) {
    /* One node lost for good per run: a second in its AZ would leave a
     * PG no spare to repair onto (a liveness limit of a 9-node world, not
     * of the protocol). */
    world_trace(w, "fault %s skipped: a node is already lost", fault_names[e->kind]);
    free(a);
    return;
  }
  if (mask && !w->o.beyond && !within_model(w, mask)) {
    world_trace(w, "fault %s skipped: beyond an AZ and one node", fault_names[e->kind]);
    free(a);
    return;
  }
  w->res->faults[e->kind]++;
  world_trace(w, "fault %s (target %d/%d) for %llu ms", fault_names[e->kind], e->target,
              e->target2, (unsigned long long)e->dur);
  world_hash(w, "fault", (uint64_t)e->kind, (uint64_t)e->target);
  struct simnet_conf *nc = simnet_conf(w->net);
  switch (e->kind) {
  case F_ENGINE_CRASH:
  case F_RECOVERY_CRASH:
    if ((a->wr = current(w)) == NULL)
      break;
    writer_crash(a->wr);
    if (e->kind == F_RECOVERY_CRASH) {
      later(a, 5 + e->dur % 300, 2);      /* restart soon, to crash it again */
      return;
    }
    break;
  case F_NODE_CRASH:
    if (e->target2 % 3 == 0) {  /* dies in its next commit (hfile.h) */
      nodes_take(a, mask, 0);
      if (w->nodes[node].n)     /* a node already down has no commit to die in */
        hfile_arm(w->nodes[node].hfile, 1);
      break;
    }
    nodes_take(a, mask, 1);
    break;
  case F_AZ_DOWN: case F_AZ1_DOWN:
    nodes_take(a, mask, 1);
    break;
  case F_NODE_LOST:
    /* For good: never restarted, its disk never read again. The
     * coordinator must repair its segments onto spares (member.h M7). */
    w->lost_one = 1;
    w->nodes[node].lost = 1;
    w->res->mb_lost++;
    nodes_take(a, mask, 1);
    free(a);
    return;
  case F_AZ1_SWAP:
    nodes_take(a, mask, 1);
    later(a, e->dur, 5);
    return;
  case F_SPLIT_WRITE: case F_STALE_TRUNC: {
    if ((a->wr = current(w)) == NULL || a->wr->h == NULL || a->wr->state != W_SERVING)
      break;
    /* K: the nodes the writer still reaches. */
    int nk = e->kind == F_STALE_TRUNC ? 1 + e->target2 % 2 : 1 + e->target2 % 3;
    a->keep = 0;
    for (int j = 0; j < nk; j++)
      a->keep |= 1u << ((node + j * (1 + e->target2 / 7 % 5)) % SIM_BASE_NODES);
    for (int i = 0; i < SIM_NODES; i++)
      if (!(a->keep & (1u << i)))
        simnet_cut(w->nodes[i].h, a->wr->h);
    later(a, 50 + e->dur % 400, 8);     /* commits pile up on K alone */
    return;
  }
  case F_STALE_READ:
    if (w->nodes[node].n)
      w->nodes[node].n->stale = 1;
    break;
  case F_CORRUPT: {
    /* A bit flips: in a stored record or page version, with the node
     * restarted on it (its load must cope) or under a running node (its
     * reads and scrub must: node/scrub.c); or in its hot log, which the
     * node then replays from (the damaged frame is skipped). */
    uint64_t r = (uint64_t)e->target2 * 2654435761u + e->dur;
    int how = (int)(e->target2 % 4), live = how == 2;
    if (how == 3)
      hfile_corrupt(w->nodes[node].hfile, r);
    else if (how == 0 || !disk_corrupt_db(w->nodes[node].disk, "imgs", r))
      disk_corrupt(w->nodes[node].disk, r);
    nodes_take(a, live ? 0 : mask, !live);
    break;
  }
  case F_PARTITION:
    nodes_take(a, mask, 0);
    simnet_cut_az(w->net, w->nodes[COPIES_PER_AZ * az].az);
    break;
  case F_PAIR_CUT: {
    struct simhost *x = w->nodes[node].h, *y;
    if (e->target2 % 2) {
      struct simwriter *wr = current(w);
      if (wr == NULL || wr->h == NULL)
        break;
      y = wr->h;
      nodes_take(a, mask, 0);
    } else {
      y = w->nodes[(node + 1 + e->target2 / 2 % (SIM_BASE_NODES - 1)) % SIM_BASE_NODES].h;
    }
    simnet_cut(x, y);
    a->other = y;
    break;
  }
  case F_SLOW:                /* one node, an outlier (§2.1): slow acks, slow reads */
    simnet_slow(w->nodes[node].h, SLOW_MS / 4 + (uint32_t)(e->target2 % SLOW_MS));
    break;
  case F_SLOW_RECOVERY:
    if ((a->wr = current(w)) == NULL || a->wr->state != W_SERVING) {
      nodes_give(a, 0);
      free(a);
      return;
    }
    writer_crash(a->wr);
    a->keep = azmask | other;
    if (e->target2 % 2) {       /* the AZ cut off, the other node down */
      nodes_take(a, other, 1);
      nodes_take(a, azmask, 0);
      a->mask = azmask | other;
      simnet_cut_az(w->net, w->nodes[COPIES_PER_AZ * az].az);
    } else {                    /* three nodes slow past RCV_ANSWER_MS */
      for (int i = 0; i < SIM_NODES; i++)
        if (a->keep & (1u << i))
          simnet_slow(w->nodes[i].h, 2200 + (uint32_t)(e->target2 % 1800));
    }
    later(a, 5 + e->dur % 100, 50);
    return;
  case F_SECOND_WRITER:
    /* w1 or w2 (with failover, w2: w1 and r1 are failover.c's) */
    for (int i = sfo_on(w) ? 1 : 0; i < 2; i++)
      if (w->wr[i].state == W_DOWN && current(w) != NULL) {
        writer_start(&w->wr[i]);
        break;
      }
    break;
  case F_DROP: nc->drop_ppm = 20000; nc->drop_resets = 1; break;
  case F_COORD_CRASH: coord_crash(w); break;
  case F_DUP: nc->dup_ppm = 20000; break;
  case F_REORDER: nc->reorder = 1; break;
  case F_REPLICA_CRASH: replica_crash(w); break;
  case F_STREAM_CUT: replica_cut(w, 1); break;
  case F_REPLICA_SILENT: replica_silent(w, 1); break;
  case F_WRITER_LOST:
    if ((a->wr = current(w)) == NULL)
      break;
    writer_crash(a->wr);
    a->wr->held = 1;            /* no restart but the operator's, at the heal */
    later(a, 1000 + e->dur, 1);
    return;
  case F_WRITER_STOP:
    if ((a->wr = current(w)) == NULL || a->wr->stopped) {
      a->wr = NULL;            /* already paused: its own fault resumes it */
      break;
    }
    sfo_stop(a->wr, 1);
    later(a, 1000 + e->dur, 1);
    return;
  case F_MANUAL_FAILOVER:
    sfo_ask_failover(w);
    if (e->target2 % 2 && (a->wr = &w->wr[sfo_writer_slot(w)])->state == W_SERVING) {
      later(a, (uint64_t)e->target2 % 400, 30);   /* ... and a restart in place */
      return;
    }
    a->wr = NULL;
    break;
  case F_PROMOTE_CRASH:
    sfo_ask_failover(w);
    a->since = sim_now(w->clock);
    later(a, 1, 31);
    return;
  case F_ROGUE: case F_ROGUE_UNFINISHED:
    rogue_fault(w, 1, e->kind == F_ROGUE_UNFINISHED);
    break;
  case F_STORE_DOWN: case F_STORE_SLOW: objsim_fault(w, e->kind, 1); break;
  case F_STORE_ROT:
    /* Which objects and which bytes come from the event (a schedule
     * replays it). Damage has no end: nothing to heal. */
    objsim_rot(w, ((uint64_t)e->target2 * 2654435761u + e->dur) * 31 + a->count++);
    a->since = sim_now(w->clock);
    if (e->dur > ROT_EVERY_MS) {
      later(a, ROT_EVERY_MS, 40);
      return;
    }
    free(a);
    return;
  }
  later(a, e->dur, 1);
}

static void heal(struct act *a)
{
  struct world *w = a->w;
  const struct fault_ev *e = &a->ev;
  struct simnet_conf *nc = simnet_conf(w->net);
  world_trace(w, "fault %s heals", fault_names[e->kind]);
  world_hash(w, "heal", (uint64_t)e->kind, 0);
  switch (e->kind) {
  case F_ENGINE_CRASH: case F_RECOVERY_CRASH:
    if (a->wr && a->wr->state == W_DOWN)
      writer_start(a->wr);
    break;
  case F_NODE_CRASH: case F_AZ_DOWN: case F_AZ1_DOWN: case F_CORRUPT:
    if (e->kind == F_NODE_CRASH)       /* it may not have committed since */
      hfile_arm(w->nodes[e->target % SIM_BASE_NODES].hfile, 0);
    nodes_give(a, 1);
    break;
  case F_PARTITION:
    simnet_heal_az(w->net, w->nodes[COPIES_PER_AZ * (e->target % 3)].az);
    nodes_give(a, 0);
    break;
  case F_PAIR_CUT:
    if (a->other)
      simnet_heal(w->nodes[e->target % SIM_BASE_NODES].h, a->other);
    nodes_give(a, 0);
    break;
  case F_SLOW: simnet_slow(w->nodes[e->target % SIM_BASE_NODES].h, 0); break;
  case F_SLOW_RECOVERY:
    if (e->target2 % 2) {
      simnet_heal_az(w->net, w->nodes[COPIES_PER_AZ * (e->target % 3)].az);
      nodes_give(a, 1);        /* the other node, if still down, restarts too */
    } else {
      for (int i = 0; i < SIM_NODES; i++)
        if (a->keep & (1u << i))
          simnet_slow(w->nodes[i].h, 0);
    }
    break;
  case F_STALE_READ:
    if (w->nodes[e->target % SIM_BASE_NODES].n)
      w->nodes[e->target % SIM_BASE_NODES].n->stale = 0;
    break;
  case F_DROP: nc->drop_ppm = 0; break;
  case F_COORD_CRASH: coord_restart(w); break;
  case F_DUP: nc->dup_ppm = 0; break;
  case F_REORDER: nc->reorder = 0; break;
  case F_REPLICA_CRASH: replica_restart(w); break;
  case F_STREAM_CUT: replica_cut(w, 0); break;
  case F_REPLICA_SILENT: replica_silent(w, 0); break;
  case F_WRITER_LOST: case F_PROMOTE_CRASH:
    if (a->wr)
      a->wr->held = 0;
    sfo_cluster_up(w);
    break;
  case F_WRITER_STOP:
    if (a->wr)
      sfo_stop(a->wr, 0);      /* resumes: fenced, if a newer writer exists (F2) */
    break;
  case F_MANUAL_FAILOVER: sfo_cluster_up(w); break;
  case F_ROGUE: case F_ROGUE_UNFINISHED:
    rogue_fault(w, 0, e->kind == F_ROGUE_UNFINISHED);
    break;
  case F_STORE_DOWN: case F_STORE_SLOW: objsim_fault(w, e->kind, 0); break;
  default: break;
  }
  free(a);
}

static void act_run(void *arg)
{
  struct act *a = arg;
  /* After the final heal nothing goes down again: a fault in the middle
   * of its steps just ends (nemesis_heal_all brought everything back). */
  if (a->w->stop || (a->w->healed && a->phase != 1)) {
    free(a);
    return;
  }
  switch (a->phase) {
  case 0: start(a); break;
  case 1: heal(a); break;
  case 2:                    /* recovery-crash: restart, then crash mid-recovery */
    if (a->wr->state == W_DOWN)
      writer_start(a->wr);
    later(a, 2 + a->ev.dur % 40, 3);
    break;
  case 3:
    writer_crash(a->wr);
    later(a, a->ev.dur, 1);
    break;
  case 5: {                  /* az1-swap: the other three go, the writer dies */
    unsigned first = a->mask;
    nodes_give(a, 1);
    unsigned second = ~first & ((1u << SIM_NODES) - 1);
    if (!within_model(a->w, second)) {
      free(a);
      break;
    }
    nodes_take(a, second, 1);
    if ((a->wr = current(a->w)) != NULL)
      writer_crash(a->wr);
    later(a, 5 + a->ev.dur % 50, 6);
    break;
  }
  case 6:                    /* ... restarts and recovers from the first three */
    if (a->wr && a->wr->state == W_DOWN)
      writer_start(a->wr);
    later(a, 500 + a->ev.dur % 3000, 7);
    break;
  case 7:
    nodes_give(a, 1);
    free(a);
    break;
  case 8:                    /* the writer dies with commits on K alone */
    writer_crash(a->wr);
    for (int i = 0; i < SIM_NODES; i++)
      simnet_heal(a->w->nodes[i].h, a->wr->h);
    if (a->ev.kind == F_STALE_TRUNC) {
      if (!within_model(a->w, a->keep)) {
        free(a);
        break;
      }
      nodes_take(a, a->keep, 1);         /* the next recovery cannot see K */
      writer_start(a->wr);
      a->since = sim_now(a->w->clock);
      later(a, 1, 21);                   /* ... and is cut short in its round 3 */
      break;
    }
    writer_start(a->wr);                 /* recovers with everyone up */
    later(a, 40 + a->ev.dur % 160, 10);  /* before gossip copies K's commits */
    break;
  case 10:                   /* K goes, and the writer dies again */
    if (!within_model(a->w, a->keep)) {
      free(a);
      break;
    }
    nodes_take(a, a->keep, 1);
    writer_crash(a->wr);
    later(a, 5 + a->ev.dur % 50, 11);
    break;
  case 11:
    writer_start(a->wr);
    later(a, 500 + a->ev.dur % 2000, 7);
    break;
  case 21: {                 /* stale-trunc: wait for round 3 of that recovery */
    struct simwriter *wr = a->wr;
    if (wr->state == W_RECOVERING && rcv_round(wr->v->rcv) == 3) {
      a->epoch = wr->epoch;
      later(a, a->ev.dur % 4, 22);
    } else if (wr->state == W_SERVING || wr->state == W_DOWN ||
               sim_now(a->w->clock) - a->since > 4000) {
      nodes_give(a, 1);          /* missed it: K back, nothing more */
      free(a);
    } else {
      later(a, 1, 21);
    }
    break;
  }
  case 50:                   /* slow-recovery: the writer restarts into it */
    if (a->wr->state == W_DOWN)
      writer_start(a->wr);
    if (a->ev.target2 % 2) {
      later(a, 2500 + a->ev.dur % 2000, 51);
      break;
    }
    later(a, 3000 + a->ev.dur, 1);
    break;
  case 51: {                 /* ... the other node comes back, the AZ still cut off */
    struct world *w = a->w;
    unsigned other = a->keep & ~az_nodes((int)(a->ev.target % 3));
    for (int i = 0; i < SIM_NODES; i++)
      if (other & (1u << i)) {
        w->nodes[i].down_by &= ~(1u << a->ev.kind);
        if (w->nodes[i].down_by == 0)
          node_restart(&w->nodes[i]);
      }
    a->mask &= ~other;
    later(a, 2000 + a->ev.dur % 2000, 1);
    break;
  }
  case 40: {                 /* store-rot: one more object, while it lasts */
    const struct fault_ev *e = &a->ev;
    objsim_rot(a->w, ((uint64_t)e->target2 * 2654435761u + e->dur) * 31 + a->count++);
    if (sim_now(a->w->clock) - a->since + ROT_EVERY_MS < e->dur)
      later(a, ROT_EVERY_MS, 40);
    else
      free(a);
    break;
  }
  case 30:                   /* manual-failover: the writer restarts in place, racing */
    if (a->wr->state != W_DOWN && !a->wr->held && !a->wr->stopped) {
      writer_crash(a->wr);
      writer_start(a->wr);     /* the replica, if the promotion already took the epoch */
    }
    later(a, a->ev.dur, 1);
    break;
  case 31: {                 /* promote-crash: the promoted writer dies in round r */
    struct simwriter *p = NULL;
    for (int i = 0; i < SIM_WRITERS; i++)
      if (a->w->wr[i].promoted_from && (a->w->wr[i].state == W_WAITING ||
          (a->w->wr[i].state == W_RECOVERING &&
           rcv_round(a->w->wr[i].v->rcv) >= 1 + a->ev.target2 % 3)))
        p = &a->w->wr[i];
    if (p) {
      writer_crash(p);
      p->held = 1;
      a->wr = p;
      later(a, a->ev.dur, 1);
    } else if (sim_now(a->w->clock) - a->since > 6000) {
      free(a);                 /* no promotion came */
    } else {
      later(a, 1, 31);
    }
    break;
  }
  case 22: {                 /* cut short; K back, the truncation's holders down */
    writer_crash(a->wr);
    nodes_give(a, 1);
    unsigned holders = 0;
    for (int i = 0; i < SIM_NODES; i++) {
      struct node *n = a->w->nodes[i].n;
      for (size_t k = 0; n && k < n->nsegs; k++)
        for (size_t t = 0; t < n->segs[k]->ntruncs + n->segs[k]->ntombs; t++)
          if ((t < n->segs[k]->ntruncs ? n->segs[k]->truncs[t].epoch
                                       : n->segs[k]->tombs[t - n->segs[k]->ntruncs].epoch) ==
              a->epoch)
            holders |= 1u << i;
    }
    if (holders == 0 || !within_model(a->w, holders)) {
      writer_start(a->wr);
      free(a);
      break;
    }
    nodes_take(a, holders, 1);   /* the next recovery never hears of it */
    writer_start(a->wr);
    later(a, 300 + a->ev.dur % 1000, 7);  /* then everyone is back: gossip */
    break;
  }
  }
}

/* ---- the schedule ---------------------------------------------------------------- */

static void sched_add(struct world *w, const struct fault_ev *e)
{
  if (w->nsched == w->capsched) {
    w->capsched = w->capsched ? 2 * w->capsched : 16;
    w->sched = realloc(w->sched, w->capsched * sizeof *w->sched);
  }
  w->sched[w->nsched++] = *e;
}

void nemesis_plan(struct world *w)
{
  if (w->o.sched) {
    for (size_t i = 0; i < w->o.nsched; i++)
      sched_add(w, &w->o.sched[i]);
  } else if (w->o.faults) {
    uint64_t span = w->o.time_ms > 3000 ? w->o.time_ms - 2000 : 1000;
    size_t n = (size_t)(w->o.time_ms / FAULT_EVERY_MS);
    n = n / 2 + rng_uniform(&w->nrng, n + 1);
    for (size_t i = 0; i < n; i++) {
      /* Uniform over the kinds allowed, so that a run of given kinds draws
       * the same schedule however many kinds exist. */
      struct fault_ev e;
      uint64_t pick = rng_uniform(&w->nrng, (uint64_t)__builtin_popcount(w->o.faults));
      for (e.kind = 0; !(w->o.faults & (1u << e.kind)) || pick-- > 0; e.kind++)
        ;
      e.t = 1000 + rng_uniform(&w->nrng, span);
      e.target = (int)rng_uniform(&w->nrng, 6);
      e.target2 = (int)rng_uniform(&w->nrng, 1000);
      e.dur = rng_range(&w->nrng, FAULT_MIN_MS, FAULT_MAX_MS);
      sched_add(w, &e);
    }
  }
  for (size_t i = 0; i < w->nsched; i++) {
    struct act *a = calloc(1, sizeof *a);
    a->w = w;
    a->ev = w->sched[i];
    sim_at(w->clock, a->ev.t, act_run, a);
  }
}

/* The end of the faults: every node up, every cut healed, the network
 * clean, and a writer serving (or on its way). */
void nemesis_heal_all(struct world *w)
{
  world_trace(w, "final heal");
  world_hash(w, "healall", 0, 0);
  simnet_heal_all(w->net);
  coord_restart(w);
  struct simnet_conf *nc = simnet_conf(w->net);
  simnet_conf_default(nc);
  for (int i = 0; i < SIM_NODES; i++) {
    w->nodes[i].down_by = 0;
    node_restart(&w->nodes[i]);        /* not a lost one (world.c) */
    if (w->nodes[i].n)
      w->nodes[i].n->stale = 0;
  }
  replica_cut(w, 0);
  replica_silent(w, 0);
  rogue_heal(w);
  objsim_heal(w);            /* the store answers again, at its pace */
  if (sfo_on(w)) {            /* failover.c: every host back in its role */
    for (int i = 0; i < SIM_WRITERS; i++) {
      w->wr[i].held = 0;
      if (w->wr[i].stopped)
        sfo_stop(&w->wr[i], 0);
    }
    sfo_cluster_up(w);
    return;
  }
  replica_restart(w);
  if (current(w) == NULL) {
    for (int i = 0; i < SIM_WRITERS; i++)
      if (w->wr[i].state == W_FAILED)
        writer_crash(&w->wr[i]);
    writer_start(&w->wr[0]);
  }
}

/* Pending fault events own their struct act: free them with the clock. */
int nemesis_drop(void *arg, void *ctx)
{
  (void)ctx;
  free(arg);
  return 1;
}

void nemesis_free(struct world *w)
{
  sim_cancel_fn(w->clock, act_run, nemesis_drop, NULL);
}
