/*
 * handout.c: `auralog lab handout N DIR`: a student's tree for
 * implement lab N (see impl.h for the labs and their markers).
 *
 * The handout is the source tree this binary was built from (or --src),
 * without .git and build outputs (build*, sim-seed-*.trace), with every
 * body marked for lab N replaced by its stub. Only lab N's: the other
 * labs' cores stay the reference, so each lab stands alone (a student
 * who does them in order can copy their own earlier answers in).
 *
 * A copied file keeps its modification time, so a build/ copied in from
 * the reference tree (the tests do) rebuilds only the files the handout
 * changed. A handout is an ordinary tree: `make` builds it with no
 * warning, and `make grade LAB=N` gives 0 points until the work is done.
 *
 * Marker syntax (line based, so that a comment merely mentioning a marker
 * does not count: the line must start with the comment):
 *     <indent>/+ LAB N BEGIN: ... (more comment lines) ... +/
 *   lines " * stub: CODE" in that comment are the stub, emitted at <indent>;
 *     <indent>/+ LAB N END +/
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "lab/impl.h"
#include "lib/log.h"

/* If line opens a marker comment "/+ LAB n WORD", n and where WORD starts. */
static int marker(const char *line, int *n, const char **word)
{
  const char *p = line;
  while (*p == ' ' || *p == '\t')
    p++;
  if (strncmp(p, "/* LAB ", 7) != 0)
    return 0;
  char *end;
  long v = strtol(p + 7, &end, 10);
  if (end == p + 7 || *end != ' ')
    return 0;
  *n = (int)v;
  *word = end + 1;
  return 1;
}

int handout_file(FILE *in, FILE *out, int lab, const char *path, char *why, size_t whylen)
{
  char *line = NULL;
  size_t cap = 0;
  int regions = 0, lineno = 0, begun = 0;
  /* state: 0 copying; 1 in lab's BEGIN comment; 2 skipping the body */
  int state = 0;
  char indent[128] = "";
  char *stub = NULL;
  size_t stublen = 0;
  while (getline(&line, &cap, in) != -1) {
    lineno++;
    int n;
    const char *word;
    int is_marker = marker(line, &n, &word);
    if (state == 0) {
      if (is_marker && n == lab && strncmp(word, "BEGIN", 5) == 0) {
        size_t k = strspn(line, " \t");
        if (k >= sizeof indent)
          k = sizeof indent - 1;
        memcpy(indent, line, k);
        indent[k] = 0;
        begun = lineno;
        state = strstr(line, "*/") ? 2 : 1;
        fputs(line, out);
        if (state == 2)
          fprintf(out, "%s/* TODO: your code here, in place of this stub. */\n", indent);
      } else if (is_marker && n == lab && strncmp(word, "END", 3) == 0) {
        snprintf(why, whylen, "%s:%d: LAB %d END without a BEGIN", path, lineno, lab);
        goto bad;
      } else {
        fputs(line, out);
      }
    } else if (state == 1) {
      const char *p = line + strspn(line, " \t");
      if (strncmp(p, "* stub:", 7) == 0) {
        p += 7;
        if (*p == ' ')
          p++;
        size_t len = strlen(p);
        stub = realloc(stub, stublen + strlen(indent) + len + 2);
        stublen += (size_t)sprintf(stub + stublen, "%s%s", indent, p);
        if (len == 0 || p[len - 1] != '\n')
          stub[stublen++] = '\n', stub[stublen] = 0;
        continue;             /* the stub goes below the comment, as code */
      }
      fputs(line, out);
      if (strstr(line, "*/")) {
        fprintf(out, "%s/* TODO: your code here, in place of this stub. */\n", indent);
        if (stub)
          fputs(stub, out);
        state = 2;
      }
    } else {
      if (is_marker && n == lab && strncmp(word, "END", 3) == 0) {
        fputs(line, out);
        regions++;
        state = 0;
        free(stub);
        stub = NULL;
        stublen = 0;
      } else if (is_marker && n == lab && strncmp(word, "BEGIN", 5) == 0) {
        snprintf(why, whylen, "%s:%d: LAB %d BEGIN inside the one begun at line %d", path,
                 lineno, lab, begun);
        goto bad;
      }
    }
  }
  if (state != 0) {
    snprintf(why, whylen, "%s:%d: LAB %d BEGIN has no END", path, begun, lab);
    goto bad;
  }
  free(line);
  return regions;
bad:
  free(line);
  free(stub);
  return -1;
}

static int ends_with(const char *s, const char *tail)
{
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && strcmp(s + a - b, tail) == 0;
}

/* What a handout leaves out: the repository, build outputs, traces. */
static int skip(const char *rel, const char *name)
{
  if (strcmp(name, ".git") == 0)
    return 1;
  if (strchr(rel, '/') == NULL && strncmp(name, "build", 5) == 0)
    return 1;               /* build, build-san, build-x: at the top */
  return strncmp(name, "sim-seed-", 9) == 0 && ends_with(name, ".trace");
}

struct walk {
  int lab;
  int regions;
  char why[PATH_MAX * 2 + 300];
};

