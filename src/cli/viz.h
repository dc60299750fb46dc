/*
 * viz.h: the cluster as a graphviz drawing (`auralog viz`, see viz.c).
 */
#ifndef AURALOG_VIZ_H
#define AURALOG_VIZ_H

#include "net/wire.h"

/* The DOT text of a drawing of st: AZs, nodes, segments with their SCL,
 * the engine's VDL and VCL, each PG's log tail and the truncations. Pure
 * (no I/O); malloc'd, the caller frees it. */
char *viz_dot(const Auralog__Status *st);

/* Lay dot out and render it as fmt ("svg", "png") into *data, *len
 * (free it with gvFreeRenderData). Once per process (graphviz 2.42's
 * pango plugin: viz.c). 0, or -1 with a one-line reason in why. */
int viz_render(const char *dot, const char *fmt, char **data, unsigned *len,
               char *why, size_t whylen);

/* `auralog viz --sim-trace FILE` (viz_sim.c): the DOT text of a timeline
 * of the simulator trace at path, over [from_ms, to_ms] (negative: the
 * default, the 3 s before the trace's violation or the whole run).
 * malloc'd; NULL on a missing file or a malformed line, with a one-line
 * reason naming the line in why. */
char *viz_sim_dot(const char *path, long long from_ms, long long to_ms, char *why, size_t whylen);

#endif
