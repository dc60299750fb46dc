/*
 * capture.c: the binlog's change capture (issue 29, step 1; capture.h).
 *
 * A binlog (seed 003) is the row-level record of what each committed
 * transaction changed, in commit order, for consumers outside the
 * storage tier: a replica of another kind, change data capture, an
 * audit. The redo log cannot serve them: it holds page deltas, which
 * only this engine's page format explains. So the engine notes each
 * transaction's row changes as SQLite makes them and hands them over,
 * as one unit, once the commit is known: a BinlogTxn (proto/auralog.proto)
 * with the commit's position and every event in the order it happened:
 * table, operation, key (the rowid, or a WITHOUT ROWID table's PRIMARY
 * KEY), the whole row before (update, delete) and after (insert,
 * update) with SQLite's types kept exactly, and the schema changes at
 * their place among the rows.
 *
 * Which SQLite machinery. Debian's SQLite 3.40.1 has both:
 *
 *   - The session extension (sqlite3session_*) tracks undo for us: it
 *     keeps each changed row's original values and, when asked for a
 *     changeset, reads the row again, so whatever a savepoint or a
 *     failed statement undid is simply not there. But in 3.40 it ignores
 *     tables without a declared PRIMARY KEY (its rowid option came in
 *     3.42); a changeset is each row's net change grouped by table, not
 *     the order of the changes, so a schema change cannot be placed
 *     among them (and a session fails with SQLITE_SCHEMA once a table it
 *     tracks gains a column); and an UPDATE carries only the key and the
 *     columns that changed, not the rows.
 *   - The preupdate hook (what the session extension is built on) sees
 *     every change as it happens, in every real table: rowid tables with
 *     or without a PRIMARY KEY and WITHOUT ROWID ones, with the whole old
 *     and new rows, triggers' changes, foreign key cascades and the
 *     deletions of INSERT OR REPLACE included. What it does not see is
 *     undo: SQLite rolls back pages, not rows.
 *
 * So capture takes the preupdate hook, and tracks undo itself. Within a
 * transaction that goes on, SQLite undoes row changes in two ways, and
 * capture keeps a mark (an index into the events) for each:
 *
 *   - ROLLBACK TO a savepoint: the authorizer tells of SAVEPOINT, RELEASE
 *     and ROLLBACK TO, with the name, when the statement is prepared
 *     (capture_seen); once the statement succeeded, capture pushes a
 *     mark, pops marks, or cuts the events back to the mark and pops
 *     those above it, as SQLite does with its savepoints (names compared
 *     as SQLite does, ASCII case folded, the newest match).
 *   - A statement that failed: with ON CONFLICT ABORT (the default, and
 *     every error that is not a constraint's) SQLite undoes what the
 *     statement did through its statement journal; with FAIL it keeps the
 *     rows changed before the failing one. sqlite3_changes() tells them
 *     apart: SQLite sets it to 0 when it rolls the statement back
 *     (sqlite3VdbeHalt), and to the rows kept when it does not. So a
 *     failed statement's events go when changes() is 0. Not exact in one
 *     case: a statement failing under FAIL (or RAISE(FAIL)) that changed
 *     no row of its own while its triggers changed some; SQLite keeps
 *     those, capture drops them.
 *
 * And the whole transaction: ROLLBACK, an error that rolls back all
 * (ON CONFLICT ROLLBACK, an interrupt, an I/O error), a connection closed
 * inside it. The caller says, after every statement, whether it committed
 * (the position of its commit) and whether the connection is back in
 * autocommit: out of a transaction without a commit means rolled back.
 *
 * Schema changes: a statement that ddl.c names as one (its authorizer
 * actions: CREATE, DROP, ALTER of tables, indexes, views, triggers,
 * virtual tables) becomes a DDL event at the end of its own events, with
 * its exact text, which a consumer replays. SQLite calls no preupdate hook
 * for the rows CREATE TABLE ... AS SELECT fills its table with, nor for
 * those ALTER TABLE DROP COLUMN rewrites (checked on 3.40.1): the replay
 * makes them. It does for the rows CREATE VIRTUAL TABLE puts in its
 * shadow tables, which the replay makes too: a CREATE's events go, the
 * statement stands for them. Those of a DROP TABLE stay, before it (a
 * foreign key parent's rows are deleted first, with their cascades, which
 * a consumer without foreign keys would not do). A CREATE TABLE AS SELECT
 * with random() or the time replays to other values.
 *
 * Not captured: TEMP tables (not the volume's); sqlite_sequence and
 * sqlite_stat1 (SQLite tells the hook nothing of them: ANALYZE's
 * statistics are not data, and a consumer's AUTOINCREMENT counter follows
 * the rowids it inserts: ahead of the source's where a statement failing
 * under FAIL kept rows, as SQLite advances it only when a statement
 * completes); virtual tables (their shadow tables are real tables, and
 * captured: an FTS5 table replicates through them); an UPDATE that leaves the row as it was
 * (SQLite calls the hook, but nothing changed: MySQL's row binlog leaves
 * such rows out too). A rowid table's key is its rowid and an insert
 * carries it, so a consumer's rowids are the source's.
 *
 * Invariants (DESIGN.md §4, 12):
 *   C1. A transaction's events reach the sink once, with the position of
 *       the commit its own connection made, at the statement that made it;
 *       a transaction that rolled back never reaches it.
 *   C2. They are exactly the row changes that commit made, in the order
 *       SQLite made them, schema changes at their statement's place: none
 *       that a savepoint or a failed statement undid (but the one case
 *       above), no update that changed nothing.
 * A truncated transaction (a commit the VDL never reached) is the caller's
 * to keep out: capture hands over at the commit, before the VDL covers it
 * (binlog.c says which of its transactions it covers; what ships them
 * must wait for it).
 *
 * Cost. Off (the default), nothing is installed: the worker checks a
 * NULL pointer, the authorizer a switch. On, each changed row costs the
 * hook: one allocation holding the event, its values and their bytes.
 * A transaction's events stay in memory until it ends (MySQL spills past
 * binlog_cache_size to a file; a later step may).
 *
 * Out of memory while capturing, the engine stops (abort), as MySQL does
 * by default when it cannot write its binlog (binlog_error_action =
 * ABORT_SERVER): a consumer that silently misses a transaction is worse.
 */
