/*
 * diff.c: page-delta redo (see diff.h; paper §3.1).
 *
 * Aurora ships only redo: for each page a mini-transaction changed, the
 * record is the difference between the after-image and the before-image.
 * Here that difference is a list of byte ranges; a segment applies it with
 * rec_apply() by copying the ranges' bytes from the after-image over the
 * page.
 *
 * This runs on the commit path for every dirty page, and most of a dirty
 * page is usually unchanged (SQLite rewrites a cell, a pointer, a header
 * field), so the scan skips equal bytes eight at a time: it loads 8-byte
 * words (memcpy, so any alignment is fine), XORs them, and only looks at
 * individual bytes of a word whose XOR is non-zero. The last size % 8 bytes
 * are loaded into zero-padded words, so the padding compares equal and the
 * edge needs no separate byte loop.
 *
 * Invariants of the scan, with a range open as [start, end):
 *   - every byte below pos was examined;
 *   - end - 1 is the last changed byte seen so far (end <= pos), and the
 *     bytes in [end, pos) are unchanged;
 *   - every range already emitted ends more than DIFF_MERGE_GAP - 1
 *     unchanged bytes before the next one starts.
 * So a changed byte at p either joins the open range (p - end <
 * DIFF_MERGE_GAP: the gap is shipped as part of the range) or closes it
 * and opens a new one at p. The result is sorted, disjoint and non-empty.
 */
#include <string.h>

#include "param.h"
#include "vfs/diff.h"

/* Word XOR as if the word were stored little-endian: bit 8*i..8*i+7 of the
 * result is byte i of memory, whatever the machine's byte order. */
static inline uint64_t xor_word(const uint8_t *a, const uint8_t *b)
{
  uint64_t x, y = 0;
  memcpy(&x, b, 8);
  if (a)
    memcpy(&y, a, 8);
  x ^= y;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  x = __builtin_bswap64(x);
#endif
  return x;
}

/* The same for the last len (< 8) bytes: zero padding compares equal. */
static inline uint64_t xor_tail(const uint8_t *a, const uint8_t *b, size_t len)
{
  uint8_t ta[8] = {0}, tb[8] = {0};
  memcpy(tb, b, len);
  if (a)
    memcpy(ta, a, len);
  return xor_word(ta, tb);
}

/* Lowest / highest changed byte of a non-zero word XOR. */
static inline unsigned first_byte(uint64_t x)
{
  return (unsigned)__builtin_ctzll(x) / 8;
}

static inline unsigned last_byte(uint64_t x)
{
  return 7 - (unsigned)__builtin_clzll(x) / 8;
}

struct scan {
  struct drange *out;
  size_t max, count;
  size_t start, end;        /* the open range; end == 0: none open yet */
};

static inline void emit(struct scan *s)
{
  if (s->count < s->max)
    s->out[s->count] = (struct drange){(uint32_t)s->start, (uint32_t)(s->end - s->start), 0, 0};
  s->count++;
}

/* A variable, not the macro, in comparisons: with DIFF_MERGE_GAP 0 the
 * macro would draw "unsigned >= 0 is always true" from -Wextra. */
static const size_t merge_gap = DIFF_MERGE_GAP;

/* first..last (inclusive) are changed bytes that belong in one range: the
 * caller checked that nothing between them is a gap of merge_gap or more
 * unchanged bytes. */
static inline void changed(struct scan *s, size_t first, size_t last)
{
  if (s->end == 0) {
    s->start = first;       /* the first change of the page */
  } else if (first > s->end && first - s->end >= merge_gap) {
    /* The gap is too long to be worth shipping. (first == end is no gap:
     * adjacent changes are one range even with DIFF_MERGE_GAP 0.) */
    emit(s);
    s->start = first;
  }
  s->end = last + 1;
}

