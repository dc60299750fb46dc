/*
 * export.c: `auralog lab export DIR`: the student repository, in which no
 * implement lab's reference body exists (labs/README.md, "Implement labs").
 *
 * The instructor's tree holds every lab's reference body between its
 * markers (impl.h). Handing that tree out, or its history, or a tree with
 * only one lab stubbed, hands out the answers. The export is instead
 *
 *   - a copy of the tree (handout_copy) with every lab's bodies replaced
 *     by their stubs, without .git, build outputs, and the paths listed
 *     in labs/instructor-only (mutant patches carry the reference's lines
 *     as context; hidden tests);
 *   - ref/ARCH/PATH.o for each file that held a body: the reference
 *     object, compiled in the instructor's build/ and stripped of its
 *     debug information, with ref/ARCH/PATH.sha256 (sha256sum's format):
 *     the hashes, as exported, of PATH.c and of every header it includes;
 *   - a git repository of its own: one commit, by "auralog course".
 * Before it commits, it looks for the bodies' code in every file it wrote
 * (leakcheck.c) and refuses if any holds some: a backup, a patch, a
 * snippet in a document, a path labs/instructor-only should name.
 *
 * The Makefile (scripts/refobj.sh) links a lab file's reference object as
 * long as every file in its .sha256 is unchanged, and compiles the file
 * once the student edits it: untouched is the reference, touched is
 * yours. So the cluster runs for the observe labs from the first `make`,
 * each implement lab stands alone (lab 25 before lab 21 still has a
 * working segment), and `make grade LAB=N` compiles lab N's files
 * whatever (a fresh export grades 0). An object is no source: reading
 * the algorithm back out of stripped, optimized machine code costs more
 * than writing it. On a machine of another architecture there is no
 * matching ref/ARCH, the stubs are compiled and the build says so.
 *
 * `auralog lab handout N DIR` writes the same repository and names lab N.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/impl.h"
#include "lib/log.h"

#define COURSE_NAME "auralog course"
#define COURSE_EMAIL "course@auralog.invalid"
#define INSTRUCTOR_ONLY "labs/instructor-only"
#define MAX_SKIP 256

/* Run argv in dir (NULL: here). The environment is the user's, less what
 * would send make or git elsewhere; git commits as the course. If out is
 * given, stdout and stderr go there (up to n bytes, the rest dropped);
 * else they are ours (make's progress). Returns the exit status, 127 if
 * it could not start. */
