/*
 * test_nodemember.c: protection-group membership as a storage node keeps
 * it (member.h M5, M6; node/member.c, node/gossip.c), with the node's core
 * driven by its events on the simulator's disk and hot log:
 *
 *  - the membership epochs an Assign gives a segment only rise, and a
 *    restart keeps them;
 *  - M5: an Append below the segment's mepoch_min is refused with
 *    ERR_STALE_MEMBERSHIP and stores nothing; one at it is taken; a
 *    GossipPull below it is refused and teaches the node nothing; a
 *    GossipPush below it is ignored; the node's own pulls carry its mepoch;
 *  - M6: an Assign that names the volume and omits the segment drops it:
 *    gone from memory, gossip and heartbeats, and a restart (hot log
 *    replayed) does not bring it back; a segment of a volume the Assign
 *    does not name is kept;
 *  - the peers of a PG are what the last Assign lists: a next segment
 *    joins, one that left is forgotten (up to NSLOTS).
 */
#include "cores_fix.h"
#include "sim/hfile.h"

#define HEARTBEAT AURALOG__ENVELOPE__BODY_HEARTBEAT
#define PULL AURALOG__ENVELOPE__BODY_GOSSIP_PULL
#define PUSH AURALOG__ENVELOPE__BODY_GOSSIP_PUSH

/* Node A1 on a simulated disk with a hot log (as `auralog node` runs). */
struct mfix {
  struct fake f;
  struct disk *d;
  struct hfile *h;
  struct node *n;
  struct ep *coord, *w;
};

static void mboot(struct mfix *x)
{
  char why[256];
  x->n = calloc(1, sizeof *x->n);
  assert_int_equal(store_open_hot(&x->n->st, disk_kv(x->d), hfile_file(x->h), 1u << 20, 4096,
                                  why, sizeof why), 0);
  assert_int_equal(node_init(x->n, &x->f.io, "A1", "A", "A1:1", "coord:1", NULL, NULL, why,
                             sizeof why), 0);
  x->coord = ep_named(&x->f, "coord:1");
  node_on_up(x->n, x->coord);
  take(&x->f, x->coord, REGISTER);
}

/* kill -9 and a power loss: what was not synced is gone. */
static void mcrash(struct mfix *x)
{
  disk_crash(x->d);
  hfile_crash(x->h, 0);
  node_free(x->n);
  store_close(&x->n->st);
  free(x->n);
  x->n = NULL;
}

/* The Assign: PG 0's segments (positions 0..5 on the six nodes, A1 at
 * 0), at membership epoch mepoch, mepoch_min min; with a next segment of
 * position 1 on node A3 if next; A1's own listed unless omit; volumes
 * vols[0..nv). */
static void massign(struct mfix *x, uint64_t mepoch, uint64_t min, int next, int omit,
                    const uint64_t *vols, size_t nv)
{
  Auralog__Segment seg[NSLOTS], *ptr[NSLOTS];
  pg0_segments(seg, ptr);
  size_t np = NCOPIES;
  if (next) {
    seg[np] = seg[1];
    seg[np].node = "A3";
    seg[np].addr = "A3:1";
    seg[np].next = 1;
    seg[np].since = mepoch;
    ptr[np] = &seg[np];
    np++;
  }
  for (size_t i = 0; i < np; i++) {
    seg[i].pos = i < NCOPIES ? (uint32_t)i : 1;
    seg[i].mepoch = mepoch;
    seg[i].mepoch_min = min;
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  as.segments = ptr;
  as.n_segments = omit ? 0 : 1;
  as.peers = ptr;
  as.n_peers = omit ? 0 : np;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
  as.volumes = (uint64_t *)vols;
  as.n_volumes = nv;
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x->n, x->coord, &env);
  node_end_turn(x->n);
}

static void msetup(struct mfix *x)
{
  keys();
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  x->d = disk_new();
  x->h = hfile_new();
  mboot(x);
  massign(x, 5, 4, 0, 0, NULL, 0);
  assert_non_null(node_find_seg(x->n, VOL, 0));
  x->w = ep_new(&x->f, "w1:1");
}

static void mteardown(struct mfix *x)
{
  node_free(x->n);
  store_close(&x->n->st);
  free(x->n);
  disk_free(x->d);
  hfile_free(x->h);
  fake_free(&x->f);
}

/* The writer of epoch 2 at membership epoch mepoch appends records
 * first..last (chained, on page 5); the node's answer. */
