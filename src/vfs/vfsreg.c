/*
 * vfsreg.c: the auralog VFS itself, the sqlite3_vfs that SQLite finds by
 * name (vfs.h; the files it opens are vfs.c's and journal.c's).
 *
 * xOpen sorts what SQLite opens: the main database is a volume (its name
 * the volume's, its URI's parameters coord=ADDR, cache_pages=N and, for a
 * volume created by this open, pg_pages=N, its PG size), shared
 * by every connection of this process that opens it: the first one opens
 * the volume, which is a recovery, and reads page 1 for the committed
 * size; the last close closes it (vfs.c a_close). The main journal is a
 * heap file (journal.c). Temporary files and anything else go to the
 * default VFS, as do randomness, time and the loading of extensions.
 * xDelete of a volume's name drops the volume, unless it is open here.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "vfs/cache.h"
#include "vfs/vfs.h"
#include "vfs/vfs_int.h"
#include "vfs/volume.h"
#include "net/wire.h"

static sqlite3_vfs *base_vfs;
pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
struct vvol *vols;
struct hfile *hfiles;
static char engine_addr[ADDR_MAX_LEN + 1];
int async_commit;
int ship_pages;                /* ship whole pages, not deltas (a baseline) */

/* ---- the VFS ----------------------------------------------------------------------- */

static int open_main(struct afile *f, const char *name, char *why, size_t whylen)
{
  /* Inside a host program (the extension): a cluster not found is this
   * open's error, never an exit. */
  char coord[ADDR_MAX_LEN + 1];
  if (addr_coord_find(sqlite3_uri_parameter(name, "coord"), coord, sizeof coord, why,
                      whylen) != 0)
    return -1;
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
  sqlite3_int64 pgp = sqlite3_uri_int64(name, "pg_pages", 0);
  if (pgp < 0 || pgp > PG_PAGES_MAX) {
    pthread_mutex_unlock(&reg_mu);
    snprintf(why, whylen, "pg_pages=%lld: a PG has 1 to %d pages", (long long)pgp,
             PG_PAGES_MAX);
    return -1;
  }
  /* Opening the volume is a recovery: keep reg_mu so no one else opens
   * the same volume meanwhile. */
  /* if_epoch=N: a replica's promotion (vfs/promote.c), conditional on the
   * lost writer's epoch (coord/failover.c F1). */
  sqlite3_int64 ife = sqlite3_uri_int64(name, "if_epoch", 0);
  /* create=1: make the volume even if its name was dropped (a new, empty
   * one: coord/roles.c R3); the engine's --create sets it for good. */
  if (sqlite3_uri_boolean(name, "create", 0))
    vol_recreate_default(1);
  struct volume *vol = vol_open_if(coord, name, engine_addr, (uint32_t)pgp,
                                   ife > 0 ? (uint64_t)ife : 0, why, whylen);
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

/* Why the last open of a volume failed: SQLite says only "unable to open
 * database file", and an engine that cannot start (a data-loss alarm...)
 * should say why in its last line, which `cluster up` shows. */
static char open_why[512];

const char *auralog_vfs_open_error(void)
{
  static char copy[sizeof open_why];
  pthread_mutex_lock(&reg_mu);
  memcpy(copy, open_why, sizeof copy);
  pthread_mutex_unlock(&reg_mu);
  return copy;
}

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *pf, int flags,
                  int *out_flags)
{
  (void)vfs;
  struct afile *f = (struct afile *)pf;
  memset(f, 0, sizeof *f);
  if (name && (flags & SQLITE_OPEN_MAIN_DB)) {
    char why[512];
    if (!wire_name_ok(name)) {
      errmsg("'%s' is not a volume name (1-%d of A-Z a-z 0-9 _ . -)", name, NAME_MAX_LEN);
      return SQLITE_CANTOPEN;
    }
    if (open_main(f, name, why, sizeof why) != 0) {
      pthread_mutex_lock(&reg_mu);
      snprintf(open_why, sizeof open_why, "%s", why);
      pthread_mutex_unlock(&reg_mu);
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
    char why[PATH_MAX + 200], coord[ADDR_MAX_LEN + 1];
    if (addr_coord_find(NULL, coord, sizeof coord, why, sizeof why) != 0)
      return SQLITE_IOERR_DELETE;
    return vol_drop(coord, name, why, sizeof why) == 0 ? SQLITE_OK : SQLITE_IOERR_DELETE_NOENT;
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
