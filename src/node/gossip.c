/*
 * gossip.c: segments of a protection group fill each other's holes
 * (paper §3.3, Figure 4 step 4).
 *
 * A node that was down, partitioned or just unlucky misses batches; its
 * SCL then stops below a hole even as later records arrive. The writer
 * does not resend what is already durable, so the segments repair
 * themselves: every GOSSIP_MS each segment that has a hole, or knows a peer
 * further ahead, asks one PG peer "I am complete to my SCL; what do you
 * hold above it?" (GossipPull). The peer answers with its records above
 * that point and its truncated ranges (GossipPush). The asker applies the
 * truncations first (a recovery it missed), then stores the records
 * through the same path as a writer's batch, skipping what it refuses, so
 * a returning node's SCL catches up with its peers' within seconds.
 * Segments with nothing missing ask every GOSSIP_IDLE periods, to learn
 * how far their peers are; one whose PG is idle asks half as often after
 * each such pull that found nothing moved, down to every GOSSIP_IDLE_MAX
 * periods, and every GOSSIP_IDLE again as soon as anything moves. So a
 * node hosting a thousand idle segments sends a few pulls a second, not
 * hundreds. Per tick the node looks at each segment's gossip state (a few
 * compares); the segment lookups are hashes (n->segidx, n->gsidx).
 *
 * Peers come from the coordinator's Assign: every segment of the PGs this
 * node hosts. A partitioned node (a lab fault) gossips only within its AZ;
 * one with gossip off (another) not at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/node.h"

/* Send a pull or a push to a peer, counting it in gossip_bytes/msgs: the
 * traffic the storage tier adds to the engine's (a frame: its length
 * prefix and the packed envelope). */
int gossip_send(struct node *n, struct ep *c, const Env *env)
{
  int rc = io_send(n->io, c, env);
  if (rc == 0) {
    n->gossip_bytes += 4 + auralog__envelope__get_packed_size(env);
    n->gossip_msgs++;
  }
  return rc;
}

/* Can this node gossip with a peer in az? Not across a partition, and
 * not at all while the lab fault `gossip ID off` holds (then a hole stays
 * open: nothing else fills it). */
int gossip_reachable(const struct node *n, const char *az)
{
  if (n->no_gossip)
    return 0;
  return !n->partitioned || strcmp(az, n->az) == 0;
}

static int peer_index(struct node *n, const Auralog__Segment *d)
{
  for (size_t i = 0; i < n->npeers; i++)
    if (strcmp(n->peers[i].id, d->node) == 0) {
      snprintf(n->peers[i].addr, sizeof n->peers[i].addr, "%s", d->addr);
      return (int)i;
    }
  n->peers = realloc(n->peers, (n->npeers + 1) * sizeof *n->peers);
  struct peer *p = &n->peers[n->npeers];
  memset(p, 0, sizeof *p);
  snprintf(p->id, sizeof p->id, "%s", d->node);
  snprintf(p->az, sizeof p->az, "%s", d->az);
  snprintf(p->addr, sizeof p->addr, "%s", d->addr);
  return (int)n->npeers++;
}

static struct gossip *gossip_of(struct node *n, uint64_t vol, uint32_t pg)
{
  uint32_t i = kmap_get(&n->gsidx, vol, pg);
  return i == KMAP_NONE ? NULL : &n->gs[i];
}

void gossip_learn(struct node *n, const Auralog__Assign *as)
{
  for (size_t i = 0; i < as->n_peers; i++) {
    const Auralog__Segment *d = as->peers[i];
    if (strcmp(d->node, n->id) == 0 || node_find_seg(n, d->volume_id, d->pg) == NULL)
      continue;
    struct gossip *g = gossip_of(n, d->volume_id, d->pg);
    if (g == NULL) {
      n->gs = realloc(n->gs, (n->ngs + 1) * sizeof *n->gs);
      kmap_put(&n->gsidx, d->volume_id, d->pg, (uint32_t)n->ngs);
      g = &n->gs[n->ngs++];
      memset(g, 0, sizeof *g);
      g->volume_id = d->volume_id;
      g->pg = d->pg;
    }
    int p = peer_index(n, d), known = 0;
    for (int k = 0; k < g->npeers; k++)
      known |= g->peer[k] == p;
    if (!known && g->npeers < NCOPIES)
      g->peer[g->npeers++] = p;
  }
}

/* ---- asking -------------------------------------------------------------- */

