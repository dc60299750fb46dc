/*
 * test_wcore.c: the writer's volume core (vfs/volume_int.h) and its
 * recovery (vfs/open.c) driven directly by their events, with no socket
 * and no simulated network: the fake struct io of fake_io.h records what
 * the writer sends, and the test answers for the six segments. What is
 * checked, as a user of the protocol would say it:
 *
 *  - a writer set up from a volume description (one PG on six nodes)
 *    recovers a clean volume in two rounds (state, then scan: no
 *    truncation to write) and serves from VDL 0;
 *  - a page it ships goes to all six segments once it is woken; three
 *    acks do not make it durable, the fourth does (write quorum 4 of 6),
 *    and its CPL becomes the VDL;
 *  - recovery fails, naming the read quorum, when only two of the six
 *    segments answer and the others' endpoints go down: a failure worth
 *    another attempt (ERR_UNAVAILABLE);
 *  - the data-loss alarm: when the records of a read quorum prove a VDL
 *    below one a segment heard, recovery fails with ERR_DATA_LOSS, naming
 *    the segment, its node and both LSNs, after sending nothing but its
 *    state and scan queries (no Append, no truncation, nothing adopted),
 *    and the open is not tried again (no new epoch); likewise when the
 *    higher VDL is heard only in the scan round;
 *  - the end-to-end page check (vfs/pagelsn.h): a segment that answers a
 *    page the writer wrote with an older page LSN (the page without its
 *    newest record) is refused, counted and named; the read goes to
 *    another segment, whose right page is what the reader gets, and the
 *    stale node gets no reads while others can serve;
 *  - an idle PG's segments hear the PGMRPL: once writes stop (or a read
 *    that held it ends after they stopped), each segment of a PG written
 *    gets one Append with no records carrying the tail it may free to,
 *    after MRPL_TELL_MS, and only once;
 *  - reads go to the fast segments: two nodes that answer in 300 ms (in
 *    time, so never counted slow) get a read now and then to measure them,
 *    not a third of them; once they heal, they get their share back;
 *  - after a recovery, the pages of the records it proved and adopted are
 *    checked exactly, and a page whose only record above the VDL was cut
 *    is not held to the cut LSN.
 */
#include "fake_io.h"
#include "lab_expect.h"

#include "lib/log.h"
#include "record.h"
#include "vfs/volume_int.h"

/* ---- the writer and its recovery ------------------------------------------ */

struct wfix {
  struct fake f;
  struct volume *v;
  struct ep *seg[NCOPIES];     /* the writer's endpoint to each node */
};

/* Set a writer of epoch `epoch` up from a volume description of one PG on
 * the six nodes, as sim/writer.c does, start recovery and bring the six
 * endpoints up. */
static void writer_setup_up(struct wfix *x, uint64_t epoch, int nup)
{
  Auralog__Segment seg[NCOPIES], *ptr[NCOPIES];
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  pg0_segments(seg, ptr);
  Auralog__Pg pg = AURALOG__PG__INIT;
  Auralog__Pg *pgp = &pg;
  pg.npages = PG_PAGES;
  pg.segments = ptr;
  pg.n_segments = NCOPIES;
  Auralog__Volume vd = AURALOG__VOLUME__INIT;
  vd.id = VOL;
  vd.name = "v";
  vd.page_size = PSIZE;
  vd.pg_pages = PG_PAGES;
  vd.epoch = epoch;
  vd.pgs = &pgp;
  vd.n_pgs = 1;

  struct volume *v = x->v = calloc(1, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", vd.name);
  v->id = vd.id;
  v->epoch = vd.epoch;
  v->page_size = vd.page_size;
  v->pg_pages = vd.pg_pages;
  v->io = &x->f.io;
  vol_adopt(v, &vd);
  assert_int_equal(v->npgs, 1);
  assert_int_equal(v->nnodes, NCOPIES);
  v->rcv = rcv_start(v, v->id, v->npgs);
  vcore_wake(v);                 /* connects to the six nodes */
  for (int i = 0; i < NCOPIES; i++) {
    x->seg[i] = ep_named(&x->f, addrs[i]);
    assert_int_equal(count(&x->f, x->seg[i], 0), 0);
    if (i < nup)
      vcore_on_up(v, x->seg[i]);
  }
}

static void writer_setup_at(struct wfix *x, uint64_t epoch)
{
  writer_setup_up(x, epoch, NCOPIES);
}

static void writer_setup(struct wfix *x)
{
  writer_setup_at(x, 1);
}

static void writer_teardown(struct wfix *x)
{
  vcore_free(x->v);
  free(x->v);
  fake_free(&x->f);
}

/* Segment i answers the SegQuery sent to it: a segment with nothing. */
static void answer_query(struct wfix *x, int i, int scan)
{
  const Env *q = take(&x->f, x->seg[i], SEG_QUERY);
  assert_int_equal(q->seg_query->volume_id, VOL);
  assert_int_equal(q->seg_query->epoch, 1);
  assert_int_equal(q->seg_query->scan, scan);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
  si.volume_id = VOL;
  si.pg = 0;
  si.epoch = 1;
  env.req = q->req;
  env.body_case = SEG_INFO;
  env.seg_info = &si;
  DELIVER(vcore_on_msg, x->v, x->seg[i], &env);
}

/* Segment i acknowledges Append req, complete to scl. */
static void ack(struct wfix *x, int i, uint64_t req, uint64_t scl)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__AppendAck a = AURALOG__APPEND_ACK__INIT;
  a.volume_id = VOL;
  a.pg = 0;
  a.scl = scl;
  a.added = 1;
  env.req = req;
  env.body_case = APPEND_ACK;
  env.append_ack = &a;
  DELIVER(vcore_on_msg, x->v, x->seg[i], &env);
}

