/*
 * simint.h: the inside of a simulated world, shared by src/sim's files
 * (world.h says which does what). Nothing outside src/sim includes it.
 */
#ifndef AURALOG_SIM_SIMINT_H
#define AURALOG_SIM_SIMINT_H

#include "net/auth.h"
#include "coord/coord.h"
#include "node/node.h"
#include "sim/hfile.h"
#include "sim/world.h"
#include "vfs/lease.h"
#include "vfs/rapply.h"
#include "vfs/volume_int.h"

/* A storage node host: its disk outlives its core (a crash loses only the
 * open transaction, disk.h). */
struct simnode {
  struct world *w;
  int i;
  char addr[16], id[16], az[2];
  struct simhost *h;
  struct disk *disk;
  struct hfile *hfile;       /* its hot log (node/hotlog.h), also outlives it */
  struct node *n;            /* NULL while down */
  uint64_t turn_at;          /* a turn end is scheduled for this instant (+1) */
  unsigned gen;              /* +1 per crash: stale timer events check it */
  int down_by;               /* bit per fault holding it down */
  int spare;                 /* a spare: booted once the volume is placed (member.c) */
  int lost;                  /* lost for good (node-lost): never restarts */
  /* What it held of the workload's records when it went down (member.c):
   * bit j of held[t]: transaction t's last record in its j-th PG. */
  uint8_t *held;
  size_t nheld;
};

/* A writer host (writer.c). W_WAITING: recovered, waiting out the read
 * lease of the writer it took over from (a promotion: failover.c F3). */
enum { W_DOWN, W_OPENING, W_RECOVERING, W_SERVING, W_FAILED, W_WAITING };

struct wtx;                  /* a transaction in flight (workload.c) */
struct simreplica;           /* the read replica (replica.c) */

struct simwriter {
  struct world *w;
  int i;
  char addr[16];
  struct simhost *h;
  int state;
  unsigned gen;
  struct volume *v;          /* the core, from W_RECOVERING on */
  struct ep *coord;          /* while opening */
  int asked;                 /* 0: OpenVolume sent; 1: GrowVolume sent */
  uint64_t epoch, last_vdl;
  struct auth_signer signer;       /* this opening's key pair (auth.h) */
  uint8_t tk_sig[64];              /* its ticket, from the OpenVolume answer */
  size_t tk_len;
  unsigned opens;
  uint64_t next_ship, next_read;   /* the workload's pace (workload.c) */
  uint64_t poke_at;                /* a workload event is scheduled then (+1) */
  /* The workload's: transactions shipped and not yet acked, reads in flight. */
  size_t *inflight;          /* indexes in w->txs */
  size_t ninflight;
  struct wread {
    struct readreq *r;
    uint8_t *buf;
  } reads[4];
  size_t nreads;
  /* Failover (failover.c), in runs with a replica. */
  uint64_t if_epoch;         /* its open is conditional on this epoch (a promotion) */
  uint64_t promoted_from;    /* this life is a promotion from that epoch (0: not) */
  uint64_t open_sent;        /* when its OpenVolume left */
  uint64_t asked_at;         /* ... or its last request to the coordinator (0: none) */
  uint64_t serve_after;      /* it serves from then on (the old writer's lease) */
  struct lease lease;        /* its read lease (vfs/lease.h) */
  struct ep *probe;          /* its lease probes' connection to the coordinator */
  uint64_t probe_at, probe_seq;
  int held;                  /* a fault holds its host down: nothing starts it */
  int stopped;               /* writer-stop: the process is paused */
  /* --community (cbinlog.c): its host's binlog file (outlives the
   * process): frames' XIDs and transactions (indexes in w->txs); the
   * two-phase commit in progress (CM_*: its prepared records' last LSN is
   * the core's v->prep_last), its transaction, when its commit record
   * goes; frames found orphaned. */
  uint64_t *cm_xid;
  size_t *cm_txi, cm_n, cm_cap;
  int cm_state;
  size_t cm_tx;
  uint64_t cm_at, cm_orphans;
  int cm_rf_drawn;           /* this recovery's roll-forward crash was drawn ... */
  uint64_t cm_rf_crash;      /* ... for then (0: none) */
};
enum { CM_NONE, CM_PREPARED, CM_BINLOGGED };

