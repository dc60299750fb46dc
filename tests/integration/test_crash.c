/*
 * Integration: the crash campaign (issue 4; DESIGN.md §4 invariants 1, 2
 * and 5).
 *
 * A writer (a child process) commits numbered transactions back to back,
 * each one `auralog sql` invocation "begin; K inserts; commit;" into
 * camp(txn, k, pad), and records for each whether its commit was
 * acknowledged (exit status 0: durable). Meanwhile, at random moments
 * (fixed seed), the engine is killed with SIGKILL (`auralog fault
 * engine-crash`), and before or after that up to an AZ plus one node are
 * stopped (`fault az-down`, `fault node-stop`); then `auralog cluster up`
 * (sometimes after `fault az-up`/`node-start`) brings everything back and
 * the engine recovers. The writer then gets a few commits through on the
 * new engine before the next crash point.
 *
 * After each crash point (every AURALOG_CHECK_EVERY points; always after
 * the last one): every acknowledged transaction has all its K rows, no
 * transaction has any other number of rows than 0 or its K, the rows hold
 * the bytes they were given (lengths), and PRAGMA integrity_check is ok.
 * A transaction whose `auralog sql` failed is unknown: it may be there or
 * not, but only whole.
 *
 * AURALOG_CRASH_POINTS sets the number of crash points (default 20; `make
 * torture` runs 300), AURALOG_CRASH_SEED the seed. On a failure the
 * cluster directory is kept: the members' logs in log/, crash-timeline.txt
 * (what was done when), crash-records.txt ("txn rc" per transaction) and
 * crash-writer.err (why the unknown ones failed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"

extern char **environ;


/* ---- deterministic choices ----------------------------------------------- */

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717ull;
}

static unsigned below(unsigned n)
{
  return (unsigned)(rnd() % n);
}

static uint64_t mix(uint64_t x)
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
static int rows_of(long t)
{
  return 3 + (int)(mix((uint64_t)t) % 6);
}

static int pad_of(long t, int k)
{
  uint64_t h = mix((uint64_t)t * 64 + (uint64_t)k + 7);
  if ((mix((uint64_t)t) >> 32) % 10 == 0)
    return 2000 + (int)(h % 10000);
  return 50 + (int)(h % 2951);
}

static long long bytes_of(long t)
{
  long long sum = 0;
  for (int k = 0; k < rows_of(t); k++)
    sum += pad_of(t, k);
  return sum;
}

static unsigned long long now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

/* ---- what the writer did ------------------------------------------------- */

enum { TX_NONE, TX_ACKED, TX_UNKNOWN };

static unsigned char *txstate;  /* by txn number */
static long txcap;

/* Shared with the writer child. */
struct shared {
  int stop;                     /* parent -> writer: stop after this txn */
  int inflight;                 /* an `auralog sql` of the writer is running */
  long last_us;                 /* how long the last acknowledged one took */
  long next;                    /* next txn number */
  long acked, failed;
};
static struct shared *sh_w;
static pid_t writer_pid;

static char records_path[512], errors_path[512], timeline_path[512];
static long records_off;
static FILE *timeline;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
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

