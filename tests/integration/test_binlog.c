/*
 * Integration: the binlog's change capture in the engine (issue 29 step
 * 1; vfs/capture.c, vfs/binlog.c), switched on by AURALOG_CAPTURE=1 in
 * the environment `cluster up` passes to the engine. Through SELECT
 * auralog_binlog_recent(K): a committed transaction's row events are
 * there once, with the commit LSN its client was answered with, durable;
 * a rolled-back transaction's, a savepoint's rolled back to and a failed
 * statement's are not; a schema change is, with its statement.
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
#include "net/rpc.h"

static char o[1 << 20];

/* The transaction of the recent ones whose commit LSN is lsn (NULL: none;
 * count: how many there are). */
static cJSON *txn_at(cJSON *recent, uint64_t lsn, int *count)
{
  cJSON *t, *found = NULL;
  *count = 0;
  cJSON_ArrayForEach(t, recent)
    if ((uint64_t)cJSON_GetObjectItem(t, "commit_lsn")->valuedouble == lsn) {
      found = t;
      (*count)++;
    }
  return found;
}

static const char *str(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItem(o, k);
  assert_true(cJSON_IsString(v));
  return v->valuestring;
}

static void committed_transactions_have_their_events_and_rolled_back_ones_none(void **state)
{
  (void)state;
  struct rpc r;
  char why[256];
  uint64_t ddl_lsn = 0, lsn = 0, sp_lsn = 0, none = 0;
  assert_int_equal(rpc_open(&r, engine, 5000, why, sizeof why), 0);
  assert_int_equal(rpc_sql(&r, "CREATE TABLE b(id INTEGER PRIMARY KEY, x); "
                           "INSERT INTO b VALUES(1, 'one')", o, sizeof o, 10000, &ddl_lsn), 0);
  assert_int_equal(rpc_sql(&r, "BEGIN; INSERT INTO b VALUES(2, X'00ff'); "
                           "UPDATE b SET x = 2.5 WHERE id = 1; COMMIT", o, sizeof o, 10000, &lsn), 0);
  assert_int_equal(rpc_sql(&r, "BEGIN; INSERT INTO b VALUES(3, 'rolled back'); ROLLBACK", o,
                           sizeof o, 10000, &none), 0);
  assert_true(none == 0);
  assert_int_equal(rpc_sql(&r, "BEGIN; INSERT INTO b VALUES(4, NULL); SAVEPOINT s; "
                           "INSERT INTO b VALUES(5, 'rolled back to'); ROLLBACK TO s; COMMIT", o,
                           sizeof o, 10000, &sp_lsn), 0);
  assert_int_equal(rpc_sql(&r, "INSERT INTO b VALUES(6, 'failed'), (1, 'dup')", o, sizeof o,
                           10000, NULL), -1);
  assert_true(ddl_lsn > 0 && lsn > ddl_lsn && sp_lsn > lsn);
  assert_int_equal(rpc_sql(&r, "SELECT auralog_binlog_recent(10)", o, sizeof o, 10000, NULL), 0);
  rpc_close(&r);
  assert_null(strstr(o, "rolled back"));
  assert_null(strstr(o, "failed"));
  cJSON *recent = cJSON_Parse(o);
  assert_non_null(recent);
  assert_int_equal(cJSON_GetArraySize(recent), 4);   /* CREATE, INSERT 1, and the two */
  int n;
  /* The request "CREATE ...; INSERT ..." made two commits: its answer
   * names the last. */
  cJSON *t = txn_at(recent, ddl_lsn, &n);
  assert_int_equal(n, 1);
  t = txn_at(recent, lsn, &n);
  assert_int_equal(n, 1);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(t, "durable")));
  cJSON *ev = cJSON_GetObjectItem(t, "events");
  assert_int_equal(cJSON_GetArraySize(ev), 2);
  cJSON *e0 = cJSON_GetArrayItem(ev, 0), *e1 = cJSON_GetArrayItem(ev, 1);
  assert_string_equal(str(e0, "op"), "insert");
  assert_string_equal(str(e0, "table"), "b");
  assert_int_equal(cJSON_GetObjectItem(e0, "rowid")->valueint, 2);
  assert_string_equal(str(cJSON_GetArrayItem(cJSON_GetObjectItem(e0, "after"), 1), "blob"), "00ff");
  assert_string_equal(str(e1, "op"), "update");
  assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(e1, "before"), 1)->valuestring, "one");
  assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(e1, "after"), 1),
                                  "real")->valuedouble == 2.5);
  t = txn_at(recent, sp_lsn, &n);
  assert_int_equal(n, 1);
  ev = cJSON_GetObjectItem(t, "events");
  assert_int_equal(cJSON_GetArraySize(ev), 1);
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ev, 0), "rowid")->valueint, 4);
  /* The schema change, with its statement, in the commit before. */
  t = cJSON_GetArrayItem(recent, 0);
  assert_true((uint64_t)cJSON_GetObjectItem(t, "commit_lsn")->valuedouble < ddl_lsn);
  e0 = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "events"), 0);
  assert_string_equal(str(e0, "op"), "ddl");
  assert_string_equal(str(e0, "sql"), "CREATE TABLE b(id INTEGER PRIMARY KEY, x);");
  cJSON_Delete(recent);
}

static int setup(void **state)
{
  (void)state;
  setenv("AURALOG_CAPTURE", "1", 1);   /* reaches the engine through `cluster up` */
  return cluster_start("binlog");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(committed_transactions_have_their_events_and_rolled_back_ones_none),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: binlog capture", tests, setup, teardown);
}
