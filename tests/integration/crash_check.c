/*
 * crash_check.c: the crash campaign's checks after a crash point
 * (crash.h; what they check and why: test_crash.c).
 *
 * check reads every transaction's rows through the engine and holds them
 * against what the writer did and the reader saw (txstate, rseen): every
 * acknowledged transaction whole, every other one whole or absent, the
 * bytes as written, every transaction the reader saw still there and
 * whole; then PRAGMA integrity_check; then converge waits until the
 * segments agree (no refusals, every SCL at its PG's highest).
 *
 * With AURALOG_CRASH_BINLOG=enhanced|community (make torture) the engine
 * keeps a binlog, and binlog_check holds the whole stream (`binlog tail
 * --from 0 --json`, from the storage tier or the community file) against
 * the table: each transaction's inserts exactly once for every
 * transaction present, none for one absent (a truncated commit's events),
 * commit LSNs rising.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash.h"
#include "harness.h"
#include "lib/log.h"

/* ---- checks -------------------------------------------------------------- */

int sql_arg(const char *q)
{
  return sh(out, sizeof out, "%s sql --engine %s '%s' 2>&1", bin, engine, q);
}

unsigned long long converge_max_ms;
long bl_checks, bl_events;

const char *crash_binlog(void)
{
  const char *m = getenv("AURALOG_CRASH_BINLOG");
  return m && *m && strcmp(m, "off") != 0 ? m : NULL;
}

/* One pass over the stream: ev[t] = inserts into camp of txn t. Returns
 * the number of events counted, or -1 (why in why). */
