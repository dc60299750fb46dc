/*
 * vfs.c: the "auralog" SQLite VFS (see vfs.h).
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
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "record.h"
#include "vfs/cache.h"
#include "vfs/diff.h"
#include "vfs/vfs.h"
#include "vfs/volume.h"
#include "wire.h"

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
  char err[512];
};

static sqlite3_vfs *base_vfs;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct vvol *vols;
static struct hfile *hfiles;
static char engine_addr[ADDR_MAX_LEN + 1];
static int async_commit;
static int ship_pages;         /* ship whole pages, not deltas (a baseline) */

/* ---- heap files ------------------------------------------------------------ */

static struct hfile *hf_find(const char *name)
{
  for (struct hfile *h = hfiles; h; h = h->next)
    if (strcmp(h->name, name) == 0)
      return h;
  return NULL;
}

static void hf_drop(struct hfile *h)
{
  struct hfile **pp = &hfiles;
  while (*pp && *pp != h)
    pp = &(*pp)->next;
  if (*pp)
    *pp = h->next;
  free(h->name);
  free(h->data);
  free(h);
}

/* ---- main database: pages --------------------------------------------------- */

static void set_err(struct afile *f, const char *why)
{
  snprintf(f->err, sizeof f->err, "%s", why);
  logwarn("%s", why);
}

/* In-header database size of page 1, in bytes (0 if page 1 is not a
 * database header). */
static uint64_t header_size(const uint8_t *p1)
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

/* The committed image of volume page pno, from the cache or from storage
 * as of the VDL. Called with vv->mu held. */
