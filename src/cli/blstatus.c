/*
 * blstatus.c: `auralog binlog status` and `auralog binlog forget` (issue
 * 29; the rest of `auralog binlog` is binlogcli.c): where the volume's
 * binlog stands, segment by segment, and its consumers with their lag;
 * and the operator's forgetting of a consumer (retention may then release
 * what only it held). With --binlog-file, status reads a community
 * binlog's file instead.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/binlogcli_int.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "net/keyfile.h"
#include "roles.h"
#include "vfs/binlog.h"
#include "vfs/blfile.h"

static void status_usage(FILE *f)
{
  fprintf(f,
    "usage: auralog binlog status [--json] [--volume NAME] [--dir DIR | --coord ADDR]\n"
    "                             [--binlog-file PATH]\n"
    "\n"
    "Show the volume's binlog: its first and last durable positions (commit LSNs),\n"
    "the bytes it holds, each binlog segment's durable end and release point (what\n"
    "retention released), and each registered consumer's position and lag, in LSNs\n"
    "and in time (commit times).\n"
    "\n"
    "  --json         one JSON object\n"
    COMMON_HELP);
}

/* The community binlog's file: what it holds, read through (its frames
 * are checked as the engine's recovery checks them). */
struct fcount {
  uint64_t frames, first, last;
};

static void count_frame(void *arg, uint64_t xid, const uint8_t *p, size_t n, uint64_t off)
{
  struct fcount *c = arg;
  (void)p;
  (void)n;
  (void)off;
  if (c->frames++ == 0)
    c->first = xid;
  c->last = xid;
}

static int status_file(const char *path, int json)
{
  struct fcount c = {0, 0, 0};
  struct stat st;
  char why[600];
  if (stat(path, &st) != 0)
    die("binlog status: %s: %s", path, strerror(errno));
  if (blf_read_from(path, 0, count_frame, &c, why, sizeof why) != 0)
    die("binlog status: %s", why);
  if (json)
    printf("{\"file\": \"%s\", \"bytes\": %lld, \"frames\": %llu, \"first\": %llu, "
           "\"last\": %llu}\n", path, (long long)st.st_size, (unsigned long long)c.frames,
           (unsigned long long)c.first, (unsigned long long)c.last);
  else
    printf("community binlog %s: %lld bytes, %llu transactions, commit LSNs %llu to %llu\n",
           path, (long long)st.st_size, (unsigned long long)c.frames,
           (unsigned long long)c.first, (unsigned long long)c.last);
  return 0;
}

