/*
 * viz_sim.c: `auralog viz --sim-trace FILE`, a simulator run as a timeline.
 *
 * `auralog sim --trace FILE` writes one line per event, virtual ms first:
 * "T net KIND FROM TO BODY BYTES", "T ev TEXT" (faults, heals, crashes,
 * recoveries, VIOLATION), "T vdl WRITER EPOCH VDL" and "T scl NODE PG SCL".
 * This file draws such a trace as one graphviz table: time runs left to
 * right in at most VS_COLS columns of a round width (100 ms, 1 s...), a
 * lane of rows per host. On top the faults, each a span from start to
 * heal; then each writer (start, crash, "e2 recovers", "e2 serves from
 * 595" and the range it truncated, FENCED; its VDL) and each storage node
 * by AZ (crash, restart, cut, healed; each PG's SCL on it). A cell is
 * shaded by the worst state its host was in during the column (down, cut
 * off, recovering, fenced). Watermarks are step labels: the value at the
 * end of the column, written where it moved; an SCL that ended a column
 * below where its PG's best segment stood as the column began is shaded
 * as behind. Messages are counted per column. The violation's column is
 * framed in red; the default window is then the 3 s before it.
 *
 * The whole trace is read and checked first (a bad line is an error naming
 * it), then replayed: events before the window only set the state it
 * starts from. viz_sim_dot returns DOT text; viz.c renders it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/viz.h"

#define VS_COLS   32      /* time columns at most */
#define VS_L      32      /* lanes: writers and storage nodes */
#define VS_PG     8       /* PGs drawn per node */
#define VS_CUTS   128     /* pair cuts in force at once */
#define VS_SPANS  256     /* faults drawn */
#define VS_MARKS  6       /* marks in one cell before "..." */
#define VS_BEFORE 3000    /* default window: this many ms before a violation */

#define C_BEHIND "#fdd49e"
#define C_VIOL   "#d7301f"
#define C_FNODE  "#c6dbef"   /* faults that take nodes down */
#define C_FNET   "#fdd0a2"   /* faults of the network */
#define C_FWR    "#dadaeb"   /* faults of the writer */
#define C_FHEAL  "#c7e9c0"
#define C_RED    "#b2182b"
#define C_GREEN  "#1a9850"

typedef unsigned long long ull;

enum { R_NET, R_VDL, R_SCL, R_EV };
static const char *const net_kinds[] = {"deliver", "drop", "cutdrop", "lost", "dup", "bad",
  "connect", "accept", "up", "close", "crash", "restart", "fatal", "cut", "heal"};
#define N_KINDS (sizeof net_kinds / sizeof net_kinds[0])
enum { N_DELIVER, N_DROP, N_CUTDROP, N_LOST, N_DUP, N_BAD, N_CUT = 13, N_HEAL };
enum { E_OTHER, E_VIOL, E_FAULT, E_SKIP, E_FINAL, E_HEALS, E_NCRASH, E_NRESTART, E_WSTART,
       E_WCRASH, E_RECOVERS, E_SERVES, E_RFAIL, E_FENCED };
/* A lane's state, and its colour; a cell shows the worst its column saw. */
enum { S_IDLE, S_UP, S_RECOV, S_CUT, S_FENCED, S_DOWN };
static const char *const s_fill[] = {"#f7f7f7", "#ffffff", "#fff2b3", "#fde0dd", "#f4a6a6",
                                     "#d0d0d0"};

/* Hosts: a lane's index, or one of these. */
#define H_NONE   (-1)           /* '-', the coordinator, anything else */
#define H_ALL    (-2)           /* '*' */
#define H_AZ(c)  (-100 - (c))   /* an AZ, by its letter */
#define AZ_OF(h) ((h) <= H_AZ('A') && (h) >= H_AZ('Z') ? H_AZ(0) - (h) : 0)
#define HOST(v, s) (!strcmp(s, "*") ? H_ALL : isupper((unsigned char)(s)[0]) && !(s)[1] \
                    ? H_AZ((s)[0]) : lane_of(v, s))

