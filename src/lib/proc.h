/*
 * proc.h: starting auralog's own processes in the background.
 */
#ifndef AURALOG_PROC_H
#define AURALOG_PROC_H

#include <sys/types.h>

/* Fork and exec path with argv: stdin from /dev/null, stdout and stderr
 * appended to log, AURALOG_COORD unset (everything started this way gets
 * its addresses as arguments), and in a session of its own if setsid (so
 * that it outlives its starter's terminal). Returns the child's pid, or -1. */
pid_t proc_spawn(const char *path, char *const argv[], const char *log, int setsid);

#endif
