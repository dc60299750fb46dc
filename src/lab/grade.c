/*
 * grade.c: `auralog lab grade N`: points for implement lab N, as xv6's
 * `make grade` gives them (see impl.h for the labs, impl.c for the tests).
 *
 * In the tree this binary was built in (or --src), it
 *   1. builds what it runs (make build/auralog and the lab's unit test
 *      binaries; --no-build when `make grade` has just done it), so a
 *      grade is always of the code as it is now;
 *   2. runs each unit test binary once with cmocka's TAP output and gives
 *      each listed test its points if it printed "ok";
 *   3. runs each simulator range a seed at a time with that tree's
 *      binary, stopping at the first seed that breaks an invariant (or
 *      crashes, or runs past its time): the points need every seed. For
 *      the failing seed it prints the command that replays it and draws
 *      the run (`auralog viz --sim-trace`: the log, the VDL and SCLs, the
 *      faults, in the seconds before the violation) into the run
 *      directory, build/grade/labNN/ unless --out;
 *   4. prints "Score: got/total" and exits 0 only with full points.
 * All it prints for a lab is kept in the run directory's report.txt, and
 * build/grade/latest points at the last lab's directory.
 * `lab grade all` does every lab and prints a total of totals.
 *
 * --bug NAME plants a bug (src/bugs.h) in the simulator runs: a check
 * that the grader takes points away (tests/integration/test_grade.c).
 *
 * This grades whatever tree it is given, tests and simulator included,
 * so it is the student's tool, not proof of their work: the instructor
 * grades with --submission (submit.c, through grader.h), which takes
 * only the student's lab bodies into the instructor's own tree, runs
 * the hidden tests and seeds too, and contains what the bodies do.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bugs.h"
#include "lab/grader.h"
#include "lab/impl.h"
#include "lab/lab.h"
#include "lib/log.h"

#define UNIT_LIMIT_S 120       /* one unit test binary */
#define SEED_LIMIT_S 60        /* one simulator seed (a good one takes < 1 s) */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run argv in dir with stdout and stderr to the file log; wait at most
 * limit seconds (then kill it). Returns its exit status, 128 + signal if
 * a signal ended it, or -1 if it ran past the limit. With g->contain it
 * runs contained (grade_contain, submit.c), and what it left running in
 * its process group is killed when it ends. */
static int run(const struct grader *g, const char *dir, char *const argv[], const char *log,
               int limit, int tap)
{
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    die("lab grade: fork: %s", strerror(errno));
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || chdir(dir) != 0)
      _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    setpgid(0, 0);          /* killed as a group if it hangs */
    if (tap)
      setenv("CMOCKA_MESSAGE_OUTPUT", "TAP", 1);
    /* A submission's randomized unit tests run on the student's own
     * cases (lab_expect.h, lab_seed); a student's own grade, on the
     * default ones. */
    if (tap && g->hidden && g->seed_base) {
      char seed[32];
      snprintf(seed, sizeof seed, "%llu", g->seed_base);
      setenv("AURALOG_TEST_SEED", seed, 1);
    }
    if (g->contain)
      grade_contain(limit);
    execv(argv[0], argv);
    _exit(127);
  }
  double until = now_s() + limit;
  int status;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR)
      return -1;
    if (now_s() > until) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(2000);
  }
  if (g->contain)
    kill(-pid, SIGKILL);    /* anything it left behind in its group */
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The last lines of a file, indented, to show why something failed. */
static void tail(const char *path, int lines)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return;
  char *ring[64] = {0}, buf[1024];
  int n = 0;
  if (lines > 64)
    lines = 64;
  while (fgets(buf, sizeof buf, f)) {
    free(ring[n % lines]);
    ring[n % lines] = strdup(buf);
    n++;
  }
  fclose(f);
  for (int i = n > lines ? n - lines : 0; i < n; i++) {
    printf("    | %s", ring[i % lines]);
    free(ring[i % lines]);
  }
}

