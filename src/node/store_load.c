/*
 * store_load.c: a segment rebuilt from what the store holds (store.h):
 * which records are held, the chain from a base (the SCL: the highest LSN
 * below which every record is held, paper §4.2.1), the counts the status
 * shows, and the load of every segment at start (store_load) or of one
 * after a failed commit (store_reload).
 *
 * Why the chain is rebuilt rather than trusted: the SCL kept in SegMeta
 * is only a hint written with the next batch (store.c), so a crash may
 * leave it behind what the disk holds, or, after damage, ahead of it. A
 * stale hint costs time, never correctness: chaining starts from the
 * hint's record if it is held whole, else from the GC point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/store_int.h"
#include "param.h"
#include "net/wire.h"

/* Does txn hold the record (s, lsn)? If so and epoch is not NULL, *epoch
 * is the stored record's epoch (0 if it cannot be read). */
int store_held_in(struct store *st, struct kv_txn *txn, const struct segment *s,
                uint64_t lsn, uint64_t *epoch)
{
  /* The chain's start after GC (store_pages.c): its record is freed, but
   * what it held is in page versions, so it counts as held; its epoch is
   * unknown, and it is never stored again (UINT64_MAX: no copy is newer). */
  if (lsn > 0 && lsn == s->gc_lsn) {
    if (epoch)
      *epoch = UINT64_MAX;
    return 1;
  }
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, lsn);
  struct kv_val key = {sizeof k, k}, val;
  if (kv_get(st->kv, txn, st->recs, &key, &val) != 0)
    return 0;
  if (epoch) {
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    *epoch = r ? r->epoch : 0;
    if (r)
      auralog__record__free_unpacked(r, NULL);
  }
  return 1;
}

/* Chain s again from base: every stored record above it, in LSN order. A
 * stored record that cannot be read back is reported and left out: it
 * leaves a hole that gossip fills with a good copy (which replaces it),
 * and the rest of the segment is served meanwhile. The reports are
 * rate-limited (log.h): a damaged disk has many such records, and every
 * failed commit reloads its segments (store_reload) and meets them again. */
int store_rechain_in(struct store *st, struct kv_txn *txn, struct segment *s,
                   uint64_t base, char *why, size_t whylen)
{
  struct kv_cursor *cur;
  int rc = kv_cursor(st->kv, txn, st->recs, &cur);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "loading segments");
  seg_rechain(s, base);
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, base + 1);
  struct kv_val key = {sizeof k, k}, val;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    char rwhy[160];
    if (r == NULL || rec_check(r, s->page_size, rwhy, sizeof rwhy) != ERR_NONE) {
      st->met_damage++;
      logwarn_rl("volume %llu pg %u: stored record %llu is unreadable; not served "
              "(a PG peer's copy will replace it)", (unsigned long long)s->volume_id,
              s->pg, (unsigned long long)get_be64((uint8_t *)key.data + 12));
      if (r)
        auralog__record__free_unpacked(r, NULL);
      continue;
    }
    seg_add(s, r->lsn, r->prev_lsn);
    store_pmap_note(st, s->volume_id, s->pg, r->page_no, r->lsn);
    auralog__record__free_unpacked(r, NULL);
  }
  kv_cursor_close(st->kv, cur);
  return 0;
}

/* The highest point at or below base up to which s's stored records are
 * whole: each readable and linked to the one before it, from the PG's
 * start (segment.h: every held record at or below the SCL is on one chain
 * of backlinks). A record damaged on disk below the SCL hint (bit rot)
 * would otherwise be counted as held: its page served without it, and
 * gossip never asked for a good copy. Chaining from the last whole point
 * instead leaves a hole that gossip fills (the good copy replaces the
 * damaged one). One pass over the segment's records, at load only. */
