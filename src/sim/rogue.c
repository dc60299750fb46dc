/*
 * rogue.c: the rogue member, a fault kind of the simulator (nemesis.c
 * `rogue`; invariant 9 of DESIGN.md §4: authority follows roles, not the
 * key alone; the rules are coord/roles.c's, proof.h's and node/trunc.c's).
 *
 * Every host of the simulator holds the cluster key, so any of them could
 * be a member gone bad. The rogue is such a host (x1, on no AZ) that also
 * holds no operator key. While its fault lasts it sends, every few tens of
 * ms, a well-formed request that only a role may make, each on a
 * connection of its own (kinds in world.h, RG_*):
 *   open      OpenVolume as writer with its own key, unsigned, with an
 *             operator signature made with its own key, or re-creating the
 *             volume;
 *   open-if   a conditional open (a promotion's) with if_epoch the current
 *             epoch: for a made-up or a real replica's address with its own
 *             key, with the public key of the current writer or of the
 *             replica (public: Volume answers and beats carry them), or
 *             creating a new volume;
 *   trunc-forged, trunc-old   a truncation on one node or on all six, on
 *             one of the node's paths (Truncate, an Append's trunc or
 *             before, a recovery scan's truncs, an unasked GossipPush):
 *             forged: signed with its own key under a ticket it made;
 *             old: it plays a fenced old writer gone rogue, keeping the key
 *             and ticket of every writer that stops being the writer
 *             (rogue_keep: crashed or fenced) after its recovery finished,
 *             and signs, in that old epoch, truncations from 0, from below
 *             the VDL, or longer than LAL. These pass every signature
 *             check: only the bound stops them (node/segment.c
 *             seg_trunc_ok). A new epoch is when an old key is most
 *             dangerous (the older epochs' records not yet freed by GC):
 *             rogue_epoch makes it strike then, at all six nodes;
 *   drop, fault, failover   the operator's requests, unsigned or signed
 *             with its own key (DropVolume with force);
 *   probe, report   a lease probe and an EngineStat of the current epoch
 *             without its writer's proof (or with its own key's);
 *   beat      a ReplicaBeat with the replica's address and its own key.
 * The Appends it sends carry no record and no VDL: what a member may write
 * as records is not what these rules decide (README, "Who may do what").
 *
 * rogue-unfinished (a fault kind asked for by name, not in `all`): the
 * same rogue, also holding the keys of writers that died inside their
 * recovery. Such a key can sign, at or above every VDL the segments heard,
 * a range that cuts commits its writer's predecessor acknowledged but never
 * announced: no segment has heard a VDL that covers them, and the recovery
 * that would have re-stamped them never finished. The bound cannot tell
 * that range from the one the recovery would have written; the simulator
 * finds such a loss within a few hundred seeds (`auralog sim --seeds
 * 1..400 --faults rogue-unfinished,recovery-crash,engine-crash`). Closing
 * it needs more than this bound (a commit acknowledged only once a write
 * quorum heard a VDL covering it, or an old key's authority revoked): a
 * known gap, asked for by name as stale-read's are.
 *
 * roguecheck.c checks what each request changed where it arrived (rogue.h
 * is their shared state); the shadow model checks the rest, as for every
 * fault: no acknowledged commit lost, every page read right, segments
 * converge. Each attack's outcome is counted (sim_result.rogue: refused,
 * ignored, taken where the rules allow it, lost on the way).
 */
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "net/proof.h"
#include "sim/rogue.h"

const char *const rogue_names[RG_NKINDS] = {
  "open", "open-if", "trunc-forged", "trunc-old", "drop", "fault", "failover", "probe",
  "report", "beat",
};

/* ---- what it knows: the volume now (frames are readable on the path) --------- */

struct cur {
  uint64_t vol, epoch, vdl;
  const struct simwriter *wr;   /* the writer of epoch, if its ticket is known */
  const Auralog__Volume *v;     /* the coordinator's record (NULL: down) */
};

static int current(const struct world *w, struct cur *c)
{
  memset(c, 0, sizeof *c);
  if (w->vdesc == NULL)
    return 0;                /* no volume yet */
  c->vol = w->vdesc->id;
  c->v = rogue_coord_vol(w);
  c->epoch = c->v ? c->v->epoch : w->max_issued;
  c->vdl = w->max_epoch_vdl;
  for (int i = 0; i < SIM_WRITERS; i++) {
    const struct simwriter *wr = &w->wr[i];
    if (wr->epoch == c->epoch && wr->tk_len == sizeof wr->tk_sig)
      c->wr = wr;
    if (wr->state == W_SERVING && wr->v && wr->v->q.vdl > c->vdl)
      c->vdl = wr->v->q.vdl;
  }
  return c->epoch > 0;
}

