/*
 * test_blconsume.c: the binlog's consumers (issue 29), what is pure and
 * the cores driven by their events (cores_fix.h: a node on the simulator's
 * disk, a coordinator, the fake io). As a user of the binlog would say it:
 *
 *  - a position is LSN or LSN:INDEX, and nothing else passes for one;
 *  - the retention rule releases the oldest records while a segment holds
 *    more than its byte limit, or while they are older than its time limit
 *    before the newest, and never what it is not offered (the bound);
 *  - a node serves a binlog segment's records in LSN order up to min(SCL,
 *    VDL heard), never above, with its release point, last durable record
 *    and bytes; a segment it does not host is a one-line error;
 *  - it releases nothing before an Assign told it the keep points, never
 *    above a registered consumer's position, releases the rest down to its
 *    limits once the consumer moves, and after a restart still starts its
 *    chain at the release point: new records chain on, old ones are gone,
 *    and a reader asking below it sees the release point above it (a gap);
 *  - the coordinator registers and moves a named consumer, refuses to move
 *    it back unless told to rewind, lets only the operator forget it, keeps
 *    positions across a restart, and sends the lowest with every Assign,
 *    to the binlog PG's nodes as soon as it changes, at most once a second.
 */
#include "cores_fix.h"

#include "cli/blread.h"
#include "coord/binlogc.h"
#include "node/nbinlog.h"

/* ---- positions --------------------------------------------------------------- */

static void positions_are_lsn_or_lsn_colon_index(void **state)
{
  (void)state;
  struct blpos p;
  char why[256];
  assert_int_equal(blpos_parse("12", &p, why, sizeof why), 0);
  assert_true(p.lsn == 12 && p.index == -1);
  assert_int_equal(blpos_parse("12:0", &p, why, sizeof why), 0);
  assert_true(p.lsn == 12 && p.index == 0);
  assert_int_equal(blpos_parse("4097:31", &p, why, sizeof why), 0);
  assert_true(p.lsn == 4097 && p.index == 31);
  assert_int_equal(blpos_parse("0", &p, why, sizeof why), 0);
  assert_true(p.lsn == 0 && p.index == -1);
  const char *bad[] = {"", ":", "12:", ":3", "a", "12:x", "-1", "12:3:4", "12 ", " 12",
                       "1152921504606846977", "99999999999999999999999", "12:4294967296",
                       "0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why[0] = 0;
    assert_int_equal(blpos_parse(bad[i], &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "is not a binlog position"));
  }
}

/* ---- the retention rule ------------------------------------------------------ */

static void retention_releases_the_oldest_beyond_its_limits(void **state)
{
  (void)state;
  struct nbl_cand c[5] = {{1, 20, 1000}, {2, 20, 8000}, {3, 20, 9500}, {4, 20, 9800},
                          {5, 20, 9900}};
  /* 100 bytes held, 50 kept: the three oldest go (40 left). */
  assert_int_equal(nbl_release_count(c, 5, 100, 10000, 50, UINT64_MAX), 3);
  /* Within the limit: none. */
  assert_int_equal(nbl_release_count(c, 5, 100, 10000, 100, UINT64_MAX), 0);
  /* By time: older than 1000 ms before the newest (10000): the two oldest. */
  assert_int_equal(nbl_release_count(c, 5, 100, 10000, UINT64_MAX, 1000), 2);
  /* Either limit: the larger release wins. */
  assert_int_equal(nbl_release_count(c, 5, 100, 10000, 70, 1000), 2);
  assert_int_equal(nbl_release_count(c, 5, 100, 10000, 30, 1000), 4);
  /* Only what it is offered (the bound): here two. */
  assert_int_equal(nbl_release_count(c, 2, 100, 10000, 0, 0), 2);
  /* A record whose time is unknown is never released for its age. */
  struct nbl_cand u[2] = {{1, 10, 0}, {2, 10, 5}};
  assert_int_equal(nbl_release_count(u, 2, 20, 100000, UINT64_MAX, 10), 0);
  /* An unknown newest time releases nothing for age either. */
  assert_int_equal(nbl_release_count(c, 5, 100, 0, UINT64_MAX, 1), 0);
}

