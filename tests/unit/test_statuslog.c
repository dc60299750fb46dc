/*
 * Unit: what `auralog status` says of the log's edge and of the volume's
 * truncations (cli/status_log.c), from a Status message as the
 * coordinator sends it.
 *
 * The LAL window begins at the VDL or at the end of the recovery's
 * truncation, whichever is higher (vfs/quorum.c q_can_alloc): after a
 * recovery the writer's next LSN is just above the truncated range, a
 * whole LAL above the VDL, and the writer does not wait. Counted from the
 * VDL, status said "nearly full, the writer will wait" after every
 * recovery (after_a_recovery_the_window_is_empty fails so). A window
 * really in use is still told as such (a_window_in_use_is_told). And the
 * truncations, one per recovery for the volume's life, are shown as the
 * newest few and a count, not every one (truncations_newest_few).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/status.h"

#define LAL 10000000ull

struct fix {
  Auralog__Status st;
  Auralog__Volume v;
  Auralog__EngineStat e;
  Auralog__TruncRange tr, ranges[12], *rp[12];
};

/* A writer at vdl, next_lsn; its recovery truncated (tfrom, tto] if tto. */
static void setup_at(struct fix *x, uint64_t vdl, uint64_t next, uint64_t tfrom, uint64_t tto)
{
  memset(x, 0, sizeof *x);
  auralog__status__init(&x->st);
  auralog__volume__init(&x->v);
  auralog__engine_stat__init(&x->e);
  auralog__trunc_range__init(&x->tr);
  x->v.name = "main";
  x->v.epoch = 2;
  x->st.exists = 1;
  x->st.volume = &x->v;
  x->st.engine = &x->e;
  x->e.volume = "main";
  x->e.addr = "127.0.0.1:7500";
  x->e.epoch = 2;
  x->e.vdl = x->e.vcl = vdl;
  x->e.next_lsn = next;
  x->e.lal = LAL;
  if (tto) {
    x->tr.epoch = 2;
    x->tr.from = tfrom;
    x->tr.to = tto;
    x->e.trunc = &x->tr;
  }
}

static char *table(struct fix *x, void (*f)(const Auralog__Status *, FILE *))
{
  char *buf = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  f(&x->st, m);
  fclose(m);
  return buf;
}

static double used(struct fix *x)
{
  cJSON *o = cJSON_CreateObject();
  status_log_json(&x->st, o);
  double u = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "lal_window"), "used")->valuedouble;
  cJSON_Delete(o);
  return u;
}

/* `truncated (4, 10000004] by epoch 2`, the next LSN 10000005: nothing in use. */
static void after_a_recovery_the_window_is_empty(void **state)
{
  (void)state;
  struct fix x;
  setup_at(&x, 4, 4 + LAL + 1, 4, 4 + LAL);
  char *t = table(&x, status_log_table);
  if (strstr(t, "full") || strstr(t, "wait") || !strstr(t, ": 0 handed out in it\n"))
    fail_msg("status after a recovery:\n%s", t);
  assert_int_equal((int)used(&x), 0);
  free(t);
  /* Ten commits later (two records each): 20 in use, above the truncation. */
  x.e.next_lsn += 20;
  x.e.vdl = x.e.vcl = x.e.next_lsn - 1;
  assert_int_equal((int)used(&x), 0);             /* the VDL caught up: none waits */
  x.e.vdl = x.e.vcl = 4;                          /* none durable yet (a stall) */
  t = table(&x, status_log_table);
  if (!strstr(t, "log    the window of 10000000 LSNs (LAL) starts at 10000004, where the "
              "recovery's truncation ends, not at the vdl 4: 20 handed out in it\n"))
    fail_msg("status of a stall after a recovery:\n%s", t);
  assert_int_equal((int)used(&x), 20);
  free(t);
}

/* No truncation: the window is counted from the VDL, and a full one is told. */
static void a_window_in_use_is_told(void **state)
{
  (void)state;
  struct fix x;
  setup_at(&x, 1000, 1000 + LAL * 95 / 100 + 1, 0, 0);
  char *t = table(&x, status_log_table);
  if (!strstr(t, "log    9500000 LSNs handed out above the vdl, of a window of 10000000 (LAL): "
              "nearly full, the writer will wait\n"))
    fail_msg("status of a window 95%% used:\n%s", t);
  free(t);
  /* A truncation below the VDL (an old recovery): still from the VDL. */
  setup_at(&x, 1000, 1000 + LAL + 1, 10, 900);
  t = table(&x, status_log_table);
  if (!strstr(t, "above the vdl, of a window of 10000000 (LAL): full, the writer waits"))
    fail_msg("status of a full window:\n%s", t);
  free(t);
}

static void truncations_newest_few(void **state)
{
  (void)state;
  struct fix x;
  setup_at(&x, 4, 5, 0, 0);
  for (int i = 0; i < 12; i++) {
    auralog__trunc_range__init(&x.ranges[i]);
    x.ranges[i].epoch = (uint64_t)i + 2;
    x.ranges[i].from = (uint64_t)i * 100;
    x.ranges[i].to = (uint64_t)i * 100 + LAL;
    x.rp[i] = &x.ranges[i];
  }
  x.v.truncs = x.rp;
  x.v.n_truncs = 2;
  char *t = table(&x, status_truncs_table);
  assert_string_equal(t, "truncated (0, 10000000] by epoch 2\ntruncated (100, 10000100] by epoch 3\n");
  free(t);
  x.v.n_truncs = 12;
  t = table(&x, status_truncs_table);
  assert_string_equal(t, "truncations: 12, one per recovery; the last 3 (status --json lists all):\n"
                         "  truncated (900, 10000900] by epoch 11\n"
                         "  truncated (1000, 10001000] by epoch 12\n"
                         "  truncated (1100, 10001100] by epoch 13\n");
  free(t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(after_a_recovery_the_window_is_empty),
    cmocka_unit_test(a_window_in_use_is_told),
    cmocka_unit_test(truncations_newest_few),
  };
  return cmocka_run_group_tests_name("unit: status, the log's edge", tests, NULL, NULL);
}
