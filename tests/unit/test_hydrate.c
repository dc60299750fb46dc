/*
 * test_hydrate.c: a new, empty segment of a protection group fills from
 * its PG peers while it already takes new writes (member.h M2; paper §2.2
 * "repair"; node/gossip.c, node/bg.c), with two storage nodes' cores
 * driven by their events and each other's messages:
 *
 *  - P (node A1) holds the PG's log; G (node A3) comes in as the next
 *    segment of position 1, empty; the writer's new records go to both
 *    (G holds them above a hole: its SCL stays 0);
 *  - peers that freed nothing: G pulls the whole log, back to back, and
 *    reaches P's SCL; the pages it serves are P's;
 *  - peers that freed their early records (GC): G fetches every page as
 *    of P's GC point, then the log above it, and reaches P's SCL;
 *  - the rate bound: however far behind, what G pulls over any stretch
 *    of time is at most HYDRATE_BYTES_PER_S for it plus one tick's
 *    savings (HYDRATE_BURST), and it does not wait GOSSIP_MS per pull;
 *  - its heartbeat says it is hydrating, and how much it pulled, until
 *    it is done;
 *  - a catch-up refills its window of page reads once a turn, after the
 *    turn's answers, not once per answer: a refill scans every segment
 *    the node hosts, and per answer a spare hydrating 484 segments
 *    fetched 2.3 MiB/s (bench repair, 700 PGs; 11.9 MiB/s once a turn);
 *  - a new segment of the volume's binlog PG (issue 29; BINLOG_PG) has no
 *    pages: it hydrates by records alone, the whole log of peers that
 *    released nothing, and from peers whose retention released their
 *    early records, from their release point on (bg.c invariant BJ),
 *    never asking a page; either way its SCL reaches the PG's tail.
 * Each prints how long the hydration took (simulated clock, instant
 * network) and the CPU it cost.
 */
#include <time.h>

#include "cores_fix.h"

#define HEARTBEAT AURALOG__ENVELOPE__BODY_HEARTBEAT

/* One storage node: its fake io, disk and core; in: the other node's
 * connection to it (the test carries messages between the two). */
struct hn {
  struct fake f;
  struct disk *d;
  struct node *n;
  struct ep *coord, *w, *in;
  const char *id, *addr;
  struct ep *up[64];
  size_t nup, routed;
};

static void hboot(struct hn *x, const char *id, const char *addr, uint64_t now)
{
  char why[256];
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  x->f.now = now;
  x->id = id;
  x->addr = addr;
  x->d = disk_new();
  x->n = calloc(1, sizeof *x->n);
  assert_int_equal(store_open_kv(&x->n->st, disk_kv(x->d), why, sizeof why), 0);
  assert_int_equal(node_init(x->n, &x->f.io, id, "A", addr, "coord:1", NULL, NULL, why,
                             sizeof why), 0);
  x->coord = ep_named(&x->f, "coord:1");
  node_on_up(x->n, x->coord);
  x->w = ep_new(&x->f, "w1:1");
}

static void hfree(struct hn *x)
{
  node_free(x->n);
  store_close(&x->n->st);
  free(x->n);
  disk_free(x->d);
  fake_free(&x->f);
}

/* PG 0's segments: the six current ones (A1 at position 0), and with g
 * the next one of position 1 on A3, at membership epoch mepoch. */
static size_t pg0(Auralog__Segment seg[NSLOTS], Auralog__Segment *ptr[NSLOTS], int g,
                  uint64_t mepoch)
{
  pg0_segments(seg, ptr);
  size_t n = NCOPIES;
  if (g) {
    seg[n] = seg[1];
    seg[n].node = "A3";
    seg[n].addr = "A3:1";
    seg[n].next = 1;
    seg[n].since = mepoch;
    ptr[n] = &seg[n];
    n++;
  }
  for (size_t i = 0; i < n; i++) {
    seg[i].pos = i < NCOPIES ? (uint32_t)i : 1;
    seg[i].mepoch = mepoch;
  }
  return n;
}

