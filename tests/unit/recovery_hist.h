/*
 * recovery_hist.h: the writer's history the recovery tests (test_recovery.c,
 * test_rectrunc.c) give vfs/recovery.c, built the way the writer makes it.
 *
 * MTRs of records with contiguous LSNs spread over several PGs, each record
 * linked to the previous record of its PG, each MTR's last record a CPL
 * that links to the previous CPL and lists the MTR's last LSN in every PG
 * it touched; a crash leaves an old epoch's records in a range a recovery
 * then truncates, and the next writer starts above the range, linked back
 * to the tails at the truncation point. Recovery gets the union of what a
 * read quorum of segments holds.
 */
#ifndef AURALOG_TEST_RECOVERY_HIST_H
#define AURALOG_TEST_RECOVERY_HIST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vfs/recovery.h"

/* ---- the history generator ----------------------------------------------- */

#define MAXPG 16
#define MAXTR 8

struct hrec {
  uint64_t lsn, prev, prev_cpl;
  uint32_t pg;
  int cpl;
  size_t mtr;                /* index into hist.m */
  int junk;                  /* in a range a recovery truncated */
  uint64_t epoch;            /* its writer's */
};

struct hmtr {
  uint64_t cpl, prev_cpl;
  uint32_t pg[MAXPG];        /* PGs touched ... */
  uint64_t last[MAXPG];      /* ... and the MTR's last LSN in each */
  size_t npg;
  size_t first, len;         /* its records: hist.r[first .. first + len) */
  int junk;
};

struct hist {
  size_t npgs;
  struct hrec *r;
  size_t n, cap;
  struct hmtr *m;
  size_t nm, mcap;
  uint64_t next_lsn, last_cpl, tail[MAXPG];
  /* between hist_crash and hist_truncate: the old epoch's records */
  int in_junk;
  uint64_t saved_cpl, saved_tail[MAXPG];
  uint64_t epoch;            /* the writer's: records carry it (rule T) */
  struct trunc tr[MAXTR];
  size_t ntr;
};

static inline void hist_init(struct hist *h, size_t npgs, size_t cap)
{
  assert_true(npgs >= 1 && npgs <= MAXPG);
  memset(h, 0, sizeof *h);
  h->npgs = npgs;
  h->cap = cap;
  h->mcap = cap;
  h->r = calloc(cap, sizeof *h->r);
  h->m = calloc(cap, sizeof *h->m);
  assert_non_null(h->r);
  assert_non_null(h->m);
  h->next_lsn = 1;
  h->epoch = 1;
}

static inline void hist_free(struct hist *h)
{
  free(h->r);
  free(h->m);
}

/* One MTR: record i in PG pgs[i], the last one the CPL. Returns its CPL. */
static inline uint64_t hist_mtr(struct hist *h, const uint32_t *pgs, size_t len)
{
  assert_true(len >= 1);
  assert_true(h->n + len <= h->cap && h->nm < h->mcap);
  struct hmtr *m = &h->m[h->nm];
  memset(m, 0, sizeof *m);
  m->first = h->n;
  m->len = len;
  m->junk = h->in_junk;
  m->prev_cpl = h->last_cpl;
  for (size_t i = 0; i < len; i++) {
    uint32_t pg = pgs[i];
    assert_true(pg < h->npgs);
    struct hrec *r = &h->r[h->n++];
    r->lsn = h->next_lsn++;
    r->pg = pg;
    r->prev = h->tail[pg];
    h->tail[pg] = r->lsn;
    r->mtr = h->nm;
    r->junk = h->in_junk;
    r->epoch = h->epoch;
    size_t j = 0;
    while (j < m->npg && m->pg[j] != pg)
      j++;
    if (j == m->npg)
      m->pg[m->npg++] = pg;
    m->last[j] = r->lsn;
    if (i == len - 1) {
      r->cpl = 1;
      r->prev_cpl = h->last_cpl;
      m->cpl = r->lsn;
      h->last_cpl = r->lsn;
    }
  }
  h->nm++;
  return m->cpl;
}

