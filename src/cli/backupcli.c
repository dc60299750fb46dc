/*
 * backupcli.c: the commands a person types about backups (paper Fig. 4
 * step 6, §2.3): `auralog backup status` and `auralog restore`.
 *
 * Both find the object store as the cluster does (cluster.json's
 * "backup", from `cluster up --backup`), or from --backup URL, and the
 * volume's id from the coordinator (status) or from --volume-id when the
 * volume is gone. A restore builds a stock SQLite file (restore.h) and,
 * with --into, copies it into a new volume through the auralog VFS
 * (SQLite's online backup API: each page a redo record, quorum-written
 * like any commit), which an engine then opens like any other.
 */
#define _GNU_SOURCE         /* strptime */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backup/bkfmt.h"
#include "backup/bkplan.h"
#include "backup/objstore.h"
#include "backup/restore.h"
#include "cli/cluster.h"
#include "cli/status.h"
#include "lib/addr.h"
#include "lib/log.h"
#include "net/rpc.h"
#include "roles.h"

/* The store: --backup, else the cluster's. */
static struct objstore *open_store(const char *cmd, const char *url)
{
  static struct cluster cl;
  char why[400];
  if (url == NULL) {
    if (cluster_find(&cl, NULL, 0, -1, -1, 0) <= 0)
      die("%s: no cluster here, and no --backup URL given", cmd);
    if (cl.backup[0] == 0)
      die("%s: the cluster in %s does not back up (cluster up --backup dir), and no "
          "--backup URL was given", cmd, cl.dir);
    url = cl.backup;
  }
  struct objstore *o = obj_open(url, why, sizeof why);
  if (o == NULL)
    die("%s: %s", cmd, why);
  return o;
}

/* --volume-id N: a volume's id, a number above 0. */
static uint64_t vol_arg(const char *cmd, const char *a)
{
  char *end = NULL;
  unsigned long long v = strtoull(a, &end, 10);
  if (end == a || *end || v == 0)
    die("%s: --volume-id must be a volume's id (a number above 0), not '%s'", cmd, a);
  return v;
}

/* The volume's id and VDL as the coordinator has them (exists 0: none). */
static uint64_t volume_id(const char *cmd, const char *coord, const char *volume,
                          uint64_t *vdl, int *exists)
{
  char why[320];
  Env *rep = status_fetch(coord, volume, why, sizeof why);
  if (rep == NULL)
    die("%s: %s (is the cluster up? or name the volume's id: --volume-id N)", cmd, why);
  uint64_t id = rep->status->volume ? rep->status->volume->id : 0;
  *exists = rep->status->exists;
  *vdl = rep->status->engine ? rep->status->engine->vdl : 0;
  wire_free(rep);
  return id;
}

/* ---- backup status ------------------------------------------------------- */

/* How old the PG's backup point is, in seconds, when the VDL is past it:
 * now minus the time its newest piece says the VDL reached the point (the
 * pieces' clock notes; -1: not known). */
static double lag_seconds(struct objstore *st, uint64_t vol, uint32_t pg,
                          const struct bk_pgset *p, uint64_t hi)
{
  for (size_t i = p->nlogs; i-- > 0;) {
    if (p->logs[i].to != hi)
      continue;
    char key[BK_KEY_MAX], why[300];
    bk_key_log(key, vol, pg, p->logs[i].from, p->logs[i].to);
    uint8_t *b;
    size_t n;
    if (obj_get(st, key, &b, &n, why, sizeof why) != 0)
      return -1;
    Auralog__BackupLog *m = bk_decode_log(key, b, n, why, sizeof why);
    free(b);
    if (m == NULL)
      return -1;
    uint64_t t = 0;
    for (size_t c = 0; c + 1 < m->n_clock; c += 2)
      if (m->clock[c + 1] <= hi && m->clock[c] > t)
        t = m->clock[c];
    auralog__backup_log__free_unpacked(m, NULL);
    if (t == 0)
      return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
    return now > (double)t ? (now - (double)t) / 1000 : 0;
  }
  return -1;
}

static void status_usage(FILE *f)
{
  fprintf(f,
    "usage: auralog backup status [--volume NAME | --volume-id N] [--backup URL] [--json]\n"
    "                             [--dir DIR]\n"
    "\n"
    "What the object store holds of a volume, per PG: its backup point (every\n"
    "record at or below it is staged), how far that lags the volume's VDL, the\n"
    "oldest point it can still restore, and its objects and bytes. The nodes\n"
    "stage each PG's log about every %d ms (paper Fig. 4 step 6).\n",
    BACKUP_MS);
}

