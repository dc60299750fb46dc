/*
 * test_diff_model.c: the page diff (vfs/diff.c, paper §3.1, lab 20)
 * against a model of the answer.
 *
 * Instructor-only (labs/instructor-only names tests/hidden): ref_diff
 * below is the diff written the slow obvious way, a byte at a time, which
 * is an answer to the lab a student could copy into the body.
 * `auralog lab grade 20 --submission` runs this test (impl.c lists it
 * HIDDEN); a student's tests/unit/test_diff.c checks the properties that
 * define the diff (round trip, tight ranges, the merge gap) instead.
 *
 * Checks that on random page pairs of every size, odd ones and a NULL
 * before-image included, page_diff returns the model's ranges and count,
 * also into an output array too small for them (the count in full, the
 * first max ranges). Its seed comes from lab_seed (AURALOG_TEST_SEED: the
 * instructor's grade gives each student cases of their own).
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

#include "param.h"
#include "vfs/diff.h"

static void rng_fill(uint64_t *s, uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)rng_next(s);
}

static const uint32_t sizes[] = { 512, 1024, 4096, 65536 };
/* Sizes that are not a multiple of 8 exercise the zero-padded tail word. */
static const uint32_t odd_sizes[] = { 1, 7, 8, 9, 13, 15, 17, 100, 4099 };

/* The merge gap, as a variable so that DIFF_MERGE_GAP 0 compiles without
 * "unsigned < 0" warnings; and the fewest unchanged bytes that separate
 * two ranges (adjacent changed bytes are one range even with gap 0). */
static const size_t gap = DIFF_MERGE_GAP;
#define SEP (DIFF_MERGE_GAP > 0 ? DIFF_MERGE_GAP : 1)

#define NSIZES (sizeof sizes / sizeof sizes[0])
#define NODD (sizeof odd_sizes / sizeof odd_sizes[0])

/* The diff, the slow obvious way: one byte at a time. */
static size_t ref_diff(const uint8_t *before, const uint8_t *after, uint32_t size,
                       struct drange *out, size_t max)
{
  size_t count = 0, start = 0, end = 0;
  int open = 0;
  for (size_t i = 0; i < size; i++) {
    uint8_t b = before ? before[i] : 0;
    if (b == after[i])
      continue;
    if (open && (i == end || i - end < gap)) {
      end = i + 1;
      continue;
    }
    if (open) {
      if (count < max)
        out[count] = (struct drange){ (uint32_t)start, (uint32_t)(end - start) };
      count++;
    }
    open = 1;
    start = i;
    end = i + 1;
  }
  if (open) {
    if (count < max)
      out[count] = (struct drange){ (uint32_t)start, (uint32_t)(end - start) };
    count++;
  }
  return count;
}

/* Change after (a copy of before) in one of several ways. */
static void mutate(uint64_t *s, uint8_t *after, uint32_t size)
{
  switch (rng_below(s, 6)) {
  case 0:                 /* a few single bytes */
    for (uint32_t k = rng_below(s, 5) + 1; k > 0; k--)
      after[rng_below(s, size)] ^= (uint8_t)(rng_below(s, 255) + 1);
    break;
  case 1:                 /* many scattered bytes */
    for (uint32_t k = rng_below(s, size / 4 + 1) + 1; k > 0; k--)
      after[rng_below(s, size)] ^= (uint8_t)(rng_below(s, 255) + 1);
    break;
  case 2:                 /* a few runs, like rewritten cells */
    for (uint32_t k = rng_below(s, 4) + 1; k > 0; k--) {
      uint32_t off = rng_below(s, size);
      uint32_t len = rng_below(s, size - off) % 64 + 1;
      for (uint32_t j = 0; j < len && off + j < size; j++)
        after[off + j] ^= (uint8_t)(rng_below(s, 255) + 1);
    }
    break;
  case 3:                 /* near both edges */
    for (uint32_t k = rng_below(s, 4) + 1; k > 0; k--) {
      uint32_t d = rng_below(s, size < 16 ? size : 16);
      after[rng_below(s, 2) ? d : size - 1 - d] ^= 0x5a;
    }
    break;
  case 4:                 /* changes spaced right at the merge gap */
    for (uint32_t p = rng_below(s, 8); p < size;
         p += SEP + rng_below(s, 3))
      after[p] ^= 1;
    break;
  default:                /* a whole new page (random bytes stay equal by chance) */
    rng_fill(s, after, size);
    break;
  }
}

/* page_diff of before -> after equals the model's, with room for every
 * range and with room for only some. */
static void against_model(const uint8_t *before, const uint8_t *after, uint32_t size, uint64_t *s)
{
  size_t max = size / 2 + 1;
  struct drange *r = malloc(max * sizeof *r), *ref = malloc(max * sizeof *ref);
  assert_non_null(r);
  assert_non_null(ref);
  size_t nref = ref_diff(before, after, size, ref, max);
  size_t n = page_diff(before, after, size, r, max);
  expect_eq(n, nref, "the number of ranges");
  for (size_t i = 0; i < n && i < nref; i++) {
    expect_eq(r[i].off, ref[i].off, "range %zu's offset", i);
    expect_eq(r[i].len, ref[i].len, "range %zu (at %u)'s length", i, r[i].off);
  }
  /* too small an array: the full count, only the first few written */
  if (nref > 1) {
    size_t few = 1 + rng_below(s, (uint32_t)(nref - 1));
    memset(r, 0xee, max * sizeof *r);
    expect_eq(page_diff(before, after, size, r, few), nref, "the number of ranges, into an array "
              "of %zu", few);
    for (size_t i = 0; i < few; i++) {
      expect_eq(r[i].off, ref[i].off, "range %zu's offset, into an array of %zu", i, few);
      expect_eq(r[i].len, ref[i].len, "range %zu's length, into an array of %zu", i, few);
    }
    expect_eq(r[few].off, 0xeeeeeeeeu, "the entry past the array of %zu (left alone)", few);
  }
  free(r);
  free(ref);
}

static void test_random_against_model(void **state)
{
  (void)state;
  lab_rule("§3.1: the redo of a page is its changed bytes as ranges, changes fewer than "
           "DIFF_MERGE_GAP unchanged bytes apart merged into one");
  uint64_t s = lab_seed(20);
  for (size_t i = 0; i < NSIZES + NODD; i++) {
    uint32_t size = i < NSIZES ? sizes[i] : odd_sizes[i - NSIZES];
    uint8_t *a = malloc(size), *b = malloc(size);
    assert_non_null(a);
    assert_non_null(b);
    int rounds = size > 4096 ? 40 : 300;
    for (int k = 0; k < rounds; k++) {
      if (rng_below(&s, 4) == 0)
        memset(a, 0, size);
      else
        rng_fill(&s, a, size);
      memcpy(b, a, size);
      mutate(&s, b, size);
      int null = rng_below(&s, 8) == 0;
      if (null) {
        memset(b, 0, size);
        mutate(&s, b, size);
      }
      lab_at("a page of %u bytes%s, random changes, round %d", size,
             null ? " against NULL (a zero page)" : "", k);
      against_model(null ? NULL : a, b, size, &s);
    }
    free(a);
    free(b);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_random_against_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
