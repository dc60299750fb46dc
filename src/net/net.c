/*
 * net.c: framed connections over libuv TCP (see net.h).
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "net/keyfile.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "net/farena.h"
#include "net/net.h"
#include "param.h"

#define READ_CHUNK (64 << 10)
#define AUTH_BUF   (4 * AUTH_FRAME_MAX)

enum { AUTH_NONE, AUTH_CHALLENGED, AUTH_WAIT_CHALLENGE, AUTH_WAIT_WELCOME, AUTH_DONE };

struct listener {
  uv_tcp_t tcp;
  char addr[136];            /* as given to net_listen: the challenge names it */
  conn_msg_fn on_msg;
  conn_close_fn on_close;
  void *data;
  struct net_count *count;
  struct conn *head, *tail;  /* accepted conns, oldest first */
  unsigned nconns;
  size_t buffered;           /* bytes charged by conns (beyond READ_CHUNK each) */
};

static void conn_freed(uv_handle_t *h)
{
  struct conn *c = h->data;
  c->connected = 0;
  conn_unref(c);            /* the reference the open handle held */
}

void conn_ref(struct conn *c)
{
  c->refs++;
}

void conn_unref(struct conn *c)
{
  if (--c->refs == 0) {
    for (unsigned i = 0; i < c->npend; i++)
      free(c->pend[i].base);  /* corked frames that never went out */
    free(c->pend);
    free(c->in);
    sodium_memzero(&c->sess, sizeof c->sess);
    free(c);
  }
}

/* The buffer of a conn, resized to cap bytes, charged to its listener's
 * budget. Returns 0, or -1 (nothing changed) if that would exceed it. */
static int set_cap(struct conn *c, size_t cap)
{
  size_t charge = cap > READ_CHUNK ? cap - READ_CHUNK : 0;
  if (c->lis && charge > c->charged &&
      c->lis->buffered - c->charged + charge > BUFFER_BUDGET)
    return -1;
  uint8_t *in = cap ? realloc(c->in, cap) : (free(c->in), NULL);
  if (cap && in == NULL)
    return -1;
  c->in = in;
  c->cap = cap;
  if (c->lis)
    c->lis->buffered = c->lis->buffered - c->charged + charge;
  c->charged = charge;
  return 0;
}

/* A closing conn leaves its listener's list and budget. */
static void detach(struct conn *c)
{
  struct listener *l = c->lis;
  if (l == NULL)
    return;
  l->buffered -= c->charged;
  c->charged = 0;
  if (c->lprev)
    c->lprev->lnext = c->lnext;
  else
    l->head = c->lnext;
  if (c->lnext)
    c->lnext->lprev = c->lprev;
  else
    l->tail = c->lprev;
  l->nconns--;
  c->lis = NULL;
}

void conn_close(struct conn *c)
{
  if (c->closing)
    return;
  c->closing = 1;
  detach(c);
  if (c->on_close)
    c->on_close(c);
  uv_close((uv_handle_t *)&c->timer, conn_freed);
  uv_close((uv_handle_t *)&c->tcp, conn_freed);
}

static void sweep(uv_timer_t *t);

