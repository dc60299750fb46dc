/*
 * community.c: the community binlog (issue 29, seed 003): MySQL's binlog,
 * a file of the engine's own kept in agreement with the redo by a
 * two-phase commit. `auralog engine --binlog community` runs it; it is the
 * baseline the enhanced binlog (ship.c B1, in the storage tier) is
 * measured against, so it is kept faithful: the same stages in the same
 * order, serially, as MySQL with sync_binlog=1 and XA between the binlog
 * and the engine.
 *
 * A commit with row events (community_commit, from the VFS's ship on the
 * committing thread, SQLite's write lock held, so commits come one at a
 * time):
 *   1. prepare (vol_prepare, vol_wait_vcl): the transaction's page records
 *      are shipped without their CPL, and the commit waits until every one
 *      is at write quorum. Durable, not committed: no CPL covers them.
 *   2. the binlog (blfile.c): the events are appended with the XID, the
 *      LSN the commit record will have, and the file is fdatasynced. This
 *      is the commit point.
 *   3. commit (vol_commit_prepared): the commit record, the MTR's CPL,
 *      goes out; the client's COMMIT waits for the VDL to pass it, as any.
 *
 * Recovery (community_open, before the volume opens): the whole file is
 * read, frame by frame (blf_open's scan: its cost grows with the file, as
 * MySQL's does), and its newest XID goes to the volume's recovery, which
 * writes the commit record of that transaction if it was prepared whole
 * above the VDL (recovery.h recover_rollforward): it rolls forward. After
 * the open (community_opened), a frame above the VDL the volume serves
 * from names a commit that never happened (its prepare was not whole):
 * it is cut from the file.
 *
 * Rules:
 *   CB1. A frame is written only after its transaction's records are all
 *        at write quorum (step 1 before 2): so a recovery that finds the
 *        frame finds the records (a read quorum meets every write quorum).
 *   CB2. The commit record goes out only after the frame is durable (2
 *        before 3): so a durable commit always has its events in the file.
 *   CB3. A failure after step 1 stops the volume (vol_fence): its prepared
 *        records must not be covered by a later MTR's CPL, and only a
 *        recovery can settle them (MySQL's binlog_error_action=ABORT_SERVER).
 * A transaction with no events (it changed no row: only pages) commits as
 * usual, with no frame.
 *
 * Across a failover the binlog file stays with the old writer's machine:
 * the promoted writer starts a file of its own (MySQL's "new file
 * sequence"), which is what the enhanced binlog does better. One case it
 * cannot settle: a crash after step 2, and then a recovery on another
 * host (a promotion), which has no frame of this file, so truncates the
 * prepared transaction; the frame stays in this file, an orphan, naming
 * a commit that never happened. If this engine opens the volume again
 * later, that frame is at or below the VDL by then and is not cut. The
 * simulator counts such frames (sim/cbinlog.c CM2: not a violation of
 * this design); a consumer of a file that outlived a failover should
 * start over from the new writer's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "param.h"
#include "vfs/binlog.h"
#include "vfs/blfile.h"
#include "vfs/community.h"

static struct blfile *bf;
static char bf_path[4096];

/* A crash at a stage of the two-phase commit, for tests and lab 13:
 * AURALOG_BINLOG_CRASH=after-prepare or after-binlog makes the engine die
 * there (as kill -9 would: nothing flushed, nothing closed), once. */
static void crash_point(const char *stage)
{
  const char *at = getenv("AURALOG_BINLOG_CRASH");
  if (at && strcmp(at, stage) == 0) {
    logwarn("binlog: AURALOG_BINLOG_CRASH=%s: the engine dies here", stage);
    _exit(137);
  }
}

int community_on(void)
{
  return bf != NULL;
}

const char *community_path(void)
{
  return bf_path;
}

int community_open(const char *path, char *why, size_t whylen)
{
  struct blf_scan scan;
  snprintf(bf_path, sizeof bf_path, "%s", path);
  if ((bf = blf_open(path, NULL, NULL, &scan, why, whylen)) == NULL)
    return -1;
  binlog_set_scan(scan.usec, scan.bytes, scan.frames);
  loginfo("binlog %s: recovery read %llu frames, %llu bytes, in %llu ms%s", path,
          (unsigned long long)scan.frames, (unsigned long long)scan.bytes,
          (unsigned long long)scan.usec / 1000,
          scan.torn ? "; a torn last frame was cut" : "");
  vol_rollforward_xid(scan.last_xid);
  return 0;
}

int community_opened(struct volume *v, char *why, size_t whylen)
{
  struct vol_stats st;
  vol_get_stats(v, &st);
  if (st.rolled_forward)
    binlog_note_rollforward();
  struct blf_stats bs;
  blf_stats(bf, &bs);
  if (bs.last_xid <= st.vdl)
    return 0;
  /* A frame above the VDL served from: its commit never happened. */
  uint64_t cut = 0;
  if (blf_cut_after(bf, st.vdl, &cut, why, whylen) != 0)
    return -1;
  logwarn("binlog %s: %llu bytes of frames above vdl %llu cut: their transactions were "
          "not prepared whole, so never committed", bf_path, (unsigned long long)cut,
          (unsigned long long)st.vdl);
  return 0;
}

uint64_t community_commit(struct volume *v, const struct mtr_page *pages, size_t n,
                          uint8_t *bl, size_t bllen, char *why, size_t whylen)
{
  uint64_t t0 = now_us();
  uint64_t last = vol_prepare(v, pages, n, why, whylen);
  if (last == 0) {
    free(bl);
    return 0;                 /* refused before anything had an LSN: as any commit */
  }
  uint64_t xid = last + 1, ticket = 0;
  if (vol_wait_vcl(v, last, COMMIT_DEADLINE_MS, why, whylen) != 0)
    goto stop;                /* CB3 */
  crash_point("after-prepare");
  uint64_t t1 = now_us();
  if (blf_append(bf, xid, bl, bllen, &ticket, why, whylen) != 0 ||   /* CB1 */
      blf_sync(bf, ticket, why, whylen) != 0)
    goto stop;                /* CB3 */
  crash_point("after-binlog");
  uint64_t t2 = now_us();
  uint64_t cpl = vol_commit_prepared(v);   /* CB2 */
  struct blf_stats bs;
  blf_stats(bf, &bs);
  binlog_count_2pc(t1 - t0, t2 - t1, now_us() - t2, bs.syncs, bs.size);
  free(bl);
  return cpl;
stop:
  free(bl);
  {
    char msg[400];
    snprintf(msg, sizeof msg, "the community binlog's commit of xid %llu failed after its "
             "prepare (%s): the volume stops; restart the engine, and its recovery settles "
             "the prepared transaction", (unsigned long long)xid, why);
    vol_fence(v, msg);
    snprintf(why, whylen, "%s", msg);
  }
  return 0;
}

void community_close(void)
{
  blf_close(bf);
  bf = NULL;
}
