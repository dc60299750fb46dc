/*
 * Unit: what the observe labs' checks (src/lab/check*.c) make of a
 * history, fed as journal lines, with no cluster behind them (every SQL
 * count fails, as against a cluster that is down).
 *
 * Lab 7's history as a person makes it: the coordinator journals the
 * stall a second after the insert, before the immediate read that a
 * person types after it, and a person's pause after the crash lets the
 * failover detector promote the replica, whose recovery cannot finish,
 * before the next writer's truncates. The check must accept that as well
 * as the order a script makes, and must still refuse a history whose
 * commit became durable after all, or whose only stall ended before it.
 *
 * And no check shows a stand-in for a value it did not see: with nothing
 * done since `lab start N`, no line of any lab's check says -1 or nan,
 * and no answer passes, not even "-1" (which once matched the -1 a
 * missing value stood for).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/lab.h"

static char report[1 << 16];
static char answers[] = "/tmp/auralog-unit-labcheck-XXXXXX";

/* A history: lines before the lab's start, the start mark, the window. */
static void load(struct labctx *x, const char *const *before, const char *const *window, int lab)
{
  memset(x, 0, sizeof *x);
  snprintf(x->answers, sizeof x->answers, "%s", answers);
  x->journal = cJSON_CreateArray();
  x->status = cJSON_Parse("{\"nodes\": [{\"id\": \"A1\", \"state\": \"up\"}]}");
  x->start = -1;
  x->tstart = -1;
  size_t n = 0;
  for (size_t i = 0; before && before[i]; i++)
    n++;
  for (size_t i = 0; window && window[i]; i++)
    n++;
  x->ev = calloc(n + 2, sizeof *x->ev);
  x->win = calloc(n + 2, 1);
  long k = 0;
  for (size_t i = 0; before && before[i]; i++, k++)
    cJSON_AddItemToArray(x->journal, cJSON_Parse(before[i]));
  char mark[128];
  snprintf(mark, sizeof mark, "{\"kind\": \"fault\", \"action\": \"lab-start\", \"n\": %d, "
           "\"t\": 1000}", lab);
  cJSON_AddItemToArray(x->journal, cJSON_Parse(mark));
  x->start = k++;
  for (size_t i = 0; window && window[i]; i++, k++) {
    cJSON *e = cJSON_Parse(window[i]);
    if (e == NULL)
      fail_msg("not JSON: %s", window[i]);
    cJSON_AddItemToArray(x->journal, e);
    x->ev[x->nev++] = e;
    x->win[k] = 1;
  }
}

static void unload(struct labctx *x)
{
  cJSON_Delete(x->journal);
  cJSON_Delete(x->status);
  free(x->ev);
  free(x->win);
}

/* Run a check with its lines captured in report. */
static void run(struct labctx *x, void (*check)(struct labctx *))
{
  fflush(stdout);
  int saved = dup(1);
  FILE *f = tmpfile();
  assert_non_null(f);
  dup2(fileno(f), 1);
  check(x);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  rewind(f);
  size_t len = fread(report, 1, sizeof report - 1, f);
  report[len] = 0;
  fclose(f);
}

static void says(const char *line)
{
  if (strstr(report, line) == NULL)
    fail_msg("the check does not say \"%s\":\n%s", line, report);
}

