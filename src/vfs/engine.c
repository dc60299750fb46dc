/*
 * engine.c: the database tier, `auralog engine` (paper §3.2, §4.2.2).
 *
 * One process runs SQLite on the auralog VFS over one volume and serves SQL
 * to many clients (`auralog sql`). Each client gets its own SQLite
 * connection; a worker thread runs the statements, one request at a time.
 *
 * Commits are asynchronous, as in Aurora: when a statement commits, the
 * VFS ships its redo and returns at once, so the worker goes on with the
 * next request; the client's reply is set aside with its commit LSN and
 * sent only when the VDL reaches it (the volume calls back on the I/O
 * thread; an async handle brings that to this loop). A commit still not
 * durable after COMMIT_DEADLINE_MS is an unknown outcome, and the client
 * is told so: storage has no write quorum, and the commit may still
 * become durable (when the quorum returns) or be truncated by the next
 * recovery.
 *
 * Durable reads (DESIGN.md §4, invariant 5; the default, --reads
 * durable): SQLite sees a commit's pages as soon as it is shipped, before
 * it is durable, so any request could see data that a crash would take
 * away. So every reply, reads included, waits like a commit's: until the
 * VDL reaches the last commit shipped before its statements ran (which
 * bounds every commit its snapshot can see), or its own commit if later.
 * A read whose data is still not durable at the deadline fails and says
 * so. --reads immediate releases a read's reply at once, as Aurora (and
 * InnoDB) do: the anomaly labs show.
 *
 * Read lease (lease.h): a writer that a newer one fenced learns it from
 * storage only at its next write; until then its cache would go on
 * answering reads. So the engine probes the coordinator for the volume's
 * epoch every ENGINE_STAT_MS and serves a request only while its lease,
 * counted from the send time of the last probe answered with its own
 * epoch, is younger than READ_LEASE_MS. A newer epoch fences the volume
 * for good ("fenced by epoch N").
 *
 * Threads: the main thread runs libuv (clients, the waiting replies, the
 * lease probes); the worker runs SQLite; the volume's I/O thread talks to
 * storage.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "net.h"
#include "param.h"
#include "roles.h"
#include "rpc.h"
#include "vfs/countvfs.h"
#include "vfs/lease.h"
#include "vfs/vfs.h"
#include "vfs/volume.h"

/* A request for the worker, and then its answer for the loop. */
struct job {
  struct conn *c;            /* referenced while the job lives */
  uint64_t req;
  char *sql;                 /* NULL: close the client's database */
  sqlite3 *db;
  uint8_t *frame;            /* the packed reply */
  size_t len;
  uint64_t commit_lsn;       /* the request's own last commit (0: none) */
  uint64_t wait_lsn;         /* the reply goes out once vdl >= this */
  unsigned long long at;     /* when the reply was ready */
  struct job *next;
};

struct client {
  sqlite3 *db;
};

struct engine {
  uv_loop_t *loop;
  char volume[NAME_MAX_LEN + 1];
  char uri[1200];
  const char *baseline;      /* NULL, or the stock SQLite it runs instead */
  int ship_pages;
  int reads_immediate;       /* --reads immediate: a read's reply does not wait */
  const char *coord;
  sqlite3 *root;             /* keeps the volume open */
  struct volume *vol;
  pthread_t worker;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  struct job *todo, **todo_tail;   /* for the worker */
  struct job *done, **done_tail;   /* for the loop */
  struct job *waiting;             /* replies waiting for the VDL, by LSN */
  uv_async_t wake;
  uv_timer_t tick;
  uv_signal_t sigterm, sigint;
  int stopping;
  /* The read lease (a volume only): lmu guards lease (the worker checks
   * it, the loop renews it); the probe conn and timer are the loop's. */
  pthread_mutex_t lmu;
  struct lease lease;
  uint64_t epoch;
  uint32_t page_size;
  struct conn *probe;
  unsigned long long probe_retry_at;
  uint64_t probe_seq;
  uv_timer_t probe_tick;
  int lease_shown;           /* the last lease state logged: 1 valid, 0 not */
};

static struct engine E;

/* ---- the worker: SQLite -------------------------------------------------- */

static char *add_text(const unsigned char *t)
{
  return strdup(t ? (const char *)t : "");
}

