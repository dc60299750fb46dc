/*
 * lab.c: `auralog lab list | lab start N | lab run N | lab check N`: the
 * course labs.
 *
 * Each lab is a folder labs/labNN-topic/ with a handout (README.md:
 * Overview, Paper sections, Steps, Questions, Validation) and run.sh, the
 * handout's steps as commands. A student begins a lab with `lab start N`
 * (a mark in the cluster's journal: the lab's history starts there), does
 * the steps, and `lab check N` grades what happened since (lab/check.c,
 * from the coordinator's journal and the cluster's state) and the answers
 * file (DIR/labs/labNN-answers.txt, "key: value" lines, every value a
 * number or one word). `lab start N` names the student (--student ID,
 * $AURALOG_STUDENT, or DIR/student, asked once and kept there) and prints
 * their assignment (lab/assign.c: which AZ, which node), which the check
 * requires. `lab run N` runs run.sh against the local cluster: the
 * instructor's demo, marked as such in the journal (it never counts as a
 * student's work; a run.sh run by hand marks itself too, through `lab note
 * demo-begin|demo-end`); it writes the reference answers, computed from
 * the demo's own history, to --answers FILE only (never to the screen,
 * never to a student's answers file). Each check leaves a run directory
 * (lab/rundir.c) with what it read and printed, and `lab verify RUNDIR...`
 * checks such directories again with no cluster (lab/verify.c).
 */
#include <ctype.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/conf.h"
#include "cli/failover.h"
#include "net/keyfile.h"
#include "lab/impl.h"
#include "lab/lab.h"
#include "lib/log.h"
#include "param.h"
#include "roles.h"
#include "net/rpc.h"
#include "cli/status.h"
#include "journal.h"

/* The member that writes now: after a failover (on by default) a former
 * replica, not the engine cluster.json names. The coordinator says; if it
 * cannot, the engine stays. */
void find_writer(struct labctx *x)
{
  char addr[ADDR_MAX_LEN + 1], why[256];
  if (fo_writer_addr(x->coord, "main", addr, sizeof addr, why, sizeof why) == 0 && addr[0])
    snprintf(x->engine, sizeof x->engine, "%s", addr);
}

struct lab {
  const char *folder;
  const char *title;
  void (*check)(struct labctx *);
};

static const struct lab lab_table[] = {
  {"lab01-write-path", "the write path: redo, LSNs, CPLs, the VDL advancing", check1},
  {"lab02-quorums", "quorums: an AZ down, AZ+1, a slow node", check2},
  {"lab03-crash-recovery", "crash recovery and truncation", check3},
  {"lab04-gossip", "gossip and catch-up after a partition", check4},
  {"lab05-fencing", "epochs: a second writer fences the first", check5},
  {"lab06-across-machines", "across machines: an AZ per network namespace", check6},
  {"lab07-reads", "what a reader sees: immediate reads, a fenced writer's lease", check7},
  {"lab08-segment", "inside a segment: a hole, its gossip fill, coalescing and GC", check8},
  {"lab09-replicas", "read replicas: lag, a long reader holding GC, failover", check9},
  {"lab10-measure", "measuring honestly: a benchmark claim, application group commit", check10},
  {"lab11-repair", "repair and drain: a node lost for good, segments moved to spares", check11},
  {"lab12-restore", "backup and restore: a table dropped by mistake, the volume restored", check12},
  {"lab13-binlog", "the binlog: community against enhanced, recovery, a consumer outside", check13},
};
#define NLABS ((int)(sizeof lab_table / sizeof lab_table[0]))

/* ---- the command ------------------------------------------------------------ */

/* Where the labs/ folder is: $AURALOG_LABS, beside the binary's build/,
 * or ./labs. */
static void labs_dir(char *out, size_t n)
{
  const char *env = getenv("AURALOG_LABS");
  char self[PATH_MAX];
  struct stat sb;
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return;
  }
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0) {
    self[len] = 0;
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = 0;
      snprintf(out, n, "%s/../labs", self);   /* build/auralog -> labs/ */
      char real[PATH_MAX];
      if (stat(out, &sb) == 0) {
        if (realpath(out, real))             /* shown to students: no "build/.." */
          snprintf(out, n, "%s", real);
        return;
      }
    }
  }
  snprintf(out, n, "labs");
}

