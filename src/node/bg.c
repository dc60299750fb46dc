/*
 * bg.c: the storage node's background work (paper §3.3, Figure 4): when
 * to coalesce (step 5), how far to free (step 7, GC at the PGMRPL), the
 * scrub's pace (step 8, scrub.c) and repairs from PG peers. The store
 * does the work (store_pages.c); this file decides when and how much.
 * All of it runs after a turn's acks (node_end_turn), in transactions of
 * its own: it never delays an acknowledgement, and never waits for the
 * engine.
 *
 * Coalescing. Each page counts its records above its newest version
 * (struct segment's unmat, in memory: counted as records become durable,
 * and from what a read had to apply). Every COALESCE_RECS records the
 * page joins a queue; at most every BG_MS the coalescer writes, for up to
 * COALESCE_BATCH queued pages, a version at the page's newest record at
 * or below the segment's own point (own_point: the writer's last record of
 * the PG at or below its PGMRPL, if this segment holds it; store_pages.c
 * says why a version never goes above it).
 *
 * GC. Every GC_MS, each segment frees what lies at or below
 *      min(own point, SCL of each PG peer heard lately)
 * The own point lies at or below the PGMRPL, the writer's minimum read
 * point (it comes with each Append): no read will ask for a page as of an
 * earlier point; and at or below the VDL: nothing there is ever
 * truncated, on the writer's chain (own_point). The peers' SCLs: a peer that
 * is behind pulls the records it lacks from us (gossip.c), so we keep
 * them while it may still ask; a peer silent for GC_PEER_WAIT_MS no
 * longer holds us (when it returns behind our GC point it needs page
 * versions, not records).
 *
 * Repair. A page whose version at or below gc_lsn is damaged or missing
 * has its floor at "never" (scrub.c). Every REPAIR_MS one such page is
 * asked of a reachable peer, as a plain page read at a point N: our last
 * record at or below min(our SCL, our VDL heard, the peer's SCL), and at
 * least both GC points, so both chains agree up to it (nothing at or
 * below a VDL differs between segments) and the peer can build it. The
 * answer is stored as the page's version and its floor becomes N (reads
 * at or above N are answered again; GC clears the floor once it passes).
 *
 * Catch-up. A segment whose peers freed the records it lacks (one back
 * from a long absence, or a new one being hydrated: member.h M2) fetches
 * every page as of a peer's GC point the same way, then moves its chain's
 * start there (finish_catch_up); gossip brings the log above it. Those
 * fetches come out of the node's hydration budget (member.c), as gossip's
 * pulls do: a catch-up never starves foreground commits. A binlog segment
 * (issue 29) has no pages: when its peers released the records it lacks,
 * its chain starts at their release point and gossip brings the records
 * above (binlog_catch_up, invariant BJ).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/nbinlog.h"
#include "node/node.h"
#include "node/store_int.h"

static void enqueue(struct node *n, const struct segment *s, uint32_t page)
{
  if (n->ncoq == n->capcoq) {
    n->capcoq = n->capcoq ? 2 * n->capcoq : 256;
    n->coq = realloc(n->coq, n->capcoq * sizeof *n->coq);
  }
  n->coq[n->ncoq++] = (struct bgpage){s->volume_id, s->pg, page};
}

static void count_unmat(struct node *n, struct segment *s, uint32_t page, uint32_t count,
                        int add)
{
  uint32_t i = page - s->first_page;
  if (i >= s->npages || seg_is_binlog(s))
    return;                 /* a binlog record is no page's: nothing to coalesce */
  if (s->unmat == NULL)
    s->unmat = calloc(s->npages, sizeof *s->unmat);
  uint32_t old = s->unmat[i];
  uint32_t now = add ? old + count : count;
  s->unmat[i] = (uint16_t)(now > 0xffff ? 0xffff : now);
  /* Join the queue each time another COALESCE_RECS records pile up. */
  if (now / COALESCE_RECS > old / COALESCE_RECS) {
    enqueue(n, s, page);
    /* A page this far behind is coalesced when this turn ends, not up
     * to BG_MS later: a writer can send thousands of records to one page
     * in BG_MS, and a read would apply them all (param.h's bound). */
    if (add && now >= COALESCE_HOT)
      n->co_hot = 1;
  }
}