static struct conn *conn_new(uv_loop_t *loop, conn_msg_fn on_msg,
                             conn_close_fn on_close, void *data)
{
  struct conn *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  uv_tcp_init(loop, &c->tcp);
  uv_timer_init(loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->on_msg = on_msg;
  c->on_close = on_close;
  c->data = data;
  c->refs = 2;              /* one per open handle */
  c->plain = key_auth_off();
  c->born = c->last_in = now_ms();
  uv_timer_start(&c->timer, sweep, NET_SWEEP_MS, NET_SWEEP_MS);
  return c;
}

/* ---- writing ------------------------------------------------------------- */

/* One uv_write: a frame, or every frame queued while the conn was corked
 * (one writev, so one syscall and, on the other side, usually one read). */
struct wreq {
  uv_write_t req;
  uv_buf_t *bufs;
  unsigned nbufs;
  uv_buf_t one;
};

static void wrote(uv_write_t *req, int status)
{
  struct wreq *w = (struct wreq *)req;
  (void)status;             /* a failed write shows up as a read error too */
  for (unsigned i = 0; i < w->nbufs; i++)
    free(w->bufs[i].base);
  if (w->bufs != &w->one)
    free(w->bufs);
  free(w);
}

int conn_send_sized(struct conn *c, const Env *env, size_t *len)
{
  *len = 0;
  if (c->closing)
    return -1;
  uint8_t *frame = wire_frame_room(env, NET_FRAME_ROOM, len);
  if (frame == NULL) {
    logwarn_rl("%s: a message over the frame limit dropped", c->peer);
    return -1;
  }
  return conn_send_frame(c, frame, *len);
}

int conn_send(struct conn *c, const Env *env)
{
  size_t len;
  return conn_send_sized(c, env, &len);
}

static int write_queued(struct conn *c, uv_buf_t *bufs, unsigned n);

static void free_bufs(uv_buf_t *bufs, unsigned n)
{
  for (unsigned i = 0; i < n; i++)
    free(bufs[i].base);
  if (n > 1)
    free(bufs);
}

/* Hand n frames to the socket in one write. bufs is a malloc'd array the
 * write then owns, or (n == 1) any buf, copied.
 *
 * The write is tried at once, with no request (uv_try_write): a socket
 * with room, nearly always, takes it whole, and then there is no
 * uv_write_t to allocate, no callback on the next turn, and no epoll_ctl
 * (libuv re-arms a stream's watcher after every uv_write it completes:
 * one more syscall per write, on every node turn and every engine ship).
 * What the socket did not take goes by uv_write, copied into one buffer
 * (rare: a full socket). Order is kept: libuv refuses a try while a
 * uv_write is queued on the stream (UV_EAGAIN), so a frame never passes
 * one queued before it. */
static int write_bufs(struct conn *c, uv_buf_t *bufs, unsigned n)
{
  int done = uv_try_write((uv_stream_t *)&c->tcp, bufs, n);
  if (done > 0) {
    size_t total = 0, off = (size_t)done;
    for (unsigned i = 0; i < n; i++)
      total += bufs[i].len;
    if (off >= total) {
      free_bufs(bufs, n);
      return 0;
    }
    char *rest = malloc(total - off);
    if (rest == NULL) {
      free_bufs(bufs, n);
      conn_close(c);
      return -1;
    }
    size_t at = 0, seen = 0;
    for (unsigned i = 0; i < n; i++) {
      size_t len = bufs[i].len, skip = off > seen ? off - seen : 0;
      if (skip < len) {
        memcpy(rest + at, bufs[i].base + skip, len - skip);
        at += len - skip;
      }
      seen += len;
    }
    free_bufs(bufs, n);
    uv_buf_t b = uv_buf_init(rest, (unsigned)at);
    return write_queued(c, &b, 1);
  }
  /* UV_EAGAIN (nothing taken, or a write queued before it), or an error
   * the queued write then reports as before. */
  return write_queued(c, bufs, n);
}

/* The same, queued with libuv: it writes when the socket has room. */
static int write_queued(struct conn *c, uv_buf_t *bufs, unsigned n)
{
  struct wreq *w = malloc(sizeof *w);
  if (w != NULL) {
    if (n == 1) {
      w->one = bufs[0];
      w->bufs = &w->one;
    } else {
      w->bufs = bufs;
    }
    w->nbufs = n;
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, w->bufs, n, wrote) == 0)
      return 0;
    free(w);
  }
  free_bufs(bufs, n);
  conn_close(c);
  return -1;
}

