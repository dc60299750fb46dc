/*
 * crash_clients.c: the crash campaign's writer and reader (crash.h).
 *
 * Both are children forked by the test, talking to it through struct
 * shared (a shared mapping) and files. The writer commits numbered
 * transactions back to back, one `auralog sql` each, and appends "txn rc"
 * to crash-records.txt; the reader reads the transactions' row counts
 * every 100-200 ms and appends each new "txn rows ms" it saw to
 * crash-reads.txt. clients_stop takes in both files, from where it last
 * stopped, into txstate and rseen (the checks' input).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash.h"
#include "harness.h"
#include "lib/log.h"

extern char **environ;

/* ---- what the writer did, what the reader saw ---------------------------- */

unsigned char *txstate;         /* by txn number */
int *rseen;                     /* rows the reader saw of each txn (0: never seen it) */
unsigned long long *rseen_ms;  /* when it first saw them */
unsigned char *rmulti;          /* it saw the txn with different row counts */
long txcap;

static void grow(long t)
{
  if (t < txcap)
    return;
  long cap = txcap ? txcap : 1024;
  while (cap <= t)
    cap *= 2;
  txstate = realloc(txstate, (size_t)cap);
  rseen = realloc(rseen, (size_t)cap * sizeof *rseen);
  rseen_ms = realloc(rseen_ms, (size_t)cap * sizeof *rseen_ms);
  rmulti = realloc(rmulti, (size_t)cap);
  memset(txstate + txcap, 0, (size_t)(cap - txcap));
  memset(rseen + txcap, 0, (size_t)(cap - txcap) * sizeof *rseen);
  memset(rseen_ms + txcap, 0, (size_t)(cap - txcap) * sizeof *rseen_ms);
  memset(rmulti + txcap, 0, (size_t)(cap - txcap));
  txcap = cap;
}

struct shared *sh_w;
pid_t writer_pid, reader_pid;

static long records_off, reads_off;

