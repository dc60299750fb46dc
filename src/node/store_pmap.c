/*
 * store_pmap.c: the page map, the store's index of records by page, in
 * memory only.
 *
 * Building a page (store_pages.c) needs the LSNs of that page's records
 * above its newest version; so do coalescing and GC. The record itself is
 * in recs, keyed by (volume, pg, lsn): LSN order, which is what a commit
 * appends to and what gossip and recovery walk. The page order lives here:
 * (volume, pg, page) -> the sorted LSNs of every record recs holds of that
 * page, one hash for the node.
 *
 * Why in memory. It was a kv database (pidx), first written with every
 * record (a random leaf per record: a group commit of ~110 records wrote
 * ~220 lmdb pages), then deferred through a second database of records
 * not yet indexed (unidx: a put per record, then a read, a delete and a
 * pidx put when indexed, two more deletes at GC). Five of a record's
 * seven kv operations were the index: lmdb was the largest part of a busy
 * node's CPU (perf, `auralog bench --profile`). The map costs a hash
 * probe per record and 8 bytes per record held; GC keeps the records a
 * node holds to those above its GC point.
 *
 * Invariant P: while the map is ready, it names exactly the records recs
 * holds that could be read when they were put or loaded, as the open
 * write transaction sees them (with none open, as committed):
 *  - every put adds (store_put_rec), every delete removes (GC, a
 *    truncation, the scrub, a dropped segment);
 *  - each change made in a write transaction is remembered until it ends:
 *    a commit forgets them, an abort or a failed commit undoes them, last
 *    first, so the map is again what the kv holds;
 *  - at start the map is empty and not ready; store_load fills it while it
 *    chains every segment (each record is unpacked there anyway) and makes
 *    it ready. A lookup on a map that is not ready (a store opened without
 *    store_load: tests, tools) builds it from recs through the lookup's
 *    transaction; if that is an open write transaction, its abort cannot
 *    tell which entries were its own, so it makes the map not ready again.
 * A record that cannot be read at load is not in the map: its page is
 * unknown. It is never served either: the segment's chain stops below it
 * (store_load.c), so no read point at or above it is answered here until a
 * good copy replaces it (a put, which adds it).
 *
 * Every delete from recs is reported here, so the record cache
 * (store_rcache.c, Invariant R) is told of each from here too, and is
 * emptied at a load.
 */
#include <stdlib.h>
#include <string.h>

#include "node/store_int.h"

struct pbucket {
  uint64_t vol;
  uint32_t pg, page;
  uint64_t *lsn;             /* lsn[off .. off + n), sorted */
  uint32_t off, n, cap;
  int used;                  /* the slot holds this key (n may be 0) */
};

/* A change made in the open write transaction, to undo on abort. */
struct pchange {
  uint64_t vol, lsn;
  uint32_t pg, page;
  int added;                 /* 1: added (undo deletes); 0: deleted (undo adds) */
};

struct pmap {
  int ready;
  int built_in_txn;          /* built through the open write transaction */
  struct pbucket *b;
  size_t cap, used;          /* slots; slots holding a key */
  size_t entries;            /* LSNs in all */
  struct pchange *undo;
  size_t nundo, capundo;
};

static size_t slot_of(const struct pmap *m, uint64_t vol, uint32_t pg, uint32_t page)
{
  uint64_t h = vol * 0x9e3779b97f4a7c15ull ^ (uint64_t)pg * 0xc2b2ae3d27d4eb4full ^
               (uint64_t)page * 0x165667b19e3779f9ull;
  size_t i = (size_t)(h ^ h >> 31) & (m->cap - 1);
  while (m->b[i].used &&
         !(m->b[i].vol == vol && m->b[i].pg == pg && m->b[i].page == page))
    i = (i + 1) & (m->cap - 1);
  return i;
}

static void clear(struct pmap *m)
{
  for (size_t i = 0; i < m->cap; i++)
    free(m->b[i].lsn);
  free(m->b);
  m->b = NULL;
  m->cap = m->used = m->entries = 0;
  m->nundo = 0;
}

/* Room for one more key: at most half full, counting only keys that
 * still hold LSNs (emptied pages are left behind here). */
