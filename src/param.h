/*
 * param.h: every tunable of auralog, in one place (as in xv6).
 *
 * Labs change these to see what each one does; each has a comment that
 * says what it controls and where the paper talks about it.
 */
#ifndef AURALOG_PARAM_H
#define AURALOG_PARAM_H

/* Quorums (paper §2.1). V = 6 copies, 2 in each of 3 AZs. Vw + Vr > V makes
 * every read quorum see the latest write; 2*Vw > V makes writes conflict. */
#define NCOPIES       6         /* segments per protection group */
#define NAZ           3         /* availability zones: A, B, C */
#define COPIES_PER_AZ 2         /* segments of one PG in each AZ */
#define VW            4         /* write quorum */
#define VR            3         /* read quorum */
/* Membership (member.h): a PG's segment slots, a current and an incoming
 * (next) one per position while a change moves it. */
#define NSLOTS        (2 * NCOPIES)

/* Volume geometry (paper §2.2: Aurora uses 10 GB segments; a lab wants
 * several PGs on a small database, so ours are small). */
#define PAGE_SIZE_DEFAULT 4096  /* page size of a new volume */
#define PAGE_SIZE_MAX     65536 /* largest page SQLite allows */
#define PG_PAGES          256   /* pages per protection group of a new volume, by default (1 MiB at 4 KiB) */
#define PG_PAGES_MAX      65536 /* most pages per PG a volume may choose (engine --pg-pages;
                                 * 256 MiB at 4 KiB): a node's per-page arrays of a segment
                                 * (node/segment.h) stay under 1 MiB */
#define MAX_PGS           4096  /* protection groups per volume: a volume holds at most
                                 * MAX_PGS * pg_pages pages (4 GiB at the default and 4 KiB
                                 * pages; 64 GiB takes pg_pages 4096, 1 TiB 65536) */
/* One GrowVolume may add at most this many PGs (coord.c): a request that
 * took a volume from a few PGs to MAX_PGS at once (24,576 segments placed
 * and assigned in one go) made every node flap. The engine asks for a
 * quarter more than it needs (vfs/vwait.c grow), so growing page by page
 * it never asks for more than 820 at once; only one transaction writing
 * more than ~800 MiB of new pages (at 4 KiB) would need to grow in steps. */
#define GROW_MAX_PGS_PER_REQUEST 1024

/* Bounds on what the network may say (wire.c): an LSN, VDL or truncation
 * point above LSN_MAX, or an epoch above EPOCH_MAX, is refused, so that no
 * sum such as vdl + LAL can wrap. */
#define LSN_MAX       (1ull << 60)
#define EPOCH_MAX     (1ull << 40)

/* LSN allocation limit (paper §4.2.1: 10 million in Aurora): the engine may
 * not hand out an LSN above vdl + LAL. */
#define LAL           10000000

/* The VDLs a segment heard, per writer epoch (node/segment.h, the bound on
 * truncations): at most this many epochs are kept apart; past it the
 * oldest is folded into the next (segment.c seg_heard_note says why that
 * is safe). */
#define HEARD_MAX     8

/* Engine (src/vfs). */
#define DIFF_MERGE_GAP  8       /* page diff: join changed ranges closer than this (a range costs ~6 bytes) */
#define DIFF_COPY_MIN   16      /* page diff: ship a run the page already holds nearby as a copy (~10 bytes) if at least this long */
#define DIFF_COPY_SHIFTS 2, -2, 4, -4, 6, -6, 8, -8  /* ... looking this far away: B-tree cell pointers are 2 bytes */
#define CACHE_PAGES     4096    /* buffer cache of the engine, in pages (evict only page LSN <= VDL) */
#define UNDURABLE_MAX   (256u << 20) /* bytes of redo not yet durable that the engine keeps; past it commits wait, then fail */
#define COMMIT_DEADLINE_MS 5000 /* a commit not durable by then fails with a clear error */
#define READ_DEADLINE_MS   5000 /* a page read that no segment can answer by then fails */
#define ENGINE_STAT_MS  200     /* engine -> coordinator report period */
#define ENGINE_HOLD_MS  3000    /* an engine that reported this lately holds its volume */
#define READ_LEASE_MS   2000    /* a writer serves only this long after the coordinator last confirmed its epoch (vfs/lease.h) */
/* Failover (coord/failover.c): the detection bound. A writer whose lease
 * probes (every ENGINE_STAT_MS) stop for WRITER_LOST_MS is lost, and the
 * coordinator (run with --failover) promotes a replica. It must exceed the
 * read lease: the lost writer's lease, counted from a probe's send, has
 * then run out before any new epoch exists (invariant F3). */
