/*
 * test_gossip.c: a storage node merging what a PG peer's gossip brings
 * (node/gossip.c on_push; paper §3.3, Figure 4 step 4), with the node's
 * core driven by its events (cores_fix.h). Implement lab 24 grades these.
 *
 *  - a segment with a hole in its chain pulls from a peer, and the records
 *    pushed back fill it: its SCL goes up past the hole;
 *  - records pushed in pieces, the later ones first, and again end at the
 *    same SCL as one push of them all;
 *  - a push that carries a recovery's truncation and the new writer's
 *    records after it: the truncation goes in first, so the old epoch's
 *    record it cuts is gone and the new records, which link back past it,
 *    are taken (the other way round, they would contradict it).
 */
#include "cores_fix.h"
#include "lab_expect.h"

/* Tick the node's gossip until it pulls from a peer; bring up every peer
 * connection it opens. Returns the peer, and the pull in *q. */
static struct ep *await_pull(struct nfix *x, const Env **q)
{
  for (int t = 0; t < 100; t++) {
    x->f.now += GOSSIP_MS;
    gossip_tick(x->n);
    for (int i = 1; i < NCOPIES; i++) {
      struct ep *e = NULL;
      for (size_t j = x->f.neps; j > 0 && e == NULL; j--)
        if (strcmp(x->f.eps[j - 1]->addr, addrs[i]) == 0)
          e = x->f.eps[j - 1];
      if (e == NULL)
        continue;
      node_on_up(x->n, e);
      if (count(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL)) {
        *q = take(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL);
        return e;
      }
    }
  }
  fail_msg("the node never pulled from a peer");
  return NULL;
}

/* Answer pull q from peer e with records (and truncations), then end the
 * node's turn: what it staged commits. */
static void push(struct nfix *x, struct ep *e, const Env *q, Rec **recs, size_t n,
                 Auralog__TruncRange **tr, size_t ntr, uint64_t peer_scl)
{
  Env a = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPush gp = AURALOG__GOSSIP_PUSH__INIT;
  gp.volume_id = VOL;
  gp.pg = 0;
  gp.scl = peer_scl;
  gp.records = recs;
  gp.n_records = n;
  gp.truncs = tr;
  gp.n_truncs = ntr;
  a.req = q->req;
  a.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
  a.gossip_push = &gp;
  DELIVER(node_on_msg, x->n, e, &a);
  node_end_turn(x->n);
}

/* The writer of epoch 2 appends recs; the node acknowledges them. */
static void write(struct nfix *x, Rec **recs, size_t n)
{
  append(x, 10, 2, recs, n);
  node_end_turn(x->n);
  take(&x->f, x->w, APPEND_ACK);
}

static void a_push_fills_the_hole_and_the_scl_catches_up(void **state)
{
  (void)state;
  lab_rule("§3.3: a segment fills the holes in its log from its PG's peers by gossip, and its SCL "
           "moves up past them");
  struct nfix x;
  struct trec t[4];
  keys();
  node_setup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  /* Records 1 and 4 arrive; 2 and 3 were lost on the way. */
  lab_at("Records 1 and 4 arrive; 2 and 3 were lost on the way");
  Rec *mine[2] = {mkrec(&t[0], 1, 0, 5, 0, 0x11, 0, 2),
                  mkrec(&t[3], 4, 3, 5, 24, 0x44, REC_CPL, 2)};
  write(&x, mine, 2);
  expect_eq(s->scl, 1, "the segment's SCL");

  const Env *q;
  struct ep *e = await_pull(&x, &q);
  /* "I am complete to 1" */
  expect_eq(q->gossip_pull->scl, 1, "the SCL the node's pull says it is complete to");
  Rec *theirs[3] = {mkrec(&t[1], 2, 1, 5, 8, 0x22, 0, 2),
                    mkrec(&t[2], 3, 2, 5, 16, 0x33, 0, 2), mine[1]};
  push(&x, e, q, theirs, 3, NULL, 0, 4);
  lab_at("records 1 and 4 held, then a peer (complete to 4) pushed 2, 3 and 4");
  expect_eq(s->scl, 4, "the segment's SCL");
  expect_eq(s->npend, 0, "records still waiting above the SCL (npend)");
  node_teardown(&x);
}

