/*
 * binlogcli.c: `auralog binlog tail | apply | status | forget` (issue 29,
 * seed 003): the volume's change stream, as a consumer outside the
 * cluster sees it (a replica in another database, change data capture).
 *
 * The enhanced binlog lives in the storage tier (a binlog PG of six
 * segments); cli/blread.c reads it, in commit order, from whichever
 * segment answers. A position is LSN:INDEX: a transaction's commit LSN
 * and an event's index in it; LSN alone means after the whole
 * transaction. A consumer that gives itself a name (--name) has its
 * position kept by the coordinator (coord/binlogc.c): it resumes there,
 * and storage keeps what it has not read (retention never releases above
 * the lowest registered position).
 *
 *   tail    print each event (one line, or one JSON object, per event)
 *   apply   keep a stock SQLite file as a logical replica (vfs/binapply.c:
 *           each transaction whole, once; the file holds its own position)
 *   status  the binlog's first and last durable positions, bytes held,
 *           each segment's durable end, the consumers and their lag
 *   forget  unregister a consumer (the operator's: retention may then
 *           release what only it held)
 *
 * Exactly once, for tail --name: the position moves after each batch is
 * printed and flushed; Ctrl-C (or SIGTERM) ends after the transaction
 * being printed, then moves the position: a consumer stopped so and
 * started again misses nothing and repeats nothing. Killed outright
 * (SIGKILL), it repeats at most the last batch it printed, each event
 * with its position, so a reader can drop what it has. apply has no such
 * window: its position commits with the rows (binapply.h).
 *
 * Exit status: 0 done (or stopped by Ctrl-C); 1 an error (one line on
 * stderr); 2 a usage error; 3 a gap: retention released transactions
 * after the position asked for (the line names both positions).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/binlogcli_int.h"
#include "cli/blread.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "net/keyfile.h"
#include "roles.h"
#include "vfs/binapply.h"
#include "vfs/binlog.h"
#include "vfs/blfile.h"
#include "vfs/capture.h"

#define EXIT_GAP 3

/* ---- what every subcommand shares (binlogcli_int.h) ------------------------- */

void bl_common_opt(struct common *c, int o)
{
  if (o == 'v')
    c->volume = optarg;
  else if (o == 'c')
    c->coord = optarg;
  else if (o == 'd')
    setenv("AURALOG_DIR", optarg, 1);
  else if (o == 'B')
    c->file = optarg;
}

void bl_common_check(const char *cmd, struct common *c)
{
  if (!wire_name_ok(c->volume))
    die("binlog %s: '%s' is not a volume name", cmd, c->volume);
  c->coord = addr_coord(c->coord);
}

/* bl_open, or the command ends with why (a gap's exit status for none). */
void bl_open_or_die(const char *cmd, struct blsrc *b, struct common *c)
{
  char why[400];
  if (c->file) {
    if (access(c->file, R_OK) != 0)
      die("binlog %s: %s: %s", cmd, c->file, strerror(errno));
    bl_open_file(b, c->file);
    return;
  }
  int rc = bl_open(b, c->coord, c->volume, why, sizeof why);
  if (rc == BL_ERR)
    die("binlog %s: %s%s", cmd, why,
        rpc_key_trouble(why) ? "" : " (is the cluster up? try: auralog cluster up)");
  if (rc != 0)
    die("binlog %s: %s", cmd, why);
}


static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
  (void)sig;
  stop = 1;
}

/* Ctrl-C and SIGTERM end the loop at a transaction's end (not mid-call:
 * no SA_RESTART, so a sleep or a wait returns early). */