static void writer_recovers_a_clean_volume_then_commits_at_write_quorum(void **state)
{
  (void)state;
  struct wfix x;
  char why[256];
  writer_setup(&x);
  struct volume *v = x.v;

  /* Round 1: every segment is asked its state, once. */
  assert_int_equal(rcv_round(v->rcv), 1);
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(count(&x.f, x.seg[i], SEG_QUERY), 1);
  for (int i = 0; i < NCOPIES; i++) {
    assert_int_equal(rcv_round(v->rcv), 1);   /* waits for every answer */
    answer_query(&x, i, 0);
  }
  /* Round 2: the scans. */
  assert_int_equal(rcv_round(v->rcv), 2);
  for (int i = 0; i < NCOPIES; i++)
    answer_query(&x, i, 1);
  /* Nothing anywhere: no round 3, no truncation, the volume serves at 0. */
  assert_int_equal(rcv_result(v->rcv, why, sizeof why), 1);
  assert_int_equal(v->q.vdl, 0);
  assert_int_equal(v->st.trunc_to, 0);
  rcv_free(v->rcv);
  v->rcv = NULL;
  v->opened = 1;

  /* One mini-transaction of one page. */
  uint8_t page[PSIZE] = {0};
  memcpy(page + 10, "abcd", 4);
  struct drange dr = {.off = 10, .len = 4};
  struct mtr_page mp = {.page_no = 3, .flags = REC_ZERO, .after = page, .ranges = &dr,
                        .nranges = 1};
  assert_int_equal(vcore_ship_refusal(v, 1, why, sizeof why), 0);
  uint64_t cpl = vcore_ship(v, &mp, 1);
  assert_int_equal(cpl, 1);
  assert_int_equal(count(&x.f, x.seg[0], APPEND), 0);   /* sent on wake */
  vcore_wake(v);
  uint64_t req[NCOPIES];
  for (int i = 0; i < NCOPIES; i++) {
    assert_int_equal(count(&x.f, x.seg[i], APPEND), 1);
    const Env *e = take(&x.f, x.seg[i], APPEND);
    const Auralog__Append *a = e->append;
    req[i] = e->req;
    assert_int_equal(a->epoch, 1);
    assert_int_equal(a->n_records, 1);
    assert_int_equal(a->records[0]->lsn, cpl);
    assert_int_equal(a->records[0]->page_no, 3);
    assert_true(a->records[0]->flags & REC_CPL);
    assert_int_equal(rec_check(a->records[0], PSIZE, why, sizeof why), ERR_NONE);
  }
  /* Acks: three are not a write quorum; the fourth is. */
  for (int i = 0; i < NCOPIES; i++) {
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__AppendAck ack = AURALOG__APPEND_ACK__INIT;
    ack.volume_id = VOL;
    ack.pg = 0;
    ack.scl = cpl;
    ack.added = 1;
    env.req = req[i];
    env.body_case = APPEND_ACK;
    env.append_ack = &ack;
    DELIVER(vcore_on_msg, v, x.seg[i], &env);
    assert_int_equal(v->q.vdl, i + 1 < VW ? 0 : cpl);
  }
  assert_int_equal(v->st.commits, 1);
  assert_int_equal(v->ncpls, 0);
  assert_int_equal(v->fenced, 0);
  writer_teardown(&x);
}

static void recovery_needs_a_read_quorum(void **state)
{
  (void)state;
  struct wfix x;
  char why[256];
  writer_setup(&x);
  struct volume *v = x.v;
  answer_query(&x, 0, 0);
  answer_query(&x, 1, 0);
  assert_int_equal(rcv_result(v->rcv, why, sizeof why), 0);
  /* The other four nodes' endpoints go down before they answer. */
  for (int i = 2; i < NCOPIES; i++) {
    x.seg[i]->open = 0;
    vcore_on_down(v, x.seg[i]);
  }
  assert_int_equal(rcv_result(v->rcv, why, sizeof why), -1);
  assert_non_null(strstr(why, "read quorum"));
  assert_non_null(strstr(why, "2 of 6"));
  assert_int_equal(rcv_round(v->rcv), 0);
  /* Transient: the open tries again (vol_open_if), with a new epoch. */
  assert_int_equal(rcv_error(v->rcv), ERR_UNAVAILABLE);
  assert_true(vol_open_again(rcv_error(v->rcv)));
  assert_int_equal(count(&x.f, x.seg[0], SEG_QUERY), 0);   /* no scan went out */
  writer_teardown(&x);
}

/* An AZ is down: its two nodes never connect. Recovery does not wait
 * RCV_CONNECT_MS for them once the four others answered every request
 * of a round (a write quorum of the PG): it goes on when they have been
 * silent twice as long as that quorum took (here 200 ms: at 400). With
 * three answers it still waits: a read quorum is not what round 3 needs,
 * and the missing nodes may yet come. */
static void recovery_goes_on_without_nodes_that_never_connect(void **state)
{
  (void)state;
  struct wfix x;
  char why[256];
  writer_setup_up(&x, 1, 4);   /* nodes 4 and 5 never connect */
  struct volume *v = x.v;
  assert_int_equal(rcv_round(v->rcv), 1);
  assert_int_equal(count(&x.f, x.seg[4], SEG_QUERY), 0);
  for (int i = 0; i < 3; i++)
    answer_query(&x, i, 0);
  x.f.now += 2 * RCV_QUORUM_WAIT_MS;
  rcv_tick(v->rcv);
  assert_int_equal(rcv_round(v->rcv), 1);    /* three: a read quorum only, waits */
  answer_query(&x, 3, 0);                    /* the quorum, 200 ms in */
  rcv_tick(v->rcv);
  x.f.now += 2 * RCV_QUORUM_WAIT_MS - 1;
  rcv_tick(v->rcv);
  assert_int_equal(rcv_round(v->rcv), 1);    /* silent 399 ms: not yet twice 200 */
  x.f.now += 1;
  rcv_tick(v->rcv);
  assert_int_equal(rcv_round(v->rcv), 2);    /* on, well before RCV_CONNECT_MS */
  for (int i = 0; i < 4; i++)
    answer_query(&x, i, 1);
  /* Not every segment answered: round 3 writes the truncation, to the four. */
  assert_int_equal(rcv_round(v->rcv), 3);
  for (int i = 0; i < 4; i++) {
    const Env *e = take(&x.f, x.seg[i], APPEND);
    assert_non_null(e->append->trunc);
    ack(&x, i, e->req, 0);
  }
  assert_int_equal(count(&x.f, x.seg[4], APPEND), 0);
  assert_int_equal(rcv_result(v->rcv, why, sizeof why), 1);
  assert_true(x.f.now - 1000 < RCV_CONNECT_MS);
  writer_teardown(&x);
}