static void grow(struct pmap *m)
{
  if (m->cap && 2 * (m->used + 1) <= m->cap)
    return;
  size_t live = 0;
  for (size_t i = 0; i < m->cap; i++)
    live += m->b[i].used && m->b[i].n > 0;
  struct pbucket *old = m->b;
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
static uint32_t lsn_at(const struct pbucket *b, uint64_t lsn)
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

/* Add (vol, pg, page, lsn); 1 if it was not there. */
static int add(struct pmap *m, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  grow(m);
  size_t i = slot_of(m, vol, pg, page);
  struct pbucket *b = &m->b[i];
  if (!b->used) {
    *b = (struct pbucket){vol, pg, page, NULL, 0, 0, 0, 1};
    m->used++;
  }
  /* LSNs come rising: past the last one it goes at the end, without the
   * binary search (a fifth of a put's CPU, `auralog bench --profile`). */
  uint32_t at = b->n == 0 || b->lsn[b->off + b->n - 1] < lsn ? b->n : lsn_at(b, lsn);
  if (at < b->n && b->lsn[b->off + at] == lsn)
    return 0;                /* put again (an adopted copy, a rechain): one entry */
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
  return 1;
}

/* Remove lsn from bucket b; 1 if it was there. */
static int del_in(struct pmap *m, struct pbucket *b, uint64_t lsn)
{
  uint32_t at = lsn_at(b, lsn);
  uint64_t *l = b->lsn + b->off;
  if (at >= b->n || l[at] != lsn)
    return 0;
  /* GC takes a page's records oldest first: the front goes in O(1). (A
   * memmove of the rest, each time, made taking 65,536 records of 8 pages
   * take seconds: it_badinput under ASan.) */
  if (at == 0)
    b->off++;
  else
    memmove(l + at, l + at + 1, (b->n - at - 1) * sizeof *l);
  b->n--;
  if (b->n == 0)
    b->off = 0;
  m->entries--;
  return 1;
}

static int del(struct pmap *m, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  if (m->cap == 0)
    return 0;
  struct pbucket *b = &m->b[slot_of(m, vol, pg, page)];
  return b->used ? del_in(m, b, lsn) : 0;
}

static void remember(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn,
                     int added)
{
  struct pmap *m = st->pmap;
  if (st->txn == NULL)
    return;                  /* not in a write transaction: nothing to undo */
  if (m->nundo == m->capundo) {
    m->capundo = m->capundo ? 2 * m->capundo : 256;
    m->undo = realloc(m->undo, m->capundo * sizeof *m->undo);
  }
  m->undo[m->nundo++] = (struct pchange){vol, lsn, pg, page, added};
}

static struct pmap *map_of(struct store *st)
{
  if (st->pmap == NULL)
    st->pmap = calloc(1, sizeof *st->pmap);
  return st->pmap;
}

void store_pmap_add(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  struct pmap *m = map_of(st);
  if (m->ready && add(m, vol, pg, page, lsn))
    remember(st, vol, pg, page, lsn, 1);
}

void store_pmap_del(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  struct pmap *m = map_of(st);
  store_rc_del(st, vol, pg, lsn);
  if (m->ready && del(m, vol, pg, page, lsn))
    remember(st, vol, pg, page, lsn, 0);
}

/* The buckets of segment s: looked up page by page when it has fewer
 * pages than the map has slots, else found by a walk of the map. A drop
 * of every segment of a node back after its repair (member.h M6) costs
 * its segments' pages, not the map's size each. Calls fn on each. */
static void seg_buckets(struct pmap *m, const struct segment *s,
                        int (*fn)(struct store *, struct pmap *, struct pbucket *, uint64_t),
                        struct store *st, uint64_t arg)
{
  if (!m->ready || m->cap == 0)
    return;
  if (s->npages < m->cap) {
    for (uint32_t i = 0; i < s->npages; i++) {
      struct pbucket *b = &m->b[slot_of(m, s->volume_id, s->pg, s->first_page + i)];
      if (b->used && b->n > 0 && fn(st, m, b, arg))
        return;
    }
    return;
  }
  for (size_t i = 0; i < m->cap; i++) {
    struct pbucket *b = &m->b[i];
    if (b->used && b->vol == s->volume_id && b->pg == s->pg && b->n > 0 && fn(st, m, b, arg))
      return;
  }
}

static int del_from(struct store *st, struct pmap *m, struct pbucket *b, uint64_t lsn)
{
  if (!del_in(m, b, lsn))
    return 0;
  remember(st, b->vol, b->pg, b->page, lsn, 0);
  return 1;                  /* found: stop */
}

static int empty_bucket(struct store *st, struct pmap *m, struct pbucket *b, uint64_t unused)
{
  (void)unused;
  while (b->n > 0) {
    uint64_t lsn = b->lsn[b->off + b->n - 1];
    del_in(m, b, lsn);
    store_rc_del(st, b->vol, b->pg, lsn);
    remember(st, b->vol, b->pg, b->page, lsn, 0);
  }
  return 0;                  /* on to the next */
}

void store_pmap_del_lsn(struct store *st, const struct segment *s, uint64_t lsn)
{
  /* Its page cannot be read any more (damage): look in every page of the
   * segment. Rare (the scrub, a truncation, a catch-up meeting damage). */
  store_rc_del(st, s->volume_id, s->pg, lsn);
  seg_buckets(map_of(st), s, del_from, st, lsn);
}

void store_pmap_drop_seg(struct store *st, const struct segment *s)
{
  struct pmap *m = map_of(st);
  if (!m->ready)
    store_rc_clear(st);      /* its records are not listed here: forget every one */
  seg_buckets(m, s, empty_bucket, st, 0);
}

void store_pmap_commit(struct store *st)
{
  store_rc_commit(st);
  if (st->pmap) {
    st->pmap->nundo = 0;
    st->pmap->built_in_txn = 0;
  }
}

void store_pmap_abort(struct store *st)
{
  struct pmap *m = st->pmap;
  store_rc_abort(st);        /* Invariant R: what it put is not in the kv */
  if (m == NULL || !m->ready)
    return;
  if (m->built_in_txn) {     /* which entries were the transaction's is unknown */
    clear(m);
    m->ready = m->built_in_txn = 0;
    return;
  }
  for (size_t i = m->nundo; i > 0; i--) {
    const struct pchange *c = &m->undo[i - 1];
    if (c->added)
      del(m, c->vol, c->pg, c->page, c->lsn);
    else
      add(m, c->vol, c->pg, c->page, c->lsn);
  }
  m->nundo = 0;
}

void store_pmap_reset(struct store *st)
{
  struct pmap *m = map_of(st);
  clear(m);
  m->ready = m->built_in_txn = 0;
  store_rc_clear(st);        /* a load: the kv is read afresh (Invariant R) */
}

void store_pmap_loaded(struct store *st)
{
  struct pmap *m = map_of(st);
  m->ready = 1;
  m->nundo = 0;
}

void store_pmap_note(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn)
{
  /* At load, and when a rechain meets what recs holds: not a change of
   * the transaction's, so nothing to undo (add is a no-op if present). */
  add(map_of(st), vol, pg, page, lsn);
}

void store_pmap_free(struct store *st)
{
  store_rc_free(st);
  if (st->pmap) {
    clear(st->pmap);
    free(st->pmap->undo);
    free(st->pmap);
    st->pmap = NULL;
  }
}

/* Build the map from every readable record of recs, through txn. */
static void build(struct store *st, struct kv_txn *txn)
{
  struct pmap *m = map_of(st);
  clear(m);
  struct kv_cursor *cur;
  struct kv_val key, val;
  if (kv_cursor(st->kv, txn, st->recs, &cur) != 0)
    return;                  /* not ready: the lookup finds nothing this time */
  for (int rc = kv_cursor_get(st->kv, cur, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20)
      continue;
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    if (r == NULL)
      continue;              /* unreadable: not served (store_load.c) */
    const uint8_t *k = key.data;
    add(m, get_be64(k), get_be32(k + 8), r->page_no, get_be64(k + 12));
    auralog__record__free_unpacked(r, NULL);
  }
  kv_cursor_close(st->kv, cur);
  m->ready = 1;
  m->nundo = 0;
  m->built_in_txn = txn == st->txn && txn != NULL;
}

int store_pmap_get(struct store *st, struct kv_txn *txn, const struct segment *s,
                   uint32_t page_no, uint64_t after, uint64_t upto, uint64_t **v, size_t *n,
                   size_t *cap)
{
  struct pmap *m = map_of(st);
  if (!m->ready)
    build(st, txn);
  if (!m->ready)
    return -1;
  if (m->cap == 0)
    return 0;
  const struct pbucket *b = &m->b[slot_of(m, s->volume_id, s->pg, page_no)];
  if (!b->used)
    return 0;
  const uint64_t *l = b->lsn + b->off;
  for (uint32_t i = lsn_at(b, after + 1); i < b->n && l[i] <= upto; i++)
    lsn_push(v, n, cap, l[i]);
  return 0;
}
