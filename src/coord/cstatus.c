/*
 * cstatus.c: what the coordinator says when asked how a volume stands.
 *
 * One Status message, built by status_build from the coordinator's tables
 * (the volume, the nodes and their segments' last heartbeat, the writer's
 * last report, fenced engines still reporting, the oldest read point's
 * holder, failover, the faults heard of lately: faultlog.c), answers
 * three askers the same way:
 *   coord_on_status     a StatusReq on the wire (`auralog status`)
 *   coord_http_status   the dashboard's /status.json (the JSON of
 *                       `auralog status --json`, made by the same function)
 *   coord_http_sample   one sample of the dashboard's history
 * The message points into the coordinator's tables: nothing here outlives
 * the call that built it (status_done frees only what status_build
 * allocated).
 */
#include <stdlib.h>

#include "coord/coord.h"
#include "coord/memberc.h"
#include "cli/status.h"
#include "param.h"

/* ---- status -------------------------------------------------------------- */

/* A Status message as the coordinator sees volume name. It points into the
 * coordinator's tables; status_done frees what status_build allocated. The
 * wire request and the dashboard's /status.json are both built here. */
struct status_view {
  Auralog__Status st;
  Auralog__Volume empty;       /* stands in for a volume not created yet */
  Auralog__FailoverStat fo;
};

static void status_build(struct coord *co, const char *name, struct status_view *sv)
{
  Auralog__Volume **slot = coord_vol_slot(co, name);
  Auralog__Status *st = &sv->st;
  unsigned long long now = io_now(co->io);
  size_t nsegs = 0, k = 0;
  for (size_t i = 0; i < co->nnodes; i++)
    nsegs += co->nodes[i]->nstats;
  Auralog__NodeInfo **nodes = calloc(co->nnodes + 1, sizeof *nodes);
  Auralog__SegStat **segs = calloc(nsegs + 1, sizeof *segs);
  char **seg_nodes = calloc(nsegs + 1, sizeof *seg_nodes);
  for (size_t i = 0; i < co->nnodes; i++) {
    struct cnode *n = co->nodes[i];
    n->info->last_seen_ms = n->last_seen ? now - n->last_seen : 0;
    nodes[i] = n->info;
    for (size_t j = 0; j < n->nstats; j++) {
      if (slot && n->stats[j].volume_id != (*slot)->id)
        continue;
      segs[k] = &n->stats[j];
      seg_nodes[k++] = n->info->id;
    }
  }
  auralog__status__init(st);
  auralog__volume__init(&sv->empty);
  sv->empty.name = (char *)name;
  sv->empty.page_size = PAGE_SIZE_DEFAULT;
  st->exists = slot != NULL;
  st->volume = slot ? *slot : &sv->empty;
  st->nodes = nodes;
  st->n_nodes = co->nnodes;
  st->segs = segs;
  st->n_segs = slot ? k : 0;
  st->seg_nodes = seg_nodes;
  st->n_seg_nodes = st->n_segs;
  if (slot && co->engines[slot - co->vols].st) {
    st->engine = co->engines[slot - co->vols].st;
    st->engine_age_ms = now - co->engines[slot - co->vols].at;
    hold_status(co, (size_t)(slot - co->vols), st, now);
  }
  if (slot) {
    struct ereport *r = &co->engines[slot - co->vols];
    /* A recovery in progress, of the volume's epoch and heard lately. */
    if (r->recovering[0] && r->rec_epoch == (*slot)->epoch &&
        now - r->rec_at < RECOVERING_FORGET_MS) {
      st->recovering = r->recovering;
      st->recovering_age_ms = now - r->rec_at;
    }
    size_t nf = 0;
    for (size_t k = 0; k < FENCED_SHOWN; k++) {
      if (!r->fenced[k].addr[0] || now - r->fenced[k].at > FENCED_FORGET_MS)
        continue;
      /* Restarted at that address as a replica (it beat since): no
       * fenced engine runs there any more. */
      struct fo_peek pk;
      if (fo_peek(co, name, r->fenced[k].addr, &pk) && pk.rep_known &&
          pk.rep_heard >= r->fenced[k].at)
        continue;
      auralog__fenced_engine__init(&r->fout[nf]);
      r->fout[nf].addr = r->fenced[k].addr;
      r->fout[nf].epoch = r->fenced[k].epoch;
      r->fout[nf].age_ms = now - r->fenced[k].at;
      r->foutp[nf] = &r->fout[nf];
      nf++;
    }
    st->fenced = r->foutp;
    st->n_fenced = nf;
  }
  flog_status(co, st);
  auralog__failover_stat__init(&sv->fo);
  if (slot) {
    fo_status(co, *slot, &sv->fo);
    st->failover = &sv->fo;
    member_status(co, *slot, st);   /* moves in flight, the last times to repair */
  }
}

static void status_done(struct status_view *sv)
{
  free(sv->st.nodes);
  free(sv->st.segs);
  free(sv->st.seg_nodes);
  member_status_done(&sv->st);
}

void coord_on_status(struct coord *co, struct ep *c, uint64_t req,
                      const Auralog__StatusReq *sr)
{
  struct status_view sv;
  status_build(co, sr->volume[0] ? sr->volume : "main", &sv);
  Env env = AURALOG__ENVELOPE__INIT;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_STATUS;
  env.status = &sv.st;
  io_send(co->io, c, &env);
  status_done(&sv);
}

/* The dashboard history's sample of volume main (coord/history.c); NULL
 * while the volume does not exist. */
char *coord_http_sample(void *data)
{
  struct status_view sv;
  status_build(data, "main", &sv);
  char *json = sv.st.exists ? status_sample_json(&sv.st, HISTORY_PGS) : NULL;
  status_done(&sv);
  return json;
}

/* The dashboard's /status.json: the object `auralog status --json` prints,
 * made by the same function from the same Status message. */
char *coord_http_status(void *data, const char *volume)
{
  struct status_view sv;
  status_build(data, volume, &sv);
  char *json = status_json(&sv.st);
  status_done(&sv);
  return json;
}

