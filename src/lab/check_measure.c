/*
 * lab/check_measure.c: lab 10, measuring honestly: a benchmark claim
 * reproduced with its conditions and a fairly tuned baseline, and
 * application group commit (seeds 001 and 004).
 *
 * A claim such as "auralog does 0.5x the throughput of SQLite" means
 * nothing without its conditions (workload, clients, data, machine, file
 * system, durability) and the baseline it was measured against: stock
 * SQLite with a rollback journal and synchronous=FULL (sqlite-delete-full)
 * pays two fsyncs and more per commit, a strawman; SQLite in WAL mode with
 * synchronous=FULL (sqlite-wal-full) is the durable configuration a DBA
 * would pick, the fair one; SQLite in memory is not durable at all. And
 * group commit at the application (a leader running up to N concurrent
 * logical transactions in one SQL transaction) buys throughput with
 * latency: the leader waits for followers, the followers for the leader.
 *
 * The evidence is the "bench" events of the cluster's journal
 * (coord/journal.c): `auralog bench` notes every system's result and the
 * run's conditions with the user's coordinator (bench/note.c), so what a
 * check reads was measured, not typed. Every figure asked is compared with
 * those events, from the lab's window (since `lab start 10`, demos left
 * out): the ratios of the last comparison run, the group sizes' tx/s.
 */
#include <math.h>
#include <string.h>

#include "lab/lab.h"

#define GROUP_ASKED 5          /* the handout's group size */
#define RATIO_TOL   3          /* percentage points: the student reads rounded figures */

/* A system's result in the run of e (the same run number), or NULL. */
static const cJSON *in_run(struct labctx *x, const cJSON *e, const char *system, int group)
{
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *o = x->ev[i];
    if (is(o, "bench") && fnum(o, "run") == fnum(e, "run") &&
        !strcmp(fstr(o, "system"), system) && fnum(o, "group") == group)
      return o;
  }
  return NULL;
}

/* The same workload, clients and data as e (a fair pair of runs). */
static int same_load(const cJSON *a, const cJSON *b)
{
  return !strcmp(fstr(a, "workload"), fstr(b, "workload")) &&
         fnum(a, "clients") == fnum(b, "clients") && fnum(a, "tables") == fnum(b, "tables") &&
         fnum(a, "rows") == fnum(b, "rows");
}

/* An answer that is a percentage measured: within RATIO_TOL points of ref
 * (or 2% of it, for a large one: the ratios are printed with 2 decimals). */
static void want_pct(struct labctx *x, const char *key, double ref, const char *what)
{
  double tol = fmax(RATIO_TOL, 0.02 * ref);
  want_num(x, key, floor(ref - tol), ceil(ref + tol), round(ref), what);
}

