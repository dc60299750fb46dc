/*
 * blreport.c: the report of `auralog bench binlog` (blbench.c says what is
 * measured): the seed's table shape (rows the modes, columns the client
 * counts, each mode against off), the CPU and bytes per transaction, where
 * a community commit's time goes, the machine's limits, every run in the
 * order it ran, and the seed's own figures beside ours, labelled as the
 * seed's. As a table for people or as one JSON object.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "bench/blbench_int.h"

/* Seed 003's figures: MySQL on Aurora (db.r6g.8xlarge and 16xlarge,
 * sysbench, average of 10 iterations), TPS with the community and the
 * enhanced binlog at 25, 100, 1000 and 4000 threads; and its claims
 * against a binlog off. */
static const int seed_threads[4] = {25, 100, 1000, 4000};
static const double seed_tps[2][2][4] = {
  {{2596.3, 6348.08, 17581.01, 17448.86}, {3063.19, 7776.38, 20340.36, 25086.51}},
  {{2877.19, 7762.9, 17557.1, 27189.1}, {3026.14, 8841.46, 22729.99, 35352.81}}};
static const char *const seed_inst[2] = {"db.r6g.8xlarge", "db.r6g.16xlarge"};
#define SEED_COMMUNITY_PCT 50   /* "in certain cases can reach up to 50%" */
#define SEED_ENHANCED_PCT  13   /* "... down to 13%" */

int bl_run_ok(const struct blrun *r)
{
  return r->ran && !r->err[0] && r->h.n > 0;
}

