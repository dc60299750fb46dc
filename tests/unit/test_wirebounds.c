/*
 * test_wirebounds.c: LSN and epoch bounds in wire_check (wire.c).
 *
 * Checks that every LSN and epoch a message carries (an append's VDL,
 * epoch, truncation and records, their MTR shape included; a truncate's
 * range; a segment's info, its records and truncations; a page read's
 * read point, epoch and truncation; a scan's bounds; acks, pages, gossip
 * and volumes) is refused as out of range past LSN_MAX or EPOCH_MAX, 2^64
 * - 5 (where any sum wraps) included, and that a range that ends before
 * it starts or a record of a newer epoch than its writer's is refused as
 * a bad message, both when built in memory and after a trip over the wire.
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

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_check_append_bounds),
    cmocka_unit_test(test_check_append_bounds_wire),
    cmocka_unit_test(test_check_truncate_bounds),
    cmocka_unit_test(test_check_seg_info_bounds),
    cmocka_unit_test(test_check_read_page_bounds),
    cmocka_unit_test(test_check_other_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
