/*
 * test_membership.c: the coordinator's side of PG membership changes and
 * repair (member.h M4-M7, coord/member.c), driven through the core's
 * events as its drivers do (cores_fix.h): nodes register and heartbeat,
 * the writer probes its lease, the clock moves and coord_tick runs.
 *
 * A nine-node cluster (A1..A3, B1..B3, C1..C3): the volume's one PG is
 * placed on the first two of each AZ, so each AZ has one spare.
 *
 *  - a node silent past the repair bound has its segments begun on the
 *    spare of its AZ, as next segments with a new mepoch;
 *  - each mepoch is stored before any Assign names it;
 *  - no finish before the current writer's probe adopted the change, nor
 *    before the next segment's SCL reached what the writer adopted at;
 *  - a finish makes the next segment current and sets mepoch_min; the
 *    node that left gets an Assign without it;
 *  - a coordinator restart keeps the transition, and does not finish it
 *    on an adoption heard before;
 *  - the operator drains an up node (it stays current until the finish,
 *    then the node is retired); a member may not;
 *  - a next segment whose node dies mid-hydration is regrown elsewhere;
 *  - the probe answer lists the PGs changed since the writer's mseq;
 *  - the volume's binlog PG (issue 29; BINLOG_PG, Volume.binlog) moves as a
 *    data PG does: a lost node's binlog segment is repaired (without it,
 *    the lost node stays a member of the binlog PG for good, and an AZ
 *    down on top leaves it short of a write quorum: every commit stalls,
 *    its binlog record being its CPL), through the same begin / adopt /
 *    finish steps (the writer's report and the answer in Volume.binlog);
 *    a drain moves it too, and the node retires only once it left it; a
 *    node back before its repair finished keeps it.
 */
#include "cores_fix.h"
#include "coord/memberc.h"
#include "coord/placement.h"

#define NN 9
static const char *const nids[NN] = {"A1", "A2", "B1", "B2", "C1", "C2", "A3", "B3", "C3"};
static const char *const nazs[NN] = {"A", "A", "B", "B", "C", "C", "A", "B", "C"};
static uint8_t bind0[AUTH_BIND_BYTES];
static uint8_t sigbuf[AUTH_SIG_BYTES];

struct mfix {
  struct cfix c;
  struct ep *n[NN + 1];          /* the nodes' endpoints (n[NN]: an extra one, B4) */
  struct ep *w;                  /* the writer's */
  uint64_t vid, epoch;
  uint64_t scl[NN + 1];          /* what each node's heartbeat says of its segment */
  uint64_t blscl[NN + 1];        /* ... and of its binlog PG's segment, if it hosts one */
  int silent[NN + 1];            /* a node that sends no heartbeat */
  int bare[NN + 1];              /* a node that has no segment (its Assign was lost) */
  int whole[NN + 1];             /* ... whose heartbeats are whole (list every segment it has) */
};

static int mnode_reg(struct mfix *x, int i, const char *id, const char *az)
{
  char addr[32];
  snprintf(addr, sizeof addr, "%s:1", id);
  x->n[i] = ep_new(&x->c.f, addr);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  struct auth_signer k;
  uint8_t seed[32] = {(uint8_t)(30 + i)}, sig[AUTH_SIG_BYTES];
  auth_signer_seed(&k, seed);
  auth_id_sign(&k, id, az, addr, sig);
  reg.id = (char *)id;
  reg.az = (char *)az;
  reg.addr = addr;
  reg.id_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, k.pk};
  reg.id_sig = (ProtobufCBinaryData){sizeof sig, sig};
  env.req = 1;
  env.body_case = REGISTER;
  env.register_ = &reg;
  DELIVER(coord_on_msg, x->c.co, x->n[i], &env);
  return (int)take(&x->c.f, x->n[i], ASSIGN)->assign->n_segments;
}

/* The writer opens (creates) volume v, with a binlog PG if binlog
 * (`engine --binlog enhanced`: OpenVolume.binlog, coord/cbinlog.c). */
static const Auralog__Volume *open_v(struct mfix *x, int binlog)
{
  if (!binlog)
    return open_volume(&x->c.f, x->c.co, x->w, 60, 1, 1)->volume;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "v";
  ov.create = 1;
  ov.writer = 1;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  ov.page_size = PSIZE;
  ov.binlog = 1;
  env.req = 60;
  env.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  env.open_volume = &ov;
  uint8_t bind[AUTH_BIND_BYTES] = {0}, sig[AUTH_SIG_BYTES];
  role_op_seal(&env, &op_key, bind, sig);
  DELIVER(coord_on_msg, x->c.co, x->w, &env);
  return take(&x->c.f, x->w, VOLUME)->volume;
}

static void mfix_setup_bl(struct mfix *x, int binlog)
{
  memset(x, 0, sizeof *x);
  keys();
  coord_setup(&x->c, 0);
  for (int i = 0; i < NN; i++)
    mnode_reg(x, i, nids[i], nazs[i]);
  x->w = ep_new(&x->c.f, "w1:1");
  const Auralog__Volume *v = open_v(x, binlog);
  x->vid = v->id;
  x->epoch = v->epoch;
  assert_int_equal(v->n_pgs, 1);
  for (int j = 0; j < NCOPIES; j++) {
    assert_string_equal(v->pgs[0]->segments[j]->node, nids[j]);
    assert_int_equal(v->pgs[0]->segments[j]->pos, j);
  }
  assert_int_equal(v->mseq, 0);
  for (int i = 0; i < NN; i++)   /* the new volume's placement, told to every node */
    while (count(&x->c.f, x->n[i], ASSIGN))
      take(&x->c.f, x->n[i], ASSIGN);
}

