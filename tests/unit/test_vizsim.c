/*
 * test_vizsim.c: the timeline of a simulator trace (`auralog viz
 * --sim-trace`, src/cli/viz_sim.c).
 *
 * A hand-written trace in the format of `auralog sim --trace`: writer 0
 * starts and serves in epoch 1, SCLs and the VDL move, AZ B goes down for
 * 1500 ms (az-down, nodes B1 and B2 crash and restart), C1 holds records
 * up to 12 above a hole at 9, C1 is cut from the writer for a while, a
 * message is dropped, the writer and the replica read, writer 0 crashes,
 * writer 1 recovers in epoch 2 from VDL 9 truncating (9, 10000009], and
 * a VIOLATION says commit 11, which w1's VDL acknowledged at 1250 ms, was
 * lost. Checks that the DOT text graphviz reads and renders holds the
 * lanes (the two writers, the six nodes in AZs A, B, C, the readers), the
 * fault as one span over the right columns, the recovery marker, the down
 * and cut cells, only what changes (quiet columns merged, rows only for
 * segments that left their PG), the hole as S^M, short LSNs, the reads,
 * the violation (header, framed column, its text), the point where the
 * run left the model framed with the violation's words (an acknowledged
 * commit, a segment, a read) and the default window before it; that
 * --from/--to narrow it; and that a missing file or a malformed line is a
 * one-line error naming the line, with exit status 2 from `auralog viz`
 * and no drawing written.
 *
 * AURALOG_VIZSIM_OUT=FILE writes the sample's DOT there (to look at: dot
 * -Tsvg FILE -o x.svg).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <getopt.h>
#include <cmocka.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "roles.h"
#include "cli/viz.h"
#include "cli/viz_sim.h"

static const char sample[] =
  "       0 net connect A1:1 coord:1 0 0\n"
  "       1 net accept coord:1 A1:1 0 0\n"
  "     100 ev writer 0 starts\n"
  "     110 ev writer 0: epoch 1 recovers 3 pgs\n"
  "     120 ev writer 0: epoch 1 serves from vdl 0 (truncated to 0)\n"
  "     200 scl A1 0 5\n     200 scl A2 0 5\n     200 scl B1 0 5\n"
  "     200 scl B2 0 5\n     200 scl C1 0 5\n     200 scl C2 0 5\n"
  "     201 scl A1 1 4\n     201 scl C2 1 4\n"
  /* The others host pg 1 too, at 0 (a node's first line for a PG says
   * it hosts it: a spare's rows start only when a repair moves one of
   * its segments there). */
  "     201 scl A2 1 0\n     201 scl B1 1 0\n     201 scl B2 1 0\n     201 scl C1 1 0\n"
  "     210 vdl w1 1 5\n"
  "     300 net deliver w1:1 A1:1 5 40\n"
  "     301 net deliver A1:1 w1:1 6 12\n"
  "    1000 ev fault az-down (target 1/8) for 1500 ms\n"
  "    1000 ev node B1 crashes\n"
  "    1000 ev node B2 crashes\n"
  "    1000 net crash B1:1 - 0 0\n"
  "    1200 scl A1 0 9\n    1200 scl A2 0 9\n    1200 scl C1 0 9\n    1200 scl C2 0 9\n"
  "    1210 vdl w1 1 9\n"
  "    1220 read w1 3 9 5 ok\n    1230 read w1 4 9 7 ok\n"
  "    1250 vdl w1 1 11\n"
  "    1300 scl C1 0 9 12\n"
  "    1500 net cut C1:1 w1:1 0 0\n"
  "    1600 net drop w1:1 A1:1 5 40\n"
  "    1700 net heal C1:1 w1:1 0 0\n"
  "\n"
  "    2500 ev fault az-down heals\n"
  "    2500 ev node B1 restarts\n"
  "    2500 ev node B2 restarts\n"
  "    2600 ev writer 0 crashes (state 3)\n"
  "    2700 ev writer 1 starts\n"
  "    2710 ev writer 1: epoch 2 recovers 3 pgs\n"
  "    2800 ev writer 1: epoch 2 serves from vdl 9 (truncated to 10000009)\n"
  "    2810 vdl w2 2 9\n"
  "    2900 read rep 5 9 9 ok\n"
  "    3000 ev VIOLATION recovery of epoch 2 lost acknowledged commit 11 of epoch 1: it "
  "recovered only to vdl 9 <&>\n"
  "    3000 ev VIOLATION another, at the same time\n"
  "    3000 ev writer 1 crashes (state 3)\n";

