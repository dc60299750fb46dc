/*
 * vcore.c: the writer's volume core (paper §4.1-4.2): sending redo to the
 * segments, their acknowledgements, VCL and VDL, resends, connections.
 * LSN allocation is ship.c's, page reads read.c's; the struct is in
 * volume_int.h; the events are listed there.
 *
 * No I/O of its own: it sends, connects and reads the clock through v->io
 * (io.h). The real driver (volume.c) calls these with v->mu held, on the
 * volume's I/O thread; the simulator calls them on its only thread.
 *
 * Invariant: every record handed an LSN stays in its PG's list (pgout)
 * until the VDL passes it, so a segment that reconnects can be sent every
 * record that is not yet durable. Records below the VCL are at write
 * quorum; a segment that missed them catches up from its peers (gossip).
 *
 * Segments by slot (member.h): a PG's current segments and, while a
 * membership change moves a position, its next one (vmember.c applies the
 * changes). Records go to every present slot; the quorum counts positions
 * (M1, vfs/quorum.c) and a next segment only by its SCL (M2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "lib/log.h"
#include "param.h"
#include "record.h"
#include "vfs/quorum.h"
#include "vfs/volume_int.h"

void vcore_notify(struct volume *v)
{
  if (v->notify)
    v->notify(v->notify_arg);
}

void orec_free(struct orec *o)
{
  free(o->g);
  free(o->gp);
  free(o->data);
  free(o->ml);
  free(o->mlp);
  free(o->wire);
  free(o);
}

/* Field 4 of an Append (repeated Record) on the wire is, per record, its
 * tag, its length as a varint and the packed record. protobuf-c packs
 * the unknown fields of a message as they are (the tag, then the bytes,
 * which for a length-delimited field begin with the length), so a record
 * packed here once and handed over as an unknown field 4 comes out byte
 * for byte as if it had been in a->records: the receiver unpacks it as a
 * Record. Packing every record for each of the PG's six segments was
 * about a twelfth of a busy engine's CPU (`auralog bench --profile`). */
int orec_pack(struct orec *o)
{
  size_t n = auralog__record__get_packed_size(&o->r);
  uint8_t *w = malloc(n + 10);
  if (w == NULL)
    return -1;
  size_t k = 0;
  for (size_t x = n; ; x >>= 7) {         /* the length, as a varint */
    w[k++] = (uint8_t)(x & 0x7f) | (x >= 0x80 ? 0x80 : 0);
    if (x < 0x80)
      break;
  }
  auralog__record__pack(&o->r, w + k);
  free(o->wire);
  o->wire = w;
  o->wlen = k + n;
  return 0;
}

void vol_set_ticket(struct volume *v, const uint8_t *sig, size_t len)
{
  if (sig == NULL || len != AUTH_SIG_BYTES)
    return;
  memcpy(v->ticket_sig, sig, AUTH_SIG_BYTES);
  auralog__epoch_ticket__init(&v->ticket);
  v->ticket.epoch = v->epoch;
  v->ticket.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, v->signer.pk};
  v->ticket.sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, v->ticket_sig};
  v->have_ticket = 1;
}

Auralog__EpochTicket *vol_ticket(struct volume *v)
{
  return v->have_ticket ? &v->ticket : NULL;
}

void vol_trunc_proof(struct volume *v, Auralog__TruncRange *tr, const uint8_t *sig)
{
  if (!v->have_ticket)
    return;
  tr->writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, v->signer.pk};
  tr->ticket_sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, v->ticket_sig};
  tr->sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, (uint8_t *)sig};
}

void vcore_busy(struct volume *v, uint32_t pg)
{
  if (v->pgs[pg].busy)
    return;
  if (v->nbusy == v->capbusy) {
    v->capbusy = v->capbusy ? 2 * v->capbusy : 64;
    v->busy = realloc(v->busy, v->capbusy * sizeof *v->busy);
  }
  v->busy[v->nbusy++] = pg;
  v->pgs[pg].busy = 1;
}

/* A new Append in flight (request req); fill it in. */
static struct inflight *fl_add(struct volume *v, uint64_t req)
{
  if (v->nfl == v->capfl) {
    v->capfl = v->capfl ? 2 * v->capfl : 64;
    v->fl = realloc(v->fl, v->capfl * sizeof *v->fl);
  }
  kmap_put(&v->flidx, req, 0, (uint32_t)v->nfl);
  return &v->fl[v->nfl++];
}

/* Forget in-flight Append i: answered, timed out, or its conn is gone.
 * The last one takes its place (and its index in flidx). */
