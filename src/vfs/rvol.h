/*
 * rvol.h: a read replica's volume inside the auralog VFS (paper §4.2.4).
 *
 * The replica process (vfs/replica.c) opens one before any SQLite
 * connection: it registers the volume's shared VFS state (vfs_int.h, a
 * struct vvol) under the volume's name, so that every connection the
 * replica opens on file:NAME?vfs=auralog reads through it, read-only:
 *   - a page in the buffer cache is served from it; a miss is read from
 *     one segment at the replica's read point (vol_read_at), with `need`
 *     from the apply rule (vfs/rapply.h);
 *   - the writer's stream (rvol_push: ReplicaStart, ReplicaFeed) goes to an
 *     apply thread, which moves the read point a whole MTR (or several) at
 *     a time, never above the VDL told, applying records to cached pages
 *     only (rapply.c);
 *   - writes are refused (the connections are read-only; the VFS refuses
 *     the RESERVED lock too).
 *
 * The snapshot rule (invariant R3): SQLite keeps its own page cache per
 * connection and re-validates it only at the start of a read transaction,
 * by comparing the 16 bytes at offset 24 of page 1 (the file change
 * counter, bumped by every write transaction of the writer in rollback
 * journal mode, and the size) with what it last saw, as when another
 * process writes the file. So the read point must not move while any
 * connection holds a SHARED lock: the apply thread takes the read point
 * forward only in a window with no SHARED lock held, and no new SHARED
 * lock is granted while it waits for one (as SQLite's PENDING lock works).
 * Every read of a transaction, from SQLite's cache, this buffer cache or
 * storage, is then as of one read point, and the next transaction sees a
 * new page 1 whenever the point moved past a commit. A long reader delays
 * the replica (its lag grows), never the writer; and only for
 * REPLICA_HOLD_MS: then the point moves anyway, and that transaction's
 * next read that reaches the VFS fails ("the replica has moved on"), so
 * it sees its old snapshot or an error, never a mix of two points.
 *
 * Catching up (invariant R4): a replica that reconnects, or whose stream
 * broke (a gap: the writer dropped it for being slow, REPLICA_QUEUE_MAX),
 * subscribes again and starts from the new ReplicaStart: in a window it
 * drops its whole buffer cache and serves nothing until the VDL reaches
 * the new start, then reads every page from storage at that point. Why
 * not replay what it missed: the writer keeps no log for replicas (it
 * must never wait for one, nor hold memory for a dead one), storage
 * serves any page at any point at or above the PGMRPL, and the cache is
 * only an optimisation: a cold cache costs reads, a replayed one would
 * cost a second log protocol.
 */
#ifndef AURALOG_RVOL_H
#define AURALOG_RVOL_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct rvol;

struct rvol_stats {
  int serving;                /* it has a read point */
  uint64_t epoch;             /* its writer's */
  uint64_t rp;                /* the read point: the VDL applied through */
  uint64_t vdl;               /* the highest VDL told */
  uint64_t echo_us;           /* sent_us of the newest feed applied whole */
  uint64_t applied, skipped, mtrs, pending, resyncs;
  uint64_t expired;           /* read transactions it moved past (rvol.c window_open) */
  int want_resync;            /* its stream broke: subscribe again */
  char why[200];              /* ... why */
};

/* Open volume name (at the coordinator coord) as a replica, with a buffer
 * cache of cache_pages pages. on_applied(arg) is called on the apply
 * thread whenever the read point moved or the stream broke. NULL with a
 * reason on failure. */
struct rvol *rvol_open(const char *coord, const char *name, size_t cache_pages,
                       void (*on_applied)(void *arg), void *arg, char *why, size_t whylen);

/* A message of the writer's stream (ReplicaStart or ReplicaFeed), copied;
 * the apply thread takes it. Any thread; never blocks on a reader. */
void rvol_push(struct rvol *r, const Env *env);

/* The stream is gone (the connection closed): feeds are ignored until the
 * next ReplicaStart. */
void rvol_unsubscribed(struct rvol *r);

void rvol_get_stats(struct rvol *r, struct rvol_stats *st);

#endif
