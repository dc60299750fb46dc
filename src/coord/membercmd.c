/*
 * membercmd.c: the operator's node commands (`auralog node drain|replace`,
 * NodeCmd: coord/roles.c makes them the operator's) and the membership
 * part of a Status (moves in flight, the last times to repair), for
 * coord/member.c (memberc.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/member_int.h"
#include "lib/log.h"
#include "param.h"

/* ---- the operator's commands ---------------------------------------------- */

static void reply_cmd(struct coord *co, struct ep *c, uint64_t req, const char *action,
                      struct cnode *n)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__NodeCmd r = AURALOG__NODE_CMD__INIT;
  const struct mdrain *dr = mb_dr_find(co->ms, n->info->id);
  r.action = (char *)action;
  r.node = n->info->id;
  r.to = dr ? (char *)dr->to : "";
  r.left = mb_hosted(co, n->info->id, &r.moving);
  r.total = dr && dr->total > r.left ? dr->total : r.left;
  r.state = n->info->state;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_NODE_CMD;
  env.node_cmd = &r;
  io_send(co->io, c, &env);
}

/* Can every segment of node n move now (to t, if named)? 0, or -1 with
 * why: then nothing is changed. */
static int can_move(struct coord *co, const struct cnode *n, const struct cnode *t,
                    char *why, size_t whylen)
{
  struct pnode *pn = mb_pnodes(co);
  int rc = 0;
  for (size_t vi = 0; vi < co->nvols && rc == 0; vi++)
    for (size_t p = 0; p < coord_vol_npgs_all(co->vols[vi]) && rc == 0; p++) {
      const Auralog__Pg *pg = coord_vol_pg_at(co->vols[vi], p);   /* the binlog PG too */
      const char *taken[NSLOTS];
      int mine = -1;
      for (size_t s = 0; s < pg->n_segments; s++) {
        taken[s] = pg->segments[s]->node;
        if (strcmp(taken[s], n->info->id) == 0)
          mine = (int)s;
      }
      if (mine < 0 || (mine < NCOPIES && mb_next_of(pg, (uint32_t)mine) >= 0))
        continue;
      if (t) {
        for (size_t s = 0; s < pg->n_segments; s++)
          if (strcmp(taken[s], t->info->id) == 0) {
            snprintf(why, whylen, "node %s already hosts a segment of pg %u of volume %s",
                     t->info->id, pg->pg, co->vols[vi]->name);
            rc = -1;
          }
      } else if (place_spare(pn, co->nnodes, n->info->az[0], taken, pg->n_segments) ==
                 co->nnodes) {
        snprintf(why, whylen, "no spare in AZ %s for pg %u of volume %s (each node there is "
                 "down, draining or hosts one of its segments; add one: auralog node add "
                 "--az %s)", n->info->az, pg->pg, co->vols[vi]->name, n->info->az);
        rc = -1;
      }
    }
  free(pn);
  return rc;
}

