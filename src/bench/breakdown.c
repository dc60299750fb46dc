/*
 * breakdown.c: where one commit's time goes, as `auralog bench` prints it
 * for auralog: the engine's stage histograms (vfs/stages.h) over the
 * measured window, beside the clients' own end-to-end latency.
 *
 * The engine times each commit at every stage boundary on one monotonic
 * clock, which the clients share (one machine): their Query carries its
 * send time and the arrival of the previous reply (bench_sql_timed). The
 * bench reads the histograms through SELECT auralog_stats() when the
 * window opens and when it closes, and subtracts.
 *
 * The stages tile a client's round trip (its two stamps are the ones its
 * latency is measured between), so the sum of their means is the clients'
 * mean, but for the few commits that straddle the window's edges and for
 * microsecond rounding: the check bench prints, and its test holds it to
 * BREAKDOWN_MEAN_TOL. Medians do not add (each stage's median comes
 * from different commits); their sum is printed beside the clients' p50
 * for what it is, and held to the looser BREAKDOWN_P50_TOL.
 *
 * The persist stage is then split, for reading, not adding: the nodes'
 * own time in their store's commit (node-reported: the mean over every
 * node commit in the window, from their heartbeats), a loopback round
 * trip (the limit, limit.c), and what is left (waiting for the 4th of 6,
 * queueing on the nodes and the engine's I/O thread, CPU).
 */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "param.h"

int breakdown_fetch(struct rpc *r, struct breakdown *b, char *why, size_t n)
{
  memset(b, 0, sizeof *b);
  Env *rep = bench_sql(r, "SELECT auralog_stats()", 30000, why, n);
  if (rep == NULL)
    return -1;
  cJSON *o = NULL;
  if (rep->rows->n_rows == 1 && rep->rows->rows[0]->n_values == 1)
    o = cJSON_Parse(rep->rows->rows[0]->values[0]->text);
  wire_free(rep);
  cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "stages");
  if (st == NULL) {
    snprintf(why, n, "the engine's auralog_stats() has no stage timings");
    cJSON_Delete(o);
    return -1;
  }
  cJSON *sk = cJSON_GetObjectItemCaseSensitive(st, "skipped");
  b->skipped = cJSON_IsNumber(sk) ? sk->valuedouble : 0;
  for (int i = 0; i < ST_COUNT; i++)
    if (hist_from_json(&b->st[i], cJSON_GetObjectItemCaseSensitive(st, stage_info[i].key)) != 0) {
      snprintf(why, n, "the engine's stage timings have no '%s'", stage_info[i].key);
      cJSON_Delete(o);
      return -1;
    }
  cJSON_Delete(o);
  b->ok = 1;
  return 0;
}

void breakdown_window(struct breakdown *end, const struct breakdown *start)
{
  for (int i = 0; i < ST_COUNT; i++)
    hist_sub(&end->st[i], &start->st[i]);
  end->skipped -= start->skipped;
  end->ok = end->ok && start->ok;
}

/* The stages that tile the round trip: every one but ST_ENGINE. */
static void sums(const struct breakdown *b, double *p50, double *mean)
{
  *p50 = *mean = 0;
  for (int i = 0; i < ST_COUNT; i++)
    if (i != ST_ENGINE) {
      *p50 += hist_ms(&b->st[i], .5);
      *mean += hist_mean_ms(&b->st[i]);
    }
}

