/*
 * lab/answers.c: the student's answers file, and how an answer is graded
 * (lab.h want_num, want_word).
 *
 * The file is DIR/labs/labNN-answers.txt, one `key: value` line each, as
 * the handouts ask; `key = value`, `Key=value`, an indented line and a
 * quoted word are read the same. A number is compared with what the lab's
 * history measured, within [lo, hi]; a word exactly, against a list the
 * line names. A wrong answer is told so without the measured value (no
 * guessing by retries); a missing one says whether the file is missing
 * too, naming the file the check reads. With x->ref set (`lab run N`), the
 * expected values are written there instead: the demo's reference answers.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lab/lab.h"

/* The student's answer to key, trimmed and lower-cased, or NULL. The
 * handout asks for `key: value` lines; people also write `key = value`,
 * `Key=value`, indent a line or quote a word, and each of those is read
 * the same (else it grades as "no answer", with nothing to say why).
 * The key must be whole: bytes_per_txn_total is not bytes_per_txn. The
 * last line naming key wins. */
const char *lab_answer(struct labctx *x, const char *key)
{
  static char val[256];
  FILE *f = fopen(x->answers, "r");
  char line[512];
  const char *found = NULL;
  if (f == NULL)
    return NULL;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f)) {
    const char *v = line;
    while (*v == ' ' || *v == '\t')
      v++;
    if (strncasecmp(v, key, kl) != 0)
      continue;
    v += kl;
    while (*v == ' ' || *v == '\t')
      v++;
    if (*v != ':' && *v != '=')
      continue;
    v++;
    while (*v == ' ' || *v == '\t')
      v++;
    size_t i = 0;
    for (; v[i] && v[i] != '\n' && i + 1 < sizeof val; i++)
      val[i] = (char)tolower((unsigned char)v[i]);
    while (i > 0 && isspace((unsigned char)val[i - 1]))
      i--;
    val[i] = 0;
    if (i >= 2 && (val[0] == '"' || val[0] == '\'' || val[0] == '`') && val[i - 1] == val[0]) {
      memmove(val, val + 1, i - 2);
      val[i - 2] = 0;
    }
    found = val;
  }
  fclose(f);
  return found;
}

/* What to say of a key with no answer: none in the file, or no file at
 * all. A student who wrote the file where a handout's ~/.auralog says,
 * while AURALOG_DIR names another directory, must be told which file the
 * check reads (once only "no answer", six times over, with nothing to
 * say why). */
static const char *no_answer(struct labctx *x)
{
  static char why[sizeof x->answers + 64];
  if (access(x->answers, F_OK) == 0)
    return "no answer";
  snprintf(why, sizeof why, "no answer: there is no %s", x->answers);
  return why;
}

/* A numeric answer in [lo, hi] (the measured value is ref). The whole
 * answer must be the number: "2 or 3" is not 2. A ref that is not a
 * number, or negative (every value a lab asks is a count, an LSN, an
 * epoch, a time or a percentage), was not measured: a step is missing,
 * and no answer can be right (not even "-1"). A wrong answer is told so
 * without the measured value. */
void want_num(struct labctx *x, const char *key, double lo, double hi, double ref,
                     const char *what)
{
  int known = isfinite(ref) && ref >= 0 && isfinite(lo) && isfinite(hi);
  if (x->ref) {
    if (known)
      fprintf(x->ref, "%s: %.0f\n", key, ref);
    else
      fprintf(x->ref, "# %s: not measured (a step above is missing)\n", key);
    return;
  }
  const char *a = lab_answer(x, key);
  char *end = NULL;
  double v = a ? strtod(a, &end) : NAN;
  int isnum = a && end != a && *end == 0;
  int good = known && isnum && v >= lo && v <= hi;
  if (!known)
    ok(x, 0, "%s: %s (%s; nothing measured to compare it with: a step above is missing)", key,
       what, a ? a : no_answer(x));
  else if (a == NULL)
    ok(x, 0, "%s: %s (%s)", key, what, no_answer(x));
  else if (!isnum)
    bad(x, "%s: %s (%s: the answer is one number alone)", key, what, a);
  else if (!good)
    bad(x, "%s: %s (%s: not what this run shows)", key, what, a);
  else if (lo == hi)
    ok(x, good, "%s: %s (%s)", key, what, a);
  else
    ok(x, good, "%s: %s (%s; the cluster measured %.0f)", key, what, a, ref);
}

/* A choice: exactly one of the words in choices ("a|b|c"), and it must be want. */
void want_word(struct labctx *x, const char *key, const char *want, const char *choices,
                      const char *what)
{
  if (x->ref) {
    fprintf(x->ref, "%s: %s\n", key, want);
    return;
  }
  const char *a = lab_answer(x, key);
  if (a && strcmp(a, want) != 0)
    bad(x, "%s: %s, one of %s (%s: not the right one)", key, what, choices, a);
  else
    ok(x, a != NULL, "%s: %s, one of %s (%s)", key, what, choices, a ? a : no_answer(x));
}
