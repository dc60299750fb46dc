/*
 * test_cache.c: the page map behind the buffer cache and the write
 * overlay (vfs/cache.c, paper §4.2.3).
 *
 * Checks that random puts, gets and deletes (fixed seed) over page numbers
 * chosen to collide in the hash index, including collision runs that wrap
 * past the index's end, agree with a plain array model: which pages exist,
 * their bytes, LSN and before-image, a new page zeroed with LSN 0, and that
 * the index stays a power of two above twice the count; that deleting,
 * which shifts index slots back and moves the last entry into the hole,
 * loses nothing; that pm_sorted returns every entry once, by page number;
 * that pm_clear empties the map and it can be filled again; that page
 * bytes survive the index and entry array growing to thousands of pages.
 *
 * Eviction (§4.2.3): a page whose LSN is above the VDL is never evicted,
 * even far over the limit; with enough pages at or below the VDL eviction
 * goes down to exactly the limit (in one call, from far above it, as after
 * a burst of commits that became durable together); and the clock prefers
 * pages not used since the hand last passed: a page touched after the hand
 * passed survives a sweep over an untouched one, and, on random sequences
 * against the used bits, no page used since the hand passed is evicted
 * while enough unused evictable pages remain to reach the limit.
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

#include "vfs/cache.h"

#define PS 40u                 /* page size: small, not a multiple of 8 */

/* The bytes page p holds at version v. */
static void fill(uint8_t *d, uint32_t p, uint32_t v)
{
  for (uint32_t i = 0; i < PS; i++)
    d[i] = (uint8_t)(p * 131u + v * 7u + i);
}

static int is_fill(const uint8_t *d, uint32_t p, uint32_t v)
{
  uint8_t want[PS];
  fill(want, p, v);
  return memcmp(d, want, PS) == 0;
}

static int is_zero(const uint8_t *d)
{
  for (uint32_t i = 0; i < PS; i++)
    if (d[i])
      return 0;
  return 1;
}

/* The index's documented shape: a power of two, more than twice n. */
static void check_shape(const struct pagemap *m)
{
  assert_true(m->nidx >= 2);
  assert_int_equal(m->nidx & (m->nidx - 1), 0);
  assert_true(m->nidx > 2 * m->n);
}

/* ---- the universe of page numbers ------------------------------------------ */

/* Page numbers for the random tests: small consecutive ones; multiples of
 * 65536, which share a home slot in any index of up to 65536 slots (the
 * index hashes page_no * 2654435761 and keeps the low bits); and numbers
 * whose home slot is the last one, so their run wraps to slot 0; and some
 * near UINT32_MAX. The checks do not depend on this choice: with another
 * hash these are just more page numbers. */
#define NU 1200
static uint32_t universe[NU];

static void make_universe(void)
{
  /* the inverse of the multiplier mod 2^32 (Newton's iteration) */
  uint32_t a = 2654435761u, inv = a;
  for (int i = 0; i < 5; i++)
    inv *= 2u - a * inv;
  assert_int_equal(a * inv, 1);
  uint32_t last = 0u - inv;    /* last * a == -1: the last slot, any size */
  size_t k = 0;
  for (uint32_t p = 0; p < 600; p++)
    universe[k++] = p;
  for (uint32_t j = 1; j <= 250; j++)
    universe[k++] = j * 65536u;
  for (uint32_t j = 0; j < 250; j++)
    universe[k++] = last + j * 65536u;
  for (uint32_t j = 0; j < 100; j++)
    universe[k++] = UINT32_MAX - j;
  assert_int_equal(k, NU);
  /* no duplicates */
  for (size_t i = 0; i < NU; i++)
    for (size_t j = i + 1; j < NU; j++)
      assert_true(universe[i] != universe[j]);
}

/* ---- random operations against a model -------------------------------------- */

struct mpage {
  int here;
  uint32_t ver;              /* bytes are fill(p, ver) */
  uint64_t lsn;
  int has_before;            /* before-image: fill(p, ver + 1000) */
};

