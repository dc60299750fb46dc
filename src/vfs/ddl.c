/*
 * ddl.c: the schema changes a writer commits, noted with the LSN of the
 * commit that made each durable, for the cluster's journal (ddl.h).
 *
 * Why: "the log is the database" gives a way back from an operator's
 * mistake (issue 28, lab 12): restore the volume as of just before a
 * `DROP TABLE`. To get there one needs the moment, as an LSN; the writer
 * knows it, since it made the commit. So it notes every schema change it
 * commits, and the coordinator writes each into its journal as a "ddl"
 * event (coord/journal.c) that `auralog journal` shows.
 *
 * How the engine learns of one: SQLite's authorizer (sandbox.c), which
 * SQLite calls while it prepares a statement with the action it will take:
 * SQLITE_CREATE_TABLE, SQLITE_DROP_TABLE, SQLITE_ALTER_TABLE, and the
 * index, view, trigger and virtual table ones, with the object's name.
 * No SQL is parsed here. Temporary objects have actions of their own
 * (SQLITE_CREATE_TEMP_TABLE ...): they are not the volume's and are not
 * noted.
 *
 * A change is durable only with the commit of its transaction, which may
 * come in a later request (BEGIN; DROP TABLE t; ... COMMIT), or never (a
 * ROLLBACK, a statement that fails, the client gone). So three steps:
 *
 *   1. ddl_seen, from the authorizer while preparing: the statement's
 *      change, kept per thread until the statement has run;
 *   2. ddl_stmt_end, after the statement stepped (worker.c): one that ran
 *      to its end moves its change to its connection's pending list
 *      (struct ddl_pend, in the client's state); one that failed drops it
 *      (SQLite undid the statement, or the whole transaction);
 *   3. ddl_settle, after every statement while that list is not empty:
 *      if the connection committed (the VFS's AURALOG_FCNTL_COMMIT_LSN
 *      named the commit), each pending change is published with that
 *      LSN; if the connection is back in autocommit without a commit, the
 *      transaction rolled back, and they are dropped.
 *
 * Rule D (a note names a durable commit of its change): a change is
 * published only with the LSN of a commit its own connection made after
 * the statement ran, and reported only once the VDL covers that LSN
 * (ddl_report). A commit a crash truncates never reaches the VDL, so its
 * change is never reported. A connection closed inside a transaction
 * rolls back: its pending list goes with it, unpublished. The converse
 * is not kept: a writer that crashes within a report period
 * (ENGINE_STAT_MS) of a durable schema change takes its note along, and
 * the journal misses a change the volume has (the notes live in the
 * writer's memory, not in the log).
 *
 * Published changes wait in a ring (the newest DDL_NOTES_MAX) and go out
 * in every report for DDL_NOTE_KEEP_MS after their commit: the
 * coordinator does not answer reports, so a report lost with a dropped
 * connection must not lose a change. The coordinator journals each
 * (epoch, seq) once. One engine a process, so one ring.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sqlite3.h>
#include <time.h>

#include "vfs/ddl.h"

/* ---- 1. what the statement being prepared changes ------------------------- */

static __thread struct {
  int have;
  char op[16];
  char name[129];
} stmt;

/* The object an action names, and the words for it; NULL: no change of
 * the volume's schema. */
static const char *op_of(int action, const char *a1, const char *a2, const char **name)
{
  *name = a1;
  switch (action) {
  case SQLITE_CREATE_TABLE: return "create table";
  case SQLITE_DROP_TABLE: return "drop table";
  case SQLITE_CREATE_INDEX: return "create index";
  case SQLITE_DROP_INDEX: return "drop index";
  case SQLITE_CREATE_VIEW: return "create view";
  case SQLITE_DROP_VIEW: return "drop view";
  case SQLITE_CREATE_TRIGGER: return "create trigger";
  case SQLITE_DROP_TRIGGER: return "drop trigger";
  case SQLITE_CREATE_VTABLE: return "create vtable";
  case SQLITE_DROP_VTABLE: return "drop vtable";
  case SQLITE_ALTER_TABLE:
    *name = a2;                /* a1 is the database */
    return "alter table";
  default: return NULL;
  }
}

/* Copy s into out (n bytes) on one line of printable ASCII: what the
 * journal quotes (net/wirecheck.c line_ok); other bytes become '?', runs of
 * white space one space. */
