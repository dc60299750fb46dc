/*
 * locate.c: the writer and the replicas by role, asked of the coordinator
 * (see locate.h).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/addr.h"
#include "cli/locate.h"
#include "net/rpc.h"

/* Address order: IPv4 address, then port; one that does not parse last. */
static int addr_cmp(const void *a, const void *b)
{
  const struct loc_rep *x = a, *y = b;
  struct sockaddr_in sx, sy;
  char why[128];
  int px = addr_parse(x->addr, &sx, why, sizeof why) == 0;
  int py = addr_parse(y->addr, &sy, why, sizeof why) == 0;
  if (!px || !py)
    return px ? -1 : py ? 1 : strcmp(x->addr, y->addr);
  uint32_t ix = ntohl(sx.sin_addr.s_addr), iy = ntohl(sy.sin_addr.s_addr);
  uint16_t ox = ntohs(sx.sin_port), oy = ntohs(sy.sin_port);
  return ix != iy ? (ix < iy ? -1 : 1) : ox != oy ? (ox < oy ? -1 : 1) : 0;
}

int loc_ask(const char *coord, const char *volume, struct loc *l, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__WriterReq wr = AURALOG__WRITER_REQ__INIT;
  wr.volume = (char *)volume;
  req.body_case = AURALOG__ENVELOPE__BODY_WRITER_REQ;
  req.writer_req = &wr;
  memset(l, 0, sizeof *l);
  Env *rep = rpc_once(coord, &req, RPC_TIMEOUT_MS, why, whylen);
  if (rep == NULL)
    return -1;
  if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_WRITER, why, whylen) != 0) {
    wire_free(rep);
    return -2;
  }
  const Auralog__Writer *w = rep->writer;
  l->epoch = w->epoch;
  snprintf(l->writer, sizeof l->writer, "%s", w->addr);
  l->lost = w->lost;
  l->silent_ms = w->silent_ms;
  snprintf(l->promoting, sizeof l->promoting, "%s", w->promoting);
  for (size_t i = 0; i < w->n_replicas && l->nrep < REPLICAS_MAX; i++) {
    struct loc_rep *r = &l->rep[l->nrep++];
    snprintf(r->addr, sizeof r->addr, "%s", w->replicas[i]->addr);
    r->applied = w->replicas[i]->applied;
    r->epoch = w->replicas[i]->epoch;
    r->silent_ms = w->replicas[i]->silent_ms;
  }
  wire_free(rep);
  qsort(l->rep, (size_t)l->nrep, sizeof l->rep[0], addr_cmp);
  return 0;
}

int loc_is_replica(const struct loc *l, const char *addr)
{
  for (int i = 0; i < l->nrep; i++)
    if (strcmp(l->rep[i].addr, addr) == 0)
      return 1;
  return 0;
}

void loc_situation(const struct loc *l, char *out, size_t n, char *key, size_t keylen)
{
  if (l->promoting[0]) {
    snprintf(out, n, "failover in progress (replica %s promoting from epoch %llu)", l->promoting,
             (unsigned long long)l->epoch);
    snprintf(key, keylen, "promoting %s", l->promoting);
  } else if (!l->writer[0]) {
    snprintf(out, n, "the coordinator knows no writer of the volume yet");
    snprintf(key, keylen, "none");
  } else if (l->lost) {
    snprintf(out, n, "the writer %s (epoch %llu) has been silent for %llu ms: %s", l->writer,
             (unsigned long long)l->epoch, (unsigned long long)l->silent_ms,
             l->nrep ? "a failover is due" : "no replica is up to take over");
    snprintf(key, keylen, "lost %s %d", l->writer, l->nrep > 0);
  } else {
    snprintf(out, n, "the writer %s (epoch %llu)", l->writer, (unsigned long long)l->epoch);
    snprintf(key, keylen, "writer %s %llu", l->writer, (unsigned long long)l->epoch);
  }
}
