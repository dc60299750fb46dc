/*
 * test_backup.c: backup objects and plans (src/backup/bkfmt.c, bkplan.c)
 * and the object store's dir backend (src/backup/objstore_dir.c).
 *
 *   - keys name what they hold and parse back; anything else in the store
 *     is not taken for a backup object;
 *   - a log piece and a base image come back as encoded; one byte changed
 *     anywhere, or the object cut short, is refused with a reason, and so
 *     is an object under another's name, records out of order or off the
 *     chain, a page outside the PG;
 *   - plans: the pieces chain from a base or from the empty PG; a gap
 *     stops them; overlapping pieces (two uploaders) are walked through;
 *     the newest base that reaches the target is used; a target past the
 *     end, or below the oldest base once the first pieces are gone, is
 *     refused;
 *   - the dir store: objects whole, listed in order under a prefix, a
 *     leftover temporary file never listed, bad keys refused;
 *   - restore around damage (src/backup/restore.c R4): a damaged base is
 *     gone around through an older base and more log, a damaged piece
 *     through another piece over its range, each restoring exactly the
 *     pages the records make; a damaged piece nothing else covers is
 *     refused in one line naming it and what the backup still holds, and
 *     the points below it still restore.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "backup/objstore.h"
#include "backup/restore.h"
#include "record.h"

/* ---- keys ------------------------------------------------------------------ */

static void test_keys_parse_back(void **state)
{
  (void)state;
  char key[BK_KEY_MAX];
  struct bk_key k;
  bk_key_log(key, 7, 3, 0x10, 0x2f);
  assert_string_equal(key, "v7/pg3/log/0000000000000010-000000000000002f");
  assert_int_equal(bk_key_parse(key, &k), 0);
  assert_int_equal(k.kind, BK_LOG);
  assert_true(k.vol == 7 && k.pg == 3 && k.a == 0x10 && k.b == 0x2f);
  bk_key_base(key, 12, 0, 99, 1700000000123ull);
  assert_string_equal(key, "v12/pg0/base/0000000000000063-0000018bcfe5687b");
  assert_int_equal(bk_key_parse(key, &k), 0);
  assert_int_equal(k.kind, BK_BASE);
  assert_true(k.vol == 12 && k.pg == 0 && k.a == 99 && k.b == 1700000000123ull);
  /* Not backup objects: left alone. */
  const char *others[] = {"v7/pg3/log/0000000000000010", "v7/pg3/log/00000000000000x0-0000000000000020",
                          "v07/pg3/base/0000000000000001-0000000000000001", "v7/pg3/manifest",
                          "readme", "v7/pg3/base/0000000000000001", "v7/retention",
                          "v7/pg3/log/0000000000000020-0000000000000010",
                          "v7/pg3/base/0000000000000001-0000000000000001.tmp"};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    assert_int_equal(bk_key_parse(others[i], &k), -1);
}

/* ---- objects ---------------------------------------------------------------- */

#define PS 512

static Rec *mkrec(uint64_t lsn, uint64_t prev, uint32_t page, int cpl)
{
  Rec *r = calloc(1, sizeof *r);
  auralog__record__init(r);
  r->lsn = lsn;
  r->prev_lsn = prev;
  r->page_no = page;
  r->flags = cpl ? REC_CPL : 0;
  r->n_ranges = 1;
  r->ranges = calloc(1, sizeof *r->ranges);
  r->ranges[0] = calloc(1, sizeof *r->ranges[0]);
  auralog__range__init(r->ranges[0]);
  r->ranges[0]->off = (uint32_t)(lsn % 100);
  uint8_t *b = malloc(4);
  memset(b, (int)lsn, 4);
  r->ranges[0]->data = (ProtobufCBinaryData){4, b};
  r->epoch = 1;
  rec_seal(r);
  return r;
}

static void free_log(Auralog__BackupLog *m)
{
  for (size_t i = 0; i < m->n_records; i++)
    auralog__record__free_unpacked(m->records[i], NULL);
  free(m->records);
}

/* A log piece of vol 1, pg 2 (pages 16..31) over (from, to] with records
 * at lsns[], chained from prev. */
