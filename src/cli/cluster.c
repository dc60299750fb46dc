/*
 * cluster.c: `auralog cluster up|down|status`: a whole local cluster of
 * real processes, for labs on one laptop.
 *
 * The cluster lives in one directory (--dir, default $AURALOG_DIR or
 * ~/.auralog):
 *   cluster.json     base port, the members' addresses, the engine's
 *                    cache size, statement timeout and PG size if `up`
 *                    set them
 *   run/NAME.pid     pid of each member started by `up`
 *   log/NAME.log     each member's stderr
 *   data/NAME/       each member's lmdb
 * Members: the coordinator on the base port, six storage nodes, two per AZ
 * (A1 A2 B1 B2 C1 C2), on the next six ports, and the engine (volume main)
 * on the base port + ENGINE_PORT_OFFSET. The engine starts last, once the
 * nodes are registered, and recovers the volume as it opens. The
 * coordinator serves the live dashboard on the base port + HTTP_PORT_OFFSET.
 * Read replicas R1..RN (`up --replicas N`, default 1; paper §4.2.4) serve
 * read-only SQL on base + REPLICA_PORT_OFFSET + i, following the engine;
 * they start after it.
 *
 * Failover (on unless `up --no-failover`; coord/failover.c): the
 * coordinator promotes a replica when the writer is lost, so any of the engine and R1..RN may be
 * the writer; the coordinator says which (cluster_find_writer), and `up`
 * starts the others as its replicas. After `fault writer-crash`, `up`
 * waits for the promotion (if a replica runs) and brings the old writer
 * back as a replica; an old writer still running (writer-stop, a manual
 * failover: fenced) is replaced by a replica.
 *
 * `up` starts whichever member is not running and leaves running ones
 * alone, so after a crash it is also the restart. `down` stops exactly
 * the processes whose pid files it wrote: a process counts as ours only if
 * its command line names this cluster's data directory, so a recycled pid
 * is never killed.
 *
 * Files: this one is the commands; clfind.c finds the cluster and lays it
 * out (cluster.json, the members' ports and directories); members.c
 * starts, watches and stops the member processes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord/http.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "param.h"
#include "roles.h"
#include "net/rpc.h"
#include "cli/status.h"

#include "cli/cluster.h"
#include "cli/failover.h"

int cluster_wait_nodes(struct cluster *cl, char *why, size_t n)
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
              (rep->status->nodes[j]->up || !strcmp(rep->status->nodes[j]->state, "retired"));
      if (!up) {
        size_t len = strlen(missing);
        snprintf(missing + len, sizeof missing - len, " %s", cl->m[i].name);
        if (cluster_died(cl, &cl->m[i], why, n)) {
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

struct member *cluster_db_member(struct cluster *cl, const char *addr)
{
  if (strcmp(cl->m[cl->n - 1].addr, addr) == 0)
    return &cl->m[cl->n - 1];
  for (int i = 0; i < cl->nrep; i++)
    if (strcmp(cl->rep[i].addr, addr) == 0)
      return &cl->rep[i];
  return NULL;
}

void cluster_find_writer(struct cluster *cl)
{
  char addr[ADDR_MAX_LEN + 1], why[256];
  if (fo_writer_addr(cl->m[0].addr, "main", addr, sizeof addr, why, sizeof why) == 0 &&
      cluster_db_member(cl, addr))
    snprintf(cl->writer, sizeof cl->writer, "%s", addr);
  else
    snprintf(cl->writer, sizeof cl->writer, "%s", cl->m[cl->n - 1].addr);
}

/* The writer is down and a replica runs: with --failover the coordinator
 * promotes one within WRITER_LOST_MS + a beat; wait for it (and for it to
 * listen), rather than start a second writer beside it. 1 if a replica
 * took over (cl->writer is it), 0 if none did in time. */
