/*
 * ship.c: the commit path of a volume (paper §4.1, §4.2.1-4.2.2), in the
 * writer's core (no I/O; the driver's vol_ship and vol_wait in volume.c
 * wait around it).
 *
 * vcore_ship() turns one mini-transaction (one SQLite write transaction)
 * into records: an LSN each, handed out while the LAL and the memory held
 * by records not yet durable (UNDURABLE_MAX) allow; a backlink to the
 * previous record of its PG; the last one the MTR's CPL, listing the MTR's
 * last LSN in every PG it touched and the previous CPL. vcore.c sends
 * them. A commit that the VDL does not reach by the deadline has an
 * unknown outcome, and vcore_stalled says so.
 *
 * Invariant: every record handed an LSN stays in its PG's list until the
 * VDL passes it (volume.c advance), so it can be sent again to a segment
 * that reconnects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "vfs/volume_int.h"

/* A record is final once sealed (its CRC): pack it for the wire now, once
 * for all its segments (orec_pack), counting the bytes against
 * UNDURABLE_MAX with the rest of it. Out of memory, it stays unpacked and
 * send_append packs it the old way. */
static void seal(struct volume *v, struct orec *o)
{
  rec_seal(&o->r);
  if (orec_pack(o) == 0) {
    o->bytes += o->wlen;
    v->undurable += o->wlen;
  }
}

static struct orec *make_rec(const struct mtr_page *p, uint32_t pg, uint64_t lsn,
                             uint64_t prev)
{
  struct orec *o = calloc(1, sizeof *o);
  auralog__record__init(&o->r);
  size_t bytes = diff_bytes(p->ranges, p->nranges);
  o->g = calloc(p->nranges + 1, sizeof *o->g);
  o->gp = calloc(p->nranges + 1, sizeof *o->gp);
  o->data = malloc(bytes + 1);
  size_t off = 0;
  for (size_t i = 0; i < p->nranges; i++) {
    const struct drange *d = &p->ranges[i];
    auralog__range__init(&o->g[i]);
    o->g[i].off = d->off;
    o->gp[i] = &o->g[i];
    if (d->copy) {           /* no bytes: the segment copies within the page */
      o->g[i].from = d->from;
      o->g[i].len = d->len;
      continue;
    }
    memcpy(o->data + off, p->after + d->off, d->len);
    o->g[i].data.data = o->data + off;
    o->g[i].data.len = d->len;
    off += d->len;
  }
  (void)pg;
  o->bytes = sizeof *o + bytes + p->nranges * (sizeof *o->g + sizeof *o->gp);
  o->r.lsn = lsn;
  o->r.prev_lsn = prev;
  o->r.page_no = p->page_no;
  o->r.flags = p->flags;
  o->r.ranges = o->gp;
  o->r.n_ranges = p->nranges;
  return o;
}

/* Why a mini-transaction of n pages cannot be given LSNs now (0: it
 * can). Back-pressure: LSNs (the LAL, §4.2.1) and memory. Every record
 * not yet durable stays here to be sent again; without a write quorum
 * nothing becomes durable, so the engine stops taking commits after
 * UNDURABLE_MAX bytes of them rather than growing until it dies. */
int vcore_ship_refusal(const struct volume *v, size_t n, char *why, size_t whylen)
{
  if (v->fenced)
    snprintf(why, whylen, "%s", v->fenced_why);
  else if (v->undurable > UNDURABLE_MAX)
    snprintf(why, whylen, "storage has no write quorum: %zu MiB of redo wait to be "
             "durable (limit %u MiB); nothing more is taken until they are",
             v->undurable >> 20, UNDURABLE_MAX >> 20);
  else if (!q_can_alloc(&v->q, n))
    snprintf(why, whylen, "storage is more than LAL=%d LSNs behind (vdl %llu): "
             "not enough segments acknowledge", LAL, (unsigned long long)v->q.vdl);
  else
    return 0;
  return -1;
}

/* pg has the newest record: first in v->recent (volume_int.h). O(TAIL_MAX)
 * when the PG changes from the previous record's, O(1) when it does not. */
static void note_recent(struct volume *v, uint32_t pg)
{
  if (v->nrecent && v->recent[0] == pg)
    return;
  unsigned i = 0;
  while (i < v->nrecent && v->recent[i] != pg)
    i++;
  if (i == v->nrecent && v->nrecent < TAIL_MAX)
    v->nrecent++;
  if (i == v->nrecent)
    i--;                       /* not there and the list is full: the oldest goes */
  memmove(&v->recent[1], &v->recent[0], i * sizeof *v->recent);
  v->recent[0] = pg;
}

/* Record o, LSN lsn, of PG pg, joins the PG's list (sent from there, kept
 * until the VDL passes it) and the MTR's shape ml[0..*nml). */
