/*
 * bench.c: `auralog bench [WORKLOAD]`: the paper's throughput and network
 * figures (§6, Table 1) on one machine, beside honest baselines measured
 * in the same run.
 *
 * Seven systems run the same workload, one after the other, each from a
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
 *   auralog-backup      auralog again, on a cluster restarted with its
 *                       continuous backup on (`cluster up --backup dir`,
 *                       as a student's cluster runs; the others run
 *                       without): what backup costs the foreground, and
 *                       the object store's bytes per transaction
 * All seven run behind the same engine server (`auralog engine`, with
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
 *
 * Before the systems run, the machine's own limit on one commit is
 * measured on the same file system (limit.c): auralog's p50 is printed as
 * a multiple of it. The clients stamp their queries so that the engine
 * can time every commit's stages end to end (vfs/stages.h); the bench
 * reads those timings over the measured window and prints where a
 * commit's time goes (breakdown.c). report.c prints it all.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup/objstore.h"
#include "backup/restore.h"
#include "bench/bench.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "cli/status.h"

#include "bench/bench_int.h"

const char *const sys_names[NSYS] = {"auralog", "auralog-pages", "sqlite-wal-full",
                                     "sqlite-delete-full", "sqlite-memory", "auralog-nokey",
                                     "auralog-backup"};

/* Counters read before and after a run. */
struct snap {
  double redo_bytes, redo_msgs, records, net_bytes, net_msgs, syncs, disk_bytes;
  double node_fsyncs, gossip_bytes, gossip_msgs, node_commits, node_persist_us;
  double cpu_engine, cpu_nodes;
  double cpu_node[NCOPIES], cpu_coord, cpu_replica;   /* per role (bench_int.h) */
  double wait_engine, wait_nodes;   /* waiting for a CPU (s; -1: unknown) */
  double sys_engine, sys_nodes;     /* of cpu_engine and cpu_nodes, in the kernel */
};

/* The machine's limit on one commit, measured before the systems (limit.c). */
struct limit lim;

const char *const bench_node_ids[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};

