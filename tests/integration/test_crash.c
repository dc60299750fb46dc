/*
 * Integration: the crash campaign (issue 4; DESIGN.md §4 invariants 1, 2,
 * 3, 5 and 6).
 *
 * A writer (a child process) commits numbered transactions back to back,
 * each one `auralog sql` invocation "begin; K inserts; commit;" into
 * camp(txn, k, pad), and records for each whether its commit was
 * acknowledged (exit status 0: durable). A reader (another child) reads
 * `select txn, count(*) ... group by txn` through `auralog sql` every
 * 100-200 ms (mostly the latest transactions, every eighth read all of
 * them) and records every transaction it ever saw, with its row count.
 *
 * Each crash point has a shape, drawn from a fixed seed:
 *  - classic: the engine is killed with SIGKILL (`auralog fault
 *    engine-crash`), before or after that up to an AZ plus one node are
 *    stopped (`fault az-down`, `fault node-stop`); then `auralog cluster
 *    up` (sometimes after `fault az-up`/`node-start`) brings everything
 *    back and the engine recovers.
 *  - interrupted recoveries: a classic point, and before `cluster up` one
 *    or two recoveries that stop half-way are played with a hand-made
 *    writer (peer.c): a new epoch from the coordinator, a SegQuery to a
 *    random subset of the segments and, when they include a read quorum of
 *    every PG (a recovery computes a VDL only then), sometimes a Truncate
 *    of that epoch on one or two segments only, from the highest LSN any
 *    queried segment holds (SegInfo.max_lsn) to that + LAL, as the buggy
 *    recovery did (it took records one segment held for durable); then
 *    nothing. An AZ (and a node) may be down meanwhile. `from` is then at
 *    or above the VDL (Vr + Vw > V), like every VDL a recovery computes.
 *  - AZ cut between two recoveries: AZ X is cut (killed, or partitioned),
 *    the engine crashes and recovers without X, a few commits are
 *    acknowledged, then at once X comes back and AZ Y is cut, the engine
 *    crashes and recovers without Y (X, which missed the last commits,
 *    must make up the write quorum), commits, Y comes back.
 *  - a node returning with an old truncation: node N is stopped (sometimes
 *    right after an interrupted recovery truncated N alone, from the
 *    highest LSN any segment holds: a read quorum of every PG queried, so
 *    at or above the VDL), the engine crashes and recovers one to three
 *    times while N is away (each recovery writes a truncation N never
 *    sees), with commits in between; then N starts again (sometimes
 *    straight into one more recovery).
 *  - reads under cache pressure with lagging nodes: two nodes of different
 *    AZs answer late (`fault slow NODE MS`), the engine restarts with a
 *    small buffer cache (`cluster up --cache PAGES`) so that the reader's
 *    reads go to storage, the writer and the reader run, the engine
 *    crashes and recovers, then the nodes are fast again.
 * A recovery "without" some nodes is the engine started by hand (as
 * `cluster up` starts it, with the same --cache): `cluster up` would
 * first start every node that does not run. Never more than an AZ plus
 * one node are down or cut off at any moment. Other engine restarts use a
 * small cache one time in four. The writer gets a few commits through on
 * each new engine before the next step.
 *
 * After each crash point (every AURALOG_CHECK_EVERY points; always after
 * the last one): every acknowledged transaction has all its K rows, no
 * transaction has any other number of rows than 0 or its K, the rows hold
 * the bytes they were given (lengths), PRAGMA integrity_check is ok, and
 * every transaction the reader ever saw is there, whole (no client ever
 * read a row that is later absent: by default the engine releases a reply
 * only once the VDL covers what it could see). A transaction whose `auralog
 * sql` failed is unknown: it may be there or not, but only whole. Then,
 * every fault healed: within 15 s `auralog status` shows no segment
 * refusing the engine's Appends and every segment's SCL at the highest of
 * its PG (gossip converged).
 *
 * AURALOG_CRASH_POINTS sets the number of crash points (default 20; `make
 * torture` runs 500 on six nodes, then a campaign of its own with repairs:
 * AURALOG_CRASH_REPAIR=1, below), AURALOG_CRASH_SEED the seed, AURALOG_CRASH_SHAPES
 * (a list of classic, interrupted, azcut, nodeback, slow) the shapes to
 * play, to isolate one (default all). An engine without --cache (`auralog
 * engine --help`) runs with its default cache; the summary says so. On a
 * failure the cluster directory is kept: the members' logs in log/,
 * crash-timeline.txt (what was done when), crash-records.txt ("txn rc"
 * per transaction),
 * crash-writer.err (why the unknown ones failed), crash-reads.txt
 * ("txn rows ms": what the reader saw, when) and crash-reader.err (why
 * reads failed).
 *
 * Files (crash.h): this one is the campaign (its draws, the shapes, the
 * timeline, the summary); crash_clients.c the writer and the reader,
 * crash_faults.c the faults and the interrupted recoveries, crash_check.c
 * the checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash.h"
#include "harness.h"
#include "lib/log.h"

/* ---- deterministic choices ----------------------------------------------- */

