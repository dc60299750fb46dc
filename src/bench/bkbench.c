/*
 * bkbench.c: `auralog bench backup`: what continuous backup costs the
 * writes, how far it trails them, what it stores, and what a restore
 * takes.
 *
 * The claim (paper §2.3 and Fig. 4 step 6): the storage tier backs itself
 * up; the writer does no work for it and waits for none of it. Each PG's
 * log is staged once (not six times) by one of its segments, page versions
 * now and then as base images, to an object store; a restore to any point
 * of the window rebuilds the volume from those objects. So backup should
 * cost the foreground little (some node CPU and disk reads), trail the
 * commits by about the staging period (BACKUP_MS), and a restore should
 * cost what the store holds for the point, not the volume's history.
 *
 * What is measured, in one run, on private clusters:
 *   1. Foreground: the write-only workload of `auralog bench` (its
 *      engine, clients and counters: bench.c's bench_system), on a fresh
 *      cluster with backup off, then on a fresh one with it on (`cluster
 *      up --backup dir`, the default a student's cluster runs with), over
 *      --rounds rounds. The order alternates (off, on; then on, off; ...)
 *      so that whatever drifts over the run (the page cache, the disk's
 *      own writeback, other load) weighs on both alike. tx/s, p50 and p99
 *      of the measured window, and CPU ms per transaction by role (engine,
 *      nodes, coordinator, each node: the uploader's share shows there);
 *      the median over the rounds, and on against off in percent.
 *   2. Backup lag during the backed-up runs (bklag.c): how long a commit
 *      durable at a sample waited until every PG's backup reached it,
 *      sampled over the whole run, the load included.
 *   3. The object store's bytes per committed transaction: what the store
 *      grew by from the end of the load (once staged) to the end of the
 *      run, over the transactions in between.
 *   4. Restore time against volume size (--sizes, MiB) and against the
 *      target's age (the newest point, the middle, the oldest: bkrestore.c
 *      says which points and why), into a SQLite file (`auralog restore
 *      --file`) and into a new volume (`auralog restore --into`).
 * Every figure is printed beside its conditions; --json gives one object.
 * The foreground pair is noted in the journal of the user's own cluster,
 * if one runs (note.c), as `auralog bench` notes its systems; the lag and
 * the restores have no place in a BenchNote (a system's tx/s and commit
 * latency) and are not noted.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "bench/bkbench_int.h"
#include "lib/log.h"
#include "param.h"

struct bkbench_run K;

#define BK_ROUNDS_MAX 10

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
  stopped = sig;
  bench_interrupted = 1;     /* a foreground run ends at its next look */
}

void bk_cluster_down(void)
{
  if (!K.up)
    return;
  bench_cluster_down(K.cdir);
  K.up = 0;
  char p[1200];
  snprintf(p, sizeof p, "%s/data", K.cdir);
  bench_rm_tree(p);
  snprintf(p, sizeof p, "%s/backup", K.cdir);
  bench_rm_tree(p);
}

/* At exit, also after die(): no cluster left running. */
static void cleanup(void)
{
  if (getpid() == K.owner)
    bk_cluster_down();
}

void bk_progress(int force, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  bench_progress_v("backup", force, fmt, ap);
  va_end(ap);
}

void bk_check_stop(void)
{
  if (stopped) {
    bench_progress_end();
    die("bench backup: interrupted (signal %d); cluster stopped", (int)stopped);
  }
}

/* ---- options ---------------------------------------------------------------------- */

