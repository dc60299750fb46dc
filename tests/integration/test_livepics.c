/*
 * Integration: the live cluster's pictures (the dashboard and `auralog
 * viz`) show the mechanism, looked at as a student would, in a real
 * browser at 1400x1000 (it_pictures does the same for the simulator's and
 * the labs' timelines).
 *
 * A cluster takes a fault of every kind `auralog fault` has, one after
 * the other with writes between them: slow, stale, node-stop and
 * node-start, partition and heal, az-down and az-up, writer-stop,
 * writer-crash and engine-crash (each a failover: a new epoch, its
 * recovery's jump of LAL LSNs), then gossip off and a drop on A2, which
 * leaves A2 a hole below records it holds. Then:
 *
 *   - the dashboard, rendered by headless chromium (scripts/deps.sh
 *     --test installs it) at 1400x1000, is no wider than the window, cuts
 *     no card short, lets no label cover another, draws a labelled mark
 *     for every fault kind, breaks its LSN axis at the jumps, and has
 *     the "acked by" strip with A2's missed records in red;
 *   - `auralog viz` draws pg 0's log a row per segment with A2's hole
 *     shaded, no wider than the window either.
 *
 * Then a drain in flight (member.h): a spare A3 joins AZ A with its
 * gossip off, so the segments it takes over from A1 cannot hydrate and
 * the moves stay in flight; the dashboard's membership panel lists them
 * (kind, from, to, age), A1's card says draining and A3's has its next
 * segments; `auralog viz` labels A3's rows as incoming, with whom they
 * replace, and the PG's epoch and move in its title. Both still fit.
 *
 * The PNGs (dashboard-faults.png, viz-segments.png, dashboard-drain.png,
 * viz-drain.png), the page's DOM and
 * the status stay in build/test-logs/pictures/ (beside AURALOG_BIN, as
 * it_pictures keeps its own), to be looked at.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "param.h"

static int http_port;
static char logs[256];

/* Every fault kind, as the dashboard's marks name them (data-kind), and
 * the label each mark must carry. */
static const struct {
  const char *kind, *label;
} kinds[] = {
  {"slow", "slow B1 200 ms"},       {"stale", "stale B2 on"},
  {"node-stop", "node-stop A1"},    {"node-start", "node-start A1"},
  {"partition", "partition C"},     {"heal", "heal"},
  {"az-down", "az-down C"},         {"az-up", "az-up C"},
  {"writer-stop", "writer-stop"},   {"writer-crash", "writer-crash"},
  {"engine-crash", "engine-crash"}, {"gossip-off", "gossip A2 off"},
  {"drop", "drop A2 ×1"},
};

/* ---- the cluster ---------------------------------------------------------- */

/* Rows through `auralog sql --dir`, which finds the writer of the moment
 * (it moves at each failover); tried again for a few seconds while a new
 * writer takes over. */
static void write_rows(int n)
{
  char stmts[4096];
  size_t k = 0;
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(stmts + k, sizeof stmts - k,
                          "insert into p values(%d, randomblob(200));\n", i);
  for (int t = 0; t < 50; t++) {
    if (sh_in(stmts, out, OUT_SIZE, "%s sql --dir %s 2>&1", bin, dir) == 0)
      return;
    usleep(200000);
  }
  fail_msg("writes failed for 10 s: %s", out);
}

static double failover_num(const char *field)
{
  cJSON *o = status("main"), *f = cJSON_GetObjectItem(o, "failover");
  double v = f ? cJSON_GetObjectItem(f, field)->valuedouble : -1;
  cJSON_Delete(o);
  return v;
}

/* Until the coordinator counts n failovers done, and a replica could
 * take over again after `cluster up` brings the old writer back. */
static void failover_done(int n)
{
  for (int i = 0; i < 150 && failover_num("failovers") < n; i++)
    usleep(100000);
  if (failover_num("failovers") < n)
    fail_msg("failover %d not done within 15 s", n);
  assert_int_equal(sh(out, OUT_SIZE, "%s cluster up --dir %s 2>&1", bin, dir), 0);
  for (int i = 0; i < 150 && failover_num("candidates") < 1; i++)
    usleep(100000);
}

