/*
 * Integration: faults, as a lab would play them with `auralog fault`
 * against a real cluster (paper §2.1, §3.3, §4.3). One AZ down: commits go
 * on. One more node down: commits stall and fail cleanly after the
 * deadline, reads still work. Nodes back: writes resume without
 * restarting the engine, and the returning segments catch up by gossip.
 * A partitioned AZ is like one down, and heals. A slow node is hidden by
 * the 4/6 quorum. A second engine fences the first. A crashed engine
 * comes back with a new epoch and the same data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"

/* Insert n rows in n transactions; returns ms per commit. */
static double commits(const char *table, int from, int n)
{
  char *s = malloc((size_t)n * 64 + 1);
  size_t len = 0;
  for (int i = 0; i < n; i++)
    len += (size_t)sprintf(s + len, "insert into %s values(%d);\n", table, from + i);
  unsigned long long t0 = now_ms();
  sql_ok(s, "");
  free(s);
  return (double)(now_ms() - t0) / n;
}

/* The SCL status shows for node's segment of pg 0 (-1: not shown). */
static long long scl_of(cJSON *o, const char *node)
{
  cJSON *pg = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "pgs"), 0), *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments"))
    if (strcmp(cJSON_GetObjectItem(s, "node")->valuestring, node) == 0)
      return (long long)cJSON_GetObjectItem(s, "scl")->valuedouble;
  return -1;
}

/* Wait until every segment of pg 0 shows the same SCL (gossip caught the
 * laggards up); returns the time it took. */
static unsigned long long wait_scls_equal(int ms)
{
  static const char *nodes[] = {"A1", "A2", "B1", "B2", "C1", "C2"};
  unsigned long long t0 = now_ms();
  long long lo = 0, hi = 0;
  while (now_ms() - t0 < (unsigned long long)ms) {
    cJSON *o = status("main");
    lo = hi = scl_of(o, nodes[0]);
    for (int i = 1; i < 6; i++) {
      long long v = scl_of(o, nodes[i]);
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    cJSON_Delete(o);
    if (lo == hi && lo > 0)
      return now_ms() - t0;
    usleep(100000);
  }
  fail_msg("segment SCLs still differ after %d ms (%lld..%lld)", ms, lo, hi);
  return 0;
}

static int setup(void **state)
{
  (void)state;
  if (cluster_start("faults") != 0)
    return -1;
  return sql("create table f(i); insert into f values(0);") == 0 ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- tests --------------------------------------------------------------- */

static void one_az_down_commits_go_on(void **state)
{
  (void)state;
  fault("az-down B");
  wait_node_state("B1", "down", 2000);
  commits("f", 1, 50);
  sql_ok("select count(*) from f;", "51\n");
  cJSON *o = status("main");
  cJSON *pg = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "pgs"), 0), *s;
  int down = 0;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments"))
    down += strcmp(cJSON_GetObjectItem(s, "state")->valuestring, "down") == 0;
  assert_int_equal(down, 2);     /* status shows the segments' state */
  cJSON_Delete(o);
}

static void az_plus_one_down_commits_fail_cleanly_reads_work(void **state)
{
  (void)state;
  fault("node-stop A1");         /* 3 of 6 left: no write quorum */
  /* Reads: one segment with a complete log is enough (Vr = 3 remain). */
  sql_ok("select count(*) from f where i < 1000;", "51\n");
  unsigned long long t0 = now_ms();
  int rc = sql("insert into f values(1000);");
  unsigned long long ms = now_ms() - t0;
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "no write quorum"));
  assert_true(ms >= COMMIT_DEADLINE_MS - 500);
  assert_true(ms < COMMIT_DEADLINE_MS + 5000);
  /* Now every snapshot sees that commit: a read waits for it to be
   * durable (durable reads, the engine's default), and fails in time. */
  assert_int_not_equal(sql("select count(*) from f where i < 1000;"), 0);
  assert_non_null(strstr(out, "not durable yet"));
  /* Status names who holds the stalled commit's records: 3 of 6, none of
   * them a node that is down. */
  cJSON *o = NULL, *pr = NULL;
  for (int t = 0; t < 30; t++) {
    cJSON_Delete(o);
    o = status("main");
    pr = cJSON_GetObjectItem(o, "pending_records");
    if (cJSON_GetArraySize(pr) > 0)
      break;
    usleep(100000);
  }
  assert_true(cJSON_GetArraySize(pr) > 0);
  cJSON *r = cJSON_GetArrayItem(pr, 0), *n;
  assert_int_equal((int)cJSON_GetObjectItem(r, "acks")->valuedouble, 3);
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(r, "acked_by")) {
    const char *id = n->valuestring;
    if (!strcmp(id, "A1") || id[0] == 'B')
      fail_msg("status says %s, which is down, acknowledged lsn %.0f", id,
               cJSON_GetObjectItem(r, "lsn")->valuedouble);
  }
  cJSON *w = cJSON_GetObjectItem(o, "lal_window");
  assert_true(cJSON_GetObjectItem(w, "used")->valuedouble >= 1);
  cJSON_Delete(o);
  assert_int_equal(sh(out, sizeof out, "%s status --coord %s", bin, coord), 0);
  assert_non_null(strstr(out, "waiting for a write quorum"));
}

