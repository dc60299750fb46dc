/*
 * bklag.c: how far the backup trails the commits, and what a restore
 * costs, for `auralog bench`'s auralog-backup system (bench.c).
 *
 * Lag. A thread samples, every BKLAG_MS, the volume's VDL (the
 * coordinator's status, which the engine refreshes every ENGINE_STAT_MS)
 * and the point every PG's backup reaches in the object store
 * (restore_window: the highest LSN a restore could take now). A sample's
 * lag is how long after it the backup first reached the VDL it shows:
 * how long a commit durable then waited to become restorable, which is
 * what a person restoring after a mistake may lose. Its resolution is a
 * sample's period (BKLAG_MS and the time a sample takes), and the status
 * VDL is up to ENGINE_STAT_MS old. The samples span the whole run, the
 * load included; a sample the backup never reached before the run ended
 * counts as lagging until then.
 *
 * Restore. Once the run is over, the volume is restored twice into a file
 * (restore_build: the objects read, the pages rebuilt, PRAGMA
 * integrity_check): at the newest point, and at the point the backup
 * reached when the measured window began (an older target: more log after
 * the same base), each timed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/objstore.h"
#include "backup/restore.h"
#include "bench/bench_int.h"
#include "cli/status.h"
#include "lib/log.h"

#define BKLAG_MS 200

struct sample {
  double t;                  /* seconds since the sampler began */
  uint64_t vdl, point;
};

struct bklag {
  char coord[64], volume[64], url[1200];
  pthread_t th;
  int stop;
  pthread_mutex_t mu;
  struct sample *s;
  size_t n, cap;
  uint64_t vol;
};

static double secs(void)
{
  return (double)now_us() / 1e6;
}

static void *sampler(void *arg)
{
  struct bklag *b = arg;
  char why[400];
  struct objstore *st = obj_open(b->url, why, sizeof why);
  double t0 = secs();
  for (;;) {
    pthread_mutex_lock(&b->mu);
    int stop = b->stop;
    pthread_mutex_unlock(&b->mu);
    if (stop || st == NULL)
      break;
    Env *e = status_fetch(b->coord, b->volume, why, sizeof why);
    uint64_t lo, hi;
    uint32_t npgs;
    if (e && e->status->exists && e->status->volume && e->status->engine &&
        e->status->engine->vdl > 0 &&
        restore_window(st, e->status->volume->id, &lo, &hi, &npgs, why, sizeof why) == 0) {
      pthread_mutex_lock(&b->mu);
      if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->s = realloc(b->s, b->cap * sizeof *b->s);
      }
      b->s[b->n++] = (struct sample){secs() - t0, e->status->engine->vdl, hi};
      b->vol = e->status->volume->id;
      pthread_mutex_unlock(&b->mu);
    }
    wire_free(e);
    usleep(BKLAG_MS * 1000);
  }
  obj_close(st);
  return NULL;
}

struct bklag *bklag_start(const char *coord, const char *volume, const char *url)
{
  struct bklag *b = calloc(1, sizeof *b);
  snprintf(b->coord, sizeof b->coord, "%s", coord);
  snprintf(b->volume, sizeof b->volume, "%s", volume);
  snprintf(b->url, sizeof b->url, "%s", url);
  pthread_mutex_init(&b->mu, NULL);
  pthread_create(&b->th, NULL, sampler, b);
  return b;
}

static int dbl_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A restore of vol at to_lsn (0: the newest) into a scratch file: its
 * seconds (-1: it failed). */
static double timed_restore(const char *url, uint64_t vol, uint64_t to_lsn, const char *dir)
{
  char why[600], path[1300];
  snprintf(path, sizeof path, "%s/bench-restore.db", dir);
  struct objstore *st = obj_open(url, why, sizeof why);
  if (st == NULL)
    return -1;
  struct rs_target t = {to_lsn, 0};
  struct rs_result r;
  double t0 = secs();
  int rc = restore_build(st, vol, &t, path, &r, why, sizeof why);
  double s = secs() - t0;
  obj_close(st);
  unlink(path);
  if (rc != 0)
    fprintf(stderr, "bench: restore to %llu: %s\n", (unsigned long long)to_lsn, why);
  return rc == 0 ? s : -1;
}

void bklag_stop(struct bklag *b, const char *dir, double window_s, struct result *res)
{
  pthread_mutex_lock(&b->mu);
  b->stop = 1;
  pthread_mutex_unlock(&b->mu);
  pthread_join(b->th, NULL);
  res->bk_lag_p50_ms = res->bk_lag_p99_ms = res->bk_lag_max_ms = -1;
  res->bk_restore_new_s = res->bk_restore_old_s = -1;
  if (b->n > 0) {
    double *lag = malloc(b->n * sizeof *lag);
    for (size_t k = 0; k < b->n; k++) {
      /* The first sample at or after k whose backup point reached k's VDL. */
      size_t i = k;
      while (i + 1 < b->n && b->s[i].point < b->s[k].vdl)
        i++;
      lag[k] = (b->s[i].t - b->s[k].t) * 1000;
    }
    qsort(lag, b->n, sizeof *lag, dbl_cmp);
    res->bk_lag_p50_ms = lag[b->n / 2];
    res->bk_lag_p99_ms = lag[(size_t)((double)(b->n - 1) * 0.99)];
    res->bk_lag_max_ms = lag[b->n - 1];
    res->bk_lag_samples = (double)b->n;
    free(lag);
    /* The older target: the point the backup showed when the measured
     * window began (window_s before the end). */
    double begin = b->s[b->n - 1].t - window_s;
    uint64_t old = 0;
    for (size_t i = 0; i < b->n && b->s[i].t <= begin; i++)
      old = b->s[i].point;
    sleep(1);                  /* the last pass */
    res->bk_restore_new_s = timed_restore(b->url, b->vol, 0, dir);
    res->bk_restore_old_lsn = (double)old;
    if (old > 0)
      res->bk_restore_old_s = timed_restore(b->url, b->vol, old, dir);
  }
  free(b->s);
  pthread_mutex_destroy(&b->mu);
  free(b);
}
