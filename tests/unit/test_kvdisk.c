/*
 * test_kvdisk.c: the simulator's disk (sim/disk.c) as a key-value backend
 * (node/kv.h) on its own, and the storage node's store (node/store.c) on
 * top of a key-value backend.
 *
 * The simulated disk alone: its transaction rules (one writer, readers
 * only without it, stale handles after a crash) and its bit rot (exactly
 * one bit of one value, chosen by the number given, the same every run).
 *
 * And the store on top (node/store.c through store_open_kv, and on lmdb
 * through store_open): records committed before a crash are what
 * store_load finds after it, those of the open transaction are gone;
 * pages read the same before and after the background index runs; a
 * record the disk damaged is left out (a hole at its LSN), never served.
 *
 * And a real full disk: the store on lmdb in a 2 MiB tmpfs (mounted in a
 * child's own mount namespace, so nothing outlives the test; skipped
 * where mounting is not permitted) fails its commit with "disk full (N
 * bytes free on DIR)", not lmdb's "Input/output error", and keeps every
 * record committed before.
 *
 * What both backends must agree on is in test_kv.c.
 */
#define _GNU_SOURCE         /* unshare */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rng.h"

#include "node/kv.h"
#include "node/segment.h"
#include "node/store.h"
#include "record.h"
#include "sim/disk.h"
#include "net/wire.h"

#include "kv_util.h"

/* ---- the simulated disk alone ----------------------------------------------------- */

static void test_disk_txn_rules(void **state)
{
  struct be *e = *state;
  struct kv_txn *w, *r, *r2, *x;
  assert_int_equal(kv_begin(e->kv, 0, &w), 0);
  assert_int_equal(kv_begin(e->kv, 0, &x), KV_BUSY);          /* one writer */
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &x), KV_BUSY);  /* no reader beside it */
  put(e, w, e->a, "k", "v");
  commit(e, w);
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &r), 0);        /* readers together */
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &r2), 0);
  assert_int_equal(kv_begin(e->kv, 0, &x), KV_BUSY);          /* no writer beside them */
  assert_int_equal(kv_put(e->kv, r, e->a, &(struct kv_val){1, "k"},
                          &(struct kv_val){1, "v"}, 0), EACCES);
  kv_abort(e->kv, r);
  kv_abort(e->kv, r2);
  /* A crash ends everything: the handles are stale, and only freed. */
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &r), 0);
  struct kv_cursor *c;
  assert_int_equal(kv_cursor(e->kv, r, e->a, &c), 0);
  disk_crash(e->disk);
  struct kv_val key, val;
  assert_int_equal(kv_cursor_get(e->kv, c, KV_FIRST, &key, &val), KV_BADTXN);
  int wrote;
  assert_int_equal(kv_commit(e->kv, r, &wrote), KV_BADTXN);  /* freed it too */
  assert_int_equal(kv_begin(e->kv, 0, &w), 0);                /* the disk goes on */
  kv_cursor_close(e->kv, c);
  /* a handle left open when the disk goes: disk_free frees it */
  assert_int_equal(kv_cursor(e->kv, w, e->a, &c), 0);
  put(e, w, e->a, "never", "committed");
  assert_int_equal(disk_stats(e->disk)->crashes, 1);
}

/* Every value of db: "key=value" with values in hex. */
static size_t snapshot(struct be *e, unsigned db, char **lines, size_t max)
{
  struct kv_txn *t;
  struct kv_cursor *c;
  struct kv_val k, v;
  size_t n = 0;
  assert_int_equal(kv_begin(e->kv, KV_RDONLY, &t), 0);
  assert_int_equal(kv_cursor(e->kv, t, db, &c), 0);
  for (int rc = kv_cursor_get(e->kv, c, KV_FIRST, &k, &v); rc == 0 && n < max;
       rc = kv_cursor_get(e->kv, c, KV_NEXT, &k, &v)) {
    char *s = malloc(k.len + 2 * v.len + 2);
    memcpy(s, k.data, k.len);
    s[k.len] = '=';
    for (size_t i = 0; i < v.len; i++)
      sprintf(s + k.len + 1 + 2 * i, "%02x", ((uint8_t *)v.data)[i]);
    s[k.len + 1 + 2 * v.len] = 0;
    lines[n++] = s;
  }
  kv_cursor_close(e->kv, c);
  kv_abort(e->kv, t);
  return n;
}

