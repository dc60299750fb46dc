/*
 * limit.c: the machine's own limit on one commit, measured by `auralog
 * bench` in the same run, on the same file system as the cluster's data,
 * and printed beside auralog's figures (seed 001's lesson: a figure means
 * something only against what the hardware under it can do).
 *
 * Why these are THE limits of a commit here. A durable commit of auralog
 * cannot take less than:
 *   1. a client -> engine hop and the reply back: one loopback round trip;
 *   2. an engine -> node hop and the acks back: another round trip (the
 *      six Appends go out at once, so one, not six);
 *   3. a flush on 4 of the 6 nodes (the write quorum, paper §2.1): the
 *      commit is durable when the 4th node's flush returns.
 * Everything else (SQL, the page diff, lmdb's own work, queueing, CPU
 * contention, protobuf, MACs) is what auralog adds on top. So
 *     limit = 2 x loopback RTT p50 + quorum flush round p50
 * and the bench prints auralog's commit p50 as a multiple of it. lmdb
 * makes two device flushes per commit (DESIGN.md §8), the limit counts
 * one: that factor is auralog's choice of store, not physics.
 *
 * What is measured, each for LIMIT_MS (param.h):
 *   fsync   one writer: pwrite LIMIT_RECORD_BYTES at the end of a log,
 *           then fdatasync, in a loop; the file is preallocated and
 *           zero-filled first (as a log is), so a flush writes data, not
 *           extent metadata. Latency p50/p99 and flushes per second.
 *   quorum  six writers (threads), one such file each, on the same file
 *           system: a round starts, each writer appends and flushes, the
 *           round is over when 4 of 6 are done, and the next starts at
 *           once; a writer still busy joins the newest round when it is
 *           done (as a node with an Append in flight gets the next batch
 *           when it answers, vcore.c). Round latency p50/p99, rounds/s.
 *   rtt     loopback TCP between two plain sockets (TCP_NODELAY), an echo
 *           thread on one side: send LIMIT_PING_BYTES, read them back.
 *           The floor under libuv's loop: auralog's hops cost at least this.
 * Bandwidth (bench_limit_bw, for `auralog bench repair`, which moves whole
 * segments): sequential write + fdatasync bytes/s on the same file system,
 * and one loopback TCP stream's bytes/s; see the section at the end.
 * CPU: each measurement also times the CPU its threads spent (their
 * thread CPU clocks): a flush's (pwrite + fdatasync, one writer), and a
 * round trip's (both sides: two sends, two receives). A node cannot do a
 * group commit with less than one flush, one message in and one out, so
 *     the nodes' CPU floor per tx = their flushes per tx x (flush CPU +
 *                                   half a round trip's CPU)
 * (report.c prints it beside the nodes' measured CPU). It is measured on
 * an idle machine: under load a flush costs more (a virtual machine's
 * disk notifications), so the floor is a lower bound, not a target.
 * Without group commit a node set could do at most one durable commit per
 * quorum round; with it, auralog may do more transactions per second than
 * rounds, which is the point of batching (the ratio is printed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "param.h"

/* The calling thread's CPU time so far, in microseconds. */
static double thread_cpu_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A writer's log file: preallocated, zero-filled, synced once. */
static int log_open(const char *path, char *why, size_t n)
{
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(why, n, "cannot create %.200s: %s", path, strerror(errno));
    return -1;
  }
  static const char zero[65536];
  for (size_t off = 0; off < LIMIT_FILE_BYTES; off += sizeof zero)
    if (pwrite(fd, zero, sizeof zero, (off_t)off) != (ssize_t)sizeof zero) {
      snprintf(why, n, "cannot fill %.200s: %s", path, strerror(errno));
      close(fd);
      return -1;
    }
  if (fsync(fd) != 0) {
    snprintf(why, n, "cannot fsync %.200s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

/* Append one record at *off (wrapping at the end) and flush it. */
static int append_flush(int fd, off_t *off)
{
  static const char rec[LIMIT_RECORD_BYTES] = {1};
  if (*off + LIMIT_RECORD_BYTES > (off_t)LIMIT_FILE_BYTES)
    *off = 0;
  if (pwrite(fd, rec, sizeof rec, *off) != (ssize_t)sizeof rec || fdatasync(fd) != 0)
    return -1;
  *off += LIMIT_RECORD_BYTES;
  return 0;
}

/* ---- fsync ---------------------------------------------------------------- */

static int measure_fsync(const char *dir, struct limit *l, char *why, size_t n)
{
  char path[1200];
  snprintf(path, sizeof path, "%s/flush-0", dir);
  int fd = log_open(path, why, n);
  if (fd < 0)
    return -1;
  static struct hist h;
  memset(&h, 0, sizeof h);
  off_t off = 0;
  double start = bench_now_us(), end = start + LIMIT_MS * 1000.0, t = start;
  double cpu0 = thread_cpu_us();
  while (t < end) {
    double t0 = bench_now_us();
    if (append_flush(fd, &off) != 0) {
      snprintf(why, n, "cannot write and fdatasync %.200s: %s", path, strerror(errno));
      close(fd);
      return -1;
    }
    t = bench_now_us();
    hist_add(&h, t - t0);
  }
  l->fsync_cpu_us = h.n ? (thread_cpu_us() - cpu0) / (double)h.n : 0;
  close(fd);
  unlink(path);
  l->fsync = h;
  l->fsync_per_s = (double)h.n / ((t - start) / 1e6);
  return 0;
}

/* ---- quorum rounds ------------------------------------------------------------ */

struct quorum_run {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t round;            /* the round under way (from 1) */
  int done;                  /* writers that finished it */
  double started;            /* when it started (us) */
  double end;                /* no round starts after this */
  int stop, failed;
  struct hist h;
};

struct writer {
  struct quorum_run *q;
  int fd;
  pthread_t th;
};

static void *writer_main(void *arg)
{
  struct writer *w = arg;
  struct quorum_run *q = w->q;
  uint64_t mine = 0;           /* the last round this writer took part in */
  off_t off = 0;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (!q->stop && q->round == mine)
      pthread_cond_wait(&q->cv, &q->mu);
    if (q->stop)
      break;
    uint64_t r = q->round;     /* the newest round: a laggard skips those it missed */
    pthread_mutex_unlock(&q->mu);
    int rc = append_flush(w->fd, &off);
    double now = bench_now_us();
    pthread_mutex_lock(&q->mu);
    if (rc != 0) {
      q->failed = errno ? errno : EIO;
      q->stop = 1;
      pthread_cond_broadcast(&q->cv);
      break;
    }
    mine = r;
    if (q->round == r && ++q->done == VW) {
      hist_add(&q->h, now - q->started);
      if (now >= q->end) {
        q->stop = 1;
      } else {
        q->round++;
        q->done = 0;
        q->started = now;
      }
      pthread_cond_broadcast(&q->cv);
    }
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

static int measure_quorum(const char *dir, struct limit *l, char *why, size_t n)
{
  static struct quorum_run q;
  memset(&q, 0, sizeof q);
  pthread_mutex_init(&q.mu, NULL);
  pthread_cond_init(&q.cv, NULL);
  struct writer w[NCOPIES];
  char path[NCOPIES][1200];
  int k, rc = 0;
  for (k = 0; k < NCOPIES; k++) {
    snprintf(path[k], sizeof path[k], "%s/flush-%d", dir, k + 1);
    w[k] = (struct writer){&q, log_open(path[k], why, n), 0};
    if (w[k].fd < 0)
      break;
  }
  if (k < NCOPIES) {
    while (k-- > 0) {
      close(w[k].fd);
      unlink(path[k]);
    }
    return -1;
  }
  for (k = 0; k < NCOPIES; k++)
    pthread_create(&w[k].th, NULL, writer_main, &w[k]);
  pthread_mutex_lock(&q.mu);
  double start = bench_now_us();
  q.end = start + LIMIT_MS * 1000.0;
  q.round = 1;
  q.started = start;
  pthread_cond_broadcast(&q.cv);
  pthread_mutex_unlock(&q.mu);
  for (k = 0; k < NCOPIES; k++)
    pthread_join(w[k].th, NULL);
  double secs = (bench_now_us() - start) / 1e6;
  for (k = 0; k < NCOPIES; k++) {
    close(w[k].fd);
    unlink(path[k]);
  }
  if (q.failed) {
    snprintf(why, n, "a quorum writer could not write and fdatasync in %.200s: %s", dir,
             strerror(q.failed));
    rc = -1;
  }
  l->quorum = q.h;
  l->quorum_per_s = (double)q.h.n / secs;
  pthread_mutex_destroy(&q.mu);
  pthread_cond_destroy(&q.cv);
  return rc;
}

/* ---- loopback round trip -------------------------------------------------------- */

static int full(int fd, char *buf, size_t len, int writing)
{
  size_t done = 0;
  while (done < len) {
    ssize_t r = writing ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    done += (size_t)r;
  }
  return 0;
}

static double echo_cpu_us;   /* the echo thread's CPU, from accept to EOF */

static void *echo_main(void *arg)
{
  int ls = *(int *)arg, one = 1;
  int fd = accept(ls, NULL, NULL);
  if (fd < 0)
    return NULL;
  double cpu0 = thread_cpu_us();
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char buf[LIMIT_PING_BYTES];
  while (full(fd, buf, sizeof buf, 0) == 0 && full(fd, buf, sizeof buf, 1) == 0)
    ;
  close(fd);
  echo_cpu_us = thread_cpu_us() - cpu0;
  return NULL;
}

static int measure_rtt(struct limit *l, char *why, size_t n)
{
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  int one = 1, ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd = -1;
  if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, (struct sockaddr *)&sa, &sl) != 0) {
    snprintf(why, n, "cannot listen on loopback: %s", strerror(errno));
    if (ls >= 0)
      close(ls);
    return -1;
  }
  pthread_t th;
  pthread_create(&th, NULL, echo_main, &ls);
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    snprintf(why, n, "cannot connect on loopback: %s", strerror(errno));
    if (fd >= 0)
      close(fd);
    shutdown(ls, SHUT_RDWR);
    close(ls);
    pthread_cancel(th);
    pthread_join(th, NULL);
    return -1;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  static struct hist h;
  memset(&h, 0, sizeof h);
  char buf[LIMIT_PING_BYTES];
  memset(buf, 7, sizeof buf);
  int rc = 0;
  double end = bench_now_us() + LIMIT_MS * 1000.0, t = 0, cpu0 = thread_cpu_us();
  echo_cpu_us = 0;
  while (t < end) {
    double t0 = bench_now_us();
    if (full(fd, buf, sizeof buf, 1) != 0 || full(fd, buf, sizeof buf, 0) != 0) {
      snprintf(why, n, "a loopback round trip failed: %s", strerror(errno));
      rc = -1;
      break;
    }
    t = bench_now_us();
    hist_add(&h, t - t0);
  }
  double mine = thread_cpu_us() - cpu0;
  close(fd);                   /* the echo thread reads EOF and ends */
  pthread_join(th, NULL);
  close(ls);
  l->rtt = h;
  l->rtt_cpu_us = h.n ? (mine + echo_cpu_us) / (double)h.n : 0;
  return rc;
}

/* ---- all three ----------------------------------------------------------------- */

int bench_limit(const char *dir, struct limit *l)
{
  memset(l, 0, sizeof *l);
  char d[1100];
  snprintf(d, sizeof d, "%s/limit", dir);
  if (bench_mkdirs(d) != 0) {
    snprintf(l->err, sizeof l->err, "cannot make %.200s: %s", d, strerror(errno));
    return -1;
  }
  int rc = 0;
  if (measure_fsync(d, l, l->err, sizeof l->err) != 0 ||
      measure_quorum(d, l, l->err, sizeof l->err) != 0 ||
      measure_rtt(l, l->err, sizeof l->err) != 0)
    rc = -1;
  rmdir(d);
  if (rc == 0)
    l->commit_ms = 2 * hist_ms(&l->rtt, .5) + hist_ms(&l->quorum, .5);
  l->ok = rc == 0 && l->commit_ms > 0;
  return rc;
}

void limit_json(const struct limit *l, cJSON *o)
{
  if (!l->ok) {
    cJSON_AddStringToObject(o, "error", l->err[0] ? l->err : "not measured");
    return;
  }
  cJSON_AddNumberToObject(o, "fsync_p50_ms", hist_ms(&l->fsync, .5));
  cJSON_AddNumberToObject(o, "fsync_p99_ms", hist_ms(&l->fsync, .99));
  cJSON_AddNumberToObject(o, "fsync_per_s", l->fsync_per_s);
  cJSON_AddNumberToObject(o, "quorum_p50_ms", hist_ms(&l->quorum, .5));
  cJSON_AddNumberToObject(o, "quorum_p99_ms", hist_ms(&l->quorum, .99));
  cJSON_AddNumberToObject(o, "quorum_rounds_per_s", l->quorum_per_s);
  cJSON_AddNumberToObject(o, "rtt_p50_ms", hist_ms(&l->rtt, .5));
  cJSON_AddNumberToObject(o, "rtt_p99_ms", hist_ms(&l->rtt, .99));
  cJSON_AddNumberToObject(o, "fsync_cpu_us", l->fsync_cpu_us);
  cJSON_AddNumberToObject(o, "rtt_cpu_us", l->rtt_cpu_us);
  cJSON_AddNumberToObject(o, "commit_limit_ms", l->commit_ms);
  cJSON_AddStringToObject(o, "commit_limit_is",
                          "2 x loopback rtt p50 (client<->engine, engine<->nodes) + "
                          "quorum flush round p50 (4 of 6 writers' fdatasync)");
  cJSON_AddNumberToObject(o, "record_bytes", LIMIT_RECORD_BYTES);
  cJSON_AddNumberToObject(o, "ping_bytes", LIMIT_PING_BYTES);
  cJSON_AddNumberToObject(o, "seconds_each", LIMIT_MS / 1000.0);
}

void limit_print(const struct limit *l, const char *dir, const char *fs)
{
  if (!l->ok) {
    printf("\nthe machine's limit: not measured: %s\n", l->err);
    return;
  }
  printf("\nthe machine's limit, measured in this run before the systems (%s on %s, "
         "%.1f s each):\n", dir, fs, LIMIT_MS / 1000.0);
  printf("  fdatasync after a %d B append   p50 %.3f ms  p99 %.3f ms  %.0f/s (one writer, "
         "preallocated log), %.1f us CPU each\n", LIMIT_RECORD_BYTES, hist_ms(&l->fsync, .5),
         hist_ms(&l->fsync, .99), l->fsync_per_s, l->fsync_cpu_us);
  printf("  quorum flush round (%d of %d)     p50 %.3f ms  p99 %.3f ms  %.0f rounds/s "
         "(%d writers, a file each)\n", VW, NCOPIES, hist_ms(&l->quorum, .5),
         hist_ms(&l->quorum, .99), l->quorum_per_s, NCOPIES);
  printf("  loopback TCP round trip         p50 %.3f ms  p99 %.3f ms  (%d B each way, "
         "plain sockets), %.1f us CPU each (both sides)\n", hist_ms(&l->rtt, .5),
         hist_ms(&l->rtt, .99), LIMIT_PING_BYTES, l->rtt_cpu_us);
  printf("  limit of one commit = 2 x rtt p50 (client<->engine, engine<->nodes) + quorum "
         "round p50 = %.3f ms\n", l->commit_ms);
}

/* ---- bandwidth: what moving a segment may cost at most ------------------------- */

/* `auralog bench repair` moves whole segments: what bounds it is not a
 * round trip or one flush but how many bytes a second the disk takes and
 * loopback TCP carries. Each is measured for ms:
 *   disk      one writer appends BW_CHUNK-byte chunks to a fresh file in
 *             dir and fdatasyncs every BW_SYNC_BYTES (as a store commits
 *             a batch), the file truncated and rewritten at BW_FILE_BYTES;
 *             bytes / time, the flushes included.
 *   loopback  one thread writes BW_CHUNK-byte buffers into a TCP socket,
 *             another reads them; bytes read / time. */
#define BW_CHUNK      (256u << 10)
#define BW_SYNC_BYTES (4u << 20)
#define BW_FILE_BYTES (64u << 20)

static int measure_disk_bw(const char *dir, int ms, double *out, char *why, size_t n)
{
  char path[1200];
  snprintf(path, sizeof path, "%s/bw-0", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(why, n, "cannot create %.200s: %s", path, strerror(errno));
    return -1;
  }
  char *buf = malloc(BW_CHUNK);
  for (size_t i = 0; i < BW_CHUNK; i++)
    buf[i] = (char)(i * 2654435761u >> 13);   /* not zeros: nothing may skip them */
  uint64_t total = 0, off = 0;
  int rc = 0;
  double start = bench_now_us(), end = start + ms * 1000.0, t = start;
  while (t < end) {
    if (off + BW_CHUNK > BW_FILE_BYTES) {
      if (ftruncate(fd, 0) != 0)
        rc = -1;
      off = 0;
    }
    if (rc || pwrite(fd, buf, BW_CHUNK, (off_t)off) != (ssize_t)BW_CHUNK) {
      rc = -1;
      break;
    }
    off += BW_CHUNK;
    total += BW_CHUNK;
    if (total % BW_SYNC_BYTES == 0 && fdatasync(fd) != 0) {
      rc = -1;
      break;
    }
    t = bench_now_us();
  }
  if (rc == 0 && fdatasync(fd) != 0)
    rc = -1;
  t = bench_now_us();
  if (rc)
    snprintf(why, n, "cannot write and fdatasync %.200s: %s", path, strerror(errno));
  free(buf);
  close(fd);
  unlink(path);
  *out = (double)total / ((t - start) / 1e6);
  return rc;
}

struct bw_sink {
  int ls;
  uint64_t got;
};

static void *sink_main(void *arg)
{
  struct bw_sink *s = arg;
  int fd = accept(s->ls, NULL, NULL);
  if (fd < 0)
    return NULL;
  char *buf = malloc(BW_CHUNK);
  ssize_t r;
  while ((r = read(fd, buf, BW_CHUNK)) > 0 || (r < 0 && errno == EINTR))
    if (r > 0)
      s->got += (uint64_t)r;
  free(buf);
  close(fd);
  return NULL;
}

static int measure_net_bw(int ms, double *out, char *why, size_t n)
{
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  struct bw_sink s = {socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), 0};
  if (s.ls < 0 || bind(s.ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s.ls, 1) != 0 ||
      getsockname(s.ls, (struct sockaddr *)&sa, &sl) != 0) {
    snprintf(why, n, "cannot listen on loopback: %s", strerror(errno));
    if (s.ls >= 0)
      close(s.ls);
    return -1;
  }
  pthread_t th;
  pthread_create(&th, NULL, sink_main, &s);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    snprintf(why, n, "cannot connect on loopback: %s", strerror(errno));
    if (fd >= 0)
      close(fd);
    shutdown(s.ls, SHUT_RDWR);
    close(s.ls);
    pthread_cancel(th);
    pthread_join(th, NULL);
    return -1;
  }
  char *buf = calloc(1, BW_CHUNK);
  int rc = 0;
  double start = bench_now_us(), end = start + ms * 1000.0;
  while (bench_now_us() < end)
    if (full(fd, buf, BW_CHUNK, 1) != 0) {
      snprintf(why, n, "a loopback write failed: %s", strerror(errno));
      rc = -1;
      break;
    }
  close(fd);                   /* the sink reads what is left, then EOF */
  pthread_join(th, NULL);
  double secs = (bench_now_us() - start) / 1e6;
  close(s.ls);
  free(buf);
  *out = (double)s.got / secs;
  return rc;
}

int bench_limit_bw(const char *dir, int ms, struct bwlimit *b)
{
  memset(b, 0, sizeof *b);
  char d[1100];
  snprintf(d, sizeof d, "%s/limit", dir);
  if (bench_mkdirs(d) != 0) {
    snprintf(b->err, sizeof b->err, "cannot make %.200s: %s", d, strerror(errno));
    return -1;
  }
  int rc = measure_disk_bw(d, ms, &b->disk_bytes_s, b->err, sizeof b->err) != 0 ||
           measure_net_bw(ms, &b->net_bytes_s, b->err, sizeof b->err) != 0 ? -1 : 0;
  rmdir(d);
  b->ms = ms;
  b->ok = rc == 0 && b->disk_bytes_s > 0 && b->net_bytes_s > 0;
  return rc;
}
