/*
 * coord.c: the coordinator's core (paper §5, control plane; the struct and
 * events are in coord.h). No I/O of its own: it answers through co->io
 * (io.h); coord/main.c runs it on libuv, the simulator with the rest.
 *
 * Keeps the volume metadata (volumes, their protection groups and where
 * each PG's six segments live) and the nodes (id, AZ, address) in lmdb
 * (coord/meta.c), and in memory who is up: a node registers when it
 * connects and heartbeats every HEARTBEAT_MS with the SCL of each of its
 * segments; a node silent for NODE_DOWN_MS, or whose connection closed, is
 * shown down.
 *
 * Requests:
 *   Register    (node)   -> Assign: the segments this node hosts
 *   Heartbeat   (node)   -> nothing; refreshes liveness, SCLs and counters
 *   OpenVolume  (any)    -> Volume; creates it if asked; a writer (the
 *                           operator's engine, or the replica promoted:
 *                           roles.c) gets a new epoch
 *   GrowVolume  (engine) -> Volume with at least npgs PGs; refused, with
 *                           nothing changed, if it would add more than
 *                           GROW_MAX_PGS_PER_REQUEST (OpenVolume's create
 *                           makes one PG, always)
 *   EngineStat  (engine) -> nothing; its VDL, VCL, LSNs and counters for status
 *   NodeCmd     (operator) -> NodeCmd: drain or replace a node (coord/member.c)
 *   Volume      (engine) -> Volume: the volume's header as stored now, and the
 *                           PGs whose membership changed since the writer's mseq,
 *                           with its current epoch: the writer's read lease
 *                           probe (vfs/lease.h). Our epoch renews its lease,
 *                           a newer one fences it
 *   DropVolume  (operator) -> Ok; forgets the volume (roles.c: never under a
 *                           live writer)
 *   Fault       (operator) -> Ok; partitions an AZ, heals, slows a node: the
 *                           coordinator tells the nodes (NodeFaults), which
 *                           play the fault themselves
 *   StatusReq   (CLI)    -> Status: the volume, the nodes, per-segment SCLs
 * When placement gives a node new segments, the coordinator pushes an
 * Assign down that node's connection at once.
 *
 * Beside the protobuf listener, a browser's: the live dashboard
 * (coord/http.c, --http) serves a page and /status.json, the same Status
 * as StatusReq's, as the JSON of `auralog status --json`; both are built
 * in coord/cstatus.c.
 *
 * Placement decisions are made by coord/placement.c (pure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/binlogc.h"
#include "coord/coord.h"
#include "coord/memberc.h"
#include "coord/placement.h"
#include "record.h"
#include "lib/log.h"
#include "param.h"

struct cnode *coord_node_find(struct coord *co, const char *id)
{
  for (size_t i = 0; i < co->nnodes; i++)
    if (strcmp(co->nodes[i]->info->id, id) == 0)
      return co->nodes[i];
  return NULL;
}

void coord_node_add(void *arg, Auralog__NodeInfo *info)
{
  struct coord *co = arg;
  struct cnode *n = calloc(1, sizeof *n);
  n->info = info;
  n->info->up = 0;
  /* Keep the table sorted by id, so status lists A1 A2 B1 ... */
  co->nodes = realloc(co->nodes, (co->nnodes + 1) * sizeof *co->nodes);
  size_t i = co->nnodes++;
  for (; i > 0 && strcmp(co->nodes[i - 1]->info->id, info->id) > 0; i--)
    co->nodes[i] = co->nodes[i - 1];
  co->nodes[i] = n;
}

Auralog__Volume **coord_vol_slot(struct coord *co, const char *name)
{
  for (size_t i = 0; i < co->nvols; i++)
    if (strcmp(co->vols[i]->name, name) == 0)
      return &co->vols[i];
  return NULL;
}

void coord_vol_add(void *arg, Auralog__Volume *v)
{
  struct coord *co = arg;
  co->vols = realloc(co->vols, (co->nvols + 1) * sizeof *co->vols);
  co->engines = realloc(co->engines, (co->nvols + 1) * sizeof *co->engines);
  co->engines[co->nvols] = (struct ereport){NULL, 0};
  co->vols[co->nvols++] = v;
}

static void set_up(struct coord *co, struct cnode *n, int up, const char *why)
{
  if (n->info->up != up) {
    loginfo("node %s (AZ %s) %s%s%s", n->info->id, n->info->az, up ? "up" : "down",
            why ? ": " : "", why ? why : "");
    jn_sample_all(co);
    jn_event(co, "node", "\"node\":\"%s\",\"az\":\"%s\",\"up\":%s,\"why\":\"%s\"",
             n->info->id, n->info->az, up ? "true" : "false", why ? why : "heartbeat");
  }
  n->info->up = up;
}

