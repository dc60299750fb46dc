/*
 * volume.c: the engine's side of a volume (see volume.h): the I/O thread,
 * acknowledgements, opening and closing. The commit path (vol_ship,
 * vol_wait) is ship.c, page reads read.c, recovery at open open.c, reports
 * to the coordinator report.c; the struct they share is in volume_int.h.
 *
 * Locking: v->mu guards everything below that both SQLite's threads and
 * the I/O thread touch (the quorum tracker, the outgoing records, reads,
 * counters). The I/O thread is the only one that touches libuv handles;
 * other threads wake it with uv_async_send.
 *
 * Invariant: every record handed an LSN stays in its PG's list (pgout)
 * until the VDL passes it, so a segment that reconnects can be sent every
 * record that is not yet durable. Records below the VCL are at write
 * quorum; a segment that missed them catches up from its peers (gossip).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "lib/log.h"
#include "net.h"
#include "param.h"
#include "record.h"
#include "rpc.h"
#include "vfs/quorum.h"
#include "vfs/volume.h"
#include "vfs/volume_int.h"


static void orec_free(struct orec *o)
{
  free(o->g);
  free(o->gp);
  free(o->data);
  free(o->ml);
  free(o->mlp);
  free(o);
}

static int node_index(struct volume *v, const char *addr)
{
  for (size_t i = 0; i < v->nnodes; i++)
    if (strcmp(v->nodes[i].addr, addr) == 0)
      return (int)i;
  v->nodes = realloc(v->nodes, (v->nnodes + 1) * sizeof *v->nodes);
  struct vnode *n = &v->nodes[v->nnodes];
  memset(n, 0, sizeof *n);
  snprintf(n->addr, sizeof n->addr, "%s", addr);
  n->v = v;
  /* Existing conns point at their vnode by index, so realloc is safe. */
  return (int)v->nnodes++;
}

/* Adopt a volume description: PGs we did not know get their pgout. */
void vol_adopt(struct volume *v, const Auralog__Volume *vd)
{
  if (vd->n_pgs <= v->npgs)
    return;
  v->pgs = realloc(v->pgs, vd->n_pgs * sizeof *v->pgs);
  for (size_t p = v->npgs; p < vd->n_pgs; p++) {
    struct pgout *g = &v->pgs[p];
    memset(g, 0, sizeof *g);
    for (int s = 0; s < NCOPIES; s++)
      g->node[s] = node_index(v, vd->pgs[p]->segments[s]->addr);
  }
  v->npgs = vd->n_pgs;
}

static struct inflight *fl_add(struct volume *v)
{
  if (v->nfl == v->capfl) {
    v->capfl = v->capfl ? 2 * v->capfl : 64;
    v->fl = realloc(v->fl, v->capfl * sizeof *v->fl);
  }
  return &v->fl[v->nfl++];
}

/* Forget in-flight Append i: answered, timed out, or its conn is gone. */
static void fl_drop(struct volume *v, size_t i)
{
  struct vnode *n = &v->nodes[v->fl[i].node];
  if (n->nfl > 0)
    n->nfl--;
  free(v->fl[i].lsns);
  v->fl[i] = v->fl[--v->nfl];
}

/* ---- I/O thread: sending ---------------------------------------------------- */

/* The truncation this writer's recovery wrote, in *tr, or NULL if none. */
Auralog__TruncRange *vol_own_trunc(const struct volume *v, Auralog__TruncRange *tr)
{
  if (v->st.trunc_to <= v->st.trunc_from)
    return NULL;
  auralog__trunc_range__init(tr);
  tr->epoch = v->epoch;
  tr->from = v->st.trunc_from;
  tr->to = v->st.trunc_to;
  return tr;
}

