/*
 * binlog.h: the engine's binlog (issue 29): where the transactions that
 * change capture hands over go (binlog.c). Step 1: a ring of the newest
 * BINLOG_RECENT, to look at through SELECT auralog_binlog_recent(K).
 */
#ifndef AURALOG_BINLOG_H
#define AURALOG_BINLOG_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "auralog.pb-c.h"

/* The enhanced binlog's hand-over (ship.c B1): the connection's commit
 * hook packs the committing transaction's events (capture_commit) and
 * offers them here; the VFS, shipping that commit's MTR on the same
 * thread (SQLite's commit hook runs inside the commit, before the VFS is
 * asked to sync), takes them. Per thread; an offer replaces (and frees)
 * one not taken, as does a take. binlog_take: NULL if none. */
void binlog_offer(uint8_t *buf, size_t len);
uint8_t *binlog_take(size_t *len);

/* What the binlog cost and holds, for `SELECT auralog_stats()` ("binlog")
 * and `auralog bench binlog`. Times are microseconds summed over commits;
 * the community fields stay 0 in other modes. */
struct binlog_stats {
  const char *mode;            /* "off", "community", "enhanced" */
  uint64_t txns, events_bytes; /* transactions with events, their packed bytes */
  /* community: the 2PC's stages, per commit summed: prepare (the redo
   * without its commit record, until at write quorum), the binlog file's
   * append and fsync, the commit record's send; and the file. */
  uint64_t prepare_us, binlog_us, commit_us, fsyncs, file_bytes;
  /* community: the open's recovery scan of the binlog file (0: none yet) */
  uint64_t scan_us, scan_bytes, scan_frames, rolled_forward;
};
void binlog_stats_get(struct binlog_stats *out);
/* The same, as a JSON object (caller frees with cJSON_Delete). */
cJSON *binlog_stats_json(void);
/* The community binlog's counters (community.c): one commit's stages (µs)
 * and the file's fsyncs and size after it; the open's recovery scan; a
 * recovery rolled a prepared transaction forward. */
void binlog_count_2pc(uint64_t prepare_us, uint64_t binlog_us, uint64_t commit_us,
                      uint64_t fsyncs, uint64_t file_bytes);
void binlog_set_scan(uint64_t us, uint64_t bytes, uint64_t frames);
void binlog_note_rollforward(void);
/* Counting: a transaction's events, packed (len bytes), went out. */
void binlog_count(size_t len);
/* The engine's mode (engine --binlog), for the stats. */
void binlog_set_mode(const char *mode);

/* capture's sink (capture.h): keep a copy of txn. Any thread. */
void binlog_sink(void *arg, const Auralog__BinlogTxn *txn);
/* The newest k transactions kept, oldest first, as a JSON array text
 * (caller frees); each says whether vdl covers its commit ("durable").
 * NULL if out of memory. */
char *binlog_recent_json(int k, uint64_t vdl);
/* One transaction as JSON: {"commit_lsn", "wall_ms", "events": [{"index",
 * "op", "table", "rowid" | "key", "before", "after", "ddl_op", "sql"}]};
 * values: null, a number (INTEGER), {"real": x}, "text", {"blob": "hex"}
 * (an INTEGER past 2^53, {"integer": "digits"}). */
cJSON *binlog_txn_json(const Auralog__BinlogTxn *t);

#endif
