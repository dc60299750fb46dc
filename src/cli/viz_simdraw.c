/*
 * viz_simdraw.c: the drawing of a replayed simulator trace (viz_sim.c,
 * viz_sim.h) as one graphviz table, time left to right.
 *
 * It shows only what changes, so that the cause stands out:
 *   - Columns: a column where nothing but the steady march of the log
 *     happened (no mark, no state change, no segment leaving or rejoining
 *     its PG, no fault starting or ending, no wrong read) is quiet; a run
 *     of quiet columns is drawn as one ("500 ... 1800, steady"), with the
 *     VDL's move over it ("9 -> 139") and the reads and messages summed.
 *   - Segments: a node's row for a PG is drawn only if that segment ever
 *     leaves its PG in the window (falls behind, holds records above a
 *     hole) or is where the run diverged; a cell says its SCL only where
 *     that changes and the segment is not in step (over a hole, where S
 *     moves: records arriving above it only move M). A hole is written as
 *     `status` writes it, S^M: the SCL S, records held up to M above it.
 *   - LSNs short: below a million as they are, above as "10M+172" (a
 *     recovery's truncation jumps LSNs by millions, the last digits move).
 *   - Reads: a lane per reader (each writer, the replica): how many reads
 *     finished and at which read points; a read the model disagrees with
 *     is red, with its page and point.
 *   - Faults: a row of spans from injection to heal, packed first fit.
 *   - The violation: its column framed red, its words below; and the
 *     first point where the run left the model (viz_sim.c finds it: a
 *     segment's cell, a wrong read, the VDL's acknowledgement of the commit
 *     later lost) framed and labelled with the violation's words, with
 *     every segment's value written in its column to compare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/viz_sim.h"

#define C_DIVERGE "#7a0177"
#define C_QUIET   "#f0f0f0"

/* A segment's relation to its PG at the end of a column. */
enum { K_STEP, K_BEHIND, K_HOLE, K_DOWN };

/* A drawn column: fine columns c0..c1; quiet if a merged run. */
struct dcol { int c0, c1, quiet; };

struct draw {
  struct vs *v;
  FILE *f;
  struct dcol dc[VS_COLS];
  int ndc, dcol_of[VS_COLS];
  unsigned char rows[VS_L][VS_PG];      /* a segment's row is drawn */
};

const char *vs_lsn(ull lsn, char *buf)
{
  if (lsn < 1000000)
    snprintf(buf, 32, "%llu", lsn);
  else
    snprintf(buf, 32, "%lluM+%llu", lsn / 1000000, lsn % 1000000);
  return buf;
}

void vs_html(FILE *f, const char *s)
{
  for (; *s; s++)
    if (*s == '&' || *s == '<' || *s == '>' || *s == '"')
      fputs(*s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : "&quot;", f);
    else if ((unsigned char)*s >= ' ')
      fputc(*s, f);
}

/* s escaped, broken into lines of about width characters at spaces. */
static void html_wrap(FILE *f, const char *s, size_t width)
{
  char word[128];
  size_t col = 0;
  while (*s) {
    size_t n = strcspn(s, " ");
    snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word - 1 ? n : sizeof word - 1), s);
    if (col && col + n > width) {
      fputs("<br/>", f);
      col = 0;
    } else if (col) {
      fputc(' ', f);
      col++;
    }
    vs_html(f, word);
    col += n;
    s += n + strspn(s + n, " ");
  }
}

/* The violation's words, without "VIOLATION". */
static const char *viol_words(const struct vs *v)
{
  const char *t = v->r[v->viol].text + 9;
  return t + strspn(t, " ");
}

static int seg_class(const struct vs *v, int l, int p, int c)
{
  if (v->worst[l][c] == S_DOWN)
    return K_DOWN;
  if (!v->hosted[l][p] || c < v->hosted[l][p] - 1)
    return K_STEP;              /* no segment of the PG there (yet): nothing behind */
  if (v->endmx[l][p][c] > v->end[l][p][c])
    return K_HOLE;
  return v->end[l][p][c] < v->best0[p][c] ? K_BEHIND : K_STEP;
}

