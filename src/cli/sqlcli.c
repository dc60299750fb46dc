/*
 * sqlcli.c: `auralog sql [--engine ADDR | --replica [N]] [--wait S] [SQL]`:
 * a SQL client of the writer (or of a read replica).
 *
 * With SQL, runs it and prints the rows as sqlite3's list mode (a|b); the
 * exit status is 0 only when the statements succeeded and, for a write,
 * the writer answered, which it does once the commit is durable
 * (vdl >= commit LSN). Without SQL, reads statements from standard input:
 * an interactive shell on a terminal, a script otherwise.
 *
 * Finding whom to ask, by role (locate.h): without --engine (or
 * $AURALOG_ENGINE) the coordinator names the writer at the moment the
 * statement goes, so after a failover the client follows the new writer;
 * --replica asks it for the replicas serving reads now, never a name from
 * cluster.json (which only `cluster up` rewrites: after failovers it may
 * name the writer, a fenced old writer, or a member that is down).
 *
 * Waiting through a failover: a failover takes seconds (the coordinator
 * notices the writer's silence after WRITER_LOST_MS, the replica it
 * promotes recovers the volume before it listens). Giving up sooner than
 * that turns a failover into lost work, so the client keeps asking the
 * coordinator for the writer for up to --wait seconds (SQL_WAIT_MS by
 * default), saying on stderr why it waits, and says what it found when it
 * gives up (no cluster, no writer, a writer that refuses).
 *
 * What may be sent again, and what may not (the rule that keeps a commit
 * from happening twice). A statement whose answer never came, or came as
 * "not durable", has an unknown outcome if it may write: it may have
 * committed (a new writer's recovery keeps a commit that reached a write
 * quorum) or not. It is never sent again; the client says so and exits 3,
 * so that a script can tell "failed" (1) from "unknown" (3) and check
 * before retrying. What certainly did not run is sent again to the writer
 * the coordinator names next: a request that could not be sent whole, and
 * one a writer refused before running it (fenced by a newer epoch, or its
 * read lease expired: worker.c refuse()). A read-only statement (SELECT,
 * VALUES, EXPLAIN) changes nothing, so it is asked again too and never
 * reports an unknown outcome. In the shell, a connection lost with a
 * transaction open loses that transaction: nothing of the session is sent
 * again on a new connection (it would run outside the transaction).
 *
 * Exit status: 0 done; 1 the statement failed (an error answer); 2 nothing
 * ran: no cluster, no writer or replica answered within --wait (also a
 * bad command line); 3 a write's outcome is unknown.
 */
#include <ctype.h>
#include <getopt.h>
#include <poll.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lib/addr.h"
#include "lib/conf.h"
#include "lib/log.h"
#include "cli/locate.h"
#include "cli/sqlwords.h"
#include "param.h"
#include "roles.h"
#include "net/rpc.h"

#define SQL_TIMEOUT_MS 120000   /* a long statement may take a while */
#define POLL_MS 100             /* between two questions to the coordinator while waiting */
#define SHOW_MS 5000            /* a waiting line again after this long, if nothing changed */

enum { DONE = 0, FAILED = 1, NOTHING_RAN = 2, UNKNOWN = 3 };
enum { FIXED, WRITER, REPLICA };

static struct {
  int mode;
  const char *fixed;            /* --engine */
  int nth;                      /* --replica N */
  char coord[ADDR_MAX_LEN + 1];
  char where[PATH_MAX + 200];   /* the cluster, in words, for messages */
  unsigned long long wait_ms;
  int show_lsn, verbose;
} T;

/* The connection and the session's state. */
static struct {
  struct rpc r;
  int open;
  uint64_t epoch;               /* the writer's epoch when r was opened (WRITER) */
  int in_txn;                   /* a transaction may be open on r */
  unsigned long long last;      /* the last request's time */
  char avoid[REPLICAS_MAX][ADDR_MAX_LEN + 1];   /* replicas not ready for this statement */
  int navoid;
} S;

/* ---- whom to ask ---------------------------------------------------------------- */

static void drop(void)
{
  if (S.open)
    rpc_close(&S.r);
  S.open = 0;
}

