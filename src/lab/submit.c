/*
 * submit.c: `auralog lab grade N --submission PATH...`: the instructor's
 * grade of students' implement-lab work, which neither copying the
 * student's own tests away nor sabotaging the simulator can pass.
 *
 * `lab grade N` alone grades the tree it is given, tests and simulator
 * included: a tree whose graded tests `return;` and whose violation()
 * does nothing gets full points with an empty body. So this one takes
 * nothing from a submission but its LAB N bodies. For each submission:
 *   1. find the lab's files in it (a student's tree, a directory holding
 *      one, or just the files, as Gradescope unpacks an upload), and take
 *      the bodies between its LAB N markers (submit_body.c); a file
 *      missing, or markers missing or unbalanced, gives a one-line reason
 *      and 0 points;
 *   2. refuse a body that could leave its function or act on the world
 *      (body_lint: no preprocessor, no exit/fork/I/O ...): one line, 0;
 *   3. copy the instructor's tree (this binary's, or --src) with its
 *      build/ into a throwaway directory, keeping modification times, and
 *      write the bodies into the lab's files there: make rebuilds those
 *      files and what links them, nothing else (a few seconds);
 *   4. grade that copy as `lab grade` does (grade.c, through grader.h):
 *      the instructor's unit tests, the instructor's simulator seeds, and
 *      the hidden tests and seeds (impl.h) a student never had; every
 *      test binary and seed runs contained (grade_contain);
 *   5. print the score, each test's points, and the commands that replay
 *      it; delete the copy (--keep keeps it).
 * A student's hidden seeds start at a base derived from their id, so two
 * students have different hidden seeds and one student's grade is the
 * same every time; the same number is the unit tests' AURALOG_TEST_SEED
 * (tests/unit/lab_expect.h), so their randomized tests run on cases of
 * the student's own too, which the report says how to replay. The id is --student ID, else the first line of a
 * STUDENT file in the submission, else Gradescope's
 * submission_metadata.json beside the submission (its first user's
 * email), else the submission directory's name; the report says which.
 *
 * Outputs: each submission's report.txt and logs in OUT/<student>/
 * (OUT: --out, default TREE/build/grade/submissions/labNN); --csv FILE,
 * a row per submission; --gradescope [FILE], Gradescope's results.json,
 * hidden tests shown "after_published" (both in submit_out.c).
 * Bodies that are the same (ignoring layout and comments) as the
 * reference's or as another submission's in the run are flagged.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab/grader.h"
#include "lab/impl.h"
#include "lab/lab.h"
#include "lab/submit.h"
#include "lib/log.h"

#define MAXFILES 8             /* files one lab's bodies are in */

/* ---- files ---- */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
  (void)st, (void)flag, (void)f;
  return remove(p) != 0 && errno != ENOENT ? -1 : 0;
}

