/*
 * lab/check_repair.c: lab 11's check: a storage node lost for good and
 * repaired onto spares, another drained for patching, and the arithmetic
 * of §2.2 (paper §2.2-2.3; member.h M4, M7; coord/member.c).
 *
 * The concepts: a PG keeps six segments, two per AZ. When a node stays
 * silent for REPAIR_AFTER_MS, the coordinator moves each segment it
 * hosted to a spare of the same AZ (M7): a membership change per position,
 * begin (the spare's segment comes in as `next`, hydrating from its peers
 * while it takes new writes) then finish (it becomes current, M4). The old
 * segment counts until the finish, so writes never wait on a change. A
 * drain (the operator's `auralog node drain`, §2.3: heat management,
 * patching) moves a node's segments the same way while it still serves,
 * then retires it. §2.2's argument: a segment small enough to repair in
 * seconds makes a second failure in the same PG during a repair unlikely.
 *
 * What the check reads: the lab's history (the coordinator's journal:
 * "node" up/down, "member" begin/finish steps, "repaired" with the time
 * to repair the coordinator measured, "nodestate" draining/retired, the
 * writer's "engine" samples and "stall"s), the cluster now (status: the
 * drained node retired, neither node hosting a segment), and the rows the
 * student's write loop committed (SQL: numbered, none missing). The
 * answers are compared with the MTTR the journal recorded, not with one a
 * student types, and the student's assignment (lab/assign.c: the position
 * of pg 0 whose node to lose, the one whose node to drain, a node's MTTF).
 * Positions, not node ids: a position outlives its nodes, so a retry on
 * the same cluster (the first attempt's nodes now host nothing) loses and
 * drains the nodes there now; the journal's begin steps name both the
 * position and the node leaving it.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define LAB11_MTTF_H  10000    /* a demo's MTTF (run.sh's default; a student's: assign.c) */
#define PAPER_MTTR_S  10       /* §2.2: a 10 GB segment repaired in 10 s on a 10 Gbps link */
#define ONE_IN_TOL    0.02     /* "one in N" answers: within 2% (rounding, 1 - e^-x ~ x) */
#define LATE_MS       1500     /* a commit made just before a span's end shows in a sample
                                * this much later (the journal samples the writer each second) */
#define MOVES_MAX     1024     /* segments one node hosts that the check follows (PGs) */
#define NODES_MAX     64

/* One position moving off a node: where, and whether it finished. */
struct l11move {
  char vol[64];
  double pg, pos;
  char to[16];
  int done;
};

/* The moves of one node's segments: the repair's or the drain's. */
struct l11moves {
  struct l11move m[MOVES_MAX];
  int n, done;
};

struct l11 {
  char lost[16], drained[16];  /* the nodes the check follows */
  char other_lost[16], other_drained[16];   /* a node lost or drained instead */
  double t_down, t_repaired, t_drain, t_retired;
  const cJSON *repaired;
  struct l11moves rep, dr;
  int stall_rep, stall_dr, dataloss;
};

static void moves_begin(struct l11moves *ms, const cJSON *e)
{
  if (ms->n == MOVES_MAX)
    return;
  struct l11move *m = &ms->m[ms->n++];
  snprintf(m->vol, sizeof m->vol, "%s", fstr(e, "volume"));
  snprintf(m->to, sizeof m->to, "%s", fstr(e, "to"));
  m->pg = fnum(e, "pg");
  m->pos = fnum(e, "pos");
  m->done = 0;
}

/* A finish or abort of a position: the move it ends (the finish's "from"
 * is the incoming segment's node, so the position names it). */
static void moves_end(struct l11moves *ms, const cJSON *e, int finished)
{
  for (int i = 0; i < ms->n; i++) {
    struct l11move *m = &ms->m[i];
    if (!m->done && !strcmp(m->vol, fstr(e, "volume")) && m->pg == fnum(e, "pg") &&
        m->pos == fnum(e, "pos")) {
      m->done = finished ? 1 : -1;
      ms->done += finished;
    }
  }
}

/* The nodes' state as the journal goes: down since, draining since. */
struct l11node {
  char id[16];
  double down, draining;       /* since when (-1: not) */
};

static struct l11node *node_of(struct l11node *ns, int *n, const char *id)
{
  for (int i = 0; i < *n; i++)
    if (!strcmp(ns[i].id, id))
      return &ns[i];
  /* Past NODES_MAX, the spare slot, fresh each time: a cluster of more
   * nodes is no lab's, and its nodes' states are not followed. */
  struct l11node *d = *n == NODES_MAX ? &ns[NODES_MAX] : &ns[(*n)++];
  snprintf(d->id, sizeof d->id, "%s", id);
  d->down = d->draining = -1;
  return d;
}

