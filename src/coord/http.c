/*
 * http.c: the dashboard's HTTP/1.1 server (see http.h).
 *
 * A second libuv listener in the coordinator's loop, beside the protobuf
 * one. The http-parser library reads each request; this file only routes
 * it and writes the answer. Every request is bounded before it costs
 * memory: the request line and headers to HTTP_HEADER_MAX bytes (the
 * parser counts), the URL to HTTP_URL_MAX, no body at all; a client that
 * does not read its answers is dropped rather than queue an answer past
 * HTTP_WQ_MAX bytes waiting for it (checked before queuing: a read of
 * pipelined requests can ask for hundreds of pages at once). Keep-alive
 * works, so the page's once-a-second poll reuses one connection.
 *
 * Slow clients cannot lock the dashboard out. A request head (request
 * line and headers) must arrive whole within HTTP_HEADER_MS of its first
 * byte, or of the connection's start: a client that sends nothing, or a
 * byte at a time (slowloris), is closed then, with 408 if it sent part of
 * a request. Bytes arriving do not push the deadline back. Between
 * requests a keep-alive connection may stay silent HTTP_IDLE_MS. And at
 * most HTTP_CONNS_MAX connections are open: a new one beyond that closes
 * the oldest idle one (no answer being written to it; idle longest, since
 * its start or its last answer), so 64 slow clients hold the dashboard
 * for no time at all; only if every connection is being answered is the
 * new one turned away.
 *
 * A request the parser rejects (garbage, a body, an oversized header, a
 * bad volume name) gets 400 and the connection is closed: after a parse
 * error the rest of the stream cannot be trusted to start a request. The
 * close lingers (see hconn_linger) so the client reads the 400 first.
 */
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/history.h"
#include "coord/http.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "net/wire.h"


/* The page, embedded by the build (xxd -i tools/viz/dashboard.html). */
extern unsigned char dashboard_html[];
extern unsigned int dashboard_html_len;

struct hconn;

struct hserver {
  uv_tcp_t tcp;
  http_status_fn status;
  void *data;
  struct hconn *conns;     /* the open connections (not closing), newest first */
  int nlive;               /* ... how many */
};

struct hconn {
  uv_tcp_t tcp;
  uv_timer_t timer;        /* the head deadline, the idle limit or the linger */
  uv_shutdown_t shut;
  http_parser parser;
  struct hserver *srv;
  struct hconn *prev, *next;   /* in srv->conns while open */
  uint64_t since;          /* idle since (loop ms): the start, or the last answer written */
  char url[HTTP_URL_MAX + 1];
  size_t nurl;
  const char *why;         /* why a callback stopped the parser */
  int head_due;            /* a request head is due by the timer (HTTP_HEADER_MS) */
  int begun;               /* ... and part of it came */
  int done;                /* the last answer is queued: ignore what comes */
  int writing;             /* answers queued, not yet written */
  int eof;                 /* the client sent all it will */
  int lingering;
  int closing;
  int open;                /* handles not closed yet; freed at 0 */
};

struct hwrite {
  uv_write_t req;
  struct hconn *c;
  int close;               /* close the connection once written */
  char buf[];
};

static http_parser_settings settings;

/* ---- connections ---------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
  struct hconn *c = h->data;
  if (--c->open == 0)
    free(c);
}

static void hconn_close(struct hconn *c)
{
  if (c->closing)
    return;
  c->closing = 1;
  struct hserver *srv = c->srv;
  if (c->prev)
    c->prev->next = c->next;
  else
    srv->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  srv->nlive--;
  uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

/* The client's address, for a log line. */
static const char *peer(struct hconn *c, char *buf, size_t len)
{
  struct sockaddr_in sa;
  int n = sizeof sa;
  snprintf(buf, len, "a client");
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &n) == 0 &&
      sa.sin_family == AF_INET) {
    char ip[INET_ADDRSTRLEN];
    uv_ip4_name(&sa, ip, sizeof ip);
    snprintf(buf, len, "%s:%d", ip, ntohs(sa.sin_port));
  }
  return buf;
}

static void on_timer(uv_timer_t *t);

/* Wait for the next request: silent, it may stay HTTP_IDLE_MS. */
static void hconn_idle(struct hconn *c)
{
  c->head_due = c->begun = 0;
  c->since = uv_now(c->tcp.loop);
  uv_timer_start(&c->timer, on_timer, HTTP_IDLE_MS, 0);
}

static void respond_text(struct hconn *c, int code, const char *extra, const char *msg,
                         int close);

