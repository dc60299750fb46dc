/*
 * nbkdrv.c: the real driver of a node's backup (nbackup.c): the object
 * store (src/backup/objstore.h) on a thread of its own, since its calls
 * block for a network round trip or an fsync, and the node's loop must
 * never wait for them (a commit's ack would).
 *
 * The core hands a job over (submit: onto a queue, the thread woken); the
 * thread runs it against the store and puts it on the done queue; a libuv
 * async handle brings the loop to nbk_done for each. Jobs run one at a
 * time, in the order given: a node stages a PG's pieces one after the
 * other (the core has at most one job per PG in flight).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "backup/objstore.h"
#include "lib/log.h"
#include "node/nbkdrv.h"
#include "param.h"

static void q_push(struct nbkq *q, struct nbk_job *j)
{
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 16;
    q->v = realloc(q->v, q->cap * sizeof *q->v);
  }
  q->v[q->n++] = j;
}

static int on_key(void *arg, const char *key, uint64_t size)
{
  bk_volset_add(arg, key, size);
  return 0;
}

/* The volume's retention, as the store says (v<VOL>/retention: ms, as
 * text; none: BACKUP_RETENTION_MS): 0, or -1 with why. */
static int read_keep(struct objstore *o, struct nbk_job *j)
{
  char key[BK_KEY_MAX];
  bk_key_retention(key, j->vol);
  uint8_t *b;
  size_t n;
  int rc = obj_get(o, key, &b, &n, j->why, sizeof j->why);
  j->keep_ms = BACKUP_RETENTION_MS;
  if (rc == OBJ_NOTFOUND)
    return 0;
  if (rc != 0)
    return -1;
  char txt[32];
  size_t k = n < sizeof txt - 1 ? n : sizeof txt - 1;
  memcpy(txt, b, k);
  txt[k] = 0;
  free(b);
  unsigned long long ms = strtoull(txt, NULL, 10);
  if (ms >= 1000)            /* anything shorter is not a retention: the default */
    j->keep_ms = ms;
  return 0;
}

struct del_ctx {
  struct objstore *o;
  struct nbk_job *j;
  int failed;
};

static void del_one(void *arg, int kind, uint64_t a, uint64_t b)
{
  struct del_ctx *c = arg;
  char key[BK_KEY_MAX];
  if (kind == BK_BASE)
    bk_key_base(key, c->j->vol, c->j->pg, a, b);
  else
    bk_key_log(key, c->j->vol, c->j->pg, a, b);
  int rc = obj_del(c->o, key, c->j->why, sizeof c->j->why);
  if (rc == 0)
    c->j->point++;
  else if (rc != OBJ_NOTFOUND)
    c->failed = 1;
}

/* A job against the store. NBK_LIST: the PG's backup point there, how
 * far its objects reach without a gap (bkplan.h), its newest base's time
 * and the retention. NBK_RETAIN: delete what the retention lets go. */
static void run(struct objstore *o, struct nbk_job *j)
{
  if (j->kind == NBK_PUT) {
    j->rc = obj_put(o, j->key, j->data, j->len, j->why, sizeof j->why) == 0 ? 0 : -1;
    return;
  }
  struct bk_volset vs = {.vol = j->vol};
  char prefix[BK_KEY_MAX];
  bk_prefix_pg(prefix, j->vol, j->pg);
  j->rc = -1;
  if (read_keep(o, j) == 0 && obj_list(o, prefix, on_key, &vs, j->why, sizeof j->why) == 0) {
    bk_volset_sort(&vs);
    const struct bk_pgset *p = j->pg < vs.npgs ? &vs.pgs[j->pg] : NULL;
    if (j->kind == NBK_LIST) {
      uint64_t lo = 0, hi = 0;
      if (p)
        bk_window(p, &lo, &hi);
      j->point = hi;
      for (size_t i = 0; p && i < p->nbases; i++)
        if (p->bases[i].ms > j->base_ms) {
          j->base_ms = p->bases[i].ms;
          j->base_at = p->bases[i].at;
        }
      j->rc = 0;
    } else {
      struct del_ctx c = {o, j, 0};
      j->point = 0;
      if (p)
        bk_retain(p, j->now_ms, j->keep_ms, del_one, &c);
      j->rc = c.failed ? -1 : 0;
    }
  }
  bk_volset_free(&vs);
}

static void *thread_main(void *arg)
{
  struct nbkdrv *d = arg;
  pthread_mutex_lock(&d->mu);
  for (;;) {
    while (d->todo.n == 0 && !d->stop)
      pthread_cond_wait(&d->cv, &d->mu);
    if (d->stop)
      break;
    struct nbk_job *j = d->todo.v[0];
    memmove(d->todo.v, d->todo.v + 1, (d->todo.n - 1) * sizeof *d->todo.v);
    d->todo.n--;
    pthread_mutex_unlock(&d->mu);
    run(d->o, j);
    pthread_mutex_lock(&d->mu);
    q_push(&d->done, j);
    uv_async_send(&d->wake);
  }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

static void on_wake(uv_async_t *h)
{
  struct nbkdrv *d = h->data;
  pthread_mutex_lock(&d->mu);
  struct nbkq done = d->done;
  d->done = (struct nbkq){0};
  pthread_mutex_unlock(&d->mu);
  for (size_t i = 0; i < done.n; i++)
    nbk_done(d->n, done.v[i]);
  free(done.v);
}

static void submit(void *ctx, struct nbk_job *j)
{
  struct nbkdrv *d = ctx;
  pthread_mutex_lock(&d->mu);
  q_push(&d->todo, j);
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

static uint64_t wall_ms(void *ctx)
{
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int nbkdrv_start(struct nbkdrv *d, uv_loop_t *loop, struct node *n, const char *url,
                 char *why, size_t whylen)
{
  memset(d, 0, sizeof *d);
  d->o = obj_open(url, why, whylen);
  if (d->o == NULL)
    return -1;
  d->n = n;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  uv_async_init(loop, &d->wake, on_wake);
  d->wake.data = d;
  d->io = (struct nbk_io){d, submit, wall_ms};
  pthread_create(&d->th, NULL, thread_main, d);
  n->bk_io = &d->io;
  loginfo("backing up to %s", obj_describe(d->o));
  return 0;
}

void nbkdrv_stop(struct nbkdrv *d)
{
  if (d->o == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  d->stop = 1;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  pthread_join(d->th, NULL);
  obj_close(d->o);
  d->o = NULL;
}
