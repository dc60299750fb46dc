/*
 * status.c: `auralog status [--json] [--watch]` (see status.h).
 *
 * The coordinator answers with the volume, the nodes and the SCL of every
 * segment from the nodes' heartbeats; this file turns that into the JSON of
 * the contract (DESIGN.md §6) or a table, once or every second. The
 * engine's fields (vdl, vcl, next_lsn, commits, redo_bytes, net_*) are 0
 * until an engine reports them; a node's counters (commits, fsyncs,
 * gossip_*, net_*) are 0 until it heartbeats.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "net/rpc.h"
#include "cli/status.h"

Env *status_fetch(const char *coord, const char *volume, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__StatusReq sr = AURALOG__STATUS_REQ__INIT;
  sr.volume = (char *)volume;
  req.body_case = AURALOG__ENVELOPE__BODY_STATUS_REQ;
  req.status_req = &sr;
  char err[256];
  Env *rep = rpc_once(coord, &req, RPC_TIMEOUT_MS, err, sizeof err);
  if (rep == NULL) {
    snprintf(why, whylen, "coordinator: %s", err);
    return NULL;
  }
  if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_STATUS, err, sizeof err) != 0) {
    snprintf(why, whylen, "coordinator: %s", err);
    wire_free(rep);
    return NULL;
  }
  return rep;
}

static const Auralog__NodeInfo *node_of(const Auralog__Status *st, const char *id)
{
  for (size_t i = 0; i < st->n_nodes; i++)
    if (strcmp(st->nodes[i]->id, id) == 0)
      return st->nodes[i];
  return NULL;
}

/* The segments' stats of a Status, sorted by (pg, node), so that finding
 * each PG's six is O(log segments) and a status of a thousand PGs is not
 * quadratic (the dashboard asks the coordinator for one every second). */
struct statix {
  uint32_t pg;
  const char *node;
  const Auralog__SegStat *ss;
};

static int statix_cmp(const void *a, const void *b)
{
  const struct statix *x = a, *y = b;
  if (x->pg != y->pg)
    return x->pg < y->pg ? -1 : 1;
  return strcmp(x->node, y->node);
}

/* st's segment stats sorted (free it); NULL if none. */
static struct statix *statix_build(const Auralog__Status *st)
{
  if (st->n_segs == 0)
    return NULL;
  struct statix *ix = malloc(st->n_segs * sizeof *ix);
  for (size_t i = 0; i < st->n_segs; i++)
    ix[i] = (struct statix){st->segs[i]->pg, st->seg_nodes[i], st->segs[i]};
  qsort(ix, st->n_segs, sizeof *ix, statix_cmp);
  return ix;
}

/* What node reported for (volume, pg), or NULL if it has not yet. */
static const Auralog__SegStat *stat_of(const Auralog__Status *st, const struct statix *ix,
                                       const char *node, uint32_t pg)
{
  struct statix key = {pg, node, NULL};
  const struct statix *hit = ix ? bsearch(&key, ix, st->n_segs, sizeof *ix, statix_cmp) : NULL;
  return hit ? hit->ss : NULL;
}

static uint64_t scl_of(const Auralog__Status *st, const struct statix *ix, const char *node,
                       uint32_t pg)
{
  const Auralog__SegStat *ss = stat_of(st, ix, node, pg);
  return ss ? ss->scl : 0;
}

/* The id of the node at addr ("" for none; addr itself if none listed). */
static const char *node_by_addr(const Auralog__Status *st, const char *addr)
{
  if (addr == NULL || addr[0] == 0)
    return "";
  for (size_t i = 0; i < st->n_nodes; i++)
    if (strcmp(st->nodes[i]->addr, addr) == 0)
      return st->nodes[i]->id;
  return addr;
}

static const char *state_of(const Auralog__NodeInfo *n)
{
  return n && n->up ? "up" : "down";
}

/* Has the volume's engine reported lately? */
static int engine_up(const Auralog__Status *st)
{
  return st->engine && st->engine_age_ms <= NODE_DOWN_MS;
}

/* "up", "down", or "recovering": the writer of the volume's epoch is
 * still in its recovery (vfs/rcvround.c rule W; its last serving report, if
 * any, is an older engine's). */
static const char *engine_state(const Auralog__Status *st)
{
  return st->recovering && st->recovering[0] ? "recovering" : engine_up(st) ? "up" : "down";
}

static void read_hold_json(const Auralog__Status *st, cJSON *o);
static void failover_json(const Auralog__Status *st, cJSON *o);

