/*
 * failover.c: `auralog failover [--to REPLICA]`, and asking the
 * coordinator who writes (failover.h). Promotion itself is the
 * coordinator's (coord/failover.c) and the replica's (vfs/promote.c):
 * this command asks the coordinator to choose a replica now, then waits
 * until it serves as the writer and prints how long that took.
 *
 * The old writer, if alive, is fenced by the new epoch (failover.c F2): it
 * learns it at its next lease probe or write and then refuses every
 * request; its replies waiting for a VDL fail as unknown outcomes. `auralog
 * cluster up` brings it back as a replica of the new writer.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "cli/failover.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "net/rpc.h"

Env *fo_writer(const char *coord, const char *volume, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__WriterReq wr = AURALOG__WRITER_REQ__INIT;
  wr.volume = (char *)volume;
  req.body_case = AURALOG__ENVELOPE__BODY_WRITER_REQ;
  req.writer_req = &wr;
  Env *rep = rpc_once(coord, &req, RPC_TIMEOUT_MS, why, whylen);
  if (rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_WRITER, why, whylen) != 0) {
    wire_free(rep);
    return NULL;
  }
  return rep;
}

int fo_writer_addr(const char *coord, const char *volume, char *out, size_t len, char *why,
                   size_t whylen)
{
  Env *rep = fo_writer(coord, volume, why, whylen);
  if (rep == NULL)
    return -1;
  int rc = rep->writer->addr[0] ? 0 : -1;
  if (rc == 0)
    snprintf(out, len, "%s", rep->writer->addr);
  else
    snprintf(why, whylen, "the coordinator knows no writer of volume %s", volume);
  wire_free(rep);
  return rc;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog failover [--to REPLICA] [--volume NAME] [--dir DIR | --coord ADDR]\n"
    "\n"
    "Promote a read replica to writer now (paper §4.3; Aurora fails over to a\n"
    "replica): the coordinator chooses REPLICA (its SQL address), or the\n"
    "replica furthest ahead, which takes the volume's next epoch, recovers it\n"
    "from storage and serves writes. The old writer is fenced by the new\n"
    "epoch; `auralog cluster up` brings it back as a replica. `auralog sql`\n"
    "finds the new writer through the coordinator.\n"
    "\n"
    "The coordinator also does this by itself when the writer stops probing\n"
    "its read lease for %d ms (auralog fault writer-crash, writer-stop),\n"
    "unless the cluster was started with `cluster up --no-failover`.\n"
    "\n"
    "  --to R         the replica to promote: its SQL address, or its name in\n"
    "                 the local cluster (R1, engine); default: the one furthest ahead\n"
    "  --volume NAME  the volume (default main)\n"
    "  --dir DIR      the cluster in DIR (default $AURALOG_DIR or ~/.auralog)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD, or the cluster's, or %s)\n",
    WRITER_LOST_MS, COORD_ADDR_DEFAULT);
}

int failover_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"to", required_argument, 0, 't'}, {"volume", required_argument, 0, 'v'},
    {"coord", required_argument, 0, 'c'}, {"dir", required_argument, 0, 'd'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *to = "", *volume = "main", *coord = NULL;
  int o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 't': to = optarg; break;
    case 'v': volume = optarg; break;
    case 'c': coord = optarg; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("failover: unexpected argument '%s' (see auralog failover --help)", argv[optind]);
  coord = addr_coord(coord);
  char why[512], toaddr[ADDR_MAX_LEN + 1];
  if (to[0] && strchr(to, ':') == NULL) {
    /* A member's name (R1, engine): its address in the local cluster. */
    static struct cluster cl;
    if (cluster_find(&cl, NULL, 0, -1, -1, 0) <= 0)
      exit(1);                 /* it said where it looked (a member's name needs one) */
    const struct member *m = NULL;
    if (strcmp(to, cl.m[cl.n - 1].name) == 0)
      m = &cl.m[cl.n - 1];
    for (int i = 0; i < cl.nrep && m == NULL; i++)
      if (strcmp(to, cl.rep[i].name) == 0)
        m = &cl.rep[i];
    if (m == NULL)
      die("failover: --to %s: no such member (engine, R1..R%d)", to, cl.nrep);
    snprintf(toaddr, sizeof toaddr, "%s", m->addr);
    to = toaddr;
  }
  unsigned long long t0 = now_ms();
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Failover f = AURALOG__FAILOVER__INIT;
  f.volume = (char *)volume;
  f.to = (char *)to;
  req.body_case = AURALOG__ENVELOPE__BODY_FAILOVER;
  req.failover = &f;
  Env *rep = rpc_once(coord, &req, RPC_TIMEOUT_MS, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_WRITER, why, sizeof why) != 0)
    die("failover: %s", why);
  char target[ADDR_MAX_LEN + 1], old[ADDR_MAX_LEN + 1];
  uint64_t from = rep->writer->if_epoch;
  snprintf(target, sizeof target, "%s", rep->writer->promoting);
  snprintf(old, sizeof old, "%s", rep->writer->addr);
  wire_free(rep);
  printf("promoting replica %s (writer was %s, epoch %llu)\n", target, old,
         (unsigned long long)from);
  fflush(stdout);
  /* Wait until the coordinator names it writer of a newer epoch and it
   * answers SQL. */
  unsigned long long deadline = t0 + PROMOTE_MS + WRITER_OPEN_MS;
  while (now_ms() < deadline) {
    Env *w = fo_writer(coord, volume, why, sizeof why);
    int done = w && w->writer->epoch > from && strcmp(w->writer->addr, target) == 0;
    int other = w && w->writer->epoch > from && !done;
    uint64_t epoch = w ? w->writer->epoch : 0;
    wire_free(w);
    if (other)
      die("failover: another writer took epoch %llu", (unsigned long long)epoch);
    if (done) {
      struct rpc r;
      if (rpc_open(&r, target, 1000, why, sizeof why) == 0) {
        rpc_close(&r);
        printf("writer %s at epoch %llu after %llu ms\n", target, (unsigned long long)epoch,
               now_ms() - t0);
        return 0;
      }
    }
    usleep(50000);
  }
  die("failover: %s did not become the writer within %d ms (see its log)", target,
      PROMOTE_MS + WRITER_OPEN_MS);
}
