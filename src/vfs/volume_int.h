/*
 * volume_int.h: the inside of a volume. The writer's core (vcore.c,
 * ship.c, read.c: no I/O, events below) and its real driver (volume.c:
 * the I/O thread, locking, waiting; report.c; open.c's recovery) share it.
 * Nothing else includes it; the engine's interface is volume.h.
 *
 * The core's events (the driver holds v->mu; the simulator has one thread):
 *   vcore_on_msg       a node's answer (an Append's ack, a page, an error)
 *   vcore_on_up/down   a node's endpoint came up / closed
 *   vcore_tick         every VOL_TICK_MS: expire, reconnect, resend
 *   vcore_wake         the engine queued work (records, a read, closing)
 * and its calls from the engine: vcore_ship_refusal / vcore_ship (give a
 * mini-transaction LSNs), vcore_read (queue a page read), vcore_stalled.
 * The core calls v->notify whenever a waiter may go on (VDL advanced, a
 * read finished, fenced).
 */
#ifndef AURALOG_VOLUME_INT_H
#define AURALOG_VOLUME_INT_H

#include "net/auth.h"
#include "net/io.h"
#include "lib/kmap.h"
#include "param.h"
#include "record.h"
#include "vfs/pagelsn.h"
#include "vfs/quorum.h"
#include "vfs/volume.h"

/* A record on its way out, owned until the VCL passes it. */
struct orec {
  Rec r;
  Auralog__Range *g, **gp;
  uint8_t *data;
  Auralog__PgLast *ml, **mlp;
  /* The record as it goes on the wire inside an Append, packed once when
   * it is sealed: its length (a varint) and its bytes. Every segment of
   * the PG gets the same bytes, so send_append (vcore.c) hands them to
   * protobuf-c as field 4 already encoded instead of packing the record
   * again for each of them (orec_pack). Invariant W1: an orec's record
   * is never changed after it is sealed (ship.c is its only writer; a
   * recovery adopts its own copies, open.c), so these bytes are always
   * the record: a resend after a reconnect or a new epoch sends them. */
  uint8_t *wire;
  size_t wlen;
  size_t bytes;              /* memory it holds (the UNDURABLE_MAX budget) */
};

/* One protection group, as the writer sees it. Its segments by slot
 * (member.h): slot p < NCOPIES is position p's current segment, slot
 * NCOPIES + p position p's next one while a membership change moves it
 * (node[s] < 0: no such segment). Records go to every present slot: a next
 * segment takes new writes while it is hydrated. */