static void check_all(struct pagemap *m, const struct mpage *mod)
{
  size_t count = 0;
  for (size_t u = 0; u < NU; u++) {
    struct cpage *c = pm_get(m, universe[u]);
    if (!mod[u].here) {
      assert_null(c);
      continue;
    }
    count++;
    assert_non_null(c);
    assert_int_equal(c->page_no, universe[u]);
    assert_int_equal(c->lsn, mod[u].lsn);
    assert_true(is_fill(c->data, universe[u], mod[u].ver));
    if (mod[u].has_before) {
      assert_non_null(c->before);
      assert_true(is_fill(c->before, universe[u], mod[u].ver + 1000));
    } else {
      assert_null(c->before);
    }
  }
  assert_int_equal(m->n, count);
  check_shape(m);
  /* pm_sorted: every entry once, strictly by page number, the same ones */
  struct cpage **v = pm_sorted(m);
  assert_non_null(v);
  for (size_t i = 0; i < m->n; i++) {
    if (i > 0)
      assert_true(v[i - 1]->page_no < v[i]->page_no);
    assert_ptr_equal(pm_get(m, v[i]->page_no), v[i]);
  }
  free(v);
}

static void run_random(uint64_t seed, size_t steps, size_t span)
{
  uint64_t s = seed;
  struct pagemap m;
  pm_init(&m, PS);
  struct mpage *mod = calloc(NU, sizeof *mod);
  assert_non_null(mod);
  size_t dels = 0, hits = 0;
  for (size_t t = 0; t < steps; t++) {
    /* work on a random slice of the universe, so the map fills and drains */
    size_t u = (t / 5000 * 397 + rng_below(&s, (uint32_t)span)) % NU;
    uint32_t p = universe[u];
    uint32_t op = rng_below(&s, 100);
    if (op < 45) {
      struct cpage *c = pm_put(&m, p);
      assert_non_null(c);
      assert_int_equal(c->page_no, p);
      if (!mod[u].here) {
        assert_true(is_zero(c->data));
        assert_int_equal(c->lsn, 0);
        assert_null(c->before);
        mod[u].here = 1;
        mod[u].has_before = 0;
      } else {
        assert_true(is_fill(c->data, p, mod[u].ver));
        assert_int_equal(c->lsn, mod[u].lsn);
      }
      mod[u].ver++;
      mod[u].lsn = rng_next(&s) >> 1;
      fill(c->data, p, mod[u].ver);
      c->lsn = mod[u].lsn;
      if (rng_below(&s, 4) == 0) {
        if (c->before == NULL)
          c->before = malloc(PS);
        assert_non_null(c->before);
        fill(c->before, p, mod[u].ver + 1000);
        mod[u].has_before = 1;
      } else if (mod[u].has_before) {
        fill(c->before, p, mod[u].ver + 1000);
      }
    } else if (op < 80) {
      struct cpage *c = pm_get(&m, p);
      if (!mod[u].here) {
        assert_null(c);
      } else {
        hits++;
        assert_non_null(c);
        assert_int_equal(c->page_no, p);
        assert_int_equal(c->lsn, mod[u].lsn);
        assert_true(is_fill(c->data, p, mod[u].ver));
        assert_int_equal(c->used, 1);
      }
    } else {
      dels += mod[u].here;
      pm_del(&m, p);
      mod[u].here = 0;
      assert_null(pm_get(&m, p));
    }
    if (t % 997 == 0)
      check_all(&m, mod);
  }
  check_all(&m, mod);
  assert_true(dels > steps / 20);
  assert_true(hits > steps / 10);
  /* delete everything in a random order, checking as the map empties */
  for (size_t k = 0; k < 3 * NU; k++) {
    size_t u = rng_below(&s, NU);
    pm_del(&m, universe[u]);
    mod[u].here = 0;
    if (k % 101 == 0)
      check_all(&m, mod);
  }
  for (size_t u = 0; u < NU; u++) {
    pm_del(&m, universe[u]);
    mod[u].here = 0;
  }
  check_all(&m, mod);
  assert_int_equal(m.n, 0);
  pm_free(&m);
  free(mod);
}

static void test_random_against_model(void **state)
{
  (void)state;
  make_universe();
  for (uint64_t seed = 1; seed <= 6; seed++)
    run_random(seed, 40000, seed % 2 ? 150 : NU);
}

/* Deleting from the middle of one long collision run, and from a run that
 * wraps past the end of the index, keeps every other page reachable. */