static void rm_rf(const char *dir)
{
  nftw(dir, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

static int mkdir_p(const char *dir)
{
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", dir);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      mkdir(p, 0755);
      *s = '/';
    }
  return mkdir(p, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static int copy_reg(const char *from, const char *to, const struct stat *st)
{
  FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
  char buf[65536];
  size_t got;
  int rc = in && out ? 0 : -1;
  while (rc == 0 && (got = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, got, out) != got)
      rc = -1;
  if (in)
    fclose(in);
  if (out && fclose(out) != 0)
    rc = -1;
  if (rc == 0) {
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    chmod(to, st->st_mode & 07777);
    utimensat(AT_FDCWD, to, ts, 0);   /* make must see it as built */
  }
  return rc;
}

/* Copy the instructor's tree: sources and build/ (not .git, other build
 * directories, earlier grades, traces), times kept. */
static int copy_tree(const char *from, const char *to, const char *rel)
{
  DIR *d = opendir(from);
  if (d == NULL || mkdir_p(to) != 0) {
    if (d)
      closedir(d);
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    const char *nm = e->d_name;
    if (!strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, ".git") ||
        (!*rel && !strncmp(nm, "build", 5) && strcmp(nm, "build")) ||
        (!strcmp(rel, "build") && !strcmp(nm, "grade")) || !strncmp(nm, "sim-seed-", 9))
      continue;
    char f[PATH_MAX], t[PATH_MAX], r[PATH_MAX];
    snprintf(f, sizeof f, "%s/%s", from, nm);
    snprintf(t, sizeof t, "%s/%s", to, nm);
    snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", nm);
    struct stat st;
    if (lstat(f, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode))
      rc = copy_tree(f, t, r);
    else if (S_ISREG(st.st_mode))
      rc = copy_reg(f, t, &st);
    else if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t len = readlink(f, target, sizeof target - 1);
      if (len > 0) {
        target[len] = 0;
        rc = symlink(target, t);
      }
    }
  }
  closedir(d);
  return rc;
}

/* Where rel (src/node/segment.c) is in a submission: PATH/rel; else the
 * one file under PATH whose path ends in /rel; else the one named like it
 * (an upload of the bare files). 0, or -1 with why. */
struct hunt {
  const char *rel, *base;
  char full[2][PATH_MAX], named[2][PATH_MAX];
  int nfull, nnamed;
};

static void hunt_dir(struct hunt *h, const char *dir, int depth)
{
  DIR *d = depth > 6 ? NULL : opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    const char *nm = e->d_name;
    if (nm[0] == '.' || !strncmp(nm, "build", 5))
      continue;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, nm);
    struct stat st;
    if (lstat(p, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      hunt_dir(h, p, depth + 1);
    } else if (S_ISREG(st.st_mode) && strcmp(nm, h->base) == 0) {
      size_t lp = strlen(p), lr = strlen(h->rel);
      if (lp > lr && p[lp - lr - 1] == '/' && strcmp(p + lp - lr, h->rel) == 0) {
        if (h->nfull < 2)
          snprintf(h->full[h->nfull], PATH_MAX, "%s", p);
        h->nfull++;
      } else {
        if (h->nnamed < 2)
          snprintf(h->named[h->nnamed], PATH_MAX, "%s", p);
        h->nnamed++;
      }
    }
  }
  if (d)
    closedir(d);
}

static int find_file(const char *sub, const char *rel, char *out, size_t n, char *why,
                     size_t wn)
{
  struct hunt h = {.rel = rel, .base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel};
  snprintf(out, n, "%s/%s", sub, rel);
  if (access(out, R_OK) == 0)
    return 0;
  hunt_dir(&h, sub, 0);
  int k = h.nfull ? h.nfull : h.nnamed;
  char (*at)[PATH_MAX] = h.nfull ? h.full : h.named;
  if (k == 1) {
    snprintf(out, n, "%s", at[0]);
    return 0;
  }
  if (k == 0)
    snprintf(why, wn, "no %s in %s (a submission is a student's tree, a directory holding "
             "one, or the lab's files)", rel, sub);
  else
    snprintf(why, wn, "%.500s holds %d files that could be %s (%.500s, %.500s): give one", sub, k, rel,
             at[0], at[1]);
  return -1;
}

/* ---- who ---- */

static int id_ok(const char *s)
{
  if (!*s || strlen(s) > 80 || s[0] == '.')
    return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || strchr("._@+-", *s)))
      return 0;
  return 1;
}

/* An id taken from a file or a name: what cannot be in a path becomes _. */
static void id_clean(char *s)
{
  s[strcspn(s, "\r\n")] = 0;
  for (char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("._@+-", *p)))
      *p = '_';
  if (s[0] == '.')
    s[0] = '_';
}