/* make build/auralog and the unit tests of labs l[0..nl). */
int grade_build(struct grader *g, const struct impl_lab *l, size_t nl)
{
  char *argv[32];
  int k = 0;
  char bins[16][64];
  int nb = 0;
  argv[k++] = "/usr/bin/make";
  argv[k++] = "--no-print-directory";
  argv[k++] = "-j2";
  /* In a student repository, compile the graded labs' own files, never
   * their reference objects (export.c). */
  char labvar[32];
  snprintf(labvar, sizeof labvar, nl == 1 ? "LAB=%d" : "LAB=all", l[0].n);
  argv[k++] = labvar;
  argv[k++] = "SAN=";        /* build/, whatever the environment says (make grade does too) */
  argv[k++] = "build/auralog";
  for (size_t i = 0; i < nl; i++)
    for (const struct impl_test *u = l[i].tests; u->name && nb < 16; u++) {
      if (u->hidden && !g->hidden)
        continue;             /* tests/hidden: not in a student's tree */
      char b[64];
      snprintf(b, sizeof b, "build/tests/unit_%s", u->bin);
      int seen = 0;
      for (int j = 0; j < nb; j++)
        seen |= strcmp(bins[j], b) == 0;
      if (!seen) {
        snprintf(bins[nb], sizeof bins[nb], "%s", b);
        argv[k++] = bins[nb++];
      }
    }
  argv[k] = NULL;
  char log[PATH_MAX + 64];
  snprintf(log, sizeof log, "%s/make.log", g->out);
  printf("make: building the tree (%s)\n", log);
  int rc = run(g, g->root, argv, log, 1800, 0);
  if (rc != 0) {
    printf("make: FAIL: the tree does not build; the end of %s:\n", log);
    tail(log, 20);
  }
  return rc;
}

/* Keep a test's outcome for submit.c (g->rec); detail says why it failed. */
static void note(struct grader *g, const char *name, int got, int max, int hidden,
                 const char *detail)
{
  if (g->rec == NULL || g->nrec >= GRADE_MAXREC)
    return;
  struct grade_rec *r = &g->rec[g->nrec++];
  snprintf(r->name, sizeof r->name, "%s", name);
  r->got = got;
  r->max = max;
  r->hidden = hidden;
  snprintf(r->detail, sizeof r->detail, "%s", detail ? detail : "");
}

/* Points from one unit test binary: each listed test that printed "ok".
 * cmocka's TAP output puts a failure's words ("# ...") after its
 * "not ok N - name" line; they are the test's detail. */
