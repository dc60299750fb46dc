/*
 * recovery.c: `auralog bench recovery`: how long the writer takes to come
 * back after a crash, as the log it leaves behind grows, beside stock
 * SQLite replaying its WAL after the same transactions.
 *
 * The claim (paper §4.3): a traditional database replays its redo log
 * since the last checkpoint before it can serve, so recovery grows with
 * the log; in Aurora the storage nodes apply redo on demand, so a new
 * writer only asks a read quorum of each protection group how far its
 * log is complete, computes the VDL, truncates above it and opens. That
 * costs a few round trips per PG, whatever the length of the log. Nothing
 * in auralog coalesces records into pages yet, so every record ever
 * written is unmaterialized: the worst case for the claim.
 *
 * One volume, cumulative. A table of ROWS rows of about ROW_BYTES bytes
 * (a few rows per page, so random rows fall on different pages) is made
 * once; then each transaction adds 1 to one integer column of UPD random
 * rows, chosen from the seed: about UPD records per commit (one per
 * changed page), each a few bytes of page delta, so a million records
 * cost seconds, not hours. At each log length asked for:
 *
 *   auralog  the engine runs transactions until it has shipped at least
 *            that many records (counted by LSN: one per record, each
 *            engine lifetime starting from the next_lsn its recovery
 *            left; checked against the engine's own `records` counter
 *            before every crash). Then, REPEATS times: SIGKILL the engine
 *            (`auralog fault engine-crash`), start it again (`auralog
 *            cluster up`), and take the engine's own recovery time
 *            (recovery_ms in the status: its quorum reads and truncation),
 *            its open time (from its log: recovery plus SQLite's first
 *            schema read) and the time from `cluster up` to the first
 *            answered query (what a user waits).
 *
 *   sqlite   a child process writes the same transactions into a local
 *            file in WAL mode (page size 4096, synchronous=FULL,
 *            wal_autocheckpoint=0, so the WAL keeps every frame) and
 *            kills itself after its last commit. We time open + first
 *            query: that is when SQLite rebuilds its wal-index by reading
 *            and checksumming every frame of the WAL, its replay. The
 *            measuring connection must not checkpoint at close
 *            (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE), or the next size would
 *            start from an empty WAL. The WAL was just written, so the
 *            warm figure reads it from the OS page cache; the cold one
 *            first drops it (posix_fadvise DONTNEED).
 *
 * The cluster is private (its own directory and ports); the nodes' data
 * and the SQLite files are removed at the end, the logs kept.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "lib/log.h"
#include "param.h"
#include "status.h"

#define ROWS       12000    /* 3000 pages of 4 KiB: under CACHE_PAGES, so the
                               engine writes without reading back from storage */
#define ROW_BYTES  900      /* 4 rows a page */
#define UPD        300      /* rows updated per transaction: ~290 pages */
#define NSIZES     16
#define MAXREP     20
#define WAL_HDR    32       /* SQLite's WAL header, then frames of 24 + page */
#define FRAME_HDR  24
#define FREE_KEEP  (2ull << 30)   /* leave this much disk free */
#define STR_(x)    #x
#define STR(x)     STR_(x)

static const char setup_sql[] =
  "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, pad BLOB);"
  /* n starts at 1000000 so that n + 1 keeps its 3-byte encoding: the cell
   * keeps its size and SQLite overwrites it in place, a small delta. */
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < " STR(ROWS) ") "
  "INSERT INTO t SELECT x, 1000000, zeroblob(" STR(ROW_BYTES) ") FROM c;";

struct size {
  uint64_t want;              /* records asked for */
  uint64_t records;           /* records in the log when we crashed */
  uint64_t txns;              /* transactions run so far (0 is the setup) */
  int nrep;
  double rec[MAXREP], open[MAXREP], first[MAXREP];   /* ms */
  int sq;                     /* sqlite measured */
  char sq_why[200];           /* ...or why not */
  uint64_t frames, wal_bytes;
  double warm[MAXREP], cold;  /* ms */
};

/* What cleanup needs, also on die()'s exit. */
static struct {
  pid_t owner;
  pid_t upid;                 /* a `cluster up` under way */
  int up;
  char dir[1024], log[1200], sqdir[1200], db[1300];
} B;

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
  stopped = sig;
}

