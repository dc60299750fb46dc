/*
 * Unit: a submission's lab bodies (src/lab/submit_body.c), as the
 * instructor's grader takes them: out of a student's file by its markers,
 * checked, and into the instructor's file.
 *
 *  - every reference body, and every handout stub, passes the check (run
 *    from the tree's root, as make test does: it reads src/);
 *  - a body that could make the instructor's tests report a pass without
 *    doing the work is refused with a line saying where and why: exit,
 *    printing, #define, a '}' that leaves the function, an attribute,
 *    a line splice, digraphs, extern, an unclosed comment;
 *  - fields named like calls (s->read) are fine;
 *  - markers out of place are one-line errors naming the line;
 *  - splicing puts the bodies in, keeps the instructor's comments, and
 *    refuses a different number of bodies;
 *  - the fingerprint ignores layout and comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/impl.h"
#include "lab/submit.h"

static char why[4096];

static int extract_str(const char *text, int lab, struct bodies *b)
{
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  int k = body_extract(f, lab, "x.c", b, why, sizeof why);
  fclose(f);
  return k;
}

/* The files of every lab, reference and handout: all bodies pass. */
static void reference_bodies_and_stubs_pass_the_check(void **state)
{
  (void)state;
  if (access("src/lab/impl.c", R_OK) != 0)
    skip();                 /* not run from the tree's root */
  int seen = 0;
  for (size_t i = 0; i < impl_nlabs; i++) {
    char list[256], *save = NULL;
    snprintf(list, sizeof list, "%s", impl_labs[i].files);
    for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
      for (int stub = 0; stub < 2; stub++) {
        FILE *f = fopen(t, "r");
        assert_non_null(f);
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = NULL;
        if (stub) {           /* the handout's version of the file */
          mem = open_memstream(&buf, &len);
          assert_true(handout_file(f, mem, impl_labs[i].n, t, NULL, why, sizeof why) > 0);
          fclose(mem);
          fclose(f);
          f = fmemopen(buf, len, "r");
        }
        struct bodies b;
        int k = body_extract(f, impl_labs[i].n, t, &b, why, sizeof why);
        fclose(f);
        free(buf);
        if (k <= 0)
          fail_msg("lab %d %s: %s", impl_labs[i].n, t, k < 0 ? why : "no bodies");
        for (int j = 0; j < k; j++)
          if (body_lint(b.text[j], t, b.line[j] + 1, why, sizeof why) != 0)
            fail_msg("lab %d %s (%s): %s", impl_labs[i].n, t, stub ? "stub" : "reference",
                     why);
        seen += k;
        bodies_free(&b);
      }
    }
  }
  assert_true(seen >= 2 * 8);    /* 8 bodies in 7 files, twice */
}

static void refused(const char *body, const char *words)
{
  int rc = body_lint(body, "src/x.c", 10, why, sizeof why);
  if (rc == 0)
    fail_msg("accepted: %s", body);
  if (strstr(why, words) == NULL)
    fail_msg("for %s: said \"%s\", not \"%s\"", body, why, words);
  assert_null(strchr(why, '\n'));  /* one line */
  assert_non_null(strstr(why, "src/x.c:"));
}

static void bodies_that_reach_outside_are_refused(void **state)
{
  (void)state;
  refused("  exit(0);\n", "'exit' is not allowed");
  refused("  _exit(0);\n", "'_exit'");
  refused("  printf(\"ok 1 - test_scl_in_order\\n\");\n", "'printf'");
  refused("  return s->scl;\n}\nstatic void f(void) {\n", "closes the function");
  refused("#define violation(...) 0\n", "preprocessor");
  refused("  %:define X 1\n", "preprocessor");
  refused("  <% %> %>\n", "closes the function");
  refused("  ex\\\nit(0);\n", "backslash");
  refused("  extern int cheat;\n", "'extern'");
  refused("  static void __attribute__((constructor)) c(void) {}\n", "'__attribute__'");
  refused("  void *p = __builtin_frame_address(0);\n", "__builtin_frame_address");
  refused("  if (x) {\n", "not closed");
  refused("  /* never closed\n", "comment");
  refused("  const char *s = \"open;\n", "string");
  refused("  fork();\n", "'fork'");
  refused("  system(\"rm -rf ~\");\n", "'system'");
  refused("  (stdout);\n", "'stdout'");
  refused("  pthread_exit(0);\n", "'pthread_exit'");
  refused("  putchar_unlocked('o');\n", "'putchar_unlocked'");
  refused("  char b[8]; snprintf(b, 8, \"x\");\n", "'snprintf'");
  refused("  errx(0, \"ok\");\n", "'errx'");
  /* the line: body line 10 is the first */
  body_lint("  int a = 1;\n  fork();\n", "src/x.c", 10, why, sizeof why);
  assert_non_null(strstr(why, "src/x.c:11:"));
}