/* ---- a node with a binlog segment ------------------------------------------- */

/* A binlog record: transaction lsn (one insert of rowid lsn into t), its
 * commit time wall_ms, linked back to prev. */
struct brec {
  Rec r;
  uint8_t buf[256];
};

static Rec *mkbin(struct brec *b, uint64_t lsn, uint64_t prev, uint64_t wall_ms)
{
  Auralog__BinlogTxn t = AURALOG__BINLOG_TXN__INIT;
  Auralog__BinlogEvent e = AURALOG__BINLOG_EVENT__INIT, *ep = &e;
  Auralog__BinlogValue v = AURALOG__BINLOG_VALUE__INIT, *vp = &v;
  v.type = 1;
  v.v_case = AURALOG__BINLOG_VALUE__V_I;
  v.i = (int64_t)lsn;
  e.op = 1;
  e.table = "t";
  e.rowid_table = 1;
  e.rowid = (int64_t)lsn;
  e.after = &vp;
  e.n_after = 1;
  t.commit_lsn = lsn;
  t.wall_ms = wall_ms;
  t.events = &ep;
  t.n_events = 1;
  size_t len = auralog__binlog_txn__pack(&t, b->buf);
  assert_true(len < sizeof b->buf);
  auralog__record__init(&b->r);
  b->r.lsn = lsn;
  b->r.prev_lsn = prev;
  b->r.page_no = 0;
  b->r.flags = REC_CPL | REC_BINLOG;
  b->r.epoch = 2;
  b->r.binlog = (ProtobufCBinaryData){len, b->buf};
  rec_seal(&b->r);
  char why[200];
  assert_int_equal(rec_check(&b->r, PSIZE, why, sizeof why), ERR_NONE);
  return &b->r;
}

/* The six binlog segments of VOL (pg BINLOG_PG, one page), one per node. */
static void bl_segments(Auralog__Segment seg[NCOPIES], Auralog__Segment *ptr[NCOPIES])
{
  pg0_segments(seg, ptr);
  for (int i = 0; i < NCOPIES; i++) {
    seg[i].pg = BINLOG_PG;
    seg[i].npages = 1;
  }
}

/* The coordinator's Assign to A1: its binlog segment, the PG's six as
 * peers, volume VOL named, with keep point keep if has_keep. */
static void assign_bl(struct nfix *x, int has_keep, uint64_t keep)
{
  Auralog__Segment seg[NCOPIES], *ptr[NCOPIES];
  bl_segments(seg, ptr);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  Auralog__BinlogKeep k = AURALOG__BINLOG_KEEP__INIT, *kp = &k;
  uint64_t vols[1] = {VOL};
  as.segments = ptr;
  as.n_segments = 1;
  as.peers = ptr;
  as.n_peers = NCOPIES;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
  as.volumes = vols;
  as.n_volumes = 1;
  k.volume_id = VOL;
  k.keep = keep;
  if (has_keep) {
    as.binlog_keep = &kp;
    as.n_binlog_keep = 1;
  }
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x->n, x->coord, &env);
}

static void bl_setup(struct nfix *x)
{
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  x->d = disk_new();
  node_boot(x);
  assign_bl(x, 0, 0);
  node_end_turn(x->n);
  assert_non_null(node_find_seg(x->n, VOL, BINLOG_PG));
  x->w = ep_new(&x->f, "w1:1");
}

/* The writer of epoch 2 appends recs to the binlog PG, telling VDL vdl;
 * the turn ends (acknowledged). */
static void append_bl(struct nfix *x, uint64_t req, Rec **recs, size_t n, uint64_t vdl)
{
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
  a.vdl = vdl;
  a.vdl_tail = vdl;            /* every LSN is this PG's: its tail at the VDL is the VDL */
  a.vdl_known = 1;
  env.req = req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
  node_end_turn(x->n);
  assert_int_equal(take(&x->f, x->w, APPEND_ACK)->req, req);
}