static void test_delete_in_collision_runs(void **state)
{
  (void)state;
  make_universe();
  uint64_t s = 77;
  /* the multiples of 65536 (one run) and the wrapping ones, interleaved */
  uint32_t pages[400];
  size_t np = 0;
  for (size_t j = 0; j < 200; j++) {
    pages[np++] = universe[600 + j];
    pages[np++] = universe[850 + j];
  }
  for (int round = 0; round < 20; round++) {
    struct pagemap m;
    pm_init(&m, PS);
    uint8_t here[400] = {0};
    for (size_t i = 0; i < np; i++) {
      struct cpage *c = pm_put(&m, pages[i]);
      fill(c->data, pages[i], 1);
      c->lsn = i;
      here[i] = 1;
    }
    /* delete in a random order, checking every survivor after each */
    for (size_t k = 0; k < np; k++) {
      size_t i = rng_below(&s, (uint32_t)np);
      pm_del(&m, pages[i]);
      here[i] = 0;
      if (round % 5 == 0 || k % 37 == 0)
        for (size_t j = 0; j < np; j++) {
          struct cpage *c = pm_get(&m, pages[j]);
          if (!here[j]) {
            assert_null(c);
            continue;
          }
          assert_non_null(c);
          assert_int_equal(c->page_no, pages[j]);
          assert_int_equal(c->lsn, j);
          assert_true(is_fill(c->data, pages[j], 1));
        }
    }
    pm_free(&m);
  }
}

static void test_sorted_and_clear(void **state)
{
  (void)state;
  uint64_t s = 5;
  struct pagemap m;
  pm_init(&m, PS);
  /* an empty map: an empty list */
  struct cpage **v = pm_sorted(&m);
  assert_non_null(v);
  free(v);
  /* 3000 random distinct page numbers put in random order */
  uint32_t *want = calloc(3000, sizeof *want);
  assert_non_null(want);
  size_t n = 0;
  while (n < 3000) {
    uint32_t p = (uint32_t)rng_next(&s) >> rng_below(&s, 24);
    if (pm_get(&m, p))
      continue;
    struct cpage *c = pm_put(&m, p);
    fill(c->data, p, 3);
    c->lsn = p;
    want[n++] = p;
  }
  assert_int_equal(m.n, 3000);
  v = pm_sorted(&m);
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) {
    if (i > 0)
      assert_true(v[i - 1]->page_no < v[i]->page_no);
    assert_true(is_fill(v[i]->data, v[i]->page_no, 3));
    assert_int_equal(v[i]->lsn, v[i]->page_no);
  }
  /* complete: each page put is found in the list */
  for (size_t i = 0; i < n; i++) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (v[mid]->page_no < want[i])
        lo = mid + 1;
      else
        hi = mid;
    }
    assert_true(lo < n && v[lo]->page_no == want[i]);
  }
  free(v);

  /* clear: nothing left, and the map works again from empty */
  for (size_t i = 0; i < n; i += 3)
    pm_get(&m, want[i])->before = calloc(1, PS);
  pm_clear(&m);
  assert_int_equal(m.n, 0);
  for (size_t i = 0; i < n; i++)
    assert_null(pm_get(&m, want[i]));
  v = pm_sorted(&m);
  free(v);
  assert_int_equal(pm_evict(&m, 0, UINT64_MAX), 0);
  for (size_t i = 0; i < 100; i++) {
    struct cpage *c = pm_put(&m, want[i]);
    assert_true(is_zero(c->data));
    assert_int_equal(c->lsn, 0);
    assert_null(c->before);
    fill(c->data, want[i], 4);
  }
  assert_int_equal(m.n, 100);
  for (size_t i = 0; i < 100; i++)
    assert_true(is_fill(pm_get(&m, want[i])->data, want[i], 4));
  for (size_t i = 100; i < n; i++)
    assert_null(pm_get(&m, want[i]));
  v = pm_sorted(&m);
  for (size_t i = 1; i < 100; i++)
    assert_true(v[i - 1]->page_no < v[i]->page_no);
  free(v);
  pm_free(&m);
  free(want);
}

static void test_data_survives_growth(void **state)
{
  (void)state;
  struct pagemap m;
  pm_init(&m, PS);
  size_t nidx0 = m.nidx, grew = 0;
  for (uint32_t p = 0; p < 20000; p++) {
    size_t before = m.nidx;
    struct cpage *c = pm_put(&m, p * 3u);
    grew += m.nidx != before;
    fill(c->data, p * 3u, p);
    c->lsn = p;
    /* now and then, all of them so far */
    if ((p & (p + 1)) == 0 || p == 19999)
      for (uint32_t q = 0; q <= p; q++) {
        struct cpage *d = pm_get(&m, q * 3u);
        assert_non_null(d);
        assert_int_equal(d->lsn, q);
        assert_true(is_fill(d->data, q * 3u, q));
        assert_null(pm_get(&m, q * 3u + 1));
      }
  }
  assert_true(grew >= 8);
  assert_true(m.nidx > nidx0);
  check_shape(&m);
  /* re-putting an existing page returns it as it is */
  struct cpage *c = pm_put(&m, 300);
  assert_int_equal(c->lsn, 100);
  assert_true(is_fill(c->data, 300, 100));
  assert_int_equal(m.n, 20000);
  pm_free(&m);
}

