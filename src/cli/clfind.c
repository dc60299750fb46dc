/*
 * clfind.c: where a cluster lives and how it is laid out (the commands
 * are cluster.c's).
 *
 * cluster_find finds the cluster's directory (--dir, else $AURALOG_DIR,
 * else ~/.auralog: DESIGN.md §6, one way to find the cluster), reads its
 * cluster.json (base port, nodes, replicas, failover, the engine's cache,
 * statement timeout and PG size, backup) and lays out its members: the
 * coordinator on the base port, the nodes on the next ports, the engine on
 * base + ENGINE_PORT_OFFSET, replicas on base + REPLICA_PORT_OFFSET + i,
 * each with its data directory. A command that finds no cluster says
 * where it looked. cluster_write_conf writes cluster.json back.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord/http.h"
#include "lib/log.h"
#include "net/keyfile.h"
#include "param.h"
#include "roles.h"

#include "cli/cluster.h"

void cluster_default_nodes(struct cluster *cl, int n)
{
  cl->nnodes = 0;
  for (int z = 0; z < NAZ; z++)
    for (int k = 0; k < n / NAZ + (z < n % NAZ); k++) {
      snprintf(cl->node[cl->nnodes].name, sizeof cl->node[0].name, "%c%d", 'A' + z, (k + 1) % 100);
      cl->node[cl->nnodes++].az = (char)('A' + z);
    }
}

void cluster_path(char *out, size_t n, const struct cluster *cl, const char *a,
                  const char *b, const char *c)
{
  snprintf(out, n, "%s/%s%s%s", cl->dir, a, b, c);
}

/* The coordinator's dashboard, "127.0.0.1:PORT". */
void cluster_dashboard_addr(const struct cluster *cl, char *out, size_t n)
{
  snprintf(out, n, "127.0.0.1:%d", cl->base + HTTP_PORT_OFFSET);
}

static void layout(struct cluster *cl)
{
  if (cl->nnodes == 0)
    cluster_default_nodes(cl, NCOPIES);
  cl->n = 2 + cl->nnodes;
  for (int i = 0; i < cl->n; i++) {
    struct member *m = &cl->m[i];
    int engine = i == cl->n - 1, node = i > 0 && !engine;
    snprintf(m->name, sizeof m->name, "%s", i == 0 ? "coord" : engine ? "engine"
                                            : cl->node[i - 1].name);
    snprintf(m->az, sizeof m->az, "%s", node ? (char[]){cl->node[i - 1].az, 0} : "");
    m->port = engine ? cl->base + ENGINE_PORT_OFFSET : cl->base + i;
    snprintf(m->addr, sizeof m->addr, "127.0.0.1:%d", m->port);
    char data[sizeof m->data];   /* not straight into *cl: cluster_path() reads cl->dir */
    cluster_path(data, sizeof data, cl, "data/", m->name, "");
    memcpy(m->data, data, sizeof data);
    m->tag = engine ? m->addr : m->data;
  }
  for (int i = 0; i < cl->nrep; i++) {
    struct member *m = &cl->rep[i];
    snprintf(m->name, sizeof m->name, "R%d", (i + 1) % 100);   /* i < REPLICAS_MAX */
    m->az[0] = 0;
    m->port = cl->base + REPLICA_PORT_OFFSET + i;
    snprintf(m->addr, sizeof m->addr, "127.0.0.1:%d", m->port);
    m->data[0] = 0;
    m->tag = m->addr;          /* its --listen: no other member names it */
  }
}

int cluster_mkdirs(const struct cluster *cl)
{
  const char *sub[] = {"", "/run", "/log", "/data"};
  for (size_t i = 0; i < 4; i++) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s%s", cl->dir, sub[i]);
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      errmsg("cluster: cannot create %s: %s", p, strerror(errno));
      return -1;
    }
  }
  return 0;
}

/* The base port cluster.json names (0: none); the engine cache and
 * statement timeout it keeps go to *cache (0 if none) and *timeout (-1 if
 * none). */
