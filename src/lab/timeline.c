/*
 * lab/timeline.c: a lab's history drawn on a time axis, as one
 * self-contained SVG (timeline.svg in the check's run directory,
 * lab/rundir.c): what the check read, so a student who is told
 * "[missing] ..." can see what did happen, and when.
 *
 * Time runs left to right, from the `lab start N` mark to the last event
 * the check read. One lane per node (A1..C2): a red bar while the
 * coordinator had it down, a yellow one while its segment was behind its
 * PG's peers (ending where it caught up by gossip), a cyan one while it
 * held records above a hole (ending where gossip filled it). Above them, a lane of
 * marks (the lab's start and check, faults injected and healed, engine
 * crashes) and a lane for the writer: new epochs, recoveries'
 * truncations, stalls (orange, until the VDL moved again), fenced
 * writers, the PGMRPL held by a reader (teal, until it moved again),
 * node GC passing it again, failovers. Below, the writer's commits as
 * sampled, a line going up.
 *
 * Drawn by hand, not by graphviz: a time axis is a few rectangles and
 * lines, and graphviz can only lay a drawing out once per process
 * (viz.c), which the cluster's drawing in the same directory already does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define TL_LEFT   90          /* room for the lanes' names */
#define TL_WIDTH  900         /* the time axis */
#define TL_LANE   26
#define TL_TOP    40

static const char *lane_names[] = {"marks", "writer", "A1", "A2", "B1", "B2", "C1", "C2",
                                   "commits"};
#define NLANES ((int)(sizeof lane_names / sizeof lane_names[0]))
#define LANE_MARKS 0
#define LANE_WRITER 1
#define LANE_NODE0 2
#define LANE_COMMITS 8

struct tl {
  FILE *f;
  double t0, t1;               /* wall ms: the axis's ends */
};

static double xat(const struct tl *g, double t)
{
  if (t < g->t0)
    t = g->t0;
  return TL_LEFT + (t - g->t0) / (g->t1 - g->t0) * TL_WIDTH;
}

static double yat(int lane)
{
  return TL_TOP + lane * TL_LANE;
}

/* Text for the SVG: &, < and > escaped (event fields are the cluster's
 * names, but a writer's address could hold anything). */
static void esc(FILE *f, const char *s)
{
  for (; *s; s++)
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
}

/* A tick on a lane with a label above it; title: the tooltip. */
static void tick(struct tl *g, int lane, double t, const char *color, const char *label,
                 const cJSON *e)
{
  static int nth[2];             /* labels close in time: alternate up and down */
  double x = xat(g, t), y = yat(lane);
  int low = nth[lane == LANE_WRITER]++ % 2;
  fprintf(g->f, "<g><line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' "
          "stroke-width='2'/>", x, y + 4, x, y + TL_LANE - 4, color);
  fprintf(g->f, "<text x='%.1f' y='%.1f' font-size='9' fill='%s'>", x + 2, y + (low ? 21 : 11),
          color);
  esc(g->f, label);
  fputs("</text>", g->f);
  if (e) {
    char *js = cJSON_PrintUnformatted(e);
    fputs("<title>", g->f);
    esc(g->f, js);
    fputs("</title>", g->f);
    free(js);
  }
  fputs("</g>\n", g->f);
}

/* A bar on a lane from a to b; half: the lower half only (behind). */
static void bar(struct tl *g, int lane, double a, double b, const char *color, int half,
                const char *title)
{
  double x = xat(g, a), w = xat(g, b) - x, y = yat(lane) + (half ? TL_LANE / 2 : 4);
  fprintf(g->f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%d' fill='%s' "
          "fill-opacity='0.7'><title>", x, y, w < 2 ? 2 : w, half ? TL_LANE / 2 - 4 : TL_LANE / 2 - 4,
          color);
  esc(g->f, title);
  fputs("</title></rect>\n", g->f);
}

static int node_lane(const char *id)
{
  if (id[0] >= 'A' && id[0] <= 'C' && (id[1] == '1' || id[1] == '2') && !id[2])
    return LANE_NODE0 + (id[0] - 'A') * 2 + (id[1] - '1');
  return -1;
}

