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
#include "lib/log.h"
#include "param.h"
#include "rpc.h"

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

int rpc_open(struct rpc *r, const char *addr, int timeout_ms, char *why,
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

void rpc_close(struct rpc *r)
{
  if (r->fd >= 0)
    close(r->fd);
  r->fd = -1;
}

int rpc_send_raw(struct rpc *r, const void *buf, size_t len)
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
    uint8_t *buf = malloc(4 + (size_t)len);
    memcpy(buf, hdr, 4);
    rc = read_full(r, buf + 4, len, deadline);
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
  size_t len;
  uint8_t *frame = wire_frame(req, &len);
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
