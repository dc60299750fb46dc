/*
 * lab/timeline.c: a lab's history drawn on a time axis, as one
 * self-contained SVG (timeline.svg in the check's run directory,
 * lab/rundir.c): what the check read, so a student who is told
 * "[missing] ..." can see what did happen, and when.
 *
 * Time runs left to right, from the `lab start N` mark to the last event
 * the check read. Lanes, top to bottom:
 *   marks     the lab's marks, the coordinator's starts, faults injected
 *             and healed (gossip off/on, drop, partition ...), failovers,
 *             volumes dropped
 *   writer    new epochs, recoveries' truncations, stalls (a bar until
 *             the VDL moved again), fenced writers, data-loss alarms
 *   reads     reads answered above the VDL (dirtyread) and reads held back
 *             during a stall (heldread): lab 7's two behaviours
 *   replica   the PGMRPL held by a reader (a bar until released), node GC
 *             passing it again, the gc samples of pg 0, the replicas' lag
 *   A1 .. C2  a node down (red; a partition pink), its segment behind its
 *             PG (until it caught up by gossip), holding records above a
 *             hole (until gossip filled it)
 *   commits   the writer's commits as sampled, a line going up
 *   bench     `auralog bench` results (lab 10)
 * Every event kind the checks read (lab/check*.c) is drawn, each in an
 * element of class "ev-KIND" with the event as its tooltip.
 *
 * Labels never overlap: every label is laid out before anything is
 * written, below its lane's band of bars and ticks, in the first row of
 * its lane where it fits (its box estimated from its length and font
 * size, as a browser would draw it, with room to spare); a lane is as
 * tall as its rows. The tests measure the boxes again.
 *
 * Drawn by hand, not by graphviz: a time axis is a few rectangles and
 * lines, and graphviz can only lay a drawing out once per process
 * (viz.c), which the cluster's drawing in the same directory already does.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define TL_W      1400        /* the drawing's width: a 1400 px screen */
#define TL_LEFT   72          /* room for the lanes' names */
#define TL_RIGHT  16
#define TL_AXIS   (TL_W - TL_LEFT - TL_RIGHT)
#define TL_TOP    34
#define TL_BAND   16          /* a lane's band of bars and ticks */
#define TL_ROW    12          /* a row of labels */
#define TL_FS     9           /* labels' font size */
#define TL_CHAR   0.62        /* a character's width, in font sizes (a wide estimate) */
#define TL_GAP    6           /* px between two labels in a row */
#define TL_ROWS   12          /* label rows per lane at most */

enum { L_MARKS, L_WRITER, L_READS, L_REPLICA, L_NODE0, L_COMMITS = L_NODE0 + 6, L_BENCH, NL };
static const char *const lane_names[NL] = {"marks", "writer", "reads", "replica", "A1", "A2",
                                           "B1", "B2", "C1", "C2", "commits", "bench"};

struct item {
  int lane, bar, half, row;
  double t0, t1, lx;           /* lx: the label's left edge */
  const char *color, *kind;
  char label[112];
  char *title;                 /* the event as JSON, or a sentence */
};

struct tl {
  FILE *f;
  double t0, t1;               /* wall ms: the axis's ends */
  struct item *it;
  size_t n, cap;
  int rows[NL];                /* label rows per lane */
  double y[NL + 1];            /* each lane's top; y[NL]: the bottom */
  double px[256], py[256];     /* replica lag samples */
  int np;
};

static double xat(const struct tl *g, double t)
{
  if (t < g->t0)
    t = g->t0;
  return TL_LEFT + (t - g->t0) / (g->t1 - g->t0) * TL_AXIS;
}

static double tl_text_width(const char *s, double fs)
{
  return (double)strlen(s) * fs * TL_CHAR;
}

/* Text for the SVG: &, <, > and quotes escaped. */
static void esc(FILE *f, const char *s)
{
  for (; *s; s++)
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default: fputc(*s, f);
    }
}

