/*
 * Integration: failover (coord/failover.c F1-F5, vfs/promote.c P1-P3) on a
 * real cluster with two read replicas, run with `cluster up --failover`.
 *
 * The campaign: a client inserts ledger rows (one per commit, ids in
 * order) as fast as the writer takes them, finding the writer through the
 * coordinator and following it after each failover; every commit the
 * writer acknowledged is noted. Then the writer is killed
 * (`fault writer-crash`, or every fourth round `fault writer-stop`:
 * alive and silent), the coordinator must promote a replica within the
 * bound, and the client's first commit on the new writer (and the first
 * read there) is timed from the fault. Then every acknowledged row must be
 * on the new writer (the ledger: none lost), and `cluster up` brings the
 * old writer back as a replica. AURALOG_FAILOVERS rounds (default 8, two
 * of them writer-stops: each round is ~3.5 s of detection, promotion and
 * the old writer's return, so `make test` keeps to a few; `make torture`
 * runs 200); the summary prints the failover times (median
 * and max), the recovery times, commits acknowledged, lost (0) and
 * in flight at the crash (their outcome unknown: the client was told so,
 * and either is allowed).
 *
 * Also: a manual `auralog failover --to` while the writer is alive and
 * loaded (the old writer is fenced, nothing acknowledged is lost); the old
 * writer coming back alive after a writer-stop refuses to serve (fenced by
 * the newer epoch, never a stale answer); a promotion interrupted halfway
 * (the chosen replica killed at once: another is promoted), and one that
 * crashes in its recovery (nodes slowed, the replica killed once it holds
 * the new epoch: the next is promoted from that epoch); and the coordinator handing one epoch to one of two
 * promotions from the same epoch (F1).
 *
 * How each can fail (each checked by breaking it): fo_open_check
 * (coord/failover.c) that grants any epoch fails
 * test_one_epoch_for_two_promotions; a writer that ignores the newer epoch
 * its lease probe names (probe.c never fencing) answers from its old cache
 * and fails test_old_writer_back_is_fenced; a detector that never promotes
 * fails the campaign's bound (BOUND_MS, from WRITER_LOST_MS). The ledger
 * (check_ledger) fails on any acknowledged row missing; recovery itself was
 * not broken on purpose here (it_crash and it_safety do that).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/failover.h"
#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "net/proof.h"
#include "net/rpc.h"

/* The failover bound the campaign holds the cluster to: detection, a
 * beat, the promoted replica's open and recovery, the client's retry. */
#define BOUND_MS (WRITER_LOST_MS + 2 * ENGINE_STAT_MS + 5000)

#define MAXID 2000000
static uint8_t acked[MAXID];          /* 1: the writer acknowledged the row's commit */
static uint8_t unknown[MAXID];        /* 1: its outcome is unknown (in flight at a crash) */
/* The answers of the last refused commits (id, text): a refused row found
 * present says which answer was wrong. */
#define NREFUSED 64
static struct { int id; char why[300]; } refused[NREFUSED];
static int nrefused;

/* The client (load thread). */
static struct {
  pthread_t th;
  volatile int stop;
  volatile unsigned long long crash_at;   /* 0: no crash yet this round */
  volatile unsigned long long first_ack;  /* first ack by a writer other than old */
  char old[ADDR_MAX_LEN + 1];             /* the writer crashed this round */
  char cur[ADDR_MAX_LEN + 1];             /* the writer the client is connected to */
  int next;                               /* next id */
  int nacked, nunknown;
  struct rpc r;
} L;

static int setup(void **state)
{
  (void)state;
  /* As a user gets it: `cluster up` fails over by itself (no flag). */
  if (cluster_start_as_user("failover", " --replicas 2") != 0)
    return -1;
  setenv("AURALOG_COORD", coord, 1);
  sql_ok("CREATE TABLE ledger(id INTEGER PRIMARY KEY, pad BLOB)", "");
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();               /* and its directory, unless AURALOG_KEEP */
  return 0;
}

