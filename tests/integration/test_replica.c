/*
 * Integration: read replicas (paper §4.2.4; vfs/feed.c, vfs/rvol.h,
 * vfs/rapply.h) on a real cluster with its replica R1, both with a small
 * buffer cache (64 pages), so that the replica both applies the stream to
 * cached pages and reads other pages from storage at its read point.
 *
 * Differential: a random workload (fixed seed) of transactions on the
 * writer (transfers between accounts, which keep the sum; new accounts
 * with multi-page blobs; deletions; and now and then a transaction that
 * inserts a few hundred rows) notes, after each commit, its commit LSN and
 * the writer's digest of the table. Between commits the replica is asked,
 * in one read transaction, for the same digest and its read point. The read
 * point must be the LSN of a commit made so far (never above the VDL, never
 * inside an MTR: a CPL), and the replica's digest must be the writer's at
 * that commit. At the end the replica catches up with the last commit.
 * Status (and viz) show the replica's applied VDL, lag and minimum read
 * point, and the volume's PGMRPL is at most every read point.
 *
 * Writes on the replica (INSERT, DELETE, CREATE) fail with a clear error
 * and change nothing. With no write quorum (AZ A and a node down), a
 * commit the writer shipped, and streamed, is not shown by the replica,
 * whose read point stays put, until the nodes return and it is durable.
 * While the writer commits transfers as fast as it can, every scan of the
 * whole table on the replica shows the same total (one read point per
 * read transaction, however the stream moves it meanwhile). A read
 * transaction left open on the replica holds the volume's PGMRPL, and
 * every segment's, at its read point while the writer goes on. A writer that crashes and recovers (a new epoch) is
 * followed: the replica subscribes again, starts over from storage, and
 * shows the new writer's commits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "net/rpc.h"

static char replica[64];
static struct rpc W, R;                 /* to the writer, to the replica */

/* Commits of the differential workload. Each costs more as the table
 * grows (the digest scans it through a 64-page cache); 250 take ~15 s,
 * with some 250 replica reads checked at a commit's LSN. */
#define NCOMMITS 250
static uint64_t lsns[NCOMMITS];          /* commits made, in order */
static char *digests[NCOMMITS];          /* the writer's digest after each */
static size_t ncommits;

#define DIGEST "SELECT count(*), total(bal), total(length(pad)), " \
               "group_concat(id || ':' || bal, ',') FROM (SELECT * FROM acct ORDER BY id)"

/* Run text on r: 0 and its rows as a|b lines in o, *lsn its commit LSN;
 * -1 and the error in o. */
static int run(struct rpc *r, const char *text, char *o, size_t n, uint64_t *lsn)
{
  return rpc_sql(r, text, o, n, 30000, lsn) == 0 ? 0 : -1;
}

static void run_ok(struct rpc *r, const char *text, char *o, size_t n, uint64_t *lsn)
{
  if (run(r, text, o, n, lsn) != 0)
    fail_msg("%s: %s", text, o);
}

/* The replica's digest and read point, from one read transaction: the
 * digest's SELECT takes the SHARED lock, which the read point cannot move
 * under (rvol.h, R3). */
static void replica_read(char *digest, size_t n, uint64_t *rp)
{
  static char o[1 << 20];
  run_ok(&R, "BEGIN; " DIGEST "; SELECT auralog_read_point(); COMMIT;", o, sizeof o, NULL);
  char *nl = strrchr(o, '\n');
  assert_non_null(nl);
  *nl = 0;
  char *last = strrchr(o, '\n');
  assert_non_null(last);
  *rp = strtoull(last + 1, NULL, 10);
  last[1] = 0;                   /* the digest's row, with its newline */
  snprintf(digest, n, "%s", o);
}

/* The writer's digest at read point rp: the last commit at or below it. */
static const char *digest_at(uint64_t rp)
{
  const char *d = NULL;
  for (size_t i = 0; i < ncommits && lsns[i] <= rp; i++)
    d = digests[i];
  return d;
}

static int is_commit(uint64_t rp)
{
  for (size_t i = 0; i < ncommits; i++)
    if (lsns[i] == rp)
      return 1;
  return 0;
}

static void commit(const char *text)
{
  static char o[1 << 20];
  uint64_t lsn = 0;
  run_ok(&W, text, o, sizeof o, &lsn);
  if (lsn == 0)
    return;                      /* it changed nothing (no MTR) */
  assert_true(ncommits == 0 || lsn > lsns[ncommits - 1]);
  assert_true(ncommits < NCOMMITS);
  run_ok(&W, DIGEST, o, sizeof o, NULL);
  lsns[ncommits] = lsn;
  digests[ncommits++] = strdup(o);
}

