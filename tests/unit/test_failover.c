/*
 * Unit: the coordinator's failover rules (coord/failover.c F1, F3, F4), on
 * the coordinator core with a fake io and a clock the test moves: the
 * detection bound to the millisecond, the replica chosen, one promotion
 * at a time, a chosen replica passed over, a fresh writer's longer bound,
 * one epoch to one of two promotions, the previous writer's lease left to
 * a promotion only, nothing promoted without --failover, and the replicas
 * a client is told serve reads (Writer.replicas).
 *
 * How each can fail: promote at >= rather than > the bound, or count a
 * fenced writer's probe as alive, and detection_is_exact fails; drop the
 * if_epoch check and one_epoch_for_two_promotions fails; choose a second
 * replica while one is promoting and one_promotion_at_a_time fails; list a
 * replica by its beats alone, or keep a promoted one's entry at its open,
 * and a_client_learns_the_replicas_serving_now fails; take a conditional
 * open for the public key it names (the chosen replica's, the writer's)
 * without its proof, or let one create a volume, and
 * only_the_chosen_replica_takes_the_epoch fails.
 */
#include "cores_fix.h"

#define BEAT AURALOG__ENVELOPE__BODY_WRITER

/* The fake has no bindings: every proof signs zeros (coord/roles.c). */
static uint8_t bind0[AUTH_BIND_BYTES];
static uint8_t sigbuf[AUTH_SIG_BYTES];

/* A replica's own key, from its address (vfs/promote.c: it beats with it,
 * and opens with it when promoted). */
static const struct auth_signer *key_of(const char *addr)
{
  static struct auth_signer k[8];
  static char who[8][32];
  for (int i = 0; i < 8; i++) {
    if (who[i][0] == 0) {
      uint8_t seed[32];
      memset(seed, 0, sizeof seed);
      snprintf((char *)seed, sizeof seed, "replica %s", addr);
      auth_signer_seed(&k[i], seed);
      snprintf(who[i], sizeof who[i], "%s", addr);
    }
    if (strcmp(who[i], addr) == 0)
      return &k[i];
  }
  return &writer_key;
}

/* The operator's signature on env (auralog failover, a writer's open). */
static void as_operator(Env *env)
{
  role_op_seal(env, &op_key, bind0, sigbuf);
}

/* The writer's lease probe (vfs/probe.c): a Volume naming its epoch. */
static void probe(struct cfix *x, struct ep *c, uint64_t epoch)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Volume v = AURALOG__VOLUME__INIT;
  v.name = "v";
  v.page_size = PSIZE;
  v.epoch = epoch;
  env.req = 70;
  env.body_case = VOLUME;
  env.volume = &v;
  /* The writer's own (R4): signed with the key its epoch's ticket names,
   * the operator's engine's or the promoted replica's. */
  const Auralog__Volume *cur = x->co->nvols ? x->co->vols[0] : NULL;
  if (cur && cur->writer_pk.len == AUTH_PK_BYTES) {
    const struct auth_signer *k = memcmp(cur->writer_pk.data, writer_key.pk, AUTH_PK_BYTES) == 0
                                  ? &writer_key : key_of(cur->writer);
    role_writer_seal(&env, k, bind0, cur->id, epoch, sigbuf);
  }
  DELIVER(coord_on_msg, x->co, c, &env);
  take(&x->f, c, VOLUME);
}

/* A replica's beat; the answer's promote (and *from: its if_epoch). */
static int beat(struct cfix *x, struct ep *c, const char *addr, uint64_t applied, uint64_t *from)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReplicaBeat b = AURALOG__REPLICA_BEAT__INIT;
  b.volume = "v";
  b.addr = (char *)addr;
  b.applied = applied;
  b.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)key_of(addr)->pk};
  env.req = 71;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_BEAT;
  env.replica_beat = &b;
  role_writer_seal(&env, key_of(addr), bind0, 0, 0, sigbuf);
  DELIVER(coord_on_msg, x->co, c, &env);
  const Auralog__Writer *w = take(&x->f, c, BEAT)->writer;
  if (from)
    *from = w->if_epoch;
  return w->promote;
}

