/*
 * engine.c: the database tier, `auralog engine` (paper §3.2, §4.2.2).
 *
 * One process runs SQLite on the auralog VFS over one volume and serves SQL
 * to many clients (`auralog sql`). Each client gets its own SQLite
 * connection, in a sandbox (sandbox.c: no ATTACH, VACUUM INTO or
 * load_extension on this port). Threads run the requests (worker.c), one
 * of a client at a time and in order: a writer thread for anything, and
 * reader threads for requests that only read, so that reads do not wait
 * behind another client's long statement; a request still running after
 * the statement timeout is interrupted, so neither does a commit, for
 * longer than that.
 *
 * Commits are asynchronous, as in Aurora: when a statement commits, the
 * VFS ships its redo and returns at once, so the writer goes on with the
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
 * lease probes); the writer and the readers run SQLite; the volume's I/O
 * thread talks to storage.
 *
 * Files (engine_int.h): this one is the loop (clients, the waiting
 * replies, signals) and the command line; worker.c the threads that run
 * SQL and their SQLite connections (the volume, or a baseline for
 * `auralog bench`); sandbox.c what a client's SQL may reach; probe.c the
 * read lease.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <limits.h>

#include "lib/addr.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "net/net.h"
#include "param.h"
#include "roles.h"
#include "vfs/binlog.h"
#include "vfs/capture.h"
#include "vfs/community.h"
#include "vfs/ddl.h"
#include "vfs/engine_int.h"
#include "vfs/vfs.h"
#include "vfs/volume.h"
#include "net/wire.h"

/* A client's side of the loop: its connection, and its requests not yet
 * handed to a thread. One runs at a time, so that they run in order on
 * the one connection; the last job is closing it. */
struct client {
  sqlite3 *db;
  struct ddl_pend ddl;       /* schema changes of its open transaction (ddl.c) */
  struct capture *cap;       /* its change capture for the binlog, or NULL (capture.c) */
  struct job *queue, **queue_tail;
  int busy;                  /* one of its jobs is on a thread */
  uint64_t last_reply_us;    /* when its last reply, a commit's, was written */
  int last_commit;           /* ... and it is not yet followed by a request */
};

/* The engine's state (engine_int.h): one engine a process. */
struct engine E;

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

/* j's commit is durable and its reply goes out now: time its stages
 * (stages.h), and note when, for the hop back its client reports next. */
static void time_commit(struct job *j)
{
  uint64_t now = now_us();
  struct vol_ctime vt;
  if (vol_commit_times(E.vol, j->commit_lsn, &vt) == 0)
    stages_commit(&j->stamps, &vt, now);
  struct client *cl = j->c->ctx;     /* NULL once its connection closed */
  if (cl) {
    cl->last_reply_us = now;
    cl->last_commit = 1;
  }
}

/* Send every waiting reply whose wait is over (vdl >= wait_lsn), and
 * fail those that waited too long, or that a fenced volume will never
 * make durable. */
void release(void)
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
      if (j->commit_lsn && j->stamps.sync)
        time_commit(j);
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

/* The next word of SQL at *p (blanks and comments skipped): letters, or
 * one other character; *p moves past it. */
static void next_word(const char **p, char *w, size_t n)
{
  const char *s = *p;
  for (;;) {
    while (isspace((unsigned char)*s))
      s++;
    if (s[0] == '-' && s[1] == '-')
      s += strcspn(s, "\n");
    else if (s[0] == '/' && s[1] == '*')
      s = strstr(s + 2, "*/") ? strstr(s + 2, "*/") + 2 : s + strlen(s);
    else
      break;
  }
  size_t k = 0;
  if (*s && !isalpha((unsigned char)*s))
    w[k++] = *s++;
  for (; isalpha((unsigned char)*s); s++)
    if (k + 1 < n)
      w[k++] = *s;
  w[k] = 0;
  *p = s;
}

/* Does this request look like a read: it starts with SELECT, WITH or
 * VALUES, perhaps after a plain BEGIN? Then it starts on a reader, which
 * checks every statement itself (worker.c) and gives the request to the
 * writer if it does more: a guess, which only saves writes a detour. */