#define SQLITE_ENABLE_PREUPDATE_HOOK 1   /* declares sqlite3_preupdate_* */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "vfs/capture.h"
#include "vfs/ddl.h"

/* ---- the switch ------------------------------------------------------------ */

int capture_on(void)
{
  static int on = -1;
  if (on < 0) {
    const char *v = getenv("AURALOG_CAPTURE");
    on = v && strcmp(v, "1") == 0;
  }
  return on;
}

/* ---- a connection's state ----------------------------------------------- */

struct savepoint {
  char *name;
  size_t mark;               /* events before it was made */
};

/* What capture knows of a table: cached, as it costs a lookup. */
struct tinfo {
  char *name;
  int ncol;                  /* columns, generated ones too (preupdate_count) */
  int wr;                    /* WITHOUT ROWID */
  int npk, *pk;              /* WITHOUT ROWID: the PRIMARY KEY's columns, in its order */
  int nout, *out;            /* the columns an image holds: all but generated ones */
  unsigned char *real;       /* by column: REAL affinity */
  char *why;                 /* not NULL: its changes cannot be captured, why */
};

struct capture {
  sqlite3 *db;
  capture_sink sink;
  void *arg;
  Auralog__BinlogEvent **ev; /* the open transaction's events, in order */
  size_t n, cap;
  size_t stmt_mark;          /* events before the statement now running */
  struct savepoint *sp;      /* SQLite's savepoint stack, mirrored */
  size_t nsp, capsp;
  struct tinfo *ti, scratch;
  size_t nti;
  uint64_t ti_gen;           /* schema_gen when ti was filled */
  struct capture_stats st;
  /* The statement running committed (capture_commit) and its schema
   * change was noted then: capture_stmt_end notes it no second time. */
  int ddl_early;
};

/* Bumped by every schema change and every undo that may have dropped one
 * (any connection of the process): a table's cached shape is good only
 * while it has not moved. */
static atomic_uint_fast64_t schema_gen;

static void oom(void) __attribute__((noreturn));
static void oom(void)
{
  logwarn("binlog capture: out of memory: the engine stops rather than lose a "
          "transaction's events");
  abort();
}

static void *xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (p == NULL)
    oom();
  return p;
}

static void *xrealloc(void *p, size_t n)
{
  p = realloc(p, n);
  if (p == NULL)
    oom();
  return p;
}

