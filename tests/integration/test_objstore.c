/*
 * Integration: the object store (backup/objstore.h), both backends, the
 * same checks for each:
 *
 *  - dir, in a directory of this test's own;
 *  - s3, against a real SeaweedFS that this file starts on loopback with
 *    authentication on (an identity with every right, one that may only
 *    read and list), on ports from this process's own block (free_block),
 *    and kills at the end, with everything it made.
 *
 * An object is read back whole (empty, 1 byte, 5 MiB) and replaced whole;
 * a listing is every key under a prefix, in byte order, with its size
 * (SeaweedFS itself lists in its tree's order: the backend sorts), across
 * ListObjectsV2's pages of 1,000; a missing key is OBJ_NOTFOUND for get
 * and delete; bad keys are refused before anything is written; errors are
 * one line that says what happened (S3's error code, a server that is
 * down, settings missing).
 *
 * SeaweedFS is `weed` (scripts/seaweedfs.sh puts it in
 * /usr/local/lib/auralog/seaweedfs-4.48; AURALOG_WEED names another): the
 * s3 tests fail, saying so, when it is not there. AURALOG_KEEP=1 keeps the
 * test's directory (weed's logs in it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backup/objstore.h"
#include "harness.h"
#include "weed.h"


static char top[256];          /* /tmp/auralog-it-objstore-PID */
static int port0;              /* weed's ports: port0 .. port0 + 8 */
static char why[1024];

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void assert_one_line(const char *w)
{
  if (w[0] == 0 || strchr(w, '\n') || strchr(w, '\r'))
    fail_msg("want one line of error, got \"%s\"", w);
}

/* ---- what the tests check, on any store ---------------------------------- */

static uint8_t *pattern(size_t n, unsigned seed)
{
  uint8_t *p = malloc(n ? n : 1);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
  return p;
}

static void put_ok(struct objstore *o, const char *key, const void *data, size_t len)
{
  if (obj_put(o, key, data, len, why, sizeof why) != 0)
    fail_msg("put %s (%zu bytes) in %s: %s", key, len, obj_describe(o), why);
}

static void get_is(struct objstore *o, const char *key, const void *want, size_t wlen)
{
  uint8_t *data = NULL;
  size_t len = 0;
  int rc = obj_get(o, key, &data, &len, why, sizeof why);
  if (rc != 0)
    fail_msg("get %s from %s: %d %s", key, obj_describe(o), rc, rc == OBJ_ERR ? why : "");
  assert_non_null(data);
  if (len != wlen || (len && memcmp(data, want, len) != 0))
    fail_msg("get %s from %s: %zu bytes, not the %zu put", key, obj_describe(o), len, wlen);
  free(data);
}

struct listed {
  char keys[1200][64];
  uint64_t sizes[1200];
  int n, stop_after;
};

static int collect(void *arg, const char *key, uint64_t size)
{
  struct listed *l = arg;
  if (l->n >= 1200)
    return -2;
  snprintf(l->keys[l->n], sizeof l->keys[0], "%s", key);
  l->sizes[l->n++] = size;
  return l->stop_after && l->n == l->stop_after ? 7 : 0;
}

static struct listed *list_of(struct objstore *o, const char *prefix)
{
  static struct listed l;
  memset(&l, 0, sizeof l);
  int rc = obj_list(o, prefix, collect, &l, why, sizeof why);
  if (rc != 0)
    fail_msg("list %s in %s: %d %s", prefix, obj_describe(o), rc, why);
  return &l;
}

static void round_trip(struct objstore *o)
{
  static const size_t sizes[] = {0, 1, 5u << 20};
  for (int i = 0; i < 3; i++) {
    char key[64];
    snprintf(key, sizeof key, "v1/pg3/rt/%zu", sizes[i]);
    uint8_t *p = pattern(sizes[i], (unsigned)i + 1);
    put_ok(o, key, p, sizes[i]);
    get_is(o, key, p, sizes[i]);
    free(p);
  }
  struct listed *l = list_of(o, "v1/pg3/rt/");
  assert_int_equal(l->n, 3);
  assert_string_equal(l->keys[0], "v1/pg3/rt/0");
  assert_int_equal(l->sizes[0], 0);
  assert_string_equal(l->keys[1], "v1/pg3/rt/1");
  assert_int_equal(l->sizes[1], 1);
  assert_string_equal(l->keys[2], "v1/pg3/rt/5242880");
  assert_int_equal(l->sizes[2], 5u << 20);
}

