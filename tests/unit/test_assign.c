/*
 * Unit: each student's assignment in an observe lab (lab/assign.h) and
 * the journal's own key (journal.h): what makes one student's run unlike
 * another's, and a forger's MAC with the cluster key fail.
 *
 * How each can fail: an assignment that depends on anything but the id
 * and lab (a student's `lab start` and the check would disagree); one
 * that asks for AZ+1 within the AZ taken out, or slows a node stopped; a
 * draw so narrow that most students get the same AZ (a friend's run would
 * pass); a bad id let into the journal; a journal whose key is derived
 * from the cluster key (anyone with cluster.key could MAC lines).
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

#include <sodium.h>

#include "journal.h"
#include "lab/assign.h"

static void same_id_same_assignment(void **state)
{
  (void)state;
  struct assign a, b;
  char ta[160], tb[160];
  assert_int_equal(assign_make("s1", 2, &a), 0);
  assert_int_equal(assign_make("s1", 2, &b), 0);
  assign_text(&a, ta, sizeof ta);
  assign_text(&b, tb, sizeof tb);
  assert_string_equal(ta, tb);
  assert_string_equal(ta, "take out AZ B; for AZ+1 stop node C2 too; slow node A2");
  assert_int_equal(assign_make("s1", 4, &a), 0);
  assign_text(&a, ta, sizeof ta);
  assert_string_equal(ta, "partition AZ B");
  assert_int_equal(assign_make("s1", 1, &a), 0);
  assert_true(a.row >= 1 && a.row <= 100 && a.count >= 30 && a.count <= 80);
  assert_int_equal(assign_make("s1", 5, &a), 0);
  assert_true(a.count >= 2 && a.count <= 9);
  /* Labs with nothing to choose. */
  assert_int_equal(assign_make("s1", 3, &a), -1);
  assign_text(&a, ta, sizeof ta);
  assert_string_equal(ta, "the same steps for everyone");
}

/* Over many ids: every AZ and node drawn, never AZ+1 inside the AZ, never
 * the slow node among the stopped ones. */
static void assignments_spread_and_make_sense(void **state)
{
  (void)state;
  int az[3] = {0}, node[3][2] = {{0}};
  for (int i = 0; i < 300; i++) {
    char id[16];
    struct assign a;
    snprintf(id, sizeof id, "student%d", i);
    assert_int_equal(assign_make(id, 2, &a), 0);
    assert_true(a.az >= 'A' && a.az <= 'C');
    assert_int_not_equal(a.node[0], a.az);
    assert_int_not_equal(a.slow[0], a.az);
    assert_string_not_equal(a.node, a.slow);
    az[a.az - 'A']++;
    node[a.node[0] - 'A'][a.node[1] - '1']++;
  }
  for (int z = 0; z < 3; z++) {
    assert_true(az[z] > 60);             /* about 100 each */
    assert_true(node[z][0] > 20 && node[z][1] > 20);
  }
}

static void bad_ids_refused(void **state)
{
  (void)state;
  struct assign a;
  char long_id[80];
  memset(long_id, 'x', sizeof long_id - 1);
  long_id[sizeof long_id - 1] = 0;
  assert_false(student_id_ok(""));
  assert_false(student_id_ok("a b"));
  assert_false(student_id_ok("a\"b"));
  assert_false(student_id_ok(long_id));
  assert_true(student_id_ok("jane.doe-42_x"));
  assert_int_equal(assign_make("a b", 2, &a), -1);
}

/* The journal's key is made at random beside the journal, once: a second
 * open keeps it, and lines MAC'd under it read back; under any other key
 * (the cluster key's old derivation) none does. */
static void journal_key_is_its_own(void **state)
{
  (void)state;
  char d[] = "/tmp/auralog-ut-journal-XXXXXX", p[64], why[256];
  assert_non_null(mkdtemp(d));
  snprintf(p, sizeof p, "%s/journal.jsonl", d);
  struct journal j;
  assert_int_equal(journal_open(&j, p, why, sizeof why), 0);
  journal_append(&j, 1000, "start", "\"copies\":6");
  journal_append(&j, 2000, "fault", "\"action\":\"partition\",\"az\":\"B\"");
  uint8_t k1[32], k2[32], other[32];
  memcpy(k1, j.key, 32);
  journal_close(&j);
  assert_int_equal(journal_open(&j, p, why, sizeof why), 0);
  memcpy(k2, j.key, 32);
  journal_close(&j);
  assert_memory_equal(k1, k2, 32);
  int bad = -1;
  cJSON *a = journal_read(p, other, &bad, why, sizeof why);
  assert_non_null(a);
  assert_int_equal(bad, 0);
  assert_int_equal(cJSON_GetArraySize(a), 2);
  assert_memory_equal(other, k1, 32);     /* journal_read hands back the key it used */
  cJSON_Delete(a);
  memset(other, 7, sizeof other);
  a = journal_read_key(p, other, NULL, &bad, why, sizeof why);
  assert_int_equal(bad, 2);
  cJSON_Delete(a);
  char id1[17], id2[17];
  journal_key_id(k1, id1);
  journal_key_id(other, id2);
  assert_int_equal(strlen(id1), 16);
  assert_string_not_equal(id1, id2);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d);
  assert_int_equal(system(cmd), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(same_id_same_assignment),
    cmocka_unit_test(assignments_spread_and_make_sense),
    cmocka_unit_test(bad_ids_refused),
    cmocka_unit_test(journal_key_is_its_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
