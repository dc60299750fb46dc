/*
 * history.h: the last minutes of volume main, sampled by the coordinator
 * for the dashboard (history.c says why and what a sample holds).
 */
#ifndef AURALOG_COORD_HISTORY_H
#define AURALOG_COORD_HISTORY_H

#include <uv.h>

#include "coord/http.h"

/* Take sample(data) every HISTORY_EVERY_MS on loop. */
void dash_history_start(uv_loop_t *loop, http_sample_fn sample, void *data);

/* {"every_ms": N, "samples": [{"age_ms": N, "ok": true, "vdl": ...}, ...]},
 * oldest first; a malloc'd string. */
char *dash_history_json(void);

#endif