/* A writer's open at addr (if_epoch 0: unconditional): the answer. */
static const Env *open_at(struct cfix *x, struct ep *c, const char *addr, uint64_t if_epoch,
                          int create)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "v";
  ov.create = create;
  ov.writer = 1;
  /* A promotion opens with its replica's key, proving it holds it
   * (writer_sig on this connection); any other open is the operator's
   * engine (roles.c R1). */
  const struct auth_signer *k = if_epoch ? key_of(addr) : &writer_key;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)k->pk};
  ov.page_size = PSIZE;
  ov.addr = (char *)addr;
  ov.if_epoch = if_epoch;
  env.req = 72;
  env.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  env.open_volume = &ov;
  if (!if_epoch)
    as_operator(&env);
  else
    role_writer_seal(&env, k, bind0, 0, if_epoch, sigbuf);
  DELIVER(coord_on_msg, x->co, c, &env);
  return count(&x->f, c, ERROR) ? take(&x->f, c, ERROR) : take(&x->f, c, VOLUME);
}

struct fo_fix {
  struct cfix c;
  struct ep *w, *r1, *r2;
};

/* A coordinator with --failover, volume v opened by writer w:1 (epoch 1)
 * which has probed, replicas r1:1 (applied 5) and r2:1 (applied 9). */
static void fo_setup(struct fo_fix *x, int failover)
{
  coord_setup(&x->c, 1);
  x->c.co->failover = failover;
  x->w = ep_new(&x->c.f, "w:1");
  x->r1 = ep_new(&x->c.f, "r1:1");
  x->r2 = ep_new(&x->c.f, "r2:1");
  const Env *v = open_at(&x->c, x->w, "w:1", 0, 1);
  assert_int_equal(v->body_case, VOLUME);
  assert_int_equal(v->volume->epoch, 1);
  assert_string_equal(v->volume->writer, "w:1");
  assert_int_equal(v->volume->lease_left_ms, 0);   /* unconditional: no wait */
  probe(&x->c, x->w, 1);
}

/* Move the clock to t, the replicas beat, the coordinator ticks; then
 * which replica the next beats promote (0 none, 1 r1, 2 r2). */
static int at(struct fo_fix *x, uint64_t t)
{
  uint64_t from;
  x->c.f.now = t;
  beat(&x->c, x->r1, "r1:1", 5, NULL);
  beat(&x->c, x->r2, "r2:1", 9, NULL);
  coord_tick(x->c.co);
  int p1 = beat(&x->c, x->r1, "r1:1", 5, &from), p2 = beat(&x->c, x->r2, "r2:1", 9, &from);
  assert_false(p1 && p2);
  return p1 ? 1 : p2 ? 2 : 0;
}

static void detection_is_exact(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  uint64_t t0 = x.c.f.now;
  assert_int_equal(at(&x, t0 + WRITER_LOST_MS / 2), 0);
  /* A fenced writer's probe (an older epoch) proves nothing; the writer's
   * own does. */
  x.c.f.now = t0 + WRITER_LOST_MS / 2;
  probe(&x.c, x.w, 1);
  uint64_t t1 = x.c.f.now;
  assert_int_equal(at(&x, t1 + WRITER_LOST_MS), 0);
  /* Lost one ms past the bound: the replica furthest ahead (r2). */
  assert_int_equal(at(&x, t1 + WRITER_LOST_MS + 1), 2);
  uint64_t from = 0;
  assert_true(beat(&x.c, x.r2, "r2:1", 9, &from));
  assert_int_equal(from, 1);
  coord_teardown(&x.c);
}

static void one_promotion_at_a_time(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  uint64_t t0 = x.c.f.now;
  assert_int_equal(at(&x, t0 + WRITER_LOST_MS + 1), 2);
  /* A manual failover meanwhile is refused: one is under way. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Failover f = AURALOG__FAILOVER__INIT;
  f.volume = "v";
  f.to = "r1:1";
  env.req = 73;
  env.body_case = AURALOG__ENVELOPE__BODY_FAILOVER;
  env.failover = &f;
  as_operator(&env);
  DELIVER(coord_on_msg, x.c.co, x.r1, &env);
  assert_int_equal(take(&x.c.f, x.r1, ERROR)->error->code, ERR_UNAVAILABLE);
  /* Still r2 until PROMOTE_MS; past it (r2 never opened) r1. */
  assert_int_equal(at(&x, t0 + WRITER_LOST_MS + 1 + PROMOTE_MS), 2);
  assert_int_equal(at(&x, t0 + WRITER_LOST_MS + 2 + PROMOTE_MS), 1);
  coord_teardown(&x.c);
}