struct pgout {
  struct orec **recs;        /* records above the VCL, in LSN order */
  size_t head, n, cap;       /* live: recs[head..n) */
  size_t sent[NSLOTS];       /* recs[sent[s]..n) not yet sent to slot s */
  uint64_t tail;             /* LSN of the PG's last record: next backlink */
  uint64_t durable_tail;     /* the PG's last record at or below the VDL: a
                                segment whose SCL reaches it can serve reads
                                at the VDL */
  uint64_t scl[NSLOTS];      /* SCL each segment last reported */
  int node[NSLOTS];          /* index in v->nodes of each segment's node; -1: none */
  uint16_t resend;           /* bit i: resend pending records to slot i */
  uint16_t has_epoch;        /* bit i: segment i acknowledged an Append of this
                                epoch, so it holds the epoch and this writer's
                                truncation durably: its Appends carry neither
                                the ticket nor the truncation again (auth.h) */
  uint32_t refused[NSLOTS];  /* Appends each segment refused in a row (not fenced) */
  unsigned long long retry_at[NSLOTS]; /* ... so it is tried again no sooner */
  uint64_t ring_lsn[TAIL_PER_PG]; /* the PG's newest records (a ring, for viz) */
  uint8_t ring_cpl[TAIL_PER_PG];  /* ... and whether each is its MTR's CPL */
  uint16_t ring_acks[TAIL_PER_PG]; /* ... and the segment slots that acknowledged
                                     each (bit i: slot i), for the pictures'
                                     "acked by": a slot that missed it shows */
  unsigned ring_n;           /* records ever noted: the next goes to ring_n % TAIL_PER_PG */
  /* Membership (member.h): the PG's membership epoch this writer uses
   * (Append.mepoch; a node refuses one below the PG's mepoch_min, M5), the
   * VCL when it began to use it (its lease probe reports both while the PG
   * is in transition: M4 (a)), and which positions have a next segment
   * (bit p: slot NCOPIES + p is present; the quorum's q_trans too). */
  uint64_t mepoch, adopted_at;
  uint8_t trans;
  uint64_t poke_lsn;         /* the PG's oldest pending record at the last tick: still
                                there a tick later, its next segments are asked their
                                SCL again (vcore.c poke_next) */
  uint8_t busy;              /* on v->busy: it holds records (head < n) */
  /* While read replicas exist (replica_floor set), the LSNs of the PG's
   * last FREED_RING records freed, a ring (allocated at the first): the
   * PGMRPL is then often a replica's read point below every record kept,
   * and its PG tail (Append.pgmrpl_tail, which lets a segment GC) is found
   * here rather than left unknown (pg_freed_at). */
  uint64_t *freed;
  unsigned freed_n;          /* ever noted: the next goes to freed_n % FREED_RING */
  /* The PGMRPL's tail its last Append carried, and when it went (vcore.c
   * vtell.c: an idle PG's segments hear a PGMRPL that moved). */
  uint64_t told_tail;
  unsigned long long told_at;
  uint8_t told;              /* this writer sent it an Append */
  /* Its segments back it up (an AppendAck or SegInfo said so), and the
   * highest VDL (with its vdl_tail) each segment acknowledged an Append
   * of: 0 once its node went down, since a restarted node forgets it
   * (vtell.c vtell_vdl). */
  uint8_t backed_up;
  uint64_t heard_vdl[NSLOTS];
};

/* Every PG of v by index i < vol_npgs_all(v): its number vol_pg_at(v, i),
 * the data PGs, then the binlog PG if v has one. */
#define vol_npgs_all(v) ((v)->npgs + ((v)->has_binlog != 0))
#define vol_pg_at(v, i) ((uint32_t)((size_t)(i) < (v)->npgs ? (size_t)(i) : BINLOG_PG))

/* The PG's last record at or below lsn among the records it freed lately
 * (the ring above), or 0 if the ring does not reach down to lsn. */
uint64_t pg_freed_at(const struct pgout *g, uint64_t lsn);

/* The PG's last record at or below lsn, which is at or below the VDL: the
 * `need` of a read at that point (node.c on_read_page builds the page as of
 * it). Exact, from the writer's own records: those not yet freed are in
 * recs[head..n), in LSN order; every one freed is at or below durable_tail,
 * which is at or below the VDL. */
uint64_t pg_need(const struct pgout *g, uint64_t lsn);

struct vnode {
  char addr[ADDR_MAX_LEN + 1];
  char id[NAME_MAX_LEN + 1];  /* its node id, as the description names it (messages) */
  struct ep *c;
  int up;
  unsigned long long retry_at;
  struct volume *v;
  unsigned long long read_slow_until; /* it let a read time out: others first till then */
  uint32_t read_ms16;        /* its reads' round trip, ms x 16, a moving average (read.c) */
  unsigned long long read_lat_at; /* when read_ms16 last learned (0: never) */
  unsigned long long stale_until; /* it served a page the end-to-end check refused
                                     (read.c): others first till then */
  unsigned nfl;              /* Appends in flight to it: while any is, new
                                records for its segments wait (flush) */
};

struct inflight {
  uint64_t req;
  unsigned long long sent_at;
  int node;
  uint32_t pg;
  int slot;
  uint64_t *lsns;
  size_t n;
  uint64_t vdl;              /* the VDL it told, with the PG's vdl_tail (0: none) */
};

