/*
 * objstore_dir.c: the object store as a local directory (objstore.h), the
 * default a cluster backs up to (DIR/backup).
 *
 * An object is the file ROOT/KEY; a key's slashes are subdirectories, made
 * as needed. Rules kept here:
 *   D1. An object is whole or absent, across a crash: it is written to
 *       ROOT/KEY.tmp+PID-N, fsynced, renamed onto ROOT/KEY, and the
 *       directory is fsynced, so the rename itself survives. A reader
 *       never sees a file half written.
 *   D2. Listings never show the temporary files (their names hold a
 *       character no key may: '+' after ".tmp"); a crash leaves them
 *       behind, and the next put of the same key, or obj_list's walk, does
 *       not mistake them for objects. (They hold no object anyone was told
 *       of: a put returns 0 only after its rename.)
 *   D3. A failed write leaves nothing: the temporary file is removed, and
 *       the error says why in one line (a full disk: "No space left").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup/objstore_int.h"

struct dirstore {
  char root[1024];
  unsigned long seq;
};

static int fail(char *why, size_t whylen, const struct dirstore *d, const char *what,
                const char *key, int err)
{
  snprintf(why, whylen, "dir %s: %s %s: %s", d->root, what, key, strerror(err));
  return OBJ_ERR;
}

/* Make every directory above ROOT/key. */
static int make_parents(const struct dirstore *d, const char *key)
{
  char p[sizeof d->root + OBJ_KEY_MAX + 2];
  snprintf(p, sizeof p, "%s/%s", d->root, key);
  for (char *s = p + strlen(d->root) + 1; (s = strchr(s, '/')) != NULL; s++) {
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
      return errno;
    *s = '/';
  }
  return 0;
}

static int sync_dir_of(const char *path)
{
  char d[1600];
  snprintf(d, sizeof d, "%s", path);
  char *slash = strrchr(d, '/');
  if (slash)
    *slash = 0;
  int fd = open(slash ? d : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int rc = fsync(fd) == 0 ? 0 : errno;
  close(fd);
  return rc;
}

static int d_put(void *impl, const char *key, const void *data, size_t len, char *why,
                 size_t whylen)
{
  struct dirstore *d = impl;
  int err = make_parents(d, key);
  if (err)
    return fail(why, whylen, d, "cannot make the directory of", key, err);
  char path[1600], tmp[1700];
  snprintf(path, sizeof path, "%s/%s", d->root, key);
  snprintf(tmp, sizeof tmp, "%s.tmp+%ld-%lu", path, (long)getpid(), ++d->seq);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(why, whylen, d, "cannot write", key, errno);
  const uint8_t *p = data;
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, p + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      err = w < 0 ? errno : EIO;
      break;
    }
    done += (size_t)w;
  }
  if (err == 0 && fsync(fd) != 0)
    err = errno;
  if (close(fd) != 0 && err == 0)
    err = errno;
  if (err == 0 && rename(tmp, path) != 0)
    err = errno;
  if (err != 0) {
    unlink(tmp);               /* D3 */
    return fail(why, whylen, d, "cannot write", key, err);
  }
  if ((err = sync_dir_of(path)) != 0)   /* D1: the rename, durable */
    return fail(why, whylen, d, "cannot sync the directory of", key, err);
  return 0;
}

static int d_get(void *impl, const char *key, uint8_t **data, size_t *len, char *why,
                 size_t whylen)
{
  struct dirstore *d = impl;
  char path[1600];
  snprintf(path, sizeof path, "%s/%s", d->root, key);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return OBJ_NOTFOUND;
    return fail(why, whylen, d, "cannot read", key, errno);
  }
  struct stat st;
  int e = fstat(fd, &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : EISDIR;
  if (e) {                     /* st is looked at only once fstat filled it */
    close(fd);
    /* A directory is the beginning of other keys, no object: as in S3. */
    return e == EISDIR ? OBJ_NOTFOUND : fail(why, whylen, d, "cannot read", key, e);
  }
  size_t n = (size_t)st.st_size, got = 0;
  uint8_t *buf = malloc(n ? n : 1);
  int err = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      err = r < 0 ? errno : EIO;   /* shorter than its size: changed under us */
      break;
    }
    got += (size_t)r;
  }
  close(fd);
  if (err) {
    free(buf);
    return fail(why, whylen, d, "cannot read", key, err);
  }
  *data = buf;
  *len = n;
  return 0;
}

