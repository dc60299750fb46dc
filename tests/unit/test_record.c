/*
 * test_record.c: redo records and the pages rebuilt from them.
 *
 * Checks that a record's CRC catches any change to its content (a flipped
 * data byte, a changed LSN, backlink, page, flag or offset); that records
 * whose byte ranges are out of order, overlapping, empty or past the end of
 * the page are refused with the right error (bad message vs. out of range);
 * that copy ranges (bytes the page held elsewhere before the record) are
 * covered by the CRC, refused when they read or write outside the page,
 * copy onto themselves, are empty or also carry bytes, and read the page as
 * it was before the record even when an earlier range overwrote their
 * source;
 * and that a page read "as of read point R" is exactly the page with every
 * change up to R applied and none after it, both from a zero page and from
 * a stored base image (whose own changes are not applied twice), with the
 * page LSN being the newest change applied.
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

#include "param.h"
#include "record.h"
#include "net/wire.h"

#define MAXR 8

/* A record with its ranges and their bytes. */
struct trec {
  Rec r;
  Auralog__Range g[MAXR];
  Auralog__Range *gp[MAXR];
  uint8_t *bytes[MAXR];
};

static void trec_init(struct trec *t, uint64_t lsn, uint64_t prev, uint32_t page)
{
  memset(t, 0, sizeof *t);
  auralog__record__init(&t->r);
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = page;
  t->r.ranges = t->gp;
}

/* Append a range of len bytes at off, filled from fill (or a pattern). */
static void trec_range(struct trec *t, uint32_t off, size_t len, uint8_t fill)
{
  size_t i = t->r.n_ranges++;
  assert_true(i < MAXR);
  auralog__range__init(&t->g[i]);
  t->bytes[i] = malloc(len ? len : 1);
  assert_non_null(t->bytes[i]);
  for (size_t j = 0; j < len; j++)
    t->bytes[i][j] = (uint8_t)(fill + j);
  t->g[i].off = off;
  t->g[i].data.len = len;
  t->g[i].data.data = t->bytes[i];
  t->gp[i] = &t->g[i];
}

/* Append a copy of len bytes from from to off. */
static void trec_copy(struct trec *t, uint32_t off, uint32_t len, uint32_t from)
{
  size_t i = t->r.n_ranges++;
  assert_true(i < MAXR);
  auralog__range__init(&t->g[i]);
  t->bytes[i] = NULL;
  t->g[i].off = off;
  t->g[i].from = from;
  t->g[i].len = len;
  t->gp[i] = &t->g[i];
}

static void trec_free(struct trec *t)
{
  for (size_t i = 0; i < t->r.n_ranges; i++)
    free(t->bytes[i]);
  t->r.n_ranges = 0;
}

static int check(const struct trec *t, uint32_t page_size)
{
  char why[256] = "";
  int rc = rec_check(&t->r, page_size, why, sizeof why);
  if (rc != ERR_NONE)
    assert_true(strlen(why) > 0);
  return rc;
}

/* ---- CRC ----------------------------------------------------------------- */

static void test_crc_detects_changes(void **state)
{
  (void)state;
  struct trec t;
  trec_init(&t, 500, 499, 17);
  trec_range(&t, 0, 10, 1);
  trec_range(&t, 100, 40, 2);
  trec_range(&t, 4000, 96, 3);
  rec_seal(&t.r);
  assert_int_equal(t.r.crc, rec_crc(&t.r));
  assert_int_equal(check(&t, 4096), ERR_NONE);

  /* every byte of data matters */
  for (size_t i = 0; i < t.r.n_ranges; i++)
    for (size_t j = 0; j < t.g[i].data.len; j++) {
      t.bytes[i][j] ^= 0x01;
      assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
      t.bytes[i][j] ^= 0x01;
    }
  assert_int_equal(check(&t, 4096), ERR_NONE);

  /* and every header field */
  t.r.lsn = 501;
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.r.lsn = 500;
  t.r.prev_lsn = 498;
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.r.prev_lsn = 499;
  t.r.page_no = 18;
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.r.page_no = 17;
  t.r.flags = REC_CPL;
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.r.flags = 0;
  t.g[1].off = 101;
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.g[1].off = 100;
  t.g[1].data.len = 39;     /* a shorter range: same bytes, fewer of them */
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.g[1].data.len = 40;
  t.r.crc ^= 0x80000000u;
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.r.crc ^= 0x80000000u;
  assert_int_equal(check(&t, 4096), ERR_NONE);

  /* resealing after a change makes it valid again */
  t.r.flags = REC_CPL;
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_NONE);
  trec_free(&t);
}

