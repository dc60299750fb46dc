/*
 * nodeadm.c: `auralog node add|drain|replace` (paper §2.2: segments move
 * to spares without stalling I/O; member.h, coord/member.c). The
 * operator's commands on a local cluster's storage nodes:
 *
 *   add --az A [--id ID]      start one more node (a spare) in the cluster
 *                             directory, as `cluster up` starts one, and
 *                             keep it in cluster.json (`cluster down`
 *                             stops it)
 *   drain ID [--no-wait]      move every segment of node ID to spares of its
 *                             AZ; it serves on until each move finishes,
 *                             then is retired. Waits, printing progress,
 *                             unless --no-wait
 *   replace ID [--to ID2]     the same, now, to node ID2 if named
 *
 * drain and replace are NodeCmd requests, the operator's alone
 * (coord/roles.c: signed with DIR/operator.key); `node` without one of
 * these words runs a storage node (node/main.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "cli/status.h"
#include "lib/log.h"
#include "net/keyfile.h"
#include "net/rpc.h"
#include "param.h"
#include "roles.h"

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog node add --az A|B|C [--id ID] [--dir DIR]\n"
    "       auralog node drain ID [--no-wait] [--dir DIR]\n"
    "       auralog node replace ID [--to ID2] [--no-wait] [--dir DIR]\n"
    "\n"
    "Change the storage nodes of a local cluster (the operator's: signed with\n"
    "DIR/operator.key). A protection group keeps two segments in each AZ;\n"
    "a segment moves only to a spare node of its AZ that hosts none of its PG.\n"
    "\n"
    "  add      start one more node in AZ A, B or C (id: the AZ's next free\n"
    "           number, e.g. A3), kept in cluster.json; it takes new volumes'\n"
    "           segments and is a spare for repairs, drains and replaces\n"
    "  drain    move every segment of node ID to spares; the old segment\n"
    "           serves until its replacement caught up and the writer uses\n"
    "           it (no stall); then the node is retired. Prints progress\n"
    "           until done (--no-wait: returns at once)\n"
    "  replace  the same, to node ID2 if --to names it\n"
    "\n"
    "Without an action, `auralog node` runs a storage node (auralog node --help).\n"
    "A node that stays down %d ms is repaired the same way by itself\n"
    "(auralog coord --repair-after).\n", REPAIR_AFTER_MS);
}

/* One NodeCmd; its answer, or dies with the coordinator's one line. */
static Env *node_cmd(const struct cluster *cl, const char *action, const char *node,
                     const char *to)
{
  char why[512];
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__NodeCmd nc = AURALOG__NODE_CMD__INIT;
  nc.action = (char *)action;
  nc.node = (char *)node;
  nc.to = (char *)to;
  req.body_case = AURALOG__ENVELOPE__BODY_NODE_CMD;
  req.node_cmd = &nc;
  Env *rep = rpc_once(cl->m[0].addr, &req, RPC_TIMEOUT_MS, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_NODE_CMD, why, sizeof why) != 0)
    die("node %s: %s", action, why);
  return rep;
}

static int cmd_move(struct cluster *cl, const char *action, const char *id, const char *to,
                    int wait)
{
  Env *rep = node_cmd(cl, action, id, to ? to : "");
  const Auralog__NodeCmd *r = rep->node_cmd;
  if (strcmp(r->state, "retired") == 0 && r->left == 0) {
    printf("node %s is retired: it hosts no segment\n", id);
    wire_free(rep);
    return 0;
  }
  printf("node %s: %s; %u of %u segment%s moved, %u moving%s%s\n", id, r->state,
         r->total - r->left, r->total, r->total == 1 ? "" : "s", r->moving,
         r->to[0] ? " to " : "", r->to);
  uint32_t last = r->left;
  wire_free(rep);
  if (!wait) {
    printf("not waiting (auralog node drain %s shows how far it is; auralog status too)\n", id);
    return 0;
  }
  /* A move finishes once its segment caught up and the writer uses it
   * (member.h M4): without a writer, nothing finishes; say so. */
  unsigned long long since = now_ms();
  for (;;) {
    usleep(500000);
    rep = node_cmd(cl, "show", id, "");
    r = rep->node_cmd;
    if (r->left != last || now_ms() - since >= 10000) {
      printf("node %s: %u of %u moved, %u moving\n", id, r->total - r->left, r->total,
             r->moving);
      fflush(stdout);
      since = now_ms();
      last = r->left;
    }
    int done = r->left == 0 && strcmp(r->state, "retired") == 0;
    wire_free(rep);
    if (done)
      break;
  }
  printf("node %s retired: every segment moved\n", id);
  return 0;
}

