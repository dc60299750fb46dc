/*
 * log.h: one-line log messages to stderr, prefixed with time and role.
 * Roles run in the background with stderr in a log file (cluster.c).
 */
#ifndef AURALOG_LOG_H
#define AURALOG_LOG_H

void log_role(const char *role);
/* Quiet 1: drop info lines, keep warnings (the SQLite extension in a
 * user's shell); 2: drop warnings too (the simulator, whose many cores'
 * warnings are its runs' business); 0: everything. */
void log_quiet(int quiet);
void logf_(const char *level, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
#define loginfo(...) logf_("info", __VA_ARGS__)
#define logwarn(...) logf_("warn", __VA_ARGS__)

/* Print "auralog: <message>" to stderr (a command's one-line error). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Milliseconds on a monotonic clock. */
unsigned long long now_ms(void);

#endif
