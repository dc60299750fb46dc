/*
 * rpc.c: blocking request/reply client (see rpc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/addr.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "param.h"
#include "net/proof.h"
#include "net/rpc.h"

static int send_bytes(struct rpc *r, const void *buf, size_t len);

/* Wait until fd is ready for events, or the deadline passes. */
static int wait_fd(int fd, short events, unsigned long long deadline)
{
  for (;;) {
    unsigned long long now = now_ms();
    if (now >= deadline)
      return 0;
    struct pollfd p = {fd, events, 0};
    int rc = poll(&p, 1, (int)(deadline - now));
    if (rc < 0 && errno == EINTR)
      continue;
    return rc;
  }
}

int rpc_open_plain(struct rpc *r, const char *addr, int timeout_ms, char *why,
                   size_t whylen)
{
  struct sockaddr_in sa;
  memset(r, 0, sizeof *r);
  r->fd = -1;
  r->next_req = 1;
  snprintf(r->addr, sizeof r->addr, "%s", addr);
  if (addr_parse(addr, &sa, why, whylen) != 0)
    return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(why, whylen, "socket: %s", strerror(errno));
    return -1;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
    snprintf(why, whylen, "cannot reach %s: %s", addr, strerror(errno));
    close(fd);
    return -1;
  }
  if (wait_fd(fd, POLLOUT, now_ms() + (unsigned)timeout_ms) <= 0) {
    snprintf(why, whylen, "cannot reach %s: timed out", addr);
    close(fd);
    return -1;
  }
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) {
    snprintf(why, whylen, "cannot reach %s: %s", addr, strerror(err));
    close(fd);
    return -1;
  }
  r->fd = fd;
  return 0;
}

/* The connector's half of the handshake (net.c has both halves). */
int rpc_open(struct rpc *r, const char *addr, int timeout_ms, char *why,
             size_t whylen)
{
  if (key_auth_off())
    return rpc_open_plain(r, addr, timeout_ms, why, whylen);
  const struct auth_key *key = key_get(why, whylen);
  if (key == NULL) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
    return -1;
  }
  if (rpc_open_plain(r, addr, timeout_ms, why, whylen) != 0)
    return -1;
  struct auth_hs hs;
  uint8_t proof[AUTH_PROOF_BYTES];
  Env *e = rpc_recv(r, timeout_ms, why, whylen);
  if (e && e->body_case == AURALOG__ENVELOPE__BODY_AUTH_CHALLENGE &&
      !addr_match(e->auth_challenge->addr, addr)) {
    snprintf(why, whylen, "%s answered for %s: a relay, or a member listening elsewhere",
             addr, e->auth_challenge->addr);
    wire_free(e);
    rpc_close(r);
    return -1;
  }
  if (e && e->body_case == AURALOG__ENVELOPE__BODY_AUTH_CHALLENGE) {
    memcpy(hs.ln, e->auth_challenge->nonce.data, sizeof hs.ln);
    snprintf(hs.addr, sizeof hs.addr, "%s", e->auth_challenge->addr);
    wire_free(e);
    auth_random(hs.cn, sizeof hs.cn);
    auth_proof(key, 0, &hs, proof);
    Env h = AURALOG__ENVELOPE__INIT;
    Auralog__AuthHello hm = AURALOG__AUTH_HELLO__INIT;
    hm.nonce = (ProtobufCBinaryData){sizeof hs.cn, hs.cn};
    hm.proof = (ProtobufCBinaryData){sizeof proof, proof};
    h.body_case = AURALOG__ENVELOPE__BODY_AUTH_HELLO;
    h.auth_hello = &hm;
    size_t len;
    uint8_t *frame = wire_frame(&h, &len);
    int sent = frame && send_bytes(r, frame, len) == 0;
    free(frame);
    e = sent ? rpc_recv(r, timeout_ms, why, whylen) : NULL;
    if (e && e->body_case == AURALOG__ENVELOPE__BODY_AUTH_WELCOME) {
      int ok = auth_proof_ok(key, 1, &hs, e->auth_welcome->proof.data,
                             e->auth_welcome->proof.len);
      wire_free(e);
      if (ok) {
        auth_session(key, 0, &hs, &r->sess);
        auth_binding(&hs, r->bind);
        r->authed = 1;
        return 0;
      }
      snprintf(why, whylen, "%s does not hold this cluster's key: not a member", addr);
      rpc_close(r);
      return -1;
    }
    if (!sent)
      snprintf(why, whylen, "cannot send to %s", addr);
  }
  if (e && e->body_case == AURALOG__ENVELOPE__BODY_ERROR)
    snprintf(why, whylen, "%s refused the connection: %s", addr, e->error->msg);
  else if (e)
    snprintf(why, whylen, "%s did not start the handshake: not an auralog process of "
             "this version", addr);
  wire_free(e);
  rpc_close(r);
  return -1;
}

