/*
 * coord/journal.c: what the coordinator writes in the cluster's event
 * journal (journal.h is the file; labs/README.md the use). The
 * coordinator is the one process that sees the whole cluster, so it keeps
 * its history, and `auralog lab check` grades labs from it:
 *
 *   start     the coordinator started: copies, Vw, Vr, LAL
 *   node      a node went up or down (registration, heartbeats missed,
 *             its connection closed), with why
 *   fault     a lab fault the coordinator plays (partition, heal, slow,
 *             stale), or one the CLI did and told it of (az-down, node-stop,
 *             engine-crash, writer-crash ...: crash notes carry the engine's
 *             last report: the commits it had made and what was in flight),
 *             or a lab mark (lab-start N, lab-demo N, lab-demo-end N,
 *             lab-check N, lab-seal N with the hash of what a check read); a
 *             student's lab-start names them, their assignment (lab/assign.c)
 *             and each node's own partition count and start time then
 *   epoch     a writer opened the volume with a new epoch (§4.3)
 *   trunc     a recovery's truncation range, as signed by its writer
 *   engine    the writer's report (vdl, vcl, commits, records, redo bytes,
 *             pending, reads mode, dirty reads), sampled at most every
 *             JN_SAMPLE_MS while it commits
 *   dirtyread the writer (`--reads immediate`) answered reads with data
 *             above its VDL: commits not yet durable, which a crash could
 *             take away (§4.2.3 reads at the read point; lab 7); once per
 *             report that counted more, with the highest commit LSN seen;
 *   heldread  while stalled, the writer (`--reads durable`) held back
 *             replies to reads that saw commits above its VDL: they wait
 *             for it (once per report that counted more)
 *   stall     the writer holds records short of a write quorum and its VDL
 *             has not moved for JN_STALL_MS; unstall when it moves again
 *   fenced    an engine reported with an epoch older than the volume's:
 *             a writer superseded and still running (§4.3; 2018 paper)
 *   dataloss  a new writer's recovery proved a VDL below one a segment had
 *             heard: acknowledged commits are missing from every segment
 *             that answered (beyond the fault model); it truncated nothing
 *             and will not serve (vfs/open.c). Its epoch, the VDL it
 *             proved, and its one-line alarm naming the segments
 *   behind    a segment's SCL stayed below what its PG peers held
 *             JN_BEHIND_MS earlier; caughtup when it reaches them again,
 *             with the gossip its node did meanwhile (§3.3 step 4)
 *   bench     one system's result in a run of `auralog bench` that this
 *             cluster's user made (its private cluster is another one):
 *             workload, system, clients, application group size, tx/s,
 *             p50/p99 and the run's conditions (lab 10: a benchmark claim
 *             is graded from what was measured, not from what is said)
 *   hole      a segment held records above a missing one (max_lsn > scl)
 *             for JN_HOLE_MS: its SCL stops below them (§4.2.1); filled
 *             when it closed, with the gossip its node did meanwhile (§3.3
 *             step 4: its PG peers sent what the writer never resends)
 *   gc        pg 0 of each volume: the writer's PGMRPL and VDL, its
 *             segments' GC points, records and page versions, the nodes'
 *             coalesced / gc_records / gc_versions counters (§3.3 steps
 *             5-8, §4.2.3); on change only, at most every JN_SAMPLE_MS
 *   ddl       a schema change the writer committed (vfs/ddl.c): its
 *             commit's LSN, the op ("drop table"), the object, the
 *             statement; reported once the VDL covers it (lab 12 finds
 *             the moment a table was dropped here)
 *   restore   the operator's `auralog restore`: from which volume, into
 *             which new one, the target asked and the CPL restored
 *   hold, release, gc, failover   read replicas and failovers: a PGMRPL
 *             held below the VDL and let go, node GC passing it again, a
 *             promoted replica's epoch (coord/jreplica.c, which also adds
 *             the replicas' read points and lag to each engine sample)
 *
 * Everything here runs only when the driver gave a journal (co->note):
 * the simulator gives none, so its runs are unchanged. Sans-I/O: lines go
 * out through co->note; time is io_now.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"
#include "lab/assign.h"
#include "lib/kmap.h"
#include "param.h"

#define JN_SAMPLE_MS 1000      /* engine samples at most this often */
#define JN_STALL_MS  1000      /* pending and the VDL still: a stall */
#define JN_BEHIND_MS 1000      /* a segment this far behind its peers is behind */
#define JN_HOLE_MS   500       /* a hole open this long is journaled (gossip fills most sooner) */
#define JN_SCAN_MS   250       /* ... looked for this often (every segment of every volume:
                                * not at every tick, a volume may have thousands of PGs) */

