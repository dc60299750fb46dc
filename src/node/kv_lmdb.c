/*
 * kv_lmdb.c: the kv interface (kv.h) on lmdb, for a node on a real disk.
 *
 * A thin layer: a kv_txn is an MDB_txn, a kv_cursor an MDB_cursor, a
 * database handle an MDB_dbi, and a kv_val is copied to and from an MDB_val
 * (two words: the bytes themselves are never copied, so a KV_RESERVE put
 * still packs a record straight into lmdb's page).
 *
 * Durability: lmdb's commit writes the data and fsyncs before returning
 * (the env is opened without MDB_NOSYNC), so once a commit returns 0 its
 * changes survive kill -9 and power loss.
 *
 * Batched mode (kv_set_nosync(kv, 1)), for a node with a hot log
 * (node/hotlog.c), which makes each group commit durable with one flush
 * of its own. lmdb then commits only at checkpoints (kv_sync): between
 * two, every write transaction of the store is a *nested* transaction of
 * one long outer transaction, and its commit only merges its pages into
 * the outer one, in memory; a read-only transaction reads the outer one.
 * kv_sync commits the outer transaction, synced, and opens the next.
 *
 *   B1. Between two checkpoints nothing that the last synced meta page
 *       reaches is written. lmdb is copy-on-write and frees a page only
 *       when a committed transaction stops using it; no transaction
 *       commits until the checkpoint, and the pages lmdb spills when a
 *       transaction holds too many dirty ones go to pages free as of
 *       that meta page. The meta pages themselves are written only by a
 *       commit. So a power loss, whatever order the file system put
 *       the writes in and whichever of them it kept, leaves data.mdb as
 *       of the last checkpoint, whole; the hot log holds every group
 *       commit since (store_hot.c replays it). test_kv.c's
 *       power_loss_between_checkpoints_keeps_the_last_one builds such a
 *       file from a random mix of old and new pages and opens it.
 *
 * Why not MDB_NOSYNC, as this file did at first: each commit then
 * pwrite()s its pages and its meta page with no flush. lmdb keeps its
 * integrity that way only where the file system keeps the order of
 * writes (lmdb.h), which ext4 does not promise: a meta page could reach
 * the disk before the pages it points to, and a page of the last synced
 * tree, freed and reused by a later commit, could be overwritten. One
 * power loss on a laptop takes every node at once.
 *
 * What batching costs: the outer transaction's dirty pages live in memory
 * until the checkpoint (the store checkpoints once the hot log or the
 * bytes put since the last one pass HOTLOG_CHECKPOINT; lmdb spills to
 * free pages past 128k dirty pages), and the checkpoint writes them all
 * at once, with lmdb's two flushes. A page written many times between two
 * checkpoints (a B-tree's right edge, where records append) is written
 * once.
 *
 * What a commit costs (kv->syncs_per_commit, the store's fsyncs counter),
 * measured with strace -f -T on a node under load (Debian 12, lmdb
 * 0.9.24, ext4), default flags: lmdb pwrite()s the dirty pages to
 * data.mdb, fdatasync()s it, then pwrite()s the meta page through a second
 * descriptor of data.mdb opened O_DSYNC. `strace -c -e
 * trace=fsync,fdatasync,msync,sync_file_range` shows one fdatasync per
 * commit, but the O_DSYNC write is a sync all the same: it returns once the
 * device has the page, taking as long as the fdatasync (0.1-0.3 ms here,
 * against ~10 us for the plain pwrites). So a commit is two device
 * flushes, one after the other, and counts two: the first puts the new
 * tree on disk before the meta page that points to it, the second makes
 * the commit durable before mdb_txn_commit returns.
 *
 * A full disk. lmdb writes pages with pwrite and, when fewer bytes were
 * written than asked (a short write: the file system had room for only
 * part of them), returns EIO ("TODO: Use which error code?" in mdb.c),
 * not ENOSPC. So a node whose disk filled up logged "Input/output error",
 * which sends an operator looking for a broken disk. An ENOSPC, a map
 * full, or an EIO makes this file ask the file system (statvfs on the
 * data directory) how much is free; an EIO with almost nothing free is a
 * full disk and is reported as one (kv_lmdb_classify), with the number:
 * "disk full (4096 bytes free on /var/node-A1)". Either way nothing of the
 * transaction was stored; a commit that failed is as if it never began.
 */
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "lib/log.h"
#include "node/kv.h"
#include "param.h"

