/*
 * test_meta.c: the coordinator's durable metadata (coord/meta.c) on both
 * kv backends: lmdb in a directory (meta_open, as `auralog coord` runs it)
 * and the simulator's disk (meta_open_kv(disk_kv(...)), as `auralog sim`).
 *
 * Every test runs on both and checks the same things: nodes and volumes
 * put come back from meta_load (a node's durable part only: id, az,
 * addr), and are still there after a reopen; volume ids increase and are
 * never handed out twice, across reopens too; a dropped volume stays
 * dropped (dropping one that is not there is no error); and what a put
 * returned before a crash is there after it. A crash is disk_crash() for
 * the simulated disk, and for lmdb a child process that puts and then
 * kills itself (SIGKILL: no meta_close, no exit handlers).
 *
 * lmdb alone: the data is in the format meta.c always wrote (databases
 * nodes, vols, ctr; next_volume_id a big-endian u64), both ways: what
 * raw lmdb wrote opens, and what meta writes reads back with raw lmdb; and
 * the error messages of a meta_open that fails. The simulated disk alone:
 * each put, id and drop is exactly one commit (one sync).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <lmdb.h>

#include "coord/meta.h"
#include "sim/disk.h"
#include "net/wire.h"

/* ---- the backends ---------------------------------------------------------- */

struct be {
  int lmdb;                  /* 1: lmdb in dir; 0: a simulated disk */
  struct disk *disk;
  char dir[64];
  struct meta m;
  int open;
};

static struct be be_lmdb = {.lmdb = 1}, be_mem = {.lmdb = 0};

static void open_meta(struct be *e)
{
  char why[256] = "";
  int rc = e->lmdb ? meta_open(&e->m, e->dir, why, sizeof why)
                   : meta_open_kv(&e->m, disk_kv(e->disk), why, sizeof why);
  if (rc != 0)
    fail_msg("meta_open: %s", why);
  e->open = 1;
}

static void close_meta(struct be *e)
{
  if (e->open)
    meta_close(&e->m);
  e->open = 0;
}

static int setup(void **state)
{
  struct be *e = *state;
  if (e->lmdb) {
    strcpy(e->dir, "/tmp/auralog-unit-meta-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
  } else {
    e->disk = disk_new();
    assert_non_null(e->disk);
  }
  open_meta(e);
  return 0;
}

static int teardown(void **state)
{
  struct be *e = *state;
  close_meta(e);
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

/* The coordinator stops cleanly and starts again. */
static void reopen(struct be *e)
{
  close_meta(e);
  open_meta(e);
}

/* The coordinator dies, without closing anything, and starts again. For
 * the disk: disk_crash, then a new meta on the same disk (the dead one's
 * kv is the disk's: closing it frees nothing). For lmdb the dying has to
 * be a real process's: see in_child. */
static void crash(struct be *e)
{
  assert_false(e->lmdb);
  disk_crash(e->disk);
  e->open = 0;
  open_meta(e);
}

/* For lmdb: run fn(e) in a child with its own meta open on e->dir, which
 * then dies by SIGKILL with the meta still open; the parent's meta is
 * closed meanwhile (one process at a time, as one coordinator) and opened
 * again after. For the disk: fn(e) on e's meta, then crash(e). */
static void in_child(struct be *e, void (*fn)(struct be *))
{
  if (!e->lmdb) {
    fn(e);
    crash(e);
    return;
  }
  close_meta(e);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char why[256];
    if (meta_open(&e->m, e->dir, why, sizeof why) != 0)
      _exit(2);
    e->open = 1;
    fn(e);
    raise(SIGKILL);
    _exit(3);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st));
  assert_int_equal(WTERMSIG(st), SIGKILL);
  open_meta(e);
}

/* ---- what meta_load finds ---------------------------------------------------- */

#define MAXGOT 16

struct got {
  Auralog__NodeInfo *node[MAXGOT];
  Auralog__Volume *vol[MAXGOT];
  size_t nnode, nvol;
};

