/*
 * blbench.c: `auralog bench binlog`: what the binlog costs the writes, with
 * it off, in MySQL's way (community) and in Aurora's (enhanced), measured
 * in one run (issue 29 step 5; seed 003).
 *
 * The claim (seed 003): MySQL's community binlog is a local file the
 * engine appends and syncs serially at commit, kept consistent with the
 * redo by a two-phase commit (prepare in the redo, binlog written and
 * synced, commit record); enabling it costs "up to 50%" of throughput.
 * Aurora's enhanced binlog stores the events in the storage tier, orders
 * them there and shortens the 2PC: about 13%. In auralog (vfs/binlog.h):
 *   off        no change capture, no binlog
 *   community  prepare (the redo without its commit record, to a write
 *              quorum), the events appended to the engine's local binlog
 *              file and fdatasync'd (group commit), then the commit record
 *   enhanced   the events packed by the commit hook ride in the commit's
 *              own MTR as its last record, to the volume's binlog PG: no
 *              second log, no extra sync, one quorum round as with off
 *
 * What is measured: the write-only workload of `auralog bench` (its
 * transactions and load: workload.c), for each client count (--clients,
 * default 8 and 32) and each mode, each cell on a fresh private cluster
 * with its own engine started with `--binlog MODE`; over --rounds rounds
 * (default 3), the modes in a rotated order each round (off, community,
 * enhanced; then community, enhanced, off; ...; a mode the engine refused
 * leaves the rotation, so the others still alternate) so that drift over the run
 * (the page cache, writeback, other load) weighs on every mode alike; each
 * figure is the median of the rounds. Per cell: tx/s and commit latency
 * (p50, p99) over the measured window; CPU per transaction by role (from
 * /proc, from the end of the load to the end of the run, over every
 * transaction in it); the redo bytes shipped per transaction; and from the
 * engine's binlog counters (SELECT auralog_stats()) the events' bytes per
 * transaction and, for community, where a commit's time went (prepare,
 * binlog append + fdatasync, commit record: µs per commit) and the file's
 * fdatasyncs per commit. The machine's own limits (an fdatasync, a 4-of-6
 * flush round: limit.c) are measured first, so community's floor (two
 * quorum rounds and a flush in series) can be read beside its latency.
 *
 * A mode the engine refuses (it exits before serving) is reported as not
 * available, with what the engine said; the other modes still run and the
 * exit status is 0 if they did. blreport.c prints it all, the seed's own
 * figures (MySQL on Aurora, not ours) beside ours.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "bench/blbench_int.h"
#include "lib/log.h"

/* ---- the run's state, for cleanup ----------------------------------------------- */

static struct {
  pid_t owner, engine;
  int up;
  char cdir[1100];
} K;

static void cluster_gone(void)
{
  if (K.engine > 0)
    bench_stop(K.engine, 5000);
  K.engine = -1;
  if (!K.up)
    return;
  bench_cluster_down(K.cdir);
  K.up = 0;
  char p[1200];
  snprintf(p, sizeof p, "%s/data", K.cdir);
  bench_rm_tree(p);
  bl_binlog_gone(K.cdir);
}

static void cleanup(void)
{
  if (getpid() == K.owner)
    cluster_gone();
}

static volatile sig_atomic_t stopped;
static void on_stop(int sig)
{
  stopped = sig;
  bench_interrupted = 1;
}

static void progress(int force, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  bench_progress_v("binlog", force, fmt, ap);
  va_end(ap);
}

static void check_stop(void)
{
  if (stopped) {
    bench_progress_end();
    die("bench binlog: interrupted (signal %d); cluster stopped", (int)stopped);
  }
}

/* ---- clients --------------------------------------------------------------------- */

struct load {
  const struct workload *wl;
  const char *addr;
  _Atomic int phase;         /* 0 warm-up, 1 measuring, 2 stop */
  _Atomic uint64_t tx, measured, errors;
  pthread_mutex_t mu;
  struct hist h;
  char err[300];
};

