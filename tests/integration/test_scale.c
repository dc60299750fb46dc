/*
 * Integration: scale (paper §2.2: a volume is a concatenation of PGs,
 * allocated as it grows). A real cluster whose volume has about a
 * thousand protection groups commits, reads, and recovers after an engine
 * crash; a commit costs about what it costs at ten PGs (the engine's
 * flush, VDL advance and ack handling touch only PGs with traffic).
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "param.h"
#include "rpc.h"
#include "wire.h"

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
  assert_int_equal(cluster_start("scalem"), 0);
  sql_ok("create table m(k integer primary key, v);", "");
  grow_to(npgs);
  double took = crash_and_recover(&rcv_ms);
  cJSON *o = big_status();
  int have = cJSON_GetArraySize(cJSON_GetObjectItem(o, "pgs"));
  cJSON_Delete(o);
  commit_p50(50, &p90);         /* warm up */
  double p50 = commit_p50(400, &p90);
  printf("# scale: %d PGs: commit p50 %.2f ms p90 %.2f ms; recovery %.0f ms "
         "(crash to first answer %.2f s)\n", have, p50, p90, rcv_ms, took);
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

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(measure_commit_and_recovery_at_10_and_1000_pgs),
  };
  return cmocka_run_group_tests_name("integration: scale", tests, NULL, NULL);
}