static uint64_t whole_to(struct store *st, struct kv_txn *txn, const struct segment *s,
                         uint64_t base)
{
  struct kv_cursor *cur;
  if (base <= s->gc_lsn || kv_cursor(st->kv, txn, st->recs, &cur) != 0)
    return base < s->gc_lsn ? s->gc_lsn : base;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, s->gc_lsn + 1);
  struct kv_val key = {sizeof k, k}, val;
  uint64_t prev = s->gc_lsn;        /* records at or below it were freed (GC) */
  int rc;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    uint64_t lsn = get_be64((uint8_t *)key.data + 12);
    if (lsn > base)
      break;
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    char rwhy[160];
    int ok = r && rec_check(r, s->page_size, rwhy, sizeof rwhy) == ERR_NONE &&
             r->prev_lsn == prev;
    if (ok)                  /* the page map (store_pmap.c): built at load */
      store_pmap_note(st, s->volume_id, s->pg, r->page_no, lsn);
    if (r)
      auralog__record__free_unpacked(r, NULL);
    if (!ok) {
      st->met_damage++;
      logwarn_rl("volume %llu pg %u: stored record %llu, below the SCL hint %llu, is "
              "damaged; chaining from %llu (a PG peer's copy will replace it)",
              (unsigned long long)s->volume_id, s->pg, (unsigned long long)lsn,
              (unsigned long long)base, (unsigned long long)prev);
      kv_cursor_close(st->kv, cur);
      return prev;
    }
    prev = lsn;
  }
  kv_cursor_close(st->kv, cur);
  return prev == base ? base : prev;
}

/* What s holds, for status: records, page versions, their bytes, the
 * oldest version. A pass over keys and lengths, at load only. */
static void count(struct store *st, struct kv_txn *txn, struct segment *s)
{
  uint8_t k[20];
  seg_key(k, s->volume_id, s->pg);
  unsigned dbs[2] = {st->recs, st->imgs};
  for (int d = 0; d < 2; d++) {
    struct kv_cursor *cur;
    if (kv_cursor(st->kv, txn, dbs[d], &cur) != 0)
      continue;
    struct kv_val key = {12, k}, val;
    for (int rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;
         rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
      if (key.len < 12 || memcmp(key.data, k, 12) != 0)
        break;
      s->bytes += val.len;
      if (d == 0) {
        s->nrecs++;
      } else {
        uint64_t lsn = key.len == 24 ? get_be64((uint8_t *)key.data + 16) : 0;
        s->nimgs++;
        if (s->oldest_img == 0 || lsn < s->oldest_img)
          s->oldest_img = lsn;
      }
    }
    kv_cursor_close(st->kv, cur);
  }
}

void store_meta_member(struct segment *s, const Auralog__SegMeta *m)
{
  /* Membership as the coordinator last assigned it (0s in a SegMeta
   * written before the fields existed): never lowered (node/member.c). */
  if (m->seg->mepoch >= s->mepoch) {
    s->since = m->seg->since;
    s->pos = m->seg->pos;
    s->next = m->seg->next;
  }
  if (m->seg->mepoch > s->mepoch)
    s->mepoch = m->seg->mepoch;
  if (m->seg->mepoch_min > s->mepoch_min)
    s->mepoch_min = m->seg->mepoch_min;
}

void store_meta_heard(struct segment *s, const Auralog__SegMeta *m)
{
  for (size_t i = 0; i + 1 < m->n_heard; i += 2)
    seg_heard_note(s, m->heard[i], m->heard[i + 1]);
  /* Written before the list existed: its vdl, as heard from its epoch.
   * Every VDL it took came from a writer of that epoch or an older one
   * (an Append of an older epoch is refused), so this holds truncations
   * of newer epochs to it and no others: what B1 asks (segment.c). */
  if (m->n_heard == 0)
    seg_heard_note(s, m->epoch, m->vdl);
}

static void refused_at_start(void *arg, const struct trunc *t, const char *why)
{
  struct store *st = arg;
  (void)t;
  st->truncs_refused++;
  logwarn_rl("%s (found in the node's own store at start: left out)", why);
}