static char *xstrdup(const char *s)
{
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

static void tinfo_free(struct tinfo *t)
{
  free(t->name);
  free(t->pk);
  free(t->out);
  free(t->real);
  free(t->why);
  memset(t, 0, sizeof *t);
}

static void tinfo_clear(struct capture *c)
{
  for (size_t i = 0; i < c->nti; i++)
    tinfo_free(&c->ti[i]);
  free(c->ti);
  c->ti = NULL;
  c->nti = 0;
}

/* Drop events [to, n); undo: SQLite undid them, and a schema change
 * among them with them (the cached shapes may be stale). */
static void cut(struct capture *c, size_t to, int undo)
{
  int ddl = 0;
  while (c->n > to) {
    Auralog__BinlogEvent *e = c->ev[--c->n];
    ddl |= e->op == BINLOG_DDL;
    free(e);
  }
  if (ddl && undo)
    atomic_fetch_add(&schema_gen, 1);
}

/* The transaction ended (undo: rolled back): nothing of it stays. */
static void reset(struct capture *c, int undo)
{
  cut(c, 0, undo);
  for (size_t i = 0; i < c->nsp; i++)
    free(c->sp[i].name);
  c->nsp = 0;
  c->stmt_mark = 0;
}

static void push(struct capture *c, Auralog__BinlogEvent *e)
{
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 64;
    c->ev = xrealloc(c->ev, c->cap * sizeof *c->ev);
  }
  c->ev[c->n++] = e;
}

/* ---- tables ------------------------------------------------------------------ */

/* SQLite's affinity rule for a declared type (datatype3.html 3.1): is it
 * REAL? Such a column stores 3.0 as the integer 3, and a new row's value
 * comes to the hook so; SELECT shows 3.0, and so does the event. */
static int real_affinity(const char *type)
{
  char u[64];
  size_t n = 0;
  for (; type && type[n] && n + 1 < sizeof u; n++)
    u[n] = (char)(type[n] >= 'a' && type[n] <= 'z' ? type[n] - 32 : type[n]);
  u[n] = 0;
  if (strstr(u, "INT") || strstr(u, "CHAR") || strstr(u, "CLOB") || strstr(u, "TEXT") ||
      strstr(u, "BLOB") || n == 0)
    return 0;
  return strstr(u, "REAL") || strstr(u, "FLOA") || strstr(u, "DOUB");
}

/* The shape of main's table tab, which has ncol columns now: a statement
 * on the same connection, inside the hook, as the session extension runs
 * its own; once a table and schema generation. If it cannot be read (the
 * statement is being interrupted), the answer says why and is not kept. */
static struct tinfo *table_info(struct capture *c, const char *tab, int ncol)
{
  uint64_t gen = atomic_load(&schema_gen);
  if (c->ti_gen != gen) {
    tinfo_clear(c);
    c->ti_gen = gen;
  }
  for (size_t i = 0; i < c->nti; i++)
    if (strcmp(c->ti[i].name, tab) == 0) {
      if (c->ti[i].ncol == ncol)
        return &c->ti[i];
      tinfo_clear(c);        /* changed under us (another process?): look again */
      break;
    }
  struct tinfo t = {.name = xstrdup(tab), .ncol = ncol};
  t.pk = xmalloc((size_t)ncol * sizeof *t.pk);
  t.out = xmalloc((size_t)ncol * sizeof *t.out);
  t.real = xmalloc((size_t)ncol);
  int rows = 0, virt = 0, gen_cols = 0, rc;
  int *pkat = xmalloc((size_t)ncol * sizeof *pkat);   /* by column: its place in the key */
  sqlite3_stmt *q = NULL;
  rc = sqlite3_prepare_v2(c->db, "SELECT hidden, pk, type, (SELECT wr FROM pragma_table_list"
                          "(?1) WHERE schema = 'main') FROM pragma_table_xinfo(?1, 'main') "
                          "ORDER BY cid", -1, &q, NULL);
  if (rc == SQLITE_OK)
    sqlite3_bind_text(q, 1, tab, -1, SQLITE_STATIC);
  while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
    rc = SQLITE_OK;
    if (rows == ncol) {
      rows++;
      break;
    }
    int hidden = sqlite3_column_int(q, 0);
    pkat[rows] = sqlite3_column_int(q, 1);
    t.real[rows] = (unsigned char)real_affinity((const char *)sqlite3_column_text(q, 2));
    t.wr = sqlite3_column_int(q, 3);
    virt |= hidden == 2;
    gen_cols += hidden != 0;
    if (hidden == 0)
      t.out[t.nout++] = rows;
    rows++;
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_DONE || rows != ncol) {
    char why[300];
    snprintf(why, sizeof why, "table %s: cannot read its shape (%s)", tab,
             rc != SQLITE_DONE ? sqlite3_errstr(rc) : "its columns changed");
    t.why = xstrdup(why);
  } else if (virt) {
    /* 3.40's preupdate_old/new take a column's place in the record, where
     * VIRTUAL generated columns have none, and check the INTEGER PRIMARY
     * KEY and REAL affinity by the table's places: rows come garbled. */
    char why[300];
    snprintf(why, sizeof why, "table %s has VIRTUAL generated columns: SQLite 3.40 gives "
             "the preupdate hook their rows in another order", tab);
    t.why = xstrdup(why);
  }
  for (int i = 0; i < ncol; i++)
    if (i < rows && pkat[i] > 0 && pkat[i] <= ncol) {
      t.pk[pkat[i] - 1] = i;
      t.npk = pkat[i] > t.npk ? pkat[i] : t.npk;
    }
  free(pkat);
  if (gen_cols == 0) {
    free(t.out);             /* every column: no map */
    t.out = NULL;
  }
  if (t.why && rc != SQLITE_DONE) {   /* interrupted: not kept */
    tinfo_free(&c->scratch);
    c->scratch = t;
    return &c->scratch;
  }
  c->ti = xrealloc(c->ti, (c->nti + 1) * sizeof *c->ti);
  c->ti[c->nti] = t;
  return &c->ti[c->nti++];
}

