/*
 * Integration: what reads may show (DESIGN.md §4, invariant 5), on a real
 * cluster. With AZs A and B down no commit can become durable: one
 * client's insert waits and ends as an unknown outcome (it may still
 * become durable, or be truncated at the next recovery), and a second
 * client's select, run meanwhile, must not show that row (by default
 * every reply waits until the VDL covers what it saw); after the nodes
 * return and the engine crashes and recovers, every row a client was
 * shown is there. An engine started with --reads immediate shows the
 * un-durable row at once: the anomaly of the paper's (and InnoDB's)
 * immediate visibility. A second engine on the volume fences the first
 * one within its read lease, even though the first one never writes
 * again: its next select says "fenced by epoch N".
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

#define UNKNOWN_OUTCOME "storage has no write quorum; the commit may still become durable " \
                        "or be truncated at the next recovery"

static char buf1[65536], buf2[65536];

/* SQL through the engine at addr; output (stdout and stderr) in o. */
static int sql_at(const char *addr, const char *text, char *o, size_t n)
{
  return sh_in(text, o, n, "%s sql --engine %s 2>&1", bin, addr);
}

/* Start `auralog sql --engine addr` on text in the background; its output
 * goes to DIR/name.out and its exit status to DIR/name.rc. */
static void sql_background(const char *addr, const char *text, const char *name)
{
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -f %s/%s.rc; (%s sql --engine %s \"%s\"; echo $? > %s/%s.rc.tmp;"
           " mv %s/%s.rc.tmp %s/%s.rc) > %s/%s.out 2>&1 &",
           dir, name, bin, addr, text, dir, name, dir, name, dir, name, dir, name);
  assert_int_equal(sh(NULL, 0, "%s", cmd), 0);
}

/* Wait (up to ms) for the background client name; its output in o. */
static int background_done(const char *name, char *o, size_t n, int ms)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s.rc", dir, name);
  for (int i = 0; i < ms / 50 && access(path, F_OK) != 0; i++)
    usleep(50000);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    fail_msg("client %s did not finish in %d ms", name, ms);
  int rc = -1;
  if (fscanf(f, "%d", &rc) != 1)
    rc = -1;
  fclose(f);
  sh(o, n, "cat %s/%s.out", dir, name);
  return rc;
}

/* An extra engine process (its pid in DIR/run/NAME.pid), answering. */
static void engine_start(const char *name, const char *addr, const char *args)
{
  assert_int_equal(sh(NULL, 0, "%s engine --listen %s --coord %s %s > %s/log/%s.log 2>&1 & "
                      "echo $! > %s/run/%s.pid", bin, addr, coord, args, dir, name, dir, name), 0);
  for (int i = 0; i < 200; i++) {
    if (sh(NULL, 0, "%s sql --engine %s 'select 1' >/dev/null 2>&1", bin, addr) == 0)
      return;
    usleep(50000);
  }
  fail_msg("engine %s (%s) does not answer; see %s/log/%s.log", name, addr, dir, name);
}

/* Stop an extra engine if it runs (also from teardown). */
static void engine_stop(const char *name, int sig)
{
  pid_t pid = pid_of(name);
  if (pid <= 0)
    return;
  if (kill(pid, sig) == 0)
    for (int i = 0; i < 1000 && pid_alive(pid); i++)
      usleep(10000);
  sh(NULL, 0, "rm -f %s/run/%s.pid", dir, name);
}

static void az_down_a_and_b(void)
{
  fault("az-down A");
  fault("az-down B");
}

static void az_up_a_and_b(void)
{
  fault("az-up A");
  fault("az-up B");
}

static int setup(void **state)
{
  (void)state;
  if (cluster_start("reads") != 0)
    return -1;
  return sql("create table r(v text); insert into r values('seen-before');") == 0 ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  engine_stop("engine-imm", SIGKILL);
  engine_stop("engine-new", SIGKILL);
  cluster_stop();
  return 0;
}