static void mfix_setup(struct mfix *x)
{
  mfix_setup_bl(x, 0);
}

static void mfix_teardown(struct mfix *x)
{
  coord_teardown(&x->c);
}

static const Auralog__Pg *pg0(struct mfix *x)
{
  return x->c.co->vols[0]->pgs[0];
}

/* The volume's binlog PG, as the coordinator stores it now. */
static const Auralog__Pg *blpg(struct mfix *x)
{
  return x->c.co->vols[0]->binlog;
}

/* Does pg list node id (current or next)? */
static int pg_has(const Auralog__Pg *pg, const char *id)
{
  for (size_t s = 0; pg && s < pg->n_segments; s++)
    if (strcmp(pg->segments[s]->node, id) == 0)
      return 1;
  return 0;
}

/* Node i's heartbeat: its segment of PG 0 at x->scl[i] (if it hosts one;
 * none if bare). It names PG 0's segment only, a delta in the protocol's
 * terms (a whole heartbeat lists every segment: node.c send_heartbeat),
 * unless whole[i]. */
static void heartbeat(struct mfix *x, int i)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Heartbeat hb = AURALOG__HEARTBEAT__INIT;
  Auralog__SegStat ss[2], *ssp[2];
  const char *id = i == NN ? "B4" : nids[i];
  size_t n = 0;
  for (int b = 0; b < 2; b++) {   /* PG 0's segment, then the binlog PG's */
    if (!pg_has(b ? blpg(x) : pg0(x), id))
      continue;
    auralog__seg_stat__init(&ss[n]);
    ss[n].volume_id = x->vid;
    ss[n].pg = b ? BINLOG_PG : 0;
    ss[n].scl = b ? x->blscl[i] : x->scl[i];
    ss[n].epoch = x->epoch;
    ssp[n] = &ss[n];
    n++;
  }
  hb.id = (char *)id;
  hb.segs = ssp;
  hb.n_segs = x->bare[i] ? 0 : n;
  hb.delta = !x->whole[i];
  env.body_case = AURALOG__ENVELOPE__BODY_HEARTBEAT;
  env.heartbeat = &hb;
  DELIVER(coord_on_msg, x->c.co, x->n[i], &env);
}

/* ms of time in HEARTBEAT_MS steps: every node not silent beats, the
 * coordinator ticks. */
static void run(struct mfix *x, unsigned ms)
{
  for (unsigned t = 0; t < ms; t += HEARTBEAT_MS) {
    x->c.f.now += HEARTBEAT_MS;
    for (int i = 0; i <= NN; i++)
      if (x->n[i] && !x->silent[i])
        heartbeat(x, i);
    coord_tick(x->c.co);
  }
}

/* The writer's lease probe, reporting that it uses mepoch of PG 0 since
 * its VCL was at (mepoch 0: no report); signed as the writer (R4) if
 * signed. The answer. */
static const Auralog__Volume *probe(struct mfix *x, uint64_t mseq, uint64_t mepoch, uint64_t at,
                                    int signed_)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Volume v = AURALOG__VOLUME__INIT;
  Auralog__Pg pg = AURALOG__PG__INIT, *pgp = &pg;
  v.name = "v";
  v.page_size = PSIZE;
  v.epoch = x->epoch;
  v.mseq = mseq;
  pg.pg = 0;
  pg.mepoch = mepoch;
  pg.adopted_at = at;
  if (mepoch) {
    v.pgs = &pgp;
    v.n_pgs = 1;
  }
  env.req = 70;
  env.body_case = VOLUME;
  env.volume = &v;
  if (signed_)
    role_writer_seal(&env, &writer_key, bind0, x->vid, x->epoch, sigbuf);
  DELIVER(coord_on_msg, x->c.co, x->w, &env);
  return take(&x->c.f, x->w, VOLUME)->volume;
}

/* The writer's lease probe reporting the binlog PG (in Volume.binlog, as
 * vfs/vmember.c fills it): it uses mepoch of it since at (mepoch 0: no
 * report). Signed as the writer. The answer, as wire_check lets it in. */
static const Auralog__Volume *probe_bl(struct mfix *x, uint64_t mseq, uint64_t mepoch,
                                       uint64_t at)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Volume v = AURALOG__VOLUME__INIT;
  Auralog__Pg pg = AURALOG__PG__INIT;
  v.name = "v";
  v.page_size = PSIZE;
  v.epoch = x->epoch;
  v.mseq = mseq;
  pg.pg = BINLOG_PG;
  pg.mepoch = mepoch;
  pg.adopted_at = at;
  if (mepoch)
    v.binlog = &pg;
  env.req = 71;
  env.body_case = VOLUME;
  env.volume = &v;
  role_writer_seal(&env, &writer_key, bind0, x->vid, x->epoch, sigbuf);
  char why[256];
  assert_int_equal(wire_check(&env, why, sizeof why), ERR_NONE);
  DELIVER(coord_on_msg, x->c.co, x->w, &env);
  const Env *a = take(&x->c.f, x->w, VOLUME);
  assert_int_equal(wire_check(a, why, sizeof why), ERR_NONE);
  return a->volume;
}