static int unit_bin(struct grader *g, const struct impl_lab *l, const char *bin)
{
  char path[PATH_MAX + 64], log[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/build/tests/unit_%s", g->root, bin);
  snprintf(log, sizeof log, "%s/unit_%s.log", g->out, bin);
  char *argv[] = {path, NULL};
  double t0 = now_s();
  int rc = run(g, g->root, argv, log, UNIT_LIMIT_S, 1);
  double dt = now_s() - t0;
  const char *how = rc == -1 ? "ran past its time" : rc >= 128 ? "crashed" : NULL;
  printf("unit_%s (%.1fs)%s%s\n", bin, dt, how ? ": " : "", how ? how : "");
  int got = 0;
  for (const struct impl_test *u = l->tests; u->name; u++) {
    if (strcmp(u->bin, bin) != 0 || (u->hidden && !g->hidden))
      continue;
    FILE *f = fopen(log, "r");
    char line[1024], *at, words[1536] = "", pend[1024] = "";
    int ok = 0, seen = 0, mine = 0;
    size_t wl = 0, pl = 0;
    /* A test's own words (lab_expect.h's "ERROR: ... expected ...") come
     * before its result line ("ok 3 - name" or "not ok 3 - name"), and
     * cmocka's "# file:line" lines after it. */
    while (f && fgets(line, sizeof line, f)) {
      if (strncmp(line, "ok ", 3) != 0 && strncmp(line, "not ok ", 7) != 0) {
        if (mine && strncmp(line, "# ", 2) == 0 && wl + strlen(line) < sizeof words)
          wl += (size_t)snprintf(words + wl, sizeof words - wl, "%s", line + 2);
        else if (line[0] != '#' && strncmp(line, "1..", 3) != 0 && pl + strlen(line) < sizeof pend)
          pl += (size_t)snprintf(pend + pl, sizeof pend - pl, "%s", line);
        continue;
      }
      size_t nl = strlen(u->name);
      mine = 0;
      if ((at = strstr(line, " - ")) != NULL && strncmp(at + 3, u->name, nl) == 0 &&
          (at[3 + nl] == '\n' || at[3 + nl] == 0)) {
        seen = 1;
        ok = strncmp(line, "ok ", 3) == 0;
        mine = !ok;
        wl = ok ? 0 : (size_t)snprintf(words, sizeof words, "%s", pend);
      }
      pl = 0;
      pend[0] = 0;
    }
    if (f)
      fclose(f);
    printf("  %-56s %s %2d/%d%s\n", u->name, ok ? "OK  " : seen ? "FAIL" : "MISSING",
           ok ? u->points : 0, u->points, u->hidden ? " (hidden)" : "");
    got += ok ? u->points : 0;
    char name[256], detail[2048];
    snprintf(name, sizeof name, "unit_%s %s", bin, u->name);
    snprintf(detail, sizeof detail, "%s%s%s",
             ok ? "" : seen ? "FAILED: " : how ? "did not finish: unit_" : "MISSING: ",
             ok ? "" : seen ? (wl ? words : "(no message)\n") : how ? bin : "the test did not run\n",
             ok || seen || !how ? "" : how[0] == 'r' ? " ran past its time\n" : " crashed\n");
    if (!ok && !u->hidden) {
      char env[64] = "";
      if (g->hidden && g->seed_base)   /* the cases it ran: the student's own */
        snprintf(env, sizeof env, "AURALOG_TEST_SEED=%llu ", g->seed_base);
      size_t dl = strlen(detail);
      snprintf(detail + dl, sizeof detail - dl, "run it: make build/tests/unit_%s && "
               "%sbuild/tests/unit_%s\n", bin, env, bin);
    }
    note(g, name, ok ? u->points : 0, u->points, u->hidden, detail);
  }
  if (got == 0 || g->verbose) {
    printf("  (its output: %s)\n", log);
  }
  return got;
}

/* Draw the failing seed's trace (written by auralog sim in the run dir). */
static void draw(struct grader *g, const char *sim, unsigned long long seed)
{
  char trace[PATH_MAX + 96], svg[PATH_MAX + 96], log[PATH_MAX + 64];
  snprintf(trace, sizeof trace, "%s/sim-seed-%llu.trace", g->out, seed);
  snprintf(svg, sizeof svg, "%s/sim-seed-%llu.svg", g->out, seed);
  snprintf(log, sizeof log, "%s/viz.log", g->out);
  if (access(trace, R_OK) != 0) {
    printf("      (no trace of it was written: %s)\n", trace);
    return;
  }
  char *argv[] = {(char *)sim, "viz", "--sim-trace", trace, "-o", svg, NULL};
  if (run(g, g->out, argv, log, 120, 0) == 0)
    printf("      drawing: %s (the log, VDL, SCLs and faults before the violation)\n"
           "      trace:   %s\n", svg, trace);
  else
    printf("      trace: %s (drawing it failed, see %s)\n", trace, log);
}

/* The replay line from a seed's output, with the tree's binary. */
static int replay_of(const char *log, char *out, size_t n, char *verdict, size_t vn)
{
  FILE *f = fopen(log, "r");
  char line[2048];
  int found = 0;
  verdict[0] = 0;
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (strncmp(line, "  replay: ", 10) == 0 && !found) {
      snprintf(out, n, "%s", line + 10);
      found = 1;
    } else if (strncmp(line, "  ", 2) == 0 && !verdict[0] && !found &&
               strncmp(line, "  replica:", 10) != 0) {
      snprintf(verdict, vn, "%s", line + 2);   /* the violation */
    }
  }
  if (f)
    fclose(f);
  return found;
}

/* Whether a seed's output says it passed ("seed N: ok, ..."): exit
 * status 0 alone is not enough, as code that calls exit(0) before the
 * simulator has looked would get it too. */
static int said_ok(const char *log, unsigned long long seed)
{
  char want[64], line[512];
  int ok = 0;
  snprintf(want, sizeof want, "seed %llu: ok,", seed);
  FILE *f = fopen(log, "r");
  while (f && !ok && fgets(line, sizeof line, f))
    ok = strncmp(line, want, strlen(want)) == 0;
  if (f)
    fclose(f);
  return ok;
}

/* The argv of `auralog sim --seed SEED [--trace TRACE] [--faults F] [--bug B]`
 * for range s (argv holds 16). */
