/*
 * Integration: every implement lab's grader catches plausible wrong
 * implementations. the patches in labs/mutants/labNN/ are such bodies (an
 * off-by-one, a missed truncation, `if` for `while`, ...; the README
 * there says what each one is); this test proves that each loses points,
 * and that the reference, built the same way, loses none.
 *
 * For each patch it copies only the patched file into a scratch tree,
 * applies the patch, compiles that one file to an object and links the
 * lab's unit-test binaries with that object ahead of build/libauralog.a
 * (the archive's own member for the file is then never pulled in). It runs
 * them as the grader does (cmocka's TAP output; each test the lab's table
 * in src/lab/impl.c lists earns its points if it printed "ok"). Only when
 * every graded test passes does it link an auralog binary the same way and
 * run the lab's simulator ranges, each until its first failing seed, as
 * `auralog lab grade` does. A mutant that keeps every point fails the test.
 *
 * A fresh handout's stubs (lab/handout.c), built the same way, must score
 * 0 on every listed unit test, the hidden ones (tests/hidden) included:
 * impl.c lists only tests a stub fails; the reference passes them all. A
 * mutant must lose points a student can see: on the visible tests or
 * the sims, never only on the hidden tests.
 *
 * It prints one line per mutant with its points. By default, to stay
 * cheap, a mutant that already lost unit points is not run against the
 * simulator ("sims not run": its score is at most what is printed);
 * AURALOG_MUTANTS_FULL=1 (make torture) runs every range of every mutant
 * and prints its whole score. AURALOG_MUTANTS_LAB=N checks lab N only.
 * About 30 s on two cores by default (every mutant of every lab; none
 * reaches the simulator), 40-50 minutes with AURALOG_MUTANTS_FULL=1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab/impl.h"

/* The libraries the tree links with (the Makefile's PKGS and PKG_LIBS). */
#define PKGS "libuv libprotobuf-c lmdb libcjson libxxhash sqlite3 libgvc libsodium libcurl libxml-2.0"
#define LIBS "$(pkg-config --libs " PKGS ") -lhttp_parser -lpthread -lm"
#define SEED_LIMIT_S 60

static char root[PATH_MAX];    /* this tree */
static char bdir[PATH_MAX];    /* its build directory: build/ or build-san/ */
static char work[PATH_MAX];    /* scratch: test objects, one tree per mutant */
static char cflags[3 * PATH_MAX];
static int full;

static int sh(const char *fmt, ...)
{
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  return system(cmd);
}

static int setup(void **state)
{
  (void)state;
  char self[PATH_MAX];
  const char *b = getenv("AURALOG_BIN");
  if (b == NULL || realpath(b, self) == NULL)
    return -1;
  snprintf(bdir, sizeof bdir, "%s", self);
  *strrchr(bdir, '/') = 0;
  snprintf(root, sizeof root, "%s", bdir);
  *strrchr(root, '/') = 0;
  full = getenv("AURALOG_MUTANTS_FULL") && atoi(getenv("AURALOG_MUTANTS_FULL"));
  /* The flags the tree is built with; a sanitized build links so. */
  int san = strstr(bdir, "build-san") != NULL;
  snprintf(cflags, sizeof cflags,
           "-std=gnu11 -O1 -w -I%s/src -I%s/gen %s $(pkg-config --cflags " PKGS ")", root,
           bdir, san ? "-fsanitize=address,undefined -fno-omit-frame-pointer" : "");
  snprintf(work, sizeof work, "/tmp/auralog-mutants-%d", (int)getpid());
  return sh("rm -rf %s && mkdir -p %s/obj", work, work);
}

static int teardown(void **state)
{
  (void)state;
  if (work[0])
    sh("rm -rf %s", work);
  return 0;
}

/* The file a patch changes: its "+++ b/PATH" line. */
static int patched_file(const char *patch, char *out, size_t n)
{
  FILE *f = fopen(patch, "r");
  char line[1024];
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f))
    if (strncmp(line, "+++ b/", 6) == 0) {
      line[strcspn(line, "\t\n")] = 0;
      snprintf(out, n, "%s", line + 6);
      found = 1;
    }
  if (f)
    fclose(f);
  return found;
}