/* AZ C is partitioned: its nodes took the queries and never answer. Once
 * the four others answered (a write quorum of the PG), recovery gives the
 * two up RCV_QUORUM_WAIT_MS after it last heard from them, not at
 * RCV_ANSWER_MS; while one of them was heard lately, it waits. */
static void recovery_goes_on_without_nodes_that_never_answer(void **state)
{
  (void)state;
  struct wfix x;
  writer_setup(&x);
  struct volume *v = x.v;
  for (int i = 0; i < 4; i++)
    answer_query(&x, i, 0);
  x.f.now += RCV_QUORUM_WAIT_MS / 2;
  rcv_tick(v->rcv);
  assert_int_equal(rcv_round(v->rcv), 1);    /* asked just now: their answers may come */
  x.f.now += RCV_QUORUM_WAIT_MS;
  rcv_tick(v->rcv);
  assert_int_equal(rcv_round(v->rcv), 2);    /* silent: on without them */
  assert_true(x.f.now - 1000 < RCV_ANSWER_MS);
  assert_int_equal(count(&x.f, x.seg[4], SEG_QUERY), 1);   /* round 1's only */
  writer_teardown(&x);
}

/* On a slow machine every answer is slow: the four answers of round 1
 * came 500 ms in. The two still owing answers keep their place until they
 * have been silent twice that long (a slow node is no partition): a round
 * that dropped them at RCV_QUORUM_WAIT_MS could fall short of round 3's
 * write quorum when one of the four is slow there in turn. */
static void a_slow_round_waits_longer_for_its_last_nodes(void **state)
{
  (void)state;
  struct wfix x;
  writer_setup(&x);
  struct volume *v = x.v;
  x.f.now += 500;
  for (int i = 0; i < 4; i++)
    answer_query(&x, i, 0);
  rcv_tick(v->rcv);
  x.f.now += 499;            /* silent 999 ms */
  rcv_tick(v->rcv);
  assert_int_equal(rcv_round(v->rcv), 1);
  answer_query(&x, 4, 0);    /* one of them was slow, not gone */
  x.f.now += 1;              /* node 5 silent 1000 ms: twice the quorum's 500 */
  rcv_tick(v->rcv);
  assert_int_equal(rcv_round(v->rcv), 2);
  assert_int_equal(count(&x.f, x.seg[4], SEG_QUERY), 1);   /* 4 is in round 2 */
  assert_int_equal(count(&x.f, x.seg[5], SEG_QUERY), 1);   /* 5: round 1's only */
  writer_teardown(&x);
}

/* ---- the end-to-end page check ---------------------------------------------- */

#define READ_PAGE AURALOG__ENVELOPE__BODY_READ_PAGE

/* Recovery of a clean volume, as in the first test; the volume serves. */
static void open_clean(struct wfix *x)
{
  char why[256];
  writer_setup(x);
  for (int i = 0; i < NCOPIES; i++)
    answer_query(x, i, 0);
  for (int i = 0; i < NCOPIES; i++)
    answer_query(x, i, 1);
  assert_int_equal(rcv_result(x->v->rcv, why, sizeof why), 1);
  rcv_free(x->v->rcv);
  x->v->rcv = NULL;
  x->v->opened = 1;
}

/* The writer writes "text" at off of page page_no (one MTR) and all six
 * segments acknowledge it: returns its LSN, now the VDL. */
static uint64_t write_durable(struct wfix *x, uint32_t page_no, uint8_t *page, uint32_t off,
                              const char *text)
{
  size_t len = strlen(text);
  memcpy(page + off, text, len);
  struct drange dr = {.off = off, .len = (uint32_t)len};
  struct mtr_page mp = {.page_no = page_no, .flags = REC_ZERO, .after = page, .ranges = &dr,
                        .nranges = 1};
  uint64_t cpl = vcore_ship(x->v, &mp, 1);
  vcore_wake(x->v);
  for (int i = 0; i < NCOPIES; i++)
    ack(x, i, take(&x->f, x->seg[i], APPEND)->req, cpl);
  assert_int_equal(x->v->q.vdl, cpl);
  return cpl;
}

/* The segment the writer sent a ReadPage to, and that request. */
static int read_sent_to(struct wfix *x, const Env **req)
{
  int to = -1;
  for (int i = 0; i < NCOPIES; i++)
    if (count(&x->f, x->seg[i], READ_PAGE)) {
      assert_int_equal(to, -1);            /* one segment only (§4.2.3) */
      assert_int_equal(count(&x->f, x->seg[i], READ_PAGE), 1);
      to = i;
      *req = take(&x->f, x->seg[i], READ_PAGE);
    }
  assert_int_not_equal(to, -1);
  return to;
}

/* Segment i answers read request q with data, as of page_lsn. */
static void answer_page(struct wfix *x, int i, const Env *q, const uint8_t *data,
                        uint64_t page_lsn)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Page pg = AURALOG__PAGE__INIT;
  pg.volume_id = VOL;
  pg.pg = 0;
  pg.page_no = q->read_page->page_no;
  pg.page_lsn = page_lsn;
  pg.data.data = (uint8_t *)data;
  pg.data.len = PSIZE;
  env.req = q->req;
  env.body_case = PAGE;
  env.page = &pg;
  DELIVER(vcore_on_msg, x->v, x->seg[i], &env);
}

