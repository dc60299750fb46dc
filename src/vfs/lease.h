/*
 * lease.h: the writer's read lease (DESIGN.md §4, invariant 5), as a pure
 * state machine. Epochs fence writers as in Verbitski et al., SIGMOD 2018
 * (§4.3 of the 2017 paper for the volume epoch).
 *
 * A writer that a newer one has fenced learns it from storage at its next
 * write; until then it could go on answering reads from its cache with
 * data the new writer has since changed. The lease bounds that: only the
 * coordinator hands out epochs (and stores each one before anyone hears
 * of it), so the engine asks it for the volume's current epoch every
 * ENGINE_STAT_MS (a probe) and notes when each probe left.
 *
 * The rule: an answer naming the engine's own epoch proves that no newer
 * epoch existed when the coordinator answered, so none existed when the
 * probe left (epochs only grow). Let s be the send time of the newest
 * probe so answered; at any time t < s + duration, a newer epoch, if one
 * exists, appeared after s: less than `duration` ago. So the engine, which
 * serves only while the lease is valid, stops serving at most `duration`
 * after a newer writer took its epoch, whatever the network delays: only
 * the engine's own monotonic clock is involved, never the coordinator's.
 *
 * An answer naming a newer epoch fences the engine for good (whichever
 * probe it answers). An answer naming our epoch renews nothing if it
 * answers no probe this lease remembers; one naming an older epoch
 * changes nothing. A lease never renewed (the coordinator is
 * unreachable, or does not answer) runs out: the engine then refuses to
 * serve until an answer renews it.
 *
 * No I/O, no clock, no threads: the engine server (vfs/probe.c) passes the
 * times in and calls these under its own lock.
 */
#ifndef AURALOG_LEASE_H
#define AURALOG_LEASE_H

#include <stddef.h>
#include <stdint.h>

#define LEASE_PROBES 16      /* unanswered probes remembered; older ones are forgotten */

struct lease {
  uint64_t epoch;                 /* the engine's own */
  uint64_t fenced_by;             /* > 0: a newer epoch the coordinator named */
  int granted;                    /* granted_at holds a send time */
  unsigned long long granted_at;  /* send time of the newest probe answered with epoch */
  struct {
    uint64_t id;
    unsigned long long at;
  } out[LEASE_PROBES];            /* probes sent, not yet answered, oldest first */
  unsigned nout;
};

enum lease_event {
  LEASE_RENEWED,             /* the answer named our epoch: valid from its probe's send time */
  LEASE_FENCED,              /* the answer named a newer epoch: fenced for good */
  LEASE_IGNORED,             /* an older epoch, or no probe we remember */
};

/* A lease for epoch, first granted at opened_at: the time the request that
 * obtained the epoch left (the coordinator answered it after that). */
void lease_init(struct lease *l, uint64_t epoch, unsigned long long opened_at);

/* Probe id left at time at. Ids are the caller's (nonzero, each used once). */
void lease_sent(struct lease *l, uint64_t id, unsigned long long at);

/* The coordinator answered probe id: the volume's current epoch is epoch. */
enum lease_event lease_answer(struct lease *l, uint64_t id, uint64_t epoch);

/* Probe id will not be answered (the coordinator refused it): forget it. */
void lease_drop(struct lease *l, uint64_t id);

/* Every unanswered probe is lost (its connection closed). */
void lease_lost(struct lease *l);

/* May the engine serve at time now, with leases of duration_ms? 1, or 0
 * with a one-line reason in why (it says "fenced by epoch N" when fenced). */
int lease_valid(const struct lease *l, unsigned long long now, unsigned duration_ms,
                char *why, size_t whylen);

#endif
