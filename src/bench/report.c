/*
 * report.c: what `auralog bench [WORKLOAD]` prints (bench.c runs it): the
 * conditions, one JSON result per system, or the table for people with
 * the throughput ratios, the redo comparison, the cluster key's cost, the
 * machine's limit (limit.c) and where one commit's time went
 * (breakdown.c).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "param.h"

static double num(cJSON *o, const char *k)
{
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *durability(int i)
{
  static const char *d[NSYS] = {
    "commit acked when 4 of 6 segments (2 per AZ, 3 AZs) have it in lmdb with fsync",
    "the same, shipping every changed page whole",
    "journal_mode=WAL, synchronous=FULL (fsync of the WAL at every commit)",
    "journal_mode=DELETE, synchronous=FULL (journal and database synced at every commit)",
    "in memory (memdb): not durable; the CPU ceiling",
    "as auralog, with no cluster key: no handshake, no frame MACs (AURALOG_AUTH=off)",
    "as auralog, with continuous backup on (cluster up's default): each PG's log staged to "
    "DIR/backup, node GC held to the backup point"};
  return d[i];
}

void report_conditions(const struct opts *o, cJSON *c)
{
  bench_conditions(c, o->dir);
  cJSON_AddStringToObject(c, "workload", wl_names[o->wl.kind]);
  cJSON_AddNumberToObject(c, "clients", o->clients);
  cJSON_AddNumberToObject(c, "duration_s", o->duration);
  cJSON_AddNumberToObject(c, "warmup_s", o->warmup);
  cJSON_AddNumberToObject(c, "tables", o->wl.tables);
  cJSON_AddNumberToObject(c, "rows", o->wl.rows);
  cJSON_AddNumberToObject(c, "row_bytes", 8 + 8 + 120 + 60);
  cJSON_AddNumberToObject(c, "seed", (double)o->wl.seed);
  cJSON_AddStringToObject(c, "reads", o->reads);
  cJSON_AddNumberToObject(c, "group", o->group);      /* application group commit, 1: off */
  cJSON_AddNumberToObject(c, "group_timeout_ms", o->group_ms);
  cJSON_AddNumberToObject(c, "page_size", PAGE_SIZE_DEFAULT);
  cJSON_AddStringToObject(c, "replication", "6 segments per PG, 2 per AZ in 3 AZs, write quorum 4");
  cJSON_AddStringToObject(c, "server", "every system behind the same engine server "
                          "(one SQLite worker thread), same clients and protocol");
  cJSON_AddStringToObject(c, "sqlite_tuning", "page_size 4096, default cache, "
                          "wal_autocheckpoint 1000 (default), busy_timeout 5000");
  cJSON *d = cJSON_AddObjectToObject(c, "durability");
  for (int i = 0; i < NSYS; i++)
    if (o->sys[i])
      cJSON_AddStringToObject(d, sys_names[i], durability(i));
}

/* The round trips the engine's stage timings are set beside: the
 * clients' transactions but the read-only ones; with group commit, the
 * leaders' SQL transactions (a logical one's latency also holds its wait
 * for the group, which no stage of the engine sees). */
static void commits_hist(const struct result *r, struct hist *w)
{
  if (r->mean_group > 1) {
    *w = r->sqlh;
    return;
  }
  *w = r->h;
  hist_sub(w, &r->rh);
}

/* The nodes' CPU floor per transaction (limit.c): no group commit costs a
 * node less than a flush, a message in and one out, measured alone here. */
static double nodes_floor_ms(const struct result *r)
{
  return r->fsyncs_nodes * (lim.fsync_cpu_us + lim.rtt_cpu_us / 2) / 1000;
}