static void a_push_in_pieces_and_twice_ends_at_the_same_scl(void **state)
{
  (void)state;
  lab_rule("§3.3: gossip may bring records in pieces, in any order, and more than once: the "
           "segment ends at the same SCL");
  struct nfix x;
  struct trec t[8];
  keys();
  node_setup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  Rec *r[8];
  for (int i = 0; i < 8; i++)
    r[i] = mkrec(&t[i], (uint64_t)i + 1, (uint64_t)i, 5, (uint32_t)(8 * i), (uint8_t)(i + 1),
                 i == 7 ? REC_CPL : 0, 2);
  Rec *mine[2] = {r[0], r[7]};
  write(&x, mine, 2);
  expect_eq(s->scl, 1, "the segment's SCL");

  /* The top of the hole first, then the bottom, then all of it again
   * (a push is in LSN order: the wire checks). */
  lab_at("The top of the hole first, then the bottom, then all of it again (a push is in LSN "
         "order: the wire checks)");
  const Env *q;
  struct ep *e = await_pull(&x, &q);
  Rec *top[3] = {r[4], r[5], r[6]};
  push(&x, e, q, top, 3, NULL, 0, 8);
  lab_at("records 1 and 8 held, then a push of 5, 6, 7");
  expect_eq(s->scl, 1, "the segment's SCL");                   /* 2..4 still missing */
  e = await_pull(&x, &q);
  Rec *bottom[3] = {r[1], r[2], r[3]};
  push(&x, e, q, bottom, 3, NULL, 0, 8);
  lab_at("records 1, 5..8 held, then a push of 2, 3, 4");
  expect_eq(s->scl, 8, "the segment's SCL");
  x.f.now += 60000;                              /* an idle pull, later */
  e = await_pull(&x, &q);
  expect_eq(q->gossip_pull->scl, 8, "the SCL the node's pull says it is complete to");
  push(&x, e, q, r, 8, NULL, 0, 8);
  lab_at("records 1..8 held, then a push of all of them again");
  expect_eq(s->scl, 8, "the segment's SCL");
  expect_eq(s->max_lsn, 8, "max_lsn (the highest LSN held)");
  expect_eq(s->npend, 0, "records still waiting above the SCL (npend)");
  node_teardown(&x);
}

static void a_pushed_truncation_comes_before_the_records_it_cuts(void **state)
{
  (void)state;
  lab_rule("§3.3, §4.3: a pushed truncation is installed before the pushed records, so what it "
           "cuts is gone and the new epoch's records, linked back past it, are taken");
  struct nfix x;
  struct trec t[3];
  keys();
  node_setup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  /* Epoch 2 wrote 1, then 3 (its 2 never arrived here) and crashed. */
  lab_at("Epoch 2 wrote 1, then 3 (its 2 never arrived here) and crashed");
  Rec *mine[2] = {mkrec(&t[0], 1, 0, 5, 0, 0x11, REC_CPL, 2),
                  mkrec(&t[1], 3, 2, 5, 8, 0x33, REC_CPL, 2)};
  write(&x, mine, 2);
  expect_eq(s->scl, 1, "the segment's SCL");

  /* Epoch 3 recovered to VDL 1 and truncated (1, 10]; its first record
   * is 11, which links back to 1. A peer that has both pushes both. */
  lab_at("Epoch 3 recovered to VDL 1 and truncated (1, 10]; its first record is 11, which links "
         "back to 1. A peer that has both pushes both");
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT, *trp = &tr;
  uint8_t tsig[AUTH_SIG_BYTES], sig[AUTH_SIG_BYTES];
  auth_ticket_sign(&coord_key, VOL, 3, writer_key.pk, tsig);
  auth_trunc_sign(&writer_key, VOL, 3, 1, 10, sig);
  tr.epoch = 3;
  tr.from = 1;
  tr.to = 10;
  tr.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  tr.ticket_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, tsig};
  tr.sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sig};
  Rec *theirs[1] = {mkrec(&t[2], 11, 1, 5, 16, 0xbb, REC_CPL, 3)};

  const Env *q;
  struct ep *e = await_pull(&x, &q);
  push(&x, e, q, theirs, 1, &trp, 1, 11);
  lab_at("records 1 and 3 of epoch 2 held, then a push of epoch 3's truncation (1, 10] and its "
         "record 11 (linked back to 1)");
  expect_true(seg_has_trunc(s, 3, 1, 10), "the segment to hold epoch 3's truncation (1, 10]");
  expect_eq(s->scl, 11, "the segment's SCL");       /* 3 is cut; 11 follows 1 */
  expect_eq(s->max_lsn, 11, "max_lsn (the highest LSN held)");
  expect_eq(s->npend, 0, "records still waiting above the SCL (npend)");
  node_teardown(&x);
}

