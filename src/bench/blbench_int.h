/*
 * blbench_int.h: what the files of the binlog's benchmarks share (issue
 * 29 step 5, seed 003).
 *   blengine.c   an engine started in a binlog mode (a refusal told from
 *                a failure) and its binlog counters: both benchmarks'
 *   blbench.c    `auralog bench binlog`: throughput and commit latency
 *                with the binlog off, community and enhanced, at a few
 *                client counts, in one run
 *   blreport.c   ... its report: the table for people, the JSON, the
 *                seed's figures beside ours
 *   blrecovery.c `auralog bench recovery --binlog MODE`: recovery time
 *                against binlog size, per mode: the runs
 *   blrecreport.c ... its report, beside the seed's table
 * Nothing else includes it; the entries are bench_binlog_main (bench.h)
 * and bench_blrecovery_main (recovery.c hands `--binlog` over to it).
 */
#ifndef AURALOG_BENCH_BLBENCH_INT_H
#define AURALOG_BENCH_BLBENCH_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "bench/bench.h"
#include "param.h"

#define BL_TX_MS    30000       /* ms: one transaction's answer */
#define BL_START_MS 30000       /* ms: a fresh engine must serve within this */

/* The engine's binlog modes (`auralog engine --binlog`). */
enum { BL_OFF, BL_COMMUNITY, BL_ENHANCED, BL_MODES };
extern const char *const bl_mode_names[BL_MODES];   /* "off", "community", "enhanced" */

/* "off,enhanced" into on[] (each mode at most once) and order[] (as
 * given); the count, or die naming who and opt. */
int bl_parse_modes(const char *who, const char *opt, const char *s, int order[BL_MODES]);

/* The engine's counters from SELECT auralog_stats(): its "binlog" object
 * (binlog.h: one engine lifetime, from its start) and the volume's. */
struct blstat {
  char mode[16];
  double txns, events_bytes;                       /* transactions with events, their bytes */
  double prepare_us, binlog_us, commit_us;         /* community: the 2PC's stages, summed */
  double fsyncs, file_bytes;                       /* community: the binlog file's */
  double scan_us, scan_bytes, scan_frames, rolled_forward;  /* community: the open's scan */
  double commits, redo_bytes;                      /* the volume's (redo to all six copies) */
};
/* 0, or -1 and why. */
int bl_stats(struct rpc *r, struct blstat *s, char *why, size_t n);

/* Start `auralog engine --volume volume --listen addr --coord coord
 * --binlog MODE` (output to log, appended; community: its binlog file in
 * cdir, bl_binlog_file) and wait up to ms for it to serve. 0: it serves
 * (*pid); 1: it exited first, refusing the mode or failing to start (why:
 * the last thing it said, e.g. "engine: --binlog community is not built
 * yet; ..."); -1: it did not serve in time (why; it is stopped). */
int bl_engine_start(const char *log, const char *cdir, const char *addr, const char *coord,
                    const char *volume, int mode, int ms, pid_t *pid, char *why, size_t n);
/* Community's binlog file for volume on the private cluster in cdir; and
 * the removal of every such file there. */
void bl_binlog_file(const char *cdir, const char *volume, char *out, size_t n);
void bl_binlog_gone(const char *cdir);

/* ---- `auralog bench binlog` (blbench.c, blreport.c) -------------------------------- */

#define BL_NCLIENTS   6          /* client counts one run takes at most */
#define BL_ROUNDS_MAX 10

/* One cell: a mode at a client count in a round, on a fresh cluster. */
struct blrun {
  int ran;                   /* tried (not skipped: its mode was refused) */
  int seq;                   /* its place in the run (1, 2, ...) */
  char err[400];
  double tx_s, load_s, secs;
  struct hist h;             /* commit latency, the measured window */
  uint64_t tx_all, errors;   /* transactions from the end of the load on */
  /* per transaction over tx_all: CPU ms by role; redo bytes shipped (to
   * all six copies: the enhanced binlog's events ride in them) */
  double cpu_engine, cpu_nodes, cpu_coord, cpu_node[NCOPIES];
  double redo_bytes;
  /* the binlog, over the same span: per transaction with events */
  double bl_txns, events, file_bytes, fsyncs;
  double prepare_us, binlog_us, commit_us;   /* community: per commit */
  char bl_mode[16];          /* what the engine said its mode was */
};

