/*
 * sqlcli.c: `auralog sql [--engine ADDR] [SQL]`: a SQL client of the engine.
 *
 * With SQL, runs it and prints the rows as sqlite3's list mode (a|b); the
 * exit status is 0 only when the statements succeeded and, for a write,
 * the engine answered, which it does once the commit is durable
 * (vdl >= commit LSN). Without SQL, reads statements from standard input:
 * an interactive shell on a terminal, a script otherwise.
 *
 * Finding the writer: without --engine (or $AURALOG_ENGINE), the
 * coordinator says who writes the volume now, so after a failover the
 * client follows the new writer (coord/failover.c). A statement whose
 * answer never came (the writer crashed, or was fenced, with the
 * statement in flight) has an unknown outcome: it may have committed (a
 * new writer's recovery keeps a commit that reached a write quorum) or
 * not. The client says so and exits with status 3, so that a script can
 * tell "failed" (1) from "unknown" (3) and check before retrying. A
 * request that could not even be sent whole did not run (failed). The
 * shell, after a statement the writer left unanswered or refused as
 * fenced, asks the coordinator again and goes on with the new writer.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <getopt.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/conf.h"
#include "failover.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "rpc.h"

#define SQL_TIMEOUT_MS 120000   /* a long statement may take a while */

static int show_lsn;

/* An answer that says its commit's outcome is unknown (vfs/engine.c
 * not_durable: shipped, neither acknowledged nor refused)? */
static int unknown_outcome(const char *why)
{
  return strstr(why, "not durable") != NULL;
}

/* Run sql on the engine; print rows or the error. Returns 0 on success,
 * -1 on failure (-3: the engine was fenced, nothing ran), -2 if the
 * outcome is unknown (said on stderr). */
static int run(struct rpc *r, const char *sql)
{
  char why[512];
  Env *rep = rpc_query(r, sql, SQL_TIMEOUT_MS, why, sizeof why);
  if (rep == NULL && strstr(why, "cannot send")) {
    /* Not even sent whole (the connection was gone): nothing ran. */
    errmsg("engine: %s: the statement did not run", why);
    return -3;
  }
  if (rep == NULL) {
    errmsg("engine: %s: the statement's outcome is unknown (it was sent, no answer came: if "
           "it committed and reached a write quorum the next writer keeps it; check before "
           "retrying)", why);
    return -2;
  }
  int rc = rpc_expect(rep, AURALOG__ENVELOPE__BODY_ROWS, why, sizeof why);
  if (rc != 0) {
    errmsg("%s%s", why, unknown_outcome(why) ? " (outcome unknown)" : "");
    if (unknown_outcome(why))
      rc = -2;
  } else {
    const Auralog__Rows *rows = rep->rows;
    for (size_t i = 0; i < rows->n_rows; i++) {
      for (size_t k = 0; k < rows->rows[i]->n_values; k++)
        printf("%s%s", k ? "|" : "", rows->rows[i]->values[k]->text);
      putchar('\n');
    }
    if (show_lsn && rows->commit_lsn)
      printf("-- durable at lsn %llu\n", (unsigned long long)rows->commit_lsn);
  }
  fflush(stdout);
  wire_free(rep);
  /* -3: refused by a writer that a newer one fenced (nothing ran). */
  return rc == -2 ? -2 : rc && strstr(why, "fenced by epoch") ? -3 : rc ? -1 : 0;
}

/* The engine closes a connection silent for IDLE_MS (net.c): a shell left
 * open that long connects again before its next statement, rather than
 * find the connection gone after sending it (when it could not tell
 * whether the statement ran). */
static void fresh(struct rpc *r, unsigned long long *last)
{
  char why[256], addr[sizeof r->addr];
  if (now_ms() - *last < IDLE_MS / 2)
    return;
  snprintf(addr, sizeof addr, "%s", r->addr);
  rpc_close(r);
  if (rpc_open(r, addr, 2000, why, sizeof why) != 0)
    die("sql: %s", why);
  *last = now_ms();
}

static int follow;             /* the writer came from the coordinator: follow it */

/* The shell's statement had no answer (the writer went away): find the
 * writer the coordinator names now (after a failover, another) for the
 * next statement, for up to WRITER_OPEN_MS + WRITER_LOST_MS. */
static void refollow(struct rpc *r)
{
  char addr[ADDR_MAX_LEN + 1], why[256];
  rpc_close(r);
  unsigned long long t0 = now_ms();
  while (now_ms() - t0 < WRITER_OPEN_MS + WRITER_LOST_MS) {
    if (fo_writer_addr(addr_coord(NULL), "main", addr, sizeof addr, why, sizeof why) == 0 &&
        rpc_open(r, addr, 1000, why, sizeof why) == 0) {
      errmsg("-- connected to the writer at %s", addr);
      return;
    }
    usleep(200000);
  }
  die("sql: no writer answers (%s)", why);
}

