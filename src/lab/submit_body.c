/*
 * submit_body.c: a submission's lab bodies, taken out of the student's
 * files, checked, and put into the instructor's (see submit.h); and the
 * limits a student's code runs under (grade_contain, grader.h).
 *
 * What a body may be. It is spliced into the middle of a function of the
 * instructor's file, compiled, and run inside the instructor's unit tests
 * and simulator, all in one process. So a body that could leave its
 * function, or act on the world, could make those report a pass: print
 * cmocka's "ok" lines, exit(0) before the simulator finds a violation,
 * #define away the rest of the file, mark a function as a constructor.
 * body_lint refuses, before anything is built:
 *   - preprocessor lines (# or %: outside a string) and backslashes
 *     outside a literal (a line splice could hide a name);
 *   - a '}' that closes the enclosing function, unbalanced braces, an
 *     unterminated comment or literal;
 *   - `extern`, `asm`, attributes, `_Pragma`, and every identifier of a
 *     list of calls that end the process, run programs, touch files, the
 *     terminal, signals, the environment or the network, with whole
 *     families (*printf*, *exit*, *spawn*, exec*, put*, fput*); names
 *     starting with __ other than a few arithmetic builtins.
 * A reference body uses none of these (a test checks each lab's). What
 * is left: arithmetic, memory, calls to what the file can see. A body
 * can still corrupt memory or loop forever; that loses points (a crash
 * or a time limit fails the test). The list is a list: a C library call
 * it does not name gets past it (C lets a call go undeclared, with a
 * warning). Ending the process early does not pay (a seed passes only on
 * the simulator's own "seed N: ok" line, a unit test only on cmocka's
 * line for it); forging those lines needs a way to write that is not on
 * the list, on purpose, in code the instructor can read.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/grader.h"
#include "lab/submit.h"

/* If line opens a marker comment "/+ LAB n WORD", n and where WORD starts
 * (the same rule as the handout's: the comment must start the line). */
