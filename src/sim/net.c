/*
 * net.c: the simulated network (see net.h).
 *
 * Everything that happens later is a struct nev on the clock: a message
 * to deliver, a late send, a connect's SYN, a connect coming up, an ep
 * going down, a partition sweep, a deferred free. Each nev holds a
 * reference on the ep it names, so an ep outlives every event about it;
 * simnet_free cancels what never ran (sim_cancel_fn).
 *
 * An ep's states: PENDING (the server side of a connect whose SYN has not
 * arrived: the server's core cannot see it yet), CONNECTING (the client
 * side before on_up), OPEN, CLOSED. in_dead marks an ep whose peer
 * crashed: nothing more arrives on it, and its on_down is on the way.
 *
 * Cork. Frames sent while an ep is corked share one arrival time (one
 * write, read in one go). Nothing is buffered: in the simulator no time
 * passes between a cork and its uncork, which happen in one event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net.h"

enum { PENDING, CONNECTING, OPEN, CLOSED };
enum { EV_DELIVER, EV_LATE, EV_SYN, EV_UP, EV_DOWN, EV_REAP, EV_SWEEP, EV_FATAL };

struct frame { uint8_t *buf; size_t len; int body_case; };

struct ep {
  struct simhost *host;       /* the side this ep belongs to */
  uint32_t inc;               /* host's incarnation when the ep was made */
  struct ep *peer;            /* the other side; NULL once it is freed, or
                                 for a connect to an unknown address */
  struct ep *prev, *next;     /* host's eps, oldest first */
  uint64_t id;                /* creation order: deterministic, for traces */
  char peer_addr[SIMNET_ADDR_MAX];
  int state;
  int in_dead;
  int cls;                    /* count_as class: 0, or 1 (IO_COUNT_COORD) */
  int holds;                  /* the core's */
  int refs;                   /* events' */
  unsigned cork;              /* nesting depth */
  uint64_t cork_t;            /* while corked: the batch's arrival, or 0 */
  uint64_t start;             /* connect: when asked */
  uint64_t floor_t;           /* nothing sent here arrives before this */
  uint64_t fifo_t;            /* the latest arrival of a message sent here */
  uint64_t last_t;            /* the same, also counting reordered ones */
  uint64_t bind;              /* the connection's binding (auth.h roles): the
                                 connecting side's id, at both ends */
};

struct simhost {
  struct simnet *net;
  int idx;                    /* registration order: the cut matrix's index */
  char addr[SIMNET_ADDR_MAX];
  char az[SIMNET_AZ_MAX];
  struct simhost_cb cb;
  int up;
  uint32_t inc;
  struct rng rng;             /* io->random's stream */
  struct io io;
  struct ep *head, *tail;
  struct simnet_count count[2];
  char *fatal;
  uint32_t slow_ms;           /* extra delay of everything to and from it */
};

struct nev {
  struct simnet *net;
  int kind;
  struct ep *ep;              /* referenced (DELIVER: the receiver) */
  struct simhost *from;       /* DELIVER: the sender; SYN: the target */
  uint64_t sid;               /* DELIVER: the sender's ep's id, for traces */
  uint32_t inc;               /* FATAL: the incarnation that called */
  struct frame f;
};

struct simnet {
  struct simclock *clock;
  struct rng rng;
  struct simnet_conf conf;
  simnet_trace_fn trace;
  void *trace_arg;
  struct simhost *hosts[SIMNET_MAX_HOSTS];
  int nhosts;
  /* cut[a][b]: 0, or 1 + when the pair was cut (an AZ cut is its pairs'). */
  uint64_t cut[SIMNET_MAX_HOSTS][SIMNET_MAX_HOSTS];
  uint64_t next_ep_id;
  size_t live_eps;
};

