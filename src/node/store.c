/*
 * store.c: segments in lmdb (see store.h).
 *
 * Durability: lmdb's commit writes the data and fsyncs before returning
 * (the env is opened without MDB_NOSYNC), so once store_commit() returns 0
 * the records survive kill -9 and power loss. The SCL kept in SegMeta is
 * only a hint written with the next batch; at start the node chains every
 * record above it again (store_load), so a stale hint costs time, never
 * correctness.
 *
 * What a commit costs (the fsyncs counter), measured with strace -f -T on
 * a node under load (Debian 12, lmdb 0.9.24, ext4), default flags: lmdb
 * pwrite()s the dirty pages to data.mdb, fdatasync()s it, then pwrite()s
 * the meta page through a second descriptor of data.mdb opened O_DSYNC.
 * `strace -c -e trace=fsync,fdatasync,msync,sync_file_range` shows one
 * fdatasync per commit, but the O_DSYNC write is a sync all the same: it
 * returns once the device has the page, taking as long as the fdatasync
 * (0.1-0.3 ms here, against ~10 us for the plain pwrites). So a commit is
 * two device flushes, one after the other, and fsyncs counts two: the
 * first puts the new tree on disk before the meta page that points to it,
 * the second makes the commit durable before mdb_txn_commit returns.
 *
 * The pages a commit dirties cost more than its syncs: writing each record
 * into pidx too (a key in page order: a random leaf, and its branch pages,
 * per record) made a group commit of ~110 records write ~220 pages (strace,
 * 32 clients), and its fdatasync took ~4 ms. Hence the deferred index
 * (store.h): recs and unidx are both in LSN order, so a commit appends to
 * a few pages per PG, and store_index pays for the random leaves once per
 * large batch (records of one page in a batch share their leaf).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/log.h"
#include "node/store.h"
#include "param.h"
#include "wire.h"

static void seg_key(uint8_t k[12], uint64_t vol, uint32_t pg)
{
  put_be64(k, vol);
  put_be32(k + 8, pg);
}

static void rec_key(uint8_t k[20], uint64_t vol, uint32_t pg, uint64_t lsn)
{
  seg_key(k, vol, pg);
  put_be64(k + 12, lsn);
}

static void page_key(uint8_t k[24], uint64_t vol, uint32_t pg, uint32_t page,
                     uint64_t lsn)
{
  seg_key(k, vol, pg);
  put_be32(k + 12, page);
  put_be64(k + 16, lsn);
}

static int fail(int rc, char *why, size_t whylen, const char *what)
{
  if (rc == MDB_MAP_FULL || rc == ENOSPC) {
    snprintf(why, whylen, "disk full while %s: nothing was stored", what);
    return ERR_DISK_FULL;
  }
  snprintf(why, whylen, "storage error while %s: %s", what, mdb_strerror(rc));
  return ERR_INTERNAL;
}

/* Device syncs per commit with the env's flags (see the top). */
static unsigned syncs_per_commit(MDB_env *env)
{
  unsigned flags = 0;
  mdb_env_get_flags(env, &flags);
  if (flags & MDB_NOSYNC)
    return 0;               /* nothing synced at commit */
  if ((flags & MDB_WRITEMAP) && (flags & MDB_MAPASYNC))
    return 0;               /* msync(MS_ASYNC): only scheduled */
  if (flags & MDB_NOMETASYNC)
    return 1;               /* the meta page rides on the next commit's sync */
  return 2;                 /* the pages, then the meta page */
}

/* Commit a write transaction and count it if lmdb wrote it: one that
 * changed nothing ends without writing or syncing, and without taking
 * the next transaction id. */
static int commit(struct store *st, MDB_txn *txn)
{
  size_t id = mdb_txn_id(txn);
  int rc = mdb_txn_commit(txn);
  MDB_envinfo info;
  if (rc == 0 && mdb_env_info(st->env, &info) == 0 && info.me_last_txnid == id) {
    st->commits++;
    st->fsyncs += st->syncs_per_commit;
  }
  return rc;
}

