/*
 * Integration: the engine, tried as a student would: SQL through `auralog
 * sql` against a real cluster (coordinator, six nodes, engine), with a
 * node stopped, with the engine restarted (cold cache: reads come from
 * storage) and killed, against stock SQLite on a local file for the same
 * random workload, and through the SQLite extension from the sqlite3 shell
 * and from Python. (Faults: test_faults.c; crashes: test_crash.c.)
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
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"

static double num(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItem(o, k);
  assert_non_null(v);
  return v->valuedouble;
}

/* Wait (engine reports come every ENGINE_STAT_MS) until status shows
 * key >= min for volume main; returns the status (caller frees). */
static cJSON *status_at_least(const char *key, double min)
{
  for (int i = 0; i < 40; i++) {
    cJSON *o = status("main");
    if (num(o, key) >= min)
      return o;
    cJSON_Delete(o);
    usleep(50000);
  }
  fail_msg("status never showed %s >= %.0f", key, min);
  return NULL;
}

/* Status once the counters in it are current: nodes heartbeat every
 * HEARTBEAT_MS and the engine reports every ENGINE_STAT_MS (caller frees). */
static cJSON *status_settled(void)
{
  usleep(2 * (HEARTBEAT_MS > ENGINE_STAT_MS ? HEARTBEAT_MS : ENGINE_STAT_MS) * 1000);
  return status("main");
}

/* The sum of a node counter over every node but skip (NULL: none). */
static double nodes_sum(cJSON *o, const char *key, const char *skip)
{
  double sum = 0;
  cJSON *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes"))
    if (skip == NULL || strcmp(cJSON_GetObjectItem(n, "id")->valuestring, skip) != 0)
      sum += num(n, key);
  return sum;
}

static cJSON *node_obj(cJSON *o, const char *id)
{
  cJSON *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes"))
    if (strcmp(cJSON_GetObjectItem(n, "id")->valuestring, id) == 0)
      return n;
  fail_msg("status shows no node %s", id);
  return NULL;
}

/* Does node's segment of every PG show the highest SCL of its PG? */
static int caught_up(cJSON *o, const char *node)
{
  cJSON *pg, *s;
  cJSON_ArrayForEach(pg, cJSON_GetObjectItem(o, "pgs")) {
    double hi = 0, mine = -1;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments")) {
      double scl = num(s, "scl");
      hi = scl > hi ? scl : hi;
      if (strcmp(cJSON_GetObjectItem(s, "node")->valuestring, node) == 0)
        mine = scl;
    }
    if (mine < hi)
      return 0;
  }
  return 1;
}