double bl_fig(const struct blrun *r, int f)
{
  switch (f) {
  case BF_TXS: return r->tx_s;
  case BF_P50: return hist_ms(&r->h, .5);
  case BF_P99: return hist_ms(&r->h, .99);
  case BF_MAX: return hist_ms(&r->h, 1);
  case BF_CPU_ENGINE: return r->cpu_engine;
  case BF_CPU_NODES: return r->cpu_nodes;
  case BF_CPU_COORD: return r->cpu_coord;
  case BF_CPU_TOTAL: return r->cpu_engine + r->cpu_nodes + r->cpu_coord;
  case BF_REDO: return r->redo_bytes;
  case BF_EVENTS: return r->events;
  case BF_FILE: return r->file_bytes;
  case BF_FSYNCS: return r->fsyncs;
  case BF_PREPARE: return r->prepare_us;
  case BF_BINLOG: return r->binlog_us;
  case BF_COMMIT: return r->commit_us;
  case BF_MEAN: return hist_mean_ms(&r->h);
  default: return 0;
  }
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bl_med(const struct blopts *o, int m, int ci, int f, int *n)
{
  double v[BL_ROUNDS_MAX];
  int k = 0;
  for (int i = 0; i < o->rounds; i++)
    if (bl_run_ok(&o->r[i][ci][m]))
      v[k++] = bl_fig(&o->r[i][ci][m], f);
  if (n)
    *n = k;
  if (k == 0)
    return 0;
  qsort(v, (size_t)k, sizeof *v, cmp_double);
  return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* Is mode m among those asked for? */
static int asked(const struct blopts *o, int m)
{
  for (int j = 0; j < o->nmodes; j++)
    if (o->order[j] == m)
      return 1;
  return 0;
}

/* Figure f of mode m against off at client index ci: m / off, or 0 if
 * either has no good run. */
static double vs_off(const struct blopts *o, int m, int ci, int f)
{
  int n1, n0;
  double x = bl_med(o, m, ci, f, &n1), off = bl_med(o, BL_OFF, ci, f, &n0);
  return n1 && n0 && off > 0 ? x / off : 0;
}

/* The floors the machine's limits put under a commit (limit.c): off and
 * enhanced: the client's round trip, the engine's to the nodes, one
 * quorum flush round; community: one more trip and round (prepare, then
 * the commit record) and the binlog file's fdatasync between them. */
static double floor_ms(const struct limit *l, int community)
{
  if (!l->ok)
    return 0;
  double rtt = hist_ms(&l->rtt, .5), q = hist_ms(&l->quorum, .5);
  return community ? 3 * rtt + 2 * q + hist_ms(&l->fsync, .5) : 2 * rtt + q;
}

/* ---- JSON ------------------------------------------------------------------------ */

static void cpu_json(cJSON *j, const struct blrun *r)
{
  cJSON *c = cJSON_AddObjectToObject(j, "cpu_ms_per_tx");
  cJSON_AddNumberToObject(c, "engine", r->cpu_engine);
  cJSON_AddNumberToObject(c, "nodes", r->cpu_nodes);
  cJSON_AddNumberToObject(c, "coordinator", r->cpu_coord);
  cJSON_AddNumberToObject(c, "total", bl_fig(r, BF_CPU_TOTAL));
  for (int k = 0; k < NCOPIES; k++)
    cJSON_AddNumberToObject(c, bench_node_ids[k], r->cpu_node[k]);
}

static cJSON *run_json(const struct blopts *o, int i, int ci, int m)
{
  const struct blrun *r = &o->r[i][ci][m];
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "seq", r->seq);
  cJSON_AddNumberToObject(j, "round", i + 1);
  cJSON_AddNumberToObject(j, "clients", o->clients[ci]);
  cJSON_AddStringToObject(j, "mode", bl_mode_names[m]);
  if (r->err[0])
    cJSON_AddStringToObject(j, "error", r->err);
  if (!bl_run_ok(r))
    return j;
  cJSON_AddNumberToObject(j, "tx_per_s", r->tx_s);
  cJSON_AddNumberToObject(j, "p50_ms", bl_fig(r, BF_P50));
  cJSON_AddNumberToObject(j, "p99_ms", bl_fig(r, BF_P99));
  cJSON_AddNumberToObject(j, "max_ms", bl_fig(r, BF_MAX));
  cJSON_AddNumberToObject(j, "mean_ms", bl_fig(r, BF_MEAN));
  cJSON_AddNumberToObject(j, "window_s", r->secs);
  cJSON_AddNumberToObject(j, "load_s", r->load_s);
  cJSON_AddNumberToObject(j, "transactions", (double)r->tx_all);
  cJSON_AddNumberToObject(j, "errors", (double)r->errors);
  cpu_json(j, r);
  cJSON_AddNumberToObject(j, "redo_bytes_per_tx", r->redo_bytes);
  cJSON *b = cJSON_AddObjectToObject(j, "binlog");
  cJSON_AddStringToObject(b, "mode", r->bl_mode);
  cJSON_AddNumberToObject(b, "txns", r->bl_txns);
  cJSON_AddNumberToObject(b, "events_bytes_per_tx", r->events);
  if (m == BL_COMMUNITY) {
    cJSON_AddNumberToObject(b, "file_bytes_per_tx", r->file_bytes);
    cJSON_AddNumberToObject(b, "fsyncs_per_commit", r->fsyncs);
    cJSON_AddNumberToObject(b, "prepare_us", r->prepare_us);
    cJSON_AddNumberToObject(b, "binlog_us", r->binlog_us);
    cJSON_AddNumberToObject(b, "commit_us", r->commit_us);
  }
  return j;
}

/* The medians of mode m at client index ci. */
static cJSON *cell_json(const struct blopts *o, int m, int ci)
{
  cJSON *j = cJSON_CreateObject();
  int n;
  double txs = bl_med(o, m, ci, BF_TXS, &n);
  cJSON_AddNumberToObject(j, "rounds_ok", n);
  if (n == 0)
    return j;
  cJSON_AddNumberToObject(j, "tx_per_s", txs);
  cJSON_AddNumberToObject(j, "p50_ms", bl_med(o, m, ci, BF_P50, NULL));
  cJSON_AddNumberToObject(j, "p99_ms", bl_med(o, m, ci, BF_P99, NULL));
  cJSON *c = cJSON_AddObjectToObject(j, "cpu_ms_per_tx");
  cJSON_AddNumberToObject(c, "engine", bl_med(o, m, ci, BF_CPU_ENGINE, NULL));
  cJSON_AddNumberToObject(c, "nodes", bl_med(o, m, ci, BF_CPU_NODES, NULL));
  cJSON_AddNumberToObject(c, "coordinator", bl_med(o, m, ci, BF_CPU_COORD, NULL));
  cJSON_AddNumberToObject(c, "total", bl_med(o, m, ci, BF_CPU_TOTAL, NULL));
  cJSON_AddNumberToObject(j, "redo_bytes_per_tx", bl_med(o, m, ci, BF_REDO, NULL));
  cJSON_AddNumberToObject(j, "events_bytes_per_tx", bl_med(o, m, ci, BF_EVENTS, NULL));
  double r = m == BL_OFF ? 0 : vs_off(o, m, ci, BF_TXS);
  if (r > 0) {
    cJSON *v = cJSON_AddObjectToObject(j, "vs_off");
    cJSON_AddNumberToObject(v, "tx_per_s_ratio", r);
    cJSON_AddNumberToObject(v, "throughput_cost_pct", 100 * (1 - r));
    cJSON_AddNumberToObject(v, "p50_ratio", vs_off(o, m, ci, BF_P50));
    cJSON_AddNumberToObject(v, "p99_ratio", vs_off(o, m, ci, BF_P99));
    cJSON_AddNumberToObject(v, "cpu_total_ratio", vs_off(o, m, ci, BF_CPU_TOTAL));
  }
  if (m == BL_COMMUNITY) {
    double p = bl_med(o, m, ci, BF_PREPARE, NULL), b = bl_med(o, m, ci, BF_BINLOG, NULL);
    double k = bl_med(o, m, ci, BF_COMMIT, NULL), sum = p + b + k;
    cJSON *s = cJSON_AddObjectToObject(j, "stages");
    cJSON_AddNumberToObject(s, "prepare_us", p);
    cJSON_AddNumberToObject(s, "binlog_us", b);
    cJSON_AddNumberToObject(s, "commit_us", k);
    cJSON_AddNumberToObject(s, "prepare_share", sum > 0 ? p / sum : 0);
    cJSON_AddNumberToObject(s, "binlog_share", sum > 0 ? b / sum : 0);
    cJSON_AddNumberToObject(s, "commit_share", sum > 0 ? k / sum : 0);
    cJSON_AddNumberToObject(s, "serial_ceiling_tx_per_s", sum > 0 ? 1e6 / sum : 0);
    cJSON_AddNumberToObject(s, "client_mean_ms", bl_med(o, m, ci, BF_MEAN, NULL));
    cJSON_AddNumberToObject(s, "fsyncs_per_commit", bl_med(o, m, ci, BF_FSYNCS, NULL));
    cJSON_AddNumberToObject(s, "file_bytes_per_tx", bl_med(o, m, ci, BF_FILE, NULL));
  }
  return j;
}

static cJSON *seed_json(void)
{
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "source", "seed 003: AWS, Introducing Amazon Aurora MySQL "
                          "enhanced binary log (2023); MySQL 8 on Aurora, not this machine");
  cJSON_AddNumberToObject(s, "community_cost_up_to_pct", SEED_COMMUNITY_PCT);
  cJSON_AddNumberToObject(s, "enhanced_cost_pct", SEED_ENHANCED_PCT);
  cJSON *t = cJSON_AddArrayToObject(s, "tps");
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 4; k++) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "instance", seed_inst[i]);
      cJSON_AddNumberToObject(x, "threads", seed_threads[k]);
      cJSON_AddNumberToObject(x, "community", seed_tps[i][0][k]);
      cJSON_AddNumberToObject(x, "enhanced", seed_tps[i][1][k]);
      cJSON_AddNumberToObject(x, "enhanced_over_community_pct",
                              100 * (seed_tps[i][1][k] / seed_tps[i][0][k] - 1));
      cJSON_AddItemToArray(t, x);
    }
  return s;
}

