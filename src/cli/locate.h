/*
 * locate.h: finding the writer and the read replicas by role, through the
 * coordinator, at the moment a command acts.
 *
 * Roles move: after a failover a former replica writes, the old writer is
 * fenced (and, until `cluster up` replaces it, still runs), and a member
 * named "engine" in cluster.json may be a replica. So no command takes a
 * role from a name or from cluster.json, which only `cluster up`
 * rewrites; each asks the coordinator (coord/failover.c), which answers a
 * WriterReq with the writer it chose (address, epoch, whether it is
 * silent, a promotion under way) and the replicas serving reads now
 * (Writer.replicas: each beat lately, none is the writer or being
 * promoted). `auralog sql` and `auralog fault` use it.
 *
 *   loc_ask         one question to the coordinator: 0 with *l, -1 (why)
 *                   when the coordinator does not answer, -2 (why) when
 *                   it answers with an error (no such volume)
 *   loc_is_replica  is addr among l's replicas serving now?
 *   loc_situation   why l gives no writer to talk to, in words, and a
 *                   short key that changes only when the situation does
 */
#ifndef AURALOG_LOCATE_H
#define AURALOG_LOCATE_H

#include <stddef.h>
#include <stdint.h>

#include "param.h"

struct loc_rep {
  char addr[ADDR_MAX_LEN + 1];
  uint64_t applied, epoch, silent_ms;
};

struct loc {
  uint64_t epoch;                  /* the volume's epoch */
  char writer[ADDR_MAX_LEN + 1];   /* "" none known */
  int lost;                        /* silent past the coordinator's bound */
  uint64_t silent_ms;
  char promoting[ADDR_MAX_LEN + 1];   /* a replica being promoted ("" none) */
  int nrep;
  /* In address order (IPv4, then port): the order in which `cluster up`
   * numbers them for `sql --replica N`. */
  struct loc_rep rep[REPLICAS_MAX];
};

int loc_ask(const char *coord, const char *volume, struct loc *l, char *why, size_t whylen);
int loc_is_replica(const struct loc *l, const char *addr);
void loc_situation(const struct loc *l, char *out, size_t n, char *key, size_t keylen);

#endif