/* Does a begin move the assigned position (any, with none assigned)? */
static int at_pos(const cJSON *e, int pos)
{
  return pos < 0 || (fnum(e, "pg") == 0 && fnum(e, "pos") == pos);
}

/* Which nodes the lab lost and drained: the repair that began on the
 * assigned position of pg 0 (its node down then), the drain whose move
 * began there (its node draining then). A repair or drain of another
 * node is noted (other_*), to say so if the assigned one has none. */
static void l11_who(struct labctx *x, struct l11 *r)
{
  struct l11node ns[NODES_MAX + 1];
  int n = 0, pos = x->has_assign ? x->as.pos : -1, dpos = x->has_assign ? x->as.drain_pos : -1;
  const char *vol = fstr(x->status, "volume");
  for (long i = 0; i < hist_len(x); i++) {
    const cJSON *e = hist_at(x, i);
    double t = fnum(e, "t");
    if (is(e, "start"))
      n = 0;                   /* a coordinator restart: the nodes register again */
    if (is(e, "node")) {
      struct l11node *d = node_of(ns, &n, fstr(e, "node"));
      int up = cJSON_IsTrue(cJSON_GetObjectItem(e, "up"));
      d->down = up ? -1 : d->down >= 0 ? d->down : t;
    } else if (is(e, "nodestate")) {
      struct l11node *d = node_of(ns, &n, fstr(e, "node"));
      d->draining = !strcmp(fstr(e, "state"), "draining") ? t : -1;
    }
    if (i <= x->start || !x->win[i] || !is(e, "member") || strcmp(fstr(e, "step"), "begin") ||
        strcmp(fstr(e, "volume"), vol))
      continue;
    const struct l11node *d = node_of(ns, &n, fstr(e, "from"));
    if (d->down >= 0 && !r->lost[0] && at_pos(e, pos)) {
      snprintf(r->lost, sizeof r->lost, "%s", d->id);
      r->t_down = d->down;
    } else if (d->down >= 0 && strcmp(d->id, r->lost) && !r->other_lost[0]) {
      snprintf(r->other_lost, sizeof r->other_lost, "%s", d->id);
    } else if (d->down < 0 && d->draining >= 0 && !r->drained[0] && at_pos(e, dpos)) {
      snprintf(r->drained, sizeof r->drained, "%s", d->id);
      r->t_drain = d->draining;
    } else if (d->down < 0 && d->draining >= 0 && strcmp(d->id, r->drained) &&
               !r->other_drained[0]) {
      snprintf(r->other_drained, sizeof r->other_drained, "%s", d->id);
    }
  }
}

static void l11_replay(struct labctx *x, struct l11 *r)
{
  memset(r, 0, sizeof *r);
  r->t_down = r->t_repaired = r->t_drain = r->t_retired = -1;
  l11_who(x, r);
  const char *vol = fstr(x->status, "volume");
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    double t = fnum(e, "t");
    if (t < 0)
      continue;
    if (is(e, "member") && !strcmp(fstr(e, "step"), "begin")) {
      if (r->lost[0] && t >= r->t_down && !r->repaired && !strcmp(fstr(e, "from"), r->lost))
        moves_begin(&r->rep, e);
      else if (r->drained[0] && t >= r->t_drain && r->t_retired < 0 &&
               !strcmp(fstr(e, "from"), r->drained))
        moves_begin(&r->dr, e);
    } else if (is(e, "member") && (!strcmp(fstr(e, "step"), "finish") ||
                                   !strcmp(fstr(e, "step"), "abort"))) {
      moves_end(&r->rep, e, !strcmp(fstr(e, "step"), "finish"));
      moves_end(&r->dr, e, !strcmp(fstr(e, "step"), "finish"));
    } else if (is(e, "repaired") && r->lost[0] && t >= r->t_down && !r->repaired &&
               !strcmp(fstr(e, "node"), r->lost)) {
      r->repaired = e;
      r->t_repaired = t;
    } else if (is(e, "nodestate") && !strcmp(fstr(e, "state"), "retired") && r->drained[0] &&
               t >= r->t_drain && r->t_retired < 0 && !strcmp(fstr(e, "node"), r->drained)) {
      r->t_retired = t;
    } else if (is(e, "stall") && !strcmp(fstr(e, "volume"), vol)) {
      r->stall_rep += r->t_down >= 0 && t >= r->t_down && !r->repaired;
      r->stall_dr += r->t_drain >= 0 && t >= r->t_drain && r->t_retired < 0;
    } else if (is(e, "dataloss")) {
      r->dataloss++;
    }
  }
}

