/*
 * replicas.c: `auralog bench replicas`: what read replicas (paper §4.2.4)
 * cost and give, on this machine, in three parts:
 *
 *   lag    the write-only workload on the writer at 1, 8 and 32 clients
 *          (--lag-clients) with one replica following it; its lag
 *          p50/p99/max, from the writer's histogram (vfs/feed.c): per
 *          ack that applied a new VDL, the time from the writer sending
 *          the oldest feed of that batch to the ack coming back, on the
 *          writer's clock. It includes the feed's trip, the replica's
 *          apply (and any wait for its readers: none here) and the ack's
 *          trip back, so it is above the one-way lag by one loopback
 *          trip; that trip (the machine's limit, limit.c) is printed
 *          beside it. The paper says "typically 20 ms or less".
 *   reads  the read-only workload, --read-clients clients spread evenly
 *          over the writer and 0, 1, 2 replicas: throughput and latency,
 *          and each process's CPU. Every process shares this machine's
 *          cores: a replica adds readers' CPU only where cores are idle,
 *          which the cores count and the CPU columns show.
 *   hold   storage growth under a long reader (seed 004): the write-only
 *          workload at --hold-clients clients; first --base seconds with
 *          no reader (node GC follows the PGMRPL: the baseline), then a
 *          read transaction held open on a replica started with
 *          --max-read-age 0 for --hold seconds (60 by default; the
 *          PGMRPL and every segment's GC stop at its read point), then
 *          released; sampled every second from the status (the
 *          segments' records, page versions and bytes, summed over all
 *          six copies of every PG; the lowest GC point; the PGMRPL).
 *          Reports the growth over the hold and per second against the
 *          baseline's, the writer's throughput in both, and how soon GC
 *          resumes after the release and what it gives back.
 *
 * Every part runs on a private cluster (its own directory and ports, no
 * replica of `cluster up`'s), with the engine and replicas started here
 * on volume bench, loaded once (sysbench's tables, workload.c). The
 * conditions (machine, load average, versions) and the machine's limit
 * are printed with the figures (seed 001).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "param.h"
#include "cli/status.h"

#define MAXEP 3                  /* the writer and two replicas */
#define MAXLAG 8                 /* client counts of the lag part */

static struct {
  struct workload wl;
  int lag_clients[MAXLAG], nlag;
  int read_clients, hold_clients, duration, warmup, hold, base_s;
  int parts;                     /* 1 lag, 2 reads, 4 hold */
  int json, base;
  char dir[1024], cdir[1100], coord[64];
  char ep[MAXEP + 1][64];        /* writer, R1, R2; [MAXEP]: the held replica */
  pid_t pid[MAXEP + 1];
} B;

static volatile sig_atomic_t interrupted;
static void on_int(int sig)
{
  (void)sig;
  interrupted = 1;
}

/* ---- clients ---------------------------------------------------------------- */

struct load {
  _Atomic int phase;             /* 0 warm-up, 1 measuring, 2 stop */
  _Atomic uint64_t tx, measured[MAXEP], errors;
  int nep;                       /* clients go to ep[0..nep) in turn */
  pthread_mutex_t mu;
  struct hist h;
  char err[300];
};

struct cl {
  struct load *ld;
  int id;
  pthread_t th;
};

static void *client_main(void *arg)
{
  struct cl *c = arg;
  struct load *ld = c->ld;
  int ep = c->id % ld->nep;
  struct hist h;
  memset(&h, 0, sizeof h);
  char *sql = malloc(WL_SQL_MAX), why[300];
  uint64_t s = B.wl.seed * 1000003 + (uint64_t)c->id * 7777 + 1;
  struct rpc r;
  if (bench_connect(&r, B.ep[ep], 5000, why, sizeof why) != 0) {
    ld->errors++;
    free(sql);
    return NULL;
  }
  while (ld->phase < 2) {
    wl_tx(&B.wl, &s, sql);
    int measuring = ld->phase == 1;
    double t0 = bench_now_us();
    Env *rep = bench_sql(&r, sql, 30000, why, sizeof why);
    double us = bench_now_us() - t0;
    if (rep == NULL) {
      ld->errors++;
      pthread_mutex_lock(&ld->mu);
      if (!ld->err[0])
        snprintf(ld->err, sizeof ld->err, "%.60s: %.230s", B.ep[ep], why);
      pthread_mutex_unlock(&ld->mu);
      if (r.fd < 0) {
        rpc_close(&r);
        if (bench_connect(&r, B.ep[ep], 2000, why, sizeof why) != 0)
          break;
      }
      continue;
    }
    wire_free(rep);
    ld->tx++;
    if (measuring && ld->phase == 1) {
      ld->measured[ep]++;
      hist_add(&h, us);
    }
  }
  rpc_close(&r);
  pthread_mutex_lock(&ld->mu);
  hist_merge(&ld->h, &h);
  pthread_mutex_unlock(&ld->mu);
  free(sql);
  return NULL;
}