int conn_send_frame(struct conn *c, uint8_t *frame, size_t len)
{
  if (c->closing) {
    free(frame);
    return -1;
  }
  /* After the handshake every frame carries its tag, computed now: frames
   * go out in the order they are queued, corked or not, and the peer
   * checks them in that order. Before it, only the handshake's frames
   * (and an Error) go out, plain. */
  if (c->auth == AUTH_DONE && !c->plain) {
    auth_seal(&c->sess, frame, len, frame + len);   /* in the room left for it */
    len += AUTH_TAG_BYTES;
  }
  if (c->cork > 0) {
    if (c->npend == c->cappend) {
      unsigned cap = c->cappend ? 2 * c->cappend : 8;
      uv_buf_t *p = realloc(c->pend, cap * sizeof *p);
      if (p == NULL) {
        free(frame);
        return -1;
      }
      c->pend = p;
      c->cappend = cap;
    }
    c->pend[c->npend++] = uv_buf_init((char *)frame, (unsigned)len);
  } else {
    uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
    if (write_bufs(c, &b, 1) != 0)
      return -1;
  }
  /* Counted when queued: a frame libuv accepted goes out unless the
   * connection breaks, and then the peer never answers it either. */
  if (c->count) {
    c->count->bytes_out += len;
    c->count->msgs_out++;
  }
  return 0;
}

void conn_cork(struct conn *c)
{
  c->cork++;
}

void conn_uncork(struct conn *c)
{
  if (c->cork == 0 || --c->cork > 0 || c->npend == 0)
    return;
  uv_buf_t *bufs = c->pend;
  unsigned n = c->npend;
  c->pend = NULL;
  c->npend = c->cappend = 0;
  if (c->closing) {
    for (unsigned i = 0; i < n; i++)
      free(bufs[i].base);
    free(bufs);
    return;
  }
  if (n == 1) {
    uv_buf_t b = bufs[0];
    free(bufs);
    write_bufs(c, &b, 1);
  } else {
    write_bufs(c, bufs, n);   /* the write owns bufs now */
  }
}

void conn_error(struct conn *c, uint64_t req, uint32_t code, const char *msg)
{
  Env env;
  Auralog__Error err;
  wire_error(&env, &err, req, code, msg);
  conn_send(c, &env);
}

static void shut(uv_shutdown_t *req, int status)
{
  struct conn *c = req->data;
  (void)status;
  free(req);
  uv_close((uv_handle_t *)&c->tcp, conn_freed);
}

void conn_fail(struct conn *c, uint64_t req, uint32_t code, const char *msg)
{
  if (c->closing)
    return;
  logwarn_rl("%s: %s; closing the connection", c->peer, msg);
  conn_error(c, req, code, msg);
  /* Nothing more is read or sent; what is queued (the error) still goes
   * out before the socket closes. */
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->closing = 1;
  detach(c);
  if (c->on_close)
    c->on_close(c);
  uv_close((uv_handle_t *)&c->timer, conn_freed);
  uv_shutdown_t *sr = malloc(sizeof *sr);
  if (sr)
    sr->data = c;
  if (sr == NULL || uv_shutdown(sr, (uv_stream_t *)&c->tcp, shut) != 0) {
    free(sr);
    uv_close((uv_handle_t *)&c->tcp, conn_freed);
  }
}

/* ---- the handshake (auth.h) ------------------------------------------------ */

/* A connector's connection failed before it was up: tell the role as a
 * failed connect, once, and close. */
static void connect_failed(struct conn *c, int status, const char *msg)
{
  logwarn_rl("%s: %s", c->peer, msg);
  void (*cb)(struct conn *, int) = c->on_connect;
  c->on_connect = NULL;
  if (cb)
    cb(c, status);
  conn_close(c);
}

static void send_plain(struct conn *c, Env *env)
{
  conn_send(c, env);        /* auth != AUTH_DONE: no tag */
}