/* Run text on r: 0 (rows in o), -1 an error answer (o: its text), -2 no
 * answer (the outcome is unknown). */
static int run_for(struct rpc *r, const char *text, char *o, size_t n, int timeout_ms);

static int run(struct rpc *r, const char *text, char *o, size_t n)
{
  return run_for(r, text, o, n, 15000);
}

/* The client's request timeout: a frozen writer (writer-stop) answers
 * nothing, and a client gives up on it after this (an unknown outcome). */
#define CLIENT_TIMEOUT_MS 2000

static int run_for(struct rpc *r, const char *text, char *o, size_t n, int timeout_ms)
{
  int rc = rpc_sql(r, text, o, n, timeout_ms, NULL);
  return rc == -1 && strstr(o, "not durable") ? -2 : rc;
}

/* Connect r to the writer the coordinator names now. 0 or -1. */
static int connect_writer(struct rpc *r, int *open)
{
  char addr[ADDR_MAX_LEN + 1], why[256];
  if (*open) {
    rpc_close(r);
    *open = 0;
  }
  if (fo_writer_addr(coord, "main", addr, sizeof addr, why, sizeof why) != 0)
    return -1;
  if (rpc_open(r, addr, 1000, why, sizeof why) != 0)
    return -1;
  *open = 1;
  if (r == &L.r)
    snprintf(L.cur, sizeof L.cur, "%s", addr);
  return 0;
}

static void *load_main(void *arg)
{
  (void)arg;
  int open = 0;
#define r L.r
  char o[1024], text[256];
  while (!L.stop) {
    if (!open && connect_writer(&r, &open) != 0) {
      usleep(50000);
      continue;
    }
    int id = L.next;
    if (id >= MAXID)
      break;
    snprintf(text, sizeof text, "INSERT INTO ledger VALUES(%d, randomblob(200))", id);
    int rc = run_for(&r, text, o, sizeof o, CLIENT_TIMEOUT_MS);
    if (rc == 0) {
      acked[id] = 1;
      L.nacked++;
      L.next++;
      if (L.crash_at && !L.first_ack && strcmp(L.cur, L.old) != 0)
        L.first_ack = now_ms();
    } else {
      /* Refused, fenced, or no answer: the row may or may not be there;
       * never reuse its id. Then find the writer again. */
      if (rc == -2) {
        unknown[id] = 1;
        L.nunknown++;
      } else {
        refused[nrefused % NREFUSED].id = id;
        snprintf(refused[nrefused % NREFUSED].why, sizeof refused[0].why, "%.299s", o);
        nrefused++;
      }
      L.next++;
      connect_writer(&r, &open);
      if (!open)
        usleep(50000);
    }
  }
  if (open)
    rpc_close(&r);
#undef r
  return NULL;
}

static void load_start(void)
{
  char why[256];
  L.stop = 0;
  L.crash_at = 0;
  L.first_ack = 0;
  assert_int_equal(fo_writer_addr(coord, "main", L.old, sizeof L.old, why, sizeof why), 0);
  assert_int_equal(pthread_create(&L.th, NULL, load_main, NULL), 0);
}

static void load_stop(void)
{
  L.stop = 1;
  pthread_join(L.th, NULL);
}

/* Every acknowledged row is on the writer (the ledger). Returns the
 * number lost (printed). */