/* Run every statement of j->sql on db; pack the reply into j. */
static void run_sql(struct job *j)
{
  sqlite3 *db = j->db;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Rows rows = AURALOG__ROWS__INIT;
  Auralog__Error err = AURALOG__ERROR__INIT;
  size_t caprows = 0;
  const char *tail = j->sql;
  char *errtext = NULL;
  int64_t before = sqlite3_total_changes64(db);
  /* Every commit this request's statements can see is at or below the
   * last one shipped now (one worker: nobody else commits meanwhile). */
  uint64_t seen = E.vol && !E.reads_immediate ? vol_last_cpl(E.vol) : 0;
  while (tail && *tail) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK) {
      errtext = strdup(sqlite3_errmsg(db));
      break;
    }
    if (st == NULL)
      continue;              /* whitespace or a comment */
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
      const char *vfs_err = NULL;
      if ((rc & 0xff) == SQLITE_IOERR)
        sqlite3_file_control(db, "main", AURALOG_FCNTL_LAST_ERROR, &vfs_err);
      size_t n = strlen(sqlite3_errmsg(db)) + (vfs_err ? strlen(vfs_err) : 0) + 8;
      errtext = malloc(n);
      snprintf(errtext, n, "%s%s%s", sqlite3_errmsg(db), vfs_err && *vfs_err ? ": " : "",
               vfs_err ? vfs_err : "");
    }
    sqlite3_finalize(st);
    if (errtext)
      break;
  }
  uint64_t lsn = 0;
  sqlite3_file_control(db, "main", AURALOG_FCNTL_COMMIT_LSN, &lsn);
  j->commit_lsn = lsn;
  /* Durable reads: the reply (an error too: "UNIQUE constraint failed"
   * tells of a row) waits for what it saw and for its own commit.
   * Immediate: a commit's reply waits for it, anything else goes now. */
  j->wait_lsn = E.reads_immediate || E.vol == NULL ? (errtext ? 0 : lsn)
                                                   : (lsn > seen ? lsn : seen);
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
  j->frame = wire_frame(&env, &j->len);
  if (j->frame == NULL) {
    Env e2;
    Auralog__Error e = AURALOG__ERROR__INIT;
    wire_error(&e2, &e, j->req, ERR_BAD_MSG, "result too large for one reply (16 MiB)");
    j->frame = wire_frame(&e2, &j->len);
  }
  for (size_t i = 0; i < rows.n_rows; i++) {
    for (size_t k = 0; k < rows.rows[i]->n_values; k++) {
      free(rows.rows[i]->values[k]->text);
      free(rows.rows[i]->values[k]);
    }
    free(rows.rows[i]->values);
    free(rows.rows[i]);
  }
  free(rows.rows);
  for (size_t i = 0; i < rows.n_columns; i++)
    free(rows.columns[i]);
  free(rows.columns);
  free(errtext);
}

/* SELECT auralog_stats(): this engine's counters as JSON, for `auralog
 * bench` (which reads them before and after a run through the same SQL
 * channel as its workload, for every system alike). */
