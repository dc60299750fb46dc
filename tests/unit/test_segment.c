/*
 * test_segment.c: how a storage segment tracks which records it holds.
 *
 * Checks that the segment complete LSN (SCL) is always the highest LSN up to
 * which the segment holds every record of its protection group, whatever
 * order the records arrive in (every order of a short chain, and many
 * shuffles of a long one); that a resent record is recognised as a
 * duplicate, whether it is below the SCL or still waiting above a hole, and
 * that adding it again changes nothing; that a record whose backlink
 * contradicts records already held, a record for a page outside the
 * segment, or one writing past the end of its page is refused with the
 * right error; and that a writer with an older epoch is fenced off while a
 * newer epoch is accepted.
 *
 * The truncation rule (rule T, record.h), on the segment and on disk: a
 * truncation cuts only records of older epochs inside its range, whatever
 * order truncations of several epochs arrive in (a gossip of an older range
 * after a newer writer's records never removes them); a copy range past the
 * segment's own page size is refused; installing truncations on the store
 * deletes exactly what they cut, and rechaining from disk gives the SCL the
 * remaining records prove; a segment whose SCL hint names no stored record
 * is rebuilt from the start.
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
#include "node/segment.h"
#include "node/store.h"
#include <unistd.h>
#include <sys/stat.h>

/* Segment under test: PG 1 of a 4096-byte-page volume, pages 256..511. */
#define FIRST 256
#define NPAGES 256
#define PSIZE 4096

/* A record of one 8-byte range at off of page. */
struct trec {
  Rec r;
  Auralog__Range g;
  Auralog__Range *gp;
  uint8_t data[8];
};

static void mkrec(struct trec *t, uint64_t lsn, uint64_t prev, uint32_t page,
                  uint32_t off, size_t len)
{
  assert_true(len <= sizeof t->data);
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  memset(t->data, (int)lsn, sizeof t->data);
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = page;
  t->g.off = off;
  t->g.data.len = len;
  t->g.data.data = t->data;
  t->gp = &t->g;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
}

/* seg_admit on (lsn, prev) for a page inside the segment. */
static int admit(const struct segment *s, uint64_t lsn, uint64_t prev, int *dup)
{
  struct trec t;
  mkrec(&t, lsn, prev, FIRST + (uint32_t)(lsn % NPAGES), 0, 8);
  char why[256] = "";
  *dup = -1;
  int rc = seg_admit(s, &t.r, dup, why, sizeof why);
  if (rc != ERR_NONE)
    assert_true(strlen(why) > 0);
  return rc;
}

static void expect_admit(const struct segment *s, uint64_t lsn, uint64_t prev,
                         int code, int dup)
{
  int d;
  int rc = admit(s, lsn, prev, &d);
  char sw[320];                /* the test seed, in a randomized test */
  if (rc != code)
    fail_msg("admit %llu<-%llu: got %d (%s), expected %d (%s)%s",
             (unsigned long long)lsn, (unsigned long long)prev, rc,
             wire_errname((uint32_t)rc), code, wire_errname((uint32_t)code),
             lab_seed_words_(sw, sizeof sw));
  if (code == ERR_NONE && d != dup)
    fail_msg("admit %llu<-%llu: dup %d, expected %d (%s)%s", (unsigned long long)lsn,
             (unsigned long long)prev, d, dup,
             dup ? "the segment holds it already: at or below the SCL, or waiting above a hole"
                 : "the segment does not hold it yet", lab_seed_words_(sw, sizeof sw));
}

/* SCL expected once the chain records flagged in added[] are held. */
static uint64_t expected_scl(const uint64_t *chain, const int *added, size_t n)
{
  uint64_t scl = 0;
  for (size_t i = 0; i < n && added[i]; i++)
    scl = chain[i];
  return scl;
}

/* Add chain records in the order given by perm, checking after each. With
 * full set, also check every record's admit answer at every step. */
