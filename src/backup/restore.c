/*
 * restore.c: a volume as it was at a point, rebuilt from its backup
 * (restore.h).
 *
 * Rules kept here:
 *   R1. Only a consistent point: the highest CPL at or below the target.
 *       A base image's point is a VDL the writer announced, and a VDL is
 *       a CPL, so every base used lies at or below that CPL and none holds
 *       a part of a transaction above it.
 *   R2. Every PG's records are those of its chain: within a piece they
 *       chain (bk_decode_log checks it), and across pieces each record's
 *       backlink must be the last record taken (or at or below the base's
 *       point for the first): a gap or a foreign piece stops the restore
 *       with its name, never a silently older page.
 *   R3. Nothing is written where the user said to until the file is whole
 *       and SQLite says it is sound: it is built under a temporary name,
 *       checked with PRAGMA integrity_check, then renamed into place.
 *   R4. A damaged object is an absent one (see restore_pages, where the
 *       rule is kept).
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "backup/restore.h"
#include "record.h"

/* The store's listing of vol: 0, or -1 with why (it cannot be read, or
 * holds nothing of vol). */
static int list(struct objstore *o, uint64_t vol, struct bk_volset *vs, char *why,
                size_t whylen)
{
  if (bk_scan(o, vol, vs, why, whylen) != 0)
    return -1;
  if (vs->npgs == 0) {
    snprintf(why, whylen, "no backup of volume %" PRIu64 " in %s", vol, obj_describe(o));
    return -1;
  }
  return 0;
}

/* The points every PG of vs can be restored to: 0; -1 with why (a PG
 * without a backup); -2 with why and *lo > *hi (the PGs' newest runs of
 * points share none: an older run of one may still meet another's). */
static int window(struct objstore *o, const struct bk_volset *vs, uint64_t *lo, uint64_t *hi,
                  char *why, size_t whylen)
{
  *lo = 0;
  *hi = UINT64_MAX;
  for (size_t i = 0; i < vs->npgs; i++) {
    uint64_t l, h;
    if (!vs->pgs[i].present || !bk_window(&vs->pgs[i], &l, &h)) {
      snprintf(why, whylen, "volume %" PRIu64 ": pg %zu has no backup in %s (the backup "
               "is not complete)", vs->vol, i, obj_describe(o));
      return -1;
    }
    if (l > *lo)
      *lo = l;
    if (h < *hi)
      *hi = h;
  }
  if (*lo > *hi) {
    snprintf(why, whylen, "volume %" PRIu64 ": its PGs' backups hold no point in common "
             "(one starts at %" PRIu64 ", another ends at %" PRIu64 ")", vs->vol, *lo, *hi);
    return -2;
  }
  return 0;
}

static int scan(struct objstore *o, uint64_t vol, struct bk_volset *vs, uint64_t *lo,
                uint64_t *hi, char *why, size_t whylen)
{
  if (list(o, vol, vs, why, whylen) != 0)
    return -1;
  return window(o, vs, lo, hi, why, whylen) == 0 ? 0 : -1;
}

int restore_window(struct objstore *o, uint64_t vol, uint64_t *lo, uint64_t *hi,
                   uint32_t *npgs, char *why, size_t whylen)
{
  struct bk_volset vs;
  int rc = scan(o, vol, &vs, lo, hi, why, whylen);
  *npgs = (uint32_t)vs.npgs;
  bk_volset_free(&vs);
  return rc;
}

static uint8_t *fetch(struct objstore *o, const char *key, size_t *len, struct rs_result *res,
                      char *why, size_t whylen)
{
  uint8_t *b;
  int rc = obj_get(o, key, &b, len, why, whylen);
  if (rc == OBJ_NOTFOUND)
    snprintf(why, whylen, "backup object %s is gone (deleted while restoring?)", key);
  if (rc != 0)
    return NULL;
  res->objects++;
  res->bytes += *len;
  return b;
}

/* R4: the objects found damaged in one restore, in the order found. A
 * pass that meets one returns RS_DAMAGED, having given nothing to the
 * page sink; the next pass plans without it. */