int store_open(struct store *st, const char *dir, char *why, size_t whylen)
{
  memset(st, 0, sizeof *st);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  int rc = mdb_env_create(&st->env);
  if (rc == 0)
    rc = mdb_env_set_mapsize(st->env, NODE_MAP_SIZE);
  if (rc == 0)
    rc = mdb_env_set_maxdbs(st->env, 8);
  if (rc == 0)
    rc = mdb_env_open(st->env, dir, 0, 0644);
  if (rc != 0) {
    snprintf(why, whylen, "cannot open storage in %s: %s", dir, mdb_strerror(rc));
    if (st->env)
      mdb_env_close(st->env);
    st->env = NULL;
    return -1;
  }
  st->syncs_per_commit = syncs_per_commit(st->env);
  MDB_txn *txn;
  rc = mdb_txn_begin(st->env, NULL, 0, &txn);
  if (rc == 0) rc = mdb_dbi_open(txn, "segs", MDB_CREATE, &st->segs);
  if (rc == 0) rc = mdb_dbi_open(txn, "recs", MDB_CREATE, &st->recs);
  if (rc == 0) rc = mdb_dbi_open(txn, "pidx", MDB_CREATE, &st->pidx);
  if (rc == 0) rc = mdb_dbi_open(txn, "imgs", MDB_CREATE, &st->imgs);
  if (rc == 0) rc = mdb_dbi_open(txn, "unidx", MDB_CREATE, &st->unidx);
  MDB_stat ms;
  if (rc == 0 && (rc = mdb_stat(txn, st->unidx, &ms)) == 0)
    st->nunidx = ms.ms_entries;   /* left by a crash: indexed next */
  if (rc == 0)
    rc = commit(st, txn);
  else
    mdb_txn_abort(txn);
  if (rc != 0) {
    snprintf(why, whylen, "cannot open storage in %s: %s", dir, mdb_strerror(rc));
    mdb_env_close(st->env);
    st->env = NULL;
    return -1;
  }
  return 0;
}

void store_close(struct store *st)
{
  if (st->txn)
    store_abort(st);
  if (st->env)
    mdb_env_close(st->env);
  st->env = NULL;
}

/* Does txn hold the record (s, lsn)? If so and epoch is not NULL, *epoch
 * is the stored record's epoch (0 if it cannot be read). */
static int held(struct store *st, MDB_txn *txn, const struct segment *s, uint64_t lsn,
                uint64_t *epoch)
{
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, lsn);
  MDB_val key = {sizeof k, k}, val;
  if (mdb_get(txn, st->recs, &key, &val) != 0)
    return 0;
  if (epoch) {
    Rec *r = auralog__record__unpack(NULL, val.mv_size, val.mv_data);
    *epoch = r ? r->epoch : 0;
    if (r)
      auralog__record__free_unpacked(r, NULL);
  }
  return 1;
}

/* Chain s again from base: every stored record above it, in LSN order. A
 * stored record that cannot be read back is reported and left out: it
 * leaves a hole that gossip fills with a good copy (which replaces it),
 * and the rest of the segment is served meanwhile. */
static int rechain(struct store *st, MDB_txn *txn, struct segment *s, uint64_t base,
                   char *why, size_t whylen)
{
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, st->recs, &cur);
  if (rc != 0)
    return fail(rc, why, whylen, "loading segments");
  seg_rechain(s, base);
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, base + 1);
  MDB_val key = {sizeof k, k}, val;
  for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
    if (key.mv_size != 20 || memcmp(key.mv_data, k, 12) != 0)
      break;
    Rec *r = auralog__record__unpack(NULL, val.mv_size, val.mv_data);
    char rwhy[160];
    if (r == NULL || rec_check(r, s->page_size, rwhy, sizeof rwhy) != ERR_NONE) {
      logwarn("volume %llu pg %u: stored record %llu is unreadable; not served "
              "(a PG peer's copy will replace it)", (unsigned long long)s->volume_id,
              s->pg, (unsigned long long)get_be64((uint8_t *)key.mv_data + 12));
      if (r)
        auralog__record__free_unpacked(r, NULL);
      continue;
    }
    seg_add(s, r->lsn, r->prev_lsn);
    auralog__record__free_unpacked(r, NULL);
  }
  mdb_cursor_close(cur);
  return 0;
}

