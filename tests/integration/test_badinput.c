/*
 * Integration: safety against bad input, on real processes. Each test
 * replays, with a hand-made writer (peer.c) that speaks the wire protocol
 * and `auralog fault`, a message or a load of records that once broke a
 * node, wedged a segment, damaged a page or stopped recovery: a Truncate
 * in the same loop turn as an Append, an unknown field 0, an absurd VDL,
 * a truncation below the heard VDL, a tail too long for one answer, a copy
 * range past the page (DESIGN.md §4, invariants 4, 6 and 7: bad input
 * never crashes a process, wedges a segment or corrupts data). Each test
 * states what a user would see, and checks it through `auralog sql` and
 * `auralog status`.
 *
 * Acknowledged data lost or shown too early across crashes and recoveries
 * (invariants 1 to 5) is in test_safety.c.
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
#include "safety_util.h"

/* ---- fixtures ------------------------------------------------------------ */

static int setup_cluster(void **state)
{
  (void)state;
  return cluster_start("badinput");
}

static int teardown_cluster(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- tests --------------------------------------------------------------- */

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

int main(void)
{
  const struct CMUnitTest tests[] = {
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
    cmocka_unit_test_setup_teardown(cluster_down_leaves_nothing, setup_cluster,
                                    teardown_cluster),
  };
  return cmocka_run_group_tests_name("integration: safety against bad input", tests, NULL,
                                     NULL);
}
