/*
 * grader.h: the parts of `auralog lab grade` (grade.c) that grading a
 * submission (submit.c) reuses: the grader's state, running a test
 * binary or a simulator seed under a time limit, and one lab's tests.
 *
 * grade.c grades the tree it is pointed at, the student's own; submit.c
 * grades a clean instructor-owned copy with only the student's bodies in
 * it, and so also wants: the hidden tests and seeds (impl.h: `hidden`),
 * seeded per student (seed_base), limits on what the student's code may
 * do while it runs (contain), and each test's result, not only a sum
 * (rec), for --csv and --gradescope.
 */
#ifndef AURALOG_LAB_GRADER_H
#define AURALOG_LAB_GRADER_H

#include <limits.h>

#include "lab/impl.h"

/* One graded test's outcome: a unit test, or a simulator range. */
struct grade_rec {
  char name[256];
  int got, max;
  int hidden;                  /* an instructor-only test or seed range */
  char detail[2048];           /* why it failed and how to replay it ("" if it passed) */
};

#define GRADE_MAXREC 64

struct grader {
  char root[PATH_MAX];
  char out[PATH_MAX + 32];     /* the run directory */
  const char *bug;
  int verbose;
  /* For lab grade --submission (submit.c); all zero for a plain grade. */
  int hidden;                  /* also run the lab's hidden tests and seeds */
  unsigned long long seed_base;  /* a hidden range's seeds are seed_base + first..last */
  int contain;                 /* run tests with limits (grade.c, run()) */
  const char *replay_prefix;   /* how to say where a replay runs (NULL: cd root) */
  struct grade_rec *rec;       /* if set: each test's result, up to GRADE_MAXREC */
  int nrec;
};

/* Grade lab l in g->root (building first unless nobuild); prints the
 * points of each test and "Score: got/total"; returns got, *total the
 * most it could have been (with the hidden tests if g->hidden). */
int grade_one(struct grader *g, const struct impl_lab *l, int nobuild, int *total);

/* make build/auralog and the unit tests of labs l[0..nl) in g->root,
 * the log in g->out/make.log; 0 if it built. */
int grade_build(struct grader *g, const struct impl_lab *l, size_t nl);

/* Record every test of l (g->rec) at 0 points, with why. */
void grade_note_all(struct grader *g, const struct impl_lab *l, const char *why);

/* In a forked child about to exec a student's code (g->contain): limits,
 * and namespaces where the kernel allows; returns in the process that is
 * to exec (submit.c). grade_containment says what that was, in words. */
void grade_contain(int limit);
const char *grade_containment(const struct grader *g);

#endif
