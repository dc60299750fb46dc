/*
 * Integration: the engine's end-to-end page check (DESIGN.md §4,
 * invariants 4 and 8; vfs/pagelsn.h), on a real cluster.
 *
 * A storage node whose disk silently lost records answers a page read
 * with an older version of the page and no error. The lab fault `auralog
 * fault stale NODE on` makes a node do just that (every page it serves
 * lacks its newest record). With five of the six nodes doing it and a
 * small buffer cache (reads go to storage), SQL never sees an old page:
 * every count and sum is exact, PRAGMA integrity_check is ok; the engine
 * counts what it refused (auralog_stats(), and `auralog status`, which
 * names a stale node); then the nodes serve as stored again.
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

static const char *const stale_nodes[] = {"A1", "A2", "B1", "B2", "C1"};   /* C2 stays good */
#define NSTALE (sizeof stale_nodes / sizeof stale_nodes[0])

static int setup(void **state)
{
  (void)state;
  return cluster_start_with("pagecheck", " --cache 8");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* The engine's own count of refused page replies (auralog_stats()). */
static double engine_stale_pages(void)
{
  sql_ok("select auralog_stats();", NULL);
  cJSON *o = cJSON_Parse(out);
  assert_non_null(o);
  cJSON *n = cJSON_GetObjectItem(o, "stale_pages");
  assert_non_null(n);
  double v = n->valuedouble;
  cJSON_Delete(o);
  return v;
}

static void stale_nodes_never_reach_sql(void **state)
{
  (void)state;
  char q[256], want[128];
  sql_ok("create table c(k integer primary key, v integer, pad blob);", NULL);
  sql_ok("with recursive g(i) as (select 1 union all select i + 1 from g where i < 3000) "
         "insert into c select i, 0, randomblob(200) from g;", NULL);
  sql_ok("update c set v = 1;", NULL);         /* every page: a second record */
  sql_ok("select count(*), sum(v), sum(length(pad)) from c;", "3000|3000|600000\n");
  assert_int_equal(engine_stale_pages(), 0);

  for (size_t i = 0; i < NSTALE; i++) {
    snprintf(q, sizeof q, "stale %s on", stale_nodes[i]);
    fault(q);
  }
  /* Increments, each its own transaction, each reading its pages back
   * (the buffer cache holds 8 pages: reads go to storage). */
  for (int i = 0; i < 40; i++) {
    snprintf(q, sizeof q, "update c set v = v + 1 where k %% 40 = %d;", i);
    sql_ok(q, NULL);
    snprintf(q, sizeof q, "select sum(v) from c where k %% 40 = %d;", i);
    snprintf(want, sizeof want, "%d\n", 3000 / 40 * 2);
    sql_ok(q, want);                          /* never the value before the update */
  }
  sql_ok("select count(*), sum(v), sum(length(pad)) from c;", "3000|6000|600000\n");
  sql_ok("pragma integrity_check;", "ok\n");
  double refused = engine_stale_pages();
  printf("# 5 of 6 nodes stale: %.0f page replies refused\n", refused);
  assert_true(refused > 0);

  /* Status says so (it lags the engine by a report period). */
  cJSON *o = NULL;
  for (int i = 0; i < 40; i++) {
    o = status("main");
    cJSON *n = cJSON_GetObjectItem(o, "stale_pages");
    if (n && n->valuedouble > 0)
      break;
    cJSON_Delete(o);
    o = NULL;
    usleep(100000);
  }
  assert_non_null(o);
  const char *who = cJSON_GetObjectItem(o, "stale_node")->valuestring;
  int named = 0;
  for (size_t i = 0; i < NSTALE; i++)
    named |= strcmp(who, stale_nodes[i]) == 0;
  if (!named)
    fail_msg("status names stale node '%s', not one of the five", who);
  cJSON *nodes = cJSON_GetObjectItem(o, "nodes");
  for (int i = 0; i < cJSON_GetArraySize(nodes); i++) {
    cJSON *n = cJSON_GetArrayItem(nodes, i);
    const char *id = cJSON_GetObjectItem(n, "id")->valuestring;
    assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(n, "stale")), strcmp(id, "C2") != 0);
  }
  cJSON_Delete(o);
  assert_int_equal(sh(out, OUT_SIZE, "%s status --coord %s", bin, coord), 0);
  assert_non_null(strstr(out, "stale page"));

  for (size_t i = 0; i < NSTALE; i++) {
    snprintf(q, sizeof q, "stale %s off", stale_nodes[i]);
    fault(q);
  }
  sql_ok("update c set v = v + 1;", NULL);
  sql_ok("select count(*), sum(v) from c;", "3000|9000\n");
}

static void the_stale_fault_is_checked(void **state)
{
  (void)state;
  assert_int_not_equal(sh(out, OUT_SIZE, "%s fault --dir %s stale A1 maybe 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "on or off"));
  assert_int_not_equal(sh(out, OUT_SIZE, "%s fault --dir %s stale Z9 on 2>&1", bin, dir), 0);
  assert_int_equal(sh(out, OUT_SIZE, "%s fault --help", bin), 0);
  assert_non_null(strstr(out, "stale ID on|off"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(stale_nodes_never_reach_sql),
    cmocka_unit_test(the_stale_fault_is_checked),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