void rpc_close(struct rpc *r)
{
  if (r->fd >= 0)
    close(r->fd);
  r->fd = -1;
}

static int send_bytes(struct rpc *r, const void *buf, size_t len)
{
  const uint8_t *p = buf;
  unsigned long long deadline = now_ms() + RPC_TIMEOUT_MS;
  while (len) {
    ssize_t n = send(r->fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(r->fd, POLLOUT, deadline) <= 0)
        return -1;
    } else {
      return -1;
    }
  }
  return 0;
}

int rpc_send_raw(struct rpc *r, const void *buf, size_t len)
{
  const uint8_t *p = buf;
  if (!r->authed)
    return send_bytes(r, p, len);
  while (len >= 4) {
    uint32_t flen = get_be32(p);
    if (flen == 0 || flen > FRAME_MAX || (size_t)flen + 4 > len)
      break;
    uint8_t tag[AUTH_TAG_BYTES];
    auth_seal(&r->sess, p, 4 + (size_t)flen, tag);
    if (send_bytes(r, p, 4 + (size_t)flen) != 0 || send_bytes(r, tag, sizeof tag) != 0)
      return -1;
    p += 4 + (size_t)flen;
    len -= 4 + (size_t)flen;
  }
  return len ? send_bytes(r, p, len) : 0;
}

static int read_full(struct rpc *r, uint8_t *p, size_t len,
                     unsigned long long deadline)
{
  while (len) {
    ssize_t n = recv(r->fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
    } else if (n == 0) {
      return -1;            /* peer closed */
    } else if (errno == EAGAIN || errno == EINTR) {
      if (wait_fd(r->fd, POLLIN, deadline) <= 0)
        return -2;
    } else {
      return -1;
    }
  }
  return 0;
}

Env *rpc_recv(struct rpc *r, int timeout_ms, char *why, size_t whylen)
{
  unsigned long long deadline = now_ms() + (unsigned)timeout_ms;
  uint8_t hdr[4];
  int rc = read_full(r, hdr, 4, deadline);
  if (rc == 0) {
    uint32_t len = get_be32(hdr);
    if (len == 0 || len > FRAME_MAX) {
      snprintf(why, whylen, "%s sent a frame of %u bytes", r->addr, len);
      return NULL;
    }
    size_t tag = r->authed ? AUTH_TAG_BYTES : 0;
    uint8_t *buf = malloc(4 + (size_t)len + tag);
    memcpy(buf, hdr, 4);
    rc = read_full(r, buf + 4, len + tag, deadline);
    if (rc == 0 && tag && !auth_check(&r->sess, buf, 4 + (size_t)len, buf + 4 + len)) {
      snprintf(why, whylen, "a frame from %s failed its authentication check", r->addr);
      free(buf);
      return NULL;
    }
    if (rc == 0) {
      Env *env;
      size_t used, need;
      if (wire_parse(buf, 4 + (size_t)len, &env, &used, &need, why, whylen) != 1) {
        free(buf);
        return NULL;
      }
      free(buf);
      if (wire_check(env, why, whylen) != ERR_NONE) {
        wire_free(env);
        return NULL;
      }
      return env;
    }
    free(buf);
  }
  snprintf(why, whylen, rc == -2 ? "%s did not answer in time" : "%s closed the connection",
           r->addr);
  return NULL;
}