/* Rebuild one segment: its SegMeta, then every record above the hint. */
static int load_one(struct store *st, MDB_txn *txn, const MDB_val *v,
                    struct segment *s, char *why, size_t whylen)
{
  Auralog__SegMeta *m = auralog__seg_meta__unpack(NULL, v->mv_size, v->mv_data);
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
    seg_add_trunc(s, m->truncs[i]->epoch, m->truncs[i]->from, m->truncs[i]->to);
  uint64_t base = m->scl;
  auralog__seg_meta__free_unpacked(m, NULL);
  /* The SCL hint names a record that is on disk (commit_group writes the
   * SCL before this commit's records are chained, node_truncate after the
   * rechain): if it does not, do not believe it; chain from the start. */
  if (base && !held(st, txn, s, base, NULL)) {
    logwarn("volume %llu pg %u: its SCL hint %llu names no stored record; "
            "chaining from the start", (unsigned long long)s->volume_id, s->pg,
            (unsigned long long)base);
    base = 0;
  }
  return rechain(st, txn, s, base, why, whylen);
}

int store_reload(struct store *st, struct segment *s, char *why, size_t whylen)
{
  MDB_txn *txn;
  int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
  if (rc != 0)
    return fail(rc, why, whylen, "reloading a segment");
  uint8_t k[12];
  seg_key(k, s->volume_id, s->pg);
  MDB_val key = {sizeof k, k}, val;
  struct segment fresh;
  rc = mdb_get(txn, st->segs, &key, &val);
  if (rc == 0) {
    if (load_one(st, txn, &val, &fresh, why, whylen) != 0) {
      mdb_txn_abort(txn);
      return ERR_INTERNAL;
    }
  } else {
    /* Never committed: a segment just assigned, with nothing on disk. */
    seg_init(&fresh, s->volume_id, s->pg, s->first_page, s->npages, s->page_size);
  }
  mdb_txn_abort(txn);
  seg_free(s);
  *s = fresh;
  return 0;
}

int store_held(struct store *st, const struct segment *s, uint64_t lsn, uint64_t *epoch)
{
  MDB_txn *txn = st->txn;
  if (txn == NULL && mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) != 0)
    return 0;
  int h = held(st, txn, s, lsn, epoch);
  if (txn != st->txn)
    mdb_txn_abort(txn);
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
  MDB_txn *txn;
  MDB_cursor *cur;
  int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
  if (rc != 0) {
    fail(rc, why, whylen, "loading segments");
    return -1;
  }
  mdb_cursor_open(txn, st->segs, &cur);
  MDB_val key, val;
  int out = 0;
  for (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
    struct segment s;
    if (load_one(st, txn, &val, &s, why, whylen) != 0) {
      out = -1;
      break;
    }
    fn(arg, &s);
  }
  mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return out;
}