void bg_on_record(struct node *n, struct segment *s, uint32_t page, uint32_t len)
{
  s->nrecs++;
  s->bytes += len;
  count_unmat(n, s, page, 1, 1);
}

void bg_on_read(struct node *n, struct segment *s, uint32_t page)
{
  unsigned applied = n->st.last_applied;
  if (applied > n->max_apply)
    n->max_apply = applied;
  if (n->st.last_damaged)
    scrub_soon(n, s);       /* the scrub finds it, counts it and repairs it */
  else if (applied >= COALESCE_RECS)
    count_unmat(n, s, page, applied, 0);  /* e.g. after a restart: counts were lost */
}

/* ---- coalescing ------------------------------------------------------------ */

static uint64_t own_point(struct node *n, const struct segment *s);

static int bgpage_cmp(const void *a, const void *b)
{
  const struct bgpage *x = a, *y = b;
  if (x->vol != y->vol)
    return x->vol < y->vol ? -1 : 1;
  if (x->pg != y->pg)
    return x->pg < y->pg ? -1 : 1;
  return x->page < y->page ? -1 : x->page > y->page;
}

static int coalesce_some(struct node *n)
{
  char why[256];
  if (store_begin(&n->st, why, sizeof why) != 0)
    return -1;
  /* The newest COALESCE_BATCH queued (the hottest), by segment and page. */
  size_t take = n->ncoq < COALESCE_BATCH ? n->ncoq : COALESCE_BATCH;
  struct bgpage *done = malloc((take + 1) * sizeof *done);
  memcpy(done, &n->coq[n->ncoq - take], take * sizeof *done);
  n->ncoq -= take;          /* the pages taken leave the queue whatever becomes of them */
  qsort(done, take, sizeof *done, bgpage_cmp);
  int rc = 0;
  for (size_t j = 0; j < take && rc == 0; j++) {
    struct bgpage *q = &done[j];
    struct segment *s = node_find_seg(n, q->vol, q->pg);
    if (s == NULL)
      continue;
    uint64_t upto = own_point(n, s);   /* the PG's own chain only (gc_point) */
    if (upto == 0)
      continue;
    int made = 0;
    rc = store_coalesce(&n->st, s, q->page, upto, &made, why, sizeof why);
    if (rc == ERR_NOT_COMPLETE || rc == ERR_INTERNAL) {
      if (n->st.last_damaged || rc == ERR_INTERNAL)
        scrub_soon(n, s);
      rc = 0;               /* below its floor or GC point, or damaged: not now */
      continue;
    }
    n->coalesced += made;
  }
  if (rc != 0) {
    free(done);
    logwarn_rl("%s", why);
    node_rollback(n, (uint32_t)rc, why);
    return -1;
  }
  if (node_commit(n) != 0) {
    free(done);
    return -1;
  }
  for (size_t j = 0; j < take; j++) {
    struct segment *s = node_find_seg(n, done[j].vol, done[j].pg);
    if (s && s->unmat) {
      uint32_t left = store_unmat(&n->st, s, done[j].page);
      s->unmat[done[j].page - s->first_page] = (uint16_t)(left > 0xffff ? 0xffff : left);
    }
  }
  free(done);
  return 0;
}

/* ---- GC -------------------------------------------------------------------- */

/* How long a silent peer holds GC (the simulator shortens it, so that its
 * runs of seconds see segments come back behind their peers' GC point). */
static unsigned long long peer_wait(const struct node *n)
{
  return n->gc_peer_wait_ms ? n->gc_peer_wait_ms : GC_PEER_WAIT_MS;
}

