/*
 * test_blfile.c: the community binlog's file (vfs/blfile.c), issue 29.
 *
 * Real files, in a directory of this process's own ($TMPDIR or /tmp,
 * auralog-unit-blfile-PID), removed at the end. Checks:
 *   - appended frames (packed BinlogTxns, and an empty one) come back from
 *     a reopen in order, whole, with their offsets; the file keeps working;
 *   - a torn last frame (cut short, a byte flipped in its payload or its
 *     length, zeros the file system left) is cut off and reported, and the
 *     next append goes where it was;
 *   - damage with a whole frame after it refuses the open (and a read),
 *     naming the offset, and changes nothing; so does a whole frame whose
 *     XID is not above the one before; a file that is not a binlog, too;
 *   - an append whose XID is not above the last is refused, nothing
 *     written; a frame over BLF_PAYLOAD_MAX too; a second open is refused;
 *   - blf_read_from / blf_read_range give exactly the frames after a
 *     given XID (none missing, none twice), chunk after chunk, and stop
 *     quietly at a torn tail;
 *   - 8 threads appending and syncing: every frame lands, each sync
 *     returns with its XID durable, and fewer fdatasyncs than appends;
 *     8 threads that all append before any syncs: one fdatasync for the
 *     8 (the leader's), the other 7 join it;
 *   - an append that runs into the file size limit (RLIMIT_FSIZE, SIGXFSZ
 *     ignored) fails with a reason and leaves the file as it was;
 *   - the cost of append + sync (1 and 8 threads) and of the scan at open,
 *     from the disk and from the page cache (printed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auralog.pb-c.h"
#include "lib/log.h"
#include "lib/sum.h"
#include "net/wire.h"
#include "vfs/blfile.h"

#define FILE_HDR 16            /* blfile.c's format, restated to damage it on purpose */
#define FRAME_HDR 20

static char dir[200];

static const char *path_of(const char *name)
{
  static char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static uint64_t file_size(const char *p)
{
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  return (uint64_t)st.st_size;
}

/* xid's payload: 0..499 bytes that only it has. */
static size_t payload(uint64_t xid, uint8_t *b)
{
  size_t n = (size_t)(xid * 37 % 500);
  for (size_t i = 0; i < n; i++)
    b[i] = (uint8_t)(xid * 131 + i * 7);
  return n;
}

/* What a read or a scan gave: XIDs, offsets, payloads checked. */
struct got {
  uint64_t xid[4096];
  uint64_t off[4096];
  size_t n;
  int bad;                   /* a payload that is not its XID's */
};

static void collect(void *arg, uint64_t xid, const uint8_t *p, size_t n, uint64_t off)
{
  struct got *g = arg;
  uint8_t want[512];
  size_t wn = payload(xid, want);
  if (wn != n || memcmp(want, p, n) != 0)
    g->bad++;
  if (g->n < 4096) {
    g->xid[g->n] = xid;
    g->off[g->n] = off;
  }
  g->n++;
}

static void append_ok(struct blfile *f, uint64_t xid, uint64_t *ticket)
{
  uint8_t b[512];
  char why[256];
  size_t n = payload(xid, b);
  uint64_t t;
  int rc = blf_append(f, xid, b, n, ticket ? ticket : &t, why, sizeof why);
  if (rc != 0)
    fail_msg("append %llu: %s", (unsigned long long)xid, why);
}

/* A file with frames of xid 1..n, each synced; the frames' offsets in off. */
static void make_file(const char *p, uint64_t n, uint64_t *off)
{
  char why[256];
  unlink(p);
  struct blfile *f = blf_open(p, NULL, NULL, NULL, why, sizeof why);
  assert_non_null(f);
  for (uint64_t x = 1; x <= n; x++) {
    uint64_t t;
    if (off)
      off[x] = blf_size(f);
    append_ok(f, x, &t);
    assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  }
  blf_close(f);
}

static void poke(const char *p, uint64_t at, uint8_t xor)
{
  int fd = open(p, O_RDWR);
  uint8_t c;
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, &c, 1, (off_t)at), 1);
  c ^= xor;
  assert_int_equal(pwrite(fd, &c, 1, (off_t)at), 1);
  close(fd);
}

