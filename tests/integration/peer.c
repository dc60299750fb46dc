/*
 * peer.c: a hand-made writer for the integration tests (see peer.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "param.h"
#include "peer.h"

/* The peer is a writer like any (auth.h): one key pair for the test
 * process, and the tickets the coordinator gave it, by (volume, epoch).
 * A message for an epoch it holds a ticket for carries it; a truncation
 * in such an epoch is signed. Any other epoch goes bare: what a forger
 * sends. */
static struct auth_signer signer;
static int have_signer;
static struct ticket {
  uint64_t volume, epoch;
  uint8_t sig[AUTH_SIG_BYTES];
} tickets[256];
static size_t ntickets;

static const struct auth_signer *peer_signer(void)
{
  if (!have_signer) {
    auth_init();
    auth_signer_new(&signer);
    have_signer = 1;
  }
  return &signer;
}

static struct ticket *ticket_of(uint64_t volume, uint64_t epoch)
{
  for (size_t i = 0; i < ntickets; i++)
    if (tickets[i].volume == volume && tickets[i].epoch == epoch)
      return &tickets[i];
  return NULL;
}

/* tk (storage in *pb) for (volume, epoch), or NULL without a ticket. */
Auralog__EpochTicket *peer_ticket(uint64_t volume, uint64_t epoch, Auralog__EpochTicket *pb);
#define ticket_pb peer_ticket
Auralog__EpochTicket *peer_ticket(uint64_t volume, uint64_t epoch,
                                       Auralog__EpochTicket *pb)
{
  struct ticket *t = ticket_of(volume, epoch);
  if (t == NULL)
    return NULL;
  auralog__epoch_ticket__init(pb);
  pb->epoch = epoch;
  pb->writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)peer_signer()->pk};
  pb->sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, t->sig};
  return pb;
}

Auralog__Volume *peer_open_volume(const char *coord, const char *name, int create,
                                  uint32_t page_size, int writer)
{
  char why[256];
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = (char *)name;
  ov.create = create;
  ov.page_size = page_size;
  ov.writer = writer;
  if (writer)
    ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, (uint8_t *)peer_signer()->pk};
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  Env *rep = rpc_once(coord, &req, 5000, why, sizeof why);
  if (rep == NULL)
    fail_msg("coordinator %s: %s", coord, why);
  if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why) != 0)
    fail_msg("coordinator answered OpenVolume %s: %s", name, why);
  Auralog__Volume *v = rep->volume;
  if (v->ticket && v->ticket->sig.len == AUTH_SIG_BYTES) {
    /* The newest for (volume, epoch): a test that starts a fresh cluster
     * meets the same ids again, under a new coordinator key. */
    struct ticket *t = ticket_of(v->id, v->ticket->epoch);
    if (t == NULL && ntickets < sizeof tickets / sizeof tickets[0])
      t = &tickets[ntickets++];
    if (t) {
      *t = (struct ticket){v->id, v->ticket->epoch, {0}};
      memcpy(t->sig, v->ticket->sig.data, AUTH_SIG_BYTES);
    }
  }
  rep->volume = NULL;
  rep->body_case = AURALOG__ENVELOPE__BODY__NOT_SET;
  wire_free(rep);
  return v;
}

const char *peer_seg_addr(const Auralog__Volume *v, uint32_t pg, const char *node)
{
  for (size_t p = 0; p < v->n_pgs; p++)
    if (v->pgs[p]->pg == pg)
      for (size_t s = 0; s < v->pgs[p]->n_segments; s++)
        if (strcmp(v->pgs[p]->segments[s]->node, node) == 0)
          return v->pgs[p]->segments[s]->addr;
  return NULL;
}

Env *peer_call(const char *addr, Env *req, int timeout_ms, char *why, size_t whylen)
{
  return rpc_once(addr, req, timeout_ms, why, whylen);
}

Env *peer_call_seg(const char *addr, Env *req, int timeout_ms, char *why, size_t whylen)
{
  for (int tries = 0;; tries++) {
    Env *rep = rpc_once(addr, req, timeout_ms, why, whylen);
    if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_ERROR &&
        rep->error->code == ERR_UNKNOWN_SEGMENT && tries < 60) {
      wire_free(rep);
      usleep(50000);
      continue;
    }
    return rep;
  }
}

static void rec_base(struct peer_rec *x, uint64_t lsn, uint64_t prev, uint32_t page,
                     uint32_t flags, uint64_t epoch)
{
  auralog__record__init(&x->r);
  auralog__range__init(&x->g);
  x->gp = &x->g;
  x->r.lsn = lsn;
  x->r.prev_lsn = prev;
  x->r.page_no = page;
  x->r.flags = flags;
  x->r.epoch = epoch;
  x->r.ranges = &x->gp;
  x->r.n_ranges = 1;
}

