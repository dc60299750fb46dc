/*
 * repairrun.c: `auralog bench repair`'s cluster (see repair.c for what it
 * measures, repair_int.h for the interface).
 *
 * One private cluster per point: the coordinator, RP_NODES storage nodes
 * (three per AZ, so each PG has one spare per AZ to move to, member.h M7)
 * and the engine, volume main made with --pg-pages = MiB x 256. The fill
 * is one table of RP_ROW-byte random blobs, one row a page, so the first
 * PGS protection groups hold pages of incompressible data to the last
 * page (the engine grows the volume ahead, so a few more PGs exist,
 * nearly empty).
 *
 * A repair, as a client sees it (the watch asks the coordinator's status
 * every RP_POLL_MS): SIGKILL of a node that hosts segments; the first
 * `next` segment (the coordinator began moving, after REPAIR_AFTER_MS of
 * silence: the detection); then no next segment anywhere and none on the
 * killed node (every PG back at NCOPIES current segments: the move done).
 * Bytes moved: what the other nodes' segments pulled from their PG peers
 * meanwhile (SegStat.pulled, from heartbeats). Then `cluster up` starts
 * the killed node again; it finds its segments replaced and drops them
 * at its first Assign (M6), and is a spare for the next repeat, which
 * kills a node of the next AZ.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/repair_int.h"
#include "cli/status.h"
#include "lib/log.h"
#include "param.h"

static char coord[64], engine[64], logp[1200];
static struct workload wl;

/* ---- the coordinator's view ------------------------------------------------- */

static Env *status_now(void)
{
  char why[300];
  for (int tries = 0;; tries++) {
    Env *e = status_fetch(coord, "main", why, sizeof why);
    if (e && e->status->exists && e->status->volume)
      return e;
    wire_free(e);
    if (tries == 100)
      die("bench repair: no status of volume main from %s: %s", coord, e ? "no volume" : why);
    rp_check_stop();
    usleep(100000);
  }
}

/* What the watch counts in one status. */
struct snap {
  int next;                  /* next segments in the volume */
  int on_victim;             /* segments (current or next) on the killed node */
  double pulled;             /* bytes pulled by the segments of every other node */
  size_t nmttr;
  uint64_t mttr[MTTR_SHOWN];
};

static void snap_of(const Auralog__Status *st, const char *victim, struct snap *s)
{
  memset(s, 0, sizeof *s);
  const Auralog__Volume *v = st->volume;
  for (size_t p = 0; p < v->n_pgs; p++)
    for (size_t j = 0; j < v->pgs[p]->n_segments; j++) {
      const Auralog__Segment *g = v->pgs[p]->segments[j];
      s->next += g->next;
      s->on_victim += strcmp(g->node, victim) == 0;
    }
  for (size_t i = 0; i < st->n_segs && i < st->n_seg_nodes; i++)
    if (strcmp(st->seg_nodes[i], victim) && st->segs[i]->volume_id == v->id)
      s->pulled += (double)st->segs[i]->pulled;
  s->nmttr = st->n_mttr_ms < MTTR_SHOWN ? st->n_mttr_ms : MTTR_SHOWN;
  if (s->nmttr)                /* none yet: mttr_ms may be NULL (memcpy may not take it) */
    memcpy(s->mttr, st->mttr_ms, s->nmttr * sizeof s->mttr[0]);
}

/* A new time to repair since before: the list grew, or (full) shifted. */
static int mttr_new(const struct snap *before, const struct snap *now)
{
  return now->nmttr > before->nmttr ||
         (now->nmttr && memcmp(now->mttr, before->mttr, now->nmttr * sizeof now->mttr[0]));
}

/* Segments hosted by node id (current or next). */
static int hosted(const Auralog__Status *st, const char *id)
{
  struct snap s;
  snap_of(st, id, &s);
  return s.on_victim;
}

/* ---- the cluster of a point ----------------------------------------------------- */

static Env *sql(struct rpc *r, const char *q, int timeout_ms)
{
  char why[400];
  Env *rep = bench_sql(r, q, timeout_ms, why, sizeof why);
  if (rep == NULL)
    die("bench repair: the engine at %s: %s (logs in %s/log)", engine, why, R.dir);
  return rep;
}

