/*
 * store.c: segments in an ordered key-value store (see store.h, kv.h).
 *
 * Durability: a kv commit makes its changes durable before it returns
 * (lmdb writes and fsyncs, kv_lmdb.c; the simulated disk keeps what was
 * committed across a crash, sim/disk.c), so once store_commit() returns 0
 * the records survive a crash. The SCL kept in SegMeta is only a hint
 * written with the next batch; at start the node chains every record above
 * it again (store_load), so a stale hint costs time, never correctness.
 *
 * The pages a commit dirties cost more than its syncs: writing each record
 * into pidx too (a key in page order: a random leaf, and its branch pages,
 * per record) made a group commit of ~110 records write ~220 lmdb pages
 * (strace, 32 clients), and its fdatasync took ~4 ms. Hence the deferred
 * index (store.h): recs and unidx are both in LSN order, so a commit
 * appends to a few pages per PG, and store_index pays for the random
 * leaves once per large batch (records of one page in a batch share their
 * leaf).
 *
 * The hot log (hotlog.c). lmdb's durable commit is two device flushes; a
 * node with a hot log switches lmdb's syncing off (kv_set_nosync) and
 * makes a group commit durable with one: store_commit commits the kv
 * (without a sync), then appends one frame holding everything the
 * transaction stored and fdatasyncs it; the node acknowledges after. A
 * frame's payload is a list of entries, each
 *     type (1: SegMeta, 2: record)  1 byte
 *     volume                         8
 *     pg                             4
 *     length                         4
 *     the packed SegMeta or Record   length bytes
 * in the order they were stored. Every frame that holds records of a
 * segment also holds its SegMeta (node.c marks a segment dirty whenever
 * it stores a record of it), so replay always knows a segment's geometry.
 *
 * Invariants (each stated again where it is kept):
 *   H1. An ack is sent only after the frame holding its records is
 *       fdatasynced: store_commit returns 0 only after hl_append did, and
 *       node_commit acknowledges only after store_commit returned 0.
 *   H2. What memory counts (it is reloaded from the kv after a failed
 *       commit) is durable, by the hot log or by a kv sync: the kv commits
 *       first (a full disk fails there, storing nothing anywhere), then
 *       the frame; if the append fails, the kv is synced instead, and if
 *       that fails too the node stops (store.broken: only a restart can
 *       tell what is durable); transactions with no frame (a truncation, a
 *       fence: store_sync_txn) sync the kv themselves; page indexing
 *       (store_index) only moves what the kv holds already.
 *   H3. Replay never resurrects what a truncation cut: a truncation first
 *       checkpoints (trunc.c), so no frame older than it is replayed after
 *       it, and its own transaction is synced in the kv; replay also puts
 *       every record through seg_admit, which refuses one a held
 *       truncation cuts.
 *   H4. Replaying an old SegMeta never lowers anything: epoch and VDL
 *       are the max of the kv's and the frame's, truncations the union
 *       (one the kv lacked is installed, deleting what it cuts); the SCL
 *       hint is not taken from frames: the segment is chained again from
 *       what the kv holds (store_load does it again at start).
 *   H5. After replay the kv is synced and the log restarted before the
 *       node serves (store_open_hot), so the SCL a restarted node reports
 *       never counts a record only the page cache holds.
 *   H6. A damaged frame in the middle is skipped, not taken for the end
 *       (hotlog.c): its records leave a hole in their segment's chain,
 *       which gossip fills from PG peers. The node had acknowledged them,
 *       but they were at 4 of 6 segments: 3 good copies remain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/hotlog.h"
#include "node/store_int.h"
#include "param.h"
#include "wire.h"

/* A kv error as the node reports it. A full disk or map says which, and
 * how much room is left, when the kv knows (kv_lmdb.c): "disk full (4096
 * bytes free on DIR) while committing records: nothing was stored". */
int store_fail(struct store *st, int rc, char *why, size_t whylen, const char *what)
{
  if (rc == KV_FULL) {
    snprintf(why, whylen, "%s while %s: nothing was stored",
             st->kv->full_why[0] ? st->kv->full_why : "disk full", what);
    return ERR_DISK_FULL;
  }
  snprintf(why, whylen, "storage error while %s: %s", what, kv_strerror(st->kv, rc));
  return ERR_INTERNAL;
}

/* Commit a write transaction and count it if the kv wrote it (one that
 * changed nothing writes and syncs nothing). */
int store_kv_commit(struct store *st, struct kv_txn *txn)
{
  int wrote = 0;
  int rc = kv_commit(st->kv, txn, &wrote);
  st->kv_committed = rc == 0;
  if (rc == 0 && wrote) {
    st->commits++;
    st->fsyncs += st->syncs_per_commit;
  }
  return rc;
}

