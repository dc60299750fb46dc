/*
 * test_scale.c: what a storage node and the coordinator do per segment
 * when a node hosts thousands of segments (issue 13, scale), driven by
 * their events through the fake io (fake_io.h, cores_fix.h):
 *
 *  - a node finds each of thousands of segments by (volume, pg) in about
 *    constant time (a hash), and none it does not host;
 *  - its heartbeats are deltas: the one after a whole heartbeat lists no
 *    segment if none changed, then only the segment that took records;
 *    every HEARTBEAT_FULL-th lists them all, and so does the first on a
 *    new coordinator link;
 *  - the coordinator merges a delta by (volume, pg) and keeps the others'
 *    stats; a whole heartbeat replaces them all;
 *  - an idle segment's gossip pulls back off (far fewer than one every
 *    GOSSIP_IDLE periods), while a segment with a hole pulls every period,
 *    and the idle one pulls every GOSSIP_IDLE periods again once it moves.
 */
#include <time.h>

#include "cores_fix.h"

/* PG index k of these tests: volume VOL's PGs first, then the next
 * volume's (a volume has at most MAX_PGS, and the wire refuses a PG
 * number past them that is not the binlog PG's). */
#define K_VOL(k) (VOL + (uint64_t)(k) / MAX_PGS)
#define K_PG(k) ((uint32_t)((k) % MAX_PGS))

/* Assign node A1 (x's) its segments of PGs [from, to) (indexes k, K_VOL
 * and K_PG), with their six segments as peers if peers (as coord.c
 * send_assign does). */
static void assign_pgs(struct nfix *x, uint32_t from, uint32_t to, int peers)
{
  size_t n = to - from;
  Auralog__Segment *seg = calloc(n * NCOPIES, sizeof *seg);
  Auralog__Segment **mine = calloc(n, sizeof *mine), **all = calloc(n * NCOPIES, sizeof *all);
  for (size_t k = 0; k < n; k++)
    for (int i = 0; i < NCOPIES; i++) {
      Auralog__Segment *s = &seg[k * NCOPIES + (size_t)i];
      auralog__segment__init(s);
      s->volume_id = K_VOL(from + k);
      s->pg = K_PG(from + k);
      s->first_page = s->pg * PG_PAGES;
      s->npages = PG_PAGES;
      s->page_size = PSIZE;
      s->node = (char *)ids[i];
      s->az = (char *)azs[i];
      s->addr = (char *)addrs[i];
      all[k * NCOPIES + (size_t)i] = s;
      if (i == 0)
        mine[k] = s;           /* A1's */
    }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  as.segments = mine;
  as.n_segments = n;
  as.peers = all;
  as.n_peers = peers ? n * NCOPIES : 0;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
  env.req = 2;
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x->n, x->coord, &env);
  node_end_turn(x->n);
  free(seg);
  free(mine);
  free(all);
}

/* The writer of epoch 2 appends recs to pg's segment on x's node. */
static void append_pg(struct nfix *x, uint64_t req, uint32_t pg, Rec **recs, size_t n)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = pg;
  a.epoch = 2;
  a.ticket = ticket(2, &tk, sig);
  a.records = recs;
  a.n_records = n;
  env.req = req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
  node_end_turn(x->n);
  take(&x->f, x->w, APPEND_ACK);
}

