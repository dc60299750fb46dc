/*
 * lab/check_segment.c: `auralog lab check 8`, inside a segment: a hole
 * and its gossip fill (paper §3.3 step 4, §4.2.1), coalescing and GC at
 * the PGMRPL (§3.3 steps 5-8, §4.2.3).
 *
 * A segment's SCL is the highest LSN below which it holds every record of
 * its PG (the backlinks say which). When a node loses an Append (the lab
 * fault `drop`) the writer still reaches its 4/6 quorum without it and
 * never sends those records again: the node's segment then holds later
 * records above a hole, max_lsn > scl, and only its PG peers can fill it
 * (gossip; the lab turns the node's gossip off for a while so the hole
 * stays long enough to be seen). The coordinator journals the hole once
 * it has been open half a second and its fill, with the gossip the node
 * did meanwhile (coord/journal.c: hole, filled).
 *
 * Each segment coalesces records into page versions and frees (GC) what
 * no reader can still ask for: never above the PGMRPL, the lowest read
 * point of the writer and its replicas, which each Append carries. A read
 * transaction held open on a replica pins its read point, so the PGMRPL,
 * and with it every segment's GC point, stays while the VDL moves on; when
 * the reader ends, the next Append carries a higher PGMRPL and GC goes on.
 * The coordinator samples pg 0's GC points against the writer's PGMRPL and
 * VDL when they change (journal: gc). Node logs are never evidence.
 */
#include <math.h>
#include <string.h>

#include "lab/lab.h"

/* The hole: the drop fault, the first hole journaled on that node after
 * it (pg 0's if it had one), gossip back on, and the hole's fill. */
struct l8hole {
  const cJSON *drop, *hole, *fill;
  int gossip_on;               /* `fault gossip NODE on` after the hole opened */
};

static void find_hole(struct labctx *x, struct l8hole *h)
{
  memset(h, 0, sizeof *h);
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    const char *node = h->drop ? fstr(h->drop, "node") : "";
    if (is(e, "fault") && !strcmp(fstr(e, "action"), "drop")) {
      if (h->fill == NULL)         /* the last drop whose hole is not filled yet */
        h->drop = e, h->hole = NULL, h->gossip_on = 0;
    } else if (h->drop && is(e, "hole") && !strcmp(fstr(e, "node"), node) && h->fill == NULL &&
               (h->hole == NULL || (fnum(h->hole, "pg") != 0 && fnum(e, "pg") == 0))) {
      h->hole = e;
    } else if (h->hole && is(e, "fault") && !strcmp(fstr(e, "action"), "gossip") &&
               !strcmp(fstr(e, "node"), node) && fnum(e, "n") == 1) {
      h->gossip_on = 1;
    } else if (h->hole && h->fill == NULL && is(e, "filled") && !strcmp(fstr(e, "node"), node) &&
               fnum(e, "pg") == fnum(h->hole, "pg")) {
      h->fill = e;
    }
  }
}

/* The reader's hold, from pg 0's gc samples: a PGMRPL that stayed below a
 * VDL moving on for at least a second; what GC did meanwhile and after. */
struct l8gc {
  double held, held_ms, vdl_from, vdl_to, gc_max_held;  /* held: the PGMRPL pinned (-1: none) */
  double after_lo, after_hi;   /* PGMRPLs sampled after the hold ended, above it */
  double gc_after;             /* the highest GC point sampled after it */
  double coalesced, versions;  /* versions the nodes coalesced over the lab; pg 0's held at its end */
};

static void find_hold(struct labctx *x, struct l8gc *g)
{
  memset(g, 0, sizeof *g);
  g->held = g->after_lo = -1;
  double p = -1, t0 = 0, c0 = -1, gcm = 0;
  const cJSON *last = NULL;
  const cJSON *vol = cJSON_GetObjectItem(x->status, "volume");   /* main */
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (!is(e, "gc"))
      continue;
    if (!cJSON_IsString(vol) || strcmp(fstr(e, "volume"), vol->valuestring) != 0)
      continue;
    double pm = fnum(e, "pgmrpl"), vdl = fnum(e, "vdl");
    if (g->held >= 0 && pm > g->held) {   /* after the (chosen) hold */
      g->after_lo = g->after_lo < 0 ? pm : g->after_lo;
      g->after_hi = pm;
      g->gc_after = fnum(e, "gc_max") > g->gc_after ? fnum(e, "gc_max") : g->gc_after;
    }
    if (pm == p && pm < vdl) {            /* the run goes on */
      gcm = fnum(e, "gc_max") > gcm ? fnum(e, "gc_max") : gcm;
    } else {
      /* A run ended: keep it if it was a hold (a second or more, the VDL
       * 20 LSNs or more past it) longer than one kept. */
      if (p >= 0 && last && fnum(e, "t") - t0 >= 1000 && fnum(last, "vdl") - p >= 20 &&
          fnum(e, "t") - t0 > g->held_ms) {
        g->held = p, g->held_ms = fnum(e, "t") - t0;
        g->vdl_from = p, g->vdl_to = fnum(last, "vdl"), g->gc_max_held = gcm;
        g->after_lo = pm > p ? pm : -1;
        g->after_hi = pm;
        g->gc_after = pm > p ? fnum(e, "gc_max") : 0;
      }
      p = pm < vdl ? pm : -1;
      t0 = fnum(e, "t"), gcm = fnum(e, "gc_max");
    }
    if (c0 < 0)
      c0 = fnum(e, "coalesced");
    g->coalesced = fnum(e, "coalesced") - c0;
    g->versions = fnum(e, "versions");
    last = e;
  }
}

