/*
 * bkcheck.c: continuous backup (node/nbackup.c) checked on the simulated
 * world, in the runs that have it (objsim.c is its object store).
 *
 *   invariant 11   After every event: no segment of a node that backs up
 *   (DESIGN.md)    has freed (GC) records above its PG's reach in the
 *                  store, the highest point the store can restore the PG
 *                  to (the end of its newest run of restorable points,
 *                  bkplan.h bk_window). The reach is read from the store as
 *                  it is, not through its faults: down, it still holds what
 *                  it held. A record freed above the reach is in no copy
 *                  the cluster keeps and not yet in the backup: no restore
 *                  can reach the commit it made, ever.
 *   catching up    At the end, once the heal settled (check_end), every
 *                  PG's reach must come up to the last durable commit's CPL
 *                  within SIM_BK_CATCHUP_MS: with the store up and every
 *                  node up, staging has nothing to wait for (a segment's
 *                  VDL is told to it by the writer's Appends and beacons).
 *   restores       Then the volume is restored (restore.h restore_pages) at
 *                  up to SIM_BK_RESTORES points: the last durable commit,
 *                  and others drawn from the durable commits within what
 *                  the store holds for every PG (restore_window; retention
 *                  lets the oldest go). Each restore must be as of exactly
 *                  the commit asked for (a CPL is a consistent point:
 *                  restore.c R1), and every page must be the shadow model's
 *                  page as of it (shadow_page, which the reads are checked
 *                  with), zeros where no commit at or below it wrote.
 */
#include <stdlib.h>
#include <string.h>

#include "backup/bkplan.h"
#include "backup/restore.h"
#include "sim/simint.h"

#define SIM_BK_CATCHUP_MS 5000   /* the backup reaches the last commit within this ... */
#define SIM_BK_RESTORES   6      /* ... and is restored at this many points */

/* Each PG's reach, read again if the store changed since. */
static void refresh(struct world *w, uint64_t vol)
{
  uint64_t v = objsim_version(w) + 1;
  if (w->bk_reach_v == v)
    return;
  w->bk_reach_v = v;
  struct bk_volset vs;
  char why[300];
  memset(w->bk_reach, 0, sizeof w->bk_reach);
  if (bk_scan(objsim_truth(w), vol, &vs, why, sizeof why) == 0)
    for (size_t pg = 0; pg < vs.npgs && pg < SIM_PGS; pg++) {
      uint64_t lo, hi;
      if (vs.pgs[pg].present && bk_window(&vs.pgs[pg], &lo, &hi))
        w->bk_reach[pg] = hi;
    }
  bk_volset_free(&vs);
}

void bkcheck_step(struct world *w)
{
  if (w->bk == NULL || w->vdesc == NULL || w->stop)
    return;
  uint64_t vol = w->vdesc->id;
  refresh(w, vol);
  for (int i = 0; i < SIM_NODES && !w->stop; i++) {
    struct node *n = w->nodes[i].n;
    if (n == NULL || n->bk_io == NULL)
      continue;
    for (size_t k = 0; k < n->nsegs; k++) {
      const struct segment *s = n->segs[k];
      if (s->volume_id != vol || s->pg >= SIM_PGS || s->gc_lsn == 0)
        continue;
      w->res->bk_gc_checks++;
      if (s->gc_lsn > w->bk_reach[s->pg]) {
        violation(w, "node %s pg %u: GC point %llu above what the backup holds (reach "
                  "%llu): invariant 11", w->nodes[i].id, s->pg,
                  (unsigned long long)s->gc_lsn, (unsigned long long)w->bk_reach[s->pg]);
        return;
      }
    }
  }
}

static int durable(const struct txrec *t)
{
  return t->state == TX_ACKED || t->state == TX_KEPT;
}

/* The first PG whose reach is below want (-1: none). */
static int behind(const struct world *w, uint64_t want)
{
  for (int pg = 0; pg < SIM_PGS; pg++)
    if (w->bk_reach[pg] < want)
      return pg;
  return -1;
}

struct rsctx {
  const struct world *w;
  uint64_t at;
  uint64_t pages;
};

static int page_check(void *arg, uint32_t page_no, const uint8_t *page, uint32_t page_size,
                      char *why, size_t whylen)
{
  struct rsctx *c = arg;
  static const uint8_t zero[SIM_PAGE_SIZE];
  if (page_size != SIM_PAGE_SIZE) {
    snprintf(why, whylen, "page %u came back with %u bytes, not %d", page_no, page_size,
             SIM_PAGE_SIZE);
    return -1;
  }
  const uint8_t *want = shadow_page(c->w, page_no, c->at);
  c->pages++;
  if (memcmp(page, want ? want : zero, SIM_PAGE_SIZE) != 0) {
    snprintf(why, whylen, "page %u is not the shadow's page as of %llu (%s)", page_no,
             (unsigned long long)c->at,
             want ? "a commit at or below it wrote it" : "none wrote it: zeros");
    return -1;
  }
  return 0;
}