static void mklog(Auralog__BackupLog *m, uint64_t from, uint64_t to, const uint64_t *lsns,
                  size_t n, uint64_t prev)
{
  auralog__backup_log__init(m);
  m->volume_id = 1;
  m->pg = 2;
  m->from = from;
  m->to = to;
  m->first_page = 16;
  m->npages = 16;
  m->page_size = PS;
  m->n_records = n;
  m->records = calloc(n ? n : 1, sizeof *m->records);
  for (size_t i = 0; i < n; i++) {
    m->records[i] = mkrec(lsns[i], prev, 16 + (uint32_t)(lsns[i] % 16), i + 1 == n);
    prev = lsns[i];
  }
}

static void test_log_piece_round_trip_and_damage(void **state)
{
  (void)state;
  Auralog__BackupLog m;
  uint64_t lsns[] = {11, 12, 15, 20};
  mklog(&m, 10, 25, lsns, 4, 9);
  uint64_t clock[] = {1000, 12, 2000, 20};
  m.n_clock = 4;
  m.clock = clock;
  size_t len;
  uint8_t *b = bk_encode(BK_LOG, &m.base, &len);
  char key[BK_KEY_MAX], why[300];
  bk_key_log(key, 1, 2, 10, 25);
  Auralog__BackupLog *d = bk_decode_log(key, b, len, why, sizeof why);
  assert_non_null(d);
  assert_int_equal(d->n_records, 4);
  assert_int_equal(d->records[3]->lsn, 20);
  assert_int_equal(d->n_clock, 4);
  auralog__backup_log__free_unpacked(d, NULL);
  /* Every byte flipped, and every cut: refused, with a reason. */
  for (size_t i = 0; i < len; i++) {
    b[i] ^= 0x40;
    why[0] = 0;
    assert_null(bk_decode_log(key, b, len, why, sizeof why));
    assert_true(strlen(why) > 0 && strchr(why, '\n') == NULL);
    b[i] ^= 0x40;
    assert_null(bk_decode_log(key, b, i, why, sizeof why));
  }
  /* Under another name. */
  char other[BK_KEY_MAX];
  bk_key_log(other, 1, 2, 10, 26);
  assert_null(bk_decode_log(other, b, len, why, sizeof why));
  assert_non_null(strstr(why, "than its name says"));
  bk_key_base(other, 1, 2, 10, 5);
  assert_null(bk_decode_log(other, b, len, why, sizeof why));
  free(b);
  free_log(&m);
  /* Off the chain: a backlink to a record it lacks. */
  mklog(&m, 10, 25, lsns, 4, 9);
  m.records[2]->prev_lsn = 11;
  rec_seal(m.records[2]);
  b = bk_encode(BK_LOG, &m.base, &len);
  assert_null(bk_decode_log(key, b, len, why, sizeof why));
  assert_non_null(strstr(why, "off the PG's chain"));
  free(b);
  free_log(&m);
  /* A record outside the range. */
  uint64_t late[] = {11, 30};
  mklog(&m, 10, 25, late, 2, 9);
  b = bk_encode(BK_LOG, &m.base, &len);
  assert_null(bk_decode_log(key, b, len, why, sizeof why));
  assert_non_null(strstr(why, "outside its range"));
  free(b);
  free_log(&m);
  /* A page outside the PG. */
  mklog(&m, 10, 25, lsns, 4, 9);
  m.records[1]->page_no = 3;
  rec_seal(m.records[1]);
  b = bk_encode(BK_LOG, &m.base, &len);
  assert_null(bk_decode_log(key, b, len, why, sizeof why));
  assert_non_null(strstr(why, "outside its PG"));
  free(b);
  free_log(&m);
}