static void overwrite(struct objstore *o)
{
  uint8_t *big = pattern(100000, 7), *small = pattern(10, 8);
  put_ok(o, "v1/ow", big, 100000);
  put_ok(o, "v1/ow", small, 10);           /* shorter: nothing of the old one stays */
  get_is(o, "v1/ow", small, 10);
  put_ok(o, "v1/ow", big, 100000);
  get_is(o, "v1/ow", big, 100000);
  struct listed *l = list_of(o, "v1/ow");
  assert_int_equal(l->n, 1);
  assert_int_equal(l->sizes[0], 100000);
  free(big);
  free(small);
}

/* Keys whose byte order is not their tree's: '-' and '.' sort before '/'. */
static void listing(struct objstore *o)
{
  static const char *keys[] = {"v1/pg3/log/0002", "v1/pg3/log/0001", "v1/pg3/log-x",
                               "v1/pg3/log.y",    "v1/pg3/page/0001", "v1/pg3/loga",
                               "v1/pg4/log/0001", "v1/pg30/log/0001", "v2/x"};
  char body[sizeof keys / sizeof *keys][32];
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    snprintf(body[i], sizeof body[i], "object %zu", i * 1000);   /* sizes differ */
    put_ok(o, keys[i], body[i], strlen(body[i]));
  }
  struct listed *l = list_of(o, "v1/pg3/");
  static const char *want[] = {"v1/pg3/log-x", "v1/pg3/log.y", "v1/pg3/log/0001",
                               "v1/pg3/log/0002", "v1/pg3/loga", "v1/pg3/page/0001"};
  assert_int_equal(l->n, 6);
  for (int i = 0; i < 6; i++) {
    assert_string_equal(l->keys[i], want[i]);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
      if (strcmp(keys[k], want[i]) == 0)
        assert_int_equal(l->sizes[i], strlen(body[k]));
  }
  /* A prefix that ends inside a name. */
  l = list_of(o, "v1/pg3/log");
  assert_int_equal(l->n, 5);
  assert_string_equal(l->keys[0], "v1/pg3/log-x");
  assert_string_equal(l->keys[4], "v1/pg3/loga");
  l = list_of(o, "v1/pg3");                /* pg3 and pg30 */
  assert_int_equal(l->n, 7);
  assert_string_equal(l->keys[6], "v1/pg30/log/0001");
  l = list_of(o, "");
  assert_true(l->n >= 9);
  for (int i = 1; i < l->n; i++)
    assert_true(strcmp(l->keys[i - 1], l->keys[i]) < 0);
  /* A nonzero answer stops the listing, and is what obj_list returns. */
  static struct listed s;
  memset(&s, 0, sizeof s);
  s.stop_after = 2;
  assert_int_equal(obj_list(o, "v1/pg3/", collect, &s, why, sizeof why), 7);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.keys[1], "v1/pg3/log.y");
}

static void missing(struct objstore *o)
{
  assert_int_equal(list_of(o, "nothing/here/")->n, 0);
  uint8_t *data = (uint8_t *)"x";
  size_t len = 5;
  assert_int_equal(obj_get(o, "nothing/here/k", &data, &len, why, sizeof why), OBJ_NOTFOUND);
  assert_null(data);
  assert_int_equal(len, 0);
  assert_int_equal(obj_del(o, "nothing/here/k", why, sizeof why), OBJ_NOTFOUND);
  put_ok(o, "gone/k", "abc", 3);
  assert_int_equal(obj_del(o, "gone/k", why, sizeof why), 0);
  assert_int_equal(obj_get(o, "gone/k", &data, &len, why, sizeof why), OBJ_NOTFOUND);
  assert_int_equal(obj_del(o, "gone/k", why, sizeof why), OBJ_NOTFOUND);
  assert_int_equal(list_of(o, "gone/")->n, 0);
  /* A key that is only the beginning of others is no object either (a
   * directory, to the dir backend and to SeaweedFS's filer). */
  put_ok(o, "dirlike/a/b", "abc", 3);
  assert_int_equal(obj_get(o, "dirlike/a", &data, &len, why, sizeof why), OBJ_NOTFOUND);
  assert_int_equal(obj_del(o, "dirlike/a", why, sizeof why), OBJ_NOTFOUND);
  assert_int_equal(obj_get(o, "dirlike", &data, &len, why, sizeof why), OBJ_NOTFOUND);
  get_is(o, "dirlike/a/b", "abc", 3);
}

