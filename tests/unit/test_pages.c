/*
 * test_pages.c: a storage node's page versions and background work
 * (node/store_pages.c, node/bg.c, node/scrub.c; paper §3.3 steps 5, 7, 8).
 *
 * Against a model that applies every record to its page in LSN order and
 * remembers each page after each record, so that "the page as of R" is
 * known for every R:
 *   - coalescing: with versions written at random points, every page read
 *     at every point reads as the records say, and a page coalesced at
 *     the SCL is read applying no record at all;
 *   - GC: after freeing to a point, the segment holds exactly the records
 *     above it and, for each page, one version at or below it (at the
 *     page's last record there) plus those coalescing made above; reads
 *     at or above the point are right, reads below it refused; all of it
 *     across a reload from disk;
 *   - a running node (the core, with a fake io): writes with a PGMRPL
 *     coalesce and free as the PGMRPL advances; bytes damaged under it
 *     (in records and in page versions) are never served, the scrub finds
 *     every one, and what it cannot rebuild itself is fetched from a PG
 *     peer, after which every page reads right again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <cmocka.h>

#include "cores_fix.h"
#include "rng.h"

/* The tests' random numbers (rng.h), in the shape used here. */
struct rng { uint64_t s; };
static inline void rng_seed(struct rng *r, uint64_t seed) { r->s = seed; }
static inline uint64_t rng_u64(struct rng *r) { return rng_next(&r->s); }
static inline uint64_t rng_uniform(struct rng *r, uint64_t n) { return rng_next(&r->s) % n; }

#include "bugs.h"
#include "node/store.h"
#include "node/store_int.h"
#include "param.h"

#define NP    8              /* pages written, 0..NP-1 of PG 0 */
#define MAXR  1600           /* records at most in one test */

/* The model: page p after record lsn (hist[lsn]), and which page each
 * record touched. */
struct model {
  uint32_t page[MAXR + 1];
  uint8_t *after[MAXR + 1];  /* the touched page right after the record */
  uint64_t n;                /* records 1..n */
};

static void model_free(struct model *m)
{
  for (uint64_t i = 1; i <= m->n; i++)
    free(m->after[i]);
  memset(m, 0, sizeof *m);
}

/* Page p as of point R into out; returns the LSN of its last record <= R. */
static uint64_t model_page(const struct model *m, uint32_t p, uint64_t R, uint8_t *out)
{
  for (uint64_t l = R < m->n ? R : m->n; l > 0; l--)
    if (m->page[l] == p) {
      memcpy(out, m->after[l], PSIZE);
      return l;
    }
  memset(out, 0, PSIZE);
  return 0;
}

/* A record: random bytes at a random place of a random page. */
struct mrec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[64];
};

static Rec *next_rec(struct model *m, struct rng *rng, struct mrec *t)
{
  uint64_t lsn = ++m->n;
  assert_true(lsn <= MAXR);
  uint32_t p = (uint32_t)rng_uniform(rng, NP);
  uint32_t len = 1 + (uint32_t)rng_uniform(rng, sizeof t->data);
  uint32_t off = (uint32_t)rng_uniform(rng, PSIZE - len);
  for (uint32_t i = 0; i < len; i++)
    t->data[i] = (uint8_t)rng_u64(rng);
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  t->g.off = off;
  t->g.data = (ProtobufCBinaryData){len, t->data};
  t->gp = &t->g;
  t->r.lsn = lsn;
  t->r.prev_lsn = lsn - 1;
  t->r.page_no = p;
  t->r.epoch = 2;
  t->r.flags = REC_CPL;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
  m->page[lsn] = p;
  m->after[lsn] = malloc(PSIZE);
  model_page(m, p, lsn - 1, m->after[lsn]);
  memcpy(m->after[lsn] + off, t->data, len);
  return &t->r;
}

/* ---- the store alone -------------------------------------------------------- */

struct sfix {
  struct disk *d;
  struct store st;
  struct segment s;
  struct model m;
  struct rng rng;
};

static void s_open(struct sfix *x)
{
  char why[256];
  assert_int_equal(store_open_kv(&x->st, disk_kv(x->d), why, sizeof why), 0);
}

static struct segment *loaded_into;
static void keep(void *arg, struct segment *s)
{
  (void)arg;
  *loaded_into = *s;
}

/* Close and open the store again, and load the segment from disk. */
static void s_reload(struct sfix *x)
{
  char why[256];
  store_close(&x->st);
  seg_free(&x->s);
  s_open(x);
  loaded_into = &x->s;
  assert_int_equal(store_load(&x->st, keep, NULL, why, sizeof why), 0);
}

/* n more records, committed; the segment's VDL follows its SCL. */
static void s_write(struct sfix *x, int n)
{
  char why[256];
  assert_int_equal(store_begin(&x->st, why, sizeof why), 0);
  uint64_t first = x->m.n + 1;
  for (int i = 0; i < n; i++) {
    struct mrec t;
    assert_int_equal(store_put_rec(&x->st, &x->s, next_rec(&x->m, &x->rng, &t), why,
                                   sizeof why), 0);
  }
  assert_int_equal(store_put_meta(&x->st, &x->s, why, sizeof why), 0);
  assert_int_equal(store_commit(&x->st, why, sizeof why), 0);
  for (uint64_t l = first; l <= x->m.n; l++)
    seg_add(&x->s, l, l - 1);
  x->s.vdl = x->s.scl;
}

static void s_setup(struct sfix *x, uint64_t seed)
{
  memset(x, 0, sizeof *x);
  rng_seed(&x->rng, seed);
  x->d = disk_new();
  s_open(x);
  seg_init(&x->s, VOL, 0, 0, PG_PAGES, PSIZE);
}

static void s_teardown(struct sfix *x)
{
  store_close(&x->st);
  seg_free(&x->s);
  disk_free(x->d);
  model_free(&x->m);
}

/* Every page at n random points in [from, SCL] reads as the model says. */
static void reads_right(struct sfix *x, uint64_t from, int n)
{
  char why[256];
  uint8_t got[PSIZE], want[PSIZE];
  for (int i = 0; i < n; i++) {
    uint32_t p = (uint32_t)rng_uniform(&x->rng, NP);
    uint64_t R = from + rng_uniform(&x->rng, x->s.scl - from + 1);
    uint64_t lsn = 0, wlsn = model_page(&x->m, p, R, want);
    int rc = store_read_page(&x->st, &x->s, p, R, got, &lsn, why, sizeof why);
    if (rc != 0)
      fail_msg("page %u as of %llu: %s", p, (unsigned long long)R, why);
    assert_int_equal(lsn, wlsn);
    assert_memory_equal(got, want, PSIZE);
  }
}

