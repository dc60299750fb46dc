/*
 * test_truncbound.c: the bound on truncations (node/segment.c
 * seg_trunc_ok; DESIGN.md §4, invariants 3 and 9) and the VDLs heard per
 * writer epoch that it reads, on the segment alone, through the store,
 * and on every path into a node (cores_fix.h).
 *
 * The bug it keeps out: a member holding the cluster key got an epoch
 * signed and put a truncation (0, 2^59] of its epoch in a recovery's
 * scan. Only a Truncate and an Append were bounded: the node cut every
 * older record above its GC point, gossip spread the range to all six
 * segments, every acknowledged row was lost. Here:
 *
 *  - the VDLs heard are kept per epoch, without what another entry makes
 *    moot, and a full list folds its oldest entry into the next;
 *  - a truncation of epoch E starting below the VDL heard from epoch E-1 is
 *    refused, one below the VDL heard from epoch E itself is not (rule T
 *    leaves E's records alone); the part at or below the GC point is moot;
 *    one that reaches more than LAL past what the segment knows is
 *    refused, unless an older one it rests on is held or comes with it,
 *    in any order; one of an epoch whose own range the segment holds,
 *    starting below that range, is refused (a fenced writer's stolen key);
 *  - the list survives a restart; metadata from before it loads as its VDL
 *    heard from its epoch; a truncation out of bounds in the store is left
 *    out at load, and counted;
 *  - on a node, a validly signed truncation below the VDL heard is refused
 *    on each path (Truncate, Append, scan, gossip) and counted; gossip
 *    still takes the push's other ranges and its records, and a scan is
 *    still answered, with the bound the segment keeps; a writer's
 *    Append that carries the older truncation its own rests on is taken
 *    by a segment that missed both; the planted bug trunc-unbounded-scan
 *    lets the scan's range through and empties the segment.
 */
#include "cores_fix.h"

#include "bugs.h"
#include "node/store.h"

#define HUGE_TO (1ull << 59)

/* ---- the segment alone ------------------------------------------------------- */

static void heard_is_kept_per_epoch(void **state)
{
  (void)state;
  struct segment s;
  seg_init(&s, VOL, 0, 0, 16, PSIZE);
  assert_int_equal(seg_heard_below(&s, 5, NULL), 0);
  assert_true(seg_heard_note(&s, 2, 100));
  assert_true(seg_heard_note(&s, 4, 300));
  assert_true(seg_heard_note(&s, 2, 150));        /* epoch 2 raised */
  assert_false(seg_heard_note(&s, 2, 120));       /* never lowered */
  assert_false(seg_heard_note(&s, 3, 140));       /* epoch 2's 150 says more */
  uint64_t who;
  assert_int_equal(seg_heard_below(&s, 2, &who), 0);
  assert_int_equal(seg_heard_below(&s, 3, &who), 150);
  assert_int_equal(who, 2);
  assert_int_equal(seg_heard_below(&s, 4, NULL), 150);
  assert_int_equal(seg_heard_below(&s, 5, &who), 300);
  assert_int_equal(who, 4);
  /* An older epoch's higher VDL makes newer entries at or below it moot. */
  assert_true(seg_heard_note(&s, 3, 400));
  assert_int_equal(s.nheard, 2);
  assert_int_equal(seg_heard_below(&s, 5, &who), 400);
  assert_int_equal(who, 3);
  /* Full: the oldest is folded into the next; the newest stay exact. */
  seg_init(&s, VOL, 0, 0, 16, PSIZE);
  for (uint64_t e = 1; e <= HEARD_MAX + 3; e++)
    seg_heard_note(&s, e, 10 * e);
  assert_int_equal(s.nheard, HEARD_MAX);
  assert_int_equal(seg_heard_below(&s, 4, NULL), 0);  /* folded: weaker, never stronger */
  assert_int_equal(seg_heard_below(&s, HEARD_MAX + 4, NULL), 10 * (HEARD_MAX + 3));
  assert_int_equal(seg_heard_below(&s, HEARD_MAX + 3, NULL), 10 * (HEARD_MAX + 2));
  assert_false(seg_heard_note(&s, 1, 5));          /* older than all, and lower */
  seg_free(&s);
}