static void a_stale_page_is_refused_and_another_segment_asked(void **state)
{
  (void)state;
  struct wfix x;
  open_clean(&x);
  struct volume *v = x.v;
  static uint8_t v1[PSIZE], v2[PSIZE], out[PSIZE];
  uint64_t l1 = write_durable(&x, 3, v1, 10, "old!");
  memcpy(v2, v1, PSIZE);
  uint64_t l2 = write_durable(&x, 3, v2, 20, "new!");
  assert_true(l2 > l1);

  /* The reader misses its cache: the page as of the VDL. */
  struct readreq *r = vcore_read(v, 3, out);
  assert_non_null(r);
  assert_int_equal(r->rp, l2);
  vcore_wake(v);
  const Env *q;
  int bad = read_sent_to(&x, &q);
  assert_int_equal(q->read_page->read_point, l2);
  /* That segment's disk lost record l2: it serves the page as of l1, and
   * says so, with no error. */
  answer_page(&x, bad, q, v1, l1);
  assert_int_equal(r->done, 0);            /* refused: SQLite never sees it */
  assert_int_equal(v->st.stale_pages, 1);
  assert_string_equal(v->st.stale_node, addrs[bad]);
  assert_int_equal(v->st.pages_read, 0);
  assert_memory_not_equal(out, v1, PSIZE);
  /* ... and another segment is asked at once, at the same read point. */
  int good = read_sent_to(&x, &q);
  assert_int_not_equal(good, bad);
  assert_int_equal(q->read_page->read_point, l2);
  /* A page newer than the writer wrote is refused too (a record it never
   * wrote), and so is one above the read point. */
  answer_page(&x, good, q, v2, l2 + 1);
  assert_int_equal(r->done, 0);
  assert_int_equal(v->st.stale_pages, 2);
  int third = read_sent_to(&x, &q);
  assert_true(third != bad && third != good);
  answer_page(&x, third, q, v2, l2);
  assert_int_equal(r->done, 1);
  assert_int_equal(r->rc, 0);
  assert_int_equal(r->page_lsn, l2);
  assert_memory_equal(out, v2, PSIZE);      /* the right page, and only it */
  assert_int_equal(v->st.pages_read, 1);
  read_reap(v);
  free(r);

  /* The stale node is avoided while others can serve: the next reads of
   * the same page (which would go to the same segments first) go elsewhere. */
  for (int k = 0; k < 3; k++) {
    r = vcore_read(v, 3, out);
    vcore_wake(v);
    int to = read_sent_to(&x, &q);
    assert_true(to != bad && to != good);
    answer_page(&x, to, q, v2, l2);
    assert_int_equal(r->done, 1);
    read_reap(v);
    free(r);
  }
  /* ... for READ_STALE_MS. */
  assert_true(v->nodes[v->pgs[0].node[bad]].stale_until > x.f.now);
  assert_int_equal(v->nodes[v->pgs[0].node[bad]].stale_until, x.f.now + READ_STALE_MS);
  writer_teardown(&x);
}

static void a_page_first_read_is_a_floor_for_later_reads(void **state)
{
  (void)state;
  struct wfix x;
  open_clean(&x);
  struct volume *v = x.v;
  static uint8_t pg[PSIZE], out[PSIZE];
  uint64_t l1 = write_durable(&x, 5, pg, 0, "p5");
  /* The writer forgets page 5, as if it were written before it opened:
   * its first read is believed and teaches a floor. */
  pl_free(&v->plsn);
  pl_init(&v->plsn);
  struct readreq *r = vcore_read(v, 5, out);
  vcore_wake(v);
  const Env *q;
  int s = read_sent_to(&x, &q);
  answer_page(&x, s, q, pg, l1);
  assert_int_equal(r->done, 1);
  read_reap(v);
  free(r);
  uint64_t l = 0;
  assert_int_equal(pl_get(&v->plsn, 5, &l), PL_FLOOR);
  assert_int_equal(l, l1);
  /* A later read answered by a segment that lost that record is refused. */
  r = vcore_read(v, 5, out);
  vcore_wake(v);
  s = read_sent_to(&x, &q);
  static const uint8_t zero[PSIZE];
  answer_page(&x, s, q, zero, 0);
  assert_int_equal(r->done, 0);
  assert_int_equal(v->st.stale_pages, 1);
  s = read_sent_to(&x, &q);
  answer_page(&x, s, q, pg, l1);
  assert_int_equal(r->done, 1);
  assert_memory_equal(out, pg, PSIZE);
  read_reap(v);
  free(r);
  writer_teardown(&x);
}

/* Every segment of pg 0 got one Append with no records, carrying tail:
 * acked; nothing else went. */
static void beacons_carry(struct wfix *x, uint64_t tail)
{
  for (int i = 0; i < NCOPIES; i++) {
    assert_int_equal(count(&x->f, x->seg[i], APPEND), 1);
    const Env *e = take(&x->f, x->seg[i], APPEND);
    assert_int_equal(e->append->n_records, 0);
    assert_int_equal(e->append->pgmrpl_tail, tail);
    ack(x, i, e->req, tail);
  }
}

static void an_idle_pg_hears_the_pgmrpl_once(void **state)
{
  (void)state;
  struct wfix x;
  open_clean(&x);
  struct volume *v = x.v;
  static uint8_t pg[PSIZE], out[PSIZE];
  write_durable(&x, 1, pg, 0, "a");
  uint64_t l2 = write_durable(&x, 1, pg, 4, "b");
  /* The Append of l2 carried the PGMRPL before it (the tail l1): the
   * segments may not free l2's page versions yet. Writes stop. */
  x.f.now += MRPL_TELL_MS + 1;
  vcore_tick(v);
  beacons_carry(&x, l2);
  /* Once: later ticks send nothing while nothing moves. */
  for (int k = 0; k < 3; k++) {
    x.f.now += MRPL_TELL_MS + 1;
    vcore_tick(v);
    for (int i = 0; i < NCOPIES; i++)
      assert_int_equal(count(&x.f, x.seg[i], APPEND), 0);
  }
  /* A read holds the PGMRPL at l2 while l3 is written; it ends after the
   * writes stopped: the segments hear l3, a MRPL_TELL_MS later. */
  struct readreq *r = vcore_read(v, 1, out);
  vcore_wake(v);
  const Env *q;
  int s = read_sent_to(&x, &q);
  uint64_t l3 = write_durable(&x, 1, pg, 8, "c");
  x.f.now += MRPL_TELL_MS + 1;
  vcore_tick(v);               /* the read still holds it at l2: told already */
  for (int i = 0; i < NCOPIES; i++)
    assert_int_equal(count(&x.f, x.seg[i], APPEND), 0);
  /* (That read was late, READ_TRY_MS: the tick sent it to another
   * segment, which answers.) */
  const Env *q2;
  int s2 = read_sent_to(&x, &q2);
  assert_int_not_equal(s2, s);
  static uint8_t was[PSIZE];
  memcpy(was, pg, PSIZE);
  memset(was + 8, 0, 1);
  answer_page(&x, s2, q2, was, l2);
  assert_int_equal(r->done, 1);
  read_reap(v);
  free(r);
  x.f.now += MRPL_TELL_MS + 1;
  vcore_tick(v);
  beacons_carry(&x, l3);
  writer_teardown(&x);
}

