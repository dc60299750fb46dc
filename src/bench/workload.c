/*
 * workload.c: the transactions of `auralog bench` (see bench.h).
 *
 * Sysbench's OLTP shapes over T tables sbtest1..T of R rows, with its
 * schema (id INTEGER PRIMARY KEY, k INTEGER with an index, c of 120 and
 * pad of 60 characters: groups of 11 digits joined by '-'). Rows are
 * picked uniformly from the client's own generator (splitmix64, seeded
 * from --seed and the client's number), so a run is the same every time.
 * Each transaction is one SQL text, sent as one request: the engine runs
 * it in one go, as a stored procedure would.
 *
 *   write-only  2 UPDATEs by primary key (of the indexed k, and of c),
 *               1 DELETE and 1 INSERT of the same id
 *   insert      one INSERT
 *   read-only   10 point SELECTs, 4 range SELECTs of 100 rows
 *   oltp        read-only and write-only in one transaction
 *   read-write  each transaction read-only or write-only, half and half:
 *               reads run while others write (what durable reads cost)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"

#define LOAD_BATCH  1000         /* rows per INSERT transaction while loading */
#define WL_TIMEOUT  30000        /* ms: one load transaction's answer */

const char *const wl_names[WL_COUNT] = {"write-only", "insert", "read-only", "oltp",
                                        "read-write"};
const int wl_writes[WL_COUNT] = {4, 1, 0, 4, 2};

static uint64_t rnd(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* sysbench's c and pad: groups of 11 digits joined by '-'. */
static void digits(uint64_t *s, char *out, int groups)
{
  char *p = out;
  for (int g = 0; g < groups; g++) {
    if (g)
      *p++ = '-';
    for (int i = 0; i < 11; i++)
      *p++ = (char)('0' + rnd(s) % 10);
  }
  *p = 0;
}

/* Append printf output to buf at *len. */
__attribute__((format(printf, 3, 4)))
static void add(char *buf, size_t *len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, WL_SQL_MAX - *len, fmt, ap);
  va_end(ap);
  if (n > 0 && *len + (size_t)n < WL_SQL_MAX)
    *len += (size_t)n;
}

static void reads(const struct workload *o, uint64_t *s, char *sql, size_t *n)
{
  for (int i = 0; i < 10; i++)
    add(sql, n, "SELECT c FROM sbtest%d WHERE id=%llu;", 1 + (int)(rnd(s) % (uint64_t)o->tables),
        1 + (unsigned long long)(rnd(s) % (uint64_t)o->rows));
  const char *ranges[] = {"SELECT c FROM sbtest%d WHERE id BETWEEN %llu AND %llu;",
                          "SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN %llu AND %llu;",
                          "SELECT c FROM sbtest%d WHERE id BETWEEN %llu AND %llu ORDER BY c;",
                          "SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN %llu AND %llu ORDER BY c;"};
  for (int i = 0; i < 4; i++) {
    unsigned long long a = 1 + rnd(s) % (uint64_t)o->rows;
    add(sql, n, ranges[i], 1 + (int)(rnd(s) % (uint64_t)o->tables), a, a + 99);
  }
}

static void writes(const struct workload *o, uint64_t *s, char *sql, size_t *n)
{
  int t = 1 + (int)(rnd(s) % (uint64_t)o->tables);
  char c[128], pad[64];
  unsigned long long r = (uint64_t)o->rows;
  add(sql, n, "UPDATE sbtest%d SET k=k+1 WHERE id=%llu;", t, 1 + rnd(s) % r);
  digits(s, c, 10);
  add(sql, n, "UPDATE sbtest%d SET c='%s' WHERE id=%llu;", t, c, 1 + rnd(s) % r);
  unsigned long long id = 1 + rnd(s) % r;
  digits(s, c, 10);
  digits(s, pad, 5);
  add(sql, n, "DELETE FROM sbtest%d WHERE id=%llu;", t, id);
  add(sql, n, "INSERT INTO sbtest%d (id, k, c, pad) VALUES (%llu, %llu, '%s', '%s');", t, id,
      1 + rnd(s) % r, c, pad);
}

/* One transaction of the workload, as one request. */
int wl_tx(const struct workload *o, uint64_t *s, char *sql)
{
  size_t n = 0;
  sql[0] = 0;
  int kind = o->kind;
  if (kind == WL_READ_WRITE)
    kind = rnd(s) % 2 ? WL_READ_ONLY : WL_WRITE_ONLY;
  switch (kind) {
  case 0:
    add(sql, &n, "BEGIN;");
    writes(o, s, sql, &n);
    add(sql, &n, "COMMIT;");
    break;
  case 1: {
    char c[128], pad[64];
    digits(s, c, 10);
    digits(s, pad, 5);
    add(sql, &n, "INSERT INTO sbtest%d (k, c, pad) VALUES (%llu, '%s', '%s');",
        1 + (int)(rnd(s) % (uint64_t)o->tables), 1 + (unsigned long long)(rnd(s) % (uint64_t)o->rows),
        c, pad);
    break;
  }
  case 2:
    add(sql, &n, "BEGIN;");
    reads(o, s, sql, &n);
    add(sql, &n, "COMMIT;");
    break;
  default:
    add(sql, &n, "BEGIN;");
    reads(o, s, sql, &n);
    writes(o, s, sql, &n);
    add(sql, &n, "COMMIT;");
  }
  return kind == WL_READ_ONLY;
}

/* Create and fill the tables (sysbench's schema, with its index on k). */
int wl_load(const struct workload *o, struct rpc *r, char *why, size_t whylen)
{
  uint64_t s = o->seed * 7919 + 17;
  char *sql = malloc((size_t)LOAD_BATCH * 220 + 256);
  for (int t = 1; t <= o->tables; t++) {
    snprintf(sql, 512,
             "DROP TABLE IF EXISTS sbtest%d; CREATE TABLE sbtest%d (id INTEGER PRIMARY KEY, "
             "k INTEGER NOT NULL DEFAULT 0, c TEXT NOT NULL, pad TEXT NOT NULL); "
             "CREATE INDEX k_%d ON sbtest%d(k);", t, t, t, t);
    Env *rep = bench_sql(r, sql, WL_TIMEOUT, why, whylen);
    if (rep == NULL)
      goto fail;
    wire_free(rep);
    for (int row = 1; row <= o->rows;) {
      size_t n = (size_t)sprintf(sql, "INSERT INTO sbtest%d (id, k, c, pad) VALUES ", t);
      for (int i = 0; i < LOAD_BATCH && row <= o->rows; i++, row++) {
        char c[128], pad[64];
        digits(&s, c, 10);
        digits(&s, pad, 5);
        n += (size_t)sprintf(sql + n, "%s(%d, %llu, '%s', '%s')", i ? "," : "", row,
                             1 + (unsigned long long)(rnd(&s) % (uint64_t)o->rows), c, pad);
      }
      Env *rep = bench_sql(r, sql, WL_TIMEOUT, why, whylen);
      if (rep == NULL)
        goto fail;
      wire_free(rep);
    }
  }
  free(sql);
  return 0;
fail:
  free(sql);
  return -1;
}

