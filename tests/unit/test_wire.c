/*
 * test_wire.c: what goes over the network between auralog processes.
 *
 * Checks that a message framed by one process is read back identically by
 * another (for appends with records, page reads, node registration and
 * errors); that a half-received frame only ever means "wait for more bytes";
 * that an oversized or empty frame is refused with a reason before any
 * memory is set aside for it; and that random garbage (random bytes, random
 * well-formed protobuf, valid frames with bytes changed) never crashes the
 * reader or wire_check; and that a frame unpacked into the frame arena
 * (net/farena.h, as net.c does) reads the same, stays whole under a nested
 * frame, and leaves one chunk behind, frame after frame, however large.
 *
 * What wire_check refuses is in test_wirecheck.c (malformed messages,
 * unknown fields) and test_wirebounds.c (LSNs and epochs out of range).
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
#include "wire_util.h"
#include "net/farena.h"

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

/* ---- the frame arena (net/farena.h) ------------------------------------ */

/* frame[0..len) of an Append of three records, as a peer sends it. */
static uint8_t *append_frame(struct trec *recs, struct tappend *t, size_t *len)
{
  trec_make(&recs[0], 10, 0, 5, 1, 0, 16);
  trec_make(&recs[1], 11, 10, 6, 3, 40, 33);
  trec_make(&recs[2], 15, 11, 5, 2, 4000, 8);
  tappend_make(t, recs, 3);
  uint8_t *f = wire_frame(&t->env, len);
  assert_non_null(f);
  return f;
}

static void same_append(const Env *e, const struct trec *recs)
{
  assert_int_equal(e->body_case, AURALOG__ENVELOPE__BODY_APPEND);
  assert_int_equal(e->append->n_records, 3);
  for (size_t i = 0; i < 3; i++) {
    const Auralog__Record *a = e->append->records[i], *b = &recs[i].r;
    assert_int_equal(a->lsn, b->lsn);
    assert_int_equal(a->n_ranges, b->n_ranges);
    for (size_t j = 0; j < a->n_ranges; j++)
      assert_memory_equal(a->ranges[j]->data.data, b->ranges[j]->data.data,
                          b->ranges[j]->data.len);
  }
}

static void test_frame_arena(void **state)
{
  (void)state;
  struct trec recs[3];
  struct tappend t;
  size_t len, used, need;
  char why[128];
  uint8_t *f = append_frame(recs, &t, &len);
  ProtobufCAllocator *fa = farena_enter();
  if (fa == NULL) {             /* a sanitizer build: the system allocator */
    farena_leave();
    free(f);
    skip();
  }
  /* Frame after frame: the same contents, one chunk held between them. */
  for (int k = 0; k < 200; k++) {
    if (k)
      assert_ptr_equal(farena_enter(), fa);
    Env *e;
    assert_int_equal(wire_parse_in(f, len, fa, &e, &used, &need, why, sizeof why), 1);
    assert_int_equal(used, len);
    check_is(e, ERR_NONE);
    same_append(e, recs);
    farena_leave();
    assert_int_equal(farena_held(), FARENA_CHUNK);
  }
  /* A frame received while another is handled: the outer one stays whole
   * until the outermost leave (Invariant A), even when the inner one
   * takes more chunks. */
  Env *outer, *inner;
  farena_enter();
  assert_int_equal(wire_parse_in(f, len, fa, &outer, &used, &need, why, sizeof why), 1);
  farena_enter();
  for (int k = 0; k < 2000; k++)
    assert_int_equal(wire_parse_in(f, len, fa, &inner, &used, &need, why, sizeof why), 1);
  assert_true(farena_held() > FARENA_CHUNK);
  farena_leave();
  same_append(outer, recs);
  same_append(inner, recs);
  farena_leave();
  assert_int_equal(farena_held(), FARENA_CHUNK);
  /* A message larger than a chunk gets a chunk of its own, let go after. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Page pg = AURALOG__PAGE__INIT;
  size_t big = 3 * FARENA_CHUNK;
  uint8_t *data = malloc(big);
  for (size_t i = 0; i < big; i++)
    data[i] = (uint8_t)(i * 7);
  pg.volume_id = 1;
  pg.data.data = data;
  pg.data.len = big;
  env.req = 5;
  env.body_case = AURALOG__ENVELOPE__BODY_PAGE;
  env.page = &pg;
  size_t blen;
  uint8_t *bf = wire_frame(&env, &blen);
  assert_non_null(bf);
  farena_enter();
  Env *e;
  assert_int_equal(wire_parse_in(bf, blen, fa, &e, &used, &need, why, sizeof why), 1);
  assert_int_equal(e->page->data.len, big);
  assert_memory_equal(e->page->data.data, data, big);
  farena_leave();
  assert_true(farena_held() <= FARENA_CHUNK);
  free(bf);
  free(data);
  free(f);
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
    cmocka_unit_test(test_frame_arena),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
