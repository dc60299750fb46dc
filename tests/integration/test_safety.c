/*
 * Integration: safety, on real processes. Each test replays, with
 * `auralog fault` and a hand-made writer (peer.c) that speaks the wire
 * protocol, a way in which the system once lost acknowledged data, showed
 * data a crash then took away, or let one message break a node (DESIGN.md
 * §4, invariants 1 and 3 to 7). Each test states what a user would
 * see, and checks it through `auralog sql` and `auralog status`.
 *
 * Every test starts a cluster of its own (same directory and ports, taken
 * from this process's id by the harness) and stops it after, so that one
 * test's wreckage never decides another's fate.
 *
 * AURALOG_KEEP=1 keeps the cluster directory (logs) after each test.
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
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "peer.h"

static const char *const nodes[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};

/* A second engine some tests start by hand (killed in teardown). */
static pid_t extra_engine;

/* ---- helpers ------------------------------------------------------------- */

/* A bounded copy of a text (cut short if it does not fit). */
static void copy_text(char *dst, size_t n, const char *src)
{
  size_t len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = 0;
}

static void cluster_up(void)
{
  char o[4096];
  if (sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
    fail_msg("auralog cluster up failed: %s", o);
}

/* How many lines of node's log hold text. */
static int log_count(const char *node, const char *text)
{
  char o[64];
  sh(o, sizeof o, "grep -c -F '%s' %s/log/%s.log 2>/dev/null", text, dir, node);
  return atoi(o);
}

/* A partition (or its end) is played by the nodes once the coordinator
 * tells them: wait until both nodes of each AZ named say so in their log. */
static void fault_and_wait(const char *what, const char *azs, const char *logline)
{
  int before[NCOPIES];
  for (int i = 0; i < NCOPIES; i++)
    before[i] = log_count(nodes[i], logline);
  fault(what);
  for (int t = 0; t < 100; t++) {
    int done = 1;
    for (int i = 0; i < NCOPIES; i++)
      if (strchr(azs, nodes[i][0]) && log_count(nodes[i], logline) <= before[i])
        done = 0;
    if (done)
      return;
    usleep(20000);
  }
  fail_msg("`auralog fault %s`: the nodes of %s did not play it within 2 s", what, azs);
}

static void partition(const char *az)
{
  char what[32];
  snprintf(what, sizeof what, "partition %s", az);
  fault_and_wait(what, az, "lab fault: partitioned");
}

/* heal: every node that was partitioned says so. */
static void heal(const char *were)
{
  fault_and_wait("heal", were, "lab fault: not partitioned");
}

/* The SCL status shows for node's segment of pg (-1: not shown). */
static long long seg_scl(cJSON *o, int pg, const char *node)
{
  cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "pgs"), pg), *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(p, "segments"))
    if (strcmp(cJSON_GetObjectItem(s, "node")->valuestring, node) == 0)
      return (long long)cJSON_GetObjectItem(s, "scl")->valuedouble;
  return -1;
}

static long long scl_now(const char *node)
{
  cJSON *o = status("main");
  long long v = seg_scl(o, 0, node);
  cJSON_Delete(o);
  return v;
}

/* "pg 0: A1 12 A2 12 ...; pg 1: ..." */
static const char *scls_text(cJSON *o)
{
  static char s[2048];
  size_t n = 0;
  cJSON *p, *g;
  s[0] = 0;
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(o, "pgs")) {
    n += (size_t)snprintf(s + n, sizeof s - n, "%spg %d:", n ? "; " : "",
                          (int)cJSON_GetObjectItem(p, "pg")->valuedouble);
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments"))
      n += (size_t)snprintf(s + n, sizeof s - n, " %s %.0f%s",
                            cJSON_GetObjectItem(g, "node")->valuestring,
                            cJSON_GetObjectItem(g, "scl")->valuedouble,
                            strcmp(cJSON_GetObjectItem(g, "state")->valuestring, "up")
                              ? " (down)" : "");
    if (n >= sizeof s)
      break;
  }
  return s;
}

/* Every up segment of every PG shows the same SCL. */
static int scls_equal(cJSON *o)
{
  cJSON *p, *g;
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(o, "pgs")) {
    double first = -1;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments")) {
      if (strcmp(cJSON_GetObjectItem(g, "state")->valuestring, "up") != 0)
        continue;
      double v = cJSON_GetObjectItem(g, "scl")->valuedouble;
      if (first < 0)
        first = v;
      else if (v != first)
        return 0;
    }
  }
  return 1;
}