static struct cl *load_start(struct load *ld, int kind, int clients, int nep)
{
  memset(ld, 0, sizeof *ld);
  pthread_mutex_init(&ld->mu, NULL);
  ld->nep = nep;
  B.wl.kind = kind;
  struct cl *cs = calloc((size_t)clients, sizeof *cs);
  for (int i = 0; i < clients; i++) {
    cs[i] = (struct cl){ld, i, 0};
    pthread_create(&cs[i].th, NULL, client_main, &cs[i]);
  }
  return cs;
}

static void load_stop(struct load *ld, struct cl *cs, int clients)
{
  ld->phase = 2;
  for (int i = 0; i < clients; i++)
    pthread_join(cs[i].th, NULL);
  free(cs);
}

static void sleep_s(double s)
{
  double end = bench_now_us() + s * 1e6;
  while (!interrupted && bench_now_us() < end)
    usleep(50000);
}

/* ---- the cluster, the engine and replicas --------------------------------- */

static const char *start_engine(char *why, size_t n)
{
  static char log[1200];
  snprintf(B.ep[0], sizeof B.ep[0], "127.0.0.1:%d", B.base + ENGINE_PORT_OFFSET + 1);
  snprintf(log, sizeof log, "%s/engine.log", B.dir);
  const char *argv[] = {"engine", "--volume", "bench", "--listen", B.ep[0], "--coord", B.coord,
                        NULL};
  B.pid[0] = bench_start(log, argv);
  struct rpc r;
  if (B.pid[0] < 0 || bench_connect(&r, B.ep[0], 30000, why, n) != 0) {
    snprintf(why, n, "the engine did not start; see %.200s", log);
    return NULL;
  }
  rpc_close(&r);
  return B.ep[0];
}

/* Replica k (1, 2; MAXEP: the held one) with extra arguments; wait until
 * it serves the loaded tables. */
static int start_replica(int k, const char *max_age, char *why, size_t n)
{
  char log[1200];
  snprintf(B.ep[k], sizeof B.ep[k], "127.0.0.1:%d", B.base + REPLICA_PORT_OFFSET + k);
  snprintf(log, sizeof log, "%s/replica%d.log", B.dir, k);
  const char *argv[] = {"replica", "--volume", "bench", "--listen", B.ep[k], "--engine",
                        B.ep[0], "--coord", B.coord, "--max-read-age", max_age, NULL};
  B.pid[k] = bench_start(log, argv);
  struct rpc r;
  if (B.pid[k] < 0 || bench_connect(&r, B.ep[k], 30000, why, n) != 0) {
    snprintf(why, n, "replica %d did not start; see %.200s", k, log);
    return -1;
  }
  for (int i = 0; i < 300 && !interrupted; i++) {
    Env *rep = bench_sql(&r, "SELECT count(*) FROM sbtest1", 5000, why, n);
    if (rep) {
      wire_free(rep);
      rpc_close(&r);
      return 0;
    }
    usleep(100000);
  }
  rpc_close(&r);
  snprintf(why, n, "replica %d never served the tables; see %.200s", k, log);
  return -1;
}

static void stop_replica(int k)
{
  if (B.pid[k] > 0)
    bench_stop(B.pid[k], 5000);
  B.pid[k] = 0;
}

/* The writer's replica lag histogram (auralog_stats, feed.c). */
static int lag_hist(struct hist *h, char *why, size_t n)
{
  struct rpc r;
  if (bench_connect(&r, B.ep[0], 5000, why, n) != 0)
    return -1;
  Env *rep = bench_sql(&r, "SELECT auralog_stats()", 10000, why, n);
  rpc_close(&r);
  if (rep == NULL)
    return -1;
  cJSON *o = cJSON_Parse(rep->rows->rows[0]->values[0]->text);
  wire_free(rep);
  int rc = hist_from_json(h, cJSON_GetObjectItem(o, "replica_lag"));
  cJSON_Delete(o);
  if (rc != 0)
    snprintf(why, n, "the engine reports no replica_lag");
  return rc;
}

/* ---- lag ---------------------------------------------------------------------- */

