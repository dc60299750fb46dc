/*
 * node.c: the storage node role, `auralog node` (paper §3.3, Fig. 4).
 *
 * A node hosts segments (one per protection group it belongs to) in one
 * lmdb environment and does steps 1-2 of Figure 4 in the foreground:
 * receive a batch of records, persist it, acknowledge it with the
 * segment's SCL. It also serves page reads at a read point, registers with
 * the coordinator, learns its segments from it, and heartbeats their SCLs
 * and its counters (durable commits, fsyncs, frames and bytes sent and
 * received, gossip apart) for `auralog bench`.
 *
 * Group commit: every Append that arrives in one turn of the event loop is
 * written into one lmdb transaction; a uv_check handle (run right after
 * the loop polled for I/O) commits it with one fsync and only then chains
 * the records (seg_add) and sends the acks. A crash before the commit loses
 * only unacknowledged records.
 *
 * Indexing the records by page is left out of that commit (store.h): once
 * about IDX_BATCH records wait, the node indexes them in a transaction of
 * its own, after the turn's acks went out.
 *
 * The decisions (is a record new, a duplicate, refused? what is the SCL?)
 * are made by node/segment.c; this file is the driver around it. Filling
 * holes from PG peers (step 4) is node/gossip.c; truncations and a
 * recovering writer's questions are node/trunc.c. Lab faults set through
 * the coordinator are played here: a partitioned node drops the engine's
 * requests, a slow one answers them late.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "net.h"
#include "node/node.h"
#include "node/segment.h"
#include "node/store.h"
#include "param.h"
#include "roles.h"

struct segment *node_find_seg(struct node *n, uint64_t vol, uint32_t pg)
{
  for (size_t i = 0; i < n->nsegs; i++)
    if (n->segs[i]->volume_id == vol && n->segs[i]->pg == pg)
      return n->segs[i];
  return NULL;
}

static void add_seg(void *arg, struct segment *s)
{
  struct node *n = arg;
  struct segment *copy = malloc(sizeof *copy);
  *copy = *s;
  n->segs = realloc(n->segs, (n->nsegs + 1) * sizeof *n->segs);
  n->segs[n->nsegs++] = copy;
  n->dirty = realloc(n->dirty, n->nsegs * sizeof *n->dirty);
}

void node_mark_dirty(struct node *n, struct segment *s)
{
  for (size_t i = 0; i < n->ndirty; i++)
    if (n->dirty[i] == s)
      return;
  n->dirty[n->ndirty++] = s;
}

struct segment *node_seg_for(struct node *n, struct conn *c, uint64_t req,
                               uint64_t vol, uint32_t pg)
{
  struct segment *s = node_find_seg(n, vol, pg);
  if (s == NULL) {
    char why[160];
    snprintf(why, sizeof why, "node %s hosts no segment of volume %llu pg %u",
             n->id, (unsigned long long)vol, pg);
    conn_error(c, req, ERR_UNKNOWN_SEGMENT, why);
  }
  return s;
}

/* ---- the write path: stage, then commit once per loop turn --------------- */

/* ---- replies, late on purpose for a slow node (a lab fault) --------------- */

struct delayed {
  uv_timer_t t;
  struct conn *c;
  uint8_t *frame;
  size_t len;
};

static void delayed_freed(uv_handle_t *h)
{
  free(h->data);
}

static void delayed_fire(uv_timer_t *t)
{
  struct delayed *d = t->data;
  conn_send_frame(d->c, d->frame, d->len);
  conn_unref(d->c);
  uv_close((uv_handle_t *)&d->t, delayed_freed);
}

/* Answer a writer's request: at once, or slow_ms later on a slow node (the
 * outlier of paper §2.1 that a 4/6 quorum hides). */