static void a_push_from_a_peer_no_further_along_still_fills_the_hole(void **state)
{
  (void)state;
  struct nfix x;
  struct trec t[4];
  keys();
  node_setup(&x);
  lab_rule("§3.3: segments fill the holes in their logs by gossip with their PG's peers: "
           "a pushed record is merged whatever the peer's own SCL");
  struct segment *s = node_find_seg(x.n, VOL, 0);
  /* This segment holds 1, 2 and 4: complete to 2, 3 missing. The peer
   * holds 1 and 3 (its 2 was lost): complete to 1 only, behind this one,
   * yet its 3 is exactly what fills the hole. */
  Rec *mine[3] = {mkrec(&t[0], 1, 0, 5, 0, 0x11, 0, 2), mkrec(&t[1], 2, 1, 5, 8, 0x22, 0, 2),
                  mkrec(&t[3], 4, 3, 5, 24, 0x44, REC_CPL, 2)};
  write(&x, mine, 3);
  expect_eq(s->scl, 2, "after the writer's 1, 2 and 4: the segment's SCL");
  const Env *q;
  struct ep *e = await_pull(&x, &q);
  Rec *theirs[1] = {mkrec(&t[2], 3, 2, 5, 16, 0x33, 0, 2)};
  push(&x, e, q, theirs, 1, NULL, 0, 1);
  expect_eq(s->scl, 4, "after a push of record 3 from a peer complete only to 1: the SCL");
  expect_eq(s->npend, 0, "after that push: records still waiting above the SCL (npend)");
  node_teardown(&x);
}

static void a_refused_record_does_not_stop_the_rest_of_the_push(void **state)
{
  (void)state;
  struct nfix x;
  struct trec t[5];
  keys();
  node_setup(&x);
  lab_rule("§3.3: gossip merges what a peer holds and this segment lacks; a record the "
           "segment refuses (node_stage: not strict, as for a writer's batch) is skipped, "
           "the others are still taken");
  struct segment *s = node_find_seg(x.n, VOL, 0);
  Rec *mine[2] = {mkrec(&t[0], 1, 0, 5, 0, 0x11, 0, 2),
                  mkrec(&t[3], 4, 3, 5, 24, 0x44, REC_CPL, 2)};
  write(&x, mine, 2);
  expect_eq(s->scl, 1, "after the writer's 1 and 4: the segment's SCL");
  /* The peer (confused, or a rogue member) pushes 2 and 3, which fill the
   * hole, and a record 9 for a page far outside this segment's PG. */
  const Env *q;
  struct ep *e = await_pull(&x, &q);
  Rec *theirs[3] = {mkrec(&t[1], 2, 1, 5, 8, 0x22, 0, 2), mkrec(&t[2], 3, 2, 5, 16, 0x33, 0, 2),
                    mkrec(&t[4], 9, 4, 1u << 30, 0, 0x99, REC_CPL, 2)};
  push(&x, e, q, theirs, 3, NULL, 0, 9);
  expect_eq(s->scl, 4, "after a push of 2, 3 and an out-of-range 9: the SCL");
  expect_eq(s->max_lsn, 4, "after that push: max_lsn (9 must not be held)");
  node_teardown(&x);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_push_fills_the_hole_and_the_scl_catches_up),
    cmocka_unit_test(a_push_in_pieces_and_twice_ends_at_the_same_scl),
    cmocka_unit_test(a_pushed_truncation_comes_before_the_records_it_cuts),
    cmocka_unit_test(a_push_from_a_peer_no_further_along_still_fills_the_hole),
    cmocka_unit_test(a_refused_record_does_not_stop_the_rest_of_the_push),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
