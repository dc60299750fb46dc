/*
 * Integration: the live dashboard. The coordinator of a real cluster
 * serves the page and /status.json over HTTP (coord/http.c); a real
 * headless browser (Debian's chromium) loads the page, runs its script and
 * dumps the DOM it drew: the six nodes with their state, and the VDL,
 * which rises while a workload runs. Unknown paths get 404, garbage 400
 * and a closed connection.
 *
 * Slow clients cannot lock it out: with HTTP_CONNS_MAX connections held
 * by clients that send a request head a byte at a time, or nothing, the
 * page and /status.json are still served at once (the oldest idle
 * connection makes room), and every slow connection is closed
 * HTTP_HEADER_MS after it began (408 for those that sent part of a
 * request), however busily it trickles. A client that pipelines
 * thousands of requests and reads nothing is dropped before its answers
 * pile up: the coordinator's memory grows by little more than HTTP_WQ_MAX.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
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
  if (cluster_start_with("dashboard", " --failover") != 0)
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

/* ---- slow clients ---------------------------------------------------------------- */

static long long mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A connection to the dashboard, non-blocking (rcvbuf > 0: that small a
 * receive buffer, set before connecting). */
static int dash_connect(int rcvbuf)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  if (rcvbuf > 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)http_port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
    fail_msg("cannot connect to the dashboard on port %d: %s", http_port, strerror(errno));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

struct slow {
  int fd;
  int talks;                 /* sends a head a byte at a time (else nothing) */
  long long start, closed;   /* ms; closed 0: still open */
  char got[64];              /* the first bytes the server sent */
  size_t ngot;
};

/* The status code of a 200 answer to a GET on a fresh connection, and how
 * long it took (ms). */
static long long timed_get(const char *target)
{
  long long t0 = mono_ms();
  assert_true(http_get(target) > 0);
  assert_int_equal(status_code(), 200);
  return mono_ms() - t0;
}

