/*
 * capture_util.h: what test_capture.c runs on: a source database of stock
 * SQLite in memory run as the engine's worker runs a client's SQL, with
 * change capture on and a counter for commit LSNs (struct src, run); an
 * exact comparison of two databases (dump, assert_same); and the seeded
 * random workload (schema, transaction).
 */
#ifndef AURALOG_TEST_CAPTURE_UTIL_H
#define AURALOG_TEST_CAPTURE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rng.h"
#include "vfs/binapply.h"
#include "vfs/capture.h"
#include "vfs/ddl.h"
#include "vfs/sandbox.h"

/* ---- the source: SQL run as the engine's worker runs it ------------------ */

struct packed {
  uint8_t *buf;
  size_t len;
};

struct src {
  sqlite3 *db;
  struct capture *cap;
  int committed;             /* the commit hook fired in this statement */
  uint64_t pos;              /* the commit counter: the test's LSNs */
  struct packed *tx;         /* every transaction handed over, packed */
  size_t ntx, captx;
};

static int on_commit(void *arg)
{
  ((struct src *)arg)->committed = 1;
  return 0;
}

static void sink(void *arg, const Auralog__BinlogTxn *t)
{
  struct src *s = arg;
  /* C1: each at a new, higher position, its events indexed in order. */
  assert_true(t->commit_lsn == s->pos);
  assert_true(s->ntx == 0 || t->commit_lsn > 0);
  for (size_t i = 0; i < t->n_events; i++)
    assert_int_equal(t->events[i]->index, i);
  if (s->ntx == s->captx) {
    s->captx = s->captx ? 2 * s->captx : 64;
    s->tx = realloc(s->tx, s->captx * sizeof *s->tx);
  }
  size_t len = auralog__binlog_txn__get_packed_size(t);
  s->tx[s->ntx].buf = malloc(len + 1);
  s->tx[s->ntx].len = auralog__binlog_txn__pack(t, s->tx[s->ntx].buf);
  s->ntx++;
}

static void src_open(struct src *s, int capture)
{
  memset(s, 0, sizeof *s);
  assert_int_equal(sqlite3_open(":memory:", &s->db), SQLITE_OK);
  assert_int_equal(sandbox_apply(s->db), SQLITE_OK);
  sqlite3_commit_hook(s->db, on_commit, s);
  if (capture)
    assert_non_null(s->cap = capture_open(s->db, sink, s));
}

static void src_close(struct src *s)
{
  capture_close(s->cap);
  sqlite3_close(s->db);
  for (size_t i = 0; i < s->ntx; i++)
    free(s->tx[i].buf);
  free(s->tx);
}

/* Run every statement of sql as worker.c's run_sql does (the commit's
 * position: the counter, when the commit hook fired); returns how many
 * failed (it goes on past them, as a transaction in a client does). */
