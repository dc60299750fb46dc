/*
 * test_hotlog.c: the storage node's hot log (node/hotlog.c) and the store
 * that acknowledges from it (node/store.c).
 *
 * The framing, on a real file (hl_file_posix in a temporary directory):
 *   - N frames appended come back after a reopen, in order, byte for byte;
 *   - a torn tail at every byte offset of the last frame (the file cut
 *     there, or zeros from there on, as in preallocated space): the frames
 *     before it come back, it does not, and the next append works and is
 *     read back after another reopen;
 *   - one byte of a middle frame damaged, at every offset of that frame
 *     (header or payload): that frame is skipped and counted as damaged,
 *     the frames after it come back;
 *   - after a reset (a checkpoint), frames of the old generation that
 *     remain past the new ones read as the end.
 * The simulator's file (sim/hfile.c): a sync that fails and a crash keep a
 * prefix of the unsynced frame; the scan stops there and appends go on.
 *
 * The store on the simulated disk and file: records acknowledged through
 * the hot log survive a crash that loses every lmdb commit since the last
 * checkpoint (replay puts them back); a truncation after commits, then a
 * crash, never brings back what it cut (the checkpoint before it; and
 * seg_admit refuses them even when old frames are replayed). And the store
 * on lmdb: lmdb's file rolled back to the last checkpoint (what a power
 * loss may leave in lmdb's batched mode, kv_lmdb.c), and the hot log puts
 * back every record committed since.
 *
 * A damaged start frame: the scan falls back to the frame after it only
 * when that frame is of the newest generation in the file and the start
 * frame still names it; frame 1 of an older generation (a reset writes the
 * start frame alone, so it stays there until the next append), already in
 * lmdb, is never replayed (before, it was, with what it held).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "node/hotlog.h"
#include "node/kv.h"
#include "param.h"
#include "node/segment.h"
#include "node/store.h"
#include "record.h"
#include "sim/disk.h"
#include "sim/hfile.h"
#include "net/wire.h"

/* ---- frames ------------------------------------------------------------------ */

#define NF 6

/* Frame i's payload: i+5 bytes of a pattern of i. */
static size_t payload(int i, uint8_t *p)
{
  size_t n = (size_t)i + 5;
  for (size_t j = 0; j < n; j++)
    p[j] = (uint8_t)(i * 31 + j);
  return n;
}

/* What a scan handed over. */
struct got {
  int n;
  uint64_t seq[64];
  uint8_t p[64][64];
  size_t len[64];
};

static void collect(void *arg, uint64_t seq, const uint8_t *p, size_t n)
{
  struct got *g = arg;
  assert_true(g->n < 64 && n <= 64);
  g->seq[g->n] = seq;
  memcpy(g->p[g->n], p, n);
  g->len[g->n++] = n;
}

static char dir[64], path[128];

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/auralog-unit-hl-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/hot.log", dir);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void open_log(struct hotlog *h, struct got *g)
{
  char why[256];
  struct hl_file f;
  memset(g, 0, sizeof *g);
  assert_int_equal(hl_file_posix(path, &f, why, sizeof why), 0);
  assert_int_equal(hl_open(h, f, 256, collect, g, why, sizeof why), 0);
}

static void append(struct hotlog *h, int i)
{
  char why[256];
  uint8_t p[64];
  size_t n = payload(i, p);
  assert_int_equal(hl_append(h, p, n, why, sizeof why), 0);
}

/* g holds frames want[0..n) (by payload index), numbered 1.. in order. */
static void expect(const struct got *g, const int *want, int n)
{
  assert_int_equal(g->n, n);
  for (int k = 0; k < n; k++) {
    uint8_t p[64];
    size_t len = payload(want[k], p);
    assert_int_equal(g->len[k], len);
    assert_memory_equal(g->p[k], p, len);
  }
}