/* The newest Assign node i got that the test has not looked at (NULL: none). */
static const Auralog__Assign *last_assign(struct mfix *x, int i)
{
  const Auralog__Assign *a = NULL;
  while (count(&x->c.f, x->n[i], ASSIGN))
    a = take(&x->c.f, x->n[i], ASSIGN)->assign;
  return a;
}

static const Auralog__Segment *assigned(const Auralog__Assign *a, const char *node)
{
  for (size_t s = 0; a && s < a->n_segments; s++)
    if (strcmp(a->segments[s]->node, node) == 0)
      return a->segments[s];
  return NULL;
}

/* B1 (node 2, position 2) silent past the repair bound: its segment is
 * begun on B3 (node 7). */
static void lose_b1(struct mfix *x)
{
  x->silent[2] = 1;
  run(x, REPAIR_AFTER_MS - HEARTBEAT_MS);
  assert_int_equal(pg0(x)->n_segments, NCOPIES);   /* not before the bound */
  run(x, 2 * MOVE_RETRY_MS);
  assert_int_equal(pg0(x)->n_segments, NCOPIES + 1);
}

/* ---- tests --------------------------------------------------------------- */

static void a_lost_node_is_repaired_on_the_spare_of_its_az(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  lose_b1(&x);
  const Auralog__Pg *pg = pg0(&x);
  const Auralog__Segment *g = pg->segments[NCOPIES];
  assert_string_equal(g->node, "B3");
  assert_string_equal(g->az, "B");
  assert_true(g->next);
  assert_int_equal(g->pos, 2);
  assert_int_equal(g->since, 1);
  assert_string_equal(pg->segments[2]->node, "B1");   /* still current until the finish */
  assert_int_equal(pg->mepoch, 1);
  assert_int_equal(pg->mepoch_min, 0);
  assert_int_equal(x.c.co->vols[0]->mseq, 1);
  /* B3 was told, with the PG's mepoch; so were the PG's other nodes. */
  const Auralog__Segment *a = assigned(last_assign(&x, 7), "B3");
  assert_non_null(a);
  assert_true(a->next);
  assert_int_equal(a->pos, 2);
  assert_int_equal(a->mepoch, 1);
  assert_int_equal(a->since, 1);
  const Auralog__Assign *a0 = last_assign(&x, 0);
  assert_non_null(a0);
  assert_int_equal(a0->n_volumes, 1);
  assert_int_equal(a0->volumes[0], x.vid);
  assert_int_equal(a0->n_peers, NCOPIES + 1);
  /* A node outside the PG heard nothing. */
  assert_null(last_assign(&x, 6));
  /* Status lists the move. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = "v";
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  env.status_req = &sr;
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  const Auralog__Status *st = take(&x.c.f, x.w, STATUS)->status;
  assert_int_equal(st->n_moves, 1);
  assert_string_equal(st->moves[0]->from, "B1");
  assert_string_equal(st->moves[0]->to, "B3");
  assert_string_equal(st->moves[0]->kind, "repair");
  mfix_teardown(&x);
}

/* A begin's Assign lost on its way (the spare's AZ partitioned: the
 * simulator's seed 2690 --faults backup): the spare hosts nothing while
 * its PG lists it as next, and the move cannot finish. A delta heartbeat
 * cannot show a segment missing; the next whole one does, and the
 * Assign comes again. */
static void a_spare_whose_assign_was_lost_gets_it_again(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  x.bare[7] = 1;                 /* B3 never got it */
  lose_b1(&x);
  assert_string_equal(pg0(&x)->segments[NCOPIES]->node, "B3");
  last_assign(&x, 7);            /* lost */
  run(&x, 2 * ASSIGN_AGAIN_MS);
  assert_null(last_assign(&x, 7));
  x.whole[7] = 1;
  run(&x, HEARTBEAT_MS);         /* one whole heartbeat short: maybe an Assign being applied */
  assert_null(last_assign(&x, 7));
  run(&x, HEARTBEAT_MS);         /* the next as short, no progress: lost */
  const Auralog__Segment *a = assigned(last_assign(&x, 7), "B3");
  assert_non_null(a);
  assert_true(a->next);
  assert_int_equal(a->pos, 2);
  mfix_teardown(&x);
}

/* ---- stored before told ---------------------------------------------------- */

static struct mfix *hooked;
static uint64_t stored_mseq;
static int assigns_checked;

static void keep_node(void *arg, Auralog__NodeInfo *n)
{
  (void)arg;
  auralog__node_info__free_unpacked(n, NULL);
}

static void keep_vol(void *arg, Auralog__Volume *v)
{
  (void)arg;
  stored_mseq = v->mseq;
  auralog__volume__free_unpacked(v, NULL);
}

/* The fake's send, looking first at what the metadata holds: every
 * mepoch an Assign names must be stored already. */
static int send_checking_meta(void *ctx, struct ep *to, const Env *env)
{
  char why[256];
  if (env->body_case == ASSIGN) {
    assert_int_equal(meta_load(&hooked->c.co->meta, keep_node, keep_vol, NULL, why, sizeof why),
                     0);
    for (size_t s = 0; s < env->assign->n_segments; s++)
      assert_true(env->assign->segments[s]->mepoch <= stored_mseq);
    assigns_checked++;
  }
  return f_send(ctx, to, env);
}

static void each_mepoch_is_stored_before_an_assign_names_it(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  hooked = &x;
  assigns_checked = 0;
  x.c.f.io.send = send_checking_meta;
  lose_b1(&x);
  assert_true(assigns_checked >= NCOPIES);
  assert_int_equal(stored_mseq, 1);
  mfix_teardown(&x);
}


/* A node hosting many segments is lost: every move is begun in one batch,
 * made durable by one synced metadata commit, and each node hears one
 * Assign for all of them. Before, each step was a synced commit of the
 * whole volume and an Assign to each node of its PG: a repair of ~900
 * segments kept the coordinator from answering anyone for ~30 s (crash
 * campaign, point 80: `cluster up` found no node registered). */
static void a_repair_of_many_pgs_is_one_durable_batch(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
  g.name = "v";
  g.npgs = 60;
  env.req = 61;
  env.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
  env.grow_volume = &g;
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  assert_int_equal(take(&x.c.f, x.w, VOLUME)->volume->n_pgs, 60);
  for (int i = 0; i < NN; i++)
    last_assign(&x, i);
  const Auralog__Volume *v = x.c.co->vols[0];
  int on_b1 = 0;
  for (size_t p = 0; p < v->n_pgs; p++)
    for (size_t s = 0; s < v->pgs[p]->n_segments; s++)
      on_b1 += strcmp(v->pgs[p]->segments[s]->node, "B1") == 0;
  assert_true(on_b1 >= 10);
  uint64_t syncs = disk_stats(x.c.d)->syncs, commits = disk_stats(x.c.d)->commits;
  x.silent[2] = 1;
  /* The step (one heartbeat period) in which the moves begin: the
   * Assigns sent in it. */
  int told[NN] = {0}, moving = 0;
  for (unsigned t = 0; t < REPAIR_AFTER_MS + 2 * MOVE_RETRY_MS && moving == 0;
       t += HEARTBEAT_MS) {
    for (int i = 0; i < NN; i++)
      last_assign(&x, i);
    run(&x, HEARTBEAT_MS);
    v = x.c.co->vols[0];
    for (size_t p = 0; p < v->n_pgs; p++)
      moving += v->pgs[p]->n_segments > NCOPIES;
    for (int i = 0; i < NN; i++)
      while (count(&x.c.f, x.n[i], ASSIGN)) {
        take(&x.c.f, x.n[i], ASSIGN);
        told[i]++;
      }
  }
  assert_int_equal(moving, on_b1);
  /* One synced commit for the batch (a step was one each: on_b1 of them). */
  uint64_t used = disk_stats(x.c.d)->syncs - syncs;
  if (used > 2)
    fail_msg("%d moves begun with %llu syncs of the metadata", on_b1,
             (unsigned long long)used);
  /* And the volume was written once, not once per move: each write packs
   * the whole volume, so a repair of 734 of 1,100 PGs cost 4.6 s of the
   * coordinator's CPU, and `auralog status` went unanswered meanwhile. */
  used = disk_stats(x.c.d)->commits - commits;
  if (used > 2)
    fail_msg("%d moves begun with %llu metadata commits", on_b1, (unsigned long long)used);
  /* Each node of those PGs heard one Assign, not one per PG. */
  for (int i = 0; i < NN; i++)
    if (told[i] > 2)
      fail_msg("node %s got %d Assigns for one repair", nids[i], told[i]);
  /* And what was told is durable: what a restart finds after a crash
   * (which undoes every commit not synced). */
  struct cfix *c = &x.c;
  char why[256];
  disk_crash(c->d);
  stored_mseq = 0;
  assert_int_equal(meta_load(&c->co->meta, keep_node, keep_vol, NULL, why, sizeof why), 0);
  assert_int_equal(stored_mseq, x.c.co->vols[0]->mseq);
  mfix_teardown(&x);
}

/* ---- the finish rule (M4) -------------------------------------------------- */

static void no_finish_before_the_writer_adopted_and_the_next_caught_up(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  for (int i = 0; i < NN; i++)
    x.scl[i] = 100;
  lose_b1(&x);
  x.scl[7] = 100;                 /* B3 holds as much as anyone */
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES + 1);   /* (a): no adoption yet */
  /* A probe without the writer's signature reports nothing. */
  probe(&x, 1, 1, 50, 0);
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES + 1);
  /* The writer's report: mepoch 1 since VCL 150. B3 is at 100. */
  probe(&x, 1, 1, 150, 1);
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES + 1);   /* (b): 100 < 150 */
  last_assign(&x, 2);
  x.scl[7] = 150;
  run(&x, HEARTBEAT_MS * 2);
  const Auralog__Pg *pg = pg0(&x);
  assert_int_equal(pg->n_segments, NCOPIES);
  assert_string_equal(pg->segments[2]->node, "B3");
  assert_false(pg->segments[2]->next);
  assert_int_equal(pg->segments[2]->since, 1);
  assert_int_equal(pg->mepoch, 2);
  assert_int_equal(pg->mepoch_min, 1);     /* M5: a writer on mepoch 0 counts B1 alone */
  /* The node that left is told (its Assign omits the segment: M6). */
  const Auralog__Assign *ab = last_assign(&x, 2);
  assert_non_null(ab);
  assert_null(assigned(ab, "B1"));
  assert_int_equal(ab->n_volumes, 1);
  /* B3's Assign: current now, the new mepoch and mepoch_min. */
  const Auralog__Segment *g = assigned(last_assign(&x, 7), "B3");
  assert_non_null(g);
  assert_false(g->next);
  assert_int_equal(g->mepoch, 2);
  assert_int_equal(g->mepoch_min, 1);
  /* B1 comes back: its whole Assign holds nothing of the PG. */
  x.silent[2] = 0;
  assert_int_equal(mnode_reg(&x, 2, "B1", "B"), 0);
  mfix_teardown(&x);
}

