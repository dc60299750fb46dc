/*
 * viz_log.c: one protection group's log in `auralog viz`, a row per
 * segment (paper §3.3, §4.1, §4.2.1).
 *
 * The header row is the writer's view: the PG's newest records by LSN
 * (from the engine's report, vfs/report.c), coloured durable (<= VDL),
 * complete (<= VCL) or pending, CPLs framed, with the VDL and VCL flags
 * between them and the truncations of past recoveries (§4.3). Below it,
 * one row per segment of the PG (six: two per AZ), each cell saying
 * whether that segment holds that record:
 *
 *   held     at or below the segment's SCL (it holds every record up to
 *            it), or acknowledged by it (the engine noted the ack);
 *   hole     missing, while the segment holds a later record (a lost
 *            Append; gossip fills it, §3.3): shaded hard, it is the thing
 *            to see;
 *   missing  missing, and so is everything after it (a down, partitioned
 *            or lagging segment).
 *
 * The cell of the record at the segment's SCL says "SCL", so the SCL of
 * every segment sits in the picture beside the VDL flag: a student sees
 * the write quorum (four held cells in a column make it durable once the
 * VDL passes), a hole, and the VDL move past records a segment lacks.
 * The flags' columns run through the segment rows as light bands.
 *
 * A leading cell says whether the segment is complete below the first
 * record drawn ("hole after SCL n" when it is not and holds later ones),
 * when the tail or a truncation tells.
 *
 * Interface: viz_draw_log (viz_int.h), called by viz_dot for each PG it
 * draws. Pure: DOT text only.
 */
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "cli/viz_int.h"

#define VIZ_LOG_RECS    10      /* newest records of a PG drawn: a screen wide */
#define VIZ_STRIP_TRUNC 2       /* truncations drawn in one PG's log */

/* What the header shows, in LSN order. At one LSN: the record, then the
 * VDL flag, the VCL flag, then a truncation starting there (recovery
 * truncates right above the VDL it found). */
enum { EV_REC, EV_VDL, EV_VCL, EV_VDLCL, EV_TRUNC };
struct ev {
  uint64_t lsn;
  int kind;
  int cpl;
  uint32_t acks;             /* EV_REC: the slots the engine knows hold it */
  const Auralog__TruncRange *t;
};

static int ev_cmp(const void *a, const void *b)
{
  const struct ev *x = a, *y = b;
  if (x->lsn != y->lsn)
    return x->lsn < y->lsn ? -1 : 1;
  return x->kind - y->kind;
}

/* The newest VIZ_LOG_RECS records of pg in the tail, the flags and the
 * truncations, sorted; *nrec records, *lo the lowest LSN (UINT64_MAX:
 * none), *prev the PG's record before it if the tail has it (else 0). */
static struct ev *collect(const Auralog__Status *st, const Auralog__Volume *v,
                          const Auralog__Pg *pg, size_t *n_out, size_t *nrec, uint64_t *lo,
                          uint64_t *prev)
{
  const Auralog__EngineStat *e = st->engine;
  size_t have = 0;
  for (size_t i = 0; e && i < e->n_tail; i++)
    have += e->tail[i]->pg == pg->pg;
  struct ev *ev = calloc(have + 2 + v->n_truncs + 1, sizeof *ev);
  size_t n = 0;
  for (size_t i = 0; e && i < e->n_tail; i++)
    if (e->tail[i]->pg == pg->pg)
      ev[n++] = (struct ev){e->tail[i]->lsn, EV_REC, e->tail[i]->cpl, e->tail[i]->acks, NULL};
  qsort(ev, n, sizeof *ev, ev_cmp);
  *prev = n > VIZ_LOG_RECS ? ev[n - VIZ_LOG_RECS - 1].lsn : 0;
  if (n > VIZ_LOG_RECS) {          /* the newest only */
    memmove(ev, ev + (n - VIZ_LOG_RECS), VIZ_LOG_RECS * sizeof *ev);
    n = VIZ_LOG_RECS;
  }
  *nrec = n;
  *lo = n ? ev[0].lsn : UINT64_MAX;
  if (e && e->vdl == e->vcl) {
    ev[n++] = (struct ev){e->vdl, EV_VDLCL, 0, 0, NULL};
  } else if (e) {
    ev[n++] = (struct ev){e->vdl, EV_VDL, 0, 0, NULL};
    ev[n++] = (struct ev){e->vcl, EV_VCL, 0, 0, NULL};
  }
  /* The truncations among these records, and the newest below them (it
   * explains the jump in LSNs a recovery leaves), newest first. */
  size_t nt = 0;
  int below = 0;
  for (size_t i = v->n_truncs; i-- > 0 && nt < VIZ_STRIP_TRUNC;) {
    const Auralog__TruncRange *t = v->truncs[i];
    if (t->to < *lo) {
      if (below)
        continue;
      below = 1;
    }
    ev[n++] = (struct ev){t->from, EV_TRUNC, 0, 0, t};
    nt++;
  }
  qsort(ev, n, sizeof *ev, ev_cmp);
  *n_out = n;
  return ev;
}

