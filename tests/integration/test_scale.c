/*
 * Integration: scale (paper §2.2: a volume is a concatenation of PGs,
 * allocated as it grows). A real cluster whose volume has about a
 * thousand protection groups commits, reads, and recovers after an engine
 * crash; a commit costs about what it costs at ten PGs (the engine's
 * flush, VDL advance and ack handling touch only PGs with traffic).
 *
 * Also: a volume whose PG size (pg_pages, chosen when it is created)
 * lets it reach 64 GiB takes a write to its last page and reads it back
 * (the writer grows the volume to reach it; nothing in between is
 * written: PGs are sparse).
 *
 * AURALOG_SCALE_MEASURE=1 adds a measurement: commit latency (p50 of
 * single-row inserts, one client) and recovery time, at 10 and at 1,000
 * PGs, printed as `# scale:` lines (no assertion on the figures: a loaded
 * machine makes them noisy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "param.h"
#include "record.h"
#include "net/rpc.h"
#include "vfs/volume.h"
#include "net/wire.h"

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* `auralog status --json` of volume main, into the harness's big buffer
 * (a thousand PGs make a status larger than status() takes). */
static cJSON *big_status(void)
{
  int rc = sh(out, OUT_SIZE, "%s status --json --volume main --coord %s", bin, coord);
  assert_int_equal(rc, 0);
  cJSON *o = cJSON_Parse(out);
  assert_non_null(o);
  return o;
}

static double num(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItem(o, k);
  assert_non_null(v);
  return v->valuedouble;
}

/* Make volume main npgs PGs long at the coordinator, in requests of at
 * most GROW_MAX_PGS_PER_REQUEST. */
static void grow_to(uint32_t npgs)
{
  char why[256];
  for (;;) {
    cJSON *o = big_status();
    uint32_t have = (uint32_t)cJSON_GetArraySize(cJSON_GetObjectItem(o, "pgs"));
    cJSON_Delete(o);
    if (have >= npgs)
      return;
    Env req = AURALOG__ENVELOPE__INIT;
    Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
    g.name = "main";
    g.npgs = npgs - have > GROW_MAX_PGS_PER_REQUEST ? have + GROW_MAX_PGS_PER_REQUEST : npgs;
    req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
    req.grow_volume = &g;
    Env *rep = rpc_once(coord, &req, 30000, why, sizeof why);
    if (rep == NULL)
      fail_msg("grow to %u: %s", g.npgs, why);
    if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why) != 0)
      fail_msg("grow to %u: %s", g.npgs, why);
    wire_free(rep);
  }
}

/* Wait until the engine answers a query (after a restart: its recovery). */
static void wait_engine(int ms)
{
  for (int i = 0; i < ms / 100; i++) {
    if (sql("select 1;") == 0)
      return;
    usleep(100000);
  }
  fail_msg("the engine did not answer within %d ms: %s", ms, out);
}

/* Kill the engine, start it again; the time until it answers, and its own
 * recovery time (status recovery_ms) in *rcv_ms. */
static double crash_and_recover(double *rcv_ms)
{
  fault("engine-crash");
  double t0 = now_s();
  assert_int_equal(sh(out, OUT_SIZE, "%s cluster up --dir %s 2>&1", bin, dir), 0);
  wait_engine(120000);
  double took = now_s() - t0;
  /* The engine's report comes every ENGINE_STAT_MS. */
  for (int i = 0; i < 50; i++) {
    cJSON *o = big_status();
    cJSON *e = cJSON_GetObjectItem(o, "engine");
    int up = e && strcmp(cJSON_GetObjectItem(e, "state")->valuestring, "up") == 0;
    *rcv_ms = num(o, "recovery_ms");
    cJSON_Delete(o);
    if (up && *rcv_ms > 0)
      break;
    usleep(100000);
  }
  return took;
}

/* CPU time (user + system) member has used so far, in ms. */
static double cpu_ms_of(const char *member)
{
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid_of(member));
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *s = strrchr(buf, ')');  /* past the command name */
  unsigned long long ut = 0, st = 0;
  if (s == NULL || sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                          &ut, &st) != 2)
    return 0;
  return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static const char *const storage[] = {"coord", "A1", "A2", "B1", "B2", "C1", "C2"};

/* CPU of the coordinator and the six nodes together, in ms. */
static double storage_cpu_ms(void)
{
  double t = 0;
  for (size_t i = 0; i < sizeof storage / sizeof storage[0]; i++)
    t += cpu_ms_of(storage[i]);
  return t;
}

/* The nodes' durable commits (lmdb transactions), from status. */
static double node_commits(void)
{
  usleep(2 * HEARTBEAT_MS * 1000);
  cJSON *o = big_status(), *n;
  double sum = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes"))
    sum += num(n, "commits");
  cJSON_Delete(o);
  return sum;
}