static void catch_stop(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static void nap(void)
{
  for (int i = 0; i < BINLOG_POLL_MS / 20 && !stop; i++)
    usleep(20000);
}

/* What every subcommand shares: the volume, the cluster. */
/* ---- consumers' positions ---------------------------------------------------- */

/* The registered position of consumer name (1 with *pos), or 0. */
static int registered(const char *cmd, struct blsrc *b, const char *name, uint64_t *pos)
{
  Auralog__BinlogConsumer bc = AURALOG__BINLOG_CONSUMER__INIT;
  bc.volume = b->volume;
  bc.name = "";
  bc.list = 1;
  Env *env;
  int code;
  char why[400];
  Auralog__BinlogConsumers *cs = bl_consumers(b, &bc, &env, &code, why, sizeof why);
  if (cs == NULL)
    die("binlog %s: %s", cmd, why);
  int found = 0;
  for (size_t i = 0; i < cs->n_consumers && !found; i++)
    if (strcmp(cs->consumers[i]->name, name) == 0) {
      *pos = cs->consumers[i]->pos;
      found = 1;
    }
  wire_free(env);
  return found;
}

/* Move consumer name to pos (pos_ms: its transaction's commit time). A
 * refusal ends the command, but for a lost coordinator while following:
 * said once, tried again with the next batch. */
static void move_to(const char *cmd, struct blsrc *b, const char *name, uint64_t pos,
                    uint64_t pos_ms, int rewind, int follow)
{
  Auralog__BinlogConsumer bc = AURALOG__BINLOG_CONSUMER__INIT;
  bc.volume = b->volume;
  bc.name = (char *)name;
  bc.pos = pos;
  bc.pos_ms = pos_ms;
  bc.at_ms = bl_wall_now();
  bc.rewind = rewind;
  Env *env;
  int code;
  char why[400];
  static int said;
  if (bl_consumers(b, &bc, &env, &code, why, sizeof why) != NULL) {
    wire_free(env);
    said = 0;
    return;
  }
  if (code == ERR_CONFLICT)
    die("binlog %s: %s", cmd, why);
  if (code != 0 || !follow)
    die("binlog %s: cannot move consumer %s to %llu: %s", cmd, name, (unsigned long long)pos,
        why);
  if (!said)
    errmsg("binlog %s: cannot move consumer %s to %llu now (%s); trying again with the next "
           "batch", cmd, name, (unsigned long long)pos, why);
  said = 1;
}

/* ---- reading, for tail and apply --------------------------------------------- */

/* The next batch after `after`: 1 with transactions, 0 none now (a
 * follower waits), or the command ends (a gap: EXIT_GAP). A reader that
 * does not follow stops only once every segment was asked. */
static int next_batch(const char *cmd, struct blsrc *b, uint64_t after, int follow,
                      struct blbatch *bt)
{
  char why[600];
  static int said;
  for (int forced = 0;; forced++) {
    int rc = bl_fetch(b, after, 0, bt, why, sizeof why);
    if (rc == BL_GAP) {
      errmsg("binlog %s: %s", cmd, why);
      exit(EXIT_GAP);
    }
    if (rc != 0) {
      if (!follow)
        die("binlog %s: %s", cmd, why);
      if (!said)
        errmsg("binlog %s: %s; waiting for it", cmd, why);
      said = 1;
      return 0;
    }
    if (said)
      errmsg("binlog %s: reading again", cmd);
    said = 0;
    if (bt->n > 0 || follow || forced)
      return bt->n > 0;
    b->swept_at = 0;         /* before giving up: every segment, not only the last */
  }
}

/* ---- tail -------------------------------------------------------------------- */

static void put_value(FILE *f, const Auralog__BinlogValue *v)
{
  switch (v->v_case) {
  case AURALOG__BINLOG_VALUE__V_I:
    fprintf(f, "%lld", (long long)v->i);
    return;
  case AURALOG__BINLOG_VALUE__V_R: {
    char num[40];            /* a REAL reads as one: 0.0, not 0 */
    snprintf(num, sizeof num, "%.17g", v->r);
    fprintf(f, "%s%s", num, strpbrk(num, ".eEnN") ? "" : ".0");
    return;
  }
  case AURALOG__BINLOG_VALUE__V_B: {
    size_t n = v->b.len, show = n > 48 ? 40 : n;
    if (v->type == SQLITE_TEXT) {
      fputc('\'', f);
      for (size_t i = 0; i < show; i++) {
        unsigned char ch = v->b.data[i];
        if (ch == '\'')
          fputs("''", f);
        else
          fputc(ch < 32 ? '?' : ch, f);
      }
      fputc('\'', f);
    } else {
      fputs("x'", f);
      for (size_t i = 0; i < show; i++)
        fprintf(f, "%02x", v->b.data[i]);
      fputc('\'', f);
    }
    if (show < n)
      fprintf(f, "..(%zu bytes)", n);
    return;
  }
  default:
    fputs("NULL", f);
  }
}

static void put_values(FILE *f, const char *label, Auralog__BinlogValue **v, size_t n)
{
  fprintf(f, "%s(", label);
  for (size_t i = 0; i < n; i++) {
    if (i)
      fputs(", ", f);
    put_value(f, v[i]);
  }
  fputc(')', f);
}

/* One line: position, table, op, key, values (text one line: newlines as
 * spaces). */
static void put_event(FILE *f, uint64_t lsn, const Auralog__BinlogEvent *e)
{
  static const char *const ops[] = {"?", "insert", "update", "delete", "ddl", "lost"};
  fprintf(f, "%llu:%u  ", (unsigned long long)lsn, e->index);
  const char *op = ops[e->op <= BINLOG_LOST ? e->op : 0];
  if (e->op == BINLOG_DDL || e->op == BINLOG_LOST) {
    fprintf(f, "%s  %s  ", op, e->op == BINLOG_DDL ? e->ddl_op : e->table);
    const char *s = e->sql ? e->sql : "";
    while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')
      s++;
    for (; *s; s++)
      fputc(*s == '\n' || *s == '\r' || *s == '\t' ? ' ' : *s, f);
    fputc('\n', f);
    return;
  }
  fprintf(f, "%s  %s  ", e->table, op);
  if (e->rowid_table) {
    fprintf(f, "rowid=%lld", (long long)e->rowid);
    if (e->op == BINLOG_UPDATE && e->new_rowid != e->rowid)
      fprintf(f, "->%lld", (long long)e->new_rowid);
  } else {
    put_values(f, "key=", e->key, e->n_key);
  }
  if (e->n_before)
    put_values(f, "  before=", e->before, e->n_before);
  if (e->n_after)
    put_values(f, "  after=", e->after, e->n_after);
  fputc('\n', f);
}

/* One JSON object per event: binlog_txn_json's event with its position,
 * commit LSN and commit time first. */
static void put_event_json(FILE *f, uint64_t lsn, const Auralog__BinlogTxn *t,
                           cJSON *ev, uint32_t index)
{
  cJSON *o = cJSON_CreateObject();
  char pos[48];
  snprintf(pos, sizeof pos, "%llu:%u", (unsigned long long)lsn, index);
  cJSON_AddStringToObject(o, "pos", pos);
  cJSON_AddNumberToObject(o, "commit_lsn", (double)lsn);
  cJSON_AddNumberToObject(o, "wall_ms", (double)t->wall_ms);
  while (ev->child) {
    cJSON *c = cJSON_DetachItemViaPointer(ev, ev->child);
    if (strcmp(c->string, "commit_lsn") == 0)
      cJSON_Delete(c);
    else
      cJSON_AddItemToObject(o, c->string, c);
  }
  char *s = cJSON_PrintUnformatted(o);
  fprintf(f, "%s\n", s);
  free(s);
  cJSON_Delete(o);
}

/* Print t's events after index skip (-1: all). */
static void put_txn(FILE *f, uint64_t lsn, const Auralog__BinlogTxn *t, int64_t skip, int json)
{
  cJSON *o = json ? binlog_txn_json(t) : NULL;
  cJSON *evs = o ? cJSON_GetObjectItem(o, "events") : NULL;
  for (size_t i = 0; i < t->n_events; i++) {
    const Auralog__BinlogEvent *e = t->events[i];
    if ((int64_t)e->index <= skip)
      continue;
    if (json)
      put_event_json(f, lsn, t, cJSON_GetArrayItem(evs, (int)i), e->index);
    else
      put_event(f, lsn, e);
  }
  cJSON_Delete(o);
}

static void tail_usage(FILE *f)
{
  fprintf(f,
    "usage: auralog binlog tail [--from POS] [--follow] [--json] [--name NAME [--rewind]]\n"
    "                           [--volume NAME] [--dir DIR | --coord ADDR]\n"
    "\n"
    "Print the volume's committed transactions, event by event, in commit order:\n"
    "one line per event (position, table, operation, key, values before and after;\n"
    "a schema change with its statement), or one JSON object per line with --json.\n"
    "A position is LSN:INDEX (a transaction's commit LSN, an event's index in it).\n"
    "\n"
    "  --from POS     start right after POS: LSN (after the whole transaction\n"
    "                 committed at LSN) or LSN:INDEX (after that event of it);\n"
    "                 default: the oldest transaction the binlog holds, or the\n"
    "                 position registered under --name\n"
    "  --follow       keep printing new transactions until Ctrl-C\n"
    "  --json         one JSON object per event: pos, commit_lsn, wall_ms, index,\n"
    "                 op, table, rowid or key, before, after, ddl_op, sql\n"
    "  --name NAME    a registered consumer: start from its position (without\n"
    "                 --from), and move it after each batch printed; storage keeps\n"
    "                 what it has not read. Ctrl-C stops after a whole transaction,\n"
    "                 so that a run started again repeats and misses nothing\n"
    "  --rewind       with --name and --from: move its position back to POS\n"
    COMMON_HELP
    "\n"
    "Exit status: 0 done, 1 an error, 2 a usage error, 3 a gap (retention released\n"
    "transactions after the position asked for: both positions are named).\n");
}

static int tail_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"from", required_argument, 0, 'f'}, {"follow", no_argument, 0, 'F'},
    {"json", no_argument, 0, 'j'}, {"name", required_argument, 0, 'n'},
    {"rewind", no_argument, 0, 'r'}, {"volume", required_argument, 0, 'v'},
    {"coord", required_argument, 0, 'c'}, {"dir", required_argument, 0, 'd'},
    {"binlog-file", required_argument, 0, 'B'}, {"help", no_argument, 0, 'h'}, {0}};
  struct common cm = {"main", NULL};
  const char *from_s = NULL, *name = NULL;
  int follow = 0, json = 0, rewind = 0, o;
  char why[400];
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'f': from_s = optarg; break;
    case 'F': follow = 1; break;
    case 'j': json = 1; break;
    case 'n': name = optarg; break;
    case 'r': rewind = 1; break;
    case 'v': case 'c': case 'd': case 'B': bl_common_opt(&cm, o); break;
    case 'h': tail_usage(stdout); return 0;
    default: tail_usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("binlog tail: unexpected argument '%s' (see auralog binlog tail --help)", argv[optind]);
  struct blpos from = {0, -1};
  if (from_s && blpos_parse(from_s, &from, why, sizeof why) != 0)
    die("binlog tail: %s", why);
  if (from.index >= 0 && from.lsn == 0)
    die("binlog tail: no transaction commits at LSN 0: --from 0 starts at the beginning");
  if (name && !wire_name_ok(name))
    die("binlog tail: '%s' is not a consumer name (1-%d of A-Z a-z 0-9 _ . -)", name,
        NAME_MAX_LEN);
  if (rewind && !(name && from_s))
    die("binlog tail: --rewind moves a named consumer back to --from: give both");
  bl_common_check("tail", &cm);
  if (cm.file && name)
    die("binlog tail: --name is the storage tier's (the coordinator keeps its position); "
        "a --binlog-file reader keeps its own");
  struct blsrc b;
  bl_open_or_die("tail", &b, &cm);
  catch_stop();
  uint64_t reg = 0;
  int has_reg = name && registered("tail", &b, name, &reg);
  if (has_reg && !from_s)
    from.lsn = reg;
  /* Reading starts after `after`; the transaction at from.lsn is printed
   * from event from.index + 1 on (from.index -1: not at all). */
  uint64_t after = from.index >= 0 ? from.lsn - 1 : from.lsn;
  uint64_t part = from.index >= 0 ? from.lsn : 0;
  uint64_t pos = after;      /* every transaction at or below it is printed */
  if (name && (!has_reg || reg != pos))
    move_to("tail", &b, name, pos, 0, rewind, 0);
  uint64_t moved = pos;
  struct blbatch bt;
  while (!stop) {
    int got = next_batch("tail", &b, after, follow, &bt);
    if (!got) {
      bl_batch_free(&bt);
      if (!follow)
        break;
      nap();
      continue;
    }
    uint64_t pos_ms = 0;
    for (size_t i = 0; i < bt.n; i++) {
      if (part) {
        if (bt.lsn[i] != part) {
          bl_batch_free(&bt);
          bl_close(&b);
          die("binlog tail: no transaction committed at %llu (--from %s): the next commits "
              "at %llu", (unsigned long long)part, from_s, (unsigned long long)bt.lsn[i]);
        }
        put_txn(stdout, bt.lsn[i], bt.txn[i], from.index, json);
        part = 0;
      } else {
        put_txn(stdout, bt.lsn[i], bt.txn[i], -1, json);
      }
      after = pos = bt.lsn[i];
      pos_ms = bt.txn[i]->wall_ms;
      if (stop)
        break;               /* Ctrl-C: at a transaction's end */
    }
    bl_batch_free(&bt);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      bl_close(&b);
      die("binlog tail: cannot write the output");
    }
    if (name && pos > moved) {
      move_to("tail", &b, name, pos, pos_ms, 0, follow);
      moved = pos;
    }
  }
  bl_close(&b);
  return 0;
}