static void add_rec(struct volume *v, uint32_t pg, struct orec *o, uint64_t lsn, int cpl,
                    Auralog__PgLast *ml, size_t *nml)
{
  struct pgout *g = &v->pgs[pg];
  o->r.epoch = v->epoch;        /* sealed later: rule T (node/segment.h) */
  g->tail = lsn;
  g->ring_lsn[g->ring_n % TAIL_PER_PG] = lsn;
  g->ring_cpl[g->ring_n % TAIL_PER_PG] = (uint8_t)cpl;
  g->ring_acks[g->ring_n % TAIL_PER_PG] = 0;
  g->ring_n++;
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    g->recs = realloc(g->recs, g->cap * sizeof *g->recs);
  }
  g->recs[g->n++] = o;
  vcore_busy(v, pg);
  note_recent(v, pg);
  v->undurable += o->bytes;
  size_t j = 0;
  while (j < *nml && ml[j].pg != pg)
    j++;
  if (j == *nml) {
    auralog__pg_last__init(&ml[(*nml)++]);
    ml[j].pg = pg;
  }
  ml[j].lsn = lsn;
}

/* The binlog record of an MTR (the enhanced binlog, issue 29): the
 * transaction's packed events bl[0..len) (the record owns bl), in the
 * volume's binlog PG. */
static struct orec *make_binlog_rec(uint8_t *bl, size_t len, uint64_t lsn, uint64_t prev)
{
  struct orec *o = calloc(1, sizeof *o);
  auralog__record__init(&o->r);
  o->data = bl;
  o->bytes = sizeof *o + len;
  o->r.lsn = lsn;
  o->r.prev_lsn = prev;
  o->r.page_no = 0;
  o->r.flags = REC_BINLOG;
  o->r.binlog = (ProtobufCBinaryData){len, bl};
  return o;
}

static uint64_t seal_cpl(struct volume *v, struct orec *last, Auralog__PgLast *ml, size_t nml,
                         uint64_t prev_cpl);

uint64_t vcore_ship(struct volume *v, const struct mtr_page *pages, size_t n)
{
  return vcore_ship_bl(v, pages, n, NULL, 0);
}

/* B1 (the enhanced binlog): a transaction's events are its MTR's CPL.
 * With bl, the MTR is its page records and then one binlog record in the
 * binlog PG, which is the CPL: the events are durable exactly when the
 * commit is (the VDL passes both at once), and a recovery that truncates
 * the commit truncates its events with it (rule T cuts by LSN, whatever
 * the PG), so the stream holds every durable commit's events once and no
 * truncated commit's. The record's LSN is the commit's: the position. */
uint64_t vcore_ship_bl(struct volume *v, const struct mtr_page *pages, size_t n, uint8_t *bl,
                       size_t bllen)
{
  if (v->prep_ml != NULL) {
    /* P0 below: nothing may come between a prepared MTR and its commit
     * record, or that MTR's CPL would make the prepared records durable
     * without their binlog entry. Only a bug gets here. */
    logwarn("volume %s: an MTR shipped while a prepared one waits for its commit record",
           v->name);
    abort();
  }
  /* The CPL lists, per PG the MTR touched, its last record there: recovery
   * can then tell a whole MTR from a partial one across PGs. */
  Auralog__PgLast *ml = calloc(n + 2, sizeof *ml);
  size_t nml = 0;
  struct orec *last = NULL;
  for (size_t i = 0; i < n; i++) {
    uint32_t pg = pages[i].page_no / v->pg_pages;
    int cpl = i == n - 1 && bl == NULL;
    uint64_t lsn = q_alloc(&v->q, pg, cpl);
    struct orec *o = make_rec(&pages[i], pg, lsn, v->pgs[pg].tail);
    add_rec(v, pg, o, lsn, cpl, ml, &nml);
    pl_write(&v->plsn, pages[i].page_no, lsn, v->q.vdl);   /* the end-to-end read check */
    last = o;
    if (!cpl)
      seal(v, o);
  }
  if (bl) {
    uint64_t lsn = q_alloc(&v->q, BINLOG_PG, 1);
    struct orec *o = make_binlog_rec(bl, bllen, lsn, v->pgs[BINLOG_PG].tail);
    add_rec(v, BINLOG_PG, o, lsn, 1, ml, &nml);
    last = o;
    v->st.binlog_bytes += bllen;
  }
  v->st.records += n + (bl != NULL);
  return seal_cpl(v, last, ml, nml, v->last_cpl);
}

/* The CPL last closes its MTR: flags, the previous CPL, the MTR's shape
 * ml[0..nml) (last takes ml); sealed, noted as a commit to wait for. */
