/*
 * test_kv.c: the storage node's key-value interface (node/kv.h) and its two
 * backends, lmdb (node/kv_lmdb.c) and the simulator's disk (sim/disk.c).
 *
 * Every semantic test runs against both, and they must agree: keys come
 * back in lmdb's order (memcmp, then the shorter first); a seek finds the
 * first key >= the one asked; cursors stop at both ends and step from an
 * unpositioned start; deleting under a cursor (a drain, as the format
 * upgrade does) keeps its place; an abort undoes every change
 * (overwrites and deletes included); a crash loses the open transaction
 * and keeps what was committed; a write transaction reads its own
 * changes; a commit that changed nothing says so; and a long random mix
 * of puts, deletes, commits and aborts leaves both backends holding the
 * same bytes.
 *
 * And lmdb's errors as the store sees them (kv_lmdb_classify): a full map
 * and ENOSPC are KV_FULL; an EIO (lmdb's word for a short write) is
 * KV_FULL with "disk full (N bytes free on DIR)" when the file system is
 * nearly full, and stays an I/O error when there is room or the free
 * space is unknown. A real full disk (a tiny tmpfs) is in test_kvdisk.c.
 *
 * The simulated disk alone, and the store on top, are in test_kvdisk.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <lmdb.h>

#include "param.h"
#include "rng.h"

#include "kv_util.h"

/* The process dies with *t open (NULL: none): lmdb is closed without
 * committing and opened again; the simulated disk crashes, and the dead
 * process's handle, now stale, is only freed. */
static void crash(struct be *e, struct kv_txn **t)
{
  if (e->lmdb) {
    if (*t)
      kv_abort(e->kv, *t);
    kv_close(e->kv);
  } else {
    disk_crash(e->disk);
    if (*t) {
      struct kv_val k = {1, "x"}, v;
      assert_int_equal(kv_get(e->kv, *t, e->a, &k, &v), KV_BADTXN);
      kv_abort(e->kv, *t);
    }
  }
  *t = NULL;
  e->kv = open_kv(e);
  open_dbs(e);
}

/* ---- helpers ---------------------------------------------------------------- */

/* Put n bytes of key k (may hold zero bytes). */
static void putn(struct be *e, struct kv_txn *t, unsigned db, const void *k, size_t n,
                 const char *v)
{
  struct kv_val key = {n, (void *)k}, val = {strlen(v), (void *)v};
  assert_int_equal(kv_put(e->kv, t, db, &key, &val, 0), 0);
}

/* "key=value,key=value" of db in key order, as t sees it (NULL: a read
 * transaction of its own). Keys and values are printable here. */
static char *dump(struct be *e, struct kv_txn *t, unsigned db)
{
  static char out[8192];
  struct kv_txn *r = t;
  if (r == NULL)
    assert_int_equal(kv_begin(e->kv, KV_RDONLY, &r), 0);
  struct kv_cursor *c;
  assert_int_equal(kv_cursor(e->kv, r, db, &c), 0);
  struct kv_val k, v;
  size_t n = 0;
  out[0] = 0;
  int rc;
  for (rc = kv_cursor_get(e->kv, c, KV_FIRST, &k, &v); rc == 0;
       rc = kv_cursor_get(e->kv, c, KV_NEXT, &k, &v))
    n += (size_t)snprintf(out + n, sizeof out - n, "%s%.*s=%.*s", n ? "," : "",
                          (int)k.len, (char *)k.data, (int)v.len, (char *)v.data);
  assert_int_equal(rc, KV_NOTFOUND);
  kv_cursor_close(e->kv, c);
  if (t == NULL)
    kv_abort(e->kv, r);
  return out;
}

static int keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
  int c = memcmp(a, b, alen < blen ? alen : blen);
  return c ? c : (alen > blen) - (alen < blen);
}

/* ---- semantics, on both --------------------------------------------------------- */

struct rkey {
  uint8_t b[8];
  size_t n;
};

