/*
 * binapply.c: apply binlog transactions to a stock SQLite file
 * (binapply.h), as a consumer of the binlog does (`auralog binlog apply`,
 * a later step of issue 29; the unit test test_capture.c now).
 *
 * One BinlogTxn is one SQLite transaction on the file: its events in
 * index order, then the file's position, then COMMIT; an error rolls all
 * of it back. The position (the commit LSN and event count of the last
 * transaction applied) lives in the file itself, in the one row of
 * _auralog_binlog, so it commits with the rows it stands for: a consumer
 * that stops anywhere, even mid-transaction, resumes from the file alone,
 * and handing it a transaction again is a no-op (A1 below). MySQL's
 * replicas keep their position in a table for the same reason
 * (relay_log_info_repository=TABLE, crash-safe replication).
 *
 * Events: an insert carries the whole row (and a rowid table's rowid, so
 * the file's rowids are the source's); an update sets every column (and
 * the rowid) of the row its key names; a delete removes that row. The key
 * is the rowid, or a WITHOUT ROWID table's PRIMARY KEY. An update or
 * delete must find exactly one row and an insert must not collide: if not,
 * the file is not the source as of the previous transaction, and the
 * transaction is refused rather than applied half-right. A DDL event runs
 * its statement. Triggers are off: the events already hold every row the
 * source's triggers changed (and foreign key cascades, with foreign keys
 * off here), so running them again would apply those twice.
 *
 * Columns are matched by position, as the source's rows were: the file's
 * schema is the source's, since its DDL came through the same binlog (a
 * table created before the binlog started must be created alike).
 *
 * Invariants:
 *   A1. A transaction whose commit LSN is at or below the file's position
 *       changes nothing; one above it is applied whole and moves the
 *       position to it in the same SQLite transaction, or not at all.
 *   A2. Events are applied in index order; a transaction whose indexes
 *       are not 0, 1, ... is refused.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vfs/binapply.h"
#include "vfs/capture.h"

static void seterr(char *err, size_t n, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t n, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (err && n)
    vsnprintf(err, n, fmt, ap);
  va_end(ap);
}

int binapply_init(sqlite3 *db, char *err, size_t n)
{
  char *e = NULL;
  int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, (int *)0);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db, "PRAGMA foreign_keys=OFF; CREATE TABLE IF NOT EXISTS "
                      BINAPPLY_TABLE "(id INTEGER PRIMARY KEY CHECK (id = 1), "
                      "commit_lsn INTEGER NOT NULL, events INTEGER NOT NULL, "
                      "wall_ms INTEGER NOT NULL)", NULL, NULL, &e);
  if (rc != SQLITE_OK)
    seterr(err, n, "cannot prepare the file for the binlog: %s", e ? e : sqlite3_errmsg(db));
  sqlite3_free(e);
  return rc;
}

sqlite3 *binapply_open(const char *path, char *err, size_t n)
{
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
    seterr(err, n, "cannot open %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return NULL;
  }
  if (binapply_init(db, err, n) != SQLITE_OK) {
    sqlite3_close(db);
    return NULL;
  }
  return db;
}

int binapply_position(sqlite3 *db, uint64_t *lsn, uint64_t *events)
{
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(db, "SELECT commit_lsn, events FROM " BINAPPLY_TABLE " WHERE id = 1",
                         -1, &q, NULL) != SQLITE_OK)
    return -1;
  int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
    *lsn = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(q, 0) : 0;
    *events = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(q, 1) : 0;
  }
  sqlite3_finalize(q);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* ---- the file's tables ------------------------------------------------------ */

/* A table's shape, and its statements, for one transaction. */
struct shape {
  char *name;
  int ncol;
  char **col;
  int wr;                    /* WITHOUT ROWID */
  int npk, *pk;              /* its PRIMARY KEY's columns, in its order */
  const char *rowid;         /* how to name its rowid: "rowid", "oid" or "_rowid_" */
  sqlite3_stmt *st[4];       /* by op: insert, update, delete */
};

struct tables {
  struct shape *s;
  size_t n;
};

static void tables_clear(struct tables *t)
{
  for (size_t i = 0; i < t->n; i++) {
    struct shape *s = &t->s[i];
    for (int k = 0; k < s->ncol; k++)
      free(s->col[k]);
    free(s->col);
    free(s->pk);
    free(s->name);
    for (int k = 0; k < 4; k++)
      sqlite3_finalize(s->st[k]);
  }
  free(t->s);
  t->s = NULL;
  t->n = 0;
}

