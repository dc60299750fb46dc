/*
 * Integration: a real local cluster (coordinator + six storage nodes as
 * separate processes on loopback), tried as a new user and as an engine
 * would: `cluster up`, `status --json`, append batches to every segment of
 * a protection group, holes and duplicates, reads at a read point, kill -9
 * and restart of a node, garbage on a node's port, and `cluster down`
 * leaving nothing behind.
 *
 * AURALOG_KEEP=1 keeps the cluster directory (logs) after the run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "record.h"
#include "peer.h"
#include "net/rpc.h"

static Auralog__Volume *vol;     /* volume "it" as opened by the tests */

/* ---- helpers ------------------------------------------------------------- */

static const char *node_addr(const char *name)
{
  static char a[64];
  int i = name[0] - 'A';
  snprintf(a, sizeof a, "127.0.0.1:%d", base + 1 + 2 * i + (name[1] - '1'));
  return a;
}

/* One request on a fresh connection; the reply must be of kind want. */
static Env *call(const char *addr, Env *req, int want)
{
  char why[256];
  Env *rep = rpc_once(addr, req, 3000, why, sizeof why);
  if (rep == NULL)
    fail_msg("%s: %s", addr, why);
  if (want && rpc_expect(rep, want, why, sizeof why) != 0)
    fail_msg("%s answered: %s", addr, why);
  return rep;
}

static Auralog__Volume *open_volume(const char *name, int writer)
{
  return peer_open_volume(coord, name, 1, 0, writer);
}

/* A record for page with n bytes of value fill at offset off. */
struct rec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[64];
};

static void mkrec(struct rec *x, uint64_t lsn, uint64_t prev, uint32_t page,
                  uint32_t off, uint8_t fill, int cpl)
{
  auralog__record__init(&x->r);
  auralog__range__init(&x->g);
  memset(x->data, fill, sizeof x->data);
  x->g.off = off;
  x->g.data.data = x->data;
  x->g.data.len = sizeof x->data;
  x->gp = &x->g;
  x->r.lsn = lsn;
  x->r.prev_lsn = prev;
  x->r.page_no = page;
  x->r.flags = cpl ? REC_CPL : 0;
  x->r.ranges = &x->gp;
  x->r.n_ranges = 1;
  rec_seal(&x->r);
}

/* Send recs to the segment of pg 0 on node; returns the reply. Retries a
 * moment while the node has not heard of the segment yet. */
static Env *append_to(const char *node, uint64_t epoch, struct rec *recs, size_t n)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Rec *ptrs[16];
  assert_non_null(vol);         /* opened by new_volume_places_pg_two_per_az */
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &recs[i].r;
  a.volume_id = vol->id;
  a.pg = 0;
  a.epoch = epoch;
  Auralog__EpochTicket tk;
  a.ticket = peer_ticket(vol->id, epoch, &tk);
  a.records = ptrs;
  a.n_records = n;
  req.body_case = AURALOG__ENVELOPE__BODY_APPEND;
  req.append = &a;
  for (int tries = 0;; tries++) {
    Env *rep = call(node_addr(node), &req, 0);
    if (rep->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
        rep->error->code == ERR_UNKNOWN_SEGMENT && tries < 40) {
      wire_free(rep);
      usleep(50000);
      continue;
    }
    return rep;
  }
}

static uint64_t ack_scl(Env *rep)
{
  char why[256];
  if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_APPEND_ACK, why, sizeof why) != 0)
    fail_msg("append refused: %s", why);
  uint64_t scl = rep->append_ack->scl;
  wire_free(rep);
  return scl;
}

static struct rec chain[5];

/* Read page at read_point, as a writer does: naming `need`, the PG's last
 * record at or below the read point. Up to 50 that is the chain's; a read
 * point above 50 stands for a writer that wrote a record there (which the
 * segments were refused or never got). */