static int rkey_cmp(const void *x, const void *y)
{
  const struct rkey *a = x, *b = y;
  return keycmp(a->b, a->n, b->b, b->n);
}

static void test_order(void **state)
{
  struct be *e = *state;
  /* Keys of 1..4 bytes from {0x00, 'a', 0xff}: every prefix relation. */
  enum { N = 400 };
  static struct rkey k[N];
  uint64_t seed = 7;
  static const uint8_t alpha[] = {0x00, 'a', 0xff};
  struct kv_txn *t;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  for (size_t i = 0; i < N; i++) {
    k[i].n = 1 + rng_below(&seed, 4);
    for (size_t j = 0; j < k[i].n; j++)
      k[i].b[j] = alpha[rng_below(&seed, 3)];
    putn(e, t, e->a, k[i].b, k[i].n, "v");
  }
  commit(e, t);
  qsort(k, N, sizeof *k, rkey_cmp);
  size_t uniq = 0;
  for (size_t i = 0; i < N; i++)
    if (uniq == 0 || rkey_cmp(&k[uniq - 1], &k[i]) != 0)
      k[uniq++] = k[i];
  assert_true(uniq > 80 && uniq <= 3 + 9 + 27 + 81);

  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &t), 0);
  size_t n = 0;
  assert_int_equal(kv_count(e->kv, t, e->a, &n), 0);
  assert_int_equal(n, uniq);
  struct kv_cursor *c;
  assert_int_equal(kv_cursor(e->kv, t, e->a, &c), 0);
  struct kv_val key, val;
  size_t i = 0;
  int rc;
  for (rc = kv_cursor_get(e->kv, c, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(e->kv, c, KV_NEXT, &key, &val), i++) {
    assert_true(i < uniq);
    assert_int_equal(key.len, k[i].n);
    assert_memory_equal(key.data, k[i].b, k[i].n);
    assert_int_equal(val.len, 1);
  }
  assert_int_equal(rc, KV_NOTFOUND);
  assert_int_equal(i, uniq);
  /* and backwards */
  for (rc = kv_cursor_get(e->kv, c, KV_LAST, &key, &val); rc == 0;
       rc = kv_cursor_get(e->kv, c, KV_PREV, &key, &val)) {
    assert_true(i > 0);
    i--;
    assert_int_equal(key.len, k[i].n);
    assert_memory_equal(key.data, k[i].b, k[i].n);
  }
  assert_int_equal(i, 0);
  kv_cursor_close(e->kv, c);
  kv_abort(e->kv, t);
}

