/*
 * repair_int.h: what the two files of `auralog bench repair` share.
 *   repair.c     the benchmark: options, the run over the points, cleanup,
 *                progress, the report (a table or JSON), the journal notes
 *   repairrun.c  one private cluster as the benchmark sees it: fill its
 *                PGs, kill a node and watch the coordinator repair it,
 *                clients writing through it all
 * Nothing else includes it; the benchmark's entry is bench_repair_main
 * (bench.h).
 */
#ifndef AURALOG_BENCH_REPAIR_INT_H
#define AURALOG_BENCH_REPAIR_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "bench/bench.h"
#include "lib/hist.h"

#define RP_POINTS   8          /* points (PG count x MiB per PG) one run measures */
#define RP_REPS     12         /* repeats at a point: each kills another node */
#define RP_NODES    9          /* A1..A3, B1..B3, C1..C3: one spare per AZ */
#define RP_ROW      3900       /* bytes of random blob per row: one row fills a 4 KiB page */
#define RP_BATCH    500        /* rows per INSERT while filling (~2 MiB, well inside a commit) */
#define RP_POLL_MS  50         /* how often the watch asks the coordinator */
#define RP_TX_MS    30000      /* one transaction's answer */
#define RP_CLIENTS_MAX 64

/* One repair: a node killed, every PG back at NCOPIES current segments. */
struct rrep {
  char node[8];              /* the node killed */
  int ok;
  char err[300];
  double detect_ms;          /* SIGKILL -> the first next segment seen (the coordinator began) */
  double move_ms;            /* first next seen -> every PG stable, the node hosting nothing */
  double client_ms;          /* SIGKILL -> every PG stable: detect + move, as a client sees it */
  double coord_ms;           /* the coordinator's own figure (status mttr_ms: from the node's
                                last heartbeat to its last segment moved) */
  double bytes;              /* bytes the spares pulled from PG peers (SegStat.pulled) */
  int segs;                  /* segments moved (positions that had a next) */
  int to_nodes;              /* distinct spares they moved to */
  int restarts;              /* moves aborted and begun again meanwhile (a spare silent too long) */
};

/* One point: so many PGs filled with so much each. */
struct rpoint {
  int pgs;                   /* PGs filled full */
  int mib;                   /* MiB of pages per PG (--pg-pages = mib * 256 at 4 KiB) */
  int vol_pgs;               /* PGs in the volume after the fill (the engine grows ahead) */
  double seg_bytes;          /* a full PG's segment, as its node counts it (median) */
  double fill_s;
  int nrep;
  struct rrep r[RP_REPS + 1];  /* the last one: under the foreground load, if it ran */
};

/* The foreground load: write-only transactions of N clients, timed per
 * window of one repair under load. */
struct fgwin {
  double secs;
  uint64_t n, errors;
  struct hist h;
};
struct fg {
  int ran;
  char err[300];
  int clients, point;        /* which point it ran at */
  struct fgwin base;         /* no repair: the same clients before the kill */
  struct fgwin down;         /* the node down, not yet repaired (detection) */
  struct fgwin move;         /* the repair moving segments */
  struct rrep rep;           /* that repair */
};

/* What cleanup needs, also on die()'s exit. */
struct repair_run {
  pid_t owner;
  int up;
  char dir[1024];
  int base;
  int repair_after;          /* -1: the coordinator's default */
  int quick;
};
extern struct repair_run R;

/* repair.c: one line of progress on stderr; die if a signal asked us to stop. */
void rp_progress(int force, const char *fmt, ...);
void rp_check_stop(void);

/* repairrun.c: start a fresh private cluster of RP_NODES nodes for point
 * p and fill its PGs (p->vol_pgs, seg_bytes, fill_s); load the foreground
 * tables if clients. */
void rp_cluster(struct rpoint *p, int clients, uint64_t seed);
/* Kill a node of AZ k % 3 (the one hosting most segments), time its
 * repair into r, and start it again empty-handed. */
void rp_repair(int k, struct rrep *r);
/* The same under a write-only load of f->clients clients: base_s seconds
 * of load first, then the repair. */
void rp_repair_loaded(int k, int base_s, uint64_t seed, struct fg *f);
/* Stop the point's cluster and remove its data (logs kept). */
void rp_cluster_down(void);

#endif