static Env *read_page(const char *node, uint32_t page, uint64_t read_point)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
  assert_non_null(vol);
  rp.volume_id = vol->id;
  rp.pg = 0;
  rp.page_no = page;
  rp.read_point = read_point;
  rp.need = read_point > 50 ? read_point : 0;
  for (int i = 0; i < 5 && read_point <= 50; i++)
    if (chain[i].r.lsn <= read_point)
      rp.need = chain[i].r.lsn;
  req.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
  req.read_page = &rp;
  return call(node_addr(node), &req, 0);
}

/* SCL of node's segment of pg 0 in `status --json`, -1 if not shown. */
static long long status_scl(cJSON *o, const char *node)
{
  cJSON *pg = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "pgs"), 0), *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments"))
    if (strcmp(cJSON_GetObjectItem(s, "node")->valuestring, node) == 0)
      return (long long)cJSON_GetObjectItem(s, "scl")->valuedouble;
  return -1;
}

/* Wait until status shows node's SCL of pg 0 at want (heartbeats lag). */
static void wait_status_scl(const char *node, long long want)
{
  long long got = -1;
  for (int i = 0; i < 50; i++) {
    cJSON *o = status("it");
    got = status_scl(o, node);
    cJSON_Delete(o);
    if (got == want)
      return;
    usleep(100000);
  }
  fail_msg("status shows %s at scl %lld, want %lld", node, got, want);
}

static const char *nodes[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};

/* The chain the tests write into pg 0 (page 3 and page 5), declared above:
 *   lsn 10 <- 0, 20 <- 10, 30 <- 20 (CPL), then 40 <- 30, 50 <- 40. */
static void make_chain(void)
{
  mkrec(&chain[0], 10, 0, 3, 0, 0x11, 0);
  mkrec(&chain[1], 20, 10, 5, 100, 0x22, 0);
  mkrec(&chain[2], 30, 20, 3, 32, 0x33, 1);
  mkrec(&chain[3], 40, 30, 3, 4000, 0x44, 0);
  mkrec(&chain[4], 50, 40, 5, 200, 0x55, 1);
}

/* ---- set-up -------------------------------------------------------------- */

static int setup(void **state)
{
  (void)state;
  make_chain();
  return cluster_start("cluster");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- tests --------------------------------------------------------------- */

static void cluster_up_gives_six_nodes_over_three_azs(void **state)
{
  (void)state;
  cJSON *o = status("it"), *n;
  int per_az[3] = {0}, total = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes")) {
    const char *az = cJSON_GetObjectItem(n, "az")->valuestring;
    assert_string_equal(cJSON_GetObjectItem(n, "state")->valuestring, "up");
    assert_true(az[0] >= 'A' && az[0] <= 'C');
    per_az[az[0] - 'A']++;
    total++;
  }
  assert_int_equal(total, 6);
  for (int i = 0; i < 3; i++)
    assert_int_equal(per_az[i], 2);
  /* The contract's fields are all there. */
  const char *fields[] = {"volume", "epoch", "vdl", "vcl", "next_lsn", "lal",
                          "truncations", "nodes", "pgs"};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
    assert_non_null(cJSON_GetObjectItem(o, fields[i]));
  cJSON_Delete(o);
}

static void cluster_up_again_leaves_running_members_alone(void **state)
{
  (void)state;
  pid_t before[NCOPIES];
  for (int i = 0; i < NCOPIES; i++)
    before[i] = pid_of(nodes[i]);
  pid_t cpid = pid_of("coord");
  char out[4096];
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  assert_non_null(strstr(out, "already running"));
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(pid_of(nodes[i]), before[i]);
  assert_int_equal(pid_of("coord"), cpid);
}