/* ---- assignments --------------------------------------------------------- */

/* Send node n every segment it hosts (current and next, each with its
 * PG's mepoch and mepoch_min: member.c keeps them on every segment), and
 * every segment of those PGs (its gossip peers), and every volume we know:
 * a segment of one of them it holds and this omits, it drops (M6). */
void coord_send_assign(struct coord *co, struct cnode *n, uint64_t req)
{
  if (n->conn == NULL)
    return;
  size_t cap = 16, cnt = 0, pcap = 16, pcnt = 0;
  Auralog__Segment **segs = malloc(cap * sizeof *segs);
  Auralog__Segment **peers = malloc(pcap * sizeof *peers);
  for (size_t v = 0; v < co->nvols; v++)
    for (size_t p = 0; p < coord_vol_npgs_all(co->vols[v]); p++) {
      Auralog__Pg *pg = coord_vol_pg_at(co->vols[v], p);
      int mine = 0;
      for (size_t s = 0; s < pg->n_segments; s++) {
        if (strcmp(pg->segments[s]->node, n->info->id) != 0)
          continue;
        mine = 1;
        if (cnt == cap)
          segs = realloc(segs, (cap *= 2) * sizeof *segs);
        segs[cnt++] = pg->segments[s];
      }
      for (size_t s = 0; mine && s < pg->n_segments; s++) {
        if (pcnt == pcap)
          peers = realloc(peers, (pcap *= 2) * sizeof *peers);
        peers[pcnt++] = pg->segments[s];
      }
    }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Assign as = AURALOG__ASSIGN__INIT;
  as.segments = segs;
  as.n_segments = cnt;
  as.peers = peers;
  as.n_peers = pcnt;
  as.coord_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, co->signer.pk};
  uint64_t *vids = malloc((co->nvols + 1) * sizeof *vids);
  for (size_t v = 0; v < co->nvols; v++)
    vids[v] = co->vols[v]->id;
  as.volumes = vids;
  as.n_volumes = co->nvols;
  blc_assign_fill(co, &as);    /* the binlog keep points (binlogc.c) */
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_ASSIGN;
  env.assign = &as;
  io_send(co->io, n->conn, &env);
  blc_assign_done(&as);
  free(segs);
  free(peers);
  free(vids);
}

/* Tell node n which faults to play (lab partitions, slow nodes, stale
 * pages, gossip off), and drop: Appends it must lose from now on (a
 * one-shot, not a state: 0 leaves the node's count alone). */
static void send_faults(struct coord *co, struct cnode *n, uint32_t drop)
{
  if (n->conn == NULL)
    return;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__NodeFaults nf = AURALOG__NODE_FAULTS__INIT;
  nf.partitioned = n->info->partitioned;
  nf.slow_ms = n->info->slow_ms;
  nf.stale = n->info->stale;
  nf.no_gossip = n->info->no_gossip;
  nf.drop = drop;
  env.body_case = AURALOG__ENVELOPE__BODY_NODE_FAULTS;
  env.node_faults = &nf;
  io_send(co->io, n->conn, &env);
}

/* ---- volumes ------------------------------------------------------------- */

/* Store tmp as the volume in *slot (or as a new volume if slot is NULL). */
Auralog__Volume *coord_vol_store(struct coord *co, Auralog__Volume **slot,
                                 const Auralog__Volume *tmp, char *why, size_t whylen)
{
  Auralog__Volume *v = meta_put_volume(&co->meta, tmp, why, whylen);
  if (v == NULL)
    return NULL;
  if (slot) {
    auralog__volume__free_unpacked(*slot, NULL);
    *slot = v;
  } else {
    coord_vol_add(co, v);
  }
  return v;
}

/* Make the volume described by base (an existing volume, or a new empty
 * one) npgs PGs long, store it, and tell the nodes. */
