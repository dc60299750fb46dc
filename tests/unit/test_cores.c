/*
 * test_cores.c: the storage node's core (node.h) and the coordinator's
 * (coord.h) driven directly by their events, with no socket, no lmdb and no
 * simulated network: the fake struct io of fake_io.h records what they
 * send; a node's store sits on the simulator's in-memory disk (sim/disk.h),
 * which a crash leaves as committed. What is checked, as a user of the
 * protocol would say it:
 *
 *  - a storage node learns its segment from the coordinator's Assign;
 *    acknowledges an Append only when the turn ends (group commit), once,
 *    with the segment's SCL; refuses a writer of an older epoch and
 *    changes nothing; after a crash finds its segment again with the same
 *    SCL, without what was staged and never acknowledged;
 *  - it answers a page read above its SCL "not complete", and at its SCL
 *    (or below) the page its records build;
 *  - a recovering writer's SegQuery of a newer epoch fences older writers
 *    at once and durably;
 *  - the coordinator answers a Register with an Assign, places a new
 *    volume's PG on six distinct nodes, two per AZ, gives each writer a
 *    new epoch (a reader none), and shows down a node that stopped
 *    heartbeating for NODE_DOWN_MS;
 *  - it refuses a GrowVolume that would add more than
 *    GROW_MAX_PGS_PER_REQUEST PGs with one clear error, and nothing
 *    changes: no node is assigned anything, and the volume keeps its size,
 *    in memory and on disk (a coordinator started again finds the same);
 *    a growth of exactly the cap is made.
 * The authority rules (auth.h) are test_authority.c's.
 */
#include "cores_fix.h"

static void node_acks_an_append_at_group_commit_and_keeps_it(void **state)
{
  (void)state;
  struct nfix x;
  char why[200];
  node_setup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  assert_int_equal(s->scl, 0);

  append_two(&x);
  assert_int_equal(count(&x.f, x.w, 0), 0);     /* staged, not durable: no ack */
  assert_int_equal(x.w->holds, 1);              /* kept for the ack */
  node_end_turn(x.n);
  assert_int_equal(count(&x.f, x.w, 0), 1);     /* one commit, one ack */
  const Env *ack = take(&x.f, x.w, APPEND_ACK);
  assert_int_equal(ack->req, 10);
  assert_int_equal(ack->append_ack->volume_id, VOL);
  assert_int_equal(ack->append_ack->scl, 2);
  assert_int_equal(ack->append_ack->added, 2);
  assert_int_equal(ack->append_ack->duplicates, 0);
  assert_int_equal(x.w->holds, 0);
  assert_int_equal(s->epoch, 2);
  size_t stored = disk_entries(x.d, "recs");
  assert_int_equal(stored, 2);

  /* A writer of epoch 1 (older than 2, seen): fenced, nothing changes. */
  struct trec t3;
  Rec *r3 = mkrec(&t3, 3, 2, 6, 0, 0x33, REC_CPL, 1);
  append(&x, 11, 1, &r3, 1);
  const Env *err = take(&x.f, x.w, ERROR);
  assert_int_equal(err->req, 11);
  assert_int_equal(err->error->code, ERR_STALE_EPOCH);
  node_end_turn(x.n);
  assert_int_equal(count(&x.f, x.w, 0), 0);
  assert_int_equal(s->scl, 2);
  assert_int_equal(s->max_lsn, 2);
  assert_int_equal(s->epoch, 2);
  assert_int_equal(disk_entries(x.d, "recs"), stored);

  /* Record 3 of epoch 2 is staged, then the node crashes before its turn
   * ends: it was never acknowledged, and it is gone. */
  r3 = mkrec(&t3, 3, 2, 6, 0, 0x33, REC_CPL, 2);
  append(&x, 12, 2, &r3, 1);
  node_crash(&x);
  assert_int_equal(x.w->holds, 0);
  assert_int_equal(count(&x.f, x.w, 0), 0);

  /* A new node on the same disk: the segment is back, as committed. */
  node_boot(&x);
  s = node_find_seg(x.n, VOL, 0);
  assert_non_null(s);
  assert_int_equal(s->scl, 2);
  assert_int_equal(s->max_lsn, 2);
  assert_int_equal(s->epoch, 2);
  assert_int_equal(seg_epoch(s, 1, why, sizeof why), ERR_STALE_EPOCH);
  node_teardown(&x);
}