static void axis(struct tl *g, const char *title)
{
  double span = g->t1 - g->t0, step = 1000;
  static const double steps[] = {100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000,
                                 300000, 600000, 1800000, 3600000};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (span / steps[i] <= 12) {
      step = steps[i];
      break;
    }
  if (span / step > 12)
    step = span / 12;
  double ybot = yat(NLANES);
  fprintf(g->f, "<text x='%d' y='18' font-size='13' font-weight='bold'>", TL_LEFT);
  esc(g->f, title);
  fputs("</text>\n", g->f);
  for (int l = 0; l < NLANES; l++) {
    fprintf(g->f, "<rect x='%d' y='%.1f' width='%d' height='%d' fill='%s'/>\n", TL_LEFT,
            yat(l), TL_WIDTH, TL_LANE, l % 2 ? "#f4f4f4" : "#fbfbfb");
    fprintf(g->f, "<text x='%d' y='%.1f' font-size='11' text-anchor='end'>%s</text>\n",
            TL_LEFT - 6, yat(l) + 16, lane_names[l]);
  }
  for (double t = 0; t <= span + 1; t += step) {
    double x = xat(g, g->t0 + t);
    fprintf(g->f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%.1f' stroke='#ddd'/>"
            "<text x='%.1f' y='%.1f' font-size='9' text-anchor='middle'>%.1fs</text>\n",
            x, TL_TOP, x, ybot + 4, x, ybot + 14, t / 1000);
  }
}

static void legend(struct tl *g)
{
  static const struct { const char *color, *what; } keys[] = {
    {"#d62728", "node down"}, {"#e6b800", "segment behind its peers"},
    {"#ff7f0e", "writer stalled (no write quorum)"}, {"#1f77b4", "new epoch"},
    {"#9467bd", "truncation"}, {"#555", "mark or fault"},
    {"#17becf", "segment holds records above a hole"}, {"#bcbd22", "PGMRPL held"}};
  double y = yat(NLANES) + 34, x = TL_LEFT;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    double w = 16 + 6.0 * (double)strlen(keys[i].what) + 18;   /* ~6 px a character at 10 px */
    if (x > TL_LEFT && x + w > TL_LEFT + TL_WIDTH)
      x = TL_LEFT, y += 14;                                     /* a row more */
    fprintf(g->f, "<rect x='%.1f' y='%.1f' width='12' height='10' fill='%s'/>"
            "<text x='%.1f' y='%.1f' font-size='10'>%s</text>\n", x, y, keys[i].color,
            x + 16, y + 9, keys[i].what);
    x += w;
  }
}

/* The label of a fault or mark event. */
static void fault_label(const cJSON *e, char *out, size_t n)
{
  const char *a = fstr(e, "action");
  if (!strncmp(a, "lab-", 4))
    snprintf(out, n, "%s %.0f", a, fnum(e, "n"));
  else if (!strcmp(a, "gossip") || !strcmp(a, "stale"))
    snprintf(out, n, "%s %s %s", a, fstr(e, "node"), fnum(e, "n") ? "on" : "off");
  else if (!strcmp(a, "drop"))
    snprintf(out, n, "drop %s %.0f", fstr(e, "node"), fnum(e, "n"));
  else if (fstr(e, "node")[0])
    snprintf(out, n, "%s %s", a, fstr(e, "node"));
  else if (fstr(e, "az")[0])
    snprintf(out, n, "%s %s", a, fstr(e, "az"));
  else
    snprintf(out, n, "%s", a);
}

