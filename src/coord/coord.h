/*
 * coord.h: the coordinator's core (paper §5, the control plane): volumes,
 * their protection groups and segment placement, writer epochs, nodes and
 * who is up, lab faults, status. No I/O of its own: it answers through a
 * struct io (io.h) and keeps its metadata in a struct meta (meta.h). Two
 * drivers run it: coord/main.c (`auralog coord`, libuv and lmdb) and the
 * simulator (src/sim/).
 *
 * Events:
 *   coord_init     the metadata is open: load it
 *   coord_on_msg   a request on an endpoint (a node, an engine, a tool)
 *   coord_on_down  an endpoint closed (a node that closes is shown down)
 *   coord_tick     every HEARTBEAT_MS: a node silent for NODE_DOWN_MS is down
 *   coord_free     memory only (the simulator's crash)
 * coord_http_status builds the dashboard's /status.json.
 */
#ifndef AURALOG_COORD_H
#define AURALOG_COORD_H

#include "coord/meta.h"
#include "net/auth.h"
#include "net/io.h"
#include "param.h"

struct cnode {
  Auralog__NodeInfo *info;     /* id, az, addr (durable); up, last_seen_ms,
                                  the last heartbeat's counters */
  unsigned long long last_seen;
  struct ep *conn;             /* its registration's endpoint (NULL: none) */
  Auralog__SegStat *stats;     /* each segment's, from the last heartbeat that listed it,
                                  sorted by (volume, pg): heartbeats are deltas (coord.c) */
  size_t nstats, capstats;
  unsigned long long assign_again_at;  /* member.c member_check_node: the last resend */
  uint32_t short_have, short_want;     /* ... a whole heartbeat's shortfall, kept to see if
                                        * the next one made progress (0, 0: none) */
};

/* The last report of a volume's engine. */
struct ereport {
  Auralog__EngineStat *st;
  unsigned long long at;
  /* The writer of the current epoch still recovering: what it waits for,
   * and when it said so (EngineStat.recovering; "" once it serves). */
  char recovering[200];
  uint64_t rec_epoch;
  unsigned long long rec_at;
  /* The PGMRPL it last reported, since when, and the volume's segments'
   * totals then (hold.c). */
  uint64_t hold_pgmrpl, hold_recs, hold_vers, hold_bytes;
  unsigned long long hold_at;
  /* Engines of an older epoch that still report (fenced writers, §4.3),
   * newest first: status shows them. */
  struct {
    char addr[ADDR_MAX_LEN + 1];
    uint64_t epoch;
    unsigned long long at;
  } fenced[FENCED_SHOWN];
  Auralog__FencedEngine fout[FENCED_SHOWN], *foutp[FENCED_SHOWN];
};

struct fo;
struct cjn;
struct jrep;

struct coord {
  const struct io *io;
  int failover;                /* promote a replica when the writer is lost (--failover) */
  struct fo *fo;               /* failover.c's state (NULL until first needed) */
  struct auth_signer signer;   /* signs epoch tickets (auth.h); set by the driver */
  uint8_t op_pk[AUTH_PK_BYTES];  /* the operator's public key (roles.c); set by the driver */
  int have_op_pk;
  struct ereport *engines;     /* engines[i] reports on vols[i] */
  struct meta meta;            /* opened by the driver before coord_init */
  struct cnode **nodes;
  size_t nnodes;
  Auralog__Volume **vols;
  size_t nvols;
  /* The cluster's event journal (coord/journal.c): note appends one line
   * (kind, JSON fields); NULL, as in the simulator: nothing is recorded,
   * nothing tracked for it. */
  void (*note)(void *ctx, const char *kind, const char *fields);
  void *note_ctx;
  struct cjn *jn;
  struct jrep *jr;             /* ... of replicas, holds, failovers (coord/jreplica.c) */
  struct flog *flog;           /* the faults heard of lately (coord/faultlog.c) */
  /* Membership changes and repair (coord/member.c, member.h M7): a node
   * silent for repair_after_ms (0: REPAIR_AFTER_MS) has its segments
   * moved to spares, unless repair_off (coord --repair-after 0). */
  unsigned long long repair_after_ms;
  int repair_off;
  struct mstate *ms;
  struct blc *blc;             /* binlog consumers' keep points sent (binlogc.c) */
};