/* ---- which columns and rows ------------------------------------------------ */

static int busy(const struct vs *v, int c)
{
  if (c == 0 || c == v->ncols - 1 || c == v->vcol || c == v->d.col)
    return 1;
  for (int i = 0; i < v->nspan; i++)
    if (v->span[i].c1 >= 0 && (v->span[i].c0 == c || v->span[i].c1 == c))
      return 1;
  for (int r = 0; r < v->nrd; r++)
    if (v->rbad[r][c])
      return 1;
  for (int l = 0; l < v->nlanes; l++) {
    if (v->nmark[l][c] || v->worst[l][c] != v->worst[l][c - 1])
      return 1;
    if (v->lane[l].writer) {
      if (v->end[l][1][c] != v->end[l][1][c - 1])
        return 1;
      continue;
    }
    for (int p = 0; p < v->npg; p++) {
      int k = seg_class(v, l, p, c);
      if (k != seg_class(v, l, p, c - 1) ||
          (k != K_STEP && k != K_DOWN && v->end[l][p][c] != v->end[l][p][c - 1]))
        return 1;
    }
  }
  return 0;
}

/* Busy columns alone, runs of two or more quiet ones merged. */
static void group_cols(struct draw *g)
{
  struct vs *v = g->v;
  g->ndc = 0;
  for (int c = 0; c < v->ncols;) {
    int e = c;
    if (!busy(v, c))
      while (e + 1 < v->ncols && !busy(v, e + 1))
        e++;
    g->dc[g->ndc] = (struct dcol){c, e, e > c};
    for (int k = c; k <= e; k++)
      g->dcol_of[k] = g->ndc;
    g->ndc++;
    c = e + 1;
  }
  for (int l = 0; l < v->nlanes; l++)
    for (int p = 0; p < v->npg && !v->lane[l].writer; p++) {
      int show = v->d.kind == D_SEG && v->d.lane == l && v->d.pg == p;
      for (int c = 0; c < v->ncols && !show; c++)
        show = seg_class(v, l, p, c) == K_BEHIND || seg_class(v, l, p, c) == K_HOLE;
      /* The commit later lost: the segments that held it when acked. */
      if (v->d.kind == D_ACK && v->d.col >= 0 && v->end[l][p][v->d.col] >= v->d.lsn)
        show = 1;
      g->rows[l][p] = (unsigned char)show;
    }
}

/* ---- the drawing ----------------------------------------------------------- */

/* A body cell's opening tag, its fill; the violation's column framed. */
static void td(const struct draw *g, int k, const char *fill)
{
  const struct vs *v = g->v;
  int viol = v->vcol >= g->dc[k].c0 && v->vcol <= g->dc[k].c1 && v->vcol >= 0;
  fprintf(g->f, "<td bgcolor=\"%s\"%s>", g->dc[k].quiet && !strcmp(fill, s_fill[S_UP]) ? C_QUIET
          : fill, viol ? " border=\"2\" color=\"" C_VIOL "\"" : "");
}

/* The divergence's cell: framed, its words. */
static void td_diverge(struct draw *g, const char *fill, const char *lead)
{
  fprintf(g->f, "<td bgcolor=\"%s\" border=\"3\" color=\"" C_DIVERGE "\"><font point-size=\"8\" "
          "color=\"" C_DIVERGE "\">", fill);
  if (lead[0])
    fprintf(g->f, "<b>%s</b><br/>", lead);
  html_wrap(g->f, viol_words(g->v), 34);
  fprintf(g->f, "</font>");
}

static int is_dcol(const struct draw *g, int k)
{
  return g->v->d.col >= g->dc[k].c0 && g->v->d.col <= g->dc[k].c1 && g->v->d.col >= 0;
}