/* Poll status until every segment's SCL is its peers'. Returns 1, or 0
 * after ms with the last SCLs in last (if given). */
static int wait_scls_equal(int ms, char *last, size_t n)
{
  unsigned long long t0 = now_ms();
  for (;;) {
    cJSON *o = status("main");
    int eq = scls_equal(o);
    if (last)
      copy_text(last, n, scls_text(o));
    cJSON_Delete(o);
    if (eq)
      return 1;
    if (now_ms() - t0 >= (unsigned long long)ms)
      return 0;
    usleep(100000);
  }
}

/* Run SQL in the background (the client waits for durability); its
 * output and exit status go to DIR/bg-TAG.out. */
static void bg_sql(const char *tag, const char *eng, const char *text)
{
  assert_int_equal(sh(NULL, 0, "(timeout 20 %s sql --engine %s '%s'; echo \"rc=$?\") "
                      "> %s/bg-%s.out 2>&1 &", bin, eng, text, dir, tag), 0);
}

/* Wait up to ms for a background client; returns its exit status (-1: it
 * has not finished) and its output in text. */
static int bg_wait(const char *tag, int ms, char *text, size_t n)
{
  char p[512];
  snprintf(p, sizeof p, "%s/bg-%s.out", dir, tag);
  unsigned long long t0 = now_ms();
  for (;;) {
    FILE *f = fopen(p, "r");
    size_t got = 0;
    text[0] = 0;
    if (f) {
      got = fread(text, 1, n - 1, f);
      text[got] = 0;
      fclose(f);
    }
    char *rc = strstr(text, "rc=");
    if (rc && strchr(rc, '\n')) {
      int v = atoi(rc + 3);
      *rc = 0;
      return v;
    }
    if (now_ms() - t0 >= (unsigned long long)ms)
      return -1;
    usleep(20000);
  }
}

/* Does `auralog sql` output hold a line that is exactly v? */
static int has_row(const char *text, int v)
{
  char want[32];
  int len = snprintf(want, sizeof want, "%d", v);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, want, (size_t)len) == 0 && (p[len] == '\n' || p[len] == 0))
      return 1;
  return 0;
}

static void sql_rows(const char *select, char *text, size_t n)
{
  int rc = sql(select);
  if (rc != 0)
    fail_msg("`%s` failed (%d): %s", select, rc, out);
  copy_text(text, n, out);
}

/* The first lines of a text, on one line, for messages (four buffers in
 * turn: a message may show several). */
static const char *oneline(const char *text)
{
  static char bufs[4][300];
  static int turn;
  char *s = bufs[turn++ % 4];
  copy_text(s, sizeof bufs[0], text);
  for (char *p = s; *p; p++)
    if (*p == '\n')
      *p = ' ';
  return s;
}

/* Common start of the first two scenarios: row 1 is acknowledged; then
 * with AZs B and C partitioned and A2 stopped, row 2 reaches A1 alone (its
 * client is never told it is durable) and the engine crashes. */
static void row_two_on_a1_alone(void)
{
  char text[4096];
  sql_ok("create table t(i); insert into t values(1);", "");
  partition("B");
  partition("C");
  fault("node-stop A2");
  long long a1 = scl_now("A1");
  bg_sql("ins2", engine, "insert into t values(2)");
  long long now = a1;
  for (int i = 0; i < 100 && now <= a1; i++) {
    usleep(50000);
    now = scl_now("A1");
  }
  if (now <= a1)
    fail_msg("setup: insert 2 never reached A1 (its SCL stays %lld)", now);
  fault("engine-crash");
  int rc = bg_wait("ins2", 10000, text, sizeof text);
  if (rc == 0)
    fail_msg("setup: insert 2 was acknowledged with only A1 reachable: %s", oneline(text));
  printf("# insert 2 reached A1 only (scl %lld -> %lld), not durable: %s\n", a1, now,
         oneline(text));
}

/* ---- fixtures ------------------------------------------------------------ */

static int setup_cluster(void **state)
{
  (void)state;
  extra_engine = 0;
  return cluster_start("safety");
}

static int teardown_cluster(void **state)
{
  (void)state;
  if (extra_engine > 0) {
    kill(extra_engine, SIGKILL);
    waitpid(extra_engine, NULL, WNOHANG);
    extra_engine = 0;
  }
  cluster_stop();
  return 0;
}

/* ---- tests --------------------------------------------------------------- */

