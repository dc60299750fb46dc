/*
 * test_wire.c: what goes over the network between auralog processes.
 *
 * Checks that a message framed by one process is read back identically by
 * another (for appends with records, page reads, node registration and
 * errors); that a half-received frame only ever means "wait for more bytes";
 * that an oversized or empty frame is refused with a reason before any
 * memory is set aside for it; that random garbage never crashes the reader;
 * and that malformed messages (an append without an epoch, records out of
 * order, a bad CRC, a bad AZ or volume name, ...) are refused with the right
 * error code and a readable reason, so no role ever sees them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rng.h"

#include "param.h"
#include "record.h"
#include "wire.h"

/* ---- helpers ------------------------------------------------------------- */

/* A record with up to 4 ranges, all storage inside. */
struct trec {
  Auralog__Record r;
  Auralog__Range g[4];
  Auralog__Range *gp[4];
  uint8_t buf[4][64];
};

/* Make a sealed record with nr ranges at off, off+100, ... of len bytes. */
static void trec_make(struct trec *t, uint64_t lsn, uint64_t prev,
                      uint32_t page, size_t nr, uint32_t off, size_t len)
{
  assert_true(nr <= 4 && len <= 64);
  auralog__record__init(&t->r);
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = page;
  for (size_t i = 0; i < nr; i++) {
    auralog__range__init(&t->g[i]);
    t->g[i].off = off + (uint32_t)(100 * i);
    for (size_t j = 0; j < len; j++)
      t->buf[i][j] = (uint8_t)(lsn * 31 + i * 7 + j);
    t->g[i].data.len = len;
    t->g[i].data.data = t->buf[i];
    t->gp[i] = &t->g[i];
  }
  t->r.n_ranges = nr;
  t->r.ranges = nr ? t->gp : NULL;
  rec_seal(&t->r);
}

/* An Append envelope over recs[0..n). */
struct tappend {
  Env env;
  Auralog__Append a;
  Auralog__Record *rp[8];
};

static void tappend_make(struct tappend *t, struct trec *recs, size_t n)
{
  assert_true(n <= 8);
  auralog__envelope__init(&t->env);
  auralog__append__init(&t->a);
  t->a.volume_id = 42;
  t->a.pg = 3;
  t->a.epoch = 7;
  for (size_t i = 0; i < n; i++)
    t->rp[i] = &recs[i].r;
  t->a.n_records = n;
  t->a.records = t->rp;
  t->env.req = 1001;
  t->env.body_case = AURALOG__ENVELOPE__BODY_APPEND;
  t->env.append = &t->a;
}

/* Frame env, parse it back, check it took exactly the frame. */
static Env *roundtrip(const Env *env)
{
  size_t len = 0, used = 99, need = 0;
  uint8_t *f = wire_frame(env, &len);
  assert_non_null(f);
  assert_true(len > 4);
  assert_int_equal(get_be32(f), len - 4);
  Env *out = NULL;
  char why[256] = "";
  int rc = wire_parse(f, len, &out, &used, &need, why, sizeof why);
  assert_int_equal(rc, 1);
  assert_non_null(out);
  assert_int_equal(used, len);
  assert_int_equal(need, len);
  free(f);
  return out;
}

static void check_is(const Env *env, int code)
{
  char why[256] = "";
  int rc = wire_check(env, why, sizeof why);
  if (rc != code)
    fail_msg("wire_check returned %d (%s), expected %d; reason: %s", rc,
             wire_errname((uint32_t)rc), code, why);
  if (code != ERR_NONE)
    assert_true(strlen(why) > 0);
}

/* ---- round trips --------------------------------------------------------- */

static void test_roundtrip_append(void **state)
{
  (void)state;
  struct trec recs[3];
  trec_make(&recs[0], 10, 0, 5, 1, 0, 16);
  trec_make(&recs[1], 11, 10, 6, 3, 40, 33);
  trec_make(&recs[2], 15, 11, 5, 2, 4000, 8);
  recs[2].r.flags = REC_CPL;
  rec_seal(&recs[2].r);
  struct tappend t;
  tappend_make(&t, recs, 3);
  check_is(&t.env, ERR_NONE);

  Env *e = roundtrip(&t.env);
  assert_int_equal(e->req, 1001);
  assert_int_equal(e->body_case, AURALOG__ENVELOPE__BODY_APPEND);
  assert_int_equal(e->append->volume_id, 42);
  assert_int_equal(e->append->pg, 3);
  assert_int_equal(e->append->epoch, 7);
  assert_int_equal(e->append->n_records, 3);
  for (size_t i = 0; i < 3; i++) {
    const Auralog__Record *a = e->append->records[i], *b = &recs[i].r;
    assert_int_equal(a->lsn, b->lsn);
    assert_int_equal(a->prev_lsn, b->prev_lsn);
    assert_int_equal(a->page_no, b->page_no);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->crc, b->crc);
    assert_int_equal(a->n_ranges, b->n_ranges);
    for (size_t j = 0; j < a->n_ranges; j++) {
      assert_int_equal(a->ranges[j]->off, b->ranges[j]->off);
      assert_int_equal(a->ranges[j]->data.len, b->ranges[j]->data.len);
      assert_memory_equal(a->ranges[j]->data.data, b->ranges[j]->data.data,
                          b->ranges[j]->data.len);
    }
  }
  check_is(e, ERR_NONE);
  wire_free(e);
}

