/*
 * harness.c: the shared part of the integration tests (see harness.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "net/keyfile.h"
#include "param.h"
#include "net/rpc.h"
#include "net/wire.h"

const char *bin;
char dir[256];
int base;
char coord[64];
char engine[64];
char out[OUT_SIZE];

static int vsh(const char *in, char *out, size_t n, const char *fmt, va_list ap)
{
  char cmd[4096], tmp[300] = "";
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  if (in) {
    snprintf(tmp, sizeof tmp, "/tmp/auralog-it-in-%d", (int)getpid());
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(in, f);
    fclose(f);
    size_t len = strlen(cmd);
    snprintf(cmd + len, sizeof cmd - len, " < %s", tmp);
  }
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char sink[4096];
  if (out == NULL) {
    out = sink;
    n = sizeof sink;
  }
  size_t got = 0, r;
  while ((r = fread(out + got, 1, n - 1 - got, p)) > 0) {
    got += r;
    if (got == n - 1) {
      /* Keep reading (and dropping) so the command is not blocked. */
      while (fread(sink, 1, sizeof sink, p) > 0)
        ;
      break;
    }
  }
  out[got] = 0;
  int st = pclose(p);
  if (in)
    unlink(tmp);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

int sh(char *out, size_t n, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int rc = vsh(NULL, out, n, fmt, ap);
  va_end(ap);
  return rc;
}

int sh_in(const char *in, char *out, size_t n, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int rc = vsh(in, out, n, fmt, ap);
  va_end(ap);
  return rc;
}

static void remove_key(void)
{
  const char *k = getenv("AURALOG_KEY");
  if (k && strstr(k, "/tmp/auralog-it-") == k)
    unlink(k);
}

int cluster_start(const char *name)
{
  return cluster_start_with(name, "");
}

/* Can a listener take port p on 127.0.0.1 now? */
static int port_free(int p)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

#define PORT_FIRST  21000
#define PORT_BLOCK  128
#define PORT_BLOCKS ((32768 - PORT_FIRST) / PORT_BLOCK)

/* Claim block b for this process until it exits: an flock on a file named
 * after it. `make test` runs two test binaries at once
 * (scripts/run-integration.sh): both may look at the same free block
 * before either's cluster binds it, and the lock, not the ports, decides.
 * The descriptor stays open (close-on-exec, so the cluster's processes do
 * not inherit it); one process's later call gets a block of its own too,
 * since a second open of the file is a second lock. */