/* A record sent twice before the turn's commit (an engine's resend beside
 * the first Append) is stored, linked and counted once: the node looks on
 * disk for what this transaction staged when it staged records of the
 * segment before (or a batch's LSNs do not rise: the wire refuses that
 * from a writer), and only then. */
static void a_record_sent_twice_in_one_turn_counts_once(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  struct trec t1, t2, t1b;
  Rec *a[2] = {mkrec(&t1, 1, 0, 5, 100, 0x11, 0, 2), mkrec(&t2, 2, 1, 5, 104, 0x22, REC_CPL, 2)};
  append(&x, 10, 2, a, 2);
  Rec *b[1] = {mkrec(&t1b, 1, 0, 5, 100, 0x11, 0, 2)};
  append(&x, 11, 2, b, 1);                      /* the same record 1, same turn */
  append(&x, 12, 2, a, 2);                      /* and the whole batch again */
  node_end_turn(x.n);
  const Env *k = take(&x.f, x.w, APPEND_ACK);
  assert_int_equal(k->append_ack->added, 2);
  k = take(&x.f, x.w, APPEND_ACK);
  assert_int_equal(k->append_ack->added, 0);
  assert_int_equal(k->append_ack->duplicates, 1);
  k = take(&x.f, x.w, APPEND_ACK);
  assert_int_equal(k->append_ack->added, 0);
  assert_int_equal(k->append_ack->duplicates, 2);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  assert_int_equal(s->scl, 2);
  assert_int_equal(s->nrecs, 2);
  assert_int_equal(disk_entries(x.d, "recs"), 2);
  node_teardown(&x);
}

static const Env *read_page(struct nfix *x, uint64_t req, uint32_t page, uint64_t need, int body)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
  rp.volume_id = VOL;
  rp.pg = 0;
  rp.page_no = page;
  rp.read_point = need;
  rp.need = need;
  rp.epoch = 2;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
  env.read_page = &rp;
  DELIVER(node_on_msg, x->n, x->w, &env);
  const Env *rep = take(&x->f, x->w, body);
  assert_int_equal(rep->req, req);
  return rep;
}

static void node_reads_a_page_only_up_to_its_scl(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  append_two(&x);
  node_end_turn(x.n);
  assert_int_equal(take(&x.f, x.w, APPEND_ACK)->append_ack->scl, 2);

  /* Record 3 is not here: the segment cannot say what the page is then. */
  const Env *rep = read_page(&x, 20, 5, 3, ERROR);
  assert_int_equal(rep->error->code, ERR_NOT_COMPLETE);

  /* At its SCL: both records applied, the later one on top. */
  rep = read_page(&x, 21, 5, 2, PAGE);
  const Auralog__Page *pg = rep->page;
  assert_int_equal(pg->page_no, 5);
  assert_int_equal(pg->page_lsn, 2);
  assert_int_equal(pg->data.len, PSIZE);
  assert_int_equal(pg->data.data[99], 0);
  assert_int_equal(pg->data.data[100], 0x11);
  assert_int_equal(pg->data.data[103], 0x11);
  assert_int_equal(pg->data.data[104], 0x22);
  assert_int_equal(pg->data.data[111], 0x22);
  assert_int_equal(pg->data.data[112], 0);

  /* As of record 1: the page before record 2. */
  rep = read_page(&x, 22, 5, 1, PAGE);
  assert_int_equal(rep->page->page_lsn, 1);
  assert_int_equal(rep->page->data.data[104], 0x11);
  assert_int_equal(rep->page->data.data[108], 0);
  node_teardown(&x);
}

