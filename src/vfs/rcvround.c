/*
 * rcvround.c: a recovery's rounds on the wire (paper §4.3; the rounds
 * themselves are open.c), and who a round waits for.
 *
 * Every round goes to every segment at once, pipelined per node: recovery
 * takes a few round trips and group commits per node, whatever the number
 * of PGs or the length of the log. A node that does not connect within
 * RCV_CONNECT_MS, or goes down, is given up for the rest of the recovery:
 * its segments count as not answering (the quorums decide whether that
 * matters). One not heard from for twice as long as the round's quorum
 * took to gather (RCV_QUORUM_WAIT_MS at least) is given up once every PG
 * has a write quorum of answers without it (quorum_in_hand).
 *
 * Rule W (a slow machine makes recovery slower, never fails it): a node
 * that is connected is never given up for silence alone while the round
 * lacks that quorum. Silence is no proof it is gone: a node working
 * through a thousand PGs' fences in one durable commit under load is
 * silent for seconds, and giving it up failed recoveries with all six
 * nodes up (each attempt fell short of round 3's write quorum the same
 * way, until RECOVERY_RETRY_MS ran out). Its requests may also be lost (a
 * partitioned node drops them), so after RCV_ANSWER_MS of silence the
 * ones unanswered go again, on the same connection, then after twice the
 * wait, up to RCV_ANSWER_MAX_MS (rcv_tick ask_again). A request sent
 * twice is harmless: the answers name it and a second is dropped
 * (rcv_on_msg), and a node holds a fence, a truncation or an adopted
 * record once, as it must for the network's own duplicates. The engine's
 * log says what it waits for, and its reports to the coordinator show it
 * in `auralog status` (rcv_progress). One event ends an attempt early: a
 * node given up (it went down) that comes back while a round has waited
 * RCV_ANSWER_MS without a quorum (rcv_on_up). The next attempt asks it
 * too; waiting on would need the silent ones.
 *
 * Interface: rcv_round_add, rcv_ask, rcv_round_free (rcv_int.h) for
 * open.c's rounds; rcv_on_msg, rcv_on_up, rcv_on_down, rcv_tick for the
 * writer's core (vcore.c), and rcv_progress, rcv_counts for its reports
 * and the simulator (volume_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "vfs/rcv_int.h"

/* ---- a round's requests ---------------------------------------------------- */

Env *rcv_round_add(struct round *r, int node, size_t seg)
{
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->req = realloc(r->req, r->cap * sizeof *r->req);
    r->node = realloc(r->node, r->cap * sizeof *r->node);
    r->seg = realloc(r->seg, r->cap * sizeof *r->seg);
  }
  Env *e = calloc(1, sizeof *e);
  auralog__envelope__init(e);
  r->req[r->n] = e;
  r->node[r->n] = node;
  r->seg[r->n] = seg;
  r->n++;
  return e;
}

void rcv_round_free(struct round *r, void (*free_body)(Env *))
{
  for (size_t k = 0; k < r->n; k++) {
    if (free_body)
      free_body(r->req[k]);
    free(r->req[k]);
    if (r->rep)
      wire_free(r->rep[k]);
  }
  free(r->req);
  free(r->node);
  free(r->seg);
  free(r->rep);
  free(r->sent);
  memset(r, 0, sizeof *r);
}

/* Send node i's requests of the round in flight, if it is up. */
static void send_node(struct rcv *c, size_t i)
{
  struct volume *v = c->v;
  struct round *r = &c->cur;
  if (c->gone[i] || !v->nodes[i].up || v->nodes[i].c == NULL)
    return;
  io_cork(v->io, v->nodes[i].c, 1);
  for (size_t k = 0; k < r->n; k++) {
    if (r->node[k] != (int)i || r->sent[k])
      continue;
    r->sent[k] = 1;
    r->req[k]->req = r->base + k;
    io_send(v->io, v->nodes[i].c, r->req[k]);
    c->left[i]++;
  }
  io_cork(v->io, v->nodes[i].c, 0);
  c->last[i] = c->asked[i] = io_now(v->io);
}

/* Give node i up: its requests count as unanswered, now and later. */
static void give_up(struct rcv *c, size_t i)
{
  if (c->gone[i])
    return;
  c->gone[i] = 1;
  struct round *r = &c->cur;
  for (size_t k = 0; k < r->n; k++)
    if (r->node[k] == (int)i && r->rep[k] == NULL)
      r->left--;
  c->left[i] = 0;
}

/* Start round r (filled by the caller) on every node. */
void rcv_ask(struct rcv *c, void (*free_body)(Env *))
{
  struct round *r = &c->cur;
  r->rep = calloc(r->n + 1, sizeof *r->rep);
  r->sent = calloc(r->n + 1, 1);
  r->base = c->v->next_req + 1;
  c->v->next_req += r->n;
  r->left = 0;
  c->free_body = free_body;
  unsigned long long now = io_now(c->v->io);
  r->t0 = r->heard_at = now;
  r->quorum_at = 0;
  for (size_t i = 0; i < c->nn; i++) {
    c->left[i] = 0;
    c->last[i] = c->asked[i] = now;
    c->patience[i] = RCV_ANSWER_MS;
  }
  c->progress[0] = 0;
  for (size_t k = 0; k < r->n; k++)
    if (!c->gone[r->node[k]])
      r->left++;
  for (size_t i = 0; i < c->nn; i++)
    send_node(c, i);
}