/* The coordinator's Assign to x: its segment of PG 0, and the PG's. */
static void hassign(struct hn *x, int g, uint64_t mepoch)
{
  Auralog__Segment seg[NSLOTS], *ptr[NSLOTS];
  size_t n = pg0(seg, ptr, g, mepoch);
  Auralog__Segment *mine = NULL;
  for (size_t i = 0; i < n; i++)
    if (strcmp(seg[i].node, x->id) == 0)
      mine = &seg[i];
  assert_non_null(mine);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  uint64_t vols[] = {VOL};
  as.segments = &mine;
  as.n_segments = 1;
  as.peers = ptr;
  as.n_peers = n;
  as.volumes = vols;
  as.n_volumes = 1;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x->n, x->coord, &env);
  node_end_turn(x->n);
}

/* A record of len bytes at LSN lsn, on page lsn % npages, chained to lsn - 1. */
struct brec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[2048];
};

static Rec *mkbig(struct brec *t, uint64_t lsn, uint32_t npages, uint32_t len)
{
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  memset(t->data, (int)(lsn * 7 + 1), len);
  t->g.off = (uint32_t)((lsn * 8) % (PSIZE - len));
  t->g.data.data = t->data;
  t->g.data.len = len;
  t->gp = &t->g;
  t->r.lsn = lsn;
  t->r.prev_lsn = lsn - 1;
  t->r.page_no = (uint32_t)(lsn % npages);
  t->r.flags = REC_CPL;
  t->r.epoch = 2;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
  return &t->r;
}

/* The writer of epoch 2 appends first..last to x (pgmrpl: its minimum
 * read point and the PG's record there, which lets x free below it). */
static void hwrite(struct hn *x, uint64_t first, uint64_t last, uint32_t npages, uint32_t len,
                   uint64_t pgmrpl)
{
  size_t n = (size_t)(last - first + 1);
  struct brec *t = malloc(n * sizeof *t);
  Rec **recs = malloc(n * sizeof *recs);
  for (size_t i = 0; i < n; i++)
    recs[i] = mkbig(&t[i], first + i, npages, len);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = 2;
  a.ticket = ticket(2, &tk, sig);
  a.records = recs;
  a.n_records = n;
  a.vdl = first - 1;
  a.pgmrpl = pgmrpl;
  a.pgmrpl_tail = pgmrpl;
  a.mepoch = 2;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
  node_end_turn(x->n);
  assert_int_equal(take(&x->f, x->w, APPEND_ACK)->append_ack->added, n);
  free(recs);
  free(t);
}

static void hwrite_all(struct hn *x, uint64_t first, uint64_t last, uint32_t npages,
                       uint32_t len, uint64_t pgmrpl)
{
  for (uint64_t l = first; l <= last; l += 1000)
    hwrite(x, l, l + 999 < last ? l + 999 : last, npages, len, pgmrpl);
}

/* Carry what `from` sent `to` (requests on its connection to to's
 * address, answers on to's connection to it). Returns how many. */
static int carry(struct hn *from, struct hn *to)
{
  int moved = 0;
  if (to->in == NULL) {
    char name[32];
    snprintf(name, sizeof name, "%s-in", from->id);
    to->in = ep_new(&to->f, name);
  }
  for (; from->routed < from->f.nout; from->routed++) {
    struct sent *m = &from->f.out[from->routed];
    if (m->taken)
      continue;
    struct ep *via = NULL;
    if (strcmp(m->to->addr, to->addr) == 0)
      via = to->in;                            /* a request from `from` */
    else if (m->to == from->in)
      via = ep_named(&to->f, from->addr);      /* an answer to `to` */
    if (via == NULL)
      continue;
    m->taken = 1;
    DELIVER(node_on_msg, to->n, via, m->env);
    moved++;
  }
  return moved;
}

/* Connections x opened to y come up. */
static void bring_up(struct hn *x, const struct hn *y)
{
  for (size_t i = 0; i < x->f.neps; i++) {
    struct ep *e = x->f.eps[i];
    if (strcmp(e->addr, y->addr) != 0)
      continue;
    int seen = 0;
    for (size_t j = 0; j < x->nup; j++)
      seen |= x->up[j] == e;
    if (!seen && x->nup < 64) {
      x->up[x->nup++] = e;
      node_on_up(x->n, e);
    }
  }
}

