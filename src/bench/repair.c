/*
 * repair.c: `auralog bench repair`: how long the storage takes to repair
 * a lost node, how fast it moves segments, and what that costs the
 * writes running meanwhile.
 *
 * The claim (paper §2.2): a segment is the unit of failure and repair;
 * "10 GB segments can be repaired in 10 seconds on a 10 Gbps network
 * link", and a PG stays writable with one segment lost (4 of the 5 left
 * make a write quorum), so a short MTTR makes the window of a second
 * failure small. auralog repairs as member.h M7 says: the coordinator
 * gives every segment of a node silent for REPAIR_AFTER_MS a spare in its
 * AZ (each move a membership change, begin -> finish, member.h), all PGs
 * at once; the spare hydrates from its PG peers (node/gossip.c) within a
 * node-wide budget of HYDRATE_BYTES_PER_S, and the move finishes once the
 * writer uses the new membership and the spare's SCL covers it (M4).
 *
 * What is measured (repairrun.c does the cluster side):
 *   1. MTTR at each point (PG count x MiB per PG): SIGKILL of a node ->
 *      every PG back at NCOPIES current segments and no next, timed by
 *      the client (detection: the kill to the first next segment; move:
 *      from there to the end) and by the coordinator (status mttr_ms,
 *      from the node's last heartbeat). Median and max over --repeats,
 *      each killing a node of the next AZ.
 *   2. Hydration throughput: bytes the spares pulled / move time, beside
 *      the machine's disk and loopback bandwidth (limit.c, measured in the
 *      same run before any cluster) and the bound HYDRATE_BYTES_PER_S.
 *   3. Foreground: write-only transactions of --clients clients through
 *      the engine, --baseline seconds with no repair, then a node killed:
 *      tx/s and commit latency while it is down (not yet repaired) and
 *      while its segments move, on the same cluster (the largest point).
 *   4. The paper's figure scaled to this machine's limits.
 * Every figure is printed beside its conditions; --json gives one object.
 * The results are noted in the journal of the user's own cluster, if one
 * runs (note.c), as `auralog bench` does.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/repair_int.h"
#include "lib/log.h"
#include "param.h"

struct repair_run R;

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
  stopped = sig;
}

/* Stop the cluster, remove its data (the logs stay). At exit, also after die(). */
static void cleanup(void)
{
  if (getpid() == R.owner)
    rp_cluster_down();
}

void rp_progress(int force, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  bench_progress_v("repair", force, fmt, ap);
  va_end(ap);
}

static void progress_end(void)
{
  bench_progress_end();
}

void rp_check_stop(void)
{
  if (stopped) {
    progress_end();
    die("bench repair: interrupted (signal %d); cluster stopped", (int)stopped);
  }
}

/* ---- figures over the repeats ------------------------------------------------------ */

enum { F_CLIENT, F_COORD, F_DETECT, F_MOVE, F_BYTES, F_RATE, F_SPARE };

