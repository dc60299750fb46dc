/*
 * Integration: the instructor's grade of students' submissions,
 * `auralog lab grade N --submission PATH...` (src/lab/submit.c), as an
 * instructor runs it over what students hand in:
 *
 *  - a sabotaged handout of lab 21 (its graded unit tests turned into
 *    `return;`, the simulator's violation() made a no-op, the lab's body
 *    left a stub), which its own `make grade` scores 60/60, scores 0:
 *    only its body is taken, into the instructor's tree; its Gradescope
 *    results.json parses, scores 0 of 70, shows the hidden seeds'
 *    test "after_published" and says what failed and how to replay it;
 *  - several submissions in one run: the reference tree scores full
 *    (flagged as the reference's bodies), the same sabotaged tree with
 *    the reference body put in scores full, a file whose markers do not
 *    balance and a body that calls exit() each get one line saying why
 *    and 0, never a crash; --csv has a row for each with per-test points;
 *  - a student's hidden seeds are their own: another id, other seeds;
 *    the same id, the same seeds; and so is the seed of their randomized
 *    unit tests (AURALOG_TEST_SEED, the same number), which a failing
 *    test's words and its replay line carry;
 *  - the hidden unit tests run (tests/hidden: they hold a model of the
 *    answer, so no student has them): a lab 22 body that counts the write
 *    quorum as the constant VW, not the volume's own, passes every visible
 *    unit test and seed, and loses the hidden model test's 10 points.
 * Seeds are capped (AURALOG_GRADE_SEEDS) to keep it short: about 30 s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define SEEDS "AURALOG_GRADE_SEEDS=2 "
#define STARTS(s, lit) (strncmp((s), (lit), sizeof(lit) - 1) == 0)

static char root[PATH_MAX];    /* this tree: the instructor's */
static char self[PATH_MAX];
static char work[128];
static unsigned long long carol_base;

static int setup(void **state)
{
  (void)state;
  const char *b = getenv("AURALOG_BIN");
  if (b == NULL || realpath(b, self) == NULL)
    return -1;
  snprintf(root, sizeof root, "%s", self);
  for (int up = 0; up < 2; up++)
    *strrchr(root, '/') = 0;
  snprintf(work, sizeof work, "/tmp/auralog-it-submit-%d", (int)getpid());
  /* The sabotage: a lab 21 handout whose graded tests return at once
   * and whose simulator never reports a violation. */
  int rc = sh(out, OUT_SIZE,
              "mkdir -p %s && %s lab handout 21 %s/cheat >/dev/null 2>&1 && cd %s/cheat && "
              "perl -0pi -e 's/(static void test_\\w+\\(void \\*\\*state\\)\\n\\{\\n)/$1  return;\\n/g' "
              "tests/unit/test_segment.c && "
              "perl -0pi -e 's/(void violation\\(struct world \\*w, const char \\*fmt, \\.\\.\\.\\)\\n\\{\\n)"
              "/$1  (void)w; (void)fmt; return;\\n/' src/sim/check.c && "
              "grep -c '^  return;$' tests/unit/test_segment.c && grep -A3 '^void violation' src/sim/check.c",
              work, self, work, work);
  if (rc != 0 || strstr(out, "(void)w; (void)fmt; return;") == NULL) {
    fprintf(stderr, "setup: %s\n", out);
    return -1;
  }
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", work);
  return system(cmd) == 0 ? 0 : -1;
}

static unsigned long long hidden_base(const char *text)
{
  const char *h = strstr(text, "hidden seeds: from ");
  return h ? strtoull(h + 19, NULL, 10) : 0;
}

/* The unit tests' seed the report names ("unit test seed: AURALOG_TEST_SEED=N"). */
static unsigned long long test_seed(const char *text)
{
  const char *h = strstr(text, "unit test seed: AURALOG_TEST_SEED=");
  return h ? strtoull(h + 34, NULL, 10) : 0;
}