/* The writer's commits from t0 to t1 (the journal's engine samples of the
 * volume: the last at or before t0 is the base, one up to LATE_MS after
 * t1 still counts; a new writer counts from its own zero). -1: none seen. */
static double commits_in(struct labctx *x, double t0, double t1)
{
  const char *vol = fstr(x->status, "volume");
  double base = -1, epoch = -1, most = -1;
  for (long i = 0; t0 >= 0 && t1 >= 0 && i < hist_len(x); i++) {
    const cJSON *e = hist_at(x, i);
    if (!is(e, "engine") || strcmp(fstr(e, "volume"), vol))
      continue;
    double t = fnum(e, "t"), c = fnum(e, "commits");
    if (t > t1 + LATE_MS)
      break;
    if (t <= t0 || base < 0) {
      base = c, epoch = fnum(e, "epoch");
      continue;
    }
    if (fnum(e, "epoch") != epoch)
      base = 0, epoch = fnum(e, "epoch");
    most = fmax(most, c - base);
  }
  return most;
}

/* Segments (current or next) a node hosts now, by status. */
static int hosted(struct labctx *x, const char *id)
{
  const cJSON *pg, *s;
  int n = 0;
  cJSON_ArrayForEach(pg, cJSON_GetObjectItem(x->status, "pgs"))
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments"))
      n += !strcmp(fstr(s, "node"), id);
  return n;
}

/* "one in N" for a window of t seconds: one of the PG's other NCOPIES - 1
 * nodes, each failing at 1/MTTF (independent, exponential), fails in it. */
static double one_in(double t_s, double mttf_h)
{
  double p = -expm1(-(NCOPIES - 1) * t_s / (mttf_h * 3600));
  return p > 0 ? 1 / p : NAN;
}

static void want_one_in(struct labctx *x, const char *key, double ref, const char *what)
{
  want_num(x, key, floor(ref * (1 - ONE_IN_TOL)), ceil(ref * (1 + ONE_IN_TOL)), round(ref),
           what);
}

/* A node id, as a one-word answer; nothing to compare with: missing. */
static void want_node(struct labctx *x, const char *key, const char *id, const char *what)
{
  char low[16];
  size_t i = 0;
  for (; id[i] && i + 1 < sizeof low; i++)
    low[i] = (char)tolower((unsigned char)id[i]);
  low[i] = 0;
  if (low[0])
    want_word(x, key, low, "the nodes' ids", what);
  else if (x->ref)
    fprintf(x->ref, "# %s: not measured (a step above is missing)\n", key);
  else
    ok(x, 0, "%s: %s (nothing measured to compare it with: a step above is missing)", key,
       what);
}

