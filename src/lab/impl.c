/*
 * impl.c: the implement labs' table, and where their source tree is (see
 * impl.h).
 *
 * Each lab earns points from two kinds of test, as in xv6's `make grade`:
 *   - unit tests of the core it is about (tests/unit), each named and
 *     worth its points: they say *what* is wrong, close to the code;
 *   - a fixed range of simulator seeds (`auralog sim`), the whole cluster
 *     with the student's core inside, under faults: they say whether the
 *     system as a whole still keeps its invariants (DESIGN.md §4), and a
 *     failing seed replays exactly. A focused range stresses the faults
 *     the lab's core exists for.
 * Only tests that a stub fails are listed, hidden ones too: a fresh
 * handout earns 0.
 * Entries marked HIDDEN are the instructor's: `lab grade --submission`
 * (submit.c) runs them, a student's `lab grade` does not. A hidden seed
 * range is 40 seeds of the lab's focused faults at an offset of the
 * student's own (impl.h); an instructor-only unit test is a line
 * {"hidden_X", "test_name", points, HIDDEN} in the lab's test table, its
 * binary build/tests/unit_hidden_X built from tests/hidden/test_X.c: the
 * tests that compare a body with a model of the answer live there, as
 * the model is an answer a student could copy (labs/README.md). A
 * student's tests keep fixed expected values. Randomized tests, visible
 * or hidden, take their seed from AURALOG_TEST_SEED (lab_expect.h's
 * lab_seed), which `lab grade --submission` sets from the student's id.
 * Each lab's list is strong enough that every wrong body kept in
 * labs/mutants/labNN/ loses points (tests/integration/test_mutants.c).
 * Lab 23's core, the buffer cache, is the SQLite VFS's (vfs/vfs.c), which
 * the simulator's writers do not run: it has unit tests only.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/impl.h"

#define END_TESTS {NULL, NULL, 0}
#define HIDDEN 1               /* see impl.h: instructor-only, per student */
#define END_SIMS {0, 0, NULL, 0}

static const struct impl_test diff_tests[] = {
  {"diff", "test_single_byte_change", 5},
  {"diff", "test_first_and_last_byte", 5},
  {"diff", "test_null_is_zero_page", 5},
  {"diff", "test_merge_gap", 5},
  {"diff", "test_odd_sizes_and_alignment", 5},
  {"diff", "test_many_scattered_changes", 5},
  {"diff", "test_random_round_trip", 5},
  {"diff", "test_truncated_output", 5},
  {"diff", "test_worst_case", 5},
  {"hidden_diff_model", "test_random_against_model", 5, HIDDEN},
  END_TESTS};
static const struct impl_sim diff_sims[] = {
  {1, 40, "none", 10}, {1, 100, NULL, 15}, {0, 39, NULL, 10, HIDDEN}, END_SIMS};

static const struct impl_test scl_tests[] = {
  {"segment", "test_scl_in_order", 5},
  {"segment", "test_scl_every_order_of_short_chain", 10},
  {"segment", "test_scl_random_shuffles_of_long_chain", 10},
  {"segment", "test_duplicates", 5},
  {"segment", "test_add_is_idempotent", 5},
  END_TESTS};
static const struct impl_sim scl_sims[] = {
  {201, 260, "node-crash,drop,dup,reorder", 10}, {1, 100, NULL, 15},
  {0, 39, "node-crash,drop,dup,reorder", 10, HIDDEN}, END_SIMS};

static const struct impl_test vdl_tests[] = {
  {"quorum", "test_lal_blocks_allocation", 5},
  {"quorum", "test_out_of_order_mtrs_across_pgs", 10},
  {"quorum", "test_one_ack_short_blocks", 5},
  {"quorum", "test_duplicate_acks", 5},
  {"quorum", "test_ignored_acks", 5},
  {"quorum", "test_ack_upto", 5},
  {"quorum", "test_start_lsn_gap", 5},
  {"quorum", "test_allocation_after_truncation", 5},
  {"quorum", "test_ring_growth_and_wrap", 5},
  {"quorum", "test_transition_counts_positions", 5},
  {"hidden_quorum_model", "test_random_against_model", 10, HIDDEN},
  END_TESTS};
static const struct impl_sim vdl_sims[] = {
  {201, 260, "az-down,az1-down,slow,drop", 10}, {1, 100, NULL, 15},
  {0, 39, "az-down,az1-down,slow,drop", 10, HIDDEN}, END_SIMS};

static const struct impl_test evict_tests[] = {
  {"cache", "test_evict_never_above_vdl", 10},
  {"cache", "test_evict_down_to_limit", 10},
  {"cache", "test_evict_clock_prefers_unused", 10},
  {"cache", "test_evict_clock_wrapped_sweep", 10},
  {"cache", "test_evict_clock_random", 10},
  {"cache", "test_evict_clock_hand_goes_round", 10},
  END_TESTS};
static const struct impl_sim evict_sims[] = {END_SIMS};

static const struct impl_test gossip_tests[] = {
  {"gossip", "a_push_fills_the_hole_and_the_scl_catches_up", 10},
  {"gossip", "a_push_in_pieces_and_twice_ends_at_the_same_scl", 10},
  {"gossip", "a_pushed_truncation_comes_before_the_records_it_cuts", 10},
  {"gossip", "a_push_from_a_peer_no_further_along_still_fills_the_hole", 10},
  {"gossip", "a_refused_record_does_not_stop_the_rest_of_the_push", 10},
  END_TESTS};