static Auralog__Volume *vol_grow(struct coord *co, Auralog__Volume **slot,
                                 const Auralog__Volume *base, uint32_t npgs,
                                 char *why, size_t whylen)
{
  size_t old = base->n_pgs, add = npgs > old ? npgs - old : 0;
  Auralog__Volume tmp = *base;
  Auralog__Pg **pgs = calloc(old + add + 1, sizeof *pgs);
  Auralog__Pg *newpgs = calloc(add + 1, sizeof *newpgs);
  Auralog__Segment *newsegs = calloc(add * NCOPIES + 1, sizeof *newsegs);
  Auralog__Segment **segptrs = calloc(add * NCOPIES + 1, sizeof *segptrs);
  struct pnode *pn = calloc(co->nnodes + 1, sizeof *pn);
  Auralog__Volume *out = NULL;
  if (old)
    memcpy(pgs, base->pgs, old * sizeof *pgs);

  /* How loaded is each node? Count the segments it hosts already. */
  for (size_t i = 0; i < co->nnodes; i++) {
    pn[i].id = co->nodes[i]->info->id;
    pn[i].az = co->nodes[i]->info->az[0];
    pn[i].up = co->nodes[i]->info->up;
    pn[i].out = co->nodes[i]->info->state[0] != 0;   /* draining, retired: none for them */
    for (size_t v = 0; v < co->nvols; v++)
      for (size_t p = 0; p < coord_vol_npgs_all(co->vols[v]); p++) {
        const Auralog__Pg *q = coord_vol_pg_at(co->vols[v], p);
        for (size_t s = 0; s < q->n_segments; s++)
          pn[i].nsegs += strcmp(q->segments[s]->node, pn[i].id) == 0;
      }
  }
  for (size_t k = 0; k < add; k++) {
    size_t pick[NCOPIES];
    if (place_pg(pn, co->nnodes, pick, why, whylen) != 0)
      goto done;
    Auralog__Pg *pg = &newpgs[k];
    auralog__pg__init(pg);
    pg->pg = (uint32_t)(old + k);
    pg->first_page = pg->pg * base->pg_pages;
    pg->npages = base->pg_pages;
    pg->segments = &segptrs[k * NCOPIES];
    pg->n_segments = NCOPIES;
    for (int j = 0; j < NCOPIES; j++) {
      Auralog__Segment *s = &newsegs[k * NCOPIES + j];
      struct cnode *n = co->nodes[pick[j]];
      auralog__segment__init(s);
      s->volume_id = base->id;
      s->pg = pg->pg;
      s->first_page = pg->first_page;
      s->npages = pg->npages;
      s->page_size = base->page_size;
      s->node = n->info->id;
      s->az = n->info->az;
      s->addr = n->info->addr;
      s->pos = (uint32_t)j;      /* member.h: position j, its current segment */
      segptrs[k * NCOPIES + j] = s;
      pn[pick[j]].nsegs++;
    }
    pgs[old + k] = pg;
  }
  tmp.pgs = pgs;
  tmp.n_pgs = old + add;
  out = coord_vol_store(co, slot, &tmp, why, whylen);
  if (out && add) {
    loginfo("volume %s: now %zu protection group%s", out->name, out->n_pgs,
            out->n_pgs == 1 ? "" : "s");
    for (size_t i = 0; i < co->nnodes; i++)
      coord_send_assign(co, co->nodes[i], 0);
  }
done:
  free(pgs);
  free(newpgs);
  free(newsegs);
  free(segptrs);
  free(pn);
  return out;
}

static void reply_volume(struct coord *co, struct ep *c, uint64_t req, Auralog__Volume *v)
{
  Env env = AURALOG__ENVELOPE__INIT;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_VOLUME;
  env.volume = v;
  io_send(co->io, c, &env);
}

