/*
 * trunc.c: truncations on a storage node, and a recovering writer's
 * questions (paper §4.3; the rule they keep is rule T in record.h).
 *
 * A recovering writer asks every segment for its state (SegQuery: this
 * fences older writers, durably, before the answer), then scans it (a
 * SegQuery with scan set: install every truncation the recovery learned,
 * then answer the tail at its durable point and the records above it, a
 * page at a time), then sends its own truncation with the records it
 * adopts (an Append, node.c). A Truncate installs one truncation directly.
 *
 * Invariants kept here:
 *  - a truncation runs in a transaction that staged no record of its
 *    segment before it (what was staged commits first otherwise), and
 *    rechains the segment from disk: the SCL in memory never counts a
 *    record the disk lost; the truncations of many segments (a recovery's,
 *    one turn's) share one such transaction, answered at its commit;
 *  - before it, the store checkpoints (lmdb synced, the hot log started
 *    again), or the transaction it joins began with the hot log empty,
 *    and its transaction is synced in lmdb: no hot-log frame older than
 *    a truncation is ever replayed after it (store.c, H3);
 *  - it deletes exactly what rule T cuts (older epochs' records in its
 *    range), so a truncation heard late, by gossip or a scan, never cuts
 *    a newer writer's records;
 *  - every truncation, on every path (a Truncate, an Append, a scan,
 *    gossip; the store's load and replay check the same at start), keeps
 *    the bound (segment.c seg_trunc_ok, where the argument is): it starts
 *    at or above every VDL this segment heard from older epochs' writers,
 *    and reaches at most LAL past what the segment knows. node_truncate is
 *    the one place the paths go through. Before, only a Truncate and an
 *    Append were bounded: a member with a signed epoch put (0, 2^59] in a
 *    scan, the node cut every older record above its GC point, gossip
 *    spread it to all six segments, and every acknowledged row was lost;
 *  - gossip never spreads a range its receiver refuses (a node installs,
 *    and so passes on, only what kept its own bound), and one refused
 *    range does not hold back the rest: each is checked on its own,
 *    skipped and counted if refused, and the records come after; so in a
 *    scan (the recovery applies every range it carries itself, and
 *    carries only those that keep every answering segment's bound:
 *    vfs/open.c);
 *  - a Truncate does not raise the segment's VDL hint: the writer's later
 *    Appends do, once what recovery proved is at a write quorum;
 *  - authority (auth.h): a segment raises its epoch only with the
 *    coordinator's ticket for it, and installs a truncation, however it
 *    heard of it, only with its ticket and its writer's signature. An
 *    epoch of 2^64-1 from a stranger would fence the volume for good; a
 *    forged (0, VDL] would spread by gossip and empty every segment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "lib/log.h"
#include "node/node.h"

/* Is tk, for s's volume, byte for byte the last ticket whose signature
 * held here? A recovery sends the same ticket to every segment of the
 * volume (1,000 on a node at 1,000 PGs): one signature check, not one
 * per segment (~50 us each). Only the coordinator's key could have made
 * those bytes, whoever sends them again. */
static int ticket_seen(const struct node *n, const struct segment *s,
                       const Auralog__EpochTicket *tk)
{
  const struct tk_ok *o = &n->tk_ok;
  return o->have && o->vol == s->volume_id && o->epoch == tk->epoch &&
         memcmp(o->coord_pk, n->coord_pk, AUTH_PK_BYTES) == 0 &&
         tk->writer_pk.len == AUTH_PK_BYTES && tk->sig.len == AUTH_SIG_BYTES &&
         memcmp(o->pk, tk->writer_pk.data, AUTH_PK_BYTES) == 0 &&
         memcmp(o->sig, tk->sig.data, AUTH_SIG_BYTES) == 0;
}

