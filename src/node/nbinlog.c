/*
 * nbinlog.c: the binlog's consumers on a storage node (issue 29, seed 003:
 * Aurora MySQL's "enhanced binlog" keeps the binlog on storage nodes of
 * its own; here a volume's binlog is one more protection group, pg
 * BINLOG_PG, whose six segments hold one REC_BINLOG record per committed
 * transaction: its events, packed, at its commit LSN, written in the same
 * mini-transaction as the transaction's page deltas). Such a segment is
 * stored, acknowledged, chained and gossiped like any other (node.c,
 * gossip.c) and never made into pages. This file serves its records to
 * the binlog's readers (`auralog binlog tail|apply|status`, cli/blread.c)
 * and releases the oldest of them (retention).
 *
 * Reading. A BinlogRead{volume, after, max_bytes} of a binlog segment the
 * node holds is answered with the segment's binlog records above `after`,
 * oldest first, at most about max_bytes of them (BINLOG_READ_BYTES by
 * default; at most BATCH_MAX records and half a frame), and only up to
 *     durable = the PG's last record at or below the writer's VDL, as the
 *               writer named it, once held on the segment's chain
 * (nbl_durable, D1). At or below it the segment holds every record of
 * the PG's chain; at or below a VDL every record is at write quorum and no
 * truncation may start there (node/segment.c, the bound: invariant 9), so
 * a record served is a committed transaction's and never goes away by
 * recovery (invariant 12: no truncated transaction has events). Records
 * above durable (written, not yet known to be durable) are never served:
 * the reader asks again, or asks a fresher segment. The answer also says
 * `first` (the release point: records at or below it may be gone; a
 * reader asking below it has a gap, which it must report, not skip),
 * `last` (the newest record at or below durable), the bytes held and the
 * epoch. What is served is a run of the PG's chain: each record links back
 * to the one before it, the first to at or below where the read started;
 * a record the store cannot read back (store_above skips it) ends the run
 * there, and a read that would start past one is refused ERR_NOT_COMPLETE
 * (the reader asks another segment; the scrub and gossip repair this one).
 * A node that hosts no such segment answers ERR_UNKNOWN_SEGMENT; a node
 * partitioned by a lab fault answers nothing, as to a page read.
 *
 * Who may read: any member. Every connection a node's core sees has
 * proved the cluster key (net/auth.h, the driver's handshake); within the
 * cluster, binlog records are what page reads already show (the same rows,
 * as redo), so a binlog read needs no role beyond that, like a page read
 * or `auralog status`. A consumer holds the cluster key, as every tool does.
 *
 * Retention (nbl_retain, from the background pass: bg.c). The rule, kept
 * by nbl_releases (nbl_release_count over a list) and the bound computed here:
 *   R1. A binlog segment keeps every record above its volume's keep point:
 *       the lowest position of the volume's registered consumers, which the
 *       coordinator sends with each Assign (Assign.binlog_keep; node.c
 *       on_assign calls nbl_on_assign). A volume the Assign names without a
 *       keep point has no registered consumer. Until the node has had an
 *       Assign since it started, it knows no keep point: it releases nothing.
 *   R2. It never releases above durable (D1), or above
 *       the SCL of a PG peer heard from lately (that peer may still pull
 *       those records by gossip: a binlog segment has no pages to catch up
 *       by). (The backup stages the data PGs only, nbackup.c: were it to
 *       stage the binlog PG, what it has staged would bound this too.)
 *   R3. At or below that bound it keeps the newest records that fit in
 *       BINLOG_KEEP_BYTES (bytes held by the segment in all) and whose
 *       commit time is within BINLOG_KEEP_MS of its newest durable record's
 *       (the transactions' own clock: an idle binlog is never emptied by
 *       time alone), and releases the rest, oldest first.
 *   R4. It releases a prefix of its chain only: records in LSN order from
 *       the release point, each linking back to the one before (a record
 *       that cannot be read, or is off the chain, stops it), so the chain
 *       still starts at the release point after it.
 * The release point is the segment's gc_lsn (a binlog segment makes no
 * pages, so its GC point has nothing else to say): the records at or
 * below it are deleted from the store, and gc_lsn rises to the last one
 * released, in one transaction with the segment's SegMeta (node_commit).
 * The chain then starts there, as after GC: store_held_in counts gc_lsn as
 * held, store_load chains from max(SCL hint, gc_lsn), and the next record
 * links back to it. Durable: lmdb's commit (without a hot log), or the
 * next checkpoint's kv sync (with one: deletions ride in no frame); a
 * crash before that leaves the kv as of its last commit, records and
 * gc_lsn together, so the segment is whole either way and they are
 * released again. Leftovers at or below gc_lsn (none, but for such a
 * crash) are deleted by the next pass.
 *
 * Keep points live in memory (struct nbl), learned again from the first
 * Assign after a restart. Retention limits: param.h, or
 * AURALOG_BINLOG_KEEP_BYTES / AURALOG_BINLOG_KEEP_MS in the node's
 * environment (tests and labs shrink them), read once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/nbinlog.h"
#include "node/node.h"
#include "node/store_int.h"
#include "param.h"

struct nbl_keep {
  uint64_t vol, keep;
};

struct nbl {
  int assigned;              /* an Assign came since the node started (R1) */
  struct nbl_keep *keeps;
  size_t nkeeps;
  unsigned long long at;     /* the next retention pass */
  uint64_t keep_bytes, keep_ms;
  uint64_t released;         /* records released since start (a count for logs) */
};