/* Send recs[from..to) of pg to segment slot (to == from: a VDL beacon). */
static void send_append(struct volume *v, uint32_t pg, int slot, size_t from, size_t to)
{
  struct pgout *g = &v->pgs[pg];
  struct vnode *n = &v->nodes[g->node[slot]];
  if (!n->up || n->c == NULL)
    return;
  size_t cnt = to - from;
  Rec **ptrs = malloc((cnt + 1) * sizeof *ptrs);
  uint64_t *lsns = malloc((cnt + 1) * sizeof *lsns);
  for (size_t i = 0; i < cnt; i++) {
    ptrs[i] = &g->recs[from + i]->r;
    lsns[i] = ptrs[i]->lsn;
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  a.volume_id = v->id;
  a.pg = pg;
  a.epoch = v->epoch;
  a.vdl = v->q.vdl;
  /* The truncation this writer's recovery wrote: a segment installs it
   * before taking the records (node.c on_append). */
  Auralog__TruncRange tr;
  a.trunc = vol_own_trunc(v, &tr);
  a.records = ptrs;
  a.n_records = cnt;
  env.req = ++v->next_req;
  env.body_case = AURALOG__ENVELOPE__BODY_APPEND;
  env.append = &a;
  if (conn_send(n->c, &env) == 0) {
    struct inflight *f = fl_add(v);
    *f = (struct inflight){env.req, now_ms(), g->node[slot], pg, slot, lsns, cnt};
    n->nfl++;
    v->st.redo_msgs++;
    v->st.redo_bytes += 4 + auralog__envelope__get_packed_size(&env);
  } else {
    free(lsns);
  }
  free(ptrs);
}

/* Publish v->net in v->st (with v->mu held, on the I/O thread, after it
 * sent or received something; or by recovery, before the I/O thread). */
void net_sync(struct volume *v)
{
  v->st.net_bytes_out = v->net.bytes_out;
  v->st.net_msgs_out = v->net.msgs_out;
  v->st.net_bytes_in = v->net.bytes_in;
  v->st.net_msgs_in = v->net.msgs_in;
}

/* Send what is pending. Self-clocking batching (Nagle for commits): a node
 * with no Append in flight gets the new records of each of its segments at
 * once; a node with Appends in flight gets nothing until they are answered,
 * and the records of the commits made meanwhile then travel together, one
 * Append per segment, all of a node's Appends in one write. So the batch
 * grows with the load and each node commits (one lmdb transaction, its
 * fsyncs) about once per round trip, whatever the commit rate; an idle
 * writer's commit goes out at once. A slow node only gets bigger batches:
 * the 4/6 quorum does not wait for it. */
static void flush(struct volume *v)
{
  for (size_t i = 0; i < v->nnodes; i++)
    if (v->nodes[i].up && v->nodes[i].c)
      conn_cork(v->nodes[i].c);
  /* Which nodes take a new flight: decided before sending any of it. */
  uint8_t ready[64], *rdy = v->nnodes <= sizeof ready ? ready : malloc(v->nnodes);
  for (size_t i = 0; i < v->nnodes; i++)
    rdy[i] = v->nodes[i].nfl == 0;
  for (size_t p = 0; p < v->npgs; p++) {
    struct pgout *g = &v->pgs[p];
    for (int s = 0; s < NCOPIES; s++) {
      struct vnode *n = &v->nodes[g->node[s]];
      if (g->retry_at[s] && now_ms() < g->retry_at[s])
        continue;               /* it keeps refusing: not yet */
      if (g->resend & (1u << s) && n->up) {
        g->sent[s] = g->head;   /* everything not yet durable, again */
        g->resend &= (uint8_t)~(1u << s);
      }
      if (g->sent[s] < g->n && rdy[g->node[s]] && n->up) {
        /* One Append must fit in a frame: after an outage the backlog can
         * be far larger (UNDURABLE_MAX); the rest follows on its ack. */
        size_t end = g->sent[s], bytes = 0;
        while (end < g->n && end - g->sent[s] < BATCH_MAX &&
               (end == g->sent[s] || bytes + g->recs[end]->bytes <= FRAME_MAX / 2))
          bytes += g->recs[end++]->bytes;
        send_append(v, (uint32_t)p, s, g->sent[s], end);
        g->sent[s] = end;
      }
    }
  }
  if (rdy != ready)
    free(rdy);
  for (size_t i = 0; i < v->nnodes; i++)
    if (v->nodes[i].c)
      conn_uncork(v->nodes[i].c);
  for (struct readreq *r = v->reads; r; r = r->next)
    if (!r->done && r->req == 0 && now_ms() >= r->retry_at)
      read_dispatch(v, r);
  net_sync(v);
}

/* A newer writer exists: stop for good (called with v->mu held). The
 * first reason stays. */
void vol_fence_locked(struct volume *v, const char *msg)
{
  if (!v->fenced) {
    logwarn("volume %s: %s", v->name, msg);
    v->fenced = 1;
    snprintf(v->fenced_why, sizeof v->fenced_why, "%s", msg);
  }
  pthread_cond_broadcast(&v->cond);
}

/* ---- I/O thread: acknowledgements ------------------------------------------- */

static void advance(struct volume *v, uint64_t old_vdl)
{
  if (v->q.vdl == old_vdl)
    return;
  for (size_t p = 0; p < v->npgs; p++) {
    struct pgout *g = &v->pgs[p];
    /* Durable records leave the list (freed at the VDL, not the VCL, so
     * that durable_tail can follow them), once sent to every segment whose
     * node is up: a segment that was waiting for its node's flight must
     * still get them, or it would have a hole until gossip fills it. */
    while (g->head < g->n && g->recs[g->head]->r.lsn <= v->q.vdl) {
      int s = 0;
      while (s < NCOPIES && (g->sent[s] > g->head || !v->nodes[g->node[s]].up))
        s++;
      if (s < NCOPIES)
        break;
      g->durable_tail = g->recs[g->head]->r.lsn;
      v->undurable -= g->recs[g->head]->bytes;
      orec_free(g->recs[g->head++]);
    }
    for (int s = 0; s < NCOPIES; s++)
      if (g->sent[s] < g->head)
        g->sent[s] = g->head;   /* a down node's: resent from head when it is back */
    if (g->head > 1024 && g->head * 2 > g->n) {
      memmove(g->recs, g->recs + g->head, (g->n - g->head) * sizeof *g->recs);
      g->n -= g->head;
      for (int s = 0; s < NCOPIES; s++)
        g->sent[s] -= g->head;
      g->head = 0;
    }
  }
  size_t k = 0;
  while (k < v->ncpls && v->cpls[k] <= v->q.vdl)
    k++;
  v->st.commits += k;
  memmove(v->cpls, v->cpls + k, (v->ncpls - k) * sizeof *v->cpls);
  v->ncpls -= k;
  pthread_cond_broadcast(&v->cond);
  if (v->durable_fn)
    v->durable_fn(v->durable_arg, v->q.vdl);
}

static void on_ack(struct volume *v, struct inflight *f, const Env *env)
{
  struct pgout *g = &v->pgs[f->pg];
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR) {
    if (env->error->code == ERR_STALE_EPOCH) {
      vol_fence_locked(v, env->error->msg);
      return;
    }
    /* e.g. the node has not heard of a new PG yet, or the segment holds
     * records a truncation it has not heard of cut (gossip brings it):
     * try again, later and later while it keeps refusing, and say so. */
    uint32_t k = ++g->refused[f->slot];
    unsigned shift = k < 7 ? k : 7;
    g->retry_at[f->slot] = now_ms() + (100ull << shift);   /* up to 12.8 s */
    g->resend |= (uint8_t)(1u << f->slot);
    if (k == 3 || k % 50 == 0)
      logwarn("volume %s pg %u: segment %d on %s refused %u Appends in a row: %s",
              v->name, f->pg, f->slot, v->nodes[f->node].addr, k, env->error->msg);
    return;
  }
  if (env->body_case != AURALOG__ENVELOPE__BODY_APPEND_ACK)
    return;
  if (g->refused[f->slot]) {
    loginfo("volume %s pg %u: segment %d on %s takes Appends again", v->name, f->pg,
            f->slot, v->nodes[f->node].addr);
    g->refused[f->slot] = 0;
    g->retry_at[f->slot] = 0;
  }
  uint64_t old = v->q.vdl;
  for (size_t i = 0; i < f->n; i++)
    q_ack(&v->q, f->pg, f->slot, f->lsns[i]);
  uint64_t scl = env->append_ack->scl;
  q_ack_upto(&v->q, f->pg, f->slot, scl);
  if (scl > v->pgs[f->pg].scl[f->slot])
    v->pgs[f->pg].scl[f->slot] = scl;
  advance(v, old);
}

