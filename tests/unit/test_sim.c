/*
 * test_sim.c: the deterministic simulator (src/sim/, `auralog sim`), tried
 * as a developer would use it: a seed replays bit for bit; a few hundred
 * seeds of the default scenario (every fault kind, within the AZ+1 model)
 * find no violation; the safety issue's scenarios replay as fixed
 * schedules that pass on this code and fail with the bug each one found;
 * every planted bug (bugs.h) is caught within a few hundred seeds, so the
 * simulator can never quietly stop finding anything; --shrink keeps a
 * failing schedule failing; and a data-loss alarm is a violation within
 * the fault model, a run's end beyond it. With a read replica (--faults
 * replicas), its reads are checked against the shadow model in every run,
 * and a replica that reads past its VDL is caught. Those runs have failover
 * (sim/failover.c): promotions happen, old writers are fenced, nothing
 * acknowledged is lost, and a promotion that opens from an epoch the
 * volume has left (promote-no-if-epoch) is caught. The rogue member
 * (sim/rogue.c, in the default mix) attacks with every request a role
 * needs, and what it changes is only what the rules allow; its old
 * writer's truncations catch trunc-unbounded-scan. With the object store
 * (--faults backup), node GC never passes what the backup holds and
 * restores equal the shadow model; gc-past-backup is caught.
 *
 * AURALOG_SIM_SEEDS sets how many clean seeds to run (default 200).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bugs.h"
#include "roles.h"
#include "lib/log.h"
#include "sim/world.h"

#define ALL_FAULTS F_ALL
/* The default mix before the rogue member joined it: the seeds below that
 * once failed replay the schedules they failed with. */
#define PRE_ROGUE (F_ALL & ~(1u << F_ROGUE))
#define BUG_SEEDS 300            /* a planted bug must be caught within this many */

static struct sim_opts opts(uint64_t seed, uint32_t faults, unsigned bugs)
{
  return (struct sim_opts){.seed = seed, .time_ms = SIM_TIME_MS, .faults = faults,
                           .bugs = bugs};
}

static uint32_t fault1(const char *name, size_t len)
{
  for (int k = 0; k < F_NKINDS; k++)
    if (strlen(fault_names[k]) == len && strncmp(fault_names[k], name, len) == 0)
      return 1u << k;
  fail_msg("no fault kind %.*s", (int)len, name);
  return 0;
}

/* A comma-separated list of fault kinds, as --faults takes it. */
static uint32_t fault(const char *list)
{
  uint32_t f = 0;
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    f |= fault1(p, n);
    p += n + (p[n] == ',');
  }
  return f;
}

/* The failover faults alone (with them: a replica, and failover). */
#define FAILOVER_FAULTS "writer-lost,writer-stop,manual-failover,promote-crash"

static void run(const struct sim_opts *o, struct sim_result *r)
{
  sim_run(o, r);
  free(r->sched);
  r->sched = NULL;
}

static void a_seed_replays_bit_for_bit(void **state)
{
  (void)state;
  struct sim_opts o = opts(11, ALL_FAULTS, 0);
  struct sim_result a, b, c;
  run(&o, &a);
  run(&o, &b);
  assert_int_equal(a.violations, 0);
  assert_true(a.steps > 1000 && a.tx_acked > 50 && a.reads_checked > 20);
  assert_true(a.hash == b.hash);
  assert_int_equal(a.steps, b.steps);
  assert_int_equal(a.tx_acked, b.tx_acked);
  o.seed = 12;
  run(&o, &c);
  assert_true(c.hash != a.hash);
}

static void a_few_hundred_seeds_find_nothing(void **state)
{
  (void)state;
  const char *env = getenv("AURALOG_SIM_SEEDS");
  uint64_t n = env ? strtoull(env, NULL, 10) : 200;
  uint64_t tx = 0, acked = 0, reads = 0, recov = 0, nfaults = 0;
  uint64_t rogue[RG_NKINDS][RG_NOUTCOMES] = {{0}}, sent = 0, refused = 0;
  for (uint64_t seed = 1; seed <= n; seed++) {
    struct sim_opts o = opts(seed, ALL_FAULTS, 0);
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu)", (unsigned long long)seed,
               r.first, (unsigned long long)seed);
    tx += r.tx_shipped;
    acked += r.tx_acked;
    reads += r.reads_checked;
    recov += r.recoveries;
    for (int k = 0; k < F_NKINDS; k++)
      nfaults += r.faults[k];
    for (int k = 0; k < RG_NKINDS; k++)
      for (int x = 0; x < RG_NOUTCOMES; x++)
        rogue[k][x] += r.rogue[k][x];
  }
  printf("# %llu seeds: %llu transactions (%llu acknowledged), %llu reads checked, "
         "%llu recoveries, %llu faults, no violation\n", (unsigned long long)n,
         (unsigned long long)tx, (unsigned long long)acked, (unsigned long long)reads,
         (unsigned long long)recov, (unsigned long long)nfaults);
  assert_true(acked > n * 50 && recov > n && nfaults > n * 2);
  /* The rogue member (sim/rogue.c) attacked with every kind, and what took
   * effect is only what the rules allow: an old writer's truncation within
   * the bound, a beat for an address no replica holds (rogue.c checks each
   * and the shadow model the rest: a violation would have stopped a run). */
  for (int k = 0; k < RG_NKINDS; k++) {
    uint64_t m = 0;
    for (int x = 0; x < RG_NOUTCOMES; x++)
      m += rogue[k][x];
    if (m == 0)
      fail_msg("the rogue member never attacked with %s", rogue_names[k]);
    if (k != RG_TRUNC_OLD && k != RG_BEAT)
      assert_int_equal(rogue[k][RG_TAKEN], 0);
    sent += m;
    refused += rogue[k][RG_REFUSED];
  }
  printf("# the rogue member: %llu attacks, %llu refused, %llu old truncations taken within "
         "the bound, no violation\n", (unsigned long long)sent, (unsigned long long)refused,
         (unsigned long long)rogue[RG_TRUNC_OLD][RG_TAKEN]);
  assert_true(sent > n * 5 && refused > sent / 2);
}

