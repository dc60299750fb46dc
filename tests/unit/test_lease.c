/*
 * test_lease.c: the writer's read lease (vfs/lease.c).
 *
 * Checks that the lease opened at a time is valid for exactly its duration
 * from then; that an answer naming our epoch renews it from its probe's
 * send time, not from when the answer arrived (a slow answer buys less);
 * that answers out of order never move it back; that an answer naming a
 * newer epoch fences for good, with "fenced by epoch N", even if answers
 * with our epoch follow and even if it answers a probe the lease forgot; that an older epoch, an unknown probe, a dropped
 * or lost probe, or a probe forgotten because too many were outstanding,
 * renew nothing; that without answers the lease runs out and says so; and,
 * against a model on random schedules (fixed seed), the rule of lease.h:
 * whenever the lease is valid at t, no newer epoch existed at
 * t - duration, and it is valid until duration after the newest probe
 * answered with our epoch.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rng.h"

#include "vfs/lease.h"

#define D 2000u              /* the lease's duration in these tests */

static int valid(const struct lease *l, unsigned long long now)
{
  char why[300];
  return lease_valid(l, now, D, why, sizeof why);
}

static void test_open_grant_lasts_its_duration(void **state)
{
  (void)state;
  struct lease l;
  char why[300];
  lease_init(&l, 3, 1000);
  assert_true(valid(&l, 1000));
  assert_true(valid(&l, 1000 + D - 1));
  assert_false(lease_valid(&l, 1000 + D, D, why, sizeof why));
  assert_non_null(strstr(why, "read lease expired"));
  assert_non_null(strstr(why, "epoch 3"));
  assert_null(strstr(why, "fenced"));
  /* A clock reading before the grant is not an older lease. */
  assert_true(valid(&l, 500));
}

static void test_renewal_counts_from_send_time(void **state)
{
  (void)state;
  struct lease l;
  lease_init(&l, 5, 0);
  lease_sent(&l, 1, 1500);
  /* The answer arrives late, at 3000: the lease counts from 1500. */
  assert_int_equal(lease_answer(&l, 1, 5), LEASE_RENEWED);
  assert_true(valid(&l, 3000));
  assert_true(valid(&l, 1500 + D - 1));
  assert_false(valid(&l, 1500 + D));
  /* The same answer twice renews once. */
  assert_int_equal(lease_answer(&l, 1, 5), LEASE_IGNORED);
}

static void test_out_of_order_answers_never_move_back(void **state)
{
  (void)state;
  struct lease l;
  lease_init(&l, 2, 0);
  lease_sent(&l, 10, 100);
  lease_sent(&l, 11, 300);
  lease_sent(&l, 12, 500);
  assert_int_equal(lease_answer(&l, 12, 2), LEASE_RENEWED);
  assert_int_equal(lease_answer(&l, 10, 2), LEASE_RENEWED);
  assert_true(valid(&l, 500 + D - 1));   /* still from 500, not 100 */
  assert_false(valid(&l, 500 + D));
  assert_int_equal(lease_answer(&l, 11, 2), LEASE_RENEWED);
  assert_false(valid(&l, 500 + D));
}

static void test_newer_epoch_fences_for_good(void **state)
{
  (void)state;
  struct lease l;
  char why[300];
  lease_init(&l, 7, 0);
  lease_sent(&l, 1, 100);
  lease_sent(&l, 2, 200);
  lease_sent(&l, 3, 300);
  assert_int_equal(lease_answer(&l, 2, 8), LEASE_FENCED);
  /* The lease had time left: fenced wins over it at once. */
  assert_false(lease_valid(&l, 250, D, why, sizeof why));
  assert_non_null(strstr(why, "fenced by epoch 8"));
  assert_non_null(strstr(why, "writer has epoch 7"));
  /* An answer with our epoch (a probe answered earlier, arriving late)
   * does not undo it. */
  assert_int_equal(lease_answer(&l, 1, 7), LEASE_IGNORED);
  assert_false(valid(&l, 250));
  /* A still newer epoch is the one named, even answering a probe the
   * lease does not know. */
  assert_int_equal(lease_answer(&l, 77, 9), LEASE_FENCED);
  assert_int_equal(l.fenced_by, 9);
  assert_int_equal(lease_answer(&l, 3, 9), LEASE_FENCED);
  assert_false(lease_valid(&l, 250, D, why, sizeof why));
  assert_non_null(strstr(why, "fenced by epoch 9"));
  lease_sent(&l, 4, 400);
  assert_int_equal(lease_answer(&l, 4, 7), LEASE_IGNORED);
  assert_false(valid(&l, 400));
}