struct lmdb_kv {
  struct kv kv;
  MDB_env *env;
  size_t mapsize;
  char dir[256];             /* for statvfs and messages */
  /* Batched mode (see the top): */
  MDB_txn *outer;            /* the transaction open since the last checkpoint */
  MDB_txn *child;            /* the store's write transaction, nested in it */
  unsigned readers;          /* read-only transactions open (they read outer) */
  int changed;               /* the child stored or deleted something */
  int lost;                  /* a checkpoint failed: what outer held is gone */
};

#define ENV(ctx) (((struct lmdb_kv *)(ctx))->env)
#define TXN(t) ((MDB_txn *)(t))
#define CUR(c) ((MDB_cursor *)(c))

int kv_lmdb_classify(int rc, const char *dir, size_t mapsize, long long free_bytes,
                     char *why, size_t whylen)
{
  char fr[300];
  if (free_bytes >= 0)
    snprintf(fr, sizeof fr, "%lld bytes free on %s", free_bytes, dir);
  else
    snprintf(fr, sizeof fr, "free space on %s unknown", dir);
  switch (rc) {
  case MDB_NOTFOUND:
    return KV_NOTFOUND;
  case MDB_MAP_FULL:         /* the map, not the disk: NODE_MAP_SIZE */
    snprintf(why, whylen, "storage map full (all %zu MiB of it used; %s)", mapsize >> 20, fr);
    return KV_FULL;
  case ENOSPC:
    snprintf(why, whylen, "disk full (%s)", fr);
    return KV_FULL;
  case EIO:
    if (free_bytes >= 0 && free_bytes < DISK_FULL_SLACK) {
      snprintf(why, whylen, "disk full (%s)", fr);
      return KV_FULL;
    }
    return rc;               /* room enough: a real I/O error */
  }
  return rc;
}

/* Bytes free on dir's file system for this process (root may use the
 * blocks reserved for it), or -1. */
static long long free_on(const char *dir)
{
  struct statvfs sv;
  if (statvfs(dir, &sv) != 0)
    return -1;
  unsigned long long blocks = geteuid() == 0 ? sv.f_bfree : sv.f_bavail;
  return (long long)(blocks * sv.f_frsize);
}

/* lmdb's codes that the store acts on, as kv's. */
static int code(void *ctx, int rc)
{
  struct lmdb_kv *l = ctx;
  if (rc == 0)
    return 0;
  if (rc == MDB_NOTFOUND)
    return KV_NOTFOUND;
  if (rc != MDB_MAP_FULL && rc != ENOSPC && rc != EIO)
    return rc;
  return kv_lmdb_classify(rc, l->dir, l->mapsize, free_on(l->dir), l->kv.full_why,
                          sizeof l->kv.full_why);
}

static int l_db(void *ctx, struct kv_txn *t, const char *name, unsigned *db)
{
  MDB_dbi dbi;
  int rc = mdb_dbi_open(TXN(t), name, MDB_CREATE, &dbi);
  if (rc == 0)
    *db = dbi;
  return code(ctx, rc);
}

static int l_begin(void *ctx, unsigned flags, struct kv_txn **t)
{
  struct lmdb_kv *l = ctx;
  MDB_txn *txn = NULL;
  *t = NULL;
  if (l->lost)
    return KV_BADTXN;
  if (l->outer) {
    /* Batched: a reader reads the outer transaction (what the store
     * committed since the checkpoint included); a writer nests in it. As
     * kv.h says, no writer while a reader is open, and one writer. lmdb
     * forbids touching a parent while a child is open: the same rule. */
    if (l->child || (!(flags & KV_RDONLY) && l->readers))
      return KV_BUSY;
    if (flags & KV_RDONLY) {
      l->readers++;
      *t = (struct kv_txn *)l->outer;
      return 0;
    }
    int rc = mdb_txn_begin(l->env, l->outer, 0, &l->child);
    if (rc != 0) {
      l->child = NULL;
      return code(ctx, rc);
    }
    l->changed = 0;
    *t = (struct kv_txn *)l->child;
    return 0;
  }
  int rc = mdb_txn_begin(ENV(ctx), NULL, flags & KV_RDONLY ? MDB_RDONLY : 0, &txn);
  *t = rc == 0 ? (struct kv_txn *)txn : NULL;
  return code(ctx, rc);
}