/* An LSN short: below a million as is, above as "100M+4242". */
static const char *lsn(double v, char *buf)
{
  unsigned long long n = v < 0 ? 0 : (unsigned long long)v;
  if (n < 1000000)
    snprintf(buf, 32, "%llu", n);
  else
    snprintf(buf, 32, "%lluM+%llu", n / 1000000, n % 1000000);
  return buf;
}

static struct item *add(struct tl *g, int lane, const char *kind, double t0, double t1,
                        const char *color, const cJSON *e, const char *fmt, ...)
  __attribute__((format(printf, 8, 9)));
static struct item *add(struct tl *g, int lane, const char *kind, double t0, double t1,
                        const char *color, const cJSON *e, const char *fmt, ...)
{
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    g->it = realloc(g->it, g->cap * sizeof *g->it);
  }
  struct item *it = &g->it[g->n++];
  memset(it, 0, sizeof *it);
  it->lane = lane, it->kind = kind, it->color = color;
  it->t0 = t0 < g->t0 ? g->t0 : t0;
  it->t1 = t1;
  it->bar = t1 >= 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(it->label, sizeof it->label, fmt, ap);
  va_end(ap);
  it->title = e ? cJSON_PrintUnformatted(e) : strdup(it->label);
  return it;
}

/* ---- the layout -------------------------------------------------------------- */

/* Each label into the first row of its lane where it fits; the lanes'
 * heights from their rows. */
static void layout(struct tl *g)
{
  double end[NL][TL_ROWS];
  for (int l = 0; l < NL; l++)
    for (int r = 0; r < TL_ROWS; r++)
      end[l][r] = -1e9;
  memset(g->rows, 0, sizeof g->rows);
  for (size_t i = 0; i < g->n; i++) {
    struct item *it = &g->it[i];
    if (!it->label[0])
      continue;                      /* a sample's tick: no label */
    double w = tl_text_width(it->label, TL_FS);
    it->lx = xat(g, it->t0) + 1;
    if (it->lx + w > TL_W - 2)
      it->lx = TL_W - 2 - w;         /* near the right edge: ends there */
    it->row = -1;
    for (int r = 0; r < TL_ROWS && it->row < 0; r++)
      if (end[it->lane][r] + TL_GAP <= it->lx)
        it->row = r;
    if (it->row < 0) {               /* a crowded lane: a label fewer, its tooltip stays */
      it->label[0] = 0;
      continue;
    }
    end[it->lane][it->row] = it->lx + w;
    if (it->row + 1 > g->rows[it->lane])
      g->rows[it->lane] = it->row + 1;
  }
  double y = TL_TOP;
  for (int l = 0; l < NL; l++) {
    g->y[l] = y;
    y += TL_BAND + g->rows[l] * TL_ROW + 6;
  }
  g->y[NL] = y;
}

/* ---- the drawing ------------------------------------------------------------- */

static void draw_item(struct tl *g, const struct item *it)
{
  FILE *f = g->f;
  double x = xat(g, it->t0), y = g->y[it->lane];
  fprintf(f, "<g class='ev-%s'>", it->kind);
  if (it->bar) {
    double w = xat(g, it->t1) - x;
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%d' fill='%s' fill-opacity='0.75'/>",
            x, y + (it->half ? TL_BAND / 2 + 1 : 2), w < 2 ? 2 : w,
            it->half ? TL_BAND / 2 - 3 : TL_BAND - 4, it->color);
  } else {
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='2'/>",
            x, y + 1, x, y + TL_BAND - 1, it->color);
  }
  if (it->label[0]) {
    fprintf(f, "<text x='%.1f' y='%.1f' font-size='%d' fill='%s'>", it->lx,
            y + TL_BAND + TL_ROW * it->row + 9, TL_FS, it->color);
    esc(f, it->label);
    fputs("</text>", f);
  }
  fputs("<title>", f);
  esc(f, it->title);
  fputs("</title></g>\n", f);
}