static void got_node(void *arg, Auralog__NodeInfo *n)
{
  struct got *g = arg;
  assert_true(g->nnode < MAXGOT);
  g->node[g->nnode++] = n;
}

static void got_vol(void *arg, Auralog__Volume *v)
{
  struct got *g = arg;
  assert_true(g->nvol < MAXGOT);
  g->vol[g->nvol++] = v;
}

static void got_free(struct got *g)
{
  for (size_t i = 0; i < g->nnode; i++)
    auralog__node_info__free_unpacked(g->node[i], NULL);
  for (size_t i = 0; i < g->nvol; i++)
    auralog__volume__free_unpacked(g->vol[i], NULL);
  memset(g, 0, sizeof *g);
}

static void load(struct be *e, struct got *g)
{
  char why[256];
  memset(g, 0, sizeof *g);
  if (meta_load(&e->m, got_node, got_vol, g, why, sizeof why) != 0)
    fail_msg("meta_load: %s", why);
}

static const Auralog__NodeInfo *find_node(const struct got *g, const char *id)
{
  for (size_t i = 0; i < g->nnode; i++)
    if (strcmp(g->node[i]->id, id) == 0)
      return g->node[i];
  return NULL;
}

static const Auralog__Volume *find_vol(const struct got *g, const char *name)
{
  for (size_t i = 0; i < g->nvol; i++)
    if (strcmp(g->vol[i]->name, name) == 0)
      return g->vol[i];
  return NULL;
}

/* ---- what is put --------------------------------------------------------------- */

static void put_node(struct be *e, const char *id, const char *az, const char *addr)
{
  Auralog__NodeInfo n = AURALOG__NODE_INFO__INIT;
  n.id = (char *)id;
  n.az = (char *)az;
  n.addr = (char *)addr;
  n.up = 1;                  /* not durable: never stored */
  n.last_seen_ms = 1234;
  n.commits = 99;
  char why[256];
  if (meta_put_node(&e->m, &n, why, sizeof why) != 0)
    fail_msg("meta_put_node: %s", why);
}

static void check_node(const struct got *g, const char *id, const char *az,
                       const char *addr)
{
  const Auralog__NodeInfo *n = find_node(g, id);
  assert_non_null(n);
  assert_string_equal(n->az, az);
  assert_string_equal(n->addr, addr);
  assert_false(n->up);
  assert_int_equal(n->last_seen_ms, 0);
  assert_int_equal(n->commits, 0);
}

/* A volume of npg PGs, each of six segments. */
static void put_vol(struct be *e, const char *name, uint64_t id, uint64_t epoch, int npg)
{
  static const char *azs[] = {"A", "A", "B", "B", "C", "C"};
  Auralog__Volume v = AURALOG__VOLUME__INIT;
  Auralog__Pg pgs[4], *pgp[4];
  Auralog__Segment segs[4][6], *segp[4][6];
  char node[4][6][8];
  assert_true(npg <= 4);
  v.id = id;
  v.name = (char *)name;
  v.page_size = 4096;
  v.pg_pages = 1024;
  v.epoch = epoch;
  v.n_pgs = (size_t)npg;
  v.pgs = pgp;
  for (int p = 0; p < npg; p++) {
    auralog__pg__init(&pgs[p]);
    pgp[p] = &pgs[p];
    pgs[p].pg = (uint32_t)p;
    pgs[p].first_page = (uint32_t)p * 1024;
    pgs[p].npages = 1024;
    pgs[p].n_segments = 6;
    pgs[p].segments = segp[p];
    for (int s = 0; s < 6; s++) {
      Auralog__Segment *sg = &segs[p][s];
      auralog__segment__init(sg);
      segp[p][s] = sg;
      snprintf(node[p][s], sizeof node[p][s], "%s%d", azs[s], s % 2 + 1);
      sg->volume_id = id;
      sg->pg = (uint32_t)p;
      sg->first_page = pgs[p].first_page;
      sg->npages = 1024;
      sg->page_size = 4096;
      sg->node = node[p][s];
      sg->az = (char *)azs[s];
      sg->addr = node[p][s];
    }
  }
  char why[256];
  Auralog__Volume *copy = meta_put_volume(&e->m, &v, why, sizeof why);
  if (copy == NULL)
    fail_msg("meta_put_volume: %s", why);
  /* The copy is the caller's and equal to what was put. */
  assert_int_equal(copy->id, id);
  assert_string_equal(copy->name, name);
  assert_int_equal(copy->epoch, epoch);
  assert_int_equal(copy->n_pgs, npg);
  auralog__volume__free_unpacked(copy, NULL);
}