void vcore_fl_drop(struct volume *v, size_t i)
{
  struct vnode *n = &v->nodes[v->fl[i].node];
  if (n->nfl > 0)
    n->nfl--;
  free(v->fl[i].lsns);
  kmap_del(&v->flidx, v->fl[i].req, 0);
  v->fl[i] = v->fl[--v->nfl];
  if (i < v->nfl)
    kmap_put(&v->flidx, v->fl[i].req, 0, (uint32_t)i);
}

/* ---- sending ---------------------------------------------------------------- */

/* The truncation this writer's recovery wrote, in *tr, or NULL if none. */
Auralog__TruncRange *vol_own_trunc(const struct volume *v, Auralog__TruncRange *tr)
{
  if (v->st.trunc_to <= v->st.trunc_from)
    return NULL;
  auralog__trunc_range__init(tr);
  tr->epoch = v->epoch;
  tr->from = v->st.trunc_from;
  tr->to = v->st.trunc_to;
  vol_trunc_proof((struct volume *)v, tr, v->trunc_sig);
  return tr;
}

/* The writer's minimum read point (paper §4.2.3, PGMRPL): the oldest
 * read point of a page read still in flight, else the VDL, which every
 * read begun later starts from. A segment may free versions below it
 * (node/bg.c): each read asks for `need`, the PG's last record at or
 * below its read point, and the segment's GC point is the PG's last
 * record at or below a PGMRPL it heard, so never above any read's need.
 * Read replicas (§4.2.4) read at their own points: the oldest they
 * reported (replica_floor, vfs/feed.c) bounds it too, so the volume's
 * PGMRPL is the minimum over the writer and every replica. */
uint64_t vol_pgmrpl(const struct volume *v)
{
  uint64_t p = v->q.vdl;
  if (v->replica_floor && v->replica_floor < p && !PLANTED(BUG_NO_REPLICA_FLOOR))
    p = v->replica_floor;
  for (const struct readreq *r = v->reads; r; r = r->next)
    if (r->rp < p)
      p = r->rp;
  return p;
}

/* Commit stage timings (volume_int.h): the CPL records among recs[from..
 * to) of pg went to segment slot; the VW-th segment a commit's CPL reaches
 * is when its quorum can start. Costs a clock read per Append that
 * carries a CPL, and only where the driver has a us clock. */
static void stamp_sent(struct volume *v, struct pgout *g, int slot, size_t from, size_t to)
{
  uint64_t now = 0;
  for (size_t i = from; i < to; i++) {
    if (!(g->recs[i]->r.flags & REC_CPL))
      continue;
    uint64_t lsn = g->recs[i]->r.lsn;
    size_t lo = 0, hi = v->ncpls;            /* cpls is in LSN order */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (v->cpls[mid] < lsn)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == v->ncpls || v->cpls[lo] != lsn)
      continue;                              /* durable already (a resend) */
    struct cpl_time *t = &v->cpl_t[lo];
    if (slot >= NCOPIES)
      continue;                              /* a next segment's: it counts by SCL */
    t->slots |= (uint8_t)(1u << slot);
    if (t->sent_us == 0 && __builtin_popcount(t->slots) >= VW) {
      if (now == 0)
        now = io_now_us(v->io);
      t->sent_us = now;
    }
  }
}

