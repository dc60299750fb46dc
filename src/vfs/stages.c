/*
 * stages.c: the engine's commit stage timings (see stages.h).
 */
#include <pthread.h>

#include "lib/hist.h"
#include "vfs/stages.h"

const struct stage_info stage_info[ST_COUNT] = {
  {"up", "client -> engine", "the engine's loop has the request"},
  {"queue", "wait for the writer", "the writer thread starts it"},
  {"sql", "SQL execution", "SQLite has written every page (FCNTL_SYNC)"},
  {"cut", "page diff, records, LSNs", "the redo has its LSNs (vol_ship)"},
  {"ship", "ship to 4 of 6 segments", "its commit record went to a 4th segment (batching waits for flights)"},
  {"persist", "nodes persist + acks, VDL", "the VDL passes the commit"},
  {"reply", "reply released", "the engine writes the reply"},
  {"down", "engine -> client", "the client has the reply"},
  {"engine", "in the engine", "arrival .. reply written"},
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct hist h[ST_COUNT];
static uint64_t skipped;

void stages_commit(const struct commit_stamps *s, const struct vol_ctime *vt,
                   uint64_t reply_us)
{
  /* The boundaries, in the order they must come. */
  uint64_t t[] = {s->arrive, s->start, s->sync, vt->cut_us, vt->sent_us, vt->durable_us,
                  reply_us};
  int ok = 1;
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    ok &= t[i] != 0 && (i == 0 || t[i] >= t[i - 1]);
  pthread_mutex_lock(&mu);
  if (!ok) {
    skipped++;
  } else {
    if (s->sent && s->sent <= s->arrive)
      hist_add(&h[ST_UP], (double)(s->arrive - s->sent));
    for (int i = 0; i < 6; i++)
      hist_add(&h[ST_QUEUE + i], (double)(t[i + 1] - t[i]));
    hist_add(&h[ST_ENGINE], (double)(reply_us - s->arrive));
  }
  pthread_mutex_unlock(&mu);
}

void stages_down(uint64_t us)
{
  pthread_mutex_lock(&mu);
  hist_add(&h[ST_DOWN], (double)us);
  pthread_mutex_unlock(&mu);
}

cJSON *stages_json(void)
{
  cJSON *o = cJSON_CreateObject();
  pthread_mutex_lock(&mu);
  cJSON_AddNumberToObject(o, "skipped", (double)skipped);
  for (int i = 0; i < ST_COUNT; i++)
    cJSON_AddItemToObject(o, stage_info[i].key, hist_json(&h[i]));
  pthread_mutex_unlock(&mu);
  return o;
}