static double fig(const struct rrep *r, int f)
{
  double move_s = r->move_ms / 1000;
  switch (f) {
  case F_CLIENT: return r->client_ms;
  case F_COORD: return r->coord_ms;
  case F_DETECT: return r->detect_ms;
  case F_MOVE: return r->move_ms;
  case F_BYTES: return r->bytes;
  case F_RATE: return move_s > 0 ? r->bytes / move_s : 0;
  default: return move_s > 0 && r->to_nodes ? r->bytes / move_s / r->to_nodes : 0;
  }
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median (max if want_max) of figure f over the repeats that finished. */
static double stat(const struct rpoint *p, int f, int want_max)
{
  double v[RP_REPS];
  int n = 0;
  for (int i = 0; i < p->nrep; i++)
    if (p->r[i].ok)
      v[n++] = fig(&p->r[i], f);
  if (n == 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return want_max ? v[n - 1] : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int oks(const struct rpoint *p)
{
  int n = 0;
  for (int i = 0; i < p->nrep; i++)
    n += p->r[i].ok;
  return n;
}

/* ---- options -------------------------------------------------------------------- */

struct ropts {
  struct rpoint pt[RP_POINTS];
  int npt, reps, clients, baseline, json, no_note, limit_ms;
  uint64_t seed;
};

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench repair [--quick] [--points LIST] [--repeats N]\n"
    "                            [--clients N] [--load-point K] [--baseline S]\n"
    "                            [--repair-after MS]\n"
    "                            [--seed N] [--json] [--no-note] [--dir DIR] [--base-port N]\n"
    "\n"
    "Measure how long auralog takes to repair a storage node lost for good\n"
    "(SIGKILL): the coordinator moves each of its segments to a spare node in\n"
    "the same AZ once it has been silent %d ms (REPAIR_AFTER_MS), and every PG\n"
    "is back at %d current segments when the spares have hydrated (paper\n"
    "§2.2: 10 GB segments repaired in about 10 s on a 10 Gbps link). Starts a\n"
    "private cluster of %d nodes (3 per AZ: one spare each) per point, and\n"
    "stops it at the end; prints the time to repair (detection + move), the\n"
    "hydration throughput beside this machine's disk and loopback bandwidth\n"
    "(measured first, in the same run) and the bound HYDRATE_BYTES_PER_S\n"
    "(%u MiB/s a node), the write-only load's tx/s and p99 while a repair\n"
    "runs against the same load with none, and the paper's figure scaled.\n"
    "\n"
    "  --points LIST     PGSxMIB,...: fill PGS protection groups of MIB MiB\n"
    "                    each (pages of random data to the last page), e.g.\n"
    "                    10x1,100x8 (default 10x1,10x8,100x1: about 3 minutes\n"
    "                    on 2 cores; 100x8 fills 800 MiB, 4.8 GB on disk)\n"
    "  --repeats N       repairs at each point, each killing a node of the next\n"
    "                    AZ, started again empty-handed after (default 3, at\n"
    "                    most %d; median and max are shown)\n"
    "  --clients N       foreground write-only clients (default 4; 0: none),\n"
    "                    one more repair at --load-point, under their load\n"
    "  --load-point K    the K-th of --points (default 1). Under a sustained\n"
    "                    load the spares also race the writes of the PGs the\n"
    "                    clients use (e.g. --points 100x1: 100 PGs under load)\n"
    "  --baseline S      seconds of that load with no repair first (default 5)\n"
    "  --repair-after MS the coordinator's REPAIR_AFTER_MS for this run (`cluster\n"
    "                    up --repair-after`; default %d): the detection\n"
    "  --quick           one small point (4x1), 1 repeat, 2 clients, 3 s of\n"
    "                    baseline: under a minute, a smoke test\n"
    "  --seed N          the foreground's rows (default 1)\n"
    "  --json            one JSON object instead of a table\n"
    "  --no-note         do not note the results in your cluster's journal\n"
    "  --dir DIR         the private cluster's directory, emptied first (default\n"
    "                    $AURALOG_DIR/bench-repair or ~/.auralog/bench-repair)\n"
    "  --base-port N     coordinator on N, nodes on N+1..N+%d, engine on N+%d\n"
    "                    (default 7900; 500 above your cluster's coordinator\n"
    "                    port if it is not 7400)\n",
    REPAIR_AFTER_MS, NCOPIES, RP_NODES, HYDRATE_BYTES_PER_S >> 20, RP_REPS, REPAIR_AFTER_MS,
    RP_NODES, ENGINE_PORT_OFFSET);
}

/* A whole number from lo to hi, or the command ends saying so (common.c). */
#define parse_num(opt, s, lo, hi) bench_num("bench repair", opt, s, lo, hi)

/* "10x1,100x8" into o->pt; or die. */
static void parse_points(const char *s, struct ropts *o)
{
  o->npt = 0;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    long pgs = strtol(p, &end, 10), mib = 0;
    if (p[0] >= '0' && p[0] <= '9' && (*end == 'x' || *end == 'X')) {
      p = end + 1;
      mib = p[0] >= '0' && p[0] <= '9' ? strtol(p, &end, 10) : 0;
    }
    if (errno || pgs < 1 || pgs > 1000 || mib < 1 || mib > 64 || (*end != ',' && *end))
      die("bench repair: --points wants PGSxMIB pairs like 10x1,100x8 (1..1000 PGs of 1..64 "
          "MiB), not '%s'", s);
    if (o->npt == RP_POINTS)
      die("bench repair: --points takes at most %d points", RP_POINTS);
    o->pt[o->npt++] = (struct rpoint){.pgs = (int)pgs, .mib = (int)mib};
    if (*end == 0)
      return;
    p = end + 1;
  }
}

/* ---- the report ---------------------------------------------------------------- */