static void on_open_volume(struct coord *co, struct ep *c, const Env *env)
{
  uint64_t req = env->req;
  const Auralog__OpenVolume *ov = env->open_volume;
  char why[256];
  Auralog__Volume **slot = coord_vol_slot(co, ov->name), *v;
  if (ov->writer && ov->writer_pk.len != AUTH_PK_BYTES) {
    io_error(co->io, c, req, ERR_BAD_MSG, "a writer must name its public key");
    return;
  }
  if (slot == NULL) {
    if (!coord_create_ok(co, c, req, ov))
      return;
    Auralog__Volume base = AURALOG__VOLUME__INIT;
    base.name = ov->name;
    base.page_size = ov->page_size ? ov->page_size : PAGE_SIZE_DEFAULT;
    base.pg_pages = ov->pg_pages ? ov->pg_pages : PG_PAGES;   /* the PG size, for good */
    base.epoch = ov->writer ? 1 : 0;
    base.writer = ov->writer ? ov->addr : "";
    if (ov->writer)
      base.writer_pk = ov->writer_pk;
    if ((base.id = meta_next_volume_id(&co->meta, why, sizeof why)) == 0 ||
        (v = vol_grow(co, NULL, &base, 1, why, sizeof why)) == NULL) {
      io_error(co->io, c, req, ERR_UNAVAILABLE, why);
      return;
    }
    loginfo("volume %s created (id %llu, page size %u, %u pages per PG)", v->name,
            (unsigned long long)v->id, v->page_size, v->pg_pages);
    if (ov->writer)            /* its first writer: epoch 1, in the history too */
      jn_event(co, "epoch", "\"volume\":\"%s\",\"epoch\":%llu,\"writer\":\"%s\","
               "\"promotion\":false", v->name, (unsigned long long)v->epoch, v->writer);
  } else if (ov->writer) {
    /* A new writer: a new epoch, durable before anyone hears of it, so no
     * two writers ever hold the same one (§4.3); with its address, so that
     * clients find it (failover.c F1: a promotion's open is conditional). */
    int rc = fo_open_check(co, *slot, ov, ov->if_epoch && coord_key_proved(co, c, env), why,
                           sizeof why);
    if (rc != 0) {
      logwarn("%s", why);
      io_error(co->io, c, req, rc == -2 ? ERR_AUTH : ERR_STALE_EPOCH, why);
      return;
    }
    Auralog__Volume tmp = **slot;
    tmp.epoch++;
    tmp.writer = ov->addr;
    tmp.writer_pk = ov->writer_pk;   /* roles.c R4: its probes are signed with it */
    if ((v = coord_vol_store(co, slot, &tmp, why, sizeof why)) == NULL) {
      io_error(co->io, c, req, ERR_INTERNAL, why);
      return;
    }
    loginfo("volume %s: writer epoch %llu", v->name, (unsigned long long)v->epoch);
    jn_event(co, "epoch", "\"volume\":\"%s\",\"epoch\":%llu,\"writer\":\"%s\",\"promotion\":%s",
             v->name, (unsigned long long)v->epoch, v->writer, ov->if_epoch ? "true" : "false");
  } else {
    v = *slot;
  }
  if (!ov->writer) {
    reply_volume(co, c, req, v);
    return;
  }
  /* `engine --binlog enhanced`: the volume's binlog PG, placed before the
   * writer hears of the volume (cbinlog.c). */
  if (ov->binlog && v->binlog == NULL) {
    Auralog__Volume **vs = coord_vol_slot(co, ov->name);
    if ((v = coord_binlog_place(co, vs, why, sizeof why)) == NULL) {
      io_error(co->io, c, req, ERR_UNAVAILABLE, why);
      return;
    }
  }
  /* The writer's ticket: our signature on (volume, epoch, its key), which
   * every segment asks for before it takes the new epoch (auth.h). */
  Auralog__EpochTicket tk = AURALOG__EPOCH_TICKET__INIT;
  uint8_t sig[AUTH_SIG_BYTES];
  auth_ticket_sign(&co->signer, v->id, v->epoch, ov->writer_pk.data, sig);
  tk.epoch = v->epoch;
  tk.writer_pk = ov->writer_pk;
  tk.sig = (ProtobufCBinaryData){sizeof sig, sig};
  Auralog__Volume r = *v;
  r.ticket = &tk;
  /* failover.c F3: a promotion (conditional open) waits out the previous
   * writer's lease; a restart in place does not (as before failover). */
  uint32_t left = fo_opened(co, v);
  r.lease_left_ms = ov->if_epoch ? left : 0;
  reply_volume(co, c, req, &r);
}

static void on_grow_volume(struct coord *co, struct ep *c, uint64_t req,
                           const Auralog__GrowVolume *g)
{
  char why[256];
  Auralog__Volume **slot = coord_vol_slot(co, g->name), *v;
  if (slot == NULL) {
    snprintf(why, sizeof why, "no volume '%s'", g->name);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return;
  }
  /* One request adds a bounded number of PGs (param.h): placing and
   * assigning thousands of segments at once swamps every node. */
  size_t have = (*slot)->n_pgs;
  if (g->npgs > have && g->npgs - have > GROW_MAX_PGS_PER_REQUEST) {
    snprintf(why, sizeof why, "volume growth of %zu PGs refused: at most %d per request "
             "(volume '%s' has %zu, %u asked)", g->npgs - have, GROW_MAX_PGS_PER_REQUEST,
             g->name, have, g->npgs);
    logwarn_rl("%s", why);
    io_error(co->io, c, req, ERR_OUT_OF_RANGE, why);
    return;
  }
  if ((v = vol_grow(co, slot, *slot, g->npgs, why, sizeof why)) == NULL) {
    io_error(co->io, c, req, ERR_UNAVAILABLE, why);
    return;
  }
  reply_volume(co, c, req, v);
}

