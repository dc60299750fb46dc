/*
 * failover.c: the coordinator's side of failover (paper §4.3 for the
 * epochs; seed 002 for Aurora's sub-30-second failover by promoting a
 * read replica; writer fencing by epoch from Verbitski et al. 2018).
 *
 * A writer proves itself alive by its read-lease probes (vfs/probe.c: a
 * Volume request naming its epoch, every ENGINE_STAT_MS); a replica by
 * its ReplicaBeats (vfs/promote.c, every ENGINE_STAT_MS, with its read
 * point). When the volume's writer has not probed for WRITER_LOST_MS (or,
 * just after it took its epoch, WRITER_OPEN_MS: it recovers first), and
 * the coordinator runs with --failover, it chooses one replica heard from
 * lately, the one furthest ahead, and tells it so in the answer to its next
 * beat (Writer.promote). The replica then opens the volume as a writer
 * (the engine's own open: new epoch, recovery, serving) with if_epoch set
 * to the lost writer's epoch. `auralog failover [--to R]` chooses one at
 * once, the writer alive or not.
 *
 * Interface (coord.h): fo_open_check / fo_opened around a writer's
 * OpenVolume, fo_probe on a lease probe, fo_on_msg for ReplicaBeat,
 * WriterReq and Failover (all answered with Writer; a client's WriterReq
 * also learns the replicas serving reads now, Writer.replicas, so that
 * every command finds writer and replicas by role at the moment it acts,
 * src/cli/locate.c), fo_tick every
 * coordinator tick, fo_status for status (the writer's silence, a
 * promotion under way, the last failover and how long it took).
 *
 * Invariants (each is checked by tests/integration/test_failover.c):
 *  F1 One epoch, one writer. An OpenVolume with if_epoch takes the next
 *     epoch only if the volume's epoch is still if_epoch: of two replicas
 *     promoted from the same lost writer (a manual failover racing the
 *     detector, a promotion retried), exactly one gets the new epoch and
 *     the other is refused with nothing changed. The epoch and the
 *     writer's address are stored together, durably, before anyone hears
 *     of them (on_open_volume), so "the writer of epoch N" is one process.
 *  F2 The epoch is the fence. Whatever this file decides, safety rests on
 *     recovery (vfs/open.c): the new writer's first round fences a read
 *     quorum of every PG, its last a write quorum, so an old writer that
 *     comes back (a writer-stop, a partition) has its writes refused by
 *     every segment it reaches, and its probes are answered with the
 *     newer epoch (fenced for good).
 *  F3 No stale read across a failover. Detection waits WRITER_LOST_MS >
 *     READ_LEASE_MS after the writer's last probe reached us; that probe
 *     left before, so its lease has run out before a new epoch exists. A
 *     manual failover does not wait: the new writer is told how much of
 *     the old one's lease may be left (Volume.lease_left_ms) and serves
 *     only after it (vfs/engine.c).
 *  F4 One promotion at a time. While a chosen replica has PROMOTE_MS to
 *     open, no other is chosen; one that fails to (crashed, refused, its
 *     recovery short of a quorum) is passed over, and so is a promoted
 *     writer that dies during its recovery (it never probes): the next
 *     replica is promoted from the epoch it took (a promotion interrupted
 *     halfway is only a lost writer).
 *  F5 A replica that is behind is fine to promote: its recovery works
 *     from storage, never from its cache (the promoted process is a new
 *     engine: vfs/promote.c). Furthest ahead is chosen only because it is
 *     the one most likely alive and connected.
 *
 * No I/O of its own: answers through co->io; the simulator runs it too,
 * with --failover in its runs with a replica (src/sim/failover.c: lease
 * probes, beats, promotions, and the checks of F1-F3 on every seed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "coord/coord.h"
#include "lib/log.h"
#include "param.h"
#include "net/proof.h"

struct fo_rep {
  char addr[ADDR_MAX_LEN + 1];
  uint64_t applied, epoch;
  unsigned long long heard;
  uint8_t pk[AUTH_PK_BYTES];   /* the key it will open with (roles.c R1) */
};