/* An old epoch's truncation deletes a newer epoch's acknowledged commits.
 * Row 1 is acknowledged; row 2 reaches A1 alone and the engine crashes. A
 * recovery (epoch e) starts and is interrupted right after it truncated
 * (max LSN of A1, + LAL] on A1, the only segment it reached (played here
 * by hand). With AZ A then partitioned, the next engine (epoch e' > e)
 * recovers from B and C, truncates above its own VDL, and row 3 is
 * acknowledged at LSNs that lie inside A1's truncation. Once the
 * partition heals and gossip runs, that older truncation must not remove
 * row 3 (invariant 3: a truncation never removes a record that a newer
 * epoch's writer acknowledged; invariant 1): after another engine crash
 * and recovery rows 1 and 3 are there. */
static void old_epoch_truncation_keeps_newer_acknowledged_commits(void **state)
{
  (void)state;
  char why[256], text[4096];
  row_two_on_a1_alone();

  /* The interrupted recovery: a new epoch, A1 queried and truncated, and
   * nothing else (A2 is down, B and C are cut off). */
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 1);
  for (size_t p = 0; p < v->n_pgs; p++) {
    const char *addr = peer_seg_addr(v, v->pgs[p]->pg, "A1");
    if (addr == NULL)
      continue;
    Env *rep = peer_seg_query(addr, v->id, v->pgs[p]->pg, v->epoch, why, sizeof why);
    if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO)
      fail_msg("A1 answered the recovery's query: %s", peer_describe(rep, why));
    uint64_t from = rep->seg_info->max_lsn;
    wire_free(rep);
    rep = peer_truncate(addr, v->id, v->pgs[p]->pg, v->epoch, from, from + LAL, why,
                        sizeof why);
    if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO)
      fail_msg("A1 answered the recovery's truncation: %s", peer_describe(rep, why));
    printf("# epoch %llu truncated (%llu, %llu] on A1 only, then stopped\n",
           (unsigned long long)v->epoch, (unsigned long long)from,
           (unsigned long long)(from + LAL));
    wire_free(rep);
  }
  auralog__volume__free_unpacked(v, NULL);

  /* The next engine recovers from B and C alone; row 3 is acknowledged. */
  fault("node-start A2");
  heal("BC");
  partition("A");
  cluster_up();
  sql_ok("insert into t values(3);", "");

  /* The partition heals; gossip runs (A1's old truncation meets row 3). */
  heal("A");
  char scls[2048];
  wait_scls_equal(3000, scls, sizeof scls);
  printf("# after the heal: %s\n", scls);

  fault("engine-crash");
  cluster_up();
  sql_rows("select i from t order by i;", text, sizeof text);
  if (!has_row(text, 1) || !has_row(text, 3))
    fail_msg("acknowledged rows lost: after recovery the table holds '%s', want rows 1 "
             "and 3 (row 3 was acknowledged by a newer epoch, at LSNs inside the "
             "interrupted recovery's truncation on A1)", oneline(text));
  sql_ok("pragma integrity_check;", "ok\n");
}

/* Recovery promotes a single-copy transaction, and a later recovery loses
 * a commit built on it. Row 2 reaches A1 alone and the engine crashes; the
 * faults heal and the next engine's recovery runs at once. Row 3 is
 * acknowledged (its client also sees the table as the engine has it), and
 * right after, before gossip has had time to spread what the recovery
 * decided, AZ A is cut off and the engine crashes again. Recovery from B
 * and C must still find row 1 and row 3, and row 2 too if any client saw
 * it (invariants 1 and 2: a recovery's decision stays decided, whatever
 * copies a later read quorum happens to see). */
static void a_promoted_single_copy_commit_stays_with_what_followed(void **state)
{
  (void)state;
  char text[4096], seen[4096];
  row_two_on_a1_alone();

  fault("node-start A2");
  heal("BC");
  cluster_up();                 /* recovery: row 2 lives on A1 (and A2) only */
  sql_ok("insert into t values(3); select i from t order by i;", NULL);
  copy_text(seen, sizeof seen, out);
  int saw2 = has_row(seen, 2);
  /* At once: little time for gossip to copy what A holds to B and C. */
  partition("A");
  fault("engine-crash");
  cluster_up();
  sql_rows("select i from t order by i;", text, sizeof text);
  printf("# a client saw '%s'; after recovery from B and C: '%s'\n", oneline(seen),
         oneline(text));
  if (!has_row(text, 1) || !has_row(text, 3))
    fail_msg("acknowledged rows lost: after recovery from B and C the table holds '%s', "
             "want rows 1 and 3", oneline(text));
  if (saw2 && !has_row(text, 2))
    fail_msg("row 2 was shown to a client ('%s') and is gone after recovery ('%s')",
             oneline(seen), oneline(text));
  sql_ok("pragma integrity_check;", "ok\n");
}