/* The listener's side: a challenge as soon as the peer is accepted. */
static void challenge(struct conn *c)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__AuthChallenge ch = AURALOG__AUTH_CHALLENGE__INIT;
  auth_random(c->hs.ln, sizeof c->hs.ln);
  ch.version = AUTH_VERSION;
  ch.nonce = (ProtobufCBinaryData){sizeof c->hs.ln, c->hs.ln};
  snprintf(c->hs.addr, sizeof c->hs.addr, "%s", c->lis->addr);
  ch.addr = c->hs.addr;
  env.body_case = AURALOG__ENVELOPE__BODY_AUTH_CHALLENGE;
  env.auth_challenge = &ch;
  c->auth = AUTH_CHALLENGED;
  send_plain(c, &env);
}

/* A message that arrived before the handshake was done. Returns 1 if the
 * conn may go on. */
static int handshake(struct conn *c, const Env *env)
{
  char why[256];
  const struct auth_key *key = key_get(why, sizeof why);
  if (key == NULL) {
    if (c->lis)
      conn_fail(c, env->req, ERR_AUTH, "this process has no cluster key");
    else
      connect_failed(c, UV_EACCES, why);
    return 0;
  }
  if (c->auth == AUTH_CHALLENGED) {
    if (env->body_case != AURALOG__ENVELOPE__BODY_AUTH_HELLO) {
      conn_fail(c, env->req, ERR_AUTH, "this connection did not prove it holds "
                "the cluster key (auralog --key FILE or AURALOG_KEY)");
      return 0;
    }
    const Auralog__AuthHello *h = env->auth_hello;
    memcpy(c->hs.cn, h->nonce.data, sizeof c->hs.cn);
    if (!auth_proof_ok(key, 0, &c->hs, h->proof.data, h->proof.len)) {
      conn_fail(c, env->req, ERR_AUTH, "wrong cluster key (this cluster's key "
                "is not the one the peer holds)");
      return 0;
    }
    Env w = AURALOG__ENVELOPE__INIT;
    Auralog__AuthWelcome wm = AURALOG__AUTH_WELCOME__INIT;
    uint8_t proof[AUTH_PROOF_BYTES];
    auth_proof(key, 1, &c->hs, proof);
    wm.proof = (ProtobufCBinaryData){sizeof proof, proof};
    w.body_case = AURALOG__ENVELOPE__BODY_AUTH_WELCOME;
    w.auth_welcome = &wm;
    send_plain(c, &w);
    auth_session(key, 1, &c->hs, &c->sess);
    auth_binding(&c->hs, c->bind);
    c->auth = AUTH_DONE;
    c->connected = 1;
    return 1;
  }
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR) {
    snprintf(why, sizeof why, "refused the connection: %s", env->error->msg);
    connect_failed(c, UV_EACCES, why);
    return 0;
  }
  if (c->auth == AUTH_WAIT_CHALLENGE &&
      env->body_case == AURALOG__ENVELOPE__BODY_AUTH_CHALLENGE) {
    const Auralog__AuthChallenge *ch = env->auth_challenge;
    /* The member that answered must serve the address dialed: else a
     * stranger on that address relays to another member (auth.h). */
    if (!addr_match(ch->addr, c->peer)) {
      snprintf(why, sizeof why, "answered for %s, not the address dialed: a relay, or a "
               "member listening elsewhere; connection closed", ch->addr);
      connect_failed(c, UV_EACCES, why);
      return 0;
    }
    memcpy(c->hs.ln, ch->nonce.data, sizeof c->hs.ln);
    snprintf(c->hs.addr, sizeof c->hs.addr, "%s", ch->addr);
    auth_random(c->hs.cn, sizeof c->hs.cn);
    Env h = AURALOG__ENVELOPE__INIT;
    Auralog__AuthHello hm = AURALOG__AUTH_HELLO__INIT;
    uint8_t proof[AUTH_PROOF_BYTES];
    auth_proof(key, 0, &c->hs, proof);
    hm.nonce = (ProtobufCBinaryData){sizeof c->hs.cn, c->hs.cn};
    hm.proof = (ProtobufCBinaryData){sizeof proof, proof};
    h.body_case = AURALOG__ENVELOPE__BODY_AUTH_HELLO;
    h.auth_hello = &hm;
    send_plain(c, &h);
    c->auth = AUTH_WAIT_WELCOME;
    return 1;
  }
  if (c->auth == AUTH_WAIT_WELCOME &&
      env->body_case == AURALOG__ENVELOPE__BODY_AUTH_WELCOME) {
    const Auralog__AuthWelcome *w = env->auth_welcome;
    if (!auth_proof_ok(key, 1, &c->hs, w->proof.data, w->proof.len)) {
      connect_failed(c, UV_EACCES, "does not hold this cluster's key: not a member, "
                     "connection closed");
      return 0;
    }
    auth_session(key, 0, &c->hs, &c->sess);
    auth_binding(&c->hs, c->bind);
    c->auth = AUTH_DONE;
    c->connected = 1;
    if (c->on_connect)
      c->on_connect(c, 0);
    return !c->closing;
  }
  connect_failed(c, UV_EPROTO, "answered the handshake with something else: not an "
                 "auralog process of this version");
  return 0;
}