struct jvol {
  char name[64];
  uint64_t epoch, vdl, vdl_at, sample_at, sample_commits, commit_at, commits, pending;
  uint64_t dirty;              /* the writer's dirty reads as of its last report */
  uint64_t held;               /* its held reads when the VDL last moved, or as last noted */
  int stalled;
  uint64_t stall_at;
  uint64_t ddl_epoch, ddl_seq;      /* the last schema change journaled: its writer's epoch, seq */
  char fenced[ADDR_MAX_LEN + 24];   /* the last fenced report noted: "addr epoch" */
  char gc_last[512];                /* the last gc sample's fields: sampled on change only */
  uint64_t fenced_epoch;            /* ... its epoch */
};

struct jpg {
  uint64_t vol;
  uint32_t pg;
  uint64_t max, ref, ref_prev, ref_at;
  int nref;
};

struct jseg {
  char node[16];
  uint64_t vol;
  uint32_t pg;
  int behind;
  uint64_t from, since, gossip;
  uint64_t from_writer, from_peers;   /* the segment's counts when it fell behind */
  /* A hole (max_lsn > scl): since when (0: none), journaled yet, the
   * SCL it held and the node's gossip count when it opened. */
  uint64_t hole_at, hole_scl, hole_gossip;
  int hole_noted;
};

struct cjn {
  struct jvol *vols;
  size_t nvols;
  struct jpg *pgs;
  size_t npgs, cap_pgs;
  struct jseg *segs;
  size_t nsegs, cap_segs;      /* both grow by doubling: a volume of thousands of PGs */
  /* (volume, pg) -> pgs[i], and (node's hash and volume, pg) -> segs[i]:
   * jn_tick looks up every segment every heartbeat, so a volume of
   * thousands of PGs must not make that quadratic. */
  struct kmap pmap, smap;
  uint64_t scanned;            /* when jn_tick last looked at the segments */
  uint64_t gc_at;              /* the last gc samples */
};

void jn_event(struct coord *co, const char *kind, const char *fmt, ...)
{
  if (co->note == NULL)
    return;
  char fields[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fields, sizeof fields, fmt, ap);
  va_end(ap);
  co->note(co->note_ctx, kind, fields);
}

static struct cjn *jn_state(struct coord *co)
{
  if (co->jn == NULL)
    co->jn = calloc(1, sizeof *co->jn);
  return co->jn;
}

static struct jvol *jvol(struct coord *co, const char *name)
{
  struct cjn *j = jn_state(co);
  for (size_t i = 0; i < j->nvols; i++)
    if (strcmp(j->vols[i].name, name) == 0)
      return &j->vols[i];
  j->vols = realloc(j->vols, (j->nvols + 1) * sizeof *j->vols);
  struct jvol *v = &j->vols[j->nvols++];
  memset(v, 0, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", name);
  return v;
}

void jn_start(struct coord *co)
{
  jn_event(co, "start", "\"copies\":%d,\"vw\":%d,\"vr\":%d,\"lal\":%d,\"nodes\":%zu,"
           "\"volumes\":%zu", NCOPIES, VW, VR, LAL, co->nnodes, co->nvols);
}

/* The nodes down now, as "A1,B2" (for a stall's context). */
static void down_list(struct coord *co, char *out, size_t n)
{
  size_t len = 0;
  out[0] = 0;
  for (size_t i = 0; i < co->nnodes && len < n; i++)
    if (!co->nodes[i]->info->up || co->nodes[i]->info->partitioned)
      len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "",
                              co->nodes[i]->info->id);
}

