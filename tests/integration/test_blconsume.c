/*
 * Integration: the enhanced binlog's consumers (issue 29; cli/binlogcli.c,
 * cli/blread.c, node/nbinlog.c, coord/binlogc.c), on a cluster started
 * with `cluster up --binlog enhanced` (the engine ships each committed
 * transaction's events to the volume's binlog PG). What a user sees:
 *
 *  - `binlog tail` of N committed transactions shows exactly them, in
 *    commit order, each event once, and nothing of a rolled-back one;
 *  - a consumer with a name, stopped (Ctrl-C, or killed outright) and
 *    started again, misses nothing; stopped by Ctrl-C it repeats nothing,
 *    killed it repeats at most its last batch, each event with its
 *    position;
 *  - `binlog apply` keeps a stock SQLite file equal to the volume, and
 *    resumes from the file's own position;
 *  - `binlog status` shows the first and last positions, the segments and
 *    the consumers with their lag;
 *  - retention keeps what a registered consumer has not read, releases the
 *    rest beyond its limit (AURALOG_BINLOG_KEEP_BYTES, small here), and a
 *    reader asking for what was released gets a gap: exit 3, both positions
 *    named;
 *  - a volume with no binlog says so in one line.
 * Each test's transactions come after the previous test's (one cluster).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "net/rpc.h"

#define KEEP_BYTES 65536          /* the nodes' retention limit in this test */

static char o[1 << 20];
static char txt[8 << 20];
static uint64_t start_lsn;        /* the commit before this file's first transaction */

/* ---- helpers ----------------------------------------------------------------- */

/* Run one SQL request on the engine; its commit LSN (0: none). */
static uint64_t commit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static uint64_t commit(const char *fmt, ...)
{
  char q[4096], why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q, sizeof q, fmt, ap);
  va_end(ap);
  struct rpc r;
  uint64_t lsn = 0;
  assert_int_equal(rpc_open(&r, engine, 5000, why, sizeof why), 0);
  if (rpc_sql(&r, q, o, sizeof o, 20000, &lsn) != 0)
    fail_msg("%s: %s", q, o);
  rpc_close(&r);
  return lsn;
}

/* The events of a --json tail output, parsed (one object per line). */
struct evs {
  cJSON **e;
  size_t n;
};

/* partial_end: the last line may be cut short (a run killed mid-write):
 * then it is left out. */
static void evs_parse_cut(const char *text, struct evs *v, int partial_end)
{
  memset(v, 0, sizeof *v);
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len > 0) {
      char *line = strndup(p, len);
      cJSON *j = cJSON_Parse(line);
      if (j == NULL && partial_end && nl == NULL) {
        free(line);
        break;
      }
      if (j == NULL)
        fail_msg("binlog tail --json printed a line that is no JSON: %s", line);
      free(line);
      v->e = realloc(v->e, (v->n + 1) * sizeof *v->e);
      v->e[v->n++] = j;
    }
    p += len + (nl != NULL);
  }
}

static void evs_parse(const char *text, struct evs *v)
{
  evs_parse_cut(text, v, 0);
}

static void evs_free(struct evs *v)
{
  for (size_t i = 0; i < v->n; i++)
    cJSON_Delete(v->e[i]);
  free(v->e);
  memset(v, 0, sizeof *v);
}

static uint64_t num(cJSON *o, const char *k)
{
  cJSON *x = cJSON_GetObjectItem(o, k);
  assert_true(cJSON_IsNumber(x));
  return (uint64_t)x->valuedouble;
}

static const char *str(cJSON *o, const char *k)
{
  cJSON *x = cJSON_GetObjectItem(o, k);
  assert_true(cJSON_IsString(x));
  return x->valuestring;
}