#define WRITER_LOST_MS  2500
#define WRITER_OPEN_MS  6000    /* a writer that just took its epoch has this long to recover and probe first */
#define PROMOTE_MS      3000    /* a replica chosen for promotion that has not opened as writer by then is passed over */
#define REPLICA_SEEN_MS 1500    /* the coordinator lists a replica as serving reads (Writer.replicas) this long after its last beat */
_Static_assert(WRITER_LOST_MS > READ_LEASE_MS, "a lost writer's read lease must run out before failover");
#define STATEMENT_TIMEOUT_MS 5000 /* a client's request still running after this is interrupted (engine --statement-timeout; 0: never) */
#define PROGRESS_OPS    1000    /* SQLite VM instructions between two looks at that deadline */
#define LOCK_WAIT_MS    5000    /* without that deadline, a wait for another connection's lock gives up after this */
#define LOCK_POLL_MS    2       /* a thread waiting for a lock tries again when another's statement ends, or after this */
#define ENGINE_READERS  2       /* engine threads that run read-only requests beside the one writer thread (more than the cores only adds switching) */
#define ENGINE_LISTEN_WAIT_MS 10000  /* an engine whose port is still taken (the one before exiting) waits this long for it */
/* Read replicas (paper §4.2.4; vfs/feed.c, vfs/replica.c) */
#define REPLICAS_MAX       15      /* replicas one writer feeds */
#define REPLICA_PORT_OFFSET 110    /* cluster: replica N's port = base port + this + N - 1 */
#define REPLICA_ADDR_DEFAULT "127.0.0.1:7510"
#define REPLICA_QUEUE_MAX  (32u << 20) /* bytes queued to a replica it has not read: past it the writer drops it (it never waits) */
#define FREED_RING         1024    /* records freed per PG the writer remembers while replicas exist: their read points' PG tails, for node GC */
#define REPLICA_MAX_READ_AGE_MS 5000 /* a read transaction may hold its replica's read point (and the volume's PGMRPL, and node GC) this long by default; then it is cancelled (replica --max-read-age, --read-age-action; vfs/rvol.h) */
#define REPLICA_LAG_RING   4096    /* feeds telling a new VDL a replica times until applied (its lag, vfs/rvol.c) */
#define REPLICA_GONE_MS    10000   /* a replica silent this long no longer holds the PGMRPL down */
#define REPLICA_RETRY_MS   500     /* a replica reconnects to its writer this often */
#define REPLICA_BEHIND_MAX 200000  /* records a replica holds unapplied: past it, it drops its cache and starts again */
#define ENGINE_PORT_OFFSET 100  /* cluster: engine port = base port + this */
/* Schema changes noted for the journal (vfs/ddl.c; lab 12 finds a DROP there) */
#define DDL_NOTES_MAX   16      /* notes one report carries (the newest win) */
#define DDL_NOTE_KEEP_MS 30000  /* each is reported this long after its commit (a coordinator down longer misses it) */
#define DDL_SQL_MAX     200     /* bytes of a statement's text kept with its note */
#define DDL_PENDING_MAX 8       /* schema changes one open transaction notes (more: the rest unnamed) */
/* The binlog (issue 29; vfs/capture.c, vfs/binlog.c) */
#define BINLOG_PG       MAX_PGS /* the binlog PG's number (enhanced binlog, issue 29): past every
                                 * data PG, so page_no / pg_pages never names it */
