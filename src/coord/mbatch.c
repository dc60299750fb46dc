/*
 * mbatch.c: a batch of membership steps (member.c), and how each step's
 * new PG is stored.
 *
 * A repair moves every segment a lost node hosted in one tick: ~730 steps
 * when a node of nine holds its share of 1,100 PGs, and as many finishes
 * once its spare has caught up. Each step is a new membership epoch of one
 * PG (member.h M4-M6) that must be durable before anyone hears of it.
 *
 * Done one by one, each step was one synced metadata commit, and an Assign
 * to each node of its PG, before the next: such a repair kept the
 * coordinator from answering anyone (registrations, status) for ~30 s, and
 * nodes taken for lost moved on (crash campaign, point 80). Then each step
 * was its own unsynced commit, synced once at the batch's end; but each
 * commit still packed, wrote and unpacked the whole volume, so a batch cost
 * steps x PGs: 4.6 s of CPU for 734 steps of 1,100 PGs, and as much again
 * in disk writes (the campaign's point ~220: `auralog status` unanswered
 * for 15 s).
 *
 * Now, in a batch:
 *   mb_store_pg     puts the step's new PG in the volume in memory (its
 *                   cost is one PG's) and marks the volume to store;
 *   mb_tell         queues who to send an Assign and the journal event;
 *   mb_batch_end    stores each marked volume once, syncs once, and only
 *                   then sends each node its Assign once and journals the
 *                   steps in order.
 * Outside a batch (batch_begin failed) each step is stored at once, and
 * told at once, as before.
 *
 * Invariant (M4-M6: durable before anyone hears of it): no Assign, journal
 * event or probe answer leaves the coordinator in a batch (member_tick
 * runs on the loop: nothing else runs until mb_batch_end), and
 * mb_batch_end tells no one unless the whole batch was stored and synced.
 * If that fails, memory holds steps the disk may not: the coordinator
 * stops (io->fatal), and a restart loads what is durable. A crash inside
 * the batch loses steps no one heard of.
 */
#include <stdlib.h>
#include <string.h>

#include "coord/member_int.h"
#include "lib/log.h"
#include "param.h"

/* Stored at mb_batch_end: remember volume vid. */
static void mark(struct mstate *ms, uint64_t vid)
{
  for (size_t i = 0; i < ms->nstore; i++)
    if (ms->store[i] == vid)
      return;
  ms->store = realloc(ms->store, (ms->nstore + 1) * sizeof *ms->store);
  ms->store[ms->nstore++] = vid;
}

int mb_store_pg(struct coord *co, size_t vi, const Auralog__Pg *pgc, uint64_t mseq, char *why,
                size_t whylen)
{
  Auralog__Volume *vol = co->vols[vi];
  uint32_t pgno = pgc->pg;
  /* A data PG's place is pgs[pgno]; the binlog PG's, Volume.binlog
   * (member.c mb_pg: change() found it there). */
  int bl = pgno == BINLOG_PG;
  if (!co->ms->batch) {
    Auralog__Pg **pgs = malloc((vol->n_pgs + 1) * sizeof *pgs);
    memcpy(pgs, vol->pgs, vol->n_pgs * sizeof *pgs);
    Auralog__Volume tmp = *vol;
    if (bl)
      tmp.binlog = (Auralog__Pg *)pgc;
    else
      pgs[pgno] = (Auralog__Pg *)pgc;
    tmp.pgs = pgs;
    tmp.mseq = mseq;
    Auralog__Volume *nv = coord_vol_store(co, &co->vols[vi], &tmp, why, whylen);
    free(pgs);
    return nv ? 0 : -1;
  }
  /* A copy of the PG owned as unpack owns it (every field its own
   * allocation), so that the volume's free_unpacked frees it in turn.
   * pgc points into the old PG: it is packed before that is freed. */
  size_t len = auralog__pg__get_packed_size(pgc);
  uint8_t *buf = malloc(len ? len : 1);
  Auralog__Pg *copy = buf ? (auralog__pg__pack(pgc, buf), auralog__pg__unpack(NULL, len, buf))
                          : NULL;
  free(buf);
  if (copy == NULL) {
    snprintf(why, whylen, "out of memory while changing pg %u of volume %s", pgno, vol->name);
    return -1;
  }
  Auralog__Pg **at = bl ? &vol->binlog : &vol->pgs[pgno];
  auralog__pg__free_unpacked(*at, NULL);
  *at = copy;
  vol->mseq = mseq;
  mark(co->ms, vol->id);
  return 0;
}

