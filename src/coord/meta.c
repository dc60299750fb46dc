/*
 * meta.c: coordinator metadata in a kv store (see meta.h, node/kv.h).
 *
 * The store is lmdb in a directory for `auralog coord` (meta_open: the
 * same databases, keys and values as ever, so an existing cluster's data
 * opens as it is) or the simulator's disk (meta_open_kv). Each put is one
 * write transaction, and a kv commit makes it durable before it returns
 * (lmdb writes and fsyncs; the simulated disk keeps it across disk_crash),
 * so the coordinator answers only once what it said is on disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/meta.h"
#include "param.h"

static int kv_fail(const struct meta *m, int rc, char *why, size_t whylen,
                   const char *what)
{
  if (rc == KV_FULL)
    snprintf(why, whylen, "coordinator metadata is full while %s", what);
  else
    snprintf(why, whylen, "coordinator storage error while %s: %s", what,
             kv_strerror(m->kv, rc));
  return -1;
}

/* Open the databases (where: the directory, for messages; may be NULL). */
static int open_kv(struct meta *m, struct kv *kv, const char *where, char *why,
                   size_t whylen)
{
  memset(m, 0, sizeof *m);
  m->kv = kv;
  struct kv_txn *txn;
  int wrote, rc = kv_begin(kv, 0, &txn);
  if (rc == 0) {
    rc = kv_db(kv, txn, "nodes", &m->nodes);
    if (rc == 0) rc = kv_db(kv, txn, "vols", &m->vols);
    if (rc == 0) rc = kv_db(kv, txn, "ctr", &m->ctr);
    if (rc == 0)
      rc = kv_commit(kv, txn, &wrote);
    else
      kv_abort(kv, txn);
  }
  if (rc != 0) {
    snprintf(why, whylen, "cannot open coordinator metadata%s%s: %s",
             where ? " in " : "", where ? where : "", kv_strerror(kv, rc));
    kv_close(kv);
    m->kv = NULL;
    return -1;
  }
  return 0;
}

int meta_open(struct meta *m, const char *dir, char *why, size_t whylen)
{
  struct kv *kv;
  memset(m, 0, sizeof *m);
  if (kv_lmdb_open(dir, COORD_MAP_SIZE, &kv, why, whylen) != 0) {
    /* kv_lmdb_open speaks of "storage" (a node's); say whose it is. */
    static const char pre[] = "cannot open storage in ";
    if (strncmp(why, pre, sizeof pre - 1) == 0) {
      char rest[256];
      snprintf(rest, sizeof rest, "%s", why + sizeof pre - 1);
      snprintf(why, whylen, "cannot open coordinator metadata in %s", rest);
    }
    return -1;
  }
  return open_kv(m, kv, dir, why, whylen);
}

int meta_open_kv(struct meta *m, struct kv *kv, char *why, size_t whylen)
{
  return open_kv(m, kv, NULL, why, whylen);
}

void meta_close(struct meta *m)
{
  if (m->kv)
    kv_close(m->kv);
  m->kv = NULL;
}

static int put(struct meta *m, unsigned db, const char *k, const void *v,
               size_t n, char *why, size_t whylen)
{
  struct kv_txn *txn;
  int wrote, rc = kv_begin(m->kv, 0, &txn);
  if (rc != 0)
    return kv_fail(m, rc, why, whylen, "writing");
  struct kv_val key = {strlen(k), (void *)k}, val = {n, (void *)v};
  rc = kv_put(m->kv, txn, db, &key, &val, 0);
  if (rc != 0) {
    kv_abort(m->kv, txn);
    return kv_fail(m, rc, why, whylen, "writing");
  }
  rc = kv_commit(m->kv, txn, &wrote);
  m->dirty |= m->batched;
  return rc ? kv_fail(m, rc, why, whylen, "committing") : 0;
}

int meta_batch(struct meta *m, int on, char *why, size_t whylen)
{
  /* The end syncs first, if the batch wrote: leaving batched mode need
   * not make what it held durable (the simulator's disk does not), a
   * sync does. A batch that wrote nothing (most ticks) costs no sync. */
  int rc = !on && m->dirty ? kv_sync(m->kv) : 0;
  if (rc == 0)
    rc = kv_set_nosync(m->kv, on);
  m->batched = on && rc == 0;
  m->dirty = 0;
  return rc ? kv_fail(m, rc, why, whylen, on ? "starting a batch" : "committing a batch") : 0;
}

int meta_put_node(struct meta *m, const Auralog__NodeInfo *n, char *why, size_t whylen)
{
  Auralog__NodeInfo copy = AURALOG__NODE_INFO__INIT;
  copy.id = n->id;          /* only the durable part: id, az, addr */
  copy.az = n->az;
  copy.addr = n->addr;
  uint8_t buf[512];
  size_t len = auralog__node_info__pack(&copy, buf);
  return put(m, m->nodes, n->id, buf, len, why, whylen);
}

Auralog__Volume *meta_put_volume(struct meta *m, const Auralog__Volume *v,
                                 char *why, size_t whylen)
{
  size_t len = auralog__volume__get_packed_size(v);
  uint8_t *buf = malloc(len ? len : 1);
  if (buf == NULL) {
    snprintf(why, whylen, "out of memory while writing volume %s", v->name);
    return NULL;
  }
  auralog__volume__pack(v, buf);
  Auralog__Volume *copy = NULL;
  if (put(m, m->vols, v->name, buf, len, why, whylen) == 0)
    copy = auralog__volume__unpack(NULL, len, buf);
  free(buf);
  return copy;
}

