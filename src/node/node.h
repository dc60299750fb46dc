/*
 * node.h: the storage node's core (paper §3.3, Fig. 4): its state and its
 * events. No I/O: the core sends, connects and reads the clock through a
 * struct io (io.h), and persists through its store (store.h over kv.h).
 * Two drivers run it: node/main.c (libuv TCP and lmdb, `auralog node`)
 * and the simulator (src/sim/), many nodes in one process.
 *
 * Events (plain calls into the core, all on one thread):
 *   node_init          the store is open: load segments, learn io
 *   node_on_msg        a message on an endpoint (engine, peer, coordinator)
 *   node_on_up/down    an endpoint the node opened is up / an endpoint closed
 *   node_end_turn      the driver has no more messages for now: group
 *                      commit, then acks (node.c), then background indexing
 *   node_heartbeat     every HEARTBEAT_MS: reconnect, heartbeat the coordinator
 *   gossip_tick        every GOSSIP_MS: pull from PG peers (gossip.c)
 *   node_free          the node is gone (a crash in the simulator): memory
 *                      only, nothing more is sent
 */
#ifndef AURALOG_NODE_H
#define AURALOG_NODE_H

#include "net/auth.h"
#include "net/io.h"
#include "lib/kmap.h"
#include "node/segment.h"
#include "node/store.h"
#include "param.h"

/* A request whose answer waits for the open transaction's commit: an
 * Append (acknowledged with an AppendAck), or a recovering writer's
 * SegQuery that fenced the segment (answered with a SegInfo at `upto`,
 * trunc.c). Every answer that promises something durable goes out only
 * after the commit that made it so, and all of one turn's together. */
struct staged {
  struct ep *c;
  uint64_t req;
  struct segment *s;
  uint32_t added, dups;
  uint8_t info;              /* 1: a SegInfo, not an AppendAck; 2: a scan's SegInfo */
  uint64_t upto;             /* a SegInfo's tail point */
  uint64_t after;            /* a scan's: the records above after, at most max */
  uint32_t max;
};

/* A record written into the open transaction, to chain at commit. */
struct link {
  struct segment *s;
  uint64_t lsn, prev;
  uint32_t page, len;        /* for the background work's counts (bg.c) */
};

/* Another node holding segments of our PGs. */
struct peer {
  char id[NAME_MAX_LEN + 1];
  char az[2];
  char addr[ADDR_MAX_LEN + 1];
  struct ep *c;
  int up;
  unsigned long long retry_at;
  unsigned long long heard_at;   /* it last pulled from us or answered a pull, any PG */
};

/* Gossip state of one hosted segment: its PG's other segments, current
 * and next (member.h: up to NSLOTS in all), as the last Assign lists them. */
struct gossip {
  uint64_t volume_id;
  uint32_t pg;
  int peer[NSLOTS];          /* index in node.peers */
  uint64_t peer_scl[NSLOTS]; /* SCL each peer last told us */
  uint64_t peer_gc[NSLOTS];  /* ... and its GC point */
  unsigned long long peer_at[NSLOTS]; /* when (0: never): holds our GC (bg.c) */
  uint64_t peer_refused[NSLOTS]; /* the catch-up point it refused a page at (bg.c) */
  int npeers;
  unsigned turn;             /* whom to ask next */
  uint64_t req;              /* our pull in flight (0: none) */
  unsigned long long sent_at;
  uint32_t asked;            /* bytes of the hydration budget that pull reserved */
  uint64_t pull_scl;         /* our SCL when it was sent: did the push move it? */
  uint8_t again;             /* a push came this turn: pull again at its end if behind */
  /* Pulls of a segment with nothing missing (gossip.c ask): every `idle`
   * ticks, doubled (up to GOSSIP_IDLE_MAX) after a pull that found the
   * segment and its peers where the one before did (seen_*). */
  unsigned idle, last, next; /* the period, and the ticks of the last and next pull */
  uint64_t seen_scl, seen_max, seen_best;
};

/* What the node keeps beside each hosted segment (sx[i] is segs[i]'s). */
struct segx {
  uint8_t dirty;             /* on n->dirty (this turn's SegMeta rewrites) */
  uint8_t staged;            /* records of it staged in the open transaction */
  uint8_t hb_sent;           /* hb is what the coordinator last heard of it */
  Auralog__SegStat hb;       /* its stats in the last heartbeat that listed it */
};