static void the_bound_per_epoch_and_lal(void **state)
{
  (void)state;
  char why[256];
  struct segment s;
  seg_init(&s, VOL, 0, 0, 16, PSIZE);
  seg_heard_note(&s, 1, 100);
  seg_heard_note(&s, 2, 300);
  /* Epoch 2's truncation below what epoch 1's writer announced: refused,
   * with one line naming the range and the bound. */
  struct trunc t = {2, 50, 60};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_CONFLICT);
  assert_string_equal(why, "truncation (50, 60] of epoch 2 starts below the VDL 100 this "
                           "segment heard from epoch 1: refused");
  /* Below the VDL epoch 2's own writer announced: rule T leaves epoch 2's
   * records alone, and this is what its recovery proved. */
  t = (struct trunc){2, 150, 160};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_NONE);
  t = (struct trunc){3, 250, 260};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_CONFLICT);
  t = (struct trunc){3, 300, 300 + LAL};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_NONE);
  t.to++;
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_CONFLICT);
  assert_non_null(strstr(why, "ends more than LAL"));
  t = (struct trunc){3, 0, HUGE_TO};              /* the forged one */
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_CONFLICT);
  t = (struct trunc){3, 300, HUGE_TO};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_CONFLICT);
  /* What lies at or below the GC point is page versions: moot. */
  s.gc_lsn = 400;
  t = (struct trunc){3, 0, 400 + LAL};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_NONE);
  t = (struct trunc){3, 0, 300};                  /* wholly below: as good as held */
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_NONE);
  s.gc_lsn = 0;
  /* Two recoveries in a row with nothing durable between: epoch 4's range
   * rests on epoch 3's end. Held, or in the same message (either order),
   * that is within bounds; alone it is not. A held range of its own epoch
   * is no base. */
  struct trunc t3 = {3, 300, 300 + LAL}, t4 = {4, 300, 300 + 2 * LAL};
  assert_int_equal(seg_trunc_ok(&s, &t4, 0, why, sizeof why), ERR_CONFLICT);
  assert_int_equal(seg_trunc_ok(&s, &t4, t3.to, why, sizeof why), ERR_NONE);
  struct trunc msg[2] = {t4, t3};
  size_t ord[2];
  uint8_t fate[2];
  assert_int_equal(seg_trunc_pick(&s, msg, 2, 1, ord, fate, NULL, NULL), 2);
  assert_int_equal(ord[0], 1);                    /* oldest epoch first */
  assert_int_equal(fate[0], 1);
  assert_int_equal(fate[1], 1);
  assert_int_equal(seg_trunc_pick(&s, msg, 1, 1, ord, fate, NULL, NULL), 0);
  assert_int_equal(fate[0], 2);
  seg_add_trunc(&s, &(struct trunc){4, 300, 300 + LAL});
  assert_int_equal(seg_trunc_ok(&s, &t4, 0, why, sizeof why), ERR_CONFLICT);
  seg_add_trunc(&s, &t3);
  assert_int_equal(seg_trunc_ok(&s, &t4, 0, why, sizeof why), ERR_NONE);
  /* B3: a range of an epoch whose own range this segment holds never
   * starts below it (its writer truncates from what it proved; a stolen
   * key of that epoch, fenced, would cut what it kept), however far above
   * the older epochs' VDLs; from the GC point up, as B1. */
  seg_add_trunc(&s, &(struct trunc){4, 500, 500 + LAL});
  t = (struct trunc){4, 400, 410};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_CONFLICT);
  assert_string_equal(why, "truncation (400, 410] of epoch 4 starts below (500, 10000500], "
                           "the one of its epoch this segment holds: refused");
  t = (struct trunc){4, 500, 510};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_NONE);
  s.gc_lsn = 500;
  t = (struct trunc){4, 400, 510};
  assert_int_equal(seg_trunc_ok(&s, &t, 0, why, sizeof why), ERR_NONE);
  seg_free(&s);
}

