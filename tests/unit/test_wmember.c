/*
 * test_wmember.c: the writer's side of PG membership changes (member.h;
 * vfs/vmember.c, vfs/vcore.c, vfs/open.c), driven by the core's events
 * with the fake io of fake_io.h, the test answering for the segments and
 * for the coordinator's lease-probe answers. What is checked, as a user
 * of the protocol would say it:
 *
 *  - a change that adds a next segment at a position (the begin step)
 *    reaches the writer through a probe answer: it connects to the new
 *    node, sends it the PG's records not yet durable and every new one,
 *    with the PG's new mepoch, and reports the PG in its next probe
 *    (mepoch, adopted_at = its VCL then; M4 (a)), in a probe wire_check lets
 *    through;
 *  - while the position is in transition a record counts there only when
 *    the current segment acknowledged it and the next one's SCL covers it
 *    (M1, M2): the next one's ack with a low SCL does not make it durable;
 *  - the finish (the next becomes current, the old one leaves) keeps the
 *    next one's acks at its position, makes durable what now has a write
 *    quorum, forgets the Appends in flight to the segment that left (its
 *    late answer changes nothing), and sends it nothing more; an older
 *    or repeated membership epoch changes nothing;
 *  - a node's ERR_STALE_MEMBERSHIP refusal is a refusal (retried later)
 *    that asks for a probe soon (M5);
 *  - recovery with a next segment in the description asks only the
 *    current segments (M3), then serves with the position in transition,
 *    used since the VDL it proved;
 *  - the volume's binlog PG (issue 29; BINLOG_PG) changes as a data PG:
 *    its begin and finish come in the probe answer's Volume.binlog, its
 *    next segment gets the binlog records with the new mepoch, a commit
 *    (whose CPL is its binlog record) is durable only once the binlog PG
 *    holds it by M1/M2, and the probe reports it in Volume.binlog.
 */
#include "fake_io.h"

#include "lib/log.h"
#include "member.h"
#include "record.h"
#include "vfs/volume_int.h"

#define NEXT_ADDR "A3:1"
#define NEXT_ID "A3"

struct mfix {
  struct fake f;
  struct volume *v;
  struct ep *seg[NCOPIES];
  struct ep *g;                /* the next segment's node, once connected */
  Auralog__Segment segs[NSLOTS];
  Auralog__Segment *ptr[NSLOTS];
};

/* The description of PG 0: the six current segments, and (with_next) a
 * next one at position 0 on node A3. */
static Auralog__Pg pg0(struct mfix *x, int with_next, uint64_t mepoch)
{
  pg0_segments(x->segs, x->ptr);
  for (int i = 0; i < NCOPIES; i++)
    x->segs[i].pos = (uint32_t)i;
  Auralog__Pg pg = AURALOG__PG__INIT;
  pg.npages = PG_PAGES;
  pg.segments = x->ptr;
  pg.n_segments = NCOPIES;
  pg.mepoch = mepoch;
  if (with_next) {
    Auralog__Segment *g = &x->segs[NCOPIES];
    *g = x->segs[0];
    g->node = NEXT_ID;
    g->addr = NEXT_ADDR;
    g->next = 1;
    g->pos = 0;
    g->since = mepoch;
    x->ptr[NCOPIES] = g;
    pg.n_segments = NCOPIES + 1;
  }
  return pg;
}

static Auralog__Volume vdesc(Auralog__Pg **pgp, uint64_t mseq)
{
  Auralog__Volume vd = AURALOG__VOLUME__INIT;
  vd.id = VOL;
  vd.name = "v";
  vd.page_size = PSIZE;
  vd.pg_pages = PG_PAGES;
  vd.epoch = 1;
  vd.pgs = pgp;
  vd.n_pgs = 1;
  vd.mseq = mseq;
  return vd;
}

/* The binlog PG's description: its six current segments on PG 0's nodes
 * (A1..C2), numbered BINLOG_PG, no pages; with_next: a next one at
 * position 0 on A3 (since mepoch). Its own segment arrays in x. */