static const char *fault_fill(const struct span *s)
{
  char key[40];
  snprintf(key, sizeof key, " %s ", s->name);
  if (s->kind != E_FAULT)
    return s->kind == E_FINAL ? C_FHEAL : "white";
  return strstr(" node-crash az-down az1-down az1-swap corrupt ", key) ? C_FNODE
         : strstr(" engine-crash recovery-crash second-writer ", key) ? C_FWR : C_FNET;
}

/* The faults in rows, each a span of drawn columns, packed first fit. */
static void draw_faults(struct draw *g)
{
  struct vs *v = g->v;
  FILE *f = g->f;
  int rows = 0, last[VS_SPANS];
  for (int i = 0; i < v->nspan; i++) {
    struct span *s = &v->span[i];
    if (s->c1 < 0)
      continue;
    int k0 = g->dcol_of[s->c0], k1 = g->dcol_of[s->c1];
    for (s->row = 0; s->row < rows && last[s->row] >= k0; s->row++)
      ;
    rows += s->row == rows;
    last[s->row] = k1;
  }
  fprintf(f, "<tr><td colspan=\"2\" rowspan=\"%d\" bgcolor=\"#eeeeee\"><b>faults</b></td>",
          rows += rows == 0);   /* an empty row if none */
  for (int row = 0, k = 0; row < rows; row++, k = 0) {
    for (int i = 0; i < v->nspan; i++) {
      const struct span *s = &v->span[i];
      if (s->c1 < 0 || s->row != row)
        continue;
      int k0 = g->dcol_of[s->c0], k1 = g->dcol_of[s->c1];
      for (; k < k0; k++)
        fprintf(f, "<td></td>");
      fprintf(f, "<td colspan=\"%d\" bgcolor=\"%s\"%s><font point-size=\"9\">%s%s%s",
              k1 - k0 + 1, fault_fill(s), s->kind == E_SKIP ? " style=\"dashed\"" : "",
              s->t0 < v->from ? "... " : "", s->kind == E_SKIP ? "<i>" : "<b>", s->name);
      if (s->kind == E_FAULT)
        fprintf(f, "</b>%s<br/>%llu ms", s->t1 > v->to ? " ..." : "", s->dur);
      fprintf(f, "%s</font></td>", s->kind == E_SKIP ? " skipped</i>" : s->kind == E_FINAL ? "</b>" : "");
      k = k1 + 1;
    }
    for (; k < g->ndc; k++)
      fprintf(f, "<td></td>");
    fprintf(f, "</tr>\n%s", row + 1 < rows ? "<tr>" : "");
  }
}

/* The marks of drawn column k (a quiet run has none). */
static void marks(struct draw *g, int l, int k)
{
  for (int c = g->dc[k].c0; c <= g->dc[k].c1; c++)
    if (g->v->mark[l][c][0])
      fprintf(g->f, "<font point-size=\"8\">%s</font>", g->v->mark[l][c]);
}

/* The worst state over drawn column k. */
static int worst(const struct draw *g, int l, int k)
{
  int w = 0;
  for (int c = g->dc[k].c0; c <= g->dc[k].c1; c++)
    w = g->v->worst[l][c] > w ? g->v->worst[l][c] : w;
  return w;
}

/* A writer: its events, then its VDL where it moved (with its epoch where
 * that changed; over a quiet run, from -> to). */