/* ---- apply ------------------------------------------------------------------- */

static void apply_usage(FILE *f)
{
  fprintf(f,
    "usage: auralog binlog apply --into FILE.db [--from LSN] [--follow] [--name NAME [--rewind]]\n"
    "                            [--volume NAME] [--dir DIR | --coord ADDR]\n"
    "\n"
    "Keep FILE.db, a stock SQLite file, as a logical replica of the volume: each\n"
    "committed transaction is applied whole, once, in commit order; the file holds\n"
    "its own position (table " BINAPPLY_TABLE "), so a run stopped anywhere resumes\n"
    "from the file alone. FILE.db is made if missing; tables that existed before\n"
    "the binlog started must be created in it alike first.\n"
    "\n"
    "  --into FILE    the SQLite file (required)\n"
    "  --from LSN     start after the transaction committed at LSN (a file with\n"
    "                 no position yet: it already holds the volume as of LSN);\n"
    "                 default: the file's own position\n"
    "  --follow       keep applying new transactions until Ctrl-C\n"
    "  --name NAME    a registered consumer, moved to the file's position after\n"
    "                 each batch: storage keeps what the file has not applied\n"
    "  --rewind       with --name: move it back to the file's position if it is\n"
    "                 registered further on (a file restored from an old copy)\n"
    COMMON_HELP
    "\n"
    "Exit status: 0 done, 1 an error (a transaction that does not fit the file is\n"
    "not applied, and named), 2 a usage error, 3 a gap.\n");
}

