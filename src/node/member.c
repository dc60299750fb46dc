/*
 * member.c: protection-group membership on a storage node (member.h; paper
 * §2.2-2.3, Verbitski et al., SIGMOD 2018; DESIGN.md invariant 10).
 *
 * The coordinator owns membership; a node only applies what its Assigns
 * say, and keeps it durable beside each segment (SegMeta.seg: mepoch,
 * mepoch_min, since, pos, next; segment.h):
 *
 *   node_member_assign  an Assign came: raise each listed segment's
 *                       membership epochs (never lower them), and drop
 *                       every hosted segment of a volume the Assign names
 *                       that it does not list (M6)
 *   node_mepoch_ok      M5: a writer's Append, or a peer's gossip, at a
 *                       membership epoch below the segment's mepoch_min
 *                       is refused (ERR_STALE_MEMBERSHIP)
 *   hydrate_budget/take the byte budget that pulls of segments behind
 *                       their peers share (gossip.c, bg.c; M2)
 *
 * Why a drop is durable at once, and checkpointed first (as a truncation
 * is, trunc.c): a node that restarts must not bring a dropped segment
 * back. Its SegMeta is in hot-log frames older than the drop; after the
 * checkpoint none of them is replayed, and the drop's own transaction is
 * synced in the kv (store.c, H3). A node that returns after its segments
 * were replaced holds only stale copies: its first Assign frees them (M6).
 *
 * Segments of volumes the Assign does not name (a volume this coordinator
 * does not know, or an Assign from one that names none) are left alone:
 * an Assign speaks only for the volumes it names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/node.h"
#include "node/store.h"
#include "param.h"

int node_mepoch_ok(const struct node *n, const struct segment *s, uint64_t mepoch,
                   const char *who, char *why, size_t whylen)
{
  /* M5: a configuration below mepoch_min still counts a member the last
   * finish took out; one at or above the begin step counts old and new
   * together (stricter than the finished one): it needs no refusal. A
   * message without the field (an older sender) says 0. */
  if (mepoch >= s->mepoch_min)
    return ERR_NONE;
  snprintf(why, whylen, "%s's membership epoch %llu of volume %llu pg %u is below %llu, the "
           "oldest node %s still takes (a member was replaced): refresh the PG's membership",
           who, (unsigned long long)mepoch, (unsigned long long)s->volume_id, s->pg,
           (unsigned long long)s->mepoch_min, n->id);
  return ERR_STALE_MEMBERSHIP;
}

/* ---- the hydration budget (member.h M2) ----------------------------------- */

int64_t hydrate_budget(struct node *n)
{
  unsigned long long now = io_now(n->io);
  if (n->hy_at == 0) {
    n->hy_budget = HYDRATE_BURST;   /* a node starts with a tick's worth */
    n->hy_at = now ? now : 1;
  } else if (now > n->hy_at) {
    n->hy_budget += (int64_t)((now - n->hy_at) * (unsigned long long)HYDRATE_BYTES_PER_S / 1000);
    if (n->hy_budget > HYDRATE_BURST)
      n->hy_budget = HYDRATE_BURST;
    n->hy_at = now;
  }
  return n->hy_budget;
}

void hydrate_take(struct node *n, int64_t bytes)
{
  hydrate_budget(n);
  n->hy_budget -= bytes;
}

/* ---- an Assign's membership -------------------------------------------------- */

/* Apply what the Assign says of hosted segment s (d: its entry). */
static void take_epochs(struct node *n, struct segment *s, const Auralog__Segment *d)
{
  char why[256];
  int changed = 0;
  uint8_t was_next = s->next;
  /* Only upwards: an Assign of an older membership epoch (none should
   * come after a newer one, but a coordinator's restart may repeat one)
   * changes nothing. */
  if (d->mepoch >= s->mepoch &&
      (s->since != d->since || s->pos != d->pos || s->next != (uint8_t)d->next)) {
    s->since = d->since;
    s->pos = d->pos;
    s->next = (uint8_t)d->next;
    changed = 1;
  }
  if (d->mepoch > s->mepoch) {
    s->mepoch = d->mepoch;
    changed = 1;
  }
  if (d->mepoch_min > s->mepoch_min) {
    loginfo("volume %llu pg %u on node %s: membership epoch %llu; writers and peers below "
            "%llu are refused from now on (member.h M5)", (unsigned long long)s->volume_id,
            s->pg, n->id, (unsigned long long)s->mepoch, (unsigned long long)d->mepoch_min);
    s->mepoch_min = d->mepoch_min;
    changed = 1;
  }
  if (was_next && !s->next)
    loginfo("volume %llu pg %u on node %s: now a current member at position %u (complete "
            "to %llu)", (unsigned long long)s->volume_id, s->pg, n->id, s->pos,
            (unsigned long long)s->scl);
  if (!changed)
    return;
  if (store_begin(&n->st, why, sizeof why) != 0) {
    logwarn("%s", why);     /* kept in memory; written with the next commit */
    return;
  }
  node_mark_dirty(n, s);    /* written with this turn's commit */
}