int node_epoch_auth(struct node *n, const struct segment *s, uint64_t epoch,
                    const Auralog__EpochTicket *tk, char *why, size_t whylen)
{
  if (epoch <= s->epoch)
    return ERR_NONE;
  if (!n->have_coord_pk) {
    snprintf(why, whylen, "cannot check epoch %llu yet: the coordinator has not "
             "answered this node", (unsigned long long)epoch);
    return ERR_UNAVAILABLE;
  }
  if (tk != NULL && tk->epoch == epoch && ticket_seen(n, s, tk))
    return ERR_NONE;
  if (tk == NULL || tk->epoch != epoch ||
      !auth_ticket_ok(n->coord_pk, s->volume_id, epoch, tk->writer_pk.data,
                      tk->writer_pk.len, tk->sig.data, tk->sig.len)) {
    snprintf(why, whylen, "epoch %llu of volume %llu was not issued by the coordinator "
             "(no valid ticket): refused", (unsigned long long)epoch,
             (unsigned long long)s->volume_id);
    return ERR_AUTH;
  }
  struct tk_ok *o = &n->tk_ok;
  o->have = 1;
  o->vol = s->volume_id;
  o->epoch = epoch;
  memcpy(o->pk, tk->writer_pk.data, AUTH_PK_BYTES);
  memcpy(o->sig, tk->sig.data, AUTH_SIG_BYTES);
  memcpy(o->coord_pk, n->coord_pk, AUTH_PK_BYTES);
  return ERR_NONE;
}

/* The set of checked truncations: where key k is, or would go. */
static size_t checked_slot(const struct node *n, const uint64_t k[4])
{
  uint64_t h = k[0] * 0x9e3779b97f4a7c15ull ^ k[1] * 0xc2b2ae3d27d4eb4full ^
               k[2] * 0x165667b19e3779f9ull ^ k[3] * 0x27d4eb2f165667c5ull;
  size_t i = (size_t)(h ^ h >> 29) & (n->capchecked - 1);
  while ((n->checked[i][0] || n->checked[i][1] || n->checked[i][2] || n->checked[i][3]) &&
         memcmp(n->checked[i], k, sizeof n->checked[i]) != 0)
    i = (i + 1) & (n->capchecked - 1);
  return i;
}

static int checked(const struct node *n, const uint64_t k[4])
{
  return n->capchecked && memcmp(n->checked[checked_slot(n, k)], k, 4 * sizeof *k) == 0;
}

static void check_done(struct node *n, const uint64_t k[4])
{
  if (2 * (n->nchecked + 1) > n->capchecked) {      /* at most half full */
    uint64_t (*old)[4] = n->checked;
    size_t oldcap = n->capchecked;
    n->capchecked = oldcap ? 2 * oldcap : 64;
    n->checked = calloc(n->capchecked, sizeof *n->checked);
    for (size_t i = 0; i < oldcap; i++)
      if (old[i][0] || old[i][1] || old[i][2] || old[i][3])
        memcpy(n->checked[checked_slot(n, old[i])], old[i], sizeof old[i]);
    free(old);
  }
  memcpy(n->checked[checked_slot(n, k)], k, 4 * sizeof *k);
  n->nchecked++;
}

int node_trunc_auth(struct node *n, const struct segment *s, const struct trunc *t,
                    char *why, size_t whylen)
{
  if (t->to <= t->from || seg_has_trunc(s, t->epoch, t->from, t->to))
    return ERR_NONE;
  /* A truncation is the same for every segment of its volume: once its
   * signatures held here, the range itself is authentic (a copy with other
   * signature bytes cuts exactly the same). */
  const uint64_t key[4] = {s->volume_id, t->epoch, t->from, t->to};
  if (checked(n, key))
    return ERR_NONE;
  if (!n->have_coord_pk) {
    snprintf(why, whylen, "cannot check a truncation yet: the coordinator has not "
             "answered this node");
    return ERR_UNAVAILABLE;
  }
  const struct trunc_proof *p = &t->proof;
  if (!p->have ||
      !auth_ticket_ok(n->coord_pk, s->volume_id, t->epoch, p->writer_pk, sizeof p->writer_pk,
                      p->ticket_sig, sizeof p->ticket_sig) ||
      !auth_trunc_ok(p->writer_pk, sizeof p->writer_pk, s->volume_id, t->epoch, t->from,
                     t->to, p->sig, sizeof p->sig)) {
    snprintf(why, whylen, "truncation (%llu, %llu] of epoch %llu is not signed by that "
             "epoch's writer: refused", (unsigned long long)t->from,
             (unsigned long long)t->to, (unsigned long long)t->epoch);
    return ERR_AUTH;
  }
  check_done(n, key);
  return ERR_NONE;
}