void node_reply(struct node *n, struct conn *c, const Env *env)
{
  if (n->slow_ms == 0) {
    conn_send(c, env);
    return;
  }
  struct delayed *d = calloc(1, sizeof *d);
  d->frame = wire_frame(env, &d->len);
  if (d->frame == NULL) {
    free(d);
    return;
  }
  d->c = c;
  conn_ref(c);
  uv_timer_init(n->loop, &d->t);
  d->t.data = d;
  uv_timer_start(&d->t, delayed_fire, n->slow_ms, 0);
}

/* The open transaction is lost (a failed write or commit): abort it, make
 * every segment it touched what the disk holds again (epoch, VDL hint,
 * truncations, chain: memory must never claim what the disk lost), and
 * send every staged ack an error. */
void node_rollback(struct node *n, uint32_t code, const char *why)
{
  char rwhy[256];
  store_abort(&n->st);
  for (size_t i = 0; i < n->ndirty; i++)
    if (store_reload(&n->st, n->dirty[i], rwhy, sizeof rwhy) != 0)
      logwarn("%s", rwhy);
  for (size_t i = 0; i < n->nacks; i++) {
    conn_error(n->acks[i].c, n->acks[i].req, code, why);
    conn_unref(n->acks[i].c);
  }
  n->nacks = n->nlinks = n->ndirty = 0;
}

/* Commit the open transaction, then chain and acknowledge what it held.
 * Returns 0, or an ERR_* code (everything staged was then refused). */
int node_commit(struct node *n)
{
  char why[256];
  if (n->st.txn == NULL)
    return 0;
  int rc = 0;
  /* Each SegMeta's SCL hint is the SCL before this commit's records are
   * chained: it never names more than the disk holds. */
  for (size_t i = 0; i < n->ndirty && rc == 0; i++)
    rc = store_put_meta(&n->st, n->dirty[i], why, sizeof why);
  if (rc == 0)
    rc = store_commit(&n->st, why, sizeof why);
  if (rc != 0) {
    logwarn("%s", why);
    node_rollback(n, (uint32_t)rc, why);
    return rc;
  }
  /* Durable now: chain the records, then acknowledge with the new SCLs. */
  for (size_t i = 0; i < n->nlinks; i++)
    seg_add(n->links[i].s, n->links[i].lsn, n->links[i].prev);
  /* The acks of one commit to one writer (a segment each) go out in one
   * write: the writer reads them in one turn and sends its next batch to
   * this node once, not once per ack. */
  for (size_t i = 0; i < n->nacks; i++)
    conn_cork(n->acks[i].c);
  for (size_t i = 0; i < n->nacks; i++) {
    struct staged *a = &n->acks[i];
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__AppendAck ack = AURALOG__APPEND_ACK__INIT;
    ack.volume_id = a->s->volume_id;
    ack.pg = a->s->pg;
    ack.scl = a->s->scl;
    ack.added = a->added;
    ack.duplicates = a->dups;
    env.req = a->req;
    env.body_case = AURALOG__ENVELOPE__BODY_APPEND_ACK;
    env.append_ack = &ack;
    node_reply(n, a->c, &env);
  }
  for (size_t i = 0; i < n->nacks; i++) {
    conn_uncork(n->acks[i].c);
    conn_unref(n->acks[i].c);
  }
  n->nacks = n->nlinks = n->ndirty = 0;
  return 0;
}

/* Index a batch of records by page (store.h), outside the acknowledged
 * commits: after this turn's acks went out. */
static void index_some(struct node *n)
{
  char why[256];
  if (store_index(&n->st, IDX_CHUNK, why, sizeof why) != 0)
    logwarn("%s", why);
  n->idx_at = IDX_BATCH * 3 / 4 + (size_t)rand() % (IDX_BATCH / 2 + 1);
}

static void on_commit(uv_check_t *h)
{
  struct node *n = h->data;
  node_commit(n);
  if (n->st.nunidx >= n->idx_at)
    index_some(n);
}

