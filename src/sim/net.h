/*
 * net.h: the simulated network, the simulator's side of io.h.
 *
 * Every role's core runs in one process and one thread; this file is the
 * wire between them. A core is a host: an address ("n1:1"), an AZ ("a",
 * "b", "c", or "" for the engine and the coordinator), and the event
 * callbacks into the core (struct simhost_cb). simhost_io(h) is the
 * struct io the core is given: its send, connect, close... act here, its
 * now_ms is the virtual clock (clock.h) and its random a stream of the
 * seeded PRNG (rng.h) forked for that host.
 *
 * Endpoints. A connection is two struct ep, one per side, each owned by
 * its host. connect() returns the client's at once (sends on it are
 * queued); a connect delay later the server's side appears (on_accept, if
 * the core wants it, else the first on_msg shows it), and a delay after
 * that the client gets on_up. Every ep a core has seen ends with exactly
 * one on_down, whatever closed it (a failed connect, the peer's close or
 * crash, a partition, its own close), as the real driver (netio.c) does;
 * a close() by the core calls on_down before it returns, as there. (A
 * server's ep may get on_down before any message if the core has no
 * on_accept: a core must ignore eps it does not know.)
 *
 * Messages. send packs the Env with wire_frame, so the real encoder runs
 * and the bytes are counted; delivery unpacks with wire_parse and checks
 * with wire_check, as net.c does, and a message that fails gets an Error
 * back and closes the ep. Each message is a clock event; its delay is
 * delay + uniform(0..jitter), plus, rarely, a long tail. By default an ep
 * is FIFO (a message never overtakes an earlier one on the same ep, as
 * TCP), and a close reaches the peer after everything sent before it.
 * Frames sent while an ep is corked arrive together (one write). A
 * send_late frame is sent when its delay is up, as in netio.c.
 *
 * Faults, which the simulator's nemeses turn on (struct simnet_conf is
 * live: change it between steps):
 *   drop_ppm, dup_ppm   lose or repeat a message (the repeat comes later,
 *                       after newer ones: a replayed packet)
 *   reorder             FIFO off: messages on one ep overtake each other
 *   simnet_cut(a, b)    a partition between two hosts; simnet_cut_az(az)
 *                       cuts an AZ from every host outside it (the hosts
 *                       registered by then: an AZ cut is its pairs' cuts,
 *                       and heal_az heals those pairs). While cut,
 *                       messages are dropped and connects fail; an ep cut
 *                       for cut_close_ms closes on both sides (a TCP
 *                       timeout). A shorter cut is only message loss.
 *   simnet_crash(h)     the host dies: its eps close with no callback to
 *                       it, messages in flight to and from it vanish, and
 *                       its peers get on_down crash_detect_ms later.
 *   simnet_restart(h, cb)  the host is back with a new core (new
 *                       callbacks); its old eps stay dead.
 * A connect to a host that is down, cut off or unknown fails: on_down for
 * the new ep connect_timeout_ms later.
 *
 * Lifetimes. An ep is freed once it is closed, every hold is released and
 * no event refers to it; never inside the call that closed it (as libuv's
 * uv_close). A crashed core's holds are not dropped for it: if the
 * simulator throws the core away without releasing them, simnet_free
 * frees those eps. After simnet_crash the old core must not be called
 * with events and must not call its io except release.
 *
 * Determinism. Every choice draws from the net's rng stream, in the order
 * of events; hosts and eps are kept in the order they were made; nothing
 * depends on a pointer value or on the wall clock. The trace hook sees
 * every send, delivery, drop, duplicate, connect, close, crash and cut
 * (struct simnet_ev), enough to hash a run and to draw it.
 *
 * Interface (free the net before its clock):
 *   simnet_new(clock, rng), simnet_free(n), simnet_conf(n), simnet_trace(n, fn, arg)
 *   simnet_add(n, addr, az, cb)       register a host (up); its io: simhost_io(h)
 *   simnet_host(n, addr), simnet_nhosts(n), simnet_host_at(n, i)
 *   simnet_crash(h), simnet_restart(h, cb)
 *   simnet_cut(a, b), simnet_heal(a, b), simnet_cut_az(n, az),
 *   simnet_heal_az(n, az), simnet_heal_all(n), simnet_is_cut(a, b)
 *   simhost_addr/az/up/incarnation/count/fatal(h)
 *   simnet_ep_peer/id/open(e), simnet_live_eps(n)
 */
#ifndef AURALOG_SIM_NET_H
#define AURALOG_SIM_NET_H

#include <stddef.h>
#include <stdint.h>

#include "net/io.h"
#include "sim/clock.h"
#include "sim/rng.h"

#define SIMNET_MAX_HOSTS 64            /* hosts one network can hold */
#define SIMNET_ADDR_MAX 64             /* an address, with its NUL */
#define SIMNET_AZ_MAX 16               /* an AZ name, with its NUL */
#define SIMNET_DELAY_MS 1              /* one-way delay: the fixed part */
#define SIMNET_JITTER_MS 2             /* ...plus uniform 0..this */
#define SIMNET_TAIL_PPM 1000           /* messages per million that are slow */
#define SIMNET_TAIL_MS 100             /* ...by up to this much more */
#define SIMNET_CONNECT_TIMEOUT_MS 1000 /* a connect that cannot succeed fails after */
#define SIMNET_CRASH_DETECT_MS 300     /* a crashed host's peers see on_down after */
#define SIMNET_CUT_CLOSE_MS 2000       /* an ep cut this long closes on both sides */

struct simnet;
struct simhost;