/* Read the cluster's addresses from DIR/cluster.json. */
static int load(struct labctx *x, const char *dir)
{
  char d[PATH_MAX], p[PATH_MAX + 32];
  conf_dir(dir, d, sizeof d);
  if (realpath(d, x->dir) == NULL)
    die("lab: no cluster in %s (start one: auralog cluster up)", d);
  key_use_dir(x->dir);
  snprintf(p, sizeof p, "%s/cluster.json", x->dir);
  cJSON *o = conf_load(x->dir);
  if (o == NULL)
    die("lab: no cluster in %s (start one: auralog cluster up)", x->dir);
  /* Lab 6's namespace cluster (netns-cluster.sh writes "netns": true in
   * its cluster.json), named as the cluster (its handout exports
   * AURALOG_DIR=~/.auralog/netns): the lab's marks and files belong to
   * the cluster it lives in, DIR/.. (check6 turns to DIR/netns itself). */
  if (cJSON_IsTrue(cJSON_GetObjectItem(o, "netns")) && strlen(x->dir) > 6 &&
      !strcmp(x->dir + strlen(x->dir) - 6, "/netns")) {
    x->dir[strlen(x->dir) - 6] = 0;
    cJSON_Delete(o);
    key_use_dir(x->dir);
    o = conf_load(x->dir);
    if (o == NULL)
      die("lab: %s/netns is lab 6's namespace cluster, and %s has no cluster of its own "
          "(start one: auralog cluster up)", x->dir, x->dir);
  }
  if (conf_str(o, "coord", x->coord, sizeof x->coord) != 0 ||
      conf_str(o, "engine", x->engine, sizeof x->engine) != 0)
    die("lab: %s is not a cluster description", p);
  cJSON_Delete(o);
  find_writer(x);
  snprintf(p, sizeof p, "%s/labs", x->dir);
  mkdir(p, 0755);
  return 0;
}

static void fetch_status(struct labctx *x)
{
  char why[320];
  Env *rep = status_fetch(x->coord, "main", why, sizeof why);
  if (rep == NULL)
    die("lab: %s%s", why, rpc_key_trouble(why) ? "" : " (is the cluster up? auralog cluster up)");
  char *js = status_json(rep->status);
  cJSON_Delete(x->status);
  x->status = cJSON_Parse(js);
  free(js);
  wire_free(rep);
}

/* Labs 1-10 are written for six nodes, every PG on all six, and take nodes
 * down for longer than REPAIR_AFTER_MS expecting them back as they were
 * (lab 2: an AZ and a node down stall writes). On a cluster with spares
 * (lab 11's nine nodes) a PG lives on six of them and such a node is
 * repaired onto a spare (member.h M7): the lab shows something else. Say
 * so at the start. Lab 11 needs repair on: say so if it is off. */
