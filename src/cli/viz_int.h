/*
 * viz_int.h: what the pieces of `auralog viz` share (viz.c draws the
 * cluster, viz_log.c each PG's log, a row per segment): the colours the
 * legend repeats, a growing string for the DOT text, and the lookups of a
 * Status both need.
 */
#ifndef AURALOG_VIZ_INT_H
#define AURALOG_VIZ_INT_H

#include <stddef.h>
#include <stdint.h>

#include "net/wire.h"

/* Colours (the legend repeats them). */
#define C_DURABLE   "#a6d96a"   /* record <= VDL */
#define C_COMPLETE  "#fee08b"   /* VDL < record <= VCL */
#define C_PENDING   "#ffffff"   /* record > VCL: not at write quorum yet */
#define C_VDL       "#1a9850"
#define C_VCL       "#d8a000"
#define C_VDL_BAND  "#d5ecd4"   /* the VDL's column, through the segment rows */
#define C_VCL_BAND  "#f6e7b0"
#define C_TRUNC     "#f4a582"
#define C_TRUNC_BAND "#fbe0d0"
#define C_BEHIND    "#fdd49e"   /* a segment's SCL below its PG's best */
#define C_HELD      "#c6dbef"   /* a segment holds the record */
#define C_HOLE      "#e34a33"   /* it misses the record and holds later ones */
#define C_MISSING   "#fde0dd"   /* it misses the record and every later one */
#define C_DOWN      "#e0e0e0"
#define C_DOWN_LINE "#9e9e9e"
#define C_PART      "#fde0dd"
#define C_PART_LINE "#d7301f"
#define C_SLOW      "#fff3d6"
#define C_SLOW_LINE "#ec7014"
#define C_FLAG_LINE "#6a51a3"   /* stale pages, gossip off */
#define C_NEXT      "#e7d4e8"   /* an incoming next segment (member.h) */
#define C_NEXT_LINE "#762a83"
#define C_NEXT_MISS "#f7eef7"   /* a next segment has yet to get the record */
#define C_DRAIN     "#fff7e0"   /* a draining node: its segments move off */
#define C_DRAIN_LINE "#8c510a"
#define C_RETIRED   "#f0f0f0"

typedef unsigned long long ull;

/* A growing string. */
struct sb {
  char *s;
  size_t n, cap;
};
void sbf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text from the wire inside an HTML-like label, escaped. */
void sb_html(struct sb *b, const char *s);

/* The SCL node reported for pg; 0 with *known = 0 if it has not yet. */
uint64_t viz_scl_of(const Auralog__Status *st, const char *node, uint32_t pg, int *known);
/* What node's segment of pg reported (NULL if nothing yet). */
const Auralog__SegStat *viz_seg_of(const Auralog__Status *st, const char *node, uint32_t pg);
/* The node named id (NULL if none). */
const Auralog__NodeInfo *viz_node(const Auralog__Status *st, const char *id);

/* viz_member.c (member.h). The slot of Pg.segments[s]: its position for
 * a current segment, NCOPIES + its position for a next one. */
int viz_slot(const Auralog__Pg *pg, size_t s);
/* The index in pg->segments of position pos's next segment, -1 if none. */
int viz_next_of(const Auralog__Pg *pg, uint32_t pos);
/* The move in flight at pg's position pos (NULL if the status has none). */
const Auralog__MoveStat *viz_move_of(const Auralog__Status *st, uint32_t pg, uint32_t pos);
/* Next segment s of pg: still hydrating (SCL below its peers' best), and
 * the SCL it must reach to finish (M4). */
int viz_hydrating(const Auralog__Status *st, const Auralog__Pg *pg, size_t s);
uint64_t viz_target(const Auralog__Status *st, const Auralog__Pg *pg, size_t s);
/* The positions that can count towards a write quorum now (M1, M2). */
int viz_positions_count(const Auralog__Status *st, const Auralog__Pg *pg);
/* "850 ms", "5.2 s", "74 s". */
void viz_age(struct sb *b, uint64_t ms);
/* The membership panel, node "members"; 0 (nothing drawn) when no move is
 * in flight, no node is out of service and no repair has finished. */
int viz_draw_members(struct sb *b, const Auralog__Status *st, const Auralog__Volume *v);

/* viz_log.c: the log of pg as a table node "pgN": a header row of its
 * newest records (durable, complete, pending; CPLs) with the VDL, VCL and
 * truncation flags between them, then a row per segment: which of those
 * records it holds, its holes shaded, where its SCL stands. */
void viz_draw_log(struct sb *b, const Auralog__Status *st, const Auralog__Volume *v,
                  const Auralog__Pg *pg);

#endif
