/*
 * lab/check_binlog.c: lab 13's check: the binlog, community against
 * enhanced (seed 003): what each costs the writes, what each costs a
 * recovery, and a logical replica kept outside the cluster.
 *
 * The concepts: a community binlog is a file of the engine's, kept in
 * agreement with the redo by a two-phase commit (prepare to a write
 * quorum, the file's fsync as the commit point, the commit record) and
 * read whole at every restart (vfs/community.c); an enhanced binlog rides
 * in each commit's own MTR to a binlog PG in the storage tier, durable
 * with the commit and truncated with it, with nothing to scan at recovery
 * (vfs/ship.c B1). A consumer reads it by position and, with a name, has
 * that position kept by the coordinator (coord/binlogc.c).
 *
 * What the check reads:
 *   - the lab's history: `auralog bench binlog`'s results (workload
 *     "binlog-foreground": each mode's tx/s at 8 clients, community's
 *     stages) and `auralog bench recovery --binlog`'s ("binlog-recovery":
 *     each mode's restart time and scan at each size), noted by the
 *     benches themselves (bench/note.c), so the figures were measured,
 *     not typed; and the assigned table's create (a "ddl" event);
 *   - the cluster now: the binlog itself, read from the storage tier as a
 *     consumer reads it (cli/blread.h): the inserts into the table and the
 *     last one's commit LSN; consumer lab13's position at the coordinator;
 *     the student's replica file (DIR/labs/lab13-replica.db) and the
 *     volume's table, both counted. All of it goes into the evidence, so
 *     `lab verify` replays it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "cli/blread.h"
#include "lab/lab.h"
#include "net/rpc.h"

#define LAB13_TABLE "lab13_orders"   /* a demo's table and count (run.sh's defaults) */
#define LAB13_TXNS  60
#define LAB13_CLIENTS 8
#define PCT_TOL 3                    /* percentage points: the bench prints rounded figures */

static char err13[256];       /* why the replica file gave no answer */

/* The last bench binlog run with off, community and enhanced at 8 clients. */
struct fg {
  const cJSON *off, *com, *enh;
};

static const cJSON *fg_in_run(struct labctx *x, double run, const char *mode)
{
  char sys[48];
  snprintf(sys, sizeof sys, "auralog-binlog-%s", mode);
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (is(e, "bench") && fnum(e, "run") == run && !strcmp(fstr(e, "system"), sys) &&
        !strcmp(fstr(e, "workload"), "binlog-foreground") &&
        fnum(e, "clients") == LAB13_CLIENTS)
      return e;
  }
  return NULL;
}

static void fg_find(struct labctx *x, struct fg *f)
{
  memset(f, 0, sizeof *f);
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (!is(e, "bench") || strcmp(fstr(e, "workload"), "binlog-foreground") ||
        strcmp(fstr(e, "system"), "auralog-binlog-off") || fnum(e, "clients") != LAB13_CLIENTS)
      continue;
    const cJSON *c = fg_in_run(x, fnum(e, "run"), "community");
    const cJSON *h = fg_in_run(x, fnum(e, "run"), "enhanced");
    if (c && h)
      f->off = e, f->com = c, f->enh = h;
  }
}

/* A mode's recovery at its smallest and largest size, in the last run of
 * `bench recovery --binlog` that measured it at two sizes or more. */
struct rec {
  const cJSON *lo, *hi;
};

static void rec_find(struct labctx *x, const char *mode, struct rec *r)
{
  char sys[48];
  snprintf(sys, sizeof sys, "auralog-binlog-%s", mode);
  memset(r, 0, sizeof *r);
  double run = -1;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (!is(e, "bench") || strcmp(fstr(e, "workload"), "binlog-recovery") ||
        strcmp(fstr(e, "system"), sys))
      continue;
    if (fnum(e, "run") != run) {
      run = fnum(e, "run");
      r->lo = r->hi = NULL;
    }
    if (r->lo == NULL || fnum(e, "binlog_mib") < fnum(r->lo, "binlog_mib"))
      r->lo = e;
    if (r->hi == NULL || fnum(e, "binlog_mib") > fnum(r->hi, "binlog_mib"))
      r->hi = e;
  }
  if (r->lo == r->hi)
    r->lo = r->hi = NULL;
}

