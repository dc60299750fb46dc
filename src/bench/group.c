/*
 * bench/group.c: application group commit in the bench's clients
 * (`auralog bench --group N --group-timeout MS`).
 *
 * The idea (seed 004, "Application Group Commit"): a commit costs I/O
 * whatever it holds, so concurrent logical transactions of one process
 * can share one database transaction. The first client with a transaction
 * to run while no group is open becomes the leader: it opens a group with
 * its own operations in it. Clients that come while the group is open are
 * followers: they add their operations and wait. The leader closes the
 * group when it holds N transactions or MS milliseconds after it opened
 * it, runs every member's operations, one member after the other, in one
 * SQL transaction, commits it and tells the followers. Each logical
 * transaction is counted, and its latency measured from its submission to
 * its group's commit: the leader's wait for followers and the followers'
 * wait for the leader are latency the application pays for throughput.
 *
 * Our clients send a transaction as one request (bench.c), so the leader
 * gathers its group first and then sends it whole, where the seed's
 * leader runs each follower's operations inside the open transaction as
 * they arrive: the same one commit per group, the same serial order of
 * the members (isolation is kept: each member's operations run as a unit,
 * one after the other, a serial order the concurrent transactions could
 * have had). A group whose transaction fails with an answer (not a lost
 * connection) is run again member by member, each in a transaction of its
 * own, so group commit never fails a transaction that would have
 * succeeded alone (the seed's fallback).
 *
 * Invariant: a group is open (accepting followers) from its leader's
 * arrival until it is full or its timeout; after that its member list is
 * fixed and only its leader touches it until it is done; a member's SQL
 * lives in its own client's buffer, which stays put while it waits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_int.h"

struct member {
  const char *sql;
  int rc;                    /* 0 committed, -1 refused, -2 no answer */
  char why[300];
};

struct group {
  struct member *m;
  int n, size;
  int closed, done;
  int refs;                  /* members not yet gone: the last frees it */
};

void gc_init(struct gc *g, int size, int timeout_ms)
{
  memset(g, 0, sizeof *g);
  g->size = size;
  g->timeout_ms = timeout_ms;
  pthread_mutex_init(&g->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g->joined, &ca);
  pthread_cond_init(&g->finished, &ca);
  pthread_condattr_destroy(&ca);
}

void gc_free(struct gc *g)
{
  pthread_cond_destroy(&g->joined);
  pthread_cond_destroy(&g->finished);
  pthread_mutex_destroy(&g->mu);
}

/* A workload transaction without its BEGIN; and COMMIT; (a group has its own). */
static void body(const char *sql, const char **from, size_t *len)
{
  size_t n = strlen(sql);
  if (n >= 13 && !strncmp(sql, "BEGIN;", 6) && !strcmp(sql + n - 7, "COMMIT;")) {
    *from = sql + 6;
    *len = n - 13;
  } else {
    *from = sql;
    *len = n;
  }
}

/* Send one SQL transaction on the leader's connection: 0, -1 refused
 * (an answer that is not rows), -2 no answer. */
static int send_tx(struct rpc *r, const char *sql, double *last_recv, char *why, size_t n)
{
  double t0 = bench_now_us();
  Env *rep = bench_sql_timed(r, sql, (uint64_t)t0, (uint64_t)*last_recv, TX_TIMEOUT, why, n);
  *last_recv = bench_now_us();
  if (rep) {
    wire_free(rep);
    return 0;
  }
  return r->fd < 0 || strstr(why, "timed out") || strstr(why, "closed") ? -2 : -1;
}

/* The leader's part once the group is closed: one transaction for all,
 * or one each if that is refused. */
static void lead(struct gc *g, struct group *grp, struct rpc *r, double *last_recv,
                 struct hist *sqlh)
{
  size_t cap = 16, len = 0;
  for (int i = 0; i < grp->n; i++)
    cap += strlen(grp->m[i].sql) + 1;
  char *sql = malloc(cap), why[300];
  len += (size_t)snprintf(sql, cap, "BEGIN;");
  for (int i = 0; i < grp->n; i++) {
    const char *from;
    size_t n;
    body(grp->m[i].sql, &from, &n);
    memcpy(sql + len, from, n);
    len += n;
  }
  snprintf(sql + len, cap - len, "COMMIT;");
  double t0 = bench_now_us();
  int rc = send_tx(r, grp->n == 1 ? grp->m[0].sql : sql, last_recv, why, sizeof why);
  if (sqlh)
    hist_add(sqlh, *last_recv - t0);
  int sent = 1;
  for (int i = 0; i < grp->n; i++) {
    grp->m[i].rc = rc;
    snprintf(grp->m[i].why, sizeof grp->m[i].why, "%s", rc ? why : "");
  }
  if (rc == -1 && grp->n > 1) {
    /* The fallback: each member alone, as if there were no group. */
    for (int i = 0; i < grp->n; i++) {
      if (i > 0 && grp->m[i - 1].rc == -2) {
        grp->m[i].rc = -2;                /* the connection is gone: so is the rest */
        continue;
      }
      t0 = bench_now_us();
      grp->m[i].rc = send_tx(r, grp->m[i].sql, last_recv, grp->m[i].why,
                             sizeof grp->m[i].why);
      if (sqlh)
        hist_add(sqlh, *last_recv - t0);
      sent++;
    }
  }
  free(sql);
  pthread_mutex_lock(&g->mu);
  g->sql_tx += (uint64_t)sent;
  g->logical += (uint64_t)grp->n;
  grp->done = 1;
  pthread_cond_broadcast(&g->finished);
  pthread_mutex_unlock(&g->mu);
}

/* Put it down when its last member leaves. Under g->mu. */
static void leave(struct group *grp)
{
  if (--grp->refs == 0) {
    free(grp->m);
    free(grp);
  }
}

int gc_submit(struct gc *g, struct rpc *r, const char *sql, double *last_recv,
              struct hist *sqlh, char *why, size_t n)
{
  pthread_mutex_lock(&g->mu);
  struct group *grp = g->open;
  int me, leader = grp == NULL;
  if (leader) {
    grp = calloc(1, sizeof *grp);
    grp->m = calloc((size_t)g->size, sizeof *grp->m);
    grp->size = g->size;
    g->open = grp;
  }
  me = grp->n++;
  grp->refs++;
  grp->m[me].sql = sql;
  if (grp->n == grp->size) {
    grp->closed = 1;                       /* full: the next client leads a new one */
    g->open = NULL;
    pthread_cond_broadcast(&g->joined);
  }
  if (leader) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += (long)g->timeout_ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    while (!grp->closed)
      if (pthread_cond_timedwait(&g->joined, &g->mu, &until) == ETIMEDOUT && !grp->closed) {
        grp->closed = 1;                   /* the timeout: go with whoever came */
        g->open = NULL;
      }
    pthread_mutex_unlock(&g->mu);
    lead(g, grp, r, last_recv, sqlh);
    pthread_mutex_lock(&g->mu);
  } else {
    while (!grp->done)
      pthread_cond_wait(&g->finished, &g->mu);
  }
  int rc = grp->m[me].rc;
  if (rc)
    snprintf(why, n, "%s", grp->m[me].why);
  leave(grp);
  pthread_mutex_unlock(&g->mu);
  return rc;
}
