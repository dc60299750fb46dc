/*
 * test_tforget.c: a segment forgets a truncation once every member of its
 * PG holds it (rule TF, node/tforget.c), and only then.
 *
 * Before, a segment held every truncation for ever unless its GC point
 * passed it, which an idle PG's never does: after 860 recoveries every
 * segment of a 230-PG volume carried 860 of them, with proofs, in every
 * recovery answer and gossip push, and the volume took 16 s to open.
 *
 * Checks, driving the segment and the rule directly with the pushes its
 * five peers would send: nothing is forgotten until the last peer is seen
 * holding it (with its proof, among what it forgot, or under its GC
 * point); the newest epoch's stays; one of an epoch the segment was not
 * fenced at stays (an older writer could still append); one a kept newer
 * one rests on stays; a forgotten one still counts as held (it is not
 * installed again, and the bound reads it); its tombstone goes once every
 * peer is seen without its proof; a change of peers starts the evidence
 * again; a segment that does not know all its peers yet forgets nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "param.h"
#include "record.h"
#include "node/node.h"
#include "node/segment.h"

#define NPEERS (NCOPIES - 1)

static struct segment seg;

/* A push from a peer: its held truncations, what it forgot, its GC point. */
struct push {
  Auralog__GossipPush gp;
  Auralog__TruncRange tv[8], fv[8];
  Auralog__TruncRange *tp[8], *fp[8];
};

static void range(Auralog__TruncRange *r, const struct trunc *t)
{
  auralog__trunc_range__init(r);
  r->epoch = t->epoch;
  r->from = t->from;
  r->to = t->to;
}

static Auralog__GossipPush *mkpush(struct push *p, const struct trunc *held, size_t nh,
                                   const struct trunc *forgot, size_t nf, uint64_t gc)
{
  memset(p, 0, sizeof *p);
  auralog__gossip_push__init(&p->gp);
  for (size_t i = 0; i < nh; i++) {
    range(&p->tv[i], &held[i]);
    p->tp[i] = &p->tv[i];
  }
  for (size_t i = 0; i < nf; i++) {
    range(&p->fv[i], &forgot[i]);
    p->fp[i] = &p->fv[i];
  }
  p->gp.truncs = p->tp;
  p->gp.n_truncs = nh;
  p->gp.forgot = p->fp;
  p->gp.n_forgot = nf;
  p->gp.gc_lsn = gc;
  return &p->gp;
}

/* Two disjoint truncations of epochs 3 and 5; the segment fenced at 5. */
static const struct trunc T3 = {3, 1000, 1000 + LAL, {{0}, {0}, {0}, 0}, 0};
static const struct trunc T5 = {5, 2 * LAL, 3 * LAL, {{0}, {0}, {0}, 0}, 0};

static int setup(void **state)
{
  (void)state;
  seg_init(&seg, 1, 0, 0, 256, 4096);
  seg.epoch = 5;
  seg_add_trunc(&seg, &T3);
  seg_add_trunc(&seg, &T5);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  seg_free(&seg);
  return 0;
}

static void every_peer_holds(int upto)
{
  struct trunc both[2] = {T3, T5};
  struct push p;
  for (int k = 0; k < upto; k++)
    tf_seen(&seg, k, mkpush(&p, both, 2, NULL, 0, 0));
}

static void forgotten_only_when_the_last_peer_holds_it(void **state)
{
  (void)state;
  every_peer_holds(NPEERS - 1);
  assert_int_equal(tf_forget(&seg, NPEERS), 0);
  assert_int_equal(seg.ntruncs, 2);
  every_peer_holds(NPEERS);
  assert_int_equal(tf_forget(&seg, NPEERS), 1);
  /* The newest stays; the older one is a tombstone, held all the same. */
  assert_int_equal(seg.ntruncs, 1);
  assert_int_equal(seg.truncs[0].epoch, 5);
  assert_int_equal(seg.ntombs, 1);
  assert_true(seg_has_trunc(&seg, T3.epoch, T3.from, T3.to));
}