void peer_rec_literal(struct peer_rec *x, uint64_t lsn, uint64_t prev, uint32_t page,
                      uint32_t off, uint8_t fill, uint32_t n, uint32_t flags,
                      uint64_t epoch)
{
  rec_base(x, lsn, prev, page, flags, epoch);
  if (n > sizeof x->data)
    n = sizeof x->data;
  memset(x->data, fill, n);
  x->g.off = off;
  x->g.data.data = x->data;
  x->g.data.len = n;
  rec_seal(&x->r);
}

void peer_rec_copy(struct peer_rec *x, uint64_t lsn, uint64_t prev, uint32_t page,
                   uint32_t off, uint32_t from, uint32_t len, uint32_t flags,
                   uint64_t epoch)
{
  rec_base(x, lsn, prev, page, flags, epoch);
  x->g.off = off;
  x->g.from = from;
  x->g.len = len;
  rec_seal(&x->r);
}

static uint8_t *frame_of(Env *env, size_t *len)
{
  uint8_t *f = wire_frame(env, len);
  if (f == NULL)
    fail_msg("peer: a request does not fit in a frame");
  return f;
}

static void init_append(Env *env, Auralog__Append *a, Rec **ptrs, uint64_t req,
                        uint64_t volume_id, uint32_t pg, uint64_t epoch,
                        struct peer_rec *recs, size_t n, uint64_t vdl)
{
  auralog__envelope__init(env);
  auralog__append__init(a);
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &recs[i].r;
  a->volume_id = volume_id;
  a->pg = pg;
  a->epoch = epoch;
  a->records = n ? ptrs : NULL;
  a->n_records = n;
  a->vdl = vdl;
  env->req = req;
  env->body_case = AURALOG__ENVELOPE__BODY_APPEND;
  env->append = a;
}

uint8_t *peer_frame_append(uint64_t req, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                           struct peer_rec *recs, size_t n, uint64_t vdl, size_t *len)
{
  Env env;
  Auralog__Append a;
  Auralog__EpochTicket tk;
  Rec **ptrs = calloc(n + 1, sizeof *ptrs);
  init_append(&env, &a, ptrs, req, volume_id, pg, epoch, recs, n, vdl);
  a.ticket = ticket_pb(volume_id, epoch, &tk);
  uint8_t *f = frame_of(&env, len);
  free(ptrs);
  return f;
}

uint8_t *peer_frame_truncate(uint64_t req, uint64_t volume_id, uint32_t pg,
                             uint64_t epoch, uint64_t from, uint64_t to, size_t *len)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Truncate t = AURALOG__TRUNCATE__INIT;
  t.volume_id = volume_id;
  t.pg = pg;
  t.epoch = epoch;
  t.from = from;
  t.to = to;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  if ((t.ticket = ticket_pb(volume_id, epoch, &tk)) != NULL) {
    auth_trunc_sign(peer_signer(), volume_id, epoch, from, to, sig);
    t.sig = (ProtobufCBinaryData){sizeof sig, sig};
  }
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
  env.truncate = &t;
  return frame_of(&env, len);
}

void peer_trunc_range(Auralog__TruncRange *tr, struct peer_trunc *st, uint64_t volume,
                      uint64_t epoch, uint64_t from, uint64_t to)
{
  auralog__trunc_range__init(tr);
  tr->epoch = epoch;
  tr->from = from;
  tr->to = to;
  memcpy(st->pk, peer_signer()->pk, AUTH_PK_BYTES);
  struct ticket *t = ticket_of(volume, epoch);
  if (t)
    memcpy(st->ticket_sig, t->sig, AUTH_SIG_BYTES);
  else                         /* a ticket of its own making */
    auth_ticket_sign(peer_signer(), volume, epoch, st->pk, st->ticket_sig);
  auth_trunc_sign(peer_signer(), volume, epoch, from, to, st->sig);
  tr->writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, st->pk};
  tr->ticket_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, st->ticket_sig};
  tr->sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, st->sig};
}

uint8_t *peer_frame_seg_query(uint64_t req, uint64_t volume_id, uint32_t pg,
                              uint64_t epoch, size_t *len)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  q.volume_id = volume_id;
  q.pg = pg;
  q.epoch = epoch;
  Auralog__EpochTicket tk;
  q.ticket = ticket_pb(volume_id, epoch, &tk);
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
  env.seg_query = &q;
  return frame_of(&env, len);
}

