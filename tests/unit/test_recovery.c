/*
 * test_recovery.c: the VDL a recovering writer proves from storage alone
 * (vfs/recovery.c, paper §4.3).
 *
 * A generator builds a writer's history the way the writer makes it: MTRs
 * of records with contiguous LSNs spread over several PGs, each record
 * linked to the previous record of its PG, each MTR's last record a CPL
 * that links to the previous CPL and lists the MTR's last LSN in every PG
 * it touched; a crash leaves an old epoch's records in a range a recovery
 * then truncates, and the next writer starts above the range, linked back
 * to the tails at the truncation point. Recovery gets the union of what a
 * read quorum of segments holds.
 *
 * Checks that with nothing above the hint the hint comes back; that with
 * every record present the VDL is the last CPL, and a trailing MTR without
 * its CPL is not counted; that a single missing record (tried for every
 * record of a history) stops the walk just before its MTR, however many
 * complete MTRs follow; that an MTR whose records are all present in one PG
 * but one is missing in another is not counted, including when the missing
 * record is the last its PG ever got (no later record reveals the hole);
 * that order and duplicates do not matter; that records in a truncated
 * range (an old epoch a segment still holds, an interrupted truncation,
 * several successive truncations, ranges reported by several segments) are
 * ignored while the next epoch, linked back across the range, is followed;
 * that a PG's chain continues from its tail at the hint, and records at or
 * below the hint change nothing; that the result equals a brute-force model
 * on thousands of random histories with random records lost (fixed seed);
 * and that 200k records take well under a second.
 *
 * Rule T and adoption: a newer epoch's records inside an older epoch's
 * truncated range (an interrupted recovery's, that a later one never saw)
 * are followed, while the older epoch's records there are not; the
 * records on the chains in (hint, vdl] are marked for adoption, one copy
 * each, an MTR held by one segment only included (recovery then writes it
 * to a write quorum), those above the VDL are not; and each PG's tail is
 * its last record at or below the VDL on the proved chain, not a record a
 * segment merely holds.
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

#include "rng.h"

#include "vfs/recovery.h"

/* ---- the history generator ----------------------------------------------- */

#define MAXPG 16
#define MAXTR 8

struct hrec {
  uint64_t lsn, prev, prev_cpl;
  uint32_t pg;
  int cpl;
  size_t mtr;                /* index into hist.m */
  int junk;                  /* in a range a recovery truncated */
  uint64_t epoch;            /* its writer's */
};

struct hmtr {
  uint64_t cpl, prev_cpl;
  uint32_t pg[MAXPG];        /* PGs touched ... */
  uint64_t last[MAXPG];      /* ... and the MTR's last LSN in each */
  size_t npg;
  size_t first, len;         /* its records: hist.r[first .. first + len) */
  int junk;
};

struct hist {
  size_t npgs;
  struct hrec *r;
  size_t n, cap;
  struct hmtr *m;
  size_t nm, mcap;
  uint64_t next_lsn, last_cpl, tail[MAXPG];
  /* between hist_crash and hist_truncate: the old epoch's records */
  int in_junk;
  uint64_t saved_cpl, saved_tail[MAXPG];
  uint64_t epoch;            /* the writer's: records carry it (rule T) */
  struct trunc tr[MAXTR];
  size_t ntr;
};

static void hist_init(struct hist *h, size_t npgs, size_t cap)
{
  assert_true(npgs >= 1 && npgs <= MAXPG);
  memset(h, 0, sizeof *h);
  h->npgs = npgs;
  h->cap = cap;
  h->mcap = cap;
  h->r = calloc(cap, sizeof *h->r);
  h->m = calloc(cap, sizeof *h->m);
  assert_non_null(h->r);
  assert_non_null(h->m);
  h->next_lsn = 1;
  h->epoch = 1;
}

static void hist_free(struct hist *h)
{
  free(h->r);
  free(h->m);
}