static int marker(const char *line, int *n, const char **word)
{
  const char *p = line + strspn(line, " \t");
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

void bodies_free(struct bodies *b)
{
  for (int i = 0; i < b->n; i++)
    free(b->text[i]);
  b->n = 0;
}

/* Walk a file's LAB lab regions. For each line, *state says where it
 * is: 0 outside, 1 in the BEGIN comment, 2 in the body; returns 1 when
 * the line is lab's END (the body ends before it), 0 otherwise, -1 on a
 * marker out of place (why says which). */
struct scan {
  int lab, state, lineno, begun;
  const char *path;
};

static int scan_line(struct scan *s, const char *line, char *why, size_t n)
{
  int k;
  const char *word;
  int is = marker(line, &k, &word) && k == s->lab;
  int begin = is && strncmp(word, "BEGIN", 5) == 0, end = is && strncmp(word, "END", 3) == 0;
  s->lineno++;
  if (s->state == 0) {
    if (end) {
      snprintf(why, n, "%s:%d: LAB %d END without a BEGIN", s->path, s->lineno, s->lab);
      return -1;
    }
    if (begin) {
      s->begun = s->lineno;
      s->state = strstr(line, "*/") ? 2 : 1;
    }
    return 0;
  }
  if (s->state == 1) {
    if (begin || end) {
      snprintf(why, n, "%s:%d: LAB %d %s inside the comment of the BEGIN at line %d", s->path,
               s->lineno, s->lab, begin ? "BEGIN" : "END", s->begun);
      return -1;
    }
    if (strstr(line, "*/"))
      s->state = 2;
    return 0;
  }
  if (begin) {
    snprintf(why, n, "%s:%d: LAB %d BEGIN inside the one begun at line %d", s->path, s->lineno,
             s->lab, s->begun);
    return -1;
  }
  if (end) {
    s->state = 0;
    return 1;
  }
  return 0;
}

int body_extract(FILE *in, int lab, const char *path, struct bodies *b, char *why, size_t n)
{
  struct scan s = {lab, 0, 0, 0, path};
  char *line = NULL, *text = NULL;
  size_t cap = 0, len = 0;
  memset(b, 0, sizeof *b);
  while (getline(&line, &cap, in) != -1) {
    int was = s.state, r = scan_line(&s, line, why, n);
    if (r < 0)
      goto bad;
    if (r == 1) {
      if (b->n == BODY_MAX) {
        snprintf(why, n, "%s: more than %d LAB %d bodies", path, BODY_MAX, lab);
        goto bad;
      }
      b->line[b->n] = s.begun;
      b->text[b->n++] = text ? text : strdup("");
      text = NULL;
      len = 0;
    } else if (was == 2) {
      size_t l = strlen(line);
      text = realloc(text, len + l + 1);
      memcpy(text + len, line, l + 1);
      len += l;
    }
  }
  if (s.state != 0) {
    snprintf(why, n, "%s:%d: LAB %d BEGIN has no END", path, s.begun, lab);
    goto bad;
  }
  free(line);
  return b->n;
bad:
  free(line);
  free(text);
  bodies_free(b);
  return -1;
}

int body_splice(const char *ref, int lab, const struct bodies *b, char *why, size_t n)
{
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.splice", ref);
  FILE *in = fopen(ref, "r"), *out = in ? fopen(tmp, "w") : NULL;
  if (in == NULL || out == NULL) {
    snprintf(why, n, "%s: %s", in ? tmp : ref, strerror(errno));
    if (in)
      fclose(in);
    return -1;
  }
  struct scan s = {lab, 0, 0, 0, ref};
  char *line = NULL;
  size_t cap = 0;
  int i = 0, rc = 0;
  while (rc == 0 && getline(&line, &cap, in) != -1) {
    int was = s.state, r = scan_line(&s, line, why, n);
    if (r < 0) {
      rc = -1;
    } else if (r == 1) {
      if (i < b->n) {
        fputs(b->text[i], out);
        size_t l = strlen(b->text[i]);
        if (l && b->text[i][l - 1] != '\n')
          fputc('\n', out);
      }
      i++;
      fputs(line, out);
    } else if (was != 2) {
      fputs(line, out);       /* the instructor's, outside bodies */
    }
  }
  free(line);
  fclose(in);
  if (fclose(out) != 0 && rc == 0) {
    snprintf(why, n, "%s: %s", tmp, strerror(errno));
    rc = -1;
  }
  if (rc == 0 && i != b->n) {
    snprintf(why, n, "%d LAB %d bod%s where the lab has %d", b->n, lab, b->n == 1 ? "y" : "ies",
             i);
    rc = -1;
  }
  if (rc == 0 && rename(tmp, ref) != 0) {
    snprintf(why, n, "%s: %s", ref, strerror(errno));
    rc = -1;
  }
  if (rc != 0)
    unlink(tmp);
  return rc;
}

/* Calls a body has no business making: they end the process, run
 * programs, or reach files, the terminal, signals, the environment. */
static const char *const denied[] = {
  "extern", "asm", "_Pragma", "exit", "_exit", "_Exit", "quick_exit", "atexit",
  "at_quick_exit", "fork", "vfork", "clone", "system", "popen", "execl", "execlp", "execle",
  "execv", "execvp", "execvpe", "execve", "fexecve", "posix_spawn", "posix_spawnp", "syscall",
  "open", "openat", "creat", "fopen", "freopen", "fdopen", "tmpfile", "write", "pwrite",
  "writev", "fwrite", "fputs", "puts", "printf", "fprintf", "dprintf", "vprintf", "vfprintf",
  "vdprintf", "putchar", "fputc", "putc", "perror", "fflush", "unlink", "unlinkat", "rename",
  "remove", "mkdir", "rmdir", "truncate", "ftruncate", "link", "symlink", "chmod", "kill",
  "raise", "signal", "sigaction", "setjmp", "longjmp", "sigsetjmp", "siglongjmp", "dlopen",
  "dlsym", "getenv", "setenv", "putenv", "unsetenv", "environ", "stdout", "stderr", "stdin",
  "mmap", "mprotect", "ptrace", "chdir", "dup", "dup2", "dup3", "close", "read", "pthread_create",
  "alarm", "sleep", "usleep", "nanosleep", "setrlimit", "prctl", "ioctl", "socket", "connect",
  "send", "sendto", "sendmsg", "main", "err", "errx", "verr", "verrx", "warn", "warnx",
  "vwarn", "vwarnx", "error", "error_at_line", "syslog", "vsyslog", "psignal", "psiginfo",
  "pwritev", "pwritev2", "aio_write", "sendfile", "splice", "tee", "vmsplice",
  "copy_file_range", "process_vm_writev", "pclose", "memfd_create", "clone3", "unshare",
  "setns", "pipe", "pipe2", "sigqueue", "tgkill", "tkill", "killpg", "dlvsym", "dlmopen",
  "thrd_create", "pthread_kill", "freopen64", "fopen64", "open64", "creat64", NULL};

/* And whole families: anything that prints (printf, dprintf, wprintf,
 * ...), ends the process or a thread (exit, pthread_exit, ...), runs a
 * program (exec*, *spawn*), or puts characters on a stream (put*, fput*). */
static const char *const denied_in[] = {"printf", "exit", "spawn", NULL};
static const char *const denied_prefix[] = {"exec", "put", "fput", NULL};

/* __builtin_ prefixes that only compute. */
static const char *const builtins[] = {
  "popcount", "clz", "ctz", "ffs", "parity", "clrsb", "expect", "bswap", "add_overflow",
  "sub_overflow", "mul_overflow", "unreachable", "memcpy", "memmove", "memset", "memcmp", NULL};

static int allowed(const char *id)
{
  for (int i = 0; denied[i]; i++)
    if (strcmp(id, denied[i]) == 0)
      return 0;
  for (int i = 0; denied_in[i]; i++)
    if (strstr(id, denied_in[i]))
      return 0;
  for (int i = 0; denied_prefix[i]; i++)
    if (strncmp(id, denied_prefix[i], strlen(denied_prefix[i])) == 0)
      return 0;
  if (strncmp(id, "__", 2) != 0)
    return 1;
  if (strcmp(id, "__func__") == 0)
    return 1;
  if (strncmp(id, "__builtin_", 10) != 0)
    return 0;
  for (int i = 0; builtins[i]; i++)
    if (strncmp(id + 10, builtins[i], strlen(builtins[i])) == 0)
      return 1;
  return 0;
}

int body_lint(const char *t, const char *where, int line0, char *why, size_t n)
{
  int line = line0, depth = 0, member = 0;
#define BAD(...) do { int at_ = snprintf(why, n, "%s:%d: ", where, line); \
    snprintf(why + at_, n - (size_t)at_, __VA_ARGS__); return -1; } while (0)
  for (const char *p = t; *p;) {
    if (*p == '\n') {
      line++, p++;
    } else if (p[0] == '/' && p[1] == '*') {
      int from = line;
      for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
        line += *p == '\n';
      if (!*p) {
        line = from;
        BAD("a comment opened here is not closed in the body");
      }
      p += 2;
    } else if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') {
        if (*p == '\\' && p[1] == '\n')
          BAD("a backslash at the end of a // comment (it would swallow the next line)");
        p++;
      }
    } else if (*p == '"' || *p == '\'') {
      char q = *p++;
      while (*p && *p != q && *p != '\n')
        p += (*p == '\\' && p[1]) ? 2 : 1;
      if (*p != q)
        BAD("a %s that is not closed on its line", q == '"' ? "string" : "character literal");
      p++;
      member = 0;
    } else if (*p == '#' || (p[0] == '%' && p[1] == ':')) {
      BAD("'#': no preprocessor lines in a lab body");
    } else if (*p == '\\') {
      BAD("a backslash outside a literal (a line splice)");
    } else if (*p == '{' || (p[0] == '<' && p[1] == '%')) {
      depth++;
      p += *p == '{' ? 1 : 2;
      member = 0;
    } else if (*p == '}' || (p[0] == '%' && p[1] == '>')) {
      if (--depth < 0)
        BAD("this '}' closes the function the body is in");
      p += *p == '}' ? 1 : 2;
      member = 0;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
      char id[128];
      size_t k = 0;
      while (isalnum((unsigned char)*p) || *p == '_') {
        if (k + 1 < sizeof id)
          id[k++] = *p;
        p++;
      }
      id[k] = 0;
      /* s->read is a field, not a call */
      if (!member && !allowed(id))
        BAD("'%s' is not allowed in a lab body (a body computes: it does not end the "
            "process, run programs, touch files or the terminal, or reach outside its function)",
            id);
      member = 0;
    } else if (isdigit((unsigned char)*p)) {
      while (isalnum((unsigned char)*p) || *p == '.' || *p == '_')
        p++;
      member = 0;
    } else {
      if (*p == '.' || (p[0] == '-' && p[1] == '>'))
        member = 1;
      else if (!isspace((unsigned char)*p))
        member = 0;
      p += (p[0] == '-' && p[1] == '>') ? 2 : 1;
    }
  }
  if (depth != 0)
    BAD("%d '{' not closed by the end of the body", depth);
