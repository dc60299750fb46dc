/*
 * node.c: the storage node's core (paper §3.3, Fig. 4; events in node.h).
 *
 * A node hosts segments (one per protection group it belongs to) in one
 * store and does steps 1-2 of Figure 4 in the foreground:
 * receive a batch of records, persist it, acknowledge it with the
 * segment's SCL. It also serves page reads at a read point, registers with
 * the coordinator, learns its segments from it, and heartbeats their SCLs
 * and its counters (durable commits, fsyncs, frames and bytes sent and
 * received, gossip apart) for `auralog bench`.
 *
 * Group commit: every Append that arrives in one turn of the driver's loop
 * is written into one store transaction; node_end_turn (the real driver
 * calls it right after the loop polled for I/O) commits it with one sync
 * (the hot log's frame, store.c) and only then chains the records
 * (seg_add) and sends the acks. A crash before the commit loses only
 * unacknowledged records. After the acks, a checkpoint if the hot log is
 * due one.
 *
 * The records of each page are indexed in memory (store_pmap.c): a
 * record costs the commit one kv put, in LSN order.
 *
 * The decisions (is a record new, a duplicate, refused? what is the SCL?)
 * are made by node/segment.c; this file sequences them with the store. Filling
 * holes from PG peers (step 4) is node/gossip.c; truncations and a
 * recovering writer's questions are node/trunc.c. Lab faults set through
 * the coordinator are played here: a partitioned node drops the engine's
 * requests, a slow one answers them late, one told to drop N loses the
 * next N Appends that carry records (their segments then hold records
 * above a hole, for gossip to fill), one with gossip off neither asks its
 * PG peers nor answers them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bugs.h"
#include "lib/log.h"
#include "node/nbinlog.h"
#include "node/node.h"
#include "node/segment.h"
#include "node/store.h"
#include "param.h"

/* O(1) expected: a hash of (volume, pg), whatever the number of segments
 * the node hosts (every Append, page read, gossip message looks one up). */
struct segment *node_find_seg(struct node *n, uint64_t vol, uint32_t pg)
{
  uint32_t i = kmap_get(&n->segidx, vol, pg);
  return i == KMAP_NONE ? NULL : n->segs[i];
}

static void add_seg(void *arg, struct segment *s)
{
  struct node *n = arg;
  struct segment *copy = malloc(sizeof *copy);
  *copy = *s;
  /* The arrays double: grown by one per segment, an Assign of thousands
   * copied them thousands of times (seconds without a heartbeat). */
  if (n->nsegs == n->capsegs) {
    n->capsegs = n->capsegs ? 2 * n->capsegs : 64;
    n->segs = realloc(n->segs, n->capsegs * sizeof *n->segs);
    n->sx = realloc(n->sx, n->capsegs * sizeof *n->sx);
    n->dirty = realloc(n->dirty, n->capsegs * sizeof *n->dirty);
  }
  memset(&n->sx[n->nsegs], 0, sizeof *n->sx);
  kmap_put(&n->segidx, copy->volume_id, copy->pg, (uint32_t)n->nsegs);
  n->segs[n->nsegs++] = copy;
}

/* s's index in segs (every segment the core handles is there). */
static size_t seg_index(struct node *n, const struct segment *s)
{
  uint32_t i = kmap_get(&n->segidx, s->volume_id, s->pg);
  if (i != KMAP_NONE && n->segs[i] == s)
    return i;
  for (size_t j = 0; j < n->nsegs; j++)
    if (n->segs[j] == s)
      return j;
  abort();                  /* not a hosted segment: a bug, not an input */
}

/* O(1): a mark beside the segment, not a search of the turn's list. */
void node_mark_dirty(struct node *n, struct segment *s)
{
  struct segx *x = &n->sx[seg_index(n, s)];
  if (x->dirty)
    return;
  x->dirty = 1;
  n->dirty[n->ndirty++] = s;
}

int node_staged_recs(struct node *n, const struct segment *s)
{
  return n->sx[seg_index(n, s)].staged;
}

/* The turn's SegMeta rewrites are done (or lost): empty the list. A
 * segment with records staged is on it (node_stage marks it dirty), so
 * its `staged` mark goes too. */
