/*
 * nbackup.c: continuous backup, the storage node's side (paper Figure 4,
 * step 6: "periodically stage log and new pages to S3"; DESIGN.md
 * invariant 11). The storage tier backs itself up: the writer does no
 * work for it and waits for none of it.
 *
 * What goes to the object store (src/backup/bkfmt.h): per PG, log pieces
 * (every record of the PG in an LSN range) and, where a piece cannot start
 * from what is already there, a base image (every page of the PG as of a
 * point). A PG can be restored to any point its objects reach without a
 * gap (src/backup/bkplan.h); the highest such point is the PG's backup
 * point.
 *
 * What may be staged. Only what no truncation can ever cut: the PG's
 * records at or below a VDL its writer announced. Each Append carries the
 * writer's VDL and the PG's last record at or below it (vdl_tail, exact:
 * vfs/read.c pg_need). A segment whose chain holds that record holds
 * every record of the PG up to the VDL (backlinks fix the chain below a
 * record, and no LSN is handed out twice), and a piece is read by walking
 * the backlinks down from it: a record off that chain (a branch an older
 * writer left, not yet cut here) is never reached, so never staged.
 *
 * Who stages a PG (rule U). Each PG's log is uploaded once, not six
 * times: by the segment on the node with the lowest id among the PG's
 * members this node holds for alive, itself included. A peer is alive
 * while gossip can reach it (no partition between) and either this node's
 * connection to it is up and it was heard from (any PG's gossip) within
 * BACKUP_SILENT_MS, or it was heard from within BACKUP_TAKEOVER_MS: a
 * node that dies drops its connections, so the next one takes over
 * within seconds; one that hangs with its connections open, within
 * BACKUP_SILENT_MS (longer than an idle PG's gossip period). A node that
 * takes a PG over first reads the PG's backup point from the store itself
 * (NBK_LIST): so it starts where the last uploader's objects end, even if
 * that uploader died before its peers heard how far it got. Two nodes may
 * both think they stage a PG (a partition, the moment of a takeover):
 * their pieces overlap, and hold the same records, so nothing is lost and
 * restore walks through them.
 *
 * The GC bound (Invariant 11): with backup on, a segment frees nothing
 * above the PG's backup point as it knows it (bg.c gc_point): its own
 * uploads, or its peers' word of theirs (gossip carries bk_point; a peer
 * says a point only once its objects are stored). A node that knows no
 * point (just started) frees nothing until it hears one. So an uploader
 * taking over always finds the records above the store's point in its own
 * segment, unless its segment was filled by page versions from a peer
 * (catch-up) or backup began after GC had run: then it stages a base
 * image at the writer's VDL first and the log from there.
 *
 * Retention. A PG that changed gets a new base image every BACKUP_BASE_MS
 * (or a quarter of the retention, if shorter); after each, its uploader
 * deletes what no point within the retention needs (bkplan.h bk_retain):
 * older bases, and pieces below the newest base old enough. The
 * retention is the store's own (v<VOL>/retention, `auralog backup
 * retention`), read with each listing and each retention pass, so every
 * uploader applies the same one and a change needs no restart.
 *
 * A failed upload or listing is tried again after BACKUP_RETRY_MS; while
 * the store is away the backup point stands still, GC waits, and the
 * records wait in the segment; staging catches up in pieces of at most
 * BACKUP_PIECE_MAX bytes once the store answers again.
 */
#include <stdlib.h>
#include <string.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "bugs.h"
#include "lib/log.h"
#include "node/node.h"
#include "node/store_int.h"

void nbk_on_vdl(struct node *n, struct segment *s, uint64_t vdl, uint64_t tail)
{
  if (n->bk_io == NULL || vdl <= s->bk.vdl || tail > vdl)
    return;
  s->bk.vdl = vdl;
  s->bk.tail = tail;
  /* A clock note for restore --to-time: at this wall time the VDL had
   * reached vdl (a little earlier, in fact: it travelled here). */
  uint64_t ms = n->bk_io->wall_ms(n->bk_io->ctx);
  unsigned last = (s->bk.nclock + BK_CLOCK_MAX - 1) % BK_CLOCK_MAX;
  if (s->bk.nclock == 0 || ms >= s->bk.clock[2 * last] + BK_CLOCK_EVERY_MS) {
    unsigned i = s->bk.nclock++ % BK_CLOCK_MAX;
    s->bk.clock[2 * i] = ms;
    s->bk.clock[2 * i + 1] = vdl;
  }
}

void nbk_heard(struct node *n, struct segment *s, uint64_t point)
{
  if (point > s->bk.point) {
    s->bk.point = point;
    s->bk.moved_at = io_now(n->io);
  }
}

/* GC waits for the backup (Invariant 11): say so when it has waited long,
 * so that a store that is away or too slow is seen before the disk fills. */