static int check_ledger(const char *when)
{
  static char o[1 << 24];
  struct rpc r;
  int open = 0, rc = -1;
  for (int t = 0; t < 100 && rc != 0; t++) {
    if (connect_writer(&r, &open) == 0)
      rc = run(&r, "SELECT id FROM ledger ORDER BY id", o, sizeof o);
    if (rc != 0)
      usleep(100000);
  }
  if (rc != 0)
    fail_msg("%s: cannot read the ledger: %s", when, o);
  static uint8_t present[MAXID];
  memset(present, 0, sizeof present);
  for (char *p = o; *p;) {
    long id = strtol(p, &p, 10);
    if (id >= 0 && id < MAXID)
      present[id] = 1;
    while (*p == '\n')
      p++;
  }
  int lost = 0;
  for (int i = 0; i < L.next && i < MAXID; i++)
    if (acked[i] && !present[i]) {
      if (lost < 10)
        print_message("%s: acknowledged row %d is lost\n", when, i);
      lost++;
    } else if (present[i] && !acked[i] && !unknown[i]) {
      /* Not acknowledged and not in flight: an error answer that was not
       * an unknown outcome (refused before it ran). Allowed only if the
       * answer said the outcome was unknown. */
      const char *why = "(answer not kept)";
      for (int k = 0; k < NREFUSED; k++)
        if (refused[k].id == i && refused[k].why[0])
          why = refused[k].why;
      print_message("%s: row %d is present, but its commit was refused: %s\n", when, i, why);
      lost++;
    }
  if (open)
    rpc_close(&r);
  return lost;
}

/* Run text on the writer the coordinator names (retrying while there is
 * none); fails the test unless it succeeds with want (if given). */
static void wsql_ok(const char *text, const char *want)
{
  static char o[1 << 16];
  struct rpc r;
  int open = 0, rc = -1;
  for (int t = 0; t < 100 && rc != 0; t++) {
    if (connect_writer(&r, &open) == 0)
      rc = run(&r, text, o, sizeof o);
    if (rc != 0)
      usleep(100000);
  }
  if (open)
    rpc_close(&r);
  if (rc != 0)
    fail_msg("%s: %s", text, o);
  snprintf(out, sizeof out, "%s", o);
  if (want)
    assert_string_equal(o, want);
}

/* The first read on the writer after t0: ms from t0. */
static unsigned long long first_read(unsigned long long t0)
{
  char o[256];
  struct rpc r;
  int open = 0;
  while (now_ms() - t0 < 60000) {
    if ((open || connect_writer(&r, &open) == 0) &&
        run(&r, "SELECT max(id) FROM ledger", o, sizeof o) == 0) {
      rpc_close(&r);
      return now_ms() - t0;
    }
    if (open) {
      rpc_close(&r);
      open = 0;
    }
    usleep(20000);
  }
  fail_msg("no read on a writer within 60 s of the crash");
  return 0;
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

static int cmp_ull(const void *a, const void *b)
{
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return x < y ? -1 : x > y;
}

static void up(void)
{
  static char o[1 << 14];
  if (sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
    fail_msg("cluster up: %s", o);
}

/* The recovery time of the writer now (its report to the coordinator). */
static long recovery_ms(uint64_t epoch)
{
  for (int t = 0; t < 50; t++) {
    cJSON *s = status("main");
    cJSON *r = cJSON_GetObjectItem(s, "recovery_ms");
    cJSON *e = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "engine"), "epoch");
    long v = cJSON_IsNumber(r) && cJSON_IsNumber(e) && (uint64_t)e->valuedouble == epoch
               ? (long)r->valuedouble : -1;
    cJSON_Delete(s);
    if (v >= 0)
      return v;
    usleep(100000);
  }
  return -1;
}

/* What status says of the failover just done (coord/failover.c
 * fo_status): counted, from the crashed writer to the one serving now,
 * found by the detector, chosen no sooner than WRITER_LOST_MS after the
 * old writer's last probe. */