#define BINLOG_TXN_MAX  (8 << 20) /* most bytes of events one transaction's binlog record holds */
#define BINLOG_RECENT   64      /* committed transactions the engine keeps for SELECT auralog_binlog_recent() (step 1: no shipping yet) */
/* Binlog consumers (issue 29: node/nbinlog.c, coord/binlogc.c, cli/binlogcli.c) */
#define BINLOG_KEEP_BYTES (64ull << 20) /* a binlog segment keeps at most this many bytes of its newest
                                 * records beyond what registered consumers have not read ... */
#define BINLOG_KEEP_MS  (24ull * 3600 * 1000) /* ... and records at most this much older (commit
                                 * time) than its newest durable one (AURALOG_BINLOG_KEEP_BYTES,
                                 * _MS override both, for tests and labs) */
#define BINLOG_RETAIN_MS 1000   /* a node's binlog retention pass runs at most this often ... */
#define BINLOG_RELEASE_BATCH 4096 /* ... releasing at most this many records per segment */
#define BINLOG_READ_BYTES (1u << 20) /* a BinlogRead's answer holds about this many bytes (max_bytes 0) */
#define BINLOG_KEEP_SEND_MS 1000 /* the coordinator re-sends a volume's keep point at most this often */
#define BINLOG_POLL_MS  200     /* `binlog tail|apply --follow` asks again this often when idle */
#define BINLOG_CONSUMERS_MAX 64 /* registered consumers of one volume (coord/binlogc.c) */
#define TAIL_PER_PG     16      /* log tail reported for `auralog viz` and the dashboard: newest records per PG */
#define TAIL_MAX        64      /* ... and in all (the newest win); a picture, not state */
#define HISTORY_EVERY_MS 1000   /* the dashboard's history: a sample a second ... */
#define HISTORY_SAMPLES 300     /* ... for the last five minutes ... */
#define HISTORY_PGS     8       /* ... with the SCLs of the first 8 PGs */
#define FAULTS_SHOWN    32      /* recent faults in a status, for the dashboard (coord/faultlog.c) */
#define FENCED_SHOWN    4       /* fenced engines still reporting, shown by status ... */
#define FENCED_FORGET_MS 10000  /* ... until silent this long (stopped) */
#define RECOVERING_FORGET_MS 2000 /* status shows a recovery's progress until silent this long */
#define PENDING_SHOWN   16
#define VIZ_PENDING     4       /* ... of which `auralog viz` draws these */      /* records above the VCL reported, with their acks (oldest) */

/* The coordinator's dashboard (src/coord/http.c). */
#define HTTP_PORT_OFFSET 80         /* dashboard port = coordinator port + this */
#define HTTP_HEADER_MAX  8192        /* request line + headers, in bytes */
#define HTTP_URL_MAX     2048        /* the request target */
#define HTTP_WQ_MAX      (4u << 20)  /* unsent answers to one client */
#define HTTP_HEADER_MS   5000        /* a request head must come whole this soon after its first byte (or the connection's start) */
#define HTTP_IDLE_MS     30000       /* close a keep-alive connection silent this long between requests */
#define HTTP_LINGER_MS   1000        /* after the last answer, wait this long for the client's close */
#define HTTP_CONNS_MAX   64          /* connections open at once; one more closes the oldest idle one */

/* Wire (src/net/wire.c). */
#define FRAME_MAX     (16u << 20)   /* largest frame accepted, checked before allocating */

/* Connections (net.c): what one peer may hold of a process. A peer that
 * has not proven the cluster key gets AUTH_FRAME_MAX-byte frames, a small
 * buffer and AUTH_DEADLINE_MS to finish the handshake; a frame may take
 * FRAME_DEADLINE_MS to arrive whole; a listener serves at most CONNS_MAX
 * peers (the oldest unproven one makes room for a newcomer) and buffers
 * at most BUFFER_BUDGET bytes of partly received frames over all of them
 * beyond one READ_CHUNK each; an accepted connection silent for
 * IDLE_MS is closed (its peer reconnects when it needs to). */
