/*
 * fault.c: `auralog fault`: take parts of a local cluster out and bring
 * them back: kill an AZ's nodes, a node or the engine (their data stays),
 * start them again, or ask the coordinator for a fault the processes play
 * themselves (a partition, a slow node, lost Appends, gossip off). The cluster's layout is
 * cluster.h's.
 *
 * The writer by role, at the moment the fault is done (locate.h): after a
 * failover a former replica writes and the member named "engine" may be a
 * replica, so writer-crash, writer-stop and engine-crash ask the
 * coordinator for the writer's address and take out the member serving
 * there (its pid from its pid file, checked to be ours and to run
 * `auralog engine`), for the coordinator to detect and fail over
 * (coord/failover.c). engine-crash is the contract's older name for the
 * same thing (DESIGN.md §6: "after `fault engine-crash`, `cluster up`
 * restarts the engine, which recovers": the engine of §1 is the instance
 * that writes); see engine_crash() for what differs.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "cli/failover.h"
#include "cli/locate.h"
#include "lib/log.h"
#include "roles.h"
#include "net/rpc.h"

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
  pid_t pid = cluster_stop_member(cl, m, SIGKILL);
  if (pid)
    printf("stopped %s (pid %d)\n", m->name, (int)pid);
  else
    printf("%s was not running\n", m->name);
}

static void start(struct cluster *cl, struct member *m, const char *self)
{
  char why[512];
  if ((m->pid = cluster_running(cl, m)) != 0) {
    printf("%s is already running (pid %d)\n", m->name, (int)m->pid);
    return;
  }
  if (cluster_spawn(cl, m, self) < 0)
    die("fault: cannot start %s: %s", m->name, strerror(errno));
  if (cluster_wait_listening(cl, m, why, sizeof why) != 0)
    die("fault: %s", why);
  printf("started %s (pid %d)\n", m->name, (int)m->pid);
}

/* Send the coordinator at coord a Fault message (a fault it plays, or a
 * note for its journal: rpc.h); its answer (NULL, why: none). */
Env *fault_send(const char *coord, const Auralog__Fault *f, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  req.body_case = AURALOG__ENVELOPE__BODY_FAULT;
  req.fault = (Auralog__Fault *)f;
  return rpc_once(coord, &req, RPC_TIMEOUT_MS, why, whylen);
}

static Env *fault_msg(struct cluster *cl, const char *action, const char *az, const char *node,
                      unsigned ms, char *why, size_t whylen)
{
  Auralog__Fault f = AURALOG__FAULT__INIT;
  f.action = (char *)action;
  f.az = (char *)az;
  f.node = (char *)node;
  f.ms = ms;
  return fault_send(cl->m[0].addr, &f, why, whylen);
}

/* A fault the processes play themselves: tell the coordinator. */
static int coord_fault(struct cluster *cl, const char *action, const char *az,
                       const char *node, unsigned ms)
{
  char why[256];
  Env *rep = fault_msg(cl, action, az, node, ms, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_OK, why, sizeof why) != 0)
    die("fault: coordinator: %s", why);
  wire_free(rep);
  return 0;
}

/* Tell the coordinator what this command does itself (a kill, a start),
 * for the cluster's event journal (coord/journal.c): best effort, a
 * coordinator that is down misses it. */
static void coord_note(struct cluster *cl, const char *action, const char *az,
                       const char *node)
{
  char why[256];
  wire_free(fault_msg(cl, action, az, node, 0, why, sizeof why));
}

/* The member that writes now: the coordinator names its address (why,
 * NULL: it does not answer, or knows no writer, or names no member of
 * ours; *l as it answered, l->writer "" if it did not). */
static struct member *writer_now(struct cluster *cl, struct loc *l, char *why, size_t n)
{
  char err[512];
  if (loc_ask(cl->m[0].addr, "main", l, err, sizeof err) != 0) {
    snprintf(why, n, "cannot ask the coordinator %s who writes: %s", cl->m[0].addr, err);
    return NULL;
  }
  if (!l->writer[0]) {
    snprintf(why, n, "the coordinator knows no writer of volume main");
    return NULL;
  }
  struct member *w = cluster_db_member(cl, l->writer);
  if (w == NULL)
    snprintf(why, n, "the writer %s (epoch %llu) is no member of the cluster in %s (an engine "
             "started by hand?)", l->writer, (unsigned long long)l->epoch, cl->dir);
  return w;
}

