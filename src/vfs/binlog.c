/*
 * binlog.c: the engine's binlog (issue 29; binlog.h): what becomes of
 * each committed transaction's events once change capture (capture.c)
 * hands them over.
 *
 * Step 1 of the issue keeps them in memory only: a ring of the newest
 * BINLOG_RECENT transactions, packed as they would go on the wire, and
 * SELECT auralog_binlog_recent(K) on the engine's connections (worker.c)
 * shows them as JSON. Nothing reads the ring but that function; the next
 * steps ship each transaction, to the storage tier (enhanced) or to a
 * local file with a two-phase commit (community), and serve consumers.
 *
 * Durability: capture hands a transaction over when the engine commits
 * it, which is before the volume has it durable (the VDL reaches its
 * commit LSN later; a crash before then truncates it, §4.3). The ring
 * says which of its transactions the VDL covers ("durable"); a consumer
 * must see only those (invariant 12: no truncated transaction has
 * events), as the journal's schema changes wait for the VDL (ddl.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "vfs/binlog.h"
#include "vfs/capture.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint8_t *buf;
  size_t len;
} ring[BINLOG_RECENT];
static uint64_t next;        /* transactions kept so far (ring[next % max] is the next) */

static pthread_mutex_t smu = PTHREAD_MUTEX_INITIALIZER;
static struct binlog_stats stats = {.mode = "off"};

void binlog_set_mode(const char *mode)
{
  pthread_mutex_lock(&smu);
  stats.mode = mode;
  pthread_mutex_unlock(&smu);
}

void binlog_count(size_t len)
{
  pthread_mutex_lock(&smu);
  stats.txns++;
  stats.events_bytes += len;
  pthread_mutex_unlock(&smu);
}

void binlog_count_2pc(uint64_t prepare_us, uint64_t binlog_us, uint64_t commit_us,
                      uint64_t fsyncs, uint64_t file_bytes)
{
  pthread_mutex_lock(&smu);
  stats.prepare_us += prepare_us;
  stats.binlog_us += binlog_us;
  stats.commit_us += commit_us;
  stats.fsyncs = fsyncs;
  stats.file_bytes = file_bytes;
  pthread_mutex_unlock(&smu);
}

void binlog_set_scan(uint64_t us, uint64_t bytes, uint64_t frames)
{
  pthread_mutex_lock(&smu);
  stats.scan_us = us;
  stats.scan_bytes = bytes;
  stats.scan_frames = frames;
  pthread_mutex_unlock(&smu);
}

void binlog_note_rollforward(void)
{
  pthread_mutex_lock(&smu);
  stats.rolled_forward++;
  pthread_mutex_unlock(&smu);
}

void binlog_stats_get(struct binlog_stats *out)
{
  pthread_mutex_lock(&smu);
  *out = stats;
  pthread_mutex_unlock(&smu);
}

cJSON *binlog_stats_json(void)
{
  struct binlog_stats s;
  binlog_stats_get(&s);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", s.mode);
  cJSON_AddNumberToObject(o, "txns", (double)s.txns);
  cJSON_AddNumberToObject(o, "events_bytes", (double)s.events_bytes);
  cJSON_AddNumberToObject(o, "prepare_us", (double)s.prepare_us);
  cJSON_AddNumberToObject(o, "binlog_us", (double)s.binlog_us);
  cJSON_AddNumberToObject(o, "commit_us", (double)s.commit_us);
  cJSON_AddNumberToObject(o, "fsyncs", (double)s.fsyncs);
  cJSON_AddNumberToObject(o, "file_bytes", (double)s.file_bytes);
  cJSON_AddNumberToObject(o, "scan_us", (double)s.scan_us);
  cJSON_AddNumberToObject(o, "scan_bytes", (double)s.scan_bytes);
  cJSON_AddNumberToObject(o, "scan_frames", (double)s.scan_frames);
  cJSON_AddNumberToObject(o, "rolled_forward", (double)s.rolled_forward);
  return o;
}

static _Thread_local uint8_t *offered;
static _Thread_local size_t offered_len;

void binlog_offer(uint8_t *buf, size_t len)
{
  free(offered);
  offered = buf;
  offered_len = len;
}

uint8_t *binlog_take(size_t *len)
{
  uint8_t *b = offered;
  *len = offered_len;
  offered = NULL;
  offered_len = 0;
  return b;
}