static void test_roundtrip_read_page(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
  rp.volume_id = 9;
  rp.pg = 2;
  rp.page_no = 600;
  rp.read_point = 0x123456789abcull;
  env.req = 77;
  env.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
  env.read_page = &rp;
  check_is(&env, ERR_NONE);

  Env *e = roundtrip(&env);
  assert_int_equal(e->req, 77);
  assert_int_equal(e->body_case, AURALOG__ENVELOPE__BODY_READ_PAGE);
  assert_int_equal(e->read_page->volume_id, 9);
  assert_int_equal(e->read_page->pg, 2);
  assert_int_equal(e->read_page->page_no, 600);
  assert_int_equal(e->read_page->read_point, 0x123456789abcull);
  check_is(e, ERR_NONE);
  wire_free(e);
}

static void test_roundtrip_register(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  reg.id = "node-b1";
  reg.az = "B";
  reg.addr = "127.0.0.1:7403";
  env.req = 5;
  env.body_case = AURALOG__ENVELOPE__BODY_REGISTER;
  env.register_ = &reg;
  check_is(&env, ERR_NONE);

  Env *e = roundtrip(&env);
  assert_int_equal(e->body_case, AURALOG__ENVELOPE__BODY_REGISTER);
  assert_string_equal(e->register_->id, "node-b1");
  assert_string_equal(e->register_->az, "B");
  assert_string_equal(e->register_->addr, "127.0.0.1:7403");
  check_is(e, ERR_NONE);
  wire_free(e);
}

static void test_roundtrip_error(void **state)
{
  (void)state;
  Env env;
  Auralog__Error err;
  wire_error(&env, &err, 31337, ERR_STALE_EPOCH, "fenced by epoch 3");
  check_is(&env, ERR_NONE);

  Env *e = roundtrip(&env);
  assert_int_equal(e->req, 31337);
  assert_int_equal(e->body_case, AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(e->error->code, ERR_STALE_EPOCH);
  assert_string_equal(e->error->msg, "fenced by epoch 3");
  assert_string_equal(wire_errname(e->error->code), "stale epoch");
  check_is(e, ERR_NONE);
  wire_free(e);
}

/* Two frames back to back: each parse takes exactly one. */
static void test_two_frames_in_one_buffer(void **state)
{
  (void)state;
  Env a, b;
  Auralog__Error ea, eb;
  wire_error(&a, &ea, 1, ERR_NOT_FOUND, "no such volume");
  wire_error(&b, &eb, 2, ERR_UNAVAILABLE, "");
  size_t la, lb;
  uint8_t *fa = wire_frame(&a, &la), *fb = wire_frame(&b, &lb);
  assert_non_null(fa);
  assert_non_null(fb);
  uint8_t *buf = malloc(la + lb);
  assert_non_null(buf);
  memcpy(buf, fa, la);
  memcpy(buf + la, fb, lb);

  Env *e;
  size_t used, need;
  char why[256];
  assert_int_equal(wire_parse(buf, la + lb, &e, &used, &need, why, sizeof why), 1);
  assert_int_equal(used, la);
  assert_int_equal(e->req, 1);
  assert_int_equal(e->error->code, ERR_NOT_FOUND);
  wire_free(e);
  assert_int_equal(wire_parse(buf + la, lb, &e, &used, &need, why, sizeof why), 1);
  assert_int_equal(used, lb);
  assert_int_equal(e->req, 2);
  assert_int_equal(e->error->code, ERR_UNAVAILABLE);
  wire_free(e);
  free(buf);
  free(fa);
  free(fb);
}

/* ---- framing ------------------------------------------------------------- */

/* Every strict prefix of a valid frame means "need more", never an error. */
static void test_truncated_frame_needs_more(void **state)
{
  (void)state;
  struct trec recs[2];
  trec_make(&recs[0], 1, 0, 0, 2, 10, 50);
  trec_make(&recs[1], 2, 1, 1, 1, 0, 20);
  struct tappend t;
  tappend_make(&t, recs, 2);
  size_t len;
  uint8_t *f = wire_frame(&t.env, &len);
  assert_non_null(f);

  for (size_t n = 0; n < len; n++) {
    /* Copy to a buffer of exactly n bytes so ASan catches a read past it. */
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    memcpy(p, f, n);
    Env *e = &t.env;        /* must be reset to NULL */
    size_t used = 123, need = 0;
    char why[256] = "";
    int rc = wire_parse(p, n, &e, &used, &need, why, sizeof why);
    if (rc != 0)
      fail_msg("prefix of %zu/%zu bytes: rc %d (%s)", n, len, rc, why);
    assert_null(e);
    assert_int_equal(used, 0);
    assert_int_equal(need, n < 4 ? 4 : len);
    free(p);
  }
  free(f);
}

/* A length over FRAME_MAX is refused from the 4 header bytes alone: the
 * reader neither waits for the body nor allocates room for it. */
static void test_oversized_header_refused(void **state)
{
  (void)state;
  const uint32_t lens[] = { FRAME_MAX + 1, FRAME_MAX + 1000, 0x7fffffffu, 0xffffffffu };
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    uint8_t hdr[4];
    put_be32(hdr, lens[i]);
    Env sentinel, *e = &sentinel;  /* must be reset to NULL */
    size_t used = 1, need = 0;
    char why[256] = "";
    int rc = wire_parse(hdr, sizeof hdr, &e, &used, &need, why, sizeof why);
    assert_int_equal(rc, -1);
    assert_null(e);
    assert_int_equal(used, 0);
    assert_non_null(strstr(why, "limit"));
  }
  /* Exactly FRAME_MAX is allowed: the reader waits for the rest. */
  uint8_t hdr[4];
  put_be32(hdr, FRAME_MAX);
  Env *e;
  size_t used, need;
  char why[256] = "";
  assert_int_equal(wire_parse(hdr, 4, &e, &used, &need, why, sizeof why), 0);
  assert_int_equal(need, 4 + (size_t)FRAME_MAX);
}

