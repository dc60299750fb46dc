/*
 * bench.c: `auralog bench [WORKLOAD]`: the paper's throughput and network
 * figures (§6, Table 1) on one machine, beside honest baselines measured
 * in the same run.
 *
 * Five systems run the same workload, one after the other, each from a
 * freshly loaded data set:
 *   auralog             the engine over a volume of six segments: redo only
 *   auralog-pages       the same, but every changed page shipped whole (the
 *                       mirrored database of Table 1)
 *   sqlite-wal-full     stock SQLite, WAL, synchronous=FULL, local file
 *   sqlite-delete-full  stock SQLite, rollback journal, synchronous=FULL
 *   sqlite-memory       stock SQLite in memory: the engine's CPU ceiling
 *   auralog-nokey       auralog again, on a cluster restarted with
 *                       AURALOG_AUTH=off: no handshake, no frame MACs
 *                       (auth.h), so that what the cluster key costs is
 *                       measured in the same run (loopback only)
 * All five run behind the same engine server (`auralog engine`, with
 * --ship pages or --baseline), reached by the same clients over the same
 * protocol, so the only difference between them is storage. The cluster is
 * private to the benchmark (a fresh one, in its own directory on the same
 * disk as the SQLite files), so a run never touches a student's volume.
 *
 * The workloads (sysbench's OLTP shapes) are in workload.c. Each client
 * sends a whole transaction as one request and waits for its answer,
 * which comes once the commit is durable; its latency is that round trip. Figures per transaction (network, fsyncs, CPU) count
 * everything from the end of the load to the end of the run, warm-up
 * included, divided by every transaction in it; throughput and latency
 * count only the measured window after the warm-up.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "keyfile.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "status.h"

#define NSYS        6
#define SYS_NOKEY   5
/* The systems that run on the private cluster. */
#define ON_CLUSTER(i) ((i) < 2 || (i) == SYS_NOKEY)
#define TX_TIMEOUT  30000        /* ms: one transaction's answer */

static const char *sys_names[NSYS] = {"auralog", "auralog-pages", "sqlite-wal-full",
                                      "sqlite-delete-full", "sqlite-memory", "auralog-nokey"};

struct opts {
  struct workload wl;        /* what, on how much data, from which seed */
  int clients, duration, warmup;
  int sys[NSYS];             /* which systems run */
  int json, base;
  const char *reads;         /* the auralog engines' --reads: durable or immediate */
  char dir[1024];
};

/* What one system did. */
struct result {
  int ran;
  char err[400];
  double tx_s, writes_s;
  struct hist h;
  struct hist rh;            /* the read-only transactions among them */
  uint64_t tx_all;           /* transactions from the end of the load on */
  uint64_t errors;
  /* per transaction, over tx_all */
  double net_bytes, net_msgs, redo_bytes, redo_msgs, records, gossip_bytes, gossip_msgs;
  double fsyncs_engine, fsyncs_nodes, disk_bytes, cpu_engine_ms, cpu_nodes_ms;
  double load_s;
};

/* Counters read before and after a run. */
struct snap {
  double redo_bytes, redo_msgs, records, net_bytes, net_msgs, syncs, disk_bytes;
  double node_fsyncs, gossip_bytes, gossip_msgs;
  double cpu_engine, cpu_nodes;
};

/* The machine's limit on one commit, measured before the systems (limit.c). */
static struct limit lim;

/* Ctrl-C or SIGTERM: stop the run, then the private cluster. */
static volatile sig_atomic_t interrupted;
static void on_int(int sig)
{
  (void)sig;
  interrupted = 1;
}

/* ---- clients ------------------------------------------------------------------ */

struct run {
  const struct opts *o;
  const char *addr;
  _Atomic int phase;         /* 0 warm-up, 1 measuring, 2 stop */
  _Atomic uint64_t tx, measured, errors;
  pthread_mutex_t mu;
  struct hist h;             /* merged by the clients as they finish */
  struct hist rh;            /* ... of the read-only transactions */
  char err[300];             /* the first error */
};

struct client {
  struct run *run;
  int id;
  pthread_t th;
};

