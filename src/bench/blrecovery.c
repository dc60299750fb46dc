/*
 * blrecovery.c: `auralog bench recovery --binlog MODE`: how long the writer
 * takes to come back after a crash as its binlog grows, per binlog mode
 * (issue 29 step 5; seed 003).
 *
 * The claim (seed 003): with MySQL's community binlog, crash recovery reads
 * the binlog file sequentially to decide which prepared transactions roll
 * forward, so it grows with the file (303 s at 1 GB, 15,879 s at 50 GB on
 * Aurora MySQL); the enhanced binlog needs no scan (auralog: the binlog's
 * durable end follows from the VDL, its PG recovered as any other), and its
 * binlog recovery stays under a second at any size. Measured, not assumed:
 * for enhanced the expected result is recovery flat in the binlog's size.
 *
 * Per mode (--binlog LIST, in the order given), on a fresh private cluster
 * with its own engine started with `--binlog MODE`:
 *   - a table of BLR_ROWS rows of BLR_ROW_BYTES random bytes (one a page,
 *     every page in the engine's cache), then transactions that each add 1
 *     to an integer column of BLR_UPD random rows. Each row's change is an
 *     event with its whole before and after images, so a transaction packs
 *     about 1.8 MB of events for a few KB of redo: the binlog grows fast
 *     and the volume's log slowly, through the engine's ordinary commit
 *     path (SQL, change capture, the mode's commit).
 *   - at each size (--sizes, MiB of binlog, ascending, cumulative) the
 *     transactions run until the binlog holds that much: the events' bytes
 *     the engine packed (auralog_stats "binlog".events_bytes, summed over
 *     its lifetimes). With --binlog off (a baseline: no binlog) the same
 *     number of transactions as a binlog mode of this run needed, else as
 *     estimated from the rows' size.
 *   - then --repeats times: SIGKILL the engine (as `auralog fault
 *     engine-crash` does; no transaction in flight), start it again with
 *     the same arguments and time from the start to the first answered
 *     query (what a user waits), split into the engine's own figures: the
 *     volume's recovery and its open (its log: "recovered in N ms (open
 *     took M ms)") and, for community, the binlog file's scan (auralog_stats
 *     "binlog": scan_us, scan_bytes, scan_frames, rolled_forward); then
 *     once more cold: every file of the cluster's data and community's
 *     binlog file written back and dropped from the page cache first
 *     (posix_fadvise DONTNEED), so that what recovery reads comes from the
 *     disk (the warm restarts read a file just written from memory).
 * A mode the engine refuses is reported as not available, with its reason.
 * The clusters' data are removed at the end; the logs stay in --dir.
 */
#define _GNU_SOURCE         /* nftw */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "bench/blbench_int.h"
#include "lib/log.h"

#define BLR_SIZES_WHY                                                                      \
  "seed 003 measured 1, 5 and 50 GB (a 50x span) on Aurora's hardware; by default here 16 "  \
  "MiB, 128 MiB and 1 GiB (64x; --sizes chooses others): the largest is the seed's "         \
  "smallest point, which fills in about half a minute on 2 cores (~1.8 MB of events a "      \
  "transaction) and whose six copies in the binlog PG (enhanced: ~6 GiB of the nodes' "      \
  "disk) fit here; 50 GB would take ~25 minutes and 300 GB of disk. What carries over is "   \
  "the shape: whether recovery grows with the binlog, and community's scan rate (so its "    \
  "time at 50 GB)"

struct blr_run BLR;

static volatile sig_atomic_t stopped;
static void on_stop(int sig)
{
  stopped = sig;
  bench_interrupted = 1;
}

static void cluster_gone(void)
{
  if (BLR.engine > 0)
    bench_stop(BLR.engine, 5000);
  BLR.engine = -1;
  if (!BLR.up)
    return;
  bench_cluster_down(BLR.cdir);
  BLR.up = 0;
  char p[1200];
  snprintf(p, sizeof p, "%s/data", BLR.cdir);
  bench_rm_tree(p);
  bl_binlog_gone(BLR.cdir);
}

static void cleanup(void)
{
  if (getpid() == BLR.owner)
    cluster_gone();
}