static void test_disk_corrupt(void **state)
{
  struct be *e = *state;
  assert_int_equal(disk_corrupt(e->disk, 1), 0);              /* no recs yet */
  struct kv_txn *t;
  unsigned recs;
  assert_int_equal(kv_begin(e->kv, 0, &t), 0);
  assert_int_equal(kv_db(e->kv, t, "recs", &recs), 0);
  char k[8], v[32];
  for (int i = 0; i < 50; i++) {
    snprintf(k, sizeof k, "r%02d", i);
    snprintf(v, sizeof v, "value of record %02d", i);
    put(e, t, recs, k, v);
    put(e, t, e->a, k, v);
  }
  commit(e, t);
  enum { N = 64 };
  char *before[N], *after[N], *other[N], *other2[N];
  uint64_t seed = 99;
  for (int round = 0; round < 20; round++) {
    size_t n = snapshot(e, recs, before, N);
    size_t no = snapshot(e, e->a, other, N);
    assert_int_equal(disk_corrupt(e->disk, rng_next(&seed)), 1);
    assert_int_equal(snapshot(e, recs, after, N), n);
    assert_int_equal(snapshot(e, e->a, other2, N), no);
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
      if (strcmp(before[i], after[i]) != 0) {
        changed++;
        /* one bit of one byte: two hex digits differ at most */
        size_t len = strlen(before[i]), diff = 0;
        assert_int_equal(strlen(after[i]), len);
        for (size_t j = 0; j < len; j++)
          diff += before[i][j] != after[i][j];
        assert_true(diff >= 1 && diff <= 2);
      }
      free(before[i]);
      free(after[i]);
    }
    assert_int_equal(changed, 1);
    for (size_t i = 0; i < no; i++) {
      assert_string_equal(other[i], other2[i]);   /* only recs is hit */
      free(other[i]);
      free(other2[i]);
    }
  }
  assert_int_equal(disk_stats(e->disk)->corruptions, 20);
  /* The same number picks the same bit on an identical disk. */
  struct disk *d2 = disk_new();
  struct be e2 = {.lmdb = 0, .disk = d2, .kv = disk_kv(d2)};
  open_dbs(&e2);
  assert_int_equal(kv_begin(e2.kv, 0, &t), 0);
  assert_int_equal(kv_db(e2.kv, t, "recs", &recs), 0);
  for (int i = 0; i < 50; i++) {
    snprintf(k, sizeof k, "r%02d", i);
    snprintf(v, sizeof v, "value of record %02d", i);
    put(&e2, t, recs, k, v);
  }
  commit(&e2, t);
  seed = 99;
  for (int round = 0; round < 20; round++)
    assert_int_equal(disk_corrupt(d2, rng_next(&seed)), 1);
  size_t n1 = snapshot(e, recs, before, N), n2 = snapshot(&e2, recs, after, N);
  assert_int_equal(n1, n2);
  for (size_t i = 0; i < n1; i++) {
    assert_string_equal(before[i], after[i]);
    free(before[i]);
    free(after[i]);
  }
  disk_free(d2);
}

/* ---- the store on a simulated disk ------------------------------------------------- */

#define FIRST 256
#define NPAGES 64
#define PSIZE 4096

/* A record writing 8 bytes of its LSN's low byte at off 8*(lsn%8) of page. */
struct trec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[8];
};

static void mkrec(struct trec *t, uint64_t lsn, uint64_t prev, uint32_t page)
{
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  memset(t->data, (int)(lsn & 0xff), sizeof t->data);
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = page;
  t->r.epoch = 1;
  t->g.off = (uint32_t)(8 * (lsn % 8));
  t->g.data.len = sizeof t->data;
  t->g.data.data = t->data;
  t->gp = &t->g;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
}

static struct segment loaded;
static int nloaded;

static void keep(void *arg, struct segment *s)
{
  (void)arg;
  loaded = *s;
  nloaded++;
}

static void load(struct store *st)
{
  char why[256];
  nloaded = 0;
  assert_int_equal(store_load(st, keep, NULL, why, sizeof why), 0);
  assert_int_equal(nloaded, 1);
}

