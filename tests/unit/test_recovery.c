/*
 * test_recovery.c: the VDL a recovering writer proves from storage alone
 * (vfs/recovery.c, paper §4.3), over histories built by recovery_hist.h.
 *
 * Checks that with nothing above the hint the hint comes back; that with
 * every record present the VDL is the last CPL, and a trailing MTR without
 * its CPL is not counted; that a single missing record (tried for every
 * record of a history) stops the walk just before its MTR, however many
 * complete MTRs follow; that an MTR whose records are all present in one PG
 * but one is missing in another is not counted, including when the missing
 * record is the last its PG ever got (no later record reveals the hole);
 * that order and duplicates do not change the answer (seeded by lab_seed:
 * AURALOG_TEST_SEED); that a PG's chain continues from its tail at the
 * hint, and records at or below the hint change nothing; and that 200k
 * records take well under a second. The comparison with a model of the
 * answer on random histories is the instructor's
 * (tests/hidden/test_recovery_model.c: the model is the answer).
 *
 * Truncated ranges, rule T and adoption are in test_rectrunc.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "lab_expect.h"

#include "rng.h"

#include "recovery_hist.h"

/* A history of nmtr MTRs of 1..maxlen records over npgs PGs. */
static void gen_plain(struct hist *h, uint64_t *s, size_t nmtr, size_t maxlen)
{
  uint32_t pgs[64];
  for (size_t j = 0; j < nmtr; j++) {
    size_t len = 1 + rng_below(s, (uint32_t)maxlen);
    for (size_t i = 0; i < len; i++)
      pgs[i] = rng_below(s, (uint32_t)h->npgs);
    hist_mtr(h, pgs, len);
  }
}

/* ---- fixed cases ------------------------------------------------------------ */

static void test_nothing_above_hint(void **state)
{
  (void)state;
  uint64_t start[4] = {0, 0, 0, 0};
  struct rmeta none[1];
  memset(none, 0, sizeof none);
  assert_int_equal(recover_vdl(0, start, 4, none, 0, NULL, 0, NULL), 0);
  uint64_t start2[4] = {41, 0, 57, 13};
  assert_int_equal(recover_vdl(57, start2, 4, none, 0, NULL, 0, NULL), 57);

  /* records all at or below the hint (a segment whose own hint was lower
   * reports them): still the hint */
  struct hist h;
  uint64_t s = 11;
  hist_init(&h, 3, 200);
  gen_plain(&h, &s, 30, 4);
  uint64_t hint = h.m[19].cpl;
  hist_start(&h, hint, start);
  struct rmeta v[200];
  size_t n = 0;
  for (size_t i = 0; i < h.n; i++)
    if (h.r[i].lsn <= hint)
      to_rmeta(&h, i, &v[n++]);
  assert_true(n > 0);
  assert_int_equal(recover_vdl(hint, start, 3, v, n, NULL, 0, NULL), hint);
  /* the hint at the very end: everything is below it */
  assert_int_equal(recover(&h, h.last_cpl, NULL), h.last_cpl);
  hist_free(&h);
}

static void test_all_present(void **state)
{
  (void)state;
  lab_rule("§4.3: the VDL recovery proves is the last CPL whose MTR, and every one before it, is "
           "whole in storage");
  struct hist h;
  hist_init(&h, 3, 100);
  uint64_t c1 = mtr(&h, 0, -1);                 /* 1 */
  uint64_t c2 = mtr(&h, 1, 2, 1, -1);           /* 2..4 */
  uint64_t c3 = mtr(&h, 2, 2, 0, 1, -1);        /* 5..8 */
  uint64_t c4 = mtr(&h, 1, -1);                 /* 9 */
  uint64_t c5 = mtr(&h, 0, 1, 2, 0, 1, 2, -1);  /* 10..15 */
  expect_eq(c1, 1, "the history's CPL c1");
  expect_eq(c5, 15, "the history's CPL c5");
  expect_eq(recover(&h, 0, NULL), 15, "the VDL proved from hint 0, every record present:");
  /* the history cut after each MTR: its CPL */
  lab_at("the history cut after each MTR: its CPL");
  uint64_t cpls[] = {0, c1, c2, c3, c4, c5};
  uint8_t present[100];
  for (size_t j = 0; j < 6; j++) {
    for (size_t i = 0; i < h.n; i++)
      present[i] = h.r[i].lsn <= cpls[j];
    expect_eq(recover(&h, 0, present), cpls[j], "the VDL proved from hint 0, records up to %llu "
              "present", (unsigned long long)cpls[j]);
    /* and from every hint at or below it */
    lab_at("and from every hint at or below it");
    for (size_t k = 0; k <= j; k++)
      expect_eq(recover(&h, cpls[k], present), cpls[j], "the VDL proved from hint %llu, records "
                "up to %llu present", (unsigned long long)cpls[k], (unsigned long long)cpls[j]);
  }
  /* a sixth MTR whose records reached storage but its CPL did not (the
   * writer crashed mid-MTR): not counted */
  lab_at("a sixth MTR whose records reached storage but its CPL did not (the writer crashed "
         "mid-MTR): not counted");
  uint64_t c6 = mtr(&h, 2, 0, 1, 0, -1);        /* 16..19 */
  expect_eq(c6, 19, "the history's CPL c6");
  for (uint64_t cut = c5; cut < c6; cut++) {
    for (size_t i = 0; i < h.n; i++)
      present[i] = h.r[i].lsn <= cut;
    expect_eq(recover(&h, 0, present), c5, "the VDL proved from hint 0, records up to %llu "
              "present", (unsigned long long)cut);
  }
  expect_eq(recover(&h, 0, NULL), c6, "the VDL proved from hint 0, every record present:");
  hist_free(&h);
}

