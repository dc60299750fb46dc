/*
 * main.c: `auralog coord`, the coordinator's real driver: the core
 * (coord.h) on a libuv loop, netio (netio.h) for its conns, lmdb for its
 * metadata (meta.h), a timer for coord_tick, and the dashboard's HTTP
 * listener (coord/http.c). Nothing here decides anything.
 */
#include <getopt.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coord/coord.h"
#include "coord/http.h"
#include "journal.h"
#include "lib/addr.h"
#include "net/keyfile.h"
#include "lib/log.h"
#include "net/netio.h"
#include "param.h"
#include "roles.h"

struct driver {
  struct coord co;
  struct netio ni;
  uv_loop_t *loop;
  uv_timer_t tick;
  uv_signal_t sigterm, sigint;
  struct journal jn;
};

/* The core's journal lines, stamped with the wall clock (coord/journal.c). */
static void on_note(void *ctx, const char *kind, const char *fields)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  journal_append(ctx, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, kind,
                 fields);
}

static void on_msg(void *core, struct ep *e, const Env *env)
{
  coord_on_msg(core, e, env);
}

static void on_down(void *core, struct ep *e)
{
  coord_on_down(core, e);
}

static void on_signal(uv_signal_t *h, int sig)
{
  struct driver *d = h->data;
  loginfo("signal %d: stopping", sig);
  meta_close(&d->co.meta);
  exit(0);
}

static void on_tick(uv_timer_t *t)
{
  struct driver *d = t->data;
  coord_tick(&d->co);
  log_tick(now_ms());       /* repeated warnings' counts, when their window ends */
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog coord [--listen ADDR] [--data DIR] [--http ADDR|off] [--failover]\n"
    "                     [--operator FILE] [--repair-after MS]\n"
    "\n"
    "Run the coordinator (the control plane): it keeps volumes, protection\n"
    "groups, segment placement (2 per AZ on 6 distinct nodes) and writer\n"
    "epochs in lmdb, tracks which nodes are up, and answers status.\n"
    "\n"
    "  --listen ADDR  address to serve on (default $AURALOG_COORD or %s)\n"
    "  --data DIR     where the metadata lives (default ./coord)\n"
    "  --http ADDR    serve the live dashboard there (default: the --listen\n"
    "                 host, its port + %d); off: no dashboard\n"
    "  --failover     when a volume's writer stops probing its read lease for\n"
    "                 %d ms, promote its replica furthest ahead to writer\n"
    "                 (without it, only `auralog failover` promotes one)\n"
    "  --operator FILE  the operator's public key (DIR/operator.pub, made by\n"
    "                 `cluster up`), kept in --data for later starts: only\n"
    "                 the operator opens writers, drops volumes, injects\n"
    "                 faults and forces failovers (src/coord/roles.c)\n"
    "  --repair-after MS  a node silent this long has each of its segments\n"
    "                 moved to a spare node of its AZ (default %d; 0: never;\n"
    "                 src/coord/member.c)\n",
    COORD_ADDR_DEFAULT, HTTP_PORT_OFFSET, WRITER_LOST_MS, REPAIR_AFTER_MS);
}