/* An old writer's key: of an epoch below the current one (fenced, then),
 * the newest most of the time. -1: none. */
static int old_key(struct rogue *rg, const struct cur *c)
{
  const struct world *w = rg->w;
  int best = -1, n = 0, pick = -1;
  for (size_t i = 0; i < w->noldkeys; i++) {
    const struct oldkey *k = &w->oldkeys[i];
    if (k->volume != c->vol || k->epoch >= c->epoch || (!k->recovered && !rg->unfinished))
      continue;
    n++;
    if (best < 0 || k->epoch > w->oldkeys[best].epoch)
      best = (int)i;
    if (rng_uniform(&rg->rng, (uint64_t)n) == 0)
      pick = (int)i;
  }
  return rng_uniform(&rg->rng, 5) ? best : pick;
}

void rogue_keep(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (!(w->o.faults & (1u << F_ROGUE | 1u << F_ROGUE_UNFINISHED)) ||
      wr->tk_len != sizeof wr->tk_sig || wr->epoch == 0 || w->vdesc == NULL)
    return;
  size_t slot = w->noldkeys;
  for (size_t i = 0; i < w->noldkeys; i++)
    if (w->oldkeys[i].epoch == wr->epoch &&
        memcmp(w->oldkeys[i].signer.pk, wr->signer.pk, AUTH_PK_BYTES) == 0)
      return;                /* kept already */
  if (slot == SIM_OLDKEYS) { /* full: the oldest goes */
    slot = 0;
    for (size_t i = 1; i < SIM_OLDKEYS; i++)
      if (w->oldkeys[i].epoch < w->oldkeys[slot].epoch)
        slot = i;
  } else {
    w->noldkeys++;
  }
  struct oldkey *k = &w->oldkeys[slot];
  k->volume = w->vdesc->id;
  k->epoch = wr->epoch;
  k->recovered = wr->v && wr->v->opened;
  k->signer = wr->signer;
  memcpy(k->tk_sig, wr->tk_sig, sizeof k->tk_sig);
}

/* ---- building the requests ------------------------------------------------------ */

/* A truncation's proof: the old writer's, or one it forged. */
static void trunc_pb(struct rogue *rg, const struct attack *a, uint64_t vol,
                     Auralog__TruncRange *t, uint8_t tk[AUTH_SIG_BYTES],
                     uint8_t sig[AUTH_SIG_BYTES])
{
  auralog__trunc_range__init(t);
  t->epoch = a->epoch;
  t->from = a->from;
  t->to = a->to;
  const struct auth_signer *s = &rg->self;
  if (a->key >= 0) {
    const struct oldkey *k = &rg->w->oldkeys[a->key];
    s = &k->signer;
    memcpy(tk, k->tk_sig, AUTH_SIG_BYTES);
  } else {
    auth_ticket_sign(&rg->fake, vol, a->epoch, rg->self.pk, tk);
  }
  auth_trunc_sign(s, vol, a->epoch, a->from, a->to, sig);
  t->writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)s->pk};
  t->ticket_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, tk};
  t->sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sig};
}

/* To a node: the truncation on its path. Requests of the current epoch
 * carry its writer's ticket (a segment behind raises its epoch only so). */