/* ---- tests --------------------------------------------------------------- */

static void no_reply_shows_a_commit_that_is_not_durable(void **state)
{
  (void)state;
  sql_ok("select v from r;", "seen-before\n");
  az_down_a_and_b();             /* 2 of 6 segments left: no write quorum */
  unsigned long long t0 = now_ms();
  sql_background(engine, "insert into r values('maybe-lost');", "c1");
  usleep(500000);                /* the insert has run: SQLite sees its row */
  unsigned long long t1 = now_ms();
  int rc2 = sql("select v from r;");
  unsigned long long ms2 = now_ms() - t1;
  size_t n = strlen(out) < sizeof buf2 - 1 ? strlen(out) : sizeof buf2 - 1;
  memcpy(buf2, out, n);
  buf2[n] = 0;
  printf("# second client's select: rc %d after %llu ms: %s", rc2, ms2, buf2);
  /* It must not show the row; it waited for it to be durable, in vain. */
  assert_null(strstr(buf2, "maybe-lost"));
  assert_int_not_equal(rc2, 0);
  assert_non_null(strstr(buf2, "not durable yet"));
  assert_true(ms2 >= COMMIT_DEADLINE_MS - 500);
  /* The insert's own client: an unknown outcome, and told so. */
  int rc1 = background_done("c1", buf1, sizeof buf1, COMMIT_DEADLINE_MS + 10000);
  printf("# inserting client: rc %d after %llu ms: %s", rc1, now_ms() - t0, buf1);
  assert_int_not_equal(rc1, 0);
  assert_non_null(strstr(buf1, "not durable after 5 s: " UNKNOWN_OUTCOME));
  /* Crash the engine, bring the nodes back, recover: every row a client
   * was shown is still there (the insert may or may not be). */
  fault("engine-crash");
  az_up_a_and_b();
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  sql_ok("select v from r order by v;", NULL);
  printf("# after recovery: %s", out);
  assert_non_null(strstr(out, "seen-before\n"));
  if (rc2 == 0)                  /* (it was not) */
    for (char *line = strtok(buf2, "\n"); line; line = strtok(NULL, "\n"))
      assert_non_null(strstr(out, line));
  sql_ok("pragma integrity_check;", "ok\n");
}

static void reads_immediate_shows_the_anomaly(void **state)
{
  (void)state;
  char e2[64];
  snprintf(e2, sizeof e2, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 1);
  /* An engine of its own volume (the cluster's engine stays the writer of
   * main), with the paper's immediate visibility. */
  engine_start("engine-imm", e2, "--volume imm --reads immediate");
  assert_int_equal(sql_at(e2, "create table i(v text); insert into i values('before');",
                          buf1, sizeof buf1), 0);
  az_down_a_and_b();
  sql_background(e2, "insert into i values('not-durable');", "c3");
  usleep(500000);
  unsigned long long t0 = now_ms();
  int rc = sql_at(e2, "select v from i;", buf2, sizeof buf2);
  unsigned long long ms = now_ms() - t0;
  printf("# --reads immediate: select after %llu ms, rc %d: %s", ms, rc, buf2);
  /* The row no write quorum holds is shown, at once. */
  assert_int_equal(rc, 0);
  assert_string_equal(buf2, "before\nnot-durable\n");
  assert_true(ms < COMMIT_DEADLINE_MS / 2);
  /* Its own client still hears an unknown outcome. */
  rc = background_done("c3", buf1, sizeof buf1, COMMIT_DEADLINE_MS + 10000);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(buf1, UNKNOWN_OUTCOME));
  engine_stop("engine-imm", SIGKILL);
  az_up_a_and_b();
}

