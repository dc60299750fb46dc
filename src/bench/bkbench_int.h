/*
 * bkbench_int.h: what the two files of `auralog bench backup` share.
 *   bkbench.c   the benchmark: options, the foreground runs with backup
 *               off and on (bench.c's bench_system), cleanup, the report
 *               (a table or JSON), the journal notes
 *   bkrestore.c restore time against volume size and target age: a fresh
 *               cluster per size, filled, aged, restored into a file and
 *               into a new volume
 * Nothing else includes it; the benchmark's entry is bench_backup_main
 * (bench.h).
 */
#ifndef AURALOG_BENCH_BKBENCH_INT_H
#define AURALOG_BENCH_BKBENCH_INT_H

#include <stdint.h>

#include "bench/bench.h"

#define BK_SIZES    8          /* volume sizes one run restores at most */
#define BK_TARGETS  3          /* the newest, the middle and the oldest point */
#define BK_ROW      3900       /* bytes of random blob per row: one row fills a 4 KiB page */
#define BK_BATCH    500        /* rows per INSERT while filling (~2 MiB, well inside a commit) */
#define BK_UPD      4          /* rows a transaction updates while the volume ages */
#define BK_TX_MS    30000      /* one transaction's answer */
#define BK_STAGE_S  60         /* the backup must reach the last point within this */

/* One timed restore. */
struct bkr_one {
  int ok;
  char err[600];
  double secs;               /* file: restore_build; volume: build + load */
  double build_s, load_s;    /* volume: the two steps of `restore --into` */
  uint64_t cpl;              /* the point restored */
  uint64_t records, objects, bytes, pages;
};

/* One target point of a size. */
struct bkr_target {
  const char *name;          /* "newest", "middle", "oldest" */
  uint64_t lsn;              /* asked: a VDL the status showed (a CPL) */
  double at_us;              /* when it showed it (bench_now_us) */
  double age_s;              /* how old the point was when its file restore began */
  struct bkr_one file, vol;
};

/* One volume size. */
struct bkr_size {
  int mib;                   /* asked: MiB of pages filled */
  int ran;
  char err[600];
  double fill_s, age_s;      /* the fill; the updates after it */
  uint64_t age_tx;           /* transactions of those updates */
  double stage_s;            /* from the last update to the backup reaching it */
  uint64_t vol, lo, hi;      /* the volume's id; the points its backup holds */
  uint32_t npgs, pg_pages;
  double volume_bytes;       /* the restored file (the newest point's) */
  double store_bytes;        /* the volume's objects in the store */
  struct bkr_target t[BK_TARGETS];
};

/* What cleanup needs, also on die()'s exit (bkbench.c). */
struct bkbench_run {
  pid_t owner;
  int up;                    /* a private cluster may run in cdir */
  int base;
  char dir[1024], cdir[1100];
};
extern struct bkbench_run K;

/* bkbench.c: one line of progress on stderr (force: a new phase); die if
 * a signal asked us to stop. */
void bk_progress(int force, const char *fmt, ...);
void bk_check_stop(void);
/* Stop the private cluster, if one runs, and remove its data and its
 * backup (the logs stay). */
void bk_cluster_down(void);

/* bkrestore.c: a fresh cluster backing up, z->mib MiB filled, age_s
 * seconds of updates, then each target restored into a file and into a
 * new volume, timed; the cluster stopped, its data and backup removed. */
void bkr_size(struct bkr_size *z, int age_s, uint64_t seed);

#endif
