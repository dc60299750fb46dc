/*
 * test_wirecheck.c: the messages wire_check refuses before any role sees
 * them (wire.c).
 *
 * Checks that malformed messages (an append without an epoch or volume,
 * records out of order or with a repeated LSN, a backlink not below its
 * record, a bad CRC, a range past the largest page; a bad AZ, node id or
 * address; a bad page size or volume name; a replica stream whose start,
 * tails, records or points are out of bounds; an envelope with no body) are
 * refused with the right error code and a readable reason; that an
 * unknown field is refused at every depth of a message, the two-byte
 * field 0 of DESIGN.md §8 included, in hand-built protobuf bytes no packer
 * writes; and which names wire_name_ok accepts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire_util.h"

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

/* The read replicas' stream (vfs/feed.c, vfs/replica.c). */
static void test_check_replica_messages(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReplicaHello h = AURALOG__REPLICA_HELLO__INIT;
  h.volume = "main";
  h.addr = "127.0.0.1:7510";
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_HELLO;
  env.replica_hello = &h;
  check_is(&env, ERR_NONE);
  h.volume = "../x";
  check_is(&env, ERR_BAD_MSG);
  h.volume = "main";
  h.addr = "nowhere";
  check_is(&env, ERR_BAD_MSG);

  Auralog__ReplicaStart s = AURALOG__REPLICA_START__INIT;
  Auralog__PgLast tl = AURALOG__PG_LAST__INIT, *tlp[1] = {&tl};
  s.volume_id = 1;
  s.epoch = 2;
  s.start = 40;
  s.from = 41;
  s.vdl = 40;
  s.page_size = 4096;
  s.pg_pages = 256;
  tl.pg = 0;
  tl.lsn = 40;
  s.tails = tlp;
  s.n_tails = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_START;
  env.replica_start = &s;
  check_is(&env, ERR_NONE);
  s.from = 40;                       /* the stream must start above the start point */
  check_is(&env, ERR_BAD_MSG);
  s.from = 41;
  tl.lsn = 41;                       /* a tail above the start point */
  check_is(&env, ERR_BAD_MSG);
  tl.lsn = 40;
  s.page_size = 1000;
  check_is(&env, ERR_BAD_MSG);
  s.page_size = 4096;
  s.vdl = LSN_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  s.vdl = 40;
  s.epoch = EPOCH_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  s.epoch = 2;
  check_is(&env, ERR_NONE);

  struct trec recs[2];
  Auralog__Record *rp[2] = {&recs[0].r, &recs[1].r};
  trec_make(&recs[0], 41, 0, 1, 1, 0, 8);
  trec_make(&recs[1], 42, 41, 1, 1, 0, 8);
  Auralog__ReplicaFeed f = AURALOG__REPLICA_FEED__INIT;
  f.records = rp;
  f.n_records = 2;
  f.vdl = 40;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_FEED;
  env.replica_feed = &f;
  check_is(&env, ERR_NONE);
  rp[0] = &recs[1].r;                /* out of LSN order */
  rp[1] = &recs[0].r;
  check_is(&env, ERR_BAD_MSG);
  rp[0] = &recs[0].r;
  rp[1] = &recs[1].r;
  recs[1].r.crc ^= 1;                /* damaged on the way */
  check_is(&env, ERR_BAD_CRC);
  rec_seal(&recs[1].r);
  f.vdl = LSN_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);

  Auralog__ReplicaAck a = AURALOG__REPLICA_ACK__INIT;
  a.applied = 40;
  a.min_read_point = 40;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_ACK;
  env.replica_ack = &a;
  check_is(&env, ERR_NONE);
  a.min_read_point = LSN_MAX + 1;
  check_is(&env, ERR_OUT_OF_RANGE);
  a.min_read_point = 40;
  char holder[ADDR_MAX_LEN + 2];      /* the holder is a client's address */
  memset(holder, 'x', sizeof holder - 1);
  holder[sizeof holder - 1] = 0;
  a.holder = holder;
  check_is(&env, ERR_BAD_MSG);
  holder[ADDR_MAX_LEN] = 0;
  check_is(&env, ERR_NONE);
}

/* A recovering writer's progress line (vfs/rcvround.c rule W) goes to
 * status as it is: one plain line of at most 200 bytes, or refused. */
static void test_check_engine_recovering(void **state)
{
  (void)state;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  es.volume = "main";
  es.addr = "127.0.0.1:7500";
  es.epoch = 2;
  es.recovering = "round 1 of 3 (fencing, state) for 2.0 s: waiting for A1 (1 request)";
  env.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
  env.engine_stat = &es;
  check_is(&env, ERR_NONE);
  es.recovering = "round 1\nengine up";
  check_is(&env, ERR_BAD_MSG);
  char longer[300];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = 0;
  es.recovering = longer;
  check_is(&env, ERR_BAD_MSG);
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

/* A bench note (lab 10): its figures and conditions go into the journal
 * as they are, so quotes, backslashes and absurd figures are refused. */
static void test_check_bench_note(void **state)
{
  (void)state;
  Auralog__BenchNote b = AURALOG__BENCH_NOTE__INIT;
  Auralog__Fault f = AURALOG__FAULT__INIT;
  Env env = AURALOG__ENVELOPE__INIT;
  env.body_case = AURALOG__ENVELOPE__BODY_FAULT;
  env.fault = &f;
  f.action = "bench";
  f.az = "";
  f.node = "";
  check_is(&env, ERR_BAD_MSG);             /* no result */
  f.bench = &b;
  b.workload = "write-only";
  b.system = "sqlite-wal-full";
  b.clients = 8;
  b.group = 5;
  b.tx_per_s = 2000;
  b.cpu = "Intel(R) Xeon(R) CPU @ 2.20GHz";
  b.kernel = "Linux 6.1 x86_64";
  b.filesystem = "ext4";
  b.reads = "durable";
  check_is(&env, ERR_NONE);
  b.cpu = "x\",\"kind\":\"forged";            /* would break out of the JSON string */
  check_is(&env, ERR_BAD_MSG);
  b.cpu = "ok";
  b.tx_per_s = -1;
  check_is(&env, ERR_BAD_MSG);
  b.tx_per_s = 0.0 / 0.0;
  check_is(&env, ERR_BAD_MSG);
  b.tx_per_s = 10;
  b.group = 0;
  check_is(&env, ERR_BAD_MSG);
  b.group = 1;
  b.system = "sqlite wal";
  check_is(&env, ERR_BAD_MSG);
  b.system = "auralog";
  check_is(&env, ERR_NONE);
  f.action = "slow";                       /* a result in another fault */
  f.node = "A1";
  check_is(&env, ERR_BAD_MSG);
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
    cmocka_unit_test(test_check_append),
    cmocka_unit_test(test_check_register),
    cmocka_unit_test(test_check_open_volume),
    cmocka_unit_test(test_check_replica_messages),
    cmocka_unit_test(test_check_engine_recovering),
    cmocka_unit_test(test_check_no_body),
    cmocka_unit_test(test_check_unknown_field_zero),
    cmocka_unit_test(test_check_unknown_field_nested),
    cmocka_unit_test(test_check_bench_note),
    cmocka_unit_test(test_name_ok),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