/* Seeds that once failed, each with what it found (replay: auralog sim
 * --seed N). They must pass from then on. */
static const struct {
  uint64_t seed;
  const char *found;
  const char *faults;        /* NULL: all, as it was then (PRE_ROGUE) */
} once_failed[] = {
  /* A partition dropped a restarted node's Assign on a connection that
   * stayed up; the node never learned the coordinator's key, so it could
   * check no epoch ticket and its segments never caught up. Now it
   * registers again until an Assign answers (node.c send_register). */
  {3985, "node A2 pg 0: the segment did not converge"},
  /* A node back after its peers freed the records it lacked started to
   * catch up by page versions at one peer's GC point; the peers it did
   * not pull from went on freeing past it, and no one could build the
   * pages there any more. Now it starts again at a point one can
   * (bg.c maybe_catch_up). */
  {69, "node A1 pg 0: the segment did not converge (catch-up)"},
  {154, "node A1 pg 0: the segment did not converge (catch-up)"},
  /* With corrupt faults only: a catching-up node knew one peer (it pulled
   * only peers known to be ahead), whose page version had a floor above
   * the catch-up point after its own repair; and that peer's GC, held by
   * the node behind, never lifted the floor. Now a behind node asks
   * peers it never heard from too, a repair fetches the page at the GC
   * point when it can (no floor), a stuck catch-up takes a later point,
   * and a pull says the puller's GC point (replay: auralog sim --seed 4
   * --faults corrupt). */
  {4, "node C1 pg 1: the segment did not converge (catch-up, corrupt)", "corrupt"},
  {26, "node A2 pg 1: the segment did not converge (catch-up, corrupt)", "corrupt"},
  {91, "node A2 pg 1: the segment did not converge (catch-up, corrupt)", "corrupt"},
  /* GC and coalescing went by min(SCL, VDL heard) and froze a segment on a
   * branch a recovery cut (now: the writer's pgmrpl_tail, bg.c own_point);
   * a damaged copy on disk was taken for a duplicate of the good one; a
   * catch-up kept asking peers that had refused its pages at that point
   * (bg.c peer_refused). */
  {7297, "node A1 pg 0: the segment did not converge (a cut branch)", NULL},
  {307, "node B1 pg 2: the segment did not converge (damaged copy)", NULL},
  {9641, "node B1 pg 1: the segment did not converge (catch-up refused)", NULL},
  /* The writer named, as the PG's last record at or below its PGMRPL, the
   * last one freed, above the PGMRPL when a read in flight was older; the
   * segments refused the Append for it (vcore.c send_append). */
  {23191, "node A2 pg 2: the segment did not converge (pgmrpl_tail refused)", NULL},
  /* Failover (sim/failover.c), both in the simulator's hosts: a promoted
   * writer's retry started on a host the replica had taken meanwhile (two
   * processes on one host: a use-after-free); a writer paused while
   * opening lost its OpenVolume on a connection that stayed up and waited
   * for ever (the open now times out, as vol_coord_call's does). */
  {1901, "host r1 ran the replica and a writer at once", FAILOVER_FAULTS},
  {228, "liveness: an open waited for ever", FAILOVER_FAULTS},
  /* The rogue member, in the default mix ("all"): an old writer's signed
   * range that only some segments took was carried into the next
   * recovery's scan, every other segment refused the scan and no writer
   * opened again (496; now recovery carries only ranges every answering
   * segment's bound allows, vfs/open.c bounded_everywhere); that filter
   * checked only a range's start, and each failed recovery's range grew
   * another LAL (7691); a segment that missed round 3 of epoch E took an
   * old key's range of E below E's own and lost commits E had kept (3253,
   * 3837, 8654; now bound B3, node/segment.c seg_trunc_ok). */
  {496, "liveness: no writer opened (a range only some segments took)", "all"},
  {7691, "liveness: each failed recovery's range grew by LAL", "all"},
  {3253, "a commit of epoch E lost to an old key's range of E (B3)", "all"},
  {3837, "a commit of epoch E lost to an old key's range of E (B3)", "all"},
  {8654, "a segment did not converge: an old key's range of E (B3)", "all"},
  /* Two writers fenced each other's recoveries for good: each, fenced in
   * its recovery, opened again 500 ms later with a newer epoch, while a
   * node lost for good made every recovery wait RCV_CONNECT_MS for it.
   * The engine exits when fenced; so does the simulated one now. */
  {9474, "liveness: two writers fenced each other's recoveries for ever", "all"},
  /* Recovery's early stop (vfs/open.c quorum_in_hand) indexed round 3's
   * next segments (slots nk and up) past arrays of nk: the heap was
   * overwritten ("free(): invalid next size"), with replicas' faults. */
  {604, "a recovery overran its quorum arrays (a PG with next segments)", "replicas"},
  /* Recovery 3 went on without node B1, restarting; the rogue member then
   * installed on B1 a range of epoch 3 signed with its key, above the one
   * recovery 3 wrote, and B1 refused the real one for good (segment.c B3):
   * its SCL stayed on the cut branch, its peers held their GC for it.
   * A segment stuck behind peers now catches up by pages (bg.c). */
  {5919, "a segment that missed a recovery never converged (a stolen key's range)", "all"},
  /* A repair began while the spare's AZ was partitioned: the spare's
   * Assign was lost, it never hosted the next segment its PG listed, and
   * the move never finished. A whole heartbeat that lacks a segment the
   * node hosts now gets it the Assign again (coord/member.c). Replay:
   * auralog sim --seed 2690 --schedule
   * 2216:node-lost:0:534:5151,4175:partition:0:918:813 */
  {2690, "liveness: pg 0 still has 7 segments (a spare's lost Assign)", "backup"},
};

