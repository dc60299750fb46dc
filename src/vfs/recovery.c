/*
 * recovery.c: the provable VDL (see recovery.h).
 */
#include <stdlib.h>
#include <string.h>

#include "vfs/recovery.h"

/* By LSN; copies of one LSN with the highest epoch first. */
static int by_lsn(const void *a, const void *b)
{
  const struct rmeta *x = a, *y = b;
  if (x->lsn != y->lsn)
    return x->lsn < y->lsn ? -1 : 1;
  return x->epoch > y->epoch ? -1 : x->epoch < y->epoch;
}

static int by_prev_cpl(const void *a, const void *b)
{
  const struct rmeta *x = *(const struct rmeta *const *)a, *y = *(const struct rmeta *const *)b;
  if (x->prev_cpl != y->prev_cpl)
    return x->prev_cpl < y->prev_cpl ? -1 : 1;
  return x->lsn < y->lsn ? -1 : x->lsn > y->lsn;
}

/* The index of the counted copy of lsn in recs (sorted), or -1. */
static long find(const struct rmeta *recs, size_t n, uint64_t lsn)
{
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (recs[mid].lsn < lsn)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && recs[lo].lsn == lsn ? (long)lo : -1;
}

uint64_t recover_vdl(uint64_t hint, const uint64_t *start, size_t npgs,
                     struct rmeta *recs, size_t n, const struct trunc *tr, size_t ntr,
                     uint64_t *tails)
{
  /* LAB 25 BEGIN: the provable VDL (§4.3). From the records a read
   * quorum of every PG's segments returned (recs, in any order; several
   * copies of one LSN may come, and the one of the highest epoch counts),
   * follow each PG's chain of backlinks up from start[pg], leaving out
   * records at or below the hint and what a truncation in tr cuts
   * (trunc_cuts, rule T). Taken in LSN order, a record extends its PG's
   * chain when its backlink is the chain's current end. At a fork (two
   * records linking back to the same end) the lower LSN extends it; the
   * other is off the chain, and so is everything that links to it. Then
   * walk the chain of CPLs (prev_cpl) up from hint while each MTR is
   * whole: every PG's last record of it (mtr_pg, mtr_last) is on its
   * chain. Mark adopt on the chained records in (hint, VDL], and only on
   * them (one copy of each LSN); set tails[pg] to each PG's last of them
   * (start[pg] if none), and return the VDL. The helpers above may help.
   * stub: (void)by_lsn;
   * stub: (void)by_prev_cpl;
   * stub: (void)find;
   * stub: (void)recs; (void)n; (void)tr; (void)ntr;
   * stub: for (size_t k = 0; tails && k < npgs; k++)
   * stub:   tails[k] = start[k];
   * stub: return hint;
   */
  if (n)
    qsort(recs, n, sizeof *recs, by_lsn);
  /* on[i]: recs[i] counts (first copy of its LSN, above the hint, in a
   * known PG, cut by no known truncation) and is on its PG's chain. */
  uint8_t *on = calloc(n + 1, 1);
  uint64_t *reach = malloc((npgs + 1) * sizeof *reach);
  for (size_t k = 0; k < npgs; k++)
    reach[k] = start[k];
  /* In LSN order, the record after reach[k] is the first that links back
   * to it; records that link elsewhere lie past a hole (or are an old
   * epoch's that a truncation the quorum knows of has cut). */
  for (size_t i = 0; i < n; i++) {
    struct rmeta *r = &recs[i];
    r->adopt = 0;
    if ((i > 0 && recs[i - 1].lsn == r->lsn) || r->lsn <= hint || r->pg >= npgs ||
        trunc_cuts(tr, ntr, r->lsn, r->epoch))
      continue;
    if (r->prev == reach[r->pg]) {
      reach[r->pg] = r->lsn;
      on[i] = 1;
    }
  }
  /* The chained CPL records, by the CPL they link back to: the MTR chain. */
  const struct rmeta **cpls = malloc((n + 1) * sizeof *cpls);
  size_t nc = 0;
  for (size_t i = 0; i < n; i++)
    if (on[i] && recs[i].cpl)
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
    for (size_t j = 0; j < next->nmtr && whole; j++) {
      long at = find(recs, n, next->mtr_last[j]);
      whole = next->mtr_pg[j] < npgs && at >= 0 && on[at] &&
              recs[at].pg == next->mtr_pg[j];
    }
    if (!whole)
      break;
    vdl = next->lsn;
  }
  /* Each PG's tail at the VDL, and what recovery must adopt. */
  if (tails)
    for (size_t k = 0; k < npgs; k++)
      tails[k] = start[k];
  for (size_t i = 0; i < n && recs[i].lsn <= vdl; i++)
    if (on[i]) {
      recs[i].adopt = 1;
      if (tails)
        tails[recs[i].pg] = recs[i].lsn;
    }
  free(cpls);
  free(reach);
  free(on);
  return vdl;
  /* LAB 25 END */
}

int recover_rollforward(uint64_t vdl, uint64_t xid, struct rmeta *recs, size_t n,
                        const struct trunc *tr, size_t ntr, size_t npgs, uint64_t *tails,
                        uint32_t *pg, uint64_t *prev, size_t *page_at, uint32_t *ml_pg,
                        uint64_t *ml_last, size_t *nml)
{
  if (xid <= vdl + 1)
    return 0;
  uint64_t *reach = malloc((npgs + 1) * sizeof *reach);
  memcpy(reach, tails, npgs * sizeof *reach);
  size_t *take = malloc((n + 1) * sizeof *take), nt = 0;
  uint64_t want = 0;         /* the next LSN the run needs (0: the first not met yet) */
  int ok = 1;
  for (size_t i = 0; i < n && ok; i++) {
    const struct rmeta *r = &recs[i];
    if ((i > 0 && recs[i - 1].lsn == r->lsn) || r->lsn <= vdl || r->pg >= npgs ||
        trunc_cuts(tr, ntr, r->lsn, r->epoch))
      continue;
    if (r->lsn >= xid)
      break;
    if ((want && r->lsn != want) || r->cpl || r->prev != reach[r->pg])
      ok = 0;                /* a hole, a CPL or a fork: not one whole prepared MTR */
    reach[r->pg] = r->lsn;
    want = r->lsn + 1;
    take[nt++] = i;
  }
  ok = ok && nt > 0 && want == xid;
  if (ok) {
    *nml = 0;
    for (size_t j = 0; j < nt; j++) {
      struct rmeta *r = &recs[take[j]];
      r->adopt = 1;
      tails[r->pg] = r->lsn;
      size_t k = 0;
      while (k < *nml && ml_pg[k] != r->pg)
        k++;
      if (k == *nml)
        ml_pg[(*nml)++] = r->pg;
      ml_last[k] = r->lsn;
    }
    *page_at = take[nt - 1];
    *pg = recs[take[nt - 1]].pg;
    *prev = xid - 1;
    for (size_t k = 0; k < *nml; k++)
      if (ml_pg[k] == *pg)
        ml_last[k] = xid;    /* the commit record is its PG's last */
    tails[*pg] = xid;
  }
  free(take);
  free(reach);
  return ok;
}

/* INVARIANT (the argument is in recovery.h): within the fault model no
 * segment heard a VDL above the one recovery proves; one that did is
 * acknowledged commits gone, and recovery must not truncate there. */
size_t recover_lost(uint64_t vdl, const uint64_t *heard, size_t nk, size_t *worst)
{
  size_t n = 0;
  for (size_t k = 0; k < nk; k++)
    if (heard[k] > vdl && (n++ == 0 || heard[k] > heard[*worst]))
      *worst = k;
  return n;
}
