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
 *  - authority (auth.h): a node takes a newer epoch only with the
 *    coordinator's ticket for it, and a truncation only signed by its
 *    epoch's writer (a forged epoch would fence the volume for good, a
 *    forged truncation empty it); the coordinator binds each node id to
 *    the key of its data directory, signs a ticket for each writer, and
 *    refuses to drop a volume its writer holds unless forced.
 */
#include "fake_io.h"

#include "coord/coord.h"
#include "lib/log.h"
#include "node/node.h"
#include "record.h"
#include "sim/disk.h"

/* The coordinator's key pair and a writer's, fixed (auth.h). */
static struct auth_signer coord_key, writer_key;

static void keys(void)
{
  uint8_t seed[32];
  auth_init();
  memset(seed, 1, sizeof seed);
  auth_signer_seed(&coord_key, seed);
  memset(seed, 2, sizeof seed);
  auth_signer_seed(&writer_key, seed);
}

/* The coordinator's ticket for epoch of VOL, for writer_key (sig: its
 * storage). */
static Auralog__EpochTicket *ticket(uint64_t epoch, Auralog__EpochTicket *tk, uint8_t *sig)
{
  auralog__epoch_ticket__init(tk);
  auth_ticket_sign(&coord_key, VOL, epoch, writer_key.pk, sig);
  tk->epoch = epoch;
  tk->writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  tk->sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sig};
  return tk;
}

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
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
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
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = epoch;
  a.ticket = ticket(epoch, &tk, sig);
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

/* A SegQuery of epoch for VOL's PG 0 from r, with ticket tk (NULL: none). */
static void seg_query(struct nfix *x, struct ep *r, uint64_t req, uint64_t epoch,
                      Auralog__EpochTicket *tk)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  q.volume_id = VOL;
  q.pg = 0;
  q.epoch = epoch;
  q.ticket = tk;
  env.req = req;
  env.body_case = SEG_QUERY;
  env.seg_query = &q;
  DELIVER(node_on_msg, x->n, r, &env);
}

static void node_takes_an_epoch_only_with_the_coordinators_ticket(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  append_two(&x);
  node_end_turn(x.n);
  take(&x.f, x.w, APPEND_ACK);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  struct ep *r = ep_new(&x.f, "stranger:1");

  /* Epoch 2^40 with no ticket: before, this fenced the volume for good. */
  seg_query(&x, r, 40, 1ull << 40, NULL);
  assert_int_equal(take(&x.f, r, ERROR)->error->code, ERR_AUTH);
  assert_int_equal(s->epoch, 2);

  /* A ticket the coordinator never signed (another key), or one for
   * another epoch, is no better. */
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  struct auth_signer other;
  uint8_t seed[32] = {9};
  auth_signer_seed(&other, seed);
  ticket(3, &tk, sig);
  auth_ticket_sign(&other, VOL, 3, writer_key.pk, sig);
  seg_query(&x, r, 41, 3, &tk);
  assert_int_equal(take(&x.f, r, ERROR)->error->code, ERR_AUTH);
  seg_query(&x, r, 42, 4, ticket(3, &tk, sig));
  assert_int_equal(take(&x.f, r, ERROR)->error->code, ERR_AUTH);
  assert_int_equal(s->epoch, 2);

  /* The writer of epoch 2 goes on, untouched. */
  struct trec t3;
  Rec *r3 = mkrec(&t3, 3, 2, 6, 0, 0x33, REC_CPL, 2);
  append(&x, 43, 2, &r3, 1);
  node_end_turn(x.n);
  assert_int_equal(take(&x.f, x.w, APPEND_ACK)->append_ack->scl, 3);

  /* The coordinator's ticket for epoch 3 fences it. */
  seg_query(&x, r, 44, 3, ticket(3, &tk, sig));
  assert_int_equal(take(&x.f, r, SEG_INFO)->seg_info->epoch, 3);
  assert_int_equal(s->epoch, 3);
  node_teardown(&x);
}

/* A Truncate of (from, to] in epoch from r; signed by signer unless NULL,
 * with the ticket of epoch. */