static double cpu_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void node_finds_each_of_thousands_of_segments_by_hash(void **state)
{
  (void)state;
  enum { NSEG = 8000, ROUNDS = 8 };
  struct nfix x;
  log_quiet(1);                 /* a line per segment hosted */
  node_setup(&x);
  assign_pgs(&x, 1, NSEG, 0);
  log_quiet(0);
  assert_int_equal(x.n->nsegs, NSEG);
  for (uint32_t k = 0; k < NSEG; k++) {
    struct segment *s = node_find_seg(x.n, K_VOL(k), K_PG(k));
    assert_non_null(s);
    assert_int_equal(s->pg, K_PG(k));
    assert_int_equal(s->volume_id, K_VOL(k));
  }
  assert_null(node_find_seg(x.n, K_VOL(NSEG), K_PG(NSEG)));
  assert_null(node_find_seg(x.n, VOL + 7, 0));
  /* ROUNDS * NSEG lookups: a scan of the segments would compare about
   * ROUNDS * NSEG^2 / 2 = 256 million pairs (hundreds of ms of CPU); a
   * hash about one probe each (well under a ms). CPU time, not wall time:
   * a loaded machine does not make it fail. */
  double t0 = cpu_ms();
  size_t found = 0;
  for (int r = 0; r < ROUNDS; r++)
    for (uint32_t pg = 0; pg < NSEG; pg++)
      found += node_find_seg(x.n, K_VOL((pg * 7919u + (uint32_t)r) % NSEG),
                             K_PG((pg * 7919u + (uint32_t)r) % NSEG)) != NULL;
  double took = cpu_ms() - t0;
  assert_int_equal(found, (size_t)ROUNDS * NSEG);
  printf("# %d lookups among %d segments: %.2f ms of CPU\n", ROUNDS * NSEG, NSEG, took);
  assert_true(took < 40);
  node_teardown(&x);
}

/* CPU of one Assign that gives a fresh node nseg new segments, with
 * their peers, and the turn's commit of their SegMeta. */
static double assign_cpu_ms(uint32_t nseg)
{
  struct nfix x;
  log_quiet(1);
  node_setup(&x);
  double t0 = cpu_ms();
  assign_pgs(&x, 0, nseg, 1);
  double took = cpu_ms() - t0;
  log_quiet(0);
  assert_int_equal(x.n->nsegs, nseg);
  node_teardown(&x);
  return took;
}

/* A volume that grows to MAX_PGS PGs gives each node thousands of new
 * segments in a few Assigns. Each new segment used to grow the node's
 * arrays by one (a copy of all of them, a whole SegStat each): an Assign
 * of 1,024 segments to a node with 4,000 took it 3-11 s under ASan,
 * during which it sent no heartbeat (the coordinator marked all six down)
 * and answered the writer that it hosted no segment of the new PG for 30
 * s. Now the arrays double: 8 times the segments cost about 8 times the
 * CPU, where one copy a segment cost 64 times. CPU, not wall time. */
static void an_assign_of_thousands_of_segments_costs_linear_cpu(void **state)
{
  (void)state;
  double small = assign_cpu_ms(1024), big = assign_cpu_ms(8192);
  printf("# an Assign of 1,024 new segments: %.1f ms of CPU; of 8,192: %.1f ms (%.1fx)\n",
         small, big, big / small);
  assert_true(big < 24 * small);
}

/* CPU of the background work of one GC period on a node hosting nseg
 * segments, each with its PG peers, nothing to free. */
static double gc_pass_cpu_ms(uint32_t nseg)
{
  struct nfix x;
  log_quiet(1);
  node_setup(&x);
  assign_pgs(&x, 0, nseg, 1);
  double took = 0;
  for (int i = 0; i < 3; i++) {
    x.f.now += GC_MS;
    double t0 = cpu_ms();
    node_end_turn(x.n);
    took += cpu_ms() - t0;
  }
  log_quiet(0);
  node_teardown(&x);
  return took;
}

/* GC looks at every segment each GC_MS, and each segment's PG peers bound
 * what it may free. It found them by a scan of the node's gossip states:
 * O(segments) per segment, so an idle node hosting 8,192 segments spent
 * ~75 ms of CPU a second on it, and 8 times the segments cost 69 times
 * the CPU. Now by the node's hash: about 8 times (CPU, not wall time). */
static void a_gc_pass_over_thousands_of_segments_costs_linear_cpu(void **state)
{
  (void)state;
  double small = gc_pass_cpu_ms(1024), big = gc_pass_cpu_ms(8192);
  printf("# three GC periods over 1,024 segments: %.2f ms of CPU; over 8,192: %.2f ms (%.1fx)\n",
         small, big, big / small);
  assert_true(big < 24 * small + 1);
}

