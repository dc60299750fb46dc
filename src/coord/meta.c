/*
 * meta.c: coordinator metadata in lmdb (see meta.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coord/meta.h"
#include "param.h"

static int lmdb_fail(int rc, char *why, size_t whylen, const char *what)
{
  if (rc == MDB_MAP_FULL || rc == ENOSPC)
    snprintf(why, whylen, "coordinator metadata is full while %s", what);
  else
    snprintf(why, whylen, "coordinator storage error while %s: %s", what,
             mdb_strerror(rc));
  return -1;
}

int meta_open(struct meta *m, const char *dir, char *why, size_t whylen)
{
  memset(m, 0, sizeof *m);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  int rc = mdb_env_create(&m->env);
  if (rc == 0) rc = mdb_env_set_mapsize(m->env, COORD_MAP_SIZE);
  if (rc == 0) rc = mdb_env_set_maxdbs(m->env, 4);
  if (rc == 0) rc = mdb_env_open(m->env, dir, 0, 0644);
  MDB_txn *txn = NULL;
  if (rc == 0) rc = mdb_txn_begin(m->env, NULL, 0, &txn);
  if (rc == 0) rc = mdb_dbi_open(txn, "nodes", MDB_CREATE, &m->nodes);
  if (rc == 0) rc = mdb_dbi_open(txn, "vols", MDB_CREATE, &m->vols);
  if (rc == 0) rc = mdb_dbi_open(txn, "ctr", MDB_CREATE, &m->ctr);
  if (rc == 0) {
    rc = mdb_txn_commit(txn);
    txn = NULL;
  }
  if (rc != 0) {
    if (txn)
      mdb_txn_abort(txn);
    snprintf(why, whylen, "cannot open coordinator metadata in %s: %s", dir,
             mdb_strerror(rc));
    if (m->env)
      mdb_env_close(m->env);
    m->env = NULL;
    return -1;
  }
  return 0;
}

void meta_close(struct meta *m)
{
  if (m->env)
    mdb_env_close(m->env);
  m->env = NULL;
}

static int put(struct meta *m, MDB_dbi dbi, const char *k, const void *v,
               size_t n, char *why, size_t whylen)
{
  MDB_txn *txn;
  int rc = mdb_txn_begin(m->env, NULL, 0, &txn);
  if (rc != 0)
    return lmdb_fail(rc, why, whylen, "writing");
  MDB_val key = {strlen(k), (void *)k}, val = {n, (void *)v};
  rc = mdb_put(txn, dbi, &key, &val, 0);
  if (rc != 0) {
    mdb_txn_abort(txn);
    return lmdb_fail(rc, why, whylen, "writing");
  }
  rc = mdb_txn_commit(txn);
  return rc ? lmdb_fail(rc, why, whylen, "committing") : 0;
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
  auralog__volume__pack(v, buf);
  Auralog__Volume *copy = NULL;
  if (put(m, m->vols, v->name, buf, len, why, whylen) == 0)
    copy = auralog__volume__unpack(NULL, len, buf);
  free(buf);
  return copy;
}

int meta_del_volume(struct meta *m, const char *name, char *why, size_t whylen)
{
  MDB_txn *txn;
  int rc = mdb_txn_begin(m->env, NULL, 0, &txn);
  if (rc != 0)
    return lmdb_fail(rc, why, whylen, "dropping a volume");
  MDB_val key = {strlen(name), (void *)name};
  rc = mdb_del(txn, m->vols, &key, NULL);
  if (rc != 0 && rc != MDB_NOTFOUND) {
    mdb_txn_abort(txn);
    return lmdb_fail(rc, why, whylen, "dropping a volume");
  }
  rc = mdb_txn_commit(txn);
  return rc ? lmdb_fail(rc, why, whylen, "dropping a volume") : 0;
}

uint64_t meta_next_volume_id(struct meta *m, char *why, size_t whylen)
{
  MDB_txn *txn;
  int rc = mdb_txn_begin(m->env, NULL, 0, &txn);
  if (rc != 0) {
    lmdb_fail(rc, why, whylen, "taking a volume id");
    return 0;
  }
  const char *k = "next_volume_id";
  MDB_val key = {strlen(k), (void *)k}, val;
  uint64_t id = 1;
  if (mdb_get(txn, m->ctr, &key, &val) == 0 && val.mv_size == 8)
    id = get_be64(val.mv_data);
  uint8_t next[8];
  put_be64(next, id + 1);
  val.mv_size = 8;
  val.mv_data = next;
  rc = mdb_put(txn, m->ctr, &key, &val, 0);
  if (rc == 0)
    rc = mdb_txn_commit(txn);
  else
    mdb_txn_abort(txn);
  if (rc != 0) {
    lmdb_fail(rc, why, whylen, "taking a volume id");
    return 0;
  }
  return id;
}

int meta_load(struct meta *m, void (*node_fn)(void *, Auralog__NodeInfo *),
              void (*vol_fn)(void *, Auralog__Volume *), void *arg,
              char *why, size_t whylen)
{
  MDB_txn *txn;
  MDB_cursor *cur;
  MDB_val key, val;
  int rc = mdb_txn_begin(m->env, NULL, MDB_RDONLY, &txn);
  if (rc != 0)
    return lmdb_fail(rc, why, whylen, "loading");
  mdb_cursor_open(txn, m->nodes, &cur);
  for (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
    Auralog__NodeInfo *n = auralog__node_info__unpack(NULL, val.mv_size, val.mv_data);
    if (n)
      node_fn(arg, n);
  }
  mdb_cursor_close(cur);
  mdb_cursor_open(txn, m->vols, &cur);
  for (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
    Auralog__Volume *v = auralog__volume__unpack(NULL, val.mv_size, val.mv_data);
    if (v)
      vol_fn(arg, v);
  }
  mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return 0;
}
