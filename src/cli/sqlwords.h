/*
 * sqlwords.h: what the words of a SQL text say about it, for `auralog
 * sql` (sqlcli.c), which must decide without the schema whether a
 * statement whose answer was lost may be sent again.
 *
 * A client cannot prepare a statement (it has no schema), so it reads
 * the first word of each statement, skipping blanks, comments and quoted
 * text, and errs on the safe side: a text counts as read-only only when
 * every statement is a SELECT, VALUES or EXPLAIN (WITH and PRAGMA may
 * write, so they count as writes); a transaction counts as open from a
 * BEGIN or SAVEPOINT until a COMMIT, END or ROLLBACK (not ROLLBACK TO).
 * Counting a write, or an open transaction, where there is none only
 * keeps a statement from being sent again; the other way round could
 * commit it twice, or run it outside its transaction.
 *
 *   sql_read_only  does text only read? txn_words: it starts with no
 *                  transaction open, so BEGIN ... COMMIT around reads
 *                  still only reads
 *   sql_txn_open   whether a transaction may be open after text ran
 *                  (open: before it)
 */
#ifndef AURALOG_SQLWORDS_H
#define AURALOG_SQLWORDS_H

int sql_read_only(const char *text, int txn_words);
int sql_txn_open(const char *text, int open);

#endif