static void stalled(struct segment *s, unsigned long long now)
{
  if (s->bk.vdl <= s->bk.point) {
    s->bk.moved_at = now;    /* nothing to stage: not behind */
    return;
  }
  if (s->bk.moved_at == 0)
    s->bk.moved_at = now;
  if (now - s->bk.moved_at >= BACKUP_STALL_MS && now >= s->bk.warned_at + BACKUP_STALL_MS) {
    s->bk.warned_at = now;
    logwarn("backup: volume %llu pg %u: its backup point has stood at %llu for %llu s (the VDL "
            "is %llu): this PG's GC waits for it; is the object store reachable?",
            (unsigned long long)s->volume_id, s->pg, (unsigned long long)s->bk.point,
            (now - s->bk.moved_at) / 1000, (unsigned long long)s->bk.vdl);
  }
}

uint64_t nbk_gc_bound(const struct node *n, const struct segment *s)
{
  if (PLANTED(BUG_GC_PAST_BACKUP))
    return UINT64_MAX;       /* planted: GC frees what the store does not hold yet */
  return n->bk_io ? s->bk.point : UINT64_MAX;
}

/* Rule U: does this node stage s's PG now? */
static int uploader(struct node *n, const struct segment *s, unsigned long long now)
{
  if (s->next || s->catchup)
    return 0;                /* still being filled: not a whole copy yet */
  struct gossip *g = gossip_of(n, s->volume_id, s->pg);
  if (g == NULL)
    return 0;                /* peers not known yet */
  /* (The simulator sets its own: runs of seconds see takeovers.) */
  unsigned long long wait = n->bk_takeover_ms ? n->bk_takeover_ms : BACKUP_TAKEOVER_MS;
  unsigned long long silent = n->bk_takeover_ms ? 4ull * n->bk_takeover_ms : BACKUP_SILENT_MS;
  for (int k = 0; k < g->npeers; k++) {
    const struct peer *p = &n->peers[g->peer[k]];
    if (strcmp(p->id, n->id) >= 0 || !gossip_reachable(n, p->az))
      continue;
    unsigned long long at = g->peer_at[k] > p->heard_at ? g->peer_at[k] : p->heard_at;
    if (at < n->started_at)
      at = n->started_at;    /* just started: give it time to be heard */
    if (now - at < (p->up ? silent : wait))
      return 0;
  }
  return 1;
}

static void submit(struct node *n, struct segment *s, struct nbk_job *j)
{
  j->vol = s->volume_id;
  j->pg = s->pg;
  s->bk.busy = 1;
  n->bk_io->submit(n->bk_io->ctx, j);
}

/* The clock notes of s in (from, to], oldest first, into out (pairs):
 * how many values. */
static size_t clock_in(const struct segment *s, uint64_t from, uint64_t to, uint64_t *out)
{
  unsigned n = s->bk.nclock < BK_CLOCK_MAX ? s->bk.nclock : BK_CLOCK_MAX;
  size_t k = 0;
  for (unsigned i = s->bk.nclock - n; i < s->bk.nclock; i++) {
    const uint64_t *c = &s->bk.clock[2 * (i % BK_CLOCK_MAX)];
    if (c[1] > from && c[1] <= to) {
      out[k++] = c[0];
      out[k++] = c[1];
    }
  }
  return k;
}

/* A base image of s as of point `at`: every page read as of rp, which
 * holds the same (no record of the PG's chain lies in (rp, at]). */
static int stage_base(struct node *n, struct segment *s, uint64_t at, uint64_t rp)
{
  uint64_t tail = rp;
  Auralog__BackupBase m = AURALOG__BACKUP_BASE__INIT;
  m.volume_id = s->volume_id;
  m.pg = s->pg;
  m.at = at;
  m.first_page = s->first_page;
  m.npages = s->npages;
  m.page_size = s->page_size;
  m.by = n->id;
  Auralog__BasePage *pv = calloc(s->npages, sizeof *pv);
  Auralog__BasePage **pp = calloc(s->npages, sizeof *pp);
  uint8_t *buf = malloc((size_t)s->npages * s->page_size);
  int rc = 0;
  char why[300];
  for (uint32_t i = 0; i < s->npages && rc == 0; i++) {
    uint8_t *page = buf + (size_t)i * s->page_size;
    uint64_t plsn;
    rc = store_read_page(&n->st, s, s->first_page + i, tail, page, &plsn, why, sizeof why);
    if (rc != 0)
      break;
    size_t z = 0;
    while (z < s->page_size && page[z] == 0)
      z++;
    if (z == s->page_size)
      continue;              /* all zeros: restore makes it so */
    auralog__base_page__init(&pv[m.n_pages]);
    pv[m.n_pages].page_no = s->first_page + i;
    pv[m.n_pages].data = (ProtobufCBinaryData){s->page_size, page};
    pp[m.n_pages] = &pv[m.n_pages];
    m.n_pages++;
  }
  if (rc == 0) {
    m.pages = pp;
    struct nbk_job *j = calloc(1, sizeof *j);
    j->kind = NBK_PUT;
    j->point = at;
    j->base_ms = n->bk_io->wall_ms(n->bk_io->ctx);
    bk_key_base(j->key, s->volume_id, s->pg, at, j->base_ms);
    j->data = bk_encode(BK_BASE, &m.base, &j->len);
    submit(n, s, j);
  } else {
    logwarn_rl("backup: volume %llu pg %u: cannot read its pages as of %llu for a base "
               "image: %s", (unsigned long long)s->volume_id, s->pg,
               (unsigned long long)tail, why);
  }
  free(buf);
  free(pp);
  free(pv);
  return rc;
}

