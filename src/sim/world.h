/*
 * world.h: a whole auralog cluster in one process, under the simulator
 * (DESIGN.md §3): six storage nodes in three AZs, the coordinator, the
 * writer (and, as faults, a second one), and in runs with --faults
 * replicas a read replica that failover may promote, and with --faults
 * backup an object store the nodes back up to; each the same core the
 * real processes run (node.h, coord.h, volume_int.h), on a simulated
 * network (net.h) and simulated disks (disk.h), driven by one seeded PRNG
 * and a virtual clock (clock.h).
 *
 * What the simulator adds around the cores, and nothing protocol-level:
 *   world.c    hosts: start, crash and restart nodes and the coordinator,
 *              end a node's turn (group commit) after the messages of one
 *              instant, fire its timers
 *   writer.c   a writer host: open a volume through the coordinator (as
 *              vol_open does), recover, serve the workload, crash
 *   workload.c transactions of several pages across PGs, page reads, and
 *              the shadow model of what every page must hold
 *   check.c    the invariants of DESIGN.md §4, after every event and at
 *              the end
 *   replica.c  a read replica (--faults replicas): the real replica's
 *              apply rule, its cache and storage reads, checked against
 *              the shadow model; rstream.c its stream with the writer
 *   failover.c failover (coord/failover.c F1-F5), in the runs with a
 *              replica: the writer's lease probes, the replica's beats,
 *              its promotion to writer, the hosts' roles after one
 *   nemesis.c  the faults a seed mixes in, and the final heal
 *   rogue.c    the rogue member (a fault): a host with the cluster key and
 *              no role, whose attacks every core must refuse or bound
 *   objsim.c   the object store the nodes back up to (--faults backup): in
 *              memory, shared by all nodes, outliving their crashes, with
 *              faults (store-down, store-slow, store-rot); each node's
 *              backup driver
 *   bkcheck.c  invariant 11 (node GC never passes what the store can
 *              restore) throughout, and at the end restores checked
 *              against the shadow model
 *   sim.c      `auralog sim`: seeds, summary, replay line, trace, shrink
 *
 * One seed is one run: world_new(opts), world_run, world_free. Everything
 * a run decides comes from its seed; the trace hash proves it.
 */
#ifndef AURALOG_SIM_WORLD_H
#define AURALOG_SIM_WORLD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/clock.h"
#include "sim/disk.h"
#include "sim/net.h"
#include "sim/rng.h"

#define SIM_BASE_NODES 6        /* storage nodes the volume is placed on: two per AZ */
#define SIM_SPARES     3        /* ... and a spare in each AZ, started once the volume is
                                  * placed (so it hosts nothing): repair's target (member.h M7) */
#define SIM_NODES      (SIM_BASE_NODES + SIM_SPARES)
#define SIM_REPAIR_AFTER_MS 1500 /* the coordinator repairs a node silent this long
                                  * (REPAIR_AFTER_MS): node crashes often outlast it, so
                                  * repairs, finishes and replaced nodes' returns are common */
#define SIM_WRITERS    3        /* the writer, as a fault a second one (w2), and the
                                  * writer a promoted replica becomes (on the replica's
                                  * host, r1: failover.c) */
#define SIM_PGS        3        /* protection groups the workload spreads over */
#define SIM_PAGES      6        /* pages it writes in each PG */
#define SIM_PAGE_SIZE  512      /* bytes per page (the smallest SQLite page) */
#define SIM_TX_PAGES   4        /* at most this many pages per transaction */
#define SIM_TIME_MS    12000    /* virtual time a run lasts, before the final heal */
#define SIM_HEAL_MS    6000     /* after the final heal: commits must resume by then ... */
#define SIM_SETTLE_MS  3000     /* ... and every segment converge within this after */
#define SIM_GC_PEER_WAIT_MS 2000 /* a silent peer holds GC this long (GC_PEER_WAIT_MS: 10 min):
                                  * nodes down longer come back behind their peers' GC
                                  * point and catch up by page versions (node/bg.c) */
