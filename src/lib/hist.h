/*
 * hist.h: a latency histogram (log-linear buckets), shared by the
 * benchmarks (bench/) and the engine's commit stage timings (vfs/stages.c).
 *
 * 16 buckets per power of two of microseconds, so any percentile is within
 * 1/16 (6%) of the truth, the maximum is exact, the mean is exact (the sum
 * is kept), and histograms merge (clients, threads) and subtract (a window
 * between two snapshots) without keeping samples. hist_json and
 * hist_from_json carry one between processes (the engine's stage timings
 * to `auralog bench`): only the buckets that hold something.
 */
#ifndef AURALOG_HIST_H
#define AURALOG_HIST_H

#include <cjson/cJSON.h>
#include <stdint.h>

#define HIST_SUB   16
#define HIST_EXP   40
struct hist {
  uint64_t n;
  double max_us;
  double sum_us;             /* for the mean */
  uint64_t b[HIST_EXP * HIST_SUB];
};
void hist_add(struct hist *h, double us);
void hist_merge(struct hist *into, const struct hist *h);
/* into -= h, bucket by bucket (h: an earlier snapshot of into). The
 * maximum stays into's (a window's own maximum is not known). */
void hist_sub(struct hist *into, const struct hist *h);
/* The p-th quantile (0..1) in milliseconds; p >= 1: the maximum. */
double hist_ms(const struct hist *h, double p);
/* The maximum of a window (after hist_sub, which cannot know it): the
 * exact maximum if the lifetime's fell in the window's top bucket, else
 * the upper end of that bucket (within 1/16); ms. */
double hist_window_max_ms(const struct hist *h);
/* The mean in milliseconds (0 if empty). */
double hist_mean_ms(const struct hist *h);
/* {"n":N,"sum_us":S,"max_us":M,"b":[[bucket,count],...]} */
cJSON *hist_json(const struct hist *h);
/* Back from hist_json's form; 0, or -1 if o is not one (h is then empty). */
int hist_from_json(struct hist *h, const cJSON *o);

#endif
