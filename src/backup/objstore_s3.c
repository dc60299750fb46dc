/*
 * objstore_s3.c: the object store over the S3 API (objstore.h), for any
 * S3-compatible server: AWS, or SeaweedFS on loopback in the tests.
 *
 * A store is a bucket, and optionally a prefix in it: s3://BUCKET/PREFIX
 * keeps key K as the object PREFIX/K. Requests use path-style URLs,
 * ENDPOINT/BUCKET/PREFIX/K, so a server needs no DNS name per bucket; keys
 * hold only characters that need no escaping in a URL (objstore.h). Each
 * request is signed by libcurl (CURLOPT_AWS_SIGV4, "aws:amz:REGION:s3"):
 * this file computes no signature. Rules kept here:
 *   S1. Every request carries x-amz-content-sha256, the SHA-256 of its
 *       body (libsodium's; of nothing for GET, HEAD, DELETE). S3 requires
 *       the header, and libcurl 7.88 does not send it (later versions add
 *       one for service "s3"), but it takes a header given to it as the
 *       payload hash it signs: so the body is covered by the signature,
 *       and a server that checks (AWS does) refuses a body changed on the
 *       way.
 *   S2. A query string is written already in SigV4's canonical form:
 *       parameters sorted by name, values escaped by curl_easy_escape
 *       (everything but A-Z a-z 0-9 - . _ ~, as SigV4 escapes). libcurl
 *       7.88 signs the query exactly as given, and the server signs it
 *       sorted: any other order is "SignatureDoesNotMatch".
 *   S3. A listing is sorted here. ListObjectsV2 promises byte order, but
 *       SeaweedFS walks its directory tree ("log/0001" before "log-x",
 *       though '-' < '/'); every page is gathered and sorted, so
 *       obj_list's order does not depend on the server.
 *   S4. OBJ_NOTFOUND means the key is absent, never that the bucket is:
 *       a 404 whose code is NoSuchBucket is an error. S3's DELETE answers
 *       204 whether or not the key was there, so del asks first (HEAD).
 *   S5. Errors are one line naming the request and S3's own words ("s3
 *       PUT K: HTTP 403 SignatureDoesNotMatch: The request signature ..."),
 *       or libcurl's for a transport failure; never the secret key.
 * A store's calls come from one thread at a time: it keeps one easy
 * handle, whose connection stays open between requests.
 */
#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/objstore_int.h"

struct s3store {
  CURL *h;
  char endpoint[256];            /* http://HOST:PORT, no trailing '/' */
  char bucket[64];
  char prefix[OBJ_KEY_MAX + 2];  /* "" or "PREFIX/" */
  char sigv4[128];               /* aws:amz:REGION:s3 */
  char *access, *secret;
  char errbuf[CURL_ERROR_SIZE];
};

struct buf {
  char *p;
  size_t n, cap;
};

static pthread_once_t s3_once = PTHREAD_ONCE_INIT;
static int s3_init_rc;

static void s3_init(void)
{
  /* Both are process-wide and not thread-safe to start: once, here. */
  s3_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK && sodium_init() >= 0 ? 0 : -1;
  xmlInitParser();
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
  struct buf *b = arg;
  size_t n = size * nmemb;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL)
      return 0;                /* libcurl fails the transfer: CURLE_WRITE_ERROR */
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
  b->p[b->n] = 0;              /* text answers (XML) read as a string */
  return n;
}

/* One request: 0 with the HTTP status (any) and the answer's body in
 * *ans, or OBJ_ERR with why when there was no answer. path starts with
 * '/'; query is canonical (S2) or NULL; body, if not NULL, is sent
 * (len bytes, maybe 0) with method (PUT). */
static int request(struct s3store *s, const char *method, const char *path, const char *query,
                   const void *body, size_t len, const char *what, long *status,
                   struct buf *ans, char *why, size_t whylen)
{
  CURL *h = s->h;
  curl_easy_reset(h);          /* options only: the open connection stays */
  size_t un = strlen(s->endpoint) + strlen(path) + (query ? strlen(query) : 0) + 2;
  char *url = malloc(un);
  snprintf(url, un, "%s%s%s%s", s->endpoint, path, query ? "?" : "", query ? query : "");

