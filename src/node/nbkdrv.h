/*
 * nbkdrv.h: the real driver of a node's backup (nbkdrv.c): the object
 * store on a thread of its own, results brought back to the node's loop.
 *
 *   nbkdrv_start  open the store at url, start the thread, and set the
 *                 node's bk_io (0, or -1 with why: the store cannot be used)
 *   nbkdrv_stop   stop the thread (jobs not yet run are dropped: the core
 *                 stages them again after a restart) and close the store
 */
#ifndef AURALOG_NBKDRV_H
#define AURALOG_NBKDRV_H

#include <pthread.h>
#include <uv.h>

#include "node/node.h"

struct nbkdrv {
  struct objstore *o;
  struct node *n;
  struct nbk_io io;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct nbkq {
    struct nbk_job **v;
    size_t n, cap;
  } todo, done;
  int stop;
  uv_async_t wake;
};

int nbkdrv_start(struct nbkdrv *d, uv_loop_t *loop, struct node *n, const char *url,
                 char *why, size_t whylen);
void nbkdrv_stop(struct nbkdrv *d);

#endif
