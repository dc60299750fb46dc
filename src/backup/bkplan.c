/*
 * bkplan.c: what a backup holds, and which objects restore a point
 * (bkplan.h).
 */
#include <stdlib.h>
#include <string.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"

static struct bk_pgset *pg_of(struct bk_volset *vs, uint32_t pg)
{
  if (pg >= vs->npgs) {
    vs->pgs = realloc(vs->pgs, ((size_t)pg + 1) * sizeof *vs->pgs);
    memset(vs->pgs + vs->npgs, 0, ((size_t)pg + 1 - vs->npgs) * sizeof *vs->pgs);
    vs->npgs = (size_t)pg + 1;
  }
  return &vs->pgs[pg];
}

void bk_volset_add(struct bk_volset *vs, const char *key, uint64_t bytes)
{
  struct bk_key k;
  if (bk_key_parse(key, &k) != 0 || k.vol != vs->vol)
    return;                  /* not ours: left alone */
  struct bk_pgset *p = pg_of(vs, k.pg);
  p->present = 1;
  p->bytes += bytes;
  if (k.kind == BK_BASE) {
    if (p->nbases == p->cap_b) {
      p->cap_b = p->cap_b ? 2 * p->cap_b : 8;
      p->bases = realloc(p->bases, p->cap_b * sizeof *p->bases);
    }
    p->bases[p->nbases++] = (struct bk_base){k.a, k.b, bytes};
  } else {
    if (p->nlogs == p->cap_l) {
      p->cap_l = p->cap_l ? 2 * p->cap_l : 64;
      p->logs = realloc(p->logs, p->cap_l * sizeof *p->logs);
    }
    p->logs[p->nlogs++] = (struct bk_span){k.a, k.b, bytes};
  }
}

static int base_cmp(const void *a, const void *b)
{
  const struct bk_base *x = a, *y = b;
  if (x->at != y->at)
    return x->at < y->at ? -1 : 1;
  return x->ms < y->ms ? -1 : x->ms > y->ms;
}

static int span_cmp(const void *a, const void *b)
{
  const struct bk_span *x = a, *y = b;
  if (x->from != y->from)
    return x->from < y->from ? -1 : 1;
  return x->to < y->to ? -1 : x->to > y->to;
}

void bk_volset_sort(struct bk_volset *vs)
{
  for (size_t i = 0; i < vs->npgs; i++) {
    struct bk_pgset *p = &vs->pgs[i];
    if (p->nbases)
      qsort(p->bases, p->nbases, sizeof *p->bases, base_cmp);
    if (p->nlogs)
      qsort(p->logs, p->nlogs, sizeof *p->logs, span_cmp);
  }
}

static int on_key(void *arg, const char *key, uint64_t size)
{
  bk_volset_add(arg, key, size);
  return 0;
}

int bk_scan(struct objstore *o, uint64_t vol, struct bk_volset *vs, char *why, size_t whylen)
{
  char prefix[BK_KEY_MAX];
  *vs = (struct bk_volset){.vol = vol};
  bk_prefix_vol(prefix, vol);
  int rc = obj_list(o, prefix, on_key, vs, why, whylen);
  bk_volset_sort(vs);
  return rc;
}

void bk_volset_free(struct bk_volset *vs)
{
  for (size_t i = 0; i < vs->npgs; i++) {
    free(vs->pgs[i].bases);
    free(vs->pgs[i].logs);
  }
  free(vs->pgs);
  *vs = (struct bk_volset){0};
}

int bk_drop(struct bk_pgset *p, int kind, uint64_t a, uint64_t b)
{
  if (kind == BK_BASE) {
    for (size_t i = 0; i < p->nbases; i++)
      if (p->bases[i].at == a && p->bases[i].ms == b) {
        p->bytes -= p->bases[i].bytes;
        memmove(p->bases + i, p->bases + i + 1, (p->nbases - i - 1) * sizeof *p->bases);
        p->nbases--;
        return 0;
      }
  } else {
    for (size_t i = 0; i < p->nlogs; i++)
      if (p->logs[i].from == a && p->logs[i].to == b) {
        p->bytes -= p->logs[i].bytes;
        memmove(p->logs + i, p->logs + i + 1, (p->nlogs - i - 1) * sizeof *p->logs);
        p->nlogs--;
        return 0;
      }
  }
  return -1;
}