static void a_peers_tombstone_or_gc_point_is_holding_it(void **state)
{
  (void)state;
  struct trunc t5 = T5, t3 = T3;
  struct push p;
  for (int k = 0; k < NPEERS - 2; k++)
    tf_seen(&seg, k, mkpush(&p, &t5, 1, &t3, 1, 0));     /* forgot it */
  tf_seen(&seg, NPEERS - 2, mkpush(&p, &t5, 1, NULL, 0, T3.to));  /* GC passed it */
  assert_int_equal(tf_forget(&seg, NPEERS), 0);
  tf_seen(&seg, NPEERS - 1, mkpush(&p, &t5, 1, NULL, 0, 0));      /* knows nothing of it */
  assert_int_equal(tf_forget(&seg, NPEERS), 0);
  tf_seen(&seg, NPEERS - 1, mkpush(&p, &t5, 1, &t3, 1, 0));
  assert_int_equal(tf_forget(&seg, NPEERS), 1);
  assert_int_equal(seg.ntombs, 1);
}

static void not_fenced_at_its_epoch_it_stays(void **state)
{
  (void)state;
  seg.epoch = 2;             /* a writer of epoch 2 could still append here */
  every_peer_holds(NPEERS);
  assert_int_equal(tf_forget(&seg, NPEERS), 0);
  seg.epoch = 3;
  assert_int_equal(tf_forget(&seg, NPEERS), 1);
}

static void one_a_kept_newer_one_rests_on_stays(void **state)
{
  (void)state;
  /* Epoch 7 recovered from the same VDL as 5 (5 made nothing durable): its
   * range starts below 5's end, so 5 stays while 7 does; 3 may go. */
  struct trunc t7 = {7, 2 * LAL, 4 * LAL, {{0}, {0}, {0}, 0}, 0};
  seg.epoch = 7;
  seg_add_trunc(&seg, &t7);
  struct trunc all[3] = {T3, T5, t7};
  struct push p;
  for (int k = 0; k < NPEERS; k++)
    tf_seen(&seg, k, mkpush(&p, all, 3, NULL, 0, 0));
  assert_int_equal(tf_forget(&seg, NPEERS), 1);
  assert_int_equal(seg.ntruncs, 2);
  assert_true(seg.truncs[0].epoch == 5 || seg.truncs[1].epoch == 5);
  assert_int_equal(seg.ntombs, 1);
  assert_int_equal(seg.tombs[0].epoch, 3);
}

static void a_tombstone_goes_once_no_peer_holds_the_proof(void **state)
{
  (void)state;
  every_peer_holds(NPEERS);
  assert_int_equal(tf_forget(&seg, NPEERS), 1);
  struct trunc t5 = T5, t3 = T3, both[2] = {T3, T5};
  struct push p;
  for (int k = 0; k < NPEERS - 1; k++)
    tf_seen(&seg, k, mkpush(&p, &t5, 1, &t3, 1, 0));
  tf_seen(&seg, NPEERS - 1, mkpush(&p, both, 2, NULL, 0, 0));  /* still holds it */
  tf_forget(&seg, NPEERS);
  assert_int_equal(seg.ntombs, 1);
  tf_seen(&seg, NPEERS - 1, mkpush(&p, &t5, 1, NULL, 0, 0));   /* dropped it too */
  tf_forget(&seg, NPEERS);
  assert_int_equal(seg.ntombs, 0);
  assert_int_equal(seg.ntruncs, 1);
}

static void a_new_peer_must_be_seen_too(void **state)
{
  (void)state;
  every_peer_holds(NPEERS);
  tf_reset(&seg);            /* an Assign changed the peers */
  assert_int_equal(tf_forget(&seg, NPEERS), 0);
  every_peer_holds(NPEERS);
  assert_int_equal(tf_forget(&seg, NPEERS), 1);
}

static void peers_not_all_known_forget_nothing(void **state)
{
  (void)state;
  every_peer_holds(NPEERS - 1);
  assert_int_equal(tf_forget(&seg, NPEERS - 1), 0);
  assert_int_equal(tf_forget(&seg, 0), 0);
  assert_int_equal(seg.ntruncs, 2);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(forgotten_only_when_the_last_peer_holds_it, setup, teardown),
    cmocka_unit_test_setup_teardown(a_peers_tombstone_or_gc_point_is_holding_it, setup, teardown),
    cmocka_unit_test_setup_teardown(not_fenced_at_its_epoch_it_stays, setup, teardown),
    cmocka_unit_test_setup_teardown(one_a_kept_newer_one_rests_on_stays, setup, teardown),
    cmocka_unit_test_setup_teardown(a_tombstone_goes_once_no_peer_holds_the_proof, setup, teardown),
    cmocka_unit_test_setup_teardown(a_new_peer_must_be_seen_too, setup, teardown),
    cmocka_unit_test_setup_teardown(peers_not_all_known_forget_nothing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