/* Records lsn in [from, to] chained one after another, on pages FIRST..+3. */
static void store_recs(struct store *st, struct segment *s, uint64_t from, uint64_t to)
{
  char why[256];
  assert_int_equal(store_begin(st, why, sizeof why), 0);
  for (uint64_t lsn = from; lsn <= to; lsn++) {
    struct trec t;
    mkrec(&t, lsn, lsn - 1, FIRST + (uint32_t)(lsn % 4));
    assert_int_equal(store_put_rec(st, s, &t.r, why, sizeof why), 0);
  }
}

static void test_store_on_disk_crash(void **state)
{
  struct be *e = *state;
  char why[256];
  struct store st;
  kv_close(e->kv);                /* the store makes its own */
  e->kv = NULL;
  if (e->lmdb)
    assert_int_equal(store_open(&st, e->dir, 0, why, sizeof why), 0);
  else
    assert_int_equal(store_open_kv(&st, disk_kv(e->disk), why, sizeof why), 0);
  struct segment s;
  seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
  store_recs(&st, &s, 1, 20);
  assert_int_equal(store_put_meta(&st, &s, why, sizeof why), 0);
  assert_int_equal(store_commit(&st, why, sizeof why), 0);
  uint64_t commits = st.commits;
  assert_true(commits >= 1);
  if (st.hl)                      /* lmdb: the hot log's one flush per group commit */
    assert_int_equal(st.fsyncs, 1);
  else
    assert_int_equal(st.fsyncs, commits * st.syncs_per_commit);
  /* a page, as of 20, read twice: reads write nothing */
  uint8_t p1[PSIZE], p2[PSIZE];
  uint64_t lsn1, lsn2;
  assert_int_equal(store_read_page(&st, &s, FIRST + 1, 20, p1, &lsn1, why, sizeof why), 0);
  assert_int_equal(lsn1, 17);
  assert_int_equal(p1[8 * (17 % 8)], 17);
  assert_int_equal(p1[8 * (13 % 8)], 13);
  assert_int_equal(store_read_page(&st, &s, FIRST + 1, 20, p2, &lsn2, why, sizeof why), 0);
  assert_int_equal(lsn2, lsn1);
  assert_memory_equal(p1, p2, PSIZE);
  assert_int_equal(st.commits, commits);

  /* 21..30 in the open transaction when the process dies */
  store_recs(&st, &s, 21, 30);
  assert_true(store_held(&st, &s, 25, NULL));
  if (e->lmdb) {
    store_close(&st);             /* lmdb: closed without a commit */
    assert_int_equal(store_open(&st, e->dir, 0, why, sizeof why), 0);
  } else {
    disk_crash(e->disk);
    store_close(&st);             /* the dead store's handles: only freed */
    assert_int_equal(store_open_kv(&st, disk_kv(e->disk), why, sizeof why), 0);
  }
  load(&st);
  assert_int_equal(loaded.scl, 20);
  assert_int_equal(loaded.max_lsn, 20);
  assert_int_equal(loaded.npend, 0);
  assert_false(store_held(&st, &loaded, 21, NULL));
  assert_int_equal(store_tail(&st, &loaded, UINT64_MAX), 20);
  Rec **recs;
  int more;
  long n = store_above(&st, &loaded, 0, &recs, 100, &more);
  assert_int_equal(n, 20);
  assert_int_equal(more, 0);
  for (long i = 0; i < n; i++) {
    assert_int_equal(recs[i]->lsn, (uint64_t)i + 1);
    auralog__record__free_unpacked(recs[i], NULL);
  }
  free(recs);

  if (!e->lmdb) {
    /* Bit rot in one record: it is left out, a hole at its LSN. */
    uint64_t seed = 5, r = rng_next(&seed);
    assert_int_equal(disk_corrupt(e->disk, r), 1);
    seg_free(&loaded);
    store_close(&st);
    assert_int_equal(store_open_kv(&st, disk_kv(e->disk), why, sizeof why), 0);
    load(&st);
    uint64_t bad = loaded.scl + 1;
    assert_true(bad >= 1 && bad <= 20);
    assert_int_equal(loaded.npend, 20 - bad);
    assert_true(store_held(&st, &loaded, bad, NULL));  /* there, unreadable */
    n = store_above(&st, &loaded, 0, &recs, 100, &more);
    assert_int_equal(n, 19);
    for (long i = 0; i < n; i++) {
      assert_true(recs[i]->lsn != bad);
      auralog__record__free_unpacked(recs[i], NULL);
    }
    free(recs);
    /* the same number damages the same record on every run */
    assert_int_equal(bad, 19);
  }
  seg_free(&loaded);
  seg_free(&s);
  store_close(&st);
  e->kv = open_kv(e);             /* for teardown */
}

