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
 *                  can reach the commit it made, ever. (From the listing:
 *                  store-rot damage is the store's, which no node can see.)
 *   catching up    At the end, once the heal settled (check_end), every
 *                  PG's reach must come up to the last durable commit's CPL
 *                  within SIM_BK_CATCHUP_MS: with the store up and every
 *                  node up, staging has nothing to wait for (a segment's
 *                  VDL is told to it by the writer's Appends and beacons).
 *   restores       Then the volume is restored (restore.h restore_pages) at
 *                  up to SIM_BK_RESTORES points: the last durable commit,
 *                  and others drawn from the durable commits within what
 *                  the listing holds for every PG (restore_window; retention
 *                  lets the oldest go); once to the latest point; and
 *                  SIM_BK_BY_TIME times by time. Each restore must be as of
 *                  exactly the point the check expects (a CPL is a
 *                  consistent point: restore.c R1), and every page must be
 *                  the shadow model's page as of it (shadow_page, which the
 *                  reads are checked with), zeros where no commit at or
 *                  below it wrote.
 *   damage         With store-rot, some objects are damaged (objsim.c
 *                  knows which without their checksums). What a restore
 *                  must see is the listing with those taken out (restore.c
 *                  R4): where a plan to the point exists in that (bkplan.h
 *                  bk_plan, every PG), the restore must give the shadow's
 *                  pages exactly; where none does, it must refuse, naming
 *                  damaged objects. Any object a restore names as damaged
 *                  must be damaged. A restore that read a damaged object as
 *                  good gives other pages, or succeeds where nothing could.
 *   by time        The point a time T restores to is the highest VDL noted
 *                  at or before T in the clock of an undamaged piece within
 *                  the listing's window (restore.h to_ms), read here from
 *                  the pieces themselves; and it must be true: no higher
 *                  than the highest VDL any writer had announced by the
 *                  time it was noted (the world's VDL history, kept by
 *                  bkcheck_step), so that a restore by time never shows a
 *                  commit made after T. The CPL it restores to is the
 *                  shadow's newest commit at or below that VDL.
 */
#include <stdlib.h>
#include <string.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "backup/restore.h"
#include "param.h"
#include "sim/simint.h"

#define SIM_BK_CATCHUP_MS 5000   /* the backup reaches the last commit within this ... */
#define SIM_BK_RESTORES   6      /* ... and is restored at this many points ... */
#define SIM_BK_BY_TIME    2      /* ... and this many times by time */

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

/* The VDL's history: the highest VDL any writer announced, noted when it
 * rises (at the event's virtual time: the Appends carrying it leave then
 * or later). */
static void note_vdl(struct world *w)
{
  uint64_t v = 0;
  for (int i = 0; i < SIM_WRITERS; i++)
    if (w->wr[i].v && w->wr[i].v->q.vdl > v)
      v = w->wr[i].v->q.vdl;
  if (v == 0 || (w->bk_nvdls && w->bk_vdls[w->bk_nvdls - 1][1] >= v))
    return;
  if (w->bk_nvdls == w->bk_capvdls) {
    w->bk_capvdls = w->bk_capvdls ? 2 * w->bk_capvdls : 256;
    w->bk_vdls = realloc(w->bk_vdls, w->bk_capvdls * sizeof *w->bk_vdls);
  }
  w->bk_vdls[w->bk_nvdls][0] = sim_now(w->clock);
  w->bk_vdls[w->bk_nvdls][1] = v;
  w->bk_nvdls++;
}

/* The highest VDL announced at or before virtual ms t (0: none). */
static uint64_t vdl_by(const struct world *w, uint64_t t)
{
  uint64_t v = 0;
  for (size_t i = 0; i < w->bk_nvdls && w->bk_vdls[i][0] <= t; i++)
    v = w->bk_vdls[i][1];
  return v;
}

void bkcheck_step(struct world *w)
{
  if (w->bk == NULL || w->stop)
    return;
  note_vdl(w);
  if (w->vdesc == NULL)
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
  int wrong;                 /* a page was not the shadow's */
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
    c->wrong = 1;
    snprintf(why, whylen, "page %u is not the shadow's page as of %llu (%s)", page_no,
             (unsigned long long)c->at,
             want ? "a commit at or below it wrote it" : "none wrote it: zeros");
    return -1;
  }
  return 0;
}

