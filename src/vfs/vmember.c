/*
 * vmember.c: the writer's view of its PGs' membership (member.h; Verbitski
 * et al. 2018, "membership changes"; paper §2.2 for repair): which node
 * holds each segment slot of each PG, taken from the coordinator's volume
 * description at open (vol_adopt) and changed, while the writer serves,
 * by what its lease probe learns (vcore_on_membership, M4).
 *
 * Interface (volume_int.h): vol_adopt, vcore_node_index,
 * vcore_on_membership, vcore_on_members, vcore_probe_fill,
 * vcore_probe_free. A pure core like vcore.c: no I/O of its own, called
 * with the driver's lock held, on the I/O thread for the events that send
 * (the real driver queues a probe's answer for it: volume.c vol_members).
 *
 * How a change reaches the writer (M4): every lease probe carries the
 * membership sequence the writer has applied (Volume.mseq) and, for each
 * PG in transition, the mepoch it uses and since which VCL (adopted_at);
 * the coordinator answers with the PGs changed since that mseq, each in
 * full. The coordinator finishes a change (the next segment G replaces F)
 * only once this writer reported a mepoch with G since X and G's SCL
 * reached X: every record made durable before (counted on F alone) is
 * then on G too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "lib/log.h"
#include "member.h"
#include "net/wire.h"
#include "param.h"
#include "vfs/quorum.h"
#include "vfs/volume_int.h"

int vcore_node_index(struct volume *v, const char *addr, const char *id)
{
  for (size_t i = 0; i < v->nnodes; i++)
    if (strcmp(v->nodes[i].addr, addr) == 0) {
      if (id && id[0])
        snprintf(v->nodes[i].id, sizeof v->nodes[i].id, "%s", id);
      return (int)i;
    }
  struct vnode *nn = realloc(v->nodes, (v->nnodes + 1) * sizeof *v->nodes);
  if (nn == NULL)
    abort();                  /* the writer cannot go on without its state */
  v->nodes = nn;
  struct vnode *n = &v->nodes[v->nnodes];
  memset(n, 0, sizeof *n);
  snprintf(n->addr, sizeof n->addr, "%s", addr);
  if (id)
    snprintf(n->id, sizeof n->id, "%s", id);
  n->v = v;
  /* Conns, in-flight Appends and reads name their vnode by index, so the
   * array may move. */
  return (int)v->nnodes++;
}

/* The slot of the j-th segment of a Pg (member.h): the NCOPIES current
 * ones in position order, then the next ones, at NCOPIES + their pos. */
static int slot_of(const Auralog__Pg *pg, size_t j)
{
  return j < NCOPIES ? (int)j : NCOPIES + (int)pg->segments[j]->pos;
}

/* A PG's slots as the description says, for a PG the writer did not
 * hold: nothing sent, nothing acknowledged. */
static void pg_setup(struct volume *v, struct pgout *g, const Auralog__Pg *pg)
{
  memset(g, 0, sizeof *g);
  for (int s = 0; s < NSLOTS; s++)
    g->node[s] = -1;
  for (size_t j = 0; j < pg->n_segments && j < NSLOTS; j++) {
    const Auralog__Segment *seg = pg->segments[j];
    if (j >= NCOPIES && (!seg->next || seg->pos >= NCOPIES))
      continue;               /* (wire_check_pg refuses it) */
    int s = slot_of(pg, j);
    g->node[s] = vcore_node_index(v, seg->addr, seg->node);
    if (s >= NCOPIES)
      g->trans |= (uint8_t)(1u << (s - NCOPIES));
  }
  g->mepoch = pg->mepoch;
  /* Recovery sets it from the VDL it proves (open.c finish, M4: a new
   * writer's X); a PG added later holds no record yet. */
  g->adopted_at = 0;
}

/* Adopt a volume description: PGs we did not know get their pgout, with
 * their current and next segments (a PG we hold changes only through
 * vcore_on_membership, on the I/O thread). The description passed
 * wire_check (wire_check_pg) on its way in. */