static cJSON *load_json(const char *path)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    fail_msg("no %s", path);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  cJSON *j = cJSON_Parse(buf);
  if (j == NULL)
    fail_msg("%s does not parse: %s", path, buf);
  return j;
}

/* Sum of the tests' score and max_score; *hidden: how many are after_published. */
static double sum_tests(cJSON *j, const char *field, int *hidden)
{
  double t = 0;
  cJSON *e;
  *hidden = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "tests")) {
    t += cJSON_GetObjectItem(e, field)->valuedouble;
    *hidden += strcmp(cJSON_GetObjectItem(e, "visibility")->valuestring, "after_published") == 0;
  }
  return t;
}

static void a_sabotaged_handout_scores_zero(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "cd %s && " SEEDS "%s lab grade 21 --submission cheat --student carol "
              "--no-build --out %s/out --gradescope %s/carol.json 2>&1", work, self, work, work);
  printf("%s", out);
  assert_int_equal(rc, 1);
  assert_non_null(strstr(out, "Score: 0/70"));
  assert_null(strstr(out, " OK "));
  assert_non_null(strstr(out, "student carol (from --student)"));
  assert_non_null(strstr(out, "replay: (in your own tree) build/auralog sim --seed "));
  assert_non_null(strstr(out, "replay this grade: auralog lab grade 21 --submission "));
  carol_base = hidden_base(out);
  assert_true(carol_base >= 1000000);
  assert_true(test_seed(out) == carol_base);
  char seeded[160];
  snprintf(seeded, sizeof seeded, "(unit tests with AURALOG_TEST_SEED=%llu)", carol_base);
  assert_non_null(strstr(out, seeded));            /* on the replay line */

  char p[256];
  snprintf(p, sizeof p, "%s/carol.json", work);
  cJSON *j = load_json(p);
  int hidden;
  assert_int_equal((int)cJSON_GetObjectItem(j, "score")->valuedouble, 0);
  assert_int_equal((int)sum_tests(j, "max_score", &hidden), 70);
  assert_int_equal((int)sum_tests(j, "score", &hidden), 0);
  assert_int_equal(hidden, 1);                    /* the hidden seeds */
  assert_string_equal(cJSON_GetObjectItem(j, "stdout_visibility")->valuestring, "hidden");
  cJSON *e;
  int units = 0, sims = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "tests")) {
    const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
    const char *o = cJSON_GetObjectItem(e, "output")->valuestring;
    assert_string_equal(cJSON_GetObjectItem(e, "status")->valuestring, "failed");
    if (strncmp(name, "unit_segment ", 13) == 0) {
      units++;
      assert_non_null(strstr(o, "FAILED"));
      /* her randomized test ran her cases, and says how to run them again */
      if (strcmp(name, "unit_segment test_scl_random_shuffles_of_long_chain") == 0) {
        snprintf(seeded, sizeof seeded, "(test seed AURALOG_TEST_SEED=%llu; replay: "
                 "AURALOG_TEST_SEED=%llu build/tests/unit_segment)", carol_base, carol_base);
        assert_non_null(strstr(o, seeded));
        snprintf(seeded, sizeof seeded, "run it: make build/tests/unit_segment && "
                 "AURALOG_TEST_SEED=%llu build/tests/unit_segment", carol_base);
        assert_non_null(strstr(o, seeded));
      }
    } else {
      sims++;
      assert_non_null(strstr(o, "FAILED at seed "));
      assert_non_null(strstr(o, "replay: (in your own tree) build/auralog sim --seed "));
    }
  }
  assert_int_equal(units, 5);
  assert_int_equal(sims, 3);
  cJSON_Delete(j);
}

