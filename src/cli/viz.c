/*
 * viz.c: `auralog viz`, the running cluster as one picture (graphviz).
 *
 * The drawing is the paper's Figure 3 with the state filled in: the engine
 * on top with its VDL and VCL (§4.1); below it one box per availability
 * zone (§2.1) holding its storage nodes, each listing the segments it
 * hosts with their SCL (§4.2.1); below those, per protection group (§2.2),
 * its log (viz_log.c): the engine's newest records of that PG by LSN,
 * CPLs framed (the last record of each MTR), coloured durable (<= VDL),
 * complete but not yet durable (<= VCL) or pending (at fewer than Vw
 * segments yet), with the VDL and VCL drawn as flags between them and the
 * truncated ranges of past recoveries with their epochs (§4.3); under
 * them a row per segment: which records it holds, its holes shaded, its
 * SCL marked. Down, partitioned, slow, stale-serving and gossip-off nodes
 * are drawn as such; a legend says how.
 *
 * Everything comes from one Status reply of the coordinator (status.c's
 * status_fetch): the volume, the nodes, the SCLs from heartbeats, and the
 * engine's last report, whose tail field holds the recent records
 * (vfs/volume.c keeps them). viz_dot turns that into DOT text and does no
 * I/O, so tests can check it; viz_main fetches, and prints the DOT or
 * renders it with libgvc as SVG or PNG.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "net/rpc.h"
#include "cli/status.h"
#include "cli/viz.h"
#include "cli/viz_int.h"

/* How much one picture holds before it summarises: past these, a drawing
 * stops being readable at a glance. */
#define VIZ_STRIPS      4       /* PG logs drawn (seven rows each) */
#define VIZ_NODE_SEGS   8       /* segment rows in one node's box */
#define VIZ_TRUNCS      5       /* truncations listed beside the engine */

/* ---- a growing string ----------------------------------------------------- */

static void sb_grow(struct sb *b, size_t more)
{
  if (b->n + more + 1 <= b->cap)
    return;
  while (b->n + more + 1 > b->cap)
    b->cap = b->cap ? 2 * b->cap : 4096;
  b->s = realloc(b->s, b->cap);
}

void sbf(struct sb *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k <= 0)
    return;
  sb_grow(b, (size_t)k);
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

/* Text from the wire inside an HTML-like label: names are checked by
 * wire.c, but an address or a future field may hold anything. */
void sb_html(struct sb *b, const char *s)
{
  for (; s && *s; s++) {
    switch (*s) {
    case '&': sbf(b, "&amp;"); break;
    case '<': sbf(b, "&lt;"); break;
    case '>': sbf(b, "&gt;"); break;
    case '"': sbf(b, "&quot;"); break;
    default:
      if ((unsigned char)*s >= ' ')
        sbf(b, "%c", *s);
    }
  }
}

/* ---- what the status says ------------------------------------------------- */

/* The SCL node reported for pg; 0 with *known = 0 if it has not yet. */
uint64_t viz_scl_of(const Auralog__Status *st, const char *node, uint32_t pg, int *known)
{
  for (size_t i = 0; i < st->n_segs && i < st->n_seg_nodes; i++)
    if (st->segs[i]->pg == pg && st->seg_nodes[i] && strcmp(st->seg_nodes[i], node) == 0) {
      *known = 1;
      return st->segs[i]->scl;
    }
  *known = 0;
  return 0;
}

/* What node's segment of pg reported (NULL if nothing yet). */
const Auralog__SegStat *viz_seg_of(const Auralog__Status *st, const char *node, uint32_t pg)
{
  for (size_t i = 0; i < st->n_segs && i < st->n_seg_nodes; i++)
    if (st->segs[i]->pg == pg && st->seg_nodes[i] && strcmp(st->seg_nodes[i], node) == 0)
      return st->segs[i];
  return NULL;
}

const Auralog__NodeInfo *viz_node(const Auralog__Status *st, const char *id)
{
  for (size_t i = 0; i < st->n_nodes; i++)
    if (st->nodes[i]->id && strcmp(st->nodes[i]->id, id) == 0)
      return st->nodes[i];
  return NULL;
}

/* The best SCL any segment of pg reports: a segment below it is behind
 * its peers (it missed records and catches up by gossip, §3.3). */
