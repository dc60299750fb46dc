/*
 * cbinlog.c: the community binlog in the simulator (`auralog sim
 * --community`): the engine's two-phase commit between the volume and a
 * binlog file of its own (vfs/community.c), on the simulated writers.
 *
 * Each writer host has its file, on its own disk: it outlives the
 * process (a crash loses nothing fsynced, and a frame is fsynced in the
 * step that writes it). A frame names the transaction (its index in the
 * shadow) and its XID. A transaction the workload ships goes through the
 * stages of community_commit, each an event of its own, so that a crash
 * may fall between any two of them:
 *   1. prepare (cm_prepare): its page records, without a CPL
 *      (vcore_prepare); no other record gets an LSN until its commit
 *      record (ship.c P0: the workload ships nothing meanwhile);
 *   2. once the VCL passes them (CB1), the frame is appended and synced;
 *   3. the commit record (vcore_commit_prepared) goes out later, after a
 *      drawn delay of 0-4 ms: the window in which a crash leaves a frame
 *      whose transaction has no commit record, which recovery must roll
 *      forward.
 * The nemesis's engine crashes seldom land in those windows, so the
 * engine also dies in them by a draw of its own (AURALOG_BINLOG_CRASH's
 * two stages: after the prepare is at quorum, after the frame), and, once
 * in a while, during a recovery that rolled a transaction forward (its
 * commit record maybe on some segments only); each is restarted at once,
 * as its operator would.
 * An open passes the file's newest XID to recovery (v->rf_xid, as
 * community_open does), and after it the frames above the VDL are cut
 * (community_opened).
 *
 * What must hold (with the shadow's states, workload.c):
 *   CM1. A transaction acknowledged, or kept by a recovery, has its frame
 *        in its writer's file (CB2: no commit record before the frame;
 *        roll-forward only of a framed XID). Checked as it happens.
 *   CM2. A frame, once synced, stands: its host's recovery makes its
 *        transaction durable (rolls it forward), so the frames it cuts
 *        above the VDL and the frames left in the file name only
 *        transactions that are durable at that XID. A consumer may have
 *        read a frame the moment it was synced (MySQL's binlog is the
 *        commit point): one cut, or left naming a truncated transaction,
 *        un-says a commit it saw. The exception is a transaction a
 *        recovery on another host decided, or began to while it was
 *        undecided: that host has no file of this one's (the seed's "new
 *        file sequence"), so it truncates the prepared transaction, and a
 *        truncation it installs stands even if its recovery then fails
 *        (seeds 4279 and 4485 of `--community`: a second writer's
 *        interrupted recovery cut the prepared records, and the first
 *        writer's next recovery could no longer roll them forward). Such
 *        a frame is an orphan, counted and reported, not a violation
 *        (community.c: across a failover the binlog is the promoted
 *        writer's own).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "sim/simint.h"

/* The file's newest XID (0: empty): recovery's roll-forward candidate. */
uint64_t cm_last_xid(const struct simwriter *wr)
{
  return wr->cm_n ? wr->cm_xid[wr->cm_n - 1] : 0;
}

int cm_busy(const struct simwriter *wr)
{
  return wr->cm_state != CM_NONE;
}

/* Stage 1: ship transaction tx's pages without their CPL. Returns its
 * XID, the LSN its commit record will have. */
uint64_t cm_prepare(struct simwriter *wr, const struct mtr_page *mp, size_t n, size_t tx)
{
  struct volume *v = wr->v;
  uint64_t last = vcore_prepare(v, mp, n);
  vcore_feed_mtr(v, mp, n, last);     /* as vol_prepare: no CPL yet, nothing applied */
  wr->cm_state = CM_PREPARED;
  wr->cm_tx = tx;
  wr->w->res->cm_prepares++;
  world_hash(wr->w, "prepare", last, tx);
  return last + 1;
}