struct readreq {
  uint32_t pg, page_no;
  uint64_t rp;               /* read point */
  uint64_t need;             /* the PG's last record at or below rp */
  uint8_t *out;
  uint64_t page_lsn;
  uint64_t req;              /* 0: not in flight */
  unsigned long long sent_at;
  int node;
  unsigned tried;            /* bit i: slot i refused */
  int done, rc, abandoned;
  unsigned long long retry_at;
  char why[200];
  struct readreq *next;
};

struct volume {
  char name[NAME_MAX_LEN + 1];
  char coord[ADDR_MAX_LEN + 1];
  char engine_addr[ADDR_MAX_LEN + 1];
  uint64_t id, epoch;
  uint32_t page_size, pg_pages;
  /* Authority (auth.h): this writer's key pair (the driver's, before
   * OpenVolume names its public key), the coordinator's ticket for epoch
   * (vol_set_ticket), and the signature on the truncation its recovery
   * wrote. A segment takes the epoch only with the ticket, the truncation
   * only with both signatures. */
  struct auth_signer signer;
  Auralog__EpochTicket ticket;
  uint8_t ticket_sig[AUTH_SIG_BYTES];
  int have_ticket;
  uint8_t trunc_sig[AUTH_SIG_BYTES];
  /* The older epochs' truncations its recovery learned (with their
   * proofs): the first Appends to a segment carry them before its own
   * (Append.before), so that a segment that missed them can check its
   * own against them (node/segment.c, the bound). */
  struct trunc *before;
  size_t nbefore;

  struct quorum q;
  /* The PGs, by number: pgs[0..npgs) the data PGs, and pgs[BINLOG_PG] the
   * binlog PG if has_binlog (issue 29; ship.c B1). The array has
   * MAX_PGS + 1 entries from the first adopt on (vol_adopt), so a PG's
   * number indexes it wherever it comes from (an ack, a record); loops
   * over the data PGs stay `p < npgs`, and the binlog PG is named where
   * it takes part (sending, acks, recovery, VDL tells). */
  struct pgout *pgs;
  size_t npgs;
  int has_binlog;
  /* The PGs with traffic (scale, issue 13): every PG holding a record not
   * yet freed (head < n), in no order. Sending (vcore_flush), the VDL's
   * advance and a node coming back walk this list, never all npgs PGs, so
   * a commit costs O(PGs with records not yet durable), whatever the
   * volume's size. A PG joins when it gets a record (ship.c) and leaves
   * when its last record is freed (vcore.c advance). */
  uint32_t *busy;
  size_t nbusy, capbusy;
  /* The PGs written most lately, newest first (at most TAIL_MAX): the log
   * tail a report shows (report.c) has records of no other PG, since each
   * of these has a record newer than any of theirs. */
  uint32_t recent[TAIL_MAX];
  unsigned nrecent;
  size_t refusing;            /* segments whose refused[] is 3 or more (status) */
  /* Every node any slot of any PG names, by index (pgout.node): the array
   * may move when a node is added (vmember.c), so hold indices, never
   * pointers, across a change of membership or a grow. */
  struct vnode *nodes;
  size_t nnodes;
  /* Membership (vmember.c, member.h M4): the coordinator's membership
   * sequence this writer has applied (its OpenVolume answer's, then its
   * lease probes' answers'); the PGs with a next segment now; a node
   * refused an Append for a stale membership epoch (M5): probe soon. */
  uint64_t mseq;
  size_t ntrans;
  int probe_soon;
  uint64_t last_cpl;          /* the previous MTR's CPL (volume-wide chain) */
  /* A prepared MTR waiting for its commit record (community binlog,
   * ship.c P0): its shape so far (NULL: none), its last page, its last
   * LSN (v->last_cpl stays the CPL before it: P0); and the VCL a waiter waits for (0: none;
   * vcore.c notifies it). */
  Auralog__PgLast *prep_ml;
  size_t prep_nml;
  uint32_t prep_page;
  uint64_t prep_last, vcl_waiter;
  uint64_t rf_xid;           /* the community binlog's newest XID, for recovery (open.c) */
  /* The PGMRPL at the last pass of vtell_pgmrpl (vtell.c), when it is due
   * again, and whether a PG was left for a later pass. */
  uint64_t mrpl_passed;
  unsigned long long mrpl_at;
  int mrpl_again;
  unsigned long long vdl_tell_at;   /* the next pass of vtell_vdl (vtell.c) */
  /* The engine server's reads mode (vol_reads_default), the replies it
   * sent with data above the VDL (immediate) or held back until the VDL
   * covered it (durable) (vol_read_seen; under drv->mu): reported, lab 7. */
  int reads_immediate;
  uint64_t dirty_reads, dirty_lsn, held_reads;
  size_t undurable;           /* bytes of redo handed out and not yet durable */
  struct pagelsn plsn;        /* each page's LSN as the writer knows it (vfs/pagelsn.h) */
  uint64_t *cpls;             /* commit LSNs not yet durable, in order */
  size_t ncpls, capcpls;
  /* Commit stage timings (`auralog bench`; only with io->now_us): per
   * commit in cpls, when it had its LSNs (the driver's vol_ship), the
   * segments its CPL record went to and when it went to the VW-th; then, once durable, a ring of (lsn, sent, durable) that
   * the engine reads when it releases the reply (vol_commit_times). */
  struct cpl_time { uint64_t cut_us, sent_us; uint8_t slots; } *cpl_t;
  struct vol_ctime *ctimes;   /* STAGE_TIMES_RING of them, or NULL */
  uint64_t nctimes;           /* ever recorded: the next goes to nctimes % ring */
  struct inflight *fl;
  size_t nfl, capfl;
  struct kmap flidx;          /* request id -> index in fl: an ack finds its
                                 Append in O(1), not O(Appends in flight) */
  struct readreq *reads;
  uint64_t next_req;
  int fenced;
  char fenced_why[200];
  int closing;
  struct vol_stats st;
  void (*durable_fn)(void *, uint64_t);
  void *durable_arg;