/* The heartbeats node x sent since the last look: the last one, or NULL. */
static const Auralog__Heartbeat *last_hb(struct nfix *x)
{
  const Env *e = NULL;
  while (count(&x->f, x->coord, AURALOG__ENVELOPE__BODY_HEARTBEAT))
    e = take(&x->f, x->coord, AURALOG__ENVELOPE__BODY_HEARTBEAT);
  return e ? e->heartbeat : NULL;
}

static const Auralog__Heartbeat *beat(struct nfix *x)
{
  node_heartbeat(x->n);
  const Auralog__Heartbeat *hb = last_hb(x);
  assert_non_null(hb);
  return hb;
}

static void heartbeats_list_only_changed_segments_and_all_every_n(void **state)
{
  (void)state;
  enum { NSEG = 50 };
  struct nfix x;
  log_quiet(1);
  node_setup(&x);
  assign_pgs(&x, 1, NSEG, 0);
  log_quiet(0);
  /* Up to the next whole heartbeat: it lists every segment. */
  const Auralog__Heartbeat *hb;
  int i = 0;
  while ((hb = beat(&x))->delta)
    assert_true(++i < HEARTBEAT_FULL);
  assert_int_equal(hb->n_segs, NSEG);
  /* Nothing changed: the next lists none. */
  hb = beat(&x);
  assert_true(hb->delta);
  assert_int_equal(hb->n_segs, 0);
  /* PG 0 takes two records: the next lists it alone, with its new SCL. */
  append_two(&x);
  node_end_turn(x.n);
  take(&x.f, x.w, APPEND_ACK);
  hb = beat(&x);
  assert_true(hb->delta);
  assert_int_equal(hb->n_segs, 1);
  assert_int_equal(hb->segs[0]->pg, 0);
  assert_int_equal(hb->segs[0]->scl, 2);
  assert_int_equal(hb->segs[0]->records, 2);
  /* PG 7 takes one: only PG 7 (PG 0 did not change again). */
  struct trec t;
  Rec *r = mkrec(&t, 3, 0, 7 * PG_PAGES + 1, 0, 0x33, REC_CPL, 2);
  append_pg(&x, 20, 7, &r, 1);
  hb = beat(&x);
  assert_true(hb->delta);
  assert_int_equal(hb->n_segs, 1);
  assert_int_equal(hb->segs[0]->pg, 7);
  assert_int_equal(hb->segs[0]->scl, 3);
  /* The HEARTBEAT_FULL-th after the last whole one is whole again. */
  for (i = 4; i < HEARTBEAT_FULL; i++) {   /* beats 4 .. FULL-1 after it */
    hb = beat(&x);
    assert_true(hb->delta);
    assert_int_equal(hb->n_segs, 0);
  }
  hb = beat(&x);
  assert_false(hb->delta);
  assert_int_equal(hb->n_segs, NSEG);
  hb = beat(&x);
  assert_true(hb->delta);
  assert_int_equal(hb->n_segs, 0);
  /* A new coordinator link: its first heartbeat is whole. */
  node_on_down(x.n, x.coord);
  x.f.now += RECONNECT_MS;
  node_heartbeat(x.n);          /* connects */
  x.coord = ep_named(&x.f, "coord:1");
  node_on_up(x.n, x.coord);
  take(&x.f, x.coord, REGISTER);
  hb = last_hb(&x);
  assert_non_null(hb);
  assert_false(hb->delta);
  assert_int_equal(hb->n_segs, NSEG);
  node_teardown(&x);
}

/* Node A1 (registered at the coordinator) heartbeats stats of volume vol:
 * (pg, scl) pairs; delta or whole. */