void check11(struct labctx *x)
{
  if (!started(x, 11))
    return;
  static struct l11 r;         /* large (MOVES_MAX); one check a process */
  l11_replay(x, &r);
  char pos[64] = "your node", dpos[64] = "the node to drain";
  if (x->has_assign) {
    snprintf(pos, sizeof pos, "the node at position %d of pg 0", x->as.pos);
    snprintf(dpos, sizeof dpos, "the node at position %d of pg 0", x->as.drain_pos);
  }
  const char *lost = r.lost[0] ? r.lost : "your node";
  /* Step 1: the node lost, its segments moved, the repair timed. */
  ok(x, r.t_down >= 0, "%s%s went down and stayed down (`auralog fault node-stop NODE`, "
     "or kill -9)", pos, shown(r.lost[0] != 0, ", %s,", r.lost));
  if (!r.lost[0] && r.other_lost[0] && x->has_assign)
    bad(x, "the node taken out is %s, as your `lab start` said (the history shows %s lost "
        "and repaired instead)", pos, r.other_lost);
  ok(x, r.rep.n > 0, "after %d ms without a heartbeat the coordinator began moving its "
     "segments to spares of its AZ%s", REPAIR_AFTER_MS,
     shown(r.rep.n > 0, " (%d: pg %.0f position %.0f -> %s%s)", r.rep.n, r.rep.m[0].pg,
           r.rep.m[0].pos, r.rep.m[0].to, r.rep.n > 1 ? ", ..." : ""));
  ok(x, r.rep.n > 0 && r.rep.done == r.rep.n, "each move finished: the spare's segment caught "
     "up and became current%s", shown(r.rep.n > 0, " (%d of %d)", r.rep.done, r.rep.n));
  double mttr = r.repaired ? fnum(r.repaired, "mttr_ms") : NAN;
  ok(x, r.repaired != NULL, "the coordinator recorded %s repaired%s", lost,
     shown(r.repaired != NULL, ", %.0f ms after its last sign of life", mttr));
  double c_rep = commits_in(x, r.t_down, r.t_repaired);
  ok(x, c_rep > 0, "writes went on while %s was down and repaired%s", lost,
     shown(c_rep >= 0, " (%.0f commits)", c_rep));
  if (r.stall_rep)
    bad(x, "a commit stalled while %s was repaired (%d stalls in the journal): a repair "
        "never waits for a write quorum it lacks", lost, r.stall_rep);
  /* Step 2: the drain. */
  const char *drained = r.drained[0] ? r.drained : "it";
  ok(x, r.t_drain >= 0, "%s%s was drained (`auralog node drain DRAIN`)", dpos,
     shown(r.drained[0] != 0, ", %s,", r.drained));
  if (!r.drained[0] && r.other_drained[0] && x->has_assign)
    bad(x, "the node drained is %s, as your `lab start` said (the history shows %s drained "
        "instead)", dpos, r.other_drained);
  ok(x, r.dr.n > 0 && r.dr.done == r.dr.n, "its segments moved to spares while it served%s",
     shown(r.dr.n > 0, " (%d of %d finished)", r.dr.done, r.dr.n));
  const cJSON *dn = r.drained[0] ? status_node(x, r.drained) : NULL;
  ok(x, r.t_retired >= 0 && dn && !strcmp(fstr(dn, "state"), "retired") &&
     hosted(x, r.drained) == 0, "the drain finished: %s is retired and hosts no segment%s",
     drained, shown(dn != NULL, " (status: %s, %d segments)", fstr(dn, "state"),
                    hosted(x, r.drained)));
  double c_dr = commits_in(x, r.t_drain, r.t_retired);
  ok(x, c_dr > 0, "writes went on during the drain%s", shown(c_dr >= 0, " (%.0f commits)", c_dr));
  if (r.stall_dr)
    bad(x, "a commit stalled during the drain (%d stalls in the journal)", r.stall_dr);
  if (r.lost[0])
    ok(x, hosted(x, r.lost) == 0, "%s hosts no segment now (a node back after its repair "
       "holds only stale copies, and drops them: member.h M6)", r.lost);
  /* The write loop's rows: numbered one by one, so a failed insert (or an
   * acknowledged one lost) is a number missing. */
  char rows[256];
  long long n = -1, lo = 0, hi = 0;
  if (query(x, "select count(*), coalesce(min(i), 0), coalesce(max(i), 0) from lab11;", rows,
            sizeof rows) == 0 && sscanf(rows, "%lld|%lld|%lld", &n, &lo, &hi) != 3)
    n = -1;
  ok(x, n > 0, "the write loop's rows are in lab11%s", n >= 0 ? shown(1, " (%lld)", n) :
     counted(-1));
  if (n > 0 && n != hi - lo + 1)
    bad(x, "no insert failed and no acknowledged row is gone: lab11 holds %lld rows numbered "
        "%lld..%lld (%lld missing)", n, lo, hi, hi - lo + 1 - n);
  else if (n > 0)
    ok(x, 1, "no insert failed and no acknowledged row is gone (rows %lld..%lld, none missing)",
       lo, hi);
  if (r.dataloss)
    bad(x, "a recovery found acknowledged commits missing (%d dataloss alarms)", r.dataloss);
  /* The answers: what the history measured, and §2.2's arithmetic with it. */
  double mttf = x->has_assign ? x->as.mttf_h : LAB11_MTTF_H;
  want_num(x, "mttr_ms", mttr, mttr, mttr, "the time to repair your node that status showed");
  int at = 0;                  /* pg 0's move if it had one, else the first */
  for (int i = 0; i < r.rep.n; i++)
    if (r.rep.m[i].pg == 0 && r.rep.m[at].pg != 0)
      at = i;
  want_node(x, "spare", r.rep.n ? r.rep.m[at].to : "", "the spare that took your node's place "
            "at its position of pg 0");
  double moved = r.t_retired >= 0 ? r.dr.n : NAN;
  want_num(x, "drain_moved", moved, moved, moved, "the segments the drain moved");
  want_one_in(x, "second_failure_one_in", one_in(mttr / 1000, mttf),
              "the chance that one of the PG's other nodes fails within your MTTR, as one in N");
  want_one_in(x, "paper_one_in", one_in(PAPER_MTTR_S, mttf),
              "the same for the paper's 10 s repair, as one in N");
  want_word(x, "shortens", "mttr", "mttr|mttf|quorum",
            "what small segments shorten to make a double fault unlikely");
}
