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
 * into a page index too (a key in page order: a random leaf, and its
 * branch pages, per record) made a group commit of ~110 records write ~220
 * lmdb pages (strace, 32 clients), and its fdatasync took ~4 ms. recs is
 * in LSN order, so a commit appends to a few pages per PG; the page index
 * is in memory (store_pmap.c).
 *
 * The hot log (hotlog.c, store_hot.c; on unless `auralog node
 * --no-hot-log`). lmdb's durable commit is two device flushes; a node
 * with a hot log puts lmdb in batched mode (kv_set_nosync; kv_lmdb.c:
 * lmdb commits only at checkpoints) and makes a group commit durable with
 * one: store_commit commits the kv (in memory), then appends one frame
 * holding everything the transaction stored and fdatasyncs it; the node
 * acknowledges after. A
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
 *       fence: store_sync_txn) sync the kv themselves.
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
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "node/hotlog.h"
#include "node/store_int.h"
#include "param.h"
#include "net/wire.h"

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

/* Empty database name, if the store has it (*n: keys deleted). */
static int empty_db(struct store *st, struct kv_txn *txn, const char *name, size_t *n)
{
  unsigned db;
  struct kv_cursor *cur;
  struct kv_val key, val;
  int rc = kv_db(st->kv, txn, name, &db);
  if (rc == 0)
    rc = kv_cursor(st->kv, txn, db, &cur);
  if (rc != 0)
    return rc;
  while ((rc = kv_cursor_get(st->kv, cur, KV_FIRST, &key, &val)) == 0 &&
         (rc = kv_cursor_del(st->kv, cur)) == 0)
    (*n)++;
  kv_cursor_close(st->kv, cur);
  return rc == KV_NOTFOUND ? 0 : rc;
}

/* Format 2 -> 3: the same records, segments and versions; its page index
 * (pidx, and unidx for what was not indexed yet) is now the page map's,
 * built at load from recs. Emptied, so nothing stale is ever read. */
static int upgrade_from_2(struct store *st, struct kv_txn *txn)
{
  size_t n = 0;
  int rc = empty_db(st, txn, "pidx", &n);
  if (rc == 0)
    rc = empty_db(st, txn, "unidx", &n);
  if (rc == 0)
    loginfo("storage upgraded from format 2 to %d: the page index (%zu entries) now lives "
            "in memory, built from the records at start", STORE_FORMAT, n);
  return rc;
}

/* The store's format (STORE_FORMAT), in database "format": what a store
 * holds, as it was when opened first. A store with segments or a hot log
 * and no format was written by an auralog before formats were named
 * (format 1: zlib crc32 sums); its sums would all look damaged, so it is
 * refused, with what to do, rather than served or "repaired". An empty
 * new one is stamped. *found: the format found (0: none stamped yet). */
static int check_format(struct store *st, struct kv_txn *txn, int had_log, unsigned *found)
{
  unsigned db;
  uint8_t fk[5] = {'s', 't', 'o', 'r', 'e'}, fv[4];
  struct kv_val key = {sizeof fk, fk}, val;
  int rc = kv_db(st->kv, txn, "format", &db);
  if (rc != 0)
    return rc;
  *found = 0;
  rc = kv_get(st->kv, txn, db, &key, &val);
  if (rc == 0) {
    *found = val.len == 4 ? get_be32(val.data) : 1;
    if (*found == 2 && (rc = upgrade_from_2(st, txn)) == 0) {
      put_be32(fv, STORE_FORMAT);
      val = (struct kv_val){sizeof fv, fv};
      *found = STORE_FORMAT;
      rc = kv_put(st->kv, txn, db, &key, &val, 0);
    }
    return rc;
  }
  if (rc != KV_NOTFOUND)
    return rc;
  size_t nsegs = 0;
  if ((rc = kv_count(st->kv, txn, st->segs, &nsegs)) != 0)
    return rc;
  if (nsegs > 0 || had_log) {
    *found = 1;
    return 0;
  }
  put_be32(fv, STORE_FORMAT);
  val = (struct kv_val){sizeof fv, fv};
  *found = STORE_FORMAT;
  return kv_put(st->kv, txn, db, &key, &val, 0);
}

/* Open the databases (where: the directory, for messages; may be NULL;
 * had_log: a hot log was there). */