  /* S1: the payload hash, given to libcurl as the header it signs. */
  unsigned char sum[crypto_hash_sha256_BYTES];
  char hdr[40 + 2 * crypto_hash_sha256_BYTES + 1];
  static const unsigned char nothing[1];
  crypto_hash_sha256(sum, body ? body : nothing, body ? len : 0);
  strcpy(hdr, "x-amz-content-sha256: ");
  sodium_bin2hex(hdr + strlen(hdr), sizeof hdr - strlen(hdr), sum, sizeof sum);
  struct curl_slist *hl = curl_slist_append(NULL, hdr);
  if (body)                    /* else libcurl says x-www-form-urlencoded */
    hl = curl_slist_append(hl, "Content-Type: application/octet-stream");

  s->errbuf[0] = 0;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);   /* timeouts on any thread */
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, s->errbuf);
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
  curl_easy_setopt(h, CURLOPT_USERNAME, s->access);
  curl_easy_setopt(h, CURLOPT_PASSWORD, s->secret);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, ans);
  if (body) {
    /* The body as POSTFIELDS, sent as a PUT: up to 1 MiB it goes with the
     * headers (an upload, CURLOPT_UPLOAD, would wait for "100 Continue"
     * first, a round trip per object); above, libcurl asks "Expect:
     * 100-continue", so a refused request costs no body. */
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "HEAD") == 0) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (strcmp(method, "GET") != 0) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  }
  CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(hl);
  free(url);
  if (rc != CURLE_OK) {
    const char *msg = s->errbuf[0] ? s->errbuf : curl_easy_strerror(rc);
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
      snprintf(why, whylen, "s3 %s: cannot connect: %s", s->endpoint, curl_easy_strerror(rc));
    else
      snprintf(why, whylen, "s3 %s %s: %s", method, what, msg);
    return OBJ_ERR;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  return 0;
}

/* The text of the first element named name under node (xmlFree it). */
static char *child_text(xmlNode *node, const char *name)
{
  for (xmlNode *c = node ? node->children : NULL; c; c = c->next)
    if (c->type == XML_ELEMENT_NODE && strcmp((const char *)c->name, name) == 0)
      return (char *)xmlNodeGetContent(c);
  return NULL;
}