static void stats_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
  (void)argc;
  (void)argv;
  cJSON *o = cJSON_CreateObject();
  if (E.vol) {
    struct vol_stats st;
    vol_get_stats(E.vol, &st);
    cJSON_AddStringToObject(o, "system", E.ship_pages ? "auralog-pages" : "auralog");
    cJSON_AddNumberToObject(o, "vdl", (double)st.vdl);
    cJSON_AddNumberToObject(o, "commits", (double)st.commits);
    cJSON_AddNumberToObject(o, "records", (double)st.records);
    cJSON_AddNumberToObject(o, "redo_bytes", (double)st.redo_bytes);
    cJSON_AddNumberToObject(o, "redo_msgs", (double)st.redo_msgs);
    cJSON_AddNumberToObject(o, "pages_read", (double)st.pages_read);
    cJSON_AddNumberToObject(o, "net_bytes_out", (double)st.net_bytes_out);
    cJSON_AddNumberToObject(o, "net_msgs_out", (double)st.net_msgs_out);
    cJSON_AddNumberToObject(o, "net_bytes_in", (double)st.net_bytes_in);
    cJSON_AddNumberToObject(o, "net_msgs_in", (double)st.net_msgs_in);
    cJSON_AddNumberToObject(o, "syncs", 0);   /* the engine has no disk */
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

/* Baselines (`auralog bench`): stock SQLite in place of the volume, behind
 * the same server, worker and clients, so that only storage differs. Each
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

static sqlite3 *open_db(void)
{
  sqlite3 *db = NULL;
  const char *vfs = E.baseline == NULL ? "auralog" : NULL;
  if (sqlite3_open_v2(E.uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                      vfs) != SQLITE_OK) {
    logwarn("cannot open %s: %s", E.uri, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_create_function(db, "auralog_stats", 0, SQLITE_UTF8, NULL, stats_fn, NULL, NULL);
  /* Another connection's commit is never in the way (the worker runs one
   * request at a time), but a baseline's checkpoint might be. */
  sqlite3_busy_timeout(db, 5000);
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

/* May the engine serve now? A fenced writer never again; one whose read
 * lease ran out not until it is renewed. 0, or -1 with j's error reply. */
static int refuse(struct job *j)
{
  char why[400];
  uint32_t code = ERR_STALE_EPOCH;
  if (E.vol == NULL)
    return 0;                /* a baseline: no volume, no other writer */
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
  j->frame = wire_frame(&env, &j->len);
  j->commit_lsn = j->wait_lsn = 0;   /* it saw nothing: out at once */
  return -1;
}

static void *worker_main(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&E.mu);
  for (;;) {
    while (E.todo == NULL && !E.stopping)
      pthread_cond_wait(&E.cond, &E.mu);
    if (E.todo == NULL)
      break;
    struct job *j = E.todo;
    E.todo = j->next;
    if (E.todo == NULL)
      E.todo_tail = &E.todo;
    pthread_mutex_unlock(&E.mu);
    if (j->sql == NULL) {
      sqlite3_close(j->db);  /* the client went away */
      j->db = NULL;
    } else if (refuse(j) == 0) {
      run_sql(j);
    }
    pthread_mutex_lock(&E.mu);
    j->next = NULL;
    *E.done_tail = j;
    E.done_tail = &j->next;
    uv_async_send(&E.wake);
  }
  pthread_mutex_unlock(&E.mu);
  return NULL;
}

/* ---- the loop: clients and durable replies ------------------------------- */

static void job_free(struct job *j)
{
  conn_unref(j->c);
  free(j->sql);
  free(j->frame);
  free(j);
}

static void send_frame(struct job *j)
{
  if (j->frame)
    conn_send_frame(j->c, j->frame, j->len);
  j->frame = NULL;
}

/* "5 s" for 5000 ms. */
static void fmt_ms(char *buf, size_t n, int ms)
{
  if (ms % 1000 == 0)
    snprintf(buf, n, "%d s", ms / 1000);
  else
    snprintf(buf, n, "%d ms", ms);
}

/* Why j's reply cannot go out: what it waits for is not durable, and the
 * deadline passed or the volume is fenced (fenced: why it is). Returns the
 * error code. */
static uint32_t not_durable(const struct job *j, const char *fenced, char *why, size_t whylen)
{
  char after[32];
  struct vol_stats st;
  vol_get_stats(E.vol, &st);
  fmt_ms(after, sizeof after, COMMIT_DEADLINE_MS);
  if (j->commit_lsn && j->commit_lsn >= j->wait_lsn) {
    /* Its own commit: shipped, not acknowledged, not refused. */
    if (fenced)
      snprintf(why, whylen, "commit %llu not durable: %s; the newer writer's recovery keeps "
               "the commit if it reached a write quorum, else truncates it",
               (unsigned long long)j->commit_lsn, fenced);
    else
      snprintf(why, whylen, "commit %llu not durable after %s: storage has no write quorum; "
               "the commit may still become durable or be truncated at the next recovery "
               "(vdl %llu; %llu records wait for %d of %d acks)",
               (unsigned long long)j->commit_lsn, after, (unsigned long long)st.vdl,
               (unsigned long long)st.pending, VW, NCOPIES);
    return fenced ? ERR_STALE_EPOCH : ERR_UNAVAILABLE;
  }
  /* What it saw: another client's commit (or its own earlier one). */
  if (fenced)
    snprintf(why, whylen, "the data this request saw is not durable: it includes commit %llu, "
             "above the vdl %llu, and %s", (unsigned long long)j->wait_lsn,
             (unsigned long long)st.vdl, fenced);
  else
    snprintf(why, whylen, "the data this request saw is not durable yet: it includes commit "
             "%llu, not durable after %s (vdl %llu): storage has no write quorum; the reply "
             "is withheld, as a crash could take that data away (auralog engine --reads)",
             (unsigned long long)j->wait_lsn, after, (unsigned long long)st.vdl);
  return fenced ? ERR_STALE_EPOCH : ERR_UNAVAILABLE;
}