static void sim_argv(char **argv, char *sim, char *seedarg, char *trace, const struct grader *g,
                     const struct impl_sim *s)
{
  int k = 0;
  argv[k++] = sim;
  argv[k++] = "sim";
  argv[k++] = "--seed";
  argv[k++] = seedarg;
  if (trace) {
    argv[k++] = "--trace";
    argv[k++] = trace;
  }
  if (s->faults) {
    argv[k++] = "--faults";
    argv[k++] = (char *)s->faults;
  }
  if (g->bug) {
    argv[k++] = "--bug";
    argv[k++] = (char *)g->bug;
  }
  argv[k] = NULL;
}

static int sim_range(struct grader *g, const struct impl_sim *s)
{
  char sim[PATH_MAX + 64], log[PATH_MAX + 64], seedarg[32];
  snprintf(sim, sizeof sim, "%s/build/auralog", g->root);
  snprintf(log, sizeof log, "%s/sim.log", g->out);
  /* A hidden range's seeds are the student's own (grader.h, seed_base). */
  unsigned long long first = s->first, last = s->last;
  if (s->hidden)
    first += g->seed_base, last += g->seed_base;
  char what[256], name[256];
  snprintf(what, sizeof what, "%ssim seeds %llu..%llu, %s%s", s->hidden ? "hidden " : "",
           first, last, s->faults ? "faults " : "all faults", s->faults ? s->faults : "");
  /* The name in --csv and --gradescope: a hidden range's seeds differ
   * from student to student, so it is named by its place. */
  if (s->hidden)
    snprintf(name, sizeof name, "hidden sim seeds +%u..+%u, %s%s", s->first, s->last,
             s->faults ? "faults " : "all faults", s->faults ? s->faults : "");
  else
    snprintf(name, sizeof name, "%s", what);
  /* AURALOG_GRADE_SEEDS=K: only the first K seeds of each range. For
   * the tests of the grader itself (a quick check of its plumbing); a
   * grade is always of the whole range. */
  const char *cap = getenv("AURALOG_GRADE_SEEDS");
  if (cap && atoi(cap) > 0 && first + (unsigned)atoi(cap) - 1 < last) {
    last = first + (unsigned)atoi(cap) - 1;
    printf("(AURALOG_GRADE_SEEDS=%s: seeds %llu..%llu only, not a grade)\n", cap, first, last);
  }
  double t0 = now_s();
  unsigned long long bad = 0;
  int rc = 0;
  for (unsigned long long seed = first; seed <= last; seed++) {
    char *argv[16];
    snprintf(seedarg, sizeof seedarg, "%llu", seed);
    sim_argv(argv, sim, seedarg, NULL, g, s);
    rc = run(g, g->out, argv, log, SEED_LIMIT_S, 0);
    if (rc == 0 && !said_ok(log, seed))
      rc = -2;
    if (rc != 0) {
      bad = seed;
      break;
    }
  }
  double dt = now_s() - t0;
  printf("%-58s %s %2d/%d (%.1fs)\n", what, bad ? "FAIL" : "OK  ", bad ? 0 : s->points,
         s->points, dt);
  if (!bad) {
    note(g, name, s->points, s->points, s->hidden, NULL);
    return s->points;
  }
  char replay[2048], verdict[2048], where[PATH_MAX + 16], detail[2048];
  if (g->replay_prefix)
    snprintf(where, sizeof where, "%s", g->replay_prefix);
  else
    snprintf(where, sizeof where, "cd %s && ", g->root);
  int found = replay_of(log, replay, sizeof replay, verdict, sizeof verdict);
  if (found) {
    printf("      seed %llu: %s\n", bad, verdict[0] ? verdict : "(see the log)");
  } else {
    snprintf(verdict, sizeof verdict, "%s",
             rc == -1 ? "ran past its time" : rc >= 128 ? "crashed"
             : rc == -2 ? "ended without saying whether the seed passed" : "failed");
    snprintf(replay, sizeof replay, "auralog sim --seed %llu%s%s%s%s", bad,
             s->faults ? " --faults " : "", s->faults ? s->faults : "",
             g->bug ? " --bug " : "", g->bug ? g->bug : "");
    printf("      seed %llu: %s\n", bad, verdict);
  }
  printf("      replay: %sbuild/%s\n", where, replay);
  snprintf(detail, sizeof detail, "FAILED at seed %llu: %.700s\nreplay: %.500sbuild/%.600s\n", bad,
           verdict[0] ? verdict : "(see the log)", where, replay);
  note(g, name, 0, s->points, s->hidden, detail);
  if (!found) {
    tail(log, 5);
    if (rc != 1) {
      /* It died or hung before it could write its trace: write it again,
       * up to the point it reached, a step budget at a time. */
      char trace[PATH_MAX + 96];
      snprintf(trace, sizeof trace, "%s/sim-seed-%llu.trace", g->out, bad);
      char *argv[16];
      sim_argv(argv, sim, seedarg, trace, g, s);
      char tlog[PATH_MAX + 64];
      snprintf(tlog, sizeof tlog, "%s/trace.log", g->out);
      run(g, g->out, argv, tlog, 20, 0);
    }
  }
  printf("      log: %s\n", log);
  draw(g, sim, bad);
  return 0;
}