static void sample(struct coord *co, struct jvol *jv, const Auralog__EngineStat *es,
                   uint64_t now)
{
  char reps[200];
  jr_fields(es, reps, sizeof reps);
  jn_event(co, "engine", "\"volume\":\"%s\",\"addr\":\"%s\",\"epoch\":%llu,\"vdl\":%llu,"
           "\"vcl\":%llu,\"commits\":%llu,\"records\":%llu,\"redo_bytes\":%llu,"
           "\"pending\":%llu,\"reads\":\"%s\",\"dirty_reads\":%llu%s", es->volume, es->addr,
           (unsigned long long)es->epoch,
           (unsigned long long)es->vdl, (unsigned long long)es->vcl,
           (unsigned long long)es->commits, (unsigned long long)es->records,
           (unsigned long long)es->redo_bytes, (unsigned long long)es->pending,
           es->reads_immediate ? "immediate" : "durable", (unsigned long long)es->dirty_reads,
           reps);
  jv->sample_at = now;
  jv->sample_commits = es->commits;
}

/* Before a fault or a node's change: each writer's commits as of now, if
 * they moved since its last sample, so a lab sees which commits came
 * before and which after (samples are otherwise a second apart). */
void jn_sample_all(struct coord *co)
{
  if (co->note == NULL)
    return;
  for (size_t k = 0; k < co->nvols; k++) {
    const struct ereport *r = &co->engines[k];
    struct jvol *jv = jvol(co, co->vols[k]->name);
    if (r->st && r->st->epoch == jv->epoch && r->st->commits != jv->sample_commits)
      sample(co, jv, r->st, io_now(co->io));
  }
}

/* A writer of an older epoch still running: its report, or its read
 * lease probe (vfs/lease.h), names an epoch the volume has left. Once
 * per (address, epoch). */
void jn_fenced(struct coord *co, const Auralog__Volume *v, const char *addr, uint64_t epoch)
{
  if (co->note == NULL)
    return;
  struct jvol *jv = jvol(co, v->name);
  char who[sizeof jv->fenced];
  snprintf(who, sizeof who, "%s %llu", addr, (unsigned long long)epoch);
  /* A probe names no address, the writer's reports do: alternating, they
   * would each differ from the last; a nameless one of the epoch last
   * noted is that writer again. */
  if (strcmp(who, jv->fenced) == 0 || (!addr[0] && jv->fenced_epoch == epoch))
    return;
  jv->fenced_epoch = epoch;
  snprintf(jv->fenced, sizeof jv->fenced, "%s", who);
  jn_event(co, "fenced", "\"volume\":\"%s\",\"addr\":\"%s\",\"epoch\":%llu,"
           "\"current\":%llu,\"writer\":\"%s\"", v->name, addr, (unsigned long long)epoch,
           (unsigned long long)v->epoch, v->writer);
}

/* s (printable ASCII: wire_check's line_ok) quoted for a JSON string. */
static void jn_str(char *out, size_t n, const char *s)
{
  size_t k = 0;
  for (; s && *s && k + 2 < n; s++) {
    if (*s == '"' || *s == '\\')
      out[k++] = '\\';
    out[k++] = *s;
  }
  out[k] = 0;
}

/* The schema changes a writer's report carries (vfs/ddl.c): each once.
 * A report repeats a change for DDL_NOTE_KEEP_MS, so one lost with a
 * dropped connection is in the next; seqs of one writer only grow, and a
 * new epoch is a new writer, whose seqs start again. (A coordinator
 * restarted within that time journals the changes of its last seconds
 * again, with the same epoch and seq: the readers take each once.) */
static void jn_ddl(struct coord *co, struct jvol *jv, const Auralog__EngineStat *es)
{
  if (jv->ddl_epoch != es->epoch) {
    jv->ddl_epoch = es->epoch;
    jv->ddl_seq = 0;
  }
  for (size_t i = 0; i < es->n_ddl; i++) {
    const Auralog__DdlNote *d = es->ddl[i];
    if (d->seq <= jv->ddl_seq)
      continue;
    char name[2 * 128 + 1], sql[2 * DDL_SQL_MAX + 1];
    jn_str(name, sizeof name, d->name);
    jn_str(sql, sizeof sql, d->sql);
    jn_event(co, "ddl", "\"volume\":\"%s\",\"epoch\":%llu,\"seq\":%llu,\"lsn\":%llu,"
             "\"wall_ms\":%llu,\"op\":\"%s\",\"name\":\"%s\",\"sql\":\"%s\"", es->volume,
             (unsigned long long)es->epoch, (unsigned long long)d->seq,
             (unsigned long long)d->lsn, (unsigned long long)d->wall_ms, d->op, name, sql);
    jv->ddl_seq = d->seq;
  }
}

