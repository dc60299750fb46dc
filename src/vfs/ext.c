/*
 * ext.c: build/auralog.so, a SQLite loadable extension that registers the
 * auralog VFS, for the sqlite3 shell (.load build/auralog) and Python
 * (load_extension). Then open file:NAME?vfs=auralog&coord=ADDR.
 *
 * Embedded use has no engine server: a commit waits in the VFS until it is
 * durable (vdl >= commit LSN), or fails after the commit deadline.
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "net/keyfile.h"
#include "lib/log.h"
#include "vfs/vfs.h"

/* The extension links the same system libsqlite3 as its host (the sqlite3
 * shell, Python), so the VFS code calls SQLite directly. */
int sqlite3_auralog_init(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
  (void)db;
  SQLITE_EXTENSION_INIT2(api);
  log_quiet(1);
  /* Whoever loads the extension opens volumes as their writer: the
   * operator, holding DIR/operator.key ($AURALOG_OPERATOR, or beside the
   * cluster key: keyfile.h). Without it the coordinator refuses the open
   * and says why (coord/roles.c). */
  op_use(1);
  if (auralog_vfs_register(0, "", 0) != SQLITE_OK) {
    *err = sqlite3_mprintf("auralog: cannot register the VFS");
    return SQLITE_ERROR;
  }
  return SQLITE_OK_LOAD_PERMANENTLY;
}

int sqlite3_extension_init(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
  return sqlite3_auralog_init(db, err, api);
}
