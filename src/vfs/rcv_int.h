/*
 * rcv_int.h: the state of a writer's recovery (vfs/open.c), shared by its
 * two halves: open.c, what the three rounds ask and conclude, and
 * rcvround.c, how a round's requests reach every segment and who is
 * waited for (rule W). Nothing outside them includes this.
 */
#ifndef AURALOG_RCV_INT_H
#define AURALOG_RCV_INT_H

#include "vfs/recovery.h"
#include "vfs/volume_int.h"

enum { R_STATE = 1, R_SCAN, R_ADOPT, R_DONE, R_FAILED };

/* The requests of one round, built up as they are added; request i goes
 * out as req id base + i, and its answer lands in rep[i]. */
struct round {
  Env **req;                 /* owned: each with its body */
  int *node;                 /* index in v->nodes of each */
  size_t *seg;               /* p * NCOPIES + s of each */
  Env **rep;
  uint8_t *sent;
  size_t n, cap, left;       /* left: neither answered nor given up */
  uint64_t base;
  /* When it was sent, its latest answer came, and (0: not yet) when every
   * PG was seen to have a write quorum of answers (quorum_in_hand). */
  unsigned long long t0, heard_at, quorum_at;
};

/* PGs by index p < npgs: the data PGs 0..ndata-1, then the binlog PG (if
 * the volume has one) at index ndata, numbered BINLOG_PG everywhere else
 * (rpg; ipg the other way). Recovery treats it as any PG: its read and
 * write quorums, its chain, its truncation; a binlog record is a CPL like
 * any other, so the walk (recovery.c) proves the VDL across it. */
struct rcv {
  struct volume *v;
  uint64_t vol_id;
  size_t npgs, nk, ndata;
  int phase, page;
  unsigned long long t0;
  struct round cur;
  void (*free_body)(Env *);
  /* Per node of v->nodes: given up; answers awaited; last progress. */
  uint8_t *gone;
  size_t *left;
  unsigned long long *last;
  /* Per node: when its requests of the round went last (first or again),
   * and the silence it is allowed before they go again (rule W). */
  unsigned long long *asked, *patience;
  size_t nn;
  /* What the round waits for, for the engine's reports (rcv_progress). */
  char progress[160];
  /* Rule W at work, for the simulator's counts (rcv_counts): requests
   * asked again of silent nodes; 1 if a returning node ended it. */
  uint64_t asked_again, restarted;
  /* What the rounds learned. */
  int clean;
  uint64_t hint, max_held, trunc_to, vdl, to;
  struct trunc *tr;
  size_t ntr;
  struct rmeta *rm;
  size_t nr, caprm, nadopt;
  Env **scans;               /* every scan answer, kept: rm points into them */
  size_t nscans;
  uint64_t *start, *tails, *after;
  uint8_t *live, *want;      /* live: answered every round so far */
  uint64_t *heard;           /* per segment: the highest VDL it said it heard */
  int err;                   /* failed: ERR_UNAVAILABLE (a quorum missing: another
                              * attempt may succeed), ERR_STALE_EPOCH, ERR_DATA_LOSS */
  Auralog__TruncRange **tp, *tv, wtr;
  /* The commit record a community binlog's roll-forward wrote (rollforward;
   * NULL: none), with its MTR shape. */
  Rec *rf;
  Auralog__PgLast *rf_ml, **rf_mlp;
  char why[512];             /* the alarm names segments, nodes and LSNs */
};

/* rcvround.c: a round's requests, built up (rcv_round_add: request i goes
 * out as req id base + i), sent to every node at once (rcv_ask) and freed
 * (rcv_round_free). */
Env *rcv_round_add(struct round *r, int node, size_t seg);
void rcv_round_free(struct round *r, void (*free_body)(Env *));
void rcv_ask(struct rcv *c, void (*free_body)(Env *));

/* open.c: the round in flight is answered (or given up): go on; or it
 * failed, c->err and c->why saying why. */
void rcv_step(struct rcv *c);
void rcv_fail(struct rcv *c);
/* open.c: did reply rep say a newer writer exists (then c->why says
 * so)? PG index p's number. */
int rcv_stale(struct rcv *c, const Env *rep);
uint32_t rcv_pg_no(const struct rcv *c, size_t p);

/* rcvadopt.c: round 3, sent when round 2 proved the VDL; its answers. */
void rcv_adopt_ask(struct rcv *c);
void rcv_adopt_done(struct rcv *c);

#endif
