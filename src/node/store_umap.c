/*
 * store_umap.c: the records not yet indexed by page, in memory.
 *
 * A record is stored in recs and, until store_index moves it to pidx
 * (store.h: the deferred index), named in unidx by (volume, pg, lsn) ->
 * page. Whoever needs a page's records (building the page, counting what
 * lies above its version) found the unindexed ones by scanning the
 * segment's part of unidx. Background work asks that for every page it
 * touches: a GC of one second's records (~1,000 pages) scanned ~10,000
 * unidx entries per page, twice, and that was half of a busy node's CPU
 * (perf, `auralog bench` write-only).
 *
 * So the store keeps the same facts in memory: (volume, pg, page) -> the
 * sorted LSNs of that page's unindexed records, one hash for the node
 * (unidx is small: the node indexes once about IDX_BATCH records wait).
 *
 * Invariant U: while the map is ready, it names exactly what unidx holds
 * as the open write transaction sees it (or, with none open, as
 * committed). Every put into unidx adds (store_put_rec); every delete
 * whose page is known removes (store_index, store_gc, store_truncate);
 * a delete whose page is not known, or a whole segment's, and any
 * transaction that is aborted or fails to commit, make it not ready
 * (store_umap_drop); the next lookup builds it again from unidx, through
 * the transaction it is asked with. A build happens at most once per
 * such event: rare (a restart, a damaged record, a truncation of an
 * unreadable record, a dropped segment, a failed commit).
 */
#include <stdlib.h>
#include <string.h>

#include "node/store_int.h"

struct ubucket {
  uint64_t vol;
  uint32_t pg, page;
  uint64_t *lsn;             /* lsn[off .. off + n), sorted */
  uint32_t off, n, cap;
  int used;                  /* the slot holds this key (n may be 0) */
};

struct umap {
  int ready;
  struct ubucket *b;
  size_t cap, used;          /* slots; slots holding a key */
  size_t entries;            /* LSNs in all */
};

static size_t slot_of(const struct umap *m, uint64_t vol, uint32_t pg, uint32_t page)
{
  uint64_t h = vol * 0x9e3779b97f4a7c15ull ^ (uint64_t)pg * 0xc2b2ae3d27d4eb4full ^
               (uint64_t)page * 0x165667b19e3779f9ull;
  size_t i = (size_t)(h ^ h >> 31) & (m->cap - 1);
  while (m->b[i].used &&
         !(m->b[i].vol == vol && m->b[i].pg == pg && m->b[i].page == page))
    i = (i + 1) & (m->cap - 1);
  return i;
}

static void clear(struct umap *m)
{
  for (size_t i = 0; i < m->cap; i++)
    free(m->b[i].lsn);
  free(m->b);
  m->b = NULL;
  m->cap = m->used = m->entries = 0;
}

/* Room for one more key: at most half full, counting only keys that
 * still hold LSNs (emptied pages are left behind here). */
static void grow(struct umap *m)
{
  if (m->cap && 2 * (m->used + 1) <= m->cap)
    return;
  size_t live = 0;
  for (size_t i = 0; i < m->cap; i++)
    live += m->b[i].used && m->b[i].n > 0;
  struct ubucket *old = m->b;
  size_t oldcap = m->cap;
  m->cap = 64;
  while (m->cap < 4 * (live + 1))
    m->cap *= 2;
  m->b = calloc(m->cap, sizeof *m->b);
  m->used = 0;
  for (size_t i = 0; i < oldcap; i++) {
    if (!old[i].used || old[i].n == 0) {
      free(old[i].lsn);
      continue;
    }
    size_t j = slot_of(m, old[i].vol, old[i].pg, old[i].page);
    m->b[j] = old[i];
    m->used++;
  }
  free(old);
}