static void who(struct sub_result *r, const char *opt)
{
  char p[PATH_MAX + 64], line[256] = "";
  FILE *f;
  if (opt) {
    snprintf(r->student, sizeof r->student, "%s", opt);
    snprintf(r->from, sizeof r->from, "--student");
    return;
  }
  snprintf(p, sizeof p, "%s/STUDENT", r->path);
  if ((f = fopen(p, "r")) != NULL) {
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    id_clean(line);
    if (got && line[0]) {
      snprintf(r->student, sizeof r->student, "%s", line);
      snprintf(r->from, sizeof r->from, "its STUDENT file");
      return;
    }
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", r->path);
  snprintf(p, sizeof p, "%s/submission_metadata.json", dirname(dir));
  if ((f = fopen(p, "r")) != NULL) {
    char buf[65536];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    cJSON *j = cJSON_Parse(buf);
    cJSON *u = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "users"), 0);
    cJSON *e = cJSON_GetObjectItem(u, "email"), *id = cJSON_GetObjectItem(u, "id");
    if (cJSON_IsString(e))
      snprintf(line, sizeof line, "%s", e->valuestring);
    else if (cJSON_IsNumber(id))
      snprintf(line, sizeof line, "%.0f", id->valuedouble);
    cJSON_Delete(j);
    id_clean(line);
    if (line[0]) {
      snprintf(r->student, sizeof r->student, "%s", line);
      snprintf(r->from, sizeof r->from, "Gradescope's submission_metadata.json");
      return;
    }
  }
  snprintf(dir, sizeof dir, "%s", r->path);
  snprintf(r->student, sizeof r->student, "%s", basename(dir));
  id_clean(r->student);
  snprintf(r->from, sizeof r->from, "the submission's directory name");
}

/* The hidden seeds' base: 10^6 + 1000 * (FNV-1a(id) mod 10^6): seeds no
 * published range uses, 1000 apart, the same for the same id. */
static unsigned long long seed_base(const char *id)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = id; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return 1000000ull + 1000ull * (h % 1000000ull);
}

/* ---- one submission ---- */

struct run {
  const struct impl_lab *lab;
  char root[PATH_MAX];         /* the instructor's tree */
  char out[PATH_MAX];          /* OUT */
  char work[PATH_MAX];         /* the throwaway directory */
  int keep, verbose;
  char files[MAXFILES][256];
  int nfiles;
  uint64_t refprint;           /* the reference bodies' fingerprint */
  uint64_t stubprint;          /* the handout stubs' */
};

/* Take the submission's bodies for every file of the lab, checked; the
 * fingerprint of them all in *print. 0, or -1 with why. */
static int take_bodies(struct run *R, const char *sub, struct bodies *b, uint64_t *print,
                       char *why, size_t wn)
{
  *print = 0xcbf29ce484222325ull;
  for (int i = 0; i < R->nfiles; i++) {
    char path[PATH_MAX];
    if (find_file(sub, R->files[i], path, sizeof path, why, wn) != 0)
      goto bad;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
      snprintf(why, wn, "%.1500s: %s", path, strerror(errno));
      goto bad;
    }
    int k = body_extract(f, R->lab->n, R->files[i], &b[i], why, wn);
    fclose(f);
    if (k < 0)
      goto bad;
    if (k == 0) {
      snprintf(why, wn, "%s has no LAB %d markers (the lab's bodies go between "
               "/* LAB %d BEGIN ... */ and /* LAB %d END */)", R->files[i], R->lab->n,
               R->lab->n, R->lab->n);
      goto bad;
    }
    for (int j = 0; j < k; j++) {
      if (body_lint(b[i].text[j], R->files[i], b[i].line[j] + 1, why, wn) != 0) {
        bodies_free(&b[i]);    /* taken, then refused: this file's too */
        goto bad;
      }
      *print = body_fingerprint(b[i].text[j], *print);
    }
    continue;
  bad:
    for (int j = 0; j < i; j++)
      bodies_free(&b[j]);
    return -1;
  }
  return 0;
}

