/*
 * Integration: the commands find the writer and the replicas by role,
 * through the coordinator, at the moment they act (src/cli/locate.c;
 * sqlcli.c, fault.c), on a real cluster with two replicas and failover on
 * (as a user gets it).
 *
 *  - A client loop (one `auralog sql` process per statement: inserts, and
 *    a count every fourth) runs through six failovers (`auralog failover`,
 *    `fault writer-crash` and `fault writer-stop` in turn, each followed
 *    by `cluster up`; AURALOG_ROLE_ROUNDS=N runs N, `make torture` 30).
 *    No statement may give up (exit 2) or meet "Connection refused": sql
 *    waits for the next writer (--wait, 30 s by default). Every insert
 *    acknowledged is there exactly once; none is there twice (a write
 *    sent again blindly would be); a read never exits 3 (unknown is for
 *    writes). The numbers are printed; the same loop with the client of
 *    before (3 s of waiting) lost statements to "Connection refused".
 *  - After two failovers in a row (two fenced old writers still running,
 *    no replica): `sql --replica` says no replica is up, never asks a
 *    fenced writer or the writer. After `cluster up`: it asks a replica
 *    (a write there is refused as read-only), and falls back to the other
 *    when the first is killed. `fault engine-crash` then kills the writer
 *    (a former replica), not the member named "engine" (a replica now),
 *    and `fault writer-crash` the next writer: checked by pid.
 *  - A command told a directory with no cluster (--dir, $AURALOG_DIR) or
 *    finding ~/.auralog/cluster.json whose coordinator is down fails at
 *    once with one line, and never contacts the default ports
 *    127.0.0.1:7400 and 7500 (listeners there, when free, see no one).
 *
 * How each fails without the change: the client of before gives up after
 * 3 s ("Connection refused ... try: auralog cluster up") and exits 3 for
 * a lost read; `sql --replica 1` took R1 from cluster.json, the writer or
 * a fenced one after failovers; engine-crash killed the member named
 * engine; a failed lookup went on to 127.0.0.1:7400 and 7500.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/failover.h"
#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "net/rpc.h"

/* Failovers the client loop goes through: each kind twice (a round is
 * ~3 s); AURALOG_ROLE_ROUNDS=N for a longer campaign. */
static int rounds = 6;
#define MAXOP 100000
#define SLOW_MS "400"           /* how late three nodes answer in a crash round */

/* `auralog sql` as a user runs it: the cluster by its directory only. */
#define NOENV "env -u AURALOG_COORD -u AURALOG_ENGINE -u AURALOG_DIR"

