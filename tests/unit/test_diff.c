/*
 * test_diff.c: page-delta redo (vfs/diff.c).
 *
 * The diff is the redo a commit ships, so it must be exact: applying it to
 * the before-image gives the after-image, byte for byte. Checks that on
 * random page pairs (seeded by lab_seed: AURALOG_TEST_SEED) of several
 * sizes, including sizes that are not a multiple of the 8-byte word and
 * unaligned buffers; that ranges are sorted, disjoint,
 * non-empty, inside the page, start and end on a changed byte, and are
 * separated by at least DIFF_MERGE_GAP unchanged bytes (closer changes are
 * merged); that a NULL before-image means a zero page; that a too-small
 * output array still gets the full count and only its first max entries;
 * and that the worst case fits in size/2 + 1 ranges. The diff is also fed
 * through rec_check() and rec_apply(), as a segment would see it. The
 * comparison with a byte-at-a-time model of the diff is the instructor's
 * (tests/hidden/test_diff_model.c: the model is an answer).
 *
 * Copies (diff_copies): on random pages whose B-tree-like pointer arrays
 * get cells inserted and deleted (runs shifted by 2, 4, 6 bytes), mixed
 * with the random changes above, and on zero pages: applying the split
 * ranges to the before-image (copies reading the before-image) gives the
 * after-image, by hand in reverse order and through a sealed record; ranges stay sorted, disjoint and inside the
 * page, copies are at least DIFF_COPY_MIN long and read inside the page;
 * the split never ships more literal bytes than the plain diff; and one
 * pointer inserted near the head of a 400-pointer array (an index page)
 * ships under 40 bytes instead of about 800.
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
#include "record.h"
#include "net/wire.h"
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

/* Apply by hand: copy each range of after over a copy of before. */
static void apply_by_hand(uint8_t *page, const uint8_t *after,
                          const struct drange *r, size_t n)
{
  for (size_t i = 0; i < n; i++)
    memcpy(page + r[i].off, after + r[i].off, r[i].len);
}

/* Apply as a segment would: build a record, seal it, rec_check, rec_apply. */
static void apply_as_record(uint8_t *page, uint32_t size, const uint8_t *after,
                            const struct drange *r, size_t n, int zero)
{
  Rec rec;
  auralog__record__init(&rec);
  Auralog__Range *g = calloc(n ? n : 1, sizeof *g);
  Auralog__Range **gp = calloc(n ? n : 1, sizeof *gp);
  assert_non_null(g);
  assert_non_null(gp);
  for (size_t i = 0; i < n; i++) {
    auralog__range__init(&g[i]);
    g[i].off = r[i].off;
    if (r[i].copy) {
      g[i].from = r[i].from;
      g[i].len = r[i].len;
    } else {
      g[i].data.len = r[i].len;
      g[i].data.data = (uint8_t *)after + r[i].off;
    }
    gp[i] = &g[i];
  }
  rec.lsn = 2;
  rec.prev_lsn = 1;
  rec.flags = zero ? REC_ZERO : 0;
  rec.n_ranges = n;
  rec.ranges = gp;
  rec_seal(&rec);
  char why[256] = "";
  int rc = rec_check(&rec, size, why, sizeof why);
  if (rc != ERR_NONE)
    fail_msg("rec_check refused a diff: %s", why);
  rec_apply(page, size, &rec);
  free(g);
  free(gp);
}