/* Open the databases (where: the directory, for messages; may be NULL). */
static int open_kv(struct store *st, struct kv *kv, const char *where, char *why,
                   size_t whylen)
{
  memset(st, 0, sizeof *st);
  st->kv = kv;
  st->syncs_per_commit = kv->syncs_per_commit;
  struct kv_txn *txn;
  int rc = kv_begin(kv, 0, &txn);
  if (rc == 0) {
    if (rc == 0) rc = kv_db(kv, txn, "segs", &st->segs);
    if (rc == 0) rc = kv_db(kv, txn, "recs", &st->recs);
    if (rc == 0) rc = kv_db(kv, txn, "pidx", &st->pidx);
    if (rc == 0) rc = kv_db(kv, txn, "imgs", &st->imgs);
    if (rc == 0) rc = kv_db(kv, txn, "unidx", &st->unidx);
    if (rc == 0)
      rc = kv_count(kv, txn, st->unidx, &st->nunidx); /* left by a crash: indexed next */
    if (rc == 0)
      rc = store_kv_commit(st, txn);
    else
      kv_abort(kv, txn);
  }
  if (rc != 0) {
    snprintf(why, whylen, "cannot open storage%s%s: %s", where ? " in " : "",
             where ? where : "", kv_strerror(kv, rc));
    kv_close(kv);
    st->kv = NULL;
    return -1;
  }
  return 0;
}

static int open_hot(struct store *st, struct hl_file f, uint64_t ckpt, uint64_t chunk,
                    char *why, size_t whylen);

int store_open(struct store *st, const char *dir, char *why, size_t whylen)
{
  struct kv *kv;
  memset(st, 0, sizeof *st);
  if (kv_lmdb_open(dir, NODE_MAP_SIZE, &kv, why, whylen) != 0)
    return -1;
  if (open_kv(st, kv, dir, why, whylen) != 0)
    return -1;
  char path[1024];
  struct hl_file f;
  snprintf(path, sizeof path, "%s/hot.log", dir);
  if (hl_file_posix(path, &f, why, whylen) != 0) {
    store_close(st);
    return -1;
  }
  return open_hot(st, f, HOTLOG_CHECKPOINT, HOTLOG_CHUNK, why, whylen);
}

int store_open_kv(struct store *st, struct kv *kv, char *why, size_t whylen)
{
  return open_kv(st, kv, NULL, why, whylen);
}

int store_open_hot(struct store *st, struct kv *kv, struct hl_file f, uint64_t ckpt,
                   uint64_t chunk, char *why, size_t whylen)
{
  if (open_kv(st, kv, NULL, why, whylen) != 0) {
    f.ops->close(f.ctx);
    return -1;
  }
  return open_hot(st, f, ckpt, chunk, why, whylen);
}

void store_close(struct store *st)
{
  if (st->txn)
    store_abort(st);
  if (st->hl) {
    hl_close(st->hl);
    free(st->hl);
    st->hl = NULL;
  }
  free(st->frame);
  st->frame = NULL;
  st->flen = st->fcap = 0;
  if (st->kv)
    kv_close(st->kv);
  st->kv = NULL;
}

void store_shutdown(struct store *st)
{
  char why[256];
  if (st->txn)
    store_abort(st);
  if (st->hl && store_checkpoint(st, why, sizeof why) != 0)
    logwarn("%s (the next start replays the hot log)", why);
  store_close(st);
}

/* ---- the hot log's frames -------------------------------------------------- */

enum { ENT_META = 1, ENT_REC = 2 };
#define ENT_HDR 17

/* Room for an entry of len bytes in the open transaction's frame: where
 * its bytes go (NULL: out of memory). */
static uint8_t *frame_add(struct store *st, int type, uint64_t vol, uint32_t pg,
                          size_t len)
{
  if (st->fcap - st->flen < ENT_HDR + len) {
    size_t cap = st->fcap ? st->fcap : 65536;
    while (cap - st->flen < ENT_HDR + len)
      cap *= 2;
    uint8_t *f = realloc(st->frame, cap);
    if (f == NULL)
      return NULL;
    st->frame = f;
    st->fcap = cap;
  }
  uint8_t *e = st->frame + st->flen;
  e[0] = (uint8_t)type;
  put_be64(e + 1, vol);
  put_be32(e + 9, pg);
  put_be32(e + 13, (uint32_t)len);
  st->flen += ENT_HDR + len;
  return e + ENT_HDR;
}

/* Does this transaction write a frame? */
static int framing(const struct store *st)
{
  return st->hl != NULL && !st->replaying && !st->txn_sync;
}

int store_checkpoint_due(const struct store *st)
{
  return st->hl != NULL && hl_used(st->hl) >= st->hot_ckpt;
}

void store_sync_txn(struct store *st)
{
  st->txn_sync = 1;
}

