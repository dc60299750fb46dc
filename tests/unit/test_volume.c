/*
 * test_volume.c: what the writer asks of a segment when it reads a page
 * (vfs/volume.c pg_need, paper §4.2.3).
 *
 * A page read at read point R names `need`, the PG's last record at or
 * below R; the segment builds the page as of need and answers only if it
 * holds need with its chain whole up to it. need was once the PG's last
 * record freed from the writer's list, which lags acknowledgement: a
 * segment behind by one record could then serve an older page, which was
 * cached and diffed against, and an acknowledged update vanished.
 *
 * Checks that need is exactly the PG's last record at or below R: with
 * nothing in the list (durable_tail), with the list holding records at,
 * below and above R, with R between two of them, with R below all of them
 * (records durable but not yet freed: the case that lost an update), and
 * against a brute-force answer over many random lists and read points.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rng.h"
#include "vfs/vdrv.h"
#include "vfs/volume_int.h"

/* A PG whose freed records end at durable_tail and whose list holds the
 * given LSNs (increasing). */
static void mkpg(struct pgout *g, uint64_t durable_tail, const uint64_t *lsn, size_t n,
                 size_t head)
{
  memset(g, 0, sizeof *g);
  g->recs = calloc(n + head + 1, sizeof *g->recs);
  for (size_t i = 0; i < n; i++) {
    g->recs[head + i] = calloc(1, sizeof **g->recs);
    g->recs[head + i]->r.lsn = lsn[i];
  }
  g->head = head;
  g->n = head + n;
  g->durable_tail = durable_tail;
}

static void freepg(struct pgout *g)
{
  for (size_t i = g->head; i < g->n; i++)
    free(g->recs[i]);
  free(g->recs);
}

static void test_need_is_the_last_record_at_or_below(void **state)
{
  (void)state;
  struct pgout g;
  mkpg(&g, 40, NULL, 0, 0);
  assert_int_equal(pg_need(&g, 40), 40);
  assert_int_equal(pg_need(&g, 1000), 40);
  freepg(&g);

  uint64_t l[] = {45, 47, 52, 60};
  mkpg(&g, 40, l, 4, 3);                   /* head past freed slots */
  assert_int_equal(pg_need(&g, 44), 40);   /* durable, none of the list yet */
  assert_int_equal(pg_need(&g, 45), 45);
  assert_int_equal(pg_need(&g, 46), 45);
  assert_int_equal(pg_need(&g, 51), 47);   /* between two */
  assert_int_equal(pg_need(&g, 52), 52);
  assert_int_equal(pg_need(&g, 59), 52);
  assert_int_equal(pg_need(&g, 60), 60);
  assert_int_equal(pg_need(&g, 99), 60);
  freepg(&g);
}

static void test_need_against_brute_force(void **state)
{
  (void)state;
  uint64_t seed = 7;
  for (int round = 0; round < 2000; round++) {
    size_t n = (size_t)(rng_next(&seed) % 20);
    uint64_t l[20], at = 1 + rng_next(&seed) % 50;
    uint64_t dt = at - 1;
    for (size_t i = 0; i < n; i++) {
      at += 1 + rng_next(&seed) % 5;
      l[i] = at;
    }
    struct pgout g;
    mkpg(&g, dt, l, n, (size_t)(rng_next(&seed) % 4));
    for (uint64_t rp = dt; rp <= at + 3; rp++) {
      uint64_t want = dt;
      for (size_t i = 0; i < n; i++)
        if (l[i] <= rp)
          want = l[i];
      assert_int_equal(pg_need(&g, rp), want);
    }
    freepg(&g);
  }
}

/* The replicas' stats the engine reports (vol_set_replicas) own their
 * strings: the feed's thread rewrites a replica's reader (holder) on each
 * ack while the I/O thread packs the report, and pack wrote 64 bytes past
 * the size it had measured (ASan, it_replica under make test SAN=1). */
static void test_replica_stats_own_their_strings(void **state)
{
  (void)state;
  struct volume v;
  struct vdrv d;
  memset(&v, 0, sizeof v);
  memset(&d, 0, sizeof d);
  pthread_mutex_init(&d.mu, NULL);
  v.drv = &d;
  char addr[64] = "127.0.0.1:7410", holder[64] = "";
  Auralog__ReplicaStat rs = AURALOG__REPLICA_STAT__INIT;
  const Auralog__ReplicaStat *rp = &rs;
  rs.addr = addr;
  rs.holder = holder;
  rs.readers = 1;
  vol_set_replicas(&v, 0, &rp, 1);
  snprintf(holder, sizeof holder, "127.0.0.1:53638 (a reader that came since)");
  snprintf(addr, sizeof addr, "127.0.0.1:9999");
  assert_int_equal(d.nrstat, 1);
  assert_string_equal(d.rstat[0].holder, "");
  assert_string_equal(d.rstat[0].addr, "127.0.0.1:7410");
  assert_ptr_not_equal(d.rstat[0].holder, holder);
  pthread_mutex_destroy(&d.mu);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_need_is_the_last_record_at_or_below),
    cmocka_unit_test(test_need_against_brute_force),
    cmocka_unit_test(test_replica_stats_own_their_strings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
