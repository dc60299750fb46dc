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
 */
#include "fake_io.h"

#include "coord/coord.h"
#include "lib/log.h"
#include "node/node.h"
#include "record.h"
#include "sim/disk.h"

/* A record of one 8-byte range of fill at off of page, sealed. */
struct trec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[8];
};

static Rec *mkrec(struct trec *t, uint64_t lsn, uint64_t prev, uint32_t page, uint32_t off,
                  uint8_t fill, uint32_t flags, uint64_t epoch)
{
  char why[200];
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  memset(t->data, fill, sizeof t->data);
  t->g.off = off;
  t->g.data.data = t->data;
  t->g.data.len = sizeof t->data;
  t->gp = &t->g;
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = page;
  t->r.flags = flags;
  t->r.epoch = epoch;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
  assert_int_equal(rec_check(&t->r, PSIZE, why, sizeof why), ERR_NONE);
  return &t->r;
}

/* ---- a storage node on the simulator's disk ------------------------------- */

struct nfix {
  struct fake f;
  struct disk *d;
  struct node *n;
  struct ep *coord, *w;        /* the coordinator's endpoint, a writer's */
};

/* Start node A1 on x's disk; its coordinator link comes up (it registers). */
static void node_boot(struct nfix *x)
{
  char why[256];
  x->n = calloc(1, sizeof *x->n);
  assert_int_equal(store_open_kv(&x->n->st, disk_kv(x->d), why, sizeof why), 0);
  assert_int_equal(node_init(x->n, &x->f.io, "A1", "A", "A1:1", "coord:1", NULL, NULL, why,
                             sizeof why), 0);
  x->coord = ep_named(&x->f, "coord:1");
  node_on_up(x->n, x->coord);
  assert_string_equal(take(&x->f, x->coord, REGISTER)->register_->id, "A1");
}

/* kill -9: the open transaction is lost, the memory too. */
static void node_crash(struct nfix *x)
{
  disk_crash(x->d);
  node_free(x->n);
  store_close(&x->n->st);
  free(x->n);
  x->n = NULL;
}

/* A new node, assigned its segment of PG 0 by the coordinator, as
 * coord.c send_assign does: its own segment, and the PG's six as peers. */
static void node_setup(struct nfix *x)
{
  Auralog__Segment seg[NCOPIES], *ptr[NCOPIES];
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  x->d = disk_new();
  node_boot(x);
  pg0_segments(seg, ptr);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  as.segments = ptr;           /* ptr[0]: A1's */
  as.n_segments = 1;
  as.peers = ptr;
  as.n_peers = NCOPIES;
  env.req = 1;
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x->n, x->coord, &env);
  node_end_turn(x->n);
  assert_non_null(node_find_seg(x->n, VOL, 0));
  x->w = ep_new(&x->f, "w1:1");
}

static void node_teardown(struct nfix *x)
{
  node_free(x->n);
  store_close(&x->n->st);
  free(x->n);
  disk_free(x->d);
  for (size_t i = 0; i < x->f.neps; i++)
    assert_int_equal(x->f.eps[i]->holds, 0);
  fake_free(&x->f);
}

static void append(struct nfix *x, uint64_t req, uint64_t epoch, Rec **recs, size_t n)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = epoch;
  a.records = recs;
  a.n_records = n;
  env.req = req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
}

/* The writer of epoch 2 appends records 1 and 2 (chained: 2 links back to
 * 1, and ends its MTR), both on page 5: bytes 100..107 become 0x11, then
 * 104..111 become 0x22. */
static void append_two(struct nfix *x)
{
  struct trec t1, t2;
  Rec *recs[2] = {mkrec(&t1, 1, 0, 5, 100, 0x11, 0, 2), mkrec(&t2, 2, 1, 5, 104, 0x22, REC_CPL, 2)};
  append(x, 10, 2, recs, 2);
}

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
  q.volume_id = VOL;
  q.pg = 0;
  q.epoch = 3;
  env.req = 30;
  env.body_case = SEG_QUERY;
  env.seg_query = &q;
  DELIVER(node_on_msg, x.n, r, &env);
  /* Answered at once, not at the end of the turn: the fence is durable. */
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

/* ---- the coordinator ------------------------------------------------------ */