/* What a restore must see of the store (restore.c R4): the listing of
 * vol, every object store-rot damaged taken out. */
static void intact(struct world *w, uint64_t vol, struct bk_volset *vs)
{
  char why[300], key[BK_KEY_MAX];
  if (bk_scan(objsim_truth(w), vol, vs, why, sizeof why) != 0)
    return;                  /* (the truth does not fail) */
  for (uint32_t pg = 0; pg < vs->npgs; pg++) {
    struct bk_pgset *p = &vs->pgs[pg];
    for (size_t i = p->nbases; i-- > 0;) {
      bk_key_base(key, vol, pg, p->bases[i].at, p->bases[i].ms);
      if (objsim_damaged(w, key))
        bk_drop(p, BK_BASE, p->bases[i].at, p->bases[i].ms);
    }
    for (size_t i = p->nlogs; i-- > 0;) {
      bk_key_log(key, vol, pg, p->logs[i].from, p->logs[i].to);
      if (objsim_damaged(w, key))
        bk_drop(p, BK_LOG, p->logs[i].from, p->logs[i].to);
    }
  }
}

/* Whether every PG of vs has a plan to at. */
static int plannable(const struct bk_volset *vs, uint64_t at)
{
  for (size_t pg = 0; pg < vs->npgs; pg++) {
    size_t base;
    if (!vs->pgs[pg].present || bk_plan(&vs->pgs[pg], at, &base, NULL, NULL) != 0)
      return 0;
  }
  return vs->npgs > 0;
}

/* The highest point every PG of vs reaches (restore.h: the latest), 0 if
 * a PG has nothing. */
static uint64_t reach_of(const struct bk_volset *vs)
{
  uint64_t hi = UINT64_MAX;
  for (size_t pg = 0; pg < vs->npgs; pg++) {
    uint64_t l, h;
    if (!vs->pgs[pg].present || !bk_window(&vs->pgs[pg], &l, &h))
      return 0;
    if (h < hi)
      hi = h;
  }
  return vs->npgs ? hi : 0;
}

/* The shadow's newest commit at or below v: the consistent point a
 * restore to v must give (R1). */
static uint64_t shadow_cpl(const struct world *w, uint64_t v)
{
  uint64_t c = 0;
  for (size_t i = 0; i < w->ntxs; i++)
    if (w->txs[i].state != TX_TRUNCATED && w->txs[i].cpl <= v && w->txs[i].cpl > c)
      c = w->txs[i].cpl;
  return c;
}

/* The backup objects text names (a restore's refusal or note): how many,
 * and whether each is damaged (*bad: the first that is not, or ""). */
static int named(struct world *w, uint64_t vol, const char *text, char *bad, size_t badlen)
{
  char pre[32];
  int n = snprintf(pre, sizeof pre, "v%llu/pg", (unsigned long long)vol), count = 0;
  bad[0] = 0;
  for (const char *p = strstr(text, pre); p; p = strstr(p + n, pre)) {
    char key[BK_KEY_MAX];
    size_t k = 0;
    while (k + 1 < sizeof key && p[k] && strchr(" ,;()", p[k]) == NULL) {
      key[k] = p[k];
      k++;
    }
    key[k] = 0;
    count++;
    if (!objsim_damaged(w, key) && bad[0] == 0)
      snprintf(bad, badlen, "%s", key);
  }
  return count;
}

/* One restore of vol to t, checked: expect says whether a plan avoiding
 * every damaged object exists; if so the restore must be as of want (the
 * shadow's commit) and give the shadow's pages as of it; if not it must
 * refuse, naming damaged objects if damage is why (blame: the target is
 * one the listing holds). what: the target in words. */