static const Env *mappend(struct mfix *x, uint64_t req, uint64_t mepoch, uint64_t first,
                          uint64_t last)
{
  struct trec t[16];
  Rec *recs[16];
  size_t n = 0;
  for (uint64_t l = first; l <= last; l++, n++)
    recs[n] = mkrec(&t[n], l, l - 1, 5, (uint32_t)(8 * (l % 64)), (uint8_t)l, REC_CPL, 2);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = 2;
  a.ticket = ticket(2, &tk, sig);
  a.records = recs;
  a.n_records = n;
  a.mepoch = mepoch;
  env.req = req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
  node_end_turn(x->n);
  return count(&x->f, x->w, ERROR) ? take(&x->f, x->w, ERROR) : take(&x->f, x->w, APPEND_ACK);
}

/* The node heartbeats now: the newest whole heartbeat it sent (every
 * segment it reports; one on each new coordinator link). */
static const Auralog__Heartbeat *heartbeat(struct mfix *x)
{
  node_heartbeat(x->n);
  const Env *e = NULL;
  while (count(&x->f, x->coord, HEARTBEAT)) {
    const Env *h = take(&x->f, x->coord, HEARTBEAT);
    if (!h->heartbeat->delta)
      e = h;
  }
  assert_non_null(e);
  return e->heartbeat;
}

static void membership_epochs_only_rise_and_survive_a_restart(void **state)
{
  (void)state;
  struct mfix x;
  msetup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  assert_int_equal(s->mepoch, 5);
  assert_int_equal(s->mepoch_min, 4);
  massign(&x, 3, 2, 0, 0, NULL, 0);           /* an older Assign, repeated */
  s = node_find_seg(x.n, VOL, 0);
  assert_int_equal(s->mepoch, 5);
  assert_int_equal(s->mepoch_min, 4);
  massign(&x, 9, 7, 0, 0, NULL, 0);
  assert_int_equal(s->mepoch, 9);
  assert_int_equal(s->mepoch_min, 7);
  mcrash(&x);
  mboot(&x);
  s = node_find_seg(x.n, VOL, 0);
  assert_non_null(s);
  assert_int_equal(s->mepoch, 9);
  assert_int_equal(s->mepoch_min, 7);
  /* And the heartbeat says which membership epoch the node holds. */
  const Auralog__Heartbeat *hb = heartbeat(&x);
  assert_int_equal(hb->n_segs, 1);
  assert_int_equal(hb->segs[0]->mepoch, 9);
  mteardown(&x);
}

static void an_append_below_mepoch_min_is_refused_and_stores_nothing(void **state)
{
  (void)state;
  struct mfix x;
  msetup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  const Env *r = mappend(&x, 10, 3, 1, 2);     /* mepoch_min is 4 */
  assert_int_equal(r->body_case, ERROR);
  assert_int_equal(r->error->code, ERR_STALE_MEMBERSHIP);
  assert_non_null(strstr(r->error->msg, "membership epoch 3"));
  assert_null(strchr(r->error->msg, '\n'));
  assert_int_equal(s->max_lsn, 0);
  assert_int_equal(s->epoch, 0);               /* not even the writer's epoch was taken */
  assert_false(store_held(&x.n->st, s, 1, NULL));
  /* A writer that says nothing (an older one): 0, refused too. */
  r = mappend(&x, 11, 0, 1, 2);
  assert_int_equal(r->error->code, ERR_STALE_MEMBERSHIP);
  /* At mepoch_min (the begin step's epoch or later): taken. */
  r = mappend(&x, 12, 4, 1, 2);
  assert_int_equal(r->body_case, APPEND_ACK);
  assert_int_equal(r->append_ack->scl, 2);
  mteardown(&x);
}

/* Tick gossip until the node pulls from peer A2; its endpoint comes up. */
static struct ep *pull_from_a2(struct mfix *x, const Env **q)
{
  for (int t = 0; t < 200; t++) {
    x->f.now += GOSSIP_MS;
    gossip_tick(x->n);
    for (size_t j = 0; j < x->f.neps; j++)
      if (strcmp(x->f.eps[j]->addr, "A2:1") == 0) {
        node_on_up(x->n, x->f.eps[j]);
        if (count(&x->f, x->f.eps[j], PULL)) {
          *q = take(&x->f, x->f.eps[j], PULL);
          return x->f.eps[j];
        }
      }
    for (size_t j = 0; j < x->f.neps; j++)
      if (strcmp(x->f.eps[j]->addr, "A2:1") != 0)
        while (count(&x->f, x->f.eps[j], PULL))
          take(&x->f, x->f.eps[j], PULL);
  }
  fail_msg("the node never pulled from A2");
  return NULL;
}

