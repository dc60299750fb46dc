/*
 * Integration: `auralog viz` draws a real cluster. After a few SQL writes
 * (enough to fill two PGs), it renders SVG naming the six nodes and the
 * VDL the status shows, a PNG (checked by its magic bytes), and DOT text
 * with the engine's log tail (its CPLs came from the engine's report
 * through the coordinator). A stopped node is drawn down and a
 * partitioned AZ partitioned. A bad format, a name without a known
 * extension and an unreachable coordinator fail with one line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "param.h"

static const char *nodes[] = {"A1", "A2", "B1", "B2", "C1", "C2"};

/* The whole file at path (malloc'd, NUL-terminated); NULL if missing. */
static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  fclose(f);
  s[got] = 0;
  if (len)
    *len = got;
  return s;
}

static long long status_vdl(void)
{
  cJSON *o = status("main");
  long long v = (long long)cJSON_GetObjectItem(o, "vdl")->valuedouble;
  cJSON_Delete(o);
  return v;
}

/* With no writes going on, the VDL the coordinator shows once the engine's
 * next reports are in. */
static long long settled_vdl(void)
{
  long long v = status_vdl(), w;
  for (int i = 0; i < 20; i++) {
    usleep(3 * ENGINE_STAT_MS * 1000);
    if ((w = status_vdl()) == v)
      return v;
    v = w;
  }
  fail_msg("the VDL keeps moving (%lld)", v);
  return 0;
}

/* The DOT statement of the node titled id (from "nN [" to ">];"), in out. */
static char *node_stmt(const char *id, char *buf, size_t n)
{
  char want[32];
  snprintf(want, sizeof want, "<b>%s</b>", id);
  char *hit = strstr(out, want);
  if (hit == NULL)
    fail_msg("no node %s in the drawing", id);
  char *start = hit;
  while (start > out && !(start[-1] == '\n' && strncmp(start, "    n", 5) == 0))
    start--;
  char *end = strstr(hit, ">];");
  assert_non_null(end);
  size_t len = (size_t)(end - start) < n - 1 ? (size_t)(end - start) : n - 1;
  memcpy(buf, start, len);
  buf[len] = 0;
  return buf;
}

static int setup(void **state)
{
  (void)state;
  if (cluster_start("viz") != 0)
    return -1;
  /* A few commits, and two blobs that take the volume past its first PG
   * (PG_PAGES pages). */
  return sql("create table t(a, b);"
             "insert into t values(1, 'one');"
             "insert into t values(2, 'two');"
             "insert into t values(3, randomblob(700000));"
             "insert into t values(4, randomblob(700000));"
             "update t set b = 'uno' where a = 1;") == 0 ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- tests ------------------------------------------------------------------ */

static void svg_names_six_nodes_and_the_vdl(void **state)
{
  (void)state;
  char path[512], want[64];
  snprintf(path, sizeof path, "%s/cluster.svg", dir);
  /* The engine reports every ENGINE_STAT_MS: compare with a VDL that holds
   * across the drawing. */
  for (int attempt = 0;; attempt++) {
    long long vdl = settled_vdl();
    assert_true(vdl > 0);
    if (sh(out, sizeof out, "%s viz --format svg -o %s --coord %s 2>&1", bin, path, coord) != 0)
      fail_msg("auralog viz: %s", out);
    if (status_vdl() != vdl && attempt < 3)
      continue;
    char *svg = slurp(path, NULL);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "</svg>"));
    for (int i = 0; i < 6; i++) {
      snprintf(want, sizeof want, ">%s<", nodes[i]);
      if (strstr(svg, want) == NULL)
        fail_msg("node %s is not in the SVG", nodes[i]);
    }
    snprintf(want, sizeof want, "VDL %lld<", vdl);
    if (strstr(svg, want) == NULL)
      fail_msg("the SVG does not show %s", want);
    assert_non_null(strstr(svg, ">AZ A<"));
    assert_non_null(strstr(svg, ">pg 1<"));     /* two PGs: two strips */
    free(svg);
    break;
  }
}