/* Answer with the segment's state; tail: its highest record <= upto. For
 * a scan, also the records above `after`, at most max of them. */
void node_reply_info(struct node *n, struct ep *c, uint64_t req, struct segment *s,
                     uint64_t upto, int scan, uint64_t after, size_t max)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__SegInfo si = AURALOG__SEG_INFO__INIT;
  si.volume_id = s->volume_id;
  si.pg = s->pg;
  si.scl = s->scl;
  si.max_lsn = s->max_lsn;
  si.vdl = s->vdl;
  si.tail = store_tail(&n->st, s, upto);
  si.epoch = s->epoch;
  /* The bound it keeps (segment.c seg_trunc_ok): a recovery checks what
   * it learned against every segment's (vfs/open.c). */
  uint64_t heard[2 * HEARD_MAX];
  for (size_t i = 0; i < s->nheard; i++) {
    heard[2 * i] = s->heard[i].epoch;
    heard[2 * i + 1] = s->heard[i].vdl;
  }
  si.heard = heard;
  si.n_heard = 2 * s->nheard;
  si.gc_lsn = s->gc_lsn;
  si.backs_up = n->bk_io != NULL;     /* as an AppendAck's (node.c) */
  Auralog__TruncRange *tr;
  si.n_truncs = store_truncs_pb(s, &tr, &si.truncs);
  Auralog__TruncRange *fv;
  si.n_forgot = tf_tombs_pb(s, &fv, &si.forgot);   /* held all the same (rule TF) */
  Rec **recs = NULL;
  long nrecs = 0;
  if (scan) {
    int more = 0;
    nrecs = store_above(&n->st, s, after, &recs, max, &more);
    if (nrecs < 0)
      nrecs = 0;
    si.recs = recs;
    si.n_recs = (size_t)nrecs;
    si.more = more;
  }
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_SEG_INFO;
  env.seg_info = &si;
  node_reply(n, c, &env);
  for (long i = 0; i < nrecs; i++)
    auralog__record__free_unpacked(recs[i], NULL);
  free(recs);
  free(tr);
  free(si.truncs);
  free(fv);
  free(si.forgot);
}

/* Commit what this turn staged now, rather than at the end of the turn:
 * a fence or a truncation must be durable before it is answered. */
static int flush_now(struct node *n, struct ep *c, uint64_t req)
{
  int rc = node_commit(n);
  if (rc != 0)
    io_error(n->io, c, req, (uint32_t)rc, "storage error: could not commit");
  return rc;
}

/* Raise s's epoch to epoch, durably, before answering (§4.3: asking
 * fences older writers). Returns 0, or an error already sent to c.
 *
 * defer: the caller answers with the turn's commit (node_defer), so the
 * fence is only staged, in a transaction synced in lmdb; every fence of
 * one turn then costs one commit. A recovery asks every segment of the
 * volume at once: a node hosting 1,000 of them paid 1,000 synced commits
 * for its fences alone, one after another. Otherwise (a scan, a Truncate,
 * which go on to read or cut what the fence guards) it commits now. */
static int fence(struct node *n, struct ep *c, uint64_t req, struct segment *s,
                 uint64_t epoch, const Auralog__EpochTicket *ticket, int defer)
{
  char why[256];
  uint64_t old = s->epoch;
  int rc = node_epoch_auth(n, s, epoch, ticket, why, sizeof why);
  if (rc == ERR_NONE)
    rc = seg_epoch(s, epoch, why, sizeof why);
  if (rc != ERR_NONE) {
    io_error(n->io, c, req, (uint32_t)rc, why);
    return rc;
  }
  if (s->epoch == old)
    return 0;
  if ((rc = store_begin(&n->st, why, sizeof why)) != 0) {
    s->epoch = old;
    io_error(n->io, c, req, (uint32_t)rc, why);
    return rc;
  }
  /* A fence is synced in lmdb, not carried by a hot-log frame (rare:
   * recoveries only): a damaged frame could otherwise take a fence the
   * node answered with it (store.c, H6). */
  store_sync_txn(&n->st);
  node_mark_dirty(n, s);
  n->fenced++;
  n->fenced_vol = s->volume_id;
  n->fenced_epoch = s->epoch;
  return defer ? 0 : flush_now(n, c, req);
}