/* ---- events -------------------------------------------------------------- */

/* Bytes v holds beyond its value struct. */
static size_t value_bytes(sqlite3_value *v)
{
  int t = sqlite3_value_type(v);
  if (t == SQLITE_TEXT) {
    sqlite3_value_text(v);   /* bytes after text: SQLite's rule */
    return (size_t)sqlite3_value_bytes(v);
  }
  if (t == SQLITE_BLOB) {
    sqlite3_value_blob(v);
    return (size_t)sqlite3_value_bytes(v);
  }
  return 0;
}

/* Fill *out from v (NULL: a NULL), its bytes at *data (advanced past
 * them); real: the column has REAL affinity (an INTEGER is shown REAL). */
static void value_copy(Auralog__BinlogValue *out, sqlite3_value *v, int real, char **data)
{
  auralog__binlog_value__init(out);
  int t = v ? sqlite3_value_type(v) : SQLITE_NULL;
  if (t == SQLITE_INTEGER && real)
    t = SQLITE_FLOAT;
  switch (t) {
  case SQLITE_INTEGER:
    out->type = SQLITE_INTEGER;
    out->v_case = AURALOG__BINLOG_VALUE__V_I;
    out->i = sqlite3_value_int64(v);
    break;
  case SQLITE_FLOAT:
    out->type = SQLITE_FLOAT;
    out->v_case = AURALOG__BINLOG_VALUE__V_R;
    out->r = sqlite3_value_double(v);
    break;
  case SQLITE_TEXT:
  case SQLITE_BLOB: {
    const void *p = t == SQLITE_TEXT ? (const void *)sqlite3_value_text(v) : sqlite3_value_blob(v);
    size_t n = (size_t)sqlite3_value_bytes(v);
    out->type = (uint32_t)t;
    out->v_case = AURALOG__BINLOG_VALUE__V_B;
    out->b.len = n;
    out->b.data = (uint8_t *)*data;
    if (n)
      memcpy(*data, p, n);
    *data += n;
    break;
  }
  default:                   /* NULL: type 0, nothing else */
    break;
  }
}

