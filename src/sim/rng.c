/*
 * rng.c: xoshiro256** seeded by splitmix64 (see rng.h).
 */
#include "sim/rng.h"

/* splitmix64 (Steele, Lea and Flood, 2014): one step of a Weyl sequence
 * through a mixing function. Used only to spread a seed over the state. */
static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

void rng_seed(struct rng *r, uint64_t seed)
{
  uint64_t x = seed;
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
  /* The all-zero state is the one xoshiro cannot leave; splitmix64 never
   * gives four zeros in a row, but make sure. */
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
    r->s[0] = 1;
}

void rng_fork(struct rng *child, struct rng *parent)
{
  /* One draw from the parent, mixed with a constant so that the child's
   * first outputs are not the parent's next ones shifted. */
  rng_seed(child, rng_u64(parent) ^ 0x6a09e667f3bcc909ull);
}

uint64_t rng_u64(struct rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t rng_uniform(struct rng *r, uint64_t n)
{
  if (n == 0)
    return 0;
  /* Plain x % n favours small values when 2^64 is not a multiple of n:
   * reject the draws below 2^64 mod n (at most one in two; for the small
   * n the simulator uses, almost never). */
  uint64_t threshold = -n % n;
  for (;;) {
    uint64_t x = rng_u64(r);
    if (x >= threshold)
      return x % n;
  }
}

uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
  if (hi <= lo)
    return lo;
  uint64_t span = hi - lo + 1;   /* 0: the whole 64-bit range */
  return span == 0 ? rng_u64(r) : lo + rng_uniform(r, span);
}

int rng_chance_ppm(struct rng *r, uint32_t ppm)
{
  /* Certain outcomes draw nothing, so a fault that is off costs no
   * numbers. */
  if (ppm == 0)
    return 0;
  if (ppm >= RNG_PPM)
    return 1;
  return rng_uniform(r, RNG_PPM) < ppm;
}

double rng_double(struct rng *r)
{
  /* The top 53 bits, the precision of a double. */
  return (double)(rng_u64(r) >> 11) * 0x1.0p-53;
}

int rng_chance(struct rng *r, double p)
{
  if (p <= 0)
    return 0;
  if (p >= 1)
    return 1;
  return rng_double(r) < p;
}