#define AUTH_FRAME_MAX    256
#define AUTH_DEADLINE_MS  5000
#define FRAME_DEADLINE_MS 10000
#define CONNS_MAX         256
#define BUFFER_BUDGET     (64u << 20)
#define IDLE_MS           600000
#define NET_SWEEP_MS      1000
#define NAME_MAX_LEN  64            /* node ids, AZ names, volume names */
#define ADDR_MAX_LEN  128           /* "host:port" */
#define BATCH_MAX     100000        /* records in one Append */
#define RANGES_MAX    8192          /* byte ranges in one record (a 64 KiB page diff needs < 7300) */

/* Membership (src/coord). */
#define HEARTBEAT_MS    200     /* node -> coordinator heartbeat period */
#define ASSIGN_AGAIN_MS 1000    /* coordinator: an Assign a heartbeat shows lost is sent again at most this often */
#define HEARTBEAT_FULL  10      /* a heartbeat lists only the segments whose stats changed since
                                 * the last one (a delta), but every HEARTBEAT_FULL-th lists every
                                 * segment: a coordinator that lost one heals within this many */
#define NODE_DOWN_MS    1000    /* no heartbeat for this long: node shown down */
#define REPAIR_AFTER_MS 5000    /* a node down this long has its segments moved to spares (member.h M7;
                                   coord --repair-after MS, 0: never) */
#define PROBE_PGS_MAX   64      /* PGs whose membership changed that one lease probe answer carries */
#define MTTR_SHOWN      8       /* the last repairs' times to repair that status shows */
#define MOVE_RETRY_MS   1000    /* a move with no spare free is tried again this often (and says why) */
#define RECONNECT_MS    250     /* retry period for a lost link */
#define REGISTER_RETRY_MS 1000  /* a node registers again while no Assign answers */

/* Gossip (paper §3.3 step 4). */
#define GOSSIP_MS       200     /* a segment with a hole, or behind a peer, pulls this often */
#define GOSSIP_IDLE     5       /* ... others every GOSSIP_IDLE periods, to learn peers' SCLs, */
#define GOSSIP_IDLE_MAX 64      /* ... twice as long after each pull that found nothing moved,
                                 * up to this many periods (12.8 s): idle segments stay quiet */
#define GOSSIP_TF_IDLE  20      /* ... but at most 20 (4 s) while a truncation may be forgotten
                                 * once more peers are seen holding it (node/tforget.c) */
#define GOSSIP_MAX      2000    /* records in one GossipPush */
/* Hydration (member.h M2; node/gossip.c, node/bg.c): a segment behind its
 * PG peers (a new one being filled, one back from a failure) pulls back to
 * back, not once per GOSSIP_MS, but within one node-wide byte budget, so
 * that it never starves the foreground commits beside it. */
#define HYDRATE_BYTES_PER_S (16u << 20) /* most bytes a node pulls from PG peers per second while behind (records and page versions) */
#define HYDRATE_PULL_BYTES  (512u << 10) /* most bytes one pull asks a peer for (GossipPull.max_bytes) */
#define HYDRATE_BURST   ((long long)HYDRATE_BYTES_PER_S * GOSSIP_MS / 1000) /* the budget saves up at most a gossip tick's worth */

/* Recovery (src/vfs/open.c): records a segment returns per scan answer. */
#define RECOVERY_PAGE   20000

/* The engine's patience with one segment. */
#define VOL_TICK_MS     100     /* the writer's timer: expire, reconnect, resend */
#define RCV_CONNECT_MS  1000    /* recovery gives up a node not connected by then ... */
#define RCV_ANSWER_MS   2000    /* a node silent this long with requests unanswered is asked
                                 * again, never given up for it (rcvround.c rule W) ... */
#define RCV_ANSWER_MAX_MS 4000  /* ... then after twice as long, up to this (a partition that
                                 * heals is heard within it: the simulator's SIM_HEAL_MS) */
#define RCV_QUORUM_WAIT_MS 100  /* ... or not heard from this long (and twice the time the
                                 * round's quorum took), once every PG has a write quorum of
                                 * answers without it (open.c quorum_in_hand) */