void breakdown_print(const char *system, const char *workload, int clients,
                     const struct breakdown *b, const struct hist *e2e,
                     const struct limit *lim)
{
  if (!b->ok) {
    printf("\nwhere one commit's time goes (%s): not measured: %s\n", system, b->err);
    return;
  }
  printf("\nwhere one commit's time goes (%s, %s, %d clients; %llu commits timed by the "
         "engine in the window, %.0f skipped):\n", system, workload, clients,
         (unsigned long long)b->st[ST_ENGINE].n, b->skipped);
  printf("  %-28s %8s %8s %8s  %s\n", "stage", "p50 ms", "mean ms", "p99 ms", "ends when");
  for (int i = 0; i < ST_COUNT; i++)
    if (i != ST_ENGINE)
      printf("  %-28s %8.3f %8.3f %8.3f  %s\n", stage_info[i].label, hist_ms(&b->st[i], .5),
             hist_mean_ms(&b->st[i]), hist_ms(&b->st[i], .99), stage_info[i].until);
  double p50, mean;
  sums(b, &p50, &mean);
  printf("  %-28s %8.3f %8.3f\n", "sum of the stages", p50, mean);
  printf("  %-28s %8.3f %8.3f %8.3f  (%llu transactions)\n", "end-to-end, the clients",
         hist_ms(e2e, .5), hist_mean_ms(e2e), hist_ms(e2e, .99), (unsigned long long)e2e->n);
  const struct hist *en = &b->st[ST_ENGINE];
  printf("  %-28s %8.3f %8.3f %8.3f  (arrival .. reply written, timed apart)\n",
         "in the engine", hist_ms(en, .5), hist_mean_ms(en), hist_ms(en, .99));
  if (e2e->n && hist_ms(e2e, .5) > 0)
    printf("  sum / end-to-end: means %.2f (the stages tile the round trip: expect within "
           "%.0f%%), p50s %.2f (medians do not add: within %.0f%%)\n",
           mean / hist_mean_ms(e2e), BREAKDOWN_MEAN_TOL * 100, p50 / hist_ms(e2e, .5),
           BREAKDOWN_P50_TOL * 100);
  double persist = hist_ms(&b->st[ST_PERSIST], .5);
  if (b->node_commits > 0 || lim->ok) {
    printf("  the persist stage (p50 %.3f ms) holds:", persist);
    if (b->node_commits > 0)
      printf(" a node's store commit (lmdb, its fdatasyncs), mean %.3f ms over the run's "
             "%.0f (node-reported);", b->node_persist_us / b->node_commits / 1000,
             b->node_commits);
    if (lim->ok)
      printf(" a loopback round trip, %.3f ms (the limit);", hist_ms(&lim->rtt, .5));
    printf(" the rest: the 4th of 6, queues, CPU\n");
  }
}

cJSON *breakdown_json(const struct breakdown *b, const struct hist *e2e)
{
  cJSON *o = cJSON_CreateObject();
  if (!b->ok) {
    cJSON_AddStringToObject(o, "error", b->err);
    return o;
  }
  cJSON_AddNumberToObject(o, "commits", (double)b->st[ST_ENGINE].n);
  cJSON_AddNumberToObject(o, "skipped", b->skipped);
  for (int i = 0; i < ST_COUNT; i++) {
    cJSON *s = cJSON_AddObjectToObject(o, stage_info[i].key);
    cJSON_AddNumberToObject(s, "p50_ms", hist_ms(&b->st[i], .5));
    cJSON_AddNumberToObject(s, "mean_ms", hist_mean_ms(&b->st[i]));
    cJSON_AddNumberToObject(s, "p99_ms", hist_ms(&b->st[i], .99));
    cJSON_AddNumberToObject(s, "n", (double)b->st[i].n);
  }
  double p50, mean;
  sums(b, &p50, &mean);
  cJSON_AddNumberToObject(o, "sum_p50_ms", p50);
  cJSON_AddNumberToObject(o, "sum_mean_ms", mean);
  cJSON_AddNumberToObject(o, "e2e_p50_ms", hist_ms(e2e, .5));
  cJSON_AddNumberToObject(o, "e2e_mean_ms", hist_mean_ms(e2e));
  cJSON_AddNumberToObject(o, "mean_tolerance", BREAKDOWN_MEAN_TOL);
  cJSON_AddNumberToObject(o, "p50_tolerance", BREAKDOWN_P50_TOL);
  if (b->node_commits > 0)
    cJSON_AddNumberToObject(o, "node_persist_mean_ms",
                            b->node_persist_us / b->node_commits / 1000);
  return o;
}