static void png_by_flag_and_by_extension(void **state)
{
  (void)state;
  static const unsigned char magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  char path[512];
  snprintf(path, sizeof path, "%s/cluster.out", dir);
  if (sh(out, sizeof out, "%s viz --format png -o %s --coord %s 2>&1", bin, path, coord) != 0)
    fail_msg("auralog viz --format png: %s", out);
  size_t len;
  char *png = slurp(path, &len);
  assert_non_null(png);
  assert_true(len > 1000);
  assert_memory_equal(png, magic, sizeof magic);
  free(png);
  /* No --format: the name says PNG. */
  snprintf(path, sizeof path, "%s/cluster.png", dir);
  if (sh(out, sizeof out, "%s viz -o %s --coord %s 2>&1", bin, path, coord) != 0)
    fail_msg("auralog viz -o x.png: %s", out);
  png = slurp(path, &len);
  assert_non_null(png);
  assert_memory_equal(png, magic, sizeof magic);
  free(png);
}

static void dot_to_stdout_with_the_log_tail(void **state)
{
  (void)state;
  if (sh(out, sizeof out, "%s viz --format dot --coord %s 2>&1", bin, coord) != 0)
    fail_msg("auralog viz --format dot: %s", out);
  assert_memory_equal(out, "digraph auralog {", 17);
  assert_non_null(strstr(out, "subgraph cluster_az0"));
  assert_non_null(strstr(out, "subgraph cluster_az2"));
  /* The engine's recent records reached the drawing: LSNs, CPLs, flags. */
  assert_non_null(strstr(out, "pg0 [shape=plaintext"));
  assert_non_null(strstr(out, "<b>CPL</b>"));
  assert_non_null(strstr(out, "<b>VDL"));
  /* dot is the default, and AURALOG_COORD stands in for --coord. */
  char again[1 << 16];
  assert_int_equal(sh(again, sizeof again, "AURALOG_COORD=%s %s viz", coord, bin), 0);
  assert_memory_equal(again, "digraph auralog {", 17);
}

static void a_stopped_node_and_a_partition_are_drawn(void **state)
{
  (void)state;
  char stmt[8192];
  fault("node-stop B2");
  wait_node_state("B2", "down", 3000);
  assert_int_equal(sh(out, sizeof out, "%s viz --coord %s", bin, coord), 0);
  node_stmt("B2", stmt, sizeof stmt);
  assert_non_null(strstr(stmt, "DOWN"));
  assert_non_null(strstr(stmt, "dashed"));
  node_stmt("B1", stmt, sizeof stmt);
  assert_null(strstr(stmt, "DOWN"));
  fault("node-start B2");
  wait_node_state("B2", "up", 5000);

  fault("partition C");
  assert_int_equal(sh(out, sizeof out, "%s viz --coord %s", bin, coord), 0);
  node_stmt("C1", stmt, sizeof stmt);
  assert_non_null(strstr(stmt, "PARTITIONED"));
  node_stmt("A1", stmt, sizeof stmt);
  assert_null(strstr(stmt, "PARTITIONED"));
  fault("heal");
}

/* One line on stderr, "auralog: viz: ...", a non-zero exit, no file. */
static void fails_in_one_line(const char *args, const char *file)
{
  int rc = sh(out, sizeof out, "%s viz %s 2>&1 >/dev/null", bin, args);
  if (rc == 0)
    fail_msg("auralog viz %s succeeded", args);
  if (strncmp(out, "auralog: viz: ", 14) != 0 || strchr(out, '\n') != out + strlen(out) - 1)
    fail_msg("auralog viz %s: not one line: '%s'", args, out);
  if (file)
    assert_int_equal(access(file, F_OK), -1);
}

static void bad_arguments_fail_in_one_line(void **state)
{
  (void)state;
  char args[1024], file[512];
  snprintf(file, sizeof file, "%s/x.jpg", dir);
  snprintf(args, sizeof args, "--format jpg -o %s --coord %s", file, coord);
  fails_in_one_line(args, file);
  assert_non_null(strstr(out, "'jpg'"));
  snprintf(file, sizeof file, "%s/drawing", dir);
  snprintf(args, sizeof args, "-o %s --coord %s", file, coord);
  fails_in_one_line(args, file);
  fails_in_one_line("--coord 127.0.0.1:1", NULL);
  snprintf(args, sizeof args, "-o /nonexistent/dir/x.svg --coord %s", coord);
  fails_in_one_line(args, NULL);
  assert_int_equal(sh(out, sizeof out, "%s viz --help", bin), 0);
  assert_non_null(strstr(out, "usage: auralog viz"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(svg_names_six_nodes_and_the_vdl),
    cmocka_unit_test(png_by_flag_and_by_extension),
    cmocka_unit_test(dot_to_stdout_with_the_log_tail),
    cmocka_unit_test(a_stopped_node_and_a_partition_are_drawn),
    cmocka_unit_test(bad_arguments_fail_in_one_line),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: viz", tests, setup, teardown);
}