static int run(const char *dir, char *const argv[], char *out, size_t n)
{
  int fds[2] = {-1, -1};
  fflush(stdout);
  if (out && pipe(fds) != 0)
    die("lab export: pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0)
    die("lab export: fork: %s", strerror(errno));
  if (pid == 0) {
    if (out) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      close(fds[0]);
      close(fds[1]);
    }
    if (dir && chdir(dir) != 0)
      _exit(126);
    const char *unset[] = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SAN", "LAB", "GIT_DIR",
                           "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", NULL};
    for (const char **u = unset; *u; u++)
      unsetenv(*u);
    setenv("GIT_AUTHOR_NAME", COURSE_NAME, 1);
    setenv("GIT_AUTHOR_EMAIL", COURSE_EMAIL, 1);
    setenv("GIT_COMMITTER_NAME", COURSE_NAME, 1);
    setenv("GIT_COMMITTER_EMAIL", COURSE_EMAIL, 1);
    execvp(argv[0], argv);
    _exit(127);
  }
  if (out) {
    close(fds[1]);
    size_t got = 0;
    char buf[4096];
    ssize_t k;
    while ((k = read(fds[0], buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR))
      for (ssize_t i = 0; i < k; i++)
        if (got + 1 < n)
          out[got++] = buf[i];
    out[got] = 0;
    close(fds[0]);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *export_dir;  /* what we write: emptied when we fail */
static int export_made;         /* and we made it: removed */
static const char *export_cmd;

/* Fail: say why, and remove the half-written repository (it was empty
 * or absent when we began, so nothing of the user's is lost). */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
  char msg[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (export_dir) {
    char *argv[] = {"rm", "-rf", "--", (char *)export_dir, NULL};
    char ignored[256];
    run(NULL, argv, ignored, sizeof ignored);
    if (!export_made)
      mkdir(export_dir, 0755);
  }
  die("%s: %s", export_cmd, msg);
}

/* An empty directory or none is fine; anything in it is not overwritten. */
static int empty_or_absent(const char *dir)
{
  DIR *d = opendir(dir);
  if (d == NULL)
    return errno == ENOENT;
  struct dirent *e;
  int empty = 1;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      empty = 0;
  closedir(d);
  return empty;
}

/* The git work tree dir would be inside, if any: its top in top. */
static int in_git_tree(const char *dir, char *top, size_t n)
{
  char anc[PATH_MAX];
  snprintf(anc, sizeof anc, "%s", dir);
  struct stat st;
  while (stat(anc, &st) != 0 || !S_ISDIR(st.st_mode)) {
    char *slash = strrchr(anc, '/');
    if (slash == NULL) {
      snprintf(anc, sizeof anc, ".");
      break;
    }
    if (slash == anc) {
      anc[1] = 0;
      break;
    }
    *slash = 0;
  }
  char *argv[] = {"git", "-C", anc, "rev-parse", "--show-toplevel", NULL};
  if (run(NULL, argv, top, n) != 0)
    return 0;
  top[strcspn(top, "\n")] = 0;
  return 1;
}

/* labs/instructor-only: one path a line (a file, or a folder and all
 * under it), relative to the tree; '#' starts a comment. The list names
 * itself: how an instructor grades is not the student's to read. */
static int read_skip(const char *root, char **skip, int max)
{
  char p[PATH_MAX + 256], line[PATH_MAX];
  int k = 0;
  skip[k++] = strdup(INSTRUCTOR_ONLY);
  snprintf(p, sizeof p, "%s/%s", root, INSTRUCTOR_ONLY);
  FILE *f = fopen(p, "r");
  while (f && fgets(line, sizeof line, f) && k < max - 1) {
    line[strcspn(line, "#\n")] = 0;
    char *s = line + strspn(line, " \t"), *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '/'))
      *--e = 0;
    while (strncmp(s, "./", 2) == 0)
      s += 2;
    if (*s && strcmp(s, INSTRUCTOR_ONLY) != 0)
      skip[k++] = strdup(s);
  }
  if (f)
    fclose(f);
  skip[k] = NULL;
  return k;
}

/* sha256 of a file as 64 hex digits; -1 if it cannot be read. */
static int sha256_file(const char *path, char hex[65])
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return -1;
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  unsigned char buf[65536], h[crypto_hash_sha256_BYTES];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0)
    crypto_hash_sha256_update(&st, buf, got);
  int bad = ferror(f);
  fclose(f);
  crypto_hash_sha256_final(&st, h);
  sodium_bin2hex(hex, 65, h, sizeof h);
  return bad ? -1 : 0;
}

/* ref/ARCH/PATH.sha256: PATH.c and each header make's dependency file
 * (build/obj/PATH.d, from -MMD) names, hashed as exported. The generated
 * protobuf header stands for proto/auralog.proto, its source. */
