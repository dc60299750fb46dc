/*
 * Integration: the cluster key and the authority of dangerous operations,
 * on real processes (auth.h has the threat model). Each test replays a
 * probe that, before the key, took one message from a local process that
 * was not part of the cluster:
 *
 *  - a process without the key gets one clear error and a closed
 *    connection from every role (coordinator, six nodes, engine), and a
 *    tool run with another cluster's key is told so;
 *  - a member (it holds the key) that forges an epoch, a truncation, a
 *    node's registration, a drop of a volume in use or an engine's report
 *    is refused each time, and the volume keeps every acknowledged row;
 *  - a stranger listening on a member's address cannot pass connections
 *    on to another member (the member names the address it serves);
 *  - 500 idle connections and 20 frames left half sent (10 huge ones from
 *    strangers, 10 of 8 MiB from members) leave a node's memory within a
 *    stated bound, and it goes on serving.
 *
 * AURALOG_KEEP=1 keeps the cluster directory (logs) after each test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/auth.h"
#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "peer.h"

static int setup_cluster(void **state)
{
  (void)state;
  return cluster_start("auth");
}

static int teardown_cluster(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

static const char *node_addr(int i)
{
  static char a[8][64];
  snprintf(a[i], sizeof a[i], "127.0.0.1:%d", base + 1 + i);
  return a[i];
}

/* Rows in table t, as the engine answers. */
static long rows_in_t(void)
{
  sql_ok("select count(*) from t;", NULL);
  return strtol(out, NULL, 10);
}

static void fill_t(int n)
{
  sql_ok("create table if not exists t(i integer primary key, v text);", NULL);
  char q[128];
  for (int i = 0; i < n; i++) {
    snprintf(q, sizeof q, "insert into t(v) values('row %d');", i);
    sql_ok(q, NULL);
  }
}

/* ---- tests --------------------------------------------------------------- */

static void a_process_without_the_key_is_refused_by_every_role(void **state)
{
  (void)state;
  const char *targets[8];
  targets[0] = coord;
  for (int i = 0; i < 6; i++)
    targets[1 + i] = node_addr(i);
  targets[7] = engine;
  for (int t = 0; t < 8; t++) {
    struct rpc r;
    char why[256];
    assert_int_equal(rpc_open_plain(&r, targets[t], 2000, why, sizeof why), 0);
    /* The role speaks first: its challenge. */
    Env *ch = rpc_recv(&r, 2000, why, sizeof why);
    assert_non_null(ch);
    assert_int_equal(ch->body_case, AURALOG__ENVELOPE__BODY_AUTH_CHALLENGE);
    wire_free(ch);
    /* What a stranger sends instead of a proof: a status request. */
    Env req = AURALOG__ENVELOPE__INIT;
    Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
    sr.volume = "main";
    req.req = 1;
    req.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
    req.status_req = &sr;
    size_t len;
    uint8_t *f = wire_frame(&req, &len);
    assert_int_equal(rpc_send_raw(&r, f, len), 0);
    free(f);
    Env *rep = rpc_recv(&r, 2000, why, sizeof why);
    assert_non_null(rep);                                /* one clear error, */
    assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
    assert_int_equal(rep->error->code, ERR_AUTH);
    assert_non_null(strstr(rep->error->msg, "cluster key"));
    wire_free(rep);
    assert_null(rpc_recv(&r, 2000, why, sizeof why));    /* then closed */
    rpc_close(&r);
  }

  /* A tool with another cluster's key is told so, and changes nothing. */
  char other[300];
  assert_int_equal(sh(NULL, 0, "%s cluster key --dir %s/otherkey > /dev/null", bin, dir), 0);
  snprintf(other, sizeof other, "%s/otherkey/cluster.key", dir);
  assert_int_not_equal(sh(out, OUT_SIZE, "%s status --coord %s --key %s 2>&1", bin, coord,
                          other), 0);
  assert_non_null(strstr(out, "wrong cluster key"));
  assert_int_not_equal(sh(out, OUT_SIZE, "%s sql --engine %s --key %s 'select 1' 2>&1", bin,
                          engine, other), 0);
  assert_non_null(strstr(out, "wrong cluster key"));
  /* And with no key at all, one line says where to find one. */
  assert_int_not_equal(sh(out, OUT_SIZE, "AURALOG_KEY=%s/none %s status --coord %s 2>&1", dir,
                          bin, coord), 0);
  assert_non_null(strstr(out, "no cluster key"));
  assert_string_equal(node_state("A1"), "up");
}