/* A fresh log with frames 0..NF-1; *ends: where each frame ends. */
static void fresh(uint64_t ends[NF])
{
  struct hotlog h;
  struct got g;
  unlink(path);
  open_log(&h, &g);
  assert_int_equal(g.n, 0);
  assert_int_equal(h.pos, HL_HDR);         /* the generation's start frame */
  for (int i = 0; i < NF; i++) {
    append(&h, i);
    ends[i] = h.pos;
  }
  assert_int_equal(h.syncs, NF + 1);       /* one per frame, and the start */
  hl_close(&h);
}

static void test_frames_read_back(void **state)
{
  (void)state;
  uint64_t ends[NF];
  fresh(ends);
  struct hotlog h;
  struct got g;
  open_log(&h, &g);
  int want[NF] = {0, 1, 2, 3, 4, 5};
  expect(&g, want, NF);
  for (int k = 0; k < NF; k++)
    assert_int_equal(g.seq[k], (uint64_t)k + 1);
  assert_int_equal(h.damaged, 0);
  assert_int_equal(h.pos, ends[NF - 1]);   /* the next append goes after them */
  assert_true(h.alloc >= 256);             /* preallocated, a chunk at a time */
  hl_close(&h);
}

/* Cut (or zero) the file from off on, reopen: frames 0..NF-2 only; append
 * frame 9; reopen: 0..NF-2 and 9. */
static void torn_at(uint64_t off, int zero)
{
  if (zero) {
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);

    off_t end = lseek(fd, 0, SEEK_END);
    static const uint8_t zeros[4096];
    assert_true(end >= (off_t)off);
    assert_int_equal(pwrite(fd, zeros, (size_t)(end - (off_t)off), (off_t)off),
                     end - (off_t)off);
    close(fd);
  } else {
    assert_int_equal(truncate(path, (off_t)off), 0);
  }
  struct hotlog h;
  struct got g;
  open_log(&h, &g);
  int want[NF] = {0, 1, 2, 3, 4, 9};
  expect(&g, want, NF - 1);
  assert_int_equal(h.damaged, 0);          /* a torn tail is no damage */
  append(&h, 9);
  hl_close(&h);
  open_log(&h, &g);
  expect(&g, want, NF);
  hl_close(&h);
}

static void test_torn_tail_at_every_byte(void **state)
{
  (void)state;
  uint64_t ends[NF];
  for (int zero = 0; zero < 2; zero++) {
    fresh(ends);
    uint64_t start = ends[NF - 2], end = ends[NF - 1];
    for (uint64_t off = start; off < end; off++) {
      fresh(ends);
      torn_at(off, zero);
    }
  }
}

static void flip(uint64_t off, uint8_t bits)
{
  int fd = open(path, O_RDWR);
  uint8_t b;
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
  b ^= bits;
  assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
  close(fd);
}

static void test_damaged_middle_frame_is_skipped(void **state)
{
  (void)state;
  uint64_t ends[NF];
  fresh(ends);
  uint64_t start = ends[1], end = ends[2];  /* frame 2 */
  for (uint64_t off = start; off < end; off++) {
    fresh(ends);
    flip(off, (uint8_t)(1u << (off % 8)));
    struct hotlog h;
    struct got g;
    open_log(&h, &g);
    int want[NF - 1] = {0, 1, 3, 4, 5};
    expect(&g, want, NF - 1);
    assert_int_equal(g.seq[2], 4);         /* 3 is the damaged one */
    assert_int_equal(h.damaged, 1);
    assert_int_equal(h.pos, ends[NF - 1]);
    hl_close(&h);
  }
  /* Damage in the last frame cannot be told from a torn write: the end. */
  fresh(ends);
  flip(ends[NF - 1] - 1, 0x10);
  struct hotlog h;
  struct got g;
  open_log(&h, &g);
  int want[NF] = {0, 1, 2, 3, 4, 5};
  expect(&g, want, NF - 1);
  assert_int_equal(h.pos, ends[NF - 2]);
  hl_close(&h);
}