static int setup(void **state)
{
  (void)state;
  return cluster_start("engine");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- tests --------------------------------------------------------------- */

static char expect_10k[128];

static void ten_thousand_rows_in_a_thousand_transactions(void **state)
{
  (void)state;
  size_t cap = 1 << 20, len = 0;
  char *script = malloc(cap);
  len += (size_t)snprintf(script + len, cap - len,
                          "create table t10k(id integer primary key, v text, n int);\n");
  long long sum = 0, lens = 0;
  for (int t = 0; t < 1000; t++) {
    len += (size_t)snprintf(script + len, cap - len, "begin;");
    for (int i = 0; i < 10; i++) {
      int id = t * 10 + i, n = (id * 7919) % 1000;
      char v[32];
      int vl = snprintf(v, sizeof v, "row-%d", id);
      sum += n;
      lens += vl;
      len += (size_t)snprintf(script + len, cap - len, "insert into t10k values(%d,'%s',%d);",
                              id, v, n);
    }
    len += (size_t)snprintf(script + len, cap - len, "commit;\n");
  }
  unsigned long long t0 = now_ms();
  sql_ok(script, "");
  unsigned long long ms = now_ms() - t0;
  printf("# 1000 transactions through auralog sql in %llu ms\n", ms);
  snprintf(expect_10k, sizeof expect_10k, "10000|%lld|%lld\n", sum, lens);
  sql_ok("select count(*), sum(n), sum(length(v)) from t10k;", expect_10k);
  cJSON *o = status_at_least("commits", 1001);
  assert_true(num(o, "vdl") > 0);
  assert_true(num(o, "redo_bytes") > 0);
  assert_true(num(o, "vdl") <= num(o, "vcl"));
  assert_true(num(o, "next_lsn") > num(o, "vdl"));
  cJSON_Delete(o);
  free(script);
}

/* The counters `auralog bench` reads: every node made commits durable
 * (one device sync for each that holds records, its hot-log frame; none
 * for the background's, which lmdb makes durable at checkpoints:
 * node/store.c) and exchanged frames; the engine
 * sent at least its redo, and every frame it sent reached a node. */
static void counters_show_what_the_commits_cost(void **state)
{
  (void)state;
  cJSON *o = status_settled();
  double redo = num(o, "redo_bytes");
  assert_true(redo > 0);
  assert_true(num(o, "net_bytes_out") >= redo);
  assert_true(num(o, "net_msgs_out") >= num(o, "redo_msgs"));
  assert_true(num(o, "net_bytes_in") > 0);
  assert_true(num(o, "net_msgs_in") > 0);
  cJSON *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes")) {
    assert_true(num(n, "commits") > 0);
    assert_true(num(n, "fsyncs") > 0);
    assert_true(num(n, "fsyncs") <= num(n, "commits"));
    assert_true(num(n, "net_bytes_in") > 0);
    assert_true(num(n, "net_msgs_in") > 0);
    assert_true(num(n, "net_bytes_out") > 0);
    assert_true(num(n, "net_msgs_out") > 0);
    assert_true(num(n, "coord_msgs") > 0);
  }
  /* No fault yet: what the engine sent, the nodes received (and more:
   * their peers' gossip). */
  assert_true(nodes_sum(o, "net_bytes_in", NULL) >= num(o, "net_bytes_out"));
  assert_true(nodes_sum(o, "net_msgs_in", NULL) >= num(o, "net_msgs_out"));
  cJSON_Delete(o);
}

static void commits_go_on_with_one_node_stopped(void **state)
{
  (void)state;
  /* Nothing was written since the last test settled the counters. */
  cJSON *o = status("main");
  double gossip0 = nodes_sum(o, "gossip_bytes", "C2"), redo0 = num(o, "redo_bytes");
  cJSON_Delete(o);
  stop_member("C2", SIGTERM);
  char script[8192];
  size_t len = 0;
  len += (size_t)snprintf(script + len, sizeof script - len, "create table one_down(i);\n");
  for (int i = 0; i < 100; i++)
    len += (size_t)snprintf(script + len, sizeof script - len, "insert into one_down values(%d);\n", i);
  sql_ok(script, "");
  sql_ok("select count(*), sum(i) from one_down;", "100|4950\n");
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  wait_node_state("C2", "up", 3000);
  /* C2 catches up from its peers (gossip), not from the engine (which
   * sends nothing more: all was durable): what the peers sent it is about
   * what the engine sent each of the five other segments meanwhile (half
   * of it, to leave room for Append headers). */
  for (int i = 0; i < 100; i++) {
    o = status("main");
    int done = caught_up(o, "C2");
    cJSON_Delete(o);
    if (done)
      break;
    usleep(100000);
  }
  o = status_settled();
  assert_true(caught_up(o, "C2"));
  double redo1 = num(o, "redo_bytes");
  double gossip1 = nodes_sum(o, "gossip_bytes", "C2");
  printf("# C2 caught up: its peers gossiped %.0f bytes; the engine sent each "
         "other segment %.0f\n", gossip1 - gossip0, (redo1 - redo0) / 5);
  assert_true(gossip1 - gossip0 >= (redo1 - redo0) / 5 / 2);
  /* C2's counters started again from 0: it pulled, and stored what came. */
  assert_true(num(node_obj(o, "C2"), "gossip_msgs") > 0);
  assert_true(num(node_obj(o, "C2"), "commits") > 0);
  cJSON_Delete(o);
}

static void engine_restart_reads_the_same_data_from_storage(void **state)
{
  (void)state;
  cJSON *o = status("main");
  double epoch = num(o, "epoch");
  cJSON_Delete(o);
  stop_member("engine", SIGTERM);
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  /* A new engine, a new epoch, an empty cache: every page it needs comes
   * from the segments as of the VDL. */
  sql_ok("select count(*), sum(n), sum(length(v)) from t10k;", expect_10k);
  sql_ok("pragma integrity_check;", "ok\n");
  o = status_at_least("pages_read", 10);
  assert_true(num(o, "epoch") > epoch);
  cJSON_Delete(o);
}