void node_on_seg_query(struct node *n, struct ep *c, uint64_t req,
                         const Auralog__SegQuery *q)
{
  char why[256];
  struct segment *s = node_seg_for(n, c, req, q->volume_id, q->pg);
  if (s == NULL || fence(n, c, req, s, q->epoch, q->ticket, !q->scan) != 0)
    return;
  if (!q->scan) {
    /* With anything staged (this fence, or another of this turn, of this
     * very segment maybe: a resent query), the answer waits for it. */
    if (n->st.txn != NULL)
      node_defer(n, (struct staged){c, req, s, 0, 0, 1, s->vdl});
    else
      node_reply_info(n, c, req, s, s->vdl, 0, 0, 0);
    return;
  }
  /* A scan: first every truncation the recovery learned from the read
   * quorum, so that what follows is answered from a chain they cleaned
   * (one this segment refuses is skipped: lenient, below). They are
   * staged, and the answer waits for the turn's commit, as a fence's
   * does: every truncation the scans of one recovery bring a node in one
   * turn costs one synced commit. Each used to commit on its own: the
   * first recovery after a volume grew to 1,000 PGs paid 985 synced
   * commits a node, one after another (each new segment learned five
   * older truncations), 891 ms of a recovery that takes 250 ms after. */
  int rc = node_truncate_pb(n, s, q->truncs, q->n_truncs, TP_SCAN, why, sizeof why);
  if (rc != 0) {
    io_error(n->io, c, req, (uint32_t)rc, why);
    return;
  }
  size_t max = q->max ? q->max : RECOVERY_PAGE;
  if (n->st.txn != NULL)
    node_defer(n, (struct staged){c, req, s, 0, 0, 2, q->from, q->after, (uint32_t)max});
  else
    node_reply_info(n, c, req, s, q->from, 1, q->after, max);
}

/* Is a refused range skipped (the others go in), or the answer? A scan's
 * too: every range a scan carries, a recovery applies itself to what the
 * scan returns (vfs/recovery.c, rule T), so one this segment refuses
 * changes nothing recovery proves; refusing the whole scan for it, as
 * before, let one range that kept another segment's bound (a fenced old
 * writer's, signed, above what that segment heard) make every segment
 * refuse every recovery's scan: no writer could open again. */
static int lenient(enum trunc_path path)
{
  return path == TP_GOSSIP || path == TP_EARLIER || path == TP_SCAN;
}

/* A range node_truncate refuses: counted; from gossip or `before`, logged
 * and skipped; otherwise the first one's reason is the answer. */
struct refusal {
  struct node *n;
  struct segment *s;
  enum trunc_path path;
  char *why;
  size_t whylen;
  int any;
};

static void on_refused(void *arg, const struct trunc *t, const char *why)
{
  struct refusal *r = arg;
  (void)t;
  r->n->truncs_refused++;
  /* A range a PG peer holds, or the writer rests on, that this segment
   * cannot install: the segment and its PG disagree on what was cut
   * (bg.c maybe_catch_up). */
  if (r->path == TP_GOSSIP || r->path == TP_EARLIER)
    r->s->cut_refused_at = io_now(r->n->io);
  if (lenient(r->path))
    logwarn_rl("%s: volume %llu pg %u: %s", r->path == TP_GOSSIP ? "gossip"
               : r->path == TP_SCAN ? "scan" : "append",
               (unsigned long long)r->s->volume_id, r->s->pg, why);
  else if (!r->any++)
    snprintf(r->why, r->whylen, "%s", why);
}