/* A write transaction that changed nothing ends without writing or
 * syncing, and without taking the next transaction id: that is how one
 * tells that a commit wrote. A write transaction's id is one past the last
 * committed one; a read-only transaction's is the one it reads. (Two
 * mdb_env_info calls read the meta pages: no system call, ~100 ns.) */
static int l_commit(void *ctx, struct kv_txn *t, int *wrote)
{
  struct lmdb_kv *l = ctx;
  *wrote = 0;
  if (l->outer && TXN(t) == l->outer) {
    l->readers--;            /* a reader's end: nothing to write */
    return 0;
  }
  if (l->outer && TXN(t) == l->child) {
    /* Into the outer transaction, in memory: durable at the checkpoint
     * (or by the hot log's frame before that, store.c H1). */
    int rc = mdb_txn_commit(l->child);
    l->child = NULL;
    *wrote = rc == 0 && l->changed;
    return code(ctx, rc);
  }
  size_t id = mdb_txn_id(TXN(t));
  MDB_envinfo before, after;
  int w = mdb_env_info(ENV(ctx), &before) == 0 && id > before.me_last_txnid;
  unsigned long long t0 = now_us();
  int rc = mdb_txn_commit(TXN(t));
  *wrote = w && rc == 0 && mdb_env_info(ENV(ctx), &after) == 0 &&
           after.me_last_txnid == id;
  if (*wrote)
    ((struct lmdb_kv *)ctx)->kv.commit_us += now_us() - t0;
  return code(ctx, rc);
}

static void l_abort(void *ctx, struct kv_txn *t)
{
  struct lmdb_kv *l = ctx;
  if (l->outer && TXN(t) == l->outer) {
    l->readers--;
    return;
  }
  if (l->outer && TXN(t) == l->child)
    l->child = NULL;
  mdb_txn_abort(TXN(t));
}

static int l_get(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key,
                 struct kv_val *val)
{
  MDB_val k = {key->len, key->data}, v;
  int rc = mdb_get(TXN(t), db, &k, &v);
  if (rc == 0)
    *val = (struct kv_val){v.mv_size, v.mv_data};
  return code(ctx, rc);
}

static int l_put(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key,
                 struct kv_val *val, unsigned flags)
{
  MDB_val k = {key->len, key->data}, v = {val->len, val->data};
  int rc = mdb_put(TXN(t), db, &k, &v, flags & KV_RESERVE ? MDB_RESERVE : 0);
  ((struct lmdb_kv *)ctx)->changed |= rc == 0;
  if (rc == 0 && (flags & KV_RESERVE))
    val->data = v.mv_data;   /* lmdb's space: the caller packs into it */
  return code(ctx, rc);
}

static int l_del(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key)
{
  MDB_val k = {key->len, key->data};
  int rc = mdb_del(TXN(t), db, &k, NULL);
  ((struct lmdb_kv *)ctx)->changed |= rc == 0;
  return code(ctx, rc);
}

static int l_count(void *ctx, struct kv_txn *t, unsigned db, size_t *n)
{
  MDB_stat ms;
  int rc = mdb_stat(TXN(t), db, &ms);
  *n = rc == 0 ? ms.ms_entries : 0;
  return code(ctx, rc);
}

static int l_cursor(void *ctx, struct kv_txn *t, unsigned db, struct kv_cursor **c)
{
  MDB_cursor *cur = NULL;
  int rc = mdb_cursor_open(TXN(t), db, &cur);
  *c = rc == 0 ? (struct kv_cursor *)cur : NULL;
  return code(ctx, rc);
}

static int l_cursor_get(void *ctx, struct kv_cursor *c, enum kv_op op,
                        struct kv_val *key, struct kv_val *val)
{
  static const MDB_cursor_op ops[] = {
    [KV_FIRST] = MDB_FIRST, [KV_LAST] = MDB_LAST, [KV_NEXT] = MDB_NEXT,
    [KV_PREV] = MDB_PREV, [KV_SEEK] = MDB_SET_RANGE,
  };
  MDB_val k = {0, NULL}, v;
  if (op == KV_SEEK)
    k = (MDB_val){key->len, key->data};
  int rc = mdb_cursor_get(CUR(c), &k, &v, ops[op]);
  if (rc == 0) {
    *key = (struct kv_val){k.mv_size, k.mv_data};
    *val = (struct kv_val){v.mv_size, v.mv_data};
  }
  return code(ctx, rc);
}

static int l_cursor_del(void *ctx, struct kv_cursor *c)
{
  int rc = mdb_cursor_del(CUR(c), 0);
  ((struct lmdb_kv *)ctx)->changed |= rc == 0;
  return code(ctx, rc);
}