static uint64_t env_u64(const char *name, uint64_t dflt)
{
  const char *v = getenv(name);
  char *end = NULL;
  unsigned long long x = v && *v ? strtoull(v, &end, 10) : 0;
  return v && *v && end && *end == 0 ? (uint64_t)x : dflt;
}

static struct nbl *state(struct node *n)
{
  if (n->nbl == NULL) {
    n->nbl = calloc(1, sizeof *n->nbl);
    n->nbl->keep_bytes = env_u64("AURALOG_BINLOG_KEEP_BYTES", BINLOG_KEEP_BYTES);
    n->nbl->keep_ms = env_u64("AURALOG_BINLOG_KEEP_MS", BINLOG_KEEP_MS);
  }
  return n->nbl;
}

void nbl_free(struct node *n)
{
  if (n->nbl)
    free(n->nbl->keeps);
  free(n->nbl);
  n->nbl = NULL;
}

/* D1: a binlog segment vouches for its records up to the writer's own
 * word, as GC's own_point does (bg.c): the PG's last record at or below
 * the VDL, as the writer of the segment's epoch named it (vdl_tail), if
 * the segment holds that record on its chain (at or below its SCL). Not
 * min(SCL, VDL heard): a segment that missed a recovery may hold, at or
 * below a VDL it heard, records the recovery's truncation cut (simulator,
 * seed 7297, for pages); the writer's record decides, since the chain
 * below a record is fixed by its backlinks and no LSN is handed out
 * twice. Until the writer has told it (a restart forgets: the next Append
 * or VDL beacon tells, vtell.c), the segment vouches for nothing above
 * what it released. */
uint64_t nbl_durable(struct node *n, const struct segment *s)
{
  uint64_t t = s->bl_tail;
  if (t > s->bl_ok && t <= s->scl && (t <= s->gc_lsn || store_held(&n->st, s, t, NULL)))
    ((struct segment *)s)->bl_ok = t;    /* a memo: found held once, on the chain for good */
  return s->bl_ok > s->gc_lsn ? s->bl_ok : s->gc_lsn;
}

int nbl_keep_of(const struct node *n, uint64_t vol, uint64_t *keep)
{
  const struct nbl *b = n->nbl;
  for (size_t i = 0; b && i < b->nkeeps; i++)
    if (b->keeps[i].vol == vol) {
      *keep = b->keeps[i].keep;
      return 1;
    }
  return 0;
}

/* ---- reading ----------------------------------------------------------------- */