/* Say why we wait: when the situation changes, or every SHOW_MS. */
static void waiting(const char *what, const char *situation, const char *key)
{
  static char last[ADDR_MAX_LEN + 64];
  static unsigned long long shown;
  if (strcmp(key, last) != 0 || now_ms() - shown >= SHOW_MS) {
    errmsg("-- waiting for %s: %s", what, situation);
    snprintf(last, sizeof last, "%s", key);
    shown = now_ms();
  }
}

/* No cluster answers where we looked: one line, and nothing ran. */
static int no_cluster(const char *why)
{
  if (rpc_key_trouble(why)) {
    errmsg("sql: %s", why);    /* a coordinator may be there: the key is the trouble */
    return NOTHING_RAN;
  }
  errmsg("sql: no cluster at %s: its coordinator does not answer (%s); try: auralog cluster up",
         T.where, why);
  return NOTHING_RAN;
}

/* Connect to the writer the coordinator names, waiting until deadline.
 * 0, or NOTHING_RAN (said why). */
static int find_writer(unsigned long long deadline, int first)
{
  char why[512], situation[PATH_MAX + 1024], key[ADDR_MAX_LEN + 64];
  unsigned long long t0 = now_ms();
  int waited = 0;
  for (;;) {
    struct loc l;
    int rc = loc_ask(T.coord, "main", &l, why, sizeof why);
    if (rc == -1 && first && !waited)
      return no_cluster(why);   /* never came up: waiting would not help */
    if (rc == -1) {
      snprintf(situation, sizeof situation, "no cluster at %s answers (%s): try auralog cluster "
               "up", T.where, why);
      snprintf(key, sizeof key, "nocoord");
    } else if (rc == -2) {
      snprintf(situation, sizeof situation, "the coordinator is up but has no writer: %s (no "
               "engine has opened volume main; auralog cluster up starts one)", why);
      snprintf(key, sizeof key, "novolume");
    } else if (l.promoting[0] || !l.writer[0]) {
      /* A promotion under way: the writer named is being replaced, and
       * what it commits now may end "not durable" when it is fenced. */
      loc_situation(&l, situation, sizeof situation, key, sizeof key);
    } else if (rpc_open(&S.r, l.writer, 1000, why, sizeof why) == 0) {
      /* Even one the coordinator has not heard from lately (l.lost):
       * the writer serves only within its read lease, and refuses
       * otherwise (then the statement goes again). */
      S.open = 1;
      S.epoch = l.epoch;
      S.last = now_ms();
      if (T.verbose || waited)
        errmsg("-- writer %s (epoch %llu)%s", l.writer, (unsigned long long)l.epoch,
               waited ? ", after waiting" : "");
      return 0;
    } else if (rpc_key_trouble(why)) {
      errmsg("sql: %s", why);
      return NOTHING_RAN;
    } else if (l.lost) {
      loc_situation(&l, situation, sizeof situation, key, sizeof key);
    } else {
      /* Named from the moment it takes its epoch, a promoted writer
       * listens once its recovery is done. */
      snprintf(situation, sizeof situation, "the writer %s (epoch %llu) is known but refuses "
               "connections (%s)", l.writer, (unsigned long long)l.epoch, why);
      snprintf(key, sizeof key, "refusing %s %llu", l.writer, (unsigned long long)l.epoch);
    }
    if (now_ms() >= deadline) {
      errmsg("sql: no writer after %llu s: %s", (now_ms() - t0 + 500) / 1000, situation);
      return NOTHING_RAN;
    }
    waiting("a writer", situation, key);
    waited = 1;
    usleep(POLL_MS * 1000);
  }
}

static int avoided(const char *addr)
{
  for (int i = 0; i < S.navoid; i++)
    if (strcmp(S.avoid[i], addr) == 0)
      return 1;
  return 0;
}

/* Connect to a replica serving now: the N-th the coordinator lists, else
 * another. 0, or NOTHING_RAN (said why). */