static void a_report_of_an_older_mepoch_does_not_finish(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  lose_b1(&x);
  /* C1 is lost too: a second change grows the transition (mepoch 2). */
  x.silent[4] = 1;
  run(&x, REPAIR_AFTER_MS + 2 * MOVE_RETRY_MS);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES + 2);
  assert_int_equal(pg0(&x)->mepoch, 2);
  /* The writer reports mepoch 1 (B3 in, C3 not yet): only B3 may finish. */
  probe(&x, 2, 1, 0, 1);
  run(&x, 1000);
  const Auralog__Pg *pg = pg0(&x);
  assert_int_equal(pg->n_segments, NCOPIES + 1);
  assert_string_equal(pg->segments[2]->node, "B3");
  assert_string_equal(pg->segments[NCOPIES]->node, "C3");
  assert_int_equal(pg->mepoch, 3);
  assert_int_equal(pg->mepoch_min, 1);
  probe(&x, 3, 3, 0, 1);
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  assert_int_equal(pg0(&x)->mepoch_min, 2);
  /* Both lost nodes host nothing now: two times to repair. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = "v";
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  env.status_req = &sr;
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  const Auralog__Status *st = take(&x.c.f, x.w, STATUS)->status;
  assert_int_equal(st->n_moves, 0);
  assert_int_equal(st->n_mttr_ms, 2);
  assert_true(st->mttr_ms[0] >= REPAIR_AFTER_MS);
  mfix_teardown(&x);
}

static void a_restart_keeps_the_transition_and_waits_for_a_new_report(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  lose_b1(&x);
  probe(&x, 1, 1, 0, 1);         /* adopted: it would finish at B3's next heartbeat */
  x.silent[7] = 1;               /* ... which does not come before the crash */
  /* The coordinator crashes and starts again on its metadata. */
  char why[256];
  coord_free(x.c.co);
  struct meta keep = x.c.co->meta;
  memset(x.c.co, 0, sizeof *x.c.co);
  x.c.co->meta = keep;
  x.c.co->signer = coord_key;
  memcpy(x.c.co->op_pk, op_key.pk, AUTH_PK_BYTES);
  x.c.co->have_op_pk = 1;
  assert_int_equal(coord_init(x.c.co, &x.c.f.io, why, sizeof why), 0);
  const Auralog__Pg *pg = pg0(&x);
  assert_int_equal(pg->n_segments, NCOPIES + 1);
  assert_string_equal(pg->segments[NCOPIES]->node, "B3");
  assert_int_equal(pg->mepoch, 1);
  assert_int_equal(x.c.co->vols[0]->mseq, 1);
  for (int i = 0; i < NN; i++)
    if (i != 2)
      mnode_reg(&x, i, nids[i], nazs[i]);
  x.silent[7] = 0;
  run(&x, 2000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES + 1);   /* the old report is gone */
  probe(&x, 1, 1, 0, 1);
  run(&x, HEARTBEAT_MS * 2);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  assert_string_equal(pg0(&x)->segments[2]->node, "B3");
  mfix_teardown(&x);
}

