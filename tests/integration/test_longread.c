/*
 * Integration: a long reader on a read replica (seed 004; vfs/rvol.h, the
 * read-age rule; coord/hold.c). A cluster without `cluster up`'s replica
 * and two replicas of our own, each with its rule:
 *   W  --max-read-age 3000 --read-age-action warn
 *   C  --max-read-age 2000 (cancel, the default action)
 *
 * Holding and releasing (W): a read transaction left open on W while the
 * writer commits for 3 s past W's limit holds the volume's PGMRPL at its
 * read point; status names the holder (replica W, the client's address,
 * held_ms past the limit, one warning) and every segment's GC point stays
 * at or below that read point while the segments' records pile up (status
 * read_hold growth > 0). Once the reader commits, the PGMRPL follows the
 * VDL again, and GC resumes: every segment's GC point passes the old read
 * point and the records held fall below the peak. This part fails if GC
 * never resumes (checked by hand: with replica.c acking, once a reader
 * had held it for 1 s, that read point for good, it fails at "GC never
 * resumed after the reader left").
 *
 * Cancelling (C): a read transaction left open on C past 2 s while the
 * writer commits is cancelled without its client doing anything: C's
 * read point, and the PGMRPL, move past it; its next statement fails
 * with the read-age error and its transaction is rolled back; the next
 * one reads again. (Fails if the replica waits for the client: under the
 * rule before this one, a transaction served from SQLite's cache never
 * heard; and with the same hand-made fault, at "still holds".)
 *
 * Its own ports and directory (harness free_block, from the pid); the
 * replicas take the two ports after the engine's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "net/rpc.h"

static char rw[64], rc[64];              /* replica W (warn), replica C (cancel) */
static pid_t pw, pc;
static struct rpc Wr;                    /* to the writer */

/* Run text on r: 0 and the rows (a|b lines) in o; -1 and the error. */
static int run(struct rpc *r, const char *text, char *o, size_t n)
{
  return rpc_sql(r, text, o, n, 30000, NULL) == 0 ? 0 : -1;
}

static void run_ok(struct rpc *r, const char *text, char *o, size_t n)
{
  if (run(r, text, o, n) != 0)
    fail_msg("%s: %s", text, o);
}

/* Start `auralog replica` on addr with the rule args; its pid. */
static pid_t start_replica(const char *addr, const char *args)
{
  char o[64];
  if (sh(o, sizeof o, "%s replica --volume main --listen %s --engine %s --coord %s --cache 64 "
         "%s >> %s/replica-%s.log 2>&1 & echo $!", bin, addr, engine, coord, args, dir,
         strrchr(addr, ':') + 1) != 0)
    return -1;
  return (pid_t)atoi(o);
}

/* The client address a replica sees for r (its socket's own). */
static void client_addr(const struct rpc *r, char *out, size_t n)
{
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  getsockname(r->fd, (struct sockaddr *)&a, &len);
  snprintf(out, n, "127.0.0.1:%d", ntohs(a.sin_port));
}

static double num(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The segments' highest GC point, and the lowest of those holding records. */
static void gc_points(cJSON *st, double *lo, double *hi)
{
  *lo = -1;
  *hi = -1;
  cJSON *pg, *seg;
  cJSON_ArrayForEach(pg, cJSON_GetObjectItem(st, "pgs"))
    cJSON_ArrayForEach(seg, cJSON_GetObjectItem(pg, "segments")) {
      double g = num(seg, "gc_lsn");
      if (num(seg, "records") > 0 && (*lo < 0 || g < *lo))
        *lo = g;                 /* (an empty PG's segment stays at 0: nothing to free) */
      if (g > *hi)
        *hi = g;
    }
}

static void commit_some(int n, int *next)
{
  static char o[4096];
  for (int i = 0; i < n; i++, (*next)++) {
    char t[200];
    snprintf(t, sizeof t, "UPDATE t SET v = v + 1, pad = randomblob(300) WHERE id = %d",
             1 + *next % 500);
    run_ok(&Wr, t, o, sizeof o);
  }
}

static int setup(void **state)
{
  (void)state;
  if (cluster_start_with("longread", " --replicas 0") != 0)
    return -1;
  snprintf(rw, sizeof rw, "127.0.0.1:%d", base + REPLICA_PORT_OFFSET);
  snprintf(rc, sizeof rc, "127.0.0.1:%d", base + REPLICA_PORT_OFFSET + 1);
  char why[256];
  if (rpc_open(&Wr, engine, 5000, why, sizeof why) != 0) {
    fprintf(stderr, "%s\n", why);
    return -1;
  }
  static char o[4096];
  run_ok(&Wr, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, pad BLOB);"
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) "
         "INSERT INTO t SELECT x, 0, randomblob(300) FROM c;", o, sizeof o);
  pw = start_replica(rw, "--max-read-age 3000 --read-age-action warn");
  pc = start_replica(rc, "--max-read-age 2000");
  return pw > 0 && pc > 0 ? 0 : -1;
}