/* How far s's chain is the PG's own: the PG's last record at or below
 * the writer's PGMRPL, as the writer names it, if this segment holds it
 * at or below its SCL (else 0). Not min(SCL, VDL heard): a segment that
 * missed a recovery may still hold, at or below the VDL it heard, records
 * that recovery's truncation cut (it has not heard of that truncation
 * yet), and a page version or a GC point on that dead branch would keep
 * it for good (simulator, seed 7297). The writer's record decides: the
 * chain below a record is fixed by its backlinks, and no LSN is ever
 * handed out twice, so a segment holding it holds the PG's chain below
 * it. Every coalescing and GC point lies at or below this one. */
static uint64_t own_point(struct node *n, const struct segment *s)
{
  uint64_t t = s->pgmrpl_tail;
  if (t == 0 || t > s->scl)
    return 0;
  if (t <= s->gc_lsn)
    return s->gc_lsn;        /* on the chain already (it was freed to) */
  return store_held(&n->st, s, t, NULL) ? t : 0;
}

/* The point s may free to now (see the top). */
static uint64_t gc_point(struct node *n, const struct segment *s, unsigned long long now)
{
  if (seg_is_binlog(s))
    return 0;               /* released by retention instead (nbinlog.c) */
  uint64_t p = own_point(n, s);
  const struct gossip *g = gossip_of(n, s->volume_id, s->pg);
  if (g == NULL)
    return 0;               /* peers not known yet: they may need everything */
  for (int k = 0; k < g->npeers; k++) {
    unsigned long long at = g->peer_at[k] ? g->peer_at[k] : n->started_at;
    if (now - at < peer_wait(n) && g->peer_scl[k] < p)
      p = g->peer_scl[k];
  }
  /* Invariant 11: nothing the backup has not staged (nbackup.c). */
  uint64_t b = nbk_gc_bound(n, s);
  return p < b ? p : b;
}

static int gc_some(struct node *n, unsigned long long now)
{
  char why[256];
  if (n->no_gc)
    return 0;               /* AURALOG_NO_GC=1: measuring disk use without GC */
  size_t budget = GC_BATCH;
  int opened = 0;
  for (size_t j = 0; j < n->nsegs && budget > 0; j++) {
    struct segment *s = n->segs[(n->gc_next + j) % n->nsegs];
    uint64_t p = gc_point(n, s, now);
    if (p <= s->gc_lsn || s->catchup)
      continue;
    if (!opened && store_begin(&n->st, why, sizeof why) != 0)
      return -1;
    opened = 1;
    size_t nr, ni;
    uint64_t made0 = n->st.gc_made;
    int rc = store_gc(&n->st, s, p, budget, &nr, &ni, why, sizeof why);
    if (rc != 0) {
      logwarn_rl("%s", why);
      node_mark_dirty(n, s);
      node_rollback(n, (uint32_t)rc, why);
      return -1;
    }
    if (nr > 0)
      node_mark_dirty(n, s);
    n->gc_records += nr;
    n->gc_images += ni;
    /* The versions GC made are records coalesced into pages (paper
     * §4.2.3: "advance the materialized pages ... by coalescing the older
     * log records and then safely garbage collecting them"). Not counted,
     * lab 8's check saw none made where GC ran before any page reached
     * COALESCE_RECS records (an idle PG hears the PGMRPL: vcore.c). */
    n->coalesced += n->st.gc_made - made0;
    budget -= nr < budget ? nr : budget;
  }
  n->gc_next++;
  /* The whole budget used: more may be free, so the next batch comes after
   * BG_MS, not GC_MS. GC_BATCH bounds one turn's work; this keeps GC up
   * with a writer faster than GC_BATCH records per GC_MS. */
  n->gc_behind = budget == 0;
  return opened ? node_commit(n) : 0;
}

/* ---- repair ---------------------------------------------------------------- */

