/*
 * lab/check.c: `auralog lab check N`: each lab's outcome, and the
 * student's answers, graded from what the cluster did.
 *
 * A check asks two things. Did the lab's steps happen? That is read from
 * the lab's history (lab/history.c: the coordinator's MAC'd journal since
 * `auralog lab start N`, demos left out), never from a log a student can
 * write: an AZ down, a stall under AZ+1, a crash with commits in flight,
 * segments that fell behind and caught up by gossip, a writer fenced. And
 * are the answers right? Every answer is a number or one word from a
 * list; numbers are compared with what that history measured (with a
 * tolerance where the student measures too) or with the cluster's
 * quorum configuration, words exactly. `lab run N` calls the same code
 * on the demo's span with x->ref set: the expected values become its
 * reference answers, so they are written nowhere in the student's tree.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/conf.h"
#include "lab/lab.h"
#include "net/keyfile.h"
#include "net/rpc.h"
#include "cli/status.h"

void ok(struct labctx *x, int good, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  printf("  [%s] ", good ? "ok" : "missing");
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  x->failed |= !good;
}

void bad(struct labctx *x, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  printf("  [wrong] ");
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  x->failed = 1;
}

/* Values for a check's line: fmt formatted when have, else "". A step not
 * seen has no value to show, and a line never shows a stand-in for one
 * (-1, nan). A ring of buffers: several in one line. */
const char *shown(int have, const char *fmt, ...)
{
  static char ring[8][512];
  static int next;
  char *b = ring[next++ % 8];
  b[0] = 0;
  if (have) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof ring[0], fmt, ap);
    va_end(ap);
  }
  return b;
}

/* A count from SQL (sql_num) for a line: " (n)", or why there is none. */
const char *counted(long long n)
{
  return n >= 0 ? shown(1, " (%lld)", n) : " (the count failed: no such table, or no writer "
                                           "answered)";
}

/* Run SQL on the engine; the rows as "a|b\n" text in out. 0 on success. */
int query(struct labctx *x, const char *sql, char *out, size_t n)
{
  char why[256];
  if (x->offline)
    return ev_sql_replay(x, sql, out, n);   /* lab verify: what the check got */
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Query q = AURALOG__QUERY__INIT;
  q.sql = (char *)sql;
  req.body_case = AURALOG__ENVELOPE__BODY_QUERY;
  req.query = &q;
  out[0] = 0;
  Env *rep = rpc_once(x->engine, &req, 30000, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_ROWS, why, sizeof why) != 0) {
    snprintf(out, n, "%s", why);
    wire_free(rep);
    return ev_query(x, sql, out, n, -1);
  }
  size_t len = 0;
  for (size_t i = 0; i < rep->rows->n_rows && len < n; i++)
    for (size_t k = 0; k < rep->rows->rows[i]->n_values && len < n; k++)
      len += (size_t)snprintf(out + len, n - len, "%s%s", rep->rows->rows[i]->values[k]->text,
                              k + 1 < rep->rows->rows[i]->n_values ? "|" : "\n");
  wire_free(rep);
  return ev_query(x, sql, out, n, 0);    /* kept: lab verify asks it again */
}

/* A number from SQL (the first column of the first row), or -1. */
long long sql_num(struct labctx *x, const char *sql)
{
  char out[256];
  if (query(x, sql, out, sizeof out) != 0 || !isdigit((unsigned char)out[0]))
    return -1;
  return atoll(out);
}

