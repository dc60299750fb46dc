/*
 * cbinlog.c: the coordinator's part of the enhanced binlog (issue 29):
 * placing a volume's binlog PG.
 *
 * A volume whose writer opens it with OpenVolume.binlog (`auralog engine
 * --binlog enhanced`) gets one more protection group, numbered BINLOG_PG
 * (param.h), kept in Volume.binlog and not in Volume.pgs: every data PG
 * keeps pgs[p]->pg == p, which the membership code relies on, and no page
 * number maps to it (page_no / pg_pages < MAX_PGS). Its six segments are
 * placed as a data PG's (placement.c: two per AZ, on distinct nodes, the
 * least loaded first) and sent to their nodes in the Assign (coord.c), so
 * a node holds them as it holds any segment; it only never makes pages
 * of their records (node/bg.c).
 *
 * The PG is placed once, before the writer's answer, and stored with the
 * volume (meta.c), so every later writer of the volume, with or without
 * --binlog, finds it there: the binlog PG outlives a restart without the
 * flag, and its records with it.
 *
 * Membership changes (repair, drain, replace; coord/member.c) move its
 * segments as a data PG's, under the same rules (member.h M1-M7): they
 * find it by number through member.c mb_pg and walk every PG through
 * coord_vol_npgs_all / coord_vol_pg_at below; a step stores it back in
 * Volume.binlog (mbatch.c), and the writer's lease probe reports it, and
 * hears of its changes, in Volume.binlog (member_probe, vfs/vmember.c). A
 * new binlog segment hydrates by records alone (node/bg.c invariant BJ).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"
#include "coord/memberc.h"
#include "coord/placement.h"
#include "lib/log.h"
#include "param.h"

/* Every PG of v, the binlog PG last: for loops that mean all of them. */
size_t coord_vol_npgs_all(const Auralog__Volume *v)
{
  return v->n_pgs + (v->binlog != NULL);
}

Auralog__Pg *coord_vol_pg_at(const Auralog__Volume *v, size_t i)
{
  return i < v->n_pgs ? v->pgs[i] : v->binlog;
}

Auralog__Volume *coord_binlog_place(struct coord *co, Auralog__Volume **slot, char *why,
                                    size_t whylen)
{
  const Auralog__Volume *base = *slot;
  if (base->binlog)
    return *slot;
  struct pnode *pn = calloc(co->nnodes + 1, sizeof *pn);
  for (size_t i = 0; i < co->nnodes; i++) {
    pn[i].id = co->nodes[i]->info->id;
    pn[i].az = co->nodes[i]->info->az[0];
    pn[i].up = co->nodes[i]->info->up;
    pn[i].out = co->nodes[i]->info->state[0] != 0;   /* draining, retired */
    for (size_t v = 0; v < co->nvols; v++)
      for (size_t p = 0; p < coord_vol_npgs_all(co->vols[v]); p++) {
        const Auralog__Pg *pg = coord_vol_pg_at(co->vols[v], p);
        for (size_t s = 0; s < pg->n_segments; s++)
          pn[i].nsegs += strcmp(pg->segments[s]->node, pn[i].id) == 0;
      }
  }
  size_t pick[NCOPIES];
  Auralog__Volume *out = NULL;
  if (place_pg(pn, co->nnodes, pick, why, whylen) == 0) {
    Auralog__Pg pg = AURALOG__PG__INIT;
    Auralog__Segment segs[NCOPIES], *segp[NCOPIES];
    pg.pg = BINLOG_PG;
    pg.first_page = 0;          /* no pages: its records are no page's */
    pg.npages = 1;
    pg.segments = segp;
    pg.n_segments = NCOPIES;
    for (int j = 0; j < NCOPIES; j++) {
      struct cnode *n = co->nodes[pick[j]];
      auralog__segment__init(&segs[j]);
      segs[j].volume_id = base->id;
      segs[j].pg = BINLOG_PG;
      segs[j].first_page = 0;
      segs[j].npages = 1;
      segs[j].page_size = base->page_size;
      segs[j].node = n->info->id;
      segs[j].az = n->info->az;
      segs[j].addr = n->info->addr;
      segs[j].pos = (uint32_t)j;
      segp[j] = &segs[j];
    }
    Auralog__Volume tmp = *base;
    tmp.binlog = &pg;
    out = coord_vol_store(co, slot, &tmp, why, whylen);
    if (out) {
      loginfo("volume %s: binlog PG placed (%s %s %s %s %s %s)", out->name, segs[0].node,
              segs[1].node, segs[2].node, segs[3].node, segs[4].node, segs[5].node);
      for (size_t i = 0; i < co->nnodes; i++)
        coord_send_assign(co, co->nodes[i], 0);
    }
  }
  free(pn);
  return out;
}
