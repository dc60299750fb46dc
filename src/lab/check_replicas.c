/*
 * lab/check_replicas.c: lab 9's check: read replicas, their lag, a long
 * reader holding the PGMRPL (and so node GC), and failover to a replica.
 *
 * The concepts (paper §4.2.4, §4.2.3, §4.3; seed 004): a read replica
 * mounts the same storage volume as the writer and is fed the writer's
 * log stream; it applies records only up to the VDL, a whole MTR at a
 * time, and the writer never waits for it (its lag is its own). Every
 * reader, the replicas' read transactions included, has a read point; the
 * PGMRPL is the lowest of them, and no storage node frees a record or a
 * page version above it: one read transaction left open on a replica
 * keeps every segment of the volume growing (seed 004: Aurora's long
 * queries on a replica hold the writer's purge back). When the writer
 * dies, the coordinator, which hears from the writer and every replica,
 * chooses a replica and tells it to open the volume as the writer: a new
 * epoch, a recovery, and the old writer fenced.
 *
 * What the check reads: the lab's history (the coordinator's journal,
 * coord/jreplica.c's events: engine samples with the replicas' applied
 * point and lag, hold / release / gc of the PGMRPL, failover) and the
 * cluster now (status: the nodes, the writer, the replicas; SQL on a
 * replica). Answers: the PGMRPL the reader held and the epoch the
 * promoted replica took (exactly: both are printed by the steps), the
 * failover's time (within FO_TOL_MS of the coordinator's: a student
 * reading status to a tenth of a second, or timing it, is that close),
 * and three words.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define FO_TOL_MS 300          /* failover_ms: within this of the journal's took_ms */
#define LAB9_ROWS 20           /* the rows step 1 writes (labs/lab09-replicas) */

/* What lab 9's window shows, in order. */
struct l9 {
  double base_vdl, base_commits, base_epoch;   /* the writer's last sample before the lab */
  int fed;                     /* the writer committed and a replica applied past base_vdl */
  double applied, lag_lsn, lag_ms;
  const cJSON *hold, *release, *gc;   /* one hold, its release, GC passing it */
  const cJSON *crash, *fo;     /* the writer crashed; the promotion that followed */
};

static void l9_replay(struct labctx *x, struct l9 *r)
{
  memset(r, 0, sizeof *r);
  r->base_epoch = -1;
  for (long i = x->start; i >= 0; i--)
    if (is(hist_at(x, i), "engine")) {
      r->base_vdl = fnum(hist_at(x, i), "vdl");
      r->base_commits = fnum(hist_at(x, i), "commits");
      r->base_epoch = fnum(hist_at(x, i), "epoch");
      break;
    }
  const cJSON *hold = NULL, *release = NULL;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (is(e, "engine")) {
      /* The lab's own writes, and a replica applying them; a new writer
       * (after a failover) counts from its own start: its LSNs begin
       * past the old VDL. */
      if (r->base_epoch >= 0 && fnum(e, "epoch") != r->base_epoch)
        r->base_vdl = r->base_commits = 0, r->base_epoch = fnum(e, "epoch");
      if (fnum(e, "replicas") >= 1 && fnum(e, "commits") > r->base_commits &&
          fnum(e, "applied") > r->base_vdl) {
        r->fed = 1;
        r->applied = fnum(e, "applied");
      }
      r->lag_lsn = fmax(r->lag_lsn, fnum(e, "lag_lsn"));
      r->lag_ms = fmax(r->lag_ms, fnum(e, "lag_ms"));
    } else if (is(e, "hold") && !r->gc) {
      /* A read transaction on a replica (one with a client) held it; a
       * later hold, before GC passed this one, replaces it. */
      if (fstr(e, "replica")[0] && fstr(e, "client")[0])
        hold = e, release = NULL;
    } else if (is(e, "release") && hold && !release && fnum(e, "from") == fnum(hold, "pgmrpl") &&
               fnum(e, "epoch") == fnum(hold, "epoch")) {
      release = e;
    } else if (is(e, "gcpassed") && release && !r->gc && fnum(e, "held") == fnum(hold, "pgmrpl") &&
               fnum(e, "epoch") == fnum(hold, "epoch")) {
      r->gc = e;
    } else if (is(e, "fault") && (!strcmp(fstr(e, "action"), "writer-crash") ||
                                  !strcmp(fstr(e, "action"), "engine-crash"))) {
      if (!r->fo)
        r->crash = e;          /* the last crash before a promotion */
    } else if (is(e, "failover") && r->crash && !r->fo &&
               fnum(e, "from_epoch") == fnum(r->crash, "epoch")) {
      r->fo = e;
    }
  }
  r->hold = hold;
  r->release = release;
}

/* Is addr one of the replicas status lists now? */
static int is_replica(struct labctx *x, const char *addr)
{
  cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItem(x->status, "replicas"))
    if (!strcmp(fstr(r, "addr"), addr))
      return 1;
  return 0;
}

/* Rows of lab09 as the first replica status lists reads them (-1: none). */
static long long replica_rows(struct labctx *x, char *addr, size_t n)
{
  cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(x->status, "replicas"), 0);
  char out[256], writer[sizeof x->engine];
  snprintf(addr, n, "%s", r ? fstr(r, "addr") : "");
  if (!addr[0])
    return -1;
  /* query() asks x->engine: point it at the replica for this one read. */
  snprintf(writer, sizeof writer, "%s", x->engine);
  snprintf(x->engine, sizeof x->engine, "%s", addr);
  int rc = query(x, "select count(*) from lab09;", out, sizeof out);
  snprintf(x->engine, sizeof x->engine, "%s", writer);
  return rc == 0 ? atoll(out) : -1;
}