/* Where lsn is in b's list (an index from b->off), or would go. */
static uint32_t lsn_at(const struct ubucket *b, uint64_t lsn)
{
  const uint64_t *l = b->lsn + b->off;
  uint32_t lo = 0, hi = b->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (l[mid] < lsn)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void add(struct umap *m, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  grow(m);
  size_t i = slot_of(m, vol, pg, page);
  struct ubucket *b = &m->b[i];
  if (!b->used) {
    *b = (struct ubucket){vol, pg, page, NULL, 0, 0, 0, 1};
    m->used++;
  }
  uint32_t at = lsn_at(b, lsn);
  if (at < b->n && b->lsn[b->off + at] == lsn)
    return;                  /* put again (an adopted copy): one entry */
  if (b->off + b->n == b->cap) {
    if (b->off > 0) {        /* room freed at the front: move down */
      memmove(b->lsn, b->lsn + b->off, b->n * sizeof *b->lsn);
      b->off = 0;
    } else {
      b->cap = b->cap ? 2 * b->cap : 4;
      b->lsn = realloc(b->lsn, b->cap * sizeof *b->lsn);
    }
  }
  uint64_t *l = b->lsn + b->off;
  memmove(l + at + 1, l + at, (b->n - at) * sizeof *l);   /* nothing: LSNs come rising */
  l[at] = lsn;
  b->n++;
  m->entries++;
}

void store_umap_add(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  if (st->umap && st->umap->ready)
    add(st->umap, vol, pg, page, lsn);
}

void store_umap_del(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  struct umap *m = st->umap;
  if (m == NULL || !m->ready || m->cap == 0)
    return;
  struct ubucket *b = &m->b[slot_of(m, vol, pg, page)];
  if (!b->used)
    return;
  uint32_t at = lsn_at(b, lsn);
  uint64_t *l = b->lsn + b->off;
  if (at >= b->n || l[at] != lsn)
    return;
  /* Indexing and GC take a page's records oldest first: the front goes
   * in O(1). (A memmove of the rest, each time, made indexing 65,536
   * records of 8 pages take seconds: it_badinput under ASan.) */
  if (at == 0)
    b->off++;
  else
    memmove(l + at, l + at + 1, (b->n - at - 1) * sizeof *l);
  b->n--;
  if (b->n == 0)
    b->off = 0;
  if (--m->entries == 0)
    clear(m);                /* everything indexed or freed: start small again */
}

void store_umap_drop(struct store *st)
{
  if (st->umap && st->umap->ready) {
    clear(st->umap);
    st->umap->ready = 0;
  }
}

void store_umap_free(struct store *st)
{
  if (st->umap) {
    clear(st->umap);
    free(st->umap);
    st->umap = NULL;
  }
}

/* Build the map from unidx, through txn (Invariant U). */
static void build(struct store *st, struct kv_txn *txn)
{
  if (st->umap == NULL)
    st->umap = calloc(1, sizeof *st->umap);
  struct umap *m = st->umap;
  clear(m);
  struct kv_cursor *cur;
  struct kv_val key, val;
  if (kv_cursor(st->kv, txn, st->unidx, &cur) != 0)
    return;                  /* not ready: the caller scans */
  for (int rc = kv_cursor_get(st->kv, cur, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || val.len != 4)
      continue;              /* not ours: store_index drops it */
    const uint8_t *k = key.data;
    add(m, get_be64(k), get_be32(k + 8), get_be32(val.data), get_be64(k + 12));
  }
  kv_cursor_close(st->kv, cur);
  m->ready = 1;
}

int store_umap_get(struct store *st, struct kv_txn *txn, const struct segment *s,
                   uint32_t page_no, uint64_t after, uint64_t upto, uint64_t **v, size_t *n,
                   size_t *cap)
{
  if (st->umap == NULL || !st->umap->ready)
    build(st, txn);
  struct umap *m = st->umap;
  if (!m->ready)
    return -1;
  if (m->cap == 0)
    return 0;
  const struct ubucket *b = &m->b[slot_of(m, s->volume_id, s->pg, page_no)];
  if (!b->used)
    return 0;
  const uint64_t *l = b->lsn + b->off;
  for (uint32_t i = lsn_at(b, after + 1); i < b->n && l[i] <= upto; i++)
    lsn_push(v, n, cap, l[i]);
  return 0;
}
