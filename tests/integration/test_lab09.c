/*
 * Integration: lab 9 (read replicas, lag, a long reader holding the
 * PGMRPL and node GC, failover), as a student does it and as one might
 * try to fool it, on a cluster as `cluster up` gives it (a writer, one
 * replica, failover on).
 *
 * Honest: `auralog lab start 9`, the handout's steps by hand (run.sh:
 * writes read back on the replica, a read transaction held open on the
 * replica while the writer writes, then ended until GC passes its read
 * point, the writer crashed and a replica promoted, `cluster up`), the
 * answers worked out from what the steps printed, and `lab check 9`
 * passes; the cluster is whole after it (a writer, a replica, every node).
 * Fooling, each of which must fail: nonsense answers with no step done;
 * answers copied from the handout's examples; the instructor's demo
 * (`lab run 9`) with its reference answers copied in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static int setup(void **state)
{
  (void)state;
  return cluster_start_as_user("lab09", "");   /* as a student gets it: failover on */
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

static void must_say(const char *what)
{
  if (strstr(out, what) == NULL)
    fail_msg("lab check 9 does not say \"%s\":\n%s", what, out);
}

/* Nothing done after the start: every step and every answer that needs
 * one is missing, whatever the answers say. */
static void nonsense_without_steps_fails(void **state)
{
  (void)state;
  sql("create table if not exists lab09(id integer primary key, step text, at integer);");
  sql("insert into lab09(step) values('x');");
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 9 --dir %s", bin, dir), 0);
  lab_answers(9, "replica_applies: all of them\npgmrpl_held: 0\nholds_gc: the vacuum\n"
          "epoch_after: 2\nfailover_ms: 2500\nwho_promotes: replica\n");
  assert_int_not_equal(lab_check(9), 0);
  must_say("[missing] a read transaction on a replica held the PGMRPL");
  must_say("[missing] the writer was crashed");
  must_say("[missing] the coordinator found it lost");
  if (failed_line(out, "replica_applies") == NULL)
    fail_msg("lab check 9 does not fail on replica_applies:\n%s", out);
  if (failed_line(out, "pgmrpl_held") == NULL)
    fail_msg("lab check 9 does not fail on pgmrpl_held:\n%s", out);
  if (failed_line(out, "holds_gc") == NULL)
    fail_msg("lab check 9 does not fail on holds_gc:\n%s", out);
  if (failed_line(out, "epoch_after") == NULL)
    fail_msg("lab check 9 does not fail on epoch_after:\n%s", out);
  if (failed_line(out, "failover_ms") == NULL)
    fail_msg("lab check 9 does not fail on failover_ms:\n%s", out);
  if (failed_line(out, "who_promotes") == NULL)
    fail_msg("lab check 9 does not fail on who_promotes:\n%s", out);
  must_say("labs/lab09-answers.txt");
  must_say("not yet");
}

/* The handout's examples copied in (its letters, and the first of each
 * list of words), nothing done. */
static void handout_answers_fail(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 9 --dir %s", bin, dir), 0);
  lab_answers(9, "replica_applies: vdl\npgmrpl_held: P\nholds_gc: pgmrpl\nepoch_after: E+1\n"
          "failover_ms: Y\nwho_promotes: coordinator\n");
  assert_int_not_equal(lab_check(9), 0);
  must_say("[missing] the writer committed and a replica applied");
  must_say("[missing] node GC passed the old read point");
  if (failed_line(out, "pgmrpl_held") == NULL)
    fail_msg("lab check 9 does not fail on pgmrpl_held:\n%s", out);
  if (failed_line(out, "epoch_after") == NULL)
    fail_msg("lab check 9 does not fail on epoch_after:\n%s", out);
  if (failed_line(out, "failover_ms") == NULL)
    fail_msg("lab check 9 does not fail on failover_ms:\n%s", out);
}

/* Whole: a writer and a replica status lists, every node up. */
static void cluster_whole(void)
{
  int ok = 0;
  for (int i = 0; i < 50 && !ok; i++) {
    ok = sh(out, OUT_SIZE, "%s status --dir %s > %s/st.txt && grep -q '^engine .*(up)' %s/st.txt"
            " && grep -q '^replica ' %s/st.txt && grep -q '^nodes  6 of 6 up' %s/st.txt",
            bin, dir, dir, dir, dir, dir) == 0;
    if (!ok)
      usleep(100000);
  }
  if (!ok) {
    sh(out, OUT_SIZE, "cat %s/st.txt", dir);
    fail_msg("the cluster is not whole:\n%s", out);
  }
}