static void conditions(cJSON *c, const struct ropts *o)
{
  char w[400];
  bench_conditions(c, R.dir);
  cJSON_AddStringToObject(c, "build", bench_build_flags());
  snprintf(w, sizeof w, "%d storage nodes, %d per AZ (one spare per AZ), volume main of "
           "%d-byte pages; one private cluster per point", RP_NODES, RP_NODES / NAZ,
           PAGE_SIZE_DEFAULT);
  cJSON_AddStringToObject(c, "cluster", w);
  snprintf(w, sizeof w, "a table of %d-byte random blobs, one row a page, filling the "
           "first PGS protection groups of MIB MiB each (pg_pages = MIB x %d)", RP_ROW,
           (1 << 20) / PAGE_SIZE_DEFAULT);
  cJSON_AddStringToObject(c, "fill", w);
  cJSON_AddStringToObject(c, "kill", "SIGKILL of the node of the repeat's AZ (A, B, C, A, "
                          "...) hosting most segments; restarted empty-handed after "
                          "(cluster up), a spare for the next repeat");
  cJSON_AddNumberToObject(c, "repair_after_ms",
                          R.repair_after >= 0 ? R.repair_after : REPAIR_AFTER_MS);
  cJSON_AddNumberToObject(c, "node_down_ms", NODE_DOWN_MS);
  cJSON_AddNumberToObject(c, "heartbeat_ms", HEARTBEAT_MS);
  cJSON_AddNumberToObject(c, "move_retry_ms", MOVE_RETRY_MS);
  cJSON_AddNumberToObject(c, "hydrate_bytes_per_s", HYDRATE_BYTES_PER_S);
  cJSON_AddNumberToObject(c, "hydrate_pull_bytes", HYDRATE_PULL_BYTES);
  cJSON_AddNumberToObject(c, "gossip_ms", GOSSIP_MS);
  cJSON_AddNumberToObject(c, "repeats", o->reps);
  cJSON_AddNumberToObject(c, "seed", (double)o->seed);
  cJSON_AddStringToObject(c, "detection", "the coordinator repairs a node silent for "
                          "repair_after_ms since its last heartbeat (it shows it down after "
                          "node_down_ms, within that), at its next membership tick (at most "
                          "move_retry_ms apart)");
  cJSON_AddStringToObject(c, "mttr_client_ms", "SIGKILL to every PG at 6 current segments, "
                          "none next, none on the killed node (status every 50 ms)");
  cJSON_AddStringToObject(c, "mttr_coord_ms", "the coordinator's own figure (status "
                          "mttr_ms): from the node's last heartbeat to its last segment moved");
  cJSON_AddStringToObject(c, "bytes_moved", "what the other nodes' segments pulled from "
                          "their PG peers meanwhile (records and page versions; SegStat.pulled)");
}

static cJSON *med_max(const struct rpoint *p, int f)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "median", stat(p, f, 0));
  cJSON_AddNumberToObject(o, "max", stat(p, f, 1));
  return o;
}

static cJSON *rep_json(const struct rrep *r)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "node", r->node);
  cJSON_AddBoolToObject(j, "ok", r->ok);
  if (!r->ok) {
    cJSON_AddStringToObject(j, "error", r->err);
    return j;
  }
  cJSON_AddNumberToObject(j, "mttr_client_ms", r->client_ms);
  cJSON_AddNumberToObject(j, "mttr_coord_ms", r->coord_ms);
  cJSON_AddNumberToObject(j, "detect_ms", r->detect_ms);
  cJSON_AddNumberToObject(j, "move_ms", r->move_ms);
  cJSON_AddNumberToObject(j, "segments", r->segs);
  cJSON_AddNumberToObject(j, "spares", r->to_nodes);
  cJSON_AddNumberToObject(j, "bytes_moved", r->bytes);
  cJSON_AddNumberToObject(j, "moves_begun_again", r->restarts);
  return j;
}

static cJSON *win_json(const struct fgwin *w)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "seconds", w->secs);
  cJSON_AddNumberToObject(j, "transactions", (double)w->n);
  cJSON_AddNumberToObject(j, "tx_per_s", w->secs > 0 ? (double)w->n / w->secs : 0);
  cJSON_AddNumberToObject(j, "p50_ms", hist_ms(&w->h, .5));
  cJSON_AddNumberToObject(j, "p99_ms", hist_ms(&w->h, .99));
  cJSON_AddNumberToObject(j, "max_ms", hist_ms(&w->h, 1));
  cJSON_AddNumberToObject(j, "errors", (double)w->errors);
  return j;
}

/* The point whose repairs moved the most bytes: its rate is the least
 * weighed down by a move's fixed costs. -1 if none finished. */
