/*
 * Integration: `auralog bench recovery` at two small log lengths. It
 * starts its own cluster in a fresh directory, writes, crashes and
 * restarts the engine, replays SQLite's WAL of the same transactions, and
 * prints one JSON object: two results, each with at least the records
 * asked for, a recovery time the engine measured (above 0, below 5 s)
 * and the SQLite figures. Afterwards no process of its cluster is left
 * and the big files (the nodes' data, the SQLite database) are gone.
 * Bad options fail in one line, before anything starts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "param.h"

static const double sizes[] = {2000, 6000};

static int setup(void **state)
{
  (void)state;
  bin = getenv("AURALOG_BIN");
  if (bin == NULL)
    bin = "build/auralog";
  /* The benchmark starts its own cluster here; the harness's globals let
   * live_cluster_processes() look for what it left. */
  snprintf(dir, sizeof dir, "/tmp/auralog-it-benchrec-%d", (int)getpid());
  base = free_block((int)getpid() * 2 + 1);   /* ports of its own, as every test */
  snprintf(coord, sizeof coord, "127.0.0.1:%d", base);
  snprintf(engine, sizeof engine, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  sh(NULL, 0, "%s cluster down --dir %s 2>/dev/null", bin, dir);
  if (getenv("AURALOG_KEEP") == NULL)
    sh(NULL, 0, "rm -rf %s", dir);
  return 0;
}

static double num(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItem(o, k);
  if (!cJSON_IsNumber(v))
    fail_msg("result has no number %s", k);
  return v->valuedouble;
}

static void two_sizes_in_json(void **state)
{
  (void)state;
  int rc = sh(out, sizeof out, "%s bench recovery --records 2000,6000 --json --dir %s "
              "--base-port %d 2>%s.err", bin, dir, base, dir);
  if (rc != 0)
    fail_msg("bench recovery exited %d; its stderr is in %s.err", rc, dir);
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("stdout is not one JSON object: %.300s", out);
  assert_true(cJSON_IsObject(cJSON_GetObjectItem(o, "conditions")));
  assert_true(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "conditions"),
                                                 "sqlite")));
  cJSON *rs = cJSON_GetObjectItem(o, "results");
  assert_true(cJSON_IsArray(rs));
  assert_int_equal(cJSON_GetArraySize(rs), 2);
  double prev = 0;
  for (int i = 0; i < 2; i++) {
    cJSON *r = cJSON_GetArrayItem(rs, i);
    double recs = num(r, "records"), ms = num(r, "auralog_recovery_ms");
    assert_true(recs >= sizes[i]);
    assert_true(recs > prev);               /* one volume, its log growing */
    prev = recs;
    if (ms <= 0 || ms >= 5000)
      fail_msg("recovery took %g ms at %g records", ms, recs);
    assert_true(num(r, "auralog_recovery_ms_max") >= ms);
    assert_true(num(r, "auralog_first_query_ms") > 0);
    /* SQLite wrote about a frame per record auralog shipped. */
    double frames = num(r, "sqlite_wal_frames");
    assert_true(frames > recs / 2 && frames < recs * 2);
    assert_true(num(r, "sqlite_wal_bytes") > frames * 4096);
    assert_true(num(r, "sqlite_replay_ms") > 0);
    assert_true(num(r, "sqlite_replay_cold_ms") > 0);
  }
  cJSON_Delete(o);
  char err[300];
  snprintf(err, sizeof err, "%s.err", dir);
  unlink(err);
}

/* --pgs: recovery against the volume's size, the same cluster grown. */
static void recovery_against_pgs_in_json(void **state)
{
  (void)state;
  int rc = sh(out, sizeof out, "%s bench recovery --pgs 4,40 --repeats 2 --json --dir %s "
              "--base-port %d 2>%s.err", bin, dir, base, dir);
  if (rc != 0)
    fail_msg("bench recovery --pgs exited %d; its stderr is in %s.err", rc, dir);
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("stdout is not one JSON object: %.300s", out);
  assert_true(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "conditions"),
                                                 "pgs")));
  cJSON *rs = cJSON_GetObjectItem(o, "results");
  assert_int_equal(cJSON_GetArraySize(rs), 2);
  for (int i = 0; i < 2; i++) {
    cJSON *r = cJSON_GetArrayItem(rs, i);
    assert_int_equal((int)num(r, "pgs"), i ? 40 : 4);
    double ms = num(r, "auralog_recovery_ms");
    if (ms <= 0 || ms >= 10000)
      fail_msg("recovery took %g ms at %d PGs", ms, i ? 40 : 4);
    assert_true(num(r, "auralog_recovery_ms_max") >= ms);
    assert_true(num(r, "auralog_first_query_ms") > 0);
  }
  cJSON_Delete(o);
  char err[300];
  snprintf(err, sizeof err, "%s.err", dir);
  unlink(err);
}