static void many_submissions_each_get_their_due(void **state)
{
  (void)state;
  /* dave: the sabotaged tree, with the reference body put in */
  int rc = sh(out, OUT_SIZE,
              "cd %s && cp -a cheat fixed && echo dave > fixed/STUDENT && "
              "perl -0777 -e 'open R, \"<\", $ARGV[0] or die; $r = <R>; "
              "open H, \"<\", $ARGV[1] or die; $h = <H>; "
              "($b) = $r =~ m{(/\\* LAB 21 BEGIN.*?/\\* LAB 21 END \\*/)}s or die; "
              "$h =~ s{/\\* LAB 21 BEGIN.*?/\\* LAB 21 END \\*/}{$b}s or die; print $h' "
              "%s/src/node/segment.c cheat/src/node/segment.c > fixed/src/node/segment.c && "
              /* a file whose markers do not balance */
              "mkdir -p unbalanced/src/node && grep -v 'LAB 21 END' %s/src/node/segment.c "
              "> unbalanced/src/node/segment.c && "
              /* a body that ends the process (a bare upload of the file) */
              "mkdir -p quitter && perl -0pe 's{(/\\* LAB 21 BEGIN.*?\\*/\\n)}{$1  exit(0);\\n}s' "
              "%s/src/node/segment.c > quitter/segment.c",
              work, root, root, root);
  if (rc != 0)
    fail_msg("%s", out);
  rc = sh(out, OUT_SIZE, "cd %s && " SEEDS "%s lab grade 21 --no-build --out %s/out "
          "--submission %s fixed unbalanced quitter --csv %s/grades.csv --gradescope 2>&1",
          work, self, work, root, work);
  printf("%s", out);
  assert_int_equal(rc, 1);                         /* not everyone has full points */
  const char *sum = strstr(out, "lab 21, 4 submissions:");
  assert_non_null(sum);
  assert_non_null(strstr(sum, "70/70  FLAG: bodies identical to the reference"));
  assert_non_null(strstr(sum, "dave "));
  assert_non_null(strstr(out, "student dave (from its STUDENT file)"));
  assert_non_null(strstr(out, "cannot grade: src/node/segment.c:"));
  assert_non_null(strstr(out, ": LAB 21 BEGIN has no END\nScore: 0/70\n"));
  assert_non_null(strstr(out, "'exit' is not allowed in a lab body"));
  assert_non_null(strstr(out, "student quitter (from the submission's directory name)"));
  assert_null(strstr(out, "Segmentation"));

  /* the CSV: a header and a row each, per-test points */
  char p[256];
  snprintf(p, sizeof p, "%s/grades.csv", work);
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  char line[4096];
  int rows = 0, dave = 0, bad = 0;
  assert_non_null(fgets(line, sizeof line, f));
  assert_true(STARTS(line, "student,lab,points,total,unit_segment test_scl_in_order,"));
  assert_non_null(strstr(line, "\"hidden sim seeds +0..+39, faults node-crash,drop,dup,reorder\""));
  while (fgets(line, sizeof line, f)) {
    rows++;
    dave += STARTS(line, "dave,21,70,70,5,10,10,5,5,10,15,10,,bodies identical to the reference");
    bad += STARTS(line, "unbalanced,21,0,70,0,0,0,0,0,0,0,0,src/node/segment.c:");
    bad += STARTS(line, "quitter,21,0,70,0,0,0,0,0,0,0,0,\"src/node/segment.c:");
  }
  fclose(f);
  assert_int_equal(rows, 4);
  assert_int_equal(dave, 1);
  assert_int_equal(bad, 2);

  /* Gradescope, one results.json each: dave's full, the malformed 0 with why */
  snprintf(p, sizeof p, "%s/out/dave/results.json", work);
  cJSON *j = load_json(p);
  int hidden;
  assert_int_equal((int)cJSON_GetObjectItem(j, "score")->valuedouble, 70);
  assert_int_equal((int)sum_tests(j, "score", &hidden), 70);
  assert_int_equal(hidden, 1);
  cJSON_Delete(j);
  snprintf(p, sizeof p, "%s/out/unbalanced/results.json", work);
  j = load_json(p);
  assert_int_equal((int)cJSON_GetObjectItem(j, "score")->valuedouble, 0);
  assert_int_equal((int)sum_tests(j, "max_score", &hidden), 70);
  assert_non_null(strstr(cJSON_GetObjectItem(j, "output")->valuestring, "BEGIN has no END"));
  cJSON_Delete(j);
}

