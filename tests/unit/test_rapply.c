/*
 * test_rapply.c: a read replica's apply rule (vfs/rapply.c, paper §4.2.4).
 *
 * Checks that a replica serves nothing until the VDL reaches the stream's
 * start, then reads at the start (an empty volume's start, 0, too); that its read point is only ever a CPL
 * at or below a VDL it was told, whose MTR arrived whole (a VDL above
 * records not yet here, or one inside an MTR, does not move it past the
 * last whole MTR); that records apply only to cached pages (the others are
 * counted as left for storage, their pages untouched); that each PG's
 * `need` is the start's tail, then the last record moved past; that a gap,
 * a VDL going back and a feed before the start are refused; and, on random
 * streams (fixed seed) of MTRs over a few pages cut into feeds at random
 * places with random VDLs, that the cached pages always equal a model of
 * the volume at the read point, which is always a CPL at or below the VDL.
 * And the writer's ring of freed records (read.c pg_freed_at), which names
 * the PG tail at a replica's read point for node GC.
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
#include "vfs/rapply.h"
#include "vfs/volume_int.h"

#define PS 64u
#define PGP 4u                 /* pages per PG */
#define NPAGES 12u

/* A record setting byte off of page_no to val (a one-byte range). */
static Rec *mkrec(uint64_t lsn, uint32_t page_no, uint32_t off, uint8_t val, int cpl)
{
  Rec *r = calloc(1, sizeof *r);
  auralog__record__init(r);
  r->lsn = lsn;
  r->page_no = page_no;
  r->flags = cpl ? REC_CPL : 0;
  Auralog__Range *g = calloc(1, sizeof *g);
  auralog__range__init(g);
  g->off = off;
  g->data.len = 1;
  g->data.data = malloc(1);
  g->data.data[0] = val;
  r->ranges = calloc(1, sizeof *r->ranges);
  r->ranges[0] = g;
  r->n_ranges = 1;
  rec_seal(r);
  return r;
}

static void recfree(Rec *r)
{
  free(r->ranges[0]->data.data);
  free(r->ranges[0]);
  free(r->ranges);
  free(r);
}

static void start(struct rapply *ra, uint64_t st, uint64_t from, uint64_t vdl,
                  const uint32_t *pgs, const uint64_t *tails, size_t nt)
{
  Auralog__ReplicaStart s = AURALOG__REPLICA_START__INIT;
  Auralog__PgLast pl[8], *pp[8];
  for (size_t i = 0; i < nt; i++) {
    auralog__pg_last__init(&pl[i]);
    pl[i].pg = pgs[i];
    pl[i].lsn = tails[i];
    pp[i] = &pl[i];
  }
  s.volume_id = 1;
  s.epoch = 3;
  s.start = st;
  s.from = from;
  s.vdl = vdl;
  s.page_size = PS;
  s.pg_pages = PGP;
  s.tails = pp;
  s.n_tails = nt;
  ra_start(ra, &s);
}

/* The cache the callback serves: cached[p] says whether page p is in. */
struct cachefx {
  uint8_t page[NPAGES][PS];
  uint64_t lsn[NPAGES];
  int cached[NPAGES];
};

static uint8_t *get_page(void *arg, uint32_t page_no, uint64_t lsn)
{
  struct cachefx *c = arg;
  if (page_no >= NPAGES || !c->cached[page_no])
    return NULL;
  c->lsn[page_no] = lsn;
  return c->page[page_no];
}

static int feed1(struct rapply *ra, Rec *r, uint64_t vdl)
{
  char why[200];
  Rec *a[1] = {r};
  int rc = ra_feed(ra, r ? a : NULL, r ? 1 : 0, vdl, why, sizeof why);
  if (r)
    recfree(r);
  return rc;
}

static void test_start_waits_for_vdl(void **state)
{
  (void)state;
  struct rapply ra;
  ra_init(&ra);
  assert_false(ra_ready(&ra));                       /* no start yet */
  uint32_t pgs[] = {0, 2};
  uint64_t tails[] = {40, 38};
  start(&ra, 40, 41, 35, pgs, tails, 2);
  assert_false(ra_ready(&ra));                       /* vdl 35 < start 40 */
  ra_advance(&ra, 40, NULL, NULL);
  assert_false(ra.serving);                          /* refused: not ready */
  assert_int_equal(feed1(&ra, NULL, 39), 0);
  assert_false(ra_ready(&ra));
  assert_int_equal(feed1(&ra, NULL, 40), 0);
  assert_true(ra_ready(&ra));
  assert_int_equal(ra_target(&ra), 40);
  ra_advance(&ra, 40, NULL, NULL);
  assert_true(ra.serving);
  assert_int_equal(ra.rp, 40);
  assert_int_equal(ra_need(&ra, 0), 40);
  assert_int_equal(ra_need(&ra, 1), 0);
  assert_int_equal(ra_need(&ra, 2), 38);
  assert_int_equal(ra_need(&ra, 1000), 0);
  ra_free(&ra);
}

