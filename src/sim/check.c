/*
 * check.c: the invariants of DESIGN.md §4, checked on the simulated world.
 *
 * Where each is checked:
 *   1. no acknowledged commit lost        workload_recovered: every recovery
 *                                         must keep every acknowledged (and
 *                                         every kept) transaction
 *   2. no partial MTR visible             workload_recovered: a recovery
 *                                         serves from a commit point
 *   3. VDL monotonic within an epoch      workload_acked
 *      old epochs fenced                  workload_acked: a superseded
 *                                         writer never acknowledges what
 *                                         the newer one truncated
 *   4. a page read equals the shadow      workload.c reads_check
 *      model of the page at its read point
 *   record cache: a node's cached         check_rcache, before each node
 *   records are the ones it stores        crash and at the end
 *   (store_rcache.c, Invariant R)
 *   6. no segment's SCL above its stored  check_end (and after every node
 *      chain; convergence after the heal  restart): the chain of backlinks
 *                                         from the SCL down is all there
 *   replica reads equal the shadow      replica.c check_page (from its
 *   at the replica's read point         cache or from storage at ra_need)
 *   R1, R2: the replica's point never   replica.c advance
 *   above a VDL told, never in an MTR
 *   R6: node GC never passes a point    replica.c check_gc
 *   the writer's PGMRPL holds
 *   failover (coord/failover.c):        failover.c sfo_opened (F1: a
 *   one epoch, one writer; no stale     promotion from E takes E+1 or
 *   read across a failover              nothing), check_step (no two
 *                                       writers serve one epoch),
 *                                       sfo_serving (F3: no older writer
 *                                       alive holds a read lease when a
 *                                       promoted one serves); F2, acked
 *                                       commits across a failover: as
 *                                       for every recovery, above
 *   11. node GC never frees what the     bkcheck.c, after every event; at
 *       backup does not hold; a restore  the end, restores at durable
 *       equals the shadow model          commits (runs with --faults backup)
 *   liveness: commits resume within SIM_HEAL_MS of the final heal, and
 *   every segment catches up with its PG within SIM_SETTLE_MS after (and
 *   the read replica, if any, with its writer: replica_end).
 * The first violation stops the run; its line is the seed's verdict.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simint.h"

static void trace_marks(struct world *w);

void violation(struct world *w, const char *fmt, ...)
{
  char line[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (w->res->violations++ == 0)
    snprintf(w->res->first, sizeof w->res->first, "at %llu ms: %s",
             (unsigned long long)sim_now(w->clock), line);
  /* The watermarks of this very event first (a check inside it, as at an
   * acknowledgement, stops the run before check_step would write them):
   * a timeline then finds the VDL that reached the commit. */
  if (w->o.trace)
    trace_marks(w);
  world_trace(w, "VIOLATION %s", line);
  w->stop = 1;
}

void trace_read(struct world *w, const char *who, uint32_t page, uint64_t rp, uint64_t lsn,
                int wrong)
{
  if (w->o.trace)
    fprintf(w->o.trace, "%8llu read %s %u %llu %llu %s\n", (unsigned long long)sim_now(w->clock),
            who, page, (unsigned long long)rp, (unsigned long long)lsn, wrong ? "wrong" : "ok");
}

static struct simwriter *serving(struct world *w)
{
  struct simwriter *best = NULL;
  for (int i = 0; i < SIM_WRITERS; i++)
    if (w->wr[i].state == W_SERVING && (best == NULL || w->wr[i].epoch > best->epoch))
      best = &w->wr[i];
  return best;
}

/* Watermarks into the trace, when they move: each writer's VDL, each
 * segment's SCL (what a timeline draws). */
static void trace_marks(struct world *w)
{
  for (int i = 0; i < SIM_WRITERS; i++) {
    struct simwriter *wr = &w->wr[i];
    if (wr->state != W_SERVING || wr->v->q.vdl == w->traced_vdl[i])
      continue;
    w->traced_vdl[i] = wr->v->q.vdl;
    fprintf(w->o.trace, "%8llu vdl w%d %llu %llu\n", (unsigned long long)sim_now(w->clock),
            i + 1, (unsigned long long)wr->epoch, (unsigned long long)wr->v->q.vdl);
  }
  for (int i = 0; i < SIM_NODES; i++) {
    struct node *n = w->nodes[i].n;
    for (size_t k = 0; n && k < n->nsegs; k++) {
      struct segment *s = n->segs[k];
      /* The highest LSN held too, where it is above the SCL: records
       * above a hole (what status writes S^M). */
      uint64_t max = s->max_lsn > s->scl ? s->max_lsn : s->scl;
      /* The first line of a segment even at 0: a node's first line for a
       * PG says it hosts it (a spare, once a repair moved one there). */
      if (s->pg >= SIM_PGS ||
          (w->traced_seen[i][s->pg] && s->scl == w->traced_scl[i][s->pg] &&
           max == w->traced_max[i][s->pg]))
        continue;
      w->traced_seen[i][s->pg] = 1;
      w->traced_scl[i][s->pg] = s->scl;
      w->traced_max[i][s->pg] = max;
      if (max > s->scl)
        fprintf(w->o.trace, "%8llu scl %s %u %llu %llu\n", (unsigned long long)sim_now(w->clock),
                w->nodes[i].id, s->pg, (unsigned long long)s->scl, (unsigned long long)max);
      else
        fprintf(w->o.trace, "%8llu scl %s %u %llu\n", (unsigned long long)sim_now(w->clock),
                w->nodes[i].id, s->pg, (unsigned long long)s->scl);
    }
  }
}