static int claim_block(int b)
{
  char p[64];
  snprintf(p, sizeof p, "/tmp/auralog-it-ports-%d.lock", b);
  int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return INT_MAX;            /* no lock to be had: the ports alone decide */
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int free_block(int seed)
{
  for (int t = 0; t < PORT_BLOCKS; t++) {
    int b = PORT_FIRST + ((seed + t) % PORT_BLOCKS) * PORT_BLOCK;
    int lock = claim_block(b);
    if (lock < 0)
      continue;
    int ok = port_free(b + HTTP_PORT_OFFSET) && port_free(b + ENGINE_PORT_OFFSET) &&
             port_free(b + REPLICA_PORT_OFFSET);    /* `cluster up` starts replica R1 there */
    for (int i = 0; i <= NCOPIES && ok; i++)
      ok = port_free(b + i);
    if (ok)
      return b;                /* (the lock stays held until we exit) */
    if (lock != INT_MAX)
      close(lock);
  }
  return PORT_FIRST + (seed % PORT_BLOCKS) * PORT_BLOCK;
}

static int start(const char *name, const char *extra);

int cluster_start_with(const char *name, const char *extra)
{
  char ex[512];
  snprintf(ex, sizeof ex, "%s%s", extra, strstr(extra, "--failover") ? "" : " --no-failover");
  return start(name, ex);
}

int cluster_start_as_user(const char *name, const char *extra)
{
  return start(name, extra);
}

static int start(const char *name, const char *extra)
{
  bin = getenv("AURALOG_BIN");
  if (bin == NULL)
    bin = "build/auralog";
  snprintf(dir, sizeof dir, "/tmp/auralog-it-%s-%d", name, (int)getpid());
  /* Ports of our own: a student's cluster on the defaults is left alone,
   * and so is every other test process's. A cluster takes base..base+6,
   * base+HTTP_PORT_OFFSET and base+ENGINE_PORT_OFFSET: blocks of 128 ports
   * each, so two blocks never overlap (with a stride of 20, one cluster's
   * engine port was another's coordinator port, and a crash campaign's
   * engine could not restart). The block comes from our pid; one whose
   * ports are taken is passed over. Below 32768: the ephemeral ports. */
  base = free_block((int)getpid() * 2 + (name[0] % 2));
  snprintf(coord, sizeof coord, "127.0.0.1:%d", base);
  snprintf(engine, sizeof engine, "127.0.0.1:%d", base + ENGINE_PORT_OFFSET);
  /* The cluster key, beside the directory: one for every cluster this
   * process starts (a test process loads its key once, keyfile.h), used
   * by `cluster up`, every command the test runs and its own calls. */
  static char key[300];
  char kwhy[400];
  snprintf(key, sizeof key, "%s.key", dir);
  if (key_create(key, kwhy, sizeof kwhy) != 0) {
    fprintf(stderr, "%s\n", kwhy);
    return -1;
  }
  setenv("AURALOG_KEY", key, 1);
  /* Who does the labs (`lab start` asks otherwise); a test that plays
   * another student says so in its command. */
  setenv("AURALOG_STUDENT", "s1", 0);
  static int once;
  if (!once++)
    atexit(remove_key);
  char out[4096];
  if (sh(out, sizeof out, "%s cluster up --dir %s --base-port %d%s 2>&1", bin, dir, base,
         extra) != 0) {
    fprintf(stderr, "cluster up failed:\n%s\n", out);
    return -1;
  }
  /* The test acts for the operator who ran `cluster up` (its wire-level
   * writer opens, drops and faults: coord/roles.c); a test that plays a
   * mere member says so (peer_as_member). */
  static char opkey[300];
  snprintf(opkey, sizeof opkey, "%s/operator.key", dir);
  setenv("AURALOG_OPERATOR", opkey, 1);   /* and the engines it starts by hand */
  op_use(1);
  return 0;
}

void cluster_stop(void)
{
  sh(NULL, 0, "%s cluster down --dir %s", bin, dir);
  if (getenv("AURALOG_KEEP") == NULL)
    sh(NULL, 0, "rm -rf %s", dir);
}

int sql(const char *text)
{
  return sh_in(text, out, sizeof out, "%s sql --engine %s 2>&1", bin, engine);
}

void sql_ok(const char *text, const char *want)
{
  int rc = sql(text);
  if (rc != 0)
    fail_msg("auralog sql failed (%d): %s", rc, out);
  if (want && strcmp(out, want) != 0)
    fail_msg("auralog sql printed '%s', want '%s'", out, want);
}

void fault(const char *what)
{
  int rc = sh(out, sizeof out, "%s fault --dir %s %s 2>&1", bin, dir, what);
  if (rc != 0)
    fail_msg("auralog fault %s: %s", what, out);
}

void cluster_down_leaves_nothing(void **state)
{
  (void)state;
  assert_int_equal(sh(out, sizeof out, "%s cluster down --dir %s", bin, dir), 0);
  assert_non_null(strstr(out, "stopped engine"));
  assert_int_equal(live_cluster_processes(), 0);
  assert_no_sanitizer_reports();
}

pid_t pid_of(const char *member)
{
  char p[512];
  snprintf(p, sizeof p, "%s/run/%s.pid", dir, member);
  FILE *f = fopen(p, "r");
  int pid = 0;
  if (f) {
    if (fscanf(f, "%d", &pid) != 1)
      pid = 0;
    fclose(f);
  }
  return pid;
}

int pid_alive(pid_t pid)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(p, "r");
  char c = 0;
  if (f == NULL)
    return 0;
  if (fscanf(f, "%*d (%*[^)]) %c", &c) != 1)
    c = 0;
  fclose(f);
  return c != 'Z' && c != 0;
}

void stop_member(const char *member, int sig)
{
  pid_t pid = pid_of(member);
  assert_true(pid > 0);
  assert_int_equal(kill(pid, sig), 0);
  for (int i = 0; i < 500 && pid_alive(pid); i++)
    usleep(10000);
  assert_false(pid_alive(pid));
}

