/*
 * recovery.c: `auralog bench recovery`: how long the writer takes to come
 * back after a crash, as the log it leaves behind grows, beside stock
 * SQLite replaying its WAL after the same transactions.
 *
 * The claim (paper §4.3): a traditional database replays its redo log
 * since the last checkpoint before it can serve, so recovery grows with
 * the log; in Aurora the storage nodes apply redo on demand, so a new
 * writer only asks a read quorum of each protection group how far its
 * log is complete, computes the VDL, truncates above it and opens. That
 * costs a few round trips per PG, whatever the length of the log. The
 * nodes coalesce records into page versions in the background and GC
 * frees them (node/bg.c), but recovery reads neither records nor
 * versions: what it costs does not depend on how much of the log the
 * nodes have materialized, and SQLite beside it replays its whole WAL.
 *
 * One volume, cumulative. A table of ROWS rows of about ROW_BYTES bytes
 * (a few rows per page, so random rows fall on different pages) is made
 * once; then each transaction adds 1 to one integer column of UPD random
 * rows, chosen from the seed: about UPD records per commit (one per
 * changed page), each a few bytes of page delta, so a million records
 * cost seconds, not hours. At each log length asked for:
 *
 *   auralog  the engine runs transactions until it has shipped at least
 *            that many records (counted by LSN: one per record, each
 *            engine lifetime starting from the next_lsn its recovery
 *            left; checked against the engine's own `records` counter
 *            before every crash). Then, REPEATS times: SIGKILL the engine
 *            (`auralog fault engine-crash`), start it again (`auralog
 *            cluster up`), and take the engine's own recovery time
 *            (recovery_ms in the status: its quorum reads and truncation),
 *            its open time (from its log: recovery plus SQLite's first
 *            schema read) and the time from `cluster up` to the first
 *            answered query (what a user waits).
 *
 *   sqlite   a child process writes the same transactions into a local
 *            file in WAL mode (page size 4096, synchronous=FULL,
 *            wal_autocheckpoint=0, so the WAL keeps every frame) and
 *            kills itself after its last commit. We time open + first
 *            query: that is when SQLite rebuilds its wal-index by reading
 *            and checksumming every frame of the WAL, its replay. The
 *            measuring connection must not checkpoint at close
 *            (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE), or the next size would
 *            start from an empty WAL. The WAL was just written, so the
 *            warm figure reads it from the OS page cache; the cold one
 *            first drops it (posix_fadvise DONTNEED).
 *
 * The cluster is private (its own directory and ports); the nodes' data
 * and the SQLite files are removed at the end, the logs kept.
 *
 * Files (recovery_int.h): this one runs the benchmark and reports it;
 * recsys.c has the workload and the two systems under it.
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
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/recovery_int.h"
#include "bench/blbench_int.h"
#include "lib/log.h"
#include "param.h"

/* What cleanup needs, also on die()'s exit. */
struct recovery_run B;

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
  stopped = sig;
}

/* Stop the cluster and remove the big files: the nodes' lmdb data and the
 * SQLite database. Runs at exit, also after die(); not in children. */
static void cleanup(void)
{
  char p[1300];
  if (getpid() != B.owner)
    return;
  if (B.upid > 0) {
    /* Let it finish (it gives up by itself), or it could start members
     * after `cluster down` has stopped them. */
    unsigned long long until = now_ms() + CLUSTER_WAIT_MS + 5000;
    int gone;
    while (!(gone = bench_exited(B.upid)) && now_ms() < until)
      usleep(20000);
    if (!gone)
      bench_stop(B.upid, 0);
    B.upid = 0;
  }
  if (B.up) {
    bench_cluster_down(B.dir);
    B.up = 0;
    snprintf(p, sizeof p, "%s/data", B.dir);
    bench_rm_tree(p);
  }
  if (B.sqdir[0]) {
    bench_rm_tree(B.sqdir);
    B.sqdir[0] = 0;
  }
}

/* ---- progress -------------------------------------------------------------- */

/* One line on stderr (common.c bench_progress_v). */
void progress(int force, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  bench_progress_v("recovery", force, fmt, ap);
  va_end(ap);
}