static int looks_like_read(const char *sql)
{
  char w[16];
  next_word(&sql, w, sizeof w);
  if (strcasecmp(w, "BEGIN") == 0) {
    next_word(&sql, w, sizeof w);
    if (strcasecmp(w, "DEFERRED") == 0)
      next_word(&sql, w, sizeof w);
    if (strcasecmp(w, "TRANSACTION") == 0)
      next_word(&sql, w, sizeof w);
    if (strcmp(w, ";") != 0)
      return 0;
    next_word(&sql, w, sizeof w);
  }
  return strcasecmp(w, "SELECT") == 0 || strcasecmp(w, "WITH") == 0 ||
         strcasecmp(w, "VALUES") == 0;
}

/* Hand cl's next job to a thread, unless one of its jobs runs. A read
 * goes to the readers if the connection is in no transaction (one opened
 * by an earlier request stays with the writer), and only while there is a
 * statement timeout: a read beside the writer holds the volume's shared
 * lock, which a commit must wait for, and the timeout is what bounds that
 * wait. With none (--statement-timeout 0), every request queues on the
 * writer as before, and a commit waits behind a long read in the queue
 * rather than fail on the lock (found by the crash campaign, point 452 of
 * 500: with nodes slow, reads outlasted the writer's lock wait). */
static void dispatch(struct client *cl)
{
  if (cl->busy || cl->queue == NULL)
    return;
  struct job *j = cl->queue;
  cl->queue = j->next;
  if (cl->queue == NULL)
    cl->queue_tail = &cl->queue;
  j->next = NULL;
  cl->busy = 1;
  int read = E.timeout_ms > 0 && j->sql && looks_like_read(j->sql) &&
             sqlite3_get_autocommit(j->db);
  pthread_mutex_lock(&E.mu);
  if (read) {
    *E.rtodo_tail = j;
    E.rtodo_tail = &j->next;
    pthread_cond_signal(&E.rcond);
  } else {
    *E.todo_tail = j;
    E.todo_tail = &j->next;
    pthread_cond_signal(&E.cond);
  }
  pthread_mutex_unlock(&E.mu);
}

/* Queue j (a request of cl, or closing its connection) behind cl's
 * others. */
static void submit(struct client *cl, struct job *j)
{
  j->cl = cl;
  j->next = NULL;
  *cl->queue_tail = j;
  cl->queue_tail = &j->next;
  dispatch(cl);
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
    struct client *cl = j->cl;
    cl->busy = 0;
    if (j->sql == NULL) {
      free(cl);              /* its connection is closed: nothing follows */
      job_free(j);
      continue;
    }
    dispatch(cl);
    j->at = now_ms();
    j->next = E.waiting;     /* release() sends it when durable */
    E.waiting = j;
  }
  release();
  feed_pump();               /* commits shipped, the VDL moved: the replicas' stream */
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
  feed_tick();
}

/* --binlog community: the binlog file (default DIR/binlog/VOLUME.binlog,
 * DIR being $AURALOG_DIR or ~/.auralog), opened and read whole before the
 * volume opens (community.c). */
static void open_community(const char *path, const char *volume)
{
  char def[PATH_MAX], why[400];
  if (path == NULL) {
    const char *dir = getenv("AURALOG_DIR"), *home = getenv("HOME");
    char base[PATH_MAX - 64];
    snprintf(base, sizeof base, "%s%s", dir ? dir : home ? home : ".", dir ? "" : "/.auralog");
    mkdir(base, 0755);
    snprintf(def, sizeof def, "%s/binlog", base);
    mkdir(def, 0755);
    snprintf(def, sizeof def, "%s/binlog/%s.binlog", base, volume);
    path = def;
  }
  if (community_open(path, why, sizeof why) != 0)
    die("engine: the community binlog: %s", why);
}

int engine_captures(void)
{
  return E.vol && (E.binlog != BINLOG_OFF || capture_on() || vol_has_binlog(E.vol));
}

/* SQLite's commit hook of a writer connection, inside the commit, before
 * the VFS ships it (binlog.h): the transaction's events, final now. */
static int on_commit(void *arg)
{
  struct client *cl = arg;
  uint8_t *buf;
  size_t len;
  capture_commit(cl->cap, &buf, &len);
  if (buf)
    binlog_offer(buf, len);
  return 0;
}

