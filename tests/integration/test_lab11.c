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
 * already done the lab once (the second run needs nodes of its own: a
 * student whose assignment names nodes still hosting segments, and a
 * spare added where none is left). Fooling attempts, each of which must
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

/* The last start's student and assignment. */
static char who[32], lose[8], drain[8];
static int mttf_h;

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

/* Segments node id hosts, and is it up and in service, by status. */
static int usable(const char *id)
{
  cJSON *st = status("main"), *n, *pg, *s;
  int up = 0, segs = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(st, "nodes"))
    if (!strcmp(cJSON_GetObjectItem(n, "id")->valuestring, id))
      up = !strcmp(cJSON_GetObjectItem(n, "state")->valuestring, "up");
  cJSON_ArrayForEach(pg, cJSON_GetObjectItem(st, "pgs"))
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments"))
      segs += !strcmp(cJSON_GetObjectItem(s, "node")->valuestring, id);
  cJSON_Delete(st);
  return up && segs > 0;
}

/* `lab start 11` as student id: 0 with the assignment in lose, drain,
 * mttf_h, the student in who (and $AURALOG_STUDENT: the check's "you"). */
static int start_as(const char *id)
{
  setenv("AURALOG_STUDENT", id, 1);
  if (sh(out, OUT_SIZE, "%s lab start 11 --dir %s --student %s 2>&1", bin, dir, id) != 0)
    fail_msg("lab start 11 --student %s:\n%s", id, out);
  const char *a = strstr(out, "your assignment: ");
  if (a == NULL || sscanf(a, "your assignment: take out node %7[A-C0-9] for good; drain node "
                          "%7[A-C0-9]; each node's MTTF is %d hours", lose, drain, &mttf_h) != 3)
    fail_msg("lab start 11 printed no assignment:\n%s", out);
  snprintf(who, sizeof who, "%s", id);
  return 0;
}

/* A student whose assignment names nodes that still host segments (a run
 * before took some out), and not the nodes named: their start is the last. */
static void start_usable(const char *not_lose, const char *not_drain)
{
  for (int i = 1; i <= 60; i++) {
    char id[16];
    snprintf(id, sizeof id, "s%d", i);
    start_as(id);
    if (strcmp(lose, not_lose) && strcmp(drain, not_drain) && strcmp(lose, not_drain) &&
        strcmp(drain, not_lose) && usable(lose) && usable(drain))
      return;
  }
  fail_msg("no student among s1..s60 has an assignment this cluster can still do");
}

/* The handout's steps, typed, for nodes n (lose) and d (drain); env: more. */
static void steps(const char *n, const char *d, const char *env)
{
  char e[256];
  snprintf(e, sizeof e, "LAB_NODE=%s LAB_DRAIN=%s %s", n, d, env);
  lab_steps(11, "lab11-repair", e);
}

/* The answers, from what the steps printed ($O) as a student reads it:
 * the last "time to repair" figure; the node in the lost node's column of
 * pg 0's line after the repair; the drain's "K of M moved"; and §2.2's
 * arithmetic with the assignment's MTTF ($M hours). */
static const char *student_answers =
  "mttr=$(grep 'time to repair' $O | tail -1 | awk '{print $(NF-1)}'); "
  "spare=$(grep '^  pg 0 *pages' $O | awk -v n=$N '"
  "  NR == 1 { for (i = 1; i <= NF; i++) { split($i, a, \":\"); if (a[1] == n) c = i } } "
  "  END { split($c, a, \":\"); print a[1] }'); "
  "moved=$(grep -o '[0-9]* of [0-9]* moved' $O | tail -1 | awk '{print $3}'); "
  "{ echo \"mttr_ms: $mttr\"; echo \"spare: $spare\"; echo \"drain_moved: $moved\"; "
  "  awk -v t=$mttr -v m=$M 'BEGIN { printf \"second_failure_one_in: %.0f\\n\", "
  "    1 / (1 - exp(-5 * t / 1000 / (m * 3600))); "
  "    printf \"paper_one_in: %.0f\\n\", 1 / (1 - exp(-5 * 10 / (m * 3600))) }'; "
  "  echo 'shortens: mttr'; } > $F";

static void answers_from_steps(void)
{
  int rc = sh(out, OUT_SIZE, "export O=%s/lab11.out F=%s/labs/lab11-answers.txt N=%s M=%d; %s",
              dir, dir, lose, mttf_h, student_answers);
  if (rc != 0)
    fail_msg("lab 11's answers:\n%s", out);
}

/* Nonsense, with no step done: the steps and the answers fail. */
static void nonsense_without_steps_fails(void **state)
{
  (void)state;
  start_as("s1");
  lab_answers(11, "mttr_ms: 10000\nspare: X9\ndrain_moved: lots\nsecond_failure_one_in: 0\n"
              "paper_one_in: 1000000\nshortens: quorum\n");
  assert_int_not_equal(lab_check(11), 0);
  char want[96];
  snprintf(want, sizeof want, "[missing] %s went down", lose);
  assert_non_null(strstr(out, want));
  assert_non_null(strstr(out, "[missing] the coordinator recorded"));
  snprintf(want, sizeof want, "[missing] %s was drained", drain);
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
  start_usable("", "");
  steps(lose, drain, env);
  answers_from_steps();
  if (lab_check(11) != 0) {
    printf("lab check 11 failed:\n%s\n", out);
    sh(out, OUT_SIZE, "grep -E 'time to repair|^  pg 0 |moved' %s/lab11.out; cat "
       "%s/labs/lab11-answers.txt", dir, dir);
    fail_msg("lab check 11 failed (%s: lose %s, drain %s); the steps and the answers:\n%s", who,
             lose, drain, out);
  }
  assert_non_null(strstr(out, "lab 11: passed"));
  char want[96];
  snprintf(want, sizeof want, "[ok] the coordinator recorded %s repaired, ", lose);
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
  char honest[8];
  snprintf(honest, sizeof honest, "%s", lose);
  assert_int_equal(sh(NULL, 0, "test -s %s/labs/lab11-answers.txt", dir), 0);
  start_usable(honest, "");
  assert_int_not_equal(lab_check(11), 0);
  assert_non_null(strstr(out, "[missing] the coordinator recorded"));
  assert_non_null(failed_line(out, "mttr_ms"));
  assert_non_null(failed_line(out, "spare"));
  setenv("AURALOG_STUDENT", "s1", 1);
}

/* The steps on other nodes than the assignment names: told so. */
static void steps_on_other_nodes_fail(void **state)
{
  (void)state;
  start_usable("", "");
  char mine[8], mydrain[8], me[32];
  snprintf(mine, sizeof mine, "%s", lose);
  snprintf(mydrain, sizeof mydrain, "%s", drain);
  snprintf(me, sizeof me, "%s", who);
  start_usable(mine, mydrain);            /* a friend's nodes, other than mine */
  char other[8], otherdrain[8];
  snprintf(other, sizeof other, "%s", lose);
  snprintf(otherdrain, sizeof otherdrain, "%s", drain);
  start_as(me);                           /* my start: the last mark */
  steps(other, otherdrain, "");
  assert_int_not_equal(lab_check(11), 0);
  char want[160];
  snprintf(want, sizeof want, "[wrong] the node taken out is the one your `lab start` named "
           "(%s; the history shows %s down instead)", mine, other);
  assert_non_null(strstr(out, want));
  snprintf(want, sizeof want, "[wrong] the node drained is the one your `lab start` named "
           "(%s; the history shows %s drained instead)", mydrain, otherdrain);
  assert_non_null(strstr(out, want));
  setenv("AURALOG_STUDENT", "s1", 1);
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