cJSON *report_json(const struct result *rs, int i)
{
  const struct result *r = &rs[i];
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "system", sys_names[i]);
  if (r->err[0])
    cJSON_AddStringToObject(j, "error", r->err);
  cJSON_AddNumberToObject(j, "tx_per_s", r->tx_s);
  cJSON_AddNumberToObject(j, "writes_per_s", r->writes_s);
  cJSON_AddNumberToObject(j, "p50_ms", hist_ms(&r->h, 0.50));
  cJSON_AddNumberToObject(j, "p95_ms", hist_ms(&r->h, 0.95));
  cJSON_AddNumberToObject(j, "p99_ms", hist_ms(&r->h, 0.99));
  cJSON_AddNumberToObject(j, "max_ms", hist_ms(&r->h, 1.0));
  if (i == SYS_BACKUP) {
    cJSON_AddNumberToObject(j, "backup_bytes_per_tx", r->backup_bytes);
    cJSON_AddNumberToObject(j, "backup_lag_lsns", r->backup_lag);
    cJSON_AddNumberToObject(j, "backup_lag_p50_ms", r->bk_lag_p50_ms);
    cJSON_AddNumberToObject(j, "backup_lag_p99_ms", r->bk_lag_p99_ms);
    cJSON_AddNumberToObject(j, "backup_lag_max_ms", r->bk_lag_max_ms);
    cJSON_AddNumberToObject(j, "restore_newest_s", r->bk_restore_new_s);
    cJSON_AddNumberToObject(j, "restore_older_s", r->bk_restore_old_s);
  }
  if (r->rh.n && r->rh.n < r->h.n) {   /* a mix: the read-only ones apart */
    cJSON_AddNumberToObject(j, "read_p50_ms", hist_ms(&r->rh, 0.50));
    cJSON_AddNumberToObject(j, "read_p95_ms", hist_ms(&r->rh, 0.95));
    cJSON_AddNumberToObject(j, "read_p99_ms", hist_ms(&r->rh, 0.99));
    cJSON_AddNumberToObject(j, "read_max_ms", hist_ms(&r->rh, 1.0));
  }
  cJSON_AddNumberToObject(j, "net_bytes_per_tx", r->net_bytes);
  cJSON_AddNumberToObject(j, "net_msgs_per_tx", r->net_msgs);
  cJSON_AddNumberToObject(j, "fsyncs_per_tx", r->fsyncs_engine + r->fsyncs_nodes);
  cJSON_AddNumberToObject(j, "redo_bytes_per_tx", r->redo_bytes);
  cJSON_AddNumberToObject(j, "redo_msgs_per_tx", r->redo_msgs);
  cJSON_AddNumberToObject(j, "records_per_tx", r->records);
  cJSON_AddNumberToObject(j, "storage_tier_bytes_per_tx", r->gossip_bytes);
  cJSON_AddNumberToObject(j, "storage_tier_msgs_per_tx", r->gossip_msgs);
  cJSON_AddNumberToObject(j, "fsyncs_engine_per_tx", r->fsyncs_engine);
  cJSON_AddNumberToObject(j, "fsyncs_nodes_per_tx", r->fsyncs_nodes);
  cJSON_AddNumberToObject(j, "disk_bytes_per_tx", r->disk_bytes);
  cJSON_AddNumberToObject(j, "cpu_ms_per_tx_engine", r->cpu_engine_ms);
  cJSON_AddNumberToObject(j, "cpu_ms_per_tx_nodes", r->cpu_nodes_ms);
  cJSON_AddNumberToObject(j, "cpu_sys_ms_per_tx_engine", r->sys_engine_ms);
  if (ON_CLUSTER(i))
    cJSON_AddNumberToObject(j, "cpu_sys_ms_per_tx_nodes", r->sys_nodes_ms);
  if (r->wait_engine_ms >= 0)
    cJSON_AddNumberToObject(j, "cpu_wait_ms_per_tx_engine", r->wait_engine_ms);
  if (ON_CLUSTER(i) && r->wait_nodes_ms >= 0)
    cJSON_AddNumberToObject(j, "cpu_wait_ms_per_tx_nodes", r->wait_nodes_ms);
  if (ON_CLUSTER(i)) {
    cJSON *per = cJSON_AddObjectToObject(j, "cpu_ms_per_tx_node");
    for (int k = 0; k < NCOPIES; k++)
      cJSON_AddNumberToObject(per, bench_node_ids[k], r->cpu_node_ms[k]);
    cJSON_AddNumberToObject(j, "cpu_ms_per_tx_coord", r->cpu_coord_ms);
    cJSON_AddNumberToObject(j, "cpu_ms_per_tx_replica", r->cpu_replica_ms);
  }
  cJSON_AddNumberToObject(j, "transactions", (double)r->tx_all);
  cJSON_AddNumberToObject(j, "latency_samples", (double)r->h.n);
  cJSON_AddNumberToObject(j, "load_s", r->load_s);
  cJSON_AddNumberToObject(j, "mean_group", r->mean_group);
  if (ON_CLUSTER(i) && lim.ok && !r->err[0])
    cJSON_AddNumberToObject(j, "p50_vs_limit", hist_ms(&r->h, .5) / lim.commit_ms);
  if (ON_CLUSTER(i) && lim.ok && !r->err[0])
    cJSON_AddNumberToObject(j, "cpu_ms_per_tx_nodes_floor", nodes_floor_ms(r));
  if (ON_CLUSTER(i)) {
    static struct hist w;
    commits_hist(r, &w);
    cJSON_AddItemToObject(j, "stages", breakdown_json(&r->bd, &w));
  }
  /* tx_per_s of this system divided by each other one's */
  cJSON *v = cJSON_AddObjectToObject(j, "tx_per_s_vs");
  for (int k = 0; k < NSYS; k++)
    if (k != i && rs[k].ran && !rs[k].err[0] && rs[k].tx_s > 0)
      cJSON_AddNumberToObject(v, sys_names[k], r->tx_s / rs[k].tx_s);
  return j;
}

