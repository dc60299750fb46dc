/*
 * Integration: lab 8, inside a segment (a hole and its gossip fill,
 * coalescing and GC under the PGMRPL), as a student does it and as one
 * might try to fool its check. Honest: `auralog lab start 8`, the
 * handout's steps (run.sh, run by hand: not the demo), answers worked out
 * from what the steps printed, `auralog lab check 8` passes and leaves no
 * fault behind. Fooling attempts, each of which must fail: nonsense
 * answers with no step done; answers copied from the handout (its letters
 * S, M, P); the instructor's demo (`lab run 8`) with its reference answers
 * copied in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int setup(void **state)
{
  (void)state;
  return cluster_start_as_user("lab08", "");   /* as a student gets it: a replica, failover */
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* Nonsense answers on a cluster where nothing was done since the start. */
static void nonsense_without_steps_fails(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 8 --dir %s", bin, dir), 0);
  lab_answers(8, "scl_hole: 0\nmax_lsn_hole: 100\nwho_fills: engine\npgmrpl_held: 7\n"
          "pgmrpl_after: 9\ngc_limit: the vdl, surely\n");
  assert_int_not_equal(lab_check(8), 0);
  assert_non_null(strstr(out, "[missing] a node lost Appends"));
  assert_non_null(strstr(out, "[missing] its segment held records above a hole"));
  assert_non_null(strstr(out, "[missing] a reader held the PGMRPL"));
  assert_non_null(failed_line(out, "who_fills"));
  assert_non_null(failed_line(out, "gc_limit"));
  assert_non_null(strstr(out, "[ok] the cluster is restored"));
  /* The handout's letters and its one-word answers, nothing done. */
  lab_answers(8, "scl_hole: S\nmax_lsn_hole: M\nwho_fills: peers\npgmrpl_held: P\n"
          "pgmrpl_after: P\ngc_limit: pgmrpl\n");
  assert_int_not_equal(lab_check(8), 0);
  assert_non_null(failed_line(out, "scl_hole"));
  assert_non_null(failed_line(out, "pgmrpl_held"));
  assert_non_null(strstr(out, "lab 8: not yet"));
  /* The lab's faults take a node and a count, or on|off; nothing else. */
  assert_int_not_equal(sh(out, OUT_SIZE, "%s fault drop C1 0 --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "1..1000"));
  assert_int_not_equal(sh(out, OUT_SIZE, "%s fault drop X9 1 --dir %s 2>&1", bin, dir), 0);
  assert_int_not_equal(sh(out, OUT_SIZE, "%s fault gossip C1 maybe --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "on or off"));
  assert_int_equal(sh(out, OUT_SIZE, "%s fault --help", bin), 0);
  assert_non_null(strstr(out, "drop ID N"));
  assert_non_null(strstr(out, "gossip ID on|off"));
}

/* The student: start, the steps by hand, answers from what they printed
 * (C1:S^M in pg 0's line, the two `pgmrpl P` lines). */
static void student(const char *env)
{
  lab_start(8);
  lab_steps(8, "lab08-segment", env);
  int rc = sh(out, OUT_SIZE, "O=%s/lab08.out F=%s/labs/lab08-answers.txt; "
          "h=$(grep -o 'C1:[0-9]*\\^[0-9]*' $O | head -1); "
          "p=$(sed -n 's/^pgmrpl \\([0-9]*\\) .*/\\1/p' $O); "
          "printf 'scl_hole: %%s\\nmax_lsn_hole: %%s\\nwho_fills: peers\\n' "
          "\"$(echo $h | sed 's/C1:\\([0-9]*\\)^.*/\\1/')\" \"${h#*^}\" > $F && "
          "printf 'pgmrpl_held: %%s\\npgmrpl_after: %%s\\ngc_limit: pgmrpl\\n' "
          "$(echo $p | cut -d' ' -f1) $(echo $p | cut -d' ' -f2) >> $F && cat $F", dir, dir);
  if (rc != 0)
    fail_msg("lab 8's answers:\n%s", out);
  if (lab_check(8) != 0) {
    printf("lab check 8 failed:\n%s\n", out);
    sh(out, OUT_SIZE, "grep -v '\"kind\":\"node\"\\|\"kind\":\"engine\"' %s/data/coord/journal.jsonl"
       " | sed 's/,.mac.*//' | tail -25; cat %s/lab08.out; cat %s/labs/lab08-answers.txt",
       dir, dir, dir);
    fail_msg("lab check 8 failed; the journal's end, the steps, the answers:\n%s", out);
  }
  assert_non_null(strstr(out, "lab 8: passed"));
  assert_non_null(strstr(out, "run directory: "));
  /* Nothing is left on: every node up, gossiping, no fault. */
  assert_int_equal(sh(out, OUT_SIZE, "%s status --json --dir %s", bin, dir), 0);
  assert_null(strstr(out, "\"no_gossip\": true"));
  assert_null(strstr(out, "\"partitioned\": true"));
}

static void lab8_as_a_student(void **state)
{
  (void)state;
  student("");
}

/* The same at a person's pace: a pause before each step. The reader of
 * step 8 is open four seconds: the writes and the look at status that
 * must fall within them are one command line, not steps typed apart. */
static void lab8_paced(void **state)
{
  (void)state;
  student(paced_env());
}

/* The instructor's demo, its reference answers copied in: its span is
 * not the student's lab. */
static void demo_then_check_fails(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 8 --dir %s", bin, dir), 0);
  int rc = sh(out, OUT_SIZE, "%s lab run 8 --dir %s --answers %s/ref08.txt 2>&1", bin, dir, dir);
  if (rc != 0)
    fail_msg("lab run 8:\n%s", out);
  assert_int_equal(sh(out, OUT_SIZE, "grep -c '^pgmrpl_held: [0-9]' %s/ref08.txt", dir), 0);
  assert_int_equal(sh(NULL, 0, "cp %s/ref08.txt %s/labs/lab08-answers.txt", dir, dir), 0);
  assert_int_not_equal(lab_check(8), 0);
  assert_non_null(strstr(out, "[missing] a node lost Appends"));
  assert_non_null(strstr(out, "[missing] a reader held the PGMRPL"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(nonsense_without_steps_fails),
    cmocka_unit_test(lab8_as_a_student),
    cmocka_unit_test(demo_then_check_fails),
    cmocka_unit_test(lab8_paced),
  };
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  /* AURALOG_TEST_SKIP=pattern leaves out the tests it names ('*_paced':
   * make test's CPU lanes, while the paced lane runs them). */
  if (getenv("AURALOG_TEST_SKIP"))
    cmocka_set_skip_filter(getenv("AURALOG_TEST_SKIP"));
  return cmocka_run_group_tests_name("integration: lab 8", tests, setup, teardown);
}
