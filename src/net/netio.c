/*
 * netio.c: the real driver's struct io over net.c (see netio.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "net/netio.h"

static void conn_msg(struct conn *c, const Env *env)
{
  struct netio *ni = c->data;
  ni->on_msg(ni->core, (struct ep *)c, env);
}

static void deliver_downs(uv_idle_t *h)
{
  struct netio *ni = h->data;
  uv_idle_stop(&ni->later);
  for (size_t i = 0; i < ni->ndown; i++) {
    if (ni->on_down)
      ni->on_down(ni->core, (struct ep *)ni->down[i]);
    conn_unref(ni->down[i]);
  }
  ni->ndown = 0;
}

static void conn_closed(struct conn *c)
{
  struct netio *ni = c->data;
  if (ni->in_call) {
    /* Inside the core's own call (a failed write or connect): later. */
    if (ni->ndown == ni->capdown) {
      ni->capdown = ni->capdown ? 2 * ni->capdown : 8;
      ni->down = realloc(ni->down, ni->capdown * sizeof *ni->down);
    }
    conn_ref(c);
    ni->down[ni->ndown++] = c;
    uv_idle_start(&ni->later, deliver_downs);
    return;
  }
  if (ni->on_down)
    ni->on_down(ni->core, (struct ep *)c);
}

static void conn_up(struct conn *c, int status)
{
  struct netio *ni = c->data;
  if (status == 0 && ni->on_up)
    ni->on_up(ni->core, (struct ep *)c);   /* a failure closes c: on_down */
}

static int io_send_(void *ctx, struct ep *to, const Env *env)
{
  struct netio *ni = ctx;
  size_t len;
  ni->in_call++;
  int rc = conn_send_sized((struct conn *)to, env, &len);
  ni->in_call--;
  if (rc == 0)
    ni->io.sent_bytes += len;
  return rc;
}

/* A frame sent late: a timer holds it and a reference to the conn. */
struct late {
  uv_timer_t t;
  struct conn *c;
  uint8_t *frame;
  size_t len;
};

static void late_freed(uv_handle_t *h)
{
  free(h->data);
}

static void late_fire(uv_timer_t *t)
{
  struct late *d = t->data;
  if (d->c->closing)
    free(d->frame);
  else
    conn_send_frame(d->c, d->frame, d->len);
  conn_unref(d->c);
  uv_close((uv_handle_t *)&d->t, late_freed);
}

static int io_send_late(void *ctx, struct ep *to, const Env *env, uint32_t ms)
{
  struct netio *ni = ctx;
  struct conn *c = (struct conn *)to;
  if (ms == 0)
    return io_send_(ctx, to, env);
  if (c->closing)
    return -1;
  struct late *d = calloc(1, sizeof *d);
  if (d == NULL || (d->frame = wire_frame_room(env, NET_FRAME_ROOM, &d->len)) == NULL) {
    free(d);
    return -1;
  }
  d->c = c;
  conn_ref(c);
  uv_timer_init(ni->loop, &d->t);
  d->t.data = d;
  uv_timer_start(&d->t, late_fire, ms, 0);
  return 0;
}

static void io_cork_(void *ctx, struct ep *e, int on)
{
  struct netio *ni = ctx;
  ni->in_call++;
  if (on)
    conn_cork((struct conn *)e);
  else
    conn_uncork((struct conn *)e);     /* writes: may fail at once */
  ni->in_call--;
}

static void io_hold(void *ctx, struct ep *e)
{
  (void)ctx;
  conn_ref((struct conn *)e);
}

static void io_release(void *ctx, struct ep *e)
{
  (void)ctx;
  conn_unref((struct conn *)e);
}

static struct ep *io_connect(void *ctx, const char *addr)
{
  struct netio *ni = ctx;
  ni->in_call++;
  struct conn *c = net_connect(ni->loop, addr, conn_up, conn_msg, conn_closed, ni);
  ni->in_call--;
  if (c)
    c->count = &ni->count;
  return (struct ep *)c;
}

static void io_close(void *ctx, struct ep *e)
{
  (void)ctx;
  conn_close((struct conn *)e);
}

static void io_count_as(void *ctx, struct ep *e, int cls)
{
  struct netio *ni = ctx;
  ((struct conn *)e)->count = cls == IO_COUNT_COORD ? &ni->coord_count : &ni->count;
}

static void io_fatal(void *ctx, const char *why)
{
  (void)ctx;
  die("%s", why);
}

static uint64_t io_clock(void *ctx)
{
  (void)ctx;
  return now_ms();
}

static uint64_t io_clock_us(void *ctx)
{
  (void)ctx;
  return now_us();
}

static void io_binding_(void *ctx, struct ep *e, uint8_t out[32])
{
  (void)ctx;
  memcpy(out, ((struct conn *)e)->bind, AUTH_BIND_BYTES);
}

static uint64_t io_random(void *ctx)
{
  (void)ctx;
  return ((uint64_t)(unsigned)rand() << 32) ^ (uint64_t)(unsigned)rand();
}

void netio_init(struct netio *ni, uv_loop_t *loop, void *core,
                void (*on_msg)(void *core, struct ep *e, const Env *env),
                void (*on_up)(void *core, struct ep *e),
                void (*on_down)(void *core, struct ep *e))
{
  memset(ni, 0, sizeof *ni);
  ni->loop = loop;
  ni->core = core;
  ni->on_msg = on_msg;
  ni->on_up = on_up;
  ni->on_down = on_down;
  ni->io = (struct io){
    .ctx = ni, .send = io_send_, .send_late = io_send_late, .cork = io_cork_,
    .hold = io_hold, .release = io_release, .connect = io_connect, .close = io_close,
    .count_as = io_count_as, .fatal = io_fatal, .now_ms = io_clock, .random = io_random,
    .now_us = io_clock_us, .binding = io_binding_,
  };
  uv_idle_init(loop, &ni->later);
  ni->later.data = ni;
  srand((unsigned)uv_hrtime() ^ (unsigned)getpid());
}

void netio_free(struct netio *ni)
{
  for (size_t i = 0; i < ni->ndown; i++)
    conn_unref(ni->down[i]);
  free(ni->down);
  ni->down = NULL;
  ni->ndown = ni->capdown = 0;
}

int netio_listen(struct netio *ni, const char *addr, char *why, size_t whylen)
{
  return net_listen_count(ni->loop, addr, conn_msg, conn_closed, ni, &ni->count, why,
                          whylen);
}
