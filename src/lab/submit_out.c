/*
 * submit_out.c: what `lab grade N --submission` writes besides its
 * reports (see submit.c): --csv, a row per submission, and --gradescope,
 * Gradescope's results.json for one submission, in the format of
 * https://gradescope-autograders.readthedocs.io/en/latest/specs/:
 * {"score", "execution_time", "output", "visibility", "stdout_visibility",
 *  "tests": [{"name", "score", "max_score", "status", "visibility",
 *  "output"}]}. A hidden test or seed range is "after_published": the
 * student sees it once grades are published; stdout is "hidden", as it
 * names the hidden seeds. A failing test's output says what failed and
 * the command that replays it.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/grader.h"
#include "lab/impl.h"
#include "lab/submit.h"
#include "lib/log.h"

static void csv_field(FILE *f, const char *s)
{
  if (strpbrk(s, ",\"\n") == NULL) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s == '\n' ? ' ' : *s, f);
  }
  fputc('"', f);
}

void submit_csv(const char *file, const struct impl_lab *l, struct sub_result *rs, int n)
{
  FILE *f = fopen(file, "w");
  if (f == NULL)
    die("lab grade: --csv %s: %s", file, strerror(errno));
  struct grade_rec cols[GRADE_MAXREC];
  struct grader g = {.hidden = 1, .rec = cols};
  grade_note_all(&g, l, "");
  fputs("student,lab,points,total", f);
  for (int c = 0; c < g.nrec; c++) {
    fputc(',', f);
    csv_field(f, cols[c].name);
  }
  fputs(",error,flags\n", f);
  for (int i = 0; i < n; i++) {
    csv_field(f, rs[i].student);
    fprintf(f, ",%d,%d,%d", l->n, rs[i].got, rs[i].total);
    for (int c = 0; c < g.nrec; c++) {
      int pts = 0;
      for (int k = 0; k < rs[i].nrec; k++)
        if (strcmp(rs[i].rec[k].name, cols[c].name) == 0)
          pts = rs[i].rec[k].got;
      fprintf(f, ",%d", pts);
    }
    fputc(',', f);
    csv_field(f, rs[i].error);
    fputc(',', f);
    csv_field(f, rs[i].flags);
    fputc('\n', f);
  }
  if (fclose(f) != 0)
    die("lab grade: --csv %s: %s", file, strerror(errno));
  printf("csv: %s (%d row%s)\n", file, n, n == 1 ? "" : "s");
}

void submit_gradescope(const char *file, const struct impl_lab *l, const struct sub_result *r)
{
  cJSON *j = cJSON_CreateObject(), *tests = cJSON_CreateArray();
  char text[4096];
  cJSON_AddNumberToObject(j, "score", r->got);
  cJSON_AddNumberToObject(j, "execution_time", r->secs);
  if (r->error[0])
    snprintf(text, sizeof text, "Lab %d (%s) could not be graded: %s\n", l->n, l->name,
             r->error);
  else
    snprintf(text, sizeof text,
             "Lab %d (%s): %d/%d. Graded with only your LAB %d bodies, in the instructor's "
             "tree, with its tests and simulator seeds and with hidden seeds of your own "
             "(shown once grades are published). A failing seed replays in your tree "
             "with the command its test shows.\n", l->n, l->name, r->got, r->total, l->n);
  cJSON_AddStringToObject(j, "output", text);
  cJSON_AddStringToObject(j, "visibility", "visible");
  /* stdout names the hidden seeds: for the instructor only. */
  cJSON_AddStringToObject(j, "stdout_visibility", "hidden");
  for (int i = 0; i < r->nrec; i++) {
    const struct grade_rec *t = &r->rec[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddNumberToObject(o, "score", t->got);
    cJSON_AddNumberToObject(o, "max_score", t->max);
    cJSON_AddStringToObject(o, "status", t->got == t->max ? "passed" : "failed");
    cJSON_AddStringToObject(o, "visibility", t->hidden ? "after_published" : "visible");
    cJSON_AddStringToObject(o, "output", t->detail[0] ? t->detail : "passed");
    cJSON_AddItemToArray(tests, o);
  }
  cJSON_AddItemToObject(j, "tests", tests);
  char *s = cJSON_Print(j);
  FILE *f = fopen(file, "w");
  if (f == NULL || fputs(s, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0)
    die("lab grade: --gradescope %s: %s", file, strerror(errno));
  free(s);
  cJSON_Delete(j);
  printf("gradescope: %s\n", file);
}

