/*
 * test_placement.c: where the six copies of a protection group are put.
 *
 * Checks, on many random clusters, that every protection group gets six
 * different nodes, two in each of the AZs A, B and C (so losing an AZ and
 * one more node still leaves a read quorum); that nodes that are up are
 * chosen before nodes that are down, and lightly loaded nodes before busy
 * ones (ties going to the smaller id, so the choice is predictable); that
 * placing many groups in a row spreads them evenly; and that a cluster with
 * fewer than two nodes in some AZ is refused with a reason naming that AZ.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rng.h"

#include "param.h"
#include "coord/placement.h"

#define MAXN 32

struct cluster {
  struct pnode n[MAXN];
  char ids[MAXN][16];
  size_t len;
};

static void add_node(struct cluster *c, const char *id, char az, int up,
                     unsigned nsegs)
{
  assert_true(c->len < MAXN);
  size_t i = c->len++;
  snprintf(c->ids[i], sizeof c->ids[i], "%s", id);
  c->n[i].id = c->ids[i];
  c->n[i].az = az;
  c->n[i].up = up;
  c->n[i].nsegs = nsegs;
}

/* 2..5 nodes per AZ, random up/down and load, random ids, shuffled. */
static void random_cluster(uint64_t *s, struct cluster *c)
{
  memset(c, 0, sizeof *c);
  for (int z = 0; z < NAZ; z++) {
    unsigned k = 2 + rng_below(s, 4);
    for (unsigned j = 0; j < k; j++) {
      char id[16];
      snprintf(id, sizeof id, "n%c%02u", 'a' + (int)rng_below(s, 26), (unsigned)c->len);
      add_node(c, id, (char)('A' + z), rng_below(s, 3) != 0, rng_below(s, 6));
    }
  }
  for (size_t i = c->len - 1; i > 0; i--) {
    size_t j = rng_below(s, (uint32_t)(i + 1));
    struct pnode t = c->n[i]; c->n[i] = c->n[j]; c->n[j] = t;
  }
}

/* The same order as placement.c promises: up first, then fewer segments,
 * then the smaller id. Written independently of it. */
static int rank_cmp(const struct pnode *a, const struct pnode *b)
{
  int au = a->up != 0, bu = b->up != 0;
  if (au != bu)
    return bu - au;
  if (a->nsegs != b->nsegs)
    return a->nsegs < b->nsegs ? -1 : 1;
  return strcmp(a->id, b->id);
}

/* Check a placement: shape, and that it picked the two best of each AZ. */
static void check_placement(const struct cluster *c, const size_t out[NCOPIES])
{
  for (int k = 0; k < NCOPIES; k++) {
    assert_true(out[k] < c->len);
    assert_int_equal(c->n[out[k]].az, 'A' + k / COPIES_PER_AZ);
    for (int j = 0; j < k; j++)
      assert_true(out[j] != out[k]);
  }
  for (int z = 0; z < NAZ; z++) {
    /* best and second best of this AZ, by selection */
    size_t best[COPIES_PER_AZ];
    for (int k = 0; k < COPIES_PER_AZ; k++) {
      size_t b = c->len;
      for (size_t i = 0; i < c->len; i++) {
        if (c->n[i].az != 'A' + z || (k > 0 && i == best[0]))
          continue;
        if (b == c->len || rank_cmp(&c->n[i], &c->n[b]) < 0)
          b = i;
      }
      assert_true(b < c->len);
      best[k] = b;
    }
    for (int k = 0; k < COPIES_PER_AZ; k++)
      if (out[z * COPIES_PER_AZ + k] != best[k])
        fail_msg("AZ %c pick %d: got %s (up %d, %u segs), expected %s (up %d, %u segs)",
                 'A' + z, k, c->n[out[z * COPIES_PER_AZ + k]].id,
                 c->n[out[z * COPIES_PER_AZ + k]].up,
                 c->n[out[z * COPIES_PER_AZ + k]].nsegs, c->n[best[k]].id,
                 c->n[best[k]].up, c->n[best[k]].nsegs);
  }
}