static void test_old_generation_reads_as_the_end(void **state)
{
  (void)state;
  char why[256];
  uint64_t ends[NF];
  fresh(ends);
  struct hotlog h;
  struct got g;
  open_log(&h, &g);
  uint64_t gen = h.gen;
  assert_int_equal(hl_reset(&h, 0, why, sizeof why), 0);
  assert_int_equal(h.gen, gen + 1);
  hl_close(&h);
  open_log(&h, &g);                        /* nothing after the new start */
  assert_int_equal(g.n, 0);
  assert_int_equal(h.gen, gen + 1);
  append(&h, 0);                           /* shorter than the old 0 + 1: */
  append(&h, 0);                           /* old frames 1.. lie after them */
  assert_true(h.pos < ends[NF - 1]);
  hl_close(&h);
  open_log(&h, &g);
  int want[2] = {0, 0};
  expect(&g, want, 2);
  assert_int_equal(h.damaged, 0);          /* and they are no damage either */
  hl_close(&h);
  /* A start frame torn by a crash (during a reset): every frame in the
   * file is dead, and the new generation is above all of them. */
  flip(0, 0xff);
  flip(HL_HDR + 1, 0xff);                  /* and the frame after it */
  open_log(&h, &g);
  assert_int_equal(g.n, 0);
  assert_true(h.gen > gen + 1);
  hl_close(&h);
}

/* The whole file, or back (n bytes). */
static size_t slurp(uint8_t *buf, size_t cap)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static void spill(const uint8_t *buf, size_t n)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, n, f), n);
  fclose(f);
}

static void test_damaged_start_never_replays_an_older_generation(void **state)
{
  (void)state;
  char why[256];
  uint64_t ends[NF];
  struct hotlog h;
  struct got g;
  /* Generation G's frames, checkpointed: a reset starts G + 1, and writes
   * its start frame only. Frame 1 of G still follows it. */
  fresh(ends);
  open_log(&h, &g);
  uint64_t gen = h.gen;
  assert_int_equal(hl_reset(&h, 0, why, sizeof why), 0);
  hl_close(&h);
  static uint8_t ckpt[4096];
  size_t n = slurp(ckpt, sizeof ckpt);
  /* One bit of the start frame damaged, wherever: G's frames are never
   * replayed (before, all six were, from the frame after the start). */
  for (uint64_t off = 0; off < HL_HDR; off++) {
    spill(ckpt, n);
    flip(off, (uint8_t)(1u << (off % 8)));
    open_log(&h, &g);
    assert_int_equal(g.n, 0);
    assert_true(h.gen > gen);             /* a new generation above them */
    assert_int_equal(h.pos, HL_HDR);
    append(&h, 7);                        /* and the log goes on */
    hl_close(&h);
    open_log(&h, &g);
    int want[1] = {7};
    expect(&g, want, 1);
    hl_close(&h);
  }
  /* The frame after a damaged start is of the current generation: read
   * from it, unless the damage hit the start frame's generation field
   * (then nothing: the safe side). */
  for (uint64_t off = 0; off < HL_HDR; off++) {
    fresh(ends);
    flip(off, (uint8_t)(1u << (off % 8)));
    open_log(&h, &g);
    int want[NF] = {0, 1, 2, 3, 4, 5};
    if (off >= 8 && off < 16) {
      assert_int_equal(g.n, 0);
    } else {
      expect(&g, want, NF);
      assert_int_equal(h.pos, ends[NF - 1]);
    }
    assert_int_equal(h.damaged, 1);
    hl_close(&h);
  }
  /* A whole frame of a newer generation further on: the frame after the
   * start is not the newest, whatever the start frame says. */
  fresh(ends);
  static uint8_t older[4096], newer[4096];
  n = slurp(older, sizeof older);
  open_log(&h, &g);
  assert_int_equal(hl_reset(&h, 0, why, sizeof why), 0);
  for (int i = 0; i < NF; i++)
    append(&h, i);                        /* the same frames, at the same places */
  hl_close(&h);
  assert_int_equal(slurp(newer, sizeof newer), n);
  memcpy(newer, older, ends[1]);          /* G's start and frames 1, 2; G + 1's 3.. */
  spill(newer, n);
  flip(24, 0x01);                         /* G's start frame's CRC */
  open_log(&h, &g);
  assert_int_equal(g.n, 0);
  assert_true(h.gen > gen + 1);
  hl_close(&h);
}