/* One MTR: record i in PG pgs[i], the last one the CPL. Returns its CPL. */
static uint64_t hist_mtr(struct hist *h, const uint32_t *pgs, size_t len)
{
  assert_true(len >= 1);
  assert_true(h->n + len <= h->cap && h->nm < h->mcap);
  struct hmtr *m = &h->m[h->nm];
  memset(m, 0, sizeof *m);
  m->first = h->n;
  m->len = len;
  m->junk = h->in_junk;
  m->prev_cpl = h->last_cpl;
  for (size_t i = 0; i < len; i++) {
    uint32_t pg = pgs[i];
    assert_true(pg < h->npgs);
    struct hrec *r = &h->r[h->n++];
    r->lsn = h->next_lsn++;
    r->pg = pg;
    r->prev = h->tail[pg];
    h->tail[pg] = r->lsn;
    r->mtr = h->nm;
    r->junk = h->in_junk;
    r->epoch = h->epoch;
    size_t j = 0;
    while (j < m->npg && m->pg[j] != pg)
      j++;
    if (j == m->npg)
      m->pg[m->npg++] = pg;
    m->last[j] = r->lsn;
    if (i == len - 1) {
      r->cpl = 1;
      r->prev_cpl = h->last_cpl;
      m->cpl = r->lsn;
      h->last_cpl = r->lsn;
    }
  }
  h->nm++;
  return m->cpl;
}

/* Shorthand: an MTR from a list of PGs terminated by -1. */
static uint64_t mtr(struct hist *h, ...)
{
  uint32_t pgs[64];
  size_t len = 0;
  va_list ap;
  va_start(ap, h);
  for (int pg = va_arg(ap, int); pg >= 0; pg = va_arg(ap, int))
    pgs[len++] = (uint32_t)pg;
  va_end(ap);
  return hist_mtr(h, pgs, len);
}

/* A crash: the VDL is the last CPL so far; what follows until
 * hist_truncate is an old epoch's, lost above that VDL. */
static void hist_crash(struct hist *h)
{
  assert_false(h->in_junk);
  h->in_junk = 1;
  h->saved_cpl = h->last_cpl;
  memcpy(h->saved_tail, h->tail, sizeof h->tail);
}

/* Recovery truncated (VDL at the crash, to]; the next writer starts at
 * to + 1, each PG linked to its tail at the VDL, the first MTR to it. */
static void hist_truncate(struct hist *h, uint64_t to)
{
  assert_true(h->in_junk);
  assert_true(to + 1 >= h->next_lsn);
  assert_true(h->ntr < MAXTR);
  /* The recovery is the next writer's, of a newer epoch. */
  h->tr[h->ntr++] = (struct trunc){++h->epoch, h->saved_cpl, to};
  h->in_junk = 0;
  h->last_cpl = h->saved_cpl;
  memcpy(h->tail, h->saved_tail, sizeof h->tail);
  h->next_lsn = to + 1;
}

/* The index of the record with this LSN. */
static size_t hist_find(const struct hist *h, uint64_t lsn)
{
  for (size_t i = 0; i < h->n; i++)
    if (h->r[i].lsn == lsn)
      return i;
  fail_msg("no record %llu", (unsigned long long)lsn);
  return 0;
}

/* start[k]: PG k's last (not truncated) record at or below hint. */
static void hist_start(const struct hist *h, uint64_t hint, uint64_t *start)
{
  for (size_t k = 0; k < h->npgs; k++)
    start[k] = 0;
  for (size_t i = 0; i < h->n; i++)
    if (!h->r[i].junk && h->r[i].lsn <= hint && h->r[i].lsn > start[h->r[i].pg])
      start[h->r[i].pg] = h->r[i].lsn;
}

static void to_rmeta(const struct hist *h, size_t i, struct rmeta *o)
{
  const struct hrec *r = &h->r[i];
  memset(o, 0, sizeof *o);
  o->lsn = r->lsn;
  o->prev = r->prev;
  o->epoch = r->epoch;
  o->pg = r->pg;
  o->cpl = r->cpl;
  if (r->cpl) {
    const struct hmtr *m = &h->m[r->mtr];
    o->prev_cpl = r->prev_cpl;
    o->mtr_pg = m->pg;
    o->mtr_last = m->last;
    o->nmtr = m->npg;
  }
}

/* Recovery over the records above hint with present[i] set (NULL: all),
 * each once, in LSN order, with the history's truncations. */
