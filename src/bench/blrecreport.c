/*
 * blrecreport.c: the report of `auralog bench recovery --binlog`
 * (blrecovery.c says what is measured): per mode and size, the restart's
 * time to the first answered query split into the engine's own figures,
 * and seed 003's recovery table (Aurora MySQL, 1 to 50 GB) beside ours,
 * labelled as the seed's. As a table for people or as one JSON object.
 */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/blbench_int.h"

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median (max: the largest) of field off of z's repeats. */
static double stat_of(const struct blr_size *z, size_t off, int max)
{
  double v[BLR_REPS];
  for (int j = 0; j < z->nrep; j++)
    v[j] = *(const double *)((const char *)&z->r[j] + off);
  if (z->nrep == 0)
    return 0;
  qsort(v, (size_t)z->nrep, sizeof *v, cmp_double);
  if (max)
    return v[z->nrep - 1];
  return z->nrep % 2 ? v[z->nrep / 2] : (v[z->nrep / 2 - 1] + v[z->nrep / 2]) / 2;
}
#define RMED(z, f) stat_of(z, offsetof(struct blr_rep, f), 0)
#define RMAX(z, f) stat_of(z, offsetof(struct blr_rep, f), 1)

/* Seed 003's recovery table (Aurora MySQL): binlog recovery and total
 * engine recovery, seconds, community and enhanced. */
static const char *const seed_size[3] = {"1 GB", "5 GB", "50 GB"};
static const double seed_rec[3][4] = {{303.42, 0.47, 332, 26},
                                      {1296.39, 0.50, 1318, 34},
                                      {15879.49, 0.61, 15904, 21}};

/* Community's scan rate at the largest size measured, warm (the median
 * restart's) or cold: bytes/s, or 0. */
static double scan_rate(const struct blr_mode *md, int cold)
{
  for (int i = BLR.nz - 1; i >= 0; i--) {
    const struct blr_size *z = &md->z[i];
    if (cold && z->cold_ok && z->cold.scan_ms > 0)
      return z->cold.scan_bytes / (z->cold.scan_ms / 1000);
    if (!cold && z->nrep && RMED(z, scan_ms) > 0)
      return RMED(z, scan_bytes) / (RMED(z, scan_ms) / 1000);
  }
  return 0;
}