static int copy_times(const char *to, const struct stat *st)
{
  struct timespec ts[2] = {st->st_atim, st->st_mtim};
  return utimensat(AT_FDCWD, to, ts, AT_SYMLINK_NOFOLLOW);
}

static int copy_file(struct walk *w, const char *from, const char *to, const char *rel,
                     const struct stat *st)
{
  FILE *in = fopen(from, "r"), *out = fopen(to, "w");
  int rc = 0, changed = 0;
  if (in == NULL || out == NULL) {
    snprintf(w->why, sizeof w->why, "%s: %s", in ? to : from, strerror(errno));
    rc = -1;
    goto done;
  }
  if (strncmp(rel, "src/", 4) == 0 && (ends_with(rel, ".c") || ends_with(rel, ".h"))) {
    int k = handout_file(in, out, w->lab, rel, w->why, sizeof w->why);
    if (k < 0) {
      rc = -1;
      goto done;
    }
    if (k > 0)
      printf("  %s: %d bod%s replaced by %s\n", rel, k, k == 1 ? "y" : "ies",
             k == 1 ? "its stub" : "their stubs");
    w->regions += k;
    changed = k > 0;
  } else {
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
      if (fwrite(buf, 1, got, out) != got) {
        snprintf(w->why, sizeof w->why, "%s: %s", to, strerror(errno));
        rc = -1;
        goto done;
      }
  }
done:
  if (in)
    fclose(in);
  if (out && fclose(out) != 0 && rc == 0) {
    snprintf(w->why, sizeof w->why, "%s: %s", to, strerror(errno));
    rc = -1;
  }
  if (rc == 0) {
    chmod(to, st->st_mode & 07777);
    if (!changed)
      copy_times(to, st);     /* unchanged: make need not rebuild it */
  }
  return rc;
}

static int walk_dir(struct walk *w, const char *from, const char *to, const char *rel)
{
  DIR *d = opendir(from);
  if (d == NULL) {
    snprintf(w->why, sizeof w->why, "%s: %s", from, strerror(errno));
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char r[PATH_MAX], f[PATH_MAX * 2], t[PATH_MAX * 2];
    snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    if (skip(r, e->d_name))
      continue;
    snprintf(f, sizeof f, "%s/%s", from, e->d_name);
    snprintf(t, sizeof t, "%s/%s", to, e->d_name);
    struct stat st;
    if (lstat(f, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      if (mkdir(t, 0755) != 0 && errno != EEXIST) {
        snprintf(w->why, sizeof w->why, "%s: %s", t, strerror(errno));
        rc = -1;
      } else {
        rc = walk_dir(w, f, t, r);
      }
    } else if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t len = readlink(f, target, sizeof target - 1);
      if (len > 0) {
        target[len] = 0;
        if (symlink(target, t) != 0) {
          snprintf(w->why, sizeof w->why, "%s: %s", t, strerror(errno));
          rc = -1;
        }
      }
    } else if (S_ISREG(st.st_mode)) {
      rc = copy_file(w, f, t, r, &st);
    }
  }
  closedir(d);
  return rc;
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

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog lab handout N DIR [--src TREE]\n"
    "\n"
    "Write a student's tree for implement lab N (a number or a name, see\n"
    "auralog lab list) into DIR, which must be empty or absent: the source\n"
    "tree, without .git and build outputs, with the bodies marked for lab N\n"
    "(/* LAB N BEGIN ... */ ... /* LAB N END */) replaced by stubs that\n"
    "compile and fail. Then: cd DIR && make && make grade LAB=N.\n"
    "\n"
    "  --src TREE   the tree to make it from (default: the one this binary\n"
    "               was built in)\n");
}

int lab_handout_main(int argc, char **argv)
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
  if (argc - optind != 2)
    die("lab handout: say the lab and a directory: auralog lab handout N DIR");
  const struct impl_lab *l = impl_find(argv[optind]);
  if (l == NULL)
    die("lab handout: no implement lab '%s' (see auralog lab list)", argv[optind]);
  const char *dir = argv[optind + 1];
  char root[PATH_MAX + 128], out[PATH_MAX];
  if (impl_root(src, root, sizeof root) != 0)
    die("lab handout: %s", root);
  if (!empty_or_absent(dir))
    die("lab handout: %s is not empty; give a new directory", dir);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    die("lab handout: cannot make %s: %s", dir, strerror(errno));
  if (realpath(dir, out) == NULL)
    die("lab handout: %s: %s", dir, strerror(errno));
  if (strncmp(out, root, strlen(root)) == 0 && out[strlen(root)] == '/' &&
      strncmp(out + strlen(root) + 1, "build", 5) != 0)
    die("lab handout: %s is inside the tree it copies (use a directory outside it, "
        "or under its build/)", dir);
  printf("lab %d (%s): %s, paper %s\n", l->n, l->name, l->title, l->paper);
  struct walk w = {.lab = l->n};
  if (walk_dir(&w, root, out, "") != 0)
    die("lab handout: %s", w.why);
  if (w.regions == 0)
    die("lab handout: %s has no body marked LAB %d (is it a handout already?)", root, l->n);
  printf("handout in %s\n"
         "next: cd %s && make && make grade LAB=%d   (0 points until the work is done)\n",
         out, out, l->n);
  return 0;
}
