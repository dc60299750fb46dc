/*
 * auth.c: the cluster key's handshake, frame MACs and signatures (see
 * auth.h for the threat model). Every primitive is libsodium's: keyed
 * BLAKE2b (crypto_generichash) for proofs, session keys and frame tags,
 * Ed25519 (crypto_sign_detached) for tickets, truncations and node
 * identities. Each use hashes a distinct label first, so a value computed
 * for one purpose is never accepted for another.
 */
#include <sodium.h>
#include <string.h>

#include "net/auth.h"

int auth_init(void)
{
  return sodium_init() < 0 ? -1 : 0;
}

void auth_random(void *buf, size_t n)
{
  randombytes_buf(buf, n);
}

static void put64(uint8_t *p, uint64_t v)
{
  for (int i = 7; i >= 0; i--) {
    p[i] = (uint8_t)v;
    v >>= 8;
  }
}

/* Keyed BLAKE2b of label || ln || cn || addr (each NUL-terminated or of
 * fixed size: nothing can spill from one into the next). */
static void kdf(const struct auth_key *key, const char *label, const struct auth_hs *h,
                uint8_t out[32])
{
  crypto_generichash_state st;
  crypto_generichash_init(&st, key->k, sizeof key->k, 32);
  crypto_generichash_update(&st, (const uint8_t *)label, strlen(label) + 1);
  crypto_generichash_update(&st, h->ln, AUTH_NONCE_BYTES);
  crypto_generichash_update(&st, h->cn, AUTH_NONCE_BYTES);
  crypto_generichash_update(&st, (const uint8_t *)h->addr, strlen(h->addr) + 1);
  crypto_generichash_final(&st, out, 32);
}

void auth_proof(const struct auth_key *key, int listener, const struct auth_hs *h,
                uint8_t out[AUTH_PROOF_BYTES])
{
  kdf(key, listener ? "auralog v1 listener proof" : "auralog v1 connector proof", h, out);
}

int auth_proof_ok(const struct auth_key *key, int listener, const struct auth_hs *h,
                  const uint8_t *got, size_t gotlen)
{
  uint8_t want[AUTH_PROOF_BYTES];
  if (gotlen != AUTH_PROOF_BYTES)
    return 0;
  auth_proof(key, listener, h, want);
  return sodium_memcmp(want, got, AUTH_PROOF_BYTES) == 0;
}

void auth_session(const struct auth_key *key, int listener, const struct auth_hs *h,
                  struct auth_sess *s)
{
  uint8_t l2c[32], c2l[32];
  kdf(key, "auralog v1 listener to connector", h, l2c);
  kdf(key, "auralog v1 connector to listener", h, c2l);
  memcpy(s->send_key, listener ? l2c : c2l, 32);
  memcpy(s->recv_key, listener ? c2l : l2c, 32);
  s->send_seq = s->recv_seq = 0;
  sodium_memzero(l2c, sizeof l2c);
  sodium_memzero(c2l, sizeof c2l);
}

/* The tag of frame number seq under k. */
static void tag_of(const uint8_t k[32], uint64_t seq, const uint8_t *frame, size_t len,
                   uint8_t tag[AUTH_TAG_BYTES])
{
  uint8_t sb[8];
  put64(sb, seq);
  crypto_generichash_state st;
  crypto_generichash_init(&st, k, 32, AUTH_TAG_BYTES);
  crypto_generichash_update(&st, sb, sizeof sb);
  crypto_generichash_update(&st, frame, len);
  crypto_generichash_final(&st, tag, AUTH_TAG_BYTES);
}

void auth_seal(struct auth_sess *s, const uint8_t *frame, size_t len,
               uint8_t tag[AUTH_TAG_BYTES])
{
  tag_of(s->send_key, s->send_seq++, frame, len, tag);
}

int auth_check(struct auth_sess *s, const uint8_t *frame, size_t len,
               const uint8_t tag[AUTH_TAG_BYTES])
{
  uint8_t want[AUTH_TAG_BYTES];
  tag_of(s->recv_key, s->recv_seq, frame, len, want);
  if (sodium_memcmp(want, tag, AUTH_TAG_BYTES) != 0)
    return 0;
  s->recv_seq++;
  return 1;
}