static void slow_clients_cannot_lock_it_out(void **state)
{
  (void)state;
  enum { N = HTTP_CONNS_MAX };
  static struct slow sl[N];
  const char *head = "GET /status.json HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  /* Every slot taken: two thirds trickle a request head, a third say nothing. */
  for (int i = 0; i < N; i++) {
    sl[i] = (struct slow){.fd = dash_connect(0), .talks = i % 3 != 0, .start = mono_ms()};
    if (sl[i].talks)
      assert_int_equal(send(sl[i].fd, head, 5, MSG_NOSIGNAL), 5);  /* "GET /" */
  }
  usleep(200000);

  /* The dashboard still answers, at once: each new connection closes the
   * one idle longest. */
  long long page = timed_get("/"), json = timed_get("/status.json");
  print_message("with %d slow clients: GET / in %lld ms, /status.json in %lld ms\n", N,
                page, json);
  assert_true(page < 1000);
  assert_true(json < 1000);
  assert_non_null(strstr(body(), "\"volume\":\"main\""));

  /* The slow ones trickle on, a byte every 100 ms (no byte moves the
   * deadline); every one is closed HTTP_HEADER_MS after it began (plus
   * HTTP_LINGER_MS for those answered 408 first). */
  long long deadline = mono_ms() + HTTP_HEADER_MS + HTTP_LINGER_MS + 3000;
  int open = N;
  size_t off = 5;
  while (open > 0 && mono_ms() < deadline) {
    for (int i = 0; i < N; i++)
      if (sl[i].closed == 0 && sl[i].talks)
        send(sl[i].fd, head + off % strlen(head), 1, MSG_NOSIGNAL);
    off++;
    struct pollfd pf[N];
    for (int i = 0; i < N; i++)
      pf[i] = (struct pollfd){.fd = sl[i].closed ? -1 : sl[i].fd, .events = POLLIN};
    poll(pf, N, 100);
    for (int i = 0; i < N; i++) {
      if (sl[i].closed || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char b[4096];
      ssize_t r = recv(sl[i].fd, b, sizeof b, 0);
      if (r > 0) {
        size_t k = (size_t)r < sizeof sl[i].got - 1 - sl[i].ngot
                     ? (size_t)r : sizeof sl[i].got - 1 - sl[i].ngot;
        memcpy(sl[i].got + sl[i].ngot, b, k);
        sl[i].ngot += k;
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        continue;
      sl[i].closed = mono_ms();
      open--;
    }
  }
  int early = 0, answered = 0;
  long long latest = 0;
  for (int i = 0; i < N; i++) {
    close(sl[i].fd);
    if (sl[i].closed == 0)
      fail_msg("slow client %d (%s) still connected %lld ms after it began", i,
               sl[i].talks ? "trickling" : "silent", mono_ms() - sl[i].start);
    long long took = sl[i].closed - sl[i].start;
    if (took > latest)
      latest = took;
    if (took < HTTP_HEADER_MS - 100)
      early++;              /* made room for our two requests */
    else if (sl[i].talks && strncmp(sl[i].got, "HTTP/1.1 408 ", 13) == 0)
      answered++;
    else if (sl[i].talks)
      fail_msg("slow client %d was closed after %lld ms without a 408: '%s'", i, took,
               sl[i].got);
    else
      assert_int_equal(sl[i].ngot, 0);   /* silent: closed without a word */
  }
  print_message("slow clients closed: %d to make room, the rest after %d..%lld ms "
                "(%d answered 408)\n", early, HTTP_HEADER_MS, latest, answered);
  assert_true(early <= 2);  /* one per request we made, no more */
  assert_true(latest <= HTTP_HEADER_MS + HTTP_LINGER_MS + 1500);
  /* And the dashboard is as good as new. */
  assert_true(timed_get("/") < 1000);
  assert_int_equal(sh(out, sizeof out, "grep -c 'sent no whole request head within' %s/log/coord.log",
                      dir), 0);
}

/* Peak memory of the coordinator, in KiB. */
static long coord_hwm_kib(void)
{
  char p[256], line[256];
  snprintf(p, sizeof p, "/proc/%d/status", (int)pid_of("coord"));
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
      break;
  fclose(f);
  assert_true(kib > 0);
  return kib;
}

static void a_client_that_never_reads_is_dropped_early(void **state)
{
  (void)state;
  /* 3,000 pipelined requests for the 26 KB page (75 MB of answers), in
   * one go, from a client with a tiny receive window that reads nothing:
   * the server must stop queuing at HTTP_WQ_MAX, not after a whole read's
   * worth of requests (900 pages). */
  long before = coord_hwm_kib();
  int fd = dash_connect(4096);
  const char *one = "GET / HTTP/1.1\r\n\r\n";
  size_t n = strlen(one), total = 3000 * n, sent = 0;
  char *reqs = malloc(total);
  for (int i = 0; i < 3000; i++)
    memcpy(reqs + (size_t)i * n, one, n);
  long long t0 = mono_ms();
  while (sent < total && mono_ms() - t0 < 5000) {
    ssize_t w = send(fd, reqs + sent, total - sent, MSG_NOSIGNAL);
    if (w > 0)
      sent += (size_t)w;
    else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      break;                /* dropped: a reset */
    else
      usleep(10000);
  }
  free(reqs);
  usleep(500000);
  /* Now read: the server has closed; what arrives is what the kernel held. */
  size_t got = 0;
  t0 = mono_ms();
  for (;;) {
    char b[65536];
    ssize_t r = recv(fd, b, sizeof b, 0);
    if (r > 0) {
      got += (size_t)r;
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && mono_ms() - t0 < 5000) {
      usleep(10000);
      continue;
    }
    break;
  }
  close(fd);
  long after = coord_hwm_kib();
  print_message("a client that never reads: %zu of %zu request bytes sent, %zu answer bytes "
                "read before the close; coordinator peak memory +%ld KiB\n", sent, total, got,
                after - before);
  assert_true(got < 3000 * 26000ul);
  assert_true(after - before < 2 * (long)(HTTP_WQ_MAX >> 10) + 4096);
  assert_int_equal(sh(out, sizeof out, "grep -c 'does not read its answers' %s/log/coord.log",
                      dir), 0);
  assert_true(timed_get("/") < 1000);
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

static const char *dom_text(const char *id);

/* A1 was down a while ago and is up again: the coordinator's history has
 * the period, and a page opened now (a fresh load) shades it in A1's lane
 * though the page never saw A1 down itself. (Down for 2.5 s: at least two
 * of the coordinator's samples, a second apart, see it.) */
static void a_page_opened_late_shows_the_last_minutes(void **state)
{
  (void)state;
  fault("node-stop A1");
  wait_node_state("A1", "down", 3000);
  usleep(2500000);
  fault("node-start A1");
  wait_node_state("A1", "up", 5000);
  assert_true(http_get("/history.json") > 0);
  assert_int_equal(status_code(), 200);
  cJSON *h = cJSON_Parse(body()), *smp;
  assert_non_null(h);
  int n = 0, a1_down = 0;
  cJSON_ArrayForEach(smp, cJSON_GetObjectItem(h, "samples")) {
    n++;
    cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(smp, "nodes"), "A1");
    a1_down |= cJSON_IsString(st) && strcmp(st->valuestring, "down") == 0;
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(smp, "age_ms")));
  }
  cJSON_Delete(h);
  print_message("the coordinator's history: %d samples, A1 down in some: %s\n", n,
                a1_down ? "yes" : "no");
  assert_true(n >= 5);
  assert_true(a1_down);
  assert_string_equal(node_state("A1"), "up");
  dump_dom();
  assert_string_equal(dom_node_state("A1"), "up");
  assert_non_null(strstr(out, "class=\"fault-band\" data-node=\"A1\" data-kind=\"down\""));
  /* The log's edge: the LAL window, and what waits for a quorum (nothing). */
  if (strstr(dom_text("log-edge"), "LAL") == NULL ||
      strstr(dom_text("log-pending"), "nothing waits") == NULL)
    fail_msg("the log-edge panel shows '%s'", dom_text("log-edge"));
}

