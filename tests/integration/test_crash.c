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
 * torture` runs 500), AURALOG_CRASH_SEED the seed, AURALOG_CRASH_SHAPES
 * (a list of classic, interrupted, azcut, nodeback, slow) the shapes to
 * play, to isolate one (default all). An engine without --cache (`auralog
 * engine --help`) runs with its default cache; the summary says so. On a
 * failure the cluster directory is kept: the members' logs in log/,
 * crash-timeline.txt (what was done when), crash-records.txt ("txn rc"
 * per transaction),
 * crash-writer.err (why the unknown ones failed), crash-reads.txt
 * ("txn rows ms": what the reader saw, when) and crash-reader.err (why
 * reads failed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include "peer.h"

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

/* ---- what the writer did, what the reader saw ---------------------------- */

enum { TX_NONE, TX_ACKED, TX_UNKNOWN };

static unsigned char *txstate;  /* by txn number */
static int *rseen;              /* rows the reader saw of each txn (0: never seen it) */
static unsigned long long *rseen_ms;  /* when it first saw them */
static unsigned char *rmulti;   /* it saw the txn with different row counts */
static long txcap;

static void grow(long t)
{
  if (t < txcap)
    return;
  long cap = txcap ? txcap : 1024;
  while (cap <= t)
    cap *= 2;
  txstate = realloc(txstate, (size_t)cap);
  rseen = realloc(rseen, (size_t)cap * sizeof *rseen);
  rseen_ms = realloc(rseen_ms, (size_t)cap * sizeof *rseen_ms);
  rmulti = realloc(rmulti, (size_t)cap);
  memset(txstate + txcap, 0, (size_t)(cap - txcap));
  memset(rseen + txcap, 0, (size_t)(cap - txcap) * sizeof *rseen);
  memset(rseen_ms + txcap, 0, (size_t)(cap - txcap) * sizeof *rseen_ms);
  memset(rmulti + txcap, 0, (size_t)(cap - txcap));
  txcap = cap;
}

/* Shared with the writer and reader children. */
struct shared {
  int stop;                     /* parent -> writer: stop after this txn */
  int inflight;                 /* an `auralog sql` of the writer is running */
  long last_us;                 /* how long the last acknowledged one took */
  long next;                    /* next txn number */
  long acked, failed;
  int rstop;                    /* parent -> reader: stop now */
  long reads, reads_ok, reads_full;
};
static struct shared *sh_w;
static pid_t writer_pid, reader_pid;

static char records_path[512], errors_path[512], timeline_path[512], reads_path[512],
            rerrors_path[512];
static long records_off, reads_off;
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

/* One read of the reader: run q, return what `auralog sql` printed on its
 * standard output (rows only: errors go to crash-reader.err) in *buf, and its
 * exit status. A stop request kills the client: it prints its rows all at
 * once, only after the engine's whole reply came, so a killed client
 * printed either all of them or none. */
static int reader_query(const char *q, int efd, char **buf, size_t *cap)
{
  int fds[2];
  size_t len = 0;
  (*buf)[0] = 0;
  if (pipe(fds) != 0)
    return 255;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, efd, 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  char *argv[] = {(char *)bin, "sql", "--engine", engine, (char *)q, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return 255;
  }
  int killed = 0;
  for (;;) {
    if (!killed && __atomic_load_n(&sh_w->rstop, __ATOMIC_SEQ_CST)) {
      kill(pid, SIGKILL);     /* our own unreaped child: the pid is its */
      killed = 1;
    }
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    if (poll(&pf, 1, 50) <= 0)
      continue;
    if (len + 65536 + 1 > *cap) {
      *cap = (*cap + 65536) * 2;
      *buf = realloc(*buf, *cap);
    }
    ssize_t n = read(fds[0], *buf + len, *cap - len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  (*buf)[len] = 0;
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The reader: runs in a child; never returns. Every txn it sees with a row
 * count it had not recorded goes to crash-reads.txt as "txn rows ms". */
static void reader_main(void)
{
  int rfd = open(reads_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  int efd = open(rerrors_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (rfd < 0 || efd < 0)
    _exit(3);
  /* What it knows: the parent's copy (inherited), grown locally. */
  long kcap = txcap;
  int *known = kcap ? malloc((size_t)kcap * sizeof *known) : NULL;
  if (kcap)
    memcpy(known, rseen, (size_t)kcap * sizeof *known);
  size_t cap = 1 << 20;
  char *buf = malloc(cap);
  uint64_t jitter = mix(now_us() ^ (uint64_t)getpid());
  useconds_t backoff = 0;
  for (long n = 0; !__atomic_load_n(&sh_w->rstop, __ATOMIC_SEQ_CST); n++) {
    int full = n % 8 == 0;
    const char *q = full ? "select txn, count(*) from camp group by txn;"
                         : "select txn, count(*) from camp where txn >= "
                           "(select max(txn) from camp) - 40 group by txn;";
    int rc = reader_query(q, efd, &buf, &cap);
    unsigned long long ms = now_ms();
    __atomic_add_fetch(&sh_w->reads, 1, __ATOMIC_SEQ_CST);
    if (rc == 0) {
      __atomic_add_fetch(&sh_w->reads_ok, 1, __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&sh_w->reads_full, full, __ATOMIC_SEQ_CST);
    }
    /* Whatever it printed was shown to a client, exit status aside. */
    for (char *line = buf, *end; *line; line = end + 1) {
      end = strchr(line, '\n');
      if (end == NULL)
        break;
      long t, c;
      char extra;
      *end = 0;
      if (sscanf(line, "%ld|%ld%c", &t, &c, &extra) != 2 || t < 0 || c <= 0)
        continue;
      if (t >= kcap) {
        long ncap = kcap ? kcap : 1024;
        while (ncap <= t)
          ncap *= 2;
        known = realloc(known, (size_t)ncap * sizeof *known);
        memset(known + kcap, 0, (size_t)(ncap - kcap) * sizeof *known);
        kcap = ncap;
      }
      if (known[t] != c) {
        known[t] = (int)c;
        dprintf(rfd, "%ld %ld %llu\n", t, c, ms);
      }
    }
    jitter = mix(jitter);
    backoff = rc == 0 ? 0 : backoff ? (backoff < 50000 ? 2 * backoff : backoff) : 10000;
    useconds_t pause = (useconds_t)(100000 + jitter % 100000) + backoff;
    for (useconds_t slept = 0; slept < pause && !__atomic_load_n(&sh_w->rstop, __ATOMIC_SEQ_CST);
         slept += 10000)
      usleep(10000);
  }
  _exit(0);
}

static pid_t fork_child(void (*main_fn)(void))
{
  fflush(stdout);
  fflush(stderr);
  if (timeline)
    fflush(timeline);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    main_fn();
  return pid;
}

/* Start the writer and the reader. */
static void clients_start(void)
{
  __atomic_store_n(&sh_w->stop, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&sh_w->rstop, 0, __ATOMIC_SEQ_CST);
  writer_pid = fork_child(writer_main);
  reader_pid = fork_child(reader_main);
}

static void reap(pid_t *pid)
{
  if (*pid > 0) {
    int st;
    while (waitpid(*pid, &st, 0) < 0 && errno == EINTR)
      ;
    *pid = 0;
  }
}

/* Stop the writer after its current transaction, the reader at once; take
 * in what they did and saw. */
static void clients_stop(void)
{
  __atomic_store_n(&sh_w->rstop, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&sh_w->stop, 1, __ATOMIC_SEQ_CST);
  reap(&reader_pid);
  reap(&writer_pid);
  FILE *f = fopen(records_path, "r");
  if (f) {
    fseek(f, records_off, SEEK_SET);
    long t;
    int rc;
    while (fscanf(f, "%ld %d\n", &t, &rc) == 2) {
      grow(t);
      txstate[t] = rc == 0 ? TX_ACKED : TX_UNKNOWN;
    }
    records_off = ftell(f);
    fclose(f);
  }
  f = fopen(reads_path, "r");
  if (f) {
    fseek(f, reads_off, SEEK_SET);
    long t, c;
    unsigned long long ms;
    while (fscanf(f, "%ld %ld %llu\n", &t, &c, &ms) == 3) {
      grow(t);
      if (rseen[t] == 0) {
        rseen[t] = (int)c;
        rseen_ms[t] = ms;
      } else if (rseen[t] != c) {
        rmulti[t] = 1;
        note("the reader saw txn %ld with %ld rows at %llu, with %d rows at %llu", t, c, ms,
             rseen[t], rseen_ms[t]);
      }
    }
    reads_off = ftell(f);
    fclose(f);
  }
}

/* ---- faults -------------------------------------------------------------- */

static int cache_ok;            /* the engine has --cache */
static int point_cache;         /* cache of the engines this point starts (0: default) */
static int n_crashes, n_small_cache_starts, n_by_hand;
static pid_t crashed_engine;    /* the engine the last crash killed (0: it was restarted) */

static void keep_evidence(void)
{
  setenv("AURALOG_KEEP", "1", 1);   /* cluster_stop leaves the directory */
  note("FAILED");
}

/* For a failure message: what the nodes' truncations cut lately. */
static const char *cut_lines(void)
{
  static char o[2048];
  sh(o, sizeof o, "grep -h 'records\\? cut' %s/log/[ABC][12].log | grep -v ' 0 records cut' | "
     "tail -4", dir);
  return o;
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

static void faultf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void faultf(const char *fmt, ...)
{
  char what[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  crash_fault(what);
}

/* How many lines of node's log hold text. */
static int log_count(const char *node, const char *text)
{
  char o[64];
  sh(o, sizeof o, "grep -c -F '%s' %s/log/%s.log 2>/dev/null", text, dir, node);
  return atoi(o);
}

/* A partition (or its end) is played by the nodes once the coordinator
 * tells them: wait until both nodes of the AZ say so in their log. */
static void partition_fault(const char *what, char az, const char *logline)
{
  char n1[3] = {az, '1', 0}, n2[3] = {az, '2', 0};
  int b1 = log_count(n1, logline), b2 = log_count(n2, logline);
  crash_fault(what);
  for (int i = 0; i < 500; i++) {
    if (log_count(n1, logline) > b1 && log_count(n2, logline) > b2)
      return;
    usleep(20000);
  }
  keep_evidence();
  fail_msg("`auralog fault %s`: the nodes of AZ %c did not play it within 10 s (cluster "
           "kept in %s)", what, az, dir);
}

static void partition(char az)
{
  char what[32];
  snprintf(what, sizeof what, "partition %c", az);
  partition_fault(what, az, "lab fault: partitioned");
}

static void heal(char az)
{
  partition_fault("heal", az, "lab fault: not partitioned");
}

/* Take out what a crash point stops besides the engine: kind 1 one node,
 * 2 an AZ, 3 an AZ and one node of another AZ. */
static void nodes_down(int kind, const char *az, const char *node)
{
  if (kind >= 2)
    faultf("az-down %s", az);
  if (kind != 2)
    faultf("node-stop %s", node);
}

/* Kill the engine: mostly at a random point of the writer's next
 * transaction (an `auralog sql` takes a few ms), so that the crash lands
 * in every phase of a commit; sometimes anywhere. */
static void crash_engine(void)
{
  unsigned anywhere = below(4) == 0, phase = below(1000);
  for (int i = 0; !anywhere && i < 1000 && !__atomic_load_n(&sh_w->inflight, __ATOMIC_SEQ_CST);
       i++)
    usleep(100);
  long took = __atomic_load_n(&sh_w->last_us, __ATOMIC_SEQ_CST);
  unsigned before = anywhere ? phase * 50 : (unsigned)(phase * (took > 100 ? took : 100) / 1000);
  usleep(before);
  note("crash %u us %s (the last commit took %ld us)", before,
       anywhere ? "after a commit" : "into a transaction", took);
  crashed_engine = pid_of("engine");
  crash_fault("engine-crash");
  n_crashes++;
}

static void engine_restarted(int point)
{
  if (crashed_engine && pid_of("engine") == crashed_engine) {
    keep_evidence();
    fail_msg("crash point %d: the engine (pid %d) was not restarted", point,
             (int)crashed_engine);
  }
  crashed_engine = 0;
  n_small_cache_starts += point_cache > 0;
}

/* `cluster up`: starts every node that does not run, then the engine
 * (which recovers) if it does not run, with this point's cache. */
static void restart(int point)
{
  char cache[32] = "";
  if (cache_ok)
    snprintf(cache, sizeof cache, " --cache %d", point_cache);
  note("cluster up%s", cache);
  int started = crashed_engine != 0;
  unsigned long long t0 = now_ms();
  int rc = sh(out, sizeof out, "%s cluster up --dir %s%s 2>&1", bin, dir, cache);
  note("cluster up: exit %d after %llu ms", rc, now_ms() - t0);
  if (rc != 0) {
    keep_evidence();
    fail_msg("crash point %d: cluster up failed (%d): %s\nlatest truncations that cut "
             "records:\n%s(cluster, timeline and logs kept in %s)", point, rc, out, cut_lines(),
             dir);
  }
  if (started)
    engine_restarted(point);
}

/* Start the engine by hand, as `cluster up` does (same arguments, log and
 * pid file), but leave the nodes as they are: its recovery runs without
 * the ones that are down. Waits until it serves (it listens once the
 * volume is recovered). */
static void engine_alone(int point, const char *without)
{
  char cache[32] = "";
  if (cache_ok && point_cache > 0)
    snprintf(cache, sizeof cache, " --cache %d", point_cache);
  note("engine started by hand, recovery without %s%s", without, cache);
  unsigned long long t0 = now_ms();
  int rc = sh(out, sizeof out, "cd %s && { %s engine --volume main --listen %s --coord %s%s "
              "< /dev/null >> log/engine.log 2>&1 & echo $! > run/engine.pid; } 2>&1", dir,
              bin, engine, coord, cache);
  pid_t pid = pid_of("engine");
  if (rc != 0 || pid <= 0) {
    keep_evidence();
    fail_msg("crash point %d: cannot start the engine (%d): %s", point, rc, out);
  }
  n_by_hand++;
  char why[256];
  for (;;) {
    struct rpc r;
    if (rpc_open(&r, engine, 500, why, sizeof why) == 0) {
      rpc_close(&r);
      break;
    }
    if (!pid_alive(pid) || now_ms() - t0 > 30000) {
      keep_evidence();
      sh(out, sizeof out, "tail -3 %s/log/engine.log", dir);
      fail_msg("crash point %d: the engine started with %s down %s; its log ends:\n%s"
               "latest truncations that cut records:\n%s(cluster kept in %s)", point, without,
               pid_alive(pid) ? "does not serve after 30 s" : "exited", out, cut_lines(), dir);
    }
    usleep(50000);
  }
  note("engine %d serves after %llu ms", (int)pid, now_ms() - t0);
  engine_restarted(point);
}

/* Wait until the writer has had n more commits acknowledged. */
static void wait_acks(long from, long n, int point, const char *when)
{
  unsigned long long deadline = now_ms() + 30000;
  while (__atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST) < from + n) {
    if (now_ms() > deadline) {
      clients_stop();
      keep_evidence();
      sh(out, sizeof out, "tail -5 %s", errors_path);
      fail_msg("crash point %d: no commit acknowledged %s for 30 s; last errors:\n%s"
               "latest truncations that cut records:\n%s(cluster kept in %s)", point, when,
               out, cut_lines(), dir);
    }
    usleep(5000);
  }
}

static void more_acks(long n, int point, const char *when)
{
  wait_acks(__atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST), n, point, when);
}

/* ---- interrupted recoveries (a hand-made writer, peer.c) ----------------- */

static int n_ir, n_ir_queries, n_ir_truncs;

/* One recovery that stops half-way: a new writer epoch, a SegQuery to a
 * random subset of the segments, and, when the queries reached a read
 * quorum of every PG (a recovery computes its VDL only then), sometimes a
 * Truncate of that epoch on one or two segments of a PG. Its range is
 * (from, from + LAL] with from the highest max_lsn of every queried
 * segment of every PG: what the buggy recovery did, taking records one
 * segment held for durable. A truncation's from is a volume-wide VDL,
 * at or above every acknowledged commit of every PG; one below that is not
 * something any recovery writes (only a forged message could). With
 * `must` (a node), the recovery queries that node's segment and a read
 * quorum of every PG, and truncates that node's segments only. The choices
 * come from sub (one draw of the campaign's generator), whatever the
 * number of PGs. */
static void interrupted_recovery(int point, uint64_t sub, const char *must)
{
  char why[256];
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 1);
  n_ir++;
  note("interrupted recovery: epoch %llu, %zu PGs%s%s", (unsigned long long)v->epoch,
       v->n_pgs, must ? ", truncating on " : "", must ? must : "");
  struct pgq {
    int nok, ok_slot[NCOPIES], must_slot, trunc, two;
    unsigned pick1, pick2;
    uint64_t from;
  } *q = calloc(v->n_pgs + 1, sizeof *q);
  uint64_t top = 0;
  for (size_t p = 0; p < v->n_pgs; p++) {
    const Auralog__Pg *g = v->pgs[p];
    struct pgq *x = &q[p];
    uint64_t h = mix(sub + 0x1000 * (uint64_t)(g->pg + 1)), h2 = mix(h);
    unsigned nseg = g->n_segments < NCOPIES ? (unsigned)g->n_segments : NCOPIES;
    x->must_slot = -1;
    if (must == NULL && h % 4 == 0)
      continue;                 /* this PG was not reached */
    unsigned mask = (unsigned)(h >> 8) & 63;
    x->pick1 = (unsigned)(h >> 16) % 6;
    x->pick2 = (unsigned)(h >> 24) % 6;
    x->trunc = must ? 1 : (h >> 32) % 2 == 0;
    x->two = must == NULL && (h >> 36) % 3 == 0;
    for (unsigned s = 0; s < nseg; s++)
      if (must && strcmp(g->segments[s]->node, must) == 0)
        x->must_slot = (int)s;
    if (x->must_slot >= 0) {
      mask |= 1u << x->must_slot;
      for (unsigned k = 0; __builtin_popcount(mask) < VR + 1 && k < nseg; k++)
        mask |= 1u << ((h2 + k) % nseg);
    }
    if (mask == 0)
      mask = 1u << x->pick1;
    char text[1024];
    size_t tl = 0;
    text[0] = 0;
    for (unsigned s = 0; s < nseg; s++) {
      if (!(mask & (1u << s)))
        continue;
      const Auralog__Segment *seg = g->segments[s];
      Env *rep = peer_seg_query(seg->addr, v->id, g->pg, v->epoch, why, sizeof why);
      n_ir_queries++;
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO) {
        x->ok_slot[x->nok++] = (int)s;
        if (rep->seg_info->max_lsn > x->from)
          x->from = rep->seg_info->max_lsn;
        tl += (size_t)snprintf(text + tl, sizeof text - tl, " %s(scl %llu max %llu vdl %llu)",
                               seg->node, (unsigned long long)rep->seg_info->scl,
                               (unsigned long long)rep->seg_info->max_lsn,
                               (unsigned long long)rep->seg_info->vdl);
      } else {
        tl += (size_t)snprintf(text + tl, sizeof text - tl, " %s(%.60s)", seg->node,
                               peer_describe(rep, why));
      }
      if (tl >= sizeof text)
        tl = sizeof text - 1;
      wire_free(rep);
    }
    if (x->from > top)
      top = x->from;
    note("  pg %u queried:%s", g->pg, text);
  }
  int quorums = 1;
  for (size_t p = 0; p < v->n_pgs; p++)
    quorums &= q[p].nok >= VR;
  for (size_t p = 0; p < v->n_pgs && quorums; p++) {
    const Auralog__Pg *g = v->pgs[p];
    struct pgq *x = &q[p];
    if (!x->trunc)
      continue;
    int targets[2] = {x->must_slot, -1}, nt = 1;
    uint64_t from = top;
    if (must) {
      int found = 0;
      for (int i = 0; i < x->nok; i++)
        found |= x->ok_slot[i] == x->must_slot;
      if (!found)
        continue;               /* the node did not answer */
    } else {
      targets[0] = x->ok_slot[x->pick1 % (unsigned)x->nok];
      if (x->two && x->ok_slot[x->pick2 % (unsigned)x->nok] != targets[0])
        targets[nt++] = x->ok_slot[x->pick2 % (unsigned)x->nok];
    }
    for (int i = 0; i < nt; i++) {
      const Auralog__Segment *seg = g->segments[targets[i]];
      Env *rep = peer_truncate(seg->addr, v->id, g->pg, v->epoch, from, from + LAL, why,
                               sizeof why);
      n_ir_truncs++;
      note("  pg %u: truncate (%llu, %llu] of epoch %llu on %s: %s", g->pg,
           (unsigned long long)from, (unsigned long long)(from + LAL),
           (unsigned long long)v->epoch, seg->node, peer_describe(rep, why));
      wire_free(rep);
    }
  }
  free(q);
  note("interrupted recovery of epoch %llu stops here", (unsigned long long)v->epoch);
  auralog__volume__free_unpacked(v, NULL);
  (void)point;
}

/* ---- checks -------------------------------------------------------------- */

struct tally {
  long acked, unknown, unknown_present, lost, partial, phantom, reader_seen, reader_lost;
};

static int sql_arg(const char *q)
{
  return sh(out, sizeof out, "%s sql --engine %s '%s' 2>&1", bin, engine, q);
}

static unsigned long long converge_max_ms;

/* Every fault healed and the engine up: within 15 s, status shows no
 * segment refusing the engine's Appends, and every segment of every PG up
 * with its PG's highest SCL. Fails the test otherwise, naming who lags. */
static void converge(int point)
{
  unsigned long long t0 = now_ms();
  char last[4096];
  for (;;) {
    cJSON *o = status("main"), *p, *g;
    cJSON *ref = cJSON_GetObjectItem(o, "refusing");
    double refusing = cJSON_IsNumber(ref) ? ref->valuedouble : -1;
    int ok = refusing == 0;
    size_t n = (size_t)snprintf(last, sizeof last, "refusing %.0f", refusing);
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(o, "pgs")) {
      double hi = -1;
      int pg = (int)cJSON_GetObjectItem(p, "pg")->valuedouble;
      cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments"))
        if (cJSON_GetObjectItem(g, "scl")->valuedouble > hi)
          hi = cJSON_GetObjectItem(g, "scl")->valuedouble;
      cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments")) {
        const char *node = cJSON_GetObjectItem(g, "node")->valuestring;
        double scl = cJSON_GetObjectItem(g, "scl")->valuedouble;
        if (strcmp(cJSON_GetObjectItem(g, "state")->valuestring, "up") != 0) {
          ok = 0;
          n += (size_t)snprintf(last + n, sizeof last - n, "; pg %d: %s shown down", pg, node);
        } else if (scl < hi) {
          ok = 0;
          n += (size_t)snprintf(last + n, sizeof last - n, "; pg %d: %s scl %.0f, its PG's "
                                "highest %.0f", pg, node, scl, hi);
        }
        if (n >= sizeof last)
          n = sizeof last - 1;
      }
    }
    cJSON_Delete(o);
    unsigned long long took = now_ms() - t0;
    if (ok) {
      if (took > converge_max_ms)
        converge_max_ms = took;
      note("converged after %llu ms", took);
      return;
    }
    if (took > 15000) {
      keep_evidence();
      note("not converged 15 s after every fault healed: %s", last);
      sh(out, sizeof out, "grep -h -E 'refused|takes Appends again' %s/log/engine.log | "
         "tail -4", dir);
      fail_msg("crash point %d: 15 s after every fault healed, the segments have not "
               "converged: %s\nengine log:\n%s(cluster, timeline and records kept in %s)",
               point, last, out, dir);
    }
    usleep(200000);
  }
}

/* Every acknowledged txn whole, every other one whole or absent, the
 * bytes as written, integrity_check ok, every txn the reader saw there
 * and whole; then the segments converge. Fails the test otherwise. */
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
  int *have = calloc((size_t)txcap + 1, sizeof *have);   /* rows present, by txn */
  char problems[4096] = "";
  size_t plen = 0;
  int nprob = 0;
#define PROBLEM(...) do { \
    if (nprob++ < 12 && plen < sizeof problems) \
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
    have[t] = (int)cnt;
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
      if (!have[t]) {
        tl.lost++;
        PROBLEM("  txn %ld was acknowledged and is gone\n", t);
      }
    } else if (txstate[t] == TX_UNKNOWN) {
      tl.unknown++;
      tl.unknown_present += have[t] != 0;
    }
    if (rseen[t] == 0)
      continue;
    /* No client ever read a row that is later absent (invariant 5), nor a
     * part of a transaction (invariant 2). */
    tl.reader_seen++;
    if (txstate[t] == TX_NONE) {
      PROBLEM("  the reader saw txn %ld (%d rows, at %llu) that was never attempted\n", t,
              rseen[t], rseen_ms[t]);
    } else if (!have[t]) {
      tl.reader_lost++;
      PROBLEM("  the reader saw txn %ld (%s; %d rows, at %llu) and it is now absent\n", t,
              txstate[t] == TX_ACKED ? "acknowledged" : "unknown", rseen[t], rseen_ms[t]);
    } else if (rseen[t] != rows_of(t) || rmulti[t]) {
      tl.partial++;
      PROBLEM("  the reader saw txn %ld with %d rows at %llu%s; committed whole it has %d\n",
              t, rseen[t], rseen_ms[t], rmulti[t] ? " (and other counts: see timeline)" : "",
              rows_of(t));
    }
  }
  free(have);
#undef PROBLEM
  if (nprob) {
    keep_evidence();
    note("check after crash point %d: %d problems:\n%s", point, nprob, problems);
    fail_msg("crash point %d: %d problems (%ld lost, %ld partial, %ld never attempted, %ld "
             "seen by the reader and gone):\n%slatest truncations that cut records:\n%s"
             "(cluster, timeline, records and reads kept in %s)", point, nprob, tl.lost,
             tl.partial, tl.phantom, tl.reader_lost, problems, cut_lines(), dir);
  }
  rc = sql_arg("pragma integrity_check;");
  if (rc != 0 || strcmp(out, "ok\n") != 0) {
    keep_evidence();
    fail_msg("crash point %d: integrity_check (%d): %s (cluster kept in %s)", point, rc, out, dir);
  }
  note("check after crash point %d: ok (%ld acknowledged, %ld unknown of which %ld present, "
       "%ld seen by the reader) in %llu ms", point, tl.acked, tl.unknown, tl.unknown_present,
       tl.reader_seen, now_ms() - t0);
  converge(point);
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

enum { SH_CLASSIC, SH_INTERRUPTED, SH_AZCUT, SH_NODE_BACK, SH_SLOW, NSHAPES };
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
                                           "slow nodes, small cache"};
  /* AURALOG_CRASH_SHAPES (e.g. "classic,azcut"): only these shapes, to
   * replay or isolate one; a point drawn as another takes the next one
   * listed (the draws stay the same). Default: every shape. */
  static const char *const shape_key[] = {"classic", "interrupted", "azcut", "nodeback",
                                          "slow"};
  int enabled[NSHAPES], any = 0;
  const char *only = getenv("AURALOG_CRASH_SHAPES");
  for (int i = 0; i < NSHAPES; i++) {
    enabled[i] = only == NULL || !*only || strstr(only, shape_key[i]) != NULL;
    any |= enabled[i];
  }
  if (!any)
    fail_msg("AURALOG_CRASH_SHAPES='%s' names no shape (classic, interrupted, azcut, "
             "nodeback, slow)", only);
  struct tally tl = {0};
  for (int p = 1; p <= points; p++) {
    unsigned r = below(100);
    int shape = r < 40 ? SH_CLASSIC : r < 60 ? SH_INTERRUPTED : r < 75 ? SH_AZCUT
              : r < 90 ? SH_NODE_BACK : SH_SLOW;
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