static void check_failover_status(const char *old, uint64_t from_epoch, int failovers)
{
  cJSON *s = status("main");
  cJSON *f = cJSON_GetObjectItem(s, "failover"), *l = cJSON_GetObjectItem(f, "last");
  if (f == NULL || l == NULL)
    fail_msg("status has no failover object");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(f, "on")));
  assert_int_equal((int)cJSON_GetObjectItem(f, "failovers")->valuedouble, failovers);
  assert_string_equal(cJSON_GetObjectItem(l, "from")->valuestring, old);
  assert_int_equal((uint64_t)cJSON_GetObjectItem(l, "from_epoch")->valuedouble, from_epoch);
  assert_string_equal(cJSON_GetObjectItem(l, "to")->valuestring,
                      cJSON_GetObjectItem(f, "writer")->valuestring);
  assert_string_equal(cJSON_GetObjectItem(l, "by")->valuestring, "detector");
  double detect = cJSON_GetObjectItem(l, "detect_ms")->valuedouble;
  double took = cJSON_GetObjectItem(l, "took_ms")->valuedouble;
  print_message("status: failover %s -> %s, chosen %.0f ms and its epoch %.0f ms after the "
                "old writer's last probe\n", old, cJSON_GetObjectItem(l, "to")->valuestring,
                detect, took);
  assert_true(detect > WRITER_LOST_MS && took >= detect);
  cJSON_Delete(s);
}

static void test_campaign(void **state)
{
  (void)state;
  const char *e = getenv("AURALOG_FAILOVERS");
  int rounds = e && atoi(e) > 0 ? atoi(e) : 8;
  unsigned long long *fo_ms = calloc((size_t)rounds, sizeof *fo_ms);
  unsigned long long *rd_ms = calloc((size_t)rounds, sizeof *rd_ms);
  unsigned long long *rc_ms = calloc((size_t)rounds, sizeof *rc_ms);
  int lost = 0;
  srand(14);
  for (int i = 0; i < rounds; i++) {
    uint64_t epoch = writer_epoch();
    char before[ADDR_MAX_LEN + 1] = "", why[256];
    Env *wr = i == 0 ? fo_writer(coord, "main", why, sizeof why) : NULL;
    if (wr)
      snprintf(before, sizeof before, "%s", wr->writer->addr);
    wire_free(wr);
    int failovers = 0;
    if (i == 0) {
      cJSON *s = status("main");
      failovers = (int)cJSON_GetObjectItem(cJSON_GetObjectItem(s, "failover"), "failovers")
                    ->valuedouble;
      cJSON_Delete(s);
    }
    load_start();
    usleep(300000 + (useconds_t)(rand() % 400) * 1000);
    int stop = i % 4 == 3;
    unsigned long long t0 = now_ms();
    L.crash_at = t0;
    fault(stop ? "writer-stop" : "writer-crash");
    rd_ms[i] = first_read(t0);
    while (!L.first_ack && now_ms() - t0 < 60000)
      usleep(10000);
    if (!L.first_ack)
      fail_msg("round %d: no commit on a new writer within 60 s", i);
    fo_ms[i] = L.first_ack - t0;
    usleep(100000);
    load_stop();
    assert_true(writer_epoch() > epoch);
    long rms = recovery_ms(writer_epoch());
    rc_ms[i] = rms < 0 ? 0 : (unsigned long long)rms;
    char when[64];
    snprintf(when, sizeof when, "round %d", i);
    lost += check_ledger(when);
    print_message("round %d (%s): first commit %llu ms, first read %llu ms, recovery %llu ms, "
                  "epoch %llu\n", i, stop ? "writer-stop" : "writer-crash", fo_ms[i], rd_ms[i],
                  rc_ms[i], (unsigned long long)writer_epoch());
    if (fo_ms[i] > BOUND_MS)
      fail_msg("round %d: failover took %llu ms (bound %d)", i, fo_ms[i], BOUND_MS);
    if (i == 0)
      check_failover_status(before, epoch, failovers + 1);
    up();                         /* the old writer comes back as a replica */
  }
  qsort(fo_ms, (size_t)rounds, sizeof *fo_ms, cmp_ull);
  qsort(rd_ms, (size_t)rounds, sizeof *rd_ms, cmp_ull);
  qsort(rc_ms, (size_t)rounds, sizeof *rc_ms, cmp_ull);
  print_message("failover campaign: %d failovers (writer-crash, every 4th writer-stop), "
                "WRITER_LOST_MS %d, READ_LEASE_MS %d, 2 replicas, one client inserting "
                "(request timeout %d ms)\n"
                "  crash -> first commit on the new writer: median %llu ms, max %llu ms\n"
                "  crash -> first read on the new writer:   median %llu ms, max %llu ms\n"
                "  recovery of the promoted writer:         median %llu ms, max %llu ms\n"
                "  commits acknowledged %d, lost %d, outcome unknown (in flight) %d\n",
                rounds, WRITER_LOST_MS, READ_LEASE_MS, CLIENT_TIMEOUT_MS, fo_ms[rounds / 2], fo_ms[rounds - 1],
                rd_ms[rounds / 2], rd_ms[rounds - 1], rc_ms[rounds / 2], rc_ms[rounds - 1],
                L.nacked, lost, L.nunknown);
  free(fo_ms);
  free(rd_ms);
  free(rc_ms);
  assert_int_equal(lost, 0);
  wsql_ok("PRAGMA integrity_check", "ok\n");
}