/* ---- dir ----------------------------------------------------------------- */

static struct objstore *dir_store(const char *name)
{
  char p[400];
  snprintf(p, sizeof p, "%s/%s", top, name);
  struct objstore *o = obj_open(p, why, sizeof why);
  if (o == NULL)
    fail_msg("obj_open %s: %s", p, why);
  return o;
}

static void dir_an_object_put_is_read_back_whole(void **state)
{
  (void)state;
  struct objstore *o = dir_store("rt");
  round_trip(o);
  obj_close(o);
}

static void dir_a_put_replaces_the_whole_object(void **state)
{
  (void)state;
  struct objstore *o = dir_store("ow");
  overwrite(o);
  obj_close(o);
}

static void dir_a_listing_is_every_key_under_a_prefix_in_byte_order_with_sizes(void **state)
{
  (void)state;
  struct objstore *o = dir_store("list");
  listing(o);
  obj_close(o);
}

static void dir_a_missing_key_or_prefix_is_not_found_and_lists_nothing(void **state)
{
  (void)state;
  struct objstore *o = dir_store("missing");
  missing(o);
  obj_close(o);
}

static void dir_bad_keys_are_refused_in_one_line_and_nothing_is_written(void **state)
{
  (void)state;
  assert_int_equal(sh(NULL, 0, "mkdir -p %s/bad", top), 0);
  struct objstore *o = dir_store("bad/store");
  char long_key[OBJ_KEY_MAX + 2];
  memset(long_key, 'k', sizeof long_key - 1);
  long_key[sizeof long_key - 1] = 0;
  const char *bad[] = {"../x", "/abs", "a b", "", "a//b", "x/../y", "a\nb", "k*", long_key};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why[0] = 0;
    assert_int_equal(obj_put(o, bad[i], "x", 1, why, sizeof why), OBJ_ERR);
    assert_one_line(why);
    assert_non_null(strstr(why, "bad key"));
    uint8_t *d;
    size_t n;
    assert_int_equal(obj_get(o, bad[i], &d, &n, why, sizeof why), OBJ_ERR);
    assert_int_equal(obj_del(o, bad[i], why, sizeof why), OBJ_ERR);
    if (bad[i][0])
      assert_int_equal(obj_list(o, bad[i], collect, list_of(o, ""), why, sizeof why), OBJ_ERR);
  }
  /* Nothing in the store, nor beside it ("../x" would be top/bad/x). */
  assert_int_equal(sh(out, OUT_SIZE, "find %s/bad -mindepth 1 | grep -v '^%s/bad/store$'", top,
                      top), 1);
  assert_int_equal(list_of(o, "")->n, 0);
  obj_close(o);
}

static void dir_a_leftover_temporary_file_is_never_listed(void **state)
{
  (void)state;
  struct objstore *o = dir_store("tmpfile");
  put_ok(o, "v1/pg3/log/0001", "abc", 3);
  /* What a put cut short by a crash leaves (objstore_dir.c, D1 and D2). */
  char p[600];
  snprintf(p, sizeof p, "%s/tmpfile/v1/pg3/log/0002.tmp+123-1", top);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "half", 4), 4);
  close(fd);
  snprintf(p, sizeof p, "%s/tmpfile/v1/pg3/log/0001.tmp+123-2", top);
  fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  close(fd);
  struct listed *l = list_of(o, "v1/");
  assert_int_equal(l->n, 1);
  assert_string_equal(l->keys[0], "v1/pg3/log/0001");
  assert_int_equal(list_of(o, "v1/pg3/log/0002")->n, 0);
  uint8_t *d;
  size_t n;
  assert_int_equal(obj_get(o, "v1/pg3/log/0002", &d, &n, why, sizeof why), OBJ_NOTFOUND);
  get_is(o, "v1/pg3/log/0001", "abc", 3);
  /* And a put of that key over it gives the whole new object. */
  put_ok(o, "v1/pg3/log/0002", "whole", 5);
  get_is(o, "v1/pg3/log/0002", "whole", 5);
  assert_int_equal(list_of(o, "v1/")->n, 2);
  obj_close(o);
}

