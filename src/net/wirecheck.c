/*
 * wirecheck.c: validation of every message from the network (wire.h
 * wire_check; Invariant 7, DESIGN.md §4).
 *
 * protobuf-c unpacks many random buffers into well-formed structs, so
 * wire_check() validates every field of what unpacked before a role sees
 * it: it refuses a field this build does not know, at any depth, any LSN,
 * VDL, SCL or truncation point above LSN_MAX or epoch above EPOCH_MAX
 * (param.h), names, addresses and texts that are not what they claim,
 * and records whose shape or bounds are wrong. A refusal is one line
 * (why) and an error code; nothing is changed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "record.h"
#include "net/auth.h"
#include "net/wire.h"

/* ---- validation ---------------------------------------------------------- */

static int bad(char *why, size_t whylen, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
  return ERR_BAD_MSG;
}

/* Names of nodes and volumes: 1..NAME_MAX_LEN of [A-Za-z0-9_.-]. */
int wire_name_ok(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > NAME_MAX_LEN)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return 1;
}

static int az_ok(const char *s)
{
  return s && s[0] >= 'A' && s[0] < 'A' + NAZ && s[1] == 0;
}

static int addr_ok(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  return n > 0 && n <= ADDR_MAX_LEN && strchr(s, ':') != NULL;
}

/* Free text the journal escapes (coord/journal.c jn_str): printable
 * ASCII, at most max bytes (a schema change's statement, a table name). */
static int line_ok(const char *s, size_t max)
{
  size_t n = s ? strlen(s) : 0;
  if (n > max)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e)
      return 0;
  return 1;
}

/* Free text the journal quotes as it is (a bench note's conditions):
 * line_ok's, without '"' or '\\'. */
static int text_ok(const char *s, size_t max)
{
  return line_ok(s, max) && (s == NULL || strpbrk(s, "\"\\") == NULL);
}

/* An engine report's schema changes (vfs/ddl.c). */
static int check_ddl_notes(const Auralog__EngineStat *es, char *why, size_t whylen)
{
  if (es->n_ddl > DDL_NOTES_MAX)
    return bad(why, whylen, "engine report with %zu schema changes", es->n_ddl);
  for (size_t i = 0; i < es->n_ddl; i++) {
    const Auralog__DdlNote *d = es->ddl[i];
    if (d->lsn == 0 || !line_ok(d->op, 16) || !d->op[0] || !line_ok(d->name, 128) ||
        !line_ok(d->sql, DDL_SQL_MAX))
      return bad(why, whylen, "engine report with a bad schema change");
  }
  return ERR_NONE;
}

/* A restore note (lab 12): names and numbers the journal can quote. */
static int check_restore_note(const Auralog__RestoreNote *r, char *why, size_t whylen)
{
  if (r == NULL)
    return bad(why, whylen, "a restore note without what was restored");
  if (!wire_name_ok(r->volume) || (r->into[0] && !wire_name_ok(r->into)) || r->point == 0)
    return bad(why, whylen, "a restore note with a bad volume name or point");
  return ERR_NONE;
}

/* A measured figure: finite, not negative, not absurd. */
static int figure_ok(double v)
{
  return v >= 0 && v < 1e9;        /* false for NaN */
}

/* A bench note (lab 10): names, counts and figures the journal can quote. */
static int check_bench_note(const Auralog__BenchNote *b, char *why, size_t whylen)
{
  if (b == NULL)
    return bad(why, whylen, "a bench note without its result");
  if (!wire_name_ok(b->workload) || !wire_name_ok(b->system) || !text_ok(b->reads, 16) ||
      !text_ok(b->cpu, 96) || !text_ok(b->kernel, 64) || !text_ok(b->filesystem, 32))
    return bad(why, whylen, "a bench note with a bad name or condition");
  if (b->clients < 1 || b->clients > 4096 || b->group < 1 || b->group > 4096 ||
      b->group_ms > 600000 || b->duration_s > 86400 || b->warmup_s > 86400 ||
      b->tables > 4096 || b->cores > 65536)
    return bad(why, whylen, "a bench note with a count out of range");
  if (!figure_ok(b->tx_per_s) || !figure_ok(b->p50_ms) || !figure_ok(b->p99_ms) ||
      !figure_ok(b->mean_group) || !figure_ok(b->prepare_us) || !figure_ok(b->binlog_us) ||
      !figure_ok(b->commit_us) || !figure_ok(b->binlog_mib) || !figure_ok(b->recovery_ms) ||
      !figure_ok(b->scan_ms))
    return bad(why, whylen, "a bench note with a figure out of range");
  return ERR_NONE;
}

static int page_size_ok(uint32_t ps)
{
  return ps >= 512 && ps <= PAGE_SIZE_MAX && (ps & (ps - 1)) == 0;
}

/* ---- unknown fields ------------------------------------------------------ */

/* protobuf-c keeps the fields it does not know in each message's
 * base.unknown_fields and packs them again on the way out. Refuse them, at
 * any depth: a message of a newer protocol is not understood here, and
 * protobuf-c 1.4.1 accepts a field numbered 0 written as a two-byte tag,
 * packs it back as one byte and then cannot unpack its own output (a node
 * that stored such a record would fail at every restart, DESIGN.md §8).
 *
 * The walk follows the descriptors: every field of type message, singular
 * or repeated; of a oneof, only the member whose case is set (the members
 * share one union, so another member's pointer is not one). d is the
 * descriptor of m, taken from the parent's field so that a message built
 * by hand without its INIT macro is walked too. */