static int wait_promotion(struct cluster *cl, const char *old)
{
  char why[256];
  unsigned long long deadline = now_ms() + WRITER_LOST_MS + PROMOTE_MS + WRITER_OPEN_MS;
  printf("the writer %s is down: waiting for the coordinator to promote a replica\n", old);
  fflush(stdout);
  while (now_ms() < deadline) {
    char addr[ADDR_MAX_LEN + 1];
    struct member *m;
    if (fo_writer_addr(cl->m[0].addr, "main", addr, sizeof addr, why, sizeof why) == 0 &&
        strcmp(addr, old) != 0 && (m = cluster_db_member(cl, addr)) != NULL &&
        (m->pid = cluster_running(cl, m)) != 0 && cluster_runs_engine(m->pid)) {
      struct rpc r;
      if (rpc_open(&r, addr, 500, why, sizeof why) == 0) {
        rpc_close(&r);
        snprintf(cl->writer, sizeof cl->writer, "%s", addr);
        printf("%s (%s) promoted to writer\n", m->name, addr);
        return 1;
      }
    }
    usleep(100000);
  }
  printf("no replica was promoted within %d ms: restarting the writer in place\n",
         WRITER_LOST_MS + PROMOTE_MS + WRITER_OPEN_MS);
  return 0;
}

/* `cluster up` failed after starting some members: stop those it started
 * (members that ran before it keep running), so that a failed start
 * leaves no half cluster behind holding ports and data (a port in use,
 * say, and the bench's next try met the members of the last one). */
static void __attribute__((noreturn, format(printf, 2, 3))) up_fail(struct cluster *cl,
                                                                   const char *fmt, ...)
{
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  int stopped = 0;
  for (int i = 0; i < cl->n + cl->nrep; i++) {
    struct member *m = i < cl->n ? &cl->m[i] : &cl->rep[i - cl->n];
    if (m->spawned && cluster_stop_member(cl, m, SIGTERM))
      stopped++;
    m->spawned = 0;
  }
  if (stopped)
    die("cluster: %s (stopped the %d member%s this start began)", why, stopped,
        stopped == 1 ? "" : "s");
  die("cluster: %s", why);
}

