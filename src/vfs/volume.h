/*
 * volume.h: the engine's side of a volume (paper §4.1-4.3): ships redo,
 * tracks durability, reads pages, recovers at open.
 *
 * One I/O thread per open volume runs a libuv loop with a connection to
 * every storage node holding a segment of the volume and one to the
 * coordinator. SQLite's threads call in (vol_ship, vol_wait, vol_read) and
 * wait on a condition variable with a deadline; only uv_async_send crosses
 * into the loop. The durability decisions are vfs/quorum.c's.
 *
 * Write: vol_ship() gives each changed page of one mini-transaction an LSN
 * (waiting while LSNs would pass vdl + LAL), links it to the previous record
 * of its PG (backlink) and marks the last one as the MTR's CPL. The I/O
 * thread sends every PG's new records, in one Append per segment, to the
 * six segments; records of consecutive commits that wait for the same
 * segment travel together. Acks advance VCL and VDL.
 *
 * Read: vol_read() reads a page as of the current VDL from one segment
 * whose SCL is at least that (§4.2.3), trying another on error, or when
 * the page's LSN is not the one the writer knows (vfs/pagelsn.h).
 *
 * Open (recovery, §4.3): take a new epoch from the coordinator; ask every
 * segment of every PG for its state (a read quorum of each PG must answer),
 * which fences older writers; the VDL is the highest durable point any
 * segment heard; write the truncation range (vdl, vdl + LAL] to a write
 * quorum of every PG (or an empty range when every segment answered and
 * none holds anything above the VDL), and go on from there.
 */
#ifndef AURALOG_VOLUME_H
#define AURALOG_VOLUME_H

#include <stddef.h>
#include <stdint.h>
#include "param.h"
#include "vfs/diff.h"
#include "auralog.pb-c.h"
#include "net/auth.h"

struct volume;

/* One page of a mini-transaction: the ranges of after that changed. */
struct mtr_page {
  uint32_t page_no;
  uint32_t flags;            /* REC_ZERO for a page that starts from zeros */
  const uint8_t *after;      /* the new page */
  const struct drange *ranges;
  size_t nranges;
};

struct vol_stats {
  uint64_t epoch, vdl, vcl, next_lsn, lal;
  uint64_t commits, redo_bytes, redo_msgs, records, pending, pages_read;
  uint64_t binlog_bytes;     /* events shipped in binlog records (issue 29) */
  uint64_t rolled_forward;   /* the XID this open's recovery rolled forward (0: none) */
  /* Every frame to / from the storage nodes (Append, ReadPage, SegQuery,
   * Truncate and their answers; not the coordinator), bytes with the
   * length prefix. redo_bytes/redo_msgs are the Appends among them. */
  uint64_t net_bytes_out, net_msgs_out, net_bytes_in, net_msgs_in;
  uint64_t recovery_ms;
  uint64_t trunc_from, trunc_to;   /* the truncation this open wrote */
  uint64_t truncs_unbounded; /* truncations its recovery learned and left out: below a
                                VDL a segment heard from an older epoch (vfs/open.c) */
  /* now_ms() before which the previous writer's read lease may still run
   * (the coordinator said how long, failover.c F3): a promoted writer
   * serves only after it (0: no wait). */
  uint64_t serve_after_ms;
  uint64_t refusing;         /* segments that refused the last 3+ Appends (not fenced) */
  /* Page replies the end-to-end check refused (vfs/pagelsn.h): a segment
   * answered an older (or newer) page than the writer knows it to be;
   * stale_node: the node that served the last one ("" if none). */
  uint64_t stale_pages;
  char stale_node[ADDR_MAX_LEN + 1];
};

/* Open (and recover) volume name through the coordinator at coord,
 * creating it if missing, with pg_pages pages per PG (0: the
 * coordinator's default, PG_PAGES; an existing volume keeps its own).
 * engine_addr is reported in status ("" if none). Returns NULL with a
 * one-line reason on failure. */
/* Sign env as v's writer on a connection bound by bind (coord/roles.c
 * R4: lease probes and reports count only so); sig must outlive the send. */
void vol_writer_seal(struct volume *v, Auralog__Envelope *env, const uint8_t bind[AUTH_BIND_BYTES],
                     uint8_t sig[AUTH_SIG_BYTES]);

