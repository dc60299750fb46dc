/*
 * Integration, differential: the binlog as a logical replica (issue 29).
 * A seeded random workload runs through a real engine: inserts, updates,
 * deletes (rowid and WITHOUT ROWID tables), multi-table transactions,
 * rollbacks, savepoints rolled back to and released, failed statements,
 * and schema changes (CREATE, ALTER ADD COLUMN, DROP). At several points
 * `auralog binlog apply --into FILE` brings a stock SQLite file up to the
 * last commit, and every table of the file must equal the volume's, row
 * for row (each value quoted by SQLite itself), with no table more or
 * less. In both modes: enhanced (the stream read from the binlog PG's
 * segments) and community (read from the engine's binlog file).
 *
 * AURALOG_TEST_SEED picks the workload (default 1); the failing seed and
 * point are printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "net/rpc.h"
#include "vfs/binapply.h"

#define POINTS 4
#define TXNS_PER_POINT 40

static char o[4 << 20], dump_v[4 << 20], dump_f[4 << 20];
static uint64_t seed_;

static uint64_t rnd(void)
{
  seed_ ^= seed_ << 13;
  seed_ ^= seed_ >> 7;
  seed_ ^= seed_ << 17;
  return seed_;
}

static unsigned below(unsigned n)
{
  return (unsigned)(rnd() % n);
}

/* The workload's own picture of the schema: tables t0..t3 exist or not,
 * and how many extra columns each has. */
struct schema {
  int exists[4];
  int extra[4];
  int wr[4];                 /* WITHOUT ROWID */
};

static void create(char *q, size_t n, struct schema *s, int t)
{
  s->exists[t] = 1;
  s->extra[t] = 0;
  s->wr[t] = t == 3;
  if (s->wr[t])
    snprintf(q, n, "CREATE TABLE t%d(k TEXT PRIMARY KEY, a INTEGER, b) WITHOUT ROWID;", t);
  else
    snprintf(q, n, "CREATE TABLE t%d(id INTEGER PRIMARY KEY, a INTEGER, b);", t);
}

/* One statement on table t (which exists). */
static void stmt(char *q, size_t n, const struct schema *s, int t)
{
  unsigned k = below(40), op = below(10);
  const char *vals[] = {"NULL", "'text'", "3.25", "-0.0", "X'00ff10'", "'é ü'", "12345678901",
                        "'a''b'"};
  const char *v = vals[below(8)];
  char key[32];
  if (s->wr[t])
    snprintf(key, sizeof key, "'k%u'", k);
  else
    snprintf(key, sizeof key, "%u", k);
  if (op < 4)
    snprintf(q, n, "INSERT OR REPLACE INTO t%d(%s, a, b) VALUES(%s, %u, %s);", t,
             s->wr[t] ? "k" : "id", key, below(1000), v);
  else if (op < 7)
    snprintf(q, n, "UPDATE t%d SET a = a + %u, b = %s WHERE %s %s %s;", t, below(9), v,
             s->wr[t] ? "k" : "id", below(2) ? "=" : "<", key);
  else if (op < 9)
    snprintf(q, n, "DELETE FROM t%d WHERE %s = %s;", t, s->wr[t] ? "k" : "id", key);
  else if (s->extra[t] < 3)
    snprintf(q, n, "INSERT INTO t%d(%s, a) VALUES(%s, 1);", t, s->wr[t] ? "k" : "id", key);
  else
    snprintf(q, n, "UPDATE t%d SET x%d = %s WHERE rowid %% 2 = 0 OR 1;", t, s->extra[t] - 1, v);
}

static int any_table(const struct schema *s)
{
  for (int t = 0; t < 4; t++)
    if (s->exists[t])
      return 1;
  return 0;
}

static int pick(const struct schema *s)
{
  int t;
  do
    t = (int)below(4);
  while (!s->exists[t]);
  return t;
}

/* One request: a transaction of the workload's kinds. Its commit LSN in
 * *lsn (0: none committed). */