static int best_point(const struct ropts *o)
{
  int b = -1;
  for (int i = 0; i < o->npt; i++)
    if (oks(&o->pt[i]) && (b < 0 || stat(&o->pt[i], F_BYTES, 0) > stat(&o->pt[b], F_BYTES, 0)))
      b = i;
  return b;
}

/* 4: the paper's 10 GB in 10 s, at this machine's limits. */
static cJSON *scaled(const struct ropts *o, const struct bwlimit *bw, char *why, size_t n)
{
  cJSON *j = cJSON_CreateObject();
  int b = best_point(o);
  double seg = 10e9, lim = 0;
  const char *is = "";
  if (bw->ok) {
    lim = bw->disk_bytes_s < bw->net_bytes_s ? bw->disk_bytes_s : bw->net_bytes_s;
    is = bw->disk_bytes_s < bw->net_bytes_s ? "disk" : "loopback";
  }
  cJSON_AddNumberToObject(j, "paper_bytes_per_s", 1e9);
  cJSON_AddStringToObject(j, "paper", "10 GB in 10 s on a 10 Gbps link (1.25 GB/s): 1 GB/s, "
                          "80% of the link");
  if (lim > 0) {
    cJSON_AddNumberToObject(j, "limit_bytes_per_s", lim);
    cJSON_AddStringToObject(j, "limit_is", is);
    cJSON_AddNumberToObject(j, "seconds_10gb_at_80pct_of_limit", seg / (0.8 * lim));
  }
  cJSON_AddNumberToObject(j, "seconds_10gb_at_bound", seg / HYDRATE_BYTES_PER_S);
  if (b < 0) {
    snprintf(why, n, "no repair finished: nothing measured to scale");
    cJSON_AddStringToObject(j, "because", why);
    return j;
  }
  double sp = stat(&o->pt[b], F_SPARE, 0);
  double pct_lim = lim > 0 ? 100 * sp / lim : 0, pct_bound = 100 * sp / HYDRATE_BYTES_PER_S;
  cJSON_AddNumberToObject(j, "point", b);
  cJSON_AddNumberToObject(j, "measured_per_spare_bytes_per_s", sp);
  cJSON_AddNumberToObject(j, "seconds_10gb_measured", sp > 0 ? seg / sp : 0);
  cJSON_AddNumberToObject(j, "percent_of_limit", pct_lim);
  cJSON_AddNumberToObject(j, "percent_of_bound", pct_bound);
  if (pct_bound >= 70)
    snprintf(why, n, "each spare pulls at most HYDRATE_BYTES_PER_S (%u MiB/s, param.h), a "
             "node-wide budget that leaves the disk and the network to the foreground: the "
             "bound, not the machine, sets the pace", HYDRATE_BYTES_PER_S >> 20);
  else
    snprintf(why, n, "below the bound too (%.0f%% of it): a spare's new segments catch up "
             "about one after another (its log), each paying its pulls' round trips and "
             "store commits and a finish (the writer adopts the new membership at its next "
             "lease probe, every %d ms; the spare's heartbeat, every %d ms; the coordinator's "
             "tick, every %d ms), and every member shares %d cores",
             pct_bound, ENGINE_STAT_MS, HEARTBEAT_MS, MOVE_RETRY_MS,
             (int)sysconf(_SC_NPROCESSORS_ONLN));
  cJSON_AddStringToObject(j, "because", why);
  return j;
}

