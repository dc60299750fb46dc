/*
 * blfile.h: the community binlog's file (issue 29, seed 003): the binlog
 * as MySQL keeps it, a local append-only file of the engine, written in a
 * two-phase commit with the redo. (The enhanced binlog, in the storage
 * tier, needs none of this; see vfs/binlog.h.)
 *
 * A commit in community mode goes:
 *   1. prepare: the transaction's redo records are made durable in
 *      storage, without their commit record;
 *   2. its events (a packed Auralog__BinlogTxn) are appended here with its
 *      XID (the commit LSN), and the file is fdatasync'd: THE COMMIT POINT;
 *   3. the commit record goes to storage.
 * After a crash the engine reads this whole file, frame by frame, to learn
 * which XIDs it holds: a prepared transaction whose XID is here rolls
 * forward, any other rolls back. That scan reads and checks every byte, so
 * its cost grows with the binlog (seed 003: 303 s of binlog recovery after
 * a 1 GB transaction, Aurora MySQL with the community binlog); the
 * enhanced binlog removes it. blf_open reports what it cost.
 *
 * Interface (each returns 0, or -1 / NULL with a one-line reason in why):
 *   blf_open       open or create; scan every frame from the start, fn
 *                  for each good one; cut a torn last frame; refuse a file
 *                  damaged before its end
 *   blf_append     write one frame (xid above every earlier one), no sync;
 *                  *ticket: where the frame ends, for blf_sync
 *   blf_sync       return once the file is durable up to ticket: group
 *                  commit, one fdatasync for every frame appended so far
 *   blf_read_from  a consumer's read by path: frames with xid > after, in
 *                  order; read-only; stops at a torn tail
 *   blf_read_range the same, but no frame above upto (a live writer's
 *                  blf_stats().synced_xid: never a frame not yet durable)
 *   blf_read_batch a consumer's next batch: about max bytes of frames
 *                  with xid > after, resumed where the last batch ended
 *                  (a cursor), not from the start of the file
 *   blf_size, blf_stats, blf_close
 *
 * Threads: append, sync, size and stats may be called from any
 * thread at once; open and close from one. Appends must come in XID order
 * (the caller's commit order): one with an XID not above the last one is
 * refused, nothing written.
 *
 * After a failed fdatasync the handle is broken (every later call fails,
 * saying why): the kernel may have dropped the pages it could not write,
 * so a second fdatasync would prove nothing; only a reopen (a new scan) tells
 * what the file holds. blfile.c says the format and the rules.
 */
#ifndef AURALOG_BLFILE_H
#define AURALOG_BLFILE_H

#include <stddef.h>
#include <stdint.h>

#include "param.h"

#define BLF_PAYLOAD_MAX BINLOG_TXN_MAX  /* most bytes one frame carries */

struct blfile;

/* A good frame: its xid, payload (valid during the call only) and the
 * offset of its header in the file. */
typedef void (*blf_frame_fn)(void *arg, uint64_t xid, const uint8_t *p, size_t n,
                             uint64_t off);

/* What blf_open's scan found, and what it cost. */
struct blf_scan {
  uint64_t frames;           /* good frames handed to fn */
  uint64_t bytes;            /* bytes of the file read and checked (its size as found) */
  uint64_t first_xid;        /* the first and last good frames' XIDs (0: none) */
  uint64_t last_xid;
  uint64_t usec;             /* the scan took this long (and the cut, and the sync) */
  int torn;                  /* a torn tail was cut: */
  uint64_t torn_at;          /* ... here (the file's size now) ... */
  uint64_t torn_bytes;       /* ... this many bytes */
};

struct blf_stats {
  uint64_t appends;          /* frames appended since open */
  uint64_t bytes;            /* ... their bytes, headers included */
  uint64_t syncs;            /* fdatasyncs blf_sync made */
  uint64_t joined;           /* blf_sync calls another's fdatasync covered */
  uint64_t sync_usec;        /* time inside those fdatasyncs, in all */
  uint64_t size;             /* the file's size */
  uint64_t last_xid;         /* the last frame's XID (0: none) */
  uint64_t synced_xid;       /* every frame up to this XID is durable */
};

/* Open the binlog at path (created, empty, if missing), lock it against
 * other processes, and scan it (fn may be NULL; scan may be NULL). */
struct blfile *blf_open(const char *path, blf_frame_fn fn, void *arg, struct blf_scan *scan,
                        char *why, size_t whylen);

/* Append buf[0..len) as the frame of xid, written but not synced. On an
 * error the file is as it was (a partial frame is cut back). */
int blf_append(struct blfile *f, uint64_t xid, const void *buf, size_t len, uint64_t *ticket,
               char *why, size_t whylen);

/* Return once every frame up to ticket (blf_append's) is durable. */
int blf_sync(struct blfile *f, uint64_t ticket, char *why, size_t whylen);

/* Frames of the binlog at path with after < xid, in order, to fn; the
 * scan's checks, but read-only: a torn tail ends the read (no error). */
int blf_read_from(const char *path, uint64_t after, blf_frame_fn fn, void *arg, char *why,
                  size_t whylen);
/* ... and xid <= upto. */
int blf_read_range(const char *path, uint64_t after, uint64_t upto, blf_frame_fn fn, void *arg,
                   char *why, size_t whylen);

/* Where a consumer's last batch ended: the last frame it looked at (its
 * offset and XID; zeros: none yet). */
struct blf_cursor {
  uint64_t off, xid;
};
/* The frames with xid > after, in order, to fn, until they hold max
 * payload bytes (0: all), walking from cur's frame if it is still there
 * (else from the start); cur moves to the last frame looked at. A consumer
 * reading a file of n frames in batches reads each frame about once, not
 * n / batch times. */
int blf_read_batch(const char *path, struct blf_cursor *cur, uint64_t after, size_t max,
                   blf_frame_fn fn, void *arg, char *why, size_t whylen);

/* Cut every frame with an XID above xid, durably (*cut: the bytes cut):
 * the engine's, after a recovery that did not roll forward the frame's
 * transaction (community.c). No append or sync may run meanwhile. */
int blf_cut_after(struct blfile *f, uint64_t xid, uint64_t *cut, char *why, size_t whylen);

uint64_t blf_size(const struct blfile *f);
void blf_stats(const struct blfile *f, struct blf_stats *st);
/* Sync what was appended (errors are lost: sync first to know) and close.
 * NULL: nothing. */
void blf_close(struct blfile *f);

#endif
