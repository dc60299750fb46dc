/*
 * Integration: `auralog lab export DIR`, the student repository (export.c),
 * as an instructor makes it and a student uses it:
 *
 *  - it holds no line of any implement lab's reference body, in its files
 *    or its history (export_leaks.sh reads the bodies from this tree, so
 *    the check follows the code; the same check finds them in this tree),
 *    has one commit by the course, leaves labs/instructor-only out (no
 *    tests/hidden, and no model of an answer anywhere), and its
 *    reference objects carry no debug information;
 *  - it is refused into a non-empty directory, inside a git work tree, or
 *    from a student repository, and from a tree where a body's code sits
 *    in another file too (a backup segment.c.orig);
 *  - it builds with no warning, every lab's stub compiled too (LAB=all),
 *    and untouched lab files link their reference objects: the simulator
 *    runs; a changed header, or another architecture, says what it means;
 *  - a fresh export grades 0 on lab 25 (each lab's own files are compiled
 *    for its grade), and lab 25's reference bodies put back grade full
 *    while lab 21's seg_add is still a stub: each lab stands alone;
 *  - `lab handout 21 DIR` is the same repository, naming lab 21's file;
 *    a body committed to it and reverted is found in its history.
 * The reference build/ is copied in, so only what the export changed is
 * compiled. About 50 s on two busy cores (25 s of CPU).
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
#include <sys/utsname.h>
#include <unistd.h>

#include "harness.h"

/* A make of its own, not a sub-make of the `make test` running this, and
 * not into build-san/ (SAN). */
#define NOMAKE "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SAN -u LAB "

static char root[PATH_MAX];    /* this tree: the one build/auralog is in */
static char self[PATH_MAX];    /* that binary */
static char work[128];         /* where exports go */
static char exp_[256];         /* the export */
static char segref[128];       /* lab 21's reference object in it */

static int setup(void **state)
{
  (void)state;
  const char *b = getenv("AURALOG_BIN");
  if (b == NULL || realpath(b, self) == NULL)
    return -1;
  snprintf(root, sizeof root, "%s", self);
  for (int up = 0; up < 2; up++)
    *strrchr(root, '/') = 0;
  snprintf(work, sizeof work, "/tmp/auralog-it-export-%d", (int)getpid());
  snprintf(exp_, sizeof exp_, "%s/student", work);
  struct utsname u;
  uname(&u);
  snprintf(segref, sizeof segref, "ref/%s/src/node/segment.o", u.machine);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", work, work);
  return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", work);
  return system(cmd) == 0 ? 0 : -1;
}