/* Is page (index i of s) asked of a peer now? */
static int asked(const struct node *n, const struct segment *s, uint32_t i)
{
  for (int j = 0; j < REPAIR_INFLIGHT; j++)
    if (n->rep[j].req && n->rep[j].vol == s->volume_id && n->rep[j].pg == s->pg &&
        n->rep[j].page == s->first_page + i)
      return 1;
  return 0;
}

/* Should s catch up by page versions? When every peer ahead of it has
 * freed the records it lacks (its GC point is above our SCL), gossip by
 * records cannot fill the hole: take every page as of that GC point.
 *
 * Or when it is stuck on a cut it cannot install: its SCL has not moved
 * for SCL_STUCK_MS while peers are ahead, it refused since then a range
 * a peer holds or the writer rests on, and a peer freed past it. That is
 * a segment that missed a recovery and holds, above that recovery's VDL,
 * records of a branch it cut, and holds a range of the same epoch signed
 * with that epoch's key after the epoch ended (a stolen key), which came
 * first: segment.c seg_trunc_ok B3 then refuses the real one for good.
 * Its SCL stays on the dead branch, its peers that still hold the records
 * hold their GC for it, and gossip moves nothing (simulator, seed 5919,
 * once recovery went on without a restarting node). Pages as of a peer's
 * GC point are that peer's chain, which the cut branch is not on: the
 * jump drops every record of s below the point, the dead ones with them,
 * and s chains on from there (finish_catch_up). Only then: a segment
 * stuck for any other reason is a bug to see (the simulator's check that
 * every segment converges), not one to paper over. */
static void finish_catch_up(struct node *n, struct segment *s);
static void binlog_catch_up(struct node *n, struct segment *s, const struct gossip *g,
                            unsigned long long now, int stuck_scl);

static void maybe_catch_up(struct node *n, struct segment *s, const struct gossip *g,
                           unsigned long long now)
{
  if (g == NULL)
    return;
  if (s->scl != s->scl_seen || s->scl_seen_at == 0) {
    s->scl_seen = s->scl;
    s->scl_seen_at = now ? now : 1;
  }
  int stuck_scl = !s->catchup && now - s->scl_seen_at > SCL_STUCK_MS &&
                  s->cut_refused_at >= s->scl_seen_at;
  if (seg_is_binlog(s)) {
    binlog_catch_up(n, s, g, now, stuck_scl);   /* no pages: records only */
    return;
  }
  uint64_t to = 0;
  int can = 0;              /* a peer can still build the pages at s->catchup */
  for (int k = 0; k < g->npeers; k++) {
    /* A catch-up under way counts every peer, ahead of it or not: gossip
     * may have brought its records meanwhile (its SCL as high as theirs)
     * but not its pages at the point, and a peer that freed past the
     * point builds them at its own GC point. Counting only peers ahead,
     * it waited for ever once none was (simulator, --faults backup, seed
     * 946: the writes had stopped, and the peers' GC, held by the PG's
     * backup point, waited for this node, the PG's uploader by rule U,
     * which stages nothing while a catch-up is under way: nbackup.c). */
    if (g->peer_at[k] == 0 || now - g->peer_at[k] > peer_wait(n) ||
        (g->peer_scl[k] <= s->scl && !s->catchup))
      continue;
    if (g->peer_gc[k] <= s->scl && !s->catchup && !stuck_scl)
      return;               /* this one can send records: gossip will */
    if (s->catchup && g->peer_gc[k] <= s->catchup && g->peer_scl[k] >= s->catchup &&
        g->peer_refused[k] != s->catchup)
      can = 1;              /* (one that refused a page there cannot) */
    if (g->peer_gc[k] > to)
      to = g->peer_gc[k];
  }
  /* One that could build the pages at the point may still refuse some (a
   * floor of its own, damage): after CATCHUP_STUCK_MS, a later point. */
  int stuck = s->catchup && now - s->catchup_at > CATCHUP_STUCK_MS;
  if (to == 0 || (s->catchup && ((can && !stuck) || to <= s->catchup)))
    return;
  if (!s->catchup && to <= s->scl)
    return;                 /* stuck, but no peer freed past it: gossip must do */
  /* A peer that did not hear from us lately went on freeing: once every
   * peer ahead is past the point we were catching up to, no one can build
   * the pages there any more; start again at a point one can (the peers
   * we pull from hold their GC for us meanwhile, gc_point). */
  loginfo("catch-up on %s: volume %llu pg %u is complete to %llu, but its peers freed "
          "their records up to %llu%s: fetching every page as of %llu%s", n->id,
          (unsigned long long)s->volume_id, s->pg, (unsigned long long)s->scl,
          (unsigned long long)to, stuck_scl ? " (and it cannot install a cut its PG holds)" : "",
          (unsigned long long)to,
          s->catchup ? " (again: they freed past the last point)" : "");
  s->catchup = to;
  s->catchup_at = now;
  if (s->floor == NULL)
    s->floor = calloc(s->npages, sizeof *s->floor);
  for (uint32_t i = 0; i < s->npages; i++)
    s->floor[i] = UINT64_MAX;
  node_mark_dirty(n, s);    /* written with the next commit: a restart resumes */
}