static void nodes_return_writes_resume_and_gossip_catches_up(void **state)
{
  (void)state;
  pid_t engine_pid = pid_of("engine");
  fault("az-up B");
  fault("node-start A1");
  assert_int_equal(pid_of("engine"), engine_pid);   /* no engine restart */
  commits("f", 51, 20);
  /* The commit that timed out stayed queued and is durable now. */
  sql_ok("select count(*) from f;", "72\n");
  /* B1, B2 and A1 missed records that were durable without them; the
   * engine does not resend those, gossip fills them. */
  unsigned long long ms = wait_scls_equal(5000);
  printf("# returning segments caught up by gossip in %llu ms\n", ms);
  assert_int_equal(sh(out, sizeof out, "grep -l 'gossip: ' %s/log/B1.log %s/log/B2.log",
                      dir, dir), 0);
}

static void a_partitioned_az_is_like_one_down_and_heals(void **state)
{
  (void)state;
  fault("partition C");
  cJSON *o = status("main"), *n;
  int parted = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes"))
    parted += cJSON_IsTrue(cJSON_GetObjectItem(n, "partitioned"));
  cJSON_Delete(o);
  assert_int_equal(parted, 2);
  commits("f", 100, 20);         /* 4 of 6 answer */
  fault("heal");
  commits("f", 200, 5);
  wait_scls_equal(5000);
  sql_ok("select count(*) from f;", "97\n");
}

static void a_slow_node_is_hidden_by_the_quorum(void **state)
{
  (void)state;
  double fast = commits("f", 300, 20);
  fault("slow A2 400");
  double slow = commits("f", 400, 20);
  fault("slow A2 0");
  printf("# commit: %.1f ms per transaction, %.1f ms with A2 400 ms late\n", fast, slow);
  /* 4 of the 5 others answer at once: the slow one costs nothing. */
  assert_true(slow < 200);
}

static void a_second_engine_fences_the_first(void **state)
{
  (void)state;
  char e2[64], log[512];
  snprintf(e2, sizeof e2, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 1);
  snprintf(log, sizeof log, "%s/log/engine2.log", dir);
  assert_int_equal(sh(NULL, 0, "%s engine --listen %s --coord %s > %s 2>&1 & echo $! > %s/run/engine2.pid",
                      bin, e2, coord, log, dir), 0);
  for (int i = 0; i < 100 && sh(NULL, 0, "%s sql --engine %s 'select 1' >/dev/null 2>&1", bin, e2) != 0; i++)
    usleep(50000);
  /* The first engine's next write meets a node that has seen epoch N+1. */
  assert_int_not_equal(sql("insert into f values(999);"), 0);
  assert_non_null(strstr(out, "fenced by epoch"));
  assert_int_not_equal(sql("select 1;"), 0);
  assert_non_null(strstr(out, "fenced by epoch"));
  /* The new writer has the data and takes writes. */
  assert_int_equal(sh_in("insert into f values(500); select count(*) from f;", out, sizeof out,
                         "%s sql --engine %s", bin, e2), 0);
  assert_string_equal(out, "138\n");
  /* Status shows the first engine as fenced while it still runs. */
  int shown = 0;
  for (int t = 0; t < 30 && !shown; t++) {
    cJSON *o = status("main"), *fe;
    cJSON_ArrayForEach(fe, cJSON_GetObjectItem(o, "fenced_engines"))
      shown |= strcmp(cJSON_GetObjectItem(fe, "addr")->valuestring, engine) == 0;
    cJSON_Delete(o);
    if (!shown)
      usleep(100000);
  }
  if (!shown)
    fail_msg("status does not show the fenced engine %s", engine);
  /* Back to the cluster's own engine: stop both, let `cluster up` start it. */
  sh(NULL, 0, "kill $(cat %s/run/engine2.pid)", dir);
  stop_member("engine", SIGTERM);
  for (int i = 0; i < 100 && sh(NULL, 0, "%s sql --engine %s 'select 1' >/dev/null 2>&1", bin, e2) == 0; i++)
    usleep(50000);
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
}

