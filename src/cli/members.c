/*
 * members.c: a local cluster's member processes (cluster.h): start one
 * (cluster_spawn: its command line, log and pid file), wait until it
 * listens or say why it died (the last line of its log), tell whether a
 * pid is still one of ours, and stop one.
 *
 * Why "ours" is checked so carefully: pid files outlive processes, and a
 * pid is recycled. A process counts as a member only if its command line
 * names this cluster's member tag (its data directory), so `down` never
 * kills a stranger that happens to have an old member's pid. A zombie
 * (dead, not yet reaped) counts as gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/keyfile.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "param.h"
#include "net/rpc.h"

#include "cli/cluster.h"

/* Threads of pid still listed in /proc (0 if it is gone). */
static int threads(pid_t pid)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
  DIR *d = opendir(p);
  if (d == NULL)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Has pid exited, files closed: reaped, or a zombie with no thread left
 * but its leader? */
static int gone(pid_t pid)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return 1;
  char state = '?';
  if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
    state = '?';
  fclose(f);
  return (state == 'Z' || state == 'X') && threads(pid) <= 1;
}

/* pid's command line into buf (NUL-separated, NUL-terminated): its
 * length, or 0 if it cannot be read. */
ssize_t cluster_cmdline(pid_t pid, char *buf, size_t len)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
  int fd = open(p, O_RDONLY);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  return n;
}

int cluster_runs_engine(pid_t pid)
{
  char buf[4096];
  ssize_t n = cluster_cmdline(pid, buf, sizeof buf);
  if (n == 0)
    return 0;
  const char *a1 = buf + strlen(buf) + 1;
  return a1 < buf + n && strcmp(a1, "engine") == 0;
}

/* Is pid a live process of this cluster's member m? */
static int ours(const struct member *m, pid_t pid)
{
  char p[64], buf[8192];
  ssize_t n = cluster_cmdline(pid, buf, sizeof buf);
  if (n == 0)
    return 0;
  /* argv is NUL-separated: look for the exact tag argument. */
  for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
    if (strcmp(buf + i, m->tag) == 0) {
      snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
      FILE *f = fopen(p, "r");
      char state = '?';
      if (f) {
        if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
          state = '?';
        fclose(f);
      }
      return state != 'Z';
    }
  return 0;
}

pid_t cluster_running(const struct cluster *cl, const struct member *m)
{
  char p[PATH_MAX];
  cluster_path(p, sizeof p, cl, "run/", m->name, ".pid");
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return 0;
  int pid = 0;
  if (fscanf(f, "%d", &pid) != 1)
    pid = 0;
  fclose(f);
  return pid > 0 && ours(m, pid) ? pid : 0;
}

/* Start member m in the background: a new session, stdin from /dev/null,
 * stdout and stderr appended to its log. */
pid_t cluster_spawn(const struct cluster *cl, struct member *m, const char *self)
{
  char logp[PATH_MAX], pidp[PATH_MAX], coord[64], id[8], http[64], cache[16], timeout[16];
  char pg_pages[16];
  char key[PATH_MAX + 16];
  key_path(key, sizeof key);
  cluster_path(logp, sizeof logp, cl, "log/", m->name, ".log");
  cluster_path(pidp, sizeof pidp, cl, "run/", m->name, ".pid");
  snprintf(coord, sizeof coord, "%s", cl->m[0].addr);
  snprintf(id, sizeof id, "%s", m->name);
  cluster_dashboard_addr(cl, http, sizeof http);
  /* The operator's key (coord/roles.c): its public half to the
   * coordinator, the key itself to the writer it starts; never to a node
   * or a replica. */
  char opkey[PATH_MAX + 16], oppub[PATH_MAX + 16];
  snprintf(opkey, sizeof opkey, "%s/operator.key", cl->dir);
  snprintf(oppub, sizeof oppub, "%s/operator.pub", cl->dir);
  char repair[16];
  snprintf(repair, sizeof repair, "%d", cl->repair_after);
  char *coord_argv[16] = {(char *)self, "coord", "--listen", m->addr, "--data", m->data,
                          "--http", http, "--key", key, "--operator", oppub};
  int nc = 12;
  if (cl->failover)
    coord_argv[nc++] = "--failover";
  if (cl->repair_after >= 0) {      /* `cluster up --repair-after` */
    coord_argv[nc++] = "--repair-after";
    coord_argv[nc++] = repair;
  }
  coord_argv[nc] = NULL;
  char *node_argv[18] = {(char *)self, "node", "--az", m->az, "--id", id, "--listen",
                         m->addr, "--coord", coord, "--data", m->data, "--key", key, NULL};
  if (cl->backup[0]) {       /* `cluster up --backup` */
    node_argv[14] = "--backup";
    node_argv[15] = (char *)cl->backup;
    node_argv[16] = NULL;
  }
  snprintf(cache, sizeof cache, "%d", cl->cache);
  snprintf(timeout, sizeof timeout, "%d", cl->timeout);
  snprintf(pg_pages, sizeof pg_pages, "%d", cl->pg_pages);
  char *engine_argv[28] = {(char *)self, "engine", "--key", key, "--volume", "main",
                           "--listen", m->addr, "--coord", coord};
  int na = 10;
  if (cl->cache > 0) {
    engine_argv[na++] = "--cache";
    engine_argv[na++] = cache;
  }
  if (cl->timeout >= 0) {
    engine_argv[na++] = "--statement-timeout";
    engine_argv[na++] = timeout;
  }
  if (cl->pg_pages > 0) {
    engine_argv[na++] = "--pg-pages";
    engine_argv[na++] = pg_pages;
  }
  char blpath[PATH_MAX];
  if (cl->binlog[0]) {        /* `cluster up --binlog` */
    engine_argv[na++] = "--binlog";
    engine_argv[na++] = (char *)cl->binlog;
    if (strcmp(cl->binlog, "community") == 0) {
      snprintf(blpath, sizeof blpath, "%s/binlog", cl->dir);
      mkdir(blpath, 0755);
      snprintf(blpath, sizeof blpath, "%s/binlog/main.binlog", cl->dir);
      engine_argv[na++] = "--binlog-file";
      engine_argv[na++] = blpath;
    }
  }
  engine_argv[na++] = "--operator";
  engine_argv[na++] = opkey;
  engine_argv[na] = NULL;
  /* The engine and the replicas serve SQL; the one the coordinator names
   * writes, the others follow it (failover). */
  const char *writer = cl->writer[0] ? cl->writer : cl->m[cl->n - 1].addr;
  int db = m == &cl->m[cl->n - 1] || (m >= cl->rep && m < cl->rep + REPLICAS_MAX);
  int engine = db && strcmp(m->addr, writer) == 0;
  int replica = db && !engine;
  if (replica) {
    /* A read replica: the engine's options, less the volume's creation. */
    engine_argv[1] = "replica";
    engine_argv[10] = "--engine";
    engine_argv[11] = (char *)writer;
    na = 12;
    if (cl->cache > 0) {
      engine_argv[na++] = "--cache";
      engine_argv[na++] = cache;
    }
    if (cl->timeout >= 0) {
      engine_argv[na++] = "--statement-timeout";
      engine_argv[na++] = timeout;
    }
    engine_argv[na] = NULL;
  }
  pid_t pid = proc_spawn(self, engine || replica ? engine_argv
                               : m->az[0] ? node_argv : coord_argv, logp, 1);
  if (pid < 0)
    return -1;
  FILE *f = fopen(pidp, "w");
  if (f) {
    fprintf(f, "%d\n", (int)pid);
    fclose(f);
  }
  m->pid = pid;
  return pid;
}

