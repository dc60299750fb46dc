/*
 * restore_into.c: a restored volume loaded into a new volume of a
 * running cluster (restore.h restore_into_volume; `auralog restore
 * --into`, `auralog bench backup`).
 *
 * restore_build gives a stock SQLite file; a new volume is made from it
 * the way any client makes one: opened through the auralog VFS (opening
 * a volume that does not exist creates it, DESIGN.md §6) and written by
 * SQLite's online backup API, all pages in one step. So the copy is one
 * transaction of redo records like any commit's, quorum-written, with
 * an epoch from the coordinator: no back door into the nodes, and the
 * new volume is whole or absent (a failed step rolls back).
 *
 * The caller must act for the operator (keyfile.h op_use): only the
 * operator's writer gets an epoch (invariant 9).
 */
#include <sqlite3.h>
#include <stdio.h>

#include "backup/restore.h"
#include "vfs/vfs.h"

int restore_into_volume(const char *file, const char *coord, const char *newvol,
                        uint32_t pg_pages, char *why, size_t whylen)
{
  if (auralog_vfs_register(0, "", 0) != SQLITE_OK) {
    snprintf(why, whylen, "cannot register the auralog VFS");
    return -1;
  }
  char uri[512];
  snprintf(uri, sizeof uri, "file:%s?coord=%s&pg_pages=%u", newvol, coord, pg_pages);
  sqlite3 *src = NULL, *dst = NULL;
  int rc = sqlite3_open_v2(file, &src, SQLITE_OPEN_READONLY, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_open_v2(uri, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                         "auralog");
  if (rc != SQLITE_OK) {
    snprintf(why, whylen, "cannot open %.300s: %s", rc == SQLITE_OK || dst ? newvol : file,
             sqlite3_errmsg(dst ? dst : src));
  } else {
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (b == NULL) {
      snprintf(why, whylen, "cannot copy into %s: %s", newvol, sqlite3_errmsg(dst));
      rc = SQLITE_ERROR;
    } else {
      rc = sqlite3_backup_step(b, -1);
      sqlite3_backup_finish(b);
      if (rc != SQLITE_DONE) {
        snprintf(why, whylen, "copying into %s: %s", newvol, sqlite3_errmsg(dst));
      } else {
        rc = SQLITE_OK;
      }
    }
  }
  sqlite3_close(src);
  sqlite3_close(dst);
  return rc == SQLITE_OK ? 0 : -1;
}
