/*
 * hfile.h: the simulator's file for a storage node's hot log
 * (node/hotlog.h's struct hl_file, in memory), with crash semantics.
 *
 * Like the simulated disk (disk.h), it outlives the node's process: a
 * crash calls hfile_crash() and the next start opens the same file. The
 * model is a page cache over a disk:
 *   - pwrite changes what the process reads at once (the cache), and is
 *     remembered as unsynced;
 *   - sync (fdatasync) puts every unsynced write on the disk;
 *   - hfile_crash(r) keeps what is on the disk and a prefix, r bytes long
 *     modulo their total, of the unsynced writes in the order they were
 *     made: a frame half written, the torn tail hl_open must stop at;
 *   - allocate and truncate change the size at once, durably (metadata:
 *     the model does not lose them);
 *   - hfile_arm() makes the next sync fail (EIO) without syncing, and the
 *     file then refuses everything until the crash: the machine died while
 *     the group commit's frame was being written (world.c then crashes
 *     the node), so a crash can land between a frame's write and its sync;
 *   - hfile_corrupt(r) flips one bit of the bytes written so far (bit rot).
 * Deterministic: only r decides what a crash keeps or a flip hits.
 */
#ifndef AURALOG_SIM_HFILE_H
#define AURALOG_SIM_HFILE_H

#include <stdint.h>

#include "node/hotlog.h"

struct hfile;

struct hfile_stats {
  uint64_t writes, syncs;
  uint64_t crashes;
  uint64_t torn;             /* crashes that kept part of an unsynced write */
  uint64_t corruptions;
};

struct hfile *hfile_new(void);
void hfile_free(struct hfile *f);
/* The file to hand to hl_open; closing it frees nothing. */
struct hl_file hfile_file(struct hfile *f);
void hfile_crash(struct hfile *f, uint64_t r);
void hfile_arm(struct hfile *f, int on);
/* An armed sync has failed: the node must crash now. */
int hfile_dead(const struct hfile *f);
/* Flip a bit among the bytes up to the end of the last write. Returns 1,
 * or 0 if nothing was written. */
int hfile_corrupt(struct hfile *f, uint64_t r);
const struct hfile_stats *hfile_stats(const struct hfile *f);

#endif