/* ---- eviction --------------------------------------------------------------- */

/* n pages 0..n-1 with lsn[i], all just put (used). */
static void put_pages(struct pagemap *m, size_t n, const uint64_t *lsn)
{
  for (uint32_t p = 0; p < n; p++) {
    struct cpage *c = pm_put(m, p);
    fill(c->data, p, 9);
    c->lsn = lsn[p];
  }
}

static void test_evict_never_above_vdl(void **state)
{
  (void)state;
  lab_rule("§4.2.3: a page whose LSN is above the VDL is never evicted: storage could not yet "
           "give that version back");
  uint64_t lsn[200];
  struct pagemap m;
  /* every page above the VDL: nothing goes, however far over the limit */
  lab_at("every page above the VDL: nothing goes, however far over the limit");
  pm_init(&m, PS);
  for (size_t i = 0; i < 200; i++)
    lsn[i] = 1000 + i;
  put_pages(&m, 200, lsn);
  for (int k = 0; k < 5; k++) {
    expect_eq(pm_evict(&m, 0, 999), 0, "pm_evict(limit 0, vdl 999) returned (pages evicted)");
    expect_eq(pm_evict(&m, 10, 500), 0, "pm_evict(limit 10, vdl 500) returned (pages evicted)");
  }
  expect_eq(m.n, 200, "pages left in the cache (m.n)");
  for (uint32_t p = 0; p < 200; p++)
    expect_true(is_fill(pm_get(&m, p)->data, p, 9), "page %u to keep its bytes", p);
  /* the VDL reaches 1000 + 49: exactly those 50 can go */
  lab_at("the VDL reaches 1000 + 49: exactly those 50 can go");
  size_t total = 0;
  for (int k = 0; k < 5; k++)
    total += pm_evict(&m, 0, 1049);
  expect_eq(total, 50, "pages evicted in all");
  expect_eq(m.n, 150, "pages left in the cache (m.n)");
  for (uint32_t p = 0; p < 200; p++) {
    struct cpage *c = pm_get(&m, p);
    if (p < 50) {
      expect_true(c == NULL, "page %u (LSN %llu, at or below the VDL) to be evicted", p,
                  (unsigned long long)lsn[p]);
    } else {
      expect_true(c != NULL, "page %u (LSN %llu, above the VDL) to stay", p,
                  (unsigned long long)lsn[p]);
      expect_true(is_fill(c->data, p, 9), "page %u to keep its bytes", p);
    }
  }
  pm_free(&m);

  /* random LSNs and VDLs: whatever is evicted had lsn <= vdl, the count
   * returned is what went, and the limit is respected when possible */
  lab_at("random LSNs and VDLs: whatever is evicted had lsn <= vdl, the count returned is what "
         "went, and the limit is respected when possible");
  uint64_t s = lab_seed(31);   /* AURALOG_TEST_SEED: other cases (lab_expect.h) */
  for (int trial = 0; trial < 200; trial++) {
    pm_init(&m, PS);
    size_t n = 1 + rng_below(&s, 200);
    for (size_t i = 0; i < n; i++)
      lsn[i] = rng_below(&s, 100);
    put_pages(&m, n, lsn);
    /* touch some */
      for (size_t k = rng_below(&s, (uint32_t)n); k > 0; k--)
      pm_get(&m, rng_below(&s, (uint32_t)n));
    uint64_t vdl = rng_below(&s, 110);
    size_t limit = rng_below(&s, (uint32_t)n + 5);
    size_t eligible = 0;
    for (size_t i = 0; i < n; i++)
      eligible += lsn[i] <= vdl;
    lab_at("random trial %d: %zu pages, LSNs 0..99, %zu at or below the VDL %llu, limit %zu",
           trial, n, eligible, (unsigned long long)vdl, limit);
    size_t got = pm_evict(&m, limit, vdl);
    expect_eq(m.n, n - got, "pages left in the cache (m.n)");
    for (uint32_t p = 0; p < n; p++) {
      struct cpage *c = pm_get(&m, p);
      if (lsn[p] > vdl)
        expect_true(c != NULL, "page %u (LSN %llu, above the VDL %llu) to stay", p,
                    (unsigned long long)lsn[p], (unsigned long long)vdl);
      if (c)
        expect_true(is_fill(c->data, p, 9), "page %u to keep its bytes", p);
    }
    if (n <= limit)
      expect_eq(got, 0, "pm_evict returned (pages evicted)");
    else
      expect_true(m.n >= limit, "no more pages evicted than needed to reach the limit");
    pm_free(&m);
  }
}