/* A writer's lease probe (vfs/lease.h): the volume it names, as stored now.
 * Only the header: id, name, geometry and the current epoch, which is
 * durable before anyone hears of it (on_open_volume), so an answer with
 * the writer's own epoch proves no newer writer existed when it was sent.
 * Answered at once, whatever else the coordinator does: a late answer
 * only shortens the lease. */
static void on_lease_probe(struct coord *co, struct ep *c, const Env *env)
{
  uint64_t req = env->req;
  const Auralog__Volume *probe = env->volume;
  char why[256];
  Auralog__Volume **slot = coord_vol_slot(co, probe->name);
  if (slot == NULL) {
    snprintf(why, sizeof why, "no volume '%s'", probe->name);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return;
  }
  Auralog__Volume h = AURALOG__VOLUME__INIT;
  h.id = (*slot)->id;
  h.name = (*slot)->name;
  h.page_size = (*slot)->page_size;
  h.pg_pages = (*slot)->pg_pages;
  h.epoch = (*slot)->epoch;
  h.writer = (*slot)->writer;
  h.writer_pk = (*slot)->writer_pk;
  /* The writer is alive (failover.c), if it is the writer that says so
   * (roles.c R4). */
  int writer = coord_writer(co, c, env, *slot, probe->epoch);
  if (writer)
    fo_probe(co, *slot, probe->epoch);
  if (probe->epoch && probe->epoch < (*slot)->epoch)
    jn_fenced(co, *slot, probe->writer ? probe->writer : "", probe->epoch);
  /* Membership (member.h M4): the writer's adoption reports, and the PGs
   * changed since the mseq it applied. */
  member_probe(co, (size_t)(slot - co->vols), probe, writer, &h);
  reply_volume(co, c, req, &h);
  free(h.pgs);
}

/* ---- nodes --------------------------------------------------------------- */

static void on_register(struct coord *co, struct ep *c, uint64_t req,
                        const Auralog__Register *r)
{
  char why[256];
  struct cnode *n = coord_node_find(co, r->id);
  /* A node is the key in its data directory (auth.h): the first key an id
   * registers with is its, and only that key may register it again, at
   * any address. So no one, member or not, can move a node away. */
  if (!auth_id_ok(r->id_pk.data, r->id_pk.len, r->id, r->az, r->addr, r->id_sig.data,
                  r->id_sig.len)) {
    snprintf(why, sizeof why, "registration of node %s is not signed by its identity key: "
             "refused", r->id);
    io_error(co->io, c, req, ERR_AUTH, why);
    co->io->close(co->io->ctx, c);
    return;
  }
  if (n && n->info->id_pk.len == AUTH_PK_BYTES &&
      memcmp(n->info->id_pk.data, r->id_pk.data, AUTH_PK_BYTES) != 0) {
    snprintf(why, sizeof why, "node %s is registered with another data directory's identity: "
             "refused (a node's data directory is the node)", r->id);
    io_error(co->io, c, req, ERR_AUTH, why);
    co->io->close(co->io->ctx, c);
    return;
  }
  if (n && strcmp(n->info->az, r->az) != 0) {
    snprintf(why, sizeof why, "node %s is registered in AZ %s, not %s",
             r->id, n->info->az, r->az);
    io_error(co->io, c, req, ERR_BAD_MSG, why);
    co->io->close(co->io->ctx, c);
    return;
  }
  if (n == NULL || strcmp(n->info->addr, r->addr) != 0 || n->info->id_pk.len == 0) {
    Auralog__NodeInfo info = AURALOG__NODE_INFO__INIT;
    info.id = r->id;
    info.az = r->az;
    info.addr = r->addr;
    info.id_pk = r->id_pk;
    info.state = n ? n->info->state : "";   /* a drained node stays out (member.c) */
    if (meta_put_node(&co->meta, &info, why, sizeof why) != 0) {
      io_error(co->io, c, req, ERR_INTERNAL, why);
      return;
    }
    uint8_t buf[512];
    size_t len = auralog__node_info__pack(&info, buf);
    Auralog__NodeInfo *copy = auralog__node_info__unpack(NULL, len, buf);
    if (n) {
      copy->partitioned = n->info->partitioned;
      copy->slow_ms = n->info->slow_ms;
      copy->stale = n->info->stale;
      copy->no_gossip = n->info->no_gossip;
      auralog__node_info__free_unpacked(n->info, NULL);
      n->info = copy;
    } else {
      coord_node_add(co, copy);
      n = coord_node_find(co, copy->id);
    }
    member_follow_node(co, n->info->id, n->info->addr);
  }
  n->conn = c;                /* a newer connection of the same node wins */
  n->last_seen = io_now(co->io);
  set_up(co, n, 1, "registered");
  coord_send_assign(co, n, req);
  send_faults(co, n, 0);
}

