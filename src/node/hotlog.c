/*
 * hotlog.c: the storage node's hot log (see hotlog.h), paper §3.3, Fig. 4:
 * step 2 "persist and ack" is the only disk work in the foreground.
 *
 * Why a log beside lmdb. lmdb's durable commit costs two device flushes,
 * one after the other (kv_lmdb.c: fdatasync of the data pages, then the
 * O_DSYNC write of the meta page), and a group commit waits for both
 * before it acknowledges. An append-only file needs one: the node writes
 * everything a turn changed as one frame after the last, fdatasyncs it,
 * and acknowledges; lmdb commits nothing durable meanwhile (its batched
 * mode, kv_lmdb.c: between checkpoints every store transaction is nested
 * in one outer lmdb transaction, in memory), so it lags what the log
 * holds, and a checkpoint (store.c) brings it level: commit lmdb's outer
 * transaction, synced, then start a new generation of the log. At start,
 * the frames since the last checkpoint are replayed into lmdb before the
 * node serves.
 * This is the "hot log" of Aurora's storage node: the durable queue of
 * records that were acknowledged, from which the slower structures are
 * built in the background.
 *
 * The file. Preallocated in chunks (allocate: posix_fallocate), so that an
 * append seldom changes the file's size (an fdatasync that must also write
 * the inode's size costs a journal commit) and never runs out of space
 * midway; reused from offset 0 after each checkpoint, so that after the
 * first cycle an append overwrites blocks that are already written.
 *
 * A frame (integers big-endian, as every key of the store):
 *
 *    0  magic   4   "AHL2" ("AHL1": an older auralog's, refused)
 *    4  len     4   payload bytes
 *    8  gen     8   the generation the frame belongs to
 *   16  seq     8   its number in the generation: 0 is the generation's
 *                   start frame (empty), then 1, 2, 3, ... without a gap
 *   24  crc     4   the sum (lib/sum.h) of bytes 4..24 and of the payload
 *   28  payload len bytes (store.c says what is in it)
 *
 * Frames follow each other without padding. The scan (hl_open) reads the
 * file from the start: the frame at offset 0 must be a start frame, and
 * gives the current generation; then each frame must be whole: its magic,
 * that generation, the next number, a length that fits in the file, its
 * CRC. The first frame that is not whole ends the log; what follows it is
 * the torn tail, which the next append overwrites. That is what a crash
 * leaves: a frame half written (short, or the preallocated zeros after
 * it), or a frame of an older generation (stale: a checkpoint restarted
 * the log at 0 and these frames were not overwritten yet).
 *
 * Rules (the scan relies on them; hl_append and hl_reset keep them):
 *   - within a generation, frames are written at increasing offsets with
 *     consecutive numbers, and each append is synced before the next is
 *     written: a whole frame of generation g numbered s proves that every
 *     frame of g below s was written whole and synced before it;
 *   - a generation is started by a synced start frame at offset 0, with a
 *     number higher than any generation in the file: once hl_reset
 *     returns, no frame of an older generation is ever read again;
 *   - an append that failed moves nothing: the next one is written at the
 *     same offset with the same number.
 *
 * A damaged frame in the middle. If a frame is not whole, but further on
 * there is a whole frame of the same generation with a higher number, the
 * bad bytes are not a torn tail (the first rule: everything below that
 * number was synced), they are damage: bit rot, a bad sector. Stopping
 * there would silently drop every later frame, records this node
 * acknowledged included. So the scan reports it (rate-limited) and goes on
 * from the whole frame; the damaged frames are lost. The node acknowledged
 * the records they held, and now lacks them: the segment's chain has a
 * hole there (the SCL stops below it), and gossip fetches them from the
 * PG's peers. The volume is safe: an acknowledged record was on 4 of the 6
 * segments, so 3 good copies remain, as after a lost disk.
 *
 * Deterministic: nothing here reads a clock or an address; the simulator
 * runs this same code on its in-memory file (sim/hfile.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sum.h"
#include "node/hotlog.h"
#include "net/wire.h"

#define HL_MAGIC 0x41484C32u /* "AHL2": sums by XXH3 (lib/sum.h) */
#define HL_MAGIC_OLD 0x41484C31u /* "AHL1": zlib crc32, store format 1 */

/* ---- frames ---------------------------------------------------------------- */

static uint32_t frame_crc(const uint8_t *hdr, const uint8_t *p, size_t n)
{
  struct sum c;
  sum_init(&c);
  sum_bytes(&c, hdr + 4, 20);
  sum_bytes(&c, p, n);
  return sum_end(&c);
}

/* Is buf[off..] a whole frame (magic, length within n, CRC)? Then its
 * fields, whatever its generation and number. */
