/*
 * addr.h: "host:port" addresses, and which coordinator to talk to.
 */
#ifndef AURALOG_ADDR_H
#define AURALOG_ADDR_H

#include <netinet/in.h>
#include <stddef.h>

/* Parse "host:port" (IPv4 dotted quad, or "localhost") into sa. Returns 0,
 * or -1 with a one-line reason in why. */
int addr_parse(const char *s, struct sockaddr_in *sa, char *why, size_t whylen);

/* Is dialed served by a listener on served? The same port, and the same
 * IPv4 address unless served listens on every address (0.0.0.0). */
int addr_match(const char *served, const char *dialed);

/* The coordinator address: opt if given, else $AURALOG_COORD, else the
 * one the cluster.json of $AURALOG_DIR (or ~/.auralog) names, else, when
 * no directory was named and ~/.auralog holds no cluster, the default
 * 127.0.0.1:7400 (lib/conf.h: a cluster meant but not found is an error,
 * never the defaults). addr_coord_find: 0 with it in out, or -1 with a
 * one-line reason that says where it looked; addr_coord: the address, or
 * the command dies with that line. */
int addr_coord_find(const char *opt, char *out, size_t n, char *why, size_t whylen);
const char *addr_coord(const char *opt);

#endif