static cJSON *part_lag(const struct limit *lim)
{
  cJSON *out = cJSON_CreateArray();
  char why[300];
  if (start_replica(1, "5000", why, sizeof why) != 0) {
    fprintf(stderr, "lag: %s\n", why);
    return out;
  }
  if (!B.json)
    printf("\nreplica lag, write-only workload on the writer, one replica (R1)\n"
           "  measured on the writer's clock: feed sent -> applied by the replica -> its ack "
           "back\n  (one sample per ack: the oldest new VDL the ack's batch applied); the "
           "ack's return trip is in it\n  (a loopback round trip here: p50 %.3f ms)\n"
           "  clients     tx/s   commit p50/p99 ms     lag p50    p99    max ms   samples\n",
           hist_ms(&lim->rtt, .5));
  for (int i = 0; i < B.nlag && !interrupted; i++) {
    int clients = B.lag_clients[i];
    struct load ld;
    struct cl *cs = load_start(&ld, WL_WRITE_ONLY, clients, 1);
    sleep_s(B.warmup);
    struct hist h0, h1;
    int ok = lag_hist(&h0, why, sizeof why) == 0;
    ld.phase = 1;
    double t0 = bench_now_us();
    sleep_s(B.duration);
    double secs = (bench_now_us() - t0) / 1e6;
    ok = ok && lag_hist(&h1, why, sizeof why) == 0;
    load_stop(&ld, cs, clients);
    if (ok)
      hist_sub(&h1, &h0);
    else
      memset(&h1, 0, sizeof h1);
    double txs = (double)ld.measured[0] / secs;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "clients", clients);
    cJSON_AddNumberToObject(j, "tx_s", txs);
    cJSON_AddNumberToObject(j, "commit_p50_ms", hist_ms(&ld.h, .5));
    cJSON_AddNumberToObject(j, "commit_p99_ms", hist_ms(&ld.h, .99));
    cJSON_AddNumberToObject(j, "lag_p50_ms", hist_ms(&h1, .5));
    cJSON_AddNumberToObject(j, "lag_p99_ms", hist_ms(&h1, .99));
    cJSON_AddNumberToObject(j, "lag_max_ms", hist_window_max_ms(&h1));
    cJSON_AddNumberToObject(j, "lag_samples", (double)h1.n);
    cJSON_AddNumberToObject(j, "errors", (double)ld.errors);
    if (!ok)
      cJSON_AddStringToObject(j, "error", why);
    cJSON_AddItemToArray(out, j);
    if (!B.json)
      printf("  %7d %8.0f   %8.2f %8.2f   %8.2f %6.2f %8.2f   %7llu%s%s\n", clients, txs,
             hist_ms(&ld.h, .5), hist_ms(&ld.h, .99), hist_ms(&h1, .5), hist_ms(&h1, .99),
             hist_window_max_ms(&h1), (unsigned long long)h1.n, ok ? "" : "  ",
             ok ? "" : why);
    if (ld.errors)
      fprintf(stderr, "lag: %llu failed transactions; the first: %s\n",
              (unsigned long long)ld.errors, ld.err);
  }
  return out;
}

/* ---- reads --------------------------------------------------------------------- */

