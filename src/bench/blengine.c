/*
 * blengine.c: what both binlog benchmarks (blbench_int.h) do with an
 * engine: start it in a binlog mode and tell a refusal (it exits before
 * serving, saying why: a mode not built yet) from a failure, and read its
 * binlog counters (SELECT auralog_stats(), vfs/binlog.h).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "bench/blbench_int.h"
#include "lib/log.h"

const char *const bl_mode_names[BL_MODES] = {"off", "community", "enhanced"};

int bl_parse_modes(const char *who, const char *opt, const char *s, int order[BL_MODES])
{
  int n = 0, seen[BL_MODES] = {0};
  char *list = strdup(s), *save = NULL;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int m = 0;
    while (m < BL_MODES && strcmp(bl_mode_names[m], t))
      m++;
    if (m == BL_MODES)
      die("%s: %s takes off, community and enhanced, comma-separated, not '%s'", who, opt, t);
    if (seen[m]++)
      die("%s: %s names %s twice", who, opt, t);
    order[n++] = m;
  }
  free(list);
  if (n == 0)
    die("%s: %s names no mode", who, opt);
  return n;
}

static double jnum(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int bl_stats(struct rpc *r, struct blstat *s, char *why, size_t n)
{
  memset(s, 0, sizeof *s);
  Env *rep = bench_sql(r, "SELECT auralog_stats()", BL_TX_MS, why, n);
  if (rep == NULL)
    return -1;
  cJSON *o = NULL;
  if (rep->rows->n_rows == 1 && rep->rows->rows[0]->n_values == 1)
    o = cJSON_Parse(rep->rows->rows[0]->values[0]->text);
  wire_free(rep);
  cJSON *b = cJSON_GetObjectItem(o, "binlog");
  if (o == NULL || !cJSON_IsObject(b)) {
    snprintf(why, n, "the engine's auralog_stats() has no \"binlog\" object");
    cJSON_Delete(o);
    return -1;
  }
  cJSON *m = cJSON_GetObjectItem(b, "mode");
  snprintf(s->mode, sizeof s->mode, "%s", cJSON_IsString(m) ? m->valuestring : "?");
  s->txns = jnum(b, "txns");
  s->events_bytes = jnum(b, "events_bytes");
  s->prepare_us = jnum(b, "prepare_us");
  s->binlog_us = jnum(b, "binlog_us");
  s->commit_us = jnum(b, "commit_us");
  s->fsyncs = jnum(b, "fsyncs");
  s->file_bytes = jnum(b, "file_bytes");
  s->scan_us = jnum(b, "scan_us");
  s->scan_bytes = jnum(b, "scan_bytes");
  s->scan_frames = jnum(b, "scan_frames");
  s->rolled_forward = jnum(b, "rolled_forward");
  s->commits = jnum(o, "commits");
  s->redo_bytes = jnum(o, "redo_bytes");
  cJSON_Delete(o);
  return 0;
}

/* What a process that died said last: the last "auralog: ..." line its
 * log got from offset from on (its die()), else its last line. */
static void last_words(const char *log, long from, char *why, size_t n)
{
  FILE *f = fopen(log, "r");
  char line[1024];
  snprintf(why, n, "it exited before serving, saying nothing; see %s", log);
  if (f == NULL)
    return;
  if (from > 0)
    fseek(f, from, SEEK_SET);
  int said = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!line[0])
      continue;
    if (!strncmp(line, "auralog: ", 9)) {
      snprintf(why, n, "%s", line + 9);
      said = 1;
    } else if (!said) {
      snprintf(why, n, "%s", line);
    }
  }
  fclose(f);
}

void bl_binlog_file(const char *cdir, const char *volume, char *out, size_t n)
{
  snprintf(out, n, "%s/engine-binlog/%s.binlog", cdir, volume);
}

void bl_binlog_gone(const char *cdir)
{
  char p[1200];
  snprintf(p, sizeof p, "%s/engine-binlog", cdir);
  bench_rm_tree(p);
}

int bl_engine_start(const char *log, const char *cdir, const char *addr, const char *coord,
                    const char *volume, int mode, int ms, pid_t *pid, char *why, size_t n)
{
  struct stat sb;
  long from = stat(log, &sb) == 0 ? (long)sb.st_size : 0;
  char file[1200];
  const char *argv[] = {"engine", "--volume", volume, "--listen", addr, "--coord", coord,
                        "--binlog", bl_mode_names[mode], NULL, NULL, NULL};
  if (mode == BL_COMMUNITY) {
    /* The file in the private cluster's directory (emptied with it), never
     * the default under $AURALOG_DIR or ~/.auralog: the user's. */
    snprintf(file, sizeof file, "%s/engine-binlog", cdir);
    if (bench_mkdirs(file) != 0) {
      snprintf(why, n, "cannot make %.300s: %s", file, strerror(errno));
      return -1;
    }
    bl_binlog_file(cdir, volume, file, sizeof file);
    argv[9] = "--binlog-file";
    argv[10] = file;
  }
  *pid = bench_start(log, argv);
  if (*pid < 0) {
    snprintf(why, n, "cannot start `auralog engine`");
    return -1;
  }
  double until = bench_now_us() + ms * 1e3;
  for (;;) {
    struct rpc r;
    char w[300];
    if (rpc_open(&r, addr, 500, w, sizeof w) == 0) {
      rpc_close(&r);
      return 0;
    }
    if (bench_exited(*pid)) {
      *pid = -1;
      last_words(log, from, why, n);
      return 1;
    }
    if (bench_now_us() > until || bench_interrupted) {
      bench_stop(*pid, 3000);
      *pid = -1;
      snprintf(why, n, "the engine did not serve within %d s (%.150s); see %.300s", ms / 1000,
               w, log);
      return -1;
    }
    usleep(5000);
  }
}