static void test_seek_and_ends(void **state)
{
  struct be *e = *state;
  struct kv_txn *t;
  struct kv_cursor *c;
  struct kv_val key, val;
  /* an empty database has no ends */
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &t), 0);
  assert_int_equal(kv_cursor(e->kv, t, e->b, &c), 0);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_FIRST, &key, &val), KV_NOTFOUND);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_LAST, &key, &val), KV_NOTFOUND);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_NEXT, &key, &val), KV_NOTFOUND);
  key = (struct kv_val){1, "a"};
  assert_int_equal(kv_cursor_get(e->kv, c, KV_SEEK, &key, &val), KV_NOTFOUND);
  kv_cursor_close(e->kv, c);
  kv_abort(e->kv, t);

  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "b", "1");
  put(e, t, e->a, "d", "2");
  put(e, t, e->a, "d\x01", "3");
  put(e, t, e->a, "f", "4");
  commit(e, t);
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &t), 0);
  assert_int_equal(kv_cursor(e->kv, t, e->a, &c), 0);
  /* (a key with a zero byte has its length written out) */
  static const struct { const char *seek; size_t n; const char *found; } cases[] = {
    {"a", 1, "b"}, {"b", 1, "b"}, {"c", 1, "d"}, {"d", 1, "d"},
    {"d\x00", 2, "d\x01"}, {"d\x01", 2, "d\x01"}, {"d\x01\x00", 3, "f"},
    {"e", 1, "f"}, {"f", 1, "f"}, {"f\x00", 2, NULL}, {"g", 1, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    key = (struct kv_val){cases[i].n, (void *)cases[i].seek};
    int rc = kv_cursor_get(e->kv, c, KV_SEEK, &key, &val);
    if (cases[i].found == NULL) {
      assert_int_equal(rc, KV_NOTFOUND);
      continue;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(key.len, strlen(cases[i].found));
    assert_memory_equal(key.data, cases[i].found, key.len);
  }
  /* the ends */
  assert_int_equal(kv_cursor_get(e->kv, c, KV_FIRST, &key, &val), 0);
  assert_memory_equal(val.data, "1", 1);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_PREV, &key, &val), KV_NOTFOUND);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_LAST, &key, &val), 0);
  assert_memory_equal(val.data, "4", 1);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_NEXT, &key, &val), KV_NOTFOUND);
  /* store_tail's step: seek, then the one before */
  key = (struct kv_val){1, "e"};
  assert_int_equal(kv_cursor_get(e->kv, c, KV_SEEK, &key, &val), 0);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_PREV, &key, &val), 0);
  assert_int_equal(key.len, 2);
  assert_memory_equal(key.data, "d\x01", 2);
  kv_cursor_close(e->kv, c);
  /* a fresh cursor: NEXT is FIRST, PREV is LAST */
  assert_int_equal(kv_cursor(e->kv, t, e->a, &c), 0);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_NEXT, &key, &val), 0);
  assert_memory_equal(key.data, "b", 1);
  kv_cursor_close(e->kv, c);
  assert_int_equal(kv_cursor(e->kv, t, e->a, &c), 0);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_PREV, &key, &val), 0);
  assert_memory_equal(key.data, "f", 1);
  kv_cursor_close(e->kv, c);
  /* get */
  key = (struct kv_val){1, "d"};
  assert_int_equal(kv_get(e->kv, t, e->a, &key, &val), 0);
  assert_int_equal(val.len, 1);
  assert_memory_equal(val.data, "2", 1);
  key = (struct kv_val){1, "c"};
  assert_int_equal(kv_get(e->kv, t, e->a, &key, &val), KV_NOTFOUND);
  kv_abort(e->kv, t);
}

static void test_delete_while_iterating(void **state)
{
  struct be *e = *state;
  struct kv_txn *t;
  struct kv_cursor *c;
  struct kv_val key, val;
  char k[16];
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  for (int i = 0; i < 100; i++) {
    snprintf(k, sizeof k, "k%03d", i);
    put(e, t, e->a, k, "v");
    put(e, t, e->b, k, "v");
  }
  commit(e, t);

  /* Every other one, deleted under the cursor; NEXT goes on after it. */
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  assert_int_equal(kv_cursor(e->kv, t, e->a, &c), 0);
  int i = 0, rc;
  for (rc = kv_cursor_get(e->kv, c, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(e->kv, c, KV_NEXT, &key, &val), i++) {
    snprintf(k, sizeof k, "k%03d", i);
    assert_memory_equal(key.data, k, 4);
    if (i % 2 == 0)
      assert_int_equal(kv_cursor_del(e->kv, c), 0);
  }
  assert_int_equal(rc, KV_NOTFOUND);
  assert_int_equal(i, 100);
  kv_cursor_close(e->kv, c);
  size_t n;
  assert_int_equal(kv_count(e->kv, t, e->a, &n), 0);
  assert_int_equal(n, 50);
  /* PREV after a delete gives the one before it */
  assert_int_equal(kv_cursor(e->kv, t, e->a, &c), 0);
  key = (struct kv_val){4, "k051"};
  assert_int_equal(kv_cursor_get(e->kv, c, KV_SEEK, &key, &val), 0);
  assert_int_equal(kv_cursor_del(e->kv, c), 0);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_PREV, &key, &val), 0);
  assert_memory_equal(key.data, "k049", 4);
  kv_cursor_close(e->kv, c);

  /* a drain: delete FIRST until there is none. */
  assert_int_equal(kv_cursor(e->kv, t, e->b, &c), 0);
  i = 0;
  for (rc = kv_cursor_get(e->kv, c, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(e->kv, c, KV_FIRST, &key, &val), i++) {
    snprintf(k, sizeof k, "k%03d", i);
    assert_memory_equal(key.data, k, 4);
    /* a put in another database meanwhile (as a store might) */
    put(e, t, e->a, k, "indexed");
    assert_int_equal(kv_cursor_del(e->kv, c), 0);
  }
  assert_int_equal(rc, KV_NOTFOUND);
  assert_int_equal(i, 100);
  kv_cursor_close(e->kv, c);
  commit(e, t);
  assert_string_equal(dump(e, NULL, e->b), "");
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &t), 0);
  assert_int_equal(kv_count(e->kv, t, e->a, &n), 0);
  assert_int_equal(n, 100);
  kv_abort(e->kv, t);
}