cJSON *blr_json(cJSON *cond)
{
  cJSON *out = cJSON_CreateObject();
  cJSON_AddItemReferenceToObject(out, "conditions", cond);
  cJSON *ms = cJSON_AddObjectToObject(out, "modes");
  for (int a = 0; a < BLR.nm; a++) {
    const struct blr_mode *md = &BLR.md[a];
    cJSON *x = cJSON_AddObjectToObject(ms, bl_mode_names[md->m]);
    cJSON_AddBoolToObject(x, "available", !md->refused);
    if (md->refused) {
      cJSON_AddStringToObject(x, "reason", md->reason);
      continue;
    }
    if (md->err[0])
      cJSON_AddStringToObject(x, "error", md->err);
    cJSON *zs = cJSON_AddArrayToObject(x, "sizes");
    for (int i = 0; i < BLR.nz; i++) {
      const struct blr_size *z = &md->z[i];
      if (!z->ran && !z->err[0])
        continue;
      cJSON *j = cJSON_CreateObject();
      cJSON_AddNumberToObject(j, "mib", z->mib);
      if (z->err[0])
        cJSON_AddStringToObject(j, "error", z->err);
      cJSON_AddNumberToObject(j, "binlog_bytes", z->binlog_bytes);
      cJSON_AddNumberToObject(j, "transactions", z->txns);
      cJSON_AddNumberToObject(j, "fill_s", z->fill_s);
      cJSON_AddNumberToObject(j, "repeats", z->nrep);
      if (z->nrep) {
        cJSON_AddNumberToObject(j, "total_ms", RMED(z, total_ms));
        cJSON_AddNumberToObject(j, "total_ms_max", RMAX(z, total_ms));
        cJSON_AddNumberToObject(j, "volume_recovery_ms", RMED(z, recovered_ms));
        cJSON_AddNumberToObject(j, "open_ms", RMED(z, open_ms));
        cJSON_AddNumberToObject(j, "binlog_scan_ms", RMED(z, scan_ms));
        cJSON_AddNumberToObject(j, "binlog_scan_ms_max", RMAX(z, scan_ms));
        cJSON_AddNumberToObject(j, "scan_bytes", RMED(z, scan_bytes));
        cJSON_AddNumberToObject(j, "scan_frames", RMED(z, scan_frames));
        cJSON_AddNumberToObject(j, "rolled_forward", RMED(z, rolled_forward));
        if (z->cold_ok) {
          cJSON *c = cJSON_AddObjectToObject(j, "cold");
          cJSON_AddNumberToObject(c, "total_ms", z->cold.total_ms);
          cJSON_AddNumberToObject(c, "volume_recovery_ms", z->cold.recovered_ms);
          cJSON_AddNumberToObject(c, "open_ms", z->cold.open_ms);
          cJSON_AddNumberToObject(c, "binlog_scan_ms", z->cold.scan_ms);
          cJSON_AddNumberToObject(c, "scan_bytes", z->cold.scan_bytes);
        }
        /* Each restart, in order: the first after a fill may differ. */
        cJSON *rs = cJSON_AddArrayToObject(j, "restarts");
        for (int k = 0; k < z->nrep; k++) {
          const struct blr_rep *x = &z->r[k];
          cJSON *y = cJSON_CreateObject();
          cJSON_AddNumberToObject(y, "total_ms", x->total_ms);
          cJSON_AddNumberToObject(y, "volume_recovery_ms", x->recovered_ms);
          cJSON_AddNumberToObject(y, "open_ms", x->open_ms);
          cJSON_AddNumberToObject(y, "binlog_scan_ms", x->scan_ms);
          cJSON_AddItemToArray(rs, y);
        }
      }
      cJSON_AddItemToArray(zs, j);
    }
    if (md->m == BL_COMMUNITY) {
      cJSON_AddNumberToObject(x, "scan_mib_per_s", scan_rate(md, 0) / 1048576);
      cJSON_AddNumberToObject(x, "cold_scan_mib_per_s", scan_rate(md, 1) / 1048576);
    }
  }
  cJSON *s = cJSON_AddObjectToObject(out, "seed");
  cJSON_AddStringToObject(s, "source", "seed 003: Aurora MySQL 3, binlog recovery and total "
                          "engine recovery in seconds; not this machine");
  cJSON *t = cJSON_AddArrayToObject(s, "recovery");
  for (int i = 0; i < 3; i++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "size", seed_size[i]);
    cJSON_AddNumberToObject(x, "community_binlog_s", seed_rec[i][0]);
    cJSON_AddNumberToObject(x, "enhanced_binlog_s", seed_rec[i][1]);
    cJSON_AddNumberToObject(x, "community_total_s", seed_rec[i][2]);
    cJSON_AddNumberToObject(x, "enhanced_total_s", seed_rec[i][3]);
    cJSON_AddItemToArray(t, x);
  }
  return out;
}