/* A transaction the workload shipped (the shadow model, workload.c). */
enum { TX_PENDING, TX_ACKED, TX_KEPT, TX_TRUNCATED };
#define SIM_BL_LEN 13            /* a transaction's events in --binlog runs: "simtx", its index */
struct txrec {
  uint64_t epoch, cpl;
  int state;
  int writer;
  size_t npages;
  uint32_t page[SIM_TX_PAGES];
  /* The MTR's last record in each PG it touched (member.c: a durable
   * record must be on Vw current segments of its PG), its binlog record
   * in the binlog PG (BINLOG_PG) last, in --binlog runs. */
  uint32_t npg, pg[SIM_TX_PAGES + 1];
  uint64_t last[SIM_TX_PAGES + 1];
  uint8_t *data;             /* npages * SIM_PAGE_SIZE: the pages after it */
  int decided_by;            /* the writer whose ack or recovery decided it (-1: none yet) */
  int framed;                /* --community: its frame is in its writer's file */
  int foreign;               /* ... and a recovery on another host began while it was
                              * undecided (cbinlog.c CM2) */
};

/* A writer's key and ticket, kept when it stops being the writer (rogue.c:
 * the rogue member plays a fenced old writer gone rogue). */
struct oldkey {
  uint64_t volume, epoch;
  int recovered;             /* its writer finished its recovery (then served, or waited) */
  struct auth_signer signer;
  uint8_t tk_sig[64];
};
#define SIM_OLDKEYS 8            /* the newest this many are kept */

struct rogue;

struct world {
  struct auth_signer op;       /* the operator's key (coord/roles.c): its engines and
                                  `auralog failover` sign with it */
  struct sim_opts o;
  struct rng rng;            /* the world's own draws (workload, hosts) */
  struct rng nrng;           /* the nemesis's (a given schedule draws none) */
  struct simclock *clock;
  struct simnet *net;
  struct simnode nodes[SIM_NODES];
  struct simwriter wr[SIM_WRITERS];
  /* The coordinator. */
  struct simhost *coord_h;
  struct disk *coord_disk;
  struct coord *co;
  /* The shadow model. */
  struct txrec *txs;
  size_t ntxs, captxs;
  uint64_t max_issued;       /* the newest epoch the coordinator handed out */
  uint64_t *issued;          /* ... and every one (none twice) */
  size_t nissued;
  uint64_t max_epoch;        /* the newest epoch a writer recovered in */
  uint64_t max_epoch_vdl;    /* ... and the VDL it recovered */
  Auralog__Volume *vdesc;     /* the volume as the coordinator last described it */
  struct simreplica *rep;    /* NULL: no replica in this run (and no failover) */
  struct simhost *op_h;      /* the operator's host: `auralog failover` (failover.c) */
  struct ep *op_ep;
  uint64_t fo_wait_until;    /* the operator waits for a promotion until then (0: not) */
  struct rogue *rogue;       /* the rogue member (rogue.c; NULL until its first fault) */
  /* PG membership may change in this run (member.h): the writer sends its
   * lease probe even without a replica, to learn the changes (failover.c
   * probing, M4). Set by what makes the changes; 0 keeps every other run's
   * messages what they were. */
  int members_probe;
  struct oldkey oldkeys[SIM_OLDKEYS];  /* old writers' keys, for it (in runs that have it) */
  size_t noldkeys;
  /* The run. */
  struct sim_result rs;      /* what world_run hands back */
  struct sim_result *res;    /* &rs */
  uint64_t hash;
  int stop;                  /* a violation: stop the run */
  int healed;                /* the final heal happened */
  uint64_t heal_at;
  uint64_t acked_after_heal;
  int sweep;                 /* pages read by the final sweep so far */
  struct fault_ev *sched;
  size_t nsched, capsched;
  /* The watermarks last written to the trace. */
  uint64_t traced_vdl[SIM_WRITERS], traced_scl[SIM_NODES][SIM_PGS], traced_max[SIM_NODES][SIM_PGS];
  uint8_t traced_seen[SIM_NODES][SIM_PGS];   /* a line written for it: it hosts the PG */
  int active[F_NKINDS];
  /* Membership (member.c): each PG's current segments' nodes (bit i:
   * nodes[i]) and membership epoch, as the coordinator last stored them
   * (kept while it is down: the fault model counts by them). Index
   * SIM_PGS is the binlog PG's (BINLOG_PG, --binlog runs: SIM_MPG). */
  unsigned pg_members[SIM_PGS + 1];
  uint64_t pg_mepoch[SIM_PGS + 1];
  int members_known;
  int spares_up;             /* the spares were booted */
  int lost_one;              /* a node-lost fault took a node for good */
  /* Continuous backup (objsim.c, bkcheck.c): the object store (NULL: no
   * backup in this run), and what bkcheck.c last read of it: each PG's
   * reach, as of the store's version bk_reach_v - 1 (0: not read). */
  struct objsim *bk;
  uint64_t bk_reach[SIM_PGS], bk_reach_v;
  /* ... and the VDL's history, the time restores' truth: (virtual ms,
   * VDL) each time the highest VDL any writer announced rose. */
  uint64_t (*bk_vdls)[2];
  size_t bk_nvdls, bk_capvdls;
};