/* One PG's entry in the JSON: its pages, membership and segments. */
static cJSON *pg_json(const Auralog__Status *st, const struct statix *ix, const Auralog__Pg *pg)
{
  cJSON *jp = cJSON_CreateObject();
  cJSON_AddNumberToObject(jp, "pg", pg->pg);
  cJSON_AddNumberToObject(jp, "first_page", pg->first_page);
  cJSON_AddNumberToObject(jp, "npages", pg->npages);
  /* Membership (member.h): its epoch, the oldest a writer may use, and
   * the best SCL of its current segments (a next one hydrates towards it). */
  cJSON_AddNumberToObject(jp, "mepoch", (double)pg->mepoch);
  cJSON_AddNumberToObject(jp, "mepoch_min", (double)pg->mepoch_min);
  uint64_t best = 0;
  for (size_t s = 0; s < pg->n_segments && s < NCOPIES; s++) {
    uint64_t c = scl_of(st, ix, pg->segments[s]->node, pg->pg);
    best = c > best ? c : best;
  }
  cJSON *segs = cJSON_AddArrayToObject(jp, "segments");
  for (size_t s = 0; s < pg->n_segments; s++) {
    const Auralog__Segment *seg = pg->segments[s];
    cJSON *js = cJSON_CreateObject();
    cJSON_AddStringToObject(js, "node", seg->node);
    cJSON_AddStringToObject(js, "az", seg->az);
    cJSON_AddNumberToObject(js, "scl", (double)scl_of(st, ix, seg->node, pg->pg));
    cJSON_AddNumberToObject(js, "pos", s < NCOPIES ? (double)s : (double)seg->pos);
    cJSON_AddBoolToObject(js, "next", seg->next);
    cJSON_AddBoolToObject(js, "hydrating",
                          seg->next && scl_of(st, ix, seg->node, pg->pg) < best);
    /* What the segment holds (node/bg.c), as of its node's last heartbeat. */
    const Auralog__SegStat *ss = stat_of(st, ix, seg->node, pg->pg);
    static const Auralog__SegStat none = AURALOG__SEG_STAT__INIT;
    if (ss == NULL)
      ss = &none;
    cJSON_AddNumberToObject(js, "records", (double)ss->records);
    cJSON_AddNumberToObject(js, "unmaterialized", (double)ss->unmaterialized);
    cJSON_AddNumberToObject(js, "bytes", (double)ss->bytes);
    cJSON_AddNumberToObject(js, "pgmrpl", (double)ss->pgmrpl);
    cJSON_AddNumberToObject(js, "gc_lsn", (double)ss->gc_lsn);
    cJSON_AddNumberToObject(js, "versions", (double)ss->images);
    cJSON_AddNumberToObject(js, "oldest_version", (double)ss->oldest_image);
    cJSON_AddNumberToObject(js, "damaged", (double)ss->damaged);
    /* The highest LSN it holds: above its SCL, a hole (records missing
     * below ones it has; gossip fills it, §3.3), and its epoch (§4.3). */
    cJSON_AddNumberToObject(js, "max_lsn", (double)ss->max_lsn);
    cJSON_AddBoolToObject(js, "hole", ss->max_lsn > ss->scl);
    cJSON_AddNumberToObject(js, "epoch", (double)ss->epoch);
    const Auralog__NodeInfo *sn = node_of(st, seg->node);
    cJSON_AddStringToObject(js, "state", state_of(sn));
    cJSON_AddStringToObject(js, "fault", sn && sn->partitioned ? "partitioned"
                                          : sn && sn->slow_ms ? "slow"
                                          : sn && sn->stale ? "stale"
                                          : sn && sn->no_gossip ? "no-gossip" : "");
    cJSON_AddItemToArray(segs, js);
  }
  return jp;
}

