/*
 * cluster.c: `auralog cluster up|down|status`: a whole local cluster of
 * real processes, for labs on one laptop.
 *
 * The cluster lives in one directory (--dir, default $AURALOG_DIR or
 * ~/.auralog):
 *   cluster.json     base port, the members' addresses, the engine's
 *                    cache size and statement timeout if `up` set them
 *   run/NAME.pid     pid of each member started by `up`
 *   log/NAME.log     each member's stderr
 *   data/NAME/       each member's lmdb
 * Members: the coordinator on the base port, six storage nodes, two per AZ
 * (A1 A2 B1 B2 C1 C2), on the next six ports, and the engine (volume main)
 * on the base port + ENGINE_PORT_OFFSET. The engine starts last, once the
 * nodes are registered, and recovers the volume as it opens. The
 * coordinator serves the live dashboard on the base port + HTTP_PORT_OFFSET.
 *
 * `up` starts whichever member is not running and leaves running ones
 * alone, so after a crash it is also the restart. `down` stops exactly
 * the processes whose pid files it wrote: a process counts as ours only if
 * its command line names this cluster's data directory, so a recycled pid
 * is never killed.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord/http.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "param.h"
#include "roles.h"
#include "rpc.h"
#include "status.h"

#define DIR_MAX 1024       /* longest cluster directory accepted */

struct member {
  char name[8];
  char az[2];              /* "" for the coordinator */
  int port;
  char addr[64];
  char data[DIR_MAX + 16];
  const char *tag;         /* an argument only this member's process has */
  pid_t pid;               /* running pid, or 0 */
};

struct cluster {
  char dir[DIR_MAX];
  int base;
  int cache;               /* engine --cache PAGES (0: the engine's default) */
  int timeout;             /* engine --statement-timeout MS (-1: the engine's default) */
  struct member m[2 + NCOPIES];     /* coord, nodes, engine */
  int n;
};

static const char *node_names[NCOPIES] = {"A1", "A2", "B1", "B2", "C1", "C2"};

static void path(char *out, size_t n, const struct cluster *cl, const char *a,
                 const char *b, const char *c)
{
  snprintf(out, n, "%s/%s%s%s", cl->dir, a, b, c);
}

/* The coordinator's dashboard, "127.0.0.1:PORT". */
static void dashboard_addr(const struct cluster *cl, char *out, size_t n)
{
  snprintf(out, n, "127.0.0.1:%d", cl->base + HTTP_PORT_OFFSET);
}

static void layout(struct cluster *cl)
{
  cl->n = 2 + NCOPIES;
  for (int i = 0; i < cl->n; i++) {
    struct member *m = &cl->m[i];
    int engine = i == cl->n - 1, node = i > 0 && !engine;
    snprintf(m->name, sizeof m->name, "%s", i == 0 ? "coord" : engine ? "engine" : node_names[i - 1]);
    snprintf(m->az, sizeof m->az, "%s", node ? (char[]){node_names[i - 1][0], 0} : "");
    m->port = engine ? cl->base + ENGINE_PORT_OFFSET : cl->base + i;
    snprintf(m->addr, sizeof m->addr, "127.0.0.1:%d", m->port);
    char data[sizeof m->data];   /* not straight into *cl: path() reads cl->dir */
    path(data, sizeof data, cl, "data/", m->name, "");
    memcpy(m->data, data, sizeof data);
    m->tag = engine ? m->addr : m->data;
  }
}

/* Threads of pid still listed in /proc (0 if it is gone). */
static int threads(pid_t pid)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
  DIR *d = opendir(p);
  if (d == NULL)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Has pid exited, files closed: reaped, or a zombie with no thread left
 * but its leader? */
static int gone(pid_t pid)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return 1;
  char state = '?';
  if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
    state = '?';
  fclose(f);
  return (state == 'Z' || state == 'X') && threads(pid) <= 1;
}