/* Manual failover to a chosen replica that is behind, the writer alive
 * and loaded. */
static void test_manual_failover(void **state)
{
  (void)state;
  char addr[ADDR_MAX_LEN + 1], why[256], to[64];
  assert_int_equal(fo_writer_addr(coord, "main", addr, sizeof addr, why, sizeof why), 0);
  /* A replica that is not the writer. */
  snprintf(to, sizeof to, "127.0.0.1:%d", base + REPLICA_PORT_OFFSET + 1);
  if (strcmp(to, addr) == 0)
    snprintf(to, sizeof to, "127.0.0.1:%d", base + REPLICA_PORT_OFFSET);
  uint64_t epoch = writer_epoch();
  /* The replica promoted is behind (failover.c F5, promote.c P1): a read
   * transaction left open on it holds its read point (rvol.h R3) while
   * the writer commits; recovery from storage must not care. */
  struct rpc rr;
  char o[256];
  assert_int_equal(rpc_open(&rr, to, 2000, why, sizeof why), 0);
  assert_int_equal(run(&rr, "BEGIN; SELECT count(*) FROM ledger;", o, sizeof o), 0);
  load_start();
  usleep(1000000);
  /* The replica's second read first: the writer's count(*) may take
   * seconds on a loaded machine, and a read transaction older than the
   * replica's --max-read-age (5 s) is cancelled (the torture's failover
   * run, beside the crash campaign; and once more beside a sanitizer run
   * of make test). That cancellation is the replica's rule, not this
   * test's subject: a cancelled transaction is begun again, twice at most.
   * The writer only grows meanwhile. */
  int rc = run(&rr, "SELECT count(*) FROM ledger", o, sizeof o);
  for (int again = 0; rc != 0 && strstr(o, "--max-read-age") && again < 2; again++) {
    print_message("the open transaction was cancelled (%s): begun again\n", o);
    run(&rr, "ROLLBACK", o, sizeof o);
    if ((rc = run(&rr, "BEGIN; SELECT count(*) FROM ledger;", o, sizeof o)) == 0) {
      usleep(1000000);
      rc = run(&rr, "SELECT count(*) FROM ledger", o, sizeof o);
    }
  }
  if (rc != 0) {
    load_stop();              /* or every later test runs under this one's load */
    fail_msg("the replica to promote refused the second read of its open transaction: %s", o);
  }
  wsql_ok("SELECT count(*) FROM ledger", NULL);
  long nw = atol(out);
  print_message("the replica promoted shows %ld rows, the writer %ld\n", atol(o), nw);
  assert_true(atol(o) < nw);
  if (sh(out, sizeof out, "%s failover --to %s --coord %s 2>&1", bin, to, coord) != 0)
    fail_msg("auralog failover: %s", out);
  rpc_close(&rr);
  usleep(500000);
  load_stop();
  assert_int_equal(fo_writer_addr(coord, "main", addr, sizeof addr, why, sizeof why), 0);
  assert_string_equal(addr, to);
  assert_true(writer_epoch() == epoch + 1);
  assert_int_equal(check_ledger("manual failover"), 0);
  up();
}

