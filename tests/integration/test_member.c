/*
 * Integration: what a member may not do (invariant 9, coord/roles.c), on
 * real processes. The attacker is this test process holding cluster.key,
 * as every node, replica and tool does, but not operator.key: it speaks
 * the wire protocol itself (peer.c), well-formed, with valid MACs. Each
 * test replays an attack that emptied or took a volume before roles:
 *
 *  - a writer-open (OpenVolume writer=1 with its own key) took a signed
 *    epoch, whose ticket then signed a truncation (0, 2^59]: every
 *    acknowledged row gone, the volume wedged;
 *  - a drop with force under the running writer: the next open made a
 *    new, empty volume of the same name;
 *  - a conditional open (a promotion's) from a process nobody chose, or
 *    naming the writer's public key without holding it (it moved the
 *    volume on and fenced the writer), or creating a volume;
 *  - lease probes with the writer's epoch kept a stopped writer "alive",
 *    so failover never came;
 *  - a truncation (0, VDL] or (VDL, VDL + 2^59] on a node's three paths a
 *    member reaches (Truncate, Append, recovery scan), forged or truly
 *    signed by a writer of a newer epoch: the bound refuses it (a scan
 *    skips it and answers all the same; gossip, the fourth path, only a
 *    PG peer reaches: unit_truncbound and the simulator's rogue member,
 *    sim/rogue.c, play it).
 * After each, every acknowledged row is there and a new commit succeeds.
 * The operator (this process with operator.key) may do what a member may
 * not, and still never drops a volume under its live writer.
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
#include <unistd.h>

#include "net/auth.h"
#include "harness.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "param.h"
#include "peer.h"

#define ROWS 30

static int setup_cluster(void **state)
{
  (void)state;
  return cluster_start("member");
}

static int teardown_cluster(void **state)
{
  (void)state;
  op_use(1);
  cluster_stop();
  return 0;
}

static long rows_in_t(void)
{
  sql_ok("select count(*) from t;", NULL);
  return strtol(out, NULL, 10);
}

/* ROWS acknowledged rows (each sql exits 0 only once durable). */
static void fill_t(void)
{
  sql_ok("create table if not exists t(i integer primary key, v text);", NULL);
  char q[128];
  for (int i = 0; i < ROWS; i++) {
    snprintf(q, sizeof q, "insert into t(v) values('row %d');", i);
    sql_ok(q, NULL);
  }
}

static uint64_t status_u64(const char *field)
{
  cJSON *st = status("main");
  const cJSON *it = cJSON_GetObjectItem(st, field);
  uint64_t v = it ? (uint64_t)it->valuedouble : 0;
  cJSON_Delete(st);
  return v;
}

/* The rows are all there and the writer still commits. */
static void volume_intact(uint64_t epoch)
{
  assert_int_equal(status_u64("epoch"), epoch);
  assert_int_equal(rows_in_t(), ROWS);
  sql_ok("insert into t(v) values('after');", NULL);
  assert_int_equal(rows_in_t(), ROWS + 1);
}

/* One request to the coordinator as a member (no operator signature);
 * the Error's code, or 0 for any other answer. */
static uint32_t as_member(Env *req, char *msg, size_t n)
{
  char why[256];
  op_use(0);
  Env *rep = peer_call(coord, req, 3000, why, sizeof why);
  op_use(1);
  assert_non_null(rep);
  uint32_t code = rep->body_case == AURALOG__ENVELOPE__BODY_ERROR ? rep->error->code : 0;
  snprintf(msg, n, "%s", code ? rep->error->msg : "");
  wire_free(rep);
  return code;
}

/* ---- tests --------------------------------------------------------------- */