void member_on_cmd(struct coord *co, struct ep *c, uint64_t req, const Auralog__NodeCmd *nc)
{
  char why[400];
  struct cnode *n = coord_node_find(co, nc->node), *t = NULL;
  if (n == NULL) {
    snprintf(why, sizeof why, "no node %s", nc->node);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return;
  }
  if (strcmp(nc->action, "show") == 0 || strcmp(n->info->state, "retired") == 0) {
    reply_cmd(co, c, req, nc->action, n);
    return;
  }
  int replace = strcmp(nc->action, "replace") == 0;
  if (replace && nc->to[0]) {
    t = coord_node_find(co, nc->to);
    if (t == NULL)
      snprintf(why, sizeof why, "no node %s", nc->to);
    else if (t == n)
      snprintf(why, sizeof why, "node %s cannot replace itself", nc->to);
    else if (strcmp(t->info->az, n->info->az) != 0)
      snprintf(why, sizeof why, "node %s is in AZ %s, node %s in AZ %s: a segment moves "
               "within its AZ", t->info->id, t->info->az, n->info->id, n->info->az);
    else if (!t->info->up)
      snprintf(why, sizeof why, "node %s is down", t->info->id);
    else if (mb_node_out(t))
      snprintf(why, sizeof why, "node %s is %s", t->info->id, t->info->state);
    else
      why[0] = 0;
    if (why[0]) {
      io_error(co->io, c, req, t ? ERR_CONFLICT : ERR_NOT_FOUND, why);
      return;
    }
  }
  if (can_move(co, n, t, why, sizeof why) != 0) {
    io_error(co->io, c, req, ERR_UNAVAILABLE, why);
    return;
  }
  struct mdrain *dr = mb_dr_find(co->ms, n->info->id);
  if (dr == NULL) {
    co->ms->dr = realloc(co->ms->dr, (co->ms->ndr + 1) * sizeof *co->ms->dr);
    dr = &co->ms->dr[co->ms->ndr++];
    memset(dr, 0, sizeof *dr);
    snprintf(dr->node, sizeof dr->node, "%s", n->info->id);
    dr->total = mb_hosted(co, n->info->id, NULL);
  }
  snprintf(dr->kind, sizeof dr->kind, "%s", replace ? "replace" : "drain");
  snprintf(dr->to, sizeof dr->to, "%s", t ? t->info->id : "");
  /* Out of service first (durable): no new segment goes to it, and a
   * restart goes on with the drain. */
  if (!mb_node_out(n))
    mb_set_state(co, n, "draining");
  loginfo("node %s: the operator asked to %s it%s%s", n->info->id, nc->action,
          t ? " to " : "", t ? t->info->id : "");
  co->ms->kick = 1;
  member_tick(co);
  reply_cmd(co, c, req, nc->action, coord_node_find(co, nc->node));
}

/* ---- status --------------------------------------------------------------- */

void member_status(struct coord *co, const Auralog__Volume *v, Auralog__Status *st)
{
  struct mstate *ms = co->ms;
  unsigned long long now = io_now(co->io);
  st->mttr_ms = ms->mttr;
  st->n_mttr_ms = ms->nmttr;
  size_t n = 0, all = coord_vol_npgs_all(v);   /* the binlog PG's moves too, last */
  for (size_t p = 0; p < all; p++)
    n += coord_vol_pg_at(v, p)->n_segments > NCOPIES ? coord_vol_pg_at(v, p)->n_segments - NCOPIES
                                                    : 0;
  if (n == 0)
    return;
  Auralog__MoveStat *m = calloc(n, sizeof *m);
  Auralog__MoveStat **mp = calloc(n, sizeof *mp);
  size_t k = 0;
  for (size_t p = 0; p < all; p++) {
    const Auralog__Pg *pg = coord_vol_pg_at(v, p);
    uint64_t best = 0;
    for (int j = 0; j < NCOPIES; j++) {
      struct cnode *f = coord_node_find(co, pg->segments[j]->node);
      const Auralog__SegStat *ss = f ? coord_seg_stat(f, v->id, pg->pg) : NULL;
      if (ss && ss->scl > best)
        best = ss->scl;
    }
    const struct madopt *ad = mb_ad_find(ms, v->id, pg->pg);
    for (size_t j = NCOPIES; j < pg->n_segments && k < n; j++, k++) {
      const Auralog__Segment *g = pg->segments[j];
      const struct mmove *mv = mb_mv_find(ms, v->id, pg->pg, g->pos);
      struct cnode *gn = coord_node_find(co, g->node);
      const Auralog__SegStat *ss = gn ? coord_seg_stat(gn, v->id, pg->pg) : NULL;
      int adopted = ad && ad->epoch == v->epoch && ad->mepoch >= g->since;
      auralog__move_stat__init(&m[k]);
      m[k].pg = pg->pg;
      m[k].pos = g->pos;
      m[k].from = pg->segments[g->pos < NCOPIES ? g->pos : 0]->node;
      m[k].to = g->node;
      m[k].age_ms = mv ? now - mv->at : 0;
      m[k].scl = ss ? ss->scl : 0;
      m[k].target_scl = adopted ? ad->at : best;
      m[k].kind = mv ? (char *)mv->kind : "repair";
      m[k].adopted = adopted;
      mp[k] = &m[k];
    }
  }
  st->moves = mp;
  st->n_moves = k;
}

void member_status_done(Auralog__Status *st)
{
  if (st->moves) {
    free(st->moves[0]);
    free(st->moves);
  }
  st->moves = NULL;
  st->n_moves = 0;
}
