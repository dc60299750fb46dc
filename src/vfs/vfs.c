/*
 * vfs.c: the "auralog" SQLite VFS (see vfs.h): its main database file.
 *
 * The commit boundary (Debian's SQLite has no batch-atomic writes, so it
 * is built from the pager's calls on the main database):
 *   xWrite / xTruncate        -> the writer's overlay (xRead checks it
 *                                first: a cache spill writes mid-transaction)
 *   FCNTL_SYNC                -> every page is written: diff, ship the MTR
 *                                (an error here makes SQLite roll back)
 *   FCNTL_COMMIT_PHASETWO     -> the commit is done: drop the overlay
 *   xUnlock to SHARED or less
 *     without PHASETWO        -> an abort: drop the overlay
 * The rollback journal lives in memory (a heap file): ROLLBACK and
 * savepoints need it, crash recovery does not (storage commits whole MTRs
 * at the VDL, so there is never a hot journal). Temporary files go to the
 * default VFS. WAL is refused.
 *
 * Sizes: the volume is an array of volume pages (its page size, usually
 * SQLite's); SQLite may use any page size, and reads and writes are cut
 * into volume pages. The committed file size is the in-header database
 * size of page 1 (SQLite keeps it on every commit), so it needs no record
 * of its own.
 *
 * Locking is in-process (one engine per volume): the usual SHARED,
 * RESERVED, PENDING, EXCLUSIVE rules among the connections of this
 * process. The connection holding RESERVED is the writer and owns the
 * overlay.
 *
 * The rest of the VFS (vfs_int.h): journal.c, the rollback journal;
 * vfsreg.c, the VFS object SQLite calls by name (registration, xOpen with
 * the URI's parameters, xDelete, xAccess) and the volumes open here.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "param.h"
#include "record.h"
#include "vfs/binlog.h"
#include "vfs/cache.h"
#include "vfs/community.h"
#include "vfs/diff.h"
#include "vfs/vfs.h"
#include "vfs/vfs_int.h"
#include "vfs/volume.h"
#include "net/wire.h"

/* ---- main database: pages --------------------------------------------------- */

static void set_err(struct afile *f, const char *why)
{
  snprintf(f->err, sizeof f->err, "%s", why);
  logwarn_rl("%s", why);
}

/* In-header database size of page 1, in bytes (0 if page 1 is not a
 * database header). */
uint64_t header_size(const uint8_t *p1)
{
  if (memcmp(p1, "SQLite format 3", 16) != 0)
    return 0;
  uint32_t ps = (uint32_t)p1[16] << 8 | p1[17];
  if (ps == 1)
    ps = 65536;
  uint32_t npages = get_be32(p1 + 28);
  if (get_be32(p1 + 92) != get_be32(p1 + 24))
    return 0;                  /* size field not valid for this version */
  return (uint64_t)npages * ps;
}

/* The point at or below which a cached page may be evicted (§4.2.3): the
 * VDL; a replica's read point (every page it caches is as of it). */
static uint64_t evict_point(struct vvol *vv)
{
  return vv->rep ? rvol_read_point(vv) : vol_vdl(vv->vol);
}

/* The committed image of volume page pno, from the cache or from storage
 * as of the VDL (a replica: its read point). Called with vv->mu held. */
const uint8_t *committed_page(struct vvol *vv, uint32_t pno, char *why, size_t whylen)
{
  struct cpage *c = pm_get(&vv->cache, pno);
  if (c)
    return c->data;
  uint8_t *buf = malloc(vv->ps);
  uint64_t lsn;
  if ((vv->rep ? rvol_read_page(vv, pno, buf, &lsn, why, whylen)
               : vol_read(vv->vol, pno, buf, &lsn, why, whylen)) != 0) {
    free(buf);
    return NULL;
  }
  pm_evict(&vv->cache, vv->cache_pages, evict_point(vv));
  c = pm_put(&vv->cache, pno);
  memcpy(c->data, buf, vv->ps);
  c->lsn = lsn;
  free(buf);
  return c->data;
}