/* The read replica (replica.c), and its stream with the writer (rstream.c). */
#define REP_NPAGES (SIM_PGS * SIM_PAGES)
struct simreplica {
  struct world *w;
  struct rng rng;
  struct simhost *h;          /* its host's: w->wr[slot].h (failover.c) */
  int slot;                   /* the engine host it runs on: w->wr[0]'s or w->wr[2]'s */
  int started;                /* the first writer served: it exists */
  int up;
  unsigned gen;               /* +1 per crash: stale timers check it */
  struct ep *coord;           /* its beats' connection (failover.c) */
  uint64_t beat_at;
  int promoting;              /* told to open as writer: it is on its way */
  /* The stream; the writer's side. */
  uint64_t stream, nstreams;  /* the live one (0: none) */
  struct simwriter *src;      /* its writer */
  uint64_t out_at, back_at;   /* the last message's arrival, each way (ordered) */
  uint64_t told;              /* the VDL last sent */
  uint64_t w_start, w_acked, w_heard;  /* the writer's view: start, last ack, when */
  uint64_t w_from;            /* ... and the stream's first LSN */
  int cut;                    /* the stream-cut fault holds it down */
  int silent;                 /* the replica-silent fault: its acks are lost */
  uint64_t lapsed;            /* a stream whose floor the writer let go a while */
  int retry;                  /* a subscription is scheduled */
  /* The replica's side. */
  struct rapply ra;
  struct volume *v;           /* its reader core (NULL while down) */
  uint64_t taken;             /* the stream whose start it took */
  uint64_t start, vdl_told, got_next;   /* this stream's, as arrived (R1, R2) */
  uint64_t *cpls;             /* CPLs arrived above the read point */
  size_t ncpls, capcpls;
  int cached[REP_NPAGES];
  uint8_t cache[REP_NPAGES][SIM_PAGE_SIZE];
  uint64_t hold_until;        /* the long reader holds the read point until then */
  uint64_t next_read;
  struct rread {
    struct readreq *r;
    uint8_t *buf;
    int k;
    uint64_t since;
  } rd[2];
  size_t nrd;
};

/* replica.c: the replica's side */
void replica_take_start(struct simreplica *rep, const Auralog__ReplicaStart *s);
void replica_take_feed(struct simreplica *rep, const Auralog__ReplicaFeed *f);
void replica_advance(struct simreplica *rep);
/* rstream.c */
void rstream_ack(struct simreplica *rep, uint64_t rp);
void rstream_break(struct simreplica *rep, const char *why);
void rstream_retry(struct simreplica *rep);
struct simwriter *rstream_serving_writer(struct world *w);
void rstream_free(struct world *w);