static const uint8_t *committed_page(struct vvol *vv, uint32_t pno, char *why, size_t whylen)
{
  struct cpage *c = pm_get(&vv->cache, pno);
  if (c)
    return c->data;
  uint8_t *buf = malloc(vv->ps);
  uint64_t lsn;
  if (vol_read(vv->vol, pno, buf, &lsn, why, whylen) != 0) {
    free(buf);
    return NULL;
  }
  pm_evict(&vv->cache, vv->cache_pages, vol_vdl(vv->vol));
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
  if (vv->poisoned || vv->writer != f) {
    set_err(f, vv->poisoned ? vv->poison : "write without the RESERVED lock");
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

static int a_sync(sqlite3_file *pf, int flags)
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
  if (np > 0) {
    cpl = vol_ship(vv->vol, pages, np, why, sizeof why);
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
      c->lsn = cpl - (np - 1 - i);
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
  }
  free(all);
  free(pages);
  free(ranges);
  pm_evict(&vv->cache, vv->cache_pages, vol_vdl(vv->vol));
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
  case AURALOG_FCNTL_LAST_ERROR:
    *(const char **)arg = f->err;
    return SQLITE_OK;
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
    vv->nshared++;
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
  if (level == SQLITE_LOCK_NONE)
    vv->nshared--;
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

static int a_sector_size(sqlite3_file *pf)
{
  (void)pf;
  return 4096;
}

static int a_device(sqlite3_file *pf)
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

static const sqlite3_io_methods main_methods = {
  1, a_close, a_read, a_write, a_truncate, a_sync, a_file_size, a_lock, a_unlock,
  a_check_reserved, a_file_control, a_sector_size, a_device,
  NULL, NULL, NULL, NULL, NULL, NULL,
};

/* ---- journal: a heap file ------------------------------------------------------ */

static int h_close(sqlite3_file *pf)
{
  struct afile *f = (struct afile *)pf;
  pthread_mutex_lock(&reg_mu);
  if (--f->hf->refs == 0 && f->hf->size == 0)
    hf_drop(f->hf);
  pthread_mutex_unlock(&reg_mu);
  return SQLITE_OK;
}

static int h_read(sqlite3_file *pf, void *buf, int amt, sqlite3_int64 off)
{
  struct hfile *h = ((struct afile *)pf)->hf;
  size_t o = (size_t)off, n = (size_t)amt;
  if (o >= h->size) {
    memset(buf, 0, n);
    return SQLITE_IOERR_SHORT_READ;
  }
  size_t have = h->size - o < n ? h->size - o : n;
  memcpy(buf, h->data + o, have);
  if (have < n) {
    memset((uint8_t *)buf + have, 0, n - have);
    return SQLITE_IOERR_SHORT_READ;
  }
  return SQLITE_OK;
}

static int h_write(sqlite3_file *pf, const void *buf, int amt, sqlite3_int64 off)
{
  struct hfile *h = ((struct afile *)pf)->hf;
  size_t end = (size_t)off + (size_t)amt;
  if (end > h->cap) {
    size_t cap = h->cap ? h->cap : 65536;
    while (cap < end)
      cap *= 2;
    uint8_t *d = realloc(h->data, cap);
    if (d == NULL)
      return SQLITE_IOERR_NOMEM;
    h->data = d;
    h->cap = cap;
  }
  if ((size_t)off > h->size)
    memset(h->data + h->size, 0, (size_t)off - h->size);
  memcpy(h->data + off, buf, (size_t)amt);
  if (end > h->size)
    h->size = end;
  return SQLITE_OK;
}

static int h_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
  struct hfile *h = ((struct afile *)pf)->hf;
  if ((size_t)size < h->size)
    h->size = (size_t)size;
  return SQLITE_OK;
}

static int h_file_size(sqlite3_file *pf, sqlite3_int64 *size)
{
  *size = (sqlite3_int64)((struct afile *)pf)->hf->size;
  return SQLITE_OK;
}

static int h_lock(sqlite3_file *pf, int level)
{
  (void)pf;
  (void)level;
  return SQLITE_OK;
}

static int h_check_reserved(sqlite3_file *pf, int *out)
{
  (void)pf;
  *out = 0;
  return SQLITE_OK;
}

static int h_file_control(sqlite3_file *pf, int op, void *arg)
{
  (void)pf;
  (void)op;
  (void)arg;
  return SQLITE_NOTFOUND;
}

static const sqlite3_io_methods heap_methods = {
  1, h_close, h_read, h_write, h_truncate, a_sync, h_file_size, h_lock, h_lock,
  h_check_reserved, h_file_control, a_sector_size, a_device,
  NULL, NULL, NULL, NULL, NULL, NULL,
};

/* ---- the VFS ----------------------------------------------------------------------- */

static int open_main(struct afile *f, const char *name, char *why, size_t whylen)
{
  const char *coord = addr_coord(sqlite3_uri_parameter(name, "coord"));
  pthread_mutex_lock(&reg_mu);
  struct vvol *vv = vols;
  while (vv && strcmp(vv->name, name) != 0)
    vv = vv->next;
  if (vv) {
    vv->refs++;
    pthread_mutex_unlock(&reg_mu);
    f->vv = vv;
    return 0;
  }
  /* Opening the volume is a recovery: keep reg_mu so no one else opens
   * the same volume meanwhile. */
  struct volume *vol = vol_open(coord, name, engine_addr, why, whylen);
  if (vol == NULL) {
    pthread_mutex_unlock(&reg_mu);
    return -1;
  }
  vv = calloc(1, sizeof *vv);
  snprintf(vv->name, sizeof vv->name, "%s", name);
  vv->refs = 1;
  vv->vol = vol;
  vv->ps = vol_page_size(vol);
  /* A small cache (a lab's, a test's) makes reads go to storage. */
  sqlite3_int64 cp = sqlite3_uri_int64(name, "cache_pages", CACHE_PAGES);
  vv->cache_pages = cp < 8 ? 8 : (size_t)cp;
  pthread_mutex_init(&vv->mu, NULL);
  pm_init(&vv->cache, vv->ps);
  pm_init(&vv->ov, vv->ps);
  /* The committed size from page 1's header. */
  uint8_t *p1 = malloc(vv->ps);
  uint64_t lsn;
  if (vol_read(vol, 0, p1, &lsn, why, whylen) != 0) {
    free(p1);
    pm_free(&vv->cache);
    pm_free(&vv->ov);
    free(vv);
    pthread_mutex_unlock(&reg_mu);
    vol_close(vol);
    return -1;
  }
  vv->size = header_size(p1);
  struct cpage *c = pm_put(&vv->cache, 0);
  memcpy(c->data, p1, vv->ps);
  c->lsn = lsn;
  free(p1);
  vv->ov_size = vv->size;
  vv->next = vols;
  vols = vv;
  pthread_mutex_unlock(&reg_mu);
  f->vv = vv;
  return 0;
}

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *pf, int flags,
                  int *out_flags)
{
  (void)vfs;
  struct afile *f = (struct afile *)pf;
  memset(f, 0, sizeof *f);
  if (name && (flags & SQLITE_OPEN_MAIN_DB)) {
    char why[256];
    if (!wire_name_ok(name)) {
      errmsg("'%s' is not a volume name (1-%d of A-Z a-z 0-9 _ . -)", name, NAME_MAX_LEN);
      return SQLITE_CANTOPEN;
    }
    if (open_main(f, name, why, sizeof why) != 0) {
      errmsg("cannot open volume %s: %s", name, why);
      sqlite3_log(SQLITE_CANTOPEN, "auralog: cannot open volume %s: %s", name, why);
      return SQLITE_CANTOPEN;
    }
    f->kind = F_MAIN;
    f->base.pMethods = &main_methods;
    if (out_flags)
      *out_flags = flags;
    return SQLITE_OK;
  }
  if (name && (flags & SQLITE_OPEN_MAIN_JOURNAL)) {
    pthread_mutex_lock(&reg_mu);
    struct hfile *h = hf_find(name);
    if (h == NULL) {
      h = calloc(1, sizeof *h);
      h->name = strdup(name);
      h->next = hfiles;
      hfiles = h;
    }
    h->refs++;
    pthread_mutex_unlock(&reg_mu);
    f->kind = F_JOURNAL;
    f->hf = h;
    f->base.pMethods = &heap_methods;
    if (out_flags)
      *out_flags = flags;
    return SQLITE_OK;
  }
  /* Temporary files and anything else: the default VFS opens its own
   * file struct in place (szOsFile covers it), and its methods run on it. */
  return base_vfs->xOpen(base_vfs, name, pf, flags, out_flags);
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
  (void)vfs;
  pthread_mutex_lock(&reg_mu);
  struct hfile *h = hf_find(name);
  if (h) {
    h->size = 0;
    if (h->refs == 0)
      hf_drop(h);
    pthread_mutex_unlock(&reg_mu);
    return SQLITE_OK;
  }
  struct vvol *vv = vols;
  while (vv && strcmp(vv->name, name) != 0)
    vv = vv->next;
  pthread_mutex_unlock(&reg_mu);
  if (vv)
    return SQLITE_IOERR_DELETE;       /* in use */
  if (wire_name_ok(name)) {
    char why[256];
    return vol_drop(addr_coord(NULL), name, why, sizeof why) == 0 ? SQLITE_OK
                                                                  : SQLITE_IOERR_DELETE_NOENT;
  }
  return base_vfs->xDelete(base_vfs, name, sync);
}