cJSON *bl_report_json(const struct blopts *o, cJSON *cond)
{
  cJSON *out = cJSON_CreateObject();
  cJSON_AddItemReferenceToObject(out, "conditions", cond);
  limit_json(&o->lim, cJSON_AddObjectToObject(out, "limit"));
  cJSON *fl = cJSON_AddObjectToObject(out, "floor_ms");
  cJSON_AddNumberToObject(fl, "off_enhanced", floor_ms(&o->lim, 0));
  cJSON_AddNumberToObject(fl, "community", floor_ms(&o->lim, 1));
  cJSON_AddStringToObject(fl, "is", "from the limits' p50s: off and enhanced 2 x rtt + 1 "
                          "quorum round; community 3 x rtt + 2 quorum rounds + 1 fdatasync "
                          "(0: limits not measured)");
  cJSON_AddStringToObject(out, "workload", wl_names[o->wl.kind]);
  cJSON_AddNumberToObject(out, "tables", o->wl.tables);
  cJSON_AddNumberToObject(out, "rows", o->wl.rows);
  cJSON_AddNumberToObject(out, "duration_s", o->duration);
  cJSON_AddNumberToObject(out, "warmup_s", o->warmup);
  cJSON_AddNumberToObject(out, "rounds", o->rounds);
  cJSON *cl = cJSON_AddArrayToObject(out, "clients");
  for (int ci = 0; ci < o->nclients; ci++)
    cJSON_AddItemToArray(cl, cJSON_CreateNumber(o->clients[ci]));
  cJSON *ms = cJSON_AddArrayToObject(out, "modes");
  for (int j = 0; j < o->nmodes; j++)
    cJSON_AddItemToArray(ms, cJSON_CreateString(bl_mode_names[o->order[j]]));
  /* Every run, in the order it ran. */
  cJSON *runs = cJSON_AddArrayToObject(out, "runs");
  for (int seq = 1;; seq++) {
    int found = 0;
    for (int i = 0; i < o->rounds && !found; i++)
      for (int ci = 0; ci < o->nclients && !found; ci++)
        for (int m = 0; m < BL_MODES && !found; m++)
          if (o->r[i][ci][m].seq == seq && o->r[i][ci][m].ran) {
            cJSON_AddItemToArray(runs, run_json(o, i, ci, m));
            found = 1;
          }
    if (!found && seq > o->rounds * o->nclients * o->nmodes)
      break;
  }
  cJSON *res = cJSON_AddObjectToObject(out, "results");
  for (int j = 0; j < o->nmodes; j++) {
    int m = o->order[j];
    cJSON *x = cJSON_AddObjectToObject(res, bl_mode_names[m]);
    cJSON_AddBoolToObject(x, "available", !o->refused[m]);
    if (o->refused[m]) {
      cJSON_AddStringToObject(x, "reason", o->reason[m]);
      continue;
    }
    for (int ci = 0; ci < o->nclients; ci++) {
      char k[16];
      snprintf(k, sizeof k, "%d", o->clients[ci]);
      cJSON_AddItemToObject(x, k, cell_json(o, m, ci));
    }
  }
  cJSON_AddItemToObject(out, "seed", seed_json());
  return out;
}