/* A Truncate in the same loop turn as staged records wedges a segment.
 * With the engine crashed, a writer with a new epoch sends one node, in a
 * single write, an Append of three records above its segment's SCL
 * (properly chained, sealed, of its epoch) followed at once by a Truncate
 * covering them, so that the node handles both in one turn of its loop.
 * Whatever the node decides about those records, its SCL must not count
 * records it no longer holds (a read as of them gives them, or says the
 * segment is not complete that far), and it must stay one segment among
 * its peers: after it restarts and the engine recovers, writes go on, and
 * within seconds every segment's SCL in `auralog status` is its peers'
 * (invariant 6: no SCL above the stored chain, every segment converges;
 * invariant 4; invariant 7: never wedged). */
static void truncate_in_the_same_turn_as_an_append_wedges_nothing(void **state)
{
  (void)state;
  char why[256], scls[2048], text[4096];
  sql_ok("create table t(i); insert into t values(1); insert into t values(2);", "");
  sql_ok("insert into t values(3);", "");
  fault("engine-crash");

  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 1);
  const char *addr = peer_seg_addr(v, 0, "C1");
  assert_non_null(addr);
  Env *rep = peer_seg_query(addr, v->id, 0, v->epoch, why, sizeof why);
  if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO)
    fail_msg("C1 answered the query: %s", peer_describe(rep, why));
  uint64_t m = rep->seg_info->max_lsn;
  wire_free(rep);
  /* A page SQLite does not use yet: what happens to it harms no table. */
  uint32_t page = v->pgs[0]->first_page + v->pgs[0]->npages - 1;
  struct peer_rec recs[3];
  for (int i = 0; i < 3; i++)
    peer_rec_literal(&recs[i], m + 1 + (uint64_t)i, m + (uint64_t)i, page, 200,
                     (uint8_t)(0x30 + i), 16, 0, v->epoch);
  size_t la, lt;
  uint8_t *fa = peer_frame_append(1, v->id, 0, v->epoch, recs, 3, 0, &la);
  uint8_t *ft = peer_frame_truncate(2, v->id, 0, v->epoch, m, m + 10, &lt);
  uint8_t *both = malloc(la + lt);
  memcpy(both, fa, la);
  memcpy(both + la, ft, lt);
  Env *reps[2];
  int got = peer_send_frames(addr, both, la + lt, reps, 2, 3000, why, sizeof why);
  printf("# C1 (max %llu) got records %llu..%llu and the truncation (%llu, %llu] in one "
         "write: %d answers:", (unsigned long long)m, (unsigned long long)m + 1,
         (unsigned long long)m + 3, (unsigned long long)m, (unsigned long long)m + 10, got);
  for (int i = 0; i < got; i++)
    printf(" [%s]", peer_describe(reps[i], NULL));
  printf("\n");
  for (int i = 0; i < got; i++)
    wire_free(reps[i]);
  free(fa);
  free(ft);
  free(both);

  /* Whatever C1 decided, a read as of the last record must give the page
   * with the records (if C1 kept them), or say C1 is not complete that far
   * (if they are gone): never a page that lacks records C1 counts. */
  rep = peer_read_page(addr, v->id, 0, page, m + 3, v->epoch, why, sizeof why);
  if (rep == NULL)
    fail_msg("C1 does not answer a read of page %u: %s", page, why);
  if (rep->body_case == AURALOG__ENVELOPE__BODY_PAGE) {
    for (int k = 200; k < 216; k++)
      if (rep->page->data.data[k] != 0x32)
        fail_msg("C1 served page %u as of %llu (so it counts records %llu..%llu), but the "
                 "page lacks their bytes (byte %d is 0x%02x): the truncation removed them "
                 "and the SCL still counts them", page, (unsigned long long)m + 3,
                 (unsigned long long)m + 1, (unsigned long long)m + 3, k,
                 rep->page->data.data[k]);
  } else if (rep->body_case != AURALOG__ENVELOPE__BODY_ERROR ||
             rep->error->code != ERR_NOT_COMPLETE) {
    fail_msg("C1 answered a read of page %u at %llu: %s", page, (unsigned long long)m + 3,
             peer_describe(rep, why));
  }
  wire_free(rep);
  auralog__volume__free_unpacked(v, NULL);

  fault("node-stop C1");
  fault("node-start C1");
  cluster_up();
  for (int i = 4; i <= 8; i++) {
    char s[64];
    snprintf(s, sizeof s, "insert into t values(%d);", i);
    sql_ok(s, "");
  }
  if (!wait_scls_equal(5000, scls, sizeof scls))
    fail_msg("segments do not converge after 5 s: %s", scls);
  sql_rows("select count(*) from t;", text, sizeof text);
  assert_string_equal(text, "8\n");
  sql_ok("insert into t values(9);", "");
  sql_ok("pragma integrity_check;", "ok\n");
}