Env *rpc_call(struct rpc *r, Env *req, int timeout_ms, char *why, size_t whylen)
{
  req->req = r->next_req++;
  /* A request only the operator may make goes signed, when this process
   * acts for the operator (keyfile.h op_use); the coordinator refuses it
   * otherwise, with the reason (proof.h). */
  uint8_t sig[AUTH_SIG_BYTES];
  char owhy[8];
  ProtobufCBinaryData had = req->op_sig;
  const struct auth_signer *op;
  if (had.len == 0 && role_needs_op(req) && (op = op_get(owhy, sizeof owhy)) != NULL)
    role_op_seal(req, op, r->bind, sig);
  size_t len;
  uint8_t *frame = wire_frame(req, &len);
  req->op_sig = had;
  if (frame == NULL) {
    snprintf(why, whylen, "request too large");
    return NULL;
  }
  int rc = rpc_send_raw(r, frame, len);
  free(frame);
  if (rc != 0) {
    snprintf(why, whylen, "cannot send to %s", r->addr);
    return NULL;
  }
  unsigned long long deadline = now_ms() + (unsigned)timeout_ms;
  for (;;) {
    unsigned long long now = now_ms();
    if (now >= deadline) {
      snprintf(why, whylen, "%s did not answer in time", r->addr);
      return NULL;
    }
    Env *env = rpc_recv(r, (int)(deadline - now), why, whylen);
    if (env == NULL || env->req == req->req || env->req == 0)
      return env;           /* req 0: an error about the frame itself */
    wire_free(env);         /* a reply to an earlier, abandoned request */
  }
}

int rpc_expect(const Env *reply, int body_case, char *why, size_t whylen)
{
  if (reply->body_case == AURALOG__ENVELOPE__BODY_ERROR) {
    snprintf(why, whylen, "%s", reply->error->msg);
    return reply->error->code ? (int)reply->error->code : ERR_INTERNAL;
  }
  if ((int)reply->body_case != body_case) {
    snprintf(why, whylen, "unexpected reply (message %d)", reply->body_case);
    return ERR_INTERNAL;
  }
  return 0;
}

Env *rpc_once(const char *addr, Env *req, int timeout_ms, char *why, size_t whylen)
{
  struct rpc r;
  if (rpc_open(&r, addr, timeout_ms, why, whylen) != 0)
    return NULL;
  Env *env = rpc_call(&r, req, timeout_ms, why, whylen);
  rpc_close(&r);
  return env;
}

int rpc_key_trouble(const char *why)
{
  return strstr(why, "cluster key") || strstr(why, "not a member") ||
         strstr(why, "answered for") || strstr(why, "not authorized");
}

Env *rpc_query(struct rpc *r, const char *sql, int timeout_ms, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Query q = AURALOG__QUERY__INIT;
  q.sql = (char *)sql;
  req.body_case = AURALOG__ENVELOPE__BODY_QUERY;
  req.query = &q;
  return rpc_call(r, &req, timeout_ms, why, whylen);
}

size_t rows_text(const Auralog__Rows *rows, char *out, size_t n)
{
  size_t k = 0;
  if (n)
    out[0] = 0;
  for (size_t i = 0; i < rows->n_rows; i++) {
    for (size_t j = 0; j < rows->rows[i]->n_values; j++)
      k += (size_t)snprintf(out + k, k < n ? n - k : 0, "%s%s", j ? "|" : "",
                            rows->rows[i]->values[j]->text);
    k += (size_t)snprintf(out + k, k < n ? n - k : 0, "\n");
  }
  return k;
}