static uint64_t seal_cpl(struct volume *v, struct orec *last, Auralog__PgLast *ml, size_t nml,
                         uint64_t prev_cpl)
{
  last->r.flags |= REC_CPL;
  last->r.prev_cpl = prev_cpl;
  last->ml = ml;
  last->mlp = calloc(nml, sizeof *last->mlp);
  for (size_t j = 0; j < nml; j++)
    last->mlp[j] = &ml[j];
  last->r.mtr = last->mlp;
  last->r.n_mtr = nml;
  seal(v, last);
  uint64_t cpl = last->r.lsn;
  v->last_cpl = cpl;
  if (v->ncpls == v->capcpls) {
    v->capcpls = v->capcpls ? 2 * v->capcpls : 64;
    v->cpls = realloc(v->cpls, v->capcpls * sizeof *v->cpls);
    v->cpl_t = realloc(v->cpl_t, v->capcpls * sizeof *v->cpl_t);
  }
  v->cpl_t[v->ncpls] = (struct cpl_time){0, 0, 0};
  v->cpls[v->ncpls++] = cpl;
  return cpl;
}

/* ---- the community binlog's two-phase commit (issue 29) -------------------
 *
 * MySQL keeps its binlog in a file of its own and makes it agree with the
 * redo by an XA two-phase commit; `engine --binlog community` does the
 * same over the volume:
 *   1. prepare: the transaction's page records are shipped as an MTR
 *      without its CPL (vcore_prepare), and the engine waits until they
 *      are at write quorum (the VCL passes them): durable, not committed
 *      (the VDL cannot pass them: no CPL above them yet);
 *   2. the binlog: its events and its XID go to the binlog file, fsynced
 *      (vfs/blfile.c, by the engine): the commit point;
 *   3. commit: the commit record is shipped (vcore_commit_prepared): an
 *      empty record on the MTR's last page, whose LSN is the XID, closing
 *      the MTR as its CPL.
 * Recovery (open.c rollforward): a prepared MTR above the VDL whose XID
 * the binlog file holds gets its commit record written then; any other is
 * truncated as always. So the binlog holds exactly the durable commits.
 *
 * P0. Between a prepare and its commit record no other record gets an
 *     LSN (vcore_ship_bl refuses): the XID is the LSN after the prepared
 *     records, and no later CPL may cover them before the binlog has them.
 *     SQLite's write lock already serializes the engine's commits. */
uint64_t vcore_prepare(struct volume *v, const struct mtr_page *pages, size_t n)
{
  if (v->prep_ml != NULL) {
    logwarn("volume %s: a second prepare before the first one's commit record", v->name);
    abort();
  }
  Auralog__PgLast *ml = calloc(n + 2, sizeof *ml);
  size_t nml = 0;
  uint64_t lsn = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t pg = pages[i].page_no / v->pg_pages;
    lsn = q_alloc(&v->q, pg, 0);
    struct orec *o = make_rec(&pages[i], pg, lsn, v->pgs[pg].tail);
    add_rec(v, pg, o, lsn, 0, ml, &nml);
    pl_write(&v->plsn, pages[i].page_no, lsn, v->q.vdl);
    seal(v, o);
  }
  v->st.records += n;
  v->prep_ml = ml;
  v->prep_nml = nml;
  v->prep_page = pages[n - 1].page_no;
  v->prep_last = lsn;
  return lsn;
}

uint64_t vcore_commit_prepared(struct volume *v)
{
  uint32_t pg = v->prep_page / v->pg_pages;
  uint64_t lsn = q_alloc(&v->q, pg, 1);
  if (lsn != v->prep_last + 1) {      /* P0 */
    logwarn("volume %s: the commit record got LSN %llu, not %llu", v->name,
           (unsigned long long)lsn, (unsigned long long)v->prep_last + 1);
    abort();
  }
  struct orec *o = calloc(1, sizeof *o);
  auralog__record__init(&o->r);
  o->bytes = sizeof *o;
  o->r.lsn = lsn;
  o->r.prev_lsn = v->pgs[pg].tail;
  o->r.page_no = v->prep_page;
  Auralog__PgLast *ml = v->prep_ml;
  size_t nml = v->prep_nml;
  add_rec(v, pg, o, lsn, 1, ml, &nml);
  pl_write(&v->plsn, v->prep_page, lsn, v->q.vdl);
  v->prep_ml = NULL;
  v->st.records++;
  return seal_cpl(v, o, ml, nml, v->last_cpl);   /* P0: still the CPL before the prepare */
}

/* Why commit lsn is not durable yet. */
void vcore_stalled(struct volume *v, uint64_t lsn, int waited_ms, char *why, size_t whylen)
{
  if (v->fenced)
    snprintf(why, whylen, "%s", v->fenced_why);
  else
    snprintf(why, whylen, "commit %llu not durable after %d ms: storage has no write "
             "quorum (vdl %llu; %zu records wait for %d of %d acks); the commit may "
             "still become durable or be truncated at the next recovery",
             (unsigned long long)lsn, waited_ms, (unsigned long long)v->q.vdl,
             q_pending(&v->q), VW, NCOPIES);
}