static int cmd_up(struct cluster *cl)
{
  char self[PATH_MAX], why[512];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    die("cluster: cannot find the auralog binary: %s", strerror(errno));
  self[len] = 0;
  if (cluster_write_conf(cl) != 0)
    return 1;
  /* The cluster key (auth.h): made once, beside the data, unless the
   * operator brought one (--key, AURALOG_KEY). */
  char key[PATH_MAX + 16];
  key_path(key, sizeof key);
  if (access(key, F_OK) != 0) {
    if (key_create(key, why, sizeof why) != 0)
      die("cluster: %s", why);
    printf("cluster key: %s (new; every member and tool needs it: --key or AURALOG_KEY)\n",
           key);
  }
  const struct auth_key *k = key_get(why, sizeof why);
  if (k == NULL)
    die("cluster: %s", why);
  /* The operator's key (coord/roles.c), beside the cluster's: whoever
   * runs `cluster up` is the operator. The coordinator gets its public
   * half only. */
  char opkey[PATH_MAX + 16], oppub[PATH_MAX + 16];
  snprintf(opkey, sizeof opkey, "%s/operator.key", cl->dir);
  snprintf(oppub, sizeof oppub, "%s/operator.pub", cl->dir);
  if (access(opkey, F_OK) != 0) {
    if (key_create(opkey, why, sizeof why) != 0)
      die("cluster: %s", why);
    printf("operator key: %s (new; only its holder opens writers, drops volumes, injects "
           "faults and forces failovers)\n", opkey);
  }
  if (op_pub_write(opkey, oppub, why, sizeof why) != 0)
    die("cluster: %s", why);
  int started = 0;
  struct member *engine = &cl->m[cl->n - 1];
  for (int i = 0; i < cl->n - 1; i++) {
    struct member *m = &cl->m[i];
    if ((m->pid = cluster_running(cl, m)) != 0)
      continue;
    if (cluster_spawn(cl, m, self) < 0)
      up_fail(cl, "cannot start %s: %s", m->name, strerror(errno));
    started++;
    m->spawned = 1;
    if (i == 0 && cluster_wait_listening(cl, m, why, sizeof why) != 0)
      up_fail(cl, "%s", why);
  }
  if (cluster_wait_nodes(cl, why, sizeof why) != 0)
    up_fail(cl, "%s", why);
  /* The writer last: opening the volume is a recovery, which needs a read
   * quorum of every protection group. The coordinator says which member
   * writes (the engine until a failover). */
  int engine_started = 0;
  cluster_find_writer(cl);
  struct member *w = cluster_db_member(cl, cl->writer);
  for (int i = -1; i < cl->nrep; i++) {    /* a writer-stop's: let it run again */
    struct member *m = i < 0 ? engine : &cl->rep[i];
    if ((m->pid = cluster_running(cl, m)) != 0)
      kill(m->pid, SIGCONT);
  }
  if (w->pid == 0 || !cluster_runs_engine(w->pid)) {
    int replica_runs = 0;
    for (int i = -1; i < cl->nrep; i++) {
      struct member *m = i < 0 ? engine : &cl->rep[i];
      replica_runs |= m != w && m->pid && !cluster_runs_engine(m->pid);
    }
    if (w->pid == 0 && cl->failover && replica_runs && wait_promotion(cl, w->addr))
      w = cluster_db_member(cl, cl->writer);
  }
  if ((w->pid = cluster_running(cl, w)) == 0) {
    engine_started = 1;
    if (cluster_spawn(cl, w, self) < 0)
      up_fail(cl, "cannot start the writer %s: %s", w->name, strerror(errno));
    started++;
    w->spawned = 1;
    if (cluster_wait_listening(cl, w, why, sizeof why) != 0)
      up_fail(cl, "%s", why);
  }
  for (int i = -1; i < cl->nrep; i++) {
    struct member *m = i < 0 ? engine : &cl->rep[i];
    if (m == w)
      continue;
    if ((m->pid = cluster_running(cl, m)) != 0 && cluster_runs_engine(m->pid)) {
      /* An old writer (fenced by the newer epoch, failover.c F2): it comes
       * back as a replica of the new one. */
      cluster_stop_member(cl, m, SIGKILL);
      printf("stopped the old writer %s: it starts again as a replica of %s\n", m->name,
             w->addr);
      m->pid = 0;
    }
    if (m->pid)
      continue;
    if (cluster_spawn(cl, m, self) < 0)
      up_fail(cl, "cannot start replica %s: %s", m->name, strerror(errno));
    started++;
    m->spawned = 1;
    if (cluster_wait_listening(cl, m, why, sizeof why) != 0)
      up_fail(cl, "%s", why);
  }
  cluster_write_conf(cl);
  printf("auralog cluster in %s (%s)\n", cl->dir,
         started ? "started what was not running" : "already running");
  for (int i = 0; i < cl->n; i++) {
    const struct member *m = &cl->m[i];
    if (m == w && cl->cache > 0)
      printf("  %-6s %-16s pid %-7d writer, cache %d pages%s\n", m->name, m->addr, (int)m->pid,
             cl->cache, engine_started ? "" : " from its next start");
    else if (m == w)
      printf("  %-6s %-16s pid %-7d writer\n", m->name, m->addr, (int)m->pid);
    else if (i == cl->n - 1)
      printf("  %-6s %-16s pid %-7d read replica (the writer is %s; auralog sql --replica 1)\n",
             m->name, m->addr, (int)m->pid, w->name);
    else if (i == 0)
      printf("  %-6s %-16s pid %d%s\n", m->name, m->addr, (int)m->pid,
             cl->failover ? " (fails over to a replica when the writer is lost)" : "");
    else
      printf("  %-6s %-16s pid %-7d AZ %s\n", m->name, m->addr, (int)m->pid, m->az);
  }
  int nth = w != engine;         /* `sql --replica K` counts the replicas in this order */
  for (int i = 0; i < cl->nrep; i++)
    if (&cl->rep[i] == w)
      printf("  %-6s %-16s pid %-7d writer (promoted)\n", cl->rep[i].name, cl->rep[i].addr,
             (int)cl->rep[i].pid);
    else
      printf("  %-6s %-16s pid %-7d read replica (auralog sql --replica %d)\n",
             cl->rep[i].name, cl->rep[i].addr, (int)cl->rep[i].pid, ++nth);
  char dash[64];
  cluster_dashboard_addr(cl, dash, sizeof dash);
  printf("dashboard: http://%s/\n", dash);
  /* Every command finds this cluster by its directory (cluster.json): the
   * one they look in by themselves, or --dir. */
  char seen[PATH_MAX] = "", dflt[PATH_MAX];
  const char *env = getenv("AURALOG_DIR"), *home = getenv("HOME");
  snprintf(dflt, sizeof dflt, "%s/.auralog", home && *home ? home : "/tmp");
  if (realpath(env && *env ? env : dflt, seen) != NULL && strcmp(seen, cl->dir) == 0)
    printf("logs in %s/log; try: auralog status, auralog sql\n", cl->dir);
  else
    printf("logs in %s/log; try: auralog status --dir %s, auralog sql --dir %s\n",
           cl->dir, cl->dir, cl->dir);
  return 0;
}