/* Is pid a live process of this cluster's member m? */
static int ours(const struct member *m, pid_t pid)
{
  char p[64], buf[8192];
  snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
  int fd = open(p, O_RDONLY);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  /* argv is NUL-separated: look for the exact tag argument. */
  for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
    if (strcmp(buf + i, m->tag) == 0) {
      snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
      FILE *f = fopen(p, "r");
      char state = '?';
      if (f) {
        if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
          state = '?';
        fclose(f);
      }
      return state != 'Z';
    }
  return 0;
}

static pid_t running(const struct cluster *cl, const struct member *m)
{
  char p[PATH_MAX];
  path(p, sizeof p, cl, "run/", m->name, ".pid");
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return 0;
  int pid = 0;
  if (fscanf(f, "%d", &pid) != 1)
    pid = 0;
  fclose(f);
  return pid > 0 && ours(m, pid) ? pid : 0;
}

static int mkdirs(const struct cluster *cl)
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
  char p[PATH_MAX], buf[4096];
  path(p, sizeof p, cl, "cluster.json", "", "");
  *cache = 0;
  *timeout = -1;
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
  cJSON_Delete(o);
  return base;
}

static int write_conf(const struct cluster *cl)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "base_port", cl->base);
  cJSON_AddStringToObject(o, "coord", cl->m[0].addr);
  cJSON_AddStringToObject(o, "engine", cl->m[cl->n - 1].addr);
  if (cl->cache > 0)
    cJSON_AddNumberToObject(o, "engine_cache", cl->cache);
  if (cl->timeout >= 0)
    cJSON_AddNumberToObject(o, "engine_statement_timeout_ms", cl->timeout);
  char dash[64], url[80];
  dashboard_addr(cl, dash, sizeof dash);
  snprintf(url, sizeof url, "http://%s/", dash);
  cJSON_AddStringToObject(o, "dashboard", url);
  cJSON *ms = cJSON_AddArrayToObject(o, "members");
  for (int i = 0; i < cl->n; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", cl->m[i].name);
    cJSON_AddStringToObject(j, "role", i == 0 ? "coord" : i == cl->n - 1 ? "engine" : "node");
    if (i)
      cJSON_AddStringToObject(j, "az", cl->m[i].az);
    cJSON_AddStringToObject(j, "addr", cl->m[i].addr);
    cJSON_AddItemToArray(ms, j);
  }
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  char p[PATH_MAX], tmp[PATH_MAX];
  path(p, sizeof p, cl, "cluster.json", "", "");
  path(tmp, sizeof tmp, cl, "cluster.json.tmp", "", "");
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

/* Start member m in the background: a new session, stdin from /dev/null,
 * stdout and stderr appended to its log. */
static pid_t spawn(const struct cluster *cl, struct member *m, const char *self)
{
  char logp[PATH_MAX], pidp[PATH_MAX], coord[64], id[8], http[64], cache[16], timeout[16];
  path(logp, sizeof logp, cl, "log/", m->name, ".log");
  path(pidp, sizeof pidp, cl, "run/", m->name, ".pid");
  snprintf(coord, sizeof coord, "%s", cl->m[0].addr);
  snprintf(id, sizeof id, "%s", m->name);
  dashboard_addr(cl, http, sizeof http);
  char *coord_argv[] = {(char *)self, "coord", "--listen", m->addr, "--data", m->data,
                        "--http", http, NULL};
  char *node_argv[] = {(char *)self, "node", "--az", m->az, "--id", id, "--listen",
                       m->addr, "--coord", coord, "--data", m->data, NULL};
  snprintf(cache, sizeof cache, "%d", cl->cache);
  snprintf(timeout, sizeof timeout, "%d", cl->timeout);
  char *engine_argv[16] = {(char *)self, "engine", "--volume", "main", "--listen", m->addr,
                           "--coord", coord};
  int na = 8;
  if (cl->cache > 0) {
    engine_argv[na++] = "--cache";
    engine_argv[na++] = cache;
  }
  if (cl->timeout >= 0) {
    engine_argv[na++] = "--statement-timeout";
    engine_argv[na++] = timeout;
  }
  engine_argv[na] = NULL;
  int engine = m == &cl->m[cl->n - 1];
  pid_t pid = proc_spawn(self, engine ? engine_argv : m->az[0] ? node_argv : coord_argv,
                         logp, 1);
  if (pid < 0)
    return -1;
  FILE *f = fopen(pidp, "w");
  if (f) {
    fprintf(f, "%d\n", (int)pid);
    fclose(f);
  }
  m->pid = pid;
  return pid;
}