/* The timer: a lingering close is over, a connection was idle too long,
 * or a request head did not come whole in time (see the top). */
static void on_timer(uv_timer_t *t)
{
  struct hconn *c = t->data;
  char who[64];
  if (c->lingering || c->done || !c->head_due) {
    hconn_close(c);         /* over, or idle too long, or its last answer is stuck */
    return;
  }
  logwarn_rl("dashboard: %s sent no whole request head within %d ms; closing it",
             peer(c, who, sizeof who), HTTP_HEADER_MS);
  if (!c->begun) {
    hconn_close(c);         /* it said nothing: nothing to answer */
    return;
  }
  respond_text(c, 408, NULL, "the request head did not come whole in time", 1);
  c->done = 1;
  if (HTTP_PARSER_ERRNO(&c->parser) == HPE_OK)
    http_parser_pause(&c->parser, 1);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
  (void)req;
  (void)status;             /* the linger timer or the client's close ends it */
}

/* The last answer is written. Closing now, with the rest of a request we
 * refused still unread, would make the kernel reset the connection, and
 * the client could lose the answer: send our end (FIN), read and drop
 * what still comes, and close at the client's close or after
 * HTTP_LINGER_MS. */
static void hconn_linger(struct hconn *c)
{
  if (c->lingering || c->closing)
    return;
  c->lingering = 1;
  uv_timer_start(&c->timer, on_timer, HTTP_LINGER_MS, 0);
  if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
    hconn_close(c);
}

static void on_written(uv_write_t *req, int status)
{
  struct hwrite *w = (struct hwrite *)req;
  struct hconn *c = w->c;
  c->writing--;
  if (status < 0 || (c->eof && c->writing == 0))
    hconn_close(c);
  else if ((w->close || c->done) && c->writing == 0)
    hconn_linger(c);
  else if (c->writing == 0 && !c->head_due && !c->closing)
    hconn_idle(c);          /* answered: idle from now */
  free(w);
}

/* Queue one whole answer: status line, headers, body. A client that
 * would have more than HTTP_WQ_MAX bytes waiting is asking and not
 * reading: it is dropped before the answer costs memory (one answer
 * larger than that alone is still sent). */
static void respond(struct hconn *c, int code, const char *type, const char *extra,
                    const void *body, size_t len, int close)
{
  if (c->closing)
    return;
  size_t queued = c->tcp.write_queue_size;
  if (queued > 0 && queued + len + 768 > HTTP_WQ_MAX) {
    char who[64];
    logwarn_rl("dashboard: %s does not read its answers (%zu bytes wait); closing it",
               peer(c, who, sizeof who), queued);
    c->done = 1;
    if (HTTP_PARSER_ERRNO(&c->parser) == HPE_OK)
      http_parser_pause(&c->parser, 1);
    hconn_close(c);
    return;
  }
  char head[768];
  int hl = snprintf(head, sizeof head,
                    "HTTP/1.1 %d %s\r\n"
                    "Content-Type: %s\r\n"
                    "Content-Length: %zu\r\n"
                    "Cache-Control: no-store\r\n"
                    "X-Content-Type-Options: nosniff\r\n"
                    "%s"
                    "Connection: %s\r\n\r\n",
                    code, http_status_str((enum http_status)code), type, len,
                    extra ? extra : "", close ? "close" : "keep-alive");
  struct hwrite *w = malloc(sizeof *w + (size_t)hl + len);
  memcpy(w->buf, head, (size_t)hl);
  if (len)
    memcpy(w->buf + hl, body, len);
  w->c = c;
  w->close = close;
  uv_buf_t b = uv_buf_init(w->buf, (unsigned)((size_t)hl + len));
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0) {
    free(w);
    hconn_close(c);
    return;
  }
  c->writing++;
}

static void respond_text(struct hconn *c, int code, const char *extra, const char *msg,
                         int close)
{
  char body[256];
  int n = snprintf(body, sizeof body, "%d %s: %s\n", code,
                   http_status_str((enum http_status)code), msg);
  respond(c, code, "text/plain; charset=utf-8", extra, body, (size_t)n, close);
}

/* A request we cannot serve or trust: 400, and no more from this client. */
static void bad_request(struct hconn *c, const char *why)
{
  respond_text(c, 400, NULL, why, 1);
  c->done = 1;
  /* Stop the parser at this request (pausing is only for a parser in no
   * error; one in error stops by itself). */
  if (HTTP_PARSER_ERRNO(&c->parser) == HPE_OK)
    http_parser_pause(&c->parser, 1);
}

/* ---- routes ---------------------------------------------------------------- */