static void run_order(const uint64_t *chain, size_t n, const size_t *perm,
                      int full)
{
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  int added[512] = { 0 };
  uint64_t max = 0;
  assert_true(n <= 512);
  for (size_t k = 0; k < n; k++) {
    size_t i = perm[k];
    uint64_t lsn = chain[i], prev = i ? chain[i - 1] : 0;
    expect_admit(&s, lsn, prev, ERR_NONE, 0);          /* new, no conflict */
    uint64_t scl = seg_add(&s, lsn, prev);
    added[i] = 1;
    if (lsn > max)
      max = lsn;
    uint64_t want = expected_scl(chain, added, n);
    lab_at("after adding %zu records (last %llu)", k + 1, (unsigned long long)lsn);
    expect_eq(scl, want, "seg_add returned scl");
    expect_eq(s.scl, want, "scl");
    expect_eq(s.max_lsn, max, "max_lsn (the highest LSN held)");
    size_t below = 0;
    for (size_t j = 0; j < n; j++)
      below += added[j] && chain[j] <= want;
    expect_eq(s.npend, k + 1 - below, "npend (records held above the SCL)");
    expect_admit(&s, lsn, prev, ERR_NONE, 1);          /* now a duplicate */
    if (full)
      for (size_t j = 0; j < n; j++)
        expect_admit(&s, chain[j], j ? chain[j - 1] : 0, ERR_NONE, added[j]);
  }
  lab_at("after adding all %zu records of the chain", n);
  expect_eq(s.scl, chain[n - 1], "scl");
  expect_eq(s.npend, 0, "npend (records held above the SCL)");
  seg_free(&s);
}

/* Lexicographic next permutation; 0 when p was the last one. */
static int next_perm(size_t *p, size_t n)
{
  if (n < 2)
    return 0;
  size_t i = n - 1;
  while (i > 0 && p[i - 1] >= p[i])
    i--;
  if (i == 0)
    return 0;
  size_t j = n - 1;
  while (p[j] <= p[i - 1])
    j--;
  size_t t = p[i - 1]; p[i - 1] = p[j]; p[j] = t;
  for (size_t a = i, b = n - 1; a < b; a++, b--) {
    t = p[a]; p[a] = p[b]; p[b] = t;
  }
  return 1;
}

/* ---- SCL ----------------------------------------------------------------- */

static void test_scl_every_order_of_short_chain(void **state)
{
  (void)state;
  lab_rule("§4.2.1: the SCL is the highest LSN below which every record is held: "
           "the chain of backlinks from 0 reaches it with no hole");
  const uint64_t chain[] = { 3, 7, 9, 15, 16, 22, 40 };  /* 3<-0, 7<-3, 9<-7, ... */
  const size_t n = sizeof chain / sizeof chain[0];
  size_t perm[7];
  for (size_t i = 0; i < n; i++)
    perm[i] = i;
  size_t count = 0;
  do {
    run_order(chain, n, perm, 1);
    count++;
  } while (next_perm(perm, n));
  expect_eq(count, 5040, "orders tried (7!)");
}