static void test_random_clusters(void **state)
{
  (void)state;
  for (uint64_t seed = 1; seed <= 2000; seed++) {
    uint64_t s = seed;
    struct cluster c;
    random_cluster(&s, &c);
    size_t out[NCOPIES];
    char why[256] = "";
    int rc = place_pg(c.n, c.len, out, why, sizeof why);
    if (rc != 0)
      fail_msg("seed %llu: place_pg failed: %s", (unsigned long long)seed, why);
    check_placement(&c, out);

    /* The same input gives the same answer. */
    size_t again[NCOPIES];
    assert_int_equal(place_pg(c.n, c.len, again, why, sizeof why), 0);
    assert_memory_equal(out, again, sizeof out);
  }
}

static void test_prefers_up_then_fewer_segments(void **state)
{
  (void)state;
  struct cluster c;
  memset(&c, 0, sizeof c);
  /* A: the down node is empty, but both up nodes are chosen; lighter first */
  add_node(&c, "a-down", 'A', 0, 0);
  add_node(&c, "a-busy", 'A', 1, 100);
  add_node(&c, "a-light", 'A', 1, 50);
  /* B: only one node up; the other pick is the lighter of the down ones */
  add_node(&c, "b-up", 'B', 1, 9);
  add_node(&c, "b-down-heavy", 'B', 0, 8);
  add_node(&c, "b-down-light", 'B', 0, 3);
  /* C: all equal: ties go to the smaller id */
  add_node(&c, "c3", 'C', 1, 4);
  add_node(&c, "c1", 'C', 1, 4);
  add_node(&c, "c2", 'C', 1, 4);
  size_t out[NCOPIES];
  char why[256] = "";
  assert_int_equal(place_pg(c.n, c.len, out, why, sizeof why), 0);
  assert_string_equal(c.n[out[0]].id, "a-light");
  assert_string_equal(c.n[out[1]].id, "a-busy");
  assert_string_equal(c.n[out[2]].id, "b-up");
  assert_string_equal(c.n[out[3]].id, "b-down-light");
  assert_string_equal(c.n[out[4]].id, "c1");
  assert_string_equal(c.n[out[5]].id, "c2");
  check_placement(&c, out);

  /* Any nonzero "up" counts as up: a node with up = 2 is not worse than
   * one with up = 1, and the tie goes to the lighter node. */
  c.n[6].up = 2;                     /* c3 */
  c.n[6].nsegs = 0;
  assert_int_equal(place_pg(c.n, c.len, out, why, sizeof why), 0);
  assert_string_equal(c.n[out[4]].id, "c3");
  assert_string_equal(c.n[out[5]].id, "c1");
  c.n[6].nsegs = 4;
  assert_int_equal(place_pg(c.n, c.len, out, why, sizeof why), 0);
  assert_string_equal(c.n[out[4]].id, "c1");
  assert_string_equal(c.n[out[5]].id, "c2");
}

/* Nodes outside A, B and C are never chosen. */
static void test_ignores_other_azs(void **state)
{
  (void)state;
  struct cluster c;
  memset(&c, 0, sizeof c);
  add_node(&c, "d1", 'D', 1, 0);
  add_node(&c, "x1", 'a', 1, 0);
  for (int z = 0; z < NAZ; z++)
    for (int j = 0; j < 2; j++) {
      char id[16];
      snprintf(id, sizeof id, "%c%d", 'a' + z, j);
      add_node(&c, id, (char)('A' + z), 1, 10);
    }
  add_node(&c, "d2", 'D', 1, 0);
  size_t out[NCOPIES];
  char why[256] = "";
  assert_int_equal(place_pg(c.n, c.len, out, why, sizeof why), 0);
  check_placement(&c, out);
  for (int k = 0; k < NCOPIES; k++)
    assert_true(c.n[out[k]].az >= 'A' && c.n[out[k]].az <= 'C');
}

/* Place many PGs in a row, counting each as it is placed. */
static void place_many(struct cluster *c, int rounds, int check_each)
{
  for (int r = 0; r < rounds; r++) {
    size_t out[NCOPIES];
    char why[256] = "";
    assert_int_equal(place_pg(c->n, c->len, out, why, sizeof why), 0);
    if (check_each)
      check_placement(c, out);
    for (int k = 0; k < NCOPIES; k++)
      c->n[out[k]].nsegs++;
  }
}

/* max - min of nsegs over the up nodes of an AZ */
static unsigned spread(const struct cluster *c, char az, unsigned *total)
{
  unsigned lo = ~0u, hi = 0;
  *total = 0;
  for (size_t i = 0; i < c->len; i++) {
    if (c->n[i].az != az || !c->n[i].up)
      continue;
    *total += c->n[i].nsegs;
    if (c->n[i].nsegs < lo)
      lo = c->n[i].nsegs;
    if (c->n[i].nsegs > hi)
      hi = c->n[i].nsegs;
  }
  return hi - lo;
}