/* ---- drains and regrowth ---------------------------------------------------- */

static const Env *node_cmd(struct mfix *x, const char *action, const char *node, const char *to,
                           int op)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__NodeCmd nc = AURALOG__NODE_CMD__INIT;
  nc.action = (char *)action;
  nc.node = (char *)node;
  nc.to = (char *)to;
  env.req = 80;
  env.body_case = AURALOG__ENVELOPE__BODY_NODE_CMD;
  env.node_cmd = &nc;
  if (op)
    role_op_seal(&env, &op_key, bind0, sigbuf);
  DELIVER(coord_on_msg, x->c.co, x->w, &env);
  return count(&x->c.f, x->w, ERROR) ? take(&x->c.f, x->w, ERROR)
                                      : take(&x->c.f, x->w, AURALOG__ENVELOPE__BODY_NODE_CMD);
}

static void the_operator_drains_an_up_node(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  /* Only the operator. */
  const Env *r = node_cmd(&x, "drain", "A1", "", 0);
  assert_int_equal(r->body_case, ERROR);
  assert_int_equal(r->error->code, ERR_AUTH);
  assert_int_equal(node_cmd(&x, "drain", "Z9", "", 1)->error->code, ERR_NOT_FOUND);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  r = node_cmd(&x, "drain", "A1", "", 1);
  assert_int_equal(r->body_case, AURALOG__ENVELOPE__BODY_NODE_CMD);
  assert_int_equal(r->node_cmd->total, 1);
  assert_int_equal(r->node_cmd->left, 1);
  assert_int_equal(r->node_cmd->moving, 1);
  assert_string_equal(r->node_cmd->state, "draining");
  const Auralog__Pg *pg = pg0(&x);
  assert_int_equal(pg->n_segments, NCOPIES + 1);
  assert_string_equal(pg->segments[0]->node, "A1");    /* no stall: A1 serves on */
  assert_string_equal(pg->segments[NCOPIES]->node, "A3");
  /* A second drain in the same AZ finds no spare: refused, nothing changed. */
  r = node_cmd(&x, "drain", "A2", "", 1);
  assert_int_equal(r->body_case, ERROR);
  assert_non_null(strstr(r->error->msg, "no spare in AZ A"));
  assert_int_equal(pg0(&x)->mepoch, 1);
  /* The writer adopts it: A3 finishes, A1 hosts nothing and retires. */
  probe(&x, 1, 1, 0, 1);
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  assert_string_equal(pg0(&x)->segments[0]->node, "A3");
  r = node_cmd(&x, "show", "A1", "", 1);
  assert_int_equal(r->node_cmd->left, 0);
  assert_int_equal(r->node_cmd->total, 1);
  assert_string_equal(r->node_cmd->state, "retired");
  assert_string_equal(coord_node_find(x.c.co, "A1")->info->state, "retired");
  mfix_teardown(&x);
}