/* Stop the cluster and remove the big files: the nodes' lmdb data and the
 * SQLite database. Runs at exit, also after die(); not in children. */
static void cleanup(void)
{
  char p[1300];
  if (getpid() != B.owner)
    return;
  if (B.upid > 0) {
    /* Let it finish (it gives up by itself), or it could start members
     * after `cluster down` has stopped them. */
    unsigned long long until = now_ms() + CLUSTER_WAIT_MS + 5000;
    int gone;
    while (!(gone = bench_exited(B.upid)) && now_ms() < until)
      usleep(20000);
    if (!gone)
      bench_stop(B.upid, 0);
    B.upid = 0;
  }
  if (B.up) {
    bench_cluster_down(B.dir);
    B.up = 0;
    snprintf(p, sizeof p, "%s/data", B.dir);
    bench_rm_tree(p);
  }
  if (B.sqdir[0]) {
    bench_rm_tree(B.sqdir);
    B.sqdir[0] = 0;
  }
}

/* ---- progress -------------------------------------------------------------- */

static int tty;

/* One line on stderr: redrawn in place on a terminal (at most every 100
 * ms unless force), else printed only when force (a new phase). */
static void progress(int force, const char *fmt, ...)
{
  static double last;
  double now = bench_now_us();
  if (!force && (!tty || now - last < 100000))
    return;
  last = now;
  va_list ap;
  va_start(ap, fmt);
  fputs(tty ? "\r\033[Kbench recovery: " : "bench recovery: ", stderr);
  vfprintf(stderr, fmt, ap);
  if (!tty)
    fputc('\n', stderr);
  va_end(ap);
}

static void progress_end(void)
{
  if (tty)
    fprintf(stderr, "\r\033[K");
}

static void check_stop(void)
{
  if (stopped) {
    progress_end();
    die("bench recovery: interrupted (signal %d); cluster stopped", (int)stopped);
  }
}

/* ---- the workload ----------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Transaction i of the run (0 is the setup) into buf. A function of the
 * seed and i alone, so both systems run exactly the same ones. */
static const char *txn_sql(uint64_t seed, uint64_t i, char *buf, size_t n)
{
  if (i == 0)
    return setup_sql;
  uint64_t s = seed ^ (i * 0xD1B54A32D192ED03ull);
  size_t len = (size_t)snprintf(buf, n, "UPDATE t SET n = n + 1 WHERE id IN (");
  for (int k = 0; k < UPD && len < n; k++)
    len += (size_t)snprintf(buf + len, n - len, "%s%llu", k ? "," : "",
                            (unsigned long long)(splitmix(&s) % ROWS + 1));
  if (len < n)
    snprintf(buf + len, n - len, ")");
  return buf;
}

/* The row the first query after a crash reads. */
static uint64_t probe_id(uint64_t seed, int k)
{
  uint64_t s = seed + 77 + (uint64_t)k;
  return splitmix(&s) % ROWS + 1;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
  double s[MAXREP];
  if (n <= 0)
    return 0;
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double maxof(const double *v, int n)
{
  double m = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > m)
      m = v[i];
  return m;
}

/* ---- auralog ---------------------------------------------------------------- */

struct eng {
  char coord[64], addr[64];
  struct rpc r;
  int conn;
  uint64_t epoch;
  uint64_t base;              /* LSN before this lifetime's first record */
  uint64_t last;              /* its latest commit LSN */
  uint64_t prior;             /* records of earlier lifetimes */
  uint64_t txns;              /* transactions run (next one to run) */
  uint32_t page_size;
};

static uint64_t eng_records(const struct eng *e)
{
  return e->prior + (e->last - e->base);
}

/* Status of volume main, waiting until ok() accepts its engine report. */
static Env *status_until(struct eng *e, int (*ok)(const struct eng *, const Auralog__EngineStat *),
                         int ms, char *why, size_t n)
{
  unsigned long long until = now_ms() + (unsigned)ms;
  for (;;) {
    Env *rep = status_fetch(e->coord, "main", why, n);
    if (rep && rep->status->engine && ok(e, rep->status->engine))
      return rep;
    if (rep)
      snprintf(why, n, "no engine report that fits yet");
    wire_free(rep);
    if (now_ms() >= until)
      return NULL;
    usleep(20000);
  }
}

