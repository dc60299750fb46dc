/*
 * Integration: the cluster across "machines" (scripts/netns-cluster.sh,
 * lab 6), two at once, as two students on one machine would run it: each
 * in a directory of its own gets namespaces, a bridge and a subnet of its
 * own, takes an AZ out and back, and `down` in one directory leaves the
 * other running. Needs root (network namespaces), as lab 6 does.
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

static char script[512], dirs[2][256];

/* Run cmd with the cluster in dirs[k] as AURALOG_DIR (its key is there). */
static int in(int k, char *o, size_t n, const char *cmd)
{
  return sh(o, n, "unset AURALOG_COORD AURALOG_ENGINE AURALOG_KEY; export AURALOG_DIR=%s "
            "AURALOG=%s; { %s; } 2>&1", dirs[k], bin, cmd);
}

/* The state status --json (in o) gives node id ("" if none). */
static const char *node_state_in(const char *o, const char *id)
{
  static char st[16];
  st[0] = 0;
  cJSON *j = cJSON_Parse(o), *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(j, "nodes"))
    if (strcmp(cJSON_GetObjectItem(n, "id")->valuestring, id) == 0)
      snprintf(st, sizeof st, "%s", cJSON_GetObjectItem(n, "state")->valuestring);
  cJSON_Delete(j);
  return st;
}

static int setup(void **state)
{
  (void)state;
  bin = getenv("AURALOG_BIN");
  if (bin == NULL)
    bin = "build/auralog";
  char *b = realpath(bin, NULL);
  if (b == NULL)
    return -1;
  /* The script beside the binary's tree: build/auralog -> scripts/. */
  snprintf(script, sizeof script, "%s", b);
  char *slash = strrchr(script, '/');
  *slash = 0;
  slash = strrchr(script, '/');
  snprintf(slash, sizeof script - (size_t)(slash - script), "/scripts/netns-cluster.sh");
  free(b);
  for (int k = 0; k < 2; k++)
    snprintf(dirs[k], sizeof dirs[k], "/tmp/auralog-it-netns%d-%d", k, (int)getpid());
  return 0;
}

static void two_netns_clusters_at_once(void **state)
{
  (void)state;
  if (getuid() != 0)
    skip();                      /* namespaces need root */
  static char o[2][1 << 16];
  char cmd[4096];
  /* Both up at the same time. */
  snprintf(cmd, sizeof cmd, "(%s up %s > %s.up 2>&1 & %s up %s > %s.up 2>&1 & wait) && "
           "cat %s.up %s.up", script, dirs[0], dirs[0], script, dirs[1], dirs[1], dirs[0],
           dirs[1]);
  int rc = in(0, o[0], sizeof o[0], cmd);
  if (rc != 0 || strstr(o[0], "netns cluster up in") == NULL ||
      strstr(strstr(o[0], "netns cluster up in") + 1, "netns cluster up in") == NULL)
    fail_msg("two netns clusters did not both come up:\n%s", o[0]);
  char nets[2][256];
  for (int k = 0; k < 2; k++) {
    snprintf(cmd, sizeof cmd, "cat %s/netns.env", dirs[k]);
    assert_int_equal(in(k, nets[k], sizeof nets[k], cmd), 0);
  }
  print_message("subnets: %.*s and %.*s\n", (int)strcspn(nets[0], "\n"), nets[0],
                (int)strcspn(nets[1], "\n"), nets[1]);
  assert_string_not_equal(nets[0], nets[1]);
  for (int k = 0; k < 2; k++) {
    snprintf(cmd, sizeof cmd, "%s sql 'CREATE TABLE t(k, i)'", bin);
    if (in(k, o[k], sizeof o[k], cmd) != 0)
      fail_msg("cluster %d: %s", k, o[k]);
  }
  /* Cut B in the first only: the second's B stays up; both commit. */
  snprintf(cmd, sizeof cmd, "%s cut B %s", script, dirs[0]);
  assert_int_equal(in(0, o[0], sizeof o[0], cmd), 0);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 5; i++) {
      snprintf(cmd, sizeof cmd, "%s sql 'INSERT INTO t VALUES(%d, %d)'", bin, k, i);
      if (in(k, o[k], sizeof o[k], cmd) != 0)
        fail_msg("cluster %d, insert %d: %s", k, i, o[k]);
    }
  int b_down = 0;
  for (int t = 0; t < 40 && !b_down; t++) {
    snprintf(cmd, sizeof cmd, "%s status --json", bin);
    in(0, o[0], sizeof o[0], cmd);
    b_down = strcmp(node_state_in(o[0], "B1"), "down") == 0;
    if (!b_down)
      usleep(100000);
  }
  if (!b_down)
    fail_msg("B1 of the first cluster is not down 4 s after its AZ was cut");
  snprintf(cmd, sizeof cmd, "%s status --json", bin);
  assert_int_equal(in(1, o[1], sizeof o[1], cmd), 0);
  assert_string_equal(node_state_in(o[1], "B1"), "up");
  snprintf(cmd, sizeof cmd, "%s restore B %s", script, dirs[0]);
  assert_int_equal(in(0, o[0], sizeof o[0], cmd), 0);
  /* Down in the first directory: the second still serves. */
  snprintf(cmd, sizeof cmd, "%s down %s", script, dirs[0]);
  assert_int_equal(in(0, o[0], sizeof o[0], cmd), 0);
  snprintf(cmd, sizeof cmd, "%s sql 'SELECT count(*) FROM t'", bin);
  rc = in(1, o[1], sizeof o[1], cmd);
  if (rc != 0 || strcmp(o[1], "5\n") != 0)
    fail_msg("after the first directory's down, the second answers '%s'", o[1]);
  snprintf(cmd, sizeof cmd, "%s down %s", script, dirs[1]);
  assert_int_equal(in(1, o[1], sizeof o[1], cmd), 0);
  /* Nothing of either is left (another user's netns cluster may run). */
  for (int k = 0; k < 2; k++) {
    assert_int_equal(sh(o[0], sizeof o[0], "id=$(printf %%s %s | sha1sum | cut -c1-6); "
                        "{ ip netns list; ip -o link; } | grep -c \"alg$id\" || true", dirs[k]),
                     0);
    assert_string_equal(o[0], "0\n");
  }
}

static int teardown(void **state)
{
  (void)state;
  char cmd[4096], o[4096];
  for (int k = 0; k < 2; k++) {
    snprintf(cmd, sizeof cmd, "%s down %s", script, dirs[k]);
    in(k, o, sizeof o, cmd);
    if (getenv("AURALOG_KEEP") == NULL)
      sh(NULL, 0, "rm -rf %s %s.up", dirs[k], dirs[k]);
  }
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(two_netns_clusters_at_once),
  };
  return cmocka_run_group_tests_name("integration: netns clusters", tests, setup, teardown);
}