static void write_sums(const char *root, const char *dir, const char *arch, const char *rel)
{
  char d[PATH_MAX * 2], sums[PATH_MAX * 2];
  size_t len = strlen(rel) - 2;    /* without ".c" */
  snprintf(d, sizeof d, "%s/build/obj/%.*s.d", root, (int)len, rel);
  snprintf(sums, sizeof sums, "%s/ref/%s/%.*s.sha256", dir, arch, (int)len, rel);
  FILE *in = fopen(d, "r"), *out = fopen(sums, "w");
  if (in == NULL || out == NULL)
    fail("%s: %s", in ? sums : d, strerror(errno));
  /* The first rule only: "OBJ: DEP DEP \ DEP ..." (then phony targets). */
  char word[PATH_MAX], *line = NULL;
  size_t cap = 0;
  int first = 1, more = 1, n = 0;
  while (more && getline(&line, &cap, in) != -1) {
    char *p = line;
    if (first) {
      p = strchr(line, ':');
      if (p == NULL)
        fail("%s: not a dependency file", d);
      p++;
      first = 0;
    }
    more = strstr(p, "\\\n") != NULL;
    int k;
    while (sscanf(p, " %4095s%n", word, &k) == 1) {
      p += k;
      if (strcmp(word, "\\") == 0)
        continue;
      const char *file = word;
      if (strncmp(word, "build/gen/auralog.pb-c", 22) == 0)
        file = "proto/auralog.proto";
      else if (word[0] == '/' || strncmp(word, "build", 5) == 0)
        continue;             /* the system's, or another generated file */
      char path[PATH_MAX * 2], hex[65];
      snprintf(path, sizeof path, "%s/%s", dir, file);
      if (sha256_file(path, hex) != 0)
        fail("%s needs %s, which the export does not have (labs/instructor-only?)", rel, file);
      fprintf(out, "%s  %s\n", hex, file);
      n++;
    }
  }
  free(line);
  fclose(in);
  if (fclose(out) != 0 || n == 0)
    fail("%s: %s", sums, n ? strerror(errno) : "no files in the dependency rule");
}

static void mkdirs(const char *path)
{
  char p[PATH_MAX * 2];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      mkdir(p, 0755);
      *s = '/';
    }
  if (mkdir(p, 0755) != 0 && errno != EEXIST)
    fail("cannot make %s: %s", p, strerror(errno));
}

static const char ref_readme[] =
  "# ref/: the reference cores, as objects\n"
  "\n"
  "In this repository the implement labs' bodies (`/* LAB N BEGIN */` ...\n"
  "`/* LAB N END */`, labs/README.md) are stubs for you to write. So that\n"
  "the cluster and the simulator work before you have written them, each\n"
  "file that holds a lab's body comes here compiled from the reference:\n"
  "`ref/ARCH/PATH.o`, with `PATH.sha256`, the hashes of `PATH.c` and of the\n"
  "headers it includes as they were handed out.\n"
  "\n"
  "`make` links a file's reference object for as long as you have not\n"
  "changed it (scripts/refobj.sh), and compiles your file once you have:\n"
  "untouched is the reference, touched is yours. `make grade LAB=N`\n"
  "always compiles lab N's files, so it grades your code.\n"
  "\n"
  "On a machine of another architecture there is no matching folder here:\n"
  "every file is compiled, the labs you have not done are stubs, and the\n"
  "cluster works once you have done labs 20-25 in order.\n";

/* Compile the reference objects in the instructor's build/ (make: only
 * what is out of date) and copy them, stripped, into dir/ref/ARCH/. */