/* Records lo..hi, chained, each its own transaction at wall 1000 * lsn. */
static void append_range(struct nfix *x, uint64_t req, uint64_t lo, uint64_t hi, uint64_t vdl)
{
  struct brec *b = calloc(hi - lo + 1, sizeof *b);
  Rec **r = calloc(hi - lo + 1, sizeof *r);
  for (uint64_t l = lo; l <= hi; l++)
    r[l - lo] = mkbin(&b[l - lo], l, l - 1, 1000 * l);
  append_bl(x, req, r, hi - lo + 1, vdl);
  free(r);
  free(b);
}

static const Auralog__BinlogRecs *bl_read(struct nfix *x, struct ep *c, uint64_t req,
                                          uint64_t vol, uint64_t after, uint32_t max_bytes)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__BinlogRead br = AURALOG__BINLOG_READ__INIT;
  br.volume_id = vol;
  br.after = after;
  br.max_bytes = max_bytes;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_BINLOG_READ;
  env.binlog_read = &br;
  DELIVER(node_on_msg, x->n, c, &env);
  if (count(&x->f, c, ERROR))
    return NULL;
  const Env *rep = take(&x->f, c, AURALOG__ENVELOPE__BODY_BINLOG_RECS);
  assert_int_equal(rep->req, req);
  return rep->binlog_recs;
}

static void node_serves_binlog_records_up_to_its_durable_end(void **state)
{
  (void)state;
  struct nfix x;
  bl_setup(&x);
  struct ep *c = ep_new(&x.f, "tool:1");
  /* Three transactions stored; the writer has told a VDL of 2. */
  append_range(&x, 10, 1, 3, 2);
  struct segment *s = node_find_seg(x.n, VOL, BINLOG_PG);
  assert_int_equal(s->scl, 3);
  assert_int_equal(nbl_durable(x.n, s), 2);
  const Auralog__BinlogRecs *r = bl_read(&x, c, 20, VOL, 0, 0);
  assert_non_null(r);
  assert_int_equal(r->n_records, 2);          /* 3 is not known durable: not served */
  assert_int_equal(r->records[0]->lsn, 1);
  assert_int_equal(r->records[1]->lsn, 2);
  assert_int_equal(r->records[1]->prev_lsn, 1);
  assert_int_equal(r->durable, 2);
  assert_int_equal(r->first, 0);
  assert_int_equal(r->last, 2);
  assert_int_equal(r->epoch, 2);
  assert_true(r->bytes > 0);
  Auralog__BinlogTxn *t = auralog__binlog_txn__unpack(NULL, r->records[1]->binlog.len,
                                                      r->records[1]->binlog.data);
  assert_non_null(t);
  assert_int_equal(t->commit_lsn, 2);
  assert_int_equal(t->events[0]->rowid, 2);
  auralog__binlog_txn__free_unpacked(t, NULL);

  /* The node's record cache holds each binlog record whole, after the
   * Append that brought it is gone (Invariant R, store_rcache.c). */
  char why[256];
  assert_int_equal(store_rc_check(&x.n->st, why, sizeof why), 0);
  int owned;
  const Rec *cr = store_get_rec(&x.n->st, s, 3, &owned);
  assert_non_null(cr);
  t = auralog__binlog_txn__unpack(NULL, cr->binlog.len, cr->binlog.data);
  assert_non_null(t);
  assert_int_equal(t->wall_ms, 3000);
  auralog__binlog_txn__free_unpacked(t, NULL);
  if (owned)
    auralog__record__free_unpacked((Rec *)cr, NULL);

  /* After 2: nothing, until the writer tells a VDL that covers 3. */
  r = bl_read(&x, c, 21, VOL, 2, 0);
  assert_int_equal(r->n_records, 0);
  assert_int_equal(r->durable, 2);
  append_bl(&x, 11, NULL, 0, 3);
  r = bl_read(&x, c, 22, VOL, 2, 0);
  assert_int_equal(r->n_records, 1);
  assert_int_equal(r->records[0]->lsn, 3);
  assert_int_equal(r->last, 3);

  /* A small max_bytes: one record at least, then only what fits. */
  r = bl_read(&x, c, 23, VOL, 0, 1);
  assert_int_equal(r->n_records, 1);
  assert_int_equal(r->records[0]->lsn, 1);

  /* Another volume: not here, in one line. */
  assert_null(bl_read(&x, c, 24, VOL + 1, 0, 0));
  const Env *e = take(&x.f, c, ERROR);
  assert_int_equal(e->error->code, ERR_UNKNOWN_SEGMENT);
  assert_null(strchr(e->error->msg, '\n'));
  node_teardown(&x);
}

