/*
 * recovery.c: the provable VDL (see recovery.h).
 */
#include <stdlib.h>

#include "vfs/recovery.h"

static int by_lsn(const void *a, const void *b)
{
  uint64_t x = ((const struct rmeta *)a)->lsn, y = ((const struct rmeta *)b)->lsn;
  return x < y ? -1 : x > y;
}

static int by_prev_cpl(const void *a, const void *b)
{
  const struct rmeta *x = *(const struct rmeta *const *)a, *y = *(const struct rmeta *const *)b;
  if (x->prev_cpl != y->prev_cpl)
    return x->prev_cpl < y->prev_cpl ? -1 : 1;
  return x->lsn < y->lsn ? -1 : x->lsn > y->lsn;
}

static int truncated(uint64_t lsn, const struct rtrunc *tr, size_t ntr)
{
  for (size_t i = 0; i < ntr; i++)
    if (lsn > tr[i].from && lsn <= tr[i].to)
      return 1;
  return 0;
}

uint64_t recover_vdl(uint64_t hint, const uint64_t *start, size_t npgs,
                     struct rmeta *recs, size_t n, const struct rtrunc *tr, size_t ntr)
{
  if (n)
    qsort(recs, n, sizeof *recs, by_lsn);
  /* reach[k]: PG k's chain is complete (in the union) up to reach[k].
   * In LSN order, the record after reach[k] is the first that links back
   * to it; records that link elsewhere lie past a hole. */
  uint64_t *reach = malloc((npgs + 1) * sizeof *reach);
  for (size_t k = 0; k < npgs; k++)
    reach[k] = start[k];
  for (size_t i = 0; i < n; i++) {
    const struct rmeta *r = &recs[i];
    if (r->lsn <= hint || r->pg >= npgs || truncated(r->lsn, tr, ntr))
      continue;
    if (r->prev == reach[r->pg])
      reach[r->pg] = r->lsn;
  }
  /* The CPL records, by the CPL they link back to: the MTR chain. */
  const struct rmeta **cpls = malloc((n + 1) * sizeof *cpls);
  size_t nc = 0;
  for (size_t i = 0; i < n; i++)
    if (recs[i].cpl && recs[i].lsn > hint && !truncated(recs[i].lsn, tr, ntr))
      cpls[nc++] = &recs[i];
  if (nc)
    qsort(cpls, nc, sizeof *cpls, by_prev_cpl);
  /* Walk it from the hint. */
  uint64_t vdl = hint;
  for (;;) {
    size_t lo = 0, hi = nc;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (cpls[mid]->prev_cpl < vdl)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == nc || cpls[lo]->prev_cpl != vdl || cpls[lo]->lsn <= vdl)
      break;
    const struct rmeta *next = cpls[lo];
    int whole = 1;
    for (size_t j = 0; j < next->nmtr; j++)
      if (next->mtr_pg[j] >= npgs || reach[next->mtr_pg[j]] < next->mtr_last[j])
        whole = 0;
    if (!whole)
      break;
    vdl = next->lsn;
  }
  free(cpls);
  free(reach);
  return vdl;
}