/* ---- SeaweedFS ----------------------------------------------------------- */

static struct objstore *s3_store(const char *url)
{
  weed_up();
  weed_keys(AK, SK);
  struct objstore *o = obj_open(url, why, sizeof why);
  if (o == NULL)
    fail_msg("obj_open %s: %s", url, why);
  return o;
}

static void s3_an_object_put_is_read_back_whole(void **state)
{
  (void)state;
  struct objstore *o = s3_store("s3://auralog-rt");
  assert_non_null(strstr(obj_describe(o), "bucket auralog-rt"));
  round_trip(o);
  obj_close(o);
}

static void s3_a_put_replaces_the_whole_object(void **state)
{
  (void)state;
  struct objstore *o = s3_store("s3://auralog-ow");
  overwrite(o);
  obj_close(o);
}

static void s3_a_listing_is_every_key_under_a_prefix_in_byte_order_with_sizes(void **state)
{
  (void)state;
  struct objstore *o = s3_store("s3://auralog-list");
  listing(o);
  obj_close(o);
}

static void s3_a_missing_key_or_prefix_is_not_found_and_lists_nothing(void **state)
{
  (void)state;
  struct objstore *o = s3_store("s3://auralog-missing");
  missing(o);
  obj_close(o);
}

/* ListObjectsV2 answers 1,000 keys a page: 1,100 take two. */
static void s3_a_listing_follows_every_page(void **state)
{
  (void)state;
  struct objstore *o = s3_store("s3://auralog-pages");
  double t0 = now_s();
  for (int i = 1099; i >= 0; i--) {
    char key[32];
    snprintf(key, sizeof key, "many/%04d", i);
    put_ok(o, key, key, (size_t)(i % 7));
  }
  print_message("1,100 puts in %.1f s\n", now_s() - t0);
  struct listed *l = list_of(o, "many/");
  assert_int_equal(l->n, 1100);
  for (int i = 0; i < 1100; i++) {
    char key[32];
    snprintf(key, sizeof key, "many/%04d", i);
    assert_string_equal(l->keys[i], key);
    assert_int_equal(l->sizes[i], i % 7);
  }
  assert_int_equal(list_of(o, "many/10")->n, 100);
  obj_close(o);
}

static void s3_a_prefix_in_the_url_keeps_keys_under_it(void **state)
{
  (void)state;
  struct objstore *p = s3_store("s3://auralog-prefix/some/prefix/");
  struct objstore *whole = s3_store("s3://auralog-prefix");
  assert_non_null(strstr(obj_describe(p), "prefix some/prefix"));
  put_ok(p, "v1/pg3/log/0001", "in", 2);
  put_ok(whole, "some/prefixed", "beside", 6);   /* the same letters, not under it */
  put_ok(whole, "other", "out", 3);
  struct listed *l = list_of(p, "");
  assert_int_equal(l->n, 1);
  assert_string_equal(l->keys[0], "v1/pg3/log/0001");
  l = list_of(whole, "");
  assert_int_equal(l->n, 3);
  assert_string_equal(l->keys[0], "other");
  assert_string_equal(l->keys[1], "some/prefix/v1/pg3/log/0001");
  assert_string_equal(l->keys[2], "some/prefixed");
  get_is(whole, "some/prefix/v1/pg3/log/0001", "in", 2);
  uint8_t *d;
  size_t n;
  assert_int_equal(obj_get(p, "other", &d, &n, why, sizeof why), OBJ_NOTFOUND);
  assert_int_equal(obj_del(p, "v1/pg3/log/0001", why, sizeof why), 0);
  assert_int_equal(list_of(whole, "some/")->n, 1);
  obj_close(p);
  obj_close(whole);
}