/* Are a and b the same value, type and bits? (-0.0 is not 0.0.) */
static int same_value(sqlite3_value *a, sqlite3_value *b)
{
  int t = sqlite3_value_type(a);
  if (t != sqlite3_value_type(b))
    return 0;
  switch (t) {
  case SQLITE_INTEGER:
    return sqlite3_value_int64(a) == sqlite3_value_int64(b);
  case SQLITE_FLOAT: {
    double x = sqlite3_value_double(a), y = sqlite3_value_double(b);
    return memcmp(&x, &y, sizeof x) == 0;
  }
  case SQLITE_TEXT:
  case SQLITE_BLOB: {
    size_t n = value_bytes(a);
    const void *p = t == SQLITE_TEXT ? (const void *)sqlite3_value_text(a) : sqlite3_value_blob(a);
    if (n != value_bytes(b))
      return 0;
    const void *q = t == SQLITE_TEXT ? (const void *)sqlite3_value_text(b) : sqlite3_value_blob(b);
    return n == 0 || memcmp(p, q, n) == 0;
  }
  default:
    return 1;
  }
}

/* An event that holds only text: a schema change (op, its object, its
 * statement), or a change capture could not record (BINLOG_LOST: the
 * table, and why in sql). */
static void push_text(struct capture *c, uint32_t kind, const char *op, const char *name,
                      const char *sql)
{
  size_t a = strlen(op) + 1, b = strlen(name) + 1, s = strlen(sql) + 1;
  Auralog__BinlogEvent *e = xmalloc(sizeof *e + a + b + s);
  auralog__binlog_event__init(e);
  char *p = (char *)(e + 1);
  e->op = kind;
  e->ddl_op = memcpy(p, op, a);
  e->table = memcpy(p + a, name, b);
  e->sql = memcpy(p + a + b, sql, s);
  push(c, e);
}

/* The row values of an image: column i before, or after. */
typedef int (*getter)(sqlite3 *, int, sqlite3_value **);

/* Column j of an image: the table's column ti->out[j]. */
static int col(const struct tinfo *ti, int j)
{
  return ti->out ? ti->out[j] : j;
}

/* SQLite calls this before each row change of the connection. The event
 * is one allocation: the event, its value pointers, values, bytes. */
static void on_preupdate(void *arg, sqlite3 *db, int op, const char *zdb, const char *tab,
                         sqlite3_int64 k1, sqlite3_int64 k2)
{
  struct capture *c = arg;
  if (strcmp(zdb, "main") != 0)
    return;                  /* TEMP (or attached): not the volume's */
  int ncol = sqlite3_preupdate_count(db);
  struct tinfo *ti = table_info(c, tab, ncol);
  if (ti->why) {
    /* A consumer stops at this transaction, told why, rather than apply
     * it wrong (C2 cannot hold for it). */
    push_text(c, BINLOG_LOST, "", tab, ti->why);
    return;
  }
  int wr = ti->wr, nout = ti->out ? ti->nout : ncol;
  int has_old = op != SQLITE_INSERT, has_new = op != SQLITE_DELETE;
  getter gk = has_old ? sqlite3_preupdate_old : sqlite3_preupdate_new;
  if (op == SQLITE_UPDATE && (wr || k1 == k2)) {
    int same = 1;
    for (int i = 0; i < ncol && same; i++) {
      sqlite3_value *a = NULL, *b = NULL;
      sqlite3_preupdate_old(db, i, &a);
      sqlite3_preupdate_new(db, i, &b);
      same = a && b && same_value(a, b);
    }
    if (same)
      return;                /* nothing changed: no event */
  }
  size_t nk = wr ? (size_t)ti->npk : 0;
  size_t nv = nk + (size_t)(has_old + has_new) * (size_t)nout;
  size_t bytes = strlen(tab) + 1;
  for (int pass = 0; pass < 2; pass++) {
    getter g = pass == 0 ? (has_old ? sqlite3_preupdate_old : NULL)
                         : (has_new ? sqlite3_preupdate_new : NULL);
    for (int j = 0; g && j < nout; j++) {
      sqlite3_value *v = NULL;
      g(db, col(ti, j), &v);
      bytes += v ? value_bytes(v) : 0;
    }
  }
  for (size_t i = 0; i < nk; i++) {
    sqlite3_value *v = NULL;
    gk(db, ti->pk[i], &v);
    bytes += v ? value_bytes(v) : 0;
  }
  /* Layout: event | nv pointers | nv values | the bytes (8-aligned parts
   * first: the pointers and value structs keep the bytes' alignment). */
  Auralog__BinlogEvent *e = xmalloc(sizeof *e + nv * (sizeof(void *) + sizeof(Auralog__BinlogValue))
                                    + bytes);
  auralog__binlog_event__init(e);
  Auralog__BinlogValue **ptr = (Auralog__BinlogValue **)(e + 1);
  Auralog__BinlogValue *val = (Auralog__BinlogValue *)(ptr + nv);
  char *data = (char *)(val + nv);
  for (size_t i = 0; i < nv; i++)
    ptr[i] = &val[i];
  e->op = op == SQLITE_INSERT ? BINLOG_INSERT : op == SQLITE_UPDATE ? BINLOG_UPDATE : BINLOG_DELETE;
  e->table = strcpy(data, tab);
  data += strlen(tab) + 1;
  e->rowid_table = !wr;
  if (!wr) {
    e->rowid = op == SQLITE_INSERT ? k2 : k1;
    e->new_rowid = op == SQLITE_UPDATE ? k2 : 0;
  }
  e->n_key = nk;
  e->key = ptr;
  for (size_t i = 0; i < nk; i++) {
    sqlite3_value *v = NULL;
    gk(db, ti->pk[i], &v);
    value_copy(e->key[i], v, ti->real[ti->pk[i]], &data);
  }
  Auralog__BinlogValue **next = ptr + nk;
  for (int pass = 0; pass < 2; pass++) {
    getter g = pass == 0 ? (has_old ? sqlite3_preupdate_old : NULL)
                         : (has_new ? sqlite3_preupdate_new : NULL);
    if (g == NULL)
      continue;
    if (pass == 0) {
      e->before = next;
      e->n_before = (size_t)nout;
    } else {
      e->after = next;
      e->n_after = (size_t)nout;
    }
    for (int j = 0; j < nout; j++) {
      sqlite3_value *v = NULL;
      g(db, col(ti, j), &v);
      value_copy(next[j], v, ti->real[col(ti, j)], &data);
    }
    next += nout;
  }
  push(c, e);
}