static void engine_crash_then_cluster_up_recovers(void **state)
{
  (void)state;
  cJSON *o = status("main");
  double epoch = cJSON_GetObjectItem(o, "epoch")->valuedouble;
  cJSON_Delete(o);
  sql_ok("select count(*), sum(i) from f;", NULL);
  char *before = strdup(out);
  fault("engine-crash");
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  sql_ok("select count(*), sum(i) from f;", before);
  sql_ok("pragma integrity_check;", "ok\n");
  /* A new epoch, and the truncation its recovery wrote: (vdl, vdl + LAL].
   * (The engine reports it to the coordinator within ENGINE_STAT_MS.) */
  double now_epoch = 0;
  cJSON *last = NULL;
  for (int i = 0; i < 20; i++) {
    o = status("main");
    now_epoch = cJSON_GetObjectItem(o, "epoch")->valuedouble;
    cJSON *tr = cJSON_GetObjectItem(o, "truncations");
    last = cJSON_GetArrayItem(tr, cJSON_GetArraySize(tr) - 1);
    if (last && cJSON_GetObjectItem(last, "epoch")->valuedouble == now_epoch)
      break;
    cJSON_Delete(o);
    o = NULL;
    usleep(50000);
  }
  assert_non_null(o);
  assert_true(now_epoch > epoch);
  assert_true(cJSON_GetObjectItem(last, "to")->valuedouble -
              cJSON_GetObjectItem(last, "from")->valuedouble >= LAL);
  assert_true(cJSON_GetObjectItem(o, "next_lsn")->valuedouble >
              cJSON_GetObjectItem(last, "to")->valuedouble);
  assert_true(cJSON_GetObjectItem(o, "recovery_ms")->valuedouble >= 0);
  cJSON_Delete(o);
  free(before);
}

/* Every recovery writes a truncation to every segment of the volume. A PG
 * no one writes to never moves its GC point past them, and they piled up
 * for ever: after 860 recoveries a 230-PG volume took 16 s to open (the
 * torture's crash campaign). Now a segment forgets one once every member
 * of its PG holds it (rule TF, node/tforget.c): a blob fills PGs that are
 * then left alone while the writer crashes four times. */
static void an_idle_pg_forgets_truncations_every_member_holds(void **state)
{
  (void)state;
  sql_ok("create table blob(b); insert into blob values(randomblob(2500000));", "");
  for (int i = 0; i < 4; i++) {
    fault("engine-crash");
    assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
    char q[64];
    snprintf(q, sizeof q, "insert into f values(%d);", -1000 - i);
    sql_ok(q, "");
  }
  static const char *nodes[] = {"A1", "A2", "B1", "B2", "C1", "C2"};
  unsigned long long t0 = now_ms();
  int missing = 6;
  while (missing > 0 && now_ms() - t0 < 90000) {
    usleep(500000);
    missing = 0;
    for (int i = 0; i < 6; i++)
      missing += sh(out, sizeof out, "grep -q 'pg [0-9]*: [0-9]* truncations* every "
                    "member holds forgotten' %s/log/%s.log", dir, nodes[i]) != 0;
  }
  if (missing > 0)
    fail_msg("after %llu s, %d of six nodes still hold every truncation of the idle PGs",
             (now_ms() - t0) / 1000, missing);
  print_message("idle PGs: every node forgot older truncations %llu s after the last "
                "recovery\n", (now_ms() - t0) / 1000);
  sql_ok("select count(*) from f where i <= -1000;", "4\n");
  sql_ok("select length(b) from blob;", "2500000\n");
}

/* Start an engine by hand, as a student would after `fault engine-crash`,
 * its output appended to the engine's log; returns the log's path. */