/* The cache grew far past the limit while commits were not yet durable;
 * then they all became durable: one call brings it back to the limit. */
static void test_evict_down_to_limit(void **state)
{
  (void)state;
  lab_rule("§4.2.3: eviction goes down to the limit, as far as the pages at or below the VDL "
           "allow");
  uint64_t lsn[1000];
  struct pagemap m;
  for (size_t i = 0; i < 1000; i++)
    lsn[i] = 1 + i;

  /* the way the engine uses it: evict, then put one; n never passes the
   * limit by more than the one just put */
  lab_at("the way the engine uses it: evict, then put one; n never passes the limit by more than "
         "the one just put");
  pm_init(&m, PS);
  for (uint32_t p = 0; p < 1000; p++) {
    pm_evict(&m, 100, UINT64_MAX);
    expect_true(m.n <= 100, "at most 100 pages in the cache (limit 100) before putting page %u",
                p);
    struct cpage *c = pm_put(&m, p);
    c->lsn = p;
  }
  expect_eq(m.n, 101, "pages left in the cache (m.n)");
  pm_free(&m);

  /* 1000 pages, all durable, limit 100 */
  lab_at("1000 pages, all durable, limit 100");
  pm_init(&m, PS);
  put_pages(&m, 1000, lsn);
  size_t gone = pm_evict(&m, 100, 1000), kept = m.n;
  pm_free(&m);                         /* before failing: no leak report */
  expect_eq(gone, 900, "pages evicted");
  expect_eq(kept, 100, "pages left");

  /* the same with the used bits already clear */
  lab_at("the same with the used bits already clear");
  pm_init(&m, PS);
  put_pages(&m, 1000, lsn);
  expect_eq(pm_evict(&m, 999, 1000), 1, "pm_evict(limit 999, vdl 1000) returned (pages evicted)");
  expect_eq(pm_evict(&m, 100, 1000), 899, "pm_evict(limit 100, vdl 1000) returned (pages evicted)");
  expect_eq(m.n, 100, "pages left in the cache (m.n)");
  pm_free(&m);

  /* 300 not yet durable: they stay, everything else goes */
  lab_at("300 not yet durable: they stay, everything else goes");
  pm_init(&m, PS);
  put_pages(&m, 1000, lsn);
  expect_eq(pm_evict(&m, 100, 700), 700, "pm_evict(limit 100, vdl 700) returned (pages evicted)");
  expect_eq(m.n, 300, "pages left in the cache (m.n)");
  for (uint32_t p = 0; p < 1000; p++)
    expect_true((pm_get(&m, p) != NULL) == (p >= 700), "page %u (LSN %u) %s", p, p + 1,
                p >= 700 ? "to stay (above the VDL 700)" : "to be evicted");
  pm_free(&m);

  /* random LSNs, VDLs, limits and touches: down to the limit, or as far
   * as the durable pages allow */
  lab_at("random LSNs, VDLs, limits and touches: down to the limit, or as far as the durable "
         "pages allow");
  uint64_t s = lab_seed(8), rl[1000];   /* AURALOG_TEST_SEED: other cases */
  for (int trial = 0; trial < 300; trial++) {
    pm_init(&m, PS);
    size_t n = 1 + rng_below(&s, 1000);
    for (size_t i = 0; i < n; i++)
      rl[i] = rng_below(&s, 100);
    put_pages(&m, n, rl);
    if (rng_below(&s, 2))
      pm_evict(&m, n - 1, 100);          /* a sweep: the bits are clear */
    n = m.n;
    for (size_t k = rng_below(&s, (uint32_t)n); k > 0; k--)
      pm_get(&m, rng_below(&s, (uint32_t)n));
    uint64_t vdl = rng_below(&s, 110);
    size_t limit = rng_below(&s, (uint32_t)n + 5);
    size_t eligible = 0;
    for (size_t k = 0; k < m.n; k++)
      eligible += m.e[k].lsn <= vdl;
    size_t floor = n - eligible;
    size_t want = n <= limit ? n : (floor > limit ? floor : limit);
    size_t got = pm_evict(&m, limit, vdl);
    size_t left = m.n;
    pm_free(&m);
    lab_at("random trial %d: %zu pages, %zu at or below the VDL, limit %zu (%zu evicted)", trial,
           n, eligible, limit, got);
    expect_eq(left, want, "pages left");
    expect_eq(got, n - want, "pm_evict returned (pages evicted)");
  }

  /* limit 500 with 700 durable: exactly 500 left */
  lab_at("limit 500 with 700 durable: exactly 500 left");
  pm_init(&m, PS);
  put_pages(&m, 1000, lsn);
  expect_eq(pm_evict(&m, 500, 700), 500, "pm_evict(limit 500, vdl 700) returned (pages evicted)");
  expect_eq(m.n, 500, "pages left in the cache (m.n)");
  for (uint32_t p = 700; p < 1000; p++)
    expect_true(pm_get(&m, p) != NULL, "page %u (LSN %u, above the VDL 700) to stay", p, p + 1);
  pm_free(&m);
}