int node_truncate(struct node *n, struct segment *s, const struct trunc *t, size_t nt,
                  enum trunc_path path, char *why, size_t whylen)
{
  /* Only what is new and keeps the bound, oldest epoch first (one may
   * rest on an older one of the same message). The planted bug
   * trunc-unbounded-scan (bugs.h): a scan's ranges go in unchecked, as
   * they did before the bound held on every path. */
  size_t *ord = malloc((nt + 1) * sizeof *ord);
  uint8_t *ok = malloc(nt + 1);
  struct refusal r = {n, s, path, why, whylen, 0};
  int bounded = !(path == TP_SCAN && PLANTED(BUG_TRUNC_UNBOUNDED_SCAN));
  size_t nnew = seg_trunc_pick(s, t, nt, bounded, ord, ok, on_refused, &r);
  uint64_t min_from = UINT64_MAX;
  for (size_t i = 0; i < nt; i++)
    if (ok[i] == 1 && t[i].from < min_from)
      min_from = t[i].from;
  if (nnew == 0 || (r.any && !lenient(path))) {
    free(ord);
    free(ok);
    return r.any && !lenient(path) ? ERR_CONFLICT : 0;
  }
  /* Records staged in the open transaction are chained only at its
   * commit; a truncation that deleted some of s's would leave them to be
   * chained after it, with the SCL above what the disk holds (a segment
   * then refused its new writer for good). And no hot-log frame written
   * before a truncation may be replayed after it (store.c, H3: a frame
   * may hold records it cuts). So a truncation joins the open transaction
   * only if that stages no record of s and is one that no frame will
   * carry, begun with the hot log empty (store_cut_joins: the
   * truncations of other segments a recovery sent in the same turn);
   * otherwise what is staged commits first, then the store checkpoints
   * (lmdb synced, the hot log restarted), and the truncation begins a
   * transaction of its own. Either way that transaction is synced in
   * lmdb (store_truncate makes it so), never a frame. */
  int rc = 0;
  if (!store_cut_joins(&n->st) || node_staged_recs(n, s)) {
    rc = node_commit(n);
    if (rc == 0)
      rc = store_checkpoint(&n->st, why, whylen);
    if (rc == 0)
      rc = store_begin(&n->st, why, whylen);
  }
  if (rc != 0) {
    free(ord);
    free(ok);
    return rc;
  }
  size_t cut = 0;
  for (size_t k = 0; k < nt && rc == 0; k++) {
    const struct trunc *u = &t[ord[k]];
    if (ok[ord[k]] != 1 || seg_has_trunc(s, u->epoch, u->from, u->to))
      continue;             /* refused, or the same range twice */
    size_t c1 = 0;
    rc = store_truncate(&n->st, s, u, &c1, why, whylen);
    cut += c1;
    seg_add_trunc(s, u);
  }
  free(ord);
  free(ok);
  node_mark_dirty(n, s);
  /* Chain again from the last record every truncation left alone: the
   * chain below it is untouched (records at or below the lowest `from`
   * are never cut), above it records of newer epochs may remain. */
  uint64_t base = s->scl;
  if (rc == 0 && min_from < base)
    base = store_tail(&n->st, s, min_from);
  /* Never below the GC point: what lies at or below it is in page
   * versions, its records freed, and the chain starts there (bg.c). An
   * old truncation that gossip brings may start below it; it cuts
   * nothing there (the chain holds no record a truncation cuts). */
  if (base < s->gc_lsn)
    base = s->gc_lsn;
  if (rc == 0)
    rc = store_rechain(&n->st, s, base, why, whylen);
  if (rc != 0) {
    logwarn_rl("%s", why);
    node_rollback(n, (uint32_t)rc, why);
    return rc;
  }
  /* A writer's (its Append, its Truncate) and a scan's are answered with
   * the turn's commit (node_defer): every truncation of one recovery that
   * reaches this node in one turn costs one synced commit, not a
   * checkpoint and a commit each. Gossip's are passed on at once: commit
   * now. */
  if (path != TP_WRITER && path != TP_EARLIER && path != TP_SCAN &&
      (rc = node_commit(n)) != 0)
    return rc;
  if (cut == 0 && n->st.txn) {   /* said with the commit (node_commit), with the others */
    if (n->quiet == 0 || min_from < n->quiet_from)
      n->quiet_from = min_from;
    n->quiet_vol = s->volume_id;
    n->quiet++;
    n->quiet_truncs += nnew;
    return 0;
  }
  loginfo("volume %llu pg %u: %zu truncation%s installed (lowest from %llu), %zu "
          "record%s cut, scl now %llu", (unsigned long long)s->volume_id, s->pg, nnew,
          nnew == 1 ? "" : "s", (unsigned long long)min_from, cut, cut == 1 ? "" : "s",
          (unsigned long long)s->scl);
  return 0;
}

