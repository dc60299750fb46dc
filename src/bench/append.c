/*
 * append.c: `auralog bench append`: how many redo records per second one
 * storage node makes durable, batched and unbatched.
 *
 * Each client is a thread with its own connection and its own protection
 * group of the volume "bench" (so each has its own backlink chain), and
 * keeps one Append outstanding: send, wait for the ack, repeat. With
 * several clients the node's group commit puts the batches of one loop
 * turn into one lmdb transaction and one fsync.
 *
 * Baseline, measured in the same run on the same filesystem: the fsync
 * ceiling, a loop of 4 KiB write + fdatasync on a file beside the
 * cluster's data. One durable commit per fsync is what a node without
 * batching could at best do; the ratio column compares against it.
 * Conditions are printed with every figure (seed 001's lesson).
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lib/addr.h"
#include "lib/log.h"
#include "param.h"
#include "record.h"
#include "roles.h"
#include "net/auth.h"
#include "net/keyfile.h"
#include "net/rpc.h"
#include "bench/bench.h"

struct client {
  const char *addr;          /* the node */
  uint64_t volume_id, epoch;
  const Auralog__EpochTicket *ticket;   /* the epoch's: a node takes it only with it */
  uint32_t pg, first_page, npages, page_size;
  int batch, bytes;
  unsigned long long until;  /* now_ms() deadline */
  uint64_t records;
  double *lat;               /* ms per Append */
  size_t nlat, caplat;
  char err[256];
};

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One Append of n chained records starting after *prev. */
static int append(struct client *c, struct rpc *r, uint64_t *prev, int n, uint8_t *payload,
                  uint64_t *scl)
{
  Rec *recs = calloc((size_t)n, sizeof *recs);
  Rec **ptrs = calloc((size_t)n, sizeof *ptrs);
  Auralog__Range *g = calloc((size_t)n, sizeof *g);
  Auralog__Range **gp = calloc((size_t)n, sizeof *gp);
  for (int i = 0; i < n; i++) {
    uint64_t lsn = *prev + 1;
    auralog__record__init(&recs[i]);
    auralog__range__init(&g[i]);
    g[i].off = (uint32_t)((lsn * 37) % (c->page_size - (uint32_t)c->bytes));
    g[i].data.data = payload;
    g[i].data.len = (size_t)c->bytes;
    gp[i] = &g[i];
    recs[i].lsn = lsn;
    recs[i].prev_lsn = *prev;
    recs[i].page_no = c->first_page + (uint32_t)(lsn % c->npages);
    recs[i].flags = REC_CPL;
    recs[i].epoch = c->epoch;
    recs[i].ranges = &gp[i];
    recs[i].n_ranges = 1;
    rec_seal(&recs[i]);
    ptrs[i] = &recs[i];
    *prev = lsn;
  }
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Append a = AURALOG__APPEND__INIT;
  a.volume_id = c->volume_id;
  a.pg = c->pg;
  a.epoch = c->epoch;
  a.ticket = (Auralog__EpochTicket *)c->ticket;
  a.records = ptrs;
  a.n_records = (size_t)n;
  req.body_case = AURALOG__ENVELOPE__BODY_APPEND;
  req.append = &a;
  Env *rep = rpc_call(r, &req, RPC_TIMEOUT_MS, c->err, sizeof c->err);
  int rc = -1;
  if (rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_APPEND_ACK, c->err, sizeof c->err) == 0) {
    *scl = rep->append_ack->scl;
    rc = 0;
  }
  wire_free(rep);
  free(recs);
  free(ptrs);
  free(g);
  free(gp);
  return rc;
}

static void *client_run(void *arg)
{
  struct client *c = arg;
  struct rpc r;
  uint8_t *payload = malloc((size_t)c->bytes);
  for (int i = 0; i < c->bytes; i++)
    payload[i] = (uint8_t)(i * 7 + 1);
  if (rpc_open(&r, c->addr, 2000, c->err, sizeof c->err) != 0)
    goto out;
  /* Where does this segment's chain end? Offer LSN 1 (linking to 0): the
   * node stores it if the segment is empty, or calls it a duplicate; the
   * ack says the SCL either way. */
  uint64_t prev = 0, scl = 0;
  for (int tries = 0; tries < 40; tries++) {
    prev = 0;
    if (append(c, &r, &prev, 1, payload, &scl) == 0)
      break;
    usleep(50000);          /* the node may not know the segment yet */
  }
  if (scl == 0)
    goto out;
  prev = scl;
  c->err[0] = 0;
  while (now_ms() < c->until) {
    double t0 = bench_now_us();
    if (append(c, &r, &prev, c->batch, payload, &scl) != 0)
      break;
    if (scl != prev) {
      snprintf(c->err, sizeof c->err, "ack with scl %llu, expected %llu",
               (unsigned long long)scl, (unsigned long long)prev);
      break;
    }
    c->records += (uint64_t)c->batch;
    if (c->nlat == c->caplat) {
      c->caplat = c->caplat ? 2 * c->caplat : 4096;
      c->lat = realloc(c->lat, c->caplat * sizeof *c->lat);
    }
    c->lat[c->nlat++] = (bench_now_us() - t0) / 1000;
  }
  rpc_close(&r);
out:
  free(payload);
  return NULL;
}

