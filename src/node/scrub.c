/*
 * scrub.c: the storage node's scrub (paper §3.3, Figure 4 step 8): a
 * background pass that re-reads what the node stores and checks it, so
 * that damage (bit rot, a lost lmdb key, a torn page) is found before a
 * reader meets it, and is repaired from the PG's other segments.
 *
 * One slice every SCRUB_MS (bg.c calls scrub_step): up to SCRUB_BATCH
 * records of one segment, in LSN order from where the last slice
 * stopped, then, once its records are done, every page version of that
 * segment; then the next segment. What is checked:
 *   - a record: it unpacks, its CRC holds (rec_check), and, at or below
 *     the SCL, it links back to the record before it (the chain of
 *     backlinks starts at gc_lsn, segment.h);
 *   - a page version: its length and CRC (store_pages.c), and every page
 *     marked as having a version at or below gc_lsn has one.
 * What is done about damage (each is logged, rate-limited, and counted):
 *   - a damaged record is deleted and the chain starts again below it: the
 *     SCL falls to the last whole record, so this segment stops answering
 *     reads above it, and gossip fetches the record again from a peer (it
 *     replaces the damaged copy). A record missing from the chain (a lost
 *     key) is found the same way: the chain is rebuilt and stops there.
 *   - a damaged version above gc_lsn is deleted and its page coalesced
 *     again from the records, which are all still held;
 *   - a damaged or missing version at or below gc_lsn cannot be rebuilt
 *     here (its records were freed): the page's floor is raised to "never"
 *     (store_pages.c: no read of it is answered here) and bg.c asks a peer
 *     for the page as of a point (repair), which lowers the floor again.
 * The scrub runs at start too (its first slice is due at once), so a
 * node that restarts on a damaged file repairs it instead of dying or
 * serving it; damage a read meets first makes its segment next in line.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/node.h"
#include "node/store_int.h"

/* Delete record lsn of s, in the open write transaction, and from the
 * page map (by its page, if it can still be read). */
static int drop_rec(struct store *st, struct segment *s, uint64_t lsn, int page_known,
                    uint32_t page)
{
  uint8_t rk[20];
  rec_key(rk, s->volume_id, s->pg, lsn);
  struct kv_val rkey = {sizeof rk, rk};
  if (page_known)
    store_pmap_del(st, s->volume_id, s->pg, page, lsn);
  else
    store_pmap_del_lsn(st, s, lsn);
  int rc = kv_del(st->kv, st->txn, st->recs, &rkey);
  if (rc == 0)
    s->nrecs -= s->nrecs > 0;
  return rc == KV_NOTFOUND ? 0 : rc;
}

/* Mark page index i of s as served nowhere here until repaired. */
static void mark_bad(struct node *n, struct segment *s, uint32_t i)
{
  if (s->floor == NULL)
    s->floor = calloc(s->npages, sizeof *s->floor);
  s->floor[i] = UINT64_MAX;
  node_mark_dirty(n, s);
}

/* One slice of s's records from n->scrub_lsn. Returns 1 when the records
 * are done, 0 if more remain, -1 on a storage error (why). */
static int scrub_recs(struct node *n, struct segment *s, char *why, size_t whylen)
{
  struct store *st = &n->st;
  struct kv_cursor *cur;
  int rc = kv_cursor(st->kv, st->txn, st->recs, &cur);
  if (rc != 0) {
    store_fail(st, rc, why, whylen, "scrubbing");
    return -1;
  }
  /* Its place is good only on the chain it was taken on: a truncation, a
   * catch-up or a reload since (each chains the segment again) may have
   * cut the record it stood on, and a rechain from there would claim a
   * record the segment no longer holds (simulator, seed 5914). */
  if (s->rechains != n->scrub_rechains) {
    n->scrub_lsn = n->scrub_prev = 0;
    n->scrub_rechains = s->rechains;
  }
  uint8_t k[20];
  uint64_t from = n->scrub_lsn > s->gc_lsn ? n->scrub_lsn : s->gc_lsn;
  if (n->scrub_prev < s->gc_lsn)
    n->scrub_prev = s->gc_lsn;
  rec_key(k, s->volume_id, s->pg, from + 1);
  struct kv_val key = {sizeof k, k}, val;
  size_t seen = 0;
  uint64_t bad = 0, rechain_at = 0;
  int bad_page_known = 0;
  uint32_t bad_page = 0;
  int finished = 1;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    if (seen == SCRUB_BATCH) {
      finished = 0;
      break;
    }
    uint64_t lsn = get_be64((uint8_t *)key.data + 12);
    seen++;
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    char rwhy[160];
    int ok = r && rec_check(r, s->page_size, rwhy, sizeof rwhy) == ERR_NONE;
    if (!ok) {
      bad = lsn;
      bad_page_known = r != NULL;
      bad_page = r ? r->page_no : 0;
      if (r)
        auralog__record__free_unpacked(r, NULL);
      break;
    }
    /* On the chain (at or below the SCL) every record links to the one
     * before it: one that does not means a record between went missing. */
    if (lsn <= s->scl && r->prev_lsn != n->scrub_prev) {
      logwarn_rl("scrub: volume %llu pg %u: record %llu links back to %llu, but the "
                 "record before it here is %llu: one is missing; chaining again from %llu",
                 (unsigned long long)s->volume_id, s->pg, (unsigned long long)lsn,
                 (unsigned long long)r->prev_lsn, (unsigned long long)n->scrub_prev,
                 (unsigned long long)n->scrub_prev);
      rechain_at = n->scrub_prev;
      auralog__record__free_unpacked(r, NULL);
      break;
    }
    auralog__record__free_unpacked(r, NULL);
    n->scrub_prev = lsn <= s->scl ? lsn : n->scrub_prev;
    n->scrub_lsn = lsn;
  }
  kv_cursor_close(st->kv, cur);
  n->scrubbed += seen;
  if (bad) {
    n->damage_found++;
    logwarn_rl("scrub: volume %llu pg %u: stored record %llu is damaged: dropped, and "
               "fetched again from a PG peer", (unsigned long long)s->volume_id, s->pg,
               (unsigned long long)bad);
    if ((rc = drop_rec(st, s, bad, bad_page_known, bad_page)) != 0) {
      store_fail(st, rc, why, whylen, "dropping a damaged record");
      return -1;
    }
    rechain_at = bad <= s->scl ? n->scrub_prev : s->scl;
  }
  if (bad || rechain_at) {
    if (!bad)
      n->damage_found++;
    if (store_rechain(st, s, rechain_at, why, whylen) != 0)
      return -1;
    n->scrub_rechains = s->rechains;
    node_mark_dirty(n, s);
    n->scrub_lsn = rechain_at;  /* look again from there next slice */
    return 0;
  }
  return finished;
}