static void node_seg_query_of_a_newer_epoch_fences(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  append_two(&x);
  node_end_turn(x.n);
  take(&x.f, x.w, APPEND_ACK);

  /* A recovering writer of epoch 3 asks (round 1). */
  struct ep *r = ep_new(&x.f, "w2:1");
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  q.volume_id = VOL;
  q.pg = 0;
  q.epoch = 3;
  q.ticket = ticket(3, &tk, sig);
  env.req = 30;
  env.body_case = SEG_QUERY;
  env.seg_query = &q;
  DELIVER(node_on_msg, x.n, r, &env);
  /* Not answered before the fence is durable: with the turn's commit. */
  assert_int_equal(count(&x.f, r, 0), 0);
  node_end_turn(x.n);
  const Env *si = take(&x.f, r, SEG_INFO);
  assert_int_equal(si->req, 30);
  assert_int_equal(si->seg_info->epoch, 3);
  assert_int_equal(si->seg_info->scl, 2);
  assert_int_equal(si->seg_info->max_lsn, 2);

  /* The writer of epoch 2 is refused from now on. */
  struct trec t3;
  Rec *r3 = mkrec(&t3, 3, 2, 6, 0, 0x33, REC_CPL, 2);
  append(&x, 31, 2, &r3, 1);
  assert_int_equal(take(&x.f, x.w, ERROR)->error->code, ERR_STALE_EPOCH);
  assert_int_equal(node_find_seg(x.n, VOL, 0)->scl, 2);

  /* Even after a crash with no turn ended since. */
  node_crash(&x);
  node_boot(&x);
  assert_int_equal(node_find_seg(x.n, VOL, 0)->epoch, 3);
  append(&x, 32, 2, &r3, 1);
  assert_int_equal(take(&x.f, x.w, ERROR)->error->code, ERR_STALE_EPOCH);
  node_teardown(&x);
}


static void coord_places_volumes_gives_epochs_and_watches_nodes(void **state)
{
  (void)state;
  struct cfix x;
  coord_setup(&x, 1);
  struct coord *co = x.co;
  uint64_t t0 = x.f.now;

  /* A writer creates the volume: epoch 1, one PG of six segments on six
   * distinct nodes, two per AZ. */
  struct ep *w = ep_new(&x.f, "w1:1");
  const Auralog__Volume *v = open_volume(&x.f, co, w, 40, 1, 1)->volume;
  assert_int_equal(v->epoch, 1);
  assert_int_equal(v->page_size, PSIZE);
  assert_int_equal(v->n_pgs, 1);
  assert_int_equal(v->pgs[0]->n_segments, NCOPIES);
  int per_az[NAZ] = {0};
  for (int i = 0; i < NCOPIES; i++) {
    const Auralog__Segment *s = v->pgs[0]->segments[i];
    assert_int_equal(s->pg, 0);
    assert_int_equal(s->volume_id, v->id);
    assert_int_equal(s->az[0], s->node[0]);   /* node A1 is in AZ A, ... */
    for (int j = 0; j < i; j++)
      assert_string_not_equal(s->node, v->pgs[0]->segments[j]->node);
    per_az[s->az[0] - 'A']++;
  }
  for (int a = 0; a < NAZ; a++)
    assert_int_equal(per_az[a], COPIES_PER_AZ);
  /* ... and each node is told its new segment, with its five peers. */
  for (int i = 0; i < NCOPIES; i++) {
    const Auralog__Assign *as = take(&x.f, x.node[i], ASSIGN)->assign;
    assert_int_equal(as->n_segments, 1);
    assert_string_equal(as->segments[0]->node, ids[i]);
    assert_int_equal(as->n_peers, NCOPIES);
  }

  /* A second writer: a new epoch. A reader: none. */
  assert_int_equal(open_volume(&x.f, co, w, 41, 0, 1)->volume->epoch, 2);
  assert_int_equal(open_volume(&x.f, co, w, 42, 0, 0)->volume->epoch, 2);

  /* Every node but C2 heartbeats; C2 is down once silent NODE_DOWN_MS. */
  x.f.now = t0 + NODE_DOWN_MS - 200;
  for (int i = 0; i < NCOPIES - 1; i++) {
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__Heartbeat hb = AURALOG__HEARTBEAT__INIT;
    hb.id = (char *)ids[i];
    env.body_case = AURALOG__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    DELIVER(coord_on_msg, co, x.node[i], &env);
  }
  x.f.now = t0 + NODE_DOWN_MS;
  coord_tick(co);
  assert_true(status_up(&x.f, co, w, "C2"));
  x.f.now = t0 + NODE_DOWN_MS + 1;
  coord_tick(co);
  assert_false(status_up(&x.f, co, w, "C2"));
  for (int i = 0; i < NCOPIES - 1; i++)
    assert_true(status_up(&x.f, co, w, ids[i]));

  coord_teardown(&x);
}