static void warn_spares(struct labctx *x, int lab)
{
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/cluster.json", x->dir);
  FILE *f = fopen(p, "r");
  char buf[16384];
  size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[got] = 0;
  cJSON *c = cJSON_Parse(buf), *ra = cJSON_GetObjectItem(c, "repair_after_ms");
  int off = cJSON_IsNumber(ra) && ra->valuedouble == 0;
  cJSON_Delete(c);
  if (off && lab == 11)
    printf("note: repair is off in this cluster (cluster up --repair-after 0, kept in "
           "cluster.json): this lab needs it on (auralog cluster down; auralog cluster up "
           "--repair-after %d)\n", REPAIR_AFTER_MS);
  if (off || lab == 11)
    return;
  fetch_status(x);
  int nodes = 0;
  const cJSON *nd;
  cJSON_ArrayForEach(nd, cJSON_GetObjectItem(x->status, "nodes"))
    nodes += strcmp(fstr(nd, "state"), "retired") != 0;
  if (nodes > NCOPIES)
    printf("note: this cluster has %d nodes: a node down %d s is repaired onto a spare "
           "(lab 11), and a PG need not live on the nodes this lab names. Labs 1-10 are "
           "written for six nodes, each PG on all six: run this one on a six-node cluster "
           "(auralog cluster up --dir DIR, a fresh directory)\n", nodes,
           REPAIR_AFTER_MS / 1000);
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog lab list | start N [--student ID] | run N | check N   [--dir DIR]\n"
    "                   [--answers FILE]\n"
    "       auralog lab verify [ID=]RUNDIR...   (offline: no cluster)\n"
    "       auralog lab note demo-begin|demo-end N   (labs/lib.sh: a run.sh by hand)\n"
    "       auralog lab export DIR | handout N DIR | grade N   (implement labs, 20 and up)\n"
    "\n"
    "The course labs (handouts in labs/labNN-*/README.md).\n"
    "  list      the labs\n"
    "  start N   begin lab N: what happens from now on is its history; names\n"
    "            the student (--student ID, else $AURALOG_STUDENT, else\n"
    "            DIR/student, asked once and kept there) and prints what\n"
    "            they must do (which AZ, which node): the check requires it\n"
    "  check N   grade lab N from its history (the cluster's journal since\n"
    "            `lab start N`) and the answers; exit 0 only when the lab's\n"
    "            outcome is there. Each check keeps what it read and said in\n"
    "            DIR/labs/runs/labNN-TIME/ (DIR/labs/runs/latest: the last):\n"
    "            report.txt, journal.jsonl (the lines since the start mark),\n"
    "            before.jsonl, journal.key, evidence.json (what it read from\n"
    "            the coordinator and nodes), answers.txt, cluster.svg,\n"
    "            timeline.svg, logs/ (their tails)\n"
    "  verify    the instructor's re-check of submitted run directories, with\n"
    "            no cluster: each one's MAC chain, its answers and evidence\n"
    "            against its journal, the student and assignment (ID=RUNDIR:\n"
    "            it must be ID's), and copies (two from one cluster, the same\n"
    "            evidence twice). One verdict line each; exit 0 if all pass\n"
    "  run N     the instructor's demo: do lab N's steps on the local cluster\n"
    "            (marked as a demo: it never counts for a student's check);\n"
    "            the reference answers, from the demo's history, go to\n"
    "            --answers FILE only: never to the screen or a student's file\n"
    "  export DIR  write the student repository: every implement lab's\n"
    "            bodies are stubs, the reference cores objects, a fresh git\n"
    "            history (auralog lab export --help)\n"
    "  handout N DIR  the same repository, naming lab N's files\n"
    "  grade N   build this tree, run lab N's unit tests and simulator seeds,\n"
    "            print points and a score (auralog lab grade --help)\n"
    "  grade N --submission PATH...  the instructor's grade: only each\n"
    "            submission's lab bodies, in this tree, with hidden seeds\n"
    "\n"
    "  --dir DIR       the cluster (default $AURALOG_DIR or ~/.auralog)\n"
    "  --student ID    start: who does the lab (1-64 of A-Z a-z 0-9 _ . -)\n"
    "  --answers FILE  check: default DIR/labs/labNN-answers.txt, lines 'key: value';\n"
    "                  run: where the reference answers go\n");
}

/* Who does the lab: --student, else $AURALOG_STUDENT, else DIR/student,
 * else (ask) asked once on the terminal. An id given or asked for is
 * kept in DIR/student, so later commands know it. 0, or -1. */
int student_resolve(const char *dir, const char *given, char *out, size_t n, int ask)
{
  char p[PATH_MAX + 16], line[128] = "";
  const char *env = getenv("AURALOG_STUDENT");
  int keep = 1;
  snprintf(p, sizeof p, "%s/student", dir);
  if (given && *given)
    snprintf(line, sizeof line, "%s", given);
  else if (env && *env)
    snprintf(line, sizeof line, "%s", env), keep = 0;
  else {
    FILE *f = fopen(p, "r");
    if (f) {
      if (!fgets(line, sizeof line, f))
        line[0] = 0;
      fclose(f);
      keep = 0;
    } else if (ask && isatty(STDIN_FILENO)) {
      printf("your student id (as your course knows you; kept in %s): ", p);
      fflush(stdout);
      if (!fgets(line, sizeof line, stdin))
        line[0] = 0;
    }
  }
  size_t len = strlen(line);                 /* the line's end, not inner spaces */
  while (len > 0 && strchr(" \t\r\n", line[len - 1]))
    line[--len] = 0;
  if (!line[0])
    return -1;
  if (!student_id_ok(line))
    die("lab: '%s' is not a student id (1-64 of A-Z a-z 0-9 _ . -)", line);
  if (keep) {
    FILE *f = fopen(p, "w");
    if (f) {
      fprintf(f, "%s\n", line);
      fclose(f);
    }
  }
  snprintf(out, n, "%s", line);
  return 0;
}

