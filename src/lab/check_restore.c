/*
 * lab/check_restore.c: lab 12's check: a table dropped by mistake, the
 * moment found in the journal, and the volume restored from its backup
 * to just before it, into a new volume (paper Fig. 4 step 6, §2.3;
 * backup/restore.h).
 *
 * The concepts: the storage nodes stage each PG's log and page images to
 * an object store in the background (node/nbackup.c); a restore rebuilds
 * the volume as of any point in the backup's window, landing on the
 * highest CPL at or below the target, so no transaction is in it in part.
 * It never rewinds the live volume: it makes a new one, beside it, and
 * the writes made since stay where they are.
 *
 * What the check reads:
 *   - the lab's history (the coordinator's journal): the assigned table's
 *     "ddl" events (its create and its drop, each with the LSN of the
 *     commit that made it; the writer reports them once the VDL covers
 *     them: vfs/ddl.c) and the operator's "restore" (which volume, into
 *     which new one, the CPL restored: cli/backupcli.c);
 *   - the backup itself: the check restores the same point again, from
 *     the cluster's object store into a file of its own, and counts the
 *     rows there (so the rows a student reports are the backup's, not
 *     the journal's word or the student's);
 *   - the cluster now: the new volume exists at the coordinator; the
 *     write loop's table in the live volume holds more rows than the
 *     restored point (what a restore to the past leaves behind).
 * The answers are compared with those: the drop's LSN, the point
 * restored, the rows of the table and of the write loop at that point.
 * Everything the check read from the backup and the cluster goes into its
 * evidence (as its SQL answers do), so `lab verify` can replay it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "backup/objstore.h"
#include "backup/restore.h"
#include "cli/status.h"
#include "lab/lab.h"
#include "lib/conf.h"
#include "net/rpc.h"

#define LAB12_TABLE "lab12_orders"   /* a demo's table and rows (run.sh's defaults) */
#define LAB12_ROWS  500

/* What the window shows of the table, its drop and the restore. */
struct l12 {
  const cJSON *create, *drop, *restore;
  const cJSON *other_drop;     /* a drop of another table (a student's slip) */
  double vol_id;               /* the volume's id, as the coordinator's gc samples name it */
};

/* Replay the window. A create of the table starts an attempt afresh
 * (a retry), a drop after it is the mistake, and the last restore of the
 * volume after the drop is the one graded. A coordinator restarted within
 * DDL_NOTE_KEEP_MS journals a change again: each (epoch, seq) counts once. */
static void l12_replay(struct labctx *x, const char *table, struct l12 *r)
{
  memset(r, 0, sizeof *r);
  r->vol_id = -1;
  const char *vol = fstr(x->status, "volume");
  double epoch = -1, seq = -1;
  for (long i = 0; i < hist_len(x); i++) {
    const cJSON *e = hist_at(x, i);
    if (is(e, "gc") && !strcmp(fstr(e, "volume"), vol))
      r->vol_id = fnum(e, "volume_id");
  }
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (is(e, "ddl") && !strcmp(fstr(e, "volume"), vol)) {
      if (fnum(e, "epoch") == epoch && fnum(e, "seq") <= seq)
        continue;              /* journaled again */
      epoch = fnum(e, "epoch");
      seq = fnum(e, "seq");
      const char *op = fstr(e, "op");
      int mine = !strcmp(fstr(e, "name"), table);
      if (mine && !strcmp(op, "create table")) {
        r->create = e;
        r->drop = r->restore = NULL;
      } else if (mine && !strcmp(op, "drop table") && r->create) {
        r->drop = e;
        r->restore = NULL;
      } else if (!mine && !strcmp(op, "drop table")) {
        r->other_drop = e;
      }
    } else if (is(e, "restore") && r->drop && !strcmp(fstr(e, "volume"), vol)) {
      r->restore = e;
    }
  }
}

/* The backup as the cluster keeps it (cluster.json "backup"): open. */
static struct objstore *backup_store(struct labctx *x, char *why, size_t n)
{
  cJSON *c = conf_load(x->dir);
  char url[PATH_MAX + 64];
  /* No "backup" at all: a cluster.json from before backups, whose
   * `cluster up` now backs up into DIR/backup; "": --no-backup. */
  if (c && !cJSON_GetObjectItem(c, "backup"))
    snprintf(url, sizeof url, "%s/backup", x->dir);
  else if (c == NULL || conf_str(c, "backup", url, sizeof url) != 0)
    url[0] = 0;
  cJSON_Delete(c);
  if (!url[0]) {
    snprintf(why, n, "the cluster in %.300s does not back up (it was started with "
             "--no-backup)", x->dir);
    return NULL;
  }
  return obj_open(url, why, n);
}