#define RECOVERY_RETRY_MS 30000 /* an engine without a quorum tries recovery again this long (a
                                 * moving position's next segment may take longer than 10 s to
                                 * fill, member.h M1/M2: the crash campaign's point 50) */
#define APPEND_RETRY_MS 1000    /* an Append not acked by then is sent again */
#define MRPL_TELL_MS    1000    /* a PG idle this long whose segments last heard an older PGMRPL
                                 * than now frees is told it (an Append with no records, vcore.c) */
#define FARENA_CHUNK    (64 * 1024) /* a received frame's messages are unpacked into chunks this
                                     * large, reused frame after frame (net/farena.h) */
#define READ_TRY_MS     500     /* a page read not answered by then goes to another segment */
#define READ_SLOW_MS    5000    /* ... and that node gets reads only when no other can, this long */
#define READ_NEAR_MS    5       /* a segment whose reads take at most 2x the fastest's plus this
                                 * is as good as the fastest: reads rotate among those (read.c) */
#define READ_LAT_MS     5000    /* a node's read latency not measured for this long is unknown
                                 * again (worth one read): a slow node that healed gets reads back */
#define READ_STALE_MS   30000   /* a node that served a page older (or newer) than the writer knows it gets reads only when no other can, this long (vfs/pagelsn.h) */

/* Background work of a storage node (node/bg.c, node/store_pages.c;
 * paper §3.3 steps 5, 7, 8). The bound on a page read: it applies the
 * records above the page's newest version, which is at most COALESCE_HOT
 * plus the records of the node's last loop turn, plus those above the
 * node's own point (the writer's last record at or below its PGMRPL: not
 * yet durable everywhere, or still needed by a reader, never coalesced).
 * A page with fewer than COALESCE_HOT waits up to BG_MS for the
 * coalescer. */
#define COALESCE_RECS   32      /* a page gets a new version after this many records */
#define COALESCE_HOT    (4 * COALESCE_RECS)  /* ... and at the turn's end past this many */
#define COALESCE_BATCH  256     /* pages coalesced in one background transaction */
#define BG_MS           100     /* the coalescer runs at most this often */
#define GC_MS           1000    /* GC runs this often ... */
#define GC_BATCH        16384   /* ... freeing at most this many records at once (then again
                                 * after BG_MS while there is more) */
#define GC_PEER_WAIT_MS 600000  /* a PG peer heard from this lately holds GC at its SCL
                                 * (it may still pull those records); one silent longer
                                 * comes back behind and fetches page versions */
#define SCRUB_MS        1000    /* the scrub re-checks one slice this often ... */
#define SCRUB_BATCH     4096    /* ... of at most this many records (then the versions) */
#define REPAIR_MS       500     /* a damaged page version is asked of a peer this often */
#define REPAIR_INFLIGHT 32      /* page versions asked of peers at once (repair, catch-up) */
#define RCACHE_BYTES    (64u << 20) /* records a node keeps decoded in memory until GC frees them
                                     * (store_rcache.c): GC frees every GC_MS, so this holds
                                     * about 2.5 s of records at 32 clients write-only (~26,000
                                     * a second); 32 MiB overflowed there, and the misses (a kv
                                     * get and an unpack per record a page build read back) were
                                     * 8% of a node's samples */
#define CATCHUP_STUCK_MS 3000   /* a catch-up with pages no peer gives takes a later point after this */
#define SCL_STUCK_MS    1000    /* a segment behind, its SCL still this long, catches up by pages (bg.c) */

/* Storage. lmdb maps the file; the map is sparse, so a large size costs
 * nothing until used, and MDB_MAP_FULL becomes a clear "storage map full"
 * error (a full file system: "disk full", kv_lmdb.c). */
#define NODE_MAP_SIZE   (8ull << 30)  /* lmdb map of one storage node */
#define COORD_MAP_SIZE  (256ull << 20) /* lmdb map of the coordinator */
#define DISK_FULL_SLACK (32ll << 20)   /* an lmdb I/O error with less than this free on the data
                                        * directory's file system is reported as disk full (a
                                        * short write; one commit writes a few frames' worth) */