static void on_msg(struct conn *c, const Env *env)
{
  char why[300];
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR)
    return;                 /* never answer an error with an error */
  if ((env->body_case == AURALOG__ENVELOPE__BODY_REPLICA_HELLO ||
       env->body_case == AURALOG__ENVELOPE__BODY_REPLICA_ACK) && c->ctx == NULL &&
      E.vol != NULL) {
    /* A read replica (feed.c); its conn carries no SQL. */
    if (env->body_case == AURALOG__ENVELOPE__BODY_REPLICA_HELLO)
      feed_hello(c, env);
    else
      feed_ack(c, env);
    return;
  }
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
    cl->queue_tail = &cl->queue;
    c->ctx = cl;
  }
  if (cl->db == NULL) {
    if ((cl->db = open_db()) == NULL) {
      conn_error(c, env->req, ERR_UNAVAILABLE, "the engine cannot open its volume");
      return;
    }
    /* The binlog's change capture: a writer's connections, from the
     * start; in enhanced mode its commit hook hands each transaction's
     * events to the VFS, which ships them in the commit's MTR. */
    if (E.vol && engine_captures()) {
      if ((cl->cap = capture_open(cl->db, binlog_sink, NULL)) == NULL)
        die("engine: out of memory for the binlog's change capture");
      if (vol_has_binlog(E.vol) || community_on())
        sqlite3_commit_hook(cl->db, on_commit, cl);
    }
  }
  struct job *j = calloc(1, sizeof *j);
  j->stamps.arrive = now_us();
  /* The client's stamps (`auralog bench`): this request's send, and the
   * arrival of the reply to its last commit (stages.h). */
  j->stamps.sent = env->query->sent_us;
  if (cl->last_commit && env->query->prev_recv_us >= cl->last_reply_us &&
      env->query->prev_recv_us <= j->stamps.arrive)
    stages_down(env->query->prev_recv_us - cl->last_reply_us);
  cl->last_commit = 0;
  j->c = c;
  conn_ref(c);
  j->req = env->req;
  j->sql = strdup(env->query->sql);
  j->db = cl->db;
  j->ddl = &cl->ddl;
  j->cap = cl->cap;
  submit(cl, j);
}

static void on_close(struct conn *c)
{
  if (feed_closed(c))
    return;                  /* a replica's */
  struct client *cl = c->ctx;
  c->ctx = NULL;
  if (cl == NULL)
    return;
  if (cl->db == NULL) {
    free(cl);                /* it never ran anything */
    return;
  }
  /* Close it on the writer, after its other jobs; on_wake frees cl. */
  struct job *j = calloc(1, sizeof *j);
  j->c = c;
  conn_ref(c);
  j->db = cl->db;
  j->ddl = &cl->ddl;
  j->cap = cl->cap;          /* closed with the connection, on the writer */
  cl->cap = NULL;
  submit(cl, j);
}

