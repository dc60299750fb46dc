/*
 * workload.c: what the simulated engine asks of its volume, and the shadow
 * model of what every page must then hold.
 *
 * Transactions: a writer that serves keeps up to SIM_INFLIGHT of them in
 * flight. Each changes 1..SIM_TX_PAGES pages spread over the PGs: the new
 * page is the writer's view of the old one with a few byte ranges
 * rewritten, shipped as the diff (vfs/diff.h) the real VFS would make, one
 * mini-transaction (vcore_ship). It is acknowledged when the writer's VDL
 * passes its CPL, as the engine acknowledges a COMMIT.
 *
 * The shadow model (struct txrec, in ship order, which is LSN order):
 * every transaction with the pages it wrote and its fate: pending,
 * acknowledged, kept by a recovery (an unknown outcome that survived) or
 * truncated by one. A page as of read point R is the newest transaction at
 * or below R that no recovery truncated; the writer's view of a page is
 * the newest one it wrote itself or that its recovery kept.
 *
 * Reads: now and then a page is read at the writer's VDL (vcore_read) and
 * compared with the shadow's page at the read point (invariant 4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "sim/simint.h"
#include "vfs/diff.h"


static uint32_t page_no(int k)
{
  return (uint32_t)(k / SIM_PAGES) * PG_PAGES + (uint32_t)(k % SIM_PAGES);
}

/* The newest content of page p a writer of epoch e can build on: its own
 * transactions, and what a recovery at or below its own kept. */
static const uint8_t *view(const struct world *w, uint32_t p, uint64_t epoch)
{
  for (size_t i = w->ntxs; i-- > 0;) {
    const struct txrec *t = &w->txs[i];
    if (t->state == TX_TRUNCATED || t->epoch > epoch)
      continue;
    if (t->epoch < epoch && t->state == TX_PENDING)
      continue;              /* an older writer's, not decided by our recovery */
    for (size_t j = 0; j < t->npages; j++)
      if (t->page[j] == p)
        return t->data + j * SIM_PAGE_SIZE;
  }
  return NULL;
}

const uint8_t *shadow_page(const struct world *w, uint32_t p, uint64_t rp)
{
  for (size_t i = w->ntxs; i-- > 0;) {
    const struct txrec *t = &w->txs[i];
    if (t->state == TX_TRUNCATED || t->cpl > rp)
      continue;
    for (size_t j = 0; j < t->npages; j++)
      if (t->page[j] == p)
        return t->data + j * SIM_PAGE_SIZE;
  }
  return NULL;
}