/* `binlog tail ARGS --json` (rc: its exit status; stderr in o). */
static int tail_json(struct evs *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tail_json(struct evs *v, const char *fmt, ...)
{
  char args[1024], err[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(err, sizeof err, "%s/tail.err", dir);
  int rc = sh(txt, sizeof txt, "%s binlog tail --dir %s --json %s 2>%s", bin, dir, args, err);
  sh(o, sizeof o, "cat %s", err);
  evs_parse(txt, v);
  return rc;
}

/* Wait (up to 20 s) until the binlog's last durable transaction is at
 * least lsn, as `binlog status` says: the segments hear the VDL that
 * covers a commit with the writer's next Append. */
static void wait_durable(uint64_t lsn)
{
  for (int i = 0; i < 200; i++) {
    if (sh(o, sizeof o, "%s binlog status --dir %s --json 2>&1", bin, dir) == 0) {
      cJSON *j = cJSON_Parse(o);
      uint64_t last = j ? (uint64_t)cJSON_GetObjectItem(j, "last")->valuedouble : 0;
      cJSON_Delete(j);
      if (last >= lsn)
        return;
    }
    usleep(100000);
  }
  fail_msg("the binlog's last durable transaction never reached %llu: %s",
           (unsigned long long)lsn, o);
}

/* The commit LSNs of v's events, each transaction once, in order; fails
 * if a position repeats or goes back. Returns how many. */
static size_t txns_of(const struct evs *v, uint64_t *lsn, size_t max)
{
  size_t n = 0;
  uint64_t last_c = 0;
  int64_t last_i = -1;
  for (size_t i = 0; i < v->n; i++) {
    uint64_t c = num(v->e[i], "commit_lsn");
    int64_t idx = (int64_t)num(v->e[i], "index");
    char pos[64];
    snprintf(pos, sizeof pos, "%llu:%lld", (unsigned long long)c, (long long)idx);
    assert_string_equal(str(v->e[i], "pos"), pos);
    if (c < last_c || (c == last_c && idx <= last_i))
      fail_msg("position %s comes after %llu:%lld: a repeat, or out of order", pos,
               (unsigned long long)last_c, (long long)last_i);
    if (c != last_c) {
      assert_true(n < max);
      lsn[n++] = c;
    }
    last_c = c;
    last_i = idx;
  }
  return n;
}

/* ---- tail ------------------------------------------------------------------- */

static void tail_shows_exactly_the_committed_transactions(void **state)
{
  (void)state;
  uint64_t want[32];
  size_t nw = 0;
  start_lsn = commit("CREATE TABLE t(id INTEGER PRIMARY KEY, x, y BLOB)");
  want[nw++] = commit("INSERT INTO t VALUES(1, 'one', NULL)");
  want[nw++] = commit("BEGIN; INSERT INTO t VALUES(2, 'two', x'00ff'); "
                      "UPDATE t SET x = 'uno' WHERE id = 1; COMMIT");
  assert_int_equal(commit("BEGIN; INSERT INTO t VALUES(99, 'rolled back', NULL); ROLLBACK"), 0);
  for (int i = 3; i <= 12; i++)
    want[nw++] = commit("INSERT INTO t VALUES(%d, 'row %d', randomblob(8))", i, i);
  want[nw++] = commit("DELETE FROM t WHERE id = 3");
  want[nw++] = commit("BEGIN; INSERT INTO t VALUES(13, 'a', NULL); SAVEPOINT s; "
                      "INSERT INTO t VALUES(98, 'rolled back to', NULL); ROLLBACK TO s; COMMIT");
  wait_durable(want[nw - 1]);
  struct evs v;
  assert_int_equal(tail_json(&v, "--from %llu", (unsigned long long)start_lsn), 0);
  uint64_t got[64];
  size_t ng = txns_of(&v, got, 64);
  assert_int_equal(ng, nw);
  for (size_t i = 0; i < nw; i++)
    assert_int_equal(got[i], want[i]);
  assert_null(strstr(txt, "rolled back"));
  /* The two-statement transaction: its insert, then its update. */
  size_t k = 0;
  while (num(v.e[k], "commit_lsn") != want[1])
    k++;
  assert_string_equal(str(v.e[k], "op"), "insert");
  assert_string_equal(str(v.e[k], "table"), "t");
  assert_int_equal(num(v.e[k], "rowid"), 2);
  assert_string_equal(str(v.e[k + 1], "op"), "update");
  assert_int_equal(num(v.e[k + 1], "index"), 1);
  evs_free(&v);

  /* From the middle of that transaction: only its second event, then on. */
  char from[64];
  snprintf(from, sizeof from, "%llu:0", (unsigned long long)want[1]);
  assert_int_equal(tail_json(&v, "--from %s", from), 0);
  assert_int_equal(num(v.e[0], "commit_lsn"), want[1]);
  assert_int_equal(num(v.e[0], "index"), 1);
  assert_int_equal(num(v.e[1], "commit_lsn"), want[2]);
  evs_free(&v);

  /* The human form: one line per event, position first. */
  assert_int_equal(sh(txt, sizeof txt, "%s binlog tail --dir %s --from %llu 2>&1", bin, dir,
                      (unsigned long long)want[nw - 2]), 0);
  snprintf(from, sizeof from, "%llu:0  t  insert  rowid=13", (unsigned long long)want[nw - 1]);
  assert_non_null(strstr(txt, from));
  assert_null(strstr(txt, "rolled back to"));
}

/* ---- consumers that stop and start again ------------------------------------ */

/* Start `binlog tail --follow --json ARGS >> file` in the background; its pid. */
static pid_t follow(const char *file, const char *args)
{
  char pidf[600];
  snprintf(pidf, sizeof pidf, "%s/follow.pid", dir);
  assert_int_equal(sh(NULL, 0, "%s binlog tail --dir %s --json --follow %s >> %s 2>>%s.err "
                      "< /dev/null & echo $! > %s", bin, dir, args, file, file, pidf), 0);
  FILE *f = fopen(pidf, "r");
  assert_non_null(f);
  int pid = 0;
  assert_int_equal(fscanf(f, "%d", &pid), 1);
  fclose(f);
  return (pid_t)pid;
}

/* Wait until file holds transaction lsn (or 20 s). */
static void wait_in_file(const char *file, uint64_t lsn)
{
  char key[64];
  snprintf(key, sizeof key, "\"commit_lsn\":%llu,", (unsigned long long)lsn);
  for (int i = 0; i < 200; i++) {
    sh(txt, sizeof txt, "cat %s", file);
    if (strstr(txt, key))
      return;
    usleep(100000);
  }
  fail_msg("the follower never printed transaction %llu", (unsigned long long)lsn);
}

static void stop_pid(pid_t pid, int sig)
{
  kill(pid, sig);
  for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
    usleep(50000);
  assert_int_not_equal(kill(pid, 0), 0);
}

static void a_named_consumer_stopped_and_started_again_misses_nothing(void **state)
{
  (void)state;
  char file[600];
  snprintf(file, sizeof file, "%s/c1.json", dir);
  uint64_t from = commit("INSERT INTO t VALUES(100, 'before c1', NULL)");
  wait_durable(from);
  uint64_t want[64];
  size_t nw = 0;
  char args[128];
  snprintf(args, sizeof args, "--name c1 --from %llu", (unsigned long long)from);
  pid_t pid = follow(file, args);
  for (int i = 0; i < 10; i++)
    want[nw++] = commit("INSERT INTO t VALUES(%d, 'c1 %d', NULL)", 101 + i, i);
  wait_in_file(file, want[nw - 1]);
  /* Ctrl-C (SIGINT): it ends after a whole transaction, its position moved. */
  stop_pid(pid, SIGINT);
  for (int i = 0; i < 10; i++)
    want[nw++] = commit("UPDATE t SET x = 'c1 again %d' WHERE id = %d", i, 101 + i);
  wait_durable(want[nw - 1]);
  /* Started again by name alone: from where it stopped. */
  assert_int_equal(sh(NULL, 0, "%s binlog tail --dir %s --json --name c1 >> %s 2>>%s.err",
                      bin, dir, file, file), 0);
  struct evs v;
  sh(txt, sizeof txt, "cat %s", file);
  evs_parse(txt, &v);
  uint64_t got[64];
  size_t ng = txns_of(&v, got, 64);   /* no position twice */
  assert_int_equal(ng, nw);
  for (size_t i = 0; i < nw; i++)
    assert_int_equal(got[i], want[i]);
  evs_free(&v);

  /* Killed outright (SIGKILL) while following: started again, it misses
   * nothing; what it repeats (at most its last batch) carries the same
   * positions, so dropping repeats leaves each transaction once. (Its
   * output may end in a line cut short: the kill's, not the binlog's.) */
  char file2[600];
  snprintf(file, sizeof file, "%s/c2a.json", dir);
  snprintf(file2, sizeof file2, "%s/c2b.json", dir);
  snprintf(args, sizeof args, "--name c2 --from %llu", (unsigned long long)want[nw - 1]);
  uint64_t last = want[nw - 1];
  nw = 0;
  pid = follow(file, args);
  for (int i = 0; i < 20; i++) {
    want[nw++] = commit("INSERT INTO t VALUES(%d, 'c2', NULL)", 200 + i);
    if (i == 9) {
      wait_in_file(file, want[nw - 1]);
      stop_pid(pid, SIGKILL);
    }
  }
  wait_durable(want[nw - 1]);
  assert_int_equal(sh(NULL, 0, "%s binlog tail --dir %s --json --name c2 > %s 2>>%s.err",
                      bin, dir, file2, file2), 0);
  struct evs v2;
  sh(txt, sizeof txt, "cat %s", file);
  evs_parse_cut(txt, &v, 1);
  sh(txt, sizeof txt, "cat %s", file2);
  evs_parse(txt, &v2);
  size_t seen = 0;
  for (int run = 0; run < 2; run++) {
    const struct evs *e = run ? &v2 : &v;
    for (size_t i = 0; i < e->n; i++) {
      uint64_t c = num(e->e[i], "commit_lsn");
      if (c <= last)
        continue;            /* a repeat of what the killed run printed */
      assert_true(seen < nw);
      assert_int_equal(c, want[seen]);
      seen++;
      last = c;
    }
  }
  assert_int_equal(seen, nw);
  /* The second run began at most a batch before where the first ended. */
  assert_true(v2.n > 0);
  evs_free(&v);
  evs_free(&v2);
}

/* ---- apply ------------------------------------------------------------------ */

/* The rows of t, as `id|x|hex(y)` lines, from the volume. */
static void volume_rows(char *buf, size_t n)
{
  sql_ok("SELECT id, x, hex(y) FROM t ORDER BY id", NULL);
  size_t l = strlen(out);
  assert_true(l < n);
  memcpy(buf, out, l + 1);
}

/* ... and from the file. */
static void file_rows(const char *path, char *buf, size_t n)
{
  sqlite3 *db;
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, x, hex(y) FROM t ORDER BY id", -1, &st,
                                      NULL), SQLITE_OK);
  size_t len = 0;
  buf[0] = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *x = (const char *)sqlite3_column_text(st, 1);
    const char *y = (const char *)sqlite3_column_text(st, 2);
    len += (size_t)snprintf(buf + len, n - len, "%lld|%s|%s\n",
                            (long long)sqlite3_column_int64(st, 0), x ? x : "", y ? y : "");
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

static void apply_keeps_a_sqlite_file_equal_to_the_volume(void **state)
{
  (void)state;
  char file[600], a[1 << 16], b[1 << 16];
  snprintf(file, sizeof file, "%s/replica.db", dir);
  uint64_t last = commit("UPDATE t SET y = x'0102' WHERE id < 10");
  wait_durable(last);
  /* From the very first transaction: the table comes through the binlog. */
  assert_int_equal(sh(o, sizeof o, "%s binlog apply --dir %s --into %s --name rep 2>&1", bin,
                      dir, file), 0);
  assert_non_null(strstr(o, "applied"));
  volume_rows(a, sizeof a);
  file_rows(file, b, sizeof b);
  assert_string_equal(a, b);
  /* More commits; the file resumes from its own position. */
  commit("DELETE FROM t WHERE id > 205");
  commit("BEGIN; UPDATE t SET x = 'moved' WHERE id = 1; INSERT INTO t VALUES(500, 'five "
         "hundred', randomblob(100)); COMMIT");
  last = commit("ALTER TABLE t ADD COLUMN z DEFAULT 7");
  last = commit("INSERT INTO t(id, x, z) VALUES(501, 'with z', 8)");
  wait_durable(last);
  assert_int_equal(sh(o, sizeof o, "%s binlog apply --dir %s --into %s --name rep 2>&1", bin,
                      dir, file), 0);
  char at[64];
  snprintf(at, sizeof at, "it is at %llu", (unsigned long long)last);
  assert_non_null(strstr(o, at));
  volume_rows(a, sizeof a);
  file_rows(file, b, sizeof b);
  assert_string_equal(a, b);
  /* Again: nothing new, nothing changes. */
  assert_int_equal(sh(o, sizeof o, "%s binlog apply --dir %s --into %s 2>&1", bin, dir, file), 0);
  assert_non_null(strstr(o, "applied 0 transactions"));
  /* A whole-transaction replica takes no LSN:INDEX. */
  assert_int_equal(sh(o, sizeof o, "%s binlog apply --dir %s --into %s --from 5:1 2>&1", bin,
                      dir, file), 1);
}

/* ---- status ----------------------------------------------------------------- */

static void status_shows_positions_segments_and_consumers(void **state)
{
  (void)state;
  uint64_t last = commit("INSERT INTO t(id, x) VALUES(600, 'status')");
  wait_durable(last);
  assert_int_equal(sh(o, sizeof o, "%s binlog status --dir %s --json 2>&1", bin, dir), 0);
  cJSON *j = cJSON_Parse(o);
  assert_non_null(j);
  assert_string_equal(str(j, "volume"), "main");
  assert_true(num(j, "first") > 0 && num(j, "first") <= start_lsn);
  assert_true(num(j, "last") >= last);
  assert_true(num(j, "bytes") > 0);
  cJSON *segs = cJSON_GetObjectItem(j, "segments");
  assert_int_equal(cJSON_GetArraySize(segs), 6);
  cJSON *s;
  cJSON_ArrayForEach(s, segs) {
    assert_string_equal(str(s, "state"), "up");
    assert_true(num(s, "durable") >= num(s, "last"));
  }
  int seen = 0;
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "consumers")) {
    const char *name = str(c, "name");
    if (!strcmp(name, "rep")) {
      assert_true(num(c, "pos") < last);
      assert_int_equal(num(c, "lag_lsn"), num(j, "last") - num(c, "pos"));
      seen++;
    } else if (!strcmp(name, "c1") || !strcmp(name, "c2")) {
      seen++;
    }
  }
  assert_int_equal(seen, 3);
  cJSON_Delete(j);
  /* The table for people names the consumers. */
  assert_int_equal(sh(o, sizeof o, "%s binlog status --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(o, "consumers 3"));
  assert_non_null(strstr(o, "segments  6 of 6 answer"));
}

/* ---- retention -------------------------------------------------------------- */

static void retention_keeps_what_a_consumer_has_not_read_and_a_gap_is_an_error(void **state)
{
  (void)state;
  /* The other consumers go (the operator's), so only "slow" holds. */
  const char *gone[] = {"c1", "c2", "rep"};
  for (int i = 0; i < 3; i++)
    assert_int_equal(sh(o, sizeof o, "%s binlog forget %s --dir %s 2>&1", bin, gone[i], dir), 0);
  uint64_t here = commit("INSERT INTO t(id, x) VALUES(700, 'slow starts')");
  wait_durable(here);
  struct evs v;
  assert_int_equal(tail_json(&v, "--name slow --from %llu", (unsigned long long)here), 0);
  evs_free(&v);
  /* Four times the limit in new transactions. */
  uint64_t last = 0;
  for (int i = 0; i < 64; i++)
    last = commit("INSERT INTO t(id, x, y) VALUES(%d, 'big', randomblob(%d))", 1000 + i,
                  4 * KEEP_BYTES / 64);
  wait_durable(last);
  sleep(3);                  /* several retention passes */
  /* "slow" has read nothing of them: all there, in order, none missing. */
  assert_int_equal(tail_json(&v, "--name slow"), 0);
  uint64_t got[128];
  assert_int_equal(txns_of(&v, got, 128), 64);
  assert_int_equal(got[63], last);
  evs_free(&v);
  /* Now it has: retention releases the oldest down to the limit. A reader
   * asking from the start of this file's transactions has a gap: an error
   * naming both positions, exit status 3. */
  char want[64];
  snprintf(want, sizeof want, "position %llu", (unsigned long long)start_lsn);
  int rc = 0;
  for (int i = 0; i < 100; i++) {
    rc = tail_json(&v, "--from %llu", (unsigned long long)start_lsn);
    evs_free(&v);
    if (rc == 3)
      break;
    usleep(100000);
  }
  assert_int_equal(rc, 3);
  assert_non_null(strstr(o, "binlog gap"));
  assert_non_null(strstr(o, want));
  assert_ptr_equal(strchr(o, '\n'), o + strlen(o) - 1);   /* one line */
  /* Every segment releases down to about the limit (each at its pace). */
  uint64_t bytes = 0, first = 0;
  for (int i = 0; i < 100; i++) {
    assert_int_equal(sh(o, sizeof o, "%s binlog status --dir %s --json 2>&1", bin, dir), 0);
    cJSON *j = cJSON_Parse(o);
    assert_non_null(j);
    bytes = num(j, "bytes");
    first = num(j, "first");
    cJSON_Delete(j);
    if (bytes <= 2 * KEEP_BYTES)
      break;
    usleep(100000);
  }
  assert_true(bytes <= 2 * KEEP_BYTES);
  assert_true(first > start_lsn);
}

/* ---- no binlog -------------------------------------------------------------- */

static void a_volume_without_a_binlog_says_so_in_one_line(void **state)
{
  (void)state;
  /* A volume made by a plain open (no writer, so no binlog PG). */
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  char why[256];
  ov.name = "plain";
  ov.create = 1;
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  Env *rep = rpc_once(coord, &req, 5000, why, sizeof why);
  assert_non_null(rep);
  assert_int_equal(rep->body_case, AURALOG__ENVELOPE__BODY_VOLUME);
  wire_free(rep);
  const char *cmds[] = {"tail", "status", "apply"};
  for (int i = 0; i < 3; i++) {
    char want[256], into[400] = "";
    if (i == 2)
      snprintf(into, sizeof into, " --into %s/plain.db", dir);
    int rc = sh(o, sizeof o, "%s binlog %s --dir %s --volume plain%s 2>&1", bin, cmds[i], dir,
                into);
    assert_int_equal(rc, 1);
    snprintf(want, sizeof want, "auralog: binlog %s: volume plain has no binlog: start the "
             "engine with --binlog enhanced\n", cmds[i]);
    assert_string_equal(o, want);
  }
}

static int setup(void **state)
{
  (void)state;
  char keep[32];
  snprintf(keep, sizeof keep, "%d", KEEP_BYTES);
  setenv("AURALOG_BINLOG_KEEP_BYTES", keep, 1);   /* reaches the nodes through `cluster up` */
  return cluster_start_with("blconsume", " --replicas 0 --binlog enhanced");
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(tail_shows_exactly_the_committed_transactions),
    cmocka_unit_test(a_named_consumer_stopped_and_started_again_misses_nothing),
    cmocka_unit_test(apply_keeps_a_sqlite_file_equal_to_the_volume),
    cmocka_unit_test(status_shows_positions_segments_and_consumers),
    cmocka_unit_test(retention_keeps_what_a_consumer_has_not_read_and_a_gap_is_an_error),
    cmocka_unit_test(a_volume_without_a_binlog_says_so_in_one_line),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: binlog consumers", tests, setup, teardown);
}