/* Did the restart grow with the binlog (r's smallest to largest size)?
 * A community restart's scan reads the whole file: it counts on its own;
 * the restart's total is noisy (a recovery's round trips, the schema,
 * the first restart after a fill), so only three times and 200 ms more
 * count. */
static int grew(const struct rec *r)
{
  if (r->lo == NULL)
    return 0;
  double s0 = fnum(r->lo, "scan_ms"), s1 = fnum(r->hi, "scan_ms");
  double t0 = fnum(r->lo, "recovery_ms"), t1 = fnum(r->hi, "recovery_ms");
  return (s1 > 2 * s0 + 1) || (t1 > 3 * t0 + 200);
}

/* The binlog's inserts into table, read from the storage tier: how many,
 * and the last one's commit LSN ("n|lsn"). Recorded as an answer. */
static int stream_inserts(struct labctx *x, const char *table, long long *n, double *last)
{
  char key[128], out[256], why[400];
  snprintf(key, sizeof key, "binlog of volume main: inserts into %s", table);
  *n = -1;
  *last = -1;
  int rc = -1;
  if (x->offline) {
    rc = ev_sql_replay(x, key, out, sizeof out);
  } else {
    struct blsrc b;
    long long cnt = 0;
    uint64_t after = 0, lsn = 0;
    if (bl_open(&b, x->coord, "main", why, sizeof why) != 0) {
      snprintf(out, sizeof out, "%.250s", why);
    } else {
      for (;;) {
        struct blbatch bt;
        if (bl_fetch(&b, after, 0, &bt, why, sizeof why) != 0) {
          snprintf(out, sizeof out, "%.250s", why);
          cnt = -1;
          break;
        }
        for (size_t i = 0; i < bt.n; i++)
          for (size_t k = 0; k < bt.txn[i]->n_events; k++) {
            const Auralog__BinlogEvent *ev = bt.txn[i]->events[k];
            if (ev->op == 1 && !strcmp(ev->table, table)) {
              cnt++;
              lsn = bt.lsn[i];
            }
          }
        if (bt.n == 0) {
          bl_batch_free(&bt);
          break;
        }
        after = bt.lsn[bt.n - 1];
        bl_batch_free(&bt);
      }
      bl_close(&b);
      if (cnt >= 0) {
        snprintf(out, sizeof out, "%lld|%llu", cnt, (unsigned long long)lsn);
        rc = 0;
      }
    }
    rc = ev_query(x, key, out, sizeof out, rc);
  }
  unsigned long long l = 0;
  if (rc == 0 && sscanf(out, "%lld|%llu", n, &l) == 2)
    *last = (double)l;
  return rc;
}

/* Consumer name's position at the coordinator (-1: none). Recorded. */
static double consumer_pos(struct labctx *x, const char *name)
{
  char key[128], out[256], why[400];
  snprintf(key, sizeof key, "binlog consumer %s of volume main", name);
  if (x->offline)
    return ev_sql_replay(x, key, out, sizeof out) == 0 ? atof(out) : -1;
  struct blsrc b;
  memset(&b, 0, sizeof b);
  snprintf(b.coord, sizeof b.coord, "%s", x->coord);
  snprintf(b.volume, sizeof b.volume, "main");
  Auralog__BinlogConsumer bc = AURALOG__BINLOG_CONSUMER__INIT;
  bc.volume = "main";
  bc.name = "";
  bc.list = 1;
  Env *env = NULL;
  int code = 0;
  double pos = -1;
  Auralog__BinlogConsumers *cs = bl_consumers(&b, &bc, &env, &code, why, sizeof why);
  for (size_t i = 0; cs && i < cs->n_consumers; i++)
    if (!strcmp(cs->consumers[i]->name, name))
      pos = (double)cs->consumers[i]->pos;
  wire_free(env);
  bl_close(&b);
  snprintf(out, sizeof out, "%.0f", pos);
  ev_query(x, key, out, sizeof out, 0);
  return pos;
}