static void truncate_seg(struct nfix *x, struct ep *r, uint64_t req, uint64_t epoch,
                         uint64_t from, uint64_t to, const struct auth_signer *signer)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Truncate t = AURALOG__TRUNCATE__INIT;
  Auralog__EpochTicket tk;
  uint8_t tsig[AUTH_SIG_BYTES], sig[AUTH_SIG_BYTES];
  t.volume_id = VOL;
  t.pg = 0;
  t.epoch = epoch;
  t.from = from;
  t.to = to;
  t.ticket = ticket(epoch, &tk, tsig);
  if (signer) {
    auth_trunc_sign(signer, VOL, epoch, from, to, sig);
    t.sig = (ProtobufCBinaryData){sizeof sig, sig};
  }
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
  env.truncate = &t;
  DELIVER(node_on_msg, x->n, r, &env);
}

static void node_installs_a_truncation_only_signed_by_its_writer(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  append_two(&x);               /* epoch 2: records 1 and 2 */
  node_end_turn(x.n);
  take(&x.f, x.w, APPEND_ACK);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  struct ep *r = ep_new(&x.f, "stranger:1");

  /* Epoch 3's ticket is public (it travels in the clear), but a truncation
   * needs its writer's signature: unsigned, or signed by another key,
   * (0, 2] is refused and both records stay. */
  truncate_seg(&x, r, 50, 3, 0, 2, NULL);
  assert_int_equal(take(&x.f, r, ERROR)->error->code, ERR_AUTH);
  struct auth_signer other;
  uint8_t seed[32] = {9};
  auth_signer_seed(&other, seed);
  truncate_seg(&x, r, 51, 3, 0, 2, &other);
  assert_int_equal(take(&x.f, r, ERROR)->error->code, ERR_AUTH);
  assert_int_equal(s->ntruncs, 0);
  assert_int_equal(s->scl, 2);
  assert_int_equal(disk_entries(x.d, "recs"), 2);

  /* Epoch 3's writer signs (2, 10]: installed, nothing it covers held. */
  truncate_seg(&x, r, 52, 3, 2, 10, &writer_key);
  assert_int_equal(take(&x.f, r, SEG_INFO)->req, 52);
  assert_int_equal(s->ntruncs, 1);
  assert_true(s->truncs[0].proof.have);
  assert_int_equal(s->scl, 2);
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
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
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
  co->signer = coord_key;
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
    struct auth_signer id;
    uint8_t seed[32] = {(uint8_t)(10 + i)}, sig[AUTH_SIG_BYTES];
    auth_signer_seed(&id, seed);
    auth_id_sign(&id, ids[i], azs[i], addrs[i], sig);
    reg.id_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, id.pk};
    reg.id_sig = (ProtobufCBinaryData){sizeof sig, sig};
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

/* Register node i's id, az and addr with key seed idseed; the answer. */
static const Env *register_as(struct fake *f, struct coord *co, struct ep *c, int i,
                              const char *addr, uint8_t idseed)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  struct auth_signer id;
  uint8_t seed[32] = {idseed}, sig[AUTH_SIG_BYTES];
  auth_signer_seed(&id, seed);
  auth_id_sign(&id, ids[i], azs[i], addr, sig);
  reg.id = (char *)ids[i];
  reg.az = (char *)azs[i];
  reg.addr = (char *)addr;
  reg.id_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, id.pk};
  reg.id_sig = (ProtobufCBinaryData){sizeof sig, sig};
  env.req = 1;
  env.body_case = REGISTER;
  env.register_ = &reg;
  DELIVER(coord_on_msg, co, c, &env);
  return count(f, c, ERROR) ? take(f, c, ERROR) : take(f, c, ASSIGN);
}

