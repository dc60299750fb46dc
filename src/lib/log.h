/*
 * log.h: one-line log messages to stderr, prefixed with time and role.
 * Roles run in the background with stderr in a log file (cluster.c).
 *
 * Rate-limited messages. A message that can come once per group commit,
 * per frame or per reconnect (a node whose disk is full fails every
 * commit: 9,000 lines in 90 s) buries everything else in the log. Such a
 * call site says logwarn_rl instead of logwarn: its first message is
 * printed; the same message again within LOG_RL_MS is only counted, and
 * the count is printed once, when the window ends or the site's message
 * changes:
 *
 *   12:00:01.003 A1 warn: disk full (0 bytes free on /d) while committing ...
 *   12:00:11.010 A1 warn: disk full (0 bytes free on /d) while committing ...
 *                (repeated 8,999 times in the last 10 s)
 *
 * (one line; folded here). While the message goes on, one such line per
 * window; after a window without it, the next one is printed again. A
 * site whose message keeps changing (a peer's address in it, say) prints
 * at most LOG_RL_BURST different ones per window and counts the rest.
 *
 * Each call site keeps its own state (a static struct logrl the macro
 * declares), so two sites never hide each other's messages. The counts
 * come out at the next message from the same site, at log_tick (a role
 * calls it from a timer), or at exit. Thread-safe: the engine logs from
 * its SQLite and I/O threads.
 *
 * The clock is an argument (logrl_, log_tick, log_flush take now in ms),
 * so tests drive windows with a fake one; the macros pass now_ms().
 */
#ifndef AURALOG_LOG_H
#define AURALOG_LOG_H

#include <stdio.h>

void log_role(const char *role);
/* Quiet 1: drop info lines, keep warnings (the SQLite extension in a
 * user's shell); 2: drop warnings too (the simulator, whose many cores'
 * warnings are its runs' business); 0: everything. */
void log_quiet(int quiet);
/* Where log lines go: stderr unless told (a test reads them back). */
void log_output(FILE *f);
void logf_(const char *level, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
#define loginfo(...) logf_("info", __VA_ARGS__)
#define logwarn(...) logf_("warn", __VA_ARGS__)

/* One call site's state, for the rate-limited messages (see the top). */
#define LOG_RL_LINE 512          /* a message longer than this is cut */
struct logrl {
  const char *file;
  int line;
  struct logrl *next;            /* every site that has logged (log_tick) */
  int listed;
  const char *level;
  unsigned long long start;      /* the window began (ms) */
  unsigned printed;              /* different messages printed in it */
  unsigned long long repeats;    /* last[] again, not printed */
  unsigned long long others;     /* other messages past the budget, not printed */
  char last[LOG_RL_LINE];        /* the last message printed */
  char other[LOG_RL_LINE];       /* the last one counted in others */
};
#define LOGRL_SITE {__FILE__, __LINE__}

void logrl_(struct logrl *site, unsigned long long now, const char *level,
            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define logwarn_rl(...) do {                                  \
    static struct logrl rl_site_ = LOGRL_SITE;                \
    logrl_(&rl_site_, now_ms(), "warn", __VA_ARGS__);         \
  } while (0)
#define loginfo_rl(...) do {                                  \
    static struct logrl rl_site_ = LOGRL_SITE;                \
    logrl_(&rl_site_, now_ms(), "info", __VA_ARGS__);         \
  } while (0)

/* Print the counts of every window over by now (a role's timer calls it,
 * a few times a second: it only walks the sites that have logged). */
void log_tick(unsigned long long now);
/* Print every count not printed yet, window over or not (at exit). */
void log_flush(unsigned long long now);

/* Print "auralog: <message>" to stderr (a command's one-line error). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Milliseconds on a monotonic clock. */
unsigned long long now_ms(void);
/* Monotonic microseconds (CLOCK_MONOTONIC: one clock for every process of
 * this machine, which the commit stage timings rely on). */
unsigned long long now_us(void);

#endif