static int frame_parse(const uint8_t *buf, size_t n, uint64_t off, uint64_t *gen,
                       uint64_t *seq, uint32_t *len)
{
  if (off > n || n - off < HL_HDR)
    return 0;
  const uint8_t *h = buf + off;
  if (get_be32(h) != HL_MAGIC)
    return 0;
  uint32_t l = get_be32(h + 4);
  if (l > n - off - HL_HDR)
    return 0;                /* runs past the file: a torn length */
  if (get_be32(h + 24) != frame_crc(h, h + HL_HDR, l))
    return 0;
  *gen = get_be64(h + 8);
  *seq = get_be64(h + 16);
  *len = l;
  return 1;
}

int hl_frame_ok(const uint8_t *buf, size_t n, uint64_t off, uint64_t gen, uint64_t seq,
                uint32_t *len)
{
  uint64_t g, s;
  return frame_parse(buf, n, off, &g, &s, len) && g == gen && s == seq;
}

static void frame_header(uint8_t *h, uint64_t gen, uint64_t seq, uint32_t len)
{
  put_be32(h, HL_MAGIC);
  put_be32(h + 4, len);
  put_be64(h + 8, gen);
  put_be64(h + 16, seq);
  put_be32(h + 24, frame_crc(h, h + HL_HDR, len));
}

/* The first whole frame of generation gen numbered above seq at or after
 * off (its offset in *at and number in *next), if any. Only a damaged
 * frame in the middle can be followed by one (see the top). */
static int find_later(const uint8_t *buf, size_t n, uint64_t off, uint64_t gen,
                      uint64_t seq, uint64_t *at, uint64_t *next)
{
  uint8_t m[4];
  put_be32(m, HL_MAGIC);
  for (uint64_t p = off; p + HL_HDR <= n; p++) {
    const uint8_t *q = memchr(buf + p, m[0], n - HL_HDR + 1 - p);
    if (q == NULL)
      return 0;
    p = (uint64_t)(q - buf);
    uint64_t g, s;
    uint32_t l;
    /* The header's fields before the CRC: stale frames of older
     * generations, the usual bytes after a torn tail, cost no CRC. */
    if (memcmp(q, m, 4) == 0 && get_be64(q + 8) == gen && get_be64(q + 16) > seq &&
        frame_parse(buf, n, p, &g, &s, &l) && g == gen && s > seq) {
      *at = p;
      *next = s;
      return 1;
    }
  }
  return 0;
}

/* The highest generation of any whole frame in the file (0: none). */
static uint64_t max_gen(const uint8_t *buf, size_t n)
{
  uint64_t best = 0;
  for (uint64_t p = 0; p + HL_HDR <= n; p++) {
    const uint8_t *q = memchr(buf + p, 0x41, n - HL_HDR + 1 - p);
    if (q == NULL)
      break;
    p = (uint64_t)(q - buf);
    uint64_t g, s;
    uint32_t l;
    if (frame_parse(buf, n, p, &g, &s, &l) && g > best)
      best = g;
  }
  return best;
}

/* ---- the log --------------------------------------------------------------- */

/* Room in the file for end bytes: reserve whole chunks beyond alloc. */
static int reserve(struct hotlog *h, uint64_t end)
{
  if (end <= h->alloc)
    return 0;
  uint64_t want = end - h->alloc;
  uint64_t grow = (want + h->chunk - 1) / h->chunk * h->chunk;
  int rc = h->f.ops->allocate(h->f.ctx, h->alloc, grow);
  if (rc == ENOSPC && grow > want)   /* a nearly full disk: just this frame */
    rc = h->f.ops->allocate(h->f.ctx, h->alloc, grow = want);
  if (rc == 0)
    h->alloc += grow;
  return rc;
}

/* Write buf[0..n) at off and sync it. */
static int write_sync(struct hotlog *h, const uint8_t *buf, size_t n, uint64_t off,
                      char *why, size_t whylen)
{
  int rc = reserve(h, off + n);
  if (rc != 0) {
    snprintf(why, whylen, "hot log: cannot reserve %llu bytes: %s",
             (unsigned long long)(off + n), strerror(rc));
    return rc;
  }
  if ((rc = h->f.ops->pwrite(h->f.ctx, buf, n, off)) != 0) {
    snprintf(why, whylen, "hot log: write of %zu bytes at %llu failed: %s", n,
             (unsigned long long)off, strerror(rc));
    return rc;
  }
  rc = h->f.ops->sync(h->f.ctx);
  h->syncs++;
  if (rc != 0)
    snprintf(why, whylen, "hot log: fdatasync failed: %s", strerror(rc));
  return rc;
}