/* Protobuf's base-128 varint. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
  size_t n = 0;
  do {
    p[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v)
      p[n] |= 0x80;
    n++;
  } while (v);
  return n;
}

uint8_t *peer_frame_append_extra(uint64_t req, uint64_t volume_id, uint32_t pg,
                                 uint64_t epoch, struct peer_rec *rec,
                                 const uint8_t *extra, size_t nextra, size_t *len)
{
  /* The record: its packed known fields, then the extra bytes. */
  size_t nrec = auralog__record__get_packed_size(&rec->r);
  uint8_t *r = malloc(nrec + nextra);
  auralog__record__pack(&rec->r, r);
  memcpy(r + nrec, extra, nextra);
  nrec += nextra;
  /* The Append: its other fields, then field 4 (records, length-delimited). */
  Auralog__Append a = AURALOG__APPEND__INIT;
  Auralog__EpochTicket tk;
  a.volume_id = volume_id;
  a.pg = pg;
  a.epoch = epoch;
  a.ticket = ticket_pb(volume_id, epoch, &tk);
  size_t nhead = auralog__append__get_packed_size(&a);
  uint8_t *ap = malloc(nhead + 11 + nrec);
  auralog__append__pack(&a, ap);
  size_t nap = nhead;
  ap[nap++] = (4 << 3) | 2;
  nap += put_varint(ap + nap, nrec);
  memcpy(ap + nap, r, nrec);
  nap += nrec;
  /* The Envelope: req (field 1, varint), append (field 3, length-delimited). */
  uint8_t *f = malloc(4 + 11 + 11 + nap + 11);
  size_t n = 4;
  f[n++] = (1 << 3) | 0;
  n += put_varint(f + n, req);
  f[n++] = (3 << 3) | 2;
  n += put_varint(f + n, nap);
  memcpy(f + n, ap, nap);
  n += nap;
  put_be32(f, (uint32_t)(n - 4));
  free(r);
  free(ap);
  *len = n;
  return f;
}

int peer_send_frames(const char *addr, const uint8_t *buf, size_t len, Env **rep,
                     int n, int timeout_ms, char *why, size_t whylen)
{
  struct rpc r;
  for (int i = 0; i < n; i++)
    rep[i] = NULL;
  if (rpc_open(&r, addr, 2000, why, whylen) != 0)
    return 0;
  if (rpc_send_raw(&r, buf, len) != 0) {
    snprintf(why, whylen, "cannot send to %s", addr);
    rpc_close(&r);
    return 0;
  }
  int got = 0;
  unsigned long long end = now_ms() + (unsigned)timeout_ms;
  while (got < n) {
    unsigned long long now = now_ms();
    if (now >= end) {
      snprintf(why, whylen, "%s: %d of %d answers within %d ms", addr, got, n, timeout_ms);
      break;
    }
    Env *e = rpc_recv(&r, (int)(end - now), why, whylen);
    if (e == NULL)
      break;
    rep[got++] = e;
  }
  rpc_close(&r);
  return got;
}

Env *peer_seg_query(const char *addr, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                    char *why, size_t whylen)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegQuery q = AURALOG__SEG_QUERY__INIT;
  q.volume_id = volume_id;
  q.pg = pg;
  q.epoch = epoch;
  Auralog__EpochTicket tk;
  q.ticket = ticket_pb(volume_id, epoch, &tk);
  env.body_case = AURALOG__ENVELOPE__BODY_SEG_QUERY;
  env.seg_query = &q;
  return peer_call_seg(addr, &env, 3000, why, whylen);
}

Env *peer_truncate(const char *addr, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                   uint64_t from, uint64_t to, char *why, size_t whylen)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Truncate t = AURALOG__TRUNCATE__INIT;
  t.volume_id = volume_id;
  t.pg = pg;
  t.epoch = epoch;
  t.from = from;
  t.to = to;
  Auralog__EpochTicket tk;
  uint8_t sig[AUTH_SIG_BYTES];
  if ((t.ticket = ticket_pb(volume_id, epoch, &tk)) != NULL) {
    auth_trunc_sign(peer_signer(), volume_id, epoch, from, to, sig);
    t.sig = (ProtobufCBinaryData){sizeof sig, sig};
  }
  env.body_case = AURALOG__ENVELOPE__BODY_TRUNCATE;
  env.truncate = &t;
  return peer_call_seg(addr, &env, 3000, why, whylen);
}

