/*
 * Integration: lab 12, backup and restore (labs/lab12-restore), as a
 * student does it and as one might try to fool its check.
 *
 * Honest: `auralog lab start 12`, the handout's steps typed (run.sh
 * without its demo marks: the write loop, the assigned table made and
 * filled, dropped, the drop's LSN read from `auralog journal`, the
 * restore to just before it into a new volume, an engine of its own on
 * it, the counts), answers read from what the steps printed; `auralog lab
 * check 12` must pass, at machine speed and at a person's pace, on one
 * cluster that has already done the lab (a retry restores into another
 * name). Fooling attempts, each of which must fail: nonsense answers with
 * no steps; an honest student's answers copied by another who did
 * nothing; a restore to the drop itself (the table is gone there too).
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

static int setup(void **state)
{
  (void)state;
  return cluster_start_as_user("lab12", "");   /* as a student gets it: backing up */
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* The assigned table, from lab_assigned ("LAB_TABLE=t LAB_ROWS=n"). */
static void assigned(char *table, size_t n, int *rows)
{
  char t[32] = "";
  if (sscanf(lab_assigned, "LAB_TABLE=%31s LAB_ROWS=%d", t, rows) != 2)
    fail_msg("lab start 12 printed no table: '%s'", lab_assigned);
  snprintf(table, n, "%s", t);
}

/* The answers, from what the steps printed ($O) as a student reads it:
 * the journal's "drop table T at lsn D" line, the restore's "to LSN R",
 * and the two counts the restored volume's engine printed (the lines
 * after its sql step: "N|1|N", then lab12_log's count). */
static const char *student_answers =
  "d=$(grep -F \": drop table $T at lsn \" $O | tail -1 | awk '{print $NF}'); "
  "r=$(sed -n 's/^restored volume [0-9]* to LSN \\([0-9]*\\) .*/\\1/p' $O | tail -1); "
  "rows=$(grep -A1 '^\\$ auralog sql --engine' $O | sed -n 2p | cut -d'|' -f1); "
  "logs=$(grep -A2 '^\\$ auralog sql --engine' $O | sed -n 3p); "
  "{ echo \"drop_lsn: $d\"; echo \"restored_lsn: $r\"; echo \"rows: $rows\"; "
  "  echo \"log_rows: $logs\"; echo 'restore_point: cpl'; echo 'staged_by: storage'; } > $F";

static void answers_from_steps(const char *table)
{
  int rc = sh(out, OUT_SIZE, "export O=%s/lab12.out F=%s/labs/lab12-answers.txt T=%s; %s", dir,
              dir, table, student_answers);
  if (rc != 0)
    fail_msg("lab 12's answers:\n%s", out);
}

/* Nonsense, with no step done: the steps and the answers fail. */
static void nonsense_without_steps_fails(void **state)
{
  (void)state;
  lab_start(12);
  lab_answers(12, "drop_lsn: 5\nrestored_lsn: 4\nrows: 10\nlog_rows: 3\n"
              "restore_point: vdl\nstaged_by: writer\n");
  assert_int_not_equal(lab_check(12), 0);
  assert_non_null(strstr(out, "[missing] table lab12_"));
  assert_non_null(strstr(out, "[missing] the volume was restored from its backup"));
  assert_non_null(failed_line(out, "drop_lsn"));
  assert_non_null(failed_line(out, "rows"));
  assert_non_null(strstr(out, "[wrong] restore_point"));
  assert_non_null(strstr(out, "[wrong] staged_by"));
  assert_non_null(strstr(out, "not yet"));
}

static void student(const char *env)
{
  char table[32], want[160];
  int rows;
  lab_start(12);
  assigned(table, sizeof table, &rows);
  lab_steps(12, "lab12-restore", env);
  answers_from_steps(table);
  if (lab_check(12) != 0) {
    printf("lab check 12 failed:\n%s\n", out);
    sh(out, OUT_SIZE, "tail -30 %s/lab12.out; cat %s/labs/lab12-answers.txt", dir, dir);
    fail_msg("lab check 12 failed (table %s, %d rows); the steps and the answers:\n%s", table,
             rows, out);
  }
  assert_non_null(strstr(out, "lab 12: passed"));
  snprintf(want, sizeof want, "[ok] it holds every row the table had (1..%d)", rows);
  assert_non_null(strstr(out, want));
  assert_non_null(strstr(out, "[ok] the live volume kept every write made since"));
  /* The run directory keeps the events it read. */
  assert_int_equal(sh(out, OUT_SIZE, "grep -c '\"kind\":\"restore\"' "
                      "%s/labs/runs/latest/journal.jsonl", dir), 0);
  assert_true(atoi(out) >= 1);
}

