/*
 * record.c: redo records and page versions (see record.h).
 *
 * Invariant kept here: a record that passed rec_check() touches only bytes
 * inside its page, so rec_apply() needs no further bounds checks. Ranges
 * must be sorted and disjoint, as the engine's page diff produces them. A
 * copy range reads the page as it was before the record (after REC_ZERO's
 * clearing), so a record's meaning does not depend on the order in which
 * its ranges are applied.
 */
#include <stdio.h>
#include <string.h>

#include "param.h"
#include "bugs.h"
#include "lib/sum.h"
#include "record.h"
#include "net/wire.h"

uint32_t rec_crc(const Rec *r)
{
  struct sum c;
  sum_init(&c);
  sum_u64(&c, r->lsn);
  sum_u64(&c, r->prev_lsn);
  sum_u64(&c, (uint64_t)r->page_no << 32 | r->flags);
  for (size_t i = 0; i < r->n_ranges; i++) {
    const Auralog__Range *g = r->ranges[i];
    sum_u64(&c, (uint64_t)g->off << 32 | (uint32_t)g->data.len);
    if (g->data.len)
      sum_bytes(&c, g->data.data, g->data.len);
    else
      sum_u64(&c, (uint64_t)g->from << 32 | g->len);   /* a copy */
  }
  /* Everything recovery trusts is covered too: the writer's epoch (rule T,
   * node/segment.h) and a CPL's MTR shape (vfs/recovery.c). */
  sum_u64(&c, r->epoch);
  sum_u64(&c, r->prev_cpl);
  for (size_t i = 0; i < r->n_mtr; i++) {
    sum_u64(&c, r->mtr[i]->pg);
    sum_u64(&c, r->mtr[i]->lsn);
  }
  if (r->binlog.len)           /* absent: the sum is what it was before binlogs */
    sum_bytes(&c, r->binlog.data, r->binlog.len);
  return sum_end(&c);
}

int trunc_cuts(const struct trunc *t, size_t n, uint64_t lsn, uint64_t epoch)
{
  for (size_t i = 0; i < n; i++)
    if (lsn > t[i].from && lsn <= t[i].to &&
        (epoch < t[i].epoch || PLANTED(BUG_TRUNC_ANY_EPOCH)))
      return 1;
  return 0;
}

void rec_seal(Rec *r)
{
  r->crc = rec_crc(r);
}

int rec_check_shape(const Rec *r, uint32_t page_size, char *why, size_t whylen)
{
  unsigned long long lsn = r->lsn;
  if (r->lsn == 0) {
    snprintf(why, whylen, "record with LSN 0");
    return ERR_BAD_MSG;
  }
  if (r->prev_lsn >= r->lsn) {
    snprintf(why, whylen, "record %llu has backlink %llu, not below it", lsn,
             (unsigned long long)r->prev_lsn);
    return ERR_BAD_MSG;
  }
  if (r->flags & ~REC_FLAGS_KNOWN) {
    snprintf(why, whylen, "record %llu has unknown flags 0x%x", lsn, r->flags);
    return ERR_BAD_MSG;
  }
  /* A binlog record (issue 29) carries a transaction's events and no page
   * bytes: it is its MTR's CPL, on page 0 of the binlog PG. A page record
   * carries no events. */
  if ((r->flags & REC_BINLOG) &&
      (!(r->flags & REC_CPL) || (r->flags & REC_ZERO) || r->n_ranges || r->page_no ||
       r->binlog.len == 0 || r->binlog.len > BINLOG_TXN_MAX)) {
    snprintf(why, whylen, "binlog record %llu is malformed (a CPL on page 0 with "
             "1..%d bytes of events and no ranges)", lsn, BINLOG_TXN_MAX);
    return ERR_BAD_MSG;
  }
  if (!(r->flags & REC_BINLOG) && r->binlog.len) {
    snprintf(why, whylen, "record %llu carries binlog events but is no binlog record", lsn);
    return ERR_BAD_MSG;
  }
  if (r->n_ranges > RANGES_MAX) {
    snprintf(why, whylen, "record %llu has %zu ranges (at most %d)", lsn,
             r->n_ranges, RANGES_MAX);
    return ERR_BAD_MSG;
  }
  uint64_t end = 0;
  for (size_t i = 0; i < r->n_ranges; i++) {
    const Auralog__Range *g = r->ranges[i];
    /* A literal carries its bytes; a copy (no bytes) its source and length. */
    uint64_t len = g->data.len ? g->data.len : g->len;
    if (len == 0 || (uint64_t)g->off < end || (g->data.len && (g->from || g->len)) ||
        (!g->data.len && g->from == g->off)) {
      snprintf(why, whylen, "record %llu: range %zu is empty, out of order or malformed",
               lsn, i);
      return ERR_BAD_MSG;
    }
    end = (uint64_t)g->off + len;
    if (end > page_size || (!g->data.len && (uint64_t)g->from + len > page_size)) {
      snprintf(why, whylen, "record %llu writes bytes %u..%llu of a %u-byte page",
               lsn, g->off, (unsigned long long)end, page_size);
      return ERR_OUT_OF_RANGE;
    }
  }
  return ERR_NONE;
}