static void grade_submission(struct run *R, struct sub_result *r)
{
  const struct impl_lab *l = R->lab;
  struct bodies b[MAXFILES];
  char why[2048], dir[PATH_MAX + 128], tree[PATH_MAX + 128], rep[PATH_MAX + 160];
  double t0 = (double)time(NULL);
  snprintf(dir, sizeof dir, "%s/%s", R->out, r->student);
  rm_rf(dir);
  if (mkdir_p(dir) != 0)
    die("lab grade: cannot make %s: %s", dir, strerror(errno));
  struct rd_tee tee = {-1, -1};
  snprintf(rep, sizeof rep, "%s/report.txt", dir);
  rd_tee(&tee, rep);
  r->base = seed_base(r->student);
  r->total = impl_points(l) + impl_hidden_points(l);
  printf("== submission %s: student %s (from %s)\n", r->path, r->student, r->from);
  struct grader g = {.hidden = 1, .seed_base = r->base, .contain = 1, .rec = r->rec,
                     .verbose = R->verbose};
  snprintf(g.out, sizeof g.out, "%.4000s", dir);
  if (take_bodies(R, r->path, b, &r->print, why, sizeof why) != 0) {
    snprintf(r->error, sizeof r->error, "%s", why);
    grade_note_all(&g, l, why);
    r->nrec = g.nrec;
    printf("cannot grade: %s\nScore: 0/%d\n", why, r->total);
    goto done;
  }
  if (r->print == R->refprint)
    snprintf(r->flags, sizeof r->flags, "bodies identical to the reference");
  else if (r->print == R->stubprint)
    snprintf(r->flags, sizeof r->flags, "the handout's stubs, unchanged");
  snprintf(tree, sizeof tree, "%s/%s", R->work, r->student);
  rm_rf(tree);
  if (copy_tree(R->root, tree, "") != 0)
    die("lab grade: cannot copy %s to %s: %s", R->root, tree, strerror(errno));
  for (int i = 0; i < R->nfiles; i++) {
    char ref[PATH_MAX + 400];
    snprintf(ref, sizeof ref, "%s/%s", tree, R->files[i]);
    if (body_splice(ref, l->n, &b[i], why, sizeof why) != 0) {
      char one[2300];
      snprintf(one, sizeof one, "%s: %s", R->files[i], why);
      snprintf(r->error, sizeof r->error, "%s", one);
      grade_note_all(&g, l, one);
      r->nrec = g.nrec;
      printf("cannot grade: %s\nScore: 0/%d\n", one, r->total);
      for (int j = 0; j < R->nfiles; j++)
        bodies_free(&b[j]);
      goto done;
    }
  }
  for (int i = 0; i < R->nfiles; i++)
    bodies_free(&b[i]);
  snprintf(g.root, sizeof g.root, "%.4000s", tree);
  char prefix[PATH_MAX + 200];
  if (R->keep)
    snprintf(prefix, sizeof prefix, "cd %s && ", tree);
  else
    snprintf(prefix, sizeof prefix, "(in your own tree) ");
  g.replay_prefix = prefix;
  printf("%s bod%s taken from it into a copy of %s; the rest is the instructor's\n",
         l->files, R->nfiles > 1 ? "ies" : "y", R->root);
  printf("runs contained: %s\n", grade_containment(&g));
  printf("hidden seeds: from %llu (derived from the id)\n", r->base);
  printf("unit test seed: AURALOG_TEST_SEED=%llu (derived from the id; a student replays a "
         "randomized test with AURALOG_TEST_SEED=%llu build/tests/unit_NAME)\n", r->base, r->base);
  r->got = grade_one(&g, l, 0, &r->total);
  r->nrec = g.nrec;
  printf("replay this grade: auralog lab grade %d --submission %s --student %s%s "
         "(unit tests with AURALOG_TEST_SEED=%llu)\n", l->n, r->path, r->student,
         R->keep ? " --keep" : "", r->base);
  if (R->keep)
    printf("its tree (kept): %s\n", tree);
  else
    rm_rf(tree);
done:
  r->secs = (double)time(NULL) - t0;
  printf("report: %s\n", rep);
  rd_untee(&tee);
}