/* Last line of a member's log, for error messages. */
static void last_log_line(const struct cluster *cl, const struct member *m,
                          char *out, size_t n)
{
  char p[PATH_MAX], line[256];
  path(p, sizeof p, cl, "log/", m->name, ".log");
  snprintf(out, n, "see its log in %.200s/log", cl->dir);
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return;
  while (fgets(line, sizeof line, f))
    if (line[0] != '\n')
      snprintf(out, n, "%s", line);
  fclose(f);
  out[strcspn(out, "\n")] = 0;
}

/* Did a member we just started exit already? */
static int died(const struct cluster *cl, struct member *m, char *why, size_t n)
{
  int st;
  if (m->pid > 0 && waitpid(m->pid, &st, WNOHANG) == m->pid) {
    char line[256];
    last_log_line(cl, m, line, sizeof line);
    snprintf(why, n, "%s exited at start: %s", m->name, line);
    return 1;
  }
  return 0;
}

/* Wait until member m accepts connections (the engine only listens once
 * its volume is recovered). */
static int wait_listening(struct cluster *cl, struct member *m, char *why, size_t n)
{
  unsigned long long deadline = now_ms() + CLUSTER_WAIT_MS;
  while (now_ms() < deadline) {
    struct rpc r;
    char err[200];
    if (rpc_open(&r, m->addr, 500, err, sizeof err) == 0) {
      rpc_close(&r);
      return 0;
    }
    if (died(cl, m, why, n))
      return -1;
    usleep(50000);
  }
  snprintf(why, n, "%s did not start listening on %s (see %.200s/log/%s.log)", m->name,
           m->addr, cl->dir, m->name);
  return -1;
}

/* Wait until the coordinator shows every node of the cluster up. */
static int wait_nodes(struct cluster *cl, char *why, size_t n)
{
  unsigned long long deadline = now_ms() + CLUSTER_WAIT_MS;
  char missing[256] = "";
  while (now_ms() < deadline) {
    Env *rep = status_fetch(cl->m[0].addr, "main", why, n);
    missing[0] = 0;
    for (int i = 1; i < cl->n - 1; i++) {
      int up = 0;
      for (size_t j = 0; rep && j < rep->status->n_nodes; j++)
        up |= strcmp(rep->status->nodes[j]->id, cl->m[i].name) == 0 &&
              rep->status->nodes[j]->up;
      if (!up) {
        size_t len = strlen(missing);
        snprintf(missing + len, sizeof missing - len, " %s", cl->m[i].name);
        if (died(cl, &cl->m[i], why, n)) {
          wire_free(rep);
          return -1;
        }
      }
    }
    wire_free(rep);
    if (missing[0] == 0)
      return 0;
    usleep(100000);
  }
  snprintf(why, n, "nodes not registered after %d s:%s (logs in %.200s/log)",
           CLUSTER_WAIT_MS / 1000, missing, cl->dir);
  return -1;
}

