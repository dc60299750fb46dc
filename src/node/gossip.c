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
 * node hosts, current and next (member.h), up to NSLOTS. An Assign is
 * whole: a peer it no longer lists for a PG is forgotten for that PG, a
 * new one joins (gossip_learn). A partitioned node (a lab fault) gossips
 * only within its AZ; one with gossip off (another) not at all.
 *
 * Membership (member.h M5): every pull and push carries the sender's
 * membership epoch of the PG; one below the receiver's mepoch_min (a
 * member the coordinator took out, still pulling) is refused.
 *
 * Hydration (member.h M2). A segment behind its peers (a new, empty one
 * being filled; one back from a failure) does not wait GOSSIP_MS between
 * pulls: once a push moved its SCL, it pulls again as soon as that push is
 * committed (gossip_hurry, at the turn's end). Every pull asks for at most
 * HYDRATE_PULL_BYTES (GossipPull.max_bytes), and a segment behind pulls
 * only out of the node's hydration budget (member.c: HYDRATE_BYTES_PER_S,
 * saving up at most a tick's worth), so that filling segments never
 * starves the foreground commits. Peers that freed what it lacks make it
 * catch up by page versions first (bg.c); meanwhile its pulls ask for one
 * record above the catch-up point (its SCL moves only when that ends): the
 * log above comes after.
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

struct gossip *gossip_of(struct node *n, uint64_t vol, uint32_t pg)
{
  uint32_t i = kmap_get(&n->gsidx, vol, pg);
  return i == KMAP_NONE ? NULL : &n->gs[i];
}

static struct gossip *gossip_new(struct node *n, uint64_t vol, uint32_t pg)
{
  if (n->ngs == n->capgs) {      /* doubles, as node.c's segs */
    n->capgs = n->capgs ? 2 * n->capgs : 64;
    n->gs = realloc(n->gs, n->capgs * sizeof *n->gs);
  }
  kmap_put(&n->gsidx, vol, pg, (uint32_t)n->ngs);
  struct gossip *g = &n->gs[n->ngs++];
  memset(g, 0, sizeof *g);
  g->volume_id = vol;
  g->pg = pg;
  return g;
}

/* g's peers become want[0..nw): those it keeps stay where they were, with
 * what they told us; new ones follow, knowing nothing yet. Returns whether
 * the set changed. */
static int gossip_set_peers(struct node *n, struct gossip *g, const int *want, int nw)
{
  struct gossip old = *g;
  int k = 0, kept = 0;
  for (int j = 0; j < old.npeers; j++) {
    int stays = 0;
    for (int w = 0; w < nw; w++)
      stays |= want[w] == old.peer[j];
    if (!stays)
      continue;
    g->peer[k] = old.peer[j];
    g->peer_scl[k] = old.peer_scl[j];
    g->peer_gc[k] = old.peer_gc[j];
    g->peer_at[k] = old.peer_at[j];
    g->peer_refused[k] = old.peer_refused[j];
    k++;
  }
  kept = k;
  for (int w = 0; w < nw && k < NSLOTS; w++) {
    int known = 0;
    for (int j = 0; j < kept; j++)
      known |= g->peer[j] == want[w];
    if (known)
      continue;
    g->peer[k] = want[w];
    g->peer_scl[k] = g->peer_gc[k] = g->peer_refused[k] = 0;
    g->peer_at[k] = 0;
    k++;
  }
  g->npeers = k;
  if (kept == old.npeers && k == old.npeers)
    return 0;
  if (old.npeers > 0)       /* a membership change, not the first Assign */
    loginfo("gossip: volume %llu pg %u on %s: %d peer%s (%d left, %d joined)",
            (unsigned long long)g->volume_id, g->pg, n->id, k, k == 1 ? "" : "s",
            old.npeers - kept, k - kept);
  /* A repair in flight names its peer by place in the old list. */
  for (int j = 0; j < REPAIR_INFLIGHT; j++)
    if (n->rep[j].vol == g->volume_id && n->rep[j].pg == g->pg)
      n->rep[j].req = 0;
  g->turn = 0;
  return 1;
}

void gossip_learn(struct node *n, const Auralog__Assign *as)
{
  /* Each PG the Assign speaks for (it lists our segment of it): its peers
   * are now exactly those it lists (member.h M6: a peer that left is
   * forgotten; a next segment joins). Others are left as they are. */
  struct kmap mine = {0};
  for (size_t i = 0; i < as->n_segments; i++) {
    const Auralog__Segment *d = as->segments[i];
    if (strcmp(d->node, n->id) == 0 && node_find_seg(n, d->volume_id, d->pg))
      kmap_put(&mine, d->volume_id, d->pg, 0);
  }
  for (size_t i = 0; i < as->n_peers; i++) {
    const Auralog__Segment *d = as->peers[i];
    if (strcmp(d->node, n->id) != 0 && node_find_seg(n, d->volume_id, d->pg) &&
        gossip_of(n, d->volume_id, d->pg) == NULL)
      gossip_new(n, d->volume_id, d->pg);
  }
  int (*want)[NSLOTS] = calloc(n->ngs + 1, sizeof *want);
  int *nw = calloc(n->ngs + 1, sizeof *nw);
  for (size_t i = 0; i < as->n_peers; i++) {
    const Auralog__Segment *d = as->peers[i];
    if (strcmp(d->node, n->id) == 0 || node_find_seg(n, d->volume_id, d->pg) == NULL)
      continue;
    uint32_t gi = kmap_get(&n->gsidx, d->volume_id, d->pg);
    int p = peer_index(n, d), known = 0;
    for (int k = 0; k < nw[gi]; k++)
      known |= want[gi][k] == p;
    if (!known && nw[gi] < NSLOTS)
      want[gi][nw[gi]++] = p;
    kmap_put(&mine, d->volume_id, d->pg, 0);
  }
  for (size_t gi = 0; gi < n->ngs; gi++)
    if (kmap_get(&mine, n->gs[gi].volume_id, n->gs[gi].pg) != KMAP_NONE &&
        gossip_set_peers(n, &n->gs[gi], want[gi], nw[gi])) {
      struct segment *s = node_find_seg(n, n->gs[gi].volume_id, n->gs[gi].pg);
      if (s != NULL)
        tf_reset(s);       /* rule TF: a new member must be seen too */
    }
  free(want);
  free(nw);
  kmap_free(&mine);
}

void gossip_forget(struct node *n, uint64_t vol, uint32_t pg)
{
  uint32_t gi = kmap_get(&n->gsidx, vol, pg);
  if (gi == KMAP_NONE)
    return;
  struct gossip *g = &n->gs[gi];
  if (g->req && g->asked)
    hydrate_take(n, -(int64_t)g->asked);   /* its reservation comes back */
  kmap_del(&n->gsidx, vol, pg);
  if (gi != n->ngs - 1) {
    n->gs[gi] = n->gs[n->ngs - 1];
    kmap_put(&n->gsidx, n->gs[gi].volume_id, n->gs[gi].pg, gi);
  }
  n->ngs--;
}

/* The pull in flight of g is over (answered with bytes of records, or
 * lost: 0): the budget it reserved is settled. */
static void pull_done(struct node *n, struct gossip *g, size_t bytes)
{
  hydrate_take(n, (int64_t)bytes - (int64_t)g->asked);
  g->asked = 0;
  g->req = 0;
}

/* ---- asking -------------------------------------------------------------- */

static void on_push(struct node *n, struct peer *p, const Env *env)
{
  const Auralog__GossipPush *gp = env->gossip_push;
  struct gossip *g = gossip_of(n, gp->volume_id, gp->pg);
  struct segment *s = node_find_seg(n, gp->volume_id, gp->pg);
  if (g == NULL || s == NULL || g->req != env->req)
    return;
  size_t bytes = 0;
  for (size_t i = 0; i < gp->n_records; i++)
    bytes += auralog__record__get_packed_size(gp->records[i]);
  pull_done(n, g, bytes);   /* what it brought comes out of the budget */
  if (!gossip_reachable(n, p->az))
    return;                 /* it left before the partition began */
  char mwhy[256];
  if (node_mepoch_ok(n, s, gp->mepoch, "a peer", mwhy, sizeof mwhy) != ERR_NONE) {
    logwarn_rl("gossip: push from %s refused: %s", p->id, mwhy);   /* M5 */
    return;
  }
  s->pulled += bytes;
  /* Pull again at the turn's end if this moved the SCL (gossip_hurry). */
  if (gp->n_records > 0) {
    g->again = 1;
    n->gossip_again = 1;
  }
  for (int k = 0; k < g->npeers; k++)
    if (&n->peers[g->peer[k]] == p) {
      g->peer_scl[k] = gp->scl;
      g->peer_gc[k] = gp->gc_lsn;
      g->peer_at[k] = io_now(n->io);
      p->heard_at = g->peer_at[k];
      tf_seen(s, k, gp);    /* what it holds and forgot (rule TF, tforget.c) */
    }
  nbk_heard(n, s, gp->bk_point);   /* the PG's backup point (nbackup.c) */
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
  if (env->body_case == AURALOG__ENVELOPE__BODY_GOSSIP_PUSH) {
    /* What the push staged, new to its segment (a link each; a rollback
     * drops them all): counted here, outside the merge (lab 24's body). */
    size_t before = n->nlinks;
    on_push(n, p, env);
    for (size_t k = before; k < n->nlinks; k++)
      n->links[k].s->from_peers++;
    return 1;
  }
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR && env->req) {
    /* A pull refused (M5: our membership epoch is behind the peer's
     * mepoch_min until our Assign comes): ask again later. */
    for (size_t i = 0; i < n->ngs; i++)
      if (n->gs[i].req == env->req) {
        pull_done(n, &n->gs[i], 0);
        logwarn_rl("gossip: %s refused a pull: %s", p->id, env->error->msg);
        return 1;
      }
  }
  bg_on_answer(n, env);     /* a page version asked for a repair (bg.c) */
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
      if (&n->peers[n->gs[i].peer[k]] == p && n->gs[i].req)
        pull_done(n, &n->gs[i], 0);
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
  n->npeers = n->ngs = n->capgs = 0;
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
  /* A truncation that may be forgotten once every peer is seen holding
   * it (rule TF, tforget.c): every GOSSIP_TF_IDLE at most, so that an idle
   * PG forgets the last recovery's within a minute. */
  int tf = g->idle > GOSSIP_TF_IDLE && tf_pending(s, g->npeers);
  if (tf) {
    g->idle = GOSSIP_TF_IDLE;
    if (g->next - g->last > GOSSIP_TF_IDLE)
      g->next = g->last + GOSSIP_TF_IDLE;
  }
  if (g->idle && (int)(n->ticks - g->next) < 0)
    return 0;
  /* A peer heard lately that this segment knows only below its own SCL
   * holds its GC there (bg.c gc_point) until heard again: no backing off
   * while one does. Else, after a burst of writes to an idle PG, the five
   * peers were heard one pull at a time at 1, 2, 4, 8, 12.8 s: GC came
   * ~16-28 s after the last write (it_storage waited 15 s, and failed
   * under load). Not counted: a peer silent that long (a node that is
   * down does not keep its peers pulling every second), and one known
   * below this segment's GC point (a spare filling: it pulls, and so is
   * heard, as often as it needs; 450 segments of a repair pulling every
   * second for it would slow the repair). */
  int lag = 0;
  unsigned long long now = io_now(n->io);
  for (int k = 0; k < g->npeers && !lag; k++)
    lag = g->peer_at[k] && now - g->peer_at[k] < (unsigned long long)GOSSIP_IDLE_MAX * GOSSIP_MS &&
          g->peer_scl[k] < s->scl && g->peer_scl[k] >= s->gc_lsn;
  if (g->idle == 0 || moved || lag)
    g->idle = GOSSIP_IDLE;
  else if (g->idle < GOSSIP_IDLE_MAX && !tf)
    g->idle = 2 * g->idle < GOSSIP_IDLE_MAX ? 2 * g->idle : GOSSIP_IDLE_MAX;
  g->last = n->ticks;
  g->next = n->ticks + g->idle;
  g->seen_scl = s->scl;
  g->seen_max = s->max_lsn;
  g->seen_best = best;
  return 1;
}