/* A record with no ranges is valid (and has a CRC of its header). */
static void test_crc_no_ranges(void **state)
{
  (void)state;
  struct trec a, b;
  trec_init(&a, 7, 3, 1);
  trec_init(&b, 8, 3, 1);
  rec_seal(&a.r);
  rec_seal(&b.r);
  assert_int_equal(check(&a, 4096), ERR_NONE);
  assert_int_not_equal(a.r.crc, b.r.crc);
}

/* ---- shape rules --------------------------------------------------------- */

static void test_header_rules(void **state)
{
  (void)state;
  struct trec t;
  trec_init(&t, 0, 0, 1);               /* LSN 0 */
  trec_range(&t, 0, 4, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  t.r.lsn = 10;
  t.r.prev_lsn = 10;                    /* backlink equal to itself */
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  t.r.prev_lsn = 11;                    /* backlink above itself */
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  t.r.prev_lsn = 9;
  t.r.flags = 0x4;                      /* unknown flag */
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  t.r.flags = REC_CPL;
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_NONE);
  trec_free(&t);
}

static void test_range_rules(void **state)
{
  (void)state;
  struct trec t;

  /* out of order */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 100, 10, 0);
  trec_range(&t, 50, 10, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);

  /* overlapping by one byte */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 100, 10, 0);
  trec_range(&t, 109, 10, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);

  /* same offset twice */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 100, 10, 0);
  trec_range(&t, 100, 10, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);

  /* adjacent is fine */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 100, 10, 0);
  trec_range(&t, 110, 10, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_NONE);
  trec_free(&t);

  /* empty range, first or later */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 0, 0, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 0, 3, 0);
  trec_range(&t, 10, 0, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);

  /* past the page: by one byte, starting past it, and offsets that would
   * wrap around 32 bits */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 4090, 7, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_OUT_OF_RANGE);
  assert_int_equal(check(&t, 8192), ERR_NONE);     /* fits a bigger page */
  trec_free(&t);
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 4090, 6, 0);                      /* ends exactly at the end */
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_NONE);
  trec_free(&t);
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 0, 8, 0);
  trec_range(&t, 5000, 8, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_OUT_OF_RANGE);
  trec_free(&t);
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 0xfffffff0u, 32, 0);
  rec_seal(&t.r);
  assert_int_equal(check(&t, PAGE_SIZE_MAX), ERR_OUT_OF_RANGE);
  trec_free(&t);

  /* shape is judged before the CRC: a misshapen record with a bad CRC
   * reports the shape */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 4095, 2, 0);
  t.r.crc = 12345;
  assert_int_equal(check(&t, 4096), ERR_OUT_OF_RANGE);
  trec_free(&t);
}

static void test_too_many_ranges(void **state)
{
  (void)state;
  size_t n = RANGES_MAX + 1;
  Auralog__Range *g = calloc(n, sizeof *g);
  Auralog__Range **gp = calloc(n, sizeof *gp);
  uint8_t byte = 0xaa;
  assert_non_null(g);
  assert_non_null(gp);
  for (size_t i = 0; i < n; i++) {
    auralog__range__init(&g[i]);
    g[i].off = (uint32_t)(2 * i);
    g[i].data.len = 1;
    g[i].data.data = &byte;
    gp[i] = &g[i];
  }
  Rec r = AURALOG__RECORD__INIT;
  r.lsn = 2;
  r.prev_lsn = 1;
  r.ranges = gp;
  r.n_ranges = n;
  rec_seal(&r);
  char why[256] = "";
  assert_int_equal(rec_check(&r, PAGE_SIZE_MAX, why, sizeof why), ERR_BAD_MSG);
  r.n_ranges = RANGES_MAX;
  rec_seal(&r);
  assert_int_equal(rec_check(&r, PAGE_SIZE_MAX, why, sizeof why), ERR_NONE);
  free(g);
  free(gp);
}

/* ---- page versions ------------------------------------------------------- */

#define PS 512
#define NREC 60