void vol_adopt(struct volume *v, const Auralog__Volume *vd)
{
  /* Room for every PG number (volume_int.h): untouched entries cost no
   * memory (calloc's pages stay unmapped until written). */
  if (v->pgs == NULL && (v->pgs = calloc(MAX_PGS + 1, sizeof *v->pgs)) == NULL)
    abort();
  if (vd->binlog && vd->binlog->n_segments && !v->has_binlog) {
    pg_setup(v, &v->pgs[BINLOG_PG], vd->binlog);
    v->has_binlog = 1;
    if (v->pgs[BINLOG_PG].trans) {   /* a move under way: as a data PG's below */
      v->ntrans++;
      if (v->opened)
        q_set_trans(&v->q, BINLOG_PG, v->pgs[BINLOG_PG].trans);
    }
  }
  if (vd->n_pgs <= v->npgs)
    return;
  for (size_t p = v->npgs; p < vd->n_pgs; p++) {
    pg_setup(v, &v->pgs[p], vd->pgs[p]);
    if (v->pgs[p].trans) {
      v->ntrans++;
      /* Before recovery the quorum is not set up yet (open.c finish sets
       * every PG's mask). After, a new PG holds no record and the head of
       * the quorum's ring is never at quorum: this cannot move the VDL
       * (no I/O here). */
      if (v->opened)
        q_set_trans(&v->q, (uint32_t)p, v->pgs[p].trans);
    }
  }
  v->npgs = vd->n_pgs;
}

/* Does old slot s of g hold the segment seg names (the same node)? */
static int same_node(const struct volume *v, const struct pgout *g, int s,
                     const Auralog__Segment *seg)
{
  if (g->node[s] < 0)
    return 0;
  const struct vnode *n = &v->nodes[g->node[s]];
  return n->id[0] ? strcmp(n->id, seg->node) == 0 : strcmp(n->addr, seg->addr) == 0;
}

int vcore_on_membership(struct volume *v, const Auralog__Pg *pg)
{
  char why[200];
  if (v->rcv || !(pg->pg < v->npgs || (pg->pg == BINLOG_PG && v->has_binlog)))
    return 0;                 /* recovery uses the open's; a PG not adopted yet comes whole */
  struct pgout *g = &v->pgs[pg->pg];
  if (pg->mepoch <= g->mepoch)
    return 0;                 /* known already (or older: answers may cross) */
  if (wire_check_pg(pg, why, sizeof why) != ERR_NONE) {
    logwarn("volume %s: a membership change refused: %s", v->name, why);
    return -1;
  }
  /* The new slots, and where each old slot's segment goes (by node). */
  const Auralog__Segment *segs[NSLOTS] = {0};
  for (size_t j = 0; j < pg->n_segments; j++)
    segs[slot_of(pg, j)] = pg->segments[j];
  for (int p = 0; PLANTED(BUG_NEXT_ONLY) && p < NCOPIES; p++)
    if (segs[NCOPIES + p]) {
      segs[p] = segs[NCOPIES + p];
      segs[NCOPIES + p] = NULL;
    }
  int map[NSLOTS], from[NSLOTS];
  for (int s = 0; s < NSLOTS; s++)
    map[s] = from[s] = -1;
  for (int t = 0; t < NSLOTS; t++)
    for (int s = 0; s < NSLOTS && segs[t]; s++)
      if (same_node(v, g, s, segs[t])) {
        map[s] = t;
        from[t] = s;
        break;
      }
  struct pgout old = *g;
  uint8_t trans = 0;
  g->resend = g->has_epoch = 0;
  for (int t = 0; t < NSLOTS; t++) {
    int s = from[t];
    if (segs[t] == NULL) {
      g->node[t] = -1;
    } else {
      /* May move v->nodes: no vnode pointer is held here. */
      g->node[t] = vcore_node_index(v, segs[t]->addr, segs[t]->node);
      if (t >= NCOPIES)
        trans |= (uint8_t)(1u << (t - NCOPIES));
    }
    if (s >= NCOPIES && t < NCOPIES) {
      /* A next segment made current (a finish): its acknowledgements of
       * single records were not counted (M2) and are not kept; it gets
       * the pending records again, and now each ack counts. */
      g->resend |= (uint16_t)(1u << t);
    }
    if (s >= 0) {             /* the same segment: what it holds stays */
      g->sent[t] = old.sent[s];
      g->scl[t] = old.scl[s];
      g->refused[t] = old.refused[s];
      g->retry_at[t] = old.retry_at[s];
      g->resend |= (uint16_t)(((old.resend >> s) & 1u) << t);
      g->has_epoch |= (uint16_t)(((old.has_epoch >> s) & 1u) << t);
      g->heard_vdl[t] = old.heard_vdl[s];
    } else {                  /* new (or none): every record not yet freed goes to it */
      g->sent[t] = g->head;
      g->scl[t] = 0;
      g->heard_vdl[t] = 0;
      g->refused[t] = 0;
      g->retry_at[t] = 0;
    }
  }
  for (int s = 0; s < NSLOTS; s++)
    if (map[s] < 0 && old.node[s] >= 0 && old.refused[s] >= 3 && v->refusing > 0)
      v->refusing--;          /* a refusing segment that left */
  for (unsigned k = 0; k < TAIL_PER_PG; k++) {
    uint16_t a = 0;
    for (int s = 0; s < NSLOTS; s++)
      if ((old.ring_acks[k] & (1u << s)) && map[s] >= 0)
        a |= (uint16_t)(1u << map[s]);
    g->ring_acks[k] = a;
  }
  /* Appends in flight: to a segment that stays, under its new slot; to
   * one that left, forgotten (its ack would name a slot that is no more). */
  for (size_t i = 0; i < v->nfl;) {
    struct inflight *f = &v->fl[i];
    if (f->pg != pg->pg) {
      i++;
    } else if (map[f->slot] < 0) {
      vcore_fl_drop(v, i);
    } else {
      f->slot = map[f->slot];
      i++;
    }
  }
  /* Reads name slots they tried: the numbering changed. */
  for (struct readreq *r = v->reads; r; r = r->next)
    if (r->pg == pg->pg)
      r->tried = 0;
  if (!old.trans != !trans)
    v->ntrans += trans ? 1 : (size_t)-1;
  g->trans = trans;
  g->mepoch = pg->mepoch;
  /* M4 (a): from here on this writer counts every record above its VCL
   * under the new membership (the coordinator hears it from the probe).
   * X is per PG, as SCLs are: the PG's last record handed out now, at or
   * above its last one at or below the VCL (those above are still held
   * here and go to the new slot too, so its SCL can reach X). An idle
   * PG's segments never pass their own last record: the volume's VCL
   * would be out of their reach. */
  g->adopted_at = g->tail;
  /* The quorum: acks follow their segments, then the new mask (in between
   * the state is stricter than either, never looser). M1. */
  uint64_t old_vdl = v->q.vdl;
  q_remap(&v->q, pg->pg, map);
  q_set_trans(&v->q, pg->pg, trans);
  if (g->head < g->n)
    vcore_busy(v, pg->pg);
  vcore_advance(v, old_vdl);
  loginfo("volume %s pg %u: membership epoch %llu (%d position%s in transition)", v->name,
          pg->pg, (unsigned long long)pg->mepoch, __builtin_popcount(trans),
          __builtin_popcount(trans) == 1 ? "" : "s");
  return 1;
}

