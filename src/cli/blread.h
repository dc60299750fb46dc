/*
 * blread.h: a client of the volume's binlog (issue 29): reading committed
 * transactions from the binlog PG's segments in commit order, and the
 * coordinator's registered consumers (blread.c says how a reader stays
 * exact: no gap, no duplicate, no truncated transaction).
 *
 *   blpos_parse   "LSN" (after the whole transaction committed at LSN) or
 *                 "LSN:INDEX" (after that event of it)
 *   bl_open       find the volume and its binlog PG through the coordinator
 *   bl_fetch      the next transactions after a commit LSN, from the
 *                 freshest segment that answers
 *   bl_probe      ask every segment where it stands (status)
 *   bl_consumers  a BinlogConsumer request to the coordinator
 */
#ifndef AURALOG_BLREAD_H
#define AURALOG_BLREAD_H

#include <stddef.h>
#include <stdint.h>

#include "net/rpc.h"
#include "param.h"
#include "record.h"
#include "vfs/blfile.h"

/* A position: a transaction's commit LSN, and an event's index in it;
 * index -1: the whole transaction (everything at or below lsn). */
struct blpos {
  uint64_t lsn;
  int64_t index;
};

/* 0, or -1 with a one-line reason. */
int blpos_parse(const char *s, struct blpos *p, char *why, size_t whylen);

/* One segment of the binlog PG, as the reader last heard it. */
struct blseg {
  char node[NAME_MAX_LEN + 1];
  char az[4];
  char addr[ADDR_MAX_LEN + 1];
  struct rpc r;
  int open;
  unsigned long long retry_at;   /* a failed one is asked again after this */
  int answered;                  /* the last question had an answer (bl_probe) */
  uint64_t durable, first, last, bytes, epoch;
  char err[320];                 /* the last failure, in words */
};

struct blsrc {
  char coord[ADDR_MAX_LEN + 1];
  char volume[NAME_MAX_LEN + 1];
  uint64_t vol_id;
  struct blseg seg[NSLOTS];
  int nseg;
  int pref;                      /* the segment asked first */
  struct trunc *truncs;          /* the volume's truncations: what they cut is no commit */
  size_t ntruncs;
  unsigned long long opened_at, swept_at;
  struct rpc cr;                 /* the coordinator, for consumers (bl_consumers) */
  int copen;
  /* The community binlog (`--binlog-file`): the engine's own file, read
   * instead of the binlog PG (bl_open_file; "" otherwise). */
  char file[4096];
  struct blf_cursor fcur;        /* where its last batch ended */
};

/* Read the community binlog's file at path instead (vfs/blfile.h): frames
 * in XID order, which is commit order; a torn tail ends what is read. */
void bl_open_file(struct blsrc *b, const char *path);

#define BL_ERR      (-1)         /* no answer (the cluster, a node), or an error */
#define BL_NO_VOL   (-2)         /* no such volume */
#define BL_NO_BINLOG (-3)        /* the volume has no binlog PG */
#define BL_GAP      (-4)         /* retention released what was asked for */

/* Fill b for volume at coord. 0, or BL_* with a one-line reason. */
int bl_open(struct blsrc *b, const char *coord, const char *volume, char *why, size_t whylen);
void bl_close(struct blsrc *b);

/* The transactions committed after `after` that a segment vouches are
 * durable, in commit order, about max_bytes of them (0: the node's
 * default). lsn[i] is txn[i]'s commit LSN. */
struct blbatch {
  Auralog__BinlogTxn **txn;
  uint64_t *lsn;
  size_t n;
  uint64_t durable, first, last;  /* the answering segment's */
  int seg;                        /* which (index in b->seg) */
};
/* 0 (n may be 0: nothing new is durable), or BL_GAP / BL_ERR with a
 * one-line reason naming the positions. */
int bl_fetch(struct blsrc *b, uint64_t after, size_t max_bytes, struct blbatch *out,
             char *why, size_t whylen);
void bl_batch_free(struct blbatch *bt);

/* Ask every segment where it stands (each seg's answered, durable, first,
 * last, bytes, epoch, or err). Returns how many answered. */
int bl_probe(struct blsrc *b);

/* The wall time (commit) of the transaction committed at lsn, read from
 * any segment (0: not held anywhere, or unknown). */
uint64_t bl_wall_at(struct blsrc *b, uint64_t lsn);

/* One request to the coordinator about the volume's consumers: the
 * answer's BinlogConsumers (free with wire_free(*env)), or NULL with a
 * one-line reason (*code: the Error's code, or 0 if none came). */
Auralog__BinlogConsumers *bl_consumers(struct blsrc *b, const Auralog__BinlogConsumer *bc,
                                       Env **env, int *code, char *why, size_t whylen);

/* The number of milliseconds since the epoch (the consumer's clock). */
uint64_t bl_wall_now(void);

#endif