/* ---- reading ------------------------------------------------------------- */

static void alloc_in(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
  struct conn *c = h->data;
  (void)hint;
  /* Before the handshake a peer gets a small buffer: its frames are
   * small, and a stranger holds no more than that of this process. */
  size_t want = c->auth == AUTH_DONE ? READ_CHUNK : AUTH_BUF;
  if (c->cap - c->nin < want && (c->auth == AUTH_DONE || c->cap == 0)) {
    size_t cap = c->cap ? c->cap : want;
    while (cap - c->nin < want)
      cap *= 2;
    if (set_cap(c, cap) != 0) {
      c->over_budget = 1;
      *buf = uv_buf_init(NULL, 0);   /* read_cb gets UV_ENOBUFS */
      return;
    }
  }
  *buf = uv_buf_init((char *)c->in + c->nin, (unsigned)(c->cap - c->nin));
}

/* Take the next whole frame off c->in at off: 1 with *env (NULL if it
 * was the handshake's and is handled), 0 if it is not all there, -1 if
 * the conn failed. */
static int next_frame(struct conn *c, size_t *off, Env **env, ProtobufCAllocator *alloc)
{
  char why[256];
  size_t avail = c->nin - *off, used, need;
  const uint8_t *p = c->in + *off;
  *env = NULL;
  if (avail < 4)
    return 0;
  uint32_t len = get_be32(p);
  if (c->auth != AUTH_DONE && len > AUTH_FRAME_MAX) {
    if (c->lis)
      conn_fail(c, 0, ERR_AUTH, "this connection did not prove it holds the "
                "cluster key (auralog --key FILE or AURALOG_KEY)");
    else
      connect_failed(c, UV_EPROTO, "sent a large frame instead of the handshake");
    return -1;
  }
  size_t tag = c->auth == AUTH_DONE && !c->plain ? AUTH_TAG_BYTES : 0;
  if (len == 0 || len > FRAME_MAX) {
    wire_parse(p, avail, env, &used, &need, why, sizeof why);
    conn_fail(c, 0, ERR_BAD_FRAME, why);
    return -1;
  }
  if (avail < 4 + (size_t)len + tag)
    return 0;
  if (tag && !auth_check(&c->sess, p, 4 + (size_t)len, p + 4 + len)) {
    conn_fail(c, 0, ERR_AUTH, "a frame failed its authentication check (altered, "
              "replayed or from another connection)");
    return -1;
  }
  int rc = wire_parse_in(p, 4 + (size_t)len, alloc, env, &used, &need, why, sizeof why);
  if (rc <= 0) {
    conn_fail(c, 0, ERR_BAD_FRAME, why);
    return -1;
  }
  *off += used + tag;
  if (c->count) {
    c->count->bytes_in += used + tag;
    c->count->msgs_in++;
  }
  return 1;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
  struct conn *c = s->data;
  (void)buf;
  if (n < 0) {
    if (n == UV_ENOBUFS && c->over_budget)
      conn_fail(c, 0, ERR_UNAVAILABLE, "busy: the memory for partly received frames is "
                "taken; try again");
    else
      conn_close(c);
    return;
  }
  if (n == 0)
    return;
  c->last_in = now_ms();
  c->nin += (size_t)n;
  size_t off = 0;
  conn_ref(c);              /* on_msg may close c */
  while (!c->closing) {
    Env *env;
    char why[256];
    /* The frame's messages live in the frame arena (net/farena.h) until
     * its handler returns: nothing of it may be kept past that. */
    ProtobufCAllocator *fa = farena_enter();
    int rc = next_frame(c, &off, &env, fa);
    if (rc <= 0) {
      farena_leave();
      break;
    }
    int code = wire_check(env, why, sizeof why);
    if (code != ERR_NONE)
      conn_fail(c, env->req, (uint32_t)code, why);
    else if (c->auth != AUTH_DONE)
      handshake(c, env);
    else if (env->body_case == AURALOG__ENVELOPE__BODY_AUTH_CHALLENGE ||
             env->body_case == AURALOG__ENVELOPE__BODY_AUTH_HELLO ||
             env->body_case == AURALOG__ENVELOPE__BODY_AUTH_WELCOME)
      conn_fail(c, env->req, ERR_BAD_MSG, "a second handshake on one connection");
    else
      c->on_msg(c, env);
    if (fa == NULL)
      wire_free(env);          /* (from the arena: let go all at once) */
    farena_leave();
  }
  if (!c->closing) {
    memmove(c->in, c->in + off, c->nin - off);
    c->nin -= off;
    if (c->nin == 0)
      c->partial_since = 0;
    else if (off > 0 || c->partial_since == 0)
      c->partial_since = c->last_in;
    if (c->nin == 0 && c->cap > 4 * READ_CHUNK)
      set_cap(c, 0);        /* a big frame went by: give the memory back */
  }
  conn_unref(c);
}