/* The simulator's file: a crash between a frame's write and its sync. */
static void test_sim_file_crash(void **state)
{
  (void)state;
  char why[256];
  for (uint64_t r = 0; r < 40; r++) {
    struct hfile *f = hfile_new();
    struct hotlog h;
    struct got g = {0};
    assert_int_equal(hl_open(&h, hfile_file(f), 64, collect, &g, why, sizeof why), 0);
    append(&h, 0);
    append(&h, 1);
    hfile_arm(f, 1);
    uint8_t p[64];
    size_t n = payload(2, p);
    assert_int_not_equal(hl_append(&h, p, n, why, sizeof why), 0);  /* EIO */
    assert_true(hfile_dead(f));
    hl_close(&h);
    hfile_crash(f, r);                     /* keeps r % (HL_HDR + n + 1) bytes of it */
    memset(&g, 0, sizeof g);
    assert_int_equal(hl_open(&h, hfile_file(f), 64, collect, &g, why, sizeof why), 0);
    uint64_t kept = r % (HL_HDR + n + 1);
    int want[3] = {0, 1, 2};
    expect(&g, want, kept == HL_HDR + n ? 3 : 2);
    append(&h, 3);
    hl_close(&h);
    hfile_crash(f, 0);                     /* synced: nothing of it is lost */
    memset(&g, 0, sizeof g);
    assert_int_equal(hl_open(&h, hfile_file(f), 64, collect, &g, why, sizeof why), 0);
    assert_int_equal(g.n, kept == HL_HDR + n ? 4 : 3);
    hl_close(&h);
    hfile_free(f);
  }
}

/* ---- the store ----------------------------------------------------------------- */

#define FIRST 256
#define NPAGES 64
#define PSIZE 4096
#define CKPT (1u << 20)

struct trec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[8];
};

static void mkrec(struct trec *t, uint64_t lsn, uint64_t prev, uint64_t epoch)
{
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  memset(t->data, (int)(lsn & 0xff), sizeof t->data);
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = FIRST + (uint32_t)(lsn % 4);
  t->r.epoch = epoch;
  t->g.off = (uint32_t)(8 * (lsn % 8));
  t->g.data.len = sizeof t->data;
  t->g.data.data = t->data;
  t->gp = &t->g;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
}

static struct segment loaded;

static void keep(void *arg, struct segment *s)
{
  (void)arg;
  loaded = *s;
}

/* Records from..to, chained, of epoch ep, stored with s's SegMeta in one
 * group commit (as node_commit does), then chained in s. */
static void group(struct store *st, struct segment *s, uint64_t from, uint64_t prev,
                  uint64_t to, uint64_t ep)
{
  char why[256];
  assert_int_equal(store_begin(st, why, sizeof why), 0);
  for (uint64_t lsn = from; lsn <= to; lsn++) {
    struct trec t;
    mkrec(&t, lsn, lsn == from ? prev : lsn - 1, ep);
    int dup;
    assert_int_equal(seg_admit(s, &t.r, &dup, why, sizeof why), ERR_NONE);
    assert_int_equal(store_put_rec(st, s, &t.r, why, sizeof why), 0);
  }
  assert_int_equal(store_put_meta(st, s, why, sizeof why), 0);
  assert_int_equal(store_commit(st, why, sizeof why), 0);
  for (uint64_t lsn = from; lsn <= to; lsn++)
    seg_add(s, lsn, lsn == from ? prev : lsn - 1);
}

static void reopen_sim(struct store *st, struct disk *d, struct hfile *f)
{
  char why[256];
  assert_int_equal(store_open_hot(st, disk_kv(d), hfile_file(f), CKPT, 4096, why,
                                  sizeof why), 0);
  memset(&loaded, 0, sizeof loaded);
  assert_int_equal(store_load(st, keep, NULL, why, sizeof why), 0);
}

static void crash_sim(struct store *st, struct disk *d, struct hfile *f)
{
  disk_crash(d);                           /* every unsynced lmdb commit lost */
  hfile_crash(f, 0);                       /* the log keeps what it synced */
  store_close(st);
}