static uint64_t recover(const struct hist *h, uint64_t hint, const uint8_t *present)
{
  uint64_t start[MAXPG];
  hist_start(h, hint, start);
  struct rmeta *v = calloc(h->n + 1, sizeof *v);
  assert_non_null(v);
  size_t n = 0;
  for (size_t i = 0; i < h->n; i++)
    if (h->r[i].lsn > hint && (present == NULL || present[i]))
      to_rmeta(h, i, &v[n++]);
  uint64_t vdl = recover_vdl(hint, start, h->npgs, v, n, h->tr, h->ntr, NULL);
  free(v);
  return vdl;
}

/* Recovery over every record above hint except the one with this LSN. */
static uint64_t recover_without(const struct hist *h, uint64_t hint, uint64_t lsn)
{
  uint8_t *present = malloc(h->n + 1);
  assert_non_null(present);
  memset(present, 1, h->n + 1);
  present[hist_find(h, lsn)] = 0;
  uint64_t vdl = recover(h, hint, present);
  free(present);
  return vdl;
}

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

static uint64_t model_vdl(const struct hist *h, uint64_t hint, const uint8_t *present);

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
  struct hist h;
  hist_init(&h, 3, 100);
  uint64_t c1 = mtr(&h, 0, -1);                 /* 1 */
  uint64_t c2 = mtr(&h, 1, 2, 1, -1);           /* 2..4 */
  uint64_t c3 = mtr(&h, 2, 2, 0, 1, -1);        /* 5..8 */
  uint64_t c4 = mtr(&h, 1, -1);                 /* 9 */
  uint64_t c5 = mtr(&h, 0, 1, 2, 0, 1, 2, -1);  /* 10..15 */
  assert_int_equal(c1, 1);
  assert_int_equal(c5, 15);
  assert_int_equal(recover(&h, 0, NULL), 15);
  /* the history cut after each MTR: its CPL */
  uint64_t cpls[] = {0, c1, c2, c3, c4, c5};
  uint8_t present[100];
  for (size_t j = 0; j < 6; j++) {
    for (size_t i = 0; i < h.n; i++)
      present[i] = h.r[i].lsn <= cpls[j];
    assert_int_equal(recover(&h, 0, present), cpls[j]);
    /* and from every hint at or below it */
    for (size_t k = 0; k <= j; k++)
      assert_int_equal(recover(&h, cpls[k], present), cpls[j]);
  }
  /* a sixth MTR whose records reached storage but its CPL did not (the
   * writer crashed mid-MTR): not counted */
  uint64_t c6 = mtr(&h, 2, 0, 1, 0, -1);        /* 16..19 */
  assert_int_equal(c6, 19);
  for (uint64_t cut = c5; cut < c6; cut++) {
    for (size_t i = 0; i < h.n; i++)
      present[i] = h.r[i].lsn <= cut;
    assert_int_equal(recover(&h, 0, present), c5);
  }
  assert_int_equal(recover(&h, 0, NULL), c6);
  hist_free(&h);
}

static void test_hole_stops_walk(void **state)
{
  (void)state;
  struct hist h;
  hist_init(&h, 3, 100);
  /* 20 MTRs over 3 PGs */
  for (int j = 0; j < 20; j++) {
    if (j % 3 == 0)
      mtr(&h, 0, 1, -1);
    else if (j % 3 == 1)
      mtr(&h, 2, -1);
    else
      mtr(&h, 1, 2, 0, 1, -1);
  }
  assert_int_equal(recover(&h, 0, NULL), h.last_cpl);
  /* MTR 7 is a single record in PG 2. Drop it: everything from MTR 7 on
   * is out, though MTRs 8..19 are all there (MTR 9 is in PGs 0 and 1
   * only, and still does not count). */
  assert_int_equal(h.m[7].len, 1);
  assert_int_equal(recover_without(&h, 0, h.m[7].cpl), h.m[6].cpl);
  /* Dropping any one record: the VDL is the CPL before its MTR. */
  for (size_t i = 0; i < h.n; i++) {
    size_t j = h.r[i].mtr;
    uint64_t want = j ? h.m[j - 1].cpl : 0;
    assert_int_equal(recover_without(&h, 0, h.r[i].lsn), want);
  }
  /* From a hint past MTR 4, a hole in MTR 10 stops at MTR 9. */
  uint64_t hint = h.m[4].cpl;
  for (size_t i = h.m[10].first; i < h.m[10].first + h.m[10].len; i++)
    assert_int_equal(recover_without(&h, hint, h.r[i].lsn), h.m[9].cpl);
  hist_free(&h);
}

