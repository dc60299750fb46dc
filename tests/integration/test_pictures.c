/*
 * Integration: the pictures a student reads, rendered by a real browser
 * (Debian's chromium, headless) at 1400x1000 and measured there.
 *
 *   - The simulator's timeline of a failing seed: `auralog sim --seed 1
 *     --faults az1-swap --bug wq3 --trace` (a commit acknowledged by three
 *     segments: the membership check, sim/member.c, stops the run there,
 *     before the three fail; test_sim.c keeps this scenario failing),
 *     drawn by `auralog viz --sim-trace`.
 *   - A lab's timeline.svg (lab/timeline.c), drawn from a journal window
 *     with every event kind the lab checks read (tests/timeline_sample.h).
 *
 * For each: the SVG parses as XML (Python's parser); in the browser no two
 * text labels' boxes overlap (getBoundingClientRect of every <text>, as
 * drawn with the browser's own fonts); the screenshot is a 1400x1000 PNG.
 * The simulator's timeline frames where the run left the model, with the
 * violation's words, draws the reads and writes LSNs short; the lab's
 * draws every event kind of its input. The PNGs and SVGs are kept in
 * build/test-logs/pictures/ (beside AURALOG_BIN) to look at.
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
#include "../timeline_sample.h"

static char pics[512], tmp[300];
static char res[1 << 22];       /* a DOM with the whole drawing */

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    fail_msg("cannot read %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  fclose(f);
  s[got] = 0;
  return s;
}

static void need_chromium(void)
{
  if (sh(NULL, 0, "command -v chromium >/dev/null") != 0)
    fail_msg("chromium is not installed: this test needs Debian's chromium "
             "(scripts/deps.sh --test installs it)");
}

#define CHROMIUM "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic " \
  "--no-first-run --disable-background-networking --disable-component-update --disable-sync " \
  "--hide-scrollbars --user-data-dir=%s/chromium --window-size=1400,1000 "

/* svg (a file in pics) into an HTML page that shows it at most 1400 px
 * wide and, once drawn, writes the number of texts and of overlapping
 * pairs of their boxes (with the first few) into #result. Then the DOM
 * (into res) and a screenshot, NAME.png. */
static void render(const char *name)
{
  char path[700];
  snprintf(path, sizeof path, "%s/%s.svg", pics, name);
  char *svg = slurp(path);
  const char *at = strstr(svg, "<svg");
  assert_non_null(at);
  snprintf(path, sizeof path, "%s/%s.html", tmp, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "<!DOCTYPE html><html><head><meta charset='utf-8'><style>body{margin:0;"
          "background:white} svg{max-width:100%%;height:auto;display:block} #result{display:none}</style></head>"
          "<body>%s<pre id='result'></pre><script>\n"
          "const t=[...document.querySelectorAll('svg text')].map(e=>({r:e.getBoundingClientRect(),"
          "s:e.textContent})).filter(b=>b.r.width>0&&b.s.trim());\n"
          "let bad=[];\n"
          "for(let i=0;i<t.length;i++)for(let j=i+1;j<t.length;j++){const a=t[i].r,b=t[j].r;"
          "if(a.left<b.right-1&&b.left<a.right-1&&a.top<b.bottom-2&&b.top<a.bottom-2)"
          "bad.push(t[i].s+' | '+t[j].s);}\n"
          "document.getElementById('result').textContent='TEXTS '+t.length+' OVERLAPS '+"
          "bad.length+' ['+bad.slice(0,5).join(' ;; ')+']';\n</script></body></html>\n", at);
  fclose(f);
  free(svg);
  int rc = sh(res, sizeof res, CHROMIUM "--dump-dom file://%s 2>>%s/chromium.log", tmp, path, tmp);
  if (rc != 0 || strstr(res, "id=\"result\">TEXTS ") == NULL)
    fail_msg("chromium --dump-dom of %s failed (%d); see %s/chromium.log", path, rc, tmp);
  char png[700];
  snprintf(png, sizeof png, "%s/%s.png", pics, name);
  unlink(png);
  rc = sh(NULL, 0, CHROMIUM "--screenshot=%s file://%s 2>>%s/chromium.log", tmp, png, path, tmp);
  FILE *p = fopen(png, "rb");
  unsigned char head[24];
  if (rc != 0 || p == NULL || fread(head, 1, 24, p) != 24)
    fail_msg("chromium --screenshot of %s failed (%d)", path, rc);
  fclose(p);
  /* PNG: the signature, then IHDR: width and height, big-endian. */
  assert_memory_equal(head, "\x89PNG\r\n\x1a\n", 8);
  unsigned w = (unsigned)head[16] << 24 | head[17] << 16 | head[18] << 8 | head[19];
  unsigned h = (unsigned)head[20] << 24 | head[21] << 16 | head[22] << 8 | head[23];
  assert_int_equal(w, 1400);
  assert_int_equal(h, 1000);
}

