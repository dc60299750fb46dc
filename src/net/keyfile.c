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
 *
 * The operator's key (operator.key beside cluster.key, the same format:
 * the seed of an Ed25519 pair) is found the same way (DIR/operator.key of
 * a --dir, else $AURALOG_OPERATOR, else DIR/operator.key of $AURALOG_DIR or
 * ~/.auralog), but only by a process that acts for the
 * operator (op_use): the commands a person types and the engine they
 * start. A node, a replica and the coordinator never load it: the
 * coordinator knows only its public half (DIR/operator.pub).
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

#include "net/keyfile.h"

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

/* ---- the operator's key --------------------------------------------------- */

static int op_on;
static struct auth_signer the_op;
static int have_op;
static char op_failed[PATH_MAX + 200];
static char op_dir[PATH_MAX];

void op_use_dir(const char *dir)
{
  pthread_mutex_lock(&mu);
  snprintf(op_dir, sizeof op_dir, "%s", dir ? dir : "");
  have_op = 0;               /* look again: this cluster's operator */
  op_failed[0] = 0;
  pthread_mutex_unlock(&mu);
}

void op_use(int on)
{
  pthread_mutex_lock(&mu);
  op_on = on;
  have_op = 0;               /* look again: another cluster's, maybe */
  op_failed[0] = 0;
  pthread_mutex_unlock(&mu);
}

void op_path(char *out, size_t n)
{
  /* A cluster named by --dir has its operator's key beside it: that one,
   * whatever an inherited $AURALOG_OPERATOR says (a lab's second cluster,
   * two students' clusters on one machine); else $AURALOG_OPERATOR (the
   * key kept elsewhere); else the directory's. A cluster a command turns
   * to after it began (op_use_dir: lab 6's DIR/netns, whose coordinator
   * knows DIR/netns/operator.pub) names its own before all. */
  if (op_dir[0]) {
    snprintf(out, n, "%s/operator.key", op_dir);
    if (access(out, F_OK) == 0)
      return;
  }
  if (use_dir[0]) {
    snprintf(out, n, "%s/operator.key", use_dir);
    if (access(out, F_OK) == 0)
      return;
  }
  const char *env = getenv("AURALOG_OPERATOR");
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return;
  }
  const char *dir = use_dir[0] ? use_dir : getenv("AURALOG_DIR");
  if (dir && *dir) {
    snprintf(out, n, "%s/operator.key", dir);
    return;
  }
  const char *home = getenv("HOME");
  snprintf(out, n, "%s/.auralog/operator.key", home && *home ? home : "/tmp");
}

const struct auth_signer *op_get(char *why, size_t whylen)
{
  pthread_mutex_lock(&mu);
  if (!op_on) {
    pthread_mutex_unlock(&mu);
    snprintf(why, whylen, "this process does not act as the operator");
    return NULL;
  }
  if (!have_op && !op_failed[0]) {
    char path[PATH_MAX + 16];
    struct auth_key seed;
    op_path(path, sizeof path);
    if (auth_init() != 0)
      snprintf(op_failed, sizeof op_failed, "libsodium failed to start");
    else if (access(path, F_OK) != 0)
      snprintf(op_failed, sizeof op_failed, "no operator key at %s: only the operator "
               "(who ran `auralog cluster up`, which makes DIR/operator.key) may do this",
               path);
    else if (key_read(path, &seed, op_failed, sizeof op_failed) == 0) {
      auth_signer_seed(&the_op, seed.k);
      sodium_memzero(&seed, sizeof seed);
      have_op = 1;
    }
  }
  const struct auth_signer *s = have_op ? &the_op : NULL;
  if (s == NULL)
    snprintf(why, whylen, "%s", op_failed);
  pthread_mutex_unlock(&mu);
  return s;
}

void op_set(const struct auth_signer *s)
{
  pthread_mutex_lock(&mu);
  if (s) {
    the_op = *s;
    have_op = op_on = 1;
  } else {
    have_op = op_on = 0;
  }
  op_failed[0] = 0;
  pthread_mutex_unlock(&mu);
}

int op_pub_read(const char *path, uint8_t pk[AUTH_PK_BYTES], char *why, size_t whylen)
{
  /* Either the operator's key (its public half is derived) or the
   * public key alone, 64 hex digits (DIR/operator.pub). */
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    snprintf(why, whylen, "cannot read the operator key %s: %s", path, strerror(errno));
    return -1;
  }
  char buf[130];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  size_t len = strcspn(buf, "\r\n"), got = 0;
  const char *dot = strrchr(path, '.');
  if (dot && strcmp(dot, ".pub") == 0) {
    if (len != 2 * AUTH_PK_BYTES ||
        sodium_hex2bin(pk, AUTH_PK_BYTES, buf, len, NULL, &got, NULL) != 0 ||
        got != AUTH_PK_BYTES) {
      snprintf(why, whylen, "%s is not an operator public key (64 hex digits expected)", path);
      return -1;
    }
    return 0;
  }
  struct auth_key seed;
  struct auth_signer sg;
  if (key_read(path, &seed, why, whylen) != 0)
    return -1;
  auth_signer_seed(&sg, seed.k);
  memcpy(pk, sg.pk, AUTH_PK_BYTES);
  sodium_memzero(&seed, sizeof seed);
  sodium_memzero(&sg, sizeof sg);
  return 0;
}

int op_pub_write(const char *key_path, const char *pub_path, char *why, size_t whylen)
{
  uint8_t pk[AUTH_PK_BYTES];
  char hex[2 * AUTH_PK_BYTES + 2];
  if (op_pub_read(key_path, pk, why, whylen) != 0)
    return -1;
  auth_hex(pk, sizeof pk, hex);
  strcat(hex, "\n");
  FILE *f = fopen(pub_path, "w");
  if (f == NULL || fputs(hex, f) < 0 || fclose(f) != 0) {
    snprintf(why, whylen, "cannot write %s: %s", pub_path, strerror(errno));
    return -1;
  }
  return 0;
}

int key_auth_off(void)
{
  const char *e = getenv("AURALOG_AUTH");
  return e && strcmp(e, "off") == 0;
}