/* ---- savepoints, statements, transactions ------------------------------- */

enum { SP_NONE, SP_MAKE, SP_RELEASE, SP_ROLLBACK_TO };

/* The savepoint statement prepared on this thread, and its name. In a
 * buffer of the thread's own, not the heap: a name left there when a
 * thread ends (a reader handing a SAVEPOINT to the writer) would leak.
 * Names are compared on their first SP_NAME_MAX - 1 bytes: two savepoints
 * that share those are taken for one. */
#define SP_NAME_MAX 1024
static __thread int sp_op;
static __thread char sp_name[SP_NAME_MAX];

void capture_stmt_begin(void)
{
  sp_op = SP_NONE;
}

void capture_seen(int action, const char *a1, const char *a2)
{
  if (action != SQLITE_SAVEPOINT || a1 == NULL || a2 == NULL)
    return;
  sp_op = strcmp(a1, "BEGIN") == 0 ? SP_MAKE : strcmp(a1, "RELEASE") == 0 ? SP_RELEASE
        : strcmp(a1, "ROLLBACK") == 0 ? SP_ROLLBACK_TO : SP_NONE;
  snprintf(sp_name, sizeof sp_name, "%s", a2);
}

/* The newest savepoint named name, or -1. */
static long find_sp(struct capture *c, const char *name)
{
  for (size_t i = c->nsp; i-- > 0;)
    if (sqlite3_stricmp(c->sp[i].name, name) == 0)
      return (long)i;
  return -1;
}

void capture_stmt_start(struct capture *c)
{
  if (c) {
    c->stmt_mark = c->n;
    c->ddl_early = 0;
  }
}

/* The schema change the statement st made (ddl.c knows it from the
 * authorizer), as an event after the statement's row events. */
static void note_ddl(struct capture *c, sqlite3_stmt *st)
{
  const char *name = NULL, *op = ddl_stmt_change(&name);
  if (op == NULL)
    return;
  /* What a CREATE wrote, its replay writes (a virtual table's shadow
   * rows): only the statement goes. */
  if (strncmp(op, "create", 6) == 0)
    cut(c, c->stmt_mark, 0);
  const char *sql = st && sqlite3_sql(st) ? sqlite3_sql(st) : "";
  push_text(c, BINLOG_DDL, op, name ? name : "", sql);
  atomic_fetch_add(&schema_gen, 1);
}

