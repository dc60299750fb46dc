/*
 * cluster.h: a local cluster's layout and members, shared by `auralog
 * cluster` (cluster.c) and `auralog fault` (fault.c). Not a protocol
 * interface: the commands that start, stop and break a cluster on one
 * machine.
 */
#ifndef AURALOG_CLUSTER_H
#define AURALOG_CLUSTER_H

#include <stddef.h>
#include <sys/types.h>

#include "param.h"

#define DIR_MAX 1024       /* longest cluster directory accepted */
#define NODES_MAX 30       /* storage nodes of a local cluster (ports base+1..base+30) */

struct member {
  char name[8];
  char az[2];              /* "" for the coordinator */
  int port;
  char addr[64];
  char data[DIR_MAX + 16];
  const char *tag;         /* an argument only this member's process has */
  pid_t pid;               /* running pid, or 0 */
  int spawned;             /* started by this `cluster up` (stopped if it fails) */
};

struct cluster {
  char dir[DIR_MAX];
  int base;
  int cache;               /* engine --cache PAGES (0: the engine's default) */
  int timeout;             /* engine --statement-timeout MS (-1: the engine's default) */
  int pg_pages;            /* engine --pg-pages N (0: the default): volume main's PG size if
                              the engine creates it */
  char binlog[16];         /* engine --binlog MODE ("": off): `cluster up --binlog` */
  int repair_after;        /* coord --repair-after MS (-1: the coordinator's default,
                              REPAIR_AFTER_MS; 0: never repair) */
  struct member m[2 + NODES_MAX];   /* coord, nodes, engine */
  int n;
  /* The storage nodes (kept in cluster.json): `up --nodes N` lays out N
   * over the three AZs, `auralog node add` appends one. Node i listens
   * on base + 1 + i. */
  struct { char name[8]; char az; } node[NODES_MAX];
  int nnodes;
  /* Read replicas (`up --replicas N`, kept in cluster.json): R1..RN on
   * base + REPLICA_PORT_OFFSET + i, following the engine. */
  struct member rep[REPLICAS_MAX];
  int nrep;
  /* Failover (`up --failover`, kept in cluster.json): the coordinator
   * promotes a replica when the writer is lost. writer: the SQL address of
   * the member that writes (the coordinator says; "" before: the engine);
   * the others start as its replicas. */
  int failover;
  char writer[ADDR_MAX_LEN + 1];
  /* Continuous backup (`up --backup`, kept in cluster.json): the object
   * store every node stages its PGs to (node --backup); "" none. */
  char backup[DIR_MAX + 32];
};

/* Find the cluster in dir (NULL: $AURALOG_DIR or ~/.auralog), creating the
 * directory if create; base 0, cache and timeout < 0 keep what
 * cluster.json says. 1 with *cl laid out, 0 if there is none (a line says
 * so), or dies with a reason. */
int cluster_find(struct cluster *cl, const char *dir, int base, int cache, int timeout,
                 int create);
/* members.c: the member's pid if it runs (a process of this cluster), else 0. */
pid_t cluster_running(const struct cluster *cl, const struct member *m);
/* Start member m (self: the auralog binary); its pid file and log. */
pid_t cluster_spawn(const struct cluster *cl, struct member *m, const char *self);
/* Wait until m listens (or its process is gone). 0, or -1 with why. */
int cluster_wait_listening(struct cluster *cl, struct member *m, char *why, size_t n);
/* The member serving SQL at addr (the engine or a replica), or NULL. */
struct member *cluster_db_member(struct cluster *cl, const char *addr);
/* Ask the coordinator who writes volume main; set cl->writer to that
 * member's address if it is one of ours, else to the engine's. */
void cluster_find_writer(struct cluster *cl);
/* Send m sig and wait until it is gone; its pid, or 0 if it was not running. */
pid_t cluster_stop_member(struct cluster *cl, struct member *m, int sig);

/* clfind.c: lay out cl's members again (after a change to its nodes);
 * write cluster.json (0, or -1 with a line said); the default layout of n
 * nodes (n >= 6: A1.., B1.., C1.., spread evenly over the AZs); make the
 * cluster's run/, log/ and data/ (0, or -1 with a line said). */
void cluster_layout(struct cluster *cl);
int cluster_write_conf(const struct cluster *cl);
void cluster_default_nodes(struct cluster *cl, int n);
int cluster_mkdirs(const struct cluster *cl);
/* cluster.c: wait until the coordinator shows every node up. */
int cluster_wait_nodes(struct cluster *cl, char *why, size_t n);
/* clfind.c: DIR/a b c, the cluster's path; the coordinator's dashboard
 * address. */
void cluster_path(char *out, size_t n, const struct cluster *cl, const char *a,
                  const char *b, const char *c);
void cluster_dashboard_addr(const struct cluster *cl, char *out, size_t n);
/* members.c: pid's command line into buf (NUL-separated, NUL-terminated):
 * its length, or 0 if it cannot be read. */
ssize_t cluster_cmdline(pid_t pid, char *buf, size_t len);
/* members.c: does pid run `auralog engine` (a writer, perhaps fenced; a
 * promoted replica execs into one), not `auralog replica`? */
int cluster_runs_engine(pid_t pid);
/* members.c: did m, just started, exit already? 1 and why (its log's last
 * line), else 0. */
int cluster_died(const struct cluster *cl, struct member *m, char *why, size_t n);

#endif