/* The status of a volume, parsed. 16 MiB: the crash campaign's volume
 * reaches hundreds of PGs, and its status passed 1 MiB (cut short, it
 * did not parse). */
cJSON *status(const char *volume)
{
  static char *out;
  const size_t cap = 16 << 20;
  if (out == NULL && (out = malloc(cap)) == NULL)
    fail_msg("status: out of memory");
  /* Three tries: during a repair of hundreds of PGs the coordinator
   * stores every membership step before answering anything else, and
   * once missed the CLI's 5 s (the crash campaign beside it_storage). */
  int rc = 1;
  for (int t = 0; t < 3 && rc != 0; t++)
    if ((rc = sh(out, cap, "%s status --json --volume %s --coord %s", bin, volume, coord)) != 0)
      print_message("auralog status --volume %s failed (try %d of 3)\n", volume, t + 1);
  if (rc != 0) {
    /* Keep the cluster for its logs (cluster_stop leaves it): the crash
     * campaign once stopped here, at point ~220 of 500, its coordinator
     * silent for three 5 s tries, and its directory was gone. */
    setenv("AURALOG_KEEP", "1", 1);
    fail_msg("auralog status --volume %s failed (%d), cluster kept in %s: %.300s", volume, rc,
             dir, out);
  }
  cJSON *o = cJSON_Parse(out);
  if (o == NULL)
    fail_msg("auralog status --volume %s printed %zu bytes that do not parse as JSON",
             volume, strlen(out));
  return o;
}

const char *node_state(const char *node)
{
  static char state[8];
  cJSON *o = status("main"), *n;
  state[0] = 0;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes"))
    if (strcmp(cJSON_GetObjectItem(n, "id")->valuestring, node) == 0)
      snprintf(state, sizeof state, "%s", cJSON_GetObjectItem(n, "state")->valuestring);
  cJSON_Delete(o);
  return state;
}

void wait_node_state(const char *node, const char *want, int ms)
{
  for (int i = 0; i < ms / 50; i++) {
    if (strcmp(node_state(node), want) == 0)
      return;
    usleep(50000);
  }
  fail_msg("%s is not shown %s after %d ms", node, want, ms);
}

int live_cluster_processes(void)
{
  DIR *d = opendir("/proc");
  struct dirent *e;
  int found = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    char p[300], buf[4096];
    snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
    FILE *f = fopen(p, "r");
    if (f == NULL)
      continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
      if (buf[i] == 0)
        buf[i] = ' ';
    buf[n] = 0;
    if ((strstr(buf, dir) || strstr(buf, engine)) && strstr(buf, "auralog") &&
        !strstr(buf, "status"))
      found++;
  }
  closedir(d);
  return found;
}

void assert_no_sanitizer_reports(void)
{
  char out[4096];
  if (sh(out, sizeof out, "grep -l -E 'runtime error|AddressSanitizer|LeakSanitizer' "
         "%s/log/*.log", dir) == 0)
    fail_msg("sanitizer reports in: %s", out);
}

int rpc_sql(struct rpc *r, const char *text, char *o, size_t n, int timeout_ms, uint64_t *lsn)
{
  char why[512];
  Env *rep = rpc_query(r, text, timeout_ms, why, sizeof why);
  if (rep == NULL) {
    snprintf(o, n, "%s", why);
    return -2;
  }
  if (rpc_expect(rep, AURALOG__ENVELOPE__BODY_ROWS, why, sizeof why) != 0) {
    snprintf(o, n, "%s", why);
    wire_free(rep);
    return -1;
  }
  rows_text(rep->rows, o, n);
  if (lsn)
    *lsn = rep->rows->commit_lsn;
  wire_free(rep);
  return 0;
}

int lab_check(int n)
{
  return sh(out, OUT_SIZE, "%s lab check %d --dir %s 2>&1", bin, n, dir);
}