/* An empty volume: start 0 is a read point too. */
static void test_empty_volume_serves_at_zero(void **state)
{
  (void)state;
  struct rapply ra;
  ra_init(&ra);
  start(&ra, 0, 1, 0, NULL, NULL, 0);
  assert_true(ra_ready(&ra));
  assert_int_equal(ra_target(&ra), 0);
  ra_advance(&ra, ra_target(&ra), NULL, NULL);
  assert_true(ra.serving);
  assert_int_equal(ra.rp, 0);
  assert_int_equal(ra_need(&ra, 0), 0);
  ra_free(&ra);
}

static void test_whole_mtrs_at_or_below_vdl(void **state)
{
  (void)state;
  struct rapply ra;
  ra_init(&ra);
  start(&ra, 10, 11, 10, NULL, NULL, 0);
  assert_int_equal(ra_target(&ra), 10);
  /* MTR A: 11, 12 (CPL); MTR B: 13, 14, 15 (CPL). */
  assert_int_equal(feed1(&ra, mkrec(11, 0, 0, 1, 0), 10), 0);
  assert_int_equal(ra_target(&ra), 10);              /* not durable */
  assert_int_equal(feed1(&ra, mkrec(12, 5, 0, 2, 1), 11), 0);
  /* A VDL inside an MTR (never told by a writer, but the rule holds). */
  assert_int_equal(ra_target(&ra), 10);
  assert_int_equal(feed1(&ra, mkrec(13, 0, 1, 3, 0), 12), 0);
  assert_int_equal(ra_target(&ra), 12);
  assert_int_equal(feed1(&ra, mkrec(14, 9, 1, 4, 0), 15), 0);
  /* VDL 15 told, but 15 has not arrived: B is not whole here. */
  assert_int_equal(ra_target(&ra), 12);
  struct cachefx c;
  memset(&c, 0, sizeof c);
  c.cached[0] = 1;
  c.cached[9] = 1;
  assert_int_equal(ra_advance(&ra, ra_target(&ra), get_page, &c), 2);
  assert_int_equal(ra.rp, 12);
  assert_int_equal(c.page[0][0], 1);                 /* applied: cached */
  assert_int_equal(c.page[0][1], 0);                 /* 13 is B's: not yet */
  assert_int_equal(c.lsn[0], 11);
  assert_int_equal(ra.applied, 1);
  assert_int_equal(ra.skipped, 1);                   /* page 5: not cached */
  assert_int_equal(ra_need(&ra, 1), 12);             /* page 5 is PG 1 */
  assert_int_equal(ra_need(&ra, 0), 11);
  assert_int_equal(feed1(&ra, mkrec(15, 1, 2, 5, 1), 15), 0);
  assert_int_equal(ra_target(&ra), 15);
  assert_int_equal(ra_advance(&ra, 15, get_page, &c), 3);
  assert_int_equal(c.page[0][1], 3);
  assert_int_equal(c.page[9][1], 4);
  assert_int_equal(ra_need(&ra, 0), 15);
  assert_int_equal(ra_need(&ra, 2), 14);
  assert_int_equal(ra.mtrs, 2);
  assert_int_equal(ra_pending(&ra), 0);
  ra_free(&ra);
}

static void test_refusals(void **state)
{
  (void)state;
  struct rapply ra;
  ra_init(&ra);
  assert_int_equal(feed1(&ra, mkrec(1, 0, 0, 1, 1), 0), -1);   /* before the start */
  start(&ra, 10, 20, 10, NULL, NULL, 0);
  assert_int_equal(feed1(&ra, mkrec(21, 0, 0, 1, 1), 10), -1); /* gap: 20 missing */
  start(&ra, 10, 20, 10, NULL, NULL, 0);
  assert_int_equal(feed1(&ra, mkrec(20, 0, 0, 1, 1), 10), 0);
  assert_int_equal(feed1(&ra, NULL, 9), -1);                   /* vdl back */
  start(&ra, 10, 20, 10, NULL, NULL, 0);
  assert_int_equal(feed1(&ra, mkrec(20, 0, 0, 1, 1), 10), 0);
  assert_int_equal(feed1(&ra, mkrec(20, 0, 0, 1, 1), 10), -1); /* again */
  assert_int_equal(feed1(&ra, mkrec(21, PGP * 5000, 0, 1, 1), 10), -1); /* no such PG */
  ra_free(&ra);
}