struct simnet_conf {
  uint32_t delay_ms, jitter_ms;   /* per message: delay + uniform(0..jitter) */
  uint32_t tail_ppm, tail_ms;     /* ...and with tail_ppm, + uniform(1..tail_ms) */
  uint32_t drop_ppm;              /* messages lost, per million */
  int drop_resets;                /* 1: a lost message resets its connection
                                     (both ends close), as TCP does when a
                                     path loses packets; 0: a silent loss */
  uint32_t dup_ppm;               /* messages delivered twice, per million */
  int reorder;                    /* 1: eps are not FIFO */
  uint32_t connect_timeout_ms, crash_detect_ms, cut_close_ms;
};

/* A core's events. arg is the core. Only on_msg is required. */
struct simhost_cb {
  void *arg;
  void (*on_msg)(void *arg, struct ep *e, const Env *env);
  void (*on_up)(void *arg, struct ep *e);        /* a connect of ours is up */
  void (*on_down)(void *arg, struct ep *e);      /* e closed, for any reason */
  void (*on_accept)(void *arg, struct ep *e);    /* a peer connected to us */
  /* io->fatal was called; NULL: the net crashes the host. Called from an
   * event of its own, never inside the core's fatal call. */
  void (*on_fatal)(void *arg, const char *why);
};

/* Frames in and out of one host (as net.h's struct net_count). */
struct simnet_count {
  uint64_t bytes_in, msgs_in;     /* frames arrived (also ones refused) */
  uint64_t bytes_out, msgs_out;   /* frames sent */
};

/* What the trace hook is told. */
enum {
  SIMNET_SEND,      /* from sent body_case, bytes on ep */
  SIMNET_DELIVER,   /* ...arrived at to and went to its core */
  SIMNET_DROP,      /* lost by the drop fault */
  SIMNET_CUTDROP,   /* lost to a partition (at send or in flight) */
  SIMNET_LOST,      /* lost because its ep or the receiver is gone */
  SIMNET_DUP,       /* will arrive twice */
  SIMNET_BAD,       /* failed wire_parse/wire_check: Error back, ep closed */
  SIMNET_CONNECT,   /* from asked for an ep to to */
  SIMNET_ACCEPT,    /* to's side of the ep exists */
  SIMNET_UP,        /* from's connect is up */
  SIMNET_CLOSE,     /* from's side of ep closed (from's view; to is the peer) */
  SIMNET_CRASH,     /* host from crashed */
  SIMNET_RESTART,   /* host from restarted */
  SIMNET_FATAL,     /* host from called io->fatal */
  SIMNET_CUT,       /* partition between from and to (an AZ cut: from is */
  SIMNET_HEAL,      /*   the AZ, to is "*") ...and its end */
  SIMNET_NKINDS
};

struct simnet_ev {
  int kind;
  uint64_t t;          /* virtual ms */
  const char *from;    /* addresses (see the kinds above; "" when none) */
  const char *to;
  int body_case;       /* the Env's body (messages only; else 0) */
  uint32_t bytes;      /* the frame's length (messages only; else 0) */
  uint64_t ep;         /* the id of from's side of the ep (a message's
                          sender's, at send and on arrival), or 0 */
};
typedef void (*simnet_trace_fn)(void *arg, const struct simnet_ev *ev);

/* A network on clock, with a stream forked from rng (which it then no
 * longer needs). Defaults from the #defines above. */
struct simnet *simnet_new(struct simclock *clock, struct rng *rng);
/* Cancel the net's pending events and free every ep and host. */
void simnet_free(struct simnet *n);
struct simnet_conf *simnet_conf(struct simnet *n);
void simnet_conf_default(struct simnet_conf *conf);
void simnet_trace(struct simnet *n, simnet_trace_fn fn, void *arg);

/* Register a host, up. NULL: addr taken or too long, az too long, or
 * SIMNET_MAX_HOSTS reached. */
struct simhost *simnet_add(struct simnet *n, const char *addr, const char *az,
                           const struct simhost_cb *cb);
struct simhost *simnet_host(struct simnet *n, const char *addr);
size_t simnet_nhosts(const struct simnet *n);
struct simhost *simnet_host_at(struct simnet *n, size_t i);

const struct io *simhost_io(struct simhost *h);
const char *simhost_addr(const struct simhost *h);
const char *simhost_az(const struct simhost *h);
int simhost_up(const struct simhost *h);
uint32_t simhost_incarnation(const struct simhost *h);  /* 1, then +1 per restart */
/* cls 0: all frames but those of eps count_as'd IO_COUNT_COORD; 1: those. */
const struct simnet_count *simhost_count(const struct simhost *h, int cls);
const char *simhost_fatal(const struct simhost *h);     /* NULL: never called */

void simnet_crash(struct simhost *h);
void simnet_restart(struct simhost *h, const struct simhost_cb *cb);

void simnet_cut(struct simhost *a, struct simhost *b);
void simnet_heal(struct simhost *a, struct simhost *b);
/* -1: az is "" (the engine's and the coordinator's: no AZ to cut). */
int simnet_cut_az(struct simnet *n, const char *az);
void simnet_heal_az(struct simnet *n, const char *az);
/* Heal every cut, and make every host fast again. */
void simnet_heal_all(struct simnet *n);
/* Everything to and from h takes ms longer (an outlier: a slow disk or a
 * busy node, paper §2.1); 0: normal again. */
void simnet_slow(struct simhost *h, uint32_t ms);
int simnet_is_cut(const struct simhost *a, const struct simhost *b);

/* For the simulator's checks and drawings; cores never need these. */
const char *simnet_ep_peer(const struct ep *e);   /* the peer's address */
uint64_t simnet_ep_id(const struct ep *e);
int simnet_ep_open(const struct ep *e);           /* up, and not closed */
size_t simnet_live_eps(const struct simnet *n);   /* struct eps not yet freed */

#endif