/* Pull for s from one of its peers. hurry: only if behind (gossip_hurry).
 * Returns 0, or -1 if it was behind and the budget could not pay. */
static int ask(struct node *n, struct gossip *g, struct segment *s, int hurry)
{
  uint64_t best = 0;
  int heard = 0;
  for (int k = 0; k < g->npeers; k++) {
    if (g->peer_scl[k] > best)
      best = g->peer_scl[k];
    heard |= g->peer_at[k] != 0;
  }
  /* During a catch-up by page versions (bg.c) the SCL moves only when it
   * ends, and the records above the catch-up point are pulled after: a
   * pull each tick meanwhile asks for one record only, to keep the peers'
   * state fresh (bg.c maybe_catch_up) and their GC held at the point.
   * An incoming segment that has heard no peer yet is behind: it holds
   * nothing of the PG's past (member.h M2). */
  int catching = s->catchup != 0;
  int behind = !catching && (s->npend > 0 || best > s->scl || (s->next && !heard));
  if (hurry && !behind)
    return 0;
  if (!behind && !catching && !idle_due(n, g, s, best))
    return 0;
  /* Behind: a pull reserves what it asks for out of the hydration budget
   * (member.h M2); too little left: the next tick (or a later push). An
   * idle pull pays after, for what it brought. */
  uint32_t max = catching ? 1 : HYDRATE_PULL_BYTES;
  if (behind) {
    int64_t b = hydrate_budget(n);
    if (b < HYDRATE_PULL_BYTES / 4)
      return -1;
    if (b < (int64_t)max)
      max = (uint32_t)b;
  }
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
    return 0;
  }
  g->turn = (unsigned)pick + 1;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPull gp = AURALOG__GOSSIP_PULL__INIT;
  gp.volume_id = s->volume_id;
  gp.pg = s->pg;
  /* Complete to the SCL; catching up, records above the catch-up point
   * are what it will need once the page versions are in (not the ones
   * the peer freed). */
  gp.scl = s->catchup > s->scl ? s->catchup : s->scl;
  gp.gc_lsn = s->gc_lsn;
  gp.bk_point = s->bk.point;
  gp.node = n->id;
  gp.mepoch = s->mepoch;    /* M5: a peer refuses it below its mepoch_min */
  gp.max_bytes = max;
  env.req = ++n->next_req;
  env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PULL;
  env.gossip_pull = &gp;
  if (gossip_send(n, n->peers[g->peer[pick]].c, &env) == 0) {
    g->req = env.req;
    g->sent_at = io_now(n->io);
    g->pull_scl = s->scl;
    g->asked = behind ? max : 0;
    if (behind)
      hydrate_take(n, max);
  }
  return 0;
}