/* Let the node's retention run now (its peers silent long enough, its
 * pace due): a turn's end, as after any message. */
static void retention_due(struct nfix *x)
{
  x->n->gc_peer_wait_ms = 10;
  x->f.now += 2 * BINLOG_RETAIN_MS;
  node_end_turn(x->n);
}

static void node_retention_keeps_what_consumers_have_not_read(void **state)
{
  (void)state;
  struct nfix x;
  setenv("AURALOG_BINLOG_KEEP_BYTES", "0", 1);   /* keep nothing beyond the consumers' */
  bl_setup(&x);
  struct ep *c = ep_new(&x.f, "tool:1");
  append_range(&x, 10, 1, 10, 10);
  struct segment *s = node_find_seg(x.n, VOL, BINLOG_PG);

  /* A consumer at 4 (the Assign's keep point): 1..4 may go, 5..10 stay. */
  assign_bl(&x, 1, 4);
  retention_due(&x);
  assert_int_equal(s->gc_lsn, 4);
  assert_int_equal(disk_entries(x.d, "recs"), 6);
  const Auralog__BinlogRecs *r = bl_read(&x, c, 20, VOL, 0, 0);
  assert_int_equal(r->first, 4);
  assert_int_equal(r->n_records, 6);
  assert_int_equal(r->records[0]->lsn, 5);
  assert_int_equal(r->records[0]->prev_lsn, 4);
  /* A reader at 2 is told the release point, above it: a gap it reports. */
  r = bl_read(&x, c, 21, VOL, 2, 0);
  assert_true(r->first > 2);

  /* The consumer moves to 7: 5..7 go too. */
  assign_bl(&x, 1, 7);
  retention_due(&x);
  assert_int_equal(s->gc_lsn, 7);
  assert_int_equal(disk_entries(x.d, "recs"), 3);

  /* A restart: the release point stays, and nothing goes before the first
   * Assign says where the consumers are. */
  node_crash(&x);
  node_boot(&x);
  s = node_find_seg(x.n, VOL, BINLOG_PG);
  assert_int_equal(s->gc_lsn, 7);
  assert_int_equal(s->scl, 10);
  retention_due(&x);
  assert_int_equal(s->gc_lsn, 7);
  /* The chain goes on from there: new records are complete. */
  append_range(&x, 11, 11, 12, 12);
  assert_int_equal(s->scl, 12);
  r = bl_read(&x, c, 22, VOL, 7, 0);
  assert_int_equal(r->n_records, 5);
  assert_int_equal(r->records[0]->lsn, 8);
  assert_int_equal(r->records[4]->lsn, 12);

  /* An Assign that names the volume with no keep point: no consumer any
   * more; the byte limit (0 here) lets everything durable go. */
  assign_bl(&x, 0, 0);
  uint64_t keep;
  assert_int_equal(nbl_keep_of(x.n, VOL, &keep), 0);
  retention_due(&x);
  assert_int_equal(s->gc_lsn, 12);
  assert_int_equal(disk_entries(x.d, "recs"), 0);
  r = bl_read(&x, c, 23, VOL, 0, 0);
  assert_int_equal(r->n_records, 0);
  assert_int_equal(r->first, 12);
  assert_int_equal(r->last, 0);
  /* ... and the chain still goes on. */
  append_range(&x, 12, 13, 13, 13);
  assert_int_equal(s->scl, 13);
  unsetenv("AURALOG_BINLOG_KEEP_BYTES");
  node_teardown(&x);
}