static void test_what_renews_nothing(void **state)
{
  (void)state;
  struct lease l;
  lease_init(&l, 4, 0);
  /* An older epoch (a coordinator that forgot?), an unknown probe. */
  lease_sent(&l, 1, 1000);
  assert_int_equal(lease_answer(&l, 1, 3), LEASE_IGNORED);
  assert_int_equal(lease_answer(&l, 99, 4), LEASE_IGNORED);
  assert_false(valid(&l, D));
  /* Dropped (refused) and lost (connection closed) probes. */
  lease_sent(&l, 2, 1100);
  lease_drop(&l, 2);
  assert_int_equal(lease_answer(&l, 2, 4), LEASE_IGNORED);
  lease_sent(&l, 3, 1200);
  lease_sent(&l, 4, 1300);
  lease_lost(&l);
  assert_int_equal(lease_answer(&l, 3, 4), LEASE_IGNORED);
  assert_int_equal(lease_answer(&l, 4, 4), LEASE_IGNORED);
  assert_int_equal(l.nout, 0);
  assert_false(valid(&l, D));
  /* Too many outstanding: the oldest is forgotten, the newest kept. */
  for (unsigned i = 0; i < LEASE_PROBES + 3; i++)
    lease_sent(&l, 100 + i, 2000 + i);
  assert_int_equal(l.nout, LEASE_PROBES);
  assert_int_equal(lease_answer(&l, 100, 4), LEASE_IGNORED);
  assert_int_equal(lease_answer(&l, 101, 4), LEASE_IGNORED);
  assert_int_equal(lease_answer(&l, 102, 4), LEASE_IGNORED);
  assert_int_equal(lease_answer(&l, 103, 4), LEASE_RENEWED);
  assert_true(valid(&l, 2003 + D - 1));
  assert_false(valid(&l, 2003 + D));
  /* And after all that, one good answer renews it. */
  lease_sent(&l, 500, 9000);
  assert_int_equal(lease_answer(&l, 500, 4), LEASE_RENEWED);
  assert_true(valid(&l, 9000 + D - 1));
}

static void test_a_zeroed_lease_is_not_valid(void **state)
{
  (void)state;
  struct lease l;
  char why[300];
  memset(&l, 0, sizeof l);
  l.epoch = 2;
  assert_false(lease_valid(&l, 0, D, why, sizeof why));
  assert_non_null(strstr(why, "has not confirmed epoch 2"));
}

/* Random schedules: the coordinator's epoch goes up at random times; the
 * engine sends probes, the coordinator answers each at a random later
 * time with the epoch of that moment, the answer arrives later still (in
 * any order, some never). Whenever the lease says valid at t, the newer
 * epoch (if any) must be younger than D; and once the coordinator's newer
 * epoch has been answered, the engine is fenced. */
static void test_random_against_model(void **state)
{
  (void)state;
  uint64_t r = 20240611;
  for (int run = 0; run < 300; run++) {
    unsigned long long bump_at = 500 + rng_below(&r, 20000);   /* a newer writer opens */
    struct lease l;
    lease_init(&l, 1, 0);
    struct probe {
      uint64_t id;
      unsigned long long sent, answered, arrives;
      int lost, done;
    } p[400];
    size_t np = 0;
    int fenced_seen = 0;
    unsigned long long best = 0;   /* newest send time answered with epoch 1 */
    for (unsigned long long t = 0; t < 30000; t += 1 + rng_below(&r, 50)) {
      if (np < 400 && rng_below(&r, 4) == 0) {
        struct probe *q = &p[np];
        q->id = np + 1;
        q->sent = t;
        q->answered = t + rng_below(&r, rng_below(&r, 10) == 0 ? 5000 : 50);
        q->arrives = q->answered + rng_below(&r, rng_below(&r, 10) == 0 ? 5000 : 50);
        q->lost = rng_below(&r, 20) == 0;
        q->done = 0;
        lease_sent(&l, q->id, t);
        np++;
      }
      for (size_t i = 0; i < np; i++) {
        struct probe *q = &p[i];
        if (q->done || q->arrives > t)
          continue;
        q->done = 1;
        if (q->lost)
          continue;
        uint64_t ep = q->answered >= bump_at ? 2 : 1;
        enum lease_event ev = lease_answer(&l, q->id, ep);
        if (ep == 2) {
          assert_int_equal(ev, LEASE_FENCED);
          fenced_seen = 1;
        } else if (fenced_seen) {
          assert_int_not_equal(ev, LEASE_RENEWED);
        } else if (ev == LEASE_RENEWED) {
          best = q->sent > best ? q->sent : best;
        } else {
          /* only a probe forgotten while too many were outstanding */
          assert_int_equal(ev, LEASE_IGNORED);
        }
      }
      int ok = valid(&l, t);
      if (ok) {
        /* The rule: no newer epoch older than D. */
        assert_true(t < bump_at + D);
        assert_false(fenced_seen);
      }
      /* And it lasts as long as the rule allows. */
      if (!fenced_seen && t < best + D)
        assert_true(ok);
    }
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_open_grant_lasts_its_duration),
    cmocka_unit_test(test_renewal_counts_from_send_time),
    cmocka_unit_test(test_out_of_order_answers_never_move_back),
    cmocka_unit_test(test_newer_epoch_fences_for_good),
    cmocka_unit_test(test_what_renews_nothing),
    cmocka_unit_test(test_a_zeroed_lease_is_not_valid),
    cmocka_unit_test(test_random_against_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