static void test_base_image_round_trip(void **state)
{
  (void)state;
  Auralog__BackupBase m = AURALOG__BACKUP_BASE__INIT;
  m.volume_id = 1;
  m.pg = 2;
  m.at = 40;
  m.first_page = 16;
  m.npages = 16;
  m.page_size = PS;
  Auralog__BasePage p[2] = {AURALOG__BASE_PAGE__INIT, AURALOG__BASE_PAGE__INIT};
  Auralog__BasePage *pp[2] = {&p[0], &p[1]};
  uint8_t a[PS], c[PS];
  memset(a, 1, PS);
  memset(c, 2, PS);
  p[0].page_no = 17;
  p[0].data = (ProtobufCBinaryData){PS, a};
  p[1].page_no = 30;
  p[1].data = (ProtobufCBinaryData){PS, c};
  m.n_pages = 2;
  m.pages = pp;
  size_t len;
  uint8_t *b = bk_encode(BK_BASE, &m.base, &len);
  char key[BK_KEY_MAX], why[300];
  bk_key_base(key, 1, 2, 40, 7);
  Auralog__BackupBase *d = bk_decode_base(key, b, len, why, sizeof why);
  assert_non_null(d);
  assert_int_equal(d->n_pages, 2);
  assert_memory_equal(d->pages[1]->data.data, c, PS);
  auralog__backup_base__free_unpacked(d, NULL);
  /* A log decoder is not fooled by a base, nor the reverse. */
  bk_key_log(key, 1, 2, 39, 40);
  assert_null(bk_decode_log(key, b, len, why, sizeof why));
  free(b);
  /* A page of the wrong size. */
  p[1].data.len = PS - 1;
  b = bk_encode(BK_BASE, &m.base, &len);
  bk_key_base(key, 1, 2, 40, 7);
  assert_null(bk_decode_base(key, b, len, why, sizeof why));
  assert_non_null(strstr(why, "wrong size"));
  free(b);
}

/* ---- plans ------------------------------------------------------------------ */

static void add(struct bk_volset *vs, uint32_t pg, int base, uint64_t a, uint64_t b)
{
  char key[BK_KEY_MAX];
  if (base)
    bk_key_base(key, vs->vol, pg, a, b);
  else
    bk_key_log(key, vs->vol, pg, a, b);
  bk_volset_add(vs, key, 100);
}

static void test_plans_chain_pieces_and_stop_at_gaps(void **state)
{
  (void)state;
  struct bk_volset vs = {.vol = 5};
  add(&vs, 0, 0, 0, 10);
  add(&vs, 0, 0, 10, 20);
  add(&vs, 0, 0, 15, 40);    /* overlaps: another uploader took over at 15 */
  add(&vs, 0, 0, 40, 50);
  add(&vs, 0, 0, 60, 70);    /* after a gap (50, 60] */
  add(&vs, 0, 1, 55, 0);     /* a base at 55 bridges it */
  add(&vs, 0, 0, 55, 60);
  add(&vs, 3, 0, 0, 5);      /* PG 3 only: PGs 1 and 2 absent */
  add(&vs, 0, 0, 0, 0);      /* not a valid key (from == to): ignored */
  bk_volset_sort(&vs);
  assert_int_equal(vs.npgs, 4);
  assert_true(vs.pgs[0].present && !vs.pgs[1].present && !vs.pgs[2].present &&
              vs.pgs[3].present);
  const struct bk_pgset *p = &vs.pgs[0];
  size_t path[16], n;
  assert_int_equal(bk_reach(p, 0, path, &n), 50);
  assert_int_equal(n, 4);    /* (0,10] (10,20] (15,40] (40,50] */
  assert_int_equal(p->logs[path[2]].to, 40);
  assert_int_equal(bk_reach(p, 55, NULL, NULL), 70);
  size_t base;
  assert_int_equal(bk_plan(p, 45, &base, path, &n), 0);
  assert_true(base == SIZE_MAX);   /* from the empty PG */
  assert_int_equal(bk_plan(p, 57, &base, path, &n), 0);
  assert_int_equal(p->bases[base].at, 55);
  assert_int_equal(n, 1);
  assert_int_equal(bk_plan(p, 55, &base, path, &n), 0);   /* the base alone */
  assert_int_equal(p->bases[base].at, 55);
  assert_int_equal(n, 0);
  assert_int_equal(bk_plan(p, 52, &base, path, &n), -1);  /* in the gap */
  assert_int_equal(bk_plan(p, 71, &base, path, &n), -1);  /* past the end */
  uint64_t lo, hi;
  assert_true(bk_window(p, &lo, &hi));
  assert_true(lo == 55 && hi == 70);
  bk_volset_free(&vs);

  /* Retention took the first pieces: below the oldest base, nothing. */
  vs = (struct bk_volset){.vol = 5};
  add(&vs, 0, 1, 100, 0);
  add(&vs, 0, 0, 100, 130);
  add(&vs, 0, 1, 120, 0);
  add(&vs, 0, 0, 130, 150);
  bk_volset_sort(&vs);
  p = &vs.pgs[0];
  assert_int_equal(bk_plan(p, 99, &base, path, &n), -1);
  assert_int_equal(bk_plan(p, 140, &base, path, &n), 0);
  assert_int_equal(p->bases[base].at, 120);
  assert_true(bk_window(p, &lo, &hi));
  assert_true(lo == 100 && hi == 150);
  bk_volset_free(&vs);
}