static void test_scl_random_shuffles_of_long_chain(void **state)
{
  (void)state;
  lab_rule("§4.2.1: the SCL is the highest LSN below which every record is held: "
           "the chain of backlinks from 0 reaches it with no hole");
  uint64_t base = lab_seed(0);   /* AURALOG_TEST_SEED: other shuffles (lab_expect.h) */
  for (uint64_t seed = 1; seed <= 200; seed++) {
    uint64_t s = base + seed;
    size_t n = 50 + rng_below(&s, 250);
    uint64_t chain[300];
    size_t perm[300];
    uint64_t lsn = 1 + rng_below(&s, 5);
    for (size_t i = 0; i < n; i++) {
      chain[i] = lsn;
      lsn += 1 + rng_below(&s, 9);   /* gaps: LSNs of other PGs */
      perm[i] = i;
    }
    for (size_t i = n - 1; i > 0; i--) {
      size_t j = rng_below(&s, (uint32_t)(i + 1));
      size_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    run_order(chain, n, perm, n <= 80);
  }
}

/* In-order delivery of a chain whose LSNs are dense or sparse. */
static void test_scl_in_order(void **state)
{
  (void)state;
  lab_rule("§4.2.1: the SCL is the highest LSN below which every record is held: "
           "the chain of backlinks from 0 reaches it with no hole");
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  expect_eq(s.scl, 0, "a new segment's scl");
  uint64_t prev = 0;
  for (uint64_t lsn = 1; lsn < 5000; lsn += 1 + lsn % 3) {
    lab_at("records in order, each linked to the one before; after adding %llu<-%llu",
           (unsigned long long)lsn, (unsigned long long)prev);
    expect_eq(seg_add(&s, lsn, prev), lsn, "seg_add returned scl");
    expect_eq(s.npend, 0, "npend (records held above the SCL)");
    prev = lsn;
  }
  seg_free(&s);
}

/* ---- duplicates and idempotence ----------------------------------------- */

static void test_duplicates(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  lab_rule("§4.2.1: the SCL is the highest LSN below which every record is held: "
           "the chain of backlinks from 0 reaches it with no hole");
  /* chain 3<-0, 7<-3, 9<-7, 15<-9; 9 is missing */
  lab_at("adding 3<-0, 7<-3, then 15<-9 (9 missing)");
  expect_eq(seg_add(&s, 3, 0), 3, "seg_add(3<-0) returned scl");
  expect_eq(seg_add(&s, 7, 3), 7, "seg_add(7<-3) returned scl");
  expect_eq(seg_add(&s, 15, 9), 7, "seg_add(15<-9) returned scl");
  expect_admit(&s, 3, 0, ERR_NONE, 1);     /* at or below scl */
  expect_admit(&s, 7, 3, ERR_NONE, 1);
  expect_admit(&s, 15, 9, ERR_NONE, 1);    /* pending above the hole */
  expect_admit(&s, 9, 7, ERR_NONE, 0);     /* the hole itself: new */
  expect_admit(&s, 20, 15, ERR_NONE, 0);   /* beyond: new */
  /* An LSN below scl is a duplicate whatever backlink it claims: the chain
   * up to scl is whole, so the segment already holds it. */
  expect_admit(&s, 5, 3, ERR_NONE, 1);
  lab_at("3, 7 and 15<-9 held, then the hole 9<-7 arrives");
  expect_eq(seg_add(&s, 9, 7), 15, "seg_add(9<-7) returned scl");
  expect_admit(&s, 9, 7, ERR_NONE, 1);
  expect_admit(&s, 15, 9, ERR_NONE, 1);
  seg_free(&s);
}

static void test_add_is_idempotent(void **state)
{
  (void)state;
  struct segment s;
  lab_rule("§4.2.1: a segment may receive a record more than once (resends, gossip); "
           "adding one it holds changes nothing: not the SCL, not max_lsn, not what waits");
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  lab_at("adding 3<-0 twice, then 9<-7 (7 missing)");
  expect_eq(seg_add(&s, 3, 0), 3, "seg_add(3<-0) returned scl");
  expect_eq(seg_add(&s, 3, 0), 3, "seg_add(3<-0) again returned scl");
  expect_eq(seg_add(&s, 9, 7), 3, "seg_add(9<-7) returned scl");
  expect_eq(s.npend, 1, "npend (records held above the SCL: 9)");
  for (int k = 0; k < 5; k++) {
    lab_at("3 and 9<-7 held, then 9<-7 and 3<-0 added again (round %d of 5)", k + 1);
    expect_eq(seg_add(&s, 9, 7), 3, "seg_add(9<-7) returned scl");
    expect_eq(seg_add(&s, 3, 0), 3, "seg_add(3<-0) returned scl");
    expect_eq(s.npend, 1, "npend (records held above the SCL: 9)");
    expect_eq(s.max_lsn, 9, "max_lsn");
  }
  lab_at("3 and 9<-7 held, then the hole 7<-3 arrives");
  expect_eq(seg_add(&s, 7, 3), 9, "seg_add(7<-3) returned scl");
  expect_eq(s.npend, 0, "npend");
  lab_at("3, 7, 9 held, then 7 and 9 again");
  expect_eq(seg_add(&s, 7, 3), 9, "seg_add(7<-3) returned scl");
  expect_eq(seg_add(&s, 9, 7), 9, "seg_add(9<-7) returned scl");
  expect_eq(s.npend, 0, "npend");
  expect_eq(s.scl, 9, "scl");

  /* Many resends in random order on a long chain end in the same state. */
  uint64_t rs = 42;
  struct segment t;
  seg_init(&t, 1, 1, FIRST, NPAGES, PSIZE);
  for (int k = 0; k < 5000; k++) {
    uint64_t i = 1 + rng_below(&rs, 300);   /* chain 2<-0, 4<-2, 6<-4, ... */
    seg_add(&t, 2 * i, 2 * i - 2);
    seg_add(&t, 2 * i, 2 * i - 2);
  }
  for (uint64_t i = 1; i <= 300; i++)
    seg_add(&t, 2 * i, 2 * i - 2);
  lab_at("a chain 2<-0, 4<-2, ... 600<-598 added 10,000 times in random order, then once "
         "in order");
  expect_eq(t.scl, 600, "scl");
  expect_eq(t.npend, 0, "npend");
  expect_eq(t.max_lsn, 600, "max_lsn");
  seg_free(&t);
  seg_free(&s);
}

/* ---- refusals ------------------------------------------------------------ */

/* seg_admit must not change the segment, even when it refuses. */
static void same_state(const struct segment *a, const struct segment *b)
{
  assert_int_equal(a->scl, b->scl);
  assert_int_equal(a->max_lsn, b->max_lsn);
  assert_int_equal(a->epoch, b->epoch);
  assert_int_equal(a->npend, b->npend);
  for (size_t i = 0; i < a->npend; i++) {
    assert_int_equal(a->pend[i].lsn, b->pend[i].lsn);
    assert_int_equal(a->pend[i].prev, b->pend[i].prev);
  }
}

static void test_conflicting_backlinks(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  seg_add(&s, 3, 0);
  seg_add(&s, 7, 3);                         /* scl 7 */
  seg_add(&s, 15, 9);                        /* held above the hole at 9 */
  struct segment snap = s;
  snap.pend = malloc(s.npend * sizeof *s.pend);
  assert_non_null(snap.pend);
  memcpy(snap.pend, s.pend, s.npend * sizeof *s.pend);

  /* jumps over a record at or below scl (7 is held between 3 and 8) */
  expect_admit(&s, 8, 3, ERR_CONFLICT, 0);
  expect_admit(&s, 9, 0, ERR_CONFLICT, 0);
  /* jumps over the held record 15 */
  expect_admit(&s, 20, 7, ERR_CONFLICT, 0);
  expect_admit(&s, 20, 14, ERR_CONFLICT, 0);
  /* is jumped over by 15 (15 says nothing lies between 9 and 15) */
  expect_admit(&s, 12, 7, ERR_CONFLICT, 0);
  expect_admit(&s, 12, 9, ERR_CONFLICT, 0);
  /* consistent with everything held */
  expect_admit(&s, 9, 7, ERR_NONE, 0);
  expect_admit(&s, 8, 7, ERR_NONE, 0);       /* 8 could precede 9 (9<-8 later) */
  expect_admit(&s, 20, 15, ERR_NONE, 0);
  same_state(&s, &snap);

  /* The conflict reason names the record. */
  struct trec t;
  mkrec(&t, 20, 7, FIRST, 0, 8);
  char why[256] = "";
  int dup;
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_CONFLICT);
  assert_non_null(strstr(why, "20"));
  same_state(&s, &snap);
  free(snap.pend);
  seg_free(&s);
}

