/*
 * test_rectrunc.c: truncated ranges in the VDL a recovering writer proves
 * (vfs/recovery.c, paper §4.3), rule T, and what recovery adopts.
 *
 * Checks that records in a truncated range (an old epoch a segment still
 * holds, an interrupted truncation, several successive truncations, ranges
 * reported by several segments) are ignored while the next epoch, linked
 * back across the range, is followed (histories built by recovery_hist.h).
 *
 * Rule T and adoption: a newer epoch's records inside an older epoch's
 * truncated range (an interrupted recovery's, that a later one never saw)
 * are followed, while the older epoch's records there are not; the
 * records on the chains in (hint, vdl] are marked for adoption, one copy
 * each, an MTR held by one segment only included (recovery then writes it
 * to a write quorum), those above the VDL are not; and each PG's tail is
 * its last record at or below the VDL on the proved chain, not a record a
 * segment merely holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lab_expect.h"

#include "recovery_hist.h"

static void test_truncated_ranges(void **state)
{
  (void)state;
  lab_rule("§4.3, rule T: records a truncation cut (an older epoch's, inside its range) are left "
           "out of the chains; the next epoch, linked back across the range, is followed");
  struct hist h;
  hist_init(&h, 3, 100);
  mtr(&h, 0, 1, -1);                            /* 1, 2 */
  mtr(&h, 2, 0, -1);                            /* 3, 4 */
  uint64_t from = mtr(&h, 1, -1);               /* 5: the VDL at the crash */
  expect_eq(from, 5, "the history's VDL at the crash");
  /* the old writer went on: three whole MTRs, every PG, 6..12 */
  lab_at("the old writer went on: three whole MTRs, every PG, 6..12");
  hist_crash(&h);
  mtr(&h, 0, 1, -1);
  mtr(&h, 2, 2, -1);
  uint64_t old_end = mtr(&h, 0, 1, 2, -1);
  expect_eq(old_end, 12, "the history's last old record");
  hist_truncate(&h, 1005);

  /* a segment that was down during the truncation still holds all of the
   * old epoch: nothing new was written, the VDL stays at the truncation */
  lab_at("a segment that was down during the truncation still holds all of the old epoch: nothing "
         "new was written, the VDL stays at the truncation");
  expect_eq(recover(&h, 0, NULL), from, "the VDL proved from hint 0");
  expect_eq(recover(&h, 2, NULL), from, "the VDL proved from hint 2");
  expect_eq(recover(&h, from, NULL), from, "the VDL proved from hint %llu",
            (unsigned long long)from);

  /* the new epoch: 1006.., PG 0 first linking back to 4, PG 1 to 5, PG 2
   * to 3; the first MTR's prev_cpl is 5, like the old epoch's first */
  lab_at("the new epoch: 1006.., PG 0 first linking back to 4, PG 1 to 5, PG 2 to 3; the first "
         "MTR's prev_cpl is 5, like the old epoch's first");
  uint64_t n1 = mtr(&h, 1, 0, -1);              /* 1006, 1007 */
  uint64_t n2 = mtr(&h, 2, -1);                 /* 1008 */
  uint64_t n3 = mtr(&h, 0, 2, 1, -1);           /* 1009..1011 */
  expect_eq(n1, 1007, "the history's LSN n1");
  expect_eq(h.r[hist_find(&h, 1006)].prev, 5, "the history's record 1006's backlink");
  expect_eq(h.r[hist_find(&h, 1007)].prev, 4, "the history's record 1007's backlink");
  expect_eq(h.r[hist_find(&h, 1008)].prev, 3, "the history's record 1008's backlink");
  expect_eq(h.r[hist_find(&h, 1007)].prev_cpl, 5, "the history's record 1007's prev_cpl");
  expect_eq(recover(&h, 0, NULL), n3, "the VDL proved from hint 0");
  expect_eq(recover(&h, from, NULL), n3, "the VDL proved from hint %llu",
            (unsigned long long)from);
  /* holes in the new epoch still stop it */
  lab_at("holes in the new epoch still stop it");
  expect_eq(recover_without(&h, 0, 1008), n1, "the VDL proved from hint 0 with record 1008 "
            "missing");
  expect_eq(recover_without(&h, 0, 1006), from, "the VDL proved from hint 0 with record 1006 "
            "missing");
  expect_eq(recover_without(&h, from, 1010), n2, "the VDL proved from hint %llu with record 1010 "
            "missing", (unsigned long long)from);
  /* holes in the old epoch do not matter */
  lab_at("holes in the old epoch do not matter");
  expect_eq(recover_without(&h, 0, 6), n3, "the VDL proved from hint 0 with record 6 missing");
  expect_eq(recover_without(&h, 0, 12), n3, "the VDL proved from hint 0 with record 12 missing");
  /* a hole below the truncation still does */
  lab_at("a hole below the truncation still does");
  expect_eq(recover_without(&h, 0, 3), 2, "the VDL proved from hint 0 with record 3 missing");

  /* the range reported by several segments (duplicates), and an empty
   * range: same */
  lab_at("the range reported by several segments (duplicates), and an empty range: same");
  struct hist g = h;
  g.ntr = 0;
  g.tr[g.ntr++] = (struct trunc){g.epoch, from, 1005};
  g.tr[g.ntr++] = (struct trunc){g.epoch, 0, 0};
  g.tr[g.ntr++] = (struct trunc){g.epoch, from, 1005};
  g.tr[g.ntr++] = (struct trunc){g.epoch, from, 1005};
  expect_eq(recover(&g, 0, NULL), n3, "the VDL proved from hint 0");
  expect_eq(recover_without(&g, 0, 1008), n1, "the VDL proved from hint 0 with record 1008 "
            "missing");
  hist_free(&h);

  /* An interrupted truncation: recovery chose VDL 3 and recorded (3, 1003]
   * on one segment, then crashed before the others truncated. The old
   * epoch above 3 is complete on them. A second recovery must not follow
   * it. Then it crashes again right after: the range is recorded twice,
   * the second time from the same VDL to further on, and a writer wrote
   * in between (records in (1003, 2003]) that nothing made durable. */
  lab_at("An interrupted truncation: recovery chose VDL 3 and recorded (3, 1003] on one segment, "
         "then crashed before the others truncated. The old epoch above 3 is complete on them. A "
         "second recovery must not follow it. Then it crashes again right after: the range is "
         "recorded twice, the second time from the same VDL to further on, and a writer wrote in "
         "between (records in (1003, 2003]) that nothing made durable");
  hist_init(&h, 2, 100);
  mtr(&h, 0, 1, -1);                            /* 1, 2 */
  from = mtr(&h, 1, -1);                        /* 3 */
  hist_crash(&h);
  mtr(&h, 0, -1);                               /* 4 */
  mtr(&h, 1, 0, -1);                            /* 5, 6 */
  hist_truncate(&h, 1003);
  expect_eq(recover(&h, 0, NULL), from, "the VDL proved from hint 0");
  hist_crash(&h);
  mtr(&h, 0, 1, -1);                            /* 1004, 1005: never durable */
  mtr(&h, 1, -1);                               /* 1006 */
  hist_truncate(&h, 2003);
  expect_eq(h.ntr, 2, "the history's truncations");
  expect_eq(h.tr[1].from, from, "the history's second truncation's start");
  expect_eq(recover(&h, 0, NULL), from, "the VDL proved from hint 0");
  expect_eq(recover(&h, 2, NULL), from, "the VDL proved from hint 2");
  /* the third writer */
  lab_at("the third writer");
  uint64_t t1 = mtr(&h, 1, -1);                 /* 2004 */
  uint64_t t2 = mtr(&h, 0, 1, 0, -1);           /* 2005..2007 */
  expect_eq(t1, 2004, "the history's LSN t1");
  expect_eq(h.r[hist_find(&h, 2004)].prev, 3, "the history's record 2004's backlink");
  expect_eq(h.r[hist_find(&h, 2005)].prev, 1, "the history's record 2005's backlink");
  expect_eq(recover(&h, 0, NULL), t2, "the VDL proved from hint 0");
  expect_eq(recover(&h, from, NULL), t2, "the VDL proved from hint %llu",
            (unsigned long long)from);
  expect_eq(recover_without(&h, 0, 2005), t1, "the VDL proved from hint 0 with record 2005 "
            "missing");
  expect_eq(recover_without(&h, 0, 2004), from, "the VDL proved from hint 0 with record 2004 "
            "missing");
  hist_free(&h);

  /* Successive truncations at rising VDLs, the second writer's history
   * durable in part: (2, 1002], then 1003.. durable to 1004, (1004, 2004] */
  lab_at("Successive truncations at rising VDLs, the second writer's history durable in part: (2, "
         "1002], then 1003.. durable to 1004, (1004, 2004]");
  hist_init(&h, 2, 100);
  mtr(&h, 1, 0, -1);                            /* 1, 2 */
  hist_crash(&h);
  mtr(&h, 0, 1, 0, -1);                         /* 3..5 */
  hist_truncate(&h, 1002);
  mtr(&h, 0, -1);                               /* 1003 */
  uint64_t d = mtr(&h, 1, -1);                  /* 1004 */
  hist_crash(&h);
  mtr(&h, 1, 0, -1);                            /* 1005, 1006 */
  hist_truncate(&h, 2004);
  expect_eq(h.tr[1].from, d, "the history's second truncation's start");
  expect_eq(recover(&h, 0, NULL), d, "the VDL proved from hint 0");
  uint64_t e = mtr(&h, 0, 1, -1);               /* 2005, 2006 */
  expect_eq(h.r[hist_find(&h, 2005)].prev, 1003, "the history's record 2005's backlink");
  expect_eq(recover(&h, 0, NULL), e, "the VDL proved from hint 0");
  expect_eq(recover(&h, 2, NULL), e, "the VDL proved from hint 2");
  expect_eq(recover(&h, d, NULL), e, "the VDL proved from hint %llu", (unsigned long long)d);
  expect_eq(recover_without(&h, 2, 1003), 2, "the VDL proved from hint 2 with record 1003 missing");
  hist_free(&h);
}