static uint64_t seed = 1414;
static uint32_t rnd(uint32_t n)
{
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)((seed >> 33) % n);
}

static int setup(void **state)
{
  (void)state;
  if (cluster_start_with("replica", " --cache 64") != 0)
    return -1;
  snprintf(replica, sizeof replica, "127.0.0.1:%d", base + REPLICA_PORT_OFFSET);
  char why[256];
  if (rpc_open(&W, engine, 2000, why, sizeof why) != 0 ||
      rpc_open(&R, replica, 2000, why, sizeof why) != 0) {
    fprintf(stderr, "%s\n", why);
    return -1;
  }
  return 0;
}

static void test_differential(void **state)
{
  (void)state;
  static char o[1 << 20], got[1 << 20];
  commit("CREATE TABLE acct(id INTEGER PRIMARY KEY, bal INTEGER, pad BLOB);"
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50) "
         "INSERT INTO acct SELECT x, 100, randomblob(300) FROM c;");
  int next_id = 51, checks = 0, cpl_checks = 0;
  for (int tries = 0; ncommits < NCOMMITS - 1 && tries < 2 * NCOMMITS; tries++) {
    char t[1024];
    int k = (int)rnd(10);
    if (k < 6) {                     /* transfers: the sum stays */
      size_t len = (size_t)snprintf(t, sizeof t, "BEGIN;");
      for (int i = 0, m = 1 + (int)rnd(4); i < m; i++) {
        int a = 1 + (int)rnd((uint32_t)next_id), b = 1 + (int)rnd((uint32_t)next_id);
        len += (size_t)snprintf(t + len, sizeof t - len,
                                "UPDATE acct SET bal = bal - 7 WHERE id = %d;"
                                "UPDATE acct SET bal = bal + 7 WHERE id = %d;", a, b);
      }
      snprintf(t + len, sizeof t - len, "COMMIT;");
    } else if (k < 8) {              /* a new account over several pages */
      snprintf(t, sizeof t, "INSERT INTO acct VALUES(%d, 0, randomblob(%u))", next_id++,
               1000 + rnd(9000));
    } else if (k < 9) {
      snprintf(t, sizeof t, "DELETE FROM acct WHERE id = %d AND bal >= 100",
               1 + (int)rnd((uint32_t)next_id));
    } else {                         /* a big MTR: hundreds of rows */
      snprintf(t, sizeof t, "WITH RECURSIVE c(x) AS (SELECT %d UNION ALL SELECT x + 1 "
               "FROM c WHERE x < %d) INSERT INTO acct SELECT x, 0, randomblob(200) FROM c;",
               next_id, next_id + 299);
      next_id += 300;
    }
    commit(t);
    /* Ask the replica, sometimes several times, sometimes not at all. */
    for (int a = (int)rnd(3); a > 0; a--) {
      uint64_t rp;
      replica_read(got, sizeof got, &rp);
      if (rp == 0)
        continue;                    /* not serving yet */
      assert_true(rp <= lsns[ncommits - 1]);       /* never above the VDL */
      if (rp >= lsns[0]) {
        /* A CPL: whole MTRs only; and exactly the writer's data there. */
        if (!is_commit(rp))
          fail_msg("the replica reads at %llu, no commit's LSN (an MTR's middle?)",
                   (unsigned long long)rp);
        cpl_checks++;
        const char *want = digest_at(rp);
        if (strcmp(got, want) != 0) {
          size_t d = 0;
          while (got[d] && got[d] == want[d])
            d++;
          d = d > 40 ? d - 40 : 0;
          fail_msg("replica at %llu (commit %zu of %zu) shows\n...%.200s\nthe writer had\n"
                   "...%.200s", (unsigned long long)rp, ncommits, ncommits, got + d, want + d);
        }
      }
      checks++;
    }
  }
  /* It catches up with the last commit. */
  uint64_t rp = 0, last = lsns[ncommits - 1];
  unsigned long long until = now_ms() + 10000;
  while (now_ms() < until) {
    replica_read(got, sizeof got, &rp);
    if (rp == last)
      break;
    usleep(20000);
  }
  assert_int_equal(rp, last);
  assert_string_equal(got, digests[ncommits - 1]);
  run_ok(&W, DIGEST, o, sizeof o, NULL);
  assert_string_equal(got, o);
  print_message("%zu commits, %d replica reads, %d at a commit's LSN checked\n", ncommits,
                checks, cpl_checks);
  assert_true(cpl_checks > NCOMMITS / 4);

  /* Status: the replica's applied VDL, lag and minimum read point; the
   * PGMRPL at most every read point. (Reports lag by a period.) */
  until = now_ms() + 5000;
  int seen = 0;
  while (!seen && now_ms() < until) {
    cJSON *st = status("main");
    cJSON *reps = cJSON_GetObjectItem(st, "replicas"), *r0 = cJSON_GetArrayItem(reps, 0);
    double vdl = cJSON_GetObjectItem(st, "vdl")->valuedouble;
    double pgmrpl = cJSON_GetObjectItem(st, "pgmrpl")->valuedouble;
    if (r0 && cJSON_GetObjectItem(r0, "applied_vdl")->valuedouble == (double)last &&
        vdl == (double)last) {
      assert_string_equal(cJSON_GetObjectItem(r0, "addr")->valuestring, replica);
      assert_true(cJSON_GetObjectItem(r0, "lag_lsn")->valuedouble == 0);
      assert_true(cJSON_GetObjectItem(r0, "min_read_point")->valuedouble == (double)last);
      assert_true(cJSON_GetObjectItem(r0, "lag_ms")->valuedouble < 5000);
      assert_true(pgmrpl <= cJSON_GetObjectItem(r0, "min_read_point")->valuedouble);
      assert_true(pgmrpl > 0 && pgmrpl <= vdl);
      seen = 1;
    }
    cJSON_Delete(st);
    if (!seen)
      usleep(100000);
  }
  assert_true(seen);
  /* viz draws it too. */
  static char dot[1 << 16];
  assert_int_equal(sh(dot, sizeof dot, "%s viz --coord %s --format dot 2>&1", bin, coord), 0);
  char want[128];
  snprintf(want, sizeof want, "replica %s: applied VDL %llu", replica, (unsigned long long)last);
  if (strstr(dot, want) == NULL || strstr(dot, "PGMRPL") == NULL)
    fail_msg("viz does not show '%s' and the PGMRPL", want);
}