static void axis(struct tl *g, const char *title)
{
  FILE *f = g->f;
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
  fprintf(f, "<text x='%d' y='20' font-size='13' font-weight='bold'>", TL_LEFT);
  esc(f, title);
  fputs("</text>\n", f);
  for (int l = 0; l < NL; l++) {
    fprintf(f, "<rect x='%d' y='%.1f' width='%d' height='%.1f' fill='%s'/>\n", TL_LEFT, g->y[l],
            TL_AXIS, g->y[l + 1] - g->y[l], l % 2 ? "#f2f2f2" : "#fafafa");
    fprintf(f, "<text x='%d' y='%.1f' font-size='11' text-anchor='end'>%s</text>\n",
            TL_LEFT - 6, g->y[l] + 13, lane_names[l]);
  }
  for (double t = 0; t <= span + 1; t += step) {
    double x = xat(g, g->t0 + t);
    fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%.1f' stroke='#ddd'/>"
            "<text x='%.1f' y='%.1f' font-size='9' text-anchor='middle'>%.1fs</text>\n",
            x, TL_TOP, x, g->y[NL] + 4, x, g->y[NL] + 14, t / 1000);
  }
}

static double legend(struct tl *g)
{
  static const struct { const char *color, *what; } keys[] = {
    {"#d62728", "node down"}, {"#f4a6a6", "partitioned"}, {"#e6b800", "segment behind its peers"},
    {"#17becf", "records above a hole"}, {"#ff7f0e", "writer stalled (no write quorum)"},
    {"#1f77b4", "new epoch, failover"}, {"#9467bd", "truncation"}, {"#8c564b", "fenced"},
    {"#e377c2", "dirty read (above the VDL)"}, {"#2ca02c", "read held for the VDL"},
    {"#bcbd22", "PGMRPL held, GC"}, {"#555", "mark or fault"}, {"#7f7f7f", "bench"}};
  double y = g->y[NL] + 30, x = TL_LEFT;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    double w = 16 + tl_text_width(keys[i].what, 10) + 14;
    if (x > TL_LEFT && x + w > TL_W - TL_RIGHT)
      x = TL_LEFT, y += 15;                                     /* a row more */
    fprintf(g->f, "<rect x='%.1f' y='%.1f' width='12' height='10' fill='%s'/>"
            "<text x='%.1f' y='%.1f' font-size='10'>%s</text>\n", x, y, keys[i].color,
            x + 16, y + 9, keys[i].what);
    x += w;
  }
  return y + 20;
}

/* ---- the events -------------------------------------------------------------- */

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

static int node_lane(const char *id)
{
  if (id[0] >= 'A' && id[0] <= 'C' && (id[1] == '1' || id[1] == '2') && !id[2])
    return L_NODE0 + (id[0] - 'A') * 2 + (id[1] - '1');
  return -1;
}

/* What is open: a bar's start per node (down, partitioned, behind, hole)
 * and for the writer and replica (stall, hold). */
struct open { double down[6], part[6], behind[6], hole[6], stall, hold, stall_epoch; char why[6][48]; };

