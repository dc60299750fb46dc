/*
 * Integration: the implement labs' handout and grader (src/lab/), on this
 * tree and on handouts of it, as a student and an instructor use them:
 *
 *  - a handout (lab 21) builds whole and `make grade LAB=21` gives it
 *    0 points, every test failing, with a replay command (only the files
 *    the handout changed are recompiled: the reference build/ is copied
 *    in, and a handout keeps the times of the files it copies as they
 *    are). A handout is the export (test_export.c: every lab's stubs
 *    compile without a warning, no reference body is in it);
 *  - the reference tree grades full, every lab (the first seeds of each
 *    range only, AURALOG_GRADE_SEEDS, to keep this test short; `make
 *    grade` runs them all);
 *  - a bug planted in recovery (--bug vdl-from-hint) loses lab 25's
 *    simulator points but not its unit tests', and the grader prints the
 *    failing seed's replay command and draws its run.
 * About 35 s on two cores.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* A make of its own, not a sub-make of the `make test` running this.
 * The handout builds as a student builds it: not as part of this make
 * (its flags), and not with the sanitizers of `make test SAN=1` (SAN in the
 * environment would send it to build-san/). */
#define NOMAKE "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SAN "

static char root[PATH_MAX];    /* this tree: the one build/auralog is in */
static char self[PATH_MAX];    /* that binary */
static char work[128];         /* where handouts go */

static int setup(void **state)
{
  (void)state;
  const char *b = getenv("AURALOG_BIN");
  if (b == NULL || realpath(b, self) == NULL)
    return -1;
  snprintf(root, sizeof root, "%s", self);
  for (int up = 0; up < 2; up++)
    *strrchr(root, '/') = 0;
  snprintf(work, sizeof work, "/tmp/auralog-it-grade-%d", (int)getpid());
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", work);
  return system(cmd) == 0 ? 0 : -1;
}

/* A handout of lab n in work/n, with the reference build/ copied in. */
static void handout(int n)
{
  int rc = sh(out, OUT_SIZE, "mkdir -p %s && %s lab handout %d %s/%d 2>&1 && "
              "cp -a %s/build %s/%d/build && rm -rf %s/%d/build/grade",
              work, self, n, work, n, root, work, n, work, n);
  if (rc != 0)
    fail_msg("handout %d: %s", n, out);
  assert_non_null(strstr(out, "replaced by"));
}

static void a_fresh_handout_builds_and_grades_zero(void **state)
{
  (void)state;
  struct stat st;
  char p[256];
  snprintf(p, sizeof p, "%s/21/Makefile", work);
  if (stat(p, &st) != 0)
    handout(21);
  int rc = sh(out, OUT_SIZE, "cd %s/21 && " NOMAKE "make --no-print-directory -j2 2>&1 && "
              NOMAKE "make --no-print-directory grade LAB=21 2>&1", work);
  printf("%s", strstr(out, "== lab") ? strstr(out, "== lab") : out);
  assert_int_not_equal(rc, 0);                     /* not full points */
  assert_non_null(strstr(out, "Score: 0/60"));
  assert_null(strstr(out, " OK "));
  assert_non_null(strstr(out, "replay: cd "));
  assert_non_null(strstr(out, "build/auralog sim --seed "));
  snprintf(p, sizeof p, "%s/21/build/auralog", work);
  assert_int_equal(stat(p, &st), 0);
}

static void the_reference_grades_full(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "cd %s && AURALOG_GRADE_SEEDS=10 %s lab grade all --no-build 2>&1",
              root, self);
  const char *total = strstr(out, "\nlab 20 ");
  printf("# %s", total ? total : out);
  if (rc != 0)
    fail_msg("%s", out);
  assert_non_null(strstr(out, "Total: 435/435"));
  assert_null(strstr(out, "FAIL"));
}

static void a_planted_bug_loses_the_labs_simulator_points(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "%s lab grade 25 --no-build --bug vdl-from-hint --out %s/bug 2>&1",
              self, work);
  printf("%s", out);
  assert_int_equal(rc, 1);
  assert_null(strstr(out, "Score: 90/90"));
  assert_null(strstr(out, "0/5\n"));               /* the unit tests keep theirs */
  assert_non_null(strstr(out, "FAIL  0/15"));      /* the all-faults range loses */
  const char *r = strstr(out, "replay: cd ");
  assert_non_null(r);
  assert_non_null(strstr(r, "build/auralog sim --seed "));
  assert_non_null(strstr(r, "--bug vdl-from-hint"));
  const char *d = strstr(out, "drawing: ");
  assert_non_null(d);
  char svg[256];
  assert_int_equal(sscanf(d, "drawing: %255s", svg), 1);
  struct stat st;
  assert_int_equal(stat(svg, &st), 0);
  assert_true(st.st_size > 1000);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_fresh_handout_builds_and_grades_zero),
    cmocka_unit_test(the_reference_grades_full),
    cmocka_unit_test(a_planted_bug_loses_the_labs_simulator_points),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