/* Retention: what goes, as (kind, a, b) triples. */
struct gone {
  int n;
  int kind[16];
  uint64_t a[16], b[16];
};

static void on_gone(void *arg, int kind, uint64_t a, uint64_t b)
{
  struct gone *g = arg;
  if (g->n < 16) {
    g->kind[g->n] = kind;
    g->a[g->n] = a;
    g->b[g->n] = b;
  }
  g->n++;
}

static void test_retention_keeps_every_point_in_its_window(void **state)
{
  (void)state;
  struct bk_volset vs = {.vol = 5};
  add(&vs, 0, 0, 0, 10);
  add(&vs, 0, 0, 10, 20);
  add(&vs, 0, 1, 20, 1000);   /* a base at 20, staged at t=1000 */
  add(&vs, 0, 0, 20, 30);
  add(&vs, 0, 1, 30, 2000);   /* at 30, t=2000 */
  add(&vs, 0, 0, 30, 40);
  add(&vs, 0, 1, 40, 3000);   /* at 40, t=3000 */
  add(&vs, 0, 0, 40, 50);
  bk_volset_sort(&vs);
  const struct bk_pgset *p = &vs.pgs[0];
  struct gone g = {0};
  /* Nothing is old enough: nothing goes. */
  assert_int_equal(bk_retain(p, 1500, 1000, on_gone, &g), 0);
  assert_int_equal(bk_retain(p, 900, 1000, on_gone, &g), 0);
  /* At t=2500 keeping 600 ms: the edge is 1900; the base at 20 (t=1000)
   * is the newest that old, so what only points below 20 need goes. */
  assert_int_equal(bk_retain(p, 2500, 600, on_gone, &g), 2);
  assert_true(g.kind[0] == BK_LOG && g.a[0] == 0 && g.b[0] == 10);
  assert_true(g.kind[1] == BK_LOG && g.a[1] == 10 && g.b[1] == 20);
  /* At t=3500 keeping 1000: the edge is 2500, the base at 30 stays; the
   * base at 20 and the pieces up to 30 go. Every point from 30 on is
   * still restorable from what is left. */
  g.n = 0;
  assert_int_equal(bk_retain(p, 3500, 1000, on_gone, &g), 4);
  assert_true(g.kind[0] == BK_BASE && g.a[0] == 20 && g.b[0] == 1000);
  struct bk_volset left = {.vol = 5};
  add(&left, 0, 1, 30, 2000);
  add(&left, 0, 0, 30, 40);
  add(&left, 0, 1, 40, 3000);
  add(&left, 0, 0, 40, 50);
  bk_volset_sort(&left);
  uint64_t lo, hi;
  assert_true(bk_window(&left.pgs[0], &lo, &hi));
  assert_true(lo == 30 && hi == 50);
  bk_volset_free(&left);
  bk_volset_free(&vs);
}

/* ---- the dir store ---------------------------------------------------------- */

struct seen {
  char keys[16][128];
  uint64_t size[16];
  int n;
};

static int on_key(void *arg, const char *key, uint64_t size)
{
  struct seen *s = arg;
  if (s->n < 16) {
    snprintf(s->keys[s->n], sizeof s->keys[0], "%s", key);
    s->size[s->n] = size;
  }
  s->n++;
  return 0;
}