static void header_row(struct sb *b, const Auralog__Status *st, const Auralog__Pg *pg,
                       const struct ev *ev, size_t n, size_t nrec, uint64_t lo)
{
  const Auralog__EngineStat *e = st->engine;
  sbf(b, "    <tr><td border=\"0\" align=\"left\"><b>pg %u</b>&#160;log tail<br/>"
      "<font point-size=\"9\">pages %u..%u  mepoch %llu</font>", pg->pg, pg->first_page,
      pg->first_page + (pg->npages ? pg->npages - 1 : 0), (ull)pg->mepoch);
  /* Its positions in transition (member.h), and how many positions can
   * count towards a write quorum now: a moving one only once its next
   * segment caught up (M1, M2). */
  for (size_t s = NCOPIES; s < pg->n_segments; s++) {
    uint32_t pos = pg->segments[s]->pos;
    sbf(b, "<br/><font point-size=\"9\" color=\"" C_NEXT_LINE "\"><b>moving: pos %u ", pos);
    sb_html(b, pos < pg->n_segments ? pg->segments[pos]->node : "?");
    sbf(b, "→");
    sb_html(b, pg->segments[s]->node);
    sbf(b, "</b></font>");
  }
  if (pg->n_segments > NCOPIES || st->engine) {
    int n = viz_positions_count(st, pg);
    if (pg->n_segments > NCOPIES || n < NCOPIES)
      sbf(b, "<br/><font point-size=\"9\"%s>%d of %d positions count<br/>(write quorum %d)</font>",
          n < VW ? " color=\"" C_HOLE "\"" : "", n, NCOPIES, VW);
  }
  sbf(b, "</td>");
  if (nrec && lo > 1)
    sbf(b, "<td border=\"0\">...</td>");
  if (nrec == 0)
    sbf(b, "<td border=\"0\"><i>no recent records</i></td>");
  for (size_t i = 0; i < n; i++) {
    const struct ev *x = &ev[i];
    switch (x->kind) {
    case EV_REC: {
      const char *fill = x->lsn <= e->vdl ? C_DURABLE : x->lsn <= e->vcl ? C_COMPLETE : C_PENDING;
      const char *pend = x->lsn > e->vcl ? " style=\"dashed\"" : "";
      /* Small enough that a dozen eight-digit LSNs fit a screen's width. */
      if (x->cpl)
        sbf(b, "<td bgcolor=\"%s\" border=\"3\"%s><font point-size=\"10\"><b>%llu</b></font>"
            "<br/><font point-size=\"8\"><b>CPL</b></font></td>", fill, pend, (ull)x->lsn);
      else
        sbf(b, "<td bgcolor=\"%s\"%s><font point-size=\"10\">%llu</font><br/><font "
            "point-size=\"8\"> </font></td>", fill, pend, (ull)x->lsn);
      break;
    }
    case EV_VDL:
    case EV_VCL:
    case EV_VDLCL:
      sbf(b, "<td bgcolor=\"%s\" border=\"0\"><font color=\"white\" point-size=\"10\"><b>%s</b>"
          "<br/>%llu</font></td>",
          x->kind == EV_VCL ? C_VCL : C_VDL,
          x->kind == EV_VDL ? "VDL" : x->kind == EV_VCL ? "VCL" : "VDL=VCL", (ull)x->lsn);
      break;
    case EV_TRUNC:
      sbf(b, "<td bgcolor=\"" C_TRUNC "\" style=\"dashed\"><font point-size=\"9\">truncated<br/>"
          "(%llu, %llu]<br/>epoch %llu</font></td>", (ull)x->t->from, (ull)x->t->to,
          (ull)x->t->epoch);
      break;
    }
  }
  sbf(b, "</tr>\n");
}