static int read_conf(struct cluster *cl, int *cache, int *timeout)
{
  char p[PATH_MAX], buf[32768];   /* thirty nodes fit */
  cluster_path(p, sizeof p, cl, "cluster.json", "", "");
  *cache = 0;
  *timeout = -1;
  cl->repair_after = -1;
  cluster_path(cl->backup, sizeof cl->backup, cl, "backup", "", "");   /* on by default */
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  cJSON *o = cJSON_Parse(buf);
  cJSON *b = cJSON_GetObjectItem(o, "base_port");
  int base = cJSON_IsNumber(b) ? b->valueint : 0;
  cJSON *c = cJSON_GetObjectItem(o, "engine_cache");
  *cache = cJSON_IsNumber(c) && c->valueint > 0 ? c->valueint : 0;
  cJSON *t = cJSON_GetObjectItem(o, "engine_statement_timeout_ms");
  *timeout = cJSON_IsNumber(t) && t->valueint >= 0 ? t->valueint : -1;
  cJSON *r = cJSON_GetObjectItem(o, "replicas");
  cl->nrep = cJSON_IsNumber(r) && r->valueint >= 0 && r->valueint <= REPLICAS_MAX ? r->valueint
                                                                                  : 1;
  /* Failover is on unless the cluster was made without it (a cluster.json
   * from before it was the default says false, and keeps that). */
  cJSON *fo = cJSON_GetObjectItem(o, "failover");
  cl->failover = fo == NULL || cJSON_IsTrue(fo);
  /* The storage nodes (`up --nodes`, `node add`); none listed: six. */
  cJSON *ns = cJSON_GetObjectItem(o, "nodes"), *it;
  cl->nnodes = 0;
  cJSON_ArrayForEach(it, ns) {
    cJSON *nm = cJSON_GetObjectItem(it, "name"), *az = cJSON_GetObjectItem(it, "az");
    if (cl->nnodes < NODES_MAX && cJSON_IsString(nm) && strlen(nm->valuestring) < 8 &&
        cJSON_IsString(az) && az->valuestring[0] >= 'A' && az->valuestring[0] <= 'C') {
      snprintf(cl->node[cl->nnodes].name, sizeof cl->node[0].name, "%s", nm->valuestring);
      cl->node[cl->nnodes++].az = az->valuestring[0];
    }
  }
  /* The coordinator's --repair-after (`up --repair-after`); none: its default. */
  cJSON *ra = cJSON_GetObjectItem(o, "repair_after_ms");
  cl->repair_after = cJSON_IsNumber(ra) && ra->valuedouble >= 0 && ra->valuedouble <= 86400000
                       ? ra->valueint : -1;
  /* Backup is on, into DIR/backup, unless the cluster was made without it
   * ("backup": "", `up --no-backup`) or with another store. */
  cJSON *bk = cJSON_GetObjectItem(o, "backup");
  if (cJSON_IsString(bk) && strlen(bk->valuestring) < sizeof cl->backup)
    snprintf(cl->backup, sizeof cl->backup, "%s", bk->valuestring);
  cJSON *bl = cJSON_GetObjectItem(o, "engine_binlog");
  if (cJSON_IsString(bl) && strlen(bl->valuestring) < sizeof cl->binlog)
    snprintf(cl->binlog, sizeof cl->binlog, "%s", bl->valuestring);
  cJSON *g = cJSON_GetObjectItem(o, "engine_pg_pages");
  cl->pg_pages = cJSON_IsNumber(g) && g->valueint > 0 && g->valueint <= PG_PAGES_MAX
                   ? g->valueint : 0;
  cJSON_Delete(o);
  return base;
}

void cluster_layout(struct cluster *cl)
{
  layout(cl);
}

