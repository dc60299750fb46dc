/*
 * fake_io.h: what the core tests (test_cores.c, test_wcore.c) share: a fake
 * struct io (io.h) that records every message a core sends (a wire_copy,
 * with the endpoint it went to, checked by wire_check), hands out
 * endpoints of its own, and gives a settable clock and a fixed random
 * number; a way to hand a core a message as a driver would (through a
 * frame and wire_check); and the six segments of a one-PG volume, one per
 * node, two per AZ, as the coordinator places them.
 */
#ifndef AURALOG_TEST_FAKE_IO_H
#define AURALOG_TEST_FAKE_IO_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/io.h"
#include "param.h"
#include "net/wire.h"

/* Volume VOL, of PSIZE-byte pages; node i of the six is ids[i], in AZ
 * azs[i], at addrs[i]. */
#define VOL 7
#define PSIZE 4096

static const char *const ids[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};
static const char *const azs[NCOPIES] = {"A", "A", "B", "B", "C", "C"};
static const char *const addrs[NCOPIES] = {"A1:1", "A2:1", "B1:1", "B2:1", "C1:1", "C2:1"};

/* ---- the fake io ----------------------------------------------------------- */

/* An endpoint: the test's own, opaque to the cores. */
struct ep {
  char addr[ADDR_MAX_LEN + 1];
  int open;
  int holds;                   /* io->hold minus io->release */
};

struct sent {
  struct ep *to;
  Env *env;                    /* a wire_copy of what the core sent */
  uint32_t delay_ms;
  int taken;                   /* the test has looked at it */
};

struct fake {
  struct io io;
  uint64_t now;
  struct ep *eps[64];
  size_t neps;
  struct sent *out;
  size_t nout, cap;
  int fatal;
};

static inline struct ep *ep_new(struct fake *f, const char *addr)
{
  assert_true(f->neps < sizeof f->eps / sizeof f->eps[0]);
  struct ep *e = calloc(1, sizeof *e);
  snprintf(e->addr, sizeof e->addr, "%s", addr);
  e->open = 1;
  f->eps[f->neps++] = e;
  return e;
}

/* The newest endpoint a core opened to addr. */
static inline struct ep *ep_named(struct fake *f, const char *addr)
{
  for (size_t i = f->neps; i > 0; i--)
    if (strcmp(f->eps[i - 1]->addr, addr) == 0)
      return f->eps[i - 1];
  fail_msg("no endpoint to %s was opened", addr);
  return NULL;
}

static inline int f_send_late(void *ctx, struct ep *to, const Env *env, uint32_t delay_ms)
{
  struct fake *f = ctx;
  char why[256];
  if (!to->open)
    return -1;
  Env *copy = wire_copy(env);
  assert_non_null(copy);
  if (wire_check(copy, why, sizeof why) != ERR_NONE)
    fail_msg("a core sent a message the wire refuses: %s", why);
  if (f->nout == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    f->out = realloc(f->out, f->cap * sizeof *f->out);
  }
  f->out[f->nout++] = (struct sent){to, copy, delay_ms, 0};
  return 0;
}

static inline int f_send(void *ctx, struct ep *to, const Env *env)
{
  return f_send_late(ctx, to, env, 0);
}

static inline void f_hold(void *ctx, struct ep *e)
{
  (void)ctx;
  e->holds++;
}

static inline void f_release(void *ctx, struct ep *e)
{
  (void)ctx;
  assert_true(e->holds > 0);
  e->holds--;
}

static inline struct ep *f_connect(void *ctx, const char *addr)
{
  return ep_new(ctx, addr);
}

static inline void f_close(void *ctx, struct ep *e)
{
  (void)ctx;
  e->open = 0;
}

static inline void f_fatal(void *ctx, const char *why)
{
  (void)why;
  ((struct fake *)ctx)->fatal = 1;
}

static inline uint64_t f_now(void *ctx)
{
  return ((struct fake *)ctx)->now;
}

