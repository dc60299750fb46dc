/*
 * worker.c: the threads that run the clients' SQL, and their SQLite
 * connections (engine_int.h; the server around them is engine.c).
 *
 * The loop hands a thread one job at a time of each client, in order: a
 * client's SQL, or closing its connection. The thread runs it on the
 * client's own SQLite connection, packs the reply and notes what it must
 * wait for before it may go out (wait_lsn: its own commit, and with
 * durable reads every commit its statements could see), then hands the
 * job back (E.done, and a wake-up for the loop). A job is refused
 * outright, with nothing run, while the volume is fenced or the read
 * lease has run out.
 *
 * Threads: one writer (E.todo) runs any job; ENGINE_READERS readers
 * (E.rtodo) run requests that only read, so that a read does not queue
 * behind another client's long statement or the writes before it. One
 * writer, because the volume has one writing connection at a time (the
 * RESERVED lock): two threads writing at once would wait for each
 * other's lock or, with rollback-journal locking, fail at once with
 * SQLITE_BUSY. Readers are safe beside it: the VFS locks as
 * rollback-journal SQLite does (vfs.c), so a commit takes EXCLUSIVE,
 * waiting (the busy handler) for the statements that readers are in the
 * middle of, and no reader starts one while a commit waits, nor while a
 * write transaction that spilled its cache holds EXCLUSIVE early. A
 * reader checks each statement before it runs it: sqlite3_stmt_readonly,
 * and the sandbox's authorizer saw only reads (SELECT, its columns and
 * functions, BEGIN, COMMIT, ROLLBACK). At the first statement that does
 * more, it rolls back a transaction the request opened, drops the rows it
 * gathered and hands the whole request to the writer, which runs it from
 * the start: what ran so far only read, so running it again changes
 * nothing.
 *
 * The statement timeout (--statement-timeout, STATEMENT_TIMEOUT_MS): a
 * request still running after it is interrupted (a progress handler
 * looks every PROGRESS_OPS instructions; a busy handler gives up waiting
 * for a lock at the same deadline) with "statement timed out after N ms",
 * its transaction is rolled back, and the thread goes on with the next
 * job. So a commit waits behind another client's long statement, or for
 * the locks of a reader's, about that long at most.
 *
 * Durable reads: a commit's pages are visible to other connections only
 * once it is shipped, and only the writer thread commits; so the last
 * commit shipped when a request's statements have finished (vol_last_cpl)
 * bounds every commit they could see.
 *
 * Connections open E.uri, in the sandbox (sandbox.c): the volume on the
 * auralog VFS, or, for `auralog bench`, a baseline: stock SQLite behind
 * the same server, threads and clients, so that only storage differs.
 * Each has auralog_stats(), the engine's counters for the benchmark.
 */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "param.h"
#include "vfs/binlog.h"
#include "vfs/capture.h"
#include "vfs/countvfs.h"
#include "vfs/ddl.h"
#include "vfs/engine_int.h"
#include "vfs/lease.h"
#include "vfs/sandbox.h"
#include "vfs/vfs.h"
#include "vfs/volume.h"
#include "net/wire.h"

/* ---- the statement timeout ------------------------------------------------ */

static __thread unsigned long long deadline;   /* this thread's job stops then (0: never) */

/* Did this thread's job run out of time? */
static int timed_out(void)
{
  return deadline && now_ms() >= deadline;
}

/* SQLite's progress handler: nonzero interrupts the statement. */
static int on_progress(void *arg)
{
  (void)arg;
  return timed_out();
}

/* Lock waits. A statement's locks go when it ends (or its transaction
 * does), so each thread says so when one ends (unlocked), and a thread
 * waiting for a lock tries again then, or after LOCK_POLL_MS at most (it
 * may have missed the word: the lock can go between its try and its
 * wait). Sleeping a fixed time instead, as sqlite3_busy_timeout does,
 * would make a commit behind a reader of a few ms wait ten. */
static pthread_mutex_t lock_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lock_cv = PTHREAD_COND_INITIALIZER;