/* One message breaks a node: an Append whose record carries an unknown
 * field numbered 0, written as a two-byte tag (0x80 0x00, then the value
 * 0). protobuf-c accepts it, but packs it back in a form it cannot read.
 * The node may refuse the message or ignore the field, but it must go on
 * serving: reads of that segment work, and after a restart the node is up,
 * its segments catch up with their peers and SQL works (invariant 7: an
 * unknown field never crashes a process or corrupts data). */
static void an_unknown_field_zero_breaks_no_node(void **state)
{
  (void)state;
  char why[256], scls[2048];
  sql_ok("create table t(i); insert into t values(1);", "");
  Auralog__Volume *v = peer_open_volume(coord, "s4", 1, 0, 1);
  const char *a = peer_seg_addr(v, 0, "B1");
  assert_non_null(a);
  char addr[ADDR_MAX_LEN + 1];
  copy_text(addr, sizeof addr, a);
  /* The segment is there (the coordinator's Assign may still be on its way). */
  Env *rep = peer_seg_query(addr, v->id, 0, v->epoch, why, sizeof why);
  if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO)
    fail_msg("B1 answered a query for volume s4: %s", peer_describe(rep, why));
  wire_free(rep);
  uint32_t page = v->pgs[0]->first_page + 3;
  struct peer_rec r;
  peer_rec_literal(&r, 10, 0, page, 64, 0x5a, 32, REC_CPL, v->epoch);
  static const uint8_t field0[] = {0x80, 0x00, 0x00};
  size_t len;
  uint8_t *f = peer_frame_append_extra(1, v->id, 0, v->epoch, &r, field0, sizeof field0,
                                       &len);
  int got = peer_send_frames(addr, f, len, &rep, 1, 3000, why, sizeof why);
  free(f);
  printf("# B1 answered the record with field 0: %s\n", peer_describe(got ? rep : NULL, why));
  if (got == 0)
    fail_msg("B1 did not answer an Append with an unknown field: %s", why);
  uint64_t rp = 0;
  if (rep->body_case == AURALOG__ENVELOPE__BODY_APPEND_ACK)
    rp = rep->append_ack->scl;
  else if (rep->body_case != AURALOG__ENVELOPE__BODY_ERROR)
    fail_msg("B1 answered %s", peer_describe(rep, NULL));
  wire_free(rep);
  /* Reads of that segment go on working, at what it acknowledged. */
  rep = peer_read_page(addr, v->id, 0, page, rp, v->epoch, why, sizeof why);
  if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_PAGE)
    fail_msg("B1 no longer serves page %u of s4 at %llu: %s", page,
             (unsigned long long)rp, peer_describe(rep, why));
  wire_free(rep);
  auralog__volume__free_unpacked(v, NULL);

  /* A restart: the node must come back and serve. */
  fault("node-stop B1");
  fault("node-start B1");
  wait_node_state("B1", "up", 3000);
  sql_ok("insert into t values(2);", "");
  if (!wait_scls_equal(5000, scls, sizeof scls))
    fail_msg("segments do not converge after B1's restart: %s", scls);
  sql_ok("select i from t order by i;", "1\n2\n");
}

/* One message breaks the engine's every restart: an empty Append (no
 * records) from the volume's current epoch telling each node that the
 * writer's VDL is 2^64 - 5. Nodes must refuse such a VDL (or at least
 * never let it reach recovery): the engine crashes, `cluster up` restarts
 * it, it recovers and serves the same rows (invariant 7: an out-of-range
 * VDL gets a clear error, never a crash). */