static void one_epoch_for_two_promotions(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  uint64_t t0 = x.c.f.now;
  assert_int_equal(at(&x, t0 + WRITER_LOST_MS + 1), 2);
  const Env *v = open_at(&x.c, x.r2, "r2:1", 1, 0);
  assert_int_equal(v->body_case, VOLUME);
  assert_int_equal(v->volume->epoch, 2);
  assert_string_equal(v->volume->writer, "r2:1");
  /* The lost writer's lease ran out before (F3): nothing to wait. */
  assert_int_equal(v->volume->lease_left_ms, 0);
  /* Another promotion from epoch 1 is refused, nothing changed. */
  const Env *e = open_at(&x.c, x.r1, "r1:1", 1, 0);
  assert_int_equal(e->body_case, ERROR);
  assert_int_equal(e->error->code, ERR_STALE_EPOCH);
  probe(&x.c, x.r2, 2);
  uint64_t from;
  assert_false(beat(&x.c, x.r1, "r1:1", 5, &from));
  assert_int_equal(from, 0);
  coord_teardown(&x.c);
}

/* A writer that just took its epoch recovers before it probes: it has
 * WRITER_OPEN_MS; then it is lost like any (a promotion that crashed in
 * its recovery), and the next is promoted from its epoch. */
static void a_fresh_writer_has_longer(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  uint64_t t0 = x.c.f.now;
  assert_int_equal(at(&x, t0 + WRITER_LOST_MS + 1), 2);
  assert_int_equal(open_at(&x.c, x.r2, "r2:1", 1, 0)->volume->epoch, 2);
  uint64_t t1 = x.c.f.now;
  assert_int_equal(at(&x, t1 + WRITER_LOST_MS + 1), 0);
  assert_int_equal(at(&x, t1 + WRITER_OPEN_MS), 0);
  assert_int_equal(at(&x, t1 + WRITER_OPEN_MS + 1), 1);
  uint64_t from;
  assert_true(beat(&x.c, x.r1, "r1:1", 5, &from));
  assert_int_equal(from, 2);
  coord_teardown(&x.c);
}

/* F3: a manual failover, the writer alive: the promoted writer is told
 * how much of the old one's lease may be left. */
static void a_manual_failover_waits_out_the_lease(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  at(&x, x.c.f.now + 100);
  probe(&x.c, x.w, 1);
  uint64_t t1 = x.c.f.now;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Failover f = AURALOG__FAILOVER__INIT;
  f.volume = "v";
  f.to = "r1:1";
  env.req = 74;
  env.body_case = AURALOG__ENVELOPE__BODY_FAILOVER;
  env.failover = &f;
  as_operator(&env);
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  assert_string_equal(take(&x.c.f, x.w, BEAT)->writer->promoting, "r1:1");
  x.c.f.now = t1 + 300;
  const Env *v = open_at(&x.c, x.r1, "r1:1", 1, 0);
  assert_int_equal(v->volume->epoch, 2);
  assert_int_equal(v->volume->lease_left_ms, READ_LEASE_MS - 300);
  coord_teardown(&x.c);
}

/* A client's WriterReq: the answer (its replicas: those serving now). */
static const Auralog__Writer *ask(struct fo_fix *x, struct ep *c)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__WriterReq wr = AURALOG__WRITER_REQ__INIT;
  wr.volume = "v";
  env.req = 75;
  env.body_case = AURALOG__ENVELOPE__BODY_WRITER_REQ;
  env.writer_req = &wr;
  DELIVER(coord_on_msg, x->c.co, c, &env);
  return take(&x->c.f, c, BEAT)->writer;
}

/* Is addr among w's replicas? */
static int lists(const Auralog__Writer *w, const char *addr)
{
  for (size_t i = 0; i < w->n_replicas; i++)
    if (strcmp(w->replicas[i]->addr, addr) == 0)
      return 1;
  return 0;
}

/* Writer.replicas, what `auralog sql --replica` picks from: the replicas
 * that beat within REPLICA_SEEN_MS; never the one chosen for promotion,
 * never the writer, and never a writer once fenced (a promoted replica's
 * beats from before its promotion do not count). */