#define RS_DAMAGED (-2)

struct dmg {
  struct bk_key k;
  char key[BK_KEY_MAX];
  char why[160];             /* what its check said */
};

struct damage {
  struct dmg *v;
  size_t n, cap;
};

/* key failed its checks (why: bk_decode_*'s): noted, RS_DAMAGED. */
static int damaged(struct damage *dm, const char *key, const char *why)
{
  struct bk_key k;
  if (bk_key_parse(key, &k) != 0)
    return -1;               /* cannot be: every key read came from the listing */
  if (dm->n == dm->cap) {
    dm->cap = dm->cap ? 2 * dm->cap : 4;
    dm->v = realloc(dm->v, dm->cap * sizeof *dm->v);
  }
  struct dmg *d = &dm->v[dm->n++];
  d->k = k;
  snprintf(d->key, sizeof d->key, "%s", key);
  /* Its check's words, less the "backup object KEY: " they start with. */
  size_t kl = strlen(key);
  if (strncmp(why, "backup object ", 14) == 0 && strncmp(why + 14, key, kl) == 0 &&
      strncmp(why + 14 + kl, ": ", 2) == 0)
    why += 14 + kl + 2;
  snprintf(d->why, sizeof d->why, "%s", why);
  size_t wl = strlen(d->why);
  if (wl > 10 && strcmp(d->why + wl - 10, " (damaged)") == 0)
    d->why[wl - 10] = 0;     /* said already */
  return RS_DAMAGED;
}

/* The damaged objects, named with what their checks said (the first few). */
static void damage_names(const struct damage *dm, char *out, size_t outlen)
{
  size_t at = 0;
  out[0] = 0;
  for (size_t i = 0; i < dm->n && i < 3 && at < outlen; i++)
    at += (size_t)snprintf(out + at, outlen - at, "%s%s (%s)", i ? ", " : "", dm->v[i].key,
                           dm->v[i].why);
  if (dm->n > 3 && at < outlen)
    snprintf(out + at, outlen - at, " and %zu more", dm->n - 3);
}

/* The highest VDL noted at or before ms in the clock of any piece of any
 * PG within [lo, hi] (0: none), and when. */
static int by_time(struct objstore *o, const struct bk_volset *vs, uint64_t lo, uint64_t hi,
                   uint64_t ms, uint64_t *lsn, uint64_t *at, struct rs_result *res,
                   struct damage *dm, char *why, size_t whylen)
{
  *lsn = *at = 0;
  for (size_t i = 0; i < vs->npgs; i++)
    for (size_t k = 0; k < vs->pgs[i].nlogs; k++) {
      const struct bk_span *sp = &vs->pgs[i].logs[k];
      if (sp->to <= lo || sp->from >= hi)
        continue;
      char key[BK_KEY_MAX];
      size_t len;
      bk_key_log(key, vs->vol, (uint32_t)i, sp->from, sp->to);
      uint8_t *b = fetch(o, key, &len, res, why, whylen);
      if (b == NULL)
        return -1;
      Auralog__BackupLog *m = bk_decode_log(key, b, len, why, whylen);
      free(b);
      if (m == NULL)
        return damaged(dm, key, why);   /* R4: its notes are not to be believed */
      for (size_t c = 0; c + 1 < m->n_clock; c += 2)
        if (m->clock[c] <= ms && m->clock[c + 1] <= hi && m->clock[c + 1] >= *lsn) {
          *lsn = m->clock[c + 1];
          *at = m->clock[c];
        }
      auralog__backup_log__free_unpacked(m, NULL);
    }
  return 0;
}

/* One PG as the plan says: its geometry and its records up to target, in
 * LSN order (R2), and its base's pages. */
struct pgdata {
  uint64_t base_at;
  Auralog__BackupBase *base;
  Auralog__BackupLog **pieces;
  size_t npieces;
  const Rec **recs;
  size_t nrecs;
  uint32_t first_page, npages, page_size;
};

