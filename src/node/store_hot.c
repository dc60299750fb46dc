/*
 * store_hot.c: the store's hot log (store.c has the design and the
 * invariants H1-H6 it keeps; hotlog.c the file of frames): what a group
 * commit's frame holds, checkpoints, and the replay at open.
 *
 * A frame's payload is a list of entries, each
 *     type (1: SegMeta, 2: record)  1 byte
 *     volume                         8
 *     pg                             4
 *     length                         4
 *     the packed SegMeta or Record   length bytes
 * in the order they were stored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "node/hotlog.h"
#include "node/store_int.h"
#include "param.h"
#include "net/wire.h"

/* ---- the hot log's frames -------------------------------------------------- */


/* Room for an entry of len bytes in the open transaction's frame: where
 * its bytes go (NULL: out of memory). */
uint8_t *store_frame_add(struct store *st, int type, uint64_t vol, uint32_t pg,
                          size_t len)
{
  if (st->fcap - st->flen < ENT_HDR + len) {
    size_t cap = st->fcap ? st->fcap : 65536;
    while (cap - st->flen < ENT_HDR + len)
      cap *= 2;
    uint8_t *f = realloc(st->frame, cap);
    if (f == NULL)
      return NULL;
    st->frame = f;
    st->fcap = cap;
  }
  uint8_t *e = st->frame + st->flen;
  e[0] = (uint8_t)type;
  put_be64(e + 1, vol);
  put_be32(e + 9, pg);
  put_be32(e + 13, (uint32_t)len);
  st->flen += ENT_HDR + len;
  return e + ENT_HDR;
}

/* Does this transaction write a frame? */
int store_framing(const struct store *st)
{
  return st->hl != NULL && !st->replaying && !st->txn_sync;
}

int store_pending(const struct store *st)
{
  return st->hl != NULL && (hl_used(st->hl) > HL_HDR || st->kv->pending > 0);
}

int store_checkpoint_due(const struct store *st)
{
  /* The log's size bounds the replay at start; the bytes put since the
   * last checkpoint bound what lmdb holds in memory until it (kv_lmdb.c:
   * coalescing, indexing and GC put and delete too, with no frame). */
  return st->hl != NULL && (hl_used(st->hl) >= st->hot_ckpt || st->kv->pending >= st->hot_ckpt);
}

void store_sync_txn(struct store *st)
{
  st->txn_sync = 1;
}

int store_cut_joins(const struct store *st)
{
  /* Without a hot log every commit is synced in lmdb and no frame exists.
   * With one: the open transaction is synced in lmdb at its commit (it
   * writes no frame: what it staged for one is dropped) and the log holds
   * no frame now. The log grows only at a commit, so when this one
   * commits no frame older than it exists to be replayed after it (H3). */
  return st->txn != NULL &&
         (st->hl == NULL || (st->txn_sync && hl_used(st->hl) <= HL_HDR));
}

int store_checkpoint(struct store *st, char *why, size_t whylen)
{
  if (st->hl == NULL || st->txn != NULL ||
      (hl_used(st->hl) <= HL_HDR && st->kv->pending == 0))
    return 0;                /* nothing since the last one (or not ours to do now) */
  /* lmdb first: once the new generation starts, the old frames are dead,
   * so what they held must be durable in lmdb before. */
  int rc = kv_sync(st->kv);
  st->ckpt_fsyncs += st->kv->syncs_per_sync;
  if (rc != 0) {
    /* What the kv committed since the last checkpoint may be gone from it
     * (kv_lmdb.c drops its batch), while memory counts it: only a restart,
     * replaying the hot log (which still holds all of it), can tell. */
    st->broken = 1;
    store_fail(st, rc, why, whylen, "checkpointing (syncing the store)");
    snprintf(why + strlen(why), whylen - strlen(why), "; the node must restart");
    return ERR_INTERNAL;
  }
  char hwhy[200];
  if ((rc = hl_reset(st->hl, st->hot_shrink, hwhy, sizeof hwhy)) != 0) {
    st->ckpt_fsyncs++;
    snprintf(why, whylen, "checkpointing: %s", hwhy);
    return rc == ENOSPC ? ERR_DISK_FULL : ERR_INTERNAL;
  }
  st->ckpt_fsyncs++;
  st->checkpoints++;
  return 0;
}

/* ---- replaying the hot log ------------------------------------------------- */

/* The segments a replay touched, rebuilt from the kv as it goes (the
 * replay's own transaction), so that each record goes through seg_admit
 * against the chain and truncations the segment holds. */
struct replay {
  struct store *st;
  struct segment **segs;
  uint8_t *changed;          /* per segment: its SegMeta must be rewritten */
  size_t nsegs;
  uint64_t recs, skipped, refused;
  int rc;                    /* the first kv error (then nothing more is done) */
  char why[256];
};