/* count(*) and sum(i) of table in the student's replica file ("n|sum").
 * Recorded. */
static int replica_query(struct labctx *x, const char *table, long long *n, long long *sum)
{
  char key[256], out[512], path[PATH_MAX + 64], sql[160];
  snprintf(path, sizeof path, "%s/labs/lab13-replica.db", x->dir);
  snprintf(sql, sizeof sql, "select count(*), coalesce(sum(i), 0) from \"%s\"", table);
  snprintf(key, sizeof key, "replica file labs/lab13-replica.db: %s", sql);
  *n = *sum = -1;
  int rc;
  if (x->offline) {
    rc = ev_sql_replay(x, key, out, sizeof out);
  } else {
    sqlite3 *db = NULL;
    rc = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
      snprintf(out, sizeof out, "no replica file at %.300s", path);
    } else {
      sqlite3_stmt *st = NULL;
      if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
          sqlite3_step(st) == SQLITE_ROW) {
        snprintf(out, sizeof out, "%lld|%lld", sqlite3_column_int64(st, 0),
                 sqlite3_column_int64(st, 1));
        rc = 0;
      } else {
        snprintf(out, sizeof out, "%.300s", sqlite3_errmsg(db));
      }
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    rc = ev_query(x, key, out, sizeof out, rc);
  }
  if (rc == 0 && sscanf(out, "%lld|%lld", n, sum) != 2)
    rc = -1;
  if (rc != 0)
    snprintf(err13, sizeof err13, "%.200s", out);
  return rc;
}

static void want_pct(struct labctx *x, const char *key, double ref, const char *what)
{
  want_num(x, key, floor(ref - PCT_TOL), ceil(ref + PCT_TOL), round(ref), what);
}