static long binlog_pass(int *ev, char *why, size_t whylen)
{
  char cmd[1024], file[600] = "";
  if (strcmp(crash_binlog(), "community") == 0)
    snprintf(file, sizeof file, " --binlog-file %s/binlog/main.binlog", dir);
  snprintf(cmd, sizeof cmd, "%s binlog tail --dir %s --from 0 --json%s 2>&1", bin, dir, file);
  FILE *f = popen(cmd, "r");
  if (f == NULL) {
    snprintf(why, whylen, "cannot run binlog tail");
    return -1;
  }
  size_t cap = 1 << 20;
  char *line = malloc(cap);
  long n = 0;
  double prev = 0;
  why[0] = 0;
  while (fgets(line, (int)cap, f)) {
    size_t len = strlen(line);
    while (len == cap - 1 && line[len - 1] != '\n') {   /* a long line: grow */
      line = realloc(line, 2 * cap);
      if (!fgets(line + len, (int)(cap + 1), f))
        break;
      cap *= 2;
      len = strlen(line);
    }
    cJSON *e = cJSON_Parse(line);
    if (e == NULL) {
      if (!why[0])
        snprintf(why, whylen, "binlog tail printed: %.200s", line);
      continue;
    }
    cJSON *lsn = cJSON_GetObjectItem(e, "commit_lsn"), *op = cJSON_GetObjectItem(e, "op"),
          *tab = cJSON_GetObjectItem(e, "table"), *after = cJSON_GetObjectItem(e, "after");
    if (cJSON_IsNumber(lsn)) {
      if (lsn->valuedouble < prev && !why[0])
        snprintf(why, whylen, "commit LSN %.0f after %.0f: not in commit order",
                 lsn->valuedouble, prev);
      prev = lsn->valuedouble;
    }
    if (cJSON_IsString(op) && cJSON_IsString(tab) && strcmp(op->valuestring, "insert") == 0 &&
        strcmp(tab->valuestring, "camp") == 0 && cJSON_IsArray(after)) {
      cJSON *t = cJSON_GetArrayItem(after, 0);
      long txn = cJSON_IsNumber(t) ? (long)t->valuedouble : -1;
      if (txn >= 0 && txn < txcap)
        ev[txn]++;
      else if (!why[0])
        snprintf(why, whylen, "an insert of txn %ld, never attempted", txn);
      n++;
    }
    cJSON_Delete(e);
  }
  free(line);
  int rc = pclose(f);
  if (rc != 0 && !why[0])
    snprintf(why, whylen, "binlog tail exited %d", WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
  return why[0] ? -1 : n;
}

/* The stream against the table (have[t]: rows of txn t present). The
 * enhanced binlog's last commit reaches consumers a beacon after the
 * writer goes idle (nbinlog.c BV): a few passes are allowed. */
static void binlog_check(int point, const int *have)
{
  int *ev = calloc((size_t)txcap + 1, sizeof *ev);
  char why[512] = "", diff[1024] = "";
  long n = 0;
  unsigned long long t0 = now_ms();
  for (int pass = 0; pass < 20; pass++) {
    memset(ev, 0, ((size_t)txcap + 1) * sizeof *ev);
    n = binlog_pass(ev, why, sizeof why);
    diff[0] = 0;
    size_t dl = 0;
    int nd = 0;
    for (long t = 0; n >= 0 && t < txcap; t++)
      if (ev[t] != have[t] && nd++ < 6 && dl < sizeof diff)
        dl += (size_t)snprintf(diff + dl, sizeof diff - dl, "  txn %ld (%s): %d rows in the "
                               "table, %d inserts in the stream\n", t,
                               txstate[t] == TX_ACKED ? "acknowledged" :
                               txstate[t] == TX_UNKNOWN ? "unknown" : "never attempted",
                               have[t], ev[t]);
    if (n >= 0 && nd == 0)
      break;
    usleep(500000);
  }
  free(ev);
  if (n < 0 || diff[0]) {
    keep_evidence();
    fail_msg("crash point %d: the %s binlog is not the table: %s\n%s(cluster kept in %s)",
             point, crash_binlog(), n < 0 ? why : "", diff, dir);
  }
  bl_checks++;
  bl_events = n;
  note("binlog after crash point %d: %ld inserts, one per row present, in %llu ms", point, n,
       now_ms() - t0);
}

/* Every fault healed and the engine up: within 15 s, status shows no
 * segment refusing the engine's Appends, and every segment of every PG up
 * with its PG's highest SCL. Fails the test otherwise, naming who lags. */
static void converge(int point)
{
  unsigned long long t0 = now_ms();
  char last[4096];
  for (;;) {
    cJSON *o = status("main"), *p, *g;
    cJSON *ref = cJSON_GetObjectItem(o, "refusing");
    double refusing = cJSON_IsNumber(ref) ? ref->valuedouble : -1;
    int ok = refusing == 0;
    size_t n = (size_t)snprintf(last, sizeof last, "refusing %.0f", refusing);
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(o, "pgs")) {
      double hi = -1;
      int pg = (int)cJSON_GetObjectItem(p, "pg")->valuedouble;
      cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments"))
        if (cJSON_GetObjectItem(g, "scl")->valuedouble > hi)
          hi = cJSON_GetObjectItem(g, "scl")->valuedouble;
      cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments")) {
        const char *node = cJSON_GetObjectItem(g, "node")->valuestring;
        double scl = cJSON_GetObjectItem(g, "scl")->valuedouble;
        if (strcmp(cJSON_GetObjectItem(g, "state")->valuestring, "up") != 0) {
          ok = 0;
          n += (size_t)snprintf(last + n, sizeof last - n, "; pg %d: %s shown down", pg, node);
        } else if (scl < hi) {
          ok = 0;
          n += (size_t)snprintf(last + n, sizeof last - n, "; pg %d: %s scl %.0f, its PG's "
                                "highest %.0f", pg, node, scl, hi);
        }
        if (n >= sizeof last)
          n = sizeof last - 1;
      }
    }
    cJSON_Delete(o);
    unsigned long long took = now_ms() - t0;
    if (ok) {
      if (took > converge_max_ms)
        converge_max_ms = took;
      note("converged after %llu ms", took);
      return;
    }
    if (took > 15000) {
      keep_evidence();
      note("not converged 15 s after every fault healed: %s", last);
      sh(out, sizeof out, "grep -h -E 'refused|takes Appends again' %s/log/engine.log | "
         "tail -4", dir);
      fail_msg("crash point %d: 15 s after every fault healed, the segments have not "
               "converged: %s\nengine log:\n%s(cluster, timeline and records kept in %s)",
               point, last, out, dir);
    }
    usleep(200000);
  }
}

/* Every acknowledged txn whole, every other one whole or absent, the
 * bytes as written, integrity_check ok, every txn the reader saw there
 * and whole; then the segments converge. Fails the test otherwise. */
