/*
 * bench_int.h: what bench.c (the runs) and report.c (the table and the
 * JSON) of `auralog bench [WORKLOAD]` share. Nothing else includes it.
 */
#ifndef AURALOG_BENCH_INT_H
#define AURALOG_BENCH_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "bench/bench.h"

#define NSYS        7
#define SYS_MEMORY  4
#define SYS_NOKEY   5
#define SYS_BACKUP  6
/* The systems that run on the private cluster. */
#define ON_CLUSTER(i) ((i) < 2 || (i) >= SYS_NOKEY)
#define TX_TIMEOUT  30000        /* ms: one transaction's answer */

extern const char *const bench_node_ids[NCOPIES];  /* "A1".."C2" (bench.c) */
extern const char *const sys_names[NSYS];   /* "auralog", ... (bench.c) */

struct opts {
  struct workload wl;        /* what, on how much data, from which seed */
  int clients, duration, warmup;
  int sys[NSYS];             /* which systems run */
  int json, base;
  const char *reads;         /* the auralog engines' --reads: durable or immediate */
  int group, group_ms;       /* application group commit (group.c): 1 is off */
  int no_limit;              /* --no-limit: skip the machine's limit */
  int no_note;               /* --no-note: tell no cluster's journal (note.c) */
  const char *profile;       /* --profile DIR: perf over the measured window (profile.c) */
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
  /* CPU per transaction by role: each node (bench_node_ids), the
   * coordinator, the read replica (0 where the system has none). */
  double cpu_node_ms[NCOPIES], cpu_coord_ms, cpu_replica_ms;
  /* Waiting for a CPU per transaction, runnable but not running (the
   * engine's threads; the six nodes': 0 for a baseline): on a machine
   * whose cores every process of the run shares, a commit's stages hold
   * this queueing too, which the machine's limit does not. -1: unknown. */
  double wait_engine_ms, wait_nodes_ms;
  /* Of cpu_engine_ms and cpu_nodes_ms, the part in the kernel (system
   * time: a node's fdatasync, its socket reads and writes, its wake-ups),
   * which grows with flushes and messages per transaction, not records. */
  double sys_engine_ms, sys_nodes_ms;
  double load_s;
  struct breakdown bd;       /* where a commit's time went (a cluster system) */
  /* Group commit: logical transactions per SQL one, and the SQL
   * transactions' own round trips (what the engine's stages time). */
  double mean_group;
  struct hist sqlh;
  /* auralog-backup: the object store's bytes per transaction (what it
   * grew by from the load's end, staged, to the run's), and how far the
   * backup point was behind the VDL at the end (LSNs; -1: unknown). */
  double backup_bytes, bk_store_load;
  double backup_lag;
  /* ... and over the run (bklag.c): the age of the newest restorable
   * commit, sampled (ms; -1: none), and two restores' seconds: at the
   * newest point, and at the point reached when the measured window began. */
  double bk_lag_p50_ms, bk_lag_p99_ms, bk_lag_max_ms, bk_lag_samples;
  double bk_restore_new_s, bk_restore_old_s, bk_restore_old_lsn;
};

/* bench.c: set by Ctrl-C or SIGTERM (bench's handler, or another
 * benchmark's that runs bench_system): the run stops at its next look. */
extern volatile sig_atomic_t bench_interrupted;
/* A fresh private cluster in cdir for the cluster systems, backing up into
 * cdir/backup if backup, its own engine stopped. 0, or -1 and why. */
int bench_fresh_cluster(const char *cdir, int base, int backup, char *why, size_t n);
/* Cluster system i (auralog, auralog-pages, auralog-nokey, auralog-backup)
 * of o, on that cluster, into res: its engine, the load, the clients over
 * warm-up and window, the counters; for auralog-backup also bklag.c's
 * figures and the store's bytes per transaction. */
void bench_system(const struct opts *o, int i, const char *cdir, struct result *res);

/* bklag.c: the backup's lag over a run, and restore times after it. */
struct bklag;
struct bklag *bklag_start(const char *coord, const char *volume, const char *url);
void bklag_stop(struct bklag *b, const char *dir, double window_s, struct result *res);

/* profile.c: perf over a cluster system's measured window, for the
 * engine and node A1 (--profile). prof_check: perf is there and dir made
 * (else why); prof_start / prof_stop around the window. */
struct profrec {
  pid_t perf;
  char data[1200], txt[1200], role[16];
};
struct prof {
  struct profrec r[2];
  int n;
};
int prof_check(const char *dir, char *why, size_t n);
void prof_start(struct prof *pf, const char *dir, const char *sys, pid_t engine, pid_t node);
void prof_stop(struct prof *pf);

/* Application group commit among one run's clients (group.c). */
struct group;
struct gc {
  int size, timeout_ms;
  pthread_mutex_t mu;
  pthread_cond_t joined, finished;
  struct group *open;        /* the group followers may join now, or NULL */
  uint64_t sql_tx, logical;  /* SQL transactions sent, logical ones in them */
};
void gc_init(struct gc *g, int size, int timeout_ms);
void gc_free(struct gc *g);
/* Run one logical transaction (sql, as wl_tx wrote it) in a group, as its
 * leader (on r) or a follower; returns once its group committed: 0, -1
 * refused, -2 no answer (why says). sqlh (or NULL): where a leader adds
 * its SQL transactions' round trips. */
int gc_submit(struct gc *g, struct rpc *r, const char *sql, double *last_recv,
              struct hist *sqlh, char *why, size_t n);

/* Tell the coordinator of the user's cluster ($AURALOG_DIR or ~/.auralog)
 * what each system did, for its journal (note.c). caller_key: the key
 * this process had before the bench made its own (NULL: none). */
void bench_note(const struct opts *o, const struct result *rs, cJSON *cond,
                const char *caller_key);


/* The machine's limit on one commit, measured before the systems (limit.c). */
extern struct limit lim;

/* report.c: the conditions into c; system i's result as JSON; the table
 * for people (cond: the conditions). */
void report_conditions(const struct opts *o, cJSON *c);
cJSON *report_json(const struct result *rs, int i);
void report_table(const struct opts *o, const struct result *rs, cJSON *cond);

#endif
