/*
 * bench.h: what the files of `auralog bench` share (bench/common.c).
 *
 *   bench.c     `auralog bench [WORKLOAD]`: sysbench-shaped workloads on
 *               auralog and on stock SQLite baselines, in one run
 *   workload.c  the transactions of those workloads
 *   recovery.c  `auralog bench recovery`: recovery time against log length
 *   recsys.c    ... its systems: auralog's engine crash and restart, SQLite's WAL
 *   append.c    `auralog bench append`: one storage node's durable appends
 *   replicas.c  `auralog bench replicas`: replica lag, reads over replicas, a long reader
 *   repair.c    `auralog bench repair`: time to repair a lost node, hydration, foreground
 *   bkbench.c   `auralog bench backup`: backup's cost to the foreground, its lag, the
 *               store's bytes per transaction, restore time against size and age
 *   blbench.c   `auralog bench binlog`: the binlog's cost off / community / enhanced;
 *               blrecovery.c: `auralog bench recovery --binlog`, recovery against
 *               binlog size
 *   limit.c     the machine's own limits (a commit; disk and loopback bandwidth),
 *               measured in the same run
 *   breakdown.c where one commit's time goes (the engine's stage timings)
 *   report.c    the table for people and the JSON of `auralog bench`
 *
 * Every benchmark starts what it measures itself (a private cluster in its
 * own directory, engines in the mode under test) so that runs start equal
 * and a student's own cluster is never touched; and every benchmark prints
 * its conditions beside its figures (seed 001's lesson).
 */
#ifndef AURALOG_BENCH_H
#define AURALOG_BENCH_H

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/hist.h"
#include "net/rpc.h"
#include "vfs/stages.h"

int bench_append_main(int argc, char **argv);
int bench_recovery_main(int argc, char **argv);
int bench_replicas_main(int argc, char **argv);   /* replicas.c */
int bench_repair_main(int argc, char **argv);     /* repair.c */
int bench_backup_main(int argc, char **argv);     /* bkbench.c */
int bench_binlog_main(int argc, char **argv);     /* blbench.c */

/* The auralog binary itself, to start cluster members and engines. */
const char *bench_self(void);

/* dir/name where dir is $AURALOG_DIR or ~/.auralog: benchmarks keep their
 * files on the same disk as a student's cluster (never /tmp, which may be
 * memory: fsync there costs nothing and every figure would lie). */
void bench_dir(char *out, size_t n, const char *name);

/* mkdir -p path; 0 or -1 (errno). Remove path and everything under it. */
int bench_mkdirs(const char *path);
void bench_rm_tree(const char *path);

/* Run `auralog argv...` to completion with stdout and stderr appended to
 * log. Returns its exit status, or -1 if it could not run. */
int bench_run(const char *log, const char *const argv[]);

/* Start `auralog argv...` in the background (stdout and stderr appended to
 * log). Returns its pid, or -1. */
pid_t bench_start(const char *log, const char *const argv[]);

/* SIGTERM pid, SIGKILL it after ms, and reap it. */
void bench_stop(pid_t pid, int ms);

/* Has pid exited (reaped here if so)? */
int bench_exited(pid_t pid);

/* Connect to addr, retrying until ms have passed. 0 or -1 with a reason. */
int bench_connect(struct rpc *r, const char *addr, int ms, char *why, size_t n);

/* A fresh private cluster in dir (anything there before is removed) with
 * its coordinator on base. 0, or -1 with a reason. */
int bench_cluster_up(const char *dir, int base, char *why, size_t n);
/* The same with more `cluster up` options (extra: NULL-terminated, at
 * most 15), e.g. {"--nodes", "9", NULL}. */
int bench_cluster_up_with(const char *dir, int base, const char *const extra[], char *why,
                          size_t n);
void bench_cluster_down(const char *dir);
/* Pid of cluster member name ("A1", "coord", "engine"), or -1. */
pid_t bench_member_pid(const char *dir, const char *name);

/* A benchmark's default base port: dflt, laid out beside the default
 * cluster's coordinator port (7400), moved as far as the user's own
 * cluster ($AURALOG_DIR or ~/.auralog) sits from it. Students sharing a
 * machine, each with a cluster on ports of their own, then run their
 * benches' private clusters on ports of their own too; with no cluster,
 * or one too near the top of the port range, dflt. */
int bench_base_default(int dflt);
#define BENCH_BASE_HELP "(default %d: %d above your cluster's coordinator port, or %d if none)"

/* CPU seconds (user + system) used so far by pid; 0 if unknown. */
double bench_cpu_s(pid_t pid);
/* The same, from one read of /proc/PID/stat, with the part of it in the
 * kernel (stime: syscalls, fsync, sockets, wake-ups) in *sys. */
double bench_cpu_split(pid_t pid, double *sys);
/* Seconds pid's threads (those alive now) have spent waiting, runnable,
 * for a CPU: the run-queue wait of /proc/PID/task/TID/schedstat. -1 where
 * the kernel keeps none (no schedstat) or pid is gone. */
double bench_cpu_wait_s(pid_t pid);

/* Run sql on the engine at r. Returns the reply (free with wire_free) if it
 * is Rows, else NULL with the reason in why. */
