/*
 * bkrestore.c: `auralog bench backup`'s restores (see bkbench.c for the
 * whole benchmark, bkbench_int.h for the interface): what a restore
 * costs against the volume's size and against the age of the point.
 *
 * What a restore does (backup/restore.h): for every PG, read its newest
 * base image at or below the point (or start from zero pages), read its
 * log pieces, apply the records up to the point in LSN order, write the
 * pages out as a SQLite file and run PRAGMA integrity_check on it. `restore
 * --into` then copies that file into a new volume through the auralog VFS
 * (restore_into.c): one transaction of redo records, quorum-written. So
 * the cost is set by the bytes the store holds for the point (pages plus
 * log since the base) and, into a volume, by the pages written again
 * through the storage tier.
 *
 * One size, on a fresh cluster backing up into its directory (as `cluster
 * up` does by default):
 *   fill    MIB MiB of pages: a table of BK_ROW-byte random blobs, one row
 *           a page, in transactions of BK_BATCH rows
 *   age     --age seconds of transactions that each add 1 to a counter
 *           in BK_UPD random rows, one client: the log grows after the fill
 *           by many small records (a few bytes of page delta each), so the
 *           targets differ in the records a restore applies while the pages
 *           it writes stay the volume's (rewriting the blobs instead would
 *           stage ten times the volume in a few seconds, and size and age
 *           could not be told apart)
 *   targets the VDL the status shows at the end of the fill (the oldest
 *           point holding every page: see below), halfway through the
 *           updates (the middle) and at their end (the newest). A VDL is a
 *           CPL, so each restores exactly. Then wait for the backup to
 *           reach the newest (stage_s).
 *   restore each target, newest first, into a file (restore_build, as
 *           `auralog restore --file`) and into a new volume (build, then
 *           restore_into_volume, as `auralog restore --into`), each timed.
 *
 * Why the oldest target is the end of the fill and not the window's low
 * end: a fresh cluster stages no base image for BACKUP_BASE_MS (ten
 * minutes), so every PG's window starts at the empty volume, LSN 0, whose
 * restore is an empty file. The oldest point the run wrote that holds the
 * whole volume is the end of the fill. Without a base, every restore
 * replays the PG's log from zero pages: an older point applies less of
 * it, so here an older point is cheaper, not dearer. With bases (a long
 * run, or `backup retention` short) a point costs its newest base plus
 * the log since it, whatever its age. The report says both.
 *
 * The store is a directory on the cluster's disk whose objects were just
 * written: they are read from the page cache, as a restore soon after
 * an accident would. An S3 store adds a round trip per object.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/objstore.h"
#include "backup/restore.h"
#include "bench/bkbench_int.h"
#include "cli/status.h"
#include "lib/log.h"
#include "net/keyfile.h"
#include "param.h"

static char coord[64], engine[64];

/* The volume main's status, or NULL with why. */
static Env *status_main(char *why, size_t n)
{
  Env *e = status_fetch(coord, "main", why, n);
  if (e && (!e->status->exists || !e->status->volume || !e->status->engine)) {
    snprintf(why, n, "the coordinator at %s has no volume main with a writer", coord);
    wire_free(e);
    return NULL;
  }
  return e;
}

/* A target: the VDL the status shows now, once the engine's last report
 * covers the last commit (it reports every ENGINE_STAT_MS). */
static int take_point(struct bkr_target *t, const char *name, char *why, size_t n)
{
  usleep(2 * ENGINE_STAT_MS * 1000);
  Env *e = status_main(why, n);
  if (e == NULL)
    return -1;
  t->name = name;
  t->lsn = e->status->engine->vdl;
  t->at_us = bench_now_us();
  wire_free(e);
  return 0;
}

static int run_sql(struct rpc *r, const char *q, char *why, size_t n)
{
  Env *rep = bench_sql(r, q, BK_TX_MS, why, n);
  wire_free(rep);
  return rep ? 0 : -1;
}

/* Fill z->mib MiB: one row a page, less the table's interior pages (a
 * few hundred keys each) and the schema page. Returns the rows. */