/* A trace line; text: an ev's fault name, or its whole text. */
struct rec { ull t, x, y, z; unsigned char type, sub; short a, b; char *text; };
struct lane { char name[16]; int writer; char az; };
struct span { ull t0, t1, dur; const char *name; int kind, open, c0, c1, row; };

struct vs {
  struct rec *r;                /* the trace; viol: its first VIOLATION, or -1 */
  size_t n, cap, nviol;
  long viol;
  struct lane lane[VS_L];
  int nlanes, npg;
  ull last, from, to, step;     /* the last time; the window, its column width */
  int ncols, vcol;
  unsigned char st[VS_L];       /* the replay's state now */
  ull val[VS_L][VS_PG];         /* writer: [0] VDL, [1] epoch; node: SCL per PG */
  short cut[VS_CUTS][2];
  int ncut, nspan;
  unsigned azcut;               /* bit c - 'A': AZ c is partitioned */
  struct span span[VS_SPANS];
  unsigned char worst[VS_L][VS_COLS], nmark[VS_L][VS_COLS];   /* per column */
  char mark[VS_L][VS_COLS][(VS_MARKS + 1) * 128];
  ull end[VS_L][VS_PG][VS_COLS], best0[VS_PG][VS_COLS];
  unsigned msgs[3][VS_COLS];    /* delivered; dropped or lost; duplicated or bad */
};

/* ---- reading the trace ---------------------------------------------------- */

/* The lane of a host (w1, A1; ":port" dropped), added if new; H_NONE if it
 * names no writer or node, or if there is no room for another. */
static int lane_of(struct vs *v, const char *name)
{
  size_t len = strcspn(name, ":");
  int writer = name[0] == 'w';
  if ((!writer && !isupper((unsigned char)name[0])) || len < 2 || len >= sizeof v->lane[0].name ||
      strspn(name + 1, "0123456789") != len - 1)
    return H_NONE;
  for (int i = 0; i < v->nlanes; i++)
    if (strlen(v->lane[i].name) == len && strncmp(v->lane[i].name, name, len) == 0)
      return i;
  if (v->nlanes == VS_L)
    return H_NONE;
  struct lane *l = &v->lane[v->nlanes];
  memcpy(l->name, name, len);
  l->writer = writer;
  l->az = writer ? 0 : name[0];
  return v->nlanes++;
}

#define IS(kind, ...) else if (sscanf(s, __VA_ARGS__) >= 0 && n > 0) r->sub = kind

/* What an ev line says, into r (a text it does not know stays E_OTHER);
 * NULL, or what is wrong with it. */
static const char *classify(struct vs *v, struct rec *r, const char *s)
{
  char name[32] = "";
  int w = -1, n = -1;
  if (strncmp(s, "VIOLATION", 9) == 0)
    r->sub = E_VIOL;
  else if (strcmp(s, "final heal") == 0)
    r->sub = E_FINAL;
  IS(E_FAULT, "fault %31s (target %*d/%*d) for %llu ms%n", name, &r->y, &n);
  IS(E_SKIP, "fault %31s skipped%n", name, &n);
  IS(E_HEALS, "fault %31s heals%n", name, &n);
  IS(E_NCRASH, "node %15s crashes%n", name, &n);
  IS(E_NRESTART, "node %15s restarts%n", name, &n);
  IS(E_WSTART, "writer %d starts%n", &w, &n);
  IS(E_WCRASH, "writer %d crashes%n", &w, &n);
  IS(E_RECOVERS, "writer %d: epoch %llu recovers %llu pgs%n", &w, &r->x, &r->y, &n);
  IS(E_SERVES, "writer %d: epoch %llu serves from vdl %llu (truncated to %llu)%n", &w, &r->x,
     &r->y, &r->z, &n);
  IS(E_RFAIL, "writer %d: recovery in epoch %llu failed:%n", &w, &r->x, &n);
  IS(E_FENCED, "writer %d (epoch %llu) fenced:%n", &w, &r->x, &n);
  r->text = strdup(r->sub == E_FAULT || r->sub == E_SKIP || r->sub == E_HEALS ? name : s);
  if (r->sub == E_NCRASH || r->sub == E_NRESTART) {
    r->a = (short)lane_of(v, name);
    return r->a < 0 || v->lane[r->a].writer ? "no such storage node (or too many hosts)" : NULL;
  }
  if (r->sub >= E_WSTART) {
    snprintf(name, sizeof name, "w%d", w + 1);
    return w < 0 || (r->a = (short)lane_of(v, name)) < 0 ? "no such writer (or too many hosts)" : NULL;
  }
  return NULL;
}

