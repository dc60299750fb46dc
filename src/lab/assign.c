/*
 * lab/assign.c: what each student's run of an observe lab must do: which
 * AZ to take out, which node to stop or slow, which row to update how
 * many times, how many rows a second writer commits, which node to lose
 * and which to drain (and a node's failure rate for lab 11's arithmetic). Derived from the student's
 * id and the lab number alone (a keyed hash: the same id always gets the
 * same assignment, two ids most often different ones), so a friend's
 * answers, a demo's steps or a copied run directory name the wrong AZ or
 * node, and the check says so.
 *
 * `auralog lab start N --student ID` prints the assignment; the
 * coordinator writes the student's id and the assignment into the
 * lab-start mark of its journal (coord/journal.c); `lab check` and `lab
 * verify` compute it again from the id in that mark and require the
 * history to follow it. Pure: no I/O, the same answer everywhere.
 *
 *   assign_make     the assignment of (student, lab); 0 if the lab has a
 *                   choice to make, -1 if not (its steps are the same for all)
 *   assign_text     it in words, for the student and the journal
 *   student_id_ok   an id a student may use: 1..64 of [A-Za-z0-9_.-]
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "lab/assign.h"

int student_id_ok(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > STUDENT_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return 1;
}

/* Eight pseudo-random bytes of (student, lab): BLAKE2b, so nearby ids
 * ("s1", "s2") are as unrelated as any. */
static void draw(const char *student, int lab, uint8_t out[8])
{
  char in[STUDENT_MAX + 48];
  int n = snprintf(in, sizeof in, "auralog lab assignment|%s|%d", student, lab);
  crypto_generichash(out, 8, (const uint8_t *)in, (size_t)n, NULL, 0);
}

int assign_make(const char *student, int lab, struct assign *a)
{
  memset(a, 0, sizeof *a);
  a->lab = lab;
  if (!student_id_ok(student))
    return -1;
  uint8_t r[8];
  draw(student, lab, r);
  a->az = (char)('A' + r[0] % 3);
  char others[4][3];
  int k = 0;
  for (int z = 0; z < 3; z++)
    for (int i = 1; i <= 2; i++)
      if ('A' + z != a->az)
        snprintf(others[k++], 3, "%c%d", 'A' + z, i);
  switch (lab) {
  case 1:
    a->az = 0;
    a->row = 1 + r[3] % 100;   /* one of the 100 rows inserted */
    a->count = 30 + r[4] % 51;
    return 0;
  case 2: {
    /* AZ+1: the AZ, then one node of another AZ; a slow node neither. */
    int extra = r[1] % 4, slow = r[2] % 3;
    snprintf(a->node, sizeof a->node, "%s", others[extra]);
    slow += slow >= extra;
    snprintf(a->slow, sizeof a->slow, "%s", others[slow]);
    return 0;
  }
  case 4:
    return 0;                  /* the AZ to partition */
  case 5:
    a->az = 0;
    a->count = 2 + r[5] % 8;   /* rows the second writer commits */
    return 0;
  case 11: {
    /* The node to lose and the node to drain, named by the positions of
     * pg 0 they host when the student begins (positions 2k, 2k+1 are AZ
     * k's): a node lost or drained hosts nothing, so a retry, or a second
     * student on the cluster, finds the position on its new node. The
     * drain in another AZ: each AZ needs a spare of its own. */
    static const int mttf[] = {2000, 5000, 10000, 20000, 50000};
    int z = a->az - 'A', dz = (z + 1 + r[2] % 2) % 3;
    a->pos = 2 * z + r[1] % 2;
    a->drain_pos = 2 * dz + r[3] % 2;
    a->mttf_h = mttf[r[4] % 5];
    a->az = 0;
    return 0;
  }
  case 12: {
    /* The table a student fills with rows 1..count and then drops by
     * mistake: its name and size are theirs, so a restore of another
     * student's table, or a count copied from them, is not. */
    static const char *const what[] = {"orders",   "invoices", "payments", "customers",
                                       "shipments", "refunds", "accounts", "vendors"};
    snprintf(a->table, sizeof a->table, "lab12_%s", what[r[1] % 8]);
    a->count = 200 + (r[3] | r[4] << 8) % 801;
    a->az = 0;
    return 0;
  }
  case 13: {
    /* The table a student commits transactions into, one row each, and
     * keeps a replica of through the binlog: theirs alone, so another's
     * replica, or a count copied, is not. */
    static const char *const what[] = {"trades", "clicks", "orders", "events",
                                       "readings", "bids", "votes", "moves"};
    snprintf(a->table, sizeof a->table, "lab13_%s", what[r[2] % 8]);
    a->count = 40 + (r[3] | r[4] << 8) % 81;
    a->az = 0;
    return 0;
  }
  default:
    a->az = 0;
    return -1;
  }
}

void assign_text(const struct assign *a, char *out, size_t n)
{
  if (a->lab == 5 && a->count > 0) {
    snprintf(out, n, "the second writer commits %d rows", a->count);
    return;
  }
  if (a->lab == 11 && a->mttf_h > 0) {
    snprintf(out, n, "take out for good the node at position %d of pg 0 (AZ %c); drain the "
             "node at position %d (AZ %c); each node's MTTF is %d hours", a->pos,
             'A' + a->pos / 2, a->drain_pos, 'A' + a->drain_pos / 2, a->mttf_h);
    return;
  }
  if (a->lab == 12 && a->table[0]) {
    snprintf(out, n, "fill table %s with rows 1..%d, then drop it by mistake and restore it",
             a->table, a->count);
    return;
  }
  if (a->lab == 13 && a->table[0]) {
    snprintf(out, n, "commit %d transactions into table %s, one row each, and keep a replica "
             "of it through the binlog", a->count, a->table);
    return;
  }
  if (a->lab == 1 && a->row > 0) {
    snprintf(out, n, "update row %d of lab01 %d times, one transaction each", a->row,
             a->count);
    return;
  }
  switch (a->az ? a->lab : 0) {
  case 2:
    snprintf(out, n, "take out AZ %c; for AZ+1 stop node %s too; slow node %s", a->az,
             a->node, a->slow);
    break;
  case 4:
    snprintf(out, n, "partition AZ %c", a->az);
    break;
  default:
    snprintf(out, n, "the same steps for everyone");
  }
}