struct cl {
  struct load *ld;
  int id;
  pthread_t th;
};

static void load_error(struct load *ld, const char *why)
{
  ld->errors++;
  pthread_mutex_lock(&ld->mu);
  if (!ld->err[0])
    snprintf(ld->err, sizeof ld->err, "%s", why);
  pthread_mutex_unlock(&ld->mu);
}

static void *client_main(void *arg)
{
  struct cl *c = arg;
  struct load *ld = c->ld;
  struct hist *h = calloc(1, sizeof *h);
  char *sql = malloc(WL_SQL_MAX), why[300];
  uint64_t s = ld->wl->seed * 1000003 + (uint64_t)c->id * 7777 + 1;
  struct rpc r;
  if (bench_connect(&r, ld->addr, 5000, why, sizeof why) != 0) {
    load_error(ld, why);
    goto out;
  }
  while (ld->phase < 2) {
    wl_tx(ld->wl, &s, sql);
    int measuring = ld->phase == 1;
    double t0 = bench_now_us();
    Env *rep = bench_sql(&r, sql, BL_TX_MS, why, sizeof why);
    double us = bench_now_us() - t0;
    if (rep == NULL) {
      load_error(ld, why);
      if (r.fd < 0 || strstr(why, "timed out") || strstr(why, "closed")) {
        rpc_close(&r);
        if (bench_connect(&r, ld->addr, 2000, why, sizeof why) != 0)
          break;
      }
      continue;
    }
    wire_free(rep);
    ld->tx++;
    /* Only transactions that started and ended inside the window count. */
    if (measuring && ld->phase == 1) {
      ld->measured++;
      hist_add(h, us);
    }
  }
  rpc_close(&r);
out:
  pthread_mutex_lock(&ld->mu);
  hist_merge(&ld->h, h);
  pthread_mutex_unlock(&ld->mu);
  free(h);
  free(sql);
  return NULL;
}

/* ---- one cell --------------------------------------------------------------------- */

struct snap {
  struct blstat bl;
  double engine, nodes, coord, node[NCOPIES];
};

static int snapshot(struct rpc *r, struct snap *s, char *why, size_t n)
{
  if (bl_stats(r, &s->bl, why, n) != 0)
    return -1;
  s->engine = bench_cpu_s(K.engine);
  s->nodes = 0;
  for (int k = 0; k < NCOPIES; k++) {
    s->node[k] = bench_cpu_s(bench_member_pid(K.cdir, bench_node_ids[k]));
    s->nodes += s->node[k];
  }
  s->coord = bench_cpu_s(bench_member_pid(K.cdir, "coord"));
  return 0;
}

static void figures(struct blrun *x, const struct snap *a, const struct snap *b)
{
  double tx = x->tx_all ? (double)x->tx_all : 1;
  x->cpu_engine = (b->engine - a->engine) * 1000 / tx;
  x->cpu_nodes = (b->nodes - a->nodes) * 1000 / tx;
  x->cpu_coord = (b->coord - a->coord) * 1000 / tx;
  for (int k = 0; k < NCOPIES; k++)
    x->cpu_node[k] = (b->node[k] - a->node[k]) * 1000 / tx;
  x->redo_bytes = (b->bl.redo_bytes - a->bl.redo_bytes) / tx;
  x->bl_txns = b->bl.txns - a->bl.txns;
  double bt = x->bl_txns > 0 ? x->bl_txns : 1;
  x->events = (b->bl.events_bytes - a->bl.events_bytes) / bt;
  x->file_bytes = (b->bl.file_bytes - a->bl.file_bytes) / bt;
  x->fsyncs = (b->bl.fsyncs - a->bl.fsyncs) / bt;
  x->prepare_us = (b->bl.prepare_us - a->bl.prepare_us) / bt;
  x->binlog_us = (b->bl.binlog_us - a->bl.binlog_us) / bt;
  x->commit_us = (b->bl.commit_us - a->bl.commit_us) / bt;
  snprintf(x->bl_mode, sizeof x->bl_mode, "%s", b->bl.mode);
}

