/*
 * safety_util.h: what the safety tests (test_safety.c, test_badinput.c)
 * share besides the harness: `cluster up` after a crash, the SCLs
 * `auralog status` shows and a wait until they converge, the rows `auralog
 * sql` printed, and texts made short enough for a message.
 */
#ifndef AURALOG_TEST_SAFETY_UTIL_H
#define AURALOG_TEST_SAFETY_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lib/log.h"

/* A bounded copy of a text (cut short if it does not fit). */
static inline void copy_text(char *dst, size_t n, const char *src)
{
  size_t len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = 0;
}

static inline void cluster_up(void)
{
  char o[4096];
  if (sh(o, sizeof o, "%s cluster up --dir %s 2>&1", bin, dir) != 0)
    fail_msg("auralog cluster up failed: %s", o);
}

/* "pg 0: A1 12 A2 12 ...; pg 1: ..." */
static inline const char *scls_text(cJSON *o)
{
  static char s[2048];
  size_t n = 0;
  cJSON *p, *g;
  s[0] = 0;
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(o, "pgs")) {
    n += (size_t)snprintf(s + n, sizeof s - n, "%spg %d:", n ? "; " : "",
                          (int)cJSON_GetObjectItem(p, "pg")->valuedouble);
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments"))
      n += (size_t)snprintf(s + n, sizeof s - n, " %s %.0f%s",
                            cJSON_GetObjectItem(g, "node")->valuestring,
                            cJSON_GetObjectItem(g, "scl")->valuedouble,
                            strcmp(cJSON_GetObjectItem(g, "state")->valuestring, "up")
                              ? " (down)" : "");
    if (n >= sizeof s)
      break;
  }
  return s;
}

/* Every up segment of every PG shows the same SCL. */
static inline int scls_equal(cJSON *o)
{
  cJSON *p, *g;
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(o, "pgs")) {
    double first = -1;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "segments")) {
      if (strcmp(cJSON_GetObjectItem(g, "state")->valuestring, "up") != 0)
        continue;
      double v = cJSON_GetObjectItem(g, "scl")->valuedouble;
      if (first < 0)
        first = v;
      else if (v != first)
        return 0;
    }
  }
  return 1;
}

/* Poll status until every segment's SCL is its peers'. Returns 1, or 0
 * after ms with the last SCLs in last (if given). */
static inline int wait_scls_equal(int ms, char *last, size_t n)
{
  unsigned long long t0 = now_ms();
  for (;;) {
    cJSON *o = status("main");
    int eq = scls_equal(o);
    if (last)
      copy_text(last, n, scls_text(o));
    cJSON_Delete(o);
    if (eq)
      return 1;
    if (now_ms() - t0 >= (unsigned long long)ms)
      return 0;
    usleep(100000);
  }
}

/* Does `auralog sql` output hold a line that is exactly v? */
static inline int has_row(const char *text, int v)
{
  char want[32];
  int len = snprintf(want, sizeof want, "%d", v);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, want, (size_t)len) == 0 && (p[len] == '\n' || p[len] == 0))
      return 1;
  return 0;
}

static inline void sql_rows(const char *select, char *text, size_t n)
{
  int rc = sql(select);
  if (rc != 0)
    fail_msg("`%s` failed (%d): %s", select, rc, out);
  copy_text(text, n, out);
}

/* The first lines of a text, on one line, for messages (four buffers in
 * turn: a message may show several). */
static inline const char *oneline(const char *text)
{
  static char bufs[4][300];
  static int turn;
  char *s = bufs[turn++ % 4];
  copy_text(s, sizeof bufs[0], text);
  for (char *p = s; *p; p++)
    if (*p == '\n')
      *p = ' ';
  return s;
}

#endif