static uint64_t best_scl(const Auralog__Status *st, const Auralog__Pg *pg)
{
  uint64_t best = 0;
  for (size_t s = 0; s < pg->n_segments && s < NCOPIES; s++) {
    int known;
    uint64_t scl = viz_scl_of(st, pg->segments[s]->node, pg->pg, &known);
    if (scl > best)
      best = scl;
  }
  return best;
}

static int engine_up(const Auralog__Status *st)
{
  return st->engine && st->engine_age_ms <= NODE_DOWN_MS;
}

static int by_az_then_id(const void *a, const void *b)
{
  const Auralog__NodeInfo *x = *(Auralog__NodeInfo *const *)a;
  const Auralog__NodeInfo *y = *(Auralog__NodeInfo *const *)b;
  int c = strcmp(x->az, y->az);
  return c ? c : strcmp(x->id, y->id);
}

/* ---- the pieces of the drawing -------------------------------------------- */

static void draw_engine(struct sb *b, const Auralog__Status *st, const Auralog__Volume *v)
{
  const Auralog__EngineStat *e = st->engine;
  if (e == NULL) {
    sbf(b, "  engine [ordering=out style=\"filled,dashed\" fillcolor=\"" C_DOWN "\" color=\"" C_DOWN_LINE
        "\" fontcolor=\"#707070\" label=<<b>engine</b><br/>none has reported: no VDL yet>];\n");
    return;
  }
  int up = engine_up(st);
  sbf(b, "  engine [ordering=out %s label=<<table border=\"0\" cellspacing=\"2\" cellpadding=\"3\">\n",
      up ? "style=\"filled,bold\" fillcolor=\"#f0f0ff\""
         : "style=\"filled,dashed\" fillcolor=\"" C_DOWN "\" color=\"" C_DOWN_LINE "\"");
  sbf(b, "    <tr><td colspan=\"3\"><b>engine</b>&#160;");
  sb_html(b, e->addr);
  sbf(b, "  (%s, epoch %llu)</td></tr>\n", up ? "up" : "<b>DOWN</b>: last report", (ull)e->epoch);
  sbf(b, "    <tr><td bgcolor=\"" C_VDL "\"><font color=\"white\"><b>VDL %llu</b></font></td>"
      "<td bgcolor=\"" C_VCL "\"><font color=\"white\"><b>VCL %llu</b></font></td>"
      "<td>next LSN %llu</td></tr>\n", (ull)e->vdl, (ull)e->vcl, (ull)e->next_lsn);
  sbf(b, "    <tr><td colspan=\"3\"><font point-size=\"9\">%llu commits, %llu records "
      "pending, LAL window %llu of %llu used%s</font></td></tr>\n", (ull)e->commits,
      (ull)e->pending, (ull)status_lal_used(e),
      (ull)e->lal, e->epoch != v->epoch ? ", an older epoch than the volume's" : "");
  /* The oldest records short of a write quorum, and who acknowledged them:
   * the segments a stalled commit waits for are the others (§4.1). */
  for (size_t i = 0; i < e->n_pending_recs && i < VIZ_PENDING; i++) {
    const Auralog__PendingRec *r = e->pending_recs[i];
    sbf(b, "    <tr><td colspan=\"3\" align=\"left\"><font point-size=\"9\">lsn %llu (pg %u) "
        "acked by", (ull)r->lsn, r->pg);
    int k = 0;
    for (size_t p = 0; p < v->n_pgs; p++)
      for (size_t sg = 0; v->pgs[p]->pg == r->pg && sg < v->pgs[p]->n_segments; sg++)
        if (r->acks & (1u << viz_slot(v->pgs[p], sg))) {
          sbf(b, " ");
          sb_html(b, v->pgs[p]->segments[sg]->node);
          k++;
        }
    sbf(b, "%s: %d of %d</font></td></tr>\n", k ? "" : " none", k, VW);
  }
  for (size_t i = 0; i < st->n_fenced; i++) {
    sbf(b, "    <tr><td colspan=\"3\" align=\"left\" bgcolor=\"" C_DOWN "\"><font "
        "point-size=\"9\">fenced engine ");
    sb_html(b, st->fenced[i]->addr);
    sbf(b, " (epoch %llu) still runs; storage refuses its writes</font></td></tr>\n",
        (ull)st->fenced[i]->epoch);
  }
  /* Read replicas (§4.2.4): fed the writer's redo, adding no storage
   * writes; each one's applied VDL and lag, and the PGMRPL. */
  for (size_t i = 0; i < e->n_replicas; i++) {
    const Auralog__ReplicaStat *r = e->replicas[i];
    sbf(b, "    <tr><td colspan=\"3\" align=\"left\"><font point-size=\"9\">replica ");
    sb_html(b, r->addr);
    sbf(b, ": applied VDL %llu, lag %llu LSN / %llu ms, min read point %llu</font></td></tr>\n",
        (ull)r->applied, (ull)r->lag_lsn, (ull)r->lag_ms, (ull)r->min_read_point);
    if (r->readers && r->holder[0]) {
      /* Its oldest read transaction holds that read point (rvol.h). */
      sbf(b, "    <tr><td colspan=\"3\" align=\"left\"><font point-size=\"9\">  held by "
          "client ");
      sb_html(b, r->holder);
      sbf(b, " for %llu ms (--max-read-age %u, %s)</font></td></tr>\n", (ull)r->held_ms,
          r->max_read_age_ms, r->read_age_action);
    }
  }
  if (e->n_replicas)
    sbf(b, "    <tr><td colspan=\"3\" align=\"left\"><font point-size=\"9\">PGMRPL %llu: "
        "storage keeps every version a read at or above it needs</font></td></tr>\n", (ull)e->pgmrpl);
  sbf(b, "  </table>>];\n");
}