static void new_volume_places_pg_two_per_az(void **state)
{
  (void)state;
  vol = open_volume("it", 1);
  assert_int_equal(vol->epoch, 1);
  assert_int_equal(vol->n_pgs, 1);
  Auralog__Pg *pg = vol->pgs[0];
  assert_int_equal(pg->n_segments, 6);
  int per_az[3] = {0};
  for (size_t i = 0; i < 6; i++) {
    per_az[pg->segments[i]->az[0] - 'A']++;
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(pg->segments[i]->node, pg->segments[j]->node);
  }
  assert_int_equal(per_az[0], 2);
  assert_int_equal(per_az[1], 2);
  assert_int_equal(per_az[2], 2);
  /* Growing adds PGs with their own placement; opening again finds it. */
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
  g.name = "it";
  g.npgs = 3;
  req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
  req.grow_volume = &g;
  Env *rep = call(coord, &req, AURALOG__ENVELOPE__BODY_VOLUME);
  assert_int_equal(rep->volume->n_pgs, 3);
  assert_int_equal(rep->volume->pgs[2]->first_page, 2 * PG_PAGES);
  wire_free(rep);
}

static void append_to_all_six_is_acked_with_scl(void **state)
{
  (void)state;
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(ack_scl(append_to(nodes[i], 1, chain, 3)), 30);
  for (int i = 0; i < NCOPIES; i++)
    wait_status_scl(nodes[i], 30);
}

static void hole_keeps_scl_until_filled(void **state)
{
  (void)state;
  /* 50 arrives before 40: the SCL must stay at 30 on every segment. */
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(ack_scl(append_to(nodes[i], 1, &chain[4], 1)), 30);
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(ack_scl(append_to(nodes[i], 1, &chain[3], 1)), 50);
  /* Sending the whole chain again is harmless: all duplicates. */
  Env *rep = append_to("B2", 1, chain, 5);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_APPEND_ACK);
  assert_int_equal(rep->append_ack->added, 0);
  assert_int_equal(rep->append_ack->duplicates, 5);
  assert_int_equal(rep->append_ack->scl, 50);
  wire_free(rep);
}

/* The page as the test expects it at read point rp, from the chain. */
static void expected_page(uint8_t *out, uint32_t page, uint64_t rp)
{
  Rec *recs[5];
  size_t n = 0;
  for (int i = 0; i < 5; i++)
    if (chain[i].r.page_no == page)
      recs[n++] = &chain[i].r;
  page_build(out, PAGE_SIZE_DEFAULT, NULL, 0, recs, n, rp);
}

static void read_at_read_point_returns_page_as_of_it(void **state)
{
  (void)state;
  uint8_t want[PAGE_SIZE_DEFAULT];
  uint64_t points[] = {0, 10, 25, 30, 45, 50};
  for (size_t i = 0; i < sizeof points / sizeof *points; i++) {
    Env *rep = read_page("C1", 3, points[i]);
    assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_PAGE);
    expected_page(want, 3, points[i]);
    assert_int_equal(rep->page->data.len, PAGE_SIZE_DEFAULT);
    assert_memory_equal(rep->page->data.data, want, PAGE_SIZE_DEFAULT);
    wire_free(rep);
  }
  Env *rep = read_page("A2", 3, 45);
  assert_int_equal(rep->page->page_lsn, 40);
  wire_free(rep);
  /* Above the SCL the segment cannot answer: it says so. */
  rep = read_page("A2", 3, 51);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(rep->error->code, ERR_NOT_COMPLETE);
  assert_non_null(strstr(rep->error->msg, "try another segment"));
  wire_free(rep);
}

static void bad_records_are_refused_and_change_nothing(void **state)
{
  (void)state;
  struct rec bad;
  /* A page outside pg 0. */
  mkrec(&bad, 60, 50, PG_PAGES + 1, 0, 0x66, 1);
  Env *rep = append_to("A1", 1, &bad, 1);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(rep->error->code, ERR_OUT_OF_RANGE);
  wire_free(rep);
  /* A backlink that skips a held record. */
  mkrec(&bad, 60, 30, 3, 0, 0x66, 1);
  rep = append_to("A1", 1, &bad, 1);
  assert_int_equal(rep->error->code, ERR_CONFLICT);
  wire_free(rep);
  /* The SCL did not move and the page is unchanged. */
  uint8_t want[PAGE_SIZE_DEFAULT];
  expected_page(want, 3, 50);
  rep = read_page("A1", 3, 50);
  assert_memory_equal(rep->page->data.data, want, PAGE_SIZE_DEFAULT);
  wire_free(rep);
  rep = read_page("A1", 3, 60);
  assert_int_equal(rep->error->code, ERR_NOT_COMPLETE);
  wire_free(rep);
}