static void test_store_acks_survive_crash(void **state)
{
  (void)state;
  struct disk *d = disk_new();
  struct hfile *f = hfile_new();
  struct store st;
  reopen_sim(&st, d, f);
  struct segment s;
  seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
  for (uint64_t lsn = 1; lsn <= 40; lsn += 5)
    group(&st, &s, lsn, lsn - 1, lsn + 4, 1);
  assert_int_equal(st.commits, 8);
  assert_int_equal(st.fsyncs, 8);          /* one device flush per group commit */
  assert_int_equal(st.ckpt_fsyncs, 0);
  assert_int_equal(st.syncs_per_commit, 0);/* lmdb's own: none */
  crash_sim(&st, d, f);
  assert_int_equal(disk_entries(d, "recs"), 0);   /* lmdb lost them all ... */
  reopen_sim(&st, d, f);
  assert_int_equal(st.replayed, 40);              /* ... the log had them */
  assert_int_equal(loaded.scl, 40);
  assert_int_equal(loaded.npend, 0);
  for (uint64_t lsn = 1; lsn <= 40; lsn++)
    assert_true(store_held(&st, &loaded, lsn, NULL));
  seg_free(&loaded);
  /* The replay was checkpointed: another crash loses nothing either. */
  crash_sim(&st, d, f);
  reopen_sim(&st, d, f);
  assert_int_equal(st.replayed, 0);
  assert_int_equal(loaded.scl, 40);
  seg_free(&loaded);
  /* A checkpoint is one lmdb sync and one log restart; then a crash
   * replays nothing and loses nothing. */
  group(&st, &s, 41, 40, 45, 1);
  char why[256];
  assert_int_equal(store_checkpoint(&st, why, sizeof why), 0);
  assert_int_equal(st.checkpoints, 1);
  assert_int_equal(st.ckpt_fsyncs, 2);
  assert_int_equal(hl_used(st.hl), HL_HDR);
  crash_sim(&st, d, f);
  reopen_sim(&st, d, f);
  assert_int_equal(st.replayed, 0);
  assert_int_equal(loaded.scl, 45);
  seg_free(&loaded);
  seg_free(&s);
  store_close(&st);
  disk_free(d);
  hfile_free(f);
}

/* Truncate (epoch 2, from 10 to 30] as node_truncate does: checkpoint
 * (unless skip_ckpt), then a synced transaction of its own. */
static void truncate_seg(struct store *st, struct segment *s, int skip_ckpt)
{
  char why[256];
  if (!skip_ckpt)
    assert_int_equal(store_checkpoint(st, why, sizeof why), 0);
  assert_int_equal(store_begin(st, why, sizeof why), 0);
  struct trunc t = {2, 10, 30};
  size_t cut = 0;
  assert_int_equal(store_truncate(st, s, &t, &cut, why, sizeof why), 0);
  assert_int_equal(cut, 10);
  seg_add_trunc(s, &t);
  s->epoch = 2;
  assert_int_equal(store_rechain(st, s, store_tail(st, s, 10), why, sizeof why), 0);
  assert_int_equal(s->scl, 10);
  assert_int_equal(store_put_meta(st, s, why, sizeof why), 0);
  assert_int_equal(store_commit(st, why, sizeof why), 0);
}