void vcore_on_members(struct volume *v, const Auralog__Volume *ans)
{
  if (v->rcv || !v->opened)
    return;                   /* the next probe asks again from the same mseq */
  int changed = 0;
  for (size_t i = 0; i < ans->n_pgs; i++)
    changed |= vcore_on_membership(v, ans->pgs[i]) > 0;
  if (ans->binlog)            /* the binlog PG's change (coord/member.c member_probe) */
    changed |= vcore_on_membership(v, ans->binlog) > 0;
  if (ans->mseq > v->mseq)
    v->mseq = ans->mseq;
  if (changed) {
    vcore_connect(v);         /* new nodes */
    vcore_flush(v);           /* new next segments get the PG's records */
  }
}

void vcore_probe_fill(const struct volume *v, Auralog__Volume *vh)
{
  vh->mseq = v->mseq;
  vh->pgs = NULL;
  vh->n_pgs = 0;
  vh->binlog = NULL;
  if (v->ntrans == 0)
    return;
  /* Each PG in transition: the data PGs' in pgs, the binlog PG's in
   * binlog (wire.c: a Volume's pgs are data PGs). One block of items
   * (vcore_probe_free), the binlog PG's last. */
  Auralog__Pg *items = calloc(v->ntrans, sizeof *items);
  Auralog__Pg **ptrs = calloc(v->ntrans, sizeof *ptrs);
  if (items == NULL || ptrs == NULL)
    abort();
  size_t n = 0;
  for (size_t x = 0; x < vol_npgs_all(v) && n < v->ntrans; x++) {
    uint32_t p = vol_pg_at(v, x);
    const struct pgout *g = &v->pgs[p];
    if (!g->trans)
      continue;
    auralog__pg__init(&items[n]);
    items[n].pg = p;
    items[n].mepoch = g->mepoch;
    items[n].adopted_at = g->adopted_at;
    if (p == BINLOG_PG)
      vh->binlog = &items[n];
    else
      ptrs[vh->n_pgs++] = &items[n];
    n++;
  }
  if (n == 0) {
    free(items);
    free(ptrs);
    return;
  }
  vh->pgs = ptrs;
  vh->pg_pages = v->pg_pages;   /* (a Volume with PGs names its geometry) */
}

void vcore_probe_free(Auralog__Volume *vh)
{
  /* The items are one block: it starts at the first data PG's, or at the
   * binlog PG's if it is the only one. */
  if (vh->n_pgs)
    free(vh->pgs[0]);
  else
    free(vh->binlog);
  free(vh->pgs);
  vh->pgs = NULL;
  vh->n_pgs = 0;
  vh->binlog = NULL;
}
