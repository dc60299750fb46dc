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
 * thread; an async handle brings that to this loop). A reply still waiting
 * after COMMIT_DEADLINE_MS becomes a clear error: no write quorum.
 *
 * Threads: the main thread runs libuv (clients, the waiting replies); the
 * worker runs SQLite; the volume's I/O thread talks to storage.
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
#include "vfs/countvfs.h"
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
  uint64_t commit_lsn;
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
  env.req = j->req;
  if (errtext) {
    err.code = ERR_BAD_MSG;
    err.msg = errtext;
    env.body_case = AURALOG__ENVELOPE__BODY_ERROR;
    env.error = &err;
    j->commit_lsn = 0;       /* nothing to wait for: the error goes out now */
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
    } else {
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

/* Send every waiting reply whose commit is now durable, and fail those
 * that waited too long. */
static void release(void)
{
  uint64_t vdl = E.vol ? vol_vdl(E.vol) : 0;
  unsigned long long now = now_ms();
  struct job **pp = &E.waiting;
  while (*pp) {
    struct job *j = *pp;
    if (j->commit_lsn <= vdl) {
      *pp = j->next;
      send_frame(j);
      job_free(j);
    } else if (now - j->at > COMMIT_DEADLINE_MS) {
      char why[300];
      *pp = j->next;
      vol_stalled(E.vol, j->commit_lsn, (int)(now - j->at), why, sizeof why);
      conn_error(j->c, j->req, ERR_UNAVAILABLE, why);
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
    "                      [--ship redo|pages]\n"
    "       auralog engine --baseline SYSTEM --file PATH [--listen ADDR]\n"
    "\n"
    "Run the database tier: SQLite on the auralog VFS over one volume. It\n"
    "ships only redo (page deltas) to the six segments of each protection\n"
    "group, and answers a client's COMMIT once the VDL reaches its commit LSN.\n"
    "Opening the volume recovers it: new epoch, read quorum per PG,\n"
    "truncation above the VDL.\n"
    "\n"
    "  --volume NAME  volume to serve (default main; created if missing)\n"
    "  --listen ADDR  address for SQL clients (default %s)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD or %s)\n"
    "  --ship MODE    redo: page deltas (default); pages: every changed page\n"
    "                 whole, like a mirrored database (a baseline for bench)\n"
    "\n"
    "Baselines for `auralog bench`: the same server, worker and protocol over\n"
    "stock SQLite instead of a volume, so that only storage differs.\n"
    "  --baseline SYSTEM  sqlite-wal-full (WAL, synchronous=FULL),\n"
    "                     sqlite-delete-full (rollback journal, synchronous=FULL)\n"
    "                     or sqlite-memory (in memory: the CPU ceiling)\n"
    "  --file PATH        the database file (not for sqlite-memory)\n",
    ENGINE_ADDR_DEFAULT, COORD_ADDR_DEFAULT);
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
    {"help", no_argument, 0, 'h'}, {0}};
  const char *volume = "main", *listen = ENGINE_ADDR_DEFAULT, *coord = NULL, *file = NULL;
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
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("engine: unexpected argument '%s' (see auralog engine --help)", argv[optind]);
  if (!wire_name_ok(volume))
    die("engine: '%s' is not a volume name", volume);
  if (E.baseline && E.ship_pages)
    die("engine: --ship is for a volume, not for --baseline");
  if (file && !E.baseline)
    die("engine: --file is for --baseline");
  coord = addr_coord(coord);
  char why[256];
  struct sockaddr_in sa;
  if (addr_parse(listen, &sa, why, sizeof why) != 0 || addr_parse(coord, &sa, why, sizeof why) != 0)
    die("engine: %s", why);
  log_role("engine");
  signal(SIGPIPE, SIG_IGN);

  if (E.baseline) {
    open_baseline(file);
  } else {
    snprintf(E.volume, sizeof E.volume, "%s", volume);
    snprintf(E.uri, sizeof E.uri, "file:%s?vfs=auralog&coord=%s", volume, coord);
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
  }

  E.loop = uv_default_loop();
  pthread_mutex_init(&E.mu, NULL);
  pthread_cond_init(&E.cond, NULL);
  E.todo_tail = &E.todo;
  E.done_tail = &E.done;
  uv_async_init(E.loop, &E.wake, on_wake);
  uv_timer_init(E.loop, &E.tick);
  uv_timer_start(&E.tick, on_tick, 100, 100);
  if (E.vol)
    vol_on_durable(E.vol, on_durable, NULL);
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
    loginfo("engine serving SQL on %s (volume %s, coordinator %s)", listen, volume, coord);
  return uv_run(E.loop, UV_RUN_DEFAULT);
}
