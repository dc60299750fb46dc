/*
 * store_pages.c: page versions on a storage node (paper §3.3, Figure 4
 * steps 5 and 7): reading a page as of a point, coalescing records into
 * new page versions, and freeing what no reader can need (GC).
 *
 * A page version ("image") is the page with every one of its records up
 * to some LSN applied. It is stored under (volume, pg, page, P), P being
 * the LSN of the newest record it holds, so that the version as of any
 * point R >= P with no record of the page in (P, R] is that image itself.
 * Its value is the page's bytes and then a sum (lib/sum.h) over the 24-byte key and
 * those bytes: a damaged version, or one stored under another page's or
 * LSN's key, is never served.
 *
 * A page as of a point R is its newest version at or below R, plus its
 * records in (version, R] applied in LSN order (page_build, record.h).
 * Coalescing (store_coalesce) writes a new version at the newest record
 * at or below a point, so that reads apply few records: a page gets a new
 * version after COALESCE_RECS records, so a read at a point at or above
 * the newest version applies at most COALESCE_RECS records plus those
 * that came since the coalescer last ran (node/bg.c says when).
 *
 * GC (store_gc) moves the segment's gc_lsn up to a point every reader has
 * passed (the PGMRPL, bounded by bg.c): every page with a record at or
 * below it first gets a version at its newest such record, then those
 * records and every older version are deleted. After that the segment
 * keeps exactly: for each page, its newest version at or below gc_lsn,
 * the versions above gc_lsn that coalescing made, and every record above
 * gc_lsn. The chain of backlinks (segment.h) now starts at gc_lsn.
 *
 * Rules kept here:
 *  - A version is made only from records at or below the segment's own
 *    point (bg.c own_point): a record of the writer's chain at or below
 *    its VDL that this segment holds on its chain, so below it the
 *    segment holds the PG's chain exactly, and no truncation ever cuts
 *    there (a truncation starts at a recovery's VDL, at least any VDL a
 *    writer announced). Not min(SCL, VDL heard): a segment that missed a
 *    recovery may hold, below that VDL, a branch the recovery cut. So no
 *    version holds a record a truncation cuts, and a truncation never has
 *    to take a version (a version fetched from a peer is the only copy).
 *  - A read never returns a page built on a missing or damaged version: a
 *    page whose bit in `imaged` is set must find a version at or below the
 *    read point, and a damaged newest version is reported, not skipped
 *    (skipping it would serve an older page with no error, the bug this
 *    file exists to prevent). Reads below gc_lsn, or below a page's floor
 *    (a version fetched from a peer left none below it), are refused: the
 *    engine asks another segment.
 *  - GC frees nothing above the point it is given, and stops before a
 *    record it cannot read or one off the chain: what it deletes is only
 *    ever what a version made in the same transaction holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "lib/log.h"
#include "lib/sum.h"
#include "node/store_int.h"
#include "param.h"

uint32_t store_img_crc(const uint8_t key[24], const uint8_t *page, uint32_t len)
{
  struct sum c;
  sum_init(&c);
  sum_bytes(&c, key, 24);
  sum_bytes(&c, page, len);
  return sum_end(&c);
}

/* Is (key, val) a whole version of a page of s? */
static int img_ok(const struct segment *s, const struct kv_val *key, const struct kv_val *val)
{
  if (key->len != 24 || val->len != (size_t)s->page_size + 4)
    return 0;
  const uint8_t *v = val->data;
  return get_be32(v + s->page_size) == store_img_crc(key->data, v, s->page_size);
}

/* The newest version of page_no at or below upto: 1 (*img, *img_lsn set),
 * 0 none, -1 the newest is damaged (*img_lsn: its LSN). */