/* A student runs the instructor's demo: it fails over (and leaves the
 * cluster whole), its reference answers go where it is told; copied in,
 * they do not pass, for the steps happened in the demo, not the lab. */
static void demo_then_check_fails(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 9 --dir %s", bin, dir), 0);
  int rc = sh(out, OUT_SIZE, "%s lab run 9 --dir %s --answers %s/ref09.txt 2>&1", bin, dir, dir);
  if (rc != 0)
    fail_msg("lab run 9:\n%s", out);
  assert_int_equal(sh(out, OUT_SIZE, "grep -c '^pgmrpl_held: [0-9][0-9]*$\\|^epoch_after: "
                      "[0-9]\\|^failover_ms: [0-9]' %s/ref09.txt", dir), 0);
  assert_string_equal(out, "3\n");     /* its numbers, measured in its own span */
  cluster_whole();
  assert_int_equal(sh(NULL, 0, "cp %s/ref09.txt %s/labs/lab09-answers.txt", dir, dir), 0);
  assert_int_not_equal(lab_check(9), 0);
  must_say("[missing] a read transaction on a replica held the PGMRPL");
  must_say("[missing] the writer was crashed");
  if (failed_line(out, "pgmrpl_held") == NULL)
    fail_msg("lab check 9 does not fail on pgmrpl_held:\n%s", out);
}

/* The student: lab start, the steps by hand, answers from their output:
 * the PGMRPL status named while the reader was open, and the promotion's
 * epoch and time from status's last failover line. */
static void student(const char *env)
{
  lab_start(9);
  lab_steps(9, "lab09-replicas", env);
  int rc = sh(out, OUT_SIZE, "O=%s/lab09.out; F=%s/labs/lab09-answers.txt; {"
          " echo replica_applies: vdl; echo holds_gc: pgmrpl; echo who_promotes: coordinator;"
          " sed -n 's/^oldest read point \\([0-9]*\\) .*/pgmrpl_held: \\1/p' $O | head -1;"
          " sed -n 's/.*) -> [^ ]* (epoch \\([0-9]*\\)); chosen.*/epoch_after: \\1/p' $O;"
          " awk '/last failover/ { for (i = 1; i < NF; i++) if ($i == \"taken\")"
          " printf \"failover_ms: %%d\\n\", $(i + 1) * 1000 }' $O; } > $F && cat $F",
          dir, dir);
  if (rc != 0 || strstr(out, "pgmrpl_held: ") == NULL || strstr(out, "epoch_after: ") == NULL ||
      strstr(out, "failover_ms: ") == NULL)
    fail_msg("lab 9's answers from the steps' output:\n%s", out);
  if (lab_check(9) != 0) {
    printf("lab check 9 failed:\n%s\n", out);
    sh(out, OUT_SIZE, "grep -v '\"kind\":\"node\"' %s/data/coord/journal.jsonl | "
       "sed 's/,.mac.*//' | tail -25; cat %s/labs/lab09-answers.txt", dir, dir);
    fail_msg("the journal's end, and the answers:\n%s", out);
  }
  must_say("lab 9: passed");
  must_say("[ok] node GC passed the old read point");
  must_say("[ok] the old writer");
  /* Its run directory: the report, and the journal from the start mark. */
  assert_int_equal(sh(NULL, 0, "cd %s/labs/runs/latest && grep -q 'lab 9: passed' report.txt && "
                      "grep -q '\"kind\":\"hold\"' journal.jsonl && "
                      "grep -q '\"kind\":\"failover\"' journal.jsonl", dir), 0);
  cluster_whole();
}

static void student_passes(void **state)
{
  (void)state;
  student("");
}

/* The same at a person's pace: a pause before each step. */
static void student_passes_paced(void **state)
{
  (void)state;
  student(paced_env());
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(nonsense_without_steps_fails),
    cmocka_unit_test(handout_answers_fail),
    cmocka_unit_test(demo_then_check_fails),
    cmocka_unit_test(student_passes),
    cmocka_unit_test(student_passes_paced),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  /* AURALOG_TEST_SKIP=pattern leaves out the tests it names ('*_paced':
   * make test's CPU lanes, while the paced lane runs them). */
  if (getenv("AURALOG_TEST_SKIP"))
    cmocka_set_skip_filter(getenv("AURALOG_TEST_SKIP"));
  return cmocka_run_group_tests_name("integration: lab 9", tests, setup, teardown);
}
