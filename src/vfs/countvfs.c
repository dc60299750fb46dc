/*
 * countvfs.c: a pass-through VFS over SQLite's default one that counts
 * syncs, for the stock-SQLite baselines of `auralog bench`.
 *
 * Every call goes straight to the default VFS (unix): the baselines run
 * stock SQLite, storage and all; this layer only counts. A benchmark that
 * says "fsyncs per transaction" must count them, not work them out.
 *
 * What is counted: every xSync (each is one fsync or fdatasync in the unix
 * VFS), plus the directory sync the unix VFS makes, hidden inside the
 * first xSync of a file it created as a journal or WAL (its
 * UNIXFILE_DIRSYNC flag): a rollback journal is created for every
 * transaction, so in DELETE mode that is one more fsync per commit. Also
 * counted: bytes written, for the "bytes per transaction" of a baseline.
 *
 * Interface: countvfs_register() once, then open databases with
 * vfs=count; countvfs_get() reads the counters (any thread).
 */
#include <sqlite3.h>
#include <stdatomic.h>
#include <string.h>

#include "vfs/countvfs.h"

struct cfile {
  sqlite3_file base;
  int dirsync;               /* the unix VFS will also sync the directory */
  sqlite3_file *real;        /* follows this struct, szOsFile of the real VFS */
};

static sqlite3_vfs *real_vfs;
static _Atomic uint64_t nsync, nbytes;

#define REAL(pf) (((struct cfile *)(pf))->real)

static int c_close(sqlite3_file *pf)
{
  int rc = REAL(pf)->pMethods ? REAL(pf)->pMethods->xClose(REAL(pf)) : SQLITE_OK;
  return rc;
}
static int c_read(sqlite3_file *pf, void *b, int n, sqlite3_int64 off)
{
  return REAL(pf)->pMethods->xRead(REAL(pf), b, n, off);
}
static int c_write(sqlite3_file *pf, const void *b, int n, sqlite3_int64 off)
{
  nbytes += (uint64_t)n;
  return REAL(pf)->pMethods->xWrite(REAL(pf), b, n, off);
}
static int c_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
  return REAL(pf)->pMethods->xTruncate(REAL(pf), size);
}
static int c_sync(sqlite3_file *pf, int flags)
{
  struct cfile *f = (struct cfile *)pf;
  nsync += 1 + (uint64_t)f->dirsync;
  f->dirsync = 0;
  return REAL(pf)->pMethods->xSync(REAL(pf), flags);
}
static int c_file_size(sqlite3_file *pf, sqlite3_int64 *size)
{
  return REAL(pf)->pMethods->xFileSize(REAL(pf), size);
}
static int c_lock(sqlite3_file *pf, int l) { return REAL(pf)->pMethods->xLock(REAL(pf), l); }
static int c_unlock(sqlite3_file *pf, int l) { return REAL(pf)->pMethods->xUnlock(REAL(pf), l); }
static int c_check_reserved(sqlite3_file *pf, int *out)
{
  return REAL(pf)->pMethods->xCheckReservedLock(REAL(pf), out);
}
static int c_file_control(sqlite3_file *pf, int op, void *arg)
{
  return REAL(pf)->pMethods->xFileControl(REAL(pf), op, arg);
}
static int c_sector_size(sqlite3_file *pf) { return REAL(pf)->pMethods->xSectorSize(REAL(pf)); }
static int c_device(sqlite3_file *pf)
{
  return REAL(pf)->pMethods->xDeviceCharacteristics(REAL(pf));
}
static int c_shm_map(sqlite3_file *pf, int pg, int sz, int extend, void volatile **pp)
{
  return REAL(pf)->pMethods->xShmMap(REAL(pf), pg, sz, extend, pp);
}
static int c_shm_lock(sqlite3_file *pf, int off, int n, int flags)
{
  return REAL(pf)->pMethods->xShmLock(REAL(pf), off, n, flags);
}
static void c_shm_barrier(sqlite3_file *pf) { REAL(pf)->pMethods->xShmBarrier(REAL(pf)); }
static int c_shm_unmap(sqlite3_file *pf, int del)
{
  return REAL(pf)->pMethods->xShmUnmap(REAL(pf), del);
}
static int c_fetch(sqlite3_file *pf, sqlite3_int64 off, int n, void **pp)
{
  return REAL(pf)->pMethods->xFetch(REAL(pf), off, n, pp);
}
static int c_unfetch(sqlite3_file *pf, sqlite3_int64 off, void *p)
{
  return REAL(pf)->pMethods->xUnfetch(REAL(pf), off, p);
}