static int a_read(sqlite3_file *pf, void *buf, int amt, sqlite3_int64 off)
{
  struct afile *f = (struct afile *)pf;
  struct vvol *vv = f->vv;
  char why[256];
  int rc = SQLITE_OK;
  pthread_mutex_lock(&vv->mu);
  if (vv->poisoned) {
    set_err(f, vv->poison);
    pthread_mutex_unlock(&vv->mu);
    return SQLITE_IOERR_READ;
  }
  if (vv->rep && rvol_snap_ok(vv, f, why, sizeof why) != 0) {
    set_err(f, why);
    pthread_mutex_unlock(&vv->mu);
    return SQLITE_IOERR_READ;
  }
  uint64_t size = vv->writer == f ? vv->ov_size : vv->size;
  uint8_t *out = buf;
  uint64_t pos = (uint64_t)off, end = pos + (uint64_t)amt;
  if (end > size) {
    /* Past the end: zeros, and SQLite is told the read was short. */
    uint64_t from = pos > size ? pos : size;
    memset(out + (from - pos), 0, end - from);
    end = from;
    rc = SQLITE_IOERR_SHORT_READ;
  }
  while (pos < end) {
    uint32_t pno = (uint32_t)(pos / vv->ps), in = (uint32_t)(pos % vv->ps);
    uint32_t n = vv->ps - in;
    if (n > end - pos)
      n = (uint32_t)(end - pos);
    struct cpage *o = vv->writer == f ? pm_get(&vv->ov, pno) : NULL;
    const uint8_t *src = o ? o->data : committed_page(vv, pno, why, sizeof why);
    if (src == NULL) {
      set_err(f, why);
      rc = SQLITE_IOERR_READ;
      break;
    }
    memcpy(out + (pos - (uint64_t)off), src + in, n);
    pos += n;
  }
  pthread_mutex_unlock(&vv->mu);
  return rc;
}

/* The overlay page for pno, made from the committed image (or zeros for a
 * page past the committed end: a new page, shipped as REC_ZERO). */
static struct cpage *overlay_page(struct vvol *vv, uint32_t pno, char *why, size_t whylen)
{
  struct cpage *o = pm_get(&vv->ov, pno);
  if (o)
    return o;
  const uint8_t *before = NULL;
  if ((uint64_t)pno * vv->ps < vv->size &&
      (before = committed_page(vv, pno, why, whylen)) == NULL)
    return NULL;
  o = pm_put(&vv->ov, pno);
  if (before) {
    o->before = malloc(vv->ps);
    memcpy(o->before, before, vv->ps);
    memcpy(o->data, before, vv->ps);
  } else {
    o->flags = REC_ZERO;
  }
  return o;
}

static int a_write(sqlite3_file *pf, const void *buf, int amt, sqlite3_int64 off)
{
  struct afile *f = (struct afile *)pf;
  struct vvol *vv = f->vv;
  char why[256];
  int rc = SQLITE_OK;
  pthread_mutex_lock(&vv->mu);
  if (vv->poisoned || vv->writer != f || vv->rep) {
    set_err(f, vv->rep ? "this is a read replica: it serves reads only"
               : vv->poisoned ? vv->poison : "write without the RESERVED lock");
    pthread_mutex_unlock(&vv->mu);
    return SQLITE_IOERR_WRITE;
  }
  const uint8_t *in = buf;
  uint64_t pos = (uint64_t)off, end = pos + (uint64_t)amt;
  while (pos < end) {
    uint32_t pno = (uint32_t)(pos / vv->ps), at = (uint32_t)(pos % vv->ps);
    uint32_t n = vv->ps - at;
    if (n > end - pos)
      n = (uint32_t)(end - pos);
    struct cpage *o = overlay_page(vv, pno, why, sizeof why);
    if (o == NULL) {
      set_err(f, why);
      rc = SQLITE_IOERR_WRITE;
      break;
    }
    memcpy(o->data + at, in + (pos - (uint64_t)off), n);
    pos += n;
  }
  if (rc == SQLITE_OK && end > vv->ov_size)
    vv->ov_size = end;
  pthread_mutex_unlock(&vv->mu);
  return rc;
}

