/*
 * lab/lab.h: what `auralog lab` (lab.c) shares with the labs' checks
 * (lab/check.c) and the history they read (lab/history.c).
 *
 * A check grades from two sources: the cluster as it is now (status, SQL)
 * and what happened, read from the cluster's event journal (journal.h),
 * which the coordinator writes and MACs. A lab's history is the journal
 * since its last `auralog lab start N` mark, minus every `lab run` demo.
 * What a check read and said is kept in a run directory (lab/rundir.c).
 */
#ifndef AURALOG_LAB_H
#define AURALOG_LAB_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "param.h"
#include "lab/assign.h"

struct labctx {
  char dir[PATH_MAX];          /* the cluster directory */
  char coord[ADDR_MAX_LEN + 1];
  char engine[ADDR_MAX_LEN + 1];
  char answers[PATH_MAX + 128];
  cJSON *status;               /* status --json of volume main */
  int failed;
  FILE *ref;                   /* lab run: reference answers go here (not the student's file) */
  /* The history (lab/history.c). */
  cJSON *journal;              /* every good line, oldest first */
  int jbad;                    /* lines that failed their MAC */
  cJSON **ev;                  /* the lab's window: events in order */
  size_t nev;
  char *win;                   /* win[i]: journal event i is in the window */
  long start;                  /* index in journal of the lab-start mark (-1: none) */
  char jpath[PATH_MAX + 64];   /* the journal read */
  double tstart;               /* wall ms of the lab-start (or demo) mark; -1: none */
  int demo;                    /* the window is a `lab run` demo's */
  int ndemo;                   /* demo spans in a student's window (left out) */
  long xfrom;                  /* the run directory's excerpt: lines from this index on */
  long bfrom;                  /* ... and its context before the start mark (before.jsonl) */
  unsigned char jkey[32];      /* the journal's key (the coordinator's journal.key) */
  /* Whose run: the student the lab-start mark names, and their assignment. */
  char student[STUDENT_MAX + 1];
  struct assign as;
  int has_assign;
  /* The evidence (lab/evidence.c): what the check read from the cluster,
   * recorded as it reads it; `lab verify` replays it (offline: 1). */
  cJSON *evid;
  int offline;
  int nsql;                    /* offline: the next recorded SQL answer */
  char rundir[PATH_MAX + 96];  /* offline: the run directory re-checked */
  char seal[33];               /* the lab-seal mark's hash of what the check read */
};

/* lab.c */
void find_writer(struct labctx *x);

