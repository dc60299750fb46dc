/*
 * Integration: the live dashboard. The coordinator of a real cluster
 * serves the page and /status.json over HTTP (coord/http.c); a real
 * headless browser (Debian's chromium) loads the page, runs its script and
 * dumps the DOM it drew: the six nodes with their state, and the VDL,
 * which rises while a workload runs. Unknown paths get 404, garbage 400
 * and a closed connection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "coord/http.h"
#include "param.h"
#include "harness.h"
#include "lib/log.h"

static const char *nodes[] = {"A1", "A2", "B1", "B2", "C1", "C2"};
static int http_port;
static char answer[1 << 20];

/* ---- HTTP by hand: a raw socket, so the test sees exactly the bytes ---- */

/* Send req to the dashboard and read until the server closes. Returns the
 * bytes read (answer holds them), or -1 if the server kept the connection
 * open for 5 s. */
static long http_raw(const char *req, size_t len)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)http_port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
    fail_msg("cannot connect to the dashboard on port %d", http_port);
  /* The server may answer and close before all of an oversized request
   * is sent: a failed send is part of that story, not an error. */
  for (size_t off = 0; off < len;) {
    ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  size_t got = 0;
  for (;;) {
    ssize_t r = recv(fd, answer + got, sizeof answer - 1 - got, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      close(fd);
      answer[got] = 0;
      return -1;            /* timed out: the connection stayed open */
    }
    if (r <= 0)
      break;
    got += (size_t)r;
    assert_true(got < sizeof answer - 1);
  }
  close(fd);
  answer[got] = 0;
  return (long)got;
}

static long http_get(const char *target)
{
  char req[512];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Connection: close\r\n\r\n", target, http_port);
  return http_raw(req, (size_t)n);
}

static int status_code(void)
{
  int code = 0;
  if (sscanf(answer, "HTTP/1.1 %d ", &code) != 1)
    fail_msg("not an HTTP answer: '%.80s'", answer);
  return code;
}

static const char *body(void)
{
  const char *b = strstr(answer, "\r\n\r\n");
  assert_non_null(b);
  return b + 4;
}

/* ---- the browser ---------------------------------------------------------- */

/* Load the page in headless chromium, let it run five seconds of (virtual)
 * time, and leave the DOM it drew in out. */
static void dump_dom(void)
{
  if (sh(NULL, 0, "command -v chromium >/dev/null") != 0)
    fail_msg("chromium is not installed: the dashboard test needs Debian's chromium "
             "(scripts/deps.sh installs it: bash scripts/deps.sh)");
  int rc = sh(out, sizeof out,
              "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic "
              "--no-first-run --disable-background-networking --disable-component-update "
              "--disable-sync --user-data-dir=%s/chromium --window-size=1280,900 "
              "--virtual-time-budget=5000 --dump-dom http://127.0.0.1:%d/ 2>>%s/chromium.log",
              dir, http_port, dir);
  if (rc != 0 || strstr(out, "</html>") == NULL)
    fail_msg("chromium --dump-dom failed (%d); see %s/chromium.log: %.200s", rc, dir, out);
}

/* The data-state the page gave node id, or "" if it drew no such node. */
static const char *dom_node_state(const char *id)
{
  static char state[32];
  char key[32];
  snprintf(key, sizeof key, "id=\"node-%s\"", id);
  state[0] = 0;
  const char *p = strstr(out, key), *end = p ? strchr(p, '>') : NULL;
  const char *s = p ? strstr(p, "data-state=\"") : NULL;
  if (s && s < end)
    sscanf(s, "data-state=\"%31[a-z]\"", state);
  return state;
}

/* The VDL the page shows, or -1. */
static long long dom_vdl(void)
{
  long long v = -1;
  const char *p = strstr(out, "id=\"vdl\"");
  if (p && (p = strchr(p, '>')) != NULL && sscanf(p + 1, "%lld<", &v) != 1)
    v = -1;
  return v;
}

