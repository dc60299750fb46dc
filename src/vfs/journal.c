/*
 * journal.c: the auralog VFS's rollback journal: a heap file (vfs_int.h).
 *
 * ROLLBACK and savepoints need the journal; crash recovery does not
 * (storage commits whole MTRs at the VDL, so there is never a hot
 * journal). So it lives in memory: a growable buffer, found by name in
 * the registry (hfiles, under reg_mu), kept while a connection has it open
 * or it holds anything (xDelete and a close at size 0 drop it). Locks on
 * it are no-ops: the main file's locks already order its users.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vfs/vfs_int.h"

struct hfile *hf_find(const char *name)
{
  for (struct hfile *h = hfiles; h; h = h->next)
    if (strcmp(h->name, name) == 0)
      return h;
  return NULL;
}

void hf_drop(struct hfile *h)
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

const sqlite3_io_methods heap_methods = {
  1, h_close, h_read, h_write, h_truncate, a_sync, h_file_size, h_lock, h_lock,
  h_check_reserved, h_file_control, a_sector_size, a_device,
  NULL, NULL, NULL, NULL, NULL, NULL,
};
