/*
 * lease.c: the writer's read lease (see lease.h).
 */
#include <stdio.h>
#include <string.h>

#include "vfs/lease.h"

void lease_init(struct lease *l, uint64_t epoch, unsigned long long opened_at)
{
  memset(l, 0, sizeof *l);
  l->epoch = epoch;
  l->granted = 1;
  l->granted_at = opened_at;
}

void lease_sent(struct lease *l, uint64_t id, unsigned long long at)
{
  if (l->nout == LEASE_PROBES) {
    /* The oldest is forgotten: its answer, if it ever comes, renews
     * nothing (conservative: the lease only runs out sooner). */
    memmove(&l->out[0], &l->out[1], (LEASE_PROBES - 1) * sizeof l->out[0]);
    l->nout--;
  }
  l->out[l->nout].id = id;
  l->out[l->nout].at = at;
  l->nout++;
}

/* Remove probe id; its send time in *at. Returns 0, or -1 if unknown. */
static int take(struct lease *l, uint64_t id, unsigned long long *at)
{
  for (unsigned i = 0; i < l->nout; i++)
    if (l->out[i].id == id) {
      *at = l->out[i].at;
      memmove(&l->out[i], &l->out[i + 1], (l->nout - i - 1) * sizeof l->out[0]);
      l->nout--;
      return 0;
    }
  return -1;
}

enum lease_event lease_answer(struct lease *l, uint64_t id, uint64_t epoch)
{
  unsigned long long at;
  int known = take(l, id, &at) == 0;
  if (epoch > l->epoch) {
    /* A newer writer exists, whenever the probe left (even one this
     * lease forgot): for good, whatever arrives later. */
    if (epoch > l->fenced_by)
      l->fenced_by = epoch;
    return LEASE_FENCED;
  }
  if (!known || epoch < l->epoch || l->fenced_by)
    return LEASE_IGNORED;
  /* Answers may come out of order: the newest send time wins. */
  if (!l->granted || at > l->granted_at)
    l->granted_at = at;
  l->granted = 1;
  return LEASE_RENEWED;
}

void lease_drop(struct lease *l, uint64_t id)
{
  unsigned long long at;
  take(l, id, &at);
}

void lease_lost(struct lease *l)
{
  l->nout = 0;
}

int lease_valid(const struct lease *l, unsigned long long now, unsigned duration_ms,
                char *why, size_t whylen)
{
  if (l->fenced_by) {
    snprintf(why, whylen, "fenced by epoch %llu (writer has epoch %llu)",
             (unsigned long long)l->fenced_by, (unsigned long long)l->epoch);
    return 0;
  }
  if (!l->granted) {
    snprintf(why, whylen, "no read lease: the coordinator has not confirmed epoch %llu",
             (unsigned long long)l->epoch);
    return 0;
  }
  /* A send time after now (a caller's clock that is not monotonic) counts
   * as now: the lease is then fresh, never older than it is. */
  unsigned long long age = now > l->granted_at ? now - l->granted_at : 0;
  if (age >= duration_ms) {
    snprintf(why, whylen, "read lease expired: the coordinator has not confirmed epoch %llu "
             "for %llu ms (lease %u ms), so a newer writer may exist; this engine serves "
             "nothing until it does", (unsigned long long)l->epoch, age, duration_ms);
    return 0;
  }
  return 1;
}