static void draw_truncs(struct sb *b, const Auralog__Volume *v)
{
  if (v->n_truncs == 0)
    return;
  sbf(b, "  truncs [shape=plaintext label=<<table border=\"0\" cellborder=\"1\" "
      "cellspacing=\"0\" cellpadding=\"3\">\n"
      "    <tr><td bgcolor=\"" C_TRUNC "\"><b>truncated by recovery</b></td></tr>\n");
  size_t shown = 0;
  for (size_t i = v->n_truncs; i-- > 0 && shown < VIZ_TRUNCS; shown++) {
    const Auralog__TruncRange *t = v->truncs[i];
    sbf(b, "    <tr><td align=\"left\">(%llu, %llu]  epoch %llu</td></tr>\n",
        (ull)t->from, (ull)t->to, (ull)t->epoch);
  }
  if (v->n_truncs > shown)
    sbf(b, "    <tr><td align=\"left\"><i>and %zu older</i></td></tr>\n", v->n_truncs - shown);
  sbf(b, "  </table>>];\n  { rank=same; engine; truncs; }\n  engine -> truncs [style=invis];\n");
}

/* One storage node: id, address, state, then a row per hosted segment. */
static void draw_node(struct sb *b, const Auralog__Status *st, const Auralog__Volume *v,
                      const Auralog__NodeInfo *n, size_t idx)
{
  const char *style;
  /* Out of service (member.h): draining, its segments move to spares in
   * its AZ; retired, it hosts none and is given none. */
  int draining = n->state && strcmp(n->state, "draining") == 0;
  int retired = n->state && strcmp(n->state, "retired") == 0;
  if (!n->up)
    style = "style=\"filled,dashed\" fillcolor=\"" C_DOWN "\" color=\"" C_DOWN_LINE
            "\" fontcolor=\"#707070\"";
  else if (n->partitioned)
    style = "style=\"filled,dashed\" penwidth=2.5 fillcolor=\"" C_PART "\" color=\""
            C_PART_LINE "\"";
  else if (n->slow_ms)
    style = "style=\"filled\" penwidth=2.5 fillcolor=\"" C_SLOW "\" color=\"" C_SLOW_LINE "\"";
  else if (draining)
    style = "style=\"filled,dashed\" penwidth=2.5 fillcolor=\"" C_DRAIN "\" color=\"" C_DRAIN_LINE "\"";
  else if (retired)
    style = "style=\"filled,dotted\" penwidth=2 fillcolor=\"" C_RETIRED "\" color=\"" C_DOWN_LINE "\"";
  else
    style = "style=\"filled\" fillcolor=\"white\"";
  sbf(b, "    n%zu [%s label=<<table border=\"0\" cellspacing=\"0\" cellpadding=\"2\">\n"
      "      <tr><td colspan=\"2\"><b>", idx, style);
  sb_html(b, n->id);
  sbf(b, "</b> <font point-size=\"9\">");
  sb_html(b, n->addr);
  sbf(b, "</font></td></tr>\n      <tr><td colspan=\"2\">");
  if (!n->up)
    sbf(b, "<b>DOWN</b> (last SCLs)");
  else if (n->partitioned)
    sbf(b, "<font color=\"" C_PART_LINE "\"><b>PARTITIONED</b></font>");
  else
    sbf(b, "up");
  /* The faults a node plays besides (they leave it up and answering):
   * beside "up", or a line each under PARTITIONED, so a box stays narrow. */
  const char *sep = n->partitioned ? "<br/>" : "  ";
  if (n->up && n->slow_ms)
    sbf(b, "%s<font color=\"" C_SLOW_LINE "\"><b>SLOW +%u ms</b></font>", sep, n->slow_ms);
  if (n->up && n->stale)
    sbf(b, "%s<font color=\"" C_FLAG_LINE "\"><b>STALE PAGES</b></font>", sep);
  if (n->up && n->no_gossip)
    sbf(b, "%s<font color=\"" C_FLAG_LINE "\"><b>GOSSIP OFF</b></font>", sep);
  if (draining)
    sbf(b, "<br/><font color=\"" C_DRAIN_LINE "\"><b>DRAINING</b></font>");
  else if (retired)
    sbf(b, "<br/><font color=\"" C_DOWN_LINE "\"><b>RETIRED</b></font>");
  sbf(b, "</td></tr>\n");
  size_t rows = 0, more = 0;
  for (size_t p = 0; v && p < v->n_pgs; p++) {
    const Auralog__Pg *pg = v->pgs[p];
    for (size_t s = 0; s < pg->n_segments; s++) {
      if (strcmp(pg->segments[s]->node, n->id) != 0)
        continue;
      if (rows == VIZ_NODE_SEGS) {
        more++;
        continue;
      }
      int known;
      uint64_t scl = viz_scl_of(st, n->id, pg->pg, &known);
      /* An incoming next segment (member.h) fills towards its target; a
       * current one whose position moves is leaving this node. */
      if (s >= NCOPIES) {
        sbf(b, "      <tr><td align=\"left\" bgcolor=\"" C_NEXT "\">pg %u <font color=\"" C_NEXT_LINE
            "\"><b>next</b></font></td><td align=\"right\" bgcolor=\"" C_NEXT "\">SCL <b>%s%llu"
            "</b>/%llu</td></tr>\n", pg->pg, known ? "" : "?", (ull)scl, (ull)viz_target(st, pg, s));
        rows++;
        continue;
      }
      int behind = known && scl < best_scl(st, pg);
      int leaving = viz_next_of(pg, (uint32_t)s) >= 0;
      sbf(b, "      <tr><td align=\"left\"%s>pg %u%s</td>", behind ? " bgcolor=\"" C_BEHIND "\"" : "",
          pg->pg, leaving ? " <font color=\"" C_NEXT_LINE "\">leaving</font>" : "");
      const Auralog__SegStat *ss = viz_seg_of(st, n->id, pg->pg);
      if (known) {
        /* Above the SCL it may hold later records (a hole below them, which
         * gossip fills, §3.3); an epoch older than the volume's: it has not
         * heard from the newest writer yet (§4.3). */
        sbf(b, "<td align=\"right\"%s>SCL <b>%llu</b>", behind ? " bgcolor=\"" C_BEHIND "\"" : "",
            (ull)scl);
        if (ss && ss->max_lsn > scl)
          sbf(b, "<br/>(hole, holds to %llu)", (ull)ss->max_lsn);
        if (ss && ss->epoch && ss->epoch < v->epoch)
          sbf(b, " epoch %llu", (ull)ss->epoch);
        sbf(b, "</td></tr>\n");
      } else
        sbf(b, "<td align=\"right\">SCL ?</td></tr>\n");
      rows++;
    }
  }
  if (more)
    sbf(b, "      <tr><td colspan=\"2\"><i>and %zu more segments</i></td></tr>\n", more);
  if (rows == 0 && more == 0)
    sbf(b, "      <tr><td colspan=\"2\"><i>no segment of this volume</i></td></tr>\n");
  sbf(b, "    </table>>];\n");
}

