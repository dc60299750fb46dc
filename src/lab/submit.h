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
 */
#ifndef AURALOG_LAB_SUBMIT_H
#define AURALOG_LAB_SUBMIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

#endif