/* ---- listing: a walk of the tree, keys sorted ---------------------------- */

/* Walk ROOT/rel (rel "" or ending in '/'), collecting keys that start
 * with prefix. */
static int walk(const struct dirstore *d, const char *rel, const char *prefix,
                struct obj_keys *ks)
{
  char path[1600];
  snprintf(path, sizeof path, "%s/%s", d->root, rel);
  DIR *dh = opendir(path);
  if (dh == NULL)
    return errno == ENOENT ? 0 : errno;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(dh)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char key[OBJ_KEY_MAX + 300];
    int n = snprintf(key, sizeof key, "%s%s", rel, e->d_name);
    if (n <= 0 || (size_t)n > OBJ_KEY_MAX)
      continue;
    char full[1600 + OBJ_KEY_MAX];
    snprintf(full, sizeof full, "%s/%s", d->root, key);
    struct stat st;
    if (stat(full, &st) != 0)
      continue;                /* gone meanwhile */
    if (S_ISDIR(st.st_mode)) {
      /* Only into directories that can hold keys under prefix. */
      size_t kl = strlen(key), pl = strlen(prefix);
      if (strncmp(key, prefix, kl < pl ? kl : pl) != 0)
        continue;
      char sub[OBJ_KEY_MAX + 302];
      memcpy(sub, key, (size_t)n);     /* n <= OBJ_KEY_MAX */
      sub[n] = '/';
      sub[n + 1] = 0;
      rc = walk(d, sub, prefix, ks);
    } else if (S_ISREG(st.st_mode) && obj_key_ok(key) &&   /* D2: never a .tmp+ file */
               strncmp(key, prefix, strlen(prefix)) == 0) {
      obj_keys_add(ks, key, (uint64_t)st.st_size);
    }
  }
  closedir(dh);
  return rc;
}

static int d_list(void *impl, const char *prefix, obj_list_fn fn, void *arg, char *why,
                  size_t whylen)
{
  struct dirstore *d = impl;
  struct obj_keys ks = {0};
  int err = walk(d, "", prefix, &ks);
  if (err) {
    obj_keys_free(&ks);
    return fail(why, whylen, d, "cannot list", prefix[0] ? prefix : "(everything)", err);
  }
  return obj_keys_emit(&ks, fn, arg);
}

static int d_del(void *impl, const char *key, char *why, size_t whylen)
{
  struct dirstore *d = impl;
  char path[1600];
  snprintf(path, sizeof path, "%s/%s", d->root, key);
  if (unlink(path) != 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR)   /* EISDIR: as in d_get */
      return OBJ_NOTFOUND;
    return fail(why, whylen, d, "cannot delete", key, errno);
  }
  int err = sync_dir_of(path);
  return err ? fail(why, whylen, d, "cannot sync the directory of", key, err) : 0;
}

static void d_close(void *impl)
{
  free(impl);
}

static const struct obj_ops dir_ops = {d_put, d_get, d_list, d_del, d_close};

int dir_open(struct objstore *o, const char *path, char *why, size_t whylen)
{
  struct dirstore *d = calloc(1, sizeof *d);
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  if (n == 0 || n >= sizeof d->root) {
    snprintf(why, whylen, "object store: bad directory \"%.100s\"", path);
    free(d);
    return -1;
  }
  memcpy(d->root, path, n);
  d->root[n] = 0;
  if (mkdir(d->root, 0755) != 0 && errno != EEXIST) {
    snprintf(why, whylen, "object store: cannot make directory %s: %s", d->root,
             strerror(errno));
    free(d);
    return -1;
  }
  struct stat st;
  if (stat(d->root, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(why, whylen, "object store: %s is not a directory", d->root);
    free(d);
    return -1;
  }
  o->ops = &dir_ops;
  o->impl = d;
  snprintf(o->desc, sizeof o->desc, "dir %.290s", d->root);
  return 0;
}