static void unlocked(void)
{
  pthread_mutex_lock(&lock_mu);
  pthread_cond_broadcast(&lock_cv);
  pthread_mutex_unlock(&lock_mu);
}

/* SQLite's busy handler (n: how often it was called for this wait):
 * wait for a lock until the job's deadline, or LOCK_WAIT_MS where there
 * is none (no timeout, or the loop opening a baseline's connection). */
static int on_busy(void *arg, int n)
{
  static __thread unsigned long long since;
  (void)arg;
  unsigned long long now = now_ms();
  if (n == 0)
    since = now;
  unsigned long long until = deadline ? deadline : since + LOCK_WAIT_MS;
  if (now >= until)
    return 0;
  unsigned long long ms = until - now < LOCK_POLL_MS ? until - now : LOCK_POLL_MS;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += (long)(ms * 1000000);
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&lock_mu);
  pthread_cond_timedwait(&lock_cv, &lock_mu, &ts);
  pthread_mutex_unlock(&lock_mu);
  return 1;
}

/* ---- running a request ------------------------------------------------------- */

static char *add_text(const unsigned char *t)
{
  return strdup(t ? (const char *)t : "");
}

static void rows_free(Auralog__Rows *rows)
{
  for (size_t i = 0; i < rows->n_rows; i++) {
    for (size_t k = 0; k < rows->rows[i]->n_values; k++) {
      free(rows->rows[i]->values[k]->text);
      free(rows->rows[i]->values[k]);
    }
    free(rows->rows[i]->values);
    free(rows->rows[i]);
  }
  free(rows->rows);
  for (size_t i = 0; i < rows->n_columns; i++)
    free(rows->columns[i]);
  free(rows->columns);
}

/* The error of a statement that failed with rc, for the client (expired:
 * it ran out of time). */
static char *step_error(sqlite3 *db, int rc, int expired)
{
  char buf[400];
  if (sandbox_why())
    return strdup(sandbox_why());
  if (expired) {
    snprintf(buf, sizeof buf, "statement timed out after %d ms%s (auralog engine "
             "--statement-timeout)", E.timeout_ms, rc == SQLITE_INTERRUPT ? ""
             : " waiting for a lock another client's transaction holds");
    return strdup(buf);
  }
  const char *vfs_err = NULL;
  if ((rc & 0xff) == SQLITE_IOERR)
    sqlite3_file_control(db, "main", AURALOG_FCNTL_LAST_ERROR, &vfs_err);
  size_t n = strlen(sqlite3_errmsg(db)) + (vfs_err ? strlen(vfs_err) : 0) + 8;
  char *e = malloc(n);
  snprintf(e, n, "%s%s%s", sqlite3_errmsg(db), vfs_err && *vfs_err ? ": " : "",
           vfs_err ? vfs_err : "");
  return e;
}

/* A read replica (vfs/rvol.h): name this request's client for the read
 * transaction it may begin, and, if the one it has open was cancelled
 * past the replica's --max-read-age (or outlived its read point), roll it
 * back and answer why: 1 with *errtext. A request that only ends it
 * (COMMIT, END, ROLLBACK) goes through: everything it read was at one
 * read point, and nothing more will be. */
static int replica_txn_gone(struct job *j, char **errtext)
{
  auralog_vfs_set_client(j->c->peer);
  const char *gone = NULL, *q = j->sql;
  if (sqlite3_get_autocommit(j->db) ||
      sqlite3_file_control(j->db, "main", AURALOG_FCNTL_SNAP_GONE, &gone) != SQLITE_OK ||
      gone == NULL)
    return 0;
  while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
    q++;
  if (sqlite3_strnicmp(q, "COMMIT", 6) == 0 || sqlite3_strnicmp(q, "END", 3) == 0 ||
      sqlite3_strnicmp(q, "ROLLBACK", 8) == 0)
    return 0;
  *errtext = strdup(gone);
  sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
  unlocked();
  return 1;
}

/* Run every statement of j->sql on db; pack the reply into j. On a
 * reader thread, stop at the first statement that does more than read,
 * undo what ran and return 1: the writer runs it all. Else 0. */