static void a_next_node_dying_mid_hydration_is_regrown(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  mnode_reg(&x, NN, "B4", "B");
  x.c.co->repair_after_ms = 2000;
  x.silent[2] = 1;
  run(&x, 2000 + 2 * MOVE_RETRY_MS);
  assert_string_equal(pg0(&x)->segments[NCOPIES]->node, "B3");   /* fewest segments, then id */
  uint64_t m = pg0(&x)->mepoch;
  /* B3 dies before it caught up: its next segment goes to B4. */
  x.silent[7] = 1;
  run(&x, 2000 + 2 * MOVE_RETRY_MS);
  const Auralog__Pg *pg = pg0(&x);
  assert_int_equal(pg->n_segments, NCOPIES + 1);
  assert_string_equal(pg->segments[NCOPIES]->node, "B4");
  assert_int_equal(pg->segments[NCOPIES]->pos, 2);
  assert_int_equal(pg->segments[NCOPIES]->since, m + 1);
  assert_int_equal(pg->mepoch_min, 0);
  /* An adoption of the mepoch B3 came in with does not count B4. */
  probe(&x, m + 1, m, 0, 1);
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES + 1);
  probe(&x, m + 1, m + 1, 0, 1);
  run(&x, 1000);
  assert_string_equal(pg0(&x)->segments[2]->node, "B4");
  mfix_teardown(&x);
}

static void repair_off_moves_nothing(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  x.c.co->repair_off = 1;
  x.silent[2] = 1;
  run(&x, 3 * REPAIR_AFTER_MS);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  mfix_teardown(&x);
}

/* ---- the probe's answer ----------------------------------------------------- */

static void the_probe_answer_lists_what_changed_since(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup(&x);
  const Auralog__Volume *a = probe(&x, 0, 0, 0, 1);
  assert_int_equal(a->mseq, 0);
  assert_int_equal(a->n_pgs, 0);
  lose_b1(&x);
  a = probe(&x, 0, 0, 0, 1);
  assert_int_equal(a->mseq, 1);
  assert_int_equal(a->n_pgs, 1);
  assert_int_equal(a->pgs[0]->mepoch, 1);
  assert_int_equal(a->pgs[0]->n_segments, NCOPIES + 1);
  assert_true(a->pgs[0]->segments[NCOPIES]->next);
  a = probe(&x, 1, 0, 0, 1);
  assert_int_equal(a->mseq, 1);
  assert_int_equal(a->n_pgs, 0);
  mfix_teardown(&x);
}

/* ---- the binlog PG (issue 29) --------------------------------------------- */

/* Node index of id. */
static int nix(const char *id)
{
  for (int i = 0; i < NN; i++)
    if (strcmp(nids[i], id) == 0)
      return i;
  return -1;
}

/* Of pg's current segments, how many are on nodes neither silent nor in
 * AZ down_az: the positions that can still take a write. */
static int reachable(struct mfix *x, const Auralog__Pg *pg, const char *down_az)
{
  int k = 0;
  for (int j = 0; j < NCOPIES; j++) {
    int i = nix(pg->segments[j]->node);
    k += i >= 0 && !x->silent[i] && strcmp(nazs[i], down_az) != 0;
  }
  return k;
}

