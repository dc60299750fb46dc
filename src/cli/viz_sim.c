/*
 * viz_sim.c: `auralog viz --sim-trace FILE`, a simulator run as a timeline:
 * reading the trace and replaying it into columns (the drawing:
 * viz_simdraw.c; what the two share: viz_sim.h).
 *
 * `auralog sim --trace FILE` writes one line per event, virtual ms first:
 * "T net KIND FROM TO BODY BYTES", "T ev TEXT" (faults, heals, crashes,
 * recoveries, VIOLATION), "T vdl WRITER EPOCH VDL", "T scl NODE PG SCL
 * [MAX]" (MAX: the highest LSN the segment holds, when above its SCL: a
 * hole below it) and "T read WHO PAGE RP LSN ok|wrong" (a page read at
 * read point RP by a writer w1.. or the replica rep, checked against the
 * model).
 *
 * The whole trace is read and checked first (a bad line is an error naming
 * it), then replayed: events before the window only set the state it
 * starts from. Time runs in at most VS_COLS columns of a round width (1, 2,
 * 5, 10, 20 ... ms); each column keeps its hosts' worst state, marks,
 * watermarks at its end, reads and messages (viz_sim.h).
 *
 * The violation's words say where the run left the model, and the replay
 * finds the first point of it (struct diverge): "node X pg P: ..." is the
 * segment's last move before the violation (where its SCL stopped), a
 * wrong read is the read line the simulator marked wrong, "lost
 * acknowledged commit C" is where a writer's VDL first reached C (the
 * acknowledgement the recovery later lost). The default window is the 3 s
 * before the violation, widened to start before that point.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/viz.h"
#include "cli/viz_sim.h"

#define VS_BEFORE 3000    /* default window: this many ms before a violation */
#define VS_LEAD   300     /* ... and at least this many before the divergence */

static const char *const net_kinds[] = {"deliver", "drop", "cutdrop", "lost", "dup", "bad",
  "connect", "accept", "up", "close", "crash", "restart", "fatal", "cut", "heal"};
#define N_KINDS (sizeof net_kinds / sizeof net_kinds[0])
enum { N_DELIVER, N_DROP, N_CUTDROP, N_LOST, N_DUP, N_BAD, N_CUT = 13, N_HEAL };
const char *const s_fill[] = {"#f7f7f7", "#ffffff", "#fff2b3", "#fde0dd", "#f4a6a6",
                                     "#d0d0d0"};