/* Free to `to` (store_gc), committed with the segment's SegMeta. */
static void s_gc(struct sfix *x, uint64_t to)
{
  char why[256];
  size_t nr, ni;
  assert_int_equal(store_begin(&x->st, why, sizeof why), 0);
  assert_int_equal(store_gc(&x->st, &x->s, to, MAXR, &nr, &ni, why, sizeof why), 0);
  assert_int_equal(store_put_meta(&x->st, &x->s, why, sizeof why), 0);
  assert_int_equal(store_commit(&x->st, why, sizeof why), 0);
}

static void coalesce(struct sfix *x, uint32_t p, uint64_t upto)
{
  char why[256];
  int made;
  assert_int_equal(store_begin(&x->st, why, sizeof why), 0);
  assert_int_equal(store_coalesce(&x->st, &x->s, p, upto, &made, why, sizeof why), 0);
  assert_int_equal(store_commit(&x->st, why, sizeof why), 0);
}

static void coalesced_versions_read_like_the_records(void **state)
{
  (void)state;
  for (uint64_t seed = 1; seed <= 5; seed++) {
    struct sfix x;
    s_setup(&x, seed);
    for (int round = 0; round < 12; round++) {
      s_write(&x, 20 + (int)rng_uniform(&x.rng, 60));
      for (int k = (int)rng_uniform(&x.rng, 4); k > 0; k--)
        coalesce(&x, (uint32_t)rng_uniform(&x.rng, NP), 1 + rng_uniform(&x.rng, x.s.scl));
      if (round % 3 == 0)
        s_reload(&x);        /* the page map rebuilt from what is stored */
      reads_right(&x, 1, 40);
    }
    /* Coalesced at the SCL, a page is read applying nothing. */
    for (uint32_t p = 0; p < NP; p++)
      coalesce(&x, p, x.s.scl);
    uint8_t got[PSIZE];
    uint64_t lsn;
    char why[256];
    for (uint32_t p = 0; p < NP; p++) {
      assert_int_equal(store_read_page(&x.st, &x.s, p, x.s.scl, got, &lsn, why, sizeof why), 0);
      assert_int_equal(x.st.last_applied, 0);
      assert_int_equal(store_unmat(&x.st, &x.s, p), 0);
    }
    reads_right(&x, 1, 100);
    s_reload(&x);
    reads_right(&x, 1, 100);
    s_teardown(&x);
  }
}

/* The versions of page p held: their LSNs, ascending, into v; how many. */
static size_t versions_of(struct store *st, uint32_t p, uint64_t *v, size_t max)
{
  struct kv_txn *t;
  struct kv_cursor *c;
  assert_int_equal(kv_begin(st->kv, KV_RDONLY, &t), 0);
  assert_int_equal(kv_cursor(st->kv, t, st->imgs, &c), 0);
  struct kv_val key, val;
  size_t n = 0;
  for (int rc = kv_cursor_get(st->kv, c, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, c, KV_NEXT, &key, &val))
    if (key.len == 24 && get_be32((uint8_t *)key.data + 12) == p && n < max)
      v[n++] = get_be64((uint8_t *)key.data + 16);
  kv_cursor_close(st->kv, c);
  kv_abort(st->kv, t);
  return n;
}

static size_t versions(struct sfix *x, uint32_t p, uint64_t *v, size_t max)
{
  return versions_of(&x->st, p, v, max);
}

/* Flip a byte of page p's version at lsn, as bit rot would. */
static void damage_version(struct store *st, uint32_t p, uint64_t lsn)
{
  uint8_t k[24];
  put_be64(k, VOL);
  put_be32(k + 8, 0);
  put_be32(k + 12, p);
  put_be64(k + 16, lsn);
  struct kv_txn *t;
  struct kv_val key = {sizeof k, k}, val;
  int wrote;
  assert_int_equal(kv_begin(st->kv, 0, &t), 0);
  assert_int_equal(kv_get(st->kv, t, st->imgs, &key, &val), 0);
  uint8_t *copy = malloc(val.len);
  memcpy(copy, val.data, val.len);
  copy[lsn % PSIZE] ^= 0x10;
  struct kv_val nv = {val.len, copy};
  assert_int_equal(kv_put(st->kv, t, st->imgs, &key, &nv, 0), 0);
  assert_int_equal(kv_commit(st->kv, t, &wrote), 0);
  free(copy);
}

/* What GC must leave: records above gc_lsn only, all of them; per page
 * one version at or below gc_lsn, at its last record there. */
static void holds_exactly(struct sfix *x)
{
  uint64_t gc = x->s.gc_lsn;
  Rec **recs;
  int more;
  long n = store_above(&x->st, &x->s, 0, &recs, MAXR, &more);
  assert_int_equal(n, (long)(x->m.n - gc));
  for (long i = 0; i < n; i++) {
    assert_int_equal(recs[i]->lsn, gc + 1 + (uint64_t)i);
    auralog__record__free_unpacked(recs[i], NULL);
  }
  free(recs);
  uint8_t page[PSIZE];
  for (uint32_t p = 0; p < NP; p++) {
    uint64_t last = model_page(&x->m, p, gc, page), v[256];
    size_t nv = versions(x, p, v, 256), below = 0;
    for (size_t i = 0; i < nv; i++)
      if (v[i] <= gc) {
        below++;
        assert_int_equal(v[i], last);
      }
    assert_int_equal(below, last ? 1 : 0);
  }
}