static void test_writes_refused(void **state)
{
  (void)state;
  static char o[1 << 16], before[1 << 20], after[1 << 20];
  run_ok(&W, DIGEST, before, sizeof before, NULL);
  const char *writes[] = {
    "INSERT INTO acct VALUES(999999, 1, NULL)",
    "DELETE FROM acct",
    "CREATE TABLE other(x)",
    "BEGIN; UPDATE acct SET bal = 0; COMMIT;",
  };
  for (size_t i = 0; i < sizeof writes / sizeof *writes; i++) {
    assert_int_equal(run(&R, writes[i], o, sizeof o, NULL), -1);
    if (strstr(o, "read replica") == NULL || strstr(o, "serves reads only") == NULL)
      fail_msg("%s on the replica: '%s'", writes[i], o);
  }
  run(&R, "ROLLBACK", o, sizeof o, NULL);   /* the BEGIN of the last one, if it stayed */
  run_ok(&W, DIGEST, after, sizeof after, NULL);
  assert_string_equal(before, after);
  /* It still reads. */
  run_ok(&R, "SELECT count(*) FROM acct", o, sizeof o, NULL);
}

/* No quorum (AZ A and node B1 down): a commit is shipped and streamed to
 * the replica but cannot become durable; the replica holds its records and
 * must not show them, nor move its read point. When the nodes return, the
 * commit becomes durable and the replica shows it. */