/* Every node up, none with a lab fault left on. */
static int restored(struct labctx *x, int *up)
{
  cJSON *n;
  int faults = 0;
  *up = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(x->status, "nodes")) {
    *up += strcmp(cJSON_GetObjectItem(n, "state")->valuestring, "up") == 0;
    faults += cJSON_IsTrue(cJSON_GetObjectItem(n, "partitioned")) ||
              cJSON_IsTrue(cJSON_GetObjectItem(n, "stale")) ||
              cJSON_IsTrue(cJSON_GetObjectItem(n, "no_gossip")) ||
              fnum(n, "slow_ms") > 0;
  }
  return faults == 0;
}

void check8(struct labctx *x)
{
  if (!started(x, 8))
    return;
  struct l8hole h;
  find_hole(x, &h);
  const char *node = h.drop ? fstr(h.drop, "node") : "";
  ok(x, h.drop != NULL, "a node lost Appends (`auralog fault drop`)%s%s", node[0] ? ": " : "",
     node);
  /* How long it was open: the fill says (the hole's own line is written
   * once it has been open JN_HOLE_MS, so its ms is only a lower bound). */
  ok(x, h.hole != NULL, "its segment held records above a hole%s%s",
     shown(h.hole != NULL, ": pg %.0f's SCL %.0f below its max_lsn %.0f", fnum(h.hole, "pg"),
           fnum(h.hole, "scl"), fnum(h.hole, "max_lsn")),
     h.fill ? shown(1, ", open %.1f s until it was filled", fnum(h.fill, "ms") / 1000)
            : shown(h.hole != NULL, ", open %.1f s or more", fnum(h.hole, "ms") / 1000));
  ok(x, h.gossip_on, "the node's gossip was turned back on (`auralog fault gossip %s on`)",
     node[0] ? node : "C1");
  ok(x, h.fill && fnum(h.fill, "gossip_msgs") > 0, "gossip with its PG peers filled the hole%s",
     shown(h.fill != NULL, ": the SCL jumped from %.0f to %.0f (%.0f gossip message%s)",
           fnum(h.fill, "from"), fnum(h.fill, "scl"), fnum(h.fill, "gossip_msgs"),
           h.fill && fnum(h.fill, "gossip_msgs") == 1 ? "" : "s"));

  struct l8gc g;
  find_hold(x, &g);
  ok(x, g.held >= 0, "a reader held the PGMRPL while the VDL moved on (a read transaction open "
     "on a replica, rows written meanwhile)%s", shown(g.held >= 0, ": at %.0f for %.1f s, the "
     "VDL from %.0f to %.0f", g.held, g.held_ms / 1000, g.vdl_from, g.vdl_to));
  ok(x, g.held >= 0 && g.gc_max_held <= g.held, "no segment's GC point passed the PGMRPL while "
     "it was held%s", shown(g.held >= 0, " (pg 0's highest: %.0f)", g.gc_max_held));
  ok(x, g.held >= 0 && g.after_lo > g.held && g.gc_after > g.held, "after the reader ended, the "
     "PGMRPL moved on and GC freed past the old point%s%s",
     shown(g.held >= 0 && g.after_lo > g.held, " (the PGMRPL moved to %.0f%s, and pg 0's "
           "GC point reached %.0f)", g.after_lo,
           g.after_hi > g.after_lo ? shown(1, ", then %.0f", g.after_hi) : "", g.gc_after),
     shown(g.held >= 0 && g.after_lo <= g.held, " (the PGMRPL stayed at %.0f)", g.held));
  ok(x, g.coalesced > 0 && g.versions > 0, "records were coalesced into page versions (%.0f "
     "made by the nodes; pg 0's segments keep %.0f)", g.coalesced, g.versions);
  int up;
  int clean = restored(x, &up);
  ok(x, up == NCOPIES && clean, "the cluster is restored: %d of %d nodes up, no lab fault left",
     up, NCOPIES);

  /* Not measured (no hole, no hold): NAN, and no answer is right. */
  double scl = h.hole ? fnum(h.hole, "scl") : NAN, from = h.fill ? fnum(h.fill, "from") : scl;
  want_num(x, "scl_hole", scl < from ? scl : from, scl > from ? scl : from, scl,
           "the SCL the segment stayed at while its hole was open");
  double mx = h.hole ? fnum(h.hole, "max_lsn") : NAN, to = h.fill ? fnum(h.fill, "scl") : mx;
  want_num(x, "max_lsn_hole", mx, to > mx ? to : mx, mx,
           "the highest LSN it held above the hole (status: ^N)");
  want_word(x, "who_fills", "peers", "engine|peers|coordinator",
            "who sent the segment the records it missed");
  want_num(x, "pgmrpl_held", g.held, g.held, g.held,
           "the PGMRPL while the replica's read transaction was open");
  want_num(x, "pgmrpl_after", g.held >= 0 ? g.after_lo : NAN, g.after_hi, g.after_lo,
           "the PGMRPL once the reader ended and a row was written");
  want_word(x, "gc_limit", "pgmrpl", "vdl|pgmrpl|scl",
            "what kept the GC point where it was while the reader was open");
}