static void gc_keeps_exactly_what_the_pgmrpl_needs(void **state)
{
  (void)state;
  char why[256];
  for (uint64_t seed = 1; seed <= 5; seed++) {
    struct sfix x;
    s_setup(&x, seed);
    for (int round = 0; round < 8; round++) {
      s_write(&x, 40 + (int)rng_uniform(&x.rng, 80));
      for (int k = (int)rng_uniform(&x.rng, 4); k > 0; k--)
        coalesce(&x, (uint32_t)rng_uniform(&x.rng, NP),
                 x.s.gc_lsn + rng_uniform(&x.rng, x.s.scl - x.s.gc_lsn + 1));
      /* Free to a random point between the last one and the SCL. */
      uint64_t to = x.s.gc_lsn + rng_uniform(&x.rng, x.s.scl - x.s.gc_lsn + 1);
      s_gc(&x, to);
      assert_int_equal(x.s.gc_lsn, to);
      holds_exactly(&x);
      reads_right(&x, x.s.gc_lsn, 40);
      if (x.s.gc_lsn > 1) {     /* below the GC point: refused, never wrong */
        uint8_t got[PSIZE];
        uint64_t lsn;
        assert_int_equal(store_read_page(&x.st, &x.s, 0, x.s.gc_lsn - 1, got, &lsn, why,
                                         sizeof why), ERR_NOT_COMPLETE);
      }
      if (round % 2) {
        uint64_t scl = x.s.scl;
        s_reload(&x);
        assert_int_equal(x.s.gc_lsn, to);
        assert_int_equal(x.s.scl, scl);     /* the chain starts at the GC point */
        holds_exactly(&x);
        reads_right(&x, x.s.gc_lsn, 40);
      }
    }
    s_teardown(&x);
  }
}

/* Truncations wholly at or below the GC point are forgotten (but for
 * the newest epoch's) and count as held: the bookkeeping of 700 epochs
 * does not stay on every segment for ever. */
static void old_truncations_are_forgotten_below_the_gc_point(void **state)
{
  (void)state;
  struct sfix x;
  s_setup(&x, 3);
  struct trunc t[4] = {{.epoch = 1, .from = 5, .to = 10}, {.epoch = 2, .from = 20, .to = 30},
                       {.epoch = 3, .from = 150, .to = 160},
                       {.epoch = 4, .from = 60, .to = 70}};
  for (int i = 0; i < 4; i++)
    seg_add_trunc(&x.s, &t[i]);
  /* The VDLs that follow are heard from epoch 4's writer, whose truncation
   * the segment holds: they bind only newer epochs' truncations (a load
   * checks every one again, node/segment.c). */
  x.s.epoch = 4;
  s_write(&x, 200);
  s_gc(&x, 100);
  /* Kept: (150, 160] (above the GC point), and epoch 4's (the newest). */
  assert_int_equal(x.s.ntruncs, 2);
  for (int i = 0; i < 4; i++)
    assert_true(seg_has_trunc(&x.s, t[i].epoch, t[i].from, t[i].to));
  s_reload(&x);
  assert_int_equal(x.s.ntruncs, 2);
  assert_true(seg_has_trunc(&x.s, 1, 5, 10));
  assert_false(seg_has_trunc(&x.s, 1, 150, 160));   /* another epoch's: not held */
  s_teardown(&x);
}

/* A late truncation from an older recovery never takes a page version:
 * versions hold only records at or below a VDL, which no truncation
 * cuts. (A version fetched for a catch-up, above the old GC point, was
 * deleted by one, and the page then read as if never written: simulator
 * seed 5634 of an earlier tree.) */
static void a_late_truncation_keeps_page_versions(void **state)
{
  (void)state;
  char why[256];
  struct sfix x;
  s_setup(&x, 5);
  s_write(&x, 60);
  coalesce(&x, 1, 50);
  uint64_t v[16];
  size_t nv = versions(&x, 1, v, 16);
  assert_true(nv == 1 && v[0] > 20);
  struct trunc t = {.epoch = 1, .from = 20, .to = 40};   /* older than the records' */
  size_t cut;
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  assert_int_equal(store_truncate(&x.st, &x.s, &t, &cut, why, sizeof why), 0);
  assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
  assert_int_equal(cut, 0);             /* epoch 2's records: not cut (rule T) */
  assert_int_equal(versions(&x, 1, v, 16), nv);
  s_teardown(&x);
}

/* Every record and page version the store holds checks (CRCs). */
static void nothing_damaged_left(struct store *st)
{
  struct kv_txn *t;
  struct kv_cursor *c;
  struct kv_val key, val;
  char why[200];
  assert_int_equal(kv_begin(st->kv, KV_RDONLY, &t), 0);
  assert_int_equal(kv_cursor(st->kv, t, st->imgs, &c), 0);
  for (int rc = kv_cursor_get(st->kv, c, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, c, KV_NEXT, &key, &val)) {
    assert_int_equal(val.len, PSIZE + 4);
    if (get_be32((uint8_t *)val.data + PSIZE) != store_img_crc(key.data, val.data, PSIZE))
      fail_msg("page %u's version at %llu is still damaged", get_be32((uint8_t *)key.data + 12),
               (unsigned long long)get_be64((uint8_t *)key.data + 16));
  }
  kv_cursor_close(st->kv, c);
  assert_int_equal(kv_cursor(st->kv, t, st->recs, &c), 0);
  for (int rc = kv_cursor_get(st->kv, c, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(st->kv, c, KV_NEXT, &key, &val)) {
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    if (r == NULL || rec_check(r, PSIZE, why, sizeof why) != ERR_NONE)
      fail_msg("record %llu is still damaged",
               (unsigned long long)get_be64((uint8_t *)key.data + 12));
    auralog__record__free_unpacked(r, NULL);
  }
  kv_cursor_close(st->kv, c);
  kv_abort(st->kv, t);
}

/* ---- a running node ---------------------------------------------------------- */

/* The writer of epoch 2 appends n more records, with its VDL and PGMRPL
 * at its last record; the node commits, then does its background work. */
static void w_append(struct nfix *x, struct model *m, struct rng *rng, int n)
{
  static uint64_t req = 100;
  struct mrec *t = calloc((size_t)n, sizeof *t);
  Rec **recs = calloc((size_t)n, sizeof *recs);
  for (int i = 0; i < n; i++)
    recs[i] = next_rec(m, rng, &t[i]);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = 2;
  a.ticket = ticket(2, &tk, sig);
  a.records = recs;
  a.n_records = (size_t)n;
  a.vdl = m->n - (uint64_t)n;          /* durable: what came before */
  a.pgmrpl = a.vdl;
  a.pgmrpl_tail = a.vdl;     /* every LSN here is a record of PG 0 */
  env.req = ++req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
  node_end_turn(x->n);
  take(&x->f, x->w, APPEND_ACK);
  free(recs);
  free(t);
}

/* Reads served wrong (counted, not failed, while wrong_ok: the planted
 * bug's test). */
static int wrong_ok, served_wrong;

/* Page p as of point R, read by the writer: 1 and right, or 0 refused. */
static int w_read(struct nfix *x, const struct model *m, uint32_t p, uint64_t R)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
  rp.volume_id = VOL;
  rp.pg = 0;
  rp.page_no = p;
  rp.read_point = R;
  rp.need = R;               /* every LSN is a record of PG 0 here */
  env.req = 7;
  env.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
  env.read_page = &rp;
  DELIVER(node_on_msg, x->n, x->w, &env);
  if (count(&x->f, x->w, ERROR)) {
    take(&x->f, x->w, ERROR);
    return 0;
  }
  const Auralog__Page *pg = take(&x->f, x->w, PAGE)->page;
  uint8_t want[PSIZE];
  uint64_t lsn = model_page(m, p, R, want);
  assert_int_equal(pg->data.len, PSIZE);
  if (pg->page_lsn != lsn || memcmp(pg->data.data, want, PSIZE) != 0) {
    if (!wrong_ok)
      fail_msg("page %u as of %llu was served wrong", p, (unsigned long long)R);
    served_wrong++;
  }
  return 1;
}