struct fo_vol {
  char name[NAME_MAX_LEN + 1];
  unsigned long long heard;    /* the current epoch's writer: its open, then its last probe */
  int probed;                  /* ... it has probed since it opened */
  int known;                   /* heard is real (0: nothing since the coordinator started) */
  struct fo_rep reps[REPLICAS_MAX];
  size_t nreps;
  char promoting[ADDR_MAX_LEN + 1];   /* F4: the replica chosen ("" none) */
  uint64_t from_epoch;
  unsigned long long chosen_at;
  unsigned long long warned;
  /* The promotion under way: whom it replaces, the replaced writer's last
   * sign of life, and who chose it. Kept as `last` when it takes its
   * epoch, for status (fo_status). */
  char from_writer[ADDR_MAX_LEN + 1];
  unsigned long long lost_heard;
  int asked;
  struct {
    char to[ADDR_MAX_LEN + 1], from[ADDR_MAX_LEN + 1];
    uint64_t from_epoch, epoch;
    unsigned long long at, detect_ms, took_ms;
    int asked;
  } last;
  unsigned failovers;
  uint64_t dataloss_epoch;     /* a data-loss alarm of this epoch's writer: no promotion */
  struct fo_vol *next;
};

struct fo {
  unsigned long long started;
  struct fo_vol *vols;
};

static struct fo *fo_of(struct coord *co)
{
  if (co->fo == NULL) {
    co->fo = calloc(1, sizeof *co->fo);
    co->fo->started = io_now(co->io);
  }
  return co->fo;
}

