/*
 * Integration: the binlog's benchmarks (issue 29 step 5), tiny.
 *
 * `auralog bench binlog` with one round of 2 s cells at 2 clients, all
 * three modes, and `auralog bench recovery --binlog off,community,enhanced`
 * at 8, 10 and 12 MiB with one restart each and one cold. Each starts its own clusters
 * in a fresh directory and prints one JSON object; every figure must be
 * there and sane. Community mode may not be built yet: then the engine
 * refuses it and both benchmarks must say so ("available": false, with
 * the engine's reason) and still measure the others; once it is built,
 * its figures are checked as the others' are, and its own (the 2PC's
 * stages, the binlog file's scan). Which it is, the output says.
 * Afterwards no process of their clusters is left and their data are
 * gone. Bad options fail in one line, before anything starts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "param.h"

static int setup(void **state)
{
  (void)state;
  bin = getenv("AURALOG_BIN");
  if (bin == NULL)
    bin = "build/auralog";
  snprintf(dir, sizeof dir, "/tmp/auralog-it-benchbinlog-%d", (int)getpid());
  base = free_block((int)getpid() * 2 + 1);
  snprintf(coord, sizeof coord, "127.0.0.1:%d", base);
  /* The benchmarks' own engine: the cluster's port + 1. */
  snprintf(engine, sizeof engine, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 1);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  sh(NULL, 0, "%s cluster down --dir %s/bl/cluster 2>/dev/null; %s cluster down --dir "
     "%s/rec/cluster 2>/dev/null", bin, dir, bin, dir);
  if (getenv("AURALOG_KEEP") == NULL)
    sh(NULL, 0, "rm -rf %s %s.err", dir, dir);
  return 0;
}