int hl_reset(struct hotlog *h, uint64_t shrink, char *why, size_t whylen)
{
  uint8_t hdr[HL_HDR];
  frame_header(hdr, h->gen + 1, 0, 0);
  int rc = write_sync(h, hdr, sizeof hdr, 0, why, whylen);
  if (rc != 0)
    return rc;
  h->gen++;
  h->seq = 1;
  h->pos = HL_HDR;
  /* A turn far larger than usual grew the file: give the space back (the
   * frames there are dead now). Failing to is no error. */
  if (shrink && h->alloc > shrink && h->f.ops->truncate(h->f.ctx, shrink) == 0)
    h->alloc = shrink;
  return 0;
}

int hl_append(struct hotlog *h, const void *p, size_t n, char *why, size_t whylen)
{
  if (n > UINT32_MAX - HL_HDR) {
    snprintf(why, whylen, "hot log: a frame of %zu bytes is too large", n);
    return EFBIG;
  }
  if (h->wcap < HL_HDR + n) {
    size_t cap = h->wcap ? h->wcap : 4096;
    while (cap < HL_HDR + n)
      cap *= 2;
    uint8_t *b = realloc(h->wbuf, cap);
    if (b == NULL) {
      snprintf(why, whylen, "hot log: out of memory for a %zu-byte frame", n);
      return ENOMEM;
    }
    h->wbuf = b;
    h->wcap = cap;
  }
  if (n)
    memcpy(h->wbuf + HL_HDR, p, n);
  frame_header(h->wbuf, h->gen, h->seq, (uint32_t)n);
  int rc = write_sync(h, h->wbuf, HL_HDR + n, h->pos, why, whylen);
  if (rc != 0)
    return rc;               /* nothing moves: the next append goes here */
  h->pos += HL_HDR + n;
  h->seq++;
  h->appends++;
  return 0;
}

int hl_open(struct hotlog *h, struct hl_file f, uint64_t chunk, hl_frame_fn fn,
            void *arg, char *why, size_t whylen)
{
  memset(h, 0, sizeof *h);
  h->f = f;
  h->chunk = chunk ? chunk : 1;
  uint64_t size = 0;
  int rc = f.ops->size(f.ctx, &size);
  uint8_t *buf = NULL;
  size_t got = 0;
  if (rc == 0 && size > 0) {
    if ((buf = malloc(size)) == NULL)
      rc = ENOMEM;
    else
      rc = f.ops->pread(f.ctx, buf, size, 0, &got);
  }
  if (rc != 0) {
    snprintf(why, whylen, "hot log: cannot read it: %s", strerror(rc));
    free(buf);
    hl_close(h);
    return -1;
  }
  h->alloc = size;
  size_t n = got;
  /* A log an older auralog wrote (its sums are zlib's crc32): every frame
   * would look damaged, and replaying nothing would lose what only it
   * holds. Refused: the store it belongs to is refused too (store.c). */
  if (n >= 4 && get_be32(buf) == HL_MAGIC_OLD) {
    snprintf(why, whylen, "hot log: written by an older auralog (store format 1); this one "
             "reads only format 2: start the cluster in a new directory");
    free(buf);
    hl_close(h);
    return -1;
  }

  /* The current generation: the start frame at 0; if that one is damaged,
   * the frame that follows it (number 1, right after an empty start), but
   * only if nothing says that frame is older than the damaged start: a
   * reset writes only the start frame, so once a generation is started
   * and before its first append, offset HL_HDR still holds frame 1 of an
   * older generation, already checkpointed into lmdb. Replaying it would
   * bring back records a truncation since then cut, and older SegMetas
   * (store.c, H3). So the fallback's generation must be above every other
   * generation of a whole frame in the file, and the damaged start frame's
   * own generation field (a bit flip seldom hits it) must name it. Else
   * the log counts as empty, which is safe: lmdb holds what was
   * checkpointed, fences and truncations are synced in lmdb (H3, H6), and
   * the records of the frames lost are fetched from PG peers, as after any
   * damaged frame. */
  uint64_t g, s, off = 0, expect = 1;
  uint32_t l;
  int have = 0;
  if (frame_parse(buf, n, 0, &g, &s, &l) && s == 0) {
    have = 1;
    off = HL_HDR + (uint64_t)l;
  } else if (frame_parse(buf, n, HL_HDR, &g, &s, &l) && s == 1) {
    h->damaged++;
    uint64_t named = get_be64(buf + 8);     /* n >= 2 * HL_HDR: frame 1 parsed */
    if (max_gen(buf, n) == g && named == g) {
      have = 1;
      off = HL_HDR;
      logwarn_rl("hot log: its start frame is damaged; reading generation %llu from "
                 "the frame after it", (unsigned long long)g);
    } else {
      logwarn_rl("hot log: its start frame is damaged, and the frame after it is of "
                 "generation %llu, older than %s %llu: replaying nothing (lmdb holds "
                 "what was checkpointed; the records of any newer frame are fetched "
                 "from PG peers)", (unsigned long long)g,
                 named != g ? "the start frame's" : "a frame of", (unsigned long long)
                 (named != g ? named : max_gen(buf, n)));
    }
  }
  if (!have) {
    /* Nothing to replay (a new file, or a crash while it was restarted):
     * start a generation above any frame in the file, which all stay dead. */
    h->gen = max_gen(buf, n);
    free(buf);
    if ((rc = hl_reset(h, 0, why, whylen)) != 0) {
      hl_close(h);
      return -1;
    }
    return 0;
  }
  h->gen = g;
  while (off + HL_HDR <= n) {
    if (hl_frame_ok(buf, n, off, h->gen, expect, &l)) {
      if (fn)
        fn(arg, expect, buf + off + HL_HDR, l);
      h->replayed++;
      off += HL_HDR + (uint64_t)l;
      expect++;
      continue;
    }
    uint64_t at, next;
    if (!find_later(buf, n, off + 1, h->gen, expect, &at, &next))
      break;                 /* the torn tail: the log ends here */
    h->damaged += next - expect;
    logwarn_rl("hot log: %llu frame%s from number %llu of generation %llu (bytes "
               "%llu..%llu) damaged, whole frames follow: skipped; the records lost "
               "are fetched from PG peers (gossip)", (unsigned long long)(next - expect),
               next - expect > 1 ? "s" : "", (unsigned long long)expect,
               (unsigned long long)h->gen, (unsigned long long)off,
               (unsigned long long)at);
    off = at;
    expect = next;
  }
  free(buf);
  h->pos = off;
  h->seq = expect;
  return 0;
}

