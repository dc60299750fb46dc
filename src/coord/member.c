/*
 * member.c: the coordinator's side of PG membership changes and repair
 * (paper §2.2-2.3; Verbitski et al. 2018; rules M1-M7 in member.h; the
 * interface in coord/memberc.h).
 *
 * A change moves one position of one PG: begin (a next segment on a spare
 * of the same AZ), then finish (it becomes current, the old one leaves),
 * or regrow / abort. Every step is a new membership epoch of the PG, the
 * volume's mseq + 1, stored before any node or writer hears of it; then
 * every node concerned gets its whole Assign: the PG's nodes before and
 * after the step, so the one that left learns it left (M6).
 *
 * Who asks for changes:
 *   repair (M7)    member_tick: a node silent for REPAIR_AFTER_MS has each
 *                  of its segments moved (a current one begun on a spare
 *                  unless its position moves already; a next one regrown,
 *                  or given up if no spare is free); every PG at once
 *   drain/replace  member_on_cmd: the operator's `auralog node drain ID`
 *                  or `replace ID [--to ID]`; the node is "draining" (it
 *                  takes no new segment) until it hosts none: "retired"
 *   finish (M4)    member_tick: when the current writer reported using a
 *                  mepoch that includes the next segment since its VCL
 *                  was X, and that segment's SCL (its node's heartbeat)
 *                  reached X
 * The old segment stays current until the finish: a change never stalls
 * writes or reads (M1, M3).
 *
 * Every PG of a volume, its binlog PG included (Volume.binlog, numbered
 * BINLOG_PG, coord/cbinlog.c), moves by the same steps and rules: a step
 * finds its PG by number with mb_pg, every walk over PGs goes through
 * coord_vol_npgs_all / coord_vol_pg_at, and a lost node's binlog segment
 * is repaired, a drained node's moved, as any other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "coord/member_int.h"
#include "coord/placement.h"
#include "lib/log.h"
#include "member.h"
#include "param.h"

enum mop { OP_BEGIN, OP_FINISH, OP_REGROW, OP_ABORT };
static const char *const op_names[] = {"begin", "finish", "regrow", "abort"};

void member_init(struct coord *co)
{
  if (co->ms == NULL)
    co->ms = calloc(1, sizeof *co->ms);
  co->ms->started = io_now(co->io);
  co->ms->kick = 1;
}

void member_free(struct coord *co)
{
  if (co->ms == NULL)
    return;
  free(co->ms->mv);
  free(co->ms->ad);
  free(co->ms->lost);
  free(co->ms->dr);
  free(co->ms->store);
  free(co->ms);
  co->ms = NULL;
}

unsigned long long member_repair_after(const struct coord *co)
{
  if (co->repair_off)
    return 0;
  return co->repair_after_ms ? co->repair_after_ms : REPAIR_AFTER_MS;
}

/* ---- lookups --------------------------------------------------------------- */

const Auralog__Pg *mb_pg(const Auralog__Volume *vol, uint32_t pgno)
{
  if (pgno < vol->n_pgs)
    return vol->pgs[pgno]->pg == pgno ? vol->pgs[pgno] : NULL;
  if (pgno == BINLOG_PG && vol->binlog && vol->binlog->pg == BINLOG_PG)
    return vol->binlog;
  return NULL;
}

/* The index of position pos's next segment in pg, or -1. */
int mb_next_of(const Auralog__Pg *pg, uint32_t pos)
{
  for (size_t j = NCOPIES; j < pg->n_segments; j++)
    if (pg->segments[j]->pos == pos)
      return (int)j;
  return -1;
}

/* Segments (current or next) node id hosts, in every volume; *moving: of
 * its current ones, those whose position has a next. */
uint32_t mb_hosted(const struct coord *co, const char *id, uint32_t *moving)
{
  uint32_t n = 0, m = 0;
  for (size_t v = 0; v < co->nvols; v++)
    for (size_t p = 0; p < coord_vol_npgs_all(co->vols[v]); p++) {
      const Auralog__Pg *pg = coord_vol_pg_at(co->vols[v], p);
      for (size_t s = 0; s < pg->n_segments; s++)
        if (strcmp(pg->segments[s]->node, id) == 0) {
          n++;
          m += s < NCOPIES && mb_next_of(pg, (uint32_t)s) >= 0;
        }
    }
  if (moving)
    *moving = m;
  return n;
}

struct mmove *mb_mv_find(struct mstate *ms, uint64_t vol, uint32_t pg, uint32_t pos)
{
  for (size_t i = 0; i < ms->nmv; i++)
    if (ms->mv[i].vol == vol && ms->mv[i].pg == pg && ms->mv[i].pos == pos)
      return &ms->mv[i];
  return NULL;
}

