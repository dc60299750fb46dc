/*
 * conf.h: a cluster's description, DIR/cluster.json (DESIGN.md §6).
 *
 * `auralog cluster up --dir DIR` writes it (cluster.c): the coordinator's,
 * the engine's and every member's address, and the options the cluster
 * keeps. Every other command finds the cluster by it, so it is read here
 * only, not parsed anew by each command.
 *
 * Where a command looks: the directory it was told (--dir, which the
 * commands pass as dir or put in $AURALOG_DIR), else ~/.auralog. Once a
 * directory was named, or ~/.auralog holds a cluster, that cluster is the
 * one meant: a lookup there that fails is an error that says where it
 * looked, never a quiet fall back to the default ports (which may be a
 * stranger's cluster, or none). Only with no directory named and nothing
 * in ~/.auralog do the defaults of DESIGN.md §6 apply (a coordinator
 * started by hand on 127.0.0.1:7400).
 *
 *   conf_dir    the cluster directory: dir if given, else $AURALOG_DIR,
 *               else ~/.auralog
 *   conf_load   DIR/cluster.json parsed (cJSON_Delete it), or NULL when
 *               there is none or it is not JSON
 *   conf_find   the same, telling apart "no cluster was meant" (0: the
 *               defaults apply) from "the cluster meant is not there"
 *               (-1, why: one line naming where it looked); 1 with *conf
 *   conf_str    a string member of it, copied into out; -1 if absent or
 *               longer than out
 */
#ifndef AURALOG_CONF_H
#define AURALOG_CONF_H

#include <stddef.h>

#include <cjson/cJSON.h>

void conf_dir(const char *dir, char *out, size_t n);
cJSON *conf_load(const char *dir);
int conf_find(const char *dir, cJSON **conf, char *why, size_t whylen);
int conf_str(const cJSON *conf, const char *key, char *out, size_t n);

#endif