/* A node of PG 0 on a fresh disk, a model of its records, numbers from
 * seed; no planted bug. */
static struct segment *start_node(struct nfix *x, struct model *m, struct rng *rng,
                                  uint64_t seed)
{
  keys();
  planted_bugs = 0;
  memset(m, 0, sizeof *m);
  rng_seed(rng, seed);
  node_setup(x);
  return node_find_seg(x->n, VOL, 0);
}

/* Let time pass: the node's timers and background work run. */
static void idle(struct nfix *x, uint64_t ms)
{
  for (uint64_t t = 0; t < ms; t += 100) {
    x->f.now += 100;
    node_heartbeat(x->n);
    gossip_tick(x->n);
    node_end_turn(x->n);
  }
}

/* The peers' side: every connection the node opened to a peer comes up;
 * each says its SCL (a GossipPull naming it) is `scl`; every page read
 * the node asks of a peer is answered from the model. Returns how many
 * page reads were answered. */
/* The peers' GC point: they hold no record at or below it. */
static uint64_t peers_gc;

static int peers_answer(struct nfix *x, const struct model *m, uint64_t scl)
{
  int answered = 0;
  for (int i = 1; i < NCOPIES; i++) {
    struct ep *e = NULL;
    for (size_t j = x->f.neps; j > 0 && e == NULL; j--)
      if (strcmp(x->f.eps[j - 1]->addr, addrs[i]) == 0)
        e = x->f.eps[j - 1];
    if (e == NULL)
      continue;
    node_on_up(x->n, e);
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__GossipPull gp = AURALOG__GOSSIP_PULL__INIT;
    gp.volume_id = VOL;
    gp.pg = 0;
    gp.scl = scl;
    gp.node = (char *)ids[i];
    env.req = 900;
    env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PULL;
    env.gossip_pull = &gp;
    DELIVER(node_on_msg, x->n, e, &env);
    while (count(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PUSH))
      take(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PUSH);
    while (count(&x->f, e, AURALOG__ENVELOPE__BODY_READ_PAGE)) {
      const Env *q = take(&x->f, e, AURALOG__ENVELOPE__BODY_READ_PAGE);
      uint8_t data[PSIZE];
      Env a = AURALOG__ENVELOPE__INIT;
      Auralog__Page pg = AURALOG__PAGE__INIT;
      pg.volume_id = VOL;
      pg.pg = 0;
      pg.page_no = q->read_page->page_no;
      pg.page_lsn = model_page(m, pg.page_no, q->read_page->need, data);
      pg.data = (ProtobufCBinaryData){PSIZE, data};
      a.req = q->req;
      a.body_case = PAGE;
      a.page = &pg;
      DELIVER(node_on_msg, x->n, e, &a);
      answered++;
    }
    /* A pull the node made (a hole to fill): answered with the records. */
    while (count(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL)) {
      const Env *q = take(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL);
      uint64_t from = q->gossip_pull->scl;
      struct model *mm = (struct model *)m;
      size_t n = 0;
      struct mrec *t = calloc(mm->n + 1, sizeof *t);
      Rec **recs = calloc(mm->n + 1, sizeof *recs);
      for (uint64_t l = (from > peers_gc ? from : peers_gc) + 1; l <= mm->n && n < 500; l++) {
        /* Rebuild record l from the model: the bytes it changed. */
        uint8_t before[PSIZE];
        model_page(mm, mm->page[l], l - 1, before);
        uint32_t lo = 0, hi = PSIZE;
        while (lo < PSIZE && before[lo] == mm->after[l][lo])
          lo++;
        while (hi > lo && before[hi - 1] == mm->after[l][hi - 1])
          hi--;
        if (hi == lo)
          hi = lo + 1;      /* a range that wrote what was there */
        struct mrec *r = &t[n];
        auralog__record__init(&r->r);
        auralog__range__init(&r->g);
        r->g.off = lo;
        r->g.data = (ProtobufCBinaryData){hi - lo, mm->after[l] + lo};
        r->gp = &r->g;
        r->r.lsn = l;
        r->r.prev_lsn = l - 1;
        r->r.page_no = mm->page[l];
        r->r.epoch = 2;
        r->r.flags = REC_CPL;
        r->r.ranges = &r->gp;
        r->r.n_ranges = 1;
        rec_seal(&r->r);
        recs[n++] = &r->r;
      }
      Env a = AURALOG__ENVELOPE__INIT;
      Auralog__GossipPush gp2 = AURALOG__GOSSIP_PUSH__INIT;
      gp2.volume_id = VOL;
      gp2.pg = 0;
      gp2.scl = mm->n;
      gp2.gc_lsn = peers_gc;
      gp2.records = recs;
      gp2.n_records = n;
      a.req = q->req;
      a.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
      a.gossip_push = &gp2;
      DELIVER(node_on_msg, x->n, e, &a);
      free(recs);
      free(t);
    }
  }
  return answered;
}

/* Thirty rounds of 40 records, each answered by the peers (their SCLs
 * ahead of the node's) and followed by a GC period: versions coalesced,
 * records freed. */
static void write_history(struct nfix *x, struct model *m, struct rng *rng)
{
  for (int round = 0; round < 30; round++) {
    w_append(x, m, rng, 40);
    peers_answer(x, m, m->n);
    idle(x, GC_MS);
  }
}

/* A few records a page, fewer than COALESCE_RECS: the coalescer never
 * queues them, GC makes their pages' versions as it frees them, and
 * those count as coalesced (the node's heartbeat; lab 8's check). */
