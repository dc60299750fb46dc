/*
 * bench/note.c: a bench run's results, noted in the journal of the
 * user's cluster.
 *
 * `auralog bench` measures on a private cluster of its own, which it
 * stops at the end; what it measured would leave no trace a lab could
 * trust (its printout is a file a student can write). So, once the run is
 * over, the bench tells the coordinator of the user's own cluster
 * ($AURALOG_DIR or ~/.auralog, if one runs) what each system did and
 * under which conditions: one Fault message of action "bench" per system
 * (fault_send, rpc.h), which the coordinator writes as a "bench" event in
 * its MAC'd journal (coord/journal.c). Lab 10 grades a benchmark claim
 * from those events (lab/check_measure.c). Every system of one run
 * carries the same run number, so a check can compare systems measured
 * together, never figures of two different runs.
 *
 * Best effort: with no cluster running, or --no-note, nothing is noted and
 * the bench says so; its own figures are the same either way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench/bench_int.h"
#include "net/keyfile.h"
#include "lib/conf.h"

/* A condition the journal can quote (wire.c's text_ok): printable, no
 * quotes or backslashes, at most n - 1 bytes. */
static const char *clean(const cJSON *cond, const char *key, char *out, size_t n)
{
  const cJSON *v = cJSON_GetObjectItem(cond, key);
  snprintf(out, n, "%s", cJSON_IsString(v) ? v->valuestring : "unknown");
  for (char *c = out; *c; c++)
    if (*c < 0x20 || *c > 0x7e || *c == '"' || *c == '\\')
      *c = '?';
  return out;
}

/* The coordinator's address from the user's cluster.json, or -1. */
static int coord_of(char *coord, size_t n)
{
  cJSON *o = conf_load(NULL);
  int rc = conf_str(o, "coord", coord, n);
  cJSON_Delete(o);
  return rc;
}

void bench_note(const struct opts *o, const struct result *rs, cJSON *cond,
                const char *caller_key)
{
  char cj[1200], kp[1200], coord[ADDR_MAX_LEN + 1], why[400];
  fflush(stdout);            /* the table before this line, in a file with 2>&1 too */
  bench_dir(cj, sizeof cj, "cluster.json");
  if (coord_of(coord, sizeof coord) != 0) {
    fprintf(stderr, "results not noted in a cluster's journal: no cluster in %s "
            "(lab 10 reads them from a running cluster's journal)\n", cj);
    return;
  }
  /* The bench made a key of its own for its private cluster: the user's
   * cluster has its own (or the one the caller named). */
  if (caller_key)
    snprintf(kp, sizeof kp, "%s", caller_key);
  else
    bench_dir(kp, sizeof kp, "cluster.key");
  static struct auth_key k;
  if (key_read(kp, &k, why, sizeof why) != 0) {
    fprintf(stderr, "results not noted in the journal of %s: %s\n", coord, why);
    return;
  }
  key_set(&k);
  char cpu[97], kernel[65], fs[33];
  Auralog__BenchNote b = AURALOG__BENCH_NOTE__INIT;
  b.run = (uint32_t)((uint64_t)time(NULL) * 1000 + (uint64_t)getpid()) | 1;
  b.workload = (char *)wl_names[o->wl.kind];
  b.clients = (uint32_t)o->clients;
  b.group = (uint32_t)o->group;
  b.group_ms = (uint32_t)o->group_ms;
  b.duration_s = (uint32_t)o->duration;
  b.warmup_s = (uint32_t)o->warmup;
  b.tables = (uint32_t)o->wl.tables;
  b.rows = (uint32_t)o->wl.rows;
  b.reads = (char *)o->reads;
  const cJSON *cores = cJSON_GetObjectItem(cond, "cores");
  b.cores = cJSON_IsNumber(cores) ? (uint32_t)cores->valuedouble : 0;
  b.cpu = (char *)clean(cond, "cpu", cpu, sizeof cpu);
  b.kernel = (char *)clean(cond, "kernel", kernel, sizeof kernel);
  b.filesystem = (char *)clean(cond, "filesystem", fs, sizeof fs);
  int noted = 0, tried = 0;
  for (int i = 0; i < NSYS; i++) {
    const struct result *r = &rs[i];
    if (!r->ran || r->err[0] || r->h.n == 0)
      continue;              /* a system that failed measured nothing to claim */
    b.system = (char *)sys_names[i];
    b.mean_group = r->mean_group;
    b.tx_per_s = r->tx_s;
    b.p50_ms = hist_ms(&r->h, .5);
    b.p99_ms = hist_ms(&r->h, .99);
    b.errors = r->errors;
    Auralog__Fault f = AURALOG__FAULT__INIT;
    f.action = "bench";
    f.az = "";
    f.node = "";
    f.bench = &b;
    tried++;
    Env *rep = fault_send(coord, &f, why, sizeof why);
    if (rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_OK, why, sizeof why) == 0)
      noted++;
    wire_free(rep);
  }
  if (noted == tried)
    fprintf(stderr, "results noted in the journal of the cluster in %.*s (run %u, %d "
            "system%s)\n", (int)(strlen(cj) - strlen("/cluster.json")), cj, b.run, noted,
            noted == 1 ? "" : "s");
  else
    fprintf(stderr, "results noted in the cluster's journal: %d of %d (%s)\n", noted, tried,
            why);
}