/* As clock.c: out of memory aborts (a lost event would fake the run). */
static void *xcalloc(size_t size)
{
  void *p = calloc(1, size);
  if (p == NULL) {
    fprintf(stderr, "sim: out of memory in the network\n");
    abort();
  }
  return p;
}

static uint64_t now(struct simnet *n) { return sim_now(n->clock); }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void trace(struct simnet *n, int kind, const char *from, const char *to,
                  const struct frame *f, uint64_t ep)
{
  if (n->trace == NULL)
    return;
  struct simnet_ev ev = {kind, now(n), from, to, f ? f->body_case : 0,
                         f ? (uint32_t)f->len : 0, ep};
  n->trace(n->trace_arg, &ev);
}

static void trace_ep(struct ep *e, int kind)
{
  trace(e->host->net, kind, e->host->addr, e->peer_addr, NULL, e->id);
}

/* ---- eps and events ------------------------------------------------------- */

static struct ep *ep_new(struct simhost *h, const char *peer_addr, int state)
{
  struct ep *e = xcalloc(sizeof *e);
  e->host = h;
  e->inc = h->inc;
  e->id = ++h->net->next_ep_id;
  snprintf(e->peer_addr, sizeof e->peer_addr, "%s", peer_addr);
  e->state = state;
  e->prev = h->tail;
  *(h->tail ? &h->tail->next : &h->head) = e;
  h->tail = e;
  h->net->live_eps++;
  return e;
}

static void maybe_free(struct ep *e)
{
  if (e->state != CLOSED || e->holds > 0 || e->refs > 0)
    return;
  struct simhost *h = e->host;
  *(e->prev ? &e->prev->next : &h->head) = e->next;
  *(e->next ? &e->next->prev : &h->tail) = e->prev;
  if (e->peer)
    e->peer->peer = NULL;
  h->net->live_eps--;
  free(e);
}

static void unref(struct ep *e) { e->refs--; maybe_free(e); }

/* Is e still its host's current core's, so that callbacks may go to it? */
static int live(const struct ep *e)
{
  return e->host->up && e->inc == e->host->inc;
}

static void fire(void *arg);

static struct nev *schedule(struct simnet *n, uint64_t t, int kind, struct ep *e)
{
  struct nev *v = xcalloc(sizeof *v);
  v->net = n;
  v->kind = kind;
  v->ep = e;
  if (e)
    e->refs++;
  sim_at(n->clock, t, fire, v);
  return v;
}

/* One message's one-way delay. */
static uint64_t delay(struct simnet *n)
{
  const struct simnet_conf *c = &n->conf;
  uint64_t d = c->delay_ms + rng_uniform(&n->rng, (uint64_t)c->jitter_ms + 1);
  if (c->tail_ms > 0 && rng_chance_ppm(&n->rng, c->tail_ppm))
    d += rng_range(&n->rng, 1, c->tail_ms);
  return d;
}

static int cut_now(const struct simnet *n, const struct simhost *a, const struct simhost *b)
{
  return n->cut[a->idx][b->idx] != 0;
}

/* ---- sending and closing -------------------------------------------------- */

/* One frame leaves e (the sender's side): count it, decide its fate, and
 * schedule its arrival. Takes the frame. */
