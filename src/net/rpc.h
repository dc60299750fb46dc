/*
 * rpc.h: a blocking request/reply client over the same frames (a driver).
 *
 * The command-line tools (status, cluster) and the integration tests talk
 * to real processes through it: connect, send an envelope, wait for the
 * reply with the same request id, all with deadlines so that a dead peer
 * gives a clear error instead of a hang.
 */
#ifndef AURALOG_RPC_H
#define AURALOG_RPC_H

#include <stddef.h>
#include "net/auth.h"
#include "net/wire.h"

struct rpc {
  int fd;
  uint64_t next_req;
  char addr[128];
  int authed;               /* past the handshake: frames carry tags */
  struct auth_sess sess;
  uint8_t bind[AUTH_BIND_BYTES];  /* the connection's binding (auth.h roles) */
};

/* Connect within timeout_ms and prove the cluster key both ways (auth.h;
 * the key is keyfile.h's key_get). Returns 0, or -1 with a reason in why
 * (no key, a peer that refused it or does not hold it). */
int rpc_open(struct rpc *r, const char *addr, int timeout_ms, char *why,
             size_t whylen);
/* Connect only, with no handshake: what a process without the key sees
 * (tests). */
int rpc_open_plain(struct rpc *r, const char *addr, int timeout_ms, char *why,
                   size_t whylen);
void rpc_close(struct rpc *r);

/* Send req (its req id is set here) and wait for the reply carrying the
 * same id. Returns the reply (free with wire_free), which may be an Error,
 * or NULL with a reason in why if the connection failed or timed out. */
Env *rpc_call(struct rpc *r, Env *req, int timeout_ms, char *why, size_t whylen);

/* Raw access for tests and tools: send bytes / receive one envelope.
 * Past the handshake, every whole frame in buf gets its tag as it goes;
 * bytes that do not make a whole frame go as they are. */
int rpc_send_raw(struct rpc *r, const void *buf, size_t len);
Env *rpc_recv(struct rpc *r, int timeout_ms, char *why, size_t whylen);

/* If reply is an Error or not of the expected body, put a one-line
 * reason in why and return its error code (ERR_INTERNAL for a wrong
 * body); else 0. */
int rpc_expect(const Env *reply, int body_case, char *why, size_t whylen);

/* Is why about the cluster key (no key, a wrong one, a peer not a member)
 * rather than a peer that is not there? A tool then says so, not "is the
 * cluster up?". */
int rpc_key_trouble(const char *why);

/* One call on a fresh connection: open, call, close. */
Env *rpc_once(const char *addr, Env *req, int timeout_ms, char *why, size_t whylen);

/* One Fault message to the coordinator at coord (fault.c): a fault it
 * plays, or a note for its journal (a CLI's kill, a bench result). */
Env *fault_send(const char *coord, const Auralog__Fault *f, char *why, size_t whylen);

/* One SQL request on r (an engine or a replica): the reply (free with
 * wire_free: Rows, or an Error), or NULL with why if none came (for a
 * write, an unknown outcome). */
Env *rpc_query(struct rpc *r, const char *sql, int timeout_ms, char *why, size_t whylen);

/* rows as "a|b" lines, each ending in a newline, into out (cut at n);
 * returns the length it would have. */
size_t rows_text(const Auralog__Rows *rows, char *out, size_t n);

#endif