/* The answer to one of this recovery's requests? (0: not ours.) */
int rcv_on_msg(struct rcv *c, const Env *env)
{
  struct round *r = &c->cur;
  if (c->phase >= R_DONE || r->n == 0 || env->req < r->base || env->req >= r->base + r->n)
    return 0;
  size_t k = (size_t)(env->req - r->base);
  int i = r->node[k];
  if (r->rep[k] || c->gone[i] || !r->sent[k])
    return 1;                   /* a duplicate, or from a node given up */
  r->rep[k] = wire_copy(env);
  r->heard_at = io_now(c->v->io);
  r->left--;
  if (c->left[i])
    c->left[i]--;
  c->last[i] = io_now(c->v->io);
  rcv_step(c);
  return 1;
}

static int has_quorum(struct rcv *c);

static const char *round_name(int phase)
{
  return phase == R_STATE ? "1 of 3 (fencing, state)" : phase == R_SCAN
                                                         ? "2 of 3 (scan)"
                                                         : "3 of 3 (truncation, adopt)";
}

/* A node connected (again). One given up comes back: if the round has
 * waited RCV_ANSWER_MS without a write quorum of answers, the attempt ends
 * (rule W) and the next asks this node too; otherwise it stays given up
 * (the quorums may well do without it). */
void rcv_on_up(struct rcv *c, int node)
{
  if (c->phase >= R_DONE || c->cur.n == 0 || (size_t)node >= c->nn)
    return;
  unsigned long long now = io_now(c->v->io);
  if (c->gone[node] && c->cur.left > 0 && now - c->cur.t0 >= RCV_ANSWER_MS && !has_quorum(c)) {
    snprintf(c->why, sizeof c->why, "round %s waited %llu ms without a write quorum of "
             "answers, and node %s, given up, is back: starting again with it",
             round_name(c->phase), now - c->cur.t0, c->v->nodes[node].id);
    c->err = ERR_UNAVAILABLE;
    c->restarted = 1;
    rcv_fail(c);
    return;
  }
  send_node(c, (size_t)node);
  rcv_step(c);
}

void rcv_on_down(struct rcv *c, int node)
{
  if (c->phase < R_DONE && (size_t)node < c->nn) {
    give_up(c, (size_t)node);
    rcv_step(c);
  }
}

/* Has every PG a write quorum of segments that answered all of the
 * round's requests without an error? (Cached: quorum_at, once so.) A
 * position counts when its segment answered well and, in transition
 * (member.h M1), its next segment too, as round 3 counts. */
static int has_quorum(struct rcv *c)
{
  struct round *r = &c->cur;
  if (r->quorum_at)
    return 1;
  /* Per request slot (p * NCOPIES + pos; a next segment's: nk + the same,
   * round 3 only): asked, and a request of it unanswered or an error. */
  uint8_t *bad = calloc(2 * c->nk + 1, 1), *seen = calloc(2 * c->nk + 1, 1);
  for (size_t k = 0; k < r->n; k++) {
    size_t seg = r->seg[k];
    if (seg >= 2 * c->nk)
      continue;
    seen[seg] = 1;
    if (r->rep[k] == NULL || r->rep[k]->body_case == AURALOG__ENVELOPE__BODY_ERROR)
      bad[seg] = 1;
  }
  int ok = 1;
  for (size_t p = 0; p < c->npgs && ok; p++) {
    int good = 0, asked = 0;
    for (size_t s = 0; s < NCOPIES; s++) {
      size_t k = p * NCOPIES + s, nx = c->nk + k;
      asked += seen[k];
      good += seen[k] && !bad[k] && !(seen[nx] && bad[nx]);
    }
    ok = asked == 0 || good >= VW;   /* a PG this round asks nothing of: fine */
  }
  free(bad);
  free(seen);
  if (ok)
    r->quorum_at = r->heard_at;  /* at the latest: the answer that completed it */
  return ok;
}

/* May the nodes still owing this round answers be given up now? Only once
 * the round has what a recovery needs (has_quorum: a read quorum would do
 * for rounds 1 and 2, a write quorum for round 3; a write quorum serves
 * both), and only for a node not heard from (nor sent to) for twice as
 * long as that quorum took to gather, RCV_QUORUM_WAIT_MS at least: a host
 * that is gone or cut off (an AZ down, a partition) then costs a fraction
 * of a second, and a node merely slower than the others keeps its place.
 * What it decides is what waiting would have decided: the quorums, not
 * the wait, make a recovery right (the outlier of paper §2.1). A node
 * given up is sent nothing more in this recovery; gossip and the writer's
 * Appends bring it the truncation. */