void auth_signer_seed(struct auth_signer *s, const uint8_t seed[AUTH_SEED_BYTES])
{
  crypto_sign_seed_keypair(s->pk, s->sk, seed);
}

void auth_signer_new(struct auth_signer *s)
{
  crypto_sign_keypair(s->pk, s->sk);
}

/* ---- signed statements ---------------------------------------------------- */

/* A statement is a label and fixed-width fields: what is signed is never
 * ambiguous (no field can spill into the next). */
struct stmt {
  uint8_t b[256];
  size_t n;
};

static void st_label(struct stmt *m, const char *label)
{
  m->n = 0;
  size_t l = strlen(label) + 1;
  memcpy(m->b, label, l);
  m->n = l;
}

static void st_u64(struct stmt *m, uint64_t v)
{
  put64(m->b + m->n, v);
  m->n += 8;
}

static void st_bytes(struct stmt *m, const uint8_t *p, size_t n)
{
  memcpy(m->b + m->n, p, n);
  m->n += n;
}

/* A string field: its length, then its bytes (names are short, wire.c
 * checks them). */
static int st_str(struct stmt *m, const char *s)
{
  size_t l = strlen(s);
  if (l > 64 || m->n + 8 + l > sizeof m->b)
    return -1;
  st_u64(m, l);
  st_bytes(m, (const uint8_t *)s, l);
  return 0;
}

static void sign(const struct auth_signer *k, const struct stmt *m, uint8_t sig[AUTH_SIG_BYTES])
{
  crypto_sign_detached(sig, NULL, m->b, m->n, k->sk);
}

static int verify(const uint8_t *pk, size_t pklen, const struct stmt *m, const uint8_t *sig,
                  size_t siglen)
{
  if (pk == NULL || sig == NULL || pklen != AUTH_PK_BYTES || siglen != AUTH_SIG_BYTES)
    return 0;
  return crypto_sign_verify_detached(sig, m->b, m->n, pk) == 0;
}

static void ticket_stmt(struct stmt *m, uint64_t volume, uint64_t epoch, const uint8_t *pk)
{
  st_label(m, "auralog v1 epoch ticket");
  st_u64(m, volume);
  st_u64(m, epoch);
  st_bytes(m, pk, AUTH_PK_BYTES);
}

void auth_ticket_sign(const struct auth_signer *coord, uint64_t volume, uint64_t epoch,
                      const uint8_t writer_pk[AUTH_PK_BYTES], uint8_t sig[AUTH_SIG_BYTES])
{
  struct stmt m;
  ticket_stmt(&m, volume, epoch, writer_pk);
  sign(coord, &m, sig);
}

int auth_ticket_ok(const uint8_t coord_pk[AUTH_PK_BYTES], uint64_t volume, uint64_t epoch,
                   const uint8_t *writer_pk, size_t pklen, const uint8_t *sig, size_t siglen)
{
  struct stmt m;
  if (writer_pk == NULL || pklen != AUTH_PK_BYTES)
    return 0;
  ticket_stmt(&m, volume, epoch, writer_pk);
  return verify(coord_pk, AUTH_PK_BYTES, &m, sig, siglen);
}

static void trunc_stmt(struct stmt *m, uint64_t volume, uint64_t epoch, uint64_t from,
                       uint64_t to)
{
  st_label(m, "auralog v1 truncation");
  st_u64(m, volume);
  st_u64(m, epoch);
  st_u64(m, from);
  st_u64(m, to);
}

void auth_trunc_sign(const struct auth_signer *writer, uint64_t volume, uint64_t epoch,
                     uint64_t from, uint64_t to, uint8_t sig[AUTH_SIG_BYTES])
{
  struct stmt m;
  trunc_stmt(&m, volume, epoch, from, to);
  sign(writer, &m, sig);
}

int auth_trunc_ok(const uint8_t *writer_pk, size_t pklen, uint64_t volume, uint64_t epoch,
                  uint64_t from, uint64_t to, const uint8_t *sig, size_t siglen)
{
  struct stmt m;
  trunc_stmt(&m, volume, epoch, from, to);
  return verify(writer_pk, pklen, &m, sig, siglen);
}

