/*
 * pagelsn.c: the writer's page-LSN table and the end-to-end page check
 * (see pagelsn.h for what it is, the rule and what it cannot catch).
 *
 * Two hash maps from page number to LSNs (struct plmap): open addressing
 * with linear probing, a power-of-two number of slots, grown (doubled)
 * past 3/4 full. Entries are never deleted one by one; a map is rebuilt
 * from what survives (pl_truncate, and the sweep of `before`).
 */
#include <stdlib.h>
#include <string.h>

#include "vfs/pagelsn.h"

#define PL_FREE UINT32_MAX          /* no SQLite page has this number */
#define PL_FLOOR_BIT (1ull << 63)   /* LSNs stay below 2^60 (LSN_MAX) */
#define PL_LSN(v) ((v) & ~PL_FLOOR_BIT)
#define PL_MIN_CAP 16

/* ---- the map ------------------------------------------------------------------ */

/* LSNs per entry: 1 in `last`, 2 in `before` (set before its first use:
 * a zeroed struct pagelsn is an empty table). */
#define K(m) ((m)->k ? (m)->k : 1)

static void map_free(struct plmap *m)
{
  size_t k = m->k;
  free(m->page);
  free(m->val);
  memset(m, 0, sizeof *m);
  m->k = k;
}

static size_t slot_of(const struct plmap *m, uint32_t page)
{
  /* Fibonacci hashing: consecutive pages spread over the table. */
  return (size_t)(((uint64_t)page * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

/* The slot holding page, or the free slot where it would go (cap > 0). */
static size_t find(const struct plmap *m, uint32_t page)
{
  size_t i = slot_of(m, page);
  while (m->page[i] != PL_FREE && m->page[i] != page)
    i = (i + 1) & (m->cap - 1);
  return i;
}

/* Page's LSNs in m, or NULL. */
static uint64_t *map_get(const struct plmap *m, uint32_t page)
{
  if (m->cap == 0 || page == PL_FREE)
    return NULL;
  size_t i = find(m, page);
  return m->page[i] == PL_FREE ? NULL : &m->val[K(m) * i];
}

static void alloc_slots(struct plmap *m, size_t cap)
{
  m->cap = cap;
  m->n = 0;
  m->page = malloc(cap * sizeof *m->page);
  m->val = calloc(cap * K(m), sizeof *m->val);
  memset(m->page, 0xff, cap * sizeof *m->page);   /* every slot PL_FREE */
}

/* Page's LSNs in m, made (zeros) if missing. The pointer is valid until
 * the next call that adds to m. */
static uint64_t *map_put(struct plmap *m, uint32_t page)
{
  if (m->cap == 0 || 4 * (m->n + 1) > 3 * m->cap) {
    struct plmap old = *m;
    alloc_slots(m, old.cap ? 2 * old.cap : PL_MIN_CAP);
    for (size_t i = 0; i < old.cap; i++)
      if (old.page[i] != PL_FREE)
        memcpy(map_put(m, old.page[i]), &old.val[K(&old) * i], K(&old) * sizeof *old.val);
    free(old.page);
    free(old.val);
  }
  size_t i = find(m, page);
  if (m->page[i] == PL_FREE) {
    m->page[i] = page;
    memset(&m->val[K(m) * i], 0, K(m) * sizeof *m->val);
    m->n++;
  }
  return &m->val[K(m) * i];
}

/* Rebuild m with the entries keep(arg, page, vals) says to keep. */
static void map_filter(struct plmap *m, int (*keep)(void *, uint32_t, const uint64_t *),
                       void *arg)
{
  if (m->cap == 0)
    return;
  struct plmap old = *m;
  alloc_slots(m, old.cap);
  for (size_t i = 0; i < old.cap; i++)
    if (old.page[i] != PL_FREE && keep(arg, old.page[i], &old.val[K(&old) * i]))
      memcpy(map_put(m, old.page[i]), &old.val[K(&old) * i], K(&old) * sizeof *old.val);
  free(old.page);
  free(old.val);
}

static size_t map_bytes(const struct plmap *m)
{
  return m->cap * (sizeof *m->page + K(m) * sizeof *m->val);
}

/* ---- the table ------------------------------------------------------------------ */

void pl_init(struct pagelsn *t)
{
  memset(t, 0, sizeof *t);
}

void pl_free(struct pagelsn *t)
{
  map_free(&t->last);
  map_free(&t->before);
}

void pl_set(struct pagelsn *t, uint32_t page, uint64_t lsn)
{
  if (page == PL_FREE || lsn == 0)
    return;
  *map_put(&t->last, page) = lsn;
}

struct sweep {
  const struct pagelsn *t;
  uint64_t vdl;
};

/* Keep a `before` entry while its page's last LSN is above the VDL. */
static int above_vdl(void *arg, uint32_t page, const uint64_t *bv)
{
  (void)bv;
  const struct sweep *s = arg;
  const uint64_t *l = map_get(&s->t->last, page);
  return l && PL_LSN(*l) > s->vdl;
}

void pl_write(struct pagelsn *t, uint32_t page, uint64_t lsn, uint64_t vdl)
{
  if (page == PL_FREE || lsn == 0)
    return;
  t->before.k = 2;
  uint64_t *l = map_put(&t->last, page);
  uint64_t old = *l;
  *l = lsn;
  if (map_get(&t->before, page) == NULL || PL_LSN(old) <= vdl) {
    /* The page's first change above the VDL: remember the page as it was
     * (old: exact, floor or 0, unknown). An older entry of the page is
     * stale (its changes are durable now): replaced. A page whose last
     * change is above the VDL always has an entry; without one, the page
     * as it was is not known. */
    uint64_t *b = map_put(&t->before, page);
    b[0] = PL_LSN(old) <= vdl ? old : 0;
    b[1] = lsn;
  }
  if (t->before.n >= (t->sweep_at ? t->sweep_at : 64)) {
    struct sweep s = {t, vdl};
    map_filter(&t->before, above_vdl, &s);
    t->sweep_at = 2 * t->before.n + 64;
  }
}

void pl_learn(struct pagelsn *t, uint32_t page, uint64_t lsn)
{
  if (page == PL_FREE || lsn == 0)
    return;
  uint64_t *v = map_put(&t->last, page);
  if (*v == 0 || ((*v & PL_FLOOR_BIT) && PL_LSN(*v) < lsn))
    *v = lsn | PL_FLOOR_BIT;
}

static int kind_of(uint64_t v)
{
  return v == 0 ? PL_UNKNOWN : v & PL_FLOOR_BIT ? PL_FLOOR : PL_EXACT;
}

int pl_get(const struct pagelsn *t, uint32_t page, uint64_t *lsn)
{
  const uint64_t *v = map_get(&t->last, page);
  if (v == NULL || *v == 0)
    return PL_UNKNOWN;
  *lsn = PL_LSN(*v);
  return kind_of(*v);
}

struct cut {
  struct pagelsn *t;
  uint64_t vdl;
};

static int at_or_below(void *arg, uint32_t page, const uint64_t *v)
{
  (void)page;
  return PL_LSN(*v) <= ((const struct cut *)arg)->vdl;
}

void pl_truncate(struct pagelsn *t, uint64_t vdl)
{
  struct cut c = {t, vdl};
  map_filter(&t->last, at_or_below, &c);
  /* A page whose every change above the VDL was cut is as it was before
   * the first of them. */
  for (size_t i = 0; i < t->before.cap; i++) {
    const uint64_t *b = &t->before.val[2 * i];
    if (t->before.page[i] != PL_FREE && b[1] > vdl && b[0] && PL_LSN(b[0]) <= vdl)
      *map_put(&t->last, t->before.page[i]) = b[0];
  }
  map_free(&t->before);
  t->sweep_at = 0;
}

/* Check got against v (an entry: exact, floor or 0) at read point rp. */
static int against(uint64_t v, uint64_t rp, uint64_t got, uint64_t *want)
{
  uint64_t l = PL_LSN(v);
  if (kind_of(v) == PL_EXACT && l <= rp && got != l) {
    *want = l;
    return PL_NOT_EXACT;
  }
  if (kind_of(v) == PL_FLOOR && l <= rp && got < l) {
    *want = l;
    return PL_BELOW_FLOOR;
  }
  return PL_OK;
}

int pl_check(const struct pagelsn *t, uint32_t page, uint64_t read_point, uint64_t need,
             uint64_t got, uint64_t *want)
{
  if (got > need) {
    *want = need;
    return PL_ABOVE_NEED;
  }
  const uint64_t *v = map_get(&t->last, page);
  if (v == NULL || *v == 0)
    return PL_OK;
  if (PL_LSN(*v) <= read_point || kind_of(*v) == PL_FLOOR)
    return against(*v, read_point, got, want);
  /* A change above the read point: the page as of before it, if the
   * read point is below the first such change. */
  const uint64_t *b = map_get(&t->before, page);
  if (b && read_point < b[1])
    return against(b[0], read_point, got, want);
  return PL_OK;
}

const char *pl_verdict(int verdict)
{
  switch (verdict) {
  case PL_OK: return "as expected";
  case PL_ABOVE_NEED: return "expected at most";
  case PL_NOT_EXACT: return "expected exactly";
  case PL_BELOW_FLOOR: return "expected at least";
  }
  return "?";
}

size_t pl_count(const struct pagelsn *t)
{
  return t->last.n;
}

size_t pl_bytes(const struct pagelsn *t)
{
  return map_bytes(&t->last) + map_bytes(&t->before);
}
