/*
 * impl.h: the implement labs (labs/README.md, "Implement labs").
 *
 * The observe labs (1-6, lab.c) run a cluster and ask what a student saw.
 * The implement labs have the student write the bodies of the pure cores
 * that the paper's ideas live in, the way MIT 6.5840 and xv6 labs do:
 *
 *   20 diff      the page diff                       §3.1    vfs/diff.c
 *   21 scl       the SCL from backlinks              §4.2.1  node/segment.c
 *   22 vdl       the VCL, the VDL and the LAL        §4.1    vfs/quorum.c
 *   23 evict     the buffer cache's eviction rule    §4.2.3  vfs/cache.c
 *   24 gossip    merging a PG peer's gossip          §3.3    node/gossip.c
 *   25 recovery  the provable VDL, the truncation    §4.3    vfs/recovery.c, open.c
 *
 * They are numbered from 20 so that one number names one lab, whichever
 * kind (observe labs may grow up to 19).
 *
 * In the source, each body a student writes sits between two comments:
 *
 *     /+ LAB 21 BEGIN: what to write, and why.
 *      + stub: return s->scl;
 *      +/
 *     ... the reference code ...
 *     /+ LAB 21 END +/
 *
 * (with '*' for '+'). The `stub:` lines are the code a handout puts in
 * place of the body: it compiles and is wrong. In the reference tree the
 * markers are comments and nothing else.
 *
 * Interface:
 *   impl_find       a lab by number ("12") or name ("vdl")
 *   impl_root       the source tree to work on: --src, or the tree whose
 *                   build/ holds this binary
 *   impl_points     the lab's full score; impl_hidden_points what the
 *                   hidden tests and seeds add under --submission
 *   impl_list       print the implement labs (auralog lab list)
 *   lab_handout_main, lab_grade_main   `auralog lab handout | grade`
 *   lab_submit_main `auralog lab grade N --submission PATH...` (submit.c)
 *   handout_file    one file through the handout transformation (tests)
 */
#ifndef AURALOG_LAB_IMPL_H
#define AURALOG_LAB_IMPL_H

#include <stddef.h>
#include <stdio.h>

/* A unit test that earns points: cmocka test `name` of build/tests/unit_<bin>.
 * hidden: an instructor-only test. `lab grade N` (a student's own tree)
 * skips it; `lab grade N --submission` (submit.c) runs it in the
 * instructor's tree, and Gradescope shows it only once grades are
 * published. Mark one by adding a 1 after its points. */
struct impl_test {
  const char *bin;
  const char *name;
  int points;
  int hidden;
};

/* Simulator seeds that earn points when none of them violates an invariant.
 * hidden: seeds the student never had. Its first..last are offsets from a
 * base derived from the student's id (submit.c), so each student has
 * seeds of their own, the same ones every time they are graded; only
 * `lab grade --submission` runs them. */
struct impl_sim {
  unsigned first, last;        /* seeds first..last */
  const char *faults;          /* --faults LIST, NULL: the default (all) */
  int points;
  int hidden;
};

struct impl_lab {
  int n;
  const char *name;
  const char *title;
  const char *paper;
  const char *files;           /* where the marked bodies are */
  const struct impl_test *tests;
  const struct impl_sim *sims;
};

extern const struct impl_lab impl_labs[];
extern const size_t impl_nlabs;

const struct impl_lab *impl_find(const char *s);
int impl_root(const char *opt, char *out, size_t n);
int impl_points(const struct impl_lab *l);   /* the lab's full score (its visible tests) */
int impl_hidden_points(const struct impl_lab *l);  /* what its hidden tests add */
void impl_list(FILE *f);

/* Copy in to out, lab's marked bodies replaced by their stubs. Returns
 * how many it replaced, or -1 with a reason in why. */
int handout_file(FILE *in, FILE *out, int lab, const char *path, char *why, size_t whylen);

int lab_handout_main(int argc, char **argv);
int lab_grade_main(int argc, char **argv);
int lab_submit_main(int argc, char **argv);

#endif
