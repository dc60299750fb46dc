/*
 * lab/check_reads.c: `auralog lab check 7`, what a reader sees (paper
 * §4.1 VDL, §4.2.3 reads at a read point, §4.3 recovery; DESIGN.md §4,
 * invariant 5).
 *
 * Aurora acknowledges a commit only once the VDL covers it, and a reader
 * reads at a read point no higher than the VDL: what any client is told
 * is durable. auralog's engine keeps that for reads too by default
 * (`--reads durable`: a reply waits until the VDL covers every commit its
 * snapshot could see); `--reads immediate` answers reads at once, so a
 * reader may see a commit that was never acknowledged and that a crash
 * takes away. And a writer that a newer epoch superseded must stop
 * answering: it learns of the epoch from its lease probe, within its read
 * lease at the latest.
 *
 * What the lab's history (the coordinator's journal since `lab start 7`)
 * must show, in order, and what the live cluster must hold:
 *  1. a stall under a writer with durable reads (its records short of a
 *     write quorum), during which it held a read's reply back (a
 *     `heldread`): the stalled row is there now, kept;
 *  2. a second writer, started by hand (not a promotion), with a new epoch
 *     e2; the first writer, still running, heard of it (a `fenced` line
 *     for its epoch) within its read lease of the new epoch;
 *  3. under e2, a `dirtyread`: an immediate read's reply showed commits
 *     above the VDL (up to LSN `seen`), and a stall below `seen`: that
 *     commit had no write quorum, and never became durable under e2 (no
 *     report of e2's writer, nor its unstall, has a VDL at `seen` or
 *     above). The two in either order: the coordinator journals a stall
 *     JN_STALL_MS after commits stop, and a person typing the read after
 *     the insert takes longer than that, a script less;
 *  4. a later epoch whose recovery's truncation begins below `seen`: the
 *     commit the reader saw was cut; the row is gone. Not necessarily the
 *     first later epoch: a promotion while AZs B and C are still down (a
 *     person is slower than the failover detector) takes an epoch whose
 *     recovery cannot finish, and the next writer's recovery truncates;
 *  5. the cluster restored: every node up, no partition, and the last
 *     writer's reads durable.
 * The answers are compared with those: the counts from the table, the
 * epoch that fenced the first writer, the lease, two words.
 */
#include <string.h>

#include "lab/lab.h"
#include "param.h"

/* What the window shows, in the order the lab makes it. */
struct l7 {
  double e1;                   /* the writer before the second one */
  char first[ADDR_MAX_LEN + 1];
  int durable_stall;           /* a stall under a durable-reads writer */
  int held;                    /* ... during which it held a read's reply back */
  const cJSON *second;         /* the second writer's epoch line */
  const cJSON *fenced;         /* the first writer hearing of it */
  const cJSON *dirty;          /* an immediate read above the VDL under e2 */
  const cJSON *stall2;         /* e2's stall still on at its end (an unstall ends one) */
  const cJSON *durable2;       /* an e2 report with the VDL at or above it after all */
  const cJSON *after;          /* the epoch line of the recovery that cut it */
  const cJSON *trunc;          /* ... and its truncation */
  double last_reads_epoch;     /* the last engine sample's epoch and mode */
  char last_reads[16];
};

/* The writer (address, epoch) as of journal index upto (exclusive). */
static void writer_before(struct labctx *x, long upto, char *addr, size_t n, double *epoch)
{
  addr[0] = 0;
  *epoch = -1;
  for (long i = 0; i < upto; i++) {
    const cJSON *e = hist_at(x, i);
    if (is(e, "epoch") || (is(e, "engine") && fnum(e, "epoch") > *epoch)) {
      snprintf(addr, n, "%s", fstr(e, is(e, "epoch") ? "writer" : "addr"));
      *epoch = fnum(e, "epoch");
    }
  }
}

static void replay(struct labctx *x, struct l7 *r)
{
  memset(r, 0, sizeof *r);
  r->last_reads_epoch = -1;
  writer_before(x, x->start + 1, r->first, sizeof r->first, &r->e1);
  /* The reads mode of each epoch's writer, from its samples (the first
   * one is taken while it opens, before its mode is set: later ones say). */
  double dur_epoch = -1;
  const cJSON *later = NULL;   /* the last epoch line after e2's */
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    double ep = fnum(e, "epoch");
    if (is(e, "engine")) {
      if (ep >= r->last_reads_epoch) {
        r->last_reads_epoch = ep;
        snprintf(r->last_reads, sizeof r->last_reads, "%s", fstr(e, "reads"));
      }
      if (!strcmp(fstr(e, "reads"), "durable") && fnum(e, "dirty_reads") == 0)
        dur_epoch = ep;
    }
    if (r->second == NULL) {
      if (is(e, "stall") && ep == dur_epoch)
        r->durable_stall = 1;
      if (is(e, "heldread") && r->durable_stall && ep == dur_epoch)
        r->held = 1;
      if (is(e, "epoch") && r->durable_stall && r->first[0] &&
          strcmp(fstr(e, "writer"), r->first) != 0 &&
          !cJSON_IsTrue(cJSON_GetObjectItem(e, "promotion"))) {
        r->second = e;
        continue;
      }
      if (is(e, "epoch")) {          /* another writer first: it is the first one now */
        snprintf(r->first, sizeof r->first, "%s", fstr(e, "writer"));
        r->e1 = ep;
      }
      continue;
    }
    double e2 = fnum(r->second, "epoch");
    if (is(e, "fenced") && !r->fenced && ep == r->e1 &&
        (!fstr(e, "addr")[0] || !strcmp(fstr(e, "addr"), r->first)))
      r->fenced = e;
    if (is(e, "epoch") && ep > e2)
      later = e;                 /* the epoch line of the next truncation */
    if (r->trunc)
      continue;
    if (is(e, "dirtyread") && ep == e2 && !r->dirty)
      r->dirty = e;
    if (is(e, "stall") && ep == e2)
      r->stall2 = e;             /* the latest: the one still on at the crash */
    if (is(e, "unstall") && ep == e2)
      r->stall2 = NULL;          /* it ended: a commit still stuck stalls again */
    if ((is(e, "engine") || is(e, "unstall")) && ep == e2 && r->dirty &&
        fnum(e, "vdl") >= fnum(r->dirty, "seen") && !r->durable2)
      r->durable2 = e;
    if (is(e, "trunc") && ep > e2 && r->dirty && r->stall2 && later &&
        fnum(later, "epoch") == ep) {
      r->trunc = e;
      r->after = later;
    }
  }
  /* A stall above what the read saw (its VDL already past it) is not
   * that commit's. */
  if (r->stall2 && r->dirty && fnum(r->stall2, "vdl") >= fnum(r->dirty, "seen"))
    r->stall2 = NULL;
}

