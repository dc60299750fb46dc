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
 * the replica (its lag grows), never the writer's commits: but while the
 * point stands still the replica's minimum read point holds the volume's
 * PGMRPL, so no storage node frees a record or a page version above it,
 * on any segment (seed 004: long queries on Aurora's replicas hold the
 * writer's purge back; here they hold node GC back). Hence the read-age
 * rule.
 *
 * The read-age rule (one rule for the operator, `auralog replica`):
 *   --max-read-age MS     how long a read transaction may hold the read
 *                         point, from its first read (its SHARED lock);
 *                         default REPLICA_MAX_READ_AGE_MS (5 s); 0: no limit
 *   --read-age-action A   what happens past it, once the point must move
 *                         (the writer committed meanwhile: a reader on an
 *                         idle volume holds nothing back, and is left be):
 *     cancel (default)    the transaction is cancelled: its next statement
 *                         fails with "this read transaction was cancelled
 *                         ... --max-read-age" and is rolled back (worker.c;
 *                         a statement running at that moment fails at its
 *                         next storage read), the log says whose it was,
 *                         and the point moves once no younger reader holds
 *                         it. So no reader holds the PGMRPL longer than MS.
 *     warn                the log warns once per transaction and status
 *                         shows it (held_ms past max_read_age_ms); the point
 *                         waits until the reader ends, however long: the
 *                         replica's lag, the PGMRPL and node GC with it
 *                         (what a lab shows, and `auralog bench replicas`
 *                         measures). New readers of that replica wait for
 *                         READ_DEADLINE_MS, then fail, naming the holder:
 *                         a replica has one read point.
 * Why cancel by default, at 5 s: a forgotten BEGIN on one replica must not
 * grow every node's storage without bound, and 5 s is as long as the
 * default statement timeout lets a single statement run, so only a
 * transaction left open between requests is ever cancelled. (Before this
 * rule the replica moved on after REPLICA_HOLD_MS from when the point
 * wanted to move and failed the old transaction's next storage read only:
 * a reader served from SQLite's own cache never heard.)
 * Status shows, per replica, its oldest read transaction: the client
 * (address) that holds it, for how long, how many hold the point, how
 * many were cancelled (status.c).
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

#include "net/wire.h"

struct rvol;

struct rvol_stats {
  int serving;                /* it has a read point */
  uint64_t epoch;             /* its writer's */
  uint64_t rp;                /* the read point: the VDL applied through */
  uint64_t vdl;               /* the highest VDL told */
  uint64_t echo_us;           /* sent_us of the newest feed applied whole */
  uint64_t applied, skipped, mtrs, pending, resyncs;
  uint64_t expired;           /* read transactions cancelled past the read-age limit */
  uint64_t warned;            /* ... or warned of (--read-age-action warn) */
  int max_age_ms, warn;       /* the rule (rvol_set_read_age) */
  int readers;                /* read transactions holding the read point now */
  char holder[64];            /* the client of the oldest of them ("" none) */
  uint64_t held_ms;           /* ... and how long it has held the point */
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

/* The read-age rule (above): max_age_ms (0: none), warn (1) or cancel (0). */
void rvol_set_read_age(struct rvol *r, int max_age_ms, int warn);

/* sent_us of the oldest feed telling a new VDL that was applied since the
 * last call (0: none): the ack's lag sample (feed.c), and reset. */
uint64_t rvol_take_echo(struct rvol *r);

#endif