void nbl_on_read(struct node *n, struct ep *c, uint64_t req, const Auralog__BinlogRead *br)
{
  if (n->partitioned)
    return;                  /* a lab partition: as if the network dropped it */
  struct segment *s = node_seg_for(n, c, req, br->volume_id, BINLOG_PG);
  if (s == NULL)
    return;                  /* ERR_UNKNOWN_SEGMENT, said */
  uint64_t durable = nbl_durable(n, s);
  if (durable < s->gc_lsn)
    durable = s->gc_lsn;     /* (never: released only at or below it, R2) */
  /* Records at or below the release point are not served, even where a
   * crash left some (see the top): what is served is a run of the chain. */
  uint64_t from = br->after > s->gc_lsn ? br->after : s->gc_lsn;
  size_t max_bytes = br->max_bytes ? br->max_bytes : BINLOG_READ_BYTES;
  Rec **recs = NULL;
  long got = from < durable ? store_above_max(&n->st, s, from, &recs, BATCH_MAX, max_bytes,
                                              NULL) : 0;
  if (got < 0) {
    io_error(n->io, c, req, ERR_INTERNAL, "cannot read the binlog segment's records");
    return;
  }
  /* Keep the run that is the PG's chain, up to durable. */
  size_t keep = 0;
  uint64_t prev = 0;
  const char *cut = NULL;
  for (long i = 0; i < got; i++) {
    const Rec *r = recs[i];
    if (r->lsn > durable)
      break;
    if (!(r->flags & REC_BINLOG)) {
      cut = "holds a record that is no binlog record";
      break;
    }
    if (i == 0 ? r->prev_lsn > from : r->prev_lsn != prev) {
      cut = "cannot read back a record of its chain";
      break;
    }
    prev = r->lsn;
    keep++;
  }
  if (keep == 0 && cut) {
    char why[256];
    snprintf(why, sizeof why, "binlog segment of volume %llu on node %s %s above %llu: try "
             "another segment", (unsigned long long)s->volume_id, n->id, cut,
             (unsigned long long)from);
    io_error(n->io, c, req, ERR_NOT_COMPLETE, why);
  } else {
    Env env = AURALOG__ENVELOPE__INIT;
    Auralog__BinlogRecs br_out = AURALOG__BINLOG_RECS__INIT;
    br_out.records = recs;
    br_out.n_records = keep;
    br_out.durable = durable;
    br_out.first = s->gc_lsn;
    br_out.epoch = s->epoch;
    uint64_t last = store_tail(&n->st, s, durable);
    br_out.last = last > s->gc_lsn ? last : 0;
    br_out.bytes = s->bytes;
    env.req = req;
    env.body_case = AURALOG__ENVELOPE__BODY_BINLOG_RECS;
    env.binlog_recs = &br_out;
    io_send(n->io, c, &env);
  }
  for (long i = 0; i < got; i++)
    auralog__record__free_unpacked(recs[i], NULL);
  free(recs);
}

/* ---- keep points ------------------------------------------------------------- */

void nbl_on_assign(struct node *n, const Auralog__Assign *as)
{
  struct nbl *b = state(n);
  b->assigned = 1;
  /* An Assign speaks for the volumes it names (as for membership, M6):
   * each one's keep point is the one it carries, or none. */
  size_t k = 0;
  for (size_t i = 0; i < b->nkeeps; i++) {
    int named = 0;
    for (size_t j = 0; j < as->n_volumes && !named; j++)
      named = as->volumes[j] == b->keeps[i].vol;
    if (!named)
      b->keeps[k++] = b->keeps[i];
  }
  b->nkeeps = k;
  for (size_t j = 0; j < as->n_binlog_keep; j++) {
    const Auralog__BinlogKeep *bk = as->binlog_keep[j];
    size_t i;
    for (i = 0; i < b->nkeeps && b->keeps[i].vol != bk->volume_id; i++)
      ;
    if (i == b->nkeeps) {
      b->keeps = realloc(b->keeps, (b->nkeeps + 1) * sizeof *b->keeps);
      b->nkeeps++;
    }
    b->keeps[i] = (struct nbl_keep){bk->volume_id, bk->keep};
  }
}

/* ---- retention --------------------------------------------------------------- */

int nbl_releases(const struct nbl_cand *c, uint64_t held, uint64_t newest_ms,
                 uint64_t keep_bytes, uint64_t keep_ms)
{
  /* R3: the oldest goes while the segment holds more than keep_bytes, or
   * while it is older than keep_ms before the newest. */
  if (held > keep_bytes)
    return 1;
  return c->wall_ms && newest_ms > keep_ms && c->wall_ms < newest_ms - keep_ms;
}

size_t nbl_release_count(const struct nbl_cand *c, size_t n, uint64_t held,
                         uint64_t newest_ms, uint64_t keep_bytes, uint64_t keep_ms)
{
  size_t k = 0;
  for (; k < n && nbl_releases(&c[k], held, newest_ms, keep_bytes, keep_ms); k++)
    held -= c[k].len < held ? c[k].len : held;
  return k;
}

