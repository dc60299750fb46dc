/*
 * roguecheck.c: what the rogue member's requests changed (rogue.c is the
 * attacker; rogue.h their shared state). Every request it sends reaches
 * the coordinator or a node through rogue_coord_msg / rogue_node_msg
 * (world.c hands them over), which look at what the request could change,
 * let the core handle it, and look again. The rules each look checks
 * (invariant 9 of DESIGN.md §4: authority follows roles, not the key):
 *   R1  no writer epoch to a member: no volume's epoch moves, no volume is
 *       made with it as its writer (coord/roles.c);
 *   R2  no volume dropped, no lab fault changed, no replica chosen;
 *   R4  the writer's proof of life (failover's `heard`, fo_peek) and its
 *       engine report stay as they were: a lost writer is still lost;
 *   beats: an address whose replica beat within WRITER_LOST_MS keeps the
 *       key it beats with (coord/failover.c on_beat);
 *   9   no node installs a truncation the rogue forged, nor an old
 *       writer's that starts below a VDL the segment heard from an older
 *       epoch or below the range of its own epoch the segment holds (from
 *       its GC point up, as node/segment.c seg_trunc_ok), nor takes an
 *       epoch the coordinator never issued.
 * A request that took effect within the rules (an old truncation inside
 * the bound, a beat for an address no replica holds) is counted as taken.
 */
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "sim/rogue.h"

const Auralog__Volume *rogue_coord_vol(const struct world *w)
{
  for (size_t i = 0; w->co && i < w->co->nvols; i++)
    if (strcmp(w->co->vols[i]->name, VOLUME_NAME) == 0)
      return w->co->vols[i];
  return NULL;
}

struct attack *rogue_attack(struct rogue *rg, uint64_t req)
{
  for (int i = 0; i < ROGUE_INFLIGHT; i++)
    if (rg->at[i].used && rg->at[i].req == req)
      return &rg->at[i];
  return NULL;
}

int rogue_from(const struct world *w, struct ep *e)
{
  return w->rogue && strcmp(simnet_ep_peer(e), ROGUE_ADDR) == 0;
}

struct coord_look {
  uint64_t epoch;
  size_t nvols;
  int fo;
  struct fo_peek peek;
  unsigned long long report_at;
  unsigned faults;
};

static void coord_look(struct world *w, const char *rep_addr, struct coord_look *l)
{
  struct coord *co = w->co;
  memset(l, 0, sizeof *l);
  const Auralog__Volume *v = rogue_coord_vol(w);
  l->epoch = v ? v->epoch : 0;
  l->nvols = co->nvols;
  l->fo = fo_peek(co, VOLUME_NAME, rep_addr, &l->peek);
  for (size_t i = 0; i < co->nvols; i++)
    if (co->vols[i] == v)
      l->report_at = co->engines[i].at;
  for (size_t i = 0; i < co->nnodes; i++) {
    const Auralog__NodeInfo *in = co->nodes[i]->info;
    l->faults = l->faults * 31 + (unsigned)in->partitioned + 2u * in->stale +
                4u * in->no_gossip + 8u * in->slow_ms;
  }
}

