/*
 * fobench.c: `auralog bench failover`: how long a failover takes (seed
 * 002: Aurora fails over in under 30 s, against 60 s for MySQL RDS).
 *
 * It starts a cluster of its own (`cluster up --failover` with read
 * replicas, in a directory and on ports of its own), and a client that
 * commits one small insert after another on the writer, finding it
 * through the coordinator (as `auralog sql` does) and following it after
 * a failover. Each round kills the writer (`fault writer-crash`, SIGKILL)
 * and measures, from the kill:
 *   write_ms     to the client's first commit acknowledged by the new writer
 *   read_ms      to the first read answered by the new writer (a new
 *                connection, retried every 20 ms)
 *   recovery_ms  the new writer's own recovery (its open: epoch, the
 *                rounds of vfs/open.c), which the two above include
 * then `cluster up` brings the old writer back as a replica before the
 * next round. Most of a failover is the detection bound (WRITER_LOST_MS,
 * coord/failover.c), which must exceed the read lease: the figures say
 * so beside the medians and maxima, with the conditions.
 *
 * Its code is here, not in src/bench/, and main.c sends `bench failover`
 * to it: the cluster and client are failover's own (failover.h).
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/failover.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "net/rpc.h"
#include "cli/status.h"

#define CLIENT_TIMEOUT_MS 2000   /* the client's request timeout (a frozen writer answers nothing) */

static struct {
  char self[PATH_MAX], dir[PATH_MAX], coord[64];
  int own_dir;                /* made here: removed at the end (a --dir is kept) */
  pthread_t th;
  volatile int stop;
  char old[ADDR_MAX_LEN + 1], cur[ADDR_MAX_LEN + 1];
  volatile unsigned long long crash_at, first_ack;
  long commits;
} F;

/* 0 rows answered, -1 refused, -2 no answer. */
static int query(struct rpc *r, const char *sql, int timeout_ms)
{
  char why[512];
  Env *rep = rpc_query(r, sql, timeout_ms, why, sizeof why);
  if (rep == NULL)
    return -2;
  int rc = rpc_expect(rep, AURALOG__ENVELOPE__BODY_ROWS, why, sizeof why) ? -1 : 0;
  wire_free(rep);
  return rc;
}

static int to_writer(struct rpc *r, int *open, char *addr_out)
{
  char addr[ADDR_MAX_LEN + 1], why[256];
  if (*open)
    rpc_close(r);
  *open = 0;
  if (fo_writer_addr(F.coord, "main", addr, sizeof addr, why, sizeof why) != 0 ||
      rpc_open(r, addr, 1000, why, sizeof why) != 0)
    return -1;
  *open = 1;
  if (addr_out)
    snprintf(addr_out, ADDR_MAX_LEN + 1, "%s", addr);
  return 0;
}

static void *client(void *arg)
{
  (void)arg;
  struct rpc r;
  int open = 0;
  char cur[ADDR_MAX_LEN + 1] = "";
  while (!F.stop) {
    if (!open && to_writer(&r, &open, cur) != 0) {
      usleep(20000);
      continue;
    }
    if (query(&r, "INSERT INTO fo VALUES(NULL, randomblob(100))", CLIENT_TIMEOUT_MS) == 0) {
      F.commits++;
      if (F.crash_at && !F.first_ack && strcmp(cur, F.old) != 0)
        F.first_ack = now_ms();
    } else {
      to_writer(&r, &open, cur);
    }
  }
  if (open)
    rpc_close(&r);
  return NULL;
}

static int sh(const char *fmt, const char *a, const char *b)
{
  char cmd[PATH_MAX * 3];
  snprintf(cmd, sizeof cmd, fmt, F.self, a, b);
  return system(cmd);
}