/* Two records claiming the same predecessor, with nothing at or below scl. */
static void test_conflict_same_backlink(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  seg_add(&s, 7, 3);                         /* 3 missing: scl stays 0 */
  assert_int_equal(s.scl, 0);
  expect_admit(&s, 5, 3, ERR_CONFLICT, 0);   /* 7 already follows 3 */
  expect_admit(&s, 9, 3, ERR_CONFLICT, 0);   /* 9<-3 would jump over 7 */
  expect_admit(&s, 3, 0, ERR_NONE, 0);
  expect_admit(&s, 9, 7, ERR_NONE, 0);
  seg_free(&s);
}

static void test_out_of_range(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  struct trec t;
  char why[256];
  int dup;
  const struct { uint32_t page; int code; } pages[] = {
    { 0, ERR_OUT_OF_RANGE }, { FIRST - 1, ERR_OUT_OF_RANGE },
    { FIRST, ERR_NONE }, { FIRST + NPAGES - 1, ERR_NONE },
    { FIRST + NPAGES, ERR_OUT_OF_RANGE }, { 0xffffffffu, ERR_OUT_OF_RANGE },
  };
  for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
    mkrec(&t, 5, 0, pages[i].page, 0, 8);
    why[0] = 0;
    assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), pages[i].code);
    if (pages[i].code != ERR_NONE)
      assert_non_null(strstr(why, "outside"));
  }

  /* bytes past the end of the page */
  mkrec(&t, 5, 0, FIRST, PSIZE - 4, 8);
  why[0] = 0;
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_OUT_OF_RANGE);
  assert_true(strlen(why) > 0);
  mkrec(&t, 5, 0, FIRST, PSIZE, 1);
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_OUT_OF_RANGE);
  mkrec(&t, 5, 0, FIRST, PSIZE - 8, 8);      /* ends exactly at the end */
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_NONE);
  assert_int_equal(dup, 0);

  /* range checks apply to duplicates too: a resend that is out of range is
   * refused, not silently counted */
  seg_add(&s, 5, 0);
  mkrec(&t, 5, 0, FIRST + NPAGES, 0, 8);
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_OUT_OF_RANGE);
  seg_free(&s);
}