static void an_absurd_vdl_does_not_stop_recovery(void **state)
{
  (void)state;
  char why[256], text[1024];
  sql_ok("create table t(i); insert into t values(1); insert into t values(2);", "");
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 0);
  int refused = 0, acked = 0;
  for (size_t p = 0; p < v->n_pgs; p++)
    for (size_t s = 0; s < v->pgs[p]->n_segments; s++) {
      const Auralog__Segment *seg = v->pgs[p]->segments[s];
      Env *rep = peer_append(seg->addr, v->id, v->pgs[p]->pg, v->epoch, NULL, 0,
                             UINT64_MAX - 4, why, sizeof why);
      if (rep == NULL)
        fail_msg("%s gave no answer to an Append with vdl 2^64-5: %s", seg->node, why);
      refused += rep->body_case == AURALOG__ENVELOPE__BODY_ERROR;
      acked += rep->body_case == AURALOG__ENVELOPE__BODY_APPEND_ACK;
      wire_free(rep);
    }
  printf("# vdl 2^64-5 at epoch %llu: %d segments refused it, %d acknowledged it\n",
         (unsigned long long)v->epoch, refused, acked);
  auralog__volume__free_unpacked(v, NULL);

  fault("engine-crash");
  if (sh(text, sizeof text, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
    fail_msg("the engine cannot recover after nodes heard vdl 2^64-5: %s", oneline(text));
  sql_ok("select i from t order by i;", "1\n2\n");
  sql_ok("insert into t values(3);", "");
}

/* A truncation no recovery writes: one of a newer epoch that starts below
 * the VDL the segments heard (a recovery's starts at the VDL it proved, at
 * or above every acknowledged commit). Each segment refuses it with a
 * clear error and keeps its records; the engine then recovers and serves
 * every row (invariant 7: bad input changes nothing). */
static void a_truncation_below_the_heard_vdl_is_refused(void **state)
{
  (void)state;
  char why[256];
  sql_ok("create table t(i);", "");
  for (int i = 1; i <= 4; i++) {  /* one commit each: each Append tells the VDL */
    char q[64];
    snprintf(q, sizeof q, "insert into t values(%d);", i);
    sql_ok(q, "");
  }
  fault("engine-crash");        /* its last VDL is on the segments */
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 1);
  int refused = 0, segs = 0;
  for (size_t p = 0; p < v->n_pgs; p++)
    for (size_t s = 0; s < v->pgs[p]->n_segments; s++) {
      const Auralog__Segment *seg = v->pgs[p]->segments[s];
      Env *q = peer_seg_query(seg->addr, v->id, v->pgs[p]->pg, v->epoch, why, sizeof why);
      uint64_t heard = q && q->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO ? q->seg_info->vdl : 0;
      wire_free(q);
      if (heard < 2)
        continue;
      segs++;
      Env *rep = peer_truncate(seg->addr, v->id, v->pgs[p]->pg, v->epoch, 1, 1 + LAL, why,
                               sizeof why);
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
          strstr(rep->error->msg, "below the VDL"))
        refused++;
      else
        fail_msg("%s took a truncation from 1 below its VDL %llu: %s", seg->node,
                 (unsigned long long)heard, peer_describe(rep, why));
      wire_free(rep);
    }
  printf("# %d segments refused a truncation below the VDL they heard\n", refused);
  assert_true(segs >= VW);
  auralog__volume__free_unpacked(v, NULL);
  cluster_up();
  sql_ok("select i from t order by i;", "1\n2\n3\n4\n");
}

/* Recovery can become impossible: a segment with more records above its
 * durable point than one answer can hold (an engine that lost its quorum
 * for a long while left them) answered an internal error, and recovery
 * failed for want of a read quorum. 120,000 records of an older epoch,
 * never committed, on every segment of PG 0: recovery pages through them,
 * truncates them, and the volume serves its rows. */
