/*
 * common.c: processes, clusters, conditions and histograms for the
 * benchmarks (see bench.h).
 */
#define _GNU_SOURCE         /* nftw */
#include <limits.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <lmdb.h>
#include <math.h>
#include <protobuf-c/protobuf-c.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "lib/conf.h"
#include "bench/bench.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "param.h"

#include "version.h"        /* generated: git describe at build time */

const char *bench_self(void)
{
  static char self[4096];
  if (!self[0]) {
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      die("bench: cannot find the auralog binary (/proc/self/exe)");
    self[n] = 0;
  }
  return self;
}

void bench_dir(char *out, size_t n, const char *name)
{
  char d[PATH_MAX];
  conf_dir(NULL, d, sizeof d);
  snprintf(out, n, "%s/%s", d, name);
}

/* The operator's key of the cluster bench_cluster_up made ("": none): the
 * engines a benchmark starts on it are the operator's (coord/roles.c). */
static char bench_op[1200];

pid_t bench_start(const char *log, const char *const argv[])
{
  const char *args[32];
  int k = 0;
  args[k++] = bench_self();
  for (int i = 0; argv[i] && k < 29; i++)
    args[k++] = argv[i];
  if (bench_op[0] && !strcmp(argv[0], "engine") && strcmp(argv[1], "--baseline") != 0) {
    args[k++] = "--operator";
    args[k++] = bench_op;
  }
  args[k] = NULL;
  return proc_spawn(args[0], (char *const *)args, log, 0);
}