/* Every report of an engine on a volume, before coord.c's epoch filter. */
void jn_engine(struct coord *co, const Auralog__Volume *v, const Auralog__EngineStat *es)
{
  if (co->note == NULL)
    return;
  uint64_t now = io_now(co->io);
  struct jvol *jv = jvol(co, es->volume);
  if (es->data_loss && es->data_loss[0]) {   /* an alarm, not a sample (text: wire_check) */
    jn_event(co, "dataloss", "\"volume\":\"%s\",\"addr\":\"%s\",\"epoch\":%llu,"
             "\"vdl\":%llu,\"why\":\"%s\"", es->volume, es->addr,
             (unsigned long long)es->epoch, (unsigned long long)es->vdl, es->data_loss);
    return;
  }
  if (es->epoch < v->epoch) {
    jn_fenced(co, v, es->addr, es->epoch);
    return;
  }
  if (es->epoch != v->epoch)
    return;
  jr_engine(co, v, es);
  if (es->epoch != jv->epoch) {          /* a new writer: start over */
    jv->epoch = es->epoch;
    jv->vdl = es->vdl;
    jv->vdl_at = now;
    jv->stalled = 0;
    jv->commit_at = now;
    jv->dirty = 0;
    jv->held = es->held_reads;
    sample(co, jv, es, now);
  }
  jn_ddl(co, jv, es);
  if (es->dirty_reads > jv->dirty) {
    jn_event(co, "dirtyread", "\"volume\":\"%s\",\"addr\":\"%s\",\"epoch\":%llu,"
             "\"vdl\":%llu,\"seen\":%llu,\"n\":%llu", es->volume, es->addr,
             (unsigned long long)es->epoch, (unsigned long long)es->vdl,
             (unsigned long long)es->dirty_lsn, (unsigned long long)(es->dirty_reads - jv->dirty));
    jv->dirty = es->dirty_reads;
  }
  if (es->commits != jv->commits)
    jv->commit_at = now;
  jv->commits = es->commits;
  jv->pending = es->pending;
  if (es->vdl != jv->vdl) {
    if (jv->stalled)
      jn_event(co, "unstall", "\"volume\":\"%s\",\"epoch\":%llu,\"vdl\":%llu,\"from\":%llu,"
               "\"ms\":%llu", es->volume, (unsigned long long)es->epoch,
               (unsigned long long)es->vdl, (unsigned long long)jv->vdl,
               (unsigned long long)(now - jv->stall_at));
    jv->stalled = 0;
    jv->vdl = es->vdl;
    jv->vdl_at = now;
    jv->held = es->held_reads;
  } else if (es->pending > 0 && !jv->stalled && now - jv->vdl_at >= JN_STALL_MS) {
    char down[256];
    down_list(co, down, sizeof down);
    jv->stalled = 1;
    jv->stall_at = jv->vdl_at;
    jn_event(co, "stall", "\"volume\":\"%s\",\"epoch\":%llu,\"vdl\":%llu,\"pending\":%llu,"
             "\"down\":\"%s\"", es->volume, (unsigned long long)es->epoch,
             (unsigned long long)es->vdl, (unsigned long long)es->pending, down);
  }
  /* Reads held back since the VDL stopped: only during a stall (a read
   * beside a commit in flight is held for milliseconds all the time). */
  if (jv->stalled && es->held_reads > jv->held) {
    jn_event(co, "heldread", "\"volume\":\"%s\",\"addr\":\"%s\",\"epoch\":%llu,"
             "\"vdl\":%llu,\"n\":%llu", es->volume, es->addr, (unsigned long long)es->epoch,
             (unsigned long long)es->vdl, (unsigned long long)(es->held_reads - jv->held));
    jv->held = es->held_reads;
  }
  if (es->commits != jv->sample_commits && now - jv->sample_at >= JN_SAMPLE_MS)
    sample(co, jv, es, now);
}

