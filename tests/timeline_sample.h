/*
 * timeline_sample.h: a lab's journal window with every event kind the lab
 * checks read (lab/check*.c), for the tests of its timeline
 * (lab/timeline.c): tests/unit/test_timeline.c measures the drawing,
 * tests/integration/test_pictures.c renders it in a browser.
 *
 * A crowded story, as a person's lab session would leave it: an AZ goes
 * down (a fault and two nodes down in the same millisecond), the writer
 * stalls, reads are answered dirty and held, a second writer recovers and
 * truncates, the first is fenced, a partition and its heal, a dropped
 * record opens a hole that gossip fills, a segment falls behind and
 * catches up, a reader holds the PGMRPL, GC passes it, a failover, bench
 * results, a data-loss alarm, a volume dropped; engine samples throughout.
 */
#ifndef AURALOG_TIMELINE_SAMPLE_H
#define AURALOG_TIMELINE_SAMPLE_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

static const char *const timeline_sample[] = {
  "{\"t\":500,\"kind\":\"start\",\"copies\":6,\"vw\":4,\"vr\":3}",
  "{\"t\":900,\"kind\":\"node\",\"node\":\"C2\",\"az\":\"C\",\"up\":false,\"why\":\"stopped\"}",
  "{\"t\":1000,\"kind\":\"fault\",\"action\":\"lab-start\",\"n\":7}",
  "{\"t\":1500,\"kind\":\"engine\",\"epoch\":4,\"commits\":10,\"vdl\":100000120,\"replicas\":1,"
  "\"lag_ms\":12,\"lag_lsn\":3}",
  "{\"t\":2000,\"kind\":\"fault\",\"action\":\"az-down\",\"az\":\"B\",\"node\":\"\",\"n\":0}",
  "{\"t\":2000,\"kind\":\"node\",\"node\":\"B1\",\"az\":\"B\",\"up\":false,\"why\":\"az-down\"}",
  "{\"t\":2000,\"kind\":\"node\",\"node\":\"B2\",\"az\":\"B\",\"up\":false,\"why\":\"az-down\"}",
  "{\"t\":2100,\"kind\":\"fault\",\"action\":\"node-stop\",\"az\":\"\",\"node\":\"A1\",\"n\":0}",
  "{\"t\":2100,\"kind\":\"node\",\"node\":\"A1\",\"az\":\"A\",\"up\":false,\"why\":\"stopped\"}",
  "{\"t\":2500,\"kind\":\"engine\",\"epoch\":4,\"commits\":25,\"vdl\":100000160,\"replicas\":1,"
  "\"lag_ms\":40,\"lag_lsn\":9}",
  "{\"t\":3100,\"kind\":\"stall\",\"epoch\":4,\"vdl\":100000160,\"pending\":3,\"down\":\"A1,B1,B2\"}",
  "{\"t\":3150,\"kind\":\"dirtyread\",\"epoch\":4,\"vdl\":100000160,\"seen\":100000163,\"n\":2}",
  "{\"t\":3200,\"kind\":\"heldread\",\"epoch\":4,\"vdl\":100000160,\"n\":1}",
  "{\"t\":3250,\"kind\":\"dirtyread\",\"epoch\":4,\"vdl\":100000160,\"seen\":100000164,\"n\":1}",
  "{\"t\":4000,\"kind\":\"fault\",\"action\":\"engine-crash\",\"volume\":\"main\",\"epoch\":4,"
  "\"commits\":25,\"pending\":3,\"vdl\":100000160}",
  "{\"t\":4200,\"kind\":\"node\",\"node\":\"B1\",\"az\":\"B\",\"up\":true,\"why\":\"registered\"}",
  "{\"t\":4200,\"kind\":\"node\",\"node\":\"B2\",\"az\":\"B\",\"up\":true,\"why\":\"registered\"}",
  "{\"t\":4300,\"kind\":\"epoch\",\"volume\":\"main\",\"epoch\":5,\"writer\":\"127.0.0.1:7001\","
  "\"promotion\":false}",
  "{\"t\":4310,\"kind\":\"trunc\",\"volume\":\"main\",\"epoch\":5,\"from\":100000160,"
  "\"to\":110000160}",
  "{\"t\":4320,\"kind\":\"unstall\",\"epoch\":4,\"vdl\":100000160,\"from\":100000160,\"ms\":1220}",
  "{\"t\":4400,\"kind\":\"fenced\",\"volume\":\"main\",\"addr\":\"127.0.0.1:7000\",\"epoch\":4,"
  "\"current\":5,\"writer\":\"127.0.0.1:7001\"}",
  "{\"t\":5000,\"kind\":\"engine\",\"epoch\":5,\"commits\":3,\"vdl\":110000170,\"replicas\":1,"
  "\"lag_ms\":8,\"lag_lsn\":2}",
  "{\"t\":5200,\"kind\":\"behind\",\"node\":\"B1\",\"az\":\"B\",\"pg\":0,\"scl\":100000150,"
  "\"peers\":110000170}",
  "{\"t\":6100,\"kind\":\"caughtup\",\"node\":\"B1\",\"az\":\"B\",\"pg\":0,\"from\":100000150,"
  "\"scl\":110000180,\"ms\":900,\"gossip_msgs\":14}",
  "{\"t\":6500,\"kind\":\"fault\",\"action\":\"partition\",\"az\":\"C\",\"node\":\"\",\"n\":0}",
  "{\"t\":7500,\"kind\":\"fault\",\"action\":\"heal\",\"az\":\"\",\"node\":\"\",\"n\":0}",
  "{\"t\":8000,\"kind\":\"fault\",\"action\":\"gossip\",\"az\":\"\",\"node\":\"A2\",\"n\":0}",
  "{\"t\":8000,\"kind\":\"fault\",\"action\":\"drop\",\"az\":\"\",\"node\":\"A2\",\"n\":1}",
  "{\"t\":8700,\"kind\":\"hole\",\"node\":\"A2\",\"az\":\"A\",\"pg\":0,\"scl\":110000190,"
  "\"max_lsn\":110000197,\"ms\":600,\"gossip_off\":true}",
  "{\"t\":9500,\"kind\":\"fault\",\"action\":\"gossip\",\"az\":\"\",\"node\":\"A2\",\"n\":1}",
  "{\"t\":9800,\"kind\":\"filled\",\"node\":\"A2\",\"az\":\"A\",\"pg\":0,\"from\":110000190,"
  "\"scl\":110000199,\"ms\":1700,\"gossip_msgs\":3}",
  "{\"t\":10000,\"kind\":\"gc\",\"volume\":\"main\",\"pgmrpl\":110000150,\"vdl\":110000200,"
  "\"gc_max\":110000140}",
  "{\"t\":11000,\"kind\":\"gc\",\"volume\":\"main\",\"pgmrpl\":110000150,\"vdl\":110000260,"
  "\"gc_max\":110000150}",
  "{\"t\":12000,\"kind\":\"hold\",\"volume\":\"main\",\"epoch\":5,\"pgmrpl\":110000150,"
  "\"vdl\":110000300,\"ms\":2000,\"replica\":\"127.0.0.1:7002\"}",
  "{\"t\":12500,\"kind\":\"engine\",\"epoch\":5,\"commits\":60,\"vdl\":110000300,\"replicas\":1,"
  "\"lag_ms\":150,\"lag_lsn\":40}",
  "{\"t\":14000,\"kind\":\"release\",\"volume\":\"main\",\"epoch\":5,\"from\":110000150,"
  "\"to\":110000330,\"ms\":4000,\"growth_records\":180}",
  "{\"t\":14600,\"kind\":\"gcpassed\",\"volume\":\"main\",\"epoch\":5,\"held\":110000150,"
  "\"gc_lsn\":110000320,\"ms\":600}",
  "{\"t\":15000,\"kind\":\"fault\",\"action\":\"writer-crash\",\"volume\":\"main\",\"epoch\":5}",
  "{\"t\":15900,\"kind\":\"failover\",\"volume\":\"main\",\"from\":\"127.0.0.1:7001\","
  "\"to\":\"127.0.0.1:7002\",\"from_epoch\":5,\"epoch\":6,\"by\":\"detector\",\"took_ms\":900}",
  "{\"t\":15900,\"kind\":\"epoch\",\"volume\":\"main\",\"epoch\":6,\"writer\":\"127.0.0.1:7002\","
  "\"promotion\":true}",
  "{\"t\":17000,\"kind\":\"bench\",\"system\":\"auralog\",\"workload\":\"oltp\",\"group\":1,"
  "\"tx_s\":812.5}",
  "{\"t\":17000,\"kind\":\"bench\",\"system\":\"sqlite-wal-full\",\"workload\":\"oltp\","
  "\"group\":1,\"tx_s\":2310.0}",
  "{\"t\":17000,\"kind\":\"bench\",\"system\":\"sqlite-delete-full\",\"workload\":\"oltp\","
  "\"group\":1,\"tx_s\":190.0}",
  "{\"t\":18000,\"kind\":\"dataloss\",\"volume\":\"other\",\"epoch\":2,\"vdl\":340,"
  "\"why\":\"no segment holds 341\"}",
  "{\"t\":18500,\"kind\":\"voldrop\",\"volume\":\"other\"}",
  "{\"t\":19000,\"kind\":\"engine\",\"epoch\":6,\"commits\":12,\"vdl\":120000020,\"replicas\":0}",
};
#define TIMELINE_SAMPLE_N (sizeof timeline_sample / sizeof timeline_sample[0])

/* x's history: the sample's events (a seq each, as hist_load numbers them),
 * the window from the lab-start mark (index 2) on. */
static void timeline_sample_ctx(struct labctx *x)
{
  memset(x, 0, sizeof *x);
  x->journal = cJSON_CreateArray();
  x->ev = calloc(TIMELINE_SAMPLE_N, sizeof *x->ev);
  for (size_t i = 0; i < TIMELINE_SAMPLE_N; i++) {
    cJSON *e = cJSON_Parse(timeline_sample[i]);
    if (e == NULL) {
      fprintf(stderr, "timeline_sample: line %zu is no JSON\n", i);
      abort();
    }
    cJSON_AddNumberToObject(e, "seq", (double)i);
    cJSON_AddItemToArray(x->journal, e);
    if (i > 2)
      x->ev[x->nev++] = e;
  }
  x->start = 2;
  x->tstart = 1000;
}

static void timeline_sample_free(struct labctx *x)
{
  cJSON_Delete(x->journal);
  free(x->ev);
}

#endif
