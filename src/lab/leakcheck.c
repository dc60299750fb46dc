/*
 * leakcheck.c: the export's own check that no reference body went out
 * with it (export.c), whatever carried it: a mutant patch's context lines,
 * an editor's or patch's backup (segment.c.orig), a snippet pasted into a
 * document, a path labs/instructor-only forgot.
 *
 * A body is the lines between its BEGIN comment and its END marker
 * (impl.h), trimmed, blank lines dropped. One line proves nothing
 * (`return 0;` is everywhere); a run of LEAK_RUN consecutive lines of a
 * body, or the whole body if it is shorter, found as consecutive lines
 * (trimmed, blanks dropped) of a file in the export is its code. Runs of
 * fewer than LEAK_MIN_CHARS characters (three closing braces) are not
 * looked for.
 *
 * Interface (impl.h):
 *   leaks_read   the runs of the bodies in the given files of the tree
 *   leaks_scan   look for them in every text file under a directory
 *   leaks_free
 * The runs are kept sorted, and each line of a scanned file is the end of
 * at most LEAK_RUN candidate runs, each found by binary search: an export
 * is checked in a fraction of a second.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lab/impl.h"

#define LEAK_RUN 3
#define LEAK_MIN_CHARS 40

/* The line without its leading and trailing white space (in place). */
static char *trim(char *s)
{
  s += strspn(s, " \t");
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = 0;
  return s;
}

/* "l1\nl2\n...": the k lines ending at ring position end (of LEAK_RUN). */
static char *join(char *const ring[], size_t end, size_t k)
{
  size_t len = 0;
  for (size_t i = 0; i < k; i++)
    len += strlen(ring[(end + LEAK_RUN - k + 1 + i) % LEAK_RUN]) + 1;
  char *s = malloc(len + 1), *p = s;
  if (s == NULL)
    return NULL;
  for (size_t i = 0; i < k; i++)
    p += sprintf(p, "%s\n", ring[(end + LEAK_RUN - k + 1 + i) % LEAK_RUN]);
  return s;
}

static int add(struct leaks *L, char *text, int k, int lab, const char *file, int line)
{
  if (strlen(text) < LEAK_MIN_CHARS) {
    free(text);
    return 0;
  }
  if (L->n == L->cap) {
    size_t cap = L->cap ? 2 * L->cap : 64;
    struct leakrun *w = realloc(L->w, cap * sizeof *w);
    if (w == NULL)
      return -1;
    L->w = w;
    L->cap = cap;
  }
  L->w[L->n++] = (struct leakrun){text, file, line, lab, k};
  L->has[k] = 1;
  return 0;
}

/* The runs of one body: lines[0..n), the first at line first of file. */
static int body_runs(struct leaks *L, char **lines, int *at, size_t n, int lab, const char *file)
{
  size_t k = n < LEAK_RUN ? n : LEAK_RUN;
  char *ring[LEAK_RUN];
  for (size_t i = 0; k && i + k <= n; i++) {
    for (size_t j = 0; j < k; j++)
      ring[(i + j) % LEAK_RUN] = lines[i + j];
    char *t = join(ring, (i + k - 1) % LEAK_RUN, k);
    if (t == NULL || add(L, t, (int)k, lab, file, at[i]) != 0)
      return -1;
  }
  return 0;
}

static int cmp_run(const void *a, const void *b)
{
  return strcmp(((const struct leakrun *)a)->text, ((const struct leakrun *)b)->text);
}

/* If line opens a marker comment "/+ LAB n WORD": n, and where WORD is. */
static int marker(const char *t, int *n, const char **word)
{
  if (strncmp(t, "/* LAB ", 7) != 0)
    return 0;
  char *end;
  long v = strtol(t + 7, &end, 10);
  if (end == t + 7 || *end != ' ')
    return 0;
  *n = (int)v;
  *word = end + 1;
  return 1;
}