/* Shorthand: an MTR from a list of PGs terminated by -1. */
static inline uint64_t mtr(struct hist *h, ...)
{
  uint32_t pgs[64];
  size_t len = 0;
  va_list ap;
  va_start(ap, h);
  for (int pg = va_arg(ap, int); pg >= 0; pg = va_arg(ap, int))
    pgs[len++] = (uint32_t)pg;
  va_end(ap);
  return hist_mtr(h, pgs, len);
}

/* A crash: the VDL is the last CPL so far; what follows until
 * hist_truncate is an old epoch's, lost above that VDL. */
static inline void hist_crash(struct hist *h)
{
  assert_false(h->in_junk);
  h->in_junk = 1;
  h->saved_cpl = h->last_cpl;
  memcpy(h->saved_tail, h->tail, sizeof h->tail);
}

/* Recovery truncated (VDL at the crash, to]; the next writer starts at
 * to + 1, each PG linked to its tail at the VDL, the first MTR to it. */
static inline void hist_truncate(struct hist *h, uint64_t to)
{
  assert_true(h->in_junk);
  assert_true(to + 1 >= h->next_lsn);
  assert_true(h->ntr < MAXTR);
  /* The recovery is the next writer's, of a newer epoch. */
  h->tr[h->ntr++] = (struct trunc){++h->epoch, h->saved_cpl, to};
  h->in_junk = 0;
  h->last_cpl = h->saved_cpl;
  memcpy(h->tail, h->saved_tail, sizeof h->tail);
  h->next_lsn = to + 1;
}

/* The index of the record with this LSN. */
static inline size_t hist_find(const struct hist *h, uint64_t lsn)
{
  for (size_t i = 0; i < h->n; i++)
    if (h->r[i].lsn == lsn)
      return i;
  fail_msg("no record %llu", (unsigned long long)lsn);
  return 0;
}

/* start[k]: PG k's last (not truncated) record at or below hint. */
static inline void hist_start(const struct hist *h, uint64_t hint, uint64_t *start)
{
  for (size_t k = 0; k < h->npgs; k++)
    start[k] = 0;
  for (size_t i = 0; i < h->n; i++)
    if (!h->r[i].junk && h->r[i].lsn <= hint && h->r[i].lsn > start[h->r[i].pg])
      start[h->r[i].pg] = h->r[i].lsn;
}

static inline void to_rmeta(const struct hist *h, size_t i, struct rmeta *o)
{
  const struct hrec *r = &h->r[i];
  memset(o, 0, sizeof *o);
  o->lsn = r->lsn;
  o->prev = r->prev;
  o->epoch = r->epoch;
  o->pg = r->pg;
  o->cpl = r->cpl;
  if (r->cpl) {
    const struct hmtr *m = &h->m[r->mtr];
    o->prev_cpl = r->prev_cpl;
    o->mtr_pg = m->pg;
    o->mtr_last = m->last;
    o->nmtr = m->npg;
  }
}

/* Recovery over the records above hint with present[i] set (NULL: all),
 * each once, in LSN order, with the history's truncations. */
static inline uint64_t recover(const struct hist *h, uint64_t hint, const uint8_t *present)
{
  uint64_t start[MAXPG];
  hist_start(h, hint, start);
  struct rmeta *v = calloc(h->n + 1, sizeof *v);
  assert_non_null(v);
  size_t n = 0;
  for (size_t i = 0; i < h->n; i++)
    if (h->r[i].lsn > hint && (present == NULL || present[i]))
      to_rmeta(h, i, &v[n++]);
  uint64_t vdl = recover_vdl(hint, start, h->npgs, v, n, h->tr, h->ntr, NULL);
  free(v);
  return vdl;
}

/* Recovery over every record above hint except the one with this LSN. */
static inline uint64_t recover_without(const struct hist *h, uint64_t hint, uint64_t lsn)
{
  uint8_t *present = malloc(h->n + 1);
  assert_non_null(present);
  memset(present, 1, h->n + 1);
  present[hist_find(h, lsn)] = 0;
  uint64_t vdl = recover(h, hint, present);
  free(present);
  return vdl;
}

#endif