static void ship(struct simwriter *wr)
{
  struct world *w = wr->w;
  struct volume *v = wr->v;
  size_t n = 1 + rng_uniform(&w->rng, SIM_TX_PAGES);
  char why[256];
  /* --community: one two-phase commit at a time (ship.c P0), and room for
   * its commit record. */
  int cm = w->o.community;
  if (cm && cm_busy(wr))
    return;
  if (vcore_ship_refusal(v, n + (v->has_binlog != 0) + cm, why, sizeof why) != 0)
    return;
  struct txrec t = {.epoch = wr->epoch, .state = TX_PENDING, .writer = wr->i, .npages = 0,
                    .decided_by = -1};
  t.data = malloc(n * SIM_PAGE_SIZE);
  struct mtr_page mp[SIM_TX_PAGES];
  struct drange rg[SIM_TX_PAGES][SIM_PAGE_SIZE / 2 + 1];
  while (t.npages < n) {
    uint32_t p = page_no((int)rng_uniform(&w->rng, SIM_PGS * SIM_PAGES));
    int dup = 0;
    for (size_t j = 0; j < t.npages; j++)
      dup |= t.page[j] == p;
    if (dup)
      continue;
    size_t j = t.npages++;
    t.page[j] = p;
    uint8_t *after = t.data + j * SIM_PAGE_SIZE;
    const uint8_t *before = view(w, p, wr->epoch);
    if (before)
      memcpy(after, before, SIM_PAGE_SIZE);
    else
      memset(after, 0, SIM_PAGE_SIZE);
    for (int k = 1 + (int)rng_uniform(&w->rng, 3); k > 0; k--) {
      uint32_t len = 1 + (uint32_t)rng_uniform(&w->rng, 24);
      uint32_t off = (uint32_t)rng_uniform(&w->rng, SIM_PAGE_SIZE - len);
      for (uint32_t b = 0; b < len; b++)
        after[off + b] = (uint8_t)rng_u64(&w->rng);
    }
    mp[j].page_no = p;
    mp[j].flags = before ? 0 : REC_ZERO;
    mp[j].after = after;
    mp[j].ranges = rg[j];
    mp[j].nranges = page_diff(before, after, SIM_PAGE_SIZE, rg[j], SIM_PAGE_SIZE / 2 + 1);
  }
  /* --binlog: the commit's events ride in its MTR (ship.c B1); here a
   * transaction's events are its index in the shadow (blcheck.c). */
  uint8_t *bl = NULL;
  if (v->has_binlog) {
    bl = malloc(SIM_BL_LEN);
    memcpy(bl, "simtx", 5);
    uint64_t ix = w->ntxs;
    memcpy(bl + 5, &ix, sizeof ix);
  }
  if (cm)
    t.cpl = cm_prepare(wr, mp, n, w->ntxs);   /* the XID: its commit record's LSN */
  else
    t.cpl = vcore_ship_bl(v, mp, n, bl, bl ? SIM_BL_LEN : 0);
  /* The MTR's last record in each PG it touched: the PG's tail now. */
  for (size_t j = 0; j < n; j++) {
    uint32_t pg = mp[j].page_no / v->pg_pages, k = 0;
    while (k < t.npg && t.pg[k] != pg)
      k++;
    if (k == t.npg && pg < v->npgs) {
      t.pg[t.npg] = pg;
      t.last[t.npg++] = v->pgs[pg].tail;
    }
  }
  if (cm)                      /* the commit record: the last page's PG's last, at the XID */
    for (size_t k = 0; k < t.npg; k++)
      if (t.pg[k] == mp[n - 1].page_no / v->pg_pages)
        t.last[k] = t.cpl;
  if (bl) {                    /* its binlog record, the CPL, in the binlog PG */
    t.pg[t.npg] = BINLOG_PG;
    t.last[t.npg++] = v->pgs[BINLOG_PG].tail;
  }
  if (!cm)
    vcore_feed_mtr(v, mp, n, t.cpl);   /* the read replica's stream (replica.c), as vol_ship */
  /* A writer that a newer epoch superseded ships into the void: nothing
   * it ships now can become durable (its recovery never saw it). */
  if (wr->epoch < w->max_epoch)
    t.state = TX_TRUNCATED;
  if (w->ntxs == w->captxs) {
    w->captxs = w->captxs ? 2 * w->captxs : 256;
    w->txs = realloc(w->txs, w->captxs * sizeof *w->txs);
  }
  w->txs[w->ntxs] = t;
  wr->inflight = realloc(wr->inflight, (wr->ninflight + 1) * sizeof *wr->inflight);
  wr->inflight[wr->ninflight++] = w->ntxs;
  w->ntxs++;
  w->res->tx_shipped++;
  world_hash(w, "ship", t.cpl, n);
  writer_kick(wr);
}

/* Start a read of page k (of the SIM_PGS * SIM_PAGES the workload
 * writes). Returns 0 if there was no room for it. */
static int read_start(struct simwriter *wr, int k)
{
  if (wr->nreads == sizeof wr->reads / sizeof wr->reads[0])
    return 0;
  uint8_t *buf = malloc(SIM_PAGE_SIZE);
  uint32_t p = page_no(k);
  struct readreq *r = vcore_read(wr->v, p, buf);
  if (r == NULL) {
    free(buf);
    return 1;
  }
  wr->reads[wr->nreads++] = (struct wread){r, buf};
  writer_kick(wr);
  return 1;
}