int store_checkpoint(struct store *st, char *why, size_t whylen)
{
  if (st->hl == NULL || st->txn != NULL || hl_used(st->hl) <= HL_HDR)
    return 0;                /* nothing since the last one (or not ours to do now) */
  /* lmdb first: once the new generation starts, the old frames are dead,
   * so what they held must be durable in lmdb before. */
  int rc = kv_sync(st->kv);
  st->ckpt_fsyncs++;
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "checkpointing (syncing the store)");
  char hwhy[200];
  if ((rc = hl_reset(st->hl, st->hot_shrink, hwhy, sizeof hwhy)) != 0) {
    st->ckpt_fsyncs++;
    snprintf(why, whylen, "checkpointing: %s", hwhy);
    return rc == ENOSPC ? ERR_DISK_FULL : ERR_INTERNAL;
  }
  st->ckpt_fsyncs++;
  st->checkpoints++;
  return 0;
}

/* Does txn hold the record (s, lsn)? If so and epoch is not NULL, *epoch
 * is the stored record's epoch (0 if it cannot be read). */
static int held(struct store *st, struct kv_txn *txn, const struct segment *s,
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
static int rechain(struct store *st, struct kv_txn *txn, struct segment *s,
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

/* Rebuild one segment: its SegMeta, then every record above the hint. */
static int load_one(struct store *st, struct kv_txn *txn, const struct kv_val *v,
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
  for (size_t i = 0; i < m->n_truncs; i++)
    {
      struct trunc t = {m->truncs[i]->epoch, m->truncs[i]->from, m->truncs[i]->to};
      trunc_proof_from_pb(&t.proof, m->truncs[i]);
      seg_add_trunc(s, &t);
    }
  s->gc_lsn = m->gc_lsn;
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
  if (base && !held(st, txn, s, base, NULL)) {
    logwarn_rl("volume %llu pg %u: its SCL hint %llu names no stored record; "
            "chaining from the start", (unsigned long long)s->volume_id, s->pg,
            (unsigned long long)base);
    base = s->gc_lsn;
  }
  base = whole_to(st, txn, s, base);
  return rechain(st, txn, s, base, why, whylen);
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
    if (load_one(st, txn, &val, &fresh, why, whylen) != 0) {
      kv_abort(st->kv, txn);
      return ERR_INTERNAL;
    }
  } else {
    /* Never committed: a segment just assigned, with nothing on disk. */
    seg_init(&fresh, s->volume_id, s->pg, s->first_page, s->npages, s->page_size);
  }
  kv_abort(st->kv, txn);
  fresh.pgmrpl = s->pgmrpl;  /* heard, not stored */
  seg_free(s);
  *s = fresh;
  return 0;
}

int store_held(struct store *st, const struct segment *s, uint64_t lsn, uint64_t *epoch)
{
  struct kv_txn *txn;
  if (store_rtxn(st, &txn) != 0)
    return 0;
  int h = held(st, txn, s, lsn, epoch);
  store_rdone(st, txn);
  return h;
}

int store_rechain(struct store *st, struct segment *s, uint64_t base, char *why,
                  size_t whylen)
{
  return rechain(st, st->txn, s, base, why, whylen);
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
  for (rc = kv_cursor_get(st->kv, cur, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    struct segment s;
    if (load_one(st, txn, &val, &s, why, whylen) != 0) {
      out = -1;
      break;
    }
    fn(arg, &s);
  }
  kv_cursor_close(st->kv, cur);
  kv_abort(st->kv, txn);
  return out;
}

int store_begin(struct store *st, char *why, size_t whylen)
{
  if (st->txn)
    return 0;
  int rc = kv_begin(st->kv, 0, &st->txn);
  if (rc != 0) {
    st->txn = NULL;
    return store_fail(st, rc, why, whylen, "starting a write");
  }
  return 0;
}

size_t store_truncs_pb(const struct segment *s, Auralog__TruncRange **tr,
                       Auralog__TruncRange ***trp)
{
  *tr = calloc(s->ntruncs + 1, sizeof **tr);
  *trp = calloc(s->ntruncs + 1, sizeof **trp);
  for (size_t i = 0; i < s->ntruncs; i++) {
    auralog__trunc_range__init(&(*tr)[i]);
    (*tr)[i].epoch = s->truncs[i].epoch;
    (*tr)[i].from = s->truncs[i].from;
    (*tr)[i].to = s->truncs[i].to;
    trunc_proof_to_pb(&s->truncs[i].proof, &(*tr)[i]);
    (*trp)[i] = &(*tr)[i];
  }
  return s->ntruncs;
}

int store_put_meta(struct store *st, const struct segment *s, char *why,
                   size_t whylen)
{
  Auralog__Segment seg = AURALOG__SEGMENT__INIT;
  Auralog__SegMeta m = AURALOG__SEG_META__INIT;
  seg.volume_id = s->volume_id;
  seg.pg = s->pg;
  seg.first_page = s->first_page;
  seg.npages = s->npages;
  seg.page_size = s->page_size;
  m.seg = &seg;
  m.scl = s->scl;
  m.epoch = s->epoch;
  m.vdl = s->vdl;
  m.gc_lsn = s->gc_lsn;
  if (s->imaged)
    m.imaged = (ProtobufCBinaryData){(s->npages + 7) / 8, s->imaged};
  uint64_t *fl = NULL;
  if (s->floor) {
    fl = malloc(2 * s->npages * sizeof *fl);
    for (uint32_t i = 0; i < s->npages; i++)
      if (s->floor[i]) {
        fl[m.n_floors++] = i;
        fl[m.n_floors++] = s->floor[i];
      }
    m.floors = fl;
  }
  Auralog__TruncRange *tr, **trp;
  m.n_truncs = store_truncs_pb(s, &tr, &trp);
  m.truncs = trp;
  size_t n = auralog__seg_meta__get_packed_size(&m);
  uint8_t *buf = malloc(n + 1);
  auralog__seg_meta__pack(&m, buf);
  free(tr);
  free(trp);
  free(fl);
  uint8_t k[12];
  seg_key(k, s->volume_id, s->pg);
  struct kv_val key = {sizeof k, k}, val = {n, buf};
  int rc = kv_put(st->kv, st->txn, st->segs, &key, &val, 0);
  if (rc == 0 && framing(st)) {
    uint8_t *e = frame_add(st, ENT_META, s->volume_id, s->pg, n);
    if (e == NULL)
      rc = ENOMEM;
    else
      memcpy(e, buf, n);
  }
  free(buf);
  return rc ? store_fail(st, rc, why, whylen, "storing a segment") : 0;
}

int store_put_rec(struct store *st, const struct segment *s, const Rec *r,
                  char *why, size_t whylen)
{
  uint8_t k[20], pno[4];
  rec_key(k, s->volume_id, s->pg, r->lsn);
  struct kv_val key = {sizeof k, k}, val;
  val.len = auralog__record__get_packed_size(r);
  /* KV_RESERVE: the kv hands out the space and we pack straight into it. */
  int rc = kv_put(st->kv, st->txn, st->recs, &key, &val, KV_RESERVE);
  if (rc == 0) {
    auralog__record__pack(r, val.data);
    if (framing(st)) {
      uint8_t *e = frame_add(st, ENT_REC, s->volume_id, s->pg, val.len);
      if (e == NULL)
        rc = ENOMEM;
      else
        memcpy(e, val.data, val.len);
    }
  }
  if (rc == 0) {
    /* The page index waits for store_index; unidx remembers the record
     * (same key order as recs: a few appended pages, not one random
     * pidx leaf per record). */
    put_be32(pno, r->page_no);
    struct kv_val pv = {sizeof pno, pno};
    if ((rc = kv_put(st->kv, st->txn, st->unidx, &key, &pv, 0)) == 0)
      st->staged_unidx++;
  }
  return rc ? store_fail(st, rc, why, whylen, "storing records") : 0;
}

int store_index(struct store *st, size_t max, char *why, size_t whylen)
{
  if (st->txn != NULL || st->nunidx == 0)
    return 0;
  struct kv_txn *txn;
  struct kv_cursor *cur;
  int rc = kv_begin(st->kv, 0, &txn);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "indexing records");
  if ((rc = kv_cursor(st->kv, txn, st->unidx, &cur)) != 0) {
    kv_abort(st->kv, txn);
    return store_fail(st, rc, why, whylen, "indexing records");
  }
  struct kv_val key, val;
  size_t done = 0;
  for (rc = kv_cursor_get(st->kv, cur, KV_FIRST, &key, &val); rc == 0 && done < max;
       rc = kv_cursor_get(st->kv, cur, KV_FIRST, &key, &val)) {
    if (key.len != 20 || val.len != 4) {
      rc = kv_cursor_del(st->kv, cur);  /* not ours: cannot be indexed */
      if (rc != 0)
        break;
      continue;
    }
    const uint8_t *kk = key.data;
    uint8_t pk[24];
    memcpy(pk, kk, 12);
    memcpy(pk + 12, val.data, 4);
    memcpy(pk + 16, kk + 12, 8);
    struct kv_val pkey = {sizeof pk, pk}, empty = {0, ""};
    if ((rc = kv_put(st->kv, txn, st->pidx, &pkey, &empty, 0)) != 0 ||
        (rc = kv_cursor_del(st->kv, cur)) != 0)
      break;
    done++;
  }
  kv_cursor_close(st->kv, cur);
  if (rc != 0 && rc != KV_NOTFOUND) {
    kv_abort(st->kv, txn);
    return store_fail(st, rc, why, whylen, "indexing records");
  }
  if ((rc = store_kv_commit(st, txn)) != 0)
    return store_fail(st, rc, why, whylen, "indexing records");
  /* nunidx is a count kept by hand: fewer than max means none are left. */
  st->nunidx = done < max ? 0 : st->nunidx > done ? st->nunidx - done : 0;
  return 0;
}

int store_commit(struct store *st, char *why, size_t whylen)
{
  if (st->txn == NULL)
    return 0;
  /* The kv first, without a sync: if it fails (a full disk, a full map),
   * nothing was stored anywhere, as before the hot log. Then the frame,
   * synced (H1): only then may the node acknowledge. */
  int rc = store_kv_commit(st, st->txn);
  st->txn = NULL;
  if (rc == 0 && framing(st) && st->flen > 0) {
    char hwhy[200];
    int hrc = hl_append(st->hl, st->frame, st->flen, hwhy, sizeof hwhy);
    st->fsyncs++;            /* the group commit's one flush */
    if (hrc != 0) {
      /* H2: the kv holds this commit and no frame does: make it durable
       * in the kv instead (two flushes this once). */
      logwarn_rl("%s; syncing the store instead", hwhy);
      rc = kv_sync(st->kv);
      st->ckpt_fsyncs++;
    }
  } else if (rc == 0 && st->hl && st->txn_sync) {
    rc = kv_sync(st->kv);    /* H2: no frame holds this one */
    st->ckpt_fsyncs++;
  }
  if (rc == 0)
    st->nunidx += st->staged_unidx;
  else if (st->hl && !st->broken && st->kv_committed) {
    /* Committed in the kv and durable nowhere we know of: memory, which
     * is reloaded from the kv after a failure, would count records a
     * power loss can take. Only a restart (replay, then a sync) can tell
     * what is durable: the node must stop (node_commit). */
    st->broken = 1;
  }
  st->staged_unidx = 0;
  st->flen = 0;
  st->txn_sync = 0;
  if (rc != 0 && st->broken) {
    snprintf(why, whylen, "storage cannot sync (%s): what is durable is unknown; "
             "the node must restart", kv_strerror(st->kv, rc));
    return ERR_INTERNAL;
  }
  return rc ? store_fail(st, rc, why, whylen, "committing records") : 0;
}

void store_abort(struct store *st)
{
  if (st->txn)
    kv_abort(st->kv, st->txn);
  st->txn = NULL;
  st->staged_unidx = 0;
  st->flen = 0;
  st->txn_sync = 0;
}

uint64_t store_tail(struct store *st, const struct segment *s, uint64_t upto)
{
  struct kv_txn *txn;
  struct kv_cursor *cur;
  if (store_rtxn(st, &txn) != 0)
    return 0;
  if (kv_cursor(st->kv, txn, st->recs, &cur) != 0) {
    store_rdone(st, txn);
    return 0;
  }
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, upto == UINT64_MAX ? upto : upto + 1);
  struct kv_val key = {sizeof k, k}, val;
  uint64_t tail = 0;
  int rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val);
  rc = rc == 0 ? kv_cursor_get(st->kv, cur, KV_PREV, &key, &val)
               : kv_cursor_get(st->kv, cur, KV_LAST, &key, &val);
  if (rc == 0 && key.len == 20 && memcmp(key.data, k, 12) == 0)
    tail = get_be64((uint8_t *)key.data + 12);
  if (tail > upto)
    tail = 0;
  if (tail < s->gc_lsn && s->gc_lsn <= upto)
    tail = s->gc_lsn;       /* the chain's start after GC: held (see held()) */
  kv_cursor_close(st->kv, cur);
  store_rdone(st, txn);
  return tail;
}

