/*
 * report.c: what the engine tells the coordinator about its volume, every
 * ENGINE_STAT_MS, for `auralog status`, the dashboard and `auralog viz`:
 * epoch, VDL, VCL, counters, the truncation its recovery wrote, and the
 * newest records of each PG (the log tail a drawing shows). A report
 * lags the volume by up to one period; nothing decides from it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "vfs/ddl.h"
#include "vfs/vdrv.h"
#include "vfs/volume_int.h"

static void coord_closed(struct conn *c)
{
  struct volume *v = c->data;
  if (v->drv->coord_conn == c)
    v->drv->coord_conn = NULL;
  v->drv->coord_retry_at = now_ms() + RECONNECT_MS;
}

static void coord_msg(struct conn *c, const Env *env)
{
  (void)c;
  (void)env;                    /* the coordinator does not answer reports */
}

/* Is the connection to the coordinator up? (If gone, it is made again,
 * at most every RECONNECT_MS.) */
static int coord_ready(struct volume *v)
{
  if (v->drv->coord_conn == NULL) {
    if (now_ms() >= v->drv->coord_retry_at)
      v->drv->coord_conn = net_connect(&v->drv->loop, v->coord, NULL, coord_msg, coord_closed, v);
    return 0;
  }
  return v->drv->coord_conn->connected;
}

void vol_report(struct volume *v)
{
  if (!coord_ready(v))
    return;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__EngineStat es;
  Auralog__TruncRange tr;
  vol_engine_stat(v, &env, &es, &tr);
  uint8_t sig[AUTH_SIG_BYTES];      /* the writer's word (coord/roles.c R4) */
  vol_writer_seal(v, &env, v->drv->coord_conn->bind, sig);
  conn_send(v->drv->coord_conn, &env);
}

/* While the volume recovers: what the recovery waits for (rcvround.c rule W),
 * so that `auralog status` can say why a slow open is slow. Nothing else:
 * the core has no VDL to report yet. */
void vol_report_recovering(struct volume *v)
{
  char progress[200] = "";
  pthread_mutex_lock(&v->drv->mu);
  if (v->rcv)
    snprintf(progress, sizeof progress, "%s", rcv_progress(v->rcv));
  pthread_mutex_unlock(&v->drv->mu);
  if (!progress[0])
    return;
  if (!coord_ready(v))
    return;
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  es.volume = (char *)v->name;
  es.addr = v->engine_addr;
  es.epoch = v->epoch;
  es.recovering = progress;
  env.body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
  env.engine_stat = &es;
  uint8_t sig[AUTH_SIG_BYTES];
  vol_writer_seal(v, &env, v->drv->coord_conn->bind, sig);
  conn_send(v->drv->coord_conn, &env);
}

static int tail_cmp(const void *a, const void *b)
{
  const Auralog__TailRec *x = *(Auralog__TailRec *const *)a, *y = *(Auralog__TailRec *const *)b;
  if (x->pg != y->pg)
    return x->pg < y->pg ? -1 : 1;
  return x->lsn < y->lsn ? -1 : x->lsn > y->lsn;
}

/* Fill v->drv->tail_out with the newest records of the PGs' rings (at most
 * TAIL_MAX, the newest first to stay), sorted by PG then LSN. Returns how
 * many. Takes the lock. Only the TAIL_MAX PGs written most lately can
 * have a record in it (v->recent, volume_int.h): O(TAIL_MAX * TAIL_PER_PG),
 * whatever the number of PGs. */
static size_t tail_collect(struct volume *v)
{
  size_t n = 0, min = 0;
  pthread_mutex_lock(&v->drv->mu);
  for (unsigned r = 0; r < v->nrecent; r++) {
    uint32_t p = v->recent[r];
    const struct pgout *g = &v->pgs[p];
    unsigned have = g->ring_n < TAIL_PER_PG ? g->ring_n : TAIL_PER_PG;
    for (unsigned k = 0; k < have; k++) {
      unsigned i = (g->ring_n - have + k) % TAIL_PER_PG;
      Auralog__TailRec *t;
      if (n < TAIL_MAX) {
        t = &v->drv->tail_out[n++];
      } else if (g->ring_lsn[i] > v->drv->tail_out[min].lsn) {
        t = &v->drv->tail_out[min];  /* the full list's oldest makes room */
      } else {
        continue;
      }
      auralog__tail_rec__init(t);
      t->pg = p;
      t->lsn = g->ring_lsn[i];
      t->cpl = g->ring_cpl[i];
      /* Who holds it: who acknowledged it, and who reported an SCL at or
       * above it (a segment that got it by gossip, or whose Append ack
       * came after the record was freed). */
      t->acks = g->ring_acks[i];
      for (int s = 0; s < NSLOTS; s++)
        if (g->node[s] >= 0 && g->scl[s] >= t->lsn)
          t->acks |= 1u << s;
      if (n == TAIL_MAX)
        for (size_t j = min = 0; j < n; j++)
          if (v->drv->tail_out[j].lsn < v->drv->tail_out[min].lsn)
            min = j;
    }
  }
  pthread_mutex_unlock(&v->drv->mu);
  for (size_t j = 0; j < n; j++)
    v->drv->tail_outp[j] = &v->drv->tail_out[j];
  qsort(v->drv->tail_outp, n, sizeof *v->drv->tail_outp, tail_cmp);
  return n;
}