/* Every page version of s: damaged ones dropped (and repaired), missing
 * ones at or below gc_lsn found; the oldest version's LSN counted. */
static int scrub_imgs(struct node *n, struct segment *s, char *why, size_t whylen)
{
  struct store *st = &n->st;
  struct kv_cursor *cur;
  int rc = kv_cursor(st->kv, st->txn, st->imgs, &cur);
  if (rc != 0) {
    store_fail(st, rc, why, whylen, "scrubbing");
    return -1;
  }
  uint8_t k[12];
  seg_key(k, s->volume_id, s->pg);
  struct kv_val key = {sizeof k, k}, val;
  uint8_t *seen = calloc((s->npages + 7) / 8, 1);  /* has a good version <= gc_lsn */
  uint64_t oldest = 0, nimgs = 0;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;) {
    if (key.len < 12 || memcmp(key.data, k, 12) != 0)
      break;
    n->scrubbed++;
    uint32_t page = key.len == 24 ? get_be32((uint8_t *)key.data + 12) : 0;
    uint64_t lsn = key.len == 24 ? get_be64((uint8_t *)key.data + 16) : 0;
    int inpg = key.len == 24 && page >= s->first_page && page - s->first_page < s->npages;
    int ok = inpg && val.len == (size_t)s->page_size + 4 &&
             get_be32((uint8_t *)val.data + s->page_size) ==
               store_img_crc(key.data, val.data, s->page_size);
    if (!ok) {
      n->damage_found++;
      logwarn_rl("scrub: volume %llu pg %u: page %u's version at %llu is damaged%s",
                 (unsigned long long)s->volume_id, s->pg, page, (unsigned long long)lsn,
                 inpg && lsn > s->gc_lsn ? ": dropped, and coalesced again"
                                         : ": dropped, and fetched again from a PG peer");
      if (inpg && lsn <= s->gc_lsn)
        mark_bad(n, s, page - s->first_page);
      s->nimgs -= s->nimgs > 0;
      if ((rc = kv_cursor_del(st->kv, cur)) != 0)
        break;
      rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val);
      continue;
    }
    uint32_t i = page - s->first_page;
    if (lsn <= s->gc_lsn)
      seen[i / 8] |= (uint8_t)(1u << (i % 8));
    if (oldest == 0 || lsn < oldest)
      oldest = lsn;
    nimgs++;
    rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val);
  }
  kv_cursor_close(st->kv, cur);
  if (rc != 0 && rc != KV_NOTFOUND) {
    free(seen);
    store_fail(st, rc, why, whylen, "scrubbing");
    return -1;
  }
  for (uint32_t i = 0; i < s->npages; i++)
    if (seg_imaged(s, i) && !((seen[i / 8] >> (i % 8)) & 1) &&
        seg_floor(s, i) != UINT64_MAX && seg_floor(s, i) <= s->gc_lsn) {
      n->damage_found++;
      logwarn_rl("scrub: volume %llu pg %u: page %u has no version at or below %llu "
                 "here: fetched again from a PG peer", (unsigned long long)s->volume_id,
                 s->pg, s->first_page + i, (unsigned long long)s->gc_lsn);
      mark_bad(n, s, i);
    }
  free(seen);
  s->oldest_img = oldest;
  s->nimgs = nimgs;
  return 0;
}

void scrub_step(struct node *n)
{
  if (n->nsegs == 0)
    return;
  char why[256];
  if (n->scrub_next >= n->nsegs) {
    n->scrub_next = 0;
    n->scrub_lsn = n->scrub_prev = 0;
  }
  struct segment *s = n->segs[n->scrub_next];
  if (store_begin(&n->st, why, sizeof why) != 0) {
    logwarn_rl("%s", why);
    return;
  }
  /* A binlog segment's records are scrubbed as any (a damaged one goes,
   * and gossip brings it again from a peer); it has no page versions. */
  int done = scrub_recs(n, s, why, sizeof why);
  if (done == 1 && !seg_is_binlog(s) && scrub_imgs(n, s, why, sizeof why) != 0)
    done = -1;
  if (done < 0) {
    logwarn_rl("%s", why);
    node_rollback(n, ERR_INTERNAL, why);
    return;
  }
  node_commit(n);
  if (done == 1) {
    n->scrub_next++;
    n->scrub_lsn = n->scrub_prev = 0;
  }
}

void scrub_soon(struct node *n, const struct segment *s)
{
  for (size_t i = 0; i < n->nsegs; i++)
    if (n->segs[i] == s && n->scrub_next != i) {
      n->scrub_next = i;
      n->scrub_lsn = n->scrub_prev = 0;
    }
  n->scrub_at = 0;
}