/* Register node i's id, az and addr with key seed idseed; the answer. */
static const Env *grow_volume(struct fake *f, struct coord *co, struct ep *c, uint64_t req,
                              uint32_t npgs, int body)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
  g.name = "v";
  g.npgs = npgs;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
  env.grow_volume = &g;
  DELIVER(coord_on_msg, co, c, &env);
  const Env *rep = take(f, c, body);
  assert_int_equal(rep->req, req);
  return rep;
}

static void coord_refuses_a_huge_growth_and_changes_nothing(void **state)
{
  (void)state;
  struct cfix x;
  char why[256];
  coord_setup(&x, 1);
  struct coord *co = x.co;
  struct disk *d = x.d;
  struct ep *w = ep_new(&x.f, "w1:1");
  assert_int_equal(open_volume(&x.f, co, w, 40, 1, 1)->volume->n_pgs, 1);
  for (int i = 0; i < NCOPIES; i++)
    take(&x.f, x.node[i], ASSIGN);

  /* The whole of MAX_PGS at once, or one PG past the cap: refused, in
   * one line that says why. */
  size_t before[NCOPIES];
  for (int i = 0; i < NCOPIES; i++)
    before[i] = count(&x.f, x.node[i], 0);
  uint32_t asks[] = {MAX_PGS, 1 + GROW_MAX_PGS_PER_REQUEST + 1};
  for (size_t k = 0; k < sizeof asks / sizeof asks[0]; k++) {
    const Auralog__Error *e = grow_volume(&x.f, co, w, 50 + k, asks[k], ERROR)->error;
    char want[200];
    snprintf(want, sizeof want, "volume growth of %u PGs refused: at most %d per request "
             "(volume 'v' has 1, %u asked)", asks[k] - 1, GROW_MAX_PGS_PER_REQUEST, asks[k]);
    assert_string_equal(e->msg, want);
    assert_int_equal(e->code, ERR_OUT_OF_RANGE);
  }
  /* Nothing changed: no node was told of a segment, the volume has one PG. */
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(count(&x.f, x.node[i], 0), before[i]);
  assert_int_equal(open_volume(&x.f, co, w, 60, 0, 0)->volume->n_pgs, 1);
  /* ... and on disk: a coordinator started again finds the same. */
  coord_free(co);
  meta_close(&co->meta);
  memset(co, 0, sizeof *co);
  memcpy(co->op_pk, op_key.pk, AUTH_PK_BYTES);
  co->have_op_pk = 1;
  assert_int_equal(meta_open_kv(&co->meta, disk_kv(d), why, sizeof why), 0);
  assert_int_equal(coord_init(co, &x.f.io, why, sizeof why), 0);
  assert_int_equal(open_volume(&x.f, co, w, 61, 0, 0)->volume->n_pgs, 1);

  /* Growth of exactly the cap is made; asking for fewer than it has
   * changes nothing and is no error. */
  for (int i = 0; i < NCOPIES; i++) {
    assert_int_equal(register_as(&x.f, co, x.node[i], i, addrs[i], (uint8_t)(10 + i))->body_case,
                     ASSIGN);
  }
  const Auralog__Volume *v =
    grow_volume(&x.f, co, w, 70, 1 + GROW_MAX_PGS_PER_REQUEST, VOLUME)->volume;
  assert_int_equal(v->n_pgs, 1 + GROW_MAX_PGS_PER_REQUEST);
  assert_int_equal(v->pgs[GROW_MAX_PGS_PER_REQUEST]->first_page,
                   GROW_MAX_PGS_PER_REQUEST * PG_PAGES);
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(take(&x.f, x.node[i], ASSIGN)->assign->n_segments,
                     1 + GROW_MAX_PGS_PER_REQUEST);
  assert_int_equal(grow_volume(&x.f, co, w, 71, 3, VOLUME)->volume->n_pgs,
                   1 + GROW_MAX_PGS_PER_REQUEST);

  coord_teardown(&x);
}