/* Finished reads against the shadow. */
static void reads_check(struct simwriter *wr)
{
  struct world *w = wr->w;
  for (size_t i = 0; i < wr->nreads;) {
    struct readreq *r = wr->reads[i].r;
    if (!r->done) {
      i++;
      continue;
    }
    const uint8_t *want = shadow_page(w, r->page_no, r->rp);
    static const uint8_t zero[SIM_PAGE_SIZE];
    int wrong = memcmp(wr->reads[i].buf, want ? want : zero, SIM_PAGE_SIZE) != 0;
    char who[16];
    snprintf(who, sizeof who, "w%d", wr->i + 1);
    trace_read(w, who, r->page_no, r->rp, r->page_lsn, wrong);
    if (wrong)
      violation(w, "writer %d (epoch %llu) read page %u as of %llu (need %llu, page lsn "
                "%llu) and got a version no transaction at or below that point left",
                wr->i, (unsigned long long)wr->epoch, r->page_no,
                (unsigned long long)r->rp, (unsigned long long)r->need,
                (unsigned long long)r->page_lsn);
    w->res->reads_checked++;
    world_hash(w, "read", r->page_no, r->page_lsn);
    /* Done reads are unlinked by the core (read_reap); ours to free. */
    struct readreq **pp = &wr->v->reads;
    while (*pp && *pp != r)
      pp = &(*pp)->next;
    if (*pp)
      *pp = r->next;
    free(r);
    free(wr->reads[i].buf);
    wr->reads[i] = wr->reads[--wr->nreads];
  }
}

void workload_step(struct simwriter *wr)
{
  struct world *w = wr->w;
  reads_check(wr);
  if (w->stop || wr->state != W_SERVING)
    return;
  cm_step(wr);                 /* --community: the two-phase commit in progress ... */
  if (wr->state != W_SERVING)
    return;                    /* ... in which the engine may die (cbinlog.c) */
  uint64_t now = sim_now(w->clock);
  /* After the final heal and its grace period, nothing new: settle, and
   * read every page once more (invariant 4, on the final state). */
  if (w->healed && now >= w->heal_at + SIM_HEAL_MS) {
    if (!sfo_lease_ok(wr)) {   /* reads wait for a read lease (failover.c) */
      writer_poke_at(wr, now + 10);
      return;
    }
    while (w->sweep < SIM_PGS * SIM_PAGES && read_start(wr, w->sweep))
      w->sweep++;
    if (wr->nreads)
      writer_poke_at(wr, now + 10);
    return;
  }
  if (wr->ninflight < SIM_INFLIGHT && now >= wr->next_ship) {
    wr->next_ship = now + 1 + rng_uniform(&w->rng, 2 * SIM_SHIP_MS);
    ship(wr);
  }
  if (now >= wr->next_read) {
    wr->next_read = now + 1 + rng_uniform(&w->rng, 2 * SIM_READ_MS);
    int k = (int)rng_uniform(&w->rng, SIM_PGS * SIM_PAGES);
    if (sfo_lease_ok(wr))      /* only under a valid read lease (failover.c) */
      read_start(wr, k);
  }
  /* Come back for the next one (a writer with SIM_INFLIGHT in flight waits
   * for an ack instead, which is an event of its own). */
  uint64_t next = wr->next_read;
  if (wr->ninflight < SIM_INFLIGHT && wr->next_ship < next)
    next = wr->next_ship;
  writer_poke_at(wr, next > now ? next : now + 1);
}