static void test_truncation_not_resurrected(void **state)
{
  (void)state;
  for (int skip_ckpt = 0; skip_ckpt < 2; skip_ckpt++) {
    struct disk *d = disk_new();
    struct hfile *f = hfile_new();
    struct store st;
    reopen_sim(&st, d, f);
    seg_free(&loaded);
    struct segment s;
    seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
    s.epoch = 1;
    group(&st, &s, 1, 0, 10, 1);
    group(&st, &s, 11, 10, 20, 1);         /* epoch 1's 11..20: cut below */
    uint64_t fsyncs = st.ckpt_fsyncs;
    truncate_seg(&st, &s, skip_ckpt);
    /* the truncation's own transaction is synced in lmdb */
    assert_int_equal(st.ckpt_fsyncs, fsyncs + (skip_ckpt ? 1 : 3));
    group(&st, &s, 21, 10, 25, 2);         /* epoch 2 chains on 10 */
    assert_int_equal(s.scl, 25);
    crash_sim(&st, d, f);
    reopen_sim(&st, d, f);
    /* Without the checkpoint the old frames are replayed, and seg_admit
     * refuses what the truncation (held in lmdb, synced) cut. */
    assert_int_equal(st.replayed, 5);      /* 21..25 */
    assert_int_equal(loaded.scl, 25);
    assert_int_equal(loaded.npend, 0);
    assert_int_equal(loaded.ntruncs, 1);
    assert_int_equal(loaded.epoch, 2);
    for (uint64_t lsn = 11; lsn <= 20; lsn++)
      assert_false(store_held(&st, &loaded, lsn, NULL));
    for (uint64_t lsn = 1; lsn <= 10; lsn++)
      assert_true(store_held(&st, &loaded, lsn, NULL));
    for (uint64_t lsn = 21; lsn <= 25; lsn++)
      assert_true(store_held(&st, &loaded, lsn, NULL));
    seg_free(&loaded);
    seg_free(&s);
    store_close(&st);
    disk_free(d);
    hfile_free(f);
  }
}

/* Replaying an old SegMeta never lowers the epoch or the VDL. */
static void test_replay_never_lowers_meta(void **state)
{
  (void)state;
  char why[256];
  struct disk *d = disk_new();
  struct hfile *f = hfile_new();
  struct store st;
  reopen_sim(&st, d, f);
  seg_free(&loaded);
  struct segment s;
  seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
  s.epoch = 1;
  s.vdl = 5;
  group(&st, &s, 1, 0, 5, 1);              /* a frame with epoch 1, VDL 5 */
  /* A fence to epoch 4, synced in lmdb (as trunc.c's fence does). */
  s.epoch = 4;
  s.vdl = 9;
  assert_int_equal(store_begin(&st, why, sizeof why), 0);
  store_sync_txn(&st);
  assert_int_equal(store_put_meta(&st, &s, why, sizeof why), 0);
  assert_int_equal(store_commit(&st, why, sizeof why), 0);
  crash_sim(&st, d, f);
  reopen_sim(&st, d, f);
  assert_int_equal(loaded.epoch, 4);
  assert_int_equal(loaded.vdl, 9);
  assert_int_equal(loaded.scl, 5);
  seg_free(&loaded);
  seg_free(&s);
  store_close(&st);
  disk_free(d);
  hfile_free(f);
}

static int copy_file(const char *from, const char *to)
{
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
  return system(cmd);
}

/* On lmdb: data.mdb rolled back to the last checkpoint, as a power loss
 * may leave it in batched mode; the hot log puts every record back. */
static void test_store_on_lmdb_replays(void **state)
{
  (void)state;
  char why[256], mdb[192], saved[192];
  snprintf(mdb, sizeof mdb, "%s/node", dir);
  struct store st;
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), 0);
  struct segment s;
  seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
  group(&st, &s, 1, 0, 10, 1);
  assert_int_equal(store_checkpoint(&st, why, sizeof why), 0);
  snprintf(mdb, sizeof mdb, "%s/node/data.mdb", dir);
  snprintf(saved, sizeof saved, "%s/data.mdb.ckpt", dir);
  assert_int_equal(copy_file(mdb, saved), 0);
  group(&st, &s, 11, 10, 20, 1);
  group(&st, &s, 21, 20, 30, 1);
  assert_int_equal(st.fsyncs, 3);
  store_close(&st);                        /* no checkpoint: a crash */
  assert_int_equal(copy_file(saved, mdb), 0);
  snprintf(mdb, sizeof mdb, "%s/node", dir);
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), 0);
  assert_int_equal(st.replayed, 20);
  memset(&loaded, 0, sizeof loaded);
  assert_int_equal(store_load(&st, keep, NULL, why, sizeof why), 0);
  assert_int_equal(loaded.scl, 30);
  seg_free(&loaded);
  store_shutdown(&st);                     /* clean: checkpointed */
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), 0);
  assert_int_equal(st.replayed, 0);
  /* A crash with the hot log, then a start without it: the log is
   * replayed, checkpointed and removed; each commit syncs lmdb again. */
  group(&st, &s, 31, 30, 40, 1);
  store_close(&st);                        /* a crash: lmdb's commits unsynced */
  assert_int_equal(store_open(&st, mdb, 0, why, sizeof why), 0);
  assert_null(st.hl);
  char hot[256];
  snprintf(hot, sizeof hot, "%s/hot.log", mdb);
  assert_int_equal(access(hot, F_OK), -1);
  assert_true(st.syncs_per_commit >= 1);
  memset(&loaded, 0, sizeof loaded);
  assert_int_equal(store_load(&st, keep, NULL, why, sizeof why), 0);
  assert_int_equal(loaded.scl, 40);
  seg_free(&loaded);
  seg_free(&s);
  store_close(&st);
}