static double num(struct labctx *x, const char *key)
{
  cJSON *v = cJSON_GetObjectItem(x->status, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* ---- history ---------------------------------------------------------------- */

int started(struct labctx *x, int lab)
{
  /* The journal read: the cluster's, or (lab verify) the run directory's excerpt. */
  ok(x, x->journal != NULL, "the cluster's journal is readable (%s)", x->jpath);
  ok(x, x->jbad == 0, "every line of the lab's history carries the coordinator's MAC (%d do not: "
     "edited by hand?)", x->jbad);
  if (x->ref == NULL)
    ok(x, x->start >= 0, "the lab was begun with `auralog lab start %d` (its history is what "
       "happened after that)", lab);
  else
    ok(x, x->start >= 0, "the demo's span is in the journal");
  /* Whose run, and does the journal agree with the coordinator and nodes
   * (lab/evidence.c)? */
  who_and_assignment(x);
  agree(x);
  return x->start >= 0;
}

/* Consecutive engine samples of one epoch in the window, with the one
 * before the window as the base: calls f for each pair. */
static void sample_pairs(struct labctx *x, void (*f)(const cJSON *, const cJSON *, void *),
                         void *arg)
{
  const cJSON *prev = NULL;
  for (long i = x->start; i >= 0 && prev == NULL; i--)
    if (is(hist_at(x, i), "engine"))
      prev = hist_at(x, i);
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (!is(e, "engine"))
      continue;
    if (prev && fnum(prev, "epoch") == fnum(e, "epoch") &&
        !strcmp(fstr(prev, "volume"), fstr(e, "volume")))
      f(prev, e, arg);
    prev = e;
  }
}

/* ---- lab 1 ------------------------------------------------------------------- */

struct l1 {
  double commits, bmin, bmax, rmin, rmax, bsum, csum, rsum;
  /* The updates alone (what step 4 measures): stretches that begin once
   * the commits before them are all but the last `updates` (from). */
  double from, ub, uc, ur;
};

static void l1_pair(const cJSON *a, const cJSON *b, void *arg)
{
  struct l1 *s = arg;
  double dc = fnum(b, "commits") - fnum(a, "commits");
  if (dc <= 0)
    return;
  int tail = s->from >= 0 && s->commits >= s->from;
  s->commits += dc;
  if (dc < 5)
    return;
  if (tail) {
    s->ub += fnum(b, "redo_bytes") - fnum(a, "redo_bytes");
    s->ur += fnum(b, "records") - fnum(a, "records");
    s->uc += dc;
  }
  double by = (fnum(b, "redo_bytes") - fnum(a, "redo_bytes")) / dc / NCOPIES;
  double rc = (fnum(b, "records") - fnum(a, "records")) / dc;
  s->bmin = s->bmin < 0 || by < s->bmin ? by : s->bmin;
  s->bmax = by > s->bmax ? by : s->bmax;
  s->rmin = s->rmin < 0 || rc < s->rmin ? rc : s->rmin;
  s->rmax = rc > s->rmax ? rc : s->rmax;
  s->bsum += fnum(b, "redo_bytes") - fnum(a, "redo_bytes");
  s->rsum += fnum(b, "records") - fnum(a, "records");
  s->csum += dc;
}

void check1(struct labctx *x)
{
  if (!started(x, 1))
    return;
  long long rows = sql_num(x, "select count(*) from lab01;");
  ok(x, rows >= 100, "table lab01 holds step 1's 100 committed rows (at least; step 3 adds "
     "100 more)%s", rows >= 0 ? shown(1, " (it holds %lld)", rows) : counted(rows));
  ok(x, num(x, "vdl") > 0 && num(x, "vdl") <= num(x, "vcl"),
     "the VDL advanced and stays at or below the VCL%s%s",
     shown(num(x, "vdl") >= 0, " (vdl %.0f, vcl %.0f)", num(x, "vdl"), num(x, "vcl")),
     num(x, "vdl") >= 0 ? "" : " (status names no writer)");
  int updates = x->has_assign ? x->as.count : 50;
  struct l1 s = {0, -1, -1, -1, -1, 0, 0, 0, -1, 0, 0, 0};
  sample_pairs(x, l1_pair, &s);
  struct l1 u = {0, -1, -1, -1, -1, 0, 0, 0, s.commits - updates, 0, 0, 0};
  sample_pairs(x, l1_pair, &u);          /* again: the last `updates` commits alone */
  ok(x, s.commits >= 100 + updates, "the journal saw the lab's commits: at least 100 inserts "
     "and %d updates (%.0f commits in all since the start, the table's and step 3's included)",
     updates, s.commits);
  if (x->has_assign) {
    /* The row your `lab start` named, updated as many times as it said:
     * the table's own word, which a journal line cannot change. */
    char q[96];
    snprintf(q, sizeof q, "select n from lab01 where id = %d;", x->as.row);
    long long n = sql_num(x, q);
    ok(x, n == x->as.count, "row %d of lab01 was updated %d times, as your `lab start` said%s",
       x->as.row, x->as.count, counted(n));
  }
  /* Nothing measured (no stretch of five commits or more): no answer is right. */
  double by = s.bmin >= 0 ? s.bsum / s.csum / NCOPIES : NAN;
  double rc = s.bmin >= 0 ? s.rsum / s.csum : NAN;
  if (u.uc > 0)                         /* the value shown: the updates', as step 4 measures */
    by = u.ub / u.uc / NCOPIES, rc = u.ur / u.uc;
  /* The student measures the updates alone; the journal samples every
   * second: accept what any stretch of the lab measured, give or take. */
  want_num(x, "bytes_per_txn", floor(s.bmin * 0.6), ceil(s.bmax * 1.4), by,
           "redo bytes per one-row transaction per segment");
  want_num(x, "records_per_update", floor(s.rmin), ceil(s.rmax), round(rc),
           "records a one-row transaction ships");
  /* SQLite numbers its pages from 1 (the header is page 1); the volume
   * from 0 (status and viz: "pages 0..255"; page_no * page_size is its
   * offset), where the header is page 0. Either numbering is right. */
  const char *pg = x->ref ? NULL : lab_answer(x, "page_every_commit");
  if (pg && strcmp(pg, "0") == 0)
    ok(x, 1, "page_every_commit: the page SQLite changes on every commit (0: the volume's "
       "page 0, as status numbers pages; SQLite calls it page 1)");
  else
    want_num(x, "page_every_commit", 1, 1, 1, "the page SQLite changes on every commit (SQLite "
             "numbers it 1; status, from 0, numbers it 0)");
}

/* ---- lab 2 ------------------------------------------------------------------- */

void check2(struct labctx *x)
{
  if (!started(x, 2))
    return;
  int copies, vw, vr;
  hist_quorum(x, &copies, &vw, &vr);
  /* An AZ down while commits went on; then a stall with the AZ and one
   * more node down; then the stalled records durable; a slow node. */
  struct nodes ns = {{{0}}, {0}};
  char az = 0, prevdown = 0;
  double last = -1, at_down = -1, slow_base = -1, stall_pending = -1;
  int wrote = 0, stalled = 0, unstalled = 0, slow = 0, slow_wrote = 0, extra_down = 0;
  double slow_off = 0, stall_vdl = -1;
  char slow_node[16] = "";
  for (long i = 0; i < hist_len(x); i++) {
    const cJSON *e = hist_at(x, i);
    nodes_apply(&ns, e);
    char down = nodes_az_down(&ns);
    if (i <= x->start || !x->win[i]) {
      if (is(e, "engine"))
        last = fnum(e, "commits");
      prevdown = down;
      continue;
    }
    if (down && !prevdown)
      at_down = last;               /* the commits made when the AZ went down */
    prevdown = down;
    if (is(e, "engine")) {
      if (down && at_down >= 0 && fnum(e, "commits") > at_down)
        wrote = 1, az = down;
      /* The engine reports every ENGINE_STAT_MS: a commit made just
       * before the slow node was set right shows in the next sample. */
      if (slow && slow_base >= 0 && fnum(e, "commits") > slow_base &&
          (slow == 1 || fnum(e, "t") - slow_off <= 1500))
        slow_wrote = 1;
      if (slow == 2)
        slow = 0;
      last = fnum(e, "commits");
    } else if (is(e, "stall") && down && nodes_ndown(&ns) >= 3 && !stalled) {
      stalled = 1;
      stall_pending = fnum(e, "pending");
      stall_vdl = fnum(e, "vdl");
      /* AZ+1: the one more node the assignment names was down too */
      extra_down = x->has_assign && ns.down[x->as.node[0] - 'A'][x->as.node[1] - '1'];
    } else if (is(e, "unstall") && stalled) {
      unstalled = 1;
    } else if (is(e, "fault") && !strcmp(fstr(e, "action"), "slow")) {
      if (fnum(e, "n") > 0) {
        slow = 1, slow_base = last;
        snprintf(slow_node, sizeof slow_node, "%s", fstr(e, "node"));
      } else if (slow)
        slow = 2, slow_off = fnum(e, "t");
    }
  }
  ok(x, wrote, "an AZ was down (both its nodes) and commits went on meanwhile%s%s",
     az ? ": AZ " : "", az ? (char[]){az, 0} : "");
  ok(x, stalled, "with an AZ and one more node down, a commit stalled (no write quorum)");
  ok(x, unstalled, "the stalled commit became durable once the nodes came back");
  ok(x, slow_wrote, "commits went on while a node was slow (`auralog fault slow`)");
  if (x->has_assign) {
    ok(x, az == x->as.az, "the AZ taken out is the one your `lab start` named (AZ %c; %s)",
       x->as.az, az ? (char[]){az, 0} : "none");
    ok(x, extra_down, "for AZ+1 the node your `lab start` named (%s) was down in the stall",
       x->as.node);
    ok(x, !strcmp(slow_node, x->as.slow), "the slow node is the one your `lab start` named "
       "(%s; %s)", x->as.slow, slow_node[0] ? slow_node : "none");
  }
  /* The nodes' own word: az-down stopped the AZ's nodes, so each says its
   * process started after the lab began (their heartbeats, via status). */
  int restarted = 0;
  for (int k = 1; az && k <= 2; k++) {
    const cJSON *nd = status_node(x, (char[]){az, (char)('0' + k), 0});
    restarted += nd && status_num(nd, "started_ms") > x->tstart;
  }
  if (az)
    ok(x, restarted == 2, "AZ %c's two nodes say themselves they were restarted after the "
       "lab began (%d of 2)", az, restarted);
  cJSON *n;
  int up = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(x->status, "nodes"))
    up += strcmp(cJSON_GetObjectItem(n, "state")->valuestring, "up") == 0;
  ok(x, up == copies, "all %d nodes are up again (%d)", copies, up);
  want_num(x, "write_loss", copies - vw, copies - vw, copies - vw,
           "segments a PG can lose and still write");
  want_num(x, "read_loss", copies - vr, copies - vr, copies - vr,
           "segments a PG can lose and still read");
  want_num(x, "copies_left_2of3", 1, 1, 1,
           "copies left of a 3-copy volume (one per AZ) after AZ+1");
  want_num(x, "acks_per_commit", vw, vw, vw, "segment acks a commit waits for");
  want_num(x, "stall_records", stall_pending, stall_pending, stall_pending,
           "records that waited for a write quorum in the stall (the error says)");
  want_num(x, "stall_vdl", stall_vdl, stall_vdl, stall_vdl,
           "the VDL the stalled commit waited at (the error says): this run's own LSN");
}

