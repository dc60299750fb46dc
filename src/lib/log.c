/*
 * log.c: logging and one-line errors (see log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib/log.h"

static const char *role = "auralog";
static int quiet;

void log_role(const char *r)
{
  role = r;
}

void log_quiet(int q)
{
  quiet = q;
}

void logf_(const char *level, const char *fmt, ...)
{
  if ((quiet && level[0] == 'i') || quiet >= 2)
    return;
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  localtime_r(&ts.tv_sec, &tm);
  fprintf(stderr, "%02d:%02d:%02d.%03ld %s %s: ", tm.tm_hour, tm.tm_min,
          tm.tm_sec, ts.tv_nsec / 1000000, role, level);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

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