static struct fo_vol *fvol(struct coord *co, const char *name)
{
  struct fo *fo = fo_of(co);
  for (struct fo_vol *f = fo->vols; f; f = f->next)
    if (strcmp(f->name, name) == 0)
      return f;
  struct fo_vol *f = calloc(1, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->heard = io_now(co->io);   /* a writer gets a full bound from our start */
  f->next = fo->vols;
  fo->vols = f;
  return f;
}

static Auralog__Volume *vol_named(struct coord *co, const char *name)
{
  for (size_t i = 0; i < co->nvols; i++)
    if (strcmp(co->vols[i]->name, name) == 0)
      return co->vols[i];
  return NULL;
}

/* How long the writer may go without a probe before it is lost. */
static unsigned long long bound(const struct fo_vol *f)
{
  return f->probed ? WRITER_LOST_MS : WRITER_OPEN_MS;
}

int fo_open_check(struct coord *co, const Auralog__Volume *v, const Auralog__OpenVolume *ov,
                  int proved, char *why, size_t whylen)
{
  /* F1: a conditional open takes the next epoch only from the one named. */
  if (ov->if_epoch && ov->if_epoch != v->epoch && !PLANTED(BUG_PROMOTE_NO_IF_EPOCH)) {
    snprintf(why, whylen, "promotion from epoch %llu refused: volume %s is at epoch %llu "
             "(writer %s)", (unsigned long long)ov->if_epoch, v->name,
             (unsigned long long)v->epoch, v->writer[0] ? v->writer : "unknown");
    return -1;
  }
  if (ov->if_epoch == 0 || PLANTED(BUG_PROMOTE_NO_IF_EPOCH))
    return 0;                  /* the operator's (roles.c checked it); the planted bug
                                  takes any promotion, as before roles */
  /* roles.c R1: a conditional open carries no operator signature; it is
   * the replica we chose (its address, and the key its beats proved), or
   * the writer of the current epoch opening again (its retry after a
   * recovery short of a quorum: the same key its ticket names). Either
   * key is public (Volume answers, beats), so the open must hold it:
   * proved on this connection (roles.c coord_key_proved, R1). */
  const struct fo_vol *f = fvol(co, v->name);
  int known = v->writer_pk.len == AUTH_PK_BYTES && ov->writer_pk.len == AUTH_PK_BYTES &&
              memcmp(v->writer_pk.data, ov->writer_pk.data, AUTH_PK_BYTES) == 0;
  for (size_t i = 0; f->promoting[0] && i < f->nreps; i++)
    if (strcmp(f->reps[i].addr, f->promoting) == 0 && strcmp(ov->addr, f->promoting) == 0 &&
        ov->writer_pk.len == AUTH_PK_BYTES &&
        memcmp(f->reps[i].pk, ov->writer_pk.data, AUTH_PK_BYTES) == 0)
      known = 1;
  if (known && proved)
    return 0;
  if (known) {
    snprintf(why, whylen, "promotion of %s refused: it names a key it does not prove it holds "
             "(writer_sig)", ov->addr[0] ? ov->addr : "?");
    return -2;
  }
  snprintf(why, whylen, "promotion of %s refused: only the operator, or the replica the "
           "coordinator chose (%s), takes volume %s's next epoch", ov->addr[0] ? ov->addr : "?",
           f->promoting[0] ? f->promoting : "none chosen", v->name);
  return -1;
}

uint32_t fo_opened(struct coord *co, const Auralog__Volume *v)
{
  struct fo_vol *f = fvol(co, v->name);
  unsigned long long now = io_now(co->io);
  /* F3: the previous writer's lease runs at most READ_LEASE_MS from its
   * last probe that reached us (it left before). Not heard since we
   * started: from our start, conservatively. */
  unsigned long long last = f->known ? f->heard : fo_of(co)->started;
  uint32_t left = now - last < READ_LEASE_MS ? (uint32_t)(READ_LEASE_MS - (now - last)) : 0;
  f->heard = now;
  f->known = 1;
  f->probed = 0;
  if (f->promoting[0])
    loginfo("volume %s: %s took epoch %llu%s", v->name, v->writer[0] ? v->writer : "a writer",
            (unsigned long long)v->epoch,
            strcmp(f->promoting, v->writer) ? " (not the replica chosen)" : ": promoted");
  if (f->promoting[0] && strcmp(f->promoting, v->writer) == 0) {
    f->failovers++;
    snprintf(f->last.to, sizeof f->last.to, "%s", v->writer);
    snprintf(f->last.from, sizeof f->last.from, "%s", f->from_writer);
    f->last.from_epoch = f->from_epoch;
    f->last.epoch = v->epoch;
    f->last.at = now;
    f->last.detect_ms = f->chosen_at - f->lost_heard;
    f->last.took_ms = now - f->lost_heard;
    f->last.asked = f->asked;
    jr_failover(co, v->name, f->last.from, f->last.to, f->last.from_epoch, f->last.epoch,
                f->last.asked, f->last.detect_ms, f->last.took_ms);   /* in the journal */
  }
  f->promoting[0] = 0;         /* the epoch moved: that promotion is over */
  /* The new writer is no replica any more: its beats from before (a
   * promoted replica's) must not list it as one, now or once it is fenced
   * in its turn (serving). It is listed again only when it beats again,
   * restarted as a replica. */
  for (size_t i = 0; i < f->nreps; i++)
    if (strcmp(f->reps[i].addr, v->writer) == 0)
      f->reps[i].heard = 0;
  return left;
}

void fo_dataloss(struct coord *co, const Auralog__Volume *v, const char *why)
{
  struct fo_vol *f = fvol(co, v->name);
  if (f->dataloss_epoch != v->epoch)
    logwarn("volume %s: the writer of epoch %llu found acknowledged commits missing; no replica "
            "is promoted until the operator acts: %s", v->name, (unsigned long long)v->epoch,
            why);
  f->dataloss_epoch = v->epoch;
  f->promoting[0] = 0;
}

void fo_probe(struct coord *co, const Auralog__Volume *v, uint64_t epoch)
{
  if (epoch != v->epoch)
    return;                    /* a fenced writer's: it proves nothing */
  struct fo_vol *f = fvol(co, v->name);
  f->heard = io_now(co->io);
  f->known = 1;
  f->probed = 1;
}

/* The replica to promote: `to` if it beats, else the one furthest ahead
 * that beat lately (never the writer's own address). NULL if none. */
static struct fo_rep *choose(struct coord *co, struct fo_vol *f, const Auralog__Volume *v,
                             const char *to)
{
  unsigned long long now = io_now(co->io);
  struct fo_rep *best = NULL;
  for (size_t i = 0; i < f->nreps; i++) {
    struct fo_rep *r = &f->reps[i];
    if (now - r->heard > WRITER_LOST_MS || strcmp(r->addr, v->writer) == 0)
      continue;
    if (to && to[0] && strcmp(r->addr, to) != 0)
      continue;
    if (best == NULL || r->applied > best->applied)
      best = r;
  }
  return best;
}

static void promote(struct coord *co, struct fo_vol *f, const Auralog__Volume *v,
                    const struct fo_rep *r, const char *how, int asked)
{
  snprintf(f->promoting, sizeof f->promoting, "%s", r->addr);
  snprintf(f->from_writer, sizeof f->from_writer, "%s", v->writer);
  f->from_epoch = v->epoch;
  f->chosen_at = io_now(co->io);
  f->lost_heard = f->heard;
  f->asked = asked;
  loginfo("volume %s: %s; promoting replica %s (applied %llu) from epoch %llu", v->name, how,
          r->addr, (unsigned long long)r->applied, (unsigned long long)v->epoch);
}

void fo_tick(struct coord *co)
{
  if (!co->failover || co->fo == NULL)
    return;
  unsigned long long now = io_now(co->io);
  for (struct fo_vol *f = co->fo->vols; f; f = f->next) {
    Auralog__Volume *v = vol_named(co, f->name);
    if (v == NULL || v->epoch == 0 || v->writer[0] == 0)
      continue;                /* no writer has opened it yet */
    if (f->dataloss_epoch == v->epoch)
      continue;                /* a data-loss alarm: the operator's to decide */
    if (f->promoting[0]) {
      if (now - f->chosen_at <= PROMOTE_MS)
        continue;              /* F4: one at a time */
      logwarn("volume %s: replica %s did not open as writer within %d ms: passed over",
              v->name, f->promoting, PROMOTE_MS);
      for (size_t i = 0; i < f->nreps; i++)
        if (strcmp(f->reps[i].addr, f->promoting) == 0)
          f->reps[i].heard = 0;   /* until it beats again */
      f->promoting[0] = 0;
    }
    if (now - f->heard <= bound(f))
      continue;
    char how[200];
    snprintf(how, sizeof how, "writer %s (epoch %llu) lost: no lease probe for %llu ms",
             v->writer, (unsigned long long)v->epoch, now - f->heard);
    struct fo_rep *r = choose(co, f, v, NULL);
    if (r)
      promote(co, f, v, r, how, 0);
    else if (now - f->warned > 10000) {
      logwarn("volume %s: %s; no replica to promote", v->name, how);
      f->warned = now;
    }
  }
}

/* Is r serving reads now, as far as we know: it beat within
 * REPLICA_SEEN_MS, and it is neither the writer nor the replica chosen for
 * promotion (that one execs into a writer any moment: promote.c). A
 * writer's address that still has an entry from before its promotion is
 * cleared when it opens (fo_opened), so a fenced old writer, which never
 * beats, is never listed. */
static int serving(const struct fo_vol *f, const Auralog__Volume *v, const struct fo_rep *r,
                   unsigned long long now)
{
  return r->heard && now - r->heard <= REPLICA_SEEN_MS && strcmp(r->addr, v->writer) != 0 &&
         strcmp(r->addr, f->promoting) != 0;
}

static void answer(struct coord *co, struct ep *c, uint64_t req, struct fo_vol *f,
                   const Auralog__Volume *v, const char *asker)
{
  unsigned long long now = io_now(co->io);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__Writer w = AURALOG__WRITER__INIT;
  /* A client or tool (no asker) gets the replicas serving now; a beat's
   * answer does not need them. */
  Auralog__ReplicaSeen seen[REPLICAS_MAX], *list[REPLICAS_MAX];
  for (size_t i = 0; asker == NULL && i < f->nreps; i++) {
    if (!serving(f, v, &f->reps[i], now))
      continue;
    Auralog__ReplicaSeen *s = &seen[w.n_replicas];
    auralog__replica_seen__init(s);
    s->addr = f->reps[i].addr;
    s->applied = f->reps[i].applied;
    s->epoch = f->reps[i].epoch;
    s->silent_ms = now - f->reps[i].heard;
    list[w.n_replicas++] = s;
  }
  w.replicas = list;
  w.volume = (char *)v->name;
  w.epoch = v->epoch;
  w.addr = v->writer;
  w.silent_ms = now - f->heard;
  w.lost = v->writer[0] && now - f->heard > bound(f);
  w.promoting = f->promoting;
  w.if_epoch = f->promoting[0] ? f->from_epoch : 0;
  w.promote = asker && f->promoting[0] && strcmp(asker, f->promoting) == 0;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_WRITER;
  env.writer = &w;
  io_send(co->io, c, &env);
}

static void on_beat(struct coord *co, struct ep *c, const Env *env)
{
  uint64_t req = env->req;
  const Auralog__ReplicaBeat *b = env->replica_beat;
  const Auralog__Volume *v = vol_named(co, b->volume);
  if (v == NULL) {
    io_error(co->io, c, req, ERR_NOT_FOUND, "no such volume");
    return;
  }
  struct fo_vol *f = fvol(co, b->volume);
  struct fo_rep *r = NULL;
  for (size_t i = 0; i < f->nreps && r == NULL; i++)
    if (strcmp(f->reps[i].addr, b->addr) == 0)
      r = &f->reps[i];
  unsigned long long now = io_now(co->io);
  /* The key it will open with, proved on this connection (roles.c R1).
   * An address keeps its key while it beats: a member cannot take over
   * a live replica's place in a promotion by beating in its name. */
  uint8_t bind[AUTH_BIND_BYTES];
  io_binding(co->io, c, bind);
  if (b->writer_pk.len != AUTH_PK_BYTES ||
      !role_writer_ok(b->writer_pk.data, b->writer_pk.len, bind, 0, 0, env)) {
    io_error(co->io, c, req, ERR_AUTH, "a replica's beat must name and prove its key");
    return;
  }
  if (r && now - r->heard <= WRITER_LOST_MS &&
      memcmp(r->pk, b->writer_pk.data, AUTH_PK_BYTES) != 0) {
    logwarn_rl("volume %s: a beat for replica %s with another key while it beats: ignored",
               b->volume, b->addr);
    io_error(co->io, c, req, ERR_AUTH, "that replica beats with another key");
    return;
  }
  if (r == NULL) {
    /* Full: take the place of the one silent longest. */
    if (f->nreps < REPLICAS_MAX) {
      r = &f->reps[f->nreps++];
    } else {
      r = &f->reps[0];
      for (size_t i = 1; i < f->nreps; i++)
        if (f->reps[i].heard < r->heard)
          r = &f->reps[i];
    }
    snprintf(r->addr, sizeof r->addr, "%s", b->addr);
  }
  r->applied = b->applied;
  r->epoch = b->epoch;
  memcpy(r->pk, b->writer_pk.data, AUTH_PK_BYTES);
  r->heard = now;
  answer(co, c, req, f, v, b->addr);
}

static void on_failover(struct coord *co, struct ep *c, uint64_t req, const Auralog__Failover *fr)
{
  char why[300];
  const Auralog__Volume *v = vol_named(co, fr->volume);
  if (v == NULL || v->writer[0] == 0) {
    snprintf(why, sizeof why, v ? "volume %s has no writer yet" : "no volume '%s'", fr->volume);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return;
  }
  struct fo_vol *f = fvol(co, fr->volume);
  unsigned long long now = io_now(co->io);
  if (f->promoting[0] && now - f->chosen_at <= PROMOTE_MS) {
    /* F4: the one in flight finishes (or is passed over) first. */
    snprintf(why, sizeof why, "a promotion of %s from epoch %llu is under way", f->promoting,
             (unsigned long long)f->from_epoch);
    io_error(co->io, c, req, ERR_UNAVAILABLE, why);
    return;
  }
  struct fo_rep *r = choose(co, f, v, fr->to);
  if (r == NULL) {
    if (fr->to[0])
      snprintf(why, sizeof why, "%s is not a replica of volume %s heard from in the last %d ms",
               fr->to, fr->volume, WRITER_LOST_MS);
    else
      snprintf(why, sizeof why, "volume %s has no replica heard from in the last %d ms",
               fr->volume, WRITER_LOST_MS);
    io_error(co->io, c, req, ERR_UNAVAILABLE, why);
    return;
  }
  char how[200];
  snprintf(how, sizeof how, "failover asked (writer %s, epoch %llu)", v->writer,
           (unsigned long long)v->epoch);
  promote(co, f, v, r, how, 1);
  answer(co, c, req, f, v, NULL);
}

int fo_on_msg(struct coord *co, struct ep *c, const Env *env)
{
  switch (env->body_case) {
  case AURALOG__ENVELOPE__BODY_REPLICA_BEAT:
    on_beat(co, c, env);
    return 1;
  case AURALOG__ENVELOPE__BODY_WRITER_REQ: {
    const Auralog__Volume *v = vol_named(co, env->writer_req->volume);
    if (v == NULL)
      io_error(co->io, c, env->req, ERR_NOT_FOUND, "no such volume");
    else
      answer(co, c, env->req, fvol(co, v->name), v, NULL);
    return 1;
  }
  case AURALOG__ENVELOPE__BODY_FAILOVER:
    on_failover(co, c, env->req, env->failover);
    return 1;
  default:
    return 0;
  }
}

void fo_status(struct coord *co, const Auralog__Volume *v, Auralog__FailoverStat *fs)
{
  struct fo_vol *f = fvol(co, v->name);
  unsigned long long now = io_now(co->io);
  fs->on = co->failover;
  fs->silent_ms = v->writer[0] ? now - f->heard : 0;
  fs->bound_ms = bound(f);
  for (size_t i = 0; i < f->nreps; i++)
    fs->candidates += now - f->reps[i].heard <= WRITER_LOST_MS &&
                      strcmp(f->reps[i].addr, v->writer) != 0;
  fs->promoting = f->promoting;
  fs->promoting_ms = f->promoting[0] ? now - f->chosen_at : 0;
  fs->from_epoch = f->promoting[0] ? f->from_epoch : 0;
  fs->failovers = f->failovers;
  fs->last_to = f->last.to;
  fs->last_from = f->last.from;
  fs->last_from_epoch = f->last.from_epoch;
  fs->last_epoch = f->last.epoch;
  fs->last_ago_ms = f->failovers ? now - f->last.at : 0;
  fs->last_detect_ms = f->last.detect_ms;
  fs->last_took_ms = f->last.took_ms;
  fs->last_asked = f->last.asked;
}

int fo_peek(const struct coord *co, const char *volume, const char *addr,
            struct fo_peek *out)
{
  memset(out, 0, sizeof *out);
  const struct fo_vol *f = co->fo ? co->fo->vols : NULL;
  while (f && strcmp(f->name, volume) != 0)
    f = f->next;
  if (f == NULL)
    return 0;
  out->heard = f->heard;
  snprintf(out->promoting, sizeof out->promoting, "%s", f->promoting);
  for (size_t i = 0; addr && i < f->nreps; i++)
    if (strcmp(f->reps[i].addr, addr) == 0) {
      out->rep_known = 1;
      out->rep_heard = f->reps[i].heard;
      memcpy(out->rep_pk, f->reps[i].pk, AUTH_PK_BYTES);
    }
  return 1;
}

void fo_free(struct coord *co)
{
  if (co->fo == NULL)
    return;
  for (struct fo_vol *f = co->fo->vols, *n; f; f = n) {
    n = f->next;
    free(f);
  }
  free(co->fo);
  co->fo = NULL;
}
