/*
 * store_rcache.c: the record cache, a storage node's copy in memory of
 * the records it stored lately, decoded (paper Fig. 4: records are
 * coalesced and freed soon after they arrive, while they are still hot).
 *
 * A record arrives decoded (the Append's protobuf), is checked (its shape
 * against the segment, its CRC on arrival), and is packed into recs. Then,
 * a second or so later, coalescing reads it back to make a page version
 * and GC reads it back to find its page and backlink before freeing it:
 * each read was a kv get, a protobuf unpack (an allocation per field) and
 * a CRC over the record again. Those reads were a third of a busy node's
 * CPU (`auralog bench --profile`). The cache keeps, per (volume, pg, lsn),
 * one allocation holding the record as it was stored, so those reads cost
 * a hash probe.
 *
 * Invariant R: every record in the cache is, field for field, the record
 * recs holds under its key, as the open write transaction sees it (with
 * none open, as committed). The cache may lack any record (it is only a
 * cache: a miss reads the kv, as before), but never holds one the kv does
 * not, nor an older copy of one the kv replaced:
 *  - store_put_rec puts the copy it stored (replacing one there: an
 *    adopted record's new epoch), and remembers the key until the
 *    transaction ends; an abort or a failed kv commit removes every key
 *    the transaction put (the kv holds the older copy, or none, again);
 *  - every delete from recs removes its key: the page map's hooks
 *    (store_pmap.c) are where every delete is reported already (GC, a
 *    truncation, the scrub, a catch-up's jump, a dropped segment), and they
 *    call here; a delete that an abort undoes leaves the key out (a miss);
 *  - a load empties it, and so does a dropped segment while the page map
 *    is not ready (which records were the segment's is not known then);
 *  - it is memory: a crash takes it with the kv's unsynced commits.
 * The copies are records that were checked before they were stored
 * (seg_admit, wire_check, the hot log's replay), so a hit is checked
 * already. A record damaged on disk after it was stored is still served
 * right from here; the scrub, which reads the kv, finds and repairs it.
 *
 * At most RCACHE_BYTES are held: past that, new records are not copied
 * (reads of them go to the kv) until GC frees older ones.
 *
 * Its shape follows how records come and go. A segment's records arrive
 * in LSN order (gossip's fills of a hole and an adopted copy are the
 * exceptions), and GC frees them oldest first. So each segment has an
 * array of its cached LSNs, sorted, appended to at the end and freed at
 * the front, and its copies are cut one after another from chunks of
 * RCACHE_CHUNK bytes: a chunk is freed when the last copy in it goes.
 * A lookup is a binary search in one array, which GC and page builds
 * mostly walk in order (the last hit is tried first), and a record costs
 * no malloc or free of its own. (It was one hash table for the node and a
 * malloc per copy: the probes missed the CPU's caches and the frees
 * merged chunks of the heap, a tenth of a busy node's CPU, `auralog bench
 * --profile`.)
 */
#include <stdlib.h>
#include <string.h>

#include "node/store_int.h"
#include "param.h"

#define RCACHE_CHUNK (64u << 10)

/* Copies are cut from chunks in the order they are made; a chunk goes
 * when no copy in it is live and no more will be cut from it. */
struct rchunk {
  size_t used, cap;
  size_t live;               /* copies in it not yet removed */
  int open;                  /* its segment still cuts copies from it */
  _Alignas(16) uint8_t data[];
};

struct rent {
  uint64_t lsn;
  Rec *r;                    /* NULL: removed (skipped until compacted) */
  struct rchunk *ch;
  size_t size;               /* bytes of the copy */
};

/* One segment's cached records: e[head..n), sorted by LSN. */
struct rseg {
  uint64_t vol;
  uint32_t pg;
  int used;                  /* the slot holds this segment */
  struct rent *e;
  size_t head, n, cap;
  size_t hint;               /* where the last lookup ended */
  struct rchunk *cur;        /* where the next copy is cut */
};

struct rkey {
  uint64_t vol, lsn;
  uint32_t pg;
};