/* Send recs[from..to) of pg to segment slot (to == from: a VDL beacon). */
void vcore_send_append(struct volume *v, uint32_t pg, int slot, size_t from, size_t to)
{
  struct pgout *g = &v->pgs[pg];
  if (g->node[slot] < 0)
    return;                     /* no segment there (member.h) */
  struct vnode *n = &v->nodes[g->node[slot]];
  if (!n->up || n->c == NULL)
    return;
  size_t cnt = to - from;
  Rec **ptrs = malloc((cnt + 1) * sizeof *ptrs);
  uint64_t *lsns = malloc((cnt + 1) * sizeof *lsns);
  ProtobufCMessageUnknownField *wire = malloc((cnt + 1) * sizeof *wire);
  for (size_t i = 0; i < cnt; i++) {
    struct orec *o = g->recs[from + i];
    ptrs[i] = &o->r;
    lsns[i] = o->r.lsn;
    if (wire && (o->wire || orec_pack(o) == 0))
      wire[i] = (ProtobufCMessageUnknownField){4, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
                                               o->wlen, o->wire};
    else {
      free(wire);              /* out of memory: protobuf-c packs them */
      wire = NULL;
    }
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  a.volume_id = v->id;
  a.pg = pg;
  a.epoch = v->epoch;
  a.mepoch = g->mepoch;         /* M5: a node refuses it below the PG's mepoch_min */
  a.vdl = v->q.vdl;
  a.pgmrpl = vol_pgmrpl(v);
  /* The PG's last record at or below it, on this writer's chain (read.c
   * pg_need). When the records kept are all above the PGMRPL, pg_need
   * answers the last one freed, which may lie above it (a read in flight
   * from before): then it is not known here, and 0 says so (the segment
   * frees nothing on this Append; simulator, seed 23191). */
  uint64_t tail = pg_need(g, a.pgmrpl);
  if (tail > a.pgmrpl)
    tail = pg_freed_at(g, a.pgmrpl);   /* a replica's read point, below what is kept */
  a.pgmrpl_tail = tail <= a.pgmrpl ? tail : 0;
  if (a.pgmrpl_tail > g->told_tail)
    g->told_tail = a.pgmrpl_tail;
  g->told_at = io_now(v->io);
  g->told = 1;
  /* The PG's last record at or below the VDL (exact: pg_need), which lets
   * a segment stage the PG's log up to the VDL to the backup. */
  uint64_t vt = pg_need(g, a.vdl);
  if (vt <= a.vdl) {
    a.vdl_tail = vt;
    a.vdl_known = 1;
  }
  /* The truncation this writer's recovery wrote: a segment installs it
   * before taking the records (node.c on_append). */
  Auralog__TruncRange tr, *btv = NULL, **btp = NULL;
  if (!(g->has_epoch & (1u << slot))) {
    a.trunc = vol_own_trunc(v, &tr);
    a.ticket = vol_ticket(v);
    /* ... with the older ones it may rest on (volume_int.h, before). */
    if (a.trunc && v->nbefore) {
      btv = calloc(v->nbefore, sizeof *btv);
      btp = calloc(v->nbefore, sizeof *btp);
      for (size_t i = 0; i < v->nbefore; i++) {
        auralog__trunc_range__init(&btv[i]);
        btv[i].epoch = v->before[i].epoch;
        btv[i].from = v->before[i].from;
        btv[i].to = v->before[i].to;
        trunc_proof_to_pb(&v->before[i].proof, &btv[i]);
        btp[i] = &btv[i];
      }
      a.before = btp;
      a.n_before = v->nbefore;
    }
  }
  if (wire && cnt) {            /* the records, packed once (orec_pack) */
    a.base.unknown_fields = wire;
    a.base.n_unknown_fields = cnt;
  } else {
    a.records = ptrs;
    a.n_records = cnt;
  }
  env.req = ++v->next_req;
  env.body_case = AURALOG__ENVELOPE__BODY_APPEND;
  env.append = &a;
  uint64_t sent = v->io->sent_bytes;
  if (io_send(v->io, n->c, &env) == 0) {
    struct inflight *f = fl_add(v, env.req);
    *f = (struct inflight){env.req, io_now(v->io), g->node[slot], pg, slot, lsns, cnt,
                           a.vdl_known ? a.vdl : 0};
    n->nfl++;
    v->st.redo_msgs++;
    /* The frame's size as the driver packed it: sizing the Append again
     * walked every record a second time (a twentieth of the engine). */
    v->st.redo_bytes += v->io->sent_bytes > sent ? v->io->sent_bytes - sent
                                                 : 4 + auralog__envelope__get_packed_size(&env);
    if (v->io->now_us)
      stamp_sent(v, g, slot, from, to);
  } else {
    free(lsns);
  }
  free(ptrs);
  free(wire);
  free(btv);
  free(btp);
}

/* Send what is pending. Self-clocking batching (Nagle for commits): a node
 * with no Append in flight gets the new records of each of its segments at
 * once; a node with Appends in flight gets nothing until they are answered,
 * and the records of the commits made meanwhile then travel together, one
 * Append per segment, all of a node's Appends in one write. So the batch
 * grows with the load and each node commits (one lmdb transaction, its
 * fsyncs) about once per round trip, whatever the commit rate; an idle
 * writer's commit goes out at once. A slow node only gets bigger batches:
 * the 4/6 quorum does not wait for it.
 *
 * Cost: O(nodes + PGs with records not yet freed (v->busy) + reads in
 * flight); an idle PG is never looked at. */
void vcore_flush(struct volume *v)
{
  unsigned long long now = io_now(v->io);
  for (size_t i = 0; i < v->nnodes; i++)
    if (v->nodes[i].up && v->nodes[i].c)
      io_cork(v->io, v->nodes[i].c, 1);
  /* Which nodes take a new flight: decided before sending any of it. */
  uint8_t ready[64], *rdy = v->nnodes <= sizeof ready ? ready : malloc(v->nnodes);
  for (size_t i = 0; i < v->nnodes; i++)
    rdy[i] = v->nodes[i].nfl == 0;
  for (size_t b = 0; b < v->nbusy; b++) {
    uint32_t p = v->busy[b];
    struct pgout *g = &v->pgs[p];
    for (int s = 0; s < NSLOTS; s++) {
      if (g->node[s] < 0)
        continue;               /* no segment in this slot */
      struct vnode *n = &v->nodes[g->node[s]];
      if (g->retry_at[s] && now < g->retry_at[s])
        continue;               /* it keeps refusing: not yet */
      if (g->resend & (1u << s) && n->up) {
        g->sent[s] = g->head;   /* everything not yet durable, again */
        g->resend &= (uint16_t)~(1u << s);
      }
      if (g->sent[s] < g->n && rdy[g->node[s]] && n->up) {
        /* One Append must fit in a frame: after an outage the backlog can
         * be far larger (UNDURABLE_MAX); the rest follows on its ack. */
        size_t end = g->sent[s], bytes = 0;
        while (end < g->n && end - g->sent[s] < BATCH_MAX &&
               (end == g->sent[s] || bytes + g->recs[end]->bytes <= FRAME_MAX / 2))
          bytes += g->recs[end++]->bytes;
        vcore_send_append(v, p, s, g->sent[s], end);
        g->sent[s] = end;
      }
    }
  }
  if (rdy != ready)
    free(rdy);
  for (size_t i = 0; i < v->nnodes; i++)
    if (v->nodes[i].c)
      io_cork(v->io, v->nodes[i].c, 0);
  for (struct readreq *r = v->reads; r; r = r->next)
    if (!r->done && r->req == 0 && now >= r->retry_at)
      read_dispatch(v, r);
}

/* A newer writer exists: stop for good. The first reason stays. */
void vol_fence_locked(struct volume *v, const char *msg)
{
  if (!v->fenced) {
    logwarn("volume %s: %s", v->name, msg);
    v->fenced = 1;
    snprintf(v->fenced_why, sizeof v->fenced_why, "%s", msg);
  }
  vcore_notify(v);
}

/* ---- acknowledgements ------------------------------------------- */

/* The VDL moved: free what is durable. O(PGs on v->busy + records freed
 * + commits made durable): a PG leaves the list with its last record. */
void vcore_advance(struct volume *v, uint64_t old_vdl)
{
  if (v->q.vdl == old_vdl)
    return;
  for (size_t b = 0; b < v->nbusy;) {
    struct pgout *g = &v->pgs[v->busy[b]];
    /* Durable records leave the list (freed at the VDL, not the VCL, so
     * that durable_tail can follow them), once sent to every segment whose
     * node is up: a segment that was waiting for its node's flight must
     * still get them, or it would have a hole until gossip fills it. */
    while (g->head < g->n && g->recs[g->head]->r.lsn <= v->q.vdl) {
      int s = 0;
      while (s < NSLOTS &&
             (g->node[s] < 0 || g->sent[s] > g->head || !v->nodes[g->node[s]].up))
        s++;
      if (s < NSLOTS)
        break;
      g->durable_tail = g->recs[g->head]->r.lsn;
      if (v->replica_floor) {
        if (g->freed == NULL)
          g->freed = malloc(FREED_RING * sizeof *g->freed);
        g->freed[g->freed_n++ % FREED_RING] = g->durable_tail;
      }
      v->undurable -= g->recs[g->head]->bytes;
      orec_free(g->recs[g->head++]);
    }
    for (int s = 0; s < NSLOTS; s++)
      if (g->sent[s] < g->head)
        g->sent[s] = g->head;   /* a down node's: resent from head when it is back */
    if (g->head > 1024 && g->head * 2 > g->n) {
      memmove(g->recs, g->recs + g->head, (g->n - g->head) * sizeof *g->recs);
      g->n -= g->head;
      for (int s = 0; s < NSLOTS; s++)
        g->sent[s] -= g->head;
      g->head = 0;
    }
    if (g->head == g->n) {      /* nothing left to send or free: off the list */
      g->busy = 0;
      v->busy[b] = v->busy[--v->nbusy];
    } else {
      b++;
    }
  }
  size_t k = 0;
  while (k < v->ncpls && v->cpls[k] <= v->q.vdl)
    k++;
  v->st.commits += k;
  if (k && v->io->now_us) {
    /* The commit stage timings: these are durable now. */
    uint64_t now = io_now_us(v->io);
    if (v->ctimes == NULL)
      v->ctimes = calloc(STAGE_TIMES_RING, sizeof *v->ctimes);
    for (size_t i = 0; i < k; i++)
      v->ctimes[v->nctimes++ % STAGE_TIMES_RING] =
        (struct vol_ctime){v->cpls[i], v->cpl_t[i].cut_us, v->cpl_t[i].sent_us, now};
  }
  memmove(v->cpls, v->cpls + k, (v->ncpls - k) * sizeof *v->cpls);
  memmove(v->cpl_t, v->cpl_t + k, (v->ncpls - k) * sizeof *v->cpl_t);
  v->ncpls -= k;
  vcore_notify(v);
  if (v->durable_fn)
    v->durable_fn(v->durable_arg, v->q.vdl);
}

/* Slot acknowledged lsns (ascending) of g: note it beside each of the
 * PG's newest records it names (the pictures' "acked by"). A picture, not
 * state: durability is the quorum's (q_ack), never this. */
static void ring_note_acks(struct pgout *g, int slot, const uint64_t *lsns, size_t n)
{
  if (n == 0)
    return;
  for (unsigned k = 0; k < TAIL_PER_PG && k < g->ring_n; k++) {
    uint64_t l = g->ring_lsn[k];
    if (l < lsns[0] || l > lsns[n - 1])
      continue;
    for (size_t i = 0; i < n; i++)
      if (lsns[i] == l) {
        g->ring_acks[k] |= (uint16_t)(1u << slot);
        break;
      }
  }
}

static void on_ack(struct volume *v, struct inflight *f, const Env *env)
{
  struct pgout *g = &v->pgs[f->pg];
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR) {
    if (env->error->code == ERR_STALE_EPOCH) {
      vol_fence_locked(v, env->error->msg);
      return;
    }
    /* M5: this writer's membership epoch of the PG is below its
     * mepoch_min (a finish took out a member it still counts): a refusal
     * like the others, and the lease probe goes soon to learn the change
     * (vmember.c); the Appends after it carry the new mepoch. */
    if (env->error->code == ERR_STALE_MEMBERSHIP)
      v->probe_soon = 1;
    g->has_epoch &= (uint16_t)~(1u << f->slot);   /* the next carries both again */
    /* e.g. the node has not heard of a new PG yet, or the segment holds
     * records a truncation it has not heard of cut (gossip brings it):
     * try again, later and later while it keeps refusing, and say so. */
    uint32_t k = ++g->refused[f->slot];
    if (k == 3)
      v->refusing++;
    unsigned shift = k < 7 ? k : 7;
    g->retry_at[f->slot] = io_now(v->io) + (100ull << shift);   /* up to 12.8 s */
    g->resend |= (uint16_t)(1u << f->slot);
    if (k == 3 || k % 50 == 0)
      logwarn("volume %s pg %u: segment %d on %s refused %u Appends in a row: %s",
              v->name, f->pg, f->slot, v->nodes[f->node].addr, k, env->error->msg);
    return;
  }
  if (env->body_case != AURALOG__ENVELOPE__BODY_APPEND_ACK)
    return;
  if (env->append_ack->backs_up)
    g->backed_up = 1;          /* vtell_vdl keeps its VDL moving */
  if (f->vdl > g->heard_vdl[f->slot])
    g->heard_vdl[f->slot] = f->vdl;
  g->has_epoch |= (uint16_t)(1u << f->slot);
  if (g->refused[f->slot]) {
    loginfo("volume %s pg %u: segment %d on %s takes Appends again", v->name, f->pg,
            f->slot, v->nodes[f->node].addr);
    if (g->refused[f->slot] >= 3)
      v->refusing--;
    g->refused[f->slot] = 0;
    g->retry_at[f->slot] = 0;
  }
  uint64_t old = v->q.vdl;
  /* A next segment's (slot >= NCOPIES) ack of each record is ignored
   * there: it counts by its SCL alone (M2). */
  for (size_t i = 0; i < f->n; i++)
    q_ack(&v->q, f->pg, PLANTED(BUG_NEXT_ACKS) && f->slot >= NCOPIES ? f->slot - NCOPIES
                                                                      : f->slot, f->lsns[i]);
  ring_note_acks(g, f->slot, f->lsns, f->n);
  uint64_t scl = env->append_ack->scl;
  q_ack_upto(&v->q, f->pg, f->slot, scl);
  if (scl > v->pgs[f->pg].scl[f->slot])
    v->pgs[f->pg].scl[f->slot] = scl;
  vcore_advance(v, old);
}