/* Mode m at o->clients[ci] in round i: a fresh cluster, the engine in
 * mode m, the load, warm-up and window; into o->r[i][ci][m]. */
static void run_cell(struct blopts *o, int i, int ci, int m, int seq)
{
  struct blrun *x = &o->r[i][ci][m];
  const char *mode = bl_mode_names[m];
  int clients = o->clients[ci];
  char why[400], addr[64], coord[64], log[1300];
  struct rpc r;
  r.fd = -1;
  memset(x, 0, sizeof *x);
  x->ran = 1;
  x->seq = seq;
  snprintf(addr, sizeof addr, "127.0.0.1:%d", o->base + ENGINE_PORT_OFFSET + 1);
  snprintf(coord, sizeof coord, "127.0.0.1:%d", o->base);
  snprintf(log, sizeof log, "%s/engine-%s-c%d-r%d.log", o->dir, mode, clients, i + 1);
  unlink(log);
  progress(1, "round %d of %d, %d clients, binlog %s: a fresh cluster", i + 1, o->rounds,
           clients, mode);
  K.up = 1;
  if (bench_fresh_cluster(o->cdir, o->base, 0, why, sizeof why) != 0)
    goto fail;
  int rc = bl_engine_start(log, o->cdir, addr, coord, "bench", m, BL_START_MS, &K.engine, why,
                           sizeof why);
  if (rc == 1) {
    /* Refused: not a failure of the run; the mode is skipped from now on. */
    o->refused[m] = 1;
    snprintf(o->reason[m], sizeof o->reason[m], "%s", why);
    x->ran = 0;
    fprintf(stderr, "bench binlog: %s: not available: %s\n", mode, why);
    return;
  }
  if (rc != 0 || bench_connect(&r, addr, 5000, why, sizeof why) != 0)
    goto fail;
  progress(1, "round %d of %d, %d clients, binlog %s: loading %d x %d rows", i + 1, o->rounds,
           clients, mode, o->wl.tables, o->wl.rows);
  double t0 = bench_now_us();
  if (wl_load(&o->wl, &r, why, sizeof why) != 0)
    goto fail;
  x->load_s = (bench_now_us() - t0) / 1e6;
  /* Write back every dirty page (the load's, an earlier cell's), so no
   * cell pays for another's writeback. */
  sync();
  struct snap a, b;
  if (snapshot(&r, &a, why, sizeof why) != 0)
    goto fail;

  static struct load ld;
  memset(&ld, 0, sizeof ld);
  ld.wl = &o->wl;
  ld.addr = addr;
  pthread_mutex_init(&ld.mu, NULL);
  struct cl *cs = calloc((size_t)clients, sizeof *cs);
  for (int k = 0; k < clients; k++) {
    cs[k] = (struct cl){&ld, k, 0};
    pthread_create(&cs[k].th, NULL, client_main, &cs[k]);
  }
  double start = bench_now_us(), mstart = start, last = start;
  uint64_t lasttx = 0;
  double rate = 0;
  for (;;) {
    usleep(100000);
    double now = bench_now_us(), t = (now - start) / 1e6;
    if (ld.phase == 0 && t >= o->warmup) {
      ld.phase = 1;
      mstart = now;
    }
    if (t >= o->warmup + o->duration || bench_interrupted)
      break;
    if (now - last >= 1e6) {
      rate = (double)(ld.tx - lasttx) / ((now - last) / 1e6);
      lasttx = ld.tx;
      last = now;
      progress(0, "round %d of %d, %d clients, binlog %s: %s %.0f/%d s, %.0f tx/s", i + 1,
               o->rounds, clients, mode, ld.phase ? "measuring" : "warm-up", t,
               o->warmup + o->duration, rate);
    }
  }
  ld.phase = 2;
  double mend = bench_now_us();
  for (int k = 0; k < clients; k++)
    pthread_join(cs[k].th, NULL);
  free(cs);
  pthread_mutex_destroy(&ld.mu);
  check_stop();
  if (snapshot(&r, &b, why, sizeof why) != 0)
    goto fail;
  x->secs = (mend - mstart) / 1e6;
  x->h = ld.h;
  x->tx_all = ld.tx;
  x->errors = ld.errors;
  x->tx_s = x->secs > 0 ? (double)ld.measured / x->secs : 0;
  figures(x, &a, &b);
  if (ld.errors)
    snprintf(x->err, sizeof x->err, "%llu failed transactions; the first: %.300s",
             (unsigned long long)ld.errors, ld.err);
  else if (ld.measured == 0)
    snprintf(x->err, sizeof x->err, "no transaction finished in the window");
  else if (strcmp(b.bl.mode, mode) != 0)
    snprintf(x->err, sizeof x->err, "the engine says its binlog is %s, not %s", b.bl.mode,
             mode);
  rpc_close(&r);
  bench_stop(K.engine, 10000);
  K.engine = -1;
  return;
fail:
  snprintf(x->err, sizeof x->err, "%s", why);
  if (r.fd >= 0)
    rpc_close(&r);
}

