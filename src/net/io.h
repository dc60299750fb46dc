/*
 * io.h: what a protocol core asks of the driver that runs it (DESIGN.md §3).
 *
 * The cores (the storage node, the writer's volume, recovery, the
 * coordinator) make every protocol decision and touch no socket, clock,
 * disk or random source of their own: they call through a struct io. Two
 * drivers implement it, as dqlite's raft library has one raft_io with a
 * libuv implementation and a test fixture behind it:
 *   - the real one (net.c's libuv TCP conns, the wall clock, rand());
 *   - the simulator's (src/sim/): a seeded PRNG, a virtual clock and a
 *     simulated network that delays, drops, duplicates, reorders and
 *     partitions messages.
 *
 * Events go the other way, as plain function calls into the core: a
 * message arrived on an endpoint, an endpoint came up or went down, a
 * timer fired, the turn ended (group commit). Each core's header lists its
 * events.
 *
 * Endpoints. A struct ep is one connection to a peer, owned by the driver
 * and opaque to the core (the real driver's is net.c's struct conn; the
 * simulator's is its own). A core may keep an ep beyond the event that
 * brought it (an ack sent after a commit) by holding it; the driver frees
 * it once it is closed and every hold is released. Sending on a closed
 * ep is allowed and does nothing: a peer's crash is not the core's error.
 *
 * What both drivers guarantee (netio.c, sim/net.c):
 *   - every ep a core has seen ends with exactly one on_down, whatever
 *     closed it; a core's own close() calls it before returning, and
 *     nothing else calls it from inside one of the core's own io calls (a
 *     send or connect that fails at once reports later): a core, and the
 *     lock a driver holds around it, is never re-entered;
 *   - there is no accept: a server learns of a new ep from its first
 *     message;
 *   - frames still corked when an ep closes are lost, as a crash loses
 *     what a process had not written;
 *   - a core thrown away (a crash) may still release what it held; it
 *     must not be called with events again.
 *
 * Every ep a core sees belongs to a member of the cluster: the real driver
 * runs the cluster key's handshake and frame MACs (auth.h) before a peer's
 * first message reaches a core, and a peer that fails never does. The
 * simulator models members only and runs no handshake. The authority a
 * member needs (an epoch's ticket, a truncation's signature, a node's
 * identity) is the cores' own business, and runs in both.
 */
#ifndef AURALOG_IO_H
#define AURALOG_IO_H

#include <stdint.h>
#include "net/wire.h"

struct ep;

#define IO_COUNT_COORD 1

/* Frames and bytes (4-byte length prefix included) through some
 * endpoints: what a driver counts, and a core reports (heartbeats). */
struct net_count {
  uint64_t bytes_in, msgs_in;     /* whole frames read (also ones wire_check refuses) */
  uint64_t bytes_out, msgs_out;   /* frames queued for writing */
};

struct io {
  void *ctx;
  /* Queue env to ep. Returns 0, or -1 (ep closed, env too large). */
  int (*send)(void *ctx, struct ep *to, const Env *env);
  /* The same, delivered delay_ms later (a slow node's answers, a lab
   * fault). */
  int (*send_late)(void *ctx, struct ep *to, const Env *env, uint32_t delay_ms);
  /* Frames sent between cork(ep, 1) and cork(ep, 0) leave in one write.
   * May be NULL (nothing to batch). */
  void (*cork)(void *ctx, struct ep *e, int on);
  void (*hold)(void *ctx, struct ep *e);
  void (*release)(void *ctx, struct ep *e);
  /* Open an endpoint to addr. The core learns that it is up, or that it
   * failed or went down, from its own events; NULL: not now (try later). */
  struct ep *(*connect)(void *ctx, const char *addr);
  void (*close)(void *ctx, struct ep *e);
  /* Optional (may be NULL): count ep's frames apart from the rest, as
   * class cls (IO_COUNT_COORD: the coordinator's, which benchmarks leave
   * out of the network cost). */
  void (*count_as)(void *ctx, struct ep *e, int cls);
  /* Optional (may be NULL): the role cannot go on (a configuration error
   * the coordinator reported); the driver stops it with why. */
  void (*fatal)(void *ctx, const char *why);
  /* Monotonic milliseconds. */
  uint64_t (*now_ms)(void *ctx);
  /* A random 64-bit number (seeded in the simulator). */
  uint64_t (*random)(void *ctx);
  /* Optional (may be NULL): monotonic microseconds, for timings that
   * protocol decisions never read (the commit stage timings of `auralog
   * bench`, vcore.c). The simulator has none: nothing is timed there. */
  uint64_t (*now_us)(void *ctx);
  /* Optional (may be NULL: zeros): ep's binding (auth.h, roles), the same
   * at both ends of one connection and at no other. Role proofs sign it. */
  void (*binding)(void *ctx, struct ep *e, uint8_t out[32]);
  /* Bytes of the frames send queued so far (4-byte length prefix
   * included), kept by a driver that packs them anyway (netio.c); 0 where
   * the driver keeps no count (the simulator). A core reads it around a
   * send to count what it sent without packing the message twice. */
  uint64_t sent_bytes;
};

static inline int io_send(const struct io *io, struct ep *to, const Env *env)
{
  return io->send(io->ctx, to, env);
}

static inline void io_cork(const struct io *io, struct ep *e, int on)
{
  if (io->cork)
    io->cork(io->ctx, e, on);
}

static inline uint64_t io_now(const struct io *io)
{
  return io->now_ms(io->ctx);
}

/* Microseconds for a timing only, or 0 if the driver keeps none. */
static inline uint64_t io_now_us(const struct io *io)
{
  return io->now_us ? io->now_us(io->ctx) : 0;
}

/* ep's binding (auth.h roles): zeros where the driver has none. */
static inline void io_binding(const struct io *io, struct ep *e, uint8_t out[32])
{
  for (int i = 0; i < 32; i++)
    out[i] = 0;
  if (io->binding && e)
    io->binding(io->ctx, e, out);
}

/* An Error reply to request req on ep (the endpoint stays open). */
static inline void io_error(const struct io *io, struct ep *to, uint64_t req,
                            uint32_t code, const char *msg)
{
  Env env;
  Auralog__Error err;
  wire_error(&env, &err, req, code, msg);
  io->send(io->ctx, to, &env);
}

#endif