void vcore_on_msg(struct volume *v, struct ep *c, const Env *env)
{
  (void)c;                      /* answers name their request */
  if (v->rcv && rcv_on_msg(v->rcv, env))
    return;
  uint32_t i = env->req ? kmap_get(&v->flidx, env->req, 0) : KMAP_NONE;
  if (i != KMAP_NONE) {
    struct inflight f = v->fl[i];
    f.lsns = NULL;
    on_ack(v, &v->fl[i], env);
    vcore_fl_drop(v, i);
    if (v->vcl_waiter && v->q.vcl >= v->vcl_waiter)
      vcore_notify(v);          /* a prepare waits for it (volume.c vol_wait_vcl) */
    if (v->closing)
      vcore_notify(v);
    /* The node is free again: what waited for it goes now (after an
     * error, on the next tick or wake, not in a loop). */
    if (env->body_case == AURALOG__ENVELOPE__BODY_APPEND_ACK &&
        v->nodes[f.node].nfl == 0)
      vcore_flush(v);
    goto out;
  }
  for (struct readreq *r = v->reads; r; r = r->next)
    if (r->req && r->req == env->req) {
      read_done(v, r, env);
      vcore_notify(v);
      break;
    }
out:
  read_reap(v);
}

/* ---- connections ------------------------------------------------------------ */