/* A writer-stop: failover; the old writer then runs again, alive, and
 * must refuse (fenced), never answer from its old cache. */
static void test_old_writer_back_is_fenced(void **state)
{
  (void)state;
  char old[ADDR_MAX_LEN + 1], now[ADDR_MAX_LEN + 1], why[256], o[512];
  assert_int_equal(fo_writer_addr(coord, "main", old, sizeof old, why, sizeof why), 0);
  wsql_ok("INSERT INTO ledger VALUES(1999000, NULL)", "");
  /* The old writer's client connection, open before it stops. */
  struct rpc r;
  assert_int_equal(rpc_open(&r, old, 2000, why, sizeof why), 0);
  assert_int_equal(run(&r, "SELECT count(*) FROM ledger WHERE id = 1999000", o, sizeof o), 0);
  assert_string_equal(o, "1\n");
  uint64_t epoch = writer_epoch();
  fault("writer-stop");
  unsigned long long t0 = now_ms();
  while (writer_epoch() == epoch && now_ms() - t0 < 30000)
    usleep(50000);
  assert_true(writer_epoch() > epoch);
  assert_int_equal(fo_writer_addr(coord, "main", now, sizeof now, why, sizeof why), 0);
  assert_string_not_equal(now, old);
  /* A change the old writer has not seen, on the new one. */
  /* (Named from the moment it took its epoch, it listens once recovered.) */
  struct rpc w;
  int ok = 0;
  for (int t = 0; t < 50 && !ok; t++)
    if (!(ok = rpc_open(&w, now, 1000, why, sizeof why) == 0))
      usleep(100000);
  if (!ok)
    fail_msg("the new writer %s does not answer: %s", now, why);
  for (int t = 0; t < 100 && run(&w, "DELETE FROM ledger WHERE id = 1999000", o, sizeof o); t++)
    usleep(100000);
  rpc_close(&w);
  /* The old writer runs again: its read lease ran out long ago, and its
   * next probe names the newer epoch: it must not answer "1". */
  char pidp[512];
  int port = atoi(strrchr(old, ':') + 1), member = port - base - REPLICA_PORT_OFFSET + 1;
  if (port == base + ENGINE_PORT_OFFSET)
    snprintf(pidp, sizeof pidp, "engine");
  else
    snprintf(pidp, sizeof pidp, "R%d", member);
  pid_t pid = pid_of(pidp);
  assert_true(pid > 0);
  kill(pid, SIGCONT);
  int rc = run(&r, "SELECT count(*) FROM ledger WHERE id = 1999000", o, sizeof o);
  if (rc == 0)
    fail_msg("the old writer answered after its lease ran out: %s", o);
  print_message("the old writer, running again, refuses: %s\n", o);
  /* Later too, once its probes have had answers (naming the newer epoch). */
  usleep(3 * ENGINE_STAT_MS * 1000);
  rc = run(&r, "SELECT count(*) FROM ledger WHERE id = 1999000", o, sizeof o);
  if (rc == 0)
    fail_msg("the old writer answered after the coordinator named a newer epoch: %s", o);
  print_message("... and %d ms later: %s\n", 3 * ENGINE_STAT_MS, o);
  rc = run(&r, "INSERT INTO ledger VALUES(1999001, NULL)", o, sizeof o);
  assert_true(rc != 0);
  rpc_close(&r);
  wsql_ok("SELECT count(*) FROM ledger WHERE id IN (1999000, 1999001)", "0\n");
  up();                           /* replaced by a replica */
  assert_false(pid_alive(pid));
}

/* The replica chosen is killed at once, perhaps in its recovery: another
 * is promoted (from the epoch the first may have taken), nothing lost. */