struct bopts {
  struct opts fg;            /* the foreground's, as `auralog bench` takes them */
  int rounds, age, json, no_note;
  struct bkr_size z[BK_SIZES];
  int nz;
  /* [round][0: backup off, 1: on] */
  struct result r[BK_ROUNDS_MAX][2];
};

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench backup [--duration S] [--warmup S] [--clients N] [--rounds N]\n"
    "                            [--sizes LIST] [--age S] [--seed N] [--json] [--no-note]\n"
    "                            [--dir DIR] [--base-port N]\n"
    "\n"
    "Measure what continuous backup (paper Fig. 4 step 6: each PG's log staged to\n"
    "an object store by one of its segments) costs and gives, in one run:\n"
    "  1. the foreground: write-only transactions (as `auralog bench`) on a fresh\n"
    "     cluster with backup off and on, alternated over --rounds: tx/s, p50,\n"
    "     p99, CPU ms per transaction by role, and on against off in percent;\n"
    "  2. the backup's lag in the backed-up runs: how long a durable commit\n"
    "     waited to become restorable (p50, p99, max);\n"
    "  3. the object store's bytes per committed transaction;\n"
    "  4. restore time against the volume's size and the target's age (the\n"
    "     newest point, the middle, the oldest), into a SQLite file (restore\n"
    "     --file) and into a new volume (restore --into).\n"
    "It starts private clusters (and stops them); your own cluster is untouched,\n"
    "and its journal gets the foreground's results (--no-note: not). About 3 to\n"
    "4 minutes on 2 cores with the defaults.\n"
    "\n"
    "  --duration S   measured seconds of each foreground run (default 10)\n"
    "  --warmup S     seconds run before measuring (default 2)\n"
    "  --clients N    foreground clients (default 8)\n"
    "  --rounds N     foreground rounds, each one run with backup off and one\n"
    "                 with it on (default 3, at most %d)\n"
    "  --sizes LIST   volume sizes to restore, MiB, comma-separated, each 1..1024\n"
    "                 (default 2,8,32; a fresh cluster each)\n"
    "  --age S        seconds of updates after each size's fill: the span from\n"
    "                 the oldest target to the newest (default 6)\n"
    "  --seed N       random seed of data and transactions (default 1)\n"
    "  --json         one JSON object on stdout instead of the table\n"
    "  --no-note      do not note the results in your cluster's journal\n"
    "  --dir DIR      where the logs go, and the private clusters in DIR/cluster\n"
    "                 (emptied for each; default $AURALOG_DIR/bench-backup or\n"
    "                 ~/.auralog/bench-backup: a real disk, not /tmp)\n"
    "  --base-port N  coordinator on N, nodes on N+1..N+%d, engines on N+%d and\n"
    "                 N+%d (default 8000; 600 above your cluster's coordinator\n"
    "                 port if it is not 7400)\n"
    "\n"
    "What each figure means: bench/README.md, `auralog bench backup`.\n",
    BK_ROUNDS_MAX, NCOPIES, ENGINE_PORT_OFFSET, ENGINE_PORT_OFFSET + 1);
}

/* A whole number from lo to hi, or the command ends saying so (common.c). */
#define parse_num(opt, s, lo, hi) bench_num("bench backup", opt, s, lo, hi)

/* "2,8,32" into o->z (sizes ascending, none twice); or die. */
static void parse_sizes(const char *s, struct bopts *o)
{
  o->nz = 0;
  char *list = strdup(s), *save = NULL;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->nz == BK_SIZES)
      die("bench backup: --sizes takes at most %d sizes", BK_SIZES);
    int mib = (int)parse_num("--sizes", t, 1, 1024);
    if (o->nz && mib <= o->z[o->nz - 1].mib)
      die("bench backup: --sizes must grow from one size to the next, not '%s'", s);
    o->z[o->nz++] = (struct bkr_size){.mib = mib};
  }
  free(list);
  if (o->nz == 0)
    die("bench backup: --sizes names no size");
}

/* ---- figures over the rounds -------------------------------------------------------- */

enum { F_TXS, F_P50, F_P99, F_ENGINE, F_NODES, F_COORD, F_TOTAL, F_NODE0 };
#define NFIG (F_NODE0 + NCOPIES)

static double fig(const struct result *r, int f)
{
  switch (f) {
  case F_TXS: return r->tx_s;
  case F_P50: return hist_ms(&r->h, .5);
  case F_P99: return hist_ms(&r->h, .99);
  case F_ENGINE: return r->cpu_engine_ms;
  case F_NODES: return r->cpu_nodes_ms;
  case F_COORD: return r->cpu_coord_ms;
  case F_TOTAL: return r->cpu_engine_ms + r->cpu_nodes_ms + r->cpu_coord_ms;
  default: return r->cpu_node_ms[f - F_NODE0];
  }
}