/* Roles (coord/roles.c): the coordinator gives a writer epoch, drops,
 * plays a fault or forces a failover only for the operator's signature;
 * a member's request (no signature, or one by another key) is refused
 * with the reason, and changes nothing. */
static void coord_takes_destructive_requests_only_from_the_operator(void **state)
{
  (void)state;
  struct cfix x;
  coord_setup(&x, 1);
  struct coord *co = x.co;
  struct ep *w = ep_new(&x.f, "w1:1");
  assert_int_equal(open_volume(&x.f, co, w, 40, 1, 1)->volume->epoch, 1);
  struct auth_signer rogue;
  uint8_t seed[32], bind[AUTH_BIND_BYTES] = {0}, sig[AUTH_SIG_BYTES];
  memset(seed, 9, sizeof seed);
  auth_signer_seed(&rogue, seed);
  for (int signed_by_rogue = 0; signed_by_rogue < 2; signed_by_rogue++) {
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
    ov.name = "v";
    ov.writer = 1;
    ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, rogue.pk};
    env.req = 50;
    env.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
    env.open_volume = &ov;
    if (signed_by_rogue)
      role_op_seal(&env, &rogue, bind, sig);
    DELIVER(coord_on_msg, co, w, &env);
    const Env *rep = take(&x.f, w, ERROR);
    assert_int_equal(rep->error->code, ERR_AUTH);
    assert_non_null(strstr(rep->error->msg, "only the operator"));
    /* A drop, a fault, a failover: the same. */
    Env d = AURALOG__ENVELOPE__INIT;
    Auralog__DropVolume dv = AURALOG__DROP_VOLUME__INIT;
    dv.name = "v";
    dv.force = 1;
    d.req = 51;
    d.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
    d.drop_volume = &dv;
    if (signed_by_rogue)
      role_op_seal(&d, &rogue, bind, sig);
    DELIVER(coord_on_msg, co, w, &d);
    assert_int_equal(take(&x.f, w, ERROR)->error->code, ERR_AUTH);
    Env fe = AURALOG__ENVELOPE__INIT;
    Auralog__Fault f = AURALOG__FAULT__INIT;
    f.action = "heal";
    fe.req = 52;
    fe.body_case = AURALOG__ENVELOPE__BODY_FAULT;
    fe.fault = &f;
    DELIVER(coord_on_msg, co, w, &fe);
    assert_int_equal(take(&x.f, w, ERROR)->error->code, ERR_AUTH);
  }
  /* Nothing changed: still epoch 1, and the operator's next open is 2. A
   * signature for one request is no signature for another (op_sig covers
   * the envelope): the operator's signed drop, turned into an open, fails. */
  assert_int_equal(open_volume(&x.f, co, w, 53, 0, 0)->volume->epoch, 1);
  assert_int_equal(open_volume(&x.f, co, w, 54, 0, 1)->volume->epoch, 2);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__DropVolume dv = AURALOG__DROP_VOLUME__INIT;
  dv.name = "other";
  env.req = 55;
  env.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
  env.drop_volume = &dv;
  role_op_seal(&env, &op_key, bind, sig);
  dv.name = "v";                 /* altered after signing */
  DELIVER(coord_on_msg, co, w, &env);
  assert_int_equal(take(&x.f, w, ERROR)->error->code, ERR_AUTH);
  coord_teardown(&x);
}

int main(void)
{
  log_quiet(2);
  keys();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(node_acks_an_append_at_group_commit_and_keeps_it),
    cmocka_unit_test(node_reads_a_page_only_up_to_its_scl),
    cmocka_unit_test(node_seg_query_of_a_newer_epoch_fences),
    cmocka_unit_test(a_record_sent_twice_in_one_turn_counts_once),
    cmocka_unit_test(coord_places_volumes_gives_epochs_and_watches_nodes),
    cmocka_unit_test(coord_takes_destructive_requests_only_from_the_operator),
    cmocka_unit_test(coord_refuses_a_huge_growth_and_changes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