/* Two segments that answer every read in 300 ms, in time (READ_TRY_MS),
 * so never counted slow: reads go to the four fast ones once that is
 * measured, bar one a READ_LAT_MS to measure them again; healed, they get
 * their share back. Before: every page whose rotation began at or reached
 * them first paid 300 ms (two of every six reads or more). */
static void reads_go_to_the_fast_segments(void **state)
{
  (void)state;
  struct wfix x;
  open_clean(&x);
  struct volume *v = x.v;
  static uint8_t pg[PSIZE], out[PSIZE];
  uint64_t l1 = write_durable(&x, 0, pg, 0, "fast");
  int slow_a = 2, slow_b = 4;    /* B1 and C1 */
  int to_slow = 0, reads = 0;
  for (int k = 0; k < 60; k++) {
    uint32_t page = (uint32_t)k % 6;     /* every rotation */
    struct readreq *r = vcore_read(v, page, out);
    vcore_wake(v);
    const Env *q;
    int s = read_sent_to(&x, &q);
    int slow = s == slow_a || s == slow_b;
    x.f.now += slow ? 300 : 1;
    to_slow += slow;
    reads++;
    answer_page(&x, s, q, page == 0 ? pg : (const uint8_t[PSIZE]){0}, page == 0 ? l1 : 0);
    assert_int_equal(r->done, 1);
    read_reap(v);
    free(r);
  }
  /* Each slow one: one read to learn it, then one a READ_LAT_MS (the loop
   * took about 60 ms, plus 300 a slow read). */
  assert_true(to_slow <= 4);
  /* Healed: after READ_LAT_MS unheard they are tried again, answer fast,
   * and take reads again. */
  x.f.now += READ_LAT_MS + 1;
  to_slow = 0;
  for (int k = 0; k < 60; k++) {
    uint32_t page = (uint32_t)k % 6;
    struct readreq *r = vcore_read(v, page, out);
    vcore_wake(v);
    const Env *q;
    int s = read_sent_to(&x, &q);
    x.f.now += 1;
    to_slow += s == slow_a || s == slow_b;
    answer_page(&x, s, q, page == 0 ? pg : (const uint8_t[PSIZE]){0}, page == 0 ? l1 : 0);
    read_reap(v);
    free(r);
  }
  assert_true(to_slow >= 10);
  writer_teardown(&x);
}

/* A record for a scan answer: page, lsn, backlink; a CPL (an MTR of one
 * record) linking to prev_cpl. */
struct srec {
  Rec r;
  Auralog__Range g, *gp;
  Auralog__PgLast ml, *mlp;
  uint8_t data[4];
};

static Rec *srec(struct srec *t, uint64_t lsn, uint64_t prev, uint32_t page, uint64_t prev_cpl)
{
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  auralog__pg_last__init(&t->ml);
  memset(t->data, (int)lsn, sizeof t->data);
  t->g.off = 0;
  t->g.data.data = t->data;
  t->g.data.len = sizeof t->data;
  t->gp = &t->g;
  t->ml.pg = 0;
  t->ml.lsn = lsn;
  t->mlp = &t->ml;
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = page;
  t->r.flags = REC_CPL | REC_ZERO;
  t->r.prev_cpl = prev_cpl;
  t->r.epoch = 0;
  t->r.mtr = &t->mlp;
  t->r.n_mtr = 1;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
  return &t->r;
}