/* Last line of a member's log, for error messages. */
static void last_log_line(const struct cluster *cl, const struct member *m,
                          char *out, size_t n)
{
  char p[PATH_MAX], line[256];
  cluster_path(p, sizeof p, cl, "log/", m->name, ".log");
  snprintf(out, n, "see its log in %.200s/log", cl->dir);
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return;
  while (fgets(line, sizeof line, f))
    if (line[0] != '\n')
      snprintf(out, n, "%s", line);
  fclose(f);
  out[strcspn(out, "\n")] = 0;
}

/* Did a member we just started exit already? */
int cluster_died(const struct cluster *cl, struct member *m, char *why, size_t n)
{
  int st;
  if (m->pid > 0 && waitpid(m->pid, &st, WNOHANG) == m->pid) {
    char line[256];
    last_log_line(cl, m, line, sizeof line);
    snprintf(why, n, "%s exited at start: %s", m->name, line);
    return 1;
  }
  return 0;
}

/* Wait until member m accepts connections (the engine only listens once
 * its volume is recovered). An engine waiting for a write quorum tries
 * again for RECOVERY_RETRY_MS (vfs/volume.c): while it runs, so do we,
 * saying every 5 s what it last said, so that a person sees why. */
int cluster_wait_listening(struct cluster *cl, struct member *m, char *why, size_t n)
{
  unsigned long long start = now_ms(), said = start;
  unsigned long long deadline = start + CLUSTER_WAIT_MS;
  if (strcmp(m->name, "engine") == 0)
    deadline += RECOVERY_RETRY_MS;
  while (now_ms() < deadline) {
    if (now_ms() - said >= 5000) {
      char line[256];
      last_log_line(cl, m, line, sizeof line);
      fprintf(stderr, "cluster: %s not serving yet after %llu s; its log: %s\n", m->name,
              (now_ms() - start) / 1000, line);
      said = now_ms();
    }
    struct rpc r;
    char err[200];
    if (rpc_open(&r, m->addr, 500, err, sizeof err) == 0) {
      rpc_close(&r);
      return 0;
    }
    if (cluster_died(cl, m, why, n))
      return -1;
    usleep(50000);
  }
  snprintf(why, n, "%s did not start listening on %s (see %.200s/log/%s.log)", m->name,
           m->addr, cl->dir, m->name);
  return -1;
}

/* Stop member m if it runs: sig, then SIGKILL if it lingers. Returns its
 * pid, or 0 if it was not running. */
pid_t cluster_stop_member(struct cluster *cl, struct member *m, int sig)
{
  char pidp[PATH_MAX];
  cluster_path(pidp, sizeof pidp, cl, "run/", m->name, ".pid");
  pid_t pid = cluster_running(cl, m);
  if (pid) {
    kill(pid, sig);
    unsigned long long deadline = now_ms() + 3000;
    while (ours(m, pid) && now_ms() < deadline)
      usleep(10000);
    if (ours(m, pid)) {
      kill(pid, SIGKILL);
      while (ours(m, pid))
        usleep(10000);
    }
    /* A dying process loses its command line (ours() says no) before it
     * has closed its files: a killed engine may still hold its listening
     * socket for a moment, and a query or a new engine would meet it.
     * Its files are closed once the leader is a zombie and no other thread
     * is left. (Bounded: the pid could be reused once it is reaped.) */
    deadline = now_ms() + 3000;
    while (!gone(pid) && now_ms() < deadline)
      usleep(1000);
  }
  unlink(pidp);
  return pid;
}