/* The last epoch ticket whose signature held (trunc.c node_epoch_auth). */
struct tk_ok {
  int have;
  uint64_t vol, epoch;
  uint8_t pk[AUTH_PK_BYTES], sig[AUTH_SIG_BYTES], coord_pk[AUTH_PK_BYTES];
};

struct node {
  const struct io *io;
  char id[NAME_MAX_LEN + 1];
  char az[2];
  char addr[ADDR_MAX_LEN + 1];
  const char *coord;
  struct store st;
  struct segment **segs;
  size_t nsegs, capsegs;      /* capsegs: room in segs, sx and dirty (they double) */
  struct segx *sx;           /* beside segs, index for index */
  struct kmap segidx;        /* (volume, pg) -> index in segs: node_find_seg is O(1) */
  struct kmap gsidx;         /* (volume, pg) -> index in gs (gossip.c) */
  /* Heartbeats (node.c): deltas, a whole one every HEARTBEAT_FULL. */
  unsigned hbs;              /* heartbeats sent on this coordinator link */
  int hb_whole;              /* the next must list every segment (a new link, a lost send) */
  uint64_t hb_bg;            /* the background counters' sum at the last heartbeat */
  struct segment **dirty;    /* segments whose SegMeta to rewrite this turn */
  size_t ndirty;
  struct staged *acks;
  size_t nacks, capacks;
  struct link *links;
  size_t nlinks, caplinks;
  size_t fenced;             /* fences in the open transaction (trunc.c), for the log */
  uint64_t fenced_vol, fenced_epoch;
  size_t quiet, quiet_truncs; /* ... and segments whose truncations cut nothing */
  uint64_t quiet_vol, quiet_from;
  struct ep *coord_conn;     /* NULL: not connected (retry at coord_retry_at) */
  int coord_up;
  int assigned;              /* an Assign came since the last Register */
  unsigned long long hb_sent_at; /* the last heartbeat sent (0: none yet) */
  unsigned long long registered_at;
  unsigned long long coord_retry_at;
  /* Lab faults, set by the coordinator. */
  int partitioned;           /* cut off from the engine and other AZs */
  uint32_t slow_ms;          /* answer the engine this much late */
  int stale;                 /* serve pages without their newest record (node.c on_read_page) */
  uint32_t drop;             /* lose this many more Appends with records (node.c node_on_msg) */
  int no_gossip;             /* neither ask PG peers nor answer them (gossip.c) */
  /* Gossip. */
  struct peer *peers;
  size_t npeers;
  struct gossip *gs;
  size_t ngs, capgs;
  uint64_t next_req;
  unsigned ticks;
  size_t gs_first;           /* where gossip_tick starts: each takes its turn at the budget */
  /* Hydration (gossip.c, bg.c; member.h M2): what a segment behind its
   * peers pulls (records by gossip, page versions by catch-up) shares
   * one budget, refilled at HYDRATE_BYTES_PER_S up to a tick's worth, so
   * that filling a new segment never starves foreground commits. */
  int64_t hy_budget;         /* bytes that may be pulled now (below 0: owed) */
  unsigned long long hy_at;  /* when it was last refilled */
  int gossip_again;          /* some gossip[].again is set */
  /* Counters for `auralog bench` (heartbeated), since the node started;
   * st.commits and st.fsyncs are the store's. */
  struct net_count *net;     /* frames with the engine, peers and tools */
  struct net_count *coord_net;/* frames with the coordinator, kept apart */
  uint64_t gossip_bytes, gossip_msgs;  /* pulls and pushes sent to peers */
  /* Authority (auth.h). The driver sets ident (the key pair kept in the
   * data directory) before node_init; the coordinator's public key comes
   * with its Assign. */
  struct auth_signer ident;
  uint8_t coord_pk[AUTH_PK_BYTES];
  int have_coord_pk;
  struct tk_ok tk_ok;
  /* Truncations this node has checked (volume, epoch, from, to): a
   * truncation is volume-wide, and a recovery sends every one it learned
   * to every segment, so each is checked once per node, not once per
   * segment (an open-addressed set; trunc.c). */
  uint64_t (*checked)[4];
  size_t nchecked, capchecked;
  /* Background work (bg.c): pages waiting to be coalesced, the scrub's
   * place, the repair in flight, and counters for status. */
  struct bgpage { uint64_t vol; uint32_t pg, page; } *coq;
  size_t ncoq, capcoq;
  int gc_behind;             /* the last GC batch used all of GC_BATCH */
  int co_hot;                /* a page passed COALESCE_HOT: coalesce at the turn's end */
  unsigned long long ckpt_at;  /* the last checkpoint, io_now() */
  unsigned long long started_at, co_at, gc_at, scrub_at, repair_at;
  size_t gc_next, scrub_next;
  uint64_t scrub_lsn, scrub_prev;  /* the scrub's place in segment scrub_next */
  unsigned scrub_rechains;         /* ... valid while its rechains count is this */
  struct repreq { uint64_t req, vol, need; uint32_t pg, page;
                  unsigned long long sent_at; int peer; } rep[REPAIR_INFLIGHT];
  int rep_peer;
  int rep_soon;              /* answers came this turn: refill the window at its end (bg.c) */
  uint64_t coalesced, gc_records, gc_images, scrubbed, damage_found, repaired, catchups;
  /* Truncations refused, on any path: their signatures or their bound
   * (seg_trunc_ok); those the store refused at start are its own count. */
  uint64_t truncs_refused;
  uint64_t truncs_forgotten;  /* rule TF (tforget.c): kept as tombstones */
  /* Lab evidence the node reports itself (heartbeats): times it was
   * told it is partitioned, and the wall ms its process started. */
  uint32_t partitions;
  uint64_t started_ms;
  unsigned gc_peer_wait_ms;  /* 0: GC_PEER_WAIT_MS (the simulator sets it shorter) */
  uint32_t max_apply;
  /* A measurement switch, not a mode: GC frees nothing (the driver sets
   * it from AURALOG_NO_GC=1, node/main.c), to compare disk use with and
   * without GC (tests/integration/test_storage.c). Never set otherwise. */
  int no_gc;
  /* Continuous backup (nbackup.c): NULL when this node stages nothing
   * (`auralog node` without --backup). */
  const struct nbk_io *bk_io;
  unsigned long long bk_at;  /* the next staging pass */
  unsigned bk_takeover_ms;   /* 0: BACKUP_TAKEOVER_MS (the simulator sets it shorter) */
  struct nbl *nbl;           /* binlog consumers: keep points, retention (nbinlog.c) */
};