static int run_sql(struct job *j, int reader)
{
  sqlite3 *db = j->db;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Rows rows = AURALOG__ROWS__INIT;
  Auralog__Error err = AURALOG__ERROR__INIT;
  size_t caprows = 0;
  const char *tail = j->sql;
  char *errtext = NULL;
  int handoff = 0, expired = 0, in_txn = 0;
  uint64_t lsn = 0, c = 0;    /* the request's last commit; a statement's */
  int64_t before = sqlite3_total_changes64(db);
  j->stamps.start = now_us();  /* stage timings (stages.h): a thread runs it */
  deadline = E.timeout_ms ? now_ms() + (unsigned long long)E.timeout_ms : 0;
  if (E.rvol && replica_txn_gone(j, &errtext))
    tail = NULL;
  while (tail && *tail) {
    sqlite3_stmt *st = NULL;
    if (sandbox_prepare(db, tail, &st, &tail) != SQLITE_OK) {
      errtext = strdup(sandbox_why() ? sandbox_why() : sqlite3_errmsg(db));
      break;
    }
    if (st == NULL)
      continue;              /* whitespace or a comment */
    if (E.rvol && !sqlite3_stmt_readonly(st)) {
      /* A read replica (paper §4.2.4) adds no writes: the clear refusal,
       * rather than SQLite's "readonly database". */
      struct rvol_stats rs;
      rvol_get_stats(E.rvol, &rs);
      char buf[400];
      snprintf(buf, sizeof buf, "this is a read replica of volume %s (read point %llu): it "
               "serves reads only; send writes to the writer at %s", E.volume,
               (unsigned long long)rs.rp, E.writer);
      errtext = strdup(buf);
      sqlite3_finalize(st);
      break;
    }
    if (reader && !(sqlite3_stmt_readonly(st) && sandbox_only_reads())) {
      sqlite3_finalize(st);
      handoff = 1;
      break;
    }
    int ncol = sqlite3_column_count(st);
    if (ncol > 0) {
      /* The columns of the last statement that returns rows. */
      for (size_t i = 0; i < rows.n_columns; i++)
        free(rows.columns[i]);
      free(rows.columns);
      rows.columns = calloc((size_t)ncol, sizeof *rows.columns);
      rows.n_columns = (size_t)ncol;
      for (int i = 0; i < ncol; i++)
        rows.columns[i] = strdup(sqlite3_column_name(st, i));
    }
    int rc;
    in_txn = !sqlite3_get_autocommit(db);
    capture_stmt_start(j->cap);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (rows.n_rows == caprows) {
        caprows = caprows ? 2 * caprows : 16;
        rows.rows = realloc(rows.rows, caprows * sizeof *rows.rows);
      }
      Auralog__Row *r = malloc(sizeof *r);
      auralog__row__init(r);
      r->n_values = (size_t)ncol;
      r->values = calloc((size_t)ncol + 1, sizeof *r->values);
      for (int i = 0; i < ncol; i++) {
        Auralog__Value *v = malloc(sizeof *v);
        auralog__value__init(v);
        v->null = sqlite3_column_type(st, i) == SQLITE_NULL;
        v->text = add_text(sqlite3_column_text(st, i));
        r->values[i] = v;
      }
      rows.rows[rows.n_rows++] = r;
    }
    if (rc != SQLITE_DONE) {
      expired = timed_out() && (rc == SQLITE_INTERRUPT || (rc & 0xff) == SQLITE_BUSY);
      errtext = step_error(db, rc, expired);
    }
    capture_stmt_end(j->cap, st, rc);   /* before ddl_stmt_end: it asks ddl.c */
    int ddl = ddl_stmt_end(j->ddl, sqlite3_sql(st), rc == SQLITE_DONE);
    sqlite3_finalize(st);
    unlocked();
    if (ddl || j->cap) {
      /* A schema change, and with the binlog on every transaction's
       * events, wait for its end (ddl.c, capture.c): did this statement
       * commit it, or roll it back? Asked after every statement, so that
       * each commit of a request is told apart. */
      c = 0;
      sqlite3_file_control(db, "main", AURALOG_FCNTL_COMMIT_LSN, &c);
      lsn = c ? c : lsn;
      ddl_settle(j->ddl, c, sqlite3_get_autocommit(db));
      capture_settle(j->cap, c, sqlite3_get_autocommit(db));
    }
    if (errtext)
      break;
  }
  /* Out of time: the transaction it was in goes too, so that its locks do
   * not hold up the other clients (SQLite already rolled back an
   * interrupted write's). A reader handing over: the writer starts again. */
  deadline = 0;              /* (else the progress handler stops ROLLBACK too) */
  if ((handoff || expired) && !sqlite3_get_autocommit(db)) {
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    unlocked();
  }
  if (handoff) {
    capture_settle(j->cap, 0, sqlite3_get_autocommit(db));   /* what ran only read */
    rows_free(&rows);
    return 1;
  }
  if (expired && in_txn) {
    size_t n = strlen(errtext) + 40;
    errtext = realloc(errtext, n);
    strncat(errtext, "; its transaction was rolled back", n - strlen(errtext) - 1);
  }
  c = 0;
  sqlite3_file_control(db, "main", AURALOG_FCNTL_COMMIT_LSN, &c);
  lsn = c ? c : lsn;
  ddl_settle(j->ddl, c, sqlite3_get_autocommit(db));   /* rolled back above: dropped */
  capture_settle(j->cap, c, sqlite3_get_autocommit(db));
  j->commit_lsn = lsn;
  struct auralog_commit_times ct = {0};
  sqlite3_file_control(db, "main", AURALOG_FCNTL_COMMIT_TIMES, &ct);
  j->stamps.sync = ct.sync_us;
  /* Every commit these statements could see is at or below the last one
   * shipped now (only the writer thread commits; see the top). */
  uint64_t seen = E.vol && !E.reads_immediate ? vol_last_cpl(E.vol) : 0;
  /* Durable reads: the reply (an error too: "UNIQUE constraint failed"
   * tells of a row) waits for what it saw and for its own commit.
   * Immediate: a commit's reply waits for it, anything else goes now. */
  j->wait_lsn = E.reads_immediate || E.vol == NULL ? (errtext ? 0 : lsn)
                                                   : (lsn > seen ? lsn : seen);
  /* A read whose snapshot may hold commits above the VDL: immediate, its
   * reply goes out now (a dirty read); durable, it waits. The volume
   * counts both (its reports, the journal's dirtyread and heldread: lab
   * 7). An upper bound, as seen is: a commit shipped while the read ran
   * may be counted though the read's snapshot missed it. */
  if (E.vol && !errtext && lsn == 0)
    vol_read_seen(E.vol, E.reads_immediate ? vol_last_cpl(E.vol) : seen, E.reads_immediate);
  env.req = j->req;
  if (errtext) {
    err.code = ERR_BAD_MSG;
    err.msg = errtext;
    env.body_case = AURALOG__ENVELOPE__BODY_ERROR;
    env.error = &err;
  } else {
    rows.changes = (uint64_t)(sqlite3_total_changes64(db) - before);
    rows.commit_lsn = lsn;
    env.body_case = AURALOG__ENVELOPE__BODY_ROWS;
    env.rows = &rows;
  }
  j->frame = wire_frame_room(&env, NET_FRAME_ROOM, &j->len);
  if (j->frame == NULL) {
    Env e2;
    Auralog__Error e = AURALOG__ERROR__INIT;
    wire_error(&e2, &e, j->req, ERR_BAD_MSG, "result too large for one reply (16 MiB)");
    j->frame = wire_frame_room(&e2, NET_FRAME_ROOM, &j->len);
  }
  rows_free(&rows);
  free(errtext);
  return 0;
}