/* A CLI's fault note or a lab mark: fields for the journal. 1 if f is one. */
int jn_fault_note(struct coord *co, const Auralog__Fault *f)
{
  if (!wire_fault_note(f->action))
    return 0;
  if (!strcmp(f->action, "bench")) {
    /* wire_check vetted every string: the line can quote them as they are. */
    const Auralog__BenchNote *b = f->bench;
    jn_event(co, "bench", "\"run\":%u,\"workload\":\"%s\",\"system\":\"%s\",\"clients\":%u,"
             "\"group\":%u,\"group_ms\":%u,\"mean_group\":%.2f,\"duration_s\":%u,"
             "\"warmup_s\":%u,\"tables\":%u,\"rows\":%u,\"tx_s\":%.1f,\"p50_ms\":%.3f,"
             "\"p99_ms\":%.3f,\"errors\":%llu,\"cores\":%u,\"cpu\":\"%s\",\"kernel\":\"%s\","
             "\"filesystem\":\"%s\",\"reads\":\"%s\",\"prepare_us\":%.1f,\"binlog_us\":%.1f,"
             "\"commit_us\":%.1f,\"binlog_mib\":%.1f,\"recovery_ms\":%.1f,\"scan_ms\":%.1f",
             b->run, b->workload, b->system,
             b->clients, b->group, b->group_ms, b->mean_group, b->duration_s, b->warmup_s,
             b->tables, b->rows, b->tx_per_s, b->p50_ms, b->p99_ms,
             (unsigned long long)b->errors, b->cores, b->cpu, b->kernel, b->filesystem,
             b->reads, b->prepare_us, b->binlog_us, b->commit_us, b->binlog_mib,
             b->recovery_ms, b->scan_ms);
    return 1;
  }
  if (!strcmp(f->action, "restore")) {
    /* The operator's restore (R2: signed), names vetted by wire_check. */
    const Auralog__RestoreNote *r = f->restore;
    jn_event(co, "restore", "\"volume\":\"%s\",\"volume_id\":%llu,\"into\":\"%s\","
             "\"to_lsn\":%llu,\"to_ms\":%llu,\"point\":%llu,\"pages\":%llu,\"took_ms\":%llu",
             r->volume, (unsigned long long)r->volume_id, r->into,
             (unsigned long long)r->to_lsn, (unsigned long long)r->to_ms,
             (unsigned long long)r->point, (unsigned long long)r->pages,
             (unsigned long long)r->took_ms);
    return 1;
  }
  jn_sample_all(co);
  if (!strcmp(f->action, "engine-crash") || !strcmp(f->action, "writer-crash")) {
    /* What the crash interrupts: the writer's last report. */
    for (size_t k = 0; co->note && k < co->nvols; k++) {
      const struct ereport *r = &co->engines[k];
      if (r->st == NULL)
        continue;
      struct jvol *jv = jvol(co, co->vols[k]->name);
      uint64_t now = io_now(co->io);
      jn_event(co, "fault", "\"action\":\"%s\",\"volume\":\"%s\",\"epoch\":%llu,"
               "\"commits\":%llu,\"pending\":%llu,\"vdl\":%llu,\"report_ms\":%llu,"
               "\"last_commit_ms\":%llu", f->action, co->vols[k]->name,
               (unsigned long long)r->st->epoch, (unsigned long long)r->st->commits,
               (unsigned long long)r->st->pending, (unsigned long long)r->st->vdl,
               (unsigned long long)(now - r->at), (unsigned long long)(now - jv->commit_at));
      return 1;
    }
  }
  if (!strcmp(f->action, "lab-start") && f->node[0]) {
    /* A student's start (the id in node): their assignment, and what each
     * node says of itself now (lab/check.c compares its later word). */
    struct assign a;
    char text[160], base[400];
    size_t len = 0;
    assign_make(f->node, (int)f->ms, &a);
    assign_text(&a, text, sizeof text);
    base[0] = 0;
    for (size_t i = 0; i < co->nnodes && len < sizeof base; i++)
      len += (size_t)snprintf(base + len, sizeof base - len, "%s\"%s\":[%u,%llu]",
                              len ? "," : "", co->nodes[i]->info->id,
                              co->nodes[i]->info->partitions,
                              (unsigned long long)co->nodes[i]->info->started_ms);
    jn_event(co, "fault", "\"action\":\"%s\",\"az\":\"\",\"node\":\"\",\"n\":%u,"
             "\"student\":\"%s\",\"assign\":\"%s\",\"nodes\":{%s}", f->action, f->ms,
             f->node, text, base);
    return 1;
  }
  jn_event(co, "fault", "\"action\":\"%s\",\"az\":\"%s\",\"node\":\"%s\",\"n\":%u",
           f->action, f->az, f->node, f->ms);
  return 1;
}