static int cmd_up(struct cluster *cl)
{
  char self[PATH_MAX], why[512];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    die("cluster: cannot find the auralog binary: %s", strerror(errno));
  self[len] = 0;
  if (write_conf(cl) != 0)
    return 1;
  int started = 0;
  struct member *engine = &cl->m[cl->n - 1];
  for (int i = 0; i < cl->n - 1; i++) {
    struct member *m = &cl->m[i];
    if ((m->pid = running(cl, m)) != 0)
      continue;
    if (spawn(cl, m, self) < 0)
      die("cluster: cannot start %s: %s", m->name, strerror(errno));
    started++;
    if (i == 0 && wait_listening(cl, m, why, sizeof why) != 0)
      die("cluster: %s", why);
  }
  if (wait_nodes(cl, why, sizeof why) != 0)
    die("cluster: %s", why);
  /* The engine last: opening the volume is a recovery, which needs a read
   * quorum of every protection group. */
  int engine_started = 0;
  if ((engine->pid = running(cl, engine)) == 0) {
    engine_started = 1;
    if (spawn(cl, engine, self) < 0)
      die("cluster: cannot start the engine: %s", strerror(errno));
    started++;
    if (wait_listening(cl, engine, why, sizeof why) != 0)
      die("cluster: %s", why);
  }
  printf("auralog cluster in %s (%s)\n", cl->dir,
         started ? "started what was not running" : "already running");
  for (int i = 0; i < cl->n; i++) {
    const struct member *m = &cl->m[i];
    if (i == cl->n - 1 && cl->cache > 0)
      printf("  %-6s %-16s pid %-7d cache %d pages%s\n", m->name, m->addr, (int)m->pid,
             cl->cache, engine_started ? "" : " from its next start");
    else if (i == 0 || i == cl->n - 1)
      printf("  %-6s %-16s pid %d\n", m->name, m->addr, (int)m->pid);
    else
      printf("  %-6s %-16s pid %-7d AZ %s\n", m->name, m->addr, (int)m->pid, m->az);
  }
  char dash[64];
  dashboard_addr(cl, dash, sizeof dash);
  printf("dashboard: http://%s/\n", dash);
  if (strcmp(cl->m[0].addr, COORD_ADDR_DEFAULT) == 0)
    printf("logs in %s/log; try: auralog status, auralog sql\n", cl->dir);
  else
    printf("logs in %s/log; try: auralog status --coord %s, auralog sql --engine %s\n",
           cl->dir, cl->m[0].addr, engine->addr);
  return 0;
}

/* Stop member m if it runs: sig, then SIGKILL if it lingers. Returns its
 * pid, or 0 if it was not running. */
static pid_t stop(struct cluster *cl, struct member *m, int sig)
{
  char pidp[PATH_MAX];
  path(pidp, sizeof pidp, cl, "run/", m->name, ".pid");
  pid_t pid = running(cl, m);
  if (pid) {
    kill(pid, sig);
    unsigned long long deadline = now_ms() + 3000;
    while (ours(m, pid) && now_ms() < deadline)
      usleep(10000);
    if (ours(m, pid)) {
      kill(pid, SIGKILL);
      while (ours(m, pid))
        usleep(10000);
    }
    /* A dying process loses its command line (ours() says no) before it
     * has closed its files: a killed engine may still hold its listening
     * socket for a moment, and a query or a new engine would meet it.
     * Its files are closed once the leader is a zombie and no other thread
     * is left. (Bounded: the pid could be reused once it is reaped.) */
    deadline = now_ms() + 3000;
    while (!gone(pid) && now_ms() < deadline)
      usleep(1000);
  }
  unlink(pidp);
  return pid;
}

static int cmd_down(struct cluster *cl)
{
  int stopped = 0;
  for (int i = cl->n - 1; i >= 0; i--) {
    pid_t pid = stop(cl, &cl->m[i], SIGTERM);
    if (pid) {
      printf("stopped %s (pid %d)\n", cl->m[i].name, (int)pid);
      stopped++;
    }
  }
  if (stopped == 0)
    printf("nothing running in %s\n", cl->dir);
  return 0;
}