static void transmit(struct ep *e, struct frame f)
{
  struct simhost *h = e->host;
  struct simnet *n = h->net;
  struct ep *to = e->peer;
  h->count[e->cls].bytes_out += f.len;
  h->count[e->cls].msgs_out++;
  trace(n, SIMNET_SEND, h->addr, e->peer_addr, &f, e->id);
  int fate = -1;
  if (to == NULL || to->state == CLOSED)
    fate = SIMNET_LOST;
  else if (cut_now(n, h, to->host))
    fate = SIMNET_CUTDROP;
  else if (rng_chance_ppm(&n->rng, n->conf.drop_ppm))
    fate = SIMNET_DROP;
  if (fate >= 0) {
    trace(n, fate, h->addr, e->peer_addr, &f, e->id);
    free(f.buf);
    if (fate == SIMNET_DROP && n->conf.drop_resets) {
      /* Both ends see the reset, as events of their own (never inside
       * the sender's send). */
      schedule(n, now(n), EV_DOWN, e);
      schedule(n, now(n) + delay(n), EV_DOWN, to);
    }
    return;
  }
  uint64_t t, slow = (uint64_t)h->slow_ms + to->host->slow_ms;
  if (e->cork > 0)                    /* a corked batch arrives together */
    t = e->cork_t ? e->cork_t : (e->cork_t = now(n) + delay(n) + slow);
  else
    t = now(n) + delay(n) + slow;
  t = max64(t, e->floor_t);
  if (!n->conf.reorder)
    t = e->fifo_t = max64(t, e->fifo_t);
  e->last_t = max64(e->last_t, t);
  if (rng_chance_ppm(&n->rng, n->conf.dup_ppm)) {
    /* The copy comes later, after newer messages: a replayed packet. */
    struct nev *d = schedule(n, t + delay(n), EV_DELIVER, to);
    d->from = h;
    d->sid = e->id;
    d->f = f;
    d->f.buf = memcpy(xcalloc(f.len), f.buf, f.len);
    trace(n, SIMNET_DUP, h->addr, e->peer_addr, &f, e->id);
  }
  struct nev *v = schedule(n, t, EV_DELIVER, to);
  v->from = h;
  v->sid = e->id;
  v->f = f;
}

/* Close e. fin: tell the peer (it gets on_down after what e sent before
 * arrives). notify: call e's core's on_down (if it ever saw e). Never
 * frees e here: a REAP event does, after the current one, as libuv's
 * uv_close does for net.c's conns. */
static void close_ep(struct ep *e, int notify, int fin)
{
  if (e->state == CLOSED)
    return;
  struct simnet *n = e->host->net;
  int seen = e->state != PENDING;
  e->state = CLOSED;
  trace_ep(e, SIMNET_CLOSE);
  if (fin && e->peer && e->peer->state != CLOSED)
    schedule(n, max64(now(n) + delay(n), e->last_t), EV_DOWN, e->peer);
  schedule(n, now(n), EV_REAP, e);     /* its reference keeps e for the call */
  if (notify && seen && live(e) && e->host->cb.on_down)
    e->host->cb.on_down(e->host->cb.arg, e);
}

/* A message that fails the checks: an Error back, then close (net.c's
 * conn_fail). */
static void fail(struct ep *e, uint64_t req, uint32_t code, const char *why)
{
  Env env;
  Auralog__Error err;
  wire_error(&env, &err, req, code, why);
  struct frame f = {NULL, 0, env.body_case};
  if ((f.buf = wire_frame(&env, &f.len)) != NULL)
    transmit(e, f);
  close_ep(e, 1, 1);
}

/* ---- events --------------------------------------------------------------- */

static void deliver(struct nev *v)
{
  struct ep *e = v->ep;
  struct simhost *h = e->host;
  struct simnet *n = h->net;
  const char *from = v->from->addr;
  int kind = SIMNET_DELIVER;
  if (e->state != OPEN || e->in_dead || !live(e))
    kind = SIMNET_LOST;
  else if (cut_now(n, v->from, h))
    kind = SIMNET_CUTDROP;
  if (kind != SIMNET_DELIVER) {
    trace(n, kind, from, h->addr, &v->f, v->sid);
    return;
  }
  h->count[e->cls].bytes_in += v->f.len;
  h->count[e->cls].msgs_in++;
  /* The real reader's path (net.c's on_read): wire_parse, then wire_check. */
  Env *env = NULL;
  size_t used = 0, need = 0;
  char why[256] = "truncated frame";
  int rc = wire_parse(v->f.buf, v->f.len, &env, &used, &need, why, sizeof why);
  if (rc == 1 && used != v->f.len) {
    snprintf(why, sizeof why, "frame of %zu bytes holds %zu", v->f.len, used);
    wire_free(env);
    rc = -1;
  }
  int code = rc == 1 ? wire_check(env, why, sizeof why) : ERR_BAD_FRAME;
  if (code != ERR_NONE) {
    trace(n, SIMNET_BAD, from, h->addr, &v->f, v->sid);
    fail(e, rc == 1 ? env->req : 0, (uint32_t)code, why);
  } else {
    trace(n, SIMNET_DELIVER, from, h->addr, &v->f, v->sid);
    h->cb.on_msg(h->cb.arg, e, env);
  }
  if (rc == 1)
    wire_free(env);
}