static void a_client_learns_the_replicas_serving_now(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  struct ep *cli = ep_new(&x.c.f, "cli:1");
  uint64_t t0 = x.c.f.now;
  beat(&x.c, x.r1, "r1:1", 5, NULL);
  beat(&x.c, x.r2, "r2:1", 9, NULL);
  const Auralog__Writer *w = ask(&x, cli);
  assert_string_equal(w->addr, "w:1");
  assert_int_equal(w->n_replicas, 2);
  assert_true(lists(w, "r1:1") && lists(w, "r2:1"));
  assert_int_equal(w->replicas[0]->applied + w->replicas[1]->applied, 14);
  /* r1 falls silent: listed until REPLICA_SEEN_MS after its beat. */
  x.c.f.now = t0 + REPLICA_SEEN_MS;
  beat(&x.c, x.r2, "r2:1", 9, NULL);
  probe(&x.c, x.w, 1);
  assert_true(lists(ask(&x, cli), "r1:1"));
  x.c.f.now = t0 + REPLICA_SEEN_MS + 1;
  w = ask(&x, cli);
  assert_false(lists(w, "r1:1"));
  assert_true(lists(w, "r2:1"));
  /* A manual failover to r2: chosen, it is no replica to ask any more. */
  beat(&x.c, x.r1, "r1:1", 5, NULL);
  beat(&x.c, x.r2, "r2:1", 9, NULL);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Failover f = AURALOG__FAILOVER__INIT;
  f.volume = "v";
  f.to = "r2:1";
  env.req = 76;
  env.body_case = AURALOG__ENVELOPE__BODY_FAILOVER;
  env.failover = &f;
  as_operator(&env);
  DELIVER(coord_on_msg, x.c.co, cli, &env);
  w = take(&x.c.f, cli, BEAT)->writer;
  assert_string_equal(w->promoting, "r2:1");
  assert_false(lists(w, "r2:1"));
  assert_true(lists(w, "r1:1"));
  /* It opens as the writer; then r1 is promoted too, fencing it: r2 is
   * still no replica (its last beat is recent, but from before). */
  assert_int_equal(open_at(&x.c, x.r2, "r2:1", 1, 0)->volume->epoch, 2);
  assert_false(lists(ask(&x, cli), "r2:1"));
  x.c.f.now += 10;
  probe(&x.c, x.r2, 2);
  beat(&x.c, x.r1, "r1:1", 5, NULL);
  f.to = "r1:1";
  env.req = 77;
  as_operator(&env);          /* a new request: a new signature */
  DELIVER(coord_on_msg, x.c.co, cli, &env);
  assert_string_equal(take(&x.c.f, cli, BEAT)->writer->promoting, "r1:1");
  assert_int_equal(open_at(&x.c, x.r1, "r1:1", 2, 0)->volume->epoch, 3);
  w = ask(&x, cli);
  assert_string_equal(w->addr, "r1:1");
  assert_int_equal(w->n_replicas, 0);
  /* r2, restarted as a replica, beats: listed again. */
  beat(&x.c, x.r2, "r2:1", 0, NULL);
  assert_true(lists(ask(&x, cli), "r2:1"));
  coord_teardown(&x.c);
}

/* The fenced engines status names (the coordinator's answer to a StatusReq). */
static int fenced_shown(struct fo_fix *x, struct ep *c, const char *addr)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = "v";
  env.req = 78;
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  env.status_req = &sr;
  DELIVER(coord_on_msg, x->c.co, c, &env);
  const Auralog__Status *st = take(&x->c.f, c, STATUS)->status;
  for (size_t i = 0; i < st->n_fenced; i++)
    if (strcmp(st->fenced[i]->addr, addr) == 0)
      return 1;
  return 0;
}

/* A writer superseded while it runs reports its old epoch: status names it
 * a fenced engine. Once a replica beats from its address (killed, and
 * restarted there as a replica, as `cluster up` does after a failover),
 * it is no fenced engine, though its last report is recent. */
static void a_replica_restarted_where_a_fenced_writer_ran(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  struct ep *w2 = ep_new(&x.c.f, "w2:1"), *cli = ep_new(&x.c.f, "cli:1");
  assert_int_equal(open_at(&x.c, w2, "w2:1", 0, 0)->volume->epoch, 2);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  es.volume = "v";
  es.addr = "w:1";
  es.epoch = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
  env.engine_stat = &es;
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  assert_true(fenced_shown(&x, cli, "w:1"));
  x.c.f.now += 500;
  struct ep *again = ep_new(&x.c.f, "w:1 again");
  beat(&x.c, again, "w:1", 4, NULL);
  assert_false(fenced_shown(&x, cli, "w:1"));
  /* Its fenced report again (it was not the replica after all): shown. */
  x.c.f.now += 10;
  DELIVER(coord_on_msg, x.c.co, x.w, &env);
  assert_true(fenced_shown(&x, cli, "w:1"));
  coord_teardown(&x.c);
}

static void nothing_without_failover(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 0);
  assert_int_equal(at(&x, x.c.f.now + 10 * WRITER_OPEN_MS), 0);
  coord_teardown(&x.c);
}

/* Roles in failover (coord/roles.c R1, R4): a member's probes naming the
 * writer's epoch do not keep it alive; a beat for a live replica's
 * address with another key does not take its place; the epoch goes only
 * to the replica chosen, with its key, or the epoch's own writer again. */