static int find_image(struct store *st, struct kv_txn *txn, const struct segment *s,
                      uint32_t page_no, uint64_t upto, struct kv_val *img,
                      uint64_t *img_lsn)
{
  uint8_t k[24];
  page_key(k, s->volume_id, s->pg, page_no, upto);
  struct kv_cursor *cur;
  struct kv_val key = {sizeof k, k};
  if (kv_cursor(st->kv, txn, st->imgs, &cur) != 0)
    return 0;
  int rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, img);
  if (rc == 0 && (key.len != 24 || memcmp(key.data, k, 24) != 0))
    rc = kv_cursor_get(st->kv, cur, KV_PREV, &key, img);
  else if (rc == KV_NOTFOUND)
    rc = kv_cursor_get(st->kv, cur, KV_LAST, &key, img);
  int found = 0;
  if (rc == 0 && key.len >= 16 && memcmp(key.data, k, 16) == 0) {
    *img_lsn = key.len == 24 ? get_be64((uint8_t *)key.data + 16) : 0;
    found = img_ok(s, &key, img) ? 1 : -1;
  }
  kv_cursor_close(st->kv, cur);
  return found;
}

int store_put_image(struct store *st, struct segment *s, uint32_t page_no, uint64_t lsn,
                    const uint8_t *page, char *why, size_t whylen)
{
  uint8_t k[24];
  page_key(k, s->volume_id, s->pg, page_no, lsn);
  struct kv_val key = {sizeof k, k}, val = {(size_t)s->page_size + 4, NULL};
  int rc = kv_put(st->kv, st->txn, st->imgs, &key, &val, KV_RESERVE);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "storing a page version");
  memcpy(val.data, page, s->page_size);
  put_be32((uint8_t *)val.data + s->page_size, store_img_crc(k, page, s->page_size));
  s->nimgs++;
  s->bytes += val.len;
  if (s->oldest_img == 0 || lsn < s->oldest_img)
    s->oldest_img = lsn;
  return 0;
}

/* The LSNs of page_no's records in (after, upto], in order, into *out
 * (malloc'd): the page map's (store_pmap.c, Invariant P). -1 if the map
 * cannot be built (a kv error): never a page built without its records. */
static long page_lsns(struct store *st, struct kv_txn *txn, const struct segment *s,
                      uint32_t page_no, uint64_t after, uint64_t upto, uint64_t **out)
{
  uint64_t *v = NULL;
  size_t n = 0, cap = 0;
  *out = NULL;
  if (store_pmap_get(st, txn, s, page_no, after, upto, &v, &n, &cap) != 0) {
    free(v);
    return -1;
  }
  *out = v;
  return (long)n;
}

/* Page page_no as of point into out, through txn: see the top. Returns 0
 * (*page_lsn, *applied: records applied), ERR_NOT_COMPLETE (this segment
 * cannot build it: below its GC point or the page's floor; *damaged set
 * if the reason is damage), or ERR_INTERNAL (a damaged record). */