static void ref_objects(const char *root, const char *dir, const char *arch,
                        const struct copy_out *r)
{
  char **argv = calloc(r->nstubbed + 8, sizeof *argv);
  int k = 0;
  argv[k++] = "make";
  argv[k++] = "--no-print-directory";
  argv[k++] = "-j2";
  for (size_t i = 0; i < r->nstubbed; i++) {
    const char *rel = r->stubbed[i];
    size_t len = strlen(rel);
    if (len < 3 || strcmp(rel + len - 2, ".c") != 0)
      continue;               /* a header: its users' objects carry it */
    if ((argv[k] = malloc(len + 16)) == NULL)
      fail("out of memory");
    sprintf(argv[k++], "build/obj/%.*s.o", (int)(len - 2), rel);
  }
  argv[k] = NULL;
  /* make -q: are they up to date? Else make them, its lines the progress. */
  char quiet[4096];
  argv[2] = "-q";
  int rc = run(root, argv, quiet, sizeof quiet);
  argv[2] = "-j2";
  if (rc == 0) {
    printf("the reference objects are up to date in %s/build\n", root);
  } else {
    printf("building the reference objects in %s/build (make: what is out of date)\n", root);
    if ((rc = run(root, argv, NULL, 0)) != 0)
      fail("make in %s failed (exit %d): the reference objects are not built", root, rc);
  }
  printf("ref/%s/:", arch);
  for (int i = 3; i < k; i++) {
    const char *rel = argv[i] + strlen("build/obj/");
    char obj[PATH_MAX * 2], to[PATH_MAX * 2], folder[PATH_MAX * 2], src[PATH_MAX];
    snprintf(obj, sizeof obj, "%s/%s", root, argv[i]);
    snprintf(to, sizeof to, "%s/ref/%s/%s", dir, arch, rel);
    snprintf(folder, sizeof folder, "%s", to);
    *strrchr(folder, '/') = 0;
    mkdirs(folder);
    /* No debug information (it would name the source's lines), no local
     * symbols that relocations do not need. */
    char *strip[] = {"objcopy", "--strip-unneeded", obj, to, NULL};
    char why[4096];
    if ((rc = run(NULL, strip, why, sizeof why)) != 0)
      fail("objcopy %s: %s", obj, rc == 127 ? "objcopy is not installed (binutils)" : why);
    snprintf(src, sizeof src, "%.*s.c", (int)(strlen(rel) - 2), rel);
    write_sums(root, dir, arch, src);
    printf(" %s", rel);
    free(argv[i]);
  }
  printf("\n");
  free(argv);
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/ref/README.md", dir);
  FILE *f = fopen(p, "w");
  if (f == NULL || fputs(ref_readme, f) < 0 || fclose(f) != 0)
    fail("%s: %s", p, strerror(errno));
}

/* One commit, by the course: the student's history starts here. */
static void git_commit(const char *dir, const char *version)
{
  char msg[512], why[8192];
  snprintf(msg, sizeof msg,
           "auralog: the course's student repository\n\n"
           "Every implement lab's body is a stub to write (labs/README.md);\n"
           "ref/ holds the reference cores as objects. Exported from %s.\n", version);
  char *init[] = {"git", "-c", "init.defaultBranch=main", "init", "-q", NULL};
  char *add[] = {"git", "add", "-A", NULL};
  char *commit[] = {"git", "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify",
                    "-m", msg, NULL};
  int rc;
  if ((rc = run(dir, init, why, sizeof why)) != 0)
    fail("git init: %s", rc == 127 ? "git is not installed" : why);
  if (run(dir, add, why, sizeof why) != 0)
    fail("git add: %s", why);
  if (run(dir, commit, why, sizeof why) != 0)
    fail("git commit: %s", why);
}

