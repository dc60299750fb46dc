/*
 * test_hist.c: the latency histogram (lib/hist.c).
 *
 * Checks against the exact percentiles of the same samples (sorted):
 * random latencies spread over six orders of magnitude (1 us to 10 s,
 * fixed seed) give every percentile within 1/16 (6.25%) of the exact one
 * or within 1 us; the maximum is exact; merging per-client histograms
 * gives the same answers as one histogram of all samples; an empty
 * histogram says 0; a single sample is every percentile; values below
 * 1 us and absurdly large values land in the first and last bucket
 * without overflow. The mean is exact; a histogram sent as JSON comes
 * back the same; a later snapshot minus an earlier one is the histogram of
 * the samples between them (a window); JSON that is not one is refused.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rng.h"

#include "bench/bench.h"

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Exact p-quantile (nearest rank), in ms. */
static double exact(const double *sorted, size_t n, double p)
{
  size_t rank = (size_t)ceil(p * (double)n);
  if (rank == 0)
    rank = 1;
  return sorted[rank - 1] / 1000;
}

static void close_to(double got, double want)
{
  double tol = want / 16 + 0.001;   /* ms: 1/16, or 1 us */
  if (fabs(got - want) > tol)
    fail_msg("percentile %.6f ms, exact %.6f ms", got, want);
}

static void percentiles_are_within_a_sixteenth(void **state)
{
  (void)state;
  enum { N = 200000, CLIENTS = 8 };
  static struct hist one, parts[CLIENTS], merged;
  memset(&one, 0, sizeof one);
  memset(parts, 0, sizeof parts);
  memset(&merged, 0, sizeof merged);
  double *v = malloc(N * sizeof *v);
  uint64_t seed = 42;
  for (int i = 0; i < N; i++) {
    /* log-uniform over 1 us .. 10 s */
    double e = (double)(rng_next(&seed) % 1000000) / 1000000.0 * 7.0;
    v[i] = pow(10.0, e);
    hist_add(&one, v[i]);
    hist_add(&parts[i % CLIENTS], v[i]);
  }
  for (int c = 0; c < CLIENTS; c++)
    hist_merge(&merged, &parts[c]);
  qsort(v, N, sizeof *v, cmp);
  assert_int_equal(one.n, N);
  assert_int_equal(merged.n, N);
  double ps[] = {0.01, 0.10, 0.50, 0.90, 0.95, 0.99, 0.999};
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
    close_to(hist_ms(&one, ps[i]), exact(v, N, ps[i]));
    assert_true(hist_ms(&merged, ps[i]) == hist_ms(&one, ps[i]));
  }
  assert_true(hist_ms(&one, 1.0) == v[N - 1] / 1000);
  assert_true(hist_ms(&merged, 1.0) == v[N - 1] / 1000);
  free(v);
}

static void narrow_latencies_keep_their_shape(void **state)
{
  (void)state;
  /* Commit latencies of a real run: most near 900 us, a tail to 40 ms. */
  static struct hist h;
  memset(&h, 0, sizeof h);
  enum { N = 10000 };
  double v[N];
  for (int i = 0; i < N; i++) {
    v[i] = i < 9900 ? 850 + (i % 100) : 2000 + 380 * (i - 9900);
    hist_add(&h, v[i]);
  }
  qsort(v, N, sizeof *v, cmp);
  close_to(hist_ms(&h, 0.50), exact(v, N, 0.50));
  close_to(hist_ms(&h, 0.99), exact(v, N, 0.99));
  close_to(hist_ms(&h, 0.995), exact(v, N, 0.995));
  assert_true(hist_ms(&h, 0.995) > 1.9);    /* the tail is not averaged away */
  assert_true(hist_ms(&h, 1.0) == v[N - 1] / 1000);
}

static void edges(void **state)
{
  (void)state;
  static struct hist h;
  memset(&h, 0, sizeof h);
  assert_true(hist_ms(&h, 0.5) == 0);
  assert_true(hist_ms(&h, 1.0) == 0);
  hist_add(&h, 1234.0);
  assert_true(fabs(hist_ms(&h, 0.0) - 1.234) < 1.234 / 16);
  assert_true(fabs(hist_ms(&h, 0.5) - 1.234) < 1.234 / 16);
  assert_true(hist_ms(&h, 1.0) == 1.234);
  hist_add(&h, 0.2);        /* below 1 us */
  hist_add(&h, 1e18);       /* beyond the last bucket */
  assert_int_equal(h.n, 3);
  assert_true(hist_ms(&h, 0.01) <= 0.001);
  assert_true(hist_ms(&h, 1.0) == 1e15);
  /* never above the maximum, even in the top bucket */
  assert_true(hist_ms(&h, 0.99) <= 1e15);
}

static void mean_json_and_windows(void **state)
{
  (void)state;
  static struct hist all, early, later, back;
  memset(&all, 0, sizeof all);
  memset(&early, 0, sizeof early);
  memset(&later, 0, sizeof later);
  double sum = 0;
  for (int i = 0; i < 5000; i++) {
    double us = 10 + (i * 7919) % 30000;
    hist_add(&all, us);
    if (i < 2000)
      hist_add(&early, us);
    else {
      hist_add(&later, us);
      sum += us;
    }
  }
  assert_true(fabs(hist_mean_ms(&later) - sum / 3000 / 1000) < 1e-9);
  cJSON *j = hist_json(&all);
  char *txt = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  j = cJSON_Parse(txt);
  free(txt);
  assert_int_equal(hist_from_json(&back, j), 0);
  cJSON_Delete(j);
  assert_memory_equal(&back, &all, sizeof all);
  hist_sub(&back, &early);           /* the window after the first 2000 */
  assert_int_equal(back.n, later.n);
  assert_memory_equal(back.b, later.b, sizeof later.b);
  assert_true(fabs(back.sum_us - later.sum_us) < 1e-6 * later.sum_us);
  assert_true(hist_ms(&back, 0.5) == hist_ms(&later, 0.5));
  j = cJSON_Parse("{\"n\":1,\"sum_us\":1,\"max_us\":1,\"b\":[[99999,1]]}");
  assert_int_equal(hist_from_json(&back, j), -1);
  assert_int_equal(back.n, 0);
  cJSON_Delete(j);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(percentiles_are_within_a_sixteenth),
    cmocka_unit_test(narrow_latencies_keep_their_shape),
    cmocka_unit_test(edges),
    cmocka_unit_test(mean_json_and_windows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