/* ---- the journal ----------------------------------------------------------------- */

/* Each mode at each client count, the medians over the rounds, as one
 * system of workload "binlog-foreground" (note.c): lab 13 reads them from
 * the journal of the user's cluster. */
static void note(const struct blopts *o, cJSON *cond, const char *key)
{
  static Auralog__BenchNote b[BL_MODES * BL_NCLIENTS];
  static char sys[BL_MODES * BL_NCLIENTS][32];
  int n = 0;
  for (int ci = 0; ci < o->nclients; ci++)
    for (int j = 0; j < o->nmodes; j++) {
      int m = o->order[j], runs = 0;
      uint64_t errors = 0;
      for (int i = 0; i < o->rounds; i++)
        if (bl_run_ok(&o->r[i][ci][m])) {
          runs++;
          errors += o->r[i][ci][m].errors;
        }
      if (runs == 0)
        continue;
      Auralog__BenchNote x = AURALOG__BENCH_NOTE__INIT;
      snprintf(sys[n], sizeof sys[n], "auralog-binlog-%s", bl_mode_names[m]);
      x.workload = "binlog-foreground";
      x.system = sys[n];
      x.clients = (uint32_t)o->clients[ci];
      x.group = 1;
      x.mean_group = 1;
      x.duration_s = (uint32_t)o->duration;
      x.warmup_s = (uint32_t)o->warmup;
      x.tables = (uint32_t)o->wl.tables;
      x.rows = (uint32_t)o->wl.rows;
      x.reads = "durable";
      x.tx_per_s = bl_med(o, m, ci, BF_TXS, NULL);
      x.p50_ms = bl_med(o, m, ci, BF_P50, NULL);
      x.p99_ms = bl_med(o, m, ci, BF_P99, NULL);
      /* community's stages, us per commit (0 in the other modes) */
      double st[3] = {bl_med(o, m, ci, BF_PREPARE, NULL), bl_med(o, m, ci, BF_BINLOG, NULL),
                      bl_med(o, m, ci, BF_COMMIT, NULL)};
      for (int k = 0; k < 3; k++)
        st[k] = isfinite(st[k]) && st[k] > 0 ? st[k] : 0;
      x.prepare_us = st[0];
      x.binlog_us = st[1];
      x.commit_us = st[2];
      x.errors = errors;
      b[n++] = x;
    }
  if (n)
    bench_note_each(b, n, cond, key);
}

