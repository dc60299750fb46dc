/*
 * vdrv.h: the writer's real driver (volume.c, report.c): what it keeps
 * beside the core's struct volume (volume_int.h), which points at it
 * (v->drv). The core never includes this file: libuv, threads and locks
 * stay out of it (DESIGN.md §3).
 *
 * Locking: mu guards the core's state, which SQLite's threads and the I/O
 * thread share; the core is always called with it held; cond wakes the
 * threads waiting for commits, reads and recovery (the core's notify).
 */
#ifndef AURALOG_VDRV_H
#define AURALOG_VDRV_H

#include <pthread.h>
#include <time.h>
#include <uv.h>

#include "net/net.h"
#include "net/netio.h"
#include "vfs/volume_int.h"

struct vdrv {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  struct netio ni;            /* the node conns, as the core's io */
  pthread_t thread;           /* the I/O thread, running loop */
  uv_loop_t loop;
  uv_async_t wake;            /* other threads queued work */
  uv_timer_t tick;            /* every VOL_TICK_MS */
  struct conn *coord_conn;    /* reports to the coordinator */
  unsigned long long coord_retry_at;
  unsigned ticks;
  unsigned rticks;            /* the same while recovering (vol_report_recovering) */
  /* The report's log tail (engine_stat): only one thread builds reports,
   * vol_open before the I/O thread starts, then the I/O thread. */
  Auralog__TailRec tail_out[TAIL_MAX];
  Auralog__TailRec *tail_outp[TAIL_MAX];
  Auralog__DdlNote ddl_out[DDL_NOTES_MAX];   /* ... its schema changes (vfs/ddl.c) */
  Auralog__DdlNote *ddl_outp[DDL_NOTES_MAX];
  char stale_node[ADDR_MAX_LEN + 1];   /* the report's stale_node */
  Auralog__PendingRec pend_out[PENDING_SHOWN];   /* the report's pending_recs */
  Auralog__PendingRec *pend_outp[PENDING_SHOWN];
  /* The read replicas the engine feeds (vol_set_replicas, under mu), for
   * the report. */
  Auralog__ReplicaStat rstat[REPLICAS_MAX];
  Auralog__ReplicaStat *rstatp[REPLICAS_MAX];
  char raddr[REPLICAS_MAX][ADDR_MAX_LEN + 1];
  char rholder[REPLICAS_MAX][ADDR_MAX_LEN + 1];
  size_t nrstat;
  /* ... and the report's copy of them (the thread that builds reports).
   * Every string is copied, under mu: the report is packed outside it,
   * and a string the feed's thread rewrites meanwhile (a replica's
   * reader, `holder`) made pack write past the size it had measured. */
  Auralog__ReplicaStat rout[REPLICAS_MAX];
  Auralog__ReplicaStat *routp[REPLICAS_MAX];
  char rout_addr[REPLICAS_MAX][ADDR_MAX_LEN + 1];
  char rout_holder[REPLICAS_MAX][ADDR_MAX_LEN + 1];
  /* Lease probes' answers waiting for the I/O thread (vprobe.c, under mu). */
  Auralog__Volume **members;
  size_t nmembers;
  /* The report's membership part (vcore_probe_fill; the thread that
   * builds reports frees the last one's when it builds the next). */
  Auralog__Volume mout;
  unsigned long long members_asked_at;  /* a replica's last membership refresh (volume.c) */
};

/* volume.c: publish the frame counts in v->st; ts = now + ms
 * (CLOCK_REALTIME). */
void net_sync(struct volume *v);
/* vprobe.c: apply the membership changes queued by vol_members (with mu
 * held, on the I/O thread); every one is freed. */
void vol_members_drain(struct volume *v);
void vol_deadline_in(struct timespec *ts, int ms);
/* vwait.c: read page_no at the VDL (at: NULL) or at read point at[0]
 * with need at[1] (a replica's), waiting up to READ_DEADLINE_MS. */
int vol_read_common(struct volume *v, uint32_t page_no, const uint64_t *at, uint8_t *out,
                    uint64_t *page_lsn, char *why, size_t whylen);

#endif
