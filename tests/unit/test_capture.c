/*
 * test_capture.c: the binlog's change capture (vfs/capture.c) and its
 * apply to stock SQLite (vfs/binapply.c), issue 29 step 1.
 *
 * No volume here: a source database of stock SQLite in memory, run as the
 * engine's worker runs a client's SQL (the sandbox's authorizer, then
 * capture_stmt_start/end and capture_settle after every statement), with
 * the commit LSN replaced by a counter its commit hook advances. Every
 * transaction capture hands over is packed as it would go on the wire,
 * unpacked, and applied by binapply to a second database in memory.
 *
 * Checks:
 *   - a seeded random workload (inserts, updates that move rowids and
 *     keys, deletes, INSERT OR REPLACE / OR FAIL / OR IGNORE, upserts,
 *     failing statements, multi-statement and multi-table transactions,
 *     rollbacks, savepoints rolled back to and released, nested, and a
 *     transaction opened by SAVEPOINT; CREATE / DROP TABLE, ADD and DROP
 *     COLUMN, CREATE TABLE AS SELECT, indexes; tables with an INTEGER
 *     PRIMARY KEY, with none, with a TEXT one, WITHOUT ROWID, with
 *     AUTOINCREMENT, with a STORED generated column and a REAL one; a
 *     trigger and a foreign key cascade; blobs, NULLs,
 *     reals, large integers, text with quotes and UTF-8) leaves the two
 *     databases equal, compared in full (schema, every row with its rowid,
 *     every value's type and bytes) every 10 transactions;
 *   - positions increase and events are indexed 0, 1, ...;
 *   - applying a transaction again, or an older one, changes nothing;
 *   - a rolled-back transaction, a ROLLBACK TO, a failed statement (but
 *     the rows ON CONFLICT FAIL keeps), a rolled-back schema change, a
 *     connection closed mid-transaction, a TEMP table and an update that
 *     changes nothing produce no events; the events of one transaction
 *     carry each value's type exactly;
 *   - the cost of capture: N inserts with it off and on (printed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* ---- the tests ------------------------------------------------------------ */

#define SEEDS 6
#define TXNS 400               /* transactions a seed */
#define EVERY 10               /* compared after each EVERY */

static void random_workload_replicates_exactly(void **state)
{
  (void)state;
  size_t total_tx = 0, total_ev = 0;
  for (uint64_t seed = 1; seed <= SEEDS; seed++) {
    struct src s;
    char err[256];
    src_open(&s, 1);
    sqlite3 *rep = binapply_open(":memory:", err, sizeof err);
    assert_non_null(rep);
    uint64_t r = seed;
    size_t applied = 0;
    int made = 0;
    run(&s, schema);
    for (int i = 1; i <= TXNS; i++) {
      transaction(&s, &r, &made);
      if (i % EVERY == 0 || i == TXNS) {
        apply_new(&s, rep, &applied);
        char when[64];
        snprintf(when, sizeof when, "seed %llu, after %d transactions", (unsigned long long)seed, i);
        assert_same(s.db, rep, when);
      }
    }
    struct capture_stats st;
    capture_get_stats(s.cap, &st);
    total_tx += st.txns;
    total_ev += st.events;
    /* Every committed transaction with changes was handed over once: the
     * replica's position is the last. */
    uint64_t lsn, events;
    assert_int_equal(binapply_position(rep, &lsn, &events), 0);
    assert_true(lsn > 0 && lsn <= s.pos);
    print_message("seed %llu: %llu transactions (%llu events) applied, %llu rolled back with "
                  "events, %d tables made\n", (unsigned long long)seed,
                  (unsigned long long)st.txns, (unsigned long long)st.events,
                  (unsigned long long)st.dropped, made);
    assert_true(st.txns > TXNS / 3 && st.dropped > 10);
    sqlite3_close(rep);
    src_close(&s);
  }
  print_message("%d seeds: %zu transactions, %zu events, compared every %d\n", SEEDS, total_tx,
                total_ev, EVERY);
}