  /* A read replica's volume (vol_open_reader, paper §4.2.4): it never
   * writes, recovers or reports; its reads carry its writer's epoch and
   * truncation (rtrunc, a copy) at the read point the replica names. */
  int reader;
  Auralog__TruncRange *rtrunc;
  /* The writer's side of the replicas (vfs/feed.c): on_rec sees every
   * record vol_ship hands out, in LSN order, while set; replica_floor is
   * the oldest read point of any replica (0: none), folded into the
   * PGMRPL (vcore.c vol_pgmrpl). */
  void (*on_rec)(void *arg, const Rec *r);
  void *on_rec_arg;
  uint64_t replica_floor;

  struct rcv *rcv;            /* recovery in progress (open.c), or NULL */
  int opened;                 /* recovery is over: the volume serves */
  /* The core's I/O and its waiters' wake-up (the driver's). */
  const struct io *io;
  void (*notify)(void *arg);
  void *notify_arg;

  /* The real driver's (vdrv.h: its thread, loop, lock): never touched
   * by the core; NULL in the simulator. */
  struct vdrv *drv;
};

/* The core (vcore.c). */
void vcore_on_msg(struct volume *v, struct ep *c, const Env *env);
void vcore_on_up(struct volume *v, struct ep *c);
void vcore_on_down(struct volume *v, struct ep *c);
void vcore_tick(struct volume *v);
/* An Append of pg's records [from, to) to the segment in slot (none: the
 * PGMRPL and the VDL alone), vcore.c. */
