/*
 * test_simnet.c: the simulator's PRNG, virtual clock and network
 * (src/sim/rng.c, clock.c, net.c), with fake hosts and no cores.
 *
 * A fake host records what its callbacks saw: eps that came up, went down
 * or were accepted, and the req of every message in arrival order. The
 * messages are small Error envelopes (wire_error) whose req numbers them.
 *
 * Checks: the clock runs events in (time, scheduling order) and cancels by
 * handle; the PRNG is deterministic, bounded and forks apart; an ep is
 * FIFO (and is not with reorder on); a seed replays the same trace and
 * another seed does not; drop and duplicate rates are near what was
 * asked; a partition drops and heals, and a long one closes eps; a crash
 * closes eps on both sides, loses what was in flight, and a restart
 * works; a held ep lives until released; a connect to a down, cut or
 * unknown host fails; a message that fails wire_check closes its ep;
 * send_late, cork and io->fatal behave as netio.c's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/clock.h"
#include "sim/net.h"
#include "sim/rng.h"

#define MAXLOG 20000

struct fake {
  struct simhost *h;
  const struct io *io;
  struct ep *up[16], *down[16], *acc[16];
  int nup, ndown, nacc;
  uint64_t req[MAXLOG];
  uint64_t at[MAXLOG];
  int body[MAXLOG];
  int nmsg;
  struct ep *last_from;       /* the ep of the last message */
  int reply;                  /* answer each message with req + 1000000 */
};

static void f_msg(void *arg, struct ep *e, const Env *env)
{
  struct fake *f = arg;
  if (f->nmsg < MAXLOG) {
    f->req[f->nmsg] = env->req;
    f->at[f->nmsg] = io_now(f->io);
    f->body[f->nmsg] = env->body_case;
  }
  f->nmsg++;
  f->last_from = e;
  if (f->reply)
    io_error(f->io, e, env->req + 1000000, ERR_NONE, "ack");
}
static void f_up(void *arg, struct ep *e) { struct fake *f = arg; f->up[f->nup++ % 16] = e; }
static void f_down(void *arg, struct ep *e) { struct fake *f = arg; f->down[f->ndown++ % 16] = e; }
static void f_acc(void *arg, struct ep *e) { struct fake *f = arg; f->acc[f->nacc++ % 16] = e; }

static struct simhost_cb cb_of(struct fake *f)
{
  return (struct simhost_cb){f, f_msg, f_up, f_down, f_acc, NULL};
}

/* A network of three fake hosts: a ("a1:1", AZ a), b ("b1:1", AZ b) and
 * e (the engine, "e:1", no AZ). */
struct world {
  struct simclock *c;
  struct rng rng;
  struct simnet *n;
  struct fake *a, *b, *e;
  uint64_t hash;              /* FNV-1a over the trace */
  int kinds[SIMNET_NKINDS];
};

static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    *h = (*h ^ b[i]) * 0x100000001b3ull;
}

static void on_trace(void *arg, const struct simnet_ev *ev)
{
  struct world *w = arg;
  w->kinds[ev->kind]++;
  hash_bytes(&w->hash, &ev->kind, sizeof ev->kind);
  hash_bytes(&w->hash, &ev->t, sizeof ev->t);
  hash_bytes(&w->hash, ev->from, strlen(ev->from));
  hash_bytes(&w->hash, ev->to, strlen(ev->to));
  hash_bytes(&w->hash, &ev->body_case, sizeof ev->body_case);
  hash_bytes(&w->hash, &ev->bytes, sizeof ev->bytes);
  hash_bytes(&w->hash, &ev->ep, sizeof ev->ep);
}

static struct world *world_new(uint64_t seed)
{
  struct world *w = calloc(1, sizeof *w);
  w->c = simclock_new();
  rng_seed(&w->rng, seed);
  w->n = simnet_new(w->c, &w->rng);
  w->hash = 0xcbf29ce484222325ull;
  simnet_trace(w->n, on_trace, w);
  struct fake **fs[3] = {&w->a, &w->b, &w->e};
  const char *addr[3] = {"a1:1", "b1:1", "e:1"}, *az[3] = {"a", "b", ""};
  for (int i = 0; i < 3; i++) {
    struct fake *f = *fs[i] = calloc(1, sizeof *f);
    struct simhost_cb cb = cb_of(f);
    f->h = simnet_add(w->n, addr[i], az[i], &cb);
    assert_non_null(f->h);
    f->io = simhost_io(f->h);
  }
  return w;
}