static GVC_t *gvc;
static char dir[] = "/tmp/vizsim-XXXXXX";

/* text into a file of the test's directory; its path (static). */
static const char *trace_file(const char *name, const char *text)
{
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static char *dot_of(const char *text, long long from, long long to)
{
  char why[512] = "";
  char *dot = viz_sim_dot(trace_file("t.trace", text), from, to, why, sizeof why);
  if (dot == NULL)
    fail_msg("no drawing: %s", why);
  return dot;
}

static char gv_err[512];
static int gv_errf(char *msg)
{
  strncat(gv_err, msg, sizeof gv_err - strlen(gv_err) - 1);
  return 0;
}

/* Graphviz reads, lays out and renders dot as SVG without a complaint
 * (an HTML label it cannot parse is only a message); the SVG (free it). */
static char *render(const char *dot)
{
  gv_err[0] = 0;
  Agraph_t *g = agmemread(dot);
  if (g == NULL)
    fail_msg("graphviz cannot read the DOT: %s", gv_err);
  assert_int_equal(gvLayout(gvc, g, "dot"), 0);
  char *svg = NULL, *copy;
  unsigned len = 0;
  assert_int_equal(gvRenderData(gvc, g, "svg", &svg, &len), 0);
  if (gv_err[0])
    fail_msg("graphviz: %s", gv_err);
  copy = strndup(svg, len);
  gvFreeRenderData(svg);
  gvFreeLayout(gvc, g);
  agclose(g);
  return copy;
}

static int count(const char *s, const char *what)
{
  int n = 0;
  for (; (s = strstr(s, what)) != NULL; s++)
    n++;
  return n;
}

/* ---- the drawing ---------------------------------------------------------- */

static void lanes_by_az(void **state)
{
  (void)state;
  char *dot = dot_of(sample, -1, -1);
  const char *out = getenv("AURALOG_VIZSIM_OUT");
  if (out) {
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fputs(dot, f);
    fclose(f);
  }
  static const char *const lanes[] = {"w1", "w2", "A1", "A2", "B1", "B2", "C1", "C2"};
  const char *at[8];
  for (int i = 0; i < 8; i++) {
    char want[64];
    snprintf(want, sizeof want, "<b>%s</b> <font point-size=\"8\">events", lanes[i]);
    assert_int_equal(count(dot, want), 1);
    at[i] = strstr(dot, want);
    if (i > 0)
      assert_true(at[i - 1] < at[i]);     /* writers, then A1 A2 B1 B2 C1 C2 */
  }
  assert_true(strstr(dot, "<b>writers</b>") < at[0]);
  assert_true(strstr(dot, "<b>AZ A</b>") < at[2] && at[3] < strstr(dot, "<b>AZ B</b>"));
  assert_true(strstr(dot, "<b>AZ B</b>") < at[4] && at[5] < strstr(dot, "<b>AZ C</b>"));
  /* The coordinator has no lane; a node's PG gets a row only where its
   * segment left the PG: B1 and B2 missed records while down, C1 held
   * some above a hole; A1 never left. */
  assert_null(strstr(dot, "<b>coord</b>"));
  assert_non_null(strstr(dot, ">B1 pg 0 SCL<"));
  assert_non_null(strstr(dot, ">B2 pg 0 SCL<"));
  assert_non_null(strstr(dot, ">C1 pg 0 SCL<"));
  assert_null(strstr(dot, ">A1 pg 0 SCL<"));
  assert_non_null(strstr(dot, "<b>A1</b> <font point-size=\"8\">events, SCLs in step"));
  /* The readers: the writer and the replica. */
  assert_true(strstr(dot, "<b>reads</b>") > at[7]);
  assert_non_null(strstr(dot, "<b>w1</b> <font point-size=\"8\">read points"));
  assert_non_null(strstr(dot, "<b>rep</b> <font point-size=\"8\">read points"));
  char *svg = render(dot);
  assert_non_null(strstr(svg, "AZ B"));
  assert_non_null(strstr(svg, "e2 serves from 9"));
  free(svg);
  free(dot);
}

/* 0..3000 ms in 100 ms columns: az-down from 1000 to its heal at 2500
 * spans columns 10..25. */
static void fault_is_one_span(void **state)
{
  (void)state;
  char *dot = dot_of(sample, -1, -1);
  assert_non_null(strstr(dot, "0 to 3000 ms of a 3000 ms run"));
  assert_non_null(strstr(dot, "one column = 100 ms"));
  /* 16 columns, of which 1900..2400 quiet, drawn as one: 11. */
  const char *span = strstr(dot, "<td colspan=\"11\" bgcolor=\"#c6dbef\"");
  assert_non_null(span);
  assert_non_null(strstr(span, "<b>az-down</b>"));
  assert_true(strstr(span, "<b>az-down</b>") < strstr(span, "</td>"));
  assert_non_null(strstr(span, "1500 ms"));
  /* B1 and B2 are down (grey, with the crash and restart marked), C1 cut
   * off from the writer (pink) and healed. */
  assert_int_equal(count(dot, ">crash</font>"), 4);   /* B1, B2, w1, w2 */
  assert_int_equal(count(dot, ">restart</font>"), 2);
  assert_non_null(strstr(dot, "#d0d0d0"));
  assert_non_null(strstr(dot, ">cut from w1</font>"));
  assert_non_null(strstr(dot, ">cut from nodes</font>"));
  assert_non_null(strstr(dot, "#fde0dd"));
  assert_non_null(strstr(dot, ">healed</font>"));
  agclose(agmemread(dot));
  free(dot);
}

static void recovery_marker_and_watermarks(void **state)
{
  (void)state;
  char *dot = dot_of(sample, -1, -1);
  assert_non_null(strstr(dot, ">e1 serves from 0</font>"));
  assert_non_null(strstr(dot, ">e2 recovers</font>"));
  const char *serve = strstr(dot, ">e2 serves from 9</font>");
  assert_non_null(serve);
  assert_non_null(strstr(serve, ">truncates (9, 10000009]</font>"));
  /* The VDL with its epoch where it starts, then where it moved; the SCLs
   * as step labels (A1's pg 0: 5, then 9 at 1200 ms). */
  assert_non_null(strstr(dot, "<b>e1: 5</b>"));
  assert_non_null(strstr(dot, "<b>e2: 9</b>"));
  assert_non_null(strstr(dot, ">9</font>"));
  /* B1 missed the records while down: behind its PG once the column
   * starts with A1 ahead. */
  assert_non_null(strstr(dot, "#fdd49e"));
  /* Messages per column: one dropped. */
  assert_non_null(strstr(dot, "color=\"#d7301f\">1</font>"));
  free(dot);
}

static void violation_is_highlighted(void **state)
{
  (void)state;
  char *dot = dot_of(sample, -1, -1);
  assert_non_null(strstr(dot, "<b>VIOLATION at 3000 ms</b>"));
  /* Its text, escaped, and how many more there were. */
  assert_non_null(strstr(dot, "recovery of epoch 2 lost acknowledged commit 11 of epoch 1: it "
                              "recovered only to vdl 9 &lt;&amp;&gt;"));
  assert_non_null(strstr(dot, "(and 1 more)"));
  /* The column header red, and the column framed in every lane's rows:
   * two writers of two rows, six nodes' events, seven segments' rows
   * (B1, B2 and C1 pg 0; pg 1, which only A1 and C2 report, everywhere
   * but there), two readers. */
  assert_non_null(strstr(dot, "<td width=\"40\" bgcolor=\"#d7301f\"><font point-size=\"9\" "
                              "color=\"white\">3000<br/><b>VIOLATION</b>"));
  assert_int_equal(count(dot, "border=\"2\" color=\"#d7301f\""), 2 * 2 + 6 + 7 + 2);
  assert_null(strstr(dot, "outside this window"));
  agclose(agmemread(dot));
  free(dot);
}

/* Columns where the log only moved on are one; a segment's SCL is written
 * where it changes and it is out of step; a hole as S^M; LSNs short. */
static void only_what_changes(void **state)
{
  (void)state;
  char *dot = dot_of(sample, -1, -1);
  /* 400..900: nothing but the log: one column, the VDL's move over it. */
  assert_non_null(strstr(dot, ">400..900<br/><i>steady</i>"));
  assert_non_null(strstr(dot, ">1900..2400<br/><i>steady</i>"));
  /* C1 pg 0 holds records up to 12 above a hole at its SCL 9. */
  const char *hole = strstr(dot, "<td bgcolor=\"#a6dcef\"><font point-size=\"8\">9^12</font>");
  assert_non_null(hole);
  /* B1's SCL 5, behind, once where it fell behind, not in every column. */
  assert_int_equal(count(dot, "<td bgcolor=\"#fdd49e\"><font point-size=\"8\">5</font>"), 2);
  free(render(dot));
  free(dot);
  /* LSNs of millions: the millions, then the digits that move. */
  char text[sizeof sample + 256];
  snprintf(text, sizeof text, "%s    3100 vdl w2 2 10000172\n    3100 scl A1 0 10000172\n"
           "    3100 scl B1 0 10000100 10000172\n", sample);
  dot = dot_of(text, 2000, -1);
  assert_non_null(strstr(dot, "10M+172"));
  assert_non_null(strstr(dot, ">10M+100^10M+172<"));
  assert_null(strstr(dot, "10000172<"));
  char buf[32];
  assert_string_equal(vs_lsn(999999, buf), "999999");
  assert_string_equal(vs_lsn(20000171, buf), "20M+171");
  assert_string_equal(vs_lsn(123000045, buf), "123M+45");
  free(dot);
}

/* A lane per reader: how many reads, at which read points. */
static void reads_lane(void **state)
{
  (void)state;
  char *dot = dot_of(sample, -1, -1);
  assert_non_null(strstr(dot, ">2 at 9</font>"));     /* w1, at 1200 ms */
  assert_non_null(strstr(dot, ">1 at 9</font>"));     /* rep, at 2900 ms */
  free(dot);
  char text[sizeof sample + 256];
  snprintf(text, sizeof text, "%s    3100 read w2 3 9 5 ok\n    3110 read w2 4 10 5 ok\n"
           "    3150 read w2 6 10 8 wrong\n", sample);
  dot = dot_of(text, 0, -1);
  assert_non_null(strstr(dot, ">page 6 at 10: wrong</b>"));
  assert_non_null(strstr(dot, "bgcolor=\"#fcbba1\""));
  free(render(dot));
  free(dot);
}

/* The framed cell of the point where the run left the model, with the
 * violation's words, for each kind the simulator's checker reports. */
static void divergence_is_framed(void **state)
{
  (void)state;
  static const char frame[] = "border=\"3\" color=\"#7a0177\"";
  /* A commit acknowledged (w1's VDL reached 11 at 1250 ms), then lost. */
  char *dot = dot_of(sample, -1, -1);
  assert_int_equal(count(dot, frame), 1);
  const char *cell = strstr(dot, frame);
  assert_true(cell > strstr(dot, "w1 VDL") && cell < strstr(dot, "<b>w2</b>"));
  assert_non_null(strstr(cell, "recovery of epoch 2 lost acknowledged commit 11"));
  assert_true(strstr(cell, "<b>e1 acks 11</b>") < strstr(cell, "</td>"));
  assert_non_null(strstr(dot, "1200<br/><b>left the model</b>"));
  assert_non_null(strstr(dot, "the run left the model at 1250 ms (framed above)"));
  free(dot);
  /* A segment: where its SCL stopped (B1 pg 0 reached 7 at 900 ms and
   * stayed; at 950 only records above a hole came). */
  static const char seg[] =
    "     100 ev writer 0 starts\n     120 ev writer 0: epoch 1 serves from vdl 0 (truncated to 0)\n"
    "     200 scl A1 0 5\n     200 scl B1 0 5\n     210 vdl w1 1 5\n"
    "     900 scl A1 0 9\n     900 scl B1 0 7\n     950 scl B1 0 7 9\n    1000 vdl w1 1 9\n"
    "    2000 ev VIOLATION node B1 pg 0: scl 7, 3000 ms after the heal settled, is behind its "
    "PG's durable tail 9: the segment did not converge\n";
  dot = dot_of(seg, -1, -1);
  cell = strstr(dot, frame);
  assert_non_null(cell);
  assert_true(cell > strstr(dot, ">B1 pg 0 SCL<"));
  assert_non_null(strstr(cell, "<b>7^9</b><br/>node B1 pg 0: scl 7"));
  assert_non_null(strstr(dot, "left the model at 900 ms"));
  free(render(dot));
  free(dot);
  /* An SCL that never moved (a seg_add that never advances it): no scl
   * line in the trace, yet the segment the checker named is drawn and
   * framed, at the violation, with its words. */
  static const char still[] =
    "       0 net connect A1:1 coord:1 0 0\n       0 net connect B1:1 coord:1 0 0\n"
    "     100 ev writer 0 starts\n     120 ev writer 0: epoch 1 serves from vdl 0 (truncated to 0)\n"
    "     210 vdl w1 1 5\n    1000 vdl w1 1 9\n"
    "    2000 ev VIOLATION node A1 pg 0: scl 0, 3000 ms after the heal settled, is behind its "
    "PG's durable tail 9: the segment did not converge\n";
  dot = dot_of(still, -1, -1);
  cell = strstr(dot, frame);
  assert_non_null(cell);
  assert_true(cell > strstr(dot, ">A1 pg 0 SCL<"));
  assert_non_null(strstr(cell, "node A1 pg 0: scl 0"));
  assert_non_null(strstr(dot, "left the model at 2000 ms"));
  free(dot);
  /* A read the model disagrees with. */
  static const char rd[] =
    "     100 ev writer 0 starts\n     200 scl A1 0 5\n     210 vdl w1 1 5\n"
    "     300 read w1 7 5 4 ok\n     400 read w1 7 5 4 wrong\n"
    "     400 ev VIOLATION writer 0 (epoch 1) read page 7 as of 5 (need 5, page lsn 4) and got "
    "a version no transaction at or below that point left\n";
  dot = dot_of(rd, -1, -1);
  cell = strstr(dot, frame);
  assert_non_null(cell);
  assert_true(cell > strstr(dot, "read points"));
  assert_non_null(strstr(cell, "<b>page 7 at 5</b><br/>writer 0 (epoch 1) read page 7"));
  free(dot);
  /* Words the drawing cannot place: the violation's column alone. */
  static const char other[] = "     100 ev writer 0 starts\n     210 vdl w1 1 5\n"
    "     400 ev VIOLATION liveness: no commit acknowledged after the final heal\n";
  dot = dot_of(other, -1, -1);
  assert_null(strstr(dot, frame));
  assert_null(strstr(dot, "left the model"  " at"));
  free(dot);
}

/* By default the 3 s before the violation; --from/--to another window. */
static void windows(void **state)
{
  (void)state;
  char text[sizeof sample + 64];
  snprintf(text, sizeof text, "%s    9000 ev final heal\n", sample);
  char *dot = dot_of(text, -1, -1);
  assert_non_null(strstr(dot, "0 to 3000 ms of a 9000 ms run"));
  assert_null(strstr(dot, "<b>final heal</b>"));
  free(dot);
  dot = dot_of(text, 1000, 2000);
  assert_non_null(strstr(dot, "1000 to 2000 ms of a 9000 ms run"));
  assert_non_null(strstr(dot, "one column = 50 ms"));
  assert_non_null(strstr(dot, "<b>az-down</b> ...<br/>1500 ms"));   /* goes on past it */
  assert_non_null(strstr(dot, "(outside this window)"));
  assert_null(strstr(dot, "serves from"));
  assert_non_null(strstr(dot, "e1: 5</b>"));    /* the VDL the window starts with */
  free(dot);
  dot = dot_of(text, 0, -1);                     /* the whole run */
  assert_non_null(strstr(dot, "0 to 9000 ms"));
  assert_non_null(strstr(dot, "<b>final heal</b>"));
  free(render(dot));
  free(dot);
  char why[256];
  assert_null(viz_sim_dot(trace_file("t.trace", text), 2000, 1000, why, sizeof why));
  assert_non_null(strstr(why, "--from 2000 is after --to"));
  assert_null(viz_sim_dot(trace_file("t.trace", text), 9500, -1, why, sizeof why));
  assert_non_null(strstr(why, "after the run's end"));
}

/* ---- bad input ------------------------------------------------------------ */

static void malformed_lines_name_their_line(void **state)
{
  (void)state;
  static const struct { const char *text; int line; const char *says; } bad[] = {
    {"0 net connect A1:1 coord:1 0 0\n1 ev writer 0 starts\n12 net deliver A1:1\n", 3, "net KIND"},
    {"abc ev writer 0 starts\n", 1, "virtual time"},
    {"5 ev final heal\n5 foo bar\n", 2, "'foo' is no record kind"},
    {"0 net 7 A1:1 -> coord:1 body 0 0\n", 1, "KIND one of"},   /* the old format */
    {"0 net deliver A1:1 coord:1 x 3\n", 1, "BODY"},
    {"5 scl A1 0 5\n7 scl A1 9 6\n", 2, "PG below"},
    {"5 scl w1 0 5\n", 1, "NODE like A1"},
    {"5 vdl A1 1 5\n", 1, "WRITER like w1"},
    {"5 vdl w1 1\n", 1, "WRITER"},
    {"5 ev node coord crashes\n", 1, "no such storage node"},
    {"5 ev\n", 1, "without text"},
    {"5 read w1 3 9 5 maybe\n", 1, "T read WHO PAGE RP LSN ok|wrong"},
    {"5 read w1 3 9\n", 1, "T read WHO"},
    {"5 scl A1 0 9 7\n", 1, "below the SCL"},
    {"5 scl A1 0 9 10 11\n", 1, "SCL [MAX]"},
    {"10 ev final heal\n\n9 ev final heal\n", 3, "time 9 goes back"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char why[512] = "", want[64];
    const char *path = trace_file("bad.trace", bad[i].text);
    assert_null(viz_sim_dot(path, -1, -1, why, sizeof why));
    snprintf(want, sizeof want, "bad.trace line %d: ", bad[i].line);
    if (strstr(why, want) == NULL || strstr(why, bad[i].says) == NULL || strchr(why, '\n'))
      fail_msg("case %zu: '%s' (want '%s' and '%s')", i, why, want, bad[i].says);
  }
  char why[512];
  assert_null(viz_sim_dot("/nonexistent/x.trace", -1, -1, why, sizeof why));
  assert_non_null(strstr(why, "cannot read /nonexistent/x.trace"));
}

/* `auralog viz --sim-trace`: exit status 2, one line on stderr, nothing
 * written; a good trace draws. */
static int viz(const char *trace, const char *out, const char *from, char *err, size_t n)
{
  char *argv[8] = {"viz", "--sim-trace", (char *)trace, "-o", (char *)out, NULL, NULL, NULL};
  int argc = 5;
  if (from) {
    argv[argc++] = "--from";
    argv[argc++] = (char *)from;
  }
  char errpath[300];
  snprintf(errpath, sizeof errpath, "%s/stderr", dir);
  fflush(stderr);
  int saved = dup(2);
  assert_non_null(freopen(errpath, "w", stderr));
  optind = 0;
  int rc = viz_main(argc, argv);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  FILE *f = fopen(errpath, "r");
  size_t got = fread(err, 1, n - 1, f);
  err[got] = 0;
  fclose(f);
  return rc;
}

static void command_exit_status(void **state)
{
  (void)state;
  char out[300], err[1024];
  snprintf(out, sizeof out, "%s/out.dot", dir);
  const char *bad = trace_file("bad.trace", "0 ev writer 0 starts\n1 net deliver A1:1\n");
  unlink(out);
  assert_int_equal(viz(bad, out, NULL, err, sizeof err), 2);
  assert_int_equal(access(out, F_OK), -1);
  assert_non_null(strstr(err, "bad.trace line 2: "));
  assert_int_equal(count(err, "\n"), 1);
  assert_int_equal(viz("/nonexistent/x.trace", out, NULL, err, sizeof err), 2);
  assert_int_equal(access(out, F_OK), -1);
  assert_int_equal(viz(trace_file("t.trace", sample), out, "x1", err, sizeof err), 2);
  assert_non_null(strstr(err, "--from wants virtual ms"));
  assert_int_equal(viz(trace_file("t.trace", sample), out, NULL, err, sizeof err), 0);
  assert_int_equal(access(out, F_OK), 0);
  assert_string_equal(err, "");
  unlink(out);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(lanes_by_az),
    cmocka_unit_test(fault_is_one_span),
    cmocka_unit_test(recovery_marker_and_watermarks),
    cmocka_unit_test(violation_is_highlighted),
    cmocka_unit_test(only_what_changes),
    cmocka_unit_test(reads_lane),
    cmocka_unit_test(divergence_is_framed),
    cmocka_unit_test(windows),
    cmocka_unit_test(malformed_lines_name_their_line),
    cmocka_unit_test(command_exit_status),
  };
  if (mkdtemp(dir) == NULL)
    return 1;
  agseterr(AGERR);
  agseterrf(gv_errf);
  gvc = gvContext();
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  gvFreeContext(gvc);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    failed++;
  return failed;
}
