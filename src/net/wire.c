/*
 * wire.c: frames (see wire.h): a 4-byte length and a packed Envelope;
 * error names and replies.
 *
 * protobuf-c accepts many random buffers and enforces no size limit, so two
 * guards stand between the network and the roles: the frame length is
 * compared with FRAME_MAX before allocating (here), and wire_check()
 * validates every field of what unpacked (wirecheck.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "net/wire.h"

static const char *errnames[] = {
  "ok", "bad frame", "bad message", "unknown segment", "stale epoch",
  "not complete", "out of range", "bad crc", "conflict", "disk full",
  "not found", "internal", "unavailable", "not authorized", "data loss",
  "stale membership",
};

const char *wire_errname(uint32_t code)
{
  if (code < sizeof errnames / sizeof errnames[0])
    return errnames[code];
  return "error";
}

uint8_t *wire_frame(const Env *env, size_t *len)
{
  return wire_frame_room(env, 0, len);
}

uint8_t *wire_frame_room(const Env *env, size_t room, size_t *len)
{
  size_t n = auralog__envelope__get_packed_size(env);
  if (n > FRAME_MAX)
    return NULL;
  uint8_t *buf = malloc(4 + n + room);
  if (buf == NULL)
    return NULL;
  put_be32(buf, (uint32_t)n);
  auralog__envelope__pack(env, buf + 4);
  *len = 4 + n;
  return buf;
}

int wire_parse(const uint8_t *buf, size_t n, Env **out, size_t *used,
               size_t *need, char *why, size_t whylen)
{
  return wire_parse_in(buf, n, NULL, out, used, need, why, whylen);
}

int wire_parse_in(const uint8_t *buf, size_t n, ProtobufCAllocator *alloc, Env **out,
                  size_t *used, size_t *need, char *why, size_t whylen)
{
  *out = NULL;
  *used = 0;
  *need = 4;
  if (n < 4)
    return 0;
  uint32_t len = get_be32(buf);
  if (len > FRAME_MAX) {
    snprintf(why, whylen, "frame of %u bytes is over the %u-byte limit",
             len, FRAME_MAX);
    return -1;
  }
  if (len == 0) {
    snprintf(why, whylen, "empty frame");
    return -1;
  }
  *need = 4 + (size_t)len;
  if (n < *need)
    return 0;
  Env *env = auralog__envelope__unpack(alloc, len, buf + 4);
  if (env == NULL) {
    snprintf(why, whylen, "frame of %u bytes is not an auralog message", len);
    return -1;
  }
  *out = env;
  *used = *need;
  return 1;
}

Env *wire_copy(const Env *env)
{
  size_t len = auralog__envelope__get_packed_size(env);
  uint8_t *buf = malloc(len + 1);
  if (buf == NULL)
    return NULL;
  auralog__envelope__pack(env, buf);
  Env *copy = auralog__envelope__unpack(NULL, len, buf);
  free(buf);
  return copy;
}

void wire_free(Env *env)
{
  if (env)
    auralog__envelope__free_unpacked(env, NULL);
}

void wire_error(Env *env, Auralog__Error *err, uint64_t req, uint32_t code,
                const char *msg)
{
  auralog__envelope__init(env);
  auralog__error__init(err);
  err->code = code;
  err->msg = (char *)msg;
  env->req = req;
  env->body_case = AURALOG__ENVELOPE__BODY_ERROR;
  env->error = err;
}