Env *bench_sql(struct rpc *r, const char *sql, int timeout_ms, char *why, size_t n);
/* The same, telling the engine when this query was sent and when the
 * reply to the previous one came (bench_now_us() of this machine), for
 * its commit stage timings (vfs/stages.h). */
Env *bench_sql_timed(struct rpc *r, const char *sql, uint64_t sent_us, uint64_t prev_recv_us,
                     int timeout_ms, char *why, size_t n);

/* Conditions every benchmark prints: versions of auralog and of each
 * library, kernel, CPU, cores, memory, and the filesystem under dir. */
void bench_conditions(cJSON *c, const char *dir);
/* How this binary was built (compiler, optimized or not, sanitizers): a
 * figure of an -O0 or sanitized build is not one to quote. */
const char *bench_build_flags(void);
/* A benchmark that owns private clusters: fn on SIGINT, SIGTERM and
 * SIGHUP (it stops what it started), and a reader gone (SIGPIPE) is no
 * reason to die with them running. */
void bench_catch_signals(void (*fn)(int));
/* Option opt's value s as a whole number from lo to hi, or cmd ends with
 * a one-line error ("bench binlog: --rounds wants a number from 1 to 10,
 * not 'x'"). */
long bench_num(const char *cmd, const char *opt, const char *s, long lo, long hi);

/* The workloads (workload.c). */
enum { WL_WRITE_ONLY, WL_INSERT, WL_READ_ONLY, WL_OLTP, WL_READ_WRITE, WL_COUNT };
extern const char *const wl_names[WL_COUNT];   /* "write-only", ... */
extern const int wl_writes[WL_COUNT];           /* writes per transaction */
#define WL_SQL_MAX 16384                        /* one transaction's text */
struct workload {
  int kind;                  /* WL_* */
  int tables, rows;
  unsigned long long seed;
};
/* One transaction of w into sql (WL_SQL_MAX bytes), drawing from *rng.
 * Returns 1 if it only reads. */
int wl_tx(const struct workload *w, uint64_t *rng, char *sql);
/* Create and fill w's tables through the engine at r. 0, or -1 and why. */
int wl_load(const struct workload *w, struct rpc *r, char *why, size_t whylen);

/* The machine's limit on one commit (limit.c), measured in dir. */
struct limit {
  int ok;
  char err[300];
  struct hist fsync;         /* one writer: append + fdatasync */
  double fsync_per_s;
  struct hist quorum;        /* six writers, a round ends at the 4th flush */
  double quorum_per_s;
  struct hist rtt;           /* loopback TCP round trip */
  double fsync_cpu_us;       /* CPU of one append + fdatasync */
  double rtt_cpu_us;         /* CPU of one round trip, both sides */
  double commit_ms;          /* 2 x rtt p50 + quorum p50 */
};
int bench_limit(const char *dir, struct limit *l);
void limit_json(const struct limit *l, cJSON *into);
void limit_print(const struct limit *l, const char *dir, const char *fs);

/* The machine's limit on moving bytes (limit.c), measured in dir for ms
 * each: sequential writes with an fdatasync every few MiB, and one
 * loopback TCP stream (`auralog bench repair`). */
struct bwlimit {
  int ok, ms;
  char err[300];
  double disk_bytes_s;       /* bytes a second written and flushed */
  double net_bytes_s;        /* bytes a second through one loopback connection */
};
int bench_limit_bw(const char *dir, int ms, struct bwlimit *b);

/* Where one commit's time goes (breakdown.c): the engine's stage
 * histograms (vfs/stages.h) over a window, and the nodes' own time in
 * their store's commits (heartbeats, the same window or the run). */
struct breakdown {
  int ok;
  char err[300];
  struct hist st[ST_COUNT];
  double skipped;            /* commits the engine could not time */
  double node_persist_us, node_commits;
};
/* Read the engine's stage histograms through r. 0, or -1 and why. */
int breakdown_fetch(struct rpc *r, struct breakdown *b, char *why, size_t n);
/* end -= start: the window between two fetches. */
void breakdown_window(struct breakdown *end, const struct breakdown *start);
/* The stage table, beside the clients' end-to-end latency of the same
 * transactions (e2e) and the machine's limit. */
void breakdown_print(const char *system, const char *workload, int clients,
                     const struct breakdown *b, const struct hist *e2e,
                     const struct limit *lim);
cJSON *breakdown_json(const struct breakdown *b, const struct hist *e2e);

/* Tell the coordinator of the user's cluster ($AURALOG_DIR or
 * ~/.auralog, if one runs) these n results for its journal (note.c), one
 * run: the run number and the machine (cond) are filled in here.
 * caller_key: the key this process had before the bench made its own. */
void bench_note_each(Auralog__BenchNote *notes, int n, cJSON *cond, const char *caller_key);

/* Microseconds on a monotonic clock. */
double bench_now_us(void);
/* One line of progress on stderr, "bench WHO: ...": redrawn in place on a
 * terminal (at most every 100 ms unless force), else printed only when
 * force (a new phase). bench_progress_end clears a redrawn line. */
void bench_progress_v(const char *who, int force, const char *fmt, va_list ap);
void bench_progress_end(void);
/* Refuse (die, naming bench `who`) a --dir that is not empty and holds no
 * cluster: bench_cluster_up would empty it. */
void bench_check_dir(const char *who, const char *dir);

#endif