static void cleanup(void)
{
  if (F.dir[0]) {
    sh("%s cluster down --dir %s > /dev/null 2>&1", F.dir, "");
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", F.dir);
    if (F.own_dir && system(cmd) != 0)
      logwarn("bench: cannot remove %s", F.dir);
  }
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static long recovery_ms(uint64_t epoch)
{
  char why[256];
  for (int t = 0; t < 50; t++) {
    Env *st = status_fetch(F.coord, "main", why, sizeof why);
    long v = -1;
    if (st && st->status->engine && st->status->engine->epoch == epoch)
      v = (long)st->status->engine->recovery_ms;
    wire_free(st);
    if (v >= 0)
      return v;
    usleep(100000);
  }
  return -1;
}

static uint64_t epoch_now(void)
{
  char why[256];
  Env *w = fo_writer(F.coord, "main", why, sizeof why);
  uint64_t e = w ? w->writer->epoch : 0;
  wire_free(w);
  return e;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench failover [--rounds N] [--replicas N] [--base-port PORT]\n"
    "                              [--dir DIR] [--json]\n"
    "\n"
    "Time failovers (seed 002: Aurora < 30 s): a cluster of its own with read\n"
    "replicas, run with --failover; a client commits inserts on the writer it\n"
    "finds through the coordinator; each round kills the writer and measures,\n"
    "from the kill, the first commit on the new writer, the first read there,\n"
    "and that writer's recovery time. The detection bound (WRITER_LOST_MS %d,\n"
    "above the read lease, %d ms) is most of it.\n"
    "\n"
    "  --rounds N      failovers (default 10)\n"
    "  --replicas N    read replicas (default 2; at least 1)\n"
    "  --base-port N   the cluster's ports (default 7900; 500 above your\n"
    "                  cluster's coordinator port if it is not 7400)\n"
    "  --dir DIR       its directory (default a new one under /tmp, removed after;\n"
    "                  a DIR given is kept, its cluster stopped)\n"
    "  --json          one JSON object: conditions and figures\n",
    WRITER_LOST_MS, READ_LEASE_MS);
}