static void seeds_that_once_failed_pass(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof once_failed / sizeof once_failed[0]; i++) {
    const char *f = once_failed[i].faults;
    struct sim_opts o = opts(once_failed[i].seed,
                             f == NULL                ? PRE_ROGUE
                             : !strcmp(f, "all")      ? ALL_FAULTS
                             : !strcmp(f, "replicas") ? F_ALL | F_REPLICAS
                             : !strcmp(f, "backup")   ? F_ALL | F_BACKUP
                                                      : fault(f),
                             0);
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu (once: %s): %s (replay: auralog sim --seed %llu)",
               (unsigned long long)once_failed[i].seed, once_failed[i].found, r.first,
               (unsigned long long)once_failed[i].seed);
  }
}

/* Longer runs (60 s of faults, as `--time 60000`): segments forget the
 * truncations every member of their PG holds (rule TF, node/tforget.c),
 * and nothing is lost to it (1006 forgets dozens); a node that lost an
 * Assign gets it again (1236: a node stayed on a PG's mepoch 6 while the
 * PG moved to 18, refused by every peer, and never converged; now the
 * coordinator resends it when a heartbeat shows it behind,
 * coord/member.c member_check_node). */
static void long_runs_forget_truncations_and_resend_lost_assigns(void **state)
{
  (void)state;
  static const uint64_t seeds[] = {1006, 1236};
  uint64_t forgotten = 0;
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    struct sim_opts o = opts(seeds[i], ALL_FAULTS, 0);
    o.time_ms = 60000;
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --time 60000)",
               (unsigned long long)seeds[i], r.first, (unsigned long long)seeds[i]);
    forgotten += r.truncs_forgotten;
  }
  assert_true(forgotten > 0);
}

static void beyond_the_model_nothing_is_lost_and_commits_resume(void **state)
{
  (void)state;
  for (uint64_t seed = 1; seed <= 30; seed++) {
    struct sim_opts o = opts(seed, ALL_FAULTS, 0);
    o.beyond = 1;
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --beyond)",
               (unsigned long long)seed, r.first, (unsigned long long)seed);
  }
}

/* The data-loss alarm (vfs/open.c): within the fault model it never rings,
 * so one that does is a violation (here a recovery that, planted, proves
 * the VDL from LSN 0 after node GC freed records); beyond it the alarm is
 * how a writer must end when acknowledged commits are gone: the run stops
 * there with no violation, and says so. */
static void a_data_loss_alarm_is_a_violation_within_the_model_only(void **state)
{
  (void)state;
  struct sim_opts o = opts(1, ALL_FAULTS, 1u << BUG_SCAN_FROM_ZERO);
  struct sim_result r;
  run(&o, &r);
  assert_int_equal(r.violations, 1);
  if (strstr(r.first, "recovery raised a data-loss alarm within the fault model: data loss: "
                      "recovery proves VDL ") == NULL)
    fail_msg("seed 1 --bug scan-from-zero: %s", r.first);
  assert_int_equal(r.data_loss_alarms, 0);
  printf("# %s\n", r.first);
  o.beyond = 1;
  run(&o, &r);
  if (r.violations)
    fail_msg("seed 1 --beyond --bug scan-from-zero: %s", r.first);
  assert_int_equal(r.data_loss_alarms, 1);
}

/* The safety issue's scenarios, each as a fixed schedule (a seed and the
 * fault kinds it draws from) that reproduced its bug: it passes on this
 * code, and fails with that bug planted back. */
static const struct {
  const char *what, *faults, *bug;
  uint64_t seed;
} scenarios[] = {
  /* Seed 3 until recovery began to go on without nodes that never
   * connected (vfs/open.c quorum_in_hand): its interrupted recoveries
   * then spread their ranges to other segments; 66 (of 16 in 31-300)
   * now reproduces the same loss with the bug planted. */
  {"an old epoch's truncation, spread late, cuts a newer epoch's commits",
   "stale-trunc", "trunc-any-epoch", 66},
  {"a commit on one or two segments, kept by recovery, lost by the next",
   "split-write", "no-adopt", 3},
  {"a page read below the read point", "none", "need-freed", 3},
  {"recovery trusts the VDL hint over the records", "engine-crash", "vdl-from-hint", 1},
  {"an old writer acknowledges after a new one recovered", "second-writer", "no-fence", 27},
  {"an AZ and a node return as the other three go: 3 of 6 was never durable",
   "az1-swap", "wq3", 1},
  {"a new writer reuses LSNs a crashed one handed out", "split-write", "no-trunc", 1},
  {"a node serves pages without their newest record, and the writer believes it",
   "stale-read", "no-page-check", 1},
  {"a promotion racing a restart in place opens a second writer for one lost one (F1)",
   "manual-failover", "promote-no-if-epoch", 8},
};

