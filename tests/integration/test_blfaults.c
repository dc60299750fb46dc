/*
 * Integration: the enhanced binlog across faults (issue 29). A ledger
 * client inserts one row per transaction, without pause, while the
 * writer is crashed and restarted in place (its recovery truncates what
 * was not durable), and once failed over to the read replica (a new
 * writer, a new epoch, the same LSN space). A named consumer applies the
 * stream into a SQLite file all along; it is killed (SIGKILL) once and
 * started again from its position.
 *
 * Then the whole stream (`auralog binlog tail --json --from 0`) must be
 * the ledger exactly: every acknowledged row's insert once, no event for
 * a row that is not in the table (a truncated commit has none), every row
 * of the table with its event once, commit LSNs rising across epochs;
 * and the consumer's file must hold the table as the volume does.
 *
 * AURALOG_BLFAULTS_KEEP=BYTES (make torture): the nodes keep only that
 * many binlog bytes beyond what the registered consumer has read
 * (node/nbinlog.c R1-R4), so retention releases behind the consumer all
 * along, and each round also stops a node (a different one each time)
 * and starts it again: the consumer, killed and resumed, still misses
 * nothing (its file holds the table), some segment must have released
 * records, and the whole-stream check reads from the oldest transaction
 * the binlog still holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/failover.h"
#include "harness.h"
#include "net/rpc.h"
#include "param.h"
#include "vfs/binapply.h"

#define MAXID 100000
static uint8_t acked[MAXID], unknown[MAXID];
static char o[8 << 20];

static struct {
  pthread_t th;
  volatile int stop;
  int next, nacked, nunknown;
} L;

static int connect_writer(struct rpc *r, int *open)
{
  char addr[ADDR_MAX_LEN + 1], why[256];
  if (*open)
    rpc_close(r);
  *open = 0;
  if (fo_writer_addr(coord, "main", addr, sizeof addr, why, sizeof why) != 0 ||
      rpc_open(r, addr, 1000, why, sizeof why) != 0)
    return -1;
  *open = 1;
  return 0;
}

static void *load_main(void *arg)
{
  (void)arg;
  struct rpc r;
  int open = 0;
  char text[128], ans[512];
  while (!L.stop && L.next < MAXID) {
    if (!open && connect_writer(&r, &open) != 0) {
      usleep(50000);
      continue;
    }
    int id = L.next++;
    snprintf(text, sizeof text, "INSERT INTO ledger VALUES(%d, %d)", id, id % 97);
    int rc = rpc_sql(&r, text, ans, sizeof ans, 3000, NULL);
    if (rc == -1 && strstr(ans, "not durable"))
      rc = -2;
    if (rc == 0) {
      acked[id] = 1;
      L.nacked++;
    } else {
      if (rc == -2) {
        unknown[id] = 1;     /* in flight at a crash: there or not */
        L.nunknown++;
      }
      connect_writer(&r, &open);
      if (!open)
        usleep(50000);
    }
  }
  if (open)
    rpc_close(&r);
  return NULL;
}

static long consumer_start(void)
{
  if (sh(o, sizeof o, "%s binlog apply --dir %s --into %s/c1.db --follow --name c1 "
         "> %s/log/c1.log 2>&1 & echo $!", bin, dir, dir, dir) != 0)
    fail_msg("binlog apply: %s", o);
  return atol(o);
}

/* AURALOG_BLFAULTS_KEEP: the nodes' retention (0: the default, 64 MiB). */
static long keep_bytes(void)
{
  const char *k = getenv("AURALOG_BLFAULTS_KEEP");
  return k ? atol(k) : 0;
}

static void restart_in_place(void)
{
  fault("engine-crash");
  usleep(300000);
  assert_int_equal(sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir), 0);
}

/* The oldest position the binlog holds (`binlog status --json`'s first),
 * as tail's --from wants it: just before it. */