/* ---- nbackup.c: continuous backup (paper Fig. 4 step 6; Invariant 11) ---- */

/* One piece of work for the object store, made by the core and run by the
 * driver on a thread of its own (the store's calls block), then handed
 * back on the loop (nbk_done). */
struct nbk_job {
  int kind;                  /* NBK_LIST: the PG's backup point in the store; NBK_PUT;
                                NBK_RETAIN: let go of what retention no longer keeps */
  uint64_t vol;
  uint32_t pg;
  char key[96];
  uint8_t *data;             /* NBK_PUT: the object (the job owns it) */
  size_t len;
  uint64_t point;            /* NBK_PUT: the backup point it makes; NBK_LIST: the answer;
                                NBK_RETAIN: objects deleted */
  uint64_t base_ms;          /* NBK_PUT of a base: when; NBK_LIST: the newest base's (0: none) */
  uint64_t base_at;          /* NBK_LIST: the newest base's point */
  uint64_t now_ms;           /* NBK_RETAIN: the wall clock it judges by */
  uint64_t keep_ms;          /* NBK_LIST, NBK_RETAIN: the volume's retention, as read */
  int rc;                    /* the driver's: 0, or -1 with why */
  char why[320];
};
#define NBK_LIST   1
#define NBK_PUT    2
#define NBK_RETAIN 3

struct nbk_io {
  void *ctx;
  void (*submit)(void *ctx, struct nbk_job *j);
  uint64_t (*wall_ms)(void *ctx);   /* unix ms (the pieces' clock notes) */
};

/* The writer's (vdl, vdl_tail) pair from an Append of s's epoch. */
void nbk_on_vdl(struct node *n, struct segment *s, uint64_t vdl, uint64_t tail);
/* A peer's word of the PG's backup point (gossip). */
void nbk_heard(struct node *n, struct segment *s, uint64_t point);
/* The background pass (bg_work): list and stage what is due. */
void nbk_work(struct node *n);
/* A job the driver ran (on the loop): the core frees it. */
void nbk_done(struct node *n, struct nbk_job *j);
/* nbkrun.c: run job j against the object store o (a driver's thread, or
 * the simulator), setting its answer (j->rc, j->why, ...). */
struct objstore;
void nbk_run(struct objstore *o, struct nbk_job *j);
/* GC of s frees nothing above this (UINT64_MAX: no backup here). */
uint64_t nbk_gc_bound(const struct node *n, const struct segment *s);

