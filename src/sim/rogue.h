/*
 * rogue.h: the rogue member's state, shared by its two halves in src/sim:
 * rogue.c, the attacker (what it sends, and when), and roguecheck.c, the
 * checks of what each request it sent changed at the coordinator or node
 * that got it (simint.h has their interface to the rest of the world).
 *
 * One attack is one request on a connection of its own; the receiver's
 * hook finds it by its request id (rogue_attack) and records whether it
 * arrived and took effect; the attacker records the answer, and counts
 * the outcome when the connection ends.
 */
#ifndef AURALOG_SIM_ROGUE_H
#define AURALOG_SIM_ROGUE_H

#include "sim/simint.h"

#define ROGUE_ADDR "x1:1"
#define COORD_ADDR "coord:1"
#define VOLUME_NAME "sim"
#define ROGUE_EVERY_MS 100     /* an attack every 10..this ms while a fault lasts */
#define ROGUE_WAIT_MS 1500     /* an attack's connection is closed after this */
#define ROGUE_INFLIGHT 64      /* attacks in flight at most */

enum { P_TRUNCATE, P_APPEND, P_BEFORE, P_SCAN, P_GOSSIP, P_NPATHS };

struct attack {
  int used, kind, how;
  int node;                  /* its target: a node's index, -1 the coordinator */
  uint64_t req, sent_at;
  struct ep *e;
  /* A truncation's: path, segment, range, and its signer (an index in
   * w->oldkeys; -1: forged). */
  int path, key;
  uint32_t pg;
  uint64_t epoch, from, to;
  int arrived, error, effect;
};

struct rogue {
  struct world *w;
  struct rng rng;
  struct simhost *h;
  struct auth_signer self;   /* its own key */
  struct auth_signer fake;   /* the "coordinator" its forged tickets come from */
  int active;                /* its faults in force */
  int unfinished;            /* ... of them rogue-unfinished: it signs with any old key */
  int ticking;               /* an attack is scheduled */
  uint64_t next_req;
  struct attack at[ROGUE_INFLIGHT];
};

/* The coordinator's record of the simulated volume (NULL: none, or down). */
const Auralog__Volume *rogue_coord_vol(const struct world *w);
/* The attack in flight with request id req (NULL: none). */
struct attack *rogue_attack(struct rogue *rg, uint64_t req);

#endif
