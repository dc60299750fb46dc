/*
 * replica.c: `auralog replica`, a read replica (paper §4.2.4).
 *
 * A read-only engine on the writer's volume: it shares the writer's
 * storage and adds no storage writes. It connects to the writer's SQL port
 * and subscribes to its record stream (vfs/feed.c: ReplicaHello, then a
 * ReplicaStart and ReplicaFeeds); the stream goes to the replica's volume
 * in the VFS (vfs/rvol.h), whose apply thread moves its read point a whole
 * MTR at a time, never above the VDL it was told, applying records only to
 * the pages it caches (vfs/rapply.h); every other page is read from one
 * segment at the read point. It serves read-only SQL on its own port with
 * the engine's own server (engine.c, worker.c, the sandbox): the same
 * loop, threads and statement timeout, over read-only connections; a
 * write is refused with a clear error.
 *
 * Here: the command line, the connection to the writer (hello, the stream
 * into rvol_push, acks of the read point after each move and every
 * ENGINE_STAT_MS, reconnecting every REPLICA_RETRY_MS), and following a
 * stream that broke (rvol.h R4: subscribe again, start over from storage).
 * The writer never waits for it (feed.c R5); it reports its read point,
 * lag and minimum read point through the writer (status, the PGMRPL).
 * It also beats to the coordinator (vfs/promote.c), which tells it when
 * the writer moved (follow the new one) or that it is the new writer
 * (failover: it becomes `auralog engine`).
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/keyfile.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "net/net.h"
#include "param.h"
#include "roles.h"
#include "vfs/engine_int.h"
#include "vfs/rvol.h"
#include "vfs/vfs.h"
#include "net/wire.h"

static struct {
  char addr[ADDR_MAX_LEN + 1];    /* where it serves SQL */
  struct conn *w;                 /* to the writer (NULL: none) */
  unsigned long long retry_at;
  uv_async_t applied;             /* the apply thread moved the read point */
  uv_timer_t tick;
  int subscribed;                 /* a hello went on w */
} R;

/* Its read transactions, for the writer's status (the read-age rule,
 * vfs/rvol.h), and its lag sample. */
static void ack_readers(Auralog__ReplicaAck *a, const struct rvol_stats *st)
{
  static char holder[64];
  snprintf(holder, sizeof holder, "%s", st->holder);
  a->oldest_echo_us = rvol_take_echo(E.rvol);
  a->holder = holder;
  a->held_ms = st->held_ms;
  a->readers = (uint32_t)st->readers;
  a->cancelled = st->expired;
  a->warned = st->warned;
  a->max_read_age_ms = (uint32_t)st->max_age_ms;
  a->read_age_warn = st->warn;
}

static void send_ack(void)
{
  if (R.w == NULL || !R.w->connected || !R.subscribed)
    return;
  struct rvol_stats st;
  rvol_get_stats(E.rvol, &st);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReplicaAck a = AURALOG__REPLICA_ACK__INIT;
  a.applied = st.rp;
  a.echo_us = st.echo_us;
  /* Every read is at the read point (rvol.h R3: it moves only while no
   * reader is in), so that is the oldest point it may still read at. */
  a.min_read_point = st.rp;
  a.resyncs = st.resyncs;
  ack_readers(&a, &st);
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_ACK;
  env.replica_ack = &a;
  conn_send(R.w, &env);
}

static void on_writer_msg(struct conn *c, const Env *env)
{
  (void)c;
  switch (env->body_case) {
  case AURALOG__ENVELOPE__BODY_REPLICA_START:
  case AURALOG__ENVELOPE__BODY_REPLICA_FEED:
    rvol_push(E.rvol, env);
    break;
  case AURALOG__ENVELOPE__BODY_ERROR:
    logwarn_rl("replica: the writer at %s refused: %s", E.writer, env->error->msg);
    break;
  default:
    break;
  }
}

static void on_writer_close(struct conn *c)
{
  if (R.w == c) {
    R.w = NULL;
    R.subscribed = 0;
    R.retry_at = now_ms() + REPLICA_RETRY_MS;
    rvol_unsubscribed(E.rvol);   /* the next stream starts over (R4) */
    logwarn_rl("replica: lost the writer at %s; trying again every %d ms", E.writer,
               REPLICA_RETRY_MS);
  }
}