static void dirty_clear(struct node *n)
{
  for (size_t i = 0; i < n->ndirty; i++) {
    struct segx *x = &n->sx[seg_index(n, n->dirty[i])];
    x->dirty = x->staged = 0;
  }
  n->ndirty = 0;
}

struct segment *node_seg_for(struct node *n, struct ep *c, uint64_t req,
                               uint64_t vol, uint32_t pg)
{
  struct segment *s = node_find_seg(n, vol, pg);
  if (s == NULL) {
    char why[160];
    snprintf(why, sizeof why, "node %s hosts no segment of volume %llu pg %u",
             n->id, (unsigned long long)vol, pg);
    io_error(n->io, c, req, ERR_UNKNOWN_SEGMENT, why);
  }
  return s;
}

/* ---- the write path: stage, then commit once per loop turn --------------- */

/* ---- replies, late on purpose for a slow node (a lab fault) --------------- */

/* Answer a writer's request: at once, or slow_ms later on a slow node (the
 * outlier of paper §2.1 that a 4/6 quorum hides). */
void node_reply(struct node *n, struct ep *c, const Env *env)
{
  if (n->slow_ms == 0)
    io_send(n->io, c, env);
  else
    n->io->send_late(n->io->ctx, c, env, n->slow_ms);
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
    io_error(n->io, n->acks[i].c, n->acks[i].req, code, why);
    n->io->release(n->io->ctx, n->acks[i].c);
  }
  n->nacks = n->nlinks = 0;
  n->fenced = n->quiet = n->quiet_truncs = 0;
  dirty_clear(n);
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
    logwarn_rl("%s", why);
    node_rollback(n, (uint32_t)rc, why);
    if (n->st.broken && n->io->fatal)
      n->io->fatal(n->io->ctx, why);   /* store.c, H2: only a restart can tell */
    return rc;
  }
  /* Durable now (H1, store.c: the frame holding every record of this
   * transaction is fdatasynced): chain the records, then acknowledge with
   * the new SCLs. */
  for (size_t i = 0; i < n->nlinks; i++) {
    seg_add(n->links[i].s, n->links[i].lsn, n->links[i].prev);
    bg_on_record(n, n->links[i].s, n->links[i].page, n->links[i].len);
  }
  /* The acks of one commit to one writer (a segment each) go out in one
   * write: the writer reads them in one turn and sends its next batch to
   * this node once, not once per ack. */
  for (size_t i = 0; i < n->nacks; i++)
    io_cork(n->io, n->acks[i].c, 1);
  for (size_t i = 0; i < n->nacks; i++) {
    struct staged *a = &n->acks[i];
    if (a->info) {
      node_reply_info(n, a->c, a->req, a->s, a->upto, a->info == 2, a->after, a->max);
      continue;
    }
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__AppendAck ack = AURALOG__APPEND_ACK__INIT;
    ack.volume_id = a->s->volume_id;
    ack.pg = a->s->pg;
    ack.scl = a->s->scl;
    ack.added = a->added;
    ack.duplicates = a->dups;
    ack.backs_up = n->bk_io != NULL;   /* its writer then tells it the VDL when idle */
    env.req = a->req;
    env.body_case = AURALOG__ENVELOPE__BODY_APPEND_ACK;
    env.append_ack = &ack;
    node_reply(n, a->c, &env);
  }
  for (size_t i = 0; i < n->nacks; i++) {
    io_cork(n->io, n->acks[i].c, 0);
    n->io->release(n->io->ctx, n->acks[i].c);
  }
  n->nacks = n->nlinks = 0;
  dirty_clear(n);
  if (n->fenced)              /* one line a commit, not one per segment */
    loginfo("volume %llu: %zu segment%s fenced below epoch %llu",
            (unsigned long long)n->fenced_vol, n->fenced, n->fenced == 1 ? "" : "s",
            (unsigned long long)n->fenced_epoch);
  n->fenced = 0;
  /* A recovery of a thousand PGs installs its truncation on every segment,
   * most of which it cuts nothing from: one line, not a thousand. */
  if (n->quiet)
    loginfo("volume %llu: %zu segment%s installed %zu truncation%s (lowest from %llu) "
            "that cut no record", (unsigned long long)n->quiet_vol, n->quiet,
            n->quiet == 1 ? "" : "s", n->quiet_truncs, n->quiet_truncs == 1 ? "" : "s",
            (unsigned long long)n->quiet_from);
  n->quiet = n->quiet_truncs = 0;
  return 0;
}

