/*
 * http.h: the coordinator's live dashboard over HTTP/1.1 (a driver, like
 * net.c: libuv TCP, with requests parsed by the http-parser library).
 *
 *   GET /                      the dashboard page (tools/viz/dashboard.html,
 *                              embedded in the binary at build time)
 *   GET /status.json?volume=V  the JSON of `auralog status --json`
 *   GET of anything else       404; another method 405
 *   a malformed or oversized request: 400 and a closed connection
 *
 * The page polls /status.json about once a second and draws the AZs, the
 * nodes, each segment's SCL and a timeline of the VDL, the SCLs and the
 * faults. The server only reads: nothing sent over HTTP changes the
 * cluster, so students can leave it open during labs.
 */
#ifndef AURALOG_HTTP_H
#define AURALOG_HTTP_H

#include <stddef.h>
#include <uv.h>

/* By default the dashboard listens on the coordinator's port +
 * HTTP_PORT_OFFSET (param.h), on the same host (127.0.0.1:7480 beside
 * 127.0.0.1:7400). */

/* The status of volume as JSON (a malloc'd string the server frees). */
typedef char *(*http_status_fn)(void *data, const char *volume);
/* The dashboard history's sample of volume main, as JSON (malloc'd; NULL
 * if there is nothing to sample). */
typedef char *(*http_sample_fn)(void *data);

/* Serve the dashboard on addr ("host:port"). Returns 0, or -1 with a
 * reason in why. */
int http_listen(uv_loop_t *loop, const char *addr, http_status_fn status,
                http_sample_fn sample, void *data, char *why, size_t whylen);

/* The default dashboard address for a coordinator listening on coord:
 * the same host, port + HTTP_PORT_OFFSET. Returns 0, or -1 with a reason. */
int http_default_addr(const char *coord, char *out, size_t n, char *why, size_t whylen);

#endif