static void a_member_gets_no_writer_epoch(void **state)
{
  (void)state;
  fill_t();
  uint64_t epoch = status_u64("epoch");
  char msg[300];
  struct auth_signer me;
  auth_signer_new(&me);
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "main";
  ov.create = 1;
  ov.writer = 1;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, me.pk};
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  /* Before: a signed epoch for this key, and with it a truncation. */
  assert_int_equal(as_member(&req, msg, sizeof msg), ERR_AUTH);
  assert_non_null(strstr(msg, "only the operator"));
  /* A promotion's conditional open, from a replica nobody chose. */
  ov.if_epoch = epoch;
  ov.addr = "127.0.0.1:9";
  assert_int_equal(as_member(&req, msg, sizeof msg), ERR_STALE_EPOCH);
  assert_non_null(strstr(msg, "refused"));
  /* The same, naming the writer's own key (a Volume answer shows it), as
   * its retry would: refused, it does not prove it holds the key. Before,
   * the volume moved to a new epoch and its writer was fenced. */
  op_use(0);
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 0);
  op_use(1);
  assert_non_null(v);
  assert_int_equal(v->writer_pk.len, AUTH_PK_BYTES);
  ov.writer_pk = v->writer_pk;
  assert_int_equal(as_member(&req, msg, sizeof msg), ERR_AUTH);
  assert_non_null(strstr(msg, "does not prove it holds"));
  auralog__volume__free_unpacked(v, NULL);
  /* Nor does a conditional open create a volume, with itself its writer. */
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, me.pk};
  ov.name = "mine";
  assert_int_equal(as_member(&req, msg, sizeof msg), ERR_NOT_FOUND);
  ov.name = "main";
  /* A re-creation is the operator's too. */
  ov.if_epoch = 0;
  ov.writer = 0;
  ov.recreate = 1;
  assert_int_equal(as_member(&req, msg, sizeof msg), ERR_AUTH);
  volume_intact(epoch);
}

static void a_member_cannot_drop_and_the_operator_not_under_a_live_writer(void **state)
{
  (void)state;
  fill_t();
  uint64_t epoch = status_u64("epoch");
  char msg[300], why[256];
  Env dr = AURALOG__ENVELOPE__INIT;
  Auralog__DropVolume dv = AURALOG__DROP_VOLUME__INIT;
  dv.name = "main";
  dv.force = 1;               /* before: accepted from any key holder */
  dr.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
  dr.drop_volume = &dv;
  assert_int_equal(as_member(&dr, msg, sizeof msg), ERR_AUTH);
  assert_non_null(strstr(msg, "only the operator may drop"));
  /* The operator, with force: still not under the running writer. */
  Env *rep = peer_call(coord, &dr, 3000, why, sizeof why);
  assert_non_null(rep);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(rep->error->code, ERR_CONFLICT);
  assert_non_null(strstr(rep->error->msg, "held by its writer"));
  wire_free(rep);
  /* Faults and failovers are the operator's too. */
  Env fr = AURALOG__ENVELOPE__INIT;
  Auralog__Fault f = AURALOG__FAULT__INIT;
  f.action = "partition";
  f.az = "A";
  fr.body_case = AURALOG__ENVELOPE__BODY_FAULT;
  fr.fault = &f;
  assert_int_equal(as_member(&fr, msg, sizeof msg), ERR_AUTH);
  Env fo = AURALOG__ENVELOPE__INIT;
  Auralog__Failover fv = AURALOG__FAILOVER__INIT;
  fv.volume = "main";
  fo.body_case = AURALOG__ENVELOPE__BODY_FAILOVER;
  fo.failover = &fv;
  assert_int_equal(as_member(&fo, msg, sizeof msg), ERR_AUTH);
  assert_string_equal(node_state("A1"), "up");
  volume_intact(epoch);
}

static void a_dropped_name_comes_back_only_on_purpose(void **state)
{
  (void)state;
  fill_t();
  char why[256];
  /* The writer stops; the operator drops the volume. */
  stop_member("engine", SIGKILL);
  Env dr = AURALOG__ENVELOPE__INIT;
  Auralog__DropVolume dv = AURALOG__DROP_VOLUME__INIT;
  dv.name = "main";
  dr.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
  dr.drop_volume = &dv;
  Env *rep = NULL;
  for (int i = 0; i < 100; i++) {   /* until its last report ages (ENGINE_HOLD_MS) */
    wire_free(rep);
    rep = peer_call(coord, &dr, 3000, why, sizeof why);
    assert_non_null(rep);
    if (rep->body_case != AURALOG__ENVELOPE__BODY_ERROR)
      break;
    usleep(100 * 1000);
  }
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_OK);
  wire_free(rep);
  /* An open does not make a new, empty `main` behind everyone's back. */
  char o[4096];
  int rc = sh(o, sizeof o, "%s engine --volume main --listen %s --coord %s --operator %s/operator.key "
              "2>&1", bin, engine, coord, dir);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(o, "was dropped"));
  assert_non_null(strstr(o, "--create"));
}

