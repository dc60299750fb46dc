/*
 * log.c: logging and one-line errors (see log.h).
 *
 * A rate-limited call site (logrl_) is a small state machine over its own
 * struct logrl, driven by the clock its caller passes:
 *
 *   closed --message--> open: the message printed, the window starts
 *   open: the last printed message again   -> counted (repeats)
 *         a different one, budget left     -> the repeats summarised, it printed
 *         a different one, budget spent    -> counted (others)
 *   open --LOG_RL_MS over (next message, log_tick)--> counts printed; if
 *         there were any, a new window with the same last message (it goes
 *         on being counted: one line per window while it lasts); if none,
 *         closed (the next message is printed afresh).
 *
 * One mutex guards the sites and the output, so that lines of two threads
 * never interleave.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "param.h"

static const char *role = "auralog";
static int quiet;
static FILE *output;                  /* NULL: stderr */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct logrl *sites;           /* every rate-limited site that logged */
static int exit_hooked;

void log_role(const char *r)
{
  role = r;
}

void log_quiet(int q)
{
  quiet = q;
}

void log_output(FILE *f)
{
  pthread_mutex_lock(&mu);
  output = f;
  pthread_mutex_unlock(&mu);
}

static int dropped(const char *level)
{
  return (quiet && level[0] == 'i') || quiet >= 2;
}

/* The line's prefix: wall-clock time, role, level (mu held). */
static FILE *prefix(const char *level)
{
  FILE *f = output ? output : stderr;
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  localtime_r(&ts.tv_sec, &tm);
  fprintf(f, "%02d:%02d:%02d.%03ld %s %s: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
          ts.tv_nsec / 1000000, role, level);
  return f;
}

void logf_(const char *level, const char *fmt, ...)
{
  if (dropped(level))
    return;
  pthread_mutex_lock(&mu);
  FILE *f = prefix(level);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  pthread_mutex_unlock(&mu);
}

/* ---- rate-limited sites ------------------------------------------------- */

/* n with thousands separators: 8999 -> "8,999". */
static const char *count_str(char *buf, size_t len, unsigned long long n)
{
  char digits[32];
  int nd = snprintf(digits, sizeof digits, "%llu", n), o = 0;
  for (int i = 0; i < nd && (size_t)o + 2 < len; i++) {
    if (i > 0 && (nd - i) % 3 == 0)
      buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = 0;
  return buf;
}

/* How long a window has run, in words: "10 s", or "250 ms" under a second. */
static const char *span_str(char *buf, size_t len, unsigned long long ms)
{
  if (ms < 1000)
    snprintf(buf, len, "%llu ms", ms);
  else
    snprintf(buf, len, "%llu s", (ms + 500) / 1000);
  return buf;
}

/* Say how often s's last message came again unprinted, and zero the count
 * (mu held). */
static void say_repeats(struct logrl *s, unsigned long long now)
{
  char n[32], span[32];
  if (s->repeats == 0)
    return;
  FILE *f = prefix(s->level);
  fprintf(f, "%s (repeated %s time%s in the last %s)\n", s->last,
          count_str(n, sizeof n, s->repeats), s->repeats == 1 ? "" : "s",
          span_str(span, sizeof span, now - s->start));
  s->repeats = 0;
}

/* Say how many other messages s did not print (its budget spent), with
 * the last of them, and zero the count (mu held). */
static void say_others(struct logrl *s, unsigned long long now)
{
  char n[32], span[32];
  if (s->others == 0)
    return;
  FILE *f = prefix(s->level);
  fprintf(f, "%s (the last of %s message%s from %s:%d not shown in the last %s)\n",
          s->other, count_str(n, sizeof n, s->others), s->others == 1 ? "" : "s",
          s->file, s->line, span_str(span, sizeof span, now - s->start));
  s->others = 0;
}

/* s's window is over (mu held): see the top. A window closed long after
 * its end had no message in its last LOG_RL_MS: the condition stopped,
 * so the site closes even if it counted. */
static void window_end(struct logrl *s, unsigned long long now)
{
  int counted = s->repeats || s->others;
  say_repeats(s, now);
  say_others(s, now);
  s->printed = 0;
  if (counted && now - s->start < 2 * (unsigned long long)LOG_RL_MS) {
    s->start = now;
  } else {
    s->start = 0;
    s->last[0] = 0;
  }
}

/* A site is open (in a window) once it printed, until a window passes
 * without its message. */
static int is_open(const struct logrl *s)
{
  return s->last[0] != 0;
}

static void at_exit(void)
{
  /* Never wait at exit: a thread may hold the lock forever (killed). */
  if (pthread_mutex_trylock(&mu) != 0)
    return;
  pthread_mutex_unlock(&mu);
  log_flush(now_ms());
}

void logrl_(struct logrl *s, unsigned long long now, const char *level,
            const char *fmt, ...)
{
  if (dropped(level))
    return;
  char msg[LOG_RL_LINE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (msg[0] == 0)
    snprintf(msg, sizeof msg, "(empty message)");  /* "" marks a closed site */

  pthread_mutex_lock(&mu);
  if (!s->listed) {
    s->listed = 1;
    s->next = sites;
    sites = s;
    if (!exit_hooked) {
      exit_hooked = 1;
      atexit(at_exit);
    }
  }
  s->level = level;
  if (now < s->start)
    now = s->start;             /* another thread read the clock after us */
  if (is_open(s) && now - s->start >= LOG_RL_MS)
    window_end(s, now);
  if (!is_open(s)) {
    s->start = now;
    s->printed = 0;
  }
  if (strcmp(msg, s->last) == 0) {
    s->repeats++;
  } else if (s->printed < LOG_RL_BURST) {
    say_repeats(s, now);        /* the message changed: how often the old one came */
    FILE *f = prefix(level);
    fprintf(f, "%s\n", msg);
    memcpy(s->last, msg, sizeof msg);
    s->printed++;
  } else {
    s->others++;
    memcpy(s->other, msg, sizeof msg);
  }
  pthread_mutex_unlock(&mu);
}

void log_tick(unsigned long long now)
{
  pthread_mutex_lock(&mu);
  for (struct logrl *s = sites; s; s = s->next)
    if (is_open(s) && now >= s->start && now - s->start >= LOG_RL_MS)
      window_end(s, now);
  pthread_mutex_unlock(&mu);
}

void log_flush(unsigned long long now)
{
  pthread_mutex_lock(&mu);
  for (struct logrl *s = sites; s; s = s->next) {
    unsigned long long at = now < s->start ? s->start : now;
    say_repeats(s, at);
    say_others(s, at);
  }
  FILE *f = output ? output : stderr;
  fflush(f);
  pthread_mutex_unlock(&mu);
}

/* ---- one-line errors ------------------------------------------------------ */

static void verr(const char *fmt, va_list ap)
{
  fputs("auralog: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void errmsg(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  verr(fmt, ap);
  va_end(ap);
}

void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  verr(fmt, ap);
  va_end(ap);
  exit(1);
}

unsigned long long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

unsigned long long now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;
}