int store_begin(struct store *st, char *why, size_t whylen)
{
  if (st->txn)
    return 0;
  int rc = mdb_txn_begin(st->env, NULL, 0, &st->txn);
  if (rc != 0) {
    st->txn = NULL;
    return fail(rc, why, whylen, "starting a write");
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
  Auralog__TruncRange *tr, **trp;
  m.n_truncs = store_truncs_pb(s, &tr, &trp);
  m.truncs = trp;
  size_t n = auralog__seg_meta__get_packed_size(&m);
  uint8_t *buf = malloc(n + 1);
  auralog__seg_meta__pack(&m, buf);
  free(tr);
  free(trp);
  uint8_t k[12];
  seg_key(k, s->volume_id, s->pg);
  MDB_val key = {sizeof k, k}, val = {n, buf};
  int rc = mdb_put(st->txn, st->segs, &key, &val, 0);
  free(buf);
  return rc ? fail(rc, why, whylen, "storing a segment") : 0;
}

int store_put_rec(struct store *st, const struct segment *s, const Rec *r,
                  char *why, size_t whylen)
{
  uint8_t k[20], pno[4];
  rec_key(k, s->volume_id, s->pg, r->lsn);
  MDB_val key = {sizeof k, k}, val;
  val.mv_size = auralog__record__get_packed_size(r);
  /* MDB_RESERVE: lmdb hands out the space and we pack straight into it. */
  int rc = mdb_put(st->txn, st->recs, &key, &val, MDB_RESERVE);
  if (rc == 0) {
    auralog__record__pack(r, val.mv_data);
    /* The page index waits for store_index; unidx remembers the record
     * (same key order as recs: a few appended pages, not one random
     * pidx leaf per record). */
    put_be32(pno, r->page_no);
    MDB_val pv = {sizeof pno, pno};
    if ((rc = mdb_put(st->txn, st->unidx, &key, &pv, 0)) == 0)
      st->staged_unidx++;
  }
  return rc ? fail(rc, why, whylen, "storing records") : 0;
}

int store_index(struct store *st, size_t max, char *why, size_t whylen)
{
  if (st->txn != NULL || st->nunidx == 0)
    return 0;
  MDB_txn *txn;
  MDB_cursor *cur;
  int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
  if (rc != 0)
    return fail(rc, why, whylen, "indexing records");
  if ((rc = mdb_cursor_open(txn, st->unidx, &cur)) != 0) {
    mdb_txn_abort(txn);
    return fail(rc, why, whylen, "indexing records");
  }
  MDB_val key, val;
  size_t done = 0;
  for (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); rc == 0 && done < max;
       rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST)) {
    if (key.mv_size != 20 || val.mv_size != 4) {
      rc = mdb_cursor_del(cur, 0);    /* not ours: cannot be indexed */
      if (rc != 0)
        break;
      continue;
    }
    const uint8_t *kk = key.mv_data;
    uint8_t pk[24];
    memcpy(pk, kk, 12);
    memcpy(pk + 12, val.mv_data, 4);
    memcpy(pk + 16, kk + 12, 8);
    MDB_val pkey = {sizeof pk, pk}, empty = {0, ""};
    if ((rc = mdb_put(txn, st->pidx, &pkey, &empty, 0)) != 0 ||
        (rc = mdb_cursor_del(cur, 0)) != 0)
      break;
    done++;
  }
  mdb_cursor_close(cur);
  if (rc != 0 && rc != MDB_NOTFOUND) {
    mdb_txn_abort(txn);
    return fail(rc, why, whylen, "indexing records");
  }
  if ((rc = commit(st, txn)) != 0)
    return fail(rc, why, whylen, "indexing records");
  /* nunidx is a count kept by hand: fewer than max means none are left. */
  st->nunidx = done < max ? 0 : st->nunidx > done ? st->nunidx - done : 0;
  return 0;
}

int store_commit(struct store *st, char *why, size_t whylen)
{
  if (st->txn == NULL)
    return 0;
  int rc = commit(st, st->txn);
  st->txn = NULL;
  if (rc == 0)
    st->nunidx += st->staged_unidx;
  st->staged_unidx = 0;
  return rc ? fail(rc, why, whylen, "committing records") : 0;
}

void store_abort(struct store *st)
{
  if (st->txn)
    mdb_txn_abort(st->txn);
  st->txn = NULL;
  st->staged_unidx = 0;
}

/* The newest image of the page at or below read_point, if any. */
static int find_image(struct store *st, MDB_txn *txn, const struct segment *s,
                      uint32_t page_no, uint64_t read_point, MDB_val *img,
                      uint64_t *img_lsn)
{
  uint8_t k[24];
  page_key(k, s->volume_id, s->pg, page_no, read_point);
  MDB_cursor *cur;
  MDB_val key = {sizeof k, k};
  if (mdb_cursor_open(txn, st->imgs, &cur) != 0)
    return 0;
  int rc = mdb_cursor_get(cur, &key, img, MDB_SET_RANGE);
  if (rc == 0 && memcmp(key.mv_data, k, 24) != 0)
    rc = mdb_cursor_get(cur, &key, img, MDB_PREV);
  else if (rc == MDB_NOTFOUND)
    rc = mdb_cursor_get(cur, &key, img, MDB_LAST);
  int found = rc == 0 && key.mv_size == 24 && memcmp(key.mv_data, k, 16) == 0 &&
              img->mv_size == s->page_size;
  if (found)
    *img_lsn = get_be64((uint8_t *)key.mv_data + 16);
  mdb_cursor_close(cur);
  return found;
}