static int node_of(struct volume *v, struct ep *c)
{
  for (size_t i = 0; i < v->nnodes; i++)
    if (v->nodes[i].c == c)
      return (int)i;
  return -1;
}

void vcore_on_down(struct volume *v, struct ep *c)
{
  int idx = node_of(v, c);
  if (idx < 0)
    return;
  struct vnode *n = &v->nodes[idx];
  n->c = NULL;
  n->up = 0;
  n->retry_at = io_now(v->io) + RECONNECT_MS;
  if (v->rcv)
    rcv_on_down(v->rcv, idx);
  /* Its segments forget the VDL they heard if it restarts (vtell.c vtell_vdl). */
  for (size_t x = 0; x < vol_npgs_all(v); x++)
    for (int s = 0; s < NSLOTS; s++)
      if (v->pgs[vol_pg_at(v, x)].node[s] == idx)
        v->pgs[vol_pg_at(v, x)].heard_vdl[s] = 0;
  /* What was in flight to it is lost: acks will not come. */
  for (size_t i = 0; i < v->nfl;)
    if (v->fl[i].node == idx)
      vcore_fl_drop(v, i);
    else
      i++;
  n->nfl = 0;
  for (struct readreq *r = v->reads; r; r = r->next)
    if (r->req && r->node == idx) {
      r->req = 0;
      r->retry_at = 0;
    }
}

