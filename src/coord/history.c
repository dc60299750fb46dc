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
 * own polls). Times go out as ages (ms before the answer), so the page
 * needs no clock agreement with the coordinator.
 *
 * Interface (history.h): dash_history_start(loop, status, data) starts sampling
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
  http_status_fn status;
  void *data;
  struct sample ring[HISTORY_SAMPLES];
  size_t head, n;
} H;

/* The page's state of a node (dashboard.html nodeState). */
static const char *node_state(const cJSON *n)
{
  const cJSON *st = cJSON_GetObjectItem(n, "state");
  if (!cJSON_IsString(st) || strcmp(st->valuestring, "up") != 0)
    return "down";
  if (cJSON_IsTrue(cJSON_GetObjectItem(n, "partitioned")))
    return "partitioned";
  const cJSON *slow = cJSON_GetObjectItem(n, "slow_ms");
  if (cJSON_IsNumber(slow) && slow->valuedouble > 0)
    return "slow";
  return "up";
}

/* The status object st as the page's sample (record()). */
static char *sample_of(const cJSON *st)
{
  cJSON *s = cJSON_CreateObject();
  cJSON_AddBoolToObject(s, "ok", 1);
  const cJSON *eng = cJSON_GetObjectItem(st, "engine");
  const cJSON *addr = cJSON_GetObjectItem(eng, "addr");
  if (cJSON_IsString(addr) && addr->valuestring[0]) {
    cJSON_AddItemToObject(s, "vdl", cJSON_Duplicate(cJSON_GetObjectItem(st, "vdl"), 1));
    cJSON_AddItemToObject(s, "vcl", cJSON_Duplicate(cJSON_GetObjectItem(st, "vcl"), 1));
  }
  cJSON_AddItemToObject(s, "epoch", cJSON_Duplicate(cJSON_GetObjectItem(st, "epoch"), 1));
  cJSON_AddItemToObject(s, "commits", cJSON_Duplicate(cJSON_GetObjectItem(st, "commits"), 1));
  cJSON_AddItemToObject(s, "engine", cJSON_Duplicate(cJSON_GetObjectItem(eng, "state"), 1));
  cJSON_AddNumberToObject(s, "ntruncs", cJSON_GetArraySize(cJSON_GetObjectItem(st, "truncations")));
  cJSON *nodes = cJSON_AddObjectToObject(s, "nodes"), *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(st, "nodes")) {
    const cJSON *id = cJSON_GetObjectItem(n, "id");
    if (cJSON_IsString(id))
      cJSON_AddStringToObject(nodes, id->valuestring, node_state(n));
  }
  cJSON *scl = cJSON_AddObjectToObject(s, "scl"), *pg;
  int k = 0;
  cJSON_ArrayForEach(pg, cJSON_GetObjectItem(st, "pgs")) {
    if (k++ >= HISTORY_PGS)
      break;
    const cJSON *no = cJSON_GetObjectItem(pg, "pg"), *seg;
    cJSON_ArrayForEach(seg, cJSON_GetObjectItem(pg, "segments")) {
      const cJSON *node = cJSON_GetObjectItem(seg, "node"), *v = cJSON_GetObjectItem(seg, "scl");
      char key[64];
      if (!cJSON_IsString(node) || !cJSON_IsNumber(v) || v->valuedouble == 0)
        continue;                /* nothing yet: nothing to draw (as the page does) */
      snprintf(key, sizeof key, "%s/%d", node->valuestring, no ? no->valueint : 0);
      cJSON_AddNumberToObject(scl, key, v->valuedouble);
    }
  }
  char *out = cJSON_PrintUnformatted(s);
  cJSON_Delete(s);
  return out;
}

static void on_tick(uv_timer_t *t)
{
  char *js = H.status(H.data, "main");
  cJSON *st = js ? cJSON_Parse(js) : NULL;
  free(js);
  if (st == NULL || !cJSON_IsTrue(cJSON_GetObjectItem(st, "exists"))) {
    cJSON_Delete(st);
    return;                    /* no volume yet: nothing to remember */
  }
  struct sample *s;
  if (H.n < HISTORY_SAMPLES) {
    s = &H.ring[(H.head + H.n++) % HISTORY_SAMPLES];
  } else {
    s = &H.ring[H.head];       /* the oldest goes */
    H.head = (H.head + 1) % HISTORY_SAMPLES;
    free(s->json);
  }
  s->at = uv_now(t->loop);
  s->json = sample_of(st);
  cJSON_Delete(st);
}

void dash_history_start(uv_loop_t *loop, http_status_fn status, void *data)
{
  H.status = status;
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