static void hidden_seeds_are_each_students_own(void **state)
{
  (void)state;
  assert_true(carol_base != 0);
  int rc = sh(out, OUT_SIZE, "cd %s && " SEEDS "%s lab grade 21 --submission cheat --student erin "
              "--no-build --out %s/out 2>&1", work, self, work);
  assert_int_equal(rc, 1);
  unsigned long long erin = hidden_base(out), erin_test = test_seed(out);
  rc = sh(out, OUT_SIZE, "cd %s && " SEEDS "%s lab grade 21 --submission cheat --student carol "
          "--no-build --out %s/out 2>&1", work, self, work);
  assert_int_equal(rc, 1);
  printf("# hidden seeds: carol from %llu, again %llu; erin from %llu\n", carol_base,
         hidden_base(out), erin);
  printf("# unit test seeds: carol %llu, again %llu; erin %llu\n", carol_base, test_seed(out),
         erin_test);
  assert_true(erin != 0 && erin != carol_base);
  assert_true(hidden_base(out) == carol_base);
  assert_true(erin_test == erin && test_seed(out) == carol_base);
  char want[96];
  snprintf(want, sizeof want, "build/auralog sim --seed %llu --faults ", carol_base);
  assert_non_null(strstr(out, want));              /* its replay command */
}

static void hidden_unit_tests_are_run_and_count(void **state)
{
  (void)state;
  /* frank: lab 22's reference with q->vw read as the constant VW */
  int rc = sh(out, OUT_SIZE,
              "cd %s && mkdir -p frank/src/vfs && "
              "sed 's/if (member_positions(r->acks, q_trans(q, r->pg)) < q->vw)/"
              "if (member_positions(r->acks, q_trans(q, r->pg)) < VW)/' "
              "%s/src/vfs/quorum.c > frank/src/vfs/quorum.c && "
              "! cmp -s %s/src/vfs/quorum.c frank/src/vfs/quorum.c",
              work, root, root);
  if (rc != 0)
    fail_msg("%s", out);
  rc = sh(out, OUT_SIZE, "cd %s && " SEEDS "%s lab grade 22 --submission frank --no-build "
          "--out %s/out --csv %s/frank.csv 2>&1", work, self, work, work);
  printf("%s", out);
  assert_int_equal(rc, 1);
  /* every test a student has passes: visible unit tests and seeds */
  const char *u = strstr(out, "unit_quorum (");
  assert_non_null(u);
  const char *h = strstr(u, "unit_hidden_quorum_model (");
  assert_non_null(h);
  char visible[8192];
  snprintf(visible, sizeof visible, "%.*s", (int)(h - u), u);
  assert_null(strstr(visible, "FAIL"));
  assert_non_null(strstr(visible, "test_ring_growth_and_wrap"));
  /* the hidden model test does not, and takes its points: the one FAIL */
  assert_non_null(strstr(h, "test_random_against_model"));
  const char *fail = strstr(out, "FAIL");
  assert_non_null(fail);
  assert_true(fail > h && STARTS(fail, "FAIL  0/10 (hidden)\n"));
  assert_null(strstr(fail + 4, "FAIL"));
  assert_non_null(strstr(out, "Score: 90/100"));
  char p[256], line[4096];
  snprintf(p, sizeof p, "%s/frank.csv", work);
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof line, f));
  assert_non_null(strstr(line, "unit_hidden_quorum_model test_random_against_model"));
  assert_non_null(fgets(line, sizeof line, f));
  assert_true(STARTS(line, "frank,22,90,100,"));
  fclose(f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_sabotaged_handout_scores_zero),
    cmocka_unit_test(many_submissions_each_get_their_due),
    cmocka_unit_test(hidden_seeds_are_each_students_own),
    cmocka_unit_test(hidden_unit_tests_are_run_and_count),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