void vcore_on_up(struct volume *v, struct ep *c)
{
  int idx = node_of(v, c);
  if (idx < 0)
    return;
  v->nodes[idx].up = 1;
  if (v->rcv)
    rcv_on_up(v->rcv, idx);
  /* Everything not yet durable goes to the segments on this node again;
   * duplicates are harmless (the node says so). Only PGs on v->busy hold
   * any (head < n). */
  for (size_t b = 0; b < v->nbusy; b++) {
    struct pgout *g = &v->pgs[v->busy[b]];
    for (int s = 0; s < NSLOTS; s++)
      if (g->node[s] == idx && g->head < g->n)
        g->resend |= (uint16_t)(1u << s);
  }
  vcore_flush(v);
}

void vcore_connect(struct volume *v)
{
  unsigned long long now = io_now(v->io);
  for (size_t i = 0; i < v->nnodes; i++) {
    struct vnode *n = &v->nodes[i];
    if (n->c || now < n->retry_at)
      continue;
    n->c = v->io->connect(v->io->ctx, n->addr);
    if (n->c == NULL)
      n->retry_at = now + RECONNECT_MS;
  }
}

/* Something changed on the engine's side (records shipped, a read
 * started, closing): connect, send. On close, tell every segment the final
 * VDL (an Append with no records), so the next writer's recovery starts
 * from it. */