static void test_abort_undoes(void **state)
{
  struct be *e = *state;
  struct kv_txn *t;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "a", "1");
  put(e, t, e->a, "b", "2");
  put(e, t, e->a, "c", "3");
  put(e, t, e->b, "z", "9");
  commit(e, t);
  const char *before = "a=1,b=2,c=3";

  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "a", "changed");              /* an overwrite */
  struct kv_val key = {1, "b"};
  assert_int_equal(kv_del(e->kv, t, e->a, &key), 0);  /* a delete */
  put(e, t, e->a, "d", "4");                    /* an insert */
  put(e, t, e->a, "c", "x");                    /* one key, many times */
  assert_int_equal(kv_del(e->kv, t, e->a, &(struct kv_val){1, "c"}), 0);
  put(e, t, e->a, "c", "y");
  put(e, t, e->b, "z", "8");
  struct kv_cursor *c;                          /* a delete by cursor */
  struct kv_val val;
  assert_int_equal(kv_cursor(e->kv, t, e->b, &c), 0);
  assert_int_equal(kv_cursor_get(e->kv, c, KV_FIRST, &key, &val), 0);
  assert_int_equal(kv_cursor_del(e->kv, c), 0);
  kv_cursor_close(e->kv, c);
  assert_string_equal(dump(e, t, e->a), "a=changed,c=y,d=4");
  assert_int_equal(kv_del(e->kv, t, e->a, &(struct kv_val){1, "q"}), KV_NOTFOUND);
  kv_abort(e->kv, t);
  assert_string_equal(dump(e, NULL, e->a), before);
  assert_string_equal(dump(e, NULL, e->b), "z=9");
}

static void test_crash_keeps_only_committed(void **state)
{
  struct be *e = *state;
  struct kv_txn *t;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "a", "1");
  put(e, t, e->a, "b", "2");
  commit(e, t);
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "b", "lost");
  put(e, t, e->a, "c", "lost");
  assert_int_equal(kv_del(e->kv, t, e->a, &(struct kv_val){1, "a"}), 0);
  crash(e, &t);
  assert_string_equal(dump(e, NULL, e->a), "a=1,b=2");
  /* and it goes on from there */
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "c", "3");
  commit(e, t);
  t = NULL;
  crash(e, &t);
  assert_string_equal(dump(e, NULL, e->a), "a=1,b=2,c=3");
}