static void check_vol(const struct got *g, const char *name, uint64_t id,
                      uint64_t epoch, int npg)
{
  const Auralog__Volume *v = find_vol(g, name);
  assert_non_null(v);
  assert_int_equal(v->id, id);
  assert_int_equal(v->page_size, 4096);
  assert_int_equal(v->pg_pages, 1024);
  assert_int_equal(v->epoch, epoch);
  assert_int_equal(v->n_pgs, npg);
  for (int p = 0; p < npg; p++) {
    assert_int_equal(v->pgs[p]->pg, p);
    assert_int_equal(v->pgs[p]->first_page, p * 1024);
    assert_int_equal(v->pgs[p]->n_segments, 6);
    assert_string_equal(v->pgs[p]->segments[0]->node, "A1");
    assert_string_equal(v->pgs[p]->segments[5]->az, "C");
    assert_int_equal(v->pgs[p]->segments[3]->volume_id, id);
  }
}

static uint64_t next_id(struct be *e)
{
  char why[256];
  uint64_t id = meta_next_volume_id(&e->m, why, sizeof why);
  if (id == 0)
    fail_msg("meta_next_volume_id: %s", why);
  return id;
}

static void del_vol(struct be *e, const char *name)
{
  char why[256];
  if (meta_del_volume(&e->m, name, why, sizeof why) != 0)
    fail_msg("meta_del_volume: %s", why);
}

/* ---- both backends ------------------------------------------------------------ */

static void check_nv(struct be *e)
{
  struct got g;
  load(e, &g);
  assert_int_equal(g.nnode, 3);
  assert_int_equal(g.nvol, 2);
  check_node(&g, "A1", "A", "127.0.0.1:7101");
  check_node(&g, "B1", "B", "127.0.0.1:7103");
  check_node(&g, "C2", "C", "10.0.0.6:7106");
  check_vol(&g, "db", 1, 3, 2);
  check_vol(&g, "logs", 2, 1, 1);
  got_free(&g);
}

static void test_empty(void **state)
{
  struct be *e = *state;
  struct got g;
  load(e, &g);
  assert_int_equal(g.nnode, 0);
  assert_int_equal(g.nvol, 0);
  reopen(e);
  load(e, &g);
  assert_int_equal(g.nnode + g.nvol, 0);
}

static void test_nodes_and_volumes(void **state)
{
  struct be *e = *state;
  put_node(e, "A1", "A", "127.0.0.1:7101");
  put_node(e, "B1", "B", "127.0.0.1:7103");
  put_node(e, "C2", "C", "127.0.0.1:7106");
  put_node(e, "C2", "C", "10.0.0.6:7106");     /* a node moved: replaced */
  put_vol(e, "db", 1, 1, 2);
  put_vol(e, "logs", 2, 1, 1);
  put_vol(e, "db", 1, 3, 2);                   /* epoch bumps: replaced */
  check_nv(e);
  reopen(e);
  check_nv(e);
}

static void take_id(struct be *e)
{
  next_id(e);
}