/* SELECT auralog_stats(): this engine's counters as JSON, for `auralog
 * bench` (which reads them before and after a run through the same SQL
 * channel as its workload, for every system alike). */
static void stats_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
  (void)argc;
  (void)argv;
  cJSON *o = cJSON_CreateObject();
  if (E.rvol) {
    struct rvol_stats rs;
    rvol_get_stats(E.rvol, &rs);
    cJSON_AddStringToObject(o, "system", "auralog-replica");
    cJSON_AddNumberToObject(o, "read_point", (double)rs.rp);
    cJSON_AddNumberToObject(o, "vdl", (double)rs.vdl);
    cJSON_AddNumberToObject(o, "epoch", (double)rs.epoch);
    cJSON_AddNumberToObject(o, "applied", (double)rs.applied);
    cJSON_AddNumberToObject(o, "skipped", (double)rs.skipped);
    cJSON_AddNumberToObject(o, "mtrs", (double)rs.mtrs);
    cJSON_AddNumberToObject(o, "pending", (double)rs.pending);
    cJSON_AddNumberToObject(o, "resyncs", (double)rs.resyncs);
    cJSON_AddNumberToObject(o, "expired", (double)rs.expired);
    cJSON_AddNumberToObject(o, "cancelled", (double)rs.expired);
    cJSON_AddNumberToObject(o, "warned", (double)rs.warned);
    cJSON_AddNumberToObject(o, "readers", rs.readers);
    cJSON_AddStringToObject(o, "holder", rs.holder);
    cJSON_AddNumberToObject(o, "held_ms", (double)rs.held_ms);
  } else if (E.vol) {
    struct vol_stats st;
    vol_get_stats(E.vol, &st);
    cJSON_AddStringToObject(o, "system", E.ship_pages ? "auralog-pages" : "auralog");
    cJSON_AddNumberToObject(o, "vdl", (double)st.vdl);
    cJSON_AddNumberToObject(o, "commits", (double)st.commits);
    cJSON_AddNumberToObject(o, "records", (double)st.records);
    cJSON_AddNumberToObject(o, "redo_bytes", (double)st.redo_bytes);
    cJSON_AddNumberToObject(o, "redo_msgs", (double)st.redo_msgs);
    cJSON_AddNumberToObject(o, "pages_read", (double)st.pages_read);
    cJSON_AddNumberToObject(o, "stale_pages", (double)st.stale_pages);
    cJSON_AddNumberToObject(o, "net_bytes_out", (double)st.net_bytes_out);
    cJSON_AddNumberToObject(o, "net_msgs_out", (double)st.net_msgs_out);
    cJSON_AddNumberToObject(o, "net_bytes_in", (double)st.net_bytes_in);
    cJSON_AddNumberToObject(o, "net_msgs_in", (double)st.net_msgs_in);
    cJSON_AddNumberToObject(o, "syncs", 0);   /* the engine has no disk */
    cJSON_AddItemToObject(o, "stages", stages_json());
    cJSON_AddItemToObject(o, "binlog", binlog_stats_json());
    cJSON_AddItemToObject(o, "replica_lag", feed_lag_json());
  } else {
    uint64_t syncs, bytes;
    countvfs_get(&syncs, &bytes);
    cJSON_AddStringToObject(o, "system", E.baseline);
    cJSON_AddNumberToObject(o, "syncs", (double)syncs);
    cJSON_AddNumberToObject(o, "bytes_written", (double)bytes);
  }
  char *txt = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  sqlite3_result_text(ctx, txt, -1, free);
}