/* Greedy: from point at, of the pieces that start at or below it and end
 * above it, take the one that ends furthest; again from its end. Each
 * step moves the point up, so it ends; the result is the furthest any
 * chain of pieces reaches (a piece not taken ends at or below one taken
 * from the same point). O(pieces) per step, with the pieces sorted by
 * from: a step looks only at those starting at or below the point. */
static size_t step(const struct bk_pgset *p, uint64_t at)
{
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < p->nlogs && p->logs[i].from <= at; i++)
    if (p->logs[i].to > at && (best == SIZE_MAX || p->logs[i].to > p->logs[best].to))
      best = i;
  return best;
}

/* The walk from start, stopping once at or past until (UINT64_MAX: as far
 * as it goes). */
static uint64_t walk(const struct bk_pgset *p, uint64_t start, uint64_t until, size_t *path,
                     size_t *npath)
{
  uint64_t at = start;
  size_t n = 0, best;
  while (at < until && (best = step(p, at)) != SIZE_MAX) {
    if (path)
      path[n] = best;
    n++;
    at = p->logs[best].to;
  }
  if (npath)
    *npath = n;
  return at;
}

uint64_t bk_reach(const struct bk_pgset *p, uint64_t start, size_t *path, size_t *npath)
{
  return walk(p, start, UINT64_MAX, path, npath);
}

int bk_plan(const struct bk_pgset *p, uint64_t L, size_t *base, size_t *path, size_t *npath)
{
  /* Newest base first: the fewest records to apply. The empty PG (0)
   * comes last. */
  for (size_t j = p->nbases + 1; j-- > 0;) {
    uint64_t b = j == 0 ? 0 : p->bases[j - 1].at;
    if (b > L || (j == 0 && p->nbases && p->bases[0].at == 0))
      continue;
    /* Only the pieces up to L: the greedy walk, stopped once past. */
    size_t n = 0;
    uint64_t at = walk(p, b, L, path, &n);
    if (at >= L) {
      *base = j == 0 ? SIZE_MAX : j - 1;
      if (npath)
        *npath = n;
      return 0;
    }
  }
  return -1;
}

int bk_window(const struct bk_pgset *p, uint64_t *lo, uint64_t *hi)
{
  /* Each start (the empty PG, each base) gives the run [start, reach]:
   * the newest run is the one reaching furthest, widened by every run
   * that overlaps it. */
  size_t ns = p->nbases + 1;
  uint64_t best_hi = 0, best_lo = 0;
  int found = 0;
  for (size_t j = 0; j < ns; j++) {
    uint64_t s = j == 0 ? 0 : p->bases[j - 1].at;
    uint64_t r = bk_reach(p, s, NULL, NULL);
    if (!found || r > best_hi || (r == best_hi && s < best_lo)) {
      best_hi = r;
      best_lo = s;
      found = 1;
    }
  }
  /* Widen down: a run that starts lower and reaches into [lo, hi]. */
  for (int moved = 1; moved;) {
    moved = 0;
    for (size_t j = 0; j < ns; j++) {
      uint64_t s = j == 0 ? 0 : p->bases[j - 1].at;
      if (s < best_lo && bk_reach(p, s, NULL, NULL) >= best_lo) {
        best_lo = s;
        moved = 1;
      }
    }
  }
  *lo = best_lo;
  *hi = best_hi;
  return found;
}

size_t bk_retain(const struct bk_pgset *p, uint64_t now_ms, uint64_t keep_ms,
                 void (*fn)(void *arg, int kind, uint64_t a, uint64_t b), void *arg)
{
  if (now_ms < keep_ms)
    return 0;
  uint64_t edge = now_ms - keep_ms;
  /* The base to keep: the one at the highest point among those staged at
   * or before the edge (every point from it on stays restorable: newer
   * pieces chain from it). */
  size_t keep = SIZE_MAX;
  for (size_t i = 0; i < p->nbases; i++)
    if (p->bases[i].ms <= edge && (keep == SIZE_MAX || p->bases[i].at >= p->bases[keep].at))
      keep = i;
  if (keep == SIZE_MAX)
    return 0;
  uint64_t at = p->bases[keep].at;
  size_t n = 0;
  for (size_t i = 0; i < p->nbases; i++)
    if (i != keep && p->bases[i].at <= at) {
      fn(arg, BK_BASE, p->bases[i].at, p->bases[i].ms);
      n++;
    }
  for (size_t i = 0; i < p->nlogs; i++)
    if (p->logs[i].to <= at) {
      fn(arg, BK_LOG, p->logs[i].from, p->logs[i].to);
      n++;
    }
  return n;
}