static int build(struct store *st, struct kv_txn *txn, const struct segment *s,
                 uint32_t page_no, uint64_t point, uint8_t *out, uint64_t *page_lsn,
                 unsigned *applied, int *damaged, char *why, size_t whylen)
{
  uint32_t i = page_no - s->first_page;
  *applied = 0;
  *damaged = 0;
  if (point < s->gc_lsn || point < seg_floor(s, i)) {
    snprintf(why, whylen, "page %u is kept here only as of %llu and later (asked as of "
             "%llu): try another segment", page_no,
             (unsigned long long)(point < s->gc_lsn ? s->gc_lsn : seg_floor(s, i)),
             (unsigned long long)point);
    return ERR_NOT_COMPLETE;
  }
  struct kv_val img = {0, NULL};
  uint64_t base_lsn = 0;
  int f = find_image(st, txn, s, page_no, point, &img, &base_lsn);
  if (PLANTED(BUG_STALE_VERSION) && f < 0)
    f = 0;                  /* the bug this file exists to prevent, for the tests */
  if (f < 0 || (f == 0 && seg_imaged(s, i) && !PLANTED(BUG_STALE_VERSION))) {
    *damaged = 1;
    snprintf(why, whylen, "page %u: its version %s%llu here is %s: try another segment",
             page_no, f < 0 ? "" : "at or below ",
             (unsigned long long)(f < 0 ? base_lsn : point),
             f < 0 ? "damaged" : "missing");
    return ERR_NOT_COMPLETE;
  }
  uint64_t *lsns = NULL;
  long got = page_lsns(st, txn, s, page_no, f ? base_lsn : 0, point, &lsns);
  if (got < 0) {
    snprintf(why, whylen, "page %u: the page map cannot be built (a storage error): try "
             "another segment", page_no);
    return ERR_INTERNAL;
  }
  size_t nl = (size_t)got;
  Rec **recs = calloc(nl + 1, sizeof *recs);
  uint8_t *owned = calloc(nl + 1, 1);   /* unpacked here: freed here */
  size_t n = 0;
  int rc = 0;
  for (size_t li = 0; li < nl; li++) {
    /* Invariant R (store_rcache.c): a cached record is the one recs holds,
     * checked when it was stored. */
    const Rec *hit = store_rc_get(st, s->volume_id, s->pg, lsns[li]);
    if (hit) {
      recs[n++] = (Rec *)hit;
      continue;
    }
    uint8_t rk[20];
    rec_key(rk, s->volume_id, s->pg, lsns[li]);
    struct kv_val rkey = {sizeof rk, rk}, rval;
    Rec *r = NULL;
    if (kv_get(st->kv, txn, st->recs, &rkey, &rval) == 0)
      r = auralog__record__unpack(NULL, rval.len, rval.data);
    char rwhy[160];
    if (r == NULL || rec_check(r, s->page_size, rwhy, sizeof rwhy) != ERR_NONE) {
      snprintf(why, whylen, "stored record %llu of page %u is damaged",
               (unsigned long long)lsns[li], page_no);
      if (r)
        auralog__record__free_unpacked(r, NULL);
      *damaged = 1;
      rc = ERR_INTERNAL;
      break;
    }
    owned[n] = 1;
    recs[n++] = r;
  }
  free(lsns);
  if (rc == 0) {
    *page_lsn = page_build(out, s->page_size, f ? img.data : NULL, f ? base_lsn : 0,
                           recs, n, point);
    *applied = (unsigned)n;
  }
  for (size_t j = 0; j < n; j++)
    if (owned[j])
      auralog__record__free_unpacked(recs[j], NULL);
  free(owned);
  free(recs);
  return rc;
}

int store_read_page(struct store *st, const struct segment *s, uint32_t page_no,
                    uint64_t read_point, uint8_t *out, uint64_t *page_lsn,
                    char *why, size_t whylen)
{
  struct kv_txn *txn;       /* st->txn sees this turn's writes: all above the SCL */
  int rc = store_rtxn(st, &txn);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "reading a page");
  int damaged;
  rc = build(st, txn, s, page_no, read_point, out, page_lsn, &st->last_applied,
             &damaged, why, whylen);
  st->last_damaged = damaged;
  store_rdone(st, txn);
  return rc;
}

int store_coalesce(struct store *st, struct segment *s, uint32_t page_no, uint64_t upto,
                   int *made, char *why, size_t whylen)
{
  *made = 0;
  uint8_t *page = malloc(s->page_size);
  uint64_t page_lsn = 0, have = 0;
  unsigned applied;
  int damaged;
  int rc = build(st, st->txn, s, page_no, upto, page, &page_lsn, &applied, &damaged,
                 why, whylen);
  struct kv_val img;
  if (rc == 0 && applied > 0 &&
      (find_image(st, st->txn, s, page_no, upto, &img, &have) != 1 || have < page_lsn)) {
    rc = store_put_image(st, s, page_no, page_lsn, page, why, whylen);
    *made = rc == 0;
  }
  free(page);
  return rc;
}

uint32_t store_unmat(struct store *st, const struct segment *s, uint32_t page_no)
{
  struct kv_txn *txn;
  if (store_rtxn(st, &txn) != 0)
    return 0;
  struct kv_val img;
  uint64_t have = 0;
  if (find_image(st, txn, s, page_no, UINT64_MAX, &img, &have) != 1)
    have = 0;
  uint64_t *lsns = NULL;
  long n = page_lsns(st, txn, s, page_no, have, UINT64_MAX, &lsns);
  free(lsns);
  store_rdone(st, txn);
  return n < 0 ? 0 : (uint32_t)n;
}