/* Connect to a replica and wait until it serves the table. */
static void open_replica(struct rpc *r, const char *addr)
{
  static char o[4096];
  char why[256];
  unsigned long long until = now_ms() + 20000;
  while (rpc_open(r, addr, 2000, why, sizeof why) != 0) {
    if (now_ms() > until)
      fail_msg("replica %s: %s", addr, why);
    usleep(100000);
  }
  while (run(r, "SELECT count(*) FROM t", o, sizeof o) != 0 || strcmp(o, "500\n") != 0) {
    if (now_ms() > until)
      fail_msg("replica %s never served the table: %s", addr, o);
    usleep(100000);
  }
}

static void test_reader_holds_gc_and_release_resumes_it(void **state)
{
  (void)state;
  static char o[4096];
  struct rpc R;
  open_replica(&R, rw);
  int next = 0;
  commit_some(50, &next);
  /* Let GC catch up with what is there, so that the hold is what we see. */
  usleep(2 * GC_MS * 1000);
  run_ok(&R, "BEGIN; SELECT count(*) FROM t; SELECT auralog_read_point();", o, sizeof o);
  uint64_t rp = strtoull(strchr(o, '\n') + 1, NULL, 10);
  assert_true(rp > 0);
  char me[64];
  client_addr(&R, me, sizeof me);
  unsigned long long t0 = now_ms();
  /* The writer goes on past W's limit (3 s): warn keeps the hold. */
  while (now_ms() - t0 < 4500)
    commit_some(10, &next);
  usleep(3 * HEARTBEAT_MS * 1000);            /* the segments' stats reach status */
  cJSON *st = status("main");
  cJSON *h = cJSON_GetObjectItem(st, "read_hold");
  assert_non_null(h);
  double vdl = num(st, "vdl"), lo, hi;
  gc_points(st, &lo, &hi);
  print_message("held: read point %llu, vdl %.0f, pgmrpl %.0f, gc points %.0f..%.0f, "
                "records %.0f (%+.0f), %.0f bytes (%+.0f) over %.0f ms; holder %s %s %s "
                "for %.0f ms\n", (unsigned long long)rp, vdl, num(h, "pgmrpl"), lo, hi,
                num(h, "records"), num(h, "growth_records"), num(h, "bytes"),
                num(h, "growth_bytes"), num(h, "still_ms"),
                cJSON_GetObjectItem(h, "holder")->valuestring,
                cJSON_GetObjectItem(h, "replica")->valuestring,
                cJSON_GetObjectItem(h, "client")->valuestring, num(h, "held_ms"));
  assert_true(vdl > (double)rp);
  if (num(h, "pgmrpl") != (double)rp)
    fail_msg("pgmrpl %.0f, not the open reader's read point %llu", num(h, "pgmrpl"),
             (unsigned long long)rp);
  assert_string_equal(cJSON_GetObjectItem(h, "holder")->valuestring, "replica");
  assert_string_equal(cJSON_GetObjectItem(h, "replica")->valuestring, rw);
  assert_string_equal(cJSON_GetObjectItem(h, "client")->valuestring, me);
  assert_true(num(h, "held_ms") >= 3000);
  if (hi > (double)rp)
    fail_msg("a segment's GC point %.0f passed the held read point %llu", hi,
             (unsigned long long)rp);
  assert_true(num(h, "growth_records") > 0 && num(h, "growth_bytes") > 0);
  assert_true(num(h, "still_ms") >= 3000);
  cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "replicas"), 0);
  for (int i = 0; r0 && strcmp(cJSON_GetObjectItem(r0, "addr")->valuestring, rw); i++)
    r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "replicas"), i + 1);
  assert_non_null(r0);
  assert_true(num(r0, "warned") >= 1 && num(r0, "cancelled") == 0);
  assert_string_equal(cJSON_GetObjectItem(r0, "read_age_action")->valuestring, "warn");
  double peak = num(h, "records");
  cJSON_Delete(st);
  /* The table says it too. */
  assert_int_equal(sh(o, sizeof o, "%s status --coord %s", bin, coord), 0);
  if (strstr(o, "oldest read point") == NULL || strstr(o, me) == NULL)
    fail_msg("status does not name the holder %s:\n%s", me, o);

  /* Release: the PGMRPL follows the VDL again and GC resumes. */
  run_ok(&R, "COMMIT", o, sizeof o);
  unsigned long long until = now_ms() + 20000;
  int resumed = 0;
  double glo = 0, recs = 0;
  while (!resumed && now_ms() < until) {
    commit_some(5, &next);
    st = status("main");
    gc_points(st, &glo, &hi);
    recs = num(cJSON_GetObjectItem(st, "read_hold"), "records");
    resumed = glo > (double)rp && recs < peak;
    cJSON_Delete(st);
    if (!resumed)
      usleep(200000);
  }
  if (!resumed)
    fail_msg("GC never resumed after the reader left: lowest GC point %.0f (held read point "
             "%llu), records %.0f (peak %.0f)", glo, (unsigned long long)rp, recs, peak);
  print_message("released: GC resumed within %.1f s (lowest GC point %.0f, records %.0f, "
                "peak %.0f)\n", (now_ms() - (until - 20000)) / 1000.0, glo, recs, peak);
  rpc_close(&R);
}

