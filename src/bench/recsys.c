/*
 * recsys.c: the workload of `auralog bench recovery` and the two systems
 * it runs on (recovery_int.h; what is measured and why: recovery.c).
 *
 * The workload: a table of ROWS rows made once, then transactions that
 * each add 1 to UPD random rows, a function of the seed and their number
 * alone, so both systems run exactly the same ones.
 *
 * auralog: eng_write runs them on the cluster's engine until its log holds
 * enough records (counted by commit LSN, checked against the engine's own
 * count); eng_crash kills the engine, restarts it with `cluster up` and
 * takes its recovery time, its open time and the time to the first
 * answered query.
 *
 * SQLite: sq_size has a child write the same transactions into a WAL and
 * kill itself, then times open + first query (the WAL's replay) with the
 * WAL warm in the page cache and once cold.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/recovery_int.h"
#include "lib/log.h"
#include "param.h"
#include "cli/status.h"

/* ---- the workload ----------------------------------------------------------- */

static const char setup_sql[] =
  "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, pad BLOB);"
  /* n starts at 1000000 so that n + 1 keeps its 3-byte encoding: the cell
   * keeps its size and SQLite overwrites it in place, a small delta. */
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < " STR(ROWS) ") "
  "INSERT INTO t SELECT x, 1000000, zeroblob(" STR(ROW_BYTES) ") FROM c;";

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

/* ---- auralog ---------------------------------------------------------------- */

uint64_t eng_records(const struct eng *e)
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
void eng_learn(struct eng *e, double *rec_ms)
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
void eng_write(struct eng *e, uint64_t want, uint64_t seed)
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
void eng_crash(struct eng *e, struct size *z, int k, uint64_t seed)
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
void sq_size(struct size *z, uint64_t *sq_txns, uint64_t prev_records, int reps,
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
