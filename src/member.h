/*
 * member.h: protection-group membership and how it changes without
 * stalling I/O (paper §2.2-2.3; Verbitski et al., SIGMOD 2018, "On
 * Avoiding Distributed Consensus for I/Os, Commits, and Membership
 * Changes"; DESIGN.md invariant 10).
 *
 * A PG has NCOPIES positions, COPIES_PER_AZ in each AZ. Each position
 * holds one segment, its `current` one; while a change moves a position
 * (a repair, a drain, a replace) it also holds an incoming `next` segment,
 * on another node of the same AZ. The coordinator owns each PG's
 * membership epoch (mepoch); every change is a new mepoch, stored before
 * anyone hears of it. A change moves one position through three steps:
 *
 *   stable       position p: F                 (mepoch m)
 *   begin        position p: F, next G         (mepoch m1 > m)
 *   finish       position p: G                 (mepoch m2 > m1)
 *   (or abort    position p: F                 G gave up, e.g. it died;
 *    or regrow   position p: F, next G'        another spare instead)
 *
 * Several positions may be in transition at once (a second failure while
 * a repair runs grows the transition; it never waits for the first).
 *
 * Slots. The writer numbers a PG's segments by slot: slot p < NCOPIES is
 * position p's current segment, slot NCOPIES + p its next one (NSLOTS in
 * all). A record's acks are a bitmask over slots.
 *
 * The rules (each is kept where the comment names, and checked by the
 * simulator):
 *
 * M1 (write quorum; vfs/quorum.c). The configurations in force are every
 *    choice of one segment per position (current or next, where a next
 *    exists); a record is at write quorum when Vw segments of EVERY one of
 *    them hold it. Taking the worst choice at each position, that is:
 *    a position counts when its current segment holds the record and, if
 *    it has a next one, the next one holds it too; at least Vw positions
 *    must count (member_positions below).
 *
 * M2 (hydration counts only by SCL; vfs/vcore.c). A next segment is being
 *    filled from its peers (node/gossip.c: page versions at a peer's GC
 *    point, then the log above) while it already takes new writes. Its
 *    acknowledgement of a single record does not count; only its SCL
 *    does: it holds every record of the PG up to its SCL (q_ack_upto), so
 *    for each record at or below its SCL the position may count.
 *
 * M3 (read quorum; vfs/open.c recovery). Recovery reads Vr positions of
 *    the PG through their CURRENT segments only; a next segment is never
 *    counted towards a read quorum. By M1 every record at write quorum is
 *    on Vw current segments (a position counts only if its current
 *    segment holds it), so Vr current segments intersect it (Vr + Vw > V),
 *    whatever changes are in flight.
 *
 * M4 (finish; coord/member.c). Position p's next segment G becomes current
 *    (its old one, F, leaves) only when
 *      (a) the writer of the volume's current epoch has reported using a
 *          membership epoch of this PG that includes G (its lease probe,
 *          Pg.mepoch), since the PG's last record was X (Pg.adopted_at:
 *          the PG's last record handed out when it began, so at or above
 *          every record of the PG at or below its VCL then; per PG, since
 *          an SCL is: an idle PG's segments never reach the volume's VCL),
 *      (b) G's SCL, from G's heartbeat, is at least X.
 *    Why: a record made durable before the writer used a configuration
 *    with G was counted on F (M1 with F alone) and may be on no other
 *    position but the Vw - 1 others; (b) puts it on G. A record made
 *    durable after: if position p counted, G held it (M2); if not, Vw
 *    other positions hold it. So after the finish every durable record is
 *    on Vw current segments again, and M3 holds with G in F's place.
 *    A new writer (recovery) opens with the membership in force: its X is
 *    the PG's last record at or below its recovered VDL. The coordinator
 *    forgets adoption when the epoch changes: only the current writer's
 *    report counts.
 *
 * M5 (stale membership; node/member.c, node/gossip.c). A finish that takes F
 *    out sets the PG's mepoch_min to the mepoch in which G came in: a
 *    writer still on an older mepoch counts F alone at position p, which
 *    (a) no longer allows. Nodes refuse an Append, and peers refuse a
 *    gossip message, whose mepoch is below mepoch_min
 *    (ERR_STALE_MEMBERSHIP). A writer on the mepoch of the begin step, or
 *    later, counts F and G together: stricter than the finished
 *    configuration, so it needs no refusal and never stalls on a change.
 *    (Segment.since holds the mepoch in which a segment came in.)
 *
 * M6 (leaving; node/member.c). A segment the coordinator no longer assigns to
 *    its node (the node's Assign omits it) is no member: the node drops it
 *    and answers for it no more. A node that returns after its segments
 *    were replaced holds only stale copies; it is never asked for them
 *    (M1, M3 name members only) and frees them at its first Assign.
 *
 * M7 (repair; coord/member.c). A node silent longer than REPAIR_AFTER_MS
 *    has each segment it hosts (current or next) replaced by a spare in
 *    its AZ that hosts no segment of that PG; the least loaded such spare
 *    first. Every PG is repaired at once ("massively parallel", §2.2).
 *    After faults heal, every PG returns to NCOPIES current segments, on
 *    NCOPIES distinct up nodes, 2 per AZ, and no next.
 *
 * Every rule holds for a volume's binlog PG (BINLOG_PG; issue 29) as for a
 * data PG: it is repaired, drained and replaced by the same steps (coord/
 * member.c mb_pg), the writer counts it by M1/M2 (vfs/vmember.c), and its
 * next segment hydrates by records alone, from its peers' release point
 * if they released their early records (node/bg.c invariant BJ).
 */
#ifndef AURALOG_MEMBER_H
#define AURALOG_MEMBER_H

#include <stdint.h>
#include "param.h"

_Static_assert(NSLOTS == 2 * NCOPIES && NSLOTS <= 16, "slot bits fit a uint16_t");

/* M1: the positions that count for a record with these acks (bit s: slot s
 * holds it), where trans has bit p set for each position with a next
 * segment. The record is at write quorum when this is >= Vw. */
static inline int member_positions(uint16_t acks, uint8_t trans)
{
  int n = 0;
  for (int p = 0; p < NCOPIES; p++) {
    if (!(acks & (1u << p)))
      continue;
    if ((trans & (1u << p)) && !(acks & (1u << (NCOPIES + p))))
      continue;
    n++;
  }
  return n;
}

#endif
