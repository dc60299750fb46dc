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
 *   25 recovery  the provable VDL, the truncation    §4.3    vfs/recovery.c, rcvadopt.c
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
 *   lab_export_main, lab_handout_main, lab_grade_main
 *                   `auralog lab export | handout | grade`
 *   lab_submit_main `auralog lab grade N --submission PATH...` (submit.c)
 *   handout_file    one file through the handout transformation (tests)
 *   handout_copy    a tree through it (handout.c)
 *   export_tree     the student repository (export.c)
 *   leaks_read, leaks_scan   copies of a body anywhere in it (leakcheck.c)
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

/* handout_file's lab: every lab's bodies. */
#define IMPL_ALL 0

/* Copy in to out, lab's marked bodies (every lab's: IMPL_ALL) replaced by
 * their stubs; path names in for messages. Returns how many it replaced,
 * or -1 with a reason in why; labs (if not NULL) gains bit n for each lab
 * n whose body it replaced. */
int handout_file(FILE *in, FILE *out, int lab, const char *path, unsigned long long *labs,
                 char *why, size_t whylen);

/* A copy of a source tree through handout_file (handout.c). */
struct copy_out {
  char *const *skip;          /* in: paths left out (NULL-ended), relative */
  char **stubbed;             /* out: the files it replaced bodies in */
  size_t nstubbed;
  unsigned long long labs;    /* out: bit n: a body of lab n replaced */
  int regions;                /* out: bodies replaced */
  size_t files;               /* out: files copied */
  char why[2 * 4096 + 300];   /* out: why it failed (two paths and a reason) */
};

/* Copy root to out (existing) without .git, build outputs and r->skip,
 * lab's bodies stubbed. Returns 0, or -1 with r->why. */
int handout_copy(const char *root, const char *out, int lab, struct copy_out *r);

/* Runs of consecutive reference-body lines, to find copies of a body
 * (leakcheck.c). */
struct leakrun {
  char *text;                 /* k trimmed lines, each ending in '\n' */
  const char *file;           /* the body's file and first line */
  int line;
  int lab;
  int k;
};
struct leaks {
  struct leakrun *w;          /* sorted by text */
  size_t n, cap;
  char has[8];                /* has[k]: some run is of k lines */
};

/* The runs of the bodies in files (relative to root). 0, or -1 with why. */
int leaks_read(struct leaks *L, const char *root, char *const *files, size_t nfiles, char *why,
               size_t whylen);
/* 1 if a text file under dir holds a run (why says where), else 0. */
int leaks_scan(const struct leaks *L, const char *dir, char *why, size_t whylen);
void leaks_free(struct leaks *L);

/* The student repository (export.c) of the tree src (NULL: this binary's)
 * in dir; cmd names the command in messages; handout: the lab a handout
 * is for (NULL: an export). Returns the exit status; dies on bad input. */
int export_tree(const char *cmd, const char *src, const char *dir,
                const struct impl_lab *handout);

int lab_export_main(int argc, char **argv);
int lab_handout_main(int argc, char **argv);
int lab_grade_main(int argc, char **argv);
int lab_submit_main(int argc, char **argv);

#endif
