/*
 * bkfmt.c: backup objects as bytes, and their keys (bkfmt.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/bkfmt.h"
#include "backup/objstore.h"
#include "lib/sum.h"
#include "net/wire.h"
#include "param.h"
#include "record.h"

#define HDR 20                 /* magic 4, format 4, kind 4, length 8 */

void bk_prefix_vol(char *key, uint64_t vol)
{
  snprintf(key, BK_KEY_MAX, "v%" PRIu64 "/", vol);
}

void bk_prefix_pg(char *key, uint64_t vol, uint32_t pg)
{
  snprintf(key, BK_KEY_MAX, "v%" PRIu64 "/pg%" PRIu32 "/", vol, pg);
}

void bk_key_log(char *key, uint64_t vol, uint32_t pg, uint64_t from, uint64_t to)
{
  snprintf(key, BK_KEY_MAX, "v%" PRIu64 "/pg%" PRIu32 "/log/%016" PRIx64 "-%016" PRIx64, vol,
           pg, from, to);
}

void bk_key_base(char *key, uint64_t vol, uint32_t pg, uint64_t at, uint64_t ms)
{
  snprintf(key, BK_KEY_MAX, "v%" PRIu64 "/pg%" PRIu32 "/base/%016" PRIx64 "-%016" PRIx64, vol,
           pg, at, ms);
}

void bk_key_retention(char *key, uint64_t vol)
{
  snprintf(key, BK_KEY_MAX, "v%" PRIu64 "/retention", vol);
}

int bk_retention_get(struct objstore *o, uint64_t vol, uint64_t *ms, int *set, char *why,
                     size_t whylen)
{
  char key[BK_KEY_MAX];
  bk_key_retention(key, vol);
  uint8_t *b;
  size_t n;
  *ms = BACKUP_RETENTION_MS;
  *set = 0;
  int rc = obj_get(o, key, &b, &n, why, whylen);
  if (rc == OBJ_NOTFOUND)
    return 0;
  if (rc != 0)
    return OBJ_ERR;
  char txt[32];
  size_t k = n < sizeof txt - 1 ? n : sizeof txt - 1;
  memcpy(txt, b, k);
  txt[k] = 0;
  free(b);
  unsigned long long v = strtoull(txt, NULL, 10);
  if (v >= 1000) {           /* anything shorter is not a retention: the default */
    *ms = v;
    *set = 1;
  }
  return 0;
}

int bk_retention_put(struct objstore *o, uint64_t vol, uint64_t ms, char *why, size_t whylen)
{
  char key[BK_KEY_MAX], txt[32];
  bk_key_retention(key, vol);
  int len = snprintf(txt, sizeof txt, "%" PRIu64, ms);
  return obj_put(o, key, txt, (size_t)len, why, whylen);
}

/* Parse exactly 16 lowercase hex digits. */
static int hex16(const char *s, uint64_t *v)
{
  uint64_t x = 0;
  for (int i = 0; i < 16; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0)
      return -1;
    x = x << 4 | (uint64_t)d;
  }
  *v = x;
  return 0;
}

/* A decimal number without leading zeros (so one key names one object). */
static const char *dec(const char *s, uint64_t *v, uint64_t max)
{
  if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
    return NULL;
  uint64_t x = 0;
  while (*s >= '0' && *s <= '9') {
    uint64_t d = (uint64_t)(*s++ - '0');
    if (x > (max - d) / 10)
      return NULL;
    x = x * 10 + d;
  }
  *v = x;
  return s;
}

int bk_key_parse(const char *key, struct bk_key *k)
{
  uint64_t vol, pg;
  const char *s = key;
  if (*s++ != 'v' || (s = dec(s, &vol, UINT64_MAX)) == NULL || strncmp(s, "/pg", 3) != 0 ||
      (s = dec(s + 3, &pg, UINT32_MAX)) == NULL || *s++ != '/')
    return -1;
  *k = (struct bk_key){.vol = vol, .pg = (uint32_t)pg};
  if (strncmp(s, "log/", 4) == 0 && strlen(s + 4) == 33 && s[20] == '-' &&
      hex16(s + 4, &k->a) == 0 && hex16(s + 21, &k->b) == 0 && k->a < k->b) {
    k->kind = BK_LOG;
    return 0;
  }
  if (strncmp(s, "base/", 5) == 0 && strlen(s + 5) == 33 && s[21] == '-' &&
      hex16(s + 5, &k->a) == 0 && hex16(s + 22, &k->b) == 0) {
    k->kind = BK_BASE;
    return 0;
  }
  return -1;
}

uint8_t *bk_encode(int kind, const ProtobufCMessage *m, size_t *len)
{
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(HDR + n + 4);
  memcpy(b, "ALBK", 4);
  put_be32(b + 4, BK_FORMAT);
  put_be32(b + 8, (uint32_t)kind);
  put_be64(b + 12, n);
  protobuf_c_message_pack(m, b + HDR);
  put_be32(b + HDR + n, sum32(b, HDR + n));
  *len = HDR + n + 4;
  return b;
}