/* Every NET_SWEEP_MS: the deadlines of a handshake, of a frame partly
 * received, and of an accepted connection's silence. */
static void sweep(uv_timer_t *t)
{
  struct conn *c = t->data;
  unsigned long long now = now_ms();
  char why[128];
  if (c->closing)
    return;
  if (c->auth != AUTH_DONE && now - c->born > AUTH_DEADLINE_MS) {
    snprintf(why, sizeof why, "no handshake within %d ms", AUTH_DEADLINE_MS);
    if (c->lis)
      conn_fail(c, 0, ERR_AUTH, why);
    else
      connect_failed(c, UV_ETIMEDOUT, why);
  } else if (c->partial_since && now - c->partial_since > FRAME_DEADLINE_MS) {
    snprintf(why, sizeof why, "a frame took over %d ms to arrive", FRAME_DEADLINE_MS);
    conn_fail(c, 0, ERR_BAD_FRAME, why);
  } else if (c->lis && now - c->last_in > IDLE_MS) {
    loginfo("%s: silent for %d s, closing the connection", c->peer, IDLE_MS / 1000);
    conn_close(c);
  }
}

static void start(struct conn *c)
{
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char host[48] = "?";
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0 &&
      ss.ss_family == AF_INET) {
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    uv_ip4_name(sin, host, sizeof host);
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, ntohs(sin->sin_port));
  }
  uv_tcp_nodelay(&c->tcp, 1);
  c->born = c->last_in = now_ms();
  uv_read_start((uv_stream_t *)&c->tcp, alloc_in, on_read);
  if (c->plain) {           /* AURALOG_AUTH=off (keyfile.h): no handshake */
    c->auth = AUTH_DONE;
    c->connected = 1;
    if (!c->lis && c->on_connect)
      c->on_connect(c, 0);
  } else if (c->lis) {
    challenge(c);
  } else {
    c->auth = AUTH_WAIT_CHALLENGE;
  }
}