static void *client_main(void *arg)
{
  struct client *c = arg;
  struct run *run = c->run;
  static _Thread_local struct hist h, rh;
  memset(&h, 0, sizeof h);
  memset(&rh, 0, sizeof rh);
  char *sql = malloc(WL_SQL_MAX), why[300];
  uint64_t s = run->o->wl.seed * 1000003 + (uint64_t)c->id * 7777 + 1;
  struct rpc r;
  if (bench_connect(&r, run->addr, 5000, why, sizeof why) != 0) {
    run->errors++;
    pthread_mutex_lock(&run->mu);
    if (!run->err[0])
      snprintf(run->err, sizeof run->err, "%s", why);
    pthread_mutex_unlock(&run->mu);
    free(sql);
    return NULL;
  }
  while (run->phase < 2) {
    int ro = wl_tx(&run->o->wl, &s, sql);
    int measuring = run->phase == 1;
    double t0 = bench_now_us();
    Env *rep = bench_sql(&r, sql, TX_TIMEOUT, why, sizeof why);
    double us = bench_now_us() - t0;
    if (rep == NULL) {
      run->errors++;
      pthread_mutex_lock(&run->mu);
      if (!run->err[0])
        snprintf(run->err, sizeof run->err, "%s", why);
      pthread_mutex_unlock(&run->mu);
      if (r.fd < 0 || strstr(why, "timed out") || strstr(why, "closed")) {
        rpc_close(&r);
        if (bench_connect(&r, run->addr, 2000, why, sizeof why) != 0)
          break;
      }
      continue;
    }
    wire_free(rep);
    run->tx++;
    /* Only transactions that started and ended inside the window count. */
    if (measuring && run->phase == 1) {
      run->measured++;
      hist_add(&h, us);
      if (ro)
        hist_add(&rh, us);
    }
  }
  rpc_close(&r);
  pthread_mutex_lock(&run->mu);
  hist_merge(&run->h, &h);
  hist_merge(&run->rh, &rh);
  pthread_mutex_unlock(&run->mu);
  free(sql);
  return NULL;
}

/* ---- systems -------------------------------------------------------------------- */

struct sys {
  int i;                     /* index in sys_names */
  char addr[64], coord[64], cdir[1100], log[1200];
  pid_t pid;
  const char *volume;
};

