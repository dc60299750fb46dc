/*
 * coord/jreplica.c: what the event journal (coord/journal.c) records of
 * read replicas, of the PGMRPL they hold, and of failovers (paper §4.2.4
 * replicas, §4.2.3 the PGMRPL and node GC, §4.3 epochs; seed 004 on long
 * readers holding purge back; seed 002 on failing over to a replica).
 *
 *   engine    (the writer's sample, journal.c) also carries its replicas:
 *             how many, the lowest read point applied, the largest lag in
 *             LSNs and in ms, and the volume's PGMRPL (jr_fields)
 *   hold      the PGMRPL has stood JN_HOLD_MS below a VDL that moved on:
 *             a reader holds it (the replica at it, and its oldest read
 *             transaction's client: "" if none, the writer's own reads),
 *             with the segments' lowest GC point then
 *   release   it moved again: how long it stood, and what storage kept
 *             meanwhile (records, page versions, bytes over every segment
 *             of the volume, since the PGMRPL last moved: coord/hold.c)
 *   gcpassed  after a release, the volume's GC point (the lowest gc_lsn of
 *             its segments that hold records) passed the held PGMRPL:
 *             node GC freed what the reader had held
 *   failover  a promoted replica took its epoch (coord/failover.c): from
 *             whom, to whom, the epochs, who chose (the detector, or
 *             `auralog failover`), and how long after the old writer's
 *             last sign of life it was chosen and took its epoch
 *
 * Why a hold is "stood still below a moving VDL" and not "stood still": on
 * an idle volume the PGMRPL is the VDL and stands still holding nothing
 * back; a reader costs storage only once the writer writes past it. And it
 * is timed from when the VDL passed it, not from when it last moved, so an
 * idle spell before the reader is not counted as the reader's.
 *
 * Cost: each engine report compares two numbers; a hold and a release
 * each add one pass over the volume's segment stats; while a release
 * waits for GC, jr_tick passes over them at most every JN_SCAN_MS
 * (journal.c's own scan already does every segment at that rate). Only
 * with a journal (co->note): the simulator gives none, and its runs are
 * unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"

#define JN_HOLD_MS 1000        /* a PGMRPL standing this long below the VDL is held */
#define JR_SCAN_MS 250         /* how often a release's GC point is looked at */

struct jrvol {
  char name[64];
  uint64_t epoch;
  uint64_t pgmrpl;             /* the last PGMRPL reported */
  unsigned long long below_at; /* since when it has stood below the VDL (0: it is not) */
  int held;                    /* a hold is in the journal, its release is not */
  uint64_t recs, vers, bytes;  /* the segments' totals when it last moved (hold.c) */
  int gc_wait;                 /* released: the GC point has not passed it yet */
  uint64_t gc_pgmrpl, vol_id;
  unsigned long long released_at, scanned;
  struct jrvol *next;
};

struct jrep {
  struct jrvol *vols;
};