/* R1, R2: the highest point s may release to now (0: nothing). */
static uint64_t bound(struct node *n, const struct segment *s, unsigned long long now)
{
  uint64_t p = nbl_durable(n, s), keep;
  if (nbl_keep_of(n, s->volume_id, &keep) && keep < p)
    p = keep;
  const struct gossip *g = gossip_of(n, s->volume_id, s->pg);
  if (g == NULL)
    return 0;               /* peers not known yet: they may need everything */
  unsigned long long wait = n->gc_peer_wait_ms ? n->gc_peer_wait_ms : GC_PEER_WAIT_MS;
  for (int k = 0; k < g->npeers; k++) {
    unsigned long long at = g->peer_at[k] ? g->peer_at[k] : n->started_at;
    if (now - at < wait && g->peer_scl[k] < p)
      p = g->peer_scl[k];
  }
  /* No backup bound (invariant 11): the backup stages the data PGs, not
   * the binlog PG (nbackup.c), so none of its records is the backup's to
   * wait for; nbk_gc_bound would hold them at a point that never moves. */
  return p;
}

/* The commit time of the binlog record lsn of s (0: unknown). */
static uint64_t wall_of_rec(const Rec *r)
{
  if (r == NULL || !(r->flags & REC_BINLOG))
    return 0;
  Auralog__BinlogTxn *t = auralog__binlog_txn__unpack(NULL, r->binlog.len, r->binlog.data);
  uint64_t ms = t ? t->wall_ms : 0;
  if (t)
    auralog__binlog_txn__free_unpacked(t, NULL);
  return ms;
}

static uint64_t wall_at(struct node *n, const struct segment *s, uint64_t lsn)
{
  int owned = 0;
  const Rec *r = lsn ? store_get_rec(&n->st, s, lsn, &owned) : NULL;
  uint64_t ms = wall_of_rec(r);
  if (owned)
    auralog__record__free_unpacked((Rec *)r, NULL);
  return ms;
}

/* What one pass releases of a segment (plan), then does (release). */
struct plan {
  size_t leftovers;          /* records still stored at or below the release point */
  struct nbl_cand *c;        /* then these, a prefix of the chain above it */
  uint32_t *pages;
  size_t nc;
};

static void plan_free(struct plan *p)
{
  free(p->c);
  free(p->pages);
  memset(p, 0, sizeof *p);
}

/* Decide, through a read of the store (no write transaction is opened for
 * a segment that releases nothing), what s releases up to upto. R4: a
 * prefix of the chain from the release point, each record decided as it
 * comes (R3: the first kept ends it): only what goes is read, and a
 * record's commit time only when its bytes do not decide. Leftovers at or
 * below the release point (a crash undid an earlier release's deletions
 * but not its SegMeta? never: the two commit together; kept for a store
 * that holds some all the same) go too. Returns 0 or a kv error. */
static int plan(struct node *n, const struct segment *s, uint64_t upto, struct plan *p)
{
  struct store *st = &n->st;
  struct nbl *b = state(n);
  struct kv_txn *txn;
  struct kv_cursor *cur;
  memset(p, 0, sizeof *p);
  int rc = store_rtxn(st, &txn);
  if (rc != 0)
    return rc;
  if ((rc = kv_cursor(st->kv, txn, st->recs, &cur)) != 0) {
    store_rdone(st, txn);
    return rc;
  }
  uint8_t k[20];
  rec_key(k, s->volume_id, s->pg, 0);
  struct kv_val key = {sizeof k, k}, val;
  uint64_t held = s->bytes, newest_ms = 0, prev = s->gc_lsn;
  int newest_read = 0;
  size_t cap = 0;
  for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val);
       rc == 0 && p->nc < BINLOG_RELEASE_BATCH && p->leftovers < BINLOG_RELEASE_BATCH;
       rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len != 20 || memcmp(key.data, k, 12) != 0)
      break;
    uint64_t lsn = get_be64((uint8_t *)key.data + 12);
    if (lsn <= s->gc_lsn) {
      p->leftovers++;
      continue;
    }
    if (lsn > upto)
      break;
    Rec *r = auralog__record__unpack(NULL, val.len, val.data);
    char rwhy[160];
    int ok = r && r->lsn == lsn && rec_check(r, s->page_size, rwhy, sizeof rwhy) == ERR_NONE &&
             r->prev_lsn == prev && (r->flags & REC_BINLOG);
    struct nbl_cand cand = {lsn, val.len, 0};
    uint32_t page = ok ? r->page_no : 0;
    if (ok && held <= b->keep_bytes) {
      cand.wall_ms = wall_of_rec(r);
      if (!newest_read) {
        newest_ms = wall_at(n, s, store_tail(st, s, nbl_durable(n, s)));
        newest_read = 1;
      }
    }
    if (r)
      auralog__record__free_unpacked(r, NULL);
    if (!ok || !nbl_releases(&cand, held, newest_ms, b->keep_bytes, b->keep_ms))
      break;                 /* kept (R3), or the scrub's to deal with: nothing past it */
    if (p->nc == cap) {
      cap = cap ? 2 * cap : 256;
      p->c = realloc(p->c, cap * sizeof *p->c);
      p->pages = realloc(p->pages, cap * sizeof *p->pages);
    }
    p->pages[p->nc] = page;
    p->c[p->nc++] = cand;
    held -= cand.len < held ? cand.len : held;
    prev = lsn;
  }
  kv_cursor_close(st->kv, cur);
  store_rdone(st, txn);
  return rc == KV_NOTFOUND ? 0 : rc;
}