static int find_replica(unsigned long long deadline, int first)
{
  char why[512], tried[1024] = "";
  unsigned long long t0 = now_ms();
  int asked = 0;
  for (;;) {
    struct loc l;
    int rc = loc_ask(T.coord, "main", &l, why, sizeof why);
    if (rc == -1 && first && !asked)
      return no_cluster(why);
    if (rc == -2) {
      errmsg("sql: no replica is up: %s", why);
      return NOTHING_RAN;
    }
    asked = 1;
    tried[0] = 0;               /* this round's */
    /* The N-th first (as `cluster up` numbers them), then the others. */
    int order[REPLICAS_MAX], n = 0, asked_one = 0;
    if (rc == 0 && T.nth <= l.nrep)
      order[n++] = T.nth - 1;
    for (int i = 0; rc == 0 && i < l.nrep; i++)
      if (i != T.nth - 1)
        order[n++] = i;
    for (int k = 0; k < n; k++) {
      const char *a = l.rep[order[k]].addr;
      if (avoided(a))
        continue;
      asked_one = 1;
      if (rpc_open(&S.r, a, 1000, why, sizeof why) != 0) {
        if (rpc_key_trouble(why)) {
          errmsg("sql: %s", why);
          return NOTHING_RAN;
        }
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s: %s",
                 tried[0] ? "; " : "", a, why);
        continue;
      }
      /* Still a replica, now that the connection is open? One promoted
       * meanwhile listens again as the writer (promote.c execs), and the
       * coordinator then names it writer or promoting: never ask that one
       * for a replica's read. Its connection is to the process as it is
       * now; an exec later closes it. */
      struct loc now;
      if (loc_ask(T.coord, "main", &now, why, sizeof why) == 0 && loc_is_replica(&now, a)) {
        S.open = 1;
        S.last = now_ms();
        char instead[64] = "";
        if (order[k] != T.nth - 1)
          snprintf(instead, sizeof instead, T.nth <= l.nrep ? ": replica %d does not answer"
                   : ": there is no replica %d up now", T.nth);
        if (T.verbose || instead[0])
          errmsg("-- replica %s (applied %llu, epoch %llu)%s", a,
                 (unsigned long long)l.rep[order[k]].applied,
                 (unsigned long long)l.rep[order[k]].epoch, instead);
        return 0;
      }
      rpc_close(&S.r);
      snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s: no replica now",
               tried[0] ? "; " : "", a);
    }
    if (n > 0 && !asked_one)
      S.navoid = 0;            /* every one listed was not ready: ask them again */
    unsigned long long now = now_ms();
    /* None listed: a replica beats every ENGINE_STAT_MS, so one that was
     * just started (or lost) shows within REPLICA_SEEN_MS. */
    if (rc == 0 && l.nrep == 0 && (now - t0 >= REPLICA_SEEN_MS || now >= deadline)) {
      errmsg("sql: no replica is up (the coordinator has heard from none in the last %d ms%s%s)",
             REPLICA_SEEN_MS, l.writer[0] ? "; the writer is " : "", l.writer);
      return NOTHING_RAN;
    }
    if (now >= deadline) {
      errmsg("sql: no replica answers%s%s", tried[0] ? ": " : "", tried);
      return NOTHING_RAN;
    }
    if (rc == -1)
      waiting("a replica", "the coordinator does not answer", "nocoord");
    usleep(POLL_MS * 1000);
  }
}

static int find_fixed(unsigned long long deadline)
{
  char why[512];
  for (;;) {
    if (rpc_open(&S.r, T.fixed, 2000, why, sizeof why) == 0) {
      S.open = 1;
      S.last = now_ms();
      return 0;
    }
    if (rpc_key_trouble(why) || now_ms() >= deadline) {
      errmsg("sql: %s%s", why, rpc_key_trouble(why) ? "" : " (is the engine running?)");
      return NOTHING_RAN;
    }
    usleep(POLL_MS * 1000);
  }
}

static int connect_target(unsigned long long deadline, int first)
{
  return T.mode == FIXED ? find_fixed(deadline) : T.mode == WRITER
           ? find_writer(deadline, first) : find_replica(deadline, first);
}

/* ---- one statement ----------------------------------------------------------------- */