/* One line into v; NULL, or what is wrong with it. */
static const char *parse_line(struct vs *v, char *line, char *why, size_t wl)
{
  char t[24], kind[8], k[16], a[32], b[32], x[24], y[24];
  int n = -1, m = -1;
  line[strcspn(line, "\r\n")] = 0;
  if (line[strspn(line, " \t")] == 0)
    return NULL;                /* a blank line */
  if (sscanf(line, " %20[0-9] %7s %n", t, kind, &n) < 2 || n < 0)
    return "want T KIND ..., T the virtual time in ms";
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 4096;
    v->r = realloc(v->r, v->cap * sizeof *v->r);
  }
  struct rec *r = &v->r[v->n];
  const char *rest = line + n, *bad = NULL;
  memset(r, 0, sizeof *r);
  r->t = strtoull(t, NULL, 10);
  r->a = r->b = H_NONE;
  if (r->t < v->last) {
    snprintf(why, wl, "time %llu goes back (a line before is at %llu)", r->t, v->last);
    return why;
  }
  if (strcmp(kind, "ev") == 0) {
    r->type = R_EV;
    if (*rest == 0 || (bad = classify(v, r, rest)) != NULL) {
      free(r->text);
      return bad ? bad : "an ev line without text";
    }
    if (r->sub == E_VIOL && v->nviol++ == 0)
      v->viol = (long)v->n;
  } else if (strcmp(kind, "net") == 0) {
    r->type = R_NET;
    int ok = sscanf(rest, "%15s %31s %31s %11[-0-9] %11[0-9] %n", k, a, b, x, y, &m) == 5 && !rest[m];
    while (ok && r->sub < N_KINDS && strcmp(k, net_kinds[r->sub]) != 0)
      r->sub++;
    if (!ok || r->sub == N_KINDS)
      return "want T net KIND FROM TO BODY BYTES, KIND one of deliver drop cutdrop lost dup "
             "bad connect accept up close crash restart fatal cut heal";
    r->a = (short)HOST(v, a);
    r->b = (short)HOST(v, b);
  } else if (strcmp(kind, "vdl") == 0 || strcmp(kind, "scl") == 0) {
    int vdl = kind[0] == 'v';
    r->type = vdl ? R_VDL : R_SCL;
    if (sscanf(rest, "%15s %20[0-9] %20[0-9] %n", a, x, y, &m) != 3 || rest[m] ||
        (r->a = (short)lane_of(v, a)) < 0 || v->lane[r->a].writer != vdl ||
        (r->x = strtoull(x, NULL, 10)) >= (vdl ? ~0ULL : VS_PG)) {
      snprintf(why, wl, vdl ? "want T vdl WRITER EPOCH VDL, WRITER like w1 (%d hosts at most)"
               : "want T scl NODE PG SCL, NODE like A1 (%d hosts at most), PG below 8", VS_L);
      return why;
    }
    r->y = strtoull(y, NULL, 10);
    if (!vdl && (int)r->x >= v->npg)
      v->npg = (int)r->x + 1;
  } else {
    snprintf(why, wl, "'%s' is no record kind (net, ev, vdl or scl)", kind);
    return why;
  }
  v->last = r->t;
  v->n++;
  return NULL;
}

/* ---- the replay ----------------------------------------------------------- */

