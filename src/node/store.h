/*
 * store.h: a storage node's segments on disk, in an ordered key-value
 * store (kv.h): lmdb on a real disk (store_open), or the simulator's disk
 * (store_open_kv). The only file of the node that touches the kv.
 *
 * Databases:
 *   segs   (volume, pg)                -> SegMeta (geometry, SCL hint, epoch)
 *   recs   (volume, pg, lsn)           -> packed Record, as received
 *   imgs   (volume, pg, page, lsn)     -> page image as of lsn (coalesced)
 * Keys are big-endian so the kv's byte order is numeric order. The
 * records of each page are indexed in memory (store_pmap.c, the page
 * map), not in the kv: a record costs one put and, at GC, one delete.
 *
 * Writes go into one open transaction (store_begin) that the node commits
 * once per event-loop turn: every Append that arrived in that turn becomes
 * durable with one fsync, and only then is acknowledged (group commit).
 *
 * The hot log (hotlog.h; store.c says how). With one (store_open on a
 * real disk, store_open_hot in the simulator), the kv commits without
 * syncing, and a commit first appends one frame to the hot log holding
 * everything the transaction stored (records with their volume and pg,
 * SegMetas) and fdatasyncs it: one device flush per group commit. A
 * checkpoint (store_checkpoint) syncs the kv and starts a new generation
 * of the log; at open, the frames since the last one are replayed into
 * the kv before anything is served. Without one (store_open_kv, tests),
 * every kv commit syncs, as before.
 *
 * Background work (paper §3.3: only steps 1-2, persist and acknowledge,
 * are in the foreground): coalescing, GC and the scrub (node/bg.c).
 */
#ifndef AURALOG_STORE_H
#define AURALOG_STORE_H

#include "node/kv.h"
#include "node/segment.h"

/* The store's format: 3 since the page index is in memory (no pidx and
 * unidx databases: an older auralog would build pages from an index that
 * lacks the records this one stored); 2 since sums are XXH3 (lib/sum.h);
 * 1 was zlib's crc32. Format 2 is upgraded in place at open (its index
 * databases emptied); any other is refused (store.c). */
#define STORE_FORMAT 3

struct store {
  struct kv *kv;             /* the store's: store_close closes it */
  unsigned segs, recs, imgs;  /* kv database handles */
  struct kv_txn *txn;        /* the open write transaction, or NULL */
  /* The hot log (NULL: none, every kv commit syncs). */
  struct hotlog *hl;
  uint8_t *frame;            /* the open transaction's frame payload */
  size_t flen, fcap;
  int txn_sync;              /* the open transaction skips the hot log: its
                                kv commit is synced (store_sync_txn) */
  int replaying;             /* store_put_* write no frame (replay) */
  int kv_committed;          /* the last kv commit succeeded */
  int broken;                /* a commit is in the kv and durable nowhere
                                known (no frame, no sync): stop the node */
  uint64_t hot_ckpt;         /* checkpoint once the log holds this many bytes */
  uint64_t hot_shrink;       /* ... and give back the file beyond this */
  /* Counters for `auralog bench`, since the store was opened. */
  uint64_t commits;          /* write transactions the kv made durable */
  uint64_t fsyncs;           /* device syncs of group commits: the hot log's
                                one each (without a hot log, lmdb's 2 each) */
  unsigned syncs_per_commit;
  /* The last store_read_page: records it applied, and whether it failed
   * on damage (a version or record that does not check). */
  unsigned last_applied;
  int last_damaged;
  uint64_t met_damage;      /* damaged items met outside the scrub (load, GC): counted for status */
  uint64_t gc_made;         /* page versions GC made (each page it frees records of gets its
                               version at the GC point first): coalescing too (bg.c counts it) */
  uint64_t truncs_refused;  /* truncations load or replay found out of bounds (seg_trunc_ok) */
  uint64_t checkpoints;      /* hot-log checkpoints made */
  uint64_t ckpt_fsyncs;      /* device syncs outside group commits: checkpoints
                                (kv sync + new generation), synced transactions */
  int timed;                 /* persist_us is measured (not in the simulator) */
  uint64_t persist_us;       /* time in store_commit()s that wrote: the kv's
                                commit and the frame's append and flush */
  uint64_t replayed;         /* records the last open replayed from the hot log */
  size_t last_put_len;       /* the packed size of the last record store_put_rec put */
  struct pmap *pmap;         /* every record held, by page, in memory (store_pmap.c) */
  struct rcache *rcache;     /* records stored lately, decoded (store_rcache.c) */
};

