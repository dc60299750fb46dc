/*
 * clock.c: a binary min-heap of events keyed by (time, seq) (see clock.h).
 *
 * Events live in a slot array; the heap holds slot numbers, and each slot
 * remembers its heap position so that cancel can remove it from the middle
 * in O(log n). Free slots form a list through `next_free`. Slots are
 * reused lowest-freed-first, which depends only on the order of calls, so
 * it is as deterministic as the rest.
 *
 * Out of memory aborts: a simulator that silently lost an event would
 * report a run that never happened.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sim/clock.h"

#define NO_POS UINT32_MAX

struct slot {
  uint64_t t;
  uint64_t seq;
  sim_fn fn;
  void *arg;
  uint32_t gen;       /* bumped each time the slot is taken */
  uint32_t pos;       /* index in heap, NO_POS when free */
  uint32_t next_free;
};

struct simclock {
  uint64_t now;
  uint64_t seq;       /* sim_at calls so far: the tie-break */
  uint64_t steps;
  struct slot *slots;
  uint32_t nslots, capslots;
  uint32_t free_head; /* NO_POS: none free */
  uint32_t *heap;     /* slot numbers */
  uint32_t nheap;
};

static void *grow(void *p, size_t n, size_t size)
{
  void *q = realloc(p, n * size);
  if (q == NULL) {
    fprintf(stderr, "sim: out of memory for the event queue\n");
    abort();
  }
  return q;
}

struct simclock *simclock_new(void)
{
  struct simclock *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->free_head = NO_POS;
  return c;
}

void simclock_free(struct simclock *c)
{
  if (c == NULL)
    return;
  free(c->slots);
  free(c->heap);
  free(c);
}

uint64_t sim_now(const struct simclock *c)
{
  return c->now;
}

uint64_t sim_steps(const struct simclock *c)
{
  return c->steps;
}

size_t sim_pending(const struct simclock *c)
{
  return c->nheap;
}

/* Does slot a run before slot b? */
static int before(const struct simclock *c, uint32_t a, uint32_t b)
{
  const struct slot *x = &c->slots[a], *y = &c->slots[b];
  return x->t != y->t ? x->t < y->t : x->seq < y->seq;
}

static void place(struct simclock *c, uint32_t i, uint32_t s)
{
  c->heap[i] = s;
  c->slots[s].pos = i;
}

static void sift_up(struct simclock *c, uint32_t i)
{
  uint32_t s = c->heap[i];
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (!before(c, s, c->heap[parent]))
      break;
    place(c, i, c->heap[parent]);
    i = parent;
  }
  place(c, i, s);
}

static void sift_down(struct simclock *c, uint32_t i)
{
  uint32_t s = c->heap[i];
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    uint32_t best = s;
    if (l < c->nheap && before(c, c->heap[l], best)) {
      m = l;
      best = c->heap[l];
    }
    if (r < c->nheap && before(c, c->heap[r], best)) {
      m = r;
      best = c->heap[r];
    }
    if (m == i)
      break;
    place(c, i, best);
    i = m;
  }
  place(c, i, s);
}

/* Take slot s out of the heap (wherever it is) and put it on the free
 * list. */
static void remove_at(struct simclock *c, uint32_t s)
{
  uint32_t i = c->slots[s].pos;
  uint32_t last = c->heap[--c->nheap];
  if (i < c->nheap) {
    place(c, i, last);
    /* The moved slot may belong above or below its new place. */
    if (i > 0 && before(c, last, c->heap[(i - 1) / 2]))
      sift_up(c, i);
    else
      sift_down(c, i);
  }
  c->slots[s].pos = NO_POS;
  c->slots[s].fn = NULL;
  c->slots[s].arg = NULL;
  c->slots[s].next_free = c->free_head;
  c->free_head = s;
}

uint64_t sim_at(struct simclock *c, uint64_t t, sim_fn fn, void *arg)
{
  uint32_t s;
  if (c->free_head != NO_POS) {
    s = c->free_head;
    c->free_head = c->slots[s].next_free;
  } else {
    if (c->nslots == c->capslots) {
      c->capslots = c->capslots ? 2 * c->capslots : 64;
      c->slots = grow(c->slots, c->capslots, sizeof *c->slots);
      c->heap = grow(c->heap, c->capslots, sizeof *c->heap);
      for (uint32_t i = c->nslots; i < c->capslots; i++)
        c->slots[i].gen = 0;
    }
    s = c->nslots++;
  }
  struct slot *e = &c->slots[s];
  e->t = t < c->now ? c->now : t;   /* the past is now: time never runs back */
  e->seq = c->seq++;
  e->fn = fn;
  e->arg = arg;
  if (++e->gen == 0)
    e->gen = 1;                     /* generation 0 would allow handle 0 */
  e->pos = c->nheap++;
  c->heap[e->pos] = s;
  sift_up(c, e->pos);
  return (uint64_t)e->gen << 32 | s;
}

uint64_t sim_after(struct simclock *c, uint64_t dt, sim_fn fn, void *arg)
{
  return sim_at(c, c->now + dt, fn, arg);
}

int sim_cancel(struct simclock *c, uint64_t h)
{
  uint32_t s = (uint32_t)h, gen = (uint32_t)(h >> 32);
  if (gen == 0 || s >= c->nslots)
    return 0;
  struct slot *e = &c->slots[s];
  if (e->gen != gen || e->pos == NO_POS)
    return 0;                       /* ran, cancelled, or reused since */
  remove_at(c, s);
  return 1;
}

size_t sim_cancel_fn(struct simclock *c, sim_fn fn,
                     int (*drop)(void *arg, void *ctx), void *ctx)
{
  size_t n = 0;
  /* By slot, not by heap position: removing one moves others in the heap
   * but never to another slot. drop must not schedule. */
  for (uint32_t s = 0; s < c->nslots; s++) {
    if (c->slots[s].pos == NO_POS || c->slots[s].fn != fn)
      continue;
    if (drop(c->slots[s].arg, ctx)) {
      remove_at(c, s);
      n++;
    }
  }
  return n;
}

int sim_next(const struct simclock *c, uint64_t *t)
{
  if (c->nheap == 0)
    return 0;
  *t = c->slots[c->heap[0]].t;
  return 1;
}

int sim_step(struct simclock *c)
{
  if (c->nheap == 0)
    return 0;
  uint32_t s = c->heap[0];
  sim_fn fn = c->slots[s].fn;
  void *arg = c->slots[s].arg;
  c->now = c->slots[s].t;
  /* Free the slot before the call: the callback may schedule (and so
   * reuse it), and its own handle is no longer cancellable. */
  remove_at(c, s);
  c->steps++;
  fn(arg);
  return 1;
}

size_t sim_run_until(struct simclock *c, uint64_t t)
{
  size_t n = 0;
  uint64_t next;
  while (sim_next(c, &next) && next <= t) {
    sim_step(c);
    n++;
  }
  if (c->now < t)
    c->now = t;
  return n;
}