static void versions_gc_makes_count_as_coalesced(void **state)
{
  (void)state;
  struct nfix x;
  struct model m;
  struct rng rng;
  struct segment *s = start_node(&x, &m, &rng, 11);
  for (int round = 0; round < 8; round++) {
    w_append(&x, &m, &rng, 4);
    peers_answer(&x, &m, m.n);
    idle(&x, 2 * GC_MS);
  }
  assert_true(s->gc_lsn > 0);
  assert_true(x.n->st.gc_made > 0);
  assert_int_equal(x.n->coalesced, x.n->st.gc_made);   /* all of them by GC */
  for (uint32_t p = 0; p < NP; p++)
    assert_int_equal(w_read(&x, &m, p, m.n), 1);
  node_teardown(&x);
  model_free(&m);
}

static void a_running_node_frees_scrubs_and_repairs(void **state)
{
  (void)state;
  struct nfix x;
  struct model m;
  struct rng rng;
  struct segment *s = start_node(&x, &m, &rng, 9);
  /* Peers never heard from hold GC for GC_PEER_WAIT_MS; they say their
   * SCL as we go instead (each ahead of the node's). */
  write_history(&x, &m, &rng);
  assert_int_equal(s->scl, m.n);
  assert_true(x.n->coalesced > 0);
  assert_true(s->gc_lsn > m.n / 2);
  assert_true(x.n->gc_records >= s->gc_lsn - 1);
  for (uint64_t R = s->gc_lsn; R <= m.n; R += 7)
    for (uint32_t p = 0; p < NP; p++)
      assert_int_equal(w_read(&x, &m, p, R), 1);
  /* A read applies at most COALESCE_RECS records plus those above the
   * VDL the node heard (the last batch: 40 records over NP pages). */
  assert_true(x.n->max_apply <= COALESCE_RECS + 40);

  /* Damage under the running node: bytes of stored versions and records. */
  uint64_t found = x.n->damage_found + x.n->st.met_damage;
  int planted = 0;
  for (uint64_t r = 1; r <= 6; r++) {
    planted += disk_corrupt_db(x.d, r % 2 ? "imgs" : "recs", r * 7919);
    /* Never served: every page at every point reads right or is refused. */
    for (uint32_t p = 0; p < NP; p++)
      w_read(&x, &m, p, m.n - r);
  }
  assert_true(planted >= 4);
  /* And the version at or below the GC point of every page, the only copy
   * of what was freed: a read that meets one damaged must not build the
   * page from the records above it alone. */
  for (uint32_t p = 0; p < NP; p++) {
    uint64_t v[256];
    size_t nv = versions_of(&x.n->st, p, v, 256);
    if (nv && v[0] <= s->gc_lsn) {
      damage_version(&x.n->st, p, v[0]);
      planted++;
      for (uint64_t R = s->gc_lsn; R <= m.n; R += 13)
        w_read(&x, &m, p, R);
    }
  }
  /* The scrub finds it, what it cannot rebuild comes from peers, and the
   * node is whole again: every page reads right at every point it keeps. */
  for (int t = 0; t < 20; t++) {
    idle(&x, SCRUB_MS);
    peers_answer(&x, &m, m.n);
  }
  printf("# planted %d, found %llu, repaired from peers %llu\n", planted,
         (unsigned long long)(x.n->damage_found + x.n->st.met_damage - found), (unsigned long long)x.n->repaired);
  assert_true(x.n->damage_found + x.n->st.met_damage - found >= (uint64_t)planted / 2);
  node_end_turn(x.n);
  nothing_damaged_left(&x.n->st);
  assert_true(x.n->repaired > 0);
  assert_int_equal(s->scl, m.n);
  for (uint32_t i = 0; s->floor && i < s->npages; i++)
    assert_true(s->floor[i] != UINT64_MAX);
  for (uint64_t R = m.n - 20; R <= m.n; R++)
    for (uint32_t p = 0; p < NP; p++)
      if (!w_read(&x, &m, p, R))
        fail_msg("page %u as of %llu is still refused after the repair", p,
                 (unsigned long long)R);
  node_teardown(&x);
  model_free(&m);
}

/* A node that comes back behind its peers' GC point (they freed the
 * records it lacks) takes every page as of that point from them, moves
 * its own GC point there, then takes the records above by gossip. */
static void a_node_behind_its_peers_gc_catches_up_by_page_versions(void **state)
{
  (void)state;
  struct nfix x;
  struct model m;
  struct rng rng;
  struct segment *s = start_node(&x, &m, &rng, 11);
  w_append(&x, &m, &rng, 100);            /* the node has 1..100 */
  assert_int_equal(s->scl, 100);
  /* Meanwhile the others took 101..600 and freed everything to 500. */
  for (int i = 0; i < 500; i++) {
    struct mrec t;
    next_rec(&m, &rng, &t);
  }
  peers_gc = 500;
  uint64_t c0 = x.n->st.commits;
  for (int t = 0; t < 40 && (s->scl < m.n || s->gc_lsn < 500); t++) {
    idle(&x, GOSSIP_MS * GOSSIP_IDLE);
    peers_answer(&x, &m, m.n);
  }
  peers_gc = 0;
  /* The segment's every page, fetched: committed with the turns that
   * brought them (3 here), not once per page (259: a fdatasync each). */
  if (x.n->st.commits - c0 > 20)
    fail_msg("a catch-up of %u pages took %llu commits", s->npages,
             (unsigned long long)(x.n->st.commits - c0));
  assert_int_equal(x.n->catchups, 1);
  assert_int_equal(s->gc_lsn, 500);
  assert_int_equal(s->scl, m.n);
  for (uint32_t i = 0; s->floor && i < s->npages; i++)
    assert_int_equal(s->floor[i], 0);
  for (uint64_t R = 500; R <= m.n; R += 9)
    for (uint32_t p = 0; p < NP; p++)
      assert_int_equal(w_read(&x, &m, p, R), 1);
  node_end_turn(x.n);
  nothing_damaged_left(&x.n->st);
  node_teardown(&x);
  model_free(&m);
}

/* A segment that missed a recovery may hold, below the VDL it hears, a
 * branch that recovery cut (it has not heard of the truncation yet). It
 * must neither free to nor coalesce on that branch: the writer's chain
 * decides (bg.c own_point). Simulator seed 7297 once froze a segment on
 * such a record for good. */