/* A1: a transaction applied again, or an older one, changes nothing. */
static void applying_again_changes_nothing(void **state)
{
  (void)state;
  struct src s;
  char err[256];
  src_open(&s, 1);
  sqlite3 *rep = binapply_open(":memory:", err, sizeof err);
  uint64_t r = 99;
  int made = 0;
  size_t applied = 0;
  run(&s, schema);
  for (int i = 0; i < 60; i++)
    transaction(&s, &r, &made);
  apply_new(&s, rep, &applied);
  assert_true(s.ntx > 10);
  char *before = dump(rep);
  uint64_t lsn0, ev0, lsn1, ev1;
  binapply_position(rep, &lsn0, &ev0);
  for (size_t i = 0; i < s.ntx; i++) {
    Auralog__BinlogTxn *t = txn_at(&s, s.ntx - 1 - i);
    assert_int_equal(binapply_txn(rep, t, err, sizeof err), 0);
    auralog__binlog_txn__free_unpacked(t, NULL);
  }
  char *after = dump(rep);
  assert_string_equal(before, after);
  binapply_position(rep, &lsn1, &ev1);
  assert_true(lsn0 == lsn1 && ev0 == ev1);
  sqlite3_free(before);
  sqlite3_free(after);
  sqlite3_close(rep);
  src_close(&s);
}

/* The one transaction handed over since *n, unpacked (NULL: none). */
static Auralog__BinlogTxn *one_new(struct src *s, size_t *n)
{
  Auralog__BinlogTxn *t = NULL;
  if (s->ntx > *n) {
    assert_int_equal(s->ntx, *n + 1);
    t = txn_at(s, *n);
  }
  *n = s->ntx;
  return t;
}

static void assert_int_value(const Auralog__BinlogValue *v, int64_t want)
{
  assert_int_equal(v->type, SQLITE_INTEGER);
  assert_true(v->i == want);
}

/* C1, C2: what SQLite undid, and what changed nothing, has no events. */
static void undone_changes_have_no_events(void **state)
{
  (void)state;
  struct src s;
  size_t n = 0;
  src_open(&s, 1);
  run(&s, "CREATE TABLE t(id INTEGER PRIMARY KEY, u UNIQUE)");
  Auralog__BinlogTxn *t = one_new(&s, &n);
  assert_non_null(t);          /* the CREATE: one DDL event */
  assert_int_equal(t->n_events, 1);
  assert_int_equal(t->events[0]->op, BINLOG_DDL);
  assert_string_equal(t->events[0]->sql, "CREATE TABLE t(id INTEGER PRIMARY KEY, u UNIQUE)");
  auralog__binlog_txn__free_unpacked(t, NULL);

  /* A transaction rolled back. */
  run(&s, "BEGIN; INSERT INTO t VALUES(1, 1); UPDATE t SET u = 2; ROLLBACK");
  assert_null(one_new(&s, &n));
  /* ROLLBACK TO: the changes since the savepoint go, those before stay;
   * a failed statement goes; ON CONFLICT FAIL keeps the rows before the
   * failing one. */
  run(&s, "BEGIN; INSERT INTO t VALUES(1, 10); SAVEPOINT a; INSERT INTO t VALUES(2, 20);"
          "UPDATE t SET u = 11 WHERE id = 1; SAVEPOINT b; DELETE FROM t; ROLLBACK TO a;"
          "INSERT INTO t VALUES(3, 30), (4, 40), (5, 30); INSERT OR FAIL INTO t VALUES"
          "(6, 60), (7, 70), (8, 60); RELEASE a; COMMIT");
  t = one_new(&s, &n);
  assert_non_null(t);
  assert_int_equal(t->n_events, 3);
  int64_t want[] = {1, 6, 7};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(t->events[i]->op, BINLOG_INSERT);
    assert_true(t->events[i]->rowid_table);
    assert_true(t->events[i]->rowid == want[i]);
    assert_int_value(t->events[i]->after[0], want[i]);
  }
  assert_true(t->commit_lsn == s.pos);
  auralog__binlog_txn__free_unpacked(t, NULL);
  /* A schema change rolled back; a TEMP table; an update that changes
   * nothing; a statement that fails in autocommit. */
  run(&s, "BEGIN; CREATE TABLE r(x); INSERT INTO r VALUES(1); ROLLBACK");
  run(&s, "CREATE TEMP TABLE tmp(x); INSERT INTO tmp VALUES(1); DROP TABLE tmp");
  run(&s, "UPDATE t SET u = u");
  run(&s, "INSERT INTO t VALUES(9, 90), (10, 10)");
  run(&s, "SAVEPOINT x; INSERT INTO t VALUES(11, 110); ROLLBACK TO x; RELEASE x");
  assert_null(one_new(&s, &n));
  /* A connection closed mid-transaction. */
  run(&s, "BEGIN; INSERT INTO t VALUES(12, 120)");
  capture_close(s.cap);
  s.cap = NULL;
  assert_int_equal(s.ntx, n);
  src_close(&s);
}