static int quorum_in_hand(struct rcv *c, unsigned long long now)
{
  struct round *r = &c->cur;
  int owing = 0;
  for (size_t k = 0; k < r->n && !owing; k++)
    owing = r->rep[k] == NULL && !c->gone[r->node[k]];
  if (!owing || !has_quorum(c))
    return 0;
  unsigned long long wait = 2 * (r->quorum_at - r->t0);
  if (wait < RCV_QUORUM_WAIT_MS)
    wait = RCV_QUORUM_WAIT_MS;
  for (size_t k = 0; k < r->n; k++)
    if (r->rep[k] == NULL && !c->gone[r->node[k]] && now - c->last[r->node[k]] < wait)
      return 0;              /* heard lately: its answers may be on the way */
  return 1;
}

/* Rule W: node i, connected, has been silent for its patience with
 * requests of the round unanswered. They go again (a partition may have
 * dropped them), and its patience doubles up to RCV_ANSWER_MAX_MS: a node
 * that is only slow gets each request a few times at most. Returns how
 * many went. */
static size_t ask_again(struct rcv *c, size_t i, unsigned long long now)
{
  struct volume *v = c->v;
  struct round *r = &c->cur;
  size_t n = 0;
  io_cork(v->io, v->nodes[i].c, 1);
  for (size_t k = 0; k < r->n; k++)
    if (r->node[k] == (int)i && r->sent[k] && r->rep[k] == NULL) {
      io_send(v->io, v->nodes[i].c, r->req[k]);
      n++;
    }
  io_cork(v->io, v->nodes[i].c, 0);
  c->asked_again += n;
  c->asked[i] = now;
  c->patience[i] = 2 * c->patience[i] < RCV_ANSWER_MAX_MS ? 2 * c->patience[i]
                                                          : RCV_ANSWER_MAX_MS;
  return n;
}

/* What the round waits for, in a line (rcv_progress; the log). */
static void say_progress(struct rcv *c, unsigned long long now)
{
  struct round *r = &c->cur;
  char who[96] = "";
  size_t len = 0, waiting = 0, answered = 0;
  for (size_t i = 0; i < c->nn; i++) {
    if (c->gone[i])
      continue;
    if (c->left[i] == 0) {
      answered++;
      continue;
    }
    waiting++;
    if (len + 8 < sizeof who)
      len += (size_t)snprintf(who + len, sizeof who - len, "%s%s", len ? " " : "",
                              c->v->nodes[i].id);
  }
  snprintf(c->progress, sizeof c->progress, "round %s for %.1f s: waiting for %s (%zu "
           "request%s); %zu node%s answered", round_name(c->phase), (now - r->t0) / 1000.0,
           waiting ? who : "none", r->left, r->left == 1 ? "" : "s", answered,
           answered == 1 ? "" : "s");
}

/* Nodes that never connected are given up; silent ones are asked again
 * (rule W); once the round has its quorum, the stragglers are given up. */
void rcv_tick(struct rcv *c)
{
  if (c->phase >= R_DONE || c->cur.n == 0)
    return;
  unsigned long long now = io_now(c->v->io);
  if (quorum_in_hand(c, now)) {
    for (size_t k = 0; k < c->cur.n; k++)
      if (c->cur.rep[k] == NULL && !c->gone[c->cur.node[k]]) {
        loginfo("recovery: node %s has %s in %llu ms; every PG has a write quorum of "
                "answers without it: going on", c->v->nodes[c->cur.node[k]].id,
                c->cur.sent[k] ? "not answered" : "not connected",
                now - c->last[c->cur.node[k]]);
        give_up(c, (size_t)c->cur.node[k]);
      }
    rcv_step(c);
    return;
  }
  for (size_t i = 0; i < c->nn; i++) {
    int unsent = 0;
    for (size_t k = 0; k < c->cur.n && !unsent; k++)
      unsent = c->cur.node[k] == (int)i && !c->cur.sent[k];
    if (c->gone[i])
      continue;
    if (unsent && now - c->last[i] > RCV_CONNECT_MS) {
      give_up(c, i);          /* never connected (or not again): down */
      continue;
    }
    unsigned long long quiet = c->last[i] > c->asked[i] ? c->last[i] : c->asked[i];
    if (c->left[i] > 0 && c->v->nodes[i].up && c->v->nodes[i].c &&
        now - quiet > c->patience[i]) {
      size_t n = ask_again(c, i, now);
      loginfo("recovery: round %s: node %s has not answered %zu request%s in %.1f s, and "
              "some PG has no write quorum without it yet: asked again, waiting for it "
              "(a slow node makes recovery slower, it does not fail it)", round_name(c->phase),
              c->v->nodes[i].id, n, n == 1 ? "" : "s", (now - quiet) / 1000.0);
    }
  }
  say_progress(c, now);
  rcv_step(c);
}

void rcv_counts(const struct rcv *c, uint64_t *asked_again, uint64_t *restarted)
{
  *asked_again += c->asked_again;
  *restarted += c->restarted;
}

/* What the recovery waits for, as of its last tick, for the engine's
 * reports ("" once over). */
const char *rcv_progress(const struct rcv *c)
{
  if (c == NULL || c->phase >= R_DONE || c->cur.n == 0 ||
      c->progress[0] == 0)
    return "";
  return c->progress;
}