static void old_epoch_is_fenced(void **state)
{
  (void)state;
  Auralog__Volume *v2 = open_volume("it", 1);   /* a second writer */
  assert_int_equal(v2->epoch, 2);
  struct rec r;
  mkrec(&r, 60, 50, 5, 0, 0x66, 1);
  assert_int_equal(ack_scl(append_to("B1", 2, &r, 1)), 60);
  mkrec(&r, 70, 60, 5, 0, 0x77, 1);
  Env *rep = append_to("B1", 1, &r, 1);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(rep->error->code, ERR_STALE_EPOCH);
  assert_non_null(strstr(rep->error->msg, "fenced by epoch 2"));
  wire_free(rep);
  auralog__volume__free_unpacked(v2, NULL);
}

static void node_keeps_records_and_scl_after_kill_9(void **state)
{
  (void)state;
  pid_t pid = pid_of("A1");
  stop_member("A1", SIGKILL);
  wait_node_state("A1", "down", 1000);      /* its connection closed */
  char out[4096];
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  assert_true(pid_of("A1") != pid);
  assert_string_equal(node_state("A1"), "up");
  /* The page at the old SCL is still there, and the SCL came back. */
  uint8_t want[PAGE_SIZE_DEFAULT];
  expected_page(want, 3, 50);
  Env *rep = read_page("A1", 3, 50);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_PAGE);
  assert_memory_equal(rep->page->data.data, want, PAGE_SIZE_DEFAULT);
  wire_free(rep);
  wait_status_scl("A1", 50);
  /* It goes on from there: the next record chains onto 50. */
  struct rec r;
  mkrec(&r, 60, 50, 5, 0, 0x66, 1);
  assert_int_equal(ack_scl(append_to("A1", 2, &r, 1)), 60);
}

static void silent_node_is_shown_down_then_up(void **state)
{
  (void)state;
  /* SIGSTOP: the process lives and its connection stays open, but it
   * sends no heartbeat. The coordinator must notice by the timeout. */
  pid_t pid = pid_of("C2");
  assert_int_equal(kill(pid, SIGSTOP), 0);
  unsigned long long t0 = now_ms();
  wait_node_state("C2", "down", NODE_DOWN_MS + 2000);
  assert_true(now_ms() - t0 >= NODE_DOWN_MS - HEARTBEAT_MS);
  assert_string_equal(node_state("C1"), "up");
  assert_int_equal(kill(pid, SIGCONT), 0);
  wait_node_state("C2", "up", 2000);
}

static void garbage_closes_only_that_connection(void **state)
{
  (void)state;
  const char *targets[] = {node_addr("B2"), coord};
  for (size_t t = 0; t < 2; t++) {
    char why[256];
    struct rpc r;
    /* 1: a length far over the limit. */
    assert_int_equal(rpc_open(&r, targets[t], 2000, why, sizeof why), 0);
    uint8_t huge[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
    assert_int_equal(rpc_send_raw(&r, huge, sizeof huge), 0);
    Env *rep = rpc_recv(&r, 2000, why, sizeof why);
    assert_non_null(rep);
    assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
    assert_int_equal(rep->error->code, ERR_BAD_FRAME);
    wire_free(rep);
    assert_null(rpc_recv(&r, 2000, why, sizeof why));   /* then closed, */
    assert_non_null(strstr(why, "closed"));             /* not timed out */
    rpc_close(&r);
    /* 2: random bytes behind a plausible length. */
    srand(7);
    for (int k = 0; k < 20; k++) {
      uint8_t junk[68];
      put_be32(junk, 64);
      for (int i = 4; i < 68; i++)
        junk[i] = (uint8_t)rand();
      assert_int_equal(rpc_open(&r, targets[t], 2000, why, sizeof why), 0);
      rpc_send_raw(&r, junk, sizeof junk);
      /* Either an error and a close, or (if the bytes happened to be a
       * valid message) an answer; never a hang or a crash. */
      while ((rep = rpc_recv(&r, 2000, why, sizeof why)) != NULL)
        wire_free(rep);
      rpc_close(&r);
    }
  }
  /* A record with a bad CRC: refused, connection closed. */
  struct rec bad;
  mkrec(&bad, 70, 60, 5, 0, 0x77, 1);
  bad.data[3] ^= 1;
  Env *rep = append_to("B2", 2, &bad, 1);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_ERROR);
  assert_int_equal(rep->error->code, ERR_BAD_CRC);
  wire_free(rep);
  /* The node and the coordinator still serve a well-formed client. */
  rep = read_page("B2", 3, 50);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_PAGE);
  wire_free(rep);
  cJSON *o = status("it");
  cJSON *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes"))
    assert_string_equal(cJSON_GetObjectItem(n, "state")->valuestring, "up");
  cJSON_Delete(o);
}