/* world.c */
void world_hash(struct world *w, const char *tag, uint64_t a, uint64_t b);
void world_trace(struct world *w, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
void node_crash(struct simnode *sn);
/* A node whose hot log's armed sync failed (hfile_arm) dies now. */
void node_check_dead(struct simnode *sn);
void node_restart(struct simnode *sn);
/* sn's turn ends at this instant (one for all that happened in it). */
void node_kick(struct simnode *sn);
void coord_crash(struct world *w);
void coord_restart(struct world *w);

/* writer.c */
void writer_start(struct simwriter *wr);
void writer_crash(struct simwriter *wr);
/* It dies and is started again after a moment, as by its operator. */
void writer_crash_restart(struct simwriter *wr);
void writer_kick(struct simwriter *wr);
void writer_free_timers(struct world *w);
void writer_poke_at(struct simwriter *wr, uint64_t t);

/* replica.c */
void replica_new(struct world *w);
void replica_free(struct world *w);
void replica_volume_ready(struct world *w);
void replica_writer_event(struct simwriter *wr);
void replica_writer_gone(struct simwriter *wr);
void replica_crash(struct world *w);
void replica_restart(struct world *w);
void replica_cut(struct world *w, int on);
void replica_end(struct world *w);
void replica_silent(struct world *w, int on);

/* failover.c, sfo_ (all no-ops in runs without a replica) */
int sfo_on(const struct world *w);
int sfo_writer_slot(struct world *w);
int sfo_start_as_replica(struct simwriter *wr);
void sfo_opened(struct simwriter *wr, const Auralog__Volume *vd);
void sfo_recovered(struct simwriter *wr);
void sfo_serving(struct simwriter *wr);
void sfo_fenced(struct simwriter *wr);
void sfo_refused(struct simwriter *wr, const char *why);
int sfo_lease_ok(struct simwriter *wr);
void sfo_writer_tick(struct simwriter *wr);
int sfo_writer_msg(struct simwriter *wr, struct ep *e, const Env *env);
int sfo_writer_up(struct simwriter *wr, struct ep *e);
int sfo_writer_down(struct simwriter *wr, struct ep *e);
/* Does the writer send lease probes (a replica, or membership changes)? */
int sfo_probing(const struct world *w);
void sfo_replica_tick(struct simreplica *rep);
int sfo_replica_msg(struct simreplica *rep, struct ep *e, const Env *env);
int sfo_replica_up(struct simreplica *rep, struct ep *e);
int sfo_replica_down(struct simreplica *rep, struct ep *e);
void sfo_ask_failover(struct world *w);
void sfo_cluster_up(struct world *w);
void sfo_free(struct world *w);
void sfo_stop(struct simwriter *wr, int on);
void sfo_check(struct world *w);

/* cbinlog.c: the community binlog (--community) */
uint64_t cm_last_xid(const struct simwriter *wr);
int cm_busy(const struct simwriter *wr);
uint64_t cm_prepare(struct simwriter *wr, const struct mtr_page *mp, size_t n, size_t tx);
void cm_step(struct simwriter *wr);
int cm_recovering(struct simwriter *wr);
void cm_durable(struct world *w, size_t tx, const char *how);
void cm_recovered(struct simwriter *wr, uint64_t vdl);
void cm_recovery_starts(struct simwriter *wr);
void cm_crashed(struct simwriter *wr);
void cm_free(struct world *w);
/* workload.c */
void workload_step(struct simwriter *wr);
void workload_acked(struct simwriter *wr);
void workload_recovered(struct simwriter *wr, uint64_t vdl);
void workload_crashed(struct simwriter *wr);
void workload_free(struct world *w);

/* check.c */
/* A finished page read into the trace ("T read WHO PAGE RP LSN ok|wrong":
 * who read, at which read point, the page's LSN, whether it matched the
 * shadow), for the timeline's lane of reads. */
void trace_read(struct world *w, const char *who, uint32_t page, uint64_t rp, uint64_t lsn,
                int wrong);
void violation(struct world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void check_step(struct world *w);
void check_end(struct world *w);
/* Invariant R of sn's record cache (store_rcache.c), checked against its kv. */
void check_rcache(struct world *w, struct simnode *sn);
/* The shadow's page as of read point rp (NULL: zeros). */
const uint8_t *shadow_page(const struct world *w, uint32_t page_no, uint64_t rp);

/* member.c: membership in the simulated world (member.h). member_step
 * after every event: note the coordinator's stored membership, check each
 * change (a durable record is on Vw current segments of its PG, the
 * membership is well formed, mepochs only grow); member_end: after the
 * heal every PG is back to NCOPIES current segments on live nodes.
 * member_spares_boot: the volume is placed, the spares may start.
 * member_pg_nodes: PG pg's current segments' nodes (a mask). sim_node_az:
 * a node's AZ (0..2). */
void member_step(struct world *w);
void member_end(struct world *w);
/* blcheck.c: the binlog stream on every binlog segment, at the end
 * (--binlog): BL1, BL2 against the shadow, up to vdl. */
void binlog_end(struct world *w, uint64_t vdl);
void member_spares_boot(struct world *w);
unsigned member_pg_nodes(const struct world *w, int pg);
int sim_node_az(int i);
void member_check_durable(struct world *w, int pg);
void member_check_tx(struct world *w, size_t t);
void member_node_down(struct simnode *sn);

/* objsim.c: the object store and the nodes' backup drivers, in runs
 * with a backup fault kind (all no-ops in the others). objsim_new makes
 * the store; objsim_node_up gives a node that just started its driver
 * (n->bk_io), objsim_node_down drops its jobs as it dies; objsim_fault
 * starts (on) or ends a store-down or store-slow, objsim_heal ends them
 * all; objsim_retention: the operator sets vol's retention (once).
 * objsim_truth: the store as it is, never failing (the checks' view);
 * objsim_version: +1 per change to it. objsim_rot: a store-rot fault
 * damages one backup object (drawn from r); objsim_damaged: whether key's
 * bytes are not those put (the checks' knowledge, not the checksums').
 * The nodes' wall clock (nbk_io wall_ms) is SIM_WALL_MS0 + virtual ms. */
#define SIM_WALL_MS0 1700000000000ull   /* a plausible unix ms for virtual 0 */
void objsim_new(struct world *w);
void objsim_free(struct world *w);
void objsim_node_up(struct simnode *sn);
void objsim_node_down(struct simnode *sn);
void objsim_fault(struct world *w, int kind, int on);
void objsim_heal(struct world *w);
int objsim_is_up(const struct world *w);
struct objstore *objsim_truth(struct world *w);
uint64_t objsim_version(const struct world *w);
size_t objsim_count(const struct world *w);
void objsim_retention(struct world *w, uint64_t vol);
void objsim_rot(struct world *w, uint64_t r);
int objsim_damaged(const struct world *w, const char *key);

/* bkcheck.c: invariant 11 after every event (bkcheck_step), and at the
 * end the backup's catching up and restores against the shadow model
 * (bkcheck_end, after check_end). No-ops in runs without backup. */
void bkcheck_step(struct world *w);
void bkcheck_end(struct world *w);

/* nemesis.c */
void nemesis_plan(struct world *w);
void nemesis_heal_all(struct world *w);
void nemesis_free(struct world *w);

/* rogue.c: the rogue member. rogue_fault starts (on) or ends one fault's
 * attacks (unfinished: a rogue-unfinished fault's); rogue_heal ends them
 * all. rogue_keep: writer wr stops being the writer (crash, fence): its
 * key and ticket are kept. rogue_epoch: a new epoch was handed out (old
 * keys are old now: it strikes). roguecheck.c: the coordinator and nodes
 * hand rogue_coord_msg / rogue_node_msg every message the rogue sent them
 * (rogue_from says which are), which delivers it and checks what it
 * changed. */
void rogue_fault(struct world *w, int on, int unfinished);
void rogue_heal(struct world *w);
void rogue_keep(struct simwriter *wr);
void rogue_epoch(struct world *w);
int rogue_from(const struct world *w, struct ep *e);
void rogue_coord_msg(struct world *w, struct ep *e, const Env *env);
void rogue_node_msg(struct simnode *sn, struct ep *e, const Env *env);
void rogue_free(struct world *w);

/* A seed for a key pair of the run (what: whose, i: which): a function
 * of the run's seed, drawing nothing from its generators, so that keys
 * change no schedule. */
void sim_key_seed(const struct world *w, const char *what, uint64_t i, uint8_t seed[32]);
void sfo_promote_seed(const struct world *w, int slot, uint8_t seed[32]);

#endif
