/*
 * proof.c: role proofs on envelopes (see proof.h and auth.h).
 *
 * The operator signs the envelope as packed with op_sig empty: the
 * coordinator packs what it received the same way (protobuf-c packs a
 * message it unpacked into the same bytes: wire.c refuses unknown fields,
 * the one case where it would not) and checks the signature over that and
 * the connection's binding. So a signed drop of volume "a" is not a drop
 * of "b", and a signed request seen on one connection is worth nothing on
 * another (frames are not encrypted: any member on the path reads them).
 */
#include <stdlib.h>

#include "net/proof.h"

const char *role_needs_op(const Env *env)
{
  switch (env->body_case) {
  case AURALOG__ENVELOPE__BODY_OPEN_VOLUME:
    /* A promotion's conditional open (if_epoch) is the coordinator's own
     * choice: it checks that one against the replica it chose. */
    if (env->open_volume->recreate)
      return "create a volume whose name was dropped";
    if (env->open_volume->writer && env->open_volume->if_epoch == 0)
      return "open a volume as its writer (a new epoch)";
    return NULL;
  case AURALOG__ENVELOPE__BODY_DROP_VOLUME:
    return "drop a volume";
  case AURALOG__ENVELOPE__BODY_FAULT:
    return "inject faults or write the cluster's journal";
  case AURALOG__ENVELOPE__BODY_FAILOVER:
    return "force a failover";
  case AURALOG__ENVELOPE__BODY_NODE_CMD:
    return "drain or replace a storage node";
  case AURALOG__ENVELOPE__BODY_BINLOG_CONSUMER:   /* coord/binlogc.c C2 */
    return env->binlog_consumer->forget ? "forget a binlog consumer" : NULL;
  default:
    return NULL;
  }
}

/* env packed with op_sig empty: what the operator signs. */
static uint8_t *unsigned_bytes(const Env *env, size_t *len)
{
  Env e = *env;
  e.op_sig = (ProtobufCBinaryData){0, NULL};
  *len = auralog__envelope__get_packed_size(&e);
  uint8_t *buf = malloc(*len ? *len : 1);
  if (buf)
    auralog__envelope__pack(&e, buf);
  return buf;
}

int role_op_seal(Env *env, const struct auth_signer *op, const uint8_t bind[AUTH_BIND_BYTES],
                 uint8_t sig[AUTH_SIG_BYTES])
{
  size_t len;
  uint8_t *buf = unsigned_bytes(env, &len);
  if (buf == NULL)
    return -1;
  auth_op_sign(op, bind, buf, len, sig);
  free(buf);
  env->op_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sig};
  return 0;
}

int role_op_ok(const uint8_t op_pk[AUTH_PK_BYTES], const uint8_t bind[AUTH_BIND_BYTES],
               const Env *env)
{
  if (env->op_sig.len != AUTH_SIG_BYTES)
    return 0;
  size_t len;
  uint8_t *buf = unsigned_bytes(env, &len);
  if (buf == NULL)
    return 0;
  int ok = auth_op_ok(op_pk, bind, buf, len, env->op_sig.data, env->op_sig.len);
  free(buf);
  return ok;
}

void role_writer_seal(Env *env, const struct auth_signer *w,
                      const uint8_t bind[AUTH_BIND_BYTES], uint64_t volume, uint64_t epoch,
                      uint8_t sig[AUTH_SIG_BYTES])
{
  auth_writer_sign(w, bind, volume, epoch, sig);
  env->writer_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sig};
}

int role_writer_ok(const uint8_t *pk, size_t pklen, const uint8_t bind[AUTH_BIND_BYTES],
                   uint64_t volume, uint64_t epoch, const Env *env)
{
  return auth_writer_ok(pk, pklen, bind, volume, epoch, env->writer_sig.data,
                        env->writer_sig.len);
}