/* engine-crash: kill the writer, by role: the member the coordinator
 * names, never a replica, whatever its name. Two differences from
 * writer-crash, both the contract's: it works on a cluster with no
 * replicas and no failover, and an engine that is not running is not an
 * error (nothing crashed, exit 0: lab 3 reads the last crash's commits
 * from the journal, so a crash that did not happen is not noted).
 *
 * When no member of ours writes (the coordinator is down, or names an
 * engine started by hand, as labs 5 and 7 do, since killed), the member
 * crashed is the one `cluster up` then starts as the writer
 * (cluster_find_writer: the engine), so that "after engine-crash, cluster
 * up restarts the engine, which recovers" (DESIGN.md §6) holds: crashing
 * a fenced old writer instead would leave the engine running as a
 * replica, and no member to recover the volume. */
static void engine_crash(struct cluster *cl)
{
  char why[DIR_MAX + 1024];
  struct loc l;
  struct member *w = writer_now(cl, &l, why, sizeof why);
  pid_t pid;
  if (w == NULL) {
    w = &cl->m[cl->n - 1];
    if ((pid = cluster_running(cl, w)) == 0) {
      printf("%s was not running: nothing crashed (%s)\n", w->name, why);
      return;
    }
    printf("%s: crashing %s, which `auralog cluster up` starts as the writer%s\n", why, w->name,
           cl->failover ? " (unless the coordinator, hearing no writer, promotes a replica "
                          "first)" : "");
  } else if ((pid = cluster_running(cl, w)) == 0) {
    printf("the writer %s (%s) was not running: nothing crashed\n", w->name, w->addr);
    return;
  } else if (!cluster_runs_engine(pid)) {
    printf("%s (%s) is being promoted to writer: nothing crashed\n", w->name, w->addr);
    return;
  }
  coord_note(cl, "engine-crash", "", w->name);
  crash(cl, w);
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
    "  engine-crash      kill the engine that writes now (SIGKILL): the member\n"
    "                    the coordinator names writer (after a failover, a\n"
    "                    former replica), never a replica; none running:\n"
    "                    nothing crashed; no member of the cluster writing (a\n"
    "                    hand-started writer): the engine. `auralog cluster up`\n"
    "                    restarts it, and it, or a replica promoted in its\n"
    "                    place, recovers\n"
    "  writer-crash      kill the member that writes now (SIGKILL); the\n"
    "                    coordinator promotes a replica (unless the cluster was\n"
    "                    started with --no-failover); `cluster up` brings this\n"
    "                    one back as a replica\n"
    "  writer-stop       freeze the writer (SIGSTOP): alive, silent; its read\n"
    "                    lease runs out, a replica is promoted, and when it runs\n"
    "                    again (`cluster up` continues it) it is fenced\n"
    "  partition A|B|C   the AZ's nodes stay up but are cut off from the\n"
    "                    engine and from the other AZs\n"
    "  heal              end every partition\n"
    "  slow ID MS        the node answers MS milliseconds late (0: not slow)\n"
    "  stale ID on|off   the node serves every page without its newest record,\n"
    "                    with no error (a disk that silently lost records); the\n"
    "                    engine must refuse those pages (status: stale_pages)\n"
    "  drop ID N         the node loses the next N Appends with records the\n"
    "                    engine sends it (1..1000), as a network would: no\n"
    "                    answer; the others make the quorum, so the writer never\n"
    "                    sends those records again and the node's segments hold\n"
    "                    later records above a hole until gossip fills it\n"
    "  gossip ID on|off  off: the node neither asks its PG peers for records nor\n"
    "                    answers them, so a hole stays open (status: ^N); on:\n"
    "                    it gossips again\n"
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
  if (cluster_find(&cl, dir, 0, -1, -1, 0) <= 0)
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
    coord_note(&cl, act, arg, "");
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
    coord_note(&cl, act, m->az, m->name);
    if (act[6] == 't' && act[7] == 'o')
      crash(&cl, m);
    else
      start(&cl, m, self);
  } else if (!strcmp(act, "engine-crash")) {
    if (nargs != 0)
      die("fault: engine-crash takes no argument");
    engine_crash(&cl);
  } else if (!strcmp(act, "writer-crash") || !strcmp(act, "writer-stop")) {
    if (nargs != 0)
      die("fault: %s takes no argument", act);
    char why[DIR_MAX + 1024];
    struct loc l;
    struct member *w = writer_now(&cl, &l, why, sizeof why);
    if (w == NULL)
      die("fault: %s: %s; nothing done", act, why);
    pid_t pid = cluster_running(&cl, w);
    if (pid == 0)
      die("fault: the writer %s (%s, epoch %llu) is not running", w->name, w->addr,
          (unsigned long long)l.epoch);
    if (!cluster_runs_engine(pid))
      die("fault: %s (%s) runs as a replica, though the coordinator names it writer: a "
          "promotion under way? nothing done", w->name, w->addr);
    coord_note(&cl, act, "", w->name);
    if (act[7] == 'c') {
      cluster_stop_member(&cl, w, SIGKILL);
      /* Named by its process (after a failover the writer is R1, say: the
       * replica that was promoted), so say which is which. */
      printf("crashed the writer: %s %s (%s, pid %d)\n",
             strcmp(w->name, "engine") == 0 ? "the engine process" : "the promoted replica",
             w->name, w->addr, (int)pid);
    } else {
      if (kill(pid, SIGSTOP) != 0)
        die("fault: cannot stop %s: %s", w->name, strerror(errno));
      printf("stopped the writer: %s %s (%s, pid %d): alive and silent\n",
             strcmp(w->name, "engine") == 0 ? "the engine process" : "the promoted replica",
             w->name, w->addr, (int)pid);
    }
    if (!cl.failover)
      printf("this cluster was started with --no-failover: no replica is promoted by "
             "itself; `auralog failover` promotes one, `auralog cluster up` restarts "
             "the writer in place\n");
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
  } else if (!strcmp(act, "stale")) {
    const char *sw = nargs == 2 ? argv[optind + 2] : "";
    struct member *m = arg ? member(&cl, arg) : NULL;
    if (nargs != 2 || m == NULL || !m->az[0] || (strcmp(sw, "on") && strcmp(sw, "off")))
      die("fault: stale needs a node id and on or off");
    coord_fault(&cl, "stale", "", arg, sw[1] == 'n');
    printf(sw[1] == 'n' ? "node %s serves pages without their newest record\n"
                        : "node %s serves pages as stored again\n", arg);
  } else if (!strcmp(act, "drop")) {
    char *end = NULL;
    long cnt = nargs == 2 ? strtol(argv[optind + 2], &end, 10) : -1;
    struct member *m = arg ? member(&cl, arg) : NULL;
    if (nargs != 2 || m == NULL || !m->az[0] || *end || cnt < 1 || cnt > 1000)
      die("fault: drop needs a node id and 1..1000 Appends");
    coord_fault(&cl, "drop", "", arg, (unsigned)cnt);
    printf("node %s loses the next %ld Append%s with records\n", arg, cnt, cnt == 1 ? "" : "s");
  } else if (!strcmp(act, "gossip")) {
    const char *sw = nargs == 2 ? argv[optind + 2] : "";
    struct member *m = arg ? member(&cl, arg) : NULL;
    if (nargs != 2 || m == NULL || !m->az[0] || (strcmp(sw, "on") && strcmp(sw, "off")))
      die("fault: gossip needs a node id and on or off");
    coord_fault(&cl, "gossip", "", arg, sw[1] == 'n');
    printf(sw[1] == 'n' ? "node %s gossips with its PG peers again\n"
                        : "node %s neither asks its PG peers nor answers them\n", arg);
  } else {
    die("fault: unknown action '%s' (see auralog fault --help)", act);
  }
  return 0;
}