static void the_safety_scenarios_replay(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
    uint32_t faults = strcmp(scenarios[i].faults, "none") ? fault(scenarios[i].faults) : 0;
    int bug = bug_by_name(scenarios[i].bug);
    assert_true(bug >= 0);
    struct sim_opts o = opts(scenarios[i].seed, faults, 0);
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("%s: seed %llu --faults %s: %s", scenarios[i].what,
               (unsigned long long)scenarios[i].seed, scenarios[i].faults, r.first);
    o.bugs = 1u << bug;
    run(&o, &r);
    if (r.violations == 0)
      fail_msg("%s: seed %llu --faults %s --bug %s no longer reproduces it",
               scenarios[i].what, (unsigned long long)scenarios[i].seed,
               scenarios[i].faults, scenarios[i].bug);
    printf("# %s: with --bug %s: %s\n", scenarios[i].what, scenarios[i].bug, r.first);
  }
}

static void every_planted_bug_is_caught(void **state)
{
  (void)state;
  for (int b = 0; b < BUG_N; b++) {
    /* A damaged page version met by a read before the scrub finds it:
     * the simulator's reads meet one too seldom to count on (one page in
     * 18, one node in 6, a window of a second or two); unit_pages plants
     * the damage under a read and catches this bug there. */
    if (b == BUG_STALE_VERSION)
      continue;
    uint64_t seed;
    struct sim_result r = {0};
    for (seed = 1; seed <= BUG_SEEDS; seed++) {
      /* no-page-check shows only when a node serves stale pages. */
      /* The replica's bugs need a replica in the world. */
      /* promote-no-if-epoch needs a promotion racing another open. */
      /* trunc-unbounded-scan needs the rogue member (rogue.c) holding an
       * old writer's key: writers that recover, then die. */
      /* gc-past-backup needs the object store (objsim.c). */
      int rep = b == BUG_REPLICA_PAST_VDL || b == BUG_NO_REPLICA_FLOOR;
      /* no-rollforward needs the community binlog's file (cbinlog.c). */
      struct sim_opts o = opts(seed, b == BUG_NO_PAGE_CHECK        ? fault("stale-read")
                                     : b == BUG_PROMOTE_NO_IF_EPOCH ? fault("manual-failover")
                                     : b == BUG_TRUNC_UNBOUNDED_SCAN
                                       ? fault("rogue,recovery-crash,engine-crash")
                                     /* a finish before the next segment holds what
                                      * F alone counted: records on exactly Vw
                                      * (an AZ down), then a repair (member.h M4) */
                                     : b == BUG_FINISH_EARLY
                                       ? fault("node-crash,az-down,node-lost")
                                     : rep                          ? F_ALL | F_REPLICAS
                                     : b == BUG_GC_PAST_BACKUP      ? F_ALL | F_BACKUP
                                                                    : ALL_FAULTS,
                               1u << b);
      o.community = b == BUG_NO_ROLLFORWARD;
      run(&o, &r);
      if (r.violations)
        break;
    }
    if (seed > BUG_SEEDS)
      fail_msg("planted bug %s not caught in %d seeds", bug_names[b], BUG_SEEDS);
    printf("# bug %s: caught by seed %llu: %s\n", bug_names[b], (unsigned long long)seed,
           r.first);
  }
}

/* A read replica in the world (replica.c): its reads, from its cache and
 * from storage at ra_need, equal the shadow's page at its read point in
 * every seed; some storage reads meet a node whose GC passed a read point
 * no longer held (after a stream cut, a crash, or a silence past
 * SIM_REPLICA_GONE_MS) and are refused, none
 * while the writer's PGMRPL held it; a run with it replays bit for bit;
 * and a run without --faults replicas has no replica at all (so older
 * seeds' runs are what they were). */
