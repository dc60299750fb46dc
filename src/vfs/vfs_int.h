/*
 * vfs_int.h: the inside of the auralog VFS (vfs.h). Its files share it:
 *   vfs.c      the main database file: pages through the overlay and the
 *              buffer cache, the commit (diff and ship), locks
 *   journal.c  the rollback journal: a heap file
 *   vfsreg.c   the VFS itself: registration, xOpen (a volume from its
 *              URI, the journal, anything else to the default VFS),
 *              xDelete, xAccess; the volumes open in this process
 * Nothing else includes it.
 */
#ifndef AURALOG_VFS_INT_H
#define AURALOG_VFS_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "param.h"
#include "vfs/cache.h"
#include "vfs/diff.h"
#include "vfs/vfs.h"

/* A volume open in this process, shared by its connections. */
struct vvol {
  char name[NAME_MAX_LEN + 1];
  int refs;
  struct volume *vol;
  uint32_t ps;                 /* volume page size */
  pthread_mutex_t mu;          /* guards everything below */
  struct pagemap cache;        /* buffer cache: committed pages + page LSN */
  size_t cache_pages;          /* its size (URI cache_pages=N, default CACHE_PAGES) */
  uint64_t size;               /* committed file size in bytes */
  int nshared;                 /* connections holding SHARED or more */
  struct afile *reserved, *pending, *exclusive;
  struct afile *writer;        /* owner of the overlay */
  struct pagemap ov;           /* the write transaction's pages */
  uint64_t ov_size;
  int shipped;
  int poisoned;
  char poison[400];
  /* ship()'s working space, kept from commit to commit (under mu): a
   * commit is on the engine's hot path, and this is 70 KB at 4 KiB pages. */
  struct drange *lits, *split;
  uint8_t *work;
  /* A read replica's volume (vfs/rvol.h), or NULL for the writer's. Its
   * apply thread moves the read point only while no connection holds
   * SHARED: hold_readers makes new SHARED locks wait, idle is signalled
   * when the last one goes or the read point moves. */
  struct rvol *rep;
  int hold_readers;
  struct afile *holders;       /* connections holding SHARED, newest first (rvol.c) */
  pthread_cond_t idle;
  struct vvol *next;
};

/* A heap file: the rollback journal. */
struct hfile {
  char *name;
  uint8_t *data;
  size_t size, cap;
  int refs;
  struct hfile *next;
};

enum { F_MAIN, F_JOURNAL };

struct afile {
  sqlite3_file base;
  int kind;
  int lock;
  struct vvol *vv;             /* F_MAIN */
  struct hfile *hf;            /* F_JOURNAL */
  uint64_t commit_lsn;         /* last commit, for the engine server */
  uint64_t snap;               /* a replica's: the read point its SHARED lock was taken at */
  unsigned long long snap_ms;  /* ... when (now_ms) */
  char who[64];                /* ... for which client (auralog_vfs_set_client) */
  int cancelled;               /* ... past --max-read-age: its reads fail (rvol.c) */
  int warned;                  /* ... past it, logged (--read-age-action warn) */
  struct afile *hnext;         /* vv->holders */
  struct auralog_commit_times times;  /* ... its stage timings (vfs.h) */
  char err[512];
};

/* The registry (vfsreg.c). reg_mu guards vols, hfiles and each volume's
 * and heap file's refs. */
extern pthread_mutex_t reg_mu;
extern struct vvol *vols;
extern struct hfile *hfiles;
extern int async_commit;       /* the engine server waits for durability itself */
extern int ship_pages;         /* ship whole pages, not deltas (a baseline) */

/* vfs.c: the main database file's methods. */
extern const sqlite3_io_methods main_methods;
/* In-header database size of page 1, in bytes (0 if page 1 is not a
 * database header). */
uint64_t header_size(const uint8_t *p1);
/* The committed image of page pno (the cache, else storage: at the VDL,
 * or at a replica's read point), cached; NULL with why. vv->mu held. */
const uint8_t *committed_page(struct vvol *vv, uint32_t pno, char *why, size_t whylen);

/* rvol.c, a replica's side, with vv->mu held: read page pno at the read
 * point (its `need` known); the read point (0: none yet); wait until a
 * SHARED lock may be granted (a read point, no window held), 0 or -1 with
 * why after READ_DEADLINE_MS. */
int rvol_read_page(struct vvol *vv, uint32_t pno, uint8_t *out, uint64_t *lsn, char *why,
                   size_t whylen);
uint64_t rvol_read_point(struct vvol *vv);
int rvol_lock_shared(struct vvol *vv, char *why, size_t whylen);
/* f took SHARED (at the read point) / let it go: the read transactions
 * that hold the read point (rvol.c). */
void rvol_hold(struct vvol *vv, struct afile *f);
void rvol_release(struct vvol *vv, struct afile *f);
/* A read of f's: 0, or -1 with why if its transaction's snapshot is gone
 * (it was cancelled past --max-read-age, or the read point moved on). */
int rvol_snap_ok(struct vvol *vv, const struct afile *f, char *why, size_t whylen);
/* Methods the journal shares with the main file. */
int a_sync(sqlite3_file *pf, int flags);
int a_sector_size(sqlite3_file *pf);
int a_device(sqlite3_file *pf);

/* journal.c: the journal's methods; the heap file named name (NULL if
 * none); forget h (under reg_mu). */
extern const sqlite3_io_methods heap_methods;
struct hfile *hf_find(const char *name);
void hf_drop(struct hfile *h);

#endif
