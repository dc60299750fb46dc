/*
 * binlogc.h: the binlog's registered consumers at the coordinator (issue
 * 29; binlogc.c says what a position is and who may move it).
 *
 *   blc_on_consumer   a BinlogConsumer request: register, move, rewind,
 *                     forget (the operator's) or list; answered with the
 *                     volume's BinlogConsumers, or an Error
 *   blc_assign_fill   put every volume's keep point (its consumers' lowest
 *                     position) into an Assign being built (coord_send_assign);
 *   blc_assign_done   ... and free what that allocated, once it is sent
 *   blc_tick          every tick: a volume whose lowest position changed has
 *                     its binlog PG's nodes sent an Assign, at most once per
 *                     BINLOG_KEEP_SEND_MS; positions of dropped volumes go
 *   blc_lowest        the lowest registered position of volume id vol: 1
 *                     with *keep, 0 when it has no consumer
 *   blc_free          memory only
 */
#ifndef AURALOG_BINLOGC_H
#define AURALOG_BINLOGC_H

#include <stdint.h>

#include "net/wire.h"

struct coord;
struct ep;

void blc_on_consumer(struct coord *co, struct ep *c, uint64_t req,
                     const Auralog__BinlogConsumer *bc);
void blc_assign_fill(struct coord *co, Auralog__Assign *as);
void blc_assign_done(Auralog__Assign *as);
void blc_tick(struct coord *co);
int blc_lowest(struct coord *co, uint64_t vol, uint64_t *keep);
void blc_free(struct coord *co);

#endif
