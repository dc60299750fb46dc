/*
 * sum.h: the checksum of everything auralog stores or ships with one: a
 * redo record (record.c rec_crc), a page version (node/store_pages.c), a
 * hot-log frame (node/hotlog.c).
 *
 * XXH3 (libxxhash, Debian's), 64 bits folded to the 32 the formats keep.
 * It replaced zlib's crc32 (store format 2, node/store.c): a node checks
 * a record's sum when it arrives, when it builds a page from it and when
 * GC frees it, and crc32 over a record's fields, 8 bytes at a call, was
 * a tenth of a busy node's CPU (perf, `auralog bench` write-only). XXH3
 * runs in the CPU's vector units on every machine the kit runs on, with
 * no table; what a checksum is for here (a torn write, a flipped bit, a
 * frame that is not one) it detects as well as a CRC: any change of the
 * bytes changes it with probability 1 - 2^-32.
 *
 * Interface: a running sum over fixed-width fields and byte strings.
 *   sum_init   start (every sum starts from the same seed)
 *   sum_u64    add a 64-bit field (its value, not its memory layout)
 *   sum_bytes  add a byte string, its length first
 *   sum_end    the 32-bit sum
 *   sum32      the sum of one byte string
 */
#ifndef AURALOG_SUM_H
#define AURALOG_SUM_H

#include <stddef.h>
#include <stdint.h>

struct sum {
  uint64_t h;
  size_t n;                  /* bytes waiting in buf */
  uint8_t buf[64];
};

void sum_init(struct sum *s);
void sum_u64(struct sum *s, uint64_t v);
void sum_bytes(struct sum *s, const void *p, size_t n);
uint32_t sum_end(struct sum *s);
uint32_t sum32(const void *p, size_t n);

#endif