static int setup(void **state)
{
  (void)state;
  if (cluster_start_as_user("roles", " --replicas 2") != 0)
    return -1;
  unsetenv("AURALOG_COORD");
  unsetenv("AURALOG_ENGINE");
  char o[4096];
  if (sh(o, sizeof o, NOENV " %s sql --dir %s 'CREATE TABLE t(id INTEGER, k INTEGER)' 2>&1",
         bin, dir) != 0) {
    fprintf(stderr, "create table: %s\n", o);
    return -1;
  }
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* The member serving SQL at addr: engine, R1, R2 (by its port). */
static const char *member_at(const char *addr)
{
  static char name[16];
  int port = atoi(strrchr(addr, ':') + 1);
  if (port == base + ENGINE_PORT_OFFSET)
    return "engine";
  snprintf(name, sizeof name, "R%d", port - base - REPLICA_PORT_OFFSET + 1);
  return name;
}

static void writer_addr(char *out, size_t n)
{
  char why[256];
  for (int t = 0; t < 100; t++) {
    if (fo_writer_addr(coord, "main", out, n, why, sizeof why) == 0)
      return;
    usleep(100000);
  }
  fail_msg("no writer: %s", why);
}

static uint64_t writer_epoch(void)
{
  char why[256];
  Env *w = fo_writer(coord, "main", why, sizeof why);
  assert_non_null(w);
  uint64_t e = w->writer->epoch;
  wire_free(w);
  return e;
}

static void up(void)
{
  static char o[1 << 14];
  if (sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
    fail_msg("cluster up: %s", o);
}

/* ---- the client loop through failovers --------------------------------------------- */

static uint8_t acked[MAXOP], unknown[MAXOP];
static struct {
  pthread_t th;
  volatile int stop;
  int ops, writes, acks, unknowns, reads, gave_up, refused, failed, read_unknown;
  char first_bad[2048];
} C;

static void note_bad(const char *what, int id, int rc, const char *o)
{
  if (!C.first_bad[0])
    snprintf(C.first_bad, sizeof C.first_bad, "%s (op %d, exit %d): %.1900s", what, id, rc, o);
}

static void *client_main(void *arg)
{
  (void)arg;
  static char o[8192];
  for (int id = 0; !C.stop && id < MAXOP; id++) {
    int read = id % 4 == 3;
    char text[128];
    if (read)
      snprintf(text, sizeof text, "SELECT count(*) FROM t");
    else
      snprintf(text, sizeof text, "INSERT INTO t VALUES(%d, 0)", id);
    int rc = sh(o, sizeof o, NOENV " %s sql --dir %s '%s' 2>&1", bin, dir, text);
    C.ops++;
    C.reads += read;
    C.writes += !read;
    if (rc != 0 && rc != 3 && strstr(o, "Connection refused")) {
      C.refused++;
      note_bad("gave up on Connection refused", id, rc, o);
    }
    if (rc == 0 && !read) {
      acked[id] = 1;
      C.acks++;
    } else if (rc == 3 && !read) {
      unknown[id] = 1;
      C.unknowns++;
    } else if (rc == 3) {
      C.read_unknown++;
      note_bad("a read said its outcome is unknown", id, rc, o);
    } else if (rc == 2) {
      C.gave_up++;
      note_bad("gave up", id, rc, o);
    } else if (rc != 0) {
      C.failed++;
      note_bad("failed", id, rc, o);
    }
  }
  return NULL;
}

static void test_sql_waits_through_failovers(void **state)
{
  (void)state;
  static char o[1 << 14];
  unsigned long long t0 = now_ms();
  assert_int_equal(pthread_create(&C.th, NULL, client_main, NULL), 0);
  static const char *const how[] = {"failover", "writer-crash", "writer-stop"};
  static const char *const slow_on[] = {"slow A1 " SLOW_MS, "slow B1 " SLOW_MS, "slow C1 " SLOW_MS};
  static const char *const slow_off[] = {"slow A1 0", "slow B1 0", "slow C1 0"};
  for (int r = 0; r < rounds; r++) {
    usleep(300000);
    uint64_t e = writer_epoch();
    if (r % 3 == 0 && sh(o, sizeof o, "%s failover --dir %s 2>&1", bin, dir) != 0)
      fail_msg("round %d: auralog failover: %s", r, o);
    /* A crash in a slower cluster (three nodes, one per AZ, answer late):
     * the promoted writer's recovery takes longer, so the failover takes
     * more than the 3 s the client once waited, as on a loaded machine. */
    if (r % 3 == 1)
      for (int i = 0; i < 3; i++)
        fault(slow_on[i]);
    if (r % 3)
      fault(how[r % 3]);
    /* The coordinator fails over by itself (a frozen writer would run on
     * if `cluster up` continued it first). */
    unsigned long long t = now_ms();
    while (writer_epoch() <= e && now_ms() - t < 30000)
      usleep(50000);
    if (writer_epoch() <= e)
      fail_msg("round %d: no new epoch after %s", r, how[r % 3]);
    unsigned long long epoch_ms = now_ms() - t;
    char w[ADDR_MAX_LEN + 1], why[256];
    struct rpc c;
    int serving = 0;
    while (!serving && now_ms() - t < 30000) {
      writer_addr(w, sizeof w);
      if (!(serving = rpc_open(&c, w, 500, why, sizeof why) == 0))
        usleep(20000);
    }
    if (serving)
      rpc_close(&c);
    if (r % 3 == 1)
      for (int i = 0; i < 3; i++)
        fault(slow_off[i]);
    print_message("round %d: %s: epoch %llu after %llu ms, its writer listening after %llu ms\n",
                  r, how[r % 3], (unsigned long long)writer_epoch(), epoch_ms, now_ms() - t);
    up();                       /* the old writer comes back as a replica */
  }
  usleep(500000);
  C.stop = 1;
  pthread_join(C.th, NULL);
  unsigned long long took = now_ms() - t0;
  /* The ledger: every acknowledged insert once, none twice, none that was
   * reported failed. */
  int rc = sh(o, sizeof o, NOENV " %s sql --dir %s 'SELECT id, count(*) FROM t GROUP BY id' "
              "2>/dev/null", bin, dir);
  if (rc != 0)
    fail_msg("reading the ledger: %s", o);
  static uint8_t seen[MAXOP];
  int lost = 0, twice = 0, unacked = 0;
  for (char *p = o; *p;) {
    long id = strtol(p, &p, 10), n = *p == '|' ? strtol(p + 1, &p, 10) : 0;
    if (id >= 0 && id < MAXOP) {
      seen[id] = 1;
      if (n > 1) {
        print_message("insert %ld is there %ld times\n", id, n);
        twice++;
      }
      if (!acked[id] && !unknown[id]) {
        print_message("insert %ld is there, but its client was told it failed\n", id);
        unacked++;
      }
    }
    while (*p && *p != '\n')
      p++;
    while (*p == '\n')
      p++;
  }
  for (int i = 0; i < MAXOP; i++)
    if (acked[i] && !seen[i]) {
      if (lost < 10)
        print_message("acknowledged insert %d is lost\n", i);
      lost++;
    }
  print_message("client loop through %d failovers (failover, writer-crash, writer-stop in "
                "turn) in %.1f s: %d "
                "statements (%d inserts: %d acknowledged, %d outcome unknown; %d reads); gave "
                "up %d, of them on \"Connection refused\" %d; failed %d; reads unknown %d; "
                "lost %d, twice %d, failed but there %d\n", rounds, took / 1000.0,
                C.ops, C.writes, C.acks, C.unknowns, C.reads, C.gave_up, C.refused, C.failed,
                C.read_unknown, lost, twice, unacked);
  if (C.first_bad[0])
    print_message("first bad answer: %s\n", C.first_bad);
  assert_int_equal(C.gave_up + C.refused + C.failed + C.read_unknown, 0);
  assert_int_equal(lost + twice + unacked, 0);
  assert_true(C.acks > 0);
}

/* ---- replicas and faults by role, after two failovers ---------------------------- */

static int run_sql(char *o, size_t n, const char *opts, const char *text)
{
  return sh(o, n, NOENV " %s sql --dir %s %s '%s' 2>&1", bin, dir, opts, text);
}

/* What `-- writer ADDR` or `-- replica ADDR` in o names ("" none). */
static const char *answered_by(const char *o, const char *role)
{
  static char addr[ADDR_MAX_LEN + 1];
  char pat[32];
  snprintf(pat, sizeof pat, "-- %s ", role);
  const char *p = strstr(o, pat);
  addr[0] = 0;
  if (p)
    sscanf(p + strlen(pat), "%128s", addr);
  return addr;
}

static void failover_to(const char *name)
{
  char o[4096];
  if (sh(o, sizeof o, "%s failover --dir %s --to %s 2>&1", bin, dir, name) != 0)
    fail_msg("failover --to %s: %s", name, o);
}

static void test_replicas_and_faults_follow_roles(void **state)
{
  (void)state;
  char o[8192], w[ADDR_MAX_LEN + 1];
  static const char *members[] = {"engine", "R1", "R2"};
  writer_addr(w, sizeof w);
  /* Two failovers in a row, the last to R1 or R2: the member named engine
   * is then not the writer. */
  const char *to[2];
  int k = 0;
  for (int i = 0; i < 3; i++)
    if (strcmp(members[i], member_at(w)) != 0)
      to[k++] = members[i];
  failover_to(to[0]);
  failover_to(to[1]);
  writer_addr(w, sizeof w);
  assert_string_equal(member_at(w), to[1]);
  /* The old writers, fenced, still run: no replica serves. */
  int rc = run_sql(o, sizeof o, "--replica --wait 3", "SELECT count(*) FROM t");
  if (rc != 2 || !strstr(o, "no replica is up"))
    fail_msg("sql --replica with only fenced writers beside the writer: exit %d, %s", rc, o);
  rc = run_sql(o, sizeof o, "--verbose", "SELECT count(*) FROM t");
  if (rc != 0 || strcmp(answered_by(o, "writer"), w) != 0)
    fail_msg("sql after two failovers: exit %d, %s (the writer is %s)", rc, o, w);
  up();                         /* the fenced ones come back as replicas */
  writer_addr(w, sizeof w);
  rc = run_sql(o, sizeof o, "--replica --verbose", "SELECT count(*) FROM t");
  const char *rep = answered_by(o, "replica");
  if (rc != 0 || !rep[0] || strcmp(rep, w) == 0)
    fail_msg("sql --replica: exit %d, %s (the writer is %s)", rc, o, w);
  rc = run_sql(o, sizeof o, "--replica", "INSERT INTO t VALUES(-1, 0)");
  if (rc != 1 || !strstr(o, "read replica"))
    fail_msg("a write through sql --replica: exit %d, %s", rc, o);
  /* The first replica killed: it is listed a moment longer, and the client
   * takes the other. */
  char first[ADDR_MAX_LEN + 1], name[16];
  rc = run_sql(o, sizeof o, "--replica 1 --verbose", "SELECT 1");
  assert_int_equal(rc, 0);
  snprintf(first, sizeof first, "%s", answered_by(o, "replica"));
  snprintf(name, sizeof name, "%s", member_at(first));
  stop_member(name, SIGKILL);
  rc = run_sql(o, sizeof o, "--replica 1 --verbose", "SELECT 1");
  rep = answered_by(o, "replica");
  if (rc != 0 || !rep[0] || strcmp(rep, first) == 0 || strcmp(rep, w) == 0)
    fail_msg("sql --replica 1 with %s (%s) killed: exit %d, %s", name, first, rc, o);
  print_message("replica 1 (%s, %s) killed: sql --replica 1 asked %s\n", name, first, rep);
  up();
  /* engine-crash: the writer, a former replica, not the member named
   * engine (a replica now). */
  writer_addr(w, sizeof w);
  char wname[16];
  snprintf(wname, sizeof wname, "%s", member_at(w));
  assert_string_not_equal(wname, "engine");
  pid_t pids[3];
  for (int i = 0; i < 3; i++)
    pids[i] = pid_of(members[i]);
  uint64_t e = writer_epoch();
  fault("engine-crash");
  for (int i = 0; i < 3; i++) {
    int writer = strcmp(members[i], wname) == 0;
    if (pid_alive(pids[i]) == writer)
      fail_msg("engine-crash: %s (pid %d, %s) is %s; it said: %s", members[i], (int)pids[i],
               writer ? "the writer" : "a replica", writer ? "alive" : "gone", out);
  }
  print_message("engine-crash killed %s (the writer, %s, pid %d); engine (a replica) lives\n",
                wname, w, (int)pids[0]);
  rc = run_sql(o, sizeof o, "--verbose", "SELECT count(*) FROM t");
  if (rc != 0 || writer_epoch() <= e)
    fail_msg("no new writer after engine-crash: exit %d, %s", rc, o);
  up();
  /* writer-crash: the writer now. */
  writer_addr(w, sizeof w);
  snprintf(wname, sizeof wname, "%s", member_at(w));
  for (int i = 0; i < 3; i++)
    pids[i] = pid_of(members[i]);
  fault("writer-crash");
  for (int i = 0; i < 3; i++) {
    int writer = strcmp(members[i], wname) == 0;
    if (pid_alive(pids[i]) == writer)
      fail_msg("writer-crash: %s (pid %d) is %s; it said: %s", members[i], (int)pids[i],
               writer ? "alive" : "gone", out);
  }
  rc = run_sql(o, sizeof o, "", "SELECT count(*) FROM t WHERE id = -1");
  size_t len = strlen(o);       /* the waiting lines (stderr) first, then the row */
  if (rc != 0 || len < 2 || strcmp(o + len - 2, "0\n") != 0 || (len > 2 && o[len - 3] != '\n'))
    fail_msg("after writer-crash: exit %d, %s", rc, o);
  up();
}

/* ---- no cluster, no default ports ------------------------------------------------ */

/* A listener on 127.0.0.1:port, non-blocking; -1 if the port is taken. */
static int listen_on(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Run cmd (a command line after the binary, %s: the directory) with env;
 * it must fail at once with one line that contains want. */
static void fails_in_one_line(const char *env, const char *cmd, const char *where,
                              const char *want, int want_rc)
{
  char line[1024], o[4096];
  snprintf(line, sizeof line, cmd, where);
  unsigned long long t0 = now_ms();
  int rc = sh(o, sizeof o, NOENV " -u AURALOG_KEY %s %s %s 2>&1", env, bin, line);
  unsigned long long ms = now_ms() - t0;
  if (rc == 0 || (want_rc && rc != want_rc) || !strstr(o, want) ||
      strchr(o, '\n') != o + strlen(o) - 1 || ms > 3000)
    fail_msg("`auralog %s` (%s): exit %d after %llu ms: '%s' (want exit %d, one line with "
             "'%s', at once)", line, env, rc, ms, o, want_rc, want);
}

static void test_no_cluster_means_no_default_ports(void **state)
{
  (void)state;
  char empty[300], home[300], conf[400];
  snprintf(empty, sizeof empty, "%s-empty", dir);
  snprintf(home, sizeof home, "%s-home", dir);
  sh(NULL, 0, "mkdir -p %s %s/.auralog", empty, home);
  int l7400 = listen_on(7400), l7500 = listen_on(7500);
  if (l7400 < 0 || l7500 < 0)
    print_message("127.0.0.1:7400 or 7500 is taken here: only the messages are checked\n");
  char want[400];
  snprintf(want, sizeof want, "no cluster in %s", empty);
  static const char *const cmds[] = {
    "sql --dir %s 'SELECT 1'", "sql --replica --dir %s 'SELECT 1'", "status --dir %s",
    "fault --dir %s writer-crash", "fault --dir %s engine-crash", "failover --dir %s", NULL};
  for (int i = 0; cmds[i]; i++)
    fails_in_one_line("", cmds[i], empty, want, strncmp(cmds[i], "sql", 3) ? 0 : 2);
  char env[400];
  snprintf(env, sizeof env, "AURALOG_DIR=%s", empty);
  fails_in_one_line(env, "sql 'SELECT 1'%s", "", want, 2);
  fails_in_one_line(env, "status%s", "", want, 0);
  /* Found in ~/.auralog: its coordinator (a port of this test's block no
   * one listens on) is the one meant. */
  snprintf(conf, sizeof conf, "%s/.auralog/cluster.json", home);
  FILE *f = fopen(conf, "w");
  assert_non_null(f);
  fprintf(f, "{\"base\": %d, \"coord\": \"127.0.0.1:%d\"}\n", base + 50, base + 50);
  fclose(f);
  sh(NULL, 0, "cp %s %s/.auralog/cluster.key", getenv("AURALOG_KEY"), home);
  snprintf(env, sizeof env, "HOME=%s", home);
  snprintf(want, sizeof want, "no cluster at %s/.auralog", home);
  fails_in_one_line(env, "sql 'SELECT 1'%s", "", want, 2);
  fails_in_one_line(env, "sql --replica 'SELECT 1'%s", "", want, 2);
  /* Nobody knocked on the default ports. */
  for (int i = 0; i < 2; i++) {
    int fd = i ? l7500 : l7400;
    if (fd < 0)
      continue;
    int c = accept(fd, NULL, NULL);
    if (c >= 0)
      fail_msg("a command with a cluster meant but not found connected to 127.0.0.1:%d",
               i ? 7500 : 7400);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    close(fd);
  }
  sh(NULL, 0, "rm -rf %s %s", empty, home);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_no_cluster_means_no_default_ports),
    cmocka_unit_test(test_sql_waits_through_failovers),
    cmocka_unit_test(test_replicas_and_faults_follow_roles),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  if (getenv("AURALOG_ROLE_ROUNDS") && atoi(getenv("AURALOG_ROLE_ROUNDS")) > 0)
    rounds = atoi(getenv("AURALOG_ROLE_ROUNDS"));
  /* AURALOG_TEST_FILTER=pattern (cmocka's) runs only the tests it names. */
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  return cmocka_run_group_tests(tests, setup, teardown);
}
