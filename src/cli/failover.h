/*
 * failover.h: the tools' side of failover (coord/failover.c has the rules):
 * who writes a volume now, asked of the coordinator, and `auralog failover`.
 * `auralog cluster up` and `auralog bench failover` find the writer with
 * fo_writer; `auralog sql` and `auralog fault` with locate.h, which also
 * learns the replicas serving now.
 */
#ifndef AURALOG_FAILOVER_H
#define AURALOG_FAILOVER_H

#include <stddef.h>
#include "net/wire.h"

/* Ask the coordinator at coord who writes volume: the Writer answer (the
 * caller wire_free's the envelope; its ->writer), or NULL with why. */
Env *fo_writer(const char *coord, const char *volume, char *why, size_t whylen);

/* The writer's SQL address into out (len bytes): 0, or -1 with why (no
 * coordinator, no volume, or no writer known yet). */
int fo_writer_addr(const char *coord, const char *volume, char *out, size_t len, char *why,
                   size_t whylen);

#endif
