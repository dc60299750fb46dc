/*
 * hist.c: the latency histogram (see hist.h).
 */
#include <math.h>
#include <string.h>

#include "lib/hist.h"

#define NB (HIST_EXP * HIST_SUB)

/* Bucket of us: values below HIST_SUB us have a bucket each; above, the
 * exponent picks a power of two and the next 4 bits a sixteenth of it. */
static int bucket(double us)
{
  uint64_t v = us < 1 ? 0 : us >= 0x1p62 ? (1ull << 62) : (uint64_t)us;
  if (v < HIST_SUB)
    return (int)v;
  int e = 63 - __builtin_clzll(v);           /* v in [2^e, 2^(e+1)) */
  int sub = (int)((v >> (e - 4)) & (HIST_SUB - 1));
  int b = (e - 3) * HIST_SUB + sub;
  return b < NB ? b : NB - 1;
}

/* The middle of bucket b, in us. */
static double bucket_mid(int b)
{
  if (b < HIST_SUB)
    return b + 0.5;
  int e = b / HIST_SUB + 3, sub = b % HIST_SUB;
  double lo = ldexp(1.0, e) + sub * ldexp(1.0, e - 4);
  return lo + ldexp(1.0, e - 5);
}

void hist_add(struct hist *h, double us)
{
  if (!(us >= 0))
    us = 0;                                  /* negative or NaN: a clock step */
  h->b[bucket(us)]++;
  h->n++;
  h->sum_us += us;
  if (us > h->max_us)
    h->max_us = us;
}

void hist_merge(struct hist *into, const struct hist *h)
{
  for (int i = 0; i < NB; i++)
    into->b[i] += h->b[i];
  into->n += h->n;
  into->sum_us += h->sum_us;
  if (h->max_us > into->max_us)
    into->max_us = h->max_us;
}

void hist_sub(struct hist *into, const struct hist *h)
{
  uint64_t n = 0;
  for (int i = 0; i < NB; i++) {
    into->b[i] = into->b[i] >= h->b[i] ? into->b[i] - h->b[i] : 0;
    n += into->b[i];
  }
  into->n = n;
  into->sum_us = into->sum_us > h->sum_us && n ? into->sum_us - h->sum_us : 0;
  if (n == 0)
    into->max_us = 0;
}

double hist_ms(const struct hist *h, double p)
{
  if (h->n == 0)
    return 0;
  if (p >= 1)
    return h->max_us / 1000;
  uint64_t rank = (uint64_t)ceil(p * (double)h->n), seen = 0;
  if (rank == 0)
    rank = 1;
  for (int i = 0; i < NB; i++) {
    seen += h->b[i];
    if (seen >= rank) {
      double v = bucket_mid(i);
      return (v > h->max_us ? h->max_us : v) / 1000;
    }
  }
  return h->max_us / 1000;
}

double hist_window_max_ms(const struct hist *h)
{
  int top = -1;
  for (int i = 0; i < NB; i++)
    if (h->b[i])
      top = i;
  if (top < 0)
    return 0;
  if (bucket(h->max_us) == top)
    return h->max_us / 1000;                 /* the lifetime's maximum fell in it */
  /* The bucket's upper end: between its middle and the next one's. */
  double hi = top + 1 < NB ? (bucket_mid(top) + bucket_mid(top + 1)) / 2 : h->max_us;
  return (hi < h->max_us ? hi : h->max_us) / 1000;
}

double hist_mean_ms(const struct hist *h)
{
  return h->n ? h->sum_us / (double)h->n / 1000 : 0;
}

cJSON *hist_json(const struct hist *h)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "n", (double)h->n);
  cJSON_AddNumberToObject(o, "sum_us", h->sum_us);
  cJSON_AddNumberToObject(o, "max_us", h->max_us);
  cJSON *b = cJSON_AddArrayToObject(o, "b");
  for (int i = 0; i < NB; i++)
    if (h->b[i]) {
      cJSON *pair = cJSON_CreateArray();
      cJSON_AddItemToArray(pair, cJSON_CreateNumber(i));
      cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)h->b[i]));
      cJSON_AddItemToArray(b, pair);
    }
  return o;
}

int hist_from_json(struct hist *h, const cJSON *o)
{
  memset(h, 0, sizeof *h);
  const cJSON *sum = cJSON_GetObjectItemCaseSensitive(o, "sum_us");
  const cJSON *max = cJSON_GetObjectItemCaseSensitive(o, "max_us");
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "b"), *pair;
  if (!cJSON_IsNumber(sum) || !cJSON_IsNumber(max) || !cJSON_IsArray(b))
    return -1;
  cJSON_ArrayForEach(pair, b) {
    const cJSON *i = cJSON_GetArrayItem(pair, 0), *c = cJSON_GetArrayItem(pair, 1);
    if (!cJSON_IsNumber(i) || !cJSON_IsNumber(c) || i->valuedouble < 0 ||
        i->valuedouble >= NB || c->valuedouble < 0) {
      memset(h, 0, sizeof *h);
      return -1;
    }
    h->b[(int)i->valuedouble] += (uint64_t)c->valuedouble;
    h->n += (uint64_t)c->valuedouble;
  }
  h->sum_us = sum->valuedouble;
  h->max_us = max->valuedouble;
  return 0;
}