static void test_write_txn_reads_its_own(void **state)
{
  struct be *e = *state;
  struct kv_txn *t;
  struct kv_val key = {1, "k"}, val;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  assert_int_equal(kv_get(e->kv, t, e->a, &key, &val), KV_NOTFOUND);
  put(e, t, e->a, "k", "mine");
  assert_int_equal(kv_get(e->kv, t, e->a, &key, &val), 0);
  assert_int_equal(val.len, 4);
  assert_memory_equal(val.data, "mine", 4);
  assert_string_equal(dump(e, t, e->a), "k=mine");
  size_t n;
  assert_int_equal(kv_count(e->kv, t, e->a, &n), 0);
  assert_int_equal(n, 1);
  /* KV_RESERVE: space to fill, then the bytes are there */
  struct kv_val r = {5, NULL};
  assert_int_equal(kv_put(e->kv, t, e->a, &(struct kv_val){1, "r"}, &r, KV_RESERVE), 0);
  assert_non_null(r.data);
  memcpy(r.data, "fill!", 5);
  assert_string_equal(dump(e, t, e->a), "k=mine,r=fill!");
  kv_abort(e->kv, t);
  assert_string_equal(dump(e, NULL, e->a), "");
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "k", "mine");
  r = (struct kv_val){5, NULL};
  assert_int_equal(kv_put(e->kv, t, e->a, &(struct kv_val){1, "r"}, &r, KV_RESERVE), 0);
  memcpy(r.data, "fill!", 5);
  commit(e, t);
  assert_string_equal(dump(e, NULL, e->a), "k=mine,r=fill!");
}

static void test_commit_says_whether_it_wrote(void **state)
{
  struct be *e = *state;
  struct kv_txn *t;
  int wrote = -1;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
  assert_int_equal(wrote, 0);
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  unsigned a2;
  assert_int_equal(kv_db(e->kv, t, "a", &a2), 0);   /* opening one: no write */
  assert_int_equal(a2, e->a);
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
  assert_int_equal(wrote, 0);
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "k", "v");
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
  assert_int_equal(wrote, 1);
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &t), 0);
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
  assert_int_equal(wrote, 0);
  assert_true(e->kv->syncs_per_commit == (e->batched ? 0u : e->lmdb ? 2u : 1u));
  assert_non_null(kv_strerror(e->kv, KV_FULL));
  assert_non_null(kv_strerror(e->kv, 5 /* EIO */));
}

static void test_lmdb_errors_say_what_is_full(void **state)
{
  (void)state;
  char why[256];
  size_t map = 8ull << 30;
  why[0] = 0;
  assert_int_equal(kv_lmdb_classify(0, "/d", map, 0, why, sizeof why), 0);
  assert_int_equal(kv_lmdb_classify(MDB_NOTFOUND, "/d", map, 0, why, sizeof why),
                   KV_NOTFOUND);
  assert_string_equal(why, "");               /* nothing to say */
  /* A short write on a nearly full disk: disk full, with the numbers. */
  assert_int_equal(kv_lmdb_classify(EIO, "/var/node-A1", map, 4096, why, sizeof why),
                   KV_FULL);
  assert_string_equal(why, "disk full (4096 bytes free on /var/node-A1)");
  assert_int_equal(kv_lmdb_classify(EIO, "/d", map, DISK_FULL_SLACK - 1, why, sizeof why),
                   KV_FULL);
  /* An EIO with room to spare, or nothing known: a real I/O error. */
  why[0] = 0;
  assert_int_equal(kv_lmdb_classify(EIO, "/d", map, DISK_FULL_SLACK, why, sizeof why), EIO);
  assert_int_equal(kv_lmdb_classify(EIO, "/d", map, 100ll << 30, why, sizeof why), EIO);
  assert_int_equal(kv_lmdb_classify(EIO, "/d", map, -1, why, sizeof why), EIO);
  assert_string_equal(why, "");
  /* ENOSPC is a full disk whatever statvfs says (quotas, inodes). */
  assert_int_equal(kv_lmdb_classify(ENOSPC, "/d", map, 1ll << 30, why, sizeof why), KV_FULL);
  assert_string_equal(why, "disk full (1073741824 bytes free on /d)");
  assert_int_equal(kv_lmdb_classify(ENOSPC, "/d", map, -1, why, sizeof why), KV_FULL);
  assert_string_equal(why, "disk full (free space on /d unknown)");
  /* The map, not the disk. */
  assert_int_equal(kv_lmdb_classify(MDB_MAP_FULL, "/d", map, 1ll << 30, why, sizeof why),
                   KV_FULL);
  assert_string_equal(why, "storage map full (all 8192 MiB of it used; 1073741824 bytes "
                      "free on /d)");
  /* Other errors pass through. */
  assert_int_equal(kv_lmdb_classify(EACCES, "/d", map, 0, why, sizeof why), EACCES);
  assert_int_equal(kv_lmdb_classify(MDB_CORRUPTED, "/d", map, 0, why, sizeof why),
                   MDB_CORRUPTED);
}