static void a_segment_never_frees_or_coalesces_on_a_dead_branch(void **state)
{
  (void)state;
  keys();
  planted_bugs = 0;
  struct nfix x;
  node_setup(&x);
  struct segment *s = node_find_seg(x.n, VOL, 0);
  /* 1..40 on page 3 (enough to coalesce), then 42 (epoch 2, linking to
   * 40): the branch a later recovery cut; the writer's chain goes on
   * from 40 to 44. */
  struct trec t[42];
  Rec *recs[41];
  for (int i = 0; i < 40; i++)
    recs[i] = mkrec(&t[i], (uint64_t)i + 1, (uint64_t)i, 3, 8 * (uint32_t)(i % 16), (uint8_t)i,
                    REC_CPL, 2);
  recs[40] = mkrec(&t[40], 42, 40, 3, 0, 0x42, REC_CPL, 2);
  append(&x, 20, 2, recs, 41);
  node_end_turn(x.n);
  take(&x.f, x.w, APPEND_ACK);
  assert_int_equal(s->scl, 42);
  /* The writer (epoch 3) says: durable to 44, read point 44, and the PG's
   * last record there is 44, which this segment does not hold. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = 3;
  a.ticket = ticket(3, &tk, sig);
  a.vdl = 44;
  a.pgmrpl = 44;
  a.pgmrpl_tail = 44;
  env.req = 21;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x.n, x.w, &env);
  node_end_turn(x.n);
  x.f.now += GC_PEER_WAIT_MS + 1;      /* no peer holds GC back */
  idle(&x, 3 * GC_MS);
  assert_int_equal(s->gc_lsn, 0);      /* not 42: freed to a cut record */
  uint64_t v[16];
  size_t nv = versions_of(&x.n->st, 3, v, 16);
  for (size_t i = 0; i < nv; i++)
    assert_true(v[i] != 42);           /* no version holds the cut record */
  node_teardown(&x);
}

/* A record damaged on disk is left out at load (a hole, not served); the
 * good copy a peer pushes replaces it. (Taking the damaged copy for a
 * duplicate kept the segment behind for good: simulator seeds 307, 644.) */
static void a_good_copy_replaces_a_damaged_record(void **state)
{
  (void)state;
  struct nfix x;
  struct model m;
  struct rng rng;
  start_node(&x, &m, &rng, 13);
  w_append(&x, &m, &rng, 10);
  /* Record 5's bytes rot; the node restarts on it. */
  uint8_t k[20];
  put_be64(k, VOL);
  put_be32(k + 8, 0);
  put_be64(k + 12, 5);
  struct kv_txn *t;
  struct kv_val key = {sizeof k, k}, val;
  int wrote;
  assert_int_equal(kv_begin(x.n->st.kv, 0, &t), 0);
  assert_int_equal(kv_get(x.n->st.kv, t, x.n->st.recs, &key, &val), 0);
  uint8_t *junk = malloc(val.len);
  memcpy(junk, val.data, val.len);
  junk[val.len - 1] ^= 0x40;
  struct kv_val nv = {val.len, junk};
  assert_int_equal(kv_put(x.n->st.kv, t, x.n->st.recs, &key, &nv, 0), 0);
  assert_int_equal(kv_commit(x.n->st.kv, t, &wrote), 0);
  free(junk);
  node_crash(&x);
  node_boot(&x);
  node_assign_pg0(&x, 2);                /* no turn ends: no scrub yet */
  struct segment *s = node_find_seg(x.n, VOL, 0);
  assert_int_equal(s->scl, 4);           /* the hole at 5 */
  /* A peer's push comes before the scrub drops the damaged copy: the
   * push alone must fill the hole. */
  for (int i = 0; i < 3; i++) {
    x.f.now += GOSSIP_MS;
    gossip_tick(x.n);
    peers_answer(&x, &m, m.n);
  }
  node_commit(x.n);
  assert_int_equal(s->scl, 10);
  for (uint32_t p = 0; p < NP; p++)
    assert_int_equal(w_read(&x, &m, p, 10), 1);
  node_teardown(&x);
  model_free(&m);
}

/* The same damage with the bug this file guards against planted (a read
 * that meets a damaged or missing version builds the page from the
 * records above it alone): the test above would see wrong pages. */
static void the_stale_version_bug_would_be_seen(void **state)
{
  (void)state;
  struct nfix x;
  struct model m;
  struct rng rng;
  struct segment *s = start_node(&x, &m, &rng, 9);
  write_history(&x, &m, &rng);
  planted_bugs = 1u << BUG_STALE_VERSION;
  wrong_ok = 1;
  served_wrong = 0;
  for (uint32_t p = 0; p < NP; p++) {
    uint64_t v[256];
    size_t nv = versions_of(&x.n->st, p, v, 256);
    if (nv && v[0] <= s->gc_lsn) {
      damage_version(&x.n->st, p, v[0]);
      w_read(&x, &m, p, s->gc_lsn);
    }
  }
  planted_bugs = 0;
  wrong_ok = 0;
  printf("# with --bug stale-version: %d pages served wrong\n", served_wrong);
  assert_true(served_wrong > 0);
  node_teardown(&x);
  model_free(&m);
}

/* What page p's records above its newest version are, counted from the
 * kv itself (every record of the PG unpacked): the truth store_unmat's
 * answer (through the in-memory map of unindexed records) must match. */
static uint32_t unmat_truth(struct sfix *x, uint32_t p)
{
  struct kv_txn *txn;
  struct kv_cursor *cur;
  struct kv_val key, val, img;
  uint64_t have = 0;
  assert_int_equal(store_rtxn(&x->st, &txn), 0);
  uint8_t pk[24];
  page_key(pk, VOL, 0, p, UINT64_MAX);
  /* the newest version: the last imgs key of the page */
  assert_int_equal(kv_cursor(x->st.kv, txn, x->st.imgs, &cur), 0);
  for (int rc = kv_cursor_get(x->st.kv, cur, KV_FIRST, &key, &img); rc == 0;
       rc = kv_cursor_get(x->st.kv, cur, KV_NEXT, &key, &img))
    if (key.len == 24 && memcmp(key.data, pk, 16) == 0)
      have = get_be64((uint8_t *)key.data + 16);
  kv_cursor_close(x->st.kv, cur);
  uint32_t n = 0;
  assert_int_equal(kv_cursor(x->st.kv, txn, x->st.recs, &cur), 0);
  for (int rc = kv_cursor_get(x->st.kv, cur, KV_FIRST, &key, &val); rc == 0;
       rc = kv_cursor_get(x->st.kv, cur, KV_NEXT, &key, &val)) {
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    assert_non_null(r);
    n += r->page_no == p && r->lsn > have;
    auralog__record__free_unpacked(r, NULL);
  }
  kv_cursor_close(x->st.kv, cur);
  store_rdone(&x->st, txn);
  return n;
}