/* ---- through the store -------------------------------------------------------- */

static struct segment loaded;
static void keep(void *arg, struct segment *s)
{
  (void)arg;
  loaded = *s;
}

/* s's SegMeta into a store on d, then a fresh store loads it. */
static void save_load(struct disk *d, struct segment *s, struct store *st)
{
  char why[256];
  assert_int_equal(store_open_kv(st, disk_kv(d), why, sizeof why), 0);
  assert_int_equal(store_begin(st, why, sizeof why), 0);
  assert_int_equal(store_put_meta(st, s, why, sizeof why), 0);
  assert_int_equal(store_commit(st, why, sizeof why), 0);
  store_close(st);
  memset(&loaded, 0, sizeof loaded);
  assert_int_equal(store_open_kv(st, disk_kv(d), why, sizeof why), 0);
  assert_int_equal(store_load(st, keep, NULL, why, sizeof why), 0);
}

static void heard_survives_a_restart_and_old_metadata_loads_safely(void **state)
{
  (void)state;
  struct store st;
  struct disk *d = disk_new();
  struct segment s;
  seg_init(&s, VOL, 0, 0, 16, PSIZE);
  s.epoch = 5;
  s.vdl = 700;
  seg_heard_note(&s, 2, 100);
  seg_heard_note(&s, 4, 400);
  seg_heard_note(&s, 5, 700);
  save_load(d, &s, &st);
  assert_int_equal(loaded.nheard, 3);
  assert_memory_equal(loaded.heard, s.heard, 3 * sizeof *s.heard);
  seg_free(&loaded);
  store_close(&st);
  disk_free(d);

  /* Written before the list existed: its VDL counts as heard from its
   * epoch (binding only newer epochs' truncations). */
  d = disk_new();
  s.nheard = 0;
  save_load(d, &s, &st);
  assert_int_equal(loaded.nheard, 1);
  assert_int_equal(seg_heard_below(&loaded, 6, NULL), 700);
  assert_int_equal(seg_heard_below(&loaded, 5, NULL), 0);
  seg_free(&loaded);
  store_close(&st);
  disk_free(d);
  seg_free(&s);
}

static void a_truncation_out_of_bounds_in_the_store_is_left_out(void **state)
{
  (void)state;
  struct store st;
  struct disk *d = disk_new();
  struct segment s;
  seg_init(&s, VOL, 0, 0, 16, PSIZE);
  s.epoch = 3;
  seg_heard_note(&s, 2, 100);
  /* As an older node took it, unchecked, from a scan; and a good one. */
  seg_add_trunc(&s, &(struct trunc){3, 0, HUGE_TO});
  seg_add_trunc(&s, &(struct trunc){3, 100, 100 + LAL});
  save_load(d, &s, &st);
  assert_int_equal(loaded.ntruncs, 1);
  assert_true(seg_has_trunc(&loaded, 3, 100, 100 + LAL));
  assert_int_equal(st.truncs_refused, 1);
  seg_free(&loaded);
  store_close(&st);
  disk_free(d);
  seg_free(&s);
}

/* ---- on a node ---------------------------------------------------------------- */

/* A truncation of epoch (from, to], signed by its writer, with its proof;
 * sigs: room for the two signatures. */
static Auralog__TruncRange *signed_tr(Auralog__TruncRange *tr, uint8_t sigs[2][AUTH_SIG_BYTES],
                                      uint64_t epoch, uint64_t from, uint64_t to)
{
  auralog__trunc_range__init(tr);
  auth_ticket_sign(&coord_key, VOL, epoch, writer_key.pk, sigs[0]);
  auth_trunc_sign(&writer_key, VOL, epoch, from, to, sigs[1]);
  tr->epoch = epoch;
  tr->from = from;
  tr->to = to;
  tr->writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  tr->ticket_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sigs[0]};
  tr->sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sigs[1]};
  return tr;
}

/* An Append of epoch with the writer's vdl, records, and a truncation
 * (NULL: none) with the older ones it rests on. */
