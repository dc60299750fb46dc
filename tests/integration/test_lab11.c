/*
 * Integration: lab 11, repair and drain (labs/lab11-repair), as a student
 * does it and as one might try to fool its check.
 *
 * Honest: `auralog lab start 11`, the handout's steps typed (run.sh
 * without its demo marks: the write loop, the assigned node stopped and
 * repaired onto a spare, the assigned drain node drained and retired, the
 * node brought back), answers worked out from what the steps printed and
 * the assignment's MTTF; `auralog lab check 11` must pass, at machine
 * speed and at a person's pace, on one cluster of nine nodes that has
 * already done the lab once (the assignment names positions of pg 0, so
 * the second run loses and drains the nodes there now; the steps add a
 * spare where none is left, as the handout says). Fooling attempts, each of which must
 * fail: nonsense answers with no steps; an honest student's answers
 * copied by another who did nothing; the steps done on other nodes than
 * the assignment names.
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
#include "param.h"

/* The last start's assignment: the positions of pg 0 whose nodes to lose
 * and to drain, the nodes there then, each node's MTTF. */
static int pos, dpos, mttf_h;
static char lose[8], drain[8];

static int setup(void **state)
{
  (void)state;
  return cluster_start_as_user("lab11", " --nodes 9");   /* as a student gets it, spares and all */
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* `lab start 11` (as $AURALOG_STUDENT): the assignment it printed. */
static void start(void)
{
  char az, daz;
  if (sh(out, OUT_SIZE, "%s lab start 11 --dir %s 2>&1", bin, dir) != 0)
    fail_msg("lab start 11:\n%s", out);
  const char *a = strstr(out, "your assignment: "), *at = strstr(out, "\nposition ");
  if (a == NULL || at == NULL ||
      sscanf(a, "your assignment: take out for good the node at position %d of pg 0 (AZ %c); "
             "drain the node at position %d (AZ %c); each node's MTTF is %d hours", &pos, &az,
             &dpos, &daz, &mttf_h) != 5 ||
      sscanf(at, "\nposition %*d of pg 0 is on node %7[A-Z0-9] now (NODE in the handout); "
             "position %*d on node %7[A-Z0-9]", lose, drain) != 2)
    fail_msg("lab start 11 printed no assignment:\n%s", out);
  assert_int_equal(az, 'A' + pos / 2);
  assert_int_equal(daz, 'A' + dpos / 2);
  assert_int_not_equal(az, daz);
}

/* The handout's steps, typed, for positions p (lose) and d (drain). */
static void steps(int p, int d, const char *env)
{
  char e[256];
  snprintf(e, sizeof e, "LAB_POS=%d LAB_DRAIN_POS=%d %s", p, d, env);
  lab_steps(11, "lab11-repair", e);
}

/* The answers, from what the steps printed ($O) as a student reads it:
 * the last "time to repair" figure; the node at the position lost ($P)
 * in pg 0's last line (its entries are the positions in order); the
 * drain's "K of M moved"; and §2.2's arithmetic with the assignment's
 * MTTF ($M hours). */
static const char *student_answers =
  "mttr=$(grep 'time to repair' $O | tail -1 | awk '{print $(NF-1)}'); "
  "spare=$(grep '^  pg 0 *pages' $O | tail -1 | awk -v p=$P '{split($(5 + p), a, \":\"); "
  "  print a[1]}'); "
  "moved=$(grep -o '[0-9]* of [0-9]* moved' $O | tail -1 | awk '{print $3}'); "
  "{ echo \"mttr_ms: $mttr\"; echo \"spare: $spare\"; echo \"drain_moved: $moved\"; "
  "  awk -v t=$mttr -v m=$M 'BEGIN { printf \"second_failure_one_in: %.0f\\n\", "
  "    1 / (1 - exp(-5 * t / 1000 / (m * 3600))); "
  "    printf \"paper_one_in: %.0f\\n\", 1 / (1 - exp(-5 * 10 / (m * 3600))) }'; "
  "  echo 'shortens: mttr'; } > $F";

static void answers_from_steps(void)
{
  int rc = sh(out, OUT_SIZE, "export O=%s/lab11.out F=%s/labs/lab11-answers.txt P=%d M=%d; %s",
              dir, dir, pos, mttf_h, student_answers);
  if (rc != 0)
    fail_msg("lab 11's answers:\n%s", out);
}

/* Nonsense, with no step done: the steps and the answers fail. */
static void nonsense_without_steps_fails(void **state)
{
  (void)state;
  start();
  lab_answers(11, "mttr_ms: 10000\nspare: X9\ndrain_moved: lots\nsecond_failure_one_in: 0\n"
              "paper_one_in: 1000000\nshortens: quorum\n");
  assert_int_not_equal(lab_check(11), 0);
  char want[96];
  snprintf(want, sizeof want, "[missing] the node at position %d of pg 0 went down", pos);
  assert_non_null(strstr(out, want));
  assert_non_null(strstr(out, "[missing] the coordinator recorded"));
  snprintf(want, sizeof want, "[missing] the node at position %d of pg 0 was drained", dpos);
  assert_non_null(strstr(out, want));
  assert_non_null(strstr(out, "[missing] the write loop's rows are in lab11"));
  assert_non_null(failed_line(out, "mttr_ms"));
  assert_non_null(failed_line(out, "second_failure_one_in"));
  assert_non_null(strstr(out, "[wrong] paper_one_in"));
  assert_non_null(strstr(out, "[wrong] shortens"));
  assert_non_null(strstr(out, "not yet"));
}

static void student(const char *env)
{
  start();
  steps(pos, dpos, env);
  answers_from_steps();
  if (lab_check(11) != 0) {
    printf("lab check 11 failed:\n%s\n", out);
    sh(out, OUT_SIZE, "grep -E 'time to repair|^  pg 0 |moved' %s/lab11.out; cat "
       "%s/labs/lab11-answers.txt", dir, dir);
    fail_msg("lab check 11 failed (positions %d, %d: %s, %s); the steps and the answers:\n%s",
             pos, dpos, lose, drain, out);
  }
  assert_non_null(strstr(out, "lab 11: passed"));
  char want[96];
  snprintf(want, sizeof want, "[ok] the coordinator recorded %s repaired, ", lose);
  assert_non_null(strstr(out, want));
  snprintf(want, sizeof want, "[ok] the drain finished: %s is retired", drain);
  assert_non_null(strstr(out, want));
  assert_non_null(strstr(out, "[ok] no insert failed"));
  /* The run directory keeps the membership lines it read. */
  assert_int_equal(sh(out, OUT_SIZE, "grep -c '\"kind\":\"repaired\"' "
                      "%s/labs/runs/latest/journal.jsonl", dir), 0);
  assert_true(atoi(out) >= 1);
}

static void honest_student_passes(void **state)
{
  (void)state;
  student("");
}

/* The same at a person's pace: a pause before each step. */
static void honest_student_passes_paced(void **state)
{
  (void)state;
  student(paced_env());
}

/* After an honest run: another student, who did nothing, with the
 * honest answers copied in: the steps are missing, the answers fail. */
static void copied_answers_fail(void **state)
{
  (void)state;
  assert_int_equal(sh(NULL, 0, "test -s %s/labs/lab11-answers.txt", dir), 0);
  setenv("AURALOG_STUDENT", "s2", 1);
  start();
  assert_int_not_equal(lab_check(11), 0);
  setenv("AURALOG_STUDENT", "s1", 1);
  assert_non_null(strstr(out, "[missing] the coordinator recorded"));
  assert_non_null(failed_line(out, "mttr_ms"));
  assert_non_null(failed_line(out, "spare"));
}

/* The steps on other positions' nodes than the assignment names: told so. */
static void steps_on_other_nodes_fail(void **state)
{
  (void)state;
  start();
  int p = (pos + 2) % NCOPIES, d = (dpos + 2) % NCOPIES;   /* other AZs, still apart */
  steps(p, d, "");
  assert_int_not_equal(lab_check(11), 0);
  char want[160];
  snprintf(want, sizeof want, "[wrong] the node taken out is the node at position %d of pg 0, "
           "as your `lab start` said", pos);
  assert_non_null(strstr(out, want));
  snprintf(want, sizeof want, "[wrong] the node drained is the node at position %d of pg 0, "
           "as your `lab start` said", dpos);
  assert_non_null(strstr(out, want));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(nonsense_without_steps_fails),
    cmocka_unit_test(honest_student_passes),
    cmocka_unit_test(copied_answers_fail),
    cmocka_unit_test(honest_student_passes_paced),
    cmocka_unit_test(steps_on_other_nodes_fail),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  /* AURALOG_TEST_SKIP=pattern leaves out the tests it names ('*_paced':
   * make test's CPU lanes, while the paced lane runs them). */
  if (getenv("AURALOG_TEST_SKIP"))
    cmocka_set_skip_filter(getenv("AURALOG_TEST_SKIP"));
  return cmocka_run_group_tests_name("integration: lab 11", tests, setup, teardown);
}