static cJSON *get(cJSON *o, const char *path)
{
  char p[200];
  snprintf(p, sizeof p, "%s", path);
  for (char *save = NULL, *k = strtok_r(p, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
    o = cJSON_GetObjectItem(o, k);
    if (o == NULL)
      fail_msg("no %s in the JSON (at %s)", path, k);
  }
  return o;
}

static double num(cJSON *o, const char *path)
{
  cJSON *v = get(o, path);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    fail_msg("%s is not a number", path);
  return v->valuedouble;
}

/* lo <= path's number <= hi. */
static double in(cJSON *o, const char *path, double lo, double hi)
{
  double v = num(o, path);
  if (v < lo || v > hi)
    fail_msg("%s is %g, not within [%g, %g]", path, v, lo, hi);
  return v;
}

static const char *str(cJSON *o, const char *path)
{
  cJSON *v = get(o, path);
  if (!cJSON_IsString(v))
    fail_msg("%s is not a string", path);
  return v->valuestring;
}

/* Is the mode available? If not, the engine's reason must say why, and
 * name the mode. */
static int available(cJSON *modes, const char *mode)
{
  cJSON *m = get(modes, mode);
  if (cJSON_IsTrue(get(m, "available")))
    return 1;
  const char *why = str(m, "reason");
  if (strstr(why, mode) == NULL)
    fail_msg("%s is not available, but the reason does not name it: '%s'", mode, why);
  return 0;
}

static void conditions(cJSON *o)
{
  assert_true(num(o, "conditions.cores") >= 1);
  assert_true(cJSON_IsString(get(o, "conditions.cpu")));
  assert_true(cJSON_IsString(get(o, "conditions.kernel")));
  assert_true(cJSON_IsString(get(o, "conditions.filesystem")));
  assert_true(cJSON_IsString(get(o, "conditions.build")));
  assert_true(cJSON_IsString(get(o, "conditions.load_average")));
  in(o, "conditions.elapsed_s", 1, 600);
}

/* The medians of a mode at 2 clients. */
static void sane_cell(cJSON *c, int mode_is_off)
{
  in(c, "rounds_ok", 1, 1);
  in(c, "tx_per_s", 1, 1e6);
  double p50 = in(c, "p50_ms", 0.001, 5000);
  in(c, "p99_ms", p50, 30000);
  double e = in(c, "cpu_ms_per_tx.engine", 1e-6, 100);
  double n = in(c, "cpu_ms_per_tx.nodes", 1e-6, 100);
  in(c, "cpu_ms_per_tx.coordinator", 0, 100);
  in(c, "cpu_ms_per_tx.total", e + n - 1e-9, 300);
  in(c, "redo_bytes_per_tx", 100, 1e6);
  if (mode_is_off) {
    in(c, "events_bytes_per_tx", 0, 0);       /* no capture, no events */
    assert_null(cJSON_GetObjectItem(c, "vs_off"));
  } else {
    /* write-only: 2 UPDATEs (before and after images), a DELETE, an
     * INSERT of rows of ~200 bytes */
    in(c, "events_bytes_per_tx", 300, 20000);
    double r = in(c, "vs_off.tx_per_s_ratio", 0.01, 100);
    double pct = num(c, "vs_off.throughput_cost_pct");
    if (fabs(pct - 100 * (1 - r)) > 1e-6)
      fail_msg("throughput_cost_pct %g, but the ratio is %g", pct, r);
    in(c, "vs_off.p50_ratio", 0.001, 1000);
    in(c, "vs_off.p99_ratio", 0.001, 1000);
    in(c, "vs_off.cpu_total_ratio", 0.001, 1000);
  }
}

static void tiny_binlog_run(void **state)
{
  (void)state;
  int rc = sh(out, sizeof out, "%s bench binlog --clients 2 --duration 2 --warmup 1 --rounds 1 "
              "--rows 1000 --json --no-note --dir %s/bl --base-port %d 2>%s.err", bin, dir,
              base, dir);
  if (rc != 0)
    fail_msg("bench binlog exited %d; its stderr is in %s.err", rc, dir);
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("stdout is not one JSON object: %.300s", out);
  conditions(o);
  assert_string_equal(str(o, "conditions.clients"), "2");
  assert_int_equal((int)num(o, "conditions.rounds"), 1);
  assert_string_equal(str(o, "workload"), "write-only");
  assert_int_equal((int)num(o, "duration_s"), 2);

  /* The machine's limits and the floors from them. */
  double fs = in(o, "limit.fsync_p50_ms", 1e-4, 1000);
  double q = in(o, "limit.quorum_p50_ms", 1e-4, 1000);
  double off_floor = in(o, "floor_ms.off_enhanced", q, 1000);
  in(o, "floor_ms.community", off_floor + q + fs - 1e-6, 3000);

  cJSON *res = get(o, "results");
  assert_true(available(res, "off"));
  assert_true(available(res, "enhanced"));
  int community = available(res, "community");
  sane_cell(get(res, "off.2"), 1);
  sane_cell(get(res, "enhanced.2"), 0);
  /* The enhanced binlog's events ride to all six copies in the redo. */
  double extra = num(res, "enhanced.2.redo_bytes_per_tx") - num(res, "off.2.redo_bytes_per_tx");
  double ev = num(res, "enhanced.2.events_bytes_per_tx");
  if (extra < 3 * ev)
    fail_msg("enhanced ships %g bytes a transaction more than off, for %g bytes of events "
             "(six copies)", extra, ev);
  if (community) {
    cJSON *c = get(res, "community.2");
    sane_cell(c, 0);
    double p = in(c, "stages.prepare_us", 1, 1e7), b = in(c, "stages.binlog_us", 1, 1e7);
    double k = in(c, "stages.commit_us", 1, 1e7);
    double share = num(c, "stages.prepare_share") + num(c, "stages.binlog_share") +
                   num(c, "stages.commit_share");
    if (fabs(share - 1) > 1e-6)
      fail_msg("the stages' shares add up to %g", share);
    /* Each stage is inside the client's round trip. */
    in(c, "stages.client_mean_ms", (p + b + k) / 1000 * 0.5, 1e5);
    in(c, "stages.serial_ceiling_tx_per_s", 1e6 / (p + b + k) * 0.999,
       1e6 / (p + b + k) * 1.001);
    in(c, "stages.fsyncs_per_commit", 0.01, 1.5);   /* group commit: at most one each */
    in(c, "stages.file_bytes_per_tx", num(c, "events_bytes_per_tx"), 1e6);
  } else {
    assert_null(cJSON_GetObjectItem(get(res, "community"), "2"));
  }

  /* Every run: one a mode that ran, in order, without error. */
  cJSON *runs = get(o, "runs");
  assert_int_equal(cJSON_GetArraySize(runs), 2 + community);
  for (int i = 0; i < cJSON_GetArraySize(runs); i++) {
    cJSON *r = cJSON_GetArrayItem(runs, i);
    if (cJSON_GetObjectItem(r, "error"))
      fail_msg("run %d failed: %s", i + 1, str(r, "error"));
    assert_int_equal((int)num(r, "seq"), i + 1);
    const char *mode = str(r, "mode");
    if (!community)
      assert_string_not_equal(mode, "community");
    assert_string_equal(str(r, "binlog.mode"), mode);
    assert_int_equal((int)num(r, "errors"), 0);
    in(r, "transactions", 1, 1e9);
    in(r, "window_s", 1.5, 10);
    in(r, "binlog.txns", strcmp(mode, "off") ? 1 : 0, strcmp(mode, "off") ? 1e9 : 0);
    in(r, "cpu_ms_per_tx.A1", 0, 100);
  }
  /* The seed's figures, labelled as the seed's. */
  assert_int_equal((int)num(o, "seed.community_cost_up_to_pct"), 50);
  assert_int_equal((int)num(o, "seed.enhanced_cost_pct"), 13);
  assert_int_equal(cJSON_GetArraySize(get(o, "seed.tps")), 8);
  assert_non_null(strstr(str(o, "seed.source"), "not this machine"));
  cJSON_Delete(o);

  /* The table says the same, community's state included. */
  rc = sh(out, sizeof out, "%s bench binlog --clients 2 --duration 1 --warmup 0 --rounds 1 "
          "--rows 500 --modes community --no-limit --no-note --dir %s/bl --base-port %d "
          "2>>%s.err", bin, dir, base, dir);
  if (community) {
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "where a commit's time goes"));
  } else {
    /* Nothing could be measured: not a result. */
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "community  not available: "));
  }
  assert_non_null(strstr(out, "seed 003's figures"));
}

