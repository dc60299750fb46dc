/*
 * rng.h: the unit tests' random numbers (splitmix64): a fixed seed gives
 * the same run every time, so a failure can be replayed.
 */
#ifndef AURALOG_TEST_RNG_H
#define AURALOG_TEST_RNG_H

#include <stdint.h>

static inline uint64_t rng_next(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform enough for tests in [0, n). */
static inline uint32_t rng_below(uint64_t *s, uint32_t n)
{
  return (uint32_t)(rng_next(s) % n);
}

#endif
