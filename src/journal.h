/*
 * journal.h: the cluster's event journal on disk (labs/README.md): what
 * happened to a cluster, one JSON object a line, appended by the
 * coordinator (coord/journal.c decides what to record) and read by `auralog
 * lab check`, which grades a lab from it.
 *
 * A line:
 *   {"seq":N,"t":WALL_MS,"kind":"K",...fields...,"mac":"HEX"}
 * The MAC (keyed BLAKE2b) is over the previous line's MAC and this line's
 * bytes up to ,"mac": so a line written by hand, or one deleted or moved,
 * fails to verify, and every later line with it. Cutting the tail off
 * goes unseen: it only removes facts. The key is the coordinator's own:
 * journal.key beside the journal (random, mode 0600, made by the first
 * journal_open), not derived from the cluster key, so holding the
 * cluster key (every member and tool does) is not enough to write good
 * lines. Whoever can read the coordinator's data directory (the student
 * who runs the cluster, as the same user) still could, with a program:
 * the MAC stops an edit by hand, a copied file and a forger with the
 * cluster key only. What the labs do beyond it: labs/README.md.
 *
 *   journal_open    append to path, continuing its chain (the key:
 *                   path's directory's journal.key, made if missing)
 *   journal_append  one line (fields: `"a":1,"b":"x"`, or "")
 *   journal_read    every line of path as cJSON objects, oldest first;
 *                   *bad counts lines that fail their MAC: each stands in
 *                   the array as {"kind":"bad"}, and the chain goes on
 *                   from the last good line; key gets the key read
 *   journal_read_key the same with a key and the MAC the chain starts
 *                   from (a run directory's excerpt: lab verify)
 *   journal_key_id  a short public name of a key (which cluster wrote it)
 */
#ifndef AURALOG_JOURNAL_H
#define AURALOG_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>


#define JOURNAL_MAC_BYTES 32

struct journal {
  int fd;
  uint8_t key[32];
  uint8_t prev[JOURNAL_MAC_BYTES];
  uint64_t seq;
};

int journal_open(struct journal *j, const char *path, char *why, size_t whylen);
void journal_append(struct journal *j, uint64_t wall_ms, const char *kind, const char *fields);
void journal_close(struct journal *j);
/* An array of the lines' objects (caller deletes), or NULL with why. */
cJSON *journal_read(const char *path, uint8_t key[32], int *bad, char *why, size_t whylen);
cJSON *journal_read_key(const char *path, const uint8_t key[32],
                        const uint8_t anchor[JOURNAL_MAC_BYTES], int *bad, char *why,
                        size_t whylen);
void journal_key_id(const uint8_t key[32], char out[17]);

#endif
