/*
 * keyfile.h: the cluster key on disk, and the one this process uses (a
 * driver: the only file that reads key files; what the key proves is in
 * auth.h).
 *
 *   key_create  write a new random key to path (mode 0600), unless a file
 *               is there already (then 0, untouched)
 *   key_read    read a key file; refuses one that others may read
 *   key_get     the process's key, loaded once: $AURALOG_KEY (main.c sets
 *               it from --key), else cluster.key in the directory given
 *               to key_use_dir, $AURALOG_DIR or ~/.auralog. NULL with a
 *               one-line reason when there is none.
 *   key_set     use this key (tests, bench)
 *   key_signer  a role's own key pair, kept in its data directory
 */
#ifndef AURALOG_KEYFILE_H
#define AURALOG_KEYFILE_H

#include <stddef.h>
#include "net/auth.h"

int key_create(const char *path, char *why, size_t whylen);
int key_read(const char *path, struct auth_key *k, char *why, size_t whylen);
void key_use_dir(const char *dir);
void key_path(char *out, size_t n);
const struct auth_key *key_get(char *why, size_t whylen);
void key_set(const struct auth_key *k);
/* AURALOG_AUTH=off: connections skip the handshake and frame MACs, for
 * `auralog bench`'s with-and-without comparison only (net.c listens on
 * loopback addresses alone in this mode). Read at each connection. */
int key_auth_off(void);

/* A role's own signing key pair (a node's identity, the coordinator's
 * ticket key), from the seed kept at path, made there (0600) if none. */
int key_signer(const char *path, struct auth_signer *sg, char *why, size_t whylen);

/* The operator (auth.h, roles): op_use(1) says this process acts for the
 * operator (main.c: the commands a person types and the engine; never a
 * node, a replica or the coordinator). op_get: its signer, loaded once
 * from $AURALOG_OPERATOR or DIR/operator.key; NULL with a one-line reason
 * when not allowed or none. op_set: use this one (tests, the simulator;
 * NULL: none). op_pub_read: the public key from an operator.key or an
 * operator.pub file; op_pub_write: DIR/operator.pub from DIR/operator.key.
 * op_use_dir: the operator key of the cluster in DIR first (a command that
 * turns to another cluster midway: lab 6's namespace cluster). */
void op_use(int on);
void op_use_dir(const char *dir);
void op_path(char *out, size_t n);
const struct auth_signer *op_get(char *why, size_t whylen);
void op_set(const struct auth_signer *s);
int op_pub_read(const char *path, uint8_t pk[AUTH_PK_BYTES], char *why, size_t whylen);
int op_pub_write(const char *key_path, const char *pub_path, char *why, size_t whylen);

#endif
