/*
 * store_int.h: what the store's files share (store.c: segments and
 * records, transactions; store_load.c: segments rebuilt from them;
 * store_hot.c: the hot log's frames and replay; store_pages.c: page
 * versions). Not for anyone else: the rest of the node goes through
 * store.h.
 *
 * Keys are big-endian so that the kv's byte order is numeric order:
 *   segment (volume, pg)              12 bytes
 *   record  (volume, pg, lsn)         20 bytes
 *   page    (volume, pg, page, lsn)   24 bytes  (imgs)
 */
#ifndef AURALOG_STORE_INT_H
#define AURALOG_STORE_INT_H

#include <stdio.h>
#include <stdlib.h>

#include "node/hotlog.h"
#include "node/store.h"
#include "net/wire.h"

static inline void seg_key(uint8_t k[12], uint64_t vol, uint32_t pg)
{
  put_be64(k, vol);
  put_be32(k + 8, pg);
}

static inline void rec_key(uint8_t k[20], uint64_t vol, uint32_t pg, uint64_t lsn)
{
  seg_key(k, vol, pg);
  put_be64(k + 12, lsn);
}

static inline void page_key(uint8_t k[24], uint64_t vol, uint32_t pg, uint32_t page,
                            uint64_t lsn)
{
  seg_key(k, vol, pg);
  put_be32(k + 12, page);
  put_be64(k + 16, lsn);
}

/* A kv error as the node reports it (store.c). */
int store_fail(struct store *st, int rc, char *why, size_t whylen, const char *what);
/* Commit a write transaction, counting it (store.c). */
int store_kv_commit(struct store *st, struct kv_txn *txn);

/* store_load.c, for the replay (store_hot.c): is lsn held, through txn; chain
 * s again from base through txn; one segment from its SegMeta v. */
int store_held_in(struct store *st, struct kv_txn *txn, const struct segment *s,
                  uint64_t lsn, uint64_t *epoch);
int store_rechain_in(struct store *st, struct kv_txn *txn, struct segment *s,
                     uint64_t base, char *why, size_t whylen);
int store_load_one(struct store *st, struct kv_txn *txn, const struct kv_val *v,
                   struct segment *s, char *why, size_t whylen);
/* store_load.c: what a SegMeta (the kv's, or a frame's) says s heard and
 * holds, at start. store_meta_heard: its VDLs heard, into s (never
 * lowering). store_meta_truncs: its truncations that keep the bound
 * against s (segment.c seg_trunc_ok), oldest epoch first, in *out (malloc'd;
 * the count returned); one that does not is counted in truncs_refused and
 * reported. */
void store_meta_heard(struct segment *s, const Auralog__SegMeta *m);
/* ... and its membership (mepoch, mepoch_min, since, pos, next), into s:
 * never lowering (0s: a SegMeta written before membership existed). */
void store_meta_member(struct segment *s, const Auralog__SegMeta *m);
size_t store_meta_truncs(struct store *st, const struct segment *s, const Auralog__SegMeta *m,
                         struct trunc **out);

/* The hot log (store_hot.c). Frame entries: */
enum { ENT_META = 1, ENT_REC = 2 };
#define ENT_HDR 17
/* Room for an entry of len bytes in the open transaction's frame. */
uint8_t *store_frame_add(struct store *st, int type, uint64_t vol, uint32_t pg, size_t len);
/* Does this transaction write a frame? */
int store_framing(const struct store *st);
/* Take f as the store's hot log: replay it, then checkpoint (H5). */
int store_open_hot_log(struct store *st, struct hl_file f, uint64_t ckpt, uint64_t chunk,
                       char *why, size_t whylen);

/* Append lsn to the growing list *v (*n of *cap used). */
static inline void lsn_push(uint64_t **v, size_t *n, size_t *cap, uint64_t lsn)
{
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 16;
    *v = realloc(*v, *cap * sizeof **v);
  }
  (*v)[(*n)++] = lsn;
}

/* The page map (store_pmap.c, Invariant P): every record recs holds, by
 * page, in memory. add/del: a put or delete in the open write transaction
 * (undone if it aborts); del_lsn: one whose page cannot be read any more;
 * drop_seg: all of a segment's; commit/abort: the transaction ended;
 * reset/loaded: store_load empties it, notes what it loads, and makes it
 * ready; note: a record found in recs (load, rechain), nothing to undo.
 * get appends the LSNs of s's page_no in (after, upto] to *v (n, cap as
 * lsn_push keeps them), building the map through txn if it is not ready;
 * -1: it cannot (no cursor). */
void store_pmap_add(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn);
void store_pmap_del(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn);
void store_pmap_del_lsn(struct store *st, const struct segment *s, uint64_t lsn);
void store_pmap_drop_seg(struct store *st, const struct segment *s);
void store_pmap_commit(struct store *st);
void store_pmap_abort(struct store *st);
void store_pmap_reset(struct store *st);
void store_pmap_loaded(struct store *st);
void store_pmap_note(struct store *st, uint64_t vol, uint32_t pg, uint32_t page, uint64_t lsn);
void store_pmap_free(struct store *st);
int store_pmap_get(struct store *st, struct kv_txn *txn, const struct segment *s,
                   uint32_t page_no, uint64_t after, uint64_t upto, uint64_t **v, size_t *n,
                   size_t *cap);

/* The record cache (store_rcache.c, Invariant R): records stored lately,
 * decoded, by (volume, pg, lsn). put: the copy store_put_rec stored (an
 * abort removes it); del: recs no longer holds it (the page map's hooks
 * call it); get: the record, or NULL (read the kv); commit/abort: the
 * write transaction ended; clear: forget all; stats: records, bytes, and
 * lookups that hit and missed. */
void store_rc_put(struct store *st, uint64_t vol, uint32_t pg, const Rec *r);
void store_rc_del(struct store *st, uint64_t vol, uint32_t pg, uint64_t lsn);
const Rec *store_rc_get(struct store *st, uint64_t vol, uint32_t pg, uint64_t lsn);
void store_rc_commit(struct store *st);
void store_rc_abort(struct store *st);
void store_rc_clear(struct store *st);
void store_rc_free(struct store *st);
void store_rc_stats(const struct store *st, size_t *n, size_t *bytes, uint64_t *hits,
                    uint64_t *misses);

/* A page version's CRC (store_pages.c): over its key and its bytes. */
uint32_t store_img_crc(const uint8_t key[24], const uint8_t *page, uint32_t len);

/* The transaction a read goes through: the open write transaction (it
 * sees this turn's writes), else a read-only one; store_rdone ends the
 * latter. */
static inline int store_rtxn(struct store *st, struct kv_txn **txn)
{
  *txn = st->txn;
  return *txn ? 0 : kv_begin(st->kv, KV_RDONLY, txn);
}

static inline void store_rdone(struct store *st, struct kv_txn *txn)
{
  if (txn != st->txn)
    kv_abort(st->kv, txn);
}

#endif