static void frame_append(struct simwriter *wr, uint64_t xid, size_t tx)
{
  if (wr->cm_n == wr->cm_cap) {
    wr->cm_cap = wr->cm_cap ? 2 * wr->cm_cap : 64;
    wr->cm_xid = realloc(wr->cm_xid, wr->cm_cap * sizeof *wr->cm_xid);
    wr->cm_txi = realloc(wr->cm_txi, wr->cm_cap * sizeof *wr->cm_txi);
  }
  wr->cm_xid[wr->cm_n] = xid;
  wr->cm_txi[wr->cm_n++] = tx;
  wr->w->txs[tx].framed = 1;
  wr->w->res->cm_frames++;
}

/* Stages 2 and 3, as the volume lets them happen. */
void cm_step(struct simwriter *wr)
{
  struct world *w = wr->w;
  struct volume *v = wr->v;
  if (v == NULL || v->fenced || wr->cm_state == CM_NONE)
    return;
  uint64_t now = sim_now(w->clock);
  uint64_t xid = v->prep_last + 1;     /* the prepared records' last LSN is the core's */
  if (wr->cm_state == CM_PREPARED) {
    if (v->q.vcl < v->prep_last)
      return;                          /* CB1: not at write quorum yet */
    if (rng_uniform(&w->rng, 200) == 0) {
      world_trace(w, "writer %d dies after the prepare of xid %llu (before its frame)", wr->i,
                  (unsigned long long)xid);
      w->res->cm_crashes++;
      writer_crash_restart(wr);
      return;
    }
    if (w->txs[wr->cm_tx].state == TX_TRUNCATED)
      violation(w, "writer %d (epoch %llu): the prepared records of xid %llu reached write "
                "quorum after a newer epoch's recovery: an old writer was not fenced", wr->i,
                (unsigned long long)wr->epoch, (unsigned long long)xid);
    frame_append(wr, xid, wr->cm_tx);
    world_hash(w, "frame", xid, wr->cm_tx);
    wr->cm_state = CM_BINLOGGED;
    wr->cm_at = now + rng_uniform(&w->rng, 5);
    if (rng_uniform(&w->rng, 100) == 0) {
      world_trace(w, "writer %d dies after the frame of xid %llu (before its commit record)",
                  wr->i, (unsigned long long)xid);
      w->res->cm_crashes++;
      writer_crash_restart(wr);
      return;
    }
  }
  if (wr->cm_state == CM_BINLOGGED) {
    if (now < wr->cm_at) {
      writer_poke_at(wr, wr->cm_at);
      return;
    }
    uint64_t cpl = vcore_commit_prepared(v);   /* CB2 */
    if (cpl != xid)
      violation(w, "writer %d: the commit record of xid %llu got LSN %llu (P0)", wr->i,
                (unsigned long long)xid, (unsigned long long)cpl);
    vcore_feed_rec(v, cpl);
    wr->cm_state = CM_NONE;
    world_hash(w, "commitrec", cpl, 0);
    writer_kick(wr);
  }
}

/* During a recovery: one that rolled a transaction forward dies, one time
 * in three, within 20 ms of deciding it. Returns 1 if wr crashed. */
int cm_recovering(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (!w->o.community || wr->v == NULL || !wr->v->st.rolled_forward)
    return 0;
  uint64_t now = sim_now(w->clock);
  if (!wr->cm_rf_drawn) {
    wr->cm_rf_drawn = 1;
    wr->cm_rf_crash = rng_uniform(&w->rng, 3) == 0 ? now + rng_uniform(&w->rng, 21) : 0;
  }
  if (wr->cm_rf_crash == 0 || now < wr->cm_rf_crash)
    return 0;
  world_trace(w, "writer %d dies in the recovery that rolled xid %llu forward", wr->i,
              (unsigned long long)wr->v->st.rolled_forward);
  w->res->cm_crashes++;
  w->res->cm_rf_interrupted++;
  writer_crash_restart(wr);
  return 1;
}

