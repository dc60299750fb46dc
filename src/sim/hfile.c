/*
 * hfile.c: the simulator's hot-log file (see hfile.h): two byte arrays of
 * the same size, what the process sees (cur) and what the disk holds
 * (dur), and the list of writes made to cur since the last sync.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/hfile.h"

struct wr {
  uint64_t off, len;
};

struct hfile {
  uint8_t *cur, *dur;
  uint64_t size, cap;
  struct wr *w;              /* unsynced writes, oldest first */
  size_t nw, capw;
  uint64_t hi;               /* end of the last write */
  int armed, dead;
  struct hfile_stats st;
};

static int resize(struct hfile *f, uint64_t size)
{
  if (size > f->cap) {
    uint64_t cap = f->cap ? f->cap : 4096;
    while (cap < size)
      cap *= 2;
    uint8_t *c = realloc(f->cur, cap), *d;
    if (c == NULL)
      return ENOMEM;
    f->cur = c;
    if ((d = realloc(f->dur, cap)) == NULL)
      return ENOMEM;
    f->dur = d;
    f->cap = cap;
  }
  if (size > f->size) {        /* new bytes read as zeros, on both */
    memset(f->cur + f->size, 0, size - f->size);
    memset(f->dur + f->size, 0, size - f->size);
  }
  f->size = size;
  return 0;
}

static int h_pwrite(void *ctx, const void *buf, size_t n, uint64_t off)
{
  struct hfile *f = ctx;
  if (f->dead)
    return EIO;
  if (off + n > f->size && resize(f, off + n) != 0)
    return ENOSPC;
  if (f->nw == f->capw) {
    size_t cap = f->capw ? 2 * f->capw : 16;
    struct wr *w = realloc(f->w, cap * sizeof *w);
    if (w == NULL)
      return ENOMEM;
    f->w = w;
    f->capw = cap;
  }
  memcpy(f->cur + off, buf, n);
  f->w[f->nw++] = (struct wr){off, n};
  f->hi = off + n;
  f->st.writes++;
  return 0;
}

static int h_pread(void *ctx, void *buf, size_t n, uint64_t off, size_t *got)
{
  struct hfile *f = ctx;
  *got = 0;
  if (f->dead)
    return EIO;
  if (off >= f->size)
    return 0;
  size_t k = off + n > f->size ? (size_t)(f->size - off) : n;
  memcpy(buf, f->cur + off, k);
  *got = k;
  return 0;
}

static int h_sync(void *ctx)
{
  struct hfile *f = ctx;
  if (f->dead)
    return EIO;
  if (f->armed) {              /* the machine dies before the flush */
    f->dead = 1;
    return EIO;
  }
  for (size_t i = 0; i < f->nw; i++)
    if (f->w[i].off < f->size) {
      uint64_t len = f->w[i].off + f->w[i].len > f->size ? f->size - f->w[i].off
                                                         : f->w[i].len;
      memcpy(f->dur + f->w[i].off, f->cur + f->w[i].off, len);
    }
  f->nw = 0;
  f->st.syncs++;
  return 0;
}

static int h_size(void *ctx, uint64_t *size)
{
  struct hfile *f = ctx;
  *size = f->size;
  return f->dead ? EIO : 0;
}

static int h_allocate(void *ctx, uint64_t off, uint64_t len)
{
  struct hfile *f = ctx;
  if (f->dead)
    return EIO;
  return off + len > f->size ? resize(f, off + len) : 0;
}

static int h_truncate(void *ctx, uint64_t len)
{
  struct hfile *f = ctx;
  if (f->dead)
    return EIO;
  if (len >= f->size)
    return resize(f, len);
  f->size = len;
  if (f->hi > len)
    f->hi = len;
  return 0;
}

static void h_close(void *ctx)
{
  (void)ctx;                   /* the file outlives the node */
}

static const struct hl_file_ops hfile_ops = {
  .pwrite = h_pwrite, .pread = h_pread, .sync = h_sync, .size = h_size,
  .allocate = h_allocate, .truncate = h_truncate, .close = h_close,
};

struct hfile *hfile_new(void)
{
  return calloc(1, sizeof(struct hfile));
}

void hfile_free(struct hfile *f)
{
  if (f == NULL)
    return;
  free(f->cur);
  free(f->dur);
  free(f->w);
  free(f);
}

struct hl_file hfile_file(struct hfile *f)
{
  return (struct hl_file){&hfile_ops, f};
}

void hfile_crash(struct hfile *f, uint64_t r)
{
  uint64_t total = 0;
  for (size_t i = 0; i < f->nw; i++)
    total += f->w[i].len;
  uint64_t keep = total ? r % (total + 1) : 0;
  if (keep > 0 && keep < total)
    f->st.torn++;
  for (size_t i = 0; i < f->nw && keep > 0; i++) {
    uint64_t off = f->w[i].off, take = f->w[i].len < keep ? f->w[i].len : keep;
    if (off < f->size) {
      uint64_t len = off + take > f->size ? f->size - off : take;
      memcpy(f->dur + off, f->cur + off, len);
    }
    keep -= take;
  }
  if (f->size)
    memcpy(f->cur, f->dur, f->size);
  f->nw = 0;
  f->armed = f->dead = 0;
  f->st.crashes++;
}

void hfile_arm(struct hfile *f, int on)
{
  f->armed = on;
}

int hfile_dead(const struct hfile *f)
{
  return f->dead;
}

int hfile_corrupt(struct hfile *f, uint64_t r)
{
  if (f->hi == 0)
    return 0;
  uint64_t byte = r % f->hi;
  uint8_t bit = (uint8_t)(1u << (r / f->hi % 8));
  f->cur[byte] ^= bit;
  f->dur[byte] ^= bit;
  f->st.corruptions++;
  return 1;
}

const struct hfile_stats *hfile_stats(const struct hfile *f)
{
  return &f->st;
}