static int restore_check(struct world *w, uint64_t vol, const struct rs_target *t, int expect,
                         int blame, uint64_t want, const char *what, struct rs_result *res)
{
  struct rsctx c = {w, want, 0, 0};
  char why[700], bad[BK_KEY_MAX];
  if (restore_pages(objsim_truth(w), vol, t, page_check, &c, res, why, sizeof why) != 0) {
    if (c.wrong) {
      violation(w, "backup: the restore to %s (as of %llu, going around %u damaged objects) "
                "gave other pages than the shadow's: %s", what, (unsigned long long)res->cpl,
                res->damaged, why);
      return -1;
    }
    if (expect || c.pages > 0) {
      violation(w, "backup: the restore to %s failed, though a plan to it avoids every "
                "damaged object: %s", what, why);
      return -1;
    }
    int nn = named(w, vol, why, bad, sizeof bad);
    if (nn > 0 && bad[0]) {
      violation(w, "backup: the restore to %s was refused naming %s damaged, which is "
                "not: %s", what, bad, why);
      return -1;
    }
    if (blame && nn == 0) {
      violation(w, "backup: the restore to %s was refused (rightly: damage leaves no plan "
                "to it) without naming a damaged object: %s", what, why);
      return -1;
    }
    w->res->bk_refused++;
    world_trace(w, "backup restore to %s refused, rightly: %s", what, why);
    world_hash(w, "refused", res->target, res->damaged);
    return 1;
  }
  if (!expect) {
    violation(w, "backup: the restore to %s succeeded (as of %llu, going around %u damaged "
              "objects), though no plan to it avoids every damaged object: it used one",
              what, (unsigned long long)res->cpl, res->damaged);
    return -1;
  }
  if (res->cpl != want) {
    violation(w, "backup: the restore to %s rebuilt the volume as of %llu, not %llu", what,
              (unsigned long long)res->cpl, (unsigned long long)want);
    return -1;
  }
  if ((named(w, vol, res->note, bad, sizeof bad) != (int)res->damaged && res->damaged <= 3) ||
      bad[0]) {
    violation(w, "backup: the restore to %s went around %u objects as damaged, not all of "
              "them damaged (%s): %s", what, res->damaged, bad[0] ? bad : "?", res->note);
    return -1;
  }
  w->res->bk_restores++;
  w->res->bk_replanned += res->damaged > 0;
  w->res->bk_pages_checked += c.pages;
  world_trace(w, "backup restored to %s as of %llu: %llu pages, %llu records, %llu objects%s%s",
              what, (unsigned long long)res->cpl, (unsigned long long)c.pages,
              (unsigned long long)res->records, (unsigned long long)res->objects,
              res->damaged ? "; " : "", res->note);
  world_hash(w, "restore", res->cpl, res->records);
  return 0;
}

/* Restore vol as of durable commit at: it must, unless damage leaves no
 * plan to it. */
static void restore_at(struct world *w, uint64_t vol, uint64_t at, const struct bk_volset *vs)
{
  struct rs_target t = {.to_lsn = at};
  struct rs_result res;
  char what[64];
  snprintf(what, sizeof what, "commit %llu", (unsigned long long)at);
  restore_check(w, vol, &t, plannable(vs, at), 1, at, what, &res);
}

/* Restore vol to the latest point: what every PG's undamaged objects
 * reach. */
static void restore_latest(struct world *w, uint64_t vol, const struct bk_volset *vs)
{
  uint64_t hi = reach_of(vs);
  int ok = hi > 0 && plannable(vs, hi);
  struct rs_target t = {0};
  struct rs_result res;
  restore_check(w, vol, &t, ok, 1, ok ? shadow_cpl(w, hi) : 0, "the latest point", &res);
}

/* The clock notes of the undamaged pieces (vs) within [lo, hi], the
 * window of the listing (restore_window), as a restore by time reads
 * them: *n pairs (ms, vdl). */
static uint64_t (*notes_of(struct world *w, uint64_t vol, const struct bk_volset *vs,
                           uint64_t lo, uint64_t hi, size_t *n))[2]
{
  uint64_t (*v)[2] = NULL;
  size_t cap = 0;
  *n = 0;
  for (uint32_t pg = 0; pg < vs->npgs; pg++)
    for (size_t k = 0; k < vs->pgs[pg].nlogs; k++) {
      const struct bk_span *sp = &vs->pgs[pg].logs[k];
      if (sp->to <= lo || sp->from >= hi)
        continue;
      char key[BK_KEY_MAX], why[300];
      uint8_t *b;
      size_t len;
      bk_key_log(key, vol, pg, sp->from, sp->to);
      Auralog__BackupLog *m = NULL;
      if (obj_get(objsim_truth(w), key, &b, &len, why, sizeof why) == 0) {
        m = bk_decode_log(key, b, len, why, sizeof why);
        free(b);
      }
      if (m == NULL) {
        violation(w, "backup: piece %s, not damaged, cannot be read back: %s", key, why);
        free(v);
        return NULL;
      }
      for (size_t c = 0; c + 1 < m->n_clock; c += 2)
        if (m->clock[c + 1] <= hi) {
          if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            v = realloc(v, cap * sizeof *v);
          }
          v[*n][0] = m->clock[c];
          v[(*n)++][1] = m->clock[c + 1];
        }
      auralog__backup_log__free_unpacked(m, NULL);
    }
  return v;
}