static int check_known(const ProtobufCMessage *m,
                       const ProtobufCMessageDescriptor *d,
                       char *why, size_t whylen)
{
  if (m->n_unknown_fields > 0)
    return bad(why, whylen, "message has an unknown field %u (in %s)",
               (unsigned)m->unknown_fields[0].tag, d->name);
  const char *base = (const char *)m;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE)
      continue;
    const ProtobufCMessageDescriptor *fd = f->descriptor;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n;
      ProtobufCMessage **v;
      memcpy(&n, base + f->quantifier_offset, sizeof n);
      memcpy(&v, base + f->offset, sizeof v);
      for (size_t k = 0; k < n && v != NULL; k++) {
        if (v[k] == NULL)
          continue;
        int rc = check_known(v[k], fd, why, whylen);
        if (rc != ERR_NONE)
          return rc;
      }
      continue;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      uint32_t which;
      memcpy(&which, base + f->quantifier_offset, sizeof which);
      if (which != f->id)
        continue;
    }
    const ProtobufCMessage *sub;
    memcpy(&sub, base + f->offset, sizeof sub);
    if (sub != NULL) {
      int rc = check_known(sub, fd, why, whylen);
      if (rc != ERR_NONE)
        return rc;
    }
  }
  return ERR_NONE;
}

/* ---- LSN and epoch bounds ------------------------------------------------ */

/* Every LSN, VDL, SCL or truncation point from the network is at most
 * LSN_MAX and every epoch at most EPOCH_MAX (param.h), so that no sum such
 * as vdl + LAL can wrap in a role. what names the field in the reason. */
static int lsn_in(uint64_t v, const char *what, char *why, size_t whylen)
{
  if (v <= LSN_MAX)
    return ERR_NONE;
  snprintf(why, whylen, "%s is %llu, above the LSN limit %llu", what,
           (unsigned long long)v, (unsigned long long)LSN_MAX);
  return ERR_OUT_OF_RANGE;
}

static int epoch_in(uint64_t v, const char *what, char *why, size_t whylen)
{
  if (v <= EPOCH_MAX)
    return ERR_NONE;
  snprintf(why, whylen, "%s is %llu, above the epoch limit %llu", what,
           (unsigned long long)v, (unsigned long long)EPOCH_MAX);
  return ERR_OUT_OF_RANGE;
}

/* Return from the enclosing check if x found something wrong. */
#define TRY(x) do { int rc_ = (x); if (rc_ != ERR_NONE) return rc_; } while (0)

/* A truncation (epoch, from, to): bounded, and from <= to. where: whose. */
static int check_trunc(const Auralog__TruncRange *t, const char *where,
                       char *why, size_t whylen)
{
  char what[128];
  snprintf(what, sizeof what, "%s truncation epoch", where);
  TRY(epoch_in(t->epoch, what, why, whylen));
  snprintf(what, sizeof what, "%s truncation start", where);
  TRY(lsn_in(t->from, what, why, whylen));
  snprintf(what, sizeof what, "%s truncation end", where);
  TRY(lsn_in(t->to, what, why, whylen));
  if (t->to < t->from)
    return bad(why, whylen, "%s truncation (%llu, %llu] ends before it starts", where,
               (unsigned long long)t->from, (unsigned long long)t->to);
  return ERR_NONE;
}

static int check_truncs(Auralog__TruncRange *const *t, size_t n, const char *where,
                        char *why, size_t whylen)
{
  for (size_t i = 0; i < n; i++)
    TRY(check_trunc(t[i], where, why, whylen));
  return ERR_NONE;
}

/* The LSNs and epoch a record carries, its MTR shape included. where: the
 * message it came in. (Its content is rec_check's.) */
static int check_rec_bounds(const Auralog__Record *r, const char *where,
                            char *why, size_t whylen)
{
  /* Every record of every Append comes here: test first, word the
   * refusal only for one that fails (the words were 4% of a node's CPU). */
  int fine = r->lsn <= LSN_MAX && r->prev_lsn <= LSN_MAX && r->prev_cpl <= LSN_MAX &&
             r->epoch <= EPOCH_MAX;
  for (size_t j = 0; j < r->n_mtr && fine; j++)
    fine = r->mtr[j]->lsn <= LSN_MAX;
  if (fine)
    return ERR_NONE;
  char what[128];
  snprintf(what, sizeof what, "%s: record LSN", where);
  TRY(lsn_in(r->lsn, what, why, whylen));
  unsigned long long lsn = r->lsn;
  snprintf(what, sizeof what, "%s: record %llu backlink", where, lsn);
  TRY(lsn_in(r->prev_lsn, what, why, whylen));
  snprintf(what, sizeof what, "%s: record %llu previous CPL", where, lsn);
  TRY(lsn_in(r->prev_cpl, what, why, whylen));
  snprintf(what, sizeof what, "%s: record %llu epoch", where, lsn);
  TRY(epoch_in(r->epoch, what, why, whylen));
  for (size_t j = 0; j < r->n_mtr; j++) {
    snprintf(what, sizeof what, "%s: record %llu, its MTR's last LSN in pg %u", where, lsn,
             r->mtr[j]->pg);
    TRY(lsn_in(r->mtr[j]->lsn, what, why, whylen));
  }
  return ERR_NONE;
}