void rogue_coord_msg(struct world *w, struct ep *e, const Env *env)
{
  struct rogue *rg = w->rogue;
  struct attack *a = rogue_attack(rg, env->req);
  const char *rep_addr = env->body_case == AURALOG__ENVELOPE__BODY_REPLICA_BEAT
                         ? env->replica_beat->addr : NULL;
  struct coord_look b, f;
  coord_look(w, rep_addr, &b);
  coord_on_msg(w->co, e, env);
  if (w->co == NULL || a == NULL)
    return;
  coord_look(w, rep_addr, &f);
  a->arrived = 1;
  const char *what = rogue_names[a->kind];
  /* R1 */
  if (f.epoch != b.epoch)
    violation(w, "the rogue member's %s moved volume %s from epoch %llu to %llu (invariant 9, "
              "roles.c R1)", what, VOLUME_NAME, (unsigned long long)b.epoch,
              (unsigned long long)f.epoch);
  for (size_t i = b.nvols; i < f.nvols && !w->stop; i++)
    if (w->co->vols[i]->epoch)
      violation(w, "the rogue member's %s created volume %s with itself as its writer (epoch "
                "%llu; invariant 9, roles.c R1)", what, w->co->vols[i]->name,
                (unsigned long long)w->co->vols[i]->epoch);
  /* R2 */
  if (f.nvols < b.nvols)
    violation(w, "the rogue member's %s dropped a volume (invariant 9, roles.c R2)", what);
  if (f.faults != b.faults)
    violation(w, "the rogue member's %s changed a node's lab faults (roles.c R2)", what);
  if (strcmp(f.peek.promoting, b.peek.promoting) != 0)
    violation(w, "the rogue member's %s made the coordinator choose '%s' for promotion "
              "(roles.c R2)", what, f.peek.promoting);
  /* R4: a lost writer must still be found lost. */
  if (f.peek.heard != b.peek.heard && b.fo)
    violation(w, "the rogue member's %s counted as the writer's proof of life (roles.c R4): "
              "a lost writer would not be detected", what);
  if (f.report_at != b.report_at)
    violation(w, "the rogue member's %s counted as the writer's report (roles.c R4)", what);
  /* Beats: an address keeps its key while its replica beats. */
  if (rep_addr && f.peek.rep_known &&
      memcmp(f.peek.rep_pk, rg->self.pk, AUTH_PK_BYTES) == 0 &&
      !(b.peek.rep_known && memcmp(b.peek.rep_pk, rg->self.pk, AUTH_PK_BYTES) == 0)) {
    a->effect = 1;           /* it took the place: allowed only if no one held it */
    if (b.peek.rep_known && b.peek.rep_heard &&
        io_now(w->co->io) - b.peek.rep_heard <= WRITER_LOST_MS)
      violation(w, "the rogue member's beat took replica %s's place while it beats (heard "
                "%llu ms before; coord/failover.c)", rep_addr,
                io_now(w->co->io) - b.peek.rep_heard);
  }
}

/* The truncations a message to a node carries. */
static size_t truncs_of(const Env *env, const Auralog__TruncRange *out[2], uint64_t *vol,
                        uint32_t *pg)
{
  size_t n = 0;
  switch (env->body_case) {
  case AURALOG__ENVELOPE__BODY_APPEND:
    *vol = env->append->volume_id;
    *pg = env->append->pg;
    for (size_t i = 0; i < env->append->n_before && n < 1; i++)
      out[n++] = env->append->before[i];
    if (env->append->trunc)
      out[n++] = env->append->trunc;
    break;
  case AURALOG__ENVELOPE__BODY_SEG_QUERY:
    *vol = env->seg_query->volume_id;
    *pg = env->seg_query->pg;
    for (size_t i = 0; i < env->seg_query->n_truncs && n < 2; i++)
      out[n++] = env->seg_query->truncs[i];
    break;
  case AURALOG__ENVELOPE__BODY_GOSSIP_PUSH:
    *vol = env->gossip_push->volume_id;
    *pg = env->gossip_push->pg;
    for (size_t i = 0; i < env->gossip_push->n_truncs && n < 2; i++)
      out[n++] = env->gossip_push->truncs[i];
    break;
  default:
    break;
  }
  return n;
}

static int held(const struct segment *s, uint64_t epoch, uint64_t from, uint64_t to)
{
  for (size_t j = 0; j < s->ntruncs; j++)
    if (s->truncs[j].epoch == epoch && s->truncs[j].from == from && s->truncs[j].to == to)
      return 1;
  return 0;
}