/* ---- the table ----------------------------------------------------------------------- */

static void header(const struct blopts *o, const char *what)
{
  printf("  %-10s", what);
  for (int ci = 0; ci < o->nclients; ci++) {
    char h[32];
    snprintf(h, sizeof h, "%d clients", o->clients[ci]);
    printf(" %26s", h);
  }
  printf("\n");
}

/* One row per mode: fmt's cell for each client count, or why not. */
static void rows(const struct blopts *o, void (*cell)(const struct blopts *, int, int, char *,
                                                     size_t))
{
  for (int j = 0; j < o->nmodes; j++) {
    int m = o->order[j];
    printf("  %-10s", bl_mode_names[m]);
    if (o->refused[m]) {
      printf(" not available: %s\n", o->reason[m]);
      continue;
    }
    for (int ci = 0; ci < o->nclients; ci++) {
      char c[64] = "failed (see runs)";
      int n;
      bl_med(o, m, ci, BF_TXS, &n);
      if (n)
        cell(o, m, ci, c, sizeof c);
      printf(" %26s", c);
    }
    printf("\n");
  }
}

static void c_txs(const struct blopts *o, int m, int ci, char *c, size_t n)
{
  double x = bl_med(o, m, ci, BF_TXS, NULL), r = vs_off(o, m, ci, BF_TXS);
  if (m != BL_OFF && r > 0)
    snprintf(c, n, "%.0f (%.2fx, %+.1f%%)", x, r, 100 * (r - 1));
  else
    snprintf(c, n, "%.0f", x);
}

static void c_lat(const struct blopts *o, int m, int ci, char *c, size_t n)
{
  snprintf(c, n, "%.2f / %.2f", bl_med(o, m, ci, BF_P50, NULL), bl_med(o, m, ci, BF_P99, NULL));
}