static void gossip_below_mepoch_min_is_refused(void **state)
{
  (void)state;
  struct mfix x;
  msetup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  assert_int_equal(mappend(&x, 10, 5, 1, 2)->body_case, APPEND_ACK);
  /* A pull from A2 (a peer of the PG) at mepoch 3 < 4: refused, and its
   * SCL (which would hold our GC) is not taken. */
  struct ep *a2 = ep_new(&x.f, "A2:in");
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPull gp = AURALOG__GOSSIP_PULL__INIT;
  gp.volume_id = VOL;
  gp.pg = 0;
  gp.scl = 1;
  gp.node = "A2";
  gp.mepoch = 3;
  env.req = 77;
  env.body_case = PULL;
  env.gossip_pull = &gp;
  DELIVER(node_on_msg, x.n, a2, &env);
  const Env *r = take(&x.f, a2, ERROR);
  assert_int_equal(r->req, 77);
  assert_int_equal(r->error->code, ERR_STALE_MEMBERSHIP);
  assert_non_null(strstr(r->error->msg, "peer A2"));
  assert_int_equal(count(&x.f, a2, PUSH), 0);
  for (int k = 0; k < x.n->gs[0].npeers; k++)
    assert_int_equal(x.n->gs[0].peer_at[k], 0);
  /* At mepoch 4: answered, with the node's own mepoch. */
  gp.mepoch = 4;
  DELIVER(node_on_msg, x.n, a2, &env);
  r = take(&x.f, a2, PUSH);
  assert_int_equal(r->gossip_push->n_records, 1);
  assert_int_equal(r->gossip_push->mepoch, 5);

  /* The node's own pull says its mepoch; a push back below mepoch_min
   * (a peer the coordinator took out) is ignored: nothing stored. */
  const Env *q;
  struct ep *e = pull_from_a2(&x, &q);
  assert_int_equal(q->gossip_pull->mepoch, 5);
  assert_true(q->gossip_pull->max_bytes > 0 && q->gossip_pull->max_bytes <= HYDRATE_PULL_BYTES);
  struct trec t;
  Rec *rec = mkrec(&t, 3, 2, 5, 0, 0x33, REC_CPL, 2);
  Env p = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPush push = AURALOG__GOSSIP_PUSH__INIT;
  push.volume_id = VOL;
  push.pg = 0;
  push.scl = 3;
  push.records = &rec;
  push.n_records = 1;
  push.mepoch = 3;
  p.req = q->req;
  p.body_case = PUSH;
  p.gossip_push = &push;
  DELIVER(node_on_msg, x.n, e, &p);
  node_end_turn(x.n);
  assert_int_equal(s->scl, 2);
  assert_false(store_held(&x.n->st, s, 3, NULL));
  /* The same push at mepoch 4 is taken. */
  e = pull_from_a2(&x, &q);
  push.mepoch = 4;
  p.req = q->req;
  DELIVER(node_on_msg, x.n, e, &p);
  node_end_turn(x.n);
  assert_int_equal(s->scl, 3);
  mteardown(&x);
}

static void an_assign_that_omits_a_segment_drops_it_for_good(void **state)
{
  (void)state;
  struct mfix x;
  msetup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  for (uint64_t l = 1; l <= 40; l += 10)
    assert_int_equal(mappend(&x, 10 + l, 5, l, l + 9)->body_case, APPEND_ACK);
  assert_int_equal(s->scl, 40);
  node_heartbeat(x.n);                         /* a delta: the segment moved */
  const Env *last = NULL;
  while (count(&x.f, x.coord, HEARTBEAT))
    last = take(&x.f, x.coord, HEARTBEAT);
  assert_int_equal(last->heartbeat->n_segs, 1);
  /* The records are in hot-log frames only (no checkpoint yet): a replay
   * would bring the segment back, were it not checkpointed first. */
  uint64_t vols[] = {VOL};
  FILE *log = tmpfile();
  log_quiet(0);
  log_output(log);
  massign(&x, 6, 6, 0, 1, vols, 1);
  log_output(stderr);
  log_quiet(2);
  /* One line says why. */
  char line[1024], said[1024] = "";
  rewind(log);
  while (fgets(line, sizeof line, log))
    if (strstr(line, "no longer a member"))
      snprintf(said, sizeof said, "%s", line);
  fclose(log);
  assert_non_null(strstr(said, "volume 7 pg 0"));
  assert_non_null(strstr(said, "M6"));
  assert_non_null(strstr(said, "40 records"));
  assert_null(node_find_seg(x.n, VOL, 0));
  assert_int_equal(x.n->nsegs, 0);
  assert_int_equal(x.n->ngs, 0);               /* no gossip for it */
  /* The next heartbeat is whole (the coordinator keeps a segment's last
   * stats until one replaces them all), and lists nothing. */
  node_heartbeat(x.n);
  while (count(&x.f, x.coord, HEARTBEAT))
    last = take(&x.f, x.coord, HEARTBEAT);
  assert_false(last->heartbeat->delta);
  assert_int_equal(last->heartbeat->n_segs, 0);
  /* An Append for it now: the node hosts no such segment. */
  const Env *r = mappend(&x, 99, 6, 41, 41);
  assert_int_equal(r->error->code, ERR_UNKNOWN_SEGMENT);
  mcrash(&x);
  mboot(&x);
  assert_int_equal(x.n->nsegs, 0);
  struct segment g;
  seg_init(&g, VOL, 0, 0, PG_PAGES, PSIZE);
  for (uint64_t l = 1; l <= 40; l++)
    assert_false(store_held(&x.n->st, &g, l, NULL));
  seg_free(&g);
  mteardown(&x);
}