/* ---- segments behind and caught up ---------------------------------------- */

static struct jpg *jpg(struct cjn *j, uint64_t vol, uint32_t pg)
{
  uint32_t k = kmap_get(&j->pmap, vol, pg);
  if (k != KMAP_NONE)
    return &j->pgs[k];
  if (j->npgs == j->cap_pgs) {
    j->cap_pgs = j->cap_pgs ? 2 * j->cap_pgs : 64;
    j->pgs = realloc(j->pgs, j->cap_pgs * sizeof *j->pgs);
  }
  struct jpg *p = &j->pgs[j->npgs];
  memset(p, 0, sizeof *p);
  p->vol = vol;
  p->pg = pg;
  kmap_put(&j->pmap, vol, pg, (uint32_t)j->npgs++);
  return p;
}

/* FNV-1a of a node's id: with the volume id, the key of its segments. */
static uint64_t node_key(const char *node, uint64_t vol)
{
  uint32_t h = 2166136261u;
  for (const char *c = node; *c; c++)
    h = (h ^ (uint8_t)*c) * 16777619u;
  return (uint64_t)h << 32 | (vol & 0xffffffffu);
}

static struct jseg *jseg(struct cjn *j, const char *node, uint64_t vol, uint32_t pg)
{
  uint64_t a = node_key(node, vol);
  uint32_t k = kmap_get(&j->smap, a, pg);
  if (k != KMAP_NONE && j->segs[k].vol == vol && !strcmp(j->segs[k].node, node))
    return &j->segs[k];
  for (size_t i = 0; k != KMAP_NONE && i < j->nsegs; i++)   /* a hash collision */
    if (j->segs[i].vol == vol && j->segs[i].pg == pg && !strcmp(j->segs[i].node, node))
      return &j->segs[i];
  if (j->nsegs == j->cap_segs) {
    j->cap_segs = j->cap_segs ? 2 * j->cap_segs : 64;
    j->segs = realloc(j->segs, j->cap_segs * sizeof *j->segs);
  }
  struct jseg *s = &j->segs[j->nsegs];
  memset(s, 0, sizeof *s);
  snprintf(s->node, sizeof s->node, "%s", node);
  s->vol = vol;
  s->pg = pg;
  if (k == KMAP_NONE)
    kmap_put(&j->smap, a, pg, (uint32_t)j->nsegs);
  j->nsegs++;
  return s;
}

/* A count's growth since a segment fell behind; the count itself if it
 * went down (the node restarted: counted from zero since). */
static uint64_t since_behind(uint64_t now, uint64_t then)
{
  return now >= then ? now - then : now;
}

static void hole_scan(struct coord *co, struct cnode *n, const Auralog__SegStat *s,
                      struct jseg *g, uint64_t now);
static void gc_sample(struct coord *co, struct cjn *j, uint64_t now);

/* Every HEARTBEAT_MS. A segment is behind when its SCL is below the
 * highest SCL of its PG as it was JN_BEHIND_MS to twice that ago (a
 * healthy segment is never that far back: its acks are milliseconds). */