static const char *first_held(void)
{
  static char pos[32];
  if (sh(o, sizeof o, "%s binlog status --dir %s --json 2>&1", bin, dir) != 0)
    fail_msg("binlog status: %s", o);
  const char *f = strstr(o, "\"first\":");
  unsigned long long first = f ? strtoull(f + 8, NULL, 10) : 0;
  snprintf(pos, sizeof pos, "%llu", first ? first - 1 : 0);
  return pos;
}

static void the_stream_is_the_ledger_across_crashes_and_a_failover(void **state)
{
  (void)state;
  long c1 = consumer_start();
  L.stop = 0;
  L.next = 1;
  assert_int_equal(pthread_create(&L.th, NULL, load_main, NULL), 0);
  static const char *const nodes[] = {"A1", "B2", "C1", "A2"};
  for (int round = 0; round < 4; round++) {
    usleep(1500000);
    if (keep_bytes()) {      /* a node away for a while, under retention */
      char what[64];
      snprintf(what, sizeof what, "node-stop %s", nodes[round]);
      fault(what);
      usleep(700000);
      snprintf(what, sizeof what, "node-start %s", nodes[round]);
      fault(what);
    }
    if (round == 1) {
      kill((pid_t)c1, SIGKILL);   /* the consumer dies mid-stream ... */
      restart_in_place();
      if (keep_bytes())
        usleep(3000000);          /* ... and stays away while retention runs */
      c1 = consumer_start();      /* ... and resumes from its position */
    } else if (round == 2) {
      char addr[ADDR_MAX_LEN + 1], why[256], to[64];
      assert_int_equal(fo_writer_addr(coord, "main", addr, sizeof addr, why, sizeof why), 0);
      snprintf(to, sizeof to, "127.0.0.1:%d", base + REPLICA_PORT_OFFSET);
      if (sh(o, sizeof o, "%s failover --to %s --coord %s 2>&1", bin, to, coord) != 0)
        fail_msg("auralog failover: %s", o);
      usleep(500000);
      assert_int_equal(sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir), 0);
    } else {
      restart_in_place();
    }
  }
  usleep(1000000);
  L.stop = 1;
  pthread_join(L.th, NULL);
  print_message("ledger: %d acknowledged, %d unknown outcomes\n", L.nacked, L.nunknown);
  assert_true(L.nacked > 50);

  /* The table, from the writer. */
  static uint8_t in_table[MAXID];
  memset(in_table, 0, sizeof in_table);
  struct rpc r;
  int open = 0, rows = 0;
  assert_int_equal(connect_writer(&r, &open), 0);
  assert_int_equal(rpc_sql(&r, "SELECT id FROM ledger ORDER BY id", o, sizeof o, 30000, NULL), 0);
  rpc_close(&r);
  for (char *p = strtok(o, "\n"); p; p = strtok(NULL, "\n")) {
    int id = atoi(p);
    assert_true(id > 0 && id < MAXID && !in_table[id]);
    in_table[id] = 1;
    rows++;
  }
  for (int id = 1; id < L.next; id++)
    if (acked[id] && !in_table[id])
      fail_msg("row %d was acknowledged but is not in the table", id);

  /* The whole stream, once the binlog has the last commit (a beacon's
   * time after the writer goes idle). */
  static uint8_t seen[MAXID];
  int events = 0, first_seen = 0;
  for (int tries = 0; tries < 40; tries++) {
    memset(seen, 0, sizeof seen);
    events = 0;
    /* Under retention, from the oldest transaction held: what the whole
     * check below then holds is that no row before it is missing from the
     * consumer's file (it read them before they were released). */
    if (sh(o, sizeof o, "%s binlog tail --dir %s --from %s --json 2>&1", bin, dir,
           keep_bytes() ? first_held() : "0") != 0)
      fail_msg("binlog tail: %s", o);
    uint64_t prev = 0;
    for (char *p = strtok(o, "\n"); p; p = strtok(NULL, "\n")) {
      cJSON *e = cJSON_Parse(p);
      if (e == NULL)
        fail_msg("binlog tail printed a line that is no JSON: %s", p);
      const char *op = cJSON_GetObjectItem(e, "op")->valuestring;
      const char *tab = cJSON_GetObjectItem(e, "table")->valuestring;
      uint64_t lsn = (uint64_t)cJSON_GetObjectItem(e, "commit_lsn")->valuedouble;
      assert_true(lsn >= prev);
      prev = lsn;
      if (strcmp(op, "insert") == 0 && strcmp(tab, "ledger") == 0) {
        int id = cJSON_GetObjectItem(e, "rowid")->valueint;
        assert_true(id > 0 && id < MAXID);
        if (seen[id]++)
          fail_msg("row %d has its insert twice in the stream", id);
        if (!in_table[id])
          fail_msg("row %d's insert is in the stream (commit %llu) but the row is not in the "
                   "table: a truncated commit's events", id, (unsigned long long)lsn);
        events++;
      }
      cJSON_Delete(e);
    }
    /* Under retention: the rows from the first one the stream holds on
     * (those before it were released). */
    first_seen = 0;
    for (int id = 1; id < L.next && !first_seen; id++)
      if (seen[id])
        first_seen = id;
    int want = rows;
    for (int id = 1; keep_bytes() && id < first_seen; id++)
      want -= in_table[id];
    if (events == want)
      break;
    usleep(250000);
  }
  int missing = 0, first_missing = 0, from = keep_bytes() ? first_seen : 1;
  for (int id = from; id < L.next; id++)
    if (in_table[id] && !seen[id] && missing++ == 0)
      first_missing = id;
  print_message("stream: %d inserts; table %d rows; %d rows without their insert (first %d); "
                "ids up to %d\n", events, rows, missing, first_missing, L.next);
  for (int id = from; id < L.next; id++)
    if (in_table[id] && !seen[id])
      fail_msg("row %d is in the table (%s) but its insert is not in the stream", id,
               acked[id] ? "acknowledged" : unknown[id] ? "outcome unknown" : "?");
  if (keep_bytes()) {
    /* Every row below the first the stream holds was released; the
     * consumer's file must still hold them all (below). */
    print_message("retention (%ld bytes): the binlog holds the inserts of rows from %d on; "
                  "those before were released\n", keep_bytes(), first_seen);
    assert_true(first_seen > 1);   /* it did release something */
  } else {
    assert_int_equal(events, rows);
  }

  /* The consumer, killed once and resumed, holds the same table. */
  sqlite3 *db;
  int frows = -1;
  /* It applies a batch per SQLite transaction (binapply_txns); on a
   * machine loaded by other tests it may still be behind when the load
   * stops, so it gets up to a minute. */
  for (int tries = 0; tries < 240 && frows != rows; tries++) {
    usleep(250000);
    char path[600];
    snprintf(path, sizeof path, "%s/c1.db", dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM ledger", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
      frows = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  kill((pid_t)c1, SIGTERM);
  assert_int_equal(frows, rows);
  print_message("the stream: %d inserts, the table's %d rows, the consumer's file %d rows\n",
                events, rows, frows);
}

static int setup(void **state)
{
  (void)state;
  if (keep_bytes()) {
    char k[32];
    snprintf(k, sizeof k, "%ld", keep_bytes());
    setenv("AURALOG_BINLOG_KEEP_BYTES", k, 1);   /* reaches the nodes through `cluster up` */
  }
  if (cluster_start_with("blfaults", " --binlog enhanced --replicas 1") != 0)
    return -1;
  setenv("AURALOG_COORD", coord, 1);
  sql_ok("CREATE TABLE ledger(id INTEGER PRIMARY KEY, amount INTEGER)", "");
  return 0;
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
    cmocka_unit_test(the_stream_is_the_ledger_across_crashes_and_a_failover),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: the binlog across faults", tests, setup,
                                     teardown);
}