static void mv_put(struct mstate *ms, uint64_t vol, uint32_t pg, uint32_t pos,
                   const char *kind, unsigned long long at)
{
  struct mmove *m = mb_mv_find(ms, vol, pg, pos);
  if (m == NULL) {
    ms->mv = realloc(ms->mv, (ms->nmv + 1) * sizeof *ms->mv);
    m = &ms->mv[ms->nmv++];
  }
  m->vol = vol;
  m->pg = pg;
  m->pos = pos;
  snprintf(m->kind, sizeof m->kind, "%s", kind);
  m->at = at;
}

static void mv_del(struct mstate *ms, uint64_t vol, uint32_t pg, uint32_t pos)
{
  struct mmove *m = mb_mv_find(ms, vol, pg, pos);
  if (m)
    *m = ms->mv[--ms->nmv];
}

struct madopt *mb_ad_find(struct mstate *ms, uint64_t vol, uint32_t pg)
{
  for (size_t i = 0; i < ms->nad; i++)
    if (ms->ad[i].vol == vol && ms->ad[i].pg == pg)
      return &ms->ad[i];
  return NULL;
}

struct mdrain *mb_dr_find(struct mstate *ms, const char *id)
{
  for (size_t i = 0; i < ms->ndr; i++)
    if (strcmp(ms->dr[i].node, id) == 0)
      return &ms->dr[i];
  return NULL;
}

int mb_node_out(const struct cnode *n)
{
  return n->info->state[0] != 0;      /* draining or retired */
}

/* The nodes as placement sees them, each with the segments it hosts
 * (current and next): pn[i] is co->nodes[i]. */
struct pnode *mb_pnodes(const struct coord *co)
{
  struct pnode *pn = calloc(co->nnodes + 1, sizeof *pn);
  for (size_t i = 0; i < co->nnodes; i++) {
    pn[i].id = co->nodes[i]->info->id;
    pn[i].az = co->nodes[i]->info->az[0];
    pn[i].up = co->nodes[i]->info->up;
    pn[i].out = mb_node_out(co->nodes[i]);
  }
  for (size_t v = 0; v < co->nvols; v++)
    for (size_t p = 0; p < coord_vol_npgs_all(co->vols[v]); p++) {
      const Auralog__Pg *pg = coord_vol_pg_at(co->vols[v], p);
      for (size_t s = 0; s < pg->n_segments; s++)
        for (size_t i = 0; i < co->nnodes; i++)
          if (strcmp(pg->segments[s]->node, pn[i].id) == 0) {
            pn[i].nsegs++;
            break;
          }
    }
  return pn;
}

/* ---- the steps ----------------------------------------------------------- */

static void add_who(char who[][NAME_MAX_LEN + 1], size_t *n, const char *id)
{
  for (size_t i = 0; i < *n; i++)
    if (strcmp(who[i], id) == 0)
      return;
  snprintf(who[(*n)++], NAME_MAX_LEN + 1, "%s", id);
}