static void draw_writer(struct draw *g, int l, int first, int nrows)
{
  struct vs *v = g->v;
  FILE *f = g->f;
  char a[32], b[32];
  fprintf(f, "<tr>");
  if (first)
    fprintf(f, "<td rowspan=\"%d\" bgcolor=\"#eeeeee\"><b>writers</b></td>", nrows);
  fprintf(f, "<td bgcolor=\"#f5f7fa\" align=\"left\"><b>%s</b> <font point-size=\"8\">events"
          "</font></td>", v->lane[l].name);
  for (int k = 0; k < g->ndc; k++) {
    td(g, k, s_fill[worst(g, l, k)]);
    marks(g, l, k);
    fprintf(f, "</td>");
  }
  fprintf(f, "</tr>\n<tr><td bgcolor=\"#f5f7fa\" align=\"left\"><font point-size=\"8\">%s VDL"
          "</font></td>", v->lane[l].name);
  for (int k = 0; k < g->ndc; k++) {
    int c0 = g->dc[k].c0, c = g->dc[k].c1;
    const ull *val = v->end[l][0], *ep = v->end[l][1];
    ull before = c0 > 0 ? val[c0 - 1] : 0;
    int fill = worst(g, l, k);
    if (v->d.kind == D_ACK && v->d.lane == l && is_dcol(g, k)) {
      td_diverge(g, s_fill[fill], "");
      /* One style a line: a browser's fonts are not graphviz's, and two
       * runs on one line can overlap there. */
      fprintf(f, "<font point-size=\"8\" color=\"" C_DIVERGE "\"><br/><b>e%llu acks %s</b>",
              ep[c], vs_lsn(v->d.lsn, a));
      if (val[c] != v->d.lsn)
        fprintf(f, "<br/>(VDL %s)", vs_lsn(val[c], b));
      fprintf(f, "</font></td>");
      continue;
    }
    td(g, k, s_fill[fill]);
    if (val[c] && ep[c] && (c0 == 0 || ep[c] != ep[c0 - 1] || !before))
      fprintf(f, "<font point-size=\"8\"><b>e%llu: %s</b></font>", ep[c], vs_lsn(val[c], a));
    else if (val[c] && g->dc[k].quiet && val[c] != before)
      fprintf(f, "<font point-size=\"8\">%s &#8594; %s</font>", vs_lsn(before, a), vs_lsn(val[c], b));
    else if (val[c] && (val[c] != before || k == g->ndc - 1))
      fprintf(f, "<font point-size=\"8\"%s>%s</font>", val[c] == before ? " color=\"#909090\"" : "",
              vs_lsn(val[c], a));
    fprintf(f, "</td>");
  }
  fprintf(f, "</tr>\n");
}

/* A segment's cell in drawn column k: shaded by its class, its SCL (S^M
 * over a hole) written where it changed and it is not in step, and in
 * the divergence's column. */
static void seg_cell(struct draw *g, int l, int p, int k)
{
  struct vs *v = g->v;
  FILE *f = g->f;
  int c = g->dc[k].c1, pc = k > 0 ? g->dc[k - 1].c1 : -1;
  int cls = seg_class(v, l, p, c), w = worst(g, l, k);
  ull s = v->end[l][p][c], m = v->endmx[l][p][c];
  const char *fill = cls == K_DOWN ? s_fill[S_DOWN] : cls == K_HOLE ? C_HOLE
                     : cls == K_BEHIND ? C_BEHIND : s_fill[w == S_DOWN ? S_UP : w];
  /* Over a hole, records arriving above it move only M: the SCL S
   * standing still is the news. */
  int moved = pc < 0 || cls != seg_class(v, l, p, pc) || s != v->end[l][p][pc];
  int dk = is_dcol(g, k);
  char a[32], b[32], text[80];
  snprintf(text, sizeof text, "%s%s%s", vs_lsn(s, a), m > s ? "^" : "", m > s ? vs_lsn(m, b) : "");
  if (dk && v->d.kind == D_SEG && v->d.lane == l && v->d.pg == p) {
    td_diverge(g, fill, text);
    fprintf(f, "</td>");
    return;
  }
  td(g, k, fill);
  if (s && ((cls != K_DOWN && moved && cls != K_STEP) || dk ||
                             (k == g->ndc - 1 && cls != K_STEP)))
    fprintf(f, "<font point-size=\"8\"%s>%s</font>", dk && v->d.kind == D_ACK && s >= v->d.lsn
            ? " color=\"" C_DIVERGE "\"" : "", text);
  fprintf(f, "</td>");
}

