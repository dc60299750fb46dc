/*
 * test_quorum_model.c: the writer's durability tracker (vfs/quorum.c,
 * paper §4.1, lab 22) against a brute-force model of the answer.
 *
 * Instructor-only (labs/instructor-only names tests/hidden): struct model
 * below recomputes the VCL and the VDL from their definitions at every
 * step, which is a complete (slow) answer to the lab, so a student who had
 * it could copy it. `auralog lab grade 22 --submission` runs this test
 * (impl.c lists it HIDDEN); a student's own grade has
 * tests/unit/test_quorum.c, whose schedules are fixed and whose expected
 * values are written out.
 *
 * Checks on random schedules that the VCL and the VDL always equal the
 * model's and never go down, allocation stops where the LAL says, and
 * every record ends at quorum, across thousands of records that wrap and
 * grow the ring, after a recovery with a gap below start, and under every
 * write quorum. The schedules' seeds come from lab_seed
 * (AURALOG_TEST_SEED: the instructor's grade gives each student
 * schedules of their own).
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
#include "vfs/quorum.h"

/* The simplest possible tracker: every record ever handed out, its acks as
 * a bitmask, and VCL/VDL recomputed from the definitions each time. */
struct model {
  uint64_t vdl0, start;
  size_t n;                 /* records start .. start + n - 1 */
  uint32_t *pg;
  uint8_t *cpl, *acks;
};

static void model_init(struct model *m, uint64_t vdl0, uint64_t start, size_t cap)
{
  m->vdl0 = vdl0;
  m->start = start;
  m->n = 0;
  m->pg = calloc(cap, sizeof *m->pg);
  m->cpl = calloc(cap, 1);
  m->acks = calloc(cap, 1);
  assert_non_null(m->pg);
  assert_non_null(m->cpl);
  assert_non_null(m->acks);
}

static void model_free(struct model *m)
{
  free(m->pg);
  free(m->cpl);
  free(m->acks);
}

/* VCL: the highest LSN with every record at or below it at quorum.
 * VDL: the highest CPL at or below the VCL. */
static void model_points(const struct model *m, int vw, uint64_t *vcl, uint64_t *vdl)
{
  *vcl = m->vdl0;
  *vdl = m->vdl0;
  for (size_t i = 0; i < m->n; i++) {
    if (__builtin_popcount(m->acks[i]) < vw)
      break;
    *vcl = m->start + i;
    if (m->cpl[i])
      *vdl = m->start + i;
  }
}

static void model_ack(struct model *m, uint32_t pg, int slot, uint64_t lsn)
{
  if (slot < 0 || slot >= NCOPIES || lsn < m->start || lsn - m->start >= m->n)
    return;
  if (m->pg[lsn - m->start] == pg)
    m->acks[lsn - m->start] |= (uint8_t)(1u << slot);
}

static void model_ack_upto(struct model *m, uint32_t pg, int slot, uint64_t scl)
{
  if (slot < 0 || slot >= NCOPIES)
    return;
  for (size_t i = 0; i < m->n && m->start + i <= scl; i++)
    if (m->pg[i] == pg)
      m->acks[i] |= (uint8_t)(1u << slot);
}

/* q agrees with m, and VCL/VDL did not go down since the last check. */
static void check_against(const struct quorum *q, const struct model *m, int vw,
                          uint64_t *last_vcl, uint64_t *last_vdl)
{
  uint64_t vcl, vdl;
  model_points(m, vw, &vcl, &vdl);
  expect_eq(q->vcl, vcl, "the VCL");
  expect_eq(q->vdl, vdl, "the VDL");
  expect_true(q->vdl <= q->vcl, "the VDL at or below the VCL");
  expect_true(q->vcl >= *last_vcl, "the VCL never to go down");
  expect_true(q->vdl >= *last_vdl, "the VDL never to go down");
  *last_vcl = q->vcl;
  *last_vdl = q->vdl;
  expect_eq(q->next_lsn, m->start + m->n, "next_lsn");
  size_t done = vcl >= m->start ? (size_t)(vcl - m->start + 1) : 0;
  expect_eq(q_pending(q), m->n - done, "records pending (q_pending)");
}

/* One random schedule: MTRs of 1..4 records over npg PGs, acks from random
 * slots to random LSNs (mostly pending ones, some stale, future, of the
 * wrong pg, or from a bad slot), some SCL acks. The pick of LSN favours
 * old records a little, so the head keeps moving while new records arrive
 * and the ring wraps and grows. */