int leaks_read(struct leaks *L, const char *root, char *const *files, size_t nfiles, char *why,
               size_t whylen)
{
  memset(L, 0, sizeof *L);
  for (size_t f = 0; f < nfiles; f++) {
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", root, files[f]);
    FILE *in = fopen(path, "r");
    if (in == NULL) {
      snprintf(why, whylen, "%s: %s", path, strerror(errno));
      return -1;
    }
    char *line = NULL, **body = NULL;
    int *at = NULL;
    size_t cap = 0, nb = 0;
    int state = 0, lab = 0, lineno = 0, rc = 0;  /* 0 out, 1 in BEGIN, 2 body */
    while (rc == 0 && getline(&line, &cap, in) != -1) {
      lineno++;
      char *t = trim(line);
      int n;
      const char *word;
      int is = marker(t, &n, &word);
      if (state == 0 && is && strncmp(word, "BEGIN", 5) == 0) {
        lab = n;
        state = strstr(t, "*/") ? 2 : 1;
      } else if (state == 1) {
        if (strstr(t, "*/"))
          state = 2;
      } else if (state == 2 && is && n == lab && strncmp(word, "END", 3) == 0) {
        rc = body_runs(L, body, at, nb, lab, files[f]);
        for (size_t i = 0; i < nb; i++)
          free(body[i]);
        nb = 0;
        state = 0;
      } else if (state == 2 && *t) {
        char **b = realloc(body, (nb + 1) * sizeof *b);
        int *a = realloc(at, (nb + 1) * sizeof *a);
        if (b)
          body = b;
        if (a)
          at = a;
        if (b == NULL || a == NULL || (body[nb] = strdup(t)) == NULL)
          rc = -1;
        else
          at[nb++] = lineno;
      }
    }
    for (size_t i = 0; i < nb; i++)
      free(body[i]);
    free(body);
    free(at);
    free(line);
    fclose(in);
    if (rc != 0) {
      snprintf(why, whylen, "out of memory reading %s", path);
      return -1;
    }
  }
  qsort(L->w, L->n, sizeof *L->w, cmp_run);
  return 0;
}

/* A file that has a NUL in its first 8 KiB is not text (an object). */
static int is_text(FILE *f)
{
  char buf[8192];
  size_t got = fread(buf, 1, sizeof buf, f);
  rewind(f);
  return memchr(buf, 0, got) == NULL;
}

static int scan_file(const struct leaks *L, const char *path, const char *rel, char *why,
                     size_t whylen)
{
  FILE *f = fopen(path, "r");
  if (f == NULL || !is_text(f)) {
    if (f)
      fclose(f);
    return 0;
  }
  char *line = NULL, *ring[LEAK_RUN] = {0};
  size_t cap = 0, seen = 0;
  int lineno = 0, found = 0;
  while (!found && getline(&line, &cap, f) != -1) {
    lineno++;
    char *t = trim(line);
    if (*t == 0)
      continue;
    size_t end = seen % LEAK_RUN;
    free(ring[end]);
    ring[end] = strdup(t);
    seen++;
    for (int k = 1; k <= LEAK_RUN && !found && ring[end]; k++) {
      if (!L->has[k] || seen < (size_t)k)
        continue;
      struct leakrun key = {.text = join(ring, end, (size_t)k)};
      if (key.text == NULL)
        break;
      const struct leakrun *hit = bsearch(&key, L->w, L->n, sizeof *L->w, cmp_run);
      if (hit && hit->k == k) {
        snprintf(why, whylen, "%s:%d holds lines of lab %d's reference body (%s:%d)", rel,
                 lineno, hit->lab, hit->file, hit->line);
        found = 1;
      }
      free(key.text);
    }
  }
  for (int i = 0; i < LEAK_RUN; i++)
    free(ring[i]);
  free(line);
  fclose(f);
  return found;
}

static int scan_dir(const struct leaks *L, const char *dir, const char *rel, char *why,
                    size_t whylen)
{
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".git"))
      continue;
    char p[PATH_MAX * 2], r[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    struct stat st;
    if (lstat(p, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode))
      found = scan_dir(L, p, r, why, whylen);
    else if (S_ISREG(st.st_mode))
      found = scan_file(L, p, r, why, whylen);
  }
  closedir(d);
  return found;
}

int leaks_scan(const struct leaks *L, const char *dir, char *why, size_t whylen)
{
  return scan_dir(L, dir, "", why, whylen);
}

void leaks_free(struct leaks *L)
{
  for (size_t i = 0; i < L->n; i++)
    free(L->w[i].text);
  free(L->w);
  memset(L, 0, sizeof *L);
}