static void a_segment_of_a_volume_the_assign_does_not_name_is_kept(void **state)
{
  (void)state;
  struct mfix x;
  msetup(&x);
  assert_int_equal(mappend(&x, 10, 5, 1, 3)->body_case, APPEND_ACK);
  uint64_t other[] = {VOL + 1};
  massign(&x, 6, 6, 0, 1, other, 1);           /* speaks for another volume only */
  assert_non_null(node_find_seg(x.n, VOL, 0));
  massign(&x, 6, 6, 0, 1, NULL, 0);            /* names no volume (an older coordinator) */
  struct segment *s = node_find_seg(x.n, VOL, 0);
  assert_non_null(s);
  assert_int_equal(s->scl, 3);
  mcrash(&x);
  mboot(&x);
  s = node_find_seg(x.n, VOL, 0);
  assert_non_null(s);
  assert_int_equal(s->scl, 3);
  mteardown(&x);
}

/* Is node id among the gossip peers of PG 0? */
static int has_peer(struct node *n, const char *id)
{
  for (int k = 0; k < n->gs[0].npeers; k++)
    if (strcmp(n->peers[n->gs[0].peer[k]].id, id) == 0)
      return 1;
  return 0;
}

static void peers_follow_the_assign_a_next_joins_one_that_left_is_forgotten(void **state)
{
  (void)state;
  struct mfix x;
  msetup(&x);
  assert_int_equal(x.n->gs[0].npeers, NCOPIES - 1);
  /* A repair begins: position 1 (A2) gets a next segment on A3. */
  massign(&x, 6, 4, 1, 0, NULL, 0);
  assert_int_equal(x.n->gs[0].npeers, NCOPIES);
  assert_true(has_peer(x.n, "A2") && has_peer(x.n, "A3"));
  /* B1 told us its SCL: that stays with it across Assigns. */
  for (int k = 0; k < x.n->gs[0].npeers; k++)
    if (strcmp(x.n->peers[x.n->gs[0].peer[k]].id, "B1") == 0)
      x.n->gs[0].peer_scl[k] = 1234;
  /* It finishes: A3 takes position 1, A2 leaves. */
  Auralog__Segment seg[NCOPIES], *ptr[NCOPIES];
  pg0_segments(seg, ptr);
  seg[1].node = "A3";
  seg[1].addr = "A3:1";
  for (int i = 0; i < NCOPIES; i++) {
    seg[i].pos = (uint32_t)i;
    seg[i].mepoch = 7;
    seg[i].mepoch_min = 6;
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  as.segments = ptr;
  as.n_segments = 1;
  as.peers = ptr;
  as.n_peers = NCOPIES;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x.n, x.coord, &env);
  node_end_turn(x.n);
  assert_int_equal(x.n->gs[0].npeers, NCOPIES - 1);
  assert_false(has_peer(x.n, "A2"));
  assert_true(has_peer(x.n, "A3"));
  int kept = 0;
  for (int k = 0; k < x.n->gs[0].npeers; k++)
    kept |= strcmp(x.n->peers[x.n->gs[0].peer[k]].id, "B1") == 0 &&
            x.n->gs[0].peer_scl[k] == 1234;
  assert_true(kept);
  assert_int_equal(node_find_seg(x.n, VOL, 0)->mepoch_min, 6);
  mteardown(&x);
}

int main(void)
{
  log_quiet(2);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(membership_epochs_only_rise_and_survive_a_restart),
    cmocka_unit_test(an_append_below_mepoch_min_is_refused_and_stores_nothing),
    cmocka_unit_test(gossip_below_mepoch_min_is_refused),
    cmocka_unit_test(an_assign_that_omits_a_segment_drops_it_for_good),
    cmocka_unit_test(a_segment_of_a_volume_the_assign_does_not_name_is_kept),
    cmocka_unit_test(peers_follow_the_assign_a_next_joins_one_that_left_is_forgotten),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