/* A storage node: its events, then a row per PG whose segment left it. */
static void draw_node(struct draw *g, int l, const char *group, int grows)
{
  struct vs *v = g->v;
  FILE *f = g->f;
  int n = 0;
  for (int p = 0; p < v->npg; p++)
    n += g->rows[l][p];
  fprintf(f, "<tr>");
  if (group)
    fprintf(f, "<td rowspan=\"%d\" bgcolor=\"#eeeeee\"><b>%s</b></td>", grows, group);
  fprintf(f, "<td bgcolor=\"#f5f7fa\" align=\"left\"><b>%s</b> <font point-size=\"8\">%s"
          "</font></td>", v->lane[l].name, n ? "events" : "events, SCLs in step");
  for (int k = 0; k < g->ndc; k++) {
    td(g, k, s_fill[worst(g, l, k)]);
    marks(g, l, k);
    fprintf(f, "</td>");
  }
  for (int p = 0; p < v->npg; p++) {
    if (!g->rows[l][p])
      continue;
    fprintf(f, "</tr>\n<tr><td bgcolor=\"#f5f7fa\" align=\"left\"><font point-size=\"8\">%s "
            "pg %d SCL</font></td>", v->lane[l].name, p);
    for (int k = 0; k < g->ndc; k++)
      seg_cell(g, l, p, k);
  }
  fprintf(f, "</tr>\n");
}

/* The reads: per reader, how many finished and at which read points; a
 * wrong one red, with its page and point. */
static void draw_reads(struct draw *g)
{
  struct vs *v = g->v;
  FILE *f = g->f;
  char a[32], b[32], c2[32];
  for (int r = 0; r < v->nrd; r++) {
    fprintf(f, "<tr>");
    if (r == 0)
      fprintf(f, "<td rowspan=\"%d\" bgcolor=\"#eeeeee\"><b>reads</b></td>", v->nrd);
    fprintf(f, "<td bgcolor=\"#f5f7fa\" align=\"left\"><b>%s</b> <font point-size=\"8\">read "
            "points</font></td>", v->reader[r]);
    for (int k = 0; k < g->ndc; k++) {
      unsigned n = 0;
      ull lo = ~0ULL, hi = 0;
      long bad = 0;
      for (int c = g->dc[k].c0; c <= g->dc[k].c1; c++) {
        if (v->nreads[r][c] && v->rplo[r][c] < lo)
          lo = v->rplo[r][c];
        hi = v->nreads[r][c] && v->rphi[r][c] > hi ? v->rphi[r][c] : hi;
        n += v->nreads[r][c];
        bad = bad ? bad : v->rbad[r][c];
      }
      if (bad) {
        const struct rec *rd = &v->r[bad - 1];
        snprintf(c2, sizeof c2, "page %llu at %s", rd->x, vs_lsn(rd->y, a));
        if (v->d.kind == D_READ && bad - 1 == v->d.rec) {
          td_diverge(g, C_WRONG, c2);
          fprintf(f, "</td>");
          continue;
        }
        td(g, k, C_WRONG);
        fprintf(f, "<font point-size=\"8\" color=\"" C_VIOL "\"><b>%s: wrong</b></font></td>", c2);
        continue;
      }
      td(g, k, "#ffffff");
      if (n && lo == hi)
        fprintf(f, "<font point-size=\"8\" color=\"#08519c\">%u at %s</font>", n, vs_lsn(lo, a));
      else if (n)
        fprintf(f, "<font point-size=\"8\" color=\"#08519c\">%u at %s..%s</font>", n,
                vs_lsn(lo, a), vs_lsn(hi, b));
      fprintf(f, "</td>");
    }
    fprintf(f, "</tr>\n");
  }
}