/* A random series of records for one page, LSNs increasing with gaps. */
static void gen_series(uint64_t *s, struct trec *t, size_t n, uint64_t first_lsn)
{
  uint64_t lsn = first_lsn, prev = first_lsn ? first_lsn - 1 : 0;
  for (size_t i = 0; i < n; i++) {
    trec_init(&t[i], lsn, prev, 9);
    uint32_t off = rng_below(s, 64);
    int nr = 1 + (int)rng_below(s, 4);
    for (int k = 0; k < nr && off < PS; k++) {
      uint32_t len = 1 + rng_below(s, 80);
      if (off + len > PS)
        len = PS - off;
      trec_range(&t[i], off, len, (uint8_t)rng_next(s));
      off += len + rng_below(s, 100);
    }
    if (rng_below(s, 3) == 0)
      t[i].r.flags = REC_CPL;
    rec_seal(&t[i].r);
    assert_int_equal(check(&t[i], PS), ERR_NONE);
    prev = lsn;
    lsn += 1 + rng_below(s, 5);
  }
}

/* The expected page, byte by byte, without rec_apply. */
static uint64_t by_hand(uint8_t *page, const uint8_t *base, uint64_t base_lsn,
                        const struct trec *t, size_t n, uint64_t rp)
{
  if (base)
    memcpy(page, base, PS);
  else
    memset(page, 0, PS);
  uint64_t lsn = base_lsn;
  for (size_t i = 0; i < n; i++) {
    if (t[i].r.lsn <= base_lsn || t[i].r.lsn > rp)
      continue;
    for (size_t k = 0; k < t[i].r.n_ranges; k++)
      for (size_t j = 0; j < t[i].g[k].data.len; j++)
        page[t[i].g[k].off + j] = t[i].g[k].data.data[j];
    lsn = t[i].r.lsn;
  }
  return lsn;
}

static void test_page_build_every_read_point(void **state)
{
  (void)state;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    uint64_t s = seed;
    struct trec t[NREC];
    Rec *rp[NREC];
    gen_series(&s, t, NREC, 1 + rng_below(&s, 10));
    for (size_t i = 0; i < NREC; i++)
      rp[i] = &t[i].r;
    uint64_t last = t[NREC - 1].r.lsn;
    int changed = 0;
    uint8_t prev_page[PS];
    memset(prev_page, 0, PS);
    for (uint64_t R = 0; R <= last + 2; R++) {
      uint8_t got[PS], want[PS];
      memset(got, 0xee, PS);      /* page_build must write every byte */
      uint64_t glsn = page_build(got, PS, NULL, 0, rp, NREC, R);
      uint64_t wlsn = by_hand(want, NULL, 0, t, NREC, R);
      if (memcmp(got, want, PS) != 0)
        fail_msg("seed %llu: page at read point %llu differs",
                 (unsigned long long)seed, (unsigned long long)R);
      assert_int_equal(glsn, wlsn);
      assert_true(glsn <= R);
      changed += memcmp(got, prev_page, PS) != 0;
      memcpy(prev_page, got, PS);
    }
    assert_true(changed > NREC / 2);   /* the series really changes the page */
    for (size_t i = 0; i < NREC; i++)
      trec_free(&t[i]);
  }
}

static void test_page_build_from_base(void **state)
{
  (void)state;
  for (uint64_t seed = 100; seed < 120; seed++) {
    uint64_t s = seed;
    struct trec t[NREC];
    Rec *rp[NREC];
    gen_series(&s, t, NREC, 5);
    for (size_t i = 0; i < NREC; i++)
      rp[i] = &t[i].r;
    uint64_t last = t[NREC - 1].r.lsn;

    /* A base image that records at or below base_lsn would visibly
     * overwrite: if page_build applied them, the test sees it. */
    uint8_t base[PS];
    for (size_t i = 0; i < PS; i++)
      base[i] = (uint8_t)(0x80 | rng_next(&s));
    uint64_t base_lsn = t[NREC / 2].r.lsn - (seed & 1);  /* on a record, or just below */

    for (uint64_t R = base_lsn; R <= last + 1; R++) {
      uint8_t got[PS], want[PS];
      uint64_t glsn = page_build(got, PS, base, base_lsn, rp, NREC, R);
      uint64_t wlsn = by_hand(want, base, base_lsn, t, NREC, R);
      if (memcmp(got, want, PS) != 0)
        fail_msg("seed %llu: page from base %llu at read point %llu differs",
                 (unsigned long long)seed, (unsigned long long)base_lsn,
                 (unsigned long long)R);
      assert_int_equal(glsn, wlsn);
      assert_true(glsn >= base_lsn);
    }
    /* At the base's own LSN the page is the base, untouched. */
    uint8_t got[PS];
    assert_int_equal(page_build(got, PS, base, base_lsn, rp, NREC, base_lsn), base_lsn);
    assert_memory_equal(got, base, PS);

    /* No base image but a base LSN: a zero page plus the later records. */
    uint8_t want[PS];
    uint64_t wlsn = by_hand(want, NULL, base_lsn, t, NREC, last);
    assert_int_equal(page_build(got, PS, NULL, base_lsn, rp, NREC, last), wlsn);
    assert_int_equal(wlsn, last);
    assert_memory_equal(got, want, PS);

    for (size_t i = 0; i < NREC; i++)
      trec_free(&t[i]);
  }
}

