/*
 * main.c: `auralog node`, the storage node's real driver.
 *
 * It runs the node's core (node.h) on a libuv loop: netio (netio.h)
 * turns TCP conns into the core's endpoints and messages, the store is
 * lmdb (store.h, kv.h), and three libuv handles make the core's other
 * events: a check handle ends every loop turn (node_end_turn: the group
 * commit), and two timers heartbeat (node_heartbeat) and gossip
 * (gossip_tick). Nothing here decides anything about the protocol.
 */
#include <getopt.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/addr.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "net/netio.h"
#include "node/nbkdrv.h"
#include "node/node.h"
#include "param.h"
#include "roles.h"

struct driver {
  struct node n;
  struct netio ni;
  uv_loop_t *loop;
  uv_timer_t heartbeat, gossip;
  uv_check_t commit;
  uv_signal_t sigterm, sigint;
};

static void on_msg(void *core, struct ep *e, const Env *env)
{
  node_on_msg(core, e, env);
}

static void on_up(void *core, struct ep *e)
{
  node_on_up(core, e);
}

static void on_down(void *core, struct ep *e)
{
  node_on_down(core, e);
}

static void on_commit(uv_check_t *h)
{
  struct driver *d = h->data;
  node_end_turn(&d->n);
}

static void on_heartbeat(uv_timer_t *t)
{
  struct driver *d = t->data;
  node_heartbeat(&d->n);
  log_tick(now_ms());       /* repeated warnings' counts, when their window ends */
}

static void on_gossip(uv_timer_t *t)
{
  struct driver *d = t->data;
  gossip_tick(&d->n);
}

static void on_signal(uv_signal_t *h, int sig)
{
  struct driver *d = h->data;
  loginfo("signal %d: stopping (unacknowledged writes are dropped)", sig);
  store_shutdown(&d->n.st);  /* a checkpoint: the next start replays nothing */
  /* _exit, not exit: the backup's thread (nbkdrv.c) may be inside the
   * object store's client (curl, libxml2) at this moment, and exit()
   * would run the libraries' destructors under it. A node stopped just as
   * it took over a PG's staging (rule U) crashed so, under ASan, in
   * it_backup. Nothing else is left to do: the store is checkpointed and
   * closed, and stdio is flushed here. */
  fflush(NULL);
  _exit(0);
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog node --az A|B|C [--id ID] [--listen ADDR] [--coord ADDR] [--data DIR]\n"
    "       auralog node add|drain|replace ...  (a cluster's nodes: auralog node drain --help)\n"
    "\n"
    "Run a storage node: it hosts segments of protection groups in lmdb,\n"
    "acknowledges each batch of redo records once it is on disk, with the\n"
    "segment's SCL, and serves pages as of a read point.\n"
    "\n"
    "  --az A|B|C     availability zone of this node (required)\n"
    "  --id ID        node name (default: AZ and port, e.g. A-7401)\n"
    "  --listen ADDR  address to serve on (default 127.0.0.1:%d)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD or %s)\n"
    "  --data DIR     where the segments live (default ./node-ID)\n"
    "  --no-hot-log   acknowledge each group commit from lmdb's own synced\n"
    "                 commit (two device flushes) instead of from the hot log,\n"
    "                 an append-only log flushed once per group commit (paper\n"
    "                 §3.3 steps 1-2; lmdb then commits at checkpoints); also\n"
    "                 AURALOG_HOT_LOG=0, which `cluster up` passes on\n"
    "  --backup URL   stage this node's PGs to an object store (paper Fig. 4\n"
    "                 step 6): a directory, or s3://BUCKET[/PREFIX] with\n"
    "                 AURALOG_S3_ENDPOINT and AWS_ACCESS_KEY_ID/_SECRET_ACCESS_KEY;\n"
    "                 its nodes then free no record the backup still needs\n",
    NODE_PORT_BASE, COORD_ADDR_DEFAULT);
}