int store_truncate(struct store *st, const struct segment *s, const struct trunc *t,
                   size_t *cut, char *why, size_t whylen)
{
  /* H3: a truncation never rides in a frame; its transaction is synced. */
  st->txn_sync = 1;
  /* First find what the truncation cuts, then delete it by key. */
  struct victim { uint64_t lsn; uint32_t page; int has_page; } *v = NULL;
  size_t n = 0, cap = 0;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, t->from + 1);
  struct kv_cursor *cur;
  struct kv_val key = {sizeof k, k}, val;
  *cut = 0;
  int rc = kv_cursor(st->kv, st->txn, st->recs, &cur);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "truncating");
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    uint64_t lsn = get_be64((uint8_t *)key.data + 12);
    if (lsn > t->to)
      break;
    /* Rule T (record.h): only records of older epochs go. An unreadable
     * one goes too: no epoch can be proved for it. */
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    if (r == NULL || trunc_cuts(t, 1, lsn, r->epoch)) {
      if (n == cap) {
        cap = cap ? 2 * cap : 64;
        v = realloc(v, cap * sizeof *v);
      }
      v[n++] = (struct victim){lsn, r ? r->page_no : 0, r != NULL};
    }
    if (r)
      auralog__record__free_unpacked(r, NULL);
  }
  kv_cursor_close(st->kv, cur);
  if (rc != 0 && rc != KV_NOTFOUND) {
    free(v);
    return store_fail(st, rc, why, whylen, "truncating");
  }
  rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    rec_key(k, s->volume_id, s->pg, v[i].lsn);
    struct kv_val rkey = {sizeof k, k};
    if (v[i].has_page) {
      uint8_t pk[24];
      page_key(pk, s->volume_id, s->pg, v[i].page, v[i].lsn);
      struct kv_val pkey = {sizeof pk, pk};
      kv_del(st->kv, st->txn, st->pidx, &pkey);
    }
    if (kv_del(st->kv, st->txn, st->unidx, &rkey) == 0 && st->nunidx > 0)
      st->nunidx--;         /* approximate: only says when to index */
    rc = kv_del(st->kv, st->txn, st->recs, &rkey);
  }
  free(v);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "truncating");
  *cut = n;
  /* Page versions above `from`: a writer's truncation starts at or above
   * the VDL heard, and versions are made at or below it, so none should
   * exist; an old one gossip brings may start lower (it cuts only records
   * of older epochs, which no version holds). Drop any above `from` all
   * the same, but never one at or below the GC point (those are the only
   * copy of what was freed); coalescing makes them again. */
  struct kv_cursor *ic;
  if (kv_cursor(st->kv, st->txn, st->imgs, &ic) == 0) {
    uint8_t sk[12];
    seg_key(sk, s->volume_id, s->pg);
    struct kv_val ikey = {sizeof sk, sk}, ival;
    int irc;
    for (irc = kv_cursor_get(st->kv, ic, KV_SEEK, &ikey, &ival); irc == 0;) {
      if (ikey.len != 24 || memcmp(ikey.data, sk, 12) != 0)
        break;
      uint64_t ilsn = get_be64((uint8_t *)ikey.data + 16);
      if (ilsn > t->from && ilsn > s->gc_lsn) {
        if ((irc = kv_cursor_del(st->kv, ic)) != 0)
          break;
        irc = kv_cursor_get(st->kv, ic, KV_NEXT, &ikey, &ival);
        continue;
      }
      irc = kv_cursor_get(st->kv, ic, KV_NEXT, &ikey, &ival);
    }
    kv_cursor_close(st->kv, ic);
    if (irc != 0 && irc != KV_NOTFOUND)
      return store_fail(st, irc, why, whylen, "truncating page versions");
  }
  return 0;
}