static void probes_from_a_member_do_not_keep_a_stopped_writer_alive(void **state)
{
  (void)state;
  fill_t();
  uint64_t epoch = status_u64("epoch");
  pid_t pid = pid_of("engine");
  assert_true(pid > 0);
  assert_int_equal(kill(pid, SIGSTOP), 0);
  /* Probes naming the writer's epoch, every 100 ms for 2 s: before, each
   * one renewed the writer's life (failover never came). */
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vh.name = "main";
  vh.page_size = 4096;
  vh.epoch = epoch;
  req.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  req.volume = &vh;
  char msg[300];
  for (int i = 0; i < 20; i++) {
    assert_int_equal(as_member(&req, msg, sizeof msg), 0);   /* answered all the same */
    usleep(100 * 1000);
  }
  cJSON *st = status("main");
  const cJSON *fo = cJSON_GetObjectItem(st, "failover");
  assert_non_null(fo);
  double silent = cJSON_GetObjectItem(fo, "writer_silent_ms")->valuedouble;
  cJSON_Delete(st);
  kill(pid, SIGCONT);
  if (silent < 1500)
    fail_msg("the writer was stopped 2 s but the coordinator heard it %.0f ms ago", silent);
  usleep(500 * 1000);
  volume_intact(epoch);
}

/* One request to a node; its Error code and text, or 0 for any other
 * answer. */
static uint32_t to_node(const char *addr, Env *req, char *msg, size_t n)
{
  char why[256];
  Env *rep = peer_call_seg(addr, req, 3000, why, sizeof why);
  if (rep == NULL)
    fail_msg("%s did not answer: %s", addr, why);
  uint32_t code = rep->body_case == AURALOG__ENVELOPE__BODY_ERROR ? rep->error->code : 0;
  snprintf(msg, n, "%s", code ? rep->error->msg : "");
  wire_free(rep);
  return code;
}

/* A recovery's scan carrying range tr: it is answered whatever becomes of
 * the range (one the segment refuses is skipped and counted: node/trunc.c);
 * 0 if the segment holds the range after (it took it), else ERR_CONFLICT. */
static uint32_t scan_took(const char *addr, Env *req, const Auralog__TruncRange *tr,
                          char *msg, size_t n)
{
  char why[256];
  Env *rep = peer_call_seg(addr, req, 3000, why, sizeof why);
  if (rep == NULL)
    fail_msg("%s did not answer: %s", addr, why);
  if (rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO)
    fail_msg("%s answered a scan with body %d", addr, rep->body_case);
  uint32_t code = ERR_CONFLICT;
  for (size_t i = 0; i < rep->seg_info->n_truncs; i++) {
    const Auralog__TruncRange *h = rep->seg_info->truncs[i];
    if (h->epoch == tr->epoch && h->from == tr->from && h->to == tr->to)
      code = 0;
  }
  snprintf(msg, n, "%s", code ? "skipped by the scan" : "");
  wire_free(rep);
  return code;
}

/* A truncation on the three paths a member reaches a node by: a Truncate,
 * an Append that carries it, a recovery's scan that installs it. The codes
 * of the three answers in code[] (the scan's: did the segment take it). */
static void on_three_paths(const char *addr, uint64_t vid, uint64_t epoch,
                           const Auralog__EpochTicket *tk, uint64_t from, uint64_t to,
                           uint32_t code[3], char msg[3][300])
{
  struct peer_trunc st;
  Auralog__TruncRange tr;
  peer_trunc_range(&tr, &st, vid, epoch, from, to);
  Env e = AURALOG__ENVELOPE__INIT;
  Auralog__Truncate t = AURALOG__TRUNCATE__INIT;
  t.volume_id = vid;
  t.epoch = epoch;
  t.from = from;
  t.to = to;
  t.ticket = (Auralog__EpochTicket *)tk;
  t.sig = tr.sig;
  e.body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
  e.truncate = &t;
  code[0] = to_node(addr, &e, msg[0], sizeof msg[0]);
  Env a = AURALOG__ENVELOPE__INIT;
  Auralog__Append ap = AURALOG__APPEND__INIT;
  ap.volume_id = vid;
  ap.epoch = epoch;
  ap.trunc = &tr;
  ap.ticket = (Auralog__EpochTicket *)tk;
  a.body_case = AURALOG__ENVELOPE__BODY_APPEND;
  a.append = &ap;
  code[1] = to_node(addr, &a, msg[1], sizeof msg[1]);
  Env q = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery sq = AURALOG__SEG_QUERY__INIT;
  Auralog__TruncRange *trs[1] = {&tr};
  sq.volume_id = vid;
  sq.epoch = epoch;
  sq.ticket = (Auralog__EpochTicket *)tk;
  sq.scan = 1;
  sq.truncs = trs;
  sq.n_truncs = 1;
  q.body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
  q.seg_query = &sq;
  code[2] = scan_took(addr, &q, &tr, msg[2], sizeof msg[2]);
}

