/*
 * nbkrun.c: one backup job against the object store (node.h struct
 * nbk_job), as both drivers run it: the real one on its thread
 * (nbkdrv.c), the simulator's at the instant its drawn delay ends
 * (sim/objsim.c). The core (nbackup.c) only makes jobs and takes their
 * answers; what a listing or a retention pass does with the store is
 * here, once.
 */
#include <stdlib.h>
#include <string.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "backup/objstore.h"
#include "node/node.h"
#include "param.h"

static int on_key(void *arg, const char *key, uint64_t size)
{
  bk_volset_add(arg, key, size);
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
void nbk_run(struct objstore *o, struct nbk_job *j)
{
  if (j->kind == NBK_PUT) {
    j->rc = obj_put(o, j->key, j->data, j->len, j->why, sizeof j->why) == 0 ? 0 : -1;
    return;
  }
  struct bk_volset vs = {.vol = j->vol};
  char prefix[BK_KEY_MAX];
  bk_prefix_pg(prefix, j->vol, j->pg);
  j->rc = -1;
  int set;
  if (bk_retention_get(o, j->vol, &j->keep_ms, &set, j->why, sizeof j->why) == 0 &&
      obj_list(o, prefix, on_key, &vs, j->why, sizeof j->why) == 0) {
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