static void node_retention_stops_at_the_durable_end_and_at_peers(void **state)
{
  (void)state;
  struct nfix x;
  setenv("AURALOG_BINLOG_KEEP_BYTES", "0", 1);
  bl_setup(&x);
  append_range(&x, 10, 1, 6, 3);              /* durable: 3 */
  struct segment *s = node_find_seg(x.n, VOL, BINLOG_PG);
  retention_due(&x);
  assert_int_equal(s->gc_lsn, 3);             /* never above min(SCL, VDL heard) */
  /* A peer heard from lately holds it at that peer's SCL. */
  struct gossip *g = gossip_of(x.n, VOL, BINLOG_PG);
  assert_non_null(g);
  append_bl(&x, 11, NULL, 0, 6);
  for (int k = 0; k < g->npeers; k++) {
    g->peer_scl[k] = k == 0 ? 4 : 6;
    g->peer_at[k] = x.f.now + 2 * BINLOG_RETAIN_MS;
  }
  x.n->gc_peer_wait_ms = 60000;
  x.f.now += 2 * BINLOG_RETAIN_MS;
  node_end_turn(x.n);
  assert_int_equal(s->gc_lsn, 4);
  unsetenv("AURALOG_BINLOG_KEEP_BYTES");
  node_teardown(&x);
}

static void node_retention_by_commit_time(void **state)
{
  (void)state;
  struct nfix x;
  setenv("AURALOG_BINLOG_KEEP_MS", "3500", 1);   /* bytes: the default, far off */
  bl_setup(&x);
  append_range(&x, 10, 1, 10, 10);            /* commit times 1000 .. 10000 ms */
  struct segment *s = node_find_seg(x.n, VOL, BINLOG_PG);
  retention_due(&x);
  /* Older than 3.5 s before the newest (10000): 1..6 (6000 < 6500). */
  assert_int_equal(s->gc_lsn, 6);
  assert_int_equal(disk_entries(x.d, "recs"), 4);
  unsetenv("AURALOG_BINLOG_KEEP_MS");
  node_teardown(&x);
}

/* ---- the coordinator's consumers -------------------------------------------- */

/* A BinlogConsumer request on c (signed by the operator if op): the
 * answer, BinlogConsumers or an Error. */
static const Env *consumer(struct cfix *x, struct ep *c, uint64_t req, const char *name,
                           uint64_t pos, int forget, int rewind, int list, int op)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__BinlogConsumer bc = AURALOG__BINLOG_CONSUMER__INIT;
  bc.volume = "v";
  bc.name = (char *)name;
  bc.pos = pos;
  bc.forget = forget;
  bc.rewind = rewind;
  bc.list = list;
  bc.pos_ms = 1000 + pos;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_BINLOG_CONSUMER;
  env.binlog_consumer = &bc;
  uint8_t bind[AUTH_BIND_BYTES] = {0}, sig[AUTH_SIG_BYTES];
  if (op)
    role_op_seal(&env, &op_key, bind, sig);
  DELIVER(coord_on_msg, x->co, c, &env);
  const Env *rep = count(&x->f, c, ERROR) ? take(&x->f, c, ERROR)
                                          : take(&x->f, c, AURALOG__ENVELOPE__BODY_BINLOG_CONSUMERS);
  assert_int_equal(rep->req, req);
  return rep;
}

static uint64_t pos_of(const Env *rep, const char *name)
{
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_BINLOG_CONSUMERS);
  for (size_t i = 0; i < rep->binlog_consumers->n_consumers; i++)
    if (!strcmp(rep->binlog_consumers->consumers[i]->name, name))
      return rep->binlog_consumers->consumers[i]->pos;
  return UINT64_MAX;
}