int bench_run(const char *log, const char *const argv[])
{
  pid_t pid = bench_start(log, argv);
  int st;
  if (pid < 0 || waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int bench_exited(pid_t pid)
{
  int st;
  pid_t r = waitpid(pid, &st, WNOHANG);
  if (r == pid)
    return 1;
  /* Not our child (a cluster member, whose parent is init): gone when
   * signal 0 finds nothing. */
  return r < 0 && errno == ECHILD && kill(pid, 0) != 0 && errno == ESRCH;
}

void bench_stop(pid_t pid, int ms)
{
  if (pid <= 0)
    return;
  kill(pid, SIGTERM);
  unsigned long long until = now_ms() + (unsigned)ms;
  while (now_ms() < until) {
    if (bench_exited(pid))
      return;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

int bench_connect(struct rpc *r, const char *addr, int ms, char *why, size_t n)
{
  unsigned long long until = now_ms() + (unsigned)ms;
  for (;;) {
    if (rpc_open(r, addr, 1000, why, n) == 0)
      return 0;
    if (now_ms() >= until)
      return -1;
    usleep(50000);
  }
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
  (void)sb;
  (void)flag;
  (void)f;
  remove(p);
  return 0;
}

void bench_rm_tree(const char *path)
{
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int bench_mkdirs(const char *path)
{
  char p[1200];
  snprintf(p, sizeof p, "%s", path);
  for (char *c = p + 1; ; c++) {
    if (*c == '/' || *c == 0) {
      char end = *c;
      *c = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST)
        return -1;
      if ((*c = end) == 0)
        return 0;
    }
  }
}

int bench_cluster_up(const char *dir, int base, char *why, size_t n)
{
  return bench_cluster_up_with(dir, base, NULL, why, n);
}

int bench_cluster_up_with(const char *dir, int base, const char *const extra[], char *why,
                          size_t n)
{
  char port[16], log[1200];
  snprintf(port, sizeof port, "%d", base);
  bench_cluster_down(dir);
  /* A fresh cluster: no data of an earlier run may change this one. But
   * the same key: this process may hold it already (keyfile.h loads it
   * once), from a cluster it started here before. */
  /* The operator's key is kept the same way: an engine started earlier
   * here, and this process, may hold it. */
  char keyp[2][1200], keyhex[2][128];
  ssize_t nkey[2] = {-1, -1};
  snprintf(keyp[0], sizeof keyp[0], "%s/cluster.key", dir);
  snprintf(keyp[1], sizeof keyp[1], "%s/operator.key", dir);
  for (int i = 0; i < 2; i++) {
    int kfd = open(keyp[i], O_RDONLY);
    if (kfd >= 0) {
      nkey[i] = read(kfd, keyhex[i], sizeof keyhex[i]);
      close(kfd);
    }
  }
  bench_rm_tree(dir);
  if (bench_mkdirs(dir) != 0) {
    snprintf(why, n, "cannot make a fresh directory %s: %s", dir, strerror(errno));
    return -1;
  }
  int kfd;
  for (int i = 0; i < 2; i++)
    if (nkey[i] > 0 && (kfd = open(keyp[i], O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0) {
      if (write(kfd, keyhex[i], (size_t)nkey[i]) != nkey[i])
        unlink(keyp[i]);
      close(kfd);
    }
  snprintf(bench_op, sizeof bench_op, "%s", keyp[1]);
  /* Its key: the one this process and every engine it starts use too
   * (unless the caller brought one, AURALOG_KEY). */
  if (!getenv("AURALOG_KEY") || !*getenv("AURALOG_KEY")) {
    char key[1200];
    snprintf(key, sizeof key, "%s/cluster.key", dir);
    setenv("AURALOG_KEY", key, 1);
  }
  snprintf(log, sizeof log, "%s/bench-cluster.log", dir);
  /* No read replica: a benchmark measures the writer alone (a replica
   * costs the writer its stream, and the machine its CPU). */
  /* No backup: the figures are the foreground's alone (a cluster backs up
   * by default; its cost is measured apart). */
  const char *up[24] = {"cluster", "up", "--dir", dir, "--base-port", port, "--replicas", "0",
                        "--no-backup"};
  for (int i = 0, k = 9; extra && extra[i] && k < 23; i++)
    up[k++] = extra[i];
  if (bench_run(log, up) != 0) {
    snprintf(why, n, "`auralog cluster up --dir %s --base-port %d` failed; see %s", dir,
             base, log);
    return -1;
  }
  return 0;
}

void bench_cluster_down(const char *dir)
{
  char log[1200];
  struct stat sb;
  snprintf(log, sizeof log, "%s/cluster.json", dir);
  if (stat(log, &sb) != 0)
    return;                     /* never started here */
  snprintf(log, sizeof log, "%s/bench-cluster.log", dir);
  const char *down[] = {"cluster", "down", "--dir", dir, NULL};
  bench_run(log, down);
}

pid_t bench_member_pid(const char *dir, const char *name)
{
  char p[1200];
  snprintf(p, sizeof p, "%s/run/%s.pid", dir, name);
  FILE *f = fopen(p, "r");
  int pid = -1;
  if (f) {
    if (fscanf(f, "%d", &pid) != 1)
      pid = -1;
    fclose(f);
  }
  return pid;
}

int bench_base_default(int dflt)
{
  cJSON *o = NULL;
  char why[PATH_MAX + 200], coord[ADDR_MAX_LEN + 1];
  int base = dflt;
  if (conf_find(NULL, &o, why, sizeof why) == 1 && conf_str(o, "coord", coord, sizeof coord) == 0) {
    const char *colon = strrchr(coord, ':'), *d = strrchr(COORD_ADDR_DEFAULT, ':');
    long port = colon ? strtol(colon + 1, NULL, 10) : 0, b = port + dflt - atol(d + 1);
    if (port > 0 && b >= 1024 && b + 2 * ENGINE_PORT_OFFSET <= 65000)
      base = (int)b;
  }
  cJSON_Delete(o);
  return base;
}

double bench_cpu_split(pid_t pid, double *sys)
{
  if (sys)
    *sys = 0;
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* Fields after "(comm)": state is field 3, utime 14, stime 15. */
  char *s = strrchr(buf, ')');
  unsigned long long ut = 0, st = 0;
  if (s == NULL ||
      sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    return 0;
  double tck = (double)sysconf(_SC_CLK_TCK);
  if (sys)
    *sys = (double)st / tck;
  return (double)(ut + st) / tck;
}

double bench_cpu_s(pid_t pid)
{
  return bench_cpu_split(pid, NULL);
}

/* schedstat's three numbers: ns on a CPU, ns waiting on a run queue,
 * time slices. Every thread's, since on a busy machine the engine's loop,
 * writer and I/O threads wait apart. A thread that ends between two reads
 * takes its wait with it: the engine's and nodes' threads live as long as
 * the run. */
double bench_cpu_wait_s(pid_t pid)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
  DIR *d = pid > 0 ? opendir(p) : NULL;
  if (d == NULL)
    return -1;
  double wait = 0;
  int seen = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    char f[128];
    snprintf(f, sizeof f, "/proc/%d/task/%.20s/schedstat", (int)pid, e->d_name);
    FILE *fp = fopen(f, "r");
    unsigned long long run = 0, wq = 0;
    if (fp && fscanf(fp, "%llu %llu", &run, &wq) == 2) {
      wait += (double)wq / 1e9;
      seen++;
    }
    if (fp)
      fclose(fp);
  }
  closedir(d);
  return seen ? wait : -1;
}

Env *bench_sql(struct rpc *r, const char *sql, int timeout_ms, char *why, size_t n)
{
  return bench_sql_timed(r, sql, 0, 0, timeout_ms, why, n);
}

Env *bench_sql_timed(struct rpc *r, const char *sql, uint64_t sent_us, uint64_t prev_recv_us,
                     int timeout_ms, char *why, size_t n)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Query q = AURALOG__QUERY__INIT;
  q.sql = (char *)sql;
  q.sent_us = sent_us;
  q.prev_recv_us = prev_recv_us;
  req.body_case = AURALOG__ENVELOPE__BODY_QUERY;
  req.query = &q;
  Env *rep = rpc_call(r, &req, timeout_ms, why, n);
  if (rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_ROWS, why, n) != 0) {
    wire_free(rep);
    return NULL;
  }
  return rep;
}

/* ---- conditions ------------------------------------------------------------- */

static const char *fs_name(long type)
{
  switch ((unsigned long)type) {
  case 0xEF53: return "ext4";
  case 0x58465342: return "xfs";
  case 0x9123683E: return "btrfs";
  case 0x01021994: return "tmpfs (memory: fsync is free, durable figures mean nothing)";
  case 0x794c7630: return "overlayfs";
  case 0x2fc12fc1: return "zfs";
  case 0x6969: return "nfs";
  case 0xF2F52010: return "f2fs";
  case 0x65735546: return "fuse";
  case 0x858458f6: return "ramfs (memory: fsync is free, durable figures mean nothing)";
  default: return "other";
  }
}

static void cpu_model(char *out, size_t n)
{
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *c = strchr(line, ':');
    if (c && strncmp(line, "model name", 10) == 0) {
      c += 2;
      c[strcspn(c, "\n")] = 0;
      snprintf(out, n, "%s", c);
      break;
    }
  }
  fclose(f);
}

void bench_conditions(cJSON *c, const char *dir)
{
  struct utsname u;
  uname(&u);
  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  cJSON_AddStringToObject(c, "auralog", AURALOG_VERSION);
  cJSON_AddStringToObject(c, "sqlite", sqlite3_libversion());
  cJSON_AddStringToObject(c, "lmdb", mdb_version(NULL, NULL, NULL));
  cJSON_AddStringToObject(c, "libuv", uv_version_string());
  cJSON_AddStringToObject(c, "protobuf_c", protobuf_c_version());
  char k[512];
  snprintf(k, sizeof k, "%s %s %s", u.sysname, u.release, u.machine);
  cJSON_AddStringToObject(c, "kernel", k);
  cJSON_AddStringToObject(c, "cpu", cpu);
  cJSON_AddNumberToObject(c, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
  /* Other load on the machine counts against every figure, the limit's
   * too: the load average when the run started says there was some. */
  char load[64] = "unknown";
  FILE *la = fopen("/proc/loadavg", "r");
  if (la) {
    double a, b, c5;
    if (fscanf(la, "%lf %lf %lf", &a, &b, &c5) == 3)
      snprintf(load, sizeof load, "%.2f %.2f %.2f", a, b, c5);
    fclose(la);
  }
  cJSON_AddStringToObject(c, "load_average", load);
  cJSON_AddNumberToObject(c, "memory_mb",
                          (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / 1048576.0);
  struct statfs sf;
  cJSON_AddStringToObject(c, "dir", dir);
  cJSON_AddStringToObject(c, "filesystem", statfs(dir, &sf) == 0 ? fs_name((long)sf.f_type) : "unknown");
  cJSON_AddStringToObject(c, "network", "loopback (every process on this machine)");
}

void bench_catch_signals(void (*fn)(int))
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

const char *bench_build_flags(void)
{
  return "compiler " __VERSION__
#ifdef __OPTIMIZE__
         ", optimized (-O1 or more)"
#else
         ", not optimized (-O0): every figure is slower than a release build's"
#endif
#ifdef __SANITIZE_ADDRESS__
         ", AddressSanitizer"
#endif
#ifdef NDEBUG
         ", NDEBUG"
#endif
         ;
}

double bench_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* ---- one line of progress on stderr ---------------------------------------- */

static int prog_tty = -1;
static double prog_last;

void bench_progress_v(const char *who, int force, const char *fmt, va_list ap)
{
  if (prog_tty < 0)
    prog_tty = isatty(2);
  double now = bench_now_us();
  if (!force && (!prog_tty || now - prog_last < 100000))
    return;
  prog_last = now;
  fprintf(stderr, prog_tty ? "\r\033[Kbench %s: " : "bench %s: ", who);
  vfprintf(stderr, fmt, ap);
  if (!prog_tty)
    fputc('\n', stderr);
}

void bench_progress_end(void)
{
  if (prog_tty > 0)
    fprintf(stderr, "\r\033[K");
}

/* Refuse a directory we did not make: bench_cluster_up empties it. */
void bench_check_dir(const char *who, const char *dir)
{
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/cluster.json", dir);
  DIR *d = opendir(dir);
  if (d == NULL || access(p, F_OK) == 0) {
    if (d)
      closedir(d);
    return;
  }
  struct dirent *de;
  int empty = 1;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      empty = 0;
  closedir(d);
  if (!empty)
    die("bench %s: %s is not empty and holds no cluster; it would be emptied: give "
        "another --dir", who, dir);
}

long bench_num(const char *cmd, const char *opt, const char *s, long lo, long hi)
{
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (errno || end == s || *end || x < lo || x > hi)
    die("%s: %s wants a number from %ld to %ld, not '%s'", cmd, opt, lo, hi, s);
  return x;
}