static int is_cut(const struct vs *v, int l)
{
  char az = v->lane[l].az;
  for (int i = 0; i < v->ncut; i++)
    if (v->cut[i][0] == l || v->cut[i][1] == l)
      return 1;
  return az >= 'A' && az <= 'Z' && (v->azcut >> (az - 'A') & 1);
}

static int state(const struct vs *v, int l)
{
  int s = v->st[l] == S_IDLE && !v->lane[l].writer ? S_UP : v->st[l];
  return (s == S_UP || s == S_RECOV) && is_cut(v, l) ? S_CUT : s;
}

static __attribute__((format(printf, 5, 6))) void mark(struct vs *v, int l, int c, const char *color, const char *fmt, ...)
{
  char text[80], line[128];
  if (c < 0 || l < 0 || v->nmark[l][c] > VS_MARKS)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  snprintf(line, sizeof line, "<font color=\"%s\">%s</font><br/>", color, text);
  char *m = v->mark[l][c];
  size_t k = strlen(m);
  if (strstr(m, line) == NULL)
    snprintf(m + k, sizeof v->mark[l][c] - k, "%s", v->nmark[l][c]++ == VS_MARKS ? "...<br/>" : line);
}

static void apply_net(struct vs *v, const struct rec *r, int c)
{
  int a = r->a, b = r->b;
  if (c >= 0) {
    v->msgs[0][c] += r->sub == N_DELIVER;
    v->msgs[1][c] += r->sub == N_DROP || r->sub == N_CUTDROP || r->sub == N_LOST;
    v->msgs[2][c] += r->sub == N_DUP || r->sub == N_BAD;
  }
  if ((r->sub == N_CUT || r->sub == N_HEAL) && AZ_OF(a)) {
    v->azcut = r->sub == N_CUT ? v->azcut | 1u << (AZ_OF(a) - 'A') : v->azcut & ~(1u << (AZ_OF(a) - 'A'));
    for (int l = 0; l < v->nlanes; l++)
      if (v->lane[l].az == AZ_OF(a))
        mark(v, l, c, r->sub == N_CUT ? C_RED : C_GREEN, r->sub == N_CUT ? "partitioned" : "partition heals");
  } else if (r->sub == N_CUT && v->ncut < VS_CUTS && (a >= 0 || b >= 0)) {
    v->cut[v->ncut][0] = (short)a;
    v->cut[v->ncut++][1] = (short)b;
    /* A node says by whom it is cut; a writer, that it is. */
    for (int k = 0, l = a, o = b; k < 2; k++, l = b, o = a)
      if (l >= 0 && v->lane[l].writer)
        mark(v, l, c, C_RED, "cut from nodes");
      else if (l >= 0)
        mark(v, l, c, C_RED, "cut from %s", o >= 0 ? v->lane[o].name : "?");
  } else if (r->sub == N_HEAL && a == H_ALL) {
    for (int l = 0; l < v->nlanes; l++)
      if (is_cut(v, l))
        mark(v, l, c, C_GREEN, "healed");
    v->ncut = 0;
    v->azcut = 0;
  } else if (r->sub == N_HEAL) {
    for (int i = 0; i < v->ncut; i++)
      if ((v->cut[i][0] == a && v->cut[i][1] == b) || (v->cut[i][0] == b && v->cut[i][1] == a)) {
        memmove(v->cut[i], v->cut[i + 1], (size_t)(--v->ncut - i) * sizeof v->cut[0]);
        for (int k = 0, l = a; k < 2; k++, l = b)
          if (l >= 0 && !is_cut(v, l))
            mark(v, l, c, C_GREEN, "healed");
        break;
      }
  }
}