static Auralog__Segment blsegs[NSLOTS], *blptr[NSLOTS];
static Auralog__Pg blpg(int with_next, uint64_t mepoch)
{
  pg0_segments(blsegs, blptr);
  for (int i = 0; i < NCOPIES; i++) {
    blsegs[i].pos = (uint32_t)i;
    blsegs[i].pg = BINLOG_PG;
    blsegs[i].npages = 1;
  }
  Auralog__Pg pg = AURALOG__PG__INIT;
  pg.pg = BINLOG_PG;
  pg.npages = 1;
  pg.segments = blptr;
  pg.n_segments = NCOPIES;
  pg.mepoch = mepoch;
  if (with_next) {
    Auralog__Segment *g = &blsegs[NCOPIES];
    *g = blsegs[0];
    g->node = NEXT_ID;
    g->addr = NEXT_ADDR;
    g->next = 1;
    g->pos = 0;
    g->since = mepoch;
    blptr[NCOPIES] = g;
    pg.n_segments = NCOPIES + 1;
  }
  return pg;
}

/* A writer of epoch 1 set up from PG 0's description (with a next
 * segment or not; with the binlog PG if binlog), recovery started, the
 * six current nodes up. */
static void setup_bl(struct mfix *x, int with_next, int binlog)
{
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  Auralog__Pg pg = pg0(x, with_next, with_next ? 3 : 0);
  Auralog__Pg *pgp = &pg, bl = blpg(0, 0);
  Auralog__Volume vd = vdesc(&pgp, pg.mepoch);
  if (binlog)
    vd.binlog = &bl;
  struct volume *v = x->v = calloc(1, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", vd.name);
  v->id = vd.id;
  v->epoch = vd.epoch;
  v->page_size = vd.page_size;
  v->pg_pages = vd.pg_pages;
  v->io = &x->f.io;
  vol_adopt(v, &vd);
  v->mseq = vd.mseq;
  v->rcv = rcv_start(v, v->id, v->npgs);
  vcore_wake(v);
  for (int i = 0; i < NCOPIES; i++) {
    x->seg[i] = ep_named(&x->f, addrs[i]);
    vcore_on_up(v, x->seg[i]);
  }
  if (with_next) {
    x->g = ep_named(&x->f, NEXT_ADDR);
    vcore_on_up(v, x->g);
  }
}

static void teardown(struct mfix *x)
{
  vcore_free(x->v);
  free(x->v);
  fake_free(&x->f);
}

/* Segment i answers its SegQuery: it holds nothing. */
static void answer_query(struct mfix *x, int i, int scan)
{
  const Env *q = take(&x->f, x->seg[i], SEG_QUERY);
  assert_int_equal(q->seg_query->scan, scan);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
  si.volume_id = VOL;
  si.epoch = 1;
  env.req = q->req;
  env.body_case = SEG_INFO;
  env.seg_info = &si;
  DELIVER(vcore_on_msg, x->v, x->seg[i], &env);
}

/* Recovery of a clean volume (with its binlog PG if binlog: each node
 * is asked for both its segments): the writer serves from VDL 0. */
static void open_clean_bl(struct mfix *x, int with_next, int binlog)
{
  char why[256];
  setup_bl(x, with_next, binlog);
  for (int r = 0; r < 1 + binlog; r++)
    for (int i = 0; i < NCOPIES; i++)
      answer_query(x, i, 0);
  for (int r = 0; r < 1 + binlog; r++)
    for (int i = 0; i < NCOPIES; i++)
      answer_query(x, i, 1);
  assert_int_equal(rcv_result(x->v->rcv, why, sizeof why), 1);
  rcv_free(x->v->rcv);
  x->v->rcv = NULL;
  x->v->opened = 1;
}

static void open_clean(struct mfix *x, int with_next)
{
  open_clean_bl(x, with_next, 0);
}

/* The coordinator's answer to a lease probe: mseq, and PG 0 as pg says. */
static void probe_answer(struct mfix *x, Auralog__Pg *pg, uint64_t mseq)
{
  Auralog__Pg *pgp = pg;
  Auralog__Volume vd = vdesc(&pgp, mseq);
  Env env = AURALOG__ENVELOPE__INIT;
  env.body_case = VOLUME;
  env.volume = &vd;
  Env *in = over_wire(&env);     /* as wire_check lets it in */
  vcore_on_members(x->v, in->volume);
  wire_free(in);
}

/* Node e acknowledges Append req, complete to scl. */
static void ack(struct mfix *x, struct ep *e, uint64_t req, uint64_t scl)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__AppendAck a = AURALOG__APPEND_ACK__INIT;
  a.volume_id = VOL;
  a.scl = scl;
  a.added = 1;
  env.req = req;
  env.body_case = APPEND_ACK;
  env.append_ack = &a;
  DELIVER(vcore_on_msg, x->v, e, &env);
}