int bl_status_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"json", no_argument, 0, 'j'}, {"volume", required_argument, 0, 'v'},
    {"coord", required_argument, 0, 'c'}, {"dir", required_argument, 0, 'd'},
    {"binlog-file", required_argument, 0, 'B'}, {"help", no_argument, 0, 'h'}, {0}};
  struct common cm = {"main", NULL};
  int json = 0, o;
  char why[600];
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'j': json = 1; break;
    case 'v': case 'c': case 'd': case 'B': bl_common_opt(&cm, o); break;
    case 'h': status_usage(stdout); return 0;
    default: status_usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("binlog status: unexpected argument '%s' (see auralog binlog status --help)",
        argv[optind]);
  bl_common_check("status", &cm);
  if (cm.file)
    return status_file(cm.file, json);
  struct blsrc b;
  bl_open_or_die("status", &b, &cm);
  int up = bl_probe(&b);
  /* The freshest segment's last durable transaction; the oldest held
   * anywhere (segments release on their own). */
  uint64_t last = 0, bytes = 0, low = UINT64_MAX;
  int lowseg = -1;
  for (int i = 0; i < b.nseg; i++) {
    const struct blseg *g = &b.seg[i];
    if (!g->answered)
      continue;
    if (g->last > last)
      last = g->last;
    if (g->bytes > bytes)
      bytes = g->bytes;
    if (g->first < low) {
      low = g->first;
      lowseg = i;
    }
  }
  uint64_t first = 0, first_ms = 0, last_ms = 0;
  if (lowseg >= 0 && last > 0) {
    struct blbatch bt;
    b.pref = lowseg;
    if (bl_fetch(&b, low, 1, &bt, why, sizeof why) == 0 && bt.n > 0) {
      first = bt.lsn[0];
      first_ms = bt.txn[0]->wall_ms;
    }
    bl_batch_free(&bt);
    last_ms = bl_wall_at(&b, last);
  }
  Auralog__BinlogConsumer bc = AURALOG__BINLOG_CONSUMER__INIT;
  bc.volume = b.volume;
  bc.name = "";
  bc.list = 1;
  Env *cenv = NULL;
  int code;
  Auralog__BinlogConsumers *cs = bl_consumers(&b, &bc, &cenv, &code, why, sizeof why);
  if (cs == NULL)
    die("binlog status: %s", why);
  uint64_t now = bl_wall_now();
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "volume", b.volume);
    cJSON_AddNumberToObject(j, "first", (double)first);
    cJSON_AddNumberToObject(j, "first_ms", (double)first_ms);
    cJSON_AddNumberToObject(j, "last", (double)last);
    cJSON_AddNumberToObject(j, "last_ms", (double)last_ms);
    cJSON_AddNumberToObject(j, "bytes", (double)bytes);
    cJSON_AddNumberToObject(j, "segments_up", up);
    cJSON *segs = cJSON_AddArrayToObject(j, "segments");
    for (int i = 0; i < b.nseg; i++) {
      const struct blseg *g = &b.seg[i];
      cJSON *s = cJSON_CreateObject();
      cJSON_AddStringToObject(s, "node", g->node);
      cJSON_AddStringToObject(s, "az", g->az);
      cJSON_AddStringToObject(s, "addr", g->addr);
      cJSON_AddStringToObject(s, "state", g->answered ? "up" : "down");
      if (g->answered) {
        cJSON_AddNumberToObject(s, "durable", (double)g->durable);
        cJSON_AddNumberToObject(s, "released", (double)g->first);
        cJSON_AddNumberToObject(s, "last", (double)g->last);
        cJSON_AddNumberToObject(s, "bytes", (double)g->bytes);
        cJSON_AddNumberToObject(s, "epoch", (double)g->epoch);
      } else {
        cJSON_AddStringToObject(s, "error", g->err);
      }
      cJSON_AddItemToArray(segs, s);
    }
    cJSON *cj = cJSON_AddArrayToObject(j, "consumers");
    for (size_t i = 0; i < cs->n_consumers; i++) {
      const Auralog__BinlogPos *p = cs->consumers[i];
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "name", p->name);
      cJSON_AddNumberToObject(c, "pos", (double)p->pos);
      cJSON_AddNumberToObject(c, "lag_lsn", (double)(last > p->pos ? last - p->pos : 0));
      if (last <= p->pos)
        cJSON_AddNumberToObject(c, "lag_ms", 0);
      else if (p->pos_ms && last_ms >= p->pos_ms)
        cJSON_AddNumberToObject(c, "lag_ms", (double)(last_ms - p->pos_ms));
      else
        cJSON_AddNullToObject(c, "lag_ms");
      cJSON_AddNumberToObject(c, "moved_ms_ago",
                              p->at_ms && now >= p->at_ms ? (double)(now - p->at_ms) : -1);
      cJSON_AddBoolToObject(c, "gap", first > 0 && p->pos + 1 < first && last > p->pos);
      cJSON_AddItemToArray(cj, c);
    }
    char *s = cJSON_PrintUnformatted(j);
    puts(s);
    free(s);
    cJSON_Delete(j);
  } else {
    printf("binlog of volume %s (enhanced: in the storage tier, pg %d)\n", b.volume, BINLOG_PG);
    if (last == 0)
      printf("  no durable transaction held yet\n");
    else
      printf("  transactions %llu .. %llu durable  %llu bytes held\n",
             (unsigned long long)first, (unsigned long long)last, (unsigned long long)bytes);
    printf("segments  %d of %d answer\n", up, b.nseg);
    for (int i = 0; i < b.nseg; i++) {
      const struct blseg *g = &b.seg[i];
      if (g->answered)
        printf("  %-4s %-21s durable %-8llu released to %-8llu last %-8llu %llu bytes\n",
               g->node, g->addr, (unsigned long long)g->durable, (unsigned long long)g->first,
               (unsigned long long)g->last, (unsigned long long)g->bytes);
      else
        printf("  %-4s %-21s down (%s)\n", g->node, g->addr, g->err);
    }
    printf("consumers %zu\n", cs->n_consumers);
    for (size_t i = 0; i < cs->n_consumers; i++) {
      const Auralog__BinlogPos *p = cs->consumers[i];
      printf("  %-16s at %-8llu lag %llu lsn", p->name, (unsigned long long)p->pos,
             (unsigned long long)(last > p->pos ? last - p->pos : 0));
      if (last <= p->pos)
        printf(", 0 s");
      else if (p->pos_ms && last_ms >= p->pos_ms)
        printf(", %.1f s", (double)(last_ms - p->pos_ms) / 1000);
      if (p->at_ms && now >= p->at_ms)
        printf("  (moved %.0f s ago)", (double)(now - p->at_ms) / 1000);
      if (first > 0 && p->pos + 1 < first && last > p->pos)
        printf("  GAP: transactions after it were released");
      putchar('\n');
    }
  }
  wire_free(cenv);
  bl_close(&b);
  return 0;
}

/* ---- forget ------------------------------------------------------------------ */

static void forget_usage(FILE *f)
{
  fprintf(f,
    "usage: auralog binlog forget NAME [--volume NAME] [--dir DIR | --coord ADDR]\n"
    "\n"
    "Unregister binlog consumer NAME: storage then keeps nothing for it, and may\n"
    "release what it has not read. The operator's (DIR/operator.key).\n"
    "\n"
    COMMON_HELP);
}

int bl_forget_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"volume", required_argument, 0, 'v'}, {"coord", required_argument, 0, 'c'},
    {"dir", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0}};
  struct common cm = {"main", NULL};
  int o;
  char why[400];
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'v': case 'c': case 'd': case 'B': bl_common_opt(&cm, o); break;
    case 'h': forget_usage(stdout); return 0;
    default: forget_usage(stderr); return 2;
    }
  }
  if (optind + 1 != argc) {
    forget_usage(stderr);
    return 2;
  }
  const char *name = argv[optind];
  if (!wire_name_ok(name))
    die("binlog forget: '%s' is not a consumer name", name);
  bl_common_check("forget", &cm);
  op_use(1);                 /* coord/binlogc.c C2: the operator signs it */
  struct blsrc b;
  memset(&b, 0, sizeof b);
  snprintf(b.coord, sizeof b.coord, "%s", cm.coord);
  snprintf(b.volume, sizeof b.volume, "%s", cm.volume);
  Auralog__BinlogConsumer bc = AURALOG__BINLOG_CONSUMER__INIT;
  bc.volume = b.volume;
  bc.name = (char *)name;
  bc.forget = 1;
  Env *env;
  int code;
  if (bl_consumers(&b, &bc, &env, &code, why, sizeof why) == NULL)
    die("binlog forget: %s", why);
  wire_free(env);
  bl_close(&b);
  printf("binlog consumer %s of volume %s forgotten\n", name, cm.volume);
  return 0;
}

/* ---- binlog ------------------------------------------------------------------ */