/* engine --create: opens may create a volume whose name was dropped. */
void vol_recreate_default(int on);
/* engine --binlog community: the newest XID of the engine's binlog file,
 * which the next open's recovery rolls forward if it was prepared and not
 * committed (open.c rollforward; 0: none). */
void vol_rollforward_xid(uint64_t xid);
/* engine --binlog enhanced: a writer's open asks for the volume's binlog
 * PG (the coordinator places one if missing; coord/cbinlog.c). */
void vol_binlog_default(int on);
/* Does v have a binlog PG? Once it has, every MTR of a transaction with
 * events carries them (vol_ship_bl), whatever the engine was started with. */
int vol_has_binlog(const struct volume *v);

struct volume *vol_open(const char *coord, const char *name, const char *engine_addr,
                        uint32_t pg_pages, char *why, size_t whylen);

/* The same, as a promotion (coord/failover.c F1): the coordinator gives
 * the next epoch only if the volume's is still if_epoch (0: any), else
 * the open fails at once (ERR_STALE_EPOCH's text in why). */
struct volume *vol_open_if(const char *coord, const char *name, const char *engine_addr,
                           uint32_t pg_pages, uint64_t if_epoch, char *why, size_t whylen);

/* Wait (up to the commit deadline) for what was shipped to be durable,
 * tell the segments the final VDL, and stop. */
void vol_close(struct volume *v);

uint32_t vol_page_size(const struct volume *v);
const char *vol_name(const struct volume *v);

/* Ship one mini-transaction. Returns its commit LSN (its CPL), or 0 with a
 * reason (fenced, LSN allocation limit not freed in time, volume cannot
 * grow). n must be at least 1. */
uint64_t vol_ship(struct volume *v, const struct mtr_page *pages, size_t n,
                  char *why, size_t whylen);
/* The same, with the transaction's packed events bl[0..bllen) as the MTR's
 * last record, in the binlog PG (ship.c B1); the volume takes bl (frees
 * it, shipped or not). bl NULL: vol_ship. */
uint64_t vol_ship_bl(struct volume *v, const struct mtr_page *pages, size_t n, uint8_t *bl,
                     size_t bllen, char *why, size_t whylen);

/* The community binlog's two-phase commit (ship.c P0): vol_prepare
 * ships the MTR's page records without a CPL and returns its last LSN
 * (0, why: refused; the XID is that LSN + 1); vol_wait_vcl waits until
 * every record at or below lsn is at write quorum (0, or -1 with why);
 * vol_commit_prepared ships the commit record, the MTR's CPL, whose LSN
 * it returns (the XID). Nothing else may ship in between. */
uint64_t vol_prepare(struct volume *v, const struct mtr_page *pages, size_t n, char *why,
                     size_t whylen);
int vol_wait_vcl(struct volume *v, uint64_t lsn, int timeout_ms, char *why, size_t whylen);
uint64_t vol_commit_prepared(struct volume *v);

/* Wait until vdl >= lsn. Returns 0, or -1 with a reason after timeout_ms. */
int vol_wait(struct volume *v, uint64_t lsn, int timeout_ms, char *why, size_t whylen);

/* Why commit lsn is not durable after waited_ms: a one-line reason. */
void vol_stalled(struct volume *v, uint64_t lsn, int waited_ms, char *why, size_t whylen);

/* Page page_no as of the current VDL into out (vol_page_size bytes).
 * *page_lsn: the LSN of its newest change. Returns 0, or -1 with a reason. */
int vol_read(struct volume *v, uint32_t page_no, uint8_t *out, uint64_t *page_lsn,
             char *why, size_t whylen);

uint64_t vol_vdl(struct volume *v);

/* Has a newer writer fenced this one (§4.3)? Then why says so. */
int vol_fenced(struct volume *v, char *why, size_t whylen);

/* Call fn(arg, vdl) on the I/O thread whenever the VDL advances (the
 * engine server acknowledges waiting commits from there). */
void vol_on_durable(struct volume *v, void (*fn)(void *arg, uint64_t vdl), void *arg);

void vol_get_stats(struct volume *v, struct vol_stats *st);