/* ---- epochs -------------------------------------------------------------- */

static void test_epoch_fencing(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  char why[256] = "";
  assert_int_equal(seg_epoch(&s, 1, why, sizeof why), ERR_NONE);
  assert_int_equal(s.epoch, 1);
  assert_int_equal(seg_epoch(&s, 5, why, sizeof why), ERR_NONE);
  assert_int_equal(s.epoch, 5);

  why[0] = 0;
  assert_int_equal(seg_epoch(&s, 4, why, sizeof why), ERR_STALE_EPOCH);
  assert_non_null(strstr(why, "fenced by epoch 5"));
  assert_int_equal(s.epoch, 5);              /* not lowered */
  assert_int_equal(seg_epoch(&s, 0, why, sizeof why), ERR_STALE_EPOCH);
  assert_int_equal(s.epoch, 5);

  assert_int_equal(seg_epoch(&s, 5, why, sizeof why), ERR_NONE);  /* same: fine */
  assert_int_equal(seg_epoch(&s, 7, why, sizeof why), ERR_NONE);
  assert_int_equal(s.epoch, 7);
  why[0] = 0;
  assert_int_equal(seg_epoch(&s, 6, why, sizeof why), ERR_STALE_EPOCH);
  assert_non_null(strstr(why, "fenced by epoch 7"));
  assert_int_equal(s.epoch, 7);

  /* The epoch does not disturb the chain. */
  seg_add(&s, 3, 0);
  assert_int_equal(seg_epoch(&s, 8, why, sizeof why), ERR_NONE);
  assert_int_equal(s.scl, 3);
  seg_free(&s);
}

/* ---- rule T --------------------------------------------------------------- */