static void test_cross_pg_whole_or_nothing(void **state)
{
  (void)state;
  struct hist h;
  hist_init(&h, 3, 100);
  uint64_t c1 = mtr(&h, 1, -1);                 /* 1 (pg 1) */
  uint64_t c2 = mtr(&h, 0, 2, 0, -1);           /* 2 (pg 0), 3 (pg 2), 4 (pg 0) */
  assert_int_equal(c1, 1);
  assert_int_equal(c2, 4);
  /* everything there: 4 */
  assert_int_equal(recover(&h, 0, NULL), 4);
  /* PG 0 has all of MTR 2, PG 2 lacks its record 3, the last PG 2 ever
   * got (nothing later links to it): MTR 2 is out, the VDL is MTR 1's */
  assert_int_equal(recover_without(&h, 0, 3), c1);
  /* the same with PG 2's record as the CPL */
  struct hist g;
  hist_init(&g, 3, 100);
  mtr(&g, 1, -1);                               /* 1 */
  mtr(&g, 0, 0, 2, -1);                         /* 2, 3 (pg 0), 4 (pg 2, CPL) */
  assert_int_equal(recover(&g, 0, NULL), 4);
  assert_int_equal(recover_without(&g, 0, 4), 1);
  assert_int_equal(recover_without(&g, 0, 3), 1);
  assert_int_equal(recover_without(&g, 0, 2), 1);
  hist_free(&g);

  /* later complete MTRs do not bring it back: MTR 3 in PG 2 alone, MTR 4
   * in PG 0 alone (PG 0's chain is whole through it) */
  uint64_t c3 = mtr(&h, 2, -1);                 /* 5 */
  uint64_t c4 = mtr(&h, 0, -1);                 /* 6 */
  assert_int_equal(c4, 6);
  assert_int_equal(recover(&h, 0, NULL), c4);
  assert_int_equal(recover_without(&h, 0, 3), c1);
  assert_int_equal(recover_without(&h, 0, c3), c2);
  /* a PG 0 record of MTR 2 missing instead */
  assert_int_equal(recover_without(&h, 0, 2), c1);
  /* a PG the MTR did not touch may have a hole after it: no effect on it */
  uint64_t c5 = mtr(&h, 1, -1);                 /* 7 */
  mtr(&h, 1, 2, -1);                            /* 8, 9 */
  assert_int_equal(recover_without(&h, 0, 8), c5);
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
  uint64_t s = 2024;
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
    memset(present, 1, sizeof present);
    for (int k = rng_below(&s, 3); k > 0; k--)
      present[rng_below(&s, (uint32_t)h.n)] = 0;
    uint64_t want = model_vdl(&h, hint, present);
    assert_int_equal(recover(&h, hint, present), want);
    hist_start(&h, hint, start);
    size_t n = build_union(&h, hint, present, v, 4, 50, 0, &s);
    assert_int_equal(recover_vdl(hint, start, h.npgs, v, n, NULL, 0, NULL), want);
    /* reversed LSN order, each record three times in a row */
    n = 0;
    for (size_t i = h.n; i-- > 0;)
      if (h.r[i].lsn > hint && present[i])
        for (int c = 0; c < 3; c++)
          to_rmeta(&h, i, &v[n++]);
    assert_int_equal(recover_vdl(hint, start, h.npgs, v, n, NULL, 0, NULL), want);
  }
  /* the answer with no holes is the last CPL however it is given */
  memset(present, 1, sizeof present);
  hist_start(&h, 0, start);
  size_t n = build_union(&h, 0, present, v, 4, 0, 0, &s);
  assert_true(n > 2 * h.n);
  assert_int_equal(recover_vdl(0, start, h.npgs, v, n, NULL, 0, NULL), h.last_cpl);
  free(v);
  hist_free(&h);
}