static void world_free(struct world *w)
{
  simnet_free(w->n);
  simclock_free(w->c);
  free(w->a);
  free(w->b);
  free(w->e);
  free(w);
}

static void run(struct world *w, uint64_t ms)
{
  sim_run_until(w->c, sim_now(w->c) + ms);
}

static int send_req(struct fake *f, struct ep *e, uint64_t req)
{
  Env env;
  Auralog__Error err;
  wire_error(&env, &err, req, ERR_NONE, "x");
  return io_send(f->io, e, &env);
}

/* from connects to to's address; returns the client's ep, up. */
static struct ep *link_up(struct world *w, struct fake *from, struct fake *to)
{
  int nup = from->nup, nacc = to->nacc;
  struct ep *e = from->io->connect(from->io->ctx, simhost_addr(to->h));
  assert_non_null(e);
  run(w, 300);                       /* a SYN and its answer, tails included */
  assert_int_equal(from->nup, nup + 1);
  assert_ptr_equal(from->up[nup % 16], e);
  assert_int_equal(to->nacc, nacc + 1);
  assert_true(simnet_ep_open(e));
  return e;
}

/* ---- clock and rng -------------------------------------------------------- */

static int order[16], norder;
static void note(void *arg) { order[norder++] = (int)(intptr_t)arg; }

static void test_clock_order_and_cancel(void **state)
{
  (void)state;
  struct simclock *c = simclock_new();
  norder = 0;
  sim_at(c, 10, note, (void *)1);
  sim_at(c, 5, note, (void *)2);
  uint64_t h3 = sim_at(c, 10, note, (void *)3);
  sim_at(c, 10, note, (void *)4);
  sim_at(c, 7, note, (void *)5);
  assert_int_equal(sim_cancel(c, h3), 1);
  assert_int_equal(sim_cancel(c, h3), 0);        /* twice: a no-op */
  assert_int_equal(sim_pending(c), 4);
  uint64_t t;
  assert_true(sim_next(c, &t));
  assert_int_equal(t, 5);
  assert_int_equal(sim_run_until(c, 9), 2);
  assert_int_equal(sim_now(c), 9);
  while (sim_step(c))
    ;
  int want[] = {2, 5, 1, 4};                     /* ties: scheduling order */
  assert_int_equal(norder, 4);
  assert_memory_equal(order, want, sizeof want);
  assert_int_equal(sim_now(c), 10);
  /* A stale handle whose slot has been reused cancels nothing. */
  uint64_t h = sim_after(c, 1, note, (void *)6);
  assert_true(sim_step(c));
  uint64_t h2 = sim_after(c, 1, note, (void *)7);
  assert_int_equal(sim_cancel(c, h), 0);
  assert_int_equal(sim_cancel(c, h2), 1);
  assert_int_equal(sim_step(c), 0);
  /* The past is now. */
  sim_at(c, 3, note, (void *)8);
  assert_true(sim_next(c, &t));
  assert_int_equal(t, sim_now(c));
  simclock_free(c);
}

static void test_clock_heap_many(void **state)
{
  (void)state;
  struct simclock *c = simclock_new();
  struct rng r;
  rng_seed(&r, 7);
  uint64_t hs[2000];
  for (int i = 0; i < 2000; i++)
    hs[i] = sim_at(c, rng_uniform(&r, 500), note, (void *)0);
  for (int i = 0; i < 2000; i += 3)
    assert_int_equal(sim_cancel(c, hs[i]), 1);
  uint64_t last = 0;
  size_t n = 0;
  norder = 0;
  uint64_t t;
  while (sim_next(c, &t)) {
    assert_true(t >= last);
    last = t;
    norder = 0;
    sim_step(c);
    n++;
  }
  assert_int_equal(n, 2000 - 667);
  simclock_free(c);
}