static void draw_msgs(struct draw *g)
{
  static const char *const net[] = {"delivered", "dropped, lost", "duplicated, bad"};
  FILE *f = g->f;
  for (int m = 0; m < 3; m++) {
    fprintf(f, m ? "<tr>" : "<tr><td rowspan=\"3\" bgcolor=\"#eeeeee\"><b>messages</b></td>");
    fprintf(f, "<td align=\"left\"><font point-size=\"8\">%s</font></td>", net[m]);
    for (int k = 0; k < g->ndc; k++) {
      unsigned n = 0;
      for (int c = g->dc[k].c0; c <= g->dc[k].c1; c++)
        n += g->v->msgs[m][c];
      if (n)
        fprintf(f, "<td><font point-size=\"8\" color=\"%s\">%u</font></td>", m ? C_VIOL : "black", n);
      else
        fprintf(f, "<td></td>");
    }
    fprintf(f, "</tr>\n");
  }
}

static void draw_legend(FILE *f)
{
  const char *const what[][2] = {{s_fill[S_UP], "up, serving"}, {s_fill[S_RECOV],
    "recovering"}, {s_fill[S_CUT], "cut off, partitioned"}, {s_fill[S_FENCED], "fenced"},
    {s_fill[S_DOWN], "down"}, {C_BEHIND, "SCL behind its PG"}, {C_HOLE, "S^M: a hole"},
    {C_WRONG, "read wrong"}, {C_QUIET, "quiet run"}, {C_FNODE, "fault: nodes"},
    {C_FNET, "fault: network"}, {C_FWR, "fault: writer"}, {C_FHEAL, "final heal"}};
  fprintf(f, "  legend [shape=plaintext fontsize=9 label=<<table border=\"0\" cellborder=\"1\" "
          "cellspacing=\"3\" cellpadding=\"3\"><tr><td border=\"0\"><b>legend</b></td>");
  for (size_t i = 0; i < sizeof what / sizeof what[0]; i++)
    fprintf(f, "<td bgcolor=\"%s\">%s</td>", what[i][0], what[i][1]);
  fprintf(f, "<td color=\"" C_DIVERGE "\" border=\"3\">left the model</td><td color=\"" C_VIOL
          "\" border=\"2\">violation</td></tr>\n<tr><td border=\"0\" colspan=\"16\">Only what "
          "changes: a column where the log only moved on is merged into a quiet run; a segment's "
          "row is drawn only if it left its PG; its SCL is written where it changed (S^M: SCL S, "
          "records held up to M above a hole, as in status). 10M+172 is LSN 10000172. eN: the "
          "writer's epoch.</td></tr></table>>];\n");
}

/* Lanes in drawing order: writers, then nodes by AZ and number. */
static int lane_cmp(const struct lane *a, const struct lane *b)
{
  return a->writer != b->writer ? b->writer - a->writer
         : a->az != b->az ? a->az - b->az : atoi(a->name + 1) - atoi(b->name + 1);
}

/* The header: each drawn column's time; the divergence's and the
 * violation's coloured. */
static void draw_header(struct draw *g)
{
  struct vs *v = g->v;
  FILE *f = g->f;
  fprintf(f, "<tr><td colspan=\"2\" align=\"right\"><b>ms</b></td>");
  for (int k = 0; k < g->ndc; k++) {
    const struct dcol *d = &g->dc[k];
    int viol = v->vcol >= d->c0 && v->vcol <= d->c1 && v->vcol >= 0, dk = is_dcol(g, k);
    ull t0 = v->from + (ull)d->c0 * v->step;
    fprintf(f, "<td width=\"40\"%s><font point-size=\"9\"%s>%llu", viol ? " bgcolor=\"" C_VIOL "\""
            : dk ? " bgcolor=\"" C_DIVERGE "\"" : d->quiet ? " bgcolor=\"" C_QUIET "\"" : "",
            viol || dk ? " color=\"white\"" : "", t0);
    if (d->quiet)
      fprintf(f, "..%llu<br/><i>steady</i>", v->from + (ull)d->c1 * v->step);
    fprintf(f, "%s%s</font></td>", dk ? "<br/><b>left the model</b>" : "",
            viol ? "<br/><b>VIOLATION</b>" : "");
  }
  fprintf(f, "</tr>\n");
}