static void on_writer_up(struct conn *c, int status)
{
  if (status != 0 || c != R.w)
    return;                      /* on_writer_close follows a failure */
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReplicaHello h = AURALOG__REPLICA_HELLO__INIT;
  h.volume = E.volume;
  h.addr = R.addr;
  env.req = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_HELLO;
  env.replica_hello = &h;
  if (conn_send(c, &env) == 0)
    R.subscribed = 1;
}

static void connect_writer(void)
{
  if (R.w || now_ms() < R.retry_at)
    return;
  R.w = net_connect(E.loop, E.writer, on_writer_up, on_writer_msg, on_writer_close, NULL);
  if (R.w == NULL)
    R.retry_at = now_ms() + REPLICA_RETRY_MS;
}

/* The read point moved, or the stream broke. */
static void on_applied_loop(uv_async_t *h)
{
  (void)h;
  struct rvol_stats st;
  rvol_get_stats(E.rvol, &st);
  if (st.want_resync && R.w && R.subscribed) {
    /* R4: drop this stream; the next hello gets a new start. */
    logwarn("replica: %s; subscribing again", st.why);
    conn_close(R.w);             /* on_writer_close: reconnect soon */
    R.retry_at = now_ms();
    return;
  }
  send_ack();
}

static void on_applied(void *arg)
{
  (void)arg;
  uv_async_send(&R.applied);     /* called on the apply thread */
}

/* promote.c: the coordinator names another writer (a failover): drop the
 * stream from the old one and subscribe to the new one at once. */
void replica_writer_moved(void)
{
  R.retry_at = now_ms();
  if (R.w)
    conn_close(R.w);             /* on_writer_close: the next stream starts over (R4) */
  else
    connect_writer();
}

static void on_tick(uv_timer_t *t)
{
  (void)t;
  promote_tick();                /* beat to the coordinator; follow or become the writer */
  connect_writer();
  send_ack();                    /* the writer hears from it while idle too */
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog replica [--volume NAME] [--listen ADDR] [--engine ADDR] [--coord ADDR]\n"
    "                       [--cache PAGES] [--statement-timeout MS]\n"
    "                       [--max-read-age MS] [--read-age-action cancel|warn]\n"
    "\n"
    "Run a read replica (paper §4.2.4): a read-only engine on the writer's\n"
    "volume. It shares the writer's storage and writes nothing to it: it\n"
    "follows the writer's redo stream, applying a whole mini-transaction at a\n"
    "time, only at or below the VDL, only to the pages it caches; other pages\n"
    "are read from storage at its read point. Its reads lag the writer's by\n"
    "its replica lag (auralog status). Writes are refused.\n"
    "\n"
    "  --volume NAME  the volume (default main)\n"
    "  --listen ADDR  address for SQL clients (default %s)\n"
    "  --engine ADDR  the writer to follow (default $AURALOG_ENGINE or %s)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD or %s)\n"
    "  --cache PAGES  buffer cache size in pages (default %d)\n"
    "  --statement-timeout MS\n"
    "                 interrupt a request still running after MS ms (default %d;\n"
    "                 0: never); a long reader also holds the replica's read\n"
    "                 point back (its lag grows meanwhile)\n"
    "  --max-read-age MS\n"
    "                 how long one read transaction may hold the replica's read\n"
    "                 point, and with it the volume's PGMRPL and every storage\n"
    "                 node's GC (default %d; 0: no limit)\n"
    "  --read-age-action cancel|warn\n"
    "                 past it: cancel the transaction (its next statement fails,\n"
    "                 and the point moves on; default) or only warn (log and\n"
    "                 status; the point, lag and GC wait for it, however long)\n",
    REPLICA_ADDR_DEFAULT, ENGINE_ADDR_DEFAULT, COORD_ADDR_DEFAULT, CACHE_PAGES,
    STATEMENT_TIMEOUT_MS, REPLICA_MAX_READ_AGE_MS);
}