/* Send every waiting reply whose wait is over (vdl >= wait_lsn), and
 * fail those that waited too long, or that a fenced volume will never
 * make durable. */
static void release(void)
{
  uint64_t vdl = E.vol ? vol_vdl(E.vol) : 0;
  unsigned long long now = now_ms();
  char fenced[300];
  int is_fenced = -1;        /* not asked yet */
  struct job **pp = &E.waiting;
  while (*pp) {
    struct job *j = *pp;
    if (j->wait_lsn <= vdl) {
      *pp = j->next;
      send_frame(j);
      job_free(j);
      continue;
    }
    if (is_fenced < 0)
      is_fenced = vol_fenced(E.vol, fenced, sizeof fenced);
    if (is_fenced || now - j->at > COMMIT_DEADLINE_MS) {
      char why[800];
      *pp = j->next;
      uint32_t code = not_durable(j, is_fenced ? fenced : NULL, why, sizeof why);
      conn_error(j->c, j->req, code, why);
      job_free(j);
    } else {
      pp = &j->next;
    }
  }
}

static void on_wake(uv_async_t *h)
{
  (void)h;
  pthread_mutex_lock(&E.mu);
  struct job *list = E.done;
  E.done = NULL;
  E.done_tail = &E.done;
  pthread_mutex_unlock(&E.mu);
  while (list) {
    struct job *j = list;
    list = j->next;
    if (j->sql == NULL) {
      job_free(j);
      continue;
    }
    j->at = now_ms();
    j->next = E.waiting;     /* release() sends it when durable */
    E.waiting = j;
  }
  release();
}

static void on_durable(void *arg, uint64_t vdl)
{
  (void)arg;
  (void)vdl;
  uv_async_send(&E.wake);    /* called on the volume's I/O thread */
}

static void on_tick(uv_timer_t *t)
{
  (void)t;
  release();
}

/* ---- the loop: the read lease ---------------------------------------------- */

/* Log the lease's state when it changes (a lab watches it in the log). */
static void lease_show(void)
{
  char why[300];
  pthread_mutex_lock(&E.lmu);
  int ok = lease_valid(&E.lease, now_ms(), READ_LEASE_MS, why, sizeof why);
  pthread_mutex_unlock(&E.lmu);
  if (ok != E.lease_shown) {
    if (ok)
      loginfo("read lease renewed: the coordinator confirms epoch %llu",
              (unsigned long long)E.epoch);
    else
      logwarn("%s", why);
  }
  E.lease_shown = ok;
}

/* Ask the coordinator for the volume's epoch (its answer: on_probe_answer). */
static void probe_send(void)
{
  if (E.probe == NULL || !E.probe->connected)
    return;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vh.name = E.volume;
  vh.page_size = E.page_size;
  vh.epoch = E.epoch;
  env.req = ++E.probe_seq;
  env.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  env.volume = &vh;
  unsigned long long at = now_ms();  /* before it leaves: never later */
  if (conn_send(E.probe, &env) == 0) {
    pthread_mutex_lock(&E.lmu);
    lease_sent(&E.lease, env.req, at);
    pthread_mutex_unlock(&E.lmu);
  }
}

/* A newer epoch: fence the volume for good (its writes and page reads
 * fail from now on, as after a node's refusal). */
static void lease_fence(void)
{
  char why[300];
  pthread_mutex_lock(&E.lmu);
  lease_valid(&E.lease, now_ms(), READ_LEASE_MS, why, sizeof why);
  pthread_mutex_unlock(&E.lmu);
  vol_fence(E.vol, why);
  release();                 /* replies waiting on a fenced volume fail now */
}

