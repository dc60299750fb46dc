/*
 * countvfs.h: a pass-through VFS ("count") that counts syncs and bytes
 * written by stock SQLite (see countvfs.c).
 */
#ifndef AURALOG_COUNTVFS_H
#define AURALOG_COUNTVFS_H

#include <stdint.h>

int countvfs_register(void);
void countvfs_get(uint64_t *syncs, uint64_t *bytes);

#endif
