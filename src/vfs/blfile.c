/*
 * blfile.c: the community binlog's file (see blfile.h), MySQL's binlog in
 * a two-phase commit with the redo (seed 003, Figure 1, top).
 *
 * The file (integers big-endian, as every format of auralog):
 *
 *   header, once, at offset 0:
 *    0  magic      4   "ABLH"
 *    4  version    4   1
 *    8  zero       4
 *   12  sum        4   lib/sum.h's sum32 of bytes 0..12
 *   frames, from offset 16, one after another, no padding:
 *    0  magic      4   "ABLF"
 *    4  len        4   payload bytes, at most BLF_PAYLOAD_MAX
 *    8  xid        8   above the frame before's (the first: above 0)
 *   16  sum        4   the sum of the frame's offset, xid and payload (len
 *                      goes in with the payload: sum_bytes)
 *   20  payload  len   a packed Auralog__BinlogTxn (opaque here)
 *
 * Why the offset is in the sum: a whole frame copied to the wrong place
 * (a file system's bug) is not a frame there. The magic is not needed to
 * read a good file; it lets a scan that met damage look for a whole frame
 * further on cheaply (find_whole).
 *
 * Rules (what the scan relies on; append and sync keep them):
 *   R1 frames are written in XID order at the end, one at a time, under
 *      f->mu; an append that fails cuts its partial frame back before it
 *      returns, so the next frame goes where it would have;
 *   R2 the only durability point is fdatasync of the whole file: once a
 *      frame is synced, every frame before it is too;
 *   R3 the header is written whole before the file has its name (created
 *      under a temporary name, synced, renamed): no torn header, ever.
 *
 * Torn tail or damage. A crash mid-append leaves the last frame short, or
 * its pages never written (zeros, where the file system grew the size
 * first): the first frame that is not whole, with nothing whole after it.
 * Its transaction never reached its commit point (R2: its sync had not
 * returned), so blf_open cuts it off and the engine rolls it back. But a
 * frame that is not whole with a whole frame after it is damage (a bad
 * sector, bit rot, a stray write), not a crash: the frames after it may be
 * synced commits whose clients were told so. Cutting there would silently
 * lose them, so blf_open refuses, naming the offset: an operator decides.
 * (A crash can, rarely, write two unsynced frames' pages out of order; the
 * refusal is then a false alarm, never a loss.) A whole frame whose XID is
 * not above the one before breaks R1: damage too.
 *
 * The scan at open reads every byte from the start and checks every sum:
 * that is the cost the enhanced binlog removes (seed 003, Figure 4). It
 * reads with pread in large chunks, not mmap: a consumer reading a live
 * file that an append cuts back would get SIGBUS from a map.
 *
 * Group commit (MySQL's binlog group commit, its sync stage): appends are
 * cheap (one pwritev into the page cache, under f->mu); fdatasync is the
 * cost (a device flush). A thread in blf_sync whose ticket is not yet
 * durable either finds no sync running and becomes the leader: it notes
 * the end, drops the lock, fdatasyncs once for every frame appended so
 * far, publishes the new durable point and wakes everyone; or finds one
 * running and waits on f->cv. Appenders keep appending while the leader
 * syncs, and the next leader takes all of them at once: the busier the
 * log, the more frames one flush covers, with no timer. A ticket is the
 * file offset where a frame ends; synced <= end always.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sum.h"
#include "net/wire.h"
#include "vfs/blfile.h"

#define FILE_MAGIC  0x41424C48u  /* "ABLH" */
#define FRAME_MAGIC 0x41424C46u  /* "ABLF" */
#define VERSION     1
#define FILE_HDR    16
#define FRAME_HDR   20
#define READ_CHUNK  (2u << 20)   /* the scan reads this much at a time */
typedef unsigned long long ull;

struct blfile {
  pthread_mutex_t mu;        /* everything below */
  pthread_cond_t cv;         /* a sync ended */
  int fd;
  char *path;
  uint64_t end;              /* the file's size: the last frame's ticket */
  uint64_t synced;           /* every byte below is durable (<= end) */
  uint64_t last_xid;         /* XID floor: the next append must be above */
  uint64_t synced_xid;       /* every frame up to this XID is durable */
  int syncing;               /* a leader is in fdatasync (with mu dropped) */
  char broken[200];          /* non-empty: why every call fails */
  struct blf_stats st;       /* the counters (the rest: filled by blf_stats) */
};