static void print_rows(const Auralog__Rows *rows)
{
  for (size_t i = 0; i < rows->n_rows; i++) {
    for (size_t k = 0; k < rows->rows[i]->n_values; k++)
      printf("%s%s", k ? "|" : "", rows->rows[i]->values[k]->text);
    putchar('\n');
  }
  if (T.show_lsn && rows->commit_lsn)
    printf("-- durable at lsn %llu\n", (unsigned long long)rows->commit_lsn);
  fflush(stdout);
}

/* Still the one to ask, while a statement is in flight? A writer the
 * coordinator has replaced (a newer epoch, another address: it was
 * frozen, cut off or crashed; a new writer fenced it) will never answer
 * with a commit the new writer does not know of, and a frozen one may not
 * answer for minutes; a replica it no longer lists has been silent that
 * long. 0, or -1 with why. */
static int still_there(char *why, size_t whylen)
{
  struct loc l;
  char err[256];
  if (T.mode == FIXED || loc_ask(T.coord, "main", &l, err, sizeof err) != 0)
    return 0;                  /* nothing to compare with: keep waiting */
  if (T.mode == WRITER && l.epoch > S.epoch && l.writer[0] && strcmp(l.writer, S.r.addr) != 0) {
    snprintf(why, whylen, "%s was replaced by the writer %s (epoch %llu) while the statement "
             "was in flight", S.r.addr, l.writer, (unsigned long long)l.epoch);
    return -1;
  }
  if (T.mode == REPLICA && !loc_is_replica(&l, S.r.addr)) {
    snprintf(why, whylen, "the replica %s stopped serving while the statement was in flight",
             S.r.addr);
    return -1;
  }
  return 0;
}

/* Send text on S.r and wait for its answer (Rows or an Error), or NULL
 * with why ("cannot send": it did not go out whole). Like rpc_query, but
 * looking up every second, once the writer has had WRITER_LOST_MS to
 * answer, whether the one asked is still the one to ask (still_there). */
static Env *query(const char *text, char *why, size_t whylen)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Query q = AURALOG__QUERY__INIT;
  q.sql = (char *)text;
  req.body_case = AURALOG__ENVELOPE__BODY_QUERY;
  req.query = &q;
  req.req = S.r.next_req++;
  size_t len;
  uint8_t *frame = wire_frame(&req, &len);
  if (frame == NULL) {
    snprintf(why, whylen, "the statement is too large to send");
    return NULL;
  }
  int rc = rpc_send_raw(&S.r, frame, len);
  free(frame);
  if (rc != 0) {
    snprintf(why, whylen, "cannot send to %s", S.r.addr);
    return NULL;
  }
  unsigned long long t0 = now_ms(), checked = t0;
  for (;;) {
    unsigned long long now = now_ms();
    if (now - t0 >= SQL_TIMEOUT_MS) {
      snprintf(why, whylen, "%s did not answer in time", S.r.addr);
      return NULL;
    }
    struct pollfd p = {.fd = S.r.fd, .events = POLLIN};
    if (poll(&p, 1, 1000) > 0) {
      /* A frame is coming: read it whole (a frame cut short by a timeout
       * would leave the stream out of step). */
      Env *env = rpc_recv(&S.r, (int)(SQL_TIMEOUT_MS - (now_ms() - t0)) + 1, why, whylen);
      if (env == NULL || env->req == req.req || env->req == 0)
        return env;            /* req 0: an error about the frame itself */
      wire_free(env);          /* a reply to an earlier, abandoned request */
      continue;
    }
    now = now_ms();
    if (now - t0 >= WRITER_LOST_MS && now - checked >= 1000) {
      checked = now;
      if (still_there(why, whylen) != 0)
        return NULL;
    }
  }
}

/* Refused before it ran (worker.c refuse(): a fenced writer, or one whose
 * read lease ran out), so it may go to the next writer. */
static int refused_unrun(int code, const char *why)
{
  return (code == ERR_STALE_EPOCH && !strncmp(why, "fenced by epoch", 15)) ||
         (code == ERR_UNAVAILABLE && (!strncmp(why, "read lease expired", 18) ||
                                      !strncmp(why, "no read lease", 13)));
}

/* A replica that cannot read yet (rvol.c): another may. */
static int replica_not_ready(const char *why)
{
  return strstr(why, "the replica has no read point yet") ||
         strstr(why, "the replica has not caught up with its writer yet");
}