static void a_replica_reads_what_the_shadow_says(void **state)
{
  (void)state;
  uint64_t reads = 0, cache = 0, refused = 0, gc = 0, held = 0, applied = 0, starts = 0;
  uint64_t faults[3] = {0, 0, 0}, lapses = 0;
  int seeds_with_reads = 0;
  const int n = 40;
  for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
    struct sim_opts o = opts(seed, F_ALL | F_REPLICAS, 0);
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --faults replicas)",
               (unsigned long long)seed, r.first, (unsigned long long)seed);
    seeds_with_reads += r.replica_reads > 10;
    reads += r.replica_reads;
    cache += r.replica_cache_reads;
    refused += r.replica_refused;
    gc += r.replica_gc_refused;
    held += r.replica_gc_held;
    applied += r.replica_applied;
    starts += r.replica_starts;
    faults[0] += r.faults[F_REPLICA_CRASH];
    faults[1] += r.faults[F_STREAM_CUT];
    faults[2] += r.faults[F_REPLICA_SILENT];
    lapses += r.replica_lapses;
  }
  printf("# %d seeds with a replica: %llu streams, %llu reads checked (%llu from its cache), "
         "%llu records applied, %llu storage reads refused (%llu below a GC point, %llu "
         "while held); %llu replica crashes, %llu stream cuts, %llu silences (%llu floors let "
         "go)\n", n,
         (unsigned long long)starts, (unsigned long long)reads, (unsigned long long)cache,
         (unsigned long long)applied, (unsigned long long)refused, (unsigned long long)gc,
         (unsigned long long)held, (unsigned long long)faults[0],
         (unsigned long long)faults[1], (unsigned long long)faults[2],
         (unsigned long long)lapses);
  assert_int_equal(seeds_with_reads, n);
  assert_true(cache > 0 && cache < reads);
  assert_true(applied > reads && starts > (uint64_t)n);
  assert_true(faults[0] > 0 && faults[1] > 0 && faults[2] > 0 && lapses > 0);
  assert_true(gc > 0);
  assert_int_equal(held, 0);
  /* Bit for bit, with the replica. */
  struct sim_opts o = opts(5, F_ALL | F_REPLICAS, 0);
  struct sim_result a, b;
  run(&o, &a);
  run(&o, &b);
  assert_true(a.hash == b.hash && a.steps == b.steps && a.replica_reads == b.replica_reads);
  /* Without: no replica at all, and no failover. */
  o.faults = F_ALL;
  run(&o, &a);
  assert_int_equal(a.replica_starts + a.replica_reads, 0);
  assert_int_equal(a.fo_promotions + a.fo_manual + a.fo_fenced, 0);
}

/* Continuous backup (--faults backup: sim/objsim.c, sim/bkcheck.c): the
 * nodes stage their PGs' log to the simulated object store through
 * store-down, store-slow and store-rot faults among all the others; after
 * every event no segment's GC point is above what the store can restore
 * of its PG (invariant 11), and at the end the backup catches up with the
 * last durable commit and restores, at commits drawn from what it holds,
 * to the latest point and by time, equal the shadow model page for page,
 * going around damaged objects or refusing only where nothing can. A run
 * replays bit for bit; and a run without the backup kinds has no store at
 * all (older seeds' runs are what they were). */
static void backup_runs_keep_gc_below_the_backup_and_restore_the_shadow(void **state)
{
  (void)state;
  uint64_t objects = 0, failed = 0, restores = 0, pages = 0, checks = 0, downs = 0, slows = 0;
  uint64_t rotted = 0, around = 0, by_time = 0, refused = 0;
  const int n = 40;
  for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
    struct sim_opts o = opts(seed, F_ALL | F_BACKUP, 0);
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --faults backup)",
               (unsigned long long)seed, r.first, (unsigned long long)seed);
    objects += r.bk_objects;
    failed += r.bk_failed;
    restores += r.bk_restores;
    pages += r.bk_pages_checked;
    checks += r.bk_gc_checks;
    downs += r.faults[F_STORE_DOWN];
    slows += r.faults[F_STORE_SLOW];
    rotted += r.bk_rotted;
    around += r.bk_replanned;
    by_time += r.bk_by_time;
    refused += r.bk_refused;
  }
  printf("# %d seeds with backup: %llu objects stored, %llu store calls failed (%llu "
         "store-downs, %llu store-slows), %llu damaged (store-rot), %llu GC points checked, "
         "%llu restores checked (%llu pages; %llu by time, %llu around damaged objects), %llu "
         "refused rightly, no violation\n", n, (unsigned long long)objects,
         (unsigned long long)failed, (unsigned long long)downs, (unsigned long long)slows,
         (unsigned long long)rotted, (unsigned long long)checks, (unsigned long long)restores,
         (unsigned long long)pages, (unsigned long long)by_time, (unsigned long long)around,
         (unsigned long long)refused);
  assert_true(restores > 0 && pages > 0 && checks > 0 && objects > (uint64_t)n);
  assert_true(downs > 0 && failed > 0 && slows > 0);
  assert_true(rotted > 0 && by_time > 0);
  /* Bit for bit, with the store. */
  struct sim_opts o = opts(7, F_ALL | F_BACKUP, 0);
  struct sim_result a, b;
  run(&o, &a);
  run(&o, &b);
  assert_true(a.hash == b.hash && a.steps == b.steps && a.bk_objects == b.bk_objects);
  /* Without: no store, nothing staged. */
  o.faults = F_ALL;
  run(&o, &a);
  assert_int_equal(a.bk_objects + a.bk_restores + a.bk_gc_checks, 0);
}

/* The enhanced binlog (--binlog; vfs/ship.c B1, sim/blcheck.c): under
 * every fault of `all`, and with the replica and failover, each binlog
 * segment holds, up to the end it vouches for, every durable commit's
 * events once (BL2) and no truncated commit's (BL1); and a run without
 * the binlog is the run it was (its trace hash). */