int node_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"az", required_argument, 0, 'z'}, {"id", required_argument, 0, 'i'},
    {"listen", required_argument, 0, 'l'}, {"coord", required_argument, 0, 'c'},
    {"data", required_argument, 0, 'd'}, {"hot-log", no_argument, 0, 'H'},
    {"no-hot-log", no_argument, 0, 'N'}, {"backup", required_argument, 0, 'b'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *az = NULL, *id = NULL, *coord = NULL, *data = NULL, *backup = NULL;
  const char *hotenv = getenv("AURALOG_HOT_LOG");
  int hot = !(hotenv && strcmp(hotenv, "0") == 0);   /* on unless told off */
  char listen[ADDR_MAX_LEN + 1];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", NODE_PORT_BASE);
  int o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'z': az = optarg; break;
    case 'i': id = optarg; break;
    case 'l': snprintf(listen, sizeof listen, "%s", optarg); break;
    case 'c': coord = optarg; break;
    case 'd': data = optarg; break;
    case 'H': hot = 1; break;  /* the default; kept for scripts that name it */
    case 'N': hot = 0; break;
    case 'b': backup = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("node: unexpected argument '%s' (see auralog node --help)", argv[optind]);
  if (az == NULL)
    die("node: --az A|B|C is required (see auralog node --help)");
  if (!(az[0] >= 'A' && az[0] < 'A' + NAZ && az[1] == 0))
    die("node: --az must be A, B or C, not '%s'", az);

  static struct driver d;
  char why[256], idbuf[NAME_MAX_LEN + 1], databuf[512];
  struct sockaddr_in sa;
  if (addr_parse(listen, &sa, why, sizeof why) != 0)
    die("node: %s", why);
  if (id == NULL) {
    snprintf(idbuf, sizeof idbuf, "%s-%s", az, strrchr(listen, ':') + 1);
    id = idbuf;
  }
  if (!wire_name_ok(id))
    die("node: id '%s' must be 1-%d of A-Z a-z 0-9 _ . -", id, NAME_MAX_LEN);
  if (data == NULL) {
    snprintf(databuf, sizeof databuf, "./node-%s", id);
    data = databuf;
  }
  coord = addr_coord(coord);
  if (addr_parse(coord, &sa, why, sizeof why) != 0)
    die("node: coordinator %s", why);
  log_role(id);
  {
    char kwhy[PATH_MAX + 160];
    if (!key_auth_off() && key_get(kwhy, sizeof kwhy) == NULL)
      die("%s: %s", "node", kwhy);
  }

  d.loop = uv_default_loop();
  netio_init(&d.ni, d.loop, &d.n, on_msg, on_up, on_down);
  if (store_open(&d.n.st, data, hot, why, sizeof why) != 0)
    die("node: %s", why);
  {
    /* The node's identity: the key pair of its data directory (auth.h). */
    char kp[PATH_MAX + 32];
    snprintf(kp, sizeof kp, "%s/identity.key", data);
    if (key_signer(kp, &d.n.ident, why, sizeof why) != 0)
      die("node: %s", why);
  }
  /* Every conn but the coordinator's counts into ni.count: the engine's
   * and peers' (gossip) traffic, which is what a benchmark weighs. */
  if (netio_listen(&d.ni, listen, why, sizeof why) != 0)
    die("node: %s", why);
  if (node_init(&d.n, &d.ni.io, id, az, listen, coord, &d.ni.count, &d.ni.coord_count,
                why, sizeof why) != 0)
    die("node: %s", why);
  /* When this process started, for the labs' evidence (a restarted node
   * says so itself: lab/check.c). Wall time, kept out of the sans-I/O core. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  d.n.started_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
  /* A measurement switch (node.h no_gc): disk use without GC, for the
   * storage test's figures. Said loudly: a node that never frees fills
   * its disk. */
  if (getenv("AURALOG_NO_GC") && strcmp(getenv("AURALOG_NO_GC"), "1") == 0) {
    d.n.no_gc = 1;
    logwarn("AURALOG_NO_GC=1: this node never frees records or page versions "
            "(a measurement switch; its disk use only grows)");
  }
  static struct nbkdrv bk;
  if (backup && nbkdrv_start(&bk, d.loop, &d.n, backup, why, sizeof why) != 0)
    die("node: backup: %s", why);
  uv_check_init(d.loop, &d.commit);
  d.commit.data = &d;
  uv_check_start(&d.commit, on_commit);
  uv_timer_init(d.loop, &d.heartbeat);
  uv_timer_init(d.loop, &d.gossip);
  d.heartbeat.data = d.gossip.data = &d;
  uv_timer_start(&d.heartbeat, on_heartbeat, HEARTBEAT_MS, HEARTBEAT_MS);
  uv_timer_start(&d.gossip, on_gossip, GOSSIP_MS, GOSSIP_MS);
  uv_signal_init(d.loop, &d.sigterm);
  uv_signal_init(d.loop, &d.sigint);
  d.sigterm.data = d.sigint.data = &d;
  uv_signal_start(&d.sigterm, on_signal, SIGTERM);
  uv_signal_start(&d.sigint, on_signal, SIGINT);
  signal(SIGPIPE, SIG_IGN);

  loginfo("node %s (AZ %s) serving on %s, data in %s, %zu segment%s", d.n.id, d.n.az,
          listen, data, d.n.nsegs, d.n.nsegs == 1 ? "" : "s");
  for (size_t i = 0; i < d.n.nsegs; i++)
    loginfo("  volume %llu pg %u: scl %llu, epoch %llu",
            (unsigned long long)d.n.segs[i]->volume_id, d.n.segs[i]->pg,
            (unsigned long long)d.n.segs[i]->scl, (unsigned long long)d.n.segs[i]->epoch);
  return uv_run(d.loop, UV_RUN_DEFAULT);
}