static void test_truncated_ranges(void **state)
{
  (void)state;
  struct hist h;
  hist_init(&h, 3, 100);
  mtr(&h, 0, 1, -1);                            /* 1, 2 */
  mtr(&h, 2, 0, -1);                            /* 3, 4 */
  uint64_t from = mtr(&h, 1, -1);               /* 5: the VDL at the crash */
  assert_int_equal(from, 5);
  /* the old writer went on: three whole MTRs, every PG, 6..12 */
  hist_crash(&h);
  mtr(&h, 0, 1, -1);
  mtr(&h, 2, 2, -1);
  uint64_t old_end = mtr(&h, 0, 1, 2, -1);
  assert_int_equal(old_end, 12);
  hist_truncate(&h, 1005);

  /* a segment that was down during the truncation still holds all of the
   * old epoch: nothing new was written, the VDL stays at the truncation */
  assert_int_equal(recover(&h, 0, NULL), from);
  assert_int_equal(recover(&h, 2, NULL), from);
  assert_int_equal(recover(&h, from, NULL), from);

  /* the new epoch: 1006.., PG 0 first linking back to 4, PG 1 to 5, PG 2
   * to 3; the first MTR's prev_cpl is 5, like the old epoch's first */
  uint64_t n1 = mtr(&h, 1, 0, -1);              /* 1006, 1007 */
  uint64_t n2 = mtr(&h, 2, -1);                 /* 1008 */
  uint64_t n3 = mtr(&h, 0, 2, 1, -1);           /* 1009..1011 */
  assert_int_equal(n1, 1007);
  assert_int_equal(h.r[hist_find(&h, 1006)].prev, 5);
  assert_int_equal(h.r[hist_find(&h, 1007)].prev, 4);
  assert_int_equal(h.r[hist_find(&h, 1008)].prev, 3);
  assert_int_equal(h.r[hist_find(&h, 1007)].prev_cpl, 5);
  assert_int_equal(recover(&h, 0, NULL), n3);
  assert_int_equal(recover(&h, from, NULL), n3);
  /* holes in the new epoch still stop it */
  assert_int_equal(recover_without(&h, 0, 1008), n1);
  assert_int_equal(recover_without(&h, 0, 1006), from);
  assert_int_equal(recover_without(&h, from, 1010), n2);
  /* holes in the old epoch do not matter */
  assert_int_equal(recover_without(&h, 0, 6), n3);
  assert_int_equal(recover_without(&h, 0, 12), n3);
  /* a hole below the truncation still does */
  assert_int_equal(recover_without(&h, 0, 3), 2);

  /* the range reported by several segments (duplicates), and an empty
   * range: same */
  struct hist g = h;
  g.ntr = 0;
  g.tr[g.ntr++] = (struct trunc){g.epoch, from, 1005};
  g.tr[g.ntr++] = (struct trunc){g.epoch, 0, 0};
  g.tr[g.ntr++] = (struct trunc){g.epoch, from, 1005};
  g.tr[g.ntr++] = (struct trunc){g.epoch, from, 1005};
  assert_int_equal(recover(&g, 0, NULL), n3);
  assert_int_equal(recover_without(&g, 0, 1008), n1);
  hist_free(&h);

  /* An interrupted truncation: recovery chose VDL 3 and recorded (3, 1003]
   * on one segment, then crashed before the others truncated. The old
   * epoch above 3 is complete on them. A second recovery must not follow
   * it. Then it crashes again right after: the range is recorded twice,
   * the second time from the same VDL to further on, and a writer wrote
   * in between (records in (1003, 2003]) that nothing made durable. */
  hist_init(&h, 2, 100);
  mtr(&h, 0, 1, -1);                            /* 1, 2 */
  from = mtr(&h, 1, -1);                        /* 3 */
  hist_crash(&h);
  mtr(&h, 0, -1);                               /* 4 */
  mtr(&h, 1, 0, -1);                            /* 5, 6 */
  hist_truncate(&h, 1003);
  assert_int_equal(recover(&h, 0, NULL), from);
  hist_crash(&h);
  mtr(&h, 0, 1, -1);                            /* 1004, 1005: never durable */
  mtr(&h, 1, -1);                               /* 1006 */
  hist_truncate(&h, 2003);
  assert_int_equal(h.ntr, 2);
  assert_int_equal(h.tr[1].from, from);
  assert_int_equal(recover(&h, 0, NULL), from);
  assert_int_equal(recover(&h, 2, NULL), from);
  /* the third writer */
  uint64_t t1 = mtr(&h, 1, -1);                 /* 2004 */
  uint64_t t2 = mtr(&h, 0, 1, 0, -1);           /* 2005..2007 */
  assert_int_equal(t1, 2004);
  assert_int_equal(h.r[hist_find(&h, 2004)].prev, 3);
  assert_int_equal(h.r[hist_find(&h, 2005)].prev, 1);
  assert_int_equal(recover(&h, 0, NULL), t2);
  assert_int_equal(recover(&h, from, NULL), t2);
  assert_int_equal(recover_without(&h, 0, 2005), t1);
  assert_int_equal(recover_without(&h, 0, 2004), from);
  hist_free(&h);

  /* Successive truncations at rising VDLs, the second writer's history
   * durable in part: (2, 1002], then 1003.. durable to 1004, (1004, 2004] */
  hist_init(&h, 2, 100);
  mtr(&h, 1, 0, -1);                            /* 1, 2 */
  hist_crash(&h);
  mtr(&h, 0, 1, 0, -1);                         /* 3..5 */
  hist_truncate(&h, 1002);
  mtr(&h, 0, -1);                               /* 1003 */
  uint64_t d = mtr(&h, 1, -1);                  /* 1004 */
  hist_crash(&h);
  mtr(&h, 1, 0, -1);                            /* 1005, 1006 */
  hist_truncate(&h, 2004);
  assert_int_equal(h.tr[1].from, d);
  assert_int_equal(recover(&h, 0, NULL), d);
  uint64_t e = mtr(&h, 0, 1, -1);               /* 2005, 2006 */
  assert_int_equal(h.r[hist_find(&h, 2005)].prev, 1003);
  assert_int_equal(recover(&h, 0, NULL), e);
  assert_int_equal(recover(&h, 2, NULL), e);
  assert_int_equal(recover(&h, d, NULL), e);
  assert_int_equal(recover_without(&h, 2, 1003), 2);
  hist_free(&h);
}