size_t store_meta_truncs(struct store *st, const struct segment *s, const Auralog__SegMeta *m,
                         struct trunc **out)
{
  size_t n = m->n_truncs, k = 0;
  struct trunc *t = calloc(n + 1, sizeof *t);
  size_t *ord = calloc(n + 1, sizeof *ord);
  uint8_t *fate = calloc(n + 1, 1);
  for (size_t i = 0; i < n; i++) {
    t[i] = (struct trunc){m->truncs[i]->epoch, m->truncs[i]->from, m->truncs[i]->to};
    trunc_proof_from_pb(&t[i].proof, m->truncs[i]);
  }
  seg_trunc_pick(s, t, n, 1, ord, fate, refused_at_start, st);
  *out = calloc(n + 1, sizeof **out);
  for (size_t j = 0; j < n; j++)
    if (fate[ord[j]] != 2 && t[ord[j]].to > t[ord[j]].from)
      (*out)[k++] = t[ord[j]];
  free(t);
  free(ord);
  free(fate);
  return k;
}

/* Rebuild one segment: its SegMeta, then every record above the hint. */
int store_load_one(struct store *st, struct kv_txn *txn, const struct kv_val *v,
                    struct segment *s, char *why, size_t whylen)
{
  Auralog__SegMeta *m = auralog__seg_meta__unpack(NULL, v->len, v->data);
  if (m == NULL || m->seg == NULL) {
    snprintf(why, whylen, "a segment's metadata is corrupt");
    if (m)
      auralog__seg_meta__free_unpacked(m, NULL);
    return -1;
  }
  seg_init(s, m->seg->volume_id, m->seg->pg, m->seg->first_page,
           m->seg->npages, m->seg->page_size);
  s->epoch = m->epoch;
  s->vdl = m->vdl;
  store_meta_member(s, m);
  store_meta_heard(s, m);
  s->gc_lsn = m->gc_lsn;
  /* Its truncations, each checked again (the bound, segment.c: what an
   * older version of the node took unchecked, or a damaged store, is left
   * out; what it cut stays cut, and gossip may bring it back). Oldest
   * epoch first, as they are held from now on. */
  struct trunc *tr;
  size_t ntr = store_meta_truncs(st, s, m, &tr);
  for (size_t i = 0; i < ntr; i++)
    seg_add_trunc(s, &tr[i]);
  free(tr);
  if (m->imaged.len == (s->npages + 7) / 8 && m->imaged.len > 0) {
    s->imaged = malloc(m->imaged.len);
    memcpy(s->imaged, m->imaged.data, m->imaged.len);
  }
  for (size_t i = 0; i + 1 < m->n_floors; i += 2)
    if (m->floors[i] < s->npages) {
      if (s->floor == NULL)
        s->floor = calloc(s->npages, sizeof *s->floor);
      s->floor[m->floors[i]] = m->floors[i + 1];
    }
  uint64_t base = m->scl < s->gc_lsn ? s->gc_lsn : m->scl;
  auralog__seg_meta__free_unpacked(m, NULL);
  count(st, txn, s);
  /* The SCL hint names a record that is on disk (commit_group writes the
   * SCL before this commit's records are chained, node_truncate after the
   * rechain): if it does not, do not believe it; chain from the start. */
  if (base && !store_held_in(st, txn, s, base, NULL)) {
    logwarn_rl("volume %llu pg %u: its SCL hint %llu names no stored record; "
            "chaining from the start", (unsigned long long)s->volume_id, s->pg,
            (unsigned long long)base);
    base = s->gc_lsn;
  }
  base = whole_to(st, txn, s, base);
  return store_rechain_in(st, txn, s, base, why, whylen);
}