static int dcmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* n single-row inserts on one connection to the engine, each answered
 * once durable: their latencies' median, in ms (p90 in *p90). */
static double commit_p50(int n, double *p90)
{
  char why[256];
  struct rpc r;
  if (rpc_open(&r, engine, 5000, why, sizeof why) != 0)
    fail_msg("engine: %s", why);
  double *lat = calloc((size_t)n, sizeof *lat);
  for (int i = 0; i < n; i++) {
    Env req = AURALOG__ENVELOPE__INIT;
    Auralog__Query q = AURALOG__QUERY__INIT;
    q.sql = "insert into m(v) values(randomblob(100));";
    req.body_case = AURALOG__ENVELOPE__BODY_QUERY;
    req.query = &q;
    double t0 = now_s();
    Env *rep = rpc_call(&r, &req, 10000, why, sizeof why);
    lat[i] = (now_s() - t0) * 1000;
    if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_ROWS, why, sizeof why) != 0)
      fail_msg("insert %d: %s", i, why);
    wire_free(rep);
  }
  rpc_close(&r);
  qsort(lat, (size_t)n, sizeof *lat, dcmp);
  double p50 = lat[n / 2];
  *p90 = lat[n * 9 / 10];
  free(lat);
  return p50;
}

/* At npgs PGs (made at the coordinator; the engine learns them at its
 * restart): commit latency, then recovery after a crash, then again. */
static void measure_at(uint32_t npgs)
{
  double p90, rcv_ms;
  assert_int_equal(cluster_start("scale"), 0);   /* the same key file as the tests below: this process loads its key once */
  sql_ok("create table m(k integer primary key, v);", "");
  grow_to(npgs);
  double c0 = node_commits();
  double took = crash_and_recover(&rcv_ms);
  double c1 = node_commits();
  cJSON *o = big_status();
  int have = cJSON_GetArraySize(cJSON_GetObjectItem(o, "pgs"));
  cJSON_Delete(o);
  commit_p50(50, &p90);         /* warm up */
  double e0 = cpu_ms_of("engine");
  double p50 = commit_p50(400, &p90);
  double e1 = cpu_ms_of("engine");
  printf("# scale: %d PGs: commit p50 %.2f ms p90 %.2f ms, engine CPU %.3f ms per commit; "
         "recovery %.0f ms (crash to first answer %.2f s; %.0f node commits, %.1f per "
         "segment)\n", have, p50, p90, (e1 - e0) / 400, rcv_ms, took, c1 - c0,
         (c1 - c0) / (have * NCOPIES));
  /* Idle: what the coordinator and the nodes spend with no traffic
   * (heartbeats, gossip). */
  sleep(2);
  double s0 = storage_cpu_ms();
  sleep(10);
  double s1 = storage_cpu_ms();
  printf("# scale: %d PGs: idle coordinator + 6 nodes: %.1f%% of a core\n", have,
         (s1 - s0) / 10000 * 100);
  took = crash_and_recover(&rcv_ms);
  printf("# scale: %d PGs: recovery again %.0f ms (crash to first answer %.2f s)\n",
         have, rcv_ms, took);
  cluster_stop();
}

static void measure_commit_and_recovery_at_10_and_1000_pgs(void **state)
{
  (void)state;
  if (getenv("AURALOG_SCALE_MEASURE") == NULL)
    skip();
  measure_at(10);
  measure_at(1000);
}

/* ---- the cluster of the tests below: volume main of 16-page PGs ------- */

#define MAIN_PG_PAGES 16