struct rcache {
  struct rseg *s;            /* open addressing by (volume, pg); never removed */
  size_t cap, nsegs;         /* slots (a power of two); slots used */
  size_t n;                  /* records held */
  size_t bytes;              /* of the chunks held */
  struct rkey *put;          /* keys put in the open write transaction */
  size_t nput, capput;
  /* Counters, for tests and status. */
  uint64_t hits, misses;
};

static size_t seg_slot(const struct rcache *c, uint64_t vol, uint32_t pg)
{
  uint64_t h = vol * 0x9e3779b97f4a7c15ull ^ (uint64_t)pg * 0xc2b2ae3d27d4eb4full;
  size_t i = (size_t)(h ^ h >> 29) & (c->cap - 1);
  while (c->s[i].used && !(c->s[i].vol == vol && c->s[i].pg == pg))
    i = (i + 1) & (c->cap - 1);
  return i;
}

/* The segment's entry, or NULL when none is there and add is 0. */
static struct rseg *seg_of(struct rcache *c, uint64_t vol, uint32_t pg, int add)
{
  if (c->cap) {
    struct rseg *g = &c->s[seg_slot(c, vol, pg)];
    if (g->used || !add)
      return g->used ? g : NULL;
  } else if (!add) {
    return NULL;
  }
  if (2 * (c->nsegs + 1) > c->cap) {
    struct rseg *old = c->s;
    size_t oldcap = c->cap;
    c->cap = oldcap ? 2 * oldcap : 64;
    c->s = calloc(c->cap, sizeof *c->s);
    if (c->s == NULL) {
      c->s = old;
      c->cap = oldcap;
      return NULL;
    }
    for (size_t i = 0; i < oldcap; i++)
      if (old[i].used)
        c->s[seg_slot(c, old[i].vol, old[i].pg)] = old[i];
    free(old);
  }
  struct rseg *g = &c->s[seg_slot(c, vol, pg)];
  *g = (struct rseg){.vol = vol, .pg = pg, .used = 1};
  c->nsegs++;
  return g;
}

/* Where lsn is in g's entries (an index in [head, n]), or would go. */
static size_t find(struct rseg *g, uint64_t lsn)
{
  size_t h = g->hint;
  if (h >= g->head && h < g->n && g->e[h].lsn == lsn)
    return h;
  if (h + 1 >= g->head && h + 1 < g->n && g->e[h + 1].lsn == lsn)
    return g->hint = h + 1;
  if (g->n > g->head && g->e[g->n - 1].lsn < lsn)
    return g->n;
  size_t lo = g->head, hi = g->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->e[mid].lsn < lsn)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < g->n)
    g->hint = lo;
  return lo;
}

static void chunk_put(struct rcache *c, struct rchunk *ch)
{
  if (ch->live == 0 && !ch->open) {
    c->bytes -= sizeof *ch + ch->cap;
    free(ch);
  }
}

/* Room for a copy of size bytes in g's chunk (16-byte aligned). */
static uint8_t *cut(struct rcache *c, struct rseg *g, size_t size, struct rchunk **chp)
{
  size = (size + 15) & ~(size_t)15;
  struct rchunk *ch = g->cur;
  if (ch == NULL || ch->cap - ch->used < size) {
    if (ch) {
      ch->open = 0;
      chunk_put(c, ch);
    }
    size_t cap = size > RCACHE_CHUNK ? size : RCACHE_CHUNK;
    g->cur = ch = malloc(sizeof *ch + cap);
    if (ch == NULL)
      return NULL;
    *ch = (struct rchunk){0, cap, 0, 1};
    c->bytes += sizeof *ch + cap;
  }
  uint8_t *p = ch->data + ch->used;
  ch->used += size;
  ch->live++;
  *chp = ch;
  return p;
}

/* Copy r into g's chunk: the Rec, its range and PgLast pointers and
 * structs, then the ranges' bytes, then a binlog record's events (issue
 * 29: Record.binlog; copied shallowly, it pointed into the Append that
 * brought it, freed after the turn). Never given to protobuf-c's
 * free_unpacked. */