int store_reload(struct store *st, struct segment *s, char *why, size_t whylen)
{
  struct kv_txn *txn;
  int rc = kv_begin(st->kv, KV_RDONLY, &txn);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "reloading a segment");
  uint8_t k[12];
  seg_key(k, s->volume_id, s->pg);
  struct kv_val key = {sizeof k, k}, val;
  struct segment fresh;
  rc = kv_get(st->kv, txn, st->segs, &key, &val);
  if (rc == 0) {
    if (store_load_one(st, txn, &val, &fresh, why, whylen) != 0) {
      kv_abort(st->kv, txn);
      return ERR_INTERNAL;
    }
  } else {
    /* Never committed: a segment just assigned, with nothing on disk. */
    seg_init(&fresh, s->volume_id, s->pg, s->first_page, s->npages, s->page_size);
  }
  kv_abort(st->kv, txn);
  fresh.pgmrpl = s->pgmrpl;  /* heard, not stored */
  fresh.pulled = s->pulled;
  fresh.from_writer = s->from_writer;
  fresh.from_peers = s->from_peers;
  /* The coordinator's word stands whether or not the commit that was to
   * store it did (it stored it before sending): never lowered. */
  if (s->mepoch >= fresh.mepoch) {
    fresh.since = s->since;
    fresh.pos = s->pos;
    fresh.next = s->next;
    fresh.mepoch = s->mepoch;
  }
  if (s->mepoch_min > fresh.mepoch_min)
    fresh.mepoch_min = s->mepoch_min;
  seg_free(s);
  *s = fresh;
  return 0;
}

int store_held(struct store *st, const struct segment *s, uint64_t lsn, uint64_t *epoch)
{
  struct kv_txn *txn;
  if (store_rtxn(st, &txn) != 0)
    return 0;
  int h = store_held_in(st, txn, s, lsn, epoch);
  store_rdone(st, txn);
  return h;
}

const Rec *store_get_rec(struct store *st, const struct segment *s, uint64_t lsn, int *owned)
{
  *owned = 0;
  const Rec *hit = store_rc_get(st, s->volume_id, s->pg, lsn);
  if (hit)
    return hit;              /* Invariant R: the copy stored, checked when it came */
  struct kv_txn *txn;
  if (store_rtxn(st, &txn) != 0)
    return NULL;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, lsn);
  struct kv_val key = {sizeof k, k}, val;
  Rec *r = NULL;
  if (kv_get(st->kv, txn, st->recs, &key, &val) == 0) {
    char why[160];
    r = auralog__record__unpack(NULL, val.len, val.data);
    if (r && (r->lsn != lsn || rec_check(r, s->page_size, why, sizeof why) != ERR_NONE)) {
      auralog__record__free_unpacked(r, NULL);
      r = NULL;
    }
  }
  store_rdone(st, txn);
  *owned = r != NULL;
  return r;
}

int store_held_whole(struct store *st, const struct segment *s, uint64_t lsn)
{
  struct kv_txn *txn;
  if (store_rtxn(st, &txn) != 0)
    return 0;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, lsn);
  struct kv_val key = {sizeof k, k}, val;
  int whole = 0;
  if (kv_get(st->kv, txn, st->recs, &key, &val) == 0) {
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    char why[160];
    whole = r && r->lsn == lsn && rec_check(r, s->page_size, why, sizeof why) == ERR_NONE;
    if (r)
      auralog__record__free_unpacked(r, NULL);
  }
  store_rdone(st, txn);
  return whole;
}

int store_rechain(struct store *st, struct segment *s, uint64_t base, char *why,
                  size_t whylen)
{
  return store_rechain_in(st, st->txn, s, base, why, whylen);
}

int store_load(struct store *st, void (*fn)(void *arg, struct segment *s),
               void *arg, char *why, size_t whylen)
{
  struct kv_txn *txn;
  struct kv_cursor *cur;
  int rc = kv_begin(st->kv, KV_RDONLY, &txn);
  if (rc == 0 && (rc = kv_cursor(st->kv, txn, st->segs, &cur)) != 0)
    kv_abort(st->kv, txn);
  if (rc != 0) {
    store_fail(st, rc, why, whylen, "loading segments");
    return -1;
  }
  struct kv_val key, val;
  int out = 0;
  store_pmap_reset(st);      /* built on the way: every record is unpacked here */
  for (rc = kv_cursor_get(st->kv, cur, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    struct segment s;
    if (store_load_one(st, txn, &val, &s, why, whylen) != 0) {
      out = -1;
      break;
    }
    fn(arg, &s);
  }
  kv_cursor_close(st->kv, cur);
  kv_abort(st->kv, txn);
  if (out == 0)
    store_pmap_loaded(st);
  return out;
}
