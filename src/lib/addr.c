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

/* The "coord" that DIR/cluster.json names, DIR being $AURALOG_DIR or
 * ~/.auralog (DESIGN.md §6: `cluster up --dir DIR` writes it, and every
 * command finds the cluster by it). NULL if there is none. */
static const char *conf_coord(void)
{
  static char addr[ADDR_MAX_LEN + 1];
  cJSON *o = conf_load(NULL);
  int rc = conf_str(o, "coord", addr, sizeof addr);
  cJSON_Delete(o);
  return rc == 0 ? addr : NULL;
}

const char *addr_coord(const char *opt)
{
  if (opt && *opt)
    return opt;
  const char *env = getenv("AURALOG_COORD");
  if (env && *env)
    return env;
  const char *conf = conf_coord();
  return conf ? conf : COORD_ADDR_DEFAULT;
}
