/*
 * test_timeline.c: a lab's timeline (timeline.svg in the check's run
 * directory, src/lab/timeline.c), measured.
 *
 * From a journal window with every event kind the lab checks read
 * (tests/timeline_sample.h: an AZ down, a stall with dirty and held reads,
 * a recovery's truncation, a fenced writer, a partition, a hole filled by
 * gossip, a segment behind, the PGMRPL held and GC passing it, a failover,
 * bench results ...), the SVG is well formed; no two labels' boxes
 * overlap (each box estimated from its x, y, font size, anchor and length,
 * a little wider than a browser draws it); every event kind of the input
 * is drawn (an element of class ev-KIND); it is 1400 px wide. A crowd of
 * faults in one second still lays out without overlap. The same drawing
 * rendered in a browser: tests/integration/test_pictures.c.
 *
 * AURALOG_TIMELINE_OUT=FILE keeps the sample's SVG there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../timeline_sample.h"

static char dir[] = "/tmp/timeline-XXXXXX";

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

static char *draw(struct labctx *x)
{
  char path[300];
  snprintf(path, sizeof path, "%s/timeline.svg", dir);
  assert_int_equal(timeline_svg(x, path, "lab 7: what a reader sees"), 0);
  return slurp(path);
}

/* Well formed: every element closed, in order (no DTD, no CDATA here). */
static void well_formed(const char *s)
{
  char stack[64][32];
  int depth = 0, roots = 0;
  for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
    if (p[1] == '?') {
      p = strstr(p, "?>");
      assert_non_null(p);
      continue;
    }
    const char *end = strchr(p, '>');
    assert_non_null(end);
    char name[32];
    int close = p[1] == '/';
    size_t n = strcspn(p + 1 + close, " \t\n/>");
    assert_true(n > 0 && n < sizeof name);
    snprintf(name, sizeof name, "%.*s", (int)n, p + 1 + close);
    if (close) {
      if (depth == 0 || strcmp(stack[depth - 1], name) != 0)
        fail_msg("</%s> closes <%s>", name, depth ? stack[depth - 1] : "nothing");
      depth--;
    } else if (end[-1] != '/') {
      assert_true(depth < 64);
      snprintf(stack[depth++], sizeof stack[0], "%s", name);
      roots += depth == 1;
    } else {
      roots += depth == 0;
    }
    for (const char *q = end; q > p; q--)   /* attribute values quoted: no raw < inside */
      assert_true(*q != '<');
    p = end;
  }
  assert_int_equal(depth, 0);
  assert_int_equal(roots, 1);
}

struct box { double x0, y0, x1, y1; char text[120]; };

static double attr(const char *tag, const char *name, double dflt)
{
  char key[40];
  snprintf(key, sizeof key, " %s='", name);
  const char *a = strstr(tag, key);
  return a && a < strchr(tag, '>') ? atof(a + strlen(key)) : dflt;
}

/* The boxes of every text: width 0.6 font sizes a character (an entity
 * counts one), from its anchor; height one font size above the baseline
 * and a quarter below. */
static int boxes(const char *s, struct box *b, int max)
{
  int n = 0;
  for (const char *p = strstr(s, "<text "); p && n < max; p = strstr(p + 1, "<text ")) {
    double x = attr(p, "x", 0), y = attr(p, "y", 0), fs = attr(p, "font-size", 16);
    const char *t = strchr(p, '>') + 1, *e = strstr(t, "</text>");
    size_t len = 0, k = 0;
    for (const char *q = t; q < e; q++, len++) {
      if (*q == '&')
        q = strchr(q, ';');
      if (k < sizeof b[n].text - 1)
        b[n].text[k++] = *q;
    }
    b[n].text[k] = 0;
    double w = (double)len * fs * 0.6;
    const char *anchor = strstr(p, "text-anchor='");
    int end = anchor && anchor < t && !strncmp(anchor + 13, "end", 3);
    int mid = anchor && anchor < t && !strncmp(anchor + 13, "middle", 6);
    b[n].x0 = end ? x - w : mid ? x - w / 2 : x;
    b[n].x1 = b[n].x0 + w;
    b[n].y0 = y - fs;
    b[n].y1 = y + fs / 4;
    if (len)
      n++;
  }
  return n;
}