static void test_next_volume_id(void **state)
{
  struct be *e = *state;
  assert_int_equal(next_id(e), 1);             /* a fresh store starts at 1 */
  assert_int_equal(next_id(e), 2);
  assert_int_equal(next_id(e), 3);
  reopen(e);
  assert_int_equal(next_id(e), 4);
  /* A coordinator that took an id and died: the id stays taken. */
  in_child(e, take_id);
  assert_int_equal(next_id(e), 6);
  in_child(e, take_id);
  in_child(e, take_id);
  assert_int_equal(next_id(e), 9);
}

static void test_del_volume(void **state)
{
  struct be *e = *state;
  put_vol(e, "a", 1, 1, 1);
  put_vol(e, "b", 2, 1, 1);
  put_vol(e, "c", 3, 1, 1);
  del_vol(e, "b");
  del_vol(e, "b");                             /* not there: no error */
  del_vol(e, "nosuch");
  struct got g;
  load(e, &g);
  assert_int_equal(g.nvol, 2);
  assert_non_null(find_vol(&g, "a"));
  assert_null(find_vol(&g, "b"));
  assert_non_null(find_vol(&g, "c"));
  got_free(&g);
  reopen(e);
  load(e, &g);
  assert_int_equal(g.nvol, 2);
  assert_null(find_vol(&g, "b"));
  got_free(&g);
  /* And the name can be taken again. */
  put_vol(e, "b", 4, 1, 1);
  load(e, &g);
  check_vol(&g, "b", 4, 1, 1);
  got_free(&g);
}

/* What the dying coordinator did: every put returned before it died. */
static void before_crash(struct be *e)
{
  put_node(e, "A1", "A", "127.0.0.1:7101");
  put_node(e, "B1", "B", "127.0.0.1:7103");
  put_node(e, "C2", "C", "10.0.0.6:7106");
  assert_int_equal(next_id(e), 1);
  put_vol(e, "db", 1, 1, 2);
  assert_int_equal(next_id(e), 2);
  put_vol(e, "logs", 2, 1, 1);
  put_vol(e, "gone", 3, 1, 1);
  del_vol(e, "gone");
  put_vol(e, "db", 1, 3, 2);                   /* the last thing it did */
}

/* And what a second one did, on top. */
static void before_crash2(struct be *e)
{
  assert_int_equal(next_id(e), 3);             /* ids 1 and 2 stay taken */
  put_vol(e, "db", 1, 4, 2);
  del_vol(e, "logs");
}

static void test_put_then_crash(void **state)
{
  struct be *e = *state;
  in_child(e, before_crash);
  check_nv(e);
  in_child(e, before_crash2);
  struct got g;
  load(e, &g);
  assert_int_equal(g.nnode, 3);
  assert_int_equal(g.nvol, 1);
  check_vol(&g, "db", 1, 4, 2);
  got_free(&g);
  assert_int_equal(next_id(e), 4);
}

/* ---- lmdb alone: the on-disk format ---------------------------------------------- */

static void raw_put(MDB_txn *t, MDB_dbi d, const char *k, const void *v, size_t n)
{
  MDB_val key = {strlen(k), (void *)k}, val = {n, (void *)v};
  assert_int_equal(mdb_put(t, d, &key, &val, 0), 0);
}

static MDB_env *raw_open(const char *dir)
{
  MDB_env *env;
  assert_int_equal(mdb_env_create(&env), 0);
  assert_int_equal(mdb_env_set_mapsize(env, 64u << 20), 0);
  assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
  assert_int_equal(mdb_env_open(env, dir, 0, 0644), 0);
  return env;
}

