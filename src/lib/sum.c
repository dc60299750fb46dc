/*
 * sum.c: XXH3 sums (see sum.h).
 *
 * Fields are gathered little-endian in a small buffer and hashed when it
 * fills or a byte string comes; each hash is seeded with the sum so far,
 * so the result depends on every byte and on the order. A byte string's
 * length goes in before it: "ab" + "c" and "a" + "bc" differ.
 */
#include <xxhash.h>

#include "lib/sum.h"

#define SUM_SEED 0x6175726c6f670002ull   /* "aurlog", store format 2 */

void sum_init(struct sum *s)
{
  s->h = SUM_SEED;
  s->n = 0;
}

static void flush(struct sum *s)
{
  if (s->n) {
    s->h = XXH3_64bits_withSeed(s->buf, s->n, s->h);
    s->n = 0;
  }
}

void sum_u64(struct sum *s, uint64_t v)
{
  if (s->n + 8 > sizeof s->buf)
    flush(s);
  for (int i = 0; i < 8; i++)
    s->buf[s->n++] = (uint8_t)(v >> (8 * i));
}

void sum_bytes(struct sum *s, const void *p, size_t n)
{
  sum_u64(s, n);
  flush(s);
  s->h = XXH3_64bits_withSeed(p, n, s->h);
}

uint32_t sum_end(struct sum *s)
{
  flush(s);
  return (uint32_t)(s->h ^ s->h >> 32);
}

uint32_t sum32(const void *p, size_t n)
{
  uint64_t h = XXH3_64bits_withSeed(p, n, SUM_SEED);
  return (uint32_t)(h ^ h >> 32);
}
