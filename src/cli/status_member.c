/*
 * status_member.c: membership changes in `auralog status` (member.h,
 * coord/member.c): the positions moving now ("repairs" in the JSON, the
 * contract's name, DESIGN.md §6, with drains and replaces among them),
 * the last times to repair ("mttr_ms"), and a short section for people.
 * Each PG's mepoch and each segment's next / hydrating are status.c's,
 * beside the PG's other fields.
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "cli/status.h"
#include "param.h"

const char *status_node_state(const Auralog__NodeInfo *n)
{
  if (n && strcmp(n->state, "retired") == 0)
    return "retired";
  if (n == NULL || !n->up)
    return "down";
  return n->state[0] ? n->state : "up";
}

void status_member_json(const Auralog__Status *st, cJSON *o)
{
  cJSON_AddNumberToObject(o, "mseq", (double)st->volume->mseq);
  cJSON *rs = cJSON_AddArrayToObject(o, "repairs");
  for (size_t i = 0; i < st->n_moves; i++) {
    const Auralog__MoveStat *m = st->moves[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "pg", m->pg);
    cJSON_AddNumberToObject(j, "pos", m->pos);
    cJSON_AddStringToObject(j, "from", m->from);
    cJSON_AddStringToObject(j, "to", m->to);
    cJSON_AddNumberToObject(j, "age_ms", (double)m->age_ms);
    cJSON_AddNumberToObject(j, "scl", (double)m->scl);
    cJSON_AddNumberToObject(j, "target_scl", (double)m->target_scl);
    cJSON_AddStringToObject(j, "kind", m->kind);
    cJSON_AddBoolToObject(j, "adopted", m->adopted);
    cJSON_AddItemToArray(rs, j);
  }
  cJSON *mt = cJSON_AddArrayToObject(o, "mttr_ms");
  for (size_t i = 0; i < st->n_mttr_ms; i++)
    cJSON_AddItemToArray(mt, cJSON_CreateNumber((double)st->mttr_ms[i]));
}

void status_member_table(const Auralog__Status *st, FILE *f)
{
  size_t out = 0;
  for (size_t i = 0; i < st->n_nodes; i++)
    out += st->nodes[i]->state[0] != 0;
  if (st->n_moves == 0 && st->n_mttr_ms == 0 && out == 0)
    return;
  fprintf(f, "membership  mseq %llu: %zu position%s moving\n",
          (unsigned long long)st->volume->mseq, st->n_moves, st->n_moves == 1 ? "" : "s");
  for (size_t i = 0; i < st->n_moves; i++) {
    const Auralog__MoveStat *m = st->moves[i];
    fprintf(f, "  pg %u pos %u: %s -> %s (%s, %llu ms)  scl %llu of %llu%s\n", m->pg, m->pos,
            m->from, m->to, m->kind, (unsigned long long)m->age_ms,
            (unsigned long long)m->scl, (unsigned long long)m->target_scl,
            m->adopted ? "" : "  (the writer has not adopted it yet)");
  }
  for (size_t i = 0; i < st->n_nodes; i++)
    if (st->nodes[i]->state[0])
      fprintf(f, "  node %s: %s\n", st->nodes[i]->id, st->nodes[i]->state);
  if (st->n_mttr_ms) {
    fprintf(f, "  time to repair (a node lost to its last segment moved):");
    for (size_t i = 0; i < st->n_mttr_ms; i++)
      fprintf(f, " %llu ms", (unsigned long long)st->mttr_ms[i]);
    fputc('\n', f);
  }
}