static void on_append(struct node *n, struct conn *c, uint64_t req,
                      const Auralog__Append *a)
{
  char why[256];
  struct segment *s = node_seg_for(n, c, req, a->volume_id, a->pg);
  if (s == NULL)
    return;
  if (a->epoch < s->epoch) {
    seg_epoch(s, a->epoch, why, sizeof why);   /* only words the refusal */
    conn_error(c, req, ERR_STALE_EPOCH, why);
    return;
  }
  /* The writer's own truncation first: records it wrote may only chain
   * onto what its recovery kept (a segment that missed that recovery may
   * still hold records it cut). It stands whatever becomes of the batch:
   * it is the writer's, whose epoch is current. */
  if (a->trunc) {
    struct trunc t = {a->trunc->epoch, a->trunc->from, a->trunc->to};
    int rc = node_writer_trunc_ok(s, &t, why, sizeof why) ? node_truncate(n, s, &t, 1, why, sizeof why)
                                                     : ERR_CONFLICT;
    if (rc != 0) {
      conn_error(c, req, (uint32_t)rc, why);
      return;
    }
  }
  uint32_t added, dups;
  int rc = node_stage(n, s, a->records, a->n_records, 1, &added, &dups, why, sizeof why);
  if (rc != ERR_NONE) {
    conn_error(c, req, (uint32_t)rc, why);  /* refused: nothing changed */
    return;
  }
  /* Accepted: a newer epoch fences older writers from now on, and the
   * writer's VDL is a point recovery may start from (§4.3); both are
   * written with this turn's commit. */
  if (a->epoch > s->epoch || a->vdl > s->vdl) {
    seg_epoch(s, a->epoch, why, sizeof why);
    if (a->vdl > s->vdl)
      s->vdl = a->vdl;
    node_mark_dirty(n, s);
  }
  if (n->nacks == n->capacks) {
    n->capacks = n->capacks ? 2 * n->capacks : 64;
    n->acks = realloc(n->acks, n->capacks * sizeof *n->acks);
  }
  conn_ref(c);
  n->acks[n->nacks++] = (struct staged){c, req, s, added, dups};
}

int node_stage(struct node *n, struct segment *s, Rec *const *recs, size_t cnt,
               int strict, uint32_t *added, uint32_t *dups, char *why, size_t whylen)
{
  /* Decide about every record before storing any: a refused batch changes
   * nothing. (0: new, 1: held already, 2: refused and skipped.) */
  uint8_t *fate = malloc(cnt + 1);
  int rc;
  *added = *dups = 0;
  for (size_t i = 0; i < cnt; i++) {
    int d;
    rc = seg_admit(s, recs[i], &d, why, whylen);
    if (rc != ERR_NONE && strict) {
      free(fate);
      return rc;
    }
    fate[i] = rc != ERR_NONE ? 2 : (uint8_t)d;
    *dups += fate[i] == 1;
  }
  if ((rc = store_begin(&n->st, why, whylen)) != 0) {
    free(fate);
    return rc;
  }
  for (size_t i = 0; i < cnt; i++) {
    const Rec *r = recs[i];
    uint64_t held_epoch;
    /* A record held with an older epoch, sent again with a newer one, was
     * adopted by a recovery (record.h, rule T): store the adopted copy, so
     * that no older truncation can cut it here. Its chain is unchanged. */
    if (fate[i] == 1 && store_held(&n->st, s, r->lsn, &held_epoch) &&
        held_epoch < r->epoch) {
      if ((rc = store_put_rec(&n->st, s, r, why, whylen)) != 0)
        goto lost;
      node_mark_dirty(n, s);
      continue;
    }
    if (fate[i])
      continue;
    if ((rc = store_put_rec(&n->st, s, r, why, whylen)) != 0)
      goto lost;
    if (n->nlinks == n->caplinks) {
      n->caplinks = n->caplinks ? 2 * n->caplinks : 1024;
      n->links = realloc(n->links, n->caplinks * sizeof *n->links);
    }
    n->links[n->nlinks++] = (struct link){s, r->lsn, r->prev_lsn};
    (*added)++;
  }
  free(fate);
  if (*added)
    node_mark_dirty(n, s);
  return 0;
lost:
  /* The whole open transaction is lost: fail everything staged in it. */
  free(fate);
  logwarn("%s", why);
  node_mark_dirty(n, s);
  node_rollback(n, (uint32_t)rc, why);
  return rc;
}