static int count(const char *hay, const char *needle)
{
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* Node elements the page drew (the dump holds the script's source too,
 * where the id is not a name yet). */
static int dom_nodes(void)
{
  const char *needle = "class=\"node\" id=\"node-";
  int n = 0;
  for (const char *p = out; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n += isalnum((unsigned char)p[strlen(needle)]) != 0;
  return n;
}

static long long status_vdl(void)
{
  cJSON *o = status("main");
  long long v = (long long)cJSON_GetObjectItem(o, "vdl")->valuedouble;
  cJSON_Delete(o);
  return v;
}

static int setup(void **state)
{
  (void)state;
  if (cluster_start("dashboard") != 0)
    return -1;
  http_port = base + HTTP_PORT_OFFSET;
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

/* ---- tests ------------------------------------------------------------------ */

static void cluster_up_prints_the_dashboard(void **state)
{
  (void)state;
  char want[64];
  snprintf(want, sizeof want, "dashboard: http://127.0.0.1:%d/\n", http_port);
  assert_int_equal(sh(out, sizeof out, "%s cluster up --dir %s", bin, dir), 0);
  if (strstr(out, want) == NULL)
    fail_msg("cluster up did not print '%s':\n%s", want, out);
  snprintf(want, sizeof want, "\"http://127.0.0.1:%d/\"", http_port);
  assert_int_equal(sh(out, sizeof out, "cat %s/cluster.json", dir), 0);
  assert_non_null(strstr(out, "\"dashboard\""));
  assert_non_null(strstr(out, want));
}

static void the_page_and_status_json_over_http(void **state)
{
  (void)state;
  assert_true(http_get("/") > 0);
  assert_int_equal(status_code(), 200);
  assert_non_null(strstr(answer, "Content-Type: text/html"));
  assert_non_null(strstr(body(), "<title>auralog dashboard</title>"));
  assert_non_null(strstr(body(), "status.json"));

  /* /status.json is the object `auralog status --json` prints: the same
   * fields in the same order, the same volume, epoch and nodes. */
  assert_true(http_get("/status.json?volume=main") > 0);
  assert_int_equal(status_code(), 200);
  assert_non_null(strstr(answer, "Content-Type: application/json"));
  cJSON *h = cJSON_Parse(body()), *c = status("main");
  assert_non_null(h);
  cJSON *a = h->child, *b = c->child;
  for (; a && b; a = a->next, b = b->next)
    assert_string_equal(a->string, b->string);
  assert_null(a);
  assert_null(b);
  assert_string_equal(cJSON_GetObjectItem(h, "volume")->valuestring, "main");
  assert_true(cJSON_GetObjectItem(h, "epoch")->valuedouble ==
              cJSON_GetObjectItem(c, "epoch")->valuedouble);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(h, "nodes")), 6);
  for (int i = 0; i < 6; i++) {
    cJSON *hn = cJSON_GetArrayItem(cJSON_GetObjectItem(h, "nodes"), i);
    cJSON *cn = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "nodes"), i);
    assert_string_equal(cJSON_GetObjectItem(hn, "id")->valuestring, nodes[i]);
    assert_string_equal(cJSON_GetObjectItem(cn, "id")->valuestring, nodes[i]);
    assert_string_equal(cJSON_GetObjectItem(hn, "addr")->valuestring,
                        cJSON_GetObjectItem(cn, "addr")->valuestring);
  }
  cJSON_Delete(h);
  cJSON_Delete(c);

  /* No volume named: main. A volume not created yet: exists is false. */
  assert_true(http_get("/status.json") > 0);
  assert_non_null(strstr(body(), "\"volume\":\"main\""));
  assert_true(http_get("/status.json?t=1&volume=nosuch") > 0);
  assert_int_equal(status_code(), 200);
  assert_non_null(strstr(body(), "\"exists\":false"));

  /* Keep-alive: two requests on one connection get two answers. */
  char two[256];
  int n = snprintf(two, sizeof two, "GET /status.json HTTP/1.1\r\nHost: x\r\n\r\n"
                   "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  assert_true(http_raw(two, (size_t)n) > 0);
  assert_int_equal(count(answer, "HTTP/1.1 200 OK"), 2);
}