static void binlog_runs_hold_each_durable_commit_once(void **state)
{
  (void)state;
  uint64_t segs = 0, events = 0, acked = 0, recov = 0;
  const int n = 40;
  for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
    uint32_t faults = seed % 4 == 0 ? F_ALL | F_REPLICAS : F_ALL;
    struct sim_opts o = opts(seed, faults, 0);
    o.binlog = 1;
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --binlog%s)",
               (unsigned long long)seed, r.first, (unsigned long long)seed,
               faults & F_REPLICAS ? " --faults replicas" : "");
    segs += r.bl_segments;
    events += r.bl_events;
    acked += r.tx_acked;
    recov += r.recoveries;
  }
  printf("# %d seeds with the binlog: %llu binlog segments checked, %llu transactions' "
         "events in them (%llu commits acknowledged, %llu recoveries), no violation\n", n,
         (unsigned long long)segs, (unsigned long long)events, (unsigned long long)acked,
         (unsigned long long)recov);
  assert_true(segs >= (uint64_t)n * 4 && events > acked && recov > 0);
  /* Seeds that once failed: 548, a corrupt binlog record the scrub passed
   * over (it skipped binlog segments), never fetched again: the segment
   * did not converge (replay: auralog sim --seed 548 --binlog). */
  static const uint64_t once[] = {548};
  for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
    struct sim_opts o = opts(once[i], F_ALL, 0);
    o.binlog = 1;
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --binlog)",
               (unsigned long long)once[i], r.first, (unsigned long long)once[i]);
  }
  /* Bit for bit, with the binlog; and without it nothing is checked. */
  struct sim_opts o = opts(5, F_ALL, 0);
  o.binlog = 1;
  struct sim_result a, b;
  run(&o, &a);
  run(&o, &b);
  assert_true(a.hash == b.hash && a.steps == b.steps && a.bl_events == b.bl_events);
  o.binlog = 0;
  run(&o, &a);
  assert_int_equal(a.bl_segments + a.bl_events, 0);
}

/* The community binlog (--community; vfs/community.c, sim/cbinlog.c):
 * each writer's two-phase commit between the volume and its own file,
 * the engine dying in its windows and in recoveries that roll forward,
 * under every fault of `all` and, one seed in four, the replica and
 * failover: every durable commit has its frame (CM1), and no recovery
 * truncates, or leaves in the file, a transaction its host's file had
 * synced (CM2). The planted bug no-rollforward breaks CM2
 * (every_planted_bug_is_caught). */
static void community_runs_keep_the_file_and_the_volume_agreeing(void **state)
{
  (void)state;
  uint64_t frames = 0, rolled = 0, interrupted = 0, acked = 0;
  const int n = 30;
  for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
    uint32_t faults = seed % 4 == 0 ? F_ALL | F_REPLICAS : F_ALL;
    struct sim_opts o = opts(seed, faults, 0);
    o.community = 1;
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --community%s)",
               (unsigned long long)seed, r.first, (unsigned long long)seed,
               faults & F_REPLICAS ? " --faults replicas" : "");
    frames += r.cm_frames;
    rolled += r.cm_rolled;
    interrupted += r.cm_rf_interrupted;
    acked += r.tx_acked;
  }
  printf("# %d seeds with the community binlog: %llu frames, %llu transactions rolled "
         "forward, %llu of those recoveries interrupted, %llu commits acknowledged, no "
         "violation\n", n, (unsigned long long)frames, (unsigned long long)rolled,
         (unsigned long long)interrupted, (unsigned long long)acked);
  assert_true(frames >= acked && rolled > 0 && interrupted > 0);
  /* Seeds that once failed: 895 with the replica, a replica subscribed
   * while a commit was prepared got the commit record without the records
   * it closes and never caught up (vcore_feed_start now starts it at the
   * XID); 4279 and 4485, a second writer's interrupted recovery truncated
   * a prepared transaction whose frame the first writer's file held, an
   * orphan that CM2 now tells from its own host's recovery. */
  static const struct {
    uint64_t seed;
    uint32_t faults;
  } once[] = {{895, F_ALL | F_REPLICAS}, {4279, F_ALL}, {4485, F_ALL}};
  for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
    struct sim_opts o = opts(once[i].seed, once[i].faults, 0);
    o.community = 1;
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --community%s)",
               (unsigned long long)once[i].seed, r.first, (unsigned long long)once[i].seed,
               once[i].faults & F_REPLICAS ? " --faults replicas" : "");
  }
  /* Bit for bit; and without it no file. */
  struct sim_opts o = opts(7, F_ALL, 0);
  o.community = 1;
  struct sim_result a, b;
  run(&o, &a);
  run(&o, &b);
  assert_true(a.hash == b.hash && a.steps == b.steps && a.cm_frames == b.cm_frames);
  o.community = 0;
  run(&o, &a);
  assert_int_equal(a.cm_prepares + a.cm_frames, 0);
}

/* Failover (sim/failover.c), with its faults alone: the coordinator's
 * detector and `auralog failover` promote the replica, whose writer opens
 * conditionally (F1: the next epoch or none; some promotions lose the race
 * to a restart in place and are refused), serves only once the old
 * writer's lease ran out (F3), and keeps every acknowledged commit; old
 * writers are fenced (F2) and their hosts come back as the replica; and
 * the default seeds' runs, which have no replica, are what they were (a
 * few trace hashes, from before failover was in the simulator). */