static void on_push(struct node *n, struct peer *p, const Env *env)
{
  const Auralog__GossipPush *gp = env->gossip_push;
  struct gossip *g = gossip_of(n, gp->volume_id, gp->pg);
  struct segment *s = node_find_seg(n, gp->volume_id, gp->pg);
  if (g == NULL || s == NULL || g->req != env->req)
    return;
  g->req = 0;
  if (!gossip_reachable(n, p->az))
    return;                 /* it left before the partition began */
  for (int k = 0; k < g->npeers; k++)
    if (&n->peers[g->peer[k]] == p) {
      g->peer_scl[k] = gp->scl;
      g->peer_gc[k] = gp->gc_lsn;
      g->peer_at[k] = io_now(n->io);
    }
  /* LAB 24 BEGIN: the gossip merge (§3.3). Merge a peer's push into
   * segment s: its truncations (gp->truncs, node_truncate_pb, TP_GOSSIP)
   * and then its records (gp->records, node_stage: the path a writer's batch
   * takes, which skips duplicates and what s refuses). Why in that
   * order? On an error, log it (logwarn_rl) and stop.
   * stub: (void)s;
   */
  char why[256];
  /* Truncations first: records they cut must not come back. Each is
   * valid forever (rule T, record.h: it cuts only records of older epochs
   * above a proved VDL), so a peer's are installed as they are, if they
   * keep the bound (segment.c seg_trunc_ok): one this segment refuses
   * (forged, or out of bounds) is skipped and counted, and the others and
   * the records still go in (trunc.c). A peer sends only what it holds,
   * which kept its own bound. */
  if (node_truncate_pb(n, s, gp->truncs, gp->n_truncs, TP_GOSSIP, why, sizeof why) != 0) {
    logwarn_rl("gossip: %s", why);
    return;
  }
  if (gp->n_records == 0)
    return;
  uint32_t added, dups;
  if (node_stage(n, s, gp->records, gp->n_records, 0, &added, &dups, why, sizeof why) != 0) {
    logwarn_rl("gossip: %s", why);
    return;
  }
  if (added)
    loginfo("gossip: volume %llu pg %u: %u records from %s (it is complete to %llu)",
            (unsigned long long)s->volume_id, s->pg, added, p->id,
            (unsigned long long)gp->scl);
  /* LAB 24 END */
}

static struct peer *peer_of(struct node *n, struct ep *c)
{
  for (size_t i = 0; i < n->npeers; i++)
    if (n->peers[i].c == c)
      return &n->peers[i];
  return NULL;
}

int gossip_on_msg(struct node *n, struct ep *c, const Env *env)
{
  struct peer *p = peer_of(n, c);
  if (p == NULL)
    return 0;
  if (env->body_case == AURALOG__ENVELOPE__BODY_GOSSIP_PUSH)
    on_push(n, p, env);
  else
    bg_on_answer(n, env);   /* a page version asked for a repair (bg.c) */
  return 1;
}

int gossip_on_down(struct node *n, struct ep *c)
{
  struct peer *p = peer_of(n, c);
  if (p == NULL)
    return 0;
  p->c = NULL;
  p->up = 0;
  p->retry_at = io_now(n->io) + RECONNECT_MS;
  for (size_t i = 0; i < n->ngs; i++)
    for (int k = 0; k < n->gs[i].npeers; k++)
      if (&n->peers[n->gs[i].peer[k]] == p)
        n->gs[i].req = 0;
  return 1;
}

int gossip_on_up(struct node *n, struct ep *c)
{
  struct peer *p = peer_of(n, c);
  if (p)
    p->up = 1;
  return p != NULL;
}

void gossip_free(struct node *n)
{
  free(n->peers);
  free(n->gs);
  kmap_free(&n->gsidx);
  n->peers = NULL;
  n->gs = NULL;
  n->npeers = n->ngs = 0;
}

/* The connection to peer i, if it is up; starts one if not. */
static struct ep *peer_conn(struct node *n, int i)
{
  struct peer *p = &n->peers[i];
  if (p->c == NULL && io_now(n->io) >= p->retry_at) {
    p->c = n->io->connect(n->io->ctx, p->addr);
    if (p->c == NULL)
      p->retry_at = io_now(n->io) + RECONNECT_MS;
  }
  return p->c && p->up ? p->c : NULL;
}

struct ep *gossip_peer_conn(struct node *n, int i)
{
  return peer_conn(n, i);
}

/* A segment with nothing missing: is its pull due this tick? Every
 * g->idle ticks, GOSSIP_IDLE while the segment or its peers move, doubled
 * after a pull that saw nothing move since the one before, up to
 * GOSSIP_IDLE_MAX; a move seen between pulls brings the next one in to
 * GOSSIP_IDLE after the last. */
static int idle_due(struct node *n, struct gossip *g, const struct segment *s, uint64_t best)
{
  int moved = s->scl != g->seen_scl || s->max_lsn != g->seen_max || best != g->seen_best;
  if (moved && g->idle > GOSSIP_IDLE) {
    g->idle = GOSSIP_IDLE;
    if (g->next - g->last > GOSSIP_IDLE)
      g->next = g->last + GOSSIP_IDLE;
  }
  if (g->idle && (int)(n->ticks - g->next) < 0)
    return 0;
  if (g->idle == 0 || moved)
    g->idle = GOSSIP_IDLE;
  else if (g->idle < GOSSIP_IDLE_MAX)
    g->idle = 2 * g->idle < GOSSIP_IDLE_MAX ? 2 * g->idle : GOSSIP_IDLE_MAX;
  g->last = n->ticks;
  g->next = n->ticks + g->idle;
  g->seen_scl = s->scl;
  g->seen_max = s->max_lsn;
  g->seen_best = best;
  return 1;
}