static void c_cpu(const struct blopts *o, int m, int ci, char *c, size_t n)
{
  snprintf(c, n, "%.3f+%.3f+%.3f=%.3f", bl_med(o, m, ci, BF_CPU_ENGINE, NULL),
           bl_med(o, m, ci, BF_CPU_NODES, NULL), bl_med(o, m, ci, BF_CPU_COORD, NULL),
           bl_med(o, m, ci, BF_CPU_TOTAL, NULL));
}

static void c_bytes(const struct blopts *o, int m, int ci, char *c, size_t n)
{
  snprintf(c, n, "%.0f / %.0f", bl_med(o, m, ci, BF_REDO, NULL),
           bl_med(o, m, ci, BF_EVENTS, NULL));
}

static void stages(const struct blopts *o)
{
  int m = BL_COMMUNITY;
  if (!asked(o, m))
    return;
  printf("\ncommunity: where a commit's time goes (the engine's 2PC counters, us per commit "
         "and share of the three)\n");
  if (o->refused[m]) {
    printf("  not available: %s\n", o->reason[m]);
    return;
  }
  printf("  %7s | %15s %19s %15s | %8s %8s | %9s %9s %9s\n", "clients", "prepare",
         "binlog+fdatasync", "commit record", "sum us", "ceiling", "client ms", "fsync/cmt",
         "file B/tx");
  for (int ci = 0; ci < o->nclients; ci++) {
    int n;
    double p = bl_med(o, m, ci, BF_PREPARE, &n), b = bl_med(o, m, ci, BF_BINLOG, NULL);
    double k = bl_med(o, m, ci, BF_COMMIT, NULL), s = p + b + k;
    if (n == 0) {
      printf("  %7d | failed (see runs)\n", o->clients[ci]);
      continue;
    }
    printf("  %7d | %7.0f (%4.1f%%) %11.0f (%4.1f%%) %7.0f (%4.1f%%) | %8.0f %8.0f | %9.2f "
           "%9.3f %9.0f\n", o->clients[ci], p, s > 0 ? 100 * p / s : 0, b,
           s > 0 ? 100 * b / s : 0, k, s > 0 ? 100 * k / s : 0, s, s > 0 ? 1e6 / s : 0,
           bl_med(o, m, ci, BF_MEAN, NULL), bl_med(o, m, ci, BF_FSYNCS, NULL),
           bl_med(o, m, ci, BF_FILE, NULL));
  }
  printf("  prepare: the redo without its commit record, until at write quorum; binlog: "
         "the events appended\n  to the local file and fdatasync'd (fsync/cmt under 1: "
         "commits shared one); commit record: its\n  send (the commit then waits for the "
         "VDL, as any). ceiling: 1 s / sum, the tx/s of commits made\n  one at a time, as "
         "community makes them (SQLite's write lock held through the 2PC). client ms:\n"
         "  the clients' mean round trip, the wait for that lock included.\n");
}

static void seed_lines(const struct blopts *o)
{
  printf("\nseed 003's figures (MySQL 8 on Aurora, %s and %s, sysbench; NOT this machine):\n",
         seed_inst[0], seed_inst[1]);
  printf("  enabling the community binlog costs \"up to %d%%\" of throughput; the enhanced "
         "binlog about %d%%\n", SEED_COMMUNITY_PCT, SEED_ENHANCED_PCT);
  for (int i = 0; i < 2; i++) {
    printf("  %-16s enhanced over community:", seed_inst[i]);
    for (int k = 0; k < 4; k++)
      printf(" %+.1f%% (%d thr)", 100 * (seed_tps[i][1][k] / seed_tps[i][0][k] - 1),
             seed_threads[k]);
    printf("\n");
  }
  printf("ours (this machine, medians of the rounds):\n");
  for (int m = BL_COMMUNITY; m <= BL_ENHANCED; m++) {
    if (!asked(o, m))
      continue;
    printf("  %-9s against off:", bl_mode_names[m]);
    if (o->refused[m]) {
      printf(" not available (%s)\n", o->reason[m]);
      continue;
    }
    for (int ci = 0; ci < o->nclients; ci++) {
      double r = vs_off(o, m, ci, BF_TXS);
      if (r > 0)
        printf(" %+.1f%% tx/s at %d clients;", 100 * (r - 1), o->clients[ci]);
      else
        printf(" - at %d clients (no off or no %s run);", o->clients[ci], bl_mode_names[m]);
    }
    printf("\n");
  }
  if (asked(o, BL_COMMUNITY) && asked(o, BL_ENHANCED) && !o->refused[BL_COMMUNITY] &&
      !o->refused[BL_ENHANCED]) {
    printf("  enhanced over community:");
    for (int ci = 0; ci < o->nclients; ci++) {
      int n1, n2;
      double e = bl_med(o, BL_ENHANCED, ci, BF_TXS, &n1);
      double c = bl_med(o, BL_COMMUNITY, ci, BF_TXS, &n2);
      if (n1 && n2 && c > 0)
        printf(" %+.1f%% at %d clients;", 100 * (e / c - 1), o->clients[ci]);
    }
    printf("\n");
  }
}