void capture_stmt_end(struct capture *c, sqlite3_stmt *st, int rc)
{
  if (c == NULL)
    return;
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    /* Failed. ABORT undid the statement and set changes() to 0; FAIL
     * kept its rows before the failing one (see the top). A transaction
     * rolled back whole goes at capture_settle. */
    if (sqlite3_changes64(c->db) == 0)
      cut(c, c->stmt_mark, 1);
    sp_op = SP_NONE;
    return;
  }
  if (!c->ddl_early)
    note_ddl(c, st);
  c->ddl_early = 0;
  long i = sp_op != SP_NONE ? find_sp(c, sp_name) : -1;
  switch (sp_op) {
  case SP_MAKE:
    if (c->nsp == c->capsp) {
      c->capsp = c->capsp ? 2 * c->capsp : 8;
      c->sp = xrealloc(c->sp, c->capsp * sizeof *c->sp);
    }
    c->sp[c->nsp].name = xstrdup(sp_name);
    c->sp[c->nsp++].mark = c->n;
    break;
  case SP_RELEASE:           /* it and every newer one go; their events stay */
  case SP_ROLLBACK_TO:       /* the newer ones go, it stays; events since go */
    if (i < 0)
      break;                 /* SQLite found it, or the statement failed: not ours */
    if (sp_op == SP_ROLLBACK_TO) {
      cut(c, c->sp[i].mark, 1);
      i++;
    }
    while (c->nsp > (size_t)i)
      free(c->sp[--c->nsp].name);
    break;
  }
  sp_op = SP_NONE;
}

static uint64_t wall_ms(void);

/* C2 (the enhanced binlog): at SQLite's commit hook, which runs inside the
 * committing statement before the VFS syncs (and so before the commit has
 * an LSN), the events are final: every statement before this one has had
 * its undo applied at its end (capture_stmt_end), and this one's rows
 * before a FAIL stay. Only this statement's own schema change is not
 * noted yet (that happens at its end): it is noted now, once. */
int capture_commit(struct capture *c, uint8_t **buf, size_t *len)
{
  *buf = NULL;
  *len = 0;
  if (c == NULL)
    return 0;
  sqlite3_stmt *st = NULL;
  while ((st = sqlite3_next_stmt(c->db, st)) != NULL && !sqlite3_stmt_busy(st))
    ;
  note_ddl(c, st);
  c->ddl_early = 1;
  if (c->n == 0)
    return 0;
  for (size_t i = 0; i < c->n; i++)
    c->ev[i]->index = (uint32_t)i;
  Auralog__BinlogTxn t = AURALOG__BINLOG_TXN__INIT;
  t.wall_ms = wall_ms();       /* commit_lsn: the record's own LSN */
  t.n_events = c->n;
  t.events = c->ev;
  size_t n = auralog__binlog_txn__get_packed_size(&t);
  *buf = xmalloc(n);
  *len = auralog__binlog_txn__pack(&t, *buf);
  return 0;
}

static uint64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void capture_settle(struct capture *c, uint64_t pos, int autocommit)
{
  if (c == NULL)
    return;
  if (pos) {
    /* C1: committed at pos, by this connection, in this statement. */
    if (c->n > 0) {
      for (size_t i = 0; i < c->n; i++)
        c->ev[i]->index = (uint32_t)i;
      Auralog__BinlogTxn t = AURALOG__BINLOG_TXN__INIT;
      t.commit_lsn = pos;
      t.wall_ms = wall_ms();
      t.n_events = c->n;
      t.events = c->ev;
      c->st.txns++;
      c->st.events += c->n;
      c->sink(c->arg, &t);
    }
    reset(c, 0);
  } else if (autocommit) {
    /* Out of the transaction without a commit: it rolled back. */
    c->st.dropped += c->n > 0;
    reset(c, 1);
  }
}

/* ---- a connection --------------------------------------------------------- */

struct capture *capture_open(sqlite3 *db, capture_sink sink, void *arg)
{
  struct capture *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->db = db;
  c->sink = sink;
  c->arg = arg;
  c->ti_gen = atomic_load(&schema_gen);
  sqlite3_preupdate_hook(db, on_preupdate, c);
  return c;
}

void capture_close(struct capture *c)
{
  if (c == NULL)
    return;
  sqlite3_preupdate_hook(c->db, NULL, NULL);
  reset(c, 1);
  free(c->ev);
  free(c->sp);
  tinfo_clear(c);
  tinfo_free(&c->scratch);
  free(c);
}

void capture_get_stats(const struct capture *c, struct capture_stats *out)
{
  *out = c ? c->st : (struct capture_stats){0};
}