struct tally check(int point)
{
  struct tally tl = {0};
  unsigned long long t0 = now_ms();
  int rc = sql_arg("select txn, count(*), count(distinct k), min(k), max(k), "
                   "sum(length(pad)) from camp group by txn order by txn;");
  if (rc != 0) {
    keep_evidence();
    fail_msg("crash point %d: reading camp failed (%d): %s (cluster kept in %s)", point, rc,
             out, dir);
  }
  if (strlen(out) >= sizeof out - 1)
    fail_msg("crash point %d: the check's output does not fit in %zu bytes", point, sizeof out);
  int *have = calloc((size_t)txcap + 1, sizeof *have);   /* rows present, by txn */
  char problems[4096] = "";
  size_t plen = 0;
  int nprob = 0;
#define PROBLEM(...) do { \
    if (nprob++ < 12 && plen < sizeof problems) \
      plen += (size_t)snprintf(problems + plen, sizeof problems - plen, __VA_ARGS__); \
  } while (0)
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    long t, cnt, dk, mink, maxk;
    long long bytes;
    if (sscanf(line, "%ld|%ld|%ld|%ld|%ld|%lld", &t, &cnt, &dk, &mink, &maxk, &bytes) != 6) {
      PROBLEM("  unreadable row '%s'\n", line);
      continue;
    }
    if (t < 0 || t >= txcap || txstate[t] == TX_NONE) {
      tl.phantom++;
      PROBLEM("  txn %ld was never attempted but has %ld rows\n", t, cnt);
      continue;
    }
    have[t] = (int)cnt;
    int want = rows_of(t);
    if (cnt != want || dk != want || mink != 0 || maxk != want - 1 || bytes != bytes_of(t)) {
      tl.partial++;
      PROBLEM("  txn %ld (%s): %ld rows (k %ld..%ld, %ld distinct), %lld bytes; "
              "committed whole it has %d rows, %lld bytes\n",
              t, txstate[t] == TX_ACKED ? "acknowledged" : "unknown", cnt, mink, maxk, dk,
              bytes, want, bytes_of(t));
    }
  }
  for (long t = 0; t < txcap; t++) {
    if (txstate[t] == TX_ACKED) {
      tl.acked++;
      if (!have[t]) {
        tl.lost++;
        PROBLEM("  txn %ld was acknowledged and is gone\n", t);
      }
    } else if (txstate[t] == TX_UNKNOWN) {
      tl.unknown++;
      tl.unknown_present += have[t] != 0;
    }
    if (rseen[t] == 0)
      continue;
    /* No client ever read a row that is later absent (invariant 5), nor a
     * part of a transaction (invariant 2). */
    tl.reader_seen++;
    if (txstate[t] == TX_NONE) {
      PROBLEM("  the reader saw txn %ld (%d rows, at %llu) that was never attempted\n", t,
              rseen[t], rseen_ms[t]);
    } else if (!have[t]) {
      tl.reader_lost++;
      PROBLEM("  the reader saw txn %ld (%s; %d rows, at %llu) and it is now absent\n", t,
              txstate[t] == TX_ACKED ? "acknowledged" : "unknown", rseen[t], rseen_ms[t]);
    } else if (rseen[t] != rows_of(t) || rmulti[t]) {
      tl.partial++;
      PROBLEM("  the reader saw txn %ld with %d rows at %llu%s; committed whole it has %d\n",
              t, rseen[t], rseen_ms[t], rmulti[t] ? " (and other counts: see timeline)" : "",
              rows_of(t));
    }
  }
  if (nprob == 0 && crash_binlog())
    binlog_check(point, have);
  free(have);
#undef PROBLEM
  if (nprob) {
    keep_evidence();
    note("check after crash point %d: %d problems:\n%s", point, nprob, problems);
    fail_msg("crash point %d: %d problems (%ld lost, %ld partial, %ld never attempted, %ld "
             "seen by the reader and gone):\n%slatest truncations that cut records:\n%s"
             "(cluster, timeline, records and reads kept in %s)", point, nprob, tl.lost,
             tl.partial, tl.phantom, tl.reader_lost, problems, cut_lines(), dir);
  }
  rc = sql_arg("pragma integrity_check;");
  if (rc != 0 || strcmp(out, "ok\n") != 0) {
    keep_evidence();
    fail_msg("crash point %d: integrity_check (%d): %s (cluster kept in %s)", point, rc, out, dir);
  }
  note("check after crash point %d: ok (%ld acknowledged, %ld unknown of which %ld present, "
       "%ld seen by the reader) in %llu ms", point, tl.acked, tl.unknown, tl.unknown_present,
       tl.reader_seen, now_ms() - t0);
  converge(point);
  return tl;
}

