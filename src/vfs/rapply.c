/*
 * rapply.c: a read replica's apply rule (paper §4.2.4); see rapply.h.
 * No I/O, no clock, no lock: the driver (vfs/replica.c) holds its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "param.h"
#include "vfs/rapply.h"

void ra_init(struct rapply *ra)
{
  memset(ra, 0, sizeof *ra);
}

static void drop_records(struct rapply *ra)
{
  for (size_t i = ra->head; i < ra->n; i++)
    auralog__record__free_unpacked(ra->q[i], NULL);
  ra->head = ra->n = 0;
}

void ra_free(struct rapply *ra)
{
  drop_records(ra);
  free(ra->q);
  free(ra->tail);
  memset(ra, 0, sizeof *ra);
}

/* Room for PG pg's tail. */
static void tail_room(struct rapply *ra, uint32_t pg)
{
  if (pg < ra->ntail)
    return;
  size_t n = ra->ntail ? ra->ntail : 16;
  while (n <= pg)
    n *= 2;
  ra->tail = realloc(ra->tail, n * sizeof *ra->tail);
  memset(ra->tail + ra->ntail, 0, (n - ra->ntail) * sizeof *ra->tail);
  ra->ntail = n;
}

void ra_start(struct rapply *ra, const Auralog__ReplicaStart *s)
{
  drop_records(ra);
  if (ra->tail)
    memset(ra->tail, 0, ra->ntail * sizeof *ra->tail);
  ra->page_size = s->page_size;
  ra->pg_pages = s->pg_pages;
  ra->epoch = s->epoch;
  ra->start = s->start;
  ra->next = s->from;
  ra->vdl = s->vdl;
  ra->rp = 0;
  ra->serving = 0;
  ra->started = 1;
  for (size_t i = 0; i < s->n_tails; i++) {
    tail_room(ra, s->tails[i]->pg);
    ra->tail[s->tails[i]->pg] = s->tails[i]->lsn;
  }
}

/* A copy of r that the replica owns (pack, unpack: every nested part). */
static Rec *rec_dup(const Rec *r)
{
  size_t len = auralog__record__get_packed_size(r);
  uint8_t *buf = malloc(len ? len : 1);
  auralog__record__pack(r, buf);
  Rec *c = auralog__record__unpack(NULL, len, buf);
  free(buf);
  return c;
}

int ra_feed(struct rapply *ra, Rec *const *recs, size_t n, uint64_t vdl, char *why,
            size_t whylen)
{
  if (!ra->started) {
    snprintf(why, whylen, "a feed before the stream's start");
    return -1;
  }
  if (vdl < ra->vdl) {
    snprintf(why, whylen, "the writer's vdl went back from %llu to %llu",
             (unsigned long long)ra->vdl, (unsigned long long)vdl);
    return -1;
  }
  if (ra->n - ra->head + n > REPLICA_BEHIND_MAX) {
    snprintf(why, whylen, "%zu records wait to be applied: too far behind",
             ra->n - ra->head + n);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const Rec *r = recs[i];
    if (r->lsn != ra->next) {
      snprintf(why, whylen, "the stream skipped from LSN %llu to %llu",
               (unsigned long long)ra->next, (unsigned long long)r->lsn);
      return -1;
    }
    if (ra->pg_pages == 0 || r->page_no / ra->pg_pages >= MAX_PGS ||
        rec_check_shape(r, ra->page_size, why, whylen) != 0) {
      if (ra->pg_pages == 0 || r->page_no / ra->pg_pages >= MAX_PGS)
        snprintf(why, whylen, "record %llu for page %u: beyond the volume",
                 (unsigned long long)r->lsn, r->page_no);
      return -1;
    }
    if (ra->n == ra->cap) {
      if (ra->head > 0) {        /* reuse the room of what was applied */
        memmove(ra->q, ra->q + ra->head, (ra->n - ra->head) * sizeof *ra->q);
        ra->n -= ra->head;
        ra->head = 0;
      }
      if (ra->n == ra->cap) {
        ra->cap = ra->cap ? 2 * ra->cap : 256;
        ra->q = realloc(ra->q, ra->cap * sizeof *ra->q);
      }
    }
    ra->q[ra->n++] = rec_dup(r);
    ra->next = r->lsn + 1;
  }
  ra->vdl = vdl;
  return 0;
}

int ra_ready(const struct rapply *ra)
{
  /* Before the VDL reaches the start, storage may not hold it yet. */
  return ra->started && (ra->serving || ra->vdl >= ra->start);
}

uint64_t ra_target(const struct rapply *ra)
{
  if (!ra_ready(ra))
    return 0;
  uint64_t t = ra->serving ? ra->rp : ra->start;
  /* The last CPL at or below the VDL among the records here: every record
   * before it has arrived (the stream has no gap), so its MTR is whole. */
  if (PLANTED(BUG_REPLICA_PAST_VDL) && ra->n > ra->head)
    return ra->q[ra->n - 1]->lsn;
  for (size_t i = ra->head; i < ra->n && ra->q[i]->lsn <= ra->vdl; i++)
    if (ra->q[i]->flags & REC_CPL)
      t = ra->q[i]->lsn;
  return t;
}

size_t ra_advance(struct rapply *ra, uint64_t target, ra_page_fn page, void *arg)
{
  size_t k = 0;
  if (!ra_ready(ra) || target < ra->rp || (!ra->serving && target < ra->start))
    return 0;
  while (ra->head < ra->n && ra->q[ra->head]->lsn <= target) {
    Rec *r = ra->q[ra->head++];
    if (r->flags & REC_BINLOG) {
      /* A commit's events (ship.c B1): its MTR's CPL, no page's change. */
      ra->mtrs++;
      auralog__record__free_unpacked(r, NULL);
      k++;
      continue;
    }
    uint8_t *p = page ? page(arg, r->page_no, r->lsn) : NULL;
    if (p) {
      rec_apply(p, ra->page_size, r);
      ra->applied++;
    } else {
      ra->skipped++;
    }
    if (r->flags & REC_CPL)
      ra->mtrs++;
    uint32_t pg = r->page_no / ra->pg_pages;
    tail_room(ra, pg);
    ra->tail[pg] = r->lsn;
    auralog__record__free_unpacked(r, NULL);
    k++;
  }
  ra->rp = target;
  ra->serving = 1;
  return k;
}

uint64_t ra_need(const struct rapply *ra, uint32_t pg)
{
  return pg < ra->ntail ? ra->tail[pg] : 0;
}

size_t ra_pending(const struct rapply *ra)
{
  return ra->n - ra->head;
}
