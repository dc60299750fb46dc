/*
 * viz.h: the cluster as a graphviz drawing (`auralog viz`, see viz.c).
 */
#ifndef AURALOG_VIZ_H
#define AURALOG_VIZ_H

#include "wire.h"

/* The DOT text of a drawing of st: AZs, nodes, segments with their SCL,
 * the engine's VDL and VCL, each PG's log tail and the truncations. Pure
 * (no I/O); malloc'd, the caller frees it. */
char *viz_dot(const Auralog__Status *st);

#endif