/* CM1 for transaction tx, as it is acknowledged or kept. */
void cm_durable(struct world *w, size_t tx, const char *how)
{
  if (!w->o.community || w->txs[tx].framed)
    return;
  violation(w, "commit %llu (writer %d, epoch %llu) was %s but no binlog file has its events "
            "(CM1: a commit record went out before its frame, or a roll-forward without one)",
            (unsigned long long)w->txs[tx].cpl, w->txs[tx].writer,
            (unsigned long long)w->txs[tx].epoch, how);
}

/* Writer wr recovered to vdl (workload_recovered decided every older
 * transaction): count a roll-forward, cut the frames above vdl, and check
 * CM2 on the rest. */
void cm_recovered(struct simwriter *wr, uint64_t vdl)
{
  struct world *w = wr->w;
  if (!w->o.community)
    return;
  if (wr->v->st.rolled_forward) {
    w->res->cm_rolled++;
    world_trace(w, "writer %d: recovery rolled xid %llu forward (its frame is in the file)",
                wr->i, (unsigned long long)wr->v->st.rolled_forward);
  }
  while (wr->cm_n && wr->cm_xid[wr->cm_n - 1] > vdl) {
    size_t tx = wr->cm_txi[--wr->cm_n];
    if (w->txs[tx].decided_by == wr->i && !w->txs[tx].foreign)
      violation(w, "writer %d: its recovery (epoch %llu, vdl %llu) truncated xid %llu, whose "
                "frame the binlog had synced, and cut the frame (CM2: a consumer may have "
                "read it; it was prepared whole, so it must roll forward)", wr->i,
                (unsigned long long)wr->epoch, (unsigned long long)vdl,
                (unsigned long long)wr->cm_xid[wr->cm_n]);
    w->txs[tx].framed = 0;
    w->res->cm_cut++;
    world_trace(w, "writer %d: binlog frame of xid %llu above vdl %llu cut", wr->i,
                (unsigned long long)wr->cm_xid[wr->cm_n], (unsigned long long)vdl);
  }
  uint64_t orphans = 0;
  for (size_t k = 0; k < wr->cm_n; k++) {
    const struct txrec *t = &w->txs[wr->cm_txi[k]];
    if (t->cpl != wr->cm_xid[k])
      violation(w, "writer %d: the binlog frame of xid %llu names commit %llu", wr->i,
                (unsigned long long)wr->cm_xid[k], (unsigned long long)t->cpl);
    if (t->state != TX_TRUNCATED)
      continue;
    if (t->decided_by == wr->i && !t->foreign)
      violation(w, "writer %d: its binlog holds xid %llu, a transaction its own recovery "
                "(epoch %llu, vdl %llu) truncated (CM2: a commit that never happened)",
                wr->i, (unsigned long long)wr->cm_xid[k], (unsigned long long)wr->epoch,
                (unsigned long long)vdl);
    else
      orphans++;
  }
  if (orphans > wr->cm_orphans) {
    w->res->cm_orphans += orphans - wr->cm_orphans;
    wr->cm_orphans = orphans;
  }
}

/* Writer wr begins a recovery: every transaction of another host still
 * undecided may be truncated by it, whatever becomes of the recovery
 * (its round 2 truncations stand): CM2 no longer holds that host to it. */
void cm_recovery_starts(struct simwriter *wr)
{
  struct world *w = wr->w;
  if (!w->o.community)
    return;
  for (size_t i = 0; i < w->ntxs; i++)
    if (w->txs[i].writer != wr->i && w->txs[i].state == TX_PENDING)
      w->txs[i].foreign = 1;
}

void cm_crashed(struct simwriter *wr)
{
  wr->cm_state = CM_NONE;
  wr->cm_rf_drawn = 0;
  wr->cm_rf_crash = 0;
}

void cm_free(struct world *w)
{
  for (int i = 0; i < SIM_WRITERS; i++) {
    free(w->wr[i].cm_xid);
    free(w->wr[i].cm_txi);
  }
}