void vcore_send_append(struct volume *v, uint32_t pg, int slot, size_t from, size_t to);
/* vtell.c: idle PGs hear the PGMRPL and (rule V) the VDL. */
void vtell_pgmrpl(struct volume *v);
void vtell_vdl(struct volume *v);
void vtell_binlog(struct volume *v);
void vcore_wake(struct volume *v);
void vcore_flush(struct volume *v);
void vcore_notify(struct volume *v);
/* pg has a record to send: put it on v->busy (ship.c). */
void vcore_busy(struct volume *v, uint32_t pg);
/* The VDL moved from old_vdl: free what is durable, wake waiters; forget
 * in-flight Append i; connect to nodes not connected (vcore.c). */
void vcore_advance(struct volume *v, uint64_t old_vdl);
void vcore_fl_drop(struct volume *v, size_t i);
void vcore_connect(struct volume *v);

/* Membership (vmember.c, member.h). The index in v->nodes of the node at
 * addr (id: its node id, "" if unknown), added if new. */
int vcore_node_index(struct volume *v, const char *addr, const char *id);
/* A PG's new membership, from the coordinator (a lease probe's answer, M4):
 * ignored unless pg->mepoch is above the writer's for that PG, or while
 * recovery runs; refused (-1, logged) if wire_check_pg refuses it. Slots
 * are matched by node id: a segment that stays keeps its acks and what
 * was sent to it (a finish moves a next to its position's current slot);
 * a new one starts with no acks and is sent every record not yet freed; a
 * leaving one's Appends in flight are forgotten. The quorum counts under
 * the new transition mask (M1), and the VDL may advance. The PG's mepoch
 * becomes pg->mepoch, used since the current VCL (adopted_at). 1 if
 * applied, 0 if ignored. Sends nothing itself: vcore_flush does. */
int vcore_on_membership(struct volume *v, const Auralog__Pg *pg);
/* A lease probe's answer (a Volume): each of its PGs (vcore_on_membership),
 * then the writer's mseq becomes the answer's; then sends what is due.
 * Nothing while recovery runs (the probe answers again). */
void vcore_on_members(struct volume *v, const Auralog__Volume *ans);
/* A lease probe's membership part (M4 (a)): vh->mseq, and a Pg {pg,
 * mepoch, adopted_at} for every PG with a next segment (malloc'd; free
 * with vcore_probe_free). */
void vcore_probe_fill(const struct volume *v, Auralog__Volume *vh);
void vcore_probe_free(Auralog__Volume *vh);
void orec_free(struct orec *o);
/* Pack o's sealed record into o->wire (vcore.c); 0, or -1: out of memory. */
int orec_pack(struct orec *o);
void vcore_free(struct volume *v);
/* A newer writer exists, stop for good; the writer's own truncation in
 * *tr, or NULL. */
void vol_fence_locked(struct volume *v, const char *msg);
Auralog__TruncRange *vol_own_trunc(const struct volume *v, Auralog__TruncRange *tr);
/* The volume's PGMRPL (paper §4.2.3): the oldest read point of the
 * writer's reads in flight, of its VDL, and of its replicas (vcore.c). */
uint64_t vol_pgmrpl(const struct volume *v);

/* ship.c: why n pages cannot have LSNs now (0: they can); give them LSNs
 * (returns the CPL); why commit lsn is not durable yet. */
int vcore_ship_refusal(const struct volume *v, size_t n, char *why, size_t whylen);
uint64_t vcore_ship(struct volume *v, const struct mtr_page *pages, size_t n);
uint64_t vcore_ship_bl(struct volume *v, const struct mtr_page *pages, size_t n, uint8_t *bl,
                       size_t bllen);
/* The community binlog's two phases (ship.c): the MTR's page records
 * without a CPL (its last LSN: the XID is the next), then its commit
 * record (the CPL; its LSN is the XID). */
uint64_t vcore_prepare(struct volume *v, const struct mtr_page *pages, size_t n);
uint64_t vcore_commit_prepared(struct volume *v);
void vcore_feed_rec(struct volume *v, uint64_t lsn);
/* The read replicas' stream (vfs/feed.c, and the simulator's replica):
 * the records of the MTR just shipped to v->on_rec, in LSN order; and a
 * ReplicaStart as of now (tails: MAX_PGS room, entries malloc'd). */