static void test_interrupted_promotion(void **state)
{
  (void)state;
  char why[256];
  load_start();
  usleep(400000);
  fault("writer-crash");
  char chosen[ADDR_MAX_LEN + 1] = "";
  unsigned long long t0 = now_ms();
  while (!chosen[0] && now_ms() - t0 < 20000) {
    Env *w = fo_writer(coord, "main", why, sizeof why);
    if (w && w->writer->promoting[0])
      snprintf(chosen, sizeof chosen, "%s", w->writer->promoting);
    wire_free(w);
    if (!chosen[0])
      usleep(5000);
  }
  assert_true(chosen[0] != 0);
  int port = atoi(strrchr(chosen, ':') + 1);
  char name[16];
  if (port == base + ENGINE_PORT_OFFSET)
    snprintf(name, sizeof name, "engine");
  else
    snprintf(name, sizeof name, "R%d", port - base - REPLICA_PORT_OFFSET + 1);
  stop_member(name, SIGKILL);
  print_message("killed %s (%s), chosen for promotion, %llu ms after the crash\n", name, chosen,
                now_ms() - t0);
  char addr[ADDR_MAX_LEN + 1] = "";
  struct rpc r;
  int served = 0;
  while (!served && now_ms() - t0 < 40000) {
    if (fo_writer_addr(coord, "main", addr, sizeof addr, why, sizeof why) == 0 &&
        strcmp(addr, chosen) != 0 && rpc_open(&r, addr, 500, why, sizeof why) == 0) {
      char o[256];
      served = run(&r, "SELECT count(*) FROM ledger", o, sizeof o) == 0;
      rpc_close(&r);
    }
    if (!served)
      usleep(100000);
  }
  if (!served)
    fail_msg("no other replica took over within 40 s");
  print_message("%s took over %llu ms after the crash\n", addr, now_ms() - t0);
  usleep(300000);
  load_stop();
  assert_int_equal(check_ledger("interrupted promotion"), 0);
  up();
}

/* A promotion that crashes in its recovery (failover.c F4): every node
 * answers 300 ms late, so the promoted replica's recovery takes seconds;
 * it is killed once it holds the new epoch, before it serves. The next
 * replica is promoted from that epoch, and nothing acknowledged is lost. */
static void test_promotion_crashes_in_recovery(void **state)
{
  (void)state;
  static const char *nodes[] = {"A1", "A2", "B1", "B2", "C1", "C2"};
  char why[256], cmd[64];
  load_start();
  usleep(400000);
  for (int i = 0; i < 6; i++) {
    snprintf(cmd, sizeof cmd, "slow %s 300", nodes[i]);
    fault(cmd);
  }
  uint64_t epoch = writer_epoch();
  fault("writer-crash");
  unsigned long long t0 = now_ms();
  char took[ADDR_MAX_LEN + 1] = "";
  uint64_t took_epoch = 0;
  while (!took[0] && now_ms() - t0 < 20000) {
    Env *w = fo_writer(coord, "main", why, sizeof why);
    if (w && w->writer->epoch > epoch) {
      snprintf(took, sizeof took, "%s", w->writer->addr);
      took_epoch = w->writer->epoch;
    }
    wire_free(w);
    if (!took[0])
      usleep(5000);
  }
  assert_true(took[0] != 0);
  int port = atoi(strrchr(took, ':') + 1);
  char name[16];
  if (port == base + ENGINE_PORT_OFFSET)
    snprintf(name, sizeof name, "engine");
  else
    snprintf(name, sizeof name, "R%d", port - base - REPLICA_PORT_OFFSET + 1);
  /* Still recovering: the engine listens only once its volume is open. */
  struct rpc r;
  int serving = rpc_open(&r, took, 200, why, sizeof why) == 0;
  if (serving)
    rpc_close(&r);
  stop_member(name, SIGKILL);
  print_message("killed %s (%s) at epoch %llu, %s, %llu ms after the crash\n", name, took,
                (unsigned long long)took_epoch, serving ? "already serving" : "in its recovery",
                now_ms() - t0);
  for (int i = 0; i < 6; i++) {
    snprintf(cmd, sizeof cmd, "slow %s 0", nodes[i]);
    fault(cmd);
  }
  char addr[ADDR_MAX_LEN + 1] = "";
  int served = 0;
  while (!served && now_ms() - t0 < 40000) {
    Env *w = fo_writer(coord, "main", why, sizeof why);
    int newer = w && w->writer->epoch > took_epoch;
    if (w)
      snprintf(addr, sizeof addr, "%s", w->writer->addr);
    wire_free(w);
    if (newer && rpc_open(&r, addr, 500, why, sizeof why) == 0) {
      char o[256];
      served = run(&r, "SELECT count(*) FROM ledger", o, sizeof o) == 0;
      rpc_close(&r);
    }
    if (!served)
      usleep(100000);
  }
  if (!served)
    fail_msg("no replica took over from epoch %llu within 40 s", (unsigned long long)took_epoch);
  print_message("%s took over %llu ms after the crash\n", addr, now_ms() - t0);
  usleep(300000);
  load_stop();
  assert_int_equal(check_ledger("promotion crashed in recovery"), 0);
  up();
}

