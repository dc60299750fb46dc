/*
 * Integration: `auralog bench backup` with tiny settings (one round of
 * 2 s runs, volumes of 1, 2 and 4 MiB, 2 s of updates after each fill).
 * It starts its own clusters in a fresh directory and prints one JSON
 * object; every figure must be there, positive and sane: the foreground
 * ran with backup off and on and committed without error, the backup's
 * lag and the store's bytes per transaction were measured, and every
 * restore (file and new volume, at the newest, middle and oldest point)
 * succeeded at exactly its point, the volumes growing with the sizes and
 * the points ageing in order. Afterwards no process of its clusters is
 * left and their data and backups are gone. Bad options fail in one line, before
 * anything starts.
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
  snprintf(dir, sizeof dir, "/tmp/auralog-it-benchbackup-%d", (int)getpid());
  base = free_block((int)getpid() * 2 + 1);
  snprintf(coord, sizeof coord, "127.0.0.1:%d", base);
  snprintf(engine, sizeof engine, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  sh(NULL, 0, "%s cluster down --dir %s/cluster 2>/dev/null", bin, dir);
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

/* One foreground run (or a side's medians): it committed, at a sane rate
 * and latency, and every role used CPU. */
static void sane_run(cJSON *r)
{
  if (cJSON_GetObjectItem(r, "error"))
    fail_msg("a foreground run failed: %s", cJSON_GetObjectItem(r, "error")->valuestring);
  in(r, "tx_per_s", 1, 1e6);
  double p50 = in(r, "p50_ms", 0.001, 5000);
  in(r, "p99_ms", p50, 30000);
  double eng = in(r, "cpu_ms_per_tx.engine", 1e-6, 100);
  double nodes = in(r, "cpu_ms_per_tx.nodes", 1e-6, 100);
  double coord_ms = in(r, "cpu_ms_per_tx.coordinator", 0, 100);
  double total = num(r, "cpu_ms_per_tx.total");
  /* The medians of each figure need not add up; a run's do. */
  if (cJSON_GetObjectItem(r, "round") &&
      fabs(total - (eng + nodes + coord_ms)) > 1e-6 * (1 + total))
    fail_msg("cpu total %g is not engine %g + nodes %g + coordinator %g", total, eng, nodes,
             coord_ms);
  const char *ids[] = {"A1", "A2", "B1", "B2", "C1", "C2"};
  for (int k = 0; k < 6; k++) {
    char p[64];
    snprintf(p, sizeof p, "cpu_ms_per_tx.%s", ids[k]);
    in(r, p, 0, 100);
  }
}

/* One restore of a target: done, at exactly the target, timed. */
static void sane_restore(cJSON *x, double lsn, int vol)
{
  if (!cJSON_IsTrue(get(x, "ok")))
    fail_msg("a restore failed: %s", cJSON_GetObjectItem(x, "error")
                                         ? cJSON_GetObjectItem(x, "error")->valuestring : "?");
  double s = in(x, "seconds", 1e-6, 60);
  assert_true(num(x, "cpl") == lsn);      /* a VDL is a CPL: restored exactly */
  in(x, "records", 1, lsn);
  in(x, "objects", 1, 1e6);
  in(x, "bytes_read", 1, 1e10);
  in(x, "pages", 1, 1e7);
  if (vol) {
    double b = in(x, "build_s", 1e-6, 60), l = in(x, "load_s", 1e-6, 60);
    if (fabs(b + l - s) > 0.01 + 0.01 * s)
      fail_msg("into a volume: %g s is not build %g + load %g", s, b, l);
  }
}

