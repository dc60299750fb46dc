/*
 * capture.h: the binlog's change capture (issue 29, step 1): the row
 * changes and schema changes each transaction of a SQLite connection
 * commits, handed over as one unit once its commit is known, never for a
 * transaction, a savepoint or a statement that SQLite undid. capture.c
 * says how and why.
 *
 * A caller runs each statement of the connection like this (worker.c
 * does; tests/unit/test_capture.c does the same on stock SQLite):
 *
 *   sandbox_prepare(db, sql, &st, &tail);   // the authorizer calls
 *                                           // capture_seen (and ddl_seen)
 *   capture_stmt_start(c);
 *   rc = sqlite3_step(st) ... until it is done or fails;
 *   capture_stmt_end(c, st, rc);            // before ddl_stmt_end
 *   sqlite3_finalize(st);
 *   capture_settle(c, pos, sqlite3_get_autocommit(db));
 *
 * where pos is the position of the commit this statement made, if it made
 * one (the engine: the VFS's AURALOG_FCNTL_COMMIT_LSN; a test: a counter
 * its commit hook advances), else 0. The caller gives it: capture knows
 * nothing of LSNs, so the same code runs with or without a volume.
 */
#ifndef AURALOG_CAPTURE_H
#define AURALOG_CAPTURE_H

#include <stdint.h>
#include <sqlite3.h>

#include "auralog.pb-c.h"

/* BinlogEvent.op (proto/auralog.proto). */
#define BINLOG_INSERT 1
#define BINLOG_UPDATE 2
#define BINLOG_DELETE 3
#define BINLOG_DDL 4
#define BINLOG_LOST 5          /* a change capture could not record (sql: why) */

struct capture;

/* Where a committed transaction goes: txn (its events in order, indexes
 * set) is valid only during the call; copy or pack what you keep. */
typedef void (*capture_sink)(void *arg, const Auralog__BinlogTxn *txn);

/* The internal switch (issue 29 step 1; `auralog engine --binlog` comes
 * later): is AURALOG_CAPTURE=1 in the process's environment? Read once.
 * Off, nothing is installed and the engine runs as it did. */
int capture_on(void);

/* Capture db's changes from now on (it takes db's preupdate hook); NULL
 * if out of memory. db must be outside a transaction. */
struct capture *capture_open(sqlite3 *db, capture_sink sink, void *arg);
/* Stop and free c, before its connection closes: what an open transaction
 * captured goes (closing rolls the transaction back). NULL: nothing. */
void capture_close(struct capture *c);

/* From the connection's authorizer while a statement is prepared (as
 * ddl_seen; sandbox.c): the savepoint the statement makes, releases or
 * rolls back to. Per thread. capture_stmt_begin: a statement is prepared
 * afresh (sandbox_prepare calls it). */
void capture_seen(int action, const char *a1, const char *a2);
void capture_stmt_begin(void);

/* Before the statement steps: where its events start. */
void capture_stmt_start(struct capture *c);
/* After it stepped: rc is what its last sqlite3_step returned. Drops the
 * events of a statement SQLite undid, applies its savepoint, and notes a
 * schema change it made (ddl_stmt_change: call before ddl_stmt_end). */
void capture_stmt_end(struct capture *c, sqlite3_stmt *st, int rc);
/* After each statement: pos != 0, it committed at pos and the
 * transaction's events go to the sink (if it has any); else, if the
 * connection is back in autocommit, the transaction rolled back and they
 * are dropped. NULL c: nothing. */
void capture_settle(struct capture *c, uint64_t pos, int autocommit);

/* From the connection's commit hook (the enhanced binlog): the
 * transaction about to commit, its events final, packed as a BinlogTxn
 * (commit_lsn 0: the commit's LSN is not known yet) into *buf (malloc'd,
 * caller frees; NULL and 0 if it has no events). Its capture_settle
 * follows as usual. Returns 0. */
int capture_commit(struct capture *c, uint8_t **buf, size_t *len);

/* Counters, for tests and status: transactions handed over, events in
 * them, transactions dropped (rolled back with events captured). */
struct capture_stats {
  uint64_t txns, events, dropped;
};
void capture_get_stats(const struct capture *c, struct capture_stats *out);

#endif