/* Submissions whose bodies are the same as each other's (untouched
 * stubs are alike and earn nothing: not flagged). */
static void flag_copies(struct sub_result *rs, int n, uint64_t stub)
{
  for (int i = 0; i < n; i++)
    for (int k = 0; k < n; k++)
      if (k != i && !rs[i].error[0] && !rs[k].error[0] && rs[i].print == rs[k].print &&
          rs[i].print != stub) {
        size_t len = strlen(rs[i].flags);
        snprintf(rs[i].flags + len, sizeof rs[i].flags - len, "%sbodies identical to %s's",
                 len ? "; " : "", rs[k].student);
      }
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog lab grade N --submission PATH... [--student ID] [--csv FILE]\n"
    "                           [--gradescope [FILE]] [--src TREE] [--out DIR] [--keep]\n"
    "\n"
    "Grade students' work on implement lab N as the instructor: from each\n"
    "submission (a student's tree, a directory holding one, or the lab's\n"
    "files) only the bodies between its /* LAB N BEGIN */ and /* LAB N END */\n"
    "markers are taken, put into a copy of the instructor's tree (the one this\n"
    "binary was built in, or --src) and graded with its unit tests and\n"
    "simulator seeds, plus hidden tests and seeds the student never had. A\n"
    "submission's own tests, simulator and Makefile are never used. A body\n"
    "that is missing, unbalanced, or reaches outside its function (a # line,\n"
    "exit, fork, file or terminal I/O ...) gets one line saying why, and 0.\n"
    "The student's code runs with a time limit, in the throwaway copy (unit\n"
    "tests) or its report directory (seeds), without network and in a PID\n"
    "namespace of its own where the kernel allows (labs/README.md says more).\n"
    "\n"
    "  --submission PATH  a submission; more may follow (PATH PATH ...)\n"
    "  --student ID  the student (one submission); else a STUDENT file in it,\n"
    "                else Gradescope's submission_metadata.json beside it,\n"
    "                else its directory's name. The id picks the hidden seeds\n"
    "                and the unit tests' AURALOG_TEST_SEED: the same id, the\n"
    "                same seeds\n"
    "  --csv FILE    a row per submission: student, lab, points, total, each test\n"
    "  --gradescope [FILE]  Gradescope's results.json (default\n"
    "                /autograder/results/results.json if /autograder/results is\n"
    "                there, else ./results.json); hidden tests are shown after\n"
    "                grades are published. With several submissions, each one's\n"
    "                goes in its report directory\n"
    "  --out DIR     reports: DIR/<student>/report.txt and logs (default\n"
    "                TREE/build/grade/submissions/labNN)\n"
    "  --keep        keep each graded copy of the tree (to replay in it)\n"
    "  --src TREE    the instructor's tree (default: this binary's)\n"
    "  --no-build    the instructor's tree is built already\n"
    "Exit 0 only if every submission got full points.\n");
}

