/*
 * sim.c: `auralog sim`, the deterministic simulator's command line
 * (DESIGN.md §3; world.h says what a run is).
 *
 *   auralog sim --seed N          one run; prints its verdict and trace hash
 *   auralog sim --seeds A..B      many; prints each failure and a summary
 *
 * A failing seed prints the one line that replays it, and writes its
 * trace (every message, fault and recovery, each writer's VDL and each
 * segment's SCL, with virtual times) to sim-seed-N.trace, which
 * `auralog viz --sim-trace` draws as a timeline; --shrink then searches
 * for a smaller schedule of faults that still fails, and prints its
 * replay line (--schedule).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bugs.h"
#include "lib/log.h"
#include "sim/world.h"

static double wall_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog sim [--seed N | --seeds A..B] [--time MS] [--steps N]\n"
    "                   [--faults LIST] [--beyond] [--binlog | --community] [--bug NAME]\n"
    "                   [--schedule SPEC]\n"
    "                   [--shrink] [--trace FILE] [--jobs N] [-v]\n"
    "\n"
    "Run the whole cluster (coordinator, six storage nodes in three AZs,\n"
    "writers) in this process under a seeded simulator: virtual time, a\n"
    "simulated network and disks, faults mixed in by the seed, and the\n"
    "invariants (no acknowledged commit lost, no partial transaction, VDL\n"
    "monotonic, old writers fenced, every page read right, segments whole\n"
    "and converged, commits resume after the heal; with a replica, its reads\n"
    "right, and across a failover one writer per epoch and old writers fenced;\n"
    "with backup, node GC never above what the object store holds, and\n"
    "restores equal to what was committed) checked throughout.\n"
    "The same seed gives the same run, bit for bit (the trace hash).\n"
    "\n"
    "  --seed N         run seed N (default 1)\n"
    "  --seeds A..B     run seeds A to B; print failures and a summary\n"
    "  --time MS        virtual time of faults before the final heal (default %d)\n"
    "  --steps N        stop after N events (a partial run: no end checks)\n"
    "  --faults LIST    fault kinds, comma-separated, or all, replicas, backup or none\n"
    "                   (default all: every kind but stale-read, rogue-unfinished and\n"
    "                   slow-recovery, asked for by name, and the replica's;\n"
    "                   slow-recovery: the writer restarts into a recovery that must\n"
    "                   wait on slow or cut-off nodes, never fail for it; rogue is a member with\n"
    "                   no role whose every request must be refused or change nothing;\n"
    "                   replicas: all, and a read replica with\n"
    "                   replica-crash, stream-cut and replica-silent, and failover:\n"
    "                   the coordinator promotes the replica when the writer is lost,\n"
    "                   with writer-lost, writer-stop, manual-failover, promote-crash;\n"
    "                   any of these seven alone brings the replica and failover;\n"
    "                   backup: all, and an object store the nodes back up to,\n"
    "                   with store-down, store-slow and store-rot (an object\n"
    "                   damaged where it lies), node GC checked against it\n"
    "                   (invariant 11) and restores checked at the end; any of\n"
    "                   these three alone brings the store; sets and kinds mix, as in\n"
    "                   replicas,backup):\n"
    "                   ",
    SIM_TIME_MS);
  for (int k = 0; k < F_NKINDS; k++)
    fprintf(f, "%s%s", fault_names[k], k + 1 < F_NKINDS ? "," : "\n");
  fprintf(f,
    "  --beyond         allow more than an AZ and one node down at once (a true\n"
    "                   data-loss alarm then ends a run: no violation)\n"
    "  --binlog         the volume has a binlog PG (the enhanced binlog): every\n"
    "                   commit's events ride in its MTR, and at the end every\n"
    "                   binlog segment must hold each durable commit's events\n"
    "  --community      each writer keeps a community binlog file in a two-phase\n"
    "                   commit with the volume (prepare, the file, the commit\n"
    "                   record; a crash may fall between any two): every durable\n"
    "                   commit has its frame, and after a recovery no frame names\n"
    "                   a commit that recovery truncated\n"
    "                   once and no truncated commit's\n"
    "  --bug NAME       plant a bug the simulator must catch: ");
  for (int b = 0; b < BUG_N; b++)
    fprintf(f, "%s%s", bug_names[b], b + 1 < BUG_N ? ", " : "\n");
  fprintf(f,
    "  --schedule SPEC  replay this fault schedule (from --shrink) instead of the\n"
    "                   seed's: T:KIND:TARGET:TARGET2:DUR,...\n"
    "  --shrink         for a failing seed, look for a smaller failing schedule\n"
    "  --trace FILE     write the run's trace there (- for stdout)\n"
    "  --jobs N         with --seeds: run them in N processes (one per core)\n"
    "  -v               the trace's world events on stderr\n");
}

/* The sets --faults takes besides the kinds' names. */
static const struct {
  const char *name;
  uint32_t faults;
} fault_sets[] = {
  {"none", 0},
  {"all", F_ALL},
  {"replicas", F_ALL | F_REPLICAS},   /* all, and a read replica with its faults */
  {"backup", F_ALL | F_BACKUP},       /* all, and the object store with its faults */
};
#define NSETS (sizeof fault_sets / sizeof fault_sets[0])

