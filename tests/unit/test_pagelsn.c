/*
 * test_pagelsn.c: the writer's page-LSN table and the end-to-end page
 * check (vfs/pagelsn.h; DESIGN.md §4, invariants 4 and 8).
 *
 * Checks, as a user of the table would say it:
 *  - a page the writer wrote is EXACT at its last LSN; a page learned from
 *    a read is a FLOOR that only rises, and never overrides an EXACT one;
 *    an unknown page is unknown;
 *  - the check: a reply never above need; EXACT L at or below the read
 *    point must be met exactly (an older page is refused, so is a newer
 *    one); EXACT L above the read point allows any page at or below it; a
 *    FLOOR at or below the read point refuses anything older;
 *  - a page the writer changed above the VDL is checked, at a read point
 *    below that change, against what it was before (the simulator's
 *    stale-read fault found reads racing a newer write let a stale page
 *    through); the side map this needs is swept as the VDL passes;
 *  - truncation forgets every entry above the cut and keeps the rest; a
 *    page whose every change above the cut was cut is as it was before;
 *  - scale: a 64 GiB volume of 4 KiB pages (16M pages) with 1M pages
 *    touched, spread over all of it, holds every entry in at most
 *    PL_BYTES_PER_PAGE bytes per page (32 MiB), not 8 bytes for each of
 *    the 16M pages (128 MiB);
 *  - against a brute-force model over many random operations.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rng.h"
#include "vfs/pagelsn.h"

static void set_get_learn(void **state)
{
  (void)state;
  struct pagelsn t;
  uint64_t l = 0;
  pl_init(&t);
  assert_int_equal(pl_get(&t, 5, &l), PL_UNKNOWN);   /* empty, nothing allocated */
  assert_int_equal(pl_bytes(&t), 0);

  pl_set(&t, 5, 100);
  assert_int_equal(pl_get(&t, 5, &l), PL_EXACT);
  assert_int_equal(l, 100);
  pl_set(&t, 5, 130);                     /* the writer's next record of it */
  assert_int_equal(pl_get(&t, 5, &l), PL_EXACT);
  assert_int_equal(l, 130);
  pl_learn(&t, 5, 200);                   /* a read never overrides what the writer knows */
  assert_int_equal(pl_get(&t, 5, &l), PL_EXACT);
  assert_int_equal(l, 130);

  assert_int_equal(pl_get(&t, 6, &l), PL_UNKNOWN);
  pl_learn(&t, 6, 40);
  assert_int_equal(pl_get(&t, 6, &l), PL_FLOOR);
  assert_int_equal(l, 40);
  pl_learn(&t, 6, 30);                    /* an older read point's answer: stays 40 */
  assert_int_equal(pl_get(&t, 6, &l), PL_FLOOR);
  assert_int_equal(l, 40);
  pl_learn(&t, 6, 55);
  assert_int_equal(pl_get(&t, 6, &l), PL_FLOOR);
  assert_int_equal(l, 55);
  pl_set(&t, 6, 300);                     /* the writer writes it: exact from now on */
  assert_int_equal(pl_get(&t, 6, &l), PL_EXACT);
  assert_int_equal(l, 300);

  pl_learn(&t, 7, 0);                     /* a page never written teaches nothing */
  assert_int_equal(pl_get(&t, 7, &l), PL_UNKNOWN);
  pl_set(&t, 0, 9);                       /* page 0 is a page like any other */
  assert_int_equal(pl_get(&t, 0, &l), PL_EXACT);
  assert_int_equal(l, 9);
  assert_int_equal(pl_count(&t), 3);
  pl_free(&t);
}

static void the_check(void **state)
{
  (void)state;
  struct pagelsn t;
  uint64_t want = 0;
  pl_init(&t);
  pl_set(&t, 1, 100);                     /* EXACT 100 */
  pl_learn(&t, 2, 100);                   /* FLOOR 100 */

  /* Never above need, whatever the table says (page 3: unknown). */
  assert_int_equal(pl_check(&t, 3, 500, 480, 480, &want), PL_OK);
  assert_int_equal(pl_check(&t, 3, 500, 480, 0, &want), PL_OK);
  assert_int_equal(pl_check(&t, 3, 500, 480, 490, &want), PL_ABOVE_NEED);
  assert_int_equal(want, 480);

  /* EXACT 100 at read point 500: exactly 100. */
  assert_int_equal(pl_check(&t, 1, 500, 480, 100, &want), PL_OK);
  assert_int_equal(pl_check(&t, 1, 500, 480, 99, &want), PL_NOT_EXACT);   /* older */
  assert_int_equal(want, 100);
  assert_int_equal(pl_check(&t, 1, 500, 480, 0, &want), PL_NOT_EXACT);    /* lost it all */
  assert_int_equal(pl_check(&t, 1, 500, 480, 150, &want), PL_NOT_EXACT);  /* a record we never wrote */
  /* EXACT 100 at read point 100 (need 100). */
  assert_int_equal(pl_check(&t, 1, 100, 100, 100, &want), PL_OK);
  /* EXACT 100 above read point 80: the change is not at the read point
   * yet; any page at or below need goes. */
  assert_int_equal(pl_check(&t, 1, 80, 70, 60, &want), PL_OK);
  assert_int_equal(pl_check(&t, 1, 80, 70, 0, &want), PL_OK);
  assert_int_equal(pl_check(&t, 1, 80, 70, 100, &want), PL_ABOVE_NEED);

  /* FLOOR 100: at read point 500, at least 100. */
  assert_int_equal(pl_check(&t, 2, 500, 480, 100, &want), PL_OK);
  assert_int_equal(pl_check(&t, 2, 500, 480, 120, &want), PL_OK);
  assert_int_equal(pl_check(&t, 2, 500, 480, 90, &want), PL_BELOW_FLOOR);
  assert_int_equal(want, 100);
  /* ... and at an older read point (a read that started before), no
   * more than need. */
  assert_int_equal(pl_check(&t, 2, 95, 95, 90, &want), PL_OK);
  assert_string_equal(pl_verdict(PL_NOT_EXACT), "expected exactly");
  pl_free(&t);
}