static double num(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Read the counters: the engine's through SQL, the nodes' through the
 * coordinator (their heartbeats), CPU from /proc. */
static int snapshot(struct sys *y, struct rpc *r, struct snap *sn, char *why, size_t n)
{
  memset(sn, 0, sizeof *sn);
  Env *rep = bench_sql(r, "SELECT auralog_stats()", TX_TIMEOUT, why, n);
  if (rep == NULL)
    return -1;
  cJSON *o = NULL;
  if (rep->rows->n_rows == 1 && rep->rows->rows[0]->n_values == 1)
    o = cJSON_Parse(rep->rows->rows[0]->values[0]->text);
  wire_free(rep);
  if (o == NULL) {
    snprintf(why, n, "the engine's auralog_stats() is not JSON");
    return -1;
  }
  sn->redo_bytes = num(o, "redo_bytes");
  sn->redo_msgs = num(o, "redo_msgs");
  sn->records = num(o, "records");
  sn->net_bytes = num(o, "net_bytes_out") + num(o, "net_bytes_in");
  sn->net_msgs = num(o, "net_msgs_out") + num(o, "net_msgs_in");
  sn->syncs = num(o, "syncs");
  sn->disk_bytes = num(o, "bytes_written");
  cJSON_Delete(o);
  sn->cpu_engine = bench_cpu_s(y->pid);
  if (y->volume == NULL)
    return 0;
  static const char *nodes[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};
  for (int k = 0; k < NCOPIES; k++)
    sn->cpu_nodes += bench_cpu_s(bench_member_pid(y->cdir, nodes[k]));
  Env *st = status_fetch(y->coord, y->volume, why, n);
  if (st == NULL)
    return -1;
  for (size_t k = 0; k < st->status->n_nodes; k++) {
    Auralog__NodeInfo *ni = st->status->nodes[k];
    sn->node_fsyncs += (double)ni->fsyncs;
    sn->gossip_bytes += (double)ni->gossip_bytes;
    sn->gossip_msgs += (double)ni->gossip_msgs;
  }
  wire_free(st);
  return 0;
}

static int start_system(const struct opts *o, struct sys *y, char *why, size_t n)
{
  const char *name = sys_names[y->i];
  snprintf(y->addr, sizeof y->addr, "127.0.0.1:%d", o->base + ENGINE_PORT_OFFSET + 1);
  snprintf(y->log, sizeof y->log, "%s/%s.log", o->dir, name);
  unlink(y->log);
  if (ON_CLUSTER(y->i)) {
    y->volume = y->i == 1 ? "bench-pages" : "bench";
    const char *argv[] = {"engine", "--volume", y->volume, "--listen", y->addr, "--coord",
                          y->coord, "--ship", y->i == 1 ? "pages" : "redo",
                          "--reads", o->reads, NULL};
    y->pid = bench_start(y->log, argv);
  } else {
    char file[1200], f2[1300];
    snprintf(file, sizeof file, "%s/sqlite", o->dir);
    if (mkdir(file, 0755) != 0 && errno != EEXIST) {
      snprintf(why, n, "cannot make %.200s: %s", file, strerror(errno));
      return -1;
    }
    /* A fresh database: remove this system's files of an earlier run. */
    snprintf(file, sizeof file, "%s/sqlite/%s.db", o->dir, name);
    const char *ext[] = {"", "-wal", "-shm", "-journal"};
    for (int k = 0; k < 4; k++) {
      snprintf(f2, sizeof f2, "%s%s", file, ext[k]);
      unlink(f2);
    }
    const char *argv[] = {"engine", "--baseline", name, "--file", file, "--listen", y->addr,
                          NULL};
    const char *mem[] = {"engine", "--baseline", name, "--listen", y->addr, NULL};
    y->pid = bench_start(y->log, y->i == 4 ? mem : argv);
  }
  if (y->pid < 0) {
    snprintf(why, n, "cannot start the engine for %s", name);
    return -1;
  }
  return 0;
}

/* ---- one system ------------------------------------------------------------------- */

/* The progress line, on stderr: redrawn every second on a terminal, a
 * line every five seconds otherwise (a log, CI). */
static void progress(const char *name, const char *what, double t, double total, double txs)
{
  static double printed = -10;
  if (isatty(2)) {
    fprintf(stderr, "\r\033[K%-18s %-9s %5.1f/%.0f s  %9.0f tx/s", name, what, t, total, txs);
  } else if (t - printed >= 5 || t < printed) {
    fprintf(stderr, "%-18s %-9s %5.1f/%.0f s  %9.0f tx/s\n", name, what, t, total, txs);
    printed = t;
  }
}

static void run_system(const struct opts *o, struct sys *y, struct result *res)
{
  const char *name = sys_names[y->i];
  char why[300];
  struct rpc r;
  r.fd = -1;
  res->ran = 1;
  if (start_system(o, y, why, sizeof why) != 0)
    goto fail;
  if (bench_connect(&r, y->addr, 30000, why, sizeof why) != 0) {
    snprintf(why, sizeof why, "its engine did not start; see %s", y->log);
    goto fail;
  }
  fprintf(stderr, "%-18s loading %d x %d rows...%s", name, o->wl.tables, o->wl.rows,
          isatty(2) ? "" : "\n");
  double t0 = bench_now_us();
  if (wl_load(&o->wl, &r, why, sizeof why) != 0)
    goto fail;
  res->load_s = (bench_now_us() - t0) / 1e6;
  /* Write back every dirty page in the machine (the load's, and an earlier
   * system's), so that no system pays for another's writeback in its
   * fsyncs; then let the load's last counts reach the coordinator. */
  sync();
  usleep(2 * HEARTBEAT_MS * 1000);
  struct snap s0, s1;
  if (snapshot(y, &r, &s0, why, sizeof why) != 0)
    goto fail;

  static struct run run;
  memset(&run, 0, sizeof run);
  run.o = o;
  run.addr = y->addr;
  pthread_mutex_init(&run.mu, NULL);
  struct client *cs = calloc((size_t)o->clients, sizeof *cs);
  for (int i = 0; i < o->clients; i++) {
    cs[i] = (struct client){&run, i, 0};
    pthread_create(&cs[i].th, NULL, client_main, &cs[i]);
  }
  double start = bench_now_us(), mstart = start, last = start;
  uint64_t lasttx = 0;
  for (;;) {
    usleep(100000);
    double now = bench_now_us(), t = (now - start) / 1e6;
    if (run.phase == 0 && t >= o->warmup) {
      run.phase = 1;
      mstart = now;
    }
    if (t >= o->warmup + o->duration || interrupted)
      break;
    if (now - last >= 1e6) {
      uint64_t tx = run.tx;
      progress(name, run.phase ? "measuring" : "warm-up", t, o->warmup + o->duration,
               (double)(tx - lasttx) / ((now - last) / 1e6));
      lasttx = tx;
      last = now;
    }
  }
  run.phase = 2;
  double mend = bench_now_us();
  for (int i = 0; i < o->clients; i++)
    pthread_join(cs[i].th, NULL);
  free(cs);
  if (isatty(2))
    fprintf(stderr, "\r\033[K");
  usleep(2 * HEARTBEAT_MS * 1000);
  if (snapshot(y, &r, &s1, why, sizeof why) != 0)
    goto fail;

  double secs = (mend - mstart) / 1e6;
  res->h = run.h;
  res->rh = run.rh;
  res->errors = run.errors;
  res->tx_all = run.tx;
  res->tx_s = (double)run.measured / secs;
  res->writes_s = res->tx_s * wl_writes[o->wl.kind];
  double tx = run.tx ? (double)run.tx : 1;
  res->redo_bytes = (s1.redo_bytes - s0.redo_bytes) / tx;
  res->redo_msgs = (s1.redo_msgs - s0.redo_msgs) / tx;
  res->records = (s1.records - s0.records) / tx;
  res->gossip_bytes = (s1.gossip_bytes - s0.gossip_bytes) / tx;
  res->gossip_msgs = (s1.gossip_msgs - s0.gossip_msgs) / tx;
  res->net_bytes = (s1.net_bytes - s0.net_bytes) / tx + res->gossip_bytes;
  res->net_msgs = (s1.net_msgs - s0.net_msgs) / tx + res->gossip_msgs;
  res->fsyncs_engine = (s1.syncs - s0.syncs) / tx;
  res->fsyncs_nodes = (s1.node_fsyncs - s0.node_fsyncs) / tx;
  res->disk_bytes = (s1.disk_bytes - s0.disk_bytes) / tx;
  res->cpu_engine_ms = (s1.cpu_engine - s0.cpu_engine) * 1000 / tx;
  res->cpu_nodes_ms = (s1.cpu_nodes - s0.cpu_nodes) * 1000 / tx;
  if (run.errors)
    snprintf(res->err, sizeof res->err, "%llu failed transactions; the first: %.300s",
             (unsigned long long)run.errors, run.err);
  if (run.measured == 0 && !res->err[0])
    snprintf(res->err, sizeof res->err, "no transaction finished in the window");
  rpc_close(&r);
  bench_stop(y->pid, 10000);
  return;
fail:
  if (isatty(2))
    fprintf(stderr, "\r\033[K");
  snprintf(res->err, sizeof res->err, "%s", why);
  if (r.fd >= 0)
    rpc_close(&r);
  if (y->pid > 0)
    bench_stop(y->pid, 3000);
}

/* ---- report ------------------------------------------------------------------------ */

static const char *durability(int i)
{
  static const char *d[NSYS] = {
    "commit acked when 4 of 6 segments (2 per AZ, 3 AZs) have it in lmdb with fsync",
    "the same, shipping every changed page whole",
    "journal_mode=WAL, synchronous=FULL (fsync of the WAL at every commit)",
    "journal_mode=DELETE, synchronous=FULL (journal and database synced at every commit)",
    "in memory (memdb): not durable; the CPU ceiling",
    "as auralog, with no cluster key: no handshake, no frame MACs (AURALOG_AUTH=off)"};
  return d[i];
}

static void conditions(const struct opts *o, cJSON *c)
{
  bench_conditions(c, o->dir);
  cJSON_AddStringToObject(c, "workload", wl_names[o->wl.kind]);
  cJSON_AddNumberToObject(c, "clients", o->clients);
  cJSON_AddNumberToObject(c, "duration_s", o->duration);
  cJSON_AddNumberToObject(c, "warmup_s", o->warmup);
  cJSON_AddNumberToObject(c, "tables", o->wl.tables);
  cJSON_AddNumberToObject(c, "rows", o->wl.rows);
  cJSON_AddNumberToObject(c, "row_bytes", 8 + 8 + 120 + 60);
  cJSON_AddNumberToObject(c, "seed", (double)o->wl.seed);
  cJSON_AddStringToObject(c, "reads", o->reads);
  cJSON_AddNumberToObject(c, "page_size", PAGE_SIZE_DEFAULT);
  cJSON_AddStringToObject(c, "replication", "6 segments per PG, 2 per AZ in 3 AZs, write quorum 4");
  cJSON_AddStringToObject(c, "server", "every system behind the same engine server "
                          "(one SQLite worker thread), same clients and protocol");
  cJSON_AddStringToObject(c, "sqlite_tuning", "page_size 4096, default cache, "
                          "wal_autocheckpoint 1000 (default), busy_timeout 5000");
  cJSON *d = cJSON_AddObjectToObject(c, "durability");
  for (int i = 0; i < NSYS; i++)
    if (o->sys[i])
      cJSON_AddStringToObject(d, sys_names[i], durability(i));
}

static cJSON *result_json(const struct result *rs, int i)
{
  const struct result *r = &rs[i];
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "system", sys_names[i]);
  if (r->err[0])
    cJSON_AddStringToObject(j, "error", r->err);
  cJSON_AddNumberToObject(j, "tx_per_s", r->tx_s);
  cJSON_AddNumberToObject(j, "writes_per_s", r->writes_s);
  cJSON_AddNumberToObject(j, "p50_ms", hist_ms(&r->h, 0.50));
  cJSON_AddNumberToObject(j, "p95_ms", hist_ms(&r->h, 0.95));
  cJSON_AddNumberToObject(j, "p99_ms", hist_ms(&r->h, 0.99));
  cJSON_AddNumberToObject(j, "max_ms", hist_ms(&r->h, 1.0));
  if (r->rh.n && r->rh.n < r->h.n) {   /* a mix: the read-only ones apart */
    cJSON_AddNumberToObject(j, "read_p50_ms", hist_ms(&r->rh, 0.50));
    cJSON_AddNumberToObject(j, "read_p95_ms", hist_ms(&r->rh, 0.95));
    cJSON_AddNumberToObject(j, "read_p99_ms", hist_ms(&r->rh, 0.99));
    cJSON_AddNumberToObject(j, "read_max_ms", hist_ms(&r->rh, 1.0));
  }
  cJSON_AddNumberToObject(j, "net_bytes_per_tx", r->net_bytes);
  cJSON_AddNumberToObject(j, "net_msgs_per_tx", r->net_msgs);
  cJSON_AddNumberToObject(j, "fsyncs_per_tx", r->fsyncs_engine + r->fsyncs_nodes);
  cJSON_AddNumberToObject(j, "redo_bytes_per_tx", r->redo_bytes);
  cJSON_AddNumberToObject(j, "redo_msgs_per_tx", r->redo_msgs);
  cJSON_AddNumberToObject(j, "records_per_tx", r->records);
  cJSON_AddNumberToObject(j, "storage_tier_bytes_per_tx", r->gossip_bytes);
  cJSON_AddNumberToObject(j, "storage_tier_msgs_per_tx", r->gossip_msgs);
  cJSON_AddNumberToObject(j, "fsyncs_engine_per_tx", r->fsyncs_engine);
  cJSON_AddNumberToObject(j, "fsyncs_nodes_per_tx", r->fsyncs_nodes);
  cJSON_AddNumberToObject(j, "disk_bytes_per_tx", r->disk_bytes);
  cJSON_AddNumberToObject(j, "cpu_ms_per_tx_engine", r->cpu_engine_ms);
  cJSON_AddNumberToObject(j, "cpu_ms_per_tx_nodes", r->cpu_nodes_ms);
  cJSON_AddNumberToObject(j, "transactions", (double)r->tx_all);
  cJSON_AddNumberToObject(j, "latency_samples", (double)r->h.n);
  cJSON_AddNumberToObject(j, "load_s", r->load_s);
  if (ON_CLUSTER(i) && lim.ok && !r->err[0])
    cJSON_AddNumberToObject(j, "p50_vs_limit", hist_ms(&r->h, .5) / lim.commit_ms);
  /* tx_per_s of this system divided by each other one's */
  cJSON *v = cJSON_AddObjectToObject(j, "tx_per_s_vs");
  for (int k = 0; k < NSYS; k++)
    if (k != i && rs[k].ran && !rs[k].err[0] && rs[k].tx_s > 0)
      cJSON_AddNumberToObject(v, sys_names[k], r->tx_s / rs[k].tx_s);
  return j;
}