static void parses_as_xml(const char *name)
{
  if (sh(res, sizeof res, "python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "
         "%s/%s.svg 2>&1", pics, name) != 0)
    fail_msg("%s.svg does not parse as XML: %.300s", name, res);
}

static void no_overlaps(const char *name)
{
  int texts = 0, overlaps = -1;
  const char *r = strstr(res, "TEXTS ");
  assert_non_null(r);
  sscanf(r, "TEXTS %d OVERLAPS %d", &texts, &overlaps);
  assert_true(texts > 20);
  if (overlaps != 0)
    fail_msg("%s: %d pairs of labels overlap in the browser: %.600s", name, overlaps, r);
}

static void sim_timeline(void **state)
{
  (void)state;
  need_chromium();
  char trace[700], svgp[700];
  snprintf(trace, sizeof trace, "%s/sim.trace", tmp);
  snprintf(svgp, sizeof svgp, "%s/sim-timeline.svg", pics);
  sh(res, sizeof res, "%s sim --seed 1 --faults az1-swap --bug wq3 --trace %s", bin, trace);
  if (strstr(res, "fewer than a write quorum") == NULL)
    fail_msg("the scenario no longer fails as it did: %.300s", res);
  if (sh(res, sizeof res, "%s viz --sim-trace %s -o %s 2>&1", bin, trace, svgp) != 0)
    fail_msg("viz --sim-trace: %.300s", res);
  parses_as_xml("sim-timeline");
  char *svg = slurp(svgp);
  /* Where the run left the model: framed, named, with the words. */
  assert_non_null(strstr(svg, "stroke=\"#7a0177\""));
  assert_non_null(strstr(svg, ">left the model<"));
  assert_non_null(strstr(svg, "fewer than a write quorum"));
  assert_non_null(strstr(svg, " acks "));
  assert_non_null(strstr(svg, ">reads<"));
  assert_non_null(strstr(svg, "steady"));
  free(svg);
  render("sim-timeline");
  no_overlaps("sim-timeline");
}

static void lab_timeline(void **state)
{
  (void)state;
  need_chromium();
  struct labctx x;
  timeline_sample_ctx(&x);
  char path[700];
  snprintf(path, sizeof path, "%s/lab-timeline.svg", pics);
  assert_int_equal(timeline_svg(&x, path, "lab 7: what a reader sees (sample journal)"), 0);
  parses_as_xml("lab-timeline");
  char *svg = slurp(path);
  for (size_t i = 0; i < x.nev; i++) {
    char want[64];
    snprintf(want, sizeof want, "class='ev-%s'", fstr(x.ev[i], "kind"));
    if (strstr(svg, want) == NULL)
      fail_msg("the lab timeline draws no %s event", fstr(x.ev[i], "kind"));
  }
  free(svg);
  timeline_sample_free(&x);
  render("lab-timeline");
  no_overlaps("lab-timeline");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(sim_timeline),
    cmocka_unit_test(lab_timeline),
  };
  bin = getenv("AURALOG_BIN");
  if (bin == NULL)
    bin = "build/auralog";
  /* The pictures beside the binary's build directory, to be looked at. */
  const char *slash = strrchr(bin, '/');
  snprintf(pics, sizeof pics, "%.*s/test-logs/pictures", slash ? (int)(slash - bin) : 1,
           slash ? bin : ".");
  snprintf(tmp, sizeof tmp, "/tmp/auralog-it-pictures-%d", (int)getpid());
  char cmd[900];
  snprintf(cmd, sizeof cmd, "mkdir -p %s %s", pics, tmp);
  if (system(cmd) != 0)
    return 1;
  int failed = cmocka_run_group_tests_name("integration: pictures", tests, NULL, NULL);
  printf("# pictures kept in %s\n", pics);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  if (system(cmd) != 0)
    failed++;
  return failed;
}