static int parse_faults(const char *s, uint32_t *out)
{
  *out = 0;
  char *copy = strdup(s), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    size_t set = 0;
    while (set < NSETS && strcmp(fault_sets[set].name, t) != 0)
      set++;
    if (set < NSETS) {
      *out |= fault_sets[set].faults;
      continue;
    }
    int k = 0;
    while (k < F_NKINDS && strcmp(fault_names[k], t) != 0)
      k++;
    if (k == F_NKINDS) {
      errmsg("sim: unknown fault '%s' (see auralog sim --help)", t);
      free(copy);
      return -1;
    }
    *out |= 1u << k;
  }
  free(copy);
  return 0;
}

static int parse_schedule(const char *s, struct fault_ev **out, size_t *n)
{
  *out = NULL;
  *n = 0;
  char *copy = strdup(s), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    struct fault_ev e;
    char kind[32];
    unsigned long long at, dur;
    if (sscanf(t, "%llu:%31[a-z0-9-]:%d:%d:%llu", &at, kind, &e.target, &e.target2,
               &dur) != 5) {
      errmsg("sim: bad schedule entry '%s' (T:KIND:TARGET:TARGET2:DUR)", t);
      free(copy);
      return -1;
    }
    for (e.kind = 0; e.kind < F_NKINDS && strcmp(fault_names[e.kind], kind); e.kind++)
      ;
    if (e.kind == F_NKINDS) {
      errmsg("sim: unknown fault '%s' in the schedule", kind);
      free(copy);
      return -1;
    }
    e.t = at;
    e.dur = dur;
    *out = realloc(*out, (*n + 1) * sizeof **out);
    (*out)[(*n)++] = e;
  }
  free(copy);
  return 0;
}

static void print_schedule(FILE *f, const struct fault_ev *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%s%llu:%s:%d:%d:%llu", i ? "," : "", (unsigned long long)s[i].t,
            fault_names[s[i].kind], s[i].target, s[i].target2,
            (unsigned long long)s[i].dur);
}

static void print_faults_opt(FILE *f, uint32_t faults)
{
  if (faults == F_ALL)
    return;
  fprintf(f, " --faults ");
  for (size_t set = 0; set < NSETS; set++)
    if (faults == fault_sets[set].faults) {
      fprintf(f, "%s", fault_sets[set].name);
      return;
    }
  if (faults == (F_ALL | F_REPLICAS | F_BACKUP)) {
    fprintf(f, "replicas,backup");
    return;
  }
  int first = 1;
  for (int k = 0; k < F_NKINDS; k++)
    if (faults & (1u << k)) {
      fprintf(f, "%s%s", first ? "" : ",", fault_names[k]);
      first = 0;
    }
}

static void replay_line(FILE *f, const struct sim_opts *o, const struct fault_ev *s,
                        size_t n)
{
  fprintf(f, "auralog sim --seed %llu", (unsigned long long)o->seed);
  if (o->time_ms != SIM_TIME_MS)
    fprintf(f, " --time %llu", (unsigned long long)o->time_ms);
  print_faults_opt(f, o->faults);
  if (o->beyond)
    fprintf(f, " --beyond");
  if (o->binlog)
    fprintf(f, " --binlog");
  if (o->community)
    fprintf(f, " --community");
  for (int b = 0; b < BUG_N; b++)
    if (o->bugs & (1u << b))
      fprintf(f, " --bug %s", bug_names[b]);
  if (s) {
    fprintf(f, " --schedule ");
    print_schedule(f, s, n);
  }
  fprintf(f, "\n");
}