/* Delete page_no's versions below keep, in the open write transaction. */
static int drop_older(struct store *st, struct segment *s, uint32_t page_no, uint64_t keep,
                      size_t *dropped)
{
  uint8_t k[24];
  page_key(k, s->volume_id, s->pg, page_no, 0);
  struct kv_val key = {sizeof k, k}, val;
  struct kv_cursor *cur;
  int rc = kv_cursor(st->kv, st->txn, st->imgs, &cur);
  if (rc != 0)
    return rc;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;) {
    if (key.len != 24 || memcmp(key.data, k, 16) != 0)
      break;
    uint64_t lsn = get_be64((uint8_t *)key.data + 16);
    if (lsn >= keep)
      break;
    size_t len = val.len;
    if ((rc = kv_cursor_del(st->kv, cur)) != 0)
      break;
    (*dropped)++;
    s->nimgs -= s->nimgs > 0;
    s->bytes -= s->bytes >= len ? len : s->bytes;
    rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val);
  }
  kv_cursor_close(st->kv, cur);
  return rc == KV_NOTFOUND ? 0 : rc;
}

/* How many of page_no's records lie above after (in the open write
 * transaction, or a read one). */
static uint32_t page_count(struct store *st, const struct segment *s, uint32_t page_no,
                           uint64_t after)
{
  struct kv_txn *txn;
  if (store_rtxn(st, &txn) != 0)
    return 0;
  uint64_t *lsns = NULL;
  long n = page_lsns(st, txn, s, page_no, after, UINT64_MAX, &lsns);
  free(lsns);
  store_rdone(st, txn);
  return n < 0 ? 0 : (uint32_t)n;
}

int store_drop_versions(struct store *st, struct segment *s, uint32_t page_no,
                        uint64_t below, size_t *dropped, char *why, size_t whylen)
{
  *dropped = 0;
  int rc = drop_older(st, s, page_no, below, dropped);
  return rc ? store_fail(st, rc, why, whylen, "dropping page versions") : 0;
}