static Rec *dup_rec(struct rcache *c, struct rseg *g, const Rec *r, size_t *size,
                    struct rchunk **chp)
{
  size_t n = sizeof(Rec) + r->n_ranges * (sizeof(Auralog__Range *) + sizeof(Auralog__Range)) +
             r->n_mtr * (sizeof(Auralog__PgLast *) + sizeof(Auralog__PgLast));
  for (size_t i = 0; i < r->n_ranges; i++)
    n += r->ranges[i]->data.len;
  n += r->binlog.len;
  uint8_t *p = cut(c, g, n, chp);
  if (p == NULL)
    return NULL;
  Rec *cp = (Rec *)p;
  *cp = *r;
  cp->base.n_unknown_fields = 0;
  cp->base.unknown_fields = NULL;
  p += sizeof(Rec);
  cp->ranges = r->n_ranges ? (Auralog__Range **)p : NULL;
  p += r->n_ranges * sizeof(Auralog__Range *);
  cp->mtr = r->n_mtr ? (Auralog__PgLast **)p : NULL;
  p += r->n_mtr * sizeof(Auralog__PgLast *);
  for (size_t i = 0; i < r->n_ranges; i++, p += sizeof(Auralog__Range)) {
    Auralog__Range *x = (Auralog__Range *)p;
    *x = *r->ranges[i];
    x->base.n_unknown_fields = 0;
    x->base.unknown_fields = NULL;
    cp->ranges[i] = x;
  }
  for (size_t i = 0; i < r->n_mtr; i++, p += sizeof(Auralog__PgLast)) {
    Auralog__PgLast *m = (Auralog__PgLast *)p;
    *m = *r->mtr[i];
    m->base.n_unknown_fields = 0;
    m->base.unknown_fields = NULL;
    cp->mtr[i] = m;
  }
  for (size_t i = 0; i < r->n_ranges; i++) {
    size_t len = r->ranges[i]->data.len;
    cp->ranges[i]->data.data = len ? p : NULL;
    if (len)
      memcpy(p, r->ranges[i]->data.data, len);
    p += len;
  }
  cp->binlog.data = r->binlog.len ? p : NULL;
  if (r->binlog.len)
    memcpy(p, r->binlog.data, r->binlog.len);
  *size = n;
  return cp;
}

/* Remove the copy in e[i]. The front moves past removed entries; the
 * array is compacted once they are half of it. */
static void remove_at(struct rcache *c, struct rseg *g, size_t i)
{
  struct rent *e = &g->e[i];
  struct rchunk *ch = e->ch;
  e->r = NULL;
  e->ch = NULL;
  c->n--;
  ch->live--;
  chunk_put(c, ch);
  while (g->head < g->n && g->e[g->head].r == NULL)
    g->head++;
  if (g->head == g->n) {
    g->head = g->n = g->hint = 0;
    /* No copy left: the segment's chunk goes too. An idle segment then
     * holds none, and a thousand PGs written once do not keep a chunk
     * each against RCACHE_BYTES (which would stop all caching). */
    if (g->cur && g->cur->live == 0) {
      c->bytes -= sizeof *g->cur + g->cur->cap;
      free(g->cur);
      g->cur = NULL;
    }
  } else if (i + 1 == g->n) {
    while (g->n > g->head && g->e[g->n - 1].r == NULL)
      g->n--;
  }
}

/* Drop the removed entries in e[head..n) and move the rest to the front. */
static void compact(struct rseg *g)
{
  size_t k = 0;
  for (size_t i = g->head; i < g->n; i++)
    if (g->e[i].r)
      g->e[k++] = g->e[i];
  g->head = 0;
  g->n = k;
  g->hint = 0;
}

static struct rcache *cache_of(struct store *st)
{
  if (st->rcache == NULL)
    st->rcache = calloc(1, sizeof *st->rcache);
  return st->rcache;
}