/* Until neither has anything more for the other, each turn ending. */
static void settle(struct hn *a, struct hn *b)
{
  for (int round = 0; round < 100000; round++) {
    bring_up(a, b);
    bring_up(b, a);
    int ma = carry(a, b), mb = carry(b, a);
    if (ma)
      node_end_turn(b->n);
    if (mb)
      node_end_turn(a->n);
    if (ma + mb == 0)
      return;
  }
  fail_msg("the nodes never went quiet");
}

/* GOSSIP_MS pass for both: their timers, their turns, their messages. */
static void tick(struct hn *a, struct hn *b)
{
  a->f.now += GOSSIP_MS;
  b->f.now = a->f.now;
  gossip_tick(a->n);
  gossip_tick(b->n);
  node_end_turn(a->n);
  node_end_turn(b->n);
  settle(a, b);
}

static double cpu_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Do pages 0..npages-1 of P and G read the same as of lsn? */
static void same_pages(struct hn *p, struct hn *g, uint64_t lsn, uint32_t npages)
{
  char why[256];
  uint8_t a[PSIZE], b[PSIZE];
  struct segment *sp = node_find_seg(p->n, VOL, 0), *sg = node_find_seg(g->n, VOL, 0);
  for (uint32_t pg = 0; pg < npages; pg++) {
    uint64_t la = 0, lb = 0;
    assert_int_equal(store_read_page(&p->n->st, sp, pg, lsn, a, &la, why, sizeof why), 0);
    if (store_read_page(&g->n->st, sg, pg, lsn, b, &lb, why, sizeof why) != 0)
      fail_msg("page %u as of %llu on the hydrated segment: %s", pg,
               (unsigned long long)lsn, why);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, PSIZE);
  }
}

/* The stats of G's segment in the heartbeat it sends now. */
static Auralog__SegStat *hb_stat(struct hn *g)
{
  g->n->hb_whole = 1;
  node_heartbeat(g->n);
  const Env *e = NULL;
  while (count(&g->f, g->coord, HEARTBEAT))
    e = take(&g->f, g->coord, HEARTBEAT);
  assert_non_null(e);
  assert_int_equal(e->heartbeat->n_segs, 1);
  return e->heartbeat->segs[0];
}

/* P holds records 1..n (len bytes each, over npages pages; freed up to
 * gc if gc), G comes in empty as the next segment of position 1; the
 * writer sends k new records to both; G hydrates. Returns the ticks it
 * took; *cpu: the CPU time of that. */
static int hydrate(struct hn *p, struct hn *g, uint64_t n, uint32_t npages, uint32_t len,
                   uint64_t gc, uint64_t k, double *cpu)
{
  keys();
  hboot(p, "A1", "A1:1", 1000);
  p->n->gc_peer_wait_ms = 1;   /* the PG's other peers are silent: they hold no GC */
  hassign(p, 0, 1);
  hwrite_all(p, 1, n, npages, len, 0);
  if (gc) {
    hwrite(p, n + 1, n + 1, npages, len, gc);  /* the writer's read point: gc */
    for (int i = 0; i < 20 && node_find_seg(p->n, VOL, 0)->gc_lsn < gc; i++) {
      p->f.now += GC_MS;
      node_end_turn(p->n);
    }
    assert_int_equal(node_find_seg(p->n, VOL, 0)->gc_lsn, gc);
    n++;
  }
  struct segment *sp = node_find_seg(p->n, VOL, 0);
  assert_int_equal(sp->scl, n);

  hboot(g, "A3", "A3:1", p->f.now);
  hassign(g, 1, 2);
  hassign(p, 1, 2);
  struct segment *sg = node_find_seg(g->n, VOL, 0);
  assert_non_null(sg);
  assert_true(sg->next);
  assert_true(node_hydrating(g->n, sg));
  /* New writes go to both at once: G holds them above a hole. */
  if (k) {
    hwrite_all(p, n + 1, n + k, npages, len, gc);
    hwrite_all(g, n + 1, n + k, npages, len, gc);
    assert_int_equal(sg->scl, 0);
    assert_int_equal(sg->max_lsn, n + k);
  }
  uint64_t target = sp->scl;
  double c0 = cpu_ms();
  int ticks = 0;
  while (sg->scl < target && ticks < 1000) {
    tick(p, g);
    ticks++;
    if (ticks == 1) {
      Auralog__SegStat *st = hb_stat(g);
      assert_true(st->hydrating);
    }
  }
  *cpu = cpu_ms() - c0;
  if (sg->scl < target)
    fail_msg("the new segment is complete to %llu after %d ticks; its peer to %llu",
             (unsigned long long)sg->scl, ticks, (unsigned long long)target);
  tick(p, g);                  /* it hears where its peers are */
  assert_int_equal(sg->scl, sp->scl);
  assert_false(node_hydrating(g->n, sg));
  Auralog__SegStat *st = hb_stat(g);
  assert_false(st->hydrating);
  assert_true(st->pulled > 0);
  assert_int_equal(st->pulled, sg->pulled);
  return ticks;
}