static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
  (void)vfs;
  pthread_mutex_lock(&reg_mu);
  struct hfile *h = hf_find(name);
  *out = h && h->size > 0;
  pthread_mutex_unlock(&reg_mu);
  if (h || wire_name_ok(name))
    return SQLITE_OK;                 /* journals: in memory; volumes: always there */
  return base_vfs->xAccess(base_vfs, name, flags, out);
}

static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
  (void)vfs;
  sqlite3_snprintf(n, out, "%s", name);
  return SQLITE_OK;
}

static void *v_dlopen(sqlite3_vfs *v, const char *p) { (void)v; return base_vfs->xDlOpen(base_vfs, p); }
static void v_dlerror(sqlite3_vfs *v, int n, char *o) { (void)v; base_vfs->xDlError(base_vfs, n, o); }
static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *s))(void)
{
  (void)v;
  return base_vfs->xDlSym(base_vfs, h, s);
}
static void v_dlclose(sqlite3_vfs *v, void *h) { (void)v; base_vfs->xDlClose(base_vfs, h); }
static int v_random(sqlite3_vfs *v, int n, char *o) { (void)v; return base_vfs->xRandomness(base_vfs, n, o); }
static int v_sleep(sqlite3_vfs *v, int us) { (void)v; return base_vfs->xSleep(base_vfs, us); }
static int v_time(sqlite3_vfs *v, double *t) { (void)v; return base_vfs->xCurrentTime(base_vfs, t); }
static int v_lasterr(sqlite3_vfs *v, int n, char *o) { (void)v; return base_vfs->xGetLastError(base_vfs, n, o); }
static int v_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
  (void)v;
  return base_vfs->xCurrentTimeInt64(base_vfs, t);
}

static sqlite3_vfs auralog_vfs = {
  2, 0, 512, NULL, "auralog", NULL, v_open, v_delete, v_access, v_full_pathname,
  v_dlopen, v_dlerror, v_dlsym, v_dlclose, v_random, v_sleep, v_time, v_lasterr,
  v_time64, NULL, NULL, NULL,
};

void auralog_vfs_ship_pages(int on)
{
  ship_pages = on;
}

int auralog_vfs_register(int make_default, const char *addr, int async)
{
  if (sqlite3_vfs_find("auralog"))
    return SQLITE_OK;
  base_vfs = sqlite3_vfs_find(NULL);
  if (base_vfs == NULL)
    return SQLITE_ERROR;
  snprintf(engine_addr, sizeof engine_addr, "%s", addr ? addr : "");
  async_commit = async;
  int sz = (int)sizeof(struct afile);
  auralog_vfs.szOsFile = sz > base_vfs->szOsFile ? sz : base_vfs->szOsFile;
  return sqlite3_vfs_register(&auralog_vfs, make_default);
}