static void send_trunc(struct rogue *rg, struct attack *a, const struct io *io,
                       const struct cur *c)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__TruncRange t, *tp = &t;
  uint8_t tk[AUTH_SIG_BYTES], sig[AUTH_SIG_BYTES];
  trunc_pb(rg, a, c->vol, &t, tk, sig);
  /* The current epoch's ticket, and the one of the range's own epoch. */
  Auralog__EpochTicket ticket = AURALOG__EPOCH_TICKET__INIT, *tkp = NULL;
  Auralog__EpochTicket own = AURALOG__EPOCH_TICKET__INIT;
  own.epoch = a->epoch;
  own.writer_pk = t.writer_pk;
  own.sig = t.ticket_sig;
  if (c->wr) {
    ticket.epoch = c->epoch;
    ticket.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)c->wr->signer.pk};
    ticket.sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, (uint8_t *)c->wr->tk_sig};
    tkp = &ticket;
  }
  Auralog__Truncate tq = AURALOG__TRUNCATE__INIT;
  Auralog__Append ap = AURALOG__APPEND__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  Auralog__GossipPush gp = AURALOG__GOSSIP_PUSH__INIT;
  env.req = a->req;
  switch (a->path) {
  case P_TRUNCATE:           /* in its own epoch: fenced where the segment moved on */
    tq.volume_id = c->vol;
    tq.pg = a->pg;
    tq.epoch = a->epoch;
    tq.from = a->from;
    tq.to = a->to;
    tq.ticket = &own;
    tq.sig = t.sig;
    env.body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
    env.truncate = &tq;
    io_send(io, a->e, &env);
    return;
  case P_APPEND: case P_BEFORE:
    /* In the current epoch (no record, no VDL): the range as its trunc, or
     * as an older one its trunc rests on (before, a lenient path). */
    ap.volume_id = c->vol;
    ap.pg = a->pg;
    ap.epoch = a->epoch >= c->epoch ? a->epoch : c->epoch;
    ap.ticket = a->epoch > c->epoch ? &own : tkp;   /* a forged newer epoch: its own */
    ap.trunc = tp;
    if (a->path == P_BEFORE && a->epoch < ap.epoch) {
      ap.before = &tp;
      ap.n_before = 1;
    }
    env.body_case = AURALOG__ENVELOPE__BODY_APPEND;
    env.append = &ap;
    io_send(io, a->e, &env);
    return;
  case P_SCAN:               /* a recovery's scan, in the current epoch */
    q.volume_id = c->vol;
    q.pg = a->pg;
    q.epoch = c->epoch;
    q.ticket = tkp;
    q.scan = 1;
    q.truncs = &tp;
    q.n_truncs = 1;
    q.max = 1;
    env.body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
    env.seg_query = &q;
    io_send(io, a->e, &env);
    return;
  default:                   /* gossip no node asked for */
    gp.volume_id = c->vol;
    gp.pg = a->pg;
    gp.truncs = &tp;
    gp.n_truncs = 1;
    env.body_case = AURALOG__ENVELOPE__BODY_GOSSIP_PUSH;
    env.gossip_push = &gp;
    io_send(io, a->e, &env);
    return;
  }
}