/* SELECT auralog_binlog_recent(K): the newest K transactions the binlog's
 * change capture handed over (binlog.c), as JSON; a debugging window
 * while the binlog has no consumers (AURALOG_CAPTURE=1, issue 29). */
static void binlog_recent_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
  (void)argc;
  uint64_t vdl = 0;
  if (E.vol) {
    struct vol_stats st;
    vol_get_stats(E.vol, &st);
    vdl = st.vdl;
  }
  char *txt = binlog_recent_json(sqlite3_value_int(argv[0]), vdl);
  if (txt == NULL)
    sqlite3_result_error_nomem(ctx);
  else
    sqlite3_result_text(ctx, txt, -1, free);
}

/* Baselines (`auralog bench`): stock SQLite in place of the volume, behind
 * the same server, threads and clients, so that only storage differs. Each
 * is durable as SQLite can be made (synchronous=FULL: a commit returns
 * after its fsync), except the in-memory one, which is the ceiling of the
 * engine's CPU: everything auralog does minus storage. */
static const struct baseline {
  const char *name;
  const char *first;         /* for the first connection */
  const char *conn;          /* for every other */
} baselines[] = {
  {"sqlite-wal-full", "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
   "PRAGMA synchronous=FULL;"},
  {"sqlite-delete-full", "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;",
   "PRAGMA synchronous=FULL;"},
  {"sqlite-memory", "", ""},
};