static void test_never_above_the_vdl(void **state)
{
  (void)state;
  static char o[1 << 16];
  uint64_t rp0 = 0, rp;
  run_ok(&R, "BEGIN; SELECT count(*) FROM acct WHERE id = 888888; "
         "SELECT auralog_read_point(); COMMIT;", o, sizeof o, NULL);
  assert_int_equal(sscanf(o, "0\n%llu", (unsigned long long *)&rp0), 1);
  fault("az-down A");
  fault("node-stop B1");
  sh(NULL, 0, "%s sql --engine %s 'INSERT INTO acct VALUES(888888, 1, randomblob(5000))' "
     ">/dev/null 2>&1 &", bin, engine);
  unsigned long long until = now_ms() + 2500;
  int held = 0;
  while (now_ms() < until) {
    run_ok(&R, "BEGIN; SELECT count(*) FROM acct WHERE id = 888888; "
           "SELECT auralog_read_point(); COMMIT;", o, sizeof o, NULL);
    unsigned long long n = 9, p = 0;
    assert_int_equal(sscanf(o, "%llu\n%llu", &n, &p), 2);
    if (n != 0 || p != rp0)
      fail_msg("with no write quorum the replica shows %llu rows at read point %llu "
               "(it was at %llu)", n, p, (unsigned long long)rp0);
    run_ok(&R, "SELECT auralog_stats()", o, sizeof o, NULL);
    held |= strstr(o, "\"pending\":0,") == NULL;   /* the records came, and wait */
    usleep(100000);
  }
  assert_true(held);
  fault("az-up A");
  fault("node-start B1");
  until = now_ms() + 20000;
  int shown = 0;
  while (!shown && now_ms() < until) {
    run_ok(&R, "BEGIN; SELECT count(*) FROM acct WHERE id = 888888; "
           "SELECT auralog_read_point(); COMMIT;", o, sizeof o, NULL);
    unsigned long long n = 0, p = 0;
    sscanf(o, "%llu\n%llu", &n, &p);
    rp = p;
    shown = n == 1;
    if (!shown)
      usleep(100000);
  }
  if (!shown)
    fail_msg("the commit never reached the replica (read point %llu)", (unsigned long long)rp);
  assert_true(rp > rp0);
}

/* One read point per read transaction (rvol.h, R3), while the writer
 * commits transfers (which keep the total) as fast as it can: every scan
 * of the whole table on the replica shows the same total. A read point
 * that moved under a scan would mix two states of the table. */
static void test_a_scan_sees_one_read_point(void **state)
{
  (void)state;
  static char o[1 << 16];
  run_ok(&W, "CREATE TABLE bank(id INTEGER PRIMARY KEY, bal INTEGER, pad BLOB);"
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) "
         "INSERT INTO bank SELECT x, 100, randomblob(200) FROM c;", o, sizeof o, NULL);
  /* The replica applies the table a few ms after the writer's reply (its
   * lag): wait for it before the scans, which check every row. */
  unsigned long long until = now_ms() + 10000;
  while ((run(&R, "SELECT count(*) FROM bank;", o, sizeof o, NULL) != 0 ||
          strcmp(o, "3000\n") != 0) && now_ms() < until)
    usleep(20000);
  run_ok(&R, "SELECT count(*) FROM bank;", o, sizeof o, NULL);
  assert_string_equal(o, "3000\n");
  char path[300], done[300];
  snprintf(path, sizeof path, "%s/transfers.sql", dir);
  snprintf(done, sizeof done, "%s/transfers.done", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (int i = 0; i < 3000; i++) {
    int a = 1 + (int)rnd(3000), b = 1 + (int)rnd(3000), m = 1 + (int)rnd(50);
    fprintf(f, "BEGIN; UPDATE bank SET bal = bal - %d WHERE id = %d; "
            "UPDATE bank SET bal = bal + %d WHERE id = %d; COMMIT;\n", m, a, m, b);
  }
  fclose(f);
  sh(NULL, 0, "(%s sql --engine %s < %s > %s.out 2>&1; touch %s) > /dev/null 2>&1 &", bin, engine, path, path,
     done);
  int scans = 0, moved = 0;
  uint64_t first_rp = 0, rp = 0;
  while (access(done, F_OK) != 0 && scans < 5000) {
    run_ok(&R, "BEGIN; SELECT total(bal), count(*), total(length(pad)) FROM bank; "
           "SELECT auralog_read_point(); COMMIT;", o, sizeof o, NULL);
    if (strncmp(o, "300000.0|3000|600000.0\n", 23) != 0)
      fail_msg("a scan on the replica saw %s (a mix of two read points?)", o);
    rp = strtoull(strchr(o, '\n') + 1, NULL, 10);
    if (first_rp == 0)
      first_rp = rp;
    moved += rp != first_rp;
    scans++;
  }
  print_message("%d scans, the read point moved from %llu to %llu meanwhile\n", scans,
                (unsigned long long)first_rp, (unsigned long long)rp);
  assert_true(moved > 0);       /* the replica kept up while being read */
  assert_true(scans > 5);
}