/* One step on position pos of PG pgno of co->vols[vi] (see memberc.h). */
static int change(struct coord *co, size_t vi, uint32_t pgno, uint32_t pos, enum mop op,
                  const char *to, char *why, size_t whylen)
{
  if (vi >= co->nvols) {
    snprintf(why, whylen, "no such volume");
    return -1;
  }
  const Auralog__Volume *vol = co->vols[vi];
  const Auralog__Pg *old = mb_pg(vol, pgno);   /* a data PG, or the binlog PG */
  if (old == NULL || pos >= NCOPIES || old->n_segments < NCOPIES) {
    snprintf(why, whylen, "volume %s has no position %u of pg %u", vol->name, pos, pgno);
    return -1;
  }
  const Auralog__Segment *cur[NCOPIES], *nxt[NCOPIES] = {0};
  for (int p = 0; p < NCOPIES; p++)
    cur[p] = old->segments[p];
  for (size_t j = NCOPIES; j < old->n_segments; j++)
    if (old->segments[j]->pos < NCOPIES)
      nxt[old->segments[j]->pos] = old->segments[j];
  struct cnode *tn = NULL;
  if (op == OP_BEGIN || op == OP_REGROW) {
    if ((tn = coord_node_find(co, to)) == NULL) {
      snprintf(why, whylen, "no node %s", to);
      return -1;
    }
    if (strcmp(tn->info->az, cur[pos]->az) != 0) {
      snprintf(why, whylen, "node %s is in AZ %s; position %u of pg %u is in AZ %s", to,
               tn->info->az, pos, pgno, cur[pos]->az);
      return -1;
    }
    for (size_t s = 0; s < old->n_segments; s++)
      if (strcmp(old->segments[s]->node, to) == 0) {
        snprintf(why, whylen, "node %s already hosts a segment of pg %u", to, pgno);
        return -1;
      }
  }
  if (op == OP_BEGIN && nxt[pos]) {
    snprintf(why, whylen, "position %u of pg %u moves already (to %s)", pos, pgno,
             nxt[pos]->node);
    return -1;
  }
  if (op != OP_BEGIN && nxt[pos] == NULL) {
    snprintf(why, whylen, "position %u of pg %u is not moving", pos, pgno);
    return -1;
  }
  uint64_t m = vol->mseq + 1, min = old->mepoch_min;
  Auralog__Segment fresh, segc[NSLOTS], *segp[NSLOTS];
  char who[2 * NSLOTS][NAME_MAX_LEN + 1], from[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1];
  size_t nwho = 0, k = 0;
  uint64_t vid = vol->id;
  snprintf(name, sizeof name, "%s", vol->name);
  snprintf(from, sizeof from, "%s", nxt[pos] && op != OP_BEGIN ? nxt[pos]->node : cur[pos]->node);
  for (size_t s = 0; s < old->n_segments; s++)
    add_who(who, &nwho, old->segments[s]->node);
  switch (op) {
  case OP_BEGIN:
  case OP_REGROW:
    fresh = *cur[pos];
    fresh.node = tn->info->id;
    fresh.az = tn->info->az;
    fresh.addr = tn->info->addr;
    fresh.since = m;           /* M4, M5: the mepoch it came in with */
    nxt[pos] = &fresh;
    add_who(who, &nwho, to);
    break;
  case OP_FINISH:
    /* M5: a writer on a mepoch before the one G came in with counts F
     * alone at this position; F is leaving, so it is refused from now. */
    if (nxt[pos]->since > min)
      min = nxt[pos]->since;
    cur[pos] = nxt[pos];
    nxt[pos] = NULL;
    break;
  case OP_ABORT:
    nxt[pos] = NULL;
    break;
  }
  for (int p = 0; p < NCOPIES; p++, k++) {
    segc[k] = *cur[p];
    segc[k].pos = (uint32_t)p;
    segc[k].next = 0;
    segp[k] = &segc[k];
  }
  for (int p = 0; p < NCOPIES; p++)
    if (nxt[p]) {
      segc[k] = *nxt[p];
      segc[k].pos = (uint32_t)p;
      segc[k].next = 1;
      segp[k] = &segc[k];
      k++;
    }
  for (size_t s = 0; s < k; s++) {
    segc[s].mepoch = m;        /* what an Assign tells each node of its PG */
    segc[s].mepoch_min = min;
  }
  Auralog__Pg pgc = *old;
  pgc.segments = segp;
  pgc.n_segments = k;
  pgc.mepoch = m;
  pgc.mepoch_min = min;
  if (wire_check_pg(&pgc, why, whylen) != ERR_NONE)
    return -1;
  /* Durable before anyone hears of it: a mepoch handed out is never
   * handed out again, and a restart keeps the transition (in a batch, at
   * its end: mbatch.c). */
  if (mb_store_pg(co, vi, &pgc, m, why, whylen) != 0)
    return -1;
  if (tn)                      /* its SCL counts from its next heartbeat (M4 b) */
    coord_forget_stat(tn, vid, pgno);
  loginfo("volume %s pg %u position %u: %s %s%s%s (mepoch %llu, mepoch_min %llu)", name, pgno,
          pos, op_names[op], from, tn ? " -> " : "", tn ? to : "", (unsigned long long)m,
          (unsigned long long)min);
  char ev[600];
  snprintf(ev, sizeof ev, "\"volume\":\"%s\",\"pg\":%u,\"pos\":%u,\"step\":\"%s\",\"from\":\"%s\","
           "\"to\":\"%s\",\"mepoch\":%llu,\"mepoch_min\":%llu", name, pgno, pos, op_names[op],
           from, tn ? to : "", (unsigned long long)m, (unsigned long long)min);
  mb_tell(co, who, nwho, ev);
  return 0;
}

int member_begin(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, const char *to,
                 const char *kind, char *why, size_t whylen)
{
  if (change(co, vi, pg, pos, OP_BEGIN, to, why, whylen) != 0)
    return -1;
  mv_put(co->ms, co->vols[vi]->id, pg, pos, kind, io_now(co->io));
  return 0;
}

int member_finish(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, char *why,
                  size_t whylen)
{
  if (change(co, vi, pg, pos, OP_FINISH, NULL, why, whylen) != 0)
    return -1;
  mv_del(co->ms, co->vols[vi]->id, pg, pos);
  co->ms->kick = 1;            /* a node may host nothing now; a drain may go on */
  return 0;
}