/* A report from a new engine (a higher epoch than the one we knew). */
static int new_epoch(const struct eng *e, const Auralog__EngineStat *s)
{
  return s->epoch > e->epoch;
}

/* A report that has every record our commits shipped. */
static int all_shipped(const struct eng *e, const Auralog__EngineStat *s)
{
  return s->epoch == e->epoch && s->records >= e->last - e->base && s->pending == 0;
}

/* A new engine life: learn its epoch and where its LSNs start. */
static void eng_learn(struct eng *e, double *rec_ms)
{
  char why[256];
  Env *rep = status_until(e, new_epoch, 10000, why, sizeof why);
  if (rep == NULL)
    die("bench recovery: the restarted engine never reported to the coordinator: %s", why);
  const Auralog__EngineStat *s = rep->status->engine;
  e->epoch = s->epoch;
  e->base = e->last = s->next_lsn - 1;
  if (rec_ms)
    *rec_ms = (double)s->recovery_ms;
  if (rep->status->volume)
    e->page_size = rep->status->volume->page_size;
  wire_free(rep);
}

/* Run transactions until the log holds at least want records. */
static void eng_write(struct eng *e, uint64_t want, uint64_t seed)
{
  static char buf[UPD * 8 + 128];
  char why[256];
  if (!e->conn) {
    if (bench_connect(&e->r, e->addr, 10000, why, sizeof why) != 0)
      die("bench recovery: engine %s: %s", e->addr, why);
    e->conn = 1;
  }
  progress(1, "auralog: writing, %llu of %llu records", (unsigned long long)eng_records(e),
           (unsigned long long)want);
  while (eng_records(e) < want) {
    check_stop();
    const char *sql = txn_sql(seed, e->txns, buf, sizeof buf);
    Env *rep = bench_sql(&e->r, sql, e->txns ? 20000 : 60000, why, sizeof why);
    if (rep == NULL)
      die("bench recovery: engine: transaction %llu: %s", (unsigned long long)e->txns, why);
    if (rep->rows->commit_lsn <= e->last)
      die("bench recovery: engine: transaction %llu committed nothing",
          (unsigned long long)e->txns);
    e->last = rep->rows->commit_lsn;
    wire_free(rep);
    e->txns++;
    progress(0, "auralog: writing, %llu of %llu records (%llu transactions)",
             (unsigned long long)eng_records(e), (unsigned long long)want,
             (unsigned long long)e->txns);
  }
  /* The count by LSN must agree with the engine's: one LSN per record. */
  Env *rep = status_until(e, all_shipped, 5000, why, sizeof why);
  if (rep == NULL)
    die("bench recovery: the engine does not report the %llu records its commit "
        "LSNs say it shipped: %s", (unsigned long long)(e->last - e->base), why);
  if (rep->status->engine->records != e->last - e->base)
    die("bench recovery: the engine reports %llu records shipped, its commit LSNs "
        "say %llu", (unsigned long long)rep->status->engine->records,
        (unsigned long long)(e->last - e->base));
  wire_free(rep);
}

/* "open took N ms" from the engine's last start in its log; -1 if absent. */
static double open_ms(const char *dir)
{
  char p[1200], line[1024];
  snprintf(p, sizeof p, "%s/log/engine.log", dir);
  FILE *f = fopen(p, "r");
  double v = -1;
  if (f == NULL)
    return v;
  while (fgets(line, sizeof line, f)) {
    char *s = strstr(line, "(open took ");
    unsigned long long ms;
    if (s && sscanf(s, "(open took %llu ms)", &ms) == 1)
      v = (double)ms;
  }
  fclose(f);
  return v;
}