static void a_new_segment_pulls_the_whole_log_of_peers_that_freed_nothing(void **state)
{
  (void)state;
  struct hn p, g;
  double cpu;
  const uint64_t n = 20000, k = 500;
  const uint32_t pages = 256;
  int ticks = hydrate(&p, &g, n, pages, 8, 0, k, &cpu);
  struct segment *sg = node_find_seg(g.n, VOL, 0);
  assert_int_equal(sg->gc_lsn, 0);            /* every record pulled, none by page */
  assert_int_equal(g.n->catchups, 0);
  assert_int_equal(sg->nrecs, n + k);
  same_pages(&p, &g, n + k, pages);
  printf("# hydration by the log: %llu records (+%llu new ones meanwhile) over %u pages, "
         "%.2f MiB pulled, complete after %d ticks (%d ms simulated), %.0f ms CPU\n",
         (unsigned long long)n, (unsigned long long)k, pages, (double)sg->pulled / (1 << 20),
         ticks, ticks * GOSSIP_MS, cpu);
  hfree(&p);
  hfree(&g);
}

static void a_new_segment_of_peers_that_freed_their_early_log_fetches_pages_then_the_log(
  void **state)
{
  (void)state;
  struct hn p, g;
  double cpu;
  const uint64_t n = 20000, gc = 12000, k = 500;
  const uint32_t pages = 256;
  int ticks = hydrate(&p, &g, n, pages, 8, gc, k, &cpu);
  struct segment *sg = node_find_seg(g.n, VOL, 0), *sp = node_find_seg(p.n, VOL, 0);
  assert_int_equal(g.n->catchups, 1);         /* one catch-up by page versions ... */
  assert_int_equal(sg->gc_lsn, gc);           /* ... as of the peer's GC point */
  assert_int_equal(sg->scl, sp->scl);
  same_pages(&p, &g, sp->scl, pages);
  printf("# hydration from freed peers: %u page versions as of %llu, then %llu records "
         "(%llu new ones meanwhile), %.2f MiB pulled, complete after %d ticks (%d ms "
         "simulated), %.0f ms CPU\n", pages, (unsigned long long)gc,
         (unsigned long long)(sp->scl - gc), (unsigned long long)k,
         (double)sg->pulled / (1 << 20), ticks, ticks * GOSSIP_MS, cpu);
  hfree(&p);
  hfree(&g);
}