/* 12345.6 -> "12,346" */
static const char *grp(double v, char *buf)
{
  char t[32];
  snprintf(t, sizeof t, "%.0f", v < 0 ? 0 : v);
  size_t n = strlen(t), k = 0;
  for (size_t i = 0; i < n; i++) {
    if (i && (n - i) % 3 == 0)
      buf[k++] = ',';
    buf[k++] = t[i];
  }
  buf[k] = 0;
  return buf;
}

/* How much of the CPU above is the kernel's (system time), beside a
 * baseline's: a node's fdatasync, socket reads and writes and wake-ups
 * cost the same whatever its code does with the records, and no change to
 * that code can take the nodes below this part. */
static void kernel_line(const struct result *rs, int i)
{
  const struct result *r = &rs[i];
  printf("  of which in the kernel (system time: fdatasync, sockets, wake-ups): engine %.3f, "
         "nodes %.3f", r->sys_engine_ms, r->sys_nodes_ms);
  for (int k = 0; k < NSYS; k++)
    if (!ON_CLUSTER(k) && rs[k].ran && !rs[k].err[0] && k != SYS_MEMORY) {
      printf("; %s's engine %.3f of its %.3f", sys_names[k], rs[k].sys_engine_ms,
             rs[k].cpu_engine_ms);
      break;
    }
  printf("\n");
}

/* Waiting for a CPU (seed 001: the conditions of a run include its
 * machine). Every process of a run shares this machine's cores: a thread
 * that could run but has no core adds to the commit's stages, and the
 * machine's limit above, measured alone, holds none of it. The same line
 * for a baseline shows how much of it is the engine server's own. */
static void cpu_wait_lines(const struct result *rs)
{
  int any = 0;
  for (int i = 0; i < NSYS; i++) {
    const struct result *r = &rs[i];
    if (!r->ran || r->err[0] || r->wait_engine_ms < 0)
      continue;
    if (!any)
      printf("\nwaiting for a CPU per transaction, runnable but not running (ms, every thread, "
             "/proc/PID/task/*/schedstat; %ld cores shared by every process of the run):\n",
             sysconf(_SC_NPROCESSORS_ONLN));
    any = 1;
    if (ON_CLUSTER(i) && r->wait_nodes_ms >= 0)
      printf("  %-18s engine %.3f (it ran %.3f), nodes %.3f (they ran %.3f)\n", sys_names[i],
             r->wait_engine_ms, r->cpu_engine_ms, r->wait_nodes_ms, r->cpu_nodes_ms);
    else
      printf("  %-18s engine %.3f (it ran %.3f)\n", sys_names[i], r->wait_engine_ms,
             r->cpu_engine_ms);
  }
  if (any)
    printf("  (summed over threads, so more than the wall time when several wait at once; a "
           "commit's stages above hold the waits on its path, the machine's limit none)\n");
}