static void append_v(struct nfix *x, uint64_t req, uint64_t epoch, uint64_t vdl, Rec **recs,
                     size_t n, Auralog__TruncRange *tr, Auralog__TruncRange **before,
                     size_t nbefore)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = epoch;
  a.vdl = vdl;
  a.ticket = ticket(epoch, &tk, sig);
  a.records = recs;
  a.n_records = n;
  a.trunc = tr;
  a.before = before;
  a.n_before = nbefore;
  env.req = req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
}

/* Epoch 2 writes records 1 and 2 and announces VDL 2. */
static struct segment *written(struct nfix *x)
{
  struct trec t1, t2;
  Rec *recs[2] = {mkrec(&t1, 1, 0, 5, 100, 0x11, 0, 2), mkrec(&t2, 2, 1, 5, 104, 0x22, REC_CPL, 2)};
  append_v(x, 10, 2, 0, recs, 2, NULL, NULL, 0);
  append_v(x, 11, 2, 2, NULL, 0, NULL, NULL, 0);
  node_end_turn(x->n);
  take(&x->f, x->w, APPEND_ACK);
  take(&x->f, x->w, APPEND_ACK);
  struct segment *s = node_find_seg(x->n, VOL, 0);
  assert_int_equal(s->scl, 2);
  assert_int_equal(seg_heard_below(s, 3, NULL), 2);
  return s;
}

/* Nothing cut: both records held, no truncation. */
static void untouched(struct nfix *x, const struct segment *s)
{
  assert_int_equal(s->ntruncs, 0);
  assert_int_equal(s->scl, 2);
  assert_int_equal(disk_entries(x->d, "recs"), 2);
}

static void truncate_req(struct nfix *x, struct ep *r, uint64_t req, uint64_t epoch,
                         uint64_t from, uint64_t to)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Truncate t = AURALOG__TRUNCATE__INIT;
  Auralog__EpochTicket tk;
  uint8_t tsig[AUTH_SIG_BYTES], sig[AUTH_SIG_BYTES];
  t.volume_id = VOL;
  t.pg = 0;
  t.epoch = epoch;
  t.from = from;
  t.to = to;
  t.ticket = ticket(epoch, &tk, tsig);
  auth_trunc_sign(&writer_key, VOL, epoch, from, to, sig);
  t.sig = (ProtobufCBinaryData){sizeof sig, sig};
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
  env.truncate = &t;
  DELIVER(node_on_msg, x->n, r, &env);
}

static void scan(struct nfix *x, struct ep *r, uint64_t req, uint64_t epoch,
                 Auralog__TruncRange **tr, size_t ntr)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  q.volume_id = VOL;
  q.pg = 0;
  q.epoch = epoch;
  q.ticket = ticket(epoch, &tk, sig);
  q.scan = 1;
  q.truncs = tr;
  q.n_truncs = ntr;
  env.req = req;
  env.body_case = SEG_QUERY;
  env.seg_query = &q;
  DELIVER(node_on_msg, x->n, r, &env);
  node_end_turn(x->n);          /* a scan is answered with the turn's commit (trunc.c) */
}