/* 12345.6 -> "12,346" */
static const char *grp(double v, char *buf)
{
  char t[32];
  snprintf(t, sizeof t, "%.0f", v < 0 ? 0 : v);
  size_t n = strlen(t), k = 0;
  for (size_t i = 0; i < n; i++) {
    if (i && (n - i) % 3 == 0)
      buf[k++] = ',';
    buf[k++] = t[i];
  }
  buf[k] = 0;
  return buf;
}

static void print_table(const struct opts *o, const struct result *rs, cJSON *cond)
{
  char a[32], b[32], c[32];
  printf("auralog bench %s: %d clients, %d s measured after %d s warm-up, "
         "%d tables x %d rows, seed %llu, auralog reads %s\n", wl_names[o->wl.kind],
         o->clients, o->duration, o->warmup, o->wl.tables, o->wl.rows, o->wl.seed, o->reads);
  printf("conditions: auralog %s; SQLite %s; lmdb %s; libuv %s; %s; %s; %d cores; "
         "%.0f MB RAM; %s on %s; %s\n",
         cJSON_GetObjectItem(cond, "auralog")->valuestring,
         cJSON_GetObjectItem(cond, "sqlite")->valuestring,
         cJSON_GetObjectItem(cond, "lmdb")->valuestring,
         cJSON_GetObjectItem(cond, "libuv")->valuestring,
         cJSON_GetObjectItem(cond, "kernel")->valuestring,
         cJSON_GetObjectItem(cond, "cpu")->valuestring,
         (int)num(cond, "cores"), num(cond, "memory_mb"), o->dir,
         cJSON_GetObjectItem(cond, "filesystem")->valuestring,
         cJSON_GetObjectItem(cond, "network")->valuestring);
  printf("every system runs behind the same engine server and clients; only storage differs\n\n");
  printf("%-19s %8s %9s %7s %7s %7s %8s %9s %7s %7s %8s %8s\n", "system", "tx/s", "writes/s",
         "p50 ms", "p95 ms", "p99 ms", "max ms", "net B/tx", "msgs/tx", "fsync/tx",
         "redo B/tx", "cpu ms/tx");
  for (int i = 0; i < NSYS; i++) {
    const struct result *r = &rs[i];
    if (!r->ran)
      continue;
    if (r->err[0] && r->h.n == 0) {
      printf("%-19s failed: %s\n", sys_names[i], r->err);
      continue;
    }
    char d[32];
    printf("%-19s %8s %9s %7.2f %7.2f %7.2f %8.2f %9s %7.1f %7.2f %9s %8.3f\n", sys_names[i],
           grp(r->tx_s, a), grp(r->writes_s, b), hist_ms(&r->h, .5), hist_ms(&r->h, .95),
           hist_ms(&r->h, .99), hist_ms(&r->h, 1), grp(r->net_bytes, c), r->net_msgs,
           r->fsyncs_engine + r->fsyncs_nodes, ON_CLUSTER(i) ? grp(r->redo_bytes, d) : "-",
           r->cpu_engine_ms + r->cpu_nodes_ms);
    if (r->err[0])
      printf("%-19s   (%s)\n", "", r->err);
  }
  for (int i = 0; i < NSYS; i++) {
    const struct result *r = &rs[i];
    if (r->ran && r->rh.n && r->rh.n < r->h.n)
      printf("%-19s read-only transactions: p50 %.2f, p95 %.2f, p99 %.2f, max %.2f ms\n",
             sys_names[i], hist_ms(&r->rh, .5), hist_ms(&r->rh, .95), hist_ms(&r->rh, .99),
             hist_ms(&r->rh, 1));
  }
  printf("\nnet: engine<->storage frames both ways, plus storage<->storage (gossip); "
         "fsync: engine + nodes; cpu: engine + nodes\n");
  printf("\nthroughput ratios (row / column, tx/s):\n%-19s", "");
  for (int k = 0; k < NSYS; k++)
    if (rs[k].ran && !rs[k].err[0])
      printf(" %18s", sys_names[k]);
  printf("\n");
  for (int i = 0; i < NSYS; i++) {
    if (!rs[i].ran || rs[i].err[0])
      continue;
    printf("%-19s", sys_names[i]);
    for (int k = 0; k < NSYS; k++)
      if (rs[k].ran && !rs[k].err[0])
        printf(" %17.2fx", rs[k].tx_s > 0 ? rs[i].tx_s / rs[k].tx_s : 0);
    printf("\n");
  }
  limit_print(&lim, o->dir, cJSON_GetObjectItem(cond, "filesystem")->valuestring);
  for (int i = 0; i < NSYS && lim.ok; i++)
    if (ON_CLUSTER(i) && rs[i].ran && !rs[i].err[0])
      printf("  %-14s commit p50 %.3f ms = %.1fx the limit; %.0f tx/s = %.2f per quorum "
             "round the disk can do\n", sys_names[i], hist_ms(&rs[i].h, .5),
             hist_ms(&rs[i].h, .5) / lim.commit_ms, rs[i].tx_s, rs[i].tx_s / lim.quorum_per_s);
  const struct result *k = &rs[0], *nk = &rs[SYS_NOKEY];
  if (k->ran && nk->ran && !k->err[0] && !nk->err[0] && nk->tx_s > 0)
    printf("\nthe cluster key's cost (auralog with it, auralog-nokey without, this run): "
           "%.0f vs %.0f tx/s (%+.1f%%), p50 %.2f vs %.2f ms, cpu %.3f vs %.3f ms/tx\n",
           k->tx_s, nk->tx_s, 100 * (k->tx_s / nk->tx_s - 1), hist_ms(&k->h, .5),
           hist_ms(&nk->h, .5), k->cpu_engine_ms + k->cpu_nodes_ms,
           nk->cpu_engine_ms + nk->cpu_nodes_ms);
  if (rs[0].ran && rs[1].ran && !rs[0].err[0] && !rs[1].err[0] && rs[0].redo_bytes > 0) {
    printf("\nredo shipped per transaction: auralog %s B in %.1f records, auralog-pages %s B "
           "(%.1fx more: Table 1's point)\n", grp(rs[0].redo_bytes, a), rs[0].records,
           grp(rs[1].redo_bytes, b), rs[1].redo_bytes / rs[0].redo_bytes);
    printf("per transaction at the nodes: %.2f fsyncs in all six, %.1f KB across the storage "
           "tier; engine CPU %.3f ms, nodes CPU %.3f ms\n", rs[0].fsyncs_nodes,
           rs[0].gossip_bytes / 1024, rs[0].cpu_engine_ms, rs[0].cpu_nodes_ms);
  }
}