/* ---- the read path ------------------------------------------------------- */

static void on_read_page(struct node *n, struct conn *c, uint64_t req,
                         const Auralog__ReadPage *rp)
{
  char why[256];
  struct segment *s = node_seg_for(n, c, req, rp->volume_id, rp->pg);
  if (s == NULL)
    return;
  if (rp->page_no < s->first_page || rp->page_no - s->first_page >= s->npages) {
    snprintf(why, sizeof why, "page %u is not in pg %u", rp->page_no, s->pg);
    conn_error(c, req, ERR_OUT_OF_RANGE, why);
    return;
  }
  /* A reader of an older epoch has been replaced: it must stop serving. */
  if (rp->epoch && rp->epoch < s->epoch) {
    seg_epoch(s, rp->epoch, why, sizeof why);
    conn_error(c, req, ERR_STALE_EPOCH, why);
    return;
  }
  /* A segment that has not installed the writer's truncation may hold
   * records it cut: it does not answer for that writer. */
  if (rp->trunc && rp->trunc->to > rp->trunc->from &&
      !seg_has_trunc(s, rp->trunc->epoch, rp->trunc->from, rp->trunc->to)) {
    snprintf(why, sizeof why, "segment on node %s has not seen the truncation of "
             "epoch %llu: try another segment", n->id,
             (unsigned long long)rp->trunc->epoch);
    conn_error(c, req, ERR_NOT_COMPLETE, why);
    return;
  }
  /* Single-segment reads (§4.2.3). The writer names `need`, the PG's last
   * record at or below the read point. The segment answers only if it
   * holds need and its chain is whole up to it: then the records it holds
   * at or below need are exactly the PG's log up to need (segment.h), and
   * the PG has no record in (need, read point]. So the page is built as
   * of need: a record this segment holds above need (one a truncation it
   * has not heard of cut, or one not yet durable) is never applied. */
  uint64_t need = rp->need;
  if (need > s->scl || (need && !store_held(&n->st, s, need, NULL))) {
    snprintf(why, sizeof why, "segment on node %s is complete to %llu and does not "
             "hold %llu (read point %llu): try another segment", n->id,
             (unsigned long long)s->scl, (unsigned long long)need,
             (unsigned long long)rp->read_point);
    conn_error(c, req, ERR_NOT_COMPLETE, why);
    return;
  }
  /* A read scans the segment's records not yet indexed (store.c): when
   * many wait (writes stopped short of a batch, then reads came: an
   * engine restarting), index them first, once, rather than per read. */
  if (n->st.txn == NULL && n->st.nunidx >= IDX_READ_MIN)
    index_some(n);
  uint8_t *buf = malloc(s->page_size);
  uint64_t page_lsn = 0;
  int rc = store_read_page(&n->st, s, rp->page_no, need, buf, &page_lsn, why, sizeof why);
  if (rc != 0) {
    conn_error(c, req, (uint32_t)rc, why);
  } else {
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__Page pg = AURALOG__PAGE__INIT;
    pg.volume_id = s->volume_id;
    pg.pg = s->pg;
    pg.page_no = rp->page_no;
    pg.page_lsn = page_lsn;
    pg.data.data = buf;
    pg.data.len = s->page_size;
    env.req = req;
    env.body_case = AURALOG__ENVELOPE__BODY_PAGE;
    env.page = &pg;
    node_reply(n, c, &env);
  }
  free(buf);
}

/* ---- the coordinator link ------------------------------------------------ */

static void connect_coord(struct node *n);