/* One record into the state now; c: its column, -1 before the window. */
static void apply(struct vs *v, const struct rec *r, int c)
{
  int a = r->a;
  if (r->type == R_NET)
    apply_net(v, r, c);
  if (r->type == R_VDL) {
    v->val[a][0] = r->y;
    v->val[a][1] = r->x;
  }
  if (r->type == R_SCL)
    v->val[a][r->x] = r->y;
  switch (r->type == R_EV ? r->sub : E_OTHER) {
  case E_FAULT: case E_SKIP: case E_FINAL:
    if (v->nspan < VS_SPANS)
      v->span[v->nspan++] = (struct span){r->t, r->t + r->y < v->last ? r->t + r->y : v->last,
        r->y, r->sub == E_FINAL ? "final heal" : r->text, r->sub, r->sub == E_FAULT, 0, 0, 0};
    break;
  case E_HEALS:
    for (int i = 0; i < v->nspan; i++)
      if (v->span[i].open && strcmp(v->span[i].name, r->text) == 0) {
        v->span[i].t1 = r->t, v->span[i].open = 0;
        break;
      }
    break;
  case E_NCRASH: v->st[a] = S_DOWN; mark(v, a, c, "black", "crash"); break;
  case E_NRESTART: v->st[a] = S_UP; mark(v, a, c, C_GREEN, "restart"); break;
  case E_WSTART: v->st[a] = S_RECOV; mark(v, a, c, C_GREEN, "start"); break;
  case E_WCRASH: v->st[a] = S_DOWN; mark(v, a, c, "black", "crash"); break;
  case E_RECOVERS: v->st[a] = S_RECOV; mark(v, a, c, "#8c6d00", "e%llu recovers", r->x); break;
  case E_SERVES:
    v->st[a] = S_UP;
    v->val[a][1] = r->x;
    mark(v, a, c, "#08519c", "e%llu serves from %llu", r->x, r->y);
    if (r->z > r->y)
      mark(v, a, c, "#08519c", "truncates (%llu, %llu]", r->y, r->z);
    break;
  case E_RFAIL: mark(v, a, c, C_VIOL, "e%llu recovery FAILED", r->x); break;
  case E_FENCED: v->st[a] = S_FENCED; mark(v, a, c, C_VIOL, "FENCED (e%llu)", r->x); break;
  case E_VIOL: if (c >= 0 && r == &v->r[v->viol]) v->vcol = c; break;
  }
}

/* Column c ends (if c >= 0) and c + 1 begins (if there is one). */
static void next_col(struct vs *v, int c)
{
  for (int l = 0; l < v->nlanes; l++)
    for (int p = 0; p < VS_PG; p++) {
      if (c >= 0)
        v->end[l][p][c] = v->val[l][p];
      if (c + 1 < v->ncols && !v->lane[l].writer && v->val[l][p] > v->best0[p][c + 1])
        v->best0[p][c + 1] = v->val[l][p];
    }
  for (int l = 0; c + 1 < v->ncols && l < v->nlanes; l++)
    v->worst[l][c + 1] = (unsigned char)state(v, l);
}

static void replay(struct vs *v)
{
  int cur = -1;
  for (size_t i = 0; i < v->n && v->r[i].t <= v->to; i++) {
    const struct rec *r = &v->r[i];
    int c = r->t < v->from ? -1 : (int)((r->t - v->from) / v->step);
    for (; cur < c; cur++)
      next_col(v, cur);
    apply(v, r, c);
    for (int l = 0; c >= 0 && r->type != R_VDL && r->type != R_SCL && l < v->nlanes; l++)
      if (state(v, l) > v->worst[l][c])
        v->worst[l][c] = (unsigned char)state(v, l);
  }
  for (; cur < v->ncols; cur++)
    next_col(v, cur);
}

/* ---- the drawing ---------------------------------------------------------- */

