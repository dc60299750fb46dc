/*
 * objstore.h: where backups go (paper Figure 4, step 6: "periodically
 * stage log and new pages to S3"; §2.3).
 *
 * An object store is a flat namespace of objects, each written whole and
 * never changed in place, named by a key such as "v1/pg3/log/...". Two
 * backends sit behind one small interface (objstore_int.h):
 *
 *   dir   a local directory (the embedded default: `cluster up` backs up
 *         into DIR/backup). An object is a file: written under a
 *         temporary name, fsynced, renamed into place, the directory
 *         fsynced; so a crash leaves an object whole or absent, never torn.
 *   s3    the S3 API over HTTP(S), with libcurl, each request signed by
 *         libcurl's own AWS Signature Version 4 (CURLOPT_AWS_SIGV4): any
 *         S3-compatible server (the tests start SeaweedFS on loopback).
 *
 * Where a store is (obj_open's url):
 *   PATH or dir:PATH                  the dir backend
 *   s3://BUCKET[/PREFIX]              the s3 backend; the server is
 *                                     $AURALOG_S3_ENDPOINT (http://HOST:PORT),
 *                                     the region $AURALOG_S3_REGION
 *                                     (us-east-1), the keys $AWS_ACCESS_KEY_ID
 *                                     and $AWS_SECRET_ACCESS_KEY
 *
 * Keys are 1..OBJ_KEY_MAX characters of [A-Za-z0-9._/-], not starting
 * with '/' and holding no "..": the same key is the same object in either
 * backend, with nothing to escape.
 *
 * Calls block until the store has answered (a network round trip for s3):
 * a node makes them on a thread of its own, never on its event loop.
 * Each returns 0, OBJ_NOTFOUND (get or del of a key that is not there) or
 * OBJ_ERR with a one-line why ("s3 PUT v1/pg3/log/...: HTTP 403
 * SignatureDoesNotMatch: The request signature ...", "dir /x/backup: No
 * space left on device").
 *
 * Interface:
 *   obj_open      the store a url names (NULL, with why, if it cannot be
 *                 used: a bad url, missing keys, a directory not made)
 *   obj_put       store an object, whole (replacing one of that key)
 *   obj_get       read one (*data malloc'd, the caller frees it)
 *   obj_list      every key under a prefix, in byte order, with its size
 *   obj_del       remove one (OBJ_NOTFOUND if it was not there)
 *   obj_describe  the store in words, for logs and `backup status`
 *   obj_close     free it
 */
#ifndef AURALOG_OBJSTORE_H
#define AURALOG_OBJSTORE_H

#include <stddef.h>
#include <stdint.h>

#define OBJ_NOTFOUND 1
#define OBJ_ERR      (-1)
#define OBJ_KEY_MAX  512

struct objstore;

struct objstore *obj_open(const char *url, char *why, size_t whylen);
int obj_put(struct objstore *o, const char *key, const void *data, size_t len, char *why,
            size_t whylen);
int obj_get(struct objstore *o, const char *key, uint8_t **data, size_t *len, char *why,
            size_t whylen);
/* fn is called once per key, in byte order; a nonzero return stops the
 * listing and obj_list returns it. */
typedef int (*obj_list_fn)(void *arg, const char *key, uint64_t size);
int obj_list(struct objstore *o, const char *prefix, obj_list_fn fn, void *arg, char *why,
             size_t whylen);
int obj_del(struct objstore *o, const char *key, char *why, size_t whylen);
const char *obj_describe(const struct objstore *o);
void obj_close(struct objstore *o);

/* Is key a valid object key (see the top)? */
int obj_key_ok(const char *key);

#endif