void rp_cluster(struct rpoint *p, int clients, uint64_t seed)
{
  char why[600], port[16], pgp[16], ra[16];
  snprintf(coord, sizeof coord, "127.0.0.1:%d", R.base);
  snprintf(engine, sizeof engine, "127.0.0.1:%d", R.base + ENGINE_PORT_OFFSET);
  snprintf(logp, sizeof logp, "%s/bench-cluster.log", R.dir);
  snprintf(port, sizeof port, "%d", RP_NODES);
  int pg_pages = p->mib * (1 << 20) / PAGE_SIZE_DEFAULT;
  snprintf(pgp, sizeof pgp, "%d", pg_pages);
  snprintf(ra, sizeof ra, "%d", R.repair_after);
  const char *extra[] = {"--nodes", port, "--pg-pages", pgp, "--no-failover",
                         R.repair_after >= 0 ? "--repair-after" : NULL, ra, NULL};
  rp_progress(1, "%d PGs x %d MiB: starting a cluster of %d nodes in %s (ports %d..%d)",
              p->pgs, p->mib, RP_NODES, R.dir, R.base, R.base + ENGINE_PORT_OFFSET);
  R.up = 1;
  if (bench_cluster_up_with(R.dir, R.base, extra, why, sizeof why) != 0)
    die("bench repair: %s", why);

  /* The fill: one row a page, so PGS x pg_pages pages less the table's
   * interior pages (a few hundred keys each) and the schema page. */
  struct rpc r;
  if (bench_connect(&r, engine, 10000, why, sizeof why) != 0)
    die("bench repair: cannot reach the engine at %s: %s", engine, why);
  wire_free(sql(&r, "CREATE TABLE fill (id INTEGER PRIMARY KEY, b BLOB NOT NULL)", RP_TX_MS));
  long pages = (long)p->pgs * pg_pages, rows = (pages - 2) * 300 / 301;
  double t0 = bench_now_us();
  char q[512];
  for (long done = 0; done < rows;) {
    long n = rows - done < RP_BATCH ? rows - done : RP_BATCH;
    rp_check_stop();
    rp_progress(0, "%d PGs x %d MiB: filling, %ld of %ld pages", p->pgs, p->mib, done, rows);
    snprintf(q, sizeof q, "WITH RECURSIVE c(x) AS (SELECT %ld UNION ALL SELECT x + 1 FROM c "
             "WHERE x < %ld) INSERT INTO fill SELECT x, randomblob(%d) FROM c", done + 1,
             done + n, RP_ROW);
    wire_free(sql(&r, q, RP_TX_MS));
    done += n;
  }
  p->fill_s = (bench_now_us() - t0) / 1e6;
  if (clients) {
    rp_progress(1, "%d PGs x %d MiB: loading the foreground's table", p->pgs, p->mib);
    wl = (struct workload){WL_WRITE_ONLY, 1, 10000, seed};
    if (wl_load(&wl, &r, why, sizeof why) != 0)
      die("bench repair: loading the foreground's table: %s", why);
  }
  rpc_close(&r);

  /* Every segment's stats as heartbeats tell them, the fill's included. */
  usleep(2 * HEARTBEAT_MS * 1000);
  Env *e = status_now();
  const Auralog__Status *st = e->status;
  p->vol_pgs = (int)st->volume->n_pgs;
  double *b = calloc(st->n_segs + 1, sizeof *b);
  int nb = 0;
  for (size_t i = 0; i < st->n_segs; i++)
    if (st->segs[i]->volume_id == st->volume->id && st->segs[i]->pg < (uint32_t)p->pgs)
      b[nb++] = (double)st->segs[i]->bytes;
  for (int i = 1; i < nb; i++)          /* median: a few hundred, insertion sort will do */
    for (int j = i; j > 0 && b[j - 1] > b[j]; j--) {
      double t = b[j];
      b[j] = b[j - 1];
      b[j - 1] = t;
    }
  p->seg_bytes = nb ? b[nb / 2] : 0;
  free(b);
  wire_free(e);
}

void rp_cluster_down(void)
{
  if (!R.up)
    return;
  bench_cluster_down(R.dir);
  R.up = 0;
  char p[1200];
  snprintf(p, sizeof p, "%s/data", R.dir);
  bench_rm_tree(p);
}

/* ---- one repair ------------------------------------------------------------------- */

/* Kill the node of AZ k % 3 that hosts most segments, and watch until
 * every PG is stable again without it. Times (bench_now_us) of the kill,
 * the first next segment seen and the end into t[0..2]. 0, or -1 with
 * r->err. */
