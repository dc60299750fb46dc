/*
 * diff.h: page-delta redo (paper §3.1: a log record is the difference
 * between a page's after-image and its before-image).
 *
 * page_diff() compares two versions of a page and returns the byte ranges
 * that changed, sorted and disjoint, merging ranges separated by fewer
 * than DIFF_MERGE_GAP unchanged bytes (each range costs a few bytes of
 * framing, so a short gap is cheaper to ship than a new range). Applying
 * the ranges to the before-image gives the after-image exactly:
 *   rec_apply(before, diff(before, after)) == after.
 *
 * Pure: no allocation beyond what the caller passes, no I/O.
 */
#ifndef AURALOG_DIFF_H
#define AURALOG_DIFF_H

#include <stddef.h>
#include <stdint.h>

struct drange {
  uint32_t off;
  uint32_t len;
};

/* Diff before (size bytes, or NULL for a zero page) against after. Writes
 * at most max ranges to out and returns how many ranges the diff has; if
 * that is more than max, out holds the first max and the caller should
 * retry with a larger array (size/2 + 1 ranges always suffice). Returns 0
 * when the pages are equal. */
size_t page_diff(const uint8_t *before, const uint8_t *after, uint32_t size,
                 struct drange *out, size_t max);

/* Bytes the ranges carry (the payload of the record). */
size_t diff_bytes(const struct drange *r, size_t n);

#endif