char *vs_draw(struct vs *v, const char *path)
{
  struct draw *g = calloc(1, sizeof *g);
  char *buf = NULL, group[16];
  size_t len = 0;
  FILE *f = g->f = open_memstream(&buf, &len);
  g->v = v;
  for (int i = 0; i < v->nspan; i++) {
    struct span *s = &v->span[i];
    s->c1 = -1;
    if (s->t1 < v->from || s->t0 > v->to)
      continue;
    s->c0 = s->t0 < v->from ? 0 : (int)((s->t0 - v->from) / v->step);
    s->c1 = s->t1 > v->to ? v->ncols - 1 : (int)((s->t1 - v->from) / v->step);
  }
  group_cols(g);
  fprintf(f, "digraph simtrace {\n  graph [fontname=\"Helvetica\" fontsize=15 labelloc=t "
          "label=<auralog sim  ·  ");
  vs_html(f, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
  fprintf(f, "  ·  %llu to %llu ms of a %llu ms run  ·  one column = %llu ms%s>];\n"
          "  node [fontname=\"Helvetica\" fontsize=10];\n  timeline [shape=plaintext label=<"
          "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\" color=\"#d0d0d0\">\n",
          v->from, v->to, v->last, v->step,
          v->viol >= 0 ? "  ·  VIOLATION" : "");
  draw_header(g);
  draw_faults(g);
  int order[VS_L], nw = 0;
  for (int l = 0, j; l < v->nlanes; l++) {
    for (j = l; j > 0 && lane_cmp(&v->lane[order[j - 1]], &v->lane[l]) > 0; j--)
      order[j] = order[j - 1];
    order[j] = l;
    nw += v->lane[l].writer;
  }
  for (int i = 0; i < v->nlanes; i++) {
    const struct lane *ln = &v->lane[order[i]];
    if (ln->writer) {
      draw_writer(g, order[i], i == 0, 2 * nw);
      continue;
    }
    int first = i == 0 || v->lane[order[i - 1]].az != ln->az, grows = 0;
    for (int j = i; first && j < v->nlanes && v->lane[order[j]].az == ln->az; j++) {
      grows++;
      for (int p = 0; p < v->npg; p++)
        grows += g->rows[order[j]][p];
    }
    snprintf(group, sizeof group, "AZ %c", ln->az);
    draw_node(g, order[i], first ? group : NULL, grows);
  }
  draw_reads(g);
  draw_msgs(g);
  if (v->viol >= 0) {
    const struct rec *r = &v->r[v->viol];
    fprintf(f, "<tr><td colspan=\"%d\" align=\"left\" bgcolor=\"#fee0d2\"><font color=\"" C_VIOL
            "\"><b>VIOLATION at %llu ms</b></font><br align=\"left\"/>", g->ndc + 2, r->t);
    vs_html(f, viol_words(v));
    if (v->vcol < 0 || v->nviol > 1) {
      fprintf(f, "<br align=\"left\"/><i>");
      if (v->vcol < 0)
        fprintf(f, "(outside this window)%s", v->nviol > 1 ? " " : "");
      if (v->nviol > 1)
        fprintf(f, "(and %zu more)", v->nviol - 1);
      fprintf(f, "</i>");
    }
    if (v->d.kind != D_NONE)
      fprintf(f, "<br align=\"left\"/><font color=\"" C_DIVERGE "\">the run left the model at "
              "%llu ms%s</font>", v->d.t, v->d.col < 0 ? " (outside this window)" : " (framed above)");
    fprintf(f, "<br align=\"left\"/></td></tr>\n");
  }
  fprintf(f, "</table>>];\n");
  draw_legend(f);
  fprintf(f, "  timeline -> legend [style=invis];\n}\n");
  fclose(f);
  free(g);
  return buf;
}