/* The storage node's hot log (src/node/hotlog.c): each group commit is one
 * frame, made durable with one fdatasync; lmdb is synced at checkpoints. */
#define HOTLOG_CHUNK      (4ull << 20)  /* the log file is preallocated this much at a time */
#define HOTLOG_CHECKPOINT (32ull << 20) /* checkpoint (sync lmdb, restart the log) past this many bytes; bounds replay at start */
#define CHECKPOINT_MS     1000          /* ... and this long after the last one, if anything is new */

/* Continuous backup (src/backup/, node/nbackup.c). */
#define BACKUP_MS          500     /* a PG's uploader stages what is new this often */
#define BACKUP_PIECE_MAX   (4u << 20) /* bytes of records in one log piece (then another) */
#define BACKUP_TAKEOVER_MS 3000    /* a PG peer not connected, silent this long, no longer holds
                                      the upload (node/nbackup.c rule U) ... */
#define BACKUP_SILENT_MS   90000   /* ... nor one connected but silent this long (longer than an
                                      idle PG's gossip period with each peer: GOSSIP_IDLE_MAX
                                      periods, taken in turns) */
#define BACKUP_RETRY_MS    2000    /* after a failed upload or listing, wait this long */
#define BACKUP_STALL_MS    30000   /* a PG's backup point standing this long while the VDL moves
                                      is logged (GC waits for it) */
#define BK_CLOCK_MAX       64      /* (time, vdl) notes a segment keeps for its next piece */
#define BACKUP_RETENTION_MS 3600000 /* points stay restorable this long, unless `backup retention`
                                       says otherwise (the store's v<VOL>/retention) */
#define BACKUP_BASE_MS     600000  /* a PG that changed gets a new base image this often (at
                                      most; a quarter of the retention if that is shorter), so
                                      retention can let its older log go */
#define BK_CLOCK_EVERY_MS  100     /* ... at most one this often */

/* Client side (src/net/rpc.c, CLI). */
#define RPC_TIMEOUT_MS  5000    /* a CLI request gives up after this long */
#define CLUSTER_WAIT_MS 20000   /* `cluster up` waits this long for registration */
#define SQL_WAIT_MS     30000   /* `auralog sql` waits this long for a writer (or replica) by default (--wait): a failover takes WRITER_LOST_MS, a beat and a recovery */

/* Logs (src/lib/log.c): a call site that can repeat per commit or per
 * frame prints its first message, then counts the same one for a window
 * and prints the count once (log.h). */
#define LOG_RL_MS       10000   /* the window a repeated message is counted over */
#define LOG_RL_BURST    5       /* different messages one site prints per window */

/* `auralog bench`: the machine's own limit, measured in the same run
 * beside the results (bench/limit.c), and the commit stage timings
 * (vfs/stages.c). */
#define LIMIT_MS          1000  /* how long each of the three limit measurements runs */
#define LIMIT_RECORD_BYTES 512  /* the record each writer appends before its fdatasync */
#define LIMIT_FILE_BYTES  (4u << 20) /* each writer's preallocated, zero-filled log file */
#define LIMIT_PING_BYTES  256   /* a loopback round trip's message (a small request) */
#define BREAKDOWN_MEAN_TOL 0.05 /* the stages' means must add up to the clients' mean within this */
#define BREAKDOWN_P50_TOL 0.35  /* ... their medians to the clients' median (medians do not add) */
#define STAGE_TIMES_RING  4096  /* durable commits whose send/durable times the volume
                                 * keeps for the engine's stage timings (vcore.c) */

/* Default addresses (DESIGN.md §6). AURALOG_COORD overrides the coordinator. */
#define COORD_ADDR_DEFAULT  "127.0.0.1:7400"
#define NODE_PORT_BASE      7401
#define ENGINE_ADDR_DEFAULT "127.0.0.1:7500"

#endif