static void hydration_keeps_to_its_rate_bound_and_does_not_wait_a_tick_per_pull(void **state)
{
  (void)state;
  struct hn p, g;
  const uint64_t n = 12000;
  const uint32_t len = 1024, pages = 256;
  keys();
  hboot(&p, "A1", "A1:1", 1000);
  hassign(&p, 0, 1);
  hwrite_all(&p, 1, n, pages, len, 0);
  hboot(&g, "A3", "A3:1", p.f.now);
  hassign(&g, 1, 2);
  hassign(&p, 1, 2);
  struct segment *sg = node_find_seg(g.n, VOL, 0);
  double c0 = cpu_ms();
  int ticks = 0;
  uint64_t start = p.f.now, last = 0;
  while (sg->scl < n && ticks < 1000) {
    tick(&p, &g);
    ticks++;
    /* In any one tick: at most what the budget saves up in one. */
    if (sg->pulled - last > (uint64_t)HYDRATE_BURST + 2 * len)
      fail_msg("the new segment pulled %llu bytes in one tick: more than %lld",
               (unsigned long long)(sg->pulled - last), (long long)HYDRATE_BURST);
    last = sg->pulled;
    /* Over any stretch from the start: the rate, plus one tick's savings,
     * plus one record past a pull's reservation (one always goes). */
    double bound = (double)HYDRATE_BURST +
                   (double)HYDRATE_BYTES_PER_S * (double)(p.f.now - start) / 1000.0 + 2 * len;
    if ((double)sg->pulled > bound)
      fail_msg("after %llu ms the new segment pulled %llu bytes: more than the bound %.0f",
               (unsigned long long)(p.f.now - start), (unsigned long long)sg->pulled, bound);
  }
  double cpu = cpu_ms() - c0;
  assert_int_equal(sg->scl, n);
  /* Back to back: about the bytes over the rate, not one pull per tick. */
  double need = (double)sg->pulled / ((double)HYDRATE_BYTES_PER_S * GOSSIP_MS / 1000.0);
  double one_per_tick = (double)sg->pulled / HYDRATE_PULL_BYTES;
  if (ticks > (int)need + 2)
    fail_msg("%d ticks for %.1f ticks' worth of the budget (%llu bytes)", ticks, need, (unsigned long long)sg->pulled);
  assert_true((double)ticks < one_per_tick / 2);
  printf("# rate bound: %.2f MiB of %u-byte records pulled in %d ticks (%d ms simulated; "
         "the bound allows %.1f MiB/s, one pull per tick would take %.0f ticks), %.0f ms "
         "CPU\n", (double)sg->pulled / (1 << 20), len, ticks, ticks * GOSSIP_MS,
         (double)HYDRATE_BYTES_PER_S / (1 << 20), one_per_tick, cpu);
  hfree(&p);
  hfree(&g);
}

/* Page reads G has sent so far. */
static size_t reads_sent(const struct hn *g)
{
  size_t k = 0;
  for (size_t i = 0; i < g->f.nout; i++)
    k += g->f.out[i].env->body_case == AURALOG__ENVELOPE__BODY_READ_PAGE;
  return k;
}

static void a_catch_up_refills_its_window_once_a_turn(void **state)
{
  (void)state;
  struct hn p, g;
  keys();
  hboot(&p, "A1", "A1:1", 1000);
  p.n->gc_peer_wait_ms = 1;
  hassign(&p, 0, 1);
  const uint64_t n = 20000, gc = 12000;
  const uint32_t pages = 256;
  hwrite_all(&p, 1, n, pages, 8, 0);
  hwrite(&p, n + 1, n + 1, pages, 8, gc);
  for (int i = 0; i < 20 && node_find_seg(p.n, VOL, 0)->gc_lsn < gc; i++) {
    p.f.now += GC_MS;
    node_end_turn(p.n);
  }
  hboot(&g, "A3", "A3:1", p.f.now);
  hassign(&g, 1, 2);
  hassign(&p, 1, 2);
  struct segment *sg = node_find_seg(g.n, VOL, 0);
  int seen = 0;
  for (int t = 0; t < 200 && !seen && sg->scl < n; t++) {
    p.f.now += GOSSIP_MS;
    g.f.now = p.f.now;
    gossip_tick(p.n);
    gossip_tick(g.n);
    node_end_turn(p.n);
    node_end_turn(g.n);
    bring_up(&p, &g);
    bring_up(&g, &p);
    if (carry(&g, &p))
      node_end_turn(p.n);     /* P answers what G asked */
    size_t r0 = reads_sent(&g);
    size_t answers = 0;
    for (size_t i = p.routed; i < p.f.nout; i++)
      answers += p.f.out[i].env->body_case == PAGE;
    carry(&p, &g);            /* every answer in one turn of G's */
    size_t r1 = reads_sent(&g);
    node_end_turn(g.n);
    size_t r2 = reads_sent(&g);
    if (answers >= 8 && sg->catchup) {
      assert_int_equal(r1, r0);        /* none asked within the turn ... */
      assert_true(r2 >= r1 + answers / 2);   /* ... the window refilled at its end */
      seen = 1;
    }
  }
  assert_true(seen);
  settle(&p, &g);
  hfree(&p);
  hfree(&g);
}