/* ---- lab 3 ------------------------------------------------------------------- */

void check3(struct labctx *x)
{
  if (!started(x, 3))
    return;
  const cJSON *crash = NULL, *epoch = NULL, *trunc = NULL;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (is(e, "fault") && (!strcmp(fstr(e, "action"), "engine-crash") ||
                           !strcmp(fstr(e, "action"), "writer-crash")))
      crash = e, epoch = trunc = NULL;
    if (crash && is(e, "epoch") && fnum(e, "epoch") > fnum(crash, "epoch"))
      epoch = epoch ? epoch : e;
    if (epoch && is(e, "trunc") && fnum(e, "epoch") == fnum(epoch, "epoch"))
      trunc = e;
  }
  ok(x, crash != NULL, "the writer was crashed (`auralog fault writer-crash`)");
  ok(x, crash && fnum(crash, "last_commit_ms") >= 0 && fnum(crash, "last_commit_ms") < 2000,
     "it was committing when it crashed%s", shown(fnum(crash, "last_commit_ms") >= 0,
     " (its last commit %.0f ms before)", fnum(crash, "last_commit_ms")));
  ok(x, epoch != NULL, "a new writer opened the volume with a new epoch%s",
     shown(epoch != NULL, " (%.0f)", fnum(epoch, "epoch")));
  ok(x, trunc != NULL, "its recovery wrote a truncation range%s",
     shown(trunc != NULL, " (%.0f, %.0f]", fnum(trunc, "from"), fnum(trunc, "to")));
  /* The coordinator's metadata keeps the recovery's truncation range. */
  const cJSON *t;
  int kept = 0;
  cJSON_ArrayForEach(t, cJSON_GetObjectItem(x->status, "truncations"))
    kept |= trunc && status_num(t, "epoch") == fnum(trunc, "epoch") &&
            status_num(t, "from") == fnum(trunc, "from") && status_num(t, "to") == fnum(trunc, "to");
  ok(x, kept, "the coordinator's metadata holds that truncation range too (status)");
  char path[PATH_MAX + 64], line[128];
  lab_file(x, "lab03-acks.txt", path, sizeof path);
  FILE *f = fopen(path, "r");
  int acked = 0, missing = 0;
  while (f && fgets(line, sizeof line, f)) {
    int t = atoi(line);
    char q[128];
    snprintf(q, sizeof q, "select count(*) from lab03 where txn = %d;", t);
    acked++;
    missing += sql_num(x, q) != 5;
  }
  if (f)
    fclose(f);
  ok(x, acked > 0, "acknowledged transactions were recorded (%d, in %s)", acked, path);
  ok(x, missing == 0, "every acknowledged transaction is there, whole (%d missing)", missing);
  long long partial = sql_num(x, "select count(*) from (select txn from lab03 group by txn "
                                 "having count(*) <> 5);");
  ok(x, partial == 0, "no partial transaction is visible%s", counted(partial));
  char ic[64];
  query(x, "pragma integrity_check;", ic, sizeof ic);
  ok(x, strcmp(ic, "ok\n") == 0, "integrity_check is ok");
  double ep = epoch ? fnum(epoch, "epoch") : -1, from = trunc ? fnum(trunc, "from") : -1;
  want_num(x, "epoch", ep, ep, ep, "the epoch of the writer that recovered");
  want_num(x, "truncated_from", from, from, from,
           "the VDL the recovery proved: where its truncation range begins");
  want_num(x, "lost_acknowledged", missing, missing, missing,
           "acknowledged transactions lost");
}