static void progress(int force, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  bench_progress_v("recovery --binlog", force, fmt, ap);
  va_end(ap);
}

static void check_stop(void)
{
  if (stopped) {
    bench_progress_end();
    die("bench recovery --binlog: interrupted (signal %d); cluster stopped", (int)stopped);
  }
}

static uint64_t splitmix(uint64_t *s)
{
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* ---- the engine -------------------------------------------------------------- */

/* "recovered in N ms (open took M ms)" of the engine's last start in its
 * log (from offset from on); -1 where absent. */
static void log_times(long from, double *rec, double *open)
{
  FILE *f = fopen(BLR.log, "r");
  char line[1024];
  *rec = *open = -1;
  if (f == NULL)
    return;
  fseek(f, from, SEEK_SET);
  while (fgets(line, sizeof line, f)) {
    char *s = strstr(line, "recovered in ");
    unsigned long long a, b;
    if (s && sscanf(s, "recovered in %llu ms (open took %llu ms)", &a, &b) == 2) {
      *rec = (double)a;
      *open = (double)b;
    }
  }
  fclose(f);
}

static Env *sql(struct rpc *r, const char *q, char *why, size_t n)
{
  return bench_sql(r, q, BLR_TX_MS, why, n);
}

/* The table: BLR_ROWS rows of random bytes, in transactions of 250. */
static int setup(struct rpc *r, char *why, size_t n)
{
  char q[512];
  Env *e = sql(r, "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, pad BLOB)", why, n);
  if (e == NULL)
    return -1;
  wire_free(e);
  for (int from = 1; from <= BLR_ROWS; from += 250) {
    /* n starts at 1000000 so that n + 1 keeps its encoding: the cell keeps
     * its size and SQLite rewrites it in place, a small delta. */
    snprintf(q, sizeof q, "WITH RECURSIVE c(x) AS (SELECT %d UNION ALL SELECT x + 1 FROM c "
             "WHERE x < %d) INSERT INTO t SELECT x, 1000000, randomblob(%d) FROM c", from,
             from + 249 < BLR_ROWS ? from + 249 : BLR_ROWS, BLR_ROW_BYTES);
    if ((e = sql(r, q, why, n)) == NULL)
      return -1;
    wire_free(e);
  }
  return 0;
}

/* Transaction k: n + 1 on BLR_UPD random rows. */
static int fill_tx(struct rpc *r, uint64_t k, char *why, size_t n)
{
  static char q[BLR_UPD * 8 + 128];
  uint64_t s = BLR.seed ^ (k * 0xD1B54A32D192ED03ull);
  size_t len = (size_t)snprintf(q, sizeof q, "UPDATE t SET n = n + 1 WHERE id IN (");
  for (int i = 0; i < BLR_UPD; i++)
    len += (size_t)snprintf(q + len, sizeof q - len, "%s%llu", i ? "," : "",
                            (unsigned long long)(splitmix(&s) % BLR_ROWS + 1));
  snprintf(q + len, sizeof q - len, ")");
  Env *e = sql(r, q, why, n);
  if (e == NULL)
    return -1;
  wire_free(e);
  return 0;
}

static uint64_t disk_free(void)
{
  struct statvfs sv;
  return statvfs(BLR.dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize : 0;
}

/* Kill the engine (SIGKILL, as `auralog fault engine-crash`), start it
 * again, and time what it and a user see, into x. 0, or -1 and why. */
/* Write back and drop from the page cache every file of the cluster's
 * data (the nodes' stores and logs) and of community's binlog file: a
 * cold restart reads them from the disk, as after a machine's reboot. */
static int drop_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
  (void)sb;
  (void)f;
  int fd = flag == FTW_F ? open(p, O_RDONLY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  return 0;
}

static void drop_caches(void)
{
  char p[1200];
  snprintf(p, sizeof p, "%s/data", BLR.cdir);
  nftw(p, drop_one, 16, FTW_PHYS);
  snprintf(p, sizeof p, "%s/engine-binlog", BLR.cdir);
  nftw(p, drop_one, 16, FTW_PHYS);
}

static int crash(struct rpc *r, const struct blr_mode *md, int k, int cold, struct blr_rep *x,
                 char *why, size_t n)
{
  rpc_close(r);
  kill(BLR.engine, SIGKILL);
  int st;
  while (waitpid(BLR.engine, &st, 0) < 0 && errno == EINTR)
    ;
  BLR.engine = -1;
  if (cold)
    drop_caches();
  struct stat sb;
  long from = stat(BLR.log, &sb) == 0 ? (long)sb.st_size : 0;
  double t0 = bench_now_us();
  int rc = bl_engine_start(BLR.log, BLR.cdir, BLR.addr, BLR.coord, "bench", md->m,
                           BLR_START_MS, &BLR.engine, why, n);
  if (rc != 0)
    return -1;
  if (bench_connect(r, BLR.addr, 5000, why, n) != 0)
    return -1;
  char q[128];
  uint64_t s = BLR.seed + 77 + (uint64_t)k;
  snprintf(q, sizeof q, "SELECT n FROM t WHERE id = %llu",
           (unsigned long long)(splitmix(&s) % BLR_ROWS + 1));
  Env *e = sql(r, q, why, n);
  double t1 = bench_now_us();
  if (e == NULL || e->rows->n_rows != 1) {
    if (e)
      snprintf(why, n, "the first query after the restart found no row");
    wire_free(e);
    return -1;
  }
  wire_free(e);
  x->total_ms = (t1 - t0) / 1000;
  struct blstat b;
  if (bl_stats(r, &b, why, n) != 0)
    return -1;
  x->scan_ms = b.scan_us / 1000;
  x->scan_bytes = b.scan_bytes;
  x->scan_frames = b.scan_frames;
  x->rolled_forward = b.rolled_forward;
  /* The log line may trail the first answer by a moment. */
  for (int i = 0; i < 50; i++) {
    log_times(from, &x->recovered_ms, &x->open_ms);
    if (x->recovered_ms >= 0)
      break;
    usleep(20000);
  }
  return 0;
}

/* One mode: a fresh cluster, the engine, the table, then each size filled
 * and crashed --repeats times. */
static void run_mode(struct blr_mode *md)
{
  const char *name = bl_mode_names[md->m];
  char why[400];
  struct rpc r;
  r.fd = -1;
  snprintf(BLR.log, sizeof BLR.log, "%s/engine-%s.log", BLR.dir, name);
  unlink(BLR.log);
  progress(1, "%s: a fresh cluster in %s", name, BLR.cdir);
  BLR.up = 1;
  if (bench_fresh_cluster(BLR.cdir, BLR.base, 0, why, sizeof why) != 0)
    goto fail;
  int rc = bl_engine_start(BLR.log, BLR.cdir, BLR.addr, BLR.coord, "bench", md->m, BL_START_MS,
                           &BLR.engine, why, sizeof why);
  if (rc == 1) {
    md->refused = 1;
    snprintf(md->reason, sizeof md->reason, "%s", why);
    fprintf(stderr, "bench recovery --binlog: %s: not available: %s\n", name, why);
    cluster_gone();
    return;
  }
  if (rc != 0 || bench_connect(&r, BLR.addr, 5000, why, sizeof why) != 0 ||
      setup(&r, why, sizeof why) != 0)
    goto fail;
  double prior = 0;          /* events of the engine's earlier lifetimes */
  uint64_t k = 0;            /* fill transactions so far */
  struct blstat b;
  for (int i = 0; i < BLR.nz; i++) {
    struct blr_size *z = &md->z[i];
    z->mib = BLR.mib[i];
    double want = (double)z->mib * 1048576;
    /* Room for what this size adds: the file (community) or the binlog
     * PG's six copies (enhanced), with the nodes' overheads. */
    double more = want - (i ? md->z[i - 1].binlog_bytes : 0);
    if ((double)disk_free() < 10 * more + BLR_FREE_KEEP) {
      snprintf(z->err, sizeof z->err, "skipped: it needs ~%.0f MiB more disk and %.0f MiB "
               "are free (keeping %llu MiB)", 10 * more / 1048576,
               (double)disk_free() / 1048576, BLR_FREE_KEEP >> 20);
      break;
    }
    z->ran = 1;
    double t0 = bench_now_us();
    double tx_want = BLR.tx_at[i] > 0 ? BLR.tx_at[i] : want / (BLR.tx_bytes > 0 ? BLR.tx_bytes
                                                                           : BLR_TX_EST);
    for (;;) {
      check_stop();
      if (bl_stats(&r, &b, why, sizeof why) != 0)
        goto fail;
      z->binlog_bytes = prior + b.events_bytes;
      if (md->m != BL_OFF ? z->binlog_bytes >= want : (double)k >= tx_want)
        break;
      progress(0, "%s: filling to %d MiB: %.1f MiB, %llu transactions", name, z->mib,
               z->binlog_bytes / 1048576, (unsigned long long)k);
      if (fill_tx(&r, k, why, sizeof why) != 0)
        goto fail;
      k++;
    }
    z->txns = (double)k;
    z->fill_s = (bench_now_us() - t0) / 1e6;
    if (md->m != BL_OFF) {
      BLR.tx_at[i] = (double)k;
      BLR.tx_bytes = k ? z->binlog_bytes / (double)k : 0;
    }
    for (int j = 0; j < BLR.reps; j++) {
      check_stop();
      progress(1, "%s: %d MiB of binlog: crash and restart %d of %d", name, z->mib, j + 1,
               BLR.reps);
      prior += b.events_bytes;
      b.events_bytes = 0;    /* the new lifetime's counters start at 0 */
      if (crash(&r, md, j, 0, &z->r[j], why, sizeof why) != 0) {
        snprintf(z->err, sizeof z->err, "restart %d: %.370s", j + 1, why);
        goto fail;
      }
      z->nrep = j + 1;
    }
    /* One more, cold: the files read from the disk, not the page cache. */
    check_stop();
    progress(1, "%s: %d MiB of binlog: crash and restart, caches dropped", name, z->mib);
    if (crash(&r, md, BLR.reps, 1, &z->cold, why, sizeof why) != 0) {
      snprintf(z->err, sizeof z->err, "the cold restart: %.360s", why);
      goto fail;
    }
    z->cold_ok = 1;
  }
  rpc_close(&r);
  cluster_gone();
  return;
fail:
  if (!md->err[0])
    snprintf(md->err, sizeof md->err, "%s", why);
  if (r.fd >= 0)
    rpc_close(&r);
  cluster_gone();
}

/* ---- the command -------------------------------------------------------------- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench recovery --binlog LIST [--sizes LIST] [--repeats N] [--seed N]\n"
    "                              [--json] [--dir DIR] [--base-port N] [--no-note]\n"
    "\n"
    "Measure the writer's recovery after a crash against the size of its binlog\n"
    "(seed 003), per binlog mode: a fresh private cluster for each mode, its\n"
    "engine started with --binlog MODE; transactions that each update %d rows\n"
    "of %d bytes (about %.1f MB of row events, a few KB of redo) until the binlog\n"
    "holds each size; then, at each size, the engine killed (SIGKILL, as `auralog\n"
    "fault engine-crash`) and started again, timed to its first answered query\n"
    "and split into the volume's recovery, the engine's open and (community) the\n"
    "binlog file's scan; then once more cold (the cluster's files and the binlog\n"
    "file dropped from the page cache first). Printed beside seed 003's table\n"
    "(Aurora MySQL, 1 to 50 GB).\n"
    "A mode the engine refuses is reported as not available, with its reason.\n"
    "The table's load alone packs about %.0f MiB of events: a smaller size is\n"
    "reached by it.\n"
    "\n"
    "  --binlog LIST   modes, comma-separated: community, enhanced, and off (a\n"
    "                  baseline without a binlog, the same transactions)\n"
    "  --sizes LIST    binlog sizes in MiB, ascending, comma-separated, each\n"
    "                  1..4096 (default 16,128,1024; at most %d): seed 003's 1, 5\n"
    "                  and 50 GB scaled to what 2 cores fill in a minute (the\n"
    "                  largest needs ~12 GiB free: enhanced keeps six copies)\n"
    "  --repeats N     crashes and restarts at each size (default 3, at most %d;\n"
    "                  median and max are shown), and one cold after them\n"
    "  --seed N        seed of the rows each transaction updates (default 1)\n"
    "  --json          one JSON object on stdout instead of the table\n"
    "  --dir DIR       where the logs go, and the private clusters in DIR/cluster\n"
    "                  (emptied for each; default $AURALOG_DIR/bench-blrecovery or\n"
    "                  ~/.auralog/bench-blrecovery: a real disk, not /tmp)\n"
    "  --base-port N   coordinator on N, nodes on N+1..N+%d, engine on N+%d\n"
    "                  (default 8300; 900 above your cluster's coordinator port\n"
    "                  if it is not 7400)\n"
    "  --no-note       do not note the results in your cluster's journal (by\n"
    "                  default each mode's medians at each size go to the\n"
    "                  coordinator of the cluster in $AURALOG_DIR or ~/.auralog,\n"
    "                  if one runs: lab 13 reads them there)\n"
    "\n"
    "A size that would leave less than 2 GiB of disk free is skipped, with the\n"
    "reason. What each figure means: bench/README.md, `auralog bench recovery\n"
    "--binlog`.\n",
    BLR_UPD, BLR_ROW_BYTES, BLR_TX_EST / 1e6,
    (double)BLR_ROWS * (BLR_ROW_BYTES + 16) / 1048576, BLR_SIZES, BLR_REPS, NCOPIES,
    ENGINE_PORT_OFFSET + 1);
}

/* A whole number from lo to hi, or the command ends saying so (common.c). */
#define parse_num(opt, s, lo, hi) bench_num("bench recovery --binlog", opt, s, lo, hi)

static void parse_sizes(const char *s)
{
  BLR.nz = 0;
  char *list = strdup(s), *save = NULL;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (BLR.nz == BLR_SIZES)
      die("bench recovery --binlog: --sizes takes at most %d sizes", BLR_SIZES);
    int mib = (int)parse_num("--sizes", t, 1, 4096);
    if (BLR.nz && mib <= BLR.mib[BLR.nz - 1])
      die("bench recovery --binlog: --sizes must ascend (the binlog only grows), not '%s'", s);
    BLR.mib[BLR.nz++] = mib;
  }
  free(list);
  if (BLR.nz == 0)
    die("bench recovery --binlog: --sizes names no size");
}

static void conditions(cJSON *c)
{
  char w[400];
  bench_conditions(c, BLR.dir);
  cJSON_AddStringToObject(c, "build", bench_build_flags());
  snprintf(w, sizeof w, "a table of %d rows of %d random bytes (one a page); then per "
           "transaction UPDATE t SET n = n + 1 on %d random rows (an event with whole before "
           "and after images each)", BLR_ROWS, BLR_ROW_BYTES, BLR_UPD);
  cJSON_AddStringToObject(c, "workload", w);
  w[0] = 0;
  for (int i = 0; i < BLR.nz; i++)
    snprintf(w + strlen(w), sizeof w - strlen(w), "%s%d", i ? "," : "", BLR.mib[i]);
  cJSON_AddStringToObject(c, "sizes_mib", w);
  cJSON_AddStringToObject(c, "sizes_why", BLR_SIZES_WHY);
  cJSON_AddNumberToObject(c, "repeats", BLR.reps);
  cJSON_AddNumberToObject(c, "seed", (double)BLR.seed);
  cJSON_AddStringToObject(c, "cluster", "6 storage nodes, 2 per AZ, no replica, no backup; a "
                          "fresh one per mode, its engine started with --binlog MODE");
  cJSON_AddStringToObject(c, "crash", "SIGKILL of the engine with no transaction in flight, "
                          "then the same engine command again");
}

int bench_blrecovery_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"binlog", required_argument, 0, 'b'}, {"sizes", required_argument, 0, 'S'},
    {"repeats", required_argument, 0, 'n'}, {"seed", required_argument, 0, 's'},
    {"json", no_argument, 0, 'j'}, {"dir", required_argument, 0, 'd'},
    {"base-port", required_argument, 0, 'p'}, {"no-note", no_argument, 0, 'N'},
    {"help", no_argument, 0, 'h'}, {0}};
  int order[BL_MODES], help = 0, no_note = 0;
  const char *dir = NULL;
  BLR.reps = 3;
  BLR.seed = 1;
  BLR.base = bench_base_default(8300);
  BLR.nm = 0;
  parse_sizes("16,128,1024");
  int oc;
  opterr = 0;
  optind = 1;
  while ((oc = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (oc) {
    case 'b': BLR.nm = bl_parse_modes("bench recovery --binlog", "--binlog", optarg, order); break;
    case 'S': parse_sizes(optarg); break;
    case 'n': BLR.reps = (int)parse_num("--repeats", optarg, 1, BLR_REPS); break;
    case 's': BLR.seed = (uint64_t)parse_num("--seed", optarg, 0, 0x7fffffffL); break;
    case 'j': BLR.json = 1; break;
    case 'd': dir = optarg; break;
    case 'p': BLR.base = (int)parse_num("--base-port", optarg, 1024,
                                      65535 - ENGINE_PORT_OFFSET - REPLICA_PORT_OFFSET); break;
    case 'N': no_note = 1; break;
    case 'h': help = 1; break;
    default:
      die("bench recovery --binlog: unknown option, or one without its value: '%s' (see "
          "auralog bench recovery --binlog MODE --help)", argv[optind - 1]);
    }
  }
  if (help) {
    usage(stdout);
    return 0;
  }
  if (optind < argc)
    die("bench recovery --binlog: unexpected argument '%s'", argv[optind]);
  if (BLR.nm == 0)
    die("bench recovery --binlog: --binlog names no mode");
  for (int a = 0; a < BLR.nm; a++)
    BLR.md[a].m = order[a];
  if (dir)
    snprintf(BLR.dir, sizeof BLR.dir, "%s", dir);
  else
    bench_dir(BLR.dir, sizeof BLR.dir, "bench-blrecovery");
  snprintf(BLR.cdir, sizeof BLR.cdir, "%s/cluster", BLR.dir);
  bench_check_dir("recovery --binlog", BLR.cdir);
  if (bench_mkdirs(BLR.dir) != 0)
    die("bench recovery --binlog: cannot make %s: %s", BLR.dir, strerror(errno));
  snprintf(BLR.addr, sizeof BLR.addr, "127.0.0.1:%d", BLR.base + ENGINE_PORT_OFFSET + 1);
  snprintf(BLR.coord, sizeof BLR.coord, "127.0.0.1:%d", BLR.base);
  /* The user's cluster's key, for the journal notes, before a private
   * cluster's becomes ours. */
  static char caller_key[1200];
  snprintf(caller_key, sizeof caller_key, "%s", getenv("AURALOG_KEY") ? getenv("AURALOG_KEY")
                                                                        : "");
  BLR.owner = getpid();
  BLR.engine = -1;
  atexit(cleanup);
  bench_catch_signals(on_stop);

  double t0 = bench_now_us();
  cJSON *cond = cJSON_CreateObject();
  conditions(cond);
  int failed = 0, ran = 0;
  for (int a = 0; a < BLR.nm; a++) {
    struct blr_mode *md = &BLR.md[a];
    run_mode(md);
    check_stop();
    ran += !md->refused;
    failed |= md->err[0] != 0;
    for (int i = 0; i < BLR.nz; i++)
      failed |= md->z[i].err[0] != 0;
    if (md->err[0])
      fprintf(stderr, "bench recovery --binlog: %s: %s\n", bl_mode_names[md->m], md->err);
  }
  cleanup();
  bench_progress_end();
  if (ran == 0)
    failed = 1;
  cJSON_AddNumberToObject(cond, "elapsed_s", (double)(long)((bench_now_us() - t0) / 1e5) / 10);
  cJSON *js = blr_json(cond);
  if (BLR.json) {
    char *s = cJSON_PrintUnformatted(js);
    puts(s);
    free(s);
  } else {
    blr_table(cond);
  }
  if (!no_note)
    blr_note(cond, caller_key[0] ? caller_key : NULL);
  cJSON_Delete(js);
  cJSON_Delete(cond);
  return failed ? 1 : 0;
}