/* --max-read-age MS (o 'M') or --read-age-action cancel|warn ('A'). */
static void read_age_opt(int o, const char *v, int *max_age, int *warn)
{
  if (o == 'A') {
    if (strcmp(v, "cancel") && strcmp(v, "warn"))
      die("replica: --read-age-action is cancel or warn, not '%s'", v);
    *warn = strcmp(v, "warn") == 0;
    return;
  }
  char *end;
  long ms = strtol(v, &end, 10);
  if (end == v || *end || ms < 0 || ms > 86400000)
    die("replica: --max-read-age is a number of ms from 0 (no limit) to 86400000, not '%s'",
        v);
  *max_age = (int)ms;
}

int replica_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"volume", required_argument, 0, 'v'}, {"listen", required_argument, 0, 'l'},
    {"coord", required_argument, 0, 'c'}, {"engine", required_argument, 0, 'e'},
    {"cache", required_argument, 0, 'C'}, {"statement-timeout", required_argument, 0, 'T'},
    {"max-read-age", required_argument, 0, 'M'},
    {"read-age-action", required_argument, 0, 'A'},
    {"help", no_argument, 0, 'h'}, {0}};
  int max_age = REPLICA_MAX_READ_AGE_MS, warn = 0;
  const char *volume = "main", *listen = REPLICA_ADDR_DEFAULT, *coord = NULL;
  const char *writer = getenv("AURALOG_ENGINE");
  long cache = CACHE_PAGES;
  int o;
  E.timeout_ms = STATEMENT_TIMEOUT_MS;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'v': volume = optarg; break;
    case 'l': listen = optarg; break;
    case 'c': coord = optarg; break;
    case 'e': writer = optarg; break;
    case 'C': cache = engine_opt_cache("replica", optarg); break;
    case 'T': E.timeout_ms = engine_opt_timeout("replica", optarg); break;
    case 'M':
    case 'A':
      read_age_opt(o, optarg, &max_age, &warn);
      break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("replica: unexpected argument '%s' (see auralog replica --help)", argv[optind]);
  if (writer == NULL || !*writer)
    writer = ENGINE_ADDR_DEFAULT;
  if (!wire_name_ok(volume))
    die("replica: '%s' is not a volume name", volume);
  coord = addr_coord(coord);
  char why[PATH_MAX + 160];
  struct sockaddr_in sa;
  if (addr_parse(listen, &sa, why, sizeof why) != 0 ||
      addr_parse(coord, &sa, why, sizeof why) != 0 ||
      addr_parse(writer, &sa, why, sizeof why) != 0)
    die("replica: %s", why);
  log_role("replica");
  signal(SIGPIPE, SIG_IGN);
  if (!key_auth_off() && key_get(why, sizeof why) == NULL)
    die("replica: %s", why);
  snprintf(R.addr, sizeof R.addr, "%s", listen);
  promote_start(listen);
  E.coord = coord;
  E.writer = writer;
  E.reads_immediate = 1;         /* nothing it serves waits: it is all at or below a VDL */
  pthread_mutex_init(&E.lmu, NULL);
  snprintf(E.volume, sizeof E.volume, "%s", volume);
  snprintf(E.uri, sizeof E.uri, "file:%s?vfs=auralog&coord=%s", volume, coord);
  engine_wait_port(listen);
  if (auralog_vfs_register(0, listen, 1) != SQLITE_OK)
    die("replica: cannot register the auralog VFS");
  E.loop = uv_default_loop();
  uv_async_init(E.loop, &R.applied, on_applied_loop);
  E.rvol = rvol_open(coord, volume, (size_t)cache, on_applied, NULL, why, sizeof why);
  if (E.rvol == NULL)
    die("replica: cannot open volume %s: %s", volume, why);
  rvol_set_read_age(E.rvol, max_age, warn);
  if ((E.root = open_db()) == NULL)
    die("replica: cannot open volume %s (see the log above)", volume);
  uv_timer_init(E.loop, &R.tick);
  uv_timer_start(&R.tick, on_tick, 0, ENGINE_STAT_MS);
  loginfo("replica of volume %s: following the writer at %s", volume, writer);
  return engine_serve(listen);
}