int member_regrow(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, const char *to,
                  char *why, size_t whylen)
{
  return change(co, vi, pg, pos, OP_REGROW, to, why, whylen);
}

int member_abort(struct coord *co, size_t vi, uint32_t pg, uint32_t pos, char *why,
                 size_t whylen)
{
  if (change(co, vi, pg, pos, OP_ABORT, NULL, why, whylen) != 0)
    return -1;
  mv_del(co->ms, co->vols[vi]->id, pg, pos);
  return 0;
}

/* ---- moving a node's segments --------------------------------------------- */

/* Move every segment node id hosts: a current one begun on a spare (to,
 * if named) unless its position moves already, a next one regrown (or,
 * for a repair with no spare free, given up). pn: mb_pnodes(co), kept up to
 * date. The segments begun or regrown; *stuck: those with no spare, the
 * first reason in why. */
static int move_off(struct coord *co, struct pnode *pn, const char *id, const char *kind,
                    const char *to, int *stuck, char *why, size_t whylen)
{
  int done = 0;
  char err[256];
  for (size_t vi = 0; vi < co->nvols; vi++)
    for (size_t p = 0; p < coord_vol_npgs_all(co->vols[vi]); p++) {
      const Auralog__Pg *pg = coord_vol_pg_at(co->vols[vi], p);
      size_t at = pg->n_segments;
      for (size_t s = 0; s < pg->n_segments; s++)
        if (strcmp(pg->segments[s]->node, id) == 0)
          at = s;
      if (at == pg->n_segments || pg->n_segments < NCOPIES)
        continue;
      uint32_t pos = at < NCOPIES ? (uint32_t)at : pg->segments[at]->pos, pgno = pg->pg;
      if (at < NCOPIES && mb_next_of(pg, pos) >= 0)
        continue;              /* its position moves already: that finish takes it out */
      const char *taken[NSLOTS];
      for (size_t s = 0; s < pg->n_segments; s++)
        taken[s] = pg->segments[s]->node;
      size_t sp = co->nnodes;
      if (to && to[0]) {
        for (size_t i = 0; i < co->nnodes; i++)
          if (strcmp(pn[i].id, to) == 0)
            sp = i;
      } else {
        sp = place_spare(pn, co->nnodes, pg->segments[at]->az[0], taken, pg->n_segments);
      }
      if (sp == co->nnodes) {
        if ((*stuck)++ == 0)
          snprintf(why, whylen, "no spare in AZ %s for pg %u of volume %s (each node there "
                   "is down, draining or hosts one of its segments)", pg->segments[at]->az,
                   pgno, co->vols[vi]->name);
        if (at >= NCOPIES && strcmp(kind, "repair") == 0 &&
            member_abort(co, vi, pgno, pos, err, sizeof err) != 0)
          logwarn_rl("volume %s pg %u: %s", co->vols[vi]->name, pgno, err);
        continue;
      }
      int rc = at < NCOPIES ? member_begin(co, vi, pgno, pos, pn[sp].id, kind, err, sizeof err)
                            : member_regrow(co, vi, pgno, pos, pn[sp].id, err, sizeof err);
      if (rc == 0) {
        pn[sp].nsegs++;
        done++;
      } else if ((*stuck)++ == 0) {
        snprintf(why, whylen, "%s", err);
      }
    }
  return done;
}

void mb_set_state(struct coord *co, struct cnode *n, const char *state)
{
  char why[256];
  Auralog__NodeInfo info = AURALOG__NODE_INFO__INIT, tmp = *n->info;
  info.id = n->info->id;
  info.az = n->info->az;
  info.addr = n->info->addr;
  info.id_pk = n->info->id_pk;
  info.state = (char *)state;
  if (meta_put_node(&co->meta, &info, why, sizeof why) != 0) {
    logwarn_rl("node %s: %s not stored: %s", n->info->id, state, why);
    return;
  }
  tmp.state = (char *)state;
  size_t len = auralog__node_info__get_packed_size(&tmp);
  uint8_t *buf = malloc(len + 1);
  auralog__node_info__pack(&tmp, buf);
  Auralog__NodeInfo *copy = auralog__node_info__unpack(NULL, len, buf);
  free(buf);
  auralog__node_info__free_unpacked(n->info, NULL);
  n->info = copy;
  loginfo("node %s (AZ %s): %s", copy->id, copy->az, state[0] ? state : "in service");
  jn_event(co, "nodestate", "\"node\":\"%s\",\"state\":\"%s\"", copy->id, state);
}