static void on_probe_answer(struct conn *c, const Env *env)
{
  (void)c;
  if (env->body_case == AURALOG__ENVELOPE__BODY_VOLUME) {
    pthread_mutex_lock(&E.lmu);
    enum lease_event ev = lease_answer(&E.lease, env->req, env->volume->epoch);
    pthread_mutex_unlock(&E.lmu);
    if (ev == LEASE_FENCED)
      lease_fence();
  } else if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR) {
    pthread_mutex_lock(&E.lmu);
    lease_drop(&E.lease, env->req);
    pthread_mutex_unlock(&E.lmu);
    if (E.lease_shown)
      logwarn("read lease: the coordinator refused a probe: %s", env->error->msg);
  }
  lease_show();
}

static void on_probe_connected(struct conn *c, int status)
{
  if (status == 0 && c == E.probe)
    probe_send();
}

static void on_probe_closed(struct conn *c)
{
  if (E.probe != c)
    return;
  E.probe = NULL;
  E.probe_retry_at = now_ms() + RECONNECT_MS;
  pthread_mutex_lock(&E.lmu);
  lease_lost(&E.lease);      /* no answer comes on a closed conn */
  pthread_mutex_unlock(&E.lmu);
}

static void on_probe_tick(uv_timer_t *t)
{
  (void)t;
  if (E.probe == NULL) {
    if (now_ms() >= E.probe_retry_at) {
      E.probe = net_connect(E.loop, E.coord, on_probe_connected, on_probe_answer,
                            on_probe_closed, &E);
      if (E.probe == NULL)
        E.probe_retry_at = now_ms() + RECONNECT_MS;
    }
  } else {
    probe_send();
  }
  lease_show();
}

/* The first lease, before serving: the epoch came from the coordinator
 * after t0 (vol_open asked for it), so it holds from t0; recovery may
 * have taken longer than a lease, so ask once more, now, and wait. */
static void lease_start(unsigned long long t0)
{
  char why[300];
  lease_init(&E.lease, E.epoch, t0);
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vh.name = E.volume;
  vh.page_size = E.page_size;
  vh.epoch = E.epoch;
  req.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  req.volume = &vh;
  uint64_t id = ++E.probe_seq;
  lease_sent(&E.lease, id, now_ms());
  Env *rep = rpc_once(E.coord, &req, RPC_TIMEOUT_MS, why, sizeof why);
  if (rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why) == 0 &&
      lease_answer(&E.lease, id, rep->volume->epoch) == LEASE_FENCED)
    lease_fence();
  else if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_VOLUME)
    logwarn("read lease: cannot ask the coordinator: %s", why);
  wire_free(rep);
  lease_drop(&E.lease, id);
  E.lease_shown = 1;         /* log only a change from here on */
}

static void submit(struct job *j)
{
  pthread_mutex_lock(&E.mu);
  j->next = NULL;
  *E.todo_tail = j;
  E.todo_tail = &j->next;
  pthread_cond_signal(&E.cond);
  pthread_mutex_unlock(&E.mu);
}

static void on_msg(struct conn *c, const Env *env)
{
  char why[300];
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR)
    return;                 /* never answer an error with an error */
  if (env->body_case != AURALOG__ENVELOPE__BODY_QUERY) {
    conn_error(c, env->req, ERR_BAD_MSG, "the engine serves SQL queries only");
    return;
  }
  /* A fenced writer (a newer engine opened the volume) serves nothing:
   * its cache may be stale and its writes are refused anyway. */
  if (E.vol && vol_fenced(E.vol, why, sizeof why)) {
    conn_error(c, env->req, ERR_STALE_EPOCH, why);
    return;
  }
  struct client *cl = c->ctx;
  if (cl == NULL) {
    cl = calloc(1, sizeof *cl);
    c->ctx = cl;
  }
  if (cl->db == NULL && (cl->db = open_db()) == NULL) {
    conn_error(c, env->req, ERR_UNAVAILABLE, "the engine cannot open its volume");
    return;
  }
  struct job *j = calloc(1, sizeof *j);
  j->c = c;
  conn_ref(c);
  j->req = env->req;
  j->sql = strdup(env->query->sql);
  j->db = cl->db;
  submit(j);
}

static void on_close(struct conn *c)
{
  struct client *cl = c->ctx;
  c->ctx = NULL;
  if (cl == NULL)
    return;
  if (cl->db) {
    /* Close it on the worker, after anything it still runs. */
    struct job *j = calloc(1, sizeof *j);
    j->c = c;
    conn_ref(c);
    j->db = cl->db;
    submit(j);
  }
  free(cl);
}