void gossip_tick(struct node *n)
{
  n->ticks++;
  unsigned long long now = io_now(n->io);
  size_t first = n->gs_first < n->ngs ? n->gs_first : 0, starved = SIZE_MAX;
  for (size_t j = 0; j < n->ngs; j++) {
    size_t i = (first + j) % n->ngs;
    struct gossip *g = &n->gs[i];
    struct segment *s = node_find_seg(n, g->volume_id, g->pg);
    if (s == NULL)
      continue;
    if (g->req && now - g->sent_at < 10 * GOSSIP_MS)
      continue;             /* still waiting for the last answer */
    if (g->req)
      pull_done(n, g, 0);   /* lost */
    if (ask(n, g, s, 0) != 0 && starved == SIZE_MAX)
      starved = i;
  }
  /* The budget ran out: the first segment it could not pay for goes
   * first next tick (each takes its turn, none waits for good). */
  if (starved != SIZE_MAX)
    n->gs_first = starved;
}

void gossip_hurry(struct node *n)
{
  n->gossip_again = 0;
  for (size_t i = 0; i < n->ngs; i++) {
    struct gossip *g = &n->gs[i];
    if (!g->again)
      continue;
    g->again = 0;
    struct segment *s = node_find_seg(n, g->volume_id, g->pg);
    /* Only if the push moved the SCL: one that brought nothing new (the
     * peer lacks the hole too) waits for the next tick and another peer. */
    if (s != NULL && g->req == 0 && s->scl > g->pull_scl)
      ask(n, g, s, 1);
  }
}