static void run_random(uint64_t seed, uint64_t vdl0, uint64_t start, size_t total,
                       uint32_t npg, int vw)
{
  uint64_t s = seed;
  struct quorum q;
  struct model m;
  q_init(&q, vdl0, start, LAL, vw);
  model_init(&m, vdl0, start, total);
  uint64_t last_vcl = q.vcl, last_vdl = q.vdl;
  size_t steps = 0;

  while (m.n < total || q_pending(&q) > 0) {
    steps++;
    lab_at("random schedule %llu (%zu records over %u PGs, write quorum %d of 6), step %zu, "
           "%zu records handed out", (unsigned long long)seed, total, npg, vw, steps, m.n);
    expect_true(steps < 100 * total + 10000, "the schedule to end (every record at quorum) within "
                "its step budget");
    uint32_t op = rng_below(&s, 100);
    if (op < 15 && m.n < total) {
      size_t len = rng_below(&s, 4) + 1;
      for (size_t i = 0; i < len && m.n < total; i++) {
        uint32_t pg = rng_below(&s, npg);
        int cpl = i == len - 1 || m.n == total - 1;
        expect_true(q_can_alloc(&q, 1), "q_can_alloc(1) to allow one more LSN");
        expect_eq(q_alloc(&q, pg, cpl), start + m.n, "q_alloc returned LSN");
        m.pg[m.n] = pg;
        m.cpl[m.n] = (uint8_t)cpl;
        m.n++;
      }
    } else if (op < 90 && m.n > 0) {
      /* an ack for a record near the head, or anywhere */
      uint64_t lo = q.vcl >= start ? q.vcl + 1 : start;
      uint64_t hi = start + m.n;     /* exclusive */
      uint64_t lsn;
      if (lo < hi && rng_below(&s, 3) != 0)
        lsn = lo + rng_below(&s, (uint32_t)(hi - lo < 32 ? hi - lo : 32));
      else
        lsn = start + rng_below(&s, (uint32_t)m.n + 4);  /* may be stale or future */
      if (rng_below(&s, 50) == 0 && lsn > 0)
        lsn = rng_below(&s, 2) ? lsn - rng_below(&s, (uint32_t)(lsn < 1000 ? lsn : 1000))
                               : lsn + 1000;
      uint32_t pg = lsn >= start && lsn < hi && rng_below(&s, 10) != 0
                      ? m.pg[lsn - start] : rng_below(&s, npg + 1);
      int slot = rng_below(&s, 40) == 0 ? (int)rng_below(&s, 20) - 8
                                        : (int)rng_below(&s, NCOPIES);
      uint64_t old_vdl = q.vdl;
      int moved = q_ack(&q, pg, slot, lsn);
      model_ack(&m, pg, slot, lsn);
      expect_eq(moved, q.vdl != old_vdl, "q_ack's answer (1: the VDL moved)");
      check_against(&q, &m, vw, &last_vcl, &last_vdl);
    } else if (m.n > 0) {
      /* an SCL ack: some prefix of the records */
      uint64_t scl = start - 1 + rng_below(&s, (uint32_t)m.n + 3);
      uint32_t pg = rng_below(&s, npg);
      int slot = (int)rng_below(&s, NCOPIES);
      uint64_t old_vdl = q.vdl;
      int moved = q_ack_upto(&q, pg, slot, scl);
      model_ack_upto(&m, pg, slot, scl);
      expect_eq(moved, q.vdl != old_vdl, "q_ack's answer (1: the VDL moved)");
      check_against(&q, &m, vw, &last_vcl, &last_vdl);
    }
    /* q_can_alloc is exactly the formula */
    size_t k = rng_below(&s, 8);
    expect_eq(q_can_alloc(&q, k), q.next_lsn + k - 1 <= q.vdl + q.lal || k == 0,
              "q_can_alloc(%llu) (1: may hand out that many more LSNs)", (unsigned long long)k);
  }
  check_against(&q, &m, vw, &last_vcl, &last_vdl);
  expect_eq(q.vcl, start + total - 1, "the VCL");
  expect_eq(q.vdl, start + total - 1, "the VDL");   /* the last record is a CPL */
  q_free(&q);
  model_free(&m);
}

static void test_random_against_model(void **state)
{
  (void)state;
  lab_rule("§4.1: the VCL is the highest LSN at or below which every record is at write quorum, "
           "the VDL the highest CPL at or below it; neither goes down");
  uint64_t base = lab_seed(0);
  for (uint64_t seed = 1; seed <= 40; seed++)
    run_random(base + seed, 0, 1, 300, 1 + (uint32_t)(seed % 5), VW);
  /* after a recovery, with a gap below start */
  lab_at("after a recovery, with a gap below start");
  for (uint64_t seed = 100; seed < 110; seed++)
    run_random(base + seed, 100, 1000100, 300, 3, VW);
  /* other write quorums */
  lab_at("other write quorums");
  for (int vw = 1; vw <= NCOPIES; vw++)
    run_random(base + 200 + (uint64_t)vw, 0, 1, 300, 4, vw);
  /* thousands of records: the ring wraps and doubles many times */
  lab_at("thousands of records: the ring wraps and doubles many times");
  run_random(base + 7777, 0, 1, 5000, 6, VW);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_random_against_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