/* The writer: runs in a child; never returns. */
static void writer_main(void)
{
  int rfd = open(records_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  int efd = open(errors_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  int nfd = open("/dev/null", O_WRONLY);
  if (rfd < 0 || efd < 0 || nfd < 0)
    _exit(3);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, nfd, 1);
  posix_spawn_file_actions_adddup2(&fa, efd, 2);
  static char q[16384];
  useconds_t backoff = 0;
  while (!__atomic_load_n(&sh_w->stop, __ATOMIC_SEQ_CST)) {
    long t = sh_w->next;
    size_t len = (size_t)snprintf(q, sizeof q, "begin;");
    for (int k = 0; k < rows_of(t); k++)
      len += (size_t)snprintf(q + len, sizeof q - len,
                              " insert into camp values(%ld, %d, randomblob(%d));", t, k,
                              pad_of(t, k));
    snprintf(q + len, sizeof q - len, " commit;");
    char *argv[] = {(char *)bin, "sql", "--engine", engine, q, NULL};
    pid_t pid;
    int rc = 255, st;
    unsigned long long t0 = now_us();
    __atomic_store_n(&sh_w->inflight, 1, __ATOMIC_SEQ_CST);
    if (posix_spawn(&pid, bin, &fa, NULL, argv, environ) == 0) {
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
      rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    __atomic_store_n(&sh_w->inflight, 0, __ATOMIC_SEQ_CST);
    dprintf(rfd, "%ld %d\n", t, rc);
    if (rc != 0)
      dprintf(efd, "  ^ txn %ld: exit %d\n", t, rc);
    __atomic_store_n(&sh_w->next, t + 1, __ATOMIC_SEQ_CST);
    if (rc == 0) {
      __atomic_store_n(&sh_w->last_us, (long)(now_us() - t0), __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&sh_w->acked, 1, __ATOMIC_SEQ_CST);
      backoff = 0;
    } else {
      __atomic_add_fetch(&sh_w->failed, 1, __ATOMIC_SEQ_CST);
      backoff = backoff ? (backoff < 100000 ? 2 * backoff : backoff) : 10000;
      usleep(backoff);       /* the engine is down: do not spin */
    }
  }
  _exit(0);
}

static void writer_start(void)
{
  __atomic_store_n(&sh_w->stop, 0, __ATOMIC_SEQ_CST);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    writer_main();
  writer_pid = pid;
}

/* Stop the writer after its current transaction; take in what it did. */
static void writer_stop(void)
{
  if (writer_pid > 0) {
    int st;
    __atomic_store_n(&sh_w->stop, 1, __ATOMIC_SEQ_CST);
    while (waitpid(writer_pid, &st, 0) < 0 && errno == EINTR)
      ;
    writer_pid = 0;
  }
  FILE *f = fopen(records_path, "r");
  if (f == NULL)
    return;
  fseek(f, records_off, SEEK_SET);
  long t;
  int rc;
  while (fscanf(f, "%ld %d\n", &t, &rc) == 2) {
    if (t >= txcap) {
      long cap = txcap ? txcap : 1024;
      while (cap <= t)
        cap *= 2;
      txstate = realloc(txstate, (size_t)cap);
      memset(txstate + txcap, 0, (size_t)(cap - txcap));
      txcap = cap;
    }
    txstate[t] = rc == 0 ? TX_ACKED : TX_UNKNOWN;
  }
  records_off = ftell(f);
  fclose(f);
}

/* ---- faults -------------------------------------------------------------- */

static void keep_evidence(void)
{
  setenv("AURALOG_KEEP", "1", 1);   /* cluster_stop leaves the directory */
  note("FAILED");
}

static void crash_fault(const char *what)
{
  note("fault %s", what);
  int rc = sh(out, sizeof out, "%s fault --dir %s %s 2>&1", bin, dir, what);
  if (rc != 0) {
    keep_evidence();
    fail_msg("auralog fault %s failed (%d): %s (cluster kept in %s)", what, rc, out, dir);
  }
}

/* Take out what a crash point stops besides the engine: kind 1 one node,
 * 2 an AZ, 3 an AZ and one node of another AZ. */
static void nodes_down(int kind, const char *az, const char *node)
{
  char what[64];
  if (kind >= 2) {
    snprintf(what, sizeof what, "az-down %s", az);
    crash_fault(what);
  }
  if (kind != 2) {
    snprintf(what, sizeof what, "node-stop %s", node);
    crash_fault(what);
  }
}

static void restart(int point)
{
  note("cluster up");
  unsigned long long t0 = now_ms();
  int rc = sh(out, sizeof out, "%s cluster up --dir %s 2>&1", bin, dir);
  note("cluster up: exit %d after %llu ms", rc, now_ms() - t0);
  if (rc != 0) {
    keep_evidence();
    fail_msg("crash point %d: cluster up failed (%d): %s (logs in %s/log)", point, rc, out, dir);
  }
}

/* Wait until the writer has had n more commits acknowledged. */
static void wait_acks(long from, long n, int point, const char *when)
{
  unsigned long long deadline = now_ms() + 30000;
  while (__atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST) < from + n) {
    if (now_ms() > deadline) {
      writer_stop();
      keep_evidence();
      sh(out, sizeof out, "tail -5 %s", errors_path);
      fail_msg("crash point %d: no commit acknowledged %s for 30 s; last errors:\n%s"
               "(cluster kept in %s)", point, when, out, dir);
    }
    usleep(5000);
  }
}

/* ---- checks -------------------------------------------------------------- */

struct tally {
  long acked, unknown, unknown_present, lost, partial, phantom;
};

static int sql_arg(const char *q)
{
  return sh(out, sizeof out, "%s sql --engine %s '%s' 2>&1", bin, engine, q);
}

/* Every acknowledged txn whole, every other one whole or absent, the
 * bytes as written, integrity_check ok. Fails the test otherwise. */
static struct tally check(int point)
{
  struct tally tl = {0};
  unsigned long long t0 = now_ms();
  int rc = sql_arg("select txn, count(*), count(distinct k), min(k), max(k), "
                   "sum(length(pad)) from camp group by txn order by txn;");
  if (rc != 0) {
    keep_evidence();
    fail_msg("crash point %d: reading camp failed (%d): %s (cluster kept in %s)", point, rc,
             out, dir);
  }
  if (strlen(out) >= sizeof out - 1)
    fail_msg("crash point %d: the check's output does not fit in %zu bytes", point, sizeof out);
  unsigned char *seen = calloc((size_t)txcap + 1, 1);
  char problems[4096] = "";
  size_t plen = 0;
  int nprob = 0;
#define PROBLEM(...) do { \
    if (nprob++ < 12) \
      plen += (size_t)snprintf(problems + plen, sizeof problems - plen, __VA_ARGS__); \
  } while (0)
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    long t, cnt, dk, mink, maxk;
    long long bytes;
    if (sscanf(line, "%ld|%ld|%ld|%ld|%ld|%lld", &t, &cnt, &dk, &mink, &maxk, &bytes) != 6) {
      PROBLEM("  unreadable row '%s'\n", line);
      continue;
    }
    if (t < 0 || t >= txcap || txstate[t] == TX_NONE) {
      tl.phantom++;
      PROBLEM("  txn %ld was never attempted but has %ld rows\n", t, cnt);
      continue;
    }
    seen[t] = 1;
    int want = rows_of(t);
    if (cnt != want || dk != want || mink != 0 || maxk != want - 1 || bytes != bytes_of(t)) {
      tl.partial++;
      PROBLEM("  txn %ld (%s): %ld rows (k %ld..%ld, %ld distinct), %lld bytes; "
              "committed whole it has %d rows, %lld bytes\n",
              t, txstate[t] == TX_ACKED ? "acknowledged" : "unknown", cnt, mink, maxk, dk,
              bytes, want, bytes_of(t));
    }
  }
  for (long t = 0; t < txcap; t++) {
    if (txstate[t] == TX_ACKED) {
      tl.acked++;
      if (!seen[t]) {
        tl.lost++;
        PROBLEM("  txn %ld was acknowledged and is gone\n", t);
      }
    } else if (txstate[t] == TX_UNKNOWN) {
      tl.unknown++;
      tl.unknown_present += seen[t];
    }
  }
  free(seen);