static void draw_legend(struct sb *b)
{
  sbf(b,
    "  legend [shape=plaintext fontsize=9 label=<<table border=\"0\" cellborder=\"1\" "
    "cellspacing=\"3\" cellpadding=\"3\">\n"
    "    <tr><td border=\"0\" colspan=\"4\" align=\"left\"><b>legend</b></td></tr>\n"
    "    <tr><td>node</td><td align=\"left\" border=\"0\">up</td>"
    "<td bgcolor=\"" C_DURABLE "\">17</td><td align=\"left\" border=\"0\">durable: LSN &lt;= VDL</td></tr>\n"
    "    <tr><td bgcolor=\"" C_DOWN "\" color=\"" C_DOWN_LINE "\" style=\"dashed\">node</td>"
    "<td align=\"left\" border=\"0\">down</td>"
    "<td bgcolor=\"" C_COMPLETE "\">18</td><td align=\"left\" border=\"0\">complete: at write quorum, LSN &lt;= VCL</td></tr>\n"
    "    <tr><td bgcolor=\"" C_PART "\" color=\"" C_PART_LINE "\" style=\"dashed\" border=\"2\">node</td>"
    "<td align=\"left\" border=\"0\">partitioned</td>"
    "<td bgcolor=\"" C_PENDING "\" style=\"dashed\">19</td><td align=\"left\" border=\"0\">pending: above the VCL</td></tr>\n"
    "    <tr><td bgcolor=\"" C_SLOW "\" color=\"" C_SLOW_LINE "\" border=\"2\">node</td>"
    "<td align=\"left\" border=\"0\">slow</td>"
    "<td border=\"3\"><b>20</b></td><td align=\"left\" border=\"0\">CPL: last record of its MTR</td></tr>\n"
    "    <tr><td bgcolor=\"" C_BEHIND "\">SCL</td><td align=\"left\" border=\"0\">behind PG peers</td>"
    "<td bgcolor=\"" C_TRUNC "\" style=\"dashed\">(a, b]</td><td align=\"left\" border=\"0\">truncated by a recovery</td></tr>\n"
    "    <tr><td bgcolor=\"" C_HELD "\">held</td><td align=\"left\" border=\"0\">a segment holds it</td>"
    "<td bgcolor=\"" C_HOLE "\"><font color=\"white\"><b>hole</b></font></td><td align=\"left\" "
    "border=\"0\">missing, a later one held</td></tr>\n"
    "    <tr><td bgcolor=\"" C_MISSING "\" style=\"dashed\">missing</td><td align=\"left\" "
    "border=\"0\">missing, and all after</td>"
    "<td bgcolor=\"" C_HELD "\"><b>SCL</b></td><td align=\"left\" border=\"0\">the segment's SCL</td></tr>\n"
    "    <tr><td bgcolor=\"" C_DRAIN "\" color=\"" C_DRAIN_LINE "\" style=\"dashed\" border=\"2\">node</td>"
    "<td align=\"left\" border=\"0\">draining: its segments move off</td>"
    "<td bgcolor=\"" C_NEXT "\" color=\"" C_NEXT_LINE "\" style=\"dashed\"><font color=\"" C_NEXT_LINE
    "\"><b>→A3</b> next</font></td><td align=\"left\" border=\"0\">incoming next segment of a moving "
    "position</td></tr>\n"
    "    <tr><td bgcolor=\"" C_RETIRED "\" color=\"" C_DOWN_LINE "\" style=\"dotted\">node</td>"
    "<td align=\"left\" border=\"0\">retired</td>"
    "<td bgcolor=\"" C_NEXT_MISS "\" color=\"" C_NEXT_LINE "\" style=\"dashed\">to fill</td>"
    "<td align=\"left\" border=\"0\">a next segment lacks it yet</td></tr>\n"
    "    <tr><td border=\"0\" colspan=\"4\" align=\"left\">SCL: the segment holds every record of "
    "its PG up to it. VDL flag: the highest CPL &lt;= VCL.<br align=\"left\"/>A log: the writer's newest "
    "records of the PG on top, a row per segment below.<br align=\"left\"/>mepoch: the PG's membership "
    "epoch. A moving position has its current segment and a next one,<br align=\"left\"/>which takes "
    "writes but counts for the quorum only up to its SCL; it replaces<br align=\"left\"/>the current "
    "one once it reaches its target and the writer uses it.<br align=\"left\"/></td></tr>\n"
    "  </table>>];\n");
}