int rec_check(const Rec *r, uint32_t page_size, char *why, size_t whylen)
{
  int rc = rec_check_shape(r, page_size, why, whylen);
  if (rc == ERR_NONE && rec_crc(r) != r->crc) {
    snprintf(why, whylen, "record %llu fails its CRC check", (unsigned long long)r->lsn);
    return ERR_BAD_CRC;
  }
  return rc;
}

void rec_apply(uint8_t *page, uint32_t page_size, const Rec *r)
{
  /* A page that was freed by a truncation and used again holds old bytes
   * in storage; REC_ZERO makes its first record independent of them. */
  if (r->flags & REC_ZERO)
    memset(page, 0, page_size);
  /* Copies read the page before the record: keep that image first. */
  static _Thread_local uint8_t before[PAGE_SIZE_MAX];
  int copies = 0;
  for (size_t i = 0; i < r->n_ranges && !copies; i++)
    copies = r->ranges[i]->data.len == 0;
  if (copies)
    memcpy(before, page, page_size);
  for (size_t i = 0; i < r->n_ranges; i++) {
    const Auralog__Range *g = r->ranges[i];
    if (g->data.len)
      memcpy(page + g->off, g->data.data, g->data.len);
    else
      memcpy(page + g->off, before + g->from, g->len);
  }
}

uint64_t page_build(uint8_t *out, uint32_t page_size, const uint8_t *base,
                    uint64_t base_lsn, Rec *const *recs, size_t n,
                    uint64_t read_point)
{
  if (base)
    memcpy(out, base, page_size);
  else
    memset(out, 0, page_size);
  uint64_t page_lsn = base_lsn;
  for (size_t i = 0; i < n; i++) {
    if (recs[i]->lsn <= page_lsn)
      continue;             /* already in the image (or a duplicate) */
    if (recs[i]->lsn > read_point)
      break;                /* sorted: everything after is newer still */
    rec_apply(out, page_size, recs[i]);
    page_lsn = recs[i]->lsn;
  }
  return page_lsn;
}

void trunc_proof_from_pb(struct trunc_proof *p, const Auralog__TruncRange *pb)
{
  memset(p, 0, sizeof *p);
  if (pb->writer_pk.len != sizeof p->writer_pk || pb->ticket_sig.len != sizeof p->ticket_sig ||
      pb->sig.len != sizeof p->sig)
    return;
  memcpy(p->writer_pk, pb->writer_pk.data, sizeof p->writer_pk);
  memcpy(p->ticket_sig, pb->ticket_sig.data, sizeof p->ticket_sig);
  memcpy(p->sig, pb->sig.data, sizeof p->sig);
  p->have = 1;
}

void trunc_proof_to_pb(const struct trunc_proof *p, Auralog__TruncRange *pb)
{
  if (!p->have)
    return;
  pb->writer_pk = (ProtobufCBinaryData){sizeof p->writer_pk, (uint8_t *)p->writer_pk};
  pb->ticket_sig = (ProtobufCBinaryData){sizeof p->ticket_sig, (uint8_t *)p->ticket_sig};
  pb->sig = (ProtobufCBinaryData){sizeof p->sig, (uint8_t *)p->sig};
}
