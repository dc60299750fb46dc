/*
 * Integration: continuous backup to an object store and point-in-time
 * restore (paper Fig. 4 step 6; DESIGN.md invariant 11), on a real
 * cluster backing up to a real S3 server: SeaweedFS on loopback (weed.h),
 * `cluster up --backup s3://auralog-it`, every request signed.
 *
 *  - A ledger workload runs through the engine, with faults on the way:
 *    AZ C down and back, a node stopped and started, the engine crashed
 *    and recovered (a new epoch, a truncation), and the writer crashed
 *    for good: the replica promoted in its place (failover) writes on.
 *    After each commit the
 *    test notes its commit LSN and a dump of the ledger. Once the backup
 *    has staged them, restores to 20 of those points, chosen at random,
 *    each give a SQLite file whose dump is the one noted there; one more
 *    goes into a new volume, which an engine of its own serves.
 *  - The S3 server goes away (killed) while commits go on for longer than
 *    GC's period: the backup point stands still, the nodes log why, and
 *    once the server is back the backup catches up, and a point committed
 *    during the outage restores: the nodes kept its records for it.
 *  - The node that stages every PG (A1, the lowest id: rule U) is
 *    stopped: another takes over after BACKUP_TAKEOVER_MS, from the
 *    store's own point, and a point committed after the stop restores.
 *  - Restore refuses what it cannot make, with one clear line: a point
 *    past the backup, a volume name already taken, no destination, a
 *    time it cannot read.
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
#include <sys/stat.h>
#include <unistd.h>

#include "cli/failover.h"
#include "harness.h"
#include "weed.h"
#include "net/rpc.h"
#include "param.h"

#define NPOINTS 40

struct point {
  uint64_t lsn;
  char *dump;
};
static struct point pts[3 * NPOINTS];
static int npts;
static struct rpc eng;
static int eng_open;

static int setup(void **state)
{
  (void)state;
  static char top[128];
  snprintf(top, sizeof top, "/tmp/auralog-it-backup-s3-%d", (int)getpid());
  if (sh(NULL, 0, "rm -rf %s && mkdir -p %s", top, top) != 0)
    return -1;
  /* Its own block of ports, apart from the cluster's. */
  weed_where(top, free_block((int)getpid() * 2 + 1) + 40);
  weed_up();
  weed_keys(AK, SK);         /* the nodes `cluster up` starts inherit them */
  return cluster_start_with("backup", " --replicas 1 --failover --backup s3://auralog-it");
}

static int teardown(void **state)
{
  (void)state;
  if (eng_open)
    rpc_close(&eng);
  for (int i = 0; i < npts; i++)
    free(pts[i].dump);
  cluster_stop();
  weed_down();
  if (getenv("AURALOG_KEEP") == NULL)
    sh(NULL, 0, "rm -rf /tmp/auralog-it-backup-s3-%d", (int)getpid());
  return 0;
}

/* A connection to the writer, whoever it is now (a failover moves it:
 * the coordinator says where). */
static void engine_conn(void)
{
  char why[300], addr[64];
  for (int i = 0; !eng_open && i < 150; i++) {
    if (fo_writer_addr(coord, "main", addr, sizeof addr, why, sizeof why) == 0 &&
        rpc_open(&eng, addr, 5000, why, sizeof why) == 0)
      eng_open = 1;
    else
      usleep(200000);
  }
  if (!eng_open)
    fail_msg("no writer to talk to: %s", why);
}

#define DUMP "select id, acct, amount from ledger order by id"

/* One transaction of the workload, then its point (LSN, dump). */
static void commit_one(int i)
{
  char sql[600], o[1 << 16];
  uint64_t lsn = 0;
  switch (i % 4) {
  case 0:
    snprintf(sql, sizeof sql, "insert into ledger(acct, amount) values (%d, %d), (%d, %d)",
             i % 7, i * 10, (i + 3) % 7, -i * 10);
    break;
  case 1:
    snprintf(sql, sizeof sql, "update ledger set amount = amount + %d where acct = %d or "
             "id = (select max(id) from ledger)", i, i % 7);
    break;
  case 2:
    snprintf(sql, sizeof sql, "begin; insert into ledger(acct, amount) values (%d, 1); "
             "delete from ledger where id = (select min(id) from ledger); commit", i % 5);
    break;
  default:
    snprintf(sql, sizeof sql, "with recursive c(x) as (select 1 union all select x + 1 "
             "from c where x < 50) insert into ledger(acct, amount) select x %% 7, %d from c",
             i);
    break;
  }
  engine_conn();
  int rc = rpc_sql(&eng, sql, o, sizeof o, 10000, &lsn);
  for (int tries = 0; rc != 0 && tries < 40; tries++) {
    /* The writer went (a failover): its outcome unknown if no answer
     * came, so no point is noted for it; the next writer takes the next. */
    rpc_close(&eng);
    eng_open = 0;
    usleep(500000);
    engine_conn();
    if (rc == -2)
      return;
    rc = rpc_sql(&eng, sql, o, sizeof o, 10000, &lsn);
  }
  if (rc != 0)
    fail_msg("commit %d: %s", i, o);
  if (lsn == 0)
    fail_msg("commit %d had no commit LSN (%s): %s", i, sql, o);
  rc = rpc_sql(&eng, DUMP, o, sizeof o, 10000, NULL);
  for (int tries = 0; rc != 0 && tries < 40; tries++) {
    rpc_close(&eng);           /* the writer went between the commit and its dump */
    eng_open = 0;
    usleep(500000);
    engine_conn();
    rc = rpc_sql(&eng, DUMP, o, sizeof o, 10000, NULL);
  }
  if (rc != 0)
    fail_msg("dump: %s", o);
  assert_true(npts < (int)(sizeof pts / sizeof *pts));
  pts[npts].lsn = lsn;
  pts[npts].dump = strdup(o);
  npts++;
}