/* The engine's report for status (takes the lock itself). */
void vol_engine_stat(struct volume *v, Env *env, Auralog__EngineStat *out,
                     Auralog__TruncRange *trout)
{
  /* The tail first: the counters read after it are at least as new, so
   * every record in it is below next_lsn. */
  size_t ntail = tail_collect(v);
  struct vol_stats st;
  vol_get_stats(v, &st);
  Auralog__EngineStat es = AURALOG__ENGINE_STAT__INIT;
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT;
  es.volume = (char *)v->name;
  es.addr = v->engine_addr;
  es.epoch = st.epoch;
  es.vdl = st.vdl;
  es.vcl = st.vcl;
  es.next_lsn = st.next_lsn;
  es.lal = st.lal;
  es.commits = st.commits;
  es.redo_bytes = st.redo_bytes;
  es.redo_msgs = st.redo_msgs;
  es.records = st.records;
  es.pending = st.pending;
  es.recovery_ms = st.recovery_ms;
  es.pages_read = st.pages_read;
  es.refusing = st.refusing;
  es.stale_pages = st.stale_pages;
  snprintf(v->drv->stale_node, sizeof v->drv->stale_node, "%s", st.stale_node);
  es.stale_node = v->drv->stale_node;
  es.net_bytes_out = st.net_bytes_out;
  es.net_msgs_out = st.net_msgs_out;
  es.net_bytes_in = st.net_bytes_in;
  es.net_msgs_in = st.net_msgs_in;
  es.tail = v->drv->tail_outp;
  es.n_tail = ntail;
  /* Schema changes its commits made durable (ddl.c), for the journal. */
  es.n_ddl = ddl_report(st.vdl, v->drv->ddl_out, v->drv->ddl_outp);
  es.ddl = v->drv->ddl_outp;
  /* The oldest records still short of a write quorum, and who has them. */
  pthread_mutex_lock(&v->drv->mu);
  size_t np = q_pending(&v->q) < PENDING_SHOWN ? q_pending(&v->q) : PENDING_SHOWN;
  for (size_t i = 0; i < np; i++) {
    const struct qrec *r = q_pending_at(&v->q, i);
    Auralog__PendingRec *p = &v->drv->pend_out[i];
    auralog__pending_rec__init(p);
    p->pg = r->pg;
    p->lsn = r->lsn;
    p->acks = r->acks;
    v->drv->pend_outp[i] = p;
  }
  pthread_mutex_unlock(&v->drv->mu);
  es.pending_recs = v->drv->pend_outp;
  es.n_pending_recs = np;
  /* Read replicas and the volume's PGMRPL (vfs/feed.c): min over the
   * writer's own read point (the VDL, or an older read in flight) and every
   * replica's. The report is packed on this thread, under the lock. */
  pthread_mutex_lock(&v->drv->mu);
  for (size_t i = 0; i < v->drv->nrstat; i++) {
    v->drv->rout[i] = v->drv->rstat[i];
    memcpy(v->drv->rout_addr[i], v->drv->raddr[i], sizeof v->drv->rout_addr[i]);
    v->drv->rout[i].addr = v->drv->rout_addr[i];
    memcpy(v->drv->rout_holder[i], v->drv->rholder[i], sizeof v->drv->rout_holder[i]);
    v->drv->rout[i].holder = v->drv->rout_holder[i];
    v->drv->routp[i] = &v->drv->rout[i];
  }
  es.replicas = v->drv->routp;
  es.n_replicas = v->drv->nrstat;
  es.pgmrpl = vol_pgmrpl(v);
  es.reads_immediate = v->reads_immediate;
  es.dirty_reads = v->dirty_reads;
  es.dirty_lsn = v->dirty_lsn;
  es.held_reads = v->held_reads;
  /* Membership (member.h M4): as the lease probe says it. */
  vcore_probe_free(&v->drv->mout);
  vcore_probe_fill(v, &v->drv->mout);
  es.mseq = v->drv->mout.mseq;
  es.members = v->drv->mout.pgs;
  es.n_members = v->drv->mout.n_pgs;
  pthread_mutex_unlock(&v->drv->mu);
  *trout = tr;
  if (st.trunc_to > st.trunc_from) {
    trout->epoch = st.epoch;
    trout->from = st.trunc_from;
    trout->to = st.trunc_to;
    vol_trunc_proof(v, trout, v->trunc_sig);   /* the coordinator keeps only a signed one */
    es.trunc = trout;
  }
  *out = es;
  auralog__envelope__init(env);
  env->body_case = AURALOG__ENVELOPE__BODY_ENGINE_STAT;
  env->engine_stat = out;
}