/* check.c: the labs */
void ok(struct labctx *x, int good, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A line that fails for a wrong answer or a step done otherwise than the
 * handout says, not a step missing: "[wrong]", with what was expected. */
void bad(struct labctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* fmt formatted if have, else "": a line's values only when there are
 * some (no -1 or nan for a step not seen). */
const char *shown(int have, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A count from sql_num for a line: " (n)", or why there is none. */
const char *counted(long long n);
void check1(struct labctx *x);
void check2(struct labctx *x);
void check3(struct labctx *x);
void check4(struct labctx *x);
void check5(struct labctx *x);
void check6(struct labctx *x);
/* check.c's helpers, for the checks in files of their own (check_*.c):
 * the history's start and MACs; SQL on the writer. */
int started(struct labctx *x, int lab);
int query(struct labctx *x, const char *sql, char *out, size_t n);
long long sql_num(struct labctx *x, const char *sql);
/* answers.c: the student's answer to key, trimmed and lower-cased, or
 * NULL (none, or no answers file); a number within [lo, hi] of what was
 * measured (ref), or exactly the word want of choices ("a|b|c"). */
const char *lab_answer(struct labctx *x, const char *key);
void want_num(struct labctx *x, const char *key, double lo, double hi, double ref,
              const char *what);
void want_word(struct labctx *x, const char *key, const char *want, const char *choices,
               const char *what);
/* check_reads.c: lab 7, what a reader sees (immediate reads, a fenced writer) */
void check7(struct labctx *x);
/* check_segment.c: lab 8, inside a segment (a hole and its fill, GC at the PGMRPL) */
void check8(struct labctx *x);
/* check_replicas.c: lab 9, read replicas (lag, a reader holding GC, failover) */
void check9(struct labctx *x);
/* check_measure.c: lab 10, a benchmark claim and application group commit */
void check10(struct labctx *x);
/* check_repair.c: lab 11, a node lost and repaired, a node drained (membership, §2.2-2.3) */
void check11(struct labctx *x);
/* check_restore.c: lab 12, a table dropped by mistake and the volume restored from its backup */
void check12(struct labctx *x);
/* check_binlog.c: lab 13, the binlog: community against enhanced, recovery, a consumer */
void check13(struct labctx *x);

/* history.c */
int hist_load(struct labctx *x, int lab, int demo);
/* The window of an already read journal (x->journal): what hist_load does
 * after reading (lab verify reads a run directory's excerpt). */
int hist_window(struct labctx *x, int lab, int demo);
void hist_free(struct labctx *x);
/* Lab 6: the window's span, in another coordinator's journal at path. */
int hist_follow(struct labctx *x, const char *path);
int is(const cJSON *e, const char *kind);
double fnum(const cJSON *e, const char *key);
const char *fstr(const cJSON *e, const char *key);
/* The journal's event at index i (all of it, for replaying state). */
cJSON *hist_at(struct labctx *x, long i);
long hist_len(struct labctx *x);
/* Index in the journal of window event e. */
long hist_index(struct labctx *x, const cJSON *e);
/* The nodes' state, replayed event by event (down[az][k]: node "A1" is [0][0]). */
struct nodes {
  int down[3][2];
  int part[3];
};
void nodes_apply(struct nodes *s, const cJSON *e);
char nodes_az_down(const struct nodes *s);     /* an AZ with both nodes down, or 0 */
int nodes_ndown(const struct nodes *s);
/* The copies, Vw, Vr the coordinator started with (the journal's start). */
int hist_quorum(struct labctx *x, int *copies, int *vw, int *vr);
/* Tell the coordinator of a lab mark (lab-start, lab-demo, lab-demo-end). */
int hist_mark(struct labctx *x, const char *action, int lab, char *why, size_t n);

/* evidence.c: what the check read, kept and replayed; the cross-checks
 * that several sources must agree on. */
void ev_begin(struct labctx *x);
void ev_status(struct labctx *x);               /* x->status into the evidence */
int ev_query(struct labctx *x, const char *sql, char *out, size_t n, int online_rc);
int ev_sql_replay(struct labctx *x, const char *sql, char *out, size_t n);
void lab_file(struct labctx *x, const char *name, char *out, size_t n);
/* The hash of the answers file and the evidence read (status, SQL) that
 * `lab check` puts in the journal (a lab-seal mark) and `lab verify`
 * recomputes from the run directory. */
void ev_seal(struct labctx *x, const char *answers, char out[33]);
void who_and_assignment(struct labctx *x);      /* from the lab-start mark */
void agree(struct labctx *x);                   /* journal, coordinator, nodes */
double status_num(const cJSON *o, const char *key);
const cJSON *status_node(struct labctx *x, const char *id);
/* verify.c: `auralog lab verify RUNDIR...` */
int lab_verify_main(int argc, char **argv, void (*check)(int lab, struct labctx *x));
/* student: --student, $AURALOG_STUDENT, DIR/student, or asked once */
int student_resolve(const char *dir, const char *given, char *out, size_t n, int ask);

/* The run directory of a check (rundir.c) and its timeline (timeline.c). */
struct rd_tee {
  pid_t pid;
  int saved;
};
int rd_tee(struct rd_tee *t, const char *path);
void rd_untee(struct rd_tee *t);
void rd_latest(const char *parent, const char *name);
int rd_make(struct labctx *x, int lab, char *out, size_t n);
void rd_write(struct labctx *x, int lab, const char *run);
int timeline_svg(struct labctx *x, const char *path, const char *title);

#endif