static void on_assign(struct node *n, const Auralog__Assign *as)
{
  char why[256];
  for (size_t i = 0; i < as->n_segments; i++) {
    const Auralog__Segment *d = as->segments[i];
    if (strcmp(d->node, n->id) != 0 || node_find_seg(n, d->volume_id, d->pg))
      continue;
    struct segment s;
    seg_init(&s, d->volume_id, d->pg, d->first_page, d->npages, d->page_size);
    add_seg(n, &s);
    if (store_begin(&n->st, why, sizeof why) != 0) {
      logwarn("%s", why);
      continue;
    }
    node_mark_dirty(n, n->segs[n->nsegs - 1]);
    loginfo("now hosting volume %llu pg %u (pages %u..%u)",
            (unsigned long long)d->volume_id, d->pg, d->first_page,
            d->first_page + d->npages - 1);
  }
  gossip_learn(n, as);
}

static void on_faults(struct node *n, const Auralog__NodeFaults *f)
{
  if (f->partitioned != n->partitioned || f->slow_ms != n->slow_ms)
    loginfo("lab fault: %s, %s", f->partitioned ? "partitioned from the engine and "
            "other AZs" : "not partitioned", f->slow_ms ? "slow" : "not slow");
  n->partitioned = f->partitioned;
  n->slow_ms = f->slow_ms;
}

static void on_msg(struct conn *c, const Env *env)
{
  struct node *n = c->data;
  /* A partitioned node hears nothing from the engine: as if the network
   * dropped it (no answer, not even an error). */
  if (n->partitioned && c != n->coord_conn &&
      (env->body_case == AURALOG__ENVELOPE__BODY_APPEND ||
       env->body_case == AURALOG__ENVELOPE__BODY_READ_PAGE ||
       env->body_case == AURALOG__ENVELOPE__BODY_SEG_QUERY ||
       env->body_case == AURALOG__ENVELOPE__BODY_TRUNCATE))
    return;
  switch (env->body_case) {
  case AURALOG__ENVELOPE__BODY_APPEND:
    on_append(n, c, env->req, env->append);
    break;
  case AURALOG__ENVELOPE__BODY_READ_PAGE:
    on_read_page(n, c, env->req, env->read_page);
    break;
  case AURALOG__ENVELOPE__BODY_SEG_QUERY:
    node_on_seg_query(n, c, env->req, env->seg_query);
    break;
  case AURALOG__ENVELOPE__BODY_TRUNCATE:
    node_on_truncate(n, c, env->req, env->truncate);
    break;
  case AURALOG__ENVELOPE__BODY_ASSIGN:
    if (c == n->coord_conn)
      on_assign(n, env->assign);
    else
      conn_error(c, env->req, ERR_BAD_MSG, "only the coordinator assigns segments");
    break;
  case AURALOG__ENVELOPE__BODY_NODE_FAULTS:
    if (c == n->coord_conn)
      on_faults(n, env->node_faults);
    break;
  case AURALOG__ENVELOPE__BODY_GOSSIP_PULL:
    gossip_on_pull(n, c, env->req, env->gossip_pull);
    break;
  case AURALOG__ENVELOPE__BODY_ERROR:
    if (c == n->coord_conn && env->req == 1) {
      /* The coordinator refused our registration: a configuration error
       * (an id registered in another AZ). Nothing to retry. */
      errmsg("coordinator refused node %s: %s", n->id, env->error->msg);
      exit(1);
    }
    if (env->error->msg[0])
      logwarn("%s: %s", c->peer, env->error->msg);
    break;                  /* never answer an error with an error */
  default:
    conn_error(c, env->req, ERR_BAD_MSG, "a storage node does not serve this request");
  }
}