char *status_json(const Auralog__Status *st)
{
  const Auralog__Volume *v = st->volume;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "volume", v->name);
  cJSON_AddBoolToObject(o, "exists", st->exists);
  const Auralog__EngineStat *e = st->engine;
  Auralog__EngineStat none = AURALOG__ENGINE_STAT__INIT;
  if (e == NULL) {
    none.lal = LAL;
    e = &none;
  }
  cJSON_AddNumberToObject(o, "epoch", (double)v->epoch);
  cJSON_AddNumberToObject(o, "vdl", (double)e->vdl);
  cJSON_AddNumberToObject(o, "vcl", (double)e->vcl);
  cJSON_AddNumberToObject(o, "next_lsn", (double)e->next_lsn);
  cJSON_AddNumberToObject(o, "lal", (double)e->lal);
  cJSON_AddNumberToObject(o, "commits", (double)e->commits);
  cJSON_AddNumberToObject(o, "redo_bytes", (double)e->redo_bytes);
  cJSON_AddNumberToObject(o, "redo_msgs", (double)e->redo_msgs);
  /* Every frame engine <-> storage nodes (redo, reads, recovery), bytes
   * with the length prefix: net_bytes_out >= redo_bytes. */
  cJSON_AddNumberToObject(o, "net_bytes_out", (double)e->net_bytes_out);
  cJSON_AddNumberToObject(o, "net_msgs_out", (double)e->net_msgs_out);
  cJSON_AddNumberToObject(o, "net_bytes_in", (double)e->net_bytes_in);
  cJSON_AddNumberToObject(o, "net_msgs_in", (double)e->net_msgs_in);
  cJSON_AddNumberToObject(o, "records", (double)e->records);
  cJSON_AddNumberToObject(o, "pending", (double)e->pending);
  cJSON_AddNumberToObject(o, "pages_read", (double)e->pages_read);
  cJSON_AddNumberToObject(o, "recovery_ms", (double)e->recovery_ms);
  cJSON_AddNumberToObject(o, "refusing", (double)e->refusing);
  /* Page replies the engine's end-to-end check refused (a node served an
   * older page than the writer knows), and the node of the last one. */
  cJSON_AddNumberToObject(o, "stale_pages", (double)e->stale_pages);
  cJSON_AddStringToObject(o, "stale_node", node_by_addr(st, e->stale_node));
  /* The writer's reads mode (`engine --reads`), and the replies of an
   * immediate one that showed commits above the VDL (lab 7). */
  cJSON_AddStringToObject(o, "reads", e->reads_immediate ? "immediate" : "durable");
  cJSON_AddNumberToObject(o, "dirty_reads", (double)e->dirty_reads);
  cJSON_AddNumberToObject(o, "page_size", v->page_size);
  cJSON *eng = cJSON_AddObjectToObject(o, "engine");
  cJSON_AddStringToObject(eng, "addr", st->engine ? e->addr : "");
  cJSON_AddStringToObject(eng, "state", engine_state(st));
  cJSON_AddNumberToObject(eng, "epoch", (double)e->epoch);
  /* Read replicas (paper §4.2.4), as their writer sees them, and the
   * volume's PGMRPL: the minimum read point over the writer and every
   * replica, below which node GC may free versions. */
  cJSON_AddNumberToObject(o, "pgmrpl", (double)e->pgmrpl);
  cJSON *reps = cJSON_AddArrayToObject(o, "replicas");
  for (size_t i = 0; i < e->n_replicas; i++) {
    const Auralog__ReplicaStat *r = e->replicas[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "addr", r->addr);
    cJSON_AddNumberToObject(j, "applied_vdl", (double)r->applied);
    cJSON_AddNumberToObject(j, "lag_lsn", (double)r->lag_lsn);
    cJSON_AddNumberToObject(j, "lag_ms", (double)r->lag_ms);
    cJSON_AddNumberToObject(j, "min_read_point", (double)r->min_read_point);
    cJSON_AddNumberToObject(j, "resyncs", (double)r->resyncs);
    /* Its read transactions (vfs/rvol.h, the read-age rule). */
    cJSON_AddStringToObject(j, "holder", r->holder);
    cJSON_AddNumberToObject(j, "held_ms", (double)r->held_ms);
    cJSON_AddNumberToObject(j, "readers", r->readers);
    cJSON_AddNumberToObject(j, "cancelled", (double)r->cancelled);
    cJSON_AddNumberToObject(j, "warned", (double)r->warned);
    cJSON_AddNumberToObject(j, "max_read_age_ms", r->max_read_age_ms);
    cJSON_AddStringToObject(j, "read_age_action", r->read_age_action);
    cJSON_AddItemToArray(reps, j);
  }
  read_hold_json(st, o);
  failover_json(st, o);
  status_member_json(st, o);
  status_log_json(st, o);
  status_recent_json(st, o);
  cJSON *tr = cJSON_AddArrayToObject(o, "truncations");
  for (size_t i = 0; i < v->n_truncs; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "epoch", (double)v->truncs[i]->epoch);
    cJSON_AddNumberToObject(j, "from", (double)v->truncs[i]->from);
    cJSON_AddNumberToObject(j, "to", (double)v->truncs[i]->to);
    cJSON_AddItemToArray(tr, j);
  }
  cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
  for (size_t i = 0; i < st->n_nodes; i++) {
    const Auralog__NodeInfo *n = st->nodes[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", n->id);
    cJSON_AddStringToObject(j, "az", n->az);
    cJSON_AddStringToObject(j, "addr", n->addr);
    cJSON_AddStringToObject(j, "state", status_node_state(n));
    cJSON_AddBoolToObject(j, "partitioned", n->partitioned);
    cJSON_AddNumberToObject(j, "slow_ms", n->slow_ms);
    cJSON_AddBoolToObject(j, "stale", n->stale);
    cJSON_AddBoolToObject(j, "no_gossip", n->no_gossip);
    /* The node's counters from its last heartbeat, cumulative since it
     * started (a restarted node starts again from 0). */
    cJSON_AddNumberToObject(j, "commits", (double)n->commits);
    cJSON_AddNumberToObject(j, "fsyncs", (double)n->fsyncs);
    cJSON_AddNumberToObject(j, "gossip_bytes", (double)n->gossip_bytes);
    cJSON_AddNumberToObject(j, "gossip_msgs", (double)n->gossip_msgs);
    cJSON_AddNumberToObject(j, "net_bytes_in", (double)n->net_bytes_in);
    cJSON_AddNumberToObject(j, "net_msgs_in", (double)n->net_msgs_in);
    cJSON_AddNumberToObject(j, "net_bytes_out", (double)n->net_bytes_out);
    cJSON_AddNumberToObject(j, "net_msgs_out", (double)n->net_msgs_out);
    cJSON_AddNumberToObject(j, "coord_bytes", (double)n->coord_bytes);
    cJSON_AddNumberToObject(j, "coord_msgs", (double)n->coord_msgs);
    /* Its background work (node/bg.c), cumulative since it started. */
    cJSON_AddNumberToObject(j, "coalesced", (double)n->coalesced);
    /* What the node says of itself, for the labs' evidence. */
    cJSON_AddNumberToObject(j, "partitions", (double)n->partitions);
    cJSON_AddNumberToObject(j, "started_ms", (double)n->started_ms);
    cJSON_AddNumberToObject(j, "gc_records", (double)n->gc_records);
    cJSON_AddNumberToObject(j, "gc_versions", (double)n->gc_images);
    cJSON_AddNumberToObject(j, "scrubbed", (double)n->scrubbed);
    cJSON_AddNumberToObject(j, "damage_found", (double)n->damage_found);
    cJSON_AddNumberToObject(j, "repaired", (double)n->repaired);
    cJSON_AddNumberToObject(j, "max_apply", (double)n->max_apply);
    cJSON_AddItemToArray(nodes, j);
  }
  cJSON *pgs = cJSON_AddArrayToObject(o, "pgs");
  struct statix *ix = statix_build(st);
  for (size_t p = 0; p < v->n_pgs; p++)
    cJSON_AddItemToArray(pgs, pg_json(st, ix, v->pgs[p]));
  /* The binlog PG (issue 29): its configuration(s) and membership epoch as
   * a data PG's (member.h: repairs, drains and replaces move it too). */
  if (v->binlog && v->binlog->n_segments)
    cJSON_AddItemToObject(o, "binlog_pg", pg_json(st, ix, v->binlog));
  free(ix);
  char *out = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return out;
}