/* The same random history on both backends leaves the same bytes. With
 * crashes 0, a checkpoint (kv_sync) stands where a crash would. */
static void history(struct be *e, char *out, size_t outlen, int crashes)
{
  uint64_t seed = 42;
  struct kv_txn *t = NULL;
  for (int step = 0; step < 3000; step++) {
    if (t == NULL)
      assert_int_equal(kv_begin(e->kv, 0, &t), 0);
    unsigned op = rng_below(&seed, 100);
    char k[8], v[8];
    snprintf(k, sizeof k, "%u", rng_below(&seed, 300));
    snprintf(v, sizeof v, "%d", step);
    unsigned db = rng_below(&seed, 2) ? e->a : e->b;
    if (op < 60) {
      put(e, t, db, k, v);
    } else if (op < 85) {
      int rc = kv_del(e->kv, t, db, &(struct kv_val){strlen(k), k});
      assert_true(rc == 0 || rc == KV_NOTFOUND);
    } else if (op < 95) {
      commit(e, t);
      t = NULL;
    } else if (op < 98) {
      kv_abort(e->kv, t);
      t = NULL;
    } else if (crashes) {
      crash(e, &t);
    } else {
      if (t)
        commit(e, t);
      t = NULL;
      assert_int_equal(kv_sync(e->kv), 0);
    }
  }
  if (t)
    kv_abort(e->kv, t);
  snprintf(out, outlen, "%s", dump(e, NULL, e->a));
  size_t n = strlen(out);
  snprintf(out + n, outlen - n, "|%s", dump(e, NULL, e->b));
}

static void test_backends_agree(void **state)
{
  (void)state;
  static char lm[20000], mem[20000];
  struct be l = {.lmdb = 1}, m = {.lmdb = 0};
  void *sl = &l, *sm = &m;
  setup(&sl);
  setup(&sm);
  history(&l, lm, sizeof lm, 1);
  history(&m, mem, sizeof mem, 1);
  assert_true(strlen(lm) > 100);
  assert_string_equal(lm, mem);
  teardown(&sl);
  teardown(&sm);
}

/* lmdb's batched mode (nested transactions in one outer transaction) keeps
 * the same bytes as the simulated disk through the same history. */
static void test_batched_agrees(void **state)
{
  (void)state;
  static char lm[20000], mem[20000];
  struct be l = {.lmdb = 1, .batched = 1}, m = {.lmdb = 0};
  void *sl = &l, *sm = &m;
  setup(&sl);
  setup(&sm);
  history(&l, lm, sizeof lm, 0);
  history(&m, mem, sizeof mem, 0);
  assert_true(strlen(lm) > 100);
  assert_string_equal(lm, mem);
  teardown(&sl);
  teardown(&sm);
}

/* ---- lmdb's batched mode: commits durable only at a sync ---------------------- */

/* In batched mode a commit is seen at once but made durable only by the
 * next kv_sync: a crash (the process closing lmdb without one) goes back
 * to the last sync, whole. A reader reads what was committed; a writer
 * waits for readers, as kv.h says. */