/* ---- a real full disk ----------------------------------------------------------- */

/* In a child: mount a 2 MiB tmpfs on dir, fill the store in it until a
 * commit fails, and say how in msg: "<code> <last lsn committed> <tail
 * after reopening>|<why>". Returns 77 if it cannot mount. */
static int fill_a_tiny_disk(const char *dir, char *msg, size_t n)
{
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("auralog-unit", dir, "tmpfs", 0, "size=2m") != 0) {
    snprintf(msg, n, "cannot mount a small tmpfs here: %s", strerror(errno));
    return 77;
  }
  struct store st;
  char why[512];
  if (store_open(&st, dir, 0, why, sizeof why) != 0) {
    snprintf(msg, n, "store_open: %s", why);
    return 1;
  }
  struct segment s;
  seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
  static uint8_t data[2048];
  memset(data, 0x5a, sizeof data);
  uint64_t lsn = 0, durable = 0;
  int rc = 0;
  while (rc == 0 && lsn < 100000) {
    if ((rc = store_begin(&st, why, sizeof why)) != 0)
      break;
    for (int k = 0; k < 16 && rc == 0; k++) {
      struct trec t;
      lsn++;
      mkrec(&t, lsn, lsn - 1, FIRST);
      t.g.off = 0;
      t.g.data.len = sizeof data;      /* 2 KiB a record: the disk fills fast */
      t.g.data.data = data;
      rec_seal(&t.r);
      rc = store_put_rec(&st, &s, &t.r, why, sizeof why);
    }
    if (rc == 0 && (rc = store_commit(&st, why, sizeof why)) == 0)
      durable = lsn;
  }
  store_abort(&st);
  store_close(&st);
  /* What was committed before is all there. */
  uint64_t tail = 0;
  char why2[512];
  if (store_open(&st, dir, 0, why2, sizeof why2) == 0) {
    tail = store_tail(&st, &s, UINT64_MAX);
    store_close(&st);
  }
  seg_free(&s);
  snprintf(msg, n, "%d %llu %llu|%s", rc, (unsigned long long)durable,
           (unsigned long long)tail, why);
  return 0;
}

static void test_store_on_a_full_disk(void **state)
{
  (void)state;
  char dir[] = "/tmp/auralog-unit-full-XXXXXX";
  assert_non_null(mkdtemp(dir));
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char msg[1024];
    close(fds[0]);
    int code = fill_a_tiny_disk(dir, msg, sizeof msg);
    if (write(fds[1], msg, strlen(msg)) < 0)
      code = 1;
    _exit(code);
  }
  close(fds[1]);
  char msg[1024];
  size_t got = 0;
  ssize_t r;
  while (got < sizeof msg - 1 && (r = read(fds[0], msg + got, sizeof msg - 1 - got)) > 0)
    got += (size_t)r;
  msg[got] = 0;
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  rmdir(dir);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    print_message("skipped: %s\n", msg);
    skip();
  }
  if (WEXITSTATUS(status) != 0)
    fail_msg("%s", msg);
  int rc;
  unsigned long long durable, tail;
  char *bar = strchr(msg, '|');
  assert_non_null(bar);
  assert_int_equal(sscanf(msg, "%d %llu %llu|", &rc, &durable, &tail), 3);
  print_message("full after %llu records: %s\n", durable, bar + 1);
  assert_int_equal(rc, ERR_DISK_FULL);
  char want[128];
  snprintf(want, sizeof want, " bytes free on %s) while ", dir);
  if (strncmp(bar + 1, "disk full (", 11) != 0 || strstr(bar + 1, want) == NULL ||
      strstr(bar + 1, "nothing was stored") == NULL)
    fail_msg("not a disk-full message: %s", bar + 1);
  assert_null(strstr(bar + 1, "Input/output error"));
  assert_true(durable > 0);
  assert_int_equal(tail, durable);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    MEM(test_disk_txn_rules),
    MEM(test_disk_corrupt),
    BOTH(test_store_on_disk_crash),
    cmocka_unit_test(test_store_on_a_full_disk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