static void send_hb(struct cfix *x, uint64_t vol, int delta, const uint32_t *pgs,
                    const uint64_t *scls, size_t n)
{
  Auralog__SegStat st[8], *ptr[8];
  for (size_t i = 0; i < n; i++) {
    auralog__seg_stat__init(&st[i]);
    st[i].volume_id = vol;
    st[i].pg = pgs[i];
    st[i].scl = scls[i];
    ptr[i] = &st[i];
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Heartbeat hb = AURALOG__HEARTBEAT__INIT;
  hb.id = (char *)ids[0];
  hb.segs = ptr;
  hb.n_segs = n;
  hb.delta = delta;
  env.body_case = AURALOG__ENVELOPE__BODY_HEARTBEAT;
  env.heartbeat = &hb;
  DELIVER(coord_on_msg, x->co, x->node[0], &env);
}

/* The SCLs status shows for A1's segments of volume v, by PG (-1: none);
 * how many it shows. */
static size_t status_scls(struct cfix *x, long long scl[4])
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = "v";
  env.req = 60;
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  env.status_req = &sr;
  struct ep *cli = ep_new(&x->f, "cli:1");
  DELIVER(coord_on_msg, x->co, cli, &env);
  const Auralog__Status *st = take(&x->f, cli, STATUS)->status;
  for (int i = 0; i < 4; i++)
    scl[i] = -1;
  size_t n = 0;
  for (size_t i = 0; i < st->n_segs; i++)
    if (strcmp(st->seg_nodes[i], ids[0]) == 0 && st->segs[i]->pg < 4) {
      scl[st->segs[i]->pg] = (long long)st->segs[i]->scl;
      n++;
    }
  return n;
}

static void coord_merges_heartbeat_deltas_by_volume_and_pg(void **state)
{
  (void)state;
  struct cfix x;
  long long scl[4];
  coord_setup(&x, 1);
  struct ep *eng = ep_new(&x.f, "eng:1");
  uint64_t vol = open_volume(&x.f, x.co, eng, 1, 1, 1)->volume->id;
  /* Whole: three segments. */
  send_hb(&x, vol, 0, (uint32_t[]){2, 0, 1}, (uint64_t[]){30, 10, 20}, 3);
  assert_int_equal(status_scls(&x, scl), 3);
  assert_int_equal(scl[0], 10);
  assert_int_equal(scl[1], 20);
  assert_int_equal(scl[2], 30);
  /* A delta of PG 1: the others' stats stay. */
  send_hb(&x, vol, 1, (uint32_t[]){1}, (uint64_t[]){25}, 1);
  assert_int_equal(status_scls(&x, scl), 3);
  assert_int_equal(scl[0], 10);
  assert_int_equal(scl[1], 25);
  assert_int_equal(scl[2], 30);
  /* A delta with a segment not heard of before adds it; an empty one
   * changes nothing. */
  send_hb(&x, vol, 1, (uint32_t[]){3}, (uint64_t[]){40}, 1);
  send_hb(&x, vol, 1, NULL, NULL, 0);
  assert_int_equal(status_scls(&x, scl), 4);
  assert_int_equal(scl[1], 25);
  assert_int_equal(scl[3], 40);
  /* Whole again: exactly what it lists. */
  send_hb(&x, vol, 0, (uint32_t[]){0}, (uint64_t[]){11}, 1);
  assert_int_equal(status_scls(&x, scl), 1);
  assert_int_equal(scl[0], 11);
  coord_teardown(&x);
}

/* One gossip period: tick, bring up the peers' endpoints it opened, and
 * answer every pull as a peer complete to the asker's SCL (nothing to
 * give). Counts the pulls of each PG (pulls[pg]). */
static struct ep *up_eps[64];
static size_t nup;

static void gossip_period(struct nfix *x, unsigned *pulls, uint32_t npgs)
{
  x->f.now += GOSSIP_MS;
  gossip_tick(x->n);
  for (int i = 1; i < NCOPIES; i++) {
    struct ep *e = NULL;
    for (size_t k = x->f.neps; k > 0 && e == NULL; k--)
      if (strcmp(x->f.eps[k - 1]->addr, addrs[i]) == 0)
        e = x->f.eps[k - 1];
    if (e == NULL || !e->open)
      continue;
    size_t k = 0;
    while (k < nup && up_eps[k] != e)
      k++;
    if (k == nup) {             /* first sight: the link comes up */
      up_eps[nup++] = e;
      node_on_up(x->n, e);
    }
    while (count(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL)) {
      const Env *q = take(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL);
      assert_true(q->gossip_pull->pg < npgs);
      pulls[q->gossip_pull->pg]++;
      Env a = AURALOG__ENVELOPE__INIT;
      Auralog__GossipPush gp = AURALOG__GOSSIP_PUSH__INIT;
      gp.volume_id = VOL;
      gp.pg = q->gossip_pull->pg;
      gp.scl = q->gossip_pull->scl;
      a.req = q->req;
      a.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
      a.gossip_push = &gp;
      DELIVER(node_on_msg, x->n, e, &a);
    }
  }
  node_end_turn(x->n);
}

