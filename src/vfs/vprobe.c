/*
 * vprobe.c: the real driver's side of membership changes (member.h M4;
 * the core's is vmember.c): what the engine's lease probe (probe.c, on the
 * engine's loop) says and learns about the volume's PG membership.
 *
 *   vol_probe_fill / vol_probe_free  the probe's membership part: the
 *        writer's mseq, and each PG in transition with its mepoch and
 *        adopted_at (taken under the volume's lock);
 *   vol_members  the probe's answer: the PGs changed since; queued, and
 *        applied on the volume's I/O thread (vol_members_drain, from its
 *        wake-up), since applying one sends, connects and may move the VDL,
 *        whose waiters the I/O thread serves.
 *
 * A writer on a stale membership (a node refused with ERR_STALE_MEMBERSHIP)
 * needs nothing more: the probe goes every ENGINE_STAT_MS.
 */
#include <pthread.h>
#include <stdlib.h>

#include "lib/log.h"
#include "vfs/vdrv.h"
#include "vfs/volume_int.h"

void vol_probe_fill(struct volume *v, Auralog__Volume *vh)
{
  pthread_mutex_lock(&v->drv->mu);
  vcore_probe_fill(v, vh);
  v->probe_soon = 0;
  pthread_mutex_unlock(&v->drv->mu);
}

void vol_probe_free(Auralog__Volume *vh)
{
  vcore_probe_free(vh);
}

void vol_members(struct volume *v, const Auralog__Volume *ans)
{
  if (ans->n_pgs == 0 && ans->mseq == 0)
    return;                   /* a coordinator that tracks no membership */
  size_t len = auralog__volume__get_packed_size(ans);
  uint8_t *buf = malloc(len ? len : 1);
  if (buf == NULL)
    return;
  auralog__volume__pack(ans, buf);
  Auralog__Volume *copy = auralog__volume__unpack(NULL, len, buf);
  free(buf);
  if (copy == NULL)
    return;
  pthread_mutex_lock(&v->drv->mu);
  Auralog__Volume **m = realloc(v->drv->members, (v->drv->nmembers + 1) * sizeof *m);
  if (m == NULL) {
    pthread_mutex_unlock(&v->drv->mu);
    auralog__volume__free_unpacked(copy, NULL);
    return;
  }
  v->drv->members = m;
  m[v->drv->nmembers++] = copy;
  pthread_mutex_unlock(&v->drv->mu);
  uv_async_send(&v->drv->wake);
}

void vol_members_drain(struct volume *v)
{
  for (size_t i = 0; i < v->drv->nmembers; i++) {
    if (v->closing < 3)
      vcore_on_members(v, v->drv->members[i]);
    auralog__volume__free_unpacked(v->drv->members[i], NULL);
  }
  free(v->drv->members);
  v->drv->members = NULL;
  v->drv->nmembers = 0;
}