static int lsn_cmp(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The LSNs of page_no's records in (after, upto], in order, into *out
 * (malloc'd). The indexed ones are a range of pidx; the others are in
 * unidx, at most a few index batches, scanned whole for the segment. */
static size_t page_lsns(struct store *st, MDB_txn *txn, const struct segment *s,
                        uint32_t page_no, uint64_t after, uint64_t upto, uint64_t **out)
{
  uint64_t *v = NULL;
  size_t n = 0, cap = 0;
  uint8_t k[24];
  page_key(k, s->volume_id, s->pg, page_no, after + 1);
  MDB_val key = {sizeof k, k}, val;
  MDB_cursor *cur;
  int rc;
  if (mdb_cursor_open(txn, st->pidx, &cur) == 0) {
    for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
      if (key.mv_size != 24 || memcmp(key.mv_data, k, 16) != 0)
        break;
      uint64_t lsn = get_be64((uint8_t *)key.mv_data + 16);
      if (lsn > upto)
        break;
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        v = realloc(v, cap * sizeof *v);
      }
      v[n++] = lsn;
    }
    mdb_cursor_close(cur);
  }
  size_t nidx = n;
  rec_key(k, s->volume_id, s->pg, after + 1);
  key.mv_size = 20;
  key.mv_data = k;
  if (mdb_cursor_open(txn, st->unidx, &cur) == 0) {
    for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
      if (key.mv_size != 20 || memcmp(key.mv_data, k, 12) != 0)
        break;
      uint64_t lsn = get_be64((uint8_t *)key.mv_data + 12);
      if (lsn > upto)
        break;
      if (val.mv_size != 4 || get_be32(val.mv_data) != page_no)
        continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        v = realloc(v, cap * sizeof *v);
      }
      v[n++] = lsn;
    }
    mdb_cursor_close(cur);
  }
  if (nidx > 0 && n > nidx)
    qsort(v, n, sizeof *v, lsn_cmp);  /* two sorted runs */
  *out = v;
  return n;
}

int store_read_page(struct store *st, const struct segment *s, uint32_t page_no,
                    uint64_t read_point, uint8_t *out, uint64_t *page_lsn,
                    char *why, size_t whylen)
{
  MDB_txn *txn = st->txn;   /* sees this turn's writes: all above the SCL */
  int rc;
  if (txn == NULL && (rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn)) != 0)
    return fail(rc, why, whylen, "reading a page");
  MDB_val img = {0, NULL};
  uint64_t base_lsn = 0;
  int have_img = find_image(st, txn, s, page_no, read_point, &img, &base_lsn);

  /* The page's records in (base_lsn, read_point]: from the page index,
   * and from the records not indexed yet. */
  uint64_t *lsns = NULL;
  size_t nl = page_lsns(st, txn, s, page_no, base_lsn, read_point, &lsns);
  Rec **recs = NULL;
  size_t n = 0, cap = 0;
  int out_rc = 0;
  for (size_t li = 0; li < nl; li++) {
    uint64_t lsn = lsns[li];
    uint8_t rk[20];
    rec_key(rk, s->volume_id, s->pg, lsn);
    MDB_val rkey = {sizeof rk, rk}, rval;
    Rec *r = NULL;
    if (mdb_get(txn, st->recs, &rkey, &rval) == 0)
      r = auralog__record__unpack(NULL, rval.mv_size, rval.mv_data);
    char rwhy[160];
    if (r == NULL || rec_check(r, s->page_size, rwhy, sizeof rwhy) != ERR_NONE) {
      snprintf(why, whylen, "stored record %llu of page %u is damaged",
               (unsigned long long)lsn, page_no);
      if (r)
        auralog__record__free_unpacked(r, NULL);
      out_rc = ERR_INTERNAL;
      break;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      recs = realloc(recs, cap * sizeof *recs);
    }
    recs[n++] = r;
  }
  free(lsns);
  if (out_rc == 0)
    *page_lsn = page_build(out, s->page_size, have_img ? img.mv_data : NULL,
                           base_lsn, recs, n, read_point);
  for (size_t i = 0; i < n; i++)
    auralog__record__free_unpacked(recs[i], NULL);
  free(recs);
  if (txn != st->txn)
    mdb_txn_abort(txn);
  return out_rc;
}

