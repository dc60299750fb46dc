/*
 * wire.c: frames and message validation (see wire.h).
 *
 * protobuf-c accepts many random buffers and enforces no size limit, so two
 * guards stand between the network and the roles: the frame length is
 * compared with FRAME_MAX before allocating, and wire_check() validates
 * every field of what unpacked (Invariant 6, DESIGN.md §4).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "record.h"
#include "wire.h"

static const char *errnames[] = {
  "ok", "bad frame", "bad message", "unknown segment", "stale epoch",
  "not complete", "out of range", "bad crc", "conflict", "disk full",
  "not found", "internal", "unavailable",
};

const char *wire_errname(uint32_t code)
{
  if (code < sizeof errnames / sizeof errnames[0])
    return errnames[code];
  return "error";
}

uint8_t *wire_frame(const Env *env, size_t *len)
{
  size_t n = auralog__envelope__get_packed_size(env);
  if (n > FRAME_MAX)
    return NULL;
  uint8_t *buf = malloc(4 + n);
  if (buf == NULL)
    return NULL;
  put_be32(buf, (uint32_t)n);
  auralog__envelope__pack(env, buf + 4);
  *len = 4 + n;
  return buf;
}

int wire_parse(const uint8_t *buf, size_t n, Env **out, size_t *used,
               size_t *need, char *why, size_t whylen)
{
  *out = NULL;
  *used = 0;
  *need = 4;
  if (n < 4)
    return 0;
  uint32_t len = get_be32(buf);
  if (len > FRAME_MAX) {
    snprintf(why, whylen, "frame of %u bytes is over the %u-byte limit",
             len, FRAME_MAX);
    return -1;
  }
  if (len == 0) {
    snprintf(why, whylen, "empty frame");
    return -1;
  }
  *need = 4 + (size_t)len;
  if (n < *need)
    return 0;
  Env *env = auralog__envelope__unpack(NULL, len, buf + 4);
  if (env == NULL) {
    snprintf(why, whylen, "frame of %u bytes is not an auralog message", len);
    return -1;
  }
  *out = env;
  *used = *need;
  return 1;
}

void wire_free(Env *env)
{
  if (env)
    auralog__envelope__free_unpacked(env, NULL);
}

void wire_error(Env *env, Auralog__Error *err, uint64_t req, uint32_t code,
                const char *msg)
{
  auralog__envelope__init(env);
  auralog__error__init(err);
  err->code = code;
  err->msg = (char *)msg;
  env->req = req;
  env->body_case = AURALOG__ENVELOPE__BODY_ERROR;
  env->error = err;
}

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

static int page_size_ok(uint32_t ps)
{
  return ps >= 512 && ps <= PAGE_SIZE_MAX && (ps & (ps - 1)) == 0;
}

static int check_segment(const Auralog__Segment *s, char *why, size_t whylen)
{
  if (!wire_name_ok(s->node) || !az_ok(s->az) || !addr_ok(s->addr))
    return bad(why, whylen, "segment of pg %u has a bad node, az or address", s->pg);
  if (s->npages == 0 || !page_size_ok(s->page_size) || s->volume_id == 0)
    return bad(why, whylen, "segment of pg %u has a bad geometry", s->pg);
  return ERR_NONE;
}

static int check_append(const Auralog__Append *a, char *why, size_t whylen)
{
  if (a->volume_id == 0)
    return bad(why, whylen, "append without a volume id");
  if (a->epoch == 0)
    return bad(why, whylen, "append without an epoch");
  if (a->n_records > BATCH_MAX)   /* 0: only tells the writer's VDL */
    return bad(why, whylen, "append of %zu records (at most %d)",
               a->n_records, BATCH_MAX);
  uint64_t last = 0;
  for (size_t i = 0; i < a->n_records; i++) {
    const Auralog__Record *r = a->records[i];
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

int wire_check(const Env *e, char *why, size_t whylen)
{
  switch (e->body_case) {
  case AURALOG__ENVELOPE__BODY_ERROR:
    if (e->error->msg && strlen(e->error->msg) > 4096)
      return bad(why, whylen, "error text too long");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_APPEND:
    return check_append(e->append, why, whylen);
  case AURALOG__ENVELOPE__BODY_APPEND_ACK:
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_READ_PAGE:
    if (e->read_page->volume_id == 0)
      return bad(why, whylen, "page read without a volume id");
    if (e->read_page->need > e->read_page->read_point)
      return bad(why, whylen, "page read needs LSN %llu above its read point %llu",
                 (unsigned long long)e->read_page->need,
                 (unsigned long long)e->read_page->read_point);
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_PAGE:
    if (e->page->data.len > PAGE_SIZE_MAX)
      return bad(why, whylen, "page of %zu bytes", e->page->data.len);
    return ERR_NONE;
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
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_VOLUME: {
    const Auralog__Volume *v = e->volume;
    if (!wire_name_ok(v->name) || !page_size_ok(v->page_size) || v->n_pgs > MAX_PGS)
      return bad(why, whylen, "malformed volume description");
    for (size_t i = 0; i < v->n_pgs; i++) {
      if (v->pgs[i]->n_segments != NCOPIES)
        return bad(why, whylen, "pg %u has %zu segments", v->pgs[i]->pg,
                   v->pgs[i]->n_segments);
      for (size_t j = 0; j < NCOPIES; j++)
        if (check_segment(v->pgs[i]->segments[j], why, whylen))
          return ERR_BAD_MSG;
    }
    return ERR_NONE;
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
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_SEG_QUERY:
    if (e->seg_query->volume_id == 0 || e->seg_query->epoch == 0)
      return bad(why, whylen, "segment query without volume or epoch");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_SEG_INFO:
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_TRUNCATE: {
    const Auralog__Truncate *t = e->truncate;
    if (t->volume_id == 0 || t->epoch == 0 || t->to < t->from)
      return bad(why, whylen, "truncation without volume or epoch, or with to < from");
    return ERR_NONE;
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
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_DROP_VOLUME:
    if (!wire_name_ok(e->drop_volume->name))
      return bad(why, whylen, "bad volume name");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_OK:
  case AURALOG__ENVELOPE__BODY_NODE_FAULTS:
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_FAULT: {
    const Auralog__Fault *f = e->fault;
    if (strcmp(f->action, "partition") && strcmp(f->action, "heal") && strcmp(f->action, "slow"))
      return bad(why, whylen, "unknown fault '%s'", f->action);
    if (!strcmp(f->action, "partition") && !az_ok(f->az))
      return bad(why, whylen, "partition needs an AZ: A, B or C");
    if (!strcmp(f->action, "slow") && (!wire_name_ok(f->node) || f->ms > 60000))
      return bad(why, whylen, "slow needs a node id and 0..60000 ms");
    return ERR_NONE;
  }
  case AURALOG__ENVELOPE__BODY_GOSSIP_PULL:
    if (e->gossip_pull->volume_id == 0 || !wire_name_ok(e->gossip_pull->node))
      return bad(why, whylen, "gossip pull without volume or node");
    return ERR_NONE;
  case AURALOG__ENVELOPE__BODY_GOSSIP_PUSH: {
    const Auralog__GossipPush *g = e->gossip_push;
    if (g->n_records > BATCH_MAX)
      return bad(why, whylen, "gossip push of %zu records", g->n_records);
    uint64_t last = 0;
    for (size_t i = 0; i < g->n_records; i++) {
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
    return ERR_NONE;
  }
  default:
    return bad(why, whylen, "message with no known body");
  }
}
