/*
 * cache.h: pages by number, for the engine's buffer cache and for a write
 * transaction's overlay (paper §4.2.3).
 *
 * The buffer cache keeps the newest version of recently used pages with
 * their page LSN (the LSN of their newest change). Aurora writes no pages,
 * so eviction never writes anything back; instead a page may be evicted
 * only if its page LSN <= VDL: then everything in it is durable, and a
 * later miss can read it from storage as of the VDL and get the same bytes.
 * A page changed by a commit that is not yet durable stays until it is.
 *
 * Pure: memory only. Interface: pm_init/pm_free, pm_get, pm_put, pm_del,
 * pm_clear, pm_evict, and pm_sorted (the entries by page number).
 */
#ifndef AURALOG_CACHE_H
#define AURALOG_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct cpage {
  uint32_t page_no;
  uint32_t flags;        /* overlay: REC_ZERO if the page starts from zeros */
  uint64_t lsn;          /* cache: page LSN */
  uint8_t *data;         /* page_size bytes */
  uint8_t *before;       /* overlay: committed image (NULL: zeros) */
  uint8_t used;          /* clock bit: touched since the hand passed */
};

struct pagemap {
  struct cpage *e;       /* entries, unordered */
  size_t n, cap;
  uint32_t *idx;         /* open addressing: entry index + 1, 0 = empty */
  size_t nidx;           /* a power of two, > 2n */
  uint32_t page_size;
  size_t hand;           /* clock hand for eviction */
};

void pm_init(struct pagemap *m, uint32_t page_size);
void pm_free(struct pagemap *m);

/* The entry for page_no, or NULL. Marks it used. */
struct cpage *pm_get(struct pagemap *m, uint32_t page_no);

/* The entry for page_no, made (data zeroed, lsn 0) if missing. Pointers to
 * entries are valid until the next pm_put, pm_del or pm_evict. */
struct cpage *pm_put(struct pagemap *m, uint32_t page_no);

void pm_del(struct pagemap *m, uint32_t page_no);
void pm_clear(struct pagemap *m);

/* Evict (clock order) until at most limit pages remain, but only pages
 * with lsn <= vdl. Returns how many were evicted. */
size_t pm_evict(struct pagemap *m, size_t limit, uint64_t vdl);

/* Pointers to all entries, sorted by page number (malloc'd; free it). */
struct cpage **pm_sorted(struct pagemap *m);

#endif