int failover_bench_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"rounds", required_argument, 0, 'n'}, {"replicas", required_argument, 0, 'r'},
    {"base-port", required_argument, 0, 'p'}, {"dir", required_argument, 0, 'd'},
    {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0}};
  int rounds = 10, replicas = 2, base = bench_base_default(7900), json = 0, o;
  const char *dir = NULL;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'n': rounds = atoi(optarg); break;
    case 'r': replicas = atoi(optarg); break;
    case 'p': base = atoi(optarg); break;
    case 'd': dir = optarg; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (rounds < 1 || rounds > 1000 || replicas < 1 || replicas > REPLICAS_MAX ||
      base < 1024 || base > 65000 || optind < argc)
    die("bench failover: --rounds 1..1000, --replicas 1..%d, --base-port 1024..65000 "
        "(see --help)", REPLICAS_MAX);
  ssize_t len = readlink("/proc/self/exe", F.self, sizeof F.self - 1);
  if (len <= 0)
    die("bench failover: cannot find the auralog binary");
  F.self[len] = 0;
  if (dir)
    snprintf(F.dir, sizeof F.dir, "%s", dir);
  else
    F.own_dir = snprintf(F.dir, sizeof F.dir, "/tmp/auralog-bench-failover-%d", (int)getpid()) > 0;
  snprintf(F.coord, sizeof F.coord, "127.0.0.1:%d", base);
  atexit(cleanup);
  char opt[64], keyp[PATH_MAX + 16];
  snprintf(opt, sizeof opt, "%d --replicas %d --failover", base, replicas);
  fprintf(stderr, "bench failover: starting a cluster in %s (ports %d..)\n", F.dir, base);
  if (sh("%s cluster up --dir %s --base-port %s > /dev/null", F.dir, opt) != 0)
    die("bench failover: cluster up failed (see %s/log)", F.dir);
  snprintf(keyp, sizeof keyp, "%s/cluster.key", F.dir);
  setenv("AURALOG_KEY", keyp, 1);
  setenv("AURALOG_COORD", F.coord, 1);
  {
    struct rpc r;
    int open = 0;
    for (int t = 0; t < 100 && !open; t++)
      if (to_writer(&r, &open, NULL) != 0)
        usleep(100000);
    if (!open || query(&r, "CREATE TABLE IF NOT EXISTS fo(id INTEGER PRIMARY KEY, pad BLOB)",
                       10000) != 0)
      die("bench failover: cannot create the table on the writer");
    rpc_close(&r);
  }
  double *w = calloc((size_t)rounds, sizeof *w), *rd = calloc((size_t)rounds, sizeof *rd);
  double *rc = calloc((size_t)rounds, sizeof *rc);
  char why[256];
  for (int i = 0; i < rounds; i++) {
    if (fo_writer_addr(F.coord, "main", F.old, sizeof F.old, why, sizeof why) != 0)
      die("bench failover: %s", why);
    F.stop = 0;
    F.crash_at = F.first_ack = 0;
    pthread_create(&F.th, NULL, client, NULL);
    usleep(500000);
    unsigned long long t0 = now_ms();
    F.crash_at = t0;
    if (sh("%s fault --dir %s writer-crash > /dev/null", F.dir, "") != 0)
      die("bench failover: fault writer-crash failed");
    /* The first read on a new writer: a new connection each try. */
    unsigned long long read_at = 0;
    while (!read_at && now_ms() - t0 < 60000) {
      struct rpc r;
      int open = 0;
      char cur[ADDR_MAX_LEN + 1];
      if (to_writer(&r, &open, cur) == 0 && strcmp(cur, F.old) != 0 &&
          query(&r, "SELECT count(*) FROM fo", 5000) == 0)
        read_at = now_ms();
      if (open)
        rpc_close(&r);
      if (!read_at)
        usleep(20000);
    }
    while (!F.first_ack && now_ms() - t0 < 60000)
      usleep(5000);
    F.stop = 1;
    pthread_join(F.th, NULL);
    if (!read_at || !F.first_ack)
      die("bench failover: round %d: no new writer within 60 s (see %s/log)", i, F.dir);
    w[i] = (double)(F.first_ack - t0);
    rd[i] = (double)(read_at - t0);
    rc[i] = (double)recovery_ms(epoch_now());
    fprintf(stderr, "round %d: first commit %.0f ms, first read %.0f ms, recovery %.0f ms\n",
            i + 1, w[i], rd[i], rc[i]);
    if (sh("%s cluster up --dir %s > /dev/null", F.dir, "") != 0)
      die("bench failover: cluster up after round %d failed", i);
  }
  qsort(w, (size_t)rounds, sizeof *w, cmp);
  qsort(rd, (size_t)rounds, sizeof *rd, cmp);
  qsort(rc, (size_t)rounds, sizeof *rc, cmp);
  cJSON *out = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(out, "conditions");
  bench_conditions(c, F.dir);
  cJSON_AddNumberToObject(c, "rounds", rounds);
  cJSON_AddNumberToObject(c, "replicas", replicas);
  cJSON_AddNumberToObject(c, "writer_lost_ms", WRITER_LOST_MS);
  cJSON_AddNumberToObject(c, "read_lease_ms", READ_LEASE_MS);
  cJSON_AddNumberToObject(c, "probe_ms", ENGINE_STAT_MS);
  cJSON_AddNumberToObject(c, "client_timeout_ms", CLIENT_TIMEOUT_MS);
  cJSON_AddStringToObject(c, "fault", "fault writer-crash (SIGKILL of the writer) under one "
                          "client committing inserts");
  const char *names[] = {"crash_to_first_commit_ms", "crash_to_first_read_ms", "recovery_ms"};
  double *vals[] = {w, rd, rc};
  for (int k = 0; k < 3; k++) {
    cJSON *m = cJSON_AddObjectToObject(out, names[k]);
    cJSON_AddNumberToObject(m, "median", vals[k][rounds / 2]);
    cJSON_AddNumberToObject(m, "max", vals[k][rounds - 1]);
    cJSON_AddNumberToObject(m, "min", vals[k][0]);
  }
  cJSON_AddNumberToObject(out, "commits", (double)F.commits);
  if (json) {
    char *s = cJSON_Print(out);
    printf("%s\n", s);
    free(s);
  } else {
    char *s = cJSON_Print(c);
    printf("bench failover: %d failovers, %d replicas; conditions:\n%s\n", rounds, replicas, s);
    free(s);
    printf("                          median      max      min   (ms, from SIGKILL of the writer)\n");
    printf("crash -> first commit   %8.0f %8.0f %8.0f   on the new writer, one client\n",
           w[rounds / 2], w[rounds - 1], w[0]);
    printf("crash -> first read     %8.0f %8.0f %8.0f   on the new writer\n", rd[rounds / 2],
           rd[rounds - 1], rd[0]);
    printf("recovery                %8.0f %8.0f %8.0f   the new writer's open (included above)\n",
           rc[rounds / 2], rc[rounds - 1], rc[0]);
    printf("detection bound WRITER_LOST_MS %d (> READ_LEASE_MS %d): most of the failover.\n"
           "Aurora (seed 002): under 30 s; MySQL RDS with a standby: about 60 s.\n",
           WRITER_LOST_MS, READ_LEASE_MS);
  }
  cJSON_Delete(out);
  free(w);
  free(rd);
  free(rc);
  return 0;
}