static void test_cancel_past_max_read_age(void **state)
{
  (void)state;
  static char o[4096];
  struct rpc R;
  open_replica(&R, rc);
  run_ok(&R, "BEGIN; SELECT count(*) FROM t; SELECT auralog_read_point();", o, sizeof o);
  uint64_t rp = strtoull(strchr(o, '\n') + 1, NULL, 10);
  int next = 1000;
  unsigned long long t0 = now_ms();
  /* Past 2 s the replica cancels it by itself: its read point and the
   * PGMRPL move on while the client says nothing. */
  int moved = 0;
  while (!moved && now_ms() - t0 < 10000) {
    commit_some(10, &next);
    cJSON *st = status("main");
    cJSON *r, *reps = cJSON_GetObjectItem(st, "replicas");
    cJSON_ArrayForEach(r, reps)
      if (strcmp(cJSON_GetObjectItem(r, "addr")->valuestring, rc) == 0 &&
          num(r, "cancelled") >= 1 && num(r, "min_read_point") > (double)rp &&
          num(st, "pgmrpl") > (double)rp)
        moved = 1;
    cJSON_Delete(st);
  }
  if (!moved)
    fail_msg("the replica still holds read point %llu %.1f s after a 2 s --max-read-age",
             (unsigned long long)rp, (now_ms() - t0) / 1000.0);
  assert_true(now_ms() - t0 >= 2000);
  /* Its client hears why, and its transaction is gone. */
  assert_int_equal(run(&R, "SELECT count(*) FROM t", o, sizeof o), -1);
  if (strstr(o, "cancelled") == NULL || strstr(o, "--max-read-age") == NULL)
    fail_msg("the cancelled reader's next statement says: %s", o);
  run_ok(&R, "SELECT count(*), auralog_read_point() FROM t", o, sizeof o);
  assert_true(strtoull(strchr(o, '|') + 1, NULL, 10) > rp);
  rpc_close(&R);
}

/* The cluster's directory goes with it (AURALOG_KEEP keeps it): every
 * run left one in /tmp before. */
static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

static void test_down(void **state)
{
  /* Our replicas are the shell's children, not ours: signal, then wait. */
  kill(pw, SIGTERM);
  kill(pc, SIGTERM);
  for (int i = 0; i < 100 && (pid_alive(pw) || pid_alive(pc)); i++)
    usleep(50000);
  rpc_close(&Wr);
  cluster_down_leaves_nothing(state);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reader_holds_gc_and_release_resumes_it),
    cmocka_unit_test(test_cancel_past_max_read_age),
    cmocka_unit_test(test_down),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