/* ---- the binlog PG (issue 29) --------------------------------------------- */

/* The coordinator's Assign to x: its segment of the binlog PG, and the
 * PG's (the six current ones on A1..C2, and with g the next one of
 * position 1 on A3): as PG 0's, numbered BINLOG_PG, no pages. */
static void bl_assign(struct hn *x, int g, uint64_t mepoch)
{
  Auralog__Segment seg[NSLOTS], *ptr[NSLOTS];
  size_t n = pg0(seg, ptr, g, mepoch);
  Auralog__Segment *mine = NULL;
  for (size_t i = 0; i < n; i++) {
    seg[i].pg = BINLOG_PG;
    seg[i].first_page = 0;
    seg[i].npages = 1;
    if (strcmp(seg[i].node, x->id) == 0)
      mine = &seg[i];
  }
  assert_non_null(mine);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  uint64_t vols[] = {VOL};
  as.segments = &mine;
  as.n_segments = 1;
  as.peers = ptr;
  as.n_peers = n;
  as.volumes = vols;
  as.n_volumes = 1;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x->n, x->coord, &env);
  node_end_turn(x->n);
}

/* The writer of epoch 2 appends binlog records first..last to x: each a
 * transaction's events ("tx" and its LSN), the CPL of its MTR, chained to
 * lsn - 1 (the test's binlog PG has every LSN). */