/* One word's worth of changes, x != 0, for the word at byte offset base. */
static inline void word(struct scan *s, size_t base, uint64_t x)
{
  if (merge_gap >= 7) {
    /* Two changed bytes of one word are at most 6 unchanged bytes apart,
     * which is below the merge gap: the whole word joins one range. */
    changed(s, base + first_byte(x), base + last_byte(x));
    return;
  }
  /* A small merge gap can split a word: visit its changed bytes one by one
   * (merge_gap is a constant, so the compiler keeps only one path). */
  while (x) {
    unsigned i = first_byte(x);
    changed(s, base + i, base + i);
    x &= ~(0xffull << (8 * i));
  }
}

size_t page_diff(const uint8_t *before, const uint8_t *after, uint32_t size,
                 struct drange *out, size_t max)
{
  /* LAB 20 BEGIN: the page diff (§3.1). Find the byte ranges where after
   * differs from before (NULL: a zero page), sorted and disjoint, merging
   * two changes fewer than DIFF_MERGE_GAP unchanged bytes apart into one
   * range (adjacent changes are always one). Write the first max ranges
   * to out, and return how many there are. The word helpers above are
   * the fast way; a byte loop is a correct first step.
   * stub: (void)before; (void)after; (void)size; (void)out; (void)max;
   * stub: (void)merge_gap;
   * stub: return 0;
   */
  struct scan s = { .out = out, .max = max };
  size_t full = size & ~(size_t)7;
  size_t pos;

  if (before) {
    for (pos = 0; pos < full; pos += 8) {
      uint64_t x = xor_word(before + pos, after + pos);
      if (x)
        word(&s, pos, x);
    }
  } else {
    /* Against a zero page: a separate loop keeps the common case free of
     * a per-word NULL test. */
    for (pos = 0; pos < full; pos += 8) {
      uint64_t x = xor_word(NULL, after + pos);
      if (x)
        word(&s, pos, x);
    }
  }
  if (pos < size) {
    uint64_t x = xor_tail(before ? before + pos : NULL, after + pos, size - pos);
    if (x)
      word(&s, pos, x);
  }
  if (s.end != 0)
    emit(&s);               /* close the last range */
  return s.count;
  /* LAB 20 END */
}

size_t diff_bytes(const struct drange *r, size_t n)
{
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    if (!r[i].copy)
      total += r[i].len;
  return total;
}

/* ---- copies ---------------------------------------------------------------------
 *
 * A copy reads the page as it was before the record (what the segment
 * holds when the record arrives), not as the ranges before it left it: so
 * the ranges of a record still mean the same in any order, and a shift
 * whose new head is written first (a pointer inserted, then the array
 * moved along) is one literal and one copy. */

static const int shifts[] = {DIFF_COPY_SHIFTS};

static void put(struct drange *out, size_t max, size_t *k, struct drange r)
{
  if (*k < max)
    out[*k] = r;
  (*k)++;
}

size_t diff_copies(const uint8_t *before, const uint8_t *after, uint32_t size,
                   const struct drange *in, size_t n, uint8_t *scratch,
                   struct drange *out, size_t max)
{
  size_t k = 0;
  const uint8_t *base = before;
  if (base == NULL) {
    memset(scratch, 0, size);
    base = scratch;
  }
  for (size_t i = 0; i < n; i++) {
    size_t x = in[i].off, e = (size_t)in[i].off + in[i].len, lit = x;
    while (x < e) {
      size_t best = 0, from = 0;
      for (size_t s = 0; s < sizeof shifts / sizeof *shifts; s++) {
        long src = (long)x - shifts[s];
        if (src < 0 || src >= (long)size)
          continue;
        size_t run = 0;
        while (x + run < e && (size_t)src + run < size && after[x + run] == base[src + run])
          run++;
        if (run > best) {
          best = run;
          from = (size_t)src;
        }
      }
      if (best < DIFF_COPY_MIN) {
        x++;                 /* a literal byte */
        continue;
      }
      if (x > lit)
        put(out, max, &k, (struct drange){(uint32_t)lit, (uint32_t)(x - lit), 0, 0});
      put(out, max, &k, (struct drange){(uint32_t)x, (uint32_t)best, (uint32_t)from, 1});
      x += best;
      lit = x;
    }
    if (e > lit)
      put(out, max, &k, (struct drange){(uint32_t)lit, (uint32_t)(e - lit), 0, 0});
  }
  return k;
}