/* Every property of a diff of before -> after, n ranges in r. */
static void check_diff(const uint8_t *before, const uint8_t *after, uint32_t size,
                       const struct drange *r, size_t n)
{
  /* These properties, with the round trip below, define the diff: every
   * changed byte is covered, a range starts and ends on one, holds no run
   * of DIFF_MERGE_GAP unchanged bytes, and the next starts at least that
   * far after it. Only one list of ranges has them all. */
  expect_true(n <= size / 2 + 1, "at most size / 2 + 1 ranges");

  /* shape: sorted, disjoint, non-empty, inside the page, tight, merged */
  for (size_t i = 0; i < n; i++) {
    expect_true(r[i].len > 0, "range %zu non-empty", i);
    expect_true((uint64_t)r[i].off + r[i].len <= size, "range %zu (%u, length %u) inside the page",
                i, r[i].off, r[i].len);
    uint8_t b0 = before ? before[r[i].off] : 0;
    uint8_t b1 = before ? before[r[i].off + r[i].len - 1] : 0;
    expect_true(b0 != after[r[i].off], "range %zu to start on a changed byte (%u)", i, r[i].off);
    expect_true(b1 != after[r[i].off + r[i].len - 1], "range %zu to end on a changed byte (%u)", i,
                r[i].off + r[i].len - 1);
    if (i > 0) {
      uint64_t prev_end = (uint64_t)r[i - 1].off + r[i - 1].len;
      expect_true(prev_end < r[i].off, "range %zu (at %u) after the end of the one before (%llu), "
                  "with unchanged bytes between", i, r[i].off, (unsigned long long)prev_end);
      expect_true(r[i].off - prev_end >= gap, "range %zu (at %u) at least DIFF_MERGE_GAP "
                  "unchanged bytes after the one before (ends at %llu); closer ones are one range",
                  i, r[i].off, (unsigned long long)prev_end);
    }
    /* no run of DIFF_MERGE_GAP unchanged bytes inside a range */
    size_t run = 0;
    for (size_t j = r[i].off; j < (size_t)r[i].off + r[i].len; j++) {
      uint8_t b = before ? before[j] : 0;
      run = b == after[j] ? run + 1 : 0;
      expect_true(gap == 0 || run < gap, "no run of DIFF_MERGE_GAP unchanged bytes inside range "
                  "%zu (at %u, length %u)", i, r[i].off, r[i].len);
    }
  }

  /* round trip, by hand and through a record */
  uint8_t *page = malloc(size);
  assert_non_null(page);
  if (before)
    memcpy(page, before, size);
  else
    memset(page, 0, size);
  apply_by_hand(page, after, r, n);
  expect_true(memcmp(page, after, size) == 0, "the page, before with the ranges applied, to be "
              "after");

  if (n <= RANGES_MAX) {
    if (before) {
      memcpy(page, before, size);
    } else {
      memset(page, 0xa5, size);     /* REC_ZERO must clear this */
    }
    apply_as_record(page, size, after, r, n, before == NULL);
    expect_true(memcmp(page, after, size) == 0, "the page, through a sealed record (rec_apply), "
                "to be after");
  }
  free(page);
}