void check9(struct labctx *x)
{
  if (!started(x, 9))
    return;
  struct l9 r;
  l9_replay(x, &r);
  ok(x, r.fed, "the writer committed and a replica applied its records%s",
     shown(r.fed, " (applied vdl %.0f; lag up to %.0f LSNs, %.0f ms)", r.applied, r.lag_lsn,
           r.lag_ms));
  double held = r.hold ? fnum(r.hold, "pgmrpl") : NAN;   /* NAN: no hold, no right answer */
  ok(x, r.hold != NULL, "a read transaction on a replica held the PGMRPL while the VDL moved "
     "on%s", shown(r.hold != NULL, " (at %.0f: replica %s, client %s)", held,
                   fstr(r.hold, "replica"), fstr(r.hold, "client")));
  /* What the hold does: GC stops at the held point, so every record
   * written above it stays on every segment. The evidence is GC at or
   * below the point at both ends of the hold (while the VDL moved on,
   * above). The volume's totals are shown, not required to grow: GC may
   * still free, during the hold, records below the held point that it
   * had not reached when the hold began, and with few writes meanwhile
   * they fall (under make test SAN=1: -62 records, -6152 bytes, a right
   * run; nodes learn their peers' SCLs sooner since a4dfce7). */
  ok(x, r.release && fnum(r.hold, "gc_lsn") <= held && fnum(r.release, "gc_lsn") <= held,
     "meanwhile GC stayed at or below it: every record above it was kept%s%s",
     shown(r.hold != NULL && r.release != NULL, " (gc point %.0f, then %.0f)",
           fnum(r.hold, "gc_lsn"), fnum(r.release, "gc_lsn")),
     shown(r.release != NULL, "; the volume's segments: %+.0f records, %+.0f bytes",
           fnum(r.release, "growth_records"), fnum(r.release, "growth_bytes")));
  ok(x, r.release != NULL, "the reader ended and the PGMRPL moved on%s",
     shown(r.release != NULL, " (%.0f -> %.0f, held %.0f ms)", held, fnum(r.release, "to"),
           fnum(r.release, "ms")));
  ok(x, r.gc != NULL, "node GC passed the old read point%s",
     shown(r.gc != NULL, " (gc point %.0f > %.0f, %.0f ms later)", fnum(r.gc, "gc_lsn"), held,
           fnum(r.gc, "ms")));
  ok(x, r.crash != NULL, "the writer was crashed (`auralog fault writer-crash`)");
  int detected = r.fo && !strcmp(fstr(r.fo, "by"), "detector");
  ok(x, detected, "the coordinator found it lost and promoted a replica%s",
     shown(r.fo != NULL, ": %s took epoch %.0f, %.0f ms after the old writer's last sign of "
           "life%s", fstr(r.fo, "to"), fnum(r.fo, "epoch"), fnum(r.fo, "took_ms"),
           detected ? "" : " (promoted by hand, not by the detector)"));
  /* The cluster now: whole, the promoted replica writing, the old writer
   * back as a replica, the lab's rows readable there. */
  cJSON *n;
  int up = 0, nodes = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(x->status, "nodes")) {
    nodes++;
    up += !strcmp(fstr(n, "state"), "up");
  }
  cJSON *fo = cJSON_GetObjectItem(x->status, "failover");
  const char *writer = fstr(fo, "writer");
  int eng_up = !strcmp(fstr(cJSON_GetObjectItem(x->status, "engine"), "state"), "up");
  int nrep = cJSON_GetArraySize(cJSON_GetObjectItem(x->status, "replicas"));
  ok(x, r.fo && is_replica(x, fstr(r.fo, "from")), "the old writer%s came back as a read "
     "replica (`auralog cluster up`)", shown(r.fo != NULL, " %s", fstr(r.fo, "from")));
  ok(x, up == nodes && nodes > 0 && eng_up && nrep >= 1, "the cluster is whole: %d of %d nodes "
     "up, the writer%s %s, %d replica%s", up, nodes, shown(writer[0] != 0, " %s", writer),
     eng_up ? "up" : "down", nrep, nrep == 1 ? "" : "s");
  char raddr[sizeof x->engine];
  long long rows = replica_rows(x, raddr, sizeof raddr);
  ok(x, rows >= LAB9_ROWS, "a replica reads the lab's rows%s%s",
     shown(raddr[0] != 0, " (%s)", raddr), raddr[0] ? counted(rows) : " (status lists none)");
  double ep = r.fo ? fnum(r.fo, "epoch") : NAN, took = r.fo ? fnum(r.fo, "took_ms") : -1;
  want_word(x, "replica_applies", "vdl", "vdl|vcl|scl",
            "the point up to which a replica applies the writer's records");
  want_num(x, "pgmrpl_held", held, held, held, "the PGMRPL the open read transaction held");
  want_word(x, "holds_gc", "pgmrpl", "pgmrpl|vdl|scl",
            "the point above which a storage node frees nothing");
  want_num(x, "epoch_after", ep, ep, ep, "the epoch the promoted replica took");
  want_num(x, "failover_ms", took >= 0 ? took - FO_TOL_MS : NAN,
           took >= 0 ? took + FO_TOL_MS : NAN, took,
           "ms from the old writer's last sign of life to the new epoch");
  want_word(x, "who_promotes", "coordinator", "coordinator|replica|nodes",
            "who chose the replica to promote");
}
