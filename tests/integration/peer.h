/*
 * peer.h: a hand-made writer for the integration tests. It speaks the wire
 * protocol (proto/auralog.proto) to the coordinator and to storage nodes
 * directly, so that a test can play what no well-behaved engine sends: a
 * recovery interrupted after its first truncation, a Truncate in the same
 * write as an Append, records with odd fields or ranges, absurd VDLs.
 *
 * Everything blocks with a deadline (src/net/rpc.h). Replies are returned as
 * they come, Error envelopes included: the test decides what is right.
 */
#ifndef AURALOG_PEER_H
#define AURALOG_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "net/rpc.h"

/* OpenVolume on the coordinator: create it if asked (page_size 0: the
 * default); writer takes a new epoch, which fences the running engine on
 * every segment that hears of it. Fails the test if the coordinator does
 * not answer with a Volume. Free with auralog__volume__free_unpacked. */
Auralog__Volume *peer_open_volume(const char *coord, const char *name, int create,
                                  uint32_t page_size, int writer);

/* The ticket peer_open_volume got for (volume, epoch), in *pb; NULL if
 * none (the peer then sends that epoch bare, as a forger would). */
Auralog__EpochTicket *peer_ticket(uint64_t volume, uint64_t epoch, Auralog__EpochTicket *pb);

/* The address of node's segment of pg in v (NULL: node holds none). */
const char *peer_seg_addr(const Auralog__Volume *v, uint32_t pg, const char *node);

/* One request on a fresh connection. NULL: no answer within timeout_ms
 * (or the connection failed); the reason is in why. */
Env *peer_call(const char *addr, Env *req, int timeout_ms, char *why, size_t whylen);

/* The same, retried for a moment while the node answers ERR_UNKNOWN_SEGMENT
 * (a volume just created: the coordinator's Assign may still be on its
 * way). NULL as above. */
Env *peer_call_seg(const char *addr, Env *req, int timeout_ms, char *why, size_t whylen);

/* A record being built: the Record plus storage for its one range. */
struct peer_rec {
  Rec r;
  Auralog__Range g, *gp;
  uint8_t data[256];
};

/* A record (lsn, prev) for page: n bytes of value fill at offset off
 * (n <= 256), flags REC_*, the writer's epoch; sealed (rec_seal). */
void peer_rec_literal(struct peer_rec *x, uint64_t lsn, uint64_t prev, uint32_t page,
                      uint32_t off, uint8_t fill, uint32_t n, uint32_t flags,
                      uint64_t epoch);
/* A record whose one range is a copy: bytes [off, off + len) of the page
 * become what it held at [from, from + len). Sealed. */
void peer_rec_copy(struct peer_rec *x, uint64_t lsn, uint64_t prev, uint32_t page,
                   uint32_t off, uint32_t from, uint32_t len, uint32_t flags,
                   uint64_t epoch);

/* Envelopes (req id as given), packed into frames (length prefix
 * included; free()). recs may be NULL when n is 0. */
uint8_t *peer_frame_append(uint64_t req, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                           struct peer_rec *recs, size_t n, uint64_t vdl, size_t *len);
uint8_t *peer_frame_truncate(uint64_t req, uint64_t volume_id, uint32_t pg,
                             uint64_t epoch, uint64_t from, uint64_t to, size_t *len);
uint8_t *peer_frame_seg_query(uint64_t req, uint64_t volume_id, uint32_t pg,
                              uint64_t epoch, size_t *len);

/* An Append of one record whose bytes carry, after its known fields, the
 * extra bytes (an unknown field as the test writes it); every enclosing
 * length prefix is computed for them. The record's CRC covers only the
 * known fields, as rec_seal computes it. */
uint8_t *peer_frame_append_extra(uint64_t req, uint64_t volume_id, uint32_t pg,
                                 uint64_t epoch, struct peer_rec *rec,
                                 const uint8_t *extra, size_t nextra, size_t *len);

/* Send a frame (or several, concatenated: one write) on a fresh
 * connection and collect n replies (in whatever order they come) into
 * rep[0..n). Returns how many came before timeout_ms; the rest are NULL. */
int peer_send_frames(const char *addr, const uint8_t *buf, size_t len, Env **rep,
                     int n, int timeout_ms, char *why, size_t whylen);

/* Requests as single calls (retrying ERR_UNKNOWN_SEGMENT for a moment). */
Env *peer_seg_query(const char *addr, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                    char *why, size_t whylen);
Env *peer_truncate(const char *addr, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                   uint64_t from, uint64_t to, char *why, size_t whylen);
Env *peer_append(const char *addr, uint64_t volume_id, uint32_t pg, uint64_t epoch,
                 struct peer_rec *recs, size_t n, uint64_t vdl, char *why, size_t whylen);
/* Send an Append (request id req) on a connection the caller opened
 * (rpc_open) and keeps, with the writer's VDL and PGMRPL (its minimum
 * read point, Append.pgmrpl: segments may free below it); the caller
 * collects the AppendAck with rpc_recv, so that one batch goes to every
 * segment before any ack is awaited. Returns 0, or -1 if the send failed. */
int peer_append_send(struct rpc *r, uint64_t req, uint64_t volume_id, uint32_t pg,
                     uint64_t epoch, struct peer_rec *recs, size_t n, uint64_t vdl,
                     uint64_t pgmrpl);
/* GrowVolume on the coordinator: name to npgs PGs (at most
 * GROW_MAX_PGS_PER_REQUEST more at once). The volume as it is after, or
 * NULL (why) if refused. Free with auralog__volume__free_unpacked. */
Auralog__Volume *peer_grow_volume(const char *coord, const char *name, uint32_t npgs,
                                  char *why, size_t whylen);
/* read_point must be the PG's last record at or below it (it is sent as
 * ReadPage.need too). */
Env *peer_read_page(const char *addr, uint64_t volume_id, uint32_t pg, uint32_t page,
                    uint64_t read_point, uint64_t epoch, char *why, size_t whylen);

/* A truncation (epoch, from, to] of volume as a TruncRange in *tr (its
 * bytes in *st): signed by this peer, with the coordinator's ticket for
 * epoch if peer_open_volume got one; else with a ticket the peer signed
 * itself (a forgery: no node takes it). */
struct peer_trunc {
  uint8_t pk[AUTH_PK_BYTES], ticket_sig[AUTH_SIG_BYTES], sig[AUTH_SIG_BYTES];
};
void peer_trunc_range(Auralog__TruncRange *tr, struct peer_trunc *st, uint64_t volume,
                      uint64_t epoch, uint64_t from, uint64_t to);

/* "AppendAck scl 12", "Error 6 (out of range): ...", "no answer: ..." */
const char *peer_describe(const Env *rep, const char *why);

#endif
