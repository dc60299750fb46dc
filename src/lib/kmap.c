/*
 * kmap.c: an open-addressed hash map of (u64, u32) -> u32 (see kmap.h).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/kmap.h"

#define DELETED (KMAP_NONE - 1)

static size_t slot_of(const struct kmap *m, uint64_t a, uint32_t b)
{
  /* splitmix64's finalizer over both parts. */
  uint64_t h = a * 0x9e3779b97f4a7c15ull ^ ((uint64_t)b + 0x632be59bd9b4e019ull);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return (size_t)h & (m->cap - 1);
}

uint32_t kmap_get(const struct kmap *m, uint64_t a, uint32_t b)
{
  if (m->cap == 0)
    return KMAP_NONE;
  for (size_t i = slot_of(m, a, b);; i = (i + 1) & (m->cap - 1)) {
    const struct kslot *s = &m->t[i];
    if (s->v == KMAP_NONE)
      return KMAP_NONE;
    if (s->v != DELETED && s->a == a && s->b == b)
      return s->v;
  }
}

/* Make room for one more key: rebuild at a size that keeps the table at
 * most half full (dropping deleted slots). */
static void rehash(struct kmap *m)
{
  size_t cap = m->cap ? m->cap : 16;
  while ((m->n + 1) * 4 > cap)   /* live keys at most a quarter after rebuilding */
    cap *= 2;
  struct kslot *old = m->t;
  size_t ocap = m->cap;
  m->t = malloc(cap * sizeof *m->t);
  if (m->t == NULL)
    abort();
  for (size_t i = 0; i < cap; i++)
    m->t[i].v = KMAP_NONE;
  m->cap = cap;
  m->n = m->used = 0;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].v != KMAP_NONE && old[i].v != DELETED)
      kmap_put(m, old[i].a, old[i].b, old[i].v);
  free(old);
}

void kmap_put(struct kmap *m, uint64_t a, uint32_t b, uint32_t v)
{
  if ((m->used + 1) * 2 > m->cap)
    rehash(m);
  size_t i = slot_of(m, a, b), tomb = SIZE_MAX;
  for (;; i = (i + 1) & (m->cap - 1)) {
    struct kslot *s = &m->t[i];
    if (s->v == KMAP_NONE)
      break;
    if (s->v == DELETED) {
      if (tomb == SIZE_MAX)
        tomb = i;
      continue;
    }
    if (s->a == a && s->b == b) {
      s->v = v;
      return;
    }
  }
  if (tomb != SIZE_MAX)
    i = tomb;                  /* reuse a deleted slot: used does not grow */
  else
    m->used++;
  m->t[i] = (struct kslot){a, b, v};
  m->n++;
}

int kmap_del(struct kmap *m, uint64_t a, uint32_t b)
{
  if (m->cap == 0)
    return 0;
  for (size_t i = slot_of(m, a, b);; i = (i + 1) & (m->cap - 1)) {
    struct kslot *s = &m->t[i];
    if (s->v == KMAP_NONE)
      return 0;
    if (s->v != DELETED && s->a == a && s->b == b) {
      s->v = DELETED;
      m->n--;
      return 1;
    }
  }
}

void kmap_free(struct kmap *m)
{
  free(m->t);
  memset(m, 0, sizeof *m);
}