int cluster_write_conf(const struct cluster *cl)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "base_port", cl->base);
  cJSON_AddStringToObject(o, "coord", cl->m[0].addr);
  cJSON_AddStringToObject(o, "engine", cl->m[cl->n - 1].addr);
  if (cl->cache > 0)
    cJSON_AddNumberToObject(o, "engine_cache", cl->cache);
  if (cl->timeout >= 0)
    cJSON_AddNumberToObject(o, "engine_statement_timeout_ms", cl->timeout);
  if (cl->pg_pages > 0)
    cJSON_AddNumberToObject(o, "engine_pg_pages", cl->pg_pages);
  if (cl->binlog[0])
    cJSON_AddStringToObject(o, "engine_binlog", cl->binlog);
  if (cl->repair_after >= 0)
    cJSON_AddNumberToObject(o, "repair_after_ms", cl->repair_after);
  cJSON_AddNumberToObject(o, "replicas", cl->nrep);
  cJSON_AddBoolToObject(o, "failover", cl->failover);
  cJSON_AddStringToObject(o, "backup", cl->backup);   /* "": none (`up --no-backup`) */
  cJSON_AddStringToObject(o, "writer", cl->writer[0] ? cl->writer : cl->m[cl->n - 1].addr);
  char dash[64], url[80];
  cluster_dashboard_addr(cl, dash, sizeof dash);
  snprintf(url, sizeof url, "http://%s/", dash);
  cJSON_AddStringToObject(o, "dashboard", url);
  cJSON *ns = cJSON_AddArrayToObject(o, "nodes");
  for (int i = 0; i < cl->nnodes; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", cl->node[i].name);
    cJSON_AddStringToObject(j, "az", (char[]){cl->node[i].az, 0});
    cJSON_AddItemToArray(ns, j);
  }
  cJSON *ms = cJSON_AddArrayToObject(o, "members");
  for (int i = 0; i < cl->n; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", cl->m[i].name);
    /* After a failover the engine may be a replica, and a replica the
     * writer (role "engine"): `sql --replica K` counts the replicas. */
    const char *writer = cl->writer[0] ? cl->writer : cl->m[cl->n - 1].addr;
    cJSON_AddStringToObject(j, "role", i == 0 ? "coord" : i < cl->n - 1 ? "node"
                                       : strcmp(cl->m[i].addr, writer) ? "replica" : "engine");
    if (i)
      cJSON_AddStringToObject(j, "az", cl->m[i].az);
    cJSON_AddStringToObject(j, "addr", cl->m[i].addr);
    cJSON_AddItemToArray(ms, j);
  }
  for (int i = 0; i < cl->nrep; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", cl->rep[i].name);
    cJSON_AddStringToObject(j, "role", cl->writer[0] && !strcmp(cl->rep[i].addr, cl->writer)
                                       ? "engine" : "replica");
    cJSON_AddStringToObject(j, "addr", cl->rep[i].addr);
    cJSON_AddItemToArray(ms, j);
  }
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  char p[PATH_MAX], tmp[PATH_MAX];
  cluster_path(p, sizeof p, cl, "cluster.json", "", "");
  cluster_path(tmp, sizeof tmp, cl, "cluster.json.tmp", "", "");
  FILE *f = fopen(tmp, "w");
  int rc = -1;
  if (f) {
    rc = fputs(s, f) < 0 || fputc('\n', f) < 0 ? -1 : 0;
    rc |= fclose(f);
    if (rc == 0)
      rc = rename(tmp, p);
  }
  free(s);
  if (rc != 0)
    errmsg("cluster: cannot write %s: %s", p, strerror(errno));
  return rc;
}

/* Wait until the coordinator shows every node of the cluster up (a
 * retired one, drained for good, need not be). */

/* Find the cluster in dir (NULL: $AURALOG_DIR or ~/.auralog), creating the
 * directory if create; cache < 0 keeps the engine cache cluster.json names,
 * timeout < 0 its statement timeout. Returns 1 with *cl laid out, 0 if
 * there is no cluster there (a line says so), or dies with a reason. */
int cluster_find(struct cluster *cl, const char *dir, int base, int cache,
                        int timeout, int create)
{
  char dflt[PATH_MAX];
  if (dir == NULL)
    dir = getenv("AURALOG_DIR");
  if (dir == NULL || !*dir) {
    const char *home = getenv("HOME");
    snprintf(dflt, sizeof dflt, "%s/.auralog", home && *home ? home : "/tmp");
    dir = dflt;
  }
  if (create && mkdir(dir, 0755) != 0 && errno != EEXIST)
    die("cluster: cannot create %s: %s", dir, strerror(errno));
  char real[PATH_MAX];
  if (realpath(dir, real) == NULL) {
    if (errno == ENOENT && !create) {
      errmsg("no cluster in %s (no such directory; start one: auralog cluster up --dir %s)",
             dir, dir);
      return 0;
    }
    die("cluster: %s: %s", dir, strerror(errno));
  }
  if (strlen(real) >= DIR_MAX)
    die("cluster: directory path %s is too long", real);
  memcpy(cl->dir, real, strlen(real) + 1);
  key_use_dir(cl->dir);
  int conf_cache, conf_timeout, conf = read_conf(cl, &conf_cache, &conf_timeout);
  if (!conf && !create) {
    /* DESIGN.md §6: a command that finds no cluster says where it looked. */
    errmsg("no cluster in %s (no cluster.json there; start one: auralog cluster up --dir %s)",
           cl->dir, cl->dir);
    return 0;
  }
  if (!conf) {
    cl->nrep = 1;              /* a new cluster: one read replica, */
    cl->failover = 1;          /* ... promoted when the writer is lost */
  }
  cl->base = base ? base : conf ? conf : 7400;
  cl->cache = cache >= 0 ? cache : conf_cache;
  cl->timeout = timeout >= 0 ? timeout : conf_timeout;
  layout(cl);
  if (base && conf && base != conf) {
    for (int i = 0; i < cl->n; i++) {
      struct cluster old = *cl;
      old.base = conf;
      layout(&old);
      if (cluster_running(&old, &old.m[i]))
        die("cluster: the cluster in %s runs on base port %d; run `cluster down` first",
            cl->dir, conf);
    }
  }
  return 1;
}