static void __attribute__((format(printf, 3, 4)))
say(char *why, size_t whylen, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (why && whylen)
    vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}

/* ---- the formats ------------------------------------------------------------ */

static uint32_t frame_sum(uint64_t off, uint64_t xid, const uint8_t *p, uint32_t len)
{
  struct sum s;
  sum_init(&s);
  sum_u64(&s, off);
  sum_u64(&s, xid);
  sum_bytes(&s, p, len);
  return sum_end(&s);
}

static void frame_header(uint8_t *h, uint64_t off, uint64_t xid, const uint8_t *p, uint32_t len)
{
  put_be32(h, FRAME_MAGIC);
  put_be32(h + 4, len);
  put_be64(h + 8, xid);
  put_be32(h + 16, frame_sum(off, xid, p, len));
}

static void file_header(uint8_t *h)
{
  put_be32(h, FILE_MAGIC);
  put_be32(h + 4, VERSION);
  put_be32(h + 8, 0);
  put_be32(h + 12, sum32(h, 12));
}

/* Is the header of fd (size bytes) good? 0, or -1 with a reason. */
static int header_check(int fd, uint64_t size, const char *path, char *why, size_t whylen)
{
  uint8_t h[FILE_HDR];
  ssize_t k = size < FILE_HDR ? 0 : pread(fd, h, FILE_HDR, 0);
  /* R3: a binlog always has its whole header; without one it is some
   * other file (or a damaged one), and is left alone. */
  if (k < 0)
    say(why, whylen, "%s: reading the header: %s", path, strerror(errno));
  else if (k < FILE_HDR || get_be32(h) != FILE_MAGIC || get_be32(h + 12) != sum32(h, 12))
    say(why, whylen, "%s: no whole binlog header: not a binlog file, or a damaged one", path);
  else if (get_be32(h + 4) != VERSION)
    say(why, whylen, "%s: binlog format version %u; this auralog reads %u", path,
        get_be32(h + 4), VERSION);
  else
    return 0;
  return -1;
}

/* ---- reading ---------------------------------------------------------------- */

/* A forward reader over fd's bytes below lim (the size the scan started
 * with: frames a live writer adds meanwhile are not looked at). */
struct rd {
  int fd;
  uint64_t lim;
  uint8_t *b;                /* cap bytes */
  size_t cap;
  uint64_t at;               /* the file offset of b[0] */
  size_t n;                  /* bytes held */
};

/* Hold at least want bytes from off (fewer only at lim); *p: off's byte.
 * Returns every byte held from off on, or -1 (errno). off never goes back
 * below an earlier call's. */
static ssize_t rd_get(struct rd *r, uint64_t off, size_t want, const uint8_t **p)
{
  if (off < r->at || off > r->at + r->n) {
    r->at = off;
    r->n = 0;
  }
  if (off + want > r->at + r->n) {
    size_t keep = r->at + r->n - off;
    memmove(r->b, r->b + (off - r->at), keep);
    r->at = off;
    r->n = keep;
    if (want > r->cap) {
      uint8_t *nb = realloc(r->b, want);
      if (nb == NULL)
        return -1;
      r->b = nb;
      r->cap = want;
    }
    while (r->n < want && r->at + r->n < r->lim) {
      uint64_t left = r->lim - r->at - r->n;
      size_t ask = r->cap - r->n < left ? r->cap - r->n : (size_t)left;
      ssize_t k = pread(r->fd, r->b + r->n, ask, (off_t)(r->at + r->n));
      if (k < 0 && errno == EINTR)
        continue;
      if (k < 0)
        return -1;
      if (k == 0) {          /* cut back under us (a failed append, a read of a live file) */
        r->lim = r->at + r->n;
        break;
      }
      r->n += (size_t)k;
    }
  }
  *p = r->b + (off - r->at);
  return (ssize_t)(r->at + r->n - off);
}

/* Is there a whole frame at off: magic, a length inside the file, the
 * sum? 1 and its fields, 0, or -1 (errno). */