static struct shape *shape_of(sqlite3 *db, struct tables *t, const char *name, char *err, size_t n)
{
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->s[i].name, name) == 0)
      return &t->s[i];
  struct shape s = {0};
  sqlite3_stmt *q = NULL;
  int rc = sqlite3_prepare_v2(db, "SELECT name, pk, (SELECT wr FROM pragma_table_list(?1) WHERE "
                              "schema = 'main') FROM pragma_table_info(?1, 'main') ORDER BY cid",
                              -1, &q, NULL);
  if (rc == SQLITE_OK)
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
  while (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
    s.col = realloc(s.col, (size_t)(s.ncol + 1) * sizeof *s.col);
    s.pk = realloc(s.pk, (size_t)(s.ncol + 1) * sizeof *s.pk);
    s.col[s.ncol] = strdup((const char *)sqlite3_column_text(q, 0));
    s.pk[s.ncol] = sqlite3_column_int(q, 1);   /* its place in the key, 0: none */
    s.wr = sqlite3_column_int(q, 2);
    s.ncol++;
  }
  sqlite3_finalize(q);
  if (s.ncol == 0) {
    seterr(err, n, "the file has no table %s", name);
    free(s.col);
    free(s.pk);
    return NULL;
  }
  /* pk[] from "place of column i" to "column at place k". */
  int *by = calloc((size_t)s.ncol, sizeof *by);
  for (int i = 0; i < s.ncol; i++)
    if (s.pk[i] > 0 && s.pk[i] <= s.ncol) {
      by[s.pk[i] - 1] = i;
      s.npk = s.pk[i] > s.npk ? s.pk[i] : s.npk;
    }
  free(s.pk);
  s.pk = by;
  static const char *const alias[] = {"rowid", "oid", "_rowid_"};
  for (int a = 0; a < 3 && s.rowid == NULL; a++) {
    int taken = 0;
    for (int i = 0; i < s.ncol; i++)
      taken |= sqlite3_stricmp(s.col[i], alias[a]) == 0;
    s.rowid = taken ? NULL : alias[a];
  }
  s.name = strdup(name);
  t->s = realloc(t->s, (t->n + 1) * sizeof *t->s);
  t->s[t->n] = s;
  return &t->s[t->n++];
}

/* The statement for op on s (made once a transaction): its parameters
 * are, in order, the row's values and then the key. */
static sqlite3_stmt *stmt_for(sqlite3 *db, struct shape *s, int op, int rowid_table,
                              char *err, size_t n)
{
  if (s->st[op])
    return s->st[op];
  if (rowid_table && (s->wr || s->rowid == NULL)) {
    seterr(err, n, "table %s: the event names a rowid, the file's table has %s", s->name,
           s->wr ? "none (WITHOUT ROWID)" : "columns hiding every name of it");
    return NULL;
  }
  if (!rowid_table && !s->wr) {
    seterr(err, n, "table %s: the event is of a WITHOUT ROWID table, the file's is not",
           s->name);
    return NULL;
  }
  sqlite3_str *q = sqlite3_str_new(db);
  if (op == BINLOG_INSERT) {
    sqlite3_str_appendf(q, "INSERT INTO main.\"%w\"(", s->name);
    for (int i = 0; i < s->ncol; i++)
      sqlite3_str_appendf(q, "%s\"%w\"", i ? "," : "", s->col[i]);
    if (rowid_table)
      sqlite3_str_appendf(q, ",%s", s->rowid);
    sqlite3_str_appendall(q, ") VALUES(");
    for (int i = 0; i < s->ncol + rowid_table; i++)
      sqlite3_str_appendall(q, i ? ",?" : "?");
    sqlite3_str_appendall(q, ")");
  } else {
    if (op == BINLOG_UPDATE) {
      sqlite3_str_appendf(q, "UPDATE main.\"%w\" SET ", s->name);
      for (int i = 0; i < s->ncol; i++)
        sqlite3_str_appendf(q, "%s\"%w\"=?", i ? "," : "", s->col[i]);
      if (rowid_table)
        sqlite3_str_appendf(q, ",%s=?", s->rowid);
    } else {
      sqlite3_str_appendf(q, "DELETE FROM main.\"%w\"", s->name);
    }
    if (rowid_table) {
      sqlite3_str_appendf(q, " WHERE %s=?", s->rowid);
    } else {
      for (int k = 0; k < s->npk; k++)
        sqlite3_str_appendf(q, "%s\"%w\"=?", k ? " AND " : " WHERE ", s->col[s->pk[k]]);
    }
  }
  char *sql = sqlite3_str_finish(q);
  if (sql == NULL || sqlite3_prepare_v2(db, sql, -1, &s->st[op], NULL) != SQLITE_OK)
    seterr(err, n, "table %s: %s", s->name, sql ? sqlite3_errmsg(db) : "out of memory");
  sqlite3_free(sql);
  return s->st[op];
}

