/*
 * segment.c: SCL tracking from backlinks (see segment.h), and the bound
 * every truncation a segment installs must keep (seg_trunc_ok, below,
 * with the VDLs heard per writer epoch it reads).
 *
 * Invariants, kept by seg_add():
 *   - pend[] holds exactly the durable records above scl, sorted by lsn;
 *   - pend[0].prev != scl (otherwise scl would have advanced over it).
 * Since a PG's chain is ordered by LSN, the record that follows scl in the
 * chain is the smallest LSN above scl; so scl advances while the first
 * pending record links back to it. Arrival order does not matter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node/segment.h"
#include "net/wire.h"

void seg_init(struct segment *s, uint64_t volume_id, uint32_t pg,
              uint32_t first_page, uint32_t npages, uint32_t page_size)
{
  memset(s, 0, sizeof *s);
  s->volume_id = volume_id;
  s->pg = pg;
  s->first_page = first_page;
  s->npages = npages;
  s->page_size = page_size;
}

void seg_free(struct segment *s)
{
  free(s->truncs);
  s->truncs = NULL;
  s->ntruncs = 0;
  free(s->tombs);
  s->tombs = NULL;
  s->ntombs = 0;
  free(s->pend);
  s->pend = NULL;
  s->npend = s->cap = 0;
  free(s->imaged);
  free(s->floor);
  free(s->unmat);
  s->imaged = NULL;
  s->floor = NULL;
  s->unmat = NULL;
}

int seg_epoch(struct segment *s, uint64_t epoch, char *why, size_t whylen)
{
  if (epoch < s->epoch) {
    snprintf(why, whylen, "fenced by epoch %llu (writer has epoch %llu)",
             (unsigned long long)s->epoch, (unsigned long long)epoch);
    return ERR_STALE_EPOCH;
  }
  s->epoch = epoch;
  return ERR_NONE;
}

/* Index of the first pending record with lsn >= key. */
static size_t pend_find(const struct segment *s, uint64_t key)
{
  size_t lo = 0, hi = s->npend;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->pend[mid].lsn < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int seg_admit(const struct segment *s, const Rec *r, int *dup, char *why,
              size_t whylen)
{
  unsigned long long lsn = r->lsn, prev = r->prev_lsn;
  *dup = 0;
  if (r->page_no < s->first_page || r->page_no - s->first_page >= s->npages) {
    snprintf(why, whylen, "record %llu is for page %u, outside pg %u (pages %u..%u)",
             lsn, r->page_no, s->pg, s->first_page, s->first_page + s->npages - 1);
    return ERR_OUT_OF_RANGE;
  }
  /* Every range, literal or copy, and every copy's source must lie inside
   * this segment's pages (the wire only checked the largest page size):
   * otherwise the record is stored and acknowledged, then unreadable. The
   * CRC was checked on arrival (wire_check). */
  int rc = rec_check_shape(r, s->page_size, why, whylen);
  if (rc != ERR_NONE)
    return rc;
  /* A binlog PG holds binlog records, a data PG page records: either kind
   * in the other's PG would be made into a page, or lost to a consumer. */
  if (!(r->flags & REC_BINLOG) != !seg_is_binlog(s)) {
    snprintf(why, whylen, "record %llu: a %s record in %s PG %u", lsn,
             r->flags & REC_BINLOG ? "binlog" : "page", seg_is_binlog(s) ? "binlog" : "data",
             s->pg);
    return ERR_BAD_MSG;
  }
  for (size_t j = 0; j < s->ntruncs; j++)
    if (trunc_cuts(&s->truncs[j], 1, r->lsn, r->epoch)) {
      snprintf(why, whylen, "record %llu of epoch %llu lies in (%llu, %llu], truncated "
               "by epoch %llu", lsn, (unsigned long long)r->epoch,
               (unsigned long long)s->truncs[j].from, (unsigned long long)s->truncs[j].to,
               (unsigned long long)s->truncs[j].epoch);
      return ERR_CONFLICT;
    }
  if (r->lsn <= s->scl) {
    *dup = 1;               /* the chain up to scl is whole: we hold it */
    return ERR_NONE;
  }
  size_t i = pend_find(s, r->lsn);
  if (i < s->npend && s->pend[i].lsn == r->lsn) {
    *dup = 1;
    return ERR_NONE;
  }
  /* A backlink says "no record of this PG between prev and me". Refuse a
   * record that jumps over one we hold, or is jumped over by one. */
  if (r->prev_lsn < s->scl) {
    snprintf(why, whylen, "record %llu links back to %llu, but %llu is held between",
             lsn, prev, (unsigned long long)s->scl);
    return ERR_CONFLICT;
  }
  for (size_t j = 0; j < s->npend; j++) {
    const struct pend *p = &s->pend[j];
    if ((r->prev_lsn < p->lsn && p->lsn < r->lsn) ||
        (p->prev < r->lsn && r->lsn < p->lsn)) {
      snprintf(why, whylen, "record %llu (back to %llu) contradicts held record "
               "%llu (back to %llu)", lsn, prev, (unsigned long long)p->lsn,
               (unsigned long long)p->prev);
      return ERR_CONFLICT;
    }
  }
  return ERR_NONE;
}

int seg_has_trunc(const struct segment *s, uint64_t epoch, uint64_t from, uint64_t to)
{
  /* Wholly at or below the GC point, a truncation is as good as held:
   * what lies there is in page versions built from the chain, which holds
   * nothing a truncation cuts, and no record at or below it is taken
   * again (store_gc forgets such truncations: bookkeeping compacted). */
  if (to > from && to <= s->gc_lsn)
    return 1;
  for (size_t j = 0; j < s->ntruncs; j++)
    if (s->truncs[j].epoch == epoch && s->truncs[j].from == from && s->truncs[j].to == to)
      return 1;
  /* Forgotten once every member held it (rule TF, tforget.c): moot on
   * every member, so as good as held. Taken again, a peer that has not
   * forgotten it yet would give it back to each that has, for ever. */
  for (size_t j = 0; j < s->ntombs; j++)
    if (s->tombs[j].epoch == epoch && s->tombs[j].from == from && s->tombs[j].to == to)
      return 1;
  return 0;
}

void seg_add_trunc(struct segment *s, const struct trunc *tr)
{
  if (tr->to <= tr->from)
    return;
  for (size_t j = 0; j < s->ntruncs; j++)
    if (s->truncs[j].epoch == tr->epoch && s->truncs[j].from == tr->from &&
        s->truncs[j].to == tr->to)
      return;
  struct trunc *t = realloc(s->truncs, (s->ntruncs + 1) * sizeof *t);
  if (t == NULL)
    abort();
  s->truncs = t;
  s->truncs[s->ntruncs++] = *tr;   /* its proof too: gossip passes it on */
}

/* ---- the VDLs heard, and the bound on truncations -------------------------- */

/* The last entry of heard[] below epoch (nheard: none). */
static size_t heard_at_below(const struct segment *s, uint64_t epoch)
{
  size_t i = s->nheard;
  while (i > 0 && s->heard[i - 1].epoch >= epoch)
    i--;
  return i == 0 ? s->nheard : i - 1;
}

uint64_t seg_heard_below(const struct segment *s, uint64_t epoch, uint64_t *who)
{
  size_t i = heard_at_below(s, epoch);
  if (who)
    *who = i < s->nheard ? s->heard[i].epoch : 0;
  return i < s->nheard ? s->heard[i].vdl : 0;
}

/* heard[] holds, by epoch, the highest VDL each writer epoch told this
 * segment, less what another entry makes moot: (e, v) says "every
 * truncation of an epoch above e starts at or above v", so an entry of an
 * epoch at or above e with a VDL at or below v says nothing more. Both
 * epoch and vdl strictly increase along the list. */
int seg_heard_note(struct segment *s, uint64_t epoch, uint64_t vdl)
{
  if (vdl == 0 || (epoch < UINT64_MAX && seg_heard_below(s, epoch + 1, NULL) >= vdl))
    return 0;               /* an entry at or below epoch says as much */
  size_t i = 0;
  while (i < s->nheard && s->heard[i].epoch < epoch)
    i++;
  /* Entries from i on with a VDL at or below this one are moot now. */
  size_t j = i;
  while (j < s->nheard && s->heard[j].vdl <= vdl)
    j++;
  if (j == i && s->nheard == HEARD_MAX && i == 0)
    return 0;               /* it would be the oldest: folded at once (below) */
  if (j == i && s->nheard == HEARD_MAX) {
    /* Full, and this entry takes a slot of its own: fold the oldest into
     * the next one (drop it: the next has a newer epoch and a higher VDL).
     * That attributes its VDL to a newer writer than the one that told
     * it, which only weakens the bound, and only for truncations of the
     * epochs in between: a legitimate truncation is never refused for it.
     * The bound for the newest epochs, those a member with a freshly
     * signed epoch would use, stays exact. Folding the other way (the
     * newer VDL down to the older epoch) would hold a legitimate recovery
     * of an epoch in between to a VDL it never had to cover. */
    memmove(&s->heard[0], &s->heard[1], (s->nheard - 1) * sizeof *s->heard);
    s->nheard--;
    i--;
    j--;
  }
  /* heard[i..j) go, (epoch, vdl) takes their place. */
  memmove(&s->heard[i + 1], &s->heard[j], (s->nheard - j) * sizeof *s->heard);
  s->nheard = s->nheard - (j - i) + 1;
  s->heard[i] = (struct heard){epoch, vdl};
  return 1;
}

/*
 * The bound (DESIGN.md §4, invariant 9). A node installs a truncation of
 * epoch E, however it heard of it (a Truncate, an Append, a recovery's
 * scan, gossip, its own log at start), only if
 *
 *   B1. it starts at or above the highest VDL this segment heard from a
 *       writer of an epoch below E (what lies at or below the GC point is
 *       page versions, which no truncation cuts: that part of the range is
 *       moot, so max(from, gc_lsn) is what must reach it); and
 *   B2. it ends at most LAL above max(from, gc_lsn, the highest `to` of a
 *       truncation of an epoch below E held here or installed with it);
 *   B3. it starts (from max(from, gc_lsn)) at or above every truncation of
 *       epoch E itself held here.
 *
 * Why every legitimate truncation keeps B1. Recovery E writes (vdl, to]
 * with vdl the VDL it proved (vfs/open.c). A writer of an epoch e < E
 * announces a VDL only once every record up to it is at a write quorum
 * (4/6) of every PG; recovery E fenced a read quorum (3/6) of each PG
 * before it read it, and a fenced segment takes nothing more from e. So
 * each record up to any VDL e ever announces was on a segment of that
 * read quorum before the fence, the chain recovery E walks holds it, and
 * the VDL it proves (the highest CPL at or below the VCL it computes) is
 * at or above that VDL. A newer writer's VDLs (epoch >= E) may lie above
 * it and are not held against it: rule T (record.h) leaves their records
 * alone. Hence per-epoch bookkeeping: one "highest VDL heard" would refuse
 * an old truncation that gossip brings after a newer writer moved on.
 *
 * Why it keeps B2. Recovery E's range ends at base + LAL, base being its
 * VDL or the highest `to` of the truncations its read quorum held (older
 * epochs'); its scan installs all of them on every segment first, its
 * Appends carry them (Append.before), gossip sends a segment's all, and
 * node_truncate checks a message's ranges oldest epoch first. One that a
 * segment forgot (store_gc: wholly at or below the GC point) is covered by
 * gc_lsn; store_gc keeps one that a kept newer one builds on. One that
 * every member held (rule TF, tforget.c) stays as a tombstone, read here
 * as held, and is kept too while a kept newer one builds on it.
 *
 * Why it keeps B3. A writer of epoch E truncates once, from the VDL its
 * recovery proved, and every Append of its epoch carries that range
 * (Append.trunc). A retry of its recovery in the same epoch (a promoted
 * writer's) proves at least that much: the records it proved are whole at
 * a write quorum, E's range cut only older epochs' records above them.
 * B3 matters once E is over: its key, stolen from a writer fenced or
 * crashed, signs a range of E at or above every VDL a segment heard from
 * older epochs, and below the one E proved, which would cut commits E's
 * recovery kept but that segment holds in older epochs' copies (it missed
 * E's round 3): the segment could never fetch them again, nor converge
 * (the simulator's rogue member, seeds 3253 and 3837).
 *
 * What it keeps out: a member that got an epoch signed sends (0, 2^59].
 * B1 refuses it wherever a writer's VDL was heard; B2 keeps any range to
 * LAL past what the segment knows, so the writers of older epochs are not
 * refused their records for ever.
 */
int seg_trunc_ok(const struct segment *s, const struct trunc *t, uint64_t base, char *why,
                 size_t whylen)
{
  if (t->to <= t->from || seg_has_trunc(s, t->epoch, t->from, t->to))
    return ERR_NONE;        /* held, empty, or wholly moot */
  uint64_t who = 0, v = seg_heard_below(s, t->epoch, &who);
  uint64_t start = t->from > s->gc_lsn ? t->from : s->gc_lsn;
  if (start < v) {
    snprintf(why, whylen, "truncation (%llu, %llu] of epoch %llu starts below the VDL %llu "
             "this segment heard from epoch %llu: refused", (unsigned long long)t->from,
             (unsigned long long)t->to, (unsigned long long)t->epoch,
             (unsigned long long)v, (unsigned long long)who);
    return ERR_CONFLICT;
  }
  /* B3 and B2 read the forgotten ones (rule TF) as held: they are. */
  for (size_t j = 0; j < s->ntruncs + s->ntombs; j++) {
    uint64_t e = j < s->ntruncs ? s->truncs[j].epoch : s->tombs[j - s->ntruncs].epoch;
    uint64_t f = j < s->ntruncs ? s->truncs[j].from : s->tombs[j - s->ntruncs].from;
    uint64_t u = j < s->ntruncs ? s->truncs[j].to : s->tombs[j - s->ntruncs].to;
    if (e == t->epoch && start < f) {
      snprintf(why, whylen, "truncation (%llu, %llu] of epoch %llu starts below (%llu, %llu], "
               "the one of its epoch this segment holds: refused", (unsigned long long)t->from,
               (unsigned long long)t->to, (unsigned long long)t->epoch,
               (unsigned long long)f, (unsigned long long)u);
      return ERR_CONFLICT;
    }
  }
  uint64_t h = start > base ? start : base;
  for (size_t j = 0; j < s->ntruncs; j++)
    if (s->truncs[j].epoch < t->epoch && s->truncs[j].to > h)
      h = s->truncs[j].to;
  for (size_t j = 0; j < s->ntombs; j++)
    if (s->tombs[j].epoch < t->epoch && s->tombs[j].to > h)
      h = s->tombs[j].to;
  if (t->to > h && t->to - h > LAL) {
    snprintf(why, whylen, "truncation (%llu, %llu] of epoch %llu ends more than LAL (%llu) "
             "above %llu, the highest point this segment knows it may start from: refused",
             (unsigned long long)t->from, (unsigned long long)t->to,
             (unsigned long long)t->epoch, (unsigned long long)LAL, (unsigned long long)h);
    return ERR_CONFLICT;
  }
  return ERR_NONE;
}

size_t seg_trunc_pick(const struct segment *s, const struct trunc *t, size_t n, int bounded,
                      size_t *ord, uint8_t *fate,
                      void (*refused)(void *arg, const struct trunc *t, const char *why),
                      void *arg)
{
  for (size_t i = 0; i < n; i++) {        /* by epoch, stable: n is small */
    size_t j = i;
    while (j > 0 && t[ord[j - 1]].epoch > t[i].epoch) {
      ord[j] = ord[j - 1];
      j--;
    }
    ord[j] = i;
  }
  size_t take = 0;
  for (size_t k = 0; k < n; k++) {
    const struct trunc *u = &t[ord[k]];
    fate[ord[k]] = 0;
    if (u->to <= u->from || seg_has_trunc(s, u->epoch, u->from, u->to))
      continue;
    uint64_t base = 0;
    for (size_t m = 0; m < k; m++)
      if (fate[ord[m]] == 1 && t[ord[m]].epoch < u->epoch && t[ord[m]].to > base)
        base = t[ord[m]].to;
    char why[256];
    if (bounded && seg_trunc_ok(s, u, base, why, sizeof why) != ERR_NONE) {
      fate[ord[k]] = 2;
      if (refused)
        refused(arg, u, why);
      continue;
    }
    fate[ord[k]] = 1;
    take++;
  }
  return take;
}

void seg_rechain(struct segment *s, uint64_t base)
{
  s->rechains++;
  s->npend = 0;
  s->scl = base;
  s->max_lsn = base;
}

uint64_t seg_add(struct segment *s, uint64_t lsn, uint64_t prev)
{
  /* LAB 21 BEGIN: the SCL from backlinks (§4.2.1). Record lsn, whose
   * backlink is prev, is now durable: hold it in pend[] (sorted by lsn,
   * no duplicates, nothing at or below scl; keep max_lsn), then move scl
   * up the chain as far as it has no hole, dropping from pend[] what scl
   * passed. Records arrive in any order, and more than once. Return scl.
   * stub: (void)lsn;
   * stub: (void)prev;
   * stub: return s->scl;
   */
  if (lsn <= s->scl)
    return s->scl;
  size_t i = pend_find(s, lsn);
  if (i < s->npend && s->pend[i].lsn == lsn)
    return s->scl;
  if (s->npend == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct pend *p = realloc(s->pend, cap * sizeof *p);
    if (p == NULL)
      abort();              /* out of memory: nothing sensible to do */
    s->pend = p;
    s->cap = cap;
  }
  memmove(&s->pend[i + 1], &s->pend[i], (s->npend - i) * sizeof *s->pend);
  s->pend[i] = (struct pend){lsn, prev};
  s->npend++;
  if (lsn > s->max_lsn)
    s->max_lsn = lsn;

  size_t k = 0;
  while (k < s->npend && s->pend[k].prev == s->scl)
    s->scl = s->pend[k++].lsn;
  if (k) {
    memmove(s->pend, &s->pend[k], (s->npend - k) * sizeof *s->pend);
    s->npend -= k;
  }
  return s->scl;
  /* LAB 21 END */
}
