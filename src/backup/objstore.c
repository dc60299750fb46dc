/*
 * objstore.c: the object store's front (objstore.h): which backend a url
 * names, keys checked once for both, and the calls passed through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/objstore_int.h"

int obj_key_ok(const char *key)
{
  size_t n = key ? strlen(key) : 0;
  if (n == 0 || n > OBJ_KEY_MAX || key[0] == '/' || strstr(key, "..") || strstr(key, "//"))
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = key[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '/' || c == '-'))
      return 0;
  }
  return 1;
}

/* A prefix may be empty (everything), else it is a key's beginning. */
static int prefix_ok(const char *p)
{
  return p && (*p == 0 || obj_key_ok(p));
}

static int bad_key(const char *op, const char *key, char *why, size_t whylen)
{
  /* The key as given, but on one line: a control character in it (a
   * newline, say) is shown as '?'. */
  char shown[81];
  size_t n = 0;
  for (; key && key[n] && n < sizeof shown - 1; n++)
    shown[n] = (unsigned char)key[n] < 0x20 || key[n] == 0x7f ? '?' : key[n];
  shown[n] = 0;
  snprintf(why, whylen, "object store %s: bad key \"%s\" (1-%d characters of "
           "A-Z a-z 0-9 . _ / -, not starting with /, no .. or //)", op, shown, OBJ_KEY_MAX);
  return OBJ_ERR;
}

void obj_keys_add(struct obj_keys *ks, const char *key, uint64_t size)
{
  if (ks->n == ks->cap) {
    ks->cap = ks->cap ? 2 * ks->cap : 64;
    ks->v = realloc(ks->v, ks->cap * sizeof *ks->v);
  }
  ks->v[ks->n++] = (struct obj_key){strdup(key), size};
}

static int key_cmp(const void *a, const void *b)
{
  return strcmp(((const struct obj_key *)a)->k, ((const struct obj_key *)b)->k);
}

void obj_keys_free(struct obj_keys *ks)
{
  for (size_t i = 0; i < ks->n; i++)
    free(ks->v[i].k);
  free(ks->v);
  *ks = (struct obj_keys){0};
}

int obj_keys_emit(struct obj_keys *ks, obj_list_fn fn, void *arg)
{
  int rc = 0;
  if (ks->n)
    qsort(ks->v, ks->n, sizeof *ks->v, key_cmp);
  for (size_t i = 0; rc == 0 && i < ks->n; i++)
    if (i == 0 || strcmp(ks->v[i].k, ks->v[i - 1].k) != 0)   /* a key seen twice: once */
      rc = fn(arg, ks->v[i].k, ks->v[i].size);
  obj_keys_free(ks);
  return rc;
}

struct objstore *obj_wrap(const struct obj_ops *ops, void *impl, const char *desc)
{
  struct objstore *o = calloc(1, sizeof *o);
  o->ops = ops;
  o->impl = impl;
  snprintf(o->desc, sizeof o->desc, "%s", desc);
  return o;
}

struct objstore *obj_open(const char *url, char *why, size_t whylen)
{
  if (url == NULL || *url == 0) {
    snprintf(why, whylen, "object store: no location given (a directory, or s3://BUCKET)");
    return NULL;
  }
  struct objstore *o = calloc(1, sizeof *o);
  int rc;
  if (strncmp(url, "s3://", 5) == 0)
    rc = s3_open(o, url + 5, why, whylen);
  else if (strncmp(url, "dir:", 4) == 0)
    rc = dir_open(o, url + 4, why, whylen);
  else if (strstr(url, "://")) {
    snprintf(why, whylen, "object store %s: unknown scheme (a directory, dir:PATH or "
             "s3://BUCKET[/PREFIX])", url);
    rc = -1;
  } else
    rc = dir_open(o, url, why, whylen);
  if (rc != 0) {
    free(o);
    return NULL;
  }
  return o;
}

int obj_put(struct objstore *o, const char *key, const void *data, size_t len, char *why,
            size_t whylen)
{
  if (!obj_key_ok(key))
    return bad_key("put", key, why, whylen);
  return o->ops->put(o->impl, key, data, len, why, whylen);
}

int obj_get(struct objstore *o, const char *key, uint8_t **data, size_t *len, char *why,
            size_t whylen)
{
  *data = NULL;
  *len = 0;
  if (!obj_key_ok(key))
    return bad_key("get", key, why, whylen);
  return o->ops->get(o->impl, key, data, len, why, whylen);
}

int obj_list(struct objstore *o, const char *prefix, obj_list_fn fn, void *arg, char *why,
             size_t whylen)
{
  if (!prefix_ok(prefix))
    return bad_key("list", prefix, why, whylen);
  return o->ops->list(o->impl, prefix, fn, arg, why, whylen);
}

int obj_del(struct objstore *o, const char *key, char *why, size_t whylen)
{
  if (!obj_key_ok(key))
    return bad_key("delete", key, why, whylen);
  return o->ops->del(o->impl, key, why, whylen);
}

const char *obj_describe(const struct objstore *o)
{
  return o->desc;
}

void obj_close(struct objstore *o)
{
  if (o == NULL)
    return;
  if (o->ops->close)
    o->ops->close(o->impl);
  free(o);
}