/* The rows of sql run on a SQLite file, as query() gives them. */
static int file_query(const char *path, const char *sql, char *out, size_t n)
{
  sqlite3 *db = NULL;
  size_t len = 0;
  out[0] = 0;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    snprintf(out, n, "cannot open the restored copy: %s", db ? sqlite3_errmsg(db) : "no memory");
    sqlite3_close(db);
    return -1;
  }
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && len < n)
    for (int k = 0; k < sqlite3_column_count(st) && len < n; k++) {
      const unsigned char *v = sqlite3_column_text(st, k);
      len += (size_t)snprintf(out + len, n - len, "%s%s", v ? (const char *)v : "",
                              k + 1 < sqlite3_column_count(st) ? "|" : "\n");
    }
  if (rc != SQLITE_OK)
    snprintf(out, n, "%s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rc == SQLITE_OK ? 0 : -1;
}

/* The volume as the backup holds it at point, restored once into a file
 * of the check's own ("" until then), and sql's answer there. Recorded in
 * the evidence as a question of its own, so lab verify replays it. */
static int restored_query(struct labctx *x, double vol, double point, const char *sql,
                          char *out, size_t n)
{
  static char path[PATH_MAX + 64];
  static int built = -1;       /* 0: built; -1: not tried; 1: failed (why in path_why) */
  static char path_why[600];
  char key[1024];
  snprintf(key, sizeof key, "backup of volume %.0f at lsn %.0f: %s", vol, point, sql);
  if (x->offline)
    return ev_sql_replay(x, key, out, n);
  if (built < 0) {
    struct objstore *st = backup_store(x, path_why, sizeof path_why);
    snprintf(path, sizeof path, "%s/labs/lab12-check-%d.db", x->dir, (int)getpid());
    struct rs_target t = {.to_lsn = (uint64_t)point};
    struct rs_result res;
    built = st && restore_build(st, (uint64_t)vol, &t, path, &res, path_why,
                                sizeof path_why) == 0 && res.cpl == (uint64_t)point ? 0 : 1;
    if (st && built && !path_why[0])
      snprintf(path_why, sizeof path_why, "the backup restores lsn %.0f to lsn %llu", point,
               (unsigned long long)res.cpl);
    if (st)
      obj_close(st);
  }
  int rc = -1;
  if (built == 0)
    rc = file_query(path, sql, out, n);
  else
    snprintf(out, n, "%.200s", path_why);
  return ev_query(x, key, out, n, rc);
}

static void restored_done(struct labctx *x)
{
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/labs/lab12-check-%d.db", x->dir, (int)getpid());
  unlink(path);
}

/* Does the coordinator know volume name? Recorded as an answer too. */
static int volume_exists(struct labctx *x, const char *name)
{
  char key[128], out[256], why[300];
  snprintf(key, sizeof key, "volume %s exists", name);
  if (x->offline)
    return ev_sql_replay(x, key, out, sizeof out) == 0 && !strcmp(out, "yes");
  Env *rep = status_fetch(x->coord, name, why, sizeof why);
  int yes = rep && rep->status && rep->status->exists;
  wire_free(rep);
  snprintf(out, sizeof out, "%s", yes ? "yes" : "no");
  ev_query(x, key, out, sizeof out, 0);
  return yes;
}