static cJSON *report_json(const struct ropts *o, const struct bwlimit *bw, const struct fg *f,
                          cJSON *cond)
{
  cJSON *out = cJSON_CreateObject();
  cJSON_AddItemReferenceToObject(out, "conditions", cond);
  cJSON *l = cJSON_AddObjectToObject(out, "limits");
  if (bw->ok) {
    cJSON_AddNumberToObject(l, "disk_write_bytes_per_s", bw->disk_bytes_s);
    cJSON_AddNumberToObject(l, "loopback_bytes_per_s", bw->net_bytes_s);
    cJSON_AddNumberToObject(l, "seconds_each", bw->ms / 1000.0);
    cJSON_AddStringToObject(l, "disk_is", "sequential 256 KiB writes, an fdatasync every 4 "
                            "MiB, on the cluster's file system");
    cJSON_AddStringToObject(l, "loopback_is", "one TCP stream, 256 KiB writes");
  } else {
    cJSON_AddStringToObject(l, "error", bw->err);
  }
  cJSON_AddNumberToObject(l, "hydrate_bytes_per_s_per_node", HYDRATE_BYTES_PER_S);
  cJSON *ps = cJSON_AddArrayToObject(out, "points");
  for (int i = 0; i < o->npt; i++) {
    const struct rpoint *p = &o->pt[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "pgs", p->pgs);
    cJSON_AddNumberToObject(j, "mib_per_pg", p->mib);
    cJSON_AddNumberToObject(j, "pg_pages", p->mib * (1 << 20) / PAGE_SIZE_DEFAULT);
    cJSON_AddNumberToObject(j, "volume_pgs", p->vol_pgs);
    cJSON_AddNumberToObject(j, "segment_bytes", p->seg_bytes);
    cJSON_AddNumberToObject(j, "fill_s", p->fill_s);
    cJSON_AddNumberToObject(j, "repairs_ok", oks(p));
    cJSON_AddItemToObject(j, "mttr_client_ms", med_max(p, F_CLIENT));
    cJSON_AddItemToObject(j, "mttr_coord_ms", med_max(p, F_COORD));
    cJSON_AddItemToObject(j, "detect_ms", med_max(p, F_DETECT));
    cJSON_AddItemToObject(j, "move_ms", med_max(p, F_MOVE));
    cJSON_AddNumberToObject(j, "bytes_moved", stat(p, F_BYTES, 0));
    cJSON_AddNumberToObject(j, "hydration_bytes_per_s", stat(p, F_RATE, 0));
    cJSON_AddNumberToObject(j, "per_spare_bytes_per_s", stat(p, F_SPARE, 0));
    cJSON *rs = cJSON_AddArrayToObject(j, "repeats");
    for (int k = 0; k < p->nrep; k++)
      cJSON_AddItemToArray(rs, rep_json(&p->r[k]));
    cJSON_AddItemToArray(ps, j);
  }
  cJSON *fj = cJSON_AddObjectToObject(out, "foreground");
  if (!f->ran) {
    cJSON_AddStringToObject(fj, "skipped", f->err[0] ? f->err : "--clients 0");
  } else {
    cJSON_AddStringToObject(fj, "workload", "write-only (2 UPDATEs, a DELETE and an INSERT "
                            "by primary key), 1 table of 10000 rows");
    cJSON_AddNumberToObject(fj, "clients", f->clients);
    cJSON_AddNumberToObject(fj, "point", f->point);
    if (f->err[0])
      cJSON_AddStringToObject(fj, "error", f->err);
    cJSON_AddItemToObject(fj, "no_repair", win_json(&f->base));
    cJSON_AddItemToObject(fj, "node_down", win_json(&f->down));
    cJSON_AddItemToObject(fj, "during_move", win_json(&f->move));
    cJSON_AddItemToObject(fj, "repair", rep_json(&f->rep));
  }
  char why[600];
  cJSON_AddItemToObject(out, "paper_scaled", scaled(o, bw, why, sizeof why));
  return out;
}

#define MB(x) ((x) / 1048576.0)

static void print_win(const char *name, const struct fgwin *w)
{
  printf("  %-26s %6.1f %7llu %8.1f %8.2f %8.2f %8.2f %6llu\n", name, w->secs,
         (unsigned long long)w->n, w->secs > 0 ? (double)w->n / w->secs : 0,
         hist_ms(&w->h, .5), hist_ms(&w->h, .99), hist_ms(&w->h, 1),
         (unsigned long long)w->errors);
}