int meta_del_volume(struct meta *m, const char *name, char *why, size_t whylen)
{
  struct kv_txn *txn;
  int wrote, rc = kv_begin(m->kv, 0, &txn);
  if (rc != 0)
    return kv_fail(m, rc, why, whylen, "dropping a volume");
  struct kv_val key = {strlen(name), (void *)name};
  rc = kv_del(m->kv, txn, m->vols, &key);
  /* Its tombstone, in the same transaction: an open never re-creates a
   * dropped name by accident (coord/roles.c). */
  char tk[NAME_MAX_LEN + 16];
  snprintf(tk, sizeof tk, "dropped:%s", name);
  struct kv_val tkey = {strlen(tk), tk}, one = {1, "1"};
  if (rc == 0 || rc == KV_NOTFOUND)
    rc = kv_put(m->kv, txn, m->ctr, &tkey, &one, 0);
  if (rc != 0 && rc != KV_NOTFOUND) {
    kv_abort(m->kv, txn);
    return kv_fail(m, rc, why, whylen, "dropping a volume");
  }
  rc = kv_commit(m->kv, txn, &wrote);
  m->dirty |= m->batched;
  return rc ? kv_fail(m, rc, why, whylen, "dropping a volume") : 0;
}

int meta_dropped(struct meta *m, const char *name, int forget)
{
  struct kv_txn *txn;
  int wrote, rc = kv_begin(m->kv, forget ? 0 : 1, &txn);
  if (rc != 0)
    return 0;
  char tk[NAME_MAX_LEN + 16];
  snprintf(tk, sizeof tk, "dropped:%s", name);
  struct kv_val key = {strlen(tk), tk}, val;
  int dropped = kv_get(m->kv, txn, m->ctr, &key, &val) == 0;
  if (dropped && forget && kv_del(m->kv, txn, m->ctr, &key) == 0) {
    kv_commit(m->kv, txn, &wrote);
    m->dirty |= m->batched;
  } else
    kv_abort(m->kv, txn);
  return dropped;
}

uint64_t meta_next_volume_id(struct meta *m, char *why, size_t whylen)
{
  struct kv_txn *txn;
  int wrote, rc = kv_begin(m->kv, 0, &txn);
  if (rc != 0) {
    kv_fail(m, rc, why, whylen, "taking a volume id");
    return 0;
  }
  const char *k = "next_volume_id";
  struct kv_val key = {strlen(k), (void *)k}, val;
  uint64_t id = 1;
  rc = kv_get(m->kv, txn, m->ctr, &key, &val);
  if (rc == 0 && val.len == 8)
    id = get_be64(val.data);
  if (rc == 0 || rc == KV_NOTFOUND) {
    uint8_t next[8];
    put_be64(next, id + 1);
    val = (struct kv_val){8, next};
    rc = kv_put(m->kv, txn, m->ctr, &key, &val, 0);
  }
  if (rc == 0) {
    rc = kv_commit(m->kv, txn, &wrote);
    m->dirty |= m->batched;
  } else
    kv_abort(m->kv, txn);
  if (rc != 0) {
    kv_fail(m, rc, why, whylen, "taking a volume id");
    return 0;
  }
  return id;
}

/* Hand every value of db (m->nodes or m->vols) to its callback, unpacked
 * (one that does not unpack is skipped). */
static int load_db(struct meta *m, struct kv_txn *txn, unsigned db,
                   void (*node_fn)(void *, Auralog__NodeInfo *),
                   void (*vol_fn)(void *, Auralog__Volume *), void *arg,
                   char *why, size_t whylen)
{
  struct kv_cursor *cur;
  struct kv_val key, val;
  int rc = kv_cursor(m->kv, txn, db, &cur);
  if (rc != 0)
    return kv_fail(m, rc, why, whylen, "loading");
  for (rc = kv_cursor_get(m->kv, cur, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(m->kv, cur, KV_NEXT, &key, &val)) {
    if (db == m->nodes) {
      Auralog__NodeInfo *n = auralog__node_info__unpack(NULL, val.len, val.data);
      if (n)
        node_fn(arg, n);
    } else {
      Auralog__Volume *v = auralog__volume__unpack(NULL, val.len, val.data);
      if (v)
        vol_fn(arg, v);
    }
  }
  kv_cursor_close(m->kv, cur);
  return rc == KV_NOTFOUND ? 0 : kv_fail(m, rc, why, whylen, "loading");
}

int meta_load(struct meta *m, void (*node_fn)(void *, Auralog__NodeInfo *),
              void (*vol_fn)(void *, Auralog__Volume *), void *arg,
              char *why, size_t whylen)
{
  struct kv_txn *txn;
  int rc = kv_begin(m->kv, KV_RDONLY, &txn);
  if (rc != 0)
    return kv_fail(m, rc, why, whylen, "loading");
  rc = load_db(m, txn, m->nodes, node_fn, vol_fn, arg, why, whylen);
  if (rc == 0)
    rc = load_db(m, txn, m->vols, node_fn, vol_fn, arg, why, whylen);
  kv_abort(m->kv, txn);
  return rc;
}
