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
 */
#include <stdlib.h>
#include <string.h>

#include "node/store_int.h"
#include "param.h"

struct rslot {
  uint64_t vol, lsn;
  uint32_t pg;
  uint32_t size;             /* bytes of r's allocation */
  Rec *r;                    /* NULL: the slot is empty */
};

struct rkey {
  uint64_t vol, lsn;
  uint32_t pg;
};

struct rcache {
  struct rslot *s;
  size_t cap, n;             /* slots (a power of two); records held */
  size_t bytes;              /* of the records' allocations */
  struct rkey *put;          /* keys put in the open write transaction */
  size_t nput, capput;
  /* Counters, for tests and status. */
  uint64_t hits, misses;
};

static size_t hash(uint64_t vol, uint32_t pg, uint64_t lsn)
{
  uint64_t h = vol * 0x9e3779b97f4a7c15ull ^ (uint64_t)pg * 0xc2b2ae3d27d4eb4full ^
               lsn * 0x165667b19e3779f9ull;
  return (size_t)(h ^ h >> 29);
}

/* The slot holding the key, or the empty one where it would go. */
static size_t slot_of(const struct rcache *c, uint64_t vol, uint32_t pg, uint64_t lsn)
{
  size_t i = hash(vol, pg, lsn) & (c->cap - 1);
  while (c->s[i].r && !(c->s[i].lsn == lsn && c->s[i].pg == pg && c->s[i].vol == vol))
    i = (i + 1) & (c->cap - 1);
  return i;
}

static struct rcache *cache_of(struct store *st)
{
  if (st->rcache == NULL)
    st->rcache = calloc(1, sizeof *st->rcache);
  return st->rcache;
}

/* One allocation: the Rec, its range and PgLast pointers and structs, then
 * the ranges' bytes. Never given to protobuf-c's free_unpacked. */
static Rec *dup_rec(const Rec *r, size_t *size)
{
  size_t n = sizeof(Rec) + r->n_ranges * (sizeof(Auralog__Range *) + sizeof(Auralog__Range)) +
             r->n_mtr * (sizeof(Auralog__PgLast *) + sizeof(Auralog__PgLast));
  for (size_t i = 0; i < r->n_ranges; i++)
    n += r->ranges[i]->data.len;
  uint8_t *p = malloc(n);
  if (p == NULL)
    return NULL;
  Rec *c = (Rec *)p;
  *c = *r;
  c->base.n_unknown_fields = 0;
  c->base.unknown_fields = NULL;
  p += sizeof(Rec);
  c->ranges = r->n_ranges ? (Auralog__Range **)p : NULL;
  p += r->n_ranges * sizeof(Auralog__Range *);
  c->mtr = r->n_mtr ? (Auralog__PgLast **)p : NULL;
  p += r->n_mtr * sizeof(Auralog__PgLast *);
  for (size_t i = 0; i < r->n_ranges; i++, p += sizeof(Auralog__Range)) {
    Auralog__Range *g = (Auralog__Range *)p;
    *g = *r->ranges[i];
    g->base.n_unknown_fields = 0;
    g->base.unknown_fields = NULL;
    c->ranges[i] = g;
  }
  for (size_t i = 0; i < r->n_mtr; i++, p += sizeof(Auralog__PgLast)) {
    Auralog__PgLast *m = (Auralog__PgLast *)p;
    *m = *r->mtr[i];
    m->base.n_unknown_fields = 0;
    m->base.unknown_fields = NULL;
    c->mtr[i] = m;
  }
  for (size_t i = 0; i < r->n_ranges; i++) {
    size_t len = r->ranges[i]->data.len;
    c->ranges[i]->data.data = len ? p : NULL;
    if (len)
      memcpy(p, r->ranges[i]->data.data, len);
    p += len;
  }
  *size = n;
  return c;
}

/* Remove the record in slot i, shifting later ones of its run back so
 * that a probe never meets a hole before its key (linear probing). */
