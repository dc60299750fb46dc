/*
 * crash_faults.c: what the crash campaign does to the cluster (crash.h):
 * faults through `auralog fault` (a partition waits until the nodes play
 * it), the engine's crash, timed into the writer's transaction, restarts
 * (`cluster up`, or the engine alone so that it recovers without the
 * nodes that are down), waiting for the writer's commits, and recoveries
 * interrupted half-way, played with a hand-made writer (peer.c).
 *
 * Every step goes to the timeline; one that fails keeps the cluster and
 * fails the test, with the latest truncations that cut records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash.h"
#include "harness.h"
#include "lib/log.h"
#include "param.h"
#include "peer.h"

/* ---- faults -------------------------------------------------------------- */

int cache_ok;                   /* the engine has --cache */
int point_cache;                /* cache of the engines this point starts (0: default) */
int n_crashes, n_small_cache_starts, n_by_hand;
static pid_t crashed_engine;    /* the engine the last crash killed (0: it was restarted) */

void keep_evidence(void)
{
  setenv("AURALOG_KEEP", "1", 1);   /* cluster_stop leaves the directory */
  note("FAILED");
}

/* For a failure message: what the nodes' truncations cut lately. */
const char *cut_lines(void)
{
  static char o[2048];
  sh(o, sizeof o, "grep -h 'records\\? cut' %s/log/[ABC][12].log | grep -v ' 0 records cut' | "
     "tail -4", dir);
  return o;
}

static void crash_fault(const char *what)
{
  note("fault %s", what);
  int rc = sh(out, sizeof out, "%s fault --dir %s %s 2>&1", bin, dir, what);
  if (rc != 0) {
    keep_evidence();
    fail_msg("auralog fault %s failed (%d): %s (cluster kept in %s)", what, rc, out, dir);
  }
}