/* SIGKILL the engine, start it again, and time what it and a user see. */
static void eng_crash(struct eng *e, struct size *z, int k, uint64_t seed)
{
  char why[256], sql[128];
  if (e->conn) {
    rpc_close(&e->r);
    e->conn = 0;
  }
  const char *crash[] = {"fault", "--dir", B.dir, "engine-crash", NULL};
  if (bench_run(B.log, crash) != 0)
    die("bench recovery: `auralog fault --dir %s engine-crash` failed; see %s", B.dir, B.log);
  /* `fault` returns once the engine's last thread is gone (cluster.c), so
   * nothing listens on its port any more. */
  const char *up[] = {"cluster", "up", "--dir", B.dir, NULL};
  double t0 = bench_now_us();
  pid_t pid = bench_start(B.log, up);
  if (pid < 0)
    die("bench recovery: cannot run `auralog cluster up`");
  B.upid = pid;
  /* The engine listens only once its volume is recovered: connect as soon
   * as it does, then ask for one row. */
  struct rpc r;
  int st = 0;
  for (;;) {
    if (rpc_open(&r, e->addr, 1000, why, sizeof why) == 0)
      break;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pid = B.upid = -1;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("bench recovery: `auralog cluster up` failed to restart the engine; see %s",
            B.log);
    }
    if (bench_now_us() - t0 > 1e3 * (CLUSTER_WAIT_MS + 5000))
      die("bench recovery: the engine did not come back: %s", why);
    usleep(2000);
  }
  snprintf(sql, sizeof sql, "SELECT n FROM t WHERE id = %llu",
           (unsigned long long)probe_id(seed, k));
  Env *rep = bench_sql(&r, sql, 30000, why, sizeof why);
  double t1 = bench_now_us();
  if (rep == NULL || rep->rows->n_rows != 1)
    die("bench recovery: first query after the restart: %s",
        rep ? "no row (the table is not there)" : why);
  wire_free(rep);
  rpc_close(&r);
  if (pid > 0) {
    int got = waitpid(pid, &st, 0);
    B.upid = 0;
    if (got != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      die("bench recovery: `auralog cluster up` failed; see %s", B.log);
  }
  z->first[k] = (t1 - t0) / 1000;
  eng_learn(e, &z->rec[k]);
  z->open[k] = open_ms(B.dir);
  e->prior = z->records;
}

/* ---- sqlite ----------------------------------------------------------------- */

static void wal_path(char *out, size_t n)
{
  snprintf(out, n, "%s-wal", B.db);
}

static uint64_t file_size(const char *p)
{
  struct stat sb;
  return stat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* In a child: run transactions [from, to) and die without closing. */
static void sq_child(uint64_t seed, uint64_t from, uint64_t to)
{
  static char buf[UPD * 8 + 128];
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(B.db, &db) != SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL;"
                   "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0;",
                   NULL, NULL, &err) != SQLITE_OK)
    goto fail;
  for (uint64_t i = from; i < to; i++)
    if (sqlite3_exec(db, txn_sql(seed, i, buf, sizeof buf), NULL, NULL, &err) != SQLITE_OK)
      goto fail;
  raise(SIGKILL);       /* the crash: no close, no checkpoint */
fail:
  fprintf(stderr, "auralog: bench recovery: sqlite: %s\n", err ? err : sqlite3_errmsg(db));
  _exit(1);
}

static void sq_write(uint64_t seed, uint64_t from, uint64_t to)
{
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    die("bench recovery: fork: %s", strerror(errno));
  if (pid == 0)
    sq_child(seed, from, to);
  int st;
  while (waitpid(pid, &st, 0) != pid) {
    if (errno != EINTR)
      die("bench recovery: waitpid: %s", strerror(errno));
    check_stop();
  }
  check_stop();
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
    die("bench recovery: the sqlite writer failed (see above)");
}