void jn_tick(struct coord *co)
{
  if (co->note == NULL)
    return;
  jr_tick(co);
  struct cjn *j = jn_state(co);
  uint64_t now = io_now(co->io);
  if (now - j->scanned < JN_SCAN_MS)
    return;
  j->scanned = now;
  for (size_t i = 0; i < j->npgs; i++)
    j->pgs[i].max = 0;
  for (size_t i = 0; i < co->nnodes; i++)
    for (size_t k = 0; k < co->nodes[i]->nstats; k++) {
      const Auralog__SegStat *s = &co->nodes[i]->stats[k];
      struct jpg *p = jpg(j, s->volume_id, s->pg);
      p->max = s->scl > p->max ? s->scl : p->max;
    }
  for (size_t i = 0; i < j->npgs; i++) {
    struct jpg *p = &j->pgs[i];
    if (now - p->ref_at >= JN_BEHIND_MS) {
      p->ref_prev = p->ref;
      p->ref = p->max;
      p->ref_at = now;
      p->nref++;
    }
  }
  for (size_t i = 0; i < co->nnodes; i++) {
    struct cnode *n = co->nodes[i];
    for (size_t k = 0; k < n->nstats; k++) {
      const Auralog__SegStat *s = &n->stats[k];
      struct jpg *p = jpg(j, s->volume_id, s->pg);
      if (p->nref < 2)
        continue;
      struct jseg *g = jseg(j, n->info->id, s->volume_id, s->pg);
      hole_scan(co, n, s, g, now);
      int behind = s->scl < p->ref_prev;
      if (behind && !g->behind) {
        g->behind = 1;
        g->from = s->scl;
        g->since = now;
        g->gossip = n->info->gossip_msgs;
        g->from_writer = s->from_writer;
        g->from_peers = s->from_peers;
        jn_event(co, "behind", "\"node\":\"%s\",\"az\":\"%s\",\"volume_id\":%llu,\"pg\":%u,"
                 "\"scl\":%llu,\"peers\":%llu,\"up\":%s", n->info->id, n->info->az,
                 (unsigned long long)s->volume_id, s->pg, (unsigned long long)s->scl,
                 (unsigned long long)p->ref_prev,
                 n->info->up && !n->info->partitioned ? "true" : "false");
      } else if (!behind && g->behind && s->scl >= p->max) {
        g->behind = 0;
        jn_event(co, "caughtup", "\"node\":\"%s\",\"az\":\"%s\",\"volume_id\":%llu,\"pg\":%u,"
                 "\"from\":%llu,\"scl\":%llu,\"ms\":%llu,\"gossip_msgs\":%llu,"
                 "\"from_writer\":%llu,\"from_peers\":%llu",
                 n->info->id, n->info->az, (unsigned long long)s->volume_id, s->pg,
                 (unsigned long long)g->from, (unsigned long long)s->scl,
                 (unsigned long long)(now - g->since),
                 (unsigned long long)(n->info->gossip_msgs >= g->gossip
                                                  ? n->info->gossip_msgs - g->gossip
                                                  : n->info->gossip_msgs),
                 (unsigned long long)since_behind(s->from_writer, g->from_writer),
                 (unsigned long long)since_behind(s->from_peers, g->from_peers));
      }
    }
  }
  gc_sample(co, j, now);
}

/* ---- holes and their fill ------------------------------------------------- */

/* A segment's hole, seen at each scan: a record missing below records it
 * holds, so its SCL (§4.2.1) stops there. Journaled once it has been open
 * JN_HOLE_MS (a healthy node's holes close within a gossip round), and
 * when it closes. */
static void hole_scan(struct coord *co, struct cnode *n, const Auralog__SegStat *s,
                      struct jseg *g, uint64_t now)
{
  int has = s->max_lsn > s->scl;
  if (has && g->hole_at == 0) {
    g->hole_at = now;
    g->hole_scl = s->scl;
    g->hole_gossip = n->info->gossip_msgs;
  } else if (has && s->scl != g->hole_scl && !g->hole_noted) {
    g->hole_scl = s->scl;           /* part of it filled: the SCL it holds now */
  }
  if (has && !g->hole_noted && now - g->hole_at >= JN_HOLE_MS) {
    g->hole_noted = 1;
    jn_event(co, "hole", "\"node\":\"%s\",\"az\":\"%s\",\"volume_id\":%llu,\"pg\":%u,"
             "\"scl\":%llu,\"max_lsn\":%llu,\"ms\":%llu,\"gossip_off\":%s", n->info->id,
             n->info->az, (unsigned long long)s->volume_id, s->pg, (unsigned long long)s->scl,
             (unsigned long long)s->max_lsn, (unsigned long long)(now - g->hole_at),
             n->info->no_gossip ? "true" : "false");
  }
  if (!has && g->hole_at) {
    if (g->hole_noted)
      jn_event(co, "filled", "\"node\":\"%s\",\"az\":\"%s\",\"volume_id\":%llu,\"pg\":%u,"
               "\"from\":%llu,\"scl\":%llu,\"ms\":%llu,\"gossip_msgs\":%llu", n->info->id,
               n->info->az, (unsigned long long)s->volume_id, s->pg,
               (unsigned long long)g->hole_scl, (unsigned long long)s->scl,
               (unsigned long long)(now - g->hole_at),
               (unsigned long long)(n->info->gossip_msgs >= g->hole_gossip
                                                ? n->info->gossip_msgs - g->hole_gossip
                                                : n->info->gossip_msgs));
    g->hole_at = 0;
    g->hole_noted = 0;
  }
}