static void a_lost_nodes_binlog_segment_is_repaired_as_a_data_pgs(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup_bl(&x, 1);
  /* The binlog PG, placed as a data PG (least loaded first): the spares
   * A3, B3, C3 and one base node of each AZ. B1 (node 2) hosts a segment
   * of PG 0 (position 2) and one of the binlog PG (position 3). */
  const Auralog__Pg *bl = blpg(&x);
  assert_non_null(bl);
  assert_int_equal(bl->pg, BINLOG_PG);
  assert_int_equal(bl->n_segments, NCOPIES);
  assert_string_equal(bl->segments[2]->node, "B3");
  assert_string_equal(bl->segments[3]->node, "B1");
  assert_false(pg_has(bl, "B2"));
  for (int i = 0; i < NN; i++)
    x.scl[i] = x.blscl[i] = 100;
  uint64_t m0 = x.c.co->vols[0]->mseq;
  /* B1 silent past the repair bound: PG 0's segment is begun on B3, the
   * binlog PG's on B2 (the node of AZ B that hosts none of it). */
  lose_b1(&x);
  bl = blpg(&x);
  assert_int_equal(bl->n_segments, NCOPIES + 1);
  const Auralog__Segment *g = bl->segments[NCOPIES];
  assert_string_equal(g->node, "B2");
  assert_true(g->next);
  assert_int_equal(g->pos, 3);
  assert_string_equal(bl->segments[3]->node, "B1");   /* current until the finish */
  assert_true(bl->mepoch > m0);
  assert_int_equal(g->since, bl->mepoch);
  assert_string_equal(pg0(&x)->segments[NCOPIES]->node, "B3");
  /* B2 was told its next binlog segment, with the PG's mepoch. */
  const Auralog__Assign *a = last_assign(&x, 3);
  const Auralog__Segment *ab = NULL;
  for (size_t s = 0; a && s < a->n_segments; s++)
    if (a->segments[s]->pg == BINLOG_PG)
      ab = a->segments[s];
  assert_non_null(ab);
  assert_true(ab->next);
  assert_int_equal(ab->pos, 3);
  assert_int_equal(ab->mepoch, bl->mepoch);
  /* Status lists both moves, the binlog PG's by its number. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = "v";
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  env.status_req = &sr;
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  const Auralog__Status *st = take(&x.c.f, x.w, STATUS)->status;
  assert_int_equal(st->n_moves, 2);
  assert_int_equal(st->moves[1]->pg, BINLOG_PG);
  assert_string_equal(st->moves[1]->from, "B1");
  assert_string_equal(st->moves[1]->to, "B2");
  assert_string_equal(st->moves[1]->kind, "repair");
  /* The writer's probe answer: PG 0 in pgs, the binlog PG in binlog. */
  const Auralog__Volume *ans = probe_bl(&x, m0, 0, 0);
  assert_int_equal(ans->mseq, x.c.co->vols[0]->mseq);
  assert_int_equal(ans->n_pgs, 1);
  assert_int_equal(ans->pgs[0]->pg, 0);
  assert_non_null(ans->binlog);
  assert_int_equal(ans->binlog->pg, BINLOG_PG);
  assert_int_equal(ans->binlog->n_segments, NCOPIES + 1);
  assert_string_equal(ans->binlog->segments[NCOPIES]->node, "B2");
  /* M4: no finish before the writer reported a mepoch with B2 (a) and
   * B2's SCL reached what the writer counted on B1 alone (b). */
  uint64_t mb = bl->mepoch, mseq = x.c.co->vols[0]->mseq;
  x.blscl[3] = 0;
  run(&x, 1000);
  assert_int_equal(blpg(&x)->n_segments, NCOPIES + 1);
  probe_bl(&x, mseq, mb, 150);
  run(&x, 1000);
  assert_int_equal(blpg(&x)->n_segments, NCOPIES + 1);   /* (b): 0 < 150 */
  x.blscl[3] = 150;
  last_assign(&x, 2);
  run(&x, HEARTBEAT_MS * 2);
  bl = blpg(&x);
  assert_int_equal(bl->n_segments, NCOPIES);
  assert_string_equal(bl->segments[3]->node, "B2");
  assert_false(bl->segments[3]->next);
  assert_int_equal(bl->mepoch_min, mb);      /* M5: a writer below counts B1 alone */
  assert_false(pg_has(bl, "B1"));
  /* PG 0 finishes too (its report and B3's SCL): B1 then hosts nothing,
   * and its repair is done, binlog segment included. */
  probe(&x, x.c.co->vols[0]->mseq, pg0(&x)->mepoch, 0, 1);
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  assert_false(pg_has(pg0(&x), "B1"));
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  st = take(&x.c.f, x.w, STATUS)->status;
  assert_int_equal(st->n_moves, 0);
  assert_int_equal(st->n_mttr_ms, 1);
  /* A second failure, an AZ on top of the lost node (within the fault
   * model once the repair is done): the binlog PG keeps a write quorum.
   * Left on B1, it would have 3 of 6, and no commit could complete. */
  assert_true(reachable(&x, blpg(&x), "C") >= VW);
  assert_true(reachable(&x, pg0(&x), "C") >= VW);
  /* B1 comes back: its whole Assign holds nothing of the volume. */
  x.silent[2] = 0;
  assert_int_equal(mnode_reg(&x, 2, "B1", "B"), 0);
  mfix_teardown(&x);
}