static int open_kv(struct store *st, struct kv *kv, const char *where, int had_log,
                   char *why, size_t whylen)
{
  memset(st, 0, sizeof *st);
  st->kv = kv;
  st->syncs_per_commit = kv->syncs_per_commit;
  struct kv_txn *txn;
  unsigned format = STORE_FORMAT;
  int rc = kv_begin(kv, 0, &txn);
  if (rc == 0) {
    if (rc == 0) rc = kv_db(kv, txn, "segs", &st->segs);
    if (rc == 0) rc = kv_db(kv, txn, "recs", &st->recs);
    if (rc == 0) rc = kv_db(kv, txn, "imgs", &st->imgs);
    if (rc == 0)
      rc = check_format(st, txn, had_log, &format);
    if (rc == 0 && format == STORE_FORMAT)
      rc = store_kv_commit(st, txn);
    else
      kv_abort(kv, txn);
  }
  if (rc == 0 && format != STORE_FORMAT) {
    snprintf(why, whylen, "storage%s%s was written by %s auralog (store format %u); this "
             "one reads only format %d: start the cluster in a new directory (or delete "
             "this one: its data is lost)", where ? " in " : "", where ? where : "",
             format < STORE_FORMAT ? "an older" : "a newer", format, STORE_FORMAT);
    kv_close(kv);
    st->kv = NULL;
    return -1;
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


int store_open(struct store *st, const char *dir, int hot, char *why, size_t whylen)
{
  struct kv *kv;
  memset(st, 0, sizeof *st);
  char path[1024];
  struct hl_file f;
  snprintf(path, sizeof path, "%s/hot.log", dir);
  struct stat sb;
  int had_log = stat(path, &sb) == 0 && sb.st_size > 0;
  if (kv_lmdb_open(dir, NODE_MAP_SIZE, &kv, why, whylen) != 0)
    return -1;
  if (open_kv(st, kv, dir, had_log, why, whylen) != 0)
    return -1;
  st->timed = 1;             /* a real disk: the simulator's clock is not the wall's */
  if (!hot && access(path, F_OK) != 0)
    return 0;                /* lmdb alone, each commit synced */
  if (hl_file_posix(path, &f, why, whylen) != 0) {
    store_close(st);
    return -1;
  }
  if (store_open_hot_log(st, f, HOTLOG_CHECKPOINT, HOTLOG_CHUNK, why, whylen) != 0)
    return -1;
  if (hot)
    return 0;
  /* A log a run with the hot log left: replayed, checkpointed (open_hot),
   * and then gone, the store syncing each commit itself again. */
  hl_close(st->hl);
  free(st->hl);
  st->hl = NULL;
  int rc = kv_set_nosync(st->kv, 0);
  st->syncs_per_commit = st->kv->syncs_per_commit;
  if (rc != 0 || unlink(path) != 0) {
    snprintf(why, whylen, "cannot leave the hot log %s: %s", path,
             rc ? kv_strerror(st->kv, rc) : strerror(errno));
    store_close(st);
    return -1;
  }
  return 0;
}

int store_open_kv(struct store *st, struct kv *kv, char *why, size_t whylen)
{
  return open_kv(st, kv, NULL, 0, why, whylen);
}

int store_open_hot(struct store *st, struct kv *kv, struct hl_file f, uint64_t ckpt,
                   uint64_t chunk, char *why, size_t whylen)
{
  if (open_kv(st, kv, NULL, 0, why, whylen) != 0) {
    f.ops->close(f.ctx);
    return -1;
  }
  return store_open_hot_log(st, f, ckpt, chunk, why, whylen);
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
  store_pmap_free(st);
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
  seg.mepoch = s->mepoch;
  seg.mepoch_min = s->mepoch_min;
  seg.since = s->since;
  seg.pos = s->pos;
  seg.next = s->next;
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
  uint64_t heard[2 * HEARD_MAX];
  for (size_t i = 0; i < s->nheard; i++) {
    heard[2 * i] = s->heard[i].epoch;
    heard[2 * i + 1] = s->heard[i].vdl;
  }
  m.heard = heard;
  m.n_heard = 2 * s->nheard;
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
  if (rc == 0 && store_framing(st)) {
    uint8_t *e = store_frame_add(st, ENT_META, s->volume_id, s->pg, n);
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
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, r->lsn);
  struct kv_val key = {sizeof k, k}, val;
  val.len = st->last_put_len = auralog__record__get_packed_size(r);
  /* KV_RESERVE: the kv hands out the space and we pack straight into it. */
  int rc = kv_put(st->kv, st->txn, st->recs, &key, &val, KV_RESERVE);
  if (rc == 0) {
    auralog__record__pack(r, val.data);
    if (store_framing(st)) {
      uint8_t *e = store_frame_add(st, ENT_REC, s->volume_id, s->pg, val.len);
      if (e == NULL)
        rc = ENOMEM;
      else
        memcpy(e, val.data, val.len);
    }
  }
  if (rc == 0) {
    store_pmap_add(st, s->volume_id, s->pg, r->page_no, r->lsn);
    store_rc_put(st, s->volume_id, s->pg, r);   /* Invariant R: the copy stored */
  }
  return rc ? store_fail(st, rc, why, whylen, "storing records") : 0;
}

int store_commit(struct store *st, char *why, size_t whylen)
{
  if (st->txn == NULL)
    return 0;
  /* The kv first, without a sync: if it fails (a full disk, a full map),
   * nothing was stored anywhere, as before the hot log. Then the frame,
   * synced (H1): only then may the node acknowledge. */
  unsigned long long t0 = st->timed ? now_us() : 0;
  uint64_t commits = st->commits;
  int rc = store_kv_commit(st, st->txn);
  st->txn = NULL;
  if (rc == 0 && store_framing(st) && st->flen > 0) {
    char hwhy[200];
    int hrc = hl_append(st->hl, st->frame, st->flen, hwhy, sizeof hwhy);
    st->fsyncs++;            /* the group commit's one flush */
    if (hrc != 0) {
      /* H2: the kv holds this commit and no frame does: make it durable
       * in the kv instead (two flushes this once). */
      logwarn_rl("%s; syncing the store instead", hwhy);
      rc = kv_sync(st->kv);
      st->ckpt_fsyncs += st->kv->syncs_per_sync;
    }
  } else if (rc == 0 && st->hl && st->txn_sync) {
    rc = kv_sync(st->kv);    /* H2: no frame holds this one */
    st->ckpt_fsyncs += st->kv->syncs_per_sync;
  }
  if (rc == 0 && st->commits > commits && st->timed)
    st->persist_us += now_us() - t0;   /* for bench's stage breakdown */
  /* Invariant P (store_pmap.c): the map keeps the transaction's changes
   * if the kv does, and undoes them if nothing of it was stored. */
  if (st->kv_committed)
    store_pmap_commit(st);
  else
    store_pmap_abort(st);
  if (rc != 0 && st->hl && !st->broken && st->kv_committed) {
    /* Committed in the kv and durable nowhere we know of: memory, which
     * is reloaded from the kv after a failure, would count records a
     * power loss can take. Only a restart (replay, then a sync) can tell
     * what is durable: the node must stop (node_commit). */
    st->broken = 1;
  }
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
  store_pmap_abort(st);      /* Invariant P: the map as the kv is again */
  if (st->txn)
    kv_abort(st->kv, st->txn);
  st->txn = NULL;
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
    if (v[i].has_page)
      store_pmap_del(st, s->volume_id, s->pg, v[i].page, v[i].lsn);
    else
      store_pmap_del_lsn(st, s, v[i].lsn);  /* its page cannot be read */
    rc = kv_del(st->kv, st->txn, st->recs, &rkey);
  }
  free(v);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "truncating");
  *cut = n;
  return 0;
}

