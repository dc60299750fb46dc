/*
 * lab/rundir.c: the run directory a `lab check` (and a `lab grade`)
 * leaves behind, as Maelstrom's store/ does: everything the verdict was
 * made from, kept, so it can be looked at after the cluster has moved on.
 *
 * `auralog lab check N` writes DIR/labs/runs/labNN-YYYYMMDD-HHMMSS/ and
 * points DIR/labs/runs/latest at it:
 *
 *   report.txt      what the check printed: each step ok or missing, each
 *                   answer compared (stdout, copied as it goes: rd_tee)
 *   journal.jsonl   the journal lines the check read, from the `lab start
 *                   N` mark on, as the coordinator wrote them (MACs and
 *                   all, demo spans included: the check left those out)
 *   answers.txt     a copy of the answers file it read
 *   cluster.svg     the cluster at check time (`auralog viz`: viz_dot)
 *   timeline.svg    the history on a time axis (lab/timeline.c)
 *   logs/NAME.log   the last RD_LOG_LINES lines of each process's log
 *                   (never evidence, but where a student looks next)
 *   before.jsonl    the journal lines before the mark that the checks read
 *                   as context (back to the coordinator's start, at most 400)
 *   journal.key     the coordinator's journal key, so `auralog lab verify`
 *                   can check the two excerpts' MAC chain with no cluster
 *   evidence.json   what the check read from the cluster (lab/evidence.c):
 *                   the status snapshot, every SQL answer in order; the
 *                   student, assignment, the key's id, the MAC the excerpt's
 *                   chain starts from (anchor), the verdict; the journal's
 *                   lab-seal mark (in journal.jsonl) holds the hash of it
 *                   and of answers.txt
 *   lab03-acks.txt  lab 3: the acknowledged transactions the check read
 *
 * A check runs in seconds and students run it often: each run gets its
 * own directory, named by its start time, and nothing is ever deleted.
 * `lab grade` keeps its fixed build/grade/labNN/ and gets report.txt and
 * a `latest` link beside it from here too (rd_tee, rd_latest).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <graphviz/gvc.h>

#include "journal.h"
#include "lab/lab.h"
#include "cli/status.h"
#include "cli/viz.h"

#define RD_LOG_LINES 200

/* ---- stdout, copied to a file as it goes -------------------------------- */

/* From here until rd_untee, stdout goes through a pipe to a child that
 * writes each byte both to the old stdout and to path. A child rather
 * than a second FILE: every printf of the check (and of the grader, whose
 * lines come from many places) lands in the report unchanged. */
int rd_tee(struct rd_tee *t, const char *path)
{
  int p[2];
  t->pid = -1;
  FILE *f = fopen(path, "w");
  if (f == NULL || pipe(p) != 0) {
    if (f)
      fclose(f);
    return -1;
  }
  fflush(stdout);
  t->saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);   /* not for the grader's children */
  t->pid = fork();
  if (t->pid < 0) {
    fclose(f);
    close(p[0]);
    close(p[1]);
    close(t->saved);
    return -1;
  }
  if (t->pid == 0) {
    char buf[4096];
    ssize_t n;
    close(p[1]);
    while ((n = read(p[0], buf, sizeof buf)) > 0) {
      ssize_t off = 0;
      while (off < n) {
        ssize_t w = write(t->saved, buf + off, (size_t)(n - off));
        if (w <= 0)
          break;
        off += w;
      }
      fwrite(buf, 1, (size_t)n, f);
      fflush(f);
    }
    fclose(f);
    _exit(0);
  }
  fclose(f);
  close(p[0]);
  dup2(p[1], STDOUT_FILENO);
  close(p[1]);
  setvbuf(stdout, NULL, _IOLBF, 0);      /* a pipe now: keep lines in order with stderr */
  return 0;
}

void rd_untee(struct rd_tee *t)
{
  if (t->pid <= 0)
    return;
  fflush(stdout);
  dup2(t->saved, STDOUT_FILENO);         /* the pipe's last writer closes: the child ends */
  close(t->saved);
  waitpid(t->pid, NULL, 0);
  t->pid = -1;
}