static int id_stmt(struct stmt *m, const char *id, const char *az, const char *addr)
{
  st_label(m, "auralog v1 node registration");
  return st_str(m, id) || st_str(m, az) || st_str(m, addr) ? -1 : 0;
}

void auth_id_sign(const struct auth_signer *node, const char *id, const char *az,
                  const char *addr, uint8_t sig[AUTH_SIG_BYTES])
{
  struct stmt m;
  if (id_stmt(&m, id, az, addr) != 0) {
    memset(sig, 0, AUTH_SIG_BYTES);
    return;
  }
  sign(node, &m, sig);
}

int auth_id_ok(const uint8_t *pk, size_t pklen, const char *id, const char *az,
               const char *addr, const uint8_t *sig, size_t siglen)
{
  struct stmt m;
  return id_stmt(&m, id, az, addr) == 0 && verify(pk, pklen, &m, sig, siglen);
}

/* ---- roles ---------------------------------------------------------------- */

void auth_binding(const struct auth_hs *h, uint8_t out[AUTH_BIND_BYTES])
{
  crypto_generichash_state st;
  static const char label[] = "auralog v1 connection binding";
  crypto_generichash_init(&st, NULL, 0, AUTH_BIND_BYTES);
  crypto_generichash_update(&st, (const uint8_t *)label, sizeof label);
  crypto_generichash_update(&st, h->ln, AUTH_NONCE_BYTES);
  crypto_generichash_update(&st, h->cn, AUTH_NONCE_BYTES);
  crypto_generichash_update(&st, (const uint8_t *)h->addr, strlen(h->addr) + 1);
  crypto_generichash_final(&st, out, AUTH_BIND_BYTES);
}

static void op_stmt(struct stmt *m, const uint8_t bind[AUTH_BIND_BYTES], const uint8_t *msg,
                    size_t len)
{
  uint8_t h[32];
  crypto_generichash(h, sizeof h, msg, len, NULL, 0);
  st_label(m, "auralog v1 operator request");
  st_bytes(m, bind, AUTH_BIND_BYTES);
  st_bytes(m, h, sizeof h);
}

void auth_op_sign(const struct auth_signer *op, const uint8_t bind[AUTH_BIND_BYTES],
                  const uint8_t *msg, size_t len, uint8_t sig[AUTH_SIG_BYTES])
{
  struct stmt m;
  op_stmt(&m, bind, msg, len);
  sign(op, &m, sig);
}

int auth_op_ok(const uint8_t *op_pk, const uint8_t bind[AUTH_BIND_BYTES], const uint8_t *msg,
               size_t len, const uint8_t *sig, size_t siglen)
{
  struct stmt m;
  op_stmt(&m, bind, msg, len);
  return verify(op_pk, AUTH_PK_BYTES, &m, sig, siglen);
}

static void writer_stmt(struct stmt *m, const uint8_t bind[AUTH_BIND_BYTES], uint64_t volume,
                        uint64_t epoch)
{
  st_label(m, "auralog v1 writer on this connection");
  st_bytes(m, bind, AUTH_BIND_BYTES);
  st_u64(m, volume);
  st_u64(m, epoch);
}

void auth_writer_sign(const struct auth_signer *writer, const uint8_t bind[AUTH_BIND_BYTES],
                      uint64_t volume, uint64_t epoch, uint8_t sig[AUTH_SIG_BYTES])
{
  struct stmt m;
  writer_stmt(&m, bind, volume, epoch);
  sign(writer, &m, sig);
}

int auth_writer_ok(const uint8_t *writer_pk, size_t pklen, const uint8_t bind[AUTH_BIND_BYTES],
                   uint64_t volume, uint64_t epoch, const uint8_t *sig, size_t siglen)
{
  struct stmt m;
  writer_stmt(&m, bind, volume, epoch);
  return verify(writer_pk, pklen, &m, sig, siglen);
}

void auth_hex(const uint8_t *in, size_t n, char *out)
{
  sodium_bin2hex(out, 2 * n + 1, in, n);
}