static void honest_student_passes(void **state)
{
  (void)state;
  student("");
}

/* The same at a person's pace, on a cluster that has done it once. */
static void honest_student_passes_paced(void **state)
{
  (void)state;
  student(paced_env());
}

/* After an honest run: another student, who did nothing, with the
 * honest answers copied in: their table was never made, the answers fail. */
static void copied_answers_fail(void **state)
{
  (void)state;
  assert_int_equal(sh(NULL, 0, "test -s %s/labs/lab12-answers.txt", dir), 0);
  setenv("AURALOG_STUDENT", "s2", 1);
  lab_start(12);
  assert_int_not_equal(lab_check(12), 0);
  setenv("AURALOG_STUDENT", "s1", 1);
  assert_non_null(strstr(out, "[missing] table lab12_"));
  assert_non_null(failed_line(out, "drop_lsn"));
  assert_non_null(failed_line(out, "restored_lsn"));
}

/* The steps by hand, but the restore to the drop's own LSN: the table is
 * gone there too, and the check says so. */
static void restore_to_the_drop_fails(void **state)
{
  (void)state;
  char table[32], d[32];
  int rows;
  lab_start(12);
  assigned(table, sizeof table, &rows);
  sql_ok("create table if not exists lab12_log(i integer primary key, at text); "
         "insert into lab12_log(at) values('x');", NULL);
  char q[256];
  snprintf(q, sizeof q, "create table %s(i integer primary key); with recursive s(i) as "
           "(select 1 union all select i + 1 from s where i < %d) insert into %s select i "
           "from s;", table, rows, table);
  sql_ok(q, NULL);
  /* An earlier run's drop of the same table is in the journal: ours is
   * the one after it. */
  char before[32];
  sh(before, sizeof before, "%s journal --dir %s --kind ddl --all | grep -cF ': drop table %s "
     "at lsn'", bin, dir, table);
  snprintf(q, sizeof q, "drop table %s;", table);
  sql_ok(q, NULL);
  sql_ok("insert into lab12_log(at) values('y');", NULL);
  /* The drop's LSN, once the journal has it; the backup, once past it. */
  for (int k = 0; k < 50; k++) {
    sh(d, sizeof d, "%s journal --dir %s --kind ddl --all | grep -F ': drop table %s at lsn' | "
       "awk 'NR > %d {printf \"%%s\", $NF}'", bin, dir, table, atoi(before));
    if (d[0])
      break;
    usleep(200000);
  }
  assert_true(d[0] != 0);
  int ok = 0;
  for (int k = 0; k < 60 && !ok; k++) {
    ok = sh(out, OUT_SIZE, "%s restore --dir %s --to-lsn %s --into lab12_late 2>&1", bin, dir,
            d) == 0;
    if (!ok)
      usleep(500000);          /* the backup is not past it yet */
  }
  assert_true(ok);
  lab_answers(12, "drop_lsn: 0\n");
  assert_int_not_equal(lab_check(12), 0);
  assert_non_null(strstr(out, "[wrong] the point restored is before the drop"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(nonsense_without_steps_fails),
    cmocka_unit_test(honest_student_passes),
    cmocka_unit_test(copied_answers_fail),
    cmocka_unit_test(honest_student_passes_paced),
    cmocka_unit_test(restore_to_the_drop_fails),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  /* AURALOG_TEST_SKIP=pattern leaves out the tests it names ('*_paced':
   * make test's CPU lanes, while the paced lane runs them). */
  if (getenv("AURALOG_TEST_SKIP"))
    cmocka_set_skip_filter(getenv("AURALOG_TEST_SKIP"));
  return cmocka_run_group_tests_name("integration: lab 12", tests, setup, teardown);
}
