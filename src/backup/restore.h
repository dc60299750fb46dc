/*
 * restore.h: a volume as it was at a point, rebuilt from its backup
 * (paper §2.3, Fig. 4 step 6; DESIGN.md invariant 11).
 *
 * The point restored is consistent: the highest CPL at or below the
 * target (a CPL ends a mini-transaction, so no transaction is there in
 * part: invariant 2), and every PG's objects must reach the target
 * without a gap (bkplan.h). Each PG is its newest base image at or below
 * the point (or zero pages) with its records up to the point applied in
 * LSN order, and the PGs side by side are the database file: page n of
 * the volume is at byte n * page_size.
 *
 * The target, one of:
 *   an LSN          (to_lsn)
 *   a time          (to_ms, unix ms): the highest VDL the uploading
 *                   segments noted at or before it (the pieces' clock)
 *   the latest      neither: the highest point every PG reaches
 * A target past what every PG reaches, or below the oldest point they all
 * still hold (retention), is refused with what the backup does hold.
 *
 * An object that fails its checks (damaged: torn, bit rot, a stranger's
 * bytes) is treated as absent and the restore planned again without it:
 * an older base with more log, or other pieces over the same range, stand
 * in for it where they exist (res says how many it went around). Only
 * when no plan avoids the damaged objects is the restore refused, in one
 * line naming them and what the backup holds without them (restore.c R4).
 * A time is looked for in the notes of the undamaged pieces only.
 *
 * Interface:
 *   restore_window  the points every PG of vol can be restored to
 *   restore_pages   rebuild vol at a target, page by page: fn gets every
 *                   page of every PG in order (zeros too); a nonzero
 *                   return stops it (the simulator checks them here)
 *   restore_build   the same into a stock SQLite file at path, checked
 *                   (PRAGMA integrity_check) before it returns; res says
 *                   what was done
 *   restore_into_volume  such a file copied into a new volume of the
 *                   cluster at coord, through the auralog VFS
 *                   (restore_into.c)
 */
#ifndef AURALOG_RESTORE_H
#define AURALOG_RESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "backup/objstore.h"

struct rs_target {
  uint64_t to_lsn;           /* 0: not by LSN */
  uint64_t to_ms;            /* 0: not by time */
};

struct rs_result {
  uint64_t target;           /* the LSN asked for (a time's: the VDL noted then) */
  uint64_t cpl;              /* the point restored: the highest CPL at or below it */
  uint64_t lo, hi;           /* the points the backup holds for every PG */
  uint64_t at_ms;            /* a time's: when the VDL was noted at target */
  uint32_t npgs, page_size, pg_pages;
  uint64_t pages;            /* the file's size in pages */
  uint64_t records;          /* records applied */
  uint64_t objects, bytes;   /* objects read, and their bytes */
  uint32_t damaged;          /* objects that failed their checks, gone around (R4) */
  char note[400];            /* ... named, with what their checks said ("": none) */
};

/* The points every PG of vol can be restored to, [*lo, *hi], and its PG
 * count: 0, or -1 with why (no backup of vol, a PG missing). */
int restore_window(struct objstore *o, uint64_t vol, uint64_t *lo, uint64_t *hi,
                   uint32_t *npgs, char *why, size_t whylen);

typedef int (*rs_page_fn)(void *arg, uint32_t page_no, const uint8_t *page, uint32_t page_size,
                          char *why, size_t whylen);
int restore_pages(struct objstore *o, uint64_t vol, const struct rs_target *t,
                  rs_page_fn fn, void *arg, struct rs_result *res, char *why, size_t whylen);

int restore_build(struct objstore *o, uint64_t vol, const struct rs_target *t,
                  const char *path, struct rs_result *res, char *why, size_t whylen);

/* Copy the SQLite file into volume newvol (made now, with pg_pages pages
 * a PG) of the cluster whose coordinator is coord: one transaction through
 * the auralog VFS. The caller acts for the operator. 0, or -1 with why. */
int restore_into_volume(const char *file, const char *coord, const char *newvol,
                        uint32_t pg_pages, char *why, size_t whylen);

#endif