long store_above(struct store *st, const struct segment *s, uint64_t lsn, Rec ***out,
                 size_t max, int *more)
{
  struct kv_txn *txn;
  struct kv_cursor *cur;
  *out = NULL;
  if (more)
    *more = 0;
  if (store_rtxn(st, &txn) != 0)
    return -1;
  if (kv_cursor(st->kv, txn, st->recs, &cur) != 0) {
    store_rdone(st, txn);
    return -1;
  }
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, lsn + 1);
  struct kv_val key = {sizeof k, k}, val;
  Rec **v = NULL;
  size_t n = 0, cap = 0, bytes = 0;
  for (int r = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); r == 0;
       r = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    /* At most max records, and at most half a frame of them: an answer
     * must always fit in one frame (FRAME_MAX), whatever the page size. */
    if (n == max || (n > 0 && bytes + val.len > FRAME_MAX / 2)) {
      if (more)
        *more = 1;
      break;
    }
    bytes += val.len;
    Rec *rec = auralog__record__unpack(NULL, val.len, val.data);
    char rwhy[160];
    if (rec == NULL || rec_check(rec, s->page_size, rwhy, sizeof rwhy) != ERR_NONE) {
      if (rec)               /* unreadable: never served (rechain says so) */
        auralog__record__free_unpacked(rec, NULL);
      continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      v = realloc(v, cap * sizeof *v);
    }
    v[n++] = rec;
  }
  kv_cursor_close(st->kv, cur);
  store_rdone(st, txn);
  *out = v;
  return (long)n;
}