static void unmat_is_right(struct sfix *x, const char *after)
{
  for (uint32_t p = 0; p < NP; p++) {
    uint32_t want = unmat_truth(x, p), got = store_unmat(&x->st, &x->s, p);
    if (got != want)
      fail_msg("after %s: page %u has %u records above its version, the store says %u",
               after, p, want, got);
  }
  /* Invariant R (store_rcache.c): the record cache, which GC and page
   * builds read instead of the kv, follows the same changes. */
  char why[256];
  if (store_rc_check(&x->st, why, sizeof why) != 0)
    fail_msg("after %s: %s", after, why);
}

/* n more records staged in an open write transaction, left open; the
 * model does not count them (the caller aborts or crashes). */
static void stage_more(struct sfix *x, int n)
{
  char why[256];
  assert_int_equal(store_begin(&x->st, why, sizeof why), 0);
  struct model scratch = x->m;
  for (int i = 0; i < n; i++) {
    struct mrec t;
    assert_int_equal(store_put_rec(&x->st, &x->s, next_rec(&scratch, &x->rng, &t), why,
                                   sizeof why), 0);
  }
  for (uint64_t l = x->m.n + 1; l <= scratch.n; l++)
    free(scratch.after[l]);
}

/* Invariant P (store_pmap.c): the page map, the only index of records
 * by page, names exactly the records the store holds, through every way
 * they change: writes committed and aborted, a crash with a transaction
 * open (the map built again at load), GC, coalescing, a truncation, a
 * reload, and a segment dropped beside. A map that missed a change would
 * build pages without some records (a wrong page served), or count them
 * wrong. Each step is also read back: every page at random points. */
static void the_page_map_follows_every_change(void **state)
{
  (void)state;
  char why[256];
  struct sfix x;
  s_setup(&x, 29);
  for (int round = 0; round < 60; round++) {
    int op = (int)rng_uniform(&x.rng, 7);
    if (op <= 1 || x.m.n < 20) {
      s_write(&x, 1 + (int)rng_uniform(&x.rng, 30));
      unmat_is_right(&x, "a write");
    } else if (op == 2) {
      /* Staged, then aborted: none of it is there, nor in the map. */
      stage_more(&x, 5);
      store_abort(&x.st);
      unmat_is_right(&x, "an abort");
    } else if (op == 3) {
      /* Staged, then the process dies: the map, built again at load from
       * what was committed, has none of it. */
      stage_more(&x, 4);
      s_reload(&x);
      unmat_is_right(&x, "a crash with a transaction open");
    } else if (op == 4 && x.s.scl > x.s.gc_lsn + 4) {
      s_gc(&x, x.s.gc_lsn + 1 + rng_uniform(&x.rng, x.s.scl - x.s.gc_lsn - 2));
      unmat_is_right(&x, "GC");
      reads_right(&x, x.s.gc_lsn, 20);
    } else if (op == 5) {
      uint32_t p = (uint32_t)rng_uniform(&x.rng, NP);
      coalesce(&x, p, x.s.scl);
      unmat_is_right(&x, "coalescing");
      s_reload(&x);
      unmat_is_right(&x, "a reload");
    } else if (op == 6) {
      /* Another segment of the same pages' numbers, written then dropped:
       * only its entries go. Of fewer pages than the map has slots (found
       * page by page) or of more (found by a walk of the map). */
      struct segment o;
      seg_init(&o, VOL, 1, 0, round % 2 ? NP : PG_PAGES, PSIZE);
      assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
      struct model other = {0};
      for (int i = 0; i < 6; i++) {
        struct mrec t;
        assert_int_equal(store_put_rec(&x.st, &o, next_rec(&other, &x.rng, &t), why,
                                       sizeof why), 0);
      }
      assert_int_equal(store_put_meta(&x.st, &o, why, sizeof why), 0);
      assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
      assert_int_equal(store_unmat(&x.st, &o, other.page[1]) > 0, 1);
      uint64_t nr, ni;
      assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
      assert_int_equal(store_drop_seg(&x.st, &o, &nr, &ni, why, sizeof why), 0);
      assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
      assert_int_equal(nr, 6);
      for (uint32_t p = 0; p < NP; p++)
        assert_int_equal(store_unmat(&x.st, &o, p), 0);
      model_free(&other);
      seg_free(&o);
      unmat_is_right(&x, "a segment dropped beside");
    }
    reads_right(&x, x.s.gc_lsn > 0 ? x.s.gc_lsn : 1, 10);
  }
  /* A truncation of the last few (a newer epoch's): cut from the map too. */
  struct trunc t = {3, x.s.scl - 3, x.s.scl + 10};
  size_t cut = 0;
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  assert_int_equal(store_truncate(&x.st, &x.s, &t, &cut, why, sizeof why), 0);
  assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
  assert_int_equal(cut, 3);
  unmat_is_right(&x, "a truncation");
  s_teardown(&x);
}

/* Invariant R (store_rcache.c): the record cache never holds a record the
 * kv does not, nor a copy the kv does not hold. A recovery's adopted copy
 * (the same record under a newer epoch) put and then aborted leaves the
 * kv's older copy: the cache must not serve the aborted one. A delete
 * undone by an abort, and a GC, are followed too. And the cache is what
 * page builds and GC read: they hit it. */
