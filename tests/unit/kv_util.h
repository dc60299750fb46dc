/*
 * kv_util.h: what the key-value tests (test_kv.c, test_kvdisk.c) share:
 * the two backends, lmdb in a directory of its own and a simulated disk,
 * each opened with two databases (a and b) before a test and removed
 * after it; a put and a commit that must succeed; and BOTH(test) / MEM(test)
 * to run a test on both backends or on the simulated disk alone.
 */
#ifndef AURALOG_TEST_KV_UTIL_H
#define AURALOG_TEST_KV_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "node/kv.h"
#include "sim/disk.h"

/* ---- the backends ---------------------------------------------------------- */

struct be {
  int lmdb;                  /* 1: lmdb in dir; 0: a simulated disk */
  int batched;               /* lmdb in batched mode (kv_set_nosync(1), kv_lmdb.c) */
  struct kv *kv;
  struct disk *disk;
  char dir[64];
  unsigned a, b;             /* two databases */
};

/* The prestates of BOTH and MEM (below). */
static struct be be_lmdb = {.lmdb = 1}, be_mem = {.lmdb = 0},
                 be_batched __attribute__((unused)) = {.lmdb = 1, .batched = 1};

static inline struct kv *open_kv(struct be *e)
{
  char why[256];
  if (e->lmdb) {
    struct kv *kv = NULL;
    assert_int_equal(kv_lmdb_open(e->dir, 64u << 20, &kv, why, sizeof why), 0);
    return kv;
  }
  return disk_kv(e->disk);
}

static inline void open_dbs(struct be *e)
{
  struct kv_txn *t;
  int wrote;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  assert_int_equal(kv_db(e->kv, t, "a", &e->a), 0);
  assert_int_equal(kv_db(e->kv, t, "b", &e->b), 0);
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
  if (e->batched)
    assert_int_equal(kv_set_nosync(e->kv, 1), 0);
}

static inline int setup(void **state)
{
  struct be *e = *state;
  if (e->lmdb) {
    strcpy(e->dir, "/tmp/auralog-unit-kv-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
  } else {
    e->disk = disk_new();
    assert_non_null(e->disk);
  }
  e->kv = open_kv(e);
  open_dbs(e);
  return 0;
}

static inline int teardown(void **state)
{
  struct be *e = *state;
  if (e->kv)
    kv_close(e->kv);
  e->kv = NULL;
  if (e->lmdb) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", e->dir);
    assert_int_equal(system(cmd), 0);
  } else {
    disk_free(e->disk);
    e->disk = NULL;
  }
  return 0;
}

static inline void put(struct be *e, struct kv_txn *t, unsigned db, const char *k,
                       const char *v)
{
  struct kv_val key = {strlen(k), (void *)k}, val = {strlen(v), (void *)v};
  assert_int_equal(kv_put(e->kv, t, db, &key, &val, 0), 0);
}

static inline void commit(struct be *e, struct kv_txn *t)
{
  int wrote;
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
}

#define BOTH(f) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, &be_lmdb), \
                cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, &be_mem)
#define MEM(f) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, &be_mem)
#define BATCHED(f) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, &be_batched)

#endif