/* Empty the run directory of an earlier grade's files. */
static void fresh_dir(const char *dir)
{
  char p[PATH_MAX + 300];
  snprintf(p, sizeof p, "%s", dir);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      mkdir(p, 0755);
      *s = '/';
    }
  mkdir(p, 0755);
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') {
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
  if (d)
    closedir(d);
}


/* Grade one lab; returns its points (*total: what it could have been).
 * What it prints is also its run directory's report.txt (lab/rundir.c),
 * and build/grade/latest names the last lab graded there. */
static int grade_lab(struct grader *g, const struct impl_lab *l, const char *outopt,
                     int nobuild, int *total)
{
  char rep[PATH_MAX + 64], name[16], parent[PATH_MAX + 32];
  struct rd_tee tee = {-1, -1};
  if (outopt)
    snprintf(g->out, sizeof g->out, "%s", outopt);
  else
    snprintf(g->out, sizeof g->out, "%s/build/grade/lab%02d", g->root, l->n);
  fresh_dir(g->out);
  snprintf(rep, sizeof rep, "%s/report.txt", g->out);
  rd_tee(&tee, rep);
  int got = grade_one(g, l, nobuild, total);
  rd_untee(&tee);
  if (!outopt) {
    snprintf(parent, sizeof parent, "%s/build/grade", g->root);
    snprintf(name, sizeof name, "lab%02d", l->n);
    rd_latest(parent, name);
  }
  return got;
}

/* Every test of l at 0 with why (a tree that does not build, a submission
 * that cannot be graded): for g->rec. */
void grade_note_all(struct grader *g, const struct impl_lab *l, const char *why)
{
  char name[256];
  for (const struct impl_test *u = l->tests; u->name; u++)
    if (!u->hidden || g->hidden) {
      snprintf(name, sizeof name, "unit_%s %s", u->bin, u->name);
      note(g, name, 0, u->points, u->hidden, why);
    }
  for (const struct impl_sim *s = l->sims; s->points; s++)
    if (!s->hidden || g->hidden) {
      snprintf(name, sizeof name, "%ssim seeds %s%u..%s%u, %s%s", s->hidden ? "hidden " : "",
               s->hidden ? "+" : "", s->first, s->hidden ? "+" : "", s->last,
               s->faults ? "faults " : "all faults", s->faults ? s->faults : "");
      note(g, name, 0, s->points, s->hidden, why);
    }
}