/* Tried as a student would: `fault engine-crash`, then `cluster up` at
 * once, while the crashed engine is still exiting and holds its port (a
 * large engine under ASan on a busy machine takes seconds to die: it_storage
 * failed so, "cannot listen ...: address already in use"). The new engine
 * waits for the port and then serves. Here a socket holds the port for 1.5
 * s after the engine stopped. */
static void an_engine_whose_port_is_still_taken_waits_for_it(void **state)
{
  (void)state;
  stop_member("engine", SIGKILL);
  char host[64];
  snprintf(host, sizeof host, "%s", engine);
  char *colon = strrchr(host, ':');
  assert_non_null(colon);
  *colon = 0;
  int port = atoi(colon + 1);
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  assert_true(fd >= 0);
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, host, &sa.sin_addr);
  /* The killed engine's accepted conns take a moment to leave the port. */
  int rc = -1;
  for (int i = 0; i < 500 && (rc = bind(fd, (struct sockaddr *)&sa, sizeof sa)) != 0; i++)
    usleep(10000);
  if (rc != 0) {
    sh(out, sizeof out, "ss -tanp | grep ':%d '", port);
    fail_msg("cannot bind %s: %s; %s", engine, strerror(errno), out);
  }
  assert_int_equal(listen(fd, 1), 0);
  pid_t holder = fork();
  if (holder == 0) {         /* holds the port 1.5 s more, as a dying engine would */
    usleep(1500 * 1000);
    _exit(0);
  }
  close(fd);                 /* the child's copy holds it now */
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s 2>&1", bin, dir), 0);
  waitpid(holder, NULL, 0);
  sql_ok("select count(*) from t10k;", NULL);
  assert_int_equal(sh(out, sizeof out, "grep -c 'is taken: waiting' %s/log/engine.log", dir), 0);
}

static void a_database_larger_than_a_pg_spans_several(void **state)
{
  (void)state;
  /* ~3 MB in one transaction: one MTR whose records go to several PGs. */
  sql_ok("create table big(id integer primary key, b blob);"
         "insert into big with recursive g(i) as (select 1 union all select i + 1 from g "
         "where i < 3000) select i, randomblob(1000) from g;", "");
  cJSON *o = status("main");
  int npgs = cJSON_GetArraySize(cJSON_GetObjectItem(o, "pgs"));
  cJSON_Delete(o);
  assert_true(npgs >= 4);
  const char *probe = "select count(*), sum(length(b)), "
                      "group_concat(substr(hex(b), 1 + id % 1900, 16), '') from big;";
  sql_ok(probe, NULL);
  char *before = strdup(out);
  assert_non_null(strstr(before, "3000|3000000|"));
  stop_member("engine", SIGKILL);
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  sql_ok(probe, before);
  sql_ok("pragma integrity_check;", "ok\n");
  free(before);
}

static void acknowledged_commits_survive_kill_9(void **state)
{
  (void)state;
  sql_ok("create table acked(i);", "");
  for (int round = 0; round < 3; round++) {
    char q[128];
    snprintf(q, sizeof q, "insert into acked values(%d);", round);
    sql_ok(q, "");                        /* acknowledged: durable */
    stop_member("engine", SIGKILL);       /* no goodbye to the segments */
    assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
    snprintf(q, sizeof q, "select count(*) from acked;");
    char want[16];
    snprintf(want, sizeof want, "%d\n", round + 1);
    sql_ok(q, want);
  }
  sql_ok("pragma integrity_check;", "ok\n");
}

/* A random workload (fixed seed): inserts, updates, deletes, ROLLBACK,
 * savepoints, a big transaction that spills the cache and rolls back, an
 * index, VACUUM. */