static void node_event(struct tl *g, struct open *o, const cJSON *e, double t, char *b1, char *b2)
{
  int nl = node_lane(fstr(e, "node")), k = nl - L_NODE0;
  if (nl < 0)
    return;
  if (is(e, "node")) {
    int up = cJSON_IsTrue(cJSON_GetObjectItem(e, "up"));
    if (!up && o->down[k] < 0) {
      o->down[k] = t;
      snprintf(o->why[k], sizeof o->why[k], "%s", fstr(e, "why"));
    } else if (up && o->down[k] >= 0) {
      add(g, nl, "node", o->down[k], t, "#d62728", e, "down %.1f s%s%s, back: %s",
          (t - o->down[k]) / 1000, o->why[k][0] ? ": " : "", o->why[k], fstr(e, "why"));
      o->down[k] = -1;
    } else if (up)
      add(g, nl, "node", t, -1, "#2ca02c", e, "up");
  } else if (is(e, "behind")) {
    if (o->behind[k] < 0)
      o->behind[k] = t;
  } else if (is(e, "caughtup")) {
    struct item *it = add(g, nl, "behind", o->behind[k] >= 0 ? o->behind[k] : t, t, "#e6b800", e,
                          "pg %.0f behind, caught up %s -> %s (%.0f gossip msgs)", fnum(e, "pg"),
                          lsn(fnum(e, "from"), b1), lsn(fnum(e, "scl"), b2), fnum(e, "gossip_msgs"));
    it->half = 1;
    add(g, nl, "caughtup", t, -1, "#b8860b", e, "caught up");
    o->behind[k] = -1;
  } else if (is(e, "hole")) {
    if (o->hole[k] < 0) {
      o->hole[k] = t - fnum(e, "ms");      /* it opened ms before */
      add(g, nl, "hole", t, -1, "#17becf", e, "pg %.0f hole: %s^%s%s", fnum(e, "pg"),
          lsn(fnum(e, "scl"), b1), lsn(fnum(e, "max_lsn"), b2),
          cJSON_IsTrue(cJSON_GetObjectItem(e, "gossip_off")) ? " (gossip off)" : "");
    }
  } else if (is(e, "filled")) {
    add(g, nl, "filled", o->hole[k] >= 0 ? o->hole[k] : t, t, "#17becf", e,
        "pg %.0f filled %s -> %s by gossip (%.0f msgs)", fnum(e, "pg"), lsn(fnum(e, "from"), b1),
        lsn(fnum(e, "scl"), b2), fnum(e, "gossip_msgs"));
    o->hole[k] = -1;
  }
}

/* An event of another volume than the one the lab looks at (a restored
 * volume's own engine, lab 12): its epochs, samples and recovery are not
 * the writer's lane. */
static int other_volume(struct labctx *x, const cJSON *e)
{
  const char *v = fstr(e, "volume"), *mine = fstr(x->status, "volume");
  return v[0] && mine[0] && strcmp(v, mine) != 0 && !is(e, "voldrop") && !is(e, "restore");
}