void lab_answers(int n, const char *text)
{
  char path[600];
  snprintf(path, sizeof path, "%s/labs/lab%02d-answers.txt", dir, n);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The last `lab start`'s assignment, as the variables each lab's run.sh
 * takes (LAB_AZ, LAB_NODE, LAB_SLOW, LAB_ROW, LAB_COUNT), read from what
 * it printed. */
char lab_assigned[128];

void lab_start(int n)
{
  if (sh(out, OUT_SIZE, "%s lab start %d --dir %s 2>&1", bin, n, dir) != 0)
    fail_msg("lab start %d:\n%s", n, out);
  char az = 0, node[8] = "", slow[8] = "", table[32] = "";
  int row = 0, count = 0;
  const char *a = strstr(out, "your assignment: ");
  lab_assigned[0] = 0;
  if (a && sscanf(a, "your assignment: take out AZ %c; for AZ+1 stop node %7[A-C0-9] too; "
                  "slow node %7[A-C0-9]", &az, node, slow) == 3)
    snprintf(lab_assigned, sizeof lab_assigned, "LAB_AZ=%c LAB_NODE=%s LAB_SLOW=%s", az, node,
             slow);
  else if (a && sscanf(a, "your assignment: partition AZ %c", &az) == 1)
    snprintf(lab_assigned, sizeof lab_assigned, "LAB_AZ=%c", az);
  else if (a && sscanf(a, "your assignment: update row %d of lab01 %d times", &row, &count) == 2)
    snprintf(lab_assigned, sizeof lab_assigned, "LAB_ROW=%d LAB_COUNT=%d", row, count);
  else if (a && sscanf(a, "your assignment: the second writer commits %d rows", &count) == 1)
    snprintf(lab_assigned, sizeof lab_assigned, "LAB_COUNT=%d", count);
  else if (a && sscanf(a, "your assignment: commit %d transactions into table %31[a-z0-9_]",
                       &count, table) == 2)
    snprintf(lab_assigned, sizeof lab_assigned, "LAB_TABLE=%s LAB_TXNS=%d", table, count);
  else if (a && sscanf(a, "your assignment: fill table %31[a-z0-9_] with rows 1..%d", table,
                       &count) == 2)
    snprintf(lab_assigned, sizeof lab_assigned, "LAB_TABLE=%s LAB_ROWS=%d", table, count);
}

/* The steps as a student types them: run.sh's commands with the student's
 * assignment, without the demo marks a run.sh run by hand makes (lib.sh),
 * so they count as the student's work. */
void lab_typed(const char *folder, const char *where)
{
  if (sh(out, OUT_SIZE, "rm -rf %s/typed && mkdir -p %s/typed && cp -r labs/%s labs/lib.sh "
         "%s/typed/ && sed -i '/^# demo-mark/,/^# end demo-mark/d' %s/typed/lib.sh 2>&1", where,
         where, folder, where, where) != 0)
    fail_msg("cannot copy lab %s's steps to %s/typed:\n%s", folder, where, out);
}

void lab_steps(int n, const char *folder, const char *env)
{
  lab_typed(folder, dir);
  /* At machine speed unless env names a pace (a paced run's own
   * AURALOG_PACE_S must not leak into the other runs of its binary). */
  int rc = sh(out, OUT_SIZE, "export AURALOG=%s AURALOG_DIR=%s AURALOG_PACE_S=0 %s %s; unset "
              "AURALOG_ENGINE AURALOG_COORD; bash %s/typed/%s/run.sh > %s/lab%02d.out 2>&1", bin,
              dir, lab_assigned, env, dir, folder, dir, n);
  if (rc != 0) {
    sh(out, OUT_SIZE, "tail -40 %s/lab%02d.out", dir, n);
    fail_msg("lab %d's steps failed:\n%s", n, out);
  }
}

const char *paced_env(void)
{
  static char env[64];
  const char *p = getenv("AURALOG_PACE_S");
  snprintf(env, sizeof env, "AURALOG_PACE_S=%s", p && p[0] ? p : "3");
  return env;
}

const char *failed_line(const char *text, const char *key)
{
  char m[128], w[128];
  snprintf(m, sizeof m, "[missing] %s", key);
  snprintf(w, sizeof w, "[wrong] %s", key);
  const char *a = strstr(text, m);
  return a ? a : strstr(text, w);
}
