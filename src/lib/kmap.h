/*
 * kmap.h: a hash map from a key (a 64-bit and a 32-bit part) to a 32-bit
 * value, open-addressed with linear probing, for the lookups that must not
 * grow with what a process holds: a storage node finds its segment of
 * (volume, pg) (node/node.c, node/gossip.c); the writer finds its Append
 * in flight by request id (vfs/vcore.c).
 *
 * Expected O(1) per operation: the table stays at most half full (live and
 * deleted slots together), doubling or rebuilding when it would not be.
 * A zeroed struct kmap is an empty map. Values are the caller's (an index
 * into its own array, say); KMAP_NONE is reserved.
 */
#ifndef AURALOG_KMAP_H
#define AURALOG_KMAP_H

#include <stddef.h>
#include <stdint.h>

#define KMAP_NONE UINT32_MAX

struct kslot {
  uint64_t a;
  uint32_t b;
  uint32_t v;                  /* KMAP_NONE: empty; KMAP_NONE - 1: deleted */
};

struct kmap {
  struct kslot *t;
  size_t cap;                  /* a power of two, or 0 */
  size_t n;                    /* live keys */
  size_t used;                 /* live and deleted slots */
};

/* The value of (a, b), or KMAP_NONE. */
uint32_t kmap_get(const struct kmap *m, uint64_t a, uint32_t b);
/* Set (a, b) to v (v < KMAP_NONE - 1), adding the key if new. */
void kmap_put(struct kmap *m, uint64_t a, uint32_t b, uint32_t v);
/* Forget (a, b); 1 if it was there. */
int kmap_del(struct kmap *m, uint64_t a, uint32_t b);
void kmap_free(struct kmap *m);

#endif