void faultf(const char *fmt, ...)
{
  char what[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  crash_fault(what);
}

/* How many lines of node's log hold text. */
static int log_count(const char *node, const char *text)
{
  char o[64];
  sh(o, sizeof o, "grep -c -F '%s' %s/log/%s.log 2>/dev/null", text, dir, node);
  return atoi(o);
}

/* A partition (or its end) is played by the nodes once the coordinator
 * tells them: wait until both nodes of the AZ say so in their log. */
static void partition_fault(const char *what, char az, const char *logline)
{
  char n1[3] = {az, '1', 0}, n2[3] = {az, '2', 0};
  int b1 = log_count(n1, logline), b2 = log_count(n2, logline);
  crash_fault(what);
  for (int i = 0; i < 500; i++) {
    if (log_count(n1, logline) > b1 && log_count(n2, logline) > b2)
      return;
    usleep(20000);
  }
  keep_evidence();
  fail_msg("`auralog fault %s`: the nodes of AZ %c did not play it within 10 s (cluster "
           "kept in %s)", what, az, dir);
}

void partition(char az)
{
  char what[32];
  snprintf(what, sizeof what, "partition %c", az);
  partition_fault(what, az, "lab fault: partitioned");
}

void heal(char az)
{
  partition_fault("heal", az, "lab fault: not partitioned");
}

/* Take out what a crash point stops besides the engine: kind 1 one node,
 * 2 an AZ, 3 an AZ and one node of another AZ. */
void nodes_down(int kind, const char *az, const char *node)
{
  if (kind >= 2)
    faultf("az-down %s", az);
  if (kind != 2)
    faultf("node-stop %s", node);
}

/* Kill the engine: mostly at a random point of the writer's next
 * transaction (an `auralog sql` takes a few ms), so that the crash lands
 * in every phase of a commit; sometimes anywhere. */
void crash_engine(void)
{
  unsigned anywhere = below(4) == 0, phase = below(1000);
  for (int i = 0; !anywhere && i < 1000 && !__atomic_load_n(&sh_w->inflight, __ATOMIC_SEQ_CST);
       i++)
    usleep(100);
  long took = __atomic_load_n(&sh_w->last_us, __ATOMIC_SEQ_CST);
  unsigned before = anywhere ? phase * 50 : (unsigned)(phase * (took > 100 ? took : 100) / 1000);
  usleep(before);
  note("crash %u us %s (the last commit took %ld us)", before,
       anywhere ? "after a commit" : "into a transaction", took);
  crashed_engine = pid_of("engine");
  crash_fault("engine-crash");
  n_crashes++;
}

static void engine_restarted(int point)
{
  if (crashed_engine && pid_of("engine") == crashed_engine) {
    keep_evidence();
    fail_msg("crash point %d: the engine (pid %d) was not restarted", point,
             (int)crashed_engine);
  }
  crashed_engine = 0;
  n_small_cache_starts += point_cache > 0;
}

/* `cluster up`: starts every node that does not run, then the engine
 * (which recovers) if it does not run, with this point's cache. */
void restart(int point)
{
  char cache[32] = "";
  if (cache_ok)
    snprintf(cache, sizeof cache, " --cache %d", point_cache);
  note("cluster up%s", cache);
  int started = crashed_engine != 0;
  unsigned long long t0 = now_ms();
  /* No statement timeout: the checker's own reads (every row, then
   * integrity_check) of a volume hundreds of crashes old, from a cold
   * cache, may run past the engine's default (it would be a failure of
   * the checker, not of a commit). */
  int rc = sh(out, sizeof out, "%s cluster up --dir %s%s --statement-timeout 0 2>&1", bin, dir,
              cache);
  note("cluster up: exit %d after %llu ms", rc, now_ms() - t0);
  if (rc != 0) {
    keep_evidence();
    fail_msg("crash point %d: cluster up failed (%d): %s\nlatest truncations that cut "
             "records:\n%s(cluster, timeline and logs kept in %s)", point, rc, out, cut_lines(),
             dir);
  }
  if (started)
    engine_restarted(point);
}

/* Start the engine by hand, as `cluster up` does (same arguments, log and
 * pid file), but leave the nodes as they are: its recovery runs without
 * the ones that are down. Waits until it serves (it listens once the
 * volume is recovered). */
void engine_alone(int point, const char *without)
{
  char cache[32] = "";
  if (cache_ok && point_cache > 0)
    snprintf(cache, sizeof cache, " --cache %d", point_cache);
  /* The binlog as `cluster up --binlog` starts it (cluster.json). */
  char blog[700] = "";
  if (crash_binlog() && strcmp(crash_binlog(), "community") == 0)
    snprintf(blog, sizeof blog, " --binlog community --binlog-file %s/binlog/main.binlog", dir);
  else if (crash_binlog())
    snprintf(blog, sizeof blog, " --binlog %s", crash_binlog());
  note("engine started by hand, recovery without %s%s%s", without, cache, blog);
  unsigned long long t0 = now_ms();
  int rc = sh(out, sizeof out, "cd %s && { %s engine --volume main --listen %s --coord %s%s "
              "--statement-timeout 0%s < /dev/null >> log/engine.log 2>&1 & "
              "echo $! > run/engine.pid; } 2>&1", dir, bin, engine, coord, cache, blog);
  pid_t pid = pid_of("engine");
  if (rc != 0 || pid <= 0) {
    keep_evidence();
    fail_msg("crash point %d: cannot start the engine (%d): %s", point, rc, out);
  }
  n_by_hand++;
  char why[256];
  for (;;) {
    struct rpc r;
    if (rpc_open(&r, engine, 500, why, sizeof why) == 0) {
      rpc_close(&r);
      break;
    }
    if (!pid_alive(pid) || now_ms() - t0 > 30000) {
      keep_evidence();
      sh(out, sizeof out, "tail -3 %s/log/engine.log", dir);
      fail_msg("crash point %d: the engine started with %s down %s; its log ends:\n%s"
               "latest truncations that cut records:\n%s(cluster kept in %s)", point, without,
               pid_alive(pid) ? "does not serve after 30 s" : "exited", out, cut_lines(), dir);
    }
    usleep(50000);
  }
  note("engine %d serves after %llu ms", (int)pid, now_ms() - t0);
  engine_restarted(point);
}

/* Wait until the writer has had n more commits acknowledged. */
void wait_acks(long from, long n, int point, const char *when)
{
  unsigned long long deadline = now_ms() + 30000;
  while (__atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST) < from + n) {
    if (now_ms() > deadline) {
      clients_stop();
      keep_evidence();
      sh(out, sizeof out, "tail -5 %s", errors_path);
      fail_msg("crash point %d: no commit acknowledged %s for 30 s; last errors:\n%s"
               "latest truncations that cut records:\n%s(cluster kept in %s)", point, when,
               out, cut_lines(), dir);
    }
    usleep(5000);
  }
}

void more_acks(long n, int point, const char *when)
{
  wait_acks(__atomic_load_n(&sh_w->acked, __ATOMIC_SEQ_CST), n, point, when);
}

/* ---- interrupted recoveries (a hand-made writer, peer.c) ----------------- */

int n_ir, n_ir_queries, n_ir_truncs;

/* One recovery that stops half-way: a new writer epoch, a SegQuery to a
 * random subset of the segments, and, when the queries reached a read
 * quorum of every PG (a recovery computes its VDL only then), sometimes a
 * Truncate of that epoch on one or two segments of a PG. Its range is
 * (from, from + LAL] with from the highest max_lsn of every queried
 * segment of every PG: what the buggy recovery did, taking records one
 * segment held for durable. A truncation's from is a volume-wide VDL,
 * at or above every acknowledged commit of every PG; one below that is not
 * something any recovery writes (only a forged message could). With
 * `must` (a node), the recovery queries that node's segment and a read
 * quorum of every PG, and truncates that node's segments only. The choices
 * come from sub (one draw of the campaign's generator), whatever the
 * number of PGs. */
