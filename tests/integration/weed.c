/*
 * weed.c: SeaweedFS for the integration tests (weed.h): its S3 gateway on
 * loopback, on ports of the test's own, its files in the test's
 * directory, stopped with its whole process group.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backup/objstore.h"
#include "harness.h"
#include "weed.h"

static char top[256];          /* weed's directory is TOP/weed */
static int port0;              /* its ports: port0 .. port0 + 7 */
static pid_t weed_pid;
static char endpoint[64];
static char why[1024];

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void weed_where(const char *where, int port)
{
  snprintf(top, sizeof top, "%s", where);
  port0 = port;
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", port0 + 6);
}

const char *weed_endpoint(void)
{
  return endpoint;
}

const char *weed_path(void)
{
  const char *w = getenv("AURALOG_WEED");
  return w && *w ? w : WEED_DEFAULT;
}

void weed_keys(const char *ak, const char *sk)
{
  setenv("AURALOG_S3_ENDPOINT", endpoint, 1);
  setenv("AWS_ACCESS_KEY_ID", ak, 1);
  setenv("AWS_SECRET_ACCESS_KEY", sk, 1);
  unsetenv("AURALOG_S3_REGION");
}

/* The gRPC sockets weed makes in /tmp whatever -dir says, named by port:
 * ours, so ours to remove. */
static void remove_weed_sockets(void)
{
  static const char *svc[] = {"master", "volume", "filer", "s3"};
  for (int i = 0; i < 4; i++) {
    char p[128];
    snprintf(p, sizeof p, "/tmp/seaweedfs-%s-grpc-%d.sock", svc[i], port0 + 2 * i + 1);
    unlink(p);
  }
}

void weed_down(void)
{
  if (weed_pid <= 0)
    return;
  kill(-weed_pid, SIGKILL);    /* its process group: weed and anything it started */
  waitpid(weed_pid, NULL, 0);
  weed_pid = 0;
  remove_weed_sockets();
}

/* Start SeaweedFS (once) and wait until its S3 gateway answers a signed
 * request; fail the test, saying why, if it cannot. */