/* Set n up as node id of AZ az serving at addr, with coordinator coord, on
 * its opened store n->st (its segments are loaded from it). net and
 * coord_net: the driver's frame counts, heartbeated (NULL: none). Returns
 * 0, or -1 with a reason. */
int node_init(struct node *n, const struct io *io, const char *id, const char *az,
              const char *addr, const char *coord, struct net_count *net,
              struct net_count *coord_net, char *why, size_t whylen);
void node_free(struct node *n);
void node_on_msg(struct node *n, struct ep *c, const Env *env);
void node_on_up(struct node *n, struct ep *c);
void node_on_down(struct node *n, struct ep *c);
void node_end_turn(struct node *n);
void node_heartbeat(struct node *n);
void gossip_tick(struct node *n);

struct segment *node_find_seg(struct node *n, uint64_t vol, uint32_t pg);
/* node_find_seg, answering c an error if the node hosts no such segment. */
struct segment *node_seg_for(struct node *n, struct ep *c, uint64_t req,
                             uint64_t vol, uint32_t pg);
void node_mark_dirty(struct node *n, struct segment *s);
/* Has the open transaction staged records of s? (A truncation of s may
 * not join it then: trunc.c.) */
int node_staged_recs(struct node *n, const struct segment *s);

/* Answer a writer's request: at once, or late on a slow node (a lab fault). */
void node_reply(struct node *n, struct ep *c, const Env *env);

/* Answer a request once the open transaction commits (struct staged);
 * an error instead if it is lost (node_rollback). */
void node_defer(struct node *n, struct staged a);

/* A SegInfo for s (its state, the tail at or below upto), sent to c now;
 * for a scan, with its records above after, at most max of them. */
void node_reply_info(struct node *n, struct ep *c, uint64_t req, struct segment *s,
                     uint64_t upto, int scan, uint64_t after, size_t max);

/* Commit the open transaction, then chain and acknowledge what it held.
 * Returns 0, or an ERR_* code (everything staged was then refused). */
int node_commit(struct node *n);

/* The open transaction is lost: abort it, make every segment it touched
 * what the disk holds again, and send every staged ack an error. */
void node_rollback(struct node *n, uint32_t code, const char *why);

/* Stage records for segment s in the open transaction (they are chained
 * at commit). strict: any refused record refuses the batch and changes
 * nothing (an engine's Append); otherwise refused records are skipped
 * (gossip). *added, *dups: how many were new, already held. Returns 0 or
 * an ERR_* code with a reason. */
int node_stage(struct node *n, struct segment *s, Rec *const *recs, size_t cnt,
               int strict, uint32_t *added, uint32_t *dups, char *why, size_t whylen);

/* Where a truncation comes from: a writer (its Truncate or Append), a
 * recovery's scan, a PG peer's gossip, or an Append's `before` (the older
 * ones a writer's own rests on: the writer vouches for none of them). */
enum trunc_path { TP_WRITER, TP_SCAN, TP_GOSSIP, TP_EARLIER };

/* Install the truncations t[0..nt) that s does not hold yet (rule T,
 * record.h), durably: in a transaction of their own (what was staged
 * before is committed first), deleting what they cut, chaining s again.
 * Each must keep the bound (segment.h seg_trunc_ok); they are checked
 * oldest epoch first, whatever their order. One that does not is counted
 * (truncs_refused) and: from gossip, a scan or an Append's `before`,
 * skipped (the others go in); from a writer, the answer: ERR_CONFLICT,
 * nothing installed. Returns 0 or an ERR_* code with a reason (then s is
 * what the disk holds). */
int node_truncate(struct node *n, struct segment *s, const struct trunc *t, size_t nt,
                  enum trunc_path path, char *why, size_t whylen);
/* The same, for truncations as they came over the wire, with their
 * signatures checked first (node_trunc_auth; from gossip, a scan or
 * `before`, one that fails is skipped, and counted). */
int node_truncate_pb(struct node *n, struct segment *s, Auralog__TruncRange *const *t,
                     size_t nt, enum trunc_path path, char *why, size_t whylen);

/* trunc.c: may s raise its epoch to epoch on the strength of ticket
 * (NULL: none)? ERR_NONE if epoch is not newer than s's, or ticket is the
 * coordinator's for it; else an ERR_* code with why. */
int node_epoch_auth(struct node *n, const struct segment *s, uint64_t epoch,
                    const Auralog__EpochTicket *ticket, char *why, size_t whylen);