static int ok_run(const struct result *r)
{
  return r->ran && !r->err[0] && r->h.n > 0;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
  if (n == 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median of figure f (or of get) over the rounds' runs with backup
 * on or off that finished. */
static double med(const struct bopts *o, int on, int f, double (*get)(const struct result *))
{
  double v[BK_ROUNDS_MAX];
  int n = 0;
  for (int i = 0; i < o->rounds; i++)
    if (ok_run(&o->r[i][on]))
      v[n++] = get ? get(&o->r[i][on]) : fig(&o->r[i][on], f);
  return median(v, n);
}

static double g_store(const struct result *r) { return r->backup_bytes; }
static double g_lag50(const struct result *r) { return r->bk_lag_p50_ms; }

/* The worst of the backed-up runs' lag figures (p99, max), and the
 * samples in all. */
static void lag_worst(const struct bopts *o, double *p99, double *max, double *samples)
{
  *p99 = *max = -1;
  *samples = 0;
  for (int i = 0; i < o->rounds; i++) {
    const struct result *r = &o->r[i][1];
    if (!ok_run(r) || r->bk_lag_p50_ms < 0)
      continue;
    *p99 = r->bk_lag_p99_ms > *p99 ? r->bk_lag_p99_ms : *p99;
    *max = r->bk_lag_max_ms > *max ? r->bk_lag_max_ms : *max;
    *samples += r->bk_lag_samples;
  }
}

static double pct(double on, double off)
{
  return off > 0 ? 100 * (on / off - 1) : 0;
}

/* ---- the report ------------------------------------------------------------------- */

static void conditions(cJSON *c, const struct bopts *o)
{
  char w[400];
  bench_conditions(c, K.dir);
  cJSON_AddStringToObject(c, "build", bench_build_flags());
  snprintf(w, sizeof w, "%d storage nodes, 2 per AZ, no replica; a fresh one for each run "
           "and each size", NCOPIES);
  cJSON_AddStringToObject(c, "cluster", w);
  cJSON_AddStringToObject(c, "store", "a directory on the cluster's disk (cluster up --backup "
                          "dir), objects read back from the page cache");
  cJSON_AddNumberToObject(c, "backup_ms", BACKUP_MS);
  cJSON_AddNumberToObject(c, "backup_piece_max", BACKUP_PIECE_MAX);
  cJSON_AddNumberToObject(c, "backup_base_ms", BACKUP_BASE_MS);
  cJSON_AddNumberToObject(c, "page_size", PAGE_SIZE_DEFAULT);
  cJSON_AddNumberToObject(c, "pg_pages", PG_PAGES);
  cJSON_AddNumberToObject(c, "seed", (double)o->fg.wl.seed);
}

/* The figures of one run r, or (r NULL) the medians of side on, into j. */
static void figs_json(cJSON *j, const struct bopts *o, const struct result *r, int on)
{
  static const char *const name[NFIG] = {"tx_per_s", "p50_ms", "p99_ms", "engine", "nodes",
                                         "coordinator", "total"};
  cJSON *c = NULL;
  for (int f = 0; f < NFIG; f++) {
    if (f == F_ENGINE)
      c = cJSON_AddObjectToObject(j, "cpu_ms_per_tx");
    cJSON_AddNumberToObject(c ? c : j, f < F_NODE0 ? name[f] : bench_node_ids[f - F_NODE0],
                            r ? fig(r, f) : med(o, on, f, NULL));
  }
}

static cJSON *run_json(const struct result *r, int round, int on)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "round", round + 1);
  cJSON_AddBoolToObject(j, "backup", on);
  if (r->err[0])
    cJSON_AddStringToObject(j, "error", r->err);
  if (!ok_run(r))
    return j;
  figs_json(j, NULL, r, on);
  cJSON_AddNumberToObject(j, "max_ms", hist_ms(&r->h, 1));
  cJSON_AddNumberToObject(j, "transactions", (double)r->tx_all);
  cJSON_AddNumberToObject(j, "errors", (double)r->errors);
  if (on) {
    cJSON_AddNumberToObject(j, "store_bytes_per_tx", r->backup_bytes);
    cJSON_AddNumberToObject(j, "lag_p50_ms", r->bk_lag_p50_ms);
    cJSON_AddNumberToObject(j, "lag_p99_ms", r->bk_lag_p99_ms);
    cJSON_AddNumberToObject(j, "lag_max_ms", r->bk_lag_max_ms);
    cJSON_AddNumberToObject(j, "lag_samples", r->bk_lag_samples);
  }
  return j;
}

