/*
 * blread.c: reading the volume's binlog as a consumer (blread.h; issue 29,
 * seed 003's "consumers resume exactly from a position").
 *
 * Where: the coordinator's Status names the volume and its binlog PG
 * (Volume.binlog: six segments, placed as a data PG's); each segment's
 * node answers BinlogRead (node/nbinlog.c) with its binlog records above a
 * commit LSN, up to the point it vouches for (durable: min(its SCL, the
 * VDL it heard)). Any segment's records at or below its own durable end
 * are the volume's committed transactions exactly, so a reader may take
 * each batch from whichever segment answers, and move between them freely:
 * positions are LSNs, the same on every segment.
 *
 * Which: the segment that answered last is asked first (pref). If it does
 * not answer, has nothing new, reports a gap, or its answer does not hold
 * (below), the others are asked, and the first with records wins; a
 * segment behind its peers (its durable end lower) has nothing new, so a
 * fresher one is found. When the preferred one has nothing new, the others
 * are asked at most once a second (a reader that follows an idle volume
 * costs its node one small request per poll, not six).
 *
 * What makes a batch exact (checked here, whatever the node says):
 *   E1. No gap: asked for what follows `after`, an answer whose release
 *       point (first) is above after is a gap (retention released what this
 *       reader never read): reported, naming both positions, never skipped,
 *       unless another segment still holds them. The first record links
 *       back (prev_lsn) to at or below where the read starts, and each next
 *       one to the one before it: the PG's chain, with nothing missing in
 *       between (a segment that cannot read a record back would otherwise
 *       skip it).
 *   E2. No duplicate: only records above `after`, in rising LSN order
 *       (wire.c checks that of every BinlogRecs).
 *   E3. No truncated transaction: a record that one of the volume's
 *       truncations cuts (rule T, record.h: in its range, of an older
 *       epoch) is a transaction recovery took away; a segment that still
 *       serves one missed that recovery: its answer is refused, another
 *       segment is asked. (The coordinator's Volume lists the truncations
 *       the writers reported; the node's durable end already keeps every
 *       record a future truncation could cut out of an answer.)
 *   E4. Every record's events unpack: a record that does not is refused
 *       with its answer.
 * The volume (its segments, its truncations) is asked again every few
 * seconds, and when no segment answers: segments move on repair.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/blread.h"
#include "vfs/blfile.h"
#include "cli/status.h"
#include "lib/log.h"

#define SEG_OPEN_MS    1000     /* connecting to a segment's node gives up after this */
#define SEG_CALL_MS    3000     /* ... and a read of it */
#define SEG_RETRY_MS   1000     /* a node that failed is asked again after this */
#define SWEEP_MS       1000     /* the other segments, when the preferred has nothing new */
#define REOPEN_MS      5000     /* the volume's segments and truncations, asked again */

uint64_t bl_wall_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int blpos_parse(const char *s, struct blpos *p, char *why, size_t whylen)
{
  const char *c = s;
  unsigned long long lsn = 0, idx = 0;
  int digits = 0;
  for (; *c >= '0' && *c <= '9' && digits < 20; c++, digits++)
    lsn = lsn * 10 + (unsigned long long)(*c - '0');
  int ok = digits > 0 && lsn <= LSN_MAX;
  p->lsn = lsn;
  p->index = -1;
  if (ok && *c == ':') {
    int d2 = 0;
    for (c++; *c >= '0' && *c <= '9' && d2 < 11; c++, d2++)
      idx = idx * 10 + (unsigned long long)(*c - '0');
    ok = d2 > 0 && idx <= 0xffffffffull;
    p->index = (int64_t)idx;
  }
  if (!ok || *c != 0) {
    snprintf(why, whylen, "'%s' is not a binlog position: LSN (after the transaction "
             "committed at LSN) or LSN:INDEX (after that event of it)", s);
    return -1;
  }
  return 0;
}

/* ---- the volume ------------------------------------------------------------- */

static void seg_shut(struct blseg *g)
{
  if (g->open)
    rpc_close(&g->r);
  g->open = 0;
}

void bl_close(struct blsrc *b)
{
  for (int i = 0; i < b->nseg; i++)
    seg_shut(&b->seg[i]);
  b->nseg = 0;
  free(b->truncs);
  b->truncs = NULL;
  b->ntruncs = 0;
  if (b->copen)
    rpc_close(&b->cr);
  b->copen = 0;
}

/* Learn the volume again: its binlog PG's segments (a connection kept to
 * each node still there) and its truncations. */