static void bl_write(struct hn *x, uint64_t first, uint64_t last)
{
  size_t n = (size_t)(last - first + 1);
  Rec *r = calloc(n, sizeof *r);
  Rec **recs = calloc(n, sizeof *recs);
  uint8_t (*ev)[16] = calloc(n, sizeof *ev);
  for (size_t i = 0; i < n; i++) {
    auralog__record__init(&r[i]);
    r[i].lsn = first + i;
    r[i].prev_lsn = first + i - 1;
    r[i].page_no = 0;
    r[i].flags = REC_BINLOG | REC_CPL;
    r[i].epoch = 2;
    int len = snprintf((char *)ev[i], sizeof ev[i], "tx%llu", (unsigned long long)r[i].lsn);
    r[i].binlog = (ProtobufCBinaryData){(size_t)len, ev[i]};
    rec_seal(&r[i]);
    recs[i] = &r[i];
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = BINLOG_PG;
  a.epoch = 2;
  a.ticket = ticket(2, &tk, sig);
  a.records = recs;
  a.n_records = n;
  a.vdl = first - 1;
  a.mepoch = 2;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
  node_end_turn(x->n);
  assert_int_equal(take(&x->f, x->w, APPEND_ACK)->append_ack->added, n);
  free(recs);
  free(r);
  free(ev);
}

/* P holds binlog records 1..n, released (retention, as node/nbinlog.c
 * will) up to rel if rel; G comes in empty as the next segment of
 * position 1; the writer sends k new records to both; G hydrates by
 * gossip and catch-up alone. Returns the ticks it took. */
static int bl_hydrate(struct hn *p, struct hn *g, uint64_t n, uint64_t rel, uint64_t k)
{
  char why[256];
  keys();
  hboot(p, "A1", "A1:1", 1000);
  bl_assign(p, 0, 1);
  for (uint64_t l = 1; l <= n; l += 1000)
    bl_write(p, l, l + 999 < n ? l + 999 : n);
  struct segment *sp = node_find_seg(p->n, VOL, BINLOG_PG);
  assert_non_null(sp);
  assert_int_equal(sp->scl, n);
  if (rel) {                   /* retention's release: records up to rel are gone from P */
    assert_int_equal(store_begin(&p->n->st, why, sizeof why), 0);
    assert_int_equal(store_jump(&p->n->st, sp, rel, why, sizeof why), 0);
    node_mark_dirty(p->n, sp);
    assert_int_equal(node_commit(p->n), 0);
    assert_int_equal(sp->gc_lsn, rel);
    assert_int_equal(sp->nrecs, n - rel);
  }
  hboot(g, "A3", "A3:1", p->f.now);
  bl_assign(g, 1, 2);
  bl_assign(p, 1, 2);
  struct segment *sg = node_find_seg(g->n, VOL, BINLOG_PG);
  assert_non_null(sg);
  assert_true(sg->next);
  assert_true(node_hydrating(g->n, sg));
  if (k) {                     /* new writes go to both: G holds them above a hole */
    bl_write(p, n + 1, n + k);
    bl_write(g, n + 1, n + k);
    assert_int_equal(sg->scl, 0);
    assert_int_equal(sg->max_lsn, n + k);
  }
  int ticks = 0;
  while (sg->scl < sp->scl && ticks < 1000) {
    tick(p, g);
    ticks++;
  }
  if (sg->scl < sp->scl)
    fail_msg("the new binlog segment is complete to %llu after %d ticks; its peer to %llu",
             (unsigned long long)sg->scl, ticks, (unsigned long long)sp->scl);
  tick(p, g);                  /* it hears where its peers are */
  assert_int_equal(sg->scl, n + k);
  assert_false(node_hydrating(g->n, sg));
  assert_int_equal(reads_sent(g), 0);          /* no page was ever asked */
  /* It holds what P holds, record for record. */
  Rec **a = NULL, **b = NULL;
  int more = 0;
  long na = store_above(&p->n->st, sp, 0, &a, 100000, &more);
  long nb = store_above(&g->n->st, sg, 0, &b, 100000, &more);
  assert_int_equal(na, (long)(n + k - rel));
  assert_int_equal(nb, na);
  for (long i = 0; i < na; i++) {
    assert_int_equal(a[i]->lsn, b[i]->lsn);
    assert_int_equal(a[i]->binlog.len, b[i]->binlog.len);
    assert_memory_equal(a[i]->binlog.data, b[i]->binlog.data, a[i]->binlog.len);
    auralog__record__free_unpacked(a[i], NULL);
    auralog__record__free_unpacked(b[i], NULL);
  }
  free(a);
  free(b);
  return ticks;
}

static void a_new_binlog_segment_hydrates_by_records_alone(void **state)
{
  (void)state;
  struct hn p, g;
  const uint64_t n = 5000, k = 200;
  int ticks = bl_hydrate(&p, &g, n, 0, k);
  struct segment *sg = node_find_seg(g.n, VOL, BINLOG_PG);
  assert_int_equal(sg->gc_lsn, 0);            /* the whole log, pulled */
  assert_int_equal(g.n->catchups, 0);
  printf("# binlog hydration by the log: %llu records (+%llu new ones meanwhile), %.2f MiB "
         "pulled, complete after %d ticks\n", (unsigned long long)n, (unsigned long long)k,
         (double)sg->pulled / (1 << 20), ticks);
  hfree(&p);
  hfree(&g);
}

static void a_new_binlog_segment_starts_at_its_peers_release_point(void **state)
{
  (void)state;
  struct hn p, g;
  const uint64_t n = 5000, rel = 3000, k = 200;
  int ticks = bl_hydrate(&p, &g, n, rel, k);
  struct segment *sg = node_find_seg(g.n, VOL, BINLOG_PG);
  assert_int_equal(g.n->catchups, 1);         /* one jump (bg.c BJ) ... */
  assert_int_equal(sg->gc_lsn, rel);          /* ... to the peer's release point */
  assert_int_equal(sg->nrecs, n + k - rel);
  printf("# binlog hydration from a peer that released up to %llu: the chain starts there, "
         "%llu records pulled above it (+%llu new ones meanwhile), complete after %d ticks\n",
         (unsigned long long)rel, (unsigned long long)(n - rel), (unsigned long long)k, ticks);
  hfree(&p);
  hfree(&g);
}

int main(void)
{
  log_quiet(2);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_new_segment_pulls_the_whole_log_of_peers_that_freed_nothing),
    cmocka_unit_test(a_new_segment_of_peers_that_freed_their_early_log_fetches_pages_then_the_log),
    cmocka_unit_test(hydration_keeps_to_its_rate_bound_and_does_not_wait_a_tick_per_pull),
    cmocka_unit_test(a_catch_up_refills_its_window_once_a_turn),
    cmocka_unit_test(a_new_binlog_segment_hydrates_by_records_alone),
    cmocka_unit_test(a_new_binlog_segment_starts_at_its_peers_release_point),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