/* ---- the command -------------------------------------------------------------------- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench [WORKLOAD] [--clients N] [--duration S] [--warmup S]\n"
    "                     [--tables T] [--rows R] [--seed N] [--systems LIST]\n"
    "                     [--json] [--dir DIR] [--base-port PORT] [--reads MODE]\n"
    "       auralog bench recovery --help\n"
    "       auralog bench append --help\n"
    "\n"
    "Run a sysbench-shaped workload on auralog and on stock SQLite baselines,\n"
    "one after the other on this machine, and print throughput, commit latency\n"
    "(p50 p95 p99 max), network bytes and messages, fsyncs and CPU per\n"
    "transaction, every ratio between the systems, and the run's conditions.\n"
    "It starts a private cluster (and stops it); your own cluster is untouched.\n"
    "\n"
    "WORKLOAD: write-only (default: 2 UPDATEs, 1 DELETE, 1 INSERT per\n"
    "          transaction), insert, read-only, oltp (reads and writes),\n"
    "          read-write (read-only and write-only transactions, half each;\n"
    "          the read-only ones' latency is also shown apart)\n"
    "  --clients N     concurrent connections (default 8)\n"
    "  --duration S    measured seconds per system (default 10)\n"
    "  --warmup S      seconds run before measuring (default 2)\n"
    "  --tables T      tables (default 4)\n"
    "  --rows R        rows per table (default 10000)\n"
    "  --seed N        random seed of data and transactions (default 1)\n"
    "  --systems LIST  comma-separated, of: auralog, auralog-pages,\n"
    "                  sqlite-wal-full, sqlite-delete-full, sqlite-memory,\n"
    "                  auralog-nokey (default all)\n"
    "  --json          one JSON object on stdout instead of the table\n"
    "  --dir DIR       where the private cluster and SQLite files go (default\n"
    "                  $AURALOG_DIR/bench or ~/.auralog/bench: a real disk, not /tmp)\n"
    "  --base-port N   the private cluster's coordinator port (default 7600)\n"
    "  --reads MODE    the auralog engines' reads: durable (default: a reply waits\n"
    "                  until everything it saw is durable) or immediate\n"
    "\n"
    "What each figure means and how to read it honestly: bench/README.md.\n");
}

static int parse_int(const char *opt, const char *v, int lo, int hi)
{
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi)
    die("bench: %s must be a whole number from %d to %d, not '%s'", opt, lo, hi, v);
  return (int)n;
}

int bench_main(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "append") == 0)
    return bench_append_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "recovery") == 0)
    return bench_recovery_main(argc - 1, argv + 1);
  static struct option lo[] = {
    {"clients", required_argument, 0, 'c'}, {"duration", required_argument, 0, 'd'},
    {"warmup", required_argument, 0, 'w'}, {"tables", required_argument, 0, 't'},
    {"rows", required_argument, 0, 'r'}, {"seed", required_argument, 0, 's'},
    {"systems", required_argument, 0, 'S'}, {"json", no_argument, 0, 'j'},
    {"dir", required_argument, 0, 'D'}, {"base-port", required_argument, 0, 'p'},
    {"reads", required_argument, 0, 'R'}, {"help", no_argument, 0, 'h'}, {0}};
  static struct opts o;
  o = (struct opts){.wl = {WL_WRITE_ONLY, 4, 10000, 1}, .clients = 8, .duration = 10,
                    .warmup = 2, .sys = {1, 1, 1, 1, 1, 1}, .base = 7600, .reads = "durable"};
  int opt;
  while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (opt) {
    case 'c': o.clients = parse_int("--clients", optarg, 1, 256); break;
    case 'd': o.duration = parse_int("--duration", optarg, 1, 3600); break;
    case 'w': o.warmup = parse_int("--warmup", optarg, 0, 600); break;
    case 't': o.wl.tables = parse_int("--tables", optarg, 1, 64); break;
    case 'r': o.wl.rows = parse_int("--rows", optarg, 100, 10000000); break;
    case 's': {
      char *end;
      errno = 0;
      o.wl.seed = strtoull(optarg, &end, 10);
      if (errno || end == optarg || *end)
        die("bench: --seed must be a whole number, not '%s'", optarg);
      break;
    }
    case 'S': {
      memset(o.sys, 0, sizeof o.sys);
      char *list = strdup(optarg), *save = NULL;
      for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < NSYS && strcmp(sys_names[k], t))
          k++;
        if (k == NSYS)
          die("bench: unknown system '%s' (say auralog, auralog-pages, sqlite-wal-full, "
              "sqlite-delete-full, sqlite-memory or auralog-nokey)", t);
        o.sys[k] = 1;
      }
      free(list);
      break;
    }
    case 'j': o.json = 1; break;
    case 'R':
      if (strcmp(optarg, "durable") && strcmp(optarg, "immediate"))
        die("bench: --reads must be durable or immediate, not '%s'", optarg);
      o.reads = optarg;
      break;
    case 'D': snprintf(o.dir, sizeof o.dir, "%s", optarg); break;
    case 'p': o.base = parse_int("--base-port", optarg, 1024, 65000 - ENGINE_PORT_OFFSET - 2); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc) {
    int k = 0;
    while (k < WL_COUNT && strcmp(wl_names[k], argv[optind]))
      k++;
    if (k == WL_COUNT)
      die("bench: unknown workload '%s' (say write-only, insert, read-only, oltp, "
          "read-write, recovery or append)", argv[optind]);
    o.wl.kind = k;
    if (optind + 1 < argc)
      die("bench: unexpected argument '%s'", argv[optind + 1]);
  }
  int any = 0;
  for (int i = 0; i < NSYS; i++)
    any |= o.sys[i];
  if (!any)
    die("bench: --systems names no system");
  if (!o.dir[0])
    bench_dir(o.dir, sizeof o.dir, "bench");
  if (bench_mkdirs(o.dir) != 0)
    die("bench: cannot make %s: %s", o.dir, strerror(errno));
  /* The private cluster's directory is emptied first: never one that
   * holds something else. */
  struct stat sb;
  char p1[1100], p2[1200];
  snprintf(p1, sizeof p1, "%s/cluster", o.dir);
  snprintf(p2, sizeof p2, "%s/cluster.json", p1);
  char p3[1200];
  snprintf(p3, sizeof p3, "%s/cluster.key", p1);
  if (stat(p1, &sb) == 0 && stat(p2, &sb) != 0 && stat(p3, &sb) != 0)
    die("bench: %s exists and is not a cluster directory; choose another --dir", p1);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_int);
  signal(SIGTERM, on_int);

  /* One key for everything this run starts (the private cluster's, kept
   * in it), unless the caller brought one: the baselines' engines listen
   * like any member. */
  if (!getenv("AURALOG_KEY") || !*getenv("AURALOG_KEY")) {
    char kp[1200], kwhy[1300];
    snprintf(kp, sizeof kp, "%s/cluster", o.dir);
    if (bench_mkdirs(kp) != 0)
      die("bench: cannot make %s: %s", kp, strerror(errno));
    snprintf(kp, sizeof kp, "%s/cluster/cluster.key", o.dir);
    if (key_create(kp, kwhy, sizeof kwhy) != 0)
      die("bench: %s", kwhy);
    setenv("AURALOG_KEY", kp, 1);
  }
  cJSON *cond = cJSON_CreateObject();
  conditions(&o, cond);

  /* The machine's own limit, before anything of ours runs (limit.c). */
  fprintf(stderr, "measuring this machine's limit in %s/limit (3 x %.1f s)\n", o.dir,
          LIMIT_MS / 1000.0);
  if (bench_limit(o.dir, &lim) != 0)
    fprintf(stderr, "the machine's limit: not measured: %s\n", lim.err);

  /* The private cluster, for the auralog systems. */
  static struct sys ys[NSYS];
  char cdir[1100], why[300];
  snprintf(cdir, sizeof cdir, "%s/cluster", o.dir);
  int cluster = o.sys[0] || o.sys[1] || o.sys[SYS_NOKEY];
  if (cluster) {
    fprintf(stderr, "starting a private cluster in %s (ports %d..%d)\n", cdir, o.base,
            o.base + ENGINE_PORT_OFFSET + 1);
    if (bench_cluster_up(cdir, o.base, why, sizeof why) != 0)
      die("bench: %s", why);
    /* The cluster's own engine (volume main) would only add noise. */
    bench_stop(bench_member_pid(cdir, "engine"), 5000);
  }
  static struct result rs[NSYS];
  int failed = 0;
  for (int i = 0; i < NSYS && !interrupted; i++) {
    if (!o.sys[i])
      continue;
    if (i == SYS_NOKEY) {
      /* The same cluster again, fresh, with no key on any connection
       * (keyfile.h): what the key costs, in this run. */
      bench_cluster_down(cdir);
      setenv("AURALOG_AUTH", "off", 1);
      if (bench_cluster_up(cdir, o.base, why, sizeof why) != 0) {
        snprintf(rs[i].err, sizeof rs[i].err, "%s", why);
        rs[i].ran = 1;
        failed = 1;
        break;
      }
      bench_stop(bench_member_pid(cdir, "engine"), 5000);
    }
    ys[i].i = i;
    snprintf(ys[i].coord, sizeof ys[i].coord, "127.0.0.1:%d", o.base);
    snprintf(ys[i].cdir, sizeof ys[i].cdir, "%s", cdir);
    run_system(&o, &ys[i], &rs[i]);
    failed |= rs[i].err[0] != 0;
    if (rs[i].err[0])
      fprintf(stderr, "%s: %s\n", sys_names[i], rs[i].err);
    else
      fprintf(stderr, "%-18s %8.0f tx/s, p99 %.2f ms\n", sys_names[i], rs[i].tx_s,
              hist_ms(&rs[i].h, 0.99));
  }
  if (cluster)
    bench_cluster_down(cdir);
  unsetenv("AURALOG_AUTH");
  if (interrupted)
    die("bench: interrupted; the private cluster is stopped");

  if (o.json) {
    cJSON *out = cJSON_CreateObject();
    cJSON_AddItemToObject(out, "conditions", cond);
    limit_json(&lim, cJSON_AddObjectToObject(out, "limit"));
    cJSON *arr = cJSON_AddArrayToObject(out, "results");
    for (int i = 0; i < NSYS; i++)
      if (rs[i].ran)
        cJSON_AddItemToArray(arr, result_json(rs, i));
    char *s = cJSON_Print(out);
    puts(s);
    free(s);
    cJSON_Delete(out);
  } else {
    print_table(&o, rs, cond);
    cJSON_Delete(cond);
  }
  return failed ? 1 : 0;
}