static const sqlite3_io_methods c_methods = {
  3, c_close, c_read, c_write, c_truncate, c_sync, c_file_size, c_lock, c_unlock,
  c_check_reserved, c_file_control, c_sector_size, c_device, c_shm_map, c_shm_lock,
  c_shm_barrier, c_shm_unmap, c_fetch, c_unfetch};

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *pf, int flags, int *out)
{
  (void)vfs;
  struct cfile *f = (struct cfile *)pf;
  memset(f, 0, sizeof *f);
  f->real = (sqlite3_file *)(f + 1);
  int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out);
  /* The unix VFS syncs the directory once after creating these (so that
   * the new file's name is durable too): count it with the first sync. */
  int jrnl = flags & (SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUPER_JOURNAL | SQLITE_OPEN_WAL);
  f->dirsync = rc == SQLITE_OK && (flags & SQLITE_OPEN_CREATE) && jrnl;
  pf->pMethods = f->real->pMethods ? &c_methods : NULL;
  return rc;
}

static int v_delete(sqlite3_vfs *v, const char *n, int sync)
{
  (void)v;
  if (sync)
    nsync++;                 /* the unix VFS syncs the directory */
  return real_vfs->xDelete(real_vfs, n, sync);
}
static int v_access(sqlite3_vfs *v, const char *n, int fl, int *o)
{
  (void)v;
  return real_vfs->xAccess(real_vfs, n, fl, o);
}
static int v_full(sqlite3_vfs *v, const char *n, int k, char *o)
{
  (void)v;
  return real_vfs->xFullPathname(real_vfs, n, k, o);
}
static void *v_dlopen(sqlite3_vfs *v, const char *p) { (void)v; return real_vfs->xDlOpen(real_vfs, p); }
static void v_dlerror(sqlite3_vfs *v, int n, char *o) { (void)v; real_vfs->xDlError(real_vfs, n, o); }
static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *s))(void)
{
  (void)v;
  return real_vfs->xDlSym(real_vfs, h, s);
}
static void v_dlclose(sqlite3_vfs *v, void *h) { (void)v; real_vfs->xDlClose(real_vfs, h); }
static int v_random(sqlite3_vfs *v, int n, char *o) { (void)v; return real_vfs->xRandomness(real_vfs, n, o); }
static int v_sleep(sqlite3_vfs *v, int us) { (void)v; return real_vfs->xSleep(real_vfs, us); }
static int v_time(sqlite3_vfs *v, double *t) { (void)v; return real_vfs->xCurrentTime(real_vfs, t); }
static int v_lasterr(sqlite3_vfs *v, int n, char *o) { (void)v; return real_vfs->xGetLastError(real_vfs, n, o); }
static int v_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
  (void)v;
  return real_vfs->xCurrentTimeInt64(real_vfs, t);
}

static sqlite3_vfs count_vfs = {
  2, 0, 1024, NULL, "count", NULL, v_open, v_delete, v_access, v_full, v_dlopen,
  v_dlerror, v_dlsym, v_dlclose, v_random, v_sleep, v_time, v_lasterr, v_time64,
  NULL, NULL, NULL};

int countvfs_register(void)
{
  if (sqlite3_vfs_find("count"))
    return SQLITE_OK;
  real_vfs = sqlite3_vfs_find(NULL);
  if (real_vfs == NULL)
    return SQLITE_ERROR;
  count_vfs.szOsFile = (int)sizeof(struct cfile) + real_vfs->szOsFile;
  count_vfs.mxPathname = real_vfs->mxPathname;
  return sqlite3_vfs_register(&count_vfs, 0);
}

void countvfs_get(uint64_t *syncs, uint64_t *bytes)
{
  *syncs = nsync;
  *bytes = nbytes;
}