#undef PROBLEM
  if (nprob) {
    keep_evidence();
    note("check after crash point %d: %d problems:\n%s", point, nprob, problems);
    fail_msg("crash point %d: %d problems (%ld lost, %ld partial, %ld never attempted):\n%s"
             "(cluster, timeline and records kept in %s)",
             point, nprob, tl.lost, tl.partial, tl.phantom, problems, dir);
  }
  rc = sql_arg("pragma integrity_check;");
  if (rc != 0 || strcmp(out, "ok\n") != 0) {
    keep_evidence();
    fail_msg("crash point %d: integrity_check (%d): %s (cluster kept in %s)", point, rc, out, dir);
  }
  note("check after crash point %d: ok (%ld acknowledged, %ld unknown of which %ld present) "
       "in %llu ms", point, tl.acked, tl.unknown, tl.unknown_present, now_ms() - t0);
  return tl;
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
  if (cluster_start("crash") != 0)
    return -1;
  snprintf(records_path, sizeof records_path, "%s/crash-records.txt", dir);
  snprintf(errors_path, sizeof errors_path, "%s/crash-writer.err", dir);
  snprintf(timeline_path, sizeof timeline_path, "%s/crash-timeline.txt", dir);
  timeline = fopen(timeline_path, "a");
  return timeline ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  if (writer_pid > 0) {
    kill(writer_pid, SIGKILL);
    waitpid(writer_pid, NULL, 0);
    writer_pid = 0;
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
  note("campaign: %d crash points, seed %llu, check every %d", points,
       (unsigned long long)seed, every);

  int rc = sql_arg("create table camp(txn int, k int, pad blob);"
                   "create index camp_txn on camp(txn);"
                   "create table filler(b blob);"
                   "insert into filler with recursive g(i) as (select 1 union all "
                   "select i + 1 from g where i < 1500) select randomblob(1000) from g;");
  if (rc != 0)
    fail_msg("creating the tables failed (%d): %s", rc, out);

  static const char *azs[] = {"A", "B", "C"};
  static const char *nodes[] = {"A1", "A2", "B1", "B2", "C1", "C2"};
  int n_engine = 0, n_node = 0, n_az = 0, n_az_node = 0, n_first = 0;
  struct tally tl = {0};
  for (int p = 1; p <= points; p++) {
    /* What to stop besides the engine: nothing, a node, an AZ, or an AZ
     * and one node of another AZ (the most the quorums allow). */
    int kind = (int)below(100), az = (int)below(3), other = (az + 1 + (int)below(2)) % 3;
    const char *node = nodes[2 * other + (int)below(2)];
    kind = kind < 35 ? 0 : kind < 60 ? 1 : kind < 80 ? 2 : 3;
    int nodes_first = kind != 0 && below(3) == 0;
    int explicit_up = below(2);
    /* The crash comes after a random number of commits, mostly at a random
     * point of the next one (an `auralog sql` takes a few ms), so that it
     * lands in every phase of a commit; sometimes anywhere. */
    unsigned commits = 1 + below(20), anywhere = below(4) == 0, after = below(150),
             gap = 20 + below(200), phase = below(1000), before;
    char what[64];

    note("crash point %d: kind %d az %s node %s nodes_first %d; writer at txn %ld", p, kind,
         azs[az], node, nodes_first, sh_w->next);
    long acked0 = __atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST);
    writer_start();
    wait_acks(acked0, commits, p, "before the crash");
    if (nodes_first) {
      /* Commits in flight when the nodes go, the engine killed later. */
      nodes_down(kind, azs[az], node);
      usleep(gap * 1000);
    }
    for (int i = 0; !anywhere && i < 1000 && !__atomic_load_n(&sh_w->inflight, __ATOMIC_SEQ_CST);
         i++)
      usleep(100);
    long took = __atomic_load_n(&sh_w->last_us, __ATOMIC_SEQ_CST);
    before = anywhere ? phase * 50 : (unsigned)(phase * (took > 100 ? took : 100) / 1000);
    usleep(before);
    note("crash %u us %s (the last commit took %ld us)", before,
         anywhere ? "after a commit" : "into a transaction", took);
    pid_t old_engine = pid_of("engine");
    crash_fault("engine-crash");
    if (!nodes_first && kind != 0) {
      usleep(after * 1000);
      nodes_down(kind, azs[az], node);
    }
    usleep(after * 1000);
    if (explicit_up && kind != 0) {
      if (kind >= 2) {
        snprintf(what, sizeof what, "az-up %s", azs[az]);
        crash_fault(what);
      }
      if (kind != 2) {
        snprintf(what, sizeof what, "node-start %s", node);
        crash_fault(what);
      }
    }
    restart(p);
    if (pid_of("engine") == old_engine) {
      keep_evidence();
      fail_msg("crash point %d: the engine (pid %d) was not restarted", p, (int)old_engine);
    }
    long acked1 = __atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST);
    wait_acks(acked1, 2, p, "after the restart");
    writer_stop();
    note("writer stopped at txn %ld (%ld acknowledged, %ld failed so far)", sh_w->next,
         sh_w->acked, sh_w->failed);
    n_engine += kind == 0;
    n_node += kind == 1;
    n_az += kind == 2;
    n_az_node += kind == 3;
    n_first += nodes_first;
    if (p % every == 0 || p == points)
      tl = check(p);
  }
  unsigned long long ms = now_ms() - t0;
  /* Requests the engine's death cut off (the others found it down). */
  sh(out, sizeof out, "grep -c 'closed the connection' %s", errors_path);
  int cut = atoi(out);
  printf("# crash campaign: %d crash points (%d engine only, %d +node, %d +AZ, %d +AZ+node; "
         "%d with nodes stopped first; %d cut a transaction in flight), %ld transactions: "
         "%ld acknowledged, %ld unknown (%ld present whole, %ld absent), lost %ld, "
         "partial %ld, integrity ok; %llu ms\n",
         points, n_engine, n_node, n_az, n_az_node, n_first, cut, tl.acked + tl.unknown,
         tl.acked, tl.unknown, tl.unknown_present, tl.unknown - tl.unknown_present, tl.lost,
         tl.partial, ms);
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