static int reopen(struct blsrc *b, char *why, size_t whylen)
{
  char err[320];
  Env *rep = status_fetch(b->coord, b->volume, err, sizeof err);
  b->opened_at = now_ms();
  if (rep == NULL) {
    snprintf(why, whylen, "%s", err);
    return BL_ERR;
  }
  const Auralog__Status *st = rep->status;
  const Auralog__Volume *v = st->volume;
  if (!st->exists) {
    snprintf(why, whylen, "no volume '%s'", b->volume);
    wire_free(rep);
    return BL_NO_VOL;
  }
  if (v->binlog == NULL || v->binlog->n_segments == 0) {
    snprintf(why, whylen, "volume %s has no binlog: start the engine with --binlog enhanced",
             b->volume);
    wire_free(rep);
    return BL_NO_BINLOG;
  }
  struct blseg old[NSLOTS];
  int nold = b->nseg;
  memcpy(old, b->seg, sizeof old);
  char pref[NAME_MAX_LEN + 1] = "";
  if (b->nseg)
    snprintf(pref, sizeof pref, "%s", b->seg[b->pref].node);
  b->vol_id = v->id;
  b->nseg = 0;
  b->pref = 0;
  for (size_t i = 0; i < v->binlog->n_segments && b->nseg < NSLOTS; i++) {
    const Auralog__Segment *s = v->binlog->segments[i];
    struct blseg *g = &b->seg[b->nseg];
    memset(g, 0, sizeof *g);
    snprintf(g->node, sizeof g->node, "%s", s->node);
    snprintf(g->az, sizeof g->az, "%s", s->az);
    snprintf(g->addr, sizeof g->addr, "%s", s->addr);
    for (int j = 0; j < nold; j++)
      if (old[j].open && !strcmp(old[j].addr, g->addr) && !strcmp(old[j].node, g->node)) {
        g->r = old[j].r;     /* the connection goes on */
        g->open = 1;
        old[j].open = 0;
      }
    if (!strcmp(g->node, pref))
      b->pref = b->nseg;
    b->nseg++;
  }
  for (int j = 0; j < nold; j++)
    seg_shut(&old[j]);
  free(b->truncs);
  b->ntruncs = v->n_truncs;
  b->truncs = calloc(v->n_truncs + 1, sizeof *b->truncs);
  for (size_t i = 0; i < v->n_truncs; i++)
    b->truncs[i] = (struct trunc){.epoch = v->truncs[i]->epoch, .from = v->truncs[i]->from,
                                  .to = v->truncs[i]->to};
  wire_free(rep);
  return 0;
}

int bl_open(struct blsrc *b, const char *coord, const char *volume, char *why, size_t whylen)
{
  memset(b, 0, sizeof *b);
  snprintf(b->coord, sizeof b->coord, "%s", coord);
  snprintf(b->volume, sizeof b->volume, "%s", volume);
  return reopen(b, why, whylen);
}

/* ---- reading a segment ------------------------------------------------------ */

static void seg_err(struct blseg *g, const char *err)
{
  char line[sizeof g->err];
  snprintf(line, sizeof line, "node %s: %.*s", g->node, (int)(sizeof line - NAME_MAX_LEN - 16),
           err);
  memcpy(g->err, line, sizeof line);
}

/* Segment i's answer to BinlogRead(after, max_bytes): a BinlogRecs (free
 * with wire_free), or NULL with g->err set. */
static Env *ask(struct blsrc *b, int i, uint64_t after, size_t max_bytes)
{
  struct blseg *g = &b->seg[i];
  unsigned long long now = now_ms();
  g->answered = 0;
  if (!g->open) {
    if (now < g->retry_at)
      return NULL;           /* g->err: the last failure's */
    if (rpc_open(&g->r, g->addr, SEG_OPEN_MS, g->err, sizeof g->err) != 0) {
      g->retry_at = now + SEG_RETRY_MS;
      return NULL;
    }
    g->open = 1;
  }
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__BinlogRead br = AURALOG__BINLOG_READ__INIT;
  br.volume_id = b->vol_id;
  br.after = after;
  br.max_bytes = max_bytes > 0xffffffffu ? 0xffffffffu : (uint32_t)max_bytes;
  req.body_case = AURALOG__ENVELOPE__BODY_BINLOG_READ;
  req.binlog_read = &br;
  char err[256];
  Env *rep = rpc_call(&g->r, &req, SEG_CALL_MS, err, sizeof err);
  if (rep == NULL) {
    seg_err(g, err);
    seg_shut(g);
    g->retry_at = now + SEG_RETRY_MS;
    return NULL;
  }
  if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_BINLOG_RECS, err, sizeof err) != 0) {
    seg_err(g, err);
    wire_free(rep);
    return NULL;
  }
  const Auralog__BinlogRecs *r = rep->binlog_recs;
  g->answered = 1;
  g->durable = r->durable;
  g->first = r->first;
  g->last = r->last;
  g->bytes = r->bytes;
  g->epoch = r->epoch;
  return rep;
}