/* The dashboard's sample of st (its record(); coord/history.c keeps them):
 * the watermarks, the epoch, the engine's and each node's state, and the
 * SCLs of the first npgs PGs. Cheap at any number of PGs: one pass over
 * the segments' stats, no full status object. */
char *status_sample_json(const Auralog__Status *st, size_t npgs)
{
  const Auralog__Volume *v = st->volume;
  const Auralog__EngineStat *e = st->engine;
  cJSON *s = cJSON_CreateObject();
  cJSON_AddBoolToObject(s, "ok", 1);
  if (e && e->addr && e->addr[0]) {
    cJSON_AddNumberToObject(s, "vdl", (double)e->vdl);
    cJSON_AddNumberToObject(s, "vcl", (double)e->vcl);
  }
  cJSON_AddNumberToObject(s, "epoch", (double)v->epoch);
  cJSON_AddNumberToObject(s, "commits", e ? (double)e->commits : 0);
  cJSON_AddStringToObject(s, "engine", engine_state(st));
  cJSON_AddNumberToObject(s, "ntruncs", (double)v->n_truncs);
  cJSON *nodes = cJSON_AddObjectToObject(s, "nodes");
  for (size_t i = 0; i < st->n_nodes; i++) {
    const Auralog__NodeInfo *n = st->nodes[i];
    cJSON_AddStringToObject(nodes, n->id, !n->up ? "down" : n->partitioned ? "partitioned"
                                          : n->slow_ms ? "slow" : "up");
  }
  /* The faults a node plays besides (the page draws them as thin bands). */
  cJSON *flags = cJSON_AddObjectToObject(s, "flags");
  for (size_t i = 0; i < st->n_nodes; i++) {
    const Auralog__NodeInfo *n = st->nodes[i];
    if (n->up && (n->stale || n->no_gossip))
      cJSON_AddStringToObject(flags, n->id, n->stale && n->no_gossip ? "stale gossip-off"
                                            : n->stale ? "stale" : "gossip-off");
  }
  /* The first npgs PGs by position in the volume (as the page lists them). */
  uint32_t last = 0;
  for (size_t p = 0; p < v->n_pgs && p < npgs; p++)
    last = v->pgs[p]->pg > last ? v->pgs[p]->pg : last;
  cJSON *scl = cJSON_AddObjectToObject(s, "scl");
  for (size_t k = 0; k < st->n_segs && k < st->n_seg_nodes && v->n_pgs; k++) {
    const Auralog__SegStat *ss = st->segs[k];
    if (ss->pg > last || ss->scl == 0)
      continue;              /* nothing yet: nothing to draw (as the page does) */
    char key[64];
    snprintf(key, sizeof key, "%s/%u", st->seg_nodes[k], ss->pg);
    cJSON_AddNumberToObject(scl, key, (double)ss->scl);
  }
  char *out = cJSON_PrintUnformatted(s);
  cJSON_Delete(s);
  return out;
}

/* Each node's storage (paper §3.3, Figure 4): what its segments hold, how
 * much of it waits to be coalesced, the GC point against the PGMRPL, and
 * damage found and repaired. One line per node, whatever the PG count. */