static char *random_workload(unsigned seed)
{
  size_t cap = 1 << 20, len = 0;
  char *s = malloc(cap);
#define P(...) (len += (size_t)snprintf(s + len, cap - len, __VA_ARGS__))
  srand(seed);
  P("pragma cache_size=8;\n");
  P("create table rw_a(id integer primary key, k int, v text);\n");
  P("create table rw_b(x text, y blob, z real);\n");
  P("create index rw_a_k on rw_a(k);\n");
  int next = 1;
  for (int step = 0; step < 120; step++) {
    int op = rand() % 10;
    if (op < 4) {
      P("insert into rw_a(id,k,v) values(%d,%d,'%.*s');\n", next, rand() % 50,
        1 + rand() % 200, "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"
        "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"
        "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789");
      next++;
    } else if (op == 4) {
      P("update rw_a set v = v || 'u%d', k = k + 1 where k %% 7 = %d;\n", step, rand() % 7);
    } else if (op == 5) {
      P("delete from rw_a where k %% 11 = %d;\n", rand() % 11);
    } else if (op == 6) {
      P("begin; insert into rw_b values('gone%d', zeroblob(%d), 1.5); update rw_a set k = -1; "
        "rollback;\n", step, 100 + rand() % 3000);
    } else if (op == 7) {
      P("begin; insert into rw_b values('kept%d', zeroblob(10), %d.25); savepoint s1; "
        "delete from rw_a; rollback to s1; insert into rw_b values('after%d', x'0102', 2); "
        "release s1; commit;\n", step, step, step);
    } else if (op == 8) {
      /* Big enough to spill an 8-page cache, then thrown away. */
      P("begin; insert into rw_b with recursive g(value) as (select 1 union all select "
        "value + 1 from g where value < %d) select 'spill', zeroblob(900), value from g; "
        "rollback;\n", 200 + rand() % 200);
    } else {
      P("insert into rw_b with recursive g(value) as (select 1 union all select value + 1 "
        "from g where value < %d) select 'gs'||value, zeroblob(value %% 500), value * 0.5 "
        "from g;\n", 1 + rand() % 60);
    }
    if (step == 80)
      P("delete from rw_b where rowid %% 2 = 0; vacuum;\n");
  }
#undef P
  return s;
}

static void random_workload_matches_stock_sqlite(void **state)
{
  (void)state;
  char *w = random_workload(42);
  /* Stock SQLite on a local file. */
  char local[300];
  snprintf(local, sizeof local, "%s/stock.db", dir);
  int rc = sh_in(w, out, sizeof out, "sqlite3 %s 2>&1", local);
  if (rc != 0)
    fail_msg("stock sqlite3 failed: %s", out);
  char *want = malloc(sizeof out);
  sh(want, sizeof out, "sqlite3 %s \".dump rw_%%\"", local);
  /* The same through the engine. */
  sql_ok(w, NULL);
  sql_ok("pragma integrity_check;", "ok\n");
  /* Dump the volume through the extension in the sqlite3 shell. That
   * opens the volume as a second writer, which fences the engine: stop it
   * first, and start it again after. */
  stop_member("engine", SIGTERM);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, ".load %s.so\n.open file:main?vfs=auralog&coord=%s\n.dump rw_%%\n",
           getenv("AURALOG_SO") ? getenv("AURALOG_SO") : "build/auralog", coord);
  char *got = malloc(sizeof out);
  rc = sh_in(cmd, got, sizeof out, "sqlite3");
  assert_int_equal(rc, 0);
  if (strcmp(got, want) != 0) {
    FILE *f = fopen("/tmp/auralog-dump-want.sql", "w");
    fputs(want, f);
    fclose(f);
    f = fopen("/tmp/auralog-dump-got.sql", "w");
    fputs(got, f);
    fclose(f);
    fail_msg(".dump differs from stock SQLite (see /tmp/auralog-dump-{want,got}.sql)");
  }
  assert_true(strlen(got) > 1000);
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  free(want);
  free(got);
  free(w);
}

