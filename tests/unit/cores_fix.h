/*
 * cores_fix.h: what the core tests share (test_cores.c, test_authority.c):
 * a storage node on the simulator's in-memory disk driven through the
 * fake struct io of fake_io.h, records to feed it, the fixed key pairs of
 * the coordinator and a writer (auth.h) with the tickets they make, and a
 * coordinator's OpenVolume and status as a client asks them.
 */
#ifndef AURALOG_TEST_CORES_FIX_H
#define AURALOG_TEST_CORES_FIX_H

#include "fake_io.h"

#include "coord/coord.h"
#include "lib/log.h"
#include "node/node.h"
#include "net/proof.h"
#include "record.h"
#include "sim/disk.h"

/* The coordinator's key pair and a writer's, fixed (auth.h). */
static struct auth_signer coord_key, writer_key, op_key;

static inline void keys(void)
{
  uint8_t seed[32];
  auth_init();
  memset(seed, 1, sizeof seed);
  auth_signer_seed(&coord_key, seed);
  memset(seed, 2, sizeof seed);
  auth_signer_seed(&writer_key, seed);
  memset(seed, 3, sizeof seed);
  auth_signer_seed(&op_key, seed);
}

/* The coordinator's ticket for epoch of VOL, for writer_key (sig: its
 * storage). */
static inline Auralog__EpochTicket *ticket(uint64_t epoch, Auralog__EpochTicket *tk, uint8_t *sig)
{
  auralog__epoch_ticket__init(tk);
  auth_ticket_sign(&coord_key, VOL, epoch, writer_key.pk, sig);
  tk->epoch = epoch;
  tk->writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  tk->sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, sig};
  return tk;
}

/* A record of one 8-byte range of fill at off of page, sealed. */
struct trec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[8];
};

static inline Rec *mkrec(struct trec *t, uint64_t lsn, uint64_t prev, uint32_t page, uint32_t off,
                  uint8_t fill, uint32_t flags, uint64_t epoch)
{
  char why[200];
  auralog__record__init(&t->r);
  auralog__range__init(&t->g);
  memset(t->data, fill, sizeof t->data);
  t->g.off = off;
  t->g.data.data = t->data;
  t->g.data.len = sizeof t->data;
  t->gp = &t->g;
  t->r.lsn = lsn;
  t->r.prev_lsn = prev;
  t->r.page_no = page;
  t->r.flags = flags;
  t->r.epoch = epoch;
  t->r.ranges = &t->gp;
  t->r.n_ranges = 1;
  rec_seal(&t->r);
  assert_int_equal(rec_check(&t->r, PSIZE, why, sizeof why), ERR_NONE);
  return &t->r;
}

/* ---- a storage node on the simulator's disk ------------------------------- */

struct nfix {
  struct fake f;
  struct disk *d;
  struct node *n;
  struct ep *coord, *w;        /* the coordinator's endpoint, a writer's */
};

/* Start node A1 on x's disk; its coordinator link comes up (it registers). */
static inline void node_boot(struct nfix *x)
{
  char why[256];
  x->n = calloc(1, sizeof *x->n);
  assert_int_equal(store_open_kv(&x->n->st, disk_kv(x->d), why, sizeof why), 0);
  assert_int_equal(node_init(x->n, &x->f.io, "A1", "A", "A1:1", "coord:1", NULL, NULL, why,
                             sizeof why), 0);
  x->coord = ep_named(&x->f, "coord:1");
  node_on_up(x->n, x->coord);
  assert_string_equal(take(&x->f, x->coord, REGISTER)->register_->id, "A1");
}

/* kill -9: the open transaction is lost, the memory too. */
static inline void node_crash(struct nfix *x)
{
  disk_crash(x->d);
  node_free(x->n);
  store_close(&x->n->st);
  free(x->n);
  x->n = NULL;
}

/* The coordinator assigns x's node its segment of PG 0, as coord.c
 * send_assign does: its own segment, and the PG's six as peers. */
static inline void node_assign_pg0(struct nfix *x, uint64_t req)
{
  Auralog__Segment seg[NCOPIES], *ptr[NCOPIES];
  pg0_segments(seg, ptr);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  as.segments = ptr;           /* ptr[0]: A1's */
  as.n_segments = 1;
  as.peers = ptr;
  as.n_peers = NCOPIES;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, coord_key.pk};
  env.req = req;
  env.body_case = ASSIGN;
  env.assign = &as;
  DELIVER(node_on_msg, x->n, x->coord, &env);
}

/* A new node, assigned its segment of PG 0 by the coordinator. */
static inline void node_setup(struct nfix *x)
{
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  x->d = disk_new();
  node_boot(x);
  node_assign_pg0(x, 1);
  node_end_turn(x->n);
  assert_non_null(node_find_seg(x->n, VOL, 0));
  x->w = ep_new(&x->f, "w1:1");
}

static inline void node_teardown(struct nfix *x)
{
  node_free(x->n);
  store_close(&x->n->st);
  free(x->n);
  disk_free(x->d);
  for (size_t i = 0; i < x->f.neps; i++)
    assert_int_equal(x->f.eps[i]->holds, 0);
  fake_free(&x->f);
}