int export_tree(const char *cmd, const char *src, const char *dir,
                const struct impl_lab *handout)
{
  char root[PATH_MAX + 128], out[PATH_MAX], top[PATH_MAX + 64], p[PATH_MAX * 2];
  export_cmd = cmd;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (impl_root(src, root, sizeof root) != 0)
    die("%s: %s", cmd, root);
  snprintf(p, sizeof p, "%s/ref", root);
  if (access(p, F_OK) == 0)
    die("%s: %s is a student repository itself (it has ref/): export from the "
        "instructor's tree", cmd, root);
  if (!empty_or_absent(dir))
    die("%s: %s is not empty; give a new directory", cmd, dir);
  if (in_git_tree(dir, top, sizeof top))
    die("%s: %s is inside the git work tree %s; a student repository has a history "
        "of its own: give a directory outside it", cmd, dir, top);
  if (sodium_init() < 0)
    die("%s: libsodium failed to start", cmd);
  int made = access(dir, F_OK) != 0;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    die("%s: cannot make %s: %s", cmd, dir, strerror(errno));
  if (realpath(dir, out) == NULL)
    die("%s: %s: %s", cmd, dir, strerror(errno));
  export_dir = out;
  export_made = made;

  struct utsname u;
  const char *arch = uname(&u) == 0 ? u.machine : "unknown";
  char *skip[MAX_SKIP];
  read_skip(root, skip, MAX_SKIP);
  struct copy_out r = {.skip = skip};
  printf("copying %s to %s, every implement lab's bodies replaced by their stubs\n", root, out);
  if (handout_copy(root, out, IMPL_ALL, &r) != 0)
    fail("%s", r.why);
  for (size_t i = 0; i < impl_nlabs; i++)
    if (!(r.labs & (1ull << impl_labs[i].n)))
      fail("%s has no body marked LAB %d (%s): is it the instructor's tree?", root,
           impl_labs[i].n, impl_labs[i].files);
  /* Whatever else carried a body (a backup, a patch, a pasted snippet). */
  struct leaks L;
  char why[PATH_MAX * 3];
  if (leaks_read(&L, root, r.stubbed, r.nstubbed, why, sizeof why) != 0)
    fail("%s", why);
  if (leaks_scan(&L, out, why, sizeof why))
    fail("%s: remove it from %s, or name it in %s", why, root, INSTRUCTOR_ONLY);
  printf("checked: no file holds lines of a reference body (%zu runs of lines looked for)\n",
         L.n);
  leaks_free(&L);
  printf("left out (instructor-only, %s):", INSTRUCTOR_ONLY);
  for (char **s = skip; *s; s++) {
    snprintf(p, sizeof p, "%s/%s", root, *s);
    if (access(p, F_OK) == 0)
      printf(" %s", *s);
  }
  printf("\n");
  ref_objects(root, out, arch, &r);

  char version[128] = "";
  char *describe[] = {"git", "-C", root, "describe", "--always", "--dirty", NULL};
  if (run(NULL, describe, version, sizeof version) != 0)
    snprintf(version, sizeof version, "a tree outside git");
  version[strcspn(version, "\n")] = 0;
  printf("git: a fresh repository, one commit by \"%s\"\n", COURSE_NAME);
  git_commit(out, version);
  for (char **s = skip; *s; s++)
    free(*s);
  for (size_t i = 0; i < r.nstubbed; i++)
    free(r.stubbed[i]);
  free(r.stubbed);

  printf("%s: %zu files; %d bodies of labs %d-%d are stubs; reference objects for %s\n",
         out, r.files, r.regions, impl_labs[0].n, impl_labs[impl_nlabs - 1].n, arch);
  if (handout)
    printf("lab %d (%s): %s, paper %s: write the bodies marked LAB %d in %s\n"
           "next: cd %s && make && make grade LAB=%d   (0 points until the work is done)\n",
           handout->n, handout->name, handout->title, handout->paper, handout->n,
           handout->files, out, handout->n);
  else
    printf("next: give the students this repository (push it to a new remote). In it:\n"
           "  make && make demo          the cluster, for the observe labs\n"
           "  make grade LAB=N           an implement lab's points (0 until it is written)\n");
  return 0;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog lab export DIR [--src TREE]\n"
    "\n"
    "Write the student repository into DIR (empty or absent, outside any git\n"
    "work tree): the source tree without .git, build outputs and the paths in\n"
    "labs/instructor-only, every implement lab's bodies (/* LAB N BEGIN ... */\n"
    "... /* LAB N END */) replaced by stubs, and a fresh git history of one\n"
    "commit. No reference body is in it: the reference cores come as stripped\n"
    "objects in ref/ARCH/, which make links in place of a lab file for as\n"
    "long as the student has not changed it (labs/README.md). In it: make,\n"
    "make demo, make grade LAB=N (0 points until lab N is written).\n"
    "\n"
    "  --src TREE   the tree to export (default: the one this binary was\n"
    "               built in; its build/ compiles the reference objects)\n");
}

int lab_export_main(int argc, char **argv)
{
  static struct option opts[] = {
    {"src", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'}, {0}};
  const char *src = NULL;
  int o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 's': src = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (argc - optind != 1)
    die("lab export: say where: auralog lab export DIR");
  return export_tree("lab export", src, argv[optind], NULL);
}