void rogue_node_msg(struct simnode *sn, struct ep *e, const Env *env)
{
  struct world *w = sn->w;
  struct rogue *rg = w->rogue;
  struct attack *a = rogue_attack(rg, env->req);
  struct node *n = sn->n;
  /* What the segment held, and the bound it had, before. */
  const Auralog__TruncRange *tr[2];
  struct { uint64_t epoch, from, to; } t[2];
  uint64_t vol = 0, heard[2] = {0, 0}, floor[2] = {0, 0}, gc = 0, ep0 = 0;
  uint32_t pg = 0;
  int had[2] = {0, 0}, forged[2] = {0, 0};
  size_t nt = truncs_of(env, tr, &vol, &pg);
  Auralog__TruncRange one;   /* a Truncate's range and key, as the others' */
  if (env->body_case == AURALOG__ENVELOPE__BODY_TRUNCATE) {
    auralog__trunc_range__init(&one);
    one.epoch = env->truncate->epoch;
    one.from = env->truncate->from;
    one.to = env->truncate->to;
    if (env->truncate->ticket)
      one.writer_pk = env->truncate->ticket->writer_pk;
    tr[0] = &one;
    nt = 1;
    vol = env->truncate->volume_id;
    pg = env->truncate->pg;
  }
  struct segment *s = node_find_seg(n, vol, pg);
  for (size_t i = 0; s && i < nt; i++) {
    t[i].epoch = tr[i]->epoch;
    t[i].from = tr[i]->from;
    t[i].to = tr[i]->to;
    had[i] = held(s, t[i].epoch, t[i].from, t[i].to);
    heard[i] = seg_heard_below(s, t[i].epoch, NULL);
    for (size_t j = 0; j < s->ntruncs; j++)   /* its own epoch's range held (B3) */
      if (s->truncs[j].epoch == t[i].epoch && s->truncs[j].from > floor[i])
        floor[i] = s->truncs[j].from;
    forged[i] = tr[i]->writer_pk.len == AUTH_PK_BYTES &&
                memcmp(tr[i]->writer_pk.data, rg->self.pk, AUTH_PK_BYTES) == 0;
  }
  if (s) {
    gc = s->gc_lsn;
    ep0 = s->epoch;
  }
  node_on_msg(n, e, env);
  if (a == NULL)
    return;
  a->arrived = 1;
  if (sn->n == NULL || (s = node_find_seg(sn->n, vol, pg)) == NULL)
    return;
  /* 9: a forged epoch never takes. */
  const Auralog__Volume *v = rogue_coord_vol(w);
  uint64_t issued = v && v->epoch > w->max_issued ? v->epoch : w->max_issued;
  if (s->epoch > ep0 && s->epoch > issued)
    violation(w, "node %s pg %u took epoch %llu from the rogue member, an epoch the "
              "coordinator never issued (newest %llu)", sn->id, pg,
              (unsigned long long)s->epoch, (unsigned long long)issued);
  for (size_t i = 0; i < nt && !w->stop; i++) {
    if (had[i] || !held(s, t[i].epoch, t[i].from, t[i].to))
      continue;
    a->effect = 1;
    world_trace(w, "node %s pg %u installed the rogue member's truncation (%llu, %llu] of "
                "epoch %llu (it heard %llu from older epochs; gc %llu)", sn->id, pg,
                (unsigned long long)t[i].from, (unsigned long long)t[i].to,
                (unsigned long long)t[i].epoch, (unsigned long long)heard[i],
                (unsigned long long)gc);
    /* 9: no truncation but its epoch's writer's ... */
    if (forged[i])
      violation(w, "node %s pg %u installed the rogue member's forged truncation (%llu, %llu] "
                "of epoch %llu (invariant 9: a truncation needs its writer's signature)",
                sn->id, pg, (unsigned long long)t[i].from, (unsigned long long)t[i].to,
                (unsigned long long)t[i].epoch);
    /* ... never below a VDL the segment heard from an older epoch, nor
     * below the range of its own epoch it held. */
    uint64_t start = t[i].from > gc ? t[i].from : gc;
    if (start < floor[i])
      violation(w, "node %s pg %u installed the rogue member's truncation (%llu, %llu] of old "
                "epoch %llu, below the range of that epoch it held (from %llu; invariant 9, "
                "node/segment.c seg_trunc_ok B3)", sn->id, pg, (unsigned long long)t[i].from,
                (unsigned long long)t[i].to, (unsigned long long)t[i].epoch,
                (unsigned long long)floor[i]);
    if (start < heard[i])
      violation(w, "node %s pg %u installed the rogue member's truncation (%llu, %llu] of old "
                "epoch %llu, below the VDL %llu it heard from an older epoch (invariant 9, "
                "node/segment.c seg_trunc_ok)", sn->id, pg, (unsigned long long)t[i].from,
                (unsigned long long)t[i].to, (unsigned long long)t[i].epoch,
                (unsigned long long)heard[i]);
  }
}