/* ---- replaying the hot log ------------------------------------------------- */

/* The segments a replay touched, rebuilt from the kv as it goes (the
 * replay's own transaction), so that each record goes through seg_admit
 * against the chain and truncations the segment holds. */
struct replay {
  struct store *st;
  struct segment **segs;
  uint8_t *changed;          /* per segment: its SegMeta must be rewritten */
  size_t nsegs;
  uint64_t recs, skipped, refused;
  int rc;                    /* the first kv error (then nothing more is done) */
  char why[256];
};

static struct segment *replay_seg(struct replay *rp, uint64_t vol, uint32_t pg,
                                  const Auralog__SegMeta *m)
{
  for (size_t i = 0; i < rp->nsegs; i++)
    if (rp->segs[i]->volume_id == vol && rp->segs[i]->pg == pg)
      return rp->segs[i];
  struct store *st = rp->st;
  struct segment *s = calloc(1, sizeof *s);
  uint8_t k[12];
  seg_key(k, vol, pg);
  struct kv_val key = {sizeof k, k}, val;
  if (kv_get(st->kv, st->txn, st->segs, &key, &val) == 0) {
    if (load_one(st, st->txn, &val, s, rp->why, sizeof rp->why) != 0) {
      free(s);
      return NULL;           /* a SegMeta the kv cannot read: left alone */
    }
  } else if (m && m->seg && m->seg->volume_id == vol && m->seg->pg == pg) {
    /* A segment the kv never saw committed: its first frames are here. */
    seg_init(s, vol, pg, m->seg->first_page, m->seg->npages, m->seg->page_size);
  } else {
    free(s);
    return NULL;
  }
  rp->segs = realloc(rp->segs, (rp->nsegs + 1) * sizeof *rp->segs);
  rp->changed = realloc(rp->changed, rp->nsegs + 1);
  rp->changed[rp->nsegs] = kv_get(st->kv, st->txn, st->segs, &key, &val) != 0;
  rp->segs[rp->nsegs++] = s;
  return s;
}

