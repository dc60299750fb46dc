/*
 * lab_expect.h: checks for the implement labs' graded tests (labs 20-25,
 * src/lab/impl.c) that fail in words a student can act on: what was found,
 * what was expected, and the paper's rule it breaks, never cmocka's bare
 * `0 != 0x3`.
 *
 *   lab_rule("§4.2.1: the SCL is the highest LSN below which every "
 *            "record is held");             once per test (or per part)
 *   lab_at("after adding %zu records (last %llu)", k, lsn);   optional context
 *   expect_eq(s.scl, want, "scl");          the found value first
 *   expect_true(adopt, "record %llu is adopted", lsn);
 *
 * fails with
 *
 *   after adding 7 records (last 22): scl 22, expected 40 — §4.2.1: the
 *   SCL is the highest LSN below which every record is held
 *
 * The context lab_at sets lasts until the next lab_at or lab_rule
 * (lab_at("") clears it). Values are printed as unsigned numbers, or
 * negative ones when they are (an index of -1).
 *
 * A randomized graded test takes its seed from lab_seed(DEFAULT): the
 * default, or one derived from AURALOG_TEST_SEED when it is set, so that
 * the instructor's grade (`lab grade --submission` sets it from the
 * student's id) runs each student on cases of their own, and a student
 * replays any of them. A failure after lab_seed says how:
 *
 *   ... — §4.1: ... (test seed AURALOG_TEST_SEED=1234567; replay:
 *   AURALOG_TEST_SEED=1234567 build/tests/unit_quorum)
 */
#ifndef AURALOG_TEST_LAB_EXPECT_H
#define AURALOG_TEST_LAB_EXPECT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static char lab_rule_[512];
static char lab_at_[512];
static char lab_seed_[64];     /* AURALOG_TEST_SEED's value, once a test has used it */

/* The seed of a randomized test: dflt without AURALOG_TEST_SEED (a
 * student's own `make grade`: the same cases every run), else a mix of
 * dflt and its value (a different stream for each test that asks). */
static inline uint64_t lab_seed(uint64_t dflt)
{
  const char *e = getenv("AURALOG_TEST_SEED");
  if (e == NULL || *e == 0)
    return dflt;
  char *end;
  uint64_t v = strtoull(e, &end, 10);
  if (*end != 0) {
    print_error("ERROR: AURALOG_TEST_SEED=%s is not a number\n", e);
    _fail(__FILE__, __LINE__);
  }
  snprintf(lab_seed_, sizeof lab_seed_, "%llu", (unsigned long long)v);
  uint64_t z = v * 0x9e3779b97f4a7c15ull + dflt;     /* splitmix64's finalizer */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) >> 1;                        /* room for seed + i */
}

/* " (test seed ...; replay: ...)" after a failure's words, when seeded. */
static inline const char *lab_seed_words_(char *out, size_t n)
{
  char exe[512] = "unit_...";
  out[0] = 0;
  if (lab_seed_[0] == 0)
    return out;
  FILE *f = fopen("/proc/self/cmdline", "r");   /* argv[0], NUL-ended */
  if (f) {
    size_t len = fread(exe, 1, sizeof exe - 1, f);
    exe[len] = 0;
    fclose(f);
  }
  const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
  snprintf(out, n, " (test seed AURALOG_TEST_SEED=%s; replay: AURALOG_TEST_SEED=%s "
           "build/tests/%.60s)", lab_seed_, lab_seed_, base);
  return out;
}

static inline void lab_rule(const char *rule)
{
  snprintf(lab_rule_, sizeof lab_rule_, "%s", rule);
  lab_at_[0] = 0;
  lab_seed_[0] = 0;            /* a new test: seeded again only if it calls lab_seed */
}

__attribute__((format(printf, 1, 2))) static inline void lab_at(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lab_at_, sizeof lab_at_, fmt, ap);
  va_end(ap);
}

/* "NAME" with the context before it, as the message's start. */
static inline void lab_what_(char *out, size_t n, const char *fmt, va_list ap)
{
  char what[512];
  vsnprintf(what, sizeof what, fmt, ap);
  snprintf(out, n, "%s%s%s", lab_at_, lab_at_[0] ? ": " : "", what);
}

static inline void lab_num_(char *out, size_t n, uint64_t v)
{
  if (v > (uint64_t)INT64_MAX)
    snprintf(out, n, "%lld", (long long)v);
  else
    snprintf(out, n, "%llu", (unsigned long long)v);
}

#define expect_eq(found, expected, ...) \
  lab_expect_eq_(__FILE__, __LINE__, (uint64_t)(found), (uint64_t)(expected), __VA_ARGS__)
#define expect_true(cond, ...) lab_expect_true_(__FILE__, __LINE__, !!(cond), __VA_ARGS__)

__attribute__((format(printf, 5, 6))) static inline void
lab_expect_eq_(const char *file, int line, uint64_t found, uint64_t expected, const char *fmt, ...)
{
  if (found == expected)
    return;
  char what[1100], f[32], e[32];
  va_list ap;
  va_start(ap, fmt);
  lab_what_(what, sizeof what, fmt, ap);
  va_end(ap);
  lab_num_(f, sizeof f, found);
  lab_num_(e, sizeof e, expected);
  char sw[320];
  print_error("ERROR: %s %s, expected %s%s%s%s\n", what, f, e, lab_rule_[0] ? " — " : "",
              lab_rule_, lab_seed_words_(sw, sizeof sw));
  _fail(file, line);
}

/* cond must hold; fmt says what it is ("record 9 is not adopted"). */
__attribute__((format(printf, 4, 5))) static inline void
lab_expect_true_(const char *file, int line, int cond, const char *fmt, ...)
{
  if (cond)
    return;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char sw[320];
  print_error("ERROR: %s%sexpected %s, but it is not so%s%s%s\n", lab_at_, lab_at_[0] ? ": " : "",
              what, lab_rule_[0] ? " — " : "", lab_rule_, lab_seed_words_(sw, sizeof sw));
  _fail(file, line);
}

#endif