static int status_cmd(int argc, char **argv)
{
  static struct option opts[] = {
    {"volume", required_argument, 0, 'v'}, {"volume-id", required_argument, 0, 'i'},
    {"backup", required_argument, 0, 'b'}, {"json", no_argument, 0, 'j'},
    {"coord", required_argument, 0, 'c'}, {"dir", required_argument, 0, 'd'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *volume = "main", *url = NULL, *coord = NULL;
  uint64_t vol = 0;
  int json = 0, o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'v': volume = optarg; break;
    case 'i': vol = vol_arg("backup status", optarg); break;
    case 'b': url = optarg; break;
    case 'j': json = 1; break;
    case 'c': coord = optarg; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 'h': status_usage(stdout); return 0;
    default: status_usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("backup status: unexpected argument '%s'", argv[optind]);
  struct objstore *st = open_store("backup status", url);
  uint64_t vdl = 0;
  int exists = 0;
  if (vol == 0)
    vol = volume_id("backup status", addr_coord(coord), volume, &vdl, &exists);
  struct bk_volset vs;
  char why[400];
  if (bk_scan(st, vol, &vs, why, sizeof why) != 0)
    die("backup status: %s", why);
  uint64_t lo_all = 0, hi_all = UINT64_MAX, bytes = 0, objects = 0;
  if (json)
    printf("{\"volume_id\": %" PRIu64 ", \"store\": \"%s\", \"vdl\": %" PRIu64 ", \"pgs\": [",
           vol, obj_describe(st), vdl);
  else
    printf("volume %" PRIu64 " in %s (vdl %" PRIu64 ")\n  pg   backup point   lag (LSNs)   "
           "lag (s)   oldest point   objects        bytes\n", vol, obj_describe(st), vdl);
  for (size_t i = 0; i < vs.npgs; i++) {
    const struct bk_pgset *p = &vs.pgs[i];
    uint64_t lo = 0, hi = 0;
    int has = p->present && bk_window(p, &lo, &hi);
    size_t n = p->nbases + p->nlogs;
    objects += n;
    bytes += p->bytes;
    if (!has) {
      lo_all = UINT64_MAX;
      hi_all = 0;
    } else {
      if (lo > lo_all)
        lo_all = lo;
      if (hi < hi_all)
        hi_all = hi;
    }
    uint64_t lag = vdl > hi ? vdl - hi : 0;
    double lag_s = lag && has ? lag_seconds(st, vol, (uint32_t)i, p, hi) : 0;
    char ls[32];
    if (lag_s < 0)
      snprintf(ls, sizeof ls, "-");
    else
      snprintf(ls, sizeof ls, "%.1f", lag_s);
    if (json)
      printf("%s{\"pg\": %zu, \"point\": %" PRIu64 ", \"lag_lsns\": %" PRIu64
             ", \"lag_s\": %.3f, \"oldest\": %" PRIu64 ", \"objects\": %zu, \"bytes\": %" PRIu64
             "}", i ? ", " : "", i, hi, lag, lag_s, lo, n, p->bytes);
    else if (has)
      printf("  %-4zu %12" PRIu64 " %12" PRIu64 " %9s %14" PRIu64 " %9zu %12" PRIu64 "\n", i,
             hi, lag, ls, lo, n, p->bytes);
    else
      printf("  %-4zu %12s %12s %9s %14s %9zu %12" PRIu64 "\n", i, "none", "-", "-", "-", n,
             p->bytes);
  }
  int whole = vs.npgs > 0 && lo_all <= hi_all;
  if (json) {
    printf("], \"restorable\": %s", whole ? "true" : "false");
    if (whole)
      printf(", \"oldest\": %" PRIu64 ", \"newest\": %" PRIu64, lo_all, hi_all);
    printf(", \"objects\": %" PRIu64 ", \"bytes\": %" PRIu64 "}\n", objects, bytes);
  } else if (vs.npgs == 0) {
    printf("  nothing staged yet\n");
  } else if (whole) {
    printf("restorable: any LSN from %" PRIu64 " to %" PRIu64 " (auralog restore --to-lsn N "
           "--into NEWVOL); %" PRIu64 " objects, %" PRIu64 " bytes\n", lo_all, hi_all, objects,
           bytes);
  } else {
    printf("not restorable yet: a PG has nothing staged\n");
  }
  bk_volset_free(&vs);
  obj_close(st);
  return 0;
}

/* ---- restore -------------------------------------------------------------- */

static void restore_usage(FILE *f)
{
  fprintf(f,
    "usage: auralog restore [--volume NAME | --volume-id N] [--to-lsn N | --to-time T]\n"
    "                       (--into NEWVOL | --file PATH) [--backup URL] [--dir DIR]\n"
    "\n"
    "Rebuild a volume as it was at a point, from its backup in the object\n"
    "store: the highest CPL at or below the point (whole transactions only),\n"
    "which every PG's staged log must reach.\n"
    "\n"
    "  --to-lsn N     the point: an LSN (auralog backup status shows the range)\n"
    "  --to-time T    the point: the newest VDL noted at or before T, as\n"
    "                 'YYYY-MM-DD HH:MM:SS[.mmm]' or 'HH:MM:SS[.mmm]' (today,\n"
    "                 local time, as the cluster's logs print it) or @UNIX_MS\n"
    "                 (neither: the newest point staged)\n"
    "  --into NEWVOL  load it into a new volume of the cluster (then: auralog\n"
    "                 engine --volume NEWVOL --listen ADDR, or the extension)\n"
    "  --file PATH    write it as a stock SQLite file (sqlite3 PATH)\n"
    "  --volume NAME  the volume backed up (default main); --volume-id N if it\n"
    "                 is gone from the cluster\n");
}

/* T as unix ms (0: not a time). */
static uint64_t parse_time(const char *t)
{
  if (t[0] == '@')
    return strtoull(t + 1, NULL, 10);
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *rest = strptime(t, "%Y-%m-%d %H:%M:%S", &tm);
  if (rest == NULL) {
    time_t now = time(NULL);
    localtime_r(&now, &tm);
    rest = strptime(t, "%H:%M:%S", &tm);
  }
  if (rest == NULL)
    return 0;
  unsigned ms = 0;
  if (*rest == '.') {
    char frac[4] = "000";
    for (int i = 0; i < 3 && rest[1 + i] >= '0' && rest[1 + i] <= '9'; i++)
      frac[i] = rest[1 + i];
    ms = (unsigned)atoi(frac);
    rest++;
    while (*rest >= '0' && *rest <= '9')
      rest++;
  }
  if (*rest)
    return 0;
  tm.tm_isdst = -1;
  time_t s = mktime(&tm);
  return s < 0 ? 0 : (uint64_t)s * 1000 + ms;
}

/* Tell the cluster's journal what was restored (coord/journal.c
 * "restore"; lab 12 grades from it): best effort, signed as the operator
 * (roles.c R2); a coordinator that is down or refuses misses it, and we
 * say so. */
static void note_restore(const char *coord, const char *volume, uint64_t vol, const char *into,
                         const struct rs_target *t, const struct rs_result *r,
                         unsigned long long took_ms)
{
  Auralog__Fault f = AURALOG__FAULT__INIT;
  Auralog__RestoreNote rn = AURALOG__RESTORE_NOTE__INIT;
  rn.volume = (char *)volume;
  rn.volume_id = vol;
  rn.into = (char *)(into ? into : "");
  rn.to_lsn = t->to_lsn;
  rn.to_ms = t->to_ms;
  rn.point = r->cpl;
  rn.pages = r->pages;
  rn.took_ms = took_ms;
  f.action = "restore";
  f.restore = &rn;
  char why[300];
  Env *rep = fault_send(coord, &f, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_OK, why, sizeof why) != 0)
    fprintf(stderr, "restore: (the cluster's journal did not note it: %s)\n", why);
  wire_free(rep);
}

static int restore_cmd(int argc, char **argv)
{
  static struct option opts[] = {
    {"volume", required_argument, 0, 'v'}, {"volume-id", required_argument, 0, 'i'},
    {"backup", required_argument, 0, 'b'}, {"to-lsn", required_argument, 0, 'l'},
    {"to-time", required_argument, 0, 't'}, {"into", required_argument, 0, 'n'},
    {"file", required_argument, 0, 'f'}, {"coord", required_argument, 0, 'c'},
    {"dir", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *volume = "main", *url = NULL, *into = NULL, *file = NULL, *coord = NULL;
  const char *targ = NULL;
  uint64_t vol = 0;
  struct rs_target t = {0};
  int o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'v': volume = optarg; break;
    case 'i': vol = vol_arg("restore", optarg); break;
    case 'b': url = optarg; break;
    case 'l': {
      char *end = NULL;
      t.to_lsn = strtoull(optarg, &end, 10);
      if (end == optarg || *end || t.to_lsn == 0)
        die("restore: --to-lsn needs an LSN (a number above 0)");
      break;
    }
    case 't':
      targ = optarg;
      if ((t.to_ms = parse_time(optarg)) == 0)
        die("restore: --to-time '%s': say 'YYYY-MM-DD HH:MM:SS[.mmm]', 'HH:MM:SS[.mmm]' "
            "or @UNIX_MS", optarg);
      break;
    case 'n': into = optarg; break;
    case 'f': file = optarg; break;
    case 'c': coord = optarg; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 'h': restore_usage(stdout); return 0;
    default: restore_usage(stderr); return 2;
    }
  }
  if (optind < argc)
    die("restore: unexpected argument '%s' (see auralog restore --help)", argv[optind]);
  if (t.to_lsn && t.to_ms)
    die("restore: say --to-lsn or --to-time, not both");
  if (!into && !file)
    die("restore: say where: --into NEWVOL (a new volume) or --file PATH (a SQLite file)");
  if (into && !wire_name_ok(into))
    die("restore: '%s' is not a volume name (1-%d of A-Z a-z 0-9 _ . -)", into, NAME_MAX_LEN);
  /* The cluster only where it is needed: a volume named, or one to make.
   * `--volume-id N --backup URL --file F` needs none (the cluster may be
   * gone: the backup is what is left). */
  if (vol == 0 || into)
    coord = addr_coord(coord);
  uint64_t vdl = 0;
  int exists = 0;
  if (vol == 0)
    vol = volume_id("restore", coord, volume, &vdl, &exists);
  if (into) {
    uint64_t v2;
    int e2 = 0;
    volume_id("restore", coord, into, &v2, &e2);
    if (e2)
      die("restore: volume %s exists; a restore makes a new one (say another name)", into);
  }
  struct objstore *st = open_store("restore", url);
  char tmp[PATH_MAX], why[600];
  const char *out = file;
  if (!file) {
    snprintf(tmp, sizeof tmp, "%s/auralog-restore-%ld.db", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                               : "/tmp",
             (long)getpid());
    out = tmp;
  }
  struct rs_result r;
  unsigned long long t0 = now_ms();
  fprintf(stderr, "restore: reading volume %" PRIu64 "'s backup in %s ...\n", vol,
          obj_describe(st));
  if (restore_build(st, vol, &t, out, &r, why, sizeof why) != 0)
    die("restore: %s", why);
  if (r.damaged)             /* restore.c R4: it planned around them */
    fprintf(stderr, "restore: %s\n", r.note);
  printf("restored volume %" PRIu64 " to LSN %" PRIu64 " (the last whole transaction at or "
         "below %" PRIu64 "%s%s%s): %u PG%s, %" PRIu64 " records applied, %" PRIu64 " pages; "
         "read %" PRIu64 " objects, %" PRIu64 " bytes\n", vol, r.cpl, r.target,
         targ ? ", the VDL noted at or before " : "", targ ? targ : "", "", r.npgs,
         r.npgs == 1 ? "" : "s", r.records, r.pages, r.objects, r.bytes);
  if (file)
    printf("wrote %s (sqlite3 %s)\n", file, file);
  if (into) {
    if (restore_into_volume(out, coord, into, r.pg_pages ? r.pg_pages : PG_PAGES, why,
                            sizeof why) != 0) {
      unlink(tmp);
      die("restore: %s", why);
    }
    unlink(tmp);
    printf("loaded into new volume %s; serve it with an engine of its own: auralog engine "
           "--volume %s --listen 127.0.0.1:PORT &  then: auralog sql --engine 127.0.0.1:PORT\n",
           into, into);
  }
  if (coord)
    note_restore(coord, volume, vol, into, &t, &r, now_ms() - t0);
  obj_close(st);
  return 0;
}

/* ---- backup retention ---------------------------------------------------- */

/* "90s", "10m", "2h", "7d" or plain ms: ms (0: not a duration). */
static uint64_t parse_span(const char *t)
{
  char *end = NULL;
  double v = strtod(t, &end);
  if (end == t || v <= 0)
    return 0;
  double mul = !*end ? 1 : !strcmp(end, "ms") ? 1 : !strcmp(end, "s") ? 1e3
             : !strcmp(end, "m") ? 60e3 : !strcmp(end, "h") ? 3600e3 : !strcmp(end, "d") ? 86400e3
             : 0;
  return mul ? (uint64_t)(v * mul) : 0;
}

static int retention_cmd(int argc, char **argv)
{
  static struct option opts[] = {
    {"volume", required_argument, 0, 'v'}, {"volume-id", required_argument, 0, 'i'},
    {"backup", required_argument, 0, 'b'}, {"coord", required_argument, 0, 'c'},
    {"dir", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *volume = "main", *url = NULL, *coord = NULL;
  uint64_t vol = 0;
  int o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'v': volume = optarg; break;
    case 'i': vol = vol_arg("backup retention", optarg); break;
    case 'b': url = optarg; break;
    case 'c': coord = optarg; break;
    case 'd': setenv("AURALOG_DIR", optarg, 1); break;
    case 'h':
      printf("usage: auralog backup retention [D] [--volume NAME] [--backup URL] [--dir DIR]\n"
             "\nHow long points stay restorable (default %d s): D as 90s, 10m, 2h, 7d. The\n"
             "PGs' uploaders let older objects go after each new base image (a PG that\n"
             "changed gets one every %d s, or a quarter of D). No D: say what it is.\n",
             BACKUP_RETENTION_MS / 1000, BACKUP_BASE_MS / 1000);
      return 0;
    default: return 2;
    }
  }
  struct objstore *st = open_store("backup retention", url);
  uint64_t vdl = 0;
  int exists = 0;
  if (vol == 0)
    vol = volume_id("backup retention", addr_coord(coord), volume, &vdl, &exists);
  char why[400];
  if (optind >= argc) {
    uint64_t ms;
    int set;
    if (bk_retention_get(st, vol, &ms, &set, why, sizeof why) != 0)
      die("backup retention: %s", why);
    printf("volume %" PRIu64 ": points stay restorable for %" PRIu64 " s%s\n", vol, ms / 1000,
           set ? "" : " (the default)");
    obj_close(st);
    return 0;
  }
  uint64_t ms = parse_span(argv[optind]);
  if (ms < 1000)
    die("backup retention: '%s' is not a duration of at least 1 s (say 90s, 10m, 2h, 7d)",
        argv[optind]);
  if (bk_retention_put(st, vol, ms, why, sizeof why) != 0)
    die("backup retention: %s", why);
  printf("volume %" PRIu64 ": points stay restorable for %" PRIu64 " s (from the next base "
         "image of each PG)\n", vol, ms / 1000);
  obj_close(st);
  return 0;
}

int backup_main(int argc, char **argv)
{
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    FILE *f = argc < 2 ? stderr : stdout;
    fprintf(f, "usage: auralog backup status [options]   (auralog backup status --help)\n"
               "       auralog backup retention [D]       (how long points stay restorable)\n"
               "       auralog restore ...                (auralog restore --help)\n"
               "\nContinuous backup: the storage nodes stage each PG's log and base images\n"
               "to an object store (cluster up --backup dir|URL).\n");
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "status"))
    return status_cmd(argc - 1, argv + 1);
  if (!strcmp(argv[1], "retention"))
    return retention_cmd(argc - 1, argv + 1);
  if (!strncmp(argv[1], "--retention", 11)) {
    /* `backup --retention D` (the words): the same. */
    char *v[8] = {"retention"};
    int n = 1;
    if (argv[1][11] == '=')
      v[n++] = argv[1] + 12;
    for (int i = 2; i < argc && n < 7; i++)
      v[n++] = argv[i];
    return retention_cmd(n, v);
  }
  errmsg("backup: unknown action '%s' (say status or retention; see auralog backup --help)",
         argv[1]);
  return 2;
}

int restore_main(int argc, char **argv)
{
  return restore_cmd(argc, argv);
}
