/*
 * status_log.c: the edge of the log as status shows it (paper §4.1, §4.3).
 *
 * The LAL window: the writer hands out LSNs only up to the VDL plus the
 * LSN allocation limit (LAL), so a storage tier that falls behind stops
 * the writer instead of letting it run away; status shows how much of the
 * window is in use. The window begins at the VDL or, if higher, at the end
 * of the truncation the writer's recovery wrote (quorum.h q_can_alloc):
 * a recovery hands out no LSN inside the range it truncated, so the next
 * one is just above it, far above the VDL, and none of that gap is in use.
 * Counted from the VDL, every recovery would look like a full window. The records above the VCL: each waits for 4 of its
 * PG's 6 segments, and status names the ones that acknowledged it, so a
 * student sees which segment (or AZ) a stalled commit waits for. Fenced
 * engines: a writer of an older epoch still running (a newer writer
 * opened the volume, §4.3) reports to the coordinator, which shows it
 * here and nowhere else (its numbers are not the volume's).
 *
 * Truncations: the volume keeps every recovery's truncation range, one
 * per epoch that recovered, for as long as it lives; the table shows the
 * newest few and how many there are (the JSON has them all).
 *
 * A writer still recovering (vfs/rcvround.c rule W) shows what it waits for:
 * "recovering", the round, the nodes owing answers, how long.
 *
 * Interface (status.h): status_log_json adds "recovering" (while so),
 * "lal_window",
 * "pending_records" and "fenced_engines" to the status object;
 * status_log_table prints the same for people; status_truncs_table the
 * truncations.
 *
 * For the pictures (the dashboard), status_recent_json adds "log_tail":
 * the engine's newest records (a few per PG, by LSN), each with the
 * segments that hold it (acknowledged it, or report an SCL at or above
 * it), so a student sees every write reach its quorum, or which segment
 * missed it; and "faults": the faults the coordinator heard of lately
 * (coord/faultlog.c), so the cause is drawn beside its effect.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/status.h"
#include "member.h"
#include "param.h"

#define TRUNCS_SHOWN 3         /* the newest truncations the table shows */

/* The segments of pg that acks names ("A1 B2 C1"), into buf. */
static const char *acked_by(const Auralog__Status *st, uint32_t pg, uint32_t acks, char *buf,
                            size_t n)
{
  const Auralog__Volume *v = st->volume;
  size_t k = 0;
  buf[0] = 0;
  for (size_t p = 0; p < v->n_pgs; p++) {
    if (v->pgs[p]->pg != pg)
      continue;
    /* acks is a slot mask (member.h): slot s < NCOPIES is segments[s],
     * slot NCOPIES + p the next segment of position p. */
    for (size_t j = 0; j < v->pgs[p]->n_segments && j < NSLOTS; j++) {
      const Auralog__Segment *seg = v->pgs[p]->segments[j];
      unsigned slot = j < NCOPIES ? (unsigned)j : NCOPIES + seg->pos;
      if (slot < 32 && (acks & (1u << slot)))
        k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "%s%s%s", k ? " " : "",
                              j < NCOPIES ? "" : ">", seg->node);
    }
  }
  return buf;
}

/* How many positions of pg count for a record with these acks (member.h
 * M1): a moving position (a next segment in the description) counts only
 * when both its segments hold it, so a next segment's ack never makes the
 * count pass 6; "4 of 6" is what the writer waits for. */
static int counted(const Auralog__Status *st, uint32_t pg, uint32_t acks)
{
  const Auralog__Volume *v = st->volume;
  uint8_t trans = 0;
  for (size_t p = 0; v && p < v->n_pgs; p++)
    if (v->pgs[p]->pg == pg)
      for (size_t j = NCOPIES; j < v->pgs[p]->n_segments && j < NSLOTS; j++)
        if (v->pgs[p]->segments[j]->pos < NCOPIES)
          trans |= (uint8_t)(1u << v->pgs[p]->segments[j]->pos);
  return member_positions((uint16_t)acks, trans);
}