/* The text the page put in the element with this id ("" if none). */
static const char *dom_text(const char *id)
{
  static char text[1024];
  char key[64];
  snprintf(key, sizeof key, "id=\"%s\"", id);
  text[0] = 0;
  const char *p = strstr(out, key), *gt = p ? strchr(p, '>') : NULL, *lt = gt ? strchr(gt, '<') : NULL;
  if (lt && lt - gt - 1 < (long)sizeof text)
    snprintf(text, sizeof text, "%.*s", (int)(lt - gt - 1), gt + 1);
  return text;
}

/* The writer crashes; the page shows it heard from, then (once the
 * coordinator promoted the replica) the failover done: from whom to whom. */
static void the_page_shows_a_failover(void **state)
{
  (void)state;
  dump_dom();
  if (strstr(dom_text("failover"), "writer heard") == NULL)
    fail_msg("before the crash the page's failover panel says '%s'", dom_text("failover"));
  assert_non_null(strstr(dom_text("failover-last"), "none yet"));
  fault("writer-crash");
  int done = 0;
  for (int i = 0; i < 100 && !done; i++) {
    cJSON *o = status("main");
    cJSON *f = cJSON_GetObjectItem(o, "failover");
    done = f && cJSON_GetObjectItem(f, "failovers")->valuedouble >= 1 &&
           !cJSON_GetObjectItem(f, "promoting")->valuestring[0];
    cJSON_Delete(o);
    if (!done)
      usleep(100000);
  }
  if (!done)
    fail_msg("no replica was promoted within 10 s of the writer's crash");
  dump_dom();
  char last[1024];
  snprintf(last, sizeof last, "%s", dom_text("failover-last"));
  print_message("the page's failover panel: %s | %s\n", dom_text("failover"), last);
  if (strstr(last, "1 done") == NULL || strstr(last, "→") == NULL)
    fail_msg("after the failover the page says '%s'", last);
  char o2[4096];
  assert_int_equal(sh(o2, sizeof o2, "%s cluster up --dir %s 2>&1", bin, dir), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(cluster_up_prints_the_dashboard),
    cmocka_unit_test(the_page_and_status_json_over_http),
    cmocka_unit_test(unknown_paths_get_404_bad_requests_400),
    cmocka_unit_test(slow_clients_cannot_lock_it_out),
    cmocka_unit_test(a_client_that_never_reads_is_dropped_early),
    cmocka_unit_test(the_page_shows_six_nodes_and_the_vdl_rises),
    cmocka_unit_test(a_stopped_node_is_marked_down),
    cmocka_unit_test(a_page_opened_late_shows_the_last_minutes),
    cmocka_unit_test(the_page_shows_a_failover),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  return cmocka_run_group_tests_name("integration: dashboard", tests, setup, teardown);
}
