/*
 * community.h: the community binlog's two-phase commit (community.c says
 * how and why): the engine's local binlog file, kept in agreement with the
 * volume's redo as MySQL keeps its binlog with InnoDB's.
 *
 *   community_open     before the volume opens: open the file, read it
 *                      all (the recovery scan), hand its newest XID to the
 *                      volume's recovery (vol_rollforward_xid)
 *   community_opened   after: cut frames above the VDL served from
 *   community_commit   a commit with events: prepare, binlog, commit
 *   community_on / community_path / community_close
 */
#ifndef AURALOG_COMMUNITY_H
#define AURALOG_COMMUNITY_H

#include <stddef.h>
#include <stdint.h>

#include "vfs/volume.h"

int community_open(const char *path, char *why, size_t whylen);
int community_opened(struct volume *v, char *why, size_t whylen);
/* The MTR pages[0..n) with events bl[0..bllen) (taken: freed): its commit
 * LSN (the XID), or 0 with why (the commit failed; after its prepare, the
 * volume is stopped: CB3). */
uint64_t community_commit(struct volume *v, const struct mtr_page *pages, size_t n,
                          uint8_t *bl, size_t bllen, char *why, size_t whylen);
int community_on(void);
const char *community_path(void);
void community_close(void);

#endif
