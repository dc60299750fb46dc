/*
 * clock.h: the simulator's virtual clock and event queue.
 *
 * Nothing in a simulated run waits for real time. Everything that will
 * happen later (a message arriving, a timer firing, a nemesis crashing a
 * node) is an event: a time in virtual milliseconds and a callback. The
 * driver loop is
 *
 *     while (sim_step(c))
 *       ;
 *
 * sim_step pops the earliest event, moves now to its time, and calls it;
 * the callback may schedule more. Hours of cluster time run in seconds,
 * and a run is reproducible because the order of events is.
 *
 * Order. Events are kept in a binary min-heap keyed by (time, seq), where
 * seq counts sim_at calls. Two events at the same millisecond run in the
 * order they were scheduled, never in an order that depends on memory
 * addresses or on the heap's internal layout: that tie-break is what makes
 * the same seed give the same run.
 *
 * Handles. sim_at returns a handle that sim_cancel accepts. A handle is a
 * slot number and a generation: once the event has run or been cancelled
 * its slot may be reused, but with a new generation, so cancelling a stale
 * handle is a harmless no-op rather than cancelling someone else's event.
 * 0 is never a handle.
 *
 * Interface:
 *   simclock_new(), simclock_free(c)   (free does not touch pending args)
 *   sim_now(c)                          the current virtual time (ms)
 *   sim_at(c, t, fn, arg)               run fn(arg) at time t (t < now: now)
 *   sim_after(c, dt, fn, arg)           run fn(arg) dt ms from now
 *   sim_cancel(c, h)                    1 if h was pending and is now not
 *   sim_cancel_fn(c, fn, drop, ctx)     a teardown: for each pending fn event,
 *                                       drop(arg, ctx); nonzero cancels it
 *   sim_step(c)                         run the next event; 0 if none
 *   sim_run_until(c, t)                 run events up to t, then now = t
 *   sim_pending(c), sim_next(c, &t)     how many are queued; when the next is
 *   sim_steps(c)                        how many events have run
 */
#ifndef AURALOG_SIM_CLOCK_H
#define AURALOG_SIM_CLOCK_H

#include <stddef.h>
#include <stdint.h>

struct simclock;
typedef void (*sim_fn)(void *arg);

struct simclock *simclock_new(void);
void simclock_free(struct simclock *c);

uint64_t sim_now(const struct simclock *c);
uint64_t sim_at(struct simclock *c, uint64_t t, sim_fn fn, void *arg);
uint64_t sim_after(struct simclock *c, uint64_t dt, sim_fn fn, void *arg);
int sim_cancel(struct simclock *c, uint64_t h);
size_t sim_cancel_fn(struct simclock *c, sim_fn fn,
                     int (*drop)(void *arg, void *ctx), void *ctx);
int sim_step(struct simclock *c);
size_t sim_run_until(struct simclock *c, uint64_t t);
size_t sim_pending(const struct simclock *c);
int sim_next(const struct simclock *c, uint64_t *t);
uint64_t sim_steps(const struct simclock *c);

#endif