static void tiny_run_in_json(void **state)
{
  (void)state;
  int rc = sh(out, sizeof out, "%s bench backup --duration 2 --warmup 1 --rounds 1 "
              "--clients 4 --sizes 1,2,4 --age 2 --json --no-note --dir %s --base-port %d "
              "2>%s.err", bin, dir, base, dir);
  if (rc != 0)
    fail_msg("bench backup exited %d; its stderr is in %s.err", rc, dir);
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("stdout is not one JSON object: %.300s", out);

  /* The conditions, as every benchmark prints them. */
  assert_true(num(o, "conditions.cores") >= 1);
  assert_true(cJSON_IsString(get(o, "conditions.cpu")));
  assert_true(cJSON_IsString(get(o, "conditions.kernel")));
  assert_true(cJSON_IsString(get(o, "conditions.filesystem")));
  assert_true(cJSON_IsString(get(o, "conditions.build")));
  assert_int_equal((int)num(o, "conditions.backup_ms"), BACKUP_MS);
  in(o, "conditions.elapsed_s", 1, 600);

  /* 1. The foreground: one run with backup off, one with it on. */
  assert_int_equal((int)num(o, "foreground.clients"), 4);
  assert_int_equal((int)num(o, "foreground.rounds"), 1);
  assert_string_equal(get(o, "foreground.workload")->valuestring, "write-only");
  cJSON *runs = get(o, "foreground.runs");
  assert_int_equal(cJSON_GetArraySize(runs), 2);
  int seen[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    cJSON *r = cJSON_GetArrayItem(runs, i);
    int on = cJSON_IsTrue(get(r, "backup"));
    seen[on]++;
    sane_run(r);
    assert_int_equal((int)num(r, "errors"), 0);
    in(r, "transactions", 1, 1e9);
    if (on) {
      in(r, "store_bytes_per_tx", 1, 65536);
      in(r, "lag_samples", 1, 1e6);
    }
  }
  assert_int_equal(seen[0], 1);
  assert_int_equal(seen[1], 1);
  assert_string_equal(cJSON_IsTrue(get(cJSON_GetArrayItem(runs, 0), "backup")) ? "on" : "off",
                      "off");     /* round 1: off first */
  sane_run(get(o, "foreground.off"));
  sane_run(get(o, "foreground.on"));
  /* The difference: what on/off says, in percent. */
  double off = num(o, "foreground.off.tx_per_s"), on = num(o, "foreground.on.tx_per_s");
  double d = num(o, "foreground.diff_pct.tx_per_s");
  if (fabs(d - 100 * (on / off - 1)) > 0.01)
    fail_msg("diff_pct.tx_per_s %g, but on %g and off %g", d, on, off);
  in(o, "foreground.diff_pct.tx_per_s", -95, 1000);
  const char *dk[] = {"p50_ms", "p99_ms", "cpu_engine", "cpu_nodes", "cpu_coordinator",
                      "cpu_total"};
  for (int k = 0; k < 6; k++) {
    char p[64];
    snprintf(p, sizeof p, "foreground.diff_pct.%s", dk[k]);
    num(o, p);
  }

  /* 2. The lag: measured, in order, under half a minute. */
  double p50 = in(o, "lag.p50_ms", 0, 30000);
  double p99 = in(o, "lag.p99_ms", p50, 30000);
  in(o, "lag.max_ms", p99 > 0 ? p99 : 1e-9, 30000);
  in(o, "lag.samples", 1, 1e6);
  /* 3. The store took something for each transaction, less than a
   * transaction's whole redo many times over. */
  in(o, "store.bytes_per_tx", 1, 65536);

  /* 4. Restores: three sizes, each about its MiB, growing; three targets
   * each, newest to oldest, every restore done at exactly its point. */
  cJSON *zs = get(o, "restore.sizes");
  assert_int_equal(cJSON_GetArraySize(zs), 3);
  double prev = 0;
  const int mib[3] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    cJSON *z = cJSON_GetArrayItem(zs, i);
    if (cJSON_GetObjectItem(z, "error"))
      fail_msg("size %d: %s", mib[i], cJSON_GetObjectItem(z, "error")->valuestring);
    assert_int_equal((int)num(z, "mib"), mib[i]);
    double vb = in(z, "volume_bytes", 0.9 * mib[i] * 1048576, 1.1 * mib[i] * 1048576);
    assert_true(vb > prev);
    prev = vb;
    in(z, "pgs", mib[i], 4 * mib[i] + 4);
    in(z, "store_bytes", 0.9 * vb, 1e9);
    in(z, "fill_s", 1e-6, 120);
    in(z, "age_s", 2, 30);
    in(z, "age_transactions", 1, 1e8);
    in(z, "stage_s", 0, 60);
    cJSON *ts = get(z, "targets");
    assert_int_equal(cJSON_GetArraySize(ts), 3);
    const char *names[] = {"newest", "middle", "oldest"};
    double lsn_prev = 1e300, age_prev = -1, pages = 0;
    for (int k = 0; k < 3; k++) {
      cJSON *t = cJSON_GetArrayItem(ts, k);
      assert_string_equal(get(t, "target")->valuestring, names[k]);
      double lsn = in(t, "lsn", 1, 1e15);
      double age = num(t, "age_s");
      if (lsn >= lsn_prev || age <= age_prev)
        fail_msg("size %d: the %s point (LSN %g, %g s old) is not older than the one before "
                 "(LSN %g, %g s old)", mib[i], names[k], lsn, age, lsn_prev, age_prev);
      lsn_prev = lsn;
      age_prev = age;
      assert_true(lsn >= num(z, "window_lo") && lsn <= num(z, "window_hi"));
      sane_restore(get(t, "file"), lsn, 0);
      sane_restore(get(t, "volume"), lsn, 1);
      /* Every point holds the whole volume: the fill came first. */
      double pg = num(t, "file.pages");
      if (k && pg != pages)
        fail_msg("size %d: the %s point has %g pages, the newest %g", mib[i], names[k], pg,
                 pages);
      pages = pg;
      assert_true(num(t, "volume.pages") == pg);
    }
  }
  cJSON_Delete(o);
}