static void recovery_pages_through_a_long_tail(void **state)
{
  (void)state;
  char why[256], text[1024];
  sql_ok("create table t(i); insert into t values(1); insert into t values(2);", "");
  fault("engine-crash");
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 1);
  enum { N = 120000, PER = 50000 };
  struct peer_rec *r = calloc(N, sizeof *r);
  assert_non_null(r);
  for (size_t s = 0; s < v->pgs[0]->n_segments; s++) {
    const Auralog__Segment *seg = v->pgs[0]->segments[s];
    Env *q = peer_seg_query(seg->addr, v->id, 0, v->epoch, why, sizeof why);
    assert_non_null(q);
    assert_int_equal(q->body_case, AURALOG__ENVELOPE__BODY_SEG_INFO);
    uint64_t top = q->seg_info->max_lsn;
    wire_free(q);
    if (s == 0)
      for (size_t i = 0; i < N; i++)   /* the same records for every segment */
        peer_rec_literal(&r[i], top + 1 + i, i ? top + i : top, 2 + (uint32_t)(i % 8),
                         100, (uint8_t)i, 16, 0, v->epoch);
    for (size_t i = 0; i < N; i += PER) {
      size_t n = N - i < PER ? N - i : PER;
      Env *rep = peer_append(seg->addr, v->id, 0, v->epoch, &r[i], n, 0, why, sizeof why);
      if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_APPEND_ACK)
        fail_msg("%s did not take %zu records: %s", seg->node, n, peer_describe(rep, why));
      wire_free(rep);
    }
  }
  free(r);
  auralog__volume__free_unpacked(v, NULL);
  if (sh(text, sizeof text, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
    fail_msg("recovery over %d records above the durable point failed: %s", N,
             oneline(text));
  sql_ok("select i from t order by i;", "1\n2\n");
  sql_ok("insert into t values(3);", "");
  sql_ok("select count(*) from t;", "3\n");
}

/* A copy range past the segment's page size is stored and acknowledged,
 * then the page is damaged at read. A record's copy range (no bytes; from
 * and len set) at offset 4000, 200 bytes long, ends past a 4096-byte page
 * while staying under PAGE_SIZE_MAX (the generic wire check passes it).
 * The node must refuse it with an error, and reads of that page go on
 * returning the page as it was (invariant 7: bad input never corrupts
 * data; invariant 4). */
static void a_copy_range_past_the_page_is_refused(void **state)
{
  (void)state;
  char why[256];
  Auralog__Volume *v = peer_open_volume(coord, "s5", 1, 4096, 1);
  assert_int_equal(v->page_size, 4096);
  const char *a = peer_seg_addr(v, 0, "A2");
  assert_non_null(a);
  char addr[ADDR_MAX_LEN + 1];
  copy_text(addr, sizeof addr, a);
  uint32_t page = v->pgs[0]->first_page + 2;
  struct peer_rec good, bad;
  peer_rec_literal(&good, 10, 0, page, 3900, 0x11, 64, REC_CPL, v->epoch);
  Env *rep = peer_append(addr, v->id, 0, v->epoch, &good, 1, 0, why, sizeof why);
  if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_APPEND_ACK)
    fail_msg("A2 refused a good record: %s", peer_describe(rep, why));
  wire_free(rep);
  peer_rec_copy(&bad, 20, 10, page, 4000, 0, 200, REC_CPL, v->epoch);
  Env *bad_rep = peer_append(addr, v->id, 0, v->epoch, &bad, 1, 0, why, sizeof why);
  char said[600];
  copy_text(said, sizeof said, peer_describe(bad_rep, why));
  printf("# A2 answered a copy of bytes 4000..4200 of a 4096-byte page: %s\n", said);
  uint64_t rp = 10;
  if (bad_rep && bad_rep->body_case == AURALOG__ENVELOPE__BODY_APPEND_ACK &&
      bad_rep->append_ack->scl > rp)
    rp = bad_rep->append_ack->scl;
  /* Reads of the page still work, and the good record's bytes are there. */
  for (int i = 0; i < 2; i++) {
    rep = peer_read_page(addr, v->id, 0, page, rp, v->epoch, why, sizeof why);
    if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_PAGE ||
        rep->page->data.len != 4096)
      fail_msg("A2 no longer serves page %u at %llu: %s", page, (unsigned long long)rp,
               peer_describe(rep, why));
    for (int k = 3900; k < 3964; k++)
      if (rep->page->data.data[k] != 0x11)
        fail_msg("page %u byte %d is 0x%02x, want 0x11", page, k, rep->page->data.data[k]);
    wire_free(rep);
  }
  auralog__volume__free_unpacked(v, NULL);
  if (bad_rep == NULL || bad_rep->body_case != AURALOG__ENVELOPE__BODY_ERROR)
    fail_msg("A2 took a copy range ending at byte 4200 of a 4096-byte page: %s", said);
  wire_free(bad_rep);
  assert_string_equal(node_state("A2"), "up");
}

/* Reads never show what a crash can take away. With AZs A and B down,
 * a client inserts row 2: it is never durable, and its client says so.
 * Meanwhile another client reads the table: by default the engine
 * releases a reply only once the VDL covers every commit its snapshot can
 * see, so that reader must wait and fail (or time out), not show row 2.
 * The engine then crashes, the AZs come back and it recovers: whatever
 * row 2's fate, no client may have seen a row that is now absent
 * (invariant 5). `auralog engine --reads immediate` keeps the old
 * behaviour, the reader sees row 2 at once; that part is skipped, with a
 * note, by an engine without the option. */