static void send_heartbeat(uv_timer_t *t)
{
  struct node *n = t->data;
  if (n->coord_conn == NULL || !n->coord_conn->connected)
    return;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Heartbeat hb = AURALOG__HEARTBEAT__INIT;
  Auralog__SegStat *stats = calloc(n->nsegs + 1, sizeof *stats);
  Auralog__SegStat **ptrs = calloc(n->nsegs + 1, sizeof *ptrs);
  for (size_t i = 0; i < n->nsegs; i++) {
    auralog__seg_stat__init(&stats[i]);
    stats[i].volume_id = n->segs[i]->volume_id;
    stats[i].pg = n->segs[i]->pg;
    stats[i].scl = n->segs[i]->scl;
    stats[i].max_lsn = n->segs[i]->max_lsn;
    stats[i].epoch = n->segs[i]->epoch;
    ptrs[i] = &stats[i];
  }
  hb.id = n->id;
  hb.segs = ptrs;
  hb.n_segs = n->nsegs;
  hb.commits = n->st.commits;
  hb.fsyncs = n->st.fsyncs;
  hb.gossip_bytes = n->gossip_bytes;
  hb.gossip_msgs = n->gossip_msgs;
  hb.net_bytes_in = n->net.bytes_in;
  hb.net_msgs_in = n->net.msgs_in;
  hb.net_bytes_out = n->net.bytes_out;
  hb.net_msgs_out = n->net.msgs_out;
  hb.coord_bytes = n->coord_net.bytes_in + n->coord_net.bytes_out;
  hb.coord_msgs = n->coord_net.msgs_in + n->coord_net.msgs_out;
  env.body_case = AURALOG__ENVELOPE__BODY_HEARTBEAT;
  env.heartbeat = &hb;
  conn_send(n->coord_conn, &env);
  free(stats);
  free(ptrs);
}

static void coord_connected(struct conn *c, int status)
{
  struct node *n = c->data;
  if (status != 0)
    return;                 /* coord_closed schedules the retry */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  reg.id = n->id;
  reg.az = n->az;
  reg.addr = n->addr;
  env.body_case = AURALOG__ENVELOPE__BODY_REGISTER;
  env.register_ = &reg;
  env.req = 1;
  conn_send(c, &env);
  loginfo("registered with coordinator %s", n->coord);
  send_heartbeat(&n->heartbeat);
}

static void retry_coord(uv_timer_t *t)
{
  connect_coord(t->data);
}

static void coord_closed(struct conn *c)
{
  struct node *n = c->data;
  if (n->coord_conn == c)
    n->coord_conn = NULL;
  uv_timer_start(&n->reconnect, retry_coord, RECONNECT_MS, 0);
}

static void connect_coord(struct node *n)
{
  n->coord_conn = net_connect(n->loop, n->coord, coord_connected, on_msg,
                              coord_closed, n);
  if (n->coord_conn == NULL)
    uv_timer_start(&n->reconnect, retry_coord, RECONNECT_MS, 0);
  else
    n->coord_conn->count = &n->coord_net;
}

static void on_signal(uv_signal_t *h, int sig)
{
  struct node *n = h->data;
  loginfo("signal %d: stopping (unacknowledged writes are dropped)", sig);
  store_close(&n->st);
  exit(0);
}

