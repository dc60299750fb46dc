/*
 * tforget.c: forgetting the truncations every member of a PG holds
 * (rule TF).
 *
 * A truncation is valid for ever (rule T, record.h), and a segment holds
 * it while a record it cuts may still reach it. Held for ever, they pile
 * up: one per recovery on every segment of the volume, each with its
 * proof (~190 bytes), in every recovery's answers, every gossip push and
 * every SegMeta rewrite (a fence rewrites it). A PG whose records move
 * forgets them as its GC point passes them (store_gc); an idle PG's GC
 * point stays at its last record. After 860 recoveries a 230-PG volume
 * answered each recovery's first round with ~200 MB of truncations and
 * took 16 s to open (the torture's crash campaign, point 451).
 *
 * Rule TF. Segment S forgets truncation T of epoch e (keeps its range as
 * a tombstone, without the proof) when
 *   TF1. S's epoch is at least e: no writer older than e appends to S;
 *   TF2. every other member of the PG (the peers of the last whole
 *        Assign, at least NCOPIES - 1 of them) was seen holding T, since
 *        that set last changed: in a GossipPush, with its proof, among
 *        what it forgot, or under its GC point;
 *   TF3. T is not the newest epoch's that S holds (its writer carries it
 *        in its first Appends, and the next recovery rests on it), and no
 *        truncation S keeps rests on it (starts below its end: B2,
 *        segment.c), as store_gc keeps them.
 * Why no record T cuts reaches S afterwards. Each member installed T,
 * deleting what T cuts, and refuses such a record while it holds T; one
 * that forgot T has an epoch of at least e, so no writer brings it one.
 * Gossip carries records only between members (M5), and a new member
 * hydrates from members: none holds such a record, so none passes one on.
 * (A member whose disk went back in time breaks this, as it breaks every
 * quorum; a truncation is synced before it is answered, store.c H3.)
 *
 * A tombstone counts as held (segment.c: seg_has_trunc, the bound B2/B3),
 * so a peer that has not forgotten T yet does not make S install it again
 * (S, then each peer in turn, for ever); S's pushes and recovery answers
 * list it (`forgot`): TF2's evidence for peers, and a recovery's bound
 * check reads it as held (vfs/open.c). A tombstone goes once every member
 * was seen without T's proof: then none can give T back. Tombstones live
 * in memory: after a restart a peer may give T back once (it cuts nothing
 * here), and it is forgotten again.
 *
 * The evidence is a bit per peer (trunc.seen, tomb.seen), cleared when the
 * peer set changes (tf_reset, from gossip_set_peers): a new member must
 * be seen too.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/node.h"

static int same(const Auralog__TruncRange *r, uint64_t e, uint64_t f, uint64_t t)
{
  return r->epoch == e && r->from == f && r->to == t;
}

static int listed(Auralog__TruncRange *const *r, size_t n, uint64_t e, uint64_t f, uint64_t t)
{
  for (size_t i = 0; i < n; i++)
    if (same(r[i], e, f, t))
      return 1;
  return 0;
}

/* TF3: the newest epoch's truncation held stays. */
static uint64_t newest_epoch(const struct segment *s)
{
  uint64_t newest = 0;
  for (size_t i = 0; i < s->ntruncs; i++)
    if (s->truncs[i].epoch > newest)
      newest = s->truncs[i].epoch;
  return newest;
}

void tf_reset(struct segment *s)
{
  for (size_t i = 0; i < s->ntruncs; i++)
    s->truncs[i].seen = 0;
  for (size_t i = 0; i < s->ntombs; i++)
    s->tombs[i].seen = 0;
}

void tf_seen(struct segment *s, int k, const Auralog__GossipPush *gp)
{
  if (k < 0 || k >= 32)
    return;
  uint32_t bit = 1u << k;
  for (size_t i = 0; i < s->ntruncs; i++) {
    const struct trunc *t = &s->truncs[i];
    if (t->to <= gp->gc_lsn || listed(gp->truncs, gp->n_truncs, t->epoch, t->from, t->to) ||
        listed(gp->forgot, gp->n_forgot, t->epoch, t->from, t->to))
      s->truncs[i].seen |= bit;
  }
  for (size_t i = 0; i < s->ntombs; i++) {
    const struct tomb *m = &s->tombs[i];
    if (!listed(gp->truncs, gp->n_truncs, m->epoch, m->from, m->to))
      s->tombs[i].seen |= bit;
  }
}