static void remove_at(struct rcache *c, size_t i)
{
  c->bytes -= c->s[i].size;
  c->n--;
  free(c->s[i].r);
  c->s[i].r = NULL;
  for (size_t j = (i + 1) & (c->cap - 1); c->s[j].r; j = (j + 1) & (c->cap - 1)) {
    size_t home = hash(c->s[j].vol, c->s[j].pg, c->s[j].lsn) & (c->cap - 1);
    /* s[j] may move to the hole at i if its home is not in (i, j]. */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      c->s[i] = c->s[j];
      c->s[j].r = NULL;
      i = j;
    }
  }
}

static void grow(struct rcache *c)
{
  if (c->cap && 2 * (c->n + 1) <= c->cap)
    return;
  struct rslot *old = c->s;
  size_t oldcap = c->cap;
  c->cap = oldcap ? 2 * oldcap : 1024;
  c->s = calloc(c->cap, sizeof *c->s);
  for (size_t i = 0; i < oldcap; i++)
    if (old[i].r)
      c->s[slot_of(c, old[i].vol, old[i].pg, old[i].lsn)] = old[i];
  free(old);
}

void store_rc_put(struct store *st, uint64_t vol, uint32_t pg, const Rec *r)
{
  struct rcache *c = cache_of(st);
  if (c->cap) {              /* a copy there is older than this one: out first */
    size_t i = slot_of(c, vol, pg, r->lsn);
    if (c->s[i].r)
      remove_at(c, i);
  }
  if (c->bytes >= RCACHE_BYTES)
    return;                  /* full: this one is read from the kv */
  size_t size;
  Rec *copy = dup_rec(r, &size);
  if (copy == NULL)
    return;
  grow(c);
  c->s[slot_of(c, vol, pg, r->lsn)] = (struct rslot){vol, r->lsn, pg, (uint32_t)size, copy};
  c->n++;
  c->bytes += size;
  if (st->txn) {             /* an abort removes it again */
    if (c->nput == c->capput) {
      c->capput = c->capput ? 2 * c->capput : 256;
      c->put = realloc(c->put, c->capput * sizeof *c->put);
    }
    c->put[c->nput++] = (struct rkey){vol, r->lsn, pg};
  }
}

void store_rc_del(struct store *st, uint64_t vol, uint32_t pg, uint64_t lsn)
{
  struct rcache *c = st->rcache;
  if (c == NULL || c->n == 0)
    return;
  size_t i = slot_of(c, vol, pg, lsn);
  if (c->s[i].r)
    remove_at(c, i);
}

const Rec *store_rc_get(struct store *st, uint64_t vol, uint32_t pg, uint64_t lsn)
{
  struct rcache *c = st->rcache;
  if (c == NULL || c->n == 0)
    return NULL;
  const Rec *r = c->s[slot_of(c, vol, pg, lsn)].r;
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
  for (size_t i = 0; i < c->cap; i++)
    free(c->s[i].r);
  free(c->s);
  c->s = NULL;
  c->cap = c->n = c->bytes = c->nput = 0;
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
      a->prev_cpl != b->prev_cpl || a->n_ranges != b->n_ranges || a->n_mtr != b->n_mtr)
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
    const struct rslot *e = &c->s[i];
    if (e->r == NULL)
      continue;
    uint8_t k[20];
    rec_key(k, e->vol, e->pg, e->lsn);
    struct kv_val key = {sizeof k, k}, val;
    int rc = kv_get(st->kv, txn, st->recs, &key, &val);
    Rec *d = rc == 0 ? auralog__record__unpack(NULL, val.len, val.data) : NULL;
    char dwhy[160];
    int damaged = rc == 0 && (d == NULL || rec_check(d, UINT32_MAX, dwhy, sizeof dwhy) != ERR_NONE);
    if (!damaged && (rc != 0 || !same_rec(e->r, d)) && bad++ == 0)
      snprintf(why, whylen, "the record cache holds volume %llu pg %u record %llu, "
               "which the store %s", (unsigned long long)e->vol, e->pg,
               (unsigned long long)e->lsn, rc != 0 ? "does not hold" : "holds otherwise");
    if (d)
      auralog__record__free_unpacked(d, NULL);
  }
  store_rdone(st, txn);
  return bad;
}