static struct cnode *node_of(struct coord *co, struct ep *c)
{
  for (size_t i = 0; i < co->nnodes; i++)
    if (co->nodes[i]->conn == c)
      return co->nodes[i];
  return NULL;
}

static void on_heartbeat(struct coord *co, struct ep *c, const Auralog__Heartbeat *hb)
{
  struct cnode *n = node_of(co, c);
  if (n == NULL || strcmp(n->info->id, hb->id) != 0)
    return;                 /* heartbeat before Register: ignore */
  n->last_seen = io_now(co->io);
  set_up(co, n, 1, NULL);
  coord_merge_stats(n, hb);
  member_check_node(co, n, hb);   /* an Assign it lost (M5, M6) */
  /* The latest counters win: they are cumulative (since the node started). */
  n->info->commits = hb->commits;
  n->info->fsyncs = hb->fsyncs;
  n->info->persist_us = hb->persist_us;
  n->info->gossip_bytes = hb->gossip_bytes;
  n->info->gossip_msgs = hb->gossip_msgs;
  n->info->net_bytes_in = hb->net_bytes_in;
  n->info->net_msgs_in = hb->net_msgs_in;
  n->info->net_bytes_out = hb->net_bytes_out;
  n->info->net_msgs_out = hb->net_msgs_out;
  n->info->coord_bytes = hb->coord_bytes;
  n->info->coord_msgs = hb->coord_msgs;
  n->info->coalesced = hb->coalesced;
  n->info->partitions = hb->partitions;
  n->info->started_ms = hb->started_ms;
  n->info->gc_records = hb->gc_records;
  n->info->gc_images = hb->gc_images;
  n->info->scrubbed = hb->scrubbed;
  n->info->damage_found = hb->damage_found;
  n->info->repaired = hb->repaired;
  n->info->max_apply = hb->max_apply;
}

void coord_tick(struct coord *co)
{
  unsigned long long now = io_now(co->io);
  for (size_t i = 0; i < co->nnodes; i++) {
    struct cnode *n = co->nodes[i];
    if (n->info->up && now - n->last_seen > NODE_DOWN_MS)
      set_up(co, n, 0, "no heartbeat");
  }
  member_tick(co);
  fo_tick(co);
  jn_tick(co);
  blc_tick(co);
}

/* ---- lab faults ---------------------------------------------------------- */

void coord_reply_ok(struct coord *co, struct ep *c, uint64_t req)
{
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Ok ok = AURALOG__OK__INIT;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_OK;
  env.ok = &ok;
  io_send(co->io, c, &env);
}

static void on_fault(struct coord *co, struct ep *c, uint64_t req, const Auralog__Fault *f)
{
  char why[160];
  int hit = 0;
  /* What the CLI did itself (a kill, a start) or a lab mark: the journal's. */
  if (jn_fault_note(co, f)) {
    flog_note(co, f);
    coord_reply_ok(co, c, req);
    return;
  }
  for (size_t i = 0; i < co->nnodes; i++) {
    Auralog__NodeInfo *in = co->nodes[i]->info;
    int was_p = in->partitioned;
    uint32_t was_s = in->slow_ms;
    int was_st = in->stale, was_g = in->no_gossip;
    uint32_t drop = 0;
    if (!strcmp(f->action, "partition") && !strcmp(in->az, f->az))
      in->partitioned = 1;
    else if (!strcmp(f->action, "heal"))
      in->partitioned = 0;
    else if (!strcmp(f->action, "slow") && !strcmp(in->id, f->node))
      in->slow_ms = f->ms;
    else if (!strcmp(f->action, "stale") && !strcmp(in->id, f->node))
      in->stale = f->ms != 0;
    else if (!strcmp(f->action, "gossip") && !strcmp(in->id, f->node))
      in->no_gossip = f->ms == 0;
    else if (!strcmp(f->action, "drop") && !strcmp(in->id, f->node))
      drop = f->ms;
    else
      continue;
    hit++;
    if (in->partitioned != was_p || in->slow_ms != was_s || in->stale != was_st ||
        in->no_gossip != was_g || drop) {
      loginfo("node %s: %s%s%s%s", in->id, in->partitioned ? "partitioned" : "not partitioned",
              in->slow_ms ? ", slow" : "", in->stale ? ", serves stale pages" : "",
              in->no_gossip ? ", gossip off" : "");
      if (drop)
        loginfo("node %s: loses the next %u Appends", in->id, drop);
      send_faults(co, co->nodes[i], drop);
    }
  }
  if (hit) {
    jn_sample_all(co);
    flog_note(co, f);
  }
  if (hit)
    jn_event(co, "fault", "\"action\":\"%s\",\"az\":\"%s\",\"node\":\"%s\",\"n\":%u",
             f->action, f->az, f->node, f->ms);
  if (hit == 0 && strcmp(f->action, "heal") != 0) {
    snprintf(why, sizeof why, "no such node%s %s", f->node[0] ? "" : "s in AZ",
             f->node[0] ? f->node : f->az);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return;
  }
  coord_reply_ok(co, c, req);
}