void store_rc_put(struct store *st, uint64_t vol, uint32_t pg, const Rec *r)
{
  struct rcache *c = cache_of(st);
  if (c == NULL)
    return;
  struct rseg *g = seg_of(c, vol, pg, 0);
  size_t at = g ? find(g, r->lsn) : 0;
  if (g && at < g->n && g->e[at].lsn == r->lsn && g->e[at].r)
    remove_at(c, g, at);     /* a copy there is older than this one: out first */
  if (c->bytes >= RCACHE_BYTES)
    return;                  /* full: this one is read from the kv */
  if (g == NULL && (g = seg_of(c, vol, pg, 1)) == NULL)
    return;
  at = find(g, r->lsn);
  if (at == g->n || g->e[at].lsn != r->lsn) {
    /* A new entry at at: room first (removed ones dropped when they are
     * half the array; the array doubled when full). */
    if (g->head > 0 && 2 * (g->n - g->head) < g->n) {   /* the front is mostly gone */
      compact(g);
      at = find(g, r->lsn);
    }
    if (g->n == g->cap) {
      if (g->head > 0) {
        compact(g);
        at = find(g, r->lsn);
      }
      if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 256;
        struct rent *e = realloc(g->e, cap * sizeof *e);
        if (e == NULL)
          return;
        g->e = e;
        g->cap = cap;
      }
    }
    memmove(&g->e[at + 1], &g->e[at], (g->n - at) * sizeof *g->e);   /* none: LSNs rise */
    g->e[at] = (struct rent){r->lsn, NULL, NULL, 0};
    g->n++;
  }
  size_t size;
  struct rchunk *ch;
  Rec *copy = dup_rec(c, g, r, &size, &ch);
  if (copy == NULL) {        /* out of memory: not cached; the entry goes */
    memmove(&g->e[at], &g->e[at + 1], (g->n - at - 1) * sizeof *g->e);
    g->n--;
    g->hint = g->head;
    return;
  }
  g->e[at] = (struct rent){r->lsn, copy, ch, size};
  g->hint = at;
  c->n++;
  if (st->txn) {             /* an abort removes it again */
    if (c->nput == c->capput) {
      size_t cap = c->capput ? 2 * c->capput : 256;
      struct rkey *p = realloc(c->put, cap * sizeof *p);
      if (p == NULL) {       /* cannot remember it: not cached (Invariant R) */
        remove_at(c, g, at);
        return;
      }
      c->put = p;
      c->capput = cap;
    }
    c->put[c->nput++] = (struct rkey){vol, r->lsn, pg};
  }
}

void store_rc_del(struct store *st, uint64_t vol, uint32_t pg, uint64_t lsn)
{
  struct rcache *c = st->rcache;
  if (c == NULL || c->n == 0)
    return;
  struct rseg *g = seg_of(c, vol, pg, 0);
  if (g == NULL)
    return;
  size_t at = find(g, lsn);
  if (at < g->n && g->e[at].lsn == lsn && g->e[at].r)
    remove_at(c, g, at);
}

const Rec *store_rc_get(struct store *st, uint64_t vol, uint32_t pg, uint64_t lsn)
{
  struct rcache *c = st->rcache;
  if (c == NULL || c->n == 0)
    return NULL;
  struct rseg *g = seg_of(c, vol, pg, 0);
  size_t at = g ? find(g, lsn) : 0;
  const Rec *r = g && at < g->n && g->e[at].lsn == lsn ? g->e[at].r : NULL;
  if (r)
    c->hits++;
  else
    c->misses++;
  return r;
}

void store_rc_commit(struct store *st)
{
  if (st->rcache)
    st->rcache->nput = 0;
}

void store_rc_abort(struct store *st)
{
  struct rcache *c = st->rcache;
  if (c == NULL)
    return;
  for (size_t i = 0; i < c->nput; i++)
    store_rc_del(st, c->put[i].vol, c->put[i].pg, c->put[i].lsn);
  c->nput = 0;
}

void store_rc_clear(struct store *st)
{
  struct rcache *c = st->rcache;
  if (c == NULL)
    return;
  for (size_t i = 0; i < c->cap; i++) {
    struct rseg *g = &c->s[i];
    if (!g->used)
      continue;
    for (size_t k = g->head; k < g->n; k++)
      if (g->e[k].r) {
        g->e[k].ch->live--;
        chunk_put(c, g->e[k].ch);
      }
    if (g->cur) {
      g->cur->open = 0;
      chunk_put(c, g->cur);
    }
    free(g->e);
  }
  free(c->s);
  c->s = NULL;
  c->cap = c->nsegs = c->n = c->nput = 0;
}