/* Diff with an array big enough for any page, check, return the count. */
static size_t diff_and_check(const uint8_t *before, const uint8_t *after, uint32_t size)
{
  size_t max = size / 2 + 1;
  struct drange *r = malloc(max * sizeof *r);
  assert_non_null(r);
  size_t n = page_diff(before, after, size, r, max);
  check_diff(before, after, size, r, n);
  free(r);
  return n;
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

static void test_identical_pages(void **state)
{
  (void)state;
  lab_rule("§3.1: an unchanged page has no redo: no range");
  uint64_t s = 1;
  struct drange r[4] = { { 7, 7 } };
  for (size_t i = 0; i < NSIZES; i++) {
    uint32_t size = sizes[i];
    uint8_t *a = malloc(size), *b = malloc(size);
    rng_fill(&s, a, size);
    memcpy(b, a, size);
    expect_eq(page_diff(a, b, size, r, 4), 0, "page_diff of two equal pages returned (ranges)");
    expect_eq(page_diff(a, a, size, r, 4), 0, "page_diff of a page with itself returned (ranges)");
    memset(b, 0, size);
    /* zero vs zero */
    expect_eq(page_diff(NULL, b, size, r, 4), 0, "page_diff of a zero page against NULL returned "
              "(ranges)");
    free(a);
    free(b);
  }
  /* nothing was written */
  expect_eq(r[0].off, 7, "out[0].off (nothing may be written)");
  expect_eq(r[0].len, 7, "out[0].len (nothing may be written)");
}

static void test_single_byte_change(void **state)
{
  (void)state;
  lab_rule("§3.1: redo is the page's difference: exactly the byte ranges where after differs from "
           "before");
  uint64_t s = 2;
  for (size_t i = 0; i < NSIZES; i++) {
    uint32_t size = sizes[i];
    uint8_t *a = malloc(size), *b = malloc(size);
    rng_fill(&s, a, size);
    uint32_t where[] = { 0, 1, 7, 8, 9, size / 2, size - 9, size - 8, size - 1,
                         rng_below(&s, size), rng_below(&s, size) };
    for (size_t w = 0; w < sizeof where / sizeof where[0]; w++) {
      memcpy(b, a, size);
      b[where[w]] ^= 0x80;
      lab_at("a page of %u bytes with byte %u changed", size, where[w]);
      struct drange r[2];
      expect_eq(page_diff(a, b, size, r, 2), 1, "page_diff returned (the number of ranges)");
      expect_eq(r[0].off, where[w], "the first range's offset");
      expect_eq(r[0].len, 1, "the first range's length");
      expect_eq(diff_bytes(r, 1), 1, "the bytes shipped");
      diff_and_check(a, b, size);
    }
    free(a);
    free(b);
  }
}

static void test_first_and_last_byte(void **state)
{
  (void)state;
  lab_rule("§3.1: redo is the page's difference: exactly the byte ranges where after differs from "
           "before, first and last byte included");
  uint64_t s = 3;
  for (size_t i = 0; i < NSIZES; i++) {
    uint32_t size = sizes[i];
    uint8_t *a = malloc(size), *b = malloc(size);
    rng_fill(&s, a, size);
    memcpy(b, a, size);
    b[0] ^= 1;
    b[size - 1] ^= 1;
    lab_at("a page of %u bytes with its first and last byte changed", size);
    struct drange r[3];
    expect_eq(page_diff(a, b, size, r, 3), 2, "page_diff returned (the number of ranges)");
    expect_eq(r[0].off, 0, "the first range's offset");
    expect_eq(r[0].len, 1, "the first range's length");
    expect_eq(r[1].off, size - 1, "the second range's offset");
    expect_eq(r[1].len, 1, "the second range's length");
    expect_eq(diff_bytes(r, 2), 2, "the bytes shipped");
    diff_and_check(a, b, size);

    /* every byte changed: one range, the whole page */
    for (uint32_t j = 0; j < size; j++)
      b[j] = (uint8_t)~a[j];
    lab_at("a page of %u bytes with every byte changed", size);
    expect_eq(page_diff(a, b, size, r, 3), 1, "page_diff returned (the number of ranges)");
    expect_eq(r[0].off, 0, "the first range's offset");
    expect_eq(r[0].len, size, "the first range's length");
    free(a);
    free(b);
  }
}

static void test_random_round_trip(void **state)
{
  (void)state;
  lab_rule("§3.1: applying the ranges of after over before gives after, byte for byte");
  uint64_t s = lab_seed(4);    /* AURALOG_TEST_SEED: another student's cases (lab_expect.h) */
  for (size_t i = 0; i < NSIZES; i++) {
    uint32_t size = sizes[i];
    uint8_t *a = malloc(size), *b = malloc(size);
    int rounds = size > 4096 ? 60 : 400;
    for (int k = 0; k < rounds; k++) {
      if (rng_below(&s, 4) == 0)
        memset(a, 0, size);         /* pages are often mostly zeros */
      else
        rng_fill(&s, a, size);
      memcpy(b, a, size);
      mutate(&s, b, size);
      lab_at("a page of %u bytes, random changes, round %d", size, k);
      diff_and_check(a, b, size);
    }
    free(a);
    free(b);
  }
}

static void test_many_scattered_changes(void **state)
{
  (void)state;
  lab_rule("§3.1: redo is the page's difference: exactly the byte ranges where after differs from "
           "before");
  uint64_t s = 5;
  uint32_t size = 4096;
  uint8_t a[4096], b[4096];
  rng_fill(&s, a, size);
  memcpy(b, a, size);
  /* 64 changes 64 bytes apart: 64 separate ranges of one byte */
  for (uint32_t p = 3; p < size; p += 64)
    b[p] ^= 0xff;
  lab_at("a page of 4096 bytes with bytes 3, 67, 131, ... changed (64 apart)");
  struct drange r[2049];
  size_t n = page_diff(a, b, size, r, 2049);
  expect_eq(n, 64, "the number of ranges");
  for (size_t i = 0; i < n; i++) {
    expect_eq(r[i].off, 3 + 64 * i, "range %zu's offset", i);
    expect_eq(r[i].len, 1, "range %zu's length", i);
  }
  expect_eq(diff_bytes(r, n), 64, "the bytes shipped");
  check_diff(a, b, size, r, n);
}

static void test_odd_sizes_and_alignment(void **state)
{
  (void)state;
  lab_rule("§3.1: the diff is exact for any page size, the last size % 8 bytes included, at any "
           "alignment");
  uint64_t s = 6;
  /* +3: the pages start at an odd address, so no word load is aligned */
  uint8_t *abuf = malloc(4099 + 3), *bbuf = malloc(4099 + 3);
  uint8_t *a = abuf + 3, *b = bbuf + 3;
  for (size_t i = 0; i < NODD; i++) {
    uint32_t size = odd_sizes[i];
    for (int k = 0; k < 200; k++) {
      rng_fill(&s, a, size);
      memcpy(b, a, size);
      mutate(&s, b, size);
      lab_at("a page of %u bytes at an odd address, random changes, round %d", size, k);
      diff_and_check(a, b, size);
      lab_at("the same page of %u bytes against NULL (a zero page), round %d", size, k);
      diff_and_check(NULL, b, size);
    }
    /* the last byte of the tail word alone */
    rng_fill(&s, a, size);
    memcpy(b, a, size);
    b[size - 1] ^= 4;
    lab_at("a page of %u bytes with only its last byte changed", size);
    struct drange r[1];
    expect_eq(page_diff(a, b, size, r, 1), 1, "page_diff returned (the number of ranges)");
    expect_eq(r[0].off, size - 1, "the first range's offset");
    expect_eq(r[0].len, 1, "the first range's length");
  }
  free(abuf);
  free(bbuf);
}

static void test_null_is_zero_page(void **state)
{
  (void)state;
  lab_rule("§3.1: a page written for the first time is diffed against a zero page (before NULL)");
  uint64_t s = 7;
  for (size_t i = 0; i < NSIZES; i++) {
    uint32_t size = sizes[i];
    uint8_t *zero = calloc(1, size), *b = calloc(1, size);
    size_t max = size / 2 + 1;
    struct drange *r1 = malloc(max * sizeof *r1), *r2 = malloc(max * sizeof *r2);
    for (int k = 0; k < 50; k++) {
      memset(b, 0, size);
      mutate(&s, b, size);
      lab_at("a page of %u bytes against NULL (a zero page), random changes, round %d", size, k);
      size_t n1 = page_diff(NULL, b, size, r1, max);
      size_t n2 = page_diff(zero, b, size, r2, max);
      expect_eq(n1, n2, "ranges against NULL (against a zero page: %zu)", n2);
      expect_true(memcmp(r1, r2, n1 * sizeof *r1) == 0, "the same ranges against NULL as against "
                  "a zero page");
      check_diff(NULL, b, size, r1, n1);
    }
    /* a fresh page with a header and a cell at the end */
    memset(b, 0, size);
    memcpy(b, "\x0d\x01\x02\x0f\xf0\x10", 6);
    memset(b + size - 10, 0x41, 10);
    lab_at("a fresh page of %u bytes against NULL: 6 header bytes and 10 at the end set", size);
    size_t n = page_diff(NULL, b, size, r1, max);
    expect_eq(n, 2, "the number of ranges");
    expect_eq(r1[0].off, 0, "the first range's offset");
    expect_eq(r1[0].len, 6, "the first range's length");
    expect_eq(r1[1].off, size - 10, "the second range's offset");
    expect_eq(r1[1].len, 10, "the second range's length");
    expect_eq(diff_bytes(r1, n), 16, "the bytes shipped");
    free(zero);
    free(b);
    free(r1);
    free(r2);
  }
}

static void test_merge_gap(void **state)
{
  (void)state;
  lab_rule("§3.1: changes fewer than DIFF_MERGE_GAP unchanged bytes apart are one range; adjacent "
           "changes always are");
  if (DIFF_MERGE_GAP < 1)
    skip();
  uint8_t a[4096], b[4096];
  uint64_t s = 8;
  rng_fill(&s, a, sizeof a);
  for (uint32_t p = 0; p + DIFF_MERGE_GAP + 1 < sizeof a; p += 397) {
    struct drange r[3];
    /* DIFF_MERGE_GAP - 1 unchanged bytes between: one range */
    memcpy(b, a, sizeof a);
    b[p] ^= 1;
    b[p + DIFF_MERGE_GAP] ^= 1;
    lab_at("bytes %u and %u changed (DIFF_MERGE_GAP - 1 unchanged between)", p,
           p + DIFF_MERGE_GAP);
    expect_eq(page_diff(a, b, sizeof a, r, 3), 1, "page_diff returned (the number of ranges)");
    expect_eq(r[0].off, p, "the first range's offset");
    expect_eq(r[0].len, DIFF_MERGE_GAP + 1, "the first range's length");
    expect_eq(diff_bytes(r, 1), DIFF_MERGE_GAP + 1, "the bytes shipped");
    check_diff(a, b, sizeof a, r, 1);

    /* DIFF_MERGE_GAP unchanged bytes between: two ranges */
    memcpy(b, a, sizeof a);
    b[p] ^= 1;
    b[p + DIFF_MERGE_GAP + 1] ^= 1;
    lab_at("bytes %u and %u changed (DIFF_MERGE_GAP unchanged between)", p,
           p + DIFF_MERGE_GAP + 1);
    expect_eq(page_diff(a, b, sizeof a, r, 3), 2, "page_diff returned (the number of ranges)");
    expect_eq(r[0].off, p, "the first range's offset");
    expect_eq(r[0].len, 1, "the first range's length");
    expect_eq(r[1].off, p + DIFF_MERGE_GAP + 1, "the second range's offset");
    expect_eq(r[1].len, 1, "the second range's length");
    check_diff(a, b, sizeof a, r, 2);
  }
  /* a chain of changes each less than the gap apart merges transitively */
  memcpy(b, a, sizeof a);
  for (uint32_t p = 100; p <= 100 + 50 * DIFF_MERGE_GAP; p += DIFF_MERGE_GAP)
    b[p] ^= 1;
  lab_at("51 bytes changed from 100 on, each DIFF_MERGE_GAP after the one before");
  struct drange r[2];
  expect_eq(page_diff(a, b, sizeof a, r, 2), 1, "page_diff returned (the number of ranges)");
  expect_eq(r[0].off, 100, "the first range's offset");
  expect_eq(r[0].len, 50 * DIFF_MERGE_GAP + 1, "the first range's length");
}

static void test_truncated_output(void **state)
{
  (void)state;
  lab_rule("§3.1: page_diff returns how many ranges there are, and writes only the first max of "
           "them");
  uint64_t s = 9;
  uint32_t size = 4096;
  uint8_t a[4096], b[4096];
  rng_fill(&s, a, size);
  memcpy(b, a, size);
  for (uint32_t p = 5; p < size; p += 100)
    b[p] ^= 0x33;                 /* 41 ranges */
  lab_at("a page of 4096 bytes with 41 bytes changed, 100 apart, room for 64 ranges");
  struct drange full[64];
  size_t n = page_diff(a, b, size, full, 64);
  expect_eq(n, 41, "the number of ranges");
  check_diff(a, b, size, full, n);

  size_t maxes[] = { 0, 1, 3, 40, 41, 42 };
  for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
    struct drange part[64];
    for (size_t i = 0; i < 64; i++)
      part[i] = (struct drange){ 0xdeadbeef, 0xfeedface };
    lab_at("a page with 41 changed bytes, 100 apart, room for max %zu ranges", maxes[m]);
    /* the full count whatever the room */
    expect_eq(page_diff(a, b, size, part, maxes[m]), 41, "page_diff returned (the number of "
              "ranges)");
    size_t filled = maxes[m] < n ? maxes[m] : n;
    expect_true(memcmp(part, full, filled * sizeof *part) == 0, "the first max ranges to be those "
                "written with room for all");
    /* nothing written past max */
    for (size_t i = filled; i < 64; i++) {
      expect_eq(part[i].off, 0xdeadbeef, "an entry past max (its offset, untouched)");
      expect_eq(part[i].len, 0xfeedface, "an entry past max (its length, untouched)");
    }
  }
  lab_at("a page with 41 changed bytes, 100 apart, out NULL and max 0");
  /* max 0 may pass no array at all: count only */
  expect_eq(page_diff(a, b, size, NULL, 0), 41, "page_diff returned (the number of ranges)");
}

