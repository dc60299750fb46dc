/*
 * bkfmt.h: backup objects as bytes, and the keys they live under.
 *
 * Keys (objstore.h), a folder per volume and PG, LSNs as 16 hex digits so
 * that keys sort as their LSNs do:
 *   v<VOL>/pg<PG>/log/<FROM>-<TO>   a BackupLog: the PG's records in (FROM, TO]
 *   v<VOL>/pg<PG>/base/<AT>-<MS>    a BackupBase: the PG's pages as of AT, staged
 *                                   at MS (unix ms: retention reads it)
 *   v<VOL>/retention                how long points stay restorable (text: ms)
 *
 * An object's bytes: "ALBK", the format (u32), the kind (u32: 1 log, 2
 * base), the payload's length (u64), the payload (the protobuf message,
 * proto/auralog.proto), then a sum (lib/sum.h, u32) over everything
 * before it; integers big-endian. An object that is short, long, torn or
 * of another kind fails its decode with a one-line why, never half-read.
 *
 * A decoded object is checked against its key and itself before anyone
 * uses it (the store is outside the cluster's trust: a file anyone could
 * have copied over):
 *   log   volume, PG and range as the key says; records in LSN order in
 *         (from, to], each well formed for the page size (rec_check: its
 *         own CRC too) and in the PG's pages; chained: each backlink is
 *         the record before it, the first one's at or below from.
 *   base  volume, PG and at as the key says; pages in order, in the PG,
 *         each page_size bytes.
 *
 * Interface:
 *   bk_key_log / bk_key_base   the key of an object
 *   bk_key_parse               what a key names (kind, volume, PG, LSNs)
 *   bk_encode                  an object's bytes (malloc'd)
 *   bk_decode_log / _base      bytes back to a checked message (free with
 *                              the protobuf free_unpacked)
 */
#ifndef AURALOG_BKFMT_H
#define AURALOG_BKFMT_H

#include <stddef.h>
#include <stdint.h>

#include "auralog.pb-c.h"

#define BK_FORMAT 1
#define BK_LOG    1
#define BK_BASE   2
#define BK_KEY_MAX 96

void bk_key_log(char *key, uint64_t vol, uint32_t pg, uint64_t from, uint64_t to);
void bk_key_base(char *key, uint64_t vol, uint32_t pg, uint64_t at, uint64_t ms);
void bk_key_retention(char *key, uint64_t vol);

/* The volume's retention in the store (v<VOL>/retention: ms as text):
 * get: 0 with *ms (BACKUP_RETENTION_MS, *set 0, when none is stored or
 * what is there is under a second), or OBJ_ERR with why; put: the store's
 * answer. */
struct objstore;
int bk_retention_get(struct objstore *o, uint64_t vol, uint64_t *ms, int *set, char *why,
                     size_t whylen);
int bk_retention_put(struct objstore *o, uint64_t vol, uint64_t ms, char *why, size_t whylen);
/* "v<VOL>/" and "v<VOL>/pg<PG>/": listing prefixes. */
void bk_prefix_vol(char *key, uint64_t vol);
void bk_prefix_pg(char *key, uint64_t vol, uint32_t pg);

struct bk_key {
  int kind;                  /* BK_LOG, BK_BASE */
  uint64_t vol;
  uint32_t pg;
  uint64_t a, b;             /* log: from, to; base: at, ms */
};
/* 0 and *k if key names a backup object, -1 if not (anything else in the
 * store: it is left alone). */
int bk_key_parse(const char *key, struct bk_key *k);

/* The framed bytes of a packed message of kind. */
uint8_t *bk_encode(int kind, const ProtobufCMessage *m, size_t *len);

Auralog__BackupLog *bk_decode_log(const char *key, const uint8_t *b, size_t n, char *why,
                                  size_t whylen);
Auralog__BackupBase *bk_decode_base(const char *key, const uint8_t *b, size_t n, char *why,
                                    size_t whylen);

#endif
