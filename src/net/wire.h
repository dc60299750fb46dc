/*
 * wire.h: frames and messages between auralog processes.
 *
 * A frame is a 4-byte big-endian length followed by one packed
 * auralog.Envelope (proto/auralog.proto). The length is checked against
 * FRAME_MAX before anything is allocated; after unpacking, wire_check()
 * validates every field, so the roles only ever see well-formed messages.
 *
 * Interface:
 *   wire_frame()   pack an envelope into a newly allocated frame
 *   wire_parse()   take one frame off the front of a byte buffer
 *   wire_check()   validate an unpacked envelope, with a one-line reason
 *   wire_error()   build an Error envelope
 */
#ifndef AURALOG_WIRE_H
#define AURALOG_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "auralog.pb-c.h"

typedef Auralog__Envelope Env;

/* Error codes carried in auralog.Error. */
enum {
  ERR_NONE = 0,
  ERR_BAD_FRAME = 1,       /* length over FRAME_MAX, or bytes that do not unpack */
  ERR_BAD_MSG = 2,         /* unpacked, but a field is invalid */
  ERR_UNKNOWN_SEGMENT = 3, /* this node hosts no such (volume, pg) */
  ERR_STALE_EPOCH = 4,     /* writer's epoch is older than one seen: fenced */
  ERR_NOT_COMPLETE = 5,    /* read point above this segment's SCL */
  ERR_OUT_OF_RANGE = 6,    /* page outside the segment, bytes outside the page */
  ERR_BAD_CRC = 7,         /* a record's CRC does not match its content */
  ERR_CONFLICT = 8,        /* a record contradicts the PG's backlink chain */
  ERR_DISK_FULL = 9,       /* lmdb map full: nothing was stored */
  ERR_NOT_FOUND = 10,      /* no such volume */
  ERR_INTERNAL = 11,       /* storage failure: nothing was acknowledged */
  ERR_UNAVAILABLE = 12,    /* cannot do it now (not enough nodes, ...) */
  ERR_AUTH = 13,           /* no cluster key, or a ticket or signature that does not hold */
  ERR_DATA_LOSS = 14,      /* recovery proved a VDL below one a segment heard: acknowledged
                            * commits are missing (vfs/open.c); never retried */
  ERR_STALE_MEMBERSHIP = 15, /* a writer's or peer's membership epoch of a PG is below the
                            * PG's mepoch_min: it still counts a member taken out */
};

const char *wire_errname(uint32_t code);

/* A PG's membership as member.h describes it: NCOPIES current segments in
 * position order, then at most one next segment per position, in the same
 * AZ, all on distinct nodes. ERR_NONE, or ERR_BAD_MSG with a reason. */
int wire_check_pg(const Auralog__Pg *pg, char *why, size_t whylen);

/* Pack env into a frame (length prefix + payload). Returns malloc'd memory
 * and its length in *len, or NULL if the payload would exceed FRAME_MAX. */
uint8_t *wire_frame(const Env *env, size_t *len);
/* The same, with room bytes more allocated after the frame (*len does
 * not count them): where net.c puts the frame's tag without copying it. */
uint8_t *wire_frame_room(const Env *env, size_t room, size_t *len);

/* Look at the front of buf[0..n). Returns:
 *   0  a whole frame is not there yet (*need: bytes needed in total, if known)
 *   1  one envelope unpacked into *out (free with wire_free); *used bytes taken
 *  -1  bad frame: why says what was wrong; the connection must be closed. */
int wire_parse(const uint8_t *buf, size_t n, Env **out, size_t *used,
               size_t *need, char *why, size_t whylen);
/* The same, its messages from alloc (NULL: the system's; net.c gives a
 * frame arena, net/farena.h, and then does not wire_free it). */
int wire_parse_in(const uint8_t *buf, size_t n, ProtobufCAllocator *alloc, Env **out,
                  size_t *used, size_t *need, char *why, size_t whylen);

void wire_free(Env *env);

/* A copy of env that outlives the message it came in (free with
 * wire_free); NULL if it does not pack. */
Env *wire_copy(const Env *env);

/* Validate every field of an unpacked envelope: no unknown field in any
 * message at any depth (ERR_BAD_MSG), every LSN, VDL, SCL and truncation
 * point at most LSN_MAX and every epoch at most EPOCH_MAX
 * (ERR_OUT_OF_RANGE), and each message's own rules. Returns ERR_NONE, or
 * an ERR_* code with a one-line reason in why. */
int wire_check(const Env *env, char *why, size_t whylen);
/* A Fault action that is only a note for the journal (az-down, lab-start...). */
int wire_fault_note(const char *action);

/* Node and volume names: 1..NAME_MAX_LEN of [A-Za-z0-9_.-]. */
int wire_name_ok(const char *s);

/* Fill *env and *err as an Error reply to request req. */
void wire_error(Env *env, Auralog__Error *err, uint64_t req, uint32_t code,
                const char *msg);

/* Big-endian helpers, used for frame lengths and lmdb keys. */
static inline void put_be32(uint8_t *p, uint32_t v)
{
  p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}
static inline uint32_t get_be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void put_be64(uint8_t *p, uint64_t v)
{
  put_be32(p, (uint32_t)(v >> 32)); put_be32(p + 4, (uint32_t)v);
}
static inline uint64_t get_be64(const uint8_t *p)
{
  return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

#endif