int coord_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"listen", required_argument, 0, 'l'}, {"data", required_argument, 0, 'd'},
    {"http", required_argument, 0, 'H'}, {"failover", no_argument, 0, 'F'},
    {"operator", required_argument, 0, 'o'}, {"repair-after", required_argument, 0, 'r'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *listen = NULL, *data = "./coord", *http = NULL, *opf = NULL;
  int o, failover = 0;
  long repair_after = -1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'l': listen = optarg; break;
    case 'd': data = optarg; break;
    case 'H': http = optarg; break;
    case 'F': failover = 1; break;
    case 'o': opf = optarg; break;
    case 'r': {
      char *end = NULL;
      repair_after = strtol(optarg, &end, 10);
      if (end == optarg || *end || repair_after < 0 || repair_after > 86400000)
        die("coord: --repair-after must be a number of ms (0: never repair)");
      break;
    }
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("coord: unexpected argument '%s' (see auralog coord --help)", argv[optind]);
  listen = addr_coord(listen);
  log_role("coord");
  {
    char kwhy[PATH_MAX + 160];
    if (!key_auth_off() && key_get(kwhy, sizeof kwhy) == NULL)
      die("%s: %s", "coord", kwhy);
  }

  static struct driver d;
  char why[256], http_addr[ADDR_MAX_LEN + 16];
  if (http == NULL) {
    if (http_default_addr(listen, http_addr, sizeof http_addr, why, sizeof why) != 0)
      die("coord: %s", why);
    http = http_addr;
  }
  if (meta_open(&d.co.meta, data, why, sizeof why) != 0)
    die("coord: %s", why);
  {
    /* The key that signs epoch tickets: the coordinator's alone (auth.h). */
    char kp[PATH_MAX + 32];
    snprintf(kp, sizeof kp, "%s/signing.key", data);
    if (key_signer(kp, &d.co.signer, why, sizeof why) != 0)
      die("coord: %s", why);
  }
  {
    /* The operator's public key (roles.c): given, it is kept beside the
     * metadata; else the one kept there; else none (no operator: every
     * writer-open, drop and fault is refused, with the reason). */
    char kept[PATH_MAX + 32];
    snprintf(kept, sizeof kept, "%s/operator.pub", data);
    if (opf && op_pub_write(opf, kept, why, sizeof why) != 0)
      die("coord: %s", why);
    if (access(kept, F_OK) == 0) {
      if (op_pub_read(kept, d.co.op_pk, why, sizeof why) != 0)
        die("coord: %s", why);
      d.co.have_op_pk = 1;
    } else {
      logwarn("no operator key (--operator DIR/operator.pub): no writer can open a volume");
    }
  }
  d.loop = uv_default_loop();
  netio_init(&d.ni, d.loop, &d.co, on_msg, NULL, on_down);
  if (coord_init(&d.co, &d.ni.io, why, sizeof why) != 0)
    die("coord: %s", why);
  d.co.failover = failover;
  if (repair_after >= 0) {
    d.co.repair_after_ms = (unsigned long long)repair_after;
    d.co.repair_off = repair_after == 0;
  }
  {
    /* The event journal, MAC'd with the coordinator's own key, made
     * once in its data directory (journal.h): not the cluster key. */
    char jp[PATH_MAX + 32];
    snprintf(jp, sizeof jp, "%s/journal.jsonl", data);
    if (journal_open(&d.jn, jp, why, sizeof why) != 0)
      die("coord: %s", why);
    d.co.note = on_note;
    d.co.note_ctx = &d.jn;
    jn_start(&d.co);
  }
  if (netio_listen(&d.ni, listen, why, sizeof why) != 0)
    die("coord: %s", why);
  /* A dashboard that cannot listen fails the start, as --listen does: a
   * page silently missing would leave the student guessing. */
  if (strcmp(http, "off") != 0 &&
      http_listen(d.loop, http, coord_http_status, coord_http_sample, &d.co, why, sizeof why) != 0)
    die("coord: %s (--http off runs without it)", why);
  uv_timer_init(d.loop, &d.tick);
  d.tick.data = &d;
  uv_timer_start(&d.tick, on_tick, HEARTBEAT_MS, HEARTBEAT_MS);
  uv_signal_init(d.loop, &d.sigterm);
  uv_signal_init(d.loop, &d.sigint);
  d.sigterm.data = d.sigint.data = &d;
  uv_signal_start(&d.sigterm, on_signal, SIGTERM);
  uv_signal_start(&d.sigint, on_signal, SIGINT);
  signal(SIGPIPE, SIG_IGN);
  loginfo("coordinator serving on %s, data in %s: %zu node%s, %zu volume%s known",
          listen, data, d.co.nnodes, d.co.nnodes == 1 ? "" : "s", d.co.nvols,
          d.co.nvols == 1 ? "" : "s");
  if (strcmp(http, "off") != 0)
    loginfo("dashboard on http://%s/", http);
  return uv_run(d.loop, UV_RUN_DEFAULT);
}