static void recovery_teaches_the_adopted_pages_and_forgets_the_cut(void **state)
{
  (void)state;
  lab_rule("§4.3: recovery adopts what it proved, truncates what it did not, and the writer then "
           "serves each page at the LSN of its newest surviving record");
  struct wfix x;
  char why[256];
  writer_setup(&x);
  struct volume *v = x.v;
  /* Round 1: segments 0..3 held records (an older writer's), no hint. */
  lab_at("Round 1: segments 0..3 held records (an older writer's), no hint");
  for (int i = 0; i < NCOPIES; i++) {
    const Env *q = take(&x.f, x.seg[i], SEG_QUERY);
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
    si.volume_id = VOL;
    si.epoch = 1;
    si.max_lsn = i < 4 ? 4 : 0;
    env.req = q->req;
    env.body_case = SEG_INFO;
    env.seg_info = &si;
    DELIVER(vcore_on_msg, v, x.seg[i], &env);
  }
  expect_eq(rcv_round(v->rcv), 2, "the recovery's round");
  /* Round 2: records 1 (page 9), 2 (page 9), 4 (page 10, whose backlink 3
   * no one holds: off the chain, cut by the truncation). */
  lab_at("Round 2: records 1 (page 9), 2 (page 9), 4 (page 10, whose backlink 3 no one holds: "
         "off the chain, cut by the truncation)");
  struct srec a, b, c;
  Rec *recs[3] = {srec(&a, 1, 0, 9, 0), srec(&b, 2, 1, 9, 1), srec(&c, 4, 3, 10, 3)};
  for (int i = 0; i < NCOPIES; i++) {
    const Env *q = take(&x.f, x.seg[i], SEG_QUERY);
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
    si.volume_id = VOL;
    si.epoch = 1;
    si.recs = i < 4 ? recs : NULL;
    si.n_recs = i < 4 ? 3 : 0;
    env.req = q->req;
    env.body_case = SEG_INFO;
    env.seg_info = &si;
    DELIVER(vcore_on_msg, v, x.seg[i], &env);
  }
  for (int i = 0; i < NCOPIES; i++)        /* the scan is over: no more pages */
    if (count(&x.f, x.seg[i], SEG_QUERY)) {
      const Env *q = take(&x.f, x.seg[i], SEG_QUERY);
      Env env = AURALOG__ENVELOPE__INIT;
      Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
      si.volume_id = VOL;
      si.epoch = 1;
      env.req = q->req;
      env.body_case = SEG_INFO;
      env.seg_info = &si;
      DELIVER(vcore_on_msg, v, x.seg[i], &env);
    }
  /* Round 3: the adopted records 1, 2 and the truncation above VDL 2. */
  lab_at("Round 3: the adopted records 1, 2 and the truncation above VDL 2");
  expect_eq(rcv_round(v->rcv), 3, "the recovery's round");
  for (int i = 0; i < NCOPIES; i++) {
    const Env *e = take(&x.f, x.seg[i], APPEND);
    expect_eq(e->append->n_records, 2, "records in round 3's Append (the ones adopted)");
    ack(&x, i, e->req, 2);
  }
  expect_eq(rcv_result(v->rcv, why, sizeof why), 1, "rcv_result (1: recovered, 0: not yet, -1: "
            "failed)");
  expect_eq(v->q.vdl, 2, "the VDL the writer serves from");
  rcv_free(v->rcv);
  v->rcv = NULL;
  v->opened = 1;
  uint64_t l = 0;
  expect_eq(pl_get(&v->plsn, 9, &l), PL_EXACT, "what the writer knows of page 9's LSN (pl_get)");
  expect_eq(l, 2, "page 9's LSN as the writer knows it");
  expect_eq(pl_get(&v->plsn, 10, &l), PL_UNKNOWN, "what the writer knows of page 10's LSN "
            "(pl_get)");

  /* Page 9 served without record 2 is refused; the right one goes. */
  lab_at("Page 9 served without record 2 is refused; the right one goes");
  static uint8_t out[PSIZE], p9[PSIZE];
  memset(p9, 2, 4);
  struct readreq *r = vcore_read(v, 9, out);
  vcore_wake(v);
  const Env *q;
  int s = read_sent_to(&x, &q);
  expect_eq(q->read_page->need, 2, "the LSN the read asks for");
  static uint8_t p9old[PSIZE];
  memset(p9old, 1, 4);
  answer_page(&x, s, q, p9old, 1);
  expect_eq(r->done, 0, "the read done (1) or waiting (0)");
  expect_eq(v->st.stale_pages, 1, "stale pages refused");
  s = read_sent_to(&x, &q);
  answer_page(&x, s, q, p9, 2);
  expect_eq(r->done, 1, "the read done (1) or waiting (0)");
  expect_true(memcmp(out, p9, PSIZE) == 0, "the bytes of out equal to p9");
  read_reap(v);
  free(r);
  /* Page 10: its only record (4) was cut; a zero page as of 0 is right. */
  lab_at("Page 10: its only record (4) was cut; a zero page as of 0 is right");
  static const uint8_t zero[PSIZE];
  r = vcore_read(v, 10, out);
  vcore_wake(v);
  s = read_sent_to(&x, &q);
  answer_page(&x, s, q, zero, 0);
  expect_eq(r->done, 1, "the read done (1) or waiting (0)");
  expect_eq(v->st.stale_pages, 1, "stale pages refused");
  read_reap(v);
  free(r);
  writer_teardown(&x);
}

/* ---- the data-loss alarm ----------------------------------------------------- */

/* Segment i answers the state query: it holds records up to max_lsn and
 * heard VDL vdl. */
static void answer_state(struct wfix *x, int i, uint64_t max_lsn, uint64_t vdl)
{
  const Env *q = take(&x->f, x->seg[i], SEG_QUERY);
  assert_int_equal(q->seg_query->scan, 0);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
  si.volume_id = VOL;
  si.epoch = 1;
  si.max_lsn = max_lsn;
  si.scl = max_lsn;
  si.vdl = vdl;
  env.req = q->req;
  env.body_case = SEG_INFO;
  env.seg_info = &si;
  DELIVER(vcore_on_msg, x->v, x->seg[i], &env);
}

/* Segment i answers a scan with recs[0..n) (its last page: more = 0),
 * saying it heard VDL vdl. */
static void answer_scan(struct wfix *x, int i, Rec **recs, size_t n, uint64_t vdl)
{
  const Env *q = take(&x->f, x->seg[i], SEG_QUERY);
  assert_int_equal(q->seg_query->scan, 1);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
  si.volume_id = VOL;
  si.epoch = 1;
  si.vdl = vdl;
  si.recs = n ? recs : NULL;
  si.n_recs = n;
  env.req = q->req;
  env.body_case = SEG_INFO;
  env.seg_info = &si;
  DELIVER(vcore_on_msg, x->v, x->seg[i], &env);
}

/* After the alarm: the open failed with ERR_DATA_LOSS, a line naming
 * node (the segment that heard the most), heard and the VDL proved; the
 * writer sent nothing but state and scan queries, none carrying a
 * truncation, and nothing is left to send; it would not try again. */