int tf_forget(struct segment *s, int npeers)
{
  if (npeers < NCOPIES - 1 || npeers > 31)
    return 0;                /* peers not all known yet (or more than a mask holds) */
  uint32_t all = (1u << npeers) - 1;
  /* Tombstones every member is seen without: no one can give T back. */
  size_t kept = 0;
  for (size_t i = 0; i < s->ntombs; i++)
    if ((s->tombs[i].seen & all) != all)
      s->tombs[kept++] = s->tombs[i];
  s->ntombs = kept;
  if (s->ntruncs < 2)
    return 0;                /* TF3: the newest stays */
  uint64_t newest = newest_epoch(s);
  uint8_t *keep = calloc(s->ntruncs, 1);
  size_t ngo = 0;
  for (size_t i = 0; i < s->ntruncs; i++) {
    const struct trunc *t = &s->truncs[i];
    keep[i] = t->epoch == newest || t->epoch > s->epoch || (t->seen & all) != all;
    ngo += !keep[i];
  }
  for (int more = ngo > 0; more;) {      /* TF3: what a kept one rests on stays */
    more = 0;
    for (size_t i = 0; i < s->ntruncs; i++)
      for (size_t j = 0; j < s->ntruncs && !keep[i]; j++)
        if (keep[j] && s->truncs[j].epoch > s->truncs[i].epoch &&
            s->truncs[j].from < s->truncs[i].to) {
          keep[i] = more = 1;
          ngo--;
        }
  }
  if (ngo == 0) {
    free(keep);
    return 0;
  }
  s->tombs = realloc(s->tombs, (s->ntombs + ngo) * sizeof *s->tombs);
  kept = 0;
  for (size_t i = 0; i < s->ntruncs; i++) {
    const struct trunc *t = &s->truncs[i];
    if (keep[i])
      s->truncs[kept++] = *t;
    else
      s->tombs[s->ntombs++] = (struct tomb){t->epoch, t->from, t->to, 0};
  }
  s->ntruncs = kept;
  free(keep);
  return (int)ngo;
}

int tf_pending(const struct segment *s, int npeers)
{
  if (npeers < NCOPIES - 1 || npeers > 31)
    return 0;
  uint32_t all = (1u << npeers) - 1;
  for (size_t i = 0; i < s->ntombs; i++)
    if ((s->tombs[i].seen & all) != all)
      return 1;
  if (s->ntruncs < 2)
    return 0;
  uint64_t newest = newest_epoch(s);
  for (size_t i = 0; i < s->ntruncs; i++) {
    const struct trunc *t = &s->truncs[i];
    if (t->epoch != newest && t->epoch <= s->epoch && (t->seen & all) != all)
      return 1;
  }
  return 0;
}

size_t tf_tombs_pb(const struct segment *s, Auralog__TruncRange **tv,
                   Auralog__TruncRange ***tp)
{
  *tv = calloc(s->ntombs + 1, sizeof **tv);
  *tp = calloc(s->ntombs + 1, sizeof **tp);
  for (size_t i = 0; i < s->ntombs; i++) {
    auralog__trunc_range__init(&(*tv)[i]);
    (*tv)[i].epoch = s->tombs[i].epoch;
    (*tv)[i].from = s->tombs[i].from;
    (*tv)[i].to = s->tombs[i].to;
    (*tp)[i] = &(*tv)[i];
  }
  return s->ntombs;
}

/* Every GC_MS (bg.c): forget what rule TF lets each segment forget, its
 * SegMeta rewritten in one transaction. Returns 0, or -1 on a storage
 * error (rolled back: the truncations are held again, as on disk). */
int tf_work(struct node *n)
{
  char why[256];
  int opened = 0;
  for (size_t i = 0; i < n->ngs; i++) {
    const struct gossip *g = &n->gs[i];
    struct segment *s = node_find_seg(n, g->volume_id, g->pg);
    int k;
    if (s == NULL || (s->ntruncs < 2 && s->ntombs == 0) || (k = tf_forget(s, g->npeers)) == 0)
      continue;
    n->truncs_forgotten += (uint64_t)k;
    loginfo("volume %llu pg %u: %d truncation%s every member holds forgotten, %zu held",
            (unsigned long long)s->volume_id, s->pg, k, k == 1 ? "" : "s", s->ntruncs);
    if (!opened && store_begin(&n->st, why, sizeof why) != 0)
      return -1;
    opened = 1;
    node_mark_dirty(n, s);
  }
  return opened ? node_commit(n) : 0;
}