static cJSON *part_reads(void)
{
  cJSON *out = cJSON_CreateArray();
  char why[300];
  if (!B.json)
    printf("\nread-only workload, %d clients spread evenly over the writer and N replicas\n"
           "  (every process on this machine's %ld cores; CPU: seconds used per second of "
           "the window)\n  replicas     tx/s    p50 ms   p99 ms   tx/s per endpoint        "
           "CPU writer  replicas  nodes\n", B.read_clients, sysconf(_SC_NPROCESSORS_ONLN));
  for (int nrep = 0; nrep <= 2 && !interrupted; nrep++) {
    if (nrep > 0 && B.pid[nrep] <= 0 && start_replica(nrep, "5000", why, sizeof why) != 0) {
      fprintf(stderr, "reads: %s\n", why);
      break;
    }
    struct load ld;
    struct cl *cs = load_start(&ld, WL_READ_ONLY, B.read_clients, nrep + 1);
    sleep_s(B.warmup);
    static const char *nodes[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};
    double cpu0[MAXEP] = {0}, cpun0 = 0, cpu1[MAXEP] = {0}, cpun1 = 0;
    for (int k = 0; k <= nrep; k++)
      cpu0[k] = bench_cpu_s(B.pid[k]);
    for (int k = 0; k < NCOPIES; k++)
      cpun0 += bench_cpu_s(bench_member_pid(B.cdir, nodes[k]));
    ld.phase = 1;
    double t0 = bench_now_us();
    sleep_s(B.duration);
    double secs = (bench_now_us() - t0) / 1e6;
    for (int k = 0; k <= nrep; k++)
      cpu1[k] = bench_cpu_s(B.pid[k]);
    for (int k = 0; k < NCOPIES; k++)
      cpun1 += bench_cpu_s(bench_member_pid(B.cdir, nodes[k]));
    load_stop(&ld, cs, B.read_clients);
    uint64_t all = 0;
    double rcpu = 0;
    char per[128] = "";
    size_t pl = 0;
    cJSON *j = cJSON_CreateObject(), *pe = cJSON_CreateArray();
    for (int k = 0; k <= nrep; k++) {
      all += ld.measured[k];
      pl += (size_t)snprintf(per + pl, sizeof per - pl, "%s%.0f", k ? " / " : "",
                             (double)ld.measured[k] / secs);
      cJSON_AddItemToArray(pe, cJSON_CreateNumber((double)ld.measured[k] / secs));
      if (k)
        rcpu += cpu1[k] - cpu0[k];
    }
    cJSON_AddNumberToObject(j, "replicas", nrep);
    cJSON_AddNumberToObject(j, "clients", B.read_clients);
    cJSON_AddNumberToObject(j, "tx_s", (double)all / secs);
    cJSON_AddNumberToObject(j, "p50_ms", hist_ms(&ld.h, .5));
    cJSON_AddNumberToObject(j, "p99_ms", hist_ms(&ld.h, .99));
    cJSON_AddItemToObject(j, "tx_s_per_endpoint", pe);
    cJSON_AddNumberToObject(j, "cpu_writer", (cpu1[0] - cpu0[0]) / secs);
    cJSON_AddNumberToObject(j, "cpu_replicas", rcpu / secs);
    cJSON_AddNumberToObject(j, "cpu_nodes", (cpun1 - cpun0) / secs);
    cJSON_AddNumberToObject(j, "errors", (double)ld.errors);
    cJSON_AddItemToArray(out, j);
    if (!B.json)
      printf("  %8d %8.0f  %8.2f %8.2f   %-24s %6.2f %9.2f %6.2f\n", nrep,
             (double)all / secs, hist_ms(&ld.h, .5), hist_ms(&ld.h, .99), per,
             (cpu1[0] - cpu0[0]) / secs, rcpu / secs, (cpun1 - cpun0) / secs);
    if (ld.errors)
      fprintf(stderr, "reads: %llu failed transactions; the first: %s\n",
              (unsigned long long)ld.errors, ld.err);
  }
  return out;
}

/* A process's resident memory in MiB (0 if unknown): the held replica
 * buffers the writer's stream while its read point waits. */
static double rss_mib(pid_t pid)
{
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
  FILE *f = fopen(p, "r");
  double kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %lf", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb / 1024;
}

/* ---- hold ----------------------------------------------------------------------- */

struct tot {
  double recs, vers, bytes, min_gc, pgmrpl, vdl, lag_lsn;
};

/* The segments' totals (all six copies of every PG) and the points. */
static int totals(struct tot *t, char *why, size_t n)
{
  memset(t, 0, sizeof *t);
  Env *st = status_fetch(B.coord, "bench", why, n);
  if (st == NULL)
    return -1;
  const Auralog__Status *s = st->status;
  t->min_gc = -1;
  for (size_t k = 0; k < s->n_segs; k++) {
    t->recs += (double)s->segs[k]->records;
    t->vers += (double)s->segs[k]->images;
    t->bytes += (double)s->segs[k]->bytes;
    /* A segment that holds no record has nothing to free (an empty PG
     * stays at GC point 0): only the others say where GC is. */
    if (s->segs[k]->records && (t->min_gc < 0 || (double)s->segs[k]->gc_lsn < t->min_gc))
      t->min_gc = (double)s->segs[k]->gc_lsn;
  }
  if (t->min_gc < 0)
    t->min_gc = 0;
  if (s->engine) {
    t->pgmrpl = (double)s->engine->pgmrpl;
    t->vdl = (double)s->engine->vdl;
    for (size_t k = 0; k < s->engine->n_replicas; k++)
      if (s->engine->replicas[k]->lag_lsn > t->lag_lsn)
        t->lag_lsn = (double)s->engine->replicas[k]->lag_lsn;
  }
  wire_free(st);
  return 0;
}