static void no_overlap(const char *svg)
{
  static struct box b[4096];
  int n = boxes(svg, b, 4096);
  assert_true(n > 20);
  for (int i = 0; i < n; i++) {
    if (b[i].x1 > 1400 + 0.5)
      fail_msg("'%s' runs past the 1400 px edge (to %.0f)", b[i].text, b[i].x1);
    for (int j = i + 1; j < n; j++)
      if (b[i].x0 < b[j].x1 && b[j].x0 < b[i].x1 && b[i].y0 < b[j].y1 && b[j].y0 < b[i].y1)
        fail_msg("'%s' (%.0f..%.0f, %.0f..%.0f) overlaps '%s' (%.0f..%.0f, %.0f..%.0f)",
                 b[i].text, b[i].x0, b[i].x1, b[i].y0, b[i].y1, b[j].text, b[j].x0, b[j].x1,
                 b[j].y0, b[j].y1);
  }
}

static void every_kind_is_drawn(void **state)
{
  (void)state;
  struct labctx x;
  timeline_sample_ctx(&x);
  char *svg = draw(&x);
  const char *out = getenv("AURALOG_TIMELINE_OUT");
  if (out) {
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fputs(svg, f);
    fclose(f);
  }
  well_formed(svg);
  assert_non_null(strstr(svg, "width='1400'"));
  for (size_t i = 0; i < x.nev; i++) {
    char want[64];
    const char *kind = fstr(x.ev[i], "kind");
    snprintf(want, sizeof want, "class='ev-%s'", kind);
    if (strstr(svg, want) == NULL)
      fail_msg("the timeline draws no %s event", kind);
  }
  /* What lab 7's check reads, in words. */
  assert_non_null(strstr(svg, ">2 dirty reads: saw 100M+163 &gt; vdl 100M+160</text>"));
  assert_non_null(strstr(svg, ">1 read held at vdl 100M+160</text>"));
  assert_non_null(strstr(svg, ">stalled 1220 ms at vdl 100M+160</text>"));
  assert_non_null(strstr(svg, ">pg 0 hole: 110M+190^110M+197 (gossip off)</text>"));
  free(svg);
  timeline_sample_free(&x);
}

/* A stalled writer that a new epoch replaced (crashed or fenced, no
 * unstall ever came): its stall ends where the new epoch begins, never
 * "still, at the check". */
static void a_stall_ends_with_its_epoch(void **state)
{
  (void)state;
  struct labctx x;
  timeline_sample_ctx(&x);
  static const char *evs[] = {
    "{\"t\":9000,\"kind\":\"stall\",\"epoch\":5,\"vdl\":120000000,\"pending\":2,\"down\":\"B1,B2\"}",
    "{\"t\":9900,\"kind\":\"epoch\",\"volume\":\"main\",\"epoch\":6}",
  };
  for (size_t i = 0; i < 2; i++) {
    cJSON *e = cJSON_Parse(evs[i]);
    assert_non_null(e);
    cJSON_AddNumberToObject(e, "seq", (double)cJSON_GetArraySize(x.journal));
    cJSON_AddItemToArray(x.journal, e);
    x.ev = realloc(x.ev, (x.nev + 1) * sizeof *x.ev);
    x.ev[x.nev++] = e;
  }
  char *svg = draw(&x);
  assert_non_null(strstr(svg, ">stalled until epoch 6 took over</text>"));
  assert_null(strstr(svg, "stalled (still, at the check)"));
  free(svg);
  timeline_sample_free(&x);
}

static void labels_never_overlap(void **state)
{
  (void)state;
  struct labctx x;
  timeline_sample_ctx(&x);
  char *svg = draw(&x);
  no_overlap(svg);
  free(svg);
  /* A crowd: forty faults and node events within one second. */
  for (int i = 0; i < 40; i++) {
    char ev[200];
    snprintf(ev, sizeof ev, "{\"t\":%d,\"kind\":\"%s\",\"action\":\"slow\",\"node\":\"%c%d\","
             "\"az\":\"%c\",\"up\":%s,\"n\":%d,\"why\":\"heartbeats missed\"}", 3000 + i * 25,
             i % 2 ? "fault" : "node", 'A' + i % 3, 1 + i % 2, 'A' + i % 3, i % 4 ? "true" : "false", i);
    cJSON *e = cJSON_Parse(ev);
    cJSON_AddNumberToObject(e, "seq", (double)cJSON_GetArraySize(x.journal));
    cJSON_AddItemToArray(x.journal, e);
    x.ev = realloc(x.ev, (x.nev + 1) * sizeof *x.ev);
    x.ev[x.nev++] = e;
  }
  svg = draw(&x);
  well_formed(svg);
  no_overlap(svg);
  free(svg);
  timeline_sample_free(&x);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(every_kind_is_drawn),
    cmocka_unit_test(labels_never_overlap),
    cmocka_unit_test(a_stall_ends_with_its_epoch),
  };
  if (mkdtemp(dir) == NULL)
    return 1;
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    failed++;
  return failed;
}
