/*
 * status.h: what the cluster looks like, as the coordinator sees it.
 */
#ifndef AURALOG_STATUS_H
#define AURALOG_STATUS_H

#include <stdio.h>
#include "net/wire.h"

/* Ask the coordinator at coord for the status of volume. Returns the reply
 * (body status; free with wire_free) or NULL with a reason in why. */
Env *status_fetch(const char *coord, const char *volume, char *why, size_t whylen);

/* The contract's JSON object (DESIGN.md §6), as a malloc'd string. */
char *status_json(const Auralog__Status *st);

/* The dashboard history's sample (coord/history.c): small at any size. */
char *status_sample_json(const Auralog__Status *st, size_t npgs);

/* A compact table for people. */
void status_table(const Auralog__Status *st, FILE *f);

/* status_log.c, for the two above: the log's edge (the LAL window, the
 * records short of a write quorum and who acknowledged each) and fenced
 * engines still running. */
struct cJSON;
void status_log_json(const Auralog__Status *st, struct cJSON *o);
void status_log_table(const Auralog__Status *st, FILE *f);
/* ... and for the dashboard: the newest records with the segments that
 * hold each ("log_tail"), and the faults heard of lately ("faults"). */
void status_recent_json(const Auralog__Status *st, struct cJSON *o);
/* The LSNs the writer handed out in its LAL window: above its VDL, or
 * above its recovery's truncation if higher (where its window begins). */
uint64_t status_lal_used(const Auralog__EngineStat *e);
/* The volume's truncations: the newest few, and how many in all. */
void status_truncs_table(const Auralog__Status *st, FILE *f);

/* status_member.c: membership changes (moves in flight, times to repair)
 * and a node's state as status shows it: "up", "down", "draining",
 * "retired". */
void status_member_json(const Auralog__Status *st, struct cJSON *o);
void status_member_table(const Auralog__Status *st, FILE *f);
const char *status_node_state(const Auralog__NodeInfo *n);

#endif