/* Open the store in lmdb in directory dir (created if missing). hot: a
 * group commit is made durable by the hot log (one flush; lmdb commits
 * only at checkpoints, kv_lmdb.c's batched mode, so a power loss between
 * two leaves data.mdb whole as of the last one: B1 there); 0: by lmdb's
 * own synced commit (two flushes). Either way a hot log found in dir is
 * replayed first. Returns 0, or -1 with a reason. */
int store_open(struct store *st, const char *dir, int hot, char *why, size_t whylen);
/* The same on a kv already made (the simulator's disk, sim/disk.h). The
 * store takes kv: store_close, or a failed open, closes it. No hot log. */
int store_open_kv(struct store *st, struct kv *kv, char *why, size_t whylen);
/* The same with a hot log in file f (the store takes it too): replay its
 * frames since the last checkpoint into kv, checkpoint, and from then on
 * acknowledge from it. ckpt: checkpoint once the log holds this many
 * bytes; chunk: preallocation step. */
struct hl_file;
int store_open_hot(struct store *st, struct kv *kv, struct hl_file f, uint64_t ckpt,
                   uint64_t chunk, char *why, size_t whylen);
/* Close, as a crash would leave things (no checkpoint): what was
 * committed is in the hot log or the kv. */
void store_close(struct store *st);
/* Close cleanly: checkpoint first (a clean restart replays nothing). */
void store_shutdown(struct store *st);

/* Sync the kv, then start a new generation of the hot log (no transaction
 * may be open). Nothing to do without a hot log or with an empty one.
 * Returns 0 or an ERR_* code with a reason. */
int store_checkpoint(struct store *st, char *why, size_t whylen);
/* May a truncation join the open transaction, with no checkpoint before
 * it (H3)? Yes if that is synced in the kv, not framed, and the hot log
 * holds no frame (node/trunc.c). */
int store_cut_joins(const struct store *st);
/* Does a checkpoint have anything to do? */
int store_pending(const struct store *st);
/* Has the hot log grown past its checkpoint size? */
int store_checkpoint_due(const struct store *st);
/* The open transaction bypasses the hot log: store_commit commits it in
 * the kv and syncs the kv (a fence, a truncation: rare, and what they
 * change must never depend on a frame). */
void store_sync_txn(struct store *st);

/* Call fn for every segment on disk, with the segment rebuilt: geometry,
 * epoch, and every durable record above the SCL hint chained again; the
 * page map is built on the way (store_pmap.c). */
int store_load(struct store *st, void (*fn)(void *arg, struct segment *s),
               void *arg, char *why, size_t whylen);

/* The write transaction. Each returns 0, or an ERR_* code with a reason. */
int store_begin(struct store *st, char *why, size_t whylen);
int store_put_meta(struct store *st, const struct segment *s, char *why, size_t whylen);
int store_put_rec(struct store *st, const struct segment *s, const Rec *r,
                  char *why, size_t whylen);
int store_commit(struct store *st, char *why, size_t whylen);

void store_abort(struct store *st);

/* The page as of read_point into out (s->page_size bytes); *page_lsn is the
 * LSN of its newest change. The caller has checked read_point <= SCL. */
int store_read_page(struct store *st, const struct segment *s, uint32_t page_no,
                    uint64_t read_point, uint8_t *out, uint64_t *page_lsn,
                    char *why, size_t whylen);

/* Page versions (store_pages.c; node/bg.c decides when). In the open
 * write transaction: */
/* Store page_no's version as of lsn (the newest record it holds). */
int store_put_image(struct store *st, struct segment *s, uint32_t page_no, uint64_t lsn,
                    const uint8_t *page, char *why, size_t whylen);
/* Write page_no's version at its newest record at or below upto, unless
 * one is stored (*made: 1 if written). upto <= min(SCL, VDL heard). */
int store_coalesce(struct store *st, struct segment *s, uint32_t page_no, uint64_t upto,
                   int *made, char *why, size_t whylen);
/* Free records and page versions at or below upto (<= the PGMRPL and the
 * SCL), at most max records: s->gc_lsn rises to the last record freed.
 * *nrecs, *nimgs: how many of each were freed. */