static void commands_fail_with_one_clear_line(void **state)
{
  (void)state;
  char out[4096];
  assert_int_equal(sh(out, sizeof out, "%s frobnicate 2>&1", bin), 2);
  assert_non_null(strstr(out, "unknown command 'frobnicate'"));
  assert_non_null(strchr(out, '\n'));
  assert_null(strchr(strchr(out, '\n') + 1, '\n'));
  assert_int_not_equal(sh(out, sizeof out, "%s node 2>&1", bin), 0);
  assert_non_null(strstr(out, "--az"));
  assert_int_not_equal(sh(out, sizeof out, "%s status --coord 127.0.0.1:1 2>&1", bin), 0);
  assert_non_null(strstr(out, "cannot reach"));
  assert_int_not_equal(sh(out, sizeof out, "%s cluster sideways --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "unknown action"));
  for (const char *const *c = (const char *const[]){"coord", "node", "cluster", "status", NULL};
       *c; c++) {
    assert_int_equal(sh(out, sizeof out, "%s %s --help", bin, *c), 0);
    assert_non_null(strstr(out, "usage: auralog"));
  }
}

/* Tried as a new user would, with the cluster on other ports than the
 * defaults: status, sql, viz and fault find it by its directory (--dir or
 * $AURALOG_DIR: its cluster.json names the coordinator), no --coord; a
 * directory with no cluster is one clear line and a non-zero exit. */
static void commands_find_the_cluster_by_its_directory(void **state)
{
  (void)state;
  char out[8192], empty[300];
  const char *noenv = "env -u AURALOG_COORD -u AURALOG_ENGINE -u AURALOG_DIR";
  assert_int_equal(sh(out, sizeof out, "%s %s status --dir %s 2>&1", noenv, bin, dir), 0);
  assert_non_null(strstr(out, "volume main"));
  assert_int_equal(sh(out, sizeof out, "%s AURALOG_DIR=%s %s status --json 2>&1", noenv, dir,
                      bin), 0);
  assert_non_null(strstr(out, "\"volume\""));
  assert_int_equal(sh(out, sizeof out, "%s %s sql --dir %s 'SELECT 6*7' 2>&1", noenv, bin,
                      dir), 0);
  assert_string_equal(out, "42\n");
  assert_int_equal(sh(out, sizeof out, "%s %s viz --dir %s 2>&1", noenv, bin, dir), 0);
  assert_non_null(strstr(out, "digraph"));
  snprintf(empty, sizeof empty, "%s-empty", dir);
  sh(NULL, 0, "mkdir -p %s", empty);
  for (const char *const *c = (const char *const[]){"fault --dir %s engine-crash",
       "cluster status --dir %s", "failover --dir %s --to R1", NULL}; *c; c++) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, *c, empty);
    int rc = sh(out, sizeof out, "%s %s %s 2>&1", noenv, bin, cmd);
    if (rc == 0 || strstr(out, "no cluster in") == NULL || strchr(out, '\n') != strrchr(out, '\n'))
      fail_msg("`auralog %s` with no cluster there: exit %d, '%s'", cmd, rc, out);
  }
  sh(NULL, 0, "rmdir %s", empty);
}