static void a_drain_moves_the_binlog_segment_and_retires_after_it(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup_bl(&x, 1);
  /* A1 hosts PG 0's position 0 and the binlog PG's position 1. */
  assert_string_equal(blpg(&x)->segments[1]->node, "A1");
  const Env *r = node_cmd(&x, "drain", "A1", "", 1);
  assert_int_equal(r->body_case, AURALOG__ENVELOPE__BODY_NODE_CMD);
  assert_int_equal(r->node_cmd->total, 2);
  assert_int_equal(r->node_cmd->moving, 2);
  assert_string_equal(pg0(&x)->segments[NCOPIES]->node, "A3");
  assert_string_equal(blpg(&x)->segments[NCOPIES]->node, "A2");
  assert_int_equal(blpg(&x)->segments[NCOPIES]->pos, 1);
  /* PG 0's move finishes; A1 still hosts its binlog segment: draining. */
  probe(&x, x.c.co->vols[0]->mseq, pg0(&x)->mepoch, 0, 1);
  run(&x, 1000);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  r = node_cmd(&x, "show", "A1", "", 1);
  assert_int_equal(r->node_cmd->left, 1);
  assert_string_equal(r->node_cmd->state, "draining");
  /* The binlog PG's finishes: A1 hosts nothing and retires. */
  probe_bl(&x, x.c.co->vols[0]->mseq, blpg(&x)->mepoch, 0);
  run(&x, 1000);
  assert_int_equal(blpg(&x)->n_segments, NCOPIES);
  assert_string_equal(blpg(&x)->segments[1]->node, "A2");
  r = node_cmd(&x, "show", "A1", "", 1);
  assert_int_equal(r->node_cmd->left, 0);
  assert_string_equal(r->node_cmd->state, "retired");
  /* A second drain in AZ A (A2) finds no spare (A1 is retired, A3 hosts a
   * segment of each PG): refused, nothing changed. */
  uint64_t m = x.c.co->vols[0]->mseq;
  r = node_cmd(&x, "drain", "A2", "", 1);
  assert_int_equal(r->body_case, ERROR);
  assert_non_null(strstr(r->error->msg, "no spare in AZ A"));
  assert_int_equal(x.c.co->vols[0]->mseq, m);
  mfix_teardown(&x);
}

static void a_node_back_before_its_repair_keeps_its_binlog_segment(void **state)
{
  (void)state;
  struct mfix x;
  mfix_setup_bl(&x, 1);
  lose_b1(&x);
  assert_int_equal(blpg(&x)->n_segments, NCOPIES + 1);
  /* B1 beats again before either move finished: both are aborted. */
  x.silent[2] = 0;
  run(&x, 2 * MOVE_RETRY_MS);
  assert_int_equal(pg0(&x)->n_segments, NCOPIES);
  assert_int_equal(blpg(&x)->n_segments, NCOPIES);
  assert_string_equal(blpg(&x)->segments[3]->node, "B1");
  assert_false(pg_has(blpg(&x), "B2"));
  mfix_teardown(&x);
}

static void a_spare_is_the_least_loaded_node_of_the_az(void **state)
{
  (void)state;
  struct pnode n[] = {
    {"A1", 'A', 1, 3, 0}, {"A2", 'A', 1, 1, 0}, {"A3", 'A', 1, 1, 0}, {"A4", 'A', 0, 0, 0},
    {"A5", 'A', 1, 0, 1}, {"B1", 'B', 1, 0, 0},
  };
  const char *taken[] = {"A1", "B9"};
  assert_int_equal(place_spare(n, 6, 'A', taken, 2), 1);     /* A2: fewest, then smallest id */
  const char *taken2[] = {"A2", "A3"};
  assert_int_equal(place_spare(n, 6, 'A', taken2, 2), 0);    /* A4 is down, A5 draining */
  const char *taken3[] = {"A1", "A2", "A3"};
  assert_int_equal(place_spare(n, 6, 'A', taken3, 3), 6);    /* none */
  assert_int_equal(place_spare(n, 6, 'C', taken, 0), 6);
}

int main(void)
{
  log_quiet(1);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_lost_node_is_repaired_on_the_spare_of_its_az),
    cmocka_unit_test(a_repair_of_many_pgs_is_one_durable_batch),
    cmocka_unit_test(a_spare_whose_assign_was_lost_gets_it_again),
    cmocka_unit_test(each_mepoch_is_stored_before_an_assign_names_it),
    cmocka_unit_test(no_finish_before_the_writer_adopted_and_the_next_caught_up),
    cmocka_unit_test(a_report_of_an_older_mepoch_does_not_finish),
    cmocka_unit_test(a_restart_keeps_the_transition_and_waits_for_a_new_report),
    cmocka_unit_test(the_operator_drains_an_up_node),
    cmocka_unit_test(a_next_node_dying_mid_hydration_is_regrown),
    cmocka_unit_test(repair_off_moves_nothing),
    cmocka_unit_test(the_probe_answer_lists_what_changed_since),
    cmocka_unit_test(a_spare_is_the_least_loaded_node_of_the_az),
    cmocka_unit_test(a_lost_nodes_binlog_segment_is_repaired_as_a_data_pgs),
    cmocka_unit_test(a_drain_moves_the_binlog_segment_and_retires_after_it),
    cmocka_unit_test(a_node_back_before_its_repair_keeps_its_binlog_segment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