/* Whether page p is in the map, without touching it (pm_get would set
 * its used bit). */
static int holds(const struct pagemap *m, uint32_t p)
{
  for (size_t k = 0; k < m->n; k++)
    if (m->e[k].page_no == p)
      return 1;
  return 0;
}

static void test_evict_clock_prefers_unused(void **state)
{
  (void)state;
  lab_rule("§4.2.3: eviction is a clock: a page used since the hand last passed gets a second "
           "chance");
  /* Three pages, all used (just put). One eviction sweeps them all,
   * clearing the bits, and evicts one. Touch one of the two left: the next
   * eviction takes the other, whichever of them is under the hand. */
  lab_at("Three pages, all used (just put). One eviction sweeps them all, clearing the bits, and "
         "evicts one. Touch one of the two left: the next eviction takes the other, whichever of "
         "them is under the hand");
  for (int pick = 0; pick < 2; pick++) {
    struct pagemap m;
    pm_init(&m, PS);
    uint64_t lsn[3] = {1, 2, 3};
    put_pages(&m, 3, lsn);
    expect_eq(pm_evict(&m, 2, 10), 1, "pm_evict(limit 2, vdl 10) returned (pages evicted)");
    expect_eq(m.n, 2, "pages left in the cache (m.n)");
    for (size_t k = 0; k < m.n; k++)
      expect_eq(m.e[k].used, 0, "a page's used bit after the sweep");
    uint32_t left[2];
    size_t nl = 0;
    for (uint32_t p = 0; p < 3; p++)
      if (holds(&m, p))
        left[nl++] = p;
    expect_eq(nl, 2, "pages left");
    uint32_t touched = left[pick], other = left[1 - pick];
    expect_true(pm_get(&m, touched) != NULL, "page %u to be in the cache", touched);
    expect_eq(pm_evict(&m, 1, 10), 1, "pm_evict(limit 1, vdl 10) returned (pages evicted)");
    expect_eq(m.n, 1, "pages left in the cache (m.n)");
    expect_true(holds(&m, touched), "page %u, touched after the sweep, to stay", touched);
    expect_true(!holds(&m, other), "page %u, not touched since the sweep, to be evicted", other);
    expect_true(is_fill(pm_get(&m, touched)->data, touched, 9), "page %u to keep its bytes",
                touched);
    pm_free(&m);
  }

  /* The same with 64 pages: after a sweep, touch every even page; evicting
   * as many as are untouched takes exactly the untouched ones. */
  lab_at("The same with 64 pages: after a sweep, touch every even page; evicting as many as are "
         "untouched takes exactly the untouched ones");
  struct pagemap m;
  pm_init(&m, PS);
  uint64_t lsn[65];
  for (size_t i = 0; i < 65; i++)
    lsn[i] = i;
  put_pages(&m, 65, lsn);
  expect_eq(pm_evict(&m, 64, 100), 1, "pm_evict(limit 64, vdl 100) returned (pages evicted)");
  uint8_t touched[65] = {0};
  for (uint32_t p = 0; p < 65; p += 2)
    if (holds(&m, p)) {
      pm_get(&m, p);
      touched[p] = 1;
    }
  size_t nt = 0;
  for (uint32_t p = 0; p < 65; p++)
    nt += touched[p];
  expect_eq(m.n, 64, "pages left in the cache (m.n)");
  expect_true(nt >= 31 && nt <= 33, "31 to 33 pages touched");
  expect_eq(pm_evict(&m, nt, 100), 64 - nt, "pm_evict(limit %zu, vdl 100) returned (pages "
            "evicted)", nt);
  for (uint32_t p = 0; p < 65; p++)
    expect_eq(holds(&m, p), touched[p], "page %u held (1) or evicted (0) (touched: %d)", p,
              touched[p]);
  pm_free(&m);
}

/* A sweep that wraps: the hand stopped mid-array, the pages after it were
 * touched since, the pages before it were not. Evicting as many pages as
 * there are untouched ones must take only untouched ones: the hand clears
 * the touched pages' bits, wraps, and finds the untouched ones first. (With
 * move-the-last-entry-into-the-hole, the last entry is a touched page whose
 * bit the hand just cleared; it must not be evicted ahead of them.) */