long store_above(struct store *st, const struct segment *s, uint64_t lsn, Rec ***out,
                 size_t max, int *more)
{
  return store_above_max(st, s, lsn, out, max, FRAME_MAX / 2, more);
}

long store_above_max(struct store *st, const struct segment *s, uint64_t lsn, Rec ***out,
                     size_t max, size_t max_bytes, int *more)
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
    if (max_bytes > FRAME_MAX / 2)
      max_bytes = FRAME_MAX / 2;
    if (n == max || (n > 0 && bytes + val.len > max_bytes)) {
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


/* Delete every key of db that starts with the 12-byte segment key k
 * (*n: how many). */
static int del_prefix(struct store *st, unsigned db, const uint8_t k[12], uint64_t *n)
{
  struct kv_cursor *cur;
  int rc = kv_cursor(st->kv, st->txn, db, &cur);
  if (rc != 0)
    return rc;
  uint8_t seek[12];
  memcpy(seek, k, sizeof seek);
  struct kv_val key = {sizeof seek, seek}, val;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;) {
    if (key.len < 12 || memcmp(key.data, k, 12) != 0)
      break;
    if ((rc = kv_cursor_del(st->kv, cur)) != 0)
      break;
    (*n)++;
    rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val);
  }
  kv_cursor_close(st->kv, cur);
  return rc == KV_NOTFOUND ? 0 : rc;
}

int store_drop_seg(struct store *st, const struct segment *s, uint64_t *nrecs,
                   uint64_t *nimgs, char *why, size_t whylen)
{
  uint8_t k[12];
  seg_key(k, s->volume_id, s->pg);
  *nrecs = *nimgs = 0;
  struct kv_val key = {sizeof k, k};
  int rc = kv_del(st->kv, st->txn, st->segs, &key);
  if (rc == KV_NOTFOUND)
    rc = 0;                  /* assigned and never committed: nothing there */
  if (rc == 0)
    rc = del_prefix(st, st->recs, k, nrecs);
  if (rc == 0)
    store_pmap_drop_seg(st, s);
  if (rc == 0)
    rc = del_prefix(st, st->imgs, k, nimgs);
  if (rc != 0)
    return store_fail(st, rc, why, whylen, "dropping a segment");
  return 0;
}
