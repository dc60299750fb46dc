/*
 * hotlog.h: a storage node's hot log (paper §3.3, Fig. 4 step 2: "persist
 * and ack"). An append-only file of checksummed frames, one frame per group
 * commit, made durable with one fdatasync; the node acknowledges from it,
 * and lmdb, written without its own syncs, catches up at checkpoints.
 * hotlog.c's opening comment says why, the frame format and the rules.
 *
 * Interface:
 *   hl_file_posix      the file on a real disk (pwrite, fdatasync, ...)
 *   hl_open            scan the file: call fn for every whole frame of the
 *                      current generation, in order; skip (and report)
 *                      damaged ones in the middle; stop at the torn tail
 *   hl_append          write one frame after the last, fdatasync it
 *   hl_reset           start a new generation at offset 0 (a checkpoint:
 *                      every frame before is dead from then on)
 *   hl_close           close the file
 *
 * File I/O goes through struct hl_file (a tiny vtable): POSIX here, and
 * the simulator's in-memory file with crash semantics (sim/hfile.h), so
 * the same framing and scan code runs under both.
 */
#ifndef AURALOG_HOTLOG_H
#define AURALOG_HOTLOG_H

#include <stddef.h>
#include <stdint.h>

/* What the hot log needs of a file. Each returns 0 or a positive errno. */
struct hl_file_ops {
  int (*pwrite)(void *ctx, const void *buf, size_t n, uint64_t off);
  /* Reads up to n bytes at off into buf; *got: how many (short at the end). */
  int (*pread)(void *ctx, void *buf, size_t n, uint64_t off, size_t *got);
  int (*sync)(void *ctx);                     /* fdatasync */
  int (*size)(void *ctx, uint64_t *size);
  int (*allocate)(void *ctx, uint64_t off, uint64_t len);  /* reserve, zero-filled */
  int (*truncate)(void *ctx, uint64_t len);
  void (*close)(void *ctx);
};

struct hl_file {
  const struct hl_file_ops *ops;
  void *ctx;
};

/* The frame header (hotlog.c says what each field is). */
#define HL_HDR 28

struct hotlog {
  struct hl_file f;
  uint64_t gen;              /* the current generation */
  uint64_t seq;              /* the next frame's sequence number */
  uint64_t pos;              /* where the next frame goes */
  uint64_t alloc;            /* bytes of the file reserved (allocate) */
  uint64_t chunk;            /* reserve this much more when full */
  /* Counters. */
  uint64_t syncs;            /* fdatasyncs made (appends and resets) */
  uint64_t appends;          /* frames appended */
  uint64_t damaged;          /* frames skipped as damaged by hl_open */
  uint64_t replayed;         /* whole frames hl_open handed to fn */
  uint8_t *wbuf;             /* header + payload of the frame being written */
  size_t wcap;
};

/* A whole frame: seq and its payload (valid during the call only). */
typedef void (*hl_frame_fn)(void *arg, uint64_t seq, const uint8_t *p, size_t n);

/* The file at path (created if missing), for hl_open. Returns 0, or -1
 * with a reason. */
int hl_file_posix(const char *path, struct hl_file *f, char *why, size_t whylen);

/* Take f (hl_close closes it; a failed open does too) and scan it (see
 * hotlog.c): fn(arg, ...) for every whole frame after the generation's
 * start, in order. chunk: preallocation step in bytes. Returns 0, or -1
 * with a reason (the file could not be read). */
int hl_open(struct hotlog *h, struct hl_file f, uint64_t chunk, hl_frame_fn fn,
            void *arg, char *why, size_t whylen);

/* Write payload p[0..n) as the next frame and fdatasync it: once this
 * returns 0 the frame survives a crash. On an error nothing moves (the
 * next append goes to the same place, with the same number). Returns 0 or
 * a positive errno (why says what failed). */
int hl_append(struct hotlog *h, const void *p, size_t n, char *why, size_t whylen);

/* Start generation gen+1 at offset 0, durably (its first frame, empty, is
 * written and synced): every frame of the older generations is dead, and
 * a scan stops where they begin. The caller has made what they held
 * durable elsewhere first (store.c: lmdb, synced). shrink: if the file
 * grew past this many bytes, cut it back to it (0: never). Returns 0 or
 * a positive errno. */
int hl_reset(struct hotlog *h, uint64_t shrink, char *why, size_t whylen);

/* Bytes of frames in the current generation (its start frame included). */
static inline uint64_t hl_used(const struct hotlog *h)
{
  return h->pos;
}

void hl_close(struct hotlog *h);

/* For the tests: is buf[0..n) at off a whole frame of generation gen with
 * number seq? (The scan's test, hotlog.c.) *len: its payload length. */
int hl_frame_ok(const uint8_t *buf, size_t n, uint64_t off, uint64_t gen, uint64_t seq,
                uint32_t *len);

#endif