static void answer(const char *text)
{
  FILE *f = fopen(answers, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* ---- lab 7 ---------------------------------------------------------------- */

static const char *const l7_before[] = {
  "{\"kind\": \"epoch\", \"epoch\": 1, \"writer\": \"127.0.0.1:7200\", \"t\": 100}",
  NULL,
};

/* The durable-reads stall of step 2, the second writer of step 3. */
#define L7_FIRST \
  "{\"kind\": \"engine\", \"epoch\": 1, \"addr\": \"127.0.0.1:7200\", \"reads\": \"durable\"," \
  " \"dirty_reads\": 0, \"vdl\": 4, \"t\": 1100}", \
  "{\"kind\": \"stall\", \"epoch\": 1, \"vdl\": 4, \"pending\": 2, \"t\": 2100}", \
  "{\"kind\": \"heldread\", \"epoch\": 1, \"vdl\": 4, \"n\": 1, \"t\": 2300}", \
  "{\"kind\": \"unstall\", \"epoch\": 1, \"vdl\": 6, \"from\": 4, \"t\": 4000}", \
  "{\"kind\": \"epoch\", \"epoch\": 2, \"writer\": \"127.0.0.1:7201\", \"promotion\": false," \
  " \"t\": 10000}", \
  "{\"kind\": \"fenced\", \"epoch\": 1, \"addr\": \"127.0.0.1:7200\", \"current\": 2, \"t\": 10100}"

#define L7_DIRTY \
  "{\"kind\": \"dirtyread\", \"epoch\": 2, \"vdl\": 6, \"seen\": 10000008, \"n\": 1, \"t\": 16000}"
#define L7_STALL \
  "{\"kind\": \"stall\", \"epoch\": 2, \"vdl\": 6, \"pending\": 2, \"t\": 15000}"

/* The crash, a recovery that truncates, durable reads again. */
#define L7_RECOVERY(e) \
  "{\"kind\": \"epoch\", \"epoch\": " #e ", \"writer\": \"127.0.0.1:7202\", \"promotion\": false," \
  " \"t\": 30000}", \
  "{\"kind\": \"trunc\", \"epoch\": " #e ", \"from\": 6, \"to\": 20000006, \"t\": 30100}", \
  "{\"kind\": \"engine\", \"epoch\": " #e ", \"addr\": \"127.0.0.1:7202\", \"reads\": \"durable\"," \
  " \"dirty_reads\": 0, \"vdl\": 20000008, \"t\": 31000}"

static const char l7_answers[] = "immediate_count: 5\ncount_after_recovery: 4\nfenced_by: 2\n"
                                 "lease_ms: 2000\n";

static void lab7_steps_pass(const char *const *window)
{
  struct labctx x;
  load(&x, l7_before, window, 7);
  answer(l7_answers);
  run(&x, check7);
  says("[ok] with durable reads, a commit stalled");
  says("[ok] meanwhile a read that saw it was held back");
  says("[ok] a second writer, started by hand, opened the volume with a new epoch (2)");
  says("[ok] the first writer (epoch 1), still running, heard of it within its 2000 ms read "
       "lease (100 ms after)");
  says("[ok] the second writer (immediate reads) answered a read showing commits above its VDL "
       "(seen 10000008, vdl 6)");
  says("[ok] that commit had no write quorum and never became durable under epoch 2");
  says("[ok] its truncation begins below what the immediate read saw (from 6; the read saw "
       "10000008)");
  says("[ok] the writer now serves durable reads (epoch ");
  says("[ok] fenced_by");
  unload(&x);
}

/* A script reads at once: the read, then the stall a second later. */
static void lab7_read_then_stall(void **state)
{
  (void)state;
  static const char *const w[] = {L7_FIRST, L7_DIRTY, L7_STALL, L7_RECOVERY(3), NULL};
  lab7_steps_pass(w);
  says("[ok] a later writer recovered the volume and truncated (epoch 3)");
}

/* A person types the read after the stall was journaled. */
static void lab7_stall_then_read(void **state)
{
  (void)state;
  static const char *const w[] = {L7_FIRST, L7_STALL, L7_DIRTY, L7_RECOVERY(3), NULL};
  lab7_steps_pass(w);
  says("[ok] a later writer recovered the volume and truncated (epoch 3)");
}

/* A person slower than the failover detector: the replica promoted while
 * B and C are down (an epoch, no truncation), then the writer that
 * recovers. */
static void lab7_promotion_first(void **state)
{
  (void)state;
  static const char *const w[] = {
    L7_FIRST, L7_STALL, L7_DIRTY,
    "{\"kind\": \"epoch\", \"epoch\": 3, \"writer\": \"127.0.0.1:7202\", \"promotion\": true,"
    " \"t\": 25000}",
    "{\"kind\": \"fault\", \"action\": \"engine-crash\", \"epoch\": 2, \"t\": 26000}",
    L7_RECOVERY(4), NULL};
  lab7_steps_pass(w);
  says("[ok] a later writer recovered the volume and truncated (epoch 4)");
}

/* The commit the read saw became durable under its epoch after all (the
 * AZs came back before the crash): the lesson is not there. */
static void lab7_durable_after_all_fails(void **state)
{
  (void)state;
  static const char *const w[] = {
    L7_FIRST, L7_STALL, L7_DIRTY,
    "{\"kind\": \"unstall\", \"epoch\": 2, \"vdl\": 10000008, \"from\": 6, \"t\": 17000}",
    L7_RECOVERY(3), NULL};
  struct labctx x;
  load(&x, l7_before, w, 7);
  answer(l7_answers);
  run(&x, check7);
  says("[missing] that commit had no write quorum and never became durable under epoch 2 (its "
       "VDL reached 10000008)");
  unload(&x);
}

/* A stall of that epoch that ended before the read (an earlier commit,
 * durable after all), and none after it: not that commit's. */
static void lab7_an_ended_stall_is_not_that_commits(void **state)
{
  (void)state;
  static const char *const w[] = {
    L7_FIRST, L7_STALL,
    "{\"kind\": \"unstall\", \"epoch\": 2, \"vdl\": 8, \"from\": 6, \"t\": 15500}",
    L7_DIRTY, L7_RECOVERY(3), NULL};
  struct labctx x;
  load(&x, l7_before, w, 7);
  answer(l7_answers);
  run(&x, check7);
  says("[missing] that commit had no write quorum and never became durable under epoch 2 (no "
       "stall of that epoch's writer below LSN 10000008)");
  unload(&x);
}

/* ---- every lab: nothing done ------------------------------------------------ */

/* A stand-in for a value: -1 as a number, or nan, anywhere in a line. */
static const char *stand_in(const char *text)
{
  for (const char *p = text; *p; p++) {
    int left = p == text || !isalnum((unsigned char)p[-1]);
    if (left && p[0] == '-' && p[1] == '1' && !isdigit((unsigned char)p[2]) && p[2] != '.')
      return p;
    if (left && !strncasecmp(p, "nan", 3) && !isalnum((unsigned char)p[3]))
      return p;
  }
  return NULL;
}

static void nothing_done_shows_no_stand_ins(void **state)
{
  (void)state;
  void (*checks[])(struct labctx *) = {NULL, check1, check2, check3, check4, check5, check6,
                                       check7, check8, check9, check10};
  /* Every key a lab asks, answered -1. */
  answer("bytes_per_txn: -1\nrecords_per_update: -1\npage_every_commit: -1\n"
         "stall_records: -1\nepoch: -1\ntruncated_from: -1\nlost_acknowledged: -1\n"
         "scl_behind: -1\nfenced_by: -1\nold_epoch: -1\nimmediate_count: -1\n"
         "count_after_recovery: -1\nscl_hole: -1\nmax_lsn_hole: -1\npgmrpl_held: -1\n"
         "pgmrpl_after: -1\nepoch_after: -1\nfailover_ms: -1\nratio_fair_pct: -1\n"
         "ratio_strawman_pct: -1\nclaim_clients: -1\ngroup_speedup_pct: -1\nbest_group: -1\n");
  for (int lab = 1; lab <= 10; lab++) {
    struct labctx x;
    load(&x, NULL, NULL, lab);
    snprintf(x.dir, sizeof x.dir, "/nonexistent/auralog-unit");
    run(&x, checks[lab]);
    /* The answers file echoes the student's "-1": leave those lines out. */
    for (char *line = strtok(report, "\n"); line; line = strtok(NULL, "\n")) {
      const char *keyed = strstr(line, ": -1");
      if (keyed && strstr(line, "[ok]"))
        fail_msg("lab %d: the answer -1 passed: %s", lab, line);
      char copy[1024];
      snprintf(copy, sizeof copy, "%s", line);
      char *a = strstr(copy, "(-1");
      if (a)
        a[1] = 'x';            /* the student's own answer, quoted */
      if (stand_in(copy))
        fail_msg("lab %d shows a stand-in value: %s", lab, line);
    }
    unload(&x);
  }
}

/* ---- lab 1 ---------------------------------------------------------------- */

/* 100 inserts (110 bytes of redo per segment each, 3 records), then 50
 * updates (88 bytes, 2 records), sampled once each. */
static const char *const l1_before[] = {
  "{\"kind\": \"engine\", \"epoch\": 1, \"commits\": 0, \"redo_bytes\": 0, "
  "\"records\": 0, \"t\": 900}",
  NULL,
};
static const char *const l1_window[] = {
  "{\"kind\": \"engine\", \"epoch\": 1, \"commits\": 100, \"redo_bytes\": 66000, "
  "\"records\": 300, \"t\": 2000}",
  "{\"kind\": \"engine\", \"epoch\": 1, \"commits\": 150, \"redo_bytes\": 92400, "
  "\"records\": 400, \"t\": 3000}",
  NULL,
};

/* Run a check as `lab run` does (x->ref set): its reference answers in
 * report. */
static void run_ref(struct labctx *x, void (*check)(struct labctx *))
{
  x->ref = tmpfile();
  assert_non_null(x->ref);
  run(x, check);
  rewind(x->ref);
  size_t len = fread(report, 1, sizeof report - 1, x->ref);
  report[len] = 0;
  fclose(x->ref);
  x->ref = NULL;
}

/* Step 4 measures the updates alone: so does the check's reference (not
 * the mean over inserts and updates, 103 bytes and 3 records). */
static void lab1_measures_the_updates(void **state)
{
  (void)state;
  struct labctx x;
  load(&x, l1_before, l1_window, 1);
  run_ref(&x, check1);
  says("bytes_per_txn: 88\n");
  says("records_per_update: 2\n");
  unload(&x);
}

/* A lab checked again after later labs: its window ends where the next
 * lab began. Tried as a student would: lab 1 passed, labs 3 and 5 done
 * after it, then `lab check 1` again for a run directory to hand in; it
 * once read the later labs' commits (and crashes) as lab 1's, and a pass
 * turned into [wrong]. */
static void a_window_ends_at_the_next_lab(void **state)
{
  (void)state;
  struct labctx x;
  memset(&x, 0, sizeof x);
  snprintf(x.answers, sizeof x.answers, "%s", answers);
  x.status = cJSON_Parse("{\"nodes\": [{\"id\": \"A1\", \"state\": \"up\"}]}");
  x.journal = cJSON_CreateArray();
  const char *lines[] = {
    l1_before[0],
    "{\"kind\": \"fault\", \"action\": \"lab-start\", \"n\": 1, \"t\": 1000}",
    l1_window[0], l1_window[1],
    "{\"kind\": \"fault\", \"action\": \"lab-start\", \"n\": 3, \"t\": 4000}",
    "{\"kind\": \"engine\", \"epoch\": 1, \"commits\": 900, \"redo_bytes\": 9000000, "
    "\"records\": 9000, \"t\": 5000}",
    "{\"kind\": \"epoch\", \"epoch\": 2, \"writer\": \"127.0.0.1:7200\", \"t\": 6000}",
  };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
    cJSON_AddItemToArray(x.journal, cJSON_Parse(lines[i]));
  assert_int_equal(hist_window(&x, 1, 0), 0);
  assert_int_equal(x.nev, 2);          /* lab 1's two samples, none of lab 3's */
  run_ref(&x, check1);
  says("bytes_per_txn: 88\n");         /* as lab1_measures_the_updates, alone */
  hist_free(&x);
  cJSON_Delete(x.status);
}

/* A wrong answer reads [wrong], not [missing]; no answer reads [missing];
 * the header page numbered from 0, as status numbers pages, is right. */
static void lab1_wrong_is_not_missing(void **state)
{
  (void)state;
  struct labctx x;
  answer("bytes_per_txn: 5000\npage_every_commit: 0\n");
  load(&x, l1_before, l1_window, 1);
  run(&x, check1);
  says("[wrong] bytes_per_txn");
  says("[missing] records_per_update: records a one-row transaction ships (no answer)");
  says("[ok] page_every_commit");
  unload(&x);
  answer("page_every_commit: 3\n");
  load(&x, l1_before, l1_window, 1);
  run(&x, check1);
  says("[wrong] page_every_commit");
  unload(&x);
}

/* An answers file as people write one, tried as a new student would:
 * `key = value`, `key=value`, a capitalised key, an indented line, a word
 * in quotes. Each is read as the `key: value` the handout shows; once
 * every one of these read as "no answer", with nothing to say why. */
static void answers_as_people_write_them(void **state)
{
  (void)state;
  const char *forms[] = {"bytes_per_txn = 5000\n", "bytes_per_txn=5000\n",
                         "Bytes_Per_Txn: 5000\n", "  bytes_per_txn : 5000\n",
                         "bytes_per_txn: \"5000\"\n"};
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    struct labctx x;
    answer(forms[i]);
    load(&x, l1_before, l1_window, 1);
    run(&x, check1);
    if (strstr(report, "[wrong] bytes_per_txn") == NULL)
      fail_msg("'%s' was not read as an answer:\n%s", forms[i], report);
    unload(&x);
  }
  /* No answers file at all (written where the handout's ~/.auralog said,
   * with AURALOG_DIR elsewhere): the check names the file it reads. */
  {
    struct labctx y;
    unlink(answers);
    load(&y, l1_before, l1_window, 1);
    run(&y, check1);
    char want[600];
    snprintf(want, sizeof want, "(no answer: there is no %s)", answers);
    says(want);
    unload(&y);
    answer("");
  }
  /* A key that only begins like another is not it. */
  struct labctx x;
  answer("bytes_per_txn_total: 5000\n");
  load(&x, l1_before, l1_window, 1);
  run(&x, check1);
  says("[missing] bytes_per_txn");
  unload(&x);
}

static int setup(void **state)
{
  (void)state;
  int fd = mkstemp(answers);
  if (fd < 0)
    return -1;
  close(fd);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  unlink(answers);
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(lab7_read_then_stall),
    cmocka_unit_test(answers_as_people_write_them),
    cmocka_unit_test(a_window_ends_at_the_next_lab),
    cmocka_unit_test(lab7_stall_then_read),
    cmocka_unit_test(lab7_promotion_first),
    cmocka_unit_test(lab7_durable_after_all_fails),
    cmocka_unit_test(lab7_an_ended_stall_is_not_that_commits),
    cmocka_unit_test(nothing_done_shows_no_stand_ins),
    cmocka_unit_test(lab1_measures_the_updates),
    cmocka_unit_test(lab1_wrong_is_not_missing),
  };
  return cmocka_run_group_tests_name("unit: lab checks", tests, setup, teardown);
}
