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
    nbk_run(d->o, j);
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