/* Ctrl-C or SIGTERM: stop the run, then the private cluster. */
volatile sig_atomic_t bench_interrupted;
static void on_int(int sig)
{
  (void)sig;
  bench_interrupted = 1;
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
  struct hist sqlh;          /* ... of the SQL transactions, with --group */
  struct gc gc;              /* application group commit (group.c) */
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
  static _Thread_local struct hist h, rh, sqlh;
  memset(&h, 0, sizeof h);
  memset(&rh, 0, sizeof rh);
  memset(&sqlh, 0, sizeof sqlh);
  char *sql = malloc(WL_SQL_MAX), why[300];
  uint64_t s = run->o->wl.seed * 1000003 + (uint64_t)c->id * 7777 + 1;
  double last_recv = 0;      /* the previous reply's arrival (the engine's down hop) */
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
    int rc = 0;
    if (run->o->group > 1) {
      /* One logical transaction: submitted now, done when its group commits. */
      rc = gc_submit(&run->gc, &r, sql, &last_recv, measuring ? &sqlh : NULL, why, sizeof why);
    } else {
      Env *rep = bench_sql_timed(&r, sql, (uint64_t)t0, (uint64_t)last_recv, TX_TIMEOUT, why,
                                 sizeof why);
      last_recv = bench_now_us();
      rc = rep ? 0 : -1;
      wire_free(rep);
    }
    double us = bench_now_us() - t0;
    if (rc != 0) {
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
  hist_merge(&run->sqlh, &sqlh);
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
  sn->cpu_engine = bench_cpu_split(y->pid, &sn->sys_engine);
  sn->wait_engine = bench_cpu_wait_s(y->pid);
  if (y->volume == NULL)
    return 0;
  for (int k = 0; k < NCOPIES; k++) {
    pid_t np = bench_member_pid(y->cdir, bench_node_ids[k]);
    double sys;
    sn->cpu_node[k] = bench_cpu_split(np, &sys);
    sn->cpu_nodes += sn->cpu_node[k];
    sn->sys_nodes += sys;
    double w = bench_cpu_wait_s(np);
    sn->wait_nodes = sn->wait_nodes < 0 || w < 0 ? -1 : sn->wait_nodes + w;
  }
  sn->cpu_coord = bench_cpu_s(bench_member_pid(y->cdir, "coord"));
  sn->cpu_replica = bench_cpu_s(bench_member_pid(y->cdir, "R1"));
  Env *st = status_fetch(y->coord, y->volume, why, n);
  if (st == NULL)
    return -1;
  for (size_t k = 0; k < st->status->n_nodes; k++) {
    Auralog__NodeInfo *ni = st->status->nodes[k];
    sn->node_fsyncs += (double)ni->fsyncs;
    sn->node_commits += (double)ni->commits;
    sn->node_persist_us += (double)ni->persist_us;
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

/* auralog-backup's own figures, once its run is over: the object store's
 * bytes per transaction, and how far behind the VDL the backup point of
 * the slowest PG was then (after a second for the last pass). */
static int sum_size(void *arg, const char *key, uint64_t size)
{
  (void)key;
  *(uint64_t *)arg += size;
  return 0;
}

/* The object store's bytes once every PG's backup reaches the VDL (or
 * after BK_SETTLE_S): taken when the load is over, so that the bytes per
 * transaction are the transactions' own. The load's objects would
 * otherwise be counted against them: 40,000 rows staged, divided by a
 * short run's transactions, add hundreds of bytes to each. -1: unknown. */
#define BK_SETTLE_S 10
static double store_settled(const struct sys *y)
{
  char url[1200], why[400];
  snprintf(url, sizeof url, "%s/backup", y->cdir);
  struct objstore *st = obj_open(url, why, sizeof why);
  if (st == NULL)
    return -1;
  double until = bench_now_us() + BK_SETTLE_S * 1e6;
  for (;;) {
    Env *e = status_fetch(y->coord, y->volume, why, sizeof why);
    uint64_t lo, hi = 0, vdl = 0;
    uint32_t npgs;
    if (e && e->status->volume && e->status->engine) {
      vdl = e->status->engine->vdl;
      if (restore_window(st, e->status->volume->id, &lo, &hi, &npgs, why, sizeof why) != 0)
        hi = 0;
    }
    wire_free(e);
    if ((vdl && hi >= vdl) || bench_now_us() > until)
      break;
    usleep(100000);
  }
  uint64_t bytes = 0;
  int rc = obj_list(st, "", sum_size, &bytes, why, sizeof why);
  obj_close(st);
  return rc == 0 ? (double)bytes : -1;
}

static void backup_figures(const char *cdir, const struct sys *y, struct result *res)
{
  char url[1200], why[400];
  snprintf(url, sizeof url, "%s/backup", cdir);
  res->backup_lag = -1;
  struct objstore *st = obj_open(url, why, sizeof why);
  if (st == NULL)
    return;
  uint64_t bytes = 0;
  if (obj_list(st, "", sum_size, &bytes, why, sizeof why) == 0 && res->tx_all)
    res->backup_bytes = ((double)bytes - (res->bk_store_load > 0 ? res->bk_store_load : 0)) /
                        (double)res->tx_all;
  Env *e = status_fetch(y->coord, y->volume, why, sizeof why);
  if (e && e->status->volume && e->status->engine) {
    uint64_t lo, hi;
    uint32_t npgs;
    if (restore_window(st, e->status->volume->id, &lo, &hi, &npgs, why, sizeof why) == 0)
      res->backup_lag = e->status->engine->vdl > hi ? (double)(e->status->engine->vdl - hi) : 0;
  }
  wire_free(e);
  obj_close(st);
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
    snprintf(why, sizeof why, "its engine did not start; see %.250s", y->log);
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
   * fsyncs; then let the load's last counts reach the coordinator (a
   * SQLite baseline has no nodes: its counters are its engine's). */
  sync();
  if (ON_CLUSTER(y->i))
    usleep(2 * HEARTBEAT_MS * 1000);
  if (y->i == SYS_BACKUP)
    res->bk_store_load = store_settled(y);
  struct snap s0, s1;
  if (snapshot(y, &r, &s0, why, sizeof why) != 0)
    goto fail;

  static struct run run;
  memset(&run, 0, sizeof run);
  static struct breakdown b0;
  memset(&b0, 0, sizeof b0);
  snprintf(b0.err, sizeof b0.err, "the window never opened");
  run.o = o;
  run.addr = y->addr;
  pthread_mutex_init(&run.mu, NULL);
  gc_init(&run.gc, o->group, o->group_ms);
  struct client *cs = calloc((size_t)o->clients, sizeof *cs);
  for (int i = 0; i < o->clients; i++) {
    cs[i] = (struct client){&run, i, 0};
    pthread_create(&cs[i].th, NULL, client_main, &cs[i]);
  }
  double start = bench_now_us(), mstart = start, last = start;
  struct prof pf = {0};
  uint64_t lasttx = 0;
  for (;;) {
    usleep(100000);
    double now = bench_now_us(), t = (now - start) / 1e6;
    if (run.phase == 0 && t >= o->warmup) {
      run.phase = 1;
      mstart = now;
      if (o->profile && ON_CLUSTER(y->i))
        prof_start(&pf, o->profile, sys_names[y->i], y->pid, bench_member_pid(y->cdir, "A1"));
      /* The engine's stage timings from here on (breakdown.c). */
      if (ON_CLUSTER(y->i) && breakdown_fetch(&r, &b0, b0.err, sizeof b0.err) != 0)
        b0.ok = 0;
    }
    if (t >= o->warmup + o->duration || bench_interrupted)
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
  prof_stop(&pf);
  if (ON_CLUSTER(y->i)) {
    if (b0.ok && breakdown_fetch(&r, &res->bd, res->bd.err, sizeof res->bd.err) == 0)
      breakdown_window(&res->bd, &b0);
    else if (!res->bd.err[0])
      snprintf(res->bd.err, sizeof res->bd.err, "%s", b0.err);
  }
  for (int i = 0; i < o->clients; i++)
    pthread_join(cs[i].th, NULL);
  free(cs);
  if (isatty(2))
    fprintf(stderr, "\r\033[K");
  if (ON_CLUSTER(y->i))
    usleep(2 * HEARTBEAT_MS * 1000);
  if (snapshot(y, &r, &s1, why, sizeof why) != 0)
    goto fail;

  double secs = (mend - mstart) / 1e6;
  res->h = run.h;
  res->rh = run.rh;
  res->sqlh = o->group > 1 ? run.sqlh : run.h;
  res->mean_group = run.gc.sql_tx ? (double)run.gc.logical / (double)run.gc.sql_tx : 1;
  gc_free(&run.gc);
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
  res->bd.node_commits = s1.node_commits - s0.node_commits;
  res->bd.node_persist_us = s1.node_persist_us - s0.node_persist_us;
  res->disk_bytes = (s1.disk_bytes - s0.disk_bytes) / tx;
  res->cpu_engine_ms = (s1.cpu_engine - s0.cpu_engine) * 1000 / tx;
  res->cpu_nodes_ms = (s1.cpu_nodes - s0.cpu_nodes) * 1000 / tx;
  res->sys_engine_ms = (s1.sys_engine - s0.sys_engine) * 1000 / tx;
  res->sys_nodes_ms = (s1.sys_nodes - s0.sys_nodes) * 1000 / tx;
  for (int k = 0; k < NCOPIES; k++)
    res->cpu_node_ms[k] = (s1.cpu_node[k] - s0.cpu_node[k]) * 1000 / tx;
  res->cpu_coord_ms = (s1.cpu_coord - s0.cpu_coord) * 1000 / tx;
  res->wait_engine_ms = s0.wait_engine < 0 || s1.wait_engine < 0 ? -1
                      : fmax(0, s1.wait_engine - s0.wait_engine) * 1000 / tx;
  res->wait_nodes_ms = !ON_CLUSTER(y->i) ? 0
                     : s0.wait_nodes < 0 || s1.wait_nodes < 0 ? -1
                     : fmax(0, s1.wait_nodes - s0.wait_nodes) * 1000 / tx;
  res->cpu_replica_ms = (s1.cpu_replica - s0.cpu_replica) * 1000 / tx;
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

/* A fresh private cluster in cdir for the cluster systems (anything there
 * before is removed, the keys kept), backing up into cdir/backup if
 * backup, with its own engine (volume main) stopped: it would only add
 * noise. 0, or -1 and why. */
int bench_fresh_cluster(const char *cdir, int base, int backup, char *why, size_t n)
{
  static const char *const bk[] = {"--backup", "dir", NULL};
  if (bench_cluster_up_with(cdir, base, backup ? bk : NULL, why, n) != 0)
    return -1;
  bench_stop(bench_member_pid(cdir, "engine"), 5000);
  return 0;
}

/* Cluster system i of o on the cluster in cdir (bench_fresh_cluster):
 * its engine started, the workload loaded and run, and for auralog-backup
 * the backup's lag over the run, two restores (bklag.c) and the store's
 * bytes per transaction. */
void bench_system(const struct opts *o, int i, const char *cdir, struct result *res)
{
  static struct sys y;
  memset(&y, 0, sizeof y);
  y.i = i;
  snprintf(y.coord, sizeof y.coord, "127.0.0.1:%d", o->base);
  snprintf(y.cdir, sizeof y.cdir, "%s", cdir);
  struct bklag *lag = NULL;
  char bkurl[1200];
  snprintf(bkurl, sizeof bkurl, "%s/backup", cdir);
  if (i == SYS_BACKUP)
    lag = bklag_start(y.coord, "bench", bkurl);   /* run_system's volume */
  run_system(o, &y, res);
  if (lag)
    bklag_stop(lag, cdir, o->duration, res);
  if (i == SYS_BACKUP && !res->err[0])
    backup_figures(cdir, &y, res);
}

/* ---- the command -------------------------------------------------------------------- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench [WORKLOAD] [--clients N] [--duration S] [--warmup S]\n"
    "                     [--tables T] [--rows R] [--seed N] [--systems LIST]\n"
    "                     [--json] [--dir DIR] [--base-port PORT] [--reads MODE]\n"
    "                     [--group N [--group-timeout MS]] [--no-limit] [--no-note]\n"
    "       auralog bench recovery --help\n"
    "       auralog bench append --help\n"
    "       auralog bench replicas --help\n"
    "       auralog bench repair --help\n"
    "       auralog bench backup --help\n"
    "       auralog bench binlog --help\n"
    "\n"
    "Run a sysbench-shaped workload on auralog and on stock SQLite baselines,\n"
    "one after the other on this machine, and print throughput, commit latency\n"
    "(p50 p95 p99 max), network bytes and messages, fsyncs and CPU per\n"
    "transaction, every ratio between the systems, and the run's conditions;\n"
    "beside them the machine's own limit on a commit (fdatasync, a 4-of-6 flush\n"
    "round, loopback round trip, measured first on the same disk) with auralog's\n"
    "p50 as a multiple of it, and where one auralog commit's time goes, stage\n"
    "by stage, from the engine's timestamps.\n"
    "It starts a private cluster (and stops it); your own cluster's volume is\n"
    "untouched, and its journal gets the results (--no-note: not).\n"
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
    "                  auralog-nokey, auralog-backup (default all)\n"
    "  --json          one JSON object on stdout instead of the table\n"
    "  --dir DIR       where the private cluster and SQLite files go (default\n"
    "                  $AURALOG_DIR/bench or ~/.auralog/bench: a real disk, not /tmp)\n"
    "  --base-port N   the private cluster's coordinator port (default 7600; 200\n"
    "                  above your cluster's coordinator port if it is not 7400)\n"
    "  --reads MODE    the auralog engines' reads: durable (default: a reply waits\n"
    "                  until everything it saw is durable) or immediate\n"
    "  --group N       application group commit in the clients (default 1: off):\n"
    "                  a leader runs the operations of up to N concurrent logical\n"
    "                  transactions in one SQL transaction, its followers wait\n"
    "                  for its commit; tx/s and latency count logical ones, from\n"
    "                  submission to their group's commit\n"
    "  --group-timeout MS  a leader waits at most this long for followers\n"
    "                  (default 5)\n"
    "  --no-limit      do not measure the machine's limit first (saves 3 s)\n"
    "  --no-note       do not note the results in your cluster's journal (by\n"
    "                  default each system's result and the conditions go to\n"
    "                  the coordinator of the cluster in $AURALOG_DIR or\n"
    "                  ~/.auralog, if one runs: lab 10 reads them there)\n"
    "  --profile DIR   where CPU goes: perf samples the engine and node A1 of each\n"
    "                  cluster system over its measured window, into\n"
    "                  DIR/SYSTEM-ROLE.perf.data, with the top of perf report in\n"
    "                  DIR/SYSTEM-ROLE.txt (needs perf: Debian's linux-perf;\n"
    "                  sampling costs a few percent: quote unprofiled runs)\n"
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
  if (argc >= 2 && strcmp(argv[1], "replicas") == 0)
    return bench_replicas_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "repair") == 0)
    return bench_repair_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "backup") == 0)
    return bench_backup_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "binlog") == 0)
    return bench_binlog_main(argc - 1, argv + 1);
  static struct option lo[] = {
    {"clients", required_argument, 0, 'c'}, {"duration", required_argument, 0, 'd'},
    {"warmup", required_argument, 0, 'w'}, {"tables", required_argument, 0, 't'},
    {"rows", required_argument, 0, 'r'}, {"seed", required_argument, 0, 's'},
    {"systems", required_argument, 0, 'S'}, {"json", no_argument, 0, 'j'},
    {"dir", required_argument, 0, 'D'}, {"base-port", required_argument, 0, 'p'},
    {"reads", required_argument, 0, 'R'}, {"help", no_argument, 0, 'h'},
    {"group", required_argument, 0, 'g'}, {"group-timeout", required_argument, 0, 'G'},
    {"no-limit", no_argument, 0, 'L'}, {"no-note", no_argument, 0, 'N'},
    {"profile", required_argument, 0, 'P'}, {0}};
  static struct opts o;
  o = (struct opts){.wl = {WL_WRITE_ONLY, 4, 10000, 1}, .clients = 8, .duration = 10,
                    .warmup = 2, .sys = {1, 1, 1, 1, 1, 1, 1}, .base = bench_base_default(7600),
                    .reads = "durable",
                    .group = 1, .group_ms = 5};
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
              "sqlite-delete-full, sqlite-memory, auralog-nokey or auralog-backup)", t);
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
    case 'g': o.group = parse_int("--group", optarg, 1, 256); break;
    case 'G': o.group_ms = parse_int("--group-timeout", optarg, 0, 10000); break;
    case 'L': o.no_limit = 1; break;
    case 'N': o.no_note = 1; break;
    case 'P': o.profile = optarg; break;
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
          "read-write, recovery, append, replicas, repair, backup or binlog)", argv[optind]);
    o.wl.kind = k;
    if (optind + 1 < argc)
      die("bench: unexpected argument '%s'", argv[optind + 1]);
  }
  int any = 0;
  for (int i = 0; i < NSYS; i++)
    any |= o.sys[i];
  if (!any)
    die("bench: --systems names no system");
  if (o.profile) {
    char pwhy[300];
    if (strchr(o.profile, '\''))
      die("bench: --profile: the directory name may not hold a quote: %s", o.profile);
    if (prof_check(o.profile, pwhy, sizeof pwhy) != 0)
      die("bench: %s", pwhy);
  }
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
  static char caller_key[1200];          /* the user's cluster's key, if the caller named one */
  snprintf(caller_key, sizeof caller_key, "%s", getenv("AURALOG_KEY") ? getenv("AURALOG_KEY") : "");
  if (!caller_key[0]) {
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
  report_conditions(&o, cond);

  /* The machine's own limit, before anything of ours runs (limit.c). */
  if (o.no_limit) {
    snprintf(lim.err, sizeof lim.err, "not measured (--no-limit)");
  } else {
    fprintf(stderr, "measuring this machine's limit in %s/limit (3 x %.1f s)\n", o.dir,
            LIMIT_MS / 1000.0);
    if (bench_limit(o.dir, &lim) != 0)
      fprintf(stderr, "the machine's limit: not measured: %s\n", lim.err);
  }

  /* The private cluster, for the auralog systems. */
  char cdir[1100], why[300];
  snprintf(cdir, sizeof cdir, "%s/cluster", o.dir);
  int cluster = o.sys[0] || o.sys[1] || o.sys[SYS_NOKEY] || o.sys[SYS_BACKUP];
  if (cluster) {
    fprintf(stderr, "starting a private cluster in %s (ports %d..%d)\n", cdir, o.base,
            o.base + ENGINE_PORT_OFFSET + 1);
    if (bench_fresh_cluster(cdir, o.base, 0, why, sizeof why) != 0)
      die("bench: %s", why);
  }
  static struct result rs[NSYS];
  int failed = 0;
  for (int i = 0; i < NSYS && !bench_interrupted; i++) {
    if (!o.sys[i])
      continue;
    /* auralog-nokey: the same cluster again, fresh, with no key on any
     * connection (keyfile.h): what the key costs, in this run.
     * auralog-backup: fresh again, key on, backing up into its directory
     * as `cluster up` does by default. */
    if (i == SYS_NOKEY)
      setenv("AURALOG_AUTH", "off", 1);
    if (i == SYS_BACKUP)
      unsetenv("AURALOG_AUTH");
    if ((i == SYS_NOKEY || i == SYS_BACKUP) &&
        bench_fresh_cluster(cdir, o.base, i == SYS_BACKUP, why, sizeof why) != 0) {
      snprintf(rs[i].err, sizeof rs[i].err, "%s", why);
      rs[i].ran = 1;
      failed = 1;
      break;
    }
    bench_system(&o, i, cdir, &rs[i]);
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
  if (bench_interrupted)
    die("bench: interrupted; the private cluster is stopped");
  if (!o.no_note)
    bench_note(&o, rs, cond, caller_key[0] ? caller_key : NULL);

  if (o.json) {
    cJSON *out = cJSON_CreateObject();
    cJSON_AddItemToObject(out, "conditions", cond);
    limit_json(&lim, cJSON_AddObjectToObject(out, "limit"));
    cJSON *arr = cJSON_AddArrayToObject(out, "results");
    for (int i = 0; i < NSYS; i++)
      if (rs[i].ran)
        cJSON_AddItemToArray(arr, report_json(rs, i));
    char *s = cJSON_Print(out);
    puts(s);
    free(s);
    cJSON_Delete(out);
  } else {
    report_table(&o, rs, cond);
    cJSON_Delete(cond);
  }
  return failed ? 1 : 0;
}