void check7(struct labctx *x)
{
  if (!started(x, 7))
    return;
  struct l7 r;
  replay(x, &r);
  double e2 = r.second ? fnum(r.second, "epoch") : -1;
  double seen = r.dirty ? fnum(r.dirty, "seen") : -1;
  ok(x, r.durable_stall, "with durable reads, a commit stalled without a write quorum");
  ok(x, r.held, "meanwhile a read that saw it was held back, not answered");
  long long kept = sql_num(x, "select count(*) from lab07 where step = 'durable';");
  ok(x, kept == 1, "its row is there: an unacknowledged commit may still become durable%s",
     counted(kept));
  ok(x, r.second != NULL, "a second writer, started by hand, opened the volume with a new "
     "epoch%s", shown(r.second != NULL, " (%.0f)", e2));
  double fenced_ms = r.fenced && r.second ? fnum(r.fenced, "t") - fnum(r.second, "t") : -1;
  ok(x, r.fenced && fenced_ms <= READ_LEASE_MS, "the first writer%s, still running, heard of it "
     "within its %d ms read lease%s: fenced, it answers nothing",
     shown(r.e1 >= 0, " (epoch %.0f)", r.e1), READ_LEASE_MS,
     shown(r.fenced != NULL, " (%.0f ms after)", fenced_ms));
  ok(x, r.dirty != NULL, "the second writer (immediate reads) answered a read showing commits "
     "above its VDL%s", shown(r.dirty != NULL, " (seen %.0f, vdl %.0f)", seen,
                              fnum(r.dirty, "vdl")));
  ok(x, r.dirty && r.stall2 && !r.durable2, "that commit had no write quorum and never became "
     "durable%s%s%s", shown(r.second != NULL, " under epoch %.0f", e2),
     shown(r.dirty && !r.stall2 && !r.durable2, " (no stall of that epoch's writer below LSN "
           "%.0f)", seen),
     shown(r.durable2 != NULL, " (its VDL reached %.0f)", fnum(r.durable2, "vdl")));
  ok(x, r.after != NULL, "a later writer recovered the volume and truncated%s",
     shown(r.after != NULL, " (epoch %.0f)", fnum(r.after, "epoch")));
  ok(x, r.trunc && fnum(r.trunc, "from") < seen, "its truncation begins below what the "
     "immediate read saw%s", shown(r.trunc != NULL, " (from %.0f; the read saw %.0f)",
                                   fnum(r.trunc, "from"), seen));
  long long gone = sql_num(x, "select count(*) from lab07 where step = 'immediate';");
  ok(x, gone == 0, "the row the immediate read showed is gone%s", counted(gone));
  /* Restored, so later labs run: nodes up, no partition, durable reads. */
  struct nodes ns;
  memset(&ns, 0, sizeof ns);
  for (long i = 0; i < hist_len(x); i++)
    nodes_apply(&ns, hist_at(x, i));
  int parted = ns.part[0] || ns.part[1] || ns.part[2], up = 0, all = 0;
  cJSON *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(x->status, "nodes")) {
    all++;
    up += strcmp(cJSON_GetObjectItem(n, "state")->valuestring, "up") == 0;
  }
  ok(x, all > 0 && up == all && !parted, "the cluster is restored: %d of %d nodes up, %s", up,
     all, parted ? "a partition left" : "no partition");
  ok(x, r.after && r.last_reads_epoch >= fnum(r.after, "epoch") &&
     !strcmp(r.last_reads, "durable"), "the writer now serves durable reads%s%s",
     shown(r.last_reads[0] != 0, " (epoch %.0f: %s)", r.last_reads_epoch, r.last_reads),
     r.last_reads[0] ? "" : " (no report of a writer since the lab began)");
  long long before = sql_num(x, "select count(*) from lab07 where step in ('before', 'durable');");
  double nshown = before >= 0 ? (double)before + 1 : -1;
  want_num(x, "immediate_count", nshown, nshown, nshown,
           "rows the immediate read showed, the stalled one included");
  want_num(x, "count_after_recovery", (double)before, (double)before, (double)before,
           "rows after the recovery");
  want_num(x, "fenced_by", e2, e2, e2, "the epoch the first writer's refusal names");
  want_num(x, "lease_ms", READ_LEASE_MS, READ_LEASE_MS, READ_LEASE_MS,
           "the longest a superseded writer may go on answering (its read lease)");
  want_word(x, "shows_nondurable", "immediate", "durable|immediate",
            "the reads mode that can show data a crash takes away");
  want_word(x, "durable_stall_row", "kept", "kept|lost",
            "what became of the row the durable-reads stall held back");
  want_word(x, "read_refused_by", "engine", "engine|nodes|coordinator",
            "who refused the first writer's read");
}