static void test_evict_clock_wrapped_sweep(void **state)
{
  (void)state;
  lab_rule("§4.2.3: eviction is a clock: a page used since the hand last passed gets a second "
           "chance, also when the sweep wraps");
  struct pagemap m;
  pm_init(&m, PS);
  uint64_t lsn[65];
  for (size_t i = 0; i < 65; i++)
    lsn[i] = 1;
  put_pages(&m, 65, lsn);
  /* a sweep clears every bit and evicts one */
  lab_at("a sweep clears every bit and evicts one");
  expect_eq(pm_evict(&m, 64, 1), 1, "pm_evict(limit 64, vdl 1) returned (pages evicted)");
  /* touch the 32 pages first in the array, evict one more: the hand
   * passes them (clearing them) and stops after them */
  lab_at("touch the 32 pages first in the array, evict one more: the hand passes them (clearing "
         "them) and stops after them");
  for (size_t k = 0; k < m.n; k++)
    expect_eq(m.e[k].used, 0, "a page's used bit after the sweep");
  uint32_t first[32];
  for (size_t k = 0; k < 32; k++)
    first[k] = m.e[k].page_no;
  for (size_t k = 0; k < 32; k++)
    expect_true(pm_get(&m, first[k]) != NULL, "page %u to be in the cache", first[k]);
  expect_eq(pm_evict(&m, 63, 1), 1, "pm_evict(limit 63, vdl 1) returned (pages evicted)");
  for (size_t k = 0; k < 32; k++)
    expect_true(holds(&m, first[k]), "page %u, touched before the hand passed, to stay", first[k]);
  /* now touch every page the hand has not passed since: all but those */
  lab_at("now touch every page the hand has not passed since: all but those");
  uint8_t used[65] = {0};
  size_t untouched = 0;
  for (uint32_t p = 0; p < 65; p++) {
    if (!holds(&m, p))
      continue;
    int in_first = 0;
    for (size_t k = 0; k < 32; k++)
      in_first |= first[k] == p;
    if (in_first) {
      untouched++;
    } else {
      pm_get(&m, p);
      used[p] = 1;
    }
  }
  expect_eq(untouched, 32, "untouched pages");
  expect_eq(m.n, 63, "pages left in the cache (m.n)");
  /* evict 31: all from the 32 untouched */
  lab_at("evict 31: all from the 32 untouched");
  expect_eq(pm_evict(&m, 32, 1), 31, "pm_evict(limit 32, vdl 1) returned (pages evicted)");
  uint32_t lost = UINT32_MAX;
  for (uint32_t p = 0; p < 65; p++)
    if (used[p] && !holds(&m, p) && lost == UINT32_MAX)
      lost = p;
  pm_free(&m);
  if (lost != UINT32_MAX)
    fail_msg("page %u, touched after the hand passed, was evicted while untouched "
             "pages remained", lost);
}

/* The hand stays where it stopped. Ten pages, swept once (every bit
 * cleared, one evicted); then, as the engine runs, put a new page and evict
 * one, nine times. A clock meets each new page (used) and passes it with a
 * second chance, so the nine evictions take the nine old pages, in the
 * hand's order: none of the new ones goes while an old, untouched page is
 * left. A sweep that starts again at the first entry every time keeps
 * meeting the newest pages, moved there by the deletions, and evicts them
 * on their second visit. */