int store_gc(struct store *st, struct segment *s, uint64_t upto, size_t max,
             size_t *nrecs, size_t *nimgs, char *why, size_t whylen);
/* Delete page_no's versions below `below` (*dropped: how many). */
int store_drop_versions(struct store *st, struct segment *s, uint32_t page_no,
                        uint64_t below, size_t *dropped, char *why, size_t whylen);
/* Catch up to `to` (a peer's GC point, above this segment's SCL): every
 * page's version as of `to` has been fetched (its floor is `to`); delete
 * every record at or below it and the versions those replace, and move
 * the GC point there. The caller then chains s again from `to`. */
int store_jump(struct store *st, struct segment *s, uint64_t to, char *why, size_t whylen);
/* How many of page_no's records lie above its newest version. */
uint32_t store_unmat(struct store *st, const struct segment *s, uint32_t page_no);

/* The segment's truncated ranges as protobuf messages: *tr holds them,
 * *trp points at each (free both). Returns how many. */
size_t store_truncs_pb(const struct segment *s, Auralog__TruncRange **tr,
                       Auralog__TruncRange ***trp);

/* Highest LSN held at or below upto (0 if none). */
uint64_t store_tail(struct store *st, const struct segment *s, uint64_t upto);

/* The records above lsn in LSN order, unpacked (free each with
 * auralog__record__free_unpacked), at most max of them and about
 * FRAME_MAX / 2 bytes of them (an answer fits in a frame); unreadable ones
 * are skipped. Returns how many (-1: no transaction); *more (if not NULL)
 * says whether records were left above the last one returned. */
long store_above(struct store *st, const struct segment *s, uint64_t lsn, Rec ***out,
                 size_t max, int *more);
/* The same, with at most max_bytes of records (at least one, whatever its
 * size; max_bytes above FRAME_MAX / 2 counts as that). */
long store_above_max(struct store *st, const struct segment *s, uint64_t lsn, Rec ***out,
                     size_t max, size_t max_bytes, int *more);

/* Install truncation t (rule T, record.h) on disk, in the open write
 * transaction: delete every record it cuts (*cut: how many). The caller
 * then rechains the segment (store_rechain) and records t in its SegMeta.
 * The transaction becomes a synced one (store_sync_txn); with a hot log,
 * the caller checkpoints before it begins (trunc.c). */
int store_truncate(struct store *st, const struct segment *s, const struct trunc *t,
                   size_t *cut, char *why, size_t whylen);

/* Chain s again from base, in the open write transaction (see seg_rechain). */
int store_rechain(struct store *st, struct segment *s, uint64_t base, char *why,
                  size_t whylen);

/* Delete segment s from disk, in the open write transaction: its
 * SegMeta, records and page versions (and its records from the page map) (*nrecs, *nimgs: how
 * many records and versions). The caller checkpoints before it begins
 * and syncs the transaction in the kv (store_sync_txn), as for a
 * truncation (H3): no older frame may bring the segment back at replay.
 * (member.h M6: a segment that is no member any more; node/member.c.) */
int store_drop_seg(struct store *st, const struct segment *s, uint64_t *nrecs,
                   uint64_t *nimgs, char *why, size_t whylen);

/* Rebuild s from what is durable on disk (after a failed commit: memory
 * must not keep what the disk lost). */
int store_reload(struct store *st, struct segment *s, char *why, size_t whylen);

/* Is record lsn stored (open transaction included)? *epoch (if not NULL):
 * the stored record's epoch. */
int store_held(struct store *st, const struct segment *s, uint64_t lsn, uint64_t *epoch);
/* Is record lsn stored whole (it reads back and its CRC holds)? */
int store_held_whole(struct store *st, const struct segment *s, uint64_t lsn);
/* Record lsn of s, decoded and checked (rec_check): the record cache's
 * copy (*owned 0: valid until the store next changes) or one read from
 * the kv (*owned 1: the caller frees it). NULL if not held or damaged. */
const Rec *store_get_rec(struct store *st, const struct segment *s, uint64_t lsn, int *owned);

/* The record cache's Invariant R (store_rcache.c) checked against the kv:
 * how many cached records differ from what recs holds, as a read sees it
 * now (the first said in why). For the tests and the simulator. */
size_t store_rc_check(struct store *st, char *why, size_t whylen);

#endif