static void test_dir_store_objects_and_listing(void **state)
{
  (void)state;
  char root[] = "/tmp/auralog-unit-backup-XXXXXX", url[200], why[300];
  assert_non_null(mkdtemp(root));
  snprintf(url, sizeof url, "dir:%s/store", root);
  struct objstore *o = obj_open(url, why, sizeof why);
  assert_non_null(o);
  assert_int_equal(obj_put(o, "v1/pg2/log/b", "hello", 5, why, sizeof why), 0);
  assert_int_equal(obj_put(o, "v1/pg2/log/a", "", 0, why, sizeof why), 0);
  assert_int_equal(obj_put(o, "v1/pg10/base/x", "12", 2, why, sizeof why), 0);
  assert_int_equal(obj_put(o, "v2/other", "z", 1, why, sizeof why), 0);
  assert_int_equal(obj_put(o, "v1/pg2/log/b", "HELLO!", 6, why, sizeof why), 0);  /* replaced */
  uint8_t *d;
  size_t n;
  assert_int_equal(obj_get(o, "v1/pg2/log/b", &d, &n, why, sizeof why), 0);
  assert_int_equal(n, 6);
  assert_memory_equal(d, "HELLO!", 6);
  free(d);
  assert_int_equal(obj_get(o, "v1/pg2/log/none", &d, &n, why, sizeof why), OBJ_NOTFOUND);
  /* A crash's leftover temporary file is not an object. */
  char tmp[300];
  snprintf(tmp, sizeof tmp, "%s/store/v1/pg2/log/c.tmp+123-1", root);
  FILE *f = fopen(tmp, "w");
  assert_non_null(f);
  fputs("half", f);
  fclose(f);
  struct seen s = {0};
  assert_int_equal(obj_list(o, "v1/", on_key, &s, why, sizeof why), 0);
  assert_int_equal(s.n, 3);
  assert_string_equal(s.keys[0], "v1/pg10/base/x");   /* byte order */
  assert_string_equal(s.keys[1], "v1/pg2/log/a");
  assert_string_equal(s.keys[2], "v1/pg2/log/b");
  assert_int_equal(s.size[2], 6);
  s.n = 0;
  assert_int_equal(obj_list(o, "v3/", on_key, &s, why, sizeof why), 0);
  assert_int_equal(s.n, 0);
  /* Bad keys: refused, nothing written. */
  const char *bad[] = {"../x", "/abs", "a b", "", "a//b", "v1/pg2/log/c.tmp+1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why[0] = 0;
    assert_int_equal(obj_put(o, bad[i], "x", 1, why, sizeof why), OBJ_ERR);
    assert_non_null(strstr(why, "bad key"));
  }
  s.n = 0;
  assert_int_equal(obj_list(o, "", on_key, &s, why, sizeof why), 0);
  assert_int_equal(s.n, 4);
  assert_int_equal(obj_del(o, "v2/other", why, sizeof why), 0);
  assert_int_equal(obj_del(o, "v2/other", why, sizeof why), OBJ_NOTFOUND);
  obj_close(o);
  /* Unknown schemes are refused. */
  assert_null(obj_open("ftp://x/y", why, sizeof why));
  assert_non_null(strstr(why, "unknown scheme"));
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  assert_int_equal(system(cmd), 0);
}

/* ---- restore around damage ------------------------------------------------- */

/* Volume 9 in a dir store, PG g its pages g*RP..g*RP+RP-1: pieces and
 * bases made from one chain of records per PG, LSNs from 1, every one a
 * CPL, record n on the PG's page n % RP. */
#define RP 8
#define RVOL 9

struct rstore {
  char root[64];
  struct objstore *o;
};

static void rs_open(struct rstore *rs)
{
  char url[128], why[300];
  snprintf(rs->root, sizeof rs->root, "/tmp/auralog-unit-restore-XXXXXX");
  assert_non_null(mkdtemp(rs->root));
  snprintf(url, sizeof url, "dir:%s/store", rs->root);
  rs->o = obj_open(url, why, sizeof why);
  assert_non_null(rs->o);
}

