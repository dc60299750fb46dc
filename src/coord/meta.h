/*
 * meta.h: the coordinator's durable metadata, in an ordered key-value store
 * (node/kv.h): lmdb in a directory for `auralog coord` (meta_open), or the
 * simulator's in-memory disk (meta_open_kv with disk_kv(), sim/disk.h).
 *
 * Databases:
 *   nodes  id   -> NodeInfo (id, az, addr)
 *   vols   name -> Volume (id, page size, epoch, PGs and their segments)
 *   ctr    "next_volume_id" -> u64 (big-endian)
 * Each put is its own transaction, committed (fsynced) before the
 * coordinator answers: an epoch handed out is never handed out again.
 */
#ifndef AURALOG_META_H
#define AURALOG_META_H

#include "node/kv.h"
#include "net/wire.h"

struct meta {
  struct kv *kv;
  unsigned nodes, vols, ctr;   /* database handles (kv_db) */
  int batched, dirty;          /* in a batch (meta_batch); it wrote something */
};

/* lmdb in directory dir (created if missing). */
int meta_open(struct meta *m, const char *dir, char *why, size_t whylen);
/* On kv, which the meta takes: meta_close closes it, and so does a failed
 * meta_open_kv. Returns 0, or -1 with a reason. */
int meta_open_kv(struct meta *m, struct kv *kv, char *why, size_t whylen);
void meta_close(struct meta *m);

/* Batched writes (on): later puts commit without a sync, until the batch
 * ends (off), which makes all of them durable with one synced commit. */
int meta_batch(struct meta *m, int on, char *why, size_t whylen);
int meta_put_node(struct meta *m, const Auralog__NodeInfo *n, char *why, size_t whylen);
/* Store v under its name; on success return it unpacked again (a fresh,
 * self-contained copy the caller owns), else NULL with a reason. */
Auralog__Volume *meta_put_volume(struct meta *m, const Auralog__Volume *v,
                                 char *why, size_t whylen);
/* Forget volume name. Returns 0, or -1 with a reason. */
int meta_del_volume(struct meta *m, const char *name, char *why, size_t whylen);

/* A new volume id, durably taken. 0 on failure. */
/* Was a volume of this name dropped (and not created again since)?
 * forget: clear that (it is being created again, on purpose). */
int meta_dropped(struct meta *m, const char *name, int forget);
uint64_t meta_next_volume_id(struct meta *m, char *why, size_t whylen);

/* Every stored node / volume, unpacked, handed to fn (which owns it). */
int meta_load(struct meta *m, void (*node_fn)(void *, Auralog__NodeInfo *),
              void (*vol_fn)(void *, Auralog__Volume *), void *arg,
              char *why, size_t whylen);

#endif