static xmlDoc *parse(const struct buf *b)
{
  if (b->n == 0 || b->n > 64u << 20)
    return NULL;
  return xmlReadMemory(b->p, (int)b->n, "s3.xml", NULL,
                       XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

/* S3's error code in an answer's body (<Error><Code>), copied to code. */
static void error_code(const struct buf *ans, char *code, size_t n)
{
  code[0] = 0;
  xmlDoc *doc = parse(ans);
  char *c = doc ? child_text(xmlDocGetRootElement(doc), "Code") : NULL;
  if (c)
    snprintf(code, n, "%s", c);
  xmlFree(c);
  xmlFreeDoc(doc);
}

/* S5: "s3 METHOD WHAT: HTTP 403 Code: Message", on one line. */
static int http_fail(const char *method, const char *what, long status, const struct buf *ans,
                     char *why, size_t whylen)
{
  xmlDoc *doc = parse(ans);
  xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
  char *code = child_text(root, "Code"), *msg = child_text(root, "Message");
  snprintf(why, whylen, "s3 %s %s: HTTP %ld%s%s%s%s", method, what, status, code ? " " : "",
           code ? code : "", msg ? ": " : "", msg ? msg : "");
  for (char *p = why; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t')
      *p = ' ';
  xmlFree(code);
  xmlFree(msg);
  xmlFreeDoc(doc);
  return OBJ_ERR;
}

static void object_path(const struct s3store *s, const char *key, char *path, size_t n)
{
  snprintf(path, n, "/%s/%s%s", s->bucket, s->prefix, key);
}

static int s3_put(void *impl, const char *key, const void *data, size_t len, char *why,
                  size_t whylen)
{
  struct s3store *s = impl;
  char path[OBJ_KEY_MAX * 2 + 80];
  object_path(s, key, path, sizeof path);
  struct buf ans = {0};
  long st = 0;
  /* A zero-length object still goes up as a body of 0 bytes. */
  static const uint8_t none[1];
  int rc = request(s, "PUT", path, NULL, len ? data : none, len, key, &st, &ans, why, whylen);
  if (rc == 0 && st / 100 != 2)
    rc = http_fail("PUT", key, st, &ans, why, whylen);
  free(ans.p);
  return rc;
}

static int s3_get(void *impl, const char *key, uint8_t **data, size_t *len, char *why,
                  size_t whylen)
{
  struct s3store *s = impl;
  char path[OBJ_KEY_MAX * 2 + 80];
  object_path(s, key, path, sizeof path);
  struct buf ans = {0};
  long st = 0;
  int rc = request(s, "GET", path, NULL, NULL, 0, key, &st, &ans, why, whylen);
  if (rc == 0 && st == 200) {
    *data = ans.p ? (uint8_t *)ans.p : malloc(1);
    *len = ans.n;
    return 0;
  }
  if (rc == 0) {
    char code[64];
    error_code(&ans, code, sizeof code);
    if (st == 404 && strcmp(code, "NoSuchBucket") != 0)   /* S4 */
      rc = OBJ_NOTFOUND;
    else
      rc = http_fail("GET", key, st, &ans, why, whylen);
  }
  free(ans.p);
  return rc;
}

static int s3_del(void *impl, const char *key, char *why, size_t whylen)
{
  struct s3store *s = impl;
  char path[OBJ_KEY_MAX * 2 + 80];
  object_path(s, key, path, sizeof path);
  struct buf ans = {0};
  long st = 0;
  /* S4: was it there? A HEAD's answer has no body, so no code either. */
  int rc = request(s, "HEAD", path, NULL, NULL, 0, key, &st, &ans, why, whylen);
  if (rc == 0 && st == 404)
    rc = OBJ_NOTFOUND;
  else if (rc == 0 && st != 200)
    rc = http_fail("HEAD", key, st, &ans, why, whylen);
  if (rc == 0) {
    ans.n = 0;
    rc = request(s, "DELETE", path, NULL, NULL, 0, key, &st, &ans, why, whylen);
    if (rc == 0 && st / 100 != 2)
      rc = http_fail("DELETE", key, st, &ans, why, whylen);
  }
  free(ans.p);
  return rc;
}

/* ---- listing: ListObjectsV2, every page, then sorted (S3) ---------------- */

/* One page's keys into ks (the store's prefix taken off); *token gets the
 * next page's token (malloc'd), or NULL on the last page. */
static int list_page(const struct s3store *s, const struct buf *ans, struct obj_keys *ks,
                     char **token, char *why, size_t whylen)
{
  *token = NULL;
  xmlDoc *doc = parse(ans);
  xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
  if (root == NULL || strcmp((const char *)root->name, "ListBucketResult") != 0) {
    snprintf(why, whylen, "s3 LIST %s: not a ListObjectsV2 answer", s->bucket);
    xmlFreeDoc(doc);
    return OBJ_ERR;
  }
  size_t pl = strlen(s->prefix);
  for (xmlNode *c = root->children; c; c = c->next) {
    if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "Contents") != 0)
      continue;
    char *k = child_text(c, "Key"), *size = child_text(c, "Size");
    /* Only keys this store could have written (as the dir backend's walk). */
    if (k && strncmp(k, s->prefix, pl) == 0 && obj_key_ok(k + pl))
      obj_keys_add(ks, k + pl, size ? strtoull(size, NULL, 10) : 0);
    xmlFree(k);
    xmlFree(size);
  }
  char *more = child_text(root, "IsTruncated");
  int truncated = more && strcmp(more, "true") == 0;
  xmlFree(more);
  if (truncated) {
    char *t = child_text(root, "NextContinuationToken");
    if (t && *t)
      *token = strdup(t);
    xmlFree(t);
  }
  xmlFreeDoc(doc);
  if (truncated && *token == NULL) {
    snprintf(why, whylen, "s3 LIST %s: a truncated page with no continuation token",
             s->bucket);
    return OBJ_ERR;
  }
  return 0;
}

static int s3_list(void *impl, const char *prefix, obj_list_fn fn, void *arg, char *why,
                   size_t whylen)
{
  struct s3store *s = impl;
  char full[OBJ_KEY_MAX * 2 + 4], path[100];
  snprintf(full, sizeof full, "%s%s", s->prefix, prefix);
  snprintf(path, sizeof path, "/%s", s->bucket);
  const char *what = prefix[0] ? prefix : "(everything)";
  char *pfx = curl_easy_escape(s->h, full, 0), *token = NULL;
  struct obj_keys ks = {0};
  int rc = 0;
  while (rc == 0) {
    /* S2: continuation-token < list-type < prefix. */
    char *tok = token ? curl_easy_escape(s->h, token, 0) : NULL;
    size_t qn = strlen(pfx) + (tok ? strlen(tok) : 0) + 64;
    char *q = malloc(qn);
    snprintf(q, qn, "%s%s%slist-type=2&prefix=%s", tok ? "continuation-token=" : "",
             tok ? tok : "", tok ? "&" : "", pfx);
    curl_free(tok);
    struct buf ans = {0};
    long st = 0;
    rc = request(s, "GET", path, q, NULL, 0, what, &st, &ans, why, whylen);
    free(q);
    if (rc == 0 && st != 200)
      rc = http_fail("LIST", what, st, &ans, why, whylen);
    char *next = NULL;
    if (rc == 0)
      rc = list_page(s, &ans, &ks, &next, why, whylen);
    free(ans.p);
    if (rc == 0 && next && token && strcmp(next, token) == 0) {
      snprintf(why, whylen, "s3 LIST %s: the server repeats continuation token %.60s",
               what, next);
      rc = OBJ_ERR;
    }
    free(token);
    token = next;
    if (token == NULL)
      break;
  }
  free(token);
  curl_free(pfx);
  if (rc != 0) {
    obj_keys_free(&ks);
    return rc;
  }
  return obj_keys_emit(&ks, fn, arg);   /* S3: sorted here, a key on two pages once */
}

static void s3_close(void *impl)
{
  struct s3store *s = impl;
  curl_easy_cleanup(s->h);
  if (s->secret)
    sodium_memzero(s->secret, strlen(s->secret));
  free(s->secret);
  free(s->access);
  free(s);
}

static const struct obj_ops s3_ops = {s3_put, s3_get, s3_list, s3_del, s3_close};

/* The bucket there, or made: a listing of one key proves the endpoint,
 * the keys and the right to list, with S3's error code when not (a HEAD's
 * answer has no body to name it). */
static int ensure_bucket(struct s3store *s, const char *region, char *why, size_t whylen)
{
  char path[100], what[100], body[300];
  snprintf(path, sizeof path, "/%s", s->bucket);
  snprintf(what, sizeof what, "bucket %s", s->bucket);
  struct buf ans = {0};
  long st = 0;
  int rc = request(s, "GET", path, "list-type=2&max-keys=1", NULL, 0, what, &st, &ans, why,
                   whylen);
  char code[64] = "";
  if (rc == 0 && st != 200)
    error_code(&ans, code, sizeof code);
  if (rc == 0 && st == 404 && strcmp(code, "NoSuchBucket") == 0) {
    /* Outside us-east-1, AWS wants the region named in the body. */
    size_t n = 0;
    if (strcmp(region, "us-east-1") != 0)
      n = (size_t)snprintf(body, sizeof body, "<CreateBucketConfiguration xmlns=\"http://s3."
                           "amazonaws.com/doc/2006-03-01/\"><LocationConstraint>%s"
                           "</LocationConstraint></CreateBucketConfiguration>", region);
    ans.n = 0;
    rc = request(s, "PUT", path, NULL, body, n, what, &st, &ans, why, whylen);
    code[0] = 0;
    if (rc == 0 && st == 409)
      error_code(&ans, code, sizeof code);   /* made meanwhile, by us: fine */
    if (rc == 0 && st != 200 && strcmp(code, "BucketAlreadyOwnedByYou") != 0)
      rc = http_fail("PUT", what, st, &ans, why, whylen);
  } else if (rc == 0 && st != 200) {
    rc = http_fail("GET", what, st, &ans, why, whylen);
  }
  free(ans.p);
  return rc;
}

static int bucket_ok(const char *b, size_t n)
{
  if (n < 3 || n > 63)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
          b[i] == '-'))
      return 0;
  return 1;
}