/* ---- lab 4 ------------------------------------------------------------------- */

void check4(struct labctx *x)
{
  if (!started(x, 4))
    return;
  char az[2] = "";
  int parted = 0, healed = 0, wrote = 0, behind = 0, caught = 0, gossip = 1;
  /* Who filled the AZ's first node's pg 0 (the segment step 6 looks at):
   * records from the writer, records and page versions from its peers,
   * between falling behind and catching up (-1: a journal without them). */
  double by_writer = -1, by_peers = -1;
  double last = -1, base = -1, scl_behind = -1, heal_t = 0, vdl0 = 0;
  for (long i = 0; i < hist_len(x); i++) {
    const cJSON *e = hist_at(x, i);
    int in = i > x->start && x->win[i];
    /* Commits as of each moment (a sample comes just before each fault);
     * one made just before the heal shows in the next sample. */
    if (is(e, "engine")) {
      if (in && parted && base >= 0 && fnum(e, "commits") > base &&
          (!healed || fnum(e, "t") - heal_t <= 1500))
        wrote = 1;
      last = fnum(e, "commits");
      if (i <= x->start)
        vdl0 = fnum(e, "vdl");          /* the VDL when the lab began */
    }
    if (!in)
      continue;
    if (is(e, "fault") && !strcmp(fstr(e, "action"), "partition") && !parted) {
      parted = 1, base = last;
      snprintf(az, sizeof az, "%s", fstr(e, "az"));
    } else if (is(e, "fault") && !strcmp(fstr(e, "action"), "heal") && parted && !healed) {
      healed = 1, heal_t = fnum(e, "t");
    } else if (is(e, "behind") && parted && !healed && !strcmp(fstr(e, "az"), az)) {
      behind++;
      if (fnum(e, "pg") == 0)
        scl_behind = fnum(e, "scl");     /* the handout reads pg 0's */
    } else if (is(e, "caughtup") && healed && !strcmp(fstr(e, "az"), az)) {
      caught++;
      gossip &= fnum(e, "gossip_msgs") > 0;
      const char *nd = fstr(e, "node");
      if (fnum(e, "pg") == 0 && nd[0] == az[0] && !strcmp(nd + 1, "1") &&
          cJSON_GetObjectItem(e, "from_peers")) {
        by_writer = fnum(e, "from_writer");
        by_peers = fnum(e, "from_peers");
      }
    }
  }
  ok(x, parted, "an AZ was partitioned (`auralog fault partition`)%s%s", az[0] ? ": " : "", az);
  ok(x, wrote, "commits went on during the partition");
  ok(x, behind >= 2, "both its segments of a PG fell behind their peers (%d)", behind);
  ok(x, healed, "the partition was healed (`auralog fault heal`)");
  ok(x, caught >= 2 && gossip, "they caught up after the heal, their nodes gossiping with "
     "PG peers (%d caught up)", caught);
  if (x->has_assign)
    ok(x, az[0] == x->as.az, "the AZ partitioned is the one your `lab start` named (AZ %c; %s)",
       x->as.az, az[0] ? az : "none");
  /* The nodes' own word: each of the AZ's nodes counts the partitions it
   * was told of; it must have counted one since the lab-start mark (whose
   * "nodes" holds each count then), and be at its PG's SCL again now. */
  const cJSON *mark = x->start >= 0 ? hist_at(x, x->start) : NULL;
  const cJSON *then = cJSON_GetObjectItem(mark, "nodes");
  int told = 0, level = 0;
  double top = 0;
  cJSON *pg0 = cJSON_GetArrayItem(cJSON_GetObjectItem(x->status, "pgs"), 0), *sg;
  cJSON_ArrayForEach(sg, cJSON_GetObjectItem(pg0, "segments"))
    top = status_num(sg, "scl") > top ? status_num(sg, "scl") : top;
  for (int k = 1; az[0] && k <= 2; k++) {
    char id[3] = {az[0], (char)('0' + k), 0};
    const cJSON *nd = status_node(x, id), *b = cJSON_GetObjectItem(then, id);
    double was = cJSON_IsArray(b) ? cJSON_GetArrayItem(b, 0)->valuedouble : x->demo ? 0 : -1;
    if (nd && status_num(nd, "started_ms") > x->tstart)
      was = 0;                          /* restarted since: counts from zero */
    told += nd && was >= 0 && status_num(nd, "partitions") > was;
    cJSON_ArrayForEach(sg, cJSON_GetObjectItem(pg0, "segments"))
      level += !strcmp(fstr(sg, "node"), id) && status_num(sg, "scl") == top && top > 0;
  }
  if (az[0]) {
    ok(x, told == 2, "AZ %s's two nodes say themselves they were partitioned since the lab "
       "began (%d of 2)", az, told);
    ok(x, level == 2, "and their pg 0 segments are at the PG's SCL now (%d of 2 at %.0f)",
       level, top);
  }
  if (scl_behind >= 0)
    ok(x, scl_behind >= vdl0 && scl_behind <= status_num(x->status, "vdl"),
       "the SCL they stayed at (%.0f) is an LSN this writer reached: between the VDL when "
       "the lab began (%.0f) and the VDL now (%.0f)", scl_behind, vdl0,
       status_num(x->status, "vdl"));
  long long rows = sql_num(x, "select count(*) from lab04;");
  ok(x, rows >= 50, "rows written during the partition are there%s", counted(rows));
  want_num(x, "scl_behind", scl_behind, scl_behind, scl_behind,
           "the SCL the partitioned segments stayed at");
  /* The writer keeps what it has not sent to a segment whose node it
   * believes up (a partitioned node's connection stays open: vcore.c
   * advance) and resends that after the heal; what it sent into the
   * partition and freed once durable, the PG peers fill by gossip. How
   * the gap splits depends on the run: at a person's pace the writer
   * often holds nothing any more, and gossip fills it all. So the right
   * word is what this run's segment says it took from whom. */
  const char *who = "both";     /* also for a journal without the counts */
  if (by_peers > 0 && by_writer <= 0)
    who = "peers";
  else if (by_writer > 0 && by_peers <= 0)
    who = "engine";
  char what[300];
  const char *given = lab_answer(x, "who_resends");
  if (by_peers >= 0 && !(given && strcmp(given, who) == 0))
    snprintf(what, sizeof what, "who sent %c1's segment of pg 0 the records it missed (its log "
             "says how many came by gossip; compare with the gap)", az[0]);
  else if (by_peers < 0)
    snprintf(what, sizeof what, "who sent the returning segments the records they missed (the "
             "writer what it still held, gossip what it had sent into the partition and freed)");
  else
    snprintf(what, sizeof what, "who sent %c1's segment of pg 0 the records it missed (this run: "
             "%.0f from the writer's Appends, %.0f from its PG peers' gossip)", az[0], by_writer,
             by_peers);
  want_word(x, "who_resends", who, "engine|peers|both|coordinator", what);
  want_word(x, "scl_meaning", "hole", "hole|vdl|coalesce",
            "what holds a segment's SCL below records it holds");
}

