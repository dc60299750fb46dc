/*
 * Integration: the course labs, as an instructor runs them: for every lab,
 * `auralog lab run N` (the lab's steps on a real cluster) and then
 * `auralog lab check N`, which must pass. A check of a lab not done yet
 * must fail and say what is missing. Lab 6 puts each AZ in a network
 * namespace of its own and needs root.
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
  return cluster_start_as_user("labs", "");   /* as a student gets it: failover on */
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

static void a_lab_not_done_does_not_pass(void **state)
{
  (void)state;
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab check 1 --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "[missing]"));
  assert_non_null(strstr(out, "not yet"));
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab run 9 --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "lab number"));
  assert_int_equal(sh(out, OUT_SIZE, "%s lab list", bin), 0);
  assert_non_null(strstr(out, "lab05-fencing"));
}

static void run_and_check(int n)
{
  int rc = sh(out, OUT_SIZE, "%s lab run %d --dir %s 2>&1", bin, n, dir);
  if (rc != 0)
    fail_msg("lab run %d failed:\n%s", n, out);
  rc = sh(out, OUT_SIZE, "%s lab check %d --dir %s 2>&1", bin, n, dir);
  if (rc != 0)
    fail_msg("lab check %d failed:\n%s", n, out);
  assert_non_null(strstr(out, "passed"));
}

static void lab1_write_path(void **state) { (void)state; run_and_check(1); }
static void lab2_quorums(void **state) { (void)state; run_and_check(2); }
static void lab3_crash_recovery(void **state) { (void)state; run_and_check(3); }
static void lab4_gossip(void **state) { (void)state; run_and_check(4); }
static void lab5_fencing(void **state)
{
  (void)state;
  run_and_check(5);
  /* The lab's second engine is gone once the lab is done. */
  char pat[128];
  /* [e]: the pattern must not match the shell that runs pgrep */
  snprintf(pat, sizeof pat, "[e]ngine --listen 127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 1);
  for (int i = 0; i < 50 && sh(NULL, 0, "pgrep -f '%s' > /dev/null", pat) == 0; i++)
    usleep(100000);
  assert_int_not_equal(sh(NULL, 0, "pgrep -f '%s' > /dev/null", pat), 0);
}

/* Lab 6 builds network namespaces: it needs root. Where that is not
 * allowed, it is skipped with the reason. */
static void lab6_across_machines(void **state)
{
  (void)state;
  if (sh(out, OUT_SIZE, "ip netns add auralog-probe-%d 2>&1 && ip netns del auralog-probe-%d",
         (int)getpid(), (int)getpid()) != 0) {
    printf("# lab 6 skipped: cannot make network namespaces here: %s\n", out);
    skip();
  }
  int rc = sh(out, OUT_SIZE, "%s lab run 6 --dir %s 2>&1", bin, dir);
  char *run = strdup(out);
  int crc = rc == 0 ? sh(out, OUT_SIZE, "%s lab check 6 --dir %s 2>&1", bin, dir) : -1;
  sh(NULL, 0, "scripts/netns-cluster.sh down %s/netns", dir);
  if (rc != 0)
    fail_msg("lab run 6 failed:\n%s", run);
  free(run);
  if (crc != 0)
    fail_msg("lab check 6 failed:\n%s", out);
  assert_non_null(strstr(out, "passed"));
}

static void wrong_answers_do_not_pass(void **state)
{
  (void)state;
  char path[600];
  snprintf(path, sizeof path, "%s/labs/lab02-answers.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("write_loss: 3\nread_loss: 3\ncopies_left_2of3: 1\nslow_node: luck\n", f);
  fclose(f);
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab check 2 --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "[missing] write_loss"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_lab_not_done_does_not_pass),
    cmocka_unit_test(lab1_write_path),
    cmocka_unit_test(lab2_quorums),
    cmocka_unit_test(lab3_crash_recovery),
    cmocka_unit_test(lab4_gossip),
    cmocka_unit_test(lab5_fencing),
    cmocka_unit_test(lab6_across_machines),
    cmocka_unit_test(wrong_answers_do_not_pass),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: labs", tests, setup, teardown);
}