static void test_zero_length_refused(void **state)
{
  (void)state;
  uint8_t buf[8] = { 0, 0, 0, 0, 0x08, 0x01, 0, 0 };
  Env *e;
  size_t used = 1, need;
  char why[256] = "";
  assert_int_equal(wire_parse(buf, 4, &e, &used, &need, why, sizeof why), -1);
  assert_true(strlen(why) > 0);
  assert_null(e);
  why[0] = 0;
  assert_int_equal(wire_parse(buf, sizeof buf, &e, &used, &need, why, sizeof why), -1);
  assert_true(strlen(why) > 0);
  assert_int_equal(used, 0);
}

/* A payload over FRAME_MAX is never framed. */
static void test_frame_refuses_oversized_payload(void **state)
{
  (void)state;
  size_t big = FRAME_MAX + 1;
  uint8_t *data = calloc(1, big);
  assert_non_null(data);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Page pg = AURALOG__PAGE__INIT;
  pg.data.len = big;
  pg.data.data = data;
  env.body_case = AURALOG__ENVELOPE__BODY_PAGE;
  env.page = &pg;
  size_t len = 0;
  assert_null(wire_frame(&env, &len));
  free(data);
}

/* Feed one frame to the parser and, if it unpacks, to wire_check. */
static void parse_and_check(const uint8_t *payload, uint32_t plen, int *unpacked)
{
  uint8_t *f = malloc(4 + (size_t)plen);
  assert_non_null(f);
  put_be32(f, plen);
  memcpy(f + 4, payload, plen);
  Env *e;
  size_t used, need;
  char why[256] = "";
  int rc = wire_parse(f, 4 + (size_t)plen, &e, &used, &need, why, sizeof why);
  assert_true(rc == 1 || rc == -1);   /* whole frame present: never "need more" */
  if (rc == 1) {
    assert_non_null(e);
    assert_int_equal(used, 4 + (size_t)plen);
    why[0] = 0;
    int code = wire_check(e, why, sizeof why);
    assert_true(code >= ERR_NONE && code <= ERR_UNAVAILABLE);
    if (code != ERR_NONE)
      assert_true(strlen(why) > 0);
    wire_free(e);
    (*unpacked)++;
  } else {
    assert_null(e);
    assert_true(strlen(why) > 0);
  }
  free(f);
}

/* Random bytes after a valid length: unpack fails, or the result is
 * checked (accepted or refused) without crashing. */
static void test_garbage_payload(void **state)
{
  (void)state;
  int unpacked = 0;
  for (uint64_t seed = 1; seed <= 3000; seed++) {
    uint64_t s = seed;
    uint32_t plen = 1 + rng_below(&s, 300);
    uint8_t buf[300];
    for (uint32_t i = 0; i < plen; i++)
      buf[i] = (uint8_t)rng_next(&s);
    /* Half the time, start with a plausible oneof tag so more of them
     * reach wire_check: field 2..14, wire type 2 (length-delimited). */
    if (seed & 1)
      buf[0] = (uint8_t)((2 + rng_below(&s, 13)) << 3 | 2);
    parse_and_check(buf, plen, &unpacked);
  }
  print_message("garbage: %d of 3000 unpacked\n", unpacked);
}

/* Random but well-formed protobuf: fields with random numbers and wire
 * types varint or length-delimited, the latter holding random bytes or more
 * random fields. Many of these unpack into some Envelope body with random
 * values, which is what wire_check must survive. Returns bytes written. */