static int frame_at(struct rd *r, uint64_t off, uint64_t *xid, const uint8_t **pl, uint32_t *len)
{
  const uint8_t *h;
  ssize_t got = rd_get(r, off, FRAME_HDR, &h);
  if (got < 0)
    return -1;
  if (got < FRAME_HDR || get_be32(h) != FRAME_MAGIC)
    return 0;
  uint32_t l = get_be32(h + 4);
  if (l > BLF_PAYLOAD_MAX || l > r->lim - off - FRAME_HDR)
    return 0;                /* a torn or damaged length: past the file */
  if ((got = rd_get(r, off, FRAME_HDR + (size_t)l, &h)) < FRAME_HDR + (ssize_t)l)
    return got < 0 ? -1 : 0;
  uint64_t x = get_be64(h + 8);
  if (get_be32(h + 16) != frame_sum(off, x, h + FRAME_HDR, l))
    return 0;
  *xid = x;
  *pl = h + FRAME_HDR;
  *len = l;
  return 1;
}

/* The first whole frame at or after from, if any (1, *at), else 0; -1
 * (errno). Only after a frame that is not whole: is it damage? */
static int find_whole(struct rd *r, uint64_t from, uint64_t *at, uint64_t *xid)
{
  uint64_t p = from;
  while (p + FRAME_HDR <= r->lim) {
    const uint8_t *q;
    ssize_t got = rd_get(r, p, FRAME_HDR, &q);
    if (got < 0)
      return -1;
    if (got < FRAME_HDR)
      return 0;
    const uint8_t *hit = memchr(q, FRAME_MAGIC >> 24, (size_t)got - FRAME_HDR + 1);
    if (hit == NULL) {
      p += (uint64_t)got - FRAME_HDR + 1;
      continue;
    }
    p += (uint64_t)(hit - q);
    const uint8_t *pl;
    uint32_t len;
    if (get_be32(hit) == FRAME_MAGIC) {
      int rc = frame_at(r, p, xid, &pl, &len);
      if (rc != 0) {
        *at = p;
        return rc;
      }
    }
    p++;
  }
  return 0;
}

/* What one pass over a file found: frames, first and last XIDs, and the
 * offset just after the last good frame looked at (and where that frame
 * starts). A pass may start at a frame boundary past the header (start)
 * and stop once fn was handed max payload bytes (0: no limit; stopped
 * then says so: the rest was not looked at). */
struct walk {
  uint64_t frames, first, last, end, last_off;
  uint64_t start, max;
  int stopped;
};

/* Check every frame of fd from w->start (the header's end if 0) to lim, in
 * order; fn for each with after < xid, stopping before the first above
 * upto. Returns 0 (with w->end < lim and !w->stopped: a torn tail from
 * there), or -1: damage, an I/O error. */
static int walk(int fd, uint64_t lim, uint64_t after, uint64_t upto,
                blf_frame_fn fn, void *arg, struct walk *w, const char *path, char *why,
                size_t whylen)
{
  struct rd r = {.fd = fd, .lim = lim, .cap = READ_CHUNK, .at = 0, .n = 0};
  if ((r.b = malloc(r.cap)) == NULL) {
    say(why, whylen, "%s: out of memory", path);
    return -1;
  }
  uint64_t start = w->start > FILE_HDR ? w->start : FILE_HDR, max = w->max;
  memset(w, 0, sizeof *w);
  uint64_t off = start, last = 0, xid = 0, at = 0, given = 0;
  int rc = 0;                /* 1 at the end: stopped above upto */
  while (off < r.lim) {
    if (max && given >= max) {
      w->stopped = 1;        /* enough for the caller: the rest another time */
      break;
    }
    const uint8_t *pl;
    uint32_t len;
    if ((rc = frame_at(&r, off, &xid, &pl, &len)) <= 0)
      break;
    if (xid <= last) {       /* whole, but against R1 */
      say(why, whylen, "%s: the frame at offset %llu has xid %llu, not above %llu before it: "
          "damaged binlog, refusing it", path, (ull)off, (ull)xid, (ull)last);
      rc = -2;
      break;
    }
    if (xid > upto)
      break;
    if (xid > after && fn) {
      fn(arg, xid, pl, len, off);
      given += len;
    }
    if (w->frames++ == 0)
      w->first = xid;
    w->last = last = xid;
    w->last_off = off;
    off += FRAME_HDR + (uint64_t)len;
    rc = 0;
  }
  w->end = off;
  if (rc == 0 && off < r.lim && !w->stopped) {
    /* Not whole. A torn tail, unless a whole frame follows (the top). */
    rc = find_whole(&r, off + 1, &at, &xid);
    if (rc == 1) {
      say(why, whylen, "%s: damaged frame at offset %llu (after xid %llu), yet a whole frame "
          "follows at offset %llu (xid %llu): not a torn tail, refusing to drop synced "
          "commits", path, (ull)off, (ull)last, (ull)at, (ull)xid);
      rc = -2;
    }
  }
  if (rc == -1)
    say(why, whylen, "%s: reading at offset %llu: %s", path, (ull)off, strerror(errno));
  free(r.b);
  return rc < 0 ? -1 : 0;
}