void vcore_feed_mtr(struct volume *v, const struct mtr_page *pages, size_t n, uint64_t cpl);
void vcore_feed_start(const struct volume *v, Auralog__ReplicaStart *s,
                      Auralog__PgLast **tails, Auralog__TruncRange *tr);
void vcore_stalled(struct volume *v, uint64_t lsn, int waited_ms, char *why, size_t whylen);

/* read.c: queue a read of page_no into out (NULL: a zero page, never
 * written; out is zeroed): at the VDL (vcore_read), or at read point rp
 * with its `need` given (a replica's, vcore_read_at). */
struct readreq *vcore_read(struct volume *v, uint32_t page_no, uint8_t *out);
struct readreq *vcore_read_at(struct volume *v, uint32_t page_no, uint8_t *out, uint64_t rp,
                              uint64_t need);


/* volume.c: a request to the coordinator expecting body `want` (NULL and
 * why otherwise); take on PGs a volume description adds. */
Env *vol_coord_call(const char *coord, Env *req, int want, char *why, size_t whylen);
void vol_adopt(struct volume *v, const Auralog__Volume *vd);
/* The coordinator's ticket for v->epoch (its signature, sig bytes), for
 * v->signer's key; vol_ticket: it for a message (NULL: none). */
void vol_set_ticket(struct volume *v, const uint8_t *sig, size_t len);
Auralog__EpochTicket *vol_ticket(struct volume *v);
/* Fill tr's proof (auth.h) for this writer's truncation (epoch, from, to];
 * sig: its signature. */
void vol_trunc_proof(struct volume *v, Auralog__TruncRange *tr, const uint8_t *sig);

/* report.c: send the coordinator a report (on the I/O thread, connecting
 * first if need be); build one into env (takes the lock). */
void vol_report(struct volume *v);
void vol_report_recovering(struct volume *v);
void vol_engine_stat(struct volume *v, Env *env, Auralog__EngineStat *out,
                     Auralog__TruncRange *trout);

/* read.c, in the core: send read r to a segment (or
 * schedule it again); take a segment's answer to it; unlink finished and
 * abandoned reads. */
void read_dispatch(struct volume *v, struct readreq *r);
void read_done(struct volume *v, struct readreq *r, const Env *env);
void read_reap(struct volume *v);

/* Recovery (open.c, rcvadopt.c and rcvround.c, paper §4.3), a state machine in the
 * core: with v->epoch the new epoch and v's PGs and nodes from the volume's
 * description, rcv_start asks every segment of npgs PGs; the core routes
 * its events here while v->rcv is set; rcv_result says when it is over:
 * the VDL found from a read quorum of every PG, the truncation above it
 * and the adopted records on a write quorum of every PG, the quorum
 * tracker and PG tails set up (1), or why not (-1); rcv_error then says
 * which kind of failure: ERR_DATA_LOSS (the data-loss alarm) is final. */
struct rcv;
struct rcv *rcv_start(struct volume *v, uint64_t vol_id, size_t npgs);
int rcv_on_msg(struct rcv *c, const Env *env);
void rcv_on_up(struct rcv *c, int node);
void rcv_on_down(struct rcv *c, int node);
void rcv_tick(struct rcv *c);
int rcv_result(const struct rcv *c, char *why, size_t whylen);
int rcv_round(const struct rcv *c);
const char *rcv_progress(const struct rcv *c);
/* Adds what rule W did (rcvround.c) to the counts: requests asked again of
 * silent nodes, and 1 if a node's return ended the attempt. */
void rcv_counts(const struct rcv *c, uint64_t *asked_again, uint64_t *restarted);
int rcv_error(const struct rcv *c);
uint64_t rcv_vdl(const struct rcv *c);
/* volume.c: is an open that failed with err (rcv_error) worth another
 * attempt, with a new epoch? Only for a missing quorum. */
int vol_open_again(int err);
void rcv_free(struct rcv *c);

#endif