void vcore_wake(struct volume *v)
{
  vcore_connect(v);
  vcore_flush(v);
  if (v->closing == 1 && v->reader) {
    v->closing = 2;             /* a replica's volume tells the segments nothing */
    vcore_notify(v);
  } else if (v->closing == 1 && !v->fenced) {
    for (size_t x = 0; x < vol_npgs_all(v); x++)
      for (int s = 0; s < NSLOTS; s++)
        vcore_send_append(v, vol_pg_at(v, x), s, 0, 0);   /* (no-op for an absent slot) */
    v->closing = 2;
    vcore_notify(v);
  }
}

/* A segment that does not answer (partitioned, slow, its node hung) must
 * not hold anything up: Appends go again, reads go elsewhere. */
static void expire(struct volume *v)
{
  unsigned long long now = io_now(v->io);
  for (size_t i = 0; i < v->nfl;) {
    struct inflight *f = &v->fl[i];
    if (now - f->sent_at > APPEND_RETRY_MS) {
      if (f->n)
        v->pgs[f->pg].resend |= (uint16_t)(1u << f->slot);
      vcore_fl_drop(v, i);
    } else {
      i++;
    }
  }
  for (struct readreq *r = v->reads; r; r = r->next)
    if (r->req && now - r->sent_at > READ_TRY_MS) {
      r->req = 0;               /* a late answer is ignored */
      r->retry_at = 0;
      /* An outlier (paper §2.1): reads go to other segments for a while,
       * rather than each paying READ_TRY_MS to find out again. */
      v->nodes[r->node].read_slow_until = now + READ_SLOW_MS;
    }
}

/* Every VOL_TICK_MS. */
/* M2 counts a next segment by the SCL its acks report, and a segment
 * reports it only in answer to an Append. One that hydrated after it
 * acknowledged the pending records (its SCL then still below them) would
 * never be heard again while nothing new is written: a PG that needs its
 * position (an AZ down, a drain under it) would wait for good. So a PG
 * whose oldest pending record stayed put for a whole tick sends its
 * pending records again to each next segment whose SCL is below it (the
 * node counts them duplicates and answers with its SCL). */
static void poke_next(struct volume *v)
{
  for (size_t b = 0; b < v->nbusy; b++) {
    struct pgout *g = &v->pgs[v->busy[b]];
    if (!g->trans || g->head >= g->n) {
      g->poke_lsn = 0;
      continue;
    }
    uint64_t oldest = g->recs[g->head]->r.lsn;
    if (oldest == g->poke_lsn)
      for (int p = 0; p < NCOPIES; p++)
        if ((g->trans & (1u << p)) && g->node[NCOPIES + p] >= 0 &&
            g->scl[NCOPIES + p] < oldest)
          g->resend |= (uint16_t)(1u << (NCOPIES + p));
    g->poke_lsn = oldest;
  }
}

void vcore_tick(struct volume *v)
{
  if (v->rcv)
    rcv_tick(v->rcv);
  expire(v);
  poke_next(v);
  vcore_connect(v);
  vcore_flush(v);
  vtell_pgmrpl(v);            /* idle PGs: vtell.c */
  vtell_vdl(v);
  vtell_binlog(v);
}

/* Free what the core holds (the driver frees v itself). */
void vcore_free(struct volume *v)
{
  rcv_free(v->rcv);
  v->rcv = NULL;
  for (size_t x = 0; x < vol_npgs_all(v); x++) {
    uint32_t p = vol_pg_at(v, x);
    for (size_t i = v->pgs[p].head; i < v->pgs[p].n; i++)
      orec_free(v->pgs[p].recs[i]);
    free(v->pgs[p].recs);
    free(v->pgs[p].freed);
  }
  for (size_t i = 0; i < v->nfl; i++)
    free(v->fl[i].lsns);
  while (v->reads) {
    struct readreq *r = v->reads;
    v->reads = r->next;
    free(r);
  }
  q_free(&v->q);
  pl_free(&v->plsn);
  free(v->fl);
  kmap_free(&v->flidx);
  free(v->busy);
  v->busy = NULL;
  v->nbusy = v->capbusy = 0;
  free(v->cpls);
  free(v->cpl_t);
  free(v->ctimes);
  free(v->pgs);
  free(v->nodes);
  if (v->rtrunc)
    auralog__trunc_range__free_unpacked(v->rtrunc, NULL);
  v->rtrunc = NULL;
  free(v->before);
  v->before = NULL;
  free(v->prep_ml);          /* a community commit prepared, never committed (ship.c P0) */
  v->prep_ml = NULL;
  v->nbefore = 0;
  v->pgs = NULL;
  v->nodes = NULL;
  v->npgs = v->nnodes = 0;
}