static cJSON *part_hold(void)
{
  cJSON *out = cJSON_CreateObject();
  char why[300], o[64];
  /* No read-age limit on this one: the reader holds as long as we say. */
  if (start_replica(MAXEP, "0", why, sizeof why) != 0) {
    cJSON_AddStringToObject(out, "error", why);
    fprintf(stderr, "hold: %s\n", why);
    return out;
  }
  struct load ld;
  struct cl *cs = load_start(&ld, WL_WRITE_ONLY, B.hold_clients, 1);
  sleep_s(B.warmup);
  ld.phase = 1;
  struct tot a, b, c, d;
  if (totals(&a, why, sizeof why) != 0)
    goto fail;
  uint64_t tx0 = ld.measured[0];
  double t0 = bench_now_us();
  fprintf(stderr, "hold: %d s of the write-only workload without a reader (baseline)\n",
          B.base_s ? B.base_s : B.hold);
  sleep_s(B.base_s ? B.base_s : B.hold);
  if (totals(&b, why, sizeof why) != 0)
    goto fail;
  double base_secs = (bench_now_us() - t0) / 1e6;
  uint64_t tx1 = ld.measured[0];
  /* The reader: a read transaction left open on the replica. */
  struct rpc r;
  if (bench_connect(&r, B.ep[MAXEP], 5000, why, sizeof why) != 0)
    goto fail;
  Env *rep = bench_sql(&r, "BEGIN; SELECT count(*) FROM sbtest1; SELECT auralog_read_point();",
                       10000, why, sizeof why);
  if (rep == NULL)
    goto fail;
  double rp = (double)strtoull(rep->rows->rows[rep->rows->n_rows - 1]->values[0]->text, NULL,
                               10);
  wire_free(rep);
  fprintf(stderr, "hold: a read transaction open on the replica at read point %.0f for %d s\n",
          rp, B.hold);
  if (!B.json)
    printf("\nstorage growth under a %d s reader (write-only workload, %d clients; a read "
           "transaction\n  open on a replica with --max-read-age 0; status totals over all "
           "six copies of every PG)\n      t s   records   versions      MiB   lowest GC "
           "point   PGMRPL      VDL   lag LSN  replica RSS MiB\n", B.hold, B.hold_clients);
  double t1 = bench_now_us();
  for (int s = 0; !interrupted; s = s + 5 <= B.hold ? s + 5 : B.hold) {
    struct tot x;
    if (totals(&x, why, sizeof why) == 0 && !B.json)
      printf("  %7d %9.0f %10.0f %8.1f %17.0f %8.0f %8.0f %9.0f %16.0f\n", s, x.recs,
             x.vers, x.bytes / 1048576, x.min_gc, x.pgmrpl, x.vdl, x.lag_lsn,
             rss_mib(B.pid[MAXEP]));
    if (s >= B.hold)
      break;
    sleep_s(s + 5 <= B.hold ? 5 : B.hold - s);
  }
  if (totals(&c, why, sizeof why) != 0)
    goto fail;
  double hold_secs = (bench_now_us() - t1) / 1e6;
  double rss = rss_mib(B.pid[MAXEP]);
  uint64_t tx2 = ld.measured[0];
  /* Release, and watch GC come back (up to 60 s). */
  rep = bench_sql(&r, "COMMIT", 10000, why, sizeof why);
  if (rep)
    wire_free(rep);
  rpc_close(&r);
  double t2 = bench_now_us(), resumed = -1;
  for (int i = 0; i < 600 && !interrupted; i++) {
    if (totals(&d, why, sizeof why) != 0)
      goto fail;
    if (resumed < 0 && d.min_gc > rp)
      resumed = (bench_now_us() - t2) / 1e6;
    if (resumed >= 0 && d.bytes <= b.bytes * 1.1)
      break;
    usleep(100000);
  }
  double after = (bench_now_us() - t2) / 1e6;
  uint64_t tx3 = ld.measured[0];
  load_stop(&ld, cs, B.hold_clients);
  double base_rate = (b.bytes - a.bytes) / base_secs, hold_rate = (c.bytes - b.bytes) / hold_secs;
  cJSON_AddNumberToObject(out, "clients", B.hold_clients);
  cJSON_AddNumberToObject(out, "hold_s", hold_secs);
  cJSON_AddNumberToObject(out, "read_point", rp);
  cJSON_AddNumberToObject(out, "baseline_s", base_secs);
  cJSON_AddNumberToObject(out, "baseline_tx_s", (double)(tx1 - tx0) / base_secs);
  cJSON_AddNumberToObject(out, "baseline_growth_bytes_s", base_rate);
  cJSON_AddNumberToObject(out, "baseline_growth_bytes", b.bytes - a.bytes);
  cJSON_AddNumberToObject(out, "baseline_growth_records", b.recs - a.recs);
  cJSON_AddNumberToObject(out, "hold_tx_s", (double)(tx2 - tx1) / hold_secs);
  cJSON_AddNumberToObject(out, "bytes_before", b.bytes);
  cJSON_AddNumberToObject(out, "bytes_held", c.bytes);
  cJSON_AddNumberToObject(out, "growth_bytes", c.bytes - b.bytes);
  cJSON_AddNumberToObject(out, "growth_bytes_s", hold_rate);
  cJSON_AddNumberToObject(out, "growth_records", c.recs - b.recs);
  cJSON_AddNumberToObject(out, "growth_versions", c.vers - b.vers);
  cJSON_AddNumberToObject(out, "replica_rss_mib", rss);
  cJSON_AddNumberToObject(out, "gc_resumed_after_s", resumed);
  cJSON_AddNumberToObject(out, "bytes_after", d.bytes);
  cJSON_AddNumberToObject(out, "after_s", after);
  cJSON_AddNumberToObject(out, "after_tx_s", (double)(tx3 - tx2) / after);
  if (!B.json) {
    printf("  baseline (no reader, %.0f s): %.0f tx/s, storage %+.1f MiB (%+.2f MiB/s), "
           "%+.0f records, %+.0f page versions; %.1f MiB\n", base_secs,
           (double)(tx1 - tx0) / base_secs, (b.bytes - a.bytes) / 1048576, base_rate / 1048576,
           b.recs - a.recs, b.vers - a.vers, b.bytes / 1048576);
    printf("  held %.0f s at read point %.0f: %.0f tx/s, storage %+.1f MiB (%+.2f MiB/s; "
           "%+.1f MiB per copy of the volume), %+.0f records, %+.0f page versions\n",
           hold_secs, rp, (double)(tx2 - tx1) / hold_secs, (c.bytes - b.bytes) / 1048576,
           hold_rate / 1048576, (c.bytes - b.bytes) / 1048576 / NCOPIES, c.recs - b.recs,
           c.vers - b.vers);
    printf("  the held replica's memory at the end: %.0f MiB resident (the writer's stream "
           "waits there)\n", rss);
    if (resumed >= 0)
      printf("  released: GC passed the read point after %.1f s; storage back to %.1f MiB "
             "after %.1f s (%.0f tx/s meanwhile)\n", resumed, d.bytes / 1048576, after,
             (double)(tx3 - tx2) / after);
    else
      printf("  released: GC had not passed the read point after %.0f s (storage %.1f "
             "MiB)\n", after, d.bytes / 1048576);
  }
  (void)o;
  stop_replica(MAXEP);
  return out;
fail:
  load_stop(&ld, cs, B.hold_clients);
  cJSON_AddStringToObject(out, "error", why);
  fprintf(stderr, "hold: %s\n", why);
  stop_replica(MAXEP);
  return out;
}

