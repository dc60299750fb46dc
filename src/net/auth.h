/*
 * auth.h: the cluster key, and what it proves (pure: libsodium, no I/O).
 *
 * Threat model. A cluster is its coordinator, storage nodes, engine and
 * tools, reachable on TCP ports that any local process (or, in lab 6 and
 * on real VMs, any machine on the network) can connect to. The cluster key
 * (32 random bytes, `cluster up` writes it 0600 beside the data) makes a
 * process a member: every connection between members starts with a mutual
 * challenge-response that proves both ends hold the key, and every frame
 * after it carries a MAC under keys that only that connection uses, with
 * a sequence number, so a frame cannot be forged, altered, replayed,
 * reordered or moved to another connection. That is integrity and
 * authenticity between roles, and nothing more: frames are not encrypted
 * (anyone on the path reads redo and SQL results), a student with a shell
 * on a node, who can read the key or the data directory, is a member, and
 * the dashboard (HTTP, GET only) stays open to whoever reaches it: it
 * shows status and changes nothing.
 * Inside the cluster, the two operations that destroy data carry their own
 * authority, so that even a member (or a bug) cannot forge them: an epoch
 * is valid only with the coordinator's signature (an epoch ticket, which
 * also names the writer's public key), and a truncation only with the
 * signature of the writer its ticket names. Nodes bind their registration
 * to a key kept in their data directory, so no one can move a node.
 *
 * Roles (invariant 9: authority follows roles, not the key alone). What
 * each can and cannot do (README "Who may do what"; coord/roles.c):
 *  - a member (the cluster key: every node, replica, tool) connects, reads
 *    status and pages, gossips; it gets no writer epoch, drops nothing,
 *    injects no fault, forces no failover, and its lease probes and
 *    reports for the writer count for nothing;
 *  - the operator (DIR/operator.key, an Ed25519 seed; the coordinator
 *    holds only the public half) signs each request only it may make,
 *    bound to its connection: writer-opens, re-creating a dropped name,
 *    drops (never under a live writer), faults, failovers;
 *  - the writer (the key the current epoch's ticket names) signs its
 *    truncation, and proves itself on each connection for its probes and
 *    reports; even its truncation is bounded by every node (node/trunc.c):
 *    never below a VDL a segment heard from an older epoch, never longer
 *    than the LAL above it;
 *  - a replica proves its own key in its beats; promoted, it opens with
 *    that key, and the coordinator gives the epoch only to the replica it
 *    chose.
 * Left open, said so: frames are readable on the path; a node answers
 * for its own segments; a member may pose as a replica of its own address
 * and be promoted by failover like any replica (then bound as a writer);
 * and a writer's key outlives its authority: one that died inside its
 * recovery never wrote the truncation it was given the epoch for, so its
 * key, stolen, can sign a range at or above every VDL the segments heard
 * that still cuts commits its predecessor acknowledged and never announced
 * (the simulator's rogue-unfinished fault, sim/rogue.c).
 *
 * Interface:
 *   handshake  the listener sends a challenge (its nonce), the connecting
 *              side answers with its nonce and a proof, the listener
 *              checks it and answers with its own proof; both then derive
 *              one key per direction (auth_sess). auth_proof computes a
 *              proof, auth_session the keys.
 *   frames     auth_seal appends a tag to a frame, auth_check verifies the
 *              tag of the next frame received (sequence numbers implicit).
 *   tickets    auth_ticket_sign / _verify: the coordinator's signature on
 *              (volume, epoch, writer's public key).
 *   truncs     auth_trunc_sign / _verify: a writer's signature on
 *              (volume, epoch, from, to).
 *   identity   auth_id_sign / _verify: a node's signature on its
 *              registration (id, az, addr).
 */
#ifndef AURALOG_AUTH_H
#define AURALOG_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define AUTH_KEY_BYTES   32
#define AUTH_NONCE_BYTES 32
#define AUTH_PROOF_BYTES 32
#define AUTH_TAG_BYTES   16   /* per-frame MAC (keyed BLAKE2b) */
#define AUTH_PK_BYTES    32   /* Ed25519 */
#define AUTH_SK_BYTES    64
#define AUTH_SIG_BYTES   64
#define AUTH_SEED_BYTES  32
#define AUTH_VERSION     1

struct auth_key {
  uint8_t k[AUTH_KEY_BYTES];
};

/* One connection's keys, once the handshake is done. */
struct auth_sess {
  uint8_t send_key[32], recv_key[32];
  uint64_t send_seq, recv_seq;
};

/* A signing key pair (the coordinator's, a writer's, a node's). */
struct auth_signer {
  uint8_t pk[AUTH_PK_BYTES];
  uint8_t sk[AUTH_SK_BYTES];
};

/* libsodium must be initialized once; safe to call again. 0 or -1. */
int auth_init(void);

/* Fresh random bytes (the operating system's). */
void auth_random(void *buf, size_t n);

/* One handshake's inputs: the listener's nonce, the connector's, and the
 * address the listener says it serves, which the connector checks is the
 * one it dialed (auth_addr_match). Binding it into every proof and key
 * means that a stranger who can listen on a member's address (a node that
 * is down, on a shared machine) cannot relay the connection to another
 * member: the writer would count that member's acknowledgments twice. */