/* The lab numbers' checks, for lab verify (lab/verify.c). */
static void check_of(int lab, struct labctx *x)
{
  if (lab >= 1 && lab <= NLABS)
    lab_table[lab - 1].check(x);
}

/* path is where a student's answers go (DIR/labs/labNN-answers.txt, any N)? */
static int students_file(const struct labctx *x, const char *path)
{
  char d[PATH_MAX], real[PATH_MAX], labs[PATH_MAX + 16];
  snprintf(d, sizeof d, "%s", path);
  char *slash = strrchr(d, '/');
  const char *base = slash ? slash + 1 : d;
  if (slash)
    *slash = 0;
  if (realpath(slash ? (d[0] ? d : "/") : ".", real) == NULL)
    return 0;
  snprintf(labs, sizeof labs, "%s/labs", x->dir);
  int num = 0, end = 0;
  return strcmp(real, labs) == 0 && sscanf(base, "lab%d-answers.tx%*[t]%n", &num, &end) == 1 &&
         end == (int)strlen(base);
}

int lab_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"dir", required_argument, 0, 'd'}, {"answers", required_argument, 0, 'a'},
    {"student", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *dir = NULL, *answers = NULL, *student = NULL;
  int o;
  /* The implement labs (lab/impl.h) have their own options. */
  if (argc > 1 && strcmp(argv[1], "export") == 0)
    return lab_export_main(argc - 1, argv + 1);
  if (argc > 1 && strcmp(argv[1], "handout") == 0)
    return lab_handout_main(argc - 1, argv + 1);
  if (argc > 1 && strcmp(argv[1], "grade") == 0)
    return lab_grade_main(argc - 1, argv + 1);
  if (argc > 1 && strcmp(argv[1], "verify") == 0)
    return lab_verify_main(argc - 1, argv + 1, check_of);
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'd': dir = optarg; break;
    case 'a': answers = optarg; break;
    case 's': student = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind >= argc)
    die("lab: say list, start N, run N, check N or verify RUNDIR (see auralog lab --help)");
  const char *cmd = argv[optind];
  char ldir[PATH_MAX + 16];
  labs_dir(ldir, sizeof ldir);
  if (strcmp(cmd, "list") == 0) {
    for (int i = 0; i < NLABS; i++)
      if (lab_table[i].folder)
        printf("%-2d %-22s %s\n", i + 1, lab_table[i].folder, lab_table[i].title);
    printf("handouts: %s/<folder>/README.md\n", ldir);
    impl_list(stdout);
    return 0;
  }
  if (strcmp(cmd, "run") && strcmp(cmd, "check") && strcmp(cmd, "start") && strcmp(cmd, "note"))
    die("lab: unknown action '%s' (say list, start N, run N, check N or verify RUNDIR)", cmd);
  static struct labctx x;
  if (strcmp(cmd, "note") == 0) {
    /* labs/lib.sh: a run.sh run by hand is a demo, never a student's work. */
    const char *what = optind + 1 < argc ? argv[optind + 1] : "";
    int n = optind + 2 < argc ? atoi(argv[optind + 2]) : 0;
    char why[320];
    if (strcmp(what, "demo-begin") && strcmp(what, "demo-end"))
      die("lab: note demo-begin N or note demo-end N");
    load(&x, dir);
    if (hist_mark(&x, strcmp(what, "demo-begin") ? "lab-demo-end" : "lab-demo",
                  n > 0 && n <= NLABS ? n : 0, why, sizeof why) != 0)
      die("lab: cannot mark the demo in the cluster's journal: %s", why);
    return 0;
  }
  int n = optind + 1 < argc ? atoi(argv[optind + 1]) : 0;
  if (n < 1 || n > NLABS || !lab_table[n - 1].folder)
    die("lab: %s needs a lab number, 1..%d (see auralog lab list)", cmd, NLABS);
  const struct lab *l = &lab_table[n - 1];
  load(&x, dir);
  char mine[PATH_MAX + 64];
  snprintf(mine, sizeof mine, "%s/labs/lab%02d-answers.txt", x.dir, n);
  snprintf(x.answers, sizeof x.answers, "%s", answers && !strcmp(cmd, "check") ? answers : mine);
  if (strcmp(cmd, "start") == 0) {
    char why[320], text[160];
    if (student_resolve(x.dir, student, x.student, sizeof x.student, 1) != 0)
      die("lab: who does lab %d? say auralog lab start %d --student ID (or set "
          "AURALOG_STUDENT); it is kept in %s/student", n, n, x.dir);
    if (hist_mark(&x, "lab-start", n, why, sizeof why) != 0)
      die("lab: cannot mark the start in the cluster's journal: %s", why);
    assign_make(x.student, n, &x.as);
    assign_text(&x.as, text, sizeof text);
    printf("lab %d started: %s\n"
           "student %s; your assignment: %s\n"
           "follow %s/%s/README.md; answers go in %s\n"
           "then: auralog lab check %d (it looks at what happens from now on)\n",
           n, l->title, x.student, text, ldir, l->folder, x.answers, n);
    if (n <= 11)  /* labs 1-10 keep nodes down longer than a repair waits; 11 needs it */
      warn_spares(&x, n);
    if (n == 12) {  /* the lab restores from the cluster's backup: is there one? */
      char p[PATH_MAX + 16];
      snprintf(p, sizeof p, "%s", x.dir);
      cJSON *c = conf_load(p);
      char url[PATH_MAX + 64];
      if (c && cJSON_GetObjectItem(c, "backup") &&
          (conf_str(c, "backup", url, sizeof url) != 0 || !url[0]))
        printf("note: this cluster does not back up (it was started with --no-backup): this "
               "lab needs a backup (auralog cluster down; auralog cluster up --dir DIR, a "
               "fresh directory)\n");
      cJSON_Delete(c);
    }
    if (n == 13) {  /* the replica reads the volume's binlog: does it keep one? */
      cJSON *c = conf_load(x.dir);
      char bl[32] = "";
      if (c == NULL || conf_str(c, "engine_binlog", bl, sizeof bl) != 0 || strcmp(bl, "enhanced"))
        printf("note: this cluster's engine keeps no enhanced binlog yet: step 3 restarts it with "
               "one (auralog cluster down; auralog cluster up --binlog enhanced)\n");
      cJSON_Delete(c);
    }
    if (n == 5)   /* step 4 names the first writer: after step 2 the coordinator names another */
      printf("the writer now (FIRST in the handout): %s\n", x.engine);
    if (n == 11 && x.as.mttf_h > 0) {   /* the nodes at the assigned positions now */
      fetch_status(&x);
      const cJSON *s, *pg0 = cJSON_GetArrayItem(cJSON_GetObjectItem(x.status, "pgs"), 0);
      const char *at[NCOPIES] = {0};
      cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg0, "segments"))
        if (!cJSON_IsTrue(cJSON_GetObjectItem(s, "next")) && fnum(s, "pos") >= 0 &&
            fnum(s, "pos") < NCOPIES)
          at[(int)fnum(s, "pos")] = fstr(s, "node");
      printf("position %d of pg 0 is on node %s now (NODE in the handout); position %d on "
             "node %s (DRAIN)\n", x.as.pos, at[x.as.pos] ? at[x.as.pos] : "?", x.as.drain_pos,
             at[x.as.drain_pos] ? at[x.as.drain_pos] : "?");
    }
    return 0;
  }

  if (strcmp(cmd, "run") == 0) {
    char self[PATH_MAX], script[PATH_MAX + 64], cmd[PATH_MAX + 96], why[320];
    if (answers && students_file(&x, answers))
      die("lab: %s is a student's answers file: reference answers go elsewhere", answers);
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
      die("lab: cannot find the auralog binary");
    self[len] = 0;
    snprintf(script, sizeof script, "%s/%s/run.sh", ldir, l->folder);
    if (access(script, R_OK) != 0)
      die("lab: %s is missing", script);
    printf("== lab %d: %s\n", n, l->title);
    fflush(stdout);
    setenv("AURALOG", self, 1);
    setenv("AURALOG_DIR", x.dir, 1);
    setenv("AURALOG_COORD", x.coord, 1);
    setenv("AURALOG_ENGINE", x.engine, 1);
    setenv("AURALOG_LAB_RUN", "1", 1);    /* lib.sh: this span is marked here */
    unsetenv("ANSWERS");
    /* The demo's span in the journal: a student's check leaves it out. */
    if (hist_mark(&x, "lab-demo", n, why, sizeof why) != 0)
      die("lab: cannot mark the demo in the cluster's journal: %s", why);
    snprintf(cmd, sizeof cmd, "bash '%s'", script);
    int rc = system(cmd);
    if (hist_mark(&x, "lab-demo-end", n, why, sizeof why) != 0)
      die("lab: cannot mark the demo's end in the cluster's journal: %s", why);
    if (rc != 0)
      die("lab: lab %d's steps failed (exit %d)", n, WEXITSTATUS(rc));
    /* The reference answers: what the check expects of this demo's history,
     * to --answers FILE only (on the screen, a student would copy them). */
    usleep(2 * ENGINE_STAT_MS * 1000);          /* as check does: the last commits */
    hist_mark(&x, "lab-check", n, why, sizeof why);
    x.ref = fopen(answers ? answers : "/dev/null", "w");
    if (x.ref == NULL)
      die("lab: cannot write %s", answers);
    printf("== the demo's own history, as the check reads it:\n");
    fetch_status(&x);
    hist_load(&x, n, 1);
    l->check(&x);
    hist_free(&x);
    fclose(x.ref);
    if (answers)
      printf("== reference answers written to %s\n", answers);
    else
      printf("== reference answers: not shown (auralog lab run %d --answers FILE)\n", n);
    printf("== done. A demo never counts for `auralog lab check %d`: a student starts\n"
           "   with `auralog lab start %d` and does the steps.\n", n, n);
    return 0;
  }
  char why[320], run[PATH_MAX + 96], rep[PATH_MAX + 128];
  /* The run directory: what this check read and said (lab/rundir.c). */
  struct rd_tee tee = {-1, -1};
  if (rd_make(&x, n, run, sizeof run) != 0)
    die("lab: cannot make a run directory in %s/labs/runs: %s", x.dir, strerror(errno));
  snprintf(rep, sizeof rep, "%s/report.txt", run);
  rd_tee(&tee, rep);
  fetch_status(&x);
  printf("lab %d check: %s\n", n, l->title);
  printf("  answers read from %s%s\n", x.answers,
         access(x.answers, R_OK) == 0 ? "" : " (missing)");
  /* The journal samples the writer at most every second: wait for its
   * next report, then have the coordinator sample it (the lab-check
   * mark does), so the last commits are in the history. */
  usleep(2 * ENGINE_STAT_MS * 1000);
  hist_mark(&x, "lab-check", n, why, sizeof why);
  hist_load(&x, n, 0);
  /* A demo in the lab's window (run.sh run by hand, `lab run`): its
   * steps are left out of the history, so say it before the lines that
   * then read [missing]. */
  if (x.ndemo > 0)
    printf("  a demo (a run.sh run by hand, or auralog lab run) ran during this lab (%d "
           "time%s): its steps never count; type the steps yourself\n", x.ndemo,
           x.ndemo > 1 ? "s" : "");
  /* The cluster as of the history's end: what the journal must agree with
   * (lab/evidence.c), kept in the run directory as evidence. */
  ev_begin(&x);
  fetch_status(&x);
  ev_status(&x);
  l->check(&x);
  char me[STUDENT_MAX + 1];
  if (x.student[0] && student_resolve(x.dir, student, me, sizeof me, 0) == 0)
    ok(&x, strcmp(me, x.student) == 0, "this lab was started by you (%s; the start names %s)",
       me, x.student);
  printf(x.failed ? "lab %d: not yet (see the [missing] and [wrong] lines)\n"
                   : "lab %d: passed\n", n);
  /* What this check read, sealed in the journal before the run directory
   * copies it (lab verify compares the copy with the seal). */
  ev_seal(&x, x.answers, x.seal);
  if (hist_mark(&x, "lab-seal", n, why, sizeof why) != 0)
    printf("  (the journal did not take the check's seal: %s)\n", why);
  rd_write(&x, n, run);
  hist_free(&x);
  cJSON_Delete(x.status);
  printf("run directory: %s (report, journal, evidence, answers, drawing, timeline, logs)\n",
         run);
  rd_untee(&tee);
  return x.failed ? 1 : 0;
}