static int cmd_down(struct cluster *cl)
{
  int stopped = 0;
  /* Replicas first (they follow the engine), every one that may run: a
   * later `up --replicas` may have asked for fewer. */
  int nrep = cl->nrep;
  cl->nrep = REPLICAS_MAX;
  cluster_layout(cl);
  for (int i = REPLICAS_MAX - 1; i >= 0; i--) {
    pid_t pid = cluster_stop_member(cl, &cl->rep[i], SIGTERM);
    if (pid) {
      printf("stopped %s (pid %d)\n", cl->rep[i].name, (int)pid);
      stopped++;
    }
  }
  cl->nrep = nrep;
  cluster_layout(cl);
  for (int i = cl->n - 1; i >= 0; i--) {
    pid_t pid = cluster_stop_member(cl, &cl->m[i], SIGTERM);
    if (pid) {
      printf("stopped %s (pid %d)\n", cl->m[i].name, (int)pid);
      stopped++;
    }
  }
  if (stopped == 0)
    printf("nothing running in %s\n", cl->dir);
  return 0;
}

/* What the coordinator says of the engine or replica m: the writer's
 * report names its address (after a failover, a former replica's), and
 * lists its replicas. */
static void db_state(const Env *rep, const struct member *m, char *out, size_t n)
{
  const Auralog__EngineStat *e = rep && rep->status->engine ? rep->status->engine : NULL;
  out[0] = 0;
  if (e && strcmp(e->addr, m->addr) == 0)
    snprintf(out, n, "serving volume main, epoch %llu, vdl %llu", (unsigned long long)e->epoch,
             (unsigned long long)e->vdl);
  for (size_t j = 0; e && j < e->n_replicas; j++)
    if (strcmp(e->replicas[j]->addr, m->addr) == 0)
      snprintf(out, n, "replica: applied vdl %llu, lag %llu lsn, %llu ms",
               (unsigned long long)e->replicas[j]->applied,
               (unsigned long long)e->replicas[j]->lag_lsn,
               (unsigned long long)e->replicas[j]->lag_ms);
}