/* Restore vol as of durable commit at and compare it with the shadow. */
static void restore_at(struct world *w, uint64_t vol, uint64_t at, uint64_t lo, uint64_t hi)
{
  struct rsctx c = {w, at, 0};
  struct rs_target t = {.to_lsn = at};
  struct rs_result res;
  char why[400];
  if (restore_pages(objsim_truth(w), vol, &t, page_check, &c, &res, why, sizeof why) != 0) {
    violation(w, "backup: the restore to commit %llu (the store holds %llu to %llu for "
              "every PG) failed: %s", (unsigned long long)at, (unsigned long long)lo,
              (unsigned long long)hi, why);
    return;
  }
  if (res.cpl != at) {
    violation(w, "backup: the restore to commit %llu rebuilt the volume as of %llu, not "
              "the commit asked for", (unsigned long long)at, (unsigned long long)res.cpl);
    return;
  }
  w->res->bk_restores++;
  w->res->bk_pages_checked += c.pages;
  world_trace(w, "backup restored as of %llu: %llu pages, %llu records, %llu objects",
              (unsigned long long)at, (unsigned long long)c.pages,
              (unsigned long long)res.records, (unsigned long long)res.objects);
  world_hash(w, "restore", at, res.records);
}

void bkcheck_end(struct world *w)
{
  if (w->bk == NULL || w->vdesc == NULL || w->stop)
    return;
  uint64_t vol = w->vdesc->id, want = 0;
  for (size_t i = 0; i < w->ntxs; i++)
    if (durable(&w->txs[i]) && w->txs[i].cpl > want)
      want = w->txs[i].cpl;
  if (want == 0)
    return;                  /* nothing durable: nothing to restore */
  /* Run on until the backup holds the last durable commit of every PG. */
  uint64_t until = sim_now(w->clock) + SIM_BK_CATCHUP_MS;
  refresh(w, vol);
  while (!w->stop && behind(w, want) >= 0 && sim_now(w->clock) < until &&
         sim_step(w->clock)) {
    w->res->steps++;
    check_step(w);
    refresh(w, vol);
  }
  if (w->stop)
    return;
  int pg = behind(w, want);
  if (pg >= 0) {
    /* What each of its segments knows, into the trace. */
    for (int i = 0; i < SIM_NODES; i++)
      for (size_t k = 0; w->nodes[i].n && k < w->nodes[i].n->nsegs; k++) {
        const struct segment *s = w->nodes[i].n->segs[k];
        if (s->pg == (uint32_t)pg)
          world_trace(w, "  node %s pg %d: told vdl %llu (tail %llu), backup point %llu, "
                      "uploader %d, busy %d, scl %llu, gc %llu%s%s", w->nodes[i].id, pg,
                      (unsigned long long)s->bk.vdl, (unsigned long long)s->bk.tail,
                      (unsigned long long)s->bk.point, s->bk.uploader, s->bk.busy,
                      (unsigned long long)s->scl, (unsigned long long)s->gc_lsn,
                      s->catchup ? ", catching up" : "", s->next ? ", a next segment" : "");
      }
    violation(w, "pg %d: the backup did not catch up: %d ms after the heal settled it "
              "reaches %llu, not the last durable commit %llu (store %s)", pg,
              SIM_BK_CATCHUP_MS, (unsigned long long)w->bk_reach[pg],
              (unsigned long long)want, objsim_is_up(w) ? "up" : "down");
    return;
  }
  uint64_t lo, hi;
  uint32_t npgs;
  char why[300];
  if (restore_window(objsim_truth(w), vol, &lo, &hi, &npgs, why, sizeof why) != 0) {
    violation(w, "backup: caught up, but no restore window: %s", why);
    return;
  }
  /* The points: the last durable commit, and others drawn from those the
   * store still holds. */
  uint64_t *cand = malloc((w->ntxs + 1) * sizeof *cand);
  size_t nc = 0;
  for (size_t i = 0; i < w->ntxs; i++)
    if (durable(&w->txs[i]) && w->txs[i].cpl >= lo && w->txs[i].cpl <= hi &&
        w->txs[i].cpl != want)
      cand[nc++] = w->txs[i].cpl;
  restore_at(w, vol, want, lo, hi);
  for (int k = 1; k < SIM_BK_RESTORES && nc > 0 && !w->stop; k++) {
    size_t j = (size_t)rng_uniform(&w->rng, nc);
    uint64_t at = cand[j];
    cand[j] = cand[--nc];
    restore_at(w, vol, at, lo, hi);
  }
  free(cand);
}