static void test_spreads_evenly(void **state)
{
  (void)state;
  /* From empty: after every PG, the load within each AZ differs by at most
   * one segment between nodes. */
  struct cluster c;
  memset(&c, 0, sizeof c);
  const int per_az[NAZ] = { 3, 4, 5 };
  for (int z = 0; z < NAZ; z++)
    for (int j = 0; j < per_az[z]; j++) {
      char id[16];
      snprintf(id, sizeof id, "%c%d", 'a' + z, j);
      add_node(&c, id, (char)('A' + z), 1, 0);
    }
  for (int r = 1; r <= 300; r++) {
    place_many(&c, 1, 1);
    for (int z = 0; z < NAZ; z++) {
      unsigned total;
      assert_true(spread(&c, (char)('A' + z), &total) <= 1);
      assert_int_equal(total, 2 * r);
    }
  }

  /* From random loads, with some nodes down: the up nodes of an AZ with a
   * choice even out, and down nodes get nothing while their AZ has two up
   * nodes. */
  for (uint64_t seed = 1; seed <= 300; seed++) {
    uint64_t s = seed * 1000003;
    random_cluster(&s, &c);
    unsigned down_before[MAXN];
    int ups[NAZ] = { 0 };
    for (size_t i = 0; i < c.len; i++) {
      down_before[i] = c.n[i].nsegs;
      if (c.n[i].up)
        ups[c.n[i].az - 'A']++;
    }
    place_many(&c, 40, seed <= 50);
    for (int z = 0; z < NAZ; z++) {
      unsigned total;
      /* with exactly two up nodes both are always taken: no choice */
      if (ups[z] > COPIES_PER_AZ)
        assert_true(spread(&c, (char)('A' + z), &total) <= 1);
    }
    for (size_t i = 0; i < c.len; i++)
      if (!c.n[i].up && ups[c.n[i].az - 'A'] >= COPIES_PER_AZ)
        assert_int_equal(c.n[i].nsegs, down_before[i]);
  }
}

static void test_too_few_nodes_in_an_az(void **state)
{
  (void)state;
  for (int z = 0; z < NAZ; z++) {
    for (int have = 0; have < COPIES_PER_AZ; have++) {
      struct cluster c;
      memset(&c, 0, sizeof c);
      for (int y = 0; y < NAZ; y++) {
        int k = y == z ? have : 4;
        for (int j = 0; j < k; j++) {
          char id[16];
          snprintf(id, sizeof id, "%c%d", 'a' + y, j);
          add_node(&c, id, (char)('A' + y), 1, 0);
        }
      }
      size_t out[NCOPIES];
      char why[256] = "";
      assert_int_equal(place_pg(c.n, c.len, out, why, sizeof why), -1);
      char want[8];
      snprintf(want, sizeof want, "AZ %c", 'A' + z);
      if (strstr(why, want) == NULL)
        fail_msg("reason \"%s\" does not name %s", why, want);
    }
  }

  /* No nodes at all: refused, naming the first AZ. */
  size_t out[NCOPIES];
  char why[256] = "";
  assert_int_equal(place_pg(NULL, 0, out, why, sizeof why), -1);
  assert_non_null(strstr(why, "AZ A"));

  /* Many nodes elsewhere do not make up for one AZ. */
  struct cluster c;
  memset(&c, 0, sizeof c);
  for (int j = 0; j < 10; j++) {
    char id[16];
    snprintf(id, sizeof id, "a%d", j);
    add_node(&c, id, 'A', 1, 0);
    snprintf(id, sizeof id, "c%d", j);
    add_node(&c, id, 'C', 1, 0);
  }
  add_node(&c, "b0", 'B', 1, 0);
  why[0] = 0;
  assert_int_equal(place_pg(c.n, c.len, out, why, sizeof why), -1);
  assert_non_null(strstr(why, "AZ B"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_random_clusters),
    cmocka_unit_test(test_prefers_up_then_fewer_segments),
    cmocka_unit_test(test_ignores_other_azs),
    cmocka_unit_test(test_spreads_evenly),
    cmocka_unit_test(test_too_few_nodes_in_an_az),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
