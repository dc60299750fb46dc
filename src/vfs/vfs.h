/*
 * vfs.h: the "auralog" SQLite VFS (paper §3.2: the database tier writes
 * only redo).
 *
 * Open a database as file:NAME?vfs=auralog&coord=ADDR: NAME is the volume.
 * SQLite's page writes go to an overlay; at the commit boundary each dirty
 * page is diffed against its committed image and the ranges that changed
 * are shipped as one mini-transaction (vfs/vwait.c vol_ship). Pages are never
 * shipped, only page deltas.
 */
#ifndef AURALOG_VFS_H
#define AURALOG_VFS_H

#include <stdint.h>
#include <sqlite3.h>

/* Register the VFS (as the default if make_default). engine_addr is what
 * status shows for the volumes opened here ("" for none). In async mode
 * (the engine server) a commit returns as soon as its redo is queued and
 * the caller waits for durability itself (AURALOG_FCNTL_COMMIT_LSN); in
 * the default mode a commit waits in the VFS until it is durable. */
int auralog_vfs_register(int make_default, const char *engine_addr, int async);

/* Why the last open of a volume through the VFS failed, one line ("" if
 * none did): SQLite's own message is only "unable to open database file".
 * The string stays valid until the next call. */
const char *auralog_vfs_open_error(void);

/* Ship whole pages instead of page deltas (`auralog engine --ship pages`):
 * every changed page of a commit goes whole, as a mirrored database writes
 * pages (paper Table 1). A baseline for `auralog bench`; call before the
 * first commit. */
void auralog_vfs_ship_pages(int on);

/* sqlite3_file_control(db, "main", AURALOG_FCNTL_COMMIT_LSN, &u64): the
 * commit LSN of the last transaction this connection committed (0: none
 * since the last call), and reset it. */
#define AURALOG_FCNTL_COMMIT_LSN 0x41550001

/* The last error the VFS met on this connection's main file, as text. */
#define AURALOG_FCNTL_LAST_ERROR 0x41550002

/* The struct volume behind this connection's main file (void **). */
#define AURALOG_FCNTL_VOLUME 0x41550003

/* sqlite3_file_control(db, "main", AURALOG_FCNTL_COMMIT_TIMES, &t): when
 * the last commit's FCNTL_SYNC came (every page written: the SQL is done),
 * in monotonic us (now_us()); 0 if none since the last call, which resets
 * it. The volume knows the rest (vol_commit_times). The engine's commit
 * stage timings (vfs/stages.h). */
#define AURALOG_FCNTL_COMMIT_TIMES 0x41550004
struct auralog_commit_times {
  uint64_t sync_us;
};

/* sqlite3_file_control(db, "main", AURALOG_FCNTL_SNAP_GONE, &text): on a
 * read replica, NULL, or why this connection's open read transaction can
 * read no more (cancelled past --max-read-age, or the read point moved
 * on: vfs/rvol.h); the caller rolls it back and tells its client. */
#define AURALOG_FCNTL_SNAP_GONE 0x41550005

/* The client whose request this thread runs now (an address), so that a
 * replica can say which client's read transaction holds its read point
 * (status). Thread-local; NULL clears it. */
void auralog_vfs_set_client(const char *who);

#endif
