/*
 * Unit: what `auralog sql` reads from a statement's words (sqlwords.h):
 * which texts only read (a read whose answer was lost is asked again; a
 * write never is) and whether a transaction may be open (a connection
 * lost with one open is not followed by a statement sent elsewhere).
 *
 * How each can fail: count a WITH or a PRAGMA as a read, or read the
 * words inside quotes or comments, and a write could be sent twice
 * (reads_are_few); take ROLLBACK TO for the end of the transaction and
 * a statement could run outside it (transactions).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/sqlwords.h"

static void reads_are_few(void **state)
{
  (void)state;
  static const char *const reads[] = {
    "SELECT 1", "select 1; values(2);", "  explain select * from t", "-- c\nSELECT 'a;INSERT'",
    "/* INSERT */ select 1", "SELECT \"x;DELETE\" FROM t;;", "", NULL};
  static const char *const writes[] = {
    "INSERT INTO t VALUES(1)", "select 1; insert into t values(1)",
    "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "PRAGMA integrity_check",
    "pragma user_version = 3", "\"t\"", "CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END",
    "select 1 /* ; */; update t set a = 1", "VACUUM", "BEGIN; SELECT 1; COMMIT;", NULL};
  for (int i = 0; reads[i]; i++)
    if (!sql_read_only(reads[i], 0))
      fail_msg("'%s' only reads", reads[i]);
  for (int i = 0; writes[i]; i++)
    if (sql_read_only(writes[i], 0))
      fail_msg("'%s' may write", writes[i]);
  /* With no transaction open before it, BEGIN ... COMMIT around reads reads. */
  assert_true(sql_read_only("BEGIN; SELECT 1; COMMIT;", 1));
  assert_true(sql_read_only("begin transaction; select 1; end", 1));
  assert_false(sql_read_only("BEGIN; INSERT INTO t VALUES(1); COMMIT;", 1));
}

static void transactions(void **state)
{
  (void)state;
  assert_int_equal(sql_txn_open("BEGIN", 0), 1);
  assert_int_equal(sql_txn_open("begin; insert into t values(1); commit", 0), 0);
  assert_int_equal(sql_txn_open("SAVEPOINT a", 0), 1);
  assert_int_equal(sql_txn_open("ROLLBACK TO a", 1), 1);
  assert_int_equal(sql_txn_open("rollback transaction to savepoint a", 1), 1);
  assert_int_equal(sql_txn_open("ROLLBACK", 1), 0);
  assert_int_equal(sql_txn_open("END TRANSACTION", 1), 0);
  assert_int_equal(sql_txn_open("RELEASE a", 1), 1);
  assert_int_equal(sql_txn_open("select 'commit'", 1), 1);
  assert_int_equal(sql_txn_open("-- commit\ninsert into t values(1)", 1), 1);
  assert_int_equal(sql_txn_open("select 1", 0), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(reads_are_few),
    cmocka_unit_test(transactions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