static void test_hole_stops_walk(void **state)
{
  (void)state;
  lab_rule("§4.3: a missing record stops the walk: the VDL is the CPL before the MTR it belongs "
           "to");
  struct hist h;
  hist_init(&h, 3, 100);
  /* 20 MTRs over 3 PGs */
  lab_at("20 MTRs over 3 PGs");
  for (int j = 0; j < 20; j++) {
    if (j % 3 == 0)
      mtr(&h, 0, 1, -1);
    else if (j % 3 == 1)
      mtr(&h, 2, -1);
    else
      mtr(&h, 1, 2, 0, 1, -1);
  }
  expect_eq(recover(&h, 0, NULL), h.last_cpl, "the VDL proved from hint 0, every record present:");
  /* MTR 7 is a single record in PG 2. Drop it: everything from MTR 7 on
   * is out, though MTRs 8..19 are all there (MTR 9 is in PGs 0 and 1
   * only, and still does not count). */
  lab_at("MTR 7 is a single record in PG 2. Drop it: everything from MTR 7 on is out, though MTRs "
         "8..19 are all there (MTR 9 is in PGs 0 and 1 only, and still does not count)");
  expect_eq(h.m[7].len, 1, "the history's MTR 7's length");
  expect_eq(recover_without(&h, 0, h.m[7].cpl), h.m[6].cpl, "the VDL proved from hint 0 with "
            "record h.m[7].cpl missing");
  /* Dropping any one record: the VDL is the CPL before its MTR. */
  lab_at("Dropping any one record: the VDL is the CPL before its MTR");
  for (size_t i = 0; i < h.n; i++) {
    size_t j = h.r[i].mtr;
    uint64_t want = j ? h.m[j - 1].cpl : 0;
    expect_eq(recover_without(&h, 0, h.r[i].lsn), want, "the VDL proved from hint 0 with record "
              "%llu missing", (unsigned long long)h.r[i].lsn);
  }
  /* From a hint past MTR 4, a hole in MTR 10 stops at MTR 9. */
  lab_at("From a hint past MTR 4, a hole in MTR 10 stops at MTR 9");
  uint64_t hint = h.m[4].cpl;
  for (size_t i = h.m[10].first; i < h.m[10].first + h.m[10].len; i++)
    expect_eq(recover_without(&h, hint, h.r[i].lsn), h.m[9].cpl, "the VDL proved from hint %llu "
              "with record %llu missing", (unsigned long long)hint,
              (unsigned long long)h.r[i].lsn);
  hist_free(&h);
}