static void print_table(const struct ropts *o, const struct bwlimit *bw, const struct fg *f,
                        cJSON *cond, cJSON *js)
{
  printf("auralog bench repair: time to repair a lost storage node (paper §2.2)\n");
  printf("conditions:\n");
  cJSON *it;
  cJSON_ArrayForEach(it, cond) {
    if (cJSON_IsString(it))
      printf("  %-20s %s\n", it->string, it->valuestring);
    else
      printf("  %-20s %g\n", it->string, it->valuedouble);
  }
  printf("\n1. time to repair (ms; median / max of the repeats that finished)\n");
  printf("  %-9s %7s %7s %5s | %11s %11s | %6s %11s | %4s\n", "point", "vol_pgs", "seg_MiB",
         "segs", "mttr_client", "mttr_coord", "detect", "move", "ok");
  for (int i = 0; i < o->npt; i++) {
    const struct rpoint *p = &o->pt[i];
    char name[32], a[32], b[32], c[32];
    snprintf(name, sizeof name, "%dx%dMiB", p->pgs, p->mib);
    snprintf(a, sizeof a, "%.0f/%.0f", stat(p, F_CLIENT, 0), stat(p, F_CLIENT, 1));
    snprintf(b, sizeof b, "%.0f/%.0f", stat(p, F_COORD, 0), stat(p, F_COORD, 1));
    snprintf(c, sizeof c, "%.0f/%.0f", stat(p, F_MOVE, 0), stat(p, F_MOVE, 1));
    int segs = 0;
    for (int k = 0; k < p->nrep; k++)
      segs = p->r[k].segs > segs ? p->r[k].segs : segs;
    printf("  %-9s %7d %7.2f %5d | %11s %11s | %6.0f %11s | %d/%d\n", name, p->vol_pgs,
           MB(p->seg_bytes), segs, a, b, stat(p, F_DETECT, 0), c, oks(p), p->nrep);
    for (int k = 0; k < p->nrep; k++)
      if (!p->r[k].ok)
        printf("    repeat %d (node %s) failed: %s\n", k + 1, p->r[k].node, p->r[k].err);
  }
  printf("  segs: segments the killed node hosted (each moved to a spare of its AZ)\n"
         "  detect: SIGKILL -> the first next segment; move: -> every PG stable again\n");

  printf("\n2. hydration throughput (MiB/s; bytes the spares pulled / move time, median)\n");
  if (bw->ok)
    printf("  machine limits, measured in this run: disk write+fdatasync %.0f MiB/s, "
           "loopback TCP %.0f MiB/s\n", MB(bw->disk_bytes_s), MB(bw->net_bytes_s));
  else
    printf("  machine limits: not measured: %s\n", bw->err);
  printf("  bound: HYDRATE_BYTES_PER_S = %u MiB/s per node\n", HYDRATE_BYTES_PER_S >> 20);
  printf("  %-9s %10s %10s %14s %12s\n", "point", "moved_MiB", "all_MiB/s", "per_spare_MiB/s",
         "%_of_bound");
  for (int i = 0; i < o->npt; i++) {
    const struct rpoint *p = &o->pt[i];
    char name[32];
    snprintf(name, sizeof name, "%dx%dMiB", p->pgs, p->mib);
    printf("  %-9s %10.1f %10.1f %14.1f %11.0f%%\n", name, MB(stat(p, F_BYTES, 0)),
           MB(stat(p, F_RATE, 0)), MB(stat(p, F_SPARE, 0)),
           100 * stat(p, F_SPARE, 0) / HYDRATE_BYTES_PER_S);
  }

  printf("\n3. foreground: write-only transactions through the engine\n");
  if (!f->ran) {
    printf("  not run: %s\n", f->err[0] ? f->err : "--clients 0");
  } else {
    printf("  %d clients at point %dx%dMiB; the repair under load: node %s, mttr %.0f ms "
           "(detect %.0f, move %.0f)\n", f->clients, o->pt[f->point].pgs,
           o->pt[f->point].mib, f->rep.node, f->rep.client_ms, f->rep.detect_ms,
           f->rep.move_ms);
    if (f->err[0])
      printf("  error: %s\n", f->err);
    printf("  %-26s %6s %7s %8s %8s %8s %8s %6s\n", "window", "secs", "tx", "tx/s", "p50_ms",
           "p99_ms", "max_ms", "errors");
    print_win("no repair", &f->base);
    print_win("node down, not yet moving", &f->down);
    print_win("during the move", &f->move);
  }

  printf("\n4. the paper's figure, scaled\n");
  cJSON *s = cJSON_GetObjectItem(js, "paper_scaled");
  cJSON *lim = cJSON_GetObjectItem(s, "limit_bytes_per_s"),
        *sp = cJSON_GetObjectItem(s, "measured_per_spare_bytes_per_s");
  printf("  Aurora: 10 GB in 10 s on 10 Gbps = 1 GB/s, 80%% of the link.\n");
  if (lim)
    printf("  At this machine's limit (%s, %.0f MiB/s), 80%% of it would move a 10 GB segment "
           "in %.0f s;\n", cJSON_GetObjectItem(s, "limit_is")->valuestring,
           MB(lim->valuedouble),
           cJSON_GetObjectItem(s, "seconds_10gb_at_80pct_of_limit")->valuedouble);
  printf("  at the bound (%u MiB/s a node) it takes %.0f s", HYDRATE_BYTES_PER_S >> 20,
         10e9 / HYDRATE_BYTES_PER_S);
  if (sp)
    printf("; measured hydration (%.1f MiB/s a spare) would take %.0f s: %.1f%% of the "
           "limit, %.0f%% of the bound,\n  because %s.\n", MB(sp->valuedouble),
           cJSON_GetObjectItem(s, "seconds_10gb_measured")->valuedouble,
           cJSON_GetObjectItem(s, "percent_of_limit")->valuedouble,
           cJSON_GetObjectItem(s, "percent_of_bound")->valuedouble,
           cJSON_GetObjectItem(s, "because")->valuestring);
  else
    printf(".\n  %s.\n", cJSON_GetObjectItem(s, "because")->valuestring);
  cJSON *el = cJSON_GetObjectItem(cond, "elapsed_s");
  if (el)
    printf("\nrun took %.0f s\n", el->valuedouble);
}

