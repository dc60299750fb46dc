/*
 * Integration: the community binlog (issue 29; vfs/community.c), tried as
 * an instructor would before lab 13: `cluster up --binlog community`, and
 * the engine's binlog file (DIR/binlog/main.binlog) read directly.
 *
 *  - every acknowledged commit with row events has exactly one frame,
 *    whose XID is the LSN its client was answered with, in commit order;
 *    a rolled-back transaction has none;
 *  - an engine that dies after the binlog's fsync, before the commit
 *    record (AURALOG_BINLOG_CRASH=after-binlog), loses nothing: the
 *    restart reads the file, finds the transaction prepared whole above
 *    the VDL, and rolls it forward (its row is there, once);
 *  - one that dies after the prepare, before the binlog
 *    (after-prepare), rolls it back: no row, no frame; and the next
 *    commits go on, each with its frame;
 *  - the restart's recovery scan reads every frame (auralog_stats).
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
#include "vfs/blfile.h"

static char o[1 << 20];

struct frames {
  uint64_t xid[4096];
  size_t n;
};

static void on_frame(void *arg, uint64_t xid, const uint8_t *p, size_t n, uint64_t off)
{
  struct frames *f = arg;
  (void)p;
  (void)n;
  (void)off;
  if (f->n < sizeof f->xid / sizeof f->xid[0])
    f->xid[f->n++] = xid;
}

static void read_frames(struct frames *f)
{
  char path[512], why[300];
  snprintf(path, sizeof path, "%s/binlog/main.binlog", dir);
  f->n = 0;
  if (blf_read_from(path, 0, on_frame, f, why, sizeof why) != 0)
    fail_msg("reading the binlog: %s", why);
}

static int has(const struct frames *f, uint64_t xid)
{
  int n = 0;
  for (size_t i = 0; i < f->n; i++)
    n += f->xid[i] == xid;
  return n;
}

/* One autocommit INSERT; its commit LSN (0: it failed). */
static uint64_t insert(int id, const char *v)
{
  struct rpc r;
  char why[256], q[256];
  uint64_t lsn = 0;
  if (rpc_open(&r, engine, 5000, why, sizeof why) != 0)
    return 0;
  snprintf(q, sizeof q, "INSERT INTO l VALUES(%d, '%s')", id, v);
  int rc = rpc_sql(&r, q, o, sizeof o, 10000, &lsn);
  rpc_close(&r);
  return rc == 0 ? lsn : 0;
}

static void restart(const char *crash)
{
  fault("engine-crash");
  if (crash)
    setenv("AURALOG_BINLOG_CRASH", crash, 1);   /* reaches the engine through `cluster up` */
  else
    unsetenv("AURALOG_BINLOG_CRASH");
  assert_int_equal(sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir), 0);
  unsetenv("AURALOG_BINLOG_CRASH");
}

static void each_commit_has_one_frame_and_a_crash_keeps_them_agreed(void **state)
{
  (void)state;
  sql_ok("CREATE TABLE l(id INTEGER PRIMARY KEY, v TEXT)", "");
  uint64_t lsn[20];
  for (int i = 0; i < 20; i++)
    assert_true((lsn[i] = insert(i, "row")) > 0);
  sql_ok("BEGIN; INSERT INTO l VALUES(100, 'rolled back'); ROLLBACK", "");
  struct frames f;
  read_frames(&f);
  assert_int_equal(f.n, 21);             /* the CREATE, and the 20 */
  for (int i = 0; i < 20; i++) {
    assert_int_equal(has(&f, lsn[i]), 1);
    assert_true(i == 0 || lsn[i] > lsn[i - 1]);
  }
  for (size_t i = 1; i < f.n; i++)
    assert_true(f.xid[i] > f.xid[i - 1]);

  /* Dies after the binlog's fsync: the commit is in the file, so it
   * rolls forward. Its client saw the connection close. */
  restart("after-binlog");
  assert_int_equal(insert(200, "after the binlog"), 0);
  restart(NULL);
  sql_ok("SELECT count(*) FROM l WHERE id = 200", "1\n");
  read_frames(&f);
  assert_int_equal(f.n, 22);
  assert_int_equal(sql("SELECT auralog_stats()"), 0);
  cJSON *st = cJSON_Parse(out), *bl = cJSON_GetObjectItem(st, "binlog");
  assert_non_null(bl);
  assert_string_equal(cJSON_GetObjectItem(bl, "mode")->valuestring, "community");
  assert_int_equal(cJSON_GetObjectItem(bl, "scan_frames")->valueint, 22);
  assert_int_equal(cJSON_GetObjectItem(bl, "rolled_forward")->valueint, 1);
  cJSON_Delete(st);

  /* Dies after the prepare: not in the file, so rolled back; then the
   * next commits go on. */
  restart("after-prepare");
  assert_int_equal(insert(300, "after the prepare"), 0);
  restart(NULL);
  sql_ok("SELECT count(*) FROM l WHERE id = 300", "0\n");
  uint64_t a = insert(301, "next"), b = insert(302, "next");
  assert_true(a > 0 && b > a);
  read_frames(&f);
  assert_int_equal(f.n, 24);
  assert_int_equal(has(&f, a), 1);
  assert_int_equal(has(&f, b), 1);
  sql_ok("SELECT count(*) FROM l", "23\n");
}

static int setup(void **state)
{
  (void)state;
  return cluster_start_with("blcommunity", " --binlog community");
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
    cmocka_unit_test(each_commit_has_one_frame_and_a_crash_keeps_them_agreed),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: the community binlog", tests, setup,
                                     teardown);
}