/* Does slot hold x (as far as the segment's SCL and the engine's acks tell)? */
static int holds(const struct ev *x, int slot, int known, uint64_t scl)
{
  return (known && x->lsn <= scl) || (x->acks & (1u << slot));
}

/* Segment slot of pg, on node id: a row of cells under the header's. */
static void segment_row(struct sb *b, const Auralog__Status *st, const Auralog__Volume *v,
                        const Auralog__Pg *pg, size_t row, const struct ev *ev, size_t n,
                        size_t nrec, uint64_t lo, uint64_t prev)
{
  const char *id = pg->segments[row]->node;
  int slot = viz_slot(pg, row), next = row >= NCOPIES;
  int known;
  uint64_t scl = viz_scl_of(st, id, pg->pg, &known);
  const Auralog__SegStat *ss = viz_seg_of(st, id, pg->pg);
  const Auralog__NodeInfo *node = viz_node(st, id);
  uint64_t max = ss ? ss->max_lsn : 0;
  /* The newest record drawn it holds: a missing record below it is a hole. */
  uint64_t top = known ? scl : 0;
  for (size_t i = 0; i < n; i++)
    if (ev[i].kind == EV_REC && holds(&ev[i], slot, known, scl) && ev[i].lsn > top)
      top = ev[i].lsn;
  if (max > top)
    top = max;

  const char *state = node == NULL ? "" : !node->up ? " DOWN" : node->partitioned ? " CUT OFF" : "";
  if (next) {
    /* An incoming next segment (member.h): which position, whom it
     * replaces, how far it has hydrated towards its target (M4). */
    uint32_t pos = pg->segments[row]->pos;
    sbf(b, "    <tr><td bgcolor=\"" C_NEXT "\" color=\"" C_NEXT_LINE "\" style=\"dashed\" align=\"right\" "
        "cellpadding=\"1\"><font point-size=\"10\" color=\"" C_NEXT_LINE "\"><b>→");
    sb_html(b, id);
    /* Three short lines: the label column is as wide as its widest. */
    sbf(b, "</b>%s next (%s)</font><br/><font point-size=\"8\">SCL %s%llu of %llu<br/>replaces ", state,
        viz_hydrating(st, pg, row) ? "hydrating" : "caught up", known ? "" : "?", (ull)scl,
        (ull)viz_target(st, pg, row));
    sb_html(b, pos < pg->n_segments ? pg->segments[pos]->node : "?");
    sbf(b, " at position %u</font></td>", pos);
  } else {
    sbf(b, "    <tr><td border=\"0\" align=\"right\" cellpadding=\"1\"><font point-size=\"10\"><b>");
    sb_html(b, id);
    sbf(b, "</b>%s  ", state);
    if (viz_next_of(pg, (uint32_t)row) >= 0)
      sbf(b, "<font color=\"" C_NEXT_LINE "\">leaving</font>  ");
    if (known)
      sbf(b, "SCL %llu", (ull)scl);
    else
      sbf(b, "SCL ?");
    sbf(b, "</font></td>");
  }
  if (nrec && lo > 1) {
    /* Below the first record drawn: complete up to it, or not. The PG's
     * record before it, when the tail has it, says; else an SCL right
     * below it, or below a truncated range ending there, is complete
     * (records of other PGs may sit between: then nothing is claimed). */
    int below = 0;              /* 1: complete below the first record, -1: not, 0: unknown */
    if (known && prev)
      below = scl >= prev ? 1 : -1;
    else if (known && scl + 1 >= lo)
      below = 1;
    for (size_t i = 0; known && !prev && below == 0 && i < v->n_truncs; i++)
      if (v->truncs[i]->from <= scl && v->truncs[i]->to + 1 >= lo)
        below = 1;
    if (below == 0)
      sbf(b, "<td border=\"0\"></td>");
    else if (below < 0 && next)
      sbf(b, "<td bgcolor=\"" C_NEXT_MISS "\" color=\"" C_NEXT_LINE "\" style=\"dashed\" cellpadding=\"1\">"
          "<font point-size=\"8\">to fill<br/>after %llu</font></td>", (ull)scl);
    else if (below > 0)
      sbf(b, "<td bgcolor=\"" C_HELD "\" cellpadding=\"1\"><font point-size=\"8\">%s</font></td>",
          prev && scl == prev ? "<b>SCL</b>" : "held");
    else if (top >= lo)
      sbf(b, "<td bgcolor=\"" C_HOLE "\" cellpadding=\"1\"><font point-size=\"8\" color=\"white\">"
          "<b>hole</b> after<br/>SCL %llu</font></td>", (ull)scl);
    else
      sbf(b, "<td bgcolor=\"" C_MISSING "\" style=\"dashed\" cellpadding=\"1\"><font point-size=\"8\">"
          "missing<br/>after %llu</font></td>", (ull)scl);
  }
  if (nrec == 0)
    sbf(b, "<td border=\"0\"></td>");
  for (size_t i = 0; i < n; i++) {
    const struct ev *x = &ev[i];
    switch (x->kind) {
    case EV_REC:
      if (holds(x, slot, known, scl))
        sbf(b, "<td bgcolor=\"" C_HELD "\" cellpadding=\"1\"><font point-size=\"8\">%s</font></td>",
            known && x->lsn == scl ? "<b>SCL</b>" : "held");
      else if (!known && !x->acks)
        sbf(b, "<td border=\"0\" cellpadding=\"1\"><font point-size=\"8\">?</font></td>");
      else if (next)       /* hydration fills it: no hole to worry about */
        sbf(b, "<td bgcolor=\"" C_NEXT_MISS "\" color=\"" C_NEXT_LINE "\" style=\"dashed\" cellpadding=\"1\">"
            "<font point-size=\"8\">to fill</font></td>");
      else if (x->lsn < top)
        sbf(b, "<td bgcolor=\"" C_HOLE "\" cellpadding=\"1\"><font point-size=\"8\" color=\"white\">"
            "<b>hole</b></font></td>");
      else
        sbf(b, "<td bgcolor=\"" C_MISSING "\" style=\"dashed\" cellpadding=\"1\"><font "
            "point-size=\"8\">missing</font></td>");
      break;
    case EV_VDL:
    case EV_VDLCL:
      sbf(b, "<td bgcolor=\"" C_VDL_BAND "\" border=\"0\"></td>");
      break;
    case EV_VCL:
      sbf(b, "<td bgcolor=\"" C_VCL_BAND "\" border=\"0\"></td>");
      break;
    case EV_TRUNC:
      sbf(b, "<td bgcolor=\"" C_TRUNC_BAND "\" border=\"0\"></td>");
      break;
    }
  }
  sbf(b, "</tr>\n");
}

void viz_draw_log(struct sb *b, const Auralog__Status *st, const Auralog__Volume *v,
                  const Auralog__Pg *pg)
{
  size_t n, nrec;
  uint64_t lo, prev;
  struct ev *ev = collect(st, v, pg, &n, &nrec, &lo, &prev);
  sbf(b, "  pg%u [shape=plaintext label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"2\" "
      "cellpadding=\"3\">\n", pg->pg);
  header_row(b, st, pg, ev, n, nrec, lo);
  if (st->engine)
    for (size_t s = 0; s < pg->n_segments && s < NSLOTS; s++)
      segment_row(b, st, v, pg, s, ev, n, nrec, lo, prev);
  sbf(b, "  </table>>];\n");
  free(ev);
}
