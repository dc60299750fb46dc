/*
 * bench_int.h: what bench.c (the runs) and report.c (the table and the
 * JSON) of `auralog bench [WORKLOAD]` share. Nothing else includes it.
 */
#ifndef AURALOG_BENCH_INT_H
#define AURALOG_BENCH_INT_H

#include <stdint.h>

#include "bench/bench.h"

#define NSYS        6
#define SYS_NOKEY   5
/* The systems that run on the private cluster. */
#define ON_CLUSTER(i) ((i) < 2 || (i) == SYS_NOKEY)
#define TX_TIMEOUT  30000        /* ms: one transaction's answer */

extern const char *const sys_names[NSYS];   /* "auralog", ... (bench.c) */

struct opts {
  struct workload wl;        /* what, on how much data, from which seed */
  int clients, duration, warmup;
  int sys[NSYS];             /* which systems run */
  int json, base;
  const char *reads;         /* the auralog engines' --reads: durable or immediate */
  char dir[1024];
};

/* What one system did. */
struct result {
  int ran;
  char err[400];
  double tx_s, writes_s;
  struct hist h;
  struct hist rh;            /* the read-only transactions among them */
  uint64_t tx_all;           /* transactions from the end of the load on */
  uint64_t errors;
  /* per transaction, over tx_all */
  double net_bytes, net_msgs, redo_bytes, redo_msgs, records, gossip_bytes, gossip_msgs;
  double fsyncs_engine, fsyncs_nodes, disk_bytes, cpu_engine_ms, cpu_nodes_ms;
  double load_s;
  struct breakdown bd;       /* where a commit's time went (a cluster system) */
};


/* The machine's limit on one commit, measured before the systems (limit.c). */
extern struct limit lim;

/* report.c: the conditions into c; system i's result as JSON; the table
 * for people (cond: the conditions). */
void report_conditions(const struct opts *o, cJSON *c);
cJSON *report_json(const struct result *rs, int i);
void report_table(const struct opts *o, const struct result *rs, cJSON *cond);

#endif