static void test_rng(void **state)
{
  (void)state;
  struct rng a, b, c, k1, k2;
  rng_seed(&a, 42);
  rng_seed(&b, 42);
  rng_seed(&c, 43);
  int same = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = rng_u64(&a);
    assert_int_equal(x, rng_u64(&b));
    same += x == rng_u64(&c);
  }
  assert_int_equal(same, 0);
  rng_fork(&k1, &a);
  rng_fork(&k2, &a);
  assert_true(rng_u64(&k1) != rng_u64(&k2));
  int hits = 0, hist[10] = {0};
  for (int i = 0; i < 100000; i++) {
    uint64_t v = rng_uniform(&a, 10);
    assert_true(v < 10);
    hist[v]++;
    uint64_t r = rng_range(&a, 5, 7);
    assert_true(r >= 5 && r <= 7);
    hits += rng_chance_ppm(&a, 250000);
    double d = rng_double(&a);
    assert_true(d >= 0 && d < 1);
  }
  for (int i = 0; i < 10; i++)
    assert_true(hist[i] > 9000 && hist[i] < 11000);
  assert_true(hits > 24000 && hits < 26000);
  assert_false(rng_chance(&a, 0));
  assert_true(rng_chance(&a, 1));
}

/* ---- the network ---------------------------------------------------------- */

static void check_fifo(int reorder)
{
  struct world *w = world_new(1);
  simnet_conf(w->n)->jitter_ms = 40;   /* far more than the gap between sends */
  simnet_conf(w->n)->reorder = reorder;
  struct ep *e = link_up(w, w->a, w->b);
  for (int i = 0; i < 500; i++) {
    assert_int_equal(send_req(w->a, e, (uint64_t)i), 0);
    if (i % 10 == 0)
      run(w, 1);
  }
  run(w, 500);
  assert_int_equal(w->b->nmsg, 500);
  int inversions = 0;
  for (int i = 1; i < 500; i++)
    inversions += w->b->req[i] < w->b->req[i - 1];
  if (reorder)
    assert_true(inversions > 0);
  else
    assert_int_equal(inversions, 0);
  const struct simnet_count *ca = simhost_count(w->a->h, 0), *cb = simhost_count(w->b->h, 0);
  assert_int_equal(ca->msgs_out, 500);
  assert_int_equal(cb->msgs_in, 500);
  assert_int_equal(ca->bytes_out, cb->bytes_in);
  world_free(w);
}

static void test_fifo_per_ep(void **state)
{
  (void)state;
  check_fifo(0);
  check_fifo(1);
}

/* A busy run with every fault: its trace's hash. */
static uint64_t scenario(uint64_t seed)
{
  struct world *w = world_new(seed);
  struct simnet_conf *cf = simnet_conf(w->n);
  cf->drop_ppm = 20000;
  cf->dup_ppm = 20000;
  cf->tail_ppm = 50000;
  w->b->reply = 1;
  struct ep *e = link_up(w, w->e, w->b);
  struct ep *e2 = link_up(w, w->a, w->b);
  uint64_t rnd = 0;
  for (int i = 0; i < 300; i++) {
    send_req(w->e, e, (uint64_t)i);
    send_req(w->a, e2, (uint64_t)i);
    rnd ^= w->e->io->random(w->e->io->ctx);
    if (i == 100)
      simnet_cut(w->a->h, w->b->h);
    if (i == 150)
      simnet_heal(w->a->h, w->b->h);
    run(w, 2);
  }
  simnet_crash(w->b->h);
  run(w, 1000);
  struct simhost_cb cb = cb_of(w->b);
  simnet_restart(w->b->h, &cb);
  link_up(w, w->e, w->b);
  run(w, 100);
  hash_bytes(&w->hash, &rnd, sizeof rnd);
  uint64_t h = w->hash;
  world_free(w);
  return h;
}

static void test_determinism(void **state)
{
  (void)state;
  uint64_t h1 = scenario(1), h1b = scenario(1), h2 = scenario(2);
  assert_int_equal(h1, h1b);
  assert_true(h1 != h2);
}