/* The PGMRPL is the minimum over the writer and every replica, and the
 * segments hear it: a read transaction left open on the replica holds its
 * read point (for up to REPLICA_MAX_READ_AGE_MS) while the writer commits, and
 * status shows the PGMRPL, every segment's PGMRPL and GC point at or
 * below that read point, the VDL above it. Once the reader is gone, the
 * PGMRPL follows the VDL again. */
static void test_pgmrpl_holds_for_a_replica_reader(void **state)
{
  (void)state;
  static char o[1 << 16];
  struct rpc R2;
  char why[256];
  assert_int_equal(rpc_open(&R2, replica, 2000, why, sizeof why), 0);
  run_ok(&R2, "BEGIN; SELECT count(*) FROM bank; SELECT auralog_read_point();", o, sizeof o,
         NULL);
  uint64_t rp0 = strtoull(strchr(o, '\n') + 1, NULL, 10);
  unsigned long long t0 = now_ms();
  for (int i = 0; i < 40; i++) {
    char t[200];
    snprintf(t, sizeof t, "UPDATE bank SET bal = bal + 1 WHERE id = %d", 1 + i);
    run_ok(&W, t, o, sizeof o, NULL);
  }
  int seen = 0;
  while (!seen && now_ms() - t0 < REPLICA_MAX_READ_AGE_MS - 1000) {
    cJSON *st = status("main");
    double vdl = cJSON_GetObjectItem(st, "vdl")->valuedouble;
    double pgmrpl = cJSON_GetObjectItem(st, "pgmrpl")->valuedouble;
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "replicas"), 0);
    if (vdl > (double)rp0 && r0) {
      assert_true(cJSON_GetObjectItem(r0, "min_read_point")->valuedouble == (double)rp0);
      if (pgmrpl > (double)rp0)
        fail_msg("pgmrpl %.0f above the replica reader's read point %llu (vdl %.0f)", pgmrpl,
                 (unsigned long long)rp0, vdl);
      cJSON *pg, *seg;
      cJSON_ArrayForEach(pg, cJSON_GetObjectItem(st, "pgs"))
        cJSON_ArrayForEach(seg, cJSON_GetObjectItem(pg, "segments")) {
          cJSON *sp = cJSON_GetObjectItem(seg, "pgmrpl"), *gc = cJSON_GetObjectItem(seg, "gc_lsn");
          if ((sp && sp->valuedouble > (double)rp0) || (gc && gc->valuedouble > (double)rp0))
            fail_msg("a segment heard pgmrpl %.0f / gc point %.0f, above the replica reader's "
                     "read point %llu", sp ? sp->valuedouble : -1, gc ? gc->valuedouble : -1,
                     (unsigned long long)rp0);
        }
      seen = pgmrpl == (double)rp0;
    }
    cJSON_Delete(st);
    if (!seen)
      usleep(100000);
  }
  assert_true(seen);
  run_ok(&R2, "COMMIT", o, sizeof o, NULL);
  rpc_close(&R2);
  /* Without the reader, the PGMRPL catches up with the VDL. */
  unsigned long long until = now_ms() + 10000;
  int caught = 0;
  while (!caught && now_ms() < until) {
    cJSON *st = status("main");
    caught = cJSON_GetObjectItem(st, "pgmrpl")->valuedouble ==
             cJSON_GetObjectItem(st, "vdl")->valuedouble;
    cJSON_Delete(st);
    if (!caught)
      usleep(100000);
  }
  assert_true(caught);
}

static void test_follows_a_new_writer(void **state)
{
  (void)state;
  static char o[1 << 16];
  rpc_close(&W);
  fault("engine-crash");
  assert_int_equal(sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir), 0);
  char why[256];
  assert_int_equal(rpc_open(&W, engine, 5000, why, sizeof why), 0);
  uint64_t lsn = 0;
  run_ok(&W, "INSERT INTO acct VALUES(777777, 5, NULL)", o, sizeof o, &lsn);
  unsigned long long until = now_ms() + 15000;
  int ok = 0;
  while (!ok && now_ms() < until) {
    if (run(&R, "SELECT bal FROM acct WHERE id = 777777", o, sizeof o, NULL) == 0 &&
        strcmp(o, "5\n") == 0)
      ok = 1;
    else
      usleep(50000);
  }
  if (!ok)
    fail_msg("the replica never showed the new writer's commit %llu: %s",
             (unsigned long long)lsn, o);
  run_ok(&R, "SELECT auralog_stats()", o, sizeof o, NULL);
  assert_non_null(strstr(o, "\"resyncs\":1"));
}