/* One MTR of one page, shipped and sent: its CPL. */
static uint64_t ship(struct mfix *x, uint32_t page_no)
{
  static uint8_t page[PSIZE];
  page[page_no % PSIZE]++;
  struct drange dr = {.off = page_no % PSIZE, .len = 1};
  struct mtr_page mp = {.page_no = page_no, .flags = REC_ZERO, .after = page, .ranges = &dr,
                        .nranges = 1};
  uint64_t cpl = vcore_ship(x->v, &mp, 1);
  vcore_wake(x->v);
  return cpl;
}

/* The Append node e was sent (exactly one), checked for mepoch. */
static uint64_t append_to(struct mfix *x, struct ep *e, uint64_t mepoch)
{
  assert_int_equal(count(&x->f, e, APPEND), 1);
  const Env *a = take(&x->f, e, APPEND);
  assert_int_equal(a->append->mepoch, mepoch);
  return a->req;
}

/* The begin step reaches a serving writer: position 0 gets next G (A3). */
static void begin(struct mfix *x)
{
  Auralog__Pg pg = pg0(x, 1, 3);
  probe_answer(x, &pg, 3);
  assert_int_equal(x->v->mseq, 3);
  x->g = ep_named(&x->f, NEXT_ADDR);    /* it connected to the new node */
  vcore_on_up(x->v, x->g);
}

static void a_next_segment_takes_writes_and_counts_only_by_its_scl(void **state)
{
  (void)state;
  struct mfix x;
  open_clean(&x, 0);
  struct volume *v = x.v;
  /* A record shipped before the change: sent to the six, not durable. */
  uint64_t l1 = ship(&x, 1);
  uint64_t r1[NCOPIES];
  for (int i = 0; i < NCOPIES; i++)
    r1[i] = append_to(&x, x.seg[i], 0);
  /* The begin step: the writer learns it, connects to G, and sends it the
   * PG's record not yet durable, with the new mepoch. */
  begin(&x);
  assert_int_equal(v->pgs[0].trans, 1);
  assert_int_equal(v->pgs[0].mepoch, 3);
  /* X is the PG's last record handed out (member.h M4: per PG). */
  assert_int_equal(v->pgs[0].adopted_at, l1);
  assert_int_equal(q_trans(&v->q, 0), 1);
  assert_int_equal(v->nnodes, NCOPIES + 1);
  uint64_t g1 = append_to(&x, x.g, 3);
  /* Its probe now names the PG in transition (M4 (a)). */
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vcore_probe_fill(v, &vh);
  assert_int_equal(vh.mseq, 3);
  assert_int_equal(vh.n_pgs, 1);
  assert_int_equal(vh.pgs[0]->pg, 0);
  assert_int_equal(vh.pgs[0]->mepoch, 3);
  assert_int_equal(vh.pgs[0]->adopted_at, l1);
  assert_int_equal(vh.pgs[0]->n_segments, 0);
  vh.name = "v";                      /* the probe as it goes: wire_check lets it through */
  vh.page_size = PSIZE;
  vh.epoch = 1;
  Env pe = AURALOG__ENVELOPE__INIT;
  pe.body_case = VOLUME;
  pe.volume = &vh;
  wire_free(over_wire(&pe));
  vcore_probe_free(&vh);
  /* F (position 0's current) and positions 1..2 hold it, and G acks it
   * with SCL 0 (still hydrating): three positions at most, not durable. */
  for (int i = 0; i < 3; i++)
    ack(&x, x.seg[i], r1[i], l1);
  ack(&x, x.g, g1, 0);
  assert_int_equal(v->q.vdl, 0);
  /* Position 3: F, 1, 2, 3 acknowledged, but position 0 waits for G. */
  ack(&x, x.seg[3], r1[3], l1);
  assert_int_equal(v->q.vdl, 0);
  /* Position 4 makes four positions without position 0. */
  ack(&x, x.seg[4], r1[4], l1);
  assert_int_equal(v->q.vdl, l1);
  /* A new record goes to all seven, and position 0 counts once G's SCL
   * covers it. */
  uint64_t l2 = ship(&x, 2);
  uint64_t r2[NCOPIES];
  for (int i = 0; i < NCOPIES; i++)
    if (i != 5)                     /* (its node still has record 1 in flight) */
      r2[i] = append_to(&x, x.seg[i], 3);
  uint64_t g2 = append_to(&x, x.g, 3);
  for (int i = 0; i < 4; i++)
    ack(&x, x.seg[i], r2[i], l2);
  assert_int_equal(v->q.vdl, l1);     /* F, 1, 2, 3: position 0 waits for G */
  ack(&x, x.g, g2, l2);               /* G complete to l2: position 0 counts */
  assert_int_equal(v->q.vdl, l2);
  teardown(&x);
}