static void storage_table(const Auralog__Status *st, FILE *f)
{
  if (st->n_segs == 0)
    return;
  fprintf(f, "storage  records  unmat.  MiB     pgmrpl  gc point  oldest ver.  "
          "damaged  found/repaired  max apply\n");
  for (size_t i = 0; i < st->n_nodes; i++) {
    const Auralog__NodeInfo *n = st->nodes[i];
    uint64_t recs = 0, unmat = 0, bytes = 0, pgmrpl = 0, gc = UINT64_MAX, oldest = 0,
             damaged = 0;
    int nseg = 0;
    for (size_t k = 0; k < st->n_segs; k++) {
      const Auralog__SegStat *ss = st->segs[k];
      if (strcmp(st->seg_nodes[k], n->id) != 0)
        continue;
      nseg++;
      recs += ss->records;
      unmat += ss->unmaterialized;
      bytes += ss->bytes;
      damaged += ss->damaged;
      if (ss->pgmrpl > pgmrpl)
        pgmrpl = ss->pgmrpl;
      if (ss->gc_lsn < gc)
        gc = ss->gc_lsn;
      if (ss->oldest_image && (oldest == 0 || ss->oldest_image < oldest))
        oldest = ss->oldest_image;
    }
    if (nseg == 0)
      continue;
    /* A node that is down keeps the row of its last report: say so, or
     * its frozen figures read as a live node's. */
    fprintf(f, "  %-6s %8llu %7llu  %-7.1f %-7llu %-9llu %-12llu %-8llu %llu/%-13llu %u%s\n",
            n->id, (unsigned long long)recs, (unsigned long long)unmat, bytes / 1048576.0,
            (unsigned long long)pgmrpl, (unsigned long long)gc, (unsigned long long)oldest,
            (unsigned long long)damaged, (unsigned long long)n->damage_found,
            (unsigned long long)n->repaired, n->max_apply,
            n->up ? "" : "  (down: as it last reported)");
  }
}

/* ---- what the PGMRPL holds back (seed 004) ---------------------------------- */

/* Who holds the PGMRPL, and what storage keeps for it: the oldest read
 * point's holder (a replica and its client, or the writer), the segments'
 * totals now, and their growth since the PGMRPL last moved (coord/hold.c
 * noted the totals then). */
struct read_hold {
  uint64_t pgmrpl, vdl, min_gc, recs, vers, bytes;
  const Auralog__ReplicaStat *by;     /* the replica at the PGMRPL, if one */
  int held;                           /* the PGMRPL is below the VDL */
  double grow_recs, grow_vers, grow_bytes;
};

static void read_hold(const Auralog__Status *st, struct read_hold *h)
{
  memset(h, 0, sizeof *h);
  const Auralog__EngineStat *e = st->engine;
  h->min_gc = UINT64_MAX;
  uint64_t max_gc = 0;
  for (size_t k = 0; k < st->n_segs; k++) {
    const Auralog__SegStat *ss = st->segs[k];
    h->recs += ss->records;
    h->vers += ss->images;
    h->bytes += ss->bytes;
    if (ss->records && ss->gc_lsn < h->min_gc)
      h->min_gc = ss->gc_lsn;    /* (a segment holding nothing has nothing to free) */
    max_gc = ss->gc_lsn > max_gc ? ss->gc_lsn : max_gc;
  }
  /* None holds a record: GC freed all it was given, up to the furthest
   * point any segment reached (coord/jreplica.c seg_totals: the same). */
  if (h->min_gc == UINT64_MAX)
    h->min_gc = max_gc;
  if (e == NULL)
    return;
  h->pgmrpl = e->pgmrpl;
  h->vdl = e->vdl;
  h->held = e->pgmrpl && e->pgmrpl < e->vdl;
  for (size_t i = 0; i < e->n_replicas; i++)
    if (e->replicas[i]->min_read_point == e->pgmrpl &&
        (h->by == NULL || e->replicas[i]->held_ms > h->by->held_ms))
      h->by = e->replicas[i];
  if (st->pgmrpl_still_ms || st->pgmrpl_bytes) {
    h->grow_recs = (double)h->recs - (double)st->pgmrpl_records;
    h->grow_vers = (double)h->vers - (double)st->pgmrpl_versions;
    h->grow_bytes = (double)h->bytes - (double)st->pgmrpl_bytes;
  }
}