#define SIM_BK_TAKEOVER_MS 13000 /* a PG's next backup uploader takes over from one not
                                  * connected and silent this long, or connected and silent
                                  * four times as long (BACKUP_TAKEOVER_MS, BACKUP_SILENT_MS:
                                  * node/nbackup.c rule U); in half the backup runs
                                  * SIM_BK_EAGER_MS ... */
#define SIM_BK_EAGER_MS 2000     /* ... below it: every member often thinks it stages the PG
                                  * (as in a partition), and their pieces overlap */
#define SIM_SHIP_MS    25       /* a serving writer ships a transaction about this often */
#define SIM_READ_MS    60       /* ... and starts a page read about this often */
#define SIM_REPLICA_GONE_MS 1000 /* a replica silent this long no longer holds the
                                  * PGMRPL (REPLICA_GONE_MS: 10 s) */
#define SIM_INFLIGHT   8        /* transactions a writer keeps in flight */
#define SIM_HOTLOG_CKPT  (24u << 10) /* a node checkpoints its hot log past this (small: often) */
#define SIM_HOTLOG_CHUNK (8u << 10)  /* ... preallocated this much at a time */

/* Fault kinds (nemesis.c); --faults takes their names. */
enum {
  F_ENGINE_CRASH, F_NODE_CRASH, F_AZ_DOWN, F_AZ1_DOWN, F_PARTITION, F_PAIR_CUT,
  F_SLOW, F_RECOVERY_CRASH, F_CORRUPT, F_SECOND_WRITER, F_DROP, F_DUP, F_REORDER,
  F_AZ1_SWAP, F_SPLIT_WRITE, F_STALE_TRUNC, F_COORD_CRASH, F_STALE_READ, F_REPLICA_CRASH,
  F_STREAM_CUT, F_REPLICA_SILENT, F_WRITER_LOST, F_WRITER_STOP, F_MANUAL_FAILOVER,
  F_PROMOTE_CRASH, F_ROGUE, F_ROGUE_UNFINISHED, F_NODE_LOST, F_STORE_DOWN, F_STORE_SLOW,
  F_STORE_ROT, F_SLOW_RECOVERY,
  F_NKINDS                   /* at most 32: a run's kinds are a uint32_t's bits */
};
extern const char *const fault_names[F_NKINDS];
/* `all`, the default: every kind but stale-read, rogue-unfinished and
 * slow-recovery, which are asked for by name (slow-recovery: its own
 * campaign, so that the default seeds keep their schedules). A stale node can still show a reader an old
 * page the writer cannot know to be old (vfs/pagelsn.h says which): a
 * node-side check (scrub) is what closes that, not yet the simulated
 * node's. A key of a writer that died in its recovery can still cut
 * commits acknowledged and never announced (rogue.c says how). */
#define F_REPLICAS ((1u << F_REPLICA_CRASH) | (1u << F_STREAM_CUT) | (1u << F_REPLICA_SILENT) | \
                    (1u << F_WRITER_LOST) | (1u << F_WRITER_STOP) | \
                    (1u << F_MANUAL_FAILOVER) | (1u << F_PROMOTE_CRASH))
#define F_BACKUP ((1u << F_STORE_DOWN) | (1u << F_STORE_SLOW) | (1u << F_STORE_ROT))
#define F_KINDS (F_NKINDS == 32 ? 0xffffffffu : (1u << (F_NKINDS & 31)) - 1)
_Static_assert(F_NKINDS <= 32, "a run's fault kinds are a uint32_t's bits");
#define F_ALL (F_KINDS & ~(1u << F_STALE_READ) & ~F_REPLICAS & \
               ~(1u << F_ROGUE_UNFINISHED) & ~F_BACKUP & ~(1u << F_SLOW_RECOVERY))
/* A read replica (replica.c) is in the world only in runs that allow its
 * faults (--faults replicas: all of `all` and them): its host's draws and
 * messages would change every older seed's run. So is failover (the
 * coordinator's --failover, the writer's lease probes: failover.c): on in
 * exactly the runs with a replica. Likewise the object store and the
 * nodes' continuous backup (objsim.c, bkcheck.c): only in runs that allow
 * a backup kind (--faults backup: all of `all` and them), for the store's
 * draws and the nodes' uploads would change every older seed's run too. */