static void test_start_from_tail_at_hint(void **state)
{
  (void)state;
  struct hist h;
  hist_init(&h, 4, 100);
  mtr(&h, 0, 1, -1);                            /* 1, 2 */
  mtr(&h, 2, 0, -1);                            /* 3, 4 */
  mtr(&h, 1, 1, -1);                            /* 5, 6 */
  uint64_t hint = mtr(&h, 0, -1);               /* 7 */
  /* PG 3 has nothing below the hint: start 0 */
  uint64_t a = mtr(&h, 3, 0, 1, 2, -1);         /* 8..11 */
  uint64_t b = mtr(&h, 2, 1, -1);               /* 12, 13 */
  uint64_t start[MAXPG];
  hist_start(&h, hint, start);
  assert_int_equal(start[0], 7);
  assert_int_equal(start[1], 6);
  assert_int_equal(start[2], 3);
  assert_int_equal(start[3], 0);
  assert_int_equal(recover(&h, hint, NULL), b);
  /* the records at or below the hint missing is fine */
  uint8_t present[100];
  for (size_t i = 0; i < h.n; i++)
    present[i] = h.r[i].lsn > hint;
  assert_int_equal(recover(&h, hint, present), b);
  /* and given as well (from a segment with a lower hint), with a hole
   * among them: ignored */
  struct rmeta v[100];
  size_t n = 0;
  for (size_t i = 0; i < h.n; i++)
    if (h.r[i].lsn != 4)
      to_rmeta(&h, i, &v[n++]);
  assert_int_equal(recover_vdl(hint, start, 4, v, n, NULL, 0, NULL), b);
  /* the chain really starts at start[k]: a PG's tail given as 0 while its
   * first record above the hint links to 7 does not reach it */
  n = 0;
  for (size_t i = 0; i < h.n; i++)
    if (h.r[i].lsn > hint)
      to_rmeta(&h, i, &v[n++]);
  uint64_t bad[MAXPG];
  memcpy(bad, start, sizeof bad);
  bad[0] = 0;
  assert_int_equal(recover_vdl(hint, bad, 4, v, n, NULL, 0, NULL), hint);
  /* PG 2's tail wrong: MTR a touches it, so nothing counts either */
  memcpy(bad, start, sizeof bad);
  bad[2] = 0;
  assert_int_equal(recover_vdl(hint, bad, 4, v, n, NULL, 0, NULL), hint);
  /* a hole in PG 3 (start 0) right at its first record */
  assert_int_equal(recover_without(&h, hint, 8), hint);
  assert_int_equal(recover_without(&h, hint, 12), a);
  hist_free(&h);
}