static void arithmetic_memory_and_fields_pass(void **state)
{
  (void)state;
  const char *ok =
    "  s->read = 1; q.write = 2; s -> open = 3;\n"
    "  uint64_t n = __builtin_popcountll(x) + sizeof(struct pend);\n"
    "  char c = '}'; const char *t = \"{ # exit \\\" }\"; /* } exit # */ // }\n"
    "  for (size_t i = 0; i < n; i++) { if (i) continue; }\n"
    "  void *p = realloc(q, 16); memmove(p, q, 4); free(p); abort();\n"
    "  return 0x1fULL + 1.5e3;\n";
  if (body_lint(ok, "src/x.c", 1, why, sizeof why) != 0)
    fail_msg("refused: %s", why);
}

static void markers_out_of_place_are_one_line_errors(void **state)
{
  (void)state;
  struct bodies b;
  assert_int_equal(extract_str("a\n  /* LAB 21 END */\n", 21, &b), -1);
  assert_non_null(strstr(why, "x.c:2: LAB 21 END without a BEGIN"));
  assert_int_equal(extract_str("  /* LAB 21 BEGIN: x */\n  code;\n", 21, &b), -1);
  assert_non_null(strstr(why, "x.c:1: LAB 21 BEGIN has no END"));
  assert_int_equal(extract_str("  /* LAB 21 BEGIN: x */\n  /* LAB 21 BEGIN: y */\n"
                               "  /* LAB 21 END */\n", 21, &b), -1);
  assert_non_null(strstr(why, "x.c:2: LAB 21 BEGIN inside the one begun at line 1"));
  /* another lab's markers and a mention in a comment do not count */
  assert_int_equal(extract_str("  /* LAB 22 BEGIN: x */\n  // see /* LAB 21 END */\n"
                               "  /* LAB 22 END */\n", 21, &b), 0);
  /* a multi-line BEGIN comment; the body is what follows it */
  assert_int_equal(extract_str("  /* LAB 21 BEGIN: x\n   * stub: return 0;\n   */\n"
                               "  return 7;\n  /* LAB 21 END */\n", 21, &b), 1);
  assert_string_equal(b.text[0], "  return 7;\n");
  assert_int_equal(b.line[0], 1);
  bodies_free(&b);
}

static void splicing_keeps_the_instructors_file_around_the_bodies(void **state)
{
  (void)state;
  char path[] = "/tmp/auralog-submitbody-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char *ref = "int f(void)\n{\n  /* LAB 22 BEGIN: the rule\n   * stub: return 0;\n   */\n"
                    "  return 42;\n  /* LAB 22 END */\n}\nint g(void)\n{\n"
                    "  /* LAB 22 BEGIN: more */\n  return 43;\n  /* LAB 22 END */\n}\n";
  assert_int_equal(write(fd, ref, strlen(ref)), (ssize_t)strlen(ref));
  close(fd);
  struct bodies b;
  assert_int_equal(extract_str("junk the student wrote\n  /* LAB 22 BEGIN: edited */\n"
                               "  return 1;\n  /* LAB 22 END */\n  /* LAB 22 BEGIN: */\n"
                               "  return 2;\n  /* LAB 22 END */\n", 22, &b), 2);
  assert_int_equal(body_splice(path, 22, &b, why, sizeof why), 0);
  FILE *f = fopen(path, "r");
  char got[1024] = "";
  size_t n = fread(got, 1, sizeof got - 1, f);
  got[n] = 0;
  fclose(f);
  assert_string_equal(got, "int f(void)\n{\n  /* LAB 22 BEGIN: the rule\n   * stub: return 0;\n"
                           "   */\n  return 1;\n  /* LAB 22 END */\n}\nint g(void)\n{\n"
                           "  /* LAB 22 BEGIN: more */\n  return 2;\n  /* LAB 22 END */\n}\n");
  /* one body where the lab has two: refused, the file untouched */
  free(b.text[1]);
  b.n = 1;
  assert_int_equal(body_splice(path, 22, &b, why, sizeof why), -1);
  assert_non_null(strstr(why, "1 LAB 22 body where the lab has 2"));
  f = fopen(path, "r");
  n = fread(got, 1, sizeof got - 1, f);
  got[n] = 0;
  fclose(f);
  assert_non_null(strstr(got, "return 2;"));
  bodies_free(&b);
  unlink(path);
}

static void the_fingerprint_ignores_layout_and_comments(void **state)
{
  (void)state;
  uint64_t a = body_fingerprint("  return s->scl; /* done */\n", 1);
  uint64_t b = body_fingerprint("return   s->scl;\n// a note\n", 1);
  uint64_t c = body_fingerprint("  return s->max_lsn;\n", 1);
  assert_true(a == b);
  assert_true(a != c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(reference_bodies_and_stubs_pass_the_check),
    cmocka_unit_test(bodies_that_reach_outside_are_refused),
    cmocka_unit_test(arithmetic_memory_and_fields_pass),
    cmocka_unit_test(markers_out_of_place_are_one_line_errors),
    cmocka_unit_test(splicing_keeps_the_instructors_file_around_the_bodies),
    cmocka_unit_test(the_fingerprint_ignores_layout_and_comments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