/* ---- the command ----------------------------------------------------------------- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench binlog [--clients LIST] [--modes LIST] [--duration S] [--warmup S]\n"
    "                            [--rounds N] [--tables T] [--rows R] [--seed N] [--json]\n"
    "                            [--no-limit] [--no-note] [--dir DIR] [--base-port N]\n"
    "\n"
    "Measure what the binlog (seed 003) costs the writes: the write-only workload of\n"
    "`auralog bench` with the engine's binlog off, community (MySQL's way: a local\n"
    "binlog file appended and fdatasync'd at commit in a two-phase commit with the\n"
    "redo) and enhanced (Aurora's: the events ride in the commit's own MTR to a\n"
    "binlog PG in the storage tier), at each client count, in one run. Each cell\n"
    "runs on a fresh private cluster; the modes are rotated over --rounds so that\n"
    "drift weighs on all alike, and each figure is the median of the rounds.\n"
    "Printed: tx/s, commit p50 and p99, each mode against off, CPU ms per\n"
    "transaction by role, redo bytes shipped per transaction, the events' bytes\n"
    "per transaction, and for community where a commit's time goes (prepare,\n"
    "binlog append + fdatasync, commit record); beside them this machine's limits\n"
    "(an fdatasync, a 4-of-6 flush round) and the seed's own figures (MySQL on\n"
    "Aurora's hardware, not ours). A mode the engine refuses is reported as not\n"
    "available, with its reason, and the others still run. About 5 minutes on 2\n"
    "cores with the defaults (3 rounds x 2 client counts x 3 modes, ~16 s a cell).\n"
    "\n"
    "  --clients LIST  client counts, ascending, comma-separated, each 1..256\n"
    "                  (default 8,32; at most %d)\n"
    "  --modes LIST    of off, community, enhanced (default all three)\n"
    "  --duration S    measured seconds of each cell (default 10)\n"
    "  --warmup S      seconds run before measuring (default 2)\n"
    "  --rounds N      rounds, each running every cell once (default 3, at most %d)\n"
    "  --tables T      tables (default 4)\n"
    "  --rows R        rows per table (default 10000)\n"
    "  --seed N        random seed of data and transactions (default 1)\n"
    "  --json          one JSON object on stdout instead of the table\n"
    "  --no-limit      do not measure the machine's limits first (saves ~10 s)\n"
    "  --no-note       do not note the results in your cluster's journal (by\n"
    "                  default each mode's medians go to the coordinator of the\n"
    "                  cluster in $AURALOG_DIR or ~/.auralog, if one runs)\n"
    "  --dir DIR       where the logs go, and the private clusters in DIR/cluster\n"
    "                  (emptied for each; default $AURALOG_DIR/bench-binlog or\n"
    "                  ~/.auralog/bench-binlog: a real disk, not /tmp)\n"
    "  --base-port N   coordinator on N, nodes on N+1..N+%d, engine on N+%d\n"
    "                  (default 8100; 700 above your cluster's coordinator port\n"
    "                  if it is not 7400)\n"
    "\n"
    "What each figure means: bench/README.md, `auralog bench binlog`.\n",
    BL_NCLIENTS, BL_ROUNDS_MAX, NCOPIES, ENGINE_PORT_OFFSET + 1);
}

/* A whole number from lo to hi, or the command ends saying so (common.c). */
#define parse_num(opt, s, lo, hi) bench_num("bench binlog", opt, s, lo, hi)

static void parse_clients(const char *s, struct blopts *o)
{
  o->nclients = 0;
  char *list = strdup(s), *save = NULL;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->nclients == BL_NCLIENTS)
      die("bench binlog: --clients takes at most %d counts", BL_NCLIENTS);
    int c = (int)parse_num("--clients", t, 1, 256);
    if (o->nclients && c <= o->clients[o->nclients - 1])
      die("bench binlog: --clients must ascend, not '%s'", s);
    o->clients[o->nclients++] = c;
  }
  free(list);
  if (o->nclients == 0)
    die("bench binlog: --clients names no count");
}