static void only_the_chosen_replica_takes_the_epoch(void **state)
{
  (void)state;
  struct fo_fix x;
  fo_setup(&x, 1);
  uint64_t t0 = x.c.f.now;
  struct ep *m = ep_new(&x.c.f, "member:1");
  assert_int_equal(at(&x, t0 + 50), 0);   /* the replicas beat with their keys */
  /* Probes without the writer's signature, all along: the writer is still
   * lost at the bound. */
  for (uint64_t t = t0 + 100; t < t0 + WRITER_LOST_MS; t += 100) {
    x.c.f.now = t;
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__Volume v = AURALOG__VOLUME__INIT;
    v.name = "v";
    v.page_size = PSIZE;
    v.epoch = 1;
    env.req = 80;
    env.body_case = VOLUME;
    env.volume = &v;
    DELIVER(coord_on_msg, x.c.co, m, &env);
    take(&x.c.f, m, VOLUME);    /* answered all the same */
  }
  /* A beat as r2 (the one furthest ahead) with the member's key. */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReplicaBeat b = AURALOG__REPLICA_BEAT__INIT;
  b.volume = "v";
  b.addr = "r2:1";
  b.applied = 1000;
  b.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)key_of("member:1")->pk};
  env.req = 81;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_BEAT;
  env.replica_beat = &b;
  role_writer_seal(&env, key_of("member:1"), bind0, 0, 0, sigbuf);
  DELIVER(coord_on_msg, x.c.co, m, &env);
  assert_int_equal(take(&x.c.f, m, ERROR)->error->code, ERR_AUTH);
  assert_int_equal(at(&x, t0 + WRITER_LOST_MS + 1), 2);
  /* The member opens in r2's name (its own key), and in its own name: both
   * refused; r2, with its key, takes epoch 2. */
  const Env *rep = open_at(&x.c, m, "member:1", 1, 0);
  assert_int_equal(rep->body_case, ERROR);
  assert_non_null(strstr(rep->error->msg, "refused"));
  Env o = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "v";
  ov.writer = 1;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)key_of("member:1")->pk};
  ov.addr = "r2:1";
  ov.if_epoch = 1;
  o.req = 82;
  o.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  o.open_volume = &ov;
  DELIVER(coord_on_msg, x.c.co, m, &o);
  assert_int_equal(take(&x.c.f, m, ERROR)->error->code, ERR_STALE_EPOCH);
  /* r2's key is public (its beats carry it): in r2's name with it, but
   * without the proof that it holds it, refused. */
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)key_of("r2:1")->pk};
  o.req = 83;
  DELIVER(coord_on_msg, x.c.co, m, &o);
  const Env *er = take(&x.c.f, m, ERROR);
  assert_int_equal(er->error->code, ERR_AUTH);
  assert_non_null(strstr(er->error->msg, "does not prove it holds"));
  assert_int_equal(open_at(&x.c, x.r2, "r2:1", 1, 0)->volume->epoch, 2);
  /* So is the writer's (Volume answers carry it): its retry, unproved,
   * would have moved the volume on and fenced the writer. */
  ov.if_epoch = 2;
  o.req = 84;
  DELIVER(coord_on_msg, x.c.co, m, &o);
  assert_int_equal(take(&x.c.f, m, ERROR)->error->code, ERR_AUTH);
  assert_int_equal(x.c.co->vols[0]->epoch, 2);
  /* A conditional open creates no volume (it would make its sender the
   * first writer without the operator). */
  ov.name = "w";
  ov.create = 1;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)key_of("member:1")->pk};
  o.req = 85;
  role_writer_seal(&o, key_of("member:1"), bind0, 0, 2, sigbuf);
  DELIVER(coord_on_msg, x.c.co, m, &o);
  assert_int_equal(take(&x.c.f, m, ERROR)->error->code, ERR_NOT_FOUND);
  assert_int_equal(x.c.co->nvols, 1);
  /* Its own retry (the same key, the epoch it took) is its own. */
  assert_int_equal(open_at(&x.c, x.r2, "r2:1", 2, 0)->volume->epoch, 3);
  coord_teardown(&x.c);
}

int main(void)
{
  log_quiet(2);
  keys();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(detection_is_exact),
    cmocka_unit_test(only_the_chosen_replica_takes_the_epoch),
    cmocka_unit_test(one_promotion_at_a_time),
    cmocka_unit_test(one_epoch_for_two_promotions),
    cmocka_unit_test(a_fresh_writer_has_longer),
    cmocka_unit_test(a_manual_failover_waits_out_the_lease),
    cmocka_unit_test(nothing_without_failover),
    cmocka_unit_test(a_client_learns_the_replicas_serving_now),
    cmocka_unit_test(a_replica_restarted_where_a_fenced_writer_ran),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