static void a_finish_moves_the_next_to_its_position_and_forgets_the_old(void **state)
{
  (void)state;
  struct mfix x;
  open_clean(&x, 0);
  struct volume *v = x.v;
  begin(&x);
  uint64_t l1 = ship(&x, 1);
  uint64_t r1[NCOPIES];
  for (int i = 0; i < NCOPIES; i++)
    r1[i] = append_to(&x, x.seg[i], 3);
  uint64_t g1 = append_to(&x, x.g, 3);
  /* G (by its SCL) and positions 1..3 hold it; F never answers: three
   * positions count, not durable. */
  ack(&x, x.g, g1, l1);
  for (int i = 1; i < 4; i++)
    ack(&x, x.seg[i], r1[i], l1);
  assert_int_equal(v->q.vdl, 0);
  assert_int_equal(v->nfl, 3);        /* F's and positions 4's and 5's in flight */
  /* An older membership epoch, or the same one again: nothing. */
  Auralog__Pg same = pg0(&x, 1, 3);
  assert_int_equal(vcore_on_membership(v, &same), 0);
  /* The finish: G is position 0's current, F (A1) leaves. Record 1 is at
   * write quorum now: G, 1, 2, 3. */
  Auralog__Pg fin = pg0(&x, 0, 7);
  x.segs[0].node = NEXT_ID;
  x.segs[0].addr = NEXT_ADDR;
  x.segs[0].since = 3;
  fin.mepoch_min = 3;
  probe_answer(&x, &fin, 7);
  assert_int_equal(v->q.vdl, l1);
  assert_int_equal(v->mseq, 7);
  assert_int_equal(v->pgs[0].trans, 0);
  assert_int_equal(v->ntrans, 0);
  assert_int_equal(q_trans(&v->q, 0), 0);
  assert_int_equal(v->pgs[0].node[NCOPIES], -1);
  assert_string_equal(v->nodes[v->pgs[0].node[0]].addr, NEXT_ADDR);
  assert_int_equal(v->pgs[0].scl[0], l1);   /* G's SCL came along */
  assert_int_equal(v->nfl, 2);        /* F's Append forgotten; 4's and 5's remain */
  /* F's late ack changes nothing (its Append is forgotten). */
  ack(&x, x.seg[0], r1[0], l1);
  assert_int_equal(v->pgs[0].scl[0], l1);
  /* Nothing goes to F any more; the next record goes to G with mepoch 7. */
  uint64_t l2 = ship(&x, 2);
  assert_int_equal(count(&x.f, x.seg[0], APPEND), 0);
  uint64_t g2 = append_to(&x, x.g, 7);
  uint64_t r2[4];
  for (int i = 1; i < 4; i++)
    r2[i] = append_to(&x, x.seg[i], 7);
  ack(&x, x.g, g2, l2);
  for (int i = 1; i < 4; i++)
    ack(&x, x.seg[i], r2[i], l2);
  assert_int_equal(v->q.vdl, l2);
  /* No PG in transition: the probe names none. */
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vcore_probe_fill(v, &vh);
  assert_int_equal(vh.mseq, 7);
  assert_int_equal(vh.n_pgs, 0);
  vcore_probe_free(&vh);
  teardown(&x);
}

static void a_stale_membership_refusal_asks_for_a_probe(void **state)
{
  (void)state;
  struct mfix x;
  open_clean(&x, 0);
  struct volume *v = x.v;
  ship(&x, 1);
  uint64_t r = append_to(&x, x.seg[2], 0);
  assert_int_equal(v->probe_soon, 0);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Error err = AURALOG__ERROR__INIT;
  err.code = ERR_STALE_MEMBERSHIP;
  err.msg = "pg 0: membership epoch 0 is below 3";
  env.req = r;
  env.body_case = ERROR;
  env.error = &err;
  DELIVER(vcore_on_msg, v, x.seg[2], &env);
  assert_int_equal(v->probe_soon, 1);
  assert_int_equal(v->fenced, 0);             /* a refusal, not a fence */
  assert_int_equal(v->pgs[0].refused[2], 1);
  assert_true(v->pgs[0].retry_at[2] > x.f.now);
  teardown(&x);
}