/* Hosts: a lane's index, or one of these. */
#define H_NONE   (-1)           /* '-', the coordinator, anything else */
#define H_ALL    (-2)           /* '*' */
#define H_AZ(c)  (-100 - (c))   /* an AZ, by its letter */
#define AZ_OF(h) ((h) <= H_AZ('A') && (h) >= H_AZ('Z') ? H_AZ(0) - (h) : 0)
#define HOST(v, s) (!strcmp(s, "*") ? H_ALL : isupper((unsigned char)(s)[0]) && !(s)[1] \
                    ? H_AZ((s)[0]) : lane_of(v, s))

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
  x[0] = y[0] = 0;
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
  } else if (strcmp(kind, "read") == 0) {
    r->type = R_READ;
    char z[24], ok[8];
    if (sscanf(rest, "%7s %11[0-9] %20[0-9] %20[0-9] %7s %n", a, x, y, z, ok, &m) != 5 ||
        rest[m] || (strcmp(ok, "ok") && strcmp(ok, "wrong")) || strlen(a) > 7)
      return "want T read WHO PAGE RP LSN ok|wrong, WHO like w1 or rep";
    for (r->a = 0; r->a < v->nrd && strcmp(v->reader[r->a], a); r->a++)
      ;
    if (r->a == VS_RD) {
      snprintf(why, wl, "more than %d readers", VS_RD);
      return why;
    }
    if (r->a == v->nrd)
      snprintf(v->reader[v->nrd++], sizeof v->reader[0], "%s", a);
    r->x = strtoull(x, NULL, 10);
    r->y = strtoull(y, NULL, 10);
    r->z = strtoull(z, NULL, 10);
    r->sub = ok[0] == 'w';
  } else if (strcmp(kind, "vdl") == 0 || strcmp(kind, "scl") == 0) {
    int vdl = kind[0] == 'v', k;
    char z[24] = "";
    r->type = vdl ? R_VDL : R_SCL;
    if (((k = sscanf(rest, "%15s %20[0-9] %20[0-9] %n%20[0-9] %n", a, x, y, &m, z, &m)) != 3 &&
         (vdl || k != 4)) || rest[m] ||
        (r->a = (short)lane_of(v, a)) < 0 || v->lane[r->a].writer != vdl ||
        (r->x = strtoull(x, NULL, 10)) >= (vdl ? ~0ULL : VS_PG)) {
      snprintf(why, wl, vdl ? "want T vdl WRITER EPOCH VDL, WRITER like w1 (%d hosts at most)"
               : "want T scl NODE PG SCL [MAX], NODE like A1 (%d hosts at most), PG below 8", VS_L);
      return why;
    }
    r->y = strtoull(y, NULL, 10);
    r->z = z[0] ? strtoull(z, NULL, 10) : r->y;
    if (r->z < r->y) {
      snprintf(why, wl, "the highest LSN held, %llu, is below the SCL %llu", r->z, r->y);
      return why;
    }
    if (!vdl && (int)r->x >= v->npg)
      v->npg = (int)r->x + 1;
  } else {
    snprintf(why, wl, "'%s' is no record kind (net, ev, vdl, scl or read)", kind);
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
  if (r->type == R_SCL) {
    v->val[a][r->x] = r->y;
    v->mx[a][r->x] = r->z;
    if (!v->hosted[a][r->x])
      v->hosted[a][r->x] = (c >= 0 ? c : 0) + 1;
  }
  if (r->type == R_READ && c >= 0) {
    if (v->nreads[a][c]++ == 0 || r->y < v->rplo[a][c])
      v->rplo[a][c] = r->y;
    v->rphi[a][c] = r->y > v->rphi[a][c] ? r->y : v->rphi[a][c];
    if (r->sub && !v->rbad[a][c])
      v->rbad[a][c] = r - v->r + 1;
  }
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
      if (c >= 0) {
        v->end[l][p][c] = v->val[l][p];
        v->endmx[l][p][c] = v->mx[l][p];
      }
      if (c + 1 < v->ncols && !v->lane[l].writer && v->val[l][p] > v->best0[p][c + 1])
        v->best0[p][c + 1] = v->val[l][p];
    }
  for (int l = 0; c + 1 < v->ncols && l < v->nlanes; l++)
    v->worst[l][c + 1] = (unsigned char)state(v, l);
}

void vs_replay(struct vs *v)
{
  int cur = -1;
  for (size_t i = 0; i < v->n && v->r[i].t <= v->to; i++) {
    const struct rec *r = &v->r[i];
    int c = r->t < v->from ? -1 : (int)((r->t - v->from) / v->step);
    for (; cur < c; cur++)
      next_col(v, cur);
    apply(v, r, c);
    if (c >= 0 && (long)i == v->d.rec)
      v->d.col = c;
    for (int l = 0; c >= 0 && r->type != R_VDL && r->type != R_SCL && l < v->nlanes; l++)
      if (state(v, l) > v->worst[l][c])
        v->worst[l][c] = (unsigned char)state(v, l);
  }
  for (; cur < v->ncols; cur++)
    next_col(v, cur);
}

/* ---- where the run left the model ----------------------------------------- */

/* The last line before the violation of this type (and lane, PG), or
 * the first at or after from that passes lsn (R_VDL) or is wrong (R_READ). */
static long find_rec(const struct vs *v, int type, int lane, ull pg, ull lsn, int last)
{
  long found = -1;
  for (long i = 0; i < v->viol; i++) {
    const struct rec *r = &v->r[i];
    if (r->type != type)
      continue;
    if ((type == R_SCL && r->a == lane && r->x == pg) || (type == R_VDL && r->y >= lsn) ||
        (type == R_READ && r->sub))
      found = i;
    if (found >= 0 && !last)
      break;
  }
  return found;
}