static size_t gen_pb(uint64_t *s, uint8_t *buf, size_t cap, int depth)
{
  size_t n = 0;
  int nfield = 1 + (int)rng_below(s, 6);
  for (int f = 0; f < nfield && n + 12 < cap; f++) {
    uint32_t field = 1 + rng_below(s, 14);
    int lendelim = rng_below(s, 3) != 0;
    buf[n++] = (uint8_t)(field << 3 | (lendelim ? 2 : 0));
    if (!lendelim) {
      uint64_t v = rng_below(s, 4) ? rng_below(s, 5) : rng_next(s);
      while (v >= 0x80) {
        buf[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
      }
      buf[n++] = (uint8_t)v;
      continue;
    }
    size_t room = cap - n - 2;
    if (room > 120)
      room = 120;
    size_t len;
    if (depth < 3 && rng_below(s, 2)) {
      len = gen_pb(s, buf + n + 1, room, depth + 1);
    } else {
      len = rng_below(s, (uint32_t)(room < 10 ? room + 1 : 10));
      for (size_t i = 0; i < len; i++)
        buf[n + 1 + i] = (uint8_t)(rng_below(s, 2) ? 'A' + rng_below(s, 4)
                                                   : rng_next(s));
    }
    buf[n] = (uint8_t)len;
    n += 1 + len;
  }
  return n;
}

static void test_structured_garbage(void **state)
{
  (void)state;
  int unpacked = 0;
  for (uint64_t seed = 1; seed <= 5000; seed++) {
    uint64_t s = seed ^ 0x5eedull;
    uint8_t buf[512];
    size_t n = gen_pb(&s, buf, sizeof buf, 0);
    if (n == 0)
      continue;
    parse_and_check(buf, (uint32_t)n, &unpacked);
  }
  print_message("structured garbage: %d of 5000 unpacked\n", unpacked);
  assert_true(unpacked > 100);   /* the generator does reach wire_check */
}

/* Valid frames with random bytes changed: the same rules hold. */
static void test_mutated_frames(void **state)
{
  (void)state;
  struct trec recs[3];
  trec_make(&recs[0], 100, 90, 7, 2, 0, 12);
  trec_make(&recs[1], 101, 100, 8, 1, 300, 5);
  trec_make(&recs[2], 102, 101, 7, 3, 9, 40);
  struct tappend t;
  tappend_make(&t, recs, 3);
  size_t len;
  uint8_t *f = wire_frame(&t.env, &len);
  assert_non_null(f);
  uint32_t plen = (uint32_t)(len - 4);
  uint8_t *p = malloc(plen);
  assert_non_null(p);
  int unpacked = 0;
  for (uint64_t seed = 1; seed <= 3000; seed++) {
    uint64_t s = seed * 7919;
    memcpy(p, f + 4, plen);
    int nflip = 1 + (int)rng_below(&s, 4);
    for (int k = 0; k < nflip; k++)
      p[rng_below(&s, plen)] ^= (uint8_t)(1 + rng_below(&s, 255));
    uint32_t cut = plen - rng_below(&s, 4);   /* sometimes truncate the payload */
    parse_and_check(p, cut, &unpacked);
  }
  print_message("mutated: %d of 3000 unpacked\n", unpacked);
  assert_true(unpacked > 0);
  free(p);
  free(f);
}

/* ---- wire_check refusals ------------------------------------------------- */

static void test_check_append(void **state)
{
  (void)state;
  struct trec recs[3];
  struct tappend t;

  trec_make(&recs[0], 10, 0, 1, 1, 0, 8);
  trec_make(&recs[1], 20, 10, 1, 1, 0, 8);
  trec_make(&recs[2], 30, 20, 1, 1, 0, 8);
  tappend_make(&t, recs, 3);
  check_is(&t.env, ERR_NONE);

  /* no epoch */
  t.a.epoch = 0;
  check_is(&t.env, ERR_BAD_MSG);
  t.a.epoch = 7;
  /* no volume */
  t.a.volume_id = 0;
  check_is(&t.env, ERR_BAD_MSG);
  t.a.volume_id = 42;
  /* no records: allowed, it only tells the writer's VDL */
  t.a.n_records = 0;
  check_is(&t.env, ERR_NONE);
  t.a.n_records = 3;
  check_is(&t.env, ERR_NONE);

  /* records out of LSN order, and a repeated LSN */
  t.rp[1] = &recs[2].r;
  t.rp[2] = &recs[1].r;
  check_is(&t.env, ERR_BAD_MSG);
  t.rp[1] = &recs[0].r;
  t.rp[2] = &recs[2].r;
  check_is(&t.env, ERR_BAD_MSG);
  t.rp[1] = &recs[1].r;

  /* backlink not below the record's own LSN */
  trec_make(&recs[1], 20, 20, 1, 1, 0, 8);
  check_is(&t.env, ERR_BAD_MSG);
  trec_make(&recs[1], 20, 25, 1, 1, 0, 8);
  check_is(&t.env, ERR_BAD_MSG);
  trec_make(&recs[1], 20, 10, 1, 1, 0, 8);
  check_is(&t.env, ERR_NONE);

  /* bad CRC: data changed after sealing */
  recs[1].buf[0][3] ^= 0x40;
  check_is(&t.env, ERR_BAD_CRC);
  recs[1].buf[0][3] ^= 0x40;
  check_is(&t.env, ERR_NONE);

  /* a range past the largest page size */
  trec_make(&recs[2], 30, 20, 1, 1, PAGE_SIZE_MAX - 4, 8);
  check_is(&t.env, ERR_OUT_OF_RANGE);
  trec_make(&recs[2], 30, 20, 1, 1, PAGE_SIZE_MAX - 8, 8);
  check_is(&t.env, ERR_NONE);
}

static void test_check_register(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  reg.id = "a1";
  reg.az = "A";
  reg.addr = "localhost:7401";
  env.body_case = AURALOG__ENVELOPE__BODY_REGISTER;
  env.register_ = &reg;
  check_is(&env, ERR_NONE);
  reg.az = "C";
  check_is(&env, ERR_NONE);

  const char *bad_az[] = { "D", "", "a", "AB", "@", "Z" };
  for (size_t i = 0; i < sizeof bad_az / sizeof bad_az[0]; i++) {
    reg.az = (char *)bad_az[i];
    check_is(&env, ERR_BAD_MSG);
  }
  reg.az = "B";

  char longid[NAME_MAX_LEN + 2];
  memset(longid, 'x', sizeof longid - 1);
  longid[sizeof longid - 1] = 0;   /* NAME_MAX_LEN + 1 characters */
  const char *bad_id[] = { "", "has space", "slash/no", "semi;colon", longid };
  for (size_t i = 0; i < sizeof bad_id / sizeof bad_id[0]; i++) {
    reg.id = (char *)bad_id[i];
    check_is(&env, ERR_BAD_MSG);
  }
  longid[NAME_MAX_LEN] = 0;        /* exactly NAME_MAX_LEN: fine */
  reg.id = longid;
  check_is(&env, ERR_NONE);

  reg.addr = "no-port";
  check_is(&env, ERR_BAD_MSG);
  reg.addr = "";
  check_is(&env, ERR_BAD_MSG);
}

static void test_check_open_volume(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "db1";
  ov.create = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  env.open_volume = &ov;
  check_is(&env, ERR_NONE);          /* page size 0: the default */

  const uint32_t good_ps[] = { 512, 1024, 4096, PAGE_SIZE_MAX };
  for (size_t i = 0; i < sizeof good_ps / sizeof good_ps[0]; i++) {
    ov.page_size = good_ps[i];
    check_is(&env, ERR_NONE);
  }
  const uint32_t bad_ps[] = { 1000, 1, 256, 4097, 3 * 1024, 2 * PAGE_SIZE_MAX };
  for (size_t i = 0; i < sizeof bad_ps / sizeof bad_ps[0]; i++) {
    ov.page_size = bad_ps[i];
    check_is(&env, ERR_BAD_MSG);
  }
  ov.page_size = 4096;

  const char *bad_name[] = { "", "my db", "../etc", "x\ny", "d\xc3\xa9j\xc3\xa0" };
  for (size_t i = 0; i < sizeof bad_name / sizeof bad_name[0]; i++) {
    ov.name = (char *)bad_name[i];
    check_is(&env, ERR_BAD_MSG);
  }
  ov.name = "Good_Name-1.0";
  check_is(&env, ERR_NONE);
}

static void test_check_no_body(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  env.req = 3;
  check_is(&env, ERR_BAD_MSG);

  /* The same after a trip over the wire: an envelope with only a req. */
  Env *e = roundtrip(&env);
  assert_int_equal(e->body_case, AURALOG__ENVELOPE__BODY__NOT_SET);
  check_is(e, ERR_BAD_MSG);
  wire_free(e);
}

/* ---- hand-built bytes: unknown fields ------------------------------------ */

/* Protobuf bytes built by hand, for what no packer writes. */
struct pbuf {
  uint8_t b[4096];
  size_t n;
};

static void pb_raw(struct pbuf *o, const void *p, size_t n)
{
  assert_true(o->n + n <= sizeof o->b);
  memcpy(o->b + o->n, p, n);
  o->n += n;
}

static void pb_varint(struct pbuf *o, uint64_t v)
{
  uint8_t c[10];
  size_t k = 0;
  while (v >= 0x80) {
    c[k++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  c[k++] = (uint8_t)v;
  pb_raw(o, c, k);
}

/* Append the packed message m (its own fields, no tag). */
static void pb_msg(struct pbuf *o, const ProtobufCMessage *m)
{
  size_t n = protobuf_c_message_get_packed_size(m);
  assert_true(o->n + n <= sizeof o->b);
  o->n += protobuf_c_message_pack(m, o->b + o->n);
}

/* Append field number `field` holding inner as a length-delimited value
 * (a sub-message). Fields may come in any order: the last wins for a
 * singular one, a repeated one collects them. */
static void pb_sub(struct pbuf *o, uint32_t field, const struct pbuf *inner)
{
  pb_varint(o, (uint64_t)field << 3 | 2);
  pb_varint(o, inner->n);
  pb_raw(o, inner->b, inner->n);
}

/* An unknown field numbered 0 written as a two-byte tag (0x80 0x00: the
 * varint 0, padded), varint value 1. protobuf-c 1.4.1 accepts it; it
 * writes it back as the one-byte tag 0x00, which it then refuses. */
static const uint8_t UNKNOWN_ZERO[] = { 0x80, 0x00, 0x01 };
/* An unknown field numbered 99 (no message has one), varint value 5. */
static const uint8_t UNKNOWN_99[] = { ((99 << 3) & 0x7f) | 0x80, (99 << 3) >> 7, 0x05 };

/* Frame the envelope bytes p, unpack them (they must unpack) and return
 * wire_check's answer, its reason in why: one line, never empty when a
 * message is refused. */
static int parse_check(const struct pbuf *p, char *why, size_t whylen)
{
  uint8_t *f = malloc(4 + p->n);
  assert_non_null(f);
  put_be32(f, (uint32_t)p->n);
  memcpy(f + 4, p->b, p->n);
  Env *e = NULL;
  size_t used, need;
  why[0] = 0;
  int rc = wire_parse(f, 4 + p->n, &e, &used, &need, why, whylen);
  if (rc != 1)
    fail_msg("hand-built envelope of %zu bytes does not unpack: %s", p->n, why);
  why[0] = 0;
  int code = wire_check(e, why, whylen);
  if (code != ERR_NONE) {
    assert_true(strlen(why) > 0);
    assert_null(strchr(why, '\n'));
  }
  wire_free(e);
  free(f);
  return code;
}

/* An Append envelope (volume 42, pg 3, epoch 7) with one record, sealed,
 * whose bytes are built by hand; extra bytes go at the level named:
 * 0 the envelope, 1 the append, 2 the record, 3 the record's first range,
 * 4 the append's truncation; none if extra is NULL. */
static void append_bytes(struct pbuf *out, int level, const uint8_t *extra, size_t nextra)
{
  struct trec rec;
  trec_make(&rec, 10, 0, 1, 1, 0, 8);

  struct pbuf g = { .n = 0 };   /* the range */
  pb_msg(&g, &rec.g[0].base);
  if (level == 3 && extra)
    pb_raw(&g, extra, nextra);

  struct pbuf r = { .n = 0 };   /* the record, its range last */
  rec.r.n_ranges = 0;
  pb_msg(&r, &rec.r.base);
  rec.r.n_ranges = 1;
  pb_sub(&r, 5, &g);            /* Record.ranges */
  if (level == 2 && extra)
    pb_raw(&r, extra, nextra);

  Auralog__Append a = AURALOG__APPEND__INIT;
  a.volume_id = 42;
  a.pg = 3;
  a.epoch = 7;
  a.vdl = 5;
  struct pbuf ap = { .n = 0 };  /* the append: fields, then record, then trunc */
  pb_msg(&ap, &a.base);
  pb_sub(&ap, 4, &r);           /* Append.records */
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT;
  tr.epoch = 7;
  tr.from = 100;
  tr.to = 200;
  struct pbuf t = { .n = 0 };
  pb_msg(&t, &tr.base);
  if (level == 4 && extra)
    pb_raw(&t, extra, nextra);
  pb_sub(&ap, 6, &t);           /* Append.trunc */
  if (level == 1 && extra)
    pb_raw(&ap, extra, nextra);

  out->n = 0;
  pb_varint(out, 1 << 3 | 0);   /* Envelope.req = 1001 */
  pb_varint(out, 1001);
  pb_sub(out, 3, &ap);          /* Envelope.append */
  if (level == 0 && extra)
    pb_raw(out, extra, nextra);
}

/* The bug of DESIGN.md §8: a record with an unknown field 0 in a two-byte
 * tag unpacks, but a node that stored it re-packed could never read it
 * back. wire_check refuses it before any role sees it. */
static void test_check_unknown_field_zero(void **state)
{
  (void)state;
  struct pbuf p;
  char why[256];

  append_bytes(&p, 2, NULL, 0);          /* the same append, well formed */
  int code = parse_check(&p, why, sizeof why);
  if (code != ERR_NONE)
    fail_msg("valid hand-built append refused: %s", why);

  append_bytes(&p, 2, UNKNOWN_ZERO, sizeof UNKNOWN_ZERO);
  /* What protobuf-c makes of it: it unpacks, then its re-pack does not. */
  Env *e = auralog__envelope__unpack(NULL, p.n, p.b);
  assert_non_null(e);
  assert_int_equal(e->append->records[0]->base.n_unknown_fields, 1);
  size_t n2 = auralog__envelope__get_packed_size(e);
  uint8_t *b2 = malloc(n2);
  assert_non_null(b2);
  auralog__envelope__pack(e, b2);
  Env *again = auralog__envelope__unpack(NULL, n2, b2);
  print_message("protobuf-c %s its own re-pack of the record\n",
                again ? "reads" : "cannot read");
  wire_free(again);
  free(b2);
  wire_free(e);

  code = parse_check(&p, why, sizeof why);
  if (code != ERR_BAD_MSG)
    fail_msg("record with an unknown field 0: wire_check %d (%s)", code, why);
  assert_non_null(strstr(why, "unknown field 0"));
  assert_non_null(strstr(why, "auralog.Record"));
}

/* An unknown field is refused at every depth: in the envelope, the
 * append (a oneof member), its record (repeated), the record's range (a
 * repeated field of a repeated field), the append's truncation (singular). */
static void test_check_unknown_field_nested(void **state)
{
  (void)state;
  static const char *const where[] = {
    "auralog.Envelope", "auralog.Append", "auralog.Record", "auralog.Range",
    "auralog.TruncRange",
  };
  struct pbuf p;
  char why[256];
  for (int level = 0; level <= 4; level++) {
    append_bytes(&p, level, NULL, 0);
    int code = parse_check(&p, why, sizeof why);
    if (code != ERR_NONE)
      fail_msg("level %d: valid append refused: %s", level, why);
    append_bytes(&p, level, UNKNOWN_99, sizeof UNKNOWN_99);
    code = parse_check(&p, why, sizeof why);
    if (code != ERR_BAD_MSG)
      fail_msg("level %d: unknown field 99 in %s: wire_check %d (%s)", level,
               where[level], code, why);
    assert_non_null(strstr(why, "unknown field 99"));
    assert_non_null(strstr(why, where[level]));
  }

  /* In a message of another body: a SegInfo's truncation. */
  Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
  si.volume_id = 4;
  si.scl = 9;
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT;
  tr.epoch = 2;
  tr.from = 10;
  tr.to = 20;
  struct pbuf t = { .n = 0 }, s = { .n = 0 };
  pb_msg(&t, &tr.base);
  pb_raw(&t, UNKNOWN_99, sizeof UNKNOWN_99);
  pb_msg(&s, &si.base);
  pb_sub(&s, 9, &t);            /* SegInfo.truncs */
  p.n = 0;
  pb_sub(&p, 16, &s);           /* Envelope.seg_info */
  assert_int_equal(parse_check(&p, why, sizeof why), ERR_BAD_MSG);
  assert_non_null(strstr(why, "auralog.TruncRange"));
}

/* ---- LSN and epoch bounds ------------------------------------------------ */

#define WILD (UINT64_MAX - 4)   /* 2^64 - 5: any sum with it wraps */

static void test_check_append_bounds(void **state)
{
  (void)state;
  struct trec recs[2];
  struct tappend t;

  /* An empty append only tells the writer's VDL: it must be sane. */
  tappend_make(&t, recs, 0);
  check_is(&t.env, ERR_NONE);
  t.a.vdl = LSN_MAX;
  check_is(&t.env, ERR_NONE);
  t.a.vdl = WILD;
  check_is(&t.env, ERR_OUT_OF_RANGE);
  t.a.vdl = LSN_MAX + 1;
  check_is(&t.env, ERR_OUT_OF_RANGE);
  t.a.vdl = 100;
  t.a.epoch = EPOCH_MAX;
  check_is(&t.env, ERR_NONE);
  t.a.epoch = EPOCH_MAX + 1;
  check_is(&t.env, ERR_OUT_OF_RANGE);
  t.a.epoch = 7;

  /* Its truncation. */
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT;
  tr.epoch = 7;
  tr.from = 100;
  tr.to = 100 + LAL;
  t.a.trunc = &tr;
  check_is(&t.env, ERR_NONE);
  tr.to = WILD;
  check_is(&t.env, ERR_OUT_OF_RANGE);
  tr.to = 50;                    /* ends before it starts */
  check_is(&t.env, ERR_BAD_MSG);
  tr.to = 100 + LAL;
  tr.epoch = WILD;
  check_is(&t.env, ERR_OUT_OF_RANGE);
  tr.epoch = 7;
  check_is(&t.env, ERR_NONE);

  /* Records: their epoch is at most the append's. */
  trec_make(&recs[0], 10, 0, 1, 1, 0, 8);
  trec_make(&recs[1], 20, 10, 1, 1, 0, 8);
  tappend_make(&t, recs, 2);
  recs[1].r.epoch = 7;
  rec_seal(&recs[1].r);
  check_is(&t.env, ERR_NONE);
  recs[1].r.epoch = 8;           /* a newer epoch than its writer's */
  rec_seal(&recs[1].r);
  check_is(&t.env, ERR_BAD_MSG);
  recs[1].r.epoch = WILD;
  rec_seal(&recs[1].r);
  check_is(&t.env, ERR_OUT_OF_RANGE);
  recs[1].r.epoch = 3;           /* an older epoch (adopted by a recovery) */
  rec_seal(&recs[1].r);
  check_is(&t.env, ERR_NONE);

  /* A record's LSNs, its MTR shape's included. */
  trec_make(&recs[1], LSN_MAX + 1, 10, 1, 1, 0, 8);
  check_is(&t.env, ERR_OUT_OF_RANGE);
  trec_make(&recs[1], LSN_MAX, 10, 1, 1, 0, 8);
  check_is(&t.env, ERR_NONE);
  recs[1].r.flags = REC_CPL;
  recs[1].r.prev_cpl = WILD;
  rec_seal(&recs[1].r);
  check_is(&t.env, ERR_OUT_OF_RANGE);
  recs[1].r.prev_cpl = 5;
  Auralog__PgLast pl = AURALOG__PG_LAST__INIT, *plp = &pl;
  pl.pg = 1;
  pl.lsn = WILD;
  recs[1].r.mtr = &plp;
  recs[1].r.n_mtr = 1;
  rec_seal(&recs[1].r);
  check_is(&t.env, ERR_OUT_OF_RANGE);
  pl.lsn = 9;
  rec_seal(&recs[1].r);
  check_is(&t.env, ERR_NONE);
}

/* The same, with a hand-built append, after a trip over the wire. */
static void test_check_append_bounds_wire(void **state)
{
  (void)state;
  struct trec rec;
  trec_make(&rec, 10, 0, 1, 1, 0, 8);
  rec.r.epoch = 9;
  rec_seal(&rec.r);
  struct tappend t;
  tappend_make(&t, &rec, 1);     /* epoch 7: below the record's */
  Env *e = roundtrip(&t.env);
  check_is(e, ERR_BAD_MSG);
  e->append->epoch = 9;
  check_is(e, ERR_NONE);
  wire_free(e);
}

static void test_check_truncate_bounds(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Truncate t = AURALOG__TRUNCATE__INIT;
  t.volume_id = 5;
  t.pg = 1;
  t.epoch = 3;
  t.from = 1000;
  t.to = 1000 + LAL;
  env.body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
  env.truncate = &t;
  check_is(&env, ERR_NONE);
  t.to = LSN_MAX;
  check_is(&env, ERR_NONE);
  t.to = LSN_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  t.to = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  t.from = WILD;                 /* from <= to, both wild */
  check_is(&env, ERR_OUT_OF_RANGE);
  t.from = 1000;
  t.to = 2000;
  t.epoch = EPOCH_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  t.epoch = 3;
  check_is(&env, ERR_NONE);

  Env *e = roundtrip(&env);
  check_is(e, ERR_NONE);
  e->truncate->to = WILD;
  check_is(e, ERR_OUT_OF_RANGE);
  wire_free(e);
}

static void test_check_seg_info_bounds(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
  si.volume_id = 5;
  si.pg = 2;
  si.scl = 90;
  si.max_lsn = 120;
  si.vdl = 80;
  si.tail = 78;
  si.epoch = 4;
  /* A scan's records come whole, sealed (node/trunc.c reply_info). */
  Auralog__Record r = AURALOG__RECORD__INIT, *rp = &r;
  r.lsn = 120;
  r.prev_lsn = 90;
  r.epoch = 3;
  rec_seal(&r);
  si.recs = &rp;
  si.n_recs = 1;
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT, *trp = &tr;
  tr.epoch = 4;
  tr.from = 80;
  tr.to = 80 + LAL;
  si.truncs = &trp;
  si.n_truncs = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_SEG_INFO;
  env.seg_info = &si;
  check_is(&env, ERR_NONE);

  /* Recovery re-seals what it adopts: a damaged record must not pass. */
  r.crc ^= 1;
  check_is(&env, ERR_BAD_CRC);
  r.crc ^= 1;

  si.vdl = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  si.vdl = 80;
  uint64_t *lsns[] = { &si.scl, &si.max_lsn, &si.tail, &r.lsn, &r.prev_lsn,
                       &r.prev_cpl, &tr.from, &tr.to };
  for (size_t i = 0; i < sizeof lsns / sizeof lsns[0]; i++) {
    uint64_t keep = *lsns[i];
    *lsns[i] = LSN_MAX + 1;
    check_is(&env, ERR_OUT_OF_RANGE);
    *lsns[i] = keep;
  }
  uint64_t *epochs[] = { &si.epoch, &r.epoch, &tr.epoch };
  for (size_t i = 0; i < sizeof epochs / sizeof epochs[0]; i++) {
    uint64_t keep = *epochs[i];
    *epochs[i] = EPOCH_MAX + 1;
    check_is(&env, ERR_OUT_OF_RANGE);
    *epochs[i] = keep;
  }
  tr.to = 70;                    /* ends before it starts */
  check_is(&env, ERR_BAD_MSG);
  tr.to = 80 + LAL;
  check_is(&env, ERR_NONE);

  Env *e = roundtrip(&env);
  check_is(e, ERR_NONE);
  e->seg_info->vdl = WILD;
  check_is(e, ERR_OUT_OF_RANGE);
  wire_free(e);
}

static void test_check_read_page_bounds(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
  rp.volume_id = 9;
  rp.pg = 2;
  rp.page_no = 600;
  rp.read_point = 500;
  rp.need = 450;
  rp.epoch = 6;
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT;
  tr.epoch = 6;
  tr.from = 400;
  tr.to = 400 + LAL;
  rp.trunc = &tr;
  env.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
  env.read_page = &rp;
  check_is(&env, ERR_NONE);

  rp.epoch = EPOCH_MAX;
  check_is(&env, ERR_NONE);
  rp.epoch = EPOCH_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  rp.epoch = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  rp.epoch = 6;
  rp.read_point = WILD;          /* need <= read_point still holds */
  check_is(&env, ERR_OUT_OF_RANGE);
  rp.read_point = 500;
  tr.from = 500 + LAL + 1;       /* ends before it starts */
  check_is(&env, ERR_BAD_MSG);
  tr.from = 400;
  tr.to = LSN_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  tr.to = 400 + LAL;
  check_is(&env, ERR_NONE);

  Env *e = roundtrip(&env);
  check_is(e, ERR_NONE);
  e->read_page->epoch = EPOCH_MAX + 1;
  check_is(e, ERR_OUT_OF_RANGE);
  wire_free(e);
}

/* The other messages that carry LSNs or epochs. */
static void test_check_other_bounds(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;

  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  q.volume_id = 5;
  q.epoch = 4;
  q.scan = 1;
  q.from = 100;
  q.after = 90;
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT, *trp = &tr;
  tr.epoch = 4;
  tr.from = 100;
  tr.to = 100 + LAL;
  q.truncs = &trp;
  q.n_truncs = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
  env.seg_query = &q;
  check_is(&env, ERR_NONE);        /* max 0: the default */
  q.max = BATCH_MAX;
  check_is(&env, ERR_NONE);
  q.max = BATCH_MAX + 1;
  check_is(&env, ERR_BAD_MSG);
  q.max = 0;
  q.epoch = EPOCH_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  q.epoch = 4;
  q.from = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  q.from = 100;
  q.after = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  q.after = 90;
  tr.to = 99;
  check_is(&env, ERR_BAD_MSG);
  tr.to = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  tr.to = 100 + LAL;
  check_is(&env, ERR_NONE);

  Auralog__AppendAck ack = AURALOG__APPEND_ACK__INIT;
  ack.volume_id = 5;
  ack.scl = 77;
  env.body_case = AURALOG__ENVELOPE__BODY_APPEND_ACK;
  env.append_ack = &ack;
  check_is(&env, ERR_NONE);
  ack.scl = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);

  Auralog__Page pg = AURALOG__PAGE__INIT;
  pg.volume_id = 5;
  pg.page_lsn = 77;
  env.body_case = AURALOG__ENVELOPE__BODY_PAGE;
  env.page = &pg;
  check_is(&env, ERR_NONE);
  pg.page_lsn = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);

  Auralog__GossipPull gl = AURALOG__GOSSIP_PULL__INIT;
  gl.volume_id = 5;
  gl.node = "a1";
  gl.scl = 77;
  env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PULL;
  env.gossip_pull = &gl;
  check_is(&env, ERR_NONE);
  gl.scl = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);

  struct trec rec;
  trec_make(&rec, 80, 77, 1, 1, 0, 8);
  Auralog__Record *rp = &rec.r;
  Auralog__GossipPush gp = AURALOG__GOSSIP_PUSH__INIT;
  gp.volume_id = 5;
  gp.scl = 80;
  gp.records = &rp;
  gp.n_records = 1;
  gp.truncs = &trp;
  gp.n_truncs = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
  env.gossip_push = &gp;
  check_is(&env, ERR_NONE);
  gp.scl = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  gp.scl = 80;
  tr.epoch = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  tr.epoch = 4;
  rec.r.prev_cpl = WILD;
  rec_seal(&rec.r);
  check_is(&env, ERR_OUT_OF_RANGE);
  rec.r.prev_cpl = 0;
  rec_seal(&rec.r);
  check_is(&env, ERR_NONE);

  Auralog__Volume v = AURALOG__VOLUME__INIT;
  v.id = 5;
  v.name = "db1";
  v.page_size = 4096;
  v.pg_pages = PG_PAGES;
  v.epoch = 4;
  v.truncs = &trp;
  v.n_truncs = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  env.volume = &v;
  check_is(&env, ERR_NONE);
  v.epoch = EPOCH_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  v.epoch = 4;
  tr.from = WILD;
  check_is(&env, ERR_OUT_OF_RANGE);
  tr.from = 100;
  check_is(&env, ERR_NONE);
}

