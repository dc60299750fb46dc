/*
 * farena.c: a bump allocator for received frames (see farena.h).
 *
 * Chunks of FARENA_CHUNK bytes (a larger one for a larger allocation, a
 * hydration's page batch); an allocation takes the next 16-byte-aligned
 * bytes of the newest chunk, or a new chunk; a free does nothing. At the
 * outermost farena_leave every chunk but the first is freed and the first
 * is emptied: a node's steady state is one chunk and no malloc per frame.
 *
 * Invariant A: memory handed out while depth > 0 stays valid until depth
 * returns to 0. Nested frames (depth > 1) only allocate further, so an
 * outer frame's messages are never reused under it.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "net/farena.h"
#include "param.h"

#if defined(__SANITIZE_ADDRESS__)
#define FARENA_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FARENA_OFF 1
#endif
#endif

struct chunk {
  struct chunk *prev;          /* the older chunk */
  size_t cap, used;
  alignas(16) unsigned char data[];
};

struct farena {
  struct chunk *head;          /* the newest chunk; the first is at the end */
  unsigned depth;
  ProtobufCAllocator a;
};

static _Thread_local struct farena fa;

/* Unused under AddressSanitizer (FARENA_OFF): malloc then, so that ASan
 * sees every frame's memory. */
__attribute__((unused)) static void *fa_alloc(void *ctx, size_t n)
{
  (void)ctx;
  n = (n + 15) & ~(size_t)15;
  struct chunk *c = fa.head;
  if (c == NULL || c->cap - c->used < n) {
    size_t cap = n > FARENA_CHUNK ? n : FARENA_CHUNK;
    c = malloc(sizeof *c + cap);
    if (c == NULL)
      return NULL;             /* protobuf-c fails the unpack: a bad frame */
    c->cap = cap;
    c->used = 0;
    c->prev = fa.head;
    fa.head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  return p;
}

__attribute__((unused)) static void fa_free(void *ctx, void *p)
{
  (void)ctx;
  (void)p;                     /* let go at the outermost farena_leave */
}

ProtobufCAllocator *farena_enter(void)
{
#ifdef FARENA_OFF
  return NULL;
#else
  fa.depth++;
  fa.a.alloc = fa_alloc;
  fa.a.free = fa_free;
  fa.a.allocator_data = NULL;
  return &fa.a;
#endif
}

void farena_leave(void)
{
#ifndef FARENA_OFF
  if (fa.depth == 0 || --fa.depth > 0)
    return;                    /* Invariant A: an outer frame still uses it */
  struct chunk *c = fa.head;
  while (c && c->prev) {       /* every chunk but the first */
    struct chunk *p = c->prev;
    free(c);
    c = p;
  }
  if (c && c->cap > FARENA_CHUNK) {
    free(c);                   /* a large first one is not kept */
    c = NULL;
  }
  if (c)
    c->used = 0;
  fa.head = c;
#endif
}

size_t farena_held(void)
{
  size_t n = 0;
  for (const struct chunk *c = fa.head; c; c = c->prev)
    n += c->cap;
  return n;
}