/* After the load: let node GC reach the PGMRPL, so that no part pays for
 * the load's backlog; or stop when it has not moved for 3 s (a PG's last
 * records stay above its GC point until the PG is written again: its
 * segments learn how far they may free only with an Append), or after
 * 120 s. */
static void settle(void)
{
  char why[300];
  struct tot t;
  double last = -1;
  int still = 0;
  for (int i = 0; i < 1200 && !interrupted; i++) {
    if (totals(&t, why, sizeof why) != 0)
      return;
    if (t.min_gc >= t.pgmrpl && t.pgmrpl > 0)
      break;
    if (t.recs == 0)
      break;                     /* every record freed */
    still = t.min_gc == last ? still + 1 : 0;
    last = t.min_gc;
    if (still >= 30)
      break;
    if (i % 50 == 0)
      fprintf(stderr, "waiting for node GC to catch up with the load (lowest GC point %.0f, "
              "PGMRPL %.0f)\n", t.min_gc, t.pgmrpl);
    usleep(100000);
  }
}

/* ---- the command ------------------------------------------------------------------ */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench replicas [--parts LIST] [--lag-clients LIST]\n"
    "                              [--read-clients N] [--hold S] [--hold-clients N]\n"
    "                              [--baseline S] [--duration S] [--warmup S]\n"
    "                              [--tables T] [--rows R] [--seed N] [--json]\n"
    "                              [--dir DIR] [--base-port PORT]\n"
    "\n"
    "What read replicas (paper §4.2.4) cost and give on this machine:\n"
    "  lag    replica lag p50/p99/max under the write-only workload at each\n"
    "         of --lag-clients (default 1,8,32), measured on the writer\n"
    "         (feed sent -> replica applied -> ack back)\n"
    "  reads  the read-only workload's throughput over the writer and 0, 1, 2\n"
    "         replicas (--read-clients, default 8, spread evenly)\n"
    "  hold   storage growth while a read transaction is held open on a\n"
    "         replica for --hold seconds (default 60) under the write-only\n"
    "         workload (--hold-clients, default 8), against --baseline\n"
    "         seconds (default: as long as --hold) of it with no reader, and\n"
    "         GC after the release\n"
    "  --parts LIST    comma-separated, of lag, reads, hold (default all)\n"
    "  --duration S    measured seconds per lag and reads run (default 10)\n"
    "  --warmup S      seconds run before measuring (default 2)\n"
    "  --tables T, --rows R, --seed N: the data (default 4 x 10000, seed 1)\n"
    "  --json          one JSON object on stdout instead of the tables\n"
    "  --dir DIR       the private cluster's directory (default\n"
    "                  $AURALOG_DIR/bench-replicas or ~/.auralog/bench-replicas)\n"
    "  --base-port N   its coordinator port (default 7800; 400 above your\n"
    "                  cluster's coordinator port if it is not 7400)\n"
    "It starts a private cluster (and stops it); your own is untouched.\n"
    "How to read the figures: bench/README.md.\n");
}