static void an_export_holds_no_reference_body(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "%s lab export %s 2>&1", self, exp_);
  printf("%s", out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "src/node/segment.c: 1 body replaced by its stub"));
  assert_non_null(strstr(out, "8 bodies of labs 20-25 are stubs"));
  rc = sh(out, OUT_SIZE, "bash %s/tests/integration/export_leaks.sh %s %s 2>&1", root, root,
          exp_);
  printf("# %s", out);
  if (rc != 0)
    fail_msg("reference lines in the export:\n%s", out);
  /* The check has teeth: this tree is full of them. */
  rc = sh(out, OUT_SIZE, "bash %s/tests/integration/export_leaks.sh %s %s 2>&1", root, root,
          root);
  assert_int_equal(rc, 1);
  assert_non_null(strstr(out, "./src/node/segment.c: "));
  /* One commit, by the course; nothing left uncommitted. */
  rc = sh(out, OUT_SIZE, "cd %s && git log --all --format='%%an <%%ae>' && git status --short",
          exp_);
  assert_int_equal(rc, 0);
  assert_string_equal(out, "auralog course <course@auralog.invalid>\n");
  /* Nothing the instructor keeps to themselves. */
  rc = sh(out, OUT_SIZE, "cd %s && sed 's/#.*//' labs/instructor-only | "
          "while read -r p; do [ -z \"$p\" ] || [ ! -e %s/$p ] || echo $p; done", root, exp_);
  assert_int_equal(rc, 0);
  assert_string_equal(out, "");
  /* No hidden test, and no model of an answer that the hidden tests
   * compare a body with (tests/hidden: ref_diff is lab 20's answer,
   * model_points and model_ack_upto lab 22's, model_vdl lab 25's),
   * anywhere in it; this tree has them. */
  const char *models = "grep -rlE --exclude-dir=.git --exclude-dir=build "
                       "'model_vdl|model_points|model_ack_upto|ref_diff' . | sort";
  rc = sh(out, OUT_SIZE, "cd %s && ls -d tests/hidden 2>&1; %s", exp_, models);
  assert_non_null(strstr(out, "No such file or directory"));
  assert_null(strstr(out, "./"));
  rc = sh(out, OUT_SIZE, "cd %s && %s", root, models);
  assert_non_null(strstr(out, "./tests/hidden/test_diff_model.c"));
  assert_non_null(strstr(out, "./tests/hidden/test_quorum_model.c"));
  assert_non_null(strstr(out, "./tests/hidden/test_recovery_model.c"));
  /* Seven reference objects, no debug sections, hashes that hold. */
  rc = sh(out, OUT_SIZE, "cd %s && ls ref/*/src/*/*.o | wc -l && "
          "for o in ref/*/src/*/*.o; do objdump -h $o; done | grep -c debug; "
          "for s in ref/*/src/*/*.sha256; do sha256sum --quiet -c $s || echo BAD $s; done",
          exp_);
  assert_string_equal(out, "7\n0\n");
}

static void bad_directories_are_refused(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "%s lab export %s 2>&1", self, exp_);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "is not empty; give a new directory"));
  rc = sh(out, OUT_SIZE, "%s lab export %s/build/student-x 2>&1", self, root);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "is inside the git work tree"));
  rc = sh(out, OUT_SIZE, "%s lab export --src %s %s/again 2>&1", self, exp_, work);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "is a student repository itself"));
  rc = sh(out, OUT_SIZE, "%s lab export 2>&1", self);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "say where"));
  struct stat st;
  char p[256];
  snprintf(p, sizeof p, "%s/again", work);
  assert_int_not_equal(stat(p, &st), 0);           /* nothing half-made left */
}

/* A body that went somewhere else in the tree (a patch's backup, a snippet
 * in a document) stops the export: it looks for the bodies' code in every
 * file it writes. */
static void a_body_copied_elsewhere_is_refused(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "mkdir %s/tree && cd %s && "
              "tar --exclude=./build --exclude=./.git -cf - . | tar -C %s/tree -xf - && "
              "cp src/node/segment.c %s/tree/src/node/segment.c.orig && "
              "%s lab export --src %s/tree %s/leaked 2>&1",
              work, root, work, work, self, work, work);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "src/node/segment.c.orig:"));
  assert_non_null(strstr(out, "holds lines of lab 21's reference body (src/node/segment.c:"));
  struct stat st;
  char p[256];
  snprintf(p, sizeof p, "%s/leaked", work);
  assert_int_not_equal(stat(p, &st), 0);
}