static void on_signal(uv_signal_t *h, int sig)
{
  (void)h;
  loginfo("signal %d: stopping", sig);
  pthread_mutex_lock(&E.mu);
  E.stopping = 1;
  pthread_cond_signal(&E.cond);
  pthread_mutex_unlock(&E.mu);
  pthread_join(E.worker, NULL);
  sqlite3_close(E.root);     /* waits for what was shipped, tells the VDL */
  exit(0);
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog engine [--volume NAME] [--listen ADDR] [--coord ADDR]\n"
    "                      [--ship redo|pages] [--reads durable|immediate] [--cache PAGES]\n"
    "       auralog engine --baseline SYSTEM --file PATH [--listen ADDR]\n"
    "\n"
    "Run the database tier: SQLite on the auralog VFS over one volume. It\n"
    "ships only redo (page deltas) to the six segments of each protection\n"
    "group, and answers a client's COMMIT once the VDL reaches its commit LSN.\n"
    "Opening the volume recovers it: new epoch, read quorum per PG,\n"
    "truncation above the VDL. It serves only while the coordinator confirms\n"
    "its epoch (a %d ms read lease): a newer writer fences it.\n"
    "\n"
    "  --volume NAME  volume to serve (default main; created if missing)\n"
    "  --listen ADDR  address for SQL clients (default %s)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD or %s)\n"
    "  --ship MODE    redo: page deltas (default); pages: every changed page\n"
    "                 whole, like a mirrored database (a baseline for bench)\n"
    "  --reads MODE   durable (default): every reply, reads included, waits\n"
    "                 until the VDL covers every commit it could see, so no\n"
    "                 client sees data a crash could take away; immediate:\n"
    "                 a read's reply goes out at once, showing commits not\n"
    "                 yet durable, as in Aurora and InnoDB\n"
    "  --cache PAGES  buffer cache size in pages (default %d; a small one makes\n"
    "                 reads go to storage)\n"
    "\n"
    "Baselines for `auralog bench`: the same server, worker and protocol over\n"
    "stock SQLite instead of a volume, so that only storage differs.\n"
    "  --baseline SYSTEM  sqlite-wal-full (WAL, synchronous=FULL),\n"
    "                     sqlite-delete-full (rollback journal, synchronous=FULL)\n"
    "                     or sqlite-memory (in memory: the CPU ceiling)\n"
    "  --file PATH        the database file (not for sqlite-memory)\n",
    READ_LEASE_MS, ENGINE_ADDR_DEFAULT, COORD_ADDR_DEFAULT, CACHE_PAGES);
}

/* Open a baseline's database and check it answers. */
static void open_baseline(const char *file)
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