void store_rc_free(struct store *st)
{
  if (st->rcache) {
    store_rc_clear(st);
    free(st->rcache->put);
    free(st->rcache);
    st->rcache = NULL;
  }
}

void store_rc_stats(const struct store *st, size_t *n, size_t *bytes, uint64_t *hits,
                    uint64_t *misses)
{
  const struct rcache *c = st->rcache;
  *n = c ? c->n : 0;
  *bytes = c ? c->bytes : 0;
  *hits = c ? c->hits : 0;
  *misses = c ? c->misses : 0;
}

/* Are a and b the same record, field for field (the fields a page build,
 * GC and recovery read)? Bytes are no test: a bit flipped in a tag can
 * turn a field into an unknown one that decodes to the same values. */
static int same_rec(const Rec *a, const Rec *b)
{
  if (a->lsn != b->lsn || a->prev_lsn != b->prev_lsn || a->page_no != b->page_no ||
      a->flags != b->flags || a->crc != b->crc || a->epoch != b->epoch ||
      a->prev_cpl != b->prev_cpl || a->n_ranges != b->n_ranges || a->n_mtr != b->n_mtr ||
      a->binlog.len != b->binlog.len ||
      (a->binlog.len && memcmp(a->binlog.data, b->binlog.data, a->binlog.len) != 0))
    return 0;
  for (size_t i = 0; i < a->n_ranges; i++) {
    const Auralog__Range *x = a->ranges[i], *y = b->ranges[i];
    if (x->off != y->off || x->from != y->from || x->len != y->len ||
        x->data.len != y->data.len ||
        (x->data.len && memcmp(x->data.data, y->data.data, x->data.len) != 0))
      return 0;
  }
  for (size_t i = 0; i < a->n_mtr; i++)
    if (a->mtr[i]->pg != b->mtr[i]->pg || a->mtr[i]->lsn != b->mtr[i]->lsn)
      return 0;
  return 1;
}

/* For the tests and the simulator: Invariant R, checked. Each cached
 * record must be, field for field, what recs holds under its key, as a
 * read sees it now, unless the kv's copy is damaged (it fails to unpack
 * or its check: a simulated disk's fault; the cached copy is then the good
 * one, and the scrub mends the kv's). Returns how many are not (the first
 * said in why). */
size_t store_rc_check(struct store *st, char *why, size_t whylen)
{
  struct rcache *c = st->rcache;
  if (c == NULL || c->n == 0)
    return 0;
  struct kv_txn *txn;
  if (store_rtxn(st, &txn) != 0) {
    snprintf(why, whylen, "no transaction to check the record cache through");
    return 1;
  }
  size_t bad = 0;
  for (size_t i = 0; i < c->cap; i++) {
    const struct rseg *g = &c->s[i];
    if (!g->used)
      continue;
    for (size_t j = g->head; j < g->n; j++) {
      if (j > g->head && g->e[j].lsn <= g->e[j - 1].lsn && bad++ == 0)
        snprintf(why, whylen, "the record cache's volume %llu pg %u is out of LSN order "
                 "at %llu", (unsigned long long)g->vol, g->pg,
                 (unsigned long long)g->e[j].lsn);
      const Rec *cr = g->e[j].r;
      if (cr == NULL)
        continue;
      uint8_t k[20];
      rec_key(k, g->vol, g->pg, g->e[j].lsn);
      struct kv_val key = {sizeof k, k}, val;
      int rc = kv_get(st->kv, txn, st->recs, &key, &val);
      Rec *d = rc == 0 ? auralog__record__unpack(NULL, val.len, val.data) : NULL;
      char dwhy[160];
      int damaged = rc == 0 && (d == NULL || rec_check(d, UINT32_MAX, dwhy, sizeof dwhy) != ERR_NONE);
      if (!damaged && (rc != 0 || !same_rec(cr, d)) && bad++ == 0)
        snprintf(why, whylen, "the record cache holds volume %llu pg %u record %llu, "
                 "which the store %s", (unsigned long long)g->vol, g->pg,
                 (unsigned long long)g->e[j].lsn, rc != 0 ? "does not hold" : "holds otherwise");
      if (d)
        auralog__record__free_unpacked(d, NULL);
    }
  }
  store_rdone(st, txn);
  return bad;
}