/* ---- events -------------------------------------------------------------- */

static int bind_value(sqlite3_stmt *st, int i, const Auralog__BinlogValue *v)
{
  /* An empty TEXT or BLOB is bound as one, never with a NULL pointer
   * (SQLite would bind NULL). */
  switch (v->type) {
  case 0: return sqlite3_bind_null(st, i);
  case SQLITE_INTEGER: return sqlite3_bind_int64(st, i, v->i);
  case SQLITE_FLOAT: return sqlite3_bind_double(st, i, v->r);
  case SQLITE_TEXT:
    return sqlite3_bind_text(st, i, v->b.len ? (const char *)v->b.data : "", (int)v->b.len,
                             SQLITE_TRANSIENT);
  case SQLITE_BLOB:
    return v->b.len ? sqlite3_bind_blob(st, i, v->b.data, (int)v->b.len, SQLITE_TRANSIENT)
                    : sqlite3_bind_zeroblob(st, i, 0);
  default: return SQLITE_MISMATCH;
  }
}

static int apply_row(sqlite3 *db, struct tables *t, const Auralog__BinlogEvent *e,
                     char *err, size_t n)
{
  struct shape *s = shape_of(db, t, e->table, err, n);
  if (s == NULL)
    return -1;
  size_t nrow = e->op == BINLOG_DELETE ? e->n_before : e->n_after;
  if (nrow != (size_t)s->ncol || (e->op == BINLOG_UPDATE && e->n_before != nrow)) {
    seterr(err, n, "table %s has %d columns, event %u has %zu", s->name, s->ncol, e->index, nrow);
    return -1;
  }
  sqlite3_stmt *st = stmt_for(db, s, (int)e->op, e->rowid_table, err, n);
  if (st == NULL)
    return -1;
  int p = 1, rc = SQLITE_OK;
  if (e->op != BINLOG_DELETE)
    for (size_t i = 0; i < e->n_after && rc == SQLITE_OK; i++)
      rc = bind_value(st, p++, e->after[i]);
  if (e->rowid_table) {
    if (e->op == BINLOG_UPDATE && rc == SQLITE_OK)
      rc = sqlite3_bind_int64(st, p++, e->new_rowid);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_int64(st, p++, e->rowid);
  } else if (e->op != BINLOG_INSERT) {
    /* The key as the event names it; else from the row before. */
    for (int k = 0; k < s->npk && rc == SQLITE_OK; k++)
      rc = bind_value(st, p++, e->n_key == (size_t)s->npk ? e->key[k] : e->before[s->pk[k]]);
  }
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  int changed = sqlite3_changes(db);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) {
    seterr(err, n, "event %u (table %s): %s", e->index, s->name, sqlite3_errmsg(db));
    return -1;
  }
  if (changed != 1) {
    seterr(err, n, "event %u: the %s of a row of %s found %d rows, not one: the file is not "
           "the source as of the transaction before", e->index,
           e->op == BINLOG_UPDATE ? "update" : "delete", s->name, changed);
    return -1;
  }
  return 0;
}

static int apply_event(sqlite3 *db, struct tables *t, const Auralog__BinlogEvent *e,
                       char *err, size_t n)
{
  if (e->op == BINLOG_DDL) {
    char *x = NULL;
    tables_clear(t);           /* shapes may change */
    if (e->sql == NULL || sqlite3_exec(db, e->sql, NULL, NULL, &x) != SQLITE_OK) {
      seterr(err, n, "event %u (%s %s): %s", e->index, e->ddl_op ? e->ddl_op : "ddl",
             e->table ? e->table : "", x ? x : "no statement");
      sqlite3_free(x);
      return -1;
    }
    return 0;
  }
  if (e->op == BINLOG_LOST) {
    seterr(err, n, "event %u: the engine could not capture a change of %s: %s", e->index,
           e->table ? e->table : "?", e->sql ? e->sql : "no reason given");
    return -1;
  }
  if (e->op < BINLOG_INSERT || e->op > BINLOG_DELETE || e->table == NULL) {
    seterr(err, n, "event %u: unknown operation %u", e->index, e->op);
    return -1;
  }
  return apply_row(db, t, e, err, n);
}