static void runs(const struct blopts *o)
{
  printf("\nevery run, in the order it ran (a fresh cluster each):\n");
  printf("  %3s %5s %7s %-9s | %8s %7s %7s %8s | %7s %6s | %s\n", "#", "round", "clients",
         "mode", "tx/s", "p50 ms", "p99 ms", "max ms", "cpu ms", "load s", "errors");
  for (int seq = 1; seq <= o->rounds * o->nclients * o->nmodes; seq++)
    for (int i = 0; i < o->rounds; i++)
      for (int ci = 0; ci < o->nclients; ci++)
        for (int m = 0; m < BL_MODES; m++) {
          const struct blrun *r = &o->r[i][ci][m];
          if (r->seq != seq || !r->ran)
            continue;
          printf("  %3d %5d %7d %-9s | ", seq, i + 1, o->clients[ci], bl_mode_names[m]);
          if (!bl_run_ok(r)) {
            printf("failed: %s\n", r->err[0] ? r->err : "no result");
            continue;
          }
          printf("%8.0f %7.2f %7.2f %8.2f | %7.3f %6.1f | %llu%s%s\n", r->tx_s,
                 bl_fig(r, BF_P50), bl_fig(r, BF_P99), bl_fig(r, BF_MAX),
                 bl_fig(r, BF_CPU_TOTAL), r->load_s, (unsigned long long)r->errors,
                 r->err[0] ? ": " : "", r->err);
        }
}

void bl_report_table(const struct blopts *o, cJSON *cond)
{
  printf("auralog bench binlog: what the binlog costs the writes (seed 003; issue 29)\n"
         "conditions:\n");
  cJSON *it;
  cJSON_ArrayForEach(it, cond) {
    if (cJSON_IsString(it))
      printf("  %-14s %s\n", it->string, it->valuestring);
    else
      printf("  %-14s %g\n", it->string, it->valuedouble);
  }
  cJSON *fs = cJSON_GetObjectItem(cond, "filesystem");
  limit_print(&o->lim, o->dir, cJSON_IsString(fs) ? fs->valuestring : "?");
  if (o->lim.ok)
    printf("  floor of a commit from these: off and enhanced %.3f ms (2 x rtt + 1 quorum "
           "round);\n  community %.3f ms (3 x rtt + 2 quorum rounds + 1 fdatasync, in "
           "series)\n", floor_ms(&o->lim, 0), floor_ms(&o->lim, 1));

  printf("\nthroughput, tx/s (median of %d round%s; in brackets: against off)\n", o->rounds,
         o->rounds == 1 ? "" : "s");
  header(o, "binlog");
  rows(o, c_txs);
  printf("\ncommit latency p50 / p99, ms (the clients' round trip, durable)\n");
  header(o, "binlog");
  rows(o, c_lat);
  printf("\nCPU ms per transaction: engine + nodes (all six) + coordinator = total\n");
  header(o, "binlog");
  rows(o, c_cpu);
  printf("\nbytes per transaction: redo shipped (to all six copies; enhanced's events ride in "
         "it) / binlog events\n");
  header(o, "binlog");
  rows(o, c_bytes);
  stages(o);
  seed_lines(o);
  runs(o);
  printf("\n  CPU is read from /proc in ticks of %.0f ms, from the end of the load to the end "
         "of the run, over\n  every transaction in it (warm-up included); tx/s and latency "
         "count only the measured window.\n", 1000.0 / (double)sysconf(_SC_CLK_TCK));
  cJSON *el = cJSON_GetObjectItem(cond, "elapsed_s");
  if (el)
    printf("run took %.0f s\n", el->valuedouble);
}