/* ---- lab 5 ------------------------------------------------------------------- */

void check5(struct labctx *x)
{
  if (!started(x, 5))
    return;
  /* The writer before the window, then each epoch in it. */
  char prev[ADDR_MAX_LEN + 1] = "";
  double prev_epoch = -1, new_epoch = -1, old_epoch = -1;
  for (long i = 0; i <= x->start; i++)
    if (is(hist_at(x, i), "epoch")) {
      snprintf(prev, sizeof prev, "%s", fstr(hist_at(x, i), "writer"));
      prev_epoch = fnum(hist_at(x, i), "epoch");
    } else if (is(hist_at(x, i), "engine") && fnum(hist_at(x, i), "epoch") >= prev_epoch) {
      /* a journal begun after the writer opened: its reports name it */
      snprintf(prev, sizeof prev, "%s", fstr(hist_at(x, i), "addr"));
      prev_epoch = fnum(hist_at(x, i), "epoch");
    }
  int second = 0, fenced = 0;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    /* The second writer is started by hand: a promotion later (the
     * coordinator replacing a writer that went away) is not it. */
    if (is(e, "epoch") && !second && prev[0] && strcmp(fstr(e, "writer"), prev) != 0 &&
        !cJSON_IsTrue(cJSON_GetObjectItem(e, "promotion"))) {
      second = 1;
      new_epoch = fnum(e, "epoch");
      old_epoch = prev_epoch;
    }
    if (is(e, "fenced") && second && (!fstr(e, "addr")[0] || !strcmp(fstr(e, "addr"), prev)) &&
        fnum(e, "epoch") == old_epoch)
      fenced = 1;
    if (is(e, "epoch") && !second) {
      snprintf(prev, sizeof prev, "%s", fstr(e, "writer"));
      prev_epoch = fnum(e, "epoch");
    }
  }
  ok(x, second, "a second writer opened the volume with a new epoch%s while the first ran",
     shown(second, " (%.0f)", new_epoch));
  ok(x, fenced, "the first writer%s was still running after it, fenced",
     shown(old_epoch >= 0, " (epoch %.0f)", old_epoch));
  long long rows = sql_num(x, "select count(*) from lab05 where writer = 'second';");
  if (x->has_assign)
    ok(x, rows == x->as.count, "the second writer's %d rows are there, as your `lab start` "
       "said (%lld)", x->as.count, rows);
  else
    ok(x, rows >= 1, "the second writer's row is there%s", counted(rows));
  /* Its recovery's truncation range, in the journal and the coordinator's
   * metadata alike: where it begins is the VDL it proved, an LSN of this
   * run (a friend's epochs may be the same numbers; this is not). */
  double proved = -1;
  const cJSON *t;
  for (size_t i = 0; i < x->nev && second; i++)
    if (is(x->ev[i], "trunc") && fnum(x->ev[i], "epoch") == new_epoch)
      proved = fnum(x->ev[i], "from");
  int kept = 0;
  cJSON_ArrayForEach(t, cJSON_GetObjectItem(x->status, "truncations"))
    kept |= status_num(t, "epoch") == new_epoch && status_num(t, "from") == proved;
  ok(x, proved >= 0 && kept, "the second writer's recovery proved a VDL%s, in the journal "
     "and in the coordinator's metadata", shown(proved >= 0, " (%.0f)", proved));
  long long first = sql_num(x, "select count(*) from lab05 where writer = 'first-after';");
  if (first > 0) {
    /* The usual slip: `auralog sql` without --engine asks the coordinator
     * who writes, and it names the second writer, which commits the row. */
    bad(x, "the fenced writer's late row is not (%lld): the row went to the current writer: "
        "send it to the first (fenced) writer with `auralog sql --engine FIRST ...` (step 4). "
        "Redo: while FIRST runs, `auralog sql \"delete from lab05 where writer = "
        "'first-after';\"` and step 4 again; later, `auralog sql \"drop table lab05;\"` and "
        "begin again at step 0", first);
  } else
    ok(x, first == 0, "the fenced writer's late row is not%s", counted(first));
  want_num(x, "fenced_by", new_epoch, new_epoch, new_epoch,
           "the epoch the first engine's error names");
  want_num(x, "old_epoch", old_epoch, old_epoch, old_epoch, "the first engine's own epoch");
  want_num(x, "recovered_vdl", proved, proved, proved, "the VDL the second writer's "
           "recovery proved: where its truncation range begins (auralog status)");
  want_word(x, "who_refuses", "nodes", "nodes|coordinator|engine",
            "who refuses the old writer's batches");
}