/* ---- command line -------------------------------------------------------- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog node --az A|B|C [--id ID] [--listen ADDR] [--coord ADDR] [--data DIR]\n"
    "\n"
    "Run a storage node: it hosts segments of protection groups in lmdb,\n"
    "acknowledges each batch of redo records once it is on disk, with the\n"
    "segment's SCL, and serves pages as of a read point.\n"
    "\n"
    "  --az A|B|C     availability zone of this node (required)\n"
    "  --id ID        node name (default: AZ and port, e.g. A-7401)\n"
    "  --listen ADDR  address to serve on (default 127.0.0.1:%d)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD or %s)\n"
    "  --data DIR     where the segments live (default ./node-ID)\n",
    NODE_PORT_BASE, COORD_ADDR_DEFAULT);
}

int node_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"az", required_argument, 0, 'z'}, {"id", required_argument, 0, 'i'},
    {"listen", required_argument, 0, 'l'}, {"coord", required_argument, 0, 'c'},
    {"data", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *az = NULL, *id = NULL, *coord = NULL, *data = NULL;
  char listen[ADDR_MAX_LEN + 1];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", NODE_PORT_BASE);
  int o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'z': az = optarg; break;
    case 'i': id = optarg; break;
    case 'l': snprintf(listen, sizeof listen, "%s", optarg); break;
    case 'c': coord = optarg; break;
    case 'd': data = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("node: unexpected argument '%s' (see auralog node --help)", argv[optind]);
  if (az == NULL)
    die("node: --az A|B|C is required (see auralog node --help)");
  if (!(az[0] >= 'A' && az[0] < 'A' + NAZ && az[1] == 0))
    die("node: --az must be A, B or C, not '%s'", az);

  static struct node n;
  char why[256], idbuf[NAME_MAX_LEN + 1], databuf[512];
  struct sockaddr_in sa;
  if (addr_parse(listen, &sa, why, sizeof why) != 0)
    die("node: %s", why);
  if (id == NULL) {
    snprintf(idbuf, sizeof idbuf, "%s-%s", az, strrchr(listen, ':') + 1);
    id = idbuf;
  }
  if (!wire_name_ok(id))
    die("node: id '%s' must be 1-%d of A-Z a-z 0-9 _ . -", id, NAME_MAX_LEN);
  if (data == NULL) {
    snprintf(databuf, sizeof databuf, "./node-%s", id);
    data = databuf;
  }
  snprintf(n.id, sizeof n.id, "%s", id);
  snprintf(n.az, sizeof n.az, "%s", az);
  snprintf(n.addr, sizeof n.addr, "%s", listen);
  n.coord = addr_coord(coord);
  if (addr_parse(n.coord, &sa, why, sizeof why) != 0)
    die("node: coordinator %s", why);
  log_role(n.id);

  if (store_open(&n.st, data, why, sizeof why) != 0)
    die("node: %s", why);
  if (store_load(&n.st, add_seg, &n, why, sizeof why) != 0)
    die("node: %s", why);

  n.loop = uv_default_loop();
  /* Every conn but the coordinator's counts into n.net: the engine's and
   * peers' (gossip) traffic, which is what a benchmark weighs. */
  if (net_listen_count(n.loop, listen, on_msg, NULL, &n, &n.net, why, sizeof why) != 0)
    die("node: %s", why);
  srand((unsigned)uv_hrtime() ^ (unsigned)getpid());
  n.idx_at = IDX_BATCH * 3 / 4 + (size_t)rand() % (IDX_BATCH / 2 + 1);
  uv_check_init(n.loop, &n.commit);
  n.commit.data = &n;
  uv_check_start(&n.commit, on_commit);
  uv_timer_init(n.loop, &n.heartbeat);
  uv_timer_init(n.loop, &n.reconnect);
  n.heartbeat.data = n.reconnect.data = &n;
  uv_timer_start(&n.heartbeat, send_heartbeat, HEARTBEAT_MS, HEARTBEAT_MS);
  uv_signal_init(n.loop, &n.sigterm);
  uv_signal_init(n.loop, &n.sigint);
  n.sigterm.data = n.sigint.data = &n;
  uv_signal_start(&n.sigterm, on_signal, SIGTERM);
  uv_signal_start(&n.sigint, on_signal, SIGINT);
  signal(SIGPIPE, SIG_IGN);
  connect_coord(&n);
  gossip_start(&n);

  loginfo("node %s (AZ %s) serving on %s, data in %s, %zu segment%s", n.id, n.az,
          listen, data, n.nsegs, n.nsegs == 1 ? "" : "s");
  for (size_t i = 0; i < n.nsegs; i++)
    loginfo("  volume %llu pg %u: scl %llu, epoch %llu",
            (unsigned long long)n.segs[i]->volume_id, n.segs[i]->pg,
            (unsigned long long)n.segs[i]->scl, (unsigned long long)n.segs[i]->epoch);
  return uv_run(n.loop, UV_RUN_DEFAULT);
}
