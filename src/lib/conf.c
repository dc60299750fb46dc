/*
 * conf.c: reading a cluster's cluster.json (see conf.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/conf.h"

void conf_dir(const char *dir, char *out, size_t n)
{
  const char *env = getenv("AURALOG_DIR"), *home = getenv("HOME");
  if (dir && *dir)
    snprintf(out, n, "%s", dir);
  else if (env && *env)
    snprintf(out, n, "%s", env);
  else
    snprintf(out, n, "%s/.auralog", home && *home ? home : "/tmp");
}

cJSON *conf_load(const char *dir)
{
  char d[PATH_MAX], p[PATH_MAX + 16];
  conf_dir(dir, d, sizeof d);
  snprintf(p, sizeof p, "%s/cluster.json", d);
  FILE *f = fopen(p, "r");
  if (f == NULL)
    return NULL;
  /* A description is a few KiB (15 replicas at most): 64 KiB is ample. */
  static const size_t cap = 64 * 1024;
  char *buf = malloc(cap);
  size_t len = buf ? fread(buf, 1, cap - 1, f) : 0;
  fclose(f);
  if (buf == NULL)
    return NULL;
  buf[len] = 0;
  cJSON *o = cJSON_Parse(buf);
  free(buf);
  if (o && !cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

int conf_find(const char *dir, cJSON **conf, char *why, size_t whylen)
{
  const char *env = getenv("AURALOG_DIR");
  int named = (dir && *dir) || (env && *env);
  char d[PATH_MAX], p[PATH_MAX + 16];
  conf_dir(dir, d, sizeof d);
  snprintf(p, sizeof p, "%s/cluster.json", d);
  *conf = NULL;
  struct stat st;
  if (stat(p, &st) != 0) {
    if (!named)
      return 0;              /* nothing meant, nothing found: the defaults */
    int nodir = stat(d, &st) != 0;
    snprintf(why, whylen, "no cluster in %s (%s; start one: auralog cluster up --dir %s)", d,
             nodir ? "no such directory" : "no cluster.json there", d);
    return -1;
  }
  if ((*conf = conf_load(d)) == NULL) {
    snprintf(why, whylen, "no cluster in %s (%s is not a cluster's description; `auralog "
             "cluster up --dir %s` writes it)", d, p, d);
    return -1;
  }
  return 1;
}

int conf_str(const cJSON *conf, const char *key, char *out, size_t n)
{
  const cJSON *v = cJSON_GetObjectItem(conf, key);
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= n)
    return -1;
  snprintf(out, n, "%s", v->valuestring);
  return 0;
}