/* ---- files ------------------------------------------------------------------ */

/* A new name is durable once its directory is synced. */
static int fsync_dir(const char *path)
{
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  int d = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0)
    return -1;
  int rc = fsync(d);
  close(d);
  return rc;
}

/* Write n bytes of iov (cnt parts) at off, whatever the short writes. */
static int pwrite_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
  while (cnt > 0) {
    ssize_t k = pwritev(fd, iov, cnt, (off_t)off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      errno = k ? errno : ENOSPC;
      return -1;
    }
    off += (uint64_t)k;
    while (cnt > 0 && (size_t)k >= iov->iov_len) {
      k -= (ssize_t)iov->iov_len;
      iov++, cnt--;
    }
    if (cnt > 0) {
      iov->iov_base = (uint8_t *)iov->iov_base + k;
      iov->iov_len -= (size_t)k;
    }
  }
  return 0;
}

/* A new file at tmp with a synced header (R3); its fd, or -1 (errno). */
static int new_file(const char *tmp)
{
  uint8_t h[FILE_HDR];
  file_header(h);
  struct iovec v = {h, FILE_HDR};
  int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0 && (pwrite_all(fd, &v, 1, 0) != 0 || fdatasync(fd) != 0)) {
    close(fd);               /* (the next open removes tmp) */
    fd = -1;
  }
  return fd;
}

/* ---- open, append, sync ----------------------------------------------------- */

struct blfile *blf_open(const char *path, blf_frame_fn fn, void *arg, struct blf_scan *scan,
                        char *why, size_t whylen)
{
  unsigned long long t0 = now_us();
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && (fd = new_file(tmp)) >= 0 &&      /* R3 */
      (rename(tmp, path) != 0 || fsync_dir(path) != 0)) {
    close(fd);
    fd = -1;
  }
  if (fd < 0) {
    say(why, whylen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  struct blfile *f;
  struct stat st, named;
  struct walk w = {0};
  /* Two writers would interleave frames: one process has the file. */
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0 || stat(path, &named) != 0) {
    say(why, whylen, "%s: %s", path, errno == EWOULDBLOCK ? "the binlog is open in another "
        "process" : strerror(errno));
    goto fail;
  }
  if (st.st_ino != named.st_ino || st.st_dev != named.st_dev) {
    say(why, whylen, "%s: replaced while it was opened (another process?)", path);
    goto fail;
  }
  unlink(tmp);               /* a create's that a crash left: never the binlog */
  uint64_t size = (uint64_t)st.st_size;
  if (header_check(fd, size, path, why, whylen) != 0 ||
      walk(fd, size, 0, UINT64_MAX, fn, arg, &w, path, why, whylen) != 0)
    goto fail;
  if (w.end < size && ftruncate(fd, (off_t)w.end) != 0) {
    say(why, whylen, "%s: cutting the torn tail at offset %llu: %s", path, (ull)w.end,
        strerror(errno));
    goto fail;
  }
  /* The frames just read may be in the page cache only (the process
   * crashed, not the machine), and the engine is about to roll their
   * transactions forward: they must be durable first, the cut too. */
  if (fdatasync(fd) != 0) {
    say(why, whylen, "%s: fdatasync: %s", path, strerror(errno));
    goto fail;
  }
  if ((f = calloc(1, sizeof *f)) == NULL || (f->path = strdup(path)) == NULL) {
    free(f);
    say(why, whylen, "%s: out of memory", path);
    goto fail;
  }
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  f->fd = fd;
  f->end = f->synced = w.end;
  f->last_xid = f->synced_xid = w.last;
  if (scan)
    *scan = (struct blf_scan){.frames = w.frames, .bytes = size, .first_xid = w.first,
                              .last_xid = w.last, .usec = now_us() - t0, .torn = w.end < size,
                              .torn_at = w.end < size ? w.end : 0, .torn_bytes = size - w.end};
  return f;
fail:
  close(fd);
  return NULL;
}

