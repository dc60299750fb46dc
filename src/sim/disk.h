/*
 * disk.h: the simulator's disk: a storage node's kv (node/kv.h) in memory.
 *
 * One disk per simulated node. It outlives the node's process: when the
 * simulator crashes a node it calls disk_crash(), drops the node's memory
 * (its struct store included) and later opens a new store on the same
 * disk (store_open_kv(st, disk_kv(d), ...)), which finds what was
 * committed, as a real node finds its lmdb file after kill -9.
 *
 * The model:
 *   - a committed transaction is durable: it survives disk_crash();
 *   - the open write transaction is not: disk_crash() undoes it, as a
 *     process crash before lmdb's commit loses it (lmdb never shows a
 *     half-written transaction, so neither does this);
 *   - unless the store switched syncing off (kv_set_nosync, a node's store
 *     beside its hot log): then a commit is durable only once kv_sync()
 *     ran after it, and disk_crash() also undoes every commit since the
 *     last sync (disk_crash_keep(): all but a prefix of them, chosen by r),
 *     whole transactions, newest first;
 *   - disk_corrupt() is bit rot: one bit of one stored record flips, and
 *     stays flipped, so the store's CRC checks must catch it.
 *
 * Everything is deterministic: entries are kept in key order (memcmp, then
 * length: lmdb's order), databases in the order they were created, and no
 * address, clock or hash seed decides anything. The same calls give the
 * same results and the same counters on every run.
 */
#ifndef AURALOG_SIM_DISK_H
#define AURALOG_SIM_DISK_H

#include <stdint.h>

#include "node/kv.h"

struct disk;

struct disk_stats {
  uint64_t commits;          /* write transactions that changed something */
  uint64_t syncs;            /* device syncs they cost: one each */
  uint64_t crashes;          /* disk_crash() calls */
  uint64_t lost;             /* changes a crash undid (open and unsynced) */
  uint64_t lost_commits;     /* unsynced commits a crash undid */
  uint64_t corruptions;      /* values disk_corrupt() damaged */
};

struct disk *disk_new(void);
/* Free the disk and all it holds (no store may use it any more). */
void disk_free(struct disk *d);

/* The kv to hand to store_open_kv. It lives as long as the disk; closing
 * it (store_close) frees nothing: the disk keeps its data. One store at a
 * time. */
struct kv *disk_kv(struct disk *d);

/* The process using the disk crashed: undo the open write transaction and
 * end every transaction and cursor. Handles the dead store still holds
 * are stale: calls on them fail with KV_BADTXN, and ending them (abort,
 * cursor close) only frees them; disk_free frees any left. */
void disk_crash(struct disk *d);
/* The same, keeping a prefix of the unsynced commits: r % (n + 1) of the
 * n of them. */
void disk_crash_keep(struct disk *d, uint64_t r);

/* Flip one bit of one value of the "recs" database (the records, whose CRC
 * the store checks), chosen by r: r picks the value (in key order), then
 * the byte, then the bit. The damage is on the disk, committed or not.
 * Returns 1, or 0 if no record is stored. */
int disk_corrupt(struct disk *d, uint64_t r);
/* The same in the database called db (segs, format... hold no CRC: what
 * damage there does is the store's problem to find). */
int disk_corrupt_db(struct disk *d, const char *db, uint64_t r);

const struct disk_stats *disk_stats(const struct disk *d);
/* How many entries database db holds, committed or not (0 if no such db). */
size_t disk_entries(const struct disk *d, const char *db);

#endif