/* To the coordinator. */
static void send_coord(struct rogue *rg, struct attack *a, const struct io *io,
                       const struct cur *c)
{
  struct world *w = rg->w;
  Env env = AURALOG__ENVELOPE__INIT;
  uint8_t bind[AUTH_BIND_BYTES], sig[AUTH_SIG_BYTES];
  io_binding(io, a->e, bind);
  env.req = a->req;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  Auralog__DropVolume d = AURALOG__DROP_VOLUME__INIT;
  Auralog__Fault f = AURALOG__FAULT__INIT;
  Auralog__Failover fo = AURALOG__FAILOVER__INIT;
  Auralog__Volume vh = AURALOG__VOLUME__INIT;
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  Auralog__ReplicaBeat b = AURALOG__REPLICA_BEAT__INIT;
  const char *rep_addr = w->rep ? w->wr[w->rep->slot].addr : "r1:1";
  struct auth_signer rep_key;
  char name[32];
  int signed_wrong = a->how % 2;   /* unsigned, or signed with its own key */
  switch (a->kind) {
  case RG_OPEN: case RG_OPEN_IF:
    ov.name = VOLUME_NAME;
    ov.create = 1;
    ov.writer = 1;
    ov.page_size = SIM_PAGE_SIZE;
    ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, rg->self.pk};
    ov.addr = ROGUE_ADDR;
    env.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
    env.open_volume = &ov;
    if (a->kind == RG_OPEN) {
      ov.recreate = a->how % 3 == 2;
      break;
    }
    signed_wrong = 0;
    ov.if_epoch = c->epoch;
    switch (a->how % 5) {
    case 0: break;                               /* its own address and key */
    case 1: ov.addr = (char *)rep_addr; break;   /* the replica's address */
    case 2:                                      /* the writer's public key */
      if (c->v && c->v->writer_pk.len == AUTH_PK_BYTES)
        ov.writer_pk = c->v->writer_pk;
      ov.addr = c->v ? c->v->writer : ov.addr;
      break;
    case 3: {                                    /* the replica's (its beats show it) */
      uint8_t seed[32];
      sfo_promote_seed(w, w->rep ? w->rep->slot : 2, seed);
      auth_signer_seed(&rep_key, seed);
      ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, rep_key.pk};
      ov.addr = (char *)rep_addr;
      break;
    }
    default:                                     /* a volume of its own */
      snprintf(name, sizeof name, "x%llu", (unsigned long long)a->req);
      ov.name = name;
      ov.if_epoch = 1;
    }
    break;
  case RG_DROP:
    d.name = VOLUME_NAME;
    d.force = 1;
    env.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
    env.drop_volume = &d;
    break;
  case RG_FAULT: {
    static const char *const act[] = {"partition", "slow", "stale", "drop", "gossip"};
    const struct simnode *sn = &w->nodes[a->how % SIM_NODES];
    int k = a->how / SIM_NODES % 5;
    f.action = (char *)act[k];
    f.node = k == 0 ? "" : (char *)sn->id;
    f.az = k == 0 ? (char *)sn->az : "";
    f.ms = k == 1 ? 100 + a->how % 500 : k == 3 ? 1 + a->how % 50 : 1;
    env.body_case = AURALOG__ENVELOPE__BODY_FAULT;
    env.fault = &f;
    break;
  }
  case RG_FAILOVER:
    fo.volume = VOLUME_NAME;
    fo.to = a->how % 3 == 0 ? (char *)rep_addr : a->how % 3 == 1 ? ROGUE_ADDR : "";
    env.body_case = AURALOG__ENVELOPE__BODY_FAILOVER;
    env.failover = &fo;
    break;
  case RG_PROBE:
    vh.name = VOLUME_NAME;
    vh.page_size = SIM_PAGE_SIZE;
    vh.epoch = c->epoch;
    env.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
    env.volume = &vh;
    if (signed_wrong)        /* "the writer", with a key no ticket names */
      role_writer_seal(&env, &rg->self, bind, c->vol, c->epoch, sig);
    signed_wrong = 0;
    break;
  case RG_REPORT:
    es.volume = VOLUME_NAME;
    es.addr = c->v ? c->v->writer : ROGUE_ADDR;
    es.epoch = c->epoch;
    es.vdl = c->vdl + 1 + a->how;
    env.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
    env.engine_stat = &es;
    if (signed_wrong)
      role_writer_seal(&env, &rg->self, bind, c->vol, c->epoch, sig);
    signed_wrong = 0;
    break;
  default:                   /* RG_BEAT: the replica's address, its own key */
    b.volume = VOLUME_NAME;
    b.addr = (char *)rep_addr;
    b.applied = c->vdl + 1000;         /* "furthest ahead": choose me */
    b.epoch = c->epoch;
    b.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, rg->self.pk};
    env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_BEAT;
    env.replica_beat = &b;
    role_writer_seal(&env, &rg->self, bind, 0, 0, sig);   /* it proves its own key */
    signed_wrong = 0;
    break;
  }
  if (signed_wrong)          /* an operator's signature, by a key not the operator's */
    role_op_seal(&env, &rg->self, bind, sig);
  io_send(io, a->e, &env);
}

/* ---- attacks in flight ------------------------------------------------------------ */

static struct attack *by_ep(struct rogue *rg, struct ep *e)
{
  for (int i = 0; i < ROGUE_INFLIGHT; i++)
    if (rg->at[i].used && rg->at[i].e == e)
      return &rg->at[i];
  return NULL;
}

/* Its connection is closed: count what became of it. */
static void done(struct rogue *rg, struct attack *a)
{
  int o = !a->arrived ? RG_LOST : a->effect ? RG_TAKEN : a->error ? RG_REFUSED : RG_IGNORED;
  rg->w->res->rogue[a->kind][o]++;
  a->used = 0;
}

static void r_up(void *arg, struct ep *e)
{
  struct rogue *rg = arg;
  struct attack *a = by_ep(rg, e);
  struct cur c;
  if (a == NULL)
    return;
  if (!current(rg->w, &c)) {
    simhost_io(rg->h)->close(simhost_io(rg->h)->ctx, e);
    return;
  }
  a->sent_at = sim_now(rg->w->clock);
  if (a->node >= 0)
    send_trunc(rg, a, simhost_io(rg->h), &c);
  else
    send_coord(rg, a, simhost_io(rg->h), &c);
}