/* ---- the whole drawing ---------------------------------------------------- */

char *viz_dot(const Auralog__Status *st)
{
  struct sb b = {0};
  Auralog__Volume none = AURALOG__VOLUME__INIT;
  const Auralog__Volume *v = st->volume ? st->volume : &none;
  size_t up = 0;
  for (size_t i = 0; i < st->n_nodes; i++)
    up += st->nodes[i]->up;

  sbf(&b, "digraph auralog {\n"
      "  graph [fontname=\"Helvetica\" fontsize=16 labelloc=t newrank=true nodesep=0.25 "
      "ranksep=0.45 label=<<b>auralog</b>  volume ");
  sb_html(&b, v->name);
  sbf(&b, "%s  ·  epoch %llu  ·  %zu PG%s  ·  %zu of %zu nodes up",
      st->exists ? "" : " (not created yet)", (ull)v->epoch, v->n_pgs, v->n_pgs == 1 ? "" : "s",
      up, st->n_nodes);
  if (st->n_moves)
    sbf(&b, "  ·  %zu position%s moving", st->n_moves, st->n_moves == 1 ? "" : "s");
  sbf(&b, ">];\n");
  sbf(&b, "  node [fontname=\"Helvetica\" fontsize=11 shape=box style=\"rounded,filled\" "
      "fillcolor=white margin=\"0.08,0.04\"];\n"
      "  edge [color=\"#4d4d4d\" arrowsize=0.6 fontname=\"Helvetica\"];\n");

  draw_engine(&b, st, v);
  draw_truncs(&b, v);
  if (viz_draw_members(&b, st, v))
    sbf(&b, "  members -> engine [style=invis];\n");   /* above it: beside, too wide */

  /* The AZs, each a box of its nodes, in AZ then id order. */
  const Auralog__NodeInfo **ns = calloc(st->n_nodes + 1, sizeof *ns);
  for (size_t i = 0; i < st->n_nodes; i++)
    ns[i] = st->nodes[i];
  qsort(ns, st->n_nodes, sizeof *ns, by_az_then_id);
  for (size_t i = 0, z = 0; i < st->n_nodes; z++) {
    const char *az = ns[i]->az;
    sbf(&b, "  subgraph cluster_az%zu {\n    label=<<b>AZ ", z);
    sb_html(&b, az);
    sbf(&b, "</b>> style=\"rounded,filled\" fillcolor=\"#f5f7fa\" color=\"#8c96a0\" fontsize=13;\n");
    for (; i < st->n_nodes && strcmp(ns[i]->az, az) == 0; i++)
      draw_node(&b, st, st->volume, ns[i], i);
    sbf(&b, "  }\n");
  }
  /* The engine ships redo to every node; the edge shows what that link
   * looks like now. In id order (ordering=out), so A1 is left of A2. */
  for (size_t i = 0; i < st->n_nodes; i++) {
    const Auralog__NodeInfo *n = ns[i];
    if (!n->up)
      sbf(&b, "  engine -> n%zu [style=dotted color=\"" C_DOWN_LINE "\" arrowhead=none];\n", i);
    else if (n->partitioned)
      sbf(&b, "  engine -> n%zu [style=dashed penwidth=2 color=\"" C_PART_LINE
          "\" arrowhead=tee label=\"cut off\" fontcolor=\"" C_PART_LINE "\" fontsize=9];\n", i);
    else if (n->slow_ms)
      sbf(&b, "  engine -> n%zu [penwidth=2 color=\"" C_SLOW_LINE "\" label=\"+%u ms\" "
          "fontcolor=\"" C_SLOW_LINE "\" fontsize=9];\n", i, n->slow_ms);
    else
      sbf(&b, "  engine -> n%zu;\n", i);
  }

  /* The PG strips below the AZs, one under the other: the PGs with a
   * position moving (member.h) or recent records first to get a strip,
   * then the others while there is room. */
  const Auralog__EngineStat *e = st->engine;
  unsigned char *has = calloc(v->n_pgs + 1, 1);
  size_t nwith = 0;
  for (size_t p = 0; p < v->n_pgs; p++) {
    has[p] = v->pgs[p]->n_segments > NCOPIES;
    for (size_t i = 0; e && i < e->n_tail && !has[p]; i++)
      has[p] = e->tail[i]->pg == v->pgs[p]->pg;
    nwith += has[p];
  }
  size_t spare = nwith < VIZ_STRIPS ? VIZ_STRIPS - nwith : 0, drawn = 0, withdrawn = 0;
  const char *prev = NULL;
  char prevbuf[32];
  for (size_t p = 0; p < v->n_pgs; p++) {
    if (has[p] ? withdrawn == VIZ_STRIPS : spare == 0)
      continue;
    if (has[p])
      withdrawn++;
    else
      spare--;
    viz_draw_log(&b, st, v, v->pgs[p]);
    if (prev == NULL) {
      for (size_t i = 0; i < st->n_nodes; i++)
        sbf(&b, "  n%zu -> pg%u [style=invis];\n", i, v->pgs[p]->pg);
    } else {
      sbf(&b, "  %s -> pg%u [style=invis];\n", prev, v->pgs[p]->pg);
    }
    snprintf(prevbuf, sizeof prevbuf, "pg%u", v->pgs[p]->pg);
    prev = prevbuf;
    drawn++;
  }
  if (drawn < v->n_pgs) {
    sbf(&b, "  morepgs [shape=plaintext label=<<i>and %zu more PGs (not drawn)</i>>];\n",
        v->n_pgs - drawn);
    if (prev)
      sbf(&b, "  %s -> morepgs [style=invis];\n", prev);
    prev = "morepgs";
  }
  draw_legend(&b);
  if (prev)
    sbf(&b, "  %s -> legend [style=invis];\n", prev);
  else
    for (size_t i = 0; i < st->n_nodes; i++)
      sbf(&b, "  n%zu -> legend [style=invis];\n", i);
  sbf(&b, "}\n");
  free(has);
  free(ns);
  return b.s;
}