static void on_node_msg(struct conn *c, const Env *env)
{
  struct volume *v = c->data;
  pthread_mutex_lock(&v->mu);
  for (size_t i = 0; i < v->nfl; i++)
    if (v->fl[i].req == env->req) {
      struct inflight f = v->fl[i];
      f.lsns = NULL;
      on_ack(v, &v->fl[i], env);
      fl_drop(v, i);
      if (v->closing)
        pthread_cond_broadcast(&v->cond);
      /* The node is free again: what waited for it goes now (after an
       * error, on the next tick or wake, not in a loop). */
      if (env->body_case == AURALOG__ENVELOPE__BODY_APPEND_ACK &&
          v->nodes[f.node].nfl == 0)
        flush(v);
      goto out;
    }
  for (struct readreq *r = v->reads; r; r = r->next)
    if (r->req && r->req == env->req) {
      read_done(v, r, env);
      pthread_cond_broadcast(&v->cond);
      break;
    }
out:
  read_reap(v);
  net_sync(v);                  /* this answer, and a read sent again */
  pthread_mutex_unlock(&v->mu);
}

/* ---- I/O thread: connections -------------------------------------------------- */

static void node_closed(struct conn *c)
{
  struct volume *v = c->data;
  pthread_mutex_lock(&v->mu);
  int idx = (int)(intptr_t)c->ctx;
  struct vnode *n = &v->nodes[idx];
  if (n->c == c) {
    n->c = NULL;
    n->up = 0;
    n->retry_at = now_ms() + RECONNECT_MS;
  }
  /* What was in flight to it is lost: acks will not come. */
  for (size_t i = 0; i < v->nfl;)
    if (v->fl[i].node == idx)
      fl_drop(v, i);
    else
      i++;
  n->nfl = 0;
  for (struct readreq *r = v->reads; r; r = r->next)
    if (r->req && r->node == idx) {
      r->req = 0;
      r->retry_at = 0;
    }
  int stopping = v->closing == 3;
  pthread_mutex_unlock(&v->mu);
  if (!stopping)
    uv_async_send(&v->wake);
}