static void truncations_are_refused_on_every_path_even_signed(void **state)
{
  (void)state;
  fill_t();
  uint64_t epoch = status_u64("epoch"), vdl = 0;
  for (int i = 0; i < 50 && (vdl = status_u64("vdl")) == 0; i++)
    usleep(100 * 1000);      /* the engine reports every 200 ms */
  assert_true(vdl > 0);
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 0);   /* a reader's view */
  const char *a1 = peer_seg_addr(v, 0, "A1");
  assert_non_null(a1);
  uint32_t code[3];
  char msg[3][300];

  /* A member's own: (0, VDL] of the current epoch, its ticket forged.
   * Before roles, the same with a ticket the coordinator signed for any
   * key holder emptied the volume from a scan. */
  struct auth_signer me;
  uint8_t tsig[AUTH_SIG_BYTES];
  auth_signer_new(&me);
  auth_ticket_sign(&me, v->id, epoch, me.pk, tsig);
  Auralog__EpochTicket forged = AURALOG__EPOCH_TICKET__INIT;
  forged.epoch = epoch;
  forged.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, me.pk};
  forged.sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, tsig};
  on_three_paths(a1, v->id, epoch, &forged, 0, vdl, code, msg);
  for (int i = 0; i < 3; i++)
    if (code[i] != (i < 2 ? ERR_AUTH : ERR_CONFLICT))
      fail_msg("path %d took a forged truncation: %u %s", i, code[i], msg[i]);

  /* With a true ticket (the operator's test takes epoch + 1 for its own
   * key: a writer gone wrong) and its writer's true signature: (0, VDL]
   * starts below the VDL the segment heard from epoch `epoch`, and
   * (VDL, VDL + 2^59] reaches past the LAL. Both refused on each path. */
  Auralog__Volume *w = peer_open_volume(coord, "main", 0, 0, 1);
  uint64_t e1 = w->epoch;
  assert_int_equal(e1, epoch + 1);
  Auralog__EpochTicket tk;
  assert_non_null(peer_ticket(v->id, e1, &tk));
  on_three_paths(a1, v->id, e1, &tk, 0, vdl, code, msg);
  for (int i = 0; i < 3; i++) {
    if (code[i] == 0)
      fail_msg("path %d took (0, %llu] below the heard VDL", i, (unsigned long long)vdl);
    assert_non_null(strstr(msg[i], i < 2 ? "starts below the VDL" : "skipped"));
  }
  on_three_paths(a1, v->id, e1, &tk, vdl, vdl + (1ull << 59), code, msg);
  for (int i = 0; i < 3; i++)
    if (code[i] == 0)
      fail_msg("path %d took (%llu, +2^59]", i, (unsigned long long)vdl);

  /* The volume comes back whole: the writer restarts (a new epoch, a
   * recovery), every acknowledged row is there, and it commits. */
  fault("engine-crash");
  char o[4096];
  if (sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
    fail_msg("cluster up: %s", o);
  assert_int_equal(rows_in_t(), ROWS);
  sql_ok("insert into t(v) values('after');", NULL);
  assert_int_equal(rows_in_t(), ROWS + 1);
  assert_true(status_u64("epoch") > e1);
  auralog__volume__free_unpacked(v, NULL);
  auralog__volume__free_unpacked(w, NULL);
}

int main(void)
{
  log_quiet(1);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(a_member_gets_no_writer_epoch, setup_cluster,
                                    teardown_cluster),
    cmocka_unit_test_setup_teardown(
      a_member_cannot_drop_and_the_operator_not_under_a_live_writer, setup_cluster,
      teardown_cluster),
    cmocka_unit_test_setup_teardown(a_dropped_name_comes_back_only_on_purpose, setup_cluster,
                                    teardown_cluster),
    cmocka_unit_test_setup_teardown(probes_from_a_member_do_not_keep_a_stopped_writer_alive,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(truncations_are_refused_on_every_path_even_signed,
                                    setup_cluster, teardown_cluster),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
