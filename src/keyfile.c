/*
 * keyfile.c: where a process finds the cluster key (see keyfile.h).
 *
 * A key file holds the 32-byte key as 64 hex digits and a newline, mode
 * 0600: like ssh, a key that others may read is refused, since whoever
 * reads it is a member of the cluster (auth.h). The key is looked for in
 * order: --key FILE (main.c turns it into AURALOG_KEY, so that every
 * process a command starts inherits it), $AURALOG_KEY, then cluster.key
 * in the cluster's directory (--dir of the command, else $AURALOG_DIR,
 * else ~/.auralog): the one `cluster up` creates.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "keyfile.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct auth_key the_key;
static int have_key;
static char use_dir[PATH_MAX];
static char failed[PATH_MAX + 200];

int key_read(const char *path, struct auth_key *k, char *why, size_t whylen)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, whylen, "cannot read the cluster key %s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  char buf[130];
  ssize_t n = -1;
  int statted = fstat(fd, &st) == 0;
  if (statted && !(st.st_mode & 077))
    n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (statted && (st.st_mode & 077)) {
    snprintf(why, whylen, "the cluster key %s may be read by others (mode %03o): "
             "chmod 600 it", path, (unsigned)(st.st_mode & 0777));
    return -1;
  }
  if (n < 0) {
    snprintf(why, whylen, "cannot read the cluster key %s", path);
    return -1;
  }
  buf[n] = 0;
  size_t len = strcspn(buf, "\r\n");
  size_t got = 0;
  if (len != 2 * AUTH_KEY_BYTES ||
      sodium_hex2bin(k->k, sizeof k->k, buf, len, NULL, &got, NULL) != 0 ||
      got != AUTH_KEY_BYTES) {
    snprintf(why, whylen, "%s is not a cluster key (64 hex digits expected)", path);
    return -1;
  }
  sodium_memzero(buf, sizeof buf);
  return 0;
}

int key_create(const char *path, char *why, size_t whylen)
{
  if (auth_init() != 0) {
    snprintf(why, whylen, "libsodium failed to start");
    return -1;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST)
      return 0;
    snprintf(why, whylen, "cannot create the cluster key %s: %s", path, strerror(errno));
    return -1;
  }
  struct auth_key k;
  char hex[2 * AUTH_KEY_BYTES + 2];
  auth_random(k.k, sizeof k.k);
  auth_hex(k.k, sizeof k.k, hex);
  strcat(hex, "\n");
  ssize_t n = write(fd, hex, strlen(hex));
  int ok = n == (ssize_t)strlen(hex) && fsync(fd) == 0;
  close(fd);
  sodium_memzero(&k, sizeof k);
  sodium_memzero(hex, sizeof hex);
  if (!ok) {
    unlink(path);
    snprintf(why, whylen, "cannot write the cluster key %s", path);
    return -1;
  }
  return 0;
}

void key_use_dir(const char *dir)
{
  pthread_mutex_lock(&mu);
  snprintf(use_dir, sizeof use_dir, "%s", dir);
  pthread_mutex_unlock(&mu);
}

void key_path(char *out, size_t n)
{
  const char *env = getenv("AURALOG_KEY");
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return;
  }
  const char *dir = use_dir[0] ? use_dir : getenv("AURALOG_DIR");
  if (dir && *dir) {
    snprintf(out, n, "%s/cluster.key", dir);
    return;
  }
  const char *home = getenv("HOME");
  snprintf(out, n, "%s/.auralog/cluster.key", home && *home ? home : "/tmp");
}

const struct auth_key *key_get(char *why, size_t whylen)
{
  pthread_mutex_lock(&mu);
  if (!have_key && !failed[0]) {
    char path[PATH_MAX + 16];
    key_path(path, sizeof path);
    if (auth_init() != 0)
      snprintf(failed, sizeof failed, "libsodium failed to start");
    else if (key_read(path, &the_key, failed, sizeof failed) == 0)
      have_key = 1;
    else if (access(path, F_OK) != 0)
      snprintf(failed, sizeof failed, "no cluster key at %s: pass --key FILE or set "
               "AURALOG_KEY (auralog cluster up creates DIR/cluster.key)", path);
  }
  const struct auth_key *k = have_key ? &the_key : NULL;
  if (k == NULL)
    snprintf(why, whylen, "%s", failed);
  pthread_mutex_unlock(&mu);
  return k;
}

void key_set(const struct auth_key *k)
{
  pthread_mutex_lock(&mu);
  auth_init();
  the_key = *k;
  have_key = 1;
  failed[0] = 0;
  pthread_mutex_unlock(&mu);
}

int key_signer(const char *path, struct auth_signer *sg, char *why, size_t whylen)
{
  struct auth_key seed;
  if (access(path, F_OK) != 0 && key_create(path, why, whylen) != 0)
    return -1;
  if (key_read(path, &seed, why, whylen) != 0)
    return -1;
  auth_signer_seed(sg, seed.k);
  sodium_memzero(&seed, sizeof seed);
  return 0;
}

int key_auth_off(void)
{
  const char *e = getenv("AURALOG_AUTH");
  return e && strcmp(e, "off") == 0;
}