/* ---- the finish rule (M4) ------------------------------------------------- */

static void finish_ready(struct coord *co)
{
  char why[256];
  for (size_t vi = 0; vi < co->nvols; vi++)
    for (size_t p = 0; p < coord_vol_npgs_all(co->vols[vi]); p++) {
      const Auralog__Volume *v = co->vols[vi];
      const Auralog__Pg *pg = coord_vol_pg_at(v, p);
      if (pg->n_segments <= NCOPIES)
        continue;
      const struct madopt *ad = mb_ad_find(co->ms, v->id, pg->pg);
      if (ad == NULL || ad->epoch != v->epoch)
        continue;              /* (a) only the current writer's report counts */
      for (size_t j = NCOPIES; j < pg->n_segments; j++) {
        const Auralog__Segment *g = pg->segments[j];
        if (ad->mepoch < g->since)
          continue;            /* (a) it does not yet count G */
        struct cnode *n = coord_node_find(co, g->node);
        const Auralog__SegStat *ss = n && n->info->up ? coord_seg_stat(n, v->id, pg->pg) : NULL;
        if (ss == NULL || (ss->scl < ad->at && !PLANTED(BUG_FINISH_EARLY)))
          continue;            /* (b) G does not yet hold what F alone counted */
        if (member_finish(co, vi, pg->pg, g->pos, why, sizeof why) != 0)
          logwarn_rl("volume %s pg %u: %s", v->name, pg->pg, why);
        else
          p--;                 /* the same PG again: another position may be ready */
        break;
      }
    }
}

/* ---- the tick ------------------------------------------------------------- */

static void lost_note(struct mstate *ms, const char *id, unsigned long long since)
{
  for (size_t i = 0; i < ms->nlost; i++)
    if (strcmp(ms->lost[i].node, id) == 0)
      return;
  ms->lost = realloc(ms->lost, (ms->nlost + 1) * sizeof *ms->lost);
  snprintf(ms->lost[ms->nlost].node, sizeof ms->lost[0].node, "%s", id);
  ms->lost[ms->nlost++].since = since;
}

/* A node declared lost that registers again before its repair is done
 * was not lost: it restarted, or was cut off for a while (the crash
 * campaign's point 49 stopped one for 5.7 s, past REPAIR_AFTER_MS). The
 * moves begun for it that have not finished are aborted (its current
 * segments stay, and catch up by gossip), rather than filling a spare
 * with all it held: until a next segment fills, its position counts only
 * with it (M1, M2), so the moves also made each PG one position short of
 * a write quorum whenever an AZ was down (point 50: no commit for 30 s).
 * Safe as any abort (member.h M1): every record acknowledged meanwhile
 * is on the current segment too. Moves that finished stay finished. */
static void lost_back(struct coord *co)
{
  struct mstate *ms = co->ms;
  for (size_t i = 0; i < ms->nlost; i++) {
    struct cnode *n = coord_node_find(co, ms->lost[i].node);
    if (n == NULL || !n->info->up || mb_node_out(n))
      continue;
    int aborted = 0;
    char why[256];
    for (size_t k = ms->nmv; k-- > 0;) {
      const struct mmove *m = &ms->mv[k];
      if (strcmp(m->kind, "repair") != 0)
        continue;
      size_t vi = 0;
      while (vi < co->nvols && co->vols[vi]->id != m->vol)
        vi++;
      const Auralog__Pg *pg = vi < co->nvols ? mb_pg(co->vols[vi], m->pg) : NULL;
      if (pg == NULL || m->pos >= NCOPIES)
        continue;
      if (m->pos >= pg->n_segments || strcmp(pg->segments[m->pos]->node, n->info->id) != 0)
        continue;
      if (member_abort(co, vi, m->pg, m->pos, why, sizeof why) == 0)
        aborted++;
      else
        logwarn_rl("node %s is back: a move of its segment could not be aborted: %s",
                   n->info->id, why);
    }
    if (aborted)
      loginfo("node %s is back before its repair finished: %d move%s aborted, its "
              "segments stay", n->info->id, aborted, aborted == 1 ? "" : "s");
  }
}

/* A lost node that hosts nothing any more is repaired: its time to repair
 * (M7: from its last sign of life). One that came back with nothing of it
 * moving is forgotten, unrepaired. */