static void r_msg(void *arg, struct ep *e, const Env *env)
{
  struct rogue *rg = arg;
  struct attack *a = by_ep(rg, e);
  if (a == NULL)
    return;
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR)
    a->error = 1;
  /* R1: no answer to a member's open carries an epoch's ticket. */
  if ((a->kind == RG_OPEN || a->kind == RG_OPEN_IF) &&
      env->body_case == AURALOG__ENVELOPE__BODY_VOLUME && env->volume->ticket)
    violation(rg->w, "the rogue member's open (%s, kind %d) was answered with epoch %llu's "
              "ticket: a member took a writer epoch (invariant 9, roles.c R1)",
              rogue_names[a->kind], a->how % 5, (unsigned long long)env->volume->epoch);
  /* R2: nor is its failover answered with a choice, its drop or fault with Ok. */
  if ((a->kind == RG_FAILOVER && env->body_case == AURALOG__ENVELOPE__BODY_WRITER) ||
      ((a->kind == RG_DROP || a->kind == RG_FAULT) &&
       env->body_case == AURALOG__ENVELOPE__BODY_OK))
    violation(rg->w, "the coordinator granted the rogue member's %s (invariant 9, roles.c "
              "R2)", rogue_names[a->kind]);
  const struct io *io = simhost_io(rg->h);
  io->close(io->ctx, e);     /* on_down counts it */
}

static void r_down(void *arg, struct ep *e)
{
  struct rogue *rg = arg;
  struct attack *a = by_ep(rg, e);
  if (a)
    done(rg, a);
}

static void launch(struct rogue *rg, const struct attack *tmpl, int node)
{
  struct world *w = rg->w;
  struct attack *a = NULL;
  for (int i = 0; i < ROGUE_INFLIGHT && a == NULL; i++)
    if (!rg->at[i].used)
      a = &rg->at[i];
  if (a == NULL)
    return;
  *a = *tmpl;
  a->used = 1;
  a->node = node;
  a->req = ++rg->next_req;
  a->sent_at = sim_now(w->clock);
  const struct io *io = simhost_io(rg->h);
  a->e = io->connect(io->ctx, node >= 0 ? w->nodes[node].addr : COORD_ADDR);
  if (a->e == NULL)
    done(rg, a);
}

/* A truncation's range: from 0, from below the VDL, or longer than LAL. */
static void range(struct rogue *rg, struct attack *a, const struct cur *c)
{
  struct rng *r = &rg->rng;
  switch (rng_uniform(r, 4)) {
  case 0: a->from = 0; a->to = 1 + rng_uniform(r, LAL); break;
  case 1: a->from = rng_uniform(r, c->vdl + 1); a->to = a->from + 1 + rng_uniform(r, LAL); break;
  case 2:
    a->from = c->vdl > 50 ? c->vdl - rng_uniform(r, 50) : c->vdl;
    a->to = a->from + LAL + 1 + rng_uniform(r, LAL);
    break;
  default: a->from = 0; a->to = 1ull << 59; break;
  }
  /* A forged range never equals one an old writer signed: a node that
   * checked that one takes its copies as authentic (trunc.c). */
  if (a->key < 0 && a->to == 1ull << 59)
    a->to--;
}

/* One truncation attack (old: the old writer's key, when it has one),
 * at one node or at all six. */
static void trunc_attack(struct rogue *rg, const struct cur *c, int old, int path, int all)
{
  struct attack t = {0};
  t.key = old ? old_key(rg, c) : -1;
  t.kind = t.key >= 0 ? RG_TRUNC_OLD : RG_TRUNC_FORGED;
  if (t.key >= 0) {
    t.epoch = rg->w->oldkeys[t.key].epoch;
  } else {
    uint64_t e = c->epoch + rng_uniform(&rg->rng, 2);      /* this epoch, or the next */
    t.epoch = e > 1 && rng_uniform(&rg->rng, 3) == 0 ? e - 1 : e;
  }
  t.path = path;
  t.pg = (uint32_t)rng_uniform(&rg->rng, SIM_PGS);
  range(rg, &t, c);
  if (all) {
    for (int i = 0; i < SIM_NODES; i++)
      launch(rg, &t, i);
  } else {
    launch(rg, &t, (int)rng_uniform(&rg->rng, SIM_NODES));
  }
}

