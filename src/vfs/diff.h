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
 * diff_copies() then finds, inside those ranges, runs of bytes that the
 * page already had a few bytes away, and ships them as copies instead of
 * bytes. SQLite keeps a B-tree page's cell pointers in a sorted array at
 * its head: inserting or deleting one cell shifts every later pointer by
 * two bytes, which a byte diff sees as hundreds of changed bytes on an
 * index page, though the change is "move this run two bytes along" (what
 * a logical redo record such as InnoDB's would say). A copy range says
 * exactly that in about ten bytes.
 *
 * Pure: no allocation beyond what the caller passes, no I/O.
 */
#ifndef AURALOG_DIFF_H
#define AURALOG_DIFF_H

#include <stddef.h>
#include <stdint.h>

/* A range of the after-image: bytes [off, off + len) either ship as they
 * are (a literal), or, if copy, are the len bytes that the before-image
 * holds at [from, from + len). Ranges are sorted by off and disjoint; as
 * every copy reads the before-image, their order does not matter. */
struct drange {
  uint32_t off;
  uint32_t len;
  uint32_t from;
  uint32_t copy;
};

/* Diff before (size bytes, or NULL for a zero page) against after. Writes
 * at most max ranges to out and returns how many ranges the diff has; if
 * that is more than max, out holds the first max and the caller should
 * retry with a larger array (size/2 + 1 ranges always suffice). Returns 0
 * when the pages are equal. */
size_t page_diff(const uint8_t *before, const uint8_t *after, uint32_t size,
                 struct drange *out, size_t max);

/* Split the literal ranges in[0..n) of a diff of before (NULL: zeros)
 * against after into literals and copies (runs of at least DIFF_COPY_MIN
 * bytes equal to the before-image DIFF_COPY_SHIFTS bytes away). scratch is
 * size bytes of working space. Writes at most max ranges to out and
 * returns how many there are (at most size, so max = size always
 * suffices); applying out to before gives after. */
size_t diff_copies(const uint8_t *before, const uint8_t *after, uint32_t size,
                   const struct drange *in, size_t n, uint8_t *scratch,
                   struct drange *out, size_t max);

/* Bytes the ranges carry (the payload of the record; copies carry none). */
size_t diff_bytes(const struct drange *r, size_t n);

#endif