static int setup(void **state)
{
  (void)state;
  const char *b = getenv("AURALOG_BIN") ? getenv("AURALOG_BIN") : "build/auralog";
  const char *slash = strrchr(b, '/');
  snprintf(logs, sizeof logs, "%.*s/test-logs/pictures", slash ? (int)(slash - b) : 1, slash ? b : ".");
  char cmd[400];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", logs);
  if (system(cmd) != 0)
    return -1;
  if (cluster_start_with("livepics", " --failover") != 0)
    return -1;
  http_port = base + HTTP_PORT_OFFSET;
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- the browser ---------------------------------------------------------- */

static void need_chromium(void)
{
  if (sh(NULL, 0, "command -v chromium >/dev/null") != 0)
    fail_msg("chromium is not installed: this test renders the pictures in Debian's chromium "
             "(scripts/deps.sh installs it: bash scripts/deps.sh --test)");
}

/* Headless chromium at 1400x1000 on url: --dump-dom into out (what), or a
 * PNG at png. */
static void chromium(const char *url, const char *png)
{
  need_chromium();
  char what[512];
  if (png)
    snprintf(what, sizeof what, "--hide-scrollbars --screenshot=%s", png);
  else
    snprintf(what, sizeof what, "--dump-dom");
  int rc = sh(out, OUT_SIZE,
              "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic "
              "--no-first-run --disable-background-networking --disable-component-update "
              "--disable-sync --user-data-dir=%s/chromium --window-size=1400,1000 "
              "--virtual-time-budget=5000 %s '%s' 2>>%s/chromium.log", dir, what, url, dir);
  if (rc != 0)
    fail_msg("chromium failed (%d) on %s; see %s/chromium.log", rc, url, dir);
}

/* The value of attribute name on the page's <html> element ("" if none). */
static const char *html_attr(const char *name)
{
  static char v[1024];
  char key[64];
  snprintf(key, sizeof key, "%s=\"", name);
  const char *h = strstr(out, "<html"), *end = h ? strchr(h, '>') : NULL;
  const char *p = h ? strstr(h, key) : NULL;
  v[0] = 0;
  if (p && p < end)
    sscanf(p + strlen(key), "%1023[^\"]", v);
  return v;
}

static int count(const char *needle)
{
  int n = 0;
  for (const char *p = out; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

static void save(const char *name, const char *text)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s", logs, name);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* ---- tests ------------------------------------------------------------------ */

static void a_fault_of_each_kind(void **state)
{
  (void)state;
  sql_ok("create table p(a, b);", "");
  write_rows(4);
  fault("slow B1 200");
  write_rows(2);
  fault("stale B2 on");
  write_rows(2);
  fault("node-stop A1");
  write_rows(3);
  fault("node-start A1");
  fault("partition C");
  write_rows(2);
  fault("heal");
  fault("az-down C");
  write_rows(2);
  fault("az-up C");
  /* Three writers lost three ways: each a failover to a replica, a new
   * epoch, and its recovery's jump of LAL LSNs. */
  fault("writer-stop");
  failover_done(1);
  write_rows(2);
  fault("writer-crash");
  failover_done(2);
  write_rows(2);
  fault("engine-crash");
  failover_done(3);
  write_rows(3);
  usleep(2000000);           /* the new writer and its replica settle */
  /* A hole on A2: its gossip off, one Append lost, and rows after it
   * (the writer stops waiting for A2's answer after a second). */
  fault("gossip A2 off");
  fault("drop A2 1");
  write_rows(1);
  usleep(1500000);
  write_rows(4);
  usleep(1500000);           /* heartbeats and the engine's report carry it */
  cJSON *o = status("main");
  char *js = cJSON_Print(o);
  save("dashboard-faults-status.json", js);
  free(js);
  /* The hole the pictures must show: A2's SCL below its PG's best. */
  cJSON *segs = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "pgs"), 0), "segments");
  double a2 = -1, best = 0, a2max = 0;
  cJSON *sg;
  cJSON_ArrayForEach(sg, segs) {
    double scl = cJSON_GetObjectItem(sg, "scl")->valuedouble;
    if (scl > best)
      best = scl;
    if (!strcmp(cJSON_GetObjectItem(sg, "node")->valuestring, "A2")) {
      a2 = scl;
      a2max = cJSON_GetObjectItem(sg, "max_lsn")->valuedouble;
    }
  }
  cJSON_Delete(o);
  print_message("A2: SCL %.0f, holds to %.0f; its peers' best SCL %.0f\n", a2, a2max, best);
  if (!(a2 < best && a2max > a2))
    fail_msg("A2 has no hole (SCL %.0f, holds to %.0f, peers %.0f)", a2, a2max, best);
}

