/*
 * memberc.h: the coordinator's side of PG membership changes and repair
 * (paper §2.2-2.3; Verbitski et al. 2018; the rules M1-M7 are member.h's).
 * Pure: no clock but io_now, no I/O but the core's io; coord/member.c.
 *
 * Durable (in each Volume, stored with meta_put_volume before anyone hears
 * of a change): Volume.mseq, each PG's mepoch and mepoch_min, each
 * segment's pos, next and since; a node's NodeInfo.state ("draining",
 * "retired"). In memory only: the current writer's adoption reports (M4
 * a; forgotten with a restart or a new epoch), when each move began, the
 * nodes lost and the last times to repair.
 *
 * The steps, each a new mepoch of the PG (= ++Volume.mseq), stored, then
 * an Assign to every node concerned (the PG's nodes before and after):
 *   member_begin   position pos gets a next segment on node `to`
 *   member_finish  its next segment becomes current, the old one leaves
 *                  (mepoch_min = the next's since, M5)
 *   member_regrow  its next segment goes to node `to` instead
 *   member_abort   its next segment is given up
 * Each returns 0, or -1 with a one-line reason and nothing changed. A PG
 * is named by its number: a data PG's, or BINLOG_PG for the volume's
 * binlog PG, which every step treats as a data PG (member.h).
 *
 * Events the core hands on:
 *   member_init / member_free    with coord_init / coord_free
 *   member_probe   a lease probe: note the writer's adoption (only if
 *                  `writer`: roles.c R4 proved it is the current epoch's),
 *                  fill the answer's mseq and changed PGs (free *pgs; the
 *                  binlog PG's report and change travel in Volume.binlog,
 *                  which points into the volume)
 *   member_tick    repair (M7), drains, finishes (M4), retirements, MTTR
 *   member_on_cmd  `auralog node drain|replace|show` (operator: roles.c)
 *   member_status  a Status's moves and MTTRs (member_status_done frees)
 */
#ifndef AURALOG_COORD_MEMBERC_H
#define AURALOG_COORD_MEMBERC_H

#include "coord/coord.h"

struct mstate;

void member_init(struct coord *co);
void member_free(struct coord *co);

int member_begin(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, const char *to,
                 const char *kind, char *why, size_t whylen);
int member_finish(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, char *why,
                  size_t whylen);
int member_regrow(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, const char *to,
                  char *why, size_t whylen);
int member_abort(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, char *why,
                 size_t whylen);

void member_probe(struct coord *co, size_t vi, const Auralog__Volume *probe, int writer,
                  Auralog__Volume *answer);
void member_tick(struct coord *co);
void member_on_cmd(struct coord *co, struct ep *c, uint64_t req, const Auralog__NodeCmd *nc);
void member_status(struct coord *co, const Auralog__Volume *v, Auralog__Status *st);
void member_status_done(Auralog__Status *st);

/* Node id registered at addr: every segment of it names addr from now. */
void member_follow_node(struct coord *co, const char *id, const char *addr);

/* A heartbeat showing a segment behind its PG's membership (a lost
 * Assign): send the node its whole Assign again (rate-limited). */
void member_check_node(struct coord *co, struct cnode *n, const Auralog__Heartbeat *hb);

/* How long a node must be silent before its segments move (0: never). */
unsigned long long member_repair_after(const struct coord *co);

#endif