/* Only the records given count: an empty list gives the base at its LSN,
 * and a repeated record is applied once. */
static void test_page_build_edges(void **state)
{
  (void)state;
  uint8_t base[PS], got[PS];
  memset(base, 0x5a, PS);
  assert_int_equal(page_build(got, PS, base, 40, NULL, 0, 1000), 40);
  assert_memory_equal(got, base, PS);
  assert_int_equal(page_build(got, PS, NULL, 0, NULL, 0, 1000), 0);
  for (size_t i = 0; i < PS; i++)
    assert_int_equal(got[i], 0);

  struct trec a, b;
  trec_init(&a, 50, 49, 9);
  trec_range(&a, 0, 4, 1);
  rec_seal(&a.r);
  trec_init(&b, 60, 50, 9);
  trec_range(&b, 2, 4, 100);
  rec_seal(&b.r);
  Rec *recs[] = { &a.r, &a.r, &b.r, &b.r };
  assert_int_equal(page_build(got, PS, NULL, 0, recs, 4, 59), 50);
  assert_int_equal(got[0], 1);
  assert_int_equal(got[3], 4);
  assert_int_equal(page_build(got, PS, NULL, 0, recs, 4, 60), 60);
  assert_int_equal(got[0], 1);
  assert_int_equal(got[1], 2);
  assert_int_equal(got[2], 100);
  assert_int_equal(got[5], 103);
  assert_int_equal(got[6], 0);
  trec_free(&a);
  trec_free(&b);
}

static void test_copy_ranges(void **state)
{
  (void)state;
  struct trec t;
  uint8_t page[4096], want[4096];
  for (int i = 0; i < 4096; i++)
    page[i] = (uint8_t)(i * 7);

  /* A literal over the source of a later copy: the copy still reads the
   * page as it was before the record. */
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 10, 4, 0xa0);
  trec_copy(&t, 14, 100, 10);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_NONE);
  memcpy(want, page, sizeof want);
  memmove(want + 14, page + 10, 100);
  for (int j = 0; j < 4; j++)
    want[10 + j] = (uint8_t)(0xa0 + j);
  rec_apply(page, 4096, &t.r);
  assert_memory_equal(page, want, 4096);

  /* the CRC covers the source and the length */
  uint32_t crc = t.r.crc;
  t.g[1].from = 11;
  assert_int_not_equal(rec_crc(&t.r), crc);
  assert_int_equal(check(&t, 4096), ERR_BAD_CRC);
  t.g[1].from = 10;
  t.g[1].len = 99;
  assert_int_not_equal(rec_crc(&t.r), crc);
  t.g[1].len = 100;
  assert_int_equal(rec_crc(&t.r), crc);
  trec_free(&t);

  /* reading or writing past the page */
  trec_init(&t, 2, 1, 0);
  trec_copy(&t, 100, 20, 4080);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_OUT_OF_RANGE);
  trec_free(&t);
  trec_init(&t, 2, 1, 0);
  trec_copy(&t, 4080, 20, 100);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_OUT_OF_RANGE);
  trec_free(&t);

  /* onto itself, empty, or a literal that also names a source */
  trec_init(&t, 2, 1, 0);
  trec_copy(&t, 100, 20, 100);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);
  trec_init(&t, 2, 1, 0);
  trec_copy(&t, 100, 0, 50);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);
  trec_init(&t, 2, 1, 0);
  trec_range(&t, 100, 5, 1);
  t.g[0].from = 7;
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);

  /* a copy overlapping a literal is out of order like any range */
  trec_init(&t, 2, 1, 0);
  trec_copy(&t, 100, 20, 60);
  trec_range(&t, 110, 5, 1);
  rec_seal(&t.r);
  assert_int_equal(check(&t, 4096), ERR_BAD_MSG);
  trec_free(&t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_crc_detects_changes),
    cmocka_unit_test(test_crc_no_ranges),
    cmocka_unit_test(test_header_rules),
    cmocka_unit_test(test_range_rules),
    cmocka_unit_test(test_copy_ranges),
    cmocka_unit_test(test_too_many_ranges),
    cmocka_unit_test(test_page_build_every_read_point),
    cmocka_unit_test(test_page_build_from_base),
    cmocka_unit_test(test_page_build_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