/* When commit lsn had its LSNs (its redo cut, vol_ship), when its CPL
 * record went to its VW-th segment, and when the VDL passed it (monotonic
 * us, now_us()), for the commit stage timings of `auralog bench`
 * (vfs/stages.h). The volume keeps the last STAGE_TIMES_RING durable
 * commits. 0, or -1 if it has none for lsn. */
struct vol_ctime {
  uint64_t lsn, cut_us, sent_us, durable_us;
};
int vol_commit_times(struct volume *v, uint64_t lsn, struct vol_ctime *out);

/* Drop the volume at the coordinator (xDelete). */
int vol_drop(const char *coord, const char *name, char *why, size_t whylen);

/* The CPL of the last mini-transaction shipped (by any connection): a
 * snapshot taken now can see every commit up to it, and no other. */
uint64_t vol_last_cpl(struct volume *v);

/* The engine server's reads mode (--reads immediate: 1), for the reports
 * of the volumes this process opens from now on. */
void vol_reads_default(int immediate);
/* A read's reply (no commit of its own) saw commits up to seen: if that
 * is above the VDL now, count it, as a dirty read if it goes out now
 * (immediate: a reply a crash could contradict), else as held (durable:
 * it waits for the VDL), and return 1. */
int vol_read_seen(struct volume *v, uint64_t seen, int immediate);

/* Membership changes (member.h M4; vfs/vprobe.c). The lease probe's
 * membership part: vh->mseq, the membership sequence the writer applied,
 * and vh->pgs, each PG in transition with its mepoch and adopted_at
 * (malloc'd: vol_probe_free). The probe's answer (the coordinator's
 * Volume: its mseq and the PGs changed since, whole): applied on the
 * volume's I/O thread soon after. */
void vol_probe_fill(struct volume *v, Auralog__Volume *vh);
void vol_probe_free(Auralog__Volume *vh);
void vol_members(struct volume *v, const Auralog__Volume *ans);

/* Fence the volume for good (a newer writer exists, as the coordinator
 * said): as a node's stale-epoch refusal does, vol_ship and vol_read fail
 * with why from now on and vol_fenced says so. The first reason stays. */
void vol_fence(struct volume *v, const char *why);

/* ---- read replicas (paper §4.2.4) ---------------------------------------
 * A replica's volume: the coordinator's description, connections to the
 * segments, page reads at a read point the replica names; it never writes,
 * recovers, fences or reports. NULL with a reason on failure. */
struct volume *vol_open_reader(const char *coord, const char *name, char *why, size_t whylen);
/* Follow a writer: its epoch and truncation go with every read; take on
 * PGs the volume gained (asks the coordinator). 0, or -1 with a reason. */
int vol_reader_follow(struct volume *v, uint64_t epoch, const Auralog__TruncRange *trunc,
                      char *why, size_t whylen);
/* Page page_no as of read point rp, need being its PG's last record at or
 * below rp (the replica knows it, vfs/rapply.h). As vol_read otherwise. */
int vol_read_at(struct volume *v, uint32_t page_no, uint64_t rp, uint64_t need, uint8_t *out,
                uint64_t *page_lsn, char *why, size_t whylen);
size_t vol_npgs(struct volume *v);

/* The writer's side (vfs/feed.c). fn sees every record vol_ship hands
 * out, in LSN order, on the shipping thread with the volume's lock held
 * (NULL: none). */
void vol_on_rec(struct volume *v, void (*fn)(void *arg, const Auralog__Record *r), void *arg);
/* Where a new replica's stream starts (rapply.h): start, from, each PG's
 * tail, the truncation, the VDL, the geometry, taken under the lock that
 * hands out LSNs: every record from `from` on goes to fn (vol_on_rec, set
 * before). tails: room for MAX_PGS pointers (each malloc'ed); tr: room for
 * the truncation. 0, or -1 (a replica's volume, or fenced). */
int vol_feed_start(struct volume *v, Auralog__ReplicaStart *s, Auralog__PgLast **tails,
                   Auralog__TruncRange *tr);
/* The replicas' oldest read point (0: none), folded into the PGMRPL sent
 * to the segments, and their stats for the report. */
void vol_set_replicas(struct volume *v, uint64_t floor, const Auralog__ReplicaStat *const *rs,
                      size_t n);

#endif