/* parent/latest -> name, replaced in one rename (a reader never sees none). */
void rd_latest(const char *parent, const char *name)
{
  char tmp[PATH_MAX + 64], link[PATH_MAX + 64];
  snprintf(tmp, sizeof tmp, "%s/.latest.%d", parent, (int)getpid());
  snprintf(link, sizeof link, "%s/latest", parent);
  unlink(tmp);
  if (symlink(name, tmp) == 0 && rename(tmp, link) != 0)
    unlink(tmp);
}

/* ---- the check's run directory ------------------------------------------- */

/* Make DIR/labs/runs/labNN-<time>[-k]/ into out; 0 or -1. */
int rd_make(struct labctx *x, int lab, char *out, size_t n)
{
  char runs[PATH_MAX + 32], stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  snprintf(runs, sizeof runs, "%s/labs/runs", x->dir);
  mkdir(runs, 0755);
  for (int k = 1; k < 100; k++) {
    char name[64];
    if (k == 1)
      snprintf(name, sizeof name, "lab%02d-%s", lab, stamp);
    else
      snprintf(name, sizeof name, "lab%02d-%s-%d", lab, stamp, k);   /* two in a second */
    snprintf(out, n, "%s/%s", runs, name);
    if (mkdir(out, 0755) == 0) {
      rd_latest(runs, name);
      return 0;
    }
    if (errno != EEXIST)
      return -1;
  }
  return -1;
}

/* Copy from to to; only its last tail lines if tail > 0. */
static int copy(const char *from, const char *to, int tail)
{
  FILE *in = fopen(from, "r");
  if (in == NULL)
    return -1;
  FILE *out = fopen(to, "w");
  if (out == NULL) {
    fclose(in);
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  long lines = 0, skip = 0;
  if (tail > 0) {
    while ((len = getline(&line, &cap, in)) > 0)
      lines++;
    skip = lines > tail ? lines - tail : 0;
    rewind(in);
  }
  for (long i = 0; (len = getline(&line, &cap, in)) > 0; i++)
    if (i >= skip)
      fwrite(line, 1, (size_t)len, out);
  free(line);
  fclose(in);
  return fclose(out) == 0 ? 0 : -1;
}

/* The journal's lines [from, to) (to < 0: to the end), raw: scan() in
 * journal.c gives every non-empty line one position, good or bad, so
 * position i is the file's i-th non-empty line. */
static void excerpt(struct labctx *x, const char *to_path, long from, long to)
{
  FILE *in = fopen(x->jpath, "r"), *out = fopen(to_path, "w");
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  long i = 0;
  while (in && out && from >= 0 && (len = getline(&line, &cap, in)) > 0) {
    if (len == 1 && line[0] == '\n')
      continue;
    if (to >= 0 && i >= to)
      break;
    if (i++ >= from)
      fwrite(line, 1, (size_t)len, out);
  }
  free(line);
  if (in)
    fclose(in);
  if (out)
    fclose(out);
}

/* Each DIR/log/NAME.log's tail into run/logs/PREFIXNAME.log. */
static void logs(const char *logdir, const char *run, const char *prefix)
{
  char from[PATH_MAX + 300], to[PATH_MAX + 300];
  DIR *d = opendir(logdir);
  struct dirent *e;
  snprintf(to, sizeof to, "%s/logs", run);
  mkdir(to, 0755);
  while (d && (e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".log") != 0)
      continue;
    snprintf(from, sizeof from, "%s/%s", logdir, e->d_name);
    snprintf(to, sizeof to, "%s/logs/%s%s", run, prefix, e->d_name);
    copy(from, to, RD_LOG_LINES);
  }
  if (d)
    closedir(d);
}