static void test_trunc_rule(void **state)
{
  (void)state;
  struct trunc t[3] = {{2, 100, 200}, {5, 150, 300}, {3, 50, 60}};
  /* every order of arrival gives the same answers: rule T is a pure
   * predicate over the set */
  size_t orders[6][3] = {{0,1,2},{0,2,1},{1,0,2},{1,2,0},{2,0,1},{2,1,0}};
  for (int o = 0; o < 6; o++) {
    struct trunc u[3];
    for (int i = 0; i < 3; i++)
      u[i] = t[orders[o][i]];
    assert_false(trunc_cuts(u, 3, 100, 1));   /* at from: kept */
    assert_true(trunc_cuts(u, 3, 101, 1));    /* inside, older epoch */
    assert_false(trunc_cuts(u, 3, 101, 2));   /* its own epoch: kept */
    assert_true(trunc_cuts(u, 3, 180, 4));    /* epoch 5's range cuts epoch 4 */
    assert_false(trunc_cuts(u, 3, 180, 5));
    assert_false(trunc_cuts(u, 3, 250, 6));   /* newer than every range */
    assert_true(trunc_cuts(u, 3, 300, 1));
    assert_false(trunc_cuts(u, 3, 301, 1));   /* above every range */
    assert_true(trunc_cuts(u, 3, 55, 2));
    assert_false(trunc_cuts(u, 3, 55, 3));
  }
  assert_false(trunc_cuts(NULL, 0, 5, 0));
}

static void test_segment_refuses_only_what_a_truncation_cuts(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  seg_add(&s, 10, 0);
  /* an old, interrupted recovery's range, heard late by gossip */
  seg_add_trunc(&s, &(struct trunc){2, 20, 20 + 1000});
  assert_true(seg_has_trunc(&s, 2, 20, 1020));
  seg_add_trunc(&s, &(struct trunc){2, 20, 1020});           /* once only */
  assert_int_equal(s.ntruncs, 1);
  seg_add_trunc(&s, &(struct trunc){3, 30, 30});             /* empty: nothing held */
  assert_int_equal(s.ntruncs, 1);
  char why[256];
  int dup;
  struct trec t;
  mkrec(&t, 500, 10, FIRST, 0, 8);
  t.r.epoch = 1;                            /* the crashed writer's */
  rec_seal(&t.r);
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_CONFLICT);
  assert_non_null(strstr(why, "truncated by epoch 2"));
  t.r.epoch = 3;                            /* a newer writer's: kept */
  rec_seal(&t.r);
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_NONE);
  assert_int_equal(dup, 0);
  seg_free(&s);
}

static void test_copy_past_the_segments_page(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, 1024);   /* 1 KiB pages */
  struct trec t;
  mkrec(&t, 1, 0, FIRST, 0, 8);
  t.g.data.len = 0;                          /* a copy ... */
  t.g.off = 1000;
  t.g.from = 100;
  t.g.len = 100;                             /* ... of bytes past 1024 */
  rec_seal(&t.r);
  char why[256];
  int dup;
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_OUT_OF_RANGE);
  t.g.off = 0;
  t.g.from = 1000;                           /* its source past the end */
  rec_seal(&t.r);
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_OUT_OF_RANGE);
  t.g.from = 200;                            /* inside: fine */
  rec_seal(&t.r);
  assert_int_equal(seg_admit(&s, &t.r, &dup, why, sizeof why), ERR_NONE);
  seg_free(&s);
}

/* ---- rule T on disk (node/store.c) ----------------------------------------- */

static char tmpdir[64];
static struct store st;
static struct segment *loaded;

static void keep(void *arg, struct segment *s)
{
  (void)arg;
  *loaded = *s;
}

static void put(struct segment *s, uint64_t lsn, uint64_t prev, uint64_t epoch)
{
  char why[256];
  struct trec t;
  mkrec(&t, lsn, prev, FIRST + (uint32_t)(lsn % NPAGES), 0, 8);
  t.r.epoch = epoch;
  rec_seal(&t.r);
  assert_int_equal(store_begin(&st, why, sizeof why), 0);
  assert_int_equal(store_put_rec(&st, s, &t.r, why, sizeof why), 0);
  seg_add(s, lsn, prev);
}