static void read_hold_json(const Auralog__Status *st, cJSON *o)
{
  struct read_hold h;
  read_hold(st, &h);
  cJSON *j = cJSON_AddObjectToObject(o, "read_hold");
  cJSON_AddNumberToObject(j, "pgmrpl", (double)h.pgmrpl);
  cJSON_AddNumberToObject(j, "lsns_behind_vdl", h.vdl > h.pgmrpl ? (double)(h.vdl - h.pgmrpl) : 0);
  /* Who holds it: a replica (and its oldest read transaction's client),
   * or the writer (its own reads in flight); "" when it is at the VDL. */
  cJSON_AddStringToObject(j, "holder", !h.held ? "" : h.by ? "replica" : "writer");
  cJSON_AddStringToObject(j, "replica", h.held && h.by ? h.by->addr : "");
  cJSON_AddStringToObject(j, "client", h.held && h.by ? h.by->holder : "");
  cJSON_AddNumberToObject(j, "held_ms", h.held && h.by ? (double)h.by->held_ms : 0);
  cJSON_AddNumberToObject(j, "still_ms", (double)st->pgmrpl_still_ms);
  /* Every segment's, summed: what storage keeps now, and the oldest GC
   * point (node GC frees nothing above the PGMRPL). */
  cJSON_AddNumberToObject(j, "min_gc_lsn", (double)h.min_gc);  /* of segments holding records */
  cJSON_AddNumberToObject(j, "records", (double)h.recs);
  cJSON_AddNumberToObject(j, "versions", (double)h.vers);
  cJSON_AddNumberToObject(j, "bytes", (double)h.bytes);
  /* ... and how much of it came since the PGMRPL last moved. */
  cJSON_AddNumberToObject(j, "growth_records", h.grow_recs);
  cJSON_AddNumberToObject(j, "growth_versions", h.grow_vers);
  cJSON_AddNumberToObject(j, "growth_bytes", h.grow_bytes);
}

static void read_hold_table(const Auralog__Status *st, FILE *f)
{
  struct read_hold h;
  read_hold(st, &h);
  if (!h.held)
    return;
  fprintf(f, "oldest read point %llu (the PGMRPL, %llu LSNs behind the vdl), held by ",
          (unsigned long long)h.pgmrpl, (unsigned long long)(h.vdl - h.pgmrpl));
  if (h.by && h.by->holder[0])
    fprintf(f, "replica %s, client %s, for %llu ms%s\n", h.by->addr, h.by->holder,
            (unsigned long long)h.by->held_ms,
            h.by->max_read_age_ms && h.by->held_ms > h.by->max_read_age_ms
              ? " (past its --max-read-age)" : "");
  else
    fprintf(f, "%s\n", h.by ? "a replica (no read transaction: it is behind)"
                            : "the writer (reads in flight)");
  fprintf(f, "  storage keeps %llu records, %llu page versions, %.1f MiB (gc point >= %llu); "
          "since the PGMRPL last moved (%.1f s): %+.0f records, %+.0f versions, %+.1f MiB\n",
          (unsigned long long)h.recs, (unsigned long long)h.vers, h.bytes / 1048576.0,
          (unsigned long long)h.min_gc, st->pgmrpl_still_ms / 1000.0, h.grow_recs, h.grow_vers,
          h.grow_bytes / 1048576.0);
}

/* The coordinator's view of the writer and its failovers
 * (coord/failover.c): how long the writer has been silent against the
 * bound that makes it lost, a promotion under way, the last failover. */
static void failover_json(const Auralog__Status *st, cJSON *o)
{
  const Auralog__FailoverStat *fs = st->failover;
  if (fs == NULL)
    return;
  cJSON *j = cJSON_AddObjectToObject(o, "failover");
  cJSON_AddBoolToObject(j, "on", fs->on);
  cJSON_AddStringToObject(j, "writer", st->volume->writer);
  cJSON_AddNumberToObject(j, "writer_silent_ms", (double)fs->silent_ms);
  cJSON_AddNumberToObject(j, "lost_after_ms", (double)fs->bound_ms);
  cJSON_AddBoolToObject(j, "writer_lost", st->volume->writer[0] && fs->silent_ms > fs->bound_ms);
  cJSON_AddNumberToObject(j, "candidates", fs->candidates);
  cJSON_AddStringToObject(j, "promoting", fs->promoting);
  cJSON_AddNumberToObject(j, "promoting_ms", (double)fs->promoting_ms);
  cJSON_AddNumberToObject(j, "failovers", fs->failovers);
  cJSON *l = cJSON_AddObjectToObject(j, "last");
  if (fs->failovers) {
    cJSON_AddStringToObject(l, "from", fs->last_from);
    cJSON_AddNumberToObject(l, "from_epoch", (double)fs->last_from_epoch);
    cJSON_AddStringToObject(l, "to", fs->last_to);
    cJSON_AddNumberToObject(l, "epoch", (double)fs->last_epoch);
    cJSON_AddStringToObject(l, "by", fs->last_asked ? "asked" : "detector");
    cJSON_AddNumberToObject(l, "ago_ms", (double)fs->last_ago_ms);
    cJSON_AddNumberToObject(l, "detect_ms", (double)fs->last_detect_ms);
    cJSON_AddNumberToObject(l, "took_ms", (double)fs->last_took_ms);
  }
}