static void a_newer_writer_fences_a_reader_within_the_lease(void **state)
{
  (void)state;
  char e3[64];
  snprintf(e3, sizeof e3, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 2);
  sql_ok("select count(*) from r where v = 'seen-before';", "1\n");   /* a warm cache */
  engine_start("engine-new", e3, "");   /* opens main: a new epoch */
  unsigned long long t0 = now_ms();
  assert_int_equal(sql_at(e3, "insert into r values('new-writer');", buf1, sizeof buf1), 0);
  /* The first engine never writes again; its selects must stop within
   * the lease (READ_LEASE_MS after the new epoch; we allow 3 s). */
  int rc = 0, shown = 0;
  unsigned long long ms = 0;
  while ((ms = now_ms() - t0) < 3000) {
    rc = sql("select count(*) from r;");
    if (rc != 0)
      break;
    shown++;
    usleep(50000);
  }
  printf("# first engine: %d selects answered, then after %llu ms: %s", shown, ms, out);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "fenced by epoch"));
  assert_true(ms < 3000);
  /* Still so later: fenced for good. */
  assert_int_not_equal(sql("select 1;"), 0);
  assert_non_null(strstr(out, "fenced by epoch"));
  /* Back to the cluster's own engine. */
  engine_stop("engine-new", SIGTERM);
  stop_member("engine", SIGTERM);
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  sql_ok("select v from r where v = 'new-writer';", "new-writer\n");
}

/* A tiny buffer cache (--cache 8 pages) sends nearly every page read to
 * storage, at a read point, from one segment: the answers must agree with
 * what was written (reads under cache pressure found a lost update once). */
static void a_small_cache_reads_from_storage_and_agrees(void **state)
{
  (void)state;
  char e4[64];
  snprintf(e4, sizeof e4, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 3);
  engine_start("engine-small", e4, "--volume small --cache 8");
  assert_int_equal(sql_at(e4, "create table c(k integer primary key, v int, pad blob);"
                          "insert into c with recursive g(i) as (select 1 union all "
                          "select i + 1 from g where i < 3000) "
                          "select i, 0, randomblob(200) from g;", buf1, sizeof buf1), 0);
  /* Increments, each its own transaction, each reading its page back. */
  for (int i = 0; i < 60; i++) {
    char q[160];
    snprintf(q, sizeof q, "update c set v = v + 1 where k %% 50 = %d;", i % 50);
    assert_int_equal(sql_at(e4, q, buf1, sizeof buf1), 0);
  }
  assert_int_equal(sql_at(e4, "select count(*), sum(v), sum(length(pad)) from c;", buf2,
                          sizeof buf2), 0);
  assert_string_equal(buf2, "3000|3600|600000\n");
  cJSON *o = status("small");
  double reads = cJSON_GetObjectItem(o, "pages_read")->valuedouble;
  cJSON_Delete(o);
  printf("# --cache 8: %.0f page reads from storage\n", reads);
  assert_true(reads > 100);
  assert_int_equal(sql_at(e4, "pragma integrity_check;", buf2, sizeof buf2), 0);
  assert_string_equal(buf2, "ok\n");
  assert_int_not_equal(sh(out, sizeof out, "%s engine --cache 3 2>&1", bin), 0);
  assert_non_null(strstr(out, "--cache"));
  engine_stop("engine-small", SIGKILL);
}

static void the_reads_option_is_checked(void **state)
{
  (void)state;
  assert_int_not_equal(sh(out, sizeof out, "%s engine --reads sometimes 2>&1", bin), 0);
  assert_non_null(strstr(out, "durable or immediate"));
  int lines = 0;
  for (const char *c = out; *c; c++)
    lines += *c == '\n';
  assert_int_equal(lines, 1);    /* one line */
  assert_int_equal(sh(out, sizeof out, "%s engine --help", bin), 0);
  assert_non_null(strstr(out, "--reads MODE"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(no_reply_shows_a_commit_that_is_not_durable),
    cmocka_unit_test(reads_immediate_shows_the_anomaly),
    cmocka_unit_test(a_small_cache_reads_from_storage_and_agrees),
    cmocka_unit_test(a_newer_writer_fences_a_reader_within_the_lease),
    cmocka_unit_test(the_reads_option_is_checked),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: reads", tests, setup, teardown);
}