/* The connection was lost with a transaction open: that transaction is
 * gone (the server rolls back a closed connection's), and nothing of it
 * may be sent to another writer. sent: the statement went out whole. */
static int lost_txn(const char *why, int sent, int ro)
{
  S.in_txn = 0;
  if (!sent || ro) {
    errmsg("sql: %s: the statement did not run, and the transaction open on that connection "
           "is gone (rolled back)", why);
    return FAILED;
  }
  errmsg("sql: %s: outcome unknown (the connection was lost with a transaction open; if the "
         "statement committed it, the commit may have reached a write quorum: check before "
         "retrying)", why);
  return UNKNOWN;
}

/* Run text, connecting first if need be: DONE, FAILED, NOTHING_RAN or
 * UNKNOWN (each said). What certainly did not run, and reads, go again
 * (to the writer or replica found next) until the --wait deadline. */
static int run(const char *text, int first)
{
  unsigned long long deadline = now_ms() + T.wait_ms;
  int ro = sql_read_only(text, !S.in_txn);
  S.navoid = 0;
  for (int tries = 0;; tries++) {
    if (!S.open) {
      /* first: the command's first connection. A coordinator that does
       * not answer then means no cluster; later, a hiccup to wait out. */
      int rc = connect_target(deadline, first && tries == 0);
      if (rc != 0)
        return rc;
    }
    char why[1024], at[ADDR_MAX_LEN + 1];
    snprintf(at, sizeof at, "%s", S.r.addr);
    Env *rep = query(text, why, sizeof why);
    S.last = now_ms();
    if (rep == NULL) {
      /* Not even sent whole (the connection was gone): nothing ran. */
      int sent = strstr(why, "cannot send") == NULL;
      drop();
      if (S.in_txn)
        return lost_txn(why, sent, ro);
      if (sent && !ro) {
        errmsg("sql: %s: the statement's outcome is unknown (it was sent, no answer came: if "
               "it committed and reached a write quorum the next writer keeps it; check "
               "before retrying)", why);
        return UNKNOWN;
      }
      if (now_ms() >= deadline) {
        errmsg("sql: %s: %s", why, sent ? "no answer (a read: it changed nothing)"
                                        : "the statement did not run");
        return NOTHING_RAN;
      }
      errmsg("-- %s: %s; asking again", why, sent ? "a read, no answer" : "the statement did "
             "not run");
      continue;
    }
    int code = rpc_expect(rep, AURALOG__ENVELOPE__BODY_ROWS, why, sizeof why);
    if (code == 0) {
      print_rows(rep->rows);
      wire_free(rep);
      S.in_txn = sql_txn_open(text, S.in_txn);
      return DONE;
    }
    wire_free(rep);
    int unknown = strstr(why, "not durable") != NULL;
    if (unknown && (!ro || S.in_txn)) {
      if (S.in_txn)
        drop();                /* the writer is going: so is the transaction */
      errmsg("%s (outcome unknown)", why);
      S.in_txn = 0;
      return UNKNOWN;
    }
    int again = unknown || refused_unrun(code, why);
    if (again && S.in_txn) {
      drop();
      return lost_txn(why, 0, ro);
    }
    if (again && unknown && strstr(why, "no write quorum") && T.mode != FIXED) {
      /* A read that saw a commit without a write quorum: the writer is up
       * and answered; it withholds the rows until that commit is durable
       * (or the deadline). Say that, not "waiting for a writer". */
      drop();
      if (now_ms() >= deadline) {
        errmsg("sql: the writer %s is up but the data this read saw is not durable: no write "
               "quorum (%d of %d) within --wait (%s)", at, VW, NCOPIES, why);
        return NOTHING_RAN;
      }
      char situation[1400];
      snprintf(situation, sizeof situation, "the writer %s is up but its data is not durable: "
               "no write quorum (%d of %d); waiting up to %llu s (--wait)", at, VW, NCOPIES,
               (deadline - now_ms() + 999) / 1000);
      static unsigned long long said;
      if (said == 0 || now_ms() - said >= SHOW_MS) {
        errmsg("-- %s", situation);
        said = now_ms();
      }
      usleep(POLL_MS * 1000);
      continue;
    }
    if (again && T.mode != FIXED) {
      drop();                  /* a fenced or silent writer: the coordinator names another */
      if (now_ms() >= deadline) {
        errmsg("sql: %s refuses: %s; no other writer within --wait", at, why);
        return NOTHING_RAN;
      }
      char situation[1200], key[ADDR_MAX_LEN + 16];
      snprintf(situation, sizeof situation, "%s refused: %s: the statement did not run", at, why);
      snprintf(key, sizeof key, "refused %s", at);
      waiting("a writer", situation, key);
      usleep(POLL_MS * 1000);
      continue;
    }
    if (T.mode == REPLICA && replica_not_ready(why) && S.navoid < REPLICAS_MAX &&
        now_ms() < deadline) {
      snprintf(S.avoid[S.navoid++], sizeof S.avoid[0], "%s", at);
      drop();
      errmsg("-- %s: %s; asking another replica", at, why);
      continue;
    }
    errmsg("%s", why);
    return FAILED;
  }
}