/* From the first violation's words, the point where its segment, read or
 * acknowledged commit first left the model (check.c in the simulator says
 * which it checked): v->d, its col set by the replay. */
static void find_divergence(struct vs *v)
{
  memset(&v->d, 0, sizeof v->d);
  v->d.rec = v->d.col = -1;
  if (v->viol < 0)
    return;
  const char *t = v->r[v->viol].text + 9;    /* past "VIOLATION" */
  const char *lost = strstr(t, " commit ");
  char node[16];
  unsigned pg;
  int n = -1;
  if (sscanf(t, " node %15s pg %u:%n", node, &pg, &n) == 2 && n > 0) {
    for (int l = 0; l < v->nlanes; l++)
      if (strcmp(v->lane[l].name, node) == 0 && pg < VS_PG) {
        v->d.kind = D_SEG, v->d.lane = l, v->d.pg = (int)pg;
        /* An SCL that never moved has no line in the trace (a seg_add
         * that never advances it, say): the segment is still the
         * divergence, framed where the checker found it. */
        if ((v->d.rec = find_rec(v, R_SCL, l, pg, 0, 1)) < 0)
          v->d.rec = v->viol;
        if ((int)pg >= v->npg)
          v->npg = (int)pg + 1;
      }
  } else if (strstr(t, " read page ")) {
    if ((v->d.rec = find_rec(v, R_READ, 0, 0, 0, 0)) >= 0)
      v->d.kind = D_READ, v->d.lane = v->r[v->d.rec].a;
  } else if (lost && (strstr(t, "acknowledged commit ") || strstr(t, "kept commit "))) {
    ull c = strtoull(lost + 8, NULL, 10);
    if ((v->d.rec = find_rec(v, R_VDL, 0, 0, c, 0)) >= 0)
      v->d.kind = D_ACK, v->d.lane = v->r[v->d.rec].a, v->d.lsn = c;
  }
  /* A segment: where its SCL took the value the checker found wrong (it
   * stopped there; later lines may only move the highest LSN held). */
  for (long i = v->d.rec - 1; v->d.kind == D_SEG && i >= 0; i--) {
    const struct rec *r = &v->r[i];
    if (r->type == R_SCL && r->a == v->d.lane && (int)r->x == v->d.pg) {
      if (r->y != v->r[v->d.rec].y)
        break;
      v->d.rec = i;
    }
  }
  if (v->d.kind == D_NONE)
    v->d.rec = -1;
  else
    v->d.t = v->r[v->d.rec].t;
  if (v->d.kind == D_SEG || v->d.kind == D_READ)
    v->d.lsn = v->d.rec == v->viol ? 0 : v->r[v->d.rec].y;
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
  v->d.rec = v->d.col = -1;
  while (bad == NULL && getline(&line, &cap, f) >= 0)
    if ((bad = parse_line(v, line, err, sizeof err)) != NULL)
      snprintf(why, wl, "%s line %zu: %s", path, no + 1, bad);
    else
      no++;
  if (bad == NULL && ferror(f))
    snprintf(why, wl, "cannot read %s: %s", path, (bad = strerror(errno)));
  free(line);
  fclose(f);
  if (bad == NULL)
    find_divergence(v);
  if (from < 0 && to < 0 && v->viol >= 0) {
    to = (long long)v->r[v->viol].t;
    from = to > VS_BEFORE ? to - VS_BEFORE : 0;
    if (v->d.kind != D_NONE && (long long)v->d.t < from + VS_LEAD)
      from = (long long)v->d.t > VS_LEAD ? (long long)v->d.t - VS_LEAD : 0;
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
    vs_replay(v);
    dot = vs_draw(v, path);
  }
  for (size_t i = 0; i < v->n; i++)
    free(v->r[i].text);
  free(v->r);
  free(v);
  return dot;
}