static int kill_and_watch(int k, struct rrep *r, double t[3])
{
  memset(r, 0, sizeof *r);
  Env *e = status_now();
  const Auralog__Status *st = e->status;
  char az[2] = {(char)('A' + k % 3), 0};
  int most = 0;
  for (size_t i = 0; i < st->n_nodes; i++) {
    int h = hosted(st, st->nodes[i]->id);
    if (!strcmp(st->nodes[i]->az, az) && st->nodes[i]->up && h > most) {
      most = h;
      snprintf(r->node, sizeof r->node, "%s", st->nodes[i]->id);
    }
  }
  if (!most) {
    wire_free(e);
    snprintf(r->err, sizeof r->err, "no node of AZ %s is up and hosts a segment", az);
    return -1;
  }
  struct snap before, now;
  snap_of(st, r->node, &before);
  wire_free(e);
  r->segs = before.on_victim;
  pid_t pid = bench_member_pid(R.dir, r->node);
  if (pid <= 0 || kill(pid, SIGKILL) != 0) {
    snprintf(r->err, sizeof r->err, "cannot kill node %s (pid %d): %s", r->node, (int)pid,
             strerror(errno));
    return -1;
  }
  t[0] = bench_now_us();
  t[1] = 0;
  char to[RP_NODES][8];
  int nto = 0;
  uint64_t *age = NULL;      /* per (pg, pos): the move's age when last seen */
  size_t nage = 0;
  /* Long enough for a slow disk: the detection, then ten times what the
   * node-wide budget would take to pull every segment on one spare. */
  int after = R.repair_after >= 0 ? R.repair_after : REPAIR_AFTER_MS;
  double budget_s = 60 + 10.0 * (double)r->segs * 1048576.0 * 8 / HYDRATE_BYTES_PER_S;
  double deadline = t[0] + (after + budget_s * 1000) * 1000;
  for (;;) {
    rp_check_stop();
    usleep(RP_POLL_MS * 1000);
    double tn = bench_now_us();
    e = status_now();
    st = e->status;
    snap_of(st, r->node, &now);
    for (size_t i = 0; i < st->n_moves; i++) {
      /* A move younger than when we last saw it was aborted and begun
       * again (its spare went silent too long, M7): counted, as that
       * hydration starts over. */
      const Auralog__MoveStat *mv = st->moves[i];
      size_t key = (size_t)mv->pg * NCOPIES + mv->pos;
      if (key >= nage) {
        size_t m = key * 2 + 64;
        age = realloc(age, m * sizeof *age);
        memset(age + nage, 0, (m - nage) * sizeof *age);
        nage = m;
      }
      if (age[key] && mv->age_ms + 500 < age[key])
        r->restarts++;
      age[key] = mv->age_ms ? mv->age_ms : 1;
      int seen = 0;
      for (int j = 0; j < nto; j++)
        seen |= !strcmp(to[j], st->moves[i]->to);
      if (!seen && nto < RP_NODES)
        snprintf(to[nto++], sizeof to[0], "%s", st->moves[i]->to);
    }
    wire_free(e);
    if (now.next && !t[1])
      t[1] = tn;
    rp_progress(0, "node %s killed %.1f s ago: %s, %d of its %d segments still there",
                r->node, (tn - t[0]) / 1e6, t[1] ? "moving" : "not yet repairing",
                now.on_victim, r->segs);
    if (now.next == 0 && now.on_victim == 0) {
      t[2] = tn;
      break;
    }
    if (tn > deadline) {
      snprintf(r->err, sizeof r->err, "node %s killed %.0f s ago and not yet repaired (%d "
               "next segments, %d still on it; %d moves begun again); see %.100s/log/coord.log",
               r->node, (tn - t[0]) / 1e6, now.next, now.on_victim, r->restarts, R.dir);
      free(age);
      return -1;
    }
  }
  free(age);
  if (!t[1])
    t[1] = t[2];                /* moved between two looks */
  r->detect_ms = (t[1] - t[0]) / 1000;
  r->move_ms = (t[2] - t[1]) / 1000;
  r->client_ms = (t[2] - t[0]) / 1000;
  r->to_nodes = nto;
  /* The coordinator's figure comes at its next tick; the last pulls'
   * counters with the nodes' next heartbeats. */
  double until = bench_now_us() + 3e6;
  do {
    usleep(HEARTBEAT_MS * 1000);
    e = status_now();
    snap_of(e->status, r->node, &now);
    wire_free(e);
  } while (!mttr_new(&before, &now) && bench_now_us() < until);
  usleep(2 * HEARTBEAT_MS * 1000);
  e = status_now();
  snap_of(e->status, r->node, &now);
  wire_free(e);
  if (now.nmttr && mttr_new(&before, &now))
    r->coord_ms = (double)now.mttr[now.nmttr - 1];
  r->bytes = now.pulled > before.pulled ? now.pulled - before.pulled : 0;
  r->ok = 1;
  return 0;
}