static void one_txn(struct rpc *r, struct schema *s, uint64_t *last)
{
  char q[8192] = "", st[512];
  unsigned kind = below(20);
  struct schema after = *s;
  if (!any_table(s) || kind == 0) {          /* a schema change */
    int t = (int)below(4);
    if (!s->exists[t])
      create(st, sizeof st, &after, t);
    else if (below(3) == 0 && t != 0) {
      snprintf(st, sizeof st, "DROP TABLE t%d;", t);
      after.exists[t] = 0;
    } else if (after.extra[t] < 3) {
      snprintf(st, sizeof st, "ALTER TABLE t%d ADD COLUMN x%d DEFAULT 7;", t, after.extra[t]++);
    } else {
      create(st, sizeof st, &after, t);
      snprintf(st, sizeof st, "DROP TABLE t%d; ", t);
      after.exists[t] = 0;
    }
    snprintf(q, sizeof q, "%s", st);
  } else if (kind < 12) {                    /* autocommit statements */
    stmt(q, sizeof q, s, pick(s));
  } else {                                   /* a transaction over tables */
    int rollback = kind == 12, sp = kind == 13 || kind == 14;
    strcat(q, "BEGIN; ");
    for (int i = 0, m = 1 + (int)below(5); i < m; i++) {
      stmt(st, sizeof st, s, pick(s));
      strcat(q, st);
      if (sp && i == 0)
        strcat(q, " SAVEPOINT sp; ");
    }
    if (sp) {
      stmt(st, sizeof st, s, pick(s));
      strcat(q, st);
      strcat(q, kind == 13 ? " ROLLBACK TO sp; RELEASE sp; " : " RELEASE sp; ");
    }
    strcat(q, rollback ? "ROLLBACK;" : "COMMIT;");
  }
  uint64_t lsn = 0;
  int rc = rpc_sql(r, q, o, sizeof o, 10000, &lsn);
  if (rc == -2)
    fail_msg("no answer to: %s (%s)", q, o);
  if (rc == 0) {
    *s = after;
    if (lsn)
      *last = lsn;
  } else if (strstr(q, "BEGIN")) {
    rpc_sql(r, "ROLLBACK", o, sizeof o, 10000, NULL);   /* a failed statement: not ours */
  }
}

/* A table's rows, each value quoted, ordered, into d. */
static void dump_volume(struct rpc *r, char *d, size_t n)
{
  d[0] = 0;
  assert_int_equal(rpc_sql(r, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name "
                           "NOT LIKE 'sqlite_%' ORDER BY name", o, sizeof o, 10000, NULL), 0);
  char names[4096];
  size_t nl = strlen(o) < sizeof names ? strlen(o) : sizeof names - 1;
  memcpy(names, o, nl);
  names[nl] = 0;
  for (char *t = strtok(names, "\n"); t; t = strtok(NULL, "\n")) {
    char q[1024], cols[800] = "";
    snprintf(q, sizeof q, "SELECT group_concat('quote(\"' || name || '\")', ' || ''|'' || ') "
             "FROM pragma_table_info('%s')", t);
    assert_int_equal(rpc_sql(r, q, o, sizeof o, 10000, NULL), 0);
    size_t cl = strcspn(o, "\n");
    if (cl >= sizeof cols)
      cl = sizeof cols - 1;
    memcpy(cols, o, cl);
    cols[cl] = 0;
    snprintf(q, sizeof q, "SELECT %s FROM \"%s\" ORDER BY 1", cols, t);
    assert_int_equal(rpc_sql(r, q, o, sizeof o, 10000, NULL), 0);
    size_t len = strlen(d);
    len += (size_t)snprintf(d + len, n - len, "== %s\n", t);
    size_t ol = strlen(o);
    if (len + ol < n) {
      memcpy(d + len, o, ol + 1);
    }
  }
}

static void dump_file(sqlite3 *db, char *d, size_t n)
{
  d[0] = 0;
  sqlite3_stmt *st, *c;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = "
                                      "'table' AND name NOT LIKE 'sqlite_%' AND name != '"
                                      BINAPPLY_TABLE "' ORDER BY name", -1, &st, NULL),
                   SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(st, 0);
    char q[1024], cols[800] = "";
    snprintf(q, sizeof q, "SELECT group_concat('quote(\"' || name || '\")', ' || ''|'' || ') "
             "FROM pragma_table_info('%s')", t);
    assert_int_equal(sqlite3_prepare_v2(db, q, -1, &c, NULL), SQLITE_OK);
    if (sqlite3_step(c) == SQLITE_ROW)
      snprintf(cols, sizeof cols, "%s", (const char *)sqlite3_column_text(c, 0));
    sqlite3_finalize(c);
    snprintf(q, sizeof q, "SELECT %s FROM \"%s\" ORDER BY 1", cols, t);
    assert_int_equal(sqlite3_prepare_v2(db, q, -1, &c, NULL), SQLITE_OK);
    size_t len = strlen(d);
    len += (size_t)snprintf(d + len, n - len, "== %s\n", t);
    while (sqlite3_step(c) == SQLITE_ROW && len < n)
      len += (size_t)snprintf(d + len, n - len, "%s\n", (const char *)sqlite3_column_text(c, 0));
    sqlite3_finalize(c);
  }
  sqlite3_finalize(st);
}

