/*
 * proof.h: role proofs on envelopes (auth.h says what they prove; pure:
 * libsodium and protobuf-c, no I/O).
 *
 * Invariant 9 (DESIGN.md §4): authority follows roles, not the cluster key
 * alone. The key makes a process a member; a member may read, report as a
 * node, serve as a replica. What destroys or takes over a volume needs a
 * role on top:
 *
 *   operator  a writer-open (a new epoch), a re-creation of a dropped
 *             name, a drop, a fault, a manual failover: the envelope
 *             carries op_sig, the operator's signature over the envelope
 *             itself (op_sig empty) and the connection's binding. The
 *             coordinator checks it (coord/roles.c).
 *   writer    a lease probe, an engine report, a volume's growth: the
 *             envelope carries writer_sig, the signature of the key the
 *             volume's current ticket names, on (binding, volume, epoch).
 *
 * Interface:
 *   role_needs_op    does this request need the operator?
 *   role_op_seal     sign env as the operator (sets env->op_sig to sig)
 *   role_op_ok       does env carry a valid op_sig for this binding?
 *   role_writer_seal sign env as the writer of (volume, epoch)
 *   role_writer_ok   does env carry a valid writer_sig by pk?
 */
#ifndef AURALOG_PROOF_H
#define AURALOG_PROOF_H

#include <stdint.h>
#include "net/auth.h"
#include "net/wire.h"

/* What env asks that only the operator may: a short phrase for errors
 * ("open a volume as its writer"), or NULL if anyone may. */
const char *role_needs_op(const Env *env);

/* Sign env as the operator on a connection bound by bind: env->op_sig
 * points at sig (which must outlive the send). 0, or -1 (too large). */
int role_op_seal(Env *env, const struct auth_signer *op, const uint8_t bind[AUTH_BIND_BYTES],
                 uint8_t sig[AUTH_SIG_BYTES]);
int role_op_ok(const uint8_t op_pk[AUTH_PK_BYTES], const uint8_t bind[AUTH_BIND_BYTES],
               const Env *env);

void role_writer_seal(Env *env, const struct auth_signer *w,
                      const uint8_t bind[AUTH_BIND_BYTES], uint64_t volume, uint64_t epoch,
                      uint8_t sig[AUTH_SIG_BYTES]);
int role_writer_ok(const uint8_t *pk, size_t pklen, const uint8_t bind[AUTH_BIND_BYTES],
                   uint64_t volume, uint64_t epoch, const Env *env);

#endif