/* Tell the nodes in who their new Assign, and the journal the step: now,
 * or, in a batch, once the batch is durable (mb_batch_end). */
void mb_tell(struct coord *co, char (*who)[NAME_MAX_LEN + 1], size_t nwho, const char *ev)
{
  struct mstate *ms = co->ms;
  if (!ms->batch) {
    for (size_t i = 0; i < nwho; i++) {
      struct cnode *n = coord_node_find(co, who[i]);
      if (n)
        coord_send_assign(co, n, 0);
    }
    jn_event(co, "member", "%s", ev);
    return;
  }
  for (size_t i = 0; i < nwho; i++) {
    size_t k = 0;
    while (k < ms->ntell && strcmp(ms->tell[k], who[i]) != 0)
      k++;
    if (k == ms->ntell) {
      ms->tell = realloc(ms->tell, (ms->ntell + 1) * sizeof *ms->tell);
      memcpy(ms->tell[ms->ntell], who[i], sizeof ms->tell[0]);
      ms->tell[ms->ntell++][NAME_MAX_LEN] = 0;
    }
  }
  ms->events = realloc(ms->events, (ms->nevents + 1) * sizeof *ms->events);
  ms->events[ms->nevents++] = strdup(ev);
}

void mb_batch_begin(struct coord *co)
{
  char why[256];
  if (meta_batch(&co->meta, 1, why, sizeof why) != 0) {
    logwarn_rl("membership steps one by one: %s", why);
    return;
  }
  co->ms->batch = 1;
}

/* The volumes the batch changed, each stored once (unsynced, as the meta
 * is batched), then the sync that ends the batch. 0, or -1 and why. */
static int store_marked(struct coord *co, char *why, size_t whylen)
{
  struct mstate *ms = co->ms;
  int rc = 0;
  for (size_t i = 0; i < ms->nstore && rc == 0; i++) {
    size_t vi = 0;
    while (vi < co->nvols && co->vols[vi]->id != ms->store[i])
      vi++;
    if (vi < co->nvols && coord_vol_store(co, &co->vols[vi], co->vols[vi], why, whylen) == NULL)
      rc = -1;
  }
  free(ms->store);
  ms->store = NULL;
  ms->nstore = 0;
  char why2[256];
  if (meta_batch(&co->meta, 0, why2, sizeof why2) != 0 && rc == 0) {
    snprintf(why, whylen, "%s", why2);
    rc = -1;
  }
  return rc;
}

void mb_batch_end(struct coord *co)
{
  struct mstate *ms = co->ms;
  if (!ms->batch)
    return;
  ms->batch = 0;
  char why[256];
  if (store_marked(co, why, sizeof why) != 0) {
    /* Memory holds steps the disk may not: no one was told of them, and
     * only a restart (which loads what is durable) can go on. */
    snprintf(why + strlen(why), sizeof why - strlen(why), "; the coordinator must restart");
    logwarn("membership: %s", why);
    if (co->io->fatal)
      co->io->fatal(co->io->ctx, why);
  } else {
    for (size_t i = 0; i < ms->ntell; i++) {
      struct cnode *n = coord_node_find(co, ms->tell[i]);
      if (n)
        coord_send_assign(co, n, 0);
    }
    for (size_t i = 0; i < ms->nevents; i++)
      jn_event(co, "member", "%s", ms->events[i]);
  }
  for (size_t i = 0; i < ms->nevents; i++)
    free(ms->events[i]);
  free(ms->events);
  free(ms->tell);
  ms->events = NULL;
  ms->tell = NULL;
  ms->nevents = ms->ntell = 0;
}