static struct segment *replay_seg(struct replay *rp, uint64_t vol, uint32_t pg,
                                  const Auralog__SegMeta *m)
{
  for (size_t i = 0; i < rp->nsegs; i++)
    if (rp->segs[i]->volume_id == vol && rp->segs[i]->pg == pg)
      return rp->segs[i];
  struct store *st = rp->st;
  struct segment *s = calloc(1, sizeof *s);
  uint8_t k[12];
  seg_key(k, vol, pg);
  struct kv_val key = {sizeof k, k}, val;
  if (kv_get(st->kv, st->txn, st->segs, &key, &val) == 0) {
    if (store_load_one(st, st->txn, &val, s, rp->why, sizeof rp->why) != 0) {
      free(s);
      return NULL;           /* a SegMeta the kv cannot read: left alone */
    }
  } else if (m && m->seg && m->seg->volume_id == vol && m->seg->pg == pg) {
    /* A segment the kv never saw committed: its first frames are here. */
    seg_init(s, vol, pg, m->seg->first_page, m->seg->npages, m->seg->page_size);
  } else {
    free(s);
    return NULL;
  }
  rp->segs = realloc(rp->segs, (rp->nsegs + 1) * sizeof *rp->segs);
  rp->changed = realloc(rp->changed, rp->nsegs + 1);
  rp->changed[rp->nsegs] = kv_get(st->kv, st->txn, st->segs, &key, &val) != 0;
  rp->segs[rp->nsegs++] = s;
  return s;
}

/* H4: merge a SegMeta from a frame into the segment: never lower. */
static void replay_meta(struct replay *rp, uint64_t vol, uint32_t pg, const uint8_t *p,
                        size_t n)
{
  struct store *st = rp->st;
  Auralog__SegMeta *m = auralog__seg_meta__unpack(NULL, n, p);
  struct segment *s = m ? replay_seg(rp, vol, pg, m) : NULL;
  if (s == NULL) {
    rp->skipped++;
    if (m)
      auralog__seg_meta__free_unpacked(m, NULL);
    return;
  }
  uint8_t *changed = &rp->changed[rp->nsegs - 1];
  for (size_t i = 0; i < rp->nsegs; i++)
    if (rp->segs[i] == s)
      changed = &rp->changed[i];
  struct segment before = *s;
  store_meta_heard(s, m);
  store_meta_member(s, m);   /* H4 too: membership epochs never lowered */
  if (m->epoch > s->epoch || m->vdl > s->vdl || s->nheard != before.nheard ||
      s->mepoch != before.mepoch || s->mepoch_min != before.mepoch_min ||
      s->next != before.next ||
      memcmp(s->heard, before.heard, s->nheard * sizeof *s->heard) != 0)
    *changed = 1;
  if (m->epoch > s->epoch)
    s->epoch = m->epoch;
  if (m->vdl > s->vdl)
    s->vdl = m->vdl;
  uint64_t min_from = UINT64_MAX;
  struct trunc *tr;
  size_t ntr = store_meta_truncs(st, s, m, &tr);   /* the bound, as on every path */
  for (size_t i = 0; i < ntr && rp->rc == 0; i++) {
    struct trunc t = tr[i];
    if (seg_has_trunc(s, t.epoch, t.from, t.to))
      continue;
    /* A truncation the kv lacks (it never should: truncations are synced
     * in the kv, H3): install it as trunc.c does, cutting what it cuts. */
    size_t cut;
    *changed = 1;
    rp->rc = store_truncate(st, s, &t, &cut, rp->why, sizeof rp->why);
    seg_add_trunc(s, &t);
    if (t.from < min_from)
      min_from = t.from;
  }
  free(tr);
  if (rp->rc == 0 && min_from < s->scl)
    rp->rc = store_rechain_in(st, st->txn, s, store_tail(st, s, min_from), rp->why,
                     sizeof rp->why);
  auralog__seg_meta__free_unpacked(m, NULL);
}

static void replay_rec(struct replay *rp, uint64_t vol, uint32_t pg, const uint8_t *p,
                       size_t n)
{
  struct store *st = rp->st;
  Rec *r = auralog__record__unpack(NULL, n, p);
  struct segment *s = r ? replay_seg(rp, vol, pg, NULL) : NULL;
  char rwhy[200];
  if (s == NULL || rec_check(r, s->page_size, rwhy, sizeof rwhy) != ERR_NONE) {
    rp->skipped++;
    if (r)
      auralog__record__free_unpacked(r, NULL);
    return;
  }
  int dup = 0;
  uint64_t held_epoch = 0;
  /* H3: what a held truncation cuts, or what contradicts the chain, is
   * refused here as it would be from the network. */
  if (seg_admit(s, r, &dup, rwhy, sizeof rwhy) != ERR_NONE) {
    rp->refused++;
  } else if (!dup) {
    rp->rc = store_put_rec(st, s, r, rp->why, sizeof rp->why);
    if (rp->rc == 0) {
      seg_add(s, r->lsn, r->prev_lsn);   /* durable once the replay commits */
      rp->recs++;
      for (size_t i = 0; i < rp->nsegs; i++)
        if (rp->segs[i] == s)
          rp->changed[i] = 1;
    }
  } else if (store_held_in(st, st->txn, s, r->lsn, &held_epoch) && held_epoch < r->epoch) {
    /* A copy adopted by a recovery (node_stage): the newer epoch's wins. */
    rp->rc = store_put_rec(st, s, r, rp->why, sizeof rp->why);
    rp->recs += rp->rc == 0;
  }
  auralog__record__free_unpacked(r, NULL);
}