static void recovery_counts_current_segments_and_serves_in_transition(void **state)
{
  (void)state;
  struct mfix x;
  open_clean(&x, 1);
  struct volume *v = x.v;
  /* M3: G was never asked (no SegQuery), and the writer serves with the
   * position in transition, used since the VDL it proved. */
  assert_int_equal(count(&x.f, x.g, SEG_QUERY), 0);
  assert_int_equal(v->pgs[0].trans, 1);
  assert_int_equal(q_trans(&v->q, 0), 1);
  assert_int_equal(v->pgs[0].adopted_at, 0);
  assert_int_equal(v->pgs[0].mepoch, 3);
  uint64_t l1 = ship(&x, 1);
  uint64_t g1 = append_to(&x, x.g, 3);
  uint64_t r1[4];
  for (int i = 0; i < 4; i++)
    r1[i] = append_to(&x, x.seg[i], 3);
  for (int i = 0; i < 4; i++)
    ack(&x, x.seg[i], r1[i], l1);
  assert_int_equal(v->q.vdl, 0);              /* position 0 waits for G */
  ack(&x, x.g, g1, l1);
  assert_int_equal(v->q.vdl, l1);
  teardown(&x);
}

/* ---- the binlog PG (issue 29) --------------------------------------------- */

/* The Append to node e for PG pg (exactly one), checked for mepoch. */
static uint64_t append_pg(struct mfix *x, struct ep *e, uint32_t pg, uint64_t mepoch)
{
  const Env *a = NULL;
  for (size_t i = 0; i < x->f.nout; i++) {
    struct sent *m = &x->f.out[i];
    if (m->to != e || m->taken || m->env->body_case != APPEND || m->env->append->pg != pg)
      continue;
    assert_null(a);
    m->taken = 1;
    a = m->env;
  }
  assert_non_null(a);
  assert_int_equal(a->append->mepoch, mepoch);
  return a->req;
}

/* The coordinator's probe answer naming only the binlog PG (as
 * coord/member.c member_probe puts it: Volume.binlog). */
static void probe_answer_bl(struct mfix *x, Auralog__Pg *bl, uint64_t mseq)
{
  Auralog__Volume vd = vdesc(NULL, mseq);
  vd.n_pgs = 0;
  vd.binlog = bl;
  Env env = AURALOG__ENVELOPE__INIT;
  env.body_case = VOLUME;
  env.volume = &vd;
  Env *in = over_wire(&env);
  vcore_on_members(x->v, in->volume);
  wire_free(in);
}

/* One MTR of one page and its binlog record (the CPL, ship.c B1). */
static uint64_t ship_bl(struct mfix *x, uint32_t page_no)
{
  static uint8_t page[PSIZE];
  page[page_no % PSIZE]++;
  struct drange dr = {.off = page_no % PSIZE, .len = 1};
  struct mtr_page mp = {.page_no = page_no, .flags = REC_ZERO, .after = page, .ranges = &dr,
                        .nranges = 1};
  uint8_t *ev = malloc(4);
  memcpy(ev, "tx1", 4);
  uint64_t cpl = vcore_ship_bl(x->v, &mp, 1, ev, 4);
  vcore_wake(x->v);
  return cpl;
}

