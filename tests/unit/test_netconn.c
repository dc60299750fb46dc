/*
 * test_netconn.c: framed connections (src/net/net.c) keep every frame, in
 * order, whatever the socket takes at once.
 *
 * A conn writes at once where the socket has room (uv_try_write), and
 * queues with libuv what it did not take. Here one corked burst is far
 * larger than a loopback socket's buffer, so the first write is partial
 * (the receiver, on the same loop, cannot read until it returns); more
 * frames follow while the rest is queued, and more after a pause. The
 * receiver must get every frame once, in order, byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net.h"

#define BURST 3000           /* corked frames of PAGE_BYTES: ~12 MB in one write */
#define AFTER 200            /* sent while the burst's rest is queued */
#define LATER 50             /* sent from a timer, once the queue has drained */
#define PAGE_BYTES 4096
#define TOTAL (BURST + AFTER + LATER)

static uv_loop_t loop;
static uv_timer_t deadline, later;
static struct conn *client;
static uint32_t expected, wrong;
static int timed_out;

static void fill(uint8_t *d, uint32_t seq)
{
  for (size_t i = 0; i < PAGE_BYTES; i++)
    d[i] = (uint8_t)(seq * 31 + i * 7);
}

static void send_page(struct conn *c, uint32_t seq)
{
  static uint8_t data[PAGE_BYTES];
  fill(data, seq);
  Auralog__Envelope env = AURALOG__ENVELOPE__INIT;
  Auralog__Page page = AURALOG__PAGE__INIT;
  page.volume_id = 1;
  page.page_no = seq;
  page.page_lsn = seq;
  page.data.data = data;
  page.data.len = PAGE_BYTES;
  env.body_case = AURALOG__ENVELOPE__BODY_PAGE;
  env.page = &page;
  assert_int_equal(conn_send(c, &env), 0);
}

static void on_server_msg(struct conn *c, const Env *env)
{
  (void)c;
  uint8_t want[PAGE_BYTES];
  if (env->body_case != AURALOG__ENVELOPE__BODY_PAGE || env->page->page_no != expected ||
      env->page->data.len != PAGE_BYTES) {
    wrong++;
  } else {
    fill(want, expected);
    wrong += memcmp(want, env->page->data.data, PAGE_BYTES) != 0;
  }
  if (++expected == TOTAL)
    uv_stop(&loop);
}

static void on_client_msg(struct conn *c, const Env *env)
{
  (void)c;
  (void)env;
}

static void on_close(struct conn *c)
{
  (void)c;
}

static void send_later(uv_timer_t *t)
{
  (void)t;
  for (uint32_t i = BURST + AFTER; i < TOTAL; i++)
    send_page(client, i);
}

static void on_connect(struct conn *c, int status)
{
  assert_int_equal(status, 0);
  conn_cork(c);
  for (uint32_t i = 0; i < BURST; i++)
    send_page(c, i);
  conn_uncork(c);            /* one write, far over the socket's room */
  for (uint32_t i = BURST; i < BURST + AFTER; i++)
    send_page(c, i);         /* behind the burst's queued rest */
  uv_timer_start(&later, send_later, 300, 0);
}

static void give_up(uv_timer_t *t)
{
  (void)t;
  timed_out = 1;
  uv_stop(&loop);
}

static void close_one(uv_handle_t *h, void *arg)
{
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void every_frame_arrives_once_in_order(void **state)
{
  (void)state;
  setenv("AURALOG_AUTH", "off", 1);   /* no handshake: the writes alone */
  uv_loop_init(&loop);
  char addr[64], why[256];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", 30000 + (int)(getpid() % 20000));
  if (net_listen(&loop, addr, on_server_msg, on_close, NULL, why, sizeof why) != 0)
    fail_msg("listen on %s: %s", addr, why);
  uv_timer_init(&loop, &deadline);
  uv_timer_init(&loop, &later);
  uv_timer_start(&deadline, give_up, 30000, 0);
  client = net_connect(&loop, addr, on_connect, on_client_msg, on_close, NULL);
  assert_non_null(client);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (timed_out)
    fail_msg("only %u of %u frames arrived in 30 s", expected, TOTAL);
  assert_int_equal(expected, TOTAL);
  assert_int_equal(wrong, 0);
  uv_walk(&loop, close_one, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  unsetenv("AURALOG_AUTH");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(every_frame_arrives_once_in_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
