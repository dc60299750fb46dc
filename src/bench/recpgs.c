/*
 * recpgs.c: `auralog bench recovery --pgs LIST`: how long the writer takes
 * to come back after a crash as the volume grows in protection groups.
 *
 * The claim (paper §4.3): recovery asks a read quorum of each PG how far
 * its log is complete, then writes a truncation to each; the paper's
 * recovery does not grow with the volume, as the PGs are asked in
 * parallel. In auralog each PG costs messages to six segments in each of
 * three rounds (state, scan, truncation) and, on each node, durable work
 * (a fence, a truncation): what this measures is how well that work is
 * batched and pipelined, per node and per turn.
 *
 * The table of recovery.c's workload is made once (a few PGs hold its
 * pages); then, at each size asked for, ascending, the coordinator grows
 * the volume to that many PGs (GrowVolume, as a writer growing its
 * volume does; the new PGs hold no records yet, but every one is fenced,
 * scanned and truncated like the others), and REPEATS times the engine
 * runs two transactions, is crashed and started again (recsys.c
 * eng_crash), taking its own recovery_ms. SQLite has no counterpart: its recovery does not depend
 * on the file's size, only on its WAL.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/recovery_int.h"
#include "lib/log.h"
#include "net/wire.h"
#include "param.h"

/* Grow volume main to npgs PGs, in requests the coordinator takes. */
static void grow_to(const struct eng *e, uint32_t npgs)
{
  char why[256];
  uint32_t have = 0;
  while (have < npgs) {
    uint32_t to = npgs - have > GROW_MAX_PGS_PER_REQUEST ? have + GROW_MAX_PGS_PER_REQUEST
                                                         : npgs;
    Env req = AURALOG__ENVELOPE__INIT;
    Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
    g.name = "main";
    g.npgs = to;
    req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
    req.grow_volume = &g;
    Env *rep = rpc_once(e->coord, &req, RPC_TIMEOUT_MS, why, sizeof why);
    if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why))
      die("bench recovery: growing volume main to %u PGs: %s", to, why);
    have = (uint32_t)rep->volume->n_pgs;
    wire_free(rep);
    if (have < to)
      die("bench recovery: the coordinator grew volume main to %u PGs, not %u", have, to);
  }
}

void rec_pgs(struct eng *e, const uint32_t *pgs, int n, int reps, uint64_t seed, int json,
             cJSON *out, cJSON *cond)
{
  static struct size zs[NSIZES];
  double recm[NSIZES], recx[NSIZES], firstm[NSIZES], openm[NSIZES];
  eng_write(e, 1, seed);                 /* the table, once */
  for (int i = 0; i < n; i++) {
    struct size *z = &zs[i];
    check_stop();
    progress(1, "auralog: growing the volume to %u PGs", pgs[i]);
    grow_to(e, pgs[i]);
    z->records = eng_records(e);
    z->nrep = reps;
    for (int k = 0; k < reps; k++) {
      check_stop();
      /* A writer in use: two transactions, so that what came before
       * them is under the VDL the segments heard, and recovery adopts
       * only the last one's records (as after any crash), not the
       * whole table's at every size. */
      eng_write(e, eng_records(e) + 2 * UPD, seed);
      z->records = eng_records(e);
      progress(1, "auralog: crash and restart %d of %d at %u PGs", k + 1, reps, pgs[i]);
      eng_crash(e, z, k, seed);
    }
    recx[i] = maxof(z->rec, reps);
    recm[i] = median(z->rec, reps);
    firstm[i] = median(z->first, reps);
    openm[i] = median(z->open, reps);
  }
  cJSON_AddStringToObject(cond, "pgs", "the volume grown to that many PGs before the "
                          "crashes; the table's pages are in the first few, the others "
                          "hold no records (each is fenced, scanned and truncated all the "
                          "same)");
  if (json) {
    cJSON *rs = cJSON_AddArrayToObject(out, "results");
    for (int i = 0; i < n; i++) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddNumberToObject(j, "pgs", pgs[i]);
      cJSON_AddNumberToObject(j, "auralog_recovery_ms", recm[i]);
      cJSON_AddNumberToObject(j, "auralog_recovery_ms_max", recx[i]);
      cJSON_AddNumberToObject(j, "auralog_open_ms", openm[i]);
      cJSON_AddNumberToObject(j, "auralog_first_query_ms", firstm[i]);
      cJSON_AddItemToArray(rs, j);
    }
    return;
  }
  printf("auralog bench recovery --pgs: recovery after a crash against the volume's PGs\n");
  printf("conditions:\n");
  cJSON *it;
  cJSON_ArrayForEach(it, cond) {
    if (cJSON_IsString(it))
      printf("  %-22s %s\n", it->string, it->valuestring);
    else
      printf("  %-22s %g\n", it->string, it->valuedouble);
  }
  printf("\n%8s | %9s %9s %8s %9s\n", "pgs", "recov_ms", "recov_max", "open_ms", "first_ms");
  for (int i = 0; i < n; i++)
    printf("%8u | %9.0f %9.0f %8.0f %9.1f\n", pgs[i], recm[i], recx[i], openm[i], firstm[i]);
  printf("\n  recov_ms   the engine's recovery (status recovery_ms): median, max of %d "
         "crashes\n"
         "  open_ms    the engine's open: recovery + first schema read (its log), median\n"
         "  first_ms   `cluster up` to the first answered query, median\n\n", reps);
  if (n > 1)
    printf("auralog recovery went from %.0f ms at %u PGs to %.0f ms at %u PGs (targets: "
           "<= 50 ms at 10, <= 500 ms at 1000)\n", recm[0], pgs[0], recm[n - 1], pgs[n - 1]);
}