static int check_volume_bounds(const Auralog__Volume *v, char *why, size_t whylen)
{
  TRY(epoch_in(v->epoch, "volume epoch", why, whylen));
  return check_truncs(v->truncs, v->n_truncs, "volume", why, whylen);
}

/* A PG number: a data PG's (below MAX_PGS), or the binlog PG's
 * (BINLOG_PG, issue 29), which membership moves as any PG (member.h). */
static int pg_no_ok(uint32_t pg)
{
  return pg < MAX_PGS || pg == BINLOG_PG;
}

static int check_segment(const Auralog__Segment *s, char *why, size_t whylen)
{
  if (!pg_no_ok(s->pg))
    return bad(why, whylen, "segment of pg %u: no such protection group", s->pg);
  if (!wire_name_ok(s->node) || !az_ok(s->az) || !addr_ok(s->addr))
    return bad(why, whylen, "segment of pg %u has a bad node, az or address", s->pg);
  if (s->npages == 0 || s->npages > PG_PAGES_MAX || !page_size_ok(s->page_size) ||
      s->volume_id == 0)
    return bad(why, whylen, "segment of pg %u has a bad geometry", s->pg);
  return ERR_NONE;
}

int wire_check_pg(const Auralog__Pg *pg, char *why, size_t whylen)
{
  /* member.h: segments[0..NCOPIES) are the current ones, position by
   * position; then at most one next segment per position, in its AZ, on a
   * node no other slot of the PG uses. */
  if (!pg_no_ok(pg->pg))
    return bad(why, whylen, "pg %u: no such protection group", pg->pg);
  if (pg->n_segments < NCOPIES || pg->n_segments > NSLOTS)
    return bad(why, whylen, "pg %u has %zu segments", pg->pg, pg->n_segments);
  unsigned seen = 0;
  for (size_t j = 0; j < pg->n_segments; j++) {
    const Auralog__Segment *s = pg->segments[j];
    if (check_segment(s, why, whylen))
      return ERR_BAD_MSG;
    if (j < NCOPIES ? s->next || (s->pos != 0 && s->pos != j)
                    : !s->next || s->pos >= NCOPIES || (seen & (1u << s->pos)))
      return bad(why, whylen, "pg %u: segment %zu is at no valid position", pg->pg, j);
    if (j >= NCOPIES) {
      seen |= 1u << s->pos;
      if (strcmp(s->az, pg->segments[s->pos]->az) != 0)
        return bad(why, whylen, "pg %u: the next segment of position %u is in AZ %s, "
                   "not %s", pg->pg, s->pos, s->az, pg->segments[s->pos]->az);
    }
    for (size_t k = 0; k < j; k++)
      if (strcmp(s->node, pg->segments[k]->node) == 0)
        return bad(why, whylen, "pg %u has two segments on node %s", pg->pg, s->node);
  }
  if (pg->mepoch_min > pg->mepoch)
    return bad(why, whylen, "pg %u: mepoch_min above its mepoch", pg->pg);
  return ERR_NONE;
}

static int check_append(const Auralog__Append *a, char *why, size_t whylen)
{
  if (a->volume_id == 0)
    return bad(why, whylen, "append without a volume id");
  if (a->epoch == 0)
    return bad(why, whylen, "append without an epoch");
  TRY(epoch_in(a->epoch, "append epoch", why, whylen));
  TRY(lsn_in(a->vdl, "append vdl", why, whylen));
  TRY(lsn_in(a->pgmrpl, "append pgmrpl", why, whylen));
  TRY(lsn_in(a->pgmrpl_tail, "append pgmrpl_tail", why, whylen));
  if (a->pgmrpl_tail > a->pgmrpl) {
    snprintf(why, whylen, "append pgmrpl_tail %llu lies above its pgmrpl %llu",
             (unsigned long long)a->pgmrpl_tail, (unsigned long long)a->pgmrpl);
    return ERR_BAD_MSG;
  }
  TRY(lsn_in(a->vdl_tail, "append vdl_tail", why, whylen));
  if (a->vdl_tail > a->vdl) {
    snprintf(why, whylen, "append vdl_tail %llu lies above its vdl %llu",
             (unsigned long long)a->vdl_tail, (unsigned long long)a->vdl);
    return ERR_BAD_MSG;
  }
  if (a->trunc) {
    TRY(check_trunc(a->trunc, "append", why, whylen));
    if (a->trunc->epoch > a->epoch)
      return bad(why, whylen, "append of epoch %llu carries a truncation of epoch %llu",
                 (unsigned long long)a->epoch, (unsigned long long)a->trunc->epoch);
  }
  /* The older truncations a writer's own rests on: older epochs' only. */
  TRY(check_truncs(a->before, a->n_before, "append's earlier", why, whylen));
  for (size_t i = 0; i < a->n_before; i++)
    if (a->before[i]->epoch >= a->epoch)
      return bad(why, whylen, "append of epoch %llu carries an earlier truncation of epoch "
                 "%llu", (unsigned long long)a->epoch, (unsigned long long)a->before[i]->epoch);
  if (a->n_records > BATCH_MAX)   /* 0: only tells the writer's VDL */
    return bad(why, whylen, "append of %zu records (at most %d)",
               a->n_records, BATCH_MAX);
  uint64_t last = 0;
  for (size_t i = 0; i < a->n_records; i++) {
    const Auralog__Record *r = a->records[i];
    TRY(check_rec_bounds(r, "append", why, whylen));
    /* A writer sends records of its own epoch, or of older ones that its
     * recovery adopted; never of a newer epoch than its own. */
    if (r->epoch > a->epoch)
      return bad(why, whylen, "record %llu of epoch %llu in an append of epoch %llu",
                 (unsigned long long)r->lsn, (unsigned long long)r->epoch,
                 (unsigned long long)a->epoch);
    int rc = rec_check(r, PAGE_SIZE_MAX, why, whylen);
    if (rc != ERR_NONE)
      return rc;            /* keep ERR_BAD_CRC / ERR_OUT_OF_RANGE distinct */
    if (r->lsn <= last)
      return bad(why, whylen, "records out of LSN order (%llu after %llu)",
                 (unsigned long long)r->lsn, (unsigned long long)last);
    last = r->lsn;
  }
  return ERR_NONE;
}

