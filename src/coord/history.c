/*
 * history.c: the dashboard's memory, kept by the coordinator.
 *
 * The page draws a timeline of the VDL, the VCL and every segment's SCL,
 * with the faults shaded. It used to start empty when opened: a student
 * who opens the dashboard after taking an AZ out sees nothing of it. So
 * the coordinator samples volume main once every HISTORY_EVERY_MS, in the
 * very shape the page records its own polls (dashboard.html record()),
 * and keeps the last HISTORY_SAMPLES; /history.json hands them over and
 * the page starts from them.
 *
 * A sample is small on purpose: the watermarks, the epoch, the engine's
 * state, each node's state, and the SCLs of the first HISTORY_PGS
 * protection groups (a volume of a thousand PGs would otherwise make
 * every sample hundreds of kilobytes; the page draws the rest from its
 * own polls). It is built straight from the coordinator's Status
 * (status_sample_json), never through the full status JSON: that costs
 * tens of milliseconds at a thousand PGs, every second, on the loop that
 * answers the writer and the nodes. Times go out as ages (ms before the answer), so the page
 * needs no clock agreement with the coordinator.
 *
 * Interface (history.h): dash_history_start(loop, sample, data) starts sampling
 * on the coordinator's loop; dash_history_json() is the answer to /history.json.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "coord/history.h"
#include "param.h"

struct sample {
  uint64_t at;                 /* uv_now when taken */
  char *json;                  /* {"ok":..., "vdl":..., ...}, no "t" */
};

static struct {
  uv_timer_t timer;
  http_sample_fn sample;
  void *data;
  struct sample ring[HISTORY_SAMPLES];
  size_t head, n;
} H;

static void on_tick(uv_timer_t *t)
{
  char *js = H.sample(H.data);
  if (js == NULL)
    return;                    /* no volume yet: nothing to remember */
  struct sample *s;
  if (H.n < HISTORY_SAMPLES) {
    s = &H.ring[(H.head + H.n++) % HISTORY_SAMPLES];
  } else {
    s = &H.ring[H.head];       /* the oldest goes */
    H.head = (H.head + 1) % HISTORY_SAMPLES;
    free(s->json);
  }
  s->at = uv_now(t->loop);
  s->json = js;
}

void dash_history_start(uv_loop_t *loop, http_sample_fn sample, void *data)
{
  H.sample = sample;
  H.data = data;
  uv_timer_init(loop, &H.timer);
  uv_timer_start(&H.timer, on_tick, HISTORY_EVERY_MS, HISTORY_EVERY_MS);
  uv_unref((uv_handle_t *)&H.timer);     /* it never keeps the loop alive alone */
}

char *dash_history_json(void)
{
  uint64_t now = uv_now(H.timer.loop ? H.timer.loop : uv_default_loop());
  size_t len = 64;
  for (size_t i = 0; i < H.n; i++)
    len += strlen(H.ring[(H.head + i) % HISTORY_SAMPLES].json) + 40;
  char *out = malloc(len), *p = out;
  p += sprintf(p, "{\"every_ms\":%d,\"samples\":[", HISTORY_EVERY_MS);
  for (size_t i = 0; i < H.n; i++) {
    const struct sample *s = &H.ring[(H.head + i) % HISTORY_SAMPLES];
    /* {"age_ms":N, + the sample's fields */
    p += sprintf(p, "%s{\"age_ms\":%llu,%s", i ? "," : "", (unsigned long long)(now - s->at),
                 s->json + 1);
  }
  strcpy(p, "]}");
  return out;
}