static void s3_a_bucket_not_there_is_made_by_open(void **state)
{
  (void)state;
  struct objstore *o = s3_store("s3://auralog-fresh-bucket");
  assert_int_equal(list_of(o, "")->n, 0);
  put_ok(o, "k", "v", 1);
  obj_close(o);
  o = s3_store("s3://auralog-fresh-bucket");   /* there now: opened as it is */
  get_is(o, "k", "v", 1);
  obj_close(o);
}

static void s3_wrong_keys_and_missing_rights_are_one_line_naming_the_s3_error(void **state)
{
  (void)state;
  struct objstore *o = s3_store("s3://auralog-auth");
  put_ok(o, "k", "v", 1);
  obj_close(o);

  weed_keys(AK, "not-the-secret");
  why[0] = 0;
  assert_null(obj_open("s3://auralog-auth", why, sizeof why));
  assert_one_line(why);
  assert_non_null(strstr(why, "HTTP 403"));
  assert_non_null(strstr(why, "SignatureDoesNotMatch"));
  assert_null(strstr(why, "not-the-secret"));
  print_message("wrong secret: %s\n", why);

  weed_keys("nobody", SK);
  assert_null(obj_open("s3://auralog-auth", why, sizeof why));
  assert_one_line(why);
  assert_non_null(strstr(why, "InvalidAccessKeyId"));

  /* The reader may read and list, not write or delete: OBJ_ERR, S3's code. */
  weed_keys(READER_AK, READER_SK);
  o = obj_open("s3://auralog-auth", why, sizeof why);
  if (o == NULL)
    fail_msg("obj_open as the reader: %s", why);
  get_is(o, "k", "v", 1);
  assert_int_equal(list_of(o, "")->n, 1);
  why[0] = 0;
  assert_int_equal(obj_put(o, "k2", "v", 1, why, sizeof why), OBJ_ERR);
  assert_one_line(why);
  assert_non_null(strstr(why, "s3 PUT k2: HTTP 403 AccessDenied"));
  print_message("no right to write: %s\n", why);
  assert_int_equal(obj_del(o, "k", why, sizeof why), OBJ_ERR);
  assert_one_line(why);
  assert_non_null(strstr(why, "AccessDenied"));
  obj_close(o);
  weed_keys(AK, SK);
}

static void s3_open_without_its_settings_says_which_is_missing(void **state)
{
  (void)state;
  weed_keys(AK, SK);
  unsetenv("AURALOG_S3_ENDPOINT");
  assert_null(obj_open("s3://auralog-x", why, sizeof why));
  assert_one_line(why);
  assert_non_null(strstr(why, "AURALOG_S3_ENDPOINT is not set"));

  weed_keys(AK, SK);
  unsetenv("AWS_SECRET_ACCESS_KEY");
  assert_null(obj_open("s3://auralog-x", why, sizeof why));
  assert_non_null(strstr(why, "AWS_SECRET_ACCESS_KEY is not set"));
  weed_keys("", SK);
  assert_null(obj_open("s3://auralog-x", why, sizeof why));
  assert_non_null(strstr(why, "AWS_ACCESS_KEY_ID is not set"));

  weed_keys(AK, SK);
  setenv("AURALOG_S3_ENDPOINT", "127.0.0.1:8333", 1);
  assert_null(obj_open("s3://auralog-x", why, sizeof why));
  assert_non_null(strstr(why, "not http://"));

  weed_keys(AK, SK);
  const char *bad[] = {"s3://", "s3://ab", "s3://Upper", "s3://a_b", "s3://ok-bucket/a b",
                       "s3://ok-bucket/../x", "s3://ok-bucket//x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why[0] = 0;
    assert_null(obj_open(bad[i], why, sizeof why));
    assert_one_line(why);
    assert_non_null(strstr(why, "bad "));
  }
}