static void failover_table(const Auralog__Status *st, FILE *f)
{
  const Auralog__FailoverStat *fs = st->failover;
  const Auralog__Volume *v = st->volume;
  if (fs == NULL || v->writer[0] == 0)
    return;
  fprintf(f, "failover %s: writer %s heard %.1f s ago (lost after %.1f s); %u replica%s "
          "could take over\n", fs->on ? "on" : "off (the coordinator runs without --failover)", v->writer,
          fs->silent_ms / 1000.0, fs->bound_ms / 1000.0, fs->candidates,
          fs->candidates == 1 ? "" : "s");
  if (fs->promoting[0])
    fprintf(f, "  promoting replica %s from epoch %llu (chosen %.1f s ago)\n", fs->promoting,
            (unsigned long long)fs->from_epoch, fs->promoting_ms / 1000.0);
  else if (fs->silent_ms > fs->bound_ms)
    fprintf(f, "  the writer is lost: %s\n",
            !fs->on ? "`auralog failover` promotes a replica, `auralog cluster up` restarts it"
            : fs->candidates ? "a replica is chosen at the coordinator's next tick"
                             : "no replica to promote (`auralog cluster up` restarts it)");
  if (fs->failovers)
    fprintf(f, "  last failover %.1f s ago (%s): %s (epoch %llu) -> %s (epoch %llu); "
            "chosen %.1f s and epoch %llu taken %.1f s after the old writer's last "
            "sign of life; %u since the coordinator started\n",
            fs->last_ago_ms / 1000.0, fs->last_asked ? "asked by auralog failover" : "detected",
            fs->last_from, (unsigned long long)fs->last_from_epoch, fs->last_to,
            (unsigned long long)fs->last_epoch, fs->last_detect_ms / 1000.0,
            (unsigned long long)fs->last_epoch, fs->last_took_ms / 1000.0, fs->failovers);
}

void status_table(const Auralog__Status *st, FILE *f)
{
  const Auralog__Volume *v = st->volume;
  size_t up = 0;
  for (size_t i = 0; i < st->n_nodes; i++)
    up += st->nodes[i]->up;
  const Auralog__EngineStat *e = st->engine;
  fprintf(f, "volume %s%s  epoch %llu", v->name, st->exists ? "" : " (not created yet)",
          (unsigned long long)v->epoch);
  if (e)
    fprintf(f, "  vdl %llu  vcl %llu  next_lsn %llu  lal %llu\n"
            "engine %s (%s)  commits %llu  redo %llu bytes in %llu msgs  "
            "pending %llu  recovery %llu ms\n",
            (unsigned long long)e->vdl, (unsigned long long)e->vcl,
            (unsigned long long)e->next_lsn, (unsigned long long)e->lal, e->addr,
            engine_state(st), (unsigned long long)e->commits,
            (unsigned long long)e->redo_bytes, (unsigned long long)e->redo_msgs,
            (unsigned long long)e->pending, (unsigned long long)e->recovery_ms);
  else
    fprintf(f, "  (no engine has reported)\n");
  if (e && e->n_replicas)
    fprintf(f, "pgmrpl %llu (the oldest read point of the writer and its replicas)\n",
            (unsigned long long)e->pgmrpl);
  for (size_t i = 0; e && i < e->n_replicas; i++) {
    const Auralog__ReplicaStat *r = e->replicas[i];
    fprintf(f, "replica %s  applied vdl %llu  lag %llu lsn, %llu ms  min read point %llu%s\n",
            r->addr, (unsigned long long)r->applied, (unsigned long long)r->lag_lsn,
            (unsigned long long)r->lag_ms, (unsigned long long)r->min_read_point,
            r->resyncs ? "  (resynced)" : "");
    if (r->readers || r->cancelled || r->warned)
      fprintf(f, "  read transactions: %u at its read point, the oldest client %s's for %llu "
              "ms; %llu cancelled, %llu warned of (--max-read-age %u, %s)\n", r->readers,
              r->holder[0] ? r->holder : "-", (unsigned long long)r->held_ms,
              (unsigned long long)r->cancelled, (unsigned long long)r->warned,
              r->max_read_age_ms, r->read_age_action);
  }
  read_hold_table(st, f);
  failover_table(st, f);
  status_member_table(st, f);
  status_log_table(st, f);
  if (e && e->stale_pages)
    fprintf(f, "%llu stale page%s refused by the engine's page LSN check, the last "
            "from node %s (see the engine's log)\n", (unsigned long long)e->stale_pages,
            e->stale_pages == 1 ? "" : "s", node_by_addr(st, e->stale_node));
  if (e && e->reads_immediate)
    fprintf(f, "reads immediate: %llu repl%s showed commits above the VDL (up to lsn %llu), "
            "which a crash could take away\n", (unsigned long long)e->dirty_reads,
            e->dirty_reads == 1 ? "y" : "ies", (unsigned long long)e->dirty_lsn);
  if (e && e->refusing)
    fprintf(f, "%llu segment%s refuse the engine's Appends (see the engine's log)\n",
            (unsigned long long)e->refusing, e->refusing == 1 ? "" : "s");
  status_truncs_table(st, f);
  fprintf(f, "nodes  %zu of %zu up\n", up, st->n_nodes);
  for (int z = 0; z < NAZ; z++) {
    fprintf(f, "  AZ %c:", 'A' + z);
    for (size_t i = 0; i < st->n_nodes; i++)
      if (st->nodes[i]->az[0] == 'A' + z)
        fprintf(f, "  %s %s (%s%s%s%s%s)", st->nodes[i]->id, st->nodes[i]->addr,
                status_node_state(st->nodes[i]), st->nodes[i]->partitioned ? ", partitioned" : "",
                st->nodes[i]->slow_ms ? ", slow" : "",
                st->nodes[i]->stale ? ", serves stale pages" : "",
                st->nodes[i]->no_gossip ? ", gossip off" : "");
    fputc('\n', f);
  }
  storage_table(st, f);
  if (v->n_pgs)
    fprintf(f, "pgs    segment SCLs (node:scl, ^N = holds records up to N above a hole, "
            "@eN = at an older epoch N, * = down, ~ = partitioned, > = an incoming next segment)\n");
  struct statix *ix = statix_build(st);
  /* The data PGs, then the binlog PG (issue 29), which has no pages. */
  size_t all = v->n_pgs + (v->binlog && v->binlog->n_segments);
  for (size_t p = 0; p < all; p++) {
    const Auralog__Pg *pg = p < v->n_pgs ? v->pgs[p] : v->binlog;
    if (p < v->n_pgs)
      fprintf(f, "  pg %-3u pages %u..%u:", pg->pg, pg->first_page,
              pg->first_page + pg->npages - 1);
    else
      fprintf(f, "  binlog pg %u:", pg->pg);
    for (size_t s = 0; s < pg->n_segments; s++) {
      const Auralog__Segment *seg = pg->segments[s];
      const Auralog__NodeInfo *n = node_of(st, seg->node);
      const Auralog__SegStat *ss = stat_of(st, ix, seg->node, pg->pg);
      fprintf(f, "  %s%s:%llu", seg->next ? ">" : "", seg->node,
              (unsigned long long)(ss ? ss->scl : 0));
      if (ss && ss->max_lsn > ss->scl)
        fprintf(f, "^%llu", (unsigned long long)ss->max_lsn);    /* a hole below */
      if (ss && ss->epoch && ss->epoch < v->epoch)
        fprintf(f, "@e%llu", (unsigned long long)ss->epoch);     /* an older epoch */
      fprintf(f, "%s", !(n && n->up) ? "*" : n->partitioned ? "~" : "");
    }
    fputc('\n', f);
  }
  free(ix);
}

