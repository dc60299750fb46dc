/*
 * netio.h: the real driver's struct io (io.h), over net.c's libuv TCP
 * conns, the monotonic clock and rand().
 *
 * A role's core gets its events from here: every well-formed message on
 * any conn (accepted by the listener or opened by io->connect) goes to
 * on_msg with the conn as its endpoint; a conn the core opened that comes
 * up goes to on_up; any conn that closes (a failed connect included) goes
 * to on_down. A struct ep here is a struct conn.
 */
#ifndef AURALOG_NETIO_H
#define AURALOG_NETIO_H

#include <uv.h>
#include "io.h"
#include "net.h"

struct netio {
  struct io io;
  uv_loop_t *loop;
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

/* Accept conns on addr. Returns 0, or -1 with a reason. */
int netio_listen(struct netio *ni, const char *addr, char *why, size_t whylen);

#endif