static void a_change_above_the_read_point(void **state)
{
  (void)state;
  struct pagelsn t;
  uint64_t want = 0, l = 0;
  pl_init(&t);
  pl_set(&t, 4, 10);                      /* durable: recovery proved it */
  pl_write(&t, 4, 20, 15);                /* the writer changes it, VDL 15 */
  pl_write(&t, 4, 30, 15);                /* ... and again */
  assert_int_equal(pl_get(&t, 4, &l), PL_EXACT);
  assert_int_equal(l, 30);
  /* A read at 18 (below both changes): the page as of 10, exactly. */
  assert_int_equal(pl_check(&t, 4, 18, 18, 10, &want), PL_OK);
  assert_int_equal(pl_check(&t, 4, 18, 18, 5, &want), PL_NOT_EXACT);
  assert_int_equal(want, 10);
  assert_int_equal(pl_check(&t, 4, 18, 18, 0, &want), PL_NOT_EXACT);
  /* A read at 25, between the changes: not known beyond need. */
  assert_int_equal(pl_check(&t, 4, 25, 25, 20, &want), PL_OK);
  assert_int_equal(pl_check(&t, 4, 25, 25, 26, &want), PL_ABOVE_NEED);
  /* At 30 and above: exactly 30. */
  assert_int_equal(pl_check(&t, 4, 31, 31, 30, &want), PL_OK);
  assert_int_equal(pl_check(&t, 4, 31, 31, 20, &want), PL_NOT_EXACT);
  /* The VDL passed 30; a later change starts again from 30. */
  pl_write(&t, 4, 40, 35);
  assert_int_equal(pl_check(&t, 4, 36, 36, 30, &want), PL_OK);
  assert_int_equal(pl_check(&t, 4, 36, 36, 20, &want), PL_NOT_EXACT);
  assert_int_equal(want, 30);
  /* A page first written above the VDL was nothing the writer knew. */
  pl_write(&t, 8, 41, 35);
  assert_int_equal(pl_check(&t, 8, 36, 36, 3, &want), PL_OK);
  /* A floor learned from a read, then a change above the VDL. */
  pl_learn(&t, 9, 12);
  pl_write(&t, 9, 42, 35);
  assert_int_equal(pl_check(&t, 9, 36, 36, 12, &want), PL_OK);
  assert_int_equal(pl_check(&t, 9, 36, 36, 11, &want), PL_BELOW_FLOOR);
  /* Truncation: page 4's change 40 cut (VDL 35): back to 30, exact. */
  pl_truncate(&t, 35);
  assert_int_equal(pl_get(&t, 4, &l), PL_EXACT);
  assert_int_equal(l, 30);
  assert_int_equal(pl_get(&t, 8, &l), PL_UNKNOWN);
  assert_int_equal(pl_get(&t, 9, &l), PL_FLOOR);
  assert_int_equal(l, 12);
  pl_free(&t);

  /* The side map holds the pages changed above the VDL, not every page
   * ever changed: 1M changes, the VDL one behind. */
  struct pagelsn u = {0};                 /* a zeroed table is an empty one */
  for (uint64_t i = 1; i <= 1000000; i++)
    pl_write(&u, (uint32_t)(i * 7 % 999983), i, i - 1);
  assert_true(u.before.n <= 200);
  assert_true(pl_bytes(&u) <= PL_BYTES_PER_PAGE * pl_count(&u) + 8192);
  pl_free(&u);
}