/* trunc.c: does t carry its authority (a ticket for its epoch, its
 * writer's signature)? ERR_NONE if so or s holds it already. */
int node_trunc_auth(struct node *n, const struct segment *s, const struct trunc *t,
                    char *why, size_t whylen);
void node_on_seg_query(struct node *n, struct ep *c, uint64_t req,
                       const Auralog__SegQuery *q);
void node_on_truncate(struct node *n, struct ep *c, uint64_t req,
                      const Auralog__Truncate *t);

/* bg.c (paper §3.3 steps 5, 7, 8): coalesce, GC at the PGMRPL, scrub and
 * repair. */
/* A record of page `page` (len bytes) of s became durable. */
void bg_on_record(struct node *n, struct segment *s, uint32_t page, uint32_t len);
/* A page read of s ended (the store says what it applied, or its damage). */
void bg_on_read(struct node *n, struct segment *s, uint32_t page);
/* After the turn's acks: the background work due now. */
void bg_work(struct node *n);
/* A peer's answer to a repair's page read. */
void bg_on_answer(struct node *n, const Env *env);
/* Counters into a heartbeat, and per segment. */
void bg_stat(const struct node *n, const struct segment *s, Auralog__SegStat *st);

/* scrub.c: one slice of the scrub; make s the next segment scrubbed. */
void scrub_step(struct node *n);
void scrub_soon(struct node *n, const struct segment *s);

/* member.c (member.h M5, M6): membership on the node. */
/* The Assign's membership epochs for the segments it lists; drop every
 * hosted segment of a volume it names that it does not list. */
void node_member_assign(struct node *n, const Auralog__Assign *as);
/* M5: may a writer or peer at membership epoch mepoch use s? ERR_NONE,
 * or ERR_STALE_MEMBERSHIP with a one-line reason (who: "writer", "peer"). */
int node_mepoch_ok(const struct node *n, const struct segment *s, uint64_t mepoch,
                   const char *who, char *why, size_t whylen);
/* The hydration budget, refilled to now; take: use `bytes` of it. */
int64_t hydrate_budget(struct node *n);
void hydrate_take(struct node *n, int64_t bytes);

/* tforget.c (rule TF): forgetting the truncations every member holds.
 * tf_seen: peer k's push (its truncations, what it forgot, its GC point);
 * tf_reset: the peer set changed; tf_forget: do it for s (how many went
 * from its held list: write its SegMeta); tf_tombs_pb: the forgotten ranges, as
 * a message lists them; tf_work: tf_forget on every segment, committed. */
void tf_seen(struct segment *s, int k, const Auralog__GossipPush *gp);
void tf_reset(struct segment *s);
int tf_forget(struct segment *s, int npeers);   /* how many it forgot */
size_t tf_tombs_pb(const struct segment *s, Auralog__TruncRange **tv,
                   Auralog__TruncRange ***tp);
int tf_work(struct node *n);
/* Would s forget something once more peers are seen (pull sooner)? */
int tf_pending(const struct segment *s, int npeers);

/* gossip.c (paper §3.3 step 4) */
int gossip_send(struct node *n, struct ep *c, const Env *env);
struct ep *gossip_peer_conn(struct node *n, int i);
void gossip_learn(struct node *n, const Auralog__Assign *as);
/* s is dropped (member.h M6): forget its gossip state. */
void gossip_forget(struct node *n, uint64_t vol, uint32_t pg);
/* The gossip state (PG peers, their SCLs) of the node's segment (vol, pg),
 * by hash (gsidx), or NULL. */
struct gossip *gossip_of(struct node *n, uint64_t vol, uint32_t pg);
/* Is s an incoming (next) segment still filling from its peers: a hole, a
 * catch-up under way, a peer known further on, or none heard yet
 * (SegStat.hydrating)? */
int node_hydrating(struct node *n, const struct segment *s);
/* After a turn's commit: pull again for each segment a push moved that is
 * still behind, within the hydration budget (node_end_turn). */
void gossip_hurry(struct node *n);
/* Is c a peer's endpoint? Then its message or its closing is gossip's. */
int gossip_on_msg(struct node *n, struct ep *c, const Env *env);
int gossip_on_up(struct node *n, struct ep *c);
int gossip_on_down(struct node *n, struct ep *c);
void gossip_free(struct node *n);
void gossip_on_pull(struct node *n, struct ep *c, uint64_t req,
                    const Auralog__GossipPull *p);
/* May this node talk with a node of AZ az? (not across a partition) */
int gossip_reachable(const struct node *n, const char *az);

#endif