/* `auralog bench append` against a running cluster, as a person runs it:
 * `cluster up`, then the bench with --dir (the key is found there). */
static void append_into_one_node_in_json(void **state)
{
  (void)state;
  if (sh(out, sizeof out, "%s cluster up --dir %s-app --base-port %d >%s-app.up 2>&1", bin,
         dir, base, dir) != 0)
    fail_msg("cluster up failed: see %s-app.up", dir);
  int rc = sh(out, sizeof out, "%s bench append --dir %s-app --coord 127.0.0.1:%d "
              "--seconds 1 --json 2>%s-app.err", bin, dir, base, dir);
  sh(NULL, 0, "%s cluster down --dir %s-app >/dev/null 2>&1", bin, dir);
  if (rc != 0)
    fail_msg("bench append exited %d; its stderr is in %s-app.err", rc, dir);
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("stdout is not one JSON object: %.300s", out);
  cJSON *rs = cJSON_GetObjectItem(o, "results"), *r;
  assert_true(cJSON_GetArraySize(rs) >= 4);
  cJSON_ArrayForEach(r, rs)
    if (num(r, "records_per_s") <= 0)
      fail_msg("run %s made no record durable",
               cJSON_GetStringValue(cJSON_GetObjectItem(r, "run")));
  cJSON_Delete(o);
  if (getenv("AURALOG_KEEP") == NULL)
    sh(NULL, 0, "rm -rf %s-app %s-app.up %s-app.err", dir, dir, dir);
}

static void leaves_no_process_and_no_data(void **state)
{
  (void)state;
  char p[512];
  struct stat sb;
  assert_int_equal(live_cluster_processes(), 0);
  snprintf(p, sizeof p, "%s/data", dir);
  assert_int_not_equal(stat(p, &sb), 0);
  snprintf(p, sizeof p, "%s/sqlite", dir);
  assert_int_not_equal(stat(p, &sb), 0);
}

/* Exit status non-zero and exactly one line on stderr naming the option. */
static void fails_in_one_line(const char *args, const char *want)
{
  int rc = sh(out, sizeof out, "%s bench recovery %s --dir %s-bad 2>&1 >/dev/null", bin,
              args, dir);
  assert_int_not_equal(rc, 0);
  char *nl = strchr(out, '\n');
  if (nl == NULL || nl[1] != 0 || strncmp(out, "auralog: ", 9) != 0)
    fail_msg("%s: not one line: '%s'", args, out);
  if (strstr(out, want) == NULL)
    fail_msg("%s: '%s' does not say %s", args, out, want);
}

static void bad_options_fail_in_one_line(void **state)
{
  (void)state;
  fails_in_one_line("--records abc", "--records");
  fails_in_one_line("--records 6000,2000", "--records");
  fails_in_one_line("--records 1000,", "--records");
  fails_in_one_line("--repeats 0", "--repeats");
  fails_in_one_line("--base-port 99999", "--base-port");
  fails_in_one_line("--seed x", "--seed");
  fails_in_one_line("--bogus", "--bogus");
  fails_in_one_line("--pgs abc", "--pgs");
  fails_in_one_line("--pgs 40,4", "--pgs");
  fails_in_one_line("--pgs 5000", "--pgs");
  fails_in_one_line("--pgs 4 --records 1000", "--pgs");
  char p[300];
  struct stat sb;
  snprintf(p, sizeof p, "%s-bad", dir);
  assert_int_not_equal(stat(p, &sb), 0);      /* nothing was started */
  assert_int_equal(sh(out, sizeof out, "%s bench recovery --help", bin), 0);
  assert_non_null(strstr(out, "usage: auralog bench recovery"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_options_fail_in_one_line),
    cmocka_unit_test(two_sizes_in_json),
    cmocka_unit_test(recovery_against_pgs_in_json),
    cmocka_unit_test(append_into_one_node_in_json),
    cmocka_unit_test(leaves_no_process_and_no_data),
  };
  return cmocka_run_group_tests_name("integration: bench recovery", tests, setup, teardown);
}