/* The mutant's first line: "mutant NAME of lab N: what it does". */
static void what_of(const char *patch, char *out, size_t n)
{
  FILE *f = fopen(patch, "r");
  out[0] = 0;
  if (f && fgets(out, (int)n, f))
    out[strcspn(out, "\n")] = 0;
  if (f)
    fclose(f);
  char *colon = strstr(out, ": ");
  if (colon)
    memmove(out, colon + 2, strlen(colon + 2) + 1);
}

/* Did test `name` print "ok" in the TAP log? */
static int tap_ok(const char *log, const char *name)
{
  FILE *f = fopen(log, "r");
  char line[4096], *at;
  int ok = 0;
  size_t len = strlen(name);
  while (f && fgets(line, sizeof line, f))
    if ((at = strstr(line, " - ")) != NULL && strncmp(at + 3, name, len) == 0 &&
        (at[3 + len] == '\n' || at[3 + len] == 0))
      ok = strncmp(line, "ok ", 3) == 0;
  if (f)
    fclose(f);
  return ok;
}

struct score {
  int unit, unit_total, sim, sim_total;
  int hidden, hidden_total;    /* the hidden unit tests (grade's hidden) */
  int sims_run;
  char lost[1024];             /* the tests and ranges that lost points */
};

static void lost(struct score *s, const char *fmt, const char *a, int b)
{
  size_t len = strlen(s->lost);
  snprintf(s->lost + len, sizeof s->lost - len, fmt, a, b);
}

/* Grade the tree dir whose one changed file was compiled to dir/m.o (or,
 * with obj NULL, the reference archive alone). With hidden, the
 * instructor's hidden unit tests count too (s->hidden, s->hidden_total):
 * the reference must pass them and a stub fail them, as impl.c says; a
 * mutant is graded on what a student sees (visible tests and sims). */
static void grade(const struct impl_lab *l, const char *dir, const char *obj, struct score *s,
                  int sims, int hidden)
{
  memset(s, 0, sizeof *s);
  const char *done[16];
  int nd = 0;
  for (const struct impl_test *u = l->tests; u->name; u++) {
    if (u->hidden && !hidden)
      continue;               /* the instructor's (submit.c): not in impl_points */
    if (u->hidden)
      s->hidden_total += u->points;
    else
      s->unit_total += u->points;
    int seen = 0;
    for (int i = 0; i < nd; i++)
      seen |= strcmp(done[i], u->bin) == 0;
    if (!seen && nd < 16) {
      done[nd++] = u->bin;
      char o[PATH_MAX + 64];
      snprintf(o, sizeof o, "%s/obj/test_%s.o", work, u->bin);
      /* unit_hidden_X: tests/hidden/test_X.c (the Makefile's rule) */
      int h = strncmp(u->bin, "hidden_", 7) == 0;
      if (access(o, R_OK) != 0)
        assert_int_equal(sh("cc %s -I%s/tests/unit -c -o %s %s/tests/%s/test_%s.c", cflags, root,
                            o, root, h ? "hidden" : "unit", h ? u->bin + 7 : u->bin), 0);
      assert_int_equal(sh("cc %s -o %s/unit_%s %s %s %s/libauralog.a " LIBS " -lcmocka", cflags,
                          dir, u->bin, o, obj ? obj : "", bdir), 0);
      sh("cd %s && CMOCKA_MESSAGE_OUTPUT=TAP timeout 120 ./unit_%s > unit_%s.log 2>&1", dir,
         u->bin, u->bin);
    }
    char log[PATH_MAX + 64];
    snprintf(log, sizeof log, "%s/unit_%s.log", dir, u->bin);
    if (tap_ok(log, u->name))
      *(u->hidden ? &s->hidden : &s->unit) += u->points;
    else
      lost(s, u->hidden ? " %s(-%d, hidden)" : " %s(-%d)", u->name, u->points);
  }
  for (const struct impl_sim *r = l->sims; r->points; r++)
    if (!r->hidden)
      s->sim_total += r->points;
  if (!sims || (s->unit < s->unit_total && !full))
    return;
  s->sims_run = 1;
  if (l->sims[0].points)
    assert_int_equal(sh("cc -o %s/auralog %s/obj/src/main.o %s %s/libauralog.a " LIBS "%s", dir,
                        bdir, obj ? obj : "", bdir,
                        strstr(cflags, "sanitize") ? " -fsanitize=address,undefined" : ""), 0);
  for (const struct impl_sim *r = l->sims; r->points; r++) {
    if (r->hidden)
      continue;               /* offsets from a student's own base (impl.h) */
    unsigned bad = 0;
    for (unsigned seed = r->first; seed <= r->last && !bad; seed++)
      if (sh("cd %s && timeout %d ./auralog sim --seed %u%s%s > sim.log 2>&1", dir,
             SEED_LIMIT_S, seed, r->faults ? " --faults " : "", r->faults ? r->faults : "") != 0)
        bad = seed;
    if (bad) {
      char what[64];
      snprintf(what, sizeof what, "seed %u", bad);
      lost(s, " sims(%s: -%d)", what, r->points);
    } else {
      s->sim += r->points;
    }
  }
}

