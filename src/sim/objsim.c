/*
 * objsim.c: the object store of a simulated world, and each storage
 * node's backup driver (the simulator's node/nbkdrv.c), in the runs whose
 * faults allow a backup kind (world.h F_BACKUP; in every other run no node
 * backs up, n->bk_io stays NULL, and nothing here draws or happens).
 *
 * The store (objstore.h, made with obj_wrap): objects in memory, kept in
 * the byte order of their keys (obj_list's order), one store for every
 * node, outliving their crashes as S3 outlives a fleet. Its faults:
 *   store-down   every call fails (OBJ_ERR, with a one-line why), as an
 *                S3 that cannot be reached or refuses does; when it heals
 *                the store answers again, with everything it held
 *   store-slow   calls take hundreds of ms instead of a few
 *   store-rot    one object's bytes change where it lies (objsim_rot):
 *                a few flipped, or the object cut short, as bit rot or a
 *                torn rewrite leave it; both views read the damaged bytes.
 *                The pristine bytes are kept aside, so that the checks
 *                know which objects are damaged (objsim_damaged) without
 *                asking the checksums restore relies on
 * A second view of the same objects, the truth, never fails: the checks
 * (bkcheck.c) and the restores at the end read through it, for what the
 * store holds is a fact even while nobody can reach it.
 *
 * The operator sets the volume's retention (`auralog backup retention`,
 * v<VOL>/retention) once the volume exists: a few seconds, drawn per run,
 * so that base images (every quarter of it) and retention's deletes
 * happen within a run, not only the log pieces. And the nodes' uploaders
 * take over from a silent one sooner than real ones (world.h
 * SIM_BK_TAKEOVER_MS), so that takeovers happen within a run too.
 *
 * A node's driver. The real one runs the node's jobs on a thread, one at a
 * time, in the order given, against a store whose calls block
 * (nbkdrv.c); here each node has a queue whose head job completes after a
 * delay drawn from the run's stream (a few ms; hundreds while store-slow).
 * Only then does it meet the store, as the real driver's does (nbkrun.c
 * nbk_run: so a job submitted before a store-down and finishing inside it
 * fails), and the node gets it back (nbk_done) with a turn of its own,
 * which ends as
 * the real loop's does: the group commit, then bg_work and its staging
 * pass. A crash takes the queue with it: the jobs queued and the one
 * running are dropped, and a completion due for an earlier life of the
 * node is known by its gen (world.c's timers' pattern). A put that was
 * running may have landed all the same (the request had left; the answer
 * never came back): half the time it does, an object in the store that no
 * node counted, which the next uploader must find by listing (nbackup.c:
 * the listing is the truth).
 */
#include <stdlib.h>
#include <string.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "backup/objstore_int.h"
#include "param.h"
#include "sim/simint.h"

#define STORE_MS        8     /* a call takes 1 to this many ms ... */
#define STORE_SLOW_MS   100   /* ... while store-slow, this much more ... */
#define STORE_SLOW_SPAN 700   /* ... and up to this much on top */
#define STORE_KEEP_MIN  4000  /* the retention the operator sets: at least ... */
#define STORE_KEEP_MAX  12000 /* ... and at most this (ms) */
#define STORE_ROT_NEW   6     /* store-rot: half the time one of the newest this many */

struct sobj {
  char *key;
  uint8_t *data;
  size_t len;
  uint8_t *orig;             /* store-rot: the bytes as put (NULL: never rotted) */
  size_t olen;
  uint64_t seq;              /* the store's version when it was put */
};

/* One node's driver: its queue, and its life's mark. */
struct bkdrv {
  struct objsim *s;
  struct simnode *sn;
  struct nbk_io io;
  struct nbk_job **q;        /* q[0] runs when running is set */
  size_t n, cap;
  int running;
  unsigned gen;              /* +1 per crash: a completion of an older life is stale */
};

struct objsim {
  struct world *w;
  struct rng rng;            /* the store's draws: delays, what a crash lets land */
  struct sobj *v;            /* by key, in byte order */
  size_t n, cap;
  int down, slow;            /* store-down, store-slow faults in force (how many) */
  struct objstore *o;        /* the nodes' view: with the faults */
  struct objstore *truth;    /* the checks' view: never fails */
  uint64_t version;          /* +1 per put or delete */
  uint64_t keep_ms;          /* the retention the operator sets */
  unsigned takeover_ms;      /* the nodes' bk_takeover_ms (world.h SIM_BK_TAKEOVER_MS) */
  int kept;                  /* ... set already */
  struct bkdrv drv[SIM_NODES];
};