/* The next log piece of s: its records in (point, bk.vdl], walked down
 * the chain from bk.tail, at most BACKUP_PIECE_MAX bytes of them (then
 * the piece ends at its last record, and the next one goes on from there). */
static void stage_piece(struct node *n, struct segment *s)
{
  uint64_t from = s->bk.point, to = s->bk.vdl, tail = s->bk.tail;
  size_t cap = 64, cnt = 0;
  const Rec **recs = malloc(cap * sizeof *recs);
  uint8_t *owned = malloc(cap);
  int ok = 1;
  for (uint64_t lsn = tail; lsn > from;) {
    int own;
    const Rec *r = store_get_rec(&n->st, s, lsn, &own);
    if (r == NULL) {
      ok = 0;                /* not held whole: wait (gossip or the scrub mends it) */
      logwarn_rl("backup: volume %llu pg %u: record %llu of the PG's chain is not held whole "
                 "here; staging waits for it", (unsigned long long)s->volume_id, s->pg,
                 (unsigned long long)lsn);
      break;
    }
    if (cnt == cap) {
      cap *= 2;
      recs = realloc(recs, cap * sizeof *recs);
      owned = realloc(owned, cap);
    }
    recs[cnt] = r;
    owned[cnt++] = (uint8_t)own;
    lsn = r->prev_lsn;
  }
  if (ok) {
    /* Oldest first, and cut at BACKUP_PIECE_MAX. */
    for (size_t i = 0; i < cnt / 2; i++) {
      const Rec *t = recs[i];
      recs[i] = recs[cnt - 1 - i];
      recs[cnt - 1 - i] = t;
      uint8_t o = owned[i];
      owned[i] = owned[cnt - 1 - i];
      owned[cnt - 1 - i] = o;
    }
    size_t keep = cnt, bytes = 0;
    for (size_t i = 0; i < cnt; i++) {
      bytes += auralog__record__get_packed_size(recs[i]);
      if (bytes > BACKUP_PIECE_MAX && i > 0) {
        keep = i;
        to = recs[i - 1]->lsn;
        break;
      }
    }
    Auralog__BackupLog m = AURALOG__BACKUP_LOG__INIT;
    m.volume_id = s->volume_id;
    m.pg = s->pg;
    m.from = from;
    m.to = to;
    m.first_page = s->first_page;
    m.npages = s->npages;
    m.page_size = s->page_size;
    m.records = (Rec **)recs;
    m.n_records = keep;
    uint64_t clock[2 * BK_CLOCK_MAX];
    m.n_clock = clock_in(s, from, to, clock);
    m.clock = clock;
    m.by = n->id;
    struct nbk_job *j = calloc(1, sizeof *j);
    j->kind = NBK_PUT;
    j->point = to;
    bk_key_log(j->key, s->volume_id, s->pg, from, to);
    j->data = bk_encode(BK_LOG, &m.base, &j->len);
    submit(n, s, j);
  }
  for (size_t i = 0; i < cnt; i++)
    if (owned[i])
      auralog__record__free_unpacked((Rec *)recs[i], NULL);
  free(recs);
  free(owned);
}

/* How often a PG that changed gets a base image. */
static uint64_t base_every(const struct segment *s)
{
  uint64_t keep = s->bk.keep_ms ? s->bk.keep_ms : BACKUP_RETENTION_MS;
  return keep / 4 < BACKUP_BASE_MS ? keep / 4 : BACKUP_BASE_MS;
}

