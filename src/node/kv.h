/*
 * kv.h: the ordered key-value store a storage node keeps its segments in
 * (store.c), as one small vtable with two implementations behind it:
 *   - kv_lmdb.c: lmdb, on a real disk (`auralog node`);
 *   - sim/disk.c: a simulated disk in memory, for the simulator, which runs
 *     many nodes in one process and crashes or damages their disks on
 *     demand (as dqlite's raft_io has a libuv implementation and a test
 *     fixture behind one interface).
 *
 * The model is lmdb's, cut down to what store.c uses, so that the lmdb
 * backend is a thin layer of calls and the store pays nothing for it:
 *
 *   A kv holds named databases (segs, recs, ...), each a map from byte
 *   strings to byte strings, kept in key order: memcmp over the shorter
 *   length, then the shorter key first (lmdb's default order). The store
 *   makes its keys big-endian so that byte order is numeric order.
 *
 *   Everything happens inside a transaction. At most one write transaction
 *   is open at a time; it sees its own changes, and commit makes all of
 *   them durable at once (or none: abort, a failed commit, a crash). A
 *   read-only transaction sees what was last committed; open one only while
 *   no write transaction is (the store reads through the write transaction
 *   when one is open), and end it with kv_abort.
 *
 *   A cursor walks one database in key order: KV_SEEK finds the first key
 *   >= the one given, KV_FIRST / KV_LAST the ends, KV_NEXT / KV_PREV the
 *   neighbours. kv_cursor_del deletes the current entry, and KV_NEXT then
 *   gives the one after it (a drain of a database, as the format upgrade
 *   does, works that way).
 *
 *   A value returned by kv_get or a cursor points into the store: it stays
 *   valid until the next change in the transaction, or its end. kv_put with
 *   KV_RESERVE stores val->len bytes and returns where they are in
 *   val->data, for the caller to fill before any other call: a record is
 *   packed straight into the database, never into a buffer first.
 *
 * Why a vtable and not a file of #ifdefs: both backends are linked into
 * one binary (`auralog node` uses lmdb, `auralog sim` the simulated disk)
 * and the store must not know which one it has. One indirect call per
 * operation costs nothing next to a B-tree descent.
 *
 * Errors are plain ints: 0, a KV_* code below, or a backend's own code (a
 * positive errno, an lmdb error); kv_strerror says any of them in a line.
 */
#ifndef AURALOG_KV_H
#define AURALOG_KV_H

#include <stddef.h>
#include <stdint.h>

/* Codes the store acts on; a backend turns its own into these. Negative
 * and small, so they meet neither errno values nor lmdb's (-30800...). */
#define KV_NOTFOUND (-1)     /* no such key; a cursor ran off an end */
#define KV_FULL     (-2)     /* no space left: nothing of the write was stored */
#define KV_BUSY     (-3)     /* a transaction is open that forbids this one */
#define KV_BADTXN   (-4)     /* the transaction is over (a crash ended it) */

/* What a deletion counts in kv->pending: about the bytes of a B-tree entry
 * it dirties (a key, a node header). */
#define KV_DEL_BYTES 64u

/* Flags. */
#define KV_RDONLY   1u       /* kv_begin: a read-only transaction */
#define KV_RESERVE  1u       /* kv_put: reserve val->len bytes, return them */

/* A byte string. Same layout as lmdb's MDB_val (size, then pointer). */
struct kv_val {
  size_t len;
  void *data;
};

enum kv_op {
  KV_FIRST,
  KV_LAST,
  KV_NEXT,                   /* from an unpositioned cursor: KV_FIRST */
  KV_PREV,                   /* from an unpositioned cursor: KV_LAST */
  KV_SEEK,                   /* the first key >= *key */
};

struct kv_txn;               /* opaque, the backend's */
struct kv_cursor;

struct kv_ops {
  /* Open (creating it if need be) the database called name, inside t; the
   * handle *db stays valid after t ends. */
  int (*db)(void *ctx, struct kv_txn *t, const char *name, unsigned *db);
  int (*begin)(void *ctx, unsigned flags, struct kv_txn **t);
  /* Ends t whatever it returns. *wrote: 1 if the commit made changes
   * durable (a transaction that changed nothing writes and syncs nothing). */
  int (*commit)(void *ctx, struct kv_txn *t, int *wrote);
  void (*abort)(void *ctx, struct kv_txn *t);
  int (*get)(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key,
             struct kv_val *val);
  int (*put)(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key,
             struct kv_val *val, unsigned flags);
  int (*del)(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key);
  /* How many entries db holds, as t sees it. */
  int (*count)(void *ctx, struct kv_txn *t, unsigned db, size_t *n);
  int (*cursor)(void *ctx, struct kv_txn *t, unsigned db, struct kv_cursor **c);
  /* Move c by op and return the entry there (KV_SEEK reads *key first). */
  int (*cursor_get)(void *ctx, struct kv_cursor *c, enum kv_op op, struct kv_val *key,
                    struct kv_val *val);
  int (*cursor_del)(void *ctx, struct kv_cursor *c);
  void (*cursor_close)(void *ctx, struct kv_cursor *c);
  /* Durability of commits. set_nosync(ctx, 1): from now on a commit is
   * not durable by itself (a crash of the machine, or of the simulated
   * disk, may lose the commits since the last sync: lmdb loses all of
   * them, kv_lmdb.c's batched mode; the simulated disk all or a suffix,
   * which covers lmdb's case; never a part of one); 0: every commit is
   * durable again. sync: make every commit so far durable at once (lmdb:
   * commit the batch). Neither with a transaction open. The store uses
   * these with its hot log (store.c), which makes a group commit durable
   * with one flush; the kv catches up at checkpoints. */
  int (*set_nosync)(void *ctx, int on);
  int (*sync)(void *ctx);
  /* A backend's own error codes in words (KV_* ones are kv_strerror's). */
  const char *(*strerror)(int rc);
  /* Done with the kv (abort what is open first). For lmdb: close the
   * environment and free the kv. For the simulated disk: nothing is freed;
   * the disk and what it holds outlive the store that used it. */
  void (*close)(void *ctx);
};