/* The journal notes (note.c): the foreground windows as systems of one
 * workload, and each point's MTTR (its p50_ms the median, p99_ms the max
 * over the repeats; reads "mttr" marks them). */
static void note(const struct ropts *o, const struct fg *f, cJSON *cond, const char *key)
{
  static Auralog__BenchNote b[RP_POINTS + 2];
  static char names[RP_POINTS][40];
  int n = 0;
  for (int i = 0; i < o->npt; i++) {
    const struct rpoint *p = &o->pt[i];
    if (!oks(p))
      continue;
    Auralog__BenchNote x = AURALOG__BENCH_NOTE__INIT;
    snprintf(names[i], sizeof names[i], "repair-mttr-%dx%dmib", p->pgs, p->mib);
    x.workload = names[i];
    x.system = "auralog";
    x.clients = 1;
    x.group = 1;
    x.tables = 1;
    x.rows = (uint32_t)p->pgs;
    x.reads = "mttr";
    x.p50_ms = stat(p, F_CLIENT, 0);
    x.p99_ms = stat(p, F_CLIENT, 1);
    b[n++] = x;
  }
  const struct fgwin *w[2] = {&f->base, &f->move};
  const char *sys[2] = {"auralog-no-repair", "auralog-during-repair"};
  for (int i = 0; f->ran && !f->err[0] && i < 2; i++) {
    if (w[i]->n == 0)
      continue;
    Auralog__BenchNote x = AURALOG__BENCH_NOTE__INIT;
    x.workload = "repair-foreground";
    x.system = (char *)sys[i];
    x.clients = (uint32_t)f->clients;
    x.group = 1;
    x.tables = 1;
    x.rows = 10000;
    x.reads = "durable";
    x.duration_s = (uint32_t)(w[i]->secs + 0.5);
    x.tx_per_s = w[i]->secs > 0 ? (double)w[i]->n / w[i]->secs : 0;
    x.p50_ms = hist_ms(&w[i]->h, .5);
    x.p99_ms = hist_ms(&w[i]->h, .99);
    x.errors = w[i]->errors;
    b[n++] = x;
  }
  if (n)
    bench_note_each(b, n, cond, key);
}