static void the_export_builds_and_runs_the_reference_cores(void **state)
{
  (void)state;
  /* Only now (the leak check is done) the reference build/, for speed. */
  int rc = sh(out, OUT_SIZE, "cp -a %s/build %s/build && rm -rf %s/build/grade && cd %s && "
              NOMAKE "make --no-print-directory -j2 LAB=all build/libauralog.a 2>&1",
              root, exp_, exp_, exp_);
  if (rc != 0)
    fail_msg("%s", out);
  assert_null(strstr(out, "warning:"));
  assert_non_null(strstr(out, "-c src/node/segment.c"));  /* the stubs compile */
  rc = sh(out, OUT_SIZE, "cd %s && " NOMAKE "make --no-print-directory -j2 2>&1 && "
          "build/auralog sim --seed 1 2>&1", exp_);
  printf("%s", strstr(out, "seed 1:") ? strstr(out, "seed 1:") : out);
  assert_int_equal(rc, 0);
  assert_null(strstr(out, "warning:"));
  assert_null(strstr(out, "note:"));
  assert_non_null(strstr(out, segref));
  assert_non_null(strstr(out, "seed 1: ok"));
  /* A header edited: the file that includes it can no longer be the
   * reference object, and make says why. */
  rc = sh(out, OUT_SIZE, "cd %s && echo '/* mine */' >> src/vfs/diff.h && "
          NOMAKE "make -n build/libauralog.a 2>&1; git checkout -q src/vfs/diff.h", exp_);
  assert_non_null(strstr(out, "note: src/vfs/diff.c is compiled from its stub"));
  assert_non_null(strstr(out, "-c src/vfs/diff.c"));
  /* Another architecture: no objects for it, and make says what that means. */
  rc = sh(out, OUT_SIZE, "cd %s && " NOMAKE "make -n REF_ARCH=riscv64 build/libauralog.a 2>&1",
          exp_);
  assert_non_null(strstr(out, "not riscv64"));
  assert_non_null(strstr(out, "stubs here"));
  assert_non_null(strstr(out, " build/obj/src/node/segment.o"));   /* the stub's */
  assert_null(strstr(out, segref));
}

/* Lab 25 before lab 21: lab 25's own files graded, seg_add the reference. */
static void an_export_grades_zero_and_the_reference_body_full(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "cd %s && AURALOG_GRADE_SEEDS=3 " NOMAKE
              "make --no-print-directory grade LAB=25 2>&1", exp_);
  printf("%s", strstr(out, "== lab") ? strstr(out, "== lab") : out);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "Score: 0/90"));
  assert_null(strstr(out, " OK "));
  rc = sh(out, OUT_SIZE, "cd %s && cp %s/src/vfs/recovery.c %s/src/vfs/rcvadopt.c src/vfs/ && "
          "AURALOG_GRADE_SEEDS=5 " NOMAKE "make --no-print-directory grade LAB=25 2>&1",
          exp_, root, root);
  printf("%s", strstr(out, "== lab") ? strstr(out, "== lab") : out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "Score: 90/90"));
  assert_non_null(strstr(out, segref));   /* lab 21: reference */
}

static void a_handout_is_the_export_naming_its_lab(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "%s lab handout 21 %s/h21 2>&1 && "
              "bash %s/tests/integration/export_leaks.sh %s %s/h21 2>&1",
              self, work, root, root, work);
  printf("%s", out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "8 bodies of labs 20-25 are stubs"));
  assert_non_null(strstr(out, "write the bodies marked LAB 21 in src/node/segment.c"));
  assert_non_null(strstr(out, "make grade LAB=21"));
  /* The check reads history too: a body committed, then taken back out. */
  rc = sh(out, OUT_SIZE, "cd %s/h21 && cp %s/src/node/segment.c src/node/ && "
          "git -c user.name=s -c user.email=s@x commit -qam copied && "
          "git -c user.name=s -c user.email=s@x revert --no-edit HEAD >/dev/null && "
          "bash %s/tests/integration/export_leaks.sh %s . 2>&1", work, root, root, root);
  assert_int_equal(rc, 1);
  assert_non_null(strstr(out, "git log -p --all: "));
  assert_null(strstr(out, "./src/"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(an_export_holds_no_reference_body),
    cmocka_unit_test(bad_directories_are_refused),
    cmocka_unit_test(a_body_copied_elsewhere_is_refused),
    cmocka_unit_test(the_export_builds_and_runs_the_reference_cores),
    cmocka_unit_test(an_export_grades_zero_and_the_reference_body_full),
    cmocka_unit_test(a_handout_is_the_export_naming_its_lab),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
