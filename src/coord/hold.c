/*
 * hold.c: what the PGMRPL holds back on storage (paper §4.2.3; seed 004).
 *
 * Node GC frees a segment's records and old page versions only up to the
 * PGMRPL, the oldest read point of the writer and every read replica
 * (vfs/feed.c). While one reader holds it (a read transaction open on a
 * replica: vfs/rvol.h, the read-age rule), every segment of every PG
 * keeps every record written since and the versions coalesced from them:
 * storage grows on all six copies, for the whole volume.
 *
 * The coordinator sees both halves: the engine reports the PGMRPL
 * (EngineStat, every ENGINE_STAT_MS) and the nodes report each segment's
 * records, page versions and bytes (heartbeats). So here, whenever a
 * report brings a PGMRPL other than the last one, the volume's totals are
 * noted; status (Status fields 8-11) then says how long the PGMRPL has
 * stood still and the totals when it last moved, and status.c prints the
 * growth since. Under a moving PGMRPL the note is renewed every report
 * and the growth stays near zero; a held one shows what it costs.
 *
 * Interface (coord.h): hold_note(co, i) after engines[i] took a report;
 * hold_status(co, i, st, now) fills a Status. The totals are as of the
 * nodes' last heartbeats (HEARTBEAT_MS; a node that is down counts what
 * it last reported).
 */
#include "coord/coord.h"

/* The volume's segments' totals, over every node's last heartbeat. */
static void totals(const struct coord *co, uint64_t vol_id, uint64_t *recs, uint64_t *vers,
                   uint64_t *bytes)
{
  *recs = *vers = *bytes = 0;
  for (size_t i = 0; i < co->nnodes; i++) {
    const struct cnode *n = co->nodes[i];
    for (size_t j = 0; j < n->nstats; j++) {
      if (n->stats[j].volume_id != vol_id)
        continue;
      *recs += n->stats[j].records;
      *vers += n->stats[j].images;
      *bytes += n->stats[j].bytes;
    }
  }
}

void hold_note(struct coord *co, size_t i)
{
  struct ereport *r = &co->engines[i];
  if (r->st == NULL || (r->hold_at && r->st->pgmrpl == r->hold_pgmrpl))
    return;
  r->hold_pgmrpl = r->st->pgmrpl;
  r->hold_at = io_now(co->io);
  totals(co, co->vols[i]->id, &r->hold_recs, &r->hold_vers, &r->hold_bytes);
}

void hold_status(const struct coord *co, size_t i, Auralog__Status *st,
                 unsigned long long now)
{
  const struct ereport *r = &co->engines[i];
  if (r->st == NULL || r->hold_at == 0)
    return;
  st->pgmrpl_still_ms = now > r->hold_at ? now - r->hold_at : 0;
  st->pgmrpl_records = r->hold_recs;
  st->pgmrpl_versions = r->hold_vers;
  st->pgmrpl_bytes = r->hold_bytes;
}
