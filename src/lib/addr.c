/*
 * addr.c: address parsing (see addr.h).
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/addr.h"
#include "lib/conf.h"
#include "lib/log.h"
#include "param.h"

int addr_parse(const char *s, struct sockaddr_in *sa, char *why, size_t whylen)
{
  char host[ADDR_MAX_LEN + 1];
  const char *colon = s ? strrchr(s, ':') : NULL;
  if (colon == NULL || colon == s || (size_t)(colon - s) > ADDR_MAX_LEN) {
    snprintf(why, whylen, "address '%s' is not host:port", s ? s : "");
    return -1;
  }
  memcpy(host, s, colon - s);
  host[colon - s] = 0;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port <= 0 || port > 65535) {
    snprintf(why, whylen, "address '%s' has a bad port", s);
    return -1;
  }
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)port);
  if (strcmp(host, "localhost") == 0)
    strcpy(host, "127.0.0.1");
  if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
    snprintf(why, whylen, "address '%s': '%s' is not an IPv4 address", s, host);
    return -1;
  }
  return 0;
}

int addr_match(const char *served, const char *dialed)
{
  struct sockaddr_in a, b;
  char why[128];
  if (addr_parse(served, &a, why, sizeof why) != 0 || addr_parse(dialed, &b, why, sizeof why) != 0)
    return 0;
  return a.sin_port == b.sin_port &&
         (a.sin_addr.s_addr == htonl(INADDR_ANY) || a.sin_addr.s_addr == b.sin_addr.s_addr);
}

int addr_coord_find(const char *opt, char *out, size_t n, char *why, size_t whylen)
{
  const char *env = getenv("AURALOG_COORD");
  if (opt && *opt)
    env = opt;
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return 0;
  }
  cJSON *o = NULL;
  int found = conf_find(NULL, &o, why, whylen);
  if (found < 0)
    return -1;
  if (found == 0) {
    snprintf(out, n, "%s", COORD_ADDR_DEFAULT);   /* no cluster meant: DESIGN.md §6 */
    return 0;
  }
  int rc = conf_str(o, "coord", out, n);
  cJSON_Delete(o);
  if (rc != 0) {
    char d[PATH_MAX];
    conf_dir(NULL, d, sizeof d);
    snprintf(why, whylen, "no cluster in %s (its cluster.json names no coordinator; `auralog "
             "cluster up --dir %s` writes it)", d, d);
    return -1;
  }
  return 0;
}

const char *addr_coord(const char *opt)
{
  static char addr[ADDR_MAX_LEN + 1];
  char why[PATH_MAX + 200];
  if (opt && *opt)
    return opt;
  if (addr_coord_find(NULL, addr, sizeof addr, why, sizeof why) != 0)
    die("%s", why);
  return addr;
}
