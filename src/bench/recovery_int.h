/*
 * recovery_int.h: what the two files of `auralog bench recovery` share.
 *   recovery.c  the benchmark: options, the run over the log lengths,
 *               cleanup, progress, the report (a table or JSON)
 *   recsys.c    the workload and the two systems under it: auralog's
 *               engine (write, crash, time its recovery) and SQLite (write
 *               a WAL, crash, time its replay)
 * Nothing else includes it; the benchmark's entry is bench_recovery_main
 * (bench.h).
 */
#ifndef AURALOG_BENCH_RECOVERY_INT_H
#define AURALOG_BENCH_RECOVERY_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/bench.h"
#include "net/rpc.h"

#define ROWS       12000    /* 3000 pages of 4 KiB: under CACHE_PAGES, so the
                               engine writes without reading back from storage */
#define ROW_BYTES  900      /* 4 rows a page */
#define UPD        300      /* rows updated per transaction: ~290 pages */
#define NSIZES     16
#define MAXREP     20
#define WAL_HDR    32       /* SQLite's WAL header, then frames of 24 + page */
#define FRAME_HDR  24
#define FREE_KEEP  (2ull << 30)   /* leave this much disk free */
#define STR_(x)    #x
#define STR(x)     STR_(x)

/* One log length: what was asked, and what both systems took. */
struct size {
  uint64_t want;              /* records asked for */
  uint64_t records;           /* records in the log when we crashed */
  uint64_t txns;              /* transactions run so far (0 is the setup) */
  int nrep;
  double rec[MAXREP], open[MAXREP], first[MAXREP];   /* ms */
  int sq;                     /* sqlite measured */
  char sq_why[200];           /* ...or why not */
  uint64_t frames, wal_bytes;
  double warm[MAXREP], cold;  /* ms */
};

/* What cleanup needs, also on die()'s exit (recovery.c). */
struct recovery_run {
  pid_t owner;
  pid_t upid;                 /* a `cluster up` under way */
  int up;
  char dir[1024], log[1200], sqdir[1200], db[1300];
};
extern struct recovery_run B;

/* recovery.c: one line of progress on stderr (force: a new phase, else
 * at most every 100 ms and only on a terminal); die if a signal asked us
 * to stop. */
void progress(int force, const char *fmt, ...);
void check_stop(void);

/* recsys.c: auralog's engine, as the benchmark sees it. */
struct eng {
  char coord[64], addr[64];
  struct rpc r;
  int conn;
  uint64_t epoch;
  uint64_t base;              /* LSN before this lifetime's first record */
  uint64_t last;              /* its latest commit LSN */
  uint64_t prior;             /* records of earlier lifetimes */
  uint64_t txns;              /* transactions run (next one to run) */
  uint32_t page_size;
};

/* Records in the log: this lifetime's and those of earlier ones. */
uint64_t eng_records(const struct eng *e);
/* A new engine life: learn its epoch and where its LSNs start (and, if
 * rec_ms, its recovery time). */
void eng_learn(struct eng *e, double *rec_ms);
/* Run transactions until the log holds at least want records. */
void eng_write(struct eng *e, uint64_t want, uint64_t seed);
/* SIGKILL the engine, start it again, and time repeat k into z. */
void eng_crash(struct eng *e, struct size *z, int k, uint64_t seed);

/* recovery.c: the median and the largest of v[0..n) (at most MAXREP). */
double median(const double *v, int n);
double maxof(const double *v, int n);

/* recpgs.c: --pgs: grow the volume to each of pgs[0..n) PGs in turn and
 * crash the engine reps times at each; the results go into out (json) or
 * a table on stdout, with cond (the conditions) beside them. */
struct cJSON;
void rec_pgs(struct eng *e, const uint32_t *pgs, int n, int reps, uint64_t seed, int json,
             struct cJSON *out, struct cJSON *cond);

/* recsys.c: the SQLite side of one size: grow the WAL to the same
 * transactions, crash, time the replay. sq_txns: transactions already in
 * the WAL; gave_up: a smaller size did not fit on the disk. */
void sq_size(struct size *z, uint64_t *sq_txns, uint64_t prev_records, int reps,
             uint64_t seed, int *gave_up);

#endif