static void test_drop_and_dup_rates(void **state)
{
  (void)state;
  struct world *w = world_new(5);
  simnet_conf(w->n)->drop_ppm = 100000;   /* 10% */
  simnet_conf(w->n)->dup_ppm = 50000;     /* 5% of the rest */
  struct ep *e = link_up(w, w->a, w->b);
  for (int i = 0; i < 10000; i++) {
    send_req(w->a, e, (uint64_t)i);
    if (i % 50 == 0)
      run(w, 1);
  }
  run(w, 1000);
  int drops = w->kinds[SIMNET_DROP], dups = w->kinds[SIMNET_DUP];
  assert_true(drops > 850 && drops < 1150);
  assert_true(dups > 9000 / 20 - 100 && dups < 9000 / 20 + 100);
  assert_int_equal(w->b->nmsg, 10000 - drops + dups);
  world_free(w);
}

static void test_partition(void **state)
{
  (void)state;
  struct world *w = world_new(3);
  struct ep *e = link_up(w, w->a, w->b);
  simnet_cut(w->a->h, w->b->h);
  assert_true(simnet_is_cut(w->b->h, w->a->h));
  for (int i = 0; i < 10; i++)
    send_req(w->a, e, (uint64_t)i);
  run(w, 100);
  assert_int_equal(w->b->nmsg, 0);
  assert_int_equal(w->kinds[SIMNET_CUTDROP], 10);
  /* A connect across the cut fails; one to the engine does not. */
  struct ep *c = w->a->io->connect(w->a->io->ctx, "b1:1");
  link_up(w, w->a, w->e);
  run(w, SIMNET_CONNECT_TIMEOUT_MS);
  assert_int_equal(w->a->ndown, 1);
  assert_ptr_equal(w->a->down[0], c);
  /* Healed before cut_close_ms: the ep still works. */
  simnet_heal(w->a->h, w->b->h);
  send_req(w->a, e, 99);
  run(w, 100);
  assert_int_equal(w->b->nmsg, 1);
  assert_int_equal(w->b->req[0], 99);
  assert_true(simnet_ep_open(e));
  /* A cut that lasts closes both sides. */
  w->a->io->hold(w->a->io->ctx, e);             /* to look at it after on_down */
  simnet_cut_az(w->n, "b");
  assert_false(simnet_is_cut(w->a->h, w->a->h));
  assert_true(simnet_is_cut(w->e->h, w->b->h));
  run(w, SIMNET_CUT_CLOSE_MS + 10);
  assert_int_equal(w->a->ndown, 2);
  assert_ptr_equal(w->a->down[1], e);
  assert_int_equal(w->b->ndown, 1);
  assert_ptr_equal(w->b->down[0], w->b->acc[0]);
  assert_int_equal(send_req(w->a, e, 100), -1);
  w->a->io->release(w->a->io->ctx, e);
  simnet_heal_az(w->n, "b");
  assert_false(simnet_is_cut(w->e->h, w->b->h));
  link_up(w, w->a, w->b);
  world_free(w);
}

