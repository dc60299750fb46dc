/*
 * ddl.h: the schema changes a writer commits, noted with their commit
 * LSN for the cluster's journal (ddl.c says how and why).
 */
#ifndef AURALOG_DDL_H
#define AURALOG_DDL_H

#include <stddef.h>
#include <stdint.h>

#include "param.h"
#include "auralog.pb-c.h"

/* One schema change. */
struct ddl_note {
  uint64_t seq, lsn, wall_ms;
  char op[16];                 /* "drop table", ... */
  char name[129];
  char sql[DDL_SQL_MAX + 1];
};

/* A connection's changes waiting for its transaction's end (one per client
 * connection, in engine.c's struct client; zeroed when it opens). */
struct ddl_pend {
  struct ddl_note n[DDL_PENDING_MAX];
  int count;
};

/* The authorizer, while a statement is prepared (sandbox.c): the change
 * it makes, if action is one (the statement's first). */
void ddl_seen(int action, const char *a1, const char *a2, const char *db);
/* A statement is prepared afresh: forget what the last one made. */
void ddl_stmt_begin(void);
/* The change the statement last prepared on this thread makes ("create
 * table", ...; *name: its object, as the journal quotes it), or NULL if
 * none. Valid until ddl_stmt_end. For the binlog (capture.c), which
 * notes the statement itself, exactly, where ddl_stmt_end notes a line. */
const char *ddl_stmt_change(const char **name);
/* The statement ended (ok: it ran to SQLITE_DONE): its change joins p,
 * with its text. Returns 1 if p holds anything (ddl_settle is due). */
int ddl_stmt_end(struct ddl_pend *p, const char *sql, int ok);
/* After a statement with p not empty: commit_lsn is the commit it made
 * (0: none); autocommit, whether the connection is outside a transaction
 * now. Publishes or drops p's changes. */
void ddl_settle(struct ddl_pend *p, uint64_t commit_lsn, int autocommit);
/* The report (vfs/report.c): the changes published at or below vdl and at
 * most DDL_NOTE_KEEP_MS old, oldest first, into out (DDL_NOTES_MAX). */
size_t ddl_report(uint64_t vdl, Auralog__DdlNote *out, Auralog__DdlNote **outp);

#endif