void hl_close(struct hotlog *h)
{
  if (h->f.ops)
    h->f.ops->close(h->f.ctx);
  h->f.ops = NULL;
  free(h->wbuf);
  h->wbuf = NULL;
  h->wcap = 0;
}

/* ---- the file on a real disk ----------------------------------------------- */

struct posix_file {
  int fd;
};

#define FD(ctx) (((struct posix_file *)(ctx))->fd)

static int p_pwrite(void *ctx, const void *buf, size_t n, uint64_t off)
{
  const uint8_t *b = buf;
  while (n > 0) {
    ssize_t w = pwrite(FD(ctx), b, n, (off_t)off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return errno;
    if (w == 0)
      return EIO;
    b += w;
    n -= (size_t)w;
    off += (uint64_t)w;
  }
  return 0;
}

static int p_pread(void *ctx, void *buf, size_t n, uint64_t off, size_t *got)
{
  uint8_t *b = buf;
  *got = 0;
  while (n > 0) {
    ssize_t r = pread(FD(ctx), b, n, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return errno;
    if (r == 0)
      break;
    b += r;
    n -= (size_t)r;
    off += (uint64_t)r;
    *got += (size_t)r;
  }
  return 0;
}

static int p_sync(void *ctx)
{
  return fdatasync(FD(ctx)) == 0 ? 0 : errno;
}

static int p_size(void *ctx, uint64_t *size)
{
  struct stat st;
  if (fstat(FD(ctx), &st) != 0)
    return errno;
  *size = (uint64_t)st.st_size;
  return 0;
}

static int p_allocate(void *ctx, uint64_t off, uint64_t len)
{
  /* posix_fallocate returns the error (not errno); on a file system
   * without fallocate glibc writes zeros instead. */
  return posix_fallocate(FD(ctx), (off_t)off, (off_t)len);
}

static int p_truncate(void *ctx, uint64_t len)
{
  return ftruncate(FD(ctx), (off_t)len) == 0 ? 0 : errno;
}

static void p_close(void *ctx)
{
  close(FD(ctx));
  free(ctx);
}

static const struct hl_file_ops posix_ops = {
  .pwrite = p_pwrite, .pread = p_pread, .sync = p_sync, .size = p_size,
  .allocate = p_allocate, .truncate = p_truncate, .close = p_close,
};

int hl_file_posix(const char *path, struct hl_file *f, char *why, size_t whylen)
{
  struct posix_file *pf = malloc(sizeof *pf);
  if (pf == NULL) {
    snprintf(why, whylen, "cannot open %s: out of memory", path);
    return -1;
  }
  /* A new file's name must be durable too, or a power loss could take
   * the whole log with it: sync the directory once, when it is created. */
  int created = 1;
  pf->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (pf->fd < 0 && errno == EEXIST) {
    created = 0;
    pf->fd = open(path, O_RDWR | O_CLOEXEC);
  }
  if (pf->fd >= 0 && created) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0;
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      fsync(dfd);
      close(dfd);
    }
  }
  if (pf->fd < 0) {
    snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
    free(pf);
    return -1;
  }
  f->ops = &posix_ops;
  f->ctx = pf;
  return 0;
}