void sim_run(const struct sim_opts *o, struct sim_result *r)
{
  planted_bugs = o->bugs;
  struct world *w = world_new(o);
  world_run(w, r);
  world_free(w);
  planted_bugs = 0;
}

/* The rogue member's attacks (rogue.c), by kind: how many were sent, and
 * what became of them. Nothing printed if none was sent. */
static void print_rogue(FILE *f, const char *lead, const uint64_t r[RG_NKINDS][RG_NOUTCOMES])
{
  uint64_t tot[RG_NOUTCOMES] = {0}, all = 0;
  for (int k = 0; k < RG_NKINDS; k++)
    for (int o = 0; o < RG_NOUTCOMES; o++) {
      tot[o] += r[k][o];
      all += r[k][o];
    }
  if (all == 0)
    return;
  fprintf(f, "%srogue member: %llu attacks sent, %llu refused, %llu ignored (answered, "
          "nothing changed), %llu taken within the rules, %llu lost on the way\n", lead,
          (unsigned long long)all, (unsigned long long)tot[RG_REFUSED],
          (unsigned long long)tot[RG_IGNORED], (unsigned long long)tot[RG_TAKEN],
          (unsigned long long)tot[RG_LOST]);
  fprintf(f, "%s  by kind (sent/refused/ignored/taken/lost):", lead);
  for (int k = 0; k < RG_NKINDS; k++) {
    uint64_t n = 0;
    for (int o = 0; o < RG_NOUTCOMES; o++)
      n += r[k][o];
    fprintf(f, " %s %llu/%llu/%llu/%llu/%llu", rogue_names[k], (unsigned long long)n,
            (unsigned long long)r[k][RG_REFUSED], (unsigned long long)r[k][RG_IGNORED],
            (unsigned long long)r[k][RG_TAKEN], (unsigned long long)r[k][RG_LOST]);
  }
  fprintf(f, "\n");
}

static void print_result(FILE *f, const struct sim_opts *o, const struct sim_result *r)
{
  fprintf(f, "seed %llu: %s, %llu steps, %.1f s simulated, %llu tx (%llu acked, "
          "%llu unknown, %llu truncated), %llu reads checked, %llu recoveries (%llu "
          "interrupted), %llu messages, hash %016llx\n",
          (unsigned long long)o->seed, r->violations ? "VIOLATION" : "ok",
          (unsigned long long)r->steps, r->sim_ms / 1000.0,
          (unsigned long long)r->tx_shipped, (unsigned long long)r->tx_acked,
          (unsigned long long)r->tx_unknown, (unsigned long long)r->tx_truncated,
          (unsigned long long)r->reads_checked, (unsigned long long)r->recoveries,
          (unsigned long long)r->recoveries_interrupted, (unsigned long long)r->msgs,
          (unsigned long long)r->hash);
  if (r->replica_starts)
    fprintf(f, "  replica: %llu streams, %llu reads checked (%llu from its cache), %llu "
            "refused, %llu records applied, %llu feeds refused, %llu long readers, %llu "
            "floors let go\n",
            (unsigned long long)r->replica_starts, (unsigned long long)r->replica_reads,
            (unsigned long long)r->replica_cache_reads, (unsigned long long)r->replica_refused,
            (unsigned long long)r->replica_applied, (unsigned long long)r->replica_refused_feeds,
            (unsigned long long)r->replica_holds, (unsigned long long)r->replica_lapses);
  if (r->fo_promotions || r->fo_manual || r->fo_fenced)
    fprintf(f, "  failover: %llu promotions (%llu took an epoch, %llu refused: it had moved "
            "on), %llu promoted writers served, %llu manual, %llu writers fenced, %llu old "
            "writers' hosts back as the replica\n",
            (unsigned long long)r->fo_promotions, (unsigned long long)r->fo_promoted,
            (unsigned long long)r->fo_refused, (unsigned long long)r->fo_promoted_served,
            (unsigned long long)r->fo_manual, (unsigned long long)r->fo_fenced,
            (unsigned long long)r->fo_as_replica);
  print_rogue(f, "  ", (const uint64_t (*)[RG_NOUTCOMES])r->rogue);
  if (o->faults & F_BACKUP)
    fprintf(f, "  backup: %llu objects stored, %llu store calls failed, %llu damaged "
            "(store-rot), %llu GC points checked against it (invariant 11), %llu restores "
            "checked (%llu pages; %llu by time, %llu around damaged objects), %llu refused "
            "(no plan avoided the damage, or no point noted by then)\n",
            (unsigned long long)r->bk_objects, (unsigned long long)r->bk_failed,
            (unsigned long long)r->bk_rotted, (unsigned long long)r->bk_gc_checks,
            (unsigned long long)r->bk_restores, (unsigned long long)r->bk_pages_checked,
            (unsigned long long)r->bk_by_time, (unsigned long long)r->bk_replanned,
            (unsigned long long)r->bk_refused);
  if (o->binlog)
    fprintf(f, "  binlog: %llu binlog segments' streams checked at the end (BL1, BL2), "
            "%llu transactions' events in them; the binlog PG's membership: %llu changes, "
            "%llu finishes\n", (unsigned long long)r->bl_segments,
            (unsigned long long)r->bl_events, (unsigned long long)r->mb_bl_changes,
            (unsigned long long)r->mb_bl_finishes);
  if (o->community)
    fprintf(f, "  community binlog: %llu prepares, %llu frames, %llu rolled forward by a "
            "recovery, %llu cut above a recovered VDL, %llu orphaned by another host's "
            "recovery; %llu engine deaths in its windows (%llu in a roll-forward's recovery)\n",
            (unsigned long long)r->cm_prepares, (unsigned long long)r->cm_frames,
            (unsigned long long)r->cm_rolled, (unsigned long long)r->cm_cut,
            (unsigned long long)r->cm_orphans, (unsigned long long)r->cm_crashes,
            (unsigned long long)r->cm_rf_interrupted);
  if (r->data_loss_alarms)
    fprintf(f, "  a data-loss alarm (beyond the fault model): the writer refused to open, "
            "and the run ends there\n");
  if (r->violations)
    fprintf(f, "  %s\n", r->first);
}