static int a_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
  struct afile *f = (struct afile *)pf;
  struct vvol *vv = f->vv;
  pthread_mutex_lock(&vv->mu);
  if (vv->writer == f) {
    vv->ov_size = (uint64_t)size;
    /* Pages wholly past the new end are gone; a later write of them
     * starts from zeros again. */
    struct cpage **all = pm_sorted(&vv->ov);
    size_t n = vv->ov.n;
    uint32_t first_gone = (uint32_t)(((uint64_t)size + vv->ps - 1) / vv->ps);
    uint32_t *gone = malloc((n + 1) * sizeof *gone);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++)
      if (all[i]->page_no >= first_gone)
        gone[ng++] = all[i]->page_no;
    for (size_t i = 0; i < ng; i++)
      pm_del(&vv->ov, gone[i]);
    free(gone);
    free(all);
  }
  /* VACUUM truncates after FCNTL_SYNC, when the shipped page 1 already
   * carries the smaller size: nothing else to do. */
  pthread_mutex_unlock(&vv->mu);
  return SQLITE_OK;
}

int a_sync(sqlite3_file *pf, int flags)
{
  (void)pf;
  (void)flags;                 /* durability happens at FCNTL_SYNC */
  return SQLITE_OK;
}

static int a_file_size(sqlite3_file *pf, sqlite3_int64 *size)
{
  struct afile *f = (struct afile *)pf;
  pthread_mutex_lock(&f->vv->mu);
  *size = (sqlite3_int64)(f->vv->writer == f ? f->vv->ov_size : f->vv->size);
  pthread_mutex_unlock(&f->vv->mu);
  return SQLITE_OK;
}

/* ---- the commit: diff and ship ------------------------------------------------ */