static int cmd_status(struct cluster *cl)
{
  char why[320];
  Env *rep = status_fetch(cl->m[0].addr, "main", why, sizeof why);
  printf("auralog cluster in %s\n", cl->dir);
  for (int i = 0; i < cl->n; i++) {
    const struct member *m = &cl->m[i];
    pid_t pid = running(cl, m);
    const char *seen = "";
    for (size_t j = 0; rep && j < rep->status->n_nodes; j++)
      if (strcmp(rep->status->nodes[j]->id, m->name) == 0)
        seen = rep->status->nodes[j]->up ? "registered, up" : "shown down";
    char eng[96] = "";
    if (i == cl->n - 1 && rep && rep->status->engine)
      snprintf(eng, sizeof eng, "serving volume main, epoch %llu, vdl %llu",
               (unsigned long long)rep->status->engine->epoch,
               (unsigned long long)rep->status->engine->vdl);
    printf("  %-6s %-16s %-8s %s\n", m->name, m->addr, pid ? "running" : "stopped",
           i == 0 && rep ? "answering" : i == cl->n - 1 ? eng : seen);
  }
  if (rep == NULL)
    printf("coordinator: %s\n", why);
  wire_free(rep);
  return 0;
}

/* Find the cluster in dir (NULL: $AURALOG_DIR or ~/.auralog), creating the
 * directory if create; cache < 0 keeps the engine cache cluster.json names,
 * timeout < 0 its statement timeout. Returns 1 with *cl laid out, 0 if
 * there is no cluster there (a line says so), or dies with a reason. */
static int find_cluster(struct cluster *cl, const char *dir, int base, int cache,
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
      printf("no cluster in %s\n", dir);
      return 0;
    }
    die("cluster: %s: %s", dir, strerror(errno));
  }
  if (strlen(real) >= DIR_MAX)
    die("cluster: directory path %s is too long", real);
  memcpy(cl->dir, real, strlen(real) + 1);
  int conf_cache, conf_timeout, conf = read_conf(cl, &conf_cache, &conf_timeout);
  cl->base = base ? base : conf ? conf : 7400;
  cl->cache = cache >= 0 ? cache : conf_cache;
  cl->timeout = timeout >= 0 ? timeout : conf_timeout;
  layout(cl);
  if (base && conf && base != conf) {
    for (int i = 0; i < cl->n; i++) {
      struct cluster old = *cl;
      old.base = conf;
      layout(&old);
      if (running(&old, &old.m[i]))
        die("cluster: the cluster in %s runs on base port %d; run `cluster down` first",
            cl->dir, conf);
    }
  }
  return 1;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog cluster up|down|status [--dir DIR] [--base-port PORT]\n"
    "                                      [--cache PAGES] [--statement-timeout MS]\n"
    "\n"
    "A local cluster of real processes: the coordinator, six storage nodes,\n"
    "two in each of AZs A, B and C, and the engine serving volume main.\n"
    "\n"
    "  up      start whatever part of the cluster is not running, wait until\n"
    "          every node has registered, print the addresses\n"
    "  down    stop every process `up` started\n"
    "  status  which members run, and what the coordinator sees\n"
    "\n"
    "  --dir DIR        where the cluster keeps data, logs and pid files\n"
    "                   (default $AURALOG_DIR or ~/.auralog)\n"
    "  --base-port N    coordinator on N, nodes on N+1..N+6, engine on N+%d\n"
    "                   (default %d, or what the cluster in DIR was started with)\n"
    "  --cache PAGES    up: the engine's buffer cache, in pages (`auralog engine\n"
    "                   --cache`): small, reads go to storage; kept in\n"
    "                   cluster.json, so a later `up` that restarts the engine\n"
    "                   keeps it; 0: the engine's default (%d pages)\n"
    "  --statement-timeout MS\n"
    "                   up: the engine interrupts a client's request still\n"
    "                   running after MS ms (`auralog engine --statement-timeout`;\n"
    "                   0: never; default %d); kept in cluster.json like --cache\n",
    ENGINE_PORT_OFFSET, 7400, CACHE_PAGES, STATEMENT_TIMEOUT_MS);
}