static void unknown_paths_get_404_bad_requests_400(void **state)
{
  (void)state;
  assert_true(http_get("/nope") > 0);
  assert_int_equal(status_code(), 404);
  assert_true(http_get("/status.json/../etc/passwd") > 0);
  assert_int_equal(status_code(), 404);

  /* Garbage, a bad volume name, an oversized header, a body: 400, and
   * the server closes the connection (http_raw returns at its close). */
  const char *garbage = "\x16\x03\x01 not http at all\r\n\r\n";
  assert_true(http_raw(garbage, strlen(garbage)) > 0);
  assert_int_equal(status_code(), 400);
  assert_true(http_get("/status.json?volume=../../x") > 0);
  assert_int_equal(status_code(), 400);
  size_t big = 64 << 10;
  char *huge = malloc(big + 64);
  int n = snprintf(huge, 64, "GET / HTTP/1.1\r\nX-Pad: ");
  memset(huge + n, 'a', big);
  memcpy(huge + n + big, "\r\n\r\n", 4);
  assert_true(http_raw(huge, (size_t)n + big + 4) > 0);
  free(huge);
  assert_int_equal(status_code(), 400);
  const char *post = "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
  assert_true(http_raw(post, strlen(post)) > 0);
  assert_int_equal(status_code(), 400);

  /* Only GET: anything else is refused, the server goes on. */
  const char *del = "DELETE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  assert_true(http_raw(del, strlen(del)) > 0);
  assert_int_equal(status_code(), 405);
  assert_true(http_get("/") > 0);
  assert_int_equal(status_code(), 200);
}

static void the_page_shows_six_nodes_and_the_vdl_rises(void **state)
{
  (void)state;
  dump_dom();
  assert_int_equal(dom_nodes(), 6);
  for (int i = 0; i < 6; i++)
    if (strcmp(dom_node_state(nodes[i]), "up") != 0)
      fail_msg("the page shows node %s as '%s', not up", nodes[i], dom_node_state(nodes[i]));
  assert_non_null(strstr(out, "id=\"timeline\""));
  long long before = dom_vdl();
  if (before < 0)
    fail_msg("the page shows no VDL");

  /* A workload: twenty transactions, each a commit the VDL must pass. */
  sql_ok("create table d(a, b);", "");
  for (int i = 0; i < 20; i++) {
    char q[128];
    snprintf(q, sizeof q, "insert into d values (%d, randomblob(100));", i);
    sql_ok(q, "");
  }
  /* The engine reports every ENGINE_STAT_MS: wait for the coordinator to
   * know, then look again. */
  for (int i = 0; i < 50 && status_vdl() <= before; i++)
    usleep(100000);
  long long now = status_vdl();
  assert_true(now > before);
  dump_dom();
  long long after = dom_vdl();
  if (after <= before)
    fail_msg("the page's VDL did not rise: %lld, then %lld (status says %lld)", before,
             after, now);
  assert_true(after >= now);
}

static void a_stopped_node_is_marked_down(void **state)
{
  (void)state;
  fault("node-stop A1");
  wait_node_state("A1", "down", 3000);
  dump_dom();
  assert_string_equal(dom_node_state("A1"), "down");
  assert_string_equal(dom_node_state("A2"), "up");
  /* The timeline shades the period, in A1's lane. */
  assert_non_null(strstr(out, "class=\"fault-band\" data-node=\"A1\" data-kind=\"down\""));
  fault("node-start A1");
  wait_node_state("A1", "up", 5000);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(cluster_up_prints_the_dashboard),
    cmocka_unit_test(the_page_and_status_json_over_http),
    cmocka_unit_test(unknown_paths_get_404_bad_requests_400),
    cmocka_unit_test(the_page_shows_six_nodes_and_the_vdl_rises),
    cmocka_unit_test(a_stopped_node_is_marked_down),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: dashboard", tests, setup, teardown);
}