static void lost_tick(struct coord *co, unsigned long long now)
{
  struct mstate *ms = co->ms;
  for (size_t i = 0; i < ms->nlost; i++) {
    struct cnode *n = coord_node_find(co, ms->lost[i].node);
    uint32_t moving = 0, h = n ? mb_hosted(co, n->info->id, &moving) : 0;
    if (h == 0) {
      uint64_t t = now - ms->lost[i].since;
      if (ms->nmttr == MTTR_SHOWN)
        memmove(&ms->mttr[0], &ms->mttr[1], (MTTR_SHOWN - 1) * sizeof ms->mttr[0]);
      else
        ms->nmttr++;
      ms->mttr[ms->nmttr - 1] = t;
      loginfo("node %s repaired: every segment it hosted moved, %llu ms after it was lost",
              ms->lost[i].node, (unsigned long long)t);
      jn_event(co, "repaired", "\"node\":\"%s\",\"mttr_ms\":%llu", ms->lost[i].node,
               (unsigned long long)t);
    } else if (!(n->info->up && moving == 0)) {
      continue;
    }
    ms->lost[i--] = ms->lost[--ms->nlost];
  }
}

/* Moves found in the volumes that this coordinator did not begin (it
 * restarted): their age counts from now. */
static void moves_adopt(struct coord *co, unsigned long long now)
{
  for (size_t vi = 0; vi < co->nvols; vi++)
    for (size_t p = 0; p < coord_vol_npgs_all(co->vols[vi]); p++) {
      const Auralog__Pg *pg = coord_vol_pg_at(co->vols[vi], p);
      for (size_t j = NCOPIES; j < pg->n_segments; j++) {
        uint32_t pos = pg->segments[j]->pos;
        if (mb_mv_find(co->ms, co->vols[vi]->id, pg->pg, pos))
          continue;
        struct cnode *f = pos < NCOPIES ? coord_node_find(co, pg->segments[pos]->node) : NULL;
        mv_put(co->ms, co->vols[vi]->id, pg->pg, pos, f && mb_node_out(f) ? "drain" : "repair",
               now);
      }
    }
}

static void tick(struct coord *co);

void member_tick(struct coord *co)
{
  mb_batch_begin(co);
  tick(co);
  mb_batch_end(co);
}

static void tick(struct coord *co)
{
  struct mstate *ms = co->ms;
  unsigned long long now = io_now(co->io), after = member_repair_after(co);
  finish_ready(co);
  if (!ms->kick && now - ms->last_moves < MOVE_RETRY_MS)
    return;
  ms->kick = 0;
  ms->last_moves = now;
  moves_adopt(co, now);
  lost_back(co);
  struct pnode *pn = NULL;
  for (size_t i = 0; i < co->nnodes; i++) {
    struct cnode *n = co->nodes[i];
    const char *id = n->info->id;
    if (strcmp(n->info->state, "retired") == 0)
      continue;
    /* A node never heard from since this coordinator started is silent
     * since the start, not since 1970. */
    unsigned long long seen = n->last_seen > ms->started ? n->last_seen : ms->started;
    int lost = !n->info->up && after && now - seen > after;
    struct mdrain *dr = mb_dr_find(ms, id);
    if ((!lost && !mb_node_out(n)) || (lost && !mb_node_out(n) && mb_hosted(co, id, NULL) == 0))
      continue;                /* nothing to move (a lost node repaired already) */
    if (pn == NULL)
      pn = mb_pnodes(co);
    if (lost)
      lost_note(ms, id, seen);
    char why[300];
    int stuck = 0;
    int done = move_off(co, pn, id, lost ? "repair" : dr ? dr->kind : "drain",
                        !lost && dr && dr->to[0] ? dr->to : NULL, &stuck, why, sizeof why);
    if (done)
      loginfo("node %s %s: %d segment%s begun on spares", id,
              lost ? "lost (no heartbeat)" : "draining", done, done == 1 ? "" : "s");
    if (stuck)
      loginfo_rl("node %s: %d segment%s cannot move yet: %s", id, stuck,
                 stuck == 1 ? "" : "s", why);
    if (!lost && mb_hosted(co, id, NULL) == 0)
      mb_set_state(co, n, "retired");
  }
  free(pn);
  lost_tick(co, now);
  /* Adoption reports of PGs no longer in transition are spent. */
  for (size_t i = 0; i < ms->nad; i++) {
    Auralog__Volume *v = NULL;
    for (size_t k = 0; k < co->nvols; k++)
      if (co->vols[k]->id == ms->ad[i].vol)
        v = co->vols[k];
    const Auralog__Pg *pg = v ? mb_pg(v, ms->ad[i].pg) : NULL;
    if (pg == NULL || pg->n_segments <= NCOPIES || ms->ad[i].epoch != v->epoch)
      ms->ad[i--] = ms->ad[--ms->nad];
  }
}

/* ---- the writer's lease probe (M4 a) -------------------------------------- */