static int run(struct src *s, const char *sql)
{
  const char *tail = sql;
  int failed = 0;
  while (tail && *tail) {
    sqlite3_stmt *st = NULL;
    if (sandbox_prepare(s->db, tail, &st, &tail) != SQLITE_OK)
      return failed + 1;       /* no such table, ...: the rest goes too */
    if (st == NULL)
      continue;
    s->committed = 0;
    capture_stmt_start(s->cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
      ;
    capture_stmt_end(s->cap, st, rc);
    ddl_stmt_end(NULL, sqlite3_sql(st), rc == SQLITE_DONE);
    sqlite3_finalize(st);
    uint64_t pos = s->committed ? ++s->pos : 0;
    capture_settle(s->cap, pos, sqlite3_get_autocommit(s->db));
    failed += rc != SQLITE_DONE;
  }
  return failed;
}

static void runf(struct src *s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  run(s, sql);
  sqlite3_free(sql);
}

static Auralog__BinlogTxn *txn_at(struct src *s, size_t i)
{
  Auralog__BinlogTxn *t = auralog__binlog_txn__unpack(NULL, s->tx[i].len, s->tx[i].buf);
  assert_non_null(t);
  return t;
}

/* Apply transactions [from, s->ntx) to db; each must apply (1). */
static void apply_new(struct src *s, sqlite3 *db, size_t *from)
{
  char err[512];
  for (; *from < s->ntx; (*from)++) {
    Auralog__BinlogTxn *t = txn_at(s, *from);
    int rc = binapply_txn(db, t, err, sizeof err);
    if (rc != 1)
      fail_msg("transaction %zu (position %llu): %d: %s", *from,
               (unsigned long long)t->commit_lsn, rc, err);
    auralog__binlog_txn__free_unpacked(t, NULL);
  }
}

/* ---- comparing two databases exactly ----------------------------------- */

static void dump_value(sqlite3_str *o, sqlite3_stmt *q, int i)
{
  switch (sqlite3_column_type(q, i)) {
  case SQLITE_INTEGER:
    sqlite3_str_appendf(o, " i%lld", sqlite3_column_int64(q, i));
    break;
  case SQLITE_FLOAT: {
    double d = sqlite3_column_double(q, i);
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    sqlite3_str_appendf(o, " r%016llx", (unsigned long long)bits);
    break;
  }
  case SQLITE_TEXT:
  case SQLITE_BLOB: {
    int t = sqlite3_column_type(q, i);
    const unsigned char *p = t == SQLITE_TEXT ? sqlite3_column_text(q, i) : sqlite3_column_blob(q, i);
    int n = sqlite3_column_bytes(q, i);
    sqlite3_str_appendf(o, " %c%d:", t == SQLITE_TEXT ? 't' : 'b', n);
    for (int k = 0; k < n; k++)
      sqlite3_str_appendf(o, "%02x", p[k]);
    break;
  }
  default:
    sqlite3_str_appendall(o, " n");
  }
}

/* The whole database as text: its schema (but the binlog's position
 * table), then every table's rows in key order, with rowids. */
static char *dump(sqlite3 *db)
{
  sqlite3_str *o = sqlite3_str_new(db);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql, (SELECT wr FROM "
                                      "pragma_table_list(m.name) WHERE schema = 'main') FROM sqlite_schema "
                                      "AS m WHERE name <> '" BINAPPLY_TABLE "' ORDER BY name",
                                      -1, &q, NULL), SQLITE_OK);
  char **tabs = NULL;
  int *wr = NULL, nt = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    for (int i = 0; i < 4; i++)
      sqlite3_str_appendf(o, "%s|", (const char *)sqlite3_column_text(q, i));
    sqlite3_str_appendall(o, "\n");
    /* sqlite_sequence is SQLite's, not captured: the replica's counter
     * follows the rowids it inserts, and is ahead of the source's where
     * a statement failing ON CONFLICT FAIL kept rows (SQLite advances it
     * only when a statement completes). */
    if (strcmp((const char *)sqlite3_column_text(q, 0), "table") == 0 &&
        strcmp((const char *)sqlite3_column_text(q, 1), "sqlite_sequence") != 0) {
      tabs = realloc(tabs, (size_t)(nt + 1) * sizeof *tabs);
      wr = realloc(wr, (size_t)(nt + 1) * sizeof *wr);
      tabs[nt] = strdup((const char *)sqlite3_column_text(q, 1));
      wr[nt++] = sqlite3_column_int(q, 4);
    }
  }
  sqlite3_finalize(q);
  for (int t = 0; t < nt; t++) {
    sqlite3_stmt *r;
    char *sql = sqlite3_mprintf("SELECT %s* FROM \"%w\"", wr[t] ? "" : "_rowid_, ", tabs[t]);
    if (sqlite3_prepare_v2(db, sql, -1, &r, NULL) != SQLITE_OK)
      fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    /* In key order: the rowid, or every column (a WITHOUT ROWID key's). */
    int ncol = sqlite3_column_count(r);
    sqlite3_finalize(r);
    sqlite3_str *ob = sqlite3_str_new(db);
    sqlite3_str_appendf(ob, "%s ORDER BY 1", sql);
    for (int i = 2; wr[t] && i <= ncol; i++)
      sqlite3_str_appendf(ob, ", %d", i);
    sqlite3_free(sql);
    sql = sqlite3_str_finish(ob);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &r, NULL), SQLITE_OK);
    sqlite3_str_appendf(o, "table %s\n", tabs[t]);
    while (sqlite3_step(r) == SQLITE_ROW) {
      for (int i = 0; i < sqlite3_column_count(r); i++)
        dump_value(o, r, i);
      sqlite3_str_appendall(o, "\n");
    }
    sqlite3_finalize(r);
    sqlite3_free(sql);
    free(tabs[t]);
  }
  free(tabs);
  free(wr);
  return sqlite3_str_finish(o);
}