static int cmd_add(struct cluster *cl, const char *az, const char *id)
{
  char name[8], why[512];
  if (az == NULL || strlen(az) != 1 || az[0] < 'A' || az[0] >= 'A' + NAZ)
    die("node add: say --az A, B or C");
  if (cl->nnodes >= NODES_MAX)
    die("node add: the cluster has %d nodes already (at most %d)", cl->nnodes, NODES_MAX);
  if (id) {
    if (strlen(id) >= sizeof name || !wire_name_ok(id))
      die("node add: a node id is 1-7 of A-Z a-z 0-9 _ . - (got '%s')", id);
    snprintf(name, sizeof name, "%s", id);
  } else {
    for (int k = 1; k < 100; k++) {
      snprintf(name, sizeof name, "%c%d", az[0], k);
      int used = 0;
      for (int i = 0; i < cl->nnodes; i++)
        used |= strcmp(cl->node[i].name, name) == 0;
      if (!used)
        break;
    }
  }
  for (int i = 0; i < cl->n; i++)
    if (strcmp(cl->m[i].name, name) == 0)
      die("node add: the cluster has a member %s already", name);
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    die("node add: cannot find the auralog binary: %s", strerror(errno));
  self[len] = 0;
  snprintf(cl->node[cl->nnodes].name, sizeof cl->node[0].name, "%s", name);
  cl->node[cl->nnodes++].az = az[0];
  cluster_layout(cl);
  struct member *m = &cl->m[cl->n - 2];     /* the new node: the last before the engine */
  /* Kept first: `cluster down` stops it even if the start fails half way. */
  if (cluster_write_conf(cl) != 0)
    return 1;
  if (cluster_spawn(cl, m, self) < 0)
    die("node add: cannot start %s: %s", m->name, strerror(errno));
  if (cluster_wait_listening(cl, m, why, sizeof why) != 0 ||
      cluster_wait_nodes(cl, why, sizeof why) != 0)
    die("node add: %s", why);
  printf("node %s (AZ %s) started on %s, pid %d: a spare for AZ %s\n", m->name, m->az, m->addr,
         (int)m->pid, m->az);
  return 0;
}

int node_admin_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"dir", required_argument, 0, 'd'}, {"az", required_argument, 0, 'a'},
    {"id", required_argument, 0, 'i'}, {"to", required_argument, 0, 't'},
    {"no-wait", no_argument, 0, 'W'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *dir = NULL, *az = NULL, *id = NULL, *to = NULL;
  int wait = 1, o;
  const char *action = argv[0];
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'd': dir = optarg; break;
    case 'a': az = optarg; break;
    case 'i': id = optarg; break;
    case 't': to = optarg; break;
    case 'W': wait = 0; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  int add = strcmp(action, "add") == 0;
  const char *node = optind < argc ? argv[optind] : NULL;
  if (add && node)
    die("node add: unexpected argument '%s' (the id is --id ID)", node);
  if (!add && node == NULL)
    die("node %s: name the node (auralog node %s ID)", action, action);
  if (optind + 1 < argc)
    die("node %s: unexpected argument '%s'", action, argv[optind + 1]);
  if ((az || id) && !add)
    die("node %s: --%s is an option of `node add`", action, az ? "az" : "id");
  if (to && strcmp(action, "replace") != 0)
    die("node %s: --to is an option of `node replace`", action);
  if (add && (az == NULL || strlen(az) != 1 || az[0] < 'A' || az[0] >= 'A' + NAZ))
    die("node add: say --az A, B or C");
  static struct cluster cl;
  if (cluster_find(&cl, dir, 0, -1, -1, 0) <= 0)
    return 1;
  if (add)
    return cmd_add(&cl, az, id);
  return cmd_move(&cl, action, node, to, wait);
}