static void attack(struct rogue *rg)
{
  struct cur c;
  if (!current(rg->w, &c))
    return;
  struct rng *r = &rg->rng;
  uint64_t pick = rng_uniform(r, 100);
  if (pick < 45) {
    trunc_attack(rg, &c, pick < 30, (int)rng_uniform(r, P_NPATHS), rng_uniform(r, 2) == 0);
    return;
  }
  struct attack a = {0};
  a.how = (int)rng_uniform(r, 1000);
  a.kind = pick < 53 ? RG_OPEN : pick < 61 ? RG_OPEN_IF : pick < 67 ? RG_DROP
         : pick < 73 ? RG_FAULT : pick < 79 ? RG_FAILOVER : pick < 87 ? RG_PROBE
         : pick < 93 ? RG_REPORT : RG_BEAT;
  launch(rg, &a, -1);
}

static void tick(void *arg)
{
  struct rogue *rg = arg;
  struct world *w = rg->w;
  uint64_t now = sim_now(w->clock);
  /* Connections nothing answers on (a report, a lost frame) end. */
  for (int i = 0; i < ROGUE_INFLIGHT; i++)
    if (rg->at[i].used && now - rg->at[i].sent_at > ROGUE_WAIT_MS) {
      const struct io *io = simhost_io(rg->h);
      io->close(io->ctx, rg->at[i].e);
    }
  if (rg->active && !w->stop && !w->healed)
    attack(rg);
  int busy = 0;
  for (int i = 0; i < ROGUE_INFLIGHT; i++)
    busy |= rg->at[i].used;
  if ((rg->active && !w->healed) || busy)
    sim_after(w->clock, 10 + rng_uniform(&rg->rng, ROGUE_EVERY_MS - 10), tick, rg);
  else
    rg->ticking = 0;
}

static void tick_soon(struct rogue *rg)
{
  if (!rg->ticking) {
    rg->ticking = 1;
    sim_after(rg->w->clock, 1 + rng_uniform(&rg->rng, ROGUE_EVERY_MS), tick, rg);
  }
}

/* ---- the fault ---------------------------------------------------------------------- */

void rogue_fault(struct world *w, int on, int unfinished)
{
  struct rogue *rg = w->rogue;
  if (rg == NULL) {
    if (!on)
      return;
    rg = w->rogue = calloc(1, sizeof *rg);
    rg->w = w;
    rng_seed(&rg->rng, w->o.seed ^ 0x726f677565ull);   /* its own stream: "rogue" */
    uint8_t seed[32];
    sim_key_seed(w, "rogue", 0, seed);
    auth_signer_seed(&rg->self, seed);
    sim_key_seed(w, "rogue", 1, seed);
    auth_signer_seed(&rg->fake, seed);
    struct simhost_cb cb = {.arg = rg, .on_msg = r_msg, .on_up = r_up, .on_down = r_down};
    rg->h = simnet_add(w->net, ROGUE_ADDR, "", &cb);
  }
  rg->active += on ? 1 : -1;
  rg->unfinished += unfinished ? (on ? 1 : -1) : 0;
  if (rg->active < 0)
    rg->active = 0;
  if (rg->unfinished < 0)
    rg->unfinished = 0;
  if (rg->active)
    tick_soon(rg);
}

void rogue_heal(struct world *w)
{
  if (w->rogue)
    w->rogue->active = w->rogue->unfinished = 0;
}

/* A new epoch: the keys of the writers before it are old now, and the
 * older epochs' records not yet freed: an old writer strikes, at all six
 * nodes (a recovery scan, most dangerous: it carries the truncations a
 * recovery learned). */
void rogue_epoch(struct world *w)
{
  struct rogue *rg = w->rogue;
  struct cur c;
  if (rg == NULL || !rg->active || w->healed || !current(w, &c))
    return;
  trunc_attack(rg, &c, 1, rng_uniform(&rg->rng, 2) ? P_SCAN
                          : (int)rng_uniform(&rg->rng, P_NPATHS), 1);
}

/* ---- teardown ------------------------------------------------------------------------ */

static int keep_arg(void *arg, void *ctx)
{
  (void)arg;
  (void)ctx;
  return 1;
}

void rogue_free(struct world *w)
{
  sim_cancel_fn(w->clock, tick, keep_arg, NULL);
  free(w->rogue);
  w->rogue = NULL;
}