static void one_line(char *out, size_t n, const char *s)
{
  size_t k = 0;
  int space = 1;               /* leading white space goes */
  for (; s && *s && k + 1 < n; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!space)
        out[k++] = ' ';
      space = 1;
      continue;
    }
    out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    space = 0;
  }
  while (k > 0 && out[k - 1] == ' ')
    k--;
  out[k] = 0;
}

void ddl_stmt_begin(void)
{
  stmt.have = 0;
}

const char *ddl_stmt_change(const char **name)
{
  if (!stmt.have)
    return NULL;
  *name = stmt.name;
  return stmt.op;
}

void ddl_seen(int action, const char *a1, const char *a2, const char *db)
{
  const char *name;
  const char *op = op_of(action, a1, a2, &name);
  /* The database an action names: ALTER TABLE's is a1, and its db
   * argument is the column DROP COLUMN drops (SQLite 3.40). */
  const char *in = action == SQLITE_ALTER_TABLE ? a1 : db;
  if (op == NULL || stmt.have || (in && strcmp(in, "main") != 0))
    return;
  stmt.have = 1;
  snprintf(stmt.op, sizeof stmt.op, "%s", op);
  one_line(stmt.name, sizeof stmt.name, name ? name : "");
}

/* ---- 2, 3. a statement's end, a transaction's ---------------------------- */

int ddl_stmt_end(struct ddl_pend *p, const char *sql, int ok)
{
  if (stmt.have && ok && p) {
    /* Past DDL_PENDING_MAX in one transaction the last slot is reused:
     * the newest change of the transaction is the one kept. */
    struct ddl_note *d = &p->n[p->count < DDL_PENDING_MAX ? p->count++ : DDL_PENDING_MAX - 1];
    memset(d, 0, sizeof *d);
    memcpy(d->op, stmt.op, sizeof d->op);
    memcpy(d->name, stmt.name, sizeof d->name);
    one_line(d->sql, sizeof d->sql, sql);
  }
  stmt.have = 0;
  return p && p->count > 0;
}

static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ddl_note ring[DDL_NOTES_MAX];
static uint64_t ring_next;     /* seq of the next change published (ring[seq % max]) */

static uint64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void ddl_settle(struct ddl_pend *p, uint64_t commit_lsn, int autocommit)
{
  if (p == NULL || p->count == 0)
    return;
  if (commit_lsn) {
    uint64_t now = wall_ms();
    pthread_mutex_lock(&ring_mu);
    for (int i = 0; i < p->count; i++) {
      struct ddl_note *d = &ring[ring_next % DDL_NOTES_MAX];
      *d = p->n[i];
      d->seq = ++ring_next;    /* seqs start at 1 */
      d->lsn = commit_lsn;
      d->wall_ms = now;
    }
    pthread_mutex_unlock(&ring_mu);
    p->count = 0;
  } else if (autocommit) {
    p->count = 0;              /* rolled back: nothing changed */
  }
}

/* ---- the report ----------------------------------------------------------- */

/* The strings of the last report's notes: the report is packed on the
 * volume's own thread, one at a time. */
static struct ddl_note out_copy[DDL_NOTES_MAX];

size_t ddl_report(uint64_t vdl, Auralog__DdlNote *out, Auralog__DdlNote **outp)
{
  size_t n = 0;
  uint64_t now_wall_ms = wall_ms();
  pthread_mutex_lock(&ring_mu);
  uint64_t first = ring_next > DDL_NOTES_MAX ? ring_next - DDL_NOTES_MAX : 0;
  for (uint64_t s = first; s < ring_next; s++) {
    const struct ddl_note *d = &ring[s % DDL_NOTES_MAX];
    /* Rule D: only a commit the VDL covers. A change whose commit is not
     * durable yet waits for a later report. */
    if (d->lsn > vdl || now_wall_ms > d->wall_ms + DDL_NOTE_KEEP_MS)
      continue;
    out_copy[n] = *d;
    n++;
  }
  pthread_mutex_unlock(&ring_mu);
  for (size_t i = 0; i < n; i++) {
    auralog__ddl_note__init(&out[i]);
    out[i].seq = out_copy[i].seq;
    out[i].lsn = out_copy[i].lsn;
    out[i].wall_ms = out_copy[i].wall_ms;
    out[i].op = out_copy[i].op;
    out[i].name = out_copy[i].name;
    out[i].sql = out_copy[i].sql;
    outp[i] = &out[i];
  }
  return n;
}