static void on_signal(uv_signal_t *h, int sig)
{
  (void)h;
  loginfo("signal %d: stopping", sig);
  /* The readers first: one may still hand a request to the writer. */
  pthread_mutex_lock(&E.mu);
  E.stopping = 1;
  pthread_cond_broadcast(&E.rcond);
  pthread_mutex_unlock(&E.mu);
  for (int i = 0; i < ENGINE_READERS; i++)
    pthread_join(E.readers[i], NULL);
  pthread_mutex_lock(&E.mu);
  E.stopping = 2;
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
    "                      [--statement-timeout MS] [--pg-pages N] [--if-epoch N]\n"
    "                      [--create] [--operator FILE] [--binlog off|community|enhanced]\n"
    "                      [--binlog-file PATH]\n"
    "       auralog engine --baseline SYSTEM --file PATH [--listen ADDR]\n"
    "                      [--statement-timeout MS]\n"
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
    "  --statement-timeout MS\n"
    "                 interrupt a request (the SQL of one client message: one\n"
    "                 statement of the `auralog sql` shell) still running after\n"
    "                 MS ms, and roll back its transaction; so another client's\n"
    "                 commit waits behind it no longer (default %d; 0: never)\n"
    "  --pg-pages N   pages per protection group if the volume is created now\n"
    "                 (default %d, 1 to %d; an existing volume keeps its own):\n"
    "                 a volume holds at most %d PGs, so 64 GiB of 4 KiB pages\n"
    "                 takes --pg-pages 4096\n"
    "  --if-epoch N   a promotion (failover): take the volume's next epoch only\n"
    "                 if it is still N, else exit; a replica the coordinator\n"
    "                 promotes becomes `auralog engine ... --if-epoch N`\n"
    "  --create       make the volume even if its name was dropped (a new,\n"
    "                 empty volume: never done by an open otherwise)\n"
    "  --binlog MODE  the binlog, a stream of row changes in commit order\n"
    "                 (`auralog binlog tail`): off (default); enhanced: each\n"
    "                 commit's events go with its redo, in the same MTR, to\n"
    "                 the volume's binlog PG in the storage tier (placed now\n"
    "                 if missing; from then on every writer of the volume\n"
    "                 keeps it); community: as MySQL, a local binlog file\n"
    "                 (--binlog-file) kept in a two-phase commit with the\n"
    "                 redo: prepare, the file's fsync, the commit record, one\n"
    "                 commit at a time; a restart reads the whole file\n"
    "  --binlog-file PATH  community: the binlog file (default\n"
    "                 $AURALOG_DIR/binlog/VOLUME.binlog, or ~/.auralog/...)\n"
    "  --operator FILE  the operator's key (default: $AURALOG_OPERATOR, else\n"
    "                 operator.key beside the cluster key's directory): only\n"
    "                 the operator's engine takes a writer epoch\n"
    "\n"
    "Clients' SQL runs in a sandbox: ATTACH, DETACH, VACUUM INTO and\n"
    "load_extension() are refused (they reach files and code on the engine's\n"
    "machine; the sqlite3 extension is the way to a local database). Requests\n"
    "that only read run on %d reader threads beside the writer (with a\n"
    "statement timeout; with none, every request queues on the writer).\n"
    "\n"
    "Baselines for `auralog bench`: the same server, threads and protocol over\n"
    "stock SQLite instead of a volume, so that only storage differs.\n"
    "  --baseline SYSTEM  sqlite-wal-full (WAL, synchronous=FULL),\n"
    "                     sqlite-delete-full (rollback journal, synchronous=FULL)\n"
    "                     or sqlite-memory (in memory: the CPU ceiling)\n"
    "  --file PATH        the database file (not for sqlite-memory)\n",
    READ_LEASE_MS, ENGINE_ADDR_DEFAULT, COORD_ADDR_DEFAULT, CACHE_PAGES, STATEMENT_TIMEOUT_MS,
    PG_PAGES, PG_PAGES_MAX, MAX_PGS, ENGINE_READERS);
}

/* --cache and --statement-timeout, as `auralog engine` and `auralog
 * replica` both take them (who: the command, for the message). */
long engine_opt_cache(const char *who, const char *arg)
{
  char *end;
  long cache = strtol(arg, &end, 10);
  if (end == arg || *end || cache < 8 || cache > 1000000)
    die("%s: --cache is a number of pages from 8 to 1000000, not '%s'", who, arg);
  return cache;
}

int engine_opt_timeout(const char *who, const char *arg)
{
  char *end;
  long ms = strtol(arg, &end, 10);
  if (end == arg || *end || ms < 0 || ms > 86400000)
    die("%s: --statement-timeout is a number of ms from 0 (never) to 86400000, not '%s'",
        who, arg);
  return (int)ms;
}

/* The engine before on this address, crashed or stopped a moment ago,
 * may still be exiting (a large one takes a while to die on a busy
 * machine): its port is free again soon. Wait for it before opening the
 * volume (whose leases start then), up to ENGINE_LISTEN_WAIT_MS; past
 * that, engine_serve says why it cannot listen. A writer and a replica
 * both (replica.c). */
void engine_wait_port(const char *listen)
{
  struct sockaddr_in sa;
  char why[160];
  if (addr_parse(listen, &sa, why, sizeof why) != 0)
    return;                  /* engine_serve says what is wrong with it */
  unsigned long long until = now_ms() + ENGINE_LISTEN_WAIT_MS;
  for (int waited = 0;; waited++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0)
      return;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int taken = bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno == EADDRINUSE;
    close(fd);
    if (!taken || now_ms() >= until)
      return;
    if (waited == 0)
      loginfo("engine: %s is taken: waiting up to %d s for it (an engine that stopped may "
              "still be exiting)", listen, ENGINE_LISTEN_WAIT_MS / 1000);
    uv_sleep(100);
  }
}