/* One whole frame of the hot log (hl_open's callback): its SegMetas
 * first, then its records. */
static void replay_frame(void *arg, uint64_t seq, const uint8_t *p, size_t n)
{
  struct replay *rp = arg;
  (void)seq;
  for (int pass = 0; pass < 2 && rp->rc == 0; pass++) {
    for (size_t off = 0; off + ENT_HDR <= n && rp->rc == 0;) {
      int type = p[off];
      uint64_t vol = get_be64(p + off + 1);
      uint32_t pg = get_be32(p + off + 9);
      uint32_t len = get_be32(p + off + 13);
      if (len > n - off - ENT_HDR)
        break;               /* cannot be: the frame's CRC held */
      const uint8_t *e = p + off + ENT_HDR;
      if (pass == 0 && type == ENT_META)
        replay_meta(rp, vol, pg, e, len);
      else if (pass == 1 && type == ENT_REC)
        replay_rec(rp, vol, pg, e, len);
      off += ENT_HDR + (size_t)len;
    }
  }
}

/* Take the hot log in f: replay it into the kv (one transaction), sync
 * the kv and restart the log (H5), then switch the kv's syncs off. */
int store_open_hot_log(struct store *st, struct hl_file f, uint64_t ckpt, uint64_t chunk,
                    char *why, size_t whylen)
{
  st->hot_ckpt = ckpt ? ckpt : HOTLOG_CHECKPOINT;
  st->hot_shrink = 2 * st->hot_ckpt;
  st->hl = calloc(1, sizeof *st->hl);
  struct replay rp = {.st = st};
  int rc = st->hl ? kv_set_nosync(st->kv, 1) : ENOMEM;
  if (rc != 0) {
    snprintf(why, whylen, "cannot open storage: %s", kv_strerror(st->kv, rc));
    f.ops->close(f.ctx);
    store_close(st);
    return -1;
  }
  st->syncs_per_commit = st->kv->syncs_per_commit;
  if ((rc = store_begin(st, why, whylen)) != 0) {
    f.ops->close(f.ctx);
    store_close(st);
    return -1;
  }
  st->replaying = 1;
  if (hl_open(st->hl, f, chunk, replay_frame, &rp, why, whylen) != 0) {
    free(st->hl);            /* hl_open closed f */
    st->hl = NULL;
    store_close(st);
    return -1;
  }
  /* Each changed segment's SegMeta, merged, with the SCL of its chain.
   * (Only those: a replay that finds everything held writes nothing, so
   * a node whose disk is full can still start.) */
  for (size_t i = 0; i < rp.nsegs && rp.rc == 0; i++)
    if (rp.changed[i])
      rp.rc = store_put_meta(st, rp.segs[i], rp.why, sizeof rp.why);
  free(rp.changed);
  st->replaying = 0;
  for (size_t i = 0; i < rp.nsegs; i++) {
    seg_free(rp.segs[i]);
    free(rp.segs[i]);
  }
  free(rp.segs);
  if (rp.rc != 0) {
    snprintf(why, whylen, "replaying the hot log: %s", rp.why);
    store_close(st);
    return -1;
  }
  st->txn_sync = 0;
  /* H5: the kv synced (whatever a previous process left in the page
   * cache included) and the log restarted, before anything is served. */
  int frames = hl_used(st->hl) > HL_HDR;
  if ((rc = store_commit(st, why, whylen)) != 0 ||
      (rc = frames ? store_checkpoint(st, why, whylen) : kv_sync(st->kv)) != 0) {
    if (!frames)
      snprintf(why, whylen, "cannot sync storage: %s", kv_strerror(st->kv, rc));
    store_close(st);
    return -1;
  }
  /* The counters are the serving node's (bench): the open's work apart. */
  st->commits = st->fsyncs = st->ckpt_fsyncs = st->checkpoints = 0;
  st->replayed = rp.recs;
  if (st->hl->replayed || st->hl->damaged || rp.skipped || rp.refused)
    loginfo("hot log: replayed %llu frame%s (%llu record%s new to the store, %llu "
            "refused, %llu unreadable), %llu damaged frame%s skipped",
            (unsigned long long)st->hl->replayed, st->hl->replayed == 1 ? "" : "s",
            (unsigned long long)rp.recs, rp.recs == 1 ? "" : "s",
            (unsigned long long)rp.refused, (unsigned long long)rp.skipped,
            (unsigned long long)st->hl->damaged, st->hl->damaged == 1 ? "" : "s");
  return 0;
}