static uint64_t rng = 88172645463325252ull;

uint64_t rnd(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717ull;
}

unsigned below(unsigned n)
{
  return (unsigned)(rnd() % n);
}

uint64_t mix(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Transaction t inserts rows_of(t) rows; row k has pad_of(t, k) random
 * bytes: mostly 50..3000, one transaction in ten has rows of 2..12 KB
 * (overflow chains). The database holds a 1.5 MB filler table, so every
 * transaction touches at least two protection groups (page 1 and the
 * table's end). */
int rows_of(long t)
{
  return 3 + (int)(mix((uint64_t)t) % 6);
}

int pad_of(long t, int k)
{
  uint64_t h = mix((uint64_t)t * 64 + (uint64_t)k + 7);
  if ((mix((uint64_t)t) >> 32) % 10 == 0)
    return 2000 + (int)(h % 10000);
  return 50 + (int)(h % 2951);
}

long long bytes_of(long t)
{
  long long sum = 0;
  for (int k = 0; k < rows_of(t); k++)
    sum += pad_of(t, k);
  return sum;
}


/* ---- the timeline and the evidence -------------------------------------- */

/* In the cluster directory (setup): what the writer and the reader did
 * and saw, why their requests failed, and what the campaign did when. */
char records_path[512], errors_path[512], timeline_path[512], reads_path[512],
     rerrors_path[512];
FILE *timeline;

void note(const char *fmt, ...)
{
  if (timeline == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(timeline, "%llu ", now_ms());
  vfprintf(timeline, fmt, ap);
  fputc('\n', timeline);
  fflush(timeline);
  va_end(ap);
}

/* ---- the campaign -------------------------------------------------------- */

static int setup(void **state)
{
  (void)state;
  sh_w = mmap(NULL, sizeof *sh_w, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh_w == MAP_FAILED)
    return -1;
  memset(sh_w, 0, sizeof *sh_w);
  sh_w->next = 1;
  /* AURALOG_CRASH_REPAIR=1 (make torture): nine nodes, and crash points
   * that lose one for good while the engine crashes around its repair. */
  const char *extra = getenv("AURALOG_CRASH_REPAIR") && atoi(getenv("AURALOG_CRASH_REPAIR"))
                        ? " --statement-timeout 0 --nodes 9" : " --statement-timeout 0";
  char ex[128];
  snprintf(ex, sizeof ex, "%s%s%s", extra, crash_binlog() ? " --binlog " : "",
           crash_binlog() ? crash_binlog() : "");
  if (cluster_start_with("crash", ex) != 0)   /* crash_faults.c restart */
    return -1;
  snprintf(records_path, sizeof records_path, "%s/crash-records.txt", dir);
  snprintf(errors_path, sizeof errors_path, "%s/crash-writer.err", dir);
  snprintf(timeline_path, sizeof timeline_path, "%s/crash-timeline.txt", dir);
  snprintf(reads_path, sizeof reads_path, "%s/crash-reads.txt", dir);
  snprintf(rerrors_path, sizeof rerrors_path, "%s/crash-reader.err", dir);
  timeline = fopen(timeline_path, "a");
  return timeline ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  pid_t *kids[] = {&writer_pid, &reader_pid};
  for (int i = 0; i < 2; i++)
    if (*kids[i] > 0) {
      kill(*kids[i], SIGKILL);
      waitpid(*kids[i], NULL, 0);
      *kids[i] = 0;
    }
  if (timeline)
    fclose(timeline);
  timeline = NULL;
  if (getenv("AURALOG_KEEP"))
    fprintf(stderr, "# crash campaign: cluster kept in %s\n", dir);
  cluster_stop();
  return 0;
}

static int env_int(const char *name, int dflt)
{
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static const char *const azs[] = {"A", "B", "C"};
static const char *const nodes[] = {"A1", "A2", "B1", "B2", "C1", "C2"};

enum { SH_CLASSIC, SH_INTERRUPTED, SH_AZCUT, SH_NODE_BACK, SH_SLOW, SH_REPAIR, NSHAPES };
static int n_shape[NSHAPES];
static int n_kind[4], n_first, n_cut_by_partition, n_away_recoveries, n_back_into_recovery;

/* Classic (and, with interrupted, the interrupted recoveries before the
 * restart). */
static void classic_point(int p, int interrupted, uint64_t sub)
{
  /* What to stop besides the engine: nothing, a node, an AZ, or an AZ
   * and one node of another AZ (the most the quorums allow). */
  int kind = (int)below(100), az = (int)below(3), other = (az + 1 + (int)below(2)) % 3;
  const char *node = nodes[2 * other + (int)below(2)];
  kind = kind < 35 ? 0 : kind < 60 ? 1 : kind < 80 ? 2 : 3;
  int nodes_first = kind != 0 && below(3) == 0;
  int explicit_up = below(2);
  unsigned after = below(150), gap = 20 + below(200), nrec = 1 + below(2);
  note("  kind %d az %s node %s nodes_first %d explicit_up %d", kind, azs[az], node,
       nodes_first, explicit_up);
  if (nodes_first) {
    /* Commits in flight when the nodes go, the engine killed later. */
    nodes_down(kind, azs[az], node);
    usleep(gap * 1000);
  }
  crash_engine();
  if (!nodes_first && kind != 0) {
    usleep(after * 1000);
    nodes_down(kind, azs[az], node);
  }
  usleep(after * 1000);
  if (interrupted)
    for (unsigned i = 0; i < nrec; i++)
      interrupted_recovery(p, mix(sub + i), NULL);
  if (explicit_up && kind != 0) {
    if (kind >= 2)
      faultf("az-up %s", azs[az]);
    if (kind != 2)
      faultf("node-start %s", node);
  }
  restart(p);
  more_acks(2, p, "after the restart");
  n_kind[kind]++;
  n_first += nodes_first;
}

/* AZ X cut, recovery without X, commits; X back and Y cut at once,
 * recovery without Y, commits; Y back. Cut: killed (the engine then
 * started by hand) or partitioned (`cluster up`: X's nodes run). */
static void azcut_point(int p)
{
  int x = (int)below(3), y = (x + 1 + (int)below(2)) % 3, part = below(2);
  unsigned gap = 20 + below(200), between = 1 + below(8);
  char without[16];
  note("  AZ %s then AZ %s cut (%s)", azs[x], azs[y], part ? "partitioned" : "killed");
  if (part)
    partition(azs[x][0]);
  else
    faultf("az-down %s", azs[x]);
  usleep(gap * 1000);
  crash_engine();
  snprintf(without, sizeof without, "AZ %s", azs[x]);
  if (part)
    restart(p);
  else
    engine_alone(p, without);
  more_acks(between, p, "after a recovery without an AZ");
  /* At once: X has had no time to catch up. */
  if (part) {
    heal(azs[x][0]);
    partition(azs[y][0]);
  } else {
    faultf("az-up %s", azs[x]);
    faultf("az-down %s", azs[y]);
  }
  crash_engine();
  snprintf(without, sizeof without, "AZ %s", azs[y]);
  if (part)
    restart(p);
  else
    engine_alone(p, without);
  more_acks(2, p, "after the second recovery without an AZ");
  if (part)
    heal(azs[y][0]);
  else
    restart(p);                 /* starts Y's nodes; the engine runs */
  n_cut_by_partition += part;
}

/* Node N away while the engine crashes and recovers one to three times,
 * commits in between; N back, sometimes straight into a recovery. */
static void node_back_point(int p, uint64_t sub)
{
  const char *n = nodes[below(6)];
  unsigned times = 1 + below(3), pretrunc = below(2), again = below(2);
  note("  node %s away for %u recoveries%s%s", n, times,
       pretrunc ? ", after an interrupted recovery truncated it alone" : "",
       again ? ", back into a recovery" : "");
  char without[16];
  snprintf(without, sizeof without, "node %s", n);
  for (unsigned i = 0; i < times; i++) {
    if (i == 0 && pretrunc) {
      crash_engine();
      interrupted_recovery(p, sub, n);
      faultf("node-stop %s", n);
    } else {
      if (i == 0)
        faultf("node-stop %s", n);
      crash_engine();
    }
    engine_alone(p, without);
    more_acks(1 + below(6), p, "after a recovery without a node");
    n_away_recoveries++;
  }
  faultf("node-start %s", n);
  if (again) {
    crash_engine();
    n_back_into_recovery++;
  }
  restart(p);
  more_acks(2, p, "after the node came back");
}

/* Two slow nodes of different AZs, an engine with a small cache (reads go
 * to storage), the writer and the reader running, a crash, a recovery,
 * then the nodes are fast again. */
static void slow_point(int p)
{
  static const unsigned ms_of[] = {20, 100, 300, 700, 1500};
  int a = (int)below(3), b = (a + 1 + (int)below(2)) % 3;
  const char *n1 = nodes[2 * a + (int)below(2)], *n2 = nodes[2 * b + (int)below(2)];
  unsigned ms = ms_of[below(5)], commits = 5 + below(15);
  note("  %s and %s answer %u ms late; engine cache %d pages", n1, n2, ms, point_cache);
  faultf("slow %s %u", n1, ms);
  faultf("slow %s %u", n2, ms);
  crash_engine();
  restart(p);                   /* with the small cache, slow nodes meanwhile */
  long reads0 = __atomic_load_n(&sh_w->reads_ok, __ATOMIC_SEQ_CST);
  more_acks(commits, p, "with slow nodes");
  unsigned long long deadline = now_ms() + 30000;
  while (__atomic_load_n(&sh_w->reads_ok, __ATOMIC_SEQ_CST) < reads0 + 3) {
    if (now_ms() > deadline) {
      clients_stop();
      keep_evidence();
      fail_msg("crash point %d: the reader got fewer than 3 answers in 30 s with %s and %s "
               "slow (cluster kept in %s)", p, n1, n2, dir);
    }
    usleep(10000);
  }
  crash_engine();
  restart(p);
  more_acks(2, p, "after the restart with slow nodes");
  faultf("slow %s 0", n1);
  faultf("slow %s 0", n2);
}

/* Repair (member.h; AURALOG_CRASH_REPAIR, nine nodes): node N is lost for
 * good (SIGKILL, never restarted meanwhile); the coordinator moves each
 * of its segments to a spare in its AZ after REPAIR_AFTER_MS. Sometimes
 * the engine crashes while the moves run, and recovers without N (a
 * recovery racing a repair: the membership it opens with has next
 * segments in it); sometimes twice. Once every PG is back to six current
 * segments, none on N, N comes back with its old segments (`cluster up`):
 * it must hold none of them (M6). */
static const char *const nodes9[] = {"A1", "A2", "A3", "B1", "B2", "B3", "C1", "C2", "C3"};
static int n_repair_crashes;

/* How long a repair may take: 60 s, and 250 ms a PG. The campaign's
 * volume grows by megabytes a point (361 PGs at point 62), a lost node
 * may hold a segment of every PG (A1 held all 361), each up to 1 MiB, and a
 * spare fills at most HYDRATE_BYTES_PER_S (about 9 MiB/s measured, bench
 * repair), slower while the engine recovers beside it: a fixed 60 s
 * failed there, the repair moving its segments past two recoveries. */
static unsigned long long repair_limit_ms(void)
{
  cJSON *o = status("main");
  int npgs = o ? cJSON_GetArraySize(cJSON_GetObjectItem(o, "pgs")) : 0;
  cJSON_Delete(o);
  return 60000ull + 250ull * (unsigned long long)npgs;
}

static int repair_settled(const char *gone, char *why, size_t n)
{
  cJSON *o = status("main"), *p, *g;
  cJSON *pgs = o ? cJSON_GetObjectItem(o, "pgs") : NULL;
  int ok = o != NULL;
  snprintf(why, n, "no status");
  cJSON_ArrayForEach(p, pgs) {
    int nseg = 0;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments")) {
      nseg++;
      const char *node = cJSON_GetStringValue(cJSON_GetObjectItem(g, "node"));
      if (cJSON_IsTrue(cJSON_GetObjectItem(g, "next")) || (node && strcmp(node, gone) == 0)) {
        ok = 0;
        snprintf(why, n, "pg %d: %s%s", (int)cJSON_GetObjectItem(p, "pg")->valuedouble,
                 cJSON_IsTrue(cJSON_GetObjectItem(g, "next")) ? "a next segment on " : "",
                 node ? node : "?");
      }
    }
    if (nseg != 6)
      ok = 0;
  }
  cJSON_Delete(o);
  return ok;
}

static void repair_point(int p)
{
  const char *n = nodes9[below(9)];
  unsigned crashes = below(3), at = 1000 + below(6000);
  note("  node %s lost for good; %u engine crashes during its repair, the first %u ms in", n,
       crashes, at);
  stop_member(n, SIGKILL);
  unsigned long long t0 = now_ms(), limit = repair_limit_ms();
  char without[16], why[256] = "";
  snprintf(without, sizeof without, "node %s", n);
  for (unsigned i = 0; i < crashes; i++) {
    usleep((i == 0 ? at : 500 + below(2000)) * 1000);
    crash_engine();
    engine_alone(p, without);
    more_acks(1 + below(4), p, "after a recovery during a repair");
    n_repair_crashes++;
  }
  /* The wait for the repair to settle: the writer goes on, paced to five
   * commits a second, so the spares hydrate under writes to the end. Back
   * to back, it wrote tens of megabytes into each long repair, the next
   * repair had that much more to move, and the campaign's time grew
   * faster than its points (more than four hours for 500). */
  __atomic_store_n(&sh_w->pace_us, 200000L, __ATOMIC_SEQ_CST);
  while (!repair_settled(n, why, sizeof why)) {
    if (now_ms() - t0 > limit) {
      clients_stop();
      keep_evidence();
      fail_msg("crash point %d: %llu s after node %s was lost, the repair has not finished: "
               "%s (cluster kept in %s)", p, limit / 1000, n, why, dir);
    }
    usleep(200000);
  }
  __atomic_store_n(&sh_w->pace_us, 0L, __ATOMIC_SEQ_CST);
  note("  repaired in %llu ms", now_ms() - t0);
  restart(p);                   /* N comes back with its old segments */
  more_acks(2, p, "after the replaced node came back");
}

static void acknowledged_commits_survive_crashes_whole(void **state)
{
  (void)state;
  int points = env_int("AURALOG_CRASH_POINTS", 20);
  int every = env_int("AURALOG_CHECK_EVERY", points > 50 ? 10 : 1);
  uint64_t seed = (uint64_t)env_int("AURALOG_CRASH_SEED", 4);
  if (points < 1)
    points = 1;
  if (every < 1)
    every = 1;
  rng ^= mix(seed);
  unsigned long long t0 = now_ms();
  /* `cluster up --cache` needs an engine with --cache. */
  sh(out, sizeof out, "%s engine --help 2>&1", bin);
  cache_ok = strstr(out, "--cache") != NULL;
  note("campaign: %d crash points, seed %llu, check every %d%s%s%s", points,
       (unsigned long long)seed, every, cache_ok ? "" : "; the engine has no --cache",
       getenv("AURALOG_CRASH_SHAPES") ? "; shapes " : "",
       getenv("AURALOG_CRASH_SHAPES") ? getenv("AURALOG_CRASH_SHAPES") : "");

  int rc = sql_arg("create table camp(txn int, k int, pad blob);"
                   "create index camp_txn on camp(txn);"
                   "create table filler(b blob);"
                   "insert into filler with recursive g(i) as (select 1 union all "
                   "select i + 1 from g where i < 1500) select randomblob(1000) from g;");
  if (rc != 0)
    fail_msg("creating the tables failed (%d): %s", rc, out);

  static const char *const shape_name[] = {"classic", "interrupted recoveries",
                                           "AZ cut between two recoveries",
                                           "node back with an old truncation",
                                           "slow nodes, small cache",
                                           "a node lost and repaired"};
  /* AURALOG_CRASH_SHAPES (e.g. "classic,azcut"): only these shapes, to
   * replay or isolate one; a point drawn as another takes the next one
   * listed (the draws stay the same). Default: every shape. */
  static const char *const shape_key[] = {"classic", "interrupted", "azcut", "nodeback",
                                          "slow", "repair"};
  int repairs = env_int("AURALOG_CRASH_REPAIR", 0);
  int enabled[NSHAPES], any = 0;
  const char *only = getenv("AURALOG_CRASH_SHAPES");
  for (int i = 0; i < NSHAPES; i++) {
    enabled[i] = (only == NULL || !*only || strstr(only, shape_key[i]) != NULL) &&
                 (i != SH_REPAIR || repairs);
    any |= enabled[i];
  }
  if (!any)
    fail_msg("AURALOG_CRASH_SHAPES='%s' names no shape (classic, interrupted, azcut, "
             "nodeback, slow, repair with AURALOG_CRASH_REPAIR=1)", only);
  struct tally tl = {0};
  for (int p = 1; p <= points; p++) {
    unsigned r = below(100);
    int shape = r < 40 ? SH_CLASSIC : r < 60 ? SH_INTERRUPTED : r < 75 ? SH_AZCUT
              : r < 90 ? SH_NODE_BACK : SH_SLOW;
    /* With repairs on, one point in five loses a node (a draw of its own:
     * without, the campaign's draws are what they were). */
    if (repairs && below(5) == 0)
      shape = SH_REPAIR;
    while (!enabled[shape])
      shape = (shape + 1) % NSHAPES;
    uint64_t sub = rnd();
    int small = below(4) == 0, cache = 24 + (int)below(100);
    point_cache = cache_ok && (small || shape == SH_SLOW) ? cache : 0;
    unsigned commits = 1 + below(20);
    note("crash point %d: %s; cache %d; writer at txn %ld", p, shape_name[shape], point_cache,
         sh_w->next);
    long acked0 = __atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST);
    clients_start();
    wait_acks(acked0, commits, p, "before the crash");
    switch (shape) {
    case SH_CLASSIC: classic_point(p, 0, sub); break;
    case SH_INTERRUPTED: classic_point(p, 1, sub); break;
    case SH_AZCUT: azcut_point(p); break;
    case SH_NODE_BACK: node_back_point(p, sub); break;
    case SH_REPAIR: repair_point(p); break;
    default: slow_point(p); break;
    }
    clients_stop();
    n_shape[shape]++;
    note("writer stopped at txn %ld (%ld acknowledged, %ld failed so far); reader: %ld reads, "
         "%ld answered", sh_w->next, sh_w->acked, sh_w->failed, sh_w->reads, sh_w->reads_ok);
    if (p % every == 0 || p == points)
      tl = check(p);
  }
  unsigned long long ms = now_ms() - t0;
  /* Requests the engine's death cut off (the others found it down). */
  sh(out, sizeof out, "grep -c 'closed the connection' %s", errors_path);
  int cut = atoi(out);
  char cache[64];
  if (cache_ok)
    snprintf(cache, sizeof cache, "%d engine starts with a cache of 24-123 pages",
             n_small_cache_starts);
  else
    snprintf(cache, sizeof cache, "engine cache not set: the engine has no --cache");
  /* The classic part first, as before; then the new shapes. */
  printf("# crash campaign: %d crash points (%d engine only, %d +node, %d +AZ, %d +AZ+node; "
         "%d with nodes stopped first; %d of them with interrupted recoveries; %d AZ cuts "
         "between two recoveries, %d by partition; %d nodes back after %d recoveries away, "
         "%d into a recovery; %d with slow nodes; %d interrupted recoveries in all: %d "
         "segments queried, %d truncated; %s; %d engine crashes, %d engine starts without "
         "a node or AZ; %d cut a transaction in flight), %ld transactions: %ld acknowledged, "
         "%ld unknown (%ld present whole, %ld absent), lost %ld, partial %ld, integrity ok; "
         "reader: %ld reads, %ld answered, saw %ld transactions, none lost or partial; "
         "converged after every check (slowest %llu ms); %llu ms\n",
         points, n_kind[0], n_kind[1], n_kind[2], n_kind[3], n_first, n_shape[SH_INTERRUPTED],
         n_shape[SH_AZCUT], n_cut_by_partition, n_shape[SH_NODE_BACK], n_away_recoveries,
         n_back_into_recovery, n_shape[SH_SLOW], n_ir, n_ir_queries, n_ir_truncs, cache,
         n_crashes, n_by_hand, cut, tl.acked + tl.unknown, tl.acked, tl.unknown,
         tl.unknown_present, tl.unknown - tl.unknown_present, tl.lost, tl.partial, sh_w->reads,
         sh_w->reads_ok, tl.reader_seen, converge_max_ms, ms);
  if (crash_binlog())
    printf("# crash campaign: the %s binlog held against the table after %ld checks: each "
           "transaction present has its inserts once, none absent has any (%ld inserts at "
           "the last)\n", crash_binlog(), bl_checks, bl_events);
  if (repairs)
    printf("# crash campaign: %d points lost a node for good and saw it repaired (%d engine "
           "crashes during the repairs), then started the replaced node again\n",
           n_shape[SH_REPAIR], n_repair_crashes);
  note("campaign done in %llu ms", ms);
}

static void the_cluster_stops_cleanly(void **state)
{
  (void)state;
  assert_int_equal(sh(out, sizeof out, "%s cluster down --dir %s", bin, dir), 0);
  assert_int_equal(live_cluster_processes(), 0);
  int kept = getenv("AURALOG_KEEP") != NULL;
  setenv("AURALOG_KEEP", "1", 1);   /* a report is evidence: keep the logs */
  assert_no_sanitizer_reports();
  if (!kept)
    unsetenv("AURALOG_KEEP");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(acknowledged_commits_survive_crashes_whole),
    cmocka_unit_test(the_cluster_stops_cleanly),
  };
  return cmocka_run_group_tests_name("integration: crash campaign", tests, setup, teardown);
}