void weed_up(void)
{
  if (weed_pid > 0)
    return;
  const char *weed = weed_path();
  if (access(weed, X_OK) != 0)
    fail_msg("SeaweedFS's weed is not at %s (%s): run scripts/deps.sh --test (make test "
             "installs it), or set AURALOG_WEED", weed, strerror(errno));
  char wdir[300], data[320], tmpd[320], conf[320], log[320];
  snprintf(wdir, sizeof wdir, "%s/weed", top);
  snprintf(data, sizeof data, "%s/data", wdir);
  snprintf(tmpd, sizeof tmpd, "%s/tmp", wdir);
  snprintf(conf, sizeof conf, "%s/s3.json", wdir);
  snprintf(log, sizeof log, "%s/weed.out", wdir);
  /* Its data from an earlier start is kept (a server back from an outage
   * holds what it held); the first start of a test process starts empty. */
  static int started;
  if (!started)
    assert_int_equal(sh(NULL, 0, "rm -rf %s", wdir), 0);
  assert_int_equal(sh(NULL, 0, "mkdir -p %s %s", data, tmpd), 0);
  started = 1;
  FILE *f = fopen(conf, "w");
  assert_non_null(f);
  fprintf(f, "{\"identities\": [\n"
             "  {\"name\": \"auralog\", \"credentials\": [{\"accessKey\": \"%s\", "
             "\"secretKey\": \"%s\"}],\n"
             "   \"actions\": [\"Admin\", \"Read\", \"Write\", \"List\", \"Tagging\"]},\n"
             "  {\"name\": \"reader\", \"credentials\": [{\"accessKey\": \"%s\", "
             "\"secretKey\": \"%s\"}],\n"
             "   \"actions\": [\"Read\", \"List\"]}\n]}\n", AK, SK, READER_AK, READER_SK);
  fclose(f);
  remove_weed_sockets();       /* a run before ours, killed, left them */

  /* Every port is ours (none left to weed's defaults, +10000 for gRPC);
   * no telemetry; sockets and logs in our directory. */
  char a[32][360];
  int n = 0;
  snprintf(a[n++], sizeof a[0], "%s", weed);
  snprintf(a[n++], sizeof a[0], "-logdir=%s", wdir);
  snprintf(a[n++], sizeof a[0], "server");
  snprintf(a[n++], sizeof a[0], "-dir=%s", data);
  snprintf(a[n++], sizeof a[0], "-ip=127.0.0.1");
  snprintf(a[n++], sizeof a[0], "-ip.bind=127.0.0.1");
  snprintf(a[n++], sizeof a[0], "-master.port=%d", port0);
  snprintf(a[n++], sizeof a[0], "-master.port.grpc=%d", port0 + 1);
  snprintf(a[n++], sizeof a[0], "-volume.port=%d", port0 + 2);
  snprintf(a[n++], sizeof a[0], "-volume.port.grpc=%d", port0 + 3);
  snprintf(a[n++], sizeof a[0], "-filer");
  snprintf(a[n++], sizeof a[0], "-filer.port=%d", port0 + 4);
  snprintf(a[n++], sizeof a[0], "-filer.port.grpc=%d", port0 + 5);
  snprintf(a[n++], sizeof a[0], "-filer.localSocket=%s/filer.sock", wdir);
  snprintf(a[n++], sizeof a[0], "-s3");
  snprintf(a[n++], sizeof a[0], "-s3.port=%d", port0 + 6);
  snprintf(a[n++], sizeof a[0], "-s3.port.grpc=%d", port0 + 7);
  snprintf(a[n++], sizeof a[0], "-s3.port.iceberg=0");
  snprintf(a[n++], sizeof a[0], "-s3.port.lance=0");
  snprintf(a[n++], sizeof a[0], "-s3.localSocket=%s/s3.sock", wdir);
  snprintf(a[n++], sizeof a[0], "-s3.config=%s", conf);
  snprintf(a[n++], sizeof a[0], "-master.telemetry=false");
  snprintf(a[n++], sizeof a[0], "-master.volumeSizeLimitMB=64");
  snprintf(a[n++], sizeof a[0], "-volume.max=100");   /* each bucket grows volumes */
  char *argv[33];
  for (int i = 0; i < n; i++)
    argv[i] = a[i];
  argv[n] = NULL;
  print_message("starting SeaweedFS: weed server, S3 on %s, in %s\n", endpoint, wdir);

  /* Its environment, made before the fork: TMPDIR is ours. */
  extern char **environ;
  int ne = 0;
  while (environ[ne])
    ne++;
  char **envp = calloc((size_t)ne + 2, sizeof *envp);
  char tmpenv[340];
  snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", tmpd);
  int k = 0;
  for (int i = 0; i < ne; i++)
    if (strncmp(environ[i], "TMPDIR=", 7) != 0)
      envp[k++] = environ[i];
  envp[k++] = tmpenv;
  envp[k] = NULL;
  int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  assert_true(lfd >= 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    dup2(lfd, 1);
    dup2(lfd, 2);
    int nul = open("/dev/null", O_RDONLY);
    dup2(nul, 0);
    execve(weed, argv, envp);
    _exit(127);
  }
  setpgid(pid, pid);           /* as the child does: no race on which is first */
  close(lfd);
  free(envp);
  weed_pid = pid;

  /* Up when a store opens on it: the gateway answers, signed, with the
   * filer behind it. */
  weed_keys(AK, SK);
  double t0 = now_s();
  for (;;) {
    struct objstore *o = obj_open("s3://auralog-ready", why, sizeof why);
    if (o) {
      obj_close(o);
      break;
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      weed_pid = 0;
      sh(out, OUT_SIZE, "tail -n 15 %s", log);
      fail_msg("weed exited (status %d) before its S3 gateway answered; %s:\n%s", st, log, out);
    }
    if (now_s() - t0 > 30) {
      sh(out, OUT_SIZE, "tail -n 15 %s", log);
      weed_down();
      fail_msg("SeaweedFS did not answer in 30 s (last: %s); %s:\n%s", why, log, out);
    }
    usleep(200 * 1000);
  }
  print_message("SeaweedFS answered in %.1f s\n", now_s() - t0);
}


pid_t weed_pid_now(void)
{
  return weed_pid;
}