static void leaves_no_process_and_no_data(void **state)
{
  (void)state;
  char p[512];
  struct stat sb;
  assert_int_equal(live_cluster_processes(), 0);
  snprintf(p, sizeof p, "%s/cluster/data", dir);
  assert_int_not_equal(stat(p, &sb), 0);
  snprintf(p, sizeof p, "%s/cluster/backup", dir);
  assert_int_not_equal(stat(p, &sb), 0);
}

/* Exit status non-zero and exactly one line on stderr naming the option. */
static void fails_in_one_line(const char *args, const char *want)
{
  int rc = sh(out, sizeof out, "%s bench backup %s --dir %s-bad 2>&1 >/dev/null", bin, args,
              dir);
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
  fails_in_one_line("--sizes abc", "--sizes");
  fails_in_one_line("--sizes 8,2", "--sizes");
  fails_in_one_line("--sizes 0", "--sizes");
  fails_in_one_line("--sizes 1,2,3,4,5,6,7,8,9", "--sizes");
  fails_in_one_line("--rounds 0", "--rounds");
  fails_in_one_line("--duration soon", "--duration");
  fails_in_one_line("--clients 1000", "--clients");
  fails_in_one_line("--age 0", "--age");
  fails_in_one_line("--base-port 99999", "--base-port");
  fails_in_one_line("--bogus", "--bogus");
  fails_in_one_line("extra", "extra");
  char p[300];
  struct stat sb;
  snprintf(p, sizeof p, "%s-bad", dir);
  assert_int_not_equal(stat(p, &sb), 0);      /* nothing was started */
  assert_int_equal(sh(out, sizeof out, "%s bench backup --help", bin), 0);
  assert_non_null(strstr(out, "usage: auralog bench backup"));
  assert_non_null(strstr(out, "--sizes"));
  assert_int_equal(sh(out, sizeof out, "%s bench --help", bin), 0);
  assert_non_null(strstr(out, "auralog bench backup --help"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_options_fail_in_one_line),
    cmocka_unit_test(tiny_run_in_json),
    cmocka_unit_test(leaves_no_process_and_no_data),
  };
  return cmocka_run_group_tests_name("integration: bench backup", tests, setup, teardown);
}
