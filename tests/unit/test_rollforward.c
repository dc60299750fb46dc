/*
 * test_rollforward.c: the community binlog's roll-forward at recovery
 * (vfs/recovery.c recover_rollforward, rule RF1): a prepared MTR above the
 * VDL whose XID the binlog holds is rolled forward only when it is there
 * whole (every LSN up to XID - 1, chained on its PG, none a CPL); then its
 * records are adopted, the tails move, and the commit record to write is
 * named (its PG, backlink, page record and the MTR's shape). Anything
 * less (a hole, a CPL inside, a fork, an XID at or below the VDL + 1, a
 * record cut by a truncation) leaves it all as it was.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "vfs/recovery.h"

/* Records of an MTR prepared above vdl 10 over PGs 0 and 1: LSN 11 (pg 0,
 * back to 10), 12 (pg 1, back to 5), 13 (pg 0, back to 11); XID 14. */
static size_t prepared(struct rmeta *r)
{
  memset(r, 0, 8 * sizeof *r);
  r[0] = (struct rmeta){.lsn = 11, .prev = 10, .pg = 0, .epoch = 1};
  r[1] = (struct rmeta){.lsn = 12, .prev = 5, .pg = 1, .epoch = 1};
  r[2] = (struct rmeta){.lsn = 13, .prev = 11, .pg = 0, .epoch = 1};
  return 3;
}

static int roll(struct rmeta *r, size_t n, uint64_t vdl, uint64_t xid, uint64_t *tails,
                uint32_t *pg, uint64_t *prev, size_t *at, uint32_t *mpg, uint64_t *mlast,
                size_t *nml)
{
  return recover_rollforward(vdl, xid, r, n, NULL, 0, 2, tails, pg, prev, at, mpg, mlast, nml);
}

static void a_whole_prepared_mtr_rolls_forward(void **state)
{
  (void)state;
  struct rmeta r[8];
  size_t n = prepared(r), at, nml;
  uint64_t tails[2] = {10, 5}, prev, mlast[4];
  uint32_t pg, mpg[4];
  assert_int_equal(roll(r, n, 10, 14, tails, &pg, &prev, &at, mpg, mlast, &nml), 1);
  assert_true(r[0].adopt && r[1].adopt && r[2].adopt);
  assert_int_equal(pg, 0);             /* the PG of record 13, the MTR's last page */
  assert_int_equal(prev, 13);
  assert_int_equal(at, 2);
  assert_int_equal(tails[0], 14);      /* the commit record is PG 0's tail */
  assert_int_equal(tails[1], 12);
  assert_int_equal(nml, 2);
  for (size_t k = 0; k < nml; k++)
    assert_int_equal(mlast[k], mpg[k] == 0 ? 14 : 12);
}

static void anything_less_changes_nothing(void **state)
{
  (void)state;
  struct rmeta r[8];
  size_t at, nml;
  uint64_t prev, mlast[4];
  uint32_t pg, mpg[4];
  for (int c = 0; c < 6; c++) {
    size_t n = prepared(r);
    uint64_t tails[2] = {10, 5}, xid = 14, vdl = 10;
    struct trunc t = {.epoch = 2, .from = 11, .to = 12};
    const struct trunc *tr = NULL;
    switch (c) {
    case 0: r[1] = r[2]; n = 2; break;                  /* a hole at 12 */
    case 1: r[1].cpl = 1; break;                        /* a CPL inside: not one MTR */
    case 2: r[2].prev = 10; break;                      /* a fork on PG 0 */
    case 3: xid = 13; n = 2; vdl = 12; break;           /* XID at vdl + 1: nothing prepared */
    case 4: xid = 15; break;                            /* the XID's own records missing */
    case 5: tr = &t; break;                             /* 12 was truncated (rule T) */
    }
    int rc = recover_rollforward(vdl, xid, r, n, tr, tr ? 1 : 0, 2, tails, &pg, &prev, &at,
                                 mpg, mlast, &nml);
    assert_int_equal(rc, 0);
    for (size_t i = 0; i < n; i++)
      assert_false(r[i].adopt);
    assert_true(tails[0] == 10 && tails[1] == 5);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_whole_prepared_mtr_rolls_forward),
    cmocka_unit_test(anything_less_changes_nothing),
  };
  return cmocka_run_group_tests_name("the community binlog's roll-forward", tests, NULL, NULL);
}