/* Tried as a new user would: a `cluster up` that fails half way (here a
 * node's port is taken by another program) says why in one line and
 * leaves nothing of its own running; the members it started held ports
 * and data, and the next `cluster up` met them. */
static void a_failed_cluster_up_leaves_nothing_running(void **state)
{
  (void)state;
  char d2[300], o[8192];
  snprintf(d2, sizeof d2, "%s-busy", dir);
  int b2 = free_block((int)getpid() * 2 + 7);
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(b2 + 3)),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(s, 4), 0);
  int rc = sh(o, sizeof o, "%s cluster up --dir %s --base-port %d --no-failover 2>&1", bin, d2,
              b2);
  close(s);
  if (rc == 0)
    fail_msg("`cluster up` with a node's port taken succeeded: %s", o);
  assert_non_null(strstr(o, "stopped the"));
  /* Any auralog process whose command line names d2 (argv[0] is the
   * binary: not a shell that mentions it). */
  DIR *pd = opendir("/proc");
  struct dirent *e;
  int left = 0;
  while ((e = readdir(pd)) != NULL) {
    char p[300], buf[4096];
    snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
    FILE *f = e->d_name[0] >= '0' && e->d_name[0] <= '9' ? fopen(p, "r") : NULL;
    if (f == NULL)
      continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    int is_auralog = strstr(buf, "auralog") != NULL;   /* argv[0] only: up to its NUL */
    for (size_t i = 0; i < n; i++)
      if (buf[i] == 0)
        buf[i] = ' ';
    left += is_auralog && strstr(buf, d2) != NULL;
  }
  closedir(pd);
  if (left)
    fail_msg("%d member%s of the failed start still run%s: %s", left, left == 1 ? "" : "s",
             left == 1 ? "s" : "", o);
  sh(NULL, 0, "%s cluster down --dir %s >/dev/null 2>&1; rm -rf %s", bin, d2, d2);
}

static void cluster_down_leaves_no_process(void **state)
{
  (void)state;
  assert_true(live_cluster_processes() >= 8);
  char out[4096];
  assert_int_equal(sh(out, sizeof out, "%s cluster down --dir %s", bin, dir), 0);
  assert_non_null(strstr(out, "stopped coord"));
  assert_int_equal(live_cluster_processes(), 0);
  /* No member reported memory errors, undefined behaviour or leaks (in
   * a `make test SAN=1` build they write such reports to their logs). */
  assert_no_sanitizer_reports();
  /* Once more: nothing to stop, still success. */
  assert_int_equal(sh(out, sizeof out, "%s cluster down --dir %s", bin, dir), 0);
  assert_non_null(strstr(out, "nothing running"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(cluster_up_gives_six_nodes_over_three_azs),
    cmocka_unit_test(cluster_up_again_leaves_running_members_alone),
    cmocka_unit_test(new_volume_places_pg_two_per_az),
    cmocka_unit_test(append_to_all_six_is_acked_with_scl),
    cmocka_unit_test(hole_keeps_scl_until_filled),
    cmocka_unit_test(read_at_read_point_returns_page_as_of_it),
    cmocka_unit_test(bad_records_are_refused_and_change_nothing),
    cmocka_unit_test(old_epoch_is_fenced),
    cmocka_unit_test(node_keeps_records_and_scl_after_kill_9),
    cmocka_unit_test(silent_node_is_shown_down_then_up),
    cmocka_unit_test(garbage_closes_only_that_connection),
    cmocka_unit_test(commands_fail_with_one_clear_line),
    cmocka_unit_test(a_failed_cluster_up_leaves_nothing_running),
    cmocka_unit_test(commands_find_the_cluster_by_its_directory),
    cmocka_unit_test(cluster_down_leaves_no_process),
  };
  return cmocka_run_group_tests_name("integration: local cluster", tests, setup, teardown);
}