static void test_worst_case(void **state)
{
  (void)state;
  lab_rule("§3.1: a page has at most ceil(size / (gap + 1)) ranges, which fit in size / 2 + 1");
  uint64_t s = 10;
  for (size_t i = 0; i < NSIZES; i++) {
    uint32_t size = sizes[i];
    size_t max = size / 2 + 1;
    uint8_t *a = malloc(size), *b = malloc(size);
    struct drange *r = malloc(max * sizeof *r);
    rng_fill(&s, a, size);

    /* every other byte changed */
    for (uint32_t j = 0; j < size; j++)
      b[j] = j % 2 ? a[j] : (uint8_t)~a[j];
    lab_at("a page of %u bytes with every other byte changed", size);
    size_t n = page_diff(a, b, size, r, max);
    expect_true(n >= 1 && n <= max, "between 1 and size / 2 + 1 ranges");
    check_diff(a, b, size, r, n);

    /* single changed bytes SEP unchanged bytes apart: the most ranges any
     * page can have, ceil(size / (SEP + 1)) */
    memcpy(b, a, size);
    for (uint32_t j = 0; j < size; j += SEP + 1)
      b[j] ^= 1;
    lab_at("a page of %u bytes with single bytes changed, DIFF_MERGE_GAP apart", size);
    n = page_diff(a, b, size, r, max);
    expect_eq(n, (size + SEP) / (SEP + 1), "the number of ranges");
    expect_true(n <= max, "at most size / 2 + 1 ranges");
    check_diff(a, b, size, r, n);
    free(a);
    free(b);
    free(r);
  }
}