static cJSON *one_json(const struct bkr_one *x, int vol)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddBoolToObject(j, "ok", x->ok);
  if (!x->ok) {
    cJSON_AddStringToObject(j, "error", x->err[0] ? x->err : "not run");
    return j;
  }
  cJSON_AddNumberToObject(j, "seconds", x->secs);
  if (vol) {
    cJSON_AddNumberToObject(j, "build_s", x->build_s);
    cJSON_AddNumberToObject(j, "load_s", x->load_s);
  }
  cJSON_AddNumberToObject(j, "cpl", (double)x->cpl);
  cJSON_AddNumberToObject(j, "records", (double)x->records);
  cJSON_AddNumberToObject(j, "objects", (double)x->objects);
  cJSON_AddNumberToObject(j, "bytes_read", (double)x->bytes);
  cJSON_AddNumberToObject(j, "pages", (double)x->pages);
  return j;
}

static cJSON *size_json(const struct bkr_size *z)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "mib", z->mib);
  if (z->err[0])
    cJSON_AddStringToObject(j, "error", z->err);
  cJSON_AddNumberToObject(j, "volume_bytes", z->volume_bytes);
  cJSON_AddNumberToObject(j, "pgs", z->npgs);
  cJSON_AddNumberToObject(j, "store_bytes", z->store_bytes);
  cJSON_AddNumberToObject(j, "fill_s", z->fill_s);
  cJSON_AddNumberToObject(j, "age_s", z->age_s);
  cJSON_AddNumberToObject(j, "age_transactions", (double)z->age_tx);
  cJSON_AddNumberToObject(j, "stage_s", z->stage_s);
  cJSON_AddNumberToObject(j, "window_lo", (double)z->lo);
  cJSON_AddNumberToObject(j, "window_hi", (double)z->hi);
  cJSON *ts = cJSON_AddArrayToObject(j, "targets");
  for (int k = 0; k < BK_TARGETS; k++) {
    const struct bkr_target *t = &z->t[k];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "target", t->name ? t->name : "");
    cJSON_AddNumberToObject(x, "lsn", (double)t->lsn);
    cJSON_AddNumberToObject(x, "age_s", t->age_s);
    cJSON_AddItemToObject(x, "file", one_json(&t->file, 0));
    cJSON_AddItemToObject(x, "volume", one_json(&t->vol, 1));
    cJSON_AddItemToArray(ts, x);
  }
  return j;
}