/* A connect's SYN reaches the target (or does not). */
static void syn(struct nev *v)
{
  struct ep *c = v->ep, *s = c->peer;
  struct simhost *target = v->from;
  struct simnet *n = c->host->net;
  if (c->state == CLOSED || s == NULL || s->state != PENDING || !target->up ||
      cut_now(n, c->host, target)) {
    if (s)
      close_ep(s, 0, 0);
    if (c->state != CLOSED)
      schedule(n, max64(now(n), c->start + n->conf.connect_timeout_ms), EV_DOWN, c);
    return;
  }
  uint64_t t_up = now(n) + delay(n);
  s->state = OPEN;
  s->inc = target->inc;               /* a restart since the connect: the new core */
  s->floor_t = s->last_t = t_up;      /* the client hears nothing before on_up */
  trace_ep(s, SIMNET_ACCEPT);
  schedule(n, t_up, EV_UP, c);
  if (target->cb.on_accept)
    target->cb.on_accept(target->cb.arg, s);
}

static void up(struct ep *c)
{
  if (c->state != CONNECTING || c->in_dead || !live(c))
    return;                           /* closed, or its on_down is coming */
  c->state = OPEN;
  trace_ep(c, SIMNET_UP);
  if (c->host->cb.on_up)
    c->host->cb.on_up(c->host->cb.arg, c);
}

/* Close every ep across a cut that has lasted cut_close_ms: both sides'
 * cores see on_down, as when TCP gives up retransmitting. */
static void sweep(struct simnet *n)
{
  for (int i = 0; i < n->nhosts; i++) {
    for (struct ep *e = n->hosts[i]->head, *next; e; e = next) {
      uint64_t since = e->peer ? n->cut[i][e->peer->host->idx] : 0;
      if (e->state == CLOSED || since == 0 || since - 1 + n->conf.cut_close_ms > now(n)) {
        next = e->next;
        continue;
      }
      e->refs++;                      /* callbacks may release e's last hold */
      close_ep(e, 1, 0);
      if (e->peer)
        close_ep(e->peer, 1, 0);
      next = e->next;                 /* read after the callbacks */
      unref(e);
    }
  }
}

static void fire(void *arg)
{
  struct nev *v = arg;
  struct simhost *h = v->from;
  switch (v->kind) {
  case EV_DELIVER: deliver(v); break;
  case EV_SYN: syn(v); break;
  case EV_UP: up(v->ep); break;
  case EV_DOWN: close_ep(v->ep, 1, 0); break;
  case EV_REAP: break;                /* the unref below is the point */
  case EV_SWEEP: sweep(v->net); break;
  case EV_LATE:
    if (v->ep->state != CLOSED && live(v->ep)) {
      transmit(v->ep, v->f);
      v->f.buf = NULL;
    }
    break;
  case EV_FATAL:
    if (h->up && h->inc == v->inc) {
      if (h->cb.on_fatal)
        h->cb.on_fatal(h->cb.arg, h->fatal);
      else
        simnet_crash(h);
    }
    break;
  }
  free(v->f.buf);
  if (v->ep)
    unref(v->ep);
  free(v);
}

/* ---- struct io ------------------------------------------------------------ */