static int num_arg(const char *opt, const char *v, int lo, int hi)
{
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi)
    die("bench replicas: %s must be a whole number from %d to %d, not '%s'", opt, lo, hi, v);
  return (int)n;
}

static void parse(int argc, char **argv)
{
  static struct option lo[] = {
    {"parts", required_argument, 0, 'P'}, {"lag-clients", required_argument, 0, 'L'},
    {"read-clients", required_argument, 0, 'R'}, {"hold", required_argument, 0, 'H'},
    {"hold-clients", required_argument, 0, 'C'}, {"baseline", required_argument, 0, 'b'},
    {"duration", required_argument, 0, 'd'}, {"warmup", required_argument, 0, 'w'},
    {"tables", required_argument, 0, 't'}, {"rows", required_argument, 0, 'r'},
    {"seed", required_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
    {"dir", required_argument, 0, 'D'}, {"base-port", required_argument, 0, 'p'},
    {"help", no_argument, 0, 'h'}, {0}};
  B.wl = (struct workload){WL_WRITE_ONLY, 4, 10000, 1};
  B.lag_clients[0] = 1, B.lag_clients[1] = 8, B.lag_clients[2] = 32, B.nlag = 3;
  B.read_clients = 8, B.hold_clients = 8, B.duration = 10, B.warmup = 2, B.hold = 60;
  B.base_s = 0, B.parts = 7, B.base = bench_base_default(7800);
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (opt) {
    case 'P': {
      B.parts = 0;
      char *l = strdup(optarg), *save = NULL;
      for (char *t = strtok_r(l, ",", &save); t; t = strtok_r(NULL, ",", &save))
        B.parts |= !strcmp(t, "lag") ? 1 : !strcmp(t, "reads") ? 2 : !strcmp(t, "hold") ? 4
                   : (die("bench replicas: unknown part '%s' (lag, reads, hold)", t), 0);
      free(l);
      break;
    }
    case 'L': {
      B.nlag = 0;
      char *l = strdup(optarg), *save = NULL;
      for (char *t = strtok_r(l, ",", &save); t && B.nlag < MAXLAG; t = strtok_r(NULL, ",", &save))
        B.lag_clients[B.nlag++] = num_arg("--lag-clients", t, 1, 256);
      free(l);
      break;
    }
    case 'R': B.read_clients = num_arg("--read-clients", optarg, 1, 256); break;
    case 'H': B.hold = num_arg("--hold", optarg, 1, 3600); break;
    case 'C': B.hold_clients = num_arg("--hold-clients", optarg, 1, 256); break;
    case 'b': B.base_s = num_arg("--baseline", optarg, 1, 3600); break;
    case 'd': B.duration = num_arg("--duration", optarg, 1, 3600); break;
    case 'w': B.warmup = num_arg("--warmup", optarg, 0, 600); break;
    case 't': B.wl.tables = num_arg("--tables", optarg, 1, 64); break;
    case 'r': B.wl.rows = num_arg("--rows", optarg, 100, 10000000); break;
    case 's': B.wl.seed = (unsigned long long)num_arg("--seed", optarg, 0, 1 << 30); break;
    case 'j': B.json = 1; break;
    case 'D': snprintf(B.dir, sizeof B.dir, "%s", optarg); break;
    case 'p': B.base = num_arg("--base-port", optarg, 1024, 65000 - REPLICA_PORT_OFFSET - 4); break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc)
    die("bench replicas: unexpected argument '%s'", argv[optind]);
}

int bench_replicas_main(int argc, char **argv)
{
  parse(argc, argv);
  if (!B.dir[0])
    bench_dir(B.dir, sizeof B.dir, "bench-replicas");
  if (bench_mkdirs(B.dir) != 0)
    die("bench replicas: cannot make %s: %s", B.dir, strerror(errno));
  snprintf(B.cdir, sizeof B.cdir, "%s/cluster", B.dir);
  snprintf(B.coord, sizeof B.coord, "127.0.0.1:%d", B.base);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_int);
  signal(SIGTERM, on_int);
  if (!getenv("AURALOG_KEY") || !*getenv("AURALOG_KEY")) {
    char kp[1200], kwhy[1300];
    if (bench_mkdirs(B.cdir) != 0)
      die("bench replicas: cannot make %s: %s", B.cdir, strerror(errno));
    snprintf(kp, sizeof kp, "%s/cluster.key", B.cdir);
    if (key_create(kp, kwhy, sizeof kwhy) != 0)
      die("bench replicas: %s", kwhy);
    setenv("AURALOG_KEY", kp, 1);
  }
  cJSON *cond = cJSON_CreateObject();
  bench_conditions(cond, B.dir);
  static struct limit lim;
  fprintf(stderr, "measuring this machine's limit in %s/limit\n", B.dir);
  if (bench_limit(B.dir, &lim) != 0)
    fprintf(stderr, "the machine's limit: not measured: %s\n", lim.err);
  char why[300];
  fprintf(stderr, "starting a private cluster in %s (ports %d..%d)\n", B.cdir, B.base,
          B.base + REPLICA_PORT_OFFSET + MAXEP);
  if (bench_cluster_up(B.cdir, B.base, why, sizeof why) != 0)
    die("bench replicas: %s", why);
  bench_stop(bench_member_pid(B.cdir, "engine"), 5000);   /* ours runs volume bench */
  int failed = 0;
  cJSON *out = cJSON_CreateObject();
  cJSON_AddItemToObject(out, "conditions", cond);
  limit_json(&lim, cJSON_AddObjectToObject(out, "limit"));
  struct rpc r;
  if (start_engine(why, sizeof why) == NULL || bench_connect(&r, B.ep[0], 5000, why, sizeof why)) {
    failed = 1;
    fprintf(stderr, "bench replicas: %s\n", why);
    goto done;
  }
  fprintf(stderr, "loading %d x %d rows...\n", B.wl.tables, B.wl.rows);
  if (wl_load(&B.wl, &r, why, sizeof why) != 0) {
    rpc_close(&r);
    failed = 1;
    fprintf(stderr, "bench replicas: %s\n", why);
    goto done;
  }
  rpc_close(&r);
  settle();
  if (!B.json) {
    char *c = cJSON_Print(cond);
    printf("conditions: %s\n", c);
    free(c);
    printf("data: %d tables x %d rows (sysbench's schema), seed %llu; warm-up %d s, "
           "measured %d s per run\n", B.wl.tables, B.wl.rows, (unsigned long long)B.wl.seed,
           B.warmup, B.duration);
    if (lim.ok)
      printf("this machine's limit: loopback round trip p50 %.3f ms, fdatasync p50 %.3f ms, "
             "4-of-6 flush p50 %.3f ms\n", hist_ms(&lim.rtt, .5), hist_ms(&lim.fsync, .5),
             hist_ms(&lim.quorum, .5));
  }
  if ((B.parts & 1) && !interrupted)
    cJSON_AddItemToObject(out, "lag", part_lag(&lim));
  if ((B.parts & 2) && !interrupted)
    cJSON_AddItemToObject(out, "reads", part_reads());
  if ((B.parts & 4) && !interrupted) {
    stop_replica(1);             /* the hold measures one replica's reader alone */
    stop_replica(2);
    cJSON *h = part_hold();
    failed |= cJSON_GetObjectItem(h, "error") != NULL;
    cJSON_AddItemToObject(out, "hold", h);
  }
done:
  for (int k = MAXEP; k >= 0; k--)
    stop_replica(k);
  bench_cluster_down(B.cdir);
  if (B.json) {
    char *s = cJSON_Print(out);
    puts(s);
    free(s);
  }
  cJSON_Delete(out);
  if (interrupted)
    die("bench replicas: interrupted; the private cluster is stopped");
  return failed ? 1 : 0;
}