static const char *engine_by_hand(void)
{
  static char log[512];
  snprintf(log, sizeof log, "%s/log/engine.log", dir);
  assert_int_equal(sh(out, sizeof out, "cd %s && { %s engine --volume main --listen %s "
                      "--coord %s < /dev/null >> %s 2>&1 & echo $! > run/engine.pid; }",
                      dir, bin, engine, coord, log), 0);
  return log;
}

/* Wait up to ms for the engine to answer sql; fail if it exits first. */
static unsigned long long engine_answers(const char *sqltext, const char *log, int ms)
{
  unsigned long long t0 = now_ms();
  while (sql(sqltext) != 0) {
    pid_t e = pid_of("engine");
    if (e <= 0 || !pid_alive(e)) {
      sh(out, sizeof out, "tail -5 %s", log);
      fail_msg("the engine exited:\n%s", out);
    }
    if (now_ms() - t0 > (unsigned long long)ms)
      fail_msg("no answer %d ms after the engine started", ms);
    usleep(200 * 1000);
  }
  return now_ms() - t0;
}

/* Recovery needs a write quorum of every PG; nodes that are briefly away
 * (restarting, or not yet told of a PG made while they were down: found
 * by the crash campaign, crash point 259 of 500) must not stop the
 * engine for good. It tries again, with a new epoch, for up to
 * RECOVERY_RETRY_MS, and serves once the nodes are back. 12 s here: a
 * moving position's next segment took 11 s to fill in the crash campaign
 * (point 50, an AZ cut during a repair), and an engine that gave up after
 * 10 s failed `cluster up`. */
static void an_engine_without_a_quorum_waits_for_the_nodes(void **state)
{
  (void)state;
  sql_ok("select count(*), sum(i) from f;", NULL);
  char *before = strdup(out);
  fault("engine-crash");
  fault("node-stop A1");
  fault("node-stop A2");
  fault("node-stop B1");         /* an AZ and one more: no write quorum */
  const char *log = engine_by_hand();
  usleep(1500 * 1000);           /* its first recovery fails for want of a quorum */
  assert_true(pid_of("engine") > 0);
  assert_int_equal(sh(out, sizeof out, "grep -c 'trying again' %s", log), 0);
  usleep(10500 * 1000);          /* still trying after 12 s */
  pid_t e = pid_of("engine");
  assert_true(e > 0 && pid_alive(e));
  fault("node-start B1");
  for (int i = 0; i < 200 && sql("select count(*), sum(i) from f;") != 0; i++)
    usleep(50000);
  assert_string_equal(out, before);
  fault("node-start A1");
  fault("node-start A2");
  free(before);
}

/* A slow machine makes recovery slower, never fails it. Three nodes answer
 * 2.5 s late, longer than RCV_ANSWER_MS: the three fast ones make a read
 * quorum but not a write quorum, so every round must wait for a slow one.
 * Before, recovery gave a node up after RCV_ANSWER_MS of silence, every
 * attempt fell short of round 3's write quorum for the same reason, and
 * after RECOVERY_RETRY_MS the engine exited with every node up (as
 * `make test SAN=1` once did at 1,000 PGs). Now it asks them again and
 * waits, says so in its log, and the cluster's status shows the round it
 * waits in. */
static void slow_nodes_make_recovery_slower_never_fail_it(void **state)
{
  (void)state;
  sql_ok("select count(*), sum(i) from f;", NULL);
  char *before = strdup(out);
  fault("engine-crash");
  fault("slow A1 2500");
  fault("slow A2 2500");
  fault("slow B1 2500");
  const char *log = engine_by_hand();
  int shown = 0;
  for (int i = 0; i < 30 && !shown; i++) {
    usleep(100 * 1000);
    cJSON *o = status("main");
    const cJSON *r = cJSON_GetObjectItem(o, "recovering");
    shown = cJSON_IsString(r) && strstr(r->valuestring, "waiting for A1 A2 B1") != NULL;
    if (shown)
      print_message("status while it waits: \"%s\"\n", r->valuestring);
    cJSON_Delete(o);
  }
  unsigned long long ms = engine_answers("select count(*), sum(i) from f;", log, 60000);
  print_message("recovery with three nodes 2.5 s late: %llu ms to the first answer\n", ms);
  assert_string_equal(out, before);
  assert_true(shown);
  assert_int_equal(sh(out, sizeof out, "grep -c 'asked again, waiting for it' %s", log), 0);
  fault("slow A1 0");
  fault("slow A2 0");
  fault("slow B1 0");
  cJSON *o = status("main");
  assert_null(cJSON_GetObjectItem(o, "recovering"));   /* serving: no longer shown */
  cJSON_Delete(o);
  free(before);
}