static void assert_alarm(struct wfix *x, const char *node, uint64_t heard, uint64_t vdl)
{
  char why[512], want[128];
  struct volume *v = x->v;
  expect_eq(rcv_result(v->rcv, why, sizeof why), -1, "rcv_result (1: recovered, 0: not yet, -1: "
            "failed)");
  expect_eq(rcv_error(v->rcv), ERR_DATA_LOSS, "the recovery's error (ERR_DATA_LOSS is %d)",
            ERR_DATA_LOSS);
  expect_true(!(vol_open_again(rcv_error(v->rcv))), "the open not to be tried again");
  expect_eq(rcv_round(v->rcv), 0, "the recovery's round (0: over)");
  expect_eq(rcv_vdl(v->rcv), vdl, "the VDL the recovery proved");
  printf("# %s\n", why);
  expect_true(strncmp(why, "data loss: ", 11) == 0, "the reason to begin with 'data loss: '");
  snprintf(want, sizeof want, "recovery proves VDL %llu but pg 0 segment on node %s heard "
           "VDL %llu", (unsigned long long)vdl, node, (unsigned long long)heard);
  if (strstr(why, want) == NULL)
    fail_msg("the alarm '%s' does not say '%s'", why, want);
  snprintf(want, sizeof want, "acknowledged commits above %llu are missing",
           (unsigned long long)vdl);
  expect_true(strstr(why, want) != NULL, "the alarm '%s' to say '%s'", why, want);
  expect_true(strstr(why, "refusing to open; nothing truncated") != NULL,
              "the alarm '%s' to say 'refusing to open; nothing truncated'", why);
  expect_true(strchr(why, '\n') == NULL, "the alarm to be one line");
  for (size_t i = 0; i < x->f.nout; i++) {
    const Env *e = x->f.out[i].env;
    if (e->body_case != SEG_QUERY)
      fail_msg("recovery sent a message of kind %d after the alarm", (int)e->body_case);
    expect_eq(e->seg_query->n_truncs, 0, "truncations a query sent after the alarm carries");
  }
  for (int i = 0; i < NCOPIES; i++)
    expect_eq(count(&x->f, x->seg[i], 0), 0, "messages left to send to segment %d after the alarm",
              i);
  /* Events after it change nothing (time passing, a node lost). */
  x->f.now += 10 * RCV_ANSWER_MS;
  vcore_tick(v);
  x->seg[0]->open = 0;
  vcore_on_down(v, x->seg[0]);
  expect_eq(rcv_result(v->rcv, why, sizeof why), -1, "rcv_result (1: recovered, 0: not yet, -1: "
            "failed)");
  for (size_t i = 0; i < x->f.nout; i++)
    expect_eq(x->f.out[i].env->body_case, SEG_QUERY, "the kind of message %zu sent (only "
              "queries: %d)", i, SEG_QUERY);
  rcv_free(v->rcv);
  v->rcv = NULL;
}

static void recovery_below_a_heard_vdl_is_a_data_loss_alarm(void **state)
{
  (void)state;
  lab_rule("§4.3: a recovery that proves a VDL below one a segment heard has lost acknowledged "
           "commits: it must stop, name them and write nothing");
  struct wfix x;
  writer_setup(&x);
  /* An older writer committed 1 and 2, then 3..5, and told B1 VDL 5; the
   * records above 2 are gone from every segment (beyond the fault model:
   * four disks lost them, and C1, C2 never had them). A read quorum of
   * all six answers: A1, A2, B1, B2 hold 1 and 2; B1 heard 5. */
  static const uint64_t heard[NCOPIES] = {0, 0, 5, 0, 0, 0};
  for (int i = 0; i < NCOPIES; i++)
    answer_state(&x, i, i < 4 ? 2 : 0, heard[i]);
  expect_eq(rcv_round(x.v->rcv), 2, "the recovery's round");
  struct srec a, b;
  Rec *recs[2] = {srec(&a, 1, 0, 9, 0), srec(&b, 2, 1, 9, 1)};
  for (int i = 0; i < NCOPIES; i++)
    answer_scan(&x, i, recs, i < 4 ? 2 : 0, heard[i]);
  /* They prove VDL 2; B1 heard 5: commits 3..5 were acknowledged. */
  lab_at("records 1, 2 held, B1 heard VDL 5 in round 1");
  assert_alarm(&x, "B1", 5, 2);
  writer_teardown(&x);

  /* The same records, every segment heard 2 in round 1, and B2's scan
   * answer says it heard 4 (a VDL it learned between the rounds): the
   * alarm too, from the scan round's answers. */
  writer_setup(&x);
  for (int i = 0; i < NCOPIES; i++)
    answer_state(&x, i, i < 4 ? 2 : 0, i < 4 ? 2 : 0);
  for (int i = 0; i < NCOPIES; i++)
    answer_scan(&x, i, recs, i < 4 ? 2 : 0, i == 3 ? 4 : i < 4 ? 2 : 0);
  lab_at("records 1, 2 held, B2 heard VDL 4 only in the scan round");
  assert_alarm(&x, "B2", 4, 2);
  writer_teardown(&x);

  /* What the segments heard is what the records prove: no alarm, round 3
   * (the truncation above 2) goes out. */
  writer_setup(&x);
  for (int i = 0; i < NCOPIES; i++)
    answer_state(&x, i, i < 4 ? 2 : 0, i < 4 ? 2 : 0);
  for (int i = 0; i < NCOPIES; i++)
    answer_scan(&x, i, NULL, 0, i < 4 ? 2 : 0);
  expect_eq(rcv_round(x.v->rcv), 3, "the recovery's round");
  expect_eq(rcv_error(x.v->rcv), ERR_NONE, "the recovery's error (0: none)");
  const Env *e = take(&x.f, x.seg[0], APPEND);
  expect_true(e->append->trunc != NULL, "round 3's Append to carry the truncation");
  expect_eq(e->append->trunc->from, 2, "the truncation's start (the VDL proved)");
  writer_teardown(&x);
}

/* ---- the truncation range a recovery writes (implement lab 25) ------------- */

/* A writer of epoch 3 recovers from six segments that all hold the same:
 * the truncations tr[0..ntr) (of older epochs), records recs[0..nr) (one
 * PG), max_lsn the highest they hold. It acknowledges round 3's Appends.
 * Returns the end of the range it truncated (v->st.trunc_to; the start is
 * the VDL it proved, *vdl). */