/* E1-E4 on segment i's answer r to a read after `after`: 0 with *use (the
 * records that hold, a prefix) and their transactions in txn[0..*use),
 * BL_GAP, or BL_ERR (nothing of it holds); why says which. */
static int judge(struct blsrc *b, int i, const Auralog__BinlogRecs *r, uint64_t after,
                 size_t *use, Auralog__BinlogTxn **txn, char *why, size_t whylen)
{
  const char *node = b->seg[i].node;
  *use = 0;
  if (after > 0 && after < r->first) {
    snprintf(why, whylen, "binlog gap: the position %llu was asked for, but node %s holds "
             "only the transactions after %llu: retention released those in between, which "
             "this reader never read", (unsigned long long)after, node,
             (unsigned long long)r->first);
    return BL_GAP;
  }
  uint64_t start = after > r->first ? after : r->first, prev = 0;
  size_t k = 0;
  const char *bad = NULL;
  for (; k < r->n_records; k++) {
    const Rec *x = r->records[k];
    if (k == 0 ? x->prev_lsn > start : x->prev_lsn != prev) {
      bad = "links back past a record it did not send";
      break;
    }
    if (trunc_cuts(b->truncs, b->ntruncs, x->lsn, x->epoch)) {
      bad = "serves a transaction a recovery truncated";
      break;
    }
    txn[k] = auralog__binlog_txn__unpack(NULL, x->binlog.len, x->binlog.data);
    if (txn[k] == NULL) {
      bad = "serves a binlog record whose events do not unpack";
      break;
    }
    prev = x->lsn;
  }
  if (k == 0 && bad) {
    snprintf(why, whylen, "node %s's binlog answer after %llu does not hold: record %llu %s",
             node, (unsigned long long)start, (unsigned long long)r->records[0]->lsn, bad);
    return BL_ERR;
  }
  *use = k;
  return 0;
}

void bl_batch_free(struct blbatch *bt)
{
  for (size_t i = 0; i < bt->n; i++)
    auralog__binlog_txn__free_unpacked(bt->txn[i], NULL);
  free(bt->txn);
  free(bt->lsn);
  memset(bt, 0, sizeof *bt);
}

void bl_open_file(struct blsrc *b, const char *path)
{
  memset(b, 0, sizeof *b);
  snprintf(b->file, sizeof b->file, "%s", path);
}

struct fbatch {
  struct blbatch *out;
  size_t cap, bytes, max;
  int bad;
};

static void on_frame(void *arg, uint64_t xid, const uint8_t *p, size_t n, uint64_t off)
{
  struct fbatch *f = arg;
  (void)off;
  if (f->bad || (f->out->n > 0 && f->bytes >= f->max))
    return;
  Auralog__BinlogTxn *t = auralog__binlog_txn__unpack(NULL, n, p);
  if (t == NULL) {
    f->bad = 1;
    return;
  }
  if (f->out->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    f->out->txn = realloc(f->out->txn, f->cap * sizeof *f->out->txn);
    f->out->lsn = realloc(f->out->lsn, f->cap * sizeof *f->out->lsn);
  }
  t->commit_lsn = xid;         /* the XID is the commit record's LSN (vfs/community.c) */
  f->out->txn[f->out->n] = t;
  f->out->lsn[f->out->n++] = xid;
  f->out->durable = f->out->last = xid;
  f->bytes += n;
}

/* The community binlog's file: what follows after, up to about max bytes. */
static int fetch_file(struct blsrc *b, uint64_t after, size_t max_bytes, struct blbatch *out,
                      char *why, size_t whylen)
{
  struct fbatch f = {out, 0, 0, max_bytes ? max_bytes : BINLOG_READ_BYTES, 0};
  out->durable = out->last = after;
  if (blf_read_batch(b->file, &b->fcur, after, f.max, on_frame, &f, why, whylen) != 0)
    return BL_ERR;
  if (f.bad) {
    snprintf(why, whylen, "%s: a frame after %llu holds no transaction", b->file,
             (unsigned long long)after);
    bl_batch_free(out);
    return BL_ERR;
  }
  return 0;
}

