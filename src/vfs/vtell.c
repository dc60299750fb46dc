/*
 * vtell.c: what the writer tells the segments of PGs it is not writing
 * (vcore_tick, every VOL_TICK_MS): the PGMRPL, so that their GC can go on
 * after the writes stopped, and with the backup on the VDL, so that their
 * backup keeps up with the volume's (rule V). A PG being written hears
 * both with its Appends and is never sent these.
 *
 * No I/O of its own, as vcore.c: it sends through vcore_send_append.
 */
#include "param.h"
#include "vfs/volume_int.h"

/* The PGMRPL reaches storage with every Append (vcore_send_append), so a PG
 * written steadily hears each new one at once. One that stopped being
 * written would not: its segments keep the PGMRPL of its last Append,
 * below its own last records, and a reader that ended after the writes
 * stopped (lab 9, by hand: the writer's loop was over before the student
 * typed COMMIT) would hold their GC until the next write, however long.
 * So every MRPL_TELL_MS, if the PGMRPL moved (or a PG was left for
 * later), each PG with nothing pending whose segments last heard a tail
 * below the one they could now free to, and that sent nothing for
 * MRPL_TELL_MS, gets an Append with no records at every segment. A PG
 * being written is never sent one (its Appends carry it), so a busy
 * volume pays one comparison a PG a second; an idle one that was written
 * pays six small messages a PG, once. Only a writer (a replica's volume
 * writes nothing); not while recovering, fenced or closing. */
void vtell_pgmrpl(struct volume *v)
{
  unsigned long long now = io_now(v->io);
  if (v->reader || !v->opened || v->fenced || v->closing || now < v->mrpl_at)
    return;
  v->mrpl_at = now + MRPL_TELL_MS;
  uint64_t p = vol_pgmrpl(v);
  if (p == v->mrpl_passed && !v->mrpl_again)
    return;
  v->mrpl_passed = p;
  v->mrpl_again = 0;
  for (size_t i = 0; i < v->npgs; i++) {
    struct pgout *g = &v->pgs[i];
    if (!g->told)
      continue;                 /* never written by this writer: nothing new to free */
    uint64_t tail = pg_need(g, p);
    if (tail > p)
      tail = pg_freed_at(g, p);
    if (tail > p || tail <= g->told_tail)
      continue;                 /* unknown, or told already */
    if (g->head < g->n || now - g->told_at < MRPL_TELL_MS) {
      v->mrpl_again = 1;        /* being written: its Appends tell it, or a later pass */
      continue;
    }
    for (int s = 0; s < NSLOTS; s++)
      vcore_send_append(v, (uint32_t)i, s, 0, 0);   /* (no-op for an absent slot) */
  }
}

/* Rule V: the backup of an idle PG keeps up with the volume's VDL.
 * A segment stages its PG's log only up to the VDL it heard with the PG's
 * last record at or below it (node/nbackup.c: nothing above is safe from
 * truncation), and it hears one only with an Append. A PG that stopped
 * being written (or that this writer never wrote) would keep an old VDL,
 * and a restore needs every PG to reach its point (restore.h): the
 * backup of the whole volume would then stop at that VDL, however far
 * the other PGs' commits went, for as long as the PG stayed idle (the
 * simulator, --faults backup: a restore could not reach the last commits
 * of a run). So every MRPL_TELL_MS, each PG whose segments back up, with
 * nothing pending above the VDL (durable records may wait to be freed
 * until the VDL moves again: vcore_advance) and nothing sent for
 * MRPL_TELL_MS, gets an Append with no records (the VDL, and the PG's
 * last record at or below it) at each segment that has not acknowledged
 * one of the writer's VDL: again until it does (a beacon lost on the way
 * is not resent otherwise), and again after its node went down (a
 * restarted node forgets the VDL it heard). A PG being written is never
 * sent one (its Appends carry the VDL). Without backup no segment says it
 * backs up, and nothing is sent. */
void vtell_vdl(struct volume *v)
{
  unsigned long long now = io_now(v->io);
  if (v->reader || !v->opened || v->fenced || v->closing || now < v->vdl_tell_at)
    return;
  v->vdl_tell_at = now + MRPL_TELL_MS;
  for (size_t i = 0; i < v->npgs; i++) {
    struct pgout *g = &v->pgs[i];
    if (!g->backed_up || now - g->told_at < MRPL_TELL_MS ||
        (g->head < g->n && g->recs[g->n - 1]->r.lsn > v->q.vdl))
      continue;
    for (int s = 0; s < NSLOTS; s++)
      if (g->node[s] >= 0 && g->heard_vdl[s] < v->q.vdl && now >= g->retry_at[s])
        vcore_send_append(v, (uint32_t)i, s, 0, 0);   /* (a refusing one: at its pace) */
  }
}

/* Rule BV: a binlog consumer reads only what the binlog PG's segments
 * know to be durable, as the writer names it (node/nbinlog.c D1), and a
 * segment hears that only with an Append. The VDL that makes a commit
 * durable is carried by the next commit's Appends; after the last one
 * before a pause, nothing would carry it, and the last commit would not
 * reach consumers until the writer wrote again. So, each tick, a binlog
 * PG with nothing pending above the VDL and nothing sent this tick gets an
 * Append with no records (the VDL and the PG's tail at it) at each segment
 * that has not acknowledged this VDL yet: a commit reaches consumers
 * within a tick or two of becoming durable, and a writer under load,
 * whose Appends carry the VDL anyway, sends none of these. */
void vtell_binlog(struct volume *v)
{
  if (!v->has_binlog || v->reader || !v->opened || v->fenced || v->closing)
    return;
  unsigned long long now = io_now(v->io);
  struct pgout *g = &v->pgs[BINLOG_PG];
  if (now - g->told_at < VOL_TICK_MS ||
      (g->head < g->n && g->recs[g->n - 1]->r.lsn > v->q.vdl))
    return;
  for (int s = 0; s < NSLOTS; s++)
    if (g->node[s] >= 0 && g->heard_vdl[s] < v->q.vdl && now >= g->retry_at[s])
      vcore_send_append(v, BINLOG_PG, s, 0, 0);
}