static void the_dashboard_fits_and_draws_every_fault(void **state)
{
  (void)state;
  char url[128], png[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", http_port);
  chromium(url, NULL);
  save("dashboard-faults.html", out);
  /* The page measured itself at 1400 px. */
  int sw = atoi(html_attr("data-scroll-width")), vw = atoi(html_attr("data-view-width"));
  print_message("the dashboard at 1400x1000: document %d px wide, window %d px; clipped: '%s'\n",
                sw, vw, html_attr("data-clipped"));
  if (vw == 0)
    fail_msg("the page wrote no measurements on <html> (data-view-width): did its script run?");
  assert_int_equal(vw, 1400);
  if (sw > 1400)
    fail_msg("the dashboard is %d px wide in a 1400 px window", sw);
  if (html_attr("data-clipped")[0])
    fail_msg("cards cut short at 1400 px: %s", html_attr("data-clipped"));
  /* No label of the strip or the timeline covers another. */
  int overlaps = atoi(html_attr("data-overlaps"));
  if (overlaps != 0 || html_attr("data-overlaps")[0] == 0)
    fail_msg("%d pairs of labels overlap: %s", overlaps, html_attr("data-overlap-pairs"));
  /* A labelled mark for every fault kind, in the timeline. */
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    char mark[96], label[96];
    snprintf(mark, sizeof mark, "class=\"fault-mark\" data-kind=\"%s\"", kinds[i].kind);
    if (strstr(out, mark) == NULL)
      fail_msg("the timeline has no mark for %s", kinds[i].kind);
    snprintf(label, sizeof label, ">%s", kinds[i].label);   /* a writer fault may name the member: "writer-crash (R1)" */
    if (strstr(out, label) == NULL)
      fail_msg("no label '%s' on the page", kinds[i].label);
  }
  /* What stays on: bands for the slow, stale and gossip-off nodes. */
  assert_non_null(strstr(out, "class=\"fault-band\" data-node=\"B1\" data-kind=\"slow\""));
  assert_non_null(strstr(out, "class=\"fault-band\" data-node=\"B2\" data-kind=\"stale\""));
  assert_non_null(strstr(out, "class=\"fault-band\" data-node=\"A2\" data-kind=\"gossip-off\""));
  /* Three recoveries' jumps: the LSN axis breaks rather than squeeze. */
  print_message("axis breaks: %d; acked-by columns: %d, A2 cells missing: %d\n",
                count("class=\"axis-break\""), count("class=\"ack-col\""),
                count("data-node=\"A2\" data-state=\"missing\""));
  assert_true(count("class=\"axis-break\"") >= 1);
  /* The acked-by strip: a column per recent record, A2's misses in red. */
  assert_non_null(strstr(out, "id=\"acked\""));
  assert_true(count("class=\"ack-col\"") >= 8);
  assert_true(count("class=\"ack-cell\" data-node=\"A2\" data-state=\"missing\"") >= 1 ||
              count("class=\"ack-hole\" data-node=\"A2\"") >= 1);
  snprintf(png, sizeof png, "%s/dashboard-faults.png", logs);
  chromium(url, png);
  print_message("the dashboard as a student sees it: %s\n", png);
}

static void viz_draws_each_segment_with_its_hole(void **state)
{
  (void)state;
  char svg[512], png[512], url[PATH_MAX + 16];
  snprintf(svg, sizeof svg, "%s/viz-segments.svg", logs);
  assert_int_equal(sh(out, OUT_SIZE, "%s viz --dir %s -o %s 2>&1", bin, dir, svg), 0);
  assert_int_equal(sh(out, OUT_SIZE, "%s viz --dir %s --format dot 2>&1", bin, dir), 0);
  /* pg 0's log, a row per segment; A2's row has a hole. */
  const char *log = strstr(out, "pg0 [shape=plaintext");
  assert_non_null(log);
  const char *row = strstr(log, "<b>A2</b> ");
  assert_non_null(row);
  const char *end = strstr(row, "</tr>");
  const char *hole = strstr(row, "<b>hole</b>");
  if (hole == NULL || hole > end)
    fail_msg("A2's row in pg 0's log shows no hole: %.*s", (int)(end - row), row);
  /* No wider than the window (graphviz sizes SVG in points: 4/3 px). */
  assert_int_equal(sh(out, OUT_SIZE, "head -c 2000 %s", svg), 0);
  double wpt = 0;
  const char *w = strstr(out, "<svg width=\"");
  assert_non_null(w);
  sscanf(w + 12, "%lfpt", &wpt);
  print_message("viz: %.0f pt = %.0f px wide\n", wpt, wpt * 4 / 3);
  assert_true(wpt * 4 / 3 <= 1400);
  snprintf(png, sizeof png, "%s/viz-segments.png", logs);
  char abs[PATH_MAX];
  assert_non_null(realpath(svg, abs));
  snprintf(url, sizeof url, "file://%s", abs);
  chromium(url, png);
  print_message("the drawing in the browser: %s\n", png);
}