int blf_append(struct blfile *f, uint64_t xid, const void *buf, size_t len, uint64_t *ticket,
               char *why, size_t whylen)
{
  if (len > BLF_PAYLOAD_MAX) {
    say(why, whylen, "binlog: a frame of %zu bytes (at most %u)", len, (unsigned)BLF_PAYLOAD_MAX);
    return -1;
  }
  uint8_t h[FRAME_HDR];
  struct iovec iov[2] = {{h, FRAME_HDR}, {(void *)buf, len}};
  pthread_mutex_lock(&f->mu);
  int rc = -1;
  uint64_t off = f->end;
  if (f->broken[0]) {
    say(why, whylen, "%s", f->broken);
  } else if (xid <= f->last_xid) {
    say(why, whylen, "%s: xid %llu is not above the last, %llu: refused", f->path, (ull)xid,
        (ull)f->last_xid);
  } else {
    frame_header(h, off, xid, buf, (uint32_t)len);
    if (pwrite_all(f->fd, iov, len ? 2 : 1, off) == 0) {
      f->end += FRAME_HDR + len;
      f->last_xid = xid;
      f->st.appends++;
      f->st.bytes += FRAME_HDR + len;
      *ticket = f->end;
      rc = 0;
    } else {
      int e = errno;
      /* R1: cut back what part of the frame went out (a full disk, a
       * file size limit), so the next append goes here. If even that
       * fails, a later frame after these bytes would be "damage" at the
       * next open: stop. */
      if (ftruncate(f->fd, (off_t)off) != 0)
        snprintf(f->broken, sizeof f->broken, "%s: appending at offset %llu failed (%s), "
                 "and so did cutting it back (%s): reopen the binlog", f->path, (ull)off,
                 strerror(e), strerror(errno));
      say(why, whylen, "%s: appending xid %llu at offset %llu: %s", f->path, (ull)xid,
          (ull)off, strerror(e));
    }
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

int blf_sync(struct blfile *f, uint64_t ticket, char *why, size_t whylen)
{
  pthread_mutex_lock(&f->mu);
  int led = 0, rc = 0;
  /* Invariant: synced <= end, and a leader's target is end when it
   * started; so each pass either returns or sees synced move. */
  while (ticket > f->synced) {
    if (f->broken[0] || ticket > f->end) {   /* (the second: a caller's bug) */
      say(why, whylen, "%s", f->broken[0] ? f->broken : "blf_sync: a ticket past the end");
      rc = -1;
      break;
    }
    if (f->syncing) {
      pthread_cond_wait(&f->cv, &f->mu);
      continue;
    }
    /* The leader: everything appended so far, in one flush. */
    uint64_t target = f->end, txid = f->last_xid;
    int fd = f->fd;
    f->syncing = 1;
    pthread_mutex_unlock(&f->mu);
    unsigned long long t0 = now_us();
    int s = fdatasync(fd), e = errno;
    unsigned long long dt = now_us() - t0;
    pthread_mutex_lock(&f->mu);
    f->syncing = 0;
    f->st.syncs++;
    f->st.sync_usec += dt;
    led = 1;
    if (s != 0) {
      /* Not retried (see blfile.h): whatever is on disk now, the scan at
       * the next open says, and its XIDs decide recovery. */
      snprintf(f->broken, sizeof f->broken, "%s: fdatasync failed (%s): the binlog is broken "
               "until reopened", f->path, strerror(e));
    } else if (target > f->synced) {
      f->synced = target;
      f->synced_xid = txid;
    }
    pthread_cond_broadcast(&f->cv);
  }
  if (rc == 0 && !led)
    f->st.joined++;
  pthread_mutex_unlock(&f->mu);
  return rc;
}

/* ---- consumers -------------------------------------------------------------- */

/* A consumer's read (blfile.h): frames with after < xid <= upto, about max
 * payload bytes of them (0: all). With a cursor (blf_read_batch), from the
 * last frame the previous read looked at, if that frame is still there
 * whole at its offset with its XID (the file may have been cut and
 * written again since; the frame's sum covers its offset and XID), else
 * from the header; a consumer that moved back before it needs the frames
 * before it: from the header too. The cursor moves to the last frame this
 * read looked at. */
static int read_file(const char *path, struct blf_cursor *cur, uint64_t after, uint64_t upto,
                     size_t max, blf_frame_fn fn, void *arg, char *why, size_t whylen)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    say(why, whylen, "%s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  struct walk w = {0};
  int rc = -1;
  if (fstat(fd, &st) != 0) {
    say(why, whylen, "%s: %s", path, strerror(errno));
  } else if (header_check(fd, (uint64_t)st.st_size, path, why, whylen) == 0) {
    uint64_t size = (uint64_t)st.st_size, from = FILE_HDR;
    if (cur && cur->off > FILE_HDR && cur->off < size && after >= cur->xid) {
      /* Is that frame still there? (Nothing handed out: upto its XID.) */
      char ignore[8];
      w.start = cur->off;
      if (walk(fd, size, UINT64_MAX, cur->xid, NULL, NULL, &w, path, ignore,
               sizeof ignore) == 0 && w.frames > 0 && w.first == cur->xid)
        from = cur->off;
    }
    memset(&w, 0, sizeof w);
    w.start = from;
    w.max = max;
    rc = walk(fd, size, after, upto, fn, arg, &w, path, why, whylen);
    if (cur && rc == 0 && w.frames > 0) {
      cur->off = w.last_off;
      cur->xid = w.last;
    }
  }
  close(fd);                 /* a torn tail: w.end < size, and nothing more to give */
  return rc;
}

int blf_read_range(const char *path, uint64_t after, uint64_t upto, blf_frame_fn fn, void *arg,
                   char *why, size_t whylen)
{
  return read_file(path, NULL, after, upto, 0, fn, arg, why, whylen);
}

int blf_read_from(const char *path, uint64_t after, blf_frame_fn fn, void *arg, char *why,
                  size_t whylen)
{
  return read_file(path, NULL, after, UINT64_MAX, 0, fn, arg, why, whylen);
}

int blf_read_batch(const char *path, struct blf_cursor *cur, uint64_t after, size_t max,
                   blf_frame_fn fn, void *arg, char *why, size_t whylen)
{
  return read_file(path, cur, after, UINT64_MAX, max, fn, arg, why, whylen);
}

/* ---- the rest --------------------------------------------------------------- */

int blf_cut_after(struct blfile *f, uint64_t xid, uint64_t *cut, char *why, size_t whylen)
{
  pthread_mutex_lock(&f->mu);
  struct walk w = {0};
  int rc = -1;
  *cut = 0;
  if (f->broken[0])
    say(why, whylen, "%s", f->broken);
  else if (f->syncing)
    say(why, whylen, "%s: a sync is in progress", f->path);
  else if (walk(f->fd, f->end, 0, xid, NULL, NULL, &w, f->path, why, whylen) == 0) {
    if (w.end == f->end)
      rc = 0;                /* nothing above xid */
    else if (ftruncate(f->fd, (off_t)w.end) != 0 || fdatasync(f->fd) != 0)
      say(why, whylen, "%s: cutting after xid %llu: %s", f->path, (ull)xid, strerror(errno));
    else {
      *cut = f->end - w.end;
      f->end = f->synced = w.end;
      f->last_xid = f->synced_xid = w.last;
      f->st.syncs++;
      rc = 0;
    }
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

uint64_t blf_size(const struct blfile *f)
{
  struct blfile *m = (struct blfile *)f;   /* the lock only */
  pthread_mutex_lock(&m->mu);
  uint64_t n = f->end;
  pthread_mutex_unlock(&m->mu);
  return n;
}

void blf_stats(const struct blfile *f, struct blf_stats *st)
{
  struct blfile *m = (struct blfile *)f;
  pthread_mutex_lock(&m->mu);
  *st = f->st;
  st->size = f->end;
  st->last_xid = f->last_xid;
  st->synced_xid = f->synced_xid;
  pthread_mutex_unlock(&m->mu);
}

void blf_close(struct blfile *f)
{
  if (f == NULL)
    return;
  if (!f->broken[0] && f->synced < f->end)
    (void)fdatasync(f->fd);
  close(f->fd);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f->path);
  free(f);
}