static void idle_segments_gossip_rarely_one_with_a_hole_every_period(void **state)
{
  (void)state;
  enum { PERIODS = 300 };      /* a minute of gossip periods */
  struct nfix x;
  unsigned pulls[2] = {0, 0};
  node_setup(&x);
  assign_pgs(&x, 1, 2, 1);
  /* PG 1 holds record 5, whose backlink names record 4, which it does
   * not hold: a hole. PG 0 holds nothing and misses nothing. */
  struct trec t;
  Rec *r = mkrec(&t, 5, 4, PG_PAGES + 3, 0, 0x55, REC_CPL, 2);
  append_pg(&x, 30, 1, &r, 1);
  assert_int_equal(node_find_seg(x.n, VOL, 1)->npend, 1);
  for (int i = 0; i < PERIODS; i++)
    gossip_period(&x, pulls, 2);
  printf("# in %d gossip periods: idle segment %u pulls, segment with a hole %u\n",
         PERIODS, pulls[0], pulls[1]);
  /* The hole: a pull every period (the first ones wait for the links). */
  assert_true(pulls[1] >= PERIODS - 5);
  /* Idle: every GOSSIP_IDLE periods would be PERIODS / GOSSIP_IDLE = 60;
   * backing off to GOSSIP_IDLE_MAX, about 10. */
  assert_true(pulls[0] <= PERIODS / GOSSIP_IDLE_MAX + 8);
  assert_true(pulls[0] >= PERIODS / GOSSIP_IDLE_MAX);
  /* PG 0 takes a record: it moved, so it pulls within GOSSIP_IDLE periods,
   * and keeps pulling that often while it moves. */
  append_two(&x);
  node_end_turn(x.n);
  take(&x.f, x.w, APPEND_ACK);
  unsigned before = pulls[0];
  for (int i = 0; i < GOSSIP_IDLE; i++)
    gossip_period(&x, pulls, 2);
  assert_int_equal(pulls[0], before + 1);
  /* Its five peers, heard lately, are known only below its SCL until
   * each is heard again (one a pull): they hold its GC there (bg.c). So
   * it does not back off until all are: five pulls within about five
   * GOSSIP_IDLE periods (backing off, 1, 2, 4, 8 times that: GC came up
   * to ~28 s after the last write). Then it backs off again. */
  for (int i = 0; i < 5 * GOSSIP_IDLE; i++)
    gossip_period(&x, pulls, 2);
  if (pulls[0] < before + NCOPIES - 1)
    fail_msg("%u pulls in %d periods after a write: the peers are not all heard again",
             pulls[0] - before, 6 * GOSSIP_IDLE);
  struct segment *s0 = node_find_seg(x.n, VOL, 0);
  const struct gossip *g0 = &x.n->gs[kmap_get(&x.n->gsidx, VOL, 0)];
  for (int k = 0; k < g0->npeers; k++)
    assert_true(g0->peer_scl[k] >= s0->scl);
  before = pulls[0];
  for (int i = 0; i < 12 * GOSSIP_IDLE; i++)
    gossip_period(&x, pulls, 2);
  assert_true(pulls[0] - before <= 4);
  node_teardown(&x);
}

/* A recovery of epoch 3 asks segment pg of x's node (round 1: fences). */
static void seg_query_pg(struct nfix *x, struct ep *r, uint64_t req, uint32_t pg)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  q.volume_id = VOL;
  q.pg = pg;
  q.epoch = 3;
  q.ticket = ticket(3, &tk, sig);
  env.req = req;
  env.body_case = SEG_QUERY;
  env.seg_query = &q;
  DELIVER(node_on_msg, x->n, r, &env);
}

/* ... then scans it (round 2), carrying a truncation an earlier recovery
 * (epoch 2) wrote elsewhere, (50, 90]: this segment never held it. */