/* Drop a file's pages from the OS cache (they are clean: fsync'd). */
static void drop_cache(const char *p)
{
  int fd = open(p, O_RDONLY);
  if (fd >= 0) {
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

/* Open + first query on the crashed database, in ms. */
static double sq_open(uint64_t id, int cold)
{
  char wal[1400];
  wal_path(wal, sizeof wal);
  if (cold) {
    drop_cache(B.db);
    drop_cache(wal);
  }
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  double t0 = bench_now_us();
  if (sqlite3_open_v2(B.db, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    die("bench recovery: sqlite: cannot open %s: %s", B.db, sqlite3_errmsg(db));
  /* Closing must leave the WAL as it is: the next size grows it. */
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
  if (sqlite3_prepare_v2(db, "SELECT n FROM t WHERE id = ?", -1, &q, NULL) != SQLITE_OK)
    die("bench recovery: sqlite: %s", sqlite3_errmsg(db));
  sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
  if (sqlite3_step(q) != SQLITE_ROW)
    die("bench recovery: sqlite: first query: %s", sqlite3_errmsg(db));
  double t1 = bench_now_us();
  sqlite3_finalize(q);
  sqlite3_close(db);
  return (t1 - t0) / 1000;
}

/* Bytes free on the disk under dir. */
static uint64_t disk_free(const char *dir)
{
  struct statvfs sv;
  if (statvfs(dir, &sv) != 0)
    return 0;
  return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* The SQLite side of one size: grow the WAL to the same transactions,
 * crash, time the replay. sq_txns: transactions already in the WAL. */
static void sq_size(struct size *z, uint64_t *sq_txns, uint64_t prev_records, int reps,
                    uint64_t seed, int *gave_up)
{
  char wal[1400];
  wal_path(wal, sizeof wal);
  if (*gave_up) {
    snprintf(z->sq_why, sizeof z->sq_why, "skipped: the WAL of a smaller size did not fit");
    return;
  }
  /* About one frame per auralog record: check the disk can take them. */
  uint64_t more = (z->records - prev_records) * (uint64_t)(4096 + FRAME_HDR) * 11 / 10;
  uint64_t have = disk_free(B.sqdir);
  if (have < more + FREE_KEEP) {
    snprintf(z->sq_why, sizeof z->sq_why,
             "skipped: the WAL needs ~%llu MB more and %llu MB are free (keeping %llu MB)",
             (unsigned long long)(more >> 20), (unsigned long long)(have >> 20),
             (unsigned long long)(FREE_KEEP >> 20));
    *gave_up = 1;
    return;
  }
  progress(1, "sqlite: writing transactions %llu..%llu into the WAL (%llu MB so far)",
           (unsigned long long)*sq_txns, (unsigned long long)z->txns,
           (unsigned long long)(file_size(wal) >> 20));
  sq_write(seed, *sq_txns, z->txns);
  *sq_txns = z->txns;
  z->wal_bytes = file_size(wal);
  z->frames = z->wal_bytes > WAL_HDR ? (z->wal_bytes - WAL_HDR) / (4096 + FRAME_HDR) : 0;
  for (int k = 0; k < reps; k++) {
    check_stop();
    progress(1, "sqlite: replaying %llu WAL frames (warm cache), %d of %d",
             (unsigned long long)z->frames, k + 1, reps);
    z->warm[k] = sq_open(probe_id(seed, k), 0);
  }
  progress(1, "sqlite: replaying %llu WAL frames (cold cache)", (unsigned long long)z->frames);
  z->cold = sq_open(probe_id(seed, 0), 1);
  if (file_size(wal) != z->wal_bytes)
    die("bench recovery: sqlite: the WAL changed size while we measured (a checkpoint?)");
  z->sq = 1;
}

/* ---- options and output ----------------------------------------------------- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench recovery [--records LIST] [--repeats N] [--seed N] [--json]\n"
    "                              [--dir DIR] [--base-port N]\n"
    "\n"
    "Measure how long the engine takes to recover after a crash (SIGKILL) as\n"
    "the log of unmaterialized redo records grows, beside stock SQLite\n"
    "replaying its WAL after the same transactions. Starts a private cluster\n"
    "(coordinator, six nodes, engine) and stops it at the end. Transactions\n"
    "update %d random rows of a %d-row table: about %d records each.\n"
    "\n"
    "  --records LIST  log lengths at which to crash, ascending, comma-separated\n"
    "                  (k and M suffixes allowed; default 10000,100000,1000000)\n"
    "  --repeats N     crashes and restarts (sqlite: replays) at each length\n"
    "                  (default 3; median and max are shown)\n"
    "  --seed N        seed of the rows each transaction updates (default 1)\n"
    "  --json          one JSON object instead of a table\n"
    "  --dir DIR       the cluster's directory, emptied first (default\n"
    "                  $AURALOG_DIR/bench-recovery or ~/.auralog/bench-recovery)\n"
    "  --base-port N   coordinator on N, nodes on N+1..N+6, engine on N+%d\n"
    "                  (default 7700)\n"
    "\n"
    "SQLite needs about 4 KiB of disk per record (a WAL frame per page); a\n"
    "length that would leave less than 2 GB free is skipped, with the reason.\n",
    UPD, ROWS, UPD, ENGINE_PORT_OFFSET);
}

/* "10000,100k,1M" into v (ascending); count, or die. */
static int parse_sizes(const char *s, uint64_t *v)
{
  int n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    if (*p < '0' || *p > '9')
      die("bench recovery: --records wants record counts like 10000,100k,1M, not '%s'", s);
    unsigned long long x = strtoull(p, &end, 10);
    if (*end == 'k' || *end == 'K')
      x *= 1000, end++;
    else if (*end == 'm' || *end == 'M')
      x *= 1000000, end++;
    if (errno || x < 1 || x > 100000000 || (*end != ',' && *end))
      die("bench recovery: --records wants counts of 1..100M separated by commas, not '%s'", s);
    if (n == NSIZES)
      die("bench recovery: --records takes at most %d lengths", NSIZES);
    if (n && x <= v[n - 1])
      die("bench recovery: --records must ascend (the log only grows): '%s'", s);
    v[n++] = x;
    if (*end == 0)
      return n;
    p = end + 1;
  }
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (errno || end == s || *end || x < lo || x > hi)
    die("bench recovery: %s wants a number from %ld to %ld, not '%s'", opt, lo, hi, s);
  return x;
}

/* Refuse a directory we did not make: bench_cluster_up empties it. */
static void check_dir(const char *dir)
{
  char p[1200];
  snprintf(p, sizeof p, "%s/cluster.json", dir);
  DIR *d = opendir(dir);
  if (d == NULL || access(p, F_OK) == 0) {
    if (d)
      closedir(d);
    return;
  }
  struct dirent *de;
  int empty = 1;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      empty = 0;
  closedir(d);
  if (!empty)
    die("bench recovery: %s is not empty and holds no cluster; it would be emptied: "
        "give another --dir", dir);
}

static void add_num_or_null(cJSON *o, const char *k, int ok, double v)
{
  if (ok)
    cJSON_AddNumberToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

static void conditions(cJSON *c, uint64_t seed, int reps, uint32_t page_size)
{
  char w[256];
  bench_conditions(c, B.dir);
  snprintf(w, sizeof w, "setup: %d rows of ~%d bytes (%d a page); then per transaction "
           "UPDATE t SET n = n + 1 on %d random rows", ROWS, ROW_BYTES, 4, UPD);
  cJSON_AddStringToObject(c, "workload", w);
  cJSON_AddNumberToObject(c, "seed", (double)seed);
  cJSON_AddNumberToObject(c, "page_size", page_size);
  cJSON_AddNumberToObject(c, "repeats", reps);
  cJSON_AddStringToObject(c, "record_count", "redo records the engine shipped (one per changed "
                          "page per commit), summed over engine lifetimes; all durable");
  cJSON_AddStringToObject(c, "materialized", "none: the nodes do not coalesce yet, so "
                          "every record is unmaterialized");
  cJSON_AddStringToObject(c, "crash", "SIGKILL of the engine (auralog fault engine-crash), "
                          "restart with auralog cluster up; SQLite: SIGKILL of the writer "
                          "after its last commit");
  cJSON_AddStringToObject(c, "auralog_recovery_ms", "the engine's own measure: quorum reads "
                          "of every PG, VDL, truncation (status recovery_ms)");
  cJSON_AddStringToObject(c, "auralog_open_ms", "the engine's open: recovery plus the first "
                          "schema read (its log)");
  cJSON_AddStringToObject(c, "auralog_first_query_ms", "from starting auralog cluster up to "
                          "the first answered point query");
  cJSON_AddStringToObject(c, "sqlite", "local file, WAL mode, synchronous=FULL, "
                          "wal_autocheckpoint=0, same transactions");
  cJSON_AddStringToObject(c, "sqlite_replay_ms", "open + first point query (wal-index "
                          "rebuilt from every frame); warm: the WAL was just written and "
                          "is in the OS page cache; cold: posix_fadvise DONTNEED first");
}

static void print_table(cJSON *cond, struct size *zs, int nz, double secs)
{
  printf("auralog bench recovery: recovery after a crash against unmaterialized log length\n");
  printf("conditions:\n");
  cJSON *it;
  cJSON_ArrayForEach(it, cond) {
    if (cJSON_IsString(it))
      printf("  %-22s %s\n", it->string, it->valuestring);
    else
      printf("  %-22s %g\n", it->string, it->valuedouble);
  }
  printf("\n%10s %6s | %9s %9s %8s %9s %9s | %10s %8s %9s %9s %9s\n", "records", "txns",
         "recov_ms", "recov_max", "open_ms", "first_ms", "first_max", "wal_frames",
         "wal_MB", "replay_ms", "replay_max", "cold_ms");
  for (int i = 0; i < nz; i++) {
    struct size *z = &zs[i];
    printf("%10llu %6llu | %9.0f %9.0f %8.0f %9.1f %9.1f | ", (unsigned long long)z->records,
           (unsigned long long)z->txns, median(z->rec, z->nrep), maxof(z->rec, z->nrep),
           median(z->open, z->nrep), median(z->first, z->nrep), maxof(z->first, z->nrep));
    if (z->sq)
      printf("%10llu %8.1f %9.1f %9.1f %9.1f\n", (unsigned long long)z->frames,
             (double)z->wal_bytes / 1048576, median(z->warm, z->nrep),
             maxof(z->warm, z->nrep), z->cold);
    else
      printf("%s\n", z->sq_why);
  }
  printf("\n  txns       transactions run so far (the setup counts as one)\n"
         "  recov_ms   the engine's recovery (status recovery_ms): median, max of %d crashes\n"
         "  open_ms    the engine's open: recovery + first schema read (its log), median\n"
         "  first_ms   `cluster up` to the first answered query: median, max\n"
         "  replay_ms  SQLite open + first query, WAL in the page cache: median, max\n"
         "  cold_ms    the same once after dropping the files from the page cache\n\n",
         zs[0].nrep);
  if (nz > 1)
    printf("auralog recovery went from %.0f ms at %llu records to %.0f ms at %llu "
           "(target: flat, under 1000 ms at 1M)\n", median(zs[0].rec, zs[0].nrep),
           (unsigned long long)zs[0].records, median(zs[nz - 1].rec, zs[nz - 1].nrep),
           (unsigned long long)zs[nz - 1].records);
  printf("run took %.0f s\n", secs);
}

int bench_recovery_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"records", required_argument, 0, 'r'}, {"repeats", required_argument, 0, 'n'},
    {"seed", required_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
    {"dir", required_argument, 0, 'd'}, {"base-port", required_argument, 0, 'p'},
    {"help", no_argument, 0, 'h'}, {0}};
  uint64_t want[NSIZES], seed = 1;
  int nz = parse_sizes("10000,100000,1000000", want), json = 0, reps = 3, base = 7700, o;
  const char *dir = NULL;
  /* argv[0] is "recovery" (bench/bench.c dispatches). Errors are ours,
   * in one line. */
  opterr = 0;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'r': nz = parse_sizes(optarg, want); break;
    case 'n': reps = (int)parse_num("--repeats", optarg, 1, MAXREP); break;
    case 's': seed = (uint64_t)parse_num("--seed", optarg, 0, 0x7fffffffL); break;
    case 'j': json = 1; break;
    case 'd': dir = optarg; break;
    case 'p': base = (int)parse_num("--base-port", optarg, 1024,
                                    65535 - ENGINE_PORT_OFFSET - HTTP_PORT_OFFSET); break;
    case 'h': usage(stdout); return 0;
    default:
      die("bench recovery: unknown option, or one without its value: '%s' (see auralog "
          "bench recovery --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    die("bench recovery: unexpected argument '%s' (see auralog bench recovery --help)",
        argv[optind]);
  if (dir)
    snprintf(B.dir, sizeof B.dir, "%s", dir);
  else
    bench_dir(B.dir, sizeof B.dir, "bench-recovery");
  if (strchr(B.dir, '\''))
    die("bench recovery: the directory name may not hold a quote: %s", B.dir);
  check_dir(B.dir);
  tty = isatty(2);
  B.owner = getpid();
  atexit(cleanup);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  double t0 = bench_now_us();
  char why[512];
  progress(1, "starting a cluster in %s (ports %d..%d)", B.dir, base, base + ENGINE_PORT_OFFSET);
  B.up = 1;
  if (bench_cluster_up(B.dir, base, why, sizeof why) != 0)
    die("bench recovery: %s", why);
  snprintf(B.log, sizeof B.log, "%s/bench-cluster.log", B.dir);
  snprintf(B.sqdir, sizeof B.sqdir, "%s/sqlite", B.dir);
  snprintf(B.db, sizeof B.db, "%s/bench.db", B.sqdir);
  if (mkdir(B.sqdir, 0755) != 0)
    die("bench recovery: cannot make %s: %s", B.sqdir, strerror(errno));

  struct eng e;
  memset(&e, 0, sizeof e);
  snprintf(e.coord, sizeof e.coord, "127.0.0.1:%d", base);
  snprintf(e.addr, sizeof e.addr, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET);
  eng_learn(&e, NULL);

  static struct size zs[NSIZES];
  uint64_t sq_txns = 0, prev = 0;
  int gave_up = 0;
  for (int i = 0; i < nz; i++) {
    struct size *z = &zs[i];
    z->want = want[i];
    eng_write(&e, want[i], seed);
    z->records = eng_records(&e);
    z->txns = e.txns;
    z->nrep = reps;
    for (int k = 0; k < reps; k++) {
      check_stop();
      progress(1, "auralog: crash and restart %d of %d at %llu records", k + 1, reps,
               (unsigned long long)z->records);
      eng_crash(&e, z, k, seed);
    }
    sq_size(z, &sq_txns, prev, reps, seed, &gave_up);
    prev = z->records;
  }
  progress(1, "stopping the cluster and removing its data");
  cleanup();
  progress_end();
  double secs = (bench_now_us() - t0) / 1e6;

  cJSON *out = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(out, "conditions");
  conditions(c, seed, reps, e.page_size ? e.page_size : PAGE_SIZE_DEFAULT);
  cJSON_AddNumberToObject(c, "elapsed_s", (double)(long)(secs * 10) / 10);
  if (json) {
    cJSON *rs = cJSON_AddArrayToObject(out, "results");
    for (int i = 0; i < nz; i++) {
      struct size *z = &zs[i];
      cJSON *j = cJSON_CreateObject();
      cJSON_AddNumberToObject(j, "records", (double)z->records);
      cJSON_AddNumberToObject(j, "records_asked", (double)z->want);
      cJSON_AddNumberToObject(j, "transactions", (double)z->txns);
      cJSON_AddNumberToObject(j, "auralog_recovery_ms", median(z->rec, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_recovery_ms_max", maxof(z->rec, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_open_ms", median(z->open, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_first_query_ms", median(z->first, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_first_query_ms_max", maxof(z->first, z->nrep));
      add_num_or_null(j, "sqlite_wal_frames", z->sq, (double)z->frames);
      add_num_or_null(j, "sqlite_wal_bytes", z->sq, (double)z->wal_bytes);
      add_num_or_null(j, "sqlite_replay_ms", z->sq, median(z->warm, z->nrep));
      add_num_or_null(j, "sqlite_replay_ms_max", z->sq, maxof(z->warm, z->nrep));
      add_num_or_null(j, "sqlite_replay_cold_ms", z->sq, z->cold);
      if (!z->sq)
        cJSON_AddStringToObject(j, "sqlite_skipped", z->sq_why);
      cJSON_AddItemToArray(rs, j);
    }
    char *s = cJSON_PrintUnformatted(out);
    puts(s);
    free(s);
  } else {
    print_table(c, zs, nz, secs);
  }
  cJSON_Delete(out);
  return 0;
}