/* The page runs inline script and style and talks only to this server:
 * the policy says so, and nothing from outside ever loads. */
#define PAGE_HEADERS                                                         \
  "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; " \
  "style-src 'unsafe-inline'; connect-src 'self'; img-src data:\r\n"

/* volume=NAME from a query string ("main" if absent). Returns 0, or -1 if
 * the name is not a volume name. */
static int query_volume(const char *q, size_t len, char *vol, size_t n)
{
  snprintf(vol, n, "main");
  while (len > 0) {
    const char *amp = memchr(q, '&', len);
    size_t plen = amp ? (size_t)(amp - q) : len;
    if (plen > 7 && memcmp(q, "volume=", 7) == 0) {
      if (plen - 7 >= n)
        return -1;
      memcpy(vol, q + 7, plen - 7);
      vol[plen - 7] = 0;
      if (!wire_name_ok(vol))
        return -1;
    }
    q += plen;
    len -= plen;
    if (amp) {
      q++;
      len--;
    }
  }
  return 0;
}

static void route(struct hconn *c, int close)
{
  struct http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(c->url, c->nurl, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH))) {
    bad_request(c, "the request target is not a URL");
    return;
  }
  const char *path = c->url + u.field_data[UF_PATH].off;
  size_t plen = u.field_data[UF_PATH].len;
  if (c->parser.method != HTTP_GET) {
    respond_text(c, 405, "Allow: GET\r\n", "the dashboard only reads", close);
  } else if (plen == 1 && path[0] == '/') {
    respond(c, 200, "text/html; charset=utf-8", PAGE_HEADERS, dashboard_html,
            dashboard_html_len, close);
  } else if (plen == 12 && memcmp(path, "/status.json", 12) == 0) {
    char vol[NAME_MAX_LEN + 1];
    const char *q = u.field_set & (1 << UF_QUERY) ? c->url + u.field_data[UF_QUERY].off : "";
    size_t qlen = u.field_set & (1 << UF_QUERY) ? u.field_data[UF_QUERY].len : 0;
    if (query_volume(q, qlen, vol, sizeof vol) != 0) {
      bad_request(c, "volume= is not a volume name");
      return;
    }
    char *json = c->srv->status(c->srv->data, vol);
    respond(c, 200, "application/json", NULL, json, strlen(json), close);
    free(json);
  } else if (plen == 13 && memcmp(path, "/history.json", 13) == 0) {
    char *json = dash_history_json();
    respond(c, 200, "application/json", NULL, json, strlen(json), close);
    free(json);
  } else {
    respond_text(c, 404, NULL, "the dashboard serves /, /status.json and /history.json", close);
  }
}

/* ---- parser callbacks ------------------------------------------------------ */

static int on_message_begin(http_parser *p)
{
  struct hconn *c = p->data;
  c->nurl = 0;
  /* The first byte of a request on an idle connection: its head is due
   * within HTTP_HEADER_MS (a new connection's was due from its start). */
  if (!c->head_due) {
    c->head_due = 1;
    uv_timer_start(&c->timer, on_timer, HTTP_HEADER_MS, 0);
  }
  c->begun = 1;
  return 0;
}

static int on_headers_complete(http_parser *p)
{
  struct hconn *c = p->data;
  /* The head came in time; the answer is queued next (there is no body).
   * Until it is written the connection is busy, not idle. */
  c->head_due = c->begun = 0;
  uv_timer_start(&c->timer, on_timer, HTTP_IDLE_MS, 0);
  return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
  struct hconn *c = p->data;
  if (len > HTTP_URL_MAX - c->nurl) {
    c->why = "the URL is too long";
    return -1;
  }
  memcpy(c->url + c->nurl, at, len);
  c->nurl += len;
  c->url[c->nurl] = 0;
  return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
  (void)at;
  (void)len;
  ((struct hconn *)p->data)->why = "the dashboard takes no request body";
  return -1;
}

static int on_message_complete(http_parser *p)
{
  struct hconn *c = p->data;
  /* An Upgrade (websocket) is not offered: answer, then close. */
  int close = !http_should_keep_alive(p) || p->upgrade;
  route(c, close);
  if (c->closing) {
    http_parser_pause(p, 1);   /* dropped while answering (respond) */
    return 0;
  }
  if (close && !c->done) {
    c->done = 1;
    http_parser_pause(p, 1);
  }
  return 0;
}

/* ---- reading --------------------------------------------------------------- */

