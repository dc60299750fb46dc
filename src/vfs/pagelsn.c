/*
 * pagelsn.c: the writer's page-LSN table and the end-to-end page check
 * (see pagelsn.h for what it is, the rule and what it cannot catch).
 *
 * A hash map from page number to LSN: open addressing with linear
 * probing, a power-of-two number of slots, grown (doubled) past 3/4 full.
 * Entries are never deleted one by one; pl_truncate rebuilds the table
 * from what survives.
 */
#include <stdlib.h>
#include <string.h>

#include "vfs/pagelsn.h"

#define PL_FREE UINT32_MAX          /* no SQLite page has this number */
#define PL_FLOOR_BIT (1ull << 63)   /* LSNs stay below 2^60 (LSN_MAX) */
#define PL_MIN_CAP 16

void pl_init(struct pagelsn *t)
{
  memset(t, 0, sizeof *t);
}

void pl_free(struct pagelsn *t)
{
  free(t->page);
  free(t->val);
  pl_init(t);
}

static size_t slot_of(const struct pagelsn *t, uint32_t page)
{
  /* Fibonacci hashing: consecutive pages spread over the table. */
  return (size_t)(((uint64_t)page * 0x9E3779B97F4A7C15ull) >> 32) & (t->cap - 1);
}

/* The slot holding page, or the free slot where it would go. */
static size_t find(const struct pagelsn *t, uint32_t page)
{
  size_t i = slot_of(t, page);
  while (t->page[i] != PL_FREE && t->page[i] != page)
    i = (i + 1) & (t->cap - 1);
  return i;
}

static void alloc_slots(struct pagelsn *t, size_t cap)
{
  t->cap = cap;
  t->n = 0;
  t->page = malloc(cap * sizeof *t->page);
  t->val = malloc(cap * sizeof *t->val);
  memset(t->page, 0xff, cap * sizeof *t->page);   /* every slot PL_FREE */
}

/* Put the entries of old (cap slots) into t, keeping those at or below
 * keep_upto (by LSN). */
static void rehash(struct pagelsn *t, const uint32_t *opage, const uint64_t *oval, size_t ocap,
                   uint64_t keep_upto)
{
  for (size_t i = 0; i < ocap; i++) {
    if (opage[i] == PL_FREE || (oval[i] & ~PL_FLOOR_BIT) > keep_upto)
      continue;
    size_t j = find(t, opage[i]);
    t->page[j] = opage[i];
    t->val[j] = oval[i];
    t->n++;
  }
}

static void grow(struct pagelsn *t)
{
  if (t->cap == 0) {
    alloc_slots(t, PL_MIN_CAP);
    return;
  }
  uint32_t *opage = t->page;
  uint64_t *oval = t->val;
  size_t ocap = t->cap;
  alloc_slots(t, 2 * ocap);
  rehash(t, opage, oval, ocap, UINT64_MAX);
  free(opage);
  free(oval);
}

/* The slot of page, made if missing (its val then 0). */
static size_t slot_for(struct pagelsn *t, uint32_t page)
{
  if (t->cap == 0 || 4 * (t->n + 1) > 3 * t->cap)
    grow(t);
  size_t i = find(t, page);
  if (t->page[i] == PL_FREE) {
    t->page[i] = page;
    t->val[i] = 0;
    t->n++;
  }
  return i;
}

void pl_set(struct pagelsn *t, uint32_t page, uint64_t lsn)
{
  if (page == PL_FREE || lsn == 0)
    return;
  size_t i = slot_for(t, page);     /* may move t->val: not in one expression */
  t->val[i] = lsn;
}

void pl_learn(struct pagelsn *t, uint32_t page, uint64_t lsn)
{
  if (page == PL_FREE || lsn == 0)
    return;
  size_t i = slot_for(t, page);
  uint64_t v = t->val[i];
  if (v == 0 || ((v & PL_FLOOR_BIT) && (v & ~PL_FLOOR_BIT) < lsn))
    t->val[i] = lsn | PL_FLOOR_BIT;
}

int pl_get(const struct pagelsn *t, uint32_t page, uint64_t *lsn)
{
  if (t->cap == 0 || page == PL_FREE)
    return PL_UNKNOWN;
  size_t i = find(t, page);
  if (t->page[i] == PL_FREE || t->val[i] == 0)
    return PL_UNKNOWN;
  *lsn = t->val[i] & ~PL_FLOOR_BIT;
  return t->val[i] & PL_FLOOR_BIT ? PL_FLOOR : PL_EXACT;
}

void pl_truncate(struct pagelsn *t, uint64_t vdl)
{
  if (t->cap == 0)
    return;
  uint32_t *opage = t->page;
  uint64_t *oval = t->val;
  size_t ocap = t->cap;
  alloc_slots(t, ocap);
  rehash(t, opage, oval, ocap, vdl);
  free(opage);
  free(oval);
}

int pl_check(const struct pagelsn *t, uint32_t page, uint64_t read_point, uint64_t need,
             uint64_t got, uint64_t *want)
{
  uint64_t l = 0;
  if (got > need) {
    *want = need;
    return PL_ABOVE_NEED;
  }
  switch (pl_get(t, page, &l)) {
  case PL_EXACT:
    if (l <= read_point && got != l) {
      *want = l;
      return PL_NOT_EXACT;
    }
    break;
  case PL_FLOOR:
    if (l <= read_point && got < l) {
      *want = l;
      return PL_BELOW_FLOOR;
    }
    break;
  }
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
  return t->n;
}

size_t pl_bytes(const struct pagelsn *t)
{
  return t->cap * (sizeof *t->page + sizeof *t->val);
}