static void test_store_truncates_by_epoch(void **state)
{
  (void)state;
  char why[256];
  snprintf(tmpdir, sizeof tmpdir, "/tmp/auralog-unit-seg-%d", (int)getpid());
  assert_int_equal(store_open(&st, tmpdir, 0, why, sizeof why), 0);
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  /* epoch 1 wrote 1, 2, 3 (3 never durable); epoch 3's recovery kept 2
   * and wrote from 1000 on, linked to 2 */
  put(&s, 1, 0, 1);
  put(&s, 2, 1, 1);
  put(&s, 3, 2, 1);
  put(&s, 1001, 2, 3);
  put(&s, 1002, 1001, 3);
  assert_int_equal(store_put_meta(&st, &s, why, sizeof why), 0);
  assert_int_equal(store_commit(&st, why, sizeof why), 0);
  assert_int_equal(s.scl, 3);                /* 1001 links to 2, not 3 */

  /* epoch 3's own truncation (2, 1000]: cuts 3 only */
  struct trunc t3 = {3, 2, 1000};
  size_t cut = 0;
  assert_int_equal(store_begin(&st, why, sizeof why), 0);
  assert_int_equal(store_truncate(&st, &s, &t3, &cut, why, sizeof why), 0);
  assert_int_equal(cut, 1);
  seg_add_trunc(&s, &(struct trunc){3, 2, 1000});
  assert_int_equal(store_rechain(&st, &s, store_tail(&st, &s, 2), why, sizeof why), 0);
  assert_int_equal(s.scl, 1002);

  /* an interrupted epoch-2 recovery's range (1, 2000], gossiped late: it
   * would have cut 2 and epoch 3's records; rule T cuts nothing */
  struct trunc t2 = {2, 1, 2000};
  assert_int_equal(store_truncate(&st, &s, &t2, &cut, why, sizeof why), 0);
  assert_int_equal(cut, 1);                  /* record 2, of epoch 1 ... */
  /* ... which is why recovery adopts what it keeps: an adopted copy of 2
   * carries epoch 3 and survives the same range (start again: abort) */
  store_abort(&st);
  s.npend = 0;
  assert_int_equal(store_begin(&st, why, sizeof why), 0);
  {
    struct trec a;
    mkrec(&a, 2, 1, FIRST + 2, 0, 8);
    a.r.epoch = 3;
    rec_seal(&a.r);
    assert_int_equal(store_put_rec(&st, &s, &a.r, why, sizeof why), 0);
  }
  assert_int_equal(store_truncate(&st, &s, &t3, &cut, why, sizeof why), 0);
  assert_int_equal(cut, 1);                  /* 3 (the abort undid the first) */
  assert_int_equal(store_truncate(&st, &s, &t2, &cut, why, sizeof why), 0);
  assert_int_equal(cut, 0);
  uint64_t e = 0;
  assert_true(store_held(&st, &s, 2, &e));
  assert_int_equal(e, 3);
  assert_true(store_held(&st, &s, 1001, NULL));
  assert_false(store_held(&st, &s, 3, NULL));
  seg_add_trunc(&s, &(struct trunc){2, 1, 2000});
  assert_int_equal(store_rechain(&st, &s, store_tail(&st, &s, 1), why, sizeof why), 0);
  assert_int_equal(s.scl, 1002);
  assert_int_equal(store_put_meta(&st, &s, why, sizeof why), 0);
  assert_int_equal(store_commit(&st, why, sizeof why), 0);

  /* what the disk says after a restart is what memory said */
  store_close(&st);
  assert_int_equal(store_open(&st, tmpdir, 0, why, sizeof why), 0);
  struct segment l;
  loaded = &l;
  assert_int_equal(store_load(&st, keep, NULL, why, sizeof why), 0);
  assert_int_equal(l.scl, 1002);
  assert_int_equal(l.ntruncs, 2);
  assert_int_equal(l.npend, 0);

  /* a reload (after a failed commit) gives the same */
  assert_int_equal(store_reload(&st, &l, why, sizeof why), 0);
  assert_int_equal(l.scl, 1002);
  seg_free(&l);
  seg_free(&s);
  store_close(&st);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  assert_int_equal(system(cmd), 0);
}