/* One buffer serves every read: the loop is single-threaded and each read
 * is parsed in full before the next. */
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
  static char rbuf[16384];
  (void)h;
  (void)hint;
  *buf = uv_buf_init(rbuf, sizeof rbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
  struct hconn *c = s->data;
  if (nread < 0) {
    /* The client is done sending (or gone): finish writing what it asked
     * for, then close. */
    c->eof = c->done = 1;
    uv_read_stop(s);
    if (nread != UV_EOF || c->writing == 0)
      hconn_close(c);
    return;
  }
  if (nread == 0 || c->done || c->closing)
    return;
  size_t used = http_parser_execute(&c->parser, &settings, buf->base, (size_t)nread);
  if (c->done || c->closing)
    return;                 /* answered for the last time: lingering, or dropped */
  enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
  if (e != HPE_OK || used != (size_t)nread)
    bad_request(c, c->why ? c->why : http_errno_description(e));
}

/* The connection to close for a new one when HTTP_CONNS_MAX are open: one
 * lingering (done with), else the one idle longest; never one being
 * answered. NULL if every one is. */
static struct hconn *oldest_idle(struct hserver *srv)
{
  struct hconn *best = NULL;
  for (struct hconn *c = srv->conns; c; c = c->next) {
    if (c->writing > 0 && !c->lingering)
      continue;
    if (c->lingering)
      return c;
    if (best == NULL || c->since <= best->since)
      best = c;             /* the list is newest first: ties go to the older */
  }
  return best;
}

static void on_connection(uv_stream_t *server, int status)
{
  struct hserver *srv = server->data;
  if (status < 0)
    return;
  struct hconn *c = calloc(1, sizeof *c);
  c->srv = srv;
  uv_tcp_init(server->loop, &c->tcp);
  uv_timer_init(server->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->open = 2;
  c->next = srv->conns;
  if (srv->conns)
    srv->conns->prev = c;
  srv->conns = c;
  srv->nlive++;
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    hconn_close(c);
    return;
  }
  c->since = uv_now(server->loop);
  if (srv->nlive > HTTP_CONNS_MAX) {
    struct hconn *old = oldest_idle(srv);
    char who[64];
    if (old == NULL || old == c) {
      logwarn_rl("dashboard: %d connections, every one being answered: turned %s away",
                 HTTP_CONNS_MAX, peer(c, who, sizeof who));
      hconn_close(c);
      return;
    }
    logwarn_rl("dashboard: %d connections open: closed the one idle longest (%s) for a new one",
               HTTP_CONNS_MAX, peer(old, who, sizeof who));
    hconn_close(old);
  }
  /* A new connection's first request head is due from now. */
  c->head_due = 1;
  uv_timer_start(&c->timer, on_timer, HTTP_HEADER_MS, 0);
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- listening ------------------------------------------------------------- */

int http_listen(uv_loop_t *loop, const char *addr, http_status_fn status,
                http_sample_fn sample, void *data, char *why, size_t whylen)
{
  struct sockaddr_in sa;
  if (addr_parse(addr, &sa, why, whylen) != 0)
    return -1;
  http_parser_settings_init(&settings);
  settings.on_message_begin = on_message_begin;
  settings.on_url = on_url;
  settings.on_headers_complete = on_headers_complete;
  settings.on_body = on_body;
  settings.on_message_complete = on_message_complete;
  http_parser_set_max_header_size(HTTP_HEADER_MAX);
  struct hserver *srv = calloc(1, sizeof *srv);
  srv->status = status;
  srv->data = data;
  uv_tcp_init(loop, &srv->tcp);
  srv->tcp.data = srv;
  int rc = uv_tcp_bind(&srv->tcp, (struct sockaddr *)&sa, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&srv->tcp, 128, on_connection);
  if (rc != 0) {
    snprintf(why, whylen, "dashboard: cannot listen on %s: %s", addr, uv_strerror(rc));
    uv_close((uv_handle_t *)&srv->tcp, NULL);
    return -1;
  }
  dash_history_start(loop, sample, data);
  return 0;
}

int http_default_addr(const char *coord, char *out, size_t n, char *why, size_t whylen)
{
  struct sockaddr_in sa;
  if (addr_parse(coord, &sa, why, whylen) != 0)
    return -1;
  int port = ntohs(sa.sin_port) + HTTP_PORT_OFFSET;
  if (port > 65535) {
    snprintf(why, whylen, "dashboard: port %d is out of range; give --http ADDR or off", port);
    return -1;
  }
  const char *colon = strrchr(coord, ':');
  snprintf(out, n, "%.*s:%d", (int)(colon - coord), coord, port);
  return 0;
}