static void scan_pg(struct nfix *x, struct ep *r, uint64_t req, uint32_t pg)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  Auralog__EpochTicket tk;
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT, *trp = &tr;
  uint8_t sig[AUTH_SIG_BYTES], tsig2[AUTH_SIG_BYTES], tk2[AUTH_SIG_BYTES];
  Auralog__EpochTicket t2;
  q.volume_id = VOL;
  q.pg = pg;
  q.epoch = 3;
  q.ticket = ticket(3, &tk, sig);
  q.scan = 1;
  q.from = 1000;            /* the tail at or below: every record */
  tr.epoch = 2;
  tr.from = 50;
  tr.to = 90;
  tr.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  (void)ticket(2, &t2, tk2);
  tr.ticket_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, tk2};
  auth_trunc_sign(&writer_key, VOL, 2, 50, 90, tsig2);
  tr.sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, tsig2};
  q.truncs = &trp;
  q.n_truncs = 1;
  env.req = req;
  env.body_case = SEG_QUERY;
  env.seg_query = &q;
  DELIVER(node_on_msg, x->n, r, &env);
}

/* ... then writes its truncation (1, 100] with its first record, 101
 * (backlink 1), to segment pg: one Append (the last round). */
static void append_trunc_pg(struct nfix *x, struct ep *r, uint64_t req, uint32_t pg)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT;
  Auralog__EpochTicket tk;
  uint8_t tsig[AUTH_SIG_BYTES], sig[AUTH_SIG_BYTES];
  struct trec t;
  Rec *rec = mkrec(&t, 101, 1, pg * PG_PAGES, 0, 0x44, REC_CPL, 3);
  a.volume_id = VOL;
  a.pg = pg;
  a.epoch = 3;
  a.ticket = ticket(3, &tk, tsig);
  tr.epoch = 3;
  tr.from = 1;
  tr.to = 100;
  tr.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  tr.ticket_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, tsig};
  auth_trunc_sign(&writer_key, VOL, 3, 1, 100, sig);
  tr.sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sig};
  a.trunc = &tr;
  a.records = &rec;
  a.n_records = 1;
  env.req = req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, r, &env);
}

/* One request to each of x's first npg segments, by send (req0 + pg),
 * all in one turn: staged, so nothing is answered before its commit. */
static void to_every_pg(struct nfix *x, struct ep *r, uint64_t req0, uint32_t npg,
                        void (*send)(struct nfix *, struct ep *, uint64_t, uint32_t))
{
  for (uint32_t pg = 0; pg < npg; pg++)
    send(x, r, req0 + pg, pg);
  assert_int_equal(count(&x->f, r, 0), 0);
}

/* The node dies and starts again on its disk, and hears its segments (and
 * the coordinator's key) again. */
static void restart_node(struct nfix *x, uint32_t npg)
{
  node_crash(x);
  node_boot(x);
  assign_pgs(x, 0, npg, 0);
}

/* A recovery asks every segment of the volume at once, and a node may
 * host a segment of each of 1,000 PGs. Each fence and each truncation
 * used to be a synced commit of its own (a truncation two: a checkpoint
 * before it), one after another: seconds of recovery at 1,000 PGs. Now
 * every fence, every truncation a scan brings, and every writer's
 * truncation, that reaches the node in one turn shares one commit, and is
 * answered only after it: a crash before it loses them, unanswered. */