static void tiny_recovery_run(void **state)
{
  (void)state;
  int rc = sh(out, sizeof out, "%s bench recovery --binlog off,community,enhanced --sizes "
              "8,10,12 --repeats 1 --json --dir %s/rec --base-port %d 2>>%s.err", bin, dir,
              base, dir);
  if (rc != 0)
    fail_msg("bench recovery --binlog exited %d; its stderr is in %s.err", rc, dir);
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("stdout is not one JSON object: %.300s", out);
  conditions(o);
  assert_string_equal(str(o, "conditions.sizes_mib"), "8,10,12");
  assert_true(cJSON_IsString(get(o, "conditions.sizes_why")));
  cJSON *ms = get(o, "modes");
  assert_true(available(ms, "off"));
  assert_true(available(ms, "enhanced"));
  int community = available(ms, "community");
  const char *modes[] = {"off", "community", "enhanced"};
  for (int m = 0; m < 3; m++) {
    if (m == 1 && !community)
      continue;
    cJSON *md = get(ms, modes[m]);
    if (cJSON_GetObjectItem(md, "error"))
      fail_msg("%s: %s", modes[m], str(md, "error"));
    cJSON *zs = get(md, "sizes");
    assert_int_equal(cJSON_GetArraySize(zs), 3);
    double prev_b = -1, prev_t = -1;
    for (int i = 0; i < 3; i++) {
      cJSON *z = cJSON_GetArrayItem(zs, i);
      if (cJSON_GetObjectItem(z, "error"))
        fail_msg("%s, size %d: %s", modes[m], i, str(z, "error"));
      int mib = (int)num(z, "mib");
      assert_int_equal(mib, 8 + 2 * i);
      double b = num(z, "binlog_bytes"), t = num(z, "transactions");
      if (m == 0) {
        assert_true(b == 0);                     /* no binlog */
      } else {
        /* Filled to at least the size, by at most one transaction more
         * (~1.8 MB of events; the table's load packs ~6 MiB). */
        in(z, "binlog_bytes", mib * 1048576.0, mib * 1048576.0 + 4e6);
      }
      assert_true(b >= prev_b && t >= prev_t);
      prev_b = b;
      prev_t = t;
      assert_int_equal((int)num(z, "repeats"), 1);
      double total = in(z, "total_ms", 0.1, 120000);
      in(z, "total_ms_max", total, total);
      double rec = in(z, "volume_recovery_ms", 0, total);
      in(z, "open_ms", rec, total);
      /* The cold restart: the same split, from the disk. */
      double ct = in(z, "cold.total_ms", 0.1, 120000);
      double cr = in(z, "cold.volume_recovery_ms", 0, ct);
      in(z, "cold.open_ms", cr, ct);
      if (m == 1) {
        in(z, "cold.binlog_scan_ms", 1e-3, ct);
        in(z, "cold.scan_bytes", num(z, "scan_bytes"), 2 * b + 1e6);
      } else {
        in(z, "cold.binlog_scan_ms", 0, 0);
      }
      if (m == 1) {
        /* The open read the whole file: every transaction's frame. */
        in(z, "binlog_scan_ms", 1e-3, total);
        in(z, "scan_bytes", 0.9 * b, 2 * b + 1e6);
        in(z, "scan_frames", t, 1e9);
        in(z, "rolled_forward", 0, 1e9);
      } else {
        in(z, "binlog_scan_ms", 0, 0);
        in(z, "scan_bytes", 0, 0);
      }
    }
  }
  if (!community)
    assert_null(cJSON_GetObjectItem(get(ms, "community"), "sizes"));
  cJSON *seed = get(o, "seed.recovery");
  assert_int_equal(cJSON_GetArraySize(seed), 3);
  in(cJSON_GetArrayItem(seed, 0), "community_binlog_s", 303.42, 303.42);
  in(cJSON_GetArrayItem(seed, 2), "enhanced_binlog_s", 0.61, 0.61);
  cJSON_Delete(o);
}