/* `cluster up` starts the killed node again (and waits for it). */
static void restart(const char *node)
{
  rp_progress(1, "starting node %s again (it drops its replaced segments)", node);
  const char *up[] = {"cluster", "up", "--dir", R.dir, NULL};
  if (bench_run(logp, up) != 0)
    die("bench repair: `auralog cluster up --dir %s` did not start node %s again; see %s",
        R.dir, node, logp);
}

void rp_repair(int k, struct rrep *r)
{
  double t[3];
  kill_and_watch(k, r, t);
  if (r->node[0])
    restart(r->node);
}

/* ---- the foreground load ---------------------------------------------------------- */

struct sample {
  double t, us;              /* when it ended; how long it took */
  int ok;
};

struct client {
  pthread_t th;
  int id;
  uint64_t seed;
  struct sample *s;
  size_t n, cap;
  char err[300];
};

static volatile int fg_stop;

static void *client_main(void *arg)
{
  struct client *c = arg;
  char *q = malloc(WL_SQL_MAX), why[300];
  uint64_t rng = c->seed * 1000003 + (uint64_t)c->id * 7777 + 1;
  struct rpc r;
  if (bench_connect(&r, engine, 5000, why, sizeof why) != 0) {
    snprintf(c->err, sizeof c->err, "%s", why);
    free(q);
    return NULL;
  }
  while (!fg_stop) {
    wl_tx(&wl, &rng, q);
    double t0 = bench_now_us();
    Env *rep = bench_sql(&r, q, RP_TX_MS, why, sizeof why);
    double t1 = bench_now_us();
    if (c->n == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 4096;
      c->s = realloc(c->s, c->cap * sizeof *c->s);
    }
    c->s[c->n++] = (struct sample){t1, t1 - t0, rep != NULL};
    wire_free(rep);
    if (rep == NULL) {
      if (!c->err[0])
        snprintf(c->err, sizeof c->err, "%s", why);
      if (r.fd < 0 || strstr(why, "timed out") || strstr(why, "closed")) {
        rpc_close(&r);
        if (bench_connect(&r, engine, 2000, why, sizeof why) != 0)
          break;
      }
    }
  }
  rpc_close(&r);
  free(q);
  return NULL;
}

/* The samples of every client that ended in [from, to). */
static void window(struct client *cs, int n, double from, double to, struct fgwin *w)
{
  memset(w, 0, sizeof *w);
  w->secs = (to - from) / 1e6;
  for (int i = 0; i < n; i++)
    for (size_t j = 0; j < cs[i].n; j++) {
      const struct sample *s = &cs[i].s[j];
      if (s->t < from || s->t >= to)
        continue;
      if (s->ok) {
        w->n++;
        hist_add(&w->h, s->us);
      } else {
        w->errors++;
      }
    }
}

void rp_repair_loaded(int k, int base_s, uint64_t seed, struct fg *f)
{
  static struct client cs[RP_CLIENTS_MAX];
  int n = f->clients;
  memset(cs, 0, sizeof cs);
  fg_stop = 0;
  for (int i = 0; i < n; i++) {
    cs[i].id = i;
    cs[i].seed = seed;
    pthread_create(&cs[i].th, NULL, client_main, &cs[i]);
  }
  rp_progress(1, "foreground: %d clients writing, %d s with no repair", n, base_s);
  usleep(1000000);              /* connections made, caches warm */
  double b0 = bench_now_us();
  for (int i = 0; i < base_s * 10; i++) {
    rp_check_stop();
    usleep(100000);
  }
  double t[3] = {0, 0, 0};
  rp_progress(1, "foreground: %d clients writing, a node killed", n);
  int rc = kill_and_watch(k, &f->rep, t);
  fg_stop = 1;
  for (int i = 0; i < n; i++)
    pthread_join(cs[i].th, NULL);
  if (f->rep.node[0])
    restart(f->rep.node);
  f->ran = 1;
  for (int i = 0; i < n && !f->err[0]; i++)
    if (cs[i].err[0])
      snprintf(f->err, sizeof f->err, "client %d: %s", i, cs[i].err);
  if (rc != 0) {
    snprintf(f->err, sizeof f->err, "%s", f->rep.err);
    if (t[0] > 0)
      window(cs, n, b0, t[0], &f->base);   /* the load with no repair still counts */
  } else {
    window(cs, n, b0, t[0], &f->base);
    window(cs, n, t[0], t[1], &f->down);
    window(cs, n, t[1], t[2], &f->move);
  }
  for (int i = 0; i < n; i++)
    free(cs[i].s);
}