/* ---- lab 6 ------------------------------------------------------------------- */

/* Every segment of pg 0 at the same SCL, and every node up? */
static int all_caught_up(struct labctx *x, int *up)
{
  cJSON *pg = cJSON_GetArrayItem(cJSON_GetObjectItem(x->status, "pgs"), 0), *s, *n;
  double lo = -1, hi = -1;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments")) {
    double v = cJSON_GetObjectItem(s, "scl")->valuedouble;
    lo = lo < 0 || v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  *up = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(x->status, "nodes"))
    *up += strcmp(cJSON_GetObjectItem(n, "state")->valuestring, "up") == 0;
  return lo > 0 && lo == hi;
}

/* Lab 6 runs on a cluster of its own (DIR/netns): look at that one. */
static int retarget(struct labctx *x)
{
  char p[PATH_MAX + 32], why[320];
  snprintf(p, sizeof p, "%s/netns", x->dir);
  cJSON *o = conf_load(p);
  if (o == NULL)
    return -1;
  int rc = -1;
  if (conf_str(o, "coord", x->coord, sizeof x->coord) == 0 &&
      conf_str(o, "engine", x->engine, sizeof x->engine) == 0) {
    /* Its coordinator knows its own operator (DIR/netns/operator.pub, made
     * by netns-cluster.sh up): the marks and the check's seal are signed
     * with DIR/netns/operator.key, or that coordinator refuses them. */
    op_use_dir(p);
    find_writer(x);
    Env *rep = status_fetch(x->coord, "main", why, sizeof why);
    if (rep) {
      char *js = status_json(rep->status);
      cJSON_Delete(x->status);
      x->status = cJSON_Parse(js);
      free(js);
      wire_free(rep);
      ev_status(x);            /* the evidence is this cluster's view */
      rc = 0;
    }
  }
  cJSON_Delete(o);
  return rc;
}