#undef BAD
  return 0;
}

uint64_t body_fingerprint(const char *t, uint64_t h)
{
  /* FNV-1a over the text without comments and whitespace. */
  for (const char *p = t; *p;) {
    if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      p = e ? e + 2 : p + strlen(p);
    } else if (p[0] == '/' && p[1] == '/') {
      p += strcspn(p, "\n");
    } else if (isspace((unsigned char)*p)) {
      p++;
    } else {
      h = (h ^ (unsigned char)*p++) * 0x100000001b3ull;
    }
  }
  return h;
}

/* ---- running a student's code: limits, and namespaces where allowed ---- */

static int write_file(const char *path, const char *text)
{
  int fd = open(path, O_WRONLY);
  if (fd < 0)
    return -1;
  ssize_t w = write(fd, text, strlen(text));
  close(fd);
  return w == (ssize_t)strlen(text) ? 0 : -1;
}

static int reap(pid_t p)
{
  int st = 0;
  while (waitpid(p, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* No core files, no file over 256 MiB, CPU time bounded; where the
 * kernel lets an unprivileged user have namespaces: no network, and a PID
 * namespace of its own, so what it forks dies with it. */
void grade_contain(int limit)
{
  struct rlimit core = {0, 0}, fsize = {256u << 20, 256u << 20};
  struct rlimit cpu = {(rlim_t)limit + 5, (rlim_t)limit + 5};
  setrlimit(RLIMIT_CORE, &core);
  setrlimit(RLIMIT_FSIZE, &fsize);
  setrlimit(RLIMIT_CPU, &cpu);
  char map[64];
  unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID) != 0)
    return;                 /* not allowed here: limits and time only */
  write_file("/proc/self/setgroups", "deny");
  snprintf(map, sizeof map, "%u %u 1\n", uid, uid);
  write_file("/proc/self/uid_map", map);
  snprintf(map, sizeof map, "%u %u 1\n", gid, gid);
  write_file("/proc/self/gid_map", map);
  /* The next child is the namespace's pid 1: when it exits, the kernel
   * kills all else in it. The test is its child, not itself: a pid 1
   * ignores the signals it has no handler for, abort()'s included. */
  pid_t init = fork();
  if (init < 0)
    _exit(126);
  if (init > 0)
    _exit(reap(init));
  pid_t test = fork();
  if (test < 0)
    _exit(126);
  if (test > 0)
    _exit(reap(test));
}

const char *grade_containment(const struct grader *g)
{
  static int ns = -1;       /* whether this kernel lets us have namespaces */
  if (!g->contain)
    return "";
  if (ns < 0) {
    pid_t p = fork();
    if (p == 0)
      _exit(unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID) == 0 ? 0 : 1);
    ns = p > 0 && reap(p) == 0;
  }
  return ns ? "a time limit each, no core files, files up to 256 MiB, no network, "
              "a PID namespace of its own (what it forks dies with it)"
            : "a time limit each, no core files, files up to 256 MiB, its process group "
              "killed after (no user namespaces here: it has the network, and a process "
              "that leaves its group survives)";
}