/* The writer: runs in a child; never returns. */
static void writer_main(void)
{
  int rfd = open(records_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  int efd = open(errors_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  int nfd = open("/dev/null", O_WRONLY);
  if (rfd < 0 || efd < 0 || nfd < 0)
    _exit(3);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, nfd, 1);
  posix_spawn_file_actions_adddup2(&fa, efd, 2);
  static char q[16384];
  useconds_t backoff = 0;
  while (!__atomic_load_n(&sh_w->stop, __ATOMIC_SEQ_CST)) {
    long t = sh_w->next;
    size_t len = (size_t)snprintf(q, sizeof q, "begin;");
    for (int k = 0; k < rows_of(t); k++)
      len += (size_t)snprintf(q + len, sizeof q - len,
                              " insert into camp values(%ld, %d, randomblob(%d));", t, k,
                              pad_of(t, k));
    snprintf(q + len, sizeof q - len, " commit;");
    char *argv[] = {(char *)bin, "sql", "--engine", engine, q, NULL};
    pid_t pid;
    int rc = 255, st;
    unsigned long long t0 = now_us();
    __atomic_store_n(&sh_w->inflight, 1, __ATOMIC_SEQ_CST);
    if (posix_spawn(&pid, bin, &fa, NULL, argv, environ) == 0) {
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
      rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    __atomic_store_n(&sh_w->inflight, 0, __ATOMIC_SEQ_CST);
    dprintf(rfd, "%ld %d\n", t, rc);
    if (rc != 0)
      dprintf(efd, "  ^ txn %ld: exit %d\n", t, rc);
    __atomic_store_n(&sh_w->next, t + 1, __ATOMIC_SEQ_CST);
    if (rc == 0) {
      __atomic_store_n(&sh_w->last_us, (long)(now_us() - t0), __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&sh_w->acked, 1, __ATOMIC_SEQ_CST);
      backoff = 0;
      long pace = __atomic_load_n(&sh_w->pace_us, __ATOMIC_SEQ_CST);
      if (pace > 0)
        usleep((useconds_t)pace);
    } else {
      __atomic_add_fetch(&sh_w->failed, 1, __ATOMIC_SEQ_CST);
      backoff = backoff ? (backoff < 100000 ? 2 * backoff : backoff) : 10000;
      usleep(backoff);       /* the engine is down: do not spin */
    }
  }
  _exit(0);
}

/* One read of the reader: run q, return what `auralog sql` printed on its
 * standard output (rows only: errors go to crash-reader.err) in *buf, and its
 * exit status. A stop request kills the client: it prints its rows all at
 * once, only after the engine's whole reply came, so a killed client
 * printed either all of them or none. */
static int reader_query(const char *q, int efd, char **buf, size_t *cap)
{
  int fds[2];
  size_t len = 0;
  (*buf)[0] = 0;
  if (pipe(fds) != 0)
    return 255;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, efd, 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  char *argv[] = {(char *)bin, "sql", "--engine", engine, (char *)q, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return 255;
  }
  int killed = 0;
  for (;;) {
    if (!killed && __atomic_load_n(&sh_w->rstop, __ATOMIC_SEQ_CST)) {
      kill(pid, SIGKILL);     /* our own unreaped child: the pid is its */
      killed = 1;
    }
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    if (poll(&pf, 1, 50) <= 0)
      continue;
    if (len + 65536 + 1 > *cap) {
      *cap = (*cap + 65536) * 2;
      *buf = realloc(*buf, *cap);
    }
    ssize_t n = read(fds[0], *buf + len, *cap - len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  (*buf)[len] = 0;
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The reader: runs in a child; never returns. Every txn it sees with a row
 * count it had not recorded goes to crash-reads.txt as "txn rows ms". */
static void reader_main(void)
{
  int rfd = open(reads_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  int efd = open(rerrors_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (rfd < 0 || efd < 0)
    _exit(3);
  /* What it knows: the parent's copy (inherited), grown locally. */
  long kcap = txcap;
  int *known = kcap ? malloc((size_t)kcap * sizeof *known) : NULL;
  if (kcap)
    memcpy(known, rseen, (size_t)kcap * sizeof *known);
  size_t cap = 1 << 20;
  char *buf = malloc(cap);
  uint64_t jitter = mix(now_us() ^ (uint64_t)getpid());
  useconds_t backoff = 0;
  for (long n = 0; !__atomic_load_n(&sh_w->rstop, __ATOMIC_SEQ_CST); n++) {
    int full = n % 8 == 0;
    const char *q = full ? "select txn, count(*) from camp group by txn;"
                         : "select txn, count(*) from camp where txn >= "
                           "(select max(txn) from camp) - 40 group by txn;";
    int rc = reader_query(q, efd, &buf, &cap);
    unsigned long long ms = now_ms();
    __atomic_add_fetch(&sh_w->reads, 1, __ATOMIC_SEQ_CST);
    if (rc == 0) {
      __atomic_add_fetch(&sh_w->reads_ok, 1, __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&sh_w->reads_full, full, __ATOMIC_SEQ_CST);
    }
    /* Whatever it printed was shown to a client, exit status aside. */
    for (char *line = buf, *end; *line; line = end + 1) {
      end = strchr(line, '\n');
      if (end == NULL)
        break;
      long t, c;
      char extra;
      *end = 0;
      if (sscanf(line, "%ld|%ld%c", &t, &c, &extra) != 2 || t < 0 || c <= 0)
        continue;
      if (t >= kcap) {
        long ncap = kcap ? kcap : 1024;
        while (ncap <= t)
          ncap *= 2;
        known = realloc(known, (size_t)ncap * sizeof *known);
        memset(known + kcap, 0, (size_t)(ncap - kcap) * sizeof *known);
        kcap = ncap;
      }
      if (known[t] != c) {
        known[t] = (int)c;
        dprintf(rfd, "%ld %ld %llu\n", t, c, ms);
      }
    }
    jitter = mix(jitter);
    backoff = rc == 0 ? 0 : backoff ? (backoff < 50000 ? 2 * backoff : backoff) : 10000;
    useconds_t pause = (useconds_t)(100000 + jitter % 100000) + backoff;
    for (useconds_t slept = 0; slept < pause && !__atomic_load_n(&sh_w->rstop, __ATOMIC_SEQ_CST);
         slept += 10000)
      usleep(10000);
  }
  _exit(0);
}

static pid_t fork_child(void (*main_fn)(void))
{
  fflush(stdout);
  fflush(stderr);
  if (timeline)
    fflush(timeline);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    main_fn();
  return pid;
}

/* Start the writer and the reader. */
void clients_start(void)
{
  __atomic_store_n(&sh_w->stop, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&sh_w->rstop, 0, __ATOMIC_SEQ_CST);
  writer_pid = fork_child(writer_main);
  reader_pid = fork_child(reader_main);
}

static void reap(pid_t *pid)
{
  if (*pid > 0) {
    int st;
    while (waitpid(*pid, &st, 0) < 0 && errno == EINTR)
      ;
    *pid = 0;
  }
}

/* Stop the writer after its current transaction, the reader at once; take
 * in what they did and saw. */
void clients_stop(void)
{
  __atomic_store_n(&sh_w->rstop, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&sh_w->stop, 1, __ATOMIC_SEQ_CST);
  reap(&reader_pid);
  reap(&writer_pid);
  FILE *f = fopen(records_path, "r");
  if (f) {
    fseek(f, records_off, SEEK_SET);
    long t;
    int rc;
    while (fscanf(f, "%ld %d\n", &t, &rc) == 2) {
      grow(t);
      txstate[t] = rc == 0 ? TX_ACKED : TX_UNKNOWN;
    }
    records_off = ftell(f);
    fclose(f);
  }
  f = fopen(reads_path, "r");
  if (f) {
    fseek(f, reads_off, SEEK_SET);
    long t, c;
    unsigned long long ms;
    while (fscanf(f, "%ld %ld %llu\n", &t, &c, &ms) == 3) {
      grow(t);
      if (rseen[t] == 0) {
        rseen[t] = (int)c;
        rseen_ms[t] = ms;
      } else if (rseen[t] != c) {
        rmulti[t] = 1;
        note("the reader saw txn %ld with %ld rows at %llu, with %d rows at %llu", t, c, ms,
             rseen[t], rseen_ms[t]);
      }
    }
    reads_off = ftell(f);
    fclose(f);
  }
}