/* The writer's VDL moved: acknowledge what it passed. */
void workload_acked(struct simwriter *wr)
{
  struct world *w = wr->w;
  uint64_t vdl = wr->v->q.vdl;
  if (vdl < wr->last_vdl)
    violation(w, "writer %d: VDL went back from %llu to %llu within epoch %llu", wr->i,
              (unsigned long long)wr->last_vdl, (unsigned long long)vdl,
              (unsigned long long)wr->epoch);
  wr->last_vdl = vdl;
  for (size_t i = 0; i < wr->ninflight;) {
    struct txrec *t = &w->txs[wr->inflight[i]];
    if (t->cpl > vdl) {
      i++;
      continue;
    }
    if (t->state == TX_TRUNCATED)
      violation(w, "writer %d of epoch %llu acknowledged commit %llu, which a newer "
                "epoch's recovery truncated (at %llu): an old writer was not fenced",
                wr->i, (unsigned long long)wr->epoch, (unsigned long long)t->cpl,
                (unsigned long long)w->max_epoch_vdl);
    else
      t->state = TX_ACKED;
    t->decided_by = wr->i;
    cm_durable(w, wr->inflight[i], "acknowledged");
    member_check_tx(w, wr->inflight[i]);   /* on Vw current segments (member.c) */
    w->res->tx_acked++;
    if (w->healed)
      w->acked_after_heal++;
    world_hash(w, "ack", t->cpl, 0);
    wr->inflight[i] = wr->inflight[--wr->ninflight];
  }
}

/* Writer wr recovered in its epoch with this VDL: decide every older
 * transaction, and check nothing acknowledged was lost (invariants 1-2). */
void workload_recovered(struct simwriter *wr, uint64_t vdl)
{
  struct world *w = wr->w;
  int boundary = vdl == 0;
  for (size_t i = 0; i < w->ntxs; i++) {
    struct txrec *t = &w->txs[i];
    if (t->epoch >= wr->epoch)
      continue;
    if (t->cpl == vdl && t->state != TX_TRUNCATED)
      boundary = 1;
    if (t->cpl <= vdl) {
      if (t->state == TX_PENDING) {
        t->state = TX_KEPT;
        t->decided_by = wr->i;
        cm_durable(w, i, "kept by a recovery");
      }
      continue;
    }
    if (t->state == TX_ACKED || t->state == TX_KEPT)
      violation(w, "recovery of epoch %llu lost %s commit %llu of epoch %llu: it "
                "recovered only to vdl %llu", (unsigned long long)wr->epoch,
                t->state == TX_ACKED ? "acknowledged" : "kept", (unsigned long long)t->cpl,
                (unsigned long long)t->epoch, (unsigned long long)vdl);
    if (t->state == TX_PENDING)
      t->decided_by = wr->i;
    t->state = TX_TRUNCATED;
  }
  if (!boundary)
    violation(w, "recovery of epoch %llu serves from vdl %llu, which is no "
              "transaction's commit point: a partial transaction is visible",
              (unsigned long long)wr->epoch, (unsigned long long)vdl);
  if (wr->epoch > w->max_epoch) {
    w->max_epoch = wr->epoch;
    w->max_epoch_vdl = vdl;
  }
}

/* The writer died: what it had in flight has an unknown outcome, until
 * the next recovery decides it. */
void workload_crashed(struct simwriter *wr)
{
  struct world *w = wr->w;
  w->res->tx_unknown += wr->ninflight;
  wr->ninflight = 0;
  cm_crashed(wr);
  for (size_t i = 0; i < wr->nreads; i++) {
    /* The core frees the requests still on its list with itself; a
     * finished one it already unlinked (read_reap) is ours. */
    int listed = 0;
    for (struct readreq *r = wr->v ? wr->v->reads : NULL; r && !listed; r = r->next)
      listed = r == wr->reads[i].r;
    if (!listed)
      free(wr->reads[i].r);
    free(wr->reads[i].buf);
  }
  wr->nreads = 0;
}

void workload_free(struct world *w)
{
  cm_free(w);
  for (size_t i = 0; i < w->ntxs; i++)
    free(w->txs[i].data);
  free(w->txs);
  free(w->issued);
  w->issued = NULL;
  w->nissued = 0;
  for (int i = 0; i < SIM_WRITERS; i++)
    free(w->wr[i].inflight);
}