void blr_table(cJSON *cond)
{
  printf("auralog bench recovery --binlog: recovery after a crash against binlog size "
         "(seed 003; issue 29)\nconditions:\n");
  cJSON *it;
  cJSON_ArrayForEach(it, cond) {
    if (cJSON_IsString(it))
      printf("  %-18s %s\n", it->string, it->valuestring);
    else
      printf("  %-18s %g\n", it->string, it->valuedouble);
  }
  printf("\n  %-9s %5s | %9s %6s %6s | %24s | %9s %7s | %9s %9s %7s %6s\n", "mode", "MiB",
         "binlog MiB", "txns", "fill s", "restart->query ms (1st)", "vol. rec", "open",
         "scan ms", "scan MiB", "frames", "rolled");
  for (int a = 0; a < BLR.nm; a++) {
    const struct blr_mode *md = &BLR.md[a];
    const char *name = bl_mode_names[md->m];
    if (md->refused) {
      printf("  %-9s not available: %s\n", name, md->reason);
      continue;
    }
    for (int i = 0; i < BLR.nz; i++) {
      const struct blr_size *z = &md->z[i];
      if (!z->ran && !z->err[0])
        continue;
      printf("  %-9s %5d | %10.1f %6.0f %6.1f | ", name, z->mib, z->binlog_bytes / 1048576,
             z->txns, z->fill_s);
      if (z->nrep == 0) {
        printf("%s\n", z->err[0] ? z->err : "not measured");
        continue;
      }
      printf("%8.0f (%6.0f) %7.0f | %9.0f %7.0f | ", RMED(z, total_ms), RMAX(z, total_ms),
             z->r[0].total_ms, RMED(z, recovered_ms), RMED(z, open_ms));
      if (md->m == BL_COMMUNITY)
        printf("%9.1f %9.1f %7.0f %6.0f\n", RMED(z, scan_ms), RMED(z, scan_bytes) / 1048576,
               RMED(z, scan_frames), RMED(z, rolled_forward));
      else
        printf("%9s\n", "no scan");
      if (z->err[0])
        printf("  %-9s %5s   %s\n", "", "", z->err);
    }
    if (md->err[0])
      printf("  %-9s failed: %s\n", name, md->err);
  }
  printf("\n  binlog MiB         the events' bytes the engine packed, over its lifetimes (off: "
         "none; the same\n                     transactions as a binlog mode took)\n"
         "  restart->query ms  from starting the engine again to its first answered query: "
         "median (max) of %d;\n                     1st: the first restart after the fill "
         "(the others follow it at once)\n"
         "  vol. rec, open     the engine's own: the volume's recovery (quorum reads, VDL, "
         "truncation) and\n                     its whole open (\"recovered in N ms (open "
         "took M ms)\"), median\n"
         "  scan ms ...        community: the open's read of the whole binlog file (scan_us, "
         "scan_bytes,\n                     scan_frames; rolled: prepared transactions it "
         "rolled forward), median\n", BLR.reps);

  printf("\ncold: one more restart at each size, every file of the cluster's data and the "
         "binlog file\nwritten back and dropped from the page cache first (read from the "
         "disk, as after a reboot):\n");
  printf("  %-9s %5s | %17s | %9s %7s | %9s %9s\n", "mode", "MiB", "restart->query ms",
         "vol. rec", "open", "scan ms", "scan MB/s");
  for (int a = 0; a < BLR.nm; a++) {
    const struct blr_mode *md = &BLR.md[a];
    for (int i = 0; i < BLR.nz && !md->refused; i++) {
      const struct blr_size *z = &md->z[i];
      if (!z->cold_ok)
        continue;
      printf("  %-9s %5d | %17.0f | %9.0f %7.0f | ", bl_mode_names[md->m], z->mib,
             z->cold.total_ms, z->cold.recovered_ms, z->cold.open_ms);
      if (md->m == BL_COMMUNITY)
        printf("%9.1f %9.0f\n", z->cold.scan_ms,
               z->cold.scan_ms > 0 ? z->cold.scan_bytes / 1e3 / z->cold.scan_ms : 0);
      else
        printf("%9s\n", "no scan");
    }
  }

  printf("\nseed 003 (Aurora MySQL 3; NOT this machine), seconds:\n");
  printf("  %-6s | %14s %14s | %16s %16s\n", "size", "binlog: comm.", "enhanced",
         "total: comm.", "enhanced");
  for (int i = 0; i < 3; i++)
    printf("  %-6s | %14.2f %14.2f | %16.0f %16.0f\n", seed_size[i], seed_rec[i][0],
           seed_rec[i][1], seed_rec[i][2], seed_rec[i][3]);
  printf("  (community's scan: %.1f MB/s at 1 GB, %.1f MB/s at 50 GB)\n",
         1000 / seed_rec[0][0], 50000 / seed_rec[2][0]);
  printf("ours:\n");
  for (int a = 0; a < BLR.nm; a++) {
    const struct blr_mode *md = &BLR.md[a];
    const struct blr_size *lo = NULL, *hi = NULL;
    for (int i = 0; i < BLR.nz; i++)
      if (md->z[i].nrep) {
        if (!lo)
          lo = &md->z[i];
        hi = &md->z[i];
      }
    if (md->refused || lo == NULL) {
      printf("  %-9s %s\n", bl_mode_names[md->m], md->refused ? "not available" : "no result");
      continue;
    }
    const char *unit = md->m == BL_OFF ? "transactions" : "MiB";
    double a = md->m == BL_OFF ? lo->txns : lo->binlog_bytes / 1048576;
    double b = md->m == BL_OFF ? hi->txns : hi->binlog_bytes / 1048576;
    printf("  %-9s restart to first query %.0f ms at %.0f %s, %.0f ms at %.0f %s (%+.0f%%)",
           bl_mode_names[md->m], RMED(lo, total_ms), a, unit, RMED(hi, total_ms), b, unit,
           RMED(lo, total_ms) > 0 ? 100 * (RMED(hi, total_ms) / RMED(lo, total_ms) - 1) : 0);
    double warm = md->m == BL_COMMUNITY ? scan_rate(md, 0) : 0;
    double cold = md->m == BL_COMMUNITY ? scan_rate(md, 1) : 0;
    if (warm > 0 && cold > 0)
      printf(";\n            its scan %.0f MB/s warm, %.0f MB/s cold: 1 GB in %.2f s warm, "
             "%.2f s cold here (the seed's binlog\n            recovery: 303 s at 1 GB)",
             warm / 1e6, cold / 1e6, 1e9 / warm, 1e9 / cold);
    printf("\n");
  }
  cJSON *el = cJSON_GetObjectItem(cond, "elapsed_s");
  if (el)
    printf("run took %.0f s\n", el->valuedouble);
}