static cJSON *bk_report_json(const struct bopts *o, cJSON *cond)
{
  cJSON *out = cJSON_CreateObject();
  cJSON_AddItemReferenceToObject(out, "conditions", cond);
  cJSON *fg = cJSON_AddObjectToObject(out, "foreground");
  cJSON_AddStringToObject(fg, "workload", wl_names[o->fg.wl.kind]);
  cJSON_AddNumberToObject(fg, "tables", o->fg.wl.tables);
  cJSON_AddNumberToObject(fg, "rows", o->fg.wl.rows);
  cJSON_AddNumberToObject(fg, "clients", o->fg.clients);
  cJSON_AddNumberToObject(fg, "duration_s", o->fg.duration);
  cJSON_AddNumberToObject(fg, "warmup_s", o->fg.warmup);
  cJSON_AddNumberToObject(fg, "rounds", o->rounds);
  cJSON_AddStringToObject(fg, "order", "round 1 off then on, round 2 on then off, and so on");
  cJSON *runs = cJSON_AddArrayToObject(fg, "runs");
  for (int i = 0; i < o->rounds; i++)
    for (int k = 0; k < 2; k++) {
      int on = (i % 2 == 0) == (k == 1);   /* the order they ran in */
      cJSON_AddItemToArray(runs, run_json(&o->r[i][on], i, on));
    }
  figs_json(cJSON_AddObjectToObject(fg, "off"), o, NULL, 0);
  figs_json(cJSON_AddObjectToObject(fg, "on"), o, NULL, 1);
  cJSON *d = cJSON_AddObjectToObject(fg, "diff_pct");
  const char *names[] = {"tx_per_s", "p50_ms", "p99_ms", "cpu_engine", "cpu_nodes",
                         "cpu_coordinator", "cpu_total"};
  for (int f = 0; f <= F_TOTAL; f++)
    cJSON_AddNumberToObject(d, names[f], pct(med(o, 1, f, NULL), med(o, 0, f, NULL)));

  double p99, max, samples;
  lag_worst(o, &p99, &max, &samples);
  cJSON *lag = cJSON_AddObjectToObject(out, "lag");
  cJSON_AddNumberToObject(lag, "p50_ms", med(o, 1, 0, g_lag50));
  cJSON_AddNumberToObject(lag, "p99_ms", p99);
  cJSON_AddNumberToObject(lag, "max_ms", max);
  cJSON_AddNumberToObject(lag, "samples", samples);
  cJSON_AddStringToObject(lag, "is", "how long a commit durable at a sample waited until every "
                          "PG's backup reached it, sampled over each backed-up run (the load "
                          "included); p50: the median of the runs', p99 and max: the worst");
  cJSON *st = cJSON_AddObjectToObject(out, "store");
  cJSON_AddNumberToObject(st, "bytes_per_tx", med(o, 1, 0, g_store));
  cJSON_AddStringToObject(st, "is", "the store's growth from the end of the load (staged) to "
                          "the end of the run, over its transactions; median of the runs");
  cJSON *rs = cJSON_AddObjectToObject(out, "restore");
  cJSON_AddNumberToObject(rs, "age_s", o->age);
  cJSON *zs = cJSON_AddArrayToObject(rs, "sizes");
  for (int i = 0; i < o->nz; i++)
    cJSON_AddItemToArray(zs, size_json(&o->z[i]));
  return out;
}

#define MB(x) ((x) / 1048576.0)

static void print_cpu(const char *what, const struct bopts *o, int on)
{
  printf("  %-22s", what);
  for (int k = 0; k < NCOPIES; k++)
    printf(" %s %.3f", bench_node_ids[k], med(o, on, F_NODE0 + k, NULL));
  printf("\n");
}

static void print_run(const char *label, const struct result *r)
{
  if (!ok_run(r)) {
    printf("  %-12s failed: %s\n", label, r->err[0] ? r->err : "not run");
    return;
  }
  printf("  %-12s %8.0f %7.2f %7.2f | %7.3f %7.3f %7.3f %7.3f | %6llu\n", label, r->tx_s,
         fig(r, F_P50), fig(r, F_P99), r->cpu_engine_ms, r->cpu_nodes_ms, r->cpu_coord_ms,
         fig(r, F_TOTAL), (unsigned long long)r->errors);
  if (r->err[0])
    printf("  %-12s (%s)\n", "", r->err);
}

static void print_one(const char *what, const struct bkr_one *x)
{
  if (!x->ok)
    printf(" %s failed: %s;", what, x->err[0] ? x->err : "not run");
}

