/*
 * submit.h: the pieces of `auralog lab grade N --submission` (submit.c)
 * that deal with a submission's lab bodies (submit_body.c).
 *
 * A body is the text between the line that closes a `/+ LAB N BEGIN ...
 * +/` comment and the `/+ LAB N END +/` line (impl.h has the markers).
 * Only bodies travel from a submission into the instructor's tree: the
 * BEGIN comment, the rest of the file and every other file stay the
 * instructor's.
 *
 *   body_extract      a file's LAB N bodies, in order (or why not)
 *   body_splice       write the instructor's file with the given bodies in
 *   body_lint         refuse a body that could escape its function or act
 *                     on the world (preprocessor lines, exit, fork, I/O ...)
 *   body_fingerprint  a hash of a body's tokens (not its layout or comments),
 *                     to flag copies of the reference or of each other
 * and how a run's outcomes are written (submit_out.c):
 *   submit_csv        --csv: a row per submission
 *   submit_gradescope --gradescope: Gradescope's results.json for one
 */
#ifndef AURALOG_LAB_SUBMIT_H
#define AURALOG_LAB_SUBMIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab/grader.h"

#define BODY_MAX 16            /* bodies of one lab in one file */

struct bodies {
  int n;
  char *text[BODY_MAX];
  int line[BODY_MAX];          /* where each begins in its file */
};

int body_extract(FILE *in, int lab, const char *path, struct bodies *b, char *why, size_t n);
int body_splice(const char *ref, int lab, const struct bodies *b, char *why, size_t n);
int body_lint(const char *text, const char *where, int line, char *why, size_t n);
uint64_t body_fingerprint(const char *text, uint64_t h);
void bodies_free(struct bodies *b);

/* One submission's outcome. */
struct sub_result {
  char student[96];
  char from[96];               /* where the id came from */
  char path[PATH_MAX];
  int got, total;
  char error[2400];            /* why it could not be graded ("" if it was) */
  char flags[512];             /* copies found */
  uint64_t print;              /* fingerprint of all its bodies */
  struct grade_rec rec[GRADE_MAXREC];
  int nrec;
  unsigned long long base;     /* its hidden seeds' base */
  double secs;
};

void submit_csv(const char *file, const struct impl_lab *l, struct sub_result *rs, int n);
void submit_gradescope(const char *file, const struct impl_lab *l, const struct sub_result *r);

#endif