static void a_recovery_of_many_pgs_costs_one_commit_a_turn(void **state)
{
  (void)state;
  enum { NPG = 64 };
  struct nfix x;
  log_quiet(1);
  node_setup(&x);
  assign_pgs(&x, 0, NPG, 0);
  for (uint32_t pg = 0; pg < NPG; pg++) {
    struct trec t1, t2;
    Rec *recs[2] = {mkrec(&t1, 1, 0, pg * PG_PAGES, 0, 0x11, REC_CPL, 2),
                    mkrec(&t2, 2, 1, pg * PG_PAGES + 1, 0, 0x22, REC_CPL, 2)};
    append_pg(&x, 100 + pg, pg, recs, 2);
  }
  struct ep *r = ep_new(&x.f, "w2:1");

  /* Round 1: NPG fences, staged, unanswered; a crash loses them all. */
  to_every_pg(&x, r, 1000, NPG, seg_query_pg);
  restart_node(&x, NPG);
  assert_int_equal(node_find_seg(x.n, VOL, NPG - 1)->epoch, 2);
  uint64_t c0 = x.n->st.commits;
  to_every_pg(&x, r, 1000, NPG, seg_query_pg);
  node_end_turn(x.n);
  assert_int_equal(x.n->st.commits - c0, 1);
  assert_int_equal(count(&x.f, r, SEG_INFO), NPG);
  for (uint32_t pg = 0; pg < NPG; pg++) {
    const Env *si = take(&x.f, r, SEG_INFO);
    assert_int_equal(si->req, 1000 + pg);
    assert_int_equal(si->seg_info->epoch, 3);
    assert_int_equal(si->seg_info->scl, 2);
  }

  /* Round 2: NPG scans, each installing the earlier truncation: staged,
   * unanswered, and lost to a crash before the turn's commit; then one
   * commit, and every scan answered after it, from a chain it cleaned. */
  to_every_pg(&x, r, 1500, NPG, scan_pg);
  restart_node(&x, NPG);
  assert_int_equal(node_find_seg(x.n, VOL, NPG - 1)->ntruncs, 0);
  c0 = x.n->st.commits;
  to_every_pg(&x, r, 1500, NPG, scan_pg);
  node_end_turn(x.n);
  assert_int_equal(x.n->st.commits - c0, 1);
  assert_int_equal(count(&x.f, r, SEG_INFO), NPG);
  for (uint32_t pg = 0; pg < NPG; pg++) {
    const Env *si = take(&x.f, r, SEG_INFO);
    assert_int_equal(si->req, 1500 + pg);
    assert_int_equal(si->seg_info->n_truncs, 1);
    assert_int_equal(si->seg_info->truncs[0]->epoch, 2);
    assert_int_equal(si->seg_info->n_recs, 2);   /* records 1 and 2: of epoch 2, not cut */
  }
  restart_node(&x, NPG);
  assert_int_equal(node_find_seg(x.n, VOL, NPG - 1)->ntruncs, 1);

  /* The last round: NPG truncations, each with its first record, in one
   * commit; acknowledged after it, record 2 cut and 101 chained on 1. */
  c0 = x.n->st.commits;
  to_every_pg(&x, r, 2000, NPG, append_trunc_pg);
  node_end_turn(x.n);
  assert_int_equal(x.n->st.commits - c0, 1);
  for (uint32_t pg = 0; pg < NPG; pg++) {
    const Env *ack = take(&x.f, r, APPEND_ACK);
    assert_int_equal(ack->req, 2000 + pg);
    assert_int_equal(ack->append_ack->scl, 101);
  }
  /* Durable: after a crash, every segment holds 1 and 101, not 2. */
  restart_node(&x, NPG);
  for (uint32_t pg = 0; pg < NPG; pg++) {
    struct segment *s = node_find_seg(x.n, VOL, pg);
    assert_int_equal(s->epoch, 3);
    assert_int_equal(s->ntruncs, 2);
    assert_int_equal(s->scl, 101);
    assert_int_equal(s->max_lsn, 101);
  }
  assert_int_equal(disk_entries(x.d, "recs"), 2 * NPG);
  log_quiet(0);
  node_teardown(&x);
}

int main(void)
{
  keys();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(node_finds_each_of_thousands_of_segments_by_hash),
    cmocka_unit_test(an_assign_of_thousands_of_segments_costs_linear_cpu),
    cmocka_unit_test(a_gc_pass_over_thousands_of_segments_costs_linear_cpu),
    cmocka_unit_test(heartbeats_list_only_changed_segments_and_all_every_n),
    cmocka_unit_test(coord_merges_heartbeat_deltas_by_volume_and_pg),
    cmocka_unit_test(idle_segments_gossip_rarely_one_with_a_hole_every_period),
    cmocka_unit_test(a_recovery_of_many_pgs_costs_one_commit_a_turn),
  };
  return cmocka_run_group_tests_name("unit: scale", tests, NULL, NULL);
}