struct kv {
  const struct kv_ops *ops;
  void *ctx;
  unsigned syncs_per_commit; /* device syncs a commit that wrote costs (0: nosync) */
  unsigned syncs_per_sync;   /* device syncs a kv_sync costs */
  uint64_t pending;          /* bytes put since the last sync (kv_put, kv_sync):
                                the store checkpoints past HOTLOG_CHECKPOINT */
  uint64_t commit_us;        /* time in commits that wrote, us: a real disk's
                                (kv_lmdb.c), for bench; the simulator's stays 0 */
  /* What the backend knows of its last KV_FULL, in words, e.g. "disk full
   * (4096 bytes free on /var/node-A1)"; empty: nothing more than that the
   * space ran out. kv_strerror(kv, KV_FULL) says it. */
  char full_why[192];
};

static inline int kv_db(struct kv *kv, struct kv_txn *t, const char *name, unsigned *db)
{
  return kv->ops->db(kv->ctx, t, name, db);
}
static inline int kv_begin(struct kv *kv, unsigned flags, struct kv_txn **t)
{
  return kv->ops->begin(kv->ctx, flags, t);
}
static inline int kv_commit(struct kv *kv, struct kv_txn *t, int *wrote)
{
  return kv->ops->commit(kv->ctx, t, wrote);
}
static inline void kv_abort(struct kv *kv, struct kv_txn *t)
{
  kv->ops->abort(kv->ctx, t);
}
static inline int kv_get(struct kv *kv, struct kv_txn *t, unsigned db,
                         const struct kv_val *key, struct kv_val *val)
{
  return kv->ops->get(kv->ctx, t, db, key, val);
}
static inline int kv_put(struct kv *kv, struct kv_txn *t, unsigned db,
                         const struct kv_val *key, struct kv_val *val, unsigned flags)
{
  int rc = kv->ops->put(kv->ctx, t, db, key, val, flags);
  if (rc == 0)
    kv->pending += key->len + val->len;
  return rc;
}
static inline int kv_del(struct kv *kv, struct kv_txn *t, unsigned db,
                         const struct kv_val *key)
{
  int rc = kv->ops->del(kv->ctx, t, db, key);
  if (rc == 0)
    kv->pending += KV_DEL_BYTES;
  return rc;
}
static inline int kv_count(struct kv *kv, struct kv_txn *t, unsigned db, size_t *n)
{
  return kv->ops->count(kv->ctx, t, db, n);
}
static inline int kv_cursor(struct kv *kv, struct kv_txn *t, unsigned db,
                            struct kv_cursor **c)
{
  return kv->ops->cursor(kv->ctx, t, db, c);
}
static inline int kv_cursor_get(struct kv *kv, struct kv_cursor *c, enum kv_op op,
                                struct kv_val *key, struct kv_val *val)
{
  return kv->ops->cursor_get(kv->ctx, c, op, key, val);
}
static inline int kv_cursor_del(struct kv *kv, struct kv_cursor *c)
{
  int rc = kv->ops->cursor_del(kv->ctx, c);
  if (rc == 0)
    kv->pending += KV_DEL_BYTES;
  return rc;
}
static inline void kv_cursor_close(struct kv *kv, struct kv_cursor *c)
{
  kv->ops->cursor_close(kv->ctx, c);
}
static inline int kv_set_nosync(struct kv *kv, int on)
{
  return kv->ops->set_nosync(kv->ctx, on);
}
static inline int kv_sync(struct kv *kv)
{
  int rc = kv->ops->sync(kv->ctx);
  if (rc == 0)
    kv->pending = 0;
  return rc;
}
static inline void kv_close(struct kv *kv)
{
  kv->ops->close(kv->ctx);
}

static inline const char *kv_strerror(const struct kv *kv, int rc)
{
  switch (rc) {
  case 0:           return "no error";
  case KV_NOTFOUND: return "no such key";
  case KV_FULL:     return kv->full_why[0] ? kv->full_why : "no space left";
  case KV_BUSY:     return "another transaction is open";
  case KV_BADTXN:   return "the transaction has ended";
  }
  return kv->ops->strerror(rc);
}

/* The lmdb backend (kv_lmdb.c): the environment in directory dir (created
 * if missing), its map mapsize bytes. Returns 0 and *out, or -1 with a
 * reason. */
int kv_lmdb_open(const char *dir, size_t mapsize, struct kv **out, char *why,
                 size_t whylen);

/* What an lmdb error means (kv_lmdb.c): KV_NOTFOUND, KV_FULL (with why
 * filled in), or rc itself. free_bytes is what statvfs says is free on
 * dir's file system (-1: unknown). lmdb reports a short write, which is
 * how a full disk often shows, as EIO: an EIO with less than
 * DISK_FULL_SLACK free is a full disk, and says so instead of "Input/output
 * error". Pure, for the tests. */
int kv_lmdb_classify(int rc, const char *dir, size_t mapsize, long long free_bytes,
                     char *why, size_t whylen);

#endif
