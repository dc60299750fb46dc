/*
 * crash.h: what the files of the crash campaign share (test_crash.c says
 * what it does and why).
 *   test_crash.c     the campaign: seeded draws, each crash point's shape,
 *                    the timeline, the summary
 *   crash_clients.c  the writer and the reader (children), and what they
 *                    did and saw
 *   crash_faults.c   faults, crashes and restarts; interrupted recoveries
 *                    played with a hand-made writer (peer.c)
 *   crash_check.c    the checks after a crash point: rows, the reader's
 *                    reads, integrity, convergence
 * A failure keeps the cluster directory (keep_evidence) and says where.
 */
#ifndef AURALOG_IT_CRASH_H
#define AURALOG_IT_CRASH_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- test_crash.c: deterministic choices, the timeline ------------------- */

uint64_t rnd(void);             /* the campaign's generator (its seed: AURALOG_CRASH_SEED) */
unsigned below(unsigned n);     /* rnd() % n */
uint64_t mix(uint64_t x);       /* a hash */
/* Transaction t inserts rows_of(t) rows; row k has pad_of(t, k) random
 * bytes; bytes_of(t) in all. */
int rows_of(long t);
int pad_of(long t, int k);
long long bytes_of(long t);
/* now_us(): lib/log.h's monotonic microseconds. */
#include "lib/log.h"

/* The evidence kept on a failure (in the cluster directory). */
extern char records_path[512], errors_path[512], timeline_path[512], reads_path[512],
            rerrors_path[512];
extern FILE *timeline;
/* A line of crash-timeline.txt, after the time in ms. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- crash_clients.c: the writer and the reader -------------------------- */

enum { TX_NONE, TX_ACKED, TX_UNKNOWN };

/* What they did and saw, by txn number (below txcap), as of clients_stop. */
extern unsigned char *txstate;  /* TX_* */
extern int *rseen;              /* rows the reader saw of each txn (0: never seen it) */
extern unsigned long long *rseen_ms;  /* when it first saw them */
extern unsigned char *rmulti;   /* it saw the txn with different row counts */
extern long txcap;

/* Shared with the writer and reader children. */
struct shared {
  int stop;                     /* parent -> writer: stop after this txn */
  int inflight;                 /* an `auralog sql` of the writer is running */
  long last_us;                 /* how long the last acknowledged one took */
  long next;                    /* next txn number */
  long acked, failed;
  long pace_us;                 /* parent -> writer: wait this long after each acknowledged
                                 * commit (0: back to back) */
  int rstop;                    /* parent -> reader: stop now */
  long reads, reads_ok, reads_full;
};
extern struct shared *sh_w;
extern pid_t writer_pid, reader_pid;

/* Start the writer and the reader; stop them (the writer after its
 * current transaction, the reader at once) and take in what they did. */
void clients_start(void);
void clients_stop(void);

/* ---- crash_faults.c: faults, crashes, restarts --------------------------- */

extern int cache_ok;            /* the engine has --cache */
extern int point_cache;         /* cache of the engines this point starts (0: default) */
extern int n_crashes, n_small_cache_starts, n_by_hand;
extern int n_ir, n_ir_queries, n_ir_truncs;

/* On a failure: keep the cluster directory; what the nodes' truncations
 * cut lately (for the message). */
void keep_evidence(void);
const char *cut_lines(void);

/* `auralog fault ...` (fails the test if it fails); a partition of AZ az
 * and its end, once the nodes play it; take out one node (kind 1), an AZ
 * (2), or an AZ and a node of another AZ (3). */
void faultf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void partition(char az);
void heal(char az);
void nodes_down(int kind, const char *az, const char *node);

/* SIGKILL the engine, mostly in the middle of the writer's transaction. */
void crash_engine(void);
/* `cluster up` (with this point's cache); the engine alone, by hand, its
 * recovery without the nodes that are down (without: which, for notes). */
void restart(int point);
void engine_alone(int point, const char *without);
/* Wait until the writer has n more commits acknowledged (from: the count
 * to start from); fails the test after 30 s. */
void wait_acks(long from, long n, int point, const char *when);
void more_acks(long n, int point, const char *when);

/* A recovery that stops half-way (a new epoch, some SegQuerys, maybe a
 * truncation on one or two segments): drawn from sub; with must, it
 * truncates that node's segments. */
void interrupted_recovery(int point, uint64_t sub, const char *must);

/* ---- crash_check.c: the checks -------------------------------------------- */

struct tally {
  long acked, unknown, unknown_present, lost, partial, phantom, reader_seen, reader_lost;
};

extern unsigned long long converge_max_ms;   /* the slowest convergence */
/* AURALOG_CRASH_BINLOG: the engine's binlog mode (enhanced, community), or
 * NULL; the binlog checks made and the inserts the last one counted. */
const char *crash_binlog(void);
extern long bl_checks, bl_events;

/* `auralog sql` on the engine; output in out. */
int sql_arg(const char *q);
/* Every check after crash point point; fails the test on a problem. */
struct tally check(int point);

#endif