static void progress_end(void)
{
  bench_progress_end();
}

void check_stop(void)
{
  if (stopped) {
    progress_end();
    die("bench recovery: interrupted (signal %d); cluster stopped", (int)stopped);
  }
}

/* ---- medians --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double median(const double *v, int n)
{
  double s[MAXREP];
  if (n <= 0)
    return 0;
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

double maxof(const double *v, int n)
{
  double m = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > m)
      m = v[i];
  return m;
}

/* ---- options and output ----------------------------------------------------- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench recovery [--records LIST | --pgs LIST] [--repeats N] [--seed N]\n"
    "                              [--json] [--dir DIR] [--base-port N]\n"
    "\n"
    "Measure how long the engine takes to recover after a crash (SIGKILL) as\n"
    "the redo log it has written grows, beside stock SQLite\n"
    "replaying its WAL after the same transactions. Starts a private cluster\n"
    "(coordinator, six nodes, engine) and stops it at the end. Transactions\n"
    "update %d random rows of a %d-row table: about %d records each.\n"
    "\n"
    "  --records LIST  log lengths at which to crash, ascending, comma-separated\n"
    "                  (k and M suffixes allowed; default 10000,100000,1000000)\n"
    "  --pgs LIST      instead: volume sizes in protection groups at which to\n"
    "                  crash, ascending (e.g. 10,100,1000): recovery against the\n"
    "                  volume's size, not its log (no SQLite beside it)\n"
    "  --repeats N     crashes and restarts (sqlite: replays) at each length\n"
    "                  (default 3; median and max are shown)\n"
    "  --seed N        seed of the rows each transaction updates (default 1)\n"
    "  --json          one JSON object instead of a table\n"
    "  --dir DIR       the cluster's directory, emptied first (default\n"
    "                  $AURALOG_DIR/bench-recovery or ~/.auralog/bench-recovery)\n"
    "  --base-port N   coordinator on N, nodes on N+1..N+6, engine on N+%d\n"
    "                  (default 7700; 300 above your cluster's coordinator port\n"
    "                  if it is not 7400)\n"
    "\n"
    "SQLite needs about 4 KiB of disk per record (a WAL frame per page); a\n"
    "length that would leave less than 2 GB free is skipped, with the reason.\n"
    "\n"
    "       auralog bench recovery --binlog MODE[,MODE] [--sizes LIST] ...\n"
    "recovery against the binlog's size instead, per binlog mode (seed 003);\n"
    "see `auralog bench recovery --binlog enhanced --help`.\n",
    UPD, ROWS, UPD, ENGINE_PORT_OFFSET);
}

/* "10,100,1000" into v (ascending, 1..MAX_PGS); count, or die. */
static int parse_pgs(const char *s, uint32_t *v)
{
  int n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    unsigned long x = *p >= '0' && *p <= '9' ? strtoul(p, &end, 10) : 0;
    if (x < 1 || x > MAX_PGS || errno || (*end != ',' && *end))
      die("bench recovery: --pgs wants PG counts of 1..%d separated by commas, like "
          "10,100,1000, not '%s'", MAX_PGS, s);
    if (n == NSIZES)
      die("bench recovery: --pgs takes at most %d sizes", NSIZES);
    if (n && x <= v[n - 1])
      die("bench recovery: --pgs must ascend (a volume only grows): '%s'", s);
    v[n++] = (uint32_t)x;
    if (*end == 0)
      return n;
    p = end + 1;
  }
}

/* "10000,100k,1M" into v (ascending); count, or die. */
static int parse_sizes(const char *s, uint64_t *v)
{
  int n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    if (*p < '0' || *p > '9')
      die("bench recovery: --records wants record counts like 10000,100k,1M, not '%s'", s);
    unsigned long long x = strtoull(p, &end, 10);
    if (*end == 'k' || *end == 'K')
      x *= 1000, end++;
    else if (*end == 'm' || *end == 'M')
      x *= 1000000, end++;
    if (errno || x < 1 || x > 100000000 || (*end != ',' && *end))
      die("bench recovery: --records wants counts of 1..100M separated by commas, not '%s'", s);
    if (n == NSIZES)
      die("bench recovery: --records takes at most %d lengths", NSIZES);
    if (n && x <= v[n - 1])
      die("bench recovery: --records must ascend (the log only grows): '%s'", s);
    v[n++] = x;
    if (*end == 0)
      return n;
    p = end + 1;
  }
}