static void test_batched_commits_at_sync(void **state)
{
  struct be *e = *state;
  struct kv_txn *t, *r;
  int wrote;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "a", "1");
  put(e, t, e->a, "b", "2");
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
  assert_int_equal(wrote, 1);
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);     /* nothing changed: */
  assert_int_equal(kv_commit(e->kv, t, &wrote), 0);
  assert_int_equal(wrote, 0);
  assert_string_equal(dump(e, NULL, e->a), "a=1,b=2");
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &r), 0);
  assert_int_equal(kv_begin(e->kv, 0, &t), KV_BUSY);  /* a reader is open */
  assert_int_equal(kv_sync(e->kv), KV_BUSY);
  kv_abort(e->kv, r);
  assert_int_equal(kv_sync(e->kv), 0);
  assert_int_equal(e->kv->pending, 0);
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &r), KV_BUSY);  /* a writer is */
  put(e, t, e->a, "b", "lost");
  put(e, t, e->a, "c", "lost");
  assert_int_equal(kv_del(e->kv, t, e->a, &(struct kv_val){1, "a"}), 0);
  commit(e, t);
  assert_true(e->kv->pending > 0);
  assert_string_equal(dump(e, NULL, e->a), "b=lost,c=lost");
  t = NULL;
  crash(e, &t);                                      /* no sync since */
  assert_int_equal(kv_set_nosync(e->kv, 1), 0);
  assert_string_equal(dump(e, NULL, e->a), "a=1,b=2");
  /* Leaving batched mode commits the batch, synced. */
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  put(e, t, e->a, "c", "3");
  commit(e, t);
  assert_int_equal(kv_set_nosync(e->kv, 0), 0);
  t = NULL;
  crash(e, &t);
  assert_string_equal(dump(e, NULL, e->a), "a=1,b=2,c=3");
}

/* Read a whole file into memory. */
static uint8_t *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  assert_true(n > 0);
  rewind(f);
  uint8_t *b = malloc((size_t)n);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* In a child (a damaged file may crash lmdb): open the environment in dir
 * and compare db "a" with want. Exit 0: equal; 1: another state; 2: lmdb
 * refused it. */