/* PG pg of vs as of target: 0; -1 with why; RS_DAMAGED (R4). lo, hi: what
 * the backup holds for every PG (for a refusal's words). */
static int load_pg(struct objstore *o, const struct bk_volset *vs, uint32_t pg, uint64_t target,
                   uint64_t lo, uint64_t hi, struct pgdata *d, struct rs_result *res,
                   struct damage *dm, char *why, size_t whylen)
{
  const struct bk_pgset *p = &vs->pgs[pg];
  size_t *path = malloc((p->nlogs + 1) * sizeof *path), n = 0;
  memset(d, 0, sizeof *d);
  size_t bix;
  if (bk_plan(p, target, &bix, path, &n) != 0) {
    if (lo > hi)
      snprintf(why, whylen, "pg %u cannot be restored to %" PRIu64 " (a gap in its backup; "
               "the PGs' newest backups hold no point in common: one starts at %" PRIu64
               ", another ends at %" PRIu64 ")", pg, target, lo, hi);
    else if (target < lo && dm->n == 0)
      snprintf(why, whylen, "LSN %" PRIu64 " is below what the backup still holds (%" PRIu64
               " to %" PRIu64 "): retention let it go", target, lo, hi);
    else
      snprintf(why, whylen, "pg %u cannot be restored to %" PRIu64 " (a gap in its backup; "
               "the backup holds %" PRIu64 " to %" PRIu64 " for every PG)", pg, target, lo, hi);
    free(path);
    return -1;
  }
  char key[BK_KEY_MAX];
  size_t len;
  d->base_at = bix == SIZE_MAX ? 0 : p->bases[bix].at;
  if (bix != SIZE_MAX) {
    bk_key_base(key, vs->vol, pg, p->bases[bix].at, p->bases[bix].ms);
    uint8_t *b = fetch(o, key, &len, res, why, whylen);
    if (b == NULL) {
      free(path);
      return -1;
    }
    d->base = bk_decode_base(key, b, len, why, whylen);
    free(b);
    if (d->base == NULL) {
      free(path);
      return damaged(dm, key, why);
    }
    d->first_page = d->base->first_page;
    d->npages = d->base->npages;
    d->page_size = d->base->page_size;
  }
  d->pieces = calloc(n ? n : 1, sizeof *d->pieces);
  size_t cap = 0;
  uint64_t last = d->base_at;   /* R2: the last record taken (the base's point first) */
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    const struct bk_span *sp = &p->logs[path[i]];
    bk_key_log(key, vs->vol, pg, sp->from, sp->to);
    uint8_t *b = fetch(o, key, &len, res, why, whylen);
    if (b == NULL) {
      free(path);
      return -1;
    }
    Auralog__BackupLog *m = bk_decode_log(key, b, len, why, whylen);
    free(b);
    if (m == NULL) {
      free(path);
      return damaged(dm, key, why);
    }
    d->pieces[d->npieces++] = m;
    if (d->page_size == 0) {
      d->first_page = m->first_page;
      d->npages = m->npages;
      d->page_size = m->page_size;
    } else if (m->page_size != d->page_size || m->first_page != d->first_page ||
               m->npages != d->npages) {
      snprintf(why, whylen, "backup object %s: another PG geometry than the PG's others", key);
      free(path);
      return -1;
    }
    for (size_t k = 0; k < m->n_records; k++) {
      const Rec *r = m->records[k];
      if (r->lsn <= last && !first)
        continue;            /* an overlap: the piece before held it */
      if (r->lsn > target)
        break;
      if (first ? r->prev_lsn > last : r->prev_lsn != last) {
        snprintf(why, whylen, "backup object %s: record %" PRIu64 " does not follow %" PRIu64
                 " (its backlink is %" PRIu64 "): the PG's log has a gap", key, r->lsn, last,
                 r->prev_lsn);
        free(path);
        return -1;
      }
      if (r->lsn <= last)
        continue;            /* at or below the base: in it already */
      if (d->nrecs == cap) {
        cap = cap ? 2 * cap : 256;
        d->recs = realloc(d->recs, cap * sizeof *d->recs);
      }
      d->recs[d->nrecs++] = r;
      last = r->lsn;
      first = 0;
    }
  }
  free(path);
  return 0;
}