int store_gc(struct store *st, struct segment *s, uint64_t upto, size_t max,
             size_t *nrecs, size_t *nimgs, char *why, size_t whylen)
{
  *nrecs = *nimgs = 0;
  if (upto > s->scl)
    upto = s->scl;
  if (upto <= s->gc_lsn)
    return 0;
  /* The records to free: on the chain from gc_lsn, at most max of them. */
  struct victim { uint64_t lsn; uint32_t page; size_t len; } *v = NULL;
  size_t n = 0, cap = 0;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, s->gc_lsn + 1);
  struct kv_val key = {sizeof k, k}, val;
  struct kv_cursor *cur;
  int rc = kv_cursor(st->kv, st->txn, st->recs, &cur);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "freeing records");
  uint64_t prev = s->gc_lsn;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0 && n < max;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    uint64_t lsn = get_be64((uint8_t *)key.data + 12);
    if (lsn > upto)
      break;
    /* Its page and backlink: from the cache (Invariant R), else unpacked
     * and checked. */
    const Rec *hit = store_rc_get(st, s->volume_id, s->pg, lsn);
    Rec *r = hit ? NULL : auralog__record__unpack(NULL, val.len, val.data);
    char rwhy[160];
    int ok = hit ? hit->prev_lsn == prev
                 : r && rec_check(r, s->page_size, rwhy, sizeof rwhy) == ERR_NONE &&
                       r->prev_lsn == prev;
    uint32_t page = !ok ? 0 : hit ? hit->page_no : r->page_no;
    if (r)
      auralog__record__free_unpacked(r, NULL);
    if (!ok)
      break;                 /* the scrub's to deal with; free nothing past it */
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      v = realloc(v, cap * sizeof *v);
    }
    v[n++] = (struct victim){lsn, page, val.len};
    prev = lsn;
  }
  kv_cursor_close(st->kv, cur);
  if (n == 0) {
    free(v);
    return 0;
  }
  uint64_t gc = v[n - 1].lsn;
  /* Every page they touch gets its version as of gc first, in page order.
   * A bit per page of the PG, not a sort of n page numbers: n is often
   * thousands (every record since the last round) for a PG of 256 pages.
   * Every record was admitted inside the PG (seg_admit, segment.c); one
   * outside it would be skipped here, never indexed past the PG's arrays. */
  uint64_t *touched = calloc((s->npages + 63) / 64 + 1, sizeof *touched);
  if (touched == NULL) {
    free(v);
    return store_fail(st, ENOMEM, why, whylen, "freeing records");
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t pi = v[i].page - s->first_page;
    if (pi < s->npages)
      touched[pi / 64] |= 1ull << (pi % 64);
  }
  rc = 0;
  for (uint32_t pi = 0; pi < s->npages && rc == 0; pi++) {
    if (!(touched[pi / 64] >> (pi % 64) & 1))
      continue;
    uint32_t p = s->first_page + pi;
    if (seg_floor(s, pi) > gc)
      continue;              /* no version at gc here (one above it came from a peer) */
    int made;
    rc = store_coalesce(st, s, p, gc, &made, why, whylen);
    if (rc == ERR_NOT_COMPLETE) {
      /* Its version is damaged or missing: below it nothing can be
       * served from here until a peer's copy comes (bg.c repairs it). */
      if (s->floor == NULL)
        s->floor = calloc(s->npages, sizeof *s->floor);
      s->floor[pi] = UINT64_MAX;
      st->met_damage++;
      logwarn_rl("volume %llu pg %u: %s (found freeing to %llu; fetched again from a PG "
                 "peer)", (unsigned long long)s->volume_id, s->pg, why,
                 (unsigned long long)gc);
      rc = 0;
      continue;
    }
    if (rc != 0)
      break;
    st->gc_made += (uint64_t)made;
    struct kv_val img;
    uint64_t at = 0;
    if (find_image(st, st->txn, s, p, gc, &img, &at) == 1) {
      size_t dropped = 0;
      if ((rc = drop_older(st, s, p, at, &dropped)) != 0) {
        store_fail(st, rc, why, whylen, "freeing page versions");
        break;
      }
      *nimgs += dropped;
      if (s->unmat) {        /* what lies above its version now */
        uint32_t left = page_count(st, s, p, at);
        s->unmat[pi] = (uint16_t)(left > 0xffff ? 0xffff : left);
      }
      if (s->imaged == NULL)
        s->imaged = calloc((s->npages + 7) / 8, 1);
      s->imaged[pi / 8] |= (uint8_t)(1u << (pi % 8));
    }
  }
  free(touched);
  /* Then the records themselves, from every database that names them.
   * They are consecutive keys (the walk above took every key from
   * gc_lsn + 1 on, and versions live in another database), so one cursor
   * deletes them in turn, each where the last left it, rather than a
   * search from the root per record. A key that is not the next victim
   * (nothing makes one today) is looked up instead: what is deleted is
   * exactly v[], whatever lies between. */
  struct kv_cursor *dc = NULL;
  if (rc == 0 && (rc = kv_cursor(st->kv, st->txn, st->recs, &dc)) != 0)
    store_fail(st, rc, why, whylen, "freeing records");
  for (size_t i = 0; i < n && rc == 0; i++) {
    uint8_t rk[20];
    rec_key(rk, s->volume_id, s->pg, v[i].lsn);
    struct kv_val rkey = {sizeof rk, rk}, cval;
    store_pmap_del(st, s->volume_id, s->pg, v[i].page, v[i].lsn);
    rc = kv_cursor_get(st->kv, dc, i == 0 ? KV_SEEK : KV_NEXT, &rkey, &cval);
    if (rc == 0 && (rkey.len != sizeof rk || memcmp(rkey.data, rk, sizeof rk) != 0)) {
      rkey = (struct kv_val){sizeof rk, rk};
      rc = kv_cursor_get(st->kv, dc, KV_SEEK, &rkey, &cval);
      if (rc == 0 && (rkey.len != sizeof rk || memcmp(rkey.data, rk, sizeof rk) != 0))
        rc = KV_NOTFOUND;
    }
    if (rc == 0)
      rc = kv_cursor_del(st->kv, dc);
    if (rc != 0) {
      store_fail(st, rc, why, whylen, "freeing records");
      break;
    }
    s->nrecs -= s->nrecs > 0;
    s->bytes -= s->bytes >= v[i].len ? v[i].len : s->bytes;
  }
  if (dc)
    kv_cursor_close(st->kv, dc);
  free(v);
  if (rc != 0)
    return rc == ERR_NOT_COMPLETE ? ERR_INTERNAL : rc;
  s->gc_lsn = gc;
  /* Truncations wholly at or below gc are forgotten (seg_has_trunc counts
   * them held), but for the newest epoch's: its writer names it in every
   * read and in its first Appends; and but for one a kept newer one rests
   * on (it starts below its end: the newer one's end may be LAL past it,
   * segment.c B2), so that gossip passes the two on together and a peer
   * that has neither takes both. */
  uint64_t newest = 0;
  for (size_t i = 0; i < s->ntruncs; i++)
    if (s->truncs[i].epoch > newest)
      newest = s->truncs[i].epoch;
  uint8_t *keep = calloc(s->ntruncs + 1, 1);
  for (size_t i = 0; i < s->ntruncs; i++)
    keep[i] = s->truncs[i].to > gc || s->truncs[i].epoch == newest;
  for (int more = 1; more;) {              /* a chain of them: a few at most */
    more = 0;
    for (size_t i = 0; i < s->ntruncs; i++)
      for (size_t j = 0; j < s->ntruncs && !keep[i]; j++)
        if (keep[j] && s->truncs[j].epoch > s->truncs[i].epoch &&
            s->truncs[j].from < s->truncs[i].to)
          keep[i] = more = 1;
  }
  size_t kept = 0;
  for (size_t i = 0; i < s->ntruncs; i++)
    if (keep[i])
      s->truncs[kept++] = s->truncs[i];
  s->ntruncs = kept;
  free(keep);
  kept = 0;                  /* forgotten ones (rule TF) the GC point covers now */
  for (size_t i = 0; i < s->ntombs; i++)
    if (s->tombs[i].to > gc)
      s->tombs[kept++] = s->tombs[i];
  s->ntombs = kept;
  /* A floor at or below gc is moot: the version as of gc is here (the
   * one fetched at the floor, or one coalesced since). */
  if (s->floor)
    for (uint32_t i = 0; i < s->npages; i++)
      if (s->floor[i] && s->floor[i] <= gc) {
        s->floor[i] = 0;
        if (s->imaged == NULL)
          s->imaged = calloc((s->npages + 7) / 8, 1);
        s->imaged[i / 8] |= (uint8_t)(1u << (i % 8));
      }
  *nrecs = n;
  return 0;
}

