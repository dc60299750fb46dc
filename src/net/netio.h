/*
 * netio.h: the real driver's struct io (io.h), over net.c's libuv TCP
 * conns, the monotonic clock and rand().
 *
 * A role's core gets its events from here: every well-formed message on
 * any conn (accepted by the listener or opened by io->connect) goes to
 * on_msg with the conn as its endpoint; a conn the core opened that comes
 * up goes to on_up; any conn that closes (a failed connect included) goes
 * to on_down, never from inside the core's own send or connect (only its
 * own close reports at once). A struct ep here is a struct conn.
 */
#ifndef AURALOG_NETIO_H
#define AURALOG_NETIO_H

#include <uv.h>
#include "net/io.h"
#include "net/net.h"

struct netio {
  struct io io;
  uv_loop_t *loop;
  /* A conn that closes inside one of the core's own io calls (a write or
   * a connect failing at once) reports its on_down after the call, from
   * the next loop turn: a core (and a driver's lock around it) is never
   * re-entered from inside itself. */
  int in_call;
  uv_idle_t later;
  struct conn **down;
  size_t ndown, capdown;
  void *core;
  void (*on_msg)(void *core, struct ep *e, const Env *env);
  void (*on_up)(void *core, struct ep *e);      /* may be NULL */
  void (*on_down)(void *core, struct ep *e);    /* may be NULL */
  struct net_count count;        /* every conn's frames but the coordinator's */
  struct net_count coord_count;  /* conns counted as IO_COUNT_COORD */
};

/* Set ni up on loop for core (the callbacks above). */
void netio_init(struct netio *ni, uv_loop_t *loop, void *core,
                void (*on_msg)(void *core, struct ep *e, const Env *env),
                void (*on_up)(void *core, struct ep *e),
                void (*on_down)(void *core, struct ep *e));

/* After the loop stopped and its handles closed: what ni still holds. */
void netio_free(struct netio *ni);

/* Accept conns on addr. Returns 0, or -1 with a reason. */
int netio_listen(struct netio *ni, const char *addr, char *why, size_t whylen);

#endif