static void assert_same(sqlite3 *a, sqlite3 *b, const char *when)
{
  char *x = dump(a), *y = dump(b);
  if (strcmp(x, y) != 0) {
    size_t i = 0;
    while (x[i] && x[i] == y[i])
      i++;
    size_t from = i > 200 ? i - 200 : 0;
    fail_msg("%s: the replica differs at byte %zu:\nsource:  ...%.400s\nreplica: ...%.400s",
             when, i, x + from, y + from);
  }
  sqlite3_free(x);
  sqlite3_free(y);
}


/* ---- the random workload ------------------------------------------------- */

/* The fixed tables: every kind of key, a trigger, a cascade. */
static const char *const schema =
  "PRAGMA foreign_keys = ON;"
  "CREATE TABLE t_ipk(id INTEGER PRIMARY KEY, a, b REAL, c TEXT UNIQUE);"
  "CREATE TABLE t_rowid(a, b, c);"
  "CREATE TABLE t_pk(k TEXT PRIMARY KEY, v, w);"
  "CREATE TABLE t_wr(k1 INTEGER, k2 TEXT, v, PRIMARY KEY(k1, k2)) WITHOUT ROWID;"
  "CREATE TABLE t_auto(id INTEGER PRIMARY KEY AUTOINCREMENT, x);"
  "CREATE TABLE t_log(what, id);"
  "CREATE TRIGGER t_ipk_log AFTER INSERT ON t_ipk BEGIN "
  "  INSERT INTO t_log VALUES('ipk', new.id); END;"
  "CREATE TABLE t_gen(a, g AS (coalesce(a, 0) || 'g') STORED, c REAL);"
  "CREATE TABLE t_parent(id INTEGER PRIMARY KEY, x);"
  "CREATE TABLE t_child(id INTEGER PRIMARY KEY, p REFERENCES t_parent(id) ON DELETE CASCADE, y);";

static const char *const fixed[] = {"t_ipk", "t_rowid", "t_pk", "t_wr", "t_auto", "t_parent",
                                    "t_child", "t_gen"};

/* A random SQL literal: every storage class, the awkward ones often. */
static void lit(sqlite3_str *o, uint64_t *r)
{
  static const char *const texts[] = {"", "a", "it's", "h\xc3\xa9llo", "\xe2\x82\xac 5",
                                      "two\nlines", "O'Neil \"q\""};
  switch (rng_below(r, 10)) {
  case 0: sqlite3_str_appendall(o, "NULL"); break;
  case 1: sqlite3_str_appendf(o, "%lld", (long long)(rng_next(r) >> 1) * (rng_below(r, 2) ? 1 : -1)); break;
  case 2: case 3: sqlite3_str_appendf(o, "%d", (int)rng_below(r, 40)); break;
  case 4: sqlite3_str_appendf(o, "%.17g", (double)(int64_t)rng_next(r) / 7.0e9); break;
  case 5: sqlite3_str_appendall(o, rng_below(r, 2) ? "0.5" : "-0.0"); break;
  case 6: case 7: {
    const char *t = texts[rng_below(r, sizeof texts / sizeof *texts)];
    sqlite3_str_appendf(o, "%Q", rng_below(r, 3) ? t : "");
    if (rng_below(r, 2))
      sqlite3_str_appendf(o, " || '%d'", (int)rng_below(r, 40));
    break;
  }
  default: {
    int n = (int)rng_below(r, 9);
    sqlite3_str_appendall(o, "X'");
    for (int i = 0; i < n; i++)
      sqlite3_str_appendf(o, "%02x", (unsigned)rng_below(r, 256));
    sqlite3_str_appendall(o, "'");
  }
  }
}

/* A key that often hits a row already there. */
static int key(uint64_t *r)
{
  return (int)rng_below(r, 30);
}

/* One data statement on a fixed table, or on a table the workload made
 * (dyn_N: columns a, b and those added). */