/* A record for the hand-made cases below: (lsn, prev, epoch) in pg. */
static struct rmeta rm(uint64_t lsn, uint64_t prev, uint64_t epoch, uint32_t pg)
{
  struct rmeta r;
  memset(&r, 0, sizeof r);
  r.lsn = lsn;
  r.prev = prev;
  r.epoch = epoch;
  r.pg = pg;
  return r;
}

/* Make r the CPL of a one-PG MTR that links back to prev_cpl. */
static void as_cpl(struct rmeta *r, uint64_t prev_cpl, const uint32_t *pg,
                   const uint64_t *last)
{
  r->cpl = 1;
  r->prev_cpl = prev_cpl;
  r->mtr_pg = pg;
  r->mtr_last = last;
  r->nmtr = 1;
}

static void test_newer_epoch_inside_an_older_range(void **state)
{
  (void)state;
  lab_rule("§4.3, rule T: a truncation cuts only records of epochs older than its own; of several "
           "copies of one LSN the highest epoch's counts");
  /* Epoch 1 wrote up to 20 (durable to 10). An interrupted epoch-2
   * recovery wrote (20, 1020] to one segment; epoch 3's recovery did not
   * see it, proved 10, truncated (10, 1010] and wrote 1011 (linked to 10)
   * and 1012. Epoch 4's recovery hears both ranges. */
  lab_at("Epoch 1 wrote up to 20 (durable to 10). An interrupted epoch-2 recovery wrote (20, "
         "1020] to one segment; epoch 3's recovery did not see it, proved 10, truncated (10, "
         "1010] and wrote 1011 (linked to 10) and 1012. Epoch 4's recovery hears both ranges");
  static const uint32_t pg0[1] = {0};
  static const uint64_t l15[1] = {15}, l1011[1] = {1011}, l1012[1] = {1012};
  struct rmeta v[4];
  v[0] = rm(15, 10, 1, 0);
  as_cpl(&v[0], 10, pg0, l15);             /* epoch 1's, above 10: cut */
  v[1] = rm(1011, 10, 3, 0);
  as_cpl(&v[1], 10, pg0, l1011);
  v[2] = rm(1012, 1011, 3, 0);
  as_cpl(&v[2], 1011, pg0, l1012);
  v[3] = v[2];                             /* a second copy */
  struct trunc tr[2] = {{2, 20, 1020}, {3, 10, 1010}};
  uint64_t start[1] = {10}, tails[1];
  expect_eq(recover_vdl(10, start, 1, v, 4, tr, 2, tails), 1012, "recover_vdl returned (the VDL)");
  expect_eq(tails[0], 1012, "tails[0] (PG 0's last record at or below the VDL)");
  size_t adopted = 0;
  for (int i = 0; i < 4; i++)
    adopted += v[i].adopt;
  expect_eq(adopted, 2, "records marked adopt");            /* 1011 and one copy of 1012 */
  /* Under the old rule (every range cuts everything in it) the walk
   * stopped at 10 and epoch 3's acknowledged 1011 and 1012 were lost. */
  lab_at("Under the old rule (every range cuts everything in it) the walk stopped at 10 and epoch "
         "3's acknowledged 1011 and 1012 were lost");
  struct trunc all[2] = {{9, 20, 1020}, {9, 10, 1010}};
  expect_eq(recover_vdl(10, start, 1, v, 4, all, 2, NULL), 10, "recover_vdl returned (the VDL)");
}

