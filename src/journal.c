/*
 * journal.c: the cluster's event journal on disk: MAC-chained JSON lines
 * (the format and what the MAC does and does not stop: journal.h). The
 * coordinator's driver appends (coord/main.c); `auralog lab check` reads.
 * The MAC key is the coordinator's own, journal.key beside the journal:
 * random, made once, never derived from the cluster key.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "journal.h"

static const char MAC_TAG[] = ",\"mac\":\"";

/* path's directory's journal.key into key: made (random, 0600) if create
 * and there is none. 0, or -1 with why. */
static int key_at(const char *path, uint8_t key[32], int create, char *why, size_t whylen)
{
  char copy[PATH_MAX], kp[PATH_MAX + 16];
  snprintf(copy, sizeof copy, "%s", path);
  snprintf(kp, sizeof kp, "%s/journal.key", dirname(copy));
  int fd = open(kp, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (sodium_init() < 0) {
      snprintf(why, whylen, "libsodium will not start");
      return -1;
    }
    randombytes_buf(key, 32);
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%d", kp, (int)getpid());
    int w = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (w < 0 || write(w, key, 32) != 32 || fsync(w) != 0 || close(w) != 0 ||
        rename(tmp, kp) != 0) {
      snprintf(why, whylen, "cannot make %s: %s", kp, strerror(errno));
      return -1;
    }
    return 0;
  }
  if (fd < 0 || read(fd, key, 32) != 32) {
    snprintf(why, whylen, "the journal's key %s: %s", kp, fd < 0 ? strerror(errno) : "short");
    if (fd >= 0)
      close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

void journal_key_id(const uint8_t key[32], char out[17])
{
  static const char label[] = "auralog journal key id";
  uint8_t h[8];
  crypto_generichash(h, sizeof h, (const uint8_t *)label, sizeof label, key, 32);
  sodium_bin2hex(out, 17, h, sizeof h);
}

static void line_mac(const uint8_t key[32], const uint8_t prev[JOURNAL_MAC_BYTES],
                     const char *line, size_t len, uint8_t out[JOURNAL_MAC_BYTES])
{
  crypto_generichash_state st;
  crypto_generichash_init(&st, key, 32, JOURNAL_MAC_BYTES);
  crypto_generichash_update(&st, prev, JOURNAL_MAC_BYTES);
  crypto_generichash_update(&st, (const uint8_t *)line, len);
  crypto_generichash_final(&st, out, JOURNAL_MAC_BYTES);
}

/* Check one line (no newline) against prev: 1 and its MAC in mac, or 0. */
static int line_ok(const uint8_t key[32], const uint8_t prev[JOURNAL_MAC_BYTES],
                   const char *line, uint8_t mac[JOURNAL_MAC_BYTES])
{
  const char *tag = strstr(line, MAC_TAG);
  if (tag == NULL)
    return 0;
  const char *hex = tag + sizeof MAC_TAG - 1;
  uint8_t got[JOURNAL_MAC_BYTES];
  size_t n = 0;
  if (sodium_hex2bin(got, sizeof got, hex, 2 * JOURNAL_MAC_BYTES, NULL, &n, NULL) != 0 ||
      n != sizeof got || strcmp(hex + 2 * JOURNAL_MAC_BYTES, "\"}") != 0)
    return 0;
  line_mac(key, prev, line, (size_t)(tag - line), mac);
  return sodium_memcmp(mac, got, sizeof got) == 0;
}

/* Walk path's lines: each good one (with its parsed object, if want) goes
 * to *arr; the chain's last MAC and seq to prev and *seq. */
static int scan(const char *path, const uint8_t key[32], cJSON *arr, int *bad,
                uint8_t prev[JOURNAL_MAC_BYTES], uint64_t *seq)
{
  FILE *f = fopen(path, "r");
  *seq = 0;
  *bad = 0;
  if (f == NULL)
    return errno == ENOENT ? 0 : -1;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    if (line[len - 1] == '\n')
      line[--len] = 0;
    if (len == 0)
      continue;
    uint8_t mac[JOURNAL_MAC_BYTES];
    if (!line_ok(key, prev, line, mac)) {
      /* In its place, so a reader knows where: {"kind":"bad"}. */
      ++*bad;
      if (arr)
        cJSON_AddItemToArray(arr, cJSON_Parse("{\"kind\":\"bad\"}"));
      continue;
    }
    memcpy(prev, mac, sizeof mac);
    cJSON *o = cJSON_Parse(line);
    cJSON *s = cJSON_GetObjectItem(o, "seq");
    if (cJSON_IsNumber(s))
      *seq = (uint64_t)s->valuedouble;
    if (arr && o)
      cJSON_AddItemToArray(arr, o);
    else
      cJSON_Delete(o);
  }
  free(line);
  fclose(f);
  return 0;
}

int journal_open(struct journal *j, const char *path, char *why, size_t whylen)
{
  int bad;
  if (key_at(path, j->key, 1, why, whylen) != 0)
    return -1;
  memset(j->prev, 0, sizeof j->prev);
  if (scan(path, j->key, NULL, &bad, j->prev, &j->seq) != 0) {
    snprintf(why, whylen, "journal %s: %s", path, strerror(errno));
    return -1;
  }
  j->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (j->fd < 0) {
    snprintf(why, whylen, "journal %s: %s", path, strerror(errno));
    return -1;
  }
  /* A line torn by a crash: end it, so the next one starts clean (it
   * fails its MAC and is left out; the chain goes on from the last good). */
  off_t end = lseek(j->fd, 0, SEEK_END);
  char c = '\n';
  int rfd = open(path, O_RDONLY | O_CLOEXEC);
  if (end > 0 && rfd >= 0 && pread(rfd, &c, 1, end - 1) == 1 && c != '\n' &&
      write(j->fd, "\n", 1) != 1)
    c = 0;
  if (rfd >= 0)
    close(rfd);
  return 0;
}

void journal_append(struct journal *j, uint64_t wall_ms, const char *kind, const char *fields)
{
  if (j == NULL || j->fd < 0)
    return;
  size_t cap = strlen(fields) + strlen(kind) + 256;
  char *line = malloc(cap);
  int n = snprintf(line, cap, "{\"seq\":%llu,\"t\":%llu,\"kind\":\"%s\"%s%s",
                   (unsigned long long)j->seq + 1, (unsigned long long)wall_ms, kind,
                   fields[0] ? "," : "", fields);
  uint8_t mac[JOURNAL_MAC_BYTES];
  line_mac(j->key, j->prev, line, (size_t)n, mac);
  char hex[2 * JOURNAL_MAC_BYTES + 1];
  sodium_bin2hex(hex, sizeof hex, mac, sizeof mac);
  n += snprintf(line + n, cap - (size_t)n, "%s%s\"}\n", MAC_TAG, hex);
  /* One write(): with O_APPEND a line lands whole, after the others. */
  if (write(j->fd, line, (size_t)n) == n) {
    memcpy(j->prev, mac, sizeof mac);
    j->seq++;
  }
  free(line);
}

void journal_close(struct journal *j)
{
  if (j->fd >= 0)
    close(j->fd);
  j->fd = -1;
}

cJSON *journal_read_key(const char *path, const uint8_t key[32],
                        const uint8_t anchor[JOURNAL_MAC_BYTES], int *bad, char *why,
                        size_t whylen)
{
  uint8_t prev[JOURNAL_MAC_BYTES];
  uint64_t seq;
  if (anchor)
    memcpy(prev, anchor, sizeof prev);
  else
    memset(prev, 0, sizeof prev);
  cJSON *arr = cJSON_CreateArray();
  if (scan(path, key, arr, bad, prev, &seq) != 0) {
    snprintf(why, whylen, "cannot read the journal %s: %s", path, strerror(errno));
    cJSON_Delete(arr);
    return NULL;
  }
  return arr;
}

cJSON *journal_read(const char *path, uint8_t key[32], int *bad, char *why, size_t whylen)
{
  if (key_at(path, key, 0, why, whylen) != 0)
    return NULL;
  return journal_read_key(path, key, NULL, bad, why, whylen);
}