static void a_member_cannot_forge_epochs_truncations_registrations_drops_or_reports(
  void **state)
{
  (void)state;
  fill_t(50);
  cJSON *st = NULL;
  uint64_t epoch = 0, vdl = 0;
  for (int i = 0; i < 50 && vdl == 0; i++) {   /* the engine reports every 200 ms */
    if (i)
      usleep(100 * 1000);
    st = status("main");
    epoch = (uint64_t)cJSON_GetObjectItem(st, "epoch")->valuedouble;
    vdl = (uint64_t)cJSON_GetObjectItem(st, "vdl")->valuedouble;
    cJSON_Delete(st);
  }
  assert_true(vdl > 0);
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 0);   /* a reader's view */
  const char *a1 = peer_seg_addr(v, 0, "A1");
  assert_non_null(a1);
  char why[256];

  /* An epoch the coordinator never issued: before, 2^40 fenced the volume
   * for good (the coordinator only adds one per open). */
  Env *rep = peer_seg_query(a1, v->id, 0, 1ull << 40, why, sizeof why);
  assert_non_null(rep);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(rep->error->code, ERR_AUTH);
  wire_free(rep);

  /* A truncation of (0, VDL] in the current epoch, and in the next: no
   * writer signed them. Before, one node took it and gossip spread it. */
  for (uint64_t e = epoch; e <= epoch + 1; e++) {
    rep = peer_truncate(a1, v->id, 0, e, 0, vdl, why, sizeof why);
    assert_non_null(rep);
    assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
    assert_int_equal(rep->error->code, ERR_AUTH);
    wire_free(rep);
  }

  /* A registration as A1 from elsewhere, signed by a key of its own: before,
   * the real A1 was shown down for good. */
  struct auth_signer imp;
  uint8_t sig[AUTH_SIG_BYTES];
  auth_signer_new(&imp);
  auth_id_sign(&imp, "A1", "A", "127.0.0.1:9", sig);
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  reg.id = "A1";
  reg.az = "A";
  reg.addr = "127.0.0.1:9";
  reg.id_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, imp.pk};
  reg.id_sig = (ProtobufCBinaryData){sizeof sig, sig};
  req.body_case = AURALOG__ENVELOPE__BODY_REGISTER;
  req.register_ = &reg;
  rep = peer_call(coord, &req, 2000, why, sizeof why);
  assert_non_null(rep);
  assert_int_equal(rep->error->code, ERR_AUTH);
  wire_free(rep);

  /* Dropping the volume its engine holds. */
  Env dr = AURALOG__ENVELOPE__INIT;
  Auralog__DropVolume dv = AURALOG__DROP_VOLUME__INIT;
  dv.name = "main";
  dr.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
  dr.drop_volume = &dv;
  rep = peer_call(coord, &dr, 2000, why, sizeof why);
  assert_non_null(rep);
  assert_int_equal(rep->error->code, ERR_CONFLICT);
  assert_non_null(strstr(rep->error->msg, "held by its writer"));
  wire_free(rep);

  /* An engine report of an epoch never issued, with a fake VDL: before,
   * status showed it (and its truncation) for good. */
  Env er = AURALOG__ENVELOPE__INIT;
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  es.volume = "main";
  es.addr = "127.0.0.1:9";
  es.epoch = epoch + 5;
  es.vdl = 1ull << 40;
  er.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
  er.engine_stat = &es;
  size_t len;
  uint8_t *f = wire_frame(&er, &len);
  struct rpc r;
  assert_int_equal(rpc_open(&r, coord, 2000, why, sizeof why), 0);
  assert_int_equal(rpc_send_raw(&r, f, len), 0);
  free(f);
  rpc_close(&r);
  usleep(300 * 1000);

  /* Nothing of it stuck: same epoch, a true VDL, A1 where it was and up,
   * every row there, and the engine still commits. */
  st = status("main");
  assert_int_equal((uint64_t)cJSON_GetObjectItem(st, "epoch")->valuedouble, epoch);
  assert_true(cJSON_GetObjectItem(st, "vdl")->valuedouble < (double)(1ull << 39));
  cJSON_Delete(st);
  assert_string_equal(node_state("A1"), "up");
  assert_int_equal(rows_in_t(), 50);
  fill_t(1);
  assert_int_equal(rows_in_t(), 51);
  auralog__volume__free_unpacked(v, NULL);
}

static int tcp_to(const char *addr);

/* A stranger listening on port relays one connection, byte for byte, to
 * to (a member): a child process; returns its pid. */
static pid_t relay(int port, const char *to)
{
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(ls, 4), 0);
  pid_t pid = fork();
  if (pid == 0) {
    int a = accept(ls, NULL, NULL), b = tcp_to(to);
    struct pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    char buf[4096];
    while (poll(p, 2, 5000) > 0) {
      for (int i = 0; i < 2; i++)
        if (p[i].revents) {
          ssize_t n = read(p[i].fd, buf, sizeof buf);
          if (n <= 0 || write(p[1 - i].fd, buf, (size_t)n) != n)
            _exit(0);
        }
    }
    _exit(0);
  }
  close(ls);
  return pid;
}

