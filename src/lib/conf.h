/*
 * conf.h: a cluster's description, DIR/cluster.json (DESIGN.md §6).
 *
 * `auralog cluster up --dir DIR` writes it (cluster.c): the coordinator's,
 * the engine's and every member's address, and the options the cluster
 * keeps. Every other command finds the cluster by it, so it is read here
 * only, not parsed anew by each command.
 *
 *   conf_dir    the cluster directory: dir if given, else $AURALOG_DIR,
 *               else ~/.auralog
 *   conf_load   DIR/cluster.json parsed (cJSON_Delete it), or NULL when
 *               there is none or it is not JSON
 *   conf_str    a string member of it, copied into out; -1 if absent or
 *               longer than out
 */
#ifndef AURALOG_CONF_H
#define AURALOG_CONF_H

#include <stddef.h>

#include <cjson/cJSON.h>

void conf_dir(const char *dir, char *out, size_t n);
cJSON *conf_load(const char *dir);
int conf_str(const cJSON *conf, const char *key, char *out, size_t n);

#endif
