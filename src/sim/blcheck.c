/*
 * blcheck.c: the simulator's check of the enhanced binlog (--binlog;
 * vfs/ship.c B1), at the end of a run, after the final heal.
 *
 * In a --binlog run the volume has a binlog PG, and every transaction the
 * workload ships carries, as its MTR's CPL, a binlog record whose events
 * name the transaction (its index in the shadow model, workload.c). The
 * faults do to those records what they do to any: drops, duplicates,
 * reorders, crashes mid-commit, recoveries that truncate, interrupted
 * recoveries, old writers, rogue members.
 *
 * What must hold on every binlog segment, up to the end it vouches for
 * (node/nbinlog.c D1), which is what a consumer reads:
 *   BL1. every record names a transaction the shadow knows, at that
 *        transaction's own commit LSN, and one no recovery truncated;
 *   BL2. every acknowledged (or kept) transaction at or below that end has
 *        exactly one record: none lost, none twice.
 * So a consumer sees every durable commit's events once, in commit order,
 * and never a truncated commit's.
 */
#include <stdlib.h>
#include <string.h>

#include "node/node.h"
#include "node/nbinlog.h"
#include "node/store_int.h"
#include "sim/simint.h"

static void check_seg(struct world *w, struct simnode *sn, struct segment *s, uint64_t vdl)
{
  /* What a consumer reads of it (node/nbinlog.c D1), at most the VDL. */
  uint64_t end = nbl_durable(sn->n, s), after = s->gc_lsn;
  if (end > vdl)
    end = vdl;
  uint8_t *seen = calloc(w->ntxs + 1, 1);
  int more = 1;
  while (more && !w->stop) {
    Rec **recs = NULL;
    long n = store_above(&sn->n->st, s, after, &recs, 4096, &more);
    if (n <= 0) {
      free(recs);
      break;
    }
    for (long i = 0; i < n && !w->stop; i++) {
      const Rec *r = recs[i];
      after = r->lsn;
      if (r->lsn > end)
        continue;
      uint64_t ix = UINT64_MAX;
      if ((r->flags & REC_BINLOG) && r->binlog.len == SIM_BL_LEN &&
          memcmp(r->binlog.data, "simtx", 5) == 0)
        memcpy(&ix, r->binlog.data + 5, sizeof ix);
      if (ix >= w->ntxs || w->txs[ix].cpl != r->lsn)
        violation(w, "node %s binlog: record %llu names no transaction committed at "
                  "%llu (BL1)", sn->id, (unsigned long long)r->lsn,
                  (unsigned long long)r->lsn);
      else if (w->txs[ix].state == TX_TRUNCATED)
        violation(w, "node %s binlog: record %llu holds the events of a transaction a "
                  "recovery truncated (BL1)", sn->id, (unsigned long long)r->lsn);
      else if (seen[ix]++)
        violation(w, "node %s binlog: the events of commit %llu twice (BL2)", sn->id,
                  (unsigned long long)r->lsn);
      w->res->bl_events++;
    }
    for (long i = 0; i < n; i++)
      auralog__record__free_unpacked(recs[i], NULL);
    free(recs);
  }
  for (size_t i = 0; i < w->ntxs && !w->stop; i++) {
    const struct txrec *t = &w->txs[i];
    if ((t->state == TX_ACKED || t->state == TX_KEPT) && t->cpl > s->gc_lsn &&
        t->cpl <= end && !seen[i])
      violation(w, "node %s binlog: commit %llu (%s) is durable, at or below the end %llu "
                "the segment vouches for, but its events are missing (BL2)", sn->id,
                (unsigned long long)t->cpl, t->state == TX_ACKED ? "acknowledged" : "kept",
                (unsigned long long)end);
  }
  free(seen);
  w->res->bl_segments++;
}

void binlog_end(struct world *w, uint64_t vdl)
{
  if (!w->o.binlog)
    return;
  for (int i = 0; i < SIM_NODES && !w->stop; i++) {
    struct simnode *sn = &w->nodes[i];
    if (sn->n == NULL)
      continue;
    for (size_t k = 0; k < sn->n->nsegs && !w->stop; k++)
      if (seg_is_binlog(sn->n->segs[k]))
        check_seg(w, sn, sn->n->segs[k], vdl);
  }
}