/* Where the writer's LAL window begins: its VDL, or the end of the
 * truncation its recovery wrote if higher (the quorum's floor). */
static uint64_t window_base(const Auralog__EngineStat *e)
{
  uint64_t floor = e->trunc && e->trunc->to > e->trunc->from ? e->trunc->to : 0;
  return e->vdl > floor ? e->vdl : floor;
}

/* LSNs handed out inside the window (next_lsn - 1 above its base): what
 * status, viz and the dashboard all show. */
uint64_t status_lal_used(const Auralog__EngineStat *e)
{
  uint64_t base = window_base(e);
  return e->next_lsn > base + 1 ? e->next_lsn - 1 - base : 0;
}

void status_log_json(const Auralog__Status *st, cJSON *o)
{
  const Auralog__EngineStat *e = st->engine;
  if (st->recovering && st->recovering[0]) {
    cJSON_AddStringToObject(o, "recovering", st->recovering);
    cJSON_AddNumberToObject(o, "recovering_age_ms", (double)st->recovering_age_ms);
  }
  cJSON *w = cJSON_AddObjectToObject(o, "lal_window");
  cJSON_AddNumberToObject(w, "from_vdl", e ? (double)e->vdl : 0);
  cJSON_AddNumberToObject(w, "from", e ? (double)window_base(e) : 0);
  cJSON_AddNumberToObject(w, "used", e ? (double)status_lal_used(e) : 0);
  cJSON_AddNumberToObject(w, "lal", e ? (double)e->lal : 0);
  cJSON *pr = cJSON_AddArrayToObject(o, "pending_records");
  char names[256];
  for (size_t i = 0; e && i < e->n_pending_recs; i++) {
    const Auralog__PendingRec *r = e->pending_recs[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "lsn", (double)r->lsn);
    cJSON_AddNumberToObject(j, "pg", r->pg);
    cJSON_AddNumberToObject(j, "acks", counted(st, r->pg, r->acks));
    cJSON *by = cJSON_AddArrayToObject(j, "acked_by");
    acked_by(st, r->pg, r->acks, names, sizeof names);
    for (char *t = strtok(names, " "); t; t = strtok(NULL, " "))
      cJSON_AddItemToArray(by, cJSON_CreateString(t));
    cJSON_AddItemToArray(pr, j);
  }
  cJSON *fe = cJSON_AddArrayToObject(o, "fenced_engines");
  for (size_t i = 0; i < st->n_fenced; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "addr", st->fenced[i]->addr);
    cJSON_AddNumberToObject(j, "epoch", (double)st->fenced[i]->epoch);
    cJSON_AddNumberToObject(j, "age_ms", (double)st->fenced[i]->age_ms);
    cJSON_AddItemToArray(fe, j);
  }
}

void status_log_table(const Auralog__Status *st, FILE *f)
{
  const Auralog__EngineStat *e = st->engine;
  uint64_t used = e ? status_lal_used(e) : 0, base = e ? window_base(e) : 0;
  if (st->recovering && st->recovering[0])
    fprintf(f, "engine recovering the volume (epoch %llu): %s\n",
            (unsigned long long)st->volume->epoch, st->recovering);
  const char *full = !e ? "" : used >= e->lal ? ": full, the writer waits for the vdl to move"
                     : used * 10 >= e->lal * 9 ? ": nearly full, the writer will wait" : "";
  if (e && base > e->vdl)
    fprintf(f, "log    the window of %llu LSNs (LAL) starts at %llu, where the recovery's "
            "truncation ends, not at the vdl %llu: %llu handed out in it%s\n",
            (unsigned long long)e->lal, (unsigned long long)base, (unsigned long long)e->vdl,
            (unsigned long long)used, full);
  else if (used)
    fprintf(f, "log    %llu LSNs handed out above the vdl, of a window of %llu (LAL)%s\n",
            (unsigned long long)used, (unsigned long long)e->lal, full);
  char names[256];
  for (size_t i = 0; e && i < e->n_pending_recs; i++) {
    const Auralog__PendingRec *r = e->pending_recs[i];
    if (i == 0)
      fprintf(f, "       waiting for a write quorum (4 of 6)%s:\n",
              e->pending > e->n_pending_recs ? ", the oldest" : "");
    fprintf(f, "         lsn %llu  pg %u  %d positions count; acked by: %s\n",
            (unsigned long long)r->lsn, r->pg,
            counted(st, r->pg, r->acks), r->acks ? acked_by(st, r->pg, r->acks, names, sizeof names)
                                       : "none");
  }
  for (size_t i = 0; i < st->n_fenced; i++)
    fprintf(f, "fenced engine %s (epoch %llu, the volume's is %llu) still runs; its writes "
            "are refused (last heard %.1f s ago)\n", st->fenced[i]->addr,
            (unsigned long long)st->fenced[i]->epoch, (unsigned long long)st->volume->epoch,
            st->fenced[i]->age_ms / 1000.0);
}