static int shell(struct rpc *r)
{
  unsigned long long last = now_ms();
  int tty = isatty(0), failed = 0;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap), line[8192];
  if (tty)
    printf("auralog sql shell: statements end with ';'. .quit to leave.\n");
  for (;;) {
    if (tty) {
      fputs(len ? "   ...> " : "auralog> ", stdout);
      fflush(stdout);
    }
    if (fgets(line, sizeof line, stdin) == NULL)
      break;
    if (len == 0 && line[0] == '.') {
      if (!strncmp(line, ".quit", 5) || !strncmp(line, ".exit", 5))
        break;
      printf(".quit  leave\n.lsn   show the commit LSN after each write\n");
      if (!strncmp(line, ".lsn", 4))
        show_lsn = !show_lsn;
      continue;
    }
    size_t n = strlen(line);
    if (len + n + 1 > cap) {
      while (len + n + 1 > cap)
        cap *= 2;
      buf = realloc(buf, cap);
    }
    memcpy(buf + len, line, n + 1);
    len += n;
    if (sqlite3_complete(buf)) {
      fresh(r, &last);
      int rc = run(r, buf);
      if ((rc == -2 || rc == -3) && follow)
        refollow(r);             /* the writer went away, or was fenced: another writes */
      failed |= rc == -2 ? 2 : rc != 0;
      last = now_ms();
      len = 0;
      buf[0] = 0;
    }
  }
  if (len && strspn(buf, " \t\r\n") != len) {
    int rc = run(r, buf);         /* a last statement without ';' */
    failed |= rc == -2 ? 2 : rc != 0;
  }
  free(buf);
  return failed;
}

/* Read replica n's address (`cluster up --replicas`): from cluster.json
 * in $AURALOG_DIR (or ~/.auralog), else the default ports. */
static void replica_addr(int n, char *out, size_t len)
{
  int port = 0;
  sscanf(strrchr(REPLICA_ADDR_DEFAULT, ':') + 1, "%d", &port);
  snprintf(out, len, "127.0.0.1:%d", port + n - 1);
  cJSON *o = conf_load(NULL), *m;
  if (o == NULL)
    return;
  int seen = 0;
  cJSON_ArrayForEach(m, cJSON_GetObjectItem(o, "members")) {
    cJSON *role = cJSON_GetObjectItem(m, "role"), *addr = cJSON_GetObjectItem(m, "addr");
    if (cJSON_IsString(role) && strcmp(role->valuestring, "replica") == 0 &&
        cJSON_IsString(addr) && ++seen == n)
      snprintf(out, len, "%s", addr->valuestring);
  }
  cJSON_Delete(o);
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog sql [--dir DIR] [--engine ADDR] [--replica [N]] [--lsn] [SQL]\n"
    "\n"
    "Run SQL on the engine and print rows as a|b. Without SQL, read\n"
    "statements from standard input (an interactive shell on a terminal).\n"
    "A write returns only once its commit is durable (vdl >= commit LSN).\n"
    "\n"
    "  --engine ADDR  the engine (default $AURALOG_ENGINE or %s)\n"
    "  --dir DIR      the cluster in DIR (default $AURALOG_DIR or ~/.auralog):\n"
    "                 its cluster.json names the coordinator and the replicas\n"
    "  --replica [N]  ask read replica N (default 1) of the cluster instead\n"
    "                 (`cluster up --replicas`): reads only, as of its read\n"
    "                 point (auralog status shows its lag)\n"
    "  --lsn          after a write, print the LSN at which it became durable\n"
    "\n"
    "Without --engine, the coordinator ($AURALOG_COORD, or the cluster's, or\n"
    "%s) names the\n"
    "writer of volume main (after a failover, a former replica). Exit status:\n"
    "0 done (a write durable), 1 failed, 3 outcome unknown (the writer went\n"
    "away or was fenced with the statement in flight: it may have committed).\n",
    ENGINE_ADDR_DEFAULT, COORD_ADDR_DEFAULT);
}

int sql_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"engine", required_argument, 0, 'e'}, {"lsn", no_argument, 0, 'n'},
    {"replica", no_argument, 0, 'r'}, {"dir", required_argument, 0, 'd'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *engine = getenv("AURALOG_ENGINE");
  int o, replica = 0, engine_given = 0;
  char raddr[ADDR_MAX_LEN + 1];
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'e': engine = optarg; engine_given = 1; break;
    case 'r':
      replica = 1;
      /* --replica N: a number right after it names the replica. */
      if (optind < argc && argv[optind][0] && strspn(argv[optind], "0123456789") ==
          strlen(argv[optind])) {
        replica = atoi(argv[optind++]);
        if (replica < 1 || replica > REPLICAS_MAX)
          die("sql: --replica N is a replica from 1 to %d", REPLICAS_MAX);
      }
      break;
    case 'n': show_lsn = 1; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (replica && !engine_given) {
    replica_addr(replica, raddr, sizeof raddr);
    engine = raddr;
  }
  char waddr[ADDR_MAX_LEN + 1], fwhy[256];
  if ((engine == NULL || !*engine) &&
      fo_writer_addr(addr_coord(NULL), "main", waddr, sizeof waddr, fwhy, sizeof fwhy) == 0)
  {
    engine = waddr;            /* the writer the coordinator names (failover) */
    follow = 1;
  }
  if (engine == NULL || !*engine)
    engine = ENGINE_ADDR_DEFAULT;
  if (optind + 1 < argc)
    die("sql: give the SQL as one argument (quote it)");
  struct rpc r;
  char why[256];
  /* A writer just promoted is named from the moment it takes its epoch and
   * listens once its recovery is done: give it a moment. */
  int rc0 = rpc_open(&r, engine, 2000, why, sizeof why);
  for (unsigned long long t0 = now_ms(); rc0 != 0 && engine == waddr && now_ms() - t0 < 3000;) {
    usleep(100000);
    if (fo_writer_addr(addr_coord(NULL), "main", waddr, sizeof waddr, fwhy, sizeof fwhy) == 0)
      rc0 = rpc_open(&r, engine, 2000, why, sizeof why);
  }
  if (rc0 != 0)
    die("sql: %s%s", why,
        rpc_key_trouble(why) ? "" : " (is the engine running? try: auralog cluster up)");
  int rc = optind < argc ? run(&r, argv[optind]) : shell(&r);
  rpc_close(&r);
  return rc == -2 || rc == 2 || rc == 3 ? 3 : rc ? 1 : 0;
}