static void the_record_cache_never_holds_what_the_store_does_not(void **state)
{
  (void)state;
  char why[256];
  struct sfix x;
  s_setup(&x, 37);
  s_write(&x, 40);
  assert_int_equal(store_rc_check(&x.st, why, sizeof why), 0);
  size_t n, bytes;
  uint64_t hits, misses;
  store_rc_stats(&x.st, &n, &bytes, &hits, &misses);
  assert_int_equal(n, 40);
  reads_right(&x, 1, 30);
  store_rc_stats(&x.st, &n, &bytes, &hits, &misses);
  assert_true(hits > 0);
  assert_int_equal(misses, 0);
  /* Record 20 again under epoch 3 (an adoption), aborted. */
  struct kv_txn *rt;
  assert_int_equal(kv_begin(x.st.kv, KV_RDONLY, &rt), 0);
  uint8_t k[20];
  rec_key(k, VOL, 0, 20);
  struct kv_val key = {sizeof k, k}, val;
  assert_int_equal(kv_get(x.st.kv, rt, x.st.recs, &key, &val), 0);
  Rec *r = auralog__record__unpack(NULL, val.len, val.data);
  kv_abort(x.st.kv, rt);
  assert_non_null(r);
  r->epoch = 3;
  rec_seal(r);
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  assert_int_equal(store_put_rec(&x.st, &x.s, r, why, sizeof why), 0);
  assert_int_equal(store_rc_check(&x.st, why, sizeof why), 0);   /* the txn sees it */
  store_abort(&x.st);
  if (store_rc_check(&x.st, why, sizeof why) != 0)
    fail_msg("after an adopted copy was aborted: %s", why);
  /* ... and committed. */
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  assert_int_equal(store_put_rec(&x.st, &x.s, r, why, sizeof why), 0);
  assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
  auralog__record__free_unpacked(r, NULL);
  unmat_is_right(&x, "an adopted copy committed");
  /* A GC aborted: the records are back in the kv, and read right. */
  size_t nr, ni;
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  assert_int_equal(store_gc(&x.st, &x.s, 30, MAXR, &nr, &ni, why, sizeof why), 0);
  assert_int_equal(nr, 30);
  unmat_is_right(&x, "a GC, in its transaction");
  store_abort(&x.st);
  if (store_rc_check(&x.st, why, sizeof why) != 0)
    fail_msg("after a GC was aborted: %s", why);
  s_reload(&x);              /* the segment's memory as the kv is again */
  reads_right(&x, 1, 30);
  s_gc(&x, 30);
  unmat_is_right(&x, "a GC");
  reads_right(&x, 30, 30);
  s_teardown(&x);
}

static double cpu_ms_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* GC takes a page's records oldest first: the page map drops each from
 * the front of its page's list in O(1) (moving the rest down each time,
 * taking 60,000 records of one page moved ~10^10 bytes; it_badinput under
 * ASan timed out on it). The map stays right through it: every record of
 * the page counted before, those above the GC point after, and a record
 * put after. */
static void gc_of_a_page_s_records_oldest_first_keeps_the_map(void **state)
{
  (void)state;
  enum { N = 60000, KEEP = 100 };
  char why[256];
  struct sfix x;
  s_setup(&x, 31);
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  for (uint64_t l = 1; l <= N; l++) {
    struct trec t;
    assert_int_equal(store_put_rec(&x.st, &x.s, mkrec(&t, l, l - 1, 3, 0, (uint8_t)l, REC_CPL, 2),
                                   why, sizeof why), 0);
    seg_add(&x.s, l, l - 1);
  }
  assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
  x.s.vdl = x.s.scl;
  assert_int_equal(store_unmat(&x.st, &x.s, 3), N);    /* the map, built */
  double t0 = cpu_ms_now();
  size_t nr, ni;
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  assert_int_equal(store_gc(&x.st, &x.s, N - KEEP, N, &nr, &ni, why, sizeof why), 0);
  assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
  double ms = cpu_ms_now() - t0;
  printf("# GC of %d records of one page: %.0f ms of CPU\n", N - KEEP, ms);
  assert_int_equal(nr, N - KEEP);
  assert_int_equal(store_unmat(&x.st, &x.s, 3), KEEP);
  struct trec t;
  assert_int_equal(store_begin(&x.st, why, sizeof why), 0);
  assert_int_equal(store_put_rec(&x.st, &x.s, mkrec(&t, N + 1, N, 3, 0, 1, REC_CPL, 2), why,
                                 sizeof why), 0);
  assert_int_equal(store_commit(&x.st, why, sizeof why), 0);
  assert_int_equal(store_unmat(&x.st, &x.s, 3), KEEP + 1);
  s_teardown(&x);
}

/* The record cache on a volume of many PGs: each segment cuts its copies
 * from a chunk of its own, and RCACHE_BYTES counts the chunks. A segment
 * whose copies are all freed gives its chunk back: a thousand PGs written
 * once and freed must not keep a chunk each and leave no room for the
 * records that come next (every read of them would unpack from the kv). */
static void the_record_cache_keeps_room_after_many_pgs_are_freed(void **state)
{
  (void)state;
  struct sfix x;
  s_setup(&x, 41);
  Rec r = AURALOG__RECORD__INIT;
  r.page_no = 1;
  uint32_t npg = RCACHE_BYTES / (64u << 10) + 16;   /* more chunks than the budget */
  for (uint32_t pg = 0; pg < npg; pg++) {
    r.lsn = 1 + pg;
    store_rc_put(&x.st, VOL, pg, &r);
    store_rc_del(&x.st, VOL, pg, r.lsn);
  }
  size_t n, bytes;
  uint64_t hits, misses;
  store_rc_stats(&x.st, &n, &bytes, &hits, &misses);
  assert_int_equal(n, 0);
  if (bytes >= RCACHE_BYTES)
    fail_msg("%u PGs written once and freed hold %zu bytes of the record cache", npg, bytes);
  r.lsn = 1 + npg;
  store_rc_put(&x.st, VOL, 0, &r);
  assert_non_null(store_rc_get(&x.st, VOL, 0, r.lsn));
  s_teardown(&x);
}

int main(void)
{
  log_quiet(getenv("VERBOSE") ? 0 : 1);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(coalesced_versions_read_like_the_records),
    cmocka_unit_test(versions_gc_makes_count_as_coalesced),
    cmocka_unit_test(the_page_map_follows_every_change),
    cmocka_unit_test(gc_of_a_page_s_records_oldest_first_keeps_the_map),
    cmocka_unit_test(the_record_cache_never_holds_what_the_store_does_not),
    cmocka_unit_test(the_record_cache_keeps_room_after_many_pgs_are_freed),
    cmocka_unit_test(gc_keeps_exactly_what_the_pgmrpl_needs),
    cmocka_unit_test(old_truncations_are_forgotten_below_the_gc_point),
    cmocka_unit_test(a_late_truncation_keeps_page_versions),
    cmocka_unit_test(a_running_node_frees_scrubs_and_repairs),
    cmocka_unit_test(the_stale_version_bug_would_be_seen),
    cmocka_unit_test(a_segment_never_frees_or_coalesces_on_a_dead_branch),
    cmocka_unit_test(a_good_copy_replaces_a_damaged_record),
    cmocka_unit_test(a_node_behind_its_peers_gc_catches_up_by_page_versions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