/* The same for a benchmark of another shape (`auralog bench repair`): its
 * notes as they are (workload, system, figures), n of them, one run. */
void bench_note_each(Auralog__BenchNote *notes, int n, cJSON *cond, const char *caller_key)
{
  char cj[1200], kp[1200], coord[ADDR_MAX_LEN + 1], why[400];
  fflush(stdout);            /* the table before this line, in a file with 2>&1 too */
  bench_dir(cj, sizeof cj, "cluster.json");
  if (coord_of(coord, sizeof coord) != 0) {
    fprintf(stderr, "results not noted in a cluster's journal: no cluster in %s "
            "(lab 10 reads them from a running cluster's journal)\n", cj);
    return;
  }
  if (caller_key)
    snprintf(kp, sizeof kp, "%s", caller_key);
  else
    bench_dir(kp, sizeof kp, "cluster.key");
  static struct auth_key k;
  if (key_read(kp, &k, why, sizeof why) != 0) {
    fprintf(stderr, "results not noted in the journal of %s: %s\n", coord, why);
    return;
  }
  key_set(&k);
  static char cpu[97], kernel[65], fs[33];
  uint32_t run = (uint32_t)((uint64_t)time(NULL) * 1000 + (uint64_t)getpid()) | 1;
  const cJSON *cores = cJSON_GetObjectItem(cond, "cores");
  int noted = 0;
  for (int i = 0; i < n; i++) {
    Auralog__BenchNote *b = &notes[i];
    b->run = run;
    b->cores = cJSON_IsNumber(cores) ? (uint32_t)cores->valuedouble : 0;
    b->cpu = (char *)clean(cond, "cpu", cpu, sizeof cpu);
    b->kernel = (char *)clean(cond, "kernel", kernel, sizeof kernel);
    b->filesystem = (char *)clean(cond, "filesystem", fs, sizeof fs);
    Auralog__Fault f = AURALOG__FAULT__INIT;
    f.action = "bench";
    f.az = "";
    f.node = "";
    f.bench = b;
    Env *rep = fault_send(coord, &f, why, sizeof why);
    if (rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_OK, why, sizeof why) == 0)
      noted++;
    wire_free(rep);
  }
  if (noted == n)
    fprintf(stderr, "results noted in the journal of the cluster in %.*s (run %u, %d "
            "note%s)\n", (int)(strlen(cj) - strlen("/cluster.json")), cj, run, noted,
            noted == 1 ? "" : "s");
  else
    fprintf(stderr, "results noted in the cluster's journal: %d of %d (%s)\n", noted, n, why);
}
