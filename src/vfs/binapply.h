/*
 * binapply.h: apply the binlog's transactions (BinlogTxn, capture.h) to a
 * database file of stock SQLite, each whole or not at all, each once
 * (binapply.c says how). What `auralog binlog apply --into FILE` will be
 * built on; the unit test replicates a random workload with it.
 */
#ifndef AURALOG_BINAPPLY_H
#define AURALOG_BINAPPLY_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "auralog.pb-c.h"

/* The table that holds a file's position (one row). */
#define BINAPPLY_TABLE "_auralog_binlog"

/* Open path (stock SQLite, the default VFS; created if missing) ready to
 * apply: binapply_init done. NULL with err (n bytes) on an error. */
sqlite3 *binapply_open(const char *path, char *err, size_t n);
/* Make a connection the caller opened ready: triggers off (the events
 * hold what the source's triggers did), foreign keys off, the position
 * table made. SQLITE_OK, or an error code with err. */
int binapply_init(sqlite3 *db, char *err, size_t n);
/* The last transaction applied: its commit LSN and how many events it
 * had (0 and 0: none yet). 0, or -1 with nothing set. */
int binapply_position(sqlite3 *db, uint64_t *lsn, uint64_t *events);
/* Apply t in one transaction with the new position: 1 applied; 0 already
 * applied (its commit LSN is at or below the position: nothing changes);
 * -1 not applied (err says why: an event that does not fit the file, as
 * a row that is not there, is a replica that went its own way). */
int binapply_txn(sqlite3 *db, const Auralog__BinlogTxn *t, char *err, size_t n);
/* Apply t[0..nt) in one SQLite transaction (one sync), each as
 * binapply_txn would, in order; *done: how many of them the file now holds
 * (applied, or at or below its position already). Returns how many were
 * applied, or -1 with err if t[*done] did not fit (those before it are
 * committed with the position at the last of them). */
int binapply_txns(sqlite3 *db, Auralog__BinlogTxn *const *t, size_t nt, size_t *done,
                  char *err, size_t n);

#endif
