/*
 * net.c: framed connections over libuv TCP (see net.h).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "net.h"
#include "param.h"

#define READ_CHUNK (64 << 10)

struct listener {
  uv_tcp_t tcp;
  conn_msg_fn on_msg;
  conn_close_fn on_close;
  void *data;
  struct net_count *count;
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
    free(c);
  }
}

void conn_close(struct conn *c)
{
  if (c->closing)
    return;
  c->closing = 1;
  if (c->on_close)
    c->on_close(c);
  uv_close((uv_handle_t *)&c->tcp, conn_freed);
}

static struct conn *conn_new(uv_loop_t *loop, conn_msg_fn on_msg,
                             conn_close_fn on_close, void *data)
{
  struct conn *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  uv_tcp_init(loop, &c->tcp);
  c->tcp.data = c;
  c->on_msg = on_msg;
  c->on_close = on_close;
  c->data = data;
  c->refs = 1;
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

int conn_send(struct conn *c, const Env *env)
{
  if (c->closing)
    return -1;
  size_t len;
  uint8_t *frame = wire_frame(env, &len);
  if (frame == NULL) {
    logwarn("%s: reply over the frame limit dropped", c->peer);
    return -1;
  }
  return conn_send_frame(c, frame, len);
}

/* Hand n frames to libuv in one write. bufs is a malloc'd array the write
 * then owns, or (n == 1) any buf, copied. */
static int write_bufs(struct conn *c, uv_buf_t *bufs, unsigned n)
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
  for (unsigned i = 0; i < n; i++)
    free(bufs[i].base);
  if (n > 1)
    free(bufs);
  conn_close(c);
  return -1;
}

int conn_send_frame(struct conn *c, uint8_t *frame, size_t len)
{
  if (c->closing) {
    free(frame);
    return -1;
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
  logwarn("%s: %s; closing the connection", c->peer, msg);
  conn_error(c, req, code, msg);
  /* Nothing more is read or sent; what is queued (the error) still goes
   * out before the socket closes. */
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->closing = 1;
  if (c->on_close)
    c->on_close(c);
  uv_shutdown_t *sr = malloc(sizeof *sr);
  if (sr)
    sr->data = c;
  if (sr == NULL || uv_shutdown(sr, (uv_stream_t *)&c->tcp, shut) != 0) {
    free(sr);
    uv_close((uv_handle_t *)&c->tcp, conn_freed);
  }
}

/* ---- reading ------------------------------------------------------------- */

static void alloc_in(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
  struct conn *c = h->data;
  (void)hint;
  if (c->cap - c->nin < READ_CHUNK) {
    size_t cap = c->cap ? c->cap : READ_CHUNK;
    while (cap - c->nin < READ_CHUNK)
      cap *= 2;
    uint8_t *in = realloc(c->in, cap);
    if (in == NULL) {
      *buf = uv_buf_init(NULL, 0);
      return;
    }
    c->in = in;
    c->cap = cap;
  }
  *buf = uv_buf_init((char *)c->in + c->nin, (unsigned)(c->cap - c->nin));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
  struct conn *c = s->data;
  (void)buf;
  if (n < 0) {
    conn_close(c);
    return;
  }
  c->nin += (size_t)n;
  size_t off = 0;
  conn_ref(c);              /* on_msg may close c */
  while (!c->closing) {
    Env *env;
    size_t used, need;
    char why[256];
    int rc = wire_parse(c->in + off, c->nin - off, &env, &used, &need, why, sizeof why);
    if (rc == 0)
      break;
    if (rc < 0) {
      conn_fail(c, 0, ERR_BAD_FRAME, why);
      break;
    }
    off += used;
    if (c->count) {
      c->count->bytes_in += used;
      c->count->msgs_in++;
    }
    int code = wire_check(env, why, sizeof why);
    if (code != ERR_NONE)
      conn_fail(c, env->req, (uint32_t)code, why);
    else
      c->on_msg(c, env);
    wire_free(env);
  }
  if (!c->closing) {
    memmove(c->in, c->in + off, c->nin - off);
    c->nin -= off;
    if (c->nin == 0 && c->cap > 4 * READ_CHUNK) {
      free(c->in);          /* a big frame went by: give the memory back */
      c->in = NULL;
      c->cap = 0;
    }
  }
  conn_unref(c);
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
  c->connected = 1;
  uv_read_start((uv_stream_t *)&c->tcp, alloc_in, on_read);
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
  start(c);
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
  struct listener *l = calloc(1, sizeof *l);
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
  if (status == 0 && !c->closing)
    start(c);
  if (c->on_connect)
    c->on_connect(c, status);
  if (status != 0)
    conn_close(c);
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