int store_jump(struct store *st, struct segment *s, uint64_t to, char *why, size_t whylen)
{
  /* Every record at or below `to`: what the fetched versions hold. */
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, 1);
  struct kv_val key = {sizeof k, k}, val;
  struct kv_cursor *cur;
  int rc = kv_cursor(st->kv, st->txn, st->recs, &cur);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "catching up");
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    uint64_t lsn = get_be64((uint8_t *)key.data + 12);
    if (lsn > to)
      break;
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    if (r) {
      store_pmap_del(st, s->volume_id, s->pg, r->page_no, lsn);
      auralog__record__free_unpacked(r, NULL);
    } else {
      store_pmap_del_lsn(st, s, lsn);
    }
    s->bytes -= s->bytes >= val.len ? val.len : s->bytes;
    s->nrecs -= s->nrecs > 0;
    if ((rc = kv_cursor_del(st->kv, cur)) != 0)
      break;
    rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val);
  }
  kv_cursor_close(st->kv, cur);
  if (rc != 0 && rc != KV_NOTFOUND)
    return store_fail(st, rc, why, whylen, "catching up");
  /* Each page keeps its newest version at or below `to` (the fetched
   * one) and those above; older ones go. */
  if (s->imaged == NULL)
    s->imaged = calloc((s->npages + 7) / 8, 1);
  for (uint32_t i = 0; i < s->npages; i++) {
    struct kv_val img;
    uint64_t at = 0;
    int f = find_image(st, st->txn, s, s->first_page + i, to, &img, &at);
    if (f == 1) {
      size_t dropped = 0;
      if ((rc = drop_older(st, s, s->first_page + i, at, &dropped)) != 0)
        return store_fail(st, rc, why, whylen, "catching up");
      s->imaged[i / 8] |= (uint8_t)(1u << (i % 8));
    } else {
      s->imaged[i / 8] &= (uint8_t)~(1u << (i % 8));
    }
    if (s->floor && s->floor[i] <= to)
      s->floor[i] = 0;
  }
  s->gc_lsn = to;
  return 0;
}