/* Restore vol as of time ms (unix ms, the nodes' clock). */
static void restore_by_time(struct world *w, uint64_t vol, const struct bk_volset *vs,
                            uint64_t (*notes)[2], size_t nnotes, uint64_t ms)
{
  uint64_t vdl = 0;
  for (size_t i = 0; i < nnotes; i++)
    if (notes[i][0] <= ms && notes[i][1] > vdl)
      vdl = notes[i][1];
  struct rs_target t = {.to_ms = ms};
  struct rs_result res;
  char what[96];
  snprintf(what, sizeof what, "the time %llu (virtual %llu ms)", (unsigned long long)ms,
           (unsigned long long)(ms - SIM_WALL_MS0));
  int rc = restore_check(w, vol, &t, vdl > 0 && plannable(vs, vdl), 0, shadow_cpl(w, vdl),
                         what, &res);
  if (rc != 0)
    return;
  w->res->bk_by_time++;
  if (res.target != vdl || res.at_ms > ms) {
    violation(w, "backup: the restore to %s took the VDL %llu noted at %llu; the undamaged "
              "pieces' notes say %llu", what, (unsigned long long)res.target,
              (unsigned long long)res.at_ms, (unsigned long long)vdl);
    return;
  }
  uint64_t by = vdl_by(w, res.at_ms - SIM_WALL_MS0);
  if (res.target > by)
    violation(w, "backup: the restore to %s took the VDL %llu, noted at virtual %llu ms, "
              "when no writer had announced more than %llu: a point after the time",
              what, (unsigned long long)res.target,
              (unsigned long long)(res.at_ms - SIM_WALL_MS0), (unsigned long long)by);
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
  /* What restores must see: the listing less the damaged objects. */
  struct bk_volset vs;
  intact(w, vol, &vs);
  /* The points: the last durable commit, and others drawn from those the
   * listing holds; the latest; times drawn around the pieces' notes. */
  uint64_t *cand = malloc((w->ntxs + 1) * sizeof *cand);
  size_t nc = 0;
  for (size_t i = 0; i < w->ntxs; i++)
    if (durable(&w->txs[i]) && w->txs[i].cpl >= lo && w->txs[i].cpl <= hi &&
        w->txs[i].cpl != want)
      cand[nc++] = w->txs[i].cpl;
  restore_at(w, vol, want, &vs);
  if (!w->stop)
    restore_latest(w, vol, &vs);
  size_t nn;
  uint64_t (*notes)[2] = w->stop ? NULL : notes_of(w, vol, &vs, lo, hi, &nn);
  for (int k = 0; k < SIM_BK_BY_TIME && notes && !w->stop; k++) {
    /* Just after a note (the point it names), or anywhere from a little
     * before the first to a little after the last. */
    uint64_t first = notes[0][0], last = notes[0][0];
    for (size_t i = 1; i < nn; i++) {
      first = notes[i][0] < first ? notes[i][0] : first;
      last = notes[i][0] > last ? notes[i][0] : last;
    }
    uint64_t ms = k % 2 == 0
                    ? notes[rng_uniform(&w->rng, nn)][0] + rng_uniform(&w->rng, BK_CLOCK_EVERY_MS)
                    : first - 500 + rng_uniform(&w->rng, last - first + 1000);
    restore_by_time(w, vol, &vs, notes, nn, ms);
  }
  free(notes);
  for (int k = 1; k < SIM_BK_RESTORES && nc > 0 && !w->stop; k++) {
    size_t j = (size_t)rng_uniform(&w->rng, nc);
    uint64_t at = cand[j];
    cand[j] = cand[--nc];
    restore_at(w, vol, at, &vs);
  }
  free(cand);
  bk_volset_free(&vs);
}