static void conditions(cJSON *c, const struct blopts *o)
{
  char w[600];
  bench_conditions(c, o->dir);
  cJSON_AddStringToObject(c, "build", bench_build_flags());
  snprintf(w, sizeof w, "%s, %d tables x %d rows (sysbench's shape: 2 UPDATEs, 1 DELETE, "
           "1 INSERT a transaction, one request each)", wl_names[o->wl.kind], o->wl.tables,
           o->wl.rows);
  cJSON_AddStringToObject(c, "workload", w);
  snprintf(w, sizeof w, "%d storage nodes, 2 per AZ, no replica, no backup; a fresh one for "
           "each cell, its engine started with --binlog MODE", NCOPIES);
  cJSON_AddStringToObject(c, "cluster", w);
  snprintf(w, sizeof w, "%d s measured after %d s of warm-up, each cell", o->duration,
           o->warmup);
  cJSON_AddStringToObject(c, "durations", w);
  w[0] = 0;
  for (int k = 0; k < o->nclients; k++)
    snprintf(w + strlen(w), sizeof w - strlen(w), "%s%d", k ? "," : "", o->clients[k]);
  cJSON_AddStringToObject(c, "clients", w);
  cJSON_AddNumberToObject(c, "rounds", o->rounds);
  cJSON_AddStringToObject(c, "order", "each round the modes in a rotated order (round 1 as "
                          "given, round 2 from the second, ...; a refused mode left out of "
                          "the rotation); figures are medians of the rounds");
  cJSON_AddNumberToObject(c, "seed", (double)o->wl.seed);
}