Env *peer_append(const char *addr, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                 struct peer_rec *recs, size_t n, uint64_t vdl, char *why, size_t whylen)
{
  Env env;
  Auralog__Append a;
  Rec **ptrs = calloc(n + 1, sizeof *ptrs);
  Auralog__EpochTicket tk;
  init_append(&env, &a, ptrs, 0, volume_id, pg, epoch, recs, n, vdl);
  a.ticket = ticket_pb(volume_id, epoch, &tk);
  /* 3 s, and more for a large batch: under ASan (make test SAN=1) one of
   * it_badinput's 20,000-record Appends, after 100,000 records into the
   * same node, went unanswered for 3 s. */
  Env *rep = peer_call_seg(addr, &env, 3000 + (int)(n / 4), why, whylen);
  free(ptrs);
  return rep;
}

int peer_append_send(struct rpc *r, uint64_t req, uint64_t volume_id, uint32_t pg,
                     uint64_t epoch, struct peer_rec *recs, size_t n, uint64_t vdl,
                     uint64_t pgmrpl)
{
  Env env;
  Auralog__Append a;
  Rec **ptrs = calloc(n + 1, sizeof *ptrs);
  Auralog__EpochTicket tk;
  init_append(&env, &a, ptrs, req, volume_id, pg, epoch, recs, n, vdl);
  a.ticket = ticket_pb(volume_id, epoch, &tk);
  a.pgmrpl = pgmrpl;
  a.pgmrpl_tail = pgmrpl;   /* the tests write one PG with consecutive LSNs: its record */
  a.vdl_tail = vdl;         /* ... and so the PG's last record at or below the VDL, which a
                               node backing up stages to (node/nbackup.c) */
  a.vdl_known = vdl > 0;
  size_t len;
  uint8_t *f = frame_of(&env, &len);
  free(ptrs);
  int rc = rpc_send_raw(r, f, len);
  free(f);
  return rc == 0 ? 0 : -1;
}

Auralog__Volume *peer_grow_volume(const char *coord, const char *name, uint32_t npgs,
                                  char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
  g.name = (char *)name;
  g.npgs = npgs;
  req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
  req.grow_volume = &g;
  Env *rep = rpc_once(coord, &req, 30000, why, whylen);
  if (rep == NULL)
    return NULL;
  if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, whylen) != 0) {
    wire_free(rep);
    return NULL;
  }
  Auralog__Volume *v = rep->volume;
  rep->volume = NULL;
  rep->body_case = AURALOG__ENVELOPE__BODY__NOT_SET;
  wire_free(rep);
  return v;
}

Env *peer_read_page(const char *addr, uint64_t volume_id, uint32_t pg, uint32_t page,
                    uint64_t read_point, uint64_t epoch, char *why, size_t whylen)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
  rp.volume_id = volume_id;
  rp.pg = pg;
  rp.page_no = page;
  rp.read_point = read_point;
  rp.need = read_point;       /* the tests read at the PG's last record */
  rp.epoch = epoch;
  env.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
  env.read_page = &rp;
  return peer_call_seg(addr, &env, 3000, why, whylen);
}

const char *peer_describe(const Env *rep, const char *why)
{
  static char s[600];
  if (rep == NULL) {
    snprintf(s, sizeof s, "no answer: %s", why ? why : "");
    return s;
  }
  switch (rep->body_case) {
  case AURALOG__ENVELOPE__BODY_ERROR:
    snprintf(s, sizeof s, "Error %u (%s): %s", rep->error->code,
             wire_errname(rep->error->code), rep->error->msg);
    break;
  case AURALOG__ENVELOPE__BODY_APPEND_ACK:
    snprintf(s, sizeof s, "AppendAck scl %llu added %u duplicates %u",
             (unsigned long long)rep->append_ack->scl, rep->append_ack->added,
             rep->append_ack->duplicates);
    break;
  case AURALOG__ENVELOPE__BODY_SEG_INFO:
    snprintf(s, sizeof s, "SegInfo scl %llu max_lsn %llu vdl %llu tail %llu epoch %llu",
             (unsigned long long)rep->seg_info->scl,
             (unsigned long long)rep->seg_info->max_lsn,
             (unsigned long long)rep->seg_info->vdl,
             (unsigned long long)rep->seg_info->tail,
             (unsigned long long)rep->seg_info->epoch);
    break;
  case AURALOG__ENVELOPE__BODY_PAGE:
    snprintf(s, sizeof s, "Page %u lsn %llu (%zu bytes)", rep->page->page_no,
             (unsigned long long)rep->page->page_lsn, rep->page->data.len);
    break;
  default:
    snprintf(s, sizeof s, "a reply of body %d", (int)rep->body_case);
  }
  return s;
}