int node_truncate_pb(struct node *n, struct segment *s, Auralog__TruncRange *const *pb,
                     size_t nt, enum trunc_path path, char *why, size_t whylen)
{
  struct trunc *t = calloc(nt + 1, sizeof *t);
  size_t k = 0;
  int rc = ERR_NONE;
  for (size_t i = 0; i < nt && rc == ERR_NONE; i++) {
    t[k] = (struct trunc){pb[i]->epoch, pb[i]->from, pb[i]->to};
    trunc_proof_from_pb(&t[k].proof, pb[i]);
    rc = node_trunc_auth(n, s, &t[k], why, whylen);
    if (rc == ERR_NONE) {
      k++;
      continue;
    }
    if (rc == ERR_UNAVAILABLE)
      break;                /* not checkable yet: nothing now, all later */
    n->truncs_refused++;
    if (lenient(path)) {      /* a bad range holds back none of the others */
      logwarn_rl("%s: volume %llu pg %u: %s", path == TP_GOSSIP ? "gossip"
                 : path == TP_SCAN ? "scan" : "append",
                 (unsigned long long)s->volume_id, s->pg, why);
      rc = ERR_NONE;
    }
  }
  if (rc == ERR_NONE)
    rc = node_truncate(n, s, t, k, path, why, whylen);
  free(t);
  return rc;
}

void node_on_truncate(struct node *n, struct ep *c, uint64_t req,
                        const Auralog__Truncate *tq)
{
  char why[256];
  struct segment *s = node_seg_for(n, c, req, tq->volume_id, tq->pg);
  if (s == NULL || fence(n, c, req, s, tq->epoch, tq->ticket, 1) != 0)
    return;
  struct trunc t = {tq->epoch, tq->from, tq->to};
  const Auralog__EpochTicket *tk = tq->ticket;
  if (tk && tk->epoch == tq->epoch && tk->writer_pk.len == AUTH_PK_BYTES &&
      tk->sig.len == AUTH_SIG_BYTES && tq->sig.len == AUTH_SIG_BYTES) {
    memcpy(t.proof.writer_pk, tk->writer_pk.data, AUTH_PK_BYTES);
    memcpy(t.proof.ticket_sig, tk->sig.data, AUTH_SIG_BYTES);
    memcpy(t.proof.sig, tq->sig.data, AUTH_SIG_BYTES);
    t.proof.have = 1;
  }
  int rc = node_trunc_auth(n, s, &t, why, sizeof why);
  if (rc == ERR_AUTH)
    n->truncs_refused++;
  if (rc == ERR_NONE)
    rc = node_truncate(n, s, &t, 1, TP_WRITER, why, sizeof why);
  if (rc != 0) {
    io_error(n->io, c, req, (uint32_t)rc, why);
    return;
  }
  /* The VDL hint is not raised here: recovery proved `from` from records
   * some of which may still be on too few segments; the writer's Appends
   * carry its VDL once they are at write quorum (vfs/open.c). Answered
   * once the truncation is durable, with the turn's commit. */
  if (n->st.txn != NULL)
    node_defer(n, (struct staged){c, req, s, 0, 0, 1, tq->from});
  else
    node_reply_info(n, c, req, s, tq->from, 0, 0, 0);
}