/* ---- engines ------------------------------------------------------------- */

static void on_engine_stat(struct coord *co, struct ep *c, const Env *env)
{
  const Auralog__EngineStat *es = env->engine_stat;
  char why[256];
  Auralog__Volume **slot = coord_vol_slot(co, es->volume);
  if (slot == NULL)
    return;
  struct ereport *r = &co->engines[slot - co->vols];
  if (es->epoch == (*slot)->epoch && !coord_writer(co, c, env, *slot, es->epoch)) {
    logwarn_rl("volume %s: a report of epoch %llu from %s not signed by that epoch's writer: "
               "ignored", es->volume, (unsigned long long)es->epoch, es->addr);
    return;                 /* roles.c R4: not the writer's word (nor the journal's) */
  }
  if (es->recovering && es->recovering[0]) {
    /* A recovery's progress (vfs/rcvround.c rule W): for status only; it is no
     * report of a serving writer, and the journal keeps none. */
    if (es->epoch == (*slot)->epoch) {
      snprintf(r->recovering, sizeof r->recovering, "%s", es->recovering);
      r->rec_epoch = es->epoch;
      r->rec_at = io_now(co->io);
    }
    return;
  }
  jn_engine(co, *slot, es);
  if (es->data_loss && es->data_loss[0] && es->epoch == (*slot)->epoch) {
    /* A data-loss alarm (vfs/open.c): that engine refused to open and is
     * gone; it is no report of a running writer, and no replica is
     * promoted into the same alarm (failover.c). */
    fo_dataloss(co, *slot, es->data_loss);
    return;
  }
  if (es->epoch < (*slot)->epoch && es->epoch > 0) {
    /* A fenced engine still running: status names it (its stats are not
     * the volume's). The newest report first; one line per address. */
    size_t k = 0;
    while (k < FENCED_SHOWN - 1 && r->fenced[k].addr[0] && strcmp(r->fenced[k].addr, es->addr))
      k++;
    memmove(&r->fenced[1], &r->fenced[0], k * sizeof r->fenced[0]);
    snprintf(r->fenced[0].addr, sizeof r->fenced[0].addr, "%s", es->addr);
    r->fenced[0].epoch = es->epoch;
    r->fenced[0].at = io_now(co->io);
    return;
  }
  if (es->epoch != (*slot)->epoch)
    return;                 /* an epoch never issued: not the writer's */

  r->recovering[0] = 0;     /* it serves */
  for (size_t k = 0; k < FENCED_SHOWN; k++)   /* it runs again as the writer */
    if (strcmp(r->fenced[k].addr, es->addr) == 0)
      r->fenced[k].addr[0] = 0;
  /* Keep a copy: the envelope is freed after this call. */
  size_t len = auralog__engine_stat__get_packed_size(es);
  uint8_t *buf = malloc(len + 1);
  auralog__engine_stat__pack(es, buf);
  if (r->st)
    auralog__engine_stat__free_unpacked(r->st, NULL);
  r->st = auralog__engine_stat__unpack(NULL, len, buf);
  r->at = io_now(co->io);
  free(buf);
  hold_note(co, (size_t)(slot - co->vols));
  /* A recovery's truncation belongs to the volume's history: keep it. */
  const Auralog__TruncRange *t = es->trunc;
  if (t == NULL || t->to <= t->from)
    return;
  Auralog__Volume *v = *slot;
  /* Only a truncation its writer signed, under a ticket we issued: a
   * report is not the writer's word for it (auth.h). */
  struct trunc_proof p;
  trunc_proof_from_pb(&p, t);
  if (!p.have ||
      !auth_ticket_ok(co->signer.pk, v->id, t->epoch, p.writer_pk, sizeof p.writer_pk,
                      p.ticket_sig, sizeof p.ticket_sig) ||
      !auth_trunc_ok(p.writer_pk, sizeof p.writer_pk, v->id, t->epoch, t->from, t->to, p.sig,
                     sizeof p.sig)) {
    logwarn("volume %s: a report's truncation (%llu, %llu] is not signed by the writer of "
            "epoch %llu: ignored", es->volume, (unsigned long long)t->from,
            (unsigned long long)t->to, (unsigned long long)t->epoch);
    return;
  }
  for (size_t i = 0; i < v->n_truncs; i++)
    if (v->truncs[i]->epoch == t->epoch)
      return;
  Auralog__Volume tmp = *v;
  Auralog__TruncRange **tr = calloc(v->n_truncs + 1, sizeof *tr);
  if (v->n_truncs)
    memcpy(tr, v->truncs, v->n_truncs * sizeof *tr);
  tr[v->n_truncs] = (Auralog__TruncRange *)t;
  tmp.truncs = tr;
  tmp.n_truncs = v->n_truncs + 1;
  if (coord_vol_store(co, slot, &tmp, why, sizeof why) == NULL)
    logwarn_rl("%s", why);    /* every report until it is stored: rate-limited */
  else {
    loginfo("volume %s: epoch %llu truncated (%llu, %llu]", es->volume,
            (unsigned long long)t->epoch, (unsigned long long)t->from,
            (unsigned long long)t->to);
    jn_event(co, "trunc", "\"volume\":\"%s\",\"epoch\":%llu,\"from\":%llu,\"to\":%llu",
             es->volume, (unsigned long long)t->epoch, (unsigned long long)t->from,
             (unsigned long long)t->to);
  }
  free(tr);
}