static void ask(struct node *n, struct gossip *g, struct segment *s)
{
  uint64_t best = 0;
  for (int k = 0; k < g->npeers; k++)
    if (g->peer_scl[k] > best)
      best = g->peer_scl[k];
  int behind = s->npend > 0 || best > s->scl;
  if (!behind && !idle_due(n, g, s, best))
    return;
  /* Behind: ask a peer known to be further ahead; else take turns. */
  int pick = -1;
  for (int j = 0; j < g->npeers && pick < 0; j++) {
    int k = (int)((g->turn + (unsigned)j) % (unsigned)g->npeers);
    struct peer *p = &n->peers[g->peer[k]];
    if (!gossip_reachable(n, p->az) || peer_conn(n, g->peer[k]) == NULL)
      continue;
    if (best > s->scl && g->peer_scl[k] <= s->scl && g->peer_at[k] != 0)
      continue;             /* known not ahead (one never heard may be) */
    if (g->peer_gc[k] > s->scl && j + 1 < g->npeers)
      continue;             /* it freed what we lack (bg.c catches up); another first */
    pick = k;
  }
  for (int j = 0; j < g->npeers && pick < 0; j++) {   /* anyone reachable */
    int k = (int)((g->turn + (unsigned)j) % (unsigned)g->npeers);
    if (gossip_reachable(n, n->peers[g->peer[k]].az) && peer_conn(n, g->peer[k]))
      pick = k;
  }
  if (pick < 0) {
    g->idle = GOSSIP_IDLE;    /* no one to ask: no backing off while connecting */
    g->next = n->ticks + GOSSIP_IDLE;
    return;
  }
  g->turn = (unsigned)pick + 1;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPull gp = AURALOG__GOSSIP_PULL__INIT;
  gp.volume_id = s->volume_id;
  gp.pg = s->pg;
  gp.scl = s->scl;
  gp.gc_lsn = s->gc_lsn;
  gp.node = n->id;
  env.req = ++n->next_req;
  env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PULL;
  env.gossip_pull = &gp;
  if (gossip_send(n, n->peers[g->peer[pick]].c, &env) == 0) {
    g->req = env.req;
    g->sent_at = io_now(n->io);
  }
}

void gossip_tick(struct node *n)
{
  n->ticks++;
  unsigned long long now = io_now(n->io);
  for (size_t i = 0; i < n->ngs; i++) {
    struct gossip *g = &n->gs[i];
    struct segment *s = node_find_seg(n, g->volume_id, g->pg);
    if (s == NULL)
      continue;
    if (g->req && now - g->sent_at < 10 * GOSSIP_MS)
      continue;             /* still waiting for the last answer */
    g->req = 0;
    ask(n, g, s);
  }
}

/* ---- answering ----------------------------------------------------------- */

void gossip_on_pull(struct node *n, struct ep *c, uint64_t req,
                    const Auralog__GossipPull *p)
{
  const char *az = NULL;
  for (size_t i = 0; i < n->npeers; i++)
    if (strcmp(n->peers[i].id, p->node) == 0)
      az = n->peers[i].az;
  if (az == NULL || !gossip_reachable(n, az))
    return;                 /* not a peer, or across a partition: dropped */
  struct segment *s = node_find_seg(n, p->volume_id, p->pg);
  if (s == NULL)
    return;
  /* The puller's SCL holds our GC (bg.c): it may still need our records. */
  struct gossip *g = gossip_of(n, p->volume_id, p->pg);
  for (int k = 0; g && k < g->npeers; k++)
    if (strcmp(n->peers[g->peer[k]].id, p->node) == 0) {
      g->peer_scl[k] = p->scl;
      g->peer_gc[k] = p->gc_lsn;  /* both fresh: what we know of it must agree */
      g->peer_at[k] = io_now(n->io);
    }
  Rec **recs = NULL;
  long nrecs = p->scl < s->max_lsn
                 ? store_above(&n->st, s, p->scl, &recs, GOSSIP_MAX, NULL) : 0;
  if (nrecs < 0)
    nrecs = 0;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPush gp = AURALOG__GOSSIP_PUSH__INIT;
  Auralog__TruncRange *tr;
  gp.volume_id = s->volume_id;
  gp.pg = s->pg;
  gp.scl = s->scl;
  gp.gc_lsn = s->gc_lsn;
  gp.records = recs;
  gp.n_records = (size_t)nrecs;
  gp.n_truncs = store_truncs_pb(s, &tr, &gp.truncs);
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
  env.gossip_push = &gp;
  gossip_send(n, c, &env);
  for (long i = 0; i < nrecs; i++)
    auralog__record__free_unpacked(recs[i], NULL);
  free(recs);
  free(tr);
  free(gp.truncs);
}