static inline uint64_t f_random(void *ctx)
{
  (void)ctx;
  return 42;
}

static inline void fake_init(struct fake *f)
{
  memset(f, 0, sizeof *f);
  f->io = (struct io){.ctx = f, .send = f_send, .send_late = f_send_late, .hold = f_hold,
                      .release = f_release, .connect = f_connect, .close = f_close,
                      .fatal = f_fatal, .now_ms = f_now, .random = f_random};
  f->now = 1000;
}

static inline void fake_free(struct fake *f)
{
  assert_int_equal(f->fatal, 0);
  for (size_t i = 0; i < f->nout; i++)
    wire_free(f->out[i].env);
  free(f->out);
  for (size_t i = 0; i < f->neps; i++)
    free(f->eps[i]);
}

/* Messages sent to `to` the test has not looked at, of kind body (0: any). */
static inline size_t count(const struct fake *f, const struct ep *to, int body)
{
  size_t n = 0;
  for (size_t i = 0; i < f->nout; i++)
    n += f->out[i].to == to && !f->out[i].taken &&
         (body == 0 || (int)f->out[i].env->body_case == body);
  return n;
}

/* The first such message, now looked at; it must be there. */
static inline const Env *take(struct fake *f, const struct ep *to, int body)
{
  for (size_t i = 0; i < f->nout; i++)
    if (f->out[i].to == to && !f->out[i].taken && (int)f->out[i].env->body_case == body) {
      f->out[i].taken = 1;
      return f->out[i].env;
    }
  fail_msg("no message of kind %d was sent to %s", body, to->addr);
  return NULL;
}

/* env through a frame and wire_check, as a driver receives it. */
static inline Env *over_wire(const Env *env)
{
  char why[256];
  size_t len, used, need;
  Env *out = NULL;
  uint8_t *frame = wire_frame(env, &len);
  assert_non_null(frame);
  assert_int_equal(wire_parse(frame, len, &out, &used, &need, why, sizeof why), 1);
  free(frame);
  if (wire_check(out, why, sizeof why) != ERR_NONE)
    fail_msg("the test built a message the wire refuses: %s", why);
  return out;
}

/* Hand env, arrived on endpoint from, to a core's on_msg event. */
#define DELIVER(on_msg, core, from, env) do {   \
    Env *x_ = over_wire(env);                   \
    on_msg(core, from, x_);                     \
    wire_free(x_);                              \
  } while (0)

/* Message kinds (an Envelope's body case). */
#define APPEND AURALOG__ENVELOPE__BODY_APPEND
#define APPEND_ACK AURALOG__ENVELOPE__BODY_APPEND_ACK
#define ERROR AURALOG__ENVELOPE__BODY_ERROR
#define PAGE AURALOG__ENVELOPE__BODY_PAGE
#define ASSIGN AURALOG__ENVELOPE__BODY_ASSIGN
#define REGISTER AURALOG__ENVELOPE__BODY_REGISTER
#define VOLUME AURALOG__ENVELOPE__BODY_VOLUME
#define STATUS AURALOG__ENVELOPE__BODY_STATUS
#define SEG_QUERY AURALOG__ENVELOPE__BODY_SEG_QUERY
#define SEG_INFO AURALOG__ENVELOPE__BODY_SEG_INFO

/* The six segments of PG 0 of volume VOL, one per node (as coord.c places
 * them). */
static inline void pg0_segments(Auralog__Segment seg[NCOPIES], Auralog__Segment *ptr[NCOPIES])
{
  for (int i = 0; i < NCOPIES; i++) {
    auralog__segment__init(&seg[i]);
    seg[i].volume_id = VOL;
    seg[i].pg = 0;
    seg[i].first_page = 0;
    seg[i].npages = PG_PAGES;
    seg[i].page_size = PSIZE;
    seg[i].node = (char *)ids[i];
    seg[i].az = (char *)azs[i];
    seg[i].addr = (char *)addrs[i];
    ptr[i] = &seg[i];
  }
}

#endif