/* Take hosted segment i out of memory (it is gone from disk). */
static void forget_seg(struct node *n, size_t i)
{
  struct segment *s = n->segs[i];
  uint64_t vol = s->volume_id;
  uint32_t pg = s->pg;
  gossip_forget(n, vol, pg);
  for (int j = 0; j < REPAIR_INFLIGHT; j++)
    if (n->rep[j].vol == vol && n->rep[j].pg == pg)
      n->rep[j].req = 0;
  size_t k = 0;
  for (size_t j = 0; j < n->ncoq; j++)
    if (n->coq[j].vol != vol || n->coq[j].pg != pg)
      n->coq[k++] = n->coq[j];
  n->ncoq = k;
  kmap_del(&n->segidx, vol, pg);
  size_t last = n->nsegs - 1;
  if (i != last) {
    n->segs[i] = n->segs[last];
    n->sx[i] = n->sx[last];
    kmap_put(&n->segidx, n->segs[i]->volume_id, n->segs[i]->pg, (uint32_t)i);
  }
  n->nsegs--;
  /* The scrub's place named an index: start its slice again. */
  n->scrub_lsn = n->scrub_prev = 0;
  /* The coordinator keeps a segment's last stats until a whole heartbeat
   * replaces them all (coord/segstats.c): send one next. */
  n->hb_whole = 1;
  seg_free(s);
  free(s);
}

/* M6: hosted segment i is no member any more: free it durably, then
 * forget it. On a storage error it stays (the next Assign tries again). */
static void drop_seg(struct node *n, size_t i)
{
  char why[256];
  struct segment *s = n->segs[i];
  uint64_t nrecs = 0, nimgs = 0;
  /* What this turn staged commits first (its acks go out); then the
   * checkpoint: no frame older than the drop is replayed after it. */
  int rc = node_commit(n);
  if (rc == 0)
    rc = store_checkpoint(&n->st, why, sizeof why);
  if (rc == 0)
    rc = store_begin(&n->st, why, sizeof why);
  if (rc == 0) {
    store_sync_txn(&n->st);
    rc = store_drop_seg(&n->st, s, &nrecs, &nimgs, why, sizeof why);
    if (rc != 0)
      store_abort(&n->st);
    else
      rc = node_commit(n);   /* synced in the kv (H2); fatal if it cannot tell */
  }
  if (rc != 0) {
    logwarn_rl("volume %llu pg %u: cannot drop a segment that is no member any more: %s",
               (unsigned long long)s->volume_id, s->pg, why);
    return;
  }
  loginfo("volume %llu pg %u: node %s is no longer a member (the coordinator's Assign names "
          "the volume and not this segment: member.h M6); dropped it, %llu records and "
          "%llu page versions freed", (unsigned long long)s->volume_id, s->pg, n->id,
          (unsigned long long)nrecs, (unsigned long long)nimgs);
  forget_seg(n, i);
}

void node_member_assign(struct node *n, const Auralog__Assign *as)
{
  struct kmap listed = {0}, vols = {0};
  for (size_t i = 0; i < as->n_segments; i++) {
    const Auralog__Segment *d = as->segments[i];
    if (strcmp(d->node, n->id) != 0)
      continue;
    kmap_put(&listed, d->volume_id, d->pg, 0);
    struct segment *s = node_find_seg(n, d->volume_id, d->pg);
    if (s)
      take_epochs(n, s, d);
  }
  for (size_t i = 0; i < as->n_volumes; i++)
    kmap_put(&vols, as->volumes[i], 0, 0);
  /* From the end: a drop moves the last segment into the hole. */
  for (size_t i = n->nsegs; as->n_volumes > 0 && i > 0; i--) {
    const struct segment *s = n->segs[i - 1];
    if (kmap_get(&vols, s->volume_id, 0) == KMAP_NONE ||
        kmap_get(&listed, s->volume_id, s->pg) != KMAP_NONE)
      continue;             /* not this Assign's to say, or still a member */
    drop_seg(n, i - 1);
  }
  kmap_free(&listed);
  kmap_free(&vols);
}