/* Every page of s is fetched as of s->catchup: move there. */
static void finish_catch_up(struct node *n, struct segment *s)
{
  char why[256];
  int rc = store_begin(&n->st, why, sizeof why);
  if (rc == 0)
    rc = store_jump(&n->st, s, s->catchup, why, sizeof why);
  if (rc == 0)
    rc = store_rechain(&n->st, s, s->catchup, why, sizeof why);
  /* The peer froze its GC point at or below a VDL it heard: a durable
   * point, the segment's VDL hint from now on, and heard as from its own
   * epoch (segment.h). That may be older than the writer the peer heard
   * it from, but the bound never refuses for it: gc_lsn is now this point,
   * and a range is checked from max(from, gc_lsn) (segment.c B1). */
  if (rc == 0 && s->vdl < s->catchup)
    s->vdl = s->catchup;
  if (rc == 0)
    seg_heard_note(s, s->epoch, s->catchup);
  node_mark_dirty(n, s);
  uint64_t to = s->catchup;
  s->catchup = 0;
  if (rc != 0) {
    logwarn_rl("%s", why);
    node_rollback(n, (uint32_t)rc, why);
    return;
  }
  if (node_commit(n) == 0) {
    n->catchups++;
    loginfo("catch-up on %s: volume %llu pg %u now starts at %llu (complete to %llu)",
            n->id, (unsigned long long)s->volume_id, s->pg, (unsigned long long)to,
            (unsigned long long)s->scl);
  }
}

/* ---- a binlog segment behind released records (issue 29) ------------------ */

/* Invariant BJ (binlog jump). A binlog segment (segment.h seg_is_binlog)
 * has no pages to catch up by: its records are all it holds, and a peer
 * frees them only by retention (nbinlog.c), which moves the peer's gc_lsn
 * to its release point R: every record at or below R is gone from that
 * peer for good, every one above is still held. When every peer ahead of
 * s (heard within peer_wait, SCL above s's) has released past s's SCL
 * (gc_lsn > scl), gossip can never fill s's hole; then, and only then, s
 * starts its chain at the lowest such release point R, the binlog
 * equivalent of a data segment's catch-up with the page versions left
 * out: finish_catch_up with catchup = R drops what s holds at or below R,
 * sets its gc_lsn to R, chains it from R and takes R as a durable point;
 * gossip then pulls the records above R from the peer that released to
 * R, which holds every one of them. So s holds what its peers still hold,
 * no more, and its SCL reaches the PG's tail: a new binlog segment
 * hydrates by records alone and can become current (member.h M2, M4 b).
 * While a peer ahead still holds the records above s's SCL (its gc_lsn at
 * or below it), gossip fills the hole and nothing is dropped: a binlog
 * segment never gives up a record a peer can still send it.
 *
 * What BJ asks of a release point R (nbinlog.c), as of a data PG's GC
 * point (gc_point, own_point): R is 0 or the LSN of a record on the
 * binlog PG's chain (the next record links to it; else no SCL chained
 * from R could pass it), and at or below a VDL the releasing segment
 * heard (nothing at or below R is ever truncated, and finish_catch_up
 * takes R as s's VDL hint). A consumer reads a segment only above its
 * gc_lsn: the records at or below R are released everywhere it matters.
 * (A new segment of a PG whose peers released nothing, gc_lsn 0, pulls
 * the whole log: gossip.c.) */