static void test_cross_pg_whole_or_nothing(void **state)
{
  (void)state;
  lab_rule("§4.3: an MTR counts only if its last record in every PG it touched is on that PG's "
           "chain: whole or not at all");
  struct hist h;
  hist_init(&h, 3, 100);
  uint64_t c1 = mtr(&h, 1, -1);                 /* 1 (pg 1) */
  uint64_t c2 = mtr(&h, 0, 2, 0, -1);           /* 2 (pg 0), 3 (pg 2), 4 (pg 0) */
  expect_eq(c1, 1, "the history's CPL c1");
  expect_eq(c2, 4, "the history's CPL c2");
  /* everything there: 4 */
  lab_at("everything there: 4");
  expect_eq(recover(&h, 0, NULL), 4, "the VDL proved from hint 0, every record present:");
  /* PG 0 has all of MTR 2, PG 2 lacks its record 3, the last PG 2 ever
   * got (nothing later links to it): MTR 2 is out, the VDL is MTR 1's */
  lab_at("PG 0 has all of MTR 2, PG 2 lacks its record 3, the last PG 2 ever got (nothing later "
         "links to it): MTR 2 is out, the VDL is MTR 1's");
  expect_eq(recover_without(&h, 0, 3), c1, "the VDL proved from hint 0 with record 3 missing");
  /* the same with PG 2's record as the CPL */
  lab_at("the same with PG 2's record as the CPL");
  struct hist g;
  hist_init(&g, 3, 100);
  mtr(&g, 1, -1);                               /* 1 */
  mtr(&g, 0, 0, 2, -1);                         /* 2, 3 (pg 0), 4 (pg 2, CPL) */
  expect_eq(recover(&g, 0, NULL), 4, "the VDL proved from hint 0, every record present:");
  expect_eq(recover_without(&g, 0, 4), 1, "the VDL proved from hint 0 with record 4 missing");
  expect_eq(recover_without(&g, 0, 3), 1, "the VDL proved from hint 0 with record 3 missing");
  expect_eq(recover_without(&g, 0, 2), 1, "the VDL proved from hint 0 with record 2 missing");
  hist_free(&g);

  /* later complete MTRs do not bring it back: MTR 3 in PG 2 alone, MTR 4
   * in PG 0 alone (PG 0's chain is whole through it) */
  lab_at("later complete MTRs do not bring it back: MTR 3 in PG 2 alone, MTR 4 in PG 0 alone (PG "
         "0's chain is whole through it)");
  uint64_t c3 = mtr(&h, 2, -1);                 /* 5 */
  uint64_t c4 = mtr(&h, 0, -1);                 /* 6 */
  expect_eq(c4, 6, "the history's CPL c4");
  expect_eq(recover(&h, 0, NULL), c4, "the VDL proved from hint 0, every record present:");
  expect_eq(recover_without(&h, 0, 3), c1, "the VDL proved from hint 0 with record 3 missing");
  expect_eq(recover_without(&h, 0, c3), c2, "the VDL proved from hint 0 with record c3 missing");
  /* a PG 0 record of MTR 2 missing instead */
  lab_at("a PG 0 record of MTR 2 missing instead");
  expect_eq(recover_without(&h, 0, 2), c1, "the VDL proved from hint 0 with record 2 missing");
  /* a PG the MTR did not touch may have a hole after it: no effect on it */
  lab_at("a PG the MTR did not touch may have a hole after it: no effect on it");
  uint64_t c5 = mtr(&h, 1, -1);                 /* 7 */
  mtr(&h, 1, 2, -1);                            /* 8, 9 */
  expect_eq(recover_without(&h, 0, 8), c5, "the VDL proved from hint 0 with record 8 missing");
  hist_free(&h);
}