/* Ship the writer's overlay as one MTR. Called with vv->mu held. */
static int ship(struct afile *f)
{
  struct vvol *vv = f->vv;
  char why[256];
  if (vv->shipped)
    return SQLITE_OK;
  uint64_t sync_us = now_us();   /* stage timings (vfs.h): the SQL is done */
  struct cpage **all = pm_sorted(&vv->ov);
  size_t n = vv->ov.n, np = 0;
  struct mtr_page *pages = calloc(n + 1, sizeof *pages);
  size_t *first = calloc(n + 1, sizeof *first);
  /* Each page is diffed into scratch (big enough for any diff), and only
   * the ranges it has are kept: a big transaction's diffs are small. */
  size_t maxr = (size_t)vv->ps / 2 + 1, cap = 256, used = 0;
  if (vv->lits == NULL) {
    vv->lits = malloc(maxr * sizeof *vv->lits);
    vv->split = malloc((size_t)vv->ps * sizeof *vv->split);
    vv->work = malloc(vv->ps);
  }
  struct drange *lits = vv->lits, *scratch = vv->split;
  uint8_t *work = vv->work;
  struct drange *ranges = malloc(cap * sizeof *ranges);
  for (size_t i = 0; i < n; i++) {
    struct cpage *o = all[i];
    if ((uint64_t)o->page_no * vv->ps >= vv->ov_size)
      continue;                /* truncated away */
    size_t nr = page_diff(o->before, o->data, vv->ps, lits, maxr);
    if (nr == 0 && !(o->flags & REC_ZERO))
      continue;                /* written, but unchanged */
    if (ship_pages) {
      /* The baseline: the whole page, as a page-shipping mirror sends it. */
      scratch[0] = (struct drange){0, vv->ps};
      nr = 1;
    } else {
      /* Runs the page already holds a few bytes away go as copies. */
      nr = diff_copies(o->before, o->data, vv->ps, lits, nr, work, scratch, vv->ps);
    }
    if (used + nr > cap) {
      while (used + nr > cap)
        cap *= 2;
      ranges = realloc(ranges, cap * sizeof *ranges);
    }
    memcpy(ranges + used, scratch, nr * sizeof *ranges);
    first[np] = used;
    pages[np++] = (struct mtr_page){o->page_no, o->flags, o->data, NULL, nr};
    used += nr;
  }
  for (size_t i = 0; i < np; i++)
    pages[i].ranges = ranges + first[i];
  free(first);
  uint64_t cpl = 0;
  int rc = SQLITE_OK;
  /* The transaction's events, if its commit hook offered them (binlog.h):
   * the MTR's last record (ship.c B1). No page changed: no commit, no
   * events to keep. */
  size_t bllen = 0;
  uint8_t *bl = binlog_take(&bllen);
  if (bl && (np == 0 || (!vol_has_binlog(vv->vol) && !community_on()))) {
    free(bl);
    bl = NULL;
  }
  if (bl)
    binlog_count(bllen);
  int extra = bl != NULL;    /* a record after the pages: the binlog's, or a commit record */
  if (np > 0 && bl && community_on()) {
    /* The community binlog: MySQL's two-phase commit (community.c). Its
     * waits (a write quorum, an fsync) leave the volume's lock to the
     * readers, as a durable commit's wait does below; SQLite's write lock
     * keeps other writers out. */
    pthread_mutex_unlock(&vv->mu);
    cpl = community_commit(vv->vol, pages, np, bl, bllen, why, sizeof why);
    pthread_mutex_lock(&vv->mu);
    bl = NULL;
    if (cpl == 0) {
      set_err(f, why);
      rc = SQLITE_IOERR_FSYNC;
    }
  } else if (np > 0) {
    cpl = vol_ship_bl(vv->vol, pages, np, bl, bllen, why, sizeof why);
    if (cpl == 0) {
      set_err(f, why);
      rc = SQLITE_IOERR_FSYNC;
    }
  }
  if (rc == SQLITE_OK) {
    /* The cache now holds the new committed images; their page LSNs are
     * above the VDL until the commit is durable, so they cannot be evicted
     * before then (§4.2.3). LSNs of one MTR are contiguous. */
    for (size_t i = 0; i < np; i++) {
      struct cpage *c = pm_put(&vv->cache, pages[i].page_no);
      memcpy(c->data, pages[i].after, vv->ps);
      c->lsn = cpl - (uint64_t)extra - (np - 1 - i);
    }
    for (size_t i = 0; i < n; i++) {      /* unchanged pages: same bytes */
      struct cpage *c = pm_get(&vv->cache, all[i]->page_no);
      if (c && (uint64_t)all[i]->page_no * vv->ps < vv->ov_size)
        memcpy(c->data, all[i]->data, vv->ps);
    }
    struct cpage *p1 = pm_get(&vv->ov, 0);
    uint64_t hs = p1 ? header_size(p1->data) : 0;
    vv->size = hs ? hs : vv->ov_size;
    vv->shipped = 1;
    f->commit_lsn = cpl;
    f->times = (struct auralog_commit_times){sync_us};
  }
  free(all);
  free(pages);
  free(ranges);
  pm_evict(&vv->cache, vv->cache_pages, evict_point(vv));
  if (rc == SQLITE_OK && cpl && !async_commit) {
    /* Embedded use: the commit returns only once it is durable. */
    pthread_mutex_unlock(&vv->mu);
    int w = vol_wait(vv->vol, cpl, COMMIT_DEADLINE_MS, why, sizeof why);
    pthread_mutex_lock(&vv->mu);
    if (w != 0) {
      /* SQLite will roll back, but the redo may still reach a quorum
       * later: the outcome is unknown, and only a recovery settles it. */
      snprintf(vv->poison, sizeof vv->poison, "%s; the commit's outcome is unknown "
               "until the volume is opened again (recovery)", why);
      vv->poisoned = 1;
      set_err(f, vv->poison);
      rc = SQLITE_IOERR_FSYNC;
    }
  }
  return rc;
}