static void print_table(const struct bopts *o, cJSON *cond)
{
  printf("auralog bench backup: what continuous backup costs and what a restore takes "
         "(paper Fig. 4 step 6)\nconditions:\n");
  cJSON *it;
  cJSON_ArrayForEach(it, cond) {
    if (cJSON_IsString(it))
      printf("  %-18s %s\n", it->string, it->valuestring);
    else
      printf("  %-18s %g\n", it->string, it->valuedouble);
  }
  printf("\n1. foreground: %s, %d clients, %d x %d rows, %d s measured after %d s of "
         "warm-up;\n   a fresh cluster each run, backup off and on alternated over %d "
         "round%s\n", wl_names[o->fg.wl.kind], o->fg.clients, o->fg.wl.tables, o->fg.wl.rows,
         o->fg.duration, o->fg.warmup, o->rounds, o->rounds == 1 ? "" : "s");
  printf("  %-12s %8s %7s %7s | %7s %7s %7s %7s | %6s\n", "run", "tx/s", "p50 ms", "p99 ms",
         "engine", "nodes", "coord", "total", "errors");
  printf("  %-12s %8s %7s %7s | %31s |\n", "", "", "", "", "CPU ms per transaction");
  for (int i = 0; i < o->rounds; i++)
    for (int k = 0; k < 2; k++) {
      int on = (i % 2 == 0) == (k == 1);
      char label[32];
      snprintf(label, sizeof label, "%d backup %s", i + 1, on ? "on" : "off");
      print_run(label, &o->r[i][on]);
    }
  for (int on = 0; on < 2; on++)
    printf("  %-12s %8.0f %7.2f %7.2f | %7.3f %7.3f %7.3f %7.3f |\n",
           on ? "median on" : "median off", med(o, on, F_TXS, NULL), med(o, on, F_P50, NULL),
           med(o, on, F_P99, NULL), med(o, on, F_ENGINE, NULL), med(o, on, F_NODES, NULL),
           med(o, on, F_COORD, NULL), med(o, on, F_TOTAL, NULL));
  printf("  %-12s", "on vs off");
  for (int f = 0; f <= F_TOTAL; f++)
    printf(f == 0 ? " %+7.1f%%" : f == F_ENGINE ? " | %+6.1f%%" : " %+6.1f%%",
           pct(med(o, 1, f, NULL), med(o, 0, f, NULL)));
  printf(" |\n");
  printf("  CPU ms per transaction by node (median; one segment of each PG stages it):\n");
  print_cpu("backup off", o, 0);
  print_cpu("backup on", o, 1);
  /* /proc counts CPU in ticks: a role that used only a few over a run
   * (the coordinator) has a percentage that is their jitter. */
  printf("  CPU is read from /proc in ticks of %.0f ms: the coordinator's few ticks a run "
         "make its percentage noise\n", 1000.0 / (double)sysconf(_SC_CLK_TCK));

  double p99, max, samples;
  lag_worst(o, &p99, &max, &samples);
  printf("\n2. backup lag: how long a durable commit waited until every PG's backup reached "
         "it\n");
  if (samples > 0)
    printf("  p50 %.0f ms (median of the runs), p99 %.0f ms, max %.0f ms (the worst run); "
           "%.0f samples over the backed-up runs, the load included (staging every %d ms)\n",
           med(o, 1, 0, g_lag50), p99, max, samples, BACKUP_MS);
  else
    printf("  not measured: no backed-up run finished\n");

  printf("\n3. object store: %.0f bytes per committed transaction (median of the runs; the "
         "store's growth\n  from the load's end to the run's, over its transactions)\n",
         med(o, 1, 0, g_store));

  printf("\n4. restore time against volume size and target age (%d s of updates after each "
         "fill)\n", o->age);
  printf("  %5s %8s %4s %9s | %-6s %9s %6s %8s | %7s | %8s %7s %7s\n", "MiB", "vol MiB",
         "PGs", "store MiB", "target", "LSN", "age s", "records", "file s", "volume s",
         "build", "load");
  for (int i = 0; i < o->nz; i++) {
    const struct bkr_size *z = &o->z[i];
    if (z->err[0]) {
      printf("  %5d failed: %s\n", z->mib, z->err);
      if (z->t[0].lsn == 0)
        continue;
    }
    for (int k = 0; k < BK_TARGETS; k++) {
      const struct bkr_target *t = &z->t[k];
      if (k == 0)
        printf("  %5d %8.2f %4u %9.2f |", z->mib, MB(z->volume_bytes), z->npgs,
               MB(z->store_bytes));
      else
        printf("  %5s %8s %4s %9s |", "", "", "", "");
      printf(" %-6s %9llu %6.1f %8llu | %7.3f | %8.3f %7.3f %7.3f\n", t->name ? t->name : "?",
             (unsigned long long)t->lsn, t->age_s, (unsigned long long)t->file.records,
             t->file.secs, t->vol.secs, t->vol.build_s, t->vol.load_s);
      if (!t->file.ok || !t->vol.ok) {
        printf("  %5s", "");
        print_one(" file", &t->file);
        print_one(" volume", &t->vol);
        printf("\n");
      }
    }
  }
  for (int i = o->nz - 1; i >= 0; i--) {
    /* The largest size that restored: its rates, the fixed costs least. */
    const struct bkr_size *z = &o->z[i];
    const struct bkr_target *t = &z->t[0];
    if (!t->file.ok || !t->vol.ok || t->file.secs <= 0 || t->vol.secs <= 0)
      continue;
    printf("  at %d MiB, the newest point: %.0f MiB/s into a file, %.1f MiB/s into a new "
           "volume\n  (the copy through the VFS and a write quorum is %.0f%% of that)\n", z->mib,
           MB(z->volume_bytes) / t->file.secs, MB(z->volume_bytes) / t->vol.secs,
           100 * t->vol.load_s / t->vol.secs);
    break;
  }
  printf("  file: restore_build (objects read, records applied to the PGs' pages, PRAGMA\n"
         "  integrity_check), as `auralog restore --file`; volume: the same, then the file\n"
         "  copied into a new volume through the VFS (one transaction), as `restore --into`.\n"
         "  age: how old the point was when its restore began. The oldest target is the end\n"
         "  of the fill: a fresh cluster has no base image yet (one every %d s), so its\n"
         "  window starts at the empty volume, and every restore replays each PG's log from\n"
         "  zero pages: an older point applies fewer records, so it costs less, not more.\n",
         BACKUP_BASE_MS / 1000);
  cJSON *el = cJSON_GetObjectItem(cond, "elapsed_s");
  if (el)
    printf("\nrun took %.0f s\n", el->valuedouble);
}