void report_table(const struct opts *o, const struct result *rs, cJSON *cond)
{
  char a[32], b[32], c[32];
  printf("auralog bench %s: %d clients, %d s measured after %d s warm-up, "
         "%d tables x %d rows, seed %llu, auralog reads %s\n", wl_names[o->wl.kind],
         o->clients, o->duration, o->warmup, o->wl.tables, o->wl.rows, o->wl.seed, o->reads);
  if (o->group > 1)
    printf("application group commit: up to %d logical transactions per SQL transaction, "
           "a leader waits at most %d ms for followers; tx/s and latency are the logical "
           "transactions', from submission to their group's commit\n", o->group, o->group_ms);
  printf("conditions: auralog %s; SQLite %s; lmdb %s; libuv %s; %s; %s; %d cores "
         "(load average %s at the start); %.0f MB RAM; page size %d; %s on %s; %s\n",
         cJSON_GetObjectItem(cond, "auralog")->valuestring,
         cJSON_GetObjectItem(cond, "sqlite")->valuestring,
         cJSON_GetObjectItem(cond, "lmdb")->valuestring,
         cJSON_GetObjectItem(cond, "libuv")->valuestring,
         cJSON_GetObjectItem(cond, "kernel")->valuestring,
         cJSON_GetObjectItem(cond, "cpu")->valuestring,
         (int)num(cond, "cores"), cJSON_GetObjectItem(cond, "load_average")->valuestring,
         num(cond, "memory_mb"), (int)num(cond, "page_size"), o->dir,
         cJSON_GetObjectItem(cond, "filesystem")->valuestring,
         cJSON_GetObjectItem(cond, "network")->valuestring);
  printf("every system runs behind the same engine server and clients; only storage differs\n\n");
  printf("%-19s %8s %9s %7s %7s %7s %8s %9s %7s %7s %8s %8s\n", "system", "tx/s", "writes/s",
         "p50 ms", "p95 ms", "p99 ms", "max ms", "net B/tx", "msgs/tx", "fsync/tx",
         "redo B/tx", "cpu ms/tx");
  for (int i = 0; i < NSYS; i++) {
    const struct result *r = &rs[i];
    if (!r->ran)
      continue;
    if (r->err[0] && r->h.n == 0) {
      printf("%-19s failed: %s\n", sys_names[i], r->err);
      continue;
    }
    char d[32];
    printf("%-19s %8s %9s %7.2f %7.2f %7.2f %8.2f %9s %7.1f %7.2f %9s %8.3f\n", sys_names[i],
           grp(r->tx_s, a), grp(r->writes_s, b), hist_ms(&r->h, .5), hist_ms(&r->h, .95),
           hist_ms(&r->h, .99), hist_ms(&r->h, 1), grp(r->net_bytes, c), r->net_msgs,
           r->fsyncs_engine + r->fsyncs_nodes, ON_CLUSTER(i) ? grp(r->redo_bytes, d) : "-",
           r->cpu_engine_ms + r->cpu_nodes_ms);
    if (r->err[0])
      printf("%-19s   (%s)\n", "", r->err);
  }
  for (int i = 0; i < NSYS; i++) {
    const struct result *r = &rs[i];
    if (r->ran && r->rh.n && r->rh.n < r->h.n)
      printf("%-19s read-only transactions: p50 %.2f, p95 %.2f, p99 %.2f, max %.2f ms\n",
             sys_names[i], hist_ms(&r->rh, .5), hist_ms(&r->rh, .95), hist_ms(&r->rh, .99),
             hist_ms(&r->rh, 1));
  }
  for (int i = 0; i < NSYS && o->group > 1; i++)
    if (rs[i].ran && !rs[i].err[0])
      printf("%-19s group commit: %.2f logical transactions per SQL transaction; SQL "
             "transactions p50 %.2f ms\n", sys_names[i], rs[i].mean_group,
             hist_ms(&rs[i].sqlh, .5));
  printf("\nnet: engine<->storage frames both ways, plus storage<->storage (gossip); "
         "fsync: engine + nodes; cpu: engine + nodes\n");
  printf("\nthroughput ratios (row / column, tx/s):\n%-19s", "");
  for (int k = 0; k < NSYS; k++)
    if (rs[k].ran && !rs[k].err[0])
      printf(" %18s", sys_names[k]);
  printf("\n");
  for (int i = 0; i < NSYS; i++) {
    if (!rs[i].ran || rs[i].err[0])
      continue;
    printf("%-19s", sys_names[i]);
    for (int k = 0; k < NSYS; k++)
      if (rs[k].ran && !rs[k].err[0])
        printf(" %17.2fx", rs[k].tx_s > 0 ? rs[i].tx_s / rs[k].tx_s : 0);
    printf("\n");
  }
  limit_print(&lim, o->dir, cJSON_GetObjectItem(cond, "filesystem")->valuestring);
  for (int i = 0; i < NSYS && lim.ok; i++)
    if (ON_CLUSTER(i) && rs[i].ran && !rs[i].err[0])
      printf("  %-14s commit p50 %.3f ms = %.1fx the limit; %.0f tx/s = %.2f per quorum "
             "round the disk can do\n", sys_names[i], hist_ms(&rs[i].h, .5),
             hist_ms(&rs[i].h, .5) / lim.commit_ms, rs[i].tx_s, rs[i].tx_s / lim.quorum_per_s);
  for (int i = 0; i < NSYS; i++)
    if (ON_CLUSTER(i) && rs[i].ran && !rs[i].err[0] && o->wl.kind != WL_READ_ONLY) {
      /* The commits: the clients' transactions but the read-only ones. */
      static struct hist w;
      commits_hist(&rs[i], &w);
      breakdown_print(sys_names[i], wl_names[o->wl.kind], o->clients, &rs[i].bd, &w, &lim);
      break;                   /* the first: auralog's, usually */
    }
  const struct result *k = &rs[0], *nk = &rs[SYS_NOKEY];
  if (k->ran && nk->ran && !k->err[0] && !nk->err[0] && nk->tx_s > 0)
    printf("\nthe cluster key's cost (auralog with it, auralog-nokey without, this run): "
           "%.0f vs %.0f tx/s (%+.1f%%), p50 %.2f vs %.2f ms, cpu %.3f vs %.3f ms/tx\n",
           k->tx_s, nk->tx_s, 100 * (k->tx_s / nk->tx_s - 1), hist_ms(&k->h, .5),
           hist_ms(&nk->h, .5), k->cpu_engine_ms + k->cpu_nodes_ms,
           nk->cpu_engine_ms + nk->cpu_nodes_ms);
  const struct result *bk = &rs[SYS_BACKUP];
  if (k->ran && bk->ran && !k->err[0] && !bk->err[0] && k->tx_s > 0) {
    printf("\nbackup's cost (auralog without it, auralog-backup with it, this run): %.0f vs %.0f "
           "tx/s (%+.1f%%), p50 %.2f vs %.2f ms, cpu %.3f vs %.3f ms/tx (nodes %.3f vs %.3f); "
           "the object store took %.0f B per transaction", k->tx_s, bk->tx_s,
           100 * (bk->tx_s / k->tx_s - 1), hist_ms(&k->h, .5), hist_ms(&bk->h, .5),
           k->cpu_engine_ms + k->cpu_nodes_ms, bk->cpu_engine_ms + bk->cpu_nodes_ms,
           k->cpu_nodes_ms, bk->cpu_nodes_ms, bk->backup_bytes);
    if (bk->backup_lag >= 0)
      printf(", and its point was %.0f LSNs behind the VDL at the end", bk->backup_lag);
    printf("\n");
    if (bk->bk_lag_p50_ms >= 0)
      printf("backup lag (how long a durable commit waited to become restorable, %.0f samples "
             "over the run, the load included): p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
             bk->bk_lag_samples,
             bk->bk_lag_p50_ms, bk->bk_lag_p99_ms, bk->bk_lag_max_ms);
    if (bk->bk_restore_new_s >= 0)
      printf("restore of the run's volume into a file (objects read, pages rebuilt, integrity "
             "checked): %.2f s at the newest point, %.2f s at LSN %.0f (where the backup was "
             "when the measured window began)\n", bk->bk_restore_new_s, bk->bk_restore_old_s,
             bk->bk_restore_old_lsn);
  }
  if (rs[0].ran && rs[1].ran && !rs[0].err[0] && !rs[1].err[0] && rs[0].redo_bytes > 0) {
    printf("\nredo shipped per transaction: auralog %s B in %.1f records, auralog-pages %s B "
           "(%.1fx more: Table 1's point)\n", grp(rs[0].redo_bytes, a), rs[0].records,
           grp(rs[1].redo_bytes, b), rs[1].redo_bytes / rs[0].redo_bytes);
    printf("per transaction at the nodes: %.2f fsyncs in all six, %.1f KB across the storage "
           "tier; engine CPU %.3f ms, nodes CPU %.3f ms\n", rs[0].fsyncs_nodes,
           rs[0].gossip_bytes / 1024, rs[0].cpu_engine_ms, rs[0].cpu_nodes_ms);
  }
  for (int i = 0; i < NSYS; i++)
    if (ON_CLUSTER(i) && rs[i].ran && !rs[i].err[0]) {
      const struct result *r = &rs[i];
      printf("\nCPU per transaction by role, %s (ms): engine %.3f, coordinator %.3f, "
             "replica %.3f, nodes %.3f =", sys_names[i], r->cpu_engine_ms, r->cpu_coord_ms,
             r->cpu_replica_ms, r->cpu_nodes_ms);
      for (int k = 0; k < NCOPIES; k++)
        printf(" %s %.3f", bench_node_ids[k], r->cpu_node_ms[k]);
      printf("\n");
      kernel_line(rs, i);
      if (lim.ok && r->fsyncs_nodes > 0) {
        double floor = nodes_floor_ms(r);
        printf("the nodes' CPU floor on this machine: %.2f flushes per tx x (%.1f us a flush + "
               "%.1f us a message in and out) = %.3f ms/tx; the nodes spend %.1fx that\n",
               r->fsyncs_nodes, lim.fsync_cpu_us, lim.rtt_cpu_us / 2, floor,
               r->cpu_nodes_ms / floor);
      }
      break;                   /* the first cluster system's */
    }
  cpu_wait_lines(rs);
}