/* ---- the shell ------------------------------------------------------------------- */

/* The engine closes a connection silent for IDLE_MS (net.c): a shell left
 * open that long connects again before its next statement, rather than
 * find the connection gone after sending it (when it could not tell
 * whether the statement ran). Not with a transaction open: that would end
 * it; the statement then meets the closed connection and says so. */
static void fresh(void)
{
  if (S.open && !S.in_txn && now_ms() - S.last >= IDLE_MS / 2)
    drop();
}

/* The worst of two outcomes: unknown, nothing ran, failed, done. */
static int worst(int a, int b)
{
  return a == UNKNOWN || b == UNKNOWN ? UNKNOWN : a > b ? a : b;
}

static int shell(void)
{
  int tty = isatty(0), status = DONE, first = 1;
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
        T.show_lsn = !T.show_lsn;
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
      fresh();
      int rc = run(buf, first);
      first = 0;
      status = worst(status, rc);
      len = 0;
      buf[0] = 0;
      if (rc == NOTHING_RAN)
        break;                 /* no writer within --wait: the rest would wait as long */
    }
  }
  if (len && strspn(buf, " \t\r\n") != len && status != NOTHING_RAN)
    status = worst(status, run(buf, first));   /* a last statement without ';' */
  free(buf);
  return status;
}

/* ---- the command line ------------------------------------------------------------ */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog sql [--dir DIR] [--engine ADDR | --replica [N]] [--wait SECONDS]\n"
    "                   [--lsn] [--verbose] [SQL]\n"
    "\n"
    "Run SQL on the writer and print rows as a|b. Without SQL, read\n"
    "statements from standard input (an interactive shell on a terminal).\n"
    "A write returns only once its commit is durable (vdl >= commit LSN).\n"
    "\n"
    "  --dir DIR      the cluster in DIR (default $AURALOG_DIR, or ~/.auralog);\n"
    "                 its cluster.json names the coordinator ($AURALOG_COORD\n"
    "                 overrides), which says who writes now and which replicas\n"
    "                 serve reads now (after a failover, not the members\n"
    "                 cluster.json names)\n"
    "  --engine ADDR  ask the engine at ADDR, whatever its role (default\n"
    "                 $AURALOG_ENGINE; without it, the writer the coordinator\n"
    "                 names); tried once unless --wait is given\n"
    "  --replica [N]  ask a read replica instead: the N-th (default 1) that the\n"
    "                 coordinator lists up now, in address order (as `cluster\n"
    "                 up` numbers them), else another; reads only, as of its\n"
    "                 read point (auralog status shows its lag); never the\n"
    "                 writer or a fenced old writer\n"
    "  --wait S       wait up to S seconds (default %d) for a writer (or a\n"
    "                 replica) to answer: a failover takes seconds; progress on\n"
    "                 stderr. 0: do not wait\n"
    "  --lsn          after a write, print the LSN at which it became durable\n"
    "  --verbose      say on stderr which writer or replica answers\n"
    "\n"
    "What is sent again while waiting: a statement that did not run (not\n"
    "sent whole, or refused by a fenced writer before it ran) and a read.\n"
    "Never a write whose answer was lost: it may have committed.\n"
    "\n"
    "Exit status:\n"
    "  0  done (a write: durable)\n"
    "  1  the statement failed: an error answer (a SQL error, a write on a\n"
    "     replica, ...)\n"
    "  2  nothing ran: no cluster where it looked, or no writer (or replica)\n"
    "     answered within --wait; also a bad command line\n"
    "  3  a write's outcome is unknown: it was sent and no answer came (the\n"
    "     writer crashed or was fenced with it in flight); it may have\n"
    "     committed: check before retrying. Never for a read.\n",
    SQL_WAIT_MS / 1000);
}