static int by_mepoch(const void *a, const void *b)
{
  const Auralog__Pg *x = *(Auralog__Pg *const *)a, *y = *(Auralog__Pg *const *)b;
  return x->mepoch < y->mepoch ? -1 : x->mepoch > y->mepoch;
}

/* The current writer's report of one PG (M4 a): it uses mepoch q->mepoch
 * of PG q->pg since q->adopted_at. */
static void probe_note(struct coord *co, const Auralog__Volume *v, const Auralog__Pg *q)
{
  struct mstate *ms = co->ms;
  const Auralog__Pg *pg = mb_pg(v, q->pg);
  if (pg == NULL || q->mepoch == 0 || q->mepoch > pg->mepoch)
    return;                  /* a mepoch never handed out is no one's */
  struct madopt *a = mb_ad_find(ms, v->id, q->pg);
  if (a && a->epoch == v->epoch && a->mepoch > q->mepoch)
    return;                  /* an older report, late */
  if (a == NULL) {
    ms->ad = realloc(ms->ad, (ms->nad + 1) * sizeof *ms->ad);
    a = &ms->ad[ms->nad++];
  }
  *a = (struct madopt){v->id, q->pg, v->epoch, q->mepoch, q->adopted_at};
}

void member_probe(struct coord *co, size_t vi, const Auralog__Volume *probe, int writer,
                  Auralog__Volume *answer)
{
  const Auralog__Volume *v = co->vols[vi];
  /* The data PGs' reports in probe->pgs, the binlog PG's in probe->binlog
   * (wire.c: a Volume's pgs are data PGs; vfs/vmember.c fills both). */
  for (size_t i = 0; writer && i < probe->n_pgs; i++)
    probe_note(co, v, probe->pgs[i]);
  if (writer && probe->binlog)
    probe_note(co, v, probe->binlog);
  /* The answer: every PG changed since the writer's mseq, oldest change
   * first, at most PROBE_PGS_MAX; capped, the answer's mseq is the last
   * one's, so the writer asks again for the rest. The binlog PG, if it is
   * among them, goes in the answer's binlog. */
  answer->mseq = v->mseq;
  answer->pgs = NULL;
  answer->n_pgs = 0;
  answer->binlog = NULL;
  if (probe->mseq >= v->mseq)
    return;
  size_t all = coord_vol_npgs_all(v), n = 0, k = 0;
  Auralog__Pg **pgs = malloc((all + 1) * sizeof *pgs);
  for (size_t p = 0; p < all; p++)
    if (coord_vol_pg_at(v, p)->mepoch > probe->mseq)
      pgs[n++] = coord_vol_pg_at(v, p);
  qsort(pgs, n, sizeof *pgs, by_mepoch);
  if (n > PROBE_PGS_MAX) {
    n = PROBE_PGS_MAX;
    answer->mseq = pgs[n - 1]->mepoch;
  }
  for (size_t i = 0; i < n; i++)
    if (pgs[i] == v->binlog)
      answer->binlog = pgs[i];
    else
      pgs[k++] = pgs[i];
  answer->pgs = pgs;
  answer->n_pgs = k;
}

/* ---- a node at a new address ------------------------------------------ */

/* A node that registers again at another address (a new host, or a
 * namespace cluster brought up again on another subnet) keeps its
 * segments: the node is its key, not its address. Every volume's
 * placement names the address writers and recovery connect to, so it
 * follows the node; else a writer's recovery asks an address nobody
 * listens on, and no segment of it answers. */
void member_follow_node(struct coord *co, const char *id, const char *addr)
{
  char why[256];
  for (size_t v = 0; v < co->nvols; v++) {
    const Auralog__Volume *vol = co->vols[v];
    size_t nseg = 0, moved = 0, all = coord_vol_npgs_all(vol);
    for (size_t p = 0; p < all; p++)
      for (size_t s = 0; s < coord_vol_pg_at(vol, p)->n_segments; s++, nseg++) {
        const Auralog__Segment *g = coord_vol_pg_at(vol, p)->segments[s];
        moved += strcmp(g->node, id) == 0 && strcmp(g->addr, addr) != 0;
      }
    if (moved == 0)
      continue;
    /* Shallow copies with the new address (the binlog PG's too, last):
     * vol_store packs them before it frees the volume they point into. */
    Auralog__Volume tmp = *vol;
    Auralog__Pg **pgs = calloc(all + 1, sizeof *pgs), *pgc = calloc(all + 1, sizeof *pgc);
    Auralog__Segment **segp = calloc(nseg + 1, sizeof *segp), *segc = calloc(nseg + 1, sizeof *segc);
    size_t k = 0;
    for (size_t p = 0; p < all; p++) {
      const Auralog__Pg *pg = coord_vol_pg_at(vol, p);
      pgc[p] = *pg;
      pgc[p].segments = &segp[k];
      for (size_t s = 0; s < pg->n_segments; s++, k++) {
        segc[k] = *pg->segments[s];
        if (strcmp(segc[k].node, id) == 0)
          segc[k].addr = (char *)addr;
        segp[k] = &segc[k];
      }
      pgs[p] = &pgc[p];
    }
    tmp.pgs = pgs;
    if (vol->binlog)
      tmp.binlog = pgs[vol->n_pgs];
    if (coord_vol_store(co, &co->vols[v], &tmp, why, sizeof why) == NULL)
      logwarn_rl("volume %s: node %s moved to %s, not stored: %s", tmp.name, id, addr, why);
    else
      loginfo("volume %s: node %s's %zu segment%s now at %s", co->vols[v]->name, id, moved,
              moved == 1 ? "" : "s", addr);
    free(pgs);
    free(pgc);
    free(segp);
    free(segc);
  }
}