static void end_txn(struct vvol *vv)
{
  pm_clear(&vv->ov);
  vv->ov_size = vv->size;
  vv->shipped = 0;
}

static int a_file_control(sqlite3_file *pf, int op, void *arg)
{
  struct afile *f = (struct afile *)pf;
  struct vvol *vv = f->vv;
  int rc = SQLITE_NOTFOUND;
  switch (op) {
  case SQLITE_FCNTL_SYNC:
  case SQLITE_FCNTL_COMMIT_PHASETWO:
    pthread_mutex_lock(&vv->mu);
    rc = SQLITE_OK;
    if (vv->writer == f) {
      /* PHASETWO without a SYNC before it (synchronous=OFF): ship now. */
      rc = ship(f);
      if (op == SQLITE_FCNTL_COMMIT_PHASETWO && rc == SQLITE_OK)
        end_txn(vv);
    }
    pthread_mutex_unlock(&vv->mu);
    return rc;
  case SQLITE_FCNTL_PRAGMA: {
    char **a = arg;
    if (a[1] && sqlite3_stricmp(a[1], "journal_mode") == 0 && a[2] &&
        sqlite3_stricmp(a[2], "wal") == 0) {
      a[0] = sqlite3_mprintf("auralog does not do WAL: the volume's redo log "
                             "already makes every commit durable");
      return SQLITE_ERROR;
    }
    return SQLITE_NOTFOUND;
  }
  case SQLITE_FCNTL_VFSNAME:
    *(char **)arg = sqlite3_mprintf("auralog");
    return SQLITE_OK;
  case AURALOG_FCNTL_COMMIT_LSN:
    *(uint64_t *)arg = f->commit_lsn;
    f->commit_lsn = 0;
    return SQLITE_OK;
  case AURALOG_FCNTL_COMMIT_TIMES:
    *(struct auralog_commit_times *)arg = f->times;
    f->times = (struct auralog_commit_times){0};
    return SQLITE_OK;
  case AURALOG_FCNTL_LAST_ERROR:
    *(const char **)arg = f->err;
    return SQLITE_OK;
  case AURALOG_FCNTL_SNAP_GONE: {
    /* A replica's read transaction whose snapshot is gone (rvol.c). */
    char why[sizeof f->err];
    pthread_mutex_lock(&vv->mu);
    rc = vv->rep && rvol_snap_ok(vv, f, why, sizeof why) != 0;
    if (rc)
      set_err(f, why);
    pthread_mutex_unlock(&vv->mu);
    *(const char **)arg = rc ? f->err : NULL;
    return SQLITE_OK;
  }
  case AURALOG_FCNTL_VOLUME:
    *(void **)arg = vv->vol;
    return SQLITE_OK;
  }
  return rc;
}

/* ---- locks ---------------------------------------------------------------------- */