static void send_heartbeat(struct node *n);

void node_end_turn(struct node *n)
{
  node_commit(n);
  /* Background, after this turn's acks went out: once the hot log is
   * large, or CHECKPOINT_MS after the last checkpoint, make lmdb durable
   * and start the log again (store.h), so that a restart replays at most
   * about HOTLOG_CHECKPOINT bytes, and lmdb's file on disk is at most
   * that old (what a reader of data.mdb, e.g. a test, sees). */
  unsigned long long now = io_now(n->io);
  /* A node busy turn after turn (hydrating a segment: member.h M2) may
   * run its heartbeat timer late; silent past REPAIR_AFTER_MS it would be
   * taken for lost and its segments moved (M7), its own moves undone. So
   * a heartbeat two periods late goes out here, before the background
   * work (a checkpoint of what hydration brought can take a while). */
  if (n->hb_sent_at && now - n->hb_sent_at >= 2 * HEARTBEAT_MS)
    send_heartbeat(n);
  if (store_checkpoint_due(&n->st) ||
      (now >= n->ckpt_at + CHECKPOINT_MS && store_pending(&n->st))) {
    char why[256];
    n->ckpt_at = now;
    if (store_checkpoint(&n->st, why, sizeof why) != 0) {
      logwarn_rl("%s", why);
      if (n->st.broken && n->io->fatal)
        n->io->fatal(n->io->ctx, why);   /* store_checkpoint: only a restart can tell */
      return;
    }
  }
  bg_work(n);
  /* Segments a push moved and that are still behind pull again now, not
   * a GOSSIP_MS later (within the hydration budget, gossip.c). */
  if (n->gossip_again)
    gossip_hurry(n);
}

static void on_append(struct node *n, struct ep *c, uint64_t req,
                      const Auralog__Append *a)
{
  char why[256];
  struct segment *s = node_seg_for(n, c, req, a->volume_id, a->pg);
  if (s == NULL)
    return;
  if (a->epoch < s->epoch && !PLANTED(BUG_NO_FENCE)) {
    seg_epoch(s, a->epoch, why, sizeof why);   /* only words the refusal */
    io_error(n->io, c, req, ERR_STALE_EPOCH, why);
    return;
  }
  /* M5 (member.h): a writer on a membership epoch below mepoch_min counts
   * a member the coordinator took out: refused before anything is stored. */
  if (node_mepoch_ok(n, s, a->mepoch, "writer", why, sizeof why) != ERR_NONE) {
    io_error(n->io, c, req, ERR_STALE_MEMBERSHIP, why);
    return;
  }
  /* The writer's own truncation first: records it wrote may only chain
   * onto what its recovery kept (a segment that missed that recovery may
   * still hold records it cut). It stands whatever becomes of the batch:
   * it is the writer's, whose epoch is current. */
  int arc = node_epoch_auth(n, s, a->epoch, a->ticket, why, sizeof why);
  if (arc != ERR_NONE) {
    io_error(n->io, c, req, (uint32_t)arc, why);
    return;
  }
  if (a->trunc) {
    /* The older ones it may rest on first (Append.before; those refused
     * are skipped: the writer's own is what it answers for), then its own
     * (trunc.c, the bound). */
    int rc = node_truncate_pb(n, s, a->before, a->n_before, TP_EARLIER, why, sizeof why);
    if (rc == 0)
      rc = node_truncate_pb(n, s, &a->trunc, 1, TP_WRITER, why, sizeof why);
    if (rc != 0) {
      io_error(n->io, c, req, (uint32_t)rc, why);
      return;
    }
  }
  uint32_t added, dups;
  int rc = node_stage(n, s, a->records, a->n_records, 1, &added, &dups, why, sizeof why);
  if (rc != ERR_NONE) {
    io_error(n->io, c, req, (uint32_t)rc, why);  /* refused: nothing changed */
    return;
  }
  s->from_writer += added;
  /* Accepted: a newer epoch fences older writers from now on, and the
   * writer's VDL is a point recovery may start from (§4.3), heard from its
   * epoch: no truncation of a newer one may start below it (segment.c
   * seg_trunc_ok). All are written with this turn's commit. */
  int heard = seg_heard_note(s, a->epoch, a->vdl);
  if (a->epoch > s->epoch || a->vdl > s->vdl || heard) {
    seg_epoch(s, a->epoch, why, sizeof why);
    if (a->vdl > s->vdl)
      s->vdl = a->vdl;
    node_mark_dirty(n, s);
  }
  /* The writer's minimum read point (memory only: a restarted node waits
   * for the next Append before it frees anything, bg.c). */
  if (a->pgmrpl > s->pgmrpl)
    s->pgmrpl = a->pgmrpl;
  if (a->pgmrpl_tail > s->pgmrpl_tail)   /* 0: the writer could not say */
    s->pgmrpl_tail = a->pgmrpl_tail;
  if (a->vdl_known && a->epoch == s->epoch)
    nbk_on_vdl(n, s, a->vdl, a->vdl_tail);   /* what may be staged to the backup */
  if (seg_is_binlog(s) && a->vdl_known && a->epoch == s->epoch && a->vdl > s->bl_vdl &&
      a->vdl_tail <= a->vdl) {
    s->bl_vdl = a->vdl;       /* what consumers may read (nbinlog.c D1) */
    s->bl_tail = a->vdl_tail;
  }
  node_defer(n, (struct staged){c, req, s, added, dups, 0, 0});
}