int bench_repair_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"points", required_argument, 0, 'P'}, {"repeats", required_argument, 0, 'n'},
    {"clients", required_argument, 0, 'c'}, {"baseline", required_argument, 0, 'b'},
    {"repair-after", required_argument, 0, 'r'}, {"quick", no_argument, 0, 'q'},
    {"seed", required_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
    {"no-note", no_argument, 0, 'N'}, {"dir", required_argument, 0, 'd'},
    {"base-port", required_argument, 0, 'p'}, {"load-point", required_argument, 0, 'l'},
    {"help", no_argument, 0, 'h'}, {0}};
  static struct ropts o;
  static struct fg f;
  const char *dir = NULL;
  int reps = -1, clients = -1, baseline = -1, oc, points = 0, load_point = 0;
  o.seed = 1;
  R.base = bench_base_default(7900);
  R.repair_after = -1;
  parse_points("10x1,10x8,100x1", &o);
  opterr = 0;
  while ((oc = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (oc) {
    case 'P': parse_points(optarg, &o); points = 1; break;
    case 'n': reps = (int)parse_num("--repeats", optarg, 1, RP_REPS); break;
    case 'c': clients = (int)parse_num("--clients", optarg, 0, RP_CLIENTS_MAX); break;
    case 'b': baseline = (int)parse_num("--baseline", optarg, 1, 600); break;
    case 'l': load_point = (int)parse_num("--load-point", optarg, 1, RP_POINTS); break;
    case 'r': R.repair_after = (int)parse_num("--repair-after", optarg, 1, 86400000); break;
    case 'q': R.quick = 1; break;
    case 's': o.seed = (uint64_t)parse_num("--seed", optarg, 0, 0x7fffffffL); break;
    case 'j': o.json = 1; break;
    case 'N': o.no_note = 1; break;
    case 'd': dir = optarg; break;
    case 'p': R.base = (int)parse_num("--base-port", optarg, 1024,
                                      65535 - ENGINE_PORT_OFFSET - HTTP_PORT_OFFSET); break;
    case 'h': usage(stdout); return 0;
    default:
      die("bench repair: unknown option, or one without its value: '%s' (see auralog bench "
          "repair --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    die("bench repair: unexpected argument '%s' (see auralog bench repair --help)",
        argv[optind]);
  if (R.quick && !points)
    parse_points("4x1", &o);
  o.reps = reps > 0 ? reps : R.quick ? 1 : 3;
  o.clients = clients >= 0 ? clients : R.quick ? 2 : 4;
  o.baseline = baseline > 0 ? baseline : R.quick ? 3 : 5;
  o.limit_ms = R.quick ? 300 : LIMIT_MS;
  /* The foreground runs at --load-point (the first by default: under a
   * sustained load the spares race the writes of the hot PGs, and on a
   * small machine a large point's repair may not finish; see --help). */
  f.clients = o.clients;
  f.point = load_point ? load_point - 1 : 0;
  if (f.point >= o.npt)
    die("bench repair: --load-point %d, but --points names only %d", load_point, o.npt);
  if (dir)
    snprintf(R.dir, sizeof R.dir, "%s", dir);
  else
    bench_dir(R.dir, sizeof R.dir, "bench-repair");
  if (strchr(R.dir, '\''))
    die("bench repair: the directory name may not hold a quote: %s", R.dir);
  bench_check_dir("repair", R.dir);
  if (bench_mkdirs(R.dir) != 0)
    die("bench repair: cannot make %s: %s", R.dir, strerror(errno));
  /* The user's cluster's key, for the journal notes, before the private
   * cluster's becomes ours (bench_cluster_up). */
  static char caller_key[1200];
  snprintf(caller_key, sizeof caller_key, "%s", getenv("AURALOG_KEY") ? getenv("AURALOG_KEY")
                                                                        : "");
  R.owner = getpid();
  atexit(cleanup);
  bench_catch_signals(on_stop);

  double t0 = bench_now_us();
  cJSON *cond = cJSON_CreateObject();
  conditions(cond, &o);
  /* The machine's limits first, with nothing of ours running. */
  static struct bwlimit bw;
  rp_progress(1, "measuring disk and loopback bandwidth (%.1f s each)", o.limit_ms / 1000.0);
  bench_limit_bw(R.dir, o.limit_ms, &bw);

  for (int i = 0; i < o.npt; i++) {
    struct rpoint *p = &o.pt[i];
    int fg_here = o.clients > 0 && i == f.point;
    rp_cluster(p, fg_here, o.seed);
    int k;
    for (k = 0; k < o.reps; k++) {
      rp_progress(1, "%d PGs x %d MiB: repair %d of %d", p->pgs, p->mib, k + 1, o.reps);
      rp_repair(k, &p->r[k]);
      p->nrep = k + 1;
      if (!p->r[k].ok)
        break;              /* a repair that did not finish: the next would not start equal */
    }
    if (fg_here && (k == o.reps))
      rp_repair_loaded(k, o.baseline, o.seed, &f);
    else if (fg_here)
      snprintf(f.err, sizeof f.err, "a repair at this point did not finish");
    rp_progress(1, "%d PGs x %d MiB: stopping the cluster and removing its data", p->pgs,
                p->mib);
    rp_cluster_down();
  }
  progress_end();
  double secs = (bench_now_us() - t0) / 1e6;
  cJSON_AddNumberToObject(cond, "elapsed_s", (double)(long)(secs * 10) / 10);
  cJSON *js = report_json(&o, &bw, &f, cond);
  if (o.json) {
    char *s = cJSON_PrintUnformatted(js);
    puts(s);
    free(s);
  } else {
    print_table(&o, &bw, &f, cond, js);
  }
  fflush(stdout);
  if (!o.no_note)
    note(&o, &f, cond, caller_key[0] ? caller_key : NULL);
  cJSON_Delete(js);
  cJSON_Delete(cond);
  int ok = 1;
  for (int i = 0; i < o.npt; i++)
    ok &= oks(&o.pt[i]) == o.reps;
  return ok ? 0 : 1;
}