static void test_diff_bytes(void **state)
{
  (void)state;
  struct drange r[3] = { { 0, 5 }, { 100, 1 }, { 4000, 96 } };
  assert_int_equal(diff_bytes(r, 0), 0);
  assert_int_equal(diff_bytes(r, 1), 5);
  assert_int_equal(diff_bytes(r, 3), 102);
}

/* ---- copies ---------------------------------------------------------------- */

/* Insert (or delete) one 2-byte cell pointer at slot i of an array of n
 * pointers at offset 8, as SQLite does on a B-tree page. */
static void pointer_shift(uint8_t *p, uint32_t size, uint32_t n, uint32_t i, int insert,
                          uint16_t v)
{
  uint32_t a = 8 + 2 * i, end = 8 + 2 * n;
  if (end + 2 > size || a > end)
    return;
  if (insert) {
    memmove(p + a + 2, p + a, end - a);
    p[a] = (uint8_t)(v >> 8);
    p[a + 1] = (uint8_t)v;
  } else if (a + 2 <= end) {
    memmove(p + a, p + a + 2, end - a - 2);
    p[end - 2] = p[end - 1] = 0;
  }
}

static void check_copies(const uint8_t *before, const uint8_t *after, uint32_t size)
{
  size_t max = size / 2 + 1;
  struct drange *lit = malloc(max * sizeof *lit), *r = malloc(size * sizeof *r);
  uint8_t *work = malloc(size), *page = malloc(size);
  size_t nl = page_diff(before, after, size, lit, max);
  size_t n = diff_copies(before, after, size, lit, nl, work, r, size);
  assert_true(n <= size);
  uint64_t end = 0;
  for (size_t i = 0; i < n; i++) {
    assert_true(r[i].len > 0);
    assert_true(r[i].off >= end);
    end = (uint64_t)r[i].off + r[i].len;
    assert_true(end <= size);
    if (r[i].copy) {
      assert_true(r[i].len >= DIFF_COPY_MIN);
      assert_true((uint64_t)r[i].from + r[i].len <= size);
      assert_true(r[i].from != r[i].off);
    }
  }
  assert_true(diff_bytes(r, n) <= diff_bytes(lit, nl));
  /* by hand, last range first: the order must not matter */
  if (before)
    memcpy(page, before, size);
  else
    memset(page, 0, size);
  memcpy(work, page, size);
  for (size_t i = n; i-- > 0;)
    memcpy(page + r[i].off, r[i].copy ? work + r[i].from : after + r[i].off, r[i].len);
  assert_memory_equal(page, after, size);
  if (n <= RANGES_MAX) {
    memset(page, 0x5a, size);
    if (before)
      memcpy(page, before, size);
    apply_as_record(page, size, after, r, n, before == NULL);
    assert_memory_equal(page, after, size);
  }
  free(lit);
  free(r);
  free(work);
  free(page);
}