static int cmd_status(struct cluster *cl)
{
  char why[320];
  Env *rep = status_fetch(cl->m[0].addr, "main", why, sizeof why);
  printf("auralog cluster in %s\n", cl->dir);
  for (int i = 0; i < cl->n; i++) {
    const struct member *m = &cl->m[i];
    pid_t pid = cluster_running(cl, m);
    const char *seen = "";
    for (size_t j = 0; rep && j < rep->status->n_nodes; j++)
      if (strcmp(rep->status->nodes[j]->id, m->name) == 0)
        seen = rep->status->nodes[j]->up ? "registered, up" : "shown down";
    char eng[128] = "";
    if (i == cl->n - 1)
      db_state(rep, m, eng, sizeof eng);
    printf("  %-6s %-16s %-8s %s\n", m->name, m->addr, pid ? "running" : "stopped",
           i == 0 && rep ? "answering" : i == cl->n - 1 ? eng : seen);
  }
  for (int i = 0; i < cl->nrep; i++) {
    const struct member *m = &cl->rep[i];
    char st[128];
    db_state(rep, m, st, sizeof st);
    printf("  %-6s %-16s %-8s %s\n", m->name, m->addr,
           cluster_running(cl, m) ? "running" : "stopped", st);
  }
  if (rep == NULL)
    printf("coordinator: %s\n", why);
  wire_free(rep);
  return 0;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog cluster up|down|status|key [--dir DIR] [--base-port PORT]\n"
    "                 [--cache PAGES] [--statement-timeout MS] [--pg-pages N]\n"
    "                 [--replicas N] [--failover|--no-failover] [--nodes N] [--key FILE]\n"
    "                 [--repair-after MS] [--binlog off|community|enhanced]\n"
    "\n"
    "A local cluster of real processes: the coordinator, six storage nodes,\n"
    "two in each of AZs A, B and C (or --nodes N), and the engine serving\n"
    "volume main. `auralog node add|drain|replace` change its nodes.\n"
    "\n"
    "  up      start whatever part of the cluster is not running, wait until\n"
    "          every node has registered, print the addresses\n"
    "  down    stop every process `up` started\n"
    "  status  which members run, and what the coordinator sees\n"
    "  key     make the cluster key, if there is none, and print where it is\n"
    "\n"
    "Every connection between members proves the cluster key both ways, and\n"
    "every frame carries a MAC (integrity and authenticity; frames are not\n"
    "encrypted). `up` makes DIR/cluster.key (mode 0600) unless one exists;\n"
    "every member and tool reads it from --key FILE, $AURALOG_KEY, or\n"
    "cluster.key in --dir, $AURALOG_DIR or ~/.auralog. Across machines, copy\n"
    "the one file to each (scp, mode 0600).\n"
    "\n"
    "  --dir DIR        where the cluster keeps data, logs and pid files\n"
    "                   (default $AURALOG_DIR or ~/.auralog)\n"
    "  --base-port N    coordinator on N, nodes on N+1.., engine on N+%d\n"
    "                   (default %d, or what the cluster in DIR was started with)\n"
    "  --cache PAGES    up: the engine's buffer cache, in pages (`auralog engine\n"
    "                   --cache`): small, reads go to storage; kept in\n"
    "                   cluster.json, so a later `up` that restarts the engine\n"
    "                   keeps it; 0: the engine's default (%d pages)\n"
    "  --statement-timeout MS\n"
    "                   up: the engine interrupts a client's request still\n"
    "                   running after MS ms (`auralog engine --statement-timeout`;\n"
    "                   0: never; default %d); kept in cluster.json like --cache\n"
    "  --pg-pages N     up: pages per protection group of volume main, if the\n"
    "                   engine creates it now (`auralog engine --pg-pages`;\n"
    "                   default %d, at most %d; a volume keeps its PG size for\n"
    "                   good); kept in cluster.json like --cache\n"
    "  --binlog MODE    up: the engine's binlog (`auralog engine --binlog`): off,\n"
    "                   enhanced (row changes in commit order, kept by the\n"
    "                   storage tier; read them with `auralog binlog`), or\n"
    "                   community (MySQL's way: a file of the engine's,\n"
    "                   DIR/binlog/main.binlog, in a two-phase commit); kept in\n"
    "                   cluster.json like --cache\n"
    "  --replicas N     up: read replicas (`auralog replica`, paper §4.2.4) on\n"
    "                   ports N+%d.., each following the engine (default 1, at\n"
    "                   most %d; 0: none); kept in cluster.json like --cache;\n"
    "                   `auralog sql --replica K` asks the K-th\n"
    "  --failover       up: the coordinator promotes a replica to writer when the\n"
    "                   writer stops probing its lease for %d ms (`auralog\n"
    "                   fault writer-crash`): the default; kept in cluster.json;\n"
    "                   takes effect when the coordinator starts\n"
    "  --nodes N        up: N storage nodes (%d to %d), spread over the AZs: 9 is\n"
    "                   A1..A3, B1..B3, C1..C3, on ports N+1..; the nodes beyond\n"
    "                   two per AZ are spares a repair moves segments to (a node\n"
    "                   down %d ms, `coord --repair-after`); kept in cluster.json\n"
    "  --no-failover    up: a lost writer waits for `up` to restart it in place\n"
    "                   (or for `auralog failover`); a replica is promoted only\n"
    "                   when asked\n"
    "  --repair-after MS\n"
    "                   up: the coordinator moves the segments of a node silent\n"
    "                   for MS ms to spares (`coord --repair-after`; default %d;\n"
    "                   0: never); kept in cluster.json; takes effect when the\n"
    "                   coordinator starts\n"
    "  --backup dir|URL, --no-backup\n"
    "                   up: every node stages its PGs' log and pages to an object\n"
    "                   store (paper Fig. 4 step 6): by default (dir) DIR/backup;\n"
    "                   a URL is a directory or s3://BUCKET[/PREFIX]\n"
    "                   (AURALOG_S3_ENDPOINT, AWS_ACCESS_KEY_ID,\n"
    "                   AWS_SECRET_ACCESS_KEY); kept in cluster.json; takes effect\n"
    "                   when each node starts. `auralog backup status`,\n"
    "                   `backup retention`, `auralog restore`\n",
    ENGINE_PORT_OFFSET, 7400, CACHE_PAGES, STATEMENT_TIMEOUT_MS, PG_PAGES, PG_PAGES_MAX,
    REPLICA_PORT_OFFSET, REPLICAS_MAX, WRITER_LOST_MS, NCOPIES, NODES_MAX, REPAIR_AFTER_MS,
    REPAIR_AFTER_MS);
}