static int sio_send_late(void *ctx, struct ep *to, const Env *env, uint32_t ms)
{
  struct simhost *h = ctx;
  if (to == NULL || to->host != h || !live(to) ||
      (to->state != OPEN && to->state != CONNECTING))
    return -1;
  struct frame f = {NULL, 0, env->body_case};
  if ((f.buf = wire_frame(env, &f.len)) == NULL)
    return -1;
  if (ms == 0) {
    transmit(to, f);
  } else {
    /* As netio.c: the frame waits, then is sent as if just then; later
     * sends may overtake it. */
    struct nev *v = schedule(h->net, now(h->net) + ms, EV_LATE, to);
    v->f = f;
  }
  return 0;
}

static int sio_send(void *ctx, struct ep *to, const Env *env)
{ return sio_send_late(ctx, to, env, 0); }

static void sio_cork(void *ctx, struct ep *e, int on)
{
  (void)ctx;
  if (on)
    e->cork++;
  else if (e->cork > 0 && --e->cork == 0)
    e->cork_t = 0;
}

static void sio_hold(void *ctx, struct ep *e) { (void)ctx; e->holds++; }

static void sio_release(void *ctx, struct ep *e)
{
  (void)ctx;
  e->holds -= e->holds > 0;
  maybe_free(e);
}

static struct ep *sio_connect(void *ctx, const char *addr)
{
  struct simhost *h = ctx;
  struct simnet *n = h->net;
  if (!h->up)
    return NULL;
  struct ep *c = ep_new(h, addr, CONNECTING);
  c->start = now(n);
  trace_ep(c, SIMNET_CONNECT);
  c->floor_t = c->last_t = now(n) + delay(n);   /* when the SYN lands */
  struct simhost *target = simnet_host(n, addr);
  if (target == NULL) {
    /* No such host: the SYN goes nowhere, and the connect times out. */
    schedule(n, now(n) + n->conf.connect_timeout_ms, EV_DOWN, c);
    return c;
  }
  /* The server's side exists from now (PENDING, invisible to its core) so
   * that what the client sends before the SYN lands has somewhere to go. */
  struct ep *s = ep_new(target, h->addr, PENDING);
  s->peer = c;
  c->peer = s;
  c->bind = s->bind = c->id;
  schedule(n, c->floor_t, EV_SYN, c)->from = target;
  return c;
}

/* A connection's binding: the same at both ends and at no other
 * connection of this run, as the real handshake's (auth.h). */
static void sio_binding(void *ctx, struct ep *e, uint8_t out[32])
{
  (void)ctx;
  for (int i = 0; i < 8; i++)
    out[i] = (uint8_t)(e->bind >> (8 * i));
}

static void sio_close(void *ctx, struct ep *e)
{
  struct simhost *h = ctx;
  if (e == NULL || e->host != h || e->inc != h->inc)
    return;
  e->refs++;                          /* on_down may release the last hold */
  close_ep(e, 1, 1);
  unref(e);
}

static void sio_count_as(void *ctx, struct ep *e, int cls)
{ (void)ctx; e->cls = cls == IO_COUNT_COORD; }

static void sio_fatal(void *ctx, const char *why)
{
  struct simhost *h = ctx;
  if (h->fatal == NULL)
    h->fatal = strdup(why ? why : "fatal");
  trace(h->net, SIMNET_FATAL, h->addr, "", NULL, 0);
  /* Not now: the core is on the stack. */
  struct nev *v = schedule(h->net, now(h->net), EV_FATAL, NULL);
  v->from = h;
  v->inc = h->inc;
}

static uint64_t sio_now(void *ctx) { return now(((struct simhost *)ctx)->net); }
static uint64_t sio_random(void *ctx) { return rng_u64(&((struct simhost *)ctx)->rng); }

/* ---- the network ---------------------------------------------------------- */