/* Each value's type and bytes, keys, before and after images. */
static void events_carry_rows_exactly(void **state)
{
  (void)state;
  struct src s;
  size_t n = 0;
  src_open(&s, 1);
  run(&s, "CREATE TABLE v(a, b, c, d, e); CREATE TABLE w(k1, k2, x, PRIMARY KEY(k2, k1)) "
          "WITHOUT ROWID");
  n = s.ntx;
  run(&s, "BEGIN; INSERT INTO v VALUES(9223372036854775807, -2.5e-300, 'h\xc3\xa9', X'00ff00', NULL);"
          "UPDATE v SET a = 1.5, e = '' WHERE rowid = 1; INSERT INTO w VALUES(1, 'b', X'');"
          "UPDATE w SET k1 = 2; DELETE FROM v; DELETE FROM w; COMMIT");
  Auralog__BinlogTxn *t = one_new(&s, &n);
  assert_non_null(t);
  assert_int_equal(t->n_events, 6);
  Auralog__BinlogEvent **e = t->events;
  assert_int_equal(e[0]->op, BINLOG_INSERT);
  assert_string_equal(e[0]->table, "v");
  assert_int_equal(e[0]->n_before, 0);
  assert_int_equal(e[0]->n_after, 5);
  assert_int_value(e[0]->after[0], INT64_MAX);
  assert_int_equal(e[0]->after[1]->type, SQLITE_FLOAT);
  assert_true(e[0]->after[1]->r == -2.5e-300);
  assert_int_equal(e[0]->after[2]->type, SQLITE_TEXT);
  assert_int_equal(e[0]->after[2]->b.len, 3);
  assert_memory_equal(e[0]->after[2]->b.data, "h\xc3\xa9", 3);
  assert_int_equal(e[0]->after[3]->type, SQLITE_BLOB);
  assert_memory_equal(e[0]->after[3]->b.data, "\0\xff\0", 3);
  assert_int_equal(e[0]->after[4]->type, 0);
  assert_int_equal(e[1]->op, BINLOG_UPDATE);
  assert_true(e[1]->rowid == 1 && e[1]->new_rowid == 1);
  assert_int_equal(e[1]->n_before, 5);
  assert_int_value(e[1]->before[0], INT64_MAX);
  assert_int_equal(e[1]->after[0]->type, SQLITE_FLOAT);
  assert_true(e[1]->after[0]->r == 1.5);
  assert_int_equal(e[1]->after[4]->type, SQLITE_TEXT);
  assert_int_equal(e[1]->after[4]->b.len, 0);
  assert_false(e[2]->rowid_table);           /* WITHOUT ROWID: the key, in its order */
  assert_int_equal(e[2]->n_key, 2);
  assert_int_equal(e[2]->key[0]->type, SQLITE_TEXT);
  assert_int_value(e[2]->key[1], 1);
  assert_int_equal(e[2]->after[2]->type, SQLITE_BLOB);
  assert_int_equal(e[2]->after[2]->b.len, 0);
  assert_int_equal(e[3]->op, BINLOG_UPDATE); /* the key before the update */
  assert_int_value(e[3]->key[1], 1);
  assert_int_value(e[3]->after[0], 2);
  assert_int_equal(e[4]->op, BINLOG_DELETE);
  assert_int_equal(e[4]->n_after, 0);
  assert_int_equal(e[4]->before[0]->type, SQLITE_FLOAT);
  assert_int_equal(e[5]->op, BINLOG_DELETE);
  assert_int_value(e[5]->key[1], 2);
  auralog__binlog_txn__free_unpacked(t, NULL);
  src_close(&s);
}