/* ---- the journal --------------------------------------------------------------------- */

/* Each mode's result at each size, the medians of the repeats, as one
 * system of workload "binlog-recovery" (note.c): lab 13 reads them from
 * the journal of the user's cluster (caller_key: its key, or NULL). */
void blr_note(cJSON *cond, const char *caller_key)
{
  static Auralog__BenchNote b[BL_MODES * BLR_SIZES];
  static char sys[BL_MODES * BLR_SIZES][32];
  int n = 0;
  for (int a = 0; a < BLR.nm; a++) {
    const struct blr_mode *md = &BLR.md[a];
    if (md->refused)
      continue;
    for (int i = 0; i < BLR.nz; i++) {
      const struct blr_size *z = &md->z[i];
      if (!z->ran || z->err[0] || z->nrep == 0)
        continue;
      Auralog__BenchNote x = AURALOG__BENCH_NOTE__INIT;
      snprintf(sys[n], sizeof sys[n], "auralog-binlog-%s", bl_mode_names[md->m]);
      x.workload = "binlog-recovery";
      x.system = sys[n];
      x.clients = 1;
      x.group = 1;
      x.mean_group = 1;
      x.reads = "durable";
      x.binlog_mib = z->binlog_bytes / (1 << 20);
      x.recovery_ms = RMED(z, total_ms);
      double s = RMED(z, scan_ms);
      x.scan_ms = s > 0 && s < 1e8 ? s : 0;
      b[n++] = x;
    }
  }
  if (n)
    bench_note_each(b, n, cond, caller_key);
}
