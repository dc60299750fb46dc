/*
 * member_int.h: what member.c (the steps, the tick, the probe) and
 * membercmd.c (the operator's commands, status) share: the coordinator's
 * membership state in memory (coord/memberc.h says what is durable) and
 * the lookups both use.
 */
#ifndef AURALOG_COORD_MEMBER_INT_H
#define AURALOG_COORD_MEMBER_INT_H

#include "coord/memberc.h"
#include "coord/placement.h"

/* A position in transition, as this coordinator began it (or found it,
 * after a restart). */
struct mmove {
  uint64_t vol;
  uint32_t pg, pos;
  char kind[8];                /* "repair", "drain", "replace" */
  unsigned long long at;
};

/* The current writer's report (M4 a): it uses mepoch of (vol, pg) since
 * its VCL was at. Only for epoch: a new writer's counts anew. */
struct madopt {
  uint64_t vol;
  uint32_t pg;
  uint64_t epoch, mepoch, at;
};

/* A node lost (silent past the repair bound), since its last sign of life. */
struct mlost {
  char node[NAME_MAX_LEN + 1];
  unsigned long long since;
};

/* A drain or replace the operator asked for: how many segments it began
 * with, and where a replace sends them. */
struct mdrain {
  char node[NAME_MAX_LEN + 1], to[NAME_MAX_LEN + 1];
  char kind[8];
  uint32_t total;
};

struct mstate {
  unsigned long long started, last_moves;
  int kick;                    /* try the moves at the next tick, whenever the last */
  struct mmove *mv;
  size_t nmv;
  struct madopt *ad;
  size_t nad;
  struct mlost *lost;
  size_t nlost;
  struct mdrain *dr;
  size_t ndr;
  uint64_t mttr[MTTR_SHOWN];
  size_t nmttr;
  /* A batch of steps (member_tick, member.c batch_begin): stored in one
   * synced metadata commit at its end, and only then told. */
  int batch;
  char (*tell)[NAME_MAX_LEN + 1];   /* nodes to send their Assign to */
  size_t ntell;
  char **events;                    /* journal "member" events, in order */
  size_t nevents;
  uint64_t *store;                  /* ids of the volumes changed in memory */
  size_t nstore;
};

/* PG pgno of vol: a data PG (vol->pgs[pgno], numbered pgno) or, for
 * BINLOG_PG, the volume's binlog PG (Volume.binlog, coord/cbinlog.c);
 * NULL if vol has no such PG. Membership treats the binlog PG exactly as
 * a data PG (M1-M7): every step names its PG by number through this, and
 * every walk over a volume's PGs goes through coord_vol_npgs_all /
 * coord_vol_pg_at (coord.h), the binlog PG last. */
const Auralog__Pg *mb_pg(const Auralog__Volume *vol, uint32_t pgno);
/* The index of position pos's next segment in pg, or -1. */
int mb_next_of(const Auralog__Pg *pg, uint32_t pos);
/* Segments (current or next) node id hosts, in every volume; *moving: of
 * its current ones, those whose position has a next. */
uint32_t mb_hosted(const struct coord *co, const char *id, uint32_t *moving);
struct mmove *mb_mv_find(struct mstate *ms, uint64_t vol, uint32_t pg, uint32_t pos);
struct madopt *mb_ad_find(struct mstate *ms, uint64_t vol, uint32_t pg);
struct mdrain *mb_dr_find(struct mstate *ms, const char *id);
/* Draining or retired: it takes no new segment. */
int mb_node_out(const struct cnode *n);
/* The nodes as placement sees them, with the segments each hosts (current
 * and next): pn[i] is co->nodes[i]; free it. */
struct pnode *mb_pnodes(const struct coord *co);
/* A batch of steps (mbatch.c): begun, ended (stored, synced, told). */
void mb_batch_begin(struct coord *co);
void mb_batch_end(struct coord *co);
/* Step mseq of volume co->vols[vi]: its PG pgc->pg is now pgc (which may
 * point into the old one). Stored now, or in a batch at its end. 0, or
 * -1 and why (nothing changed). */
int mb_store_pg(struct coord *co, size_t vi, const Auralog__Pg *pgc, uint64_t mseq, char *why,
                size_t whylen);
/* Tell the nodes in who their Assign and the journal event ev: now, or in
 * a batch once it is durable. */
void mb_tell(struct coord *co, char (*who)[NAME_MAX_LEN + 1], size_t nwho, const char *ev);
/* Set node n's state ("draining", "retired"), durably. */
void mb_set_state(struct coord *co, struct cnode *n, const char *state);

#endif