/* The backup point every PG reaches, from `backup status --json` (0: none
 * yet, or the store cannot be read). */
static uint64_t backup_newest(void)
{
  static char o[1 << 16];
  if (sh(o, sizeof o, "%s backup status --dir %s --json 2>/dev/null", bin, dir) != 0)
    return 0;
  const char *p = strstr(o, "\"newest\": ");
  return p ? strtoull(p + 10, NULL, 10) : 0;
}

static void wait_staged(uint64_t lsn, int ms)
{
  for (int waited = 0; backup_newest() < lsn; waited += 200) {
    if (waited > ms)
      fail_msg("the backup did not reach LSN %llu in %d ms (it is at %llu)",
               (unsigned long long)lsn, ms, (unsigned long long)backup_newest());
    usleep(200000);
  }
}

/* Restore to point p into a file; its dump must be p's. */
static void check_restore(const struct point *p)
{
  static char o[1 << 16];
  char f[600];
  snprintf(f, sizeof f, "%s/restored-%llu.db", dir, (unsigned long long)p->lsn);
  if (sh(o, sizeof o, "%s restore --dir %s --to-lsn %llu --file %s 2>&1", bin, dir,
         (unsigned long long)p->lsn, f) != 0)
    fail_msg("restore to %llu: %s", (unsigned long long)p->lsn, o);
  char want[64];
  snprintf(want, sizeof want, "restored volume 1 to LSN %llu ", (unsigned long long)p->lsn);
  if (strstr(o, want) == NULL)
    fail_msg("restore to %llu restored another point: %s", (unsigned long long)p->lsn, o);
  assert_int_equal(sh(o, sizeof o, "sqlite3 %s '" DUMP "'", f), 0);
  if (strcmp(o, p->dump) != 0)
    fail_msg("restore to %llu: the ledger differs from the one noted then "
             "(%zu bytes, noted %zu)", (unsigned long long)p->lsn, strlen(o), strlen(p->dump));
  unlink(f);
}