int bench_binlog_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"clients", required_argument, 0, 'c'}, {"modes", required_argument, 0, 'm'},
    {"duration", required_argument, 0, 'd'}, {"warmup", required_argument, 0, 'w'},
    {"rounds", required_argument, 0, 'r'}, {"tables", required_argument, 0, 't'},
    {"rows", required_argument, 0, 'R'}, {"seed", required_argument, 0, 's'},
    {"json", no_argument, 0, 'j'}, {"no-limit", no_argument, 0, 'L'},
    {"no-note", no_argument, 0, 'N'}, {"dir", required_argument, 0, 'D'},
    {"base-port", required_argument, 0, 'p'}, {"help", no_argument, 0, 'h'}, {0}};
  static struct blopts o;
  o.wl = (struct workload){WL_WRITE_ONLY, 4, 10000, 1};
  o.duration = 10;
  o.warmup = 2;
  o.rounds = 3;
  o.base = bench_base_default(8100);
  parse_clients("8,32", &o);
  o.nmodes = bl_parse_modes("bench binlog", "--modes", "off,community,enhanced", o.order);
  const char *dir = NULL;
  int oc;
  opterr = 0;
  while ((oc = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (oc) {
    case 'c': parse_clients(optarg, &o); break;
    case 'm': o.nmodes = bl_parse_modes("bench binlog", "--modes", optarg, o.order); break;
    case 'd': o.duration = (int)parse_num("--duration", optarg, 1, 3600); break;
    case 'w': o.warmup = (int)parse_num("--warmup", optarg, 0, 600); break;
    case 'r': o.rounds = (int)parse_num("--rounds", optarg, 1, BL_ROUNDS_MAX); break;
    case 't': o.wl.tables = (int)parse_num("--tables", optarg, 1, 64); break;
    case 'R': o.wl.rows = (int)parse_num("--rows", optarg, 100, 10000000); break;
    case 's': o.wl.seed = (uint64_t)parse_num("--seed", optarg, 0, 0x7fffffffL); break;
    case 'j': o.json = 1; break;
    case 'L': o.no_limit = 1; break;
    case 'N': o.no_note = 1; break;
    case 'D': dir = optarg; break;
    case 'p': o.base = (int)parse_num("--base-port", optarg, 1024,
                                      65535 - ENGINE_PORT_OFFSET - REPLICA_PORT_OFFSET); break;
    case 'h': usage(stdout); return 0;
    default:
      die("bench binlog: unknown option, or one without its value: '%s' (see auralog bench "
          "binlog --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    die("bench binlog: unexpected argument '%s' (see auralog bench binlog --help)",
        argv[optind]);
  if (dir)
    snprintf(o.dir, sizeof o.dir, "%s", dir);
  else
    bench_dir(o.dir, sizeof o.dir, "bench-binlog");
  /* The private clusters' directory is emptied for each cell: never one
   * that holds something else. */
  snprintf(o.cdir, sizeof o.cdir, "%s/cluster", o.dir);
  bench_check_dir("binlog", o.cdir);
  if (bench_mkdirs(o.dir) != 0)
    die("bench binlog: cannot make %s: %s", o.dir, strerror(errno));
  snprintf(K.cdir, sizeof K.cdir, "%s", o.cdir);
  /* The user's cluster's key, for the journal notes, before the private
   * cluster's becomes ours (bench_cluster_up). */
  static char caller_key[1200];
  snprintf(caller_key, sizeof caller_key, "%s", getenv("AURALOG_KEY") ? getenv("AURALOG_KEY")
                                                                        : "");
  K.owner = getpid();
  K.engine = -1;
  atexit(cleanup);
  bench_catch_signals(on_stop);

  double t0 = bench_now_us();
  cJSON *cond = cJSON_CreateObject();
  conditions(cond, &o);
  if (o.no_limit) {
    snprintf(o.lim.err, sizeof o.lim.err, "not measured (--no-limit)");
  } else {
    progress(1, "measuring this machine's limits in %s/limit", o.dir);
    if (bench_limit(o.dir, &o.lim) != 0)
      fprintf(stderr, "bench binlog: the machine's limits: not measured: %s\n", o.lim.err);
  }
  check_stop();
  int failed = 0, seq = 0;
  for (int i = 0; i < o.rounds; i++)
    for (int ci = 0; ci < o.nclients; ci++) {
      /* The modes not refused so far, rotated by the round: each takes
       * each place in turn (with one refused, the other two alternate). */
      int av[BL_MODES], nav = 0;
      for (int j = 0; j < o.nmodes; j++)
        if (!o.refused[o.order[j]])
          av[nav++] = o.order[j];
      for (int j = 0; j < nav; j++) {
        int m = av[(i + j) % nav];
        if (o.refused[m])
          continue;
        run_cell(&o, i, ci, m, seq + 1);
        check_stop();
        struct blrun *x = &o.r[i][ci][m];
        if (!x->ran)
          continue;
        seq++;
        failed |= x->err[0] != 0;
        if (x->err[0])
          fprintf(stderr, "bench binlog: round %d, %d clients, %s: %s\n", i + 1,
                  o.clients[ci], bl_mode_names[m], x->err);
        else
          fprintf(stderr, "bench binlog: round %d, %3d clients, %-9s %8.0f tx/s, p99 %.2f "
                  "ms\n", i + 1, o.clients[ci], bl_mode_names[m], x->tx_s,
                  hist_ms(&x->h, .99));
      }
    }
  cleanup();
  bench_progress_end();
  int ran = 0;
  for (int j = 0; j < o.nmodes; j++)
    ran += !o.refused[o.order[j]];
  if (ran == 0)
    failed = 1;            /* nothing was measured: not a result */
  cJSON_AddNumberToObject(cond, "elapsed_s", (double)(long)((bench_now_us() - t0) / 1e5) / 10);
  cJSON *js = bl_report_json(&o, cond);
  if (o.json) {
    char *s = cJSON_PrintUnformatted(js);
    puts(s);
    free(s);
  } else {
    bl_report_table(&o, cond);
  }
  fflush(stdout);
  if (!o.no_note)
    note(&o, cond, caller_key[0] ? caller_key : NULL);
  cJSON_Delete(js);
  cJSON_Delete(cond);
  return failed ? 1 : 0;
}