struct result {
  const char *name;
  int clients, batch;
  double records_s, appends_s, p50, p99;
  double cpu_us_rec, cpu_us_append;   /* the node's CPU (user + system); -1: unknown */
};

static double pct(double *v, size_t n, double p)
{
  if (n == 0)
    return 0;
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return v[i];
}

static int run(const char *name, const char *addr, pid_t node_pid, Auralog__Volume *v,
               const Auralog__EpochTicket *tk, int clients, int batch, int bytes, int seconds,
               struct result *res)
{
  struct client *cs = calloc((size_t)clients, sizeof *cs);
  pthread_t *th = calloc((size_t)clients, sizeof *th);
  double cpu0 = node_pid > 0 ? bench_cpu_s(node_pid) : 0;
  unsigned long long t0 = now_ms();
  for (int i = 0; i < clients; i++) {
    Auralog__Pg *pg = v->pgs[i];
    cs[i] = (struct client){addr, v->id, v->epoch, tk, pg->pg, pg->first_page, pg->npages,
                            v->page_size, batch, bytes, t0 + (unsigned)seconds * 1000,
                            0, NULL, 0, 0, ""};
    pthread_create(&th[i], NULL, client_run, &cs[i]);
  }
  size_t nlat = 0;
  uint64_t recs = 0;
  int bad = 0;
  for (int i = 0; i < clients; i++) {
    pthread_join(th[i], NULL);
    if (cs[i].err[0]) {
      errmsg("bench: %s: client %d: %s", name, i, cs[i].err);
      bad = 1;
    }
    nlat += cs[i].nlat;
    recs += cs[i].records;
  }
  double secs = (double)(now_ms() - t0) / 1000;
  double cpu = node_pid > 0 ? bench_cpu_s(node_pid) - cpu0 : -1;
  double *all = malloc((nlat + 1) * sizeof *all);
  size_t k = 0;
  for (int i = 0; i < clients; i++) {
    memcpy(all + k, cs[i].lat, cs[i].nlat * sizeof *all);
    k += cs[i].nlat;
    free(cs[i].lat);
  }
  qsort(all, nlat, sizeof *all, cmp_double);
  *res = (struct result){name, clients, batch, (double)recs / secs, (double)nlat / secs,
                         pct(all, nlat, 0.50), pct(all, nlat, 0.99),
                         cpu >= 0 && recs ? cpu * 1e6 / (double)recs : -1,
                         cpu >= 0 && nlat ? cpu * 1e6 / (double)nlat : -1};
  free(all);
  free(cs);
  free(th);
  return bad ? -1 : 0;
}

/* The baseline: 4 KiB write + fdatasync, one after another, for seconds. */
static void fsync_ceiling(const char *dir, int seconds, struct result *res)
{
  char p[1200];
  snprintf(p, sizeof p, "%s/bench-fsync.tmp", dir);
  int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0)
    die("bench: cannot create %s", p);
  char buf[4096];
  memset(buf, 1, sizeof buf);
  double *lat = malloc(sizeof *lat * 1000000);
  size_t n = 0;
  unsigned long long t0 = now_ms(), until = t0 + (unsigned)seconds * 1000;
  while (now_ms() < until && n < 1000000) {
    double s = bench_now_us();
    if (pwrite(fd, buf, sizeof buf, (off_t)((n % 256) * sizeof buf)) < 0 || fdatasync(fd) != 0)
      die("bench: write to %s failed", p);
    lat[n++] = (bench_now_us() - s) / 1000;
  }
  double secs = (double)(now_ms() - t0) / 1000;
  close(fd);
  unlink(p);
  qsort(lat, n, sizeof *lat, cmp_double);
  *res = (struct result){"fsync ceiling (4 KiB write + fdatasync)", 1, 1, n / secs, n / secs,
                         pct(lat, n, 0.5), pct(lat, n, 0.99), -1, -1};
  free(lat);
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog bench append [--node ID] [--seconds N] [--bytes N] [--dir DIR]\n"
    "                            [--coord ADDR] [--json]\n"
    "\n"
    "Measure durable appends to one storage node of a running cluster:\n"
    "unbatched (one record per Append) and batched (100 per Append), with 1\n"
    "and 8 concurrent clients, beside the fsync ceiling of the same disk, and\n"
    "the node's CPU (user + system, from /proc; the node's pid file in DIR)\n"
    "per record and per Append: what a commit's records cost each node.\n"
    "\n"
    "  --node ID      node to load (default A1)\n"
    "  --seconds N    length of each run (default 3)\n"
    "  --bytes N      payload bytes per record (default 100)\n"
    "  --dir DIR      cluster directory, for the fsync baseline (default\n"
    "                 $AURALOG_DIR or ~/.auralog)\n"
    "  --coord ADDR   coordinator (default $AURALOG_COORD or %s)\n"
    "  --json         one JSON object instead of a table\n",
    COORD_ADDR_DEFAULT);
}