static void refused_on_truncate_append_and_scan(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  struct segment *s = written(&x);
  struct ep *r = ep_new(&x.f, "member:1");

  /* A Truncate: (0, 2^59], and (1, 10], each signed by epoch 3's writer. */
  truncate_req(&x, r, 20, 3, 0, HUGE_TO);
  const Env *e = take(&x.f, r, ERROR);
  assert_int_equal(e->error->code, ERR_CONFLICT);
  assert_string_equal(e->error->msg, "truncation (0, 576460752303423488] of epoch 3 starts "
                                     "below the VDL 2 this segment heard from epoch 2: refused");
  truncate_req(&x, r, 21, 3, 1, 10);
  assert_int_equal(take(&x.f, r, ERROR)->error->code, ERR_CONFLICT);
  untouched(&x, s);
  assert_int_equal(x.n->truncs_refused, 2);

  /* An Append carrying it, or the same with a record of epoch 3. */
  Auralog__TruncRange tr;
  uint8_t sigs[2][AUTH_SIG_BYTES];
  struct trec t3;
  Rec *rec3 = mkrec(&t3, 11, 1, 5, 16, 0x33, REC_CPL, 3);
  append_v(&x, 22, 3, 0, &rec3, 1, signed_tr(&tr, sigs, 3, 1, 10), NULL, 0);
  node_end_turn(x.n);
  assert_int_equal(take(&x.f, x.w, ERROR)->error->code, ERR_CONFLICT);
  untouched(&x, s);
  assert_int_equal(x.n->truncs_refused, 3);

  /* A recovery's scan (the path of the bug): the range skipped and
   * counted, nothing cut; the scan is answered all the same (a recovery
   * applies every range it carries itself, and one range that kept some
   * other segment's bound must not cost it this one's answer: trunc.c),
   * with the bound the segment keeps (the VDLs it heard, its GC point). */
  Auralog__TruncRange *trp = signed_tr(&tr, sigs, 3, 0, HUGE_TO);
  scan(&x, r, 23, 3, &trp, 1);
  const Auralog__SegInfo *si = take(&x.f, r, SEG_INFO)->seg_info;
  assert_false(seg_has_trunc(s, 3, 0, HUGE_TO));
  assert_true(si->n_heard >= 2 && si->n_heard % 2 == 0);
  assert_int_equal(si->heard[si->n_heard - 2], 2);   /* epoch 2 told it VDL 2 */
  assert_int_equal(si->heard[si->n_heard - 1], 2);
  assert_int_equal(si->gc_lsn, s->gc_lsn);
  untouched(&x, s);
  assert_int_equal(x.n->truncs_refused, 4);

  /* What a recovery of epoch 3 writes, from the VDL it proved: taken. */
  trp = signed_tr(&tr, sigs, 3, 2, 2 + LAL);
  scan(&x, r, 24, 3, &trp, 1);
  assert_int_equal(take(&x.f, r, SEG_INFO)->req, 24);
  assert_true(seg_has_trunc(s, 3, 2, 2 + LAL));
  assert_int_equal(s->scl, 2);
  node_teardown(&x);
}

/* Tick the node's gossip until it pulls from a peer (test_gossip.c). */
static struct ep *await_pull(struct nfix *x, const Env **q)
{
  for (int t = 0; t < 100; t++) {
    x->f.now += GOSSIP_MS;
    gossip_tick(x->n);
    for (int i = 1; i < NCOPIES; i++) {
      struct ep *e = NULL;
      for (size_t j = x->f.neps; j > 0 && e == NULL; j--)
        if (strcmp(x->f.eps[j - 1]->addr, addrs[i]) == 0)
          e = x->f.eps[j - 1];
      if (e == NULL)
        continue;
      node_on_up(x->n, e);
      if (count(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL)) {
        *q = take(&x->f, e, AURALOG__ENVELOPE__BODY_GOSSIP_PULL);
        return e;
      }
    }
  }
  fail_msg("the node never pulled from a peer");
  return NULL;
}

static void gossip_skips_a_refused_range_and_takes_the_rest(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  struct segment *s = written(&x);
  /* A peer pushes the forged range, epoch 3's real one, and epoch 3's
   * first record (it links back to 2). */
  Auralog__TruncRange tv[2], *tp[2];
  uint8_t sigs[2][2][AUTH_SIG_BYTES];
  tp[0] = signed_tr(&tv[0], sigs[0], 3, 0, HUGE_TO);
  tp[1] = signed_tr(&tv[1], sigs[1], 3, 2, 10);
  struct trec t11;
  Rec *rec = mkrec(&t11, 11, 2, 5, 16, 0xbb, REC_CPL, 3);
  const Env *q = NULL;
  struct ep *e = await_pull(&x, &q);
  Env a = AURALOG__ENVELOPE__INIT;
  Auralog__GossipPush gp = AURALOG__GOSSIP_PUSH__INIT;
  gp.volume_id = VOL;
  gp.pg = 0;
  gp.scl = 11;
  gp.records = &rec;
  gp.n_records = 1;
  gp.truncs = tp;
  gp.n_truncs = 2;
  a.req = q->req;
  a.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
  a.gossip_push = &gp;
  DELIVER(node_on_msg, x.n, e, &a);
  node_end_turn(x.n);
  assert_int_equal(s->ntruncs, 1);
  assert_true(seg_has_trunc(s, 3, 2, 10));
  assert_false(seg_has_trunc(s, 3, 0, HUGE_TO));
  assert_int_equal(x.n->truncs_refused, 1);
  assert_int_equal(s->scl, 11);                    /* 1, 2 kept; 11 taken */
  assert_int_equal(disk_entries(x.d, "recs"), 3);
  node_teardown(&x);
}