/* ---- model-based ----------------------------------------------------------- */

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
  uint64_t s = 0x5eed;
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
    uint64_t hint = 0;
    if (rng_below(&s, 3)) {
      size_t j = rng_below(&s, (uint32_t)h.nm);
      if (!h.m[j].junk)
        hint = h.m[j].cpl;
    }
    /* lose records: none, a few, or many */
    uint32_t loss = (uint32_t[]){0, 3, 20, 100}[rng_below(&s, 4)];
    for (size_t i = 0; i < h.n; i++)
      present[i] = rng_below(&s, 1000) >= loss;
    uint64_t want = model_vdl(&h, hint, present);
    hist_start(&h, hint, start);
    size_t n = build_union(&h, hint, present, v, 3, 30, 50, &s);
    uint64_t got = recover_vdl(hint, start, npgs, v, n, h.tr, h.ntr, NULL);
    if (got != want)
      fail_msg("trial %d: hint %llu, got %llu, want %llu", trial,
               (unsigned long long)hint, (unsigned long long)got, (unsigned long long)want);
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
  assert_true(whole > 300);
  assert_true(stopped > 300);
  assert_true(at_hint > 100);
  assert_true(with_tr > 1000);
  free(present);
  free(v);
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_large_input_fast(void **state)
{
  (void)state;
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
  assert_int_equal(h.n, cap);
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
  assert_int_equal(got, h.last_cpl);
  /* a hole at the start: the walk stops at once, still quickly */
  for (size_t i = 0; i < cap; i++)
    to_rmeta(&h, i, &v[i]);
  v[10] = v[cap - 1];
  shuffle(v, cap - 1, &s);
  double t2 = now();
  got = recover_vdl(0, start, 16, v, cap - 1, tr, 4, NULL);
  double t3 = now();
  assert_int_equal(got, h.r[10].mtr ? h.m[h.r[10].mtr - 1].cpl : 0);
  if (t1 - t0 >= 1.0 || t3 - t2 >= 1.0)
    fail_msg("200k records took %.3f s and %.3f s", t1 - t0, t3 - t2);
  free(v);
  hist_free(&h);
}

/* A record for the hand-made cases below: (lsn, prev, epoch) in pg. */
static struct rmeta rm(uint64_t lsn, uint64_t prev, uint64_t epoch, uint32_t pg)
{
  struct rmeta r;
  memset(&r, 0, sizeof r);
  r.lsn = lsn;
  r.prev = prev;
  r.epoch = epoch;
  r.pg = pg;
  return r;
}

/* Make r the CPL of a one-PG MTR that links back to prev_cpl. */
static void as_cpl(struct rmeta *r, uint64_t prev_cpl, const uint32_t *pg,
                   const uint64_t *last)
{
  r->cpl = 1;
  r->prev_cpl = prev_cpl;
  r->mtr_pg = pg;
  r->mtr_last = last;
  r->nmtr = 1;
}