size_t sim_shrink(const struct sim_opts *o0, struct fault_ev *s, size_t n, int verbose)
{
  struct sim_opts o = *o0;
  struct sim_result r;
  int changed = 1;
  if (verbose)
    fprintf(stderr, "shrinking a schedule of %zu faults...\n", n);
  while (changed) {
    changed = 0;
    for (size_t i = 0; i < n; i++) {
      struct fault_ev keep = s[i];
      memmove(s + i, s + i + 1, (n - i - 1) * sizeof *s);
      o.sched = s;
      o.nsched = n - 1;
      sim_run(&o, &r);
      free(r.sched);
      if (r.violations) {
        n--;
        changed = 1;
        if (verbose)
          fprintf(stderr, "  %zu faults still fail: %s\n", n, r.first);
        i--;
        continue;
      }
      memmove(s + i + 1, s + i, (n - i - 1) * sizeof *s);
      s[i] = keep;
    }
  }
  return n;
}

/* What a range of seeds added up to. */
struct tally {
  uint64_t seeds, failed, steps, sim_ms, tx, acked, reads, recov;
  uint64_t rcv_again, rcv_restarted;   /* recovery's rule W (vfs/rcvround.c) */
  uint64_t faults[F_NKINDS];
  uint64_t bg[8];            /* coalesced, gc'd records, scrubbed, damage, repaired, catch-ups,
                              * truncations refused, forgotten (rule TF) */
  uint64_t hl_ckpt, hl_replays, hl_replayed, hl_torn, hl_damaged, hl_deaths;
  uint64_t rep_starts, rep_reads, rep_cache, rep_refused, rep_applied, rep_gc, rep_gc_held;
  uint64_t rep_gc_lapsed;
  uint64_t fo[7];            /* promotions, took an epoch, refused, served, manual, fenced,
                              * back as the replica */
  uint64_t alarms;           /* runs a true data-loss alarm ended (--beyond) */
  uint64_t rogue[RG_NKINDS][RG_NOUTCOMES];   /* the rogue member's attacks (rogue.c) */
  uint64_t mb[4];            /* membership changes, finishes, durable-copy checks, nodes lost */
  uint64_t bk[9];            /* backup: objects stored, store calls failed, GC points checked,
                              * restores checked, their pages; objects rotted, restores that
                              * went around damage, restores by time, restores refused */
  uint64_t bl[4];            /* binlog: segments checked, events in them; the binlog PG's
                              * membership changes, and finishes of them */
  uint64_t cm[7];            /* community binlog: prepares, frames, rolled forward, cut,
                              * orphaned, its own crashes, of them in a roll-forward */
};