/* The payload of an object of kind, after its frame is checked. */
static const uint8_t *unframe(const char *key, const uint8_t *b, size_t n, int kind,
                              size_t *plen, char *why, size_t whylen)
{
  if (n < HDR + 4 || memcmp(b, "ALBK", 4) != 0) {
    snprintf(why, whylen, "backup object %s: not a backup object (%zu bytes)", key, n);
    return NULL;
  }
  uint32_t fmt = get_be32(b + 4), k = get_be32(b + 8);
  uint64_t len = get_be64(b + 12);
  if (fmt != BK_FORMAT) {
    snprintf(why, whylen, "backup object %s: format %u, this auralog reads format %u%s", key,
             fmt, BK_FORMAT, fmt > BK_FORMAT ? " (written by a newer auralog)" : "");
    return NULL;
  }
  if (k != (uint32_t)kind) {
    snprintf(why, whylen, "backup object %s: holds kind %u, its name says %d", key, k, kind);
    return NULL;
  }
  if (len != n - HDR - 4) {
    snprintf(why, whylen, "backup object %s: %zu bytes, its header says %" PRIu64
             " (torn or truncated)", key, n, len + HDR + 4);
    return NULL;
  }
  if (get_be32(b + HDR + len) != sum32(b, HDR + len)) {
    snprintf(why, whylen, "backup object %s: checksum does not match (damaged)", key);
    return NULL;
  }
  *plen = len;
  return b + HDR;
}

Auralog__BackupLog *bk_decode_log(const char *key, const uint8_t *b, size_t n, char *why,
                                  size_t whylen)
{
  struct bk_key k;
  size_t plen;
  if (bk_key_parse(key, &k) != 0 || k.kind != BK_LOG) {
    snprintf(why, whylen, "backup object %s: not the name of a log piece", key);
    return NULL;
  }
  const uint8_t *p = unframe(key, b, n, BK_LOG, &plen, why, whylen);
  if (p == NULL)
    return NULL;
  Auralog__BackupLog *m = auralog__backup_log__unpack(NULL, plen, p);
  if (m == NULL) {
    snprintf(why, whylen, "backup object %s: cannot decode its log piece", key);
    return NULL;
  }
  char rwhy[200] = "";
  const char *bad = NULL;
  if (m->volume_id != k.vol || m->pg != k.pg || m->from != k.a || m->to != k.b)
    bad = "holds another volume, PG or range than its name says";
  else if (m->page_size == 0 || m->page_size > PAGE_SIZE_MAX || m->npages == 0)
    bad = "has no page geometry";
  else if (m->n_clock % 2 != 0)
    bad = "has a clock of odd length";
  uint64_t prev = 0;
  for (size_t i = 0; bad == NULL && i < m->n_records; i++) {
    const Rec *r = m->records[i];
    if (r->lsn <= (i ? prev : m->from) || r->lsn > m->to)
      bad = "has a record out of order or outside its range";
    else if (i ? r->prev_lsn != prev : r->prev_lsn > m->from)
      bad = "has a record off the PG's chain (a backlink to a record it lacks)";
    else if (r->page_no < m->first_page || r->page_no - m->first_page >= m->npages)
      bad = "has a record of a page outside its PG";
    else if (rec_check(r, m->page_size, rwhy, sizeof rwhy) != ERR_NONE)
      bad = rwhy;
    prev = r->lsn;
  }
  if (bad) {
    snprintf(why, whylen, "backup object %s: %s", key, bad);
    auralog__backup_log__free_unpacked(m, NULL);
    return NULL;
  }
  return m;
}

Auralog__BackupBase *bk_decode_base(const char *key, const uint8_t *b, size_t n, char *why,
                                    size_t whylen)
{
  struct bk_key k;
  size_t plen;
  if (bk_key_parse(key, &k) != 0 || k.kind != BK_BASE) {
    snprintf(why, whylen, "backup object %s: not the name of a base image", key);
    return NULL;
  }
  const uint8_t *p = unframe(key, b, n, BK_BASE, &plen, why, whylen);
  if (p == NULL)
    return NULL;
  Auralog__BackupBase *m = auralog__backup_base__unpack(NULL, plen, p);
  if (m == NULL) {
    snprintf(why, whylen, "backup object %s: cannot decode its base image", key);
    return NULL;
  }
  const char *bad = NULL;
  if (m->volume_id != k.vol || m->pg != k.pg || m->at != k.a)
    bad = "holds another volume, PG or point than its name says";
  else if (m->page_size == 0 || m->page_size > PAGE_SIZE_MAX || m->npages == 0)
    bad = "has no page geometry";
  for (size_t i = 0; bad == NULL && i < m->n_pages; i++) {
    const Auralog__BasePage *pg = m->pages[i];
    if (pg->page_no < m->first_page || pg->page_no - m->first_page >= m->npages)
      bad = "has a page outside its PG";
    else if (i > 0 && pg->page_no <= m->pages[i - 1]->page_no)
      bad = "has pages out of order";
    else if (pg->data.len != m->page_size)
      bad = "has a page of the wrong size";
  }
  if (bad) {
    snprintf(why, whylen, "backup object %s: %s", key, bad);
    auralog__backup_base__free_unpacked(m, NULL);
    return NULL;
  }
  return m;
}