static void dml(struct src *s, uint64_t *r)
{
  sqlite3_str *o = sqlite3_str_new(s->db);
  const char *t = fixed[rng_below(r, sizeof fixed / sizeof *fixed)];
  int k = key(r);
  const char *orx[] = {"", "", "OR REPLACE ", "OR FAIL ", "OR IGNORE ", "OR ROLLBACK "};
  switch (rng_below(r, 12)) {
  case 0: case 1: case 2: {     /* insert, several rows at times */
    int rows = 1 + (int)rng_below(r, 3) * (int)rng_below(r, 2);
    sqlite3_str_appendf(o, "INSERT %sINTO %s%s VALUES", orx[rng_below(r, 6)], t,
                        strcmp(t, "t_gen") == 0 ? "(a, c)" : "");
    for (int i = 0; i < rows; i++) {
      sqlite3_str_appendall(o, i ? ",(" : "(");
      if (strcmp(t, "t_ipk") == 0 || strcmp(t, "t_auto") == 0 || strcmp(t, "t_parent") == 0 ||
          strcmp(t, "t_child") == 0)
        rng_below(r, 4) ? sqlite3_str_appendf(o, "%d", key(r)) : sqlite3_str_appendall(o, "NULL");
      else if (strcmp(t, "t_pk") == 0)
        sqlite3_str_appendf(o, "'k%d'", key(r));
      else if (strcmp(t, "t_wr") == 0)
        sqlite3_str_appendf(o, "%d, 'w%d'", key(r) % 6, key(r) % 5);
      else
        lit(o, r);
      int more = strcmp(t, "t_ipk") == 0 || strcmp(t, "t_rowid") == 0 ? 3
               : strcmp(t, "t_auto") == 0 || strcmp(t, "t_parent") == 0 ||
                 strcmp(t, "t_gen") == 0 ? 1 : 2;
      for (int c = 0; c < more; c++) {
        sqlite3_str_appendall(o, ", ");
        if (strcmp(t, "t_child") == 0 && c == 0)
          sqlite3_str_appendf(o, "(SELECT max(id) FROM t_parent)");
        else if (strcmp(t, "t_ipk") == 0 && c == 2)
          sqlite3_str_appendf(o, "'c%d'", key(r));   /* UNIQUE: collisions */
        else
          lit(o, r);
      }
      sqlite3_str_appendall(o, ")");
    }
    break;
  }
  case 3:                       /* an upsert */
    sqlite3_str_appendf(o, "INSERT INTO t_pk VALUES('k%d', ", k);
    lit(o, r);
    sqlite3_str_appendall(o, ", 1) ON CONFLICT(k) DO UPDATE SET w = w + 1, v = excluded.v");
    break;
  case 4: case 5:               /* update some rows */
    sqlite3_str_appendf(o, "UPDATE %s%s SET %s = ", rng_below(r, 4) ? "" : "OR REPLACE ", t,
                        strcmp(t, "t_wr") == 0 ? "v" : strcmp(t, "t_pk") == 0 ? "v"
                        : strcmp(t, "t_auto") == 0 || strcmp(t, "t_parent") == 0 ? "x"
                        : strcmp(t, "t_child") == 0 ? "y" : "a");
    lit(o, r);
    sqlite3_str_appendf(o, " WHERE %s %% 7 = %d", strcmp(t, "t_wr") == 0 ? "k1"
                        : strcmp(t, "t_pk") == 0 ? "length(k)" : "_rowid_", k % 7);
    break;
  case 6:                       /* move keys: rowids, the PRIMARY KEY */
    if (strcmp(t, "t_wr") == 0)
      sqlite3_str_appendf(o, "UPDATE t_wr SET k2 = 'w%d' WHERE k1 = %d", key(r) % 5, k % 6);
    else if (strcmp(t, "t_pk") == 0)
      sqlite3_str_appendf(o, "UPDATE t_pk SET k = 'k%d' WHERE k = 'k%d'", key(r), k);
    else
      sqlite3_str_appendf(o, "UPDATE %s%s SET _rowid_ = _rowid_ + %d WHERE _rowid_ = %d",
                          rng_below(r, 3) ? "" : "OR REPLACE ", t, (int)rng_below(r, 5) + 4, k);
    break;
  case 7:                       /* an update that changes nothing */
    sqlite3_str_appendf(o, "UPDATE %s SET %s = %s", t, strcmp(t, "t_wr") == 0 ? "v" : "_rowid_",
                        strcmp(t, "t_wr") == 0 ? "v" : "_rowid_");
    break;
  case 8: case 9:               /* delete some rows (a parent's cascade) */
    sqlite3_str_appendf(o, "DELETE FROM %s WHERE %s %% 5 = %d", t,
                        strcmp(t, "t_wr") == 0 ? "k1" : strcmp(t, "t_pk") == 0 ? "length(v)"
                        : "_rowid_", k % 5);
    break;
  default: {                    /* a table the workload made */
    sqlite3_stmt *q;
    sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_schema WHERE name LIKE 'dyn%' AND "
                       "type = 'table' ORDER BY name LIMIT 1 OFFSET ?", -1, &q, NULL);
    sqlite3_bind_int(q, 1, (int)rng_below(r, 4));
    if (sqlite3_step(q) == SQLITE_ROW) {
      const char *d = (const char *)sqlite3_column_text(q, 0);
      int op = (int)rng_below(r, 3);
      if (op == 0) {
        sqlite3_str_appendf(o, "INSERT OR IGNORE INTO %s(a, b) VALUES(%d, ", d, key(r));
        lit(o, r);
        sqlite3_str_appendall(o, ")");
      } else if (op == 1) {
        sqlite3_str_appendf(o, "UPDATE %s SET b = ", d);
        lit(o, r);
        sqlite3_str_appendf(o, " WHERE a %% 3 = %d", k % 3);
      } else {
        sqlite3_str_appendf(o, "DELETE FROM %s WHERE a %% 4 = %d", d, k % 4);
      }
    }
    sqlite3_finalize(q);
  }
  }
  char *sql = sqlite3_str_finish(o);
  if (sql)
    run(s, sql);
  sqlite3_free(sql);
}

