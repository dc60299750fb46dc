/*
 * test_recovery_model.c: the VDL a recovering writer proves (vfs/recovery.c,
 * paper §4.3, lab 25) against a brute-force model of the answer.
 *
 * Instructor-only (labs/instructor-only names tests/hidden): model_vdl
 * below is the definition of the recovered VDL written as code, so a
 * student who had it could copy it into the body. `auralog lab grade 25
 * --submission` runs these tests (impl.c lists them HIDDEN); a student's
 * own grade has tests/unit/test_recovery.c, whose expected values are
 * fixed or come from the student's own answer on an easier input.
 *
 * Checks that the VDL equals the model on histories with holes, whatever
 * the order of the records and however many copies of each come in; and
 * on thousands of random histories with crashes, old epochs, truncated
 * ranges and records lost. Both take their seed from lab_seed
 * (AURALOG_TEST_SEED: the instructor's grade gives each student cases of
 * their own).
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

/* The VDL from the definition: walk the MTRs above the hint in order (the
 * truncated ones are not in the chain); an MTR counts iff every MTR before
 * it counts and, for each PG it touched, every record of that PG in
 * (hint, its last LSN there] is present. */
static uint64_t model_vdl(const struct hist *h, uint64_t hint, const uint8_t *present)
{
  uint64_t vdl = hint;
  for (size_t j = 0; j < h->nm; j++) {
    const struct hmtr *m = &h->m[j];
    if (m->junk || m->cpl <= hint)
      continue;
    for (size_t t = 0; t < m->npg; t++)
      for (size_t i = 0; i < h->n; i++) {
        const struct hrec *r = &h->r[i];
        if (!r->junk && r->pg == m->pg[t] && r->lsn > hint && r->lsn <= m->last[t] &&
            !present[i])
          return vdl;
      }
    vdl = m->cpl;
  }
  return vdl;
}

/* A random history: nmtr MTRs over npgs PGs, with up to three crashes
 * followed by an old epoch and its truncation. */
static void gen_random(struct hist *h, uint64_t *s, size_t nmtr)
{
  uint32_t pgs[8];
  int crashes = 0;
  for (size_t j = 0; j < nmtr; j++) {
    if (crashes < 3 && rng_below(s, 30) == 0) {
      hist_crash(h);
      size_t old = rng_below(s, 5);
      for (size_t o = 0; o < old; o++) {
        size_t len = 1 + rng_below(s, 5);
        for (size_t i = 0; i < len; i++)
          pgs[i] = rng_below(s, (uint32_t)h->npgs);
        hist_mtr(h, pgs, len);
      }
      /* an old writer that crashed mid-MTR: records without their CPL */
      if (rng_below(s, 2)) {
        for (size_t i = rng_below(s, 3) + 1; i > 0; i--) {
          uint32_t pg = rng_below(s, (uint32_t)h->npgs);
          assert_true(h->n < h->cap);
          struct hrec *r = &h->r[h->n++];
          memset(r, 0, sizeof *r);
          r->lsn = h->next_lsn++;
          r->pg = pg;
          r->prev = h->tail[pg];
          h->tail[pg] = r->lsn;
          r->mtr = h->nm;      /* no such MTR: never a CPL */
          r->junk = 1;
        }
      }
      uint64_t end = h->next_lsn - 1;
      hist_truncate(h, end + rng_below(s, 3) * (1 + rng_below(s, 50)));
      crashes++;
    }
    size_t len = 1 + rng_below(s, 5);
    for (size_t i = 0; i < len; i++)
      pgs[i] = rng_below(s, (uint32_t)h->npgs);
    hist_mtr(h, pgs, len);
  }
}

static void test_random_against_model(void **state)
{
  (void)state;
  lab_rule("§4.3: the VDL is the end of the longest run of whole MTRs above the hint along the "
           "CPL chain, records a truncation cut left out");
  uint64_t s = lab_seed(0x5eed);
  size_t cap = 2000;
  uint8_t *present = malloc(cap);
  struct rmeta *v = calloc(cap * 3, sizeof *v);
  assert_non_null(present);
  assert_non_null(v);
  uint64_t start[MAXPG];
  int whole = 0, stopped = 0, at_hint = 0, with_tr = 0;
  for (int trial = 0; trial < 3000; trial++) {
    struct hist h;
    size_t npgs = 1 + rng_below(&s, 6);
    hist_init(&h, npgs, cap);
    gen_random(&h, &s, 20 + rng_below(&s, 60));
    /* the hint: 0, or the CPL of an MTR in the chain */
    lab_at("the hint: 0, or the CPL of an MTR in the chain");
    uint64_t hint = 0;
    if (rng_below(&s, 3)) {
      size_t j = rng_below(&s, (uint32_t)h.nm);
      if (!h.m[j].junk)
        hint = h.m[j].cpl;
    }
    /* lose records: none, a few, or many */
    lab_at("lose records: none, a few, or many");
    uint32_t loss = (uint32_t[]){0, 3, 20, 100}[rng_below(&s, 4)];
    for (size_t i = 0; i < h.n; i++)
      present[i] = rng_below(&s, 1000) >= loss;
    uint64_t want = model_vdl(&h, hint, present);
    hist_start(&h, hint, start);
    size_t n = build_union(&h, hint, present, v, 3, 30, 50, &s);
    uint64_t got = recover_vdl(hint, start, npgs, v, n, h.tr, h.ntr, NULL);
    size_t lost = 0;
    for (size_t i = 0; i < h.n; i++)
      lost += !present[i];
    lab_at("random history %d: %zu PGs, %zu records (%zu lost, copies in any order), %zu "
           "truncated range(s), hint %llu", trial, npgs, h.n, lost, h.ntr,
           (unsigned long long)hint);
    expect_eq(got, want, "the VDL proved");
    if (want == h.last_cpl)
      whole++;
    else if (want == hint)
      at_hint++;
    else
      stopped++;
    with_tr += h.ntr > 0;
    hist_free(&h);
  }
  /* the trials covered every kind of outcome */
  lab_at("the trials covered every kind of outcome");
  expect_true(whole > 300, "more than 300 trials where every MTR is whole");
  expect_true(stopped > 300, "more than 300 trials stopped by a hole");
  expect_true(at_hint > 100, "more than 100 trials ending at the hint");
  expect_true(with_tr > 1000, "more than 1000 trials with truncated ranges");
  free(present);
  free(v);
}

static void test_order_and_duplicates_against_model(void **state)
{
  (void)state;
  lab_rule("§4.3: the records of a read quorum come in any order, several copies of one LSN among "
           "them: the VDL is the same");
  uint64_t s = lab_seed(2024);
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
    uint64_t want = model_vdl(&h, hint, present);
    expect_eq(recover(&h, hint, present), want, "the VDL proved from hint %llu (some records "
              "missing)", (unsigned long long)hint);
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

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_order_and_duplicates_against_model),
    cmocka_unit_test(test_random_against_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