static int apply_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"into", required_argument, 0, 'i'}, {"from", required_argument, 0, 'f'},
    {"follow", no_argument, 0, 'F'}, {"name", required_argument, 0, 'n'},
    {"rewind", no_argument, 0, 'r'}, {"volume", required_argument, 0, 'v'},
    {"coord", required_argument, 0, 'c'}, {"dir", required_argument, 0, 'd'},
    {"binlog-file", required_argument, 0, 'B'}, {"help", no_argument, 0, 'h'}, {0}};
  struct common cm = {"main", NULL};
  const char *into = NULL, *from_s = NULL, *name = NULL;
  int follow = 0, rewind = 0, o;
  char why[600];
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'i': into = optarg; break;
    case 'f': from_s = optarg; break;
    case 'F': follow = 1; break;
    case 'n': name = optarg; break;
    case 'r': rewind = 1; break;
    case 'v': case 'c': case 'd': case 'B': bl_common_opt(&cm, o); break;
    case 'h': apply_usage(stdout); return 0;
    default: apply_usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("binlog apply: unexpected argument '%s' (see auralog binlog apply --help)", argv[optind]);
  if (into == NULL)
    die("binlog apply: --into FILE.db is required (the SQLite file to keep)");
  struct blpos from = {0, -1};
  if (from_s && blpos_parse(from_s, &from, why, sizeof why) != 0)
    die("binlog apply: %s", why);
  if (from.index >= 0)
    die("binlog apply: a file takes whole transactions: --from LSN, not LSN:INDEX");
  if (name && !wire_name_ok(name))
    die("binlog apply: '%s' is not a consumer name (1-%d of A-Z a-z 0-9 _ . -)", name,
        NAME_MAX_LEN);
  if (rewind && !name)
    die("binlog apply: --rewind moves a named consumer back: give --name");
  bl_common_check("apply", &cm);
  if (cm.file && name)
    die("binlog apply: --name is the storage tier's; with --binlog-file the file keeps "
        "its own position");
  sqlite3 *db = binapply_open(into, why, sizeof why);
  if (db == NULL)
    die("binlog apply: %s", why);
  uint64_t fpos = 0, fev = 0;
  if (binapply_position(db, &fpos, &fev) != 0) {
    sqlite3_close(db);
    die("binlog apply: cannot read %s's position (" BINAPPLY_TABLE ")", into);
  }
  if (from_s && fpos > 0 && from.lsn > fpos) {
    sqlite3_close(db);
    die("binlog apply: %s is at %llu: starting after %llu would skip the transactions in "
        "between", into, (unsigned long long)fpos, (unsigned long long)from.lsn);
  }
  uint64_t after = from.lsn > fpos ? from.lsn : fpos;
  struct blsrc b;
  bl_open_or_die("apply", &b, &cm);
  catch_stop();
  uint64_t reg = 0, moved = after;
  int has_reg = name && registered("apply", &b, name, &reg);
  if (name && (!has_reg || reg != after))
    move_to("apply", &b, name, after, 0, rewind, 0);
  uint64_t applied = 0;
  struct blbatch bt;
  while (!stop) {
    if (!next_batch("apply", &b, after, follow, &bt)) {
      bl_batch_free(&bt);
      if (!follow)
        break;
      nap();
      continue;
    }
    uint64_t pos_ms = 0;
    size_t nt = 0;
    for (; nt < bt.n; nt++) {
      Auralog__BinlogTxn *t = bt.txn[nt];
      if (t->commit_lsn == 0)
        t->commit_lsn = bt.lsn[nt];
      if (t->commit_lsn != bt.lsn[nt]) {
        errmsg("binlog apply: the binlog record at %llu names commit %llu: not applied",
               (unsigned long long)bt.lsn[nt], (unsigned long long)t->commit_lsn);
        break;
      }
    }
    /* The batch in one SQLite transaction (binapply_txns): one sync for
     * all of it, the file's position committed with its rows. */
    size_t done = 0;
    int rc = nt ? binapply_txns(db, bt.txn, nt, &done, why, sizeof why) : 0;
    if (done) {
      applied += rc > 0 ? (uint64_t)rc : 0;
      after = bt.lsn[done - 1];
      pos_ms = bt.txn[done - 1]->wall_ms;
    }
    if (rc < 0 || nt < bt.n) {
      uint64_t bad = bt.lsn[done < bt.n ? done : bt.n - 1];
      if (name && after > moved)
        move_to("apply", &b, name, after, pos_ms, 0, 0);
      bl_batch_free(&bt);
      sqlite3_close(db);
      if (rc < 0)
        die("binlog apply: transaction %llu not applied to %s (it stays at %llu): %s",
            (unsigned long long)bad, into, (unsigned long long)after, why);
      exit(1);
    }
    bl_batch_free(&bt);
    if (name && after > moved) {
      move_to("apply", &b, name, after, pos_ms, 0, follow);
      moved = after;
    }
  }
  bl_close(&b);
  sqlite3_close(db);
  printf("applied %llu transaction%s to %s; it is at %llu\n", (unsigned long long)applied,
         applied == 1 ? "" : "s", into, (unsigned long long)after);
  return 0;
}