static int check_copy(const char *dir, const char *want)
{
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* No cmocka here: a failed assert would unwind into the parent's
     * runner, in this process. */
    struct kv *kv;
    char why[256];
    unsigned db;
    int wrote;
    struct kv_txn *t;
    struct kv_cursor *c;
    if (kv_lmdb_open(dir, 64u << 20, &kv, why, sizeof why) != 0 ||
        kv_begin(kv, 0, &t) != 0 || kv_db(kv, t, "a", &db) != 0 ||
        kv_commit(kv, t, &wrote) != 0 || kv_begin(kv, KV_RDONLY, &t) != 0 ||
        kv_cursor(kv, t, db, &c) != 0)
      _exit(2);
    static char got[200000];
    struct kv_val kk, vv;
    size_t n = 0;
    int rc;
    for (rc = kv_cursor_get(kv, c, KV_FIRST, &kk, &vv); rc == 0 && n < sizeof got;
         rc = kv_cursor_get(kv, c, KV_NEXT, &kk, &vv))
      n += (size_t)snprintf(got + n, sizeof got - n, "%s%.*s=%.*s", n ? "," : "",
                            (int)kk.len, (char *)kk.data, (int)vv.len, (char *)vv.data);
    if (rc != KV_NOTFOUND)
      _exit(2);
    _exit(strcmp(got, want) == 0 ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

/* kv_lmdb.c's B1: between two syncs, batched mode writes nothing that the
 * last synced meta page reaches, so a power loss leaves data.mdb as of
 * that sync whatever the file system kept of the writes since, and in
 * whatever order. The model: the file as of the sync (A), the file after
 * many commits since (B), and after the power loss each page is A's or
 * B's at random (pages past A's end: B's, or zeros). Every such file must
 * open as the synced state, exactly. (With lmdb's MDB_NOSYNC, which this
 * mode replaced, a mix that takes B's meta page gets another state, or a
 * damaged one.) */
static void test_power_loss_between_checkpoints_keeps_the_last_one(void **state)
{
  struct be *e = *state;
  struct kv_txn *t;
  char k[16], v[64], path[128];
  for (int i = 0; i < 2000; i++) {                  /* the synced state */
    if (i % 100 == 0)
      assert_int_equal(kv_begin(e->kv, 0, &t), 0);
    snprintf(k, sizeof k, "k%05d", i);
    snprintf(v, sizeof v, "synced-%d-%040d", i, i);
    put(e, t, e->a, k, v);
    if (i % 100 == 99)
      commit(e, t);
  }
  assert_int_equal(kv_sync(e->kv), 0);
  static char want[200000];
  struct kv_txn *r;
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &r), 0);
  {
    struct kv_cursor *c;
    struct kv_val kk, vv;
    size_t n = 0;
    assert_int_equal(kv_cursor(e->kv, r, e->a, &c), 0);
    for (int rc = kv_cursor_get(e->kv, c, KV_FIRST, &kk, &vv); rc == 0;
         rc = kv_cursor_get(e->kv, c, KV_NEXT, &kk, &vv))
      n += (size_t)snprintf(want + n, sizeof want - n, "%s%.*s=%.*s", n ? "," : "",
                            (int)kk.len, (char *)kk.data, (int)vv.len, (char *)vv.data);
    kv_cursor_close(e->kv, c);
  }
  kv_abort(e->kv, r);
  snprintf(path, sizeof path, "%s/data.mdb", e->dir);
  size_t alen, blen;
  uint8_t *a = slurp(path, &alen);
  /* Many commits since: overwrites, deletes, new keys, bigger values. */
  uint64_t seed = 7;
  for (int c = 0; c < 60; c++) {
    assert_int_equal(kv_begin(e->kv, 0, &t), 0);
    for (int j = 0; j < 100; j++) {
      snprintf(k, sizeof k, "k%05u", rng_below(&seed, 3000));
      if (rng_below(&seed, 4) == 0) {
        int rc = kv_del(e->kv, t, e->a, &(struct kv_val){strlen(k), k});
        assert_true(rc == 0 || rc == KV_NOTFOUND);
      } else {
        snprintf(v, sizeof v, "later-%d-%050d", c, j);
        put(e, t, e->a, k, v);
      }
    }
    commit(e, t);
  }
  uint8_t *b = slurp(path, &blen);
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), len = alen > blen ? alen : blen;
  char dir[sizeof e->dir + 8];
  snprintf(dir, sizeof dir, "%s/after", e->dir);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(path, sizeof path, "%s/data.mdb", dir);
  uint8_t *mix = malloc(len);
  assert_non_null(mix);
  for (int trial = 0; trial < 24; trial++) {
    for (size_t off = 0; off < len; off += ps) {
      size_t n = len - off < ps ? len - off : ps;
      int take_b = trial == 0 ? 1 : trial == 1 ? 0 : (int)rng_below(&seed, 2);
      const uint8_t *src = take_b ? (off < blen ? b + off : NULL) : (off < alen ? a + off : NULL);
      if (src)
        memcpy(mix + off, src, n);
      else
        memset(mix + off, 0, n);
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(mix, 1, len, f), len);
    fclose(f);
    char lock[160];
    snprintf(lock, sizeof lock, "%s/lock.mdb", dir);
    unlink(lock);
    int got = check_copy(dir, want);
    if (got != 0)
      fail_msg("a power loss (trial %d) left data.mdb %s", trial,
               got == 1 ? "in another state than the last sync" : "unreadable");
  }
  free(mix);
  free(a);
  free(b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    BOTH(test_order),
    BOTH(test_seek_and_ends),
    BOTH(test_delete_while_iterating),
    BOTH(test_abort_undoes),
    BOTH(test_crash_keeps_only_committed),
    BOTH(test_write_txn_reads_its_own),
    BOTH(test_commit_says_whether_it_wrote),
    BATCHED(test_order),
    BATCHED(test_seek_and_ends),
    BATCHED(test_delete_while_iterating),
    BATCHED(test_abort_undoes),
    BATCHED(test_write_txn_reads_its_own),
    BATCHED(test_commit_says_whether_it_wrote),
    BATCHED(test_batched_commits_at_sync),
    BATCHED(test_power_loss_between_checkpoints_keeps_the_last_one),
    cmocka_unit_test(test_backends_agree),
    cmocka_unit_test(test_batched_agrees),
    cmocka_unit_test(test_lmdb_errors_say_what_is_full),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