void simnet_conf_default(struct simnet_conf *c)
{
  *c = (struct simnet_conf){
    .delay_ms = SIMNET_DELAY_MS, .jitter_ms = SIMNET_JITTER_MS,
    .tail_ppm = SIMNET_TAIL_PPM, .tail_ms = SIMNET_TAIL_MS,
    .connect_timeout_ms = SIMNET_CONNECT_TIMEOUT_MS,
    .crash_detect_ms = SIMNET_CRASH_DETECT_MS, .cut_close_ms = SIMNET_CUT_CLOSE_MS,
  };
}

struct simnet *simnet_new(struct simclock *clock, struct rng *rng)
{
  struct simnet *n = xcalloc(sizeof *n);
  n->clock = clock;
  rng_fork(&n->rng, rng);
  simnet_conf_default(&n->conf);
  return n;
}

static int drop_nev(void *arg, void *net)
{
  struct nev *v = arg;
  if (v->net != net)
    return 0;                         /* another net's on the same clock */
  free(v->f.buf);
  free(v);
  return 1;
}

void simnet_free(struct simnet *n)
{
  if (n == NULL)
    return;
  sim_cancel_fn(n->clock, fire, drop_nev, n);
  for (int i = 0; i < n->nhosts; i++) {
    struct simhost *h = n->hosts[i];
    for (struct ep *e = h->head, *next; e; e = next) {
      next = e->next;
      free(e);
    }
    free(h->fatal);
    free(h);
  }
  free(n);
}

struct simnet_conf *simnet_conf(struct simnet *n) { return &n->conf; }
void simnet_trace(struct simnet *n, simnet_trace_fn fn, void *a)
{ n->trace = fn; n->trace_arg = a; }

struct simhost *simnet_add(struct simnet *n, const char *addr, const char *az,
                           const struct simhost_cb *cb)
{
  if (n->nhosts == SIMNET_MAX_HOSTS || strlen(addr) >= SIMNET_ADDR_MAX ||
      strlen(az) >= SIMNET_AZ_MAX || simnet_host(n, addr) != NULL)
    return NULL;
  struct simhost *h = xcalloc(sizeof *h);
  h->net = n;
  h->idx = n->nhosts;
  strcpy(h->addr, addr);
  strcpy(h->az, az);
  h->cb = *cb;
  h->up = 1;
  h->inc = 1;
  rng_fork(&h->rng, &n->rng);
  h->io = (struct io){
    .ctx = h, .send = sio_send, .send_late = sio_send_late, .cork = sio_cork,
    .hold = sio_hold, .release = sio_release, .connect = sio_connect, .close = sio_close,
    .count_as = sio_count_as, .fatal = sio_fatal, .now_ms = sio_now, .random = sio_random,
    .binding = sio_binding,
  };
  n->hosts[n->nhosts++] = h;
  return h;
}

struct simhost *simnet_host(struct simnet *n, const char *addr)
{
  for (int i = 0; i < n->nhosts; i++)
    if (strcmp(n->hosts[i]->addr, addr) == 0)
      return n->hosts[i];
  return NULL;
}

size_t simnet_nhosts(const struct simnet *n) { return (size_t)n->nhosts; }
struct simhost *simnet_host_at(struct simnet *n, size_t i)
{ return i < (size_t)n->nhosts ? n->hosts[i] : NULL; }
const struct io *simhost_io(struct simhost *h) { return &h->io; }
const char *simhost_addr(const struct simhost *h) { return h->addr; }
const char *simhost_az(const struct simhost *h) { return h->az; }
int simhost_up(const struct simhost *h) { return h->up; }
uint32_t simhost_incarnation(const struct simhost *h) { return h->inc; }
const char *simhost_fatal(const struct simhost *h) { return h->fatal; }
const struct simnet_count *simhost_count(const struct simhost *h, int cls)
{ return &h->count[cls != 0]; }