static void html(FILE *f, const char *s)
{
  for (; *s; s++)
    if (*s == '&' || *s == '<' || *s == '>' || *s == '"')
      fputs(*s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : "&quot;", f);
    else if ((unsigned char)*s >= ' ')
      fputc(*s, f);
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

/* A body cell's opening tag; the violation's column is framed. */
static void td(const struct vs *v, FILE *f, int c, const char *fill)
{
  fprintf(f, "<td bgcolor=\"%s\"%s>", fill, c == v->vcol ? " border=\"2\" color=\"" C_VIOL "\"" : "");
}

/* The faults in rows, each a span of columns, packed first fit. */
static void draw_faults(struct vs *v, FILE *f)
{
  int rows = 0, last[VS_SPANS];
  for (int i = 0; i < v->nspan; i++) {
    struct span *s = &v->span[i];
    s->c1 = -1;
    if (s->t1 < v->from || s->t0 > v->to)
      continue;
    s->c0 = s->t0 < v->from ? 0 : (int)((s->t0 - v->from) / v->step);
    s->c1 = s->t1 > v->to ? v->ncols - 1 : (int)((s->t1 - v->from) / v->step);
    for (s->row = 0; s->row < rows && last[s->row] >= s->c0; s->row++)
      ;
    rows += s->row == rows;
    last[s->row] = s->c1;
  }
  fprintf(f, "<tr><td colspan=\"3\" rowspan=\"%d\" bgcolor=\"#eeeeee\"><b>faults</b></td>",
          rows += rows == 0);   /* an empty row if none */
  for (int row = 0, c = 0; row < rows; row++, c = 0) {
    for (int i = 0; i < v->nspan; i++) {
      const struct span *s = &v->span[i];
      if (s->c1 < 0 || s->row != row)
        continue;
      for (; c < s->c0; c++)
        fprintf(f, "<td></td>");
      fprintf(f, "<td colspan=\"%d\" bgcolor=\"%s\"%s><font point-size=\"9\">%s%s%s",
              s->c1 - s->c0 + 1, fault_fill(s), s->kind == E_SKIP ? " style=\"dashed\"" : "",
              s->t0 < v->from ? "... " : "", s->kind == E_SKIP ? "<i>" : "<b>", s->name);
      if (s->kind == E_FAULT)
        fprintf(f, "</b>%s<br/>%llu ms", s->t1 > v->to ? " ..." : "", s->dur);
      fprintf(f, "%s</font></td>", s->kind == E_SKIP ? " skipped</i>" : s->kind == E_FINAL ? "</b>" : "");
      c = s->c1 + 1;
    }
    for (; c < v->ncols; c++)
      fprintf(f, "<td></td>");
    fprintf(f, "</tr>\n%s", row + 1 < rows ? "<tr>" : "");
  }
}

/* A lane: its events row, then the VDL (writer) or each PG's SCL (node)
 * as step labels: written where they moved, greyed where they did not but
 * are worth reading (the violation's column, the last). */
static void draw_lane(const struct vs *v, FILE *f, int l, const char *group, int grows)
{
  const struct lane *ln = &v->lane[l];
  fprintf(f, "<tr>");
  if (group)
    fprintf(f, "<td rowspan=\"%d\" bgcolor=\"#eeeeee\"><b>%s</b></td>", grows, group);
  fprintf(f, "<td rowspan=\"%d\" bgcolor=\"#f5f7fa\"><b>%s</b></td><td align=\"left\"><font "
          "point-size=\"8\">events</font></td>", ln->writer ? 2 : 1 + v->npg, ln->name);
  for (int c = 0; c < v->ncols; c++) {
    td(v, f, c, s_fill[v->worst[l][c]]);
    fprintf(f, v->mark[l][c][0] ? "<font point-size=\"8\">%s</font></td>" : "%s</td>", v->mark[l][c]);
  }
  for (int p = 0; p < (ln->writer ? 1 : v->npg); p++) {
    fprintf(f, "</tr>\n<tr><td align=\"left\"><font point-size=\"8\">");
    if (ln->writer)
      fprintf(f, "VDL</font></td>");
    else
      fprintf(f, "pg %d SCL</font></td>", p);
    for (int c = 0; c < v->ncols; c++) {
      const ull *val = v->end[l][p], *ep = v->end[l][1];
      int w = v->worst[l][c], same = c > 0 && val[c] == val[c - 1];
      td(v, f, c, w == S_DOWN || ln->writer || val[c] >= v->best0[p][c] ? s_fill[w] : C_BEHIND);
      if (ln->writer && val[c] && ep[c] && (c == 0 || ep[c] != ep[c - 1] || !val[c - 1]))
        fprintf(f, "<font point-size=\"8\"><b>e%llu</b> %llu</font>", ep[c], val[c]);
      else if (val[c] && (!same || c == v->vcol || c == v->ncols - 1))
        fprintf(f, "<font point-size=\"8\"%s>%llu</font>", same ? " color=\"#909090\"" : "", val[c]);
      fprintf(f, "</td>");
    }
  }
  fprintf(f, "</tr>\n");
}

/* Lanes in drawing order: writers, then nodes by AZ and number. */
static int lane_cmp(const struct lane *a, const struct lane *b)
{
  return a->writer != b->writer ? b->writer - a->writer
         : a->az != b->az ? a->az - b->az : atoi(a->name + 1) - atoi(b->name + 1);
}

static void draw_legend(FILE *f)
{
  const char *const what[][2] = {{s_fill[S_UP], "up, serving"}, {s_fill[S_RECOV],
    "recovering"}, {s_fill[S_CUT], "cut off, partitioned"}, {s_fill[S_FENCED], "fenced"},
    {s_fill[S_DOWN], "down"}, {C_BEHIND, "SCL behind its PG"}, {C_FNODE, "fault: nodes"},
    {C_FNET, "fault: network"}, {C_FWR, "fault: writer"}, {C_FHEAL, "final heal"}};
  fprintf(f, "  legend [shape=plaintext fontsize=9 label=<<table border=\"0\" cellborder=\"1\" "
          "cellspacing=\"3\" cellpadding=\"3\"><tr><td border=\"0\"><b>legend</b></td>");
  for (size_t i = 0; i < sizeof what / sizeof what[0]; i++)
    fprintf(f, "<td bgcolor=\"%s\">%s</td>", what[i][0], what[i][1]);
  fprintf(f, "<td color=\"" C_VIOL "\" border=\"2\">violation</td></tr>\n<tr><td border=\"0\" "
          "colspan=\"12\">A cell is shaded by the worst state its host was in during the column. "
          "A number is the watermark at the end of its column, written where it moved (grey: "
          "unmoved, repeated to read it there); eN: the writer's epoch.</td></tr></table>>];\n");
}

static char *draw(struct vs *v, const char *path)
{
  char *buf = NULL, group[16];
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  replay(v);
  fprintf(f, "digraph simtrace {\n  graph [fontname=\"Helvetica\" fontsize=15 labelloc=t "
          "label=<<b>auralog sim</b>  ");
  html(f, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
  fprintf(f, "  ·  %llu to %llu ms of a %llu ms run  ·  one column = %llu ms%s>];\n"
          "  node [fontname=\"Helvetica\" fontsize=10];\n  timeline [shape=plaintext label=<"
          "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\" color=\"#d0d0d0\">\n"
          "<tr><td colspan=\"3\" align=\"right\"><b>ms</b></td>", v->from, v->to, v->last, v->step,
          v->viol >= 0 ? "  ·  <font color=\"" C_VIOL "\"><b>VIOLATION</b></font>" : "");
  for (int c = 0; c < v->ncols; c++)
    fprintf(f, "<td width=\"44\"%s><font point-size=\"9\"%s>%llu%s</font></td>",
            c == v->vcol ? " bgcolor=\"" C_VIOL "\"" : "", c == v->vcol ? " color=\"white\"" : "",
            v->from + (ull)c * v->step, c == v->vcol ? "<br/><b>VIOLATION</b>" : "");
  fprintf(f, "</tr>\n");
  draw_faults(v, f);
  int order[VS_L];
  for (int l = 0, j; l < v->nlanes; l++) {
    for (j = l; j > 0 && lane_cmp(&v->lane[order[j - 1]], &v->lane[l]) > 0; j--)
      order[j] = order[j - 1];
    order[j] = l;
  }
  for (int i = 0; i < v->nlanes; i++) {
    const struct lane *ln = &v->lane[order[i]];
    int first = i == 0 || v->lane[order[i - 1]].az != ln->az, grows = 0;
    for (int j = i; first && j < v->nlanes && v->lane[order[j]].az == ln->az; j++)
      grows += ln->writer ? 2 : 1 + v->npg;
    snprintf(group, sizeof group, ln->writer ? "writers" : "AZ %c", ln->az);
    draw_lane(v, f, order[i], first ? group : NULL, grows);
  }
  static const char *const net[] = {"delivered", "dropped, lost", "duplicated, bad"};
  for (int k = 0; k < 3; k++) {
    fprintf(f, k ? "<tr>" : "<tr><td colspan=\"2\" rowspan=\"3\" bgcolor=\"#eeeeee\"><b>messages</b></td>");
    fprintf(f, "<td align=\"left\"><font point-size=\"8\">%s</font></td>", net[k]);
    for (int c = 0; c < v->ncols; c++)
      if (v->msgs[k][c])
        fprintf(f, "<td><font point-size=\"8\" color=\"%s\">%u</font></td>", k ? C_VIOL : "black",
                v->msgs[k][c]);
      else
        fprintf(f, "<td></td>");
    fprintf(f, "</tr>\n");
  }
  if (v->viol >= 0) {
    const struct rec *r = &v->r[v->viol];
    fprintf(f, "<tr><td colspan=\"%d\" align=\"left\" bgcolor=\"#fee0d2\"><font color=\"" C_VIOL
            "\"><b>VIOLATION at %llu ms</b></font>: ", v->ncols + 3, r->t);
    html(f, r->text + 9 + strspn(r->text + 9, " "));
    if (v->nviol > 1)
      fprintf(f, "  <i>(and %zu more)</i>", v->nviol - 1);
    fprintf(f, "%s</td></tr>\n", v->vcol < 0 ? "  <i>(outside this window)</i>" : "");
  }
  fprintf(f, "</table>>];\n");
  draw_legend(f);
  fprintf(f, "  timeline -> legend [style=invis];\n}\n");
  fclose(f);
  return buf;
}

/* ---- the entry ------------------------------------------------------------ */

char *viz_sim_dot(const char *path, long long from, long long to, char *why, size_t wl)
{
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    snprintf(why, wl, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  struct vs *v = calloc(1, sizeof *v);
  char *line = NULL, err[300], *dot = NULL;
  const char *bad = NULL;
  size_t cap = 0, no = 0;
  v->viol = v->vcol = -1;
  while (bad == NULL && getline(&line, &cap, f) >= 0)
    if ((bad = parse_line(v, line, err, sizeof err)) != NULL)
      snprintf(why, wl, "%s line %zu: %s", path, no + 1, bad);
    else
      no++;
  if (bad == NULL && ferror(f))
    snprintf(why, wl, "cannot read %s: %s", path, (bad = strerror(errno)));
  free(line);
  fclose(f);
  if (from < 0 && to < 0 && v->viol >= 0) {
    to = (long long)v->r[v->viol].t;
    from = to > VS_BEFORE ? to - VS_BEFORE : 0;
  }
  v->to = to >= 0 ? (ull)to : v->last;
  v->from = from >= 0 ? (ull)from : 0;
  if (bad == NULL && v->from > v->to)
    snprintf(why, wl, "--from %llu is after %s (%llu ms)", v->from,
             to >= 0 ? "--to" : "the run's end", v->to), bad = why;
  if (bad == NULL) {
    /* A round column width (1, 2, 5, 10, 20, 50... ms: 2 * 10^k is 2
     * modulo 9); the window widened to whole columns. */
    for (v->step = 1; v->to / v->step - v->from / v->step >= VS_COLS;)
      v->step = v->step % 9 == 2 ? v->step / 2 * 5 : v->step * 2;
    v->from -= v->from % v->step;
    v->ncols = (int)((v->to - v->from) / v->step + 1);
    dot = draw(v, path);
  }
  for (size_t i = 0; i < v->n; i++)
    free(v->r[i].text);
  free(v->r);
  free(v);
  return dot;
}