int lab_submit_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"submission", required_argument, 0, 'S'}, {"student", required_argument, 0, 'i'},
    {"csv", required_argument, 0, 'c'}, {"gradescope", optional_argument, 0, 'g'},
    {"src", required_argument, 0, 's'}, {"out", required_argument, 0, 'o'},
    {"keep", no_argument, 0, 'k'}, {"no-build", no_argument, 0, 'n'},
    {"help", no_argument, 0, 'h'}, {0}};
  static struct run R;
  const char *src = NULL, *csv = NULL, *gs = NULL, *student = NULL, *outopt = NULL;
  int gradescope = 0, nobuild = 0, o;
  char **subs = calloc((size_t)argc + 1, sizeof *subs);
  int nsub = 0;
  for (int i = 1; i < argc; i++)    /* even as --submission --help */
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
  /* --gradescope FILE (not only --gradescope=FILE): a .json after it is its file */
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--gradescope") == 0 && strlen(argv[i + 1]) > 5 &&
        strcmp(argv[i + 1] + strlen(argv[i + 1]) - 5, ".json") == 0) {
      gs = argv[i + 1];
      memmove(&argv[i + 1], &argv[i + 2], (size_t)(argc - i - 2) * sizeof *argv);
      argc--;
    }
  optind = 1;
  while ((o = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
    switch (o) {
    case 'S': subs[nsub++] = optarg; break;
    case 'i': student = optarg; break;
    case 'c': csv = optarg; break;
    case 'g': gradescope = 1; if (optarg) gs = optarg; break;
    case 's': src = optarg; break;
    case 'o': outopt = optarg; break;
    case 'k': R.keep = 1; break;
    case 'n': nobuild = 1; break;
    case 'v': R.verbose = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (gs)
    gradescope = 1;
  if (optind >= argc)
    die("lab grade: say which lab: auralog lab grade N --submission PATH");
  R.lab = impl_find(argv[optind]);
  if (R.lab == NULL)
    die("lab grade: no implement lab '%s' (see auralog lab list)", argv[optind]);
  for (int i = optind + 1; i < argc; i++)
    subs[nsub++] = argv[i];
  if (nsub == 0)
    die("lab grade: --submission needs a path");
  if (student && nsub > 1)
    die("lab grade: --student names one submission's student; with several, each has a "
        "STUDENT file or is named by its directory");
  if (student && !id_ok(student))
    die("lab grade: --student '%s': use letters, digits and . _ @ + - (it names a directory)",
        student);
  if (gs && nsub > 1)
    die("lab grade: --gradescope FILE is for one submission (with several, each one's "
        "results.json goes in its report directory)");
  if (impl_root(src, R.root, sizeof R.root) != 0)
    die("lab grade: %s", R.root);
  /* The lab's files, and the reference's bodies (to flag copies of them). */
  char list[512], *save = NULL;
  snprintf(list, sizeof list, "%s", R.lab->files);
  R.refprint = R.stubprint = 0xcbf29ce484222325ull;
  for (char *t = strtok_r(list, ", ", &save); t && R.nfiles < MAXFILES;
       t = strtok_r(NULL, ", ", &save)) {
    snprintf(R.files[R.nfiles], sizeof R.files[0], "%s", t);
    char p[PATH_MAX + 300], why[1024];
    struct bodies b;
    snprintf(p, sizeof p, "%s/%s", R.root, t);
    FILE *f = fopen(p, "r");
    int k = f ? body_extract(f, R.lab->n, p, &b, why, sizeof why) : -1;
    if (f)
      fclose(f);
    if (k <= 0)
      die("lab grade: %s is not a reference tree for lab %d (%s)", R.root, R.lab->n,
          f == NULL ? strerror(errno) : k == 0 ? "no bodies marked in it" : why);
    for (int i = 0; i < k; i++)
      R.refprint = body_fingerprint(b.text[i], R.refprint);
    bodies_free(&b);
    /* and the handout's stubs for it */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if ((f = fopen(p, "r")) != NULL && mem && handout_file(f, mem, R.lab->n, t, NULL, why, sizeof why) > 0) {
      fclose(mem);
      mem = fmemopen(buf, len, "r");
      if (mem && body_extract(mem, R.lab->n, t, &b, why, sizeof why) > 0) {
        for (int i = 0; i < b.n; i++)
          R.stubprint = body_fingerprint(b.text[i], R.stubprint);
        bodies_free(&b);
      }
    }
    if (f)
      fclose(f);
    if (mem)
      fclose(mem);
    free(buf);
    R.nfiles++;
  }
  if (outopt)
    snprintf(R.out, sizeof R.out, "%s", outopt);
  else
    snprintf(R.out, sizeof R.out, "%.3900s/build/grade/submissions/lab%02d", R.root, R.lab->n);
  char real[PATH_MAX];
  if (mkdir_p(R.out) != 0 || realpath(R.out, real) == NULL)
    die("lab grade: cannot make %s: %s", R.out, strerror(errno));
  snprintf(R.out, sizeof R.out, "%s", real);
  const char *tmp = getenv("TMPDIR");
  snprintf(R.work, sizeof R.work, "%s/auralog-submit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(R.work) == NULL)
    die("lab grade: cannot make a work directory in %s: %s", tmp ? tmp : "/tmp",
        strerror(errno));
  /* The grader's make is its own, not part of a make that runs this. */
  unsetenv("MAKEFLAGS");
  unsetenv("MFLAGS");
  unsetenv("MAKELEVEL");
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct grader ig = {.hidden = 1};   /* the hidden tests' binaries too (tests/hidden) */
  snprintf(ig.root, sizeof ig.root, "%s", R.root);
  snprintf(ig.out, sizeof ig.out, "%s", R.out);
  if (!nobuild) {
    printf("the instructor's tree: %s\n", R.root);
    if (grade_build(&ig, R.lab, 1) != 0)
      die("lab grade: the instructor's tree %s does not build (see %s/make.log)", R.root,
          R.out);
  }
  struct sub_result *rs = calloc((size_t)nsub, sizeof *rs);
  int full = 1;
  for (int i = 0; i < nsub; i++) {
    struct sub_result *r = &rs[i];
    if (realpath(subs[i], r->path) == NULL) {
      snprintf(r->path, sizeof r->path, "%s", subs[i]);
      snprintf(r->student, sizeof r->student, "%s", subs[i]);
      id_clean(r->student);
      snprintf(r->error, sizeof r->error, "%s: %s", subs[i], strerror(errno));
    } else {
      who(r, student);
    }
    for (int k = 0; k < i; k++)       /* two submissions, one id: keep both */
      if (strcmp(rs[k].student, r->student) == 0) {
        size_t len = strlen(r->student);
        snprintf(r->student + len, sizeof r->student - len, "-%d", i + 1);
      }
    if (r->error[0]) {
      struct grader g = {.hidden = 1, .rec = r->rec};
      grade_note_all(&g, R.lab, r->error);
      r->nrec = g.nrec;
      r->total = impl_points(R.lab) + impl_hidden_points(R.lab);
      printf("== submission %s: cannot grade: %s\nScore: 0/%d\n", subs[i], r->error, r->total);
    } else {
      grade_submission(&R, r);
    }
    full &= !r->error[0] && r->got == r->total;
    printf("\n");
  }
  flag_copies(rs, nsub, R.stubprint);
  printf("lab %d, %d submission%s:\n", R.lab->n, nsub, nsub == 1 ? "" : "s");
  for (int i = 0; i < nsub; i++)
    printf("  %-24s %3d/%d%s%s%s%s\n", rs[i].student, rs[i].got, rs[i].total,
           rs[i].error[0] ? "  cannot grade: " : "", rs[i].error,
           rs[i].flags[0] ? "  FLAG: " : "", rs[i].flags);
  if (csv)
    submit_csv(csv, R.lab, rs, nsub);
  if (gradescope) {
    struct stat st;
    for (int i = 0; i < nsub; i++) {
      char file[PATH_MAX + 128];
      if (gs)
        snprintf(file, sizeof file, "%s", gs);
      else if (nsub > 1)
        snprintf(file, sizeof file, "%s/%s/results.json", R.out, rs[i].student);
      else if (stat("/autograder/results", &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(file, sizeof file, "/autograder/results/results.json");
      else
        snprintf(file, sizeof file, "results.json");
      submit_gradescope(file, R.lab, &rs[i]);
    }
  }
  if (!R.keep)
    rm_rf(R.work);
  free(rs);
  free(subs);
  return full ? 0 : 1;
}