/* A node's data from an older auralog (store format 1: zlib crc32 sums)
 * is refused at open with what to do, never read as damage (every sum
 * would fail: the scrub would "repair" it all away) nor replayed as an
 * empty log. Tried as an upgrading user would: the old directory kept. */
static void test_older_store_format_refused(void **state)
{
  (void)state;
  char why[400], mdb[192], hot[256];
  snprintf(mdb, sizeof mdb, "%s/old", dir);
  struct store st;
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), 0);
  struct segment s;
  seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
  group(&st, &s, 1, 0, 10, 1);
  store_shutdown(&st);
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), 0);   /* ours: opens */
  store_shutdown(&st);
  /* As an older auralog left it: segments, and no format stamped. */
  struct kv *kv;
  struct kv_txn *txn;
  unsigned db;
  assert_int_equal(kv_lmdb_open(mdb, NODE_MAP_SIZE, &kv, why, sizeof why), 0);
  assert_int_equal(kv_begin(kv, 0, &txn), 0);
  assert_int_equal(kv_db(kv, txn, "format", &db), 0);
  uint8_t fk[5] = {'s', 't', 'o', 'r', 'e'};
  struct kv_val key = {sizeof fk, fk};
  assert_int_equal(kv_del(kv, txn, db, &key), 0);
  int wrote;
  assert_int_equal(kv_commit(kv, txn, &wrote), 0);
  kv_close(kv);
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), -1);
  if (strstr(why, "older auralog (store format 1)") == NULL ||
      strstr(why, "new directory") == NULL)
    fail_msg("not said: %s", why);
  /* A fresh directory holding only an older hot log: refused too. */
  snprintf(mdb, sizeof mdb, "%s/oldlog", dir);
  assert_int_equal(mkdir(mdb, 0755), 0);
  snprintf(hot, sizeof hot, "%s/hot.log", mdb);
  FILE *f = fopen(hot, "w");
  assert_non_null(f);
  uint8_t frame[HL_HDR + 8] = {'A', 'H', 'L', '1'};
  assert_int_equal(fwrite(frame, 1, sizeof frame, f), sizeof frame);
  fclose(f);
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), -1);
  if (strstr(why, "older auralog") == NULL)
    fail_msg("not said: %s", why);
  seg_free(&s);
}

/* A node's data from the auralog before the page map (store format 2:
 * a page index in databases pidx and unidx) is upgraded in place, as an
 * upgrading user would meet it: its records, segments and versions are
 * the same, its index databases are emptied (nothing stale is ever read),
 * the page map is built from the records at load, and every page reads as
 * before. Format 3 is stamped, so an older auralog refuses the directory
 * rather than build pages from an index that lacks newer records. */