/* What meta.c wrote when it called lmdb itself opens as it was. */
static void test_lmdb_old_format_opens(void **state)
{
  struct be *e = *state;
  close_meta(e);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s/*", e->dir);
  assert_int_equal(system(cmd), 0);

  MDB_env *env = raw_open(e->dir);
  MDB_txn *t;
  MDB_dbi nodes, vols, ctr;
  assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
  assert_int_equal(mdb_dbi_open(t, "nodes", MDB_CREATE, &nodes), 0);
  assert_int_equal(mdb_dbi_open(t, "vols", MDB_CREATE, &vols), 0);
  assert_int_equal(mdb_dbi_open(t, "ctr", MDB_CREATE, &ctr), 0);
  Auralog__NodeInfo n = AURALOG__NODE_INFO__INIT;
  n.id = "B2";
  n.az = "B";
  n.addr = "127.0.0.1:7104";
  uint8_t buf[256];
  raw_put(t, nodes, "B2", buf, auralog__node_info__pack(&n, buf));
  Auralog__Volume v = AURALOG__VOLUME__INIT;
  v.id = 41;
  v.name = "old";
  v.page_size = 4096;
  v.pg_pages = 1024;
  v.epoch = 7;
  raw_put(t, vols, "old", buf, auralog__volume__pack(&v, buf));
  uint8_t next[8];
  put_be64(next, 42);
  raw_put(t, ctr, "next_volume_id", next, 8);
  assert_int_equal(mdb_txn_commit(t), 0);
  mdb_env_close(env);

  open_meta(e);
  struct got g;
  load(e, &g);
  assert_int_equal(g.nnode, 1);
  assert_int_equal(g.nvol, 1);
  check_node(&g, "B2", "B", "127.0.0.1:7104");
  const Auralog__Volume *o = find_vol(&g, "old");
  assert_non_null(o);
  assert_int_equal(o->id, 41);
  assert_int_equal(o->epoch, 7);
  got_free(&g);
  assert_int_equal(next_id(e), 42);
}

/* What meta writes is that same format, read with lmdb alone. */
static void test_lmdb_writes_old_format(void **state)
{
  struct be *e = *state;
  put_node(e, "A1", "A", "127.0.0.1:7101");
  put_vol(e, "db", 9, 2, 1);
  assert_int_equal(next_id(e), 1);
  assert_int_equal(next_id(e), 2);
  close_meta(e);

  MDB_env *env = raw_open(e->dir);
  MDB_txn *t;
  MDB_dbi nodes, vols, ctr;
  assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), 0);
  assert_int_equal(mdb_dbi_open(t, "nodes", 0, &nodes), 0);
  assert_int_equal(mdb_dbi_open(t, "vols", 0, &vols), 0);
  assert_int_equal(mdb_dbi_open(t, "ctr", 0, &ctr), 0);
  MDB_val key = {2, "A1"}, val;
  assert_int_equal(mdb_get(t, nodes, &key, &val), 0);
  Auralog__NodeInfo *n = auralog__node_info__unpack(NULL, val.mv_size, val.mv_data);
  assert_non_null(n);
  assert_string_equal(n->addr, "127.0.0.1:7101");
  assert_false(n->up);
  auralog__node_info__free_unpacked(n, NULL);
  key = (MDB_val){2, "db"};
  assert_int_equal(mdb_get(t, vols, &key, &val), 0);
  Auralog__Volume *v = auralog__volume__unpack(NULL, val.mv_size, val.mv_data);
  assert_non_null(v);
  assert_int_equal(v->id, 9);
  assert_int_equal(v->epoch, 2);
  auralog__volume__free_unpacked(v, NULL);
  key = (MDB_val){strlen("next_volume_id"), "next_volume_id"};
  assert_int_equal(mdb_get(t, ctr, &key, &val), 0);
  assert_int_equal(val.mv_size, 8);
  assert_int_equal(get_be64(val.mv_data), 3);
  MDB_stat ms;
  assert_int_equal(mdb_stat(t, nodes, &ms), 0);
  assert_int_equal(ms.ms_entries, 1);
  mdb_txn_abort(t);
  mdb_env_close(env);
  open_meta(e);
}

