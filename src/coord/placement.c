/*
 * placement.c: choose the nodes of a new protection group, and a spare for
 * a position that moves (see placement.h).
 */
#include <stdio.h>
#include <string.h>

#include "coord/placement.h"

/* Is node a a better home than node b? */
static int better(const struct pnode *a, const struct pnode *b)
{
  if (!a->up != !b->up)     /* any nonzero up counts as up */
    return a->up != 0;
  if (a->nsegs != b->nsegs)
    return a->nsegs < b->nsegs;
  return strcmp(a->id, b->id) < 0;
}

int place_pg(const struct pnode *nodes, size_t n, size_t out[NCOPIES],
             char *why, size_t whylen)
{
  for (int z = 0; z < NAZ; z++) {
    char az = (char)('A' + z);
    size_t *pick = &out[z * COPIES_PER_AZ];
    size_t got = 0;
    /* Selection: COPIES_PER_AZ passes, each taking the best node not yet
     * taken. Distinct by construction. */
    for (size_t k = 0; k < COPIES_PER_AZ; k++) {
      size_t best = n;
      for (size_t i = 0; i < n; i++) {
        if (nodes[i].az != az || nodes[i].out)
          continue;
        int taken = 0;
        for (size_t j = 0; j < got; j++)
          taken |= pick[j] == i;
        if (!taken && (best == n || better(&nodes[i], &nodes[best])))
          best = i;
      }
      if (best == n) {
        snprintf(why, whylen, "AZ %c has %zu node%s; a protection group needs %d "
                 "in each of A, B and C", az, got, got == 1 ? "" : "s", COPIES_PER_AZ);
        return -1;
      }
      pick[got++] = best;
    }
  }
  return 0;
}

size_t place_spare(const struct pnode *nodes, size_t n, char az, const char *const *taken,
                   size_t ntaken)
{
  size_t best = n;
  for (size_t i = 0; i < n; i++) {
    if (nodes[i].az != az || !nodes[i].up || nodes[i].out)
      continue;
    int used = 0;
    for (size_t j = 0; j < ntaken && !used; j++)
      used = strcmp(taken[j], nodes[i].id) == 0;
    if (!used && (best == n || better(&nodes[i], &nodes[best])))
      best = i;
  }
  return best;
}