void binlog_sink(void *arg, const Auralog__BinlogTxn *txn)
{
  (void)arg;
  size_t len = auralog__binlog_txn__get_packed_size(txn);
  uint8_t *buf = malloc(len ? len : 1);
  if (buf == NULL)
    return;                  /* the ring is a debugging aid: it may miss one */
  auralog__binlog_txn__pack(txn, buf);
  pthread_mutex_lock(&mu);
  size_t i = next++ % BINLOG_RECENT;
  free(ring[i].buf);
  ring[i].buf = buf;
  ring[i].len = len;
  pthread_mutex_unlock(&mu);
}

static cJSON *value_json(const Auralog__BinlogValue *v)
{
  cJSON *o;
  char *hex;
  switch (v->type) {
  case SQLITE_INTEGER:
    if (v->i > -(1LL << 53) && v->i < (1LL << 53))
      return cJSON_CreateNumber((double)v->i);
    o = cJSON_CreateObject();
    char digits[24];
    snprintf(digits, sizeof digits, "%lld", (long long)v->i);
    cJSON_AddStringToObject(o, "integer", digits);
    return o;
  case SQLITE_FLOAT:
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "real", v->r);
    return o;
  case SQLITE_TEXT:
    hex = malloc(v->b.len + 1);
    if (hex == NULL)
      return cJSON_CreateNull();
    memcpy(hex, v->b.data, v->b.len);
    hex[v->b.len] = 0;
    o = cJSON_CreateString(hex);
    free(hex);
    return o;
  case SQLITE_BLOB:
    hex = malloc(2 * v->b.len + 1);
    if (hex == NULL)
      return cJSON_CreateNull();
    for (size_t i = 0; i < v->b.len; i++)
      snprintf(hex + 2 * i, 3, "%02x", v->b.data[i]);
    hex[2 * v->b.len] = 0;
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "blob", hex);
    free(hex);
    return o;
  default:
    return cJSON_CreateNull();
  }
}

static cJSON *values_json(Auralog__BinlogValue **v, size_t n)
{
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++)
    cJSON_AddItemToArray(a, value_json(v[i]));
  return a;
}

cJSON *binlog_txn_json(const Auralog__BinlogTxn *t)
{
  static const char *const ops[] = {"?", "insert", "update", "delete", "ddl", "lost"};
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "commit_lsn", (double)t->commit_lsn);
  cJSON_AddNumberToObject(o, "wall_ms", (double)t->wall_ms);
  cJSON *evs = cJSON_AddArrayToObject(o, "events");
  for (size_t i = 0; i < t->n_events; i++) {
    const Auralog__BinlogEvent *e = t->events[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "index", e->index);
    cJSON_AddStringToObject(j, "op", ops[e->op <= BINLOG_LOST ? e->op : 0]);
    cJSON_AddStringToObject(j, "table", e->table ? e->table : "");
    if (e->op == BINLOG_DDL || e->op == BINLOG_LOST) {
      cJSON_AddStringToObject(j, "ddl_op", e->ddl_op ? e->ddl_op : "");
      cJSON_AddStringToObject(j, "sql", e->sql ? e->sql : "");
    } else if (e->rowid_table) {
      cJSON_AddNumberToObject(j, "rowid", (double)e->rowid);
      if (e->op == BINLOG_UPDATE && e->new_rowid != e->rowid)
        cJSON_AddNumberToObject(j, "new_rowid", (double)e->new_rowid);
    } else {
      cJSON_AddItemToObject(j, "key", values_json(e->key, e->n_key));
    }
    if (e->n_before)
      cJSON_AddItemToObject(j, "before", values_json(e->before, e->n_before));
    if (e->n_after)
      cJSON_AddItemToObject(j, "after", values_json(e->after, e->n_after));
    cJSON_AddItemToArray(evs, j);
  }
  return o;
}

char *binlog_recent_json(int k, uint64_t vdl)
{
  cJSON *a = cJSON_CreateArray();
  pthread_mutex_lock(&mu);
  uint64_t have = next < BINLOG_RECENT ? next : BINLOG_RECENT;
  uint64_t n = k < 0 ? 0 : (uint64_t)k < have ? (uint64_t)k : have;
  for (uint64_t s = next - n; s < next; s++) {
    Auralog__BinlogTxn *t = auralog__binlog_txn__unpack(NULL, ring[s % BINLOG_RECENT].len,
                                                        ring[s % BINLOG_RECENT].buf);
    if (t == NULL)
      continue;
    cJSON *o = binlog_txn_json(t);
    cJSON_AddBoolToObject(o, "durable", t->commit_lsn <= vdl);
    cJSON_AddItemToArray(a, o);
    auralog__binlog_txn__free_unpacked(t, NULL);
  }
  pthread_mutex_unlock(&mu);
  char *txt = cJSON_PrintUnformatted(a);
  cJSON_Delete(a);
  return txt;
}