void node_defer(struct node *n, struct staged a)
{
  if (n->nacks == n->capacks) {
    n->capacks = n->capacks ? 2 * n->capacks : 64;
    n->acks = realloc(n->acks, n->capacks * sizeof *n->acks);
  }
  n->io->hold(n->io->ctx, a.c);
  n->acks[n->nacks++] = a;
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
  /* Can a record seg_admit calls new be on disk, whole, already? Only if
   * this transaction staged it (every whole record committed is chained
   * or pending: segment.h), so only if it staged records of s before this
   * batch, or the batch names an LSN twice (its LSNs do not rise). Else
   * no lookup: one per record was a tenth of a busy node's store work. */
  int look = node_staged_recs(n, s);
  for (size_t i = 1; i < cnt && !look; i++)
    look = recs[i]->lsn <= recs[i - 1]->lsn;
  for (size_t i = 0; i < cnt; i++) {
    const Rec *r = recs[i];
    uint64_t held_epoch;
    /* New to the segment, but staged already this turn (an engine's
     * resend, or a gossip push beside the Append): seg_admit cannot tell,
     * as the turn's records are chained only at commit. A duplicate: not
     * linked, counted or acknowledged as added twice. Only a whole copy
     * counts: a damaged one left on disk (rechain skips it) is what this
     * good copy must replace (simulator, seeds 307 and 644). */
    if (fate[i] == 0 && look && store_held_whole(&n->st, s, r->lsn)) {
      fate[i] = 1;
      (*dups)++;
    }
    /* A record held with an older epoch, sent again with a newer one, was
     * adopted by a recovery (record.h, rule T): store the adopted copy, so
     * that no older truncation can cut it here. Its chain is unchanged. */
    if (fate[i] == 1 && store_held(&n->st, s, r->lsn, &held_epoch) &&
        held_epoch < r->epoch) {
      if ((rc = store_put_rec(&n->st, s, r, why, whylen)) != 0)
        goto lost;
      node_mark_dirty(n, s);
      n->sx[seg_index(n, s)].staged = 1;
      continue;
    }
    if (fate[i])
      continue;
    if ((rc = store_put_rec(&n->st, s, r, why, whylen)) != 0)
      goto lost;
    n->sx[seg_index(n, s)].staged = 1;     /* on the dirty list below */
    if (n->nlinks == n->caplinks) {
      n->caplinks = n->caplinks ? 2 * n->caplinks : 1024;
      n->links = realloc(n->links, n->caplinks * sizeof *n->links);
    }
    n->links[n->nlinks++] = (struct link){s, r->lsn, r->prev_lsn, r->page_no,
                                          (uint32_t)n->st.last_put_len};
    (*added)++;
  }
  free(fate);
  if (*added)
    node_mark_dirty(n, s);
  return 0;
lost:
  /* The whole open transaction is lost: fail everything staged in it. */
  free(fate);
  logwarn_rl("%s", why);
  node_mark_dirty(n, s);
  node_rollback(n, (uint32_t)rc, why);
  return rc;
}

