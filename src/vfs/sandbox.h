/*
 * sandbox.h: what a client's SQL may reach on the engine's SQL port
 * (sandbox.c says what it refuses and why). Only the engine's own
 * connections get it (worker.c); the loadable extension keeps all of
 * SQLite.
 */
#ifndef AURALOG_SANDBOX_H
#define AURALOG_SANDBOX_H

#include <sqlite3.h>

/* Put db in the sandbox: authorizer, limits, load_extension off,
 * defensive mode. SQLITE_OK or an error code. */
int sandbox_apply(sqlite3 *db);

/* sqlite3_prepare_v2 for a client's statement: what the authorizer sees
 * while it runs is the client's own SQL (a statement that runs more, as
 * VACUUM does, is authorized again while it steps). Clears sandbox_why
 * and starts sandbox_only_reads afresh. */
int sandbox_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char **tail);

/* Why the sandbox refused the last statement prepared on this thread
 * (when it was prepared or while it ran): one line for the client, or
 * NULL if it refused nothing. */
const char *sandbox_why(void);

/* Did the last statement prepared on this thread only read: SELECT, with
 * the columns, functions and recursive CTEs it uses, or BEGIN, COMMIT,
 * ROLLBACK? (With sqlite3_stmt_readonly, what a reader thread may run.) */
int sandbox_only_reads(void);

#endif