/* A replica frozen (SIGSTOP) past REPLICA_GONE_MS no longer holds the
 * PGMRPL (feed.c: the writer lets its floor go, so GC goes on); run again,
 * it is dropped, subscribes again and starts over from storage, and soon
 * reads what the writer committed while it was frozen. */
static void test_a_silent_replica_starts_over(void **state)
{
  (void)state;
  static char o[1 << 20];
  pid_t pid = pid_of("R1");
  assert_true(pid > 0);
  run_ok(&R, "SELECT auralog_stats()", o, sizeof o, NULL);
  const char *rs = strstr(o, "\"resyncs\":");
  assert_non_null(rs);
  int resyncs = atoi(rs + 10);
  assert_int_equal(kill(pid, SIGSTOP), 0);
  unsigned long long t0 = now_ms();
  uint64_t lsn = 0;
  int i = 0, freed = 0;
  while (now_ms() - t0 < REPLICA_GONE_MS + 2500) {
    char q[128];
    snprintf(q, sizeof q, "INSERT INTO acct VALUES(%d, %d, NULL)", 870000 + i, i);
    run_ok(&W, q, o, sizeof o, &lsn);
    i++;
    cJSON *st = status("main");
    double pgmrpl = cJSON_GetObjectItem(st, "pgmrpl")->valuedouble;
    double vdl = cJSON_GetObjectItem(st, "vdl")->valuedouble;
    cJSON_Delete(st);
    if (now_ms() - t0 > REPLICA_GONE_MS + 1500 && pgmrpl + 50 >= vdl)
      freed = 1;
    usleep(200000);
  }
  if (!freed)
    fail_msg("the PGMRPL stayed where the frozen replica held it for %d ms", REPLICA_GONE_MS);
  assert_int_equal(kill(pid, SIGCONT), 0);
  /* Heard again, it is dropped and subscribes again (a new start). */
  unsigned long long t1 = now_ms();
  int now_resyncs = resyncs;
  while (now_resyncs == resyncs && now_ms() - t1 < 5000) {
    usleep(50000);
    run_ok(&R, "SELECT auralog_stats()", o, sizeof o, NULL);
    rs = strstr(o, "\"resyncs\":");
    assert_non_null(rs);
    now_resyncs = atoi(rs + 10);
  }
  if (now_resyncs != resyncs + 1)
    fail_msg("5 s after it ran again the replica has started over %d times, not once",
             now_resyncs - resyncs);
  unsigned long long t2 = now_ms();
  /* Then it follows the writer from the new start: the writer's commits
   * while it was frozen, and one made now. */
  char q[128], want[64];
  snprintf(q, sizeof q, "INSERT INTO acct VALUES(%d, %d, NULL)", 870000 + i, i);
  run_ok(&W, q, o, sizeof o, &lsn);
  snprintf(want, sizeof want, "%d|%d\n", i + 1, i);
  int ok = 0;
  while (!ok && now_ms() - t2 < 5000) {
    ok = run(&R, "SELECT count(*), (SELECT bal FROM acct WHERE id = (SELECT max(id) FROM acct "
                 "WHERE id BETWEEN 870000 AND 879999)) FROM acct WHERE id BETWEEN 870000 AND "
                 "879999", o, sizeof o, NULL) == 0 && strcmp(o, want) == 0;
    if (!ok)
      usleep(20000);
  }
  if (!ok)
    fail_msg("5 s after it started over the replica shows '%s', not the writer's '%s' (LSN "
             "%llu)", o, want, (unsigned long long)lsn);
  print_message("the replica, frozen %d ms, started over %llu ms after it ran again and read "
                "the writer's next commit %llu ms after that\n", REPLICA_GONE_MS + 2500,
                t2 - t1, now_ms() - t2);
}

static int teardown(void **state)
{
  (void)state;
  rpc_close(&W);
  rpc_close(&R);
  for (size_t i = 0; i < ncommits; i++)
    free(digests[i]);
  cluster_stop();            /* and its directory: 112 MB left in /tmp by every run before */
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_differential),
    cmocka_unit_test(test_writes_refused),
    cmocka_unit_test(test_never_above_the_vdl),
    cmocka_unit_test(test_a_scan_sees_one_read_point),
    cmocka_unit_test(test_pgmrpl_holds_for_a_replica_reader),
    cmocka_unit_test(test_follows_a_new_writer),
    cmocka_unit_test(test_a_silent_replica_starts_over),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
