/*
 * member.c: PG membership in the simulated world (member.h; paper §2.2-2.3,
 * Verbitski et al. 2018; DESIGN.md invariant 10).
 *
 * The world has a spare node in each AZ (world.h SIM_SPARES), started once
 * the volume is placed, so that it hosts nothing until a repair moves a
 * segment onto it. The coordinator repairs a node silent for
 * SIM_REPAIR_AFTER_MS (its core's rule M7): node crashes often last longer,
 * so repairs start, finish, race recoveries and failovers, and replaced
 * nodes come back with their old segments; the node-lost fault
 * (nemesis.c) takes a node for good, whose segments must move.
 *
 * What is checked here, after every event (member_step) and at the end:
 *   - the coordinator's stored membership is well formed (wire_check_pg:
 *     NCOPIES current segments, at most one next per position, in its AZ,
 *     distinct nodes) and each PG's mepoch only grows, mepoch_min <= mepoch;
 *   - DURABLE COPIES: at every change of a PG's membership, every record
 *     of an acknowledged (or kept) transaction in that PG is held by at
 *     least Vw of the PG's current segments (M1: a position counts only if
 *     its current segment holds the record; M4: a next segment becomes
 *     current only holding every record made durable without it). A
 *     current segment whose node is down is taken to hold what it held (a
 *     crash loses nothing synced), and one lost for good likewise: its
 *     copies are the fault's, charged to the fault model, not the
 *     protocol. A planted bug that counts a segment outside the
 *     membership (a next one before it is hydrated, the new configuration
 *     alone, a finish too early) leaves a record on fewer;
 *   - after the final heal, every PG is back to NCOPIES current segments,
 *     none next, on nodes that are up (M7).
 * In --binlog runs the binlog PG (BINLOG_PG, coord/cbinlog.c) is one of
 * them, at index SIM_PGS of the world's membership arrays (mpg_k): its
 * changes are checked as a data PG's (a transaction's binlog record is its
 * CPL, on Vw current binlog segments once durable), it must be repaired
 * and back to six healthy members after the heal, the fault model counts
 * it, and its changes are counted apart (sim_result.mb_bl_*).
 * The fault model (nemesis.c within_model) counts by the current
 * membership: at most an AZ and one more node's worth of each PG's
 * current segments unavailable at once.
 */
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"
#include "member.h"
#include "net/wire.h"
#include "node/node.h"
#include "sim/simint.h"

int sim_node_az(int i)
{
  return i < SIM_BASE_NODES ? i / COPIES_PER_AZ : i - SIM_BASE_NODES;
}

static int node_index(const struct world *w, const char *id)
{
  for (int i = 0; i < SIM_NODES; i++)
    if (strcmp(w->nodes[i].id, id) == 0)
      return i;
  return -1;
}

/* The index of PG pg in the world's membership arrays (pg_members,
 * pg_mepoch): a data PG's own number, the binlog PG's SIM_PGS; -1: none. */
static int mpg_k(uint32_t pg)
{
  return pg < SIM_PGS ? (int)pg : pg == BINLOG_PG ? SIM_PGS : -1;
}

/* How many PGs membership covers in this run: the data PGs, and the
 * binlog PG in --binlog runs. */
static int mpg_n(const struct world *w)
{
  return SIM_PGS + (w->o.binlog != 0);
}

/* The PG of index k (mpg_k) as v stores it (NULL: not placed). */
static const Auralog__Pg *stored_pg(const Auralog__Volume *v, int k)
{
  if (k < SIM_PGS)
    return (size_t)k < v->n_pgs ? v->pgs[k] : NULL;
  return v->binlog;
}

unsigned member_pg_nodes(const struct world *w, int pg)
{
  int k = pg < 0 ? -1 : mpg_k((uint32_t)pg);
  if (!w->members_known || k < 0 || w->pg_members[k] == 0)
    return (1u << SIM_BASE_NODES) - 1;   /* before placement: every base node */
  return w->pg_members[k];
}

/* The simulated volume as the coordinator stores it now (NULL: down, or
 * not created yet). */
static const Auralog__Volume *stored(const struct world *w)
{
  if (w->co == NULL)
    return NULL;
  for (size_t v = 0; v < w->co->nvols; v++)
    if (strcmp(w->co->vols[v]->name, "sim") == 0)
      return w->co->vols[v];
  return NULL;
}

void member_spares_boot(struct world *w)
{
  if (w->spares_up)
    return;
  w->spares_up = 1;
  for (int i = SIM_BASE_NODES; i < SIM_NODES; i++)
    if (!w->nodes[i].down_by)
      node_restart(&w->nodes[i]);
}

/* Does up node sn hold record lsn of pg (in its chain, or freed into a
 * page version at or above it)? */
static int up_holds(struct simnode *sn, uint32_t pg, uint64_t lsn)
{
  for (size_t k = 0; k < sn->n->nsegs; k++) {
    struct segment *s = sn->n->segs[k];
    if (s->pg != pg)
      continue;
    if (lsn <= s->gc_lsn)
      return 1;
    uint64_t ep = 0;
    return store_held(&sn->n->st, s, lsn, &ep);
  }
  return 0;                  /* it does not host the PG */
}

/* Node sn goes down (a crash, or lost for good): note what it holds of
 * every transaction's records. Down, it holds what it held then: a crash
 * loses nothing it acknowledged (synced), and a lost node's copies are
 * the fault's. Nothing newer: it hears nothing while down. */