static void the_binlog_pg_changes_membership_as_a_data_pg(void **state)
{
  (void)state;
  struct mfix x;
  open_clean_bl(&x, 0, 1);
  struct volume *v = x.v;
  assert_true(v->has_binlog);
  /* The begin step of the binlog PG's position 0 (A1 -> A3): the answer
   * names it in Volume.binlog. */
  Auralog__Pg b = blpg(1, 3);
  probe_answer_bl(&x, &b, 3);
  assert_int_equal(v->mseq, 3);
  assert_int_equal(v->pgs[BINLOG_PG].trans, 1);
  assert_int_equal(v->pgs[BINLOG_PG].mepoch, 3);
  assert_int_equal(q_trans(&v->q, BINLOG_PG), 1);
  assert_int_equal(q_trans(&v->q, 0), 0);
  assert_int_equal(v->ntrans, 1);
  x.g = ep_named(&x.f, NEXT_ADDR);
  vcore_on_up(v, x.g);
  /* A commit: its page record in PG 0, its events in the binlog PG (the
   * CPL). The binlog record goes to A3 too, with the new mepoch; PG 0's
   * records to its six, on mepoch 0. */
  uint64_t l = ship_bl(&x, 1);
  assert_int_equal(v->pgs[BINLOG_PG].tail, l);
  uint64_t p0[NCOPIES], b0[NCOPIES];
  for (int i = 0; i < NCOPIES; i++) {
    p0[i] = append_pg(&x, x.seg[i], 0, 0);
    b0[i] = append_pg(&x, x.seg[i], BINLOG_PG, 3);
  }
  uint64_t gb = append_pg(&x, x.g, BINLOG_PG, 3);
  assert_int_equal(count(&x.f, x.g, APPEND), 0);   /* nothing of PG 0 */
  /* Its probe names the binlog PG in transition, in Volume.binlog (M4 a),
   * and wire_check lets it through. */
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  vcore_probe_fill(v, &vh);
  assert_int_equal(vh.n_pgs, 0);
  assert_non_null(vh.binlog);
  assert_int_equal(vh.binlog->pg, BINLOG_PG);
  assert_int_equal(vh.binlog->mepoch, 3);
  assert_int_equal(vh.binlog->adopted_at, 0);      /* the PG's tail when it was adopted */
  vh.name = "v";
  vh.page_size = PSIZE;
  vh.epoch = 1;
  Env pe = AURALOG__ENVELOPE__INIT;
  pe.body_case = VOLUME;
  pe.volume = &vh;
  wire_free(over_wire(&pe));
  vcore_probe_free(&vh);
  /* M1, M2: PG 0's record on four; the binlog record on positions 0..3,
   * with A3 acknowledging it at SCL 0 (hydrating): position 0 does not
   * count, three positions, the commit is not durable. */
  for (int i = 0; i < 4; i++)
    ack(&x, x.seg[i], p0[i], l - 1);
  for (int i = 0; i < 4; i++)
    ack(&x, x.seg[i], b0[i], l);
  ack(&x, x.g, gb, 0);
  assert_int_equal(v->q.vdl, 0);
  /* A3's SCL covers it (a duplicate answered with its SCL): durable. */
  vcore_tick(v);
  x.f.now += VOL_TICK_MS;
  vcore_tick(v);
  uint64_t gb2 = append_pg(&x, x.g, BINLOG_PG, 3);   /* poke_next sends it again */
  ack(&x, x.g, gb2, l);
  assert_int_equal(v->q.vdl, l);
  /* The finish: A3 is position 0's current, A1 leaves (mepoch 7). */
  Auralog__Pg fin = blpg(0, 7);
  blsegs[0].node = NEXT_ID;
  blsegs[0].addr = NEXT_ADDR;
  blsegs[0].since = 3;
  fin.mepoch_min = 3;
  probe_answer_bl(&x, &fin, 7);
  assert_int_equal(v->mseq, 7);
  assert_int_equal(v->pgs[BINLOG_PG].trans, 0);
  assert_int_equal(v->ntrans, 0);
  assert_int_equal(q_trans(&v->q, BINLOG_PG), 0);
  assert_string_equal(v->nodes[v->pgs[BINLOG_PG].node[0]].addr, NEXT_ADDR);
  /* The next commit's binlog record goes to A3, not A1, on mepoch 7. */
  ship_bl(&x, 2);
  append_pg(&x, x.g, BINLOG_PG, 7);
  for (size_t i = 0; i < x.f.nout; i++)
    if (x.f.out[i].to == x.seg[0] && !x.f.out[i].taken && x.f.out[i].env->body_case == APPEND)
      assert_int_not_equal(x.f.out[i].env->append->pg, BINLOG_PG);
  vcore_probe_fill(v, &vh);
  assert_null(vh.binlog);
  assert_int_equal(vh.n_pgs, 0);
  vcore_probe_free(&vh);
  teardown(&x);
}

int main(void)
{
  log_quiet(2);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_next_segment_takes_writes_and_counts_only_by_its_scl),
    cmocka_unit_test(a_finish_moves_the_next_to_its_position_and_forgets_the_old),
    cmocka_unit_test(a_stale_membership_refusal_asks_for_a_probe),
    cmocka_unit_test(recovery_counts_current_segments_and_serves_in_transition),
    cmocka_unit_test(the_binlog_pg_changes_membership_as_a_data_pg),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