/* The cluster as `auralog viz` draws it, at check time. */
static void drawing(struct labctx *x, const char *run)
{
  char why[512], path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/cluster.svg", run);
  Env *rep = status_fetch(x->coord, "main", why, sizeof why);
  if (rep == NULL) {
    printf("  (no drawing of the cluster: %s)\n", why);
    return;
  }
  char *dot = viz_dot(rep->status), *svg = NULL;
  unsigned len = 0;
  wire_free(rep);
  if (viz_render(dot, "svg", &svg, &len, why, sizeof why) != 0) {
    snprintf(path, sizeof path, "%s/cluster.dot", run);   /* the DOT text, at least */
    svg = NULL;
    len = (unsigned)strlen(dot);
  }
  FILE *f = fopen(path, "w");
  if (f) {
    fwrite(svg ? svg : dot, 1, len, f);
    fclose(f);
  }
  if (svg)
    gvFreeRenderData(svg);
  free(dot);
}

/* evidence.json: what the check read (x->evid), and whose run it was. */
static void evidence(struct labctx *x, int lab, const char *run)
{
  char p[PATH_MAX + 64], id[17], anchor[2 * 32 + 1] = "";
  cJSON *o = x->evid ? x->evid : cJSON_CreateObject();
  x->evid = NULL;
  /* The MAC the excerpt's chain goes on from: the last good line's before it. */
  for (long i = x->bfrom - 1; i >= 0 && !anchor[0]; i--)
    snprintf(anchor, sizeof anchor, "%s", fstr(hist_at(x, i), "mac"));
  journal_key_id(x->jkey, id);
  cJSON_AddNumberToObject(o, "lab", lab);
  cJSON_AddStringToObject(o, "student", x->student);
  char text[160] = "";
  if (x->student[0])
    assign_text(&x->as, text, sizeof text);
  cJSON_AddStringToObject(o, "assign", text);
  cJSON_AddStringToObject(o, "key_id", id);
  cJSON_AddStringToObject(o, "anchor", anchor);
  cJSON_AddStringToObject(o, "dir", x->dir);
  cJSON_AddStringToObject(o, "verdict", x->failed ? "not yet" : "passed");
  char *js = cJSON_Print(o);
  snprintf(p, sizeof p, "%s/evidence.json", run);
  FILE *f = fopen(p, "w");
  if (f) {
    fputs(js, f);
    fputc('\n', f);
    fclose(f);
  }
  free(js);
  cJSON_Delete(o);
  snprintf(p, sizeof p, "%s/journal.key", run);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    if (write(fd, x->jkey, sizeof x->jkey) != (ssize_t)sizeof x->jkey)
      unlink(p);
    close(fd);
  }
}

/* Everything but the report (rd_tee writes it): called after the check,
 * before the history is freed. */
void rd_write(struct labctx *x, int lab, const char *run)
{
  char p[PATH_MAX + 64], title[128];
  snprintf(p, sizeof p, "%s/journal.jsonl", run);
  excerpt(x, p, x->xfrom, -1);
  snprintf(p, sizeof p, "%s/before.jsonl", run);
  excerpt(x, p, x->bfrom, x->xfrom);
  evidence(x, lab, run);
  if (lab == 3) {
    char from[PATH_MAX + 64];
    lab_file(x, "lab03-acks.txt", from, sizeof from);
    snprintf(p, sizeof p, "%s/lab03-acks.txt", run);
    copy(from, p, 0);
  }
  snprintf(p, sizeof p, "%s/answers.txt", run);
  if (copy(x->answers, p, 0) != 0) {
    FILE *f = fopen(p, "w");
    if (f) {
      fprintf(f, "# no answers file at %s when the check ran\n", x->answers);
      fclose(f);
    }
  }
  snprintf(p, sizeof p, "%s/timeline.svg", run);
  snprintf(title, sizeof title, "lab %d: its history since `auralog lab start %d`", lab, lab);
  timeline_svg(x, p, title);
  drawing(x, run);
  snprintf(p, sizeof p, "%s/log", x->dir);
  logs(p, run, "");
  if (lab == 6) {
    snprintf(p, sizeof p, "%s/netns/log", x->dir);
    logs(p, run, "netns-");
  }
}
