/*
 * handout.c: the handout transformation (a marked body becomes its stub),
 * the tree copy that applies it, and `auralog lab handout N DIR` (see
 * impl.h for the labs and their markers, export.c for the student
 * repository both commands write).
 *
 * handout_file copies one file with the bodies marked for one lab, or for
 * every lab (IMPL_ALL), replaced by their stubs. handout_copy copies a
 * tree through it, without .git, build outputs (build*, sim-seed-*.trace)
 * and the paths an instructor keeps to themselves (labs/instructor-only),
 * and says which files it stubbed.
 *
 * A handout is the export (export.c) with lab N's files named at the end:
 * every lab's bodies are stubs, never only lab N's, since a tree that
 * kept the other labs' reference bodies would hand them out (lab 25's
 * tree would carry the finished seg_add of lab 21). The other labs still
 * run as the reference, from the objects the export ships in ref/.
 *
 * A copied file keeps its modification time, so a build/ copied in from
 * the reference tree (the tests do) rebuilds only the files the copy
 * changed.
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

int handout_file(FILE *in, FILE *out, int lab, const char *path, unsigned long long *labs,
                 char *why, size_t whylen)
{
  char *line = NULL;
  size_t cap = 0;
  int regions = 0, lineno = 0, begun = 0;
  int cur = 0;                /* the lab of the body being replaced */
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
    int ours = is_marker && (lab == IMPL_ALL || n == lab);
    if (state == 0) {
      if (ours && strncmp(word, "BEGIN", 5) == 0) {
        cur = n;
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
      } else if (ours && strncmp(word, "END", 3) == 0) {
        snprintf(why, whylen, "%s:%d: LAB %d END without a BEGIN", path, lineno, n);
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
      if (is_marker && n == cur && strncmp(word, "END", 3) == 0) {
        fputs(line, out);
        regions++;
        if (labs && cur > 0 && cur < 64)
          *labs |= 1ull << cur;
        state = 0;
        free(stub);
        stub = NULL;
        stublen = 0;
      } else if (ours && strncmp(word, "BEGIN", 5) == 0) {
        snprintf(why, whylen, "%s:%d: LAB %d BEGIN inside the LAB %d begun at line %d", path,
                 lineno, n, cur, begun);
        goto bad;
      }
    }
  }
  if (state != 0) {
    snprintf(why, whylen, "%s:%d: LAB %d BEGIN has no END", path, begun, cur);
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

/* What a copy leaves out: the repository, build outputs, traces, and the
 * paths in skip (each a file, or a folder and all under it). */
static int skip(const struct copy_out *r, const char *rel, const char *name)
{
  if (strcmp(name, ".git") == 0)
    return 1;
  if (strchr(rel, '/') == NULL && strncmp(name, "build", 5) == 0)
    return 1;               /* build, build-san, build-x: at the top */
  if (strncmp(name, "sim-seed-", 9) == 0 && ends_with(name, ".trace"))
    return 1;
  for (char *const *s = r->skip; s && *s; s++)
    if (strcmp(rel, *s) == 0)
      return 1;
  return 0;
}

static int copy_times(const char *to, const struct stat *st)
{
  struct timespec ts[2] = {st->st_atim, st->st_mtim};
  return utimensat(AT_FDCWD, to, ts, AT_SYMLINK_NOFOLLOW);
}

static int copy_file(struct copy_out *r, int lab, const char *from, const char *to,
                     const char *rel, const struct stat *st)
{
  FILE *in = fopen(from, "r"), *out = fopen(to, "w");
  int rc = 0, changed = 0;
  if (in == NULL || out == NULL) {
    snprintf(r->why, sizeof r->why, "%s: %s", in ? to : from, strerror(errno));
    rc = -1;
    goto done;
  }
  if (strncmp(rel, "src/", 4) == 0 && (ends_with(rel, ".c") || ends_with(rel, ".h"))) {
    int k = handout_file(in, out, lab, rel, &r->labs, r->why, sizeof r->why);
    if (k < 0) {
      rc = -1;
      goto done;
    }
    if (k > 0) {
      printf("  %s: %d bod%s replaced by %s\n", rel, k, k == 1 ? "y" : "ies",
             k == 1 ? "its stub" : "their stubs");
      char **p = realloc(r->stubbed, (r->nstubbed + 1) * sizeof *p);
      if (p == NULL || (p[r->nstubbed] = strdup(rel)) == NULL) {
        snprintf(r->why, sizeof r->why, "out of memory");
        rc = -1;
        goto done;
      }
      r->stubbed = p;
      r->nstubbed++;
    }
    r->regions += k;
    changed = k > 0;
  } else {
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
      if (fwrite(buf, 1, got, out) != got) {
        snprintf(r->why, sizeof r->why, "%s: %s", to, strerror(errno));
        rc = -1;
        goto done;
      }
  }
done:
  if (in)
    fclose(in);
  if (out && fclose(out) != 0 && rc == 0) {
    snprintf(r->why, sizeof r->why, "%s: %s", to, strerror(errno));
    rc = -1;
  }
  if (rc == 0) {
    chmod(to, st->st_mode & 07777);
    if (!changed)
      copy_times(to, st);     /* unchanged: make need not rebuild it */
    r->files++;
  }
  return rc;
}

static int walk_dir(struct copy_out *r, int lab, const char *from, const char *to,
                    const char *rel)
{
  DIR *d = opendir(from);
  if (d == NULL) {
    snprintf(r->why, sizeof r->why, "%s: %s", from, strerror(errno));
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char rl[PATH_MAX], f[PATH_MAX * 2], t[PATH_MAX * 2];
    snprintf(rl, sizeof rl, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    if (skip(r, rl, e->d_name))
      continue;
    snprintf(f, sizeof f, "%s/%s", from, e->d_name);
    snprintf(t, sizeof t, "%s/%s", to, e->d_name);
    struct stat st;
    if (lstat(f, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      if (mkdir(t, 0755) != 0 && errno != EEXIST) {
        snprintf(r->why, sizeof r->why, "%s: %s", t, strerror(errno));
        rc = -1;
      } else {
        rc = walk_dir(r, lab, f, t, rl);
      }
    } else if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t len = readlink(f, target, sizeof target - 1);
      if (len > 0) {
        target[len] = 0;
        if (symlink(target, t) != 0) {
          snprintf(r->why, sizeof r->why, "%s: %s", t, strerror(errno));
          rc = -1;
        }
      }
    } else if (S_ISREG(st.st_mode)) {
      rc = copy_file(r, lab, f, t, rl, &st);
    }
  }
  closedir(d);
  return rc;
}

int handout_copy(const char *root, const char *out, int lab, struct copy_out *r)
{
  return walk_dir(r, lab, root, out, "");
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog lab handout N DIR [--src TREE]\n"
    "\n"
    "Write a student's repository for implement lab N (a number or a name,\n"
    "see auralog lab list) into DIR, which must be empty or absent: the\n"
    "same repository as auralog lab export DIR (every implement lab's\n"
    "bodies replaced by stubs, the reference cores as objects in ref/, a\n"
    "fresh git history), and what to do for lab N. Then:\n"
    "cd DIR && make && make grade LAB=N.\n"
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
  return export_tree("lab handout", src, argv[optind + 1], l);
}