/* A partitioned node drops the engine's requests without closing the
 * connection: waiting alone would wait for ever, so a recovery asks again
 * (rule W). AZ A partitioned and B1 stopped leave three nodes: a read
 * quorum, no write quorum. (1) B1 comes back: the attempt starts again
 * with it and serves, A still cut off. (2) The same, but the partition
 * heals instead: the requests asked again reach A, and it serves. Before,
 * the engine gave the silent nodes up after RCV_ANSWER_MS, and in (2) it
 * would have exited had the partition lasted RECOVERY_RETRY_MS. */
static void a_recovery_waits_out_a_partition_and_takes_back_a_returning_node(void **state)
{
  (void)state;
  sql_ok("select count(*), sum(i) from f;", NULL);
  char *before = strdup(out);
  fault("engine-crash");
  fault("partition A");
  fault("node-stop B1");
  const char *log = engine_by_hand();
  usleep(3000 * 1000);
  cJSON *o = status("main");
  const cJSON *r = cJSON_GetObjectItem(o, "recovering");
  if (!cJSON_IsString(r) || strstr(r->valuestring, "waiting for A1 A2") == NULL)
    fail_msg("status does not say the recovery waits for A1 and A2: %s",
             cJSON_IsString(r) ? r->valuestring : "(no \"recovering\")");
  cJSON_Delete(o);
  fault("node-start B1");
  unsigned long long ms = engine_answers("select count(*), sum(i) from f;", log, 30000);
  print_message("(1) B1 back: the engine answered %llu ms later, A still partitioned\n", ms);
  assert_string_equal(out, before);
  assert_int_equal(sh(out, sizeof out, "grep -c 'is back: starting again with it' %s", log), 0);
  sql_ok("insert into f values(-7);", "");
  sql_ok("select count(*), sum(i) from f;", NULL);
  free(before);
  before = strdup(out);

  fault("engine-crash");
  fault("node-stop B1");
  log = engine_by_hand();
  usleep(6000 * 1000);           /* round 1 waits, asking A again */
  assert_true(pid_alive(pid_of("engine")));
  assert_int_not_equal(sql("select 1;"), 0);
  fault("heal");
  ms = engine_answers("select count(*), sum(i) from f;", log, 30000);
  print_message("(2) the partition healed: the engine answered %llu ms later\n", ms);
  assert_string_equal(out, before);
  fault("node-start B1");
  free(before);
}

static void bad_fault_commands_say_why(void **state)
{
  (void)state;
  assert_int_not_equal(sh(out, sizeof out, "%s fault --dir %s az-down D 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "A, B or C"));
  assert_int_not_equal(sh(out, sizeof out, "%s fault --dir %s node-stop Z9 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "node id"));
  assert_int_not_equal(sh(out, sizeof out, "%s fault --dir %s slow A1 lots 2>&1", bin, dir), 0);
  assert_int_not_equal(sh(out, sizeof out, "%s fault --dir %s sideways 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "unknown action"));
  assert_int_equal(live_cluster_processes() >= 8, 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_az_down_commits_go_on),
    cmocka_unit_test(az_plus_one_down_commits_fail_cleanly_reads_work),
    cmocka_unit_test(nodes_return_writes_resume_and_gossip_catches_up),
    cmocka_unit_test(a_partitioned_az_is_like_one_down_and_heals),
    cmocka_unit_test(a_slow_node_is_hidden_by_the_quorum),
    cmocka_unit_test(a_second_engine_fences_the_first),
    cmocka_unit_test(engine_crash_then_cluster_up_recovers),
    cmocka_unit_test(an_engine_without_a_quorum_waits_for_the_nodes),
    cmocka_unit_test(slow_nodes_make_recovery_slower_never_fail_it),
    cmocka_unit_test(a_recovery_waits_out_a_partition_and_takes_back_a_returning_node),
    cmocka_unit_test(an_idle_pg_forgets_truncations_every_member_holds),
    cmocka_unit_test(bad_fault_commands_say_why),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  return cmocka_run_group_tests_name("integration: faults", tests, setup, teardown);
}