/* A completion due: which driver, which life. */
struct bkev {
  struct bkdrv *d;
  unsigned gen;
};

/* ---- the objects ------------------------------------------------------------ */

/* The first object whose key is at or above key. */
static size_t lower(const struct objsim *s, const char *key)
{
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(s->v[mid].key, key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int found(const struct objsim *s, size_t i, const char *key)
{
  return i < s->n && strcmp(s->v[i].key, key) == 0;
}

static void put_now(struct objsim *s, const char *key, const void *data, size_t len)
{
  size_t i = lower(s, key);
  uint8_t *copy = malloc(len ? len : 1);
  memcpy(copy, data, len);
  if (found(s, i, key)) {
    free(s->v[i].data);      /* replaced whole, never changed in place */
    free(s->v[i].orig);      /* (so whole again) */
  } else {
    if (s->n == s->cap) {
      s->cap = s->cap ? 2 * s->cap : 64;
      s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
    s->n++;
    s->v[i].key = strdup(key);
  }
  s->v[i].data = copy;
  s->v[i].len = len;
  s->v[i].orig = NULL;
  s->v[i].seq = ++s->version;
}

static int down(const struct objsim *s, const char *what, const char *key, char *why,
                size_t whylen)
{
  if (!s->down)
    return 0;
  snprintf(why, whylen, "sim store: %s %s: the store is unavailable (store-down)", what, key);
  return 1;
}

static int t_put(void *impl, const char *key, const void *data, size_t len, char *why,
                 size_t whylen)
{
  (void)why, (void)whylen;
  put_now(impl, key, data, len);
  return 0;
}

static int t_get(void *impl, const char *key, uint8_t **data, size_t *len, char *why,
                 size_t whylen)
{
  struct objsim *s = impl;
  size_t i = lower(s, key);
  if (!found(s, i, key)) {
    snprintf(why, whylen, "sim store: get %s: no such object", key);
    return OBJ_NOTFOUND;
  }
  *data = malloc(s->v[i].len ? s->v[i].len : 1);
  memcpy(*data, s->v[i].data, s->v[i].len);
  *len = s->v[i].len;
  return 0;
}

static int t_list(void *impl, const char *prefix, obj_list_fn fn, void *arg, char *why,
                  size_t whylen)
{
  (void)why, (void)whylen;
  struct objsim *s = impl;
  size_t plen = strlen(prefix);
  for (size_t i = lower(s, prefix); i < s->n && strncmp(s->v[i].key, prefix, plen) == 0; i++) {
    int rc = fn(arg, s->v[i].key, s->v[i].len);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int t_del(void *impl, const char *key, char *why, size_t whylen)
{
  struct objsim *s = impl;
  size_t i = lower(s, key);
  if (!found(s, i, key)) {
    snprintf(why, whylen, "sim store: delete %s: no such object", key);
    return OBJ_NOTFOUND;
  }
  free(s->v[i].key);
  free(s->v[i].data);
  free(s->v[i].orig);
  memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
  s->n--;
  s->version++;
  return 0;
}

/* The nodes' view: the same, unless the store is down. */
static int f_put(void *impl, const char *key, const void *data, size_t len, char *why,
                 size_t whylen)
{
  return down(impl, "put", key, why, whylen) ? OBJ_ERR : t_put(impl, key, data, len, why, whylen);
}

static int f_get(void *impl, const char *key, uint8_t **data, size_t *len, char *why,
                 size_t whylen)
{
  return down(impl, "get", key, why, whylen) ? OBJ_ERR : t_get(impl, key, data, len, why, whylen);
}

static int f_list(void *impl, const char *prefix, obj_list_fn fn, void *arg, char *why,
                  size_t whylen)
{
  return down(impl, "list", prefix, why, whylen) ? OBJ_ERR
                                                  : t_list(impl, prefix, fn, arg, why, whylen);
}

static int f_del(void *impl, const char *key, char *why, size_t whylen)
{
  return down(impl, "delete", key, why, whylen) ? OBJ_ERR : t_del(impl, key, why, whylen);
}

static const struct obj_ops truth_ops = {t_put, t_get, t_list, t_del, NULL};
static const struct obj_ops fault_ops = {f_put, f_get, f_list, f_del, NULL};

/* ---- a node's driver ------------------------------------------------------- */

static void job_free(struct nbk_job *j)
{
  free(j->data);
  free(j);
}

static void complete(void *arg);

/* The head job starts: it completes after a drawn delay. */
static void start_head(struct bkdrv *d)
{
  struct objsim *s = d->s;
  if (d->running || d->n == 0)
    return;
  d->running = 1;
  uint64_t dt = 1 + rng_uniform(&s->rng, STORE_MS);
  if (s->slow)
    dt += STORE_SLOW_MS + rng_uniform(&s->rng, STORE_SLOW_SPAN);
  struct bkev *e = malloc(sizeof *e);
  *e = (struct bkev){d, d->gen};
  sim_after(s->w->clock, dt, complete, e);
}

static const char *const job_names[] = {"?", "list", "put", "retain"};

static void complete(void *arg)
{
  struct bkev *e = arg;
  struct bkdrv *d = e->d;
  struct objsim *s = d->s;
  struct world *w = s->w;
  int stale = e->gen != d->gen;
  free(e);
  if (stale || d->sn->n == NULL)
    return;                  /* the node died since: its jobs went with it */
  struct nbk_job *j = d->q[0];
  memmove(d->q, d->q + 1, (d->n - 1) * sizeof *d->q);
  d->n--;
  d->running = 0;
  nbk_run(s->o, j);
  w->res->bk_objects += j->kind == NBK_PUT && j->rc == 0;
  w->res->bk_failed += j->rc != 0;
  world_hash(w, "bk", (uint64_t)j->kind * 1000 + (uint64_t)d->sn->i,
             j->rc == 0 ? j->point : UINT64_MAX);
  world_trace(w, "backup %s %s pg %u: %s %s", d->sn->id, job_names[j->kind], j->pg,
              j->kind == NBK_PUT ? j->key : "", j->rc == 0 ? "ok" : j->why);
  nbk_done(d->sn->n, j);     /* frees j */
  node_kick(d->sn);          /* its loop turns: bg_work stages what is next */
  start_head(d);
}

static void submit(void *ctx, struct nbk_job *j)
{
  struct bkdrv *d = ctx;
  if (d->n == d->cap) {
    d->cap = d->cap ? 2 * d->cap : 16;
    d->q = realloc(d->q, d->cap * sizeof *d->q);
  }
  d->q[d->n++] = j;
  start_head(d);
}

static uint64_t wall_ms(void *ctx)
{
  struct bkdrv *d = ctx;
  return SIM_WALL_MS0 + sim_now(d->s->w->clock);
}

/* ---- the world's side ---------------------------------------------------------- */

void objsim_new(struct world *w)
{
  if (!(w->o.faults & F_BACKUP))
    return;
  struct objsim *s = calloc(1, sizeof *s);
  s->w = w;
  rng_fork(&s->rng, &w->rng);
  s->o = obj_wrap(&fault_ops, s, "sim store");
  s->truth = obj_wrap(&truth_ops, s, "sim store (as it is)");
  s->keep_ms = rng_range(&s->rng, STORE_KEEP_MIN, STORE_KEEP_MAX);
  s->takeover_ms = rng_uniform(&s->rng, 2) ? SIM_BK_EAGER_MS : SIM_BK_TAKEOVER_MS;
  for (int i = 0; i < SIM_NODES; i++)
    s->drv[i] = (struct bkdrv){.s = s, .sn = &w->nodes[i]};
  w->bk = s;
}

void objsim_node_up(struct simnode *sn)
{
  struct objsim *s = sn->w->bk;
  if (s == NULL || sn->n == NULL)
    return;
  struct bkdrv *d = &s->drv[sn->i];
  d->io = (struct nbk_io){d, submit, wall_ms};
  sn->n->bk_io = &d->io;
  sn->n->bk_takeover_ms = s->takeover_ms;
}

void objsim_node_down(struct simnode *sn)
{
  struct objsim *s = sn->w->bk;
  if (s == NULL)
    return;
  struct bkdrv *d = &s->drv[sn->i];
  /* The put on its way may have landed (the store is not the node's). */
  if (d->running && d->q[0]->kind == NBK_PUT && !s->down && rng_uniform(&s->rng, 2)) {
    put_now(s, d->q[0]->key, d->q[0]->data, d->q[0]->len);
    world_trace(s->w, "backup %s put %s: landed as the node died", sn->id, d->q[0]->key);
    world_hash(s->w, "bkland", (uint64_t)sn->i, d->q[0]->point);
  }
  for (size_t i = 0; i < d->n; i++)
    job_free(d->q[i]);
  d->n = 0;
  d->running = 0;
  d->gen++;
}

void objsim_fault(struct world *w, int kind, int on)
{
  struct objsim *s = w->bk;
  if (s == NULL)
    return;
  int *c = kind == F_STORE_DOWN ? &s->down : &s->slow;
  if (on)
    (*c)++;
  else if (*c > 0)           /* the final heal may have ended it already */
    (*c)--;
}

void objsim_heal(struct world *w)
{
  if (w->bk)
    w->bk->down = w->bk->slow = 0;
}

int objsim_is_up(const struct world *w)
{
  return w->bk && !w->bk->down;
}

struct objstore *objsim_truth(struct world *w)
{
  return w->bk ? w->bk->truth : NULL;
}

uint64_t objsim_version(const struct world *w)
{
  return w->bk ? w->bk->version : 0;
}

size_t objsim_count(const struct world *w)
{
  return w->bk ? w->bk->n : 0;
}

void objsim_retention(struct world *w, uint64_t vol)
{
  struct objsim *s = w->bk;
  if (s == NULL || s->kept)
    return;
  s->kept = 1;
  char key[BK_KEY_MAX], txt[32];
  bk_key_retention(key, vol);
  int n = snprintf(txt, sizeof txt, "%llu", (unsigned long long)s->keep_ms);
  put_now(s, key, txt, (size_t)n);
  world_trace(w, "backup retention %llu ms (the operator's)", (unsigned long long)s->keep_ms);
}

void objsim_rot(struct world *w, uint64_t r)
{
  struct objsim *s = w->bk;
  if (s == NULL)
    return;
  /* Backup objects only: the retention the operator set is not the
   * backup's (and the nodes read it). */
  struct bk_key k;
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    n += bk_key_parse(s->v[i].key, &k) == 0;
  if (n == 0) {
    world_trace(w, "store-rot: no backup object stored yet");
    return;
  }
  struct rng g;
  rng_seed(&g, r);
  size_t i = 0;
  if (rng_uniform(&g, 2)) {
    /* Half the time one of the newest few: what restores to recent points
     * read (the oldest go with retention, often unread). */
    uint64_t nth = rng_uniform(&g, n < STORE_ROT_NEW ? n : STORE_ROT_NEW), above = UINT64_MAX;
    for (uint64_t j = 0; j <= nth; j++) {
      size_t best = SIZE_MAX;
      for (size_t x = 0; x < s->n; x++)
        if (bk_key_parse(s->v[x].key, &k) == 0 && s->v[x].seq < above &&
            (best == SIZE_MAX || s->v[x].seq > s->v[best].seq))
          best = x;
      i = best;
      above = s->v[best].seq;
    }
  } else {
    size_t pick = (size_t)rng_uniform(&g, n);
    for (;; i++)
      if (bk_key_parse(s->v[i].key, &k) == 0 && pick-- == 0)
        break;
  }
  struct sobj *o = &s->v[i];
  if (o->orig == NULL) {
    o->orig = malloc(o->len ? o->len : 1);
    memcpy(o->orig, o->data, o->len);
    o->olen = o->len;
  }
  const char *how;
  if (o->len > 1 && rng_uniform(&g, 4) == 0) {
    o->len = (size_t)rng_range(&g, 1, o->len - 1);   /* torn: its tail never landed */
    how = "cut short";
  } else {
    for (uint64_t f = 1 + rng_uniform(&g, 3); f-- > 0 && o->len > 0;)
      o->data[rng_uniform(&g, o->len)] ^= (uint8_t)(1 + rng_uniform(&g, 255));
    how = "bytes flipped";
  }
  s->version++;
  w->res->bk_rotted++;
  world_trace(w, "store-rot: %s %s (%zu bytes now, %zu put)", o->key, how, o->len, o->olen);
  world_hash(w, "rot", (uint64_t)i, (uint64_t)o->len);
}

int objsim_damaged(const struct world *w, const char *key)
{
  const struct objsim *s = w->bk;
  if (s == NULL)
    return 0;
  size_t i = lower(s, key);
  if (!found(s, i, key) || s->v[i].orig == NULL)
    return 0;
  const struct sobj *o = &s->v[i];
  return o->len != o->olen || memcmp(o->data, o->orig, o->len) != 0;
}

static int drop_ev(void *arg, void *ctx)
{
  (void)ctx;
  free(arg);
  return 1;
}

void objsim_free(struct world *w)
{
  struct objsim *s = w->bk;
  if (s == NULL)
    return;
  sim_cancel_fn(w->clock, complete, drop_ev, NULL);
  for (int i = 0; i < SIM_NODES; i++) {
    for (size_t k = 0; k < s->drv[i].n; k++)
      job_free(s->drv[i].q[k]);
    free(s->drv[i].q);
  }
  for (size_t i = 0; i < s->n; i++) {
    free(s->v[i].key);
    free(s->v[i].data);
    free(s->v[i].orig);
  }
  free(s->v);
  obj_close(s->o);
  obj_close(s->truth);
  free(s);
  w->bk = NULL;
}
