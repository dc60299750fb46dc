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