static void free_pg(struct pgdata *d)
{
  if (d->base)
    auralog__backup_base__free_unpacked(d->base, NULL);
  for (size_t i = 0; i < d->npieces; i++)
    auralog__backup_log__free_unpacked(d->pieces[i], NULL);
  free(d->pieces);
  free(d->recs);
}

/* R3: SQLite's own check of the file. */
static int check_file(const char *path, char *why, size_t whylen)
{
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
  sqlite3_stmt *st = NULL;
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL);
  int ok = 0;
  if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(st, 0);
    ok = t && strcmp(t, "ok") == 0;
    if (!ok)
      snprintf(why, whylen, "the rebuilt file fails SQLite's integrity check: %s",
               t ? t : "(no answer)");
  } else {
    snprintf(why, whylen, "the rebuilt file is not a database SQLite can read: %s",
             db ? sqlite3_errmsg(db) : "out of memory");
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return ok ? 0 : -1;
}

/* The window of the listing as it was read, damaged objects and all: a
 * time's VDL is looked for within it. */
struct listed {
  int rc;                    /* window()'s */
  uint64_t lo, hi;
  char why[300];
};

/* One pass of restore_pages over what vs holds: the target, each PG's
 * plan and objects, and only once every PG is loaded the pages to fn.
 * 0; -1 with why; RS_DAMAGED (R4: fn was given nothing). */