/* ---- status ------------------------------------------------------------------ */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog binlog tail | apply | status | forget  [options]  (each has --help)\n"
    "\n"
    "The volume's change stream: every committed transaction's row changes, in\n"
    "commit order, at positions LSN:INDEX (a commit's LSN, an event's index in it).\n"
    "Read from the storage tier (the enhanced binlog: `cluster up --binlog\n"
    "enhanced`), or with --binlog-file PATH from a community binlog's file.\n"
    "\n"
    "  tail     print the events (--follow: as they commit; --json)\n"
    "  apply    keep a stock SQLite file as a logical replica (--into FILE.db)\n"
    "  status   first and last positions, bytes held, segments, consumers' lag\n"
    "  forget   unregister a consumer (the operator's)\n");
}

int binlog_main(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *sub = argv[1];
  if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
    usage(stdout);
    return 0;
  }
  /* getopt names the subcommand in its complaints: "binlog tail: ..." */
  static char *const names[] = {"binlog tail", "binlog apply", "binlog status",
                                "binlog forget"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(sub, names[i] + 7))
      argv[1] = names[i];
  if (!strcmp(sub, "tail"))
    return tail_main(argc - 1, argv + 1);
  if (!strcmp(sub, "apply"))
    return apply_main(argc - 1, argv + 1);
  if (!strcmp(sub, "status"))
    return bl_status_main(argc - 1, argv + 1);
  if (!strcmp(sub, "forget"))
    return bl_forget_main(argc - 1, argv + 1);
  errmsg("binlog: unknown subcommand '%s' (tail, apply, status or forget; see auralog "
         "binlog --help)", sub);
  return 2;
}