static void failover_promotes_and_loses_nothing(void **state)
{
  (void)state;
  uint64_t prom = 0, took = 0, served = 0, manual = 0, fenced = 0, back = 0, acked = 0;
  const int n = 30;
  for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
    struct sim_opts o = opts(seed, fault(FAILOVER_FAULTS), 0);
    struct sim_result r;
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --faults %s)",
               (unsigned long long)seed, r.first, (unsigned long long)seed, FAILOVER_FAULTS);
    prom += r.fo_promotions;
    took += r.fo_promoted;
    served += r.fo_promoted_served;
    manual += r.fo_manual;
    fenced += r.fo_fenced;
    back += r.fo_as_replica;
    acked += r.tx_acked;
  }
  printf("# %d seeds of failover: %llu promotions (%llu took an epoch, %llu served), %llu "
         "manual, %llu old writers fenced, %llu hosts back as the replica, %llu commits "
         "acknowledged, none lost\n", n, (unsigned long long)prom, (unsigned long long)took,
         (unsigned long long)served, (unsigned long long)manual, (unsigned long long)fenced,
         (unsigned long long)back, (unsigned long long)acked);
  assert_true(prom > (uint64_t)n && took > (uint64_t)n / 2 && served > (uint64_t)n / 2);
  assert_true(manual > 0 && fenced > 0 && back > 0);
  /* Runs without a replica: as before failover (auralog sim --seed N).
   * Seed 1's hash changed once since, with the same events: a few
   * messages grew when a writer's Appends began to carry the older
   * truncations its own rests on (Append.before) and GC to keep one that
   * a newer one rests on (node/store_pages.c). All three changed when
   * the rogue member (sim/rogue.c) joined the default mix: a schedule is
   * drawn over one kind more, so each seed mixes other faults; and a
   * segment's SegInfo grew (the VDLs it heard, its GC point: vfs/open.c
   * checks a learned truncation against every segment's bound). And
   * again, with the same events (steps and message counts unchanged),
   * when a GossipPull began to carry its byte bound (max_bytes) and a
   * heartbeat's SegStat what gossip brought (pulled; node/gossip.c).
   * And when membership joined every run (member.h): a spare per AZ,
   * node-lost in the default mix, a repair after SIM_REPAIR_AFTER_MS, and
   * the writer's lease probes in every run (they carry membership). And
   * when a node began to answer fences and a writer's truncations with
   * the turn's commit (node/trunc.c node_defer), the coordinator to tell
   * a tick's membership steps at its end (coord/member.c), and idle
   * gossip to keep pulling while a peer is known behind (node/gossip.c):
   * the same messages, in another order. And when reads began to go to
   * the segments near the fastest (vfs/read.c): the same reads, some to
   * other segments (seed 3 two steps fewer). And when a writer began to
   * tell an idle PG's segments a PGMRPL that moved (vtell.c
   * vtell_pgmrpl): 36 more messages a seed, the same transactions. And
   * when a repair's window began to be refilled at the turn's end, not
   * after each answer (node/bg.c): seed 3, which repairs, changed. And
   * when the versions GC makes began to count as coalesced (a
   * heartbeat's count): the same steps and messages. And when recovery
   * began to go on without nodes that had not connected once every PG had
   * a write quorum of answers (vfs/open.c quorum_in_hand): seed 1, whose
   * recoveries meet such a node, changed; 2 and 3 did not. (The record
   * cache, node/store_rcache.c, changed none of the three.) And when an
   * Append began to carry the PG's last record at or below the VDL
   * (vdl_tail, for the backup: node/nbackup.c): every Append's bytes, so
   * all three; the simulator's nodes back up nothing. And when the
   * truncations a recovery's scans bring began to commit with the node's
   * turn, answered after it (node/trunc.c): seed 1, whose recoveries
   * carry earlier truncations to segments that lack them, changed; 2 and
   * 3 did not. */
  static const struct {
    uint64_t seed, hash;
  } before[] = {{1, 0x013268968bd16b1full}, {2, 0xe3930de0140e6094ull}, {3, 0xd17a72162f06b342ull}};
  for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
    struct sim_opts o = opts(before[i].seed, ALL_FAULTS, 0);
    struct sim_result r;
    run(&o, &r);
    if (r.hash != before[i].hash)
      fail_msg("seed %llu without a replica: hash %#llx, pinned %#llx (a change to the "
               "messages or their order changes it: pin the new one if that is why)",
               (unsigned long long)before[i].seed, (unsigned long long)r.hash,
               (unsigned long long)before[i].hash);
  }
}

/* The command line: `auralog sim --seed 8 --faults manual-failover --bug
 * promote-no-if-epoch` exits 1 and prints the line that replays it (and
 * writes its trace); without the bug, the same seed exits 0. */
static int sim_cli(const char *bug, char *out, size_t n)
{
  char dir[] = "/tmp/simcli-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[64];
  snprintf(path, sizeof path, "%s/out", dir);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || chdir(dir) != 0 || dup2(fd, 1) < 0)
      _exit(99);
    char *argv[] = {"sim", "--seed", "8", "--faults", "manual-failover", "--bug",
                    (char *)bug, NULL};
    _exit(sim_main(bug ? 7 : 5, argv));
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(out, 1, n - 1, f) : 0;
  out[got] = 0;
  if (f)
    fclose(f);
  char trace[80];
  snprintf(trace, sizeof trace, "%s/sim-seed-8.trace", dir);
  int traced = access(trace, F_OK) == 0;
  unlink(trace);
  unlink(path);
  rmdir(dir);
  assert_true(WIFEXITED(status));
  assert_int_equal(traced, bug != NULL);
  return WEXITSTATUS(status);
}

