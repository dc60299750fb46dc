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
 *   - REAL columns' integers come as REAL, STORED generated columns are
 *     left out, a table with VIRTUAL ones gets a "lost" event binapply
 *     refuses; an FTS5 table replicates through its shadow tables;
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

#include "capture_util.h"

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

/* `binlog apply` takes a batch in one SQLite transaction (binapply_txns):
 * the file ends as one applied one by one would; those at or below its
 * position change nothing; one that does not fit is rolled back alone,
 * the ones before it stay with the position at the last of them. */
static void a_batch_applies_as_one_by_one(void **state)
{
  (void)state;
  struct src s;
  char err[256];
  src_open(&s, 1);
  sqlite3 *one = binapply_open(":memory:", err, sizeof err),
          *batch = binapply_open(":memory:", err, sizeof err);
  uint64_t r = 7;
  int made = 0;
  size_t n1 = 0;
  run(&s, schema);
  for (int i = 0; i < 80; i++)
    transaction(&s, &r, &made);
  apply_new(&s, one, &n1);
  Auralog__BinlogTxn **t = calloc(s.ntx, sizeof *t);
  for (size_t i = 0; i < s.ntx; i++)
    t[i] = txn_at(&s, i);
  size_t done = 0, half = s.ntx / 2;
  assert_int_equal(binapply_txns(batch, t, half, &done, err, sizeof err), (int)half);
  assert_int_equal(done, half);
  /* The whole batch again: the first half is there already. */
  assert_int_equal(binapply_txns(batch, t, s.ntx, &done, err, sizeof err),
                   (int)(s.ntx - half));
  assert_int_equal(done, s.ntx);
  assert_same(one, batch, "a batch");
  uint64_t l1, e1, l2, e2;
  binapply_position(one, &l1, &e1);
  binapply_position(batch, &l2, &e2);
  assert_true(l1 == l2 && e1 == e2);
  /* One that does not fit (an update of a row the file lacks: the
   * transaction that inserted it is left out): the two before it commit,
   * it does not. */
  run(&s, "CREATE TABLE z(a)");
  run(&s, "INSERT INTO z VALUES(1)");
  run(&s, "INSERT INTO z VALUES(2)");
  run(&s, "UPDATE z SET a = 9 WHERE a = 2");
  Auralog__BinlogTxn *z[4];
  for (int i = 0; i < 4; i++)
    z[i] = txn_at(&s, s.ntx - 4 + (size_t)i);
  Auralog__BinlogTxn *bad[3] = {z[0], z[1], z[3]};
  assert_int_equal(binapply_txns(batch, bad, 3, &done, err, sizeof err), -1);
  assert_int_equal(done, 2);
  binapply_position(batch, &l2, &e2);
  assert_true(l2 == z[1]->commit_lsn);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(batch, "SELECT count(*) FROM z", -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(q, 0), 1);
  sqlite3_finalize(q);
  for (int i = 0; i < 4; i++)
    auralog__binlog_txn__free_unpacked(z[i], NULL);
  for (size_t i = 0; i < s.ntx - 4; i++)
    auralog__binlog_txn__free_unpacked(t[i], NULL);
  free(t);
  sqlite3_close(one);
  sqlite3_close(batch);
  src_close(&s);
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
  run(&s, "BEGIN; INSERT INTO v VALUES(9223372036854775807, -0.375, 'h\xc3\xa9', X'00ff00', NULL);"
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
  assert_true(e[0]->after[1]->r == -0.375);
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
 * rows). An FTS5 table replicates through its shadow tables. */
static void generated_real_and_virtual_tables(void **state)
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
  run(&s, "DROP TABLE v");
  n = s.ntx;
  /* A virtual table replicates through its shadow tables; what CREATE
   * VIRTUAL TABLE put in them, its replay puts. */
  run(&s, "CREATE VIRTUAL TABLE x USING fts5(body)");
  run(&s, "BEGIN; INSERT INTO x VALUES('hello world'), ('hello binlog'); "
          "DELETE FROM x WHERE body = 'hello world'; COMMIT");
  apply_new(&s, rep, &n);
  assert_same(s.db, rep, "an FTS5 table");
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(rep, "SELECT body FROM x WHERE x MATCH 'hello'", -1, &q,
                                      NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(q, 0), "hello binlog");
  assert_int_equal(sqlite3_step(q), SQLITE_DONE);
  sqlite3_finalize(q);
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
    cmocka_unit_test(generated_real_and_virtual_tables),
    cmocka_unit_test(applying_again_changes_nothing),
    cmocka_unit_test(a_batch_applies_as_one_by_one),
    cmocka_unit_test(random_workload_replicates_exactly),
    cmocka_unit_test(capture_cost),
  };
  return cmocka_run_group_tests_name("unit: binlog capture", tests, NULL, NULL);
}