/* A drain that cannot finish: A3 (a new spare, gossip off) gets A1's
 * segments as next ones and never hydrates them. */
static void a_drain_in_flight_shows(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s node add --az A --dir %s 2>&1", bin, dir), 0);
  fault("gossip A3 off");
  if (sh(out, OUT_SIZE, "%s node drain A1 --no-wait --dir %s 2>&1", bin, dir) != 0)
    fail_msg("node drain A1: %s", out);
  write_rows(3);
  usleep(2500000);           /* heartbeats carry the next segments' SCLs */
  cJSON *o = status("main");
  char *js = cJSON_Print(o);
  save("dashboard-drain-status.json", js);
  free(js);
  int drains = 0;
  cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItem(o, "repairs"))
    drains += !strcmp(cJSON_GetObjectItem(r, "kind")->valuestring, "drain") &&
              !strcmp(cJSON_GetObjectItem(r, "from")->valuestring, "A1") &&
              !strcmp(cJSON_GetObjectItem(r, "to")->valuestring, "A3");
  cJSON_Delete(o);
  print_message("drain A1 -> A3: %d positions in flight\n", drains);
  if (drains == 0)
    fail_msg("no move from A1 to A3 in flight: the drain finished or never began");

  /* The dashboard: the moves, A1 draining, A3's next segments; it fits. */
  char url[128], png[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", http_port);
  chromium(url, NULL);
  save("dashboard-drain.html", out);
  if (count("class=\"move\"") < 1 || strstr(out, "data-kind=\"drain\" data-from=\"A1\" data-to=\"A3\"") == NULL)
    fail_msg("the dashboard's membership panel lists no drain A1 -> A3");
  assert_non_null(strstr(out, "id=\"node-A1\" data-state=\"draining\""));
  assert_true(count("class=\"seg next\" id=\"seg-A3-") >= 1);
  assert_non_null(strstr(out, "id=\"mttr\""));
  int sw = atoi(html_attr("data-scroll-width"));
  if (sw > 1400 || html_attr("data-clipped")[0])
    fail_msg("with a drain in flight the dashboard is %d px wide, cut short: '%s'", sw,
             html_attr("data-clipped"));
  if (atoi(html_attr("data-overlaps")) != 0)
    fail_msg("labels overlap: %s", html_attr("data-overlap-pairs"));
  snprintf(png, sizeof png, "%s/dashboard-drain.png", logs);
  chromium(url, png);
  print_message("the dashboard with a drain in flight: %s\n", png);

  /* viz: A3's rows are incoming, the titles say the move and the epoch. */
  char svg[512];
  assert_int_equal(sh(out, OUT_SIZE, "%s viz --dir %s --format dot 2>&1", bin, dir), 0);
  save("viz-drain.dot", out);
  assert_non_null(strstr(out, "<b>→A3</b>"));
  assert_non_null(strstr(out, "replaces A1 at position"));
  assert_non_null(strstr(out, "moving: pos "));
  assert_non_null(strstr(out, "mepoch "));
  assert_non_null(strstr(out, "<b>DRAINING</b>"));
  assert_non_null(strstr(out, "members [shape=plaintext"));
  snprintf(svg, sizeof svg, "%s/viz-drain.svg", logs);
  assert_int_equal(sh(out, OUT_SIZE, "%s viz --dir %s -o %s 2>&1", bin, dir, svg), 0);
  assert_int_equal(sh(out, OUT_SIZE, "head -c 2000 %s", svg), 0);
  double wpt = 0;
  const char *w = strstr(out, "<svg width=\"");
  assert_non_null(w);
  sscanf(w + 12, "%lfpt", &wpt);
  /* The row of AZs sets the width: six nodes fit 1400 px (above), and the
   * spare adds a seventh box; the membership marks add no width of their
   * own (the panel sits above the engine, next rows' labels are short). */
  print_message("viz with a drain: %.0f pt = %.0f px wide (7 nodes)\n", wpt, wpt * 4 / 3);
  assert_true(wpt * 4 / 3 <= 1400 * 7 / 6);
  snprintf(png, sizeof png, "%s/viz-drain.png", logs);
  assert_int_equal(sh(out, OUT_SIZE, "%s viz --dir %s -o %s 2>&1", bin, dir, png), 0);
  print_message("the drawing: %s\n", png);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_fault_of_each_kind),
    cmocka_unit_test(the_dashboard_fits_and_draws_every_fault),
    cmocka_unit_test(viz_draws_each_segment_with_its_hole),
    cmocka_unit_test(a_drain_in_flight_shows),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: the live cluster's pictures", tests, setup, teardown);
}