/* ---- the command ---------------------------------------------------------- */

/* For `make SAN=1`: graphviz 2.42 leaks in every layout (even of
 * digraph{a->b}), as do the font libraries under it. LeakSanitizer asks
 * these hooks which leaks are not ours, and is told to keep quiet about
 * having ignored them (a command's error stays one line); an ordinary
 * build never calls them. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
  return "print_suppressions=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
  return "leak:libgvc.so\n"
         "leak:libcgraph.so\n"
         "leak:libcdt.so\n"
         "leak:libgvplugin_\n"
         "leak:libpango\n"
         "leak:libcairo\n"
         "leak:libfontconfig.so\n"
         "leak:libglib-2.0.so\n"
         "leak:libgobject-2.0.so\n"
         "leak:libharfbuzz.so\n";
}

static char gv_err[256];

/* Graphviz's messages, kept to report in one line. */
static int gv_errf(char *msg)
{
  if (gv_err[0] == 0) {
    snprintf(gv_err, sizeof gv_err, "%s", msg);
    gv_err[strcspn(gv_err, "\n")] = 0;
  }
  return 0;
}

/* Lay dot out and render it as fmt (svg, png) into *data. Once per
 * process: graphviz 2.42's pango plugin keeps a pointer into the first
 * context's fonts, so a second context in the same process reads freed
 * memory. */