/* A meta_open that fails says why, in the words it always used. */
static void test_lmdb_open_errors(void **state)
{
  struct be *e = *state;
  char path[128], why[256];
  struct meta m;

  snprintf(path, sizeof path, "%s/file", e->dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  /* A file where the directory should be. */
  why[0] = 0;
  assert_int_equal(meta_open(&m, path, why, sizeof why), -1);
  assert_null(m.kv);
  char want[256];
  snprintf(want, sizeof want, "cannot open coordinator metadata in %s: ", path);
  if (strncmp(why, want, strlen(want)) != 0)
    fail_msg("unexpected: %s", why);
  /* A directory that cannot be made. */
  snprintf(path, sizeof path, "%s/file/sub", e->dir);
  why[0] = 0;
  assert_int_equal(meta_open(&m, path, why, sizeof why), -1);
  snprintf(want, sizeof want, "cannot create %s: ", path);
  if (strncmp(why, want, strlen(want)) != 0)
    fail_msg("unexpected: %s", why);
}

/* ---- the simulated disk alone ------------------------------------------------------ */

/* Each put, id and drop is one commit, durable before it returns: one
 * sync; a load writes nothing. */
static void test_disk_one_commit_each(void **state)
{
  struct be *e = *state;
  const struct disk_stats *ds = disk_stats(e->disk);
  uint64_t c = ds->commits, s = ds->syncs;
  put_node(e, "A1", "A", "127.0.0.1:7101");
  assert_int_equal(ds->commits, c + 1);
  put_vol(e, "db", 1, 1, 1);
  assert_int_equal(ds->commits, c + 2);
  next_id(e);
  assert_int_equal(ds->commits, c + 3);
  del_vol(e, "db");
  assert_int_equal(ds->commits, c + 4);
  struct got g;
  load(e, &g);
  got_free(&g);
  assert_int_equal(ds->commits, c + 4);
  assert_int_equal(ds->syncs, s + 4);
  /* Nothing was left open for a crash to lose. */
  uint64_t lost = ds->lost;
  crash(e);
  assert_int_equal(ds->lost, lost);
  assert_int_equal(disk_entries(e->disk, "nodes"), 1);
  assert_int_equal(disk_entries(e->disk, "vols"), 0);
  assert_int_equal(disk_entries(e->disk, "ctr"), 2);   /* the next id, db's tombstone */
}

/* A dropped name is remembered (coord/roles.c R3: an open never makes a
 * new, empty volume of it by accident), across a restart, until it is
 * created again on purpose. */
static void test_dropped_name_is_remembered(void **state)
{
  struct be *e = *state;
  put_vol(e, "db", 1, 1, 1);
  assert_int_equal(meta_dropped(&e->m, "db", 0), 0);
  del_vol(e, "db");
  assert_int_equal(meta_dropped(&e->m, "db", 0), 1);
  assert_int_equal(meta_dropped(&e->m, "other", 0), 0);
  crash(e);
  assert_int_equal(meta_dropped(&e->m, "db", 0), 1);
  assert_int_equal(meta_dropped(&e->m, "db", 1), 1);   /* created again: forget it */
  assert_int_equal(meta_dropped(&e->m, "db", 0), 0);
}

/* ---- main --------------------------------------------------------------------- */

/* Each test once per backend, named for it ("test_x on lmdb"). */
#define ON(fn, e)                                                       \
  {.name = #fn " on " #e, .test_func = fn, .setup_func = setup,         \
   .teardown_func = teardown, .initial_state = &be_##e}
#define BOTH(fn) ON(fn, lmdb), ON(fn, mem)

int main(void)
{
  const struct CMUnitTest tests[] = {
    BOTH(test_empty),
    BOTH(test_nodes_and_volumes),
    BOTH(test_next_volume_id),
    BOTH(test_del_volume),
    BOTH(test_put_then_crash),
    ON(test_lmdb_old_format_opens, lmdb),
    ON(test_lmdb_writes_old_format, lmdb),
    ON(test_lmdb_open_errors, lmdb),
    ON(test_disk_one_commit_each, mem),
    ON(test_dropped_name_is_remembered, mem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