/* Stage what is due of s, its PG's uploader. */
static void stage(struct node *n, struct segment *s)
{
  if (s->bk.listed == 0) {
    struct nbk_job *j = calloc(1, sizeof *j);
    j->kind = NBK_LIST;
    submit(n, s, j);
    return;
  }
  if (s->bk.retain) {
    s->bk.retain = 0;
    struct nbk_job *j = calloc(1, sizeof *j);
    j->kind = NBK_RETAIN;
    j->now_ms = n->bk_io->wall_ms(n->bk_io->ctx);
    submit(n, s, j);
    return;
  }
  if (s->bk.vdl <= s->bk.point)
    return;                  /* nothing new below a VDL */
  uint64_t tail = s->bk.tail;
  if (tail > s->scl || (tail > 0 && tail > s->gc_lsn && !store_held(&n->st, s, tail, NULL)))
    return;                  /* our chain does not hold it yet: gossip brings it */
  /* The records just above the point are freed here (backup began after
   * GC, or page versions from a peer filled the segment): a base first.
   * And a PG that changed since its last base, that long ago: a new one,
   * at the point the log reaches (then retention may let older log go). */
  uint64_t wall = n->bk_io->wall_ms(n->bk_io->ctx);
  if (s->bk.point < s->gc_lsn && tail > s->bk.point) {
    stage_base(n, s, s->bk.vdl, tail);   /* pages as of the VDL: as of its tail */
    return;
  }
  /* At the point the log reaches: every record at or below it is held
   * (GC stops there), and none of the chain lies in (SCL, point] if the
   * SCL is lower (the writer's tail at or below the VDL is at or below
   * the SCL), so the pages as of min(point, SCL) are the pages as of it. */
  if (s->bk.point > s->bk.base_point && wall >= s->bk.base_ms + base_every(s) &&
      s->bk.point >= s->gc_lsn &&
      stage_base(n, s, s->bk.point, s->bk.point < s->scl ? s->bk.point : s->scl) == 0)
    return;
  /* A base that is only due never stands in the log's way: one this
   * segment cannot read as of the point (a page it holds only from a
   * later point on: a repair's or a catch-up's floor) is tried again at
   * the next pass, from a point the log has moved on to, and the piece
   * goes now. Waiting for it held the PG's backup point, and with it
   * every member's GC (Invariant 11), for as long as the floor stood
   * above the point: for good, once the PG went idle (simulator,
   * --faults backup, seed 123). */
  stage_piece(n, s);
}

void nbk_work(struct node *n)
{
  if (n->bk_io == NULL)
    return;
  unsigned long long now = io_now(n->io);
  if (now < n->bk_at)
    return;
  n->bk_at = now + BACKUP_MS;
  size_t took = 0;
  for (size_t i = 0; i < n->nsegs; i++) {
    struct segment *s = n->segs[i];
    if (seg_is_binlog(s))
      continue;              /* the backup holds the data PGs (issue 29: not the binlog yet) */
    stalled(s, now);
    int up = uploader(n, s, now);
    if (up && !s->bk.uploader) {
      s->bk.listed = 0;      /* taking it over: read the store's point first */
      took += s->bk.vdl > 0;   /* (a PG just loaded is no takeover) */
    }
    s->bk.uploader = (uint8_t)up;
    if (up && !s->bk.busy && now >= s->bk.fail_at)
      stage(n, s);
  }
  if (took)
    loginfo("backup: this node now stages %zu more PG%s (rule U: it has the lowest id of the "
            "members alive)", took, took == 1 ? "" : "s");
}

void nbk_done(struct node *n, struct nbk_job *j)
{
  struct segment *s = node_find_seg(n, j->vol, j->pg);
  if (s != NULL) {
    s->bk.busy = 0;
    if (j->rc != 0) {
      s->bk.fail_at = io_now(n->io) + BACKUP_RETRY_MS;
      logwarn_rl("backup: volume %llu pg %u: %s (trying again in %d ms)",
                 (unsigned long long)j->vol, j->pg, j->why, BACKUP_RETRY_MS);
    } else if (j->kind == NBK_LIST) {
      s->bk.listed = 1;
      nbk_heard(n, s, j->point);
      s->bk.keep_ms = j->keep_ms;
      if (j->base_ms > s->bk.base_ms) {
        s->bk.base_ms = j->base_ms;
        s->bk.base_point = j->base_at;   /* a PG unchanged since gets no new base */
      }
      if (s->bk.base_ms == 0)   /* none yet: the first comes BACKUP_BASE_MS from now */
        s->bk.base_ms = n->bk_io->wall_ms(n->bk_io->ctx);
    } else if (j->kind == NBK_RETAIN) {
      s->bk.keep_ms = j->keep_ms;
      if (j->point > 0)
        loginfo("backup: volume %llu pg %u: retention (%llu s) let %llu objects go",
                (unsigned long long)j->vol, j->pg, (unsigned long long)j->keep_ms / 1000,
                (unsigned long long)j->point);
    } else {
      nbk_heard(n, s, j->point);
      if (j->base_ms) {      /* a base image: older objects may go now */
        s->bk.base_ms = j->base_ms;
        s->bk.base_point = j->point;
        s->bk.retain = 1;
      }
    }
  }
  free(j->data);
  free(j);
}