void check13(struct labctx *x)
{
  if (!started(x, 13))
    return;
  const char *table = x->has_assign ? x->as.table : LAB13_TABLE;
  long long want = x->has_assign ? x->as.count : LAB13_TXNS;
  double nan = NAN;

  /* 1. The overhead, measured: off, community and enhanced in one run. */
  struct fg f;
  fg_find(x, &f);
  ok(x, f.off != NULL, "`auralog bench binlog` measured off, community and enhanced at %d "
     "clients in one run%s", LAB13_CLIENTS,
     shown(f.off != NULL, ": %.0f, %.0f and %.0f tx/s (p99 %.2f, %.2f, %.2f ms)",
           fnum(f.off, "tx_s"), fnum(f.com, "tx_s"), fnum(f.enh, "tx_s"),
           fnum(f.off, "p99_ms"), fnum(f.com, "p99_ms"), fnum(f.enh, "p99_ms")));
  double off = f.off ? fnum(f.off, "tx_s") : nan;
  double pc = f.off && off > 0 ? 100 * fnum(f.com, "tx_s") / off : nan;
  double pe = f.off && off > 0 ? 100 * fnum(f.enh, "tx_s") / off : nan;
  const char *top = NULL;
  if (f.com) {
    double p = fnum(f.com, "prepare_us"), b = fnum(f.com, "binlog_us"),
           c = fnum(f.com, "commit_us");
    top = p >= b && p >= c ? "prepare" : b >= c ? "binlog" : "commit";
    ok(x, p + b + c > 0, "community's commit, stage by stage: prepare %.0f us, binlog %.0f us, "
       "commit record %.0f us", p, b, c);
  }

  /* 2. Recovery against the binlog's size. */
  struct rec rc, re;
  rec_find(x, "community", &rc);
  rec_find(x, "enhanced", &re);
  ok(x, rc.lo != NULL, "`auralog bench recovery --binlog` measured community at two sizes or "
     "more%s", shown(rc.lo != NULL, ": %.0f MiB restarted in %.0f ms (scan %.1f ms), %.0f MiB in "
     "%.0f ms (scan %.1f ms)", fnum(rc.lo, "binlog_mib"), fnum(rc.lo, "recovery_ms"),
     fnum(rc.lo, "scan_ms"), fnum(rc.hi, "binlog_mib"), fnum(rc.hi, "recovery_ms"),
     fnum(rc.hi, "scan_ms")));
  ok(x, re.lo != NULL, "... and enhanced%s", shown(re.lo != NULL, ": %.0f MiB in %.0f ms, %.0f "
     "MiB in %.0f ms", fnum(re.lo, "binlog_mib"), fnum(re.lo, "recovery_ms"),
     fnum(re.hi, "binlog_mib"), fnum(re.hi, "recovery_ms")));
  const char *g = NULL;
  if (rc.lo && re.lo)
    g = grew(&rc) ? (grew(&re) ? "both" : "community") : grew(&re) ? "enhanced" : "neither";

  /* 3. The replica: the stream has the table's transactions, the
   * consumer read them all, the file holds what the volume does. */
  long long ins = -1, fn = -1, fs = -1;
  double last = -1;
  int srd = stream_inserts(x, table, &ins, &last);
  ok(x, srd == 0, "the volume keeps a binlog in the storage tier%s", srd == 0 ? "" :
     " (cluster up --binlog enhanced)");
  if (srd == 0)
    ok(x, ins == want, "the binlog holds %lld inserts into %s%s", ins, table,
       ins == want ? shown(1, ", the last at lsn %.0f", last)
                   : shown(1, " (%lld transactions asked)", want));
  double pos = consumer_pos(x, "lab13");
  ok(x, pos >= 0, "consumer lab13 is registered%s", shown(pos >= 0, " at %.0f", pos));
  if (pos >= 0 && last > 0)
    ok(x, pos >= last, "it read every transaction of %s (its position %.0f, the last insert's "
       "commit %.0f)", table, pos, last);
  long long vn = -1, vs = -1;
  char sql[160], out[256];
  snprintf(sql, sizeof sql, "select count(*), coalesce(sum(i), 0) from \"%s\";", table);
  if (query(x, sql, out, sizeof out) == 0 && sscanf(out, "%lld|%lld", &vn, &vs) != 2)
    vn = vs = -1;
  err13[0] = 0;
  int frd = replica_query(x, table, &fn, &fs);
  ok(x, frd == 0, "your replica file has table %s%s", table,
     frd == 0 ? shown(1, " (%lld rows)", fn) : shown(1, " (%s)", err13));
  if (frd == 0)
    ok(x, fn == vn && fs == vs && vn == want, "it holds what the volume does (%lld rows, sum "
       "%lld; the volume %lld, sum %lld)", fn, fs, vn, vs);

  /* The answers. */
  want_pct(x, "community_pct", pc, "community's tx/s as a percentage of off's at 8 clients");
  want_pct(x, "enhanced_pct", pe, "enhanced's tx/s as a percentage of off's at 8 clients");
  want_word(x, "top_stage", top ? top : "(not measured)", "prepare|binlog|commit",
            "where a community commit spent most of its time in your run");
  want_word(x, "grows", g ? g : "(not measured)", "community|enhanced|both|neither",
            "whose recovery grew with the binlog's size in your run");
  double rr = fn >= 0 ? (double)fn : nan;
  want_num(x, "replica_rows", rr, rr, rr, "the rows of your table in the replica file");
  want_num(x, "consumer_lsn", pos >= 0 ? pos : nan, pos >= 0 ? pos : nan,
           pos >= 0 ? pos : nan, "consumer lab13's position");
  want_word(x, "commit_point", "binlog", "prepare|binlog|commit",
            "the stage that commits a community transaction for good");
  want_word(x, "events_ride_with", "redo", "redo|file|coordinator",
            "what an enhanced commit's events travel with");
}