/* Run seeds first..last of o, printing each failure (its replay line, and
 * the first few failures' traces) and, for one seed, its verdict. */
static void run_range(struct sim_opts o, uint64_t first, uint64_t last, int many,
                      int do_shrink, const char *who, struct tally *t)
{
  double t0 = wall_s();
  memset(t, 0, sizeof *t);
  for (uint64_t seed = first; seed <= last; seed++) {
    o.seed = seed;
    struct sim_result r;
    sim_run(&o, &r);
    t->seeds++;
    t->steps += r.steps;
    t->sim_ms += r.sim_ms;
    t->tx += r.tx_shipped;
    t->acked += r.tx_acked;
    t->reads += r.reads_checked;
    t->recov += r.recoveries;
    t->rcv_again += r.rcv_asked_again;
    t->rcv_restarted += r.rcv_restarted;
    uint64_t bg[8] = {r.bg_coalesced, r.bg_gc_records, r.bg_scrubbed, r.bg_damage,
                      r.bg_repaired, r.bg_catchups, r.truncs_refused, r.truncs_forgotten};
    for (int k = 0; k < 8; k++)
      t->bg[k] += bg[k];
    for (int k = 0; k < F_NKINDS; k++)
      t->faults[k] += r.faults[k];
    t->hl_ckpt += r.hl_checkpoints;
    t->hl_replays += r.hl_replays;
    t->hl_replayed += r.hl_replayed;
    t->hl_torn += r.hl_torn;
    t->hl_damaged += r.hl_damaged;
    t->hl_deaths += r.hl_commit_deaths;
    t->rep_starts += r.replica_starts;
    t->rep_reads += r.replica_reads;
    t->rep_cache += r.replica_cache_reads;
    t->rep_refused += r.replica_refused;
    t->rep_applied += r.replica_applied;
    t->rep_gc += r.replica_gc_refused;
    t->rep_gc_held += r.replica_gc_held;
    t->rep_gc_lapsed += r.replica_gc_lapsed;
    uint64_t fo[7] = {r.fo_promotions, r.fo_promoted, r.fo_refused, r.fo_promoted_served,
                      r.fo_manual, r.fo_fenced, r.fo_as_replica};
    for (int k = 0; k < 7; k++)
      t->fo[k] += fo[k];
    t->alarms += r.data_loss_alarms;
    uint64_t mb[4] = {r.mb_changes, r.mb_finishes, r.mb_checks, r.mb_lost};
    for (int k = 0; k < 4; k++)
      t->mb[k] += mb[k];
    uint64_t bk[9] = {r.bk_objects, r.bk_failed, r.bk_gc_checks, r.bk_restores,
                      r.bk_pages_checked, r.bk_rotted, r.bk_replanned, r.bk_by_time,
                      r.bk_refused};
    for (int k = 0; k < 9; k++)
      t->bk[k] += bk[k];
    t->bl[0] += r.bl_segments;
    t->bl[1] += r.bl_events;
    t->bl[2] += r.mb_bl_changes;
    t->bl[3] += r.mb_bl_finishes;
    uint64_t cm[7] = {r.cm_prepares, r.cm_frames, r.cm_rolled, r.cm_cut, r.cm_orphans,
                      r.cm_crashes, r.cm_rf_interrupted};
    for (int k = 0; k < 7; k++)
      t->cm[k] += cm[k];
    for (int k = 0; k < RG_NKINDS; k++)
      for (int x = 0; x < RG_NOUTCOMES; x++)
        t->rogue[k][x] += r.rogue[k][x];
    if (!many)
      print_result(stdout, &o, &r);
    if (r.violations) {
      t->failed++;
      if (many)
        printf("seed %llu: %s\n", (unsigned long long)seed, r.first);
      printf("  replay: ");
      replay_line(stdout, &o, o.sched, o.nsched);
      if (o.trace == NULL && t->failed <= 3) {   /* the first few failures' traces */
        char path[64];
        snprintf(path, sizeof path, "sim-seed-%llu.trace", (unsigned long long)seed);
        struct sim_opts ot = o;
        ot.trace = fopen(path, "w");
        if (ot.trace) {
          struct sim_result rt;
          sim_run(&ot, &rt);
          free(rt.sched);
          fclose(ot.trace);
          printf("  trace: %s (draw it: auralog viz --sim-trace %s -o sim-seed-%llu.svg)\n",
                 path, path, (unsigned long long)seed);
        }
      }
      if (do_shrink && !many && r.nsched > 0) {
        size_t n = sim_shrink(&o, r.sched, r.nsched, 1);
        printf("smallest failing schedule (%zu fault%s); replay with:\n  ", n,
               n == 1 ? "" : "s");
        replay_line(stdout, &o, r.sched, n);
      }
    }
    free(r.sched);
    if (many && t->seeds % 1000 == 0 && seed < last)
      fprintf(stderr, "sim%s: %llu of %llu seeds, %llu with a violation, %.0f s\n", who,
              (unsigned long long)t->seeds, (unsigned long long)(last - first + 1),
              (unsigned long long)t->failed, wall_s() - t0);
  }
}