int s3_open(struct objstore *o, const char *bucket_and_prefix, char *why, size_t whylen)
{
  const char *bp = bucket_and_prefix;
  const char *slash = strchr(bp, '/');
  size_t bn = slash ? (size_t)(slash - bp) : strlen(bp);
  if (!bucket_ok(bp, bn)) {
    snprintf(why, whylen, "object store s3://%.100s: bad bucket name (3-63 characters of "
             "a-z 0-9 . -)", bp);
    return -1;
  }
  char prefix[OBJ_KEY_MAX + 1] = "";
  if (slash) {
    size_t pn = strlen(slash + 1);
    while (pn > 0 && slash[pn] == '/')
      pn--;
    if (pn > OBJ_KEY_MAX) {
      snprintf(why, whylen, "object store s3://%.100s: prefix too long", bp);
      return -1;
    }
    memcpy(prefix, slash + 1, pn);
    prefix[pn] = 0;
    if (pn > 0 && !obj_key_ok(prefix)) {
      snprintf(why, whylen, "object store s3://%.100s: bad prefix (A-Z a-z 0-9 . _ / -, no "
               ".. or //)", bp);
      return -1;
    }
  }
  const char *ep = getenv("AURALOG_S3_ENDPOINT"), *region = getenv("AURALOG_S3_REGION");
  const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
  if (ep == NULL || *ep == 0) {
    snprintf(why, whylen, "object store s3://%.100s: AURALOG_S3_ENDPOINT is not set (the S3 "
             "server, e.g. http://127.0.0.1:8333)", bp);
    return -1;
  }
  size_t en = strlen(ep);
  while (en > 0 && ep[en - 1] == '/')
    en--;
  if ((strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0) || en >= 256 ||
      en <= 8) {
    snprintf(why, whylen, "object store: AURALOG_S3_ENDPOINT \"%.100s\" is not http://HOST:PORT "
             "or https://HOST", ep);
    return -1;
  }
  if (region == NULL || *region == 0)
    region = "us-east-1";
  if (strlen(region) > 60 || strchr(region, ':')) {
    snprintf(why, whylen, "object store: bad AURALOG_S3_REGION \"%.60s\"", region);
    return -1;
  }
  if (ak == NULL || *ak == 0 || sk == NULL || *sk == 0) {
    snprintf(why, whylen, "object store s3://%.100s: %s is not set (the S3 keys are "
             "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", bp,
             ak == NULL || *ak == 0 ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY");
    return -1;
  }
  pthread_once(&s3_once, s3_init);
  if (s3_init_rc != 0) {
    snprintf(why, whylen, "object store s3: libcurl or libsodium would not start");
    return -1;
  }
  struct s3store *s = calloc(1, sizeof *s);
  s->h = curl_easy_init();
  memcpy(s->endpoint, ep, en);
  memcpy(s->bucket, bp, bn);
  if (prefix[0])
    snprintf(s->prefix, sizeof s->prefix, "%s/", prefix);
  snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", region);
  s->access = strdup(ak);
  s->secret = strdup(sk);
  if (s->h == NULL || ensure_bucket(s, region, why, whylen) != 0) {
    if (s->h == NULL)
      snprintf(why, whylen, "object store s3: curl_easy_init failed");
    s3_close(s);
    return -1;
  }
  o->ops = &s3_ops;
  o->impl = s;
  snprintf(o->desc, sizeof o->desc, "s3 %.100s bucket %.63s%s%.100s", s->endpoint, s->bucket,
           prefix[0] ? " prefix " : "", prefix);
  return 0;
}
