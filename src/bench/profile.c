/*
 * profile.c: `auralog bench --profile DIR`: where a commit's CPU goes,
 * recorded with perf over each cluster system's measured window.
 *
 * For each system that runs on a cluster (auralog, auralog-pages,
 * auralog-nokey), perf samples the engine and node A1 (every node does
 * the same work: each holds a segment of every PG) from the start of the
 * measured window to its end, with DWARF call stacks (the binary is built
 * without frame pointers), into
 *     DIR/<system>-engine.perf.data   DIR/<system>-A1.perf.data
 * and writes beside each the report a person reads first:
 *     DIR/<system>-<role>.txt   perf report --no-children, symbols >= 0.5%
 * `perf report -i FILE` opens one in full (call graphs: -g caller).
 * Sampling costs the profiled processes a few percent: a profiled run's
 * figures are not the ones to quote.
 *
 * perf is Debian's linux-perf; where it is missing, or the kernel refuses
 * to let it sample (perf_event_paranoid), the option fails in one line
 * before anything runs, or the report says what perf said.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_int.h"
#include "lib/log.h"

int prof_check(const char *dir, char *why, size_t n)
{
  if (system("perf --version >/dev/null 2>&1") != 0) {
    snprintf(why, n, "--profile needs perf (Debian's linux-perf), which is not on PATH");
    return -1;
  }
  if (bench_mkdirs(dir) != 0) {
    snprintf(why, n, "--profile: cannot make %s: %s", dir, strerror(errno));
    return -1;
  }
  return 0;
}

static pid_t record(const char *out, const char *errlog, pid_t pid)
{
  char p[32];
  snprintf(p, sizeof p, "%d", (int)pid);
  pid_t c = fork();
  if (c == 0) {
    FILE *e = freopen(errlog, "w", stderr);
    (void)e;
    if (freopen("/dev/null", "w", stdout) == NULL)
      _exit(127);
    execlp("perf", "perf", "record", "-q", "-F", "499", "--call-graph", "dwarf,8192", "-o",
           out, "-p", p, (char *)NULL);
    _exit(127);
  }
  return c;
}

void prof_start(struct prof *pf, const char *dir, const char *sys, pid_t engine, pid_t node)
{
  memset(pf, 0, sizeof *pf);
  const char *roles[2] = {"engine", "A1"};
  pid_t pids[2] = {engine, node};
  for (int i = 0; i < 2; i++) {
    if (pids[i] <= 0)
      continue;
    struct profrec *r = &pf->r[pf->n++];
    snprintf(r->data, sizeof r->data, "%s/%s-%s.perf.data", dir, sys, roles[i]);
    snprintf(r->txt, sizeof r->txt, "%s/%s-%s.txt", dir, sys, roles[i]);
    snprintf(r->role, sizeof r->role, "%s", roles[i]);
    r->perf = record(r->data, r->txt, pids[i]);
  }
}

void prof_stop(struct prof *pf)
{
  for (int i = 0; i < pf->n; i++)
    if (pf->r[i].perf > 0)
      kill(pf->r[i].perf, SIGINT);   /* perf writes its file and exits */
  for (int i = 0; i < pf->n; i++) {
    struct profrec *r = &pf->r[i];
    int st = 0;
    if (r->perf <= 0 || waitpid(r->perf, &st, 0) != r->perf)
      continue;
    char cmd[4096];
    /* The report replaces perf record's own messages in the .txt, unless
     * it has nothing to report: then they say why. */
    snprintf(cmd, sizeof cmd, "perf report -i '%s' --no-children --sort dso,symbol --stdio "
             "-g none --percent-limit 0.5 > '%s.tmp' 2>/dev/null && [ -s '%s.tmp' ] && "
             "mv '%s.tmp' '%s' || rm -f '%s.tmp'", r->data, r->txt, r->txt, r->txt, r->txt,
             r->txt);
    if (system(cmd) != 0)
      logwarn("bench: perf report of %s failed; perf's own words are in %s", r->data, r->txt);
    fprintf(stderr, "profile of %s: %s (perf report -i %s for all of it)\n", r->role, r->txt,
            r->data);
  }
  pf->n = 0;
}