void check12(struct labctx *x)
{
  if (!started(x, 12))
    return;
  const char *table = x->has_assign ? x->as.table : LAB12_TABLE;
  long long want = x->has_assign ? x->as.count : LAB12_ROWS;
  struct l12 r;
  l12_replay(x, table, &r);
  double lc = r.create ? fnum(r.create, "lsn") : -1, ld = r.drop ? fnum(r.drop, "lsn") : -1;
  double point = r.restore ? fnum(r.restore, "point") : -1;
  /* 1. The table made and filled, then dropped: the journal's word. */
  ok(x, r.create != NULL, "table %s was created%s", table,
     shown(r.create != NULL, " (commit at lsn %.0f)", lc));
  ok(x, r.drop != NULL, "then dropped by mistake: the journal names the drop's commit%s",
     shown(r.drop != NULL, " (lsn %.0f)", ld));
  if (!r.drop && r.other_drop)
    bad(x, "the table to drop is %s, as your `lab start` said (the history shows %s dropped)",
        table, fstr(r.other_drop, "name"));
  /* 2. The restore: after the drop, into a new volume, to a point where
   * the table was, and the backup holds what the student saw. */
  ok(x, r.restore != NULL, "the volume was restored from its backup after the drop (auralog "
     "restore)%s", shown(r.restore != NULL, " (to lsn %.0f)", point));
  if (r.restore && !fstr(r.restore, "into")[0])
    bad(x, "the restore went into a new volume (--into NAME), beside the live one (this one "
        "went into a file)");
  else if (r.restore)
    ok(x, volume_exists(x, fstr(r.restore, "into")), "the new volume %s is at the coordinator",
       fstr(r.restore, "into"));
  if (r.restore && point >= ld)
    bad(x, "the point restored is before the drop (lsn %.0f is at or after the drop's %.0f: "
        "the table is gone there too)", point, ld);
  else if (r.restore && point < lc)
    bad(x, "the point restored is after the table was made (lsn %.0f is before its create "
        "at %.0f)", point, lc);
  else if (r.restore)
    ok(x, 1, "the point restored is between the table's create and its drop (%.0f <= %.0f < "
       "%.0f)", lc, point, ld);
  double vol = r.vol_id > 0 ? r.vol_id : r.restore ? fnum(r.restore, "volume_id") : -1;
  if (r.restore && r.vol_id > 0 && fnum(r.restore, "volume_id") != r.vol_id)
    bad(x, "the restore read volume %s's backup (id %.0f, the coordinator's is %.0f)",
        fstr(r.restore, "volume"), fnum(r.restore, "volume_id"), r.vol_id);
  char sql[256], rows[256];
  long long n = -1, lo = 0, hi = 0, logs = -1;
  if (r.restore && point < ld && point >= lc) {
    snprintf(sql, sizeof sql, "select count(*), coalesce(min(i), 0), coalesce(max(i), 0) "
             "from \"%s\";", table);
    if (restored_query(x, vol, point, sql, rows, sizeof rows) == 0 &&
        sscanf(rows, "%lld|%lld|%lld", &n, &lo, &hi) != 3)
      n = -1;
    ok(x, n >= 0, "the backup at that point holds %s%s", table, n >= 0 ? shown(1, " (%lld rows)",
       n) : shown(1, " (%s)", rows));
    if (n >= 0 && (n != want || lo != 1 || hi != want))
      bad(x, "it holds every row the table had, 1..%lld (at lsn %.0f it has %lld, %lld..%lld: "
          "restore to a point after the rows' insert committed)", want, point, n, lo, hi);
    else if (n >= 0)
      ok(x, 1, "it holds every row the table had (1..%lld)", want);
    if (restored_query(x, vol, point, "select count(*) from lab12_log;", rows,
                       sizeof rows) == 0)
      logs = atoll(rows);
    ok(x, logs > 0, "the write loop's rows up to that point are there too%s",
       logs >= 0 ? shown(1, " (%lld in lab12_log)", logs) : shown(1, " (%s)", rows));
    restored_done(x);
  }
  /* 3. The live volume went on: its write loop has rows the restore
   * does not (the restore made a copy as of then; it rewound nothing). */
  long long live = sql_num(x, "select count(*) from lab12_log;");
  ok(x, live > 0 && (logs < 0 || live > logs), "the live volume kept every write made since "
     "(lab12_log: %s)", live >= 0 ? shown(1, "%lld rows now", live) : "no answer");
  /* The answers. */
  want_num(x, "drop_lsn", ld, ld, ld, "the LSN of the drop's commit, from the journal");
  want_num(x, "restored_lsn", point, point, point, "the point the restore chose (a CPL)");
  double nr = n >= 0 ? (double)n : NAN, nl = logs >= 0 ? (double)logs : NAN;
  want_num(x, "rows", nr, nr, nr, "the rows of your table in the restored volume");
  want_num(x, "log_rows", nl, nl, nl, "the rows of lab12_log in the restored volume");
  want_word(x, "restore_point", "cpl", "cpl|vdl|scl",
            "what a restore lands on, at or below the target");
  want_word(x, "staged_by", "storage", "storage|writer|coordinator",
            "who copies the log to the object store");
}
