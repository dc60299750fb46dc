/*
 * test_netio.c: the real driver's struct io (src/net/netio.c), tried as a core
 * uses it: a connect that fails at once (here, to an unreachable network)
 * reports its on_down after the core's call, from the next loop turn,
 * never from inside the call. A core, and a driver's lock held around it
 * (the writer's, vfs/volume.c), is never re-entered from inside itself:
 * before, an engine whose node was unreachable deadlocked on its own lock
 * (found by the crash campaign, crash point 455 of 500).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "net/netio.h"

struct fake {
  int inside;                /* in a call into the io */
  int downs, downs_inside;
  struct ep *last;
};

static void on_msg(void *core, struct ep *e, const Env *env)
{
  (void)core;
  (void)e;
  (void)env;
}

static void on_down(void *core, struct ep *e)
{
  struct fake *f = core;
  f->downs++;
  f->downs_inside += f->inside;
  f->last = e;
}

static void close_one(uv_handle_t *h, void *arg)
{
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void a_connect_that_fails_at_once_reports_down_after_the_call(void **state)
{
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  struct fake f = {0};
  struct netio ni;
  netio_init(&ni, &loop, &f, on_msg, NULL, on_down);
  f.inside = 1;
  struct ep *e = ni.io.connect(ni.io.ctx, "255.255.255.255:9");
  f.inside = 0;
  assert_null(e);                          /* failed at once ... */
  assert_int_equal(f.downs, 0);            /* ... but said so later */
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(f.downs, 1);
  assert_int_equal(f.downs_inside, 0);
  /* A connect that fails later (nobody listens) reports from the loop. */
  e = ni.io.connect(ni.io.ctx, "127.0.0.1:1");
  assert_non_null(e);
  for (int i = 0; i < 100 && f.downs < 2; i++)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(f.downs, 2);
  assert_ptr_equal(f.last, e);
  assert_int_equal(f.downs_inside, 0);
  uv_walk(&loop, close_one, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  netio_free(&ni);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_connect_that_fails_at_once_reports_down_after_the_call),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