int bl_fetch(struct blsrc *b, uint64_t after, size_t max_bytes, struct blbatch *out,
             char *why, size_t whylen)
{
  memset(out, 0, sizeof *out);
  if (b->file[0])
    return fetch_file(b, after, max_bytes, out, why, whylen);
  unsigned long long now = now_ms();
  if (b->nseg == 0 || now - b->opened_at >= REOPEN_MS) {
    int rc = reopen(b, why, whylen);
    if (rc != 0 && (rc != BL_ERR || b->nseg == 0))
      return rc;             /* (a coordinator away: the segments known still serve) */
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    int empty = 0, gap = 0;
    char gapwhy[400] = "", errs[600] = "";
    int p0 = b->pref;
    for (int k = 0; k < b->nseg; k++) {
      int i = (p0 + k) % b->nseg;
      Env *rep = ask(b, i, after, max_bytes);
      if (rep == NULL) {
        size_t l = strlen(errs);
        snprintf(errs + l, sizeof errs - l, "%s%s", l ? "; " : "", b->seg[i].err);
        continue;
      }
      const Auralog__BinlogRecs *r = rep->binlog_recs;
      Auralog__BinlogTxn **txn = calloc(r->n_records + 1, sizeof *txn);
      size_t use = 0;
      char jwhy[400];
      int rc = judge(b, i, r, after, &use, txn, jwhy, sizeof jwhy);
      if (rc == 0 && use > 0) {
        out->txn = txn;
        out->lsn = calloc(use, sizeof *out->lsn);
        for (size_t j = 0; j < use; j++)
          out->lsn[j] = r->records[j]->lsn;
        out->n = use;
        out->durable = r->durable;
        out->first = r->first;
        out->last = r->last;
        out->seg = i;
        b->pref = i;
        wire_free(rep);
        return 0;
      }
      for (size_t j = 0; j < r->n_records; j++)
        if (txn[j])
          auralog__binlog_txn__free_unpacked(txn[j], NULL);
      free(txn);
      wire_free(rep);
      if (rc == BL_GAP) {
        gap = 1;
        snprintf(gapwhy, sizeof gapwhy, "%s", jwhy);
      } else if (rc == BL_ERR) {
        size_t l = strlen(errs);
        snprintf(errs + l, sizeof errs - l, "%s%s", l ? "; " : "", jwhy);
      } else {
        empty = 1;           /* nothing new is durable there */
        if (k == 0 && now - b->swept_at < SWEEP_MS)
          return 0;
        if (!b->seg[b->pref].answered)
          b->pref = i;       /* the one asked first did not answer: this one next */
      }
    }
    b->swept_at = now;
    if (empty)
      return 0;
    if (gap) {
      snprintf(why, whylen, "%s", gapwhy);
      return BL_GAP;
    }
    /* No segment answered: where are they now? */
    if (attempt == 0 && reopen(b, why, whylen) == 0)
      continue;
    snprintf(why, whylen, "no segment of volume %s's binlog answers (%s)", b->volume,
             errs[0] ? errs : "none is placed");
    return BL_ERR;
  }
  return BL_ERR;
}

int bl_probe(struct blsrc *b)
{
  int n = 0;
  for (int i = 0; i < b->nseg; i++) {
    b->seg[i].retry_at = 0;
    Env *rep = ask(b, i, LSN_MAX, 1);
    if (rep) {
      n++;
      wire_free(rep);
    }
  }
  return n;
}

uint64_t bl_wall_at(struct blsrc *b, uint64_t lsn)
{
  if (lsn == 0)
    return 0;
  struct blbatch bt;
  char why[400];
  uint64_t ms = 0;
  if (bl_fetch(b, lsn - 1, 1, &bt, why, sizeof why) == 0 && bt.n > 0 && bt.lsn[0] == lsn)
    ms = bt.txn[0]->wall_ms;
  bl_batch_free(&bt);
  return ms;
}

/* ---- consumers -------------------------------------------------------------- */

Auralog__BinlogConsumers *bl_consumers(struct blsrc *b, const Auralog__BinlogConsumer *bc,
                                       Env **env, int *code, char *why, size_t whylen)
{
  char err[320];
  *env = NULL;
  *code = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    if (!b->copen) {
      if (rpc_open(&b->cr, b->coord, RPC_TIMEOUT_MS, err, sizeof err) != 0) {
        snprintf(why, whylen, "coordinator: %s", err);
        return NULL;
      }
      b->copen = 1;
    }
    Env req = AURALOG__ENVELOPE__INIT;
    req.body_case = AURALOG__ENVELOPE__BODY_BINLOG_CONSUMER;
    req.binlog_consumer = (Auralog__BinlogConsumer *)bc;
    Env *rep = rpc_call(&b->cr, &req, RPC_TIMEOUT_MS, err, sizeof err);
    if (rep == NULL) {       /* the connection is gone: once more on a new one */
      rpc_close(&b->cr);
      b->copen = 0;
      snprintf(why, whylen, "coordinator: %s", err);
      continue;
    }
    int rc = rpc_expect(rep, AURALOG__ENVELOPE__BODY_BINLOG_CONSUMERS, err, sizeof err);
    if (rc != 0) {
      *code = rc;
      snprintf(why, whylen, "%s", err);
      wire_free(rep);
      return NULL;
    }
    *env = rep;
    return rep->binlog_consumers;
  }
  return NULL;
}
