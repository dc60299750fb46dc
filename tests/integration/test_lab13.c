/*
 * Integration: lab 13, the binlog (labs/lab13-binlog), as a student does
 * it and as one might try to fool its check.
 *
 * Honest: `auralog lab start 13` on a cluster started without a binlog,
 * the handout's steps typed (run.sh: `bench binlog` and `bench recovery
 * --binlog`, shortened; the cluster restarted with --binlog enhanced; the
 * assigned table made, a named consumer keeping a SQLite replica while
 * the assigned transactions commit; the counts), the answers read from
 * what the benches noted and the steps printed; `auralog lab check 13`
 * must pass. Fooling attempts, each of which must fail: nonsense answers
 * with no steps; an honest student's answers copied by another who did
 * nothing.
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
  return cluster_start_as_user("lab13", "");   /* as a student gets it: no binlog yet */
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* The answers as a student finds them: the benches' figures (read here
 * from what they noted in the journal, as the student reads their
 * tables), the replica's count and the consumer's position from the
 * steps' output ($O). */
static const char *student_answers =
  "$AURALOG journal --dir $D --kind bench --all --json > $D/lab13-bench.json; "
  "python3 - $D/lab13-bench.json > $F.part <<'PY'\n"
  "import json, sys\n"
  "ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]\n"
  "fg = [e for e in ev if e.get('workload') == 'binlog-foreground' and e.get('clients') == 8]\n"
  "run = fg[-1]['run']\n"
  "tx = {e['system'].split('-')[-1]: e for e in fg if e['run'] == run}\n"
  "print('community_pct: %d' % round(100 * tx['community']['tx_s'] / tx['off']['tx_s']))\n"
  "print('enhanced_pct: %d' % round(100 * tx['enhanced']['tx_s'] / tx['off']['tx_s']))\n"
  "c = tx['community']\n"
  "st = {'prepare': c['prepare_us'], 'binlog': c['binlog_us'], 'commit': c['commit_us']}\n"
  "print('top_stage: ' + max(st, key=st.get))\n"
  "rc = [e for e in ev if e.get('workload') == 'binlog-recovery']\n"
  "def grew(mode):\n"
  "  r = [e for e in rc if e['system'].endswith(mode)]\n"
  "  r = [e for e in r if e['run'] == r[-1]['run']]\n"
  "  lo = min(r, key=lambda e: e['binlog_mib']); hi = max(r, key=lambda e: e['binlog_mib'])\n"
  "  return hi['scan_ms'] > 2 * lo['scan_ms'] + 1 or hi['recovery_ms'] > 3 * lo['recovery_ms'] + 200\n"
  "g = {(True, True): 'both', (True, False): 'community', (False, True): 'enhanced',\n"
  "     (False, False): 'neither'}[(grew('community'), grew('enhanced'))]\n"
  "print('grows: ' + g)\n"
  "PY\n"
  "rows=$(grep -A1 '^\\$ sqlite3 ' $O | sed -n 2p | cut -d'|' -f1); "
  "pos=$(awk '$1 == \"lab13\" && $2 == \"at\" { p = $3 } END { print p }' $O); "
  "{ cat $F.part; echo \"replica_rows: $rows\"; echo \"consumer_lsn: $pos\"; "
  "  echo 'commit_point: binlog'; echo 'events_ride_with: redo'; } > $F; rm -f $F.part";

static void answers_from_steps(void)
{
  int rc = sh(out, OUT_SIZE, "export AURALOG=%s D=%s O=%s/lab13.out F=%s/labs/lab13-answers.txt; "
              "%s", bin, dir, dir, dir, student_answers);
  if (rc != 0)
    fail_msg("lab 13's answers:\n%s", out);
}

/* Nonsense, with no step done: the steps and the answers fail. */
static void nonsense_without_steps_fails(void **state)
{
  (void)state;
  lab_start(13);
  lab_answers(13, "community_pct: 50\nenhanced_pct: 87\ntop_stage: commit\ngrows: enhanced\n"
              "replica_rows: 10\nconsumer_lsn: 3\ncommit_point: prepare\n"
              "events_ride_with: file\n");
  assert_int_not_equal(lab_check(13), 0);
  assert_non_null(strstr(out, "[missing] `auralog bench binlog` measured"));
  assert_non_null(strstr(out, "[missing] consumer lab13 is registered"));
  assert_non_null(failed_line(out, "community_pct"));
  assert_non_null(strstr(out, "[wrong] commit_point"));
  assert_non_null(strstr(out, "[wrong] events_ride_with"));
}

static void honest_student_passes(void **state)
{
  (void)state;
  char env[160];
  lab_start(13);
  int a = free_block((int)getpid() * 3 + 1), b = free_block((int)getpid() * 5 + 7);
  snprintf(env, sizeof env, "LAB_BENCH_S=2 LAB_SIZES=8,64 LAB_BENCH_PORT=%d LAB_REC_PORT=%d",
           a, b);
  lab_steps(13, "lab13-binlog", env);
  answers_from_steps();
  if (lab_check(13) != 0) {
    printf("lab check 13 failed:\n%s\n", out);
    sh(out, OUT_SIZE, "tail -40 %s/lab13.out; cat %s/labs/lab13-answers.txt", dir, dir);
    fail_msg("lab check 13 failed; the steps and the answers:\n%s", out);
  }
  assert_non_null(strstr(out, "lab 13: passed"));
  assert_non_null(strstr(out, "[ok] it holds what the volume does"));
}

/* After an honest run: another student, who did nothing, with the
 * honest answers copied in: their window holds no bench, their table no
 * transaction. */
static void copied_answers_fail(void **state)
{
  (void)state;
  assert_int_equal(sh(NULL, 0, "test -s %s/labs/lab13-answers.txt", dir), 0);
  setenv("AURALOG_STUDENT", "s2", 1);
  lab_start(13);
  assert_int_not_equal(lab_check(13), 0);
  setenv("AURALOG_STUDENT", "s1", 1);
  assert_non_null(strstr(out, "[missing] `auralog bench binlog` measured"));
  assert_non_null(failed_line(out, "community_pct"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(nonsense_without_steps_fails),
    cmocka_unit_test(honest_student_passes),
    cmocka_unit_test(copied_answers_fail),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: lab 13", tests, setup, teardown);
}