/* The journal notes (note.c): the foreground's two sides as two systems
 * of one workload, the medians over the rounds. */
static void note(const struct bopts *o, cJSON *cond, const char *key)
{
  static Auralog__BenchNote b[2];
  static const char *const sys[2] = {"auralog", "auralog-backup"};
  int n = 0;
  for (int on = 0; on < 2; on++) {
    uint64_t errors = 0;
    int runs = 0;
    for (int i = 0; i < o->rounds; i++)
      if (ok_run(&o->r[i][on])) {
        errors += o->r[i][on].errors;
        runs++;
      }
    if (runs == 0)
      continue;
    Auralog__BenchNote x = AURALOG__BENCH_NOTE__INIT;
    x.workload = "backup-foreground";
    x.system = (char *)sys[on];
    x.clients = (uint32_t)o->fg.clients;
    x.group = 1;
    x.mean_group = 1;
    x.duration_s = (uint32_t)o->fg.duration;
    x.warmup_s = (uint32_t)o->fg.warmup;
    x.tables = (uint32_t)o->fg.wl.tables;
    x.rows = (uint32_t)o->fg.wl.rows;
    x.reads = (char *)o->fg.reads;
    x.tx_per_s = med(o, on, F_TXS, NULL);
    x.p50_ms = med(o, on, F_P50, NULL);
    x.p99_ms = med(o, on, F_P99, NULL);
    x.errors = errors;
    b[n++] = x;
  }
  if (n)
    bench_note_each(b, n, cond, key);
}

/* ---- the command ------------------------------------------------------------------ */