static void test_format_2_store_upgraded_in_place(void **state)
{
  (void)state;
  char why[400], mdb[192];
  snprintf(mdb, sizeof mdb, "%s/two", dir);
  struct store st;
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), 0);
  struct segment s;
  seg_init(&s, 7, 3, FIRST, NPAGES, PSIZE);
  group(&st, &s, 1, 0, 30, 1);
  uint8_t before[PSIZE], after[PSIZE];
  uint64_t lb, la;
  assert_int_equal(store_read_page(&st, &s, FIRST + 1, 30, before, &lb, why, sizeof why), 0);
  store_shutdown(&st);
  /* As format 2 left it: stamped 2, with index entries beside. */
  struct kv *kv;
  struct kv_txn *txn;
  unsigned db, pidx, unidx;
  assert_int_equal(kv_lmdb_open(mdb, NODE_MAP_SIZE, &kv, why, sizeof why), 0);
  assert_int_equal(kv_begin(kv, 0, &txn), 0);
  assert_int_equal(kv_db(kv, txn, "format", &db), 0);
  assert_int_equal(kv_db(kv, txn, "pidx", &pidx), 0);
  assert_int_equal(kv_db(kv, txn, "unidx", &unidx), 0);
  uint8_t fk[5] = {'s', 't', 'o', 'r', 'e'}, fv[4] = {0, 0, 0, 2}, ik[24] = {1}, iv[4] = {0};
  struct kv_val key = {sizeof fk, fk}, val = {sizeof fv, fv};
  assert_int_equal(kv_put(kv, txn, db, &key, &val, 0), 0);
  struct kv_val pk = {24, ik}, empty = {0, ""}, uk = {20, ik}, uv = {4, iv};
  assert_int_equal(kv_put(kv, txn, pidx, &pk, &empty, 0), 0);
  assert_int_equal(kv_put(kv, txn, unidx, &uk, &uv, 0), 0);
  int wrote;
  assert_int_equal(kv_commit(kv, txn, &wrote), 0);
  kv_close(kv);
  assert_int_equal(store_open(&st, mdb, 1, why, sizeof why), 0);
  memset(&loaded, 0, sizeof loaded);
  assert_int_equal(store_load(&st, keep, NULL, why, sizeof why), 0);
  assert_int_equal(loaded.scl, 30);
  assert_int_equal(store_read_page(&st, &loaded, FIRST + 1, 30, after, &la, why, sizeof why), 0);
  assert_int_equal(la, lb);
  assert_memory_equal(after, before, PSIZE);
  store_shutdown(&st);
  /* Stamped 3; the old index is empty. */
  size_t n;
  assert_int_equal(kv_lmdb_open(mdb, NODE_MAP_SIZE, &kv, why, sizeof why), 0);
  assert_int_equal(kv_begin(kv, KV_RDONLY, &txn), 0);
  assert_int_equal(kv_db(kv, txn, "format", &db), 0);
  assert_int_equal(kv_get(kv, txn, db, &key, &val), 0);
  assert_int_equal(val.len, 4);
  assert_int_equal(get_be32(val.data), STORE_FORMAT);
  assert_int_equal(STORE_FORMAT, 3);
  assert_int_equal(kv_db(kv, txn, "pidx", &pidx), 0);
  assert_int_equal(kv_count(kv, txn, pidx, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(kv_db(kv, txn, "unidx", &unidx), 0);
  assert_int_equal(kv_count(kv, txn, unidx, &n), 0);
  assert_int_equal(n, 0);
  kv_abort(kv, txn);
  kv_close(kv);
  seg_free(&loaded);
  seg_free(&s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_frames_read_back),
    cmocka_unit_test(test_torn_tail_at_every_byte),
    cmocka_unit_test(test_damaged_middle_frame_is_skipped),
    cmocka_unit_test(test_old_generation_reads_as_the_end),
    cmocka_unit_test(test_damaged_start_never_replays_an_older_generation),
    cmocka_unit_test(test_sim_file_crash),
    cmocka_unit_test(test_store_acks_survive_crash),
    cmocka_unit_test(test_truncation_not_resurrected),
    cmocka_unit_test(test_replay_never_lowers_meta),
    cmocka_unit_test(test_store_on_lmdb_replays),
    cmocka_unit_test(test_older_store_format_refused),
    cmocka_unit_test(test_format_2_store_upgraded_in_place),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
