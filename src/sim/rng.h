/*
 * rng.h: the simulator's random numbers.
 *
 * Every choice the simulator makes (a message's delay, whether it is
 * dropped, which node a nemesis crashes, what io->random() answers a core)
 * comes from a struct rng, and the only input to a struct rng is its
 * seed. So a run is a function of its seed: a failure found with seed S
 * replays bit for bit with seed S.
 *
 * The generator is xoshiro256** (Blackman and Vigna, "Scrambled linear
 * pseudorandom number generators", 2018): 256 bits of state, period
 * 2^256 - 1, fast, and good enough for simulation (not for cryptography).
 * Its state is filled from the 64-bit seed with splitmix64, as the
 * authors recommend, so that nearby seeds (1, 2, 3...) give unrelated
 * streams.
 *
 * Streams. Each part of the simulator that draws numbers gets its own
 * stream, forked from a parent: rng_fork(parent) takes one number from the
 * parent and seeds a child from it. Why: if the network and a node's core
 * drew from one stream, a change in how many numbers the core draws would
 * shift every later network decision, and a small code change would make
 * an old seed explore a completely different run. Forked streams keep
 * those apart (as long as the forks themselves happen in a fixed order).
 *
 * Interface:
 *   rng_seed(r, seed)          fill r's state from seed
 *   rng_fork(child, parent)    derive an independent stream from parent
 *   rng_u64(r)                 next 64 random bits
 *   rng_uniform(r, n)          uniform in [0, n) (unbiased; n == 0 gives 0)
 *   rng_range(r, lo, hi)       uniform in [lo, hi] inclusive
 *   rng_chance_ppm(r, ppm)     true with probability ppm / 1,000,000
 *   rng_chance(r, p)           true with probability p (a double in [0, 1])
 *   rng_double(r)              uniform in [0, 1)
 *
 * (Named apart from tests/unit/rng.h's rng_next/rng_below so that a test
 * may include both.)
 */
#ifndef AURALOG_SIM_RNG_H
#define AURALOG_SIM_RNG_H

#include <stdint.h>

#define RNG_PPM 1000000u   /* rng_chance_ppm's "always" */

struct rng {
  uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
void rng_fork(struct rng *child, struct rng *parent);
uint64_t rng_u64(struct rng *r);
uint64_t rng_uniform(struct rng *r, uint64_t n);
uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi);
int rng_chance_ppm(struct rng *r, uint32_t ppm);
int rng_chance(struct rng *r, double p);
double rng_double(struct rng *r);

#endif
