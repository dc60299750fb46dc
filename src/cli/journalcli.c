/*
 * journalcli.c: `auralog journal`: the cluster's event journal, readable.
 *
 * The coordinator keeps what happened to the cluster in its journal
 * (DIR/data/coord/journal.jsonl, journal.h; coord/journal.c says what it
 * records): faults, epochs, truncations, stalls, samples of the writer,
 * the schema changes the writer committed ("ddl", with their commit LSNs)
 * and the operator's restores. The labs grade from it; this command shows
 * it to a person, one event a line, oldest first:
 *
 *   16:02:11.123  ddl      main epoch 3: drop table orders at lsn 48213
 *                          (drop table orders)
 *
 * so that a student finds, say, the LSN at which a table was dropped by
 * mistake and restores the volume to just before it (`auralog restore
 * --to-lsn`; lab 12). Each line's MAC is checked as `lab check` checks
 * it: a line that fails is shown as such, never as an event.
 *
 * It reads the journal file of the cluster it finds (--dir, AURALOG_DIR,
 * ~/.auralog), as every command finds its cluster: the coordinator's
 * data directory must be on this machine.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli/cluster.h"
#include "journal.h"
#include "lib/log.h"

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog journal [--kind K[,K...]] [--last N | --all] [--json] [--dir DIR]\n"
    "  The cluster's event journal (what the coordinator recorded), oldest first:\n"
    "  faults, nodes down and up, epochs, truncations, stalls, the writer's\n"
    "  samples, schema changes with their commit LSN (ddl), restores.\n"
    "  --kind K,...  only these kinds (e.g. ddl, restore, fault, epoch, trunc)\n"
    "  --last N      the last N events shown (default 40)\n"
    "  --all         every event\n"
    "  --json        each event as its journal line (JSON, its MAC checked)\n"
    "  e.g. auralog journal --kind ddl   (when was a table dropped, at which LSN)\n");
}

/* "a,b,c" holds kind? (NULL list: every kind) */
static int kind_in(const char *list, const char *kind)
{
  if (list == NULL)
    return 1;
  size_t n = strlen(kind);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, kind, n) == 0)
      return 1;
    p += len + (e != NULL);
  }
  return 0;
}

static const char *str(const cJSON *e, const char *k)
{
  const cJSON *v = cJSON_GetObjectItem(e, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static unsigned long long num(const cJSON *e, const char *k)
{
  const cJSON *v = cJSON_GetObjectItem(e, k);
  return cJSON_IsNumber(v) && v->valuedouble > 0 ? (unsigned long long)v->valuedouble : 0;
}

/* Local wall time of ms since the epoch: "HH:MM:SS.mmm". */
static void clock_of(uint64_t ms, char *out, size_t n)
{
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  localtime_r(&s, &tm);
  snprintf(out, n, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
           (unsigned)(ms % 1000));
}

/* One event, for a person. The kinds a student looks for get words of
 * their own; the others their fields as key=value. */
static void show(const cJSON *e)
{
  char at[32];
  const char *kind = str(e, "kind");
  /* A schema change at its commit (the writer's clock); the rest when
   * the coordinator heard of them. */
  clock_of(num(e, !strcmp(kind, "ddl") && num(e, "wall_ms") ? "wall_ms" : "t"), at, sizeof at);
  printf("%s  %-9s ", at, kind);
  if (!strcmp(kind, "ddl")) {
    printf("%s epoch %llu: %s %s at lsn %llu\n%24s(%s)\n", str(e, "volume"), num(e, "epoch"),
           str(e, "op"), str(e, "name"), num(e, "lsn"), "", str(e, "sql"));
    return;
  }
  if (!strcmp(kind, "restore")) {
    printf("%s restored to lsn %llu", str(e, "volume"), num(e, "point"));
    if (num(e, "to_lsn"))
      printf(" (asked: --to-lsn %llu)", num(e, "to_lsn"));
    else if (num(e, "to_ms")) {
      char t[32];
      clock_of(num(e, "to_ms"), t, sizeof t);
      printf(" (asked: --to-time %s)", t);
    }
    printf(*str(e, "into") ? " into new volume %s\n" : " into a file%s\n", str(e, "into"));
    return;
  }
  const cJSON *f;
  int first = 1;
  cJSON_ArrayForEach(f, e) {
    if (!strcmp(f->string, "seq") || !strcmp(f->string, "t") || !strcmp(f->string, "kind") ||
        !strcmp(f->string, "mac"))
      continue;
    char *v = cJSON_IsString(f) ? NULL : cJSON_PrintUnformatted(f);
    printf("%s%s=%s", first ? "" : " ", f->string, v ? v : f->valuestring);
    free(v);
    first = 0;
  }
  printf("\n");
}

int journal_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"kind", required_argument, 0, 'k'}, {"last", required_argument, 0, 'n'},
    {"all", no_argument, 0, 'a'}, {"json", no_argument, 0, 'j'},
    {"dir", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *kinds = NULL, *dir = NULL;
  long last = 40;
  int json = 0, o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'k': kinds = optarg; break;
    case 'n': {
      char *end = NULL;
      last = strtol(optarg, &end, 10);
      if (end == optarg || *end || last < 1)
        die("journal: --last needs a number of events (1 or more), not '%s'", optarg);
      break;
    }
    case 'a': last = -1; break;
    case 'j': json = 1; break;
    case 'd': dir = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("journal: unexpected argument '%s' (see auralog journal --help)", argv[optind]);
  static struct cluster cl;
  if (cluster_find(&cl, dir, 0, -1, -1, 0) <= 0)
    return 1;                  /* it said where it looked */
  char path[PATH_MAX + 64], why[400];
  snprintf(path, sizeof path, "%s/data/coord/journal.jsonl", cl.dir);
  uint8_t key[32];
  int bad = 0;
  cJSON *all = journal_read(path, key, &bad, why, sizeof why);
  if (all == NULL)
    die("journal: %s", why);
  /* The events shown: the last `last` of the kinds asked. */
  long n = cJSON_GetArraySize(all), match = 0, from = 0;
  for (long i = 0; i < n; i++)
    match += kind_in(kinds, str(cJSON_GetArrayItem(all, (int)i), "kind"));
  long skip = last >= 0 && match > last ? match - last : 0;
  for (long i = 0; i < n; i++) {
    const cJSON *e = cJSON_GetArrayItem(all, (int)i);
    if (!kind_in(kinds, str(e, "kind")) || from++ < skip)
      continue;
    if (json) {
      char *s = cJSON_PrintUnformatted(e);
      printf("%s\n", s);
      free(s);
    } else if (!strcmp(str(e, "kind"), "bad")) {
      printf("(a line that fails its MAC: written, moved or copied by hand)\n");
    } else {
      show(e);
    }
  }
  fflush(stdout);
  if (skip)
    fprintf(stderr, "journal: %ld earlier event%s not shown (--all shows every one)\n", skip,
            skip == 1 ? "" : "s");
  if (match == 0)
    fprintf(stderr, "journal: no %s%sevent in %s yet\n", kinds ? kinds : "", kinds ? " " : "",
            path);
  if (bad)
    fprintf(stderr, "journal: %d line%s of %s fail%s its MAC\n", bad, bad == 1 ? "" : "s",
            path, bad == 1 ? "s" : "");
  cJSON_Delete(all);
  return 0;
}