/* faultlog.c: note a fault played or noted (lab marks and bench notes are
 * ignored); put the last FAULTS_SHOWN in a Status, oldest first. */
void flog_note(struct coord *co, const Auralog__Fault *f);
void flog_status(struct coord *co, Auralog__Status *st);
void flog_free(struct coord *co);

/* hold.c: note engines[i]'s report (what the PGMRPL holds back); put it
 * in a Status. */
void hold_note(struct coord *co, size_t i);
void hold_status(const struct coord *co, size_t i, Auralog__Status *st,
                 unsigned long long now);

int coord_init(struct coord *co, const struct io *io, char *why, size_t whylen);
void coord_on_msg(struct coord *co, struct ep *c, const Env *env);
void coord_on_down(struct coord *co, struct ep *c);
void coord_tick(struct coord *co);
void coord_free(struct coord *co);
char *coord_http_status(void *co, const char *volume);
char *coord_http_sample(void *co);

/* failover.c (failover's rules are there): a writer's OpenVolume with
 * if_epoch is refused (-1, why) unless the volume is at that epoch and
 * the open is the chosen replica's or the writer's retry, holding the key
 * it names (proved: roles.c coord_key_proved; -2 if it does not);
 * fo_opened after a writer took its epoch returns how long the previous
 * writer's read lease may still run (ms); fo_probe: a lease probe naming
 * epoch; fo_on_msg answers ReplicaBeat, WriterReq and Failover (1) or
 * returns 0; fo_tick detects a lost writer and chooses a replica. */
int fo_open_check(struct coord *co, const Auralog__Volume *v, const Auralog__OpenVolume *ov,
                  int proved, char *why, size_t whylen);
uint32_t fo_opened(struct coord *co, const Auralog__Volume *v);
void fo_probe(struct coord *co, const Auralog__Volume *v, uint64_t epoch);
int fo_on_msg(struct coord *co, struct ep *c, const Env *env);
void fo_tick(struct coord *co);
void fo_status(struct coord *co, const Auralog__Volume *v, Auralog__FailoverStat *fs);
void fo_free(struct coord *co);
/* A writer's recovery raised the data-loss alarm: promote no replica of v
 * (each would take an epoch to prove the same) until the operator opens a
 * writer again; status says why. */
void fo_dataloss(struct coord *co, const Auralog__Volume *v, const char *why);
/* The simulator's window on failover's state (src/sim/rogue.c checks that
 * a member's requests change none of it), with no side effect: when the
 * volume's writer last proved itself alive, the replica chosen, and the
 * key replica addr beats with and when it last did. 0: nothing known of
 * the volume. */
struct fo_peek {
  unsigned long long heard;
  char promoting[ADDR_MAX_LEN + 1];
  int rep_known;
  unsigned long long rep_heard;
  uint8_t rep_pk[AUTH_PK_BYTES];
};
int fo_peek(const struct coord *co, const char *volume, const char *addr,
            struct fo_peek *out);

/* roles.c (the rules R1-R4 are there): coord_op answers an Error and
 * returns 0 unless env needs no operator or carries the operator's
 * signature; coord_writer: does env carry the proof of v's writer of
 * epoch (R4)? coord_key_proved: does env (an OpenVolume) prove, on c,
 * that it holds the key it names (R1)? coord_create_ok: may ov create
 * its volume (else an Error sent, 0)? coord_on_drop: DropVolume (R3). */