/* A stored record that cannot be read back (a damaged disk, or bytes an
 * older version stored) is reported and left out at start: the node keeps
 * serving the rest, and the hole it leaves is what gossip fills. */
static void test_unreadable_record_is_left_out_at_load(void **state)
{
  (void)state;
  char why[256];
  snprintf(tmpdir, sizeof tmpdir, "/tmp/auralog-unit-bad-%d", (int)getpid());
  assert_int_equal(store_open(&st, tmpdir, 0, why, sizeof why), 0);
  struct segment s;
  seg_init(&s, 1, 1, FIRST, NPAGES, PSIZE);
  put(&s, 1, 0, 1);
  put(&s, 2, 1, 1);
  put(&s, 3, 2, 1);
  seg_rechain(&s, 0);                       /* the SCL hint stays 0 */
  assert_int_equal(store_put_meta(&st, &s, why, sizeof why), 0);
  /* Damage record 2 in place. */
  uint8_t k[20], junk[7] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  put_be64(k, 1);
  put_be32(k + 8, 1);
  put_be64(k + 12, 2);
  struct kv_val key = {sizeof k, k}, val = {sizeof junk, junk};
  assert_int_equal(kv_put(st.kv, st.txn, st.recs, &key, &val, 0), 0);
  assert_int_equal(store_commit(&st, why, sizeof why), 0);
  /* A clean shutdown (a checkpoint): the hot log's good copy of record 2
   * is not replayed over the damaged one (a restart after a crash would
   * replay it, and so repair it). */
  store_shutdown(&st);

  assert_int_equal(store_open(&st, tmpdir, 0, why, sizeof why), 0);
  struct segment l;
  loaded = &l;
  assert_int_equal(store_load(&st, keep, NULL, why, sizeof why), 0);
  assert_int_equal(l.scl, 1);               /* stops at the hole */
  assert_int_equal(l.npend, 1);             /* 3 waits above it */
  assert_int_equal(l.max_lsn, 3);
  /* A good copy (from a peer) replaces it and closes the hole. */
  struct trec t;
  mkrec(&t, 2, 1, FIRST + 2, 0, 8);
  t.r.epoch = 1;
  rec_seal(&t.r);
  int dup = -1;
  assert_int_equal(seg_admit(&l, &t.r, &dup, why, sizeof why), ERR_NONE);
  assert_int_equal(dup, 0);
  assert_int_equal(store_begin(&st, why, sizeof why), 0);
  assert_int_equal(store_put_rec(&st, &l, &t.r, why, sizeof why), 0);
  assert_int_equal(store_commit(&st, why, sizeof why), 0);
  assert_int_equal(seg_add(&l, 2, 1), 3);
  seg_free(&l);
  seg_free(&s);
  store_close(&st);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  assert_int_equal(system(cmd), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_scl_every_order_of_short_chain),
    cmocka_unit_test(test_scl_random_shuffles_of_long_chain),
    cmocka_unit_test(test_scl_in_order),
    cmocka_unit_test(test_duplicates),
    cmocka_unit_test(test_add_is_idempotent),
    cmocka_unit_test(test_conflicting_backlinks),
    cmocka_unit_test(test_conflict_same_backlink),
    cmocka_unit_test(test_out_of_range),
    cmocka_unit_test(test_epoch_fencing),
    cmocka_unit_test(test_trunc_rule),
    cmocka_unit_test(test_segment_refuses_only_what_a_truncation_cuts),
    cmocka_unit_test(test_copy_past_the_segments_page),
    cmocka_unit_test(test_store_truncates_by_epoch),
    cmocka_unit_test(test_unreadable_record_is_left_out_at_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