static long fill(struct rpc *r, struct bkr_size *z, char *why, size_t n)
{
  if (run_sql(r, "CREATE TABLE fill (id INTEGER PRIMARY KEY, n INTEGER NOT NULL "
              "DEFAULT 0, b BLOB NOT NULL)", why, n) != 0)
    return -1;
  long pages = (long)z->mib * (1 << 20) / PAGE_SIZE_DEFAULT, rows = (pages - 2) * 300 / 301;
  double t0 = bench_now_us();
  char q[512];
  for (long done = 0; done < rows;) {
    long k = rows - done < BK_BATCH ? rows - done : BK_BATCH;
    bk_check_stop();
    bk_progress(0, "%d MiB: filling, %ld of %ld pages", z->mib, done, rows);
    snprintf(q, sizeof q, "WITH RECURSIVE c(x) AS (SELECT %ld UNION ALL SELECT x + 1 FROM c "
             "WHERE x < %ld) INSERT INTO fill (id, b) SELECT x, randomblob(%d) FROM c", done + 1,
             done + k, BK_ROW);
    if (run_sql(r, q, why, n) != 0)
      return -1;
    done += k;
  }
  z->fill_s = (bench_now_us() - t0) / 1e6;
  return rows;
}

/* age_s seconds of transactions adding 1 to BK_UPD random rows each; the
 * middle target is taken halfway. */
static int age(struct rpc *r, struct bkr_size *z, long rows, int age_s, uint64_t seed, char *why,
               size_t n)
{
  uint64_t rng = seed * 2654435761u + (uint64_t)z->mib;
  double t0 = bench_now_us(), end = t0 + age_s * 1e6;
  int middle = 0;
  char q[BK_UPD * 64 + 32];
  while (bench_now_us() < end) {
    bk_check_stop();
    size_t m = (size_t)snprintf(q, sizeof q, "BEGIN;");
    for (int i = 0; i < BK_UPD; i++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      m += (size_t)snprintf(q + m, sizeof q - m, " UPDATE fill SET n = n + 1 WHERE id = %ld;",
                            1 + (long)((rng >> 33) % (uint64_t)rows));
    }
    snprintf(q + m, sizeof q - m, " COMMIT;");
    if (run_sql(r, q, why, n) != 0)
      return -1;
    z->age_tx++;
    double t = bench_now_us();
    bk_progress(0, "%d MiB: aging, %.1f of %d s, %" PRIu64 " transactions", z->mib,
                (t - t0) / 1e6, age_s, z->age_tx);
    if (!middle && t >= t0 + age_s * 0.5e6) {
      /* The status VDL lags the commits by up to ENGINE_STAT_MS: taken
       * without the pause take_point makes, which would hold the updates. */
      Env *e = status_main(why, n);
      if (e == NULL)
        return -1;
      z->t[1] = (struct bkr_target){.name = "middle", .lsn = e->status->engine->vdl, .at_us = t};
      wire_free(e);
      middle = 1;
    }
  }
  z->age_s = (bench_now_us() - t0) / 1e6;
  if (!middle) {
    snprintf(why, n, "no transaction ended in --age %d s", age_s);
    return -1;
  }
  return 0;
}

/* Wait until every PG's backup reaches lsn; the seconds it took. */
static int staged(struct objstore *st, struct bkr_size *z, uint64_t lsn, char *why, size_t n)
{
  double t0 = bench_now_us();
  for (;;) {
    if (restore_window(st, z->vol, &z->lo, &z->hi, &z->npgs, why, n) == 0 && z->hi >= lsn)
      break;
    if (bench_now_us() - t0 > BK_STAGE_S * 1e6) {
      snprintf(why, n, "the backup did not reach LSN %" PRIu64 " within %d s (it reaches %"
               PRIu64 "); see %.300s/log", lsn, BK_STAGE_S, z->hi, K.cdir);
      return -1;
    }
    bk_check_stop();
    usleep(50000);
  }
  z->stage_s = (bench_now_us() - t0) / 1e6;
  return 0;
}

static int sum_size(void *arg, const char *key, uint64_t size)
{
  (void)key;
  *(double *)arg += (double)size;
  return 0;
}

static void took(struct bkr_one *o, const struct rs_result *r)
{
  o->cpl = r->cpl;
  o->records = r->records;
  o->objects = r->objects;
  o->bytes = r->bytes;
  o->pages = r->pages;
}