static void on_accept(uv_stream_t *server, int status)
{
  struct listener *l = server->data;
  if (status < 0)
    return;
  struct conn *c = conn_new(server->loop, l->on_msg, l->on_close, l->data);
  if (c == NULL)
    return;
  c->count = l->count;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  /* At the cap, the oldest peer still in its handshake makes room: a
   * member's handshake takes a round trip, a crowd of strangers holding
   * connections open cannot keep members out. */
  if (l->nconns >= CONNS_MAX) {
    struct conn *v = l->head;
    while (v && v->auth == AUTH_DONE)
      v = v->lnext;
    if (v)
      conn_fail(v, 0, ERR_UNAVAILABLE, "closed to make room: too many connections "
                "still in their handshake");
  }
  c->lis = l;
  c->lprev = l->tail;
  if (l->tail)
    l->tail->lnext = c;
  else
    l->head = c;
  l->tail = c;
  l->nconns++;
  start(c);
  if (l->nconns > CONNS_MAX) {
    char why[96];
    snprintf(why, sizeof why, "too many connections (at most %d)", CONNS_MAX);
    conn_fail(c, 0, ERR_UNAVAILABLE, why);
  }
}

int net_listen(uv_loop_t *loop, const char *addr, conn_msg_fn on_msg,
               conn_close_fn on_close, void *data, char *why, size_t whylen)
{
  return net_listen_count(loop, addr, on_msg, on_close, data, NULL, why, whylen);
}

int net_listen_count(uv_loop_t *loop, const char *addr, conn_msg_fn on_msg,
                     conn_close_fn on_close, void *data, struct net_count *count,
                     char *why, size_t whylen)
{
  struct sockaddr_in sa;
  if (addr_parse(addr, &sa, why, whylen) != 0)
    return -1;
  if (key_auth_off() && (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
    snprintf(why, whylen, "AURALOG_AUTH=off is for a benchmark on one machine: it listens "
             "on 127.0.0.x only, not %s", addr);
    return -1;
  }
  struct listener *l = calloc(1, sizeof *l);
  snprintf(l->addr, sizeof l->addr, "%s", addr);
  uv_tcp_init(loop, &l->tcp);
  l->tcp.data = l;
  l->on_msg = on_msg;
  l->on_close = on_close;
  l->data = data;
  l->count = count;
  int rc = uv_tcp_bind(&l->tcp, (struct sockaddr *)&sa, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&l->tcp, 128, on_accept);
  if (rc != 0) {
    snprintf(why, whylen, "cannot listen on %s: %s", addr, uv_strerror(rc));
    return -1;
  }
  return 0;
}

/* ---- connecting ---------------------------------------------------------- */

static void connected(uv_connect_t *req, int status)
{
  struct conn *c = req->data;
  free(req);
  if (status == 0 && !c->closing) {
    start(c);               /* on_connect runs once the handshake is done */
  } else {
    void (*cb)(struct conn *, int) = c->on_connect;
    c->on_connect = NULL;
    if (cb)
      cb(c, status ? status : UV_ECANCELED);
    conn_close(c);
  }
  conn_unref(c);
}

struct conn *net_connect(uv_loop_t *loop, const char *addr,
                         void (*on_connect)(struct conn *, int),
                         conn_msg_fn on_msg, conn_close_fn on_close, void *data)
{
  struct sockaddr_in sa;
  char why[128];
  if (addr_parse(addr, &sa, why, sizeof why) != 0)
    return NULL;
  struct conn *c = conn_new(loop, on_msg, on_close, data);
  if (c == NULL)
    return NULL;
  snprintf(c->peer, sizeof c->peer, "%s", addr);
  c->on_connect = on_connect;
  uv_connect_t *req = malloc(sizeof *req);
  req->data = c;
  conn_ref(c);
  if (uv_tcp_connect(req, &c->tcp, (struct sockaddr *)&sa, connected) != 0) {
    free(req);
    conn_unref(c);
    conn_close(c);
    return NULL;
  }
  return c;
}
