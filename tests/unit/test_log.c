/*
 * test_log.c: rate-limited log messages (lib/log.h), on a fake clock.
 *
 * Checks that a message repeated 9,000 times in a window is printed once,
 * then once more as "(repeated 8,999 times in the last 10 s)" when the
 * window ends; that a condition lasting 90 s costs one line per window
 * and that printed plus counted is always every message (nothing lost,
 * nothing counted twice); that a change of message says how often the old
 * one came before printing the new one; that after a window without the
 * message it is printed afresh; that a site whose message keeps changing
 * prints at most LOG_RL_BURST of them per window and counts the rest; that
 * two sites never hide each other's messages; that log_flush prints what
 * is pending; that quiet levels drop rate-limited lines as plain ones;
 * that a clock read late by another thread does not end a window; and
 * that two threads on one site lose no count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/log.h"
#include "param.h"

static char *buf;
static size_t len;
static FILE *mem;

static int setup(void **state)
{
  (void)state;
  mem = open_memstream(&buf, &len);
  assert_non_null(mem);
  log_output(mem);
  log_quiet(0);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  log_output(NULL);
  fclose(mem);
  free(buf);
  buf = NULL;
  mem = NULL;
  return 0;
}

/* What was logged so far. */
static const char *logged(void)
{
  fflush(mem);
  return buf ? buf : "";
}

static int nlines(void)
{
  int n = 0;
  for (const char *p = logged(); *p; p++)
    n += *p == '\n';
  return n;
}

static int has(const char *s)
{
  return strstr(logged(), s) != NULL;
}

/* A number as the log writes it ("8,999"). */
static unsigned long long num(const char *p)
{
  unsigned long long n = 0;
  for (; (*p >= '0' && *p <= '9') || *p == ','; p++)
    if (*p != ',')
      n = n * 10 + (unsigned long long)(*p - '0');
  return n;
}

/* How many messages holding msg the log accounts for: a printed line is
 * one, a summary line its count. */
static unsigned long long accounted(const char *msg)
{
  unsigned long long total = 0;
  const char *p = logged();
  while (*p) {
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    if (strstr(line, msg)) {
      const char *r = strstr(line, "(repeated "), *o = strstr(line, "(the last of ");
      total += r ? num(r + 10) : o ? num(o + 13) : 1;
    }
    p += n + (end != NULL);
  }
  return total;
}

/* ---- tests -------------------------------------------------------------------- */

static void test_repeats_printed_once_with_a_count(void **state)
{
  (void)state;
  static struct logrl site = LOGRL_SITE;
  unsigned long long t0 = 1000000;
  for (int i = 0; i < 9000; i++)
    logrl_(&site, t0 + (unsigned long long)i, "warn", "disk full (%d bytes free on %s)", 0, "/d");
  assert_int_equal(nlines(), 1);
  assert_true(has(" warn: disk full (0 bytes free on /d)\n"));
  log_tick(t0 + LOG_RL_MS - 1);
  assert_int_equal(nlines(), 1);              /* the window is not over */
  log_tick(t0 + LOG_RL_MS);
  assert_int_equal(nlines(), 2);
  assert_true(has("warn: disk full (0 bytes free on /d) (repeated 8,999 times in the last 10 s)\n"));
  assert_int_equal(accounted("disk full"), 9000);
}

static void test_a_lasting_condition_costs_a_line_per_window(void **state)
{
  (void)state;
  static struct logrl site = LOGRL_SITE;
  unsigned long long t0 = 2000000, t = t0;
  /* A group commit every 10 ms for 90 s, all failing; the role's timer
   * ticks every 200 ms. */
  int n = 0;
  for (; t < t0 + 90000; t += 10) {
    logrl_(&site, t, "warn", "disk full while committing records");
    n++;
    if ((t - t0) % 200 == 0)
      log_tick(t);
  }
  log_flush(t);
  assert_int_equal(n, 9000);
  assert_true(nlines() <= 1 + 90000 / LOG_RL_MS + 1);
  assert_int_equal(accounted("disk full while committing records"), 9000);
  /* Every summary but the last covers a whole window. */
  assert_true(has("(repeated 1,000 times in the last 10 s)"));
}

static void test_a_new_message_says_how_often_the_old_came(void **state)
{
  (void)state;
  static struct logrl site = LOGRL_SITE;
  unsigned long long t0 = 3000000;
  logrl_(&site, t0, "warn", "peer %s: refused", "A1");
  logrl_(&site, t0 + 100, "warn", "peer %s: refused", "A1");
  logrl_(&site, t0 + 3000, "warn", "peer %s: refused", "A1");
  logrl_(&site, t0 + 3000, "warn", "peer %s: refused", "B1");
  const char *want =
    " warn: peer A1: refused\n"
    " warn: peer A1: refused (repeated 2 times in the last 3 s)\n"
    " warn: peer B1: refused\n";
  /* The three lines, in this order (each after its time prefix). */
  const char *p = logged();
  for (const char *w = want; *w; ) {
    const char *nl = strchr(w, '\n');
    char one[128];
    snprintf(one, sizeof one, "%.*s", (int)(nl - w + 1), w);
    p = strstr(p, one);
    if (p == NULL)
      fail_msg("missing, or out of order: '%s' in:\n%s", one, logged());
    p += strlen(one);
    w = nl + 1;
  }
  assert_int_equal(nlines(), 3);
  /* Back to A1: printed (B1 came only once: no summary for it). */
  logrl_(&site, t0 + 3001, "warn", "peer %s: refused", "A1");
  assert_int_equal(nlines(), 4);
  log_flush(t0 + 3002);
  assert_int_equal(nlines(), 4);
}

