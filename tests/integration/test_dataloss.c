/*
 * Integration: the data-loss alarm (vfs/open.c, recovery.h recover_lost)
 * on a real cluster, beyond the fault model.
 *
 * Commits reach all six nodes, then AZ C goes down and more commits reach
 * only A1, A2, B1 and B2 (a write quorum: they are acknowledged). The
 * engine dies; those four nodes then lose their log records while keeping
 * each segment's metadata, which says what VDL the last writer told it (a
 * disk that lost the log but not the segment's state: four disks at once,
 * beyond an AZ and a node). Their segments are a read quorum, and their
 * records prove less than the VDL they heard: acknowledged commits are
 * gone. A new engine must then:
 *  - exit non-zero at once with the one-line alarm, naming the PG, a node
 *    and both LSNs (before, it tried for 10 s, a new epoch every 500 ms:
 *    epoch 21 for one open);
 *  - have taken one epoch, written no truncation (the coordinator's list
 *    stays empty), and left a `dataloss` event in the cluster's journal.
 * With AZ C back, all six answer; C's segments never had the lost
 * commits, so the alarm rings again, and C's segments still hold what they
 * held (nothing truncated them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *const lost_nodes[] = {"A1", "A2", "B1", "B2"};
#define NLOST (sizeof lost_nodes / sizeof lost_nodes[0])

static int setup(void **state)
{
  (void)state;
  return cluster_start_with("dataloss", " --replicas 0");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* Node id, stopped, loses its log: the records (and their page index)
 * go from its lmdb; its segments' metadata, page versions and identity
 * stay. It stopped with SIGTERM, a checkpoint: its hot log holds nothing
 * lmdb lacks, and goes too. */
static void lose_log(const char *id)
{
  char path[512];
  MDB_env *env;
  MDB_txn *txn;
  snprintf(path, sizeof path, "%s/data/%s", dir, id);
  assert_int_equal(mdb_env_create(&env), 0);
  assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
  assert_int_equal(mdb_env_open(env, path, 0, 0600), 0);
  assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
  static const char *const dbs[] = {"recs"};   /* its page index is in memory */
  for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
    MDB_dbi dbi;
    assert_int_equal(mdb_dbi_open(txn, dbs[i], 0, &dbi), 0);
    assert_int_equal(mdb_drop(txn, dbi, 0), 0);
  }
  assert_int_equal(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
  snprintf(path, sizeof path, "%s/data/%s/hot.log", dir, id);
  unlink(path);
}

static int volume_epoch(void)
{
  cJSON *o = status("main");
  int e = cJSON_GetObjectItem(o, "epoch")->valueint;
  cJSON_Delete(o);
  return e;
}

/* The SCL status shows for node id's segment of pg 0. */
static int pg0_scl(const char *id)
{
  cJSON *o = status("main"), *pg, *seg;
  int scl = -1;
  cJSON_ArrayForEach(pg, cJSON_GetObjectItem(o, "pgs"))
    if (cJSON_GetObjectItem(pg, "pg")->valueint == 0)
      cJSON_ArrayForEach(seg, cJSON_GetObjectItem(pg, "segments"))
        if (strcmp(cJSON_GetObjectItem(seg, "node")->valuestring, id) == 0)
          scl = cJSON_GetObjectItem(seg, "scl")->valueint;
  cJSON_Delete(o);
  return scl;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Start an engine on the volume; it must refuse at once with the alarm,
 * in one epoch. */
static void engine_refuses(void)
{
  int before = volume_epoch();
  double t0 = now_s();
  int rc = sh(out, OUT_SIZE, "timeout 30 %s engine --listen %s --coord %s 2>&1", bin, engine,
              coord);
  double took = now_s() - t0;
  printf("# engine exit %d after %.2f s:\n%s", rc, took, out);
  assert_int_not_equal(rc, 0);
  assert_int_not_equal(rc, 124);                 /* not the timeout */
  /* Its last line, the one `cluster up` shows, is the alarm. */
  size_t len = strlen(out);
  while (len > 0 && out[len - 1] == '\n')
    out[--len] = 0;
  const char *last = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
  if (strncmp(last, "auralog: engine: cannot open volume main: data loss: recovery proves VDL ",
              73) != 0)
    fail_msg("the engine's last line is '%s'", last);
  assert_non_null(strstr(out, "but pg 0 segment on node "));
  assert_non_null(strstr(out, "heard VDL "));
  assert_non_null(strstr(out, "refusing to open; nothing truncated"));
  assert_null(strstr(out, "trying again"));
  assert_true(took < 5.0);                       /* no retries: 10 s of them before */
  assert_int_equal(volume_epoch(), before + 1);  /* one epoch, not one per retry */
  cJSON *o = status("main");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "truncations")), 0);
  cJSON_Delete(o);
}

static void lost_acknowledged_commits_raise_the_alarm(void **state)
{
  (void)state;
  char q[128];
  sql_ok("create table t(k integer primary key, v text);", NULL);
  for (int i = 1; i <= 8; i++) {
    snprintf(q, sizeof q, "insert into t values (%d, 'all six');", i);
    sql_ok(q, NULL);
  }
  usleep(1200 * 1000);                           /* status: the nodes' next heartbeat */
  int c1 = pg0_scl("C1");
  assert_true(c1 > 0);
  fault("az-down C");
  for (int i = 9; i <= 20; i++) {
    snprintf(q, sizeof q, "insert into t values (%d, 'four');", i);
    sql_ok(q, NULL);                             /* durable: acknowledged */
  }
  sql_ok("select count(*) from t;", "20\n");
  fault("engine-crash");
  for (size_t i = 0; i < NLOST; i++)
    stop_member(lost_nodes[i], SIGTERM);
  for (size_t i = 0; i < NLOST; i++)
    lose_log(lost_nodes[i]);
  for (size_t i = 0; i < NLOST; i++) {
    snprintf(q, sizeof q, "node-start %s", lost_nodes[i]);
    fault(q);
  }
  for (size_t i = 0; i < NLOST; i++)
    wait_node_state(lost_nodes[i], "up", 10000);

  /* A read quorum of four, which heard a VDL their records no longer prove. */
  engine_refuses();
  int epoch = volume_epoch();
  assert_int_equal(sh(out, OUT_SIZE, "grep '\"kind\":\"dataloss\"' %s/data/coord/journal.jsonl",
                      dir), 0);
  snprintf(q, sizeof q, "\"epoch\":%d,", epoch);
  assert_non_null(strstr(out, q));
  assert_non_null(strstr(out, "refusing to open; nothing truncated"));

  /* All six: C never had commits 9..20, the alarm again; C lost nothing. */
  fault("az-up C");
  wait_node_state("C1", "up", 10000);
  wait_node_state("C2", "up", 10000);
  engine_refuses();
  usleep(1200 * 1000);                           /* the nodes' next heartbeat */
  printf("# C1's scl: %d before, %d after\n", c1, pg0_scl("C1"));
  assert_true(pg0_scl("C1") >= c1);
}

/* Nothing of the cluster is left running (no engine: it refused). */
static void cluster_down_stops_the_rest(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s cluster down --dir %s", bin, dir), 0);
  assert_int_equal(live_cluster_processes(), 0);
  assert_no_sanitizer_reports();
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(lost_acknowledged_commits_raise_the_alarm),
    cmocka_unit_test(cluster_down_stops_the_rest),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