struct blopts {
  struct workload wl;
  int clients[BL_NCLIENTS], nclients;
  int duration, warmup, rounds;
  int order[BL_MODES], nmodes;   /* modes, as given */
  int json, no_limit, no_note, base;
  char dir[1024], cdir[1100];
  struct limit lim;
  int refused[BL_MODES];         /* the engine refused the mode: */
  char reason[BL_MODES][400];    /* ... saying this */
  struct blrun r[BL_ROUNDS_MAX][BL_NCLIENTS][BL_MODES];
};

/* The figures of a cell, for medians over rounds (blreport.c). */
enum { BF_TXS, BF_P50, BF_P99, BF_MAX, BF_CPU_ENGINE, BF_CPU_NODES, BF_CPU_COORD, BF_CPU_TOTAL,
       BF_REDO, BF_EVENTS, BF_FILE, BF_FSYNCS, BF_PREPARE, BF_BINLOG, BF_COMMIT, BF_MEAN,
       BF_COUNT };
int bl_run_ok(const struct blrun *r);
double bl_fig(const struct blrun *r, int f);
/* The median of figure f over the rounds' good runs of mode m at client
 * count index ci; how many there were in *n (may be NULL). */
double bl_med(const struct blopts *o, int m, int ci, int f, int *n);
/* The report (blreport.c): cond is the conditions. */
cJSON *bl_report_json(const struct blopts *o, cJSON *cond);
void bl_report_table(const struct blopts *o, cJSON *cond);

/* ---- `auralog bench recovery --binlog` (blrecovery.c) ------------------------------ */

int bench_blrecovery_main(int argc, char **argv);

#define BLR_ROWS      2000     /* 2000 pages: well under CACHE_PAGES */
#define BLR_ROW_BYTES 3000     /* one row a 4 KiB page */
#define BLR_UPD       300      /* rows a transaction updates: ~1.8 MB of events */
#define BLR_TX_EST    (2.0 * BLR_UPD * (BLR_ROW_BYTES + 16))  /* events a transaction, guessed */
#define BLR_SIZES     8
#define BLR_REPS      20
#define BLR_TX_MS     60000
#define BLR_START_MS  600000   /* a restart must serve within this (a long scan) */
#define BLR_FREE_KEEP (2ull << 30)

/* One crash and restart. */
struct blr_rep {
  double total_ms;          /* restart to the first answered query */
  double recovered_ms, open_ms;   /* the engine's log; -1 unknown */
  double scan_ms, scan_bytes, scan_frames, rolled_forward;
};

struct blr_size {
  int mib, ran;
  char err[400];
  double binlog_bytes, txns, fill_s;
  int nrep;
  struct blr_rep r[BLR_REPS];
  int cold_ok;
  struct blr_rep cold;      /* one more restart, the page cache dropped first */
};

struct blr_mode {
  int m, refused;
  char reason[400], err[400];
  struct blr_size z[BLR_SIZES];
};

/* One run: its options, its state (also for cleanup at exit), its results. */
struct blr_run {
  pid_t owner, engine;
  int up, base, reps, json, nz, nm;
  uint64_t seed;
  int mib[BLR_SIZES];
  char dir[1024], cdir[1100], addr[64], coord[64], log[1300];
  struct blr_mode md[BL_MODES];
  double tx_bytes;          /* events a transaction, as a binlog mode of this run saw */
  double tx_at[BLR_SIZES];  /* transactions a size took in such a mode (0: none yet) */
};
extern struct blr_run BLR;  /* blrecovery.c */

/* blrecreport.c: the results as one JSON object, or as the table. */
cJSON *blr_json(cJSON *cond);
void blr_table(cJSON *cond);
/* ... and noted in the user's cluster's journal (workload "binlog-recovery"). */
void blr_note(cJSON *cond, const char *caller_key);

#endif