static uint64_t recover_from(Auralog__TruncRange **tr, size_t ntr, Rec **recs, size_t nr,
                             uint64_t max_lsn, uint64_t *vdl)
{
  struct wfix x;
  char why[256];
  writer_setup_at(&x, 3);
  struct volume *v = x.v;
  for (int round = 1; round <= 2; round++)
    for (int i = 0; i < NCOPIES; i++) {
      const Env *q = take(&x.f, x.seg[i], SEG_QUERY);
      Env env = AURALOG__ENVELOPE__INIT;
      Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
      si.volume_id = VOL;
      si.epoch = 2;
      si.max_lsn = max_lsn;
      si.truncs = tr;
      si.n_truncs = ntr;
      si.recs = round == 2 ? recs : NULL;
      si.n_recs = round == 2 ? nr : 0;
      env.req = q->req;
      env.body_case = SEG_INFO;
      env.seg_info = &si;
      DELIVER(vcore_on_msg, v, x.seg[i], &env);
    }
  for (int i = 0; i < NCOPIES; i++)        /* the scan is over: no more pages */
    if (count(&x.f, x.seg[i], SEG_QUERY)) {
      const Env *q = take(&x.f, x.seg[i], SEG_QUERY);
      Env env = AURALOG__ENVELOPE__INIT;
      Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
      si.volume_id = VOL;
      si.epoch = 2;
      env.req = q->req;
      env.body_case = SEG_INFO;
      env.seg_info = &si;
      DELIVER(vcore_on_msg, v, x.seg[i], &env);
    }
  if (rcv_round(v->rcv) == 3)
    for (int i = 0; i < NCOPIES; i++) {
      const Env *e = take(&x.f, x.seg[i], APPEND);
      ack(&x, i, e->req, max_lsn);
    }
  int done = rcv_result(v->rcv, why, sizeof why);
  if (done != 1)
    fail_msg("recovery did not finish (%d): %s", done, why);
  *vdl = v->q.vdl;
  uint64_t to = v->st.trunc_to;
  writer_teardown(&x);
  return to;
}

/* A truncation range of an older epoch, as a segment reports it. */
static Auralog__TruncRange *trange(Auralog__TruncRange *t, uint64_t epoch, uint64_t from,
                                   uint64_t to)
{
  auralog__trunc_range__init(t);
  t->epoch = epoch;
  t->from = from;
  t->to = to;
  return t;
}

static void truncation_ends_lal_past_the_vdl_or_earlier_end(void **state)
{
  (void)state;
  lab_rule("§4.3: recovery truncates every LSN the last writer may have handed out, "
           "LAL past the higher of the VDL and the end of an earlier truncation; "
           "a clean volume needs none");
  uint64_t vdl, to;

  /* Epoch 1 wrote 1 and 2 (durable). Nothing else happened. */
  struct srec a, b, c;
  Rec *recs[3] = {srec(&a, 1, 0, 9, 0), srec(&b, 2, 1, 9, 1), NULL};
  a.r.epoch = b.r.epoch = 1;
  rec_seal(&a.r);
  rec_seal(&b.r);
  lab_at("records 1, 2 of epoch 1, no earlier truncation");
  to = recover_from(NULL, 0, recs, 2, 2, &vdl);
  expect_eq(vdl, 2, "the VDL proved");
  expect_eq(to, 2 + LAL, "the end of the truncation (VDL + LAL)");

  /* Epoch 2 recovered to VDL 2, truncated (2, 2 + LAL], and crashed
   * before anything it wrote was durable: it may have handed out LSNs up
   * to 2 + 2 LAL, above the VDL, which is still 2. */
  Auralog__TruncRange t2, *tr[1] = {trange(&t2, 2, 2, 2 + LAL)};
  lab_at("records 1, 2 of epoch 1, then epoch 2's truncation (2, 2 + LAL] and nothing durable");
  to = recover_from(tr, 1, recs, 2, 2, &vdl);
  expect_eq(vdl, 2, "the VDL proved");
  expect_eq(to, 2 + 2 * LAL, "the end of the truncation (the earlier one's end + LAL)");

  /* Then epoch 2 did make its first record durable, 3 + LAL, above its
   * own truncation: the VDL is past the earlier end, and counts. */
  recs[2] = srec(&c, 3 + LAL, 2, 9, 2);
  c.r.epoch = 2;
  rec_seal(&c.r);
  lab_at("epoch 2's truncation (2, 2 + LAL], then its record 3 + LAL durable");
  to = recover_from(tr, 1, recs, 3, 3 + LAL, &vdl);
  expect_eq(vdl, 3 + LAL, "the VDL proved");
  expect_eq(to, 3 + 2 * LAL, "the end of the truncation (VDL + LAL)");

  /* A brand-new volume: nothing held anywhere, nothing to truncate. */
  lab_at("a clean volume (no segment holds anything)");
  to = recover_from(NULL, 0, NULL, 0, 0, &vdl);
  expect_eq(vdl, 0, "the VDL proved");
  expect_eq(to, 0, "the end of the truncation (none: 0)");
}

int main(void)
{
  log_quiet(2);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(writer_recovers_a_clean_volume_then_commits_at_write_quorum),
    cmocka_unit_test(recovery_needs_a_read_quorum),
    cmocka_unit_test(recovery_goes_on_without_nodes_that_never_connect),
    cmocka_unit_test(recovery_goes_on_without_nodes_that_never_answer),
    cmocka_unit_test(a_slow_round_waits_longer_for_its_last_nodes),
    cmocka_unit_test(a_stale_page_is_refused_and_another_segment_asked),
    cmocka_unit_test(a_page_first_read_is_a_floor_for_later_reads),
    cmocka_unit_test(reads_go_to_the_fast_segments),
    cmocka_unit_test(an_idle_pg_hears_the_pgmrpl_once),
    cmocka_unit_test(recovery_teaches_the_adopted_pages_and_forgets_the_cut),
    cmocka_unit_test(recovery_below_a_heard_vdl_is_a_data_loss_alarm),
    cmocka_unit_test(truncation_ends_lal_past_the_vdl_or_earlier_end),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