/* The rogue member's attacks (rogue.c), by kind; sim_result counts each
 * one's outcome. */
enum {
  RG_OPEN,          /* a writer-open without the operator's signature, or with a wrong one */
  RG_OPEN_IF,       /* a conditional open (a promotion's) the coordinator did not choose */
  RG_TRUNC_FORGED,  /* a truncation under a ticket it forged, on some node path */
  RG_TRUNC_OLD,     /* a fenced old writer's truncation, validly signed, out of bounds */
  RG_DROP, RG_FAULT, RG_FAILOVER,   /* operator requests, unsigned or signed wrong */
  RG_PROBE,         /* a lease probe of the current epoch, without its writer's proof */
  RG_REPORT,        /* an engine report of the current epoch, likewise */
  RG_BEAT,          /* a replica beat claiming a replica's address with its own key */
  RG_NKINDS
};
extern const char *const rogue_names[RG_NKINDS];
/* What became of an attack: an Error answered it; it was answered (or
 * not) and changed nothing; it took effect (allowed only where the rules
 * allow it: an old truncation within the bound, a beat for an address no
 * replica holds); it never arrived (its target down, its connection cut). */
enum { RG_REFUSED, RG_IGNORED, RG_TAKEN, RG_LOST, RG_NOUTCOMES };

struct sim_opts {
  uint64_t seed;
  uint64_t time_ms;          /* virtual time before the final heal */
  uint64_t max_steps;        /* stop after this many events (0: no limit) */
  uint32_t faults;           /* bit per fault kind allowed */
  int beyond;                /* 1: faults beyond the paper's model (liveness only) */
  int binlog;                /* 1: the volume has a binlog PG, each commit ships its events
                                (ship.c B1), and blcheck.c checks the stream at the end */
  int community;             /* 1: each writer keeps a community binlog file in a two-phase
                                commit with the volume (cbinlog.c) */
  unsigned bugs;             /* planted bugs (bugs.h) */
  FILE *trace;               /* NULL: no trace written */
  int verbose;
  /* A schedule to replay instead of drawing one (the shrinker's). */
  const struct fault_ev *sched;
  size_t nsched;
};

/* One scheduled fault: at time t, kind, on target (a node, an AZ, ...). */
struct fault_ev {
  uint64_t t;
  int kind;
  int target, target2;
  uint64_t dur;              /* how long until it heals */
};