static void reads_never_show_what_a_crash_can_take_away(void **state)
{
  (void)state;
  char wtext[4096], rtext[4096], text[4096];
  sql_ok("create table t(i); insert into t values(1);", "");
  fault("az-down A");
  fault("az-down B");
  cJSON *o = status("main");
  double next = cJSON_GetObjectItem(o, "next_lsn")->valuedouble;
  cJSON_Delete(o);
  bg_sql("w", engine, "insert into t values(2)");
  /* Wait until the engine has run the insert (it took LSNs). */
  for (int i = 0; i < 60; i++) {
    usleep(50000);
    o = status("main");
    double now = cJSON_GetObjectItem(o, "next_lsn")->valuedouble;
    cJSON_Delete(o);
    if (now > next)
      break;
  }
  unsigned long long t0 = now_ms();
  assert_int_equal(sh(NULL, 0, "(timeout 8 %s sql --engine %s 'select i from t order by i'; "
                      "echo \"rc=$?\") > %s/bg-r.out 2>&1 &", bin, engine, dir), 0);
  int rrc = bg_wait("r", 10000, rtext, sizeof rtext);
  unsigned long long rms = now_ms() - t0;
  int wrc = bg_wait("w", 10000, wtext, sizeof wtext);
  if (wrc == 0)
    fail_msg("setup: insert 2 was acknowledged with only AZ C up: %s", oneline(wtext));
  int saw = rrc == 0 && has_row(rtext, 2);
  printf("# writer (not durable): %s; reader after %llu ms: rc %d, '%s'\n", oneline(wtext),
         rms, rrc, oneline(rtext));

  fault("engine-crash");
  fault("az-up A");
  fault("az-up B");
  cluster_up();
  sql_rows("select i from t order by i;", text, sizeof text);
  printf("# after recovery: '%s'\n", oneline(text));
  assert_true(has_row(text, 1));
  if (saw && !has_row(text, 2))
    fail_msg("a reader saw row 2 ('%s') before it was durable, and recovery removed it "
             "('%s')", oneline(rtext), oneline(text));
  if (saw)
    fail_msg("a reader saw row 2 ('%s') while its commit was on AZ C alone, not durable "
             "(the writer was told: %s)", oneline(rtext), oneline(wtext));

  /* The old behaviour, on demand. */
  char help[4096];
  sh(help, sizeof help, "%s engine --help 2>&1", bin);
  if (strstr(help, "--reads") == NULL) {
    printf("# skipped `auralog engine --reads immediate`: this engine has no --reads "
           "option yet\n");
    return;
  }
  char e2[64];
  snprintf(e2, sizeof e2, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 1);
  fault("engine-crash");
  assert_int_equal(sh(text, sizeof text, "%s engine --reads immediate --listen %s --coord %s "
                      "> %s/log/engine-immediate.log 2>&1 & echo $!", bin, e2, coord, dir), 0);
  extra_engine = atoi(text);
  int up = 0;
  for (int i = 0; i < 100 && !up; i++) {
    up = sh(NULL, 0, "%s sql --engine %s 'select 1' >/dev/null 2>&1", bin, e2) == 0;
    if (!up)
      usleep(50000);
  }
  if (!up)
    fail_msg("`auralog engine --reads immediate` does not serve (see %s/log/"
             "engine-immediate.log)", dir);
  fault("az-down A");
  fault("az-down B");
  bg_sql("w3", e2, "insert into t values(3)");
  usleep(300000);
  int rc = sh(rtext, sizeof rtext, "timeout 8 %s sql --engine %s 'select i from t order by i' "
              "2>&1", bin, e2);
  kill(extra_engine, SIGKILL);
  waitpid(extra_engine, NULL, 0);
  extra_engine = 0;
  bg_wait("w3", 10000, wtext, sizeof wtext);
  fault("az-up A");
  fault("az-up B");
  cluster_up();
  if (rc != 0 || !has_row(rtext, 3))
    fail_msg("with --reads immediate a reader should see row 3 at once, as before; it got "
             "rc %d, '%s'", rc, oneline(rtext));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(old_epoch_truncation_keeps_newer_acknowledged_commits,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(a_promoted_single_copy_commit_stays_with_what_followed,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(truncate_in_the_same_turn_as_an_append_wedges_nothing,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(an_unknown_field_zero_breaks_no_node,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(an_absurd_vdl_does_not_stop_recovery,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(a_truncation_below_the_heard_vdl_is_refused,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(recovery_pages_through_a_long_tail,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(a_copy_range_past_the_page_is_refused,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(reads_never_show_what_a_crash_can_take_away,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(cluster_down_leaves_nothing, setup_cluster,
                                    teardown_cluster),
  };
  return cmocka_run_group_tests_name("integration: safety", tests, NULL, NULL);
}