/* A whole number from lo to hi, or the command ends saying so (common.c). */
#define parse_num(opt, s, lo, hi) bench_num("bench recovery", opt, s, lo, hi)

static void add_num_or_null(cJSON *o, const char *k, int ok, double v)
{
  if (ok)
    cJSON_AddNumberToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

static void conditions(cJSON *c, uint64_t seed, int reps, uint32_t page_size)
{
  char w[256];
  bench_conditions(c, B.dir);
  snprintf(w, sizeof w, "setup: %d rows of ~%d bytes (%d a page); then per transaction "
           "UPDATE t SET n = n + 1 on %d random rows", ROWS, ROW_BYTES, 4, UPD);
  cJSON_AddStringToObject(c, "workload", w);
  cJSON_AddNumberToObject(c, "seed", (double)seed);
  cJSON_AddNumberToObject(c, "page_size", page_size);
  cJSON_AddNumberToObject(c, "repeats", reps);
  cJSON_AddStringToObject(c, "record_count", "redo records the engine shipped (one per changed "
                          "page per commit), summed over engine lifetimes; all durable");
  cJSON_AddStringToObject(c, "materialized", "the nodes coalesce records into page versions "
                          "in the background; recovery reads neither, so it does not matter "
                          "how much is materialized at the crash");
  cJSON_AddStringToObject(c, "crash", "SIGKILL of the engine (auralog fault engine-crash), "
                          "restart with auralog cluster up; SQLite: SIGKILL of the writer "
                          "after its last commit");
  cJSON_AddStringToObject(c, "auralog_recovery_ms", "the engine's own measure: quorum reads "
                          "of every PG, VDL, truncation (status recovery_ms)");
  cJSON_AddStringToObject(c, "auralog_open_ms", "the engine's open: recovery plus the first "
                          "schema read (its log)");
  cJSON_AddStringToObject(c, "auralog_first_query_ms", "from starting auralog cluster up to "
                          "the first answered point query");
  cJSON_AddStringToObject(c, "sqlite", "local file, WAL mode, synchronous=FULL, "
                          "wal_autocheckpoint=0, same transactions");
  cJSON_AddStringToObject(c, "sqlite_replay_ms", "open + first point query (wal-index "
                          "rebuilt from every frame); warm: the WAL was just written and "
                          "is in the OS page cache; cold: posix_fadvise DONTNEED first");
}

static void print_table(cJSON *cond, struct size *zs, int nz, double secs)
{
  printf("auralog bench recovery: recovery after a crash against the length of the log written\n");
  printf("conditions:\n");
  cJSON *it;
  cJSON_ArrayForEach(it, cond) {
    if (cJSON_IsString(it))
      printf("  %-22s %s\n", it->string, it->valuestring);
    else
      printf("  %-22s %g\n", it->string, it->valuedouble);
  }
  printf("\n%10s %6s | %9s %9s %8s %9s %9s | %10s %8s %9s %9s %9s\n", "records", "txns",
         "recov_ms", "recov_max", "open_ms", "first_ms", "first_max", "wal_frames",
         "wal_MB", "replay_ms", "replay_max", "cold_ms");
  for (int i = 0; i < nz; i++) {
    struct size *z = &zs[i];
    printf("%10llu %6llu | %9.0f %9.0f %8.0f %9.1f %9.1f | ", (unsigned long long)z->records,
           (unsigned long long)z->txns, median(z->rec, z->nrep), maxof(z->rec, z->nrep),
           median(z->open, z->nrep), median(z->first, z->nrep), maxof(z->first, z->nrep));
    if (z->sq)
      printf("%10llu %8.1f %9.1f %9.1f %9.1f\n", (unsigned long long)z->frames,
             (double)z->wal_bytes / 1048576, median(z->warm, z->nrep),
             maxof(z->warm, z->nrep), z->cold);
    else
      printf("%s\n", z->sq_why);
  }
  printf("\n  txns       transactions run so far (the setup counts as one)\n"
         "  recov_ms   the engine's recovery (status recovery_ms): median, max of %d crashes\n"
         "  open_ms    the engine's open: recovery + first schema read (its log), median\n"
         "  first_ms   `cluster up` to the first answered query: median, max\n"
         "  replay_ms  SQLite open + first query, WAL in the page cache: median, max\n"
         "  cold_ms    the same once after dropping the files from the page cache\n\n",
         zs[0].nrep);
  if (nz > 1)
    printf("auralog recovery went from %.0f ms at %llu records to %.0f ms at %llu "
           "(target: flat, under 1000 ms at 1M)\n", median(zs[0].rec, zs[0].nrep),
           (unsigned long long)zs[0].records, median(zs[nz - 1].rec, zs[nz - 1].nrep),
           (unsigned long long)zs[nz - 1].records);
  printf("run took %.0f s\n", secs);
}

int bench_recovery_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"records", required_argument, 0, 'r'}, {"repeats", required_argument, 0, 'n'},
    {"pgs", required_argument, 0, 'g'},
    {"seed", required_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
    {"dir", required_argument, 0, 'd'}, {"base-port", required_argument, 0, 'p'},
    {"help", no_argument, 0, 'h'}, {0}};
  uint64_t want[NSIZES], seed = 1;
  uint32_t pgs[NSIZES];
  int npg = 0, by_records = 0;
  int nz = parse_sizes("10000,100000,1000000", want), json = 0, reps = 3, base = bench_base_default(7700), o;
  const char *dir = NULL;
  /* --binlog: recovery against the binlog's size (blrecovery.c). */
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--binlog") || !strncmp(argv[i], "--binlog=", 9))
      return bench_blrecovery_main(argc, argv);
  /* argv[0] is "recovery" (bench/bench.c dispatches). Errors are ours,
   * in one line. */
  opterr = 0;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'r': nz = parse_sizes(optarg, want); by_records = 1; break;
    case 'g': npg = parse_pgs(optarg, pgs); break;
    case 'n': reps = (int)parse_num("--repeats", optarg, 1, MAXREP); break;
    case 's': seed = (uint64_t)parse_num("--seed", optarg, 0, 0x7fffffffL); break;
    case 'j': json = 1; break;
    case 'd': dir = optarg; break;
    case 'p': base = (int)parse_num("--base-port", optarg, 1024,
                                    65535 - ENGINE_PORT_OFFSET - HTTP_PORT_OFFSET); break;
    case 'h': usage(stdout); return 0;
    default:
      die("bench recovery: unknown option, or one without its value: '%s' (see auralog "
          "bench recovery --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    die("bench recovery: unexpected argument '%s' (see auralog bench recovery --help)",
        argv[optind]);
  if (npg && by_records)
    die("bench recovery: --records and --pgs measure different things: give one");
  if (dir)
    snprintf(B.dir, sizeof B.dir, "%s", dir);
  else
    bench_dir(B.dir, sizeof B.dir, "bench-recovery");
  if (strchr(B.dir, '\''))
    die("bench recovery: the directory name may not hold a quote: %s", B.dir);
  bench_check_dir("recovery", B.dir);
  B.owner = getpid();
  atexit(cleanup);
  bench_catch_signals(on_stop);

  double t0 = bench_now_us();
  char why[512];
  progress(1, "starting a cluster in %s (ports %d..%d)", B.dir, base, base + ENGINE_PORT_OFFSET);
  B.up = 1;
  if (bench_cluster_up(B.dir, base, why, sizeof why) != 0)
    die("bench recovery: %s", why);
  snprintf(B.log, sizeof B.log, "%s/bench-cluster.log", B.dir);
  snprintf(B.sqdir, sizeof B.sqdir, "%s/sqlite", B.dir);
  snprintf(B.db, sizeof B.db, "%s/bench.db", B.sqdir);
  if (mkdir(B.sqdir, 0755) != 0)
    die("bench recovery: cannot make %s: %s", B.sqdir, strerror(errno));

  struct eng e;
  memset(&e, 0, sizeof e);
  snprintf(e.coord, sizeof e.coord, "127.0.0.1:%d", base);
  snprintf(e.addr, sizeof e.addr, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET);
  eng_learn(&e, NULL);

  if (npg) {
    cJSON *out = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(out, "conditions");
    bench_conditions(c, B.dir);
    cJSON_AddNumberToObject(c, "seed", (double)seed);
    cJSON_AddNumberToObject(c, "repeats", reps);
    cJSON_AddStringToObject(c, "crash", "SIGKILL of the engine (auralog fault "
                            "engine-crash), restart with auralog cluster up");
    cJSON_AddStringToObject(c, "auralog_recovery_ms", "the engine's own measure: quorum "
                            "reads of every PG, VDL, truncation (status recovery_ms)");
    rec_pgs(&e, pgs, npg, reps, seed, json, out, c);
    progress(1, "stopping the cluster and removing its data");
    cleanup();
    progress_end();
    cJSON_AddNumberToObject(c, "elapsed_s", (double)(long)((bench_now_us() - t0) / 1e5) / 10);
    if (json) {
      char *s = cJSON_PrintUnformatted(out);
      puts(s);
      free(s);
    } else {
      printf("run took %.0f s\n", (bench_now_us() - t0) / 1e6);
    }
    cJSON_Delete(out);
    return 0;
  }

  static struct size zs[NSIZES];
  uint64_t sq_txns = 0, prev = 0;
  int gave_up = 0;
  for (int i = 0; i < nz; i++) {
    struct size *z = &zs[i];
    z->want = want[i];
    eng_write(&e, want[i], seed);
    z->records = eng_records(&e);
    z->txns = e.txns;
    z->nrep = reps;
    for (int k = 0; k < reps; k++) {
      check_stop();
      progress(1, "auralog: crash and restart %d of %d at %llu records", k + 1, reps,
               (unsigned long long)z->records);
      eng_crash(&e, z, k, seed);
    }
    sq_size(z, &sq_txns, prev, reps, seed, &gave_up);
    prev = z->records;
  }
  progress(1, "stopping the cluster and removing its data");
  cleanup();
  progress_end();
  double secs = (bench_now_us() - t0) / 1e6;

  cJSON *out = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(out, "conditions");
  conditions(c, seed, reps, e.page_size ? e.page_size : PAGE_SIZE_DEFAULT);
  cJSON_AddNumberToObject(c, "elapsed_s", (double)(long)(secs * 10) / 10);
  if (json) {
    cJSON *rs = cJSON_AddArrayToObject(out, "results");
    for (int i = 0; i < nz; i++) {
      struct size *z = &zs[i];
      cJSON *j = cJSON_CreateObject();
      cJSON_AddNumberToObject(j, "records", (double)z->records);
      cJSON_AddNumberToObject(j, "records_asked", (double)z->want);
      cJSON_AddNumberToObject(j, "transactions", (double)z->txns);
      cJSON_AddNumberToObject(j, "auralog_recovery_ms", median(z->rec, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_recovery_ms_max", maxof(z->rec, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_open_ms", median(z->open, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_first_query_ms", median(z->first, z->nrep));
      cJSON_AddNumberToObject(j, "auralog_first_query_ms_max", maxof(z->first, z->nrep));
      add_num_or_null(j, "sqlite_wal_frames", z->sq, (double)z->frames);
      add_num_or_null(j, "sqlite_wal_bytes", z->sq, (double)z->wal_bytes);
      add_num_or_null(j, "sqlite_replay_ms", z->sq, median(z->warm, z->nrep));
      add_num_or_null(j, "sqlite_replay_ms_max", z->sq, maxof(z->warm, z->nrep));
      add_num_or_null(j, "sqlite_replay_cold_ms", z->sq, z->cold);
      if (!z->sq)
        cJSON_AddStringToObject(j, "sqlite_skipped", z->sq_why);
      cJSON_AddItemToArray(rs, j);
    }
    char *s = cJSON_PrintUnformatted(out);
    puts(s);
    free(s);
  } else {
    print_table(c, zs, nz, secs);
  }
  cJSON_Delete(out);
  return 0;
}