static volatile sig_atomic_t stop;
static void on_int(int sig)
{
  (void)sig;
  stop = 1;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog status [--json] [--watch] [--volume NAME] [--dir DIR | --coord ADDR]\n"
    "\n"
    "Show the volume, its protection groups with each segment's SCL, and\n"
    "which nodes are up, as the coordinator sees them.\n"
    "\n"
    "  --json         one JSON object (the fields labs and checks read)\n"
    "  --watch        redraw about once a second until Ctrl-C\n"
    "  --volume NAME  volume to show (default main)\n"
    "  --dir DIR      the cluster in DIR (its cluster.json names the coordinator;\n"
    "                 default $AURALOG_DIR or ~/.auralog)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD, or the cluster's, or %s)\n",
    COORD_ADDR_DEFAULT);
}

int status_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"json", no_argument, 0, 'j'}, {"watch", no_argument, 0, 'w'},
    {"volume", required_argument, 0, 'v'}, {"coord", required_argument, 0, 'c'},
    {"dir", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0}};
  int json = 0, watch = 0, o;
  const char *volume = "main", *coord = NULL;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'j': json = 1; break;
    case 'w': watch = 1; break;
    case 'v': volume = optarg; break;
    case 'c': coord = optarg; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("status: unexpected argument '%s' (see auralog status --help)", argv[optind]);
  if (!wire_name_ok(volume))
    die("status: '%s' is not a volume name", volume);
  coord = addr_coord(coord);
  signal(SIGINT, on_int);
  signal(SIGTERM, on_int);
  for (;;) {
    char why[320];
    Env *rep = status_fetch(coord, volume, why, sizeof why);
    if (rep == NULL && !watch)
      die("status: %s%s", why,
          rpc_key_trouble(why) ? "" : " (is the cluster up? try: auralog cluster up)");
    if (watch && !json)
      fputs("\033[H\033[2J", stdout);
    if (rep == NULL) {
      printf("%s\n", why);
    } else if (json) {
      char *s = status_json(rep->status);
      puts(s);
      free(s);
    } else {
      status_table(rep->status, stdout);
    }
    wire_free(rep);
    fflush(stdout);
    if (!watch)
      return 0;
    for (int i = 0; i < 10 && !stop; i++)
      usleep(100000);
    if (stop)
      return 0;
  }
}