static int attempt(struct objstore *o, const struct bk_volset *vs, const struct listed *l0,
                   const struct rs_target *t, rs_page_fn fn, void *arg, struct rs_result *res,
                   struct damage *dm, char *why, size_t whylen)
{
  uint64_t lo, hi;
  res->lo = res->hi = res->target = res->cpl = res->at_ms = 0;
  res->npgs = (uint32_t)vs->npgs;
  /* -2 (the PGs' newest runs share no point) stops only a time, which is
   * looked for within them; an LSN and the latest (the highest point
   * every PG reaches) are planned all the same, PG by PG, and load_pg
   * refuses if one has no plan. */
  int wrc = window(o, vs, &lo, &hi, why, whylen);
  if (wrc == -1)
    return -1;
  res->lo = lo;
  res->hi = hi;
  uint64_t target = hi;
  int rc = 0;
  if (t->to_ms) {
    /* The notes of the pieces within the listing's window, less those
     * that failed their checks (R4: dropped from vs, so not read again):
     * the point a time names does not hang on which damaged base a pass
     * has met so far. */
    if (l0->rc != 0) {
      snprintf(why, whylen, "%s", l0->why);
      return -1;
    }
    rc = by_time(o, vs, l0->lo, l0->hi, t->to_ms, &target, &res->at_ms, res, dm, why, whylen);
    if (rc == 0 && target == 0) {
      snprintf(why, whylen, "the backup holds no point at or before that time (it holds "
               "LSNs %" PRIu64 " to %" PRIu64 ")", l0->lo, l0->hi);
      rc = -1;
    }
  } else if (t->to_lsn) {
    target = t->to_lsn;
    if (target > hi && dm->n > 0) {
      snprintf(why, whylen, "LSN %" PRIu64 " is past what the backup holds once its damaged "
               "objects are left out (%" PRIu64 " to %" PRIu64 " for every PG)", target, lo,
               hi);
      rc = -1;
    } else if (target > hi) {
      snprintf(why, whylen, "the backup reaches LSN %" PRIu64 " for every PG, not %" PRIu64
               " (it holds %" PRIu64 " to %" PRIu64 "; later points are still being staged, "
               "or were never durable)", hi, target, lo, hi);
      rc = -1;
    }
    /* Below lo is tried all the same: the newest run of points is what
     * the window says, and an older one may still hold the target (a
     * damaged piece left a gap above it, R4); load_pg refuses if not. */
  }
  if (rc != 0)
    return rc;
  res->target = target;
  struct pgdata *pd = calloc(vs->npgs ? vs->npgs : 1, sizeof *pd);
  for (uint32_t i = 0; rc == 0 && i < vs->npgs; i++)
    rc = load_pg(o, vs, i, target, lo, hi, &pd[i], res, dm, why, whylen);
  /* R1: the highest CPL at or below the target; the bases' points count. */
  uint64_t cpl = 0;
  for (uint32_t i = 0; rc == 0 && i < vs->npgs; i++) {
    if (pd[i].base_at > cpl)
      cpl = pd[i].base_at;
    for (size_t k = 0; k < pd[i].nrecs; k++)
      if ((pd[i].recs[k]->flags & REC_CPL) && pd[i].recs[k]->lsn > cpl)
        cpl = pd[i].recs[k]->lsn;
  }
  res->cpl = cpl;
  uint32_t ps = 0;
  for (uint32_t i = 0; rc == 0 && i < vs->npgs; i++) {
    struct pgdata *d = &pd[i];
    if (d->page_size == 0)
      continue;              /* nothing ever written there: zeros */
    if (ps == 0)
      ps = d->page_size;
    if (d->page_size != ps) {
      snprintf(why, whylen, "pg %u has %u-byte pages, pg 0 %u", i, d->page_size, ps);
      rc = -1;
      break;
    }
    res->pg_pages = d->npages;
    uint8_t *pages = calloc(d->npages, ps);
    for (size_t k = 0; d->base && k < d->base->n_pages; k++)
      memcpy(pages + (size_t)(d->base->pages[k]->page_no - d->first_page) * ps,
             d->base->pages[k]->data.data, ps);
    for (size_t k = 0; k < d->nrecs && d->recs[k]->lsn <= cpl; k++) {
      rec_apply(pages + (size_t)(d->recs[k]->page_no - d->first_page) * ps, ps, d->recs[k]);
      res->records++;
    }
    for (uint32_t k = 0; rc == 0 && k < d->npages; k++)
      rc = fn(arg, d->first_page + k, pages + (size_t)k * ps, ps, why, whylen);
    free(pages);
  }
  res->page_size = ps;
  if (rc == 0 && ps == 0) {
    snprintf(why, whylen, "nothing was ever written to volume %" PRIu64 " at that point",
             vs->vol);
    rc = -1;
  }
  for (uint32_t i = 0; i < vs->npgs; i++)
    free_pg(&pd[i]);
  free(pd);
  return rc;
}

/*
 * Invariant R4 (a damaged object is an absent one). An object that fails
 * its checks (bk_decode_log / bk_decode_base: frame, length, sum, protobuf,
 * its key, itself; bkfmt.h) is taken out of the listing (bk_drop) and the
 * restore is planned again from what is left, from the start: the target
 * (the latest point is the highest every PG's undamaged objects reach; a
 * time's VDL is the highest noted by then in an undamaged piece within
 * the window the listing holds), then every PG's base and pieces. So
 * another base (an older one, with more log) or other pieces over the
 * same range stand in for it wherever they exist; bk_plan finds a plan
 * whenever one exists, so a restore is refused only when no plan avoids
 * every damaged object it met, and the refusal names them and says what
 * the backup holds without them. Pages reach fn only from a pass that met
 * no damaged object: every byte given comes from objects that passed
 * their checks (never a damaged page, and never an older page than the
 * target's: R1, R2 still hold). Each pass that meets one takes one more
 * object out, so the passes end.
 *
 * What is not damage stops the restore as before: a store that cannot be
 * read, an object gone since the listing, pieces whose records do not
 * chain (R2), geometries that disagree. Those say something is wrong
 * beyond one object's bytes, and going around them could hide it.
 */