static void restores_equal_the_points_noted_as_the_workload_ran(void **state)
{
  (void)state;
  char o[4096];
  engine_conn();
  assert_int_equal(rpc_sql(&eng, "create table ledger(id integer primary key, acct int, "
                                 "amount int)", o, sizeof o, 10000, NULL), 0);
  for (int i = 0; i < NPOINTS; i++) {
    if (i == 8)
      fault("az-down C");
    if (i == 14)
      fault("az-up C");
    if (i == 18)
      fault("node-stop B2");
    if (i == 24)
      fault("node-start B2");
    if (i == 28) {
      /* The engine crashes; the next one recovers (a new epoch). */
      if (eng_open)
        rpc_close(&eng);
      eng_open = 0;
      fault("engine-crash");
      char o2[4096];
      if (sh(o2, sizeof o2, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
        fail_msg("cluster up after the crash: %s", o2);
    }
    if (i == 34) {
      /* The writer crashes and stays down: the replica is promoted. */
      if (eng_open)
        rpc_close(&eng);
      eng_open = 0;
      char before[64], why[300];
      assert_int_equal(fo_writer_addr(coord, "main", before, sizeof before, why, sizeof why), 0);
      fault("writer-crash");
      commit_one(i);
      char after[64];
      assert_int_equal(fo_writer_addr(coord, "main", after, sizeof after, why, sizeof why), 0);
      if (strcmp(before, after) == 0)
        fail_msg("the writer is still %s after writer-crash: no failover", after);
      print_message("failover: the writer moved from %s to %s\n", before, after);
      continue;
    }
    commit_one(i);
  }
  wait_staged(pts[npts - 1].lsn, 30000);
  srand((unsigned)getpid());
  for (int k = 0; k < 20; k++)
    check_restore(&pts[rand() % npts]);
  check_restore(&pts[0]);
  check_restore(&pts[npts - 1]);
  /* Into a new volume, which an engine of its own then serves. */
  const struct point *p = &pts[npts / 2];
  static char big[1 << 16];
  if (sh(big, sizeof big, "%s restore --dir %s --to-lsn %llu --into copy1 2>&1", bin, dir,
         (unsigned long long)p->lsn) != 0)
    fail_msg("restore --into: %s", big);
  char addr[64], why[300];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", base + 90);
  assert_int_equal(sh(big, sizeof big, "(%s engine --volume copy1 --listen %s --coord %s "
                      ">> %s/log/copy1.log 2>&1 & echo $! > %s/run/copy1.pid)", bin, addr,
                      coord, dir, dir), 0);
  struct rpc r;
  int opened = -1;
  for (int i = 0; i < 100 && (opened = rpc_open(&r, addr, 2000, why, sizeof why)) != 0; i++)
    usleep(200000);
  assert_int_equal(opened, 0);
  int rc = -1;
  for (int i = 0; i < 50 && (rc = rpc_sql(&r, DUMP, big, sizeof big, 10000, NULL)) != 0; i++)
    usleep(200000);            /* the engine opens the volume before it serves */
  rpc_close(&r);
  sh(why, sizeof why, "kill $(cat %s/run/copy1.pid)", dir);
  if (rc != 0)
    fail_msg("reading volume copy1: %s", big);
  if (strcmp(big, p->dump) != 0)
    fail_msg("volume copy1 differs from the point it was restored to: %.300s", big);
}

static void a_store_that_goes_away_holds_gc_and_is_caught_up(void **state)
{
  (void)state;
  char o[4096];
  weed_down();                 /* every put and listing fails */
  int first = npts;
  for (int i = 0; i < 12; i++) {
    commit_one(100 + i);
    usleep(300000);            /* past GC_MS in all */
  }
  assert_true(sh(o, sizeof o, "grep -h 'backup: volume' %s/log/*.log | tail -3", dir) == 0 &&
              strstr(o, "trying again") != NULL);
  weed_up();                   /* back, with what it held */
  wait_staged(pts[npts - 1].lsn, 30000);
  check_restore(&pts[first + 3]);
  check_restore(&pts[npts - 1]);
}

static void another_node_takes_over_when_the_uploader_stops(void **state)
{
  (void)state;
  stop_member("A1", SIGTERM);
  int first = npts;
  for (int i = 0; i < 6; i++)
    commit_one(200 + i);
  wait_staged(pts[npts - 1].lsn, BACKUP_TAKEOVER_MS + 20000);
  check_restore(&pts[first]);
  check_restore(&pts[npts - 1]);
  char o[4096];
  assert_int_equal(sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir), 0);
}

static void backup_status_tells_each_pg_and_what_can_be_restored(void **state)
{
  (void)state;
  static char o[1 << 16];
  assert_int_equal(sh(o, sizeof o, "%s backup status --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(o, "s3 http://127.0.0.1:"));
  assert_non_null(strstr(o, "restorable: any LSN from 0 to "));
  assert_non_null(strstr(o, "backup point"));
}

static void restore_refuses_what_it_cannot_make(void **state)
{
  (void)state;
  static char o[1 << 16];
  uint64_t hi = backup_newest();
  assert_true(hi > 0);
  assert_int_not_equal(sh(o, sizeof o, "%s restore --dir %s --to-lsn %llu --file %s/x.db 2>&1",
                          bin, dir, (unsigned long long)hi + 1000000, dir), 0);
  assert_non_null(strstr(o, "the backup reaches LSN"));
  assert_int_not_equal(sh(o, sizeof o, "%s restore --dir %s --into main 2>&1", bin, dir), 0);
  assert_non_null(strstr(o, "volume main exists"));
  assert_int_not_equal(sh(o, sizeof o, "%s restore --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(o, "say where"));
  assert_int_not_equal(sh(o, sizeof o, "%s restore --dir %s --to-time yesterday --file "
                          "%s/x.db 2>&1", bin, dir, dir), 0);
  assert_non_null(strstr(o, "--to-time 'yesterday'"));
  struct stat st;
  char x[600];
  snprintf(x, sizeof x, "%s/x.db", dir);
  assert_int_not_equal(stat(x, &st), 0);   /* nothing written */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(restores_equal_the_points_noted_as_the_workload_ran),
    cmocka_unit_test(a_store_that_goes_away_holds_gc_and_is_caught_up),
    cmocka_unit_test(another_node_takes_over_when_the_uploader_stops),
    cmocka_unit_test(backup_status_tells_each_pg_and_what_can_be_restored),
    cmocka_unit_test(restore_refuses_what_it_cannot_make),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