/* ---- the read path ------------------------------------------------------- */

static void on_read_page(struct node *n, struct ep *c, uint64_t req,
                         const Auralog__ReadPage *rp)
{
  char why[256];
  struct segment *s = node_seg_for(n, c, req, rp->volume_id, rp->pg);
  if (s == NULL)
    return;
  if (rp->page_no < s->first_page || rp->page_no - s->first_page >= s->npages ||
      seg_is_binlog(s)) {
    snprintf(why, sizeof why, "page %u is not in pg %u", rp->page_no, s->pg);
    io_error(n->io, c, req, ERR_OUT_OF_RANGE, why);
    return;
  }
  /* A reader of an older epoch has been replaced: it must stop serving. */
  if (rp->epoch && rp->epoch < s->epoch) {
    seg_epoch(s, rp->epoch, why, sizeof why);
    io_error(n->io, c, req, ERR_STALE_EPOCH, why);
    return;
  }
  /* A segment that has not installed the writer's truncation may hold
   * records it cut: it does not answer for that writer. One that holds
   * no record above the truncation's start holds none it cuts, and
   * answers: a PG the volume grew after the recovery, and never written
   * since, hears the truncation with its first Append only, and its pages
   * (zeros) were refused by every segment for ever (it_scale, a 64 GiB
   * volume whose first recovery truncated: the read of a page between). */
  if (rp->trunc && rp->trunc->to > rp->trunc->from && s->max_lsn > rp->trunc->from &&
      !seg_has_trunc(s, rp->trunc->epoch, rp->trunc->from, rp->trunc->to)) {
    snprintf(why, sizeof why, "segment on node %s has not seen the truncation of "
             "epoch %llu: try another segment", n->id,
             (unsigned long long)rp->trunc->epoch);
    io_error(n->io, c, req, ERR_NOT_COMPLETE, why);
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
    io_error(n->io, c, req, ERR_NOT_COMPLETE, why);
    return;
  }
  uint8_t *buf = malloc(s->page_size);
  uint64_t page_lsn = 0;
  int rc = store_read_page(&n->st, s, rp->page_no, need, buf, &page_lsn, why, sizeof why);
  /* The lab fault `stale` (a disk that silently lost the page's newest
   * record): the page as of the record before, with no error. The
   * engine's page LSN check must refuse it (vfs/pagelsn.h). */
  if (rc == 0 && n->stale && page_lsn > 0)
    rc = store_read_page(&n->st, s, rp->page_no, page_lsn - 1, buf, &page_lsn, why, sizeof why);
  bg_on_read(n, s, rp->page_no);
  if (rc != 0) {
    io_error(n->io, c, req, (uint32_t)rc, why);
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

static void on_assign(struct node *n, const Auralog__Assign *as)
{
  char why[256];
  n->assigned = 1;
  if (as->coord_pk.len == AUTH_PK_BYTES) {
    memcpy(n->coord_pk, as->coord_pk.data, AUTH_PK_BYTES);
    n->have_coord_pk = 1;
  }
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
    loginfo("now hosting volume %llu pg %u (pages %u..%u)%s",
            (unsigned long long)d->volume_id, d->pg, d->first_page,
            d->first_page + d->npages - 1, d->next ? " as an incoming segment: it takes "
            "new writes and fills from its peers (member.h M2)" : "");
  }
  /* Membership epochs, and M6: what the Assign no longer lists goes. */
  node_member_assign(n, as);
  gossip_learn(n, as);
  nbl_on_assign(n, as);      /* binlog keep points (nbinlog.c) */
}

static void on_faults(struct node *n, const Auralog__NodeFaults *f)
{
  if (f->partitioned != n->partitioned || f->slow_ms != n->slow_ms || f->stale != n->stale ||
      f->no_gossip != n->no_gossip)
    loginfo("lab fault: %s, %s%s%s", f->partitioned ? "partitioned from the engine and "
            "other AZs" : "not partitioned", f->slow_ms ? "slow" : "not slow",
            f->stale ? ", serves pages without their newest record" : "",
            f->no_gossip ? ", gossip off" : "");
  n->partitions += f->partitioned && !n->partitioned;   /* lab evidence: counted by the node */
  n->partitioned = f->partitioned;
  n->slow_ms = f->slow_ms;
  n->stale = f->stale;
  n->no_gossip = f->no_gossip;
  if (f->drop) {
    loginfo("lab fault: the next %u Appends with records are lost", f->drop);
    n->drop = f->drop;
  }
}

void node_on_msg(struct node *n, struct ep *c, const Env *env)
{
  if (gossip_on_msg(n, c, env))
    return;                 /* a peer's answer to our pull */
  /* A partitioned node hears nothing from the engine: as if the network
   * dropped it (no answer, not even an error). */
  if (n->partitioned && c != n->coord_conn &&
      (env->body_case == AURALOG__ENVELOPE__BODY_APPEND ||
       env->body_case == AURALOG__ENVELOPE__BODY_READ_PAGE ||
       env->body_case == AURALOG__ENVELOPE__BODY_SEG_QUERY ||
       env->body_case == AURALOG__ENVELOPE__BODY_TRUNCATE))
    return;
  /* The lab fault drop: this Append is lost on the way (no answer). The
   * writer's quorum goes on with the other five; once the records are
   * durable it never sends them again, so the segment holds the later
   * ones above a hole (max_lsn > scl) until its PG peers fill it. */
  if (n->drop > 0 && c != n->coord_conn && env->body_case == AURALOG__ENVELOPE__BODY_APPEND &&
      env->append->n_records > 0) {
    n->drop--;
    loginfo("lab fault: lost an Append of volume %llu pg %u (%zu records, lsn %llu..%llu)",
            (unsigned long long)env->append->volume_id, env->append->pg,
            env->append->n_records, (unsigned long long)env->append->records[0]->lsn,
            (unsigned long long)env->append->records[env->append->n_records - 1]->lsn);
    return;
  }
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
      io_error(n->io, c, env->req, ERR_BAD_MSG, "only the coordinator assigns segments");
    break;
  case AURALOG__ENVELOPE__BODY_NODE_FAULTS:
    if (c == n->coord_conn)
      on_faults(n, env->node_faults);
    break;
  case AURALOG__ENVELOPE__BODY_GOSSIP_PULL:
    gossip_on_pull(n, c, env->req, env->gossip_pull);
    break;
  case AURALOG__ENVELOPE__BODY_BINLOG_READ:
    nbl_on_read(n, c, env->req, env->binlog_read);
    break;
  case AURALOG__ENVELOPE__BODY_ERROR:
    if (c == n->coord_conn && env->req == 1) {
      /* The coordinator refused our registration: a configuration error
       * (an id registered in another AZ). Nothing to retry. */
      char why[512];
      snprintf(why, sizeof why, "coordinator refused node %s: %s", n->id,
               env->error->msg);
      if (n->io->fatal)
        n->io->fatal(n->io->ctx, why);
      return;
    }
    if (env->error->msg[0])
      logwarn_rl("%s", env->error->msg);
    break;                  /* never answer an error with an error */
  default:
    io_error(n->io, c, env->req, ERR_BAD_MSG, "a storage node does not serve this request");
  }
}