/* Open p expecting frames 1..n and a torn tail cut at `at` (0: none). */
static struct blfile *reopen(const char *p, uint64_t n, uint64_t at)
{
  struct got *g = calloc(1, sizeof *g);
  struct blf_scan s;
  char why[256];
  struct blfile *f = blf_open(p, collect, g, &s, why, sizeof why);
  if (f == NULL)
    fail_msg("reopen: %s", why);
  assert_int_equal(g->n, n);
  assert_int_equal(g->bad, 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(g->xid[i], i + 1);
  assert_int_equal(s.frames, n);
  assert_int_equal(s.last_xid, n);
  assert_int_equal(s.torn, at != 0);
  if (at) {
    assert_int_equal(s.torn_at, at);
    assert_int_equal(s.torn_bytes, s.bytes - at);
    assert_int_equal(file_size(p), at);
  }
  assert_int_equal(blf_size(f), file_size(p));
  free(g);
  return f;
}

/* ---- the tests -------------------------------------------------------------- */

static void txn_seen(void *arg, uint64_t xid, const uint8_t *p, size_t n, uint64_t off)
{
  struct got *g = arg;
  if (xid == 1000) {         /* the empty frame */
    g->bad += n != 0;
  } else {
    Auralog__BinlogTxn *t = auralog__binlog_txn__unpack(NULL, n, p);
    if (t == NULL || t->commit_lsn != xid || t->n_events != xid % 3 + 1)
      g->bad++;
    else
      g->bad += strcmp(t->events[t->n_events - 1]->table, "t") != 0;
    auralog__binlog_txn__free_unpacked(t, NULL);
  }
  g->off[g->n % 4096] = off;
  g->xid[g->n++ % 4096] = xid;
}

/* xid's transaction, packed into buf: xid % 3 + 1 events on table t. */
static size_t pack_txn(uint64_t x, uint8_t *buf)
{
  Auralog__BinlogEvent ev[3], *evp[3];
  for (int i = 0; i < 3; i++) {
    auralog__binlog_event__init(&ev[i]);
    ev[i].index = (uint32_t)i;
    ev[i].op = 1;
    ev[i].table = "t";
    ev[i].rowid = (int64_t)x;
    evp[i] = &ev[i];
  }
  Auralog__BinlogTxn txn = AURALOG__BINLOG_TXN__INIT;
  txn.commit_lsn = x;
  txn.n_events = x % 3 + 1;
  txn.events = evp;
  return auralog__binlog_txn__pack(&txn, buf);
}

/* The engine's cut after a recovery that rolled nothing forward
 * (community.c): frames above the XID go, durably; the rest stay, the
 * file keeps working, and the next XID may be any above the cut. */
static void cut_after_drops_the_frames_above(void **state)
{
  (void)state;
  const char *p = path_of("cut");
  char why[256];
  struct blfile *f = blf_open(p, NULL, NULL, NULL, why, sizeof why);
  assert_non_null(f);
  uint64_t t = 0, cut = 0;
  uint8_t buf[600];
  for (uint64_t x = 1; x <= 5; x++)
    assert_int_equal(blf_append(f, x * 10, buf, payload(x * 10, buf), &t, why, sizeof why), 0);
  assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  assert_int_equal(blf_cut_after(f, 50, &cut, why, sizeof why), 0);
  assert_int_equal(cut, 0);             /* nothing above */
  assert_int_equal(blf_cut_after(f, 35, &cut, why, sizeof why), 0);
  assert_true(cut > 0);
  struct blf_stats st;
  blf_stats(f, &st);
  assert_int_equal(st.last_xid, 30);
  assert_int_equal(st.size, file_size(p));
  assert_int_equal(blf_append(f, 31, buf, payload(31, buf), &t, why, sizeof why), 0);
  assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  blf_close(f);
  struct blf_scan s;
  struct got *g = calloc(1, sizeof *g);
  f = blf_open(p, txn_seen, g, &s, why, sizeof why);
  assert_non_null(f);
  assert_int_equal(s.frames, 4);
  assert_int_equal(s.last_xid, 31);
  assert_false(s.torn);
  free(g);
  blf_close(f);
}

static void frames_come_back_in_order(void **state)
{
  (void)state;
  const char *p = path_of("roundtrip");
  char why[256];
  struct blf_scan s;
  struct blfile *f = blf_open(p, NULL, NULL, &s, why, sizeof why);
  assert_non_null(f);
  assert_int_equal(s.frames, 0);
  assert_int_equal(s.bytes, FILE_HDR);
  assert_null(blf_open(p, NULL, NULL, NULL, why, sizeof why));   /* one writer */
  assert_non_null(strstr(why, "another process"));
  uint64_t t = 0;
  uint8_t buf[256];
  for (uint64_t x = 10; x <= 990; x += 10) {
    size_t n = pack_txn(x, buf);
    assert_int_equal(blf_append(f, x, buf, n, &t, why, sizeof why), 0);
    assert_int_equal(t, blf_size(f));
    if (x % 70 == 0)
      assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  }
  assert_int_equal(blf_append(f, 1000, NULL, 0, &t, why, sizeof why), 0);
  assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  struct blf_stats st;
  blf_stats(f, &st);
  assert_int_equal(st.appends, 100);
  assert_int_equal(st.synced_xid, 1000);
  assert_int_equal(st.size, file_size(p));
  blf_close(f);
  for (int round = 0; round < 2; round++) {
    struct got *g = calloc(1, sizeof *g);
    f = blf_open(p, txn_seen, g, &s, why, sizeof why);
    assert_non_null(f);
    assert_int_equal(g->n, 100 + round);
    assert_int_equal(g->bad, 0);
    assert_int_equal(g->off[0], FILE_HDR);
    for (size_t i = 1; i < g->n; i++)
      assert_true(g->xid[i] > g->xid[i - 1] && g->off[i] > g->off[i - 1]);
    assert_int_equal(s.first_xid, 10);
    assert_int_equal(s.last_xid, round ? 1010 : 1000);
    assert_int_equal(s.bytes, file_size(p));
    assert_false(s.torn);
    free(g);
    if (round == 0) {        /* the file keeps working after a reopen */
      assert_int_equal(blf_append(f, 1010, buf, pack_txn(1010, buf), &t, why, sizeof why), 0);
      assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
    }
    blf_close(f);
  }
}

static void torn_last_frame_is_cut(void **state)
{
  (void)state;
  const char *p = path_of("torn");
  uint64_t off[12];
  /* What a crash mid-append leaves, each in turn: the frame short (in its
   * header, in its payload), a byte of it wrong (payload, length), its
   * pages never written (zeros past the end). */
  struct { const char *what; int cut; uint64_t at; uint8_t xor; uint64_t zeros; } c[] = {
    {"short in its header", 1, 7, 0, 0},
    {"short in its payload", 1, FRAME_HDR + 3, 0, 0},
    {"a payload byte flipped", 0, FRAME_HDR + 1, 0x10, 0},
    {"its length damaged", 0, 5, 0x80, 0},
    {"its length made smaller", 0, 7, 0x01, 0},
    {"zeros after the last frame", 0, 0, 0, 4096},
    {"zeros in place of the last frame", 2, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    print_message("torn tail: %s\n", c[i].what);
    make_file(p, 11, off);
    uint64_t size = file_size(p), last = off[11], at = last;
    if (c[i].cut == 1)
      assert_int_equal(truncate(p, (off_t)(last + c[i].at)), 0);
    else if (c[i].cut == 2) {
      int fd = open(p, O_RDWR);
      static const uint8_t z[1024];
      assert_int_equal(pwrite(fd, z, size - last, (off_t)last), (ssize_t)(size - last));
      close(fd);
    } else if (c[i].xor)
      poke(p, last + c[i].at, c[i].xor);
    else {
      assert_int_equal(truncate(p, (off_t)(size + c[i].zeros)), 0);
      at = size;
    }
    struct blfile *f = reopen(p, at == size ? 11 : 10, at);
    /* The next append goes where the cut was, and is read back. */
    uint64_t t, x = at == size ? 12 : 11;
    append_ok(f, x, &t);
    char why[256];
    assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
    blf_close(f);
    blf_close(reopen(p, x, 0));
  }
}

/* A whole frame of xid at the end of p, forged as blfile.c writes one. */
static void forge(const char *p, uint64_t xid)
{
  uint8_t b[FRAME_HDR + 512];
  size_t n = payload(xid, b + FRAME_HDR);
  uint64_t off = file_size(p);
  struct sum s;
  sum_init(&s);
  sum_u64(&s, off);
  sum_u64(&s, xid);
  sum_bytes(&s, b + FRAME_HDR, n);
  put_be32(b, 0x41424C46u);
  put_be32(b + 4, (uint32_t)n);
  put_be64(b + 8, xid);
  put_be32(b + 16, sum_end(&s));
  int fd = open(p, O_WRONLY | O_APPEND);
  assert_int_equal(write(fd, b, FRAME_HDR + n), (ssize_t)(FRAME_HDR + n));
  close(fd);
}

static void damage_before_the_end_refuses(void **state)
{
  (void)state;
  const char *p = path_of("damaged");
  uint64_t off[12];
  char why[256], want[64];
  for (uint64_t bad = 1; bad <= 10; bad += 3) {
    make_file(p, 11, off);
    uint64_t size = file_size(p);
    poke(p, off[bad] + FRAME_HDR + 1, 0x01);  /* a payload byte (each has 37 or more) */
    assert_null(blf_open(p, NULL, NULL, NULL, why, sizeof why));
    snprintf(want, sizeof want, "damaged frame at offset %llu ", (unsigned long long)off[bad]);
    if (strstr(why, want) == NULL)
      fail_msg("frame %llu damaged: \"%s\"", (unsigned long long)bad, why);
    assert_null(strchr(why, '\n'));
    assert_int_equal(file_size(p), size);        /* nothing cut */
    struct got *g = calloc(1, sizeof *g);
    assert_int_equal(blf_read_from(p, 0, collect, g, why, sizeof why), -1);
    assert_non_null(strstr(why, want));
    assert_int_equal(g->n, bad - 1);             /* what is before it was good */
    free(g);
  }
  /* A whole frame, but its XID is not above the one before: damage. */
  make_file(p, 5, off);
  forge(p, 5);
  assert_null(blf_open(p, NULL, NULL, NULL, why, sizeof why));
  assert_non_null(strstr(why, "xid 5, not above 5"));
  make_file(p, 5, off);
  forge(p, 6);                                   /* (the forger is right) */
  blf_close(reopen(p, 6, 0));
  /* Some other file is left alone. */
  const char *q = path_of("notes.txt");
  FILE *o = fopen(q, "w");
  fputs("not a binlog\n", o);
  fclose(o);
  assert_null(blf_open(q, NULL, NULL, NULL, why, sizeof why));
  assert_non_null(strstr(why, "not a binlog"));
  assert_int_equal(file_size(q), 13);
}

static void xids_must_increase(void **state)
{
  (void)state;
  const char *p = path_of("order");
  make_file(p, 5, NULL);
  struct blfile *f = reopen(p, 5, 0);
  uint64_t size = blf_size(f), t = 7;
  char why[256];
  uint8_t b[8] = {0};
  for (uint64_t x = 0; x <= 5; x++) {
    why[0] = 0;
    assert_int_equal(blf_append(f, x, b, sizeof b, &t, why, sizeof why), -1);
    assert_non_null(strstr(why, "not above the last, 5"));
  }
  assert_int_equal(t, 7);
  assert_int_equal(blf_append(f, 6, b, BLF_PAYLOAD_MAX + 1, &t, why, sizeof why), -1);
  assert_non_null(strstr(why, "at most"));
  assert_int_equal(blf_size(f), size);
  assert_int_equal(file_size(p), size);
  append_ok(f, 6, NULL);
  blf_close(f);
  blf_close(reopen(p, 6, 0));
}

static void read_from_resumes_exactly(void **state)
{
  (void)state;
  const char *p = path_of("consumer");
  char why[256];
  unlink(p);
  struct blfile *f = blf_open(p, NULL, NULL, NULL, why, sizeof why);
  assert_non_null(f);
  /* XIDs 10, 20, ... 500 (commit LSNs have gaps), read while the writer
   * has the file open. */
  uint64_t t;
  for (uint64_t x = 10; x <= 500; x += 10)
    append_ok(f, x, &t);
  assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  static const uint64_t after[] = {0, 9, 10, 11, 15, 250, 251, 490, 495, 500, 1000};
  for (size_t i = 0; i < sizeof after / sizeof after[0]; i++) {
    struct got *g = calloc(1, sizeof *g);
    assert_int_equal(blf_read_from(p, after[i], collect, g, why, sizeof why), 0);
    uint64_t want = after[i] / 10 * 10 + 10;
    assert_int_equal(g->n, want > 500 ? 0 : (500 - want) / 10 + 1);
    for (size_t k = 0; k < g->n; k++)
      assert_int_equal(g->xid[k], want + 10 * k);
    assert_int_equal(g->bad, 0);
    free(g);
  }
  /* A consumer reading in pieces, each from where the last ended. */
  for (uint64_t step = 1; step <= 130; step += 43) {
    struct got *g = calloc(1, sizeof *g);
    uint64_t pos = 0;
    for (int k = 0; k < 1000 && pos < 500; k++) {
      assert_int_equal(blf_read_range(p, pos, pos + step, collect, g, why, sizeof why), 0);
      pos += step;           /* every frame up to pos + step is read */
    }
    assert_int_equal(g->n, 50);
    for (size_t k = 0; k < g->n; k++)
      assert_int_equal(g->xid[k], 10 + 10 * k);
    free(g);
  }
  /* A frame half written (a live writer's, a crash's): the read stops
   * before it, no error. */
  uint64_t size = blf_size(f);
  append_ok(f, 510, &t);
  blf_close(f);
  assert_int_equal(truncate(p, (off_t)(size + 9)), 0);
  struct got *g = calloc(1, sizeof *g);
  assert_int_equal(blf_read_from(p, 480, collect, g, why, sizeof why), 0);
  assert_int_equal(g->n, 2);
  assert_int_equal(g->xid[1], 500);
  assert_int_equal(file_size(p), size + 9);      /* read-only */
  free(g);
}

/* A consumer's batches (blf_read_batch): each resumes at the last frame
 * the one before looked at, so the first frame handed out is past the
 * start of the file (each frame read about once, not once a batch); every
 * frame comes once, in order; a consumer that moves back, or a file cut
 * and written again under its cursor, reads from the start instead and
 * still gets exactly the frames after its position. */
static void batches_resume_at_their_cursor(void **state)
{
  (void)state;
  const char *p = path_of("batches");
  char why[256];
  uint64_t off[201];
  make_file(p, 200, off);
  struct blf_cursor cur = {0};
  struct got *g = calloc(1, sizeof *g);
  uint64_t pos = 0;
  int batches = 0;
  while (pos < 200 && batches < 1000) {
    size_t before = g->n;
    assert_int_equal(blf_read_batch(p, &cur, pos, 3 * 40, collect, g, why, sizeof why), 0);
    assert_true(g->n > before);
    if (batches > 0)         /* resumed: its first frame is the one after the cursor's */
      assert_int_equal(g->off[before], off[pos + 1]);
    pos = g->xid[g->n - 1];
    assert_int_equal(cur.xid, pos);
    assert_int_equal(cur.off, off[pos]);
    batches++;
  }
  assert_int_equal(g->n, 200);
  for (size_t k = 0; k < g->n; k++)
    assert_int_equal(g->xid[k], k + 1);
  assert_true(batches > 10);
  assert_int_equal(g->bad, 0);
  /* Proof that a batch does not read the file from its start: with frame
   * 50 damaged, a read from the start refuses the file, the next batch
   * from the cursor does not look there. (The engine's scan at its next
   * start reads every frame and would refuse it.) */
  poke(p, off[50] + 24, 0x5a);
  struct blf_cursor fresh = {0};
  assert_int_equal(blf_read_batch(p, &fresh, 150, 0, NULL, NULL, why, sizeof why), -1);
  struct blf_cursor keep = cur;
  assert_int_equal(blf_read_batch(p, &keep, 200, 0, NULL, NULL, why, sizeof why), 0);
  poke(p, off[50] + 24, 0x5a);   /* mended */
  /* Moved back: from the start, only what follows its position. */
  struct got *h = calloc(1, sizeof *h);
  assert_int_equal(blf_read_batch(p, &cur, 50, 0, collect, h, why, sizeof why), 0);
  assert_int_equal(h->n, 150);
  assert_int_equal(h->xid[0], 51);
  /* Cut after 120 and written again with other frames: the cursor's
   * frame (200) is gone, so the read starts over; it gets 121' .. */
  struct blfile *f = blf_open(p, NULL, NULL, NULL, why, sizeof why);
  assert_non_null(f);
  uint64_t cut = 0, t;
  assert_int_equal(blf_cut_after(f, 120, &cut, why, sizeof why), 0);
  for (uint64_t x = 300; x < 330; x++)
    append_ok(f, x, &t);
  assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  blf_close(f);
  memset(h, 0, sizeof *h);
  assert_int_equal(blf_read_batch(p, &cur, 200, 0, collect, h, why, sizeof why), 0);
  assert_int_equal(h->n, 30);
  assert_int_equal(h->xid[0], 300);
  assert_int_equal(cur.xid, 329);
  free(g);
  free(h);
}

/* ---- threads ---------------------------------------------------------------- */

struct crowd {
  struct blfile *f;
  pthread_mutex_t order;     /* the caller's commit order: XID and append together */
  uint64_t next;
  int per;                   /* commits per thread */
  pthread_barrier_t *step;   /* if set: every thread appends, then every thread syncs */
  int failed;
  uint64_t usec;             /* summed over commits */
};

static void *committer(void *arg)
{
  struct crowd *c = arg;
  uint8_t b[512];
  char why[256];
  for (int i = 0; i < c->per; i++) {
    unsigned long long t0 = now_us();
    pthread_mutex_lock(&c->order);
    uint64_t xid = ++c->next, t;
    size_t n = payload(xid, b);
    int rc = blf_append(c->f, xid, b, n, &t, why, sizeof why);
    pthread_mutex_unlock(&c->order);
    struct blf_stats st;
    if (c->step)
      pthread_barrier_wait(c->step);
    if (rc == 0)
      rc = blf_sync(c->f, t, why, sizeof why);
    blf_stats(c->f, &st);
    pthread_mutex_lock(&c->order);
    c->usec += now_us() - t0;
    if (rc != 0 || st.synced_xid < xid)    /* sync returned before its frame was durable */
      c->failed++;
    pthread_mutex_unlock(&c->order);
    if (c->step)
      pthread_barrier_wait(c->step);
  }
  return NULL;
}

/* n threads, per commits each, on a fresh file (in step: all append,
 * then all sync); the stats. */
static void crowd_run(const char *p, int n, int per, int step, struct blf_stats *st, double *us)
{
  char why[256];
  unlink(p);
  pthread_barrier_t b;
  pthread_barrier_init(&b, NULL, (unsigned)n);
  struct crowd c = {.per = per, .step = step ? &b : NULL};
  pthread_mutex_init(&c.order, NULL);
  c.f = blf_open(p, NULL, NULL, NULL, why, sizeof why);
  assert_non_null(c.f);
  pthread_t th[16];
  for (int i = 0; i < n; i++)
    pthread_create(&th[i], NULL, committer, &c);
  for (int i = 0; i < n; i++)
    pthread_join(th[i], NULL);
  assert_int_equal(c.failed, 0);
  blf_stats(c.f, st);
  *us = (double)c.usec / (n * per);
  blf_close(c.f);
  pthread_mutex_destroy(&c.order);
  pthread_barrier_destroy(&b);
}

static void threads_group_commit(void **state)
{
  (void)state;
  const char *p = path_of("crowd");
  struct blf_stats st;
  double us;
  /* In step: the first to sync leads, for all 8 frames; the others wait
   * and return with it. Exactly one fdatasync a round. */
  crowd_run(p, 8, 50, 1, &st, &us);
  assert_int_equal(st.appends, 400);
  assert_int_equal(st.syncs, 50);
  assert_int_equal(st.joined, 350);
  blf_close(reopen(p, 400, 0));
  /* Free running: whatever groups form, every commit lands. */
  crowd_run(p, 8, 250, 0, &st, &us);
  assert_int_equal(st.appends, 2000);
  assert_int_equal(st.last_xid, 2000);
  assert_int_equal(st.synced_xid, 2000);
  print_message("8 threads x 250: %llu fdatasyncs for %llu appends, %llu syncs joined\n",
                (unsigned long long)st.syncs, (unsigned long long)st.appends,
                (unsigned long long)st.joined);
  assert_true(st.syncs < st.appends);            /* group commit happened */
  assert_true(st.syncs + st.joined == st.appends);
  blf_close(reopen(p, 2000, 0));
}

/* ---- a failed write ---------------------------------------------------------- */

static void failed_write_leaves_the_file(void **state)
{
  (void)state;
  const char *p = path_of("full");
  make_file(p, 3, NULL);
  struct blfile *f = reopen(p, 3, 0);
  uint64_t size = blf_size(f), t = 0;
  char why[256] = "";
  uint8_t b[300];
  memset(b, 0x5a, sizeof b);
  /* Room for the header and part of the payload: a partial frame. */
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = size + 100;
  void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &lim);
  int rc = blf_append(f, 4, b, sizeof b, &t, why, sizeof why);
  uint64_t during = file_size(p);
  setrlimit(RLIMIT_FSIZE, &old);                 /* before any assert prints */
  signal(SIGXFSZ, was);
  assert_int_equal(rc, -1);
  assert_non_null(strstr(why, strerror(EFBIG)));
  assert_non_null(strstr(why, "xid 4"));
  assert_null(strchr(why, '\n'));
  assert_int_equal(during, size);                /* the partial frame was cut back */
  assert_int_equal(blf_size(f), size);
  /* The same XID again, now that there is room. */
  append_ok(f, 4, &t);
  assert_int_equal(blf_sync(f, t, why, sizeof why), 0);
  blf_close(f);
  blf_close(reopen(p, 4, 0));
}

/* ---- costs ------------------------------------------------------------------ */

static void append_sync_cost(void **state)
{
  (void)state;
  const char *p = path_of("cost");
  struct blf_stats st;
  double us;
  crowd_run(p, 1, 300, 0, &st, &us);
  print_message("1 thread: append+sync %.1f us a commit (fdatasync %.1f us), %.2f syncs an "
                "append\n", us, (double)st.sync_usec / (double)st.syncs,
                (double)st.syncs / (double)st.appends);
  crowd_run(p, 8, 150, 0, &st, &us);
  print_message("8 threads: append+sync %.1f us a commit, %.3f syncs an append (%.1f frames "
                "a sync, fdatasync %.1f us)\n", us, (double)st.syncs / (double)st.appends,
                (double)st.appends / (double)st.syncs, (double)st.sync_usec / (double)st.syncs);
  /* The scan at open: every byte read and checked, so it grows with the
   * file (seed 003). 200-byte payloads. */
  char why[256];
  unlink(p);
  struct blfile *f = blf_open(p, NULL, NULL, NULL, why, sizeof why);
  uint8_t b[200];
  memset(b, 7, sizeof b);
  uint64_t t;
  for (uint64_t x = 1; x <= 80000; x++)
    assert_int_equal(blf_append(f, x, b, sizeof b, &t, why, sizeof why), 0);
  blf_close(f);              /* (synced: its pages are clean) */
  for (int cold = 1; cold >= 0; cold--) {
    if (cold) {              /* out of the page cache: read from the disk */
      int fd = open(p, O_RDONLY);
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      close(fd);
    }
    struct blf_scan s;
    f = blf_open(p, NULL, NULL, &s, why, sizeof why);
    assert_non_null(f);
    assert_int_equal(s.frames, 80000);
    print_message("scan at open (%s): %llu frames, %.1f MB in %.1f ms (%.0f MB/s; 1 GB: %.1f "
                  "s)\n", cold ? "cold" : "cached", (unsigned long long)s.frames,
                  (double)s.bytes / 1e6, (double)s.usec / 1e3, (double)s.bytes / (double)s.usec,
                  1e3 * (double)s.usec / (double)s.bytes);
    blf_close(f);
  }
}

static int setup(void **state)
{
  (void)state;
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/auralog-unit-blfile-%d", tmp && *tmp ? tmp : "/tmp",
           (int)getpid());
  return mkdir(dir, 0700);
}

static int teardown(void **state)
{
  (void)state;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(frames_come_back_in_order),
    cmocka_unit_test(cut_after_drops_the_frames_above),
    cmocka_unit_test(torn_last_frame_is_cut),
    cmocka_unit_test(damage_before_the_end_refuses),
    cmocka_unit_test(xids_must_increase),
    cmocka_unit_test(read_from_resumes_exactly),
    cmocka_unit_test(batches_resume_at_their_cursor),
    cmocka_unit_test(threads_group_commit),
    cmocka_unit_test(failed_write_leaves_the_file),
    cmocka_unit_test(append_sync_cost),
  };
  return cmocka_run_group_tests_name("unit: binlog file", tests, setup, teardown);
}