static void coord_binds_nodes_signs_tickets_and_guards_drops(void **state)
{
  (void)state;
  struct fake f;
  char why[256];
  fake_init(&f);
  struct disk *d = disk_new();
  struct coord *co = calloc(1, sizeof *co);
  co->signer = coord_key;
  assert_int_equal(meta_open_kv(&co->meta, disk_kv(d), why, sizeof why), 0);
  assert_int_equal(coord_init(co, &f.io, why, sizeof why), 0);
  struct ep *node[NCOPIES];
  for (int i = 0; i < NCOPIES; i++) {
    node[i] = ep_new(&f, addrs[i]);
    const Env *as = register_as(&f, co, node[i], i, addrs[i], (uint8_t)(10 + i));
    assert_int_equal(as->body_case, ASSIGN);
    assert_memory_equal(as->assign->coord_pk.data, coord_key.pk, AUTH_PK_BYTES);
  }

  /* A writer gets the coordinator's ticket for its epoch and its key. */
  struct ep *w = ep_new(&f, "w1:1");
  const Auralog__Volume *v = open_volume(&f, co, w, 60, 1, 1)->volume;
  assert_non_null(v->ticket);
  assert_true(auth_ticket_ok(coord_key.pk, v->id, v->epoch, v->ticket->writer_pk.data,
                             v->ticket->writer_pk.len, v->ticket->sig.data,
                             v->ticket->sig.len));
  assert_memory_equal(v->ticket->writer_pk.data, writer_key.pk, AUTH_PK_BYTES);
  uint64_t epoch = v->epoch;

  /* An imposter registers as A1 at its own address: before, the real A1
   * was then shown down for good. */
  struct ep *imp = ep_new(&f, "imposter:1");
  const Env *rep = register_as(&f, co, imp, 0, "imposter:1", 99);
  assert_int_equal(rep->error->code, ERR_AUTH);
  assert_true(status_up(&f, co, node[1], "A1"));
  /* A1 itself may move (same data directory, same key). */
  struct ep *moved = ep_new(&f, "A1:2");
  assert_int_equal(register_as(&f, co, moved, 0, "A1:2", 10)->body_case, ASSIGN);


  /* Its engine reports: a drop is refused while it holds the volume. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  es.volume = "v";
  es.addr = "w1:1";
  es.epoch = epoch;
  es.vdl = 5;
  env.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
  env.engine_stat = &es;
  DELIVER(coord_on_msg, co, w, &env);
  /* A report of an epoch never issued is not the writer's: ignored. */
  es.epoch = epoch + 7;
  es.vdl = 1u << 30;
  DELIVER(coord_on_msg, co, w, &env);
  Env dr = AURALOG__ENVELOPE__INIT;
  Auralog__DropVolume dv = AURALOG__DROP_VOLUME__INIT;
  dv.name = "v";
  dr.req = 61;
  dr.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
  dr.drop_volume = &dv;
  DELIVER(coord_on_msg, co, w, &dr);
  assert_int_equal(take(&f, w, ERROR)->error->code, ERR_CONFLICT);
  Env sr = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sq = AURALOG__STATUS_REQ__INIT;
  sq.volume = "v";
  sr.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  sr.status_req = &sq;
  DELIVER(coord_on_msg, co, w, &sr);
  const Auralog__Status *st = take(&f, w, STATUS)->status;
  assert_true(st->exists);
  assert_int_equal(st->engine->vdl, 5);
  /* Forced, it goes. */
  dv.force = 1;
  DELIVER(coord_on_msg, co, w, &dr);
  take(&f, w, AURALOG__ENVELOPE__BODY_OK);

  coord_free(co);
  meta_close(&co->meta);
  free(co);
  disk_free(d);
  fake_free(&f);
}

int main(void)
{
  log_quiet(2);
  keys();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(node_acks_an_append_at_group_commit_and_keeps_it),
    cmocka_unit_test(node_reads_a_page_only_up_to_its_scl),
    cmocka_unit_test(node_seg_query_of_a_newer_epoch_fences),
    cmocka_unit_test(coord_places_volumes_gives_epochs_and_watches_nodes),
    cmocka_unit_test(node_takes_an_epoch_only_with_the_coordinators_ticket),
    cmocka_unit_test(node_installs_a_truncation_only_signed_by_its_writer),
    cmocka_unit_test(coord_binds_nodes_signs_tickets_and_guards_drops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