/* Every event of the window into items. */
static void events(struct tl *g, struct labctx *x, struct open *o)
{
  char label[128], b1[32], b2[32];
  double maxlag = -1, lag_t = -1, lag_lsn = 0;
  const cJSON *lag_e = NULL;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    double t = fnum(e, "t");
    if (other_volume(x, e)) {
      if (is(e, "epoch"))
        add(g, L_MARKS, "epoch", t, -1, "#555", e, "volume %s opened (epoch %.0f)",
            fstr(e, "volume"), fnum(e, "epoch"));
      continue;
    }
    if (is(e, "node") || is(e, "behind") || is(e, "caughtup") || is(e, "hole") || is(e, "filled")) {
      node_event(g, o, e, t, b1, b2);
    } else if (is(e, "fault")) {
      const char *a = fstr(e, "action");
      fault_label(e, label, sizeof label);
      add(g, L_MARKS, "fault", t, -1, "#555", e, "%s", label);
      if (!strcmp(a, "partition") && fstr(e, "az")[0] >= 'A' && fstr(e, "az")[0] <= 'C')
        for (int k = 0; k < 2; k++)
          o->part[(fstr(e, "az")[0] - 'A') * 2 + k] = t;
      else if (!strcmp(a, "heal"))
        for (int k = 0; k < 6; k++)
          if (o->part[k] >= 0) {
            add(g, L_NODE0 + k, "fault", o->part[k], t, "#f4a6a6", e, "partitioned");
            o->part[k] = -1;
          }
    } else if (is(e, "start")) {
      add(g, L_MARKS, "start", t, -1, "#555", e, "coordinator start");
    } else if (is(e, "voldrop")) {
      add(g, L_MARKS, "voldrop", t, -1, "#555", e, "volume %s dropped", fstr(e, "volume"));
    } else if (is(e, "ddl")) {
      add(g, L_WRITER, "ddl", t, -1, strncmp(fstr(e, "op"), "drop", 4) ? "#2ca02c" : "#d62728",
          e, "%s %s at lsn %s", fstr(e, "op"), fstr(e, "name"), lsn(fnum(e, "lsn"), b1));
    } else if (is(e, "restore")) {
      add(g, L_MARKS, "restore", t, -1, "#1f77b4", e, "restore of %s to lsn %s%s%s",
          fstr(e, "volume"), lsn(fnum(e, "point"), b1), fstr(e, "into")[0] ? " into " : "",
          fstr(e, "into"));
    } else if (is(e, "failover")) {
      add(g, L_MARKS, "failover", t, -1, "#1f77b4", e, "failover to %s, epoch %.0f (%.0f ms)",
          fstr(e, "to"), fnum(e, "epoch"), fnum(e, "took_ms"));
    } else if (is(e, "epoch")) {
      /* A stalled writer replaced: its stall ends with its epoch (it is
       * fenced or gone), whether or not an unstall was ever heard. */
      if (o->stall >= 0 && fnum(e, "epoch") > o->stall_epoch) {
        add(g, L_WRITER, "stall", o->stall, t, "#ff7f0e", e, "stalled until epoch %.0f took over",
            fnum(e, "epoch"))->half = 1;
        o->stall = -1;
      }
      add(g, L_WRITER, "epoch", t, -1, "#1f77b4", e, "epoch %.0f%s", fnum(e, "epoch"),
          cJSON_IsTrue(cJSON_GetObjectItem(e, "promotion")) ? " (promoted)" : "");
    } else if (is(e, "trunc")) {
      add(g, L_WRITER, "trunc", t, -1, "#9467bd", e, "trunc (%s, %s]", lsn(fnum(e, "from"), b1),
          lsn(fnum(e, "to"), b2));
    } else if (is(e, "fenced")) {
      add(g, L_WRITER, "fenced", t, -1, "#8c564b", e, "fenced: epoch %.0f still runs",
          fnum(e, "epoch"));
    } else if (is(e, "dataloss")) {
      add(g, L_WRITER, "dataloss", t, -1, "#d62728", e, "DATA LOSS at vdl %s",
          lsn(fnum(e, "vdl"), b1));
    } else if (is(e, "stall")) {
      if (o->stall < 0)
        o->stall = t, o->stall_epoch = fnum(e, "epoch");
    } else if (is(e, "unstall")) {
      add(g, L_WRITER, "stall", o->stall >= 0 ? o->stall : t, t, "#ff7f0e", e,
          "stalled %.0f ms at vdl %s", fnum(e, "ms"), lsn(fnum(e, "from"), b1))->half = 1;
      add(g, L_WRITER, "unstall", t, -1, "#ff7f0e", e, "VDL moves");
      o->stall = -1;
    } else if (is(e, "dirtyread")) {
      add(g, L_READS, "dirtyread", t, -1, "#e377c2", e, "%.0f dirty read%s: saw %s > vdl %s",
          fnum(e, "n"), fnum(e, "n") == 1 ? "" : "s", lsn(fnum(e, "seen"), b1),
          lsn(fnum(e, "vdl"), b2));
    } else if (is(e, "heldread")) {
      add(g, L_READS, "heldread", t, -1, "#2ca02c", e, "%.0f read%s held at vdl %s", fnum(e, "n"),
          fnum(e, "n") == 1 ? "" : "s", lsn(fnum(e, "vdl"), b1));
    } else if (is(e, "hold")) {
      if (o->hold < 0)
        o->hold = t - fnum(e, "ms");        /* it stood still since then */
    } else if (is(e, "release")) {
      add(g, L_REPLICA, "hold", o->hold >= 0 ? o->hold : t, t, "#bcbd22", e,
          "PGMRPL held at %s for %.0f ms: %+.0f records kept", lsn(fnum(e, "from"), b1),
          fnum(e, "ms"), fnum(e, "growth_records"))->half = 1;
      add(g, L_REPLICA, "release", t, -1, "#bcbd22", e, "released");
      o->hold = -1;
    } else if (is(e, "gcpassed")) {
      add(g, L_REPLICA, "gcpassed", t, -1, "#8a8a00", e, "GC at %s, past %s",
          lsn(fnum(e, "gc_lsn"), b1), lsn(fnum(e, "held"), b2));
    } else if (is(e, "gc")) {
      /* Samples: a short tick each, labelled where the PGMRPL moved. */
      add(g, L_REPLICA, "gc", t, -1, "#c7c76a", e, "%s", "")->half = 1;
    } else if (is(e, "bench")) {
      add(g, L_BENCH, "bench", t, -1, "#7f7f7f", e, "%s %.0f tx/s (%s, group %.0f)",
          fstr(e, "system"), fnum(e, "tx_s"), fstr(e, "workload"), fnum(e, "group"));
    }
    if (is(e, "engine") && fnum(e, "lag_ms") >= 0 && fnum(e, "replicas") >= 1) {
      if (g->np < (int)(sizeof g->px / sizeof g->px[0]))
        g->px[g->np] = t, g->py[g->np++] = fnum(e, "lag_ms");
      /* Each maximum on its own, as lab 9's check counts them. */
      if (fnum(e, "lag_ms") > maxlag)
        maxlag = fnum(e, "lag_ms"), lag_t = t, lag_e = e;
      if (fnum(e, "lag_lsn") > lag_lsn)
        lag_lsn = fnum(e, "lag_lsn");
    }
  }
  if (lag_e && maxlag > 0)
    add(g, L_REPLICA, "engine", lag_t, -1, "#1f77b4", lag_e, "replica lag up to %.0f ms, up to %s LSNs",
        maxlag, lsn(lag_lsn, b1));
}