static void test_crash_and_restart(void **state)
{
  (void)state;
  struct world *w = world_new(4);
  struct ep *e = link_up(w, w->a, w->b);
  struct ep *s = w->b->acc[0];
  w->b->io->hold(w->b->io->ctx, s);             /* to try it after the crash */
  /* In flight both ways when b crashes: all lost. */
  send_req(w->a, e, 1);
  send_req(w->b, s, 2);
  simnet_crash(w->b->h);
  assert_false(simhost_up(w->b->h));
  assert_int_equal(send_req(w->b, s, 3), -1);
  assert_null(w->b->io->connect(w->b->io->ctx, "a1:1"));
  run(w, SIMNET_CRASH_DETECT_MS - 10);
  assert_int_equal(w->a->ndown, 0);             /* not noticed yet */
  assert_false(simnet_ep_open(e));
  assert_int_equal(send_req(w->a, e, 4), 0);    /* as TCP: queued, lost */
  run(w, 20);
  assert_int_equal(w->a->ndown, 1);
  assert_ptr_equal(w->a->down[0], e);
  assert_int_equal(w->a->nmsg, 0);
  assert_int_equal(w->b->nmsg, 0);
  assert_int_equal(w->b->ndown, 0);             /* the dead get no calls */
  /* A connect to the crashed host fails. */
  struct ep *c = w->a->io->connect(w->a->io->ctx, "b1:1");
  run(w, SIMNET_CONNECT_TIMEOUT_MS + 10);
  assert_int_equal(w->a->ndown, 2);
  assert_ptr_equal(w->a->down[1], c);
  /* Restarted with a new core: connects work, old eps stay dead. */
  struct fake *nb = calloc(1, sizeof *nb);
  nb->io = w->b->io;
  nb->h = w->b->h;
  struct simhost_cb cb = cb_of(nb);
  simnet_restart(w->b->h, &cb);
  assert_int_equal(simhost_incarnation(w->b->h), 2);
  struct fake *old = w->b;
  w->b = nb;
  struct ep *e2 = link_up(w, w->a, w->b);
  send_req(w->a, e2, 5);
  run(w, 50);
  assert_int_equal(nb->nmsg, 1);
  assert_int_equal(nb->req[0], 5);
  assert_int_equal(old->nmsg, 0);
  assert_int_equal(send_req(nb, s, 6), -1);
  w->b->io->release(w->b->io->ctx, s);
  /* Only e2's two sides are left. */
  run(w, 10);
  assert_int_equal(simnet_live_eps(w->n), 2);
  free(old);
  world_free(w);
}

static void test_hold_outlives_close(void **state)
{
  (void)state;
  struct world *w = world_new(6);
  struct ep *e = link_up(w, w->a, w->b);
  struct ep *s = w->b->acc[0];
  w->b->io->hold(w->b->io->ctx, s);
  w->b->io->hold(w->b->io->ctx, s);
  w->a->io->close(w->a->io->ctx, e);           /* on_down before it returns */
  assert_int_equal(w->a->ndown, 1);
  run(w, 50);
  assert_int_equal(w->b->ndown, 1);
  assert_ptr_equal(w->b->down[0], s);
  assert_int_equal(simnet_live_eps(w->n), 1);   /* a's freed; b's held */
  assert_int_equal(send_req(w->b, s, 1), -1);
  assert_string_equal(simnet_ep_peer(s), "a1:1");
  w->b->io->release(w->b->io->ctx, s);
  assert_int_equal(simnet_live_eps(w->n), 1);
  /* Held across a crash and a restart, released by the old core. */
  struct ep *e2 = link_up(w, w->a, w->b);
  struct ep *s2 = w->b->acc[1];
  w->b->io->hold(w->b->io->ctx, s2);
  simnet_crash(w->b->h);
  struct simhost_cb cb = cb_of(w->b);
  simnet_restart(w->b->h, &cb);
  run(w, SIMNET_CRASH_DETECT_MS + 10);
  assert_ptr_equal(w->a->down[1], e2);
  assert_int_equal(simnet_live_eps(w->n), 2);
  w->b->io->release(w->b->io->ctx, s2);
  w->b->io->release(w->b->io->ctx, s);
  assert_int_equal(simnet_live_eps(w->n), 0);
  /* One still held at the end is freed with the net (ASan: no leak). */
  struct ep *e3 = link_up(w, w->a, w->b);
  w->a->io->hold(w->a->io->ctx, e3);
  world_free(w);
}

static void test_connect_failures(void **state)
{
  (void)state;
  struct world *w = world_new(8);
  struct ep *c = w->a->io->connect(w->a->io->ctx, "nowhere:1");
  assert_non_null(c);
  assert_int_equal(send_req(w->a, c, 1), 0);
  run(w, SIMNET_CONNECT_TIMEOUT_MS - 1);
  assert_int_equal(w->a->ndown, 0);
  run(w, 2);
  assert_int_equal(w->a->ndown, 1);
  assert_int_equal(w->a->nup, 0);
  /* A client that closes before its SYN lands leaves nothing behind. */
  struct ep *c2 = w->a->io->connect(w->a->io->ctx, "b1:1");
  w->a->io->close(w->a->io->ctx, c2);
  assert_int_equal(w->a->ndown, 2);
  run(w, 100);
  assert_int_equal(w->b->nacc, 0);
  assert_int_equal(simnet_live_eps(w->n), 0);
  world_free(w);
}