static int tail_by_lsn(const void *a, const void *b)
{
  const Auralog__TailRec *x = *(Auralog__TailRec *const *)a, *y = *(Auralog__TailRec *const *)b;
  return x->lsn < y->lsn ? -1 : x->lsn > y->lsn;
}

void status_recent_json(const Auralog__Status *st, cJSON *o)
{
  const Auralog__EngineStat *e = st->engine;
  cJSON *lt = cJSON_AddArrayToObject(o, "log_tail");
  size_t n = e ? e->n_tail : 0;
  Auralog__TailRec **t = n ? malloc(n * sizeof *t) : NULL;
  for (size_t i = 0; i < n; i++)
    t[i] = e->tail[i];
  if (n)
    qsort(t, n, sizeof *t, tail_by_lsn);
  char names[256];
  for (size_t i = 0; i < n; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "lsn", (double)t[i]->lsn);
    cJSON_AddNumberToObject(j, "pg", t[i]->pg);
    cJSON_AddBoolToObject(j, "cpl", t[i]->cpl);
    cJSON_AddNumberToObject(j, "acks", counted(st, t[i]->pg, t[i]->acks));
    cJSON *by = cJSON_AddArrayToObject(j, "acked_by");
    acked_by(st, t[i]->pg, t[i]->acks, names, sizeof names);
    for (char *w = strtok(names, " "); w; w = strtok(NULL, " "))
      cJSON_AddItemToArray(by, cJSON_CreateString(w));
    cJSON_AddItemToArray(lt, j);
  }
  free(t);
  cJSON *fa = cJSON_AddArrayToObject(o, "faults");
  for (size_t i = 0; i < st->n_faults; i++) {
    const Auralog__FaultSeen *f = st->faults[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "seq", f->seq);
    cJSON_AddStringToObject(j, "action", f->action);
    cJSON_AddStringToObject(j, "az", f->az);
    cJSON_AddStringToObject(j, "node", f->node);
    cJSON_AddNumberToObject(j, "n", f->n);
    cJSON_AddNumberToObject(j, "age_ms", (double)f->age_ms);
    cJSON_AddItemToArray(fa, j);
  }
}

void status_truncs_table(const Auralog__Status *st, FILE *f)
{
  const Auralog__Volume *v = st->volume;
  size_t from = v->n_truncs > TRUNCS_SHOWN ? v->n_truncs - TRUNCS_SHOWN : 0;
  if (from)
    fprintf(f, "truncations: %zu, one per recovery; the last %d (status --json lists all):\n",
            v->n_truncs, TRUNCS_SHOWN);
  for (size_t i = from; i < v->n_truncs; i++)
    fprintf(f, "%struncated (%llu, %llu] by epoch %llu\n", from ? "  " : "",
            (unsigned long long)v->truncs[i]->from, (unsigned long long)v->truncs[i]->to,
            (unsigned long long)v->truncs[i]->epoch);
}