/* The same over jobs processes, each a contiguous share of the seeds;
 * their tallies come back through a pipe and add up in *t. */
static void run_jobs(const struct sim_opts *o, uint64_t first, uint64_t last, int jobs,
                     struct tally *t)
{
  uint64_t n = last - first + 1, start = first;
  int fds[64];
  pid_t pids[64];
  fflush(stdout);
  for (int j = 0; j < jobs; j++) {
    uint64_t share = n / (uint64_t)jobs + ((uint64_t)j < n % (uint64_t)jobs);
    int p[2];
    if (pipe(p) != 0)
      die("sim: pipe: %s", strerror(errno));
    pids[j] = fork();
    if (pids[j] < 0)
      die("sim: fork: %s", strerror(errno));
    if (pids[j] == 0) {
      close(p[0]);
      char who[32];
      snprintf(who, sizeof who, " (job %d of %d)", j + 1, jobs);
      struct tally mine;
      run_range(*o, start, start + share - 1, 1, 0, who, &mine);
      fflush(stdout);
      ssize_t w = write(p[1], &mine, sizeof mine);
      _exit(w == (ssize_t)sizeof mine ? 0 : 3);
    }
    close(p[1]);
    fds[j] = p[0];
    start += share;
  }
  memset(t, 0, sizeof *t);
  for (int j = 0; j < jobs; j++) {
    struct tally got;
    int status;
    if (read(fds[j], &got, sizeof got) != (ssize_t)sizeof got ||
        waitpid(pids[j], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
      die("sim: job %d died before it finished its seeds", j + 1);
    close(fds[j]);
    /* A tally is counters only: add them up as an array. */
    uint64_t *to = (uint64_t *)t;
    const uint64_t *from = (const uint64_t *)&got;
    for (size_t i = 0; i < sizeof got / sizeof *from; i++)
      to[i] += from[i];
  }
}

int sim_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"seed", required_argument, 0, 's'}, {"seeds", required_argument, 0, 'S'},
    {"time", required_argument, 0, 't'}, {"steps", required_argument, 0, 'n'},
    {"faults", required_argument, 0, 'f'}, {"beyond", no_argument, 0, 'B'},
    {"binlog", no_argument, 0, 'L'}, {"community", no_argument, 0, 'C'},
    {"bug", required_argument, 0, 'b'}, {"schedule", required_argument, 0, 'c'},
    {"shrink", no_argument, 0, 'k'}, {"trace", required_argument, 0, 'T'},
    {"jobs", required_argument, 0, 'j'},
    {"help", no_argument, 0, 'h'}, {0}};
  struct sim_opts o = {.seed = 1, .time_ms = SIM_TIME_MS, .faults = F_ALL};
  uint64_t first = 0, last = 0;
  int many = 0, do_shrink = 0, jobs = 1;
  const char *trace = NULL;
  struct fault_ev *sched = NULL;
  size_t nsched = 0;
  int c;
  while ((c = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
    switch (c) {
    case 's': o.seed = strtoull(optarg, NULL, 10); break;
    case 'S':
      if (sscanf(optarg, "%llu..%llu", (unsigned long long *)&first,
                 (unsigned long long *)&last) != 2 || last < first)
        die("sim: --seeds takes A..B, e.g. 1..100");
      many = 1;
      break;
    case 't': o.time_ms = strtoull(optarg, NULL, 10); break;
    case 'n': o.max_steps = strtoull(optarg, NULL, 10); break;
    case 'f':
      if (parse_faults(optarg, &o.faults) != 0)
        return 2;
      break;
    case 'B': o.beyond = 1; break;
    case 'L': o.binlog = 1; break;
    case 'C': o.community = 1; break;
    case 'b': {
      int b = bug_by_name(optarg);
      if (b < 0)
        die("sim: no planted bug '%s' (see auralog sim --help)", optarg);
      o.bugs |= 1u << b;
      break;
    }
    case 'c':
      if (parse_schedule(optarg, &sched, &nsched) != 0)
        return 2;
      o.sched = sched;
      o.nsched = nsched;
      break;
    case 'k': do_shrink = 1; break;
    case 'j':
      jobs = atoi(optarg);
      if (jobs < 1 || jobs > 64)
        die("sim: --jobs takes 1 to 64");
      break;
    case 'T': trace = optarg; break;
    case 'v': o.verbose = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("sim: unexpected argument '%s' (see auralog sim --help)", argv[optind]);
  if (o.time_ms < 1000)
    die("sim: --time must be at least 1000 ms");
  if (o.binlog && o.community)
    die("sim: --binlog and --community are the engine's two binlog modes: one at a time");
  log_quiet(getenv("AURALOG_SIM_LOG") ? 0 : o.verbose ? 1 : 2);
  setvbuf(stdout, NULL, _IOLBF, 0);     /* a failure shows as it happens */
  if (!many) {
    first = last = o.seed;
    if (trace)
      o.trace = strcmp(trace, "-") ? fopen(trace, "w") : stdout;
    if (trace && o.trace == NULL)
      die("sim: cannot write %s", trace);
  }
  struct tally t;
  double t0 = wall_s();
  if (jobs > 1 && many)
    run_jobs(&o, first, last, jobs, &t);
  else
    run_range(o, first, last, many, do_shrink, "", &t);
  double dt = wall_s() - t0;
  uint64_t seeds = t.seeds, failed = t.failed, steps = t.steps, sim_ms = t.sim_ms;
  uint64_t tx = t.tx, acked = t.acked, reads = t.reads, recov = t.recov;
  const uint64_t *faults = t.faults;
  if (many || o.verbose) {
    printf("%llu seeds, %llu with a violation; %llu steps, %.0f s simulated in %.1f s "
           "(%.0f simulated s per s, %.0f seeds per minute)\n",
           (unsigned long long)seeds, (unsigned long long)failed,
           (unsigned long long)steps, sim_ms / 1000.0, dt,
           dt > 0 ? sim_ms / 1000.0 / dt : 0, dt > 0 ? seeds * 60 / dt : 0);
    printf("transactions %llu (%llu acknowledged), reads checked %llu, recoveries %llu\n",
           (unsigned long long)tx, (unsigned long long)acked, (unsigned long long)reads,
           (unsigned long long)recov);
    printf("recoveries waiting on silent nodes (rule W): %llu requests asked again, %llu "
           "attempts started again for a node that came back\n",
           (unsigned long long)t.rcv_again, (unsigned long long)t.rcv_restarted);
    printf("faults:");
    for (int k = 0; k < F_NKINDS; k++)
      if (k < F_STORE_ROT || (o.faults & (1u << k)))   /* kinds newer than the summaries
                                                          * runs pin: where asked for */
        printf(" %s %llu", fault_names[k], (unsigned long long)faults[k]);
    printf("\n");
    printf("storage nodes: %llu page versions coalesced, %llu records freed by GC, %llu "
           "items scrubbed, %llu damaged found, %llu repaired, %llu catch-ups, %llu "
           "truncations refused, %llu forgotten once every member held them\n",
           (unsigned long long)t.bg[0], (unsigned long long)t.bg[1],
           (unsigned long long)t.bg[2], (unsigned long long)t.bg[3],
           (unsigned long long)t.bg[4], (unsigned long long)t.bg[5],
           (unsigned long long)t.bg[6], (unsigned long long)t.bg[7]);
    printf("hot logs: %llu checkpoints (at crashes), %llu replays storing %llu records "
           "lmdb had lost, %llu deaths inside a commit, %llu torn tails, %llu damaged "
           "frames skipped\n", (unsigned long long)t.hl_ckpt,
           (unsigned long long)t.hl_replays, (unsigned long long)t.hl_replayed,
           (unsigned long long)t.hl_deaths, (unsigned long long)t.hl_torn,
           (unsigned long long)t.hl_damaged);
    if (t.rep_starts)
      printf("replica: %llu streams, %llu reads checked (%llu from its cache), %llu storage "
             "reads refused (%llu below a node's GC point: %llu after the writer let its "
             "floor go while it was silent, %llu while the PGMRPL held it), %llu records "
             "applied\n", (unsigned long long)t.rep_starts,
             (unsigned long long)t.rep_reads, (unsigned long long)t.rep_cache,
             (unsigned long long)t.rep_refused, (unsigned long long)t.rep_gc,
             (unsigned long long)t.rep_gc_lapsed, (unsigned long long)t.rep_gc_held,
             (unsigned long long)t.rep_applied);
    if (t.fo[0] || t.fo[4])
      printf("failover: %llu promotions (%llu took an epoch, %llu refused: it had moved on), "
             "%llu promoted writers served, %llu manual failovers chosen, %llu writers fenced, "
             "%llu old writers' hosts back as the replica\n",
             (unsigned long long)t.fo[0], (unsigned long long)t.fo[1],
             (unsigned long long)t.fo[2], (unsigned long long)t.fo[3],
             (unsigned long long)t.fo[4], (unsigned long long)t.fo[5],
             (unsigned long long)t.fo[6]);
    print_rogue(stdout, "", (const uint64_t (*)[RG_NOUTCOMES])t.rogue);
    if (t.mb[0] || t.mb[3])
      printf("membership: %llu PG changes stored, %llu of them finishes (a next segment "
             "became current), %llu durable-copy checks, %llu nodes lost for good\n",
             (unsigned long long)t.mb[0], (unsigned long long)t.mb[1],
             (unsigned long long)t.mb[2], (unsigned long long)t.mb[3]);
    if (o.binlog)
      printf("binlog: %llu binlog segments' streams checked against the commits (BL1, BL2), "
             "%llu transactions' events in them; the binlog PG's membership: %llu changes "
             "stored, %llu of them finishes\n", (unsigned long long)t.bl[0],
             (unsigned long long)t.bl[1], (unsigned long long)t.bl[2],
             (unsigned long long)t.bl[3]);
    if (o.community)
      printf("community binlog: %llu two-phase commits prepared, %llu frames written, %llu "
             "transactions rolled forward by a recovery, %llu frames cut above a recovered "
             "VDL, %llu orphaned by another host's recovery (its own file sequence); %llu engine "
             "deaths in the two-phase commit's windows, %llu of them in a recovery that "
             "rolled forward; every durable commit had its frame (CM1), no frame named a "
             "commit its host's recovery truncated (CM2)\n", (unsigned long long)t.cm[0],
             (unsigned long long)t.cm[1], (unsigned long long)t.cm[2],
             (unsigned long long)t.cm[3], (unsigned long long)t.cm[4],
             (unsigned long long)t.cm[5], (unsigned long long)t.cm[6]);
    if (o.faults & F_BACKUP)
      printf("backup: %llu objects stored, %llu store calls failed, %llu objects damaged "
             "(store-rot), %llu GC points checked against what the store holds (invariant "
             "11), %llu restores checked against the shadow model (%llu pages; %llu by time, "
             "%llu around damaged objects), %llu refused rightly (no plan avoided the damage, "
             "or no point noted by then)\n", (unsigned long long)t.bk[0],
             (unsigned long long)t.bk[1], (unsigned long long)t.bk[5],
             (unsigned long long)t.bk[2], (unsigned long long)t.bk[3],
             (unsigned long long)t.bk[4], (unsigned long long)t.bk[7],
             (unsigned long long)t.bk[6], (unsigned long long)t.bk[8]);
    if (t.alarms)
      printf("data-loss alarms: %llu runs ended in one (beyond the fault model: the writer "
             "refused to open, as it must)\n", (unsigned long long)t.alarms);
  }
  if (o.trace && o.trace != stdout)
    fclose(o.trace);
  free(sched);
  return failed ? 1 : 0;
}