/* Apply t's events (A2) inside the caller's transaction. 0, or -1 with err. */
static int apply_events(sqlite3 *db, const Auralog__BinlogTxn *t, char *err, size_t n)
{
  struct tables tabs = {0};
  int rc = 0;
  for (size_t i = 0; i < t->n_events && rc == 0; i++) {
    if (t->events[i]->index != i) {   /* A2 */
      seterr(err, n, "event %zu of the transaction at %llu has index %u", i,
             (unsigned long long)t->commit_lsn, t->events[i]->index);
      rc = -1;
    } else {
      rc = apply_event(db, &tabs, t->events[i], err, n);
    }
  }
  tables_clear(&tabs);
  return rc;
}

static int set_position(sqlite3 *db, const Auralog__BinlogTxn *t)
{
  sqlite3_stmt *q = NULL;
  int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO " BINAPPLY_TABLE
                              "(id, commit_lsn, events, wall_ms) VALUES(1, ?, ?, ?)", -1, &q,
                              NULL) == SQLITE_OK ? 0 : -1;
  if (rc == 0) {
    sqlite3_bind_int64(q, 1, (sqlite3_int64)t->commit_lsn);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)t->n_events);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)t->wall_ms);
    rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(q);
  return rc;
}

/* A batch in one SQLite transaction (one sync for all of it, not one per
 * binlog transaction): each binlog transaction in a savepoint of its own,
 * so that one that does not fit is rolled back alone and those before it
 * commit, with the position at the last of them (A1 holds for each). */
int binapply_txns(sqlite3 *db, Auralog__BinlogTxn *const *t, size_t nt, size_t *done,
                  char *err, size_t n)
{
  uint64_t lsn = 0, events = 0;
  char *x = NULL;
  *done = 0;
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &x) != SQLITE_OK) {
    seterr(err, n, "cannot begin: %s", x ? x : sqlite3_errmsg(db));
    sqlite3_free(x);
    return -1;
  }
  if (binapply_position(db, &lsn, &events) != 0) {
    seterr(err, n, "cannot read the position: %s", sqlite3_errmsg(db));
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
  }
  int applied = 0, failed = 0;
  const Auralog__BinlogTxn *last = NULL;
  for (size_t i = 0; i < nt && !failed; i++) {
    if (t[i]->commit_lsn == 0) {
      seterr(err, n, "a transaction without a commit LSN");
      failed = 1;
      break;
    }
    if (t[i]->commit_lsn <= lsn) {   /* A1: applied already */
      (*done)++;
      continue;
    }
    sqlite3_exec(db, "SAVEPOINT binlog_txn", NULL, NULL, NULL);
    if (apply_events(db, t[i], err, n) != 0) {
      sqlite3_exec(db, "ROLLBACK TO binlog_txn; RELEASE binlog_txn", NULL, NULL, NULL);
      failed = 1;
      break;
    }
    sqlite3_exec(db, "RELEASE binlog_txn", NULL, NULL, NULL);
    lsn = t[i]->commit_lsn;
    last = t[i];
    applied++;
    (*done)++;
  }
  int rc = 0;
  if (last && (set_position(db, last) != 0 ||
               sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)) {
    seterr(err, n, "cannot commit the transactions up to %llu: %s",
           (unsigned long long)last->commit_lsn, sqlite3_errmsg(db));
    rc = -1;
    *done = 0;
    applied = 0;
  }
  if (last == NULL || rc != 0)
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  if (failed)
    return -1;
  return rc != 0 ? -1 : applied;
}

int binapply_txn(sqlite3 *db, const Auralog__BinlogTxn *t, char *err, size_t n)
{
  size_t done = 0;
  Auralog__BinlogTxn *one = (Auralog__BinlogTxn *)t;
  return binapply_txns(db, &one, 1, &done, err, n);
}