int bench_backup_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"duration", required_argument, 0, 'd'}, {"warmup", required_argument, 0, 'w'},
    {"clients", required_argument, 0, 'c'}, {"rounds", required_argument, 0, 'r'},
    {"sizes", required_argument, 0, 'S'}, {"age", required_argument, 0, 'a'},
    {"seed", required_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
    {"no-note", no_argument, 0, 'N'}, {"dir", required_argument, 0, 'D'},
    {"base-port", required_argument, 0, 'p'}, {"help", no_argument, 0, 'h'}, {0}};
  static struct bopts o;
  o.fg = (struct opts){.wl = {WL_WRITE_ONLY, 4, 10000, 1}, .clients = 8, .duration = 10,
                       .warmup = 2, .reads = "durable", .group = 1, .group_ms = 5,
                       .no_limit = 1, .no_note = 1};
  o.rounds = 3;
  o.age = 6;
  K.base = bench_base_default(8000);
  parse_sizes("2,8,32", &o);
  const char *dir = NULL;
  int oc;
  opterr = 0;
  while ((oc = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (oc) {
    case 'd': o.fg.duration = (int)parse_num("--duration", optarg, 1, 3600); break;
    case 'w': o.fg.warmup = (int)parse_num("--warmup", optarg, 0, 600); break;
    case 'c': o.fg.clients = (int)parse_num("--clients", optarg, 1, 256); break;
    case 'r': o.rounds = (int)parse_num("--rounds", optarg, 1, BK_ROUNDS_MAX); break;
    case 'S': parse_sizes(optarg, &o); break;
    case 'a': o.age = (int)parse_num("--age", optarg, 1, 3600); break;
    case 's': o.fg.wl.seed = (uint64_t)parse_num("--seed", optarg, 0, 0x7fffffffL); break;
    case 'j': o.json = 1; break;
    case 'N': o.no_note = 1; break;
    case 'D': dir = optarg; break;
    case 'p': K.base = (int)parse_num("--base-port", optarg, 1024,
                                      65535 - ENGINE_PORT_OFFSET - HTTP_PORT_OFFSET); break;
    case 'h': usage(stdout); return 0;
    default:
      die("bench backup: unknown option, or one without its value: '%s' (see auralog bench "
          "backup --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    die("bench backup: unexpected argument '%s' (see auralog bench backup --help)",
        argv[optind]);
  if (dir)
    snprintf(K.dir, sizeof K.dir, "%s", dir);
  else
    bench_dir(K.dir, sizeof K.dir, "bench-backup");
  /* The private clusters' directory is emptied for each: never one that
   * holds something else. */
  snprintf(K.cdir, sizeof K.cdir, "%s/cluster", K.dir);
  bench_check_dir("backup", K.cdir);
  if (bench_mkdirs(K.dir) != 0)
    die("bench backup: cannot make %s: %s", K.dir, strerror(errno));
  snprintf(o.fg.dir, sizeof o.fg.dir, "%s", K.dir);
  o.fg.base = K.base;
  /* The user's cluster's key, for the journal notes, before the private
   * cluster's becomes ours (bench_cluster_up). */
  static char caller_key[1200];
  snprintf(caller_key, sizeof caller_key, "%s", getenv("AURALOG_KEY") ? getenv("AURALOG_KEY")
                                                                        : "");
  K.owner = getpid();
  atexit(cleanup);
  bench_catch_signals(on_stop);

  double t0 = bench_now_us();
  cJSON *cond = cJSON_CreateObject();
  conditions(cond, &o);
  int failed = 0;
  for (int i = 0; i < o.rounds; i++)
    for (int k = 0; k < 2; k++) {
      int on = (i % 2 == 0) == (k == 1);
      char why[400];
      bk_progress(1, "round %d of %d: a fresh cluster, backup %s", i + 1, o.rounds,
                  on ? "on" : "off");
      K.up = 1;
      struct result *r = &o.r[i][on];
      if (bench_fresh_cluster(K.cdir, K.base, on, why, sizeof why) != 0) {
        r->ran = 1;
        snprintf(r->err, sizeof r->err, "%s", why);
      } else {
        bench_system(&o.fg, on ? SYS_BACKUP : 0, K.cdir, r);
      }
      bk_check_stop();
      failed |= !ok_run(r) || r->err[0];
      if (r->err[0])
        fprintf(stderr, "backup %s, round %d: %s\n", on ? "on" : "off", i + 1, r->err);
      else
        fprintf(stderr, "backup %-3s round %d: %8.0f tx/s, p99 %.2f ms\n", on ? "on" : "off",
                i + 1, r->tx_s, hist_ms(&r->h, .99));
    }
  cleanup();
  for (int i = 0; i < o.nz; i++) {
    bkr_size(&o.z[i], o.age, o.fg.wl.seed);
    bk_check_stop();
    const struct bkr_size *z = &o.z[i];
    failed |= z->err[0] != 0;
    for (int k = 0; k < BK_TARGETS; k++)
      failed |= !z->t[k].file.ok || !z->t[k].vol.ok;
  }
  bench_progress_end();
  double secs = (bench_now_us() - t0) / 1e6;
  cJSON_AddNumberToObject(cond, "elapsed_s", (double)(long)(secs * 10) / 10);
  cJSON *js = bk_report_json(&o, cond);
  if (o.json) {
    char *s = cJSON_PrintUnformatted(js);
    puts(s);
    free(s);
  } else {
    print_table(&o, cond);
  }
  fflush(stdout);
  if (!o.no_note)
    note(&o, cond, caller_key[0] ? caller_key : NULL);
  cJSON_Delete(js);
  cJSON_Delete(cond);
  return failed ? 1 : 0;
}