static void rs_close(struct rstore *rs)
{
  char cmd[128];
  obj_close(rs->o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", rs->root);
  assert_int_equal(system(cmd), 0);
}

/* The chain's records in (from, to] that lsns[] lists, into a piece of
 * PG g. */
static void put_piece_of(struct rstore *rs, uint32_t g, uint64_t from, uint64_t to,
                         const uint64_t *lsns, size_t n)
{
  Auralog__BackupLog m = AURALOG__BACKUP_LOG__INIT;
  m.volume_id = RVOL;
  m.pg = g;
  m.from = from;
  m.to = to;
  m.first_page = g * RP;
  m.npages = RP;
  m.page_size = PS;
  m.n_records = n;
  m.records = calloc(n ? n : 1, sizeof *m.records);
  for (size_t i = 0; i < n; i++)
    m.records[i] = mkrec(lsns[i], lsns[i] - 1, g * RP + (uint32_t)(lsns[i] % RP), 1);
  size_t len;
  uint8_t *b = bk_encode(BK_LOG, &m.base, &len);
  char key[BK_KEY_MAX], why[300];
  bk_key_log(key, RVOL, g, from, to);
  assert_int_equal(obj_put(rs->o, key, b, len, why, sizeof why), 0);
  free(b);
  free_log(&m);
}

static void put_piece(struct rstore *rs, uint64_t from, uint64_t to, const uint64_t *lsns,
                      size_t n)
{
  put_piece_of(rs, 0, from, to, lsns, n);
}

/* PG g's pages as of lsn: its records 1..lsn applied to zeros. */
static void pages_at(uint32_t g, uint64_t lsn, uint8_t *pages)
{
  memset(pages, 0, RP * PS);
  for (uint64_t l = 1; l <= lsn; l++) {
    Rec *r = mkrec(l, l - 1, g * RP + (uint32_t)(l % RP), 1);
    rec_apply(pages + (size_t)(l % RP) * PS, PS, r);
    auralog__record__free_unpacked(r, NULL);
  }
}

static void put_base(struct rstore *rs, uint64_t at, uint64_t ms)
{
  uint8_t pages[RP * PS];
  pages_at(0, at, pages);
  Auralog__BackupBase m = AURALOG__BACKUP_BASE__INIT;
  m.volume_id = RVOL;
  m.pg = 0;
  m.at = at;
  m.first_page = 0;
  m.npages = RP;
  m.page_size = PS;
  Auralog__BasePage pv[RP], *pp[RP];
  for (int i = 0; i < RP; i++) {
    auralog__base_page__init(&pv[i]);
    pv[i].page_no = (uint32_t)i;
    pv[i].data = (ProtobufCBinaryData){PS, pages + (size_t)i * PS};
    pp[i] = &pv[i];
  }
  m.n_pages = RP;
  m.pages = pp;
  size_t len;
  uint8_t *b = bk_encode(BK_BASE, &m.base, &len);
  char key[BK_KEY_MAX], why[300];
  bk_key_base(key, RVOL, 0, at, ms);
  assert_int_equal(obj_put(rs->o, key, b, len, why, sizeof why), 0);
  free(b);
}

/* One byte of key's object flipped, in the middle (a page's or a
 * record's bytes: the frame still parses, only the sum can tell). */
static void rot(struct rstore *rs, const char *key)
{
  uint8_t *b;
  size_t n;
  char why[300];
  assert_int_equal(obj_get(rs->o, key, &b, &n, why, sizeof why), 0);
  b[n / 2] ^= 0x10;
  assert_int_equal(obj_put(rs->o, key, b, n, why, sizeof why), 0);
  free(b);
}

#define RPGS 2                 /* at most this many PGs */
struct rsink {
  uint8_t pages[RPGS * RP * PS];
  uint32_t n;
};

static int to_sink(void *arg, uint32_t page_no, const uint8_t *page, uint32_t ps, char *why,
                   size_t whylen)
{
  (void)why, (void)whylen;
  struct rsink *k = arg;
  assert_int_equal(ps, PS);
  assert_true(page_no < RPGS * RP);
  memcpy(k->pages + (size_t)page_no * PS, page, PS);
  k->n++;
  return 0;
}

/* Restore to lsn (0: the latest): 0 and the pages exactly as the records
 * make them, or -1 and why. */
static int restore_to(struct rstore *rs, uint64_t lsn, struct rs_result *res, char *why,
                      size_t whylen)
{
  struct rs_target t = {.to_lsn = lsn};
  struct rsink k = {{0}, 0};
  why[0] = 0;
  int rc = restore_pages(rs->o, RVOL, &t, to_sink, &k, res, why, whylen);
  if (rc == 0) {
    uint8_t want[RP * PS];
    assert_int_equal(k.n, res->npgs * RP);
    for (uint32_t g = 0; g < res->npgs; g++) {
      pages_at(g, res->cpl, want);
      assert_memory_equal(k.pages + (size_t)g * RP * PS, want, RP * PS);
    }
    if (lsn)
      assert_int_equal(res->cpl, lsn);
  } else {
    assert_int_equal(k.n, 0);   /* nothing given before the refusal */
  }
  return rc;
}

static const uint64_t L1_10[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const uint64_t L11_20[] = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
static const uint64_t L21_30[] = {21, 22, 23, 24, 25, 26, 27, 28, 29, 30};

static void test_restore_goes_around_a_damaged_base(void **state)
{
  (void)state;
  struct rstore rs;
  rs_open(&rs);
  put_piece(&rs, 0, 10, L1_10, 10);
  put_base(&rs, 10, 1000);
  put_piece(&rs, 10, 20, L11_20, 10);
  put_base(&rs, 20, 2000);
  put_piece(&rs, 20, 30, L21_30, 10);
  struct rs_result res;
  char why[600], key[BK_KEY_MAX];
  assert_int_equal(restore_to(&rs, 27, &res, why, sizeof why), 0);
  assert_int_equal(res.damaged, 0);
  assert_string_equal(res.note, "");
  assert_int_equal(res.objects, 2);    /* the base at 20 and (20, 30] */
  /* The newest base is damaged: the one at 10 and the piece (10, 20]
   * stand in for it, to the same pages. */
  bk_key_base(key, RVOL, 0, 20, 2000);
  rot(&rs, key);
  assert_int_equal(restore_to(&rs, 27, &res, why, sizeof why), 0);
  assert_int_equal(res.damaged, 1);
  assert_non_null(strstr(res.note, key));
  assert_non_null(strstr(res.note, "checksum does not match"));
  assert_int_equal(restore_to(&rs, 0, &res, why, sizeof why), 0);   /* the latest */
  assert_int_equal(res.cpl, 30);
  assert_int_equal(restore_to(&rs, 20, &res, why, sizeof why), 0);
  /* Both bases damaged: from the empty PG, every piece. */
  bk_key_base(key, RVOL, 0, 10, 1000);
  rot(&rs, key);
  assert_int_equal(restore_to(&rs, 30, &res, why, sizeof why), 0);
  assert_int_equal(res.damaged, 2);
  assert_int_equal(res.records, 30);
  rs_close(&rs);
}

static void test_restore_refuses_when_nothing_stands_in_for_a_damaged_piece(void **state)
{
  (void)state;
  struct rstore rs;
  rs_open(&rs);
  put_piece(&rs, 0, 10, L1_10, 10);
  put_piece(&rs, 10, 20, L11_20, 10);
  put_base(&rs, 20, 2000);
  put_piece(&rs, 20, 30, L21_30, 10);
  struct rs_result res;
  char why[600], key[BK_KEY_MAX];
  bk_key_log(key, RVOL, 0, 20, 30);
  rot(&rs, key);
  /* Its only copy: past 20 nothing can be restored. One line, naming it
   * and what is left. */
  assert_int_equal(restore_to(&rs, 25, &res, why, sizeof why), -1);
  assert_null(strchr(why, '\n'));
  assert_non_null(strstr(why, key));
  assert_non_null(strstr(why, "checksum does not match"));
  assert_non_null(strstr(why, "0 to 20 for every PG"));
  /* Below it: still restorable, the damaged piece unread. */
  assert_int_equal(restore_to(&rs, 20, &res, why, sizeof why), 0);
  assert_int_equal(res.damaged, 0);
  assert_int_equal(restore_to(&rs, 14, &res, why, sizeof why), 0);
  /* The latest is what is left: 20, going around it. */
  assert_int_equal(restore_to(&rs, 0, &res, why, sizeof why), 0);
  assert_int_equal(res.cpl, 20);
  assert_int_equal(res.damaged, 1);
  /* Another uploader's piece over most of the range (it took over at 18,
   * and staged to 29): the walk still takes the damaged one first (it
   * reaches further), then this one stands in, and 25 restores again. */
  static const uint64_t L19_29[] = {19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29};
  put_piece(&rs, 18, 29, L19_29, 11);
  assert_int_equal(restore_to(&rs, 25, &res, why, sizeof why), 0);
  assert_int_equal(res.damaged, 1);
  assert_int_equal(restore_to(&rs, 30, &res, why, sizeof why), -1);
  printf("# refused: %s\n", why);
  /* A damaged piece below the newest base: points above the base still
   * restore from it, points below the damage from the empty PG, and the
   * points only that piece reaches are refused. */
  bk_key_log(key, RVOL, 0, 10, 20);
  rot(&rs, key);
  assert_int_equal(restore_to(&rs, 25, &res, why, sizeof why), 0);   /* the base at 20 */
  assert_int_equal(restore_to(&rs, 9, &res, why, sizeof why), 0);
  assert_int_equal(restore_to(&rs, 15, &res, why, sizeof why), -1);
  assert_non_null(strstr(why, key));
  rs_close(&rs);
}

/* Two PGs whose newest runs of points share none once a damaged piece is
 * left out: pg 0's from its base at 30 on ((20, 30] was never staged),
 * pg 1's up to 25 (its other uploader's piece (0, 40], which the walk
 * takes first, damaged). An LSN the older runs hold still restores; the
 * latest has no point to be. */
static void test_restore_plans_an_lsn_the_newest_runs_do_not_share(void **state)
{
  (void)state;
  struct rstore rs;
  rs_open(&rs);
  uint64_t l[40];
  for (int i = 0; i < 40; i++)
    l[i] = (uint64_t)i + 1;
  put_piece_of(&rs, 0, 0, 20, l, 20);
  put_base(&rs, 30, 3000);
  put_piece_of(&rs, 0, 30, 40, l + 30, 10);
  put_piece_of(&rs, 1, 0, 25, l, 25);
  put_piece_of(&rs, 1, 0, 40, l, 40);
  struct rs_result res;
  char why[600], key[BK_KEY_MAX];
  assert_int_equal(restore_to(&rs, 35, &res, why, sizeof why), 0);
  assert_int_equal(restore_to(&rs, 15, &res, why, sizeof why), 0);   /* below the window */
  bk_key_log(key, RVOL, 1, 0, 40);
  rot(&rs, key);
  assert_int_equal(restore_to(&rs, 15, &res, why, sizeof why), 0);
  assert_int_equal(res.npgs, 2);
  assert_int_equal(res.damaged, 1);
  assert_int_equal(restore_to(&rs, 35, &res, why, sizeof why), -1);
  assert_non_null(strstr(why, key));
  assert_int_equal(restore_to(&rs, 0, &res, why, sizeof why), -1);   /* the latest */
  assert_non_null(strstr(why, "no point in common"));
  assert_non_null(strstr(why, key));
  rs_close(&rs);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_keys_parse_back),
    cmocka_unit_test(test_log_piece_round_trip_and_damage),
    cmocka_unit_test(test_base_image_round_trip),
    cmocka_unit_test(test_plans_chain_pieces_and_stop_at_gaps),
    cmocka_unit_test(test_retention_keeps_every_point_in_its_window),
    cmocka_unit_test(test_dir_store_objects_and_listing),
    cmocka_unit_test(test_restore_goes_around_a_damaged_base),
    cmocka_unit_test(test_restore_refuses_when_nothing_stands_in_for_a_damaged_piece),
    cmocka_unit_test(test_restore_plans_an_lsn_the_newest_runs_do_not_share),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
