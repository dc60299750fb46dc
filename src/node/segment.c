/*
 * segment.c: SCL tracking from backlinks (see segment.h).
 *
 * Invariants, kept by seg_add():
 *   - pend[] holds exactly the durable records above scl, sorted by lsn;
 *   - pend[0].prev != scl (otherwise scl would have advanced over it).
 * Since a PG's chain is ordered by LSN, the record that follows scl in the
 * chain is the smallest LSN above scl; so scl advances while the first
 * pending record links back to it. Arrival order does not matter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node/segment.h"
#include "wire.h"

void seg_init(struct segment *s, uint64_t volume_id, uint32_t pg,
              uint32_t first_page, uint32_t npages, uint32_t page_size)
{
  memset(s, 0, sizeof *s);
  s->volume_id = volume_id;
  s->pg = pg;
  s->first_page = first_page;
  s->npages = npages;
  s->page_size = page_size;
}

void seg_free(struct segment *s)
{
  free(s->truncs);
  s->truncs = NULL;
  s->ntruncs = 0;
  free(s->pend);
  s->pend = NULL;
  s->npend = s->cap = 0;
  free(s->imaged);
  free(s->floor);
  free(s->unmat);
  s->imaged = NULL;
  s->floor = NULL;
  s->unmat = NULL;
}

int seg_epoch(struct segment *s, uint64_t epoch, char *why, size_t whylen)
{
  if (epoch < s->epoch) {
    snprintf(why, whylen, "fenced by epoch %llu (writer has epoch %llu)",
             (unsigned long long)s->epoch, (unsigned long long)epoch);
    return ERR_STALE_EPOCH;
  }
  s->epoch = epoch;
  return ERR_NONE;
}

/* Index of the first pending record with lsn >= key. */
static size_t pend_find(const struct segment *s, uint64_t key)
{
  size_t lo = 0, hi = s->npend;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->pend[mid].lsn < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int seg_admit(const struct segment *s, const Rec *r, int *dup, char *why,
              size_t whylen)
{
  unsigned long long lsn = r->lsn, prev = r->prev_lsn;
  *dup = 0;
  if (r->page_no < s->first_page || r->page_no - s->first_page >= s->npages) {
    snprintf(why, whylen, "record %llu is for page %u, outside pg %u (pages %u..%u)",
             lsn, r->page_no, s->pg, s->first_page, s->first_page + s->npages - 1);
    return ERR_OUT_OF_RANGE;
  }
  /* Every range, literal or copy, and every copy's source must lie inside
   * this segment's pages (the wire only checked the largest page size):
   * otherwise the record is stored and acknowledged, then unreadable. The
   * CRC was checked on arrival (wire_check). */
  int rc = rec_check_shape(r, s->page_size, why, whylen);
  if (rc != ERR_NONE)
    return rc;
  for (size_t j = 0; j < s->ntruncs; j++)
    if (trunc_cuts(&s->truncs[j], 1, r->lsn, r->epoch)) {
      snprintf(why, whylen, "record %llu of epoch %llu lies in (%llu, %llu], truncated "
               "by epoch %llu", lsn, (unsigned long long)r->epoch,
               (unsigned long long)s->truncs[j].from, (unsigned long long)s->truncs[j].to,
               (unsigned long long)s->truncs[j].epoch);
      return ERR_CONFLICT;
    }
  if (r->lsn <= s->scl) {
    *dup = 1;               /* the chain up to scl is whole: we hold it */
    return ERR_NONE;
  }
  size_t i = pend_find(s, r->lsn);
  if (i < s->npend && s->pend[i].lsn == r->lsn) {
    *dup = 1;
    return ERR_NONE;
  }
  /* A backlink says "no record of this PG between prev and me". Refuse a
   * record that jumps over one we hold, or is jumped over by one. */
  if (r->prev_lsn < s->scl) {
    snprintf(why, whylen, "record %llu links back to %llu, but %llu is held between",
             lsn, prev, (unsigned long long)s->scl);
    return ERR_CONFLICT;
  }
  for (size_t j = 0; j < s->npend; j++) {
    const struct pend *p = &s->pend[j];
    if ((r->prev_lsn < p->lsn && p->lsn < r->lsn) ||
        (p->prev < r->lsn && r->lsn < p->lsn)) {
      snprintf(why, whylen, "record %llu (back to %llu) contradicts held record "
               "%llu (back to %llu)", lsn, prev, (unsigned long long)p->lsn,
               (unsigned long long)p->prev);
      return ERR_CONFLICT;
    }
  }
  return ERR_NONE;
}

int seg_has_trunc(const struct segment *s, uint64_t epoch, uint64_t from, uint64_t to)
{
  /* Wholly at or below the GC point, a truncation is as good as held:
   * what lies there is in page versions built from the chain, which holds
   * nothing a truncation cuts, and no record at or below it is taken
   * again (store_gc forgets such truncations: bookkeeping compacted). */
  if (to > from && to <= s->gc_lsn)
    return 1;
  for (size_t j = 0; j < s->ntruncs; j++)
    if (s->truncs[j].epoch == epoch && s->truncs[j].from == from && s->truncs[j].to == to)
      return 1;
  return 0;
}

void seg_add_trunc(struct segment *s, const struct trunc *tr)
{
  if (tr->to <= tr->from || seg_has_trunc(s, tr->epoch, tr->from, tr->to))
    return;
  struct trunc *t = realloc(s->truncs, (s->ntruncs + 1) * sizeof *t);
  if (t == NULL)
    abort();
  s->truncs = t;
  s->truncs[s->ntruncs++] = *tr;   /* its proof too: gossip passes it on */
}

void seg_rechain(struct segment *s, uint64_t base)
{
  s->rechains++;
  s->npend = 0;
  s->scl = base;
  s->max_lsn = base;
}

uint64_t seg_add(struct segment *s, uint64_t lsn, uint64_t prev)
{
  /* LAB 21 BEGIN: the SCL from backlinks (§4.2.1). Record lsn, whose
   * backlink is prev, is now durable: hold it in pend[] (sorted by lsn,
   * no duplicates, nothing at or below scl; keep max_lsn), then move scl
   * up the chain as far as it has no hole, dropping from pend[] what scl
   * passed. Records arrive in any order, and more than once. Return scl.
   * stub: (void)lsn;
   * stub: (void)prev;
   * stub: return s->scl;
   */
  if (lsn <= s->scl)
    return s->scl;
  size_t i = pend_find(s, lsn);
  if (i < s->npend && s->pend[i].lsn == lsn)
    return s->scl;
  if (s->npend == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct pend *p = realloc(s->pend, cap * sizeof *p);
    if (p == NULL)
      abort();              /* out of memory: nothing sensible to do */
    s->pend = p;
    s->cap = cap;
  }
  memmove(&s->pend[i + 1], &s->pend[i], (s->npend - i) * sizeof *s->pend);
  s->pend[i] = (struct pend){lsn, prev};
  s->npend++;
  if (lsn > s->max_lsn)
    s->max_lsn = lsn;

  size_t k = 0;
  while (k < s->npend && s->pend[k].prev == s->scl)
    s->scl = s->pend[k++].lsn;
  if (k) {
    memmove(s->pend, &s->pend[k], (s->npend - k) * sizeof *s->pend);
    s->npend -= k;
  }
  return s->scl;
  /* LAB 21 END */
}