/* The Fault actions that only note what the CLI did (a kill, a start) or
 * mark a lab's steps, for the coordinator's journal (coord/journal.c). */
int wire_fault_note(const char *action)
{
  static const char *notes[] = {"az-down", "az-up", "node-stop", "node-start", "engine-crash",
                                "writer-crash", "writer-stop", "lab-start", "lab-demo",
                                "lab-demo-end", "lab-check", "lab-seal", "bench", "restore"};
  for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
    if (strcmp(notes[i], action) == 0)
      return 1;
  return 0;
}

int wire_check(const Env *e, char *why, size_t whylen)
{
  TRY(check_known(&e->base, &auralog__envelope__descriptor, why, whylen));
  if ((e->op_sig.len && e->op_sig.len != 64) || (e->writer_sig.len && e->writer_sig.len != 64))
    return bad(why, whylen, "a role signature must be 64 bytes");
  switch (e->body_case) {
  case AURALOG__ENVELOPE__BODY_ERROR:
    if (e->error->msg && strlen(e->error->msg) > 4096)
      return bad(why, whylen, "error text too long");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_APPEND:
    return check_append(e->append, why, whylen);
  case AURALOG__ENVELOPE__BODY_APPEND_ACK:
    return lsn_in(e->append_ack->scl, "append ack scl", why, whylen);
  case AURALOG__ENVELOPE__BODY_READ_PAGE:
    if (e->read_page->volume_id == 0)
      return bad(why, whylen, "page read without a volume id");
    TRY(lsn_in(e->read_page->read_point, "page read point", why, whylen));
    TRY(lsn_in(e->read_page->need, "page read need", why, whylen));
    TRY(epoch_in(e->read_page->epoch, "page read epoch", why, whylen));
    if (e->read_page->trunc)
      TRY(check_trunc(e->read_page->trunc, "page read", why, whylen));
    if (e->read_page->need > e->read_page->read_point)
      return bad(why, whylen, "page read needs LSN %llu above its read point %llu",
                 (unsigned long long)e->read_page->need,
                 (unsigned long long)e->read_page->read_point);
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_PAGE:
    if (e->page->data.len > PAGE_SIZE_MAX)
      return bad(why, whylen, "page of %zu bytes", e->page->data.len);
    return lsn_in(e->page->page_lsn, "page lsn", why, whylen);
  case AURALOG__ENVELOPE__BODY_REGISTER:
    if (!wire_name_ok(e->register_->id))
      return bad(why, whylen, "node id must be 1-%d of A-Z a-z 0-9 _ . -", NAME_MAX_LEN);
    if (!az_ok(e->register_->az))
      return bad(why, whylen, "az must be A, B or C");
    if (!addr_ok(e->register_->addr))
      return bad(why, whylen, "node address must be host:port");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_ASSIGN:
    for (size_t i = 0; i < e->assign->n_segments; i++)
      if (check_segment(e->assign->segments[i], why, whylen))
        return ERR_BAD_MSG;
    for (size_t i = 0; i < e->assign->n_binlog_keep; i++) {
      if (e->assign->binlog_keep[i]->volume_id == 0)
        return bad(why, whylen, "a binlog keep point without a volume id");
      TRY(lsn_in(e->assign->binlog_keep[i]->keep, "binlog keep point", why, whylen));
    }
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_HEARTBEAT:
    if (!wire_name_ok(e->heartbeat->id))
      return bad(why, whylen, "heartbeat with a bad node id");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_OPEN_VOLUME:
    if (!wire_name_ok(e->open_volume->name))
      return bad(why, whylen, "volume name must be 1-%d of A-Z a-z 0-9 _ . -", NAME_MAX_LEN);
    if (e->open_volume->page_size && !page_size_ok(e->open_volume->page_size))
      return bad(why, whylen, "page size %u is not a power of two in 512..%d",
                 e->open_volume->page_size, PAGE_SIZE_MAX);
    if (e->open_volume->pg_pages > PG_PAGES_MAX)
      return bad(why, whylen, "%u pages per protection group: at most %d",
                 e->open_volume->pg_pages, PG_PAGES_MAX);
    if (e->open_volume->addr[0] && !addr_ok(e->open_volume->addr))
      return bad(why, whylen, "a writer's address must be host:port");
    return epoch_in(e->open_volume->if_epoch, "open volume if_epoch", why, whylen);
  case AURALOG__ENVELOPE__BODY_VOLUME: {
    const Auralog__Volume *v = e->volume;
    int placed = 0;           /* PGs with their segments (not a probe's reports) */
    for (size_t i = 0; i < v->n_pgs && i <= MAX_PGS && !placed; i++)
      placed = v->pgs[i]->n_segments != 0;
    if (!wire_name_ok(v->name) || !page_size_ok(v->page_size) || v->n_pgs > MAX_PGS ||
        (placed && v->pg_pages == 0) || v->pg_pages > PG_PAGES_MAX ||
        (v->writer[0] && !addr_ok(v->writer)))
      return bad(why, whylen, "malformed volume description");
    for (size_t i = 0; i < v->n_pgs; i++) {
      /* Data PGs only: the binlog PG travels in v->binlog. */
      if (v->pgs[i]->pg >= MAX_PGS)
        return bad(why, whylen, "a volume's pg %u: data PGs are numbered below %d (the "
                   "binlog PG comes as its binlog)", v->pgs[i]->pg, MAX_PGS);
      /* A writer's lease probe names, per PG in transition, only the
       * membership epoch it uses and since which VCL (member.h M4): no
       * segments. Every description names all of them; anyone reading a
       * Volume answer's segments checks that it has them. */
      if (v->pgs[i]->n_segments == 0 && v->pgs[i]->mepoch_min == 0) {
        TRY(lsn_in(v->pgs[i]->adopted_at, "pg adopted_at", why, whylen));
        continue;
      }
      TRY(wire_check_pg(v->pgs[i], why, whylen));
    }
    /* The binlog PG (issue 29): BINLOG_PG, placed like a data PG (a
     * description, or a probe's answer when its membership changed), or
     * (a lease probe's) only its membership epoch and adopted_at. */
    if (v->binlog) {
      if (v->binlog->pg != BINLOG_PG)
        return bad(why, whylen, "a binlog PG numbered %u, not %d", v->binlog->pg, BINLOG_PG);
      if (v->binlog->n_segments)
        TRY(wire_check_pg(v->binlog, why, whylen));
      else
        TRY(lsn_in(v->binlog->adopted_at, "binlog pg adopted_at", why, whylen));
    }
    return check_volume_bounds(v, why, whylen);
  }
  case AURALOG__ENVELOPE__BODY_GROW_VOLUME:
    if (!wire_name_ok(e->grow_volume->name))
      return bad(why, whylen, "bad volume name");
    if (e->grow_volume->npgs == 0 || e->grow_volume->npgs > MAX_PGS)
      return bad(why, whylen, "a volume has 1..%d protection groups", MAX_PGS);
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_STATUS_REQ:
    if (e->status_req->volume[0] && !wire_name_ok(e->status_req->volume))
      return bad(why, whylen, "bad volume name");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_STATUS:
    if (e->status->n_seg_nodes != e->status->n_segs)
      return bad(why, whylen, "status with unmatched segment list");
    if (e->status->volume)
      return check_volume_bounds(e->status->volume, why, whylen);
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_SEG_QUERY: {
    const Auralog__SegQuery *q = e->seg_query;
    if (q->volume_id == 0 || q->epoch == 0)
      return bad(why, whylen, "segment query without volume or epoch");
    TRY(epoch_in(q->epoch, "segment query epoch", why, whylen));
    TRY(lsn_in(q->from, "segment query start", why, whylen));
    TRY(lsn_in(q->after, "segment query scan point", why, whylen));
    if (q->max > BATCH_MAX)   /* 0: the default */
      return bad(why, whylen, "segment query for %u records (at most %d)",
                 q->max, BATCH_MAX);
    return check_truncs(q->truncs, q->n_truncs, "segment query", why, whylen);
  }
  case AURALOG__ENVELOPE__BODY_SEG_INFO: {
    /* The engine's recovery trusts these: a wild value must not reach it.
     * A scan's records come whole, and recovery re-stamps and re-seals the
     * ones it adopts (vfs/open.c): a damaged one must be caught here, by
     * its CRC, or re-sealing would make it look sound. */
    const Auralog__SegInfo *si = e->seg_info;
    TRY(lsn_in(si->scl, "segment info scl", why, whylen));
    TRY(lsn_in(si->max_lsn, "segment info max lsn", why, whylen));
    TRY(lsn_in(si->vdl, "segment info vdl", why, whylen));
    TRY(lsn_in(si->tail, "segment info tail", why, whylen));
    TRY(epoch_in(si->epoch, "segment info epoch", why, whylen));
    TRY(lsn_in(si->gc_lsn, "segment info gc point", why, whylen));
    if (si->n_heard % 2 || si->n_heard > 2 * HEARD_MAX)
      return bad(why, whylen, "segment info with %zu heard values (pairs, at most %d)",
                 si->n_heard, HEARD_MAX);
    for (size_t i = 0; i < si->n_heard; i += 2) {
      TRY(epoch_in(si->heard[i], "segment info heard epoch", why, whylen));
      TRY(lsn_in(si->heard[i + 1], "segment info heard vdl", why, whylen));
    }
    for (size_t i = 0; i < si->n_recs; i++) {
      TRY(check_rec_bounds(si->recs[i], "segment info", why, whylen));
      TRY(rec_check(si->recs[i], PAGE_SIZE_MAX, why, whylen));
    }
    TRY(check_truncs(si->forgot, si->n_forgot, "segment info (forgot)", why, whylen));
    return check_truncs(si->truncs, si->n_truncs, "segment info", why, whylen);
  }
  case AURALOG__ENVELOPE__BODY_TRUNCATE: {
    const Auralog__Truncate *t = e->truncate;
    if (t->volume_id == 0 || t->epoch == 0 || t->to < t->from)
      return bad(why, whylen, "truncation without volume or epoch, or with to < from");
    TRY(epoch_in(t->epoch, "truncation epoch", why, whylen));
    TRY(lsn_in(t->from, "truncation start", why, whylen));
    return lsn_in(t->to, "truncation end", why, whylen);
  }
  case AURALOG__ENVELOPE__BODY_QUERY:
    if (strlen(e->query->sql) > (1u << 20))
      return bad(why, whylen, "SQL text over 1 MiB");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_ROWS:
    /* Rows of several statements may have different widths. */
    for (size_t i = 0; i < e->rows->n_rows; i++)
      for (size_t k = 0; k < e->rows->rows[i]->n_values; k++)
        if (e->rows->rows[i]->values[k] == NULL)
          return bad(why, whylen, "row %zu has an empty value", i);
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_ENGINE_STAT:
    if (!wire_name_ok(e->engine_stat->volume))
      return bad(why, whylen, "engine report with a bad volume name");
    if (e->engine_stat->stale_node && e->engine_stat->stale_node[0] &&
        !addr_ok(e->engine_stat->stale_node))
      return bad(why, whylen, "engine report with a bad stale node address");
    if (e->engine_stat->n_replicas > REPLICAS_MAX)
      return bad(why, whylen, "engine report with %zu replicas", e->engine_stat->n_replicas);
    for (size_t i = 0; i < e->engine_stat->n_replicas; i++)
      if (!addr_ok(e->engine_stat->replicas[i]->addr))
        return bad(why, whylen, "engine report with a bad replica address");
    if (!text_ok(e->engine_stat->data_loss, 512))
      return bad(why, whylen, "engine report with a data-loss line that is not plain text");
    if (!text_ok(e->engine_stat->recovering, 200))
      return bad(why, whylen, "engine report with a recovery progress line that is not plain "
                 "text");
    return check_ddl_notes(e->engine_stat, why, whylen);
  case AURALOG__ENVELOPE__BODY_DROP_VOLUME:
    if (!wire_name_ok(e->drop_volume->name))
      return bad(why, whylen, "bad volume name");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_OK:
  case AURALOG__ENVELOPE__BODY_NODE_FAULTS:
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_FAULT: {
    const Auralog__Fault *f = e->fault;
    if (!strcmp(f->action, "bench"))
      return check_bench_note(f->bench, why, whylen);
    if (f->bench)
      return bad(why, whylen, "a bench result in a '%s' fault", f->action);
    if (!strcmp(f->action, "restore"))
      return check_restore_note(f->restore, why, whylen);
    if (f->restore)
      return bad(why, whylen, "a restore note in a '%s' fault", f->action);
    if (wire_fault_note(f->action)) {
      /* A CLI's note or a lab mark, for the journal: names it may quote. */
      if ((f->az[0] && !az_ok(f->az)) || (f->node[0] && !wire_name_ok(f->node)) ||
          f->ms > 1000)
        return bad(why, whylen, "a fault note names an AZ, a member and a lab number");
      return ERR_NONE;
    }
    if (strcmp(f->action, "partition") && strcmp(f->action, "heal") && strcmp(f->action, "slow") &&
        strcmp(f->action, "stale") && strcmp(f->action, "drop") && strcmp(f->action, "gossip"))
      return bad(why, whylen, "unknown fault '%s'", f->action);
    if (!strcmp(f->action, "partition") && !az_ok(f->az))
      return bad(why, whylen, "partition needs an AZ: A, B or C");
    if (!strcmp(f->action, "slow") && (!wire_name_ok(f->node) || f->ms > 60000))
      return bad(why, whylen, "slow needs a node id and 0..60000 ms");
    if (!strcmp(f->action, "stale") && (!wire_name_ok(f->node) || f->ms > 1))
      return bad(why, whylen, "stale needs a node id and 1 (on) or 0 (off)");
    if (!strcmp(f->action, "gossip") && (!wire_name_ok(f->node) || f->ms > 1))
      return bad(why, whylen, "gossip needs a node id and 1 (on) or 0 (off)");
    if (!strcmp(f->action, "drop") && (!wire_name_ok(f->node) || f->ms < 1 || f->ms > 1000))
      return bad(why, whylen, "drop needs a node id and 1..1000 Appends");
    return ERR_NONE;
  }
  case AURALOG__ENVELOPE__BODY_GOSSIP_PULL:
    if (e->gossip_pull->volume_id == 0 || !wire_name_ok(e->gossip_pull->node))
      return bad(why, whylen, "gossip pull without volume or node");
    return lsn_in(e->gossip_pull->scl, "gossip pull scl", why, whylen);
  case AURALOG__ENVELOPE__BODY_AUTH_CHALLENGE:
    if (e->auth_challenge->nonce.len != AUTH_NONCE_BYTES)
      return bad(why, whylen, "challenge with a nonce of %zu bytes", e->auth_challenge->nonce.len);
    if (!addr_ok(e->auth_challenge->addr))
      return bad(why, whylen, "challenge with a bad address");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_AUTH_HELLO:
    if (e->auth_hello->nonce.len != AUTH_NONCE_BYTES ||
        e->auth_hello->proof.len != AUTH_PROOF_BYTES)
      return bad(why, whylen, "hello with a nonce or proof of the wrong size");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_AUTH_WELCOME:
    if (e->auth_welcome->proof.len != AUTH_PROOF_BYTES)
      return bad(why, whylen, "welcome with a proof of the wrong size");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_REPLICA_HELLO:
    if (!wire_name_ok(e->replica_hello->volume) ||
        (e->replica_hello->addr[0] && !addr_ok(e->replica_hello->addr)))
      return bad(why, whylen, "replica hello with a bad volume name or address");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_REPLICA_START: {
    const Auralog__ReplicaStart *s = e->replica_start;
    TRY(epoch_in(s->epoch, "replica start epoch", why, whylen));
    TRY(lsn_in(s->start, "replica start point", why, whylen));
    TRY(lsn_in(s->from, "replica stream start", why, whylen));
    TRY(lsn_in(s->vdl, "replica start vdl", why, whylen));
    if (s->volume_id == 0 || !page_size_ok(s->page_size) || s->pg_pages == 0 ||
        s->pg_pages > PG_PAGES_MAX || s->from <= s->start || s->n_tails > MAX_PGS)
      return bad(why, whylen, "replica start with a bad geometry or stream start");
    for (size_t i = 0; i < s->n_tails; i++) {
      TRY(lsn_in(s->tails[i]->lsn, "replica start tail", why, whylen));
      if (s->tails[i]->pg >= MAX_PGS || s->tails[i]->lsn > s->start)
        return bad(why, whylen, "replica start tail of pg %u above the start point",
                   s->tails[i]->pg);
    }
    return s->trunc ? check_trunc(s->trunc, "replica start", why, whylen) : ERR_NONE;
  }
  case AURALOG__ENVELOPE__BODY_REPLICA_FEED: {
    const Auralog__ReplicaFeed *f = e->replica_feed;
    if (f->n_records > BATCH_MAX)
      return bad(why, whylen, "replica feed of %zu records", f->n_records);
    TRY(lsn_in(f->vdl, "replica feed vdl", why, whylen));
    uint64_t last = 0;
    for (size_t i = 0; i < f->n_records; i++) {
      TRY(check_rec_bounds(f->records[i], "replica feed", why, whylen));
      int rc = rec_check(f->records[i], PAGE_SIZE_MAX, why, whylen);
      if (rc != ERR_NONE)
        return rc;
      if (f->records[i]->lsn <= last)
        return bad(why, whylen, "replica feed records out of LSN order");
      last = f->records[i]->lsn;
    }
    return ERR_NONE;
  }
  case AURALOG__ENVELOPE__BODY_REPLICA_ACK:
    TRY(lsn_in(e->replica_ack->applied, "replica ack applied", why, whylen));
    /* The holder is a client's address, shown by status. */
    if (e->replica_ack->holder && strlen(e->replica_ack->holder) > ADDR_MAX_LEN)
      return bad(why, whylen, "replica ack holder of %zu bytes",
                 strlen(e->replica_ack->holder));
    return lsn_in(e->replica_ack->min_read_point, "replica ack read point", why, whylen);
  case AURALOG__ENVELOPE__BODY_REPLICA_BEAT:
    if (!wire_name_ok(e->replica_beat->volume) || !addr_ok(e->replica_beat->addr))
      return bad(why, whylen, "replica beat with a bad volume name or address");
    TRY(epoch_in(e->replica_beat->epoch, "replica beat epoch", why, whylen));
    return lsn_in(e->replica_beat->applied, "replica beat applied", why, whylen);
  case AURALOG__ENVELOPE__BODY_WRITER:
    if (!wire_name_ok(e->writer->volume) || (e->writer->addr[0] && !addr_ok(e->writer->addr)) ||
        (e->writer->promoting[0] && !addr_ok(e->writer->promoting)))
      return bad(why, whylen, "writer answer with a bad volume name or address");
    TRY(epoch_in(e->writer->epoch, "writer epoch", why, whylen));
    if (e->writer->n_replicas > REPLICAS_MAX)
      return bad(why, whylen, "writer answer with %zu replicas", e->writer->n_replicas);
    for (size_t i = 0; i < e->writer->n_replicas; i++) {
      const Auralog__ReplicaSeen *r = e->writer->replicas[i];
      if (!addr_ok(r->addr))
        return bad(why, whylen, "writer answer with a bad replica address");
      TRY(epoch_in(r->epoch, "replica epoch", why, whylen));
      TRY(lsn_in(r->applied, "replica applied", why, whylen));
    }
    return epoch_in(e->writer->if_epoch, "writer promotion epoch", why, whylen);
  case AURALOG__ENVELOPE__BODY_WRITER_REQ:
    if (!wire_name_ok(e->writer_req->volume))
      return bad(why, whylen, "bad volume name");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_NODE_CMD: {
    const Auralog__NodeCmd *nc = e->node_cmd;
    if (strcmp(nc->action, "drain") && strcmp(nc->action, "replace") && strcmp(nc->action, "show"))
      return bad(why, whylen, "node command '%.32s': say drain, replace or show", nc->action);
    if (!wire_name_ok(nc->node) || (nc->to[0] && !wire_name_ok(nc->to)) ||
        (nc->state[0] && !wire_name_ok(nc->state)))
      return bad(why, whylen, "node command with a bad node id");
    return ERR_NONE;
  }
  case AURALOG__ENVELOPE__BODY_FAILOVER:
    if (!wire_name_ok(e->failover->volume) || (e->failover->to[0] && !addr_ok(e->failover->to)))
      return bad(why, whylen, "failover with a bad volume name or replica address");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_BINLOG_READ:
    if (e->binlog_read->volume_id == 0)
      return bad(why, whylen, "binlog read without a volume id");
    return lsn_in(e->binlog_read->after, "binlog read position", why, whylen);
  case AURALOG__ENVELOPE__BODY_BINLOG_RECS: {
    const Auralog__BinlogRecs *b = e->binlog_recs;
    TRY(lsn_in(b->durable, "binlog durable end", why, whylen));
    TRY(lsn_in(b->first, "binlog first", why, whylen));
    TRY(epoch_in(b->epoch, "binlog epoch", why, whylen));
    TRY(lsn_in(b->last, "binlog last", why, whylen));
    if (b->last > b->durable)
      return bad(why, whylen, "binlog answer: last %llu above the durable end %llu",
                 (unsigned long long)b->last, (unsigned long long)b->durable);
    if (b->n_records > BATCH_MAX)
      return bad(why, whylen, "binlog answer of %zu records (at most %d)", b->n_records,
                 BATCH_MAX);
    uint64_t last = 0;
    for (size_t i = 0; i < b->n_records; i++) {
      const Auralog__Record *r = b->records[i];
      TRY(check_rec_bounds(r, "binlog answer", why, whylen));
      int rc = rec_check(r, PAGE_SIZE_MAX, why, whylen);
      if (rc != ERR_NONE)
        return rc;
      if (!(r->flags & REC_BINLOG) || r->lsn <= last || r->lsn > b->durable)
        return bad(why, whylen, "binlog answer: record %llu is no binlog record, out of "
                   "order or above the durable end", (unsigned long long)r->lsn);
      last = r->lsn;
    }
    return ERR_NONE;
  }
  case AURALOG__ENVELOPE__BODY_BINLOG_CONSUMER: {
    const Auralog__BinlogConsumer *b = e->binlog_consumer;
    if (!wire_name_ok(b->volume))
      return bad(why, whylen, "binlog consumer of a bad volume name");
    if (b->list ? b->name[0] && !wire_name_ok(b->name) : !wire_name_ok(b->name))
      return bad(why, whylen, "a binlog consumer's name must be 1-%d of A-Z a-z 0-9 _ . -",
                 NAME_MAX_LEN);
    if (b->list + b->forget + b->rewind > 1)
      return bad(why, whylen, "a binlog consumer request lists, forgets or rewinds: one of them");
    return lsn_in(b->pos, "binlog consumer position", why, whylen);
  }
  case AURALOG__ENVELOPE__BODY_BINLOG_CONSUMERS: {
    const Auralog__BinlogConsumers *b = e->binlog_consumers;
    if (b->n_consumers > BINLOG_CONSUMERS_MAX)
      return bad(why, whylen, "%zu binlog consumers (at most %d)", b->n_consumers,
                 BINLOG_CONSUMERS_MAX);
    for (size_t i = 0; i < b->n_consumers; i++) {
      if (!wire_name_ok(b->consumers[i]->name))
        return bad(why, whylen, "a binlog consumer with a bad name");
      TRY(lsn_in(b->consumers[i]->pos, "binlog consumer position", why, whylen));
    }
    return ERR_NONE;
  }
  case AURALOG__ENVELOPE__BODY_GOSSIP_PUSH: {
    const Auralog__GossipPush *g = e->gossip_push;
    if (g->n_records > BATCH_MAX)
      return bad(why, whylen, "gossip push of %zu records", g->n_records);
    TRY(lsn_in(g->scl, "gossip push scl", why, whylen));
    uint64_t last = 0;
    for (size_t i = 0; i < g->n_records; i++) {
      TRY(check_rec_bounds(g->records[i], "gossip push", why, whylen));
      int rc = rec_check(g->records[i], PAGE_SIZE_MAX, why, whylen);
      if (rc != ERR_NONE)
        return rc;
      if (g->records[i]->lsn <= last)
        return bad(why, whylen, "gossip records out of LSN order");
      last = g->records[i]->lsn;
    }
    for (size_t i = 0; i < g->n_truncs; i++)
      if (g->truncs[i]->to < g->truncs[i]->from)
        return bad(why, whylen, "gossip truncation with to < from");
    TRY(check_truncs(g->forgot, g->n_forgot, "gossip push (forgot)", why, whylen));
    return check_truncs(g->truncs, g->n_truncs, "gossip push", why, whylen);
  }
  default:
    return bad(why, whylen, "message with no known body");
  }
}