int viz_render(const char *dot, const char *fmt, char **data, unsigned *len,
               char *why, size_t whylen)
{
  agseterr(AGERR);
  agseterrf(gv_errf);
  gv_err[0] = 0;
  GVC_t *gvc = gvContext();
  Agraph_t *g = agmemread(dot);
  int rc = -1;
  if (g == NULL) {
    snprintf(why, whylen, "graphviz cannot read the drawing: %s", gv_err);
  } else if (gvLayout(gvc, g, "dot") != 0) {
    snprintf(why, whylen, "graphviz layout failed: %s", gv_err);
  } else {
    if (gvRenderData(gvc, g, fmt, data, len) != 0)
      snprintf(why, whylen, "graphviz cannot render %s: %s", fmt,
               gv_err[0] ? gv_err : "no plugin for it (is the graphviz package installed?)");
    else
      rc = 0;
    gvFreeLayout(gvc, g);
  }
  if (g)
    agclose(g);
  gvFreeContext(gvc);
  return rc;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog viz [--format dot|svg|png] [-o FILE] [--volume NAME] [--dir DIR | --coord ADDR]\n"
    "       auralog viz --sim-trace FILE [--from MS] [--to MS] [--format F] [-o FILE]\n"
    "\n"
    "Draw the running cluster with graphviz: the AZs and their nodes, each\n"
    "node's segments with their SCL, the engine's VDL and VCL, and per PG its\n"
    "log: the newest records (durable, complete, pending; CPLs; the truncated\n"
    "ranges of recoveries), and under them a row per segment showing which\n"
    "records it holds, its holes shaded and its SCL. Down, partitioned, slow,\n"
    "stale and gossip-off nodes are drawn as such; the legend says how.\n"
    "\n"
    "  --format F     dot (the default: DOT text), svg or png\n"
    "  -o FILE        write to FILE; without --format, its extension\n"
    "                 (.dot/.gv, .svg, .png) picks the format\n"
    "  --volume NAME  volume to draw (default main)\n"
    "  --dir DIR      the cluster in DIR (default $AURALOG_DIR or ~/.auralog)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD, or the cluster's, or %s)\n"
    "  --sim-trace FILE  instead, draw a trace of `auralog sim --trace` as a\n"
    "                 timeline: faults, writer and node lanes by AZ, recoveries,\n"
    "                 VDL and SCLs, the violation; --from/--to MS pick the window\n"
    "                 (default: the 3 s before a violation, or the whole run)\n"
    "\n"
    "Example: auralog viz -o cluster.png\n",
    COORD_ADDR_DEFAULT);
}

