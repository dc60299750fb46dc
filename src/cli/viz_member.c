/*
 * viz_member.c: membership in `auralog viz` (member.h; paper §2.2-2.3;
 * Verbitski et al. 2018; DESIGN.md invariant 10).
 *
 * A PG has NCOPIES positions; while a change (a repair, a drain, a
 * replace) moves one, the position holds its current segment and an
 * incoming next one on another node of the same AZ. The next segment
 * takes new writes while it is hydrated from its peers, but it counts
 * towards a write quorum only as far as its SCL reaches (member.h M2):
 * until then its position counts for no new record (M1 takes the worse
 * of the two). So the pictures say, per PG, its membership epoch, which
 * positions move from whom to whom, how far each next segment has
 * hydrated (its SCL against what it must reach to finish, M4), and how
 * many positions can count for a record now against the Vw needed; and,
 * for the volume, the moves in flight with their kind and age and the
 * last times to repair (M7), in a small panel beside the engine.
 *
 * Interface (viz_int.h): viz_slot, viz_next_of, viz_move_of,
 * viz_hydrating, viz_target, viz_positions_count, viz_age,
 * viz_draw_members. Pure: DOT text only.
 */
#include <string.h>

#include "param.h"
#include "member.h"
#include "cli/viz_int.h"

#define VIZ_MOVES  8            /* moves listed in the panel before "and N more" */

/* member.h: slot p < NCOPIES is position p's current segment (the first
 * NCOPIES of Pg.segments, in position order), NCOPIES + p its next one. */
int viz_slot(const Auralog__Pg *pg, size_t s)
{
  if (s < NCOPIES)
    return (int)s;
  return NCOPIES + (int)(pg->segments[s]->pos % NCOPIES);
}

int viz_next_of(const Auralog__Pg *pg, uint32_t pos)
{
  for (size_t s = NCOPIES; s < pg->n_segments; s++)
    if (pg->segments[s]->pos == pos)
      return (int)s;
  return -1;
}

const Auralog__MoveStat *viz_move_of(const Auralog__Status *st, uint32_t pg, uint32_t pos)
{
  for (size_t i = 0; i < st->n_moves; i++)
    if (st->moves[i]->pg == pg && st->moves[i]->pos == pos)
      return st->moves[i];
  return NULL;
}

/* The best SCL of pg's current segments: a next one hydrates towards it. */
static uint64_t best_current(const Auralog__Status *st, const Auralog__Pg *pg)
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

/* What next segment s of pg must reach: the coordinator's target (the
 * writer's adopted_at, M4), or its peers' best SCL while none is known. */
uint64_t viz_target(const Auralog__Status *st, const Auralog__Pg *pg, size_t s)
{
  const Auralog__MoveStat *m = viz_move_of(st, pg->pg, pg->segments[s]->pos);
  return m && m->target_scl ? m->target_scl : best_current(st, pg);
}

/* A next segment below its PG's current segments' best SCL: being
 * filled from its peers (the same test as `auralog status`). */
int viz_hydrating(const Auralog__Status *st, const Auralog__Pg *pg, size_t s)
{
  int known;
  uint64_t scl = viz_scl_of(st, pg->segments[s]->node, pg->pg, &known);
  return scl < best_current(st, pg);
}

static int serves(const Auralog__Status *st, const char *id)
{
  const Auralog__NodeInfo *n = viz_node(st, id);
  return n && n->up && !n->partitioned;
}

/* The positions that can count towards a write quorum for a new record
 * now (M1, M2): the current segment's node answers and, where the
 * position moves, so does the next one's and it has caught up. */
int viz_positions_count(const Auralog__Status *st, const Auralog__Pg *pg)
{
  int n = 0;
  for (uint32_t p = 0; p < NCOPIES && p < pg->n_segments; p++) {
    if (!serves(st, pg->segments[p]->node))
      continue;
    int g = viz_next_of(pg, p);
    if (g >= 0 && (!serves(st, pg->segments[g]->node) || viz_hydrating(st, pg, (size_t)g)))
      continue;
    n++;
  }
  return n;
}