/* SELECT auralog_read_point() on a replica: the read point its reads
 * are at. Inside a read transaction (after its first read) it is the
 * point of every read of that transaction (rvol.h, R3). */
static void read_point_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
  (void)argc;
  (void)argv;
  struct rvol_stats rs;
  rvol_get_stats(E.rvol, &rs);
  sqlite3_result_int64(ctx, (sqlite3_int64)rs.rp);
}

sqlite3 *open_db(void)
{
  sqlite3 *db = NULL;
  const char *vfs = E.baseline == NULL ? "auralog" : NULL;
  /* A replica's connections are read-only: SQLite refuses every write. */
  int flags = E.rvol ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
                     : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI;
  if (sqlite3_open_v2(E.uri, &db, flags, vfs) != SQLITE_OK) {
    logwarn("cannot open %s: %s", E.uri, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return NULL;
  }
  if (sandbox_apply(db) != SQLITE_OK) {
    logwarn("cannot put the connection to %s in the sandbox: %s", E.uri, sqlite3_errmsg(db));
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_create_function(db, "auralog_stats", 0, SQLITE_UTF8, NULL, stats_fn, NULL, NULL);
  if (engine_captures())
    sqlite3_create_function(db, "auralog_binlog_recent", 1, SQLITE_UTF8, NULL, binlog_recent_fn,
                            NULL, NULL);
  if (E.rvol)
    sqlite3_create_function(db, "auralog_read_point", 0, SQLITE_UTF8, NULL, read_point_fn,
                            NULL, NULL);
  /* A commit waits for the statements readers are in, and a reader for a
   * commit (a baseline's checkpoint too): see on_busy. */
  sqlite3_busy_handler(db, on_busy, NULL);
  if (E.timeout_ms)
    sqlite3_progress_handler(db, PROGRESS_OPS, on_progress, NULL);
  for (size_t i = 0; E.baseline && i < sizeof baselines / sizeof *baselines; i++) {
    char *err = NULL;
    /* The journal mode is the database's (set once, by the first
     * connection); synchronous is each connection's. */
    if (strcmp(E.baseline, baselines[i].name) == 0 &&
        sqlite3_exec(db, E.root ? baselines[i].conn : baselines[i].first, NULL, NULL,
                     &err) != SQLITE_OK) {
      logwarn("%s: %s", E.baseline, err ? err : "cannot set its pragmas");
      sqlite3_free(err);
      sqlite3_close(db);
      return NULL;
    }
  }
  return db;
}

/* Open a baseline's database and check it answers. */
void open_baseline(const char *file)
{
  size_t i = 0;
  while (i < sizeof baselines / sizeof *baselines && strcmp(baselines[i].name, E.baseline))
    i++;
  if (i == sizeof baselines / sizeof *baselines)
    die("engine: unknown baseline '%s' (say sqlite-wal-full, sqlite-delete-full or "
        "sqlite-memory)", E.baseline);
  if (strcmp(E.baseline, "sqlite-memory") == 0) {
    if (file)
      die("engine: sqlite-memory keeps no file; drop --file");
    /* memdb with a name starting with '/': one database shared by every
     * connection of this process. */
    snprintf(E.uri, sizeof E.uri, "file:/auralog-bench?vfs=memdb");
  } else {
    if (file == NULL)
      die("engine: --baseline %s needs --file PATH", E.baseline);
    if (countvfs_register() != SQLITE_OK)
      die("engine: cannot register the counting VFS");
    for (const char *c = file; *c; c++)
      if (*c == '?' || *c == '#' || *c == '%')
        die("engine: --file: '%s' has a character a URI would misread", file);
    snprintf(E.uri, sizeof E.uri, "file:%s?vfs=count", file);
  }
  if ((E.root = open_db()) == NULL)
    die("engine: cannot open %s (see the log above)", E.uri);
  char *err = NULL;
  if (sqlite3_exec(E.root, "SELECT count(*) FROM sqlite_schema", NULL, NULL, &err) != SQLITE_OK)
    die("engine: %s: %s", E.uri, err ? err : "unreadable");
  loginfo("baseline %s: stock SQLite %s at %s", E.baseline, sqlite3_libversion(), E.uri);
}

/* May the engine serve now? A fenced writer never again; one whose read
 * lease ran out not until it is renewed. 0, or -1 with j's error reply. */
static int refuse(struct job *j)
{
  char why[400];
  uint32_t code = ERR_STALE_EPOCH;
  if (E.vol == NULL)
    return 0;                /* a baseline, or a replica: no lease of a writer */
  if (!vol_fenced(E.vol, why, sizeof why)) {
    pthread_mutex_lock(&E.lmu);
    int ok = lease_valid(&E.lease, now_ms(), READ_LEASE_MS, why, sizeof why);
    if (!ok && E.lease.fenced_by == 0)
      code = ERR_UNAVAILABLE;
    pthread_mutex_unlock(&E.lmu);
    if (ok)
      return 0;
  }
  Env env;
  Auralog__Error e = AURALOG__ERROR__INIT;
  wire_error(&env, &e, j->req, code, why);
  j->frame = wire_frame_room(&env, NET_FRAME_ROOM, &j->len);
  j->commit_lsn = j->wait_lsn = 0;   /* it saw nothing: out at once */
  return -1;
}

/* The next job of queue q (E.mu held), waiting for one; NULL once
 * E.stopping reaches stop and q is empty. */
static struct job *take(struct job **q, struct job ***tail, pthread_cond_t *cond, int stop)
{
  while (*q == NULL && E.stopping < stop)
    pthread_cond_wait(cond, &E.mu);
  struct job *j = *q;
  if (j) {
    *q = j->next;
    if (*q == NULL)
      *tail = q;
    j->next = NULL;
  }
  return j;
}

/* Append j to a queue (E.mu held). */
static void put(struct job *j, struct job ***tail)
{
  j->next = NULL;
  **tail = j;
  *tail = &j->next;
}

void *worker_main(void *arg)
{
  (void)arg;
  struct job *j;
  pthread_mutex_lock(&E.mu);
  while ((j = take(&E.todo, &E.todo_tail, &E.cond, 2)) != NULL) {
    pthread_mutex_unlock(&E.mu);
    if (j->sql == NULL) {
      capture_close(j->cap); /* an open transaction's events go with it */
      sqlite3_close(j->db);  /* the client went away */
      j->db = NULL;
      unlocked();
    } else if (refuse(j) == 0) {
      run_sql(j, 0);
    }
    pthread_mutex_lock(&E.mu);
    put(j, &E.done_tail);
    uv_async_send(&E.wake);
  }
  pthread_mutex_unlock(&E.mu);
  return NULL;
}

void *reader_main(void *arg)
{
  (void)arg;
  struct job *j;
  pthread_mutex_lock(&E.mu);
  while ((j = take(&E.rtodo, &E.rtodo_tail, &E.rcond, 1)) != NULL) {
    pthread_mutex_unlock(&E.mu);
    int to_writer = refuse(j) == 0 && run_sql(j, 1) != 0;
    pthread_mutex_lock(&E.mu);
    if (to_writer) {
      put(j, &E.todo_tail);
      pthread_cond_signal(&E.cond);
    } else {
      put(j, &E.done_tail);
      uv_async_send(&E.wake);
    }
  }
  pthread_mutex_unlock(&E.mu);
  return NULL;
}
