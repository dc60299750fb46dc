/*
 * net.h: framed connections over libuv TCP (a driver: the only place, with
 * rpc.c, where auralog touches sockets).
 *
 * A conn reads frames, unpacks and validates them (wire.c) and hands each
 * well-formed envelope to its role's on_msg. A bad frame or an invalid
 * message gets an Error reply and the connection is shut down; the process
 * goes on serving everyone else (DESIGN.md §4, invariant 6).
 *
 * A role may keep a conn beyond the current callback (an ack sent after
 * an lmdb commit) by taking a reference; the conn is freed once it is
 * closed and every reference is dropped.
 *
 * Every connection first proves the cluster key both ways (auth.h): the
 * listener sends a challenge, the connector answers with a proof, the
 * listener answers with its own. Only then does the connector's on_connect
 * run and the listener pass frames to on_msg; a peer that fails gets one
 * Error (ERR_AUTH) and a closed connection. After it, every frame carries
 * a MAC. A connection is also bounded (param.h): the handshake, a partly
 * received frame and an accepted connection's silence have deadlines, a
 * listener serves CONNS_MAX peers and buffers BUFFER_BUDGET bytes of big
 * frames over all of them.
 *
 * Counting: a conn whose count is set adds every frame it reads or queues
 * to it, length prefix included (what `auralog bench` reports as network
 * cost). A role sets it on conns it connects, or for a whole listener with
 * net_listen_count. Only the conn's loop thread touches it.
 */
#ifndef AURALOG_NET_H
#define AURALOG_NET_H

#include <uv.h>
#include "net/auth.h"
#include "net/io.h"
#include "net/wire.h"

struct conn;
typedef void (*conn_msg_fn)(struct conn *c, const Env *env);
typedef void (*conn_close_fn)(struct conn *c);


struct listener;

struct conn {
  uv_tcp_t tcp;
  uv_timer_t timer;        /* the sweep: handshake, frame and idle deadlines */
  uint8_t *in;             /* bytes read, not yet a whole frame */
  size_t nin, cap;
  conn_msg_fn on_msg;
  conn_close_fn on_close;  /* called once, when the conn starts closing */
  void *data;              /* the role's (same for every conn of a listener) */
  void *ctx;               /* the role's, for this conn alone */
  int refs;
  int closing;
  int connected;           /* up, and past the handshake */
  void (*on_connect)(struct conn *c, int status);
  char peer[64];
  struct net_count *count; /* where this conn's frames add up (NULL: nowhere) */
  unsigned cork;           /* > 0: frames wait in pend for conn_uncork */
  uv_buf_t *pend;          /* frames queued while corked */
  unsigned npend, cappend;
  /* The handshake (auth.h): nothing but it passes until auth is AUTH_DONE;
   * after it every frame carries a tag under sess. */
  int auth;
  int plain;               /* AURALOG_AUTH=off: no handshake, no tags */
  struct auth_hs hs;       /* the nonces, and the address the listener serves */
  struct auth_sess sess;
  uint8_t bind[AUTH_BIND_BYTES];  /* the handshake's binding (auth.h roles; zeros: plain) */
  struct listener *lis;    /* the listener that accepted it (NULL: connected) */
  struct conn *lprev, *lnext;  /* the listener's conns, oldest first */
  size_t charged;          /* bytes of in charged to the listener's budget */
  int over_budget;
  unsigned long long born, last_in, partial_since;
};

/* Listen on addr ("host:port"); every accepted conn gets the callbacks and
 * data. Returns 0, or -1 with a reason. */
int net_listen(uv_loop_t *loop, const char *addr, conn_msg_fn on_msg,
               conn_close_fn on_close, void *data, char *why, size_t whylen);
/* The same, every accepted conn counting its frames into count. */
int net_listen_count(uv_loop_t *loop, const char *addr, conn_msg_fn on_msg,
                     conn_close_fn on_close, void *data, struct net_count *count,
                     char *why, size_t whylen);

/* Connect to addr. on_connect(c, status) is called with status 0 when the
 * conn is up, or with a libuv error (the conn is then closed). */
struct conn *net_connect(uv_loop_t *loop, const char *addr,
                         void (*on_connect)(struct conn *, int),
                         conn_msg_fn on_msg, conn_close_fn on_close, void *data);

/* Queue env on c. Returns 0, or -1 if c is closing or env is too large. */
int conn_send(struct conn *c, const Env *env);
/* The same; *len: the frame's bytes (its 4-byte length included, its MAC
 * not), where it was queued. */
int conn_send_sized(struct conn *c, const Env *env, size_t *len);

/* Queue an already framed message, made with wire_frame_room(env,
 * NET_FRAME_ROOM, ...) (the room holds its tag); takes ownership of it. */
#define NET_FRAME_ROOM AUTH_TAG_BYTES
int conn_send_frame(struct conn *c, uint8_t *frame, size_t len);

/* Cork: frames sent until the matching conn_uncork wait, then go out in one
 * write (writev): a role that sends several frames to a peer at once (an
 * engine's Appends for several PGs, a node's acks of one commit) makes one
 * syscall, and the peer usually reads them in one turn. Corks nest. */
void conn_cork(struct conn *c);
void conn_uncork(struct conn *c);

/* Reply with an Error (the conn stays open). */
void conn_error(struct conn *c, uint64_t req, uint32_t code, const char *msg);

/* Reply with an Error, then shut the conn down once it is written. */
void conn_fail(struct conn *c, uint64_t req, uint32_t code, const char *msg);

void conn_close(struct conn *c);
void conn_ref(struct conn *c);
void conn_unref(struct conn *c);

#endif
