/*
 * segstats.c: what the coordinator knows of each node's segments (paper
 * §5: membership and health): the stats of its last heartbeats, merged by
 * (volume, pg). A node's heartbeat lists only the segments whose stats
 * changed since it last listed them (a delta), and every HEARTBEAT_FULL-th
 * lists them all (node/node.c send_heartbeat); so the coordinator keeps
 * each segment's last stats, sorted by (volume, pg), replacing what a delta
 * lists and everything at a whole one. Status (coord.c) reads them.
 */
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"

static int stat_cmp(const void *a, const void *b)
{
  const Auralog__SegStat *x = a, *y = b;
  if (x->volume_id != y->volume_id)
    return x->volume_id < y->volume_id ? -1 : 1;
  return x->pg < y->pg ? -1 : x->pg > y->pg;
}

/* Where (vol, pg) is, or would go, in n->stats[0..sorted). */
static size_t stat_pos(const struct cnode *n, size_t sorted, uint64_t vol, uint32_t pg)
{
  size_t lo = 0, hi = sorted;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const Auralog__SegStat *s = &n->stats[mid];
    if (s->volume_id < vol || (s->volume_id == vol && s->pg < pg))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* A heartbeat's segment stats, merged by (volume, pg): a delta replaces or
 * adds those it lists and keeps the others; a whole one (hb->delta false)
 * replaces them all. O(listed * log(held)) for a delta whose segments are
 * all known; new ones go at the end and the whole is sorted again, once
 * (a node's first heartbeats after it is given segments). */
void coord_merge_stats(struct cnode *n, const Auralog__Heartbeat *hb)
{
  if (!hb->delta)
    n->nstats = 0;
  size_t sorted = n->nstats;
  if (n->nstats + hb->n_segs > n->capstats) {
    n->capstats = n->nstats + hb->n_segs + 16;
    n->stats = realloc(n->stats, n->capstats * sizeof *n->stats);
  }
  for (size_t i = 0; i < hb->n_segs; i++) {
    /* Scalars only (a SegStat owns no memory): copied whole, with
     * whatever fields a newer node sent and we do not know left out. */
    Auralog__SegStat st = *hb->segs[i];
    st.base.n_unknown_fields = 0;
    st.base.unknown_fields = NULL;
    size_t k = stat_pos(n, sorted, st.volume_id, st.pg);
    if (k < sorted && !stat_cmp(&n->stats[k], &st))
      n->stats[k] = st;
    else
      n->stats[n->nstats++] = st;
  }
  if (n->nstats > sorted)
    qsort(n->stats, n->nstats, sizeof *n->stats, stat_cmp);
}

const Auralog__SegStat *coord_seg_stat(const struct cnode *n, uint64_t vol, uint32_t pg)
{
  size_t k = stat_pos(n, n->nstats, vol, pg);
  if (k < n->nstats && n->stats[k].volume_id == vol && n->stats[k].pg == pg)
    return &n->stats[k];
  return NULL;
}

void coord_forget_stat(struct cnode *n, uint64_t vol, uint32_t pg)
{
  size_t k = stat_pos(n, n->nstats, vol, pg);
  if (k < n->nstats && n->stats[k].volume_id == vol && n->stats[k].pg == pg) {
    memmove(&n->stats[k], &n->stats[k + 1], (n->nstats - k - 1) * sizeof *n->stats);
    n->nstats--;
  }
}
