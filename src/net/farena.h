/*
 * farena.h: where the messages of one received frame live (net.c).
 *
 * Every frame a real process receives is unpacked, handed to its handler
 * and freed before the next (net.c on_read; a handler that keeps anything
 * copies it: wire_copy, or pack and unpack, as coord.c does). Unpacking
 * with the system allocator costs a malloc and a free per message, per
 * record and per bytes field: on a node under load, with ~7 records an
 * Append, malloc and free were ~11% of its CPU (perf, `auralog bench
 * --profile`). So net.c unpacks into a bump allocator instead: farena_enter
 * gives it (per thread), farena_leave ends that frame's use, and when the
 * outermost frame on the thread ends, everything is let go at once, the
 * first chunk kept for the next frame.
 *
 * The rule that makes it safe is the one that was there already: nothing
 * of a received envelope outlives its handler's return. Under a sanitizer
 * build (make SAN=1) farena_enter returns NULL, the system allocator, so
 * that AddressSanitizer still sees a pointer kept past that point.
 */
#ifndef AURALOG_NET_FARENA_H
#define AURALOG_NET_FARENA_H

#include <protobuf-c/protobuf-c.h>

/* The allocator to unpack one frame with (NULL: the system's); calls
 * nest (a handler that receives again on the same thread). */
ProtobufCAllocator *farena_enter(void);
/* That frame is done with: at the outermost, its memory is reused. */
void farena_leave(void);
/* Bytes the thread's arena holds now, between frames (tests). */
size_t farena_held(void);

#endif
