/*
 * bugs.h: planted bugs, the simulator's teeth (DESIGN.md §3).
 *
 * A simulator that finds nothing may be finding nothing because it cannot.
 * So a few classic mistakes of this protocol are planted in the cores,
 * each behind PLANTED(b), off unless `auralog sim --bug NAME` turns it on
 * (the real roles never do). A test (tests/unit/test_sim.c) asserts that
 * the simulator catches every one of them within a few hundred seeds.
 *
 *   wq3              write quorum 3 of 6 instead of 4 (quorum.c's VW)
 *   no-trunc         recovery writes no truncation above the VDL
 *   trunc-any-epoch  a truncation cuts records of any epoch (rule T broken)
 *   vdl-from-hint    recovery takes the segments' VDL hint as the VDL
 *   need-freed       a read's `need` from freed records only (it lags)
 *   no-adopt         recovery does not rewrite what it proved to a quorum
 *   no-fence         a node takes Appends from an older epoch
 *   no-page-check    the writer believes every page a segment serves (no
 *                    end-to-end page LSN check, vfs/pagelsn.h)
 *   stale-version    a node reading a page whose version is damaged or
 *                    missing builds it from its records alone, as if the
 *                    page had no version (node/store_pages.c)
 *   replica-past-vdl   a read replica moves its read point to the newest
 *                    record that arrived, past the VDL told and maybe
 *                    inside an MTR (vfs/rapply.c ra_target: R1, R2 broken)
 *   no-replica-floor   the writer's PGMRPL leaves out its replicas' read
 *                    points (vcore.c vol_pgmrpl): node GC passes them (R6)
 *   promote-no-if-epoch  the coordinator takes a promotion's conditional
 *                    open (OpenVolume.if_epoch) whatever the volume's epoch
 *                    is now (coord/failover.c fo_open_check): a promotion
 *                    racing a restart in place, or another promotion, opens
 *                    a second writer for one lost one (F1)
 *   scan-from-zero   recovery ignores the segments' VDL hints and proves the
 *                    VDL from the records alone, from LSN 0 (vfs/open.c), as
 *                    if node GC had freed nothing: it proves less than the
 *                    segments heard, and the data-loss alarm rings within
 *                    the fault model
 *   trunc-unbounded-scan  a node installs the truncations a recovery's scan
 *                    carries without the bound (node/trunc.c, segment.c
 *                    seg_trunc_ok): a member with a signed epoch whose
 *                    scan carries (0, 2^59] empties the segment, and gossip
 *                    spreads it. The simulator's rogue member (sim/rogue.c),
 *                    with a fenced old writer's key, puts such ranges in
 *                    scans to all six segments: its check of invariant 9
 *                    (roguecheck.c) and the shadow model catch it
 *                    (test_sim.c, with --faults
 *                    rogue,recovery-crash,engine-crash; unit_truncbound on
 *                    the node)
 *   next-acks        the writer counts a next segment's acknowledgement of
 *                    a record for its position, as if the current segment
 *                    had given it: a member still hydrating counts, in
 *                    place of the one it replaces (vcore.c; member.h M1, M2)
 *   next-only        on a membership change the writer counts a moving
 *                    position by its next segment alone: the new
 *                    configuration only, the old one dropped before the
 *                    change finished (vmember.c; member.h M1)
 *   finish-early     the coordinator finishes a change once the writer uses
 *                    it, without waiting for the next segment's SCL to
 *                    reach the VCL it adopted it at (coord/member.c;
 *                    member.h M4 (b))
 *   gc-past-backup   a node's GC ignores the PG's backup point
 *                    (node/nbackup.c nbk_gc_bound): it frees records no
 *                    object in the store holds yet, and a restore can
 *                    no longer reach the commits they made (DESIGN.md
 *                    invariant 11; the simulator's store, --faults backup,
 *                    checks it: sim/bkcheck.c)
 *   no-rollforward   recovery ignores the community binlog's newest XID
 *                    (vfs/open.c rollforward): a transaction whose frame
 *                    the file holds, prepared whole, is truncated, and the
 *                    file names a commit that never happened (--community:
 *                    sim/cbinlog.c CM2)
 */
#ifndef AURALOG_BUGS_H
#define AURALOG_BUGS_H

enum {
  BUG_WQ3, BUG_NO_TRUNC, BUG_TRUNC_ANY_EPOCH, BUG_VDL_FROM_HINT, BUG_NEED_FREED,
  BUG_NO_ADOPT, BUG_NO_FENCE, BUG_NO_PAGE_CHECK, BUG_STALE_VERSION,
  BUG_REPLICA_PAST_VDL, BUG_NO_REPLICA_FLOOR, BUG_PROMOTE_NO_IF_EPOCH, BUG_SCAN_FROM_ZERO,
  BUG_TRUNC_UNBOUNDED_SCAN, BUG_NEXT_ACKS, BUG_NEXT_ONLY, BUG_FINISH_EARLY, BUG_GC_PAST_BACKUP,
  BUG_NO_ROLLFORWARD, BUG_N
};

extern unsigned planted_bugs;
extern const char *const bug_names[BUG_N];

#define PLANTED(b) (planted_bugs & (1u << (b)))

/* The bug named s (-1: none such). */
int bug_by_name(const char *s);

#endif