/* The stats a heartbeat carries of s that cost O(1) to read (bg_stat's
 * unmaterialized and damaged counts cost O(pages)). */
static void stat_cheap(struct node *n, const struct segment *s, Auralog__SegStat *st)
{
  auralog__seg_stat__init(st);
  st->volume_id = s->volume_id;
  st->pg = s->pg;
  st->scl = s->scl;
  st->max_lsn = s->max_lsn;
  st->epoch = s->epoch;
  st->records = s->nrecs;
  st->bytes = s->bytes;
  st->pgmrpl = s->pgmrpl;
  st->gc_lsn = s->gc_lsn;
  st->images = s->nimgs;
  st->oldest_image = s->oldest_img;
  st->hydrating = node_hydrating(n, s);
  st->pulled = s->pulled;
  st->mepoch = s->mepoch;
  st->from_writer = s->from_writer;
  st->from_peers = s->from_peers;
}

static int stat_eq(const Auralog__SegStat *a, const Auralog__SegStat *b, int cheap)
{
  return a->volume_id == b->volume_id && a->pg == b->pg && a->scl == b->scl &&
         a->max_lsn == b->max_lsn && a->epoch == b->epoch && a->records == b->records &&
         a->bytes == b->bytes && a->pgmrpl == b->pgmrpl && a->gc_lsn == b->gc_lsn &&
         a->images == b->images && a->oldest_image == b->oldest_image &&
         a->hydrating == b->hydrating && a->pulled == b->pulled && a->mepoch == b->mepoch &&
         a->from_writer == b->from_writer && a->from_peers == b->from_peers &&
         (cheap || (a->unmaterialized == b->unmaterialized && a->damaged == b->damaged));
}