uint64_t store_tail(struct store *st, const struct segment *s, uint64_t upto)
{
  MDB_txn *txn = st->txn;
  if (txn == NULL && mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) != 0)
    return 0;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, upto == UINT64_MAX ? upto : upto + 1);
  MDB_cursor *cur;
  MDB_val key = {sizeof k, k}, val;
  uint64_t tail = 0;
  mdb_cursor_open(txn, st->recs, &cur);
  int rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
  rc = rc == 0 ? mdb_cursor_get(cur, &key, &val, MDB_PREV)
               : mdb_cursor_get(cur, &key, &val, MDB_LAST);
  if (rc == 0 && key.mv_size == 20 && memcmp(key.mv_data, k, 12) == 0)
    tail = get_be64((uint8_t *)key.mv_data + 12);
  if (tail > upto)
    tail = 0;
  mdb_cursor_close(cur);
  if (txn != st->txn)
    mdb_txn_abort(txn);
  return tail;
}

int store_truncate(struct store *st, const struct segment *s, const struct trunc *t,
                   size_t *cut, char *why, size_t whylen)
{
  /* First find what the truncation cuts, then delete it by key. */
  struct victim { uint64_t lsn; uint32_t page; int has_page; } *v = NULL;
  size_t n = 0, cap = 0;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, t->from + 1);
  MDB_cursor *cur;
  MDB_val key = {sizeof k, k}, val;
  *cut = 0;
  int rc = mdb_cursor_open(st->txn, st->recs, &cur);
  if (rc != 0)
    return fail(rc, why, whylen, "truncating");
  for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
    if (key.mv_size != 20 || memcmp(key.mv_data, k, 12) != 0)
      break;
    uint64_t lsn = get_be64((uint8_t *)key.mv_data + 12);
    if (lsn > t->to)
      break;
    /* Rule T (record.h): only records of older epochs go. An unreadable
     * one goes too: no epoch can be proved for it. */
    Rec *r = auralog__record__unpack(NULL, val.mv_size, val.mv_data);
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
  mdb_cursor_close(cur);
  if (rc != 0 && rc != MDB_NOTFOUND) {
    free(v);
    return fail(rc, why, whylen, "truncating");
  }
  rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    rec_key(k, s->volume_id, s->pg, v[i].lsn);
    MDB_val rkey = {sizeof k, k};
    if (v[i].has_page) {
      uint8_t pk[24];
      page_key(pk, s->volume_id, s->pg, v[i].page, v[i].lsn);
      MDB_val pkey = {sizeof pk, pk};
      mdb_del(st->txn, st->pidx, &pkey, NULL);
    }
    if (mdb_del(st->txn, st->unidx, &rkey, NULL) == 0 && st->nunidx > 0)
      st->nunidx--;         /* approximate: only says when to index */
    rc = mdb_del(st->txn, st->recs, &rkey, NULL);
  }
  free(v);
  if (rc != 0)
    return fail(rc, why, whylen, "truncating");
  *cut = n;
  return 0;
}

long store_above(struct store *st, const struct segment *s, uint64_t lsn, Rec ***out,
                 size_t max, int *more)
{
  MDB_txn *txn = st->txn;
  *out = NULL;
  if (more)
    *more = 0;
  if (txn == NULL && mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) != 0)
    return -1;
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, lsn + 1);
  MDB_cursor *cur;
  MDB_val key = {sizeof k, k}, val;
  Rec **v = NULL;
  size_t n = 0, cap = 0, bytes = 0;
  mdb_cursor_open(txn, st->recs, &cur);
  for (int r = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); r == 0;
       r = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
    if (key.mv_size != 20 || memcmp(key.mv_data, k, 12) != 0)
      break;
    /* At most max records, and at most half a frame of them: an answer
     * must always fit in one frame (FRAME_MAX), whatever the page size. */
    if (n == max || (n > 0 && bytes + val.mv_size > FRAME_MAX / 2)) {
      if (more)
        *more = 1;
      break;
    }
    bytes += val.mv_size;
    Rec *rec = auralog__record__unpack(NULL, val.mv_size, val.mv_data);
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
  mdb_cursor_close(cur);
  if (txn != st->txn)
    mdb_txn_abort(txn);
  *out = v;
  return (long)n;
}