void check_step(struct world *w)
{
  if (w->o.trace)
    trace_marks(w);
  /* In the simulator every damage a disk suffers is detectable (a bit
   * flip under a CRC), so a segment that serves a page older than the
   * writer's last change to it is a node bug, even though the engine's
   * check refuses that page (vfs/pagelsn.h): only the stale-read fault,
   * which makes a node do it on purpose, excuses it. */
  for (int i = 0; i < SIM_WRITERS && !w->stop; i++) {
    struct simwriter *wr = &w->wr[i];
    if (wr->v && wr->v->st.stale_pages && w->res->faults[F_STALE_READ] == 0)
      violation(w, "writer %d (epoch %llu): a segment served a page older than the "
                "writer's last change to it (the engine refused it)", wr->i,
                (unsigned long long)wr->epoch);
  }
  /* One epoch, one writer (F1): two writers never serve in one epoch. */
  for (int i = 0; i < SIM_WRITERS && !w->stop; i++)
    for (int j = i + 1; j < SIM_WRITERS; j++)
      if (w->wr[i].state == W_SERVING && w->wr[j].state == W_SERVING &&
          w->wr[i].epoch == w->wr[j].epoch)
        violation(w, "writers %d and %d both serve epoch %llu", i, j,
                  (unsigned long long)w->wr[i].epoch);
  sfo_check(w);              /* one process per host (failover.c) */
  member_step(w);            /* membership changes (member.c) */
  bkcheck_step(w);           /* invariant 11, with backup on (bkcheck.c) */
  if (!w->healed || w->stop)
    return;
  uint64_t now = sim_now(w->clock);
  if (now >= w->heal_at + SIM_HEAL_MS && w->acked_after_heal == 0)
    violation(w, "liveness: no commit acknowledged in the %d ms after the final heal "
              "(writer %s)", SIM_HEAL_MS,
              serving(w) ? "serving" : "not serving");
}

/* The records of segment s at or below its SCL form one chain of
 * backlinks ending at the SCL (segment.h's invariant), starting at its GC
 * point (records at or below it were freed: node/store_pages.c). */
static void check_chain(struct world *w, struct simnode *sn, struct segment *s)
{
  uint64_t prev = s->gc_lsn, after = s->gc_lsn;
  int more = 1;
  while (more) {
    Rec **recs = NULL;
    long n = store_above(&sn->n->st, s, after, &recs, 4096, &more);
    if (n < 0)
      break;
    for (long i = 0; i < n; i++) {
      const Rec *r = recs[i];
      if (r->lsn <= s->scl && r->prev_lsn != prev && !w->stop) {
        for (uint64_t l = prev + 1; l < r->lsn && l < prev + 20; l++) {
          uint64_t ep = 0;
          int held = store_held(&sn->n->st, s, l, &ep);
          world_trace(w, "  lsn %llu: %s (epoch %llu)", (unsigned long long)l,
                      held ? "held but unreadable" : "not held", (unsigned long long)ep);
        }
        violation(w, "node %s pg %u: record %llu links to %llu, but the record before "
                  "it at or below scl %llu is %llu", sn->id, s->pg,
                  (unsigned long long)r->lsn, (unsigned long long)r->prev_lsn,
                  (unsigned long long)s->scl, (unsigned long long)prev);
      }
      if (r->lsn <= s->scl)
        prev = r->lsn;
      after = r->lsn;
    }
    for (long i = 0; i < n; i++)
      auralog__record__free_unpacked(recs[i], NULL);
    free(recs);
    if (n == 0)
      break;
  }
  if (prev != s->scl && !w->stop)
    violation(w, "node %s pg %u: scl %llu, but its chain ends at %llu", sn->id, s->pg,
              (unsigned long long)s->scl, (unsigned long long)prev);
}

void check_rcache(struct world *w, struct simnode *sn)
{
  char why[300];
  if (sn->n && !w->stop && store_rc_check(&sn->n->st, why, sizeof why) != 0)
    violation(w, "node %s: %s", sn->id, why);
}

void check_end(struct world *w)
{
  struct simwriter *wr = serving(w);
  if (w->acked_after_heal == 0 && !w->stop) {
    violation(w, "liveness: no commit acknowledged after the final heal (writer %s)",
              wr ? "serving" : "not serving");
    return;
  }
  for (int i = 0; i < SIM_NODES && !w->stop; i++) {
    struct simnode *sn = &w->nodes[i];
    if (sn->n == NULL)
      continue;
    check_rcache(w, sn);
    for (size_t k = 0; k < sn->n->nsegs && !w->stop; k++) {
      struct segment *s = sn->n->segs[k];
      check_chain(w, sn, s);
      /* Converged: every segment holds its PG up to the writer's tail. */
      if (wr && (s->pg < wr->v->npgs || (s->pg == BINLOG_PG && wr->v->has_binlog)) &&
          s->scl < wr->v->pgs[s->pg].durable_tail && !w->stop)
        violation(w, "node %s pg %u: scl %llu, %d ms after the heal settled, is behind "
                  "its PG's durable tail %llu: the segment did not converge", sn->id,
                  s->pg, (unsigned long long)s->scl, SIM_SETTLE_MS,
                  (unsigned long long)wr->v->pgs[s->pg].durable_tail);
    }
  }
  if (!w->stop && (w->sweep < SIM_PGS * SIM_PAGES || (wr && wr->nreads)))
    violation(w, "liveness: the final reads of every page did not finish within %d ms "
              "(%d of %d started)", SIM_SETTLE_MS, w->sweep, SIM_PGS * SIM_PAGES);
  replica_end(w);
  member_end(w);
  if (wr)
    binlog_end(w, wr->v->q.vdl);
  for (size_t i = 0; i < w->ntxs; i++)
    w->res->tx_truncated += w->txs[i].state == TX_TRUNCATED;
}