int timeline_svg(struct labctx *x, const char *path, const char *title)
{
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return -1;
  struct tl g = {f, -1, -1};
  /* The axis: from the start mark (or the window's first event) to the last. */
  g.t0 = x->tstart;
  for (size_t i = 0; i < x->nev; i++) {
    double t = fnum(x->ev[i], "t");
    if (t < 0)
      continue;
    g.t0 = g.t0 < 0 || t < g.t0 ? t : g.t0;
    g.t1 = t > g.t1 ? t : g.t1;
  }
  if (g.t1 <= g.t0)
    g.t1 = g.t0 + 1000;
  int h = (int)yat(NLANES) + 60;
  fprintf(f, "<?xml version='1.0' encoding='UTF-8'?>\n"
          "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
          "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
          TL_LEFT + TL_WIDTH + 130, h);
  axis(&g, title);
  if (x->tstart >= 0)
    tick(&g, LANE_MARKS, g.t0, "#555", x->demo ? "demo start" : "lab start", NULL);

  /* The nodes' state as the window opens: replay the journal before it. */
  struct nodes s;
  memset(&s, 0, sizeof s);
  long first = x->nev ? hist_index(x, x->ev[0]) : hist_len(x);
  for (long i = 0; i < first; i++)
    nodes_apply(&s, hist_at(x, i));
  double down_at[6], behind_at[6], hole_at[6], stall_at = -1, hold_at = -1, maxc = -1, minc = -1;
  for (int k = 0; k < 6; k++) {
    down_at[k] = s.down[k / 2][k % 2] ? g.t0 : -1;
    behind_at[k] = hole_at[k] = -1;
  }
  for (size_t i = 0; i < x->nev; i++) {
    double c = fnum(x->ev[i], "commits");
    if (is(x->ev[i], "engine") && c >= 0) {
      maxc = c > maxc ? c : maxc;
      minc = minc < 0 || c < minc ? c : minc;
    }
  }
  double px = -1, py = -1, pepoch = -1;
  char label[128];
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    double t = fnum(e, "t");
    int nl = node_lane(fstr(e, "node"));
    if (is(e, "node") && nl >= 0) {
      int k = nl - LANE_NODE0, up = cJSON_IsTrue(cJSON_GetObjectItem(e, "up"));
      if (!up && down_at[k] < 0)
        down_at[k] = t;
      else if (up && down_at[k] >= 0) {
        snprintf(label, sizeof label, "%s down: %s", fstr(e, "node"), fstr(e, "why"));
        bar(&g, nl, down_at[k], t, "#d62728", 0, label);
        down_at[k] = -1;
      }
    } else if (is(e, "behind") && nl >= 0) {
      if (behind_at[nl - LANE_NODE0] < 0)
        behind_at[nl - LANE_NODE0] = t;
    } else if (is(e, "caughtup") && nl >= 0) {
      double a = behind_at[nl - LANE_NODE0] >= 0 ? behind_at[nl - LANE_NODE0] : t;
      snprintf(label, sizeof label, "%s pg %.0f behind: scl %.0f to %.0f, %.0f gossip messages",
               fstr(e, "node"), fnum(e, "pg"), fnum(e, "from"), fnum(e, "scl"),
               fnum(e, "gossip_msgs"));
      bar(&g, nl, a, t, "#e6b800", 1, label);
      behind_at[nl - LANE_NODE0] = -1;
    } else if (is(e, "hole") && nl >= 0) {
      if (hole_at[nl - LANE_NODE0] < 0)
        hole_at[nl - LANE_NODE0] = t - fnum(e, "ms");    /* it opened ms before */
    } else if (is(e, "filled") && nl >= 0) {
      double a = hole_at[nl - LANE_NODE0] >= 0 ? hole_at[nl - LANE_NODE0] : t;
      snprintf(label, sizeof label, "%s pg %.0f: a hole above scl %.0f, filled to %.0f by "
               "gossip (%.0f messages)", fstr(e, "node"), fnum(e, "pg"), fnum(e, "from"),
               fnum(e, "scl"), fnum(e, "gossip_msgs"));
      bar(&g, nl, a < g.t0 ? g.t0 : a, t, "#17becf", 0, label);
      hole_at[nl - LANE_NODE0] = -1;
    } else if (is(e, "fault")) {
      fault_label(e, label, sizeof label);
      tick(&g, LANE_MARKS, t, "#555", label, e);
    } else if (is(e, "epoch")) {
      snprintf(label, sizeof label, "epoch %.0f", fnum(e, "epoch"));
      tick(&g, LANE_WRITER, t, "#1f77b4", label, e);
    } else if (is(e, "trunc")) {
      snprintf(label, sizeof label, "trunc %.0f..%.0f", fnum(e, "from"), fnum(e, "to"));
      tick(&g, LANE_WRITER, t, "#9467bd", label, e);
    } else if (is(e, "fenced")) {
      snprintf(label, sizeof label, "fenced (epoch %.0f)", fnum(e, "epoch"));
      tick(&g, LANE_WRITER, t, "#8c564b", label, e);
    } else if (is(e, "start")) {
      tick(&g, LANE_MARKS, t, "#555", "coordinator start", e);
    } else if (is(e, "stall")) {
      if (stall_at < 0)
        stall_at = t;
    } else if (is(e, "unstall") && stall_at >= 0) {
      snprintf(label, sizeof label, "stalled %.0f ms at vdl %.0f", fnum(e, "ms"),
               fnum(e, "from"));
      bar(&g, LANE_WRITER, stall_at, t, "#ff7f0e", 1, label);
      stall_at = -1;
    } else if (is(e, "hold")) {
      if (hold_at < 0)
        hold_at = t - fnum(e, "ms");     /* it stood still since then */
    } else if (is(e, "release") && hold_at >= 0) {
      snprintf(label, sizeof label, "PGMRPL held at %.0f for %.0f ms: %+.0f records kept",
               fnum(e, "from"), fnum(e, "ms"), fnum(e, "growth_records"));
      bar(&g, LANE_WRITER, hold_at, t, "#bcbd22", 1, label);
      hold_at = -1;
    } else if (is(e, "gcpassed")) {
      snprintf(label, sizeof label, "gc point %.0f past %.0f", fnum(e, "gc_lsn"),
               fnum(e, "held"));
      tick(&g, LANE_WRITER, t, "#bcbd22", label, e);
    } else if (is(e, "failover")) {
      snprintf(label, sizeof label, "failover to epoch %.0f (%.0f ms)", fnum(e, "epoch"),
               fnum(e, "took_ms"));
      tick(&g, LANE_MARKS, t, "#1f77b4", label, e);   /* the writer's lane has its epoch */
    } else if (is(e, "engine") && maxc > minc) {
      double cx = xat(&g, t);
      double cy = yat(LANE_COMMITS) + TL_LANE - 3 -
                  (fnum(e, "commits") - minc) / (maxc - minc) * (TL_LANE - 6);
      /* Each writer counts its own commits from 0: a new epoch starts a
       * new line rather than drawing a fall from the old writer's count. */
      if (fnum(e, "epoch") != pepoch)
        px = -1;
      pepoch = fnum(e, "epoch");
      if (px >= 0)
        fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#2ca02c'/>\n",
                px, py, cx, cy);
      px = cx, py = cy;
    }
  }
  /* What is still open at the end runs to the axis's end. */
  for (int k = 0; k < 6; k++) {
    if (down_at[k] >= 0)
      bar(&g, LANE_NODE0 + k, down_at[k], g.t1, "#d62728", 0, "down (still, at the check)");
    if (behind_at[k] >= 0)
      bar(&g, LANE_NODE0 + k, behind_at[k], g.t1, "#e6b800", 1, "behind (still, at the check)");
    if (hole_at[k] >= 0)
      bar(&g, LANE_NODE0 + k, hole_at[k] < g.t0 ? g.t0 : hole_at[k], g.t1, "#17becf", 0,
          "a hole (still open, at the check)");
  }
  if (stall_at >= 0)
    bar(&g, LANE_WRITER, stall_at, g.t1, "#ff7f0e", 1, "stalled (still, at the check)");
  if (hold_at >= 0)
    bar(&g, LANE_WRITER, hold_at, g.t1, "#bcbd22", 1, "PGMRPL held (still, at the check)");
  if (maxc >= 0) {
    fprintf(f, "<text x='%d' y='%.1f' font-size='9' fill='#2ca02c'>%.0f .. %.0f commits</text>\n",
            TL_LEFT + TL_WIDTH + 2, yat(LANE_COMMITS) + 16, minc, maxc);
  }
  legend(&g);
  fputs("</svg>\n", f);
  return fclose(f) == 0 ? 0 : -1;
}