/* What lab 6's history shows of AZ B's cut. */
struct l6 {
  int cut, back;               /* B1 and B2 both went down; then both came up */
  double during;               /* commits the writer made while they were down */
};

/* Replay the window: the commits at B's cut are the writer's last sample
 * before it (the coordinator samples the writer before each node's
 * change: coord/journal.c), those at its return the last before that. */
static void l6_replay(struct labctx *x, struct l6 *r)
{
  struct nodes s;
  memset(&s, 0, sizeof s);
  memset(r, 0, sizeof *r);
  long first = x->nev ? hist_index(x, x->ev[0]) : 0;
  for (long i = 0; i < first; i++)
    nodes_apply(&s, hist_at(x, i));
  double c = -1, epoch = -1, at_cut = -1;
  int in_cut = 0;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (is(e, "engine")) {
      if (fnum(e, "epoch") != epoch)
        at_cut = at_cut >= 0 ? 0 : at_cut;   /* a new writer counts from zero */
      epoch = fnum(e, "epoch");
      c = fnum(e, "commits");
      continue;
    }
    nodes_apply(&s, e);
    if (!in_cut && s.down[1][0] && s.down[1][1]) {
      r->cut = in_cut = 1;
      at_cut = c;
    } else if (in_cut && !s.down[1][0] && !s.down[1][1]) {
      in_cut = 0;
      r->back = 1;
      if (at_cut >= 0 && c - at_cut > r->during)
        r->during = c - at_cut;
    }
  }
}