static void test_after_a_quiet_window_it_is_printed_again(void **state)
{
  (void)state;
  static struct logrl site = LOGRL_SITE;
  unsigned long long t0 = 4000000;
  logrl_(&site, t0, "warn", "node down");
  logrl_(&site, t0 + 1, "warn", "node down");
  log_tick(t0 + LOG_RL_MS);                   /* summary; the window goes on */
  assert_int_equal(nlines(), 2);
  logrl_(&site, t0 + LOG_RL_MS + 5, "warn", "node down");
  assert_int_equal(nlines(), 2);              /* still counted: it lasts */
  log_tick(t0 + 2 * LOG_RL_MS);
  assert_int_equal(nlines(), 3);
  assert_true(has("node down (repeated 1 time in the last 10 s)"));
  log_tick(t0 + 3 * LOG_RL_MS);               /* a window without it: closed */
  assert_int_equal(nlines(), 3);
  logrl_(&site, t0 + 3 * LOG_RL_MS + 7, "warn", "node down");
  assert_int_equal(nlines(), 4);              /* printed afresh */
  assert_int_equal(accounted("node down"), 4);

  /* Without a timer, the next message ends the window: the count comes
   * out, true to the time it covers. */
  static struct logrl late = LOGRL_SITE;
  logrl_(&late, t0, "warn", "late");
  logrl_(&late, t0 + 1, "warn", "late");
  logrl_(&late, t0 + 3600000, "warn", "late");
  assert_true(has("late (repeated 1 time in the last 3600 s)"));
  assert_int_equal(accounted("late"), 3);
}

static void test_a_changing_message_is_limited_per_window(void **state)
{
  (void)state;
  static struct logrl site = LOGRL_SITE;
  unsigned long long t0 = 5000000;
  for (int i = 0; i < 100; i++)
    logrl_(&site, t0 + (unsigned long long)i, "warn", "frame from 10.0.0.%d refused", i);
  assert_int_equal(nlines(), LOG_RL_BURST);
  log_tick(t0 + LOG_RL_MS);
  assert_int_equal(nlines(), LOG_RL_BURST + 1);
  char want[160];
  snprintf(want, sizeof want, "frame from 10.0.0.99 refused (the last of %d messages from %s:",
           100 - LOG_RL_BURST, site.file);
  if (!has(want))
    fail_msg("no '%s' in:\n%s", want, logged());
  assert_int_equal(accounted("refused"), 100);
}

static void test_sites_are_independent(void **state)
{
  (void)state;
  static struct logrl a = LOGRL_SITE, b = LOGRL_SITE;
  unsigned long long t0 = 6000000;
  for (int i = 0; i < 10; i++) {
    logrl_(&a, t0 + (unsigned long long)i, "warn", "same words");
    logrl_(&b, t0 + (unsigned long long)i, "info", "same words");
  }
  assert_int_equal(nlines(), 2);
  assert_true(has(" warn: same words\n"));
  assert_true(has(" info: same words\n"));
  /* And the macro: one site per call site, the real clock. */
  for (int i = 0; i < 3; i++)
    logwarn_rl("from the macro %d", 7);
  assert_int_equal(nlines(), 3);
  log_flush(now_ms());
  assert_true(has("from the macro 7 (repeated 2 times in the last "));
}

static void test_quiet_drops_them_as_plain_lines(void **state)
{
  (void)state;
  static struct logrl w = LOGRL_SITE, i = LOGRL_SITE;
  log_quiet(1);
  logrl_(&i, 7000000, "info", "dropped");
  logrl_(&w, 7000000, "warn", "kept");
  assert_int_equal(nlines(), 1);
  log_quiet(2);
  logrl_(&w, 7000001, "warn", "kept again");
  logwarn("plain");
  assert_int_equal(nlines(), 1);
  log_quiet(0);
  logwarn("plain");
  assert_int_equal(nlines(), 2);
}

static void test_a_clock_read_late_ends_no_window(void **state)
{
  (void)state;
  static struct logrl site = LOGRL_SITE;
  unsigned long long t0 = 8000000;
  logrl_(&site, t0, "warn", "x");
  /* Another thread read the clock before the first message took the lock. */
  logrl_(&site, t0 - 5, "warn", "x");
  log_tick(t0 - 10);
  assert_int_equal(nlines(), 1);
  log_tick(t0 + LOG_RL_MS);
  assert_int_equal(nlines(), 2);
  assert_true(has("x (repeated 1 time in the last 10 s)"));
}

static struct logrl shared = LOGRL_SITE;

static void *hammer(void *arg)
{
  (void)arg;
  for (int i = 0; i < 20000; i++)
    logrl_(&shared, 9000000 + (unsigned long long)i, "warn", "from two threads");
  return NULL;
}

static void test_two_threads_lose_no_count(void **state)
{
  (void)state;
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  log_flush(9000000 + 20000);
  assert_int_equal(accounted("from two threads"), 40000);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_repeats_printed_once_with_a_count, setup, teardown),
    cmocka_unit_test_setup_teardown(test_a_lasting_condition_costs_a_line_per_window, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_a_new_message_says_how_often_the_old_came, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_after_a_quiet_window_it_is_printed_again, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_a_changing_message_is_limited_per_window, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_sites_are_independent, setup, teardown),
    cmocka_unit_test_setup_teardown(test_quiet_drops_them_as_plain_lines, setup, teardown),
    cmocka_unit_test_setup_teardown(test_a_clock_read_late_ends_no_window, setup, teardown),
    cmocka_unit_test_setup_teardown(test_two_threads_lose_no_count, setup, teardown),
  };
  return cmocka_run_group_tests_name("unit: log", tests, NULL, NULL);
}