int engine_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"volume", required_argument, 0, 'v'}, {"listen", required_argument, 0, 'l'},
    {"coord", required_argument, 0, 'c'}, {"ship", required_argument, 0, 's'},
    {"baseline", required_argument, 0, 'b'}, {"file", required_argument, 0, 'f'},
    {"reads", required_argument, 0, 'r'}, {"cache", required_argument, 0, 'C'},
    {"statement-timeout", required_argument, 0, 'T'}, {"pg-pages", required_argument, 0, 'P'},
    {"if-epoch", required_argument, 0, 'I'}, {"create", no_argument, 0, 'N'},
    {"operator", required_argument, 0, 'O'}, {"binlog", required_argument, 0, 'B'},
    {"binlog-file", required_argument, 0, 'G'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *volume = "main", *listen = ENGINE_ADDR_DEFAULT, *coord = NULL, *file = NULL;
  const char *blfile = NULL;
  const char *reads = NULL;
  long cache = 0, pg_pages = 0;
  unsigned long long if_epoch = 0;
  int o;
  E.timeout_ms = STATEMENT_TIMEOUT_MS;
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
    case 'C': cache = engine_opt_cache("engine", optarg); break;
    case 'T': E.timeout_ms = engine_opt_timeout("engine", optarg); break;
    case 'P': {
      char *end;
      pg_pages = strtol(optarg, &end, 10);
      if (end == optarg || *end || pg_pages < 1 || pg_pages > PG_PAGES_MAX)
        die("engine: --pg-pages is a number of pages from 1 to %d, not '%s'", PG_PAGES_MAX,
            optarg);
      break;
    }
    case 'I': {
      char *end;
      if_epoch = strtoull(optarg, &end, 10);
      if (end == optarg || *end || if_epoch == 0 || if_epoch >= EPOCH_MAX)
        die("engine: --if-epoch is an epoch, not '%s'", optarg);
      break;
    }
    case 'N': vol_recreate_default(1); break;
    case 'O': setenv("AURALOG_OPERATOR", optarg, 1); break;
    case 'G': blfile = optarg; break;
    case 'B':
      if (strcmp(optarg, "off") == 0)
        E.binlog = BINLOG_OFF;
      else if (strcmp(optarg, "enhanced") == 0)
        E.binlog = BINLOG_ENHANCED;
      else if (strcmp(optarg, "community") == 0)
        E.binlog = BINLOG_COMMUNITY;
      else
        die("engine: --binlog is off, community or enhanced, not '%s'", optarg);
      vol_binlog_default(E.binlog == BINLOG_ENHANCED);
      binlog_set_mode(optarg);
      break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("engine: unexpected argument '%s' (see auralog engine --help)", argv[optind]);
  /* A promotion opens as the replica the coordinator chose, not as the
   * operator (coord/roles.c R1): a replica is never given the operator's
   * key, and its engine does not look for one. */
  if (if_epoch)
    op_use(0);
  if (if_epoch && E.baseline)
    die("engine: --if-epoch is for a volume, not for --baseline");
  if (cache && E.baseline)
    die("engine: --cache is for a volume, not for --baseline");
  if (pg_pages && E.baseline)
    die("engine: --pg-pages is for a volume, not for --baseline");
  if (!wire_name_ok(volume))
    die("engine: '%s' is not a volume name", volume);
  if (E.baseline && E.ship_pages)
    die("engine: --ship is for a volume, not for --baseline");
  if (file && !E.baseline)
    die("engine: --file is for --baseline");
  if (reads && E.baseline)
    die("engine: --reads is for a volume, not for --baseline");
  /* A baseline is stock SQLite on a local file: it belongs to no cluster,
   * so it does not look for one (AURALOG_DIR may name a directory whose
   * cluster is gone, and bench runs baselines with no cluster at all). */
  if (E.baseline && (coord == NULL || !*coord))
    coord = COORD_ADDR_DEFAULT;
  coord = addr_coord(coord);
  char why[256];
  struct sockaddr_in sa;
  if (addr_parse(listen, &sa, why, sizeof why) != 0 || addr_parse(coord, &sa, why, sizeof why) != 0)
    die("engine: %s", why);
  log_role("engine");
  signal(SIGPIPE, SIG_IGN);
  E.coord = coord;
  pthread_mutex_init(&E.lmu, NULL);

  char kwhy[PATH_MAX + 160];
  if (E.baseline) {
    open_baseline(file);
    if (!key_auth_off() && key_get(kwhy, sizeof kwhy) == NULL)
      die("engine: %s", kwhy);
  } else {
    if (!key_auth_off() && key_get(kwhy, sizeof kwhy) == NULL)
      die("engine: %s", kwhy);
    snprintf(E.volume, sizeof E.volume, "%s", volume);
    snprintf(E.uri, sizeof E.uri, "file:%s?vfs=auralog&coord=%s", volume, coord);
    if (cache)
      snprintf(E.uri + strlen(E.uri), sizeof E.uri - strlen(E.uri), "&cache_pages=%ld", cache);
    if (pg_pages)
      snprintf(E.uri + strlen(E.uri), sizeof E.uri - strlen(E.uri), "&pg_pages=%ld", pg_pages);
    if (if_epoch)
      snprintf(E.uri + strlen(E.uri), sizeof E.uri - strlen(E.uri), "&if_epoch=%llu", if_epoch);
    engine_wait_port(listen);
    if (E.binlog == BINLOG_COMMUNITY)
      open_community(blfile, volume);   /* its recovery scan, before the volume's */
    else if (blfile)
      die("engine: --binlog-file is for --binlog community");
    if (auralog_vfs_register(0, listen, 1) != SQLITE_OK)
      die("engine: cannot register the auralog VFS");
    auralog_vfs_ship_pages(E.ship_pages);
    vol_reads_default(E.reads_immediate);
    unsigned long long t0 = now_ms();
    if ((E.root = open_db()) == NULL) {
      const char *why = auralog_vfs_open_error();
      die("engine: cannot open volume %s: %s", volume, why[0] ? why : "see the log above");
    }
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
    if (E.binlog == BINLOG_COMMUNITY) {
      char cwhy[300];
      if (vol_has_binlog(E.vol))
        die("engine: volume %s keeps an enhanced binlog in the storage tier; --binlog "
            "community would keep a second one (start it with --binlog enhanced)", volume);
      if (community_opened(E.vol, cwhy, sizeof cwhy) != 0)
        die("engine: %s", cwhy);
    } else if (vol_has_binlog(E.vol)) {
      binlog_set_mode("enhanced");
      loginfo("volume %s has a binlog (enhanced): every commit's row events go with its "
              "redo to the binlog PG%s", volume,
              E.binlog == BINLOG_OFF ? " (kept by every writer of the volume)" : "");
    }
    /* failover.c F3: after a manual failover the old writer may still hold
     * a read lease: no commit is acknowledged here until it has run out,
     * so no client reads there what a commit here has changed. */
    if (st.serve_after_ms > now_ms()) {
      unsigned long long wait = st.serve_after_ms - now_ms();
      loginfo("waiting %llu ms for the previous writer's read lease to run out", wait);
      struct timespec ts = {(time_t)(wait / 1000), (long)(wait % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    lease_start(t0);
    if (if_epoch)
      loginfo("promoted: writer of volume %s at epoch %llu (from %llu), serving on %s", volume,
              (unsigned long long)st.epoch, if_epoch, listen);
  }
  return engine_serve(listen);
}

int engine_serve(const char *listen)
{
  char why[256];
  if (E.loop == NULL)
    E.loop = uv_default_loop();
  pthread_mutex_init(&E.mu, NULL);
  pthread_cond_init(&E.cond, NULL);
  pthread_cond_init(&E.rcond, NULL);
  E.todo_tail = &E.todo;
  E.rtodo_tail = &E.rtodo;
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
    die("engine: %s", why);   /* (engine_wait_port waited for a port still taken) */
  pthread_create(&E.worker, NULL, worker_main, NULL);
  for (int i = 0; i < ENGINE_READERS; i++)
    pthread_create(&E.readers[i], NULL, reader_main, NULL);
  uv_signal_init(E.loop, &E.sigterm);
  uv_signal_init(E.loop, &E.sigint);
  uv_signal_start(&E.sigterm, on_signal, SIGTERM);
  uv_signal_start(&E.sigint, on_signal, SIGINT);
  char limit[48] = "none";
  if (E.timeout_ms)
    fmt_ms(limit, sizeof limit, E.timeout_ms);
  if (E.rvol)
    loginfo("replica serving read-only SQL on %s (volume %s, writer %s; statement timeout %s)",
            listen, E.volume, E.writer, limit);
  else if (E.baseline)
    loginfo("engine serving SQL on %s (%s; statement timeout %s)", listen, E.baseline, limit);
  else
    loginfo("engine serving SQL on %s (volume %s, coordinator %s; reads %s; statement "
            "timeout %s)", listen, E.volume, E.coord,
            E.reads_immediate ? "immediate: replies may show commits not yet durable"
                              : "durable: a reply waits until what it saw is durable", limit);
  return uv_run(E.loop, UV_RUN_DEFAULT);
}