/* ---- dispatch ------------------------------------------------------------ */

void coord_on_msg(struct coord *co, struct ep *c, const Env *env)
{
  if (!coord_op(co, c, env))
    return;                 /* roles.c R1, R2: refused, with the reason */
  switch (env->body_case) {
  case AURALOG__ENVELOPE__BODY_REGISTER:
    on_register(co, c, env->req, env->register_);
    break;
  case AURALOG__ENVELOPE__BODY_HEARTBEAT:
    on_heartbeat(co, c, env->heartbeat);
    break;
  case AURALOG__ENVELOPE__BODY_OPEN_VOLUME:
    on_open_volume(co, c, env);
    break;
  case AURALOG__ENVELOPE__BODY_GROW_VOLUME:
    on_grow_volume(co, c, env->req, env->grow_volume);
    break;
  case AURALOG__ENVELOPE__BODY_ENGINE_STAT:
    on_engine_stat(co, c, env);
    break;
  case AURALOG__ENVELOPE__BODY_VOLUME:
    on_lease_probe(co, c, env);
    break;
  case AURALOG__ENVELOPE__BODY_FAULT:
    on_fault(co, c, env->req, env->fault);
    break;
  case AURALOG__ENVELOPE__BODY_DROP_VOLUME:
    coord_on_drop(co, c, env->req, env->drop_volume);
    break;
  case AURALOG__ENVELOPE__BODY_STATUS_REQ:
    coord_on_status(co, c, env->req, env->status_req);
    break;
  case AURALOG__ENVELOPE__BODY_NODE_CMD:
    member_on_cmd(co, c, env->req, env->node_cmd);
    break;
  case AURALOG__ENVELOPE__BODY_BINLOG_CONSUMER:
    blc_on_consumer(co, c, env->req, env->binlog_consumer);
    break;
  case AURALOG__ENVELOPE__BODY_ERROR:
    break;                  /* never answer an error with an error */
  default:
    if (fo_on_msg(co, c, env))
      break;
    io_error(co->io, c, env->req, ERR_BAD_MSG, "the coordinator does not serve this request");
  }
}

void coord_on_down(struct coord *co, struct ep *c)
{
  struct cnode *n = node_of(co, c);
  if (n) {
    n->conn = NULL;
    set_up(co, n, 0, "connection closed");
  }
}

int coord_init(struct coord *co, const struct io *io, char *why, size_t whylen)
{
  co->io = io;
  member_init(co);
  return meta_load(&co->meta, coord_node_add, coord_vol_add, co, why, whylen);
}

void coord_free(struct coord *co)
{
  for (size_t i = 0; i < co->nnodes; i++) {
    auralog__node_info__free_unpacked(co->nodes[i]->info, NULL);
    free(co->nodes[i]->stats);
    free(co->nodes[i]);
  }
  for (size_t i = 0; i < co->nvols; i++) {
    auralog__volume__free_unpacked(co->vols[i], NULL);
    if (co->engines[i].st)
      auralog__engine_stat__free_unpacked(co->engines[i].st, NULL);
  }
  fo_free(co);
  blc_free(co);
  member_free(co);
  jn_free(co);
  flog_free(co);
  free(co->nodes);
  free(co->vols);
  free(co->engines);
}