/* Restore target t into a file, then into a new volume, each timed. */
static void restore_target(struct objstore *st, struct bkr_size *z, struct bkr_target *t)
{
  char path[1300], tmp[1300], name[32], why[600];
  struct rs_target to = {t->lsn, 0};
  struct rs_result r;
  snprintf(path, sizeof path, "%s/restore-%s.db", K.dir, t->name);
  snprintf(tmp, sizeof tmp, "%s/restore-into.db", K.dir);
  bk_progress(1, "%d MiB: restoring the %s point (LSN %" PRIu64 ") into a file", z->mib,
              t->name, t->lsn);
  t->age_s = (bench_now_us() - t->at_us) / 1e6;
  double t0 = bench_now_us();
  if (restore_build(st, z->vol, &to, path, &r, why, sizeof why) == 0) {
    t->file.secs = (bench_now_us() - t0) / 1e6;
    t->file.ok = 1;
    took(&t->file, &r);
    if (t == &z->t[0]) {
      z->volume_bytes = (double)r.pages * r.page_size;
      z->pg_pages = r.pg_pages;
    }
  } else {
    snprintf(t->file.err, sizeof t->file.err, "%s", why);
  }
  unlink(path);

  bk_progress(1, "%d MiB: restoring the %s point into a new volume", z->mib, t->name);
  snprintf(name, sizeof name, "restored-%s", t->name);
  t0 = bench_now_us();
  if (restore_build(st, z->vol, &to, tmp, &r, why, sizeof why) != 0) {
    snprintf(t->vol.err, sizeof t->vol.err, "%s", why);
    unlink(tmp);
    return;
  }
  double t1 = bench_now_us();
  took(&t->vol, &r);
  if (restore_into_volume(tmp, coord, name, r.pg_pages ? r.pg_pages : PG_PAGES, why,
                          sizeof why) == 0) {
    double t2 = bench_now_us();
    t->vol.ok = 1;
    t->vol.build_s = (t1 - t0) / 1e6;
    t->vol.load_s = (t2 - t1) / 1e6;
    t->vol.secs = (t2 - t0) / 1e6;
  } else {
    snprintf(t->vol.err, sizeof t->vol.err, "%s", why);
  }
  unlink(tmp);
}

void bkr_size(struct bkr_size *z, int age_s, uint64_t seed)
{
  char why[600], url[1200];
  struct rpc r;
  struct objstore *st = NULL;
  r.fd = -1;
  z->ran = 1;
  snprintf(coord, sizeof coord, "127.0.0.1:%d", K.base);
  snprintf(engine, sizeof engine, "127.0.0.1:%d", K.base + ENGINE_PORT_OFFSET);
  snprintf(url, sizeof url, "%s/backup", K.cdir);
  bk_progress(1, "%d MiB: a fresh cluster backing up into %s", z->mib, url);
  /* Its own engine serves volume main: the one filled and restored. */
  static const char *const bk[] = {"--backup", "dir", NULL};
  K.up = 1;
  if (bench_cluster_up_with(K.cdir, K.base, bk, why, sizeof why) != 0)
    goto fail;
  op_use_dir(K.cdir);        /* restore_into_volume writes as its operator */
  if (bench_connect(&r, engine, 10000, why, sizeof why) != 0)
    goto fail;
  long rows = fill(&r, z, why, sizeof why);
  if (rows < 0 || take_point(&z->t[2], "oldest", why, sizeof why) != 0)
    goto fail;
  if (age(&r, z, rows, age_s, seed, why, sizeof why) != 0 ||
      take_point(&z->t[0], "newest", why, sizeof why) != 0)
    goto fail;
  rpc_close(&r);
  Env *e = status_main(why, sizeof why);
  if (e == NULL)
    goto fail;
  z->vol = e->status->volume->id;
  wire_free(e);
  if ((st = obj_open(url, why, sizeof why)) == NULL)
    goto fail;
  bk_progress(1, "%d MiB: waiting for the backup to reach LSN %" PRIu64, z->mib, z->t[0].lsn);
  if (staged(st, z, z->t[0].lsn, why, sizeof why) != 0)
    goto fail;
  char prefix[32];
  snprintf(prefix, sizeof prefix, "v%" PRIu64 "/", z->vol);
  if (obj_list(st, prefix, sum_size, &z->store_bytes, why, sizeof why) != 0)
    goto fail;
  for (int k = 0; k < BK_TARGETS; k++)
    restore_target(st, z, &z->t[k]);
  obj_close(st);
  bk_progress(1, "%d MiB: stopping the cluster and removing its data", z->mib);
  bk_cluster_down();
  return;
fail:
  snprintf(z->err, sizeof z->err, "%s", why);
  if (r.fd >= 0)
    rpc_close(&r);
  if (st)
    obj_close(st);
  bk_cluster_down();
}