static void binlog_catch_up(struct node *n, struct segment *s, const struct gossip *g,
                            unsigned long long now, int stuck_scl)
{
  uint64_t to = 0;
  for (int k = 0; k < g->npeers; k++) {
    if (g->peer_at[k] == 0 || now - g->peer_at[k] > peer_wait(n) || g->peer_scl[k] <= s->scl)
      continue;             /* not heard lately, or not ahead */
    if (g->peer_gc[k] <= s->scl) {
      if (!stuck_scl)
        return;             /* it can send the records: gossip will */
      continue;             /* (stuck on a cut it cannot install: only a jump helps) */
    }
    if (to == 0 || g->peer_gc[k] < to)
      to = g->peer_gc[k];   /* the lowest release point past us: the most kept */
  }
  if (to <= s->scl)
    return;
  loginfo("catch-up on %s: binlog segment of volume %llu (pg %u) is complete to %llu, but "
          "each peer ahead released its records past it (retention), the least far to %llu: "
          "its chain starts there, and gossip brings the records above",
          n->id, (unsigned long long)s->volume_id, s->pg, (unsigned long long)s->scl,
          (unsigned long long)to);
  s->catchup = to;
  finish_catch_up(n, s);
}

static void repair_some(struct node *n, unsigned long long now)
{
  int free_slot = 0;
  for (int j = 0; j < REPAIR_INFLIGHT; j++) {
    if (n->rep[j].req && now - n->rep[j].sent_at > 4 * REPAIR_MS)
      n->rep[j].req = 0;    /* lost or ignored: ask again */
    free_slot += n->rep[j].req == 0;
  }
  for (size_t j = 0; j < n->nsegs; j++) {
    struct segment *s = n->segs[j];
    struct gossip *g = gossip_of(n, s->volume_id, s->pg);
    maybe_catch_up(n, s, g, now);
    if (s->floor == NULL || g == NULL)
      continue;
    int pending = 0;
    for (uint32_t i = 0; i < s->npages; i++) {
      if (s->floor[i] != UINT64_MAX)
        continue;
      pending = 1;
      /* Full: pending is all this segment's scan can learn now. It went
       * on through every page of every segment, after every answer: a
       * spare catching up 450 segments of 256 pages scanned ~10^5 pages
       * per page fetched. */
      if (free_slot == 0)
        break;
      if (asked(n, s, i))
        continue;
      /* A catch-up fetches out of the hydration budget (member.h M2): it
       * never starves foreground commits; what is left waits a BG_MS. */
      if (s->catchup && hydrate_budget(n) < (int64_t)s->page_size) {
        if (n->repair_at > now + BG_MS)
          n->repair_at = now + BG_MS;
        continue;
      }
      for (int t = 0; t < g->npeers; t++) {
        int k = (n->rep_peer + t) % g->npeers;
        struct peer *p = &n->peers[g->peer[k]];
        struct ep *c = gossip_peer_conn(n, g->peer[k]);
        if (c == NULL || !gossip_reachable(n, p->az))
          continue;
        /* A repair asks for the page as of our own GC point when the peer
         * can build it there: the version comes back exactly where the
         * damaged one was, with no floor left behind (a floor on a peer
         * can keep another's catch-up from the page, and the peer's GC,
         * held by that one, from lifting the floor). Else at the latest
         * point both hold, with a floor. */
        uint64_t need = s->catchup;
        if (need == 0 && s->gc_lsn > 0 && g->peer_gc[k] <= s->gc_lsn &&
            s->gc_lsn <= g->peer_scl[k]) {
          need = s->gc_lsn;
        } else if (need == 0) {
          uint64_t point = s->scl < s->vdl ? s->scl : s->vdl;
          if (g->peer_scl[k] < point)
            point = g->peer_scl[k];
          need = store_tail(&n->st, s, point);
        }
        if (need == 0 || need < s->gc_lsn || need < g->peer_gc[k] || need > g->peer_scl[k])
          continue;         /* no point both of us can build the page at */
        if (s->catchup && g->peer_refused[k] == s->catchup)
          continue;         /* it refused a page at this point already */
        Env env = AURALOG__ENVELOPE__INIT;
        Auralog__ReadPage rp = AURALOG__READ_PAGE__INIT;
        rp.volume_id = s->volume_id;
        rp.pg = s->pg;
        rp.page_no = s->first_page + i;
        rp.read_point = need;
        rp.need = need;
        env.req = ++n->next_req;
        env.body_case = AURALOG__ENVELOPE__BODY_READ_PAGE;
        env.read_page = &rp;
        if (gossip_send(n, c, &env) != 0)
          continue;
        for (int x = 0; x < REPAIR_INFLIGHT; x++)
          if (n->rep[x].req == 0) {
            n->rep[x] = (struct repreq){env.req, s->volume_id, need, s->pg, rp.page_no, now, k};
            break;
          }
        if (s->catchup)
          hydrate_take(n, s->page_size);
        free_slot--;
        n->rep_peer = k + 1;
        break;
      }
    }
    if (!pending && s->catchup)
      finish_catch_up(n, s);
  }
}