static const char *format_of(const char *name)
{
  static const char *fmts[] = {"dot", "svg", "png"};
  for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
    if (strcmp(name, fmts[i]) == 0)
      return fmts[i];
  if (strcmp(name, "gv") == 0)
    return "dot";
  return NULL;
}

int viz_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"format", required_argument, 0, 'f'}, {"output", required_argument, 0, 'o'},
    {"volume", required_argument, 0, 'v'}, {"coord", required_argument, 0, 'c'},
    {"sim-trace", required_argument, 0, 's'}, {"from", required_argument, 0, 'F'},
    {"to", required_argument, 0, 'T'}, {"dir", required_argument, 0, 'd'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *fmt = NULL, *file = NULL, *volume = "main", *coord = NULL, *trace = NULL;
  long long win[2] = {-1, -1};
  char *end;
  int o;
  while ((o = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (o) {
    case 'f':
      if ((fmt = format_of(optarg)) == NULL)
        die("viz: unknown format '%s' (use dot, svg or png)", optarg);
      break;
    case 'o': file = optarg; break;
    case 'v': volume = optarg; break;
    case 'c': coord = optarg; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 's': trace = optarg; break;
    case 'F': case 'T':
      win[o == 'T'] = strtoll(optarg, &end, 10);
      if (*optarg < '0' || *optarg > '9' || *end || win[o == 'T'] < 0) {
        errmsg("viz: --%s wants virtual ms, not '%s'", o == 'T' ? "to" : "from", optarg);
        return 2;
      }
      break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("viz: unexpected argument '%s' (see auralog viz --help)", argv[optind]);
  if (!wire_name_ok(volume))
    die("viz: '%s' is not a volume name", volume);
  if (fmt == NULL && file != NULL) {
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    const char *dot = strrchr(base, '.');
    if (dot == NULL || (fmt = format_of(dot + 1)) == NULL)
      die("viz: cannot tell the format from the name '%s': add --format dot|svg|png", file);
  }
  if (fmt == NULL)
    fmt = "dot";
  if (file == NULL && strcmp(fmt, "png") == 0 && isatty(STDOUT_FILENO))
    die("viz: not writing a PNG to a terminal: add -o FILE");

  if (trace == NULL && (win[0] >= 0 || win[1] >= 0)) {
    errmsg("viz: --from and --to go with --sim-trace FILE");
    return 2;
  }
  char why[512], *dot;
  if (trace) {
    if ((dot = viz_sim_dot(trace, win[0], win[1], why, sizeof why)) == NULL) {
      errmsg("viz: %s", why);
      return 2;
    }
  } else {
    Env *rep = status_fetch(addr_coord(coord), volume, why, sizeof why);
    if (rep == NULL)
      die("viz: %s%s", why,
          rpc_key_trouble(why) ? "" : " (is the cluster up? try: auralog cluster up)");
    dot = viz_dot(rep->status);
    wire_free(rep);
  }

  char *data = dot, *rendered = NULL;
  unsigned len = (unsigned)strlen(dot);
  if (strcmp(fmt, "dot") != 0) {
    if (viz_render(dot, fmt, &rendered, &len, why, sizeof why) != 0) {
      free(dot);
      die("viz: %s", why);
    }
    data = rendered;
  }
  FILE *f = file ? fopen(file, "wb") : stdout;
  if (f == NULL)
    die("viz: cannot write %s: %s", file, strerror(errno));
  int bad = fwrite(data, 1, len, f) != len;
  bad |= file ? fclose(f) != 0 : fflush(f) != 0;
  if (rendered)
    gvFreeRenderData(rendered);
  free(dot);
  if (bad)
    die("viz: cannot write %s: %s", file ? file : "the output", strerror(errno));
  return 0;
}