static void s3_a_server_that_is_down_is_one_line_within_seconds(void **state)
{
  (void)state;
  /* Nothing listens there: open says so at once. */
  weed_keys(AK, SK);
  char down[64];
  snprintf(down, sizeof down, "http://127.0.0.1:%d", port0 + 8);
  setenv("AURALOG_S3_ENDPOINT", down, 1);
  double t0 = now_s();
  why[0] = 0;
  assert_null(obj_open("s3://auralog-down", why, sizeof why));
  assert_true(now_s() - t0 < 5);
  assert_one_line(why);
  assert_non_null(strstr(why, "cannot connect"));
  assert_non_null(strstr(why, down));
  print_message("server down: %s\n", why);

  /* A store open when its server goes: each call fails the same way. */
  struct objstore *o = s3_store("s3://auralog-down");
  put_ok(o, "k", "v", 1);
  pid_t pid = weed_pid_now();
  weed_down();
  assert_false(pid_alive(pid));
  t0 = now_s();
  assert_int_equal(obj_put(o, "k", "v", 1, why, sizeof why), OBJ_ERR);
  assert_one_line(why);
  assert_non_null(strstr(why, "cannot connect"));
  uint8_t *d;
  size_t n;
  assert_int_equal(obj_get(o, "k", &d, &n, why, sizeof why), OBJ_ERR);
  static struct listed sink;
  assert_int_equal(obj_list(o, "", collect, &sink, why, sizeof why), OBJ_ERR);
  assert_non_null(strstr(why, "cannot connect"));
  assert_int_equal(obj_del(o, "k", why, sizeof why), OBJ_ERR);
  assert_true(now_s() - t0 < 5);
  obj_close(o);
  /* Nothing of weed's is left running. */
  assert_int_equal(sh(out, OUT_SIZE, "pgrep -f '[-]dir=%s/weed/data'", top), 1);
}

/* ---- the group ----------------------------------------------------------- */

static int setup(void **state)
{
  (void)state;
  snprintf(top, sizeof top, "/tmp/auralog-it-objstore-%d", (int)getpid());
  port0 = free_block((int)getpid()) + 40;   /* above what a cluster would take */
  weed_where(top, port0);
  return sh(NULL, 0, "rm -rf %s && mkdir -p %s", top, top);
}

static int teardown(void **state)
{
  (void)state;
  weed_down();
  if (getenv("AURALOG_KEEP") == NULL)
    sh(NULL, 0, "rm -rf %s", top);
  else
    fprintf(stderr, "kept %s\n", top);
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(dir_an_object_put_is_read_back_whole),
    cmocka_unit_test(dir_a_put_replaces_the_whole_object),
    cmocka_unit_test(dir_a_listing_is_every_key_under_a_prefix_in_byte_order_with_sizes),
    cmocka_unit_test(dir_a_missing_key_or_prefix_is_not_found_and_lists_nothing),
    cmocka_unit_test(dir_bad_keys_are_refused_in_one_line_and_nothing_is_written),
    cmocka_unit_test(dir_a_leftover_temporary_file_is_never_listed),
    cmocka_unit_test(s3_open_without_its_settings_says_which_is_missing),
    cmocka_unit_test(s3_an_object_put_is_read_back_whole),
    cmocka_unit_test(s3_a_put_replaces_the_whole_object),
    cmocka_unit_test(s3_a_listing_is_every_key_under_a_prefix_in_byte_order_with_sizes),
    cmocka_unit_test(s3_a_missing_key_or_prefix_is_not_found_and_lists_nothing),
    cmocka_unit_test(s3_a_listing_follows_every_page),
    cmocka_unit_test(s3_a_prefix_in_the_url_keeps_keys_under_it),
    cmocka_unit_test(s3_a_bucket_not_there_is_made_by_open),
    cmocka_unit_test(s3_wrong_keys_and_missing_rights_are_one_line_naming_the_s3_error),
    /* Last: it stops the server. */
    cmocka_unit_test(s3_a_server_that_is_down_is_one_line_within_seconds),
  };
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  return cmocka_run_group_tests_name("integration: the object store (dir, s3 on SeaweedFS)",
                                     tests, setup, teardown);
}