/* Give volume v a binlog PG on the six nodes (as the writer's --binlog
 * enhanced open will make the coordinator place it). */
static void add_binlog_pg(struct cfix *x)
{
  char why[256];
  Auralog__Volume **slot = coord_vol_slot(x->co, "v");
  assert_non_null(slot);
  Auralog__Segment seg[NCOPIES], *ptr[NCOPIES];
  bl_segments(seg, ptr);
  for (int i = 0; i < NCOPIES; i++)
    seg[i].volume_id = (*slot)->id;
  Auralog__Pg pg = AURALOG__PG__INIT;
  pg.pg = BINLOG_PG;
  pg.npages = 1;
  pg.segments = ptr;
  pg.n_segments = NCOPIES;
  Auralog__Volume tmp = **slot;
  tmp.binlog = &pg;
  assert_non_null(coord_vol_store(x->co, slot, &tmp, why, sizeof why));
}

/* The keep point of volume id vol in the newest Assign sent to node i
 * not yet looked at (1 with *keep; 0 none in it); -1: no Assign sent. */
static int assign_keep(struct cfix *x, int i, uint64_t vol, uint64_t *keep)
{
  if (count(&x->f, x->node[i], ASSIGN) == 0)
    return -1;
  const Env *as = NULL;
  while (count(&x->f, x->node[i], ASSIGN))
    as = take(&x->f, x->node[i], ASSIGN);
  for (size_t k = 0; k < as->assign->n_binlog_keep; k++)
    if (as->assign->binlog_keep[k]->volume_id == vol) {
      *keep = as->assign->binlog_keep[k]->keep;
      return 1;
    }
  return 0;
}

/* Every message sent so far, looked at. */
static void drain(struct cfix *x)
{
  for (size_t i = 0; i < x->f.nout; i++)
    x->f.out[i].taken = 1;
}

