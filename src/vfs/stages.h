/*
 * stages.h: where one commit's time goes, for `auralog bench` (its stage
 * table, bench/stages.c). The engine times every commit it serves from
 * timestamps taken where each stage ends (monotonic us, now_us(): one
 * clock for every process of the machine), and keeps a histogram per
 * stage; SELECT auralog_stats() hands them out ("stages").
 *
 * The stages of one commit, end to end, and who takes each timestamp:
 *   up       client sends (its Query's sent_us) .. the engine's loop has it
 *            (engine.c on_msg)
 *   queue    .. the writer thread starts it (worker.c run_sql): waiting
 *            behind other clients' requests for the one writer
 *   sql      .. SQLite calls FCNTL_SYNC: every page written (vfs.c ship)
 *   cut      .. the page diff is cut into records with LSNs (volume.c
 *            vol_ship, the LAL wait included)
 *   ship     .. the commit's CPL record went out to its VW-th segment
 *            (vcore.c: the I/O thread woke, batching waited for nodes'
 *            flights, the Appends were written)
 *   persist  .. the VDL passes the commit (vcore.c advance): the nodes
 *            receive, persist (lmdb commit, its fsyncs) and ack, and the
 *            engine counts 4 of 6 acks for every record up to it
 *   reply    .. the engine writes the reply (engine.c release): the loop
 *            woke, and the worker had finished packing it
 *   down     .. the client has it (its next Query's prev_recv_us)
 * engine = arrival .. reply written, measured apart. The stages tile the
 * client's round trip: their means add up to its mean. Commits whose stamps are missing or out
 * of order are counted as skipped, not timed.
 *
 * Cost: a clock read at each boundary (about ten per commit), one lock
 * per commit on the loop thread. Always on; without bench's stamps the
 * up and down stages stay empty.
 */
#ifndef AURALOG_STAGES_H
#define AURALOG_STAGES_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "vfs/volume.h"

enum { ST_UP, ST_QUEUE, ST_SQL, ST_CUT, ST_SHIP, ST_PERSIST, ST_REPLY, ST_DOWN, ST_ENGINE,
       ST_COUNT };

/* Each stage's key (in the JSON), its label and where it ends, for people. */
struct stage_info {
  const char *key, *label, *until;
};
extern const struct stage_info stage_info[ST_COUNT];

/* The engine's stamps of one request (0: not taken). */
struct commit_stamps {
  uint64_t sent;             /* the client's, from its Query */
  uint64_t arrive, start, sync;
};

/* A commit's reply was written at reply_us: time its stages. */
void stages_commit(const struct commit_stamps *s, const struct vol_ctime *vt,
                   uint64_t reply_us);
/* The hop of a commit's reply to its client took us. */
void stages_down(uint64_t us);
/* {"skipped":N, "up":{hist_json}, ...} */
cJSON *stages_json(void);

#endif