/* Lab 6 runs on a cluster of its own, DIR/netns, with a coordinator of
 * its own: its history is that coordinator's journal, over the span since
 * `lab start 6` (hist_follow). The cut is no auralog fault (the script
 * takes B's link down), so the journal sees what the coordinator saw: B's
 * two nodes down, then up, and the writer's commits in between. */
void check6(struct labctx *x)
{
  int begun = x->start >= 0;
  if (x->ref == NULL)
    ok(x, begun, "the lab was begun with `auralog lab start 6` (its history is what "
       "happened after that)");
  who_and_assignment(x);      /* the start mark is in this cluster's journal */
  if (retarget(x) != 0) {
    ok(x, 0, "the namespace cluster runs (%s/netns/cluster.json; scripts/netns-cluster.sh up)",
       x->dir);
    return;
  }
  char p[PATH_MAX + 64], why[320];
  hist_mark(x, "lab-check", 6, why, sizeof why);   /* its coordinator samples the writer */
  snprintf(p, sizeof p, "%s/netns/data/coord/journal.jsonl", x->dir);
  int rc = hist_follow(x, p);
  ok(x, x->journal != NULL, "the namespace cluster's journal is readable (%s)", p);
  ok(x, x->jbad == 0, "every line of the lab's history carries the coordinator's MAC (%d do not: "
     "edited by hand?)", x->jbad);
  if (rc != 0 && !begun)
    return;
  cJSON *n;
  char hosts[3][64] = {"", "", ""};
  int nhosts = 0, loop = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(x->status, "nodes")) {
    char h[64];
    snprintf(h, sizeof h, "%s", cJSON_GetObjectItem(n, "addr")->valuestring);
    *strrchr(h, ':') = 0;
    loop |= strncmp(h, "127.", 4) == 0;
    int seen = 0;
    for (int i = 0; i < nhosts; i++)
      seen |= strcmp(hosts[i], h) == 0;
    if (!seen && nhosts < 3)
      snprintf(hosts[nhosts++], sizeof hosts[0], "%s", h);
  }
  ok(x, nhosts == 3 && !loop, "the nodes live on three hosts, off loopback (%d hosts)", nhosts);
  struct l6 r;
  l6_replay(x, &r);
  ok(x, r.cut, "AZ B was cut off: its coordinator saw B1 and B2 down");
  ok(x, r.during > 0, "the writer committed while B was down (%.0f commits)", r.during);
  ok(x, r.back, "B came back: B1 and B2 up again");
  int up;
  int same = all_caught_up(x, &up);
  ok(x, up == 6, "all six nodes are up (%d)", up);
  ok(x, same, "every segment of pg 0 is at the same SCL (B caught up)");
  long long rows = sql_num(x, "select count(*) from lab06 where step = 'cut';");
  ok(x, rows >= 1, "rows written while B was cut off are there%s", counted(rows));
  want_word(x, "writes_during_cut", r.during > 0 ? "yes" : "no", "yes|no",
            "did writes go on while B was cut off?");
  want_word(x, "b_state_during_cut", "down", "up|down", "B1's state in status during the cut");
}