/* The heartbeat (paper §5, membership): the node's counters and its
 * segments' stats. A delta: only the segments whose stats changed since
 * the heartbeat that last listed them (the coordinator keeps the others'),
 * with every HEARTBEAT_FULL-th, the first on a new coordinator link and
 * the one after a failed send whole, so a lost heartbeat is healed within
 * HEARTBEAT_FULL periods. A segment's O(pages) counts (unmaterialized,
 * damaged: bg_stat) are recomputed only when its O(1) stats moved, or the
 * node's background counters did (coalescing, damage found or repaired,
 * catch-ups: what changes them), or for a whole heartbeat. So an idle node
 * costs O(segments) cheap compares per heartbeat and sends none of them. */
static void send_heartbeat(struct node *n)
{
  if (n->coord_conn == NULL || !n->coord_up)
    return;
  n->hb_sent_at = io_now(n->io);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Heartbeat hb = AURALOG__HEARTBEAT__INIT;
  Auralog__SegStat *stats = calloc(n->nsegs + 1, sizeof *stats);
  Auralog__SegStat **ptrs = calloc(n->nsegs + 1, sizeof *ptrs);
  int whole = n->hb_whole || n->hbs % HEARTBEAT_FULL == 0;
  uint64_t bg = n->coalesced + n->damage_found + n->st.met_damage + n->repaired + n->catchups;
  int recount = whole || bg != n->hb_bg;
  size_t k = 0;
  for (size_t i = 0; i < n->nsegs; i++) {
    struct segx *x = &n->sx[i];
    Auralog__SegStat *st = &stats[k];
    stat_cheap(n, n->segs[i], st);
    if (!recount && x->hb_sent && stat_eq(st, &x->hb, 1))
      continue;               /* nothing that bg_stat counts moved either */
    bg_stat(n, n->segs[i], st);
    if (!whole && x->hb_sent && stat_eq(st, &x->hb, 0))
      continue;
    x->hb = *st;
    x->hb_sent = 1;
    ptrs[k++] = st;
  }
  static const struct net_count none;
  const struct net_count *net = n->net ? n->net : &none;
  const struct net_count *cn = n->coord_net ? n->coord_net : &none;
  hb.id = n->id;
  hb.segs = ptrs;
  hb.n_segs = k;
  hb.delta = !whole;
  hb.commits = n->st.commits;
  hb.fsyncs = n->st.fsyncs;
  hb.persist_us = n->st.persist_us;
  hb.gossip_bytes = n->gossip_bytes;
  hb.gossip_msgs = n->gossip_msgs;
  hb.net_bytes_in = net->bytes_in;
  hb.net_msgs_in = net->msgs_in;
  hb.net_bytes_out = net->bytes_out;
  hb.net_msgs_out = net->msgs_out;
  hb.coord_bytes = cn->bytes_in + cn->bytes_out;
  hb.coord_msgs = cn->msgs_in + cn->msgs_out;
  hb.coalesced = n->coalesced;
  hb.gc_records = n->gc_records;
  hb.gc_images = n->gc_images;
  hb.scrubbed = n->scrubbed;
  hb.damage_found = n->damage_found + n->st.met_damage;
  hb.repaired = n->repaired;
  hb.max_apply = n->max_apply;
  hb.partitions = n->partitions;
  hb.started_ms = n->started_ms;
  hb.truncs_refused = n->truncs_refused + n->st.truncs_refused;
  n->max_apply = 0;         /* "lately": since the last heartbeat */
  env.body_case = AURALOG__ENVELOPE__BODY_HEARTBEAT;
  env.heartbeat = &hb;
  n->hb_whole = io_send(n->io, n->coord_conn, &env) != 0;
  n->hbs++;
  n->hb_bg = bg;
  free(stats);
  free(ptrs);
}