int cluster_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"dir", required_argument, 0, 'd'}, {"base-port", required_argument, 0, 'p'},
    {"cache", required_argument, 0, 'c'}, {"statement-timeout", required_argument, 0, 't'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *dir = NULL;
  int base = 0, cache = -1, timeout = -1, o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'd': dir = optarg; break;
    case 'p':
      base = atoi(optarg);
      if (base < 1024 || base > 65000)
        die("cluster: --base-port must be between 1024 and 65000");
      break;
    case 'c': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 0 || v > 1000000000)
        die("cluster: --cache must be a number of pages (0: the engine's default)");
      cache = (int)v;
      break;
    }
    case 't': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 0 || v > 86400000)
        die("cluster: --statement-timeout must be a number of ms (0: never)");
      timeout = (int)v;
      break;
    }
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind >= argc)
    die("cluster: say up, down or status (see auralog cluster --help)");
  const char *cmd = argv[optind];
  if (optind + 1 < argc)
    die("cluster: unexpected argument '%s'", argv[optind + 1]);
  if (strcmp(cmd, "up") && strcmp(cmd, "down") && strcmp(cmd, "status"))
    die("cluster: unknown action '%s' (say up, down or status)", cmd);
  if ((cache >= 0 || timeout >= 0) && strcmp(cmd, "up"))
    die("cluster: --%s is an option of `cluster up`", cache >= 0 ? "cache" : "statement-timeout");

  static struct cluster cl;
  int rc = find_cluster(&cl, dir, base, cache, timeout, strcmp(cmd, "up") == 0);
  if (rc <= 0)
    return -rc;
  if (strcmp(cmd, "up") == 0) {
    if (mkdirs(&cl) != 0)
      return 1;
    return cmd_up(&cl);
  }
  if (strcmp(cmd, "down") == 0)
    return cmd_down(&cl);
  return cmd_status(&cl);
}

/* ---- auralog fault ---------------------------------------------------------- */

static struct member *member(struct cluster *cl, const char *name)
{
  for (int i = 0; i < cl->n; i++)
    if (strcmp(cl->m[i].name, name) == 0)
      return &cl->m[i];
  return NULL;
}

/* Kill a member the hard way, as a crash would; its data stays. */
static void crash(struct cluster *cl, struct member *m)
{
  pid_t pid = stop(cl, m, SIGKILL);
  if (pid)
    printf("stopped %s (pid %d)\n", m->name, (int)pid);
  else
    printf("%s was not running\n", m->name);
}

static void start(struct cluster *cl, struct member *m, const char *self)
{
  char why[512];
  if ((m->pid = running(cl, m)) != 0) {
    printf("%s is already running (pid %d)\n", m->name, (int)m->pid);
    return;
  }
  if (spawn(cl, m, self) < 0)
    die("fault: cannot start %s: %s", m->name, strerror(errno));
  if (wait_listening(cl, m, why, sizeof why) != 0)
    die("fault: %s", why);
  printf("started %s (pid %d)\n", m->name, (int)m->pid);
}

/* A fault the processes play themselves: tell the coordinator. */
static int coord_fault(struct cluster *cl, const char *action, const char *az,
                       const char *node, unsigned ms)
{
  char why[256];
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Fault f = AURALOG__FAULT__INIT;
  f.action = (char *)action;
  f.az = (char *)az;
  f.node = (char *)node;
  f.ms = ms;
  req.body_case = AURALOG__ENVELOPE__BODY_FAULT;
  req.fault = &f;
  Env *rep = rpc_once(cl->m[0].addr, &req, RPC_TIMEOUT_MS, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_OK, why, sizeof why) != 0)
    die("fault: coordinator: %s", why);
  wire_free(rep);
  return 0;
}