struct sim_result {
  int violations;
  char first[512];           /* the first violation, one line */
  uint64_t steps, sim_ms, hash;
  uint64_t tx_shipped, tx_acked, tx_unknown, tx_truncated, reads_checked;
  uint64_t recoveries, recoveries_interrupted;
  /* Recovery's rule W (vfs/rcvround.c): requests asked again of silent nodes,
   * attempts ended because a node given up came back. */
  uint64_t rcv_asked_again, rcv_restarted, rcv_failed;   /* ... and attempts that failed */
  uint64_t data_loss_alarms;  /* --beyond: true alarms (vfs/open.c), each a run's end */
  uint64_t faults[F_NKINDS];
  uint64_t msgs;
  /* The read replica (replica.c), in runs that have one. */
  uint64_t replica_reads;    /* its reads checked against the shadow ... */
  uint64_t replica_cache_reads; /* ... of them from its cache */
  uint64_t replica_refused;  /* storage reads refused (or given up): never wrong ... */
  uint64_t replica_gc_refused; /* ... of them below a node's GC point ... */
  uint64_t replica_gc_held;  /* ... while the writer's PGMRPL held the point (R6 broken?) */
  uint64_t replica_gc_lapsed; /* ... in a stream whose floor the writer once let go */
  uint64_t replica_starts, replica_refused_feeds, replica_applied, replica_holds;
  uint64_t replica_lapses;   /* streams whose writer stopped hearing the replica */
  /* Failover (failover.c), in runs with a replica. */
  uint64_t fo_promotions;    /* promote answers a replica acted on ... */
  uint64_t fo_promoted;      /* ... promotions that took an epoch ... */
  uint64_t fo_refused;       /* ... and that were refused: the epoch moved on (F1) */
  uint64_t fo_promoted_served; /* promoted writers that served */
  uint64_t fo_fenced;        /* older writers fenced by a newer one (F2) */
  uint64_t fo_manual;        /* Failover requests the coordinator answered with a choice */
  uint64_t fo_as_replica;    /* old writers' hosts that came back as the replica */
  /* The nodes' background work (node/bg.c), over every node life. */
  uint64_t bg_coalesced, bg_gc_records, bg_scrubbed, bg_damage, bg_repaired, bg_catchups;
  uint64_t truncs_refused;
  uint64_t truncs_forgotten; /* ... and forgot once every member held them (rule TF) */   /* truncations the nodes refused (node/segment.c, the bound) */
  /* The nodes' hot logs (node/hotlog.h). */
  uint64_t hl_checkpoints;   /* checkpoints made */
  uint64_t hl_replays;       /* starts that replayed frames */
  uint64_t hl_replayed;      /* records replays stored (lmdb had lost them) */
  uint64_t hl_torn;          /* crashes that left a torn frame */
  uint64_t hl_damaged;       /* damaged frames replays skipped */
  uint64_t hl_commit_deaths; /* nodes that died inside a group commit */
  /* The rogue member (rogue.c): attacks by kind and outcome. */
  uint64_t rogue[RG_NKINDS][RG_NOUTCOMES];
  /* Membership (sim/member.c): PG membership changes the coordinator
   * stored (each a new mepoch), of them finishes (a next segment became
   * current), and the durable-copy checks made at each. */
  uint64_t mb_changes, mb_finishes, mb_checks, mb_lost;
  /* ... of them, the binlog PG's (--binlog runs: member.c). */
  uint64_t mb_bl_changes, mb_bl_finishes;
  /* Continuous backup (objsim.c, bkcheck.c), in runs that have it:
   * objects the nodes stored and store calls that failed (store-down);
   * restores made at the end and checked against the shadow model, and
   * the pages they compared; the invariant-11 checks made (a segment's
   * GC point against what the store can restore of its PG). And with
   * store-rot: objects it damaged; of the restores checked, those that
   * went around a damaged object (restore.c R4), and those by time; the
   * restores refused, rightly (no plan avoided the damaged objects, or
   * by time: no point noted by then). */
  uint64_t bk_objects, bk_failed, bk_restores, bk_pages_checked, bk_gc_checks;
  uint64_t bk_rotted, bk_replanned, bk_by_time, bk_refused;
  /* The binlog (blcheck.c), in --binlog runs: binlog segments whose
   * stream was checked against the commits at the end, and the events
   * (transactions) they held at or below the VDL. */
  uint64_t bl_segments, bl_events;
  /* The community binlog (cbinlog.c), in --community runs: prepares,
   * frames written, transactions recovery rolled forward, frames cut above
   * a recovered VDL, frames another host's recovery orphaned. */
  uint64_t cm_prepares, cm_frames, cm_rolled, cm_cut, cm_orphans;
  uint64_t cm_crashes, cm_rf_interrupted;   /* its own crashes in the 2PC's windows, and
                                             * of them in a roll-forward's recovery */
  struct fault_ev *sched;    /* the schedule this run played (owned) */
  size_t nsched;
};

struct world;

/* One run of o (its planted bugs on for the run): *r is its verdict;
 * free r->sched. */
void sim_run(const struct sim_opts *o, struct sim_result *r);
/* A failing schedule s[0..n) of o, made smaller while the run still fails
 * (faults dropped one at a time). Returns the new n. */
size_t sim_shrink(const struct sim_opts *o, struct fault_ev *s, size_t n, int verbose);

struct world *world_new(const struct sim_opts *o);
/* Run to the end (or the first violation). */
void world_run(struct world *w, struct sim_result *r);
void world_free(struct world *w);

#endif