static const Env *open_volume(struct fake *f, struct coord *co, struct ep *c, uint64_t req,
                              int create, int writer)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "v";
  ov.create = create;
  ov.writer = writer;
  ov.page_size = PSIZE;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  env.open_volume = &ov;
  DELIVER(coord_on_msg, co, c, &env);
  const Env *rep = take(f, c, VOLUME);
  assert_int_equal(rep->req, req);
  return rep;
}

/* Is node id up, as a StatusReq's answer says? */
static int status_up(struct fake *f, struct coord *co, struct ep *c, const char *id)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = "v";
  env.req = 50;
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  env.status_req = &sr;
  DELIVER(coord_on_msg, co, c, &env);
  const Auralog__Status *st = take(f, c, STATUS)->status;
  assert_true(st->exists);
  assert_int_equal(st->n_nodes, NCOPIES);
  for (size_t i = 0; i < st->n_nodes; i++)
    if (strcmp(st->nodes[i]->id, id) == 0)
      return st->nodes[i]->up;
  fail_msg("status does not list node %s", id);
  return -1;
}

static void coord_places_volumes_gives_epochs_and_watches_nodes(void **state)
{
  (void)state;
  struct fake f;
  char why[256];
  fake_init(&f);
  struct disk *d = disk_new();
  struct coord *co = calloc(1, sizeof *co);
  assert_int_equal(meta_open_kv(&co->meta, disk_kv(d), why, sizeof why), 0);
  assert_int_equal(coord_init(co, &f.io, why, sizeof why), 0);

  /* Six nodes in three AZs register; each is told its segments (none). */
  struct ep *node[NCOPIES];
  uint64_t t0 = f.now;
  for (int i = 0; i < NCOPIES; i++) {
    node[i] = ep_new(&f, addrs[i]);
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__Register reg = AURALOG__REGISTER__INIT;
    reg.id = (char *)ids[i];
    reg.az = (char *)azs[i];
    reg.addr = (char *)addrs[i];
    env.req = 1;
    env.body_case = REGISTER;
    env.register_ = &reg;
    DELIVER(coord_on_msg, co, node[i], &env);
    const Env *as = take(&f, node[i], ASSIGN);
    assert_int_equal(as->req, 1);
    assert_int_equal(as->assign->n_segments, 0);
  }

  /* A writer creates the volume: epoch 1, one PG of six segments on six
   * distinct nodes, two per AZ. */
  struct ep *w = ep_new(&f, "w1:1");
  const Auralog__Volume *v = open_volume(&f, co, w, 40, 1, 1)->volume;
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
    const Auralog__Assign *as = take(&f, node[i], ASSIGN)->assign;
    assert_int_equal(as->n_segments, 1);
    assert_string_equal(as->segments[0]->node, ids[i]);
    assert_int_equal(as->n_peers, NCOPIES);
  }

  /* A second writer: a new epoch. A reader: none. */
  assert_int_equal(open_volume(&f, co, w, 41, 0, 1)->volume->epoch, 2);
  assert_int_equal(open_volume(&f, co, w, 42, 0, 0)->volume->epoch, 2);

  /* Every node but C2 heartbeats; C2 is down once silent NODE_DOWN_MS. */
  f.now = t0 + NODE_DOWN_MS - 200;
  for (int i = 0; i < NCOPIES - 1; i++) {
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__Heartbeat hb = AURALOG__HEARTBEAT__INIT;
    hb.id = (char *)ids[i];
    env.body_case = AURALOG__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    DELIVER(coord_on_msg, co, node[i], &env);
  }
  f.now = t0 + NODE_DOWN_MS;
  coord_tick(co);
  assert_true(status_up(&f, co, w, "C2"));
  f.now = t0 + NODE_DOWN_MS + 1;
  coord_tick(co);
  assert_false(status_up(&f, co, w, "C2"));
  for (int i = 0; i < NCOPIES - 1; i++)
    assert_true(status_up(&f, co, w, ids[i]));

  coord_free(co);
  meta_close(&co->meta);
  free(co);
  disk_free(d);
  fake_free(&f);
}

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
  struct fake f;
  char why[256];
  fake_init(&f);
  struct disk *d = disk_new();
  struct coord *co = calloc(1, sizeof *co);
  assert_int_equal(meta_open_kv(&co->meta, disk_kv(d), why, sizeof why), 0);
  assert_int_equal(coord_init(co, &f.io, why, sizeof why), 0);
  struct ep *node[NCOPIES];
  for (int i = 0; i < NCOPIES; i++) {
    node[i] = ep_new(&f, addrs[i]);
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__Register reg = AURALOG__REGISTER__INIT;
    reg.id = (char *)ids[i];
    reg.az = (char *)azs[i];
    reg.addr = (char *)addrs[i];
    env.req = 1;
    env.body_case = REGISTER;
    env.register_ = &reg;
    DELIVER(coord_on_msg, co, node[i], &env);
    take(&f, node[i], ASSIGN);
  }
  struct ep *w = ep_new(&f, "w1:1");
  assert_int_equal(open_volume(&f, co, w, 40, 1, 1)->volume->n_pgs, 1);
  for (int i = 0; i < NCOPIES; i++)
    take(&f, node[i], ASSIGN);

  /* The whole of MAX_PGS at once, or one PG past the cap: refused, in
   * one line that says why. */
  size_t before[NCOPIES];
  for (int i = 0; i < NCOPIES; i++)
    before[i] = count(&f, node[i], 0);
  uint32_t asks[] = {MAX_PGS, 1 + GROW_MAX_PGS_PER_REQUEST + 1};
  for (size_t k = 0; k < sizeof asks / sizeof asks[0]; k++) {
    const Auralog__Error *e = grow_volume(&f, co, w, 50 + k, asks[k], ERROR)->error;
    char want[200];
    snprintf(want, sizeof want, "volume growth of %u PGs refused: at most %d per request "
             "(volume 'v' has 1, %u asked)", asks[k] - 1, GROW_MAX_PGS_PER_REQUEST, asks[k]);
    assert_string_equal(e->msg, want);
    assert_int_equal(e->code, ERR_OUT_OF_RANGE);
  }
  /* Nothing changed: no node was told of a segment, the volume has one PG. */
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(count(&f, node[i], 0), before[i]);
  assert_int_equal(open_volume(&f, co, w, 60, 0, 0)->volume->n_pgs, 1);
  /* ... and on disk: a coordinator started again finds the same. */
  coord_free(co);
  meta_close(&co->meta);
  memset(co, 0, sizeof *co);
  assert_int_equal(meta_open_kv(&co->meta, disk_kv(d), why, sizeof why), 0);
  assert_int_equal(coord_init(co, &f.io, why, sizeof why), 0);
  assert_int_equal(open_volume(&f, co, w, 61, 0, 0)->volume->n_pgs, 1);

  /* Growth of exactly the cap is made; asking for fewer than it has
   * changes nothing and is no error. */
  for (int i = 0; i < NCOPIES; i++) {
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__Register reg = AURALOG__REGISTER__INIT;
    reg.id = (char *)ids[i];
    reg.az = (char *)azs[i];
    reg.addr = (char *)addrs[i];
    env.req = 2;
    env.body_case = REGISTER;
    env.register_ = &reg;
    DELIVER(coord_on_msg, co, node[i], &env);
    take(&f, node[i], ASSIGN);
  }
  const Auralog__Volume *v =
    grow_volume(&f, co, w, 70, 1 + GROW_MAX_PGS_PER_REQUEST, VOLUME)->volume;
  assert_int_equal(v->n_pgs, 1 + GROW_MAX_PGS_PER_REQUEST);
  assert_int_equal(v->pgs[GROW_MAX_PGS_PER_REQUEST]->first_page,
                   GROW_MAX_PGS_PER_REQUEST * PG_PAGES);
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(take(&f, node[i], ASSIGN)->assign->n_segments,
                     1 + GROW_MAX_PGS_PER_REQUEST);
  assert_int_equal(grow_volume(&f, co, w, 71, 3, VOLUME)->volume->n_pgs,
                   1 + GROW_MAX_PGS_PER_REQUEST);

  coord_free(co);
  meta_close(&co->meta);
  free(co);
  disk_free(d);
  fake_free(&f);
}

int main(void)
{
  log_quiet(2);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(node_acks_an_append_at_group_commit_and_keeps_it),
    cmocka_unit_test(node_reads_a_page_only_up_to_its_scl),
    cmocka_unit_test(node_seg_query_of_a_newer_epoch_fences),
    cmocka_unit_test(coord_places_volumes_gives_epochs_and_watches_nodes),
    cmocka_unit_test(coord_refuses_a_huge_growth_and_changes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