static void a_stranger_on_a_members_address_cannot_relay_to_another_member(void **state)
{
  (void)state;
  /* Before, a stranger who could listen where a node was (a node down on
   * a shared machine) could pass the writer's connection to another node
   * of the same PG, and the writer counted that node's acks twice. */
  int port = base + 40;
  pid_t pid = relay(port, node_addr(1));
  char addr[64], why[256];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
  struct rpc r;
  assert_int_equal(rpc_open(&r, addr, 3000, why, sizeof why), -1);
  assert_non_null(strstr(why, "answered for"));
  assert_non_null(strstr(why, node_addr(1)));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* VmRSS of pid, in KiB. */
static long rss_kib(pid_t pid)
{
  char p[64], line[256];
  long kib = -1;
  snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
      break;
  fclose(f);
  return kib;
}

static int tcp_to(const char *addr)
{
  int port = atoi(strrchr(addr, ':') + 1);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* The stated bound: the budget for partly received frames, plus a
 * READ_CHUNK per member connection, plus 32 MiB of slack. Under ASan the
 * node's freed buffers wait in its quarantine (256 MiB by default), so
 * its RSS counts what it gave back too: the slack is 128 MiB there. */
#if defined(__SANITIZE_ADDRESS__)
#define MEM_SLACK_MIB 128
#else
#define MEM_SLACK_MIB 32
#endif
#define MEM_BOUND_KIB ((long)(BUFFER_BUDGET >> 10) + MEM_SLACK_MIB * 1024)

static void idle_connections_and_half_sent_frames_leave_a_node_serving(void **state)
{
  (void)state;
  fill_t(5);
  pid_t pid = pid_of("A1");
  long before = rss_kib(pid);
  assert_true(before > 0);

  /* 500 idle connections from strangers. */
  static int idle[500];
  for (int i = 0; i < 500; i++)
    idle[i] = tcp_to(node_addr(0));

  /* 10 strangers start 16 MiB frames: refused at the length. */
  uint8_t hdr[4];
  put_be32(hdr, FRAME_MAX);
  int strangers[10];
  for (int i = 0; i < 10; i++) {
    strangers[i] = tcp_to(node_addr(0));
    if (strangers[i] >= 0 && write(strangers[i], hdr, sizeof hdr) != sizeof hdr) {
      close(strangers[i]);
      strangers[i] = -1;
    }
  }

  /* 10 members start 16 MiB frames and send half of each. */
  static uint8_t half[8 << 20];
  memset(half, 0x5a, sizeof half);
  struct rpc m[10];
  char why[256];
  int busy = 0;
  for (int i = 0; i < 10; i++) {
    assert_int_equal(rpc_open(&m[i], node_addr(0), 3000, why, sizeof why), 0);
    if (rpc_send_raw(&m[i], hdr, sizeof hdr) != 0 || rpc_send_raw(&m[i], half, sizeof half) != 0)
      busy++;               /* closed on it: the budget was taken */
  }
  usleep(500 * 1000);
  long during = rss_kib(pid);
  printf("# node A1 memory: %ld KiB before, %ld KiB with 500 idle connections and 20 "
         "half-sent frames (bound %ld KiB more); %d members refused as busy\n", before,
         during, MEM_BOUND_KIB, busy);
  assert_true(during - before < MEM_BOUND_KIB);

  /* It serves: a member's question is answered at once, and commits go on
   * (A1 is one of the six copies of PG 0). */
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 0);
  unsigned long long t0 = now_ms();
  Env *rep = peer_seg_query(node_addr(0), v->id, 0, v->epoch, why, sizeof why);
  assert_non_null(rep);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_SEG_INFO);
  assert_true(now_ms() - t0 < 2000);
  wire_free(rep);
  auralog__volume__free_unpacked(v, NULL);
  fill_t(5);
  assert_string_equal(node_state("A1"), "up");

  for (int i = 0; i < 500; i++)
    if (idle[i] >= 0)
      close(idle[i]);
  for (int i = 0; i < 10; i++) {
    if (strangers[i] >= 0)
      close(strangers[i]);
    rpc_close(&m[i]);
  }
}

int main(void)
{
  auth_init();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(a_process_without_the_key_is_refused_by_every_role,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(
      a_member_cannot_forge_epochs_truncations_registrations_drops_or_reports, setup_cluster,
      teardown_cluster),
    cmocka_unit_test_setup_teardown(
      a_stranger_on_a_members_address_cannot_relay_to_another_member, setup_cluster,
      teardown_cluster),
    cmocka_unit_test_setup_teardown(idle_connections_and_half_sent_frames_leave_a_node_serving,
                                    setup_cluster, teardown_cluster),
    cmocka_unit_test_setup_teardown(cluster_down_leaves_nothing, setup_cluster,
                                    teardown_cluster),
  };
  return cmocka_run_group_tests_name("integration: the cluster key and authority", tests, NULL,
                                     NULL);
}