static void a_64_gib_volume_takes_a_write_to_its_last_page(void **state)
{
  (void)state;
  char why[256];
  /* 64 GiB of 4 KiB pages in at most MAX_PGS PGs: PGs of 4096 pages (16
   * MiB) at least. With exactly that, the last page is in the last PG
   * the volume may have: the writer grows the volume from one PG to
   * MAX_PGS, in requests of at most GROW_MAX_PGS_PER_REQUEST. */
  const uint32_t pg_pages = 4096;
  const uint64_t gib64 = 64ull << 30;
  assert_true((uint64_t)MAX_PGS * pg_pages * PAGE_SIZE_DEFAULT >= gib64);
  /* One node away while the volume opens: its recovery is not clean, and
   * writes a truncation, which the PGs grown later hear only with their
   * first Append. A page of a PG never written since must still be read
   * (zeros), not refused by every segment as not having heard the
   * truncation (it was, for ever: node.c on_read_page; seen first under
   * ASan, where a node started late by chance). */
  kill(pid_of("C1"), SIGSTOP);
  struct volume *v = vol_open(coord, "big", "", pg_pages, why, sizeof why);
  kill(pid_of("C1"), SIGCONT);
  if (v == NULL)
    fail_msg("open volume big: %s", why);
  uint32_t ps = vol_page_size(v);
  assert_int_equal(ps, PAGE_SIZE_DEFAULT);
  uint32_t last = (uint32_t)(gib64 / ps - 1);    /* the page ending at 64 GiB */
  uint8_t *page = calloc(1, ps), *got = malloc(ps);
  memcpy(page + 100, "the last page of 64 GiB", 23);
  struct drange r = {100, 23, 0, 0};
  struct mtr_page mp = {last, REC_ZERO, page, &r, 1};
  uint64_t cpl = vol_ship(v, &mp, 1, why, sizeof why);
  if (cpl == 0)
    fail_msg("write page %u: %s", last, why);
  if (vol_wait(v, cpl, 30000, why, sizeof why) != 0)
    fail_msg("commit of page %u: %s", last, why);
  uint64_t lsn = 0;
  if (vol_read(v, last, got, &lsn, why, sizeof why) != 0)
    fail_msg("read page %u: %s", last, why);
  assert_memory_equal(got, page, ps);
  assert_int_equal(lsn, cpl);
  /* A page in between, never written: zeros. */
  if (vol_read(v, last / 2, got, &lsn, why, sizeof why) != 0)
    fail_msg("read page %u: %s", last / 2, why);
  memset(page, 0, ps);
  assert_memory_equal(got, page, ps);
  vol_close(v);
  free(page);
  free(got);
  /* The coordinator: PGs of pg_pages pages, enough of them for 64 GiB. */
  sh(out, OUT_SIZE, "%s status --json --volume big --coord %s", bin, coord);
  cJSON *o = cJSON_Parse(out);
  assert_non_null(o);
  cJSON *pgs = cJSON_GetObjectItem(o, "pgs");
  int n = cJSON_GetArraySize(pgs);
  assert_true((uint64_t)n * pg_pages * ps >= gib64);
  assert_int_equal(n, MAX_PGS);
  assert_int_equal(num(cJSON_GetArrayItem(pgs, n - 1), "npages"), pg_pages);
  cJSON_Delete(o);
}

/* Volume main (created by the engine with MAIN_PG_PAGES-page PGs) grows,
 * from one transaction, to about a thousand PGs; it commits, reads, and a
 * new engine recovers it. */
static void a_thousand_pgs_commit_read_and_recover(void **state)
{
  (void)state;
  assert_int_equal(cluster_start_with("scale", " --pg-pages 16"), 0);
  /* 50 MB of zeros: about 12,200 overflow pages, so the engine asks for
   * a quarter more PGs than the ~765 it needs: ~955, in one request. */
  sql_ok("create table t(k integer primary key, v);"
         "insert into t values(1, zeroblob(50000000));", "");
  double t0 = now_s();
  cJSON *o = big_status();
  printf("# auralog status --json: %.0f ms\n", (now_s() - t0) * 1000);
  cJSON *pgs = cJSON_GetObjectItem(o, "pgs");
  int n = cJSON_GetArraySize(pgs);
  printf("# volume main: %d PGs of %d pages\n", n, MAIN_PG_PAGES);
  assert_true(n >= 900 && n <= GROW_MAX_PGS_PER_REQUEST + 1);
  assert_int_equal(num(cJSON_GetArrayItem(pgs, n - 1), "npages"), MAIN_PG_PAGES);
  cJSON_Delete(o);
  char script[8192];
  size_t len = 0;
  for (int i = 2; i <= 50; i++)
    len += (size_t)snprintf(script + len, sizeof script - len,
                            "insert into t values(%d, 'row %d');\n", i, i);
  sql_ok(script, "");
  const char *want = "50|50000000|row 50\n";
  const char *q = "select count(*), (select length(v) from t where k = 1), "
                  "(select v from t where k = 50) from t;";
  sql_ok(q, want);
  double rcv_ms;
  double took = crash_and_recover(&rcv_ms);
  printf("# %d PGs: recovery %.0f ms, crash to first answer %.2f s\n", n, rcv_ms, took);
  sql_ok(q, want);
  sql_ok("pragma integrity_check;", "ok\n");
  sql_ok("insert into t values(51, 'after');", "");
  sql_ok("select v from t where k = 51;", "after\n");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(measure_commit_and_recovery_at_10_and_1000_pgs),
    cmocka_unit_test(a_thousand_pgs_commit_read_and_recover),
    cmocka_unit_test(a_64_gib_volume_takes_a_write_to_its_last_page),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: scale", tests, NULL, teardown);
}