void simnet_crash(struct simhost *h)
{
  struct simnet *n = h->net;
  if (!h->up)
    return;
  h->up = 0;
  trace(n, SIMNET_CRASH, h->addr, "", NULL, 0);
  /* No callbacks to the dead core, so the list cannot change under us
   * (frees happen in REAP events, later). */
  for (struct ep *e = h->head; e; e = e->next) {
    if (e->state == CLOSED || e->state == PENDING)
      continue;                       /* a PENDING one: its SYN finds h down */
    close_ep(e, 0, 0);
    struct ep *p = e->peer;
    if (p && p->state != CLOSED) {
      p->in_dead = 1;                 /* what was in flight from h is gone */
      schedule(n, now(n) + n->conf.crash_detect_ms, EV_DOWN, p);
    }
  }
}

void simnet_restart(struct simhost *h, const struct simhost_cb *cb)
{
  simnet_crash(h);
  h->up = 1;
  h->inc++;
  h->cb = *cb;
  free(h->fatal);
  h->fatal = NULL;
  trace(h->net, SIMNET_RESTART, h->addr, "", NULL, 0);
}

/* ---- partitions ----------------------------------------------------------- */

int simnet_is_cut(const struct simhost *a, const struct simhost *b)
{ return cut_now(a->net, a, b); }

/* Cut (keeping the time of a cut already there) or heal the pair a, b. */
static void set_cut(struct simnet *n, const struct simhost *a,
                    const struct simhost *b, int on)
{
  uint64_t *c = &n->cut[a->idx][b->idx];
  if (a != b)
    *c = n->cut[b->idx][a->idx] = !on ? 0 : *c ? *c : now(n) + 1;
}

/* Every pair across az's border. */
static void set_cut_az(struct simnet *n, const char *az, int on)
{
  for (int i = 0; i < n->nhosts; i++)
    for (int j = 0; j < n->nhosts; j++)
      if (strcmp(n->hosts[i]->az, az) == 0 && strcmp(n->hosts[j]->az, az) != 0)
        set_cut(n, n->hosts[i], n->hosts[j], on);
}

void simnet_cut(struct simhost *a, struct simhost *b)
{
  struct simnet *n = a->net;
  set_cut(n, a, b, 1);
  trace(n, SIMNET_CUT, a->addr, b->addr, NULL, 0);
  schedule(n, now(n) + n->conf.cut_close_ms, EV_SWEEP, NULL);
}

void simnet_heal(struct simhost *a, struct simhost *b)
{
  set_cut(a->net, a, b, 0);
  trace(a->net, SIMNET_HEAL, a->addr, b->addr, NULL, 0);
}

int simnet_cut_az(struct simnet *n, const char *az)
{
  if (az[0] == '\0')
    return -1;
  set_cut_az(n, az, 1);
  trace(n, SIMNET_CUT, az, "*", NULL, 0);
  schedule(n, now(n) + n->conf.cut_close_ms, EV_SWEEP, NULL);
  return 0;
}

void simnet_heal_az(struct simnet *n, const char *az)
{
  set_cut_az(n, az, 0);
  trace(n, SIMNET_HEAL, az, "*", NULL, 0);
}

void simnet_slow(struct simhost *h, uint32_t ms)
{
  h->slow_ms = ms;
}

void simnet_heal_all(struct simnet *n)
{
  for (struct simhost **hp = n->hosts; hp < n->hosts + n->nhosts; hp++)
    (*hp)->slow_ms = 0;
  memset(n->cut, 0, sizeof n->cut);
  trace(n, SIMNET_HEAL, "*", "*", NULL, 0);
}

const char *simnet_ep_peer(const struct ep *e) { return e->peer_addr; }
uint64_t simnet_ep_id(const struct ep *e) { return e->id; }
int simnet_ep_open(const struct ep *e) { return e->state == OPEN && !e->in_dead; }
size_t simnet_live_eps(const struct simnet *n) { return n->live_eps; }