/* Shuffle v[0..n) (Fisher-Yates). */
static void shuffle(struct rmeta *v, size_t n, uint64_t *s)
{
  for (size_t i = n; i > 1; i--) {
    size_t j = rng_below(s, (uint32_t)i);
    struct rmeta t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

/* present records, each 1..maxcopies times, plus records at or below the
 * hint with probability below_pct, plus truncated ones with junk_pct;
 * shuffled. Returns the count. */
static size_t build_union(const struct hist *h, uint64_t hint, const uint8_t *present,
                          struct rmeta *v, uint32_t maxcopies, uint32_t below_pct,
                          uint32_t junk_pct, uint64_t *s)
{
  size_t n = 0;
  for (size_t i = 0; i < h->n; i++) {
    uint32_t copies;
    if (h->r[i].junk)
      copies = rng_below(s, 100) < junk_pct ? 1 + rng_below(s, maxcopies) : 0;
    else if (h->r[i].lsn <= hint)
      copies = rng_below(s, 100) < below_pct ? 1 + rng_below(s, maxcopies) : 0;
    else
      copies = present[i] ? 1 + rng_below(s, maxcopies) : 0;
    for (uint32_t c = 0; c < copies; c++)
      to_rmeta(h, i, &v[n++]);
  }
  shuffle(v, n, s);
  return n;
}

static void test_order_and_duplicates(void **state)
{
  (void)state;
  lab_rule("§4.3: the records of a read quorum come in any order, several copies of one LSN among "
           "them: the VDL is the same");
  uint64_t s = lab_seed(2024);   /* AURALOG_TEST_SEED: other cases (lab_expect.h) */
  struct hist h;
  hist_init(&h, 4, 400);
  gen_plain(&h, &s, 80, 5);
  uint8_t present[400];
  struct rmeta *v = calloc(400 * 4, sizeof *v);
  assert_non_null(v);
  uint64_t start[MAXPG];
  for (int trial = 0; trial < 200; trial++) {
    uint64_t hint = trial % 4 == 0 ? 0 : h.m[rng_below(&s, 40)].cpl;
    /* a hole or two, or none */
    lab_at("trial %d, hint %llu, a hole or two, or none", trial, (unsigned long long)hint);
    memset(present, 1, sizeof present);
    for (int k = rng_below(&s, 3); k > 0; k--)
      present[rng_below(&s, (uint32_t)h.n)] = 0;
    /* the answer for the records in LSN order, each once: whatever it is
     * (test_hole_stops_walk and the others check it), order and copies
     * must not change it */
    uint64_t want = recover(&h, hint, present);
    hist_start(&h, hint, start);
    size_t n = build_union(&h, hint, present, v, 4, 50, 0, &s);
    lab_at("trial %d, hint %llu: the records shuffled, up to 4 copies of each", trial,
           (unsigned long long)hint);
    expect_eq(recover_vdl(hint, start, h.npgs, v, n, NULL, 0, NULL), want, "recover_vdl returned "
              "(the VDL)");
    /* reversed LSN order, each record three times in a row */
    lab_at("trial %d, hint %llu: reversed LSN order, each record three times in a row", trial,
           (unsigned long long)hint);
    n = 0;
    for (size_t i = h.n; i-- > 0;)
      if (h.r[i].lsn > hint && present[i])
        for (int c = 0; c < 3; c++)
          to_rmeta(&h, i, &v[n++]);
    expect_eq(recover_vdl(hint, start, h.npgs, v, n, NULL, 0, NULL), want, "recover_vdl returned "
              "(the VDL)");
  }
  /* the answer with no holes is the last CPL however it is given */
  lab_at("the answer with no holes is the last CPL however it is given");
  memset(present, 1, sizeof present);
  hist_start(&h, 0, start);
  size_t n = build_union(&h, 0, present, v, 4, 0, 0, &s);
  expect_true(n > 2 * h.n, "duplicates in the input");
  expect_eq(recover_vdl(0, start, h.npgs, v, n, NULL, 0, NULL), h.last_cpl, "recover_vdl returned "
            "(the VDL)");
  free(v);
  hist_free(&h);
}

static void test_start_from_tail_at_hint(void **state)
{
  (void)state;
  lab_rule("§4.3: each PG's chain continues from its tail at the hint (start[pg]); records at or "
           "below the hint change nothing");
  struct hist h;
  hist_init(&h, 4, 100);
  mtr(&h, 0, 1, -1);                            /* 1, 2 */
  mtr(&h, 2, 0, -1);                            /* 3, 4 */
  mtr(&h, 1, 1, -1);                            /* 5, 6 */
  uint64_t hint = mtr(&h, 0, -1);               /* 7 */
  /* PG 3 has nothing below the hint: start 0 */
  lab_at("PG 3 has nothing below the hint: start 0");
  uint64_t a = mtr(&h, 3, 0, 1, 2, -1);         /* 8..11 */
  uint64_t b = mtr(&h, 2, 1, -1);               /* 12, 13 */
  uint64_t start[MAXPG];
  hist_start(&h, hint, start);
  expect_eq(start[0], 7, "start[0] (PG 0's tail at the hint)");
  expect_eq(start[1], 6, "start[1] (PG 1's tail at the hint)");
  expect_eq(start[2], 3, "start[2] (PG 2's tail at the hint)");
  expect_eq(start[3], 0, "start[3] (PG 3's tail at the hint)");
  expect_eq(recover(&h, hint, NULL), b, "the VDL proved from hint %llu, every record present:",
            (unsigned long long)hint);
  /* the records at or below the hint missing is fine */
  lab_at("the records at or below the hint missing is fine");
  uint8_t present[100];
  for (size_t i = 0; i < h.n; i++)
    present[i] = h.r[i].lsn > hint;
  expect_eq(recover(&h, hint, present), b, "the VDL proved from hint %llu (some records missing)",
              (unsigned long long)hint);
  /* and given as well (from a segment with a lower hint), with a hole
   * among them: ignored */
  lab_at("and given as well (from a segment with a lower hint), with a hole among them: ignored");
  struct rmeta v[100];
  size_t n = 0;
  for (size_t i = 0; i < h.n; i++)
    if (h.r[i].lsn != 4)
      to_rmeta(&h, i, &v[n++]);
  expect_eq(recover_vdl(hint, start, 4, v, n, NULL, 0, NULL), b, "recover_vdl returned (the VDL)");
  /* the chain really starts at start[k]: a PG's tail given as 0 while its
   * first record above the hint links to 7 does not reach it */
  lab_at("the chain really starts at start[k]: a PG's tail given as 0 while its first record "
         "above the hint links to 7 does not reach it");
  n = 0;
  for (size_t i = 0; i < h.n; i++)
    if (h.r[i].lsn > hint)
      to_rmeta(&h, i, &v[n++]);
  uint64_t bad[MAXPG];
  memcpy(bad, start, sizeof bad);
  bad[0] = 0;
  expect_eq(recover_vdl(hint, bad, 4, v, n, NULL, 0, NULL), hint, "recover_vdl returned (the VDL)");
  /* PG 2's tail wrong: MTR a touches it, so nothing counts either */
  lab_at("PG 2's tail wrong: MTR a touches it, so nothing counts either");
  memcpy(bad, start, sizeof bad);
  bad[2] = 0;
  expect_eq(recover_vdl(hint, bad, 4, v, n, NULL, 0, NULL), hint, "recover_vdl returned (the VDL)");
  /* a hole in PG 3 (start 0) right at its first record */
  lab_at("a hole in PG 3 (start 0) right at its first record");
  expect_eq(recover_without(&h, hint, 8), hint, "the VDL proved from hint %llu with record 8 "
            "missing", (unsigned long long)hint);
  expect_eq(recover_without(&h, hint, 12), a, "the VDL proved from hint %llu with record 12 "
            "missing", (unsigned long long)hint);
  hist_free(&h);
}

/* This thread's CPU time, not the wall clock: what the walk costs, the
 * same on a machine busy with other work (a wall-clock second was once
 * missed by the reference body while a torture ran beside the tests). */
static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_large_input_fast(void **state)
{
  (void)state;
  lab_rule("§4.3: recovery is quick: 200k records take well under a second");
  uint64_t s = 99;
  size_t cap = 200000;
  struct hist h;
  hist_init(&h, 16, cap + 16);
  uint32_t pgs[8];
  while (h.n + 8 <= cap) {
    size_t len = 1 + rng_below(&s, 8);
    for (size_t i = 0; i < len; i++)
      pgs[i] = rng_below(&s, 16);
    hist_mtr(&h, pgs, len);
  }
  while (h.n < cap)
    mtr(&h, (int)rng_below(&s, 16), -1);
  expect_eq(h.n, cap, "the history's records");
  uint64_t start[MAXPG];
  hist_start(&h, 0, start);
  struct rmeta *v = calloc(cap, sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < cap; i++)
    to_rmeta(&h, i, &v[i]);
  shuffle(v, cap, &s);
  struct trunc tr[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
  double t0 = now();
  uint64_t got = recover_vdl(0, start, 16, v, cap, tr, 4, NULL);
  double t1 = now();
  expect_eq(got, h.last_cpl, "recover_vdl returned (the VDL)");
  /* a hole at the start: the walk stops at once, still quickly */
  lab_at("a hole at the start: the walk stops at once, still quickly");
  for (size_t i = 0; i < cap; i++)
    to_rmeta(&h, i, &v[i]);
  v[10] = v[cap - 1];
  shuffle(v, cap - 1, &s);
  double t2 = now();
  got = recover_vdl(0, start, 16, v, cap - 1, tr, 4, NULL);
  double t3 = now();
  expect_eq(got, h.r[10].mtr ? h.m[h.r[10].mtr - 1].cpl : 0, "recover_vdl returned (the VDL)");
  if (t1 - t0 >= 1.0 || t3 - t2 >= 1.0)
    fail_msg("200k records took %.3f s and %.3f s, expected well under 1 s each — %s", t1 - t0,
             t3 - t2, lab_rule_);
  free(v);
  hist_free(&h);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_nothing_above_hint),
    cmocka_unit_test(test_all_present),
    cmocka_unit_test(test_hole_stops_walk),
    cmocka_unit_test(test_cross_pg_whole_or_nothing),
    cmocka_unit_test(test_order_and_duplicates),
    cmocka_unit_test(test_start_from_tail_at_hint),
    cmocka_unit_test(test_large_input_fast),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