void bg_on_answer(struct node *n, const Env *env)
{
  struct repreq *q = NULL;
  for (int j = 0; j < REPAIR_INFLIGHT && q == NULL; j++)
    if (env->req && n->rep[j].req == env->req)
      q = &n->rep[j];
  if (q == NULL)
    return;
  struct repreq r = *q;
  q->req = 0;
  /* The window is refilled once, at the turn's end (bg_work), not after
   * each answer: a refill scans every segment the node hosts, and a turn
   * brings many answers. Per answer, a spare hydrating 484 segments
   * fetched 2.3 MiB/s (bench repair, 700 PGs), a seventh of its budget. */
  n->rep_soon = 1;
  if (env->body_case != AURALOG__ENVELOPE__BODY_PAGE) {
    /* Refused: another peer next time. A peer that refuses a page at the
     * catch-up point (it freed past it, or holds that page only above it:
     * a floor, its own catch-up) is not asked at that point again, and
     * counts no more as one that can build the pages there: when none
     * can, the catch-up takes a later point (maybe_catch_up; simulator,
     * seed 9641). */
    struct segment *s = node_find_seg(n, r.vol, r.pg);
    struct gossip *g = s ? gossip_of(n, s->volume_id, s->pg) : NULL;
    if (g && s->catchup && r.need == s->catchup && r.peer >= 0 && r.peer < g->npeers)
      g->peer_refused[r.peer] = s->catchup;
    return;
  }
  const Auralog__Page *pg = env->page;
  struct segment *s = node_find_seg(n, r.vol, r.pg);
  if (s == NULL || pg->volume_id != s->volume_id || pg->pg != s->pg ||
      pg->page_no != r.page || pg->data.len != s->page_size ||
      pg->page_lsn > r.need || r.need < s->gc_lsn ||
      (s->catchup && r.need != s->catchup))
    return;
  uint32_t i = pg->page_no - s->first_page;
  if (seg_floor(s, i) != UINT64_MAX)
    return;                 /* repaired meanwhile */
  if (s->catchup)
    s->pulled += pg->data.len;   /* hydration's progress (SegStat.pulled) */
  char why[256];
  size_t dropped = 0;
  int rc = store_begin(&n->st, why, sizeof why);
  if (rc == 0)
    rc = store_drop_versions(&n->st, s, pg->page_no, r.need + 1, &dropped, why, sizeof why);
  if (rc == 0 && pg->page_lsn > 0)   /* 0: never written, a zero page: nothing to keep */
    rc = store_put_image(&n->st, s, pg->page_no, pg->page_lsn, pg->data.data, why,
                         sizeof why);
  node_mark_dirty(n, s);
  if (rc != 0) {
    logwarn_rl("%s", why);
    node_rollback(n, (uint32_t)rc, why);
    return;
  }
  s->from_peers++;
  /* Served again from N up; below it only once GC passes N (store_gc). */
  s->floor[i] = r.need > s->gc_lsn ? r.need : 0;
  if (s->floor[i] == 0 && pg->page_lsn > 0) {
    if (s->imaged == NULL)
      s->imaged = calloc((s->npages + 7) / 8, 1);
    s->imaged[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  /* Committed with the turn (node_end_turn), with the other answers of
   * the turn: a commit per page, each with its segment's SegMeta (its
   * floors) in a hot-log frame and its fdatasync, made the catch-up of a
   * repaired node's ~450 segments (115,000 pages) take minutes (crash
   * campaign, point 63). Nothing is promised to anyone before it: a crash
   * only loses pages to fetch again. */
  n->repaired += s->catchup == 0;
  if (s->catchup == 0)
    loginfo("repair: volume %llu pg %u: page %u as of %llu fetched from a PG peer",
            (unsigned long long)s->volume_id, s->pg, pg->page_no, (unsigned long long)r.need);
}

/* ---- the schedule ---------------------------------------------------------- */

void bg_work(struct node *n)
{
  if (n->st.txn != NULL)
    return;                 /* the turn's own commit failed: not now */
  unsigned long long now = io_now(n->io);
  if (n->started_at == 0)
    n->started_at = now ? now : 1;
  if (n->ncoq > 0 && (now >= n->co_at || n->co_hot)) {
    n->co_at = now + BG_MS;
    n->co_hot = 0;
    if (coalesce_some(n) != 0)
      return;
  }
  if (now >= n->gc_at) {
    n->gc_at = now + GC_MS;
    int rc = gc_some(n, now);
    if (n->gc_behind)
      n->gc_at = now + BG_MS;
    if (rc != 0 || tf_work(n) != 0)   /* and truncations all members hold (TF) */
      return;
  }
  if (now >= n->scrub_at) {
    n->scrub_at = now + SCRUB_MS;
    scrub_step(n);
  }
  if (now >= n->repair_at || n->rep_soon) {
    n->repair_at = now + REPAIR_MS;
    n->rep_soon = 0;
    repair_some(n, now);     /* keep the window full */
  }
  nbl_retain(n);             /* binlog retention (nbinlog.c), at its own pace */
  nbk_work(n);               /* stage what is due to the backup (nbackup.c) */
}

void bg_stat(const struct node *n, const struct segment *s, Auralog__SegStat *st)
{
  (void)n;
  uint64_t unmat = 0, damaged = 0;
  for (uint32_t i = 0; s->unmat && i < s->npages; i++)
    unmat += s->unmat[i];
  for (uint32_t i = 0; s->floor && i < s->npages; i++)
    damaged += s->floor[i] == UINT64_MAX;
  st->records = s->nrecs;
  st->unmaterialized = unmat;
  st->bytes = s->bytes;
  st->pgmrpl = s->pgmrpl;
  st->gc_lsn = s->gc_lsn;
  st->images = s->nimgs;
  st->oldest_image = s->oldest_img;
  st->damaged = damaged;
}