static void fault_usage(FILE *f)
{
  fprintf(f,
    "usage: auralog fault [--dir DIR] ACTION\n"
    "\n"
    "Take parts of the local cluster out, and bring them back.\n"
    "\n"
    "  az-down A|B|C     kill both nodes of an AZ (their data stays)\n"
    "  az-up A|B|C       start them again\n"
    "  node-stop ID      kill one node (A1 A2 B1 B2 C1 C2)\n"
    "  node-start ID     start it again\n"
    "  engine-crash      kill the engine (SIGKILL); `auralog cluster up`\n"
    "                    restarts it and it recovers\n"
    "  partition A|B|C   the AZ's nodes stay up but are cut off from the\n"
    "                    engine and from the other AZs\n"
    "  heal              end every partition\n"
    "  slow ID MS        the node answers MS milliseconds late (0: not slow)\n"
    "\n"
    "  --dir DIR   the cluster (default $AURALOG_DIR or ~/.auralog)\n");
}

int fault_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"dir", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *dir = NULL;
  int o;
  /* Options may come before or after the action (getopt permutes). */
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'd': dir = optarg; break;
    case 'h': fault_usage(stdout); return 0;
    default: fault_usage(stderr); return 2;
    }
  }
  if (optind >= argc)
    die("fault: say what to do (see auralog fault --help)");
  const char *act = argv[optind], *arg = optind + 1 < argc ? argv[optind + 1] : NULL;
  int nargs = argc - optind - 1;
  static struct cluster cl;
  if (find_cluster(&cl, dir, 0, -1, -1, 0) <= 0)
    return 1;
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    die("fault: cannot find the auralog binary");
  self[len] = 0;
  int az = arg && arg[0] >= 'A' && arg[0] < 'A' + NAZ && arg[1] == 0;
  if (!strcmp(act, "az-down") || !strcmp(act, "az-up")) {
    if (!az || nargs != 1)
      die("fault: %s needs an AZ: A, B or C", act);
    for (int i = 1; i < cl.n - 1; i++)
      if (cl.m[i].az[0] == arg[0]) {
        if (act[3] == 'd')
          crash(&cl, &cl.m[i]);
        else
          start(&cl, &cl.m[i], self);
      }
  } else if (!strcmp(act, "node-stop") || !strcmp(act, "node-start")) {
    struct member *m = arg ? member(&cl, arg) : NULL;
    if (m == NULL || !m->az[0] || nargs != 1)
      die("fault: %s needs a node id (A1 A2 B1 B2 C1 C2), not '%s'", act, arg ? arg : "");
    if (act[6] == 't' && act[7] == 'o')
      crash(&cl, m);
    else
      start(&cl, m, self);
  } else if (!strcmp(act, "engine-crash")) {
    if (nargs != 0)
      die("fault: engine-crash takes no argument");
    crash(&cl, &cl.m[cl.n - 1]);
  } else if (!strcmp(act, "partition")) {
    if (!az || nargs != 1)
      die("fault: partition needs an AZ: A, B or C");
    coord_fault(&cl, "partition", arg, "", 0);
    printf("AZ %s partitioned: its nodes are cut off from the engine and the other AZs\n", arg);
  } else if (!strcmp(act, "heal")) {
    if (nargs != 0)
      die("fault: heal takes no argument");
    coord_fault(&cl, "heal", "", "", 0);
    printf("partitions healed\n");
  } else if (!strcmp(act, "slow")) {
    char *end = NULL;
    long ms = nargs == 2 ? strtol(argv[optind + 2], &end, 10) : -1;
    struct member *m = arg ? member(&cl, arg) : NULL;
    if (nargs != 2 || m == NULL || !m->az[0] || *end || ms < 0 || ms > 60000)
      die("fault: slow needs a node id and 0..60000 milliseconds");
    coord_fault(&cl, "slow", "", arg, (unsigned)ms);
    printf(ms ? "node %s answers %ld ms late\n" : "node %s is not slow any more\n", arg, ms);
  } else {
    die("fault: unknown action '%s' (see auralog fault --help)", act);
  }
  return 0;
}