static void the_command_prints_a_failover_bugs_replay_line(void **state)
{
  (void)state;
  char out[4096];
  assert_int_equal(sim_cli("promote-no-if-epoch", out, sizeof out), 1);
  assert_non_null(strstr(out, "VIOLATION"));
  assert_non_null(strstr(out, "(F1: one epoch, one writer)"));
  assert_non_null(strstr(out, "replay: auralog sim --seed 8 --faults manual-failover "
                              "--bug promote-no-if-epoch\n"));
  assert_int_equal(sim_cli(NULL, out, sizeof out), 0);
  assert_non_null(strstr(out, "seed 8: ok"));
  assert_non_null(strstr(out, "  failover: "));
}

/* Recovery's rule W (vfs/open.c), on one scripted fault: the writer dies,
 * and an AZ and one more node (A1 A2 B1) answer 2.2 s late while it
 * recovers: the three others make a read quorum but no write quorum, so
 * every round waits for a slow one. The recovery asks them again and
 * serves, with no attempt failed. Before, it gave them up after
 * RCV_ANSWER_MS and every attempt fell short of round 3's write quorum
 * until the slowness ended (the engine, after RECOVERY_RETRY_MS, exited).
 * Then the campaign's mix: 40 seeds of all,slow-recovery. */
static void a_slow_recovery_waits_and_never_fails(void **state)
{
  (void)state;
  struct fault_ev ev = {.t = 4000, .kind = F_SLOW_RECOVERY, .target = 0, .target2 = 0,
                        .dur = 3000};
  struct sim_opts o = opts(1, ALL_FAULTS | (1u << F_SLOW_RECOVERY), 0);
  o.sched = &ev;
  o.nsched = 1;
  struct sim_result r;
  run(&o, &r);
  if (r.violations)
    fail_msg("%s", r.first);
  printf("# scripted: %llu requests asked again, %llu attempts failed, %llu recoveries\n",
         (unsigned long long)r.rcv_asked_again, (unsigned long long)r.rcv_failed,
         (unsigned long long)r.recoveries);
  assert_int_equal(r.faults[F_SLOW_RECOVERY], 1);
  assert_true(r.rcv_asked_again >= 3);
  assert_int_equal(r.rcv_failed, 0);
  assert_true(r.recoveries >= 2);          /* the first open, and this one */
  uint64_t again = 0, n = 0;
  for (uint64_t seed = 1; seed <= 40; seed++) {
    o = opts(seed, ALL_FAULTS | (1u << F_SLOW_RECOVERY), 0);
    run(&o, &r);
    if (r.violations)
      fail_msg("seed %llu: %s (replay: auralog sim --seed %llu --faults all,slow-recovery)",
               (unsigned long long)seed, r.first, (unsigned long long)seed);
    again += r.rcv_asked_again;
    n += r.faults[F_SLOW_RECOVERY];
  }
  printf("# 40 seeds of all,slow-recovery: %llu slow recoveries, %llu requests asked again\n",
         (unsigned long long)n, (unsigned long long)again);
  assert_true(n > 0 && again > 0);
}

static void shrink_keeps_the_failure(void **state)
{
  (void)state;
  struct sim_opts o = opts(1, ALL_FAULTS, 1u << BUG_VDL_FROM_HINT);   /* a seed that catches it */
  struct sim_result r;
  sim_run(&o, &r);
  assert_true(r.violations > 0);
  assert_true(r.nsched > 1);
  size_t n = sim_shrink(&o, r.sched, r.nsched, 0);
  assert_true(n >= 1 && n < r.nsched);
  struct sim_opts os = o;
  os.sched = r.sched;
  os.nsched = n;
  struct sim_result rs;
  run(&os, &rs);
  assert_true(rs.violations > 0);
  printf("# shrink: %zu faults to %zu, still: %s\n", r.nsched, n, rs.first);
  free(r.sched);
}

int main(void)
{
  log_quiet(2);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_seed_replays_bit_for_bit),
    cmocka_unit_test(a_few_hundred_seeds_find_nothing),
    cmocka_unit_test(a_slow_recovery_waits_and_never_fails),
    cmocka_unit_test(seeds_that_once_failed_pass),
    cmocka_unit_test(long_runs_forget_truncations_and_resend_lost_assigns),
    cmocka_unit_test(beyond_the_model_nothing_is_lost_and_commits_resume),
    cmocka_unit_test(a_data_loss_alarm_is_a_violation_within_the_model_only),
    cmocka_unit_test(the_safety_scenarios_replay),
    cmocka_unit_test(a_replica_reads_what_the_shadow_says),
    cmocka_unit_test(failover_promotes_and_loses_nothing),
    cmocka_unit_test(backup_runs_keep_gc_below_the_backup_and_restore_the_shadow),
    cmocka_unit_test(binlog_runs_hold_each_durable_commit_once),
    cmocka_unit_test(the_command_prints_a_failover_bugs_replay_line),
    cmocka_unit_test(every_planted_bug_is_caught),
    cmocka_unit_test(community_runs_keep_the_file_and_the_volume_agreeing),
    cmocka_unit_test(shrink_keeps_the_failure),
  };
  /* `make unit` runs this binary as two halves side by side, one with
   * AURALOG_TEST_FILTER=pattern (only the tests it names), the other
   * with AURALOG_TEST_SKIP=pattern (all the rest): its seeds are most of
   * the unit tests' time, and each half keeps one core busy. */
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  if (getenv("AURALOG_TEST_SKIP"))
    cmocka_set_skip_filter(getenv("AURALOG_TEST_SKIP"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