static void test_copies_round_trip(void **state)
{
  (void)state;
  uint64_t s = 77;
  for (size_t k = 0; k < NSIZES; k++) {
    uint32_t size = sizes[k];
    uint8_t *a = malloc(size), *b = malloc(size);
    for (int round = 0; round < 300; round++) {
      rng_fill(&s, a, size);
      memcpy(b, a, size);
      uint32_t n = rng_below(&s, (size - 16) / 2);
      for (int m = (int)rng_below(&s, 4) + 1; m > 0; m--) {
        switch (rng_below(&s, 4)) {
        case 0:
        case 1:
          pointer_shift(b, size, n, rng_below(&s, n + 1), 1, (uint16_t)rng_next(&s));
          n++;
          break;
        case 2:
          if (n > 0) {
            pointer_shift(b, size, n, rng_below(&s, n), 0, 0);
            n--;
          }
          break;
        default:
          mutate(&s, b, size);
        }
      }
      check_copies(a, b, size);
      check_copies(NULL, b, size);
      check_copies(b, a, size);      /* and back */
    }
    free(a);
    free(b);
  }
}

static void test_copies_shrink_pointer_shift(void **state)
{
  (void)state;
  uint32_t size = 4096;
  uint8_t *a = malloc(size), *b = malloc(size);
  uint64_t s = 5;
  rng_fill(&s, a, size);
  memcpy(b, a, size);
  pointer_shift(b, size, 400, 10, 1, 0x0fa0);
  struct drange lit[2049], r[4096];
  uint8_t work[4096];
  size_t nl = page_diff(a, b, size, lit, 2049);
  assert_true(diff_bytes(lit, nl) > 700);
  size_t n = diff_copies(a, b, size, lit, nl, work, r, size);
  assert_true(diff_bytes(r, n) < 40);
  int copies = 0;
  for (size_t i = 0; i < n; i++)
    copies += r[i].copy != 0;
  assert_true(copies >= 1);
  check_copies(a, b, size);
  free(a);
  free(b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_copies_round_trip),
    cmocka_unit_test(test_copies_shrink_pointer_shift),
    cmocka_unit_test(test_identical_pages),
    cmocka_unit_test(test_single_byte_change),
    cmocka_unit_test(test_first_and_last_byte),
    cmocka_unit_test(test_random_round_trip),
    cmocka_unit_test(test_many_scattered_changes),
    cmocka_unit_test(test_odd_sizes_and_alignment),
    cmocka_unit_test(test_null_is_zero_page),
    cmocka_unit_test(test_merge_gap),
    cmocka_unit_test(test_truncated_output),
    cmocka_unit_test(test_worst_case),
    cmocka_unit_test(test_diff_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