int coord_op(struct coord *co, struct ep *c, const Env *env);
/* coord.c: an Ok reply to request req; the slot of volume name in
 * co->vols (NULL: none). */
void coord_reply_ok(struct coord *co, struct ep *c, uint64_t req);
Auralog__Volume **coord_vol_slot(struct coord *co, const char *name);
/* coord.c, for member.c: the node of that id (NULL: none); store tmp as
 * the volume in *slot (NULL: a new one), durably, before anyone hears of
 * it (NULL with a reason if it could not); send node n its whole Assign. */
struct cnode *coord_node_find(struct coord *co, const char *id);
Auralog__Volume *coord_vol_store(struct coord *co, Auralog__Volume **slot,
                                 const Auralog__Volume *tmp, char *why, size_t whylen);
void coord_send_assign(struct coord *co, struct cnode *n, uint64_t req);

/* The binlog PG (cbinlog.c): place volume *slot's if it has none, store
 * and assign it; the volume as stored (NULL, why: no placement). Every PG
 * of a volume, the binlog PG last: i < coord_vol_npgs_all(v). */
Auralog__Volume *coord_binlog_place(struct coord *co, Auralog__Volume **slot, char *why,
                                    size_t whylen);
size_t coord_vol_npgs_all(const Auralog__Volume *v);
Auralog__Pg *coord_vol_pg_at(const Auralog__Volume *v, size_t i);
/* cstatus.c: answer a StatusReq (the dashboard's askers: above). */
void coord_on_status(struct coord *co, struct ep *c, uint64_t req,
                     const Auralog__StatusReq *sr);
int coord_writer(struct coord *co, struct ep *c, const Env *env, const Auralog__Volume *v,
                 uint64_t epoch);
int coord_create_ok(struct coord *co, struct ep *c, uint64_t req,
                    const Auralog__OpenVolume *ov);
int coord_key_proved(struct coord *co, struct ep *c, const Env *env);
void coord_on_drop(struct coord *co, struct ep *c, uint64_t req, const Auralog__DropVolume *d);

/* segstats.c: take a heartbeat's segment stats into n->stats (a delta
 * merged by (volume, pg), a whole one in place of all). */
void coord_merge_stats(struct cnode *n, const Auralog__Heartbeat *hb);
/* ... the stats n last reported for (vol, pg) (NULL: none); forget them
 * (a segment it gets anew starts from its next heartbeat, not from what
 * an older segment of that PG on it said). */
const Auralog__SegStat *coord_seg_stat(const struct cnode *n, uint64_t vol, uint32_t pg);
void coord_forget_stat(struct cnode *n, uint64_t vol, uint32_t pg);

/* journal.c: the event journal's lines (see there for each kind). */
void jn_event(struct coord *co, const char *kind, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
void jn_start(struct coord *co);
void jn_sample_all(struct coord *co);
void jn_fenced(struct coord *co, const Auralog__Volume *v, const char *addr, uint64_t epoch);
void jn_engine(struct coord *co, const Auralog__Volume *v, const Auralog__EngineStat *es);
int jn_fault_note(struct coord *co, const Auralog__Fault *f);
void jn_tick(struct coord *co);
void jn_free(struct coord *co);
/* jreplica.c: the journal's replicas, PGMRPL holds, GC and failovers. */
void jr_fields(const Auralog__EngineStat *es, char *out, size_t n);
void jr_engine(struct coord *co, const Auralog__Volume *v, const Auralog__EngineStat *es);
void jr_tick(struct coord *co);
void jr_failover(struct coord *co, const char *volume, const char *from, const char *to,
                 uint64_t from_epoch, uint64_t epoch, int asked, unsigned long long detect_ms,
                 unsigned long long took_ms);
void jr_free(struct coord *co);

/* meta_load's callbacks (the core owns what they are given). */
void coord_node_add(void *co, Auralog__NodeInfo *info);
void coord_vol_add(void *co, Auralog__Volume *v);

#endif