int cluster_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"dir", required_argument, 0, 'd'}, {"base-port", required_argument, 0, 'p'},
    {"cache", required_argument, 0, 'c'}, {"statement-timeout", required_argument, 0, 't'},
    {"pg-pages", required_argument, 0, 'g'}, {"replicas", required_argument, 0, 'r'},
    {"failover", no_argument, 0, 'F'}, {"no-failover", no_argument, 0, 'N'},
    {"nodes", required_argument, 0, 'n'}, {"repair-after", required_argument, 0, 'R'},
    {"backup", required_argument, 0, 'B'}, {"no-backup", no_argument, 0, 'X'},
    {"binlog", required_argument, 0, 'L'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *binlog = NULL;
  const char *backup = NULL;
  const char *dir = NULL;
  int base = 0, cache = -1, timeout = -1, pg_pages = 0, replicas = -1, failover = -1, o;
  int nodes = 0, repair_after = -1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'd': dir = optarg; break;
    case 'L':
      if (strcmp(optarg, "off") && strcmp(optarg, "enhanced") && strcmp(optarg, "community"))
        die("cluster: --binlog is off, community or enhanced, not '%s'", optarg);
      binlog = optarg;
      break;
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
    case 'g': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 1 || v > PG_PAGES_MAX)
        die("cluster: --pg-pages must be a number of pages from 1 to %d", PG_PAGES_MAX);
      pg_pages = (int)v;
      break;
    }
    case 'r': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 0 || v > REPLICAS_MAX)
        die("cluster: --replicas must be a number from 0 to %d", REPLICAS_MAX);
      replicas = (int)v;
      break;
    }
    case 'n': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < NCOPIES || v > NODES_MAX)
        die("cluster: --nodes must be a number from %d to %d (spread over AZs A, B, C)",
            NCOPIES, NODES_MAX);
      nodes = (int)v;
      break;
    }
    case 'R': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 0 || v > 86400000)
        die("cluster: --repair-after must be a number of ms (0: never repair)");
      repair_after = (int)v;
      break;
    }
    case 'F': failover = 1; break;
    case 'N': failover = 0; break;
    case 'B': backup = optarg; break;
    case 'X': backup = "off"; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind >= argc)
    die("cluster: say up, down, status or key (see auralog cluster --help)");
  const char *cmd = argv[optind];
  if (optind + 1 < argc)
    die("cluster: unexpected argument '%s'", argv[optind + 1]);
  if (strcmp(cmd, "key") == 0) {
    /* The key alone (scripts/netns-cluster.sh, a cluster across VMs:
     * make it once, copy it to every machine, 0600). */
    char key[PATH_MAX + 16], why[PATH_MAX + 64];
    if (dir) {              /* said: DIR/cluster.key, whatever $AURALOG_KEY says */
      if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        die("cluster: cannot create %s: %s", dir, strerror(errno));
      snprintf(key, sizeof key, "%s/cluster.key", dir);
    } else {
      key_path(key, sizeof key);
    }
    if (key_create(key, why, sizeof why) != 0)
      die("cluster: %s", why);
    /* And the operator's, beside it (coord/roles.c): its public half for
     * the coordinator (--operator DIR/operator.pub), the key for the
     * engine and the tools; never to a node or a replica. */
    char opkey[PATH_MAX + 16], oppub[PATH_MAX + 16], *slash = strrchr(key, '/');
    int dl = slash ? (int)(slash - key) : 1;
    snprintf(opkey, sizeof opkey, "%.*s/operator.key", dl, slash ? key : ".");
    snprintf(oppub, sizeof oppub, "%.*s/operator.pub", dl, slash ? key : ".");
    if (key_create(opkey, why, sizeof why) != 0 || op_pub_write(opkey, oppub, why, sizeof why))
      die("cluster: %s", why);
    printf("%s\n", key);
    return 0;
  }
  if (strcmp(cmd, "up") && strcmp(cmd, "down") && strcmp(cmd, "status"))
    die("cluster: unknown action '%s' (say up, down, status or key)", cmd);
  if ((cache >= 0 || timeout >= 0 || pg_pages || replicas >= 0 || nodes || repair_after >= 0) &&
      strcmp(cmd, "up"))
    die("cluster: --%s is an option of `cluster up`",
        cache >= 0 ? "cache" : timeout >= 0 ? "statement-timeout" : pg_pages ? "pg-pages"
        : replicas >= 0 ? "replicas" : nodes ? "nodes" : "repair-after");

  static struct cluster cl;
  int rc = cluster_find(&cl, dir, base, cache, timeout, strcmp(cmd, "up") == 0);
  if (rc <= 0)
    return strcmp(cmd, "down") ? 1 : 0;     /* down: nothing to stop */
  if (pg_pages)
    cl.pg_pages = pg_pages;
  if (binlog && strcmp(cmd, "up"))
    die("cluster: --binlog is an option of `cluster up`");
  if (binlog) {
    const char *want = strcmp(binlog, "off") ? binlog : "";
    struct member *eng = &cl.m[cl.n - 1];
    if (strcmp(want, cl.binlog) != 0 && eng->pid == 0 && (eng->pid = cluster_running(&cl, eng)))
      printf("the engine runs: --binlog %s takes effect from its next start (cluster down, "
             "then up)\n", binlog);
    snprintf(cl.binlog, sizeof cl.binlog, "%s", want);
  }
  if (failover >= 0 && strcmp(cmd, "up"))
    die("cluster: --%s is an option of `cluster up`", failover ? "failover" : "no-failover");
  if (failover >= 0 && failover != cl.failover && cl.m[0].pid == 0 &&
      (cl.m[0].pid = cluster_running(&cl, &cl.m[0])) != 0)
    printf("the coordinator runs: failover is %s from its next start (cluster down, then up)\n",
           failover ? "on" : "off");
  if (failover >= 0)
    cl.failover = failover;
  if (repair_after >= 0 && repair_after != cl.repair_after && cl.m[0].pid == 0 &&
      (cl.m[0].pid = cluster_running(&cl, &cl.m[0])) != 0)
    printf("the coordinator runs: --repair-after %d takes effect from its next start "
           "(cluster down, then up)\n", repair_after);
  if (repair_after >= 0)
    cl.repair_after = repair_after;
  if (backup && strcmp(cmd, "up"))
    die("cluster: --backup is an option of `cluster up`");
  if (backup) {
    /* "dir": DIR/backup; "off": none; else a store's url (objstore.h). */
    if (strcmp(backup, "off") == 0)
      cl.backup[0] = 0;
    else if (strcmp(backup, "dir") == 0)
      snprintf(cl.backup, sizeof cl.backup, "%s/backup", cl.dir);
    else if (strlen(backup) >= sizeof cl.backup)
      die("cluster: --backup: location too long");
    else
      snprintf(cl.backup, sizeof cl.backup, "%s", backup);
  }
  if (replicas >= 0) {
    cl.nrep = replicas;
    cluster_layout(&cl);
  }
  if (nodes) {
    /* N nodes, evenly over the AZs (9: three in each). A running node the
     * new layout leaves out would be left running unseen: refused. */
    struct cluster want = cl;
    cluster_default_nodes(&want, nodes);
    cluster_layout(&want);
    for (int i = 1; i < cl.n - 1; i++) {
      int kept = 0;
      for (int j = 1; j < want.n - 1; j++)
        kept |= !strcmp(cl.m[i].name, want.m[j].name) && cl.m[i].port == want.m[j].port;
      if (!kept && cluster_running(&cl, &cl.m[i]))
        die("cluster: node %s runs and %d nodes leave it out; run `cluster down` first",
            cl.m[i].name, nodes);
    }
    cl = want;
  }
  if (strcmp(cmd, "up") == 0) {
    if (cluster_mkdirs(&cl) != 0)
      return 1;
    return cmd_up(&cl);
  }
  if (strcmp(cmd, "down") == 0)
    return cmd_down(&cl);
  return cmd_status(&cl);
}
