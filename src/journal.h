/*
 * journal.h: the cluster's event journal on disk (labs/README.md): what
 * happened to a cluster, one JSON object a line, appended by the
 * coordinator (coord/journal.c decides what to record) and read by `auralog
 * lab check`, which grades a lab from it.
 *
 * A line:
 *   {"seq":N,"t":WALL_MS,"kind":"K",...fields...,"mac":"HEX"}
 * The MAC is the cluster key's (keyed BLAKE2b, a key derived for the
 * journal) over the previous line's MAC and this line's bytes up to
 * ,"mac": so a line written by hand, or one deleted or moved, fails to
 * verify, and every later line with it. Cutting the tail off goes unseen:
 * it only removes facts. Whoever holds the key (every member, and the
 * student who runs the cluster) could write good lines with a program:
 * the MAC stops an edit by hand or a copied file, not a determined forger.
 *
 *   journal_open    append to path, continuing its chain
 *   journal_append  one line (fields: `"a":1,"b":"x"`, or "")
 *   journal_read    every line of path as cJSON objects, oldest first;
 *                   *bad counts lines that fail their MAC: each stands in
 *                   the array as {"kind":"bad"}, and the chain goes on
 *                   from the last good line
 */
#ifndef AURALOG_JOURNAL_H
#define AURALOG_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "net/auth.h"

#define JOURNAL_MAC_BYTES 32

struct journal {
  int fd;
  uint8_t key[32];
  uint8_t prev[JOURNAL_MAC_BYTES];
  uint64_t seq;
};

int journal_open(struct journal *j, const char *path, const struct auth_key *k,
                 char *why, size_t whylen);
void journal_append(struct journal *j, uint64_t wall_ms, const char *kind, const char *fields);
void journal_close(struct journal *j);
/* An array of the lines' objects (caller deletes), or NULL with why. */
cJSON *journal_read(const char *path, const struct auth_key *k, int *bad,
                    char *why, size_t whylen);

#endif
