/*
 * engine_int.h: the inside of `auralog engine` (engine.c). The server's
 * parts share one state, E (one engine a process):
 *   engine.c  the loop: clients, replies waiting for the VDL, signals, the
 *             command line
 *   worker.c  the threads that run SQL: one writer, ENGINE_READERS readers;
 *             the connections, on the volume or on a baseline
 *   sandbox.c what a client's SQL may reach (sandbox.h)
 *   probe.c   the read lease: the loop asks the coordinator for the
 *             volume's epoch
 * Nothing else includes it; the engine's interface is engine_main (roles.h).
 */
#ifndef AURALOG_ENGINE_INT_H
#define AURALOG_ENGINE_INT_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/net.h"
#include "param.h"
#include "vfs/lease.h"
#include "vfs/rvol.h"
#include "vfs/stages.h"
#include "vfs/volume.h"

struct client;

/* A request for a thread, and then its answer for the loop. */
struct job {
  struct conn *c;            /* referenced while the job lives */
  struct client *cl;         /* its client (engine.c): one job of it runs at a time */
  uint64_t req;
  char *sql;                 /* NULL: close the client's database */
  sqlite3 *db;
  struct ddl_pend *ddl;      /* its connection's schema changes not yet committed (ddl.c) */
  struct capture *cap;       /* its connection's change capture (capture.c), or NULL: off */
  uint8_t *frame;            /* the packed reply */
  size_t len;
  uint64_t commit_lsn;       /* the request's own last commit (0: none) */
  uint64_t wait_lsn;         /* the reply goes out once vdl >= this */
  unsigned long long at;     /* when the reply was ready */
  struct commit_stamps stamps; /* its commit's stage timings (stages.h) */
  struct job *next;
};

struct engine {
  uv_loop_t *loop;
  char volume[NAME_MAX_LEN + 1];
  char uri[1200];
  const char *baseline;      /* NULL, or the stock SQLite it runs instead */
  int ship_pages;
  int reads_immediate;       /* --reads immediate: a read's reply does not wait */
  int timeout_ms;            /* --statement-timeout: a request's limit (0: none) */
  int binlog;                /* --binlog: BINLOG_OFF, BINLOG_COMMUNITY, BINLOG_ENHANCED */
  const char *coord;
  sqlite3 *root;             /* keeps the volume open */
  struct volume *vol;
  pthread_t worker;                /* the writer thread */
  pthread_t readers[ENGINE_READERS];
  pthread_mutex_t mu;
  pthread_cond_t cond, rcond;
  struct job *todo, **todo_tail;   /* for the writer */
  struct job *rtodo, **rtodo_tail; /* for the readers */
  struct job *done, **done_tail;   /* for the loop */
  struct job *waiting;             /* replies waiting for the VDL, by LSN */
  uv_async_t wake;
  uv_timer_t tick;
  uv_signal_t sigterm, sigint;
  int stopping;              /* 1: readers stop; 2: the writer too */
  /* The read lease (a volume only): lmu guards lease (the threads check
   * it, the loop renews it); the probe conn and timer are the loop's. */
  pthread_mutex_t lmu;
  struct lease lease;
  uint64_t epoch;
  uint32_t page_size;
  struct conn *probe;
  unsigned long long probe_retry_at;
  uint64_t probe_seq;
  uv_timer_t probe_tick;
  int lease_shown;           /* the last lease state logged: 1 valid, 0 not */
  /* `auralog replica` (vfs/replica.c): the same server over a replica's
   * volume (rvol.h), read-only; vol is NULL, writer is its writer. */
  struct rvol *rvol;
  const char *writer;
};

extern struct engine E;

/* engine.c: send every waiting reply whose wait is over; fail those that
 * waited too long or that a fenced volume will never make durable. */
void release(void);

/* worker.c: a new SQLite connection to E.uri (the volume, or the
 * baseline's database), in the sandbox, or NULL (logged). */
sqlite3 *open_db(void);
/* Check E.baseline names one, set E.uri to its database and open E.root;
 * dies on an error. */
void open_baseline(const char *file);
/* The writer thread: runs E.todo's jobs, hands them to E.done. */
void *worker_main(void *arg);
/* A reader thread: runs E.rtodo's jobs, hands them to E.done, or to
 * E.todo when one does more than read. */
void *reader_main(void *arg);

/* engine.c: serve SQL on listen (E.root, E.uri, E.vol or E.rvol set):
 * the loop, the threads, the signals; returns when the loop ends. */
/* Wait up to ENGINE_LISTEN_WAIT_MS for listen's port, if another process
 * (the engine before, still exiting) holds it; before opening a volume. */
void engine_wait_port(const char *listen);
int engine_serve(const char *listen);

/* feed.c, on the loop: the writer's read replicas (paper §4.2.4). A
 * ReplicaHello subscribes its conn, a ReplicaAck reports its read point;
 * feed_closed says whether a closed conn was a replica's (and forgets
 * it); feed_pump sends what was shipped since, and the VDL; feed_tick
 * every tick. */
void feed_hello(struct conn *c, const Env *env);
void feed_ack(struct conn *c, const Env *env);
int feed_closed(struct conn *c);
void feed_pump(void);
void feed_tick(void);
/* The writer's replica lag histogram (feed.c: every ack that applied a
 * new VDL, from sending the oldest such feed to that ack, on the writer's
 * clock), as hist_json; for SELECT auralog_stats() and `auralog bench`. */
cJSON *feed_lag_json(void);

/* promote.c, a replica's side of failover (coord/failover.c): its beats
 * to the coordinator, following a writer that moved, and its promotion
 * (the process becomes `auralog engine`). promote_start(addr) before the
 * loop; promote_tick on every replica tick. replica.c: the writer moved
 * (E.writer is the new one): subscribe there. */
void promote_start(const char *addr);
void promote_tick(void);
void replica_writer_moved(void);

/* probe.c: the first lease, before serving (t0: before vol_open asked the
 * coordinator for the epoch). Then every ENGINE_STAT_MS, on the loop,
 * on_probe_tick renews it (and reconnects). */
void lease_start(unsigned long long t0);
void on_probe_tick(uv_timer_t *t);

/* engine.c: the options `auralog engine` and `auralog replica` share
 * (die with a one-line reason on a bad value). */
long engine_opt_cache(const char *who, const char *arg);
int engine_opt_timeout(const char *who, const char *arg);

/* engine --binlog (issue 29). */
#define BINLOG_OFF 0
#define BINLOG_COMMUNITY 1
#define BINLOG_ENHANCED 2
/* Does this engine capture its writer connections' changes? With
 * --binlog, with AURALOG_CAPTURE=1, or on a volume that has a binlog PG
 * (its binlog is the volume's: every writer of it keeps it up). */
int engine_captures(void);
#endif