/* Random streams against a model: the volume's pages after each MTR. */
static void test_random_streams(void **state)
{
  (void)state;
  uint64_t g = 4242;
  for (int round = 0; round < 200; round++) {
    /* The stream: nm MTRs from LSN 101, each 1-4 records. */
    size_t nm = 1 + rng_below(&g, 30);
    Rec *recs[200];
    size_t nr = 0;
    uint64_t cpls[40];
    static uint8_t model[41][NPAGES][PS];     /* model[k]: after k MTRs */
    memset(model[0], 0, sizeof model[0]);
    uint64_t lsn = 101;
    for (size_t m = 0; m < nm; m++) {
      memcpy(model[m + 1], model[m], sizeof model[m]);
      size_t k = 1 + rng_below(&g, 4);
      for (size_t i = 0; i < k; i++) {
        uint32_t p = (uint32_t)rng_below(&g, NPAGES), off = (uint32_t)rng_below(&g, PS);
        uint8_t val = (uint8_t)(1 + rng_below(&g, 255));
        recs[nr++] = mkrec(lsn, p, off, val, i == k - 1);
        model[m + 1][p][off] = val;
        lsn++;
      }
      cpls[m] = lsn - 1;
    }
    struct rapply ra;
    ra_init(&ra);
    start(&ra, 100, 101, 100, NULL, NULL, 0);
    struct cachefx c;
    memset(&c, 0, sizeof c);
    for (uint32_t p = 0; p < NPAGES; p++)
      c.cached[p] = 1;          /* every page cached: they must equal the model */
    size_t sent = 0;
    uint64_t vdl = 100;
    while (sent < nr || ra.rp < cpls[nm - 1]) {
      size_t take = rng_below(&g, 6);
      if (take > nr - sent)
        take = nr - sent;
      /* The VDL: a CPL at most a few MTRs past what was sent (a writer's
       * VDL can be ahead of its stream), never going back. */
      size_t m = 0;
      while (m < nm && cpls[m] <= vdl)
        m++;
      if (rng_below(&g, 2) && m < nm)
        vdl = cpls[m];
      char why[200];
      assert_int_equal(ra_feed(&ra, recs + sent, take, vdl, why, sizeof why), 0);
      sent += take;
      uint64_t t = ra_target(&ra);
      assert_true(ra_ready(&ra));
      assert_true(t <= vdl);
      assert_true(t <= (sent ? recs[sent - 1]->lsn : 100));
      ra_advance(&ra, t, get_page, &c);
      size_t k = 0;             /* MTRs at or below the read point */
      while (k < nm && cpls[k] <= ra.rp)
        k++;
      assert_true(ra.serving);
      assert_true(ra.rp == 100 || ra.rp == cpls[k - 1]);   /* a CPL: whole MTRs */
      assert_memory_equal(c.page, model[k], sizeof c.page);
    }
    for (size_t i = 0; i < nr; i++)
      recfree(recs[i]);
    ra_free(&ra);
  }
}

/* The writer's side (read.c pg_freed_at): the PG tail at a replica's read
 * point below every record kept, from the ring of records freed lately;
 * unknown (0) below the ring's oldest entry. Node GC frees up to it. */
static void test_freed_ring(void **state)
{
  (void)state;
  struct pgout g;
  memset(&g, 0, sizeof g);
  assert_int_equal(pg_freed_at(&g, 100), 0);          /* no ring: unknown */
  g.freed = calloc(FREED_RING, sizeof *g.freed);
  for (uint64_t l = 10; l < 10 + 3 * FREED_RING; l += 3)
    g.freed[g.freed_n++ % FREED_RING] = l;            /* 10, 13, 16, ... */
  uint64_t oldest = 10 + 3 * (uint64_t)(g.freed_n - FREED_RING);
  uint64_t newest = 10 + 3 * (uint64_t)(g.freed_n - 1);
  assert_int_equal(pg_freed_at(&g, oldest - 1), 0);   /* below the ring */
  assert_int_equal(pg_freed_at(&g, oldest), oldest);
  assert_int_equal(pg_freed_at(&g, oldest + 2), oldest);
  assert_int_equal(pg_freed_at(&g, oldest + 3), oldest + 3);
  assert_int_equal(pg_freed_at(&g, newest + 100), newest);
  for (uint64_t p = oldest; p < newest; p += 7)
    assert_int_equal(pg_freed_at(&g, p), p - (p - 10) % 3);
  free(g.freed);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_start_waits_for_vdl),
    cmocka_unit_test(test_empty_volume_serves_at_zero),
    cmocka_unit_test(test_whole_mtrs_at_or_below_vdl),
    cmocka_unit_test(test_refusals),
    cmocka_unit_test(test_random_streams),
    cmocka_unit_test(test_freed_ring),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