static void python_loads_the_extension_and_uses_a_volume(void **state)
{
  (void)state;
  if (access("/usr/bin/python3", X_OK) != 0)
    skip();
  char py[2048];
  snprintf(py, sizeof py,
    "import sqlite3\n"
    "c0 = sqlite3.connect(':memory:')\n"
    "c0.enable_load_extension(True)\n"
    "c0.load_extension('%s')\n"
    "uri = 'file:pyvol?vfs=auralog&coord=%s'\n"
    "db = sqlite3.connect(uri, uri=True)\n"
    "db.execute('create table p(id integer primary key, v text)')\n"
    "with db:\n"
    "    db.executemany('insert into p(v) values(?)', [('r%%d' %% i,) for i in range(500)])\n"
    "db.close()\n"
    "db = sqlite3.connect(uri, uri=True)\n"
    "print(db.execute('select count(*), min(v), max(v) from p').fetchone())\n",
    getenv("AURALOG_SO") ? getenv("AURALOG_SO") : "build/auralog", coord);
  int rc = sh_in(py, out, sizeof out, "/usr/bin/python3 - 2>&1");
  if (rc != 0)
    fail_msg("python: %s", out);
  assert_string_equal(out, "(500, 'r0', 'r99')\n");
}

/* Schema changes reach the cluster's journal with their commit's LSN
 * (vfs/ddl.c, rule D): a change whose transaction commits in a later
 * request than its statement is noted at that commit, once; one rolled
 * back, one whose statement failed, and a temporary table never are. */
static void schema_changes_reach_the_journal_with_their_commit_lsn(void **state)
{
  (void)state;
  sql_ok("begin;\ncreate table ddl_a(x);\ninsert into ddl_a values(1);\ncommit;\n", NULL);
  sql_ok("begin;\ncreate table ddl_rolled(x);\nrollback;\n", NULL);
  assert_int_not_equal(sql("create table ddl_a(x);\n"), 0);     /* exists: it fails */
  sql_ok("create temp table ddl_tmp(x);\n", NULL);
  sql_ok("drop table ddl_a;\n", NULL);
  int seen = 0;
  for (int k = 0; k < 50 && !seen; k++) {
    sh(out, OUT_SIZE, "%s journal --dir %s --kind ddl --all 2>&1", bin, dir);
    seen = strstr(out, ": drop table ddl_a at lsn ") != NULL;
    if (!seen)
      usleep(200000);          /* reported once the VDL covers it */
  }
  assert_true(seen);
  const char *c = strstr(out, ": create table ddl_a at lsn "), *d = strstr(out, ": drop table ddl_a at lsn ");
  assert_non_null(c);
  assert_null(strstr(c + 1, ": create table ddl_a at lsn "));   /* once */
  assert_null(strstr(out, "ddl_rolled"));
  assert_null(strstr(out, "ddl_tmp"));
  long long lc = atoll(c + strlen(": create table ddl_a at lsn "));
  long long ld = atoll(d + strlen(": drop table ddl_a at lsn "));
  assert_true(lc > 0 && ld > lc);
  /* Each at a commit the volume made durable: at or below the VDL now. */
  sh(out, OUT_SIZE, "%s status --dir %s --json | grep -o '\"vdl\": *[0-9]*' | head -1 | "
     "grep -o '[0-9]*$'", bin, dir);
  assert_true(atoll(out) >= ld);
}

static void wal_is_refused_with_a_clear_message(void **state)
{
  (void)state;
  assert_int_not_equal(sql("pragma journal_mode=wal;"), 0);
  assert_non_null(strstr(out, "WAL"));
  /* Bad SQL: an error, and the engine goes on. */
  assert_int_not_equal(sql("selec 1;"), 0);
  assert_non_null(strstr(out, "syntax error"));
  sql_ok("select 1+1;", "2\n");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(ten_thousand_rows_in_a_thousand_transactions),
    cmocka_unit_test(counters_show_what_the_commits_cost),
    cmocka_unit_test(commits_go_on_with_one_node_stopped),
    cmocka_unit_test(engine_restart_reads_the_same_data_from_storage),
    cmocka_unit_test(an_engine_whose_port_is_still_taken_waits_for_it),
    cmocka_unit_test(a_database_larger_than_a_pg_spans_several),
    cmocka_unit_test(acknowledged_commits_survive_kill_9),
    cmocka_unit_test(random_workload_matches_stock_sqlite),
    cmocka_unit_test(python_loads_the_extension_and_uses_a_volume),
    cmocka_unit_test(wal_is_refused_with_a_clear_message),
    cmocka_unit_test(schema_changes_reach_the_journal_with_their_commit_lsn),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: engine", tests, setup, teardown);
}