/* An age for people: "850 ms", "5.2 s", "74 s". */
void viz_age(struct sb *b, uint64_t ms)
{
  if (ms < 1000)
    sbf(b, "%llu ms", (ull)ms);
  else if (ms < 10000)
    sbf(b, "%.1f s", (double)ms / 1000);
  else
    sbf(b, "%llu s", (ull)(ms / 1000));
}

/* The panel "members": the volume's membership sequence, each move in
 * flight (PG, position, from, to, kind, age, the next segment's SCL
 * against its target, whether the writer adopted it), the nodes out of
 * service, and the last times to repair. Drawn only when one of them has
 * something to say; returns whether it drew. */
int viz_draw_members(struct sb *b, const Auralog__Status *st, const Auralog__Volume *v)
{
  size_t out = 0;
  for (size_t i = 0; i < st->n_nodes; i++)
    out += st->nodes[i]->state && st->nodes[i]->state[0] && strcmp(st->nodes[i]->state, "up") != 0;
  if (st->n_moves == 0 && st->n_mttr_ms == 0 && out == 0)
    return 0;
  sbf(b, "  members [shape=plaintext label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" "
      "cellpadding=\"3\">\n"
      "    <tr><td colspan=\"5\" bgcolor=\"" C_NEXT "\" align=\"left\"><b>membership</b>  mseq %llu: "
      "%zu position%s moving</td></tr>\n", (ull)v->mseq, st->n_moves, st->n_moves == 1 ? "" : "s");
  for (size_t i = 0; i < st->n_moves && i < VIZ_MOVES; i++) {
    const Auralog__MoveStat *m = st->moves[i];
    sbf(b, "    <tr><td align=\"left\">pg %u pos %u</td><td align=\"left\"><b>", m->pg, m->pos);
    sb_html(b, m->from);
    sbf(b, "</b>→<font color=\"" C_NEXT_LINE "\"><b>");
    sb_html(b, m->to);
    sbf(b, "</b></font></td><td>");
    sb_html(b, m->kind);
    sbf(b, "</td><td align=\"right\">");
    viz_age(b, m->age_ms);
    sbf(b, "</td><td align=\"left\"%s>SCL %llu of %llu%s</td></tr>\n",
        m->scl < m->target_scl ? " bgcolor=\"" C_NEXT_MISS "\"" : "", (ull)m->scl,
        (ull)m->target_scl, m->adopted ? "" : "; writer not on it yet");
  }
  if (st->n_moves > VIZ_MOVES)
    sbf(b, "    <tr><td colspan=\"5\" align=\"left\"><i>and %zu more</i></td></tr>\n",
        st->n_moves - VIZ_MOVES);
  for (size_t i = 0; i < st->n_nodes; i++) {
    const Auralog__NodeInfo *n = st->nodes[i];
    if (!n->state || !n->state[0] || strcmp(n->state, "up") == 0)
      continue;
    sbf(b, "    <tr><td colspan=\"5\" align=\"left\">node <b>");
    sb_html(b, n->id);
    sbf(b, "</b> ");
    sb_html(b, n->state);
    sbf(b, "%s</td></tr>\n", strcmp(n->state, "draining") == 0 ? ": its segments move to spares"
                             : strcmp(n->state, "retired") == 0 ? ": hosts nothing, takes nothing" : "");
  }
  sbf(b, "    <tr><td colspan=\"5\" align=\"left\">time to repair, last:");
  for (size_t i = 0; i < st->n_mttr_ms; i++) {
    sbf(b, i ? ", " : " ");
    viz_age(b, st->mttr_ms[i]);
  }
  sbf(b, "%s</td></tr>\n  </table>>];\n", st->n_mttr_ms ? "" : " none yet");
  return 1;
}