static void truncation_forgets_above_the_cut(void **state)
{
  (void)state;
  struct pagelsn t;
  uint64_t l = 0;
  pl_init(&t);
  for (uint32_t p = 0; p < 1000; p++) {
    if (p % 3 == 0)
      pl_learn(&t, p, 10 + p);
    else
      pl_set(&t, p, 10 + p);
  }
  pl_truncate(&t, 509);                   /* keeps LSN 10..509: pages 0..499 */
  assert_int_equal(pl_count(&t), 500);
  for (uint32_t p = 0; p < 1000; p++) {
    int k = pl_get(&t, p, &l);
    if (p < 500) {
      assert_int_equal(k, p % 3 == 0 ? PL_FLOOR : PL_EXACT);
      assert_int_equal(l, 10 + p);
    } else {
      assert_int_equal(k, PL_UNKNOWN);    /* forgotten, not left at a cut LSN */
    }
  }
  /* A page whose cut entry is forgotten checks as unknown. */
  uint64_t want;
  assert_int_equal(pl_check(&t, 700, 2000, 1500, 3, &want), PL_OK);
  pl_set(&t, 700, 1600);                  /* written again after the recovery */
  assert_int_equal(pl_get(&t, 700, &l), PL_EXACT);
  assert_int_equal(l, 1600);
  pl_truncate(&t, 0);
  assert_int_equal(pl_count(&t), 0);
  pl_free(&t);
}

static void a_64gib_volume_with_1m_pages_touched(void **state)
{
  (void)state;
  const uint32_t npages = (uint32_t)((64ull << 30) / 4096);   /* 16M */
  const size_t touched = 1u << 20;
  struct pagelsn t;
  pl_init(&t);
  uint64_t seed = 7;
  uint32_t stride = npages / (uint32_t)touched;               /* 16: spread over all */
  for (size_t i = 0; i < touched; i++) {
    uint32_t p = (uint32_t)i * stride + rng_below(&seed, stride);
    pl_set(&t, p, 1 + i);
  }
  assert_int_equal(pl_count(&t), touched);
  size_t bytes = pl_bytes(&t);
  print_message("      1M pages of 16M: %zu MiB (a flat array: %u MiB)\n", bytes >> 20,
                (unsigned)((8ull * npages) >> 20));
  assert_true(bytes <= PL_BYTES_PER_PAGE * touched);         /* 32 MiB */
  assert_true(bytes < 8ull * npages / 4);
  seed = 7;
  uint64_t l = 0;
  for (size_t i = 0; i < touched; i++) {
    uint32_t p = (uint32_t)i * stride + rng_below(&seed, stride);
    assert_int_equal(pl_get(&t, p, &l), PL_EXACT);
    assert_int_equal(l, 1 + i);
  }
  /* The highest page numbers a volume can have are pages like others. */
  pl_set(&t, UINT32_MAX - 1, 5);
  assert_int_equal(pl_get(&t, UINT32_MAX - 1, &l), PL_EXACT);
  pl_free(&t);
}

/* The table against a plain array over a small range of pages. */
static void against_brute_force(void **state)
{
  (void)state;
  enum { NP = 3000 };
  static uint64_t val[NP];
  static int kind[NP];
  uint64_t seed = 99, lsn = 0;
  struct pagelsn t;
  pl_init(&t);
  memset(val, 0, sizeof val);
  memset(kind, 0, sizeof kind);
  for (int step = 0; step < 200000; step++) {
    uint32_t p = rng_below(&seed, NP);
    uint32_t op = rng_below(&seed, 1000);
    if (op < 600) {
      pl_set(&t, p, ++lsn);
      val[p] = lsn;
      kind[p] = PL_EXACT;
    } else if (op < 999) {
      uint64_t x = 1 + rng_below(&seed, (uint32_t)lsn + 1);
      pl_learn(&t, p, x);
      if (kind[p] == PL_UNKNOWN || (kind[p] == PL_FLOOR && val[p] < x)) {
        val[p] = x;
        kind[p] = PL_FLOOR;
      }
    } else {
      uint64_t back = rng_below(&seed, 50), cut = lsn > back ? lsn - back : 0;
      pl_truncate(&t, cut);
      for (int q = 0; q < NP; q++)
        if (kind[q] != PL_UNKNOWN && val[q] > cut)
          kind[q] = PL_UNKNOWN;
      lsn = cut;
    }
  }
  size_t n = 0;
  for (uint32_t p = 0; p < NP; p++) {
    uint64_t l = 0;
    int k = pl_get(&t, p, &l);
    assert_int_equal(k, kind[p]);
    if (k != PL_UNKNOWN) {
      assert_int_equal(l, val[p]);
      n++;
    }
  }
  assert_int_equal(pl_count(&t), n);
  pl_free(&t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(set_get_learn),
    cmocka_unit_test(the_check),
    cmocka_unit_test(a_change_above_the_read_point),
    cmocka_unit_test(truncation_forgets_above_the_cut),
    cmocka_unit_test(a_64gib_volume_with_1m_pages_touched),
    cmocka_unit_test(against_brute_force),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