/* Do p on s, in the open write transaction. */
static int release(struct node *n, struct segment *s, const struct plan *p)
{
  struct store *st = &n->st;
  uint8_t k[20];
  int rc = 0;
  if (p->leftovers) {
    struct kv_cursor *cur;
    if ((rc = kv_cursor(st->kv, st->txn, st->recs, &cur)) != 0)
      return rc;
    rec_key(k, s->volume_id, s->pg, 0);
    struct kv_val key = {sizeof k, k}, val;
    for (rc = kv_cursor_get(st->kv, cur, KV_SEEK, &key, &val); rc == 0;) {
      if (key.len != 20 || memcmp(key.data, k, 12) != 0 ||
          get_be64((uint8_t *)key.data + 12) > s->gc_lsn)
        break;
      store_pmap_del(st, s->volume_id, s->pg, 0, get_be64((uint8_t *)key.data + 12));
      if ((rc = kv_cursor_del(st->kv, cur)) != 0)
        break;
      rc = kv_cursor_get(st->kv, cur, KV_NEXT, &key, &val);
    }
    kv_cursor_close(st->kv, cur);
    if (rc != 0 && rc != KV_NOTFOUND)
      return rc;
    rc = 0;
  }
  for (size_t i = 0; i < p->nc && rc == 0; i++) {
    rec_key(k, s->volume_id, s->pg, p->c[i].lsn);
    struct kv_val rkey = {sizeof k, k};
    store_pmap_del(st, s->volume_id, s->pg, p->pages[i], p->c[i].lsn);
    rc = kv_del(st->kv, st->txn, st->recs, &rkey);
    s->nrecs -= s->nrecs > 0;
    s->bytes -= s->bytes >= p->c[i].len ? p->c[i].len : s->bytes;
  }
  if (rc == 0 && p->nc > 0)
    s->gc_lsn = p->c[p->nc - 1].lsn;   /* the chain starts here now (R4) */
  return rc;
}

int nbl_retain(struct node *n)
{
  struct nbl *b = state(n);
  unsigned long long now = io_now(n->io);
  if (!b->assigned || n->no_gc || now < b->at || n->st.txn != NULL)
    return 0;
  b->at = now + BINLOG_RETAIN_MS;
  char why[256];
  int opened = 0;
  for (size_t j = 0; j < n->nsegs; j++) {
    struct segment *s = n->segs[j];
    if (!seg_is_binlog(s) || s->catchup)
      continue;
    uint64_t upto = bound(n, s, now);
    if (upto <= s->gc_lsn)
      continue;
    struct plan p;
    int rc = plan(n, s, upto, &p);
    if (rc == 0 && p.nc == 0 && p.leftovers == 0)
      continue;              /* nothing goes: no transaction */
    if (rc == 0 && !opened && (rc = store_begin(&n->st, why, sizeof why)) != 0) {
      plan_free(&p);
      logwarn_rl("%s", why);
      return -1;
    }
    opened = 1;
    uint64_t from = s->gc_lsn;
    if (rc == 0)
      rc = release(n, s, &p);
    if (rc != 0) {
      plan_free(&p);
      rc = store_fail(&n->st, rc, why, sizeof why, "releasing binlog records");
      logwarn_rl("%s", why);
      node_mark_dirty(n, s);
      node_rollback(n, (uint32_t)rc, why);
      return -1;
    }
    node_mark_dirty(n, s);
    if (p.nc) {
      b->released += p.nc;
      loginfo_rl("binlog of volume %llu: released %zu record%s (%llu..%llu; retention keeps "
                 "what consumers have not read and the newest %llu bytes)",
                 (unsigned long long)s->volume_id, p.nc, p.nc == 1 ? "" : "s",
                 (unsigned long long)from + 1, (unsigned long long)s->gc_lsn,
                 (unsigned long long)b->keep_bytes);
    }
    plan_free(&p);
  }
  return opened ? node_commit(n) : 0;
}
