/*
 * test_authority.c: the authority rules of auth.h, in the cores (node.h,
 * coord.h) driven directly by their events (cores_fix.h), as a member of
 * the cluster that forges would try them:
 *
 *  - a node takes a newer epoch only with the coordinator's ticket for it
 *    (before, a SegQuery of epoch 2^64-1 fenced the volume for good);
 *  - it installs a truncation only signed by its epoch's writer under that
 *    epoch's ticket (before, a forged (0, VDL] emptied every segment);
 *  - the coordinator binds each node id to the key of its data directory
 *    (before, an imposter's Register moved a node away for good), signs a
 *    ticket for each writer, ignores a report of an epoch it never issued,
 *    and refuses to drop a volume its writer holds unless forced.
 */
#include "cores_fix.h"

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
  node_end_turn(x.n);           /* answered with the turn's commit */
  assert_int_equal(take(&x.f, r, SEG_INFO)->seg_info->epoch, 3);
  assert_int_equal(s->epoch, 3);

  /* The node remembers that ticket's bytes held (a recovery sends them
   * to every segment): the same bytes named epoch 4 are still refused. */
  ticket(3, &tk, sig);
  tk.epoch = 4;
  seg_query(&x, r, 45, 4, &tk);
  assert_int_equal(take(&x.f, r, ERROR)->error->code, ERR_AUTH);
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
  assert_int_equal(x.n->nchecked, 0);
  truncate_seg(&x, r, 52, 3, 2, 10, &writer_key);
  node_end_turn(x.n);
  assert_int_equal(take(&x.f, r, SEG_INFO)->req, 52);
  assert_int_equal(s->ntruncs, 1);
  assert_true(s->truncs[0].proof.have);
  /* Checked once for the whole node: every other segment of the volume
   * that hears of it (a recovery sends each one every truncation) takes
   * it without checking the signatures again. */
  assert_int_equal(x.n->nchecked, 1);
  assert_int_equal(s->scl, 2);
  node_teardown(&x);
}


static void coord_binds_nodes_signs_tickets_and_guards_drops(void **state)
{
  (void)state;
  struct cfix x;
  coord_setup(&x, 1);
  struct coord *co = x.co;

  /* A writer gets the coordinator's ticket for its epoch and its key. */
  struct ep *w = ep_new(&x.f, "w1:1");
  const Auralog__Volume *v = open_volume(&x.f, co, w, 60, 1, 1)->volume;
  assert_non_null(v->ticket);
  assert_true(auth_ticket_ok(coord_key.pk, v->id, v->epoch, v->ticket->writer_pk.data,
                             v->ticket->writer_pk.len, v->ticket->sig.data,
                             v->ticket->sig.len));
  assert_memory_equal(v->ticket->writer_pk.data, writer_key.pk, AUTH_PK_BYTES);
  uint64_t epoch = v->epoch;

  /* An imposter registers as A1 at its own address: before, the real A1
   * was then shown down for good. */
  struct ep *imp = ep_new(&x.f, "imposter:1");
  const Env *rep = register_as(&x.f, co, imp, 0, "imposter:1", 99);
  assert_int_equal(rep->error->code, ERR_AUTH);
  assert_true(status_up(&x.f, co, x.node[1], "A1"));
  /* A1 itself may move (same data directory, same key). */
  struct ep *moved = ep_new(&x.f, "A1:2");
  assert_int_equal(register_as(&x.f, co, moved, 0, "A1:2", 10)->body_case, ASSIGN);
  /* ... and its segments move with it: the volume names its new address,
   * where a writer's recovery will ask (before, the old one, where no
   * segment answered). */
  const Auralog__Volume *v2 = open_volume(&x.f, co, w, 62, 0, 0)->volume;
  int a1 = 0;
  for (size_t p = 0; p < v2->n_pgs; p++)
    for (size_t s = 0; s < v2->pgs[p]->n_segments; s++)
      if (strcmp(v2->pgs[p]->segments[s]->node, "A1") == 0) {
        assert_string_equal(v2->pgs[p]->segments[s]->addr, "A1:2");
        a1++;
      }
  assert_true(a1 > 0);


  uint64_t vid = v->id;
  /* A member's report in the writer's name (no writer's signature) is
   * not the writer's (coord/roles.c R4): status ignores it, and it holds
   * nothing. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  es.volume = "v";
  es.addr = "w1:1";
  es.epoch = epoch;
  es.vdl = 1u << 20;
  env.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
  env.engine_stat = &es;
  DELIVER(coord_on_msg, co, w, &env);
  Env sr = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sq = AURALOG__STATUS_REQ__INIT;
  sq.volume = "v";
  sr.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  sr.status_req = &sq;
  DELIVER(coord_on_msg, co, w, &sr);
  const Auralog__Status *st = take(&x.f, w, STATUS)->status;
  assert_true(st->engine == NULL || st->engine->vdl != 1u << 20);
  /* Its engine reports, signed: a drop is refused while it holds the
   * volume, even the operator's, even forced (R3). */
  uint8_t bind[AUTH_BIND_BYTES] = {0}, wsig[AUTH_SIG_BYTES], osig[AUTH_SIG_BYTES];
  es.vdl = 5;
  role_writer_seal(&env, &writer_key, bind, vid, epoch, wsig);
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
  for (int force = 0; force < 2; force++) {
    dv.force = force;
    role_op_seal(&dr, &op_key, bind, osig);
    DELIVER(coord_on_msg, co, w, &dr);
    assert_int_equal(take(&x.f, w, ERROR)->error->code, ERR_CONFLICT);
  }
  DELIVER(coord_on_msg, co, w, &sr);
  st = take(&x.f, w, STATUS)->status;
  assert_true(st->exists);
  assert_int_equal(st->engine->vdl, 5);
  /* Once its writer is silent past ENGINE_HOLD_MS, the operator drops it. */
  x.f.now += ENGINE_HOLD_MS + 1;
  DELIVER(coord_on_msg, co, w, &dr);
  take(&x.f, w, AURALOG__ENVELOPE__BODY_OK);

  coord_teardown(&x);
}

int main(void)
{
  log_quiet(2);
  keys();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(node_takes_an_epoch_only_with_the_coordinators_ticket),
    cmocka_unit_test(node_installs_a_truncation_only_signed_by_its_writer),
    cmocka_unit_test(coord_binds_nodes_signs_tickets_and_guards_drops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