static void node_connected(struct conn *c, int status)
{
  struct volume *v = c->data;
  if (status != 0)
    return;                     /* node_closed follows */
  pthread_mutex_lock(&v->mu);
  int idx = (int)(intptr_t)c->ctx;
  v->nodes[idx].up = 1;
  /* Everything not yet durable goes to the segments on this node again;
   * duplicates are harmless (the node says so). */
  for (size_t p = 0; p < v->npgs; p++)
    for (int s = 0; s < NCOPIES; s++)
      if (v->pgs[p].node[s] == idx && v->pgs[p].head < v->pgs[p].n)
        v->pgs[p].resend |= (uint8_t)(1u << s);
  flush(v);
  pthread_mutex_unlock(&v->mu);
}

static void connect_nodes(struct volume *v)
{
  unsigned long long now = now_ms();
  for (size_t i = 0; i < v->nnodes; i++) {
    struct vnode *n = &v->nodes[i];
    if (n->c || now < n->retry_at)
      continue;
    n->c = net_connect(&v->loop, n->addr, node_connected, on_node_msg, node_closed, v);
    if (n->c) {
      n->c->ctx = (void *)(intptr_t)i;
      n->c->count = &v->net;
    } else {
      n->retry_at = now + RECONNECT_MS;
    }
  }
}

static void on_wake(uv_async_t *h)
{
  struct volume *v = h->data;
  pthread_mutex_lock(&v->mu);
  connect_nodes(v);
  flush(v);
  if (v->closing == 1 && !v->fenced) {
    /* Tell every segment the final VDL (an Append with no records), so
     * the next writer's recovery starts from it. */
    for (size_t p = 0; p < v->npgs; p++)
      for (int s = 0; s < NCOPIES; s++)
        send_append(v, (uint32_t)p, s, 0, 0);
    net_sync(v);
    v->closing = 2;
    pthread_cond_broadcast(&v->cond);
  }
  int stop = v->closing == 3;
  pthread_mutex_unlock(&v->mu);
  if (stop)
    uv_stop(&v->loop);
}

/* A segment that does not answer (partitioned, slow, its node hung) must
 * not hold anything up: Appends go again, reads go elsewhere. */