/* M6 and M5 need every Assign to arrive; one can be lost (a connection
 * cut while the coordinator sent it, a dropped message: the simulator's
 * seed 1236 at --time 60000 left a node on a PG's mepoch 6 while the PG
 * moved to 18, its pulls refused by every peer for good). A heartbeat that
 * shows a segment behind its PG (a mepoch below the PG's, or a PG that no
 * longer lists the node: it should have dropped it) gets the node the
 * whole Assign again, at most once per ASSIGN_AGAIN_MS (an Assign in
 * flight looks the same for a moment: a second one changes nothing). */
void member_check_node(struct coord *co, struct cnode *n, const Auralog__Heartbeat *hb)
{
  unsigned long long now = io_now(co->io);
  if (n->assign_again_at && now - n->assign_again_at < ASSIGN_AGAIN_MS)
    return;
  for (size_t i = 0; i < hb->n_segs; i++) {
    const Auralog__SegStat *st = hb->segs[i];
    const Auralog__Volume *vol = NULL;
    for (size_t v = 0; v < co->nvols && vol == NULL; v++)
      if (co->vols[v]->id == st->volume_id)
        vol = co->vols[v];
    const Auralog__Pg *pg = vol ? mb_pg(vol, st->pg) : NULL;   /* (the binlog PG too) */
    if (pg == NULL)
      continue;             /* a dropped volume: the Assign's `volumes` says so */
    int listed = 0;
    for (size_t s = 0; s < pg->n_segments && !listed; s++)
      listed = strcmp(pg->segments[s]->node, n->info->id) == 0;
    if (listed && st->mepoch >= pg->mepoch)
      continue;
    loginfo("node %s: volume %s pg %u on mepoch %llu, the PG's is %llu%s: its Assign "
            "again", n->info->id, vol->name, st->pg, (unsigned long long)st->mepoch,
            (unsigned long long)pg->mepoch, listed ? "" : " (no longer a member)");
    n->assign_again_at = now ? now : 1;
    coord_send_assign(co, n, 0);
    return;
  }
  /* The other way round: a segment the metadata gives the node that it
   * does not report at all. A begin's Assign to a spare lost in a
   * partition left the spare hosting nothing while its PG listed it as
   * the next segment, and the move never finished (the simulator's seed
   * 2690 --faults backup). Only a whole heartbeat lists every segment, so
   * only one of those can show a segment missing; and a node still making
   * the segments of a large Assign shows some missing too (a volume grown
   * to 4,096 PGs: the same Assign again, thousands of segments, cost the
   * node seconds of its loop under a sanitizer, and a read timed out). So
   * the Assign goes again only when two whole heartbeats in a row show the
   * same shortfall and the second no more segments than the first: a lost
   * Assign, not one being applied. */
  if (hb->delta)
    return;
  uint32_t have = 0, want = mb_hosted(co, n->info->id, NULL);
  for (size_t i = 0; i < hb->n_segs && have < want; i++)
    for (size_t v = 0; v < co->nvols; v++)
      if (co->vols[v]->id == hb->segs[i]->volume_id && mb_pg(co->vols[v], hb->segs[i]->pg)) {
        have++;
        break;
      }
  if (have >= want) {
    n->short_have = n->short_want = 0;
    return;
  }
  if (n->short_want != want || have > n->short_have) {
    n->short_have = have;      /* the first, or progress since: wait for the next */
    n->short_want = want;
    return;
  }
  loginfo("node %s reports %u segments of the %u it hosts, as in its last whole heartbeat: its "
          "Assign again", n->info->id, have, want);
  n->short_have = n->short_want = 0;
  n->assign_again_at = now ? now : 1;
  coord_send_assign(co, n, 0);
}