/* H4: merge a SegMeta from a frame into the segment: never lower. */
static void replay_meta(struct replay *rp, uint64_t vol, uint32_t pg, const uint8_t *p,
                        size_t n)
{
  struct store *st = rp->st;
  Auralog__SegMeta *m = auralog__seg_meta__unpack(NULL, n, p);
  struct segment *s = m ? replay_seg(rp, vol, pg, m) : NULL;
  if (s == NULL) {
    rp->skipped++;
    if (m)
      auralog__seg_meta__free_unpacked(m, NULL);
    return;
  }
  uint8_t *changed = &rp->changed[rp->nsegs - 1];
  for (size_t i = 0; i < rp->nsegs; i++)
    if (rp->segs[i] == s)
      changed = &rp->changed[i];
  if (m->epoch > s->epoch || m->vdl > s->vdl)
    *changed = 1;
  if (m->epoch > s->epoch)
    s->epoch = m->epoch;
  if (m->vdl > s->vdl)
    s->vdl = m->vdl;
  uint64_t min_from = UINT64_MAX;
  for (size_t i = 0; i < m->n_truncs && rp->rc == 0; i++) {
    struct trunc t = {m->truncs[i]->epoch, m->truncs[i]->from, m->truncs[i]->to};
    trunc_proof_from_pb(&t.proof, m->truncs[i]);
    if (t.to <= t.from || seg_has_trunc(s, t.epoch, t.from, t.to))
      continue;
    /* A truncation the kv lacks (it never should: truncations are synced
     * in the kv, H3): install it as trunc.c does, cutting what it cuts. */
    size_t cut;
    *changed = 1;
    rp->rc = store_truncate(st, s, &t, &cut, rp->why, sizeof rp->why);
    seg_add_trunc(s, &t);
    if (t.from < min_from)
      min_from = t.from;
  }
  if (rp->rc == 0 && min_from < s->scl)
    rp->rc = rechain(st, st->txn, s, store_tail(st, s, min_from), rp->why,
                     sizeof rp->why);
  auralog__seg_meta__free_unpacked(m, NULL);
}

static void replay_rec(struct replay *rp, uint64_t vol, uint32_t pg, const uint8_t *p,
                       size_t n)
{
  struct store *st = rp->st;
  Rec *r = auralog__record__unpack(NULL, n, p);
  struct segment *s = r ? replay_seg(rp, vol, pg, NULL) : NULL;
  char rwhy[200];
  if (s == NULL || rec_check(r, s->page_size, rwhy, sizeof rwhy) != ERR_NONE) {
    rp->skipped++;
    if (r)
      auralog__record__free_unpacked(r, NULL);
    return;
  }
  int dup = 0;
  uint64_t held_epoch = 0;
  /* H3: what a held truncation cuts, or what contradicts the chain, is
   * refused here as it would be from the network. */
  if (seg_admit(s, r, &dup, rwhy, sizeof rwhy) != ERR_NONE) {
    rp->refused++;
  } else if (!dup) {
    rp->rc = store_put_rec(st, s, r, rp->why, sizeof rp->why);
    if (rp->rc == 0) {
      seg_add(s, r->lsn, r->prev_lsn);   /* durable once the replay commits */
      rp->recs++;
      for (size_t i = 0; i < rp->nsegs; i++)
        if (rp->segs[i] == s)
          rp->changed[i] = 1;
    }
  } else if (held(st, st->txn, s, r->lsn, &held_epoch) && held_epoch < r->epoch) {
    /* A copy adopted by a recovery (node_stage): the newer epoch's wins. */
    rp->rc = store_put_rec(st, s, r, rp->why, sizeof rp->why);
    rp->recs += rp->rc == 0;
  }
  auralog__record__free_unpacked(r, NULL);
}