/* ---- coalescing and GC, sampled on pg 0 -------------------------------------- */

/* Each volume's pg 0 as its segments last reported it, with the writer's
 * PGMRPL: a line when anything moved, at most every JN_SAMPLE_MS. One PG
 * stands for all (the lab reads pg 0), so a volume of thousands of PGs
 * costs what one does. The nodes' counters are node-wide (every segment). */
static void gc_sample(struct coord *co, struct cjn *j, uint64_t now)
{
  if (now - j->gc_at < JN_SAMPLE_MS || co->nvols == 0)
    return;
  j->gc_at = now;
  struct acc {
    uint64_t gmin, gmax, recs, vers;
    int nseg;
  } *a = calloc(co->nvols, sizeof *a);
  uint64_t coal = 0, gcr = 0, gcv = 0;
  /* One pass over every segment's stats; pg 0's (a few per volume) find
   * their volume. */
  for (size_t i = 0; i < co->nnodes; i++) {
    const struct cnode *n = co->nodes[i];
    coal += n->info->coalesced;
    gcr += n->info->gc_records;
    gcv += n->info->gc_images;
    for (size_t q = 0; q < n->nstats; q++) {
      const Auralog__SegStat *s = &n->stats[q];
      if (s->pg != 0)
        continue;
      for (size_t k = 0; k < co->nvols; k++)
        if (co->vols[k]->id == s->volume_id) {
          struct acc *c = &a[k];
          c->gmin = c->nseg == 0 || s->gc_lsn < c->gmin ? s->gc_lsn : c->gmin;
          c->gmax = s->gc_lsn > c->gmax ? s->gc_lsn : c->gmax;
          c->recs += s->records;
          c->vers += s->images;
          c->nseg++;
          break;
        }
    }
  }
  for (size_t k = 0; k < co->nvols; k++) {
    const Auralog__EngineStat *es = co->engines[k].st;
    if (es == NULL || es->epoch != co->vols[k]->epoch || a[k].nseg == 0)
      continue;
    char f[512];
    snprintf(f, sizeof f, "\"volume\":\"%s\",\"volume_id\":%llu,\"pg\":0,\"epoch\":%llu,\"vdl\":%llu,"
             "\"pgmrpl\":%llu,\"gc_min\":%llu,\"gc_max\":%llu,\"records\":%llu,"
             "\"versions\":%llu,\"coalesced\":%llu,\"gc_records\":%llu,\"gc_versions\":%llu",
             co->vols[k]->name, (unsigned long long)co->vols[k]->id, (unsigned long long)es->epoch,
             (unsigned long long)es->vdl, (unsigned long long)es->pgmrpl,
             (unsigned long long)a[k].gmin, (unsigned long long)a[k].gmax,
             (unsigned long long)a[k].recs, (unsigned long long)a[k].vers,
             (unsigned long long)coal, (unsigned long long)gcr, (unsigned long long)gcv);
    struct jvol *jv = jvol(co, co->vols[k]->name);
    if (strcmp(f, jv->gc_last) == 0)
      continue;                     /* nothing moved */
    snprintf(jv->gc_last, sizeof jv->gc_last, "%s", f);
    jn_event(co, "gc", "%s", f);
  }
  free(a);
}

void jn_free(struct coord *co)
{
  jr_free(co);
  if (co->jn == NULL)
    return;
  free(co->jn->vols);
  free(co->jn->pgs);
  free(co->jn->segs);
  kmap_free(&co->jn->pmap);
  kmap_free(&co->jn->smap);
  free(co->jn);
  co->jn = NULL;
}