static void test_adoption_marks_the_proved_chain(void **state)
{
  (void)state;
  lab_rule("§4.3: recovery adopts exactly the records on the chains in (hint, VDL], and each PG's "
           "tail is its last record at or below the VDL");
  /* Two PGs. Hint 4 (PG 0's tail 3, PG 1's 4). Above it: an MTR of 5
   * (pg 0) and 6 (pg 1, CPL), held by a single segment; then 7 (pg 0,
   * CPL); then an MTR 8 (pg 1), 9 (pg 0, CPL) whose record 8 is missing;
   * and a stray 12 (pg 1) linked to 8. */
  lab_at("Two PGs. Hint 4 (PG 0's tail 3, PG 1's 4). Above it: an MTR of 5 (pg 0) and 6 (pg 1, "
         "CPL), held by a single segment; then 7 (pg 0, CPL); then an MTR 8 (pg 1), 9 (pg 0, CPL) "
         "whose record 8 is missing; and a stray 12 (pg 1) linked to 8");
  static const uint32_t pgs01[2] = {0, 1}, pg0[1] = {0}, pgs10[2] = {1, 0};
  static const uint64_t l56[2] = {5, 6}, l7[1] = {7}, l89[2] = {8, 9};
  struct rmeta v[5];
  v[0] = rm(5, 3, 1, 0);
  v[1] = rm(6, 4, 1, 1);
  v[1].cpl = 1;
  v[1].prev_cpl = 4;
  v[1].mtr_pg = pgs01;
  v[1].mtr_last = l56;
  v[1].nmtr = 2;
  v[2] = rm(7, 5, 1, 0);
  as_cpl(&v[2], 6, pg0, l7);
  v[3] = rm(9, 7, 1, 0);
  v[3].cpl = 1;
  v[3].prev_cpl = 7;
  v[3].mtr_pg = pgs10;
  v[3].mtr_last = l89;
  v[3].nmtr = 2;
  v[4] = rm(12, 8, 1, 1);
  uint64_t start[2] = {3, 4}, tails[2];
  expect_eq(recover_vdl(4, start, 2, v, 5, NULL, 0, tails), 7, "recover_vdl returned (the VDL)");
  /* sorted by LSN now: 5 6 7 9 12 */
  lab_at("sorted by LSN now: 5 6 7 9 12");
  expect_eq(v[0].lsn, 5, "the first record after sorting (its LSN)");
  expect_true(v[0].adopt && v[1].adopt && v[2].adopt, "5, 6 and 7 (on their chains, at or below "
              "the VDL) marked adopt");
  /* 9: on the chain, above the VDL */
  expect_true(!(v[3].adopt), "9 (on the chain but above the VDL) not marked adopt");
  /* 12: past the hole at 8 */
  expect_true(!(v[4].adopt), "12 (past the hole at 8) not marked adopt");
  expect_eq(tails[0], 7, "tails[0] (PG 0's last record at or below the VDL)");
  expect_eq(tails[1], 6, "tails[1] (PG 1's last record at or below the VDL)");
  /* Nothing above the hint: the tails are the starts. */
  lab_at("Nothing above the hint: the tails are the starts");
  expect_eq(recover_vdl(4, start, 2, v, 0, NULL, 0, tails), 4, "recover_vdl returned (the VDL)");
  expect_eq(tails[0], 3, "tails[0] (PG 0's last record at or below the VDL)");
  expect_eq(tails[1], 4, "tails[1] (PG 1's last record at or below the VDL)");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_truncated_ranges),
    cmocka_unit_test(test_newer_epoch_inside_an_older_range),
    cmocka_unit_test(test_adoption_marks_the_proved_chain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