/* REAL affinity: an INTEGER stored in a REAL column is REAL in the event,
 * as SELECT shows it. A STORED generated column is left out (the replica
 * computes it); a table with a VIRTUAL one gets a "lost" event, which
 * binapply refuses, saying why (SQLite 3.40's preupdate hook garbles its
 * rows). */
static void generated_and_real_columns(void **state)
{
  (void)state;
  struct src s;
  size_t n = 0;
  char err[256];
  src_open(&s, 1);
  sqlite3 *rep = binapply_open(":memory:", err, sizeof err);
  run(&s, "CREATE TABLE f(a REAL, g AS (a * 2) STORED, b)");
  run(&s, "INSERT INTO f(a, b) VALUES(3, 4)");
  apply_new(&s, rep, &n);
  Auralog__BinlogTxn *t = txn_at(&s, n - 1);
  Auralog__BinlogEvent *e = t->events[0];
  assert_int_equal(e->n_after, 2);
  assert_int_equal(e->after[0]->type, SQLITE_FLOAT);
  assert_true(e->after[0]->r == 3.0);
  assert_int_value(e->after[1], 4);
  auralog__binlog_txn__free_unpacked(t, NULL);
  assert_same(s.db, rep, "a STORED generated column");
  run(&s, "CREATE TABLE v(a, w AS (a + 1) VIRTUAL, b)");
  run(&s, "INSERT INTO v(a, b) VALUES(1, 2)");
  t = txn_at(&s, s.ntx - 1);
  assert_int_equal(t->events[0]->op, BINLOG_LOST);
  assert_non_null(strstr(t->events[0]->sql, "VIRTUAL generated"));
  assert_int_equal(binapply_txn(rep, t, err, sizeof err), -1);
  assert_non_null(strstr(err, "VIRTUAL generated"));
  auralog__binlog_txn__free_unpacked(t, NULL);
  sqlite3_close(rep);
  src_close(&s);
}

static double secs(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The cost: N single-row inserts, as the worker runs them (each prepared
 * from its text), autocommit and in one transaction, capture off and on,
 * the four interleaved, best of ROUNDS; stock SQLite in memory, so that
 * capture's share is as large as it gets. */
static void capture_cost(void **state)
{
  (void)state;
  enum { N = 20000, ROUNDS = 5 };
  double best[2][2] = {{1e9, 1e9}, {1e9, 1e9}};
  size_t bytes = 0;
  for (int round = 0; round < ROUNDS; round++)
    for (int inside = 0; inside < 2; inside++)
      for (int on = 0; on < 2; on++) {
        struct src s;
        src_open(&s, on);
        run(&s, "CREATE TABLE b(id INTEGER PRIMARY KEY, x TEXT, y REAL, z BLOB)");
        if (inside)
          run(&s, "BEGIN");
        double t0 = secs();
        for (int i = 0; i < N; i++)
          runf(&s, "INSERT INTO b(x, y, z) VALUES('row %d', %d.5, X'0102030405060708')", i, i);
        if (inside)
          run(&s, "COMMIT");
        double dt = secs() - t0;
        best[inside][on] = dt < best[inside][on] ? dt : best[inside][on];
        if (inside && on)
          bytes = s.tx[s.ntx - 1].len;
        src_close(&s);
      }
  for (int inside = 0; inside < 2; inside++)
    print_message("%-10s: %d inserts, capture off %.1f ms, on %.1f ms: +%.2f us an insert "
                  "(+%.0f%%; best of %d)\n", inside ? "one txn" : "autocommit", N,
                  best[inside][0] * 1e3, best[inside][1] * 1e3,
                  (best[inside][1] - best[inside][0]) * 1e6 / N,
                  100 * (best[inside][1] / best[inside][0] - 1), ROUNDS);
  print_message("the one transaction packed: %zu bytes, %.1f an event\n", bytes,
                (double)bytes / N);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(undone_changes_have_no_events),
    cmocka_unit_test(events_carry_rows_exactly),
    cmocka_unit_test(generated_and_real_columns),
    cmocka_unit_test(applying_again_changes_nothing),
    cmocka_unit_test(random_workload_replicates_exactly),
    cmocka_unit_test(capture_cost),
  };
  return cmocka_run_group_tests_name("unit: binlog capture", tests, NULL, NULL);
}