/* One whole frame of the hot log (hl_open's callback): its SegMetas
 * first, then its records. */
static void replay_frame(void *arg, uint64_t seq, const uint8_t *p, size_t n)
{
  struct replay *rp = arg;
  (void)seq;
  for (int pass = 0; pass < 2 && rp->rc == 0; pass++) {
    for (size_t off = 0; off + ENT_HDR <= n && rp->rc == 0;) {
      int type = p[off];
      uint64_t vol = get_be64(p + off + 1);
      uint32_t pg = get_be32(p + off + 9);
      uint32_t len = get_be32(p + off + 13);
      if (len > n - off - ENT_HDR)
        break;               /* cannot be: the frame's CRC held */
      const uint8_t *e = p + off + ENT_HDR;
      if (pass == 0 && type == ENT_META)
        replay_meta(rp, vol, pg, e, len);
      else if (pass == 1 && type == ENT_REC)
        replay_rec(rp, vol, pg, e, len);
      off += ENT_HDR + (size_t)len;
    }
  }
}

/* Take the hot log in f: replay it into the kv (one transaction), sync
 * the kv and restart the log (H5), then switch the kv's syncs off. */
static int open_hot(struct store *st, struct hl_file f, uint64_t ckpt, uint64_t chunk,
                    char *why, size_t whylen)
{
  st->hot_ckpt = ckpt ? ckpt : HOTLOG_CHECKPOINT;
  st->hot_shrink = 2 * st->hot_ckpt;
  st->hl = calloc(1, sizeof *st->hl);
  struct replay rp = {.st = st};
  int rc = st->hl ? kv_set_nosync(st->kv, 1) : ENOMEM;
  if (rc != 0) {
    snprintf(why, whylen, "cannot open storage: %s", kv_strerror(st->kv, rc));
    f.ops->close(f.ctx);
    store_close(st);
    return -1;
  }
  st->syncs_per_commit = st->kv->syncs_per_commit;
  if ((rc = store_begin(st, why, whylen)) != 0) {
    f.ops->close(f.ctx);
    store_close(st);
    return -1;
  }
  st->replaying = 1;
  if (hl_open(st->hl, f, chunk, replay_frame, &rp, why, whylen) != 0) {
    free(st->hl);            /* hl_open closed f */
    st->hl = NULL;
    store_close(st);
    return -1;
  }
  /* Each changed segment's SegMeta, merged, with the SCL of its chain.
   * (Only those: a replay that finds everything held writes nothing, so
   * a node whose disk is full can still start.) */
  for (size_t i = 0; i < rp.nsegs && rp.rc == 0; i++)
    if (rp.changed[i])
      rp.rc = store_put_meta(st, rp.segs[i], rp.why, sizeof rp.why);
  free(rp.changed);
  st->replaying = 0;
  for (size_t i = 0; i < rp.nsegs; i++) {
    seg_free(rp.segs[i]);
    free(rp.segs[i]);
  }
  free(rp.segs);
  if (rp.rc != 0) {
    snprintf(why, whylen, "replaying the hot log: %s", rp.why);
    store_close(st);
    return -1;
  }
  st->txn_sync = 0;
  /* H5: the kv synced (whatever a previous process left in the page
   * cache included) and the log restarted, before anything is served. */
  int frames = hl_used(st->hl) > HL_HDR;
  if ((rc = store_commit(st, why, whylen)) != 0 ||
      (rc = frames ? store_checkpoint(st, why, whylen) : kv_sync(st->kv)) != 0) {
    if (!frames)
      snprintf(why, whylen, "cannot sync storage: %s", kv_strerror(st->kv, rc));
    store_close(st);
    return -1;
  }
  /* The counters are the serving node's (bench): the open's work apart. */
  st->commits = st->fsyncs = st->ckpt_fsyncs = st->checkpoints = 0;
  st->replayed = rp.recs;
  if (st->hl->replayed || st->hl->damaged || rp.skipped || rp.refused)
    loginfo("hot log: replayed %llu frame%s (%llu record%s new to the store, %llu "
            "refused, %llu unreadable), %llu damaged frame%s skipped",
            (unsigned long long)st->hl->replayed, st->hl->replayed == 1 ? "" : "s",
            (unsigned long long)rp.recs, rp.recs == 1 ? "" : "s",
            (unsigned long long)rp.refused, (unsigned long long)rp.skipped,
            (unsigned long long)st->hl->damaged, st->hl->damaged == 1 ? "" : "s");
  return 0;
}