void interrupted_recovery(int point, uint64_t sub, const char *must)
{
  char why[256];
  Auralog__Volume *v = peer_open_volume(coord, "main", 0, 0, 1);
  n_ir++;
  note("interrupted recovery: epoch %llu, %zu PGs%s%s", (unsigned long long)v->epoch,
       v->n_pgs, must ? ", truncating on " : "", must ? must : "");
  struct pgq {
    int nok, ok_slot[NCOPIES], must_slot, trunc, two;
    unsigned pick1, pick2;
    uint64_t from;
  } *q = calloc(v->n_pgs + 1, sizeof *q);
  uint64_t top = 0;
  for (size_t p = 0; p < v->n_pgs; p++) {
    const Auralog__Pg *g = v->pgs[p];
    struct pgq *x = &q[p];
    uint64_t h = mix(sub + 0x1000 * (uint64_t)(g->pg + 1)), h2 = mix(h);
    unsigned nseg = g->n_segments < NCOPIES ? (unsigned)g->n_segments : NCOPIES;
    x->must_slot = -1;
    if (must == NULL && h % 4 == 0)
      continue;                 /* this PG was not reached */
    unsigned mask = (unsigned)(h >> 8) & 63;
    x->pick1 = (unsigned)(h >> 16) % 6;
    x->pick2 = (unsigned)(h >> 24) % 6;
    x->trunc = must ? 1 : (h >> 32) % 2 == 0;
    x->two = must == NULL && (h >> 36) % 3 == 0;
    for (unsigned s = 0; s < nseg; s++)
      if (must && strcmp(g->segments[s]->node, must) == 0)
        x->must_slot = (int)s;
    if (x->must_slot >= 0) {
      mask |= 1u << x->must_slot;
      for (unsigned k = 0; __builtin_popcount(mask) < VR + 1 && k < nseg; k++)
        mask |= 1u << ((h2 + k) % nseg);
    }
    if (mask == 0)
      mask = 1u << x->pick1;
    char text[1024];
    size_t tl = 0;
    text[0] = 0;
    for (unsigned s = 0; s < nseg; s++) {
      if (!(mask & (1u << s)))
        continue;
      const Auralog__Segment *seg = g->segments[s];
      Env *rep = peer_seg_query(seg->addr, v->id, g->pg, v->epoch, why, sizeof why);
      n_ir_queries++;
      if (rep && rep->body_case == AURALOG__ENVELOPE__BODY_SEG_INFO) {
        x->ok_slot[x->nok++] = (int)s;
        if (rep->seg_info->max_lsn > x->from)
          x->from = rep->seg_info->max_lsn;
        tl += (size_t)snprintf(text + tl, sizeof text - tl, " %s(scl %llu max %llu vdl %llu)",
                               seg->node, (unsigned long long)rep->seg_info->scl,
                               (unsigned long long)rep->seg_info->max_lsn,
                               (unsigned long long)rep->seg_info->vdl);
      } else {
        tl += (size_t)snprintf(text + tl, sizeof text - tl, " %s(%.60s)", seg->node,
                               peer_describe(rep, why));
      }
      if (tl >= sizeof text)
        tl = sizeof text - 1;
      wire_free(rep);
    }
    if (x->from > top)
      top = x->from;
    note("  pg %u queried:%s", g->pg, text);
  }
  int quorums = 1;
  for (size_t p = 0; p < v->n_pgs; p++)
    quorums &= q[p].nok >= VR;
  for (size_t p = 0; p < v->n_pgs && quorums; p++) {
    const Auralog__Pg *g = v->pgs[p];
    struct pgq *x = &q[p];
    if (!x->trunc)
      continue;
    int targets[2] = {x->must_slot, -1}, nt = 1;
    uint64_t from = top;
    if (must) {
      int found = 0;
      for (int i = 0; i < x->nok; i++)
        found |= x->ok_slot[i] == x->must_slot;
      if (!found)
        continue;               /* the node did not answer */
    } else {
      targets[0] = x->ok_slot[x->pick1 % (unsigned)x->nok];
      if (x->two && x->ok_slot[x->pick2 % (unsigned)x->nok] != targets[0])
        targets[nt++] = x->ok_slot[x->pick2 % (unsigned)x->nok];
    }
    for (int i = 0; i < nt; i++) {
      const Auralog__Segment *seg = g->segments[targets[i]];
      Env *rep = peer_truncate(seg->addr, v->id, g->pg, v->epoch, from, from + LAL, why,
                               sizeof why);
      n_ir_truncs++;
      note("  pg %u: truncate (%llu, %llu] of epoch %llu on %s: %s", g->pg,
           (unsigned long long)from, (unsigned long long)(from + LAL),
           (unsigned long long)v->epoch, seg->node, peer_describe(rep, why));
      wire_free(rep);
    }
  }
  free(q);
  note("interrupted recovery of epoch %llu stops here", (unsigned long long)v->epoch);
  auralog__volume__free_unpacked(v, NULL);
  (void)point;
}