struct auth_hs {
  uint8_t ln[AUTH_NONCE_BYTES], cn[AUTH_NONCE_BYTES];
  char addr[136];            /* "host:port", at most ADDR_MAX_LEN */
};

/* The proof that whoever computed it holds key, for this handshake.
 * listener: 1 for the listener's proof, 0 for the connector's (the two
 * differ, so neither can be reflected as the other). */
void auth_proof(const struct auth_key *key, int listener, const struct auth_hs *h,
                uint8_t out[AUTH_PROOF_BYTES]);
/* Constant-time comparison of a proof received with the one expected. */
int auth_proof_ok(const struct auth_key *key, int listener, const struct auth_hs *h,
                  const uint8_t *got, size_t gotlen);
/* The session keys for one end (listener: 1 on the accepting side). */
void auth_session(const struct auth_key *key, int listener, const struct auth_hs *h,
                  struct auth_sess *s);

/* Tag of the next frame sent (len bytes at frame, length prefix
 * included) into tag; advances the send sequence. */
void auth_seal(struct auth_sess *s, const uint8_t *frame, size_t len,
               uint8_t tag[AUTH_TAG_BYTES]);
/* Does tag authenticate the next frame received? Advances the receive
 * sequence only if it does. */
int auth_check(struct auth_sess *s, const uint8_t *frame, size_t len,
               const uint8_t tag[AUTH_TAG_BYTES]);

/* A key pair from a seed (deterministic: the simulator's), or random. */
void auth_signer_seed(struct auth_signer *s, const uint8_t seed[AUTH_SEED_BYTES]);
void auth_signer_new(struct auth_signer *s);

/* Epoch tickets: the coordinator's word that epoch of volume belongs to
 * the writer whose public key is writer_pk. */
void auth_ticket_sign(const struct auth_signer *coord, uint64_t volume, uint64_t epoch,
                      const uint8_t writer_pk[AUTH_PK_BYTES], uint8_t sig[AUTH_SIG_BYTES]);
int auth_ticket_ok(const uint8_t coord_pk[AUTH_PK_BYTES], uint64_t volume, uint64_t epoch,
                   const uint8_t *writer_pk, size_t pklen, const uint8_t *sig, size_t siglen);

/* Truncations: the writer's word that (from, to] is cut in its epoch. */
void auth_trunc_sign(const struct auth_signer *writer, uint64_t volume, uint64_t epoch,
                     uint64_t from, uint64_t to, uint8_t sig[AUTH_SIG_BYTES]);
int auth_trunc_ok(const uint8_t *writer_pk, size_t pklen, uint64_t volume, uint64_t epoch,
                  uint64_t from, uint64_t to, const uint8_t *sig, size_t siglen);

/* A node's registration, signed with the key in its data directory. */
void auth_id_sign(const struct auth_signer *node, const char *id, const char *az,
                  const char *addr, uint8_t sig[AUTH_SIG_BYTES]);
int auth_id_ok(const uint8_t *pk, size_t pklen, const char *id, const char *az,
               const char *addr, const uint8_t *sig, size_t siglen);

/* Roles (invariant 9: authority follows roles, not the key alone).
 *
 * Every connection has a binding: a hash of its handshake (both nonces and
 * the listener's address), the same at both ends and at no other
 * connection. A role proof signs the binding, so a proof seen on one
 * connection (frames are not encrypted) is worth nothing on another.
 *
 *   operator   auth_op_sign / _ok: the operator's signature (its key is
 *              DIR/operator.key, never given to nodes or replicas) on one
 *              request, the envelope packed with op_sig empty. The
 *              coordinator takes a writer-open, a drop, a fault or a
 *              manual failover only with it (coord/roles.c).
 *   writer     auth_writer_sign / _ok: the signature of the key an epoch's
 *              ticket names on (binding, volume, epoch): "the writer of
 *              epoch E speaks on this connection". The coordinator counts
 *              lease probes and engine reports as the writer's only with
 *              it, so no other member can keep a lost writer "alive" or
 *              report in its name. */
#define AUTH_BIND_BYTES 32
void auth_binding(const struct auth_hs *h, uint8_t out[AUTH_BIND_BYTES]);
void auth_op_sign(const struct auth_signer *op, const uint8_t bind[AUTH_BIND_BYTES],
                  const uint8_t *msg, size_t len, uint8_t sig[AUTH_SIG_BYTES]);
int auth_op_ok(const uint8_t *op_pk, const uint8_t bind[AUTH_BIND_BYTES], const uint8_t *msg,
               size_t len, const uint8_t *sig, size_t siglen);
void auth_writer_sign(const struct auth_signer *writer, const uint8_t bind[AUTH_BIND_BYTES],
                      uint64_t volume, uint64_t epoch, uint8_t sig[AUTH_SIG_BYTES]);
int auth_writer_ok(const uint8_t *writer_pk, size_t pklen, const uint8_t bind[AUTH_BIND_BYTES],
                   uint64_t volume, uint64_t epoch, const uint8_t *sig, size_t siglen);

/* Hex for logs and key files: out holds 2 * n + 1 bytes. */
void auth_hex(const uint8_t *in, size_t n, char *out);

#endif