int grade_one(struct grader *g, const struct impl_lab *l, int nobuild, int *total)
{
  *total = impl_points(l) + (g->hidden ? impl_hidden_points(l) : 0);
  printf("== lab %d (%s): %s, paper %s, in %s\n", l->n, l->name, l->title, l->paper,
         l->files);
  if (!nobuild && grade_build(g, l, 1) != 0) {
    /* The compiler's first complaint says the most. */
    char log[PATH_MAX + 64], line[512], why[1024] = "the tree does not build\n";
    snprintf(log, sizeof log, "%s/make.log", g->out);
    FILE *f = fopen(log, "r");
    while (f && fgets(line, sizeof line, f))
      if (strstr(line, "error")) {
        snprintf(why, sizeof why, "the tree does not build: %s", line);
        break;
      }
    if (f)
      fclose(f);
    grade_note_all(g, l, why);
    printf("Score: 0/%d\n", *total);
    return 0;
  }
  int got = 0;
  const char *done[16];
  int nd = 0;
  for (const struct impl_test *u = l->tests; u->name; u++) {
    int seen = u->hidden && !g->hidden;   /* a hidden test's binary is the instructor's */
    for (int i = 0; i < nd; i++)
      seen |= strcmp(done[i], u->bin) == 0;
    if (seen || nd == 16)
      continue;
    done[nd++] = u->bin;
    got += unit_bin(g, l, u->bin);
  }
  for (const struct impl_sim *s = l->sims; s->points; s++)
    if (!s->hidden || g->hidden)
      got += sim_range(g, s);
  if (!l->sims[0].points)
    printf("(no simulator seeds: the simulator's writers have no buffer cache)\n");
  printf("Score: %d/%d\n", got, *total);
  return got;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog lab grade N|all [--src TREE] [--out DIR] [--no-build] [--bug NAME] [-v]\n"
    "\n"
    "Grade implement lab N (see auralog lab list) in a source tree, xv6\n"
    "style: build it, run the lab's unit tests and a fixed range of\n"
    "simulator seeds, print the points of each and 'Score: got/total'.\n"
    "A failing seed prints the command that replays it, and its run is\n"
    "drawn (an SVG of the log, VDL, SCLs and faults before the violation)\n"
    "into the run directory, with report.txt (what was printed);\n"
    "build/grade/latest names the last lab graded. Exit 0 only with full points.\n"
    "\n"
    "  --src TREE   the tree (default: the one this binary was built in)\n"
    "  --out DIR    the run directory (default TREE/build/grade/labNN)\n"
    "  --no-build   do not run make first (make grade has)\n"
    "  --bug NAME   plant a bug in the simulator runs (auralog sim --help)\n"
    "  -v           say where every output is\n"
    "\n"
    "This grades the tree as it is, its own tests and simulator included: a\n"
    "student's tool. An instructor grades with --submission PATH..., which\n"
    "takes only the lab's bodies into the instructor's tree, runs hidden\n"
    "seeds too, and writes --csv and --gradescope results\n"
    "(auralog lab grade N --submission --help).\n");
}

int lab_grade_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"src", required_argument, 0, 's'}, {"out", required_argument, 0, 'o'},
    {"no-build", no_argument, 0, 'n'}, {"bug", required_argument, 0, 'b'},
    {"help", no_argument, 0, 'h'}, {0}};
  static struct grader g;
  const char *src = NULL, *outopt = NULL;
  int nobuild = 0, o;
  for (int i = 1; i < argc; i++)   /* the instructor's grade: submit.c */
    if (strncmp(argv[i], "--submission", 12) == 0)
      return lab_submit_main(argc, argv);
  optind = 1;
  while ((o = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
    switch (o) {
    case 's': src = optarg; break;
    case 'o': outopt = optarg; break;
    case 'n': nobuild = 1; break;
    case 'b':
      if (bug_by_name(optarg) < 0)
        die("lab grade: no planted bug '%s' (see auralog sim --help)", optarg);
      g.bug = optarg;
      break;
    case 'v': g.verbose = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (argc - optind != 1)
    die("lab grade: say which lab: auralog lab grade N (or all)");
  if (impl_root(src, g.root, sizeof g.root) != 0)
    die("lab grade: %s", g.root);
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *which = argv[optind];
  if (strcmp(which, "all") != 0) {
    const struct impl_lab *l = impl_find(which);
    if (l == NULL)
      die("lab grade: no implement lab '%s' (see auralog lab list)", which);
    int total, got = grade_lab(&g, l, outopt, nobuild, &total);
    return got == total ? 0 : 1;
  }
  if (outopt)
    die("lab grade all: --out is for one lab (each lab has its own run directory)");
  snprintf(g.out, sizeof g.out, "%s/build/grade", g.root);
  fresh_dir(g.out);
  if (!nobuild && grade_build(&g, impl_labs, impl_nlabs) != 0)
    return 1;
  int got = 0, total = 0;
  char line[64 * 16] = "";
  size_t len = 0;
  for (size_t i = 0; i < impl_nlabs; i++) {
    int t, p = grade_lab(&g, &impl_labs[i], NULL, 1, &t);
    got += p;
    total += t;
    len += (size_t)snprintf(line + len, sizeof line - len, "%slab %d %d/%d", i ? ", " : "",
                            impl_labs[i].n, p, t);
    printf("\n");
  }
  printf("%s\nTotal: %d/%d\n", line, got, total);
  return got == total ? 0 : 1;
}