int bench_append_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"node", required_argument, 0, 'n'}, {"seconds", required_argument, 0, 's'},
    {"bytes", required_argument, 0, 'b'}, {"dir", required_argument, 0, 'd'},
    {"coord", required_argument, 0, 'c'}, {"json", no_argument, 0, 'j'},
    {"help", no_argument, 0, 'h'}, {0}};
  const char *node = "A1", *coord = NULL, *dir = NULL;
  int seconds = 3, bytes = 100, json = 0, o;
  /* argv[0] is "append" (bench/bench.c dispatches). */
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'n': node = optarg; break;
    case 's': seconds = atoi(optarg); break;
    case 'b': bytes = atoi(optarg); break;
    case 'd': dir = optarg; break;
    case 'c': coord = optarg; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (seconds < 1 || seconds > 600)
    die("bench: --seconds must be 1..600");
  if (bytes < 1 || bytes > 2048)
    die("bench: --bytes must be 1..2048");
  coord = addr_coord(coord);
  char dflt[1024];
  if (dir == NULL)
    dir = getenv("AURALOG_DIR");
  if (dir == NULL || !*dir) {
    snprintf(dflt, sizeof dflt, "%s/.auralog", getenv("HOME") ? getenv("HOME") : "/tmp");
    dir = dflt;
  }

  /* The cluster key (and the operator's) in DIR, as every other command
   * finds them there. */
  if (dir)
    key_use_dir(dir);
  /* A writer on volume "bench" with 8 PGs: one chain per client. Its own
   * key pair: the coordinator's ticket for the epoch names the public
   * half, and every Append carries the ticket (auth.h). */
  char why[256];
  struct auth_signer signer;
  if (auth_init() != 0)
    die("bench: libsodium failed to start");
  auth_signer_new(&signer);
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__OpenVolume ov = AURALOG__OPEN_VOLUME__INIT;
  ov.name = "bench";
  ov.create = 1;
  ov.writer = 1;
  ov.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, signer.pk};
  req.body_case = AURALOG__ENVELOPE__BODY_OPEN_VOLUME;
  req.open_volume = &ov;
  Env *rep = rpc_once(coord, &req, RPC_TIMEOUT_MS, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why))
    die("bench: coordinator: %s (is the cluster up?)", why);
  uint64_t epoch = rep->volume->epoch;
  Auralog__EpochTicket tk = AURALOG__EPOCH_TICKET__INIT;
  uint8_t tsig[AUTH_SIG_BYTES];
  if (rep->volume->ticket == NULL || rep->volume->ticket->sig.len != AUTH_SIG_BYTES)
    die("bench: the coordinator gave no ticket for epoch %llu of volume bench",
        (unsigned long long)epoch);
  memcpy(tsig, rep->volume->ticket->sig.data, sizeof tsig);
  tk.epoch = epoch;
  tk.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, signer.pk};
  tk.sig = (ProtobufCBinaryData){AUTH_SIG_BYTES, tsig};
  wire_free(rep);
  Auralog__GrowVolume g = AURALOG__GROW_VOLUME__INIT;
  g.name = "bench";
  g.npgs = 8;
  req.body_case = AURALOG__ENVELOPE__BODY_GROW_VOLUME;
  req.grow_volume = &g;
  rep = rpc_once(coord, &req, RPC_TIMEOUT_MS, why, sizeof why);
  if (rep == NULL || rpc_expect(rep, AURALOG__ENVELOPE__BODY_VOLUME, why, sizeof why))
    die("bench: coordinator: %s", why);
  Auralog__Volume *v = rep->volume;
  v->epoch = epoch;
  const char *addr = NULL;
  for (size_t i = 0; i < v->pgs[0]->n_segments; i++)
    if (strcmp(v->pgs[0]->segments[i]->node, node) == 0)
      addr = v->pgs[0]->segments[i]->addr;
  /* Every node holds a segment of every PG (6 nodes, 6 copies). */
  if (addr == NULL)
    die("bench: node %s holds no segment of volume bench", node);

  /* The node's CPU per record: from its pid file in DIR (cluster up's);
   * unknown (-) for a node this machine does not run. */
  pid_t node_pid = bench_member_pid(dir, node);
  struct utsname u;
  uname(&u);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  struct result res[5];
  int nres = 0, bad = 0;
  if (!json) {
    printf("auralog bench append: durable redo records into one storage node\n");
    printf("conditions: node %s at %s; %d-byte payload per record (1 range); "
           "one hot-log fdatasync per group commit; %d s per run; one Append outstanding per "
           "client; %ld cores; %s %s; baseline file in %s\n\n",
           node, addr, bytes, seconds, cores, u.sysname, u.release, dir);
    printf("%-42s %7s %5s %11s %10s %8s %8s %9s %11s %11s\n", "run", "clients", "batch",
           "records/s", "appends/s", "p50 ms", "p99 ms", "x fsync", "cpu us/rec",
           "cpu us/app");
  }
  fsync_ceiling(dir, seconds, &res[nres++]);
  struct { const char *name; int clients, batch; } runs[] = {
    {"unbatched", 1, 1}, {"unbatched, group commit", 8, 1},
    {"batched", 1, 100}, {"batched, group commit", 8, 100}};
  for (size_t i = 0; i < 4; i++) {
    if (!json && nres == 1) {
      struct result *r = &res[0];
      printf("%-42s %7d %5d %11.0f %10.0f %8.3f %8.3f %9.2f %11s %11s\n", r->name, r->clients,
             r->batch, r->records_s, r->appends_s, r->p50, r->p99, 1.0, "-", "-");
    }
    bad |= run(runs[i].name, addr, node_pid, v, &tk, runs[i].clients, runs[i].batch, bytes,
               seconds, &res[nres]) != 0;
    if (!json) {
      struct result *r = &res[nres];
      char cr[32] = "-", ca[32] = "-";
      if (r->cpu_us_rec >= 0)
        snprintf(cr, sizeof cr, "%.1f", r->cpu_us_rec);
      if (r->cpu_us_append >= 0)
        snprintf(ca, sizeof ca, "%.1f", r->cpu_us_append);
      printf("%-42s %7d %5d %11.0f %10.0f %8.3f %8.3f %9.2f %11s %11s\n", r->name, r->clients,
             r->batch, r->records_s, r->appends_s, r->p50, r->p99,
             r->records_s / res[0].records_s, cr, ca);
      fflush(stdout);
    }
    nres++;
  }
  if (json) {
    cJSON *o = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(o, "conditions");
    cJSON_AddStringToObject(c, "node", node);
    cJSON_AddNumberToObject(c, "payload_bytes", bytes);
    cJSON_AddNumberToObject(c, "seconds", seconds);
    cJSON_AddNumberToObject(c, "cores", (double)cores);
    cJSON_AddStringToObject(c, "kernel", u.release);
    cJSON_AddStringToObject(c, "durability", "one hot-log fdatasync per group commit");
    cJSON *rs = cJSON_AddArrayToObject(o, "results");
    for (int i = 0; i < nres; i++) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddStringToObject(j, "run", res[i].name);
      cJSON_AddNumberToObject(j, "clients", res[i].clients);
      cJSON_AddNumberToObject(j, "batch", res[i].batch);
      cJSON_AddNumberToObject(j, "records_per_s", res[i].records_s);
      cJSON_AddNumberToObject(j, "appends_per_s", res[i].appends_s);
      cJSON_AddNumberToObject(j, "p50_ms", res[i].p50);
      cJSON_AddNumberToObject(j, "p99_ms", res[i].p99);
      cJSON_AddNumberToObject(j, "vs_fsync", res[i].records_s / res[0].records_s);
      if (res[i].cpu_us_rec >= 0) {
        cJSON_AddNumberToObject(j, "node_cpu_us_per_record", res[i].cpu_us_rec);
        cJSON_AddNumberToObject(j, "node_cpu_us_per_append", res[i].cpu_us_append);
      }
      cJSON_AddItemToArray(rs, j);
    }
    char *s = cJSON_PrintUnformatted(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  }
  wire_free(rep);
  return bad;
}