/* ---- the read replicas' stream (paper §4.2.4; vfs/feed.c drives it) ------- */

/* The records of the MTR vcore_ship just gave LSNs (cpl - n + 1 .. cpl,
 * one per page, in pages' order), in LSN order, to v->on_rec (if set).
 * The caller holds whatever hands out LSNs, so the stream has no gap. */
void vcore_feed_mtr(struct volume *v, const struct mtr_page *pages, size_t n, uint64_t cpl)
{
  if (v->on_rec == NULL)
    return;
  /* With a binlog record (ship.c B1), it is the CPL and the pages come
   * before it: a replica needs every LSN (its stream has no gap) and
   * skips it (rapply.c). */
  struct pgout *bg = v->has_binlog ? &v->pgs[BINLOG_PG] : NULL;
  int bl = bg && bg->n > bg->head && bg->recs[bg->n - 1]->r.lsn == cpl;
  for (size_t i = 0; i <= n; i++) {
    struct pgout *g = i < n ? &v->pgs[pages[i].page_no / v->pg_pages] : bg;
    if (i == n && !bl)
      break;
    uint64_t lsn = i < n ? cpl - (uint64_t)bl - (n - 1 - i) : cpl;
    size_t k = g->n;
    while (k > g->head && g->recs[k - 1]->r.lsn > lsn)
      k--;
    if (k > g->head && g->recs[k - 1]->r.lsn == lsn)
      v->on_rec(v->on_rec_arg, &g->recs[k - 1]->r);
  }
}

/* One record, lsn, just given out (a commit record, ship.c P0), to
 * v->on_rec. */
void vcore_feed_rec(struct volume *v, uint64_t lsn)
{
  if (v->on_rec == NULL)
    return;
  for (size_t b = 0; b < v->nbusy; b++) {
    struct pgout *g = &v->pgs[v->busy[b]];
    if (g->n > g->head && g->recs[g->n - 1]->r.lsn == lsn) {
      v->on_rec(v->on_rec_arg, &g->recs[g->n - 1]->r);
      return;
    }
  }
}

/* A replica's ReplicaStart now (rapply.h): start, from, each PG's tail
 * (tails[] filled with malloc'd entries, MAX_PGS room; the caller frees
 * them), the writer's truncation (in tr), VDL and geometry. */
void vcore_feed_start(const struct volume *v, Auralog__ReplicaStart *s,
                      Auralog__PgLast **tails, Auralog__TruncRange *tr)
{
  auralog__replica_start__init(s);
  s->volume_id = v->id;
  s->epoch = v->epoch;
  /* Every MTR shipped so far ends at or below last_cpl, and none has a
   * record in (last_cpl, next_lsn): the stream starts at next_lsn.
   * Except during a community binlog's two-phase commit (ship.c P0): the
   * prepared records lie in (last_cpl, next_lsn), already fed, and their
   * commit record will be next_lsn. A stream from there would get that
   * commit record without the records it closes, and the replica's
   * chains would wait for them for good (sim --community --faults
   * replicas, seed 895: a replica subscribed mid-prepare never caught
   * up). So it starts at the commit record instead: the first read point
   * is the XID (pages read from storage at it hold the prepared MTR once
   * it commits; if it never does, the volume stops, and the stream with
   * it), and the stream from the record after it. */
  int prep = v->prep_ml != NULL;
  s->start = prep ? v->prep_last + 1 : v->last_cpl > v->q.vdl ? v->last_cpl : v->q.vdl;
  s->from = prep ? v->prep_last + 2 : v->q.next_lsn;
  if (s->from <= s->start)
    s->from = s->start + 1;
  s->vdl = v->q.vdl;
  s->page_size = v->page_size;
  s->pg_pages = v->pg_pages;
  size_t nt = 0;
  for (size_t p = 0; p < v->npgs && nt < MAX_PGS; p++)
    if (v->pgs[p].tail) {
      tails[nt] = malloc(sizeof *tails[nt]);
      auralog__pg_last__init(tails[nt]);
      tails[nt]->pg = (uint32_t)p;
      /* (the commit record to come is its PG's tail as of the start) */
      tails[nt]->lsn = prep && p == v->prep_page / v->pg_pages ? v->prep_last + 1
                                                                : v->pgs[p].tail;
      nt++;
    }
  s->tails = tails;
  s->n_tails = nt;
  s->trunc = vol_own_trunc(v, tr);
}