/* What is still open at the end runs to the axis's end. */
static void still_open(struct tl *g, const struct open *o)
{
  for (int k = 0; k < 6; k++) {
    if (o->down[k] >= 0)
      add(g, L_NODE0 + k, "node", o->down[k], g->t1, "#d62728", NULL, "down%s%s (still, at the "
          "check)", o->why[k][0] ? ": " : "", o->why[k]);
    if (o->part[k] >= 0)
      add(g, L_NODE0 + k, "fault", o->part[k], g->t1, "#f4a6a6", NULL, "partitioned (still)");
    if (o->behind[k] >= 0)
      add(g, L_NODE0 + k, "behind", o->behind[k], g->t1, "#e6b800", NULL,
          "behind (still, at the check)")->half = 1;
    if (o->hole[k] >= 0)
      add(g, L_NODE0 + k, "hole", o->hole[k], g->t1, "#17becf", NULL,
          "a hole (still open, at the check)");
  }
  if (o->stall >= 0)
    add(g, L_WRITER, "stall", o->stall, g->t1, "#ff7f0e", NULL, "stalled (still, at the check)")->half = 1;
  if (o->hold >= 0)
    add(g, L_REPLICA, "hold", o->hold, g->t1, "#bcbd22", NULL, "PGMRPL held (still, at the check)")->half = 1;
}