static void test_newer_epoch_inside_an_older_range(void **state)
{
  (void)state;
  /* Epoch 1 wrote up to 20 (durable to 10). An interrupted epoch-2
   * recovery wrote (20, 1020] to one segment; epoch 3's recovery did not
   * see it, proved 10, truncated (10, 1010] and wrote 1011 (linked to 10)
   * and 1012. Epoch 4's recovery hears both ranges. */
  static const uint32_t pg0[1] = {0};
  static const uint64_t l15[1] = {15}, l1011[1] = {1011}, l1012[1] = {1012};
  struct rmeta v[4];
  v[0] = rm(15, 10, 1, 0);
  as_cpl(&v[0], 10, pg0, l15);             /* epoch 1's, above 10: cut */
  v[1] = rm(1011, 10, 3, 0);
  as_cpl(&v[1], 10, pg0, l1011);
  v[2] = rm(1012, 1011, 3, 0);
  as_cpl(&v[2], 1011, pg0, l1012);
  v[3] = v[2];                             /* a second copy */
  struct trunc tr[2] = {{2, 20, 1020}, {3, 10, 1010}};
  uint64_t start[1] = {10}, tails[1];
  assert_int_equal(recover_vdl(10, start, 1, v, 4, tr, 2, tails), 1012);
  assert_int_equal(tails[0], 1012);
  size_t adopted = 0;
  for (int i = 0; i < 4; i++)
    adopted += v[i].adopt;
  assert_int_equal(adopted, 2);            /* 1011 and one copy of 1012 */
  /* Under the old rule (every range cuts everything in it) the walk
   * stopped at 10 and epoch 3's acknowledged 1011 and 1012 were lost. */
  struct trunc all[2] = {{9, 20, 1020}, {9, 10, 1010}};
  assert_int_equal(recover_vdl(10, start, 1, v, 4, all, 2, NULL), 10);
}

static void test_adoption_marks_the_proved_chain(void **state)
{
  (void)state;
  /* Two PGs. Hint 4 (PG 0's tail 3, PG 1's 4). Above it: an MTR of 5
   * (pg 0) and 6 (pg 1, CPL), held by a single segment; then 7 (pg 0,
   * CPL); then an MTR 8 (pg 1), 9 (pg 0, CPL) whose record 8 is missing;
   * and a stray 12 (pg 1) linked to 8. */
  static const uint32_t pgs01[2] = {0, 1}, pg0[1] = {0}, pgs10[2] = {1, 0};
  static const uint64_t l56[2] = {5, 6}, l7[1] = {7}, l89[2] = {8, 9};
  struct rmeta v[5];
  v[0] = rm(5, 3, 1, 0);
  v[1] = rm(6, 4, 1, 1);
  v[1].cpl = 1;
  v[1].prev_cpl = 4;
  v[1].mtr_pg = pgs01;
  v[1].mtr_last = l56;
  v[1].nmtr = 2;
  v[2] = rm(7, 5, 1, 0);
  as_cpl(&v[2], 6, pg0, l7);
  v[3] = rm(9, 7, 1, 0);
  v[3].cpl = 1;
  v[3].prev_cpl = 7;
  v[3].mtr_pg = pgs10;
  v[3].mtr_last = l89;
  v[3].nmtr = 2;
  v[4] = rm(12, 8, 1, 1);
  uint64_t start[2] = {3, 4}, tails[2];
  assert_int_equal(recover_vdl(4, start, 2, v, 5, NULL, 0, tails), 7);
  /* sorted by LSN now: 5 6 7 9 12 */
  assert_int_equal(v[0].lsn, 5);
  assert_true(v[0].adopt && v[1].adopt && v[2].adopt);
  assert_false(v[3].adopt);                /* 9: on the chain, above the VDL */
  assert_false(v[4].adopt);                /* 12: past the hole at 8 */
  assert_int_equal(tails[0], 7);
  assert_int_equal(tails[1], 6);
  /* Nothing above the hint: the tails are the starts. */
  assert_int_equal(recover_vdl(4, start, 2, v, 0, NULL, 0, tails), 4);
  assert_int_equal(tails[0], 3);
  assert_int_equal(tails[1], 4);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_nothing_above_hint),
    cmocka_unit_test(test_all_present),
    cmocka_unit_test(test_hole_stops_walk),
    cmocka_unit_test(test_cross_pg_whole_or_nothing),
    cmocka_unit_test(test_order_and_duplicates),
    cmocka_unit_test(test_truncated_ranges),
    cmocka_unit_test(test_start_from_tail_at_hint),
    cmocka_unit_test(test_random_against_model),
    cmocka_unit_test(test_large_input_fast),
    cmocka_unit_test(test_newer_epoch_inside_an_older_range),
    cmocka_unit_test(test_adoption_marks_the_proved_chain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