static void test_name_ok(void **state)
{
  (void)state;
  assert_true(wire_name_ok("a"));
  assert_true(wire_name_ok("node_A-1.x"));
  assert_false(wire_name_ok(NULL));
  assert_false(wire_name_ok(""));
  assert_false(wire_name_ok("a b"));
  assert_false(wire_name_ok("a:b"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_roundtrip_append),
    cmocka_unit_test(test_roundtrip_read_page),
    cmocka_unit_test(test_roundtrip_register),
    cmocka_unit_test(test_roundtrip_error),
    cmocka_unit_test(test_two_frames_in_one_buffer),
    cmocka_unit_test(test_truncated_frame_needs_more),
    cmocka_unit_test(test_oversized_header_refused),
    cmocka_unit_test(test_zero_length_refused),
    cmocka_unit_test(test_frame_refuses_oversized_payload),
    cmocka_unit_test(test_garbage_payload),
    cmocka_unit_test(test_structured_garbage),
    cmocka_unit_test(test_mutated_frames),
    cmocka_unit_test(test_check_append),
    cmocka_unit_test(test_check_register),
    cmocka_unit_test(test_check_open_volume),
    cmocka_unit_test(test_check_no_body),
    cmocka_unit_test(test_check_unknown_field_zero),
    cmocka_unit_test(test_check_unknown_field_nested),
    cmocka_unit_test(test_check_append_bounds),
    cmocka_unit_test(test_check_append_bounds_wire),
    cmocka_unit_test(test_check_truncate_bounds),
    cmocka_unit_test(test_check_seg_info_bounds),
    cmocka_unit_test(test_check_read_page_bounds),
    cmocka_unit_test(test_check_other_bounds),
    cmocka_unit_test(test_name_ok),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