static void leaves_no_process_and_no_data(void **state)
{
  (void)state;
  char p[512];
  struct stat sb;
  assert_int_equal(live_cluster_processes(), 0);
  snprintf(p, sizeof p, "%s/bl/cluster/data", dir);
  assert_int_not_equal(stat(p, &sb), 0);
  snprintf(p, sizeof p, "%s/rec/cluster/data", dir);
  assert_int_not_equal(stat(p, &sb), 0);
}

/* Exit status non-zero and exactly one line on stderr naming the option. */
static void fails_in_one_line(const char *cmd, const char *args, const char *want)
{
  int rc = sh(out, sizeof out, "%s bench %s %s --dir %s-bad 2>&1 >/dev/null", bin, cmd, args,
              dir);
  assert_int_not_equal(rc, 0);
  char *nl = strchr(out, '\n');
  if (nl == NULL || nl[1] != 0 || strncmp(out, "auralog: ", 9) != 0)
    fail_msg("%s %s: not one line: '%s'", cmd, args, out);
  if (strstr(out, want) == NULL)
    fail_msg("%s %s: '%s' does not say %s", cmd, args, out, want);
}

static void bad_options_fail_in_one_line(void **state)
{
  (void)state;
  fails_in_one_line("binlog", "--clients abc", "--clients");
  fails_in_one_line("binlog", "--clients 32,8", "--clients");
  fails_in_one_line("binlog", "--clients 0", "--clients");
  fails_in_one_line("binlog", "--clients 1,2,3,4,5,6,7", "--clients");
  fails_in_one_line("binlog", "--modes mysql", "mysql");
  fails_in_one_line("binlog", "--modes off,off", "off");
  fails_in_one_line("binlog", "--rounds 0", "--rounds");
  fails_in_one_line("binlog", "--duration soon", "--duration");
  fails_in_one_line("binlog", "--base-port 99999", "--base-port");
  fails_in_one_line("binlog", "--bogus", "--bogus");
  fails_in_one_line("binlog", "extra", "extra");
  fails_in_one_line("recovery", "--binlog mysql", "mysql");
  fails_in_one_line("recovery", "--binlog enhanced --sizes 4,2", "--sizes");
  fails_in_one_line("recovery", "--binlog enhanced --sizes 0", "--sizes");
  fails_in_one_line("recovery", "--binlog enhanced --repeats 0", "--repeats");
  fails_in_one_line("recovery", "--binlog enhanced --bogus", "--bogus");
  fails_in_one_line("recovery", "--binlog", "--binlog");
  char p[300];
  struct stat sb;
  snprintf(p, sizeof p, "%s-bad", dir);
  assert_int_not_equal(stat(p, &sb), 0);      /* nothing was started */
  assert_int_equal(sh(out, sizeof out, "%s bench binlog --help", bin), 0);
  assert_non_null(strstr(out, "usage: auralog bench binlog"));
  assert_non_null(strstr(out, "--modes"));
  assert_int_equal(sh(out, sizeof out, "%s bench --help", bin), 0);
  assert_non_null(strstr(out, "auralog bench binlog --help"));
  assert_int_equal(sh(out, sizeof out, "%s bench recovery --help", bin), 0);
  assert_non_null(strstr(out, "--binlog"));
  assert_int_equal(sh(out, sizeof out, "%s bench recovery --binlog enhanced --help", bin), 0);
  assert_non_null(strstr(out, "usage: auralog bench recovery --binlog"));
  assert_non_null(strstr(out, "--sizes"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_options_fail_in_one_line),
    cmocka_unit_test(tiny_binlog_run),
    cmocka_unit_test(tiny_recovery_run),
    cmocka_unit_test(leaves_no_process_and_no_data),
  };
  return cmocka_run_group_tests_name("integration: bench binlog", tests, setup, teardown);
}