/* The cluster, in words, for messages: where the coordinator came from. */
static void describe_where(void)
{
  const char *env = getenv("AURALOG_COORD");
  char d[PATH_MAX];
  cJSON *o = NULL;
  char why[PATH_MAX + 200];
  if (env && *env) {
    snprintf(T.where, sizeof T.where, "%s ($AURALOG_COORD)", T.coord);
  } else if (conf_find(NULL, &o, why, sizeof why) == 1) {
    conf_dir(NULL, d, sizeof d);
    snprintf(T.where, sizeof T.where, "%s (coordinator %s)", d, T.coord);
  } else {
    snprintf(T.where, sizeof T.where, "%s (the default: no --dir, no $AURALOG_DIR, no "
             "~/.auralog/cluster.json)", T.coord);
  }
  cJSON_Delete(o);
}

int sql_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"engine", required_argument, 0, 'e'}, {"lsn", no_argument, 0, 'n'},
    {"replica", no_argument, 0, 'r'}, {"dir", required_argument, 0, 'd'},
    {"wait", required_argument, 0, 'w'}, {"verbose", no_argument, 0, 'v'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *engine = getenv("AURALOG_ENGINE");
  int o, wait_given = 0, engine_given = 0;
  T.nth = 0;
  T.wait_ms = SQL_WAIT_MS;
  while ((o = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
    switch (o) {
    case 'e': engine = optarg; engine_given = 1; break;
    case 'r':
      T.nth = 1;
      /* --replica N: a number right after it names the replica. */
      if (optind < argc && argv[optind][0] && strspn(argv[optind], "0123456789") ==
          strlen(argv[optind])) {
        T.nth = atoi(argv[optind++]);
        if (T.nth < 1 || T.nth > REPLICAS_MAX) {
          errmsg("sql: --replica N is a replica from 1 to %d", REPLICAS_MAX);
          return NOTHING_RAN;
        }
      }
      break;
    case 'n': T.show_lsn = 1; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 'w': {
      char *end;
      double s = strtod(optarg, &end);
      if (*end || end == optarg || s < 0 || s > 86400) {
        errmsg("sql: --wait takes seconds, 0 to 86400, not '%s'", optarg);
        return NOTHING_RAN;
      }
      T.wait_ms = (unsigned long long)(s * 1000);
      wait_given = 1;
      break;
    }
    case 'v': T.verbose = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return NOTHING_RAN;
    }
  }
  if (optind + 1 < argc) {
    errmsg("sql: give the SQL as one argument (quote it)");
    return NOTHING_RAN;
  }
  if (T.nth) {
    T.mode = REPLICA;          /* by role: --engine with it would say whom already */
    if (engine_given) {
      errmsg("sql: --engine and --replica: give one (--replica finds a replica by role)");
      return NOTHING_RAN;
    }
  } else if (engine && *engine) {
    T.mode = FIXED;
    T.fixed = engine;
    if (!wait_given)
      T.wait_ms = 0;           /* an address given is tried once */
  } else {
    T.mode = WRITER;
  }
  if (T.mode != FIXED) {
    char why[PATH_MAX + 200];
    if (addr_coord_find(NULL, T.coord, sizeof T.coord, why, sizeof why) != 0) {
      errmsg("sql: %s", why);  /* never the default ports once a cluster was meant */
      return NOTHING_RAN;
    }
    describe_where();
  }
  int rc = optind < argc ? run(argv[optind], 1) : shell();
  drop();
  return rc;
}