static void connect_coord(struct node *n)
{
  n->coord_up = 0;
  n->coord_conn = n->io->connect(n->io->ctx, n->coord);
  if (n->coord_conn == NULL)
    n->coord_retry_at = io_now(n->io) + RECONNECT_MS;
  else if (n->io->count_as)
    n->io->count_as(n->io->ctx, n->coord_conn, IO_COUNT_COORD);
}

static void send_register(struct node *n);

void node_heartbeat(struct node *n)
{
  if (n->coord_conn == NULL && io_now(n->io) >= n->coord_retry_at)
    connect_coord(n);
  if (n->coord_conn && n->coord_up && !n->assigned &&
      io_now(n->io) - n->registered_at >= REGISTER_RETRY_MS)
    send_register(n);
  send_heartbeat(n);
}

/* Register (again): until the coordinator's Assign comes back, the node
 * cannot check an epoch's ticket or a truncation's signature (it learns
 * the coordinator's key from the Assign), so a Register or an Assign lost
 * on a connection that stays up (a partition that drops frames) is sent
 * again every REGISTER_RETRY_MS (node_heartbeat). */
static void send_register(struct node *n)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Register reg = AURALOG__REGISTER__INIT;
  reg.id = n->id;
  reg.az = n->az;
  reg.addr = n->addr;
  /* Who it is: the key of its data directory, signing where it serves. */
  uint8_t sig[AUTH_SIG_BYTES];
  auth_id_sign(&n->ident, n->id, n->az, n->addr, sig);
  reg.id_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, n->ident.pk};
  reg.id_sig = (ProtobufCBinaryData){sizeof sig, sig};
  env.body_case = AURALOG__ENVELOPE__BODY_REGISTER;
  env.register_ = &reg;
  env.req = 1;
  io_send(n->io, n->coord_conn, &env);
  n->registered_at = io_now(n->io);
}

void node_on_up(struct node *n, struct ep *c)
{
  if (gossip_on_up(n, c) || c != n->coord_conn)
    return;
  n->coord_up = 1;
  n->assigned = 0;
  n->hb_whole = 1;          /* a new link: the coordinator may know nothing */
  send_register(n);
  loginfo("registered with coordinator %s", n->coord);
  send_heartbeat(n);
}

void node_on_down(struct node *n, struct ep *c)
{
  if (gossip_on_down(n, c) || c != n->coord_conn)
    return;
  n->coord_conn = NULL;
  n->coord_up = 0;
  n->coord_retry_at = io_now(n->io) + RECONNECT_MS;
}

int node_init(struct node *n, const struct io *io, const char *id, const char *az,
              const char *addr, const char *coord, struct net_count *net,
              struct net_count *coord_net, char *why, size_t whylen)
{
  n->io = io;
  snprintf(n->id, sizeof n->id, "%s", id);
  snprintf(n->az, sizeof n->az, "%s", az);
  snprintf(n->addr, sizeof n->addr, "%s", addr);
  n->coord = coord;
  n->net = net;
  n->coord_net = coord_net;
  if (store_load(&n->st, add_seg, n, why, whylen) != 0)
    return -1;
  connect_coord(n);
  return 0;
}

/* Memory only: the simulator drops a crashed node (its driver closes the
 * store and the endpoints). What was staged and not committed is lost,
 * as a crash loses it. */
void node_free(struct node *n)
{
  for (size_t i = 0; i < n->nacks; i++)
    n->io->release(n->io->ctx, n->acks[i].c);
  for (size_t i = 0; i < n->nsegs; i++) {
    seg_free(n->segs[i]);
    free(n->segs[i]);
  }
  free(n->segs);
  free(n->sx);
  kmap_free(&n->segidx);
  free(n->dirty);
  free(n->acks);
  free(n->links);
  free(n->coq);
  free(n->checked);
  gossip_free(n);
  nbl_free(n);
}