static void expire(struct volume *v)
{
  unsigned long long now = now_ms();
  for (size_t i = 0; i < v->nfl;) {
    struct inflight *f = &v->fl[i];
    if (now - f->sent_at > APPEND_RETRY_MS) {
      if (f->n)
        v->pgs[f->pg].resend |= (uint8_t)(1u << f->slot);
      fl_drop(v, i);
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

static void on_tick(uv_timer_t *t)
{
  struct volume *v = t->data;
  pthread_mutex_lock(&v->mu);
  expire(v);
  connect_nodes(v);
  flush(v);
  pthread_mutex_unlock(&v->mu);
  if (++v->ticks % (ENGINE_STAT_MS / 100) == 0)
    vol_report(v);
}

static void close_handle(uv_handle_t *h, void *arg)
{
  (void)arg;
  if (!uv_is_closing(h)) {
    if (h->type == UV_TCP && h->data)
      conn_close(h->data);
    else
      uv_close(h, NULL);
  }
}

static void *io_main(void *arg)
{
  struct volume *v = arg;
  uv_run(&v->loop, UV_RUN_DEFAULT);
  uv_walk(&v->loop, close_handle, NULL);
  uv_run(&v->loop, UV_RUN_DEFAULT);
  uv_loop_close(&v->loop);
  return NULL;
}

/* ---- the public side ----------------------------------------------------------- */

Env *vol_coord_call(const char *coord, Env *req, int want, char *why, size_t whylen)
{
  char err[256];
  Env *rep = rpc_once(coord, req, RPC_TIMEOUT_MS, err, sizeof err);
  if (rep == NULL) {
    snprintf(why, whylen, "coordinator: %s", err);
    return NULL;
  }
  if (rpc_expect(rep, want, err, sizeof err) != 0) {
    snprintf(why, whylen, "coordinator: %s", err);
    wire_free(rep);
    return NULL;
  }
  return rep;
}

struct volume *vol_open(const char *coord, const char *name, const char *engine_addr,
                        char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = (char *)name;
  ov.create = 1;
  ov.writer = 1;
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  Env *rep = vol_coord_call(coord, &req, AURALOG__ENVELOPE__BODY_VOLUME, why, whylen);
  if (rep == NULL)
    return NULL;
  const Auralog__Volume *vd = rep->volume;
  struct volume *v = calloc(1, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", name);
  snprintf(v->coord, sizeof v->coord, "%s", coord);
  snprintf(v->engine_addr, sizeof v->engine_addr, "%s", engine_addr ? engine_addr : "");
  v->id = vd->id;
  v->epoch = vd->epoch;
  v->page_size = vd->page_size;
  v->pg_pages = vd->pg_pages;
  pthread_mutex_init(&v->mu, NULL);
  pthread_cond_init(&v->cond, NULL);
  vol_adopt(v, vd);
  if (recover(v, vd, why, whylen) != 0) {
    wire_free(rep);
    free(v->pgs);
    free(v->nodes);
    free(v);
    return NULL;
  }
  wire_free(rep);
  /* Tell the coordinator now, before serving, so that the truncation is in
   * the volume's history even if this engine dies at once. */
  {
    Env env;
    Auralog__EngineStat es;
    Auralog__TruncRange tr;
    char err[200];
    struct rpc r;
    size_t len;
    vol_engine_stat(v, &env, &es, &tr);
    uint8_t *frame = wire_frame(&env, &len);
    if (frame && rpc_open(&r, coord, 1000, err, sizeof err) == 0) {
      rpc_send_raw(&r, frame, len);   /* a report: no answer comes */
      rpc_close(&r);
    }
    free(frame);
  }
  uv_loop_init(&v->loop);
  uv_async_init(&v->loop, &v->wake, on_wake);
  v->wake.data = v;
  uv_timer_init(&v->loop, &v->tick);
  v->tick.data = v;
  uv_timer_start(&v->tick, on_tick, 100, 100);
  v->ticks = ENGINE_STAT_MS / 100 - 1;   /* report at the first tick */
  pthread_create(&v->thread, NULL, io_main, v);
  uv_async_send(&v->wake);
  loginfo("volume %s open: epoch %llu, vdl %llu, %zu pg%s, recovery %llu ms%s", name,
          (unsigned long long)v->epoch, (unsigned long long)v->q.vdl, v->npgs,
          v->npgs == 1 ? "" : "s", (unsigned long long)v->st.recovery_ms,
          v->st.trunc_to > v->st.trunc_from ? ", truncated above the vdl" : "");
  return v;
}

uint32_t vol_page_size(const struct volume *v)
{
  return v->page_size;
}

const char *vol_name(const struct volume *v)
{
  return v->name;
}

void vol_deadline_in(struct timespec *ts, int ms)
{
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000;
  if (ts->tv_nsec >= 1000000000) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000;
  }
}

uint64_t vol_vdl(struct volume *v)
{
  pthread_mutex_lock(&v->mu);
  uint64_t vdl = v->q.vdl;
  pthread_mutex_unlock(&v->mu);
  return vdl;
}

void vol_on_durable(struct volume *v, void (*fn)(void *, uint64_t), void *arg)
{
  pthread_mutex_lock(&v->mu);
  v->durable_fn = fn;
  v->durable_arg = arg;
  pthread_mutex_unlock(&v->mu);
}

void vol_get_stats(struct volume *v, struct vol_stats *st)
{
  pthread_mutex_lock(&v->mu);
  *st = v->st;
  st->epoch = v->epoch;
  st->vdl = v->q.vdl;
  st->vcl = v->q.vcl;
  st->next_lsn = v->q.next_lsn;
  st->lal = v->q.lal;
  st->pending = q_pending(&v->q);
  st->refusing = 0;
  for (size_t p = 0; p < v->npgs; p++)
    for (int k = 0; k < NCOPIES; k++)
      st->refusing += v->pgs[p].refused[k] >= 3;
  pthread_mutex_unlock(&v->mu);
}

void vol_close(struct volume *v)
{
  char why[256];
  pthread_mutex_lock(&v->mu);
  uint64_t last = v->ncpls ? v->cpls[v->ncpls - 1] : 0;
  pthread_mutex_unlock(&v->mu);
  if (last && vol_wait(v, last, COMMIT_DEADLINE_MS, why, sizeof why) != 0)
    logwarn("closing %s: %s", v->name, why);
  /* The I/O thread sends the final VDL to every segment (on_wake); wait a
   * moment for the acks, then stop it. */
  pthread_mutex_lock(&v->mu);
  v->closing = 1;
  pthread_mutex_unlock(&v->mu);
  uv_async_send(&v->wake);
  struct timespec dl;
  vol_deadline_in(&dl, 1000);
  pthread_mutex_lock(&v->mu);
  while ((v->closing == 1 || v->nfl > 0) && !v->fenced)
    if (pthread_cond_timedwait(&v->cond, &v->mu, &dl) != 0)
      break;
  v->closing = 3;
  pthread_mutex_unlock(&v->mu);
  uv_async_send(&v->wake);
  pthread_join(v->thread, NULL);
  for (size_t p = 0; p < v->npgs; p++) {
    for (size_t i = v->pgs[p].head; i < v->pgs[p].n; i++)
      orec_free(v->pgs[p].recs[i]);
    free(v->pgs[p].recs);
  }
  for (size_t i = 0; i < v->nfl; i++)
    free(v->fl[i].lsns);
  while (v->reads) {
    struct readreq *r = v->reads;
    v->reads = r->next;
    free(r);
  }
  q_free(&v->q);
  free(v->page_lsn);
  free(v->fl);
  free(v->cpls);
  free(v->pgs);
  free(v->nodes);
  pthread_mutex_destroy(&v->mu);
  pthread_cond_destroy(&v->cond);
  free(v);
}

int vol_drop(const char *coord, const char *name, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__DropVolume d = AURALOG__DROP_VOLUME__INIT;
  d.name = (char *)name;
  req.body_case = AURALOG__ENVELOPE__BODY_DROP_VOLUME;
  req.drop_volume = &d;
  Env *rep = vol_coord_call(coord, &req, AURALOG__ENVELOPE__BODY_OK, why, whylen);
  wire_free(rep);
  return rep ? 0 : -1;
}

int vol_fenced(struct volume *v, char *why, size_t whylen)
{
  pthread_mutex_lock(&v->mu);
  int fenced = v->fenced;
  if (fenced)
    snprintf(why, whylen, "%s: a newer writer opened volume %s; this engine must stop",
             v->fenced_why, v->name);
  pthread_mutex_unlock(&v->mu);
  return fenced;
}

/* ---- for the engine server: durable reads, the read lease (engine.c) ---- */

uint64_t vol_last_cpl(struct volume *v)
{
  pthread_mutex_lock(&v->mu);
  uint64_t cpl = v->last_cpl;
  pthread_mutex_unlock(&v->mu);
  return cpl;
}

void vol_fence(struct volume *v, const char *why)
{
  pthread_mutex_lock(&v->mu);
  vol_fence_locked(v, why);
  pthread_mutex_unlock(&v->mu);
}