static void check_lab(int n)
{
  const char *only = getenv("AURALOG_MUTANTS_LAB");
  if (only && atoi(only) != n)
    skip();
  const struct impl_lab *l = NULL;
  for (size_t i = 0; i < impl_nlabs; i++)
    if (impl_labs[i].n == n)
      l = &impl_labs[i];
  assert_non_null(l);
  int total = impl_points(l);

  /* The reference, built the same way, keeps every point (its unit
   * tests; its seeds too with AURALOG_MUTANTS_FULL: test_grade.c checks
   * the first of each range). */
  char dir[PATH_MAX + 320];
  snprintf(dir, sizeof dir, "%s/lab%02d-reference", work, n);
  assert_int_equal(sh("mkdir -p %s", dir), 0);
  struct score ref;
  grade(l, dir, NULL, &ref, full, 1);
  printf("lab %d reference: %d/%d%s, hidden unit tests %d/%d\n", n,
         ref.unit + ref.sim + (ref.sims_run ? 0 : ref.sim_total), total,
         ref.sims_run ? "" : " (its sims not run)", ref.hidden, ref.hidden_total);
  if (ref.unit + ref.sim + (ref.sims_run ? 0 : ref.sim_total) != total ||
      ref.hidden != ref.hidden_total)
    fail_msg("lab %d: the reference itself loses points:%s", n, ref.lost);

  /* A fresh handout's stubs score 0 on every listed unit test (impl.c's
   * rule: a test that a stub passes gives points for nothing). */
  snprintf(dir, sizeof dir, "%s/lab%02d-stub", work, n);
  char objs[4 * PATH_MAX] = "", files[512];
  snprintf(files, sizeof files, "%s", l->files);
  for (char *save = NULL, *f = strtok_r(files, ", ", &save); f; f = strtok_r(NULL, ", ", &save)) {
    char in[PATH_MAX * 2], out[PATH_MAX * 2], why[256];
    snprintf(in, sizeof in, "%s/%s", root, f);
    snprintf(out, sizeof out, "%s/%s", dir, f);
    assert_int_equal(sh("mkdir -p $(dirname %s)", out), 0);
    FILE *fi = fopen(in, "r"), *fo = fopen(out, "w");
    assert_non_null(fi);
    assert_non_null(fo);
    int k = handout_file(fi, fo, n, f, NULL, why, sizeof why);
    fclose(fi);
    fclose(fo);
    if (k <= 0)
      fail_msg("lab %d: %s has no body to stub: %s", n, f, k < 0 ? why : "no LAB markers");
    size_t ol = strlen(objs);
    snprintf(objs + ol, sizeof objs - ol, " %s.o", out);
    if (sh("cc %s -c -o %s.o %s", cflags, out, out) != 0)
      fail_msg("lab %d: the handout's %s does not compile", n, f);
  }
  struct score stub;
  grade(l, dir, objs, &stub, 0, 1);
  printf("lab %d stubs (a fresh handout): unit %d/%d, hidden unit %d/%d\n", n, stub.unit,
         stub.unit_total, stub.hidden, stub.hidden_total);
  if (stub.unit + stub.hidden != 0)
    fail_msg("lab %d: a fresh handout's stubs earn %d unit points: list only tests a stub fails",
             n, stub.unit);

  char mdir[PATH_MAX + 64];
  snprintf(mdir, sizeof mdir, "%s/labs/mutants/lab%02d", root, n);
  struct dirent **ents;
  int ne = scandir(mdir, &ents, NULL, alphasort), nm = 0, kept = 0;
  char keeps[2048] = "";
  for (int i = 0; i < ne; i++) {
    const char *e = ents[i]->d_name;
    size_t len = strlen(e);
    if (len < 7 || strcmp(e + len - 6, ".patch") != 0)
      continue;
    char patch[PATH_MAX * 2], file[PATH_MAX], name[256], what[512];
    snprintf(patch, sizeof patch, "%s/%s", mdir, e);
    snprintf(name, sizeof name, "%.*s", (int)(len - 6), e);
    what_of(patch, what, sizeof what);
    if (!patched_file(patch, file, sizeof file))
      fail_msg("%s: no '+++ b/FILE' line: not a patch", patch);
    snprintf(dir, sizeof dir, "%s/lab%02d-%s", work, n, name);
    if (sh("mkdir -p %s/$(dirname %s) && cp %s/%s %s/%s && patch -s -p1 -d %s < %s", dir, file,
           root, file, dir, file, dir, patch) != 0)
      fail_msg("lab %d mutant %s: the patch no longer applies to %s (regenerate it: "
               "labs/mutants/regen.py)", n, name, file);
    char obj[PATH_MAX + 400];
    snprintf(obj, sizeof obj, "%s/m.o", dir);
    if (sh("cc %s -c -o %s %s/%s", cflags, obj, dir, file) != 0)
      fail_msg("lab %d mutant %s: %s does not compile", n, name, file);
    struct score s;
    grade(l, dir, obj, &s, 1, 0);
    /* Without its sims, a mutant's score is at most its unit points and
     * every sim point. */
    int got = s.unit + (s.sims_run ? s.sim : s.sim_total);
    int sure = s.sims_run || !s.sim_total;
    printf("lab %d %-22s %s%3d/%d%s  %s\n      lost:%s\n", n, name, sure ? "" : "at most ",
           got, total, sure ? "" : " (sims not run)", what,
           s.lost[0] ? s.lost : " nothing");
    fflush(stdout);
    nm++;
    if (got == total) {
      kept++;
      size_t kl = strlen(keeps);
      snprintf(keeps + kl, sizeof keeps - kl, " %s", name);
    }
    sh("rm -rf %s", dir);
  }
  for (int i = 0; i < ne; i++)
    free(ents[i]);
  free(ne > 0 ? ents : NULL);
  if (nm < 5)
    fail_msg("lab %d has %d mutants in %s; it needs at least five", n, nm, mdir);
  if (kept)
    fail_msg("lab %d: %d mutant(s) keep full points:%s", n, kept, keeps);
}

static void lab20_mutants_lose_points(void **state) { (void)state; check_lab(20); }
static void lab21_mutants_lose_points(void **state) { (void)state; check_lab(21); }
static void lab22_mutants_lose_points(void **state) { (void)state; check_lab(22); }
static void lab23_mutants_lose_points(void **state) { (void)state; check_lab(23); }
static void lab24_mutants_lose_points(void **state) { (void)state; check_lab(24); }
static void lab25_mutants_lose_points(void **state) { (void)state; check_lab(25); }

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(lab20_mutants_lose_points),
    cmocka_unit_test(lab21_mutants_lose_points),
    cmocka_unit_test(lab22_mutants_lose_points),
    cmocka_unit_test(lab23_mutants_lose_points),
    cmocka_unit_test(lab24_mutants_lose_points),
    cmocka_unit_test(lab25_mutants_lose_points),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