static void test_send_before_up(void **state)
{
  (void)state;
  struct world *w = world_new(11);
  struct ep *c = w->e->io->connect(w->e->io->ctx, "a1:1");
  for (int i = 0; i < 5; i++)
    assert_int_equal(send_req(w->e, c, (uint64_t)i), 0);
  assert_int_equal(w->a->nacc, 0);
  run(w, 300);
  assert_int_equal(w->e->nup, 1);
  assert_int_equal(w->a->nmsg, 5);
  for (int i = 0; i < 5; i++)
    assert_int_equal(w->a->req[i], (uint64_t)i);
  assert_ptr_equal(w->a->last_from, w->a->acc[0]);
  assert_int_equal(io_now(w->a->io), sim_now(w->c));
  world_free(w);
}

static void test_bad_message_closes(void **state)
{
  (void)state;
  struct world *w = world_new(9);
  struct ep *e = link_up(w, w->a, w->b);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Heartbeat hb = AURALOG__HEARTBEAT__INIT;
  hb.id = "not a name!";
  env.req = 77;
  env.body_case = AURALOG__ENVELOPE__BODY_HEARTBEAT;
  env.heartbeat = &hb;
  assert_int_equal(io_send(w->a->io, e, &env), 0);
  run(w, 100);
  assert_int_equal(w->kinds[SIMNET_BAD], 1);
  assert_int_equal(w->b->nmsg, 0);
  assert_int_equal(w->b->ndown, 1);              /* b closed it */
  assert_int_equal(w->a->nmsg, 1);               /* a got the Error first */
  assert_int_equal(w->a->body[0], AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(w->a->req[0], 77);
  assert_int_equal(w->a->ndown, 1);
  world_free(w);
}

static void test_late_cork_fatal(void **state)
{
  (void)state;
  struct world *w = world_new(10);
  struct ep *e = link_up(w, w->a, w->b);
  Env env;
  Auralog__Error err;
  wire_error(&env, &err, 1, ERR_NONE, "late");
  assert_int_equal(w->a->io->send_late(w->a->io->ctx, e, &env, 200), 0);
  send_req(w->a, e, 2);
  io_cork(w->a->io, e, 1);
  for (int i = 3; i < 8; i++)
    send_req(w->a, e, (uint64_t)i);
  io_cork(w->a->io, e, 0);
  run(w, 100);
  assert_int_equal(w->b->nmsg, 6);               /* the late one overtaken */
  for (int i = 2; i < 6; i++)
    assert_int_equal(w->b->at[i], w->b->at[1]);  /* one write, one arrival */
  run(w, 200);
  assert_int_equal(w->b->nmsg, 7);
  assert_int_equal(w->b->req[6], 1);
  assert_true(w->b->at[6] >= 200);
  /* count_as: the coordinator's frames apart. */
  w->a->io->count_as(w->a->io->ctx, e, IO_COUNT_COORD);
  send_req(w->a, e, 8);
  assert_int_equal(simhost_count(w->a->h, 1)->msgs_out, 1);
  /* fatal: the host goes down after the call, not in it. */
  w->a->io->fatal(w->a->io->ctx, "bad config");
  assert_true(simhost_up(w->a->h));
  run(w, 1);
  assert_false(simhost_up(w->a->h));
  assert_string_equal(simhost_fatal(w->a->h), "bad config");
  run(w, SIMNET_CRASH_DETECT_MS + 10);
  assert_int_equal(w->b->ndown, 1);
  world_free(w);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_clock_order_and_cancel),
    cmocka_unit_test(test_clock_heap_many),
    cmocka_unit_test(test_rng),
    cmocka_unit_test(test_fifo_per_ep),
    cmocka_unit_test(test_determinism),
    cmocka_unit_test(test_drop_and_dup_rates),
    cmocka_unit_test(test_partition),
    cmocka_unit_test(test_crash_and_restart),
    cmocka_unit_test(test_hold_outlives_close),
    cmocka_unit_test(test_connect_failures),
    cmocka_unit_test(test_send_before_up),
    cmocka_unit_test(test_bad_message_closes),
    cmocka_unit_test(test_late_cork_fatal),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