/* The commits line and the replicas' lag, inside their lanes' bands. */
static void lines(struct tl *g, struct labctx *x)
{
  double maxc = -1, minc = -1, px = -1, py = -1, pepoch = -1;
  for (size_t i = 0; i < x->nev; i++) {
    double c = fnum(x->ev[i], "commits");
    if (is(x->ev[i], "engine") && c >= 0 && !other_volume(x, x->ev[i])) {
      maxc = c > maxc ? c : maxc;
      minc = minc < 0 || c < minc ? c : minc;
    }
  }
  fprintf(g->f, "<g class='ev-engine'>");
  for (size_t i = 0; i < x->nev && maxc > minc; i++) {
    const cJSON *e = x->ev[i];
    if (!is(e, "engine") || fnum(e, "commits") < 0 || other_volume(x, e))
      continue;
    double cx = xat(g, fnum(e, "t"));
    double cy = g->y[L_COMMITS] + TL_BAND - 2 - (fnum(e, "commits") - minc) / (maxc - minc) * (TL_BAND - 4);
    /* Each writer counts its own commits from 0: a new epoch starts a
     * new line rather than drawing a fall from the old writer's count. */
    if (fnum(e, "epoch") != pepoch)
      px = -1;
    pepoch = fnum(e, "epoch");
    if (px >= 0)
      fprintf(g->f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#2ca02c'/>\n", px, py, cx, cy);
    px = cx, py = cy;
  }
  double maxl = 1;
  for (int i = 0; i < g->np; i++)
    maxl = g->py[i] > maxl ? g->py[i] : maxl;
  for (int i = 1; i < g->np; i++)
    fprintf(g->f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#1f77b4'/>\n",
            xat(g, g->px[i - 1]), g->y[L_REPLICA] + TL_BAND - 2 - g->py[i - 1] / maxl * (TL_BAND - 4),
            xat(g, g->px[i]), g->y[L_REPLICA] + TL_BAND - 2 - g->py[i] / maxl * (TL_BAND - 4));
  fprintf(g->f, "</g>\n");
}

int timeline_svg(struct labctx *x, const char *path, const char *title)
{
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return -1;
  struct tl g;
  memset(&g, 0, sizeof g);
  g.f = f;
  g.t0 = x->tstart, g.t1 = -1;
  /* The axis: from the start mark (or the window's first event) to the last. */
  for (size_t i = 0; i < x->nev; i++) {
    double t = fnum(x->ev[i], "t");
    if (t < 0)
      continue;
    g.t0 = g.t0 < 0 || t < g.t0 ? t : g.t0;
    g.t1 = t > g.t1 ? t : g.t1;
  }
  if (g.t1 <= g.t0)
    g.t1 = g.t0 + 1000;
  /* The nodes' state as the window opens: replay the journal before it. */
  struct nodes s;
  memset(&s, 0, sizeof s);
  long first = x->nev ? hist_index(x, x->ev[0]) : hist_len(x);
  for (long i = 0; i < first; i++)
    nodes_apply(&s, hist_at(x, i));
  struct open o;
  for (int k = 0; k < 6; k++) {
    o.down[k] = s.down[k / 2][k % 2] ? g.t0 : -1;
    o.part[k] = s.part[k / 2] ? g.t0 : -1;
    o.behind[k] = o.hole[k] = -1;
    o.why[k][0] = 0;
  }
  o.stall = o.hold = -1;
  if (x->tstart >= 0)
    add(&g, L_MARKS, "fault", g.t0, -1, "#555", NULL, "%s", x->demo ? "demo start" : "lab start");
  double minc = -1, maxc = -1;
  for (size_t i = 0; i < x->nev; i++)
    if (is(x->ev[i], "engine") && fnum(x->ev[i], "commits") >= 0 && !other_volume(x, x->ev[i])) {
      double c = fnum(x->ev[i], "commits");
      maxc = c > maxc ? c : maxc;
      minc = minc < 0 || c < minc ? c : minc;
    }
  if (maxc >= 0)
    add(&g, L_COMMITS, "engine", g.t0, -1, "#2ca02c", NULL, "%.0f .. %.0f commits (a line per "
        "writer)", minc, maxc);
  events(&g, x, &o);
  still_open(&g, &o);
  layout(&g);
  double h = g.y[NL] + 110;
  fprintf(f, "<?xml version='1.0' encoding='UTF-8'?>\n"
          "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%.0f' "
          "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
          TL_W, h);
  axis(&g, title);
  lines(&g, x);
  for (size_t i = 0; i < g.n; i++)
    draw_item(&g, &g.it[i]);
  legend(&g);
  fputs("</svg>\n", f);
  for (size_t i = 0; i < g.n; i++)
    free(g.it[i].title);
  free(g.it);
  return fclose(f) == 0 ? 0 : -1;
}
