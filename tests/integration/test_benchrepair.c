/*
 * Integration: `auralog bench repair --quick`. It starts its own cluster
 * of nine nodes in a fresh directory, fills four PGs of 1 MiB, kills a
 * node and times the coordinator's repair, then does it again under two
 * writing clients, and prints one JSON object: the repair finished, its
 * detection follows --repair-after (passed on by `cluster up
 * --repair-after` to the coordinator), the spares pulled about the
 * segments the node hosted, the machine's bandwidth limits were measured,
 * and the clients committed with and during a repair. Afterwards no
 * process of its cluster is left and the nodes' data is gone. Bad options
 * fail in one line, before anything starts.
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

#define AFTER_MS 2000          /* the run's --repair-after: shorter than the default */

static int setup(void **state)
{
  (void)state;
  bin = getenv("AURALOG_BIN");
  if (bin == NULL)
    bin = "build/auralog";
  snprintf(dir, sizeof dir, "/tmp/auralog-it-benchrepair-%d", (int)getpid());
  base = free_block((int)getpid() * 2 + 1);
  snprintf(coord, sizeof coord, "127.0.0.1:%d", base);
  snprintf(engine, sizeof engine, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  sh(NULL, 0, "%s cluster down --dir %s 2>/dev/null", bin, dir);
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
  if (!cJSON_IsNumber(v))
    fail_msg("%s is not a number", path);
  return v->valuedouble;
}

static void quick_run_in_json(void **state)
{
  (void)state;
  int rc = sh(out, sizeof out, "%s bench repair --quick --json --no-note --repair-after %d "
              "--dir %s --base-port %d 2>%s.err", bin, AFTER_MS, dir, base, dir);
  if (rc != 0)
    fail_msg("bench repair exited %d; its stderr is in %s.err", rc, dir);
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("stdout is not one JSON object: %.300s", out);
  assert_int_equal((int)num(o, "conditions.repair_after_ms"), AFTER_MS);
  assert_int_equal((int)num(o, "conditions.hydrate_bytes_per_s"), HYDRATE_BYTES_PER_S);
  assert_true(cJSON_IsString(get(o, "conditions.build")));
  assert_true(num(o, "limits.disk_write_bytes_per_s") > 0);
  assert_true(num(o, "limits.loopback_bytes_per_s") > 0);

  cJSON *ps = get(o, "points");
  assert_int_equal(cJSON_GetArraySize(ps), 1);
  cJSON *p = cJSON_GetArrayItem(ps, 0);
  assert_int_equal((int)num(p, "pgs"), 4);
  assert_int_equal((int)num(p, "repairs_ok"), 1);
  assert_true(num(p, "volume_pgs") >= 4);
  /* Full PGs: a segment holds about its MiB of random pages. */
  double seg = num(p, "segment_bytes");
  if (seg < 0.8 * 1048576 || seg > 2 * 1048576)
    fail_msg("a full PG's segment holds %g bytes, not about 1 MiB", seg);
  /* Detection: the coordinator waited --repair-after, not its default. */
  double det = num(p, "detect_ms.median"), move = num(p, "move_ms.median");
  if (det < AFTER_MS - HEARTBEAT_MS || det > AFTER_MS + MOVE_RETRY_MS + 2000)
    fail_msg("detection took %g ms with --repair-after %d", det, AFTER_MS);
  double mttr = num(p, "mttr_client_ms.median");
  assert_true(mttr >= det + move - 1 && mttr <= det + move + 1);
  assert_true(num(p, "mttr_client_ms.max") >= mttr);
  assert_true(num(p, "mttr_coord_ms.median") > 0);
  /* The spares pulled at least most of what the killed node hosted. */
  cJSON *r = cJSON_GetArrayItem(get(p, "repeats"), 0);
  double segs = num(r, "segments"), moved = num(r, "bytes_moved");
  assert_true(segs >= 1);
  if (moved < 0.5 * segs * seg)
    fail_msg("%g segments of %g bytes moved, but the spares pulled only %g bytes", segs, seg,
             moved);
  assert_true(num(r, "spares") >= 1);
  assert_true(num(p, "per_spare_bytes_per_s") > 0);

  /* The foreground: commits with no repair and while one moved. */
  assert_int_equal((int)num(o, "foreground.clients"), 2);
  assert_true(num(o, "foreground.no_repair.transactions") > 0);
  assert_true(num(o, "foreground.no_repair.p99_ms") > 0);
  assert_true(num(o, "foreground.during_move.seconds") > 0);
  assert_true(cJSON_IsTrue(get(o, "foreground.repair.ok")));
  assert_true(cJSON_IsString(get(o, "paper_scaled.because")));
  assert_true(num(o, "paper_scaled.seconds_10gb_measured") > 0);
  cJSON_Delete(o);
}

static void leaves_no_process_and_no_data(void **state)
{
  (void)state;
  char p[512];
  struct stat sb;
  assert_int_equal(live_cluster_processes(), 0);
  snprintf(p, sizeof p, "%s/data", dir);
  assert_int_not_equal(stat(p, &sb), 0);
}

/* Exit status non-zero and exactly one line on stderr naming the option. */
static void fails_in_one_line(const char *args, const char *want)
{
  int rc = sh(out, sizeof out, "%s bench repair %s --dir %s-bad 2>&1 >/dev/null", bin, args,
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
  fails_in_one_line("--points abc", "--points");
  fails_in_one_line("--points 10x", "--points");
  fails_in_one_line("--points 0x1", "--points");
  fails_in_one_line("--points 10x1,", "--points");
  fails_in_one_line("--repeats 0", "--repeats");
  fails_in_one_line("--clients 1000", "--clients");
  fails_in_one_line("--repair-after soon", "--repair-after");
  fails_in_one_line("--base-port 99999", "--base-port");
  fails_in_one_line("--bogus", "--bogus");
  char p[300];
  struct stat sb;
  snprintf(p, sizeof p, "%s-bad", dir);
  assert_int_not_equal(stat(p, &sb), 0);      /* nothing was started */
  assert_int_equal(sh(out, sizeof out, "%s bench repair --help", bin), 0);
  assert_non_null(strstr(out, "usage: auralog bench repair"));
  assert_non_null(strstr(out, "--quick"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_options_fail_in_one_line),
    cmocka_unit_test(quick_run_in_json),
    cmocka_unit_test(leaves_no_process_and_no_data),
  };
  return cmocka_run_group_tests_name("integration: bench repair", tests, setup, teardown);
}