/* Apply until the file's position reaches lsn (the stream's durable end
 * follows the commit within a beacon's time, vfs/vtell.c). */
static void apply_to(const char *file, uint64_t lsn, const char *src)
{
  uint64_t pos = 0, ev;
  for (int i = 0; i < 100; i++) {
    if (sh(o, sizeof o, "%s binlog apply --dir %s --into %s%s 2>&1", bin, dir, file, src) != 0)
      fail_msg("binlog apply: %s", o);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(file, &db), SQLITE_OK);
    binapply_position(db, &pos, &ev);
    sqlite3_close(db);
    if (pos >= lsn)
      return;
    usleep(100000);
  }
  fail_msg("binlog apply reached %llu, not the last commit %llu", (unsigned long long)pos,
           (unsigned long long)lsn);
}

static void replicate(const char *mode, const char *addr, const char *src)
{
  const char *e = getenv("AURALOG_TEST_SEED");
  uint64_t seed = e ? strtoull(e, NULL, 10) : 1;
  seed_ = seed * 0x9E3779B97F4A7C15ull + 1;
  struct rpc r;
  char why[256], file[512];
  snprintf(file, sizeof file, "%s/bldiff-%s.db", dir, mode);
  assert_int_equal(rpc_open(&r, addr, 5000, why, sizeof why), 0);
  struct schema s;
  memset(&s, 0, sizeof s);
  uint64_t last = 0;
  for (int p = 0; p < POINTS; p++) {
    for (int i = 0; i < TXNS_PER_POINT; i++)
      one_txn(&r, &s, &last);
    apply_to(file, last, src);
    dump_volume(&r, dump_v, sizeof dump_v);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(file, &db), SQLITE_OK);
    dump_file(db, dump_f, sizeof dump_f);
    sqlite3_close(db);
    if (strcmp(dump_v, dump_f) != 0)
      fail_msg("%s, seed %llu, point %d (lsn %llu): the file differs from the volume\n"
               "volume:\n%.2000s\nfile:\n%.2000s", mode, (unsigned long long)seed, p,
               (unsigned long long)last, dump_v, dump_f);
  }
  printf("# %s: %d points of %d transactions each, the file equal to the volume at each "
         "(last commit %llu)\n", mode, POINTS, TXNS_PER_POINT, (unsigned long long)last);
  rpc_close(&r);
}

/* The cluster's volume main keeps an enhanced binlog (`cluster up
 * --binlog enhanced`). */
static void enhanced_the_file_equals_the_volume(void **state)
{
  (void)state;
  replicate("enhanced", engine, "");
}

/* A second volume, with an engine of its own started by hand as a lab
 * does, keeps a community binlog in a file. */
static void community_the_file_equals_the_volume(void **state)
{
  (void)state;
  char addr[64], file[600], src[700];
  int port = atoi(strrchr(engine, ':') + 1) + 3;
  snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
  snprintf(file, sizeof file, "%s/bldc.binlog", dir);
  if (sh(o, sizeof o, "%s engine --volume bldc --listen %s --coord %s --binlog community "
         "--binlog-file %s > %s/log/engine-bldc.log 2>&1 & echo $!", bin, addr, coord, file,
         dir) != 0)
    fail_msg("engine: %s", o);
  long pid = atol(o);
  int up = 0;
  for (int i = 0; i < 100 && !up; i++) {
    up = sh(o, sizeof o, "%s sql --engine %s 'select 1' 2>&1", bin, addr) == 0;
    if (!up)
      usleep(100000);
  }
  assert_true(up);
  snprintf(src, sizeof src, " --binlog-file %s", file);
  replicate("community", addr, src);
  sh(o, sizeof o, "kill %ld", pid);
}

static int setup(void **state)
{
  (void)state;
  return cluster_start_with("bldiff", " --binlog enhanced");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(enhanced_the_file_equals_the_volume),
    cmocka_unit_test(community_the_file_equals_the_volume),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: the binlog as a logical replica", tests,
                                     setup, teardown);
}