static const struct impl_sim gossip_sims[] = {
  {201, 260, "node-crash,partition,pair-cut,drop", 10}, {1, 100, NULL, 15},
  {0, 39, "node-crash,partition,pair-cut,drop", 10, HIDDEN}, END_SIMS};

static const struct impl_test recovery_tests[] = {
  {"recovery", "test_all_present", 5},
  {"recovery", "test_hole_stops_walk", 10},
  {"recovery", "test_cross_pg_whole_or_nothing", 5},
  {"recovery", "test_order_and_duplicates", 10},
  {"recovery", "test_start_from_tail_at_hint", 5},
  {"recovery", "test_large_input_fast", 5},
  {"rectrunc", "test_truncated_ranges", 5},
  {"rectrunc", "test_newer_epoch_inside_an_older_range", 5},
  {"rectrunc", "test_adoption_marks_the_proved_chain", 5},
  {"wcore", "truncation_ends_lal_past_the_vdl_or_earlier_end", 10},
  {"hidden_recovery_model", "test_order_and_duplicates_against_model", 5, HIDDEN},
  {"hidden_recovery_model", "test_random_against_model", 10, HIDDEN},
  END_TESTS};
static const struct impl_sim recovery_sims[] = {
  {201, 260, "engine-crash,recovery-crash,second-writer,split-write,stale-trunc", 10},
  {1, 100, NULL, 15},
  {0, 39, "engine-crash,recovery-crash,second-writer,split-write,stale-trunc", 10, HIDDEN},
  END_SIMS};

const struct impl_lab impl_labs[] = {
  {20, "diff", "the page diff: redo as byte ranges", "§3.1", "src/vfs/diff.c",
   diff_tests, diff_sims},
  {21, "scl", "the segment's SCL from backlinks", "§4.2.1", "src/node/segment.c",
   scl_tests, scl_sims},
  {22, "vdl", "the VCL, the VDL and the LAL", "§4.1, §4.2.1", "src/vfs/quorum.c",
   vdl_tests, vdl_sims},
  {23, "evict", "the buffer cache's eviction rule", "§4.2.3", "src/vfs/cache.c",
   evict_tests, evict_sims},
  {24, "gossip", "merging a PG peer's gossip", "§3.3", "src/node/gossip.c",
   gossip_tests, gossip_sims},
  {25, "recovery", "the provable VDL and the truncation", "§4.3",
   "src/vfs/recovery.c, src/vfs/rcvadopt.c", recovery_tests, recovery_sims},
};
const size_t impl_nlabs = sizeof impl_labs / sizeof *impl_labs;

const struct impl_lab *impl_find(const char *s)
{
  char *end;
  long n = strtol(s, &end, 10);
  for (size_t i = 0; i < impl_nlabs; i++)
    if ((*end == 0 && end != s && n == impl_labs[i].n) || strcmp(s, impl_labs[i].name) == 0)
      return &impl_labs[i];
  return NULL;
}

static int is_tree(const char *dir)
{
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/Makefile", dir);
  if (access(p, R_OK) != 0)
    return 0;
  snprintf(p, sizeof p, "%s/src/lab/impl.c", dir);
  return access(p, R_OK) == 0;
}

/* The tree: --src DIR if given; else the binary's: it lives in
 * ROOT/build/auralog (or build-san/), so ROOT is two levels up. No path
 * is compiled in: a tree moved, or a handout built, finds itself. */
int impl_root(const char *opt, char *out, size_t n)
{
  char buf[PATH_MAX];
  if (opt) {
    if (realpath(opt, buf) == NULL || !is_tree(buf)) {
      snprintf(out, n, "%s is not an auralog source tree (no Makefile and src/lab/impl.c)",
               opt);
      return -1;
    }
  } else {
    ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (len <= 0) {
      snprintf(out, n, "cannot find the auralog binary (say --src DIR)");
      return -1;
    }
    buf[len] = 0;
    for (int up = 0; up < 2; up++) {
      char *slash = strrchr(buf, '/');
      if (slash == NULL || slash == buf) {
        buf[0] = 0;
        break;
      }
      *slash = 0;
    }
    if (!is_tree(buf)) {
      snprintf(out, n, "this auralog was not built in a source tree (say --src DIR)");
      return -1;
    }
  }
  snprintf(out, n, "%s", buf);
  return 0;
}

static int points(const struct impl_lab *l, int hidden)
{
  int t = 0;
  for (const struct impl_test *u = l->tests; u->name; u++)
    t += u->hidden == hidden ? u->points : 0;
  for (const struct impl_sim *s = l->sims; s->points; s++)
    t += s->hidden == hidden ? s->points : 0;
  return t;
}

int impl_points(const struct impl_lab *l)
{
  return points(l, 0);
}

int impl_hidden_points(const struct impl_lab *l)
{
  return points(l, 1);
}

void impl_list(FILE *f)
{
  fprintf(f, "implement labs (write a core, then make grade LAB=N; labs/README.md):\n");
  for (size_t i = 0; i < impl_nlabs; i++) {
    const struct impl_lab *l = &impl_labs[i];
    fprintf(f, "%d %-9s %-40s %-13s %3d points  %s\n", l->n, l->name, l->title, l->paper,
            impl_points(l), l->files);
  }
}