static void coord_keeps_consumers_positions_and_sends_the_lowest(void **state)
{
  (void)state;
  struct cfix x;
  coord_setup(&x, 1);
  struct ep *c = ep_new(&x.f, "tool:1");
  /* No such volume yet: one line. */
  const Env *rep = consumer(&x, c, 1, "cdc", 5, 0, 0, 0, 0);
  assert_int_equal(rep->error->code, ERR_NOT_FOUND);
  uint64_t vol = open_volume(&x.f, x.co, c, 2, 1, 1)->volume->id;
  add_binlog_pg(&x);
  drain(&x);

  /* Register two consumers (a member may: no operator signature). */
  assert_int_equal(pos_of(consumer(&x, c, 3, "cdc", 50, 0, 0, 0, 0), "cdc"), 50);
  rep = consumer(&x, c, 4, "replica", 30, 0, 0, 0, 0);
  assert_int_equal(pos_of(rep, "replica"), 30);
  assert_int_equal(rep->binlog_consumers->n_consumers, 2);
  assert_int_equal(rep->binlog_consumers->consumers[0]->pos_ms, 1050);   /* "cdc" first */
  /* The binlog nodes heard the lowest at once (the first change). */
  uint64_t keep = 0;
  assert_int_equal(assign_keep(&x, 0, vol, &keep), 1);
  assert_int_equal(keep, 50);                 /* the first registration's Assign */

  /* A move forward; a move back is refused, and says where it is. */
  assert_int_equal(pos_of(consumer(&x, c, 5, "cdc", 60, 0, 0, 0, 0), "cdc"), 60);
  rep = consumer(&x, c, 6, "cdc", 40, 0, 0, 0, 0);
  assert_int_equal(rep->error->code, ERR_CONFLICT);
  assert_non_null(strstr(rep->error->msg, "is at 60"));
  assert_non_null(strstr(rep->error->msg, "rewind"));
  /* ... unless it says rewind (a consumer restored from an old copy). */
  assert_int_equal(pos_of(consumer(&x, c, 7, "cdc", 40, 0, 1, 0, 0), "cdc"), 40);

  /* Sent at most once a second: the next tick a second later carries the
   * lowest now (30, "replica"). */
  x.f.now += BINLOG_KEEP_SEND_MS;
  coord_tick(x.co);
  for (int i = 0; i < NCOPIES; i++) {
    keep = 0;
    assert_int_equal(assign_keep(&x, i, vol, &keep), 1);
    assert_int_equal(keep, 30);
  }
  /* Nothing changed since: no Assign. */
  x.f.now += BINLOG_KEEP_SEND_MS;
  coord_tick(x.co);
  assert_int_equal(assign_keep(&x, 0, vol, &keep), -1);

  /* Forget is the operator's. */
  rep = consumer(&x, c, 8, "replica", 0, 1, 0, 0, 0);
  assert_int_equal(rep->error->code, ERR_AUTH);
  assert_int_equal(pos_of(consumer(&x, c, 9, "", 0, 0, 0, 1, 0), "replica"), 30);
  rep = consumer(&x, c, 10, "replica", 0, 1, 0, 0, 1);
  assert_int_equal(rep->binlog_consumers->n_consumers, 1);
  rep = consumer(&x, c, 11, "nobody", 0, 1, 0, 0, 1);
  assert_int_equal(rep->error->code, ERR_NOT_FOUND);
  x.f.now += BINLOG_KEEP_SEND_MS;
  coord_tick(x.co);
  keep = 0;
  assert_int_equal(assign_keep(&x, 3, vol, &keep), 1);
  assert_int_equal(keep, 40);

  /* A coordinator started again on the same disk: the positions are there,
   * and every Assign (a node registering) carries the lowest. */
  drain(&x);
  coord_free(x.co);
  char why[256];
  struct meta m = x.co->meta;
  memset(x.co, 0, sizeof *x.co);
  x.co->meta = m;
  x.co->signer = coord_key;
  memcpy(x.co->op_pk, op_key.pk, AUTH_PK_BYTES);
  x.co->have_op_pk = 1;
  assert_int_equal(coord_init(x.co, &x.f.io, why, sizeof why), 0);
  assert_int_equal(pos_of(consumer(&x, c, 12, "", 0, 0, 0, 1, 0), "cdc"), 40);
  assert_int_equal(blc_lowest(x.co, vol, &keep), 1);
  assert_int_equal(keep, 40);
  const Env *as = register_as(&x.f, x.co, x.node[2], 2, addrs[2], 12);
  assert_int_equal(as->body_case, ASSIGN);
  assert_int_equal(as->assign->n_binlog_keep, 1);
  assert_int_equal(as->assign->binlog_keep[0]->keep, 40);

  /* Bad requests are refused by the wire: a name that is no name. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__BinlogConsumer bc = AURALOG__BINLOG_CONSUMER__INIT;
  bc.volume = "v";
  bc.name = "no spaces";
  env.body_case = AURALOG__ENVELOPE__BODY_BINLOG_CONSUMER;
  env.binlog_consumer = &bc;
  assert_int_not_equal(wire_check(&env, why, sizeof why), ERR_NONE);
  bc.name = "ok";
  bc.list = bc.forget = 1;
  assert_int_not_equal(wire_check(&env, why, sizeof why), ERR_NONE);
  coord_teardown(&x);
}

int main(void)
{
  log_quiet(2);
  keys();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(positions_are_lsn_or_lsn_colon_index),
    cmocka_unit_test(retention_releases_the_oldest_beyond_its_limits),
    cmocka_unit_test(node_serves_binlog_records_up_to_its_durable_end),
    cmocka_unit_test(node_retention_keeps_what_consumers_have_not_read),
    cmocka_unit_test(node_retention_stops_at_the_durable_end_and_at_peers),
    cmocka_unit_test(node_retention_by_commit_time),
    cmocka_unit_test(coord_keeps_consumers_positions_and_sends_the_lowest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