static inline void append(struct nfix *x, uint64_t req, uint64_t epoch, Rec **recs, size_t n)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  a.volume_id = VOL;
  a.pg = 0;
  a.epoch = epoch;
  a.ticket = ticket(epoch, &tk, sig);
  a.records = recs;
  a.n_records = n;
  env.req = req;
  env.body_case = APPEND;
  env.append = &a;
  DELIVER(node_on_msg, x->n, x->w, &env);
}

/* The writer of epoch 2 appends records 1 and 2 (chained: 2 links back to
 * 1, and ends its MTR), both on page 5: bytes 100..107 become 0x11, then
 * 104..111 become 0x22. */
static inline void append_two(struct nfix *x)
{
  struct trec t1, t2;
  Rec *recs[2] = {mkrec(&t1, 1, 0, 5, 100, 0x11, 0, 2), mkrec(&t2, 2, 1, 5, 104, 0x22, REC_CPL, 2)};
  append(x, 10, 2, recs, 2);
}

/* ---- the coordinator ------------------------------------------------------ */

static inline const Env *open_volume(struct fake *f, struct coord *co, struct ep *c, uint64_t req,
                              int create, int writer)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "v";
  ov.create = create;
  ov.writer = writer;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, writer_key.pk};
  ov.page_size = PSIZE;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  env.open_volume = &ov;
  /* The operator's (coord/roles.c R1; the fake has no bindings: zeros). */
  uint8_t bind[AUTH_BIND_BYTES] = {0}, sig[AUTH_SIG_BYTES];
  role_op_seal(&env, &op_key, bind, sig);
  DELIVER(coord_on_msg, co, c, &env);
  const Env *rep = take(f, c, VOLUME);
  assert_int_equal(rep->req, req);
  return rep;
}

/* Is node id up, as a StatusReq's answer says? */
static inline int status_up(struct fake *f, struct coord *co, struct ep *c, const char *id)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = "v";
  env.req = 50;
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  env.status_req = &sr;
  DELIVER(coord_on_msg, co, c, &env);
  const Auralog__Status *st = take(f, c, STATUS)->status;
  assert_true(st->exists);
  assert_int_equal(st->n_nodes, NCOPIES);
  for (size_t i = 0; i < st->n_nodes; i++)
    if (strcmp(st->nodes[i]->id, id) == 0)
      return st->nodes[i]->up;
  fail_msg("status does not list node %s", id);
  return -1;
}


/* Node i registers at addr, signed with the key seeded idseed (node i's
 * own: 10 + i); the coordinator's answer (an Assign or an Error). */
static inline const Env *register_as(struct fake *f, struct coord *co, struct ep *c, int i,
                              const char *addr, uint8_t idseed)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  struct auth_signer id;
  uint8_t seed[32] = {idseed}, sig[AUTH_SIG_BYTES];
  auth_signer_seed(&id, seed);
  auth_id_sign(&id, ids[i], azs[i], addr, sig);
  reg.id = (char *)ids[i];
  reg.az = (char *)azs[i];
  reg.addr = (char *)addr;
  reg.id_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, id.pk};
  reg.id_sig = (ProtobufCBinaryData){sizeof sig, sig};
  env.req = 1;
  env.body_case = REGISTER;
  env.register_ = &reg;
  DELIVER(coord_on_msg, co, c, &env);
  return count(f, c, ERROR) ? take(f, c, ERROR) : take(f, c, ASSIGN);
}

/* ---- a coordinator on the simulator's disk --------------------------------- */

struct cfix {
  struct fake f;
  struct disk *d;
  struct coord *co;            /* signing with coord_key */
  struct ep *node[NCOPIES];    /* the six nodes' endpoints */
};

/* A coordinator, and (if nodes) the six nodes registered, each with its
 * own identity, each answered by an Assign of no segment (taken). */
static inline void coord_setup(struct cfix *x, int nodes)
{
  char why[256];
  memset(x, 0, sizeof *x);
  fake_init(&x->f);
  x->d = disk_new();
  x->co = calloc(1, sizeof *x->co);
  x->co->signer = coord_key;
  memcpy(x->co->op_pk, op_key.pk, AUTH_PK_BYTES);
  x->co->have_op_pk = 1;
  assert_int_equal(meta_open_kv(&x->co->meta, disk_kv(x->d), why, sizeof why), 0);
  assert_int_equal(coord_init(x->co, &x->f.io, why, sizeof why), 0);
  for (int i = 0; nodes && i < NCOPIES; i++) {
    x->node[i] = ep_new(&x->f, addrs[i]);
    const Env *as = register_as(&x->f, x->co, x->node[i], i, addrs[i], (uint8_t)(10 + i));
    assert_int_equal(as->body_case, ASSIGN);
    assert_int_equal(as->req, 1);
    assert_int_equal(as->assign->n_segments, 0);
    assert_memory_equal(as->assign->coord_pk.data, coord_key.pk, AUTH_PK_BYTES);
  }
}

static inline void coord_teardown(struct cfix *x)
{
  coord_free(x->co);
  meta_close(&x->co->meta);
  free(x->co);
  disk_free(x->d);
  fake_free(&x->f);
}

#endif