int node_hydrating(struct node *n, const struct segment *s)
{
  if (!s->next)
    return 0;
  if (s->catchup || s->npend > 0)
    return 1;
  struct gossip *g = gossip_of(n, s->volume_id, s->pg);
  int heard = 0;
  for (int k = 0; g && k < g->npeers; k++) {
    heard |= g->peer_at[k] != 0;
    if (g->peer_scl[k] > s->scl)
      return 1;
  }
  return !heard;
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
  char who[NAME_MAX_LEN + 8], why[320];
  snprintf(who, sizeof who, "peer %s", p->node);
  if (node_mepoch_ok(n, s, p->mepoch, who, why, sizeof why) != ERR_NONE) {
    io_error(n->io, c, req, ERR_STALE_MEMBERSHIP, why);   /* M5: nothing learned */
    return;
  }
  /* The puller's SCL holds our GC (bg.c): it may still need our records. */
  struct gossip *g = gossip_of(n, p->volume_id, p->pg);
  for (int k = 0; g && k < g->npeers; k++)
    if (strcmp(n->peers[g->peer[k]].id, p->node) == 0) {
      g->peer_scl[k] = p->scl;
      g->peer_gc[k] = p->gc_lsn;  /* both fresh: what we know of it must agree */
      g->peer_at[k] = io_now(n->io);
      n->peers[g->peer[k]].heard_at = g->peer_at[k];
    }
  nbk_heard(n, s, p->bk_point);
  Rec **recs = NULL;
  long nrecs = p->scl < s->max_lsn
                 ? store_above_max(&n->st, s, p->scl, &recs, GOSSIP_MAX,
                                   p->max_bytes ? p->max_bytes : FRAME_MAX / 2, NULL) : 0;
  if (nrecs < 0)
    nrecs = 0;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPush gp = AURALOG__GOSSIP_PUSH__INIT;
  Auralog__TruncRange *tr;
  gp.volume_id = s->volume_id;
  gp.pg = s->pg;
  gp.scl = s->scl;
  gp.gc_lsn = s->gc_lsn;
  gp.bk_point = s->bk.point;
  gp.mepoch = s->mepoch;
  gp.records = recs;
  gp.n_records = (size_t)nrecs;
  gp.n_truncs = store_truncs_pb(s, &tr, &gp.truncs);
  Auralog__TruncRange *fv;
  gp.n_forgot = tf_tombs_pb(s, &fv, &gp.forgot);
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
  env.gossip_push = &gp;
  gossip_send(n, c, &env);
  for (long i = 0; i < nrecs; i++)
    auralog__record__free_unpacked(recs[i], NULL);
  free(recs);
  free(tr);
  free(gp.truncs);
  free(fv);
  free(gp.forgot);
}