static void test_evict_clock_hand_goes_round(void **state)
{
  (void)state;
  lab_rule("§4.2.3: the buffer cache evicts by a clock: the hand goes on from where it "
           "stopped, so a page is evicted only if it was not used since the hand last passed it");
  struct pagemap m;
  pm_init(&m, PS);
  uint64_t lsn[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  put_pages(&m, 10, lsn);
  lab_at("ten pages just put, all used");
  expect_eq(pm_evict(&m, 9, 1), 1, "pm_evict(limit 9) returned (pages evicted)");
  for (uint32_t p = 10; p < 19; p++) {
    pm_put(&m, p)->lsn = 1;
    lab_at("old pages 0..9 swept once, then new pages 10..%u each put and one page evicted",
           p);
    expect_eq(pm_evict(&m, 9, 1), 1, "pm_evict(limit 9) returned (pages evicted)");
    for (uint32_t q = 10; q <= p; q++)
      if (!holds(&m, q)) {
        size_t old = 0;
        for (uint32_t o = 0; o < 10; o++)
          old += holds(&m, o);
        pm_free(&m);
        lab_at("after putting new pages 10..%u", p);
        expect_eq(old, 0, "new page %u was evicted; old, untouched pages still held:", q);
      }
  }
  for (uint32_t o = 0; o < 10; o++)
    expect_true(!holds(&m, o), "every old page evicted after nine rounds (page %u is held)", o);
  pm_free(&m);
}

/* Random touches and evictions, checked against the used bits at each
 * call: if the unused pages at or below the VDL are enough to reach the
 * limit, none of the used ones may go; a clock reaches them all within one
 * turn of the hand, before it comes back to a page whose bit it cleared. */
static void test_evict_clock_random(void **state)
{
  (void)state;
  lab_rule("§4.2.3: eviction is a clock: no page used since the hand passed goes while unused "
           "pages at or below the VDL could");
  uint64_t s = lab_seed(4242);   /* AURALOG_TEST_SEED: other cases (lab_expect.h) */
  size_t checked = 0;
  for (int trial = 0; trial < 300; trial++) {
    struct pagemap m;
    pm_init(&m, PS);
    uint32_t next = 0;
    size_t n0 = 20 + rng_below(&s, 100);
    for (; next < n0; next++)
      pm_put(&m, next)->lsn = rng_below(&s, 50);
    for (int step = 0; step < 40; step++) {
      /* touch a few, add a few */
          for (size_t k = rng_below(&s, 8); k > 0; k--)
        pm_get(&m, rng_below(&s, next));
      for (size_t k = rng_below(&s, 4); k > 0; k--, next++)
        pm_put(&m, next)->lsn = rng_below(&s, 50);
      uint64_t vdl = 40;
      size_t unused_ok = 0;
      uint8_t *was_used = calloc(next, 1);
      uint64_t *was_lsn = calloc(next, sizeof *was_lsn);
      assert_non_null(was_used);
      assert_non_null(was_lsn);
      for (size_t k = 0; k < m.n; k++) {
        was_used[m.e[k].page_no] = m.e[k].used;
        was_lsn[m.e[k].page_no] = m.e[k].lsn;
        unused_ok += !m.e[k].used && m.e[k].lsn <= vdl;
      }
      size_t n = m.n;
      if (unused_ok == 0) {
        /* nothing unused to prefer: one eviction sweeps and clears bits */
        lab_at("nothing unused to prefer: one eviction sweeps and clears bits");
        pm_evict(&m, n - 1, vdl);
        free(was_used);
        free(was_lsn);
        continue;
      }
      /* evict at most as many as there are unused evictable pages, and
       * no more than a third of the map */
      lab_at("evict at most as many as there are unused evictable pages, and no more than a third "
             "of the map");
      size_t room = unused_ok < n / 3 ? unused_ok : n / 3;
      size_t k = room ? 1 + rng_below(&s, (uint32_t)room) : 0;
      lab_at("random trial %d step %d: %zu pages, %zu unused at or below the VDL 40, evicting %zu",
             trial, step, n, unused_ok, k);
      size_t got = pm_evict(&m, n - k, vdl);
      expect_eq(got, k, "pm_evict returned (pages evicted)");
      expect_eq(m.n, n - k, "pages left in the cache (m.n)");
      uint32_t lost = UINT32_MAX;
      for (uint32_t p = 0; p < next; p++)
        if (!holds(&m, p) && was_lsn[p] <= vdl && was_used[p] && lost == UINT32_MAX)
          lost = p;
      checked += k > 0;
      free(was_used);
      free(was_lsn);
      if (lost != UINT32_MAX) {
        pm_free(&m);                   /* before failing: no leak report */
        char sw[320];
        fail_msg("trial %d step %d: page %u, used since the hand passed, was evicted "
                 "while %zu unused pages at or below the VDL could go (evicting %zu)%s",
                 trial, step, lost, unused_ok, k, lab_seed_words_(sw, sizeof sw));
      }
    }
    pm_free(&m);
  }
  expect_true(checked > 2000, "more than 2000 evictions checked");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_random_against_model),
    cmocka_unit_test(test_delete_in_collision_runs),
    cmocka_unit_test(test_sorted_and_clear),
    cmocka_unit_test(test_data_survives_growth),
    cmocka_unit_test(test_evict_never_above_vdl),
    cmocka_unit_test(test_evict_down_to_limit),
    cmocka_unit_test(test_evict_clock_prefers_unused),
    cmocka_unit_test(test_evict_clock_wrapped_sweep),
    cmocka_unit_test(test_evict_clock_random),
    cmocka_unit_test(test_evict_clock_hand_goes_round),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