int engine_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"volume", required_argument, 0, 'v'}, {"listen", required_argument, 0, 'l'},
    {"coord", required_argument, 0, 'c'}, {"ship", required_argument, 0, 's'},
    {"baseline", required_argument, 0, 'b'}, {"file", required_argument, 0, 'f'},
    {"reads", required_argument, 0, 'r'}, {"cache", required_argument, 0, 'C'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *volume = "main", *listen = ENGINE_ADDR_DEFAULT, *coord = NULL, *file = NULL;
  const char *reads = NULL;
  long cache = 0;
  int o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'v': volume = optarg; break;
    case 'l': listen = optarg; break;
    case 'c': coord = optarg; break;
    case 's':
      if (strcmp(optarg, "pages") && strcmp(optarg, "redo"))
        die("engine: --ship is redo or pages, not '%s'", optarg);
      E.ship_pages = strcmp(optarg, "pages") == 0;
      break;
    case 'b': E.baseline = optarg; break;
    case 'f': file = optarg; break;
    case 'r':
      if (strcmp(optarg, "durable") && strcmp(optarg, "immediate"))
        die("engine: --reads is durable or immediate, not '%s'", optarg);
      reads = optarg;
      E.reads_immediate = strcmp(optarg, "immediate") == 0;
      break;
    case 'C': {
      char *end;
      cache = strtol(optarg, &end, 10);
      if (end == optarg || *end || cache < 8 || cache > 1000000)
        die("engine: --cache is a number of pages from 8 to 1000000, not '%s'", optarg);
      break;
    }
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("engine: unexpected argument '%s' (see auralog engine --help)", argv[optind]);
  if (cache && E.baseline)
    die("engine: --cache is for a volume, not for --baseline");
  if (!wire_name_ok(volume))
    die("engine: '%s' is not a volume name", volume);
  if (E.baseline && E.ship_pages)
    die("engine: --ship is for a volume, not for --baseline");
  if (file && !E.baseline)
    die("engine: --file is for --baseline");
  if (reads && E.baseline)
    die("engine: --reads is for a volume, not for --baseline");
  coord = addr_coord(coord);
  char why[256];
  struct sockaddr_in sa;
  if (addr_parse(listen, &sa, why, sizeof why) != 0 || addr_parse(coord, &sa, why, sizeof why) != 0)
    die("engine: %s", why);
  log_role("engine");
  signal(SIGPIPE, SIG_IGN);
  E.coord = coord;
  pthread_mutex_init(&E.lmu, NULL);

  if (E.baseline) {
    open_baseline(file);
  } else {
    snprintf(E.volume, sizeof E.volume, "%s", volume);
    snprintf(E.uri, sizeof E.uri, "file:%s?vfs=auralog&coord=%s", volume, coord);
    if (cache)
      snprintf(E.uri + strlen(E.uri), sizeof E.uri - strlen(E.uri), "&cache_pages=%ld", cache);
    if (auralog_vfs_register(0, listen, 1) != SQLITE_OK)
      die("engine: cannot register the auralog VFS");
    auralog_vfs_ship_pages(E.ship_pages);
    unsigned long long t0 = now_ms();
    if ((E.root = open_db()) == NULL)
      die("engine: cannot open volume %s (see the log above)", volume);
    /* Opening does not read anything yet; a query makes SQLite read the
     * schema, which is when a broken volume would show. */
    char *err = NULL;
    if (sqlite3_exec(E.root, "SELECT count(*) FROM sqlite_schema", NULL, NULL, &err) != SQLITE_OK)
      die("engine: volume %s: %s", volume, err ? err : "unreadable");
    sqlite3_file_control(E.root, "main", AURALOG_FCNTL_VOLUME, &E.vol);
    struct vol_stats st;
    vol_get_stats(E.vol, &st);
    loginfo("volume %s: epoch %llu, vdl %llu, recovered in %llu ms (open took %llu ms)%s",
            volume, (unsigned long long)st.epoch, (unsigned long long)st.vdl,
            (unsigned long long)st.recovery_ms, now_ms() - t0,
            E.ship_pages ? "; shipping whole pages (a baseline)" : "");
    E.epoch = st.epoch;
    E.page_size = vol_page_size(E.vol);
    lease_start(t0);
  }

  E.loop = uv_default_loop();
  pthread_mutex_init(&E.mu, NULL);
  pthread_cond_init(&E.cond, NULL);
  E.todo_tail = &E.todo;
  E.done_tail = &E.done;
  uv_async_init(E.loop, &E.wake, on_wake);
  uv_timer_init(E.loop, &E.tick);
  uv_timer_start(&E.tick, on_tick, 100, 100);
  if (E.vol) {
    vol_on_durable(E.vol, on_durable, NULL);
    uv_timer_init(E.loop, &E.probe_tick);
    uv_timer_start(&E.probe_tick, on_probe_tick, 0, ENGINE_STAT_MS);
  }
  if (net_listen(E.loop, listen, on_msg, on_close, &E, why, sizeof why) != 0)
    die("engine: %s", why);
  pthread_create(&E.worker, NULL, worker_main, NULL);
  uv_signal_init(E.loop, &E.sigterm);
  uv_signal_init(E.loop, &E.sigint);
  uv_signal_start(&E.sigterm, on_signal, SIGTERM);
  uv_signal_start(&E.sigint, on_signal, SIGINT);
  if (E.baseline)
    loginfo("engine serving SQL on %s (%s)", listen, E.baseline);
  else
    loginfo("engine serving SQL on %s (volume %s, coordinator %s; reads %s)", listen, volume,
            coord, E.reads_immediate ? "immediate: replies may show commits not yet durable"
                                     : "durable: a reply waits until what it saw is durable");
  return uv_run(E.loop, UV_RUN_DEFAULT);
}