/* One schema change: a table of each kind made, grown, shrunk, dropped. */
static void ddl(struct src *s, uint64_t *r, int *made)
{
  int n = (int)rng_below(r, *made + 1);
  switch (rng_below(r, 7)) {
  case 0:
    runf(s, "CREATE TABLE dyn%d(a INTEGER PRIMARY KEY, b)", (*made)++);
    break;
  case 1:
    runf(s, "CREATE TABLE dyn%d(a INT, b, PRIMARY KEY(a)) WITHOUT ROWID", (*made)++);
    break;
  case 2:
    runf(s, "CREATE TABLE dyn%d AS SELECT id AS a, a AS b, c FROM t_ipk", (*made)++);
    break;
  case 3:
    runf(s, "ALTER TABLE dyn%d ADD COLUMN c%d DEFAULT %d", n, (int)rng_below(r, 1000),
         (int)rng_below(r, 9));
    break;
  case 4:
    runf(s, "ALTER TABLE dyn%d DROP COLUMN c", n);
    break;
  case 5:
    runf(s, "CREATE INDEX IF NOT EXISTS dyn%d_b ON dyn%d(b)", n, n);
    break;
  default:
    runf(s, "DROP TABLE dyn%d", n);
  }
}

static void stmt(struct src *s, uint64_t *r, int *made)
{
  if (rng_below(r, 12) == 0)
    ddl(s, r, made);
  else
    dml(s, r);
}

/* One transaction of a random shape. */
static void transaction(struct src *s, uint64_t *r, int *made)
{
  int k = 1 + (int)rng_below(r, 5);
  switch (rng_below(r, 10)) {
  case 0: case 1: case 2:      /* autocommit */
    stmt(s, r, made);
    break;
  case 3: case 4:              /* several statements, committed */
  case 5:                      /* ... rolled back */
    run(s, "BEGIN");
    for (int i = 0; i < k; i++)
      stmt(s, r, made);
    run(s, rng_below(r, 10) < 7 ? "COMMIT" : "ROLLBACK");
    break;
  case 6: case 7: case 8:      /* savepoints, nested, rolled back to, released */
    run(s, "BEGIN");
    stmt(s, r, made);
    run(s, "SAVEPOINT a");
    for (int i = 0; i < k; i++)
      stmt(s, r, made);
    if (rng_below(r, 2)) {
      run(s, "SAVEPOINT \"B\"");
      stmt(s, r, made);
      run(s, rng_below(r, 2) ? "ROLLBACK TO b" : "RELEASE b");
      stmt(s, r, made);
    }
    run(s, rng_below(r, 2) ? "ROLLBACK TO SAVEPOINT a" : "RELEASE a");
    stmt(s, r, made);
    run(s, rng_below(r, 8) ? "COMMIT" : "ROLLBACK");
    break;
  default:                     /* a transaction SAVEPOINT opens */
    run(s, "SAVEPOINT outer");
    stmt(s, r, made);
    if (rng_below(r, 2))
      run(s, "ROLLBACK TO outer");
    stmt(s, r, made);
    run(s, "RELEASE outer");
  }
  /* A statement that failed in autocommit, or OR ROLLBACK, may have
   * ended the transaction; one still open is not left to the next. */
  if (!sqlite3_get_autocommit(s->db))
    run(s, "ROLLBACK");
}

#endif
