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
 *    segments answer and the others' endpoints go down.
 */
#include "fake_io.h"

#include "lib/log.h"
#include "record.h"
#include "vfs/volume_int.h"

/* ---- the writer and its recovery ------------------------------------------ */

struct wfix {
  struct fake f;
  struct volume *v;
  struct ep *seg[NCOPIES];     /* the writer's endpoint to each node */
};

/* Set a writer of epoch 1 up from a volume description of one PG on the
 * six nodes, as sim/writer.c does, start recovery and bring the six
 * endpoints up. */
static void writer_setup(struct wfix *x)
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
  vd.epoch = 1;
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
    vcore_on_up(v, x->seg[i]);
  }
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
  assert_int_equal(count(&x.f, x.seg[0], SEG_QUERY), 0);   /* no scan went out */
  writer_teardown(&x);
}

int main(void)
{
  log_quiet(2);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(writer_recovers_a_clean_volume_then_commits_at_write_quorum),
    cmocka_unit_test(recovery_needs_a_read_quorum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
