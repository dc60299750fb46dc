/*
 * sandbox.c: what a client's SQL may reach on the engine's SQL port
 * (sandbox.h).
 *
 * The engine runs SQL for whoever reaches its port (`auralog sql`), as the
 * engine's Unix user. Stock SQLite lets a statement reach far past the
 * volume: ATTACH 'file:/any/path?vfs=unix' creates and writes a database
 * file wherever that user may write, VACUUM INTO '/path' writes a copy of
 * the volume there, and load_extension() runs any shared library inside
 * the engine. None of that belongs to a database tier whose only storage
 * is the volume (Aurora's instances have no such door either). So every
 * connection the engine opens for clients (worker.c, open_db) gets,
 * through SQLite's own mechanisms:
 *   - an authorizer (sqlite3_set_authorizer) that refuses ATTACH and
 *     DETACH, VACUUM INTO, load_extension() and PRAGMA
 *     temp_store_directory (process-wide: it would put every temporary
 *     file of the engine in a directory of the client's choosing);
 *   - SQLITE_LIMIT_ATTACHED 1: room for the one database plain VACUUM
 *     attaches (its temporary copy), and no more, should the authorizer
 *     ever let one through;
 *   - SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION off, and the load_extension()
 *     SQL function off (both are SQLite's defaults; said here, not
 *     assumed);
 *   - SQLITE_DBCONFIG_DEFENSIVE on: no writable_schema, no journal_mode=OFF,
 *     nothing else that corrupts a database on purpose (VACUUM lifts it
 *     for itself, so VACUUM still works).
 * URI filenames and VFS names other than the engine's own can only come
 * in through ATTACH and VACUUM INTO, so refusing those refuses them too.
 *
 * Plain VACUUM stays: it rebuilds the volume through a temporary database
 * that it attaches as '' while it runs. SQLite 3.40 shows the authorizer
 * VACUUM's work as an ATTACH of its target, '' for plain VACUUM and the
 * file for VACUUM INTO, while the VACUUM steps; a client's own ATTACH is
 * authorized when its statement is prepared. So an ATTACH during
 * sandbox_prepare is the client's, and refused whatever it names; one
 * while a statement steps is VACUUM's, refused unless its target is ''.
 *
 * A refusal reaches the client as one line (sandbox_why), not SQLite's
 * "not authorized". The loadable extension (ext.c: build/auralog.so
 * loaded into sqlite3 or Python) is a local user's own SQLite, with that
 * user's rights, and keeps all of it.
 *
 * The authorizer sees every action a statement takes, so it also tells
 * the worker whether a statement only reads (sandbox_only_reads): such a
 * statement may run on a reader thread beside the writer (worker.c); and
 * which schema change it makes, for the journal (ddl.c) and the binlog;
 * and which savepoint it makes, releases or rolls back to, for the
 * binlog's change capture (capture.c).
 *
 * State is per thread: a connection runs on one thread at a time, and
 * SQLite calls the authorizer on the thread that prepares or steps.
 */
#include <string.h>

#include "vfs/capture.h"
#include "vfs/ddl.h"
#include "vfs/sandbox.h"

static __thread int preparing;      /* inside sandbox_prepare */
static __thread int only_reads;     /* the statement prepared did nothing but read */
static __thread const char *why;    /* the refusal, for the client */

static int refuse(const char *reason)
{
  why = reason;
  return SQLITE_DENY;
}

static int authorize(void *arg, int action, const char *a1, const char *a2, const char *db,
                     const char *trigger)
{
  (void)arg;
  (void)trigger;
  if (preparing) {
    ddl_seen(action, a1, a2, db);   /* a schema change, for the journal (ddl.c) */
    capture_seen(action, a1, a2);   /* a savepoint, for the binlog (capture.c) */
  }
  switch (action) {
  case SQLITE_SELECT:
  case SQLITE_READ:
  case SQLITE_RECURSIVE:
  case SQLITE_TRANSACTION:
    return SQLITE_OK;
  case SQLITE_FUNCTION:
    if (a2 && sqlite3_stricmp(a2, "load_extension") == 0)
      return refuse("load_extension() is not allowed on the engine's SQL port: it would run "
                    "a library inside the engine (load extensions into your own sqlite3, "
                    "beside the auralog extension)");
    return SQLITE_OK;
  case SQLITE_ATTACH:
    only_reads = 0;
    if (preparing)
      return refuse("ATTACH is not allowed on the engine's SQL port (use the sqlite3 "
                    "extension for a local database)");
    if (a1 && *a1 == 0)
      return SQLITE_OK;        /* plain VACUUM's temporary copy */
    return refuse("VACUUM INTO is not allowed on the engine's SQL port: it would write a "
                  "file on the engine's machine (plain VACUUM is allowed; copy a volume "
                  "with the sqlite3 extension)");
  case SQLITE_DETACH:
    only_reads = 0;
    if (preparing)
      return refuse("DETACH is not allowed on the engine's SQL port (nothing can be "
                    "attached there)");
    return SQLITE_OK;          /* VACUUM letting its temporary copy go */
  case SQLITE_PRAGMA:
    only_reads = 0;
    if (a1 && (sqlite3_stricmp(a1, "temp_store_directory") == 0 ||
               sqlite3_stricmp(a1, "data_store_directory") == 0))
      return refuse("PRAGMA temp_store_directory (and data_store_directory) is not allowed "
                    "on the engine's SQL port: it would move every temporary file of the "
                    "engine");
    return SQLITE_OK;
  default:
    only_reads = 0;
    return SQLITE_OK;
  }
}

int sandbox_apply(sqlite3 *db)
{
  int rc = sqlite3_set_authorizer(db, authorize, NULL);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 1);
  if (rc == SQLITE_OK)
    rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)0);
  if (rc == SQLITE_OK)
    rc = sqlite3_enable_load_extension(db, 0);
  if (rc == SQLITE_OK)
    rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
  return rc;
}

int sandbox_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char **tail)
{
  why = NULL;
  only_reads = 1;
  ddl_stmt_begin();
  capture_stmt_begin();
  preparing = 1;
  int rc = sqlite3_prepare_v2(db, sql, -1, st, tail);
  preparing = 0;
  return rc;
}

const char *sandbox_why(void)
{
  return why;
}

int sandbox_only_reads(void)
{
  return only_reads;
}