void check10(struct labctx *x)
{
  if (!started(x, 10))
    return;
  /* The last comparison run: auralog and both SQLite baselines measured
   * together, without group commit. */
  const cJSON *au = NULL, *wal = NULL, *del = NULL;
  int runs = 0;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (!is(e, "bench"))
      continue;
    runs++;
    if (strcmp(fstr(e, "system"), "auralog") || fnum(e, "group") != 1)
      continue;
    const cJSON *w = in_run(x, e, "sqlite-wal-full", 1), *d = in_run(x, e, "sqlite-delete-full", 1);
    if (w && d)
      au = e, wal = w, del = d;
  }
  ok(x, runs > 0, "`auralog bench` runs were noted in the cluster's journal (%d results)", runs);
  ok(x, au != NULL, "a comparison: auralog, sqlite-wal-full and sqlite-delete-full measured in "
     "one bench run, without group commit");
  if (au)
    ok(x, fnum(au, "cores") > 0 && fstr(au, "filesystem")[0] && fnum(au, "duration_s") > 0,
       "its conditions are recorded: %s, %.0f clients, %.0f tables x %.0f rows, %.0f s "
       "measured after %.0f s, %.0f cores (%s), %s, kernel %s; auralog %.0f tx/s, "
       "sqlite-wal-full %.0f, sqlite-delete-full %.0f", fstr(au, "workload"),
       fnum(au, "clients"), fnum(au, "tables"), fnum(au, "rows"), fnum(au, "duration_s"),
       fnum(au, "warmup_s"), fnum(au, "cores"), fstr(au, "cpu"), fstr(au, "filesystem"),
       fstr(au, "kernel"), fnum(au, "tx_s"), fnum(wal, "tx_s"), fnum(del, "tx_s"));

  /* Group commit: the last auralog run at the handout's group size, and
   * the last without group commit under the same load to set it beside. */
  const cJSON *g = NULL, *g1 = NULL;
  for (size_t i = 0; i < x->nev; i++)
    if (is(x->ev[i], "bench") && !strcmp(fstr(x->ev[i], "system"), "auralog") &&
        fnum(x->ev[i], "group") == GROUP_ASKED)
      g = x->ev[i];
  for (size_t i = 0; g && i < x->nev; i++)
    if (is(x->ev[i], "bench") && !strcmp(fstr(x->ev[i], "system"), "auralog") &&
        fnum(x->ev[i], "group") == 1 && same_load(x->ev[i], g))
      g1 = x->ev[i];
  ok(x, g != NULL && fnum(g, "mean_group") > 1,
     "auralog ran with application group commit, --group %d%s", GROUP_ASKED,
     shown(g != NULL, " (%.2f logical transactions per SQL transaction)", fnum(g, "mean_group")));
  ok(x, g1 != NULL, "... and without it (--group 1) under the same workload, clients and data");
  /* The best group size: of every auralog run under that load. */
  const cJSON *best = NULL;
  for (size_t i = 0; g && i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (is(e, "bench") && !strcmp(fstr(e, "system"), "auralog") && same_load(e, g) &&
        (best == NULL || fnum(e, "tx_s") > fnum(best, "tx_s")))
      best = e;
  }
  if (g && g1)
    ok(x, 1, "group commit: %.0f tx/s at --group 1 (p50 %.2f ms, p99 %.2f ms), %.0f at "
       "--group %d (p50 %.2f ms, p99 %.2f ms)", fnum(g1, "tx_s"), fnum(g1, "p50_ms"),
       fnum(g1, "p99_ms"), fnum(g, "tx_s"), GROUP_ASKED, fnum(g, "p50_ms"), fnum(g, "p99_ms"));

  /* The answers: a claim with its conditions and a fair baseline ... */
  double nan = NAN;
  want_word(x, "fair_baseline", "sqlite-wal-full",
            "sqlite-wal-full|sqlite-delete-full|sqlite-memory",
            "the baseline a fair claim compares auralog with");
  want_pct(x, "ratio_fair_pct", au && fnum(wal, "tx_s") > 0 ?
           100 * fnum(au, "tx_s") / fnum(wal, "tx_s") : nan,
           "auralog's tx/s as a percentage of sqlite-wal-full's, in your last comparison run");
  want_pct(x, "ratio_strawman_pct", au && fnum(del, "tx_s") > 0 ?
           100 * fnum(au, "tx_s") / fnum(del, "tx_s") : nan,
           "auralog's tx/s as a percentage of sqlite-delete-full's, in the same run");
  double clients = au ? fnum(au, "clients") : nan;
  want_num(x, "claim_clients", clients, clients, clients,
           "the clients that comparison ran with (a condition of the claim)");
  /* ... and group commit. */
  double sp = g && g1 && fnum(g1, "tx_s") > 0 ? 100 * fnum(g, "tx_s") / fnum(g1, "tx_s") : nan;
  want_pct(x, "group_speedup_pct", sp,
           "auralog's tx/s at --group 5 as a percentage of its tx/s at --group 1");
  double bg = best ? fnum(best, "group") : nan;
  want_num(x, "best_group", bg, bg, bg, "the group size that gave auralog the most tx/s");
  want_word(x, "group_trades", "latency", "latency|durability|isolation",
            "what application group commit gives up for throughput");
}