static int a_lock(sqlite3_file *pf, int level)
{
  struct afile *f = (struct afile *)pf;
  struct vvol *vv = f->vv;
  int rc = SQLITE_OK;
  pthread_mutex_lock(&vv->mu);
  if (f->lock >= level)
    goto out;
  if (level == SQLITE_LOCK_SHARED) {
    if ((vv->pending && vv->pending != f) || (vv->exclusive && vv->exclusive != f)) {
      rc = SQLITE_BUSY;
      goto out;
    }
    /* A replica: not while its read point moves, nor before it has one
     * (rvol.h, invariant R3). */
    char why[256];
    if (vv->rep && rvol_lock_shared(vv, why, sizeof why) != 0) {
      set_err(f, why);
      rc = SQLITE_BUSY;
      goto out;
    }
    vv->nshared++;
    if (vv->rep)
      rvol_hold(vv, f);        /* every read of this transaction is at the read point */
  } else if (vv->rep) {
    /* A replica never writes (its connections are read-only already). */
    set_err(f, "this is a read replica: it serves reads only; send writes to the writer");
    rc = SQLITE_READONLY;
    goto out;
  } else if (level == SQLITE_LOCK_RESERVED) {
    if (vv->reserved && vv->reserved != f) {
      rc = SQLITE_BUSY;
      goto out;
    }
    vv->reserved = f;
    vv->writer = f;            /* a write transaction begins */
    end_txn(vv);
  } else if (level == SQLITE_LOCK_EXCLUSIVE) {
    if (vv->pending && vv->pending != f) {
      rc = SQLITE_BUSY;
      goto out;
    }
    vv->pending = f;           /* no new readers from now on */
    if (vv->nshared > 1) {
      rc = SQLITE_BUSY;        /* readers still in: SQLite retries */
      f->lock = SQLITE_LOCK_PENDING;
      goto out;
    }
    vv->exclusive = f;
  }
  f->lock = level;
out:
  pthread_mutex_unlock(&vv->mu);
  return rc;
}

static int a_unlock(sqlite3_file *pf, int level)
{
  struct afile *f = (struct afile *)pf;
  struct vvol *vv = f->vv;
  pthread_mutex_lock(&vv->mu);
  if (f->lock <= level)
    goto out;
  if (vv->exclusive == f)
    vv->exclusive = NULL;
  if (vv->pending == f)
    vv->pending = NULL;
  if (level < SQLITE_LOCK_RESERVED && vv->reserved == f) {
    vv->reserved = NULL;
    if (vv->writer == f) {
      /* The end of a write transaction. Without PHASETWO it was rolled
       * back: what it wrote is dropped (shipped redo cannot be recalled,
       * but SQLite only aborts after a failed FCNTL_SYNC). */
      end_txn(vv);
      vv->writer = NULL;
    }
  }
  if (level == SQLITE_LOCK_NONE) {
    vv->nshared--;
    if (vv->rep)
      rvol_release(vv, f);     /* a replica's apply may go on */
  }
  f->lock = level;
out:
  pthread_mutex_unlock(&vv->mu);
  return SQLITE_OK;
}

static int a_check_reserved(sqlite3_file *pf, int *out)
{
  struct afile *f = (struct afile *)pf;
  pthread_mutex_lock(&f->vv->mu);
  *out = f->vv->reserved != NULL;
  pthread_mutex_unlock(&f->vv->mu);
  return SQLITE_OK;
}

int a_sector_size(sqlite3_file *pf)
{
  (void)pf;
  return 4096;
}

int a_device(sqlite3_file *pf)
{
  (void)pf;
  return SQLITE_IOCAP_POWERSAFE_OVERWRITE | SQLITE_IOCAP_SAFE_APPEND |
         SQLITE_IOCAP_SEQUENTIAL;
}

static int a_close(sqlite3_file *pf)
{
  struct afile *f = (struct afile *)pf;
  struct vvol *vv = f->vv;
  a_unlock(pf, SQLITE_LOCK_NONE);
  pthread_mutex_lock(&reg_mu);
  if (--vv->refs == 0) {
    struct vvol **pp = &vols;
    while (*pp != vv)
      pp = &(*pp)->next;
    *pp = vv->next;
    pthread_mutex_unlock(&reg_mu);
    vol_close(vv->vol);
    pm_free(&vv->cache);
    pm_free(&vv->ov);
    pthread_mutex_destroy(&vv->mu);
    free(vv->lits);
    free(vv->split);
    free(vv->work);
    free(vv);
  } else {
    pthread_mutex_unlock(&reg_mu);
  }
  return SQLITE_OK;
}

const sqlite3_io_methods main_methods = {
  1, a_close, a_read, a_write, a_truncate, a_sync, a_file_size, a_lock, a_unlock,
  a_check_reserved, a_file_control, a_sector_size, a_device,
  NULL, NULL, NULL, NULL, NULL, NULL,
};