static struct jrvol *jrvol(struct coord *co, const char *name)
{
  if (co->jr == NULL)
    co->jr = calloc(1, sizeof *co->jr);
  for (struct jrvol *v = co->jr->vols; v; v = v->next)
    if (strcmp(v->name, name) == 0)
      return v;
  struct jrvol *v = calloc(1, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", name);
  v->next = co->jr->vols;
  co->jr->vols = v;
  return v;
}

/* The volume's segments over every node's last heartbeat: totals, and the
 * lowest GC point of those holding records (a segment holding nothing has
 * nothing to free), as status.c's read hold counts them. */
static void seg_totals(const struct coord *co, uint64_t vol_id, uint64_t *recs, uint64_t *vers,
                       uint64_t *bytes, uint64_t *min_gc)
{
  *recs = *vers = *bytes = 0;
  *min_gc = UINT64_MAX;
  uint64_t max_gc = 0;
  for (size_t i = 0; i < co->nnodes; i++) {
    const struct cnode *n = co->nodes[i];
    for (size_t j = 0; j < n->nstats; j++) {
      const Auralog__SegStat *s = &n->stats[j];
      if (s->volume_id != vol_id)
        continue;
      *recs += s->records;
      *vers += s->images;
      *bytes += s->bytes;
      if (s->records && s->gc_lsn < *min_gc)
        *min_gc = s->gc_lsn;
      max_gc = s->gc_lsn > max_gc ? s->gc_lsn : max_gc;
    }
  }
  /* None holds a record: GC freed everything it was given, up to the
   * furthest point a segment reached (an idle volume, once its segments
   * heard the PGMRPL: vfs/vtell.c vtell_pgmrpl). 0 here kept `gcpassed`
   * from ever being written when GC had freed all. */
  if (*min_gc == UINT64_MAX)
    *min_gc = max_gc;
}

/* The replica whose read point is the PGMRPL (the oldest reader first),
 * or NULL: the writer's own reads hold it. */
static const Auralog__ReplicaStat *holder(const Auralog__EngineStat *es)
{
  const Auralog__ReplicaStat *by = NULL;
  for (size_t i = 0; i < es->n_replicas; i++)
    if (es->replicas[i]->min_read_point == es->pgmrpl &&
        (by == NULL || es->replicas[i]->held_ms > by->held_ms))
      by = es->replicas[i];
  return by;
}

void jr_fields(const Auralog__EngineStat *es, char *out, size_t n)
{
  uint64_t applied = UINT64_MAX, lag_lsn = 0, lag_ms = 0;
  for (size_t i = 0; i < es->n_replicas; i++) {
    const Auralog__ReplicaStat *r = es->replicas[i];
    applied = r->applied < applied ? r->applied : applied;
    lag_lsn = r->lag_lsn > lag_lsn ? r->lag_lsn : lag_lsn;
    lag_ms = r->lag_ms > lag_ms ? r->lag_ms : lag_ms;
  }
  snprintf(out, n, ",\"pgmrpl\":%llu,\"replicas\":%zu,\"applied\":%llu,\"lag_lsn\":%llu,"
           "\"lag_ms\":%llu", (unsigned long long)es->pgmrpl, es->n_replicas,
           (unsigned long long)(es->n_replicas ? applied : 0), (unsigned long long)lag_lsn,
           (unsigned long long)lag_ms);
}

/* Every report of the volume's current writer (journal.c jn_engine, before
 * coord.c takes it: co->engines[k] still holds hold.c's note of when the
 * PGMRPL last moved). */
void jr_engine(struct coord *co, const Auralog__Volume *v, const Auralog__EngineStat *es)
{
  if (co->note == NULL || es->pgmrpl == 0)
    return;                    /* nothing to hold yet (a writer still recovering) */
  unsigned long long now = io_now(co->io);
  struct jrvol *j = jrvol(co, v->name);
  if (es->epoch != j->epoch) { /* a new writer: its PGMRPL starts over */
    j->epoch = es->epoch;
    j->pgmrpl = es->pgmrpl;
    j->below_at = 0;
    j->held = j->gc_wait = 0;
  }
  size_t k = 0;
  while (k < co->nvols && co->vols[k] != v)
    k++;
  const struct ereport *r = k < co->nvols ? &co->engines[k] : NULL;
  const Auralog__ReplicaStat *by = holder(es);
  uint64_t recs, vers, bytes, min_gc;
  if (es->pgmrpl != j->pgmrpl) {
    if (j->held) {
      /* It moved: what storage kept while it stood, and GC may go on. */
      seg_totals(co, v->id, &recs, &vers, &bytes, &min_gc);
      jn_event(co, "release", "\"volume\":\"%s\",\"epoch\":%llu,\"from\":%llu,\"to\":%llu,"
               "\"vdl\":%llu,\"ms\":%llu,\"growth_records\":%lld,\"growth_versions\":%lld,"
               "\"growth_bytes\":%lld,\"gc_lsn\":%llu", v->name, (unsigned long long)es->epoch,
               (unsigned long long)j->pgmrpl, (unsigned long long)es->pgmrpl,
               (unsigned long long)es->vdl, now - j->below_at,
               (long long)(recs - j->recs), (long long)(vers - j->vers),
               (long long)(bytes - j->bytes), (unsigned long long)min_gc);
      j->held = 0;
      j->gc_wait = 1;            /* jr_tick notes when GC passes it (maybe at once) */
      j->gc_pgmrpl = j->pgmrpl;
      j->vol_id = v->id;
      j->released_at = now;
    }
    j->pgmrpl = es->pgmrpl;
    j->below_at = 0;
  }
  if (es->pgmrpl >= es->vdl) {
    j->below_at = 0;           /* at the VDL: holding nothing back */
    return;
  }
  if (j->below_at == 0)
    j->below_at = now;
  if (j->held || now - j->below_at < JN_HOLD_MS)
    return;
  /* Held. The totals when it last moved are hold.c's (the same report
   * that began this hold noted them), so no pass is needed for those. */
  j->held = 1;
  j->recs = r ? r->hold_recs : 0;
  j->vers = r ? r->hold_vers : 0;
  j->bytes = r ? r->hold_bytes : 0;
  seg_totals(co, v->id, &recs, &vers, &bytes, &min_gc);
  jn_event(co, "hold", "\"volume\":\"%s\",\"epoch\":%llu,\"pgmrpl\":%llu,\"vdl\":%llu,"
           "\"ms\":%llu,\"replica\":\"%s\",\"client\":\"%s\",\"held_ms\":%llu,\"gc_lsn\":%llu,"
           "\"records\":%llu", v->name, (unsigned long long)es->epoch,
           (unsigned long long)es->pgmrpl, (unsigned long long)es->vdl, now - j->below_at,
           by ? by->addr : "", by ? by->holder : "", by ? (unsigned long long)by->held_ms : 0,
           (unsigned long long)min_gc, (unsigned long long)recs);
}

/* Every coordinator tick (journal.c jn_tick): a released PGMRPL's GC. */
void jr_tick(struct coord *co)
{
  if (co->note == NULL || co->jr == NULL)
    return;
  unsigned long long now = io_now(co->io);
  for (struct jrvol *j = co->jr->vols; j; j = j->next) {
    if (!j->gc_wait || now - j->scanned < JR_SCAN_MS)
      continue;
    j->scanned = now;
    uint64_t recs, vers, bytes, min_gc;
    seg_totals(co, j->vol_id, &recs, &vers, &bytes, &min_gc);
    if (min_gc <= j->gc_pgmrpl)
      continue;
    jn_event(co, "gcpassed", "\"volume\":\"%s\",\"epoch\":%llu,\"held\":%llu,\"gc_lsn\":%llu,"
             "\"ms\":%llu,\"records\":%llu", j->name, (unsigned long long)j->epoch,
             (unsigned long long)j->gc_pgmrpl, (unsigned long long)min_gc,
             now - j->released_at, (unsigned long long)recs);
    j->gc_wait = 0;
  }
}

void jr_failover(struct coord *co, const char *volume, const char *from, const char *to,
                 uint64_t from_epoch, uint64_t epoch, int asked, unsigned long long detect_ms,
                 unsigned long long took_ms)
{
  jn_event(co, "failover", "\"volume\":\"%s\",\"from\":\"%s\",\"to\":\"%s\",\"from_epoch\":%llu,"
           "\"epoch\":%llu,\"by\":\"%s\",\"detect_ms\":%llu,\"took_ms\":%llu", volume, from, to,
           (unsigned long long)from_epoch, (unsigned long long)epoch,
           asked ? "asked" : "detector", detect_ms, took_ms);
}

void jr_free(struct coord *co)
{
  if (co->jr == NULL)
    return;
  for (struct jrvol *v = co->jr->vols, *n; v; v = n) {
    n = v->next;
    free(v);
  }
  free(co->jr);
  co->jr = NULL;
}