void member_node_down(struct simnode *sn)
{
  struct world *w = sn->w;
  if (sn->n == NULL)
    return;
  free(sn->held);
  sn->nheld = w->ntxs;
  sn->held = calloc(sn->nheld + 1, 1);
  for (size_t t = 0; t < sn->nheld; t++)
    for (uint32_t j = 0; j < w->txs[t].npg; j++)
      if (up_holds(sn, w->txs[t].pg[j], w->txs[t].last[j]))
        sn->held[t] |= (uint8_t)(1u << j);
}

static int holds(struct world *w, int i, size_t t, uint32_t j)
{
  struct simnode *sn = &w->nodes[i];
  if (sn->n)
    return up_holds(sn, w->txs[t].pg[j], w->txs[t].last[j]);
  return t < sn->nheld && (sn->held[t] & (1u << j));
}

/* Transaction t's records in PG pg (-1: every PG it touched): each on
 * Vw current segments of its PG (member.h M1-M4). */
static void check_tx_pg(struct world *w, size_t t, int pg)
{
  const struct txrec *x = &w->txs[t];
  if (x->state != TX_ACKED && x->state != TX_KEPT)
    return;
  for (uint32_t j = 0; j < x->npg && !w->stop; j++) {
    if (pg >= 0 && (int)x->pg[j] != pg)
      continue;
    unsigned cur = member_pg_nodes(w, (int)x->pg[j]);
    int n = 0;
    char who[64] = "";
    for (int i = 0; i < SIM_NODES; i++)
      if (cur & (1u << i)) {
        if (holds(w, i, t, j))
          n++;
        else if (strlen(who) + 8 < sizeof who)
          strcat(strcat(who, " "), w->nodes[i].id);
      }
    if (n < VW)
      violation(w, "pg %u (mepoch %llu): record %llu of %s commit %llu is on %d current "
                "segments, fewer than a write quorum of %d (missing on%s): it was "
                "counted durable without a write quorum of the PG's membership (member.h "
                "M1-M4)", x->pg[j],
                (unsigned long long)w->pg_mepoch[mpg_k(x->pg[j]) >= 0 ? mpg_k(x->pg[j]) : 0],
                (unsigned long long)x->last[j],
                x->state == TX_ACKED ? "acknowledged" : "kept",
                (unsigned long long)x->cpl, n, VW, who);
  }
}

void member_check_tx(struct world *w, size_t t)
{
  if (w->members_known)
    check_tx_pg(w, t, -1);
}

void member_check_durable(struct world *w, int pg)
{
  w->res->mb_checks++;
  for (size_t t = 0; t < w->ntxs && !w->stop; t++)
    check_tx_pg(w, t, pg);
}

void member_step(struct world *w)
{
  const Auralog__Volume *v = stored(w);
  if (v == NULL || v->n_pgs < SIM_PGS)
    return;
  member_spares_boot(w);     /* placed: the spares host nothing */
  for (int k = 0; k < mpg_n(w) && !w->stop; k++) {
    const Auralog__Pg *p = stored_pg(v, k);
    if (p == NULL)
      continue;              /* (a --binlog run whose writer has not opened with it yet) */
    int pg = (int)p->pg, bl = k == SIM_PGS;
    char why[256];
    if (wire_check_pg(p, why, sizeof why) != ERR_NONE) {
      violation(w, "the coordinator stored a malformed membership: %s", why);
      return;
    }
    int known = w->members_known && w->pg_members[k] != 0;
    if (known && p->mepoch < w->pg_mepoch[k]) {
      violation(w, "pg %d: membership epoch went back from %llu to %llu", pg,
                (unsigned long long)w->pg_mepoch[k], (unsigned long long)p->mepoch);
      return;
    }
    unsigned cur = 0;
    for (size_t s = 0; s < NCOPIES; s++) {
      int i = node_index(w, p->segments[s]->node);
      if (i < 0) {
        violation(w, "pg %d: a segment on unknown node %s", pg, p->segments[s]->node);
        return;
      }
      cur |= 1u << i;
    }
    if (known && p->mepoch == w->pg_mepoch[k])
      continue;
    int finish = known && cur != w->pg_members[k];
    if (known) {
      w->res->mb_changes++;
      w->res->mb_finishes += finish;
      w->res->mb_bl_changes += bl;
      w->res->mb_bl_finishes += bl && finish;
      world_trace(w, "pg %d membership epoch %llu: %zu segments%s", pg,
                  (unsigned long long)p->mepoch, p->n_segments,
                  finish ? " (a next segment became current)" : "");
    }
    w->pg_members[k] = cur;
    w->pg_mepoch[k] = p->mepoch;
    if (known && finish)
      member_check_durable(w, pg);
  }
  w->members_known = 1;
}

void member_end(struct world *w)
{
  const Auralog__Volume *v = stored(w);
  if (w->stop || v == NULL)
    return;
  for (int k = 0; k < mpg_n(w) && !w->stop; k++) {
    const Auralog__Pg *p = stored_pg(v, k);
    if (p == NULL) {
      if (k == SIM_PGS && w->pg_members[k])
        violation(w, "the binlog PG the coordinator placed is gone from the volume");
      continue;
    }
    int pg = (int)p->pg;
    member_check_durable(w, pg);
    if (p->n_segments != NCOPIES) {
      violation(w, "liveness: pg %d still has %zu segments (a change in flight) %d ms after "
                "the final heal settled", pg, p->n_segments, SIM_SETTLE_MS);
      return;
    }
    for (size_t s = 0; s < NCOPIES; s++) {
      int i = node_index(w, p->segments[s]->node);
      if (i < 0 || w->nodes[i].n == NULL) {
        violation(w, "liveness: pg %d keeps a segment on node %s, which is %s after the "
                  "final heal: it was never repaired", pg, p->segments[s]->node,
                  i >= 0 && w->nodes[i].lost ? "lost" : "down");
        return;
      }
    }
  }
}