/* Recovery 3 wrote (2, 2 + LAL] and its writer crashed before anything was
 * durable; recovery 4 proved VDL 2 again and writes (2, 2 + 2 LAL]. A
 * segment that missed recovery 3 takes 4's range only with 3's: the
 * Append carries it (before). */
static void an_append_carries_what_its_truncation_rests_on(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  struct segment *s = written(&x);
  Auralog__TruncRange t3, t4, *before;
  uint8_t s3[2][AUTH_SIG_BYTES], s4[2][AUTH_SIG_BYTES];
  before = signed_tr(&t3, s3, 3, 2, 2 + LAL);
  signed_tr(&t4, s4, 4, 2, 2 + 2 * LAL);
  append_v(&x, 30, 4, 2, NULL, 0, &t4, NULL, 0);
  node_end_turn(x.n);
  const Env *e = take(&x.f, x.w, ERROR);
  assert_non_null(strstr(e->error->msg, "ends more than LAL"));
  assert_int_equal(s->ntruncs, 0);
  append_v(&x, 31, 4, 2, NULL, 0, &t4, &before, 1);
  node_end_turn(x.n);
  take(&x.f, x.w, APPEND_ACK);
  assert_true(seg_has_trunc(s, 3, 2, 2 + LAL));
  assert_true(seg_has_trunc(s, 4, 2, 2 + 2 * LAL));
  /* Both, and the VDLs heard, are there after a restart. */
  node_crash(&x);
  node_boot(&x);
  s = node_find_seg(x.n, VOL, 0);
  assert_int_equal(s->ntruncs, 2);
  assert_int_equal(seg_heard_below(s, 5, NULL), 2);
  assert_int_equal(s->nheard, 1);
  assert_int_equal(x.n->st.truncs_refused, 0);
  node_teardown(&x);
}

/* The planted bug trunc-unbounded-scan: the scan's range goes in, and the
 * acknowledged records are gone. */
static void the_planted_bug_lets_the_scan_empty_the_segment(void **state)
{
  (void)state;
  struct nfix x;
  node_setup(&x);
  struct segment *s = written(&x);
  struct ep *r = ep_new(&x.f, "member:1");
  Auralog__TruncRange tr, *trp;
  uint8_t sigs[2][AUTH_SIG_BYTES];
  trp = signed_tr(&tr, sigs, 3, 0, HUGE_TO);
  planted_bugs = 1u << BUG_TRUNC_UNBOUNDED_SCAN;
  scan(&x, r, 40, 3, &trp, 1);
  planted_bugs = 0;
  take(&x.f, r, SEG_INFO);
  assert_true(seg_has_trunc(s, 3, 0, HUGE_TO));
  assert_int_equal(s->scl, 0);
  assert_int_equal(disk_entries(x.d, "recs"), 0);
  node_teardown(&x);
}

int main(void)
{
  log_quiet(2);
  keys();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(heard_is_kept_per_epoch),
    cmocka_unit_test(the_bound_per_epoch_and_lal),
    cmocka_unit_test(heard_survives_a_restart_and_old_metadata_loads_safely),
    cmocka_unit_test(a_truncation_out_of_bounds_in_the_store_is_left_out),
    cmocka_unit_test(refused_on_truncate_append_and_scan),
    cmocka_unit_test(gossip_skips_a_refused_range_and_takes_the_rest),
    cmocka_unit_test(an_append_carries_what_its_truncation_rests_on),
    cmocka_unit_test(the_planted_bug_lets_the_scan_empty_the_segment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