static void l_cursor_close(void *ctx, struct kv_cursor *c)
{
  (void)ctx;
  mdb_cursor_close(CUR(c));
}

static const char *l_strerror(int rc)
{
  return mdb_strerror(rc);   /* errno values too */
}

static void l_close(void *ctx)
{
  struct lmdb_kv *l = ctx;
  /* As a crash would leave it: what the outer transaction held since the
   * checkpoint is the hot log's to replay (store_close). */
  if (l->child)
    mdb_txn_abort(l->child);
  if (l->outer)
    mdb_txn_abort(l->outer);
  mdb_env_close(l->env);
  free(l);
}

static unsigned syncs_per_commit(MDB_env *env);

/* Batched mode on or off (see the top). On: open the outer transaction.
 * Off: commit it, synced. Only with no transaction of the store open. */
static int l_set_nosync(void *ctx, int on)
{
  struct lmdb_kv *l = ctx;
  if (l->lost)
    return KV_BADTXN;
  if (l->child || l->readers)
    return KV_BUSY;
  int rc = 0;
  if (on && l->outer == NULL) {
    rc = mdb_txn_begin(l->env, NULL, 0, &l->outer);
    if (rc != 0)
      l->outer = NULL;
  } else if (!on && l->outer) {
    rc = mdb_txn_commit(l->outer);
    l->outer = NULL;
    l->lost = rc != 0;
  }
  l->kv.syncs_per_commit = l->outer ? 0 : syncs_per_commit(l->env);
  l->kv.syncs_per_sync = l->outer ? 2 : 1;  /* a synced commit, or one fdatasync */
  return code(ctx, rc);
}

/* A checkpoint: commit the outer transaction (lmdb's synced commit, two
 * flushes) and open the next. If the commit fails, what the outer
 * transaction held is gone from lmdb (it is still in the hot log): every
 * call fails from then on, and the store must stop (store.c, H2). */
static int l_sync(void *ctx)
{
  struct lmdb_kv *l = ctx;
  if (l->lost)
    return KV_BADTXN;
  if (l->outer == NULL)
    return code(ctx, mdb_env_sync(ENV(ctx), 1));
  if (l->child || l->readers)
    return KV_BUSY;
  unsigned long long t0 = now_us();
  int rc = mdb_txn_commit(l->outer);
  l->outer = NULL;
  l->kv.commit_us += now_us() - t0;
  if (rc == 0)
    rc = mdb_txn_begin(l->env, NULL, 0, &l->outer);
  if (rc != 0) {
    l->outer = NULL;
    l->lost = 1;
  }
  return code(ctx, rc);
}

static const struct kv_ops lmdb_ops = {
  .set_nosync = l_set_nosync, .sync = l_sync,
  .db = l_db, .begin = l_begin, .commit = l_commit, .abort = l_abort,
  .get = l_get, .put = l_put, .del = l_del, .count = l_count,
  .cursor = l_cursor, .cursor_get = l_cursor_get, .cursor_del = l_cursor_del,
  .cursor_close = l_cursor_close, .strerror = l_strerror, .close = l_close,
};

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

int kv_lmdb_open(const char *dir, size_t mapsize, struct kv **out, char *why,
                 size_t whylen)
{
  *out = NULL;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  struct lmdb_kv *l = calloc(1, sizeof *l);
  if (l == NULL) {
    snprintf(why, whylen, "cannot open storage in %s: out of memory", dir);
    return -1;
  }
  int rc = mdb_env_create(&l->env);
  if (rc == 0)
    rc = mdb_env_set_mapsize(l->env, mapsize);
  if (rc == 0)
    rc = mdb_env_set_maxdbs(l->env, 8);
  if (rc == 0)
    rc = mdb_env_open(l->env, dir, 0, 0644);
  if (rc != 0) {
    snprintf(why, whylen, "cannot open storage in %s: %s", dir, mdb_strerror(rc));
    if (l->env)
      mdb_env_close(l->env);
    free(l);
    return -1;
  }
  l->kv.ops = &lmdb_ops;
  l->kv.ctx = l;
  l->mapsize = mapsize;
  snprintf(l->dir, sizeof l->dir, "%s", dir);
  l->kv.syncs_per_commit = syncs_per_commit(l->env);
  l->kv.syncs_per_sync = 1;
  *out = &l->kv;
  return 0;
}