/* A conditional open (if_epoch), proving it holds the key it names
 * (writer_sig on this connection: coord/roles.c R1), or not. */
static uint32_t cond_open(Env *req, const struct auth_signer *k, int prove, uint64_t *epoch)
{
  char why[256];
  struct rpc r;
  uint8_t sig[AUTH_SIG_BYTES];
  assert_int_equal(rpc_open(&r, coord, 5000, why, sizeof why), 0);
  req->writer_sig = (ProtobufCBinaryData){0, NULL};
  if (prove)
    role_writer_seal(req, k, r.bind, 0, req->open_volume->if_epoch, sig);
  Env *rep = rpc_call(&r, req, 5000, why, sizeof why);
  rpc_close(&r);
  assert_non_null(rep);
  uint32_t code = (uint32_t)rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why);
  if (code == 0)
    *epoch = rep->volume->epoch;
  wire_free(rep);
  return code;
}

/* F1: two promotions from the same epoch; the coordinator gives the next
 * epoch to one only. On a volume of its own (no writer serves it). */
static void test_one_epoch_for_two_promotions(void **state)
{
  (void)state;
  char why[256];
  struct auth_signer k;
  auth_signer_new(&k);
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "foepoch";
  ov.create = 1;
  ov.writer = 1;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, k.pk};
  ov.addr = "127.0.0.1:1";
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  Env *rep = rpc_once(coord, &req, 5000, why, sizeof why);
  assert_non_null(rep);
  assert_int_equal(rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why), 0);
  uint64_t e = rep->volume->epoch, took = 0;
  wire_free(rep);
  ov.create = 0;
  ov.if_epoch = e;
  ov.addr = "127.0.0.1:2";
  /* The writer's key is public (Volume answers carry it): its retry in
   * anyone's hands, without the proof that it holds it, is refused. */
  assert_int_equal(cond_open(&req, &k, 0, &took), ERR_AUTH);
  assert_int_equal(cond_open(&req, &k, 1, &took), 0);
  assert_true(took == e + 1);
  ov.addr = "127.0.0.1:3";      /* the second promotion from e */
  assert_int_equal(cond_open(&req, &k, 1, &took), ERR_STALE_EPOCH);
  char addr[ADDR_MAX_LEN + 1];
  assert_int_equal(fo_writer_addr(coord, "foepoch", addr, sizeof addr, why, sizeof why), 0);
  assert_string_equal(addr, "127.0.0.1:2");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_one_epoch_for_two_promotions),
    cmocka_unit_test(test_campaign),
    cmocka_unit_test(test_manual_failover),
    cmocka_unit_test(test_old_writer_back_is_fenced),
    cmocka_unit_test(test_interrupted_promotion),
    cmocka_unit_test(test_promotion_crashes_in_recovery),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  /* AURALOG_TEST_FILTER=pattern (cmocka's) runs only the tests it names. */
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  return cmocka_run_group_tests(tests, setup, teardown);
}
