/*
 * wire_util.h: what the wire tests (test_wire.c, test_wirecheck.c,
 * test_wirebounds.c) share: sealed records and Append envelopes with all
 * their storage inside, a round trip through a frame, and a check that
 * wire_check gives the expected code (and a reason when it refuses).
 */
#ifndef AURALOG_TEST_WIRE_UTIL_H
#define AURALOG_TEST_WIRE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "param.h"
#include "record.h"
#include "net/wire.h"

/* A record with up to 4 ranges, all storage inside. */
struct trec {
  Auralog__Record r;
  Auralog__Range g[4];
  Auralog__Range *gp[4];
  uint8_t buf[4][64];
};

/* Make a sealed record with nr ranges at off, off+100, ... of len bytes. */
static inline void trec_make(struct trec *t, uint64_t lsn, uint64_t prev,
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

static inline void tappend_make(struct tappend *t, struct trec *recs, size_t n)
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
static inline Env *roundtrip(const Env *env)
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

static inline void check_is(const Env *env, int code)
{
  char why[256] = "";
  int rc = wire_check(env, why, sizeof why);
  if (rc != code)
    fail_msg("wire_check returned %d (%s), expected %d; reason: %s", rc,
             wire_errname((uint32_t)rc), code, why);
  if (code != ERR_NONE)
    assert_true(strlen(why) > 0);
}

#endif