int restore_pages(struct objstore *o, uint64_t vol, const struct rs_target *t,
                  rs_page_fn fn, void *arg, struct rs_result *res, char *why, size_t whylen)
{
  memset(res, 0, sizeof *res);
  struct bk_volset vs;
  if (list(o, vol, &vs, why, whylen) != 0) {
    bk_volset_free(&vs);
    return -1;
  }
  struct damage dm = {0};
  struct listed l0;
  l0.rc = window(o, &vs, &l0.lo, &l0.hi, l0.why, sizeof l0.why);
  int rc;
  while ((rc = attempt(o, &vs, &l0, t, fn, arg, res, &dm, why, whylen)) == RS_DAMAGED) {
    const struct dmg *d = &dm.v[dm.n - 1];
    if (d->k.pg >= vs.npgs || bk_drop(&vs.pgs[d->k.pg], d->k.kind, d->k.a, d->k.b) != 0) {
      snprintf(why, whylen, "backup object %s failed its checks and is not in the listing",
               d->key);      /* cannot be: it was planned from the listing */
      rc = -1;
      break;
    }
  }
  res->damaged = (uint32_t)dm.n;
  if (dm.n > 0) {
    char names[sizeof res->note];
    damage_names(&dm, names, sizeof names);
    if (rc == 0) {
      snprintf(res->note, sizeof res->note, "went around %zu damaged backup object%s (%s)",
               dm.n, dm.n == 1 ? "" : "s", names);
    } else {
      char first[512];
      snprintf(first, sizeof first, "%s", why);
      snprintf(why, whylen, "%s; no plan avoids the damaged backup object%s: %s", first,
               dm.n == 1 ? "" : "s", names);
    }
  }
  free(dm.v);
  bk_volset_free(&vs);
  return rc;
}

/* restore_build's page sink: the file, page n at n * page_size. */
struct file_sink {
  FILE *f;
  const char *name;
  uint8_t page1[100];
};

static int to_file(void *arg, uint32_t page_no, const uint8_t *page, uint32_t ps, char *why,
                   size_t whylen)
{
  struct file_sink *fs = arg;
  if (page_no == 0)
    memcpy(fs->page1, page, sizeof fs->page1);
  if (fseeko(fs->f, (off_t)page_no * ps, SEEK_SET) != 0 || fwrite(page, ps, 1, fs->f) != 1) {
    snprintf(why, whylen, "cannot write %s: %s", fs->name, strerror(errno));
    return -1;
  }
  return 0;
}

int restore_build(struct objstore *o, uint64_t vol, const struct rs_target *t,
                  const char *path, struct rs_result *res, char *why, size_t whylen)
{
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.restoring-%ld", path, (long)getpid());
  struct file_sink fs = {fopen(tmp, "wb"), tmp, {0}};
  if (fs.f == NULL) {
    memset(res, 0, sizeof *res);
    snprintf(why, whylen, "cannot write %s: %s", tmp, strerror(errno));
    return -1;
  }
  int rc = restore_pages(o, vol, t, to_file, &fs, res, why, whylen);
  if (fflush(fs.f) != 0 && rc == 0) {
    snprintf(why, whylen, "cannot write %s: %s", tmp, strerror(errno));
    rc = -1;
  }
  fclose(fs.f);
  /* The file: every PG's pages, cut to the size page 1 says: the
   * in-header database size (bytes 28..31), valid while its change
   * counter matches (bytes 24 and 92); the pages past it are free space
   * SQLite does not count. */
  const uint8_t *p1 = fs.page1;
  uint32_t npages = (uint32_t)p1[28] << 24 | (uint32_t)p1[29] << 16 | (uint32_t)p1[30] << 8 |
                    p1[31];
  if (rc == 0 && npages && memcmp(p1 + 24, p1 + 92, 4) == 0) {
    if (truncate(tmp, (off_t)npages * res->page_size) != 0) {
      snprintf(why, whylen, "cannot size %s: %s", tmp, strerror(errno));
      rc = -1;
    }
    res->pages = npages;
  }
  if (rc == 0)
    rc = check_file(tmp, why, whylen);   /* R3 */
  if (rc == 0 && rename(tmp, path) != 0) {
    snprintf(why, whylen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    rc = -1;
  }
  if (rc != 0)
    unlink(tmp);
  return rc;
}
