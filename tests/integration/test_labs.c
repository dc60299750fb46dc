/*
 * Integration: the course labs, as a student does them and as one might
 * try to fool them. Honest: `auralog lab start N`, the handout's steps
 * (the lab's run.sh, run by hand: not the demo), answers worked out from
 * what the steps printed, then `auralog lab check N`, which must pass.
 * Fooling attempts, each of which must fail: nonsense answers with no
 * fault ever injected; the instructor's demo (`lab run N`) and its
 * reference answers copied in; answers copied from the handout; a forged
 * gossip line in a node's log, and a journal line pasted in by hand;
 * journal lines forged by a program (a partition that never happened, an
 * SCL of 4242), MAC'd with the cluster key and then with the journal's
 * own key read from the coordinator's directory; a friend's answers; the
 * handout's run.sh run by hand (a demo). `lab verify` passes a genuine
 * run directory and flags an edited one and a copy. A check of a lab not
 * done yet fails and says what is missing. Lab 6 puts each AZ in a
 * network namespace of its own and needs root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "harness.h"
#include "net/keyfile.h"
#include "param.h"

static int setup(void **state)
{
  (void)state;
  return cluster_start_as_user("labs", "");   /* as a student gets it: failover on */
}

static int teardown(void **state)
{
  (void)state;
  cluster_stop();
  return 0;
}

static void a_lab_not_done_does_not_pass(void **state)
{
  (void)state;
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab check 1 --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "[missing]"));
  assert_non_null(strstr(out, "not yet"));
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab run 19 --dir %s 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "lab number"));
  assert_int_equal(sh(out, OUT_SIZE, "%s lab list", bin), 0);
  assert_non_null(strstr(out, "lab05-fencing"));
}

static const char *folder[] = {"", "lab01-write-path", "lab02-quorums",
                               "lab03-crash-recovery", "lab04-gossip", "lab05-fencing",
                               "lab06-across-machines"};

static char passed_run[7][512];   /* each lab's run directory that passed */

/* After a check of lab n that passed (its output in out): the run
 * directory it names holds what it read and said, runs/latest is it, and
 * `lab verify` passes it. */
static void run_dir_kept(int n)
{
  char *at = strstr(out, "run directory: "), run[512];
  if (at == NULL)
    fail_msg("lab check %d names no run directory:\n%s", n, out);
  sscanf(at + strlen("run directory: "), "%511s", run);
  snprintf(passed_run[n], sizeof passed_run[n], "%s", run);
  /* The excerpt begins at the lab's start mark; lab 6's is the namespace
   * cluster's journal, which has none (the mark is in this cluster's). */
  char first[64];
  snprintf(first, sizeof first, n == 6 ? "\"mac\":\"" : "\"action\":\"lab-start\".*\"n\":%d,", n);
  int rc = sh(out, OUT_SIZE,
              "cd %s && grep -q 'lab %d: passed' report.txt && "
              "head -1 journal.jsonl | grep -q '%s' && "
              "cmp -s answers.txt %s/labs/lab%02d-answers.txt && grep -q '<svg' cluster.svg && "
              "grep -q '<svg' timeline.svg && grep -q 'lab start' timeline.svg && "
              "test -s logs/coord.log && "
              "test \"$(readlink %s/labs/runs/latest)\" = \"$(basename %s)\" 2>&1 || ls -la",
              run, n, first, dir, n, dir, run);
  if (rc != 0)
    fail_msg("lab check %d's run directory %s lacks something:\n%s", n, run, out);
  /* The instructor's offline re-check agrees: s1's run, passed. */
  if (sh(out, OUT_SIZE, "%s lab verify s1=%s 2>&1", bin, run) != 0 ||
      !strstr(out, ": ok: lab "))
    fail_msg("lab verify of lab %d's run directory %s:\n%s", n, run, out);
}

/* A student does lab n: starts it, follows the steps (run.sh, by hand,
 * at env's pace: "" or paced_env()), and works out the answers from what
 * the steps printed (answer: a shell snippet; $O is the steps' output, $F
 * the answers file, $LAB_AZ ... the assignment `lab start` printed). */
static void student_at(int n, const char *env, const char *answer)
{
  lab_start(n);
  lab_steps(n, folder[n], env);
  int rc = sh(out, OUT_SIZE, "export AURALOG_DIR=%s O=%s/lab%02d.out F=%s/labs/lab%02d-answers.txt "
          "%s; st() { %s status --json; }; %s", dir, dir, n, dir, n, lab_assigned, bin, answer);
  if (rc != 0)
    fail_msg("lab %d's answers:\n%s", n, out);
  if (lab_check(n) != 0) {
    printf("lab check %d failed:\n%s\n", n, out);   /* whole: fail_msg cuts it short */
    sh(out, OUT_SIZE, "grep -v '\"kind\":\"node\"' %s/data/coord/journal.jsonl | "
       "sed 's/,.mac.*//' | tail -25", dir);
    printf("the journal's end:\n%s\n", out);
    sh(out, OUT_SIZE, "cat %s/labs/lab%02d-answers.txt", dir, n);
    fail_msg("lab check %d failed; answers:\n%s", n, out);
  }
  assert_non_null(strstr(out, "passed"));
  run_dir_kept(n);
}

/* Each lab's answers, as a student works them out from the steps' output. */
static const char *answers[] = {
  "",
  /* 1 */
  "sed -n 's/^per one-row update: \\([0-9]*\\) records, \\([0-9]*\\) bytes.*/"
  "records_per_update: \\1\\nbytes_per_txn: \\2/p' $O > $F && "
  "echo 'page_every_commit: 1' >> $F",
  /* 2 */
  "printf 'write_loss: 2\\nread_loss: 3\\ncopies_left_2of3: 1\\nacks_per_commit: 4\\n'"
  " > $F && sed -n 's/.*; \\([0-9]*\\) records* wait.*/stall_records: \\1/p' $O | "
  "head -1 >> $F && sed -n 's/.*(vdl \\([0-9]*\\); [0-9]* records* wait.*/stall_vdl: \\1/p' "
  "$O | head -1 >> $F",
  /* 3 */
  "echo \"epoch: $(st | grep -o '\"epoch\": *[0-9]*' | head -1 | grep -o '[0-9]*$')\""
  " > $F && echo \"truncated_from: $(st | grep -o '\"from\": *[0-9]*' | tail -1 | "
  "grep -o '[0-9]*$')\" >> $F && echo 'lost_acknowledged: 0' >> $F",
  /* 4 */
  /* who_resends as step 6 says: N, the records gossip brought (the log's
   * lines of pg 0 that completed it past the SCL it stayed at, B, up to
   * the one after the heal, A), against the gap A - B. */
  "B=$(grep -o \"${LAB_AZ}1:[0-9]*~\" $O | head -1 | tr -dc 0-9 | cut -c2-) && "
  "A=$(grep -o \"${LAB_AZ}1:[0-9]*\" $O | tail -1 | tr -dc 0-9 | cut -c2-) && "
  "N=$(grep 'gossip: volume [0-9]* pg 0: ' $AURALOG_DIR/log/${LAB_AZ}1.log | "
  "sed -n 's/.*: \\([0-9]*\\) records from .*complete to \\([0-9]*\\)).*/\\1 \\2/p' | "
  "awk -v b=$B -v a=$A '$2 > b && $2 <= a { n += $1 } END { print n + 0 }') && "
  "if [ $N -ge $((A - B)) ]; then W=peers; elif [ $N -eq 0 ]; then W=engine; else W=both; fi && "
  "printf 'scl_behind: %s\\nwho_resends: %s\\nscl_meaning: hole\\n' $B $W > $F",
  /* 5 */
  "sed -n 's/.*fenced by epoch \\([0-9]*\\) (writer has epoch \\([0-9]*\\)).*/"
  "fenced_by: \\1\\nold_epoch: \\2/p' $O | head -2 > $F && "
  "echo 'who_refuses: nodes' >> $F && "
  "E=$(sed -n 's/^fenced_by: //p' $F) && echo \"recovered_vdl: $(grep -o "
  "\"{\\\"epoch\\\":$E,\\\"from\\\":[0-9]*\" $O | head -1 | grep -o '[0-9]*$')\" >> $F",
};

static void student(int n, const char *answer)
{
  student_at(n, "", answer);
}

/* Lab n at a person's pace (a pause before each step): the check must
 * not depend on how fast the steps follow each other. */
static void paced(int n)
{
  student_at(n, paced_env(), answers[n]);
}

static void lab1_paced(void **state) { (void)state; paced(1); }
static void lab2_paced(void **state) { (void)state; paced(2); }
static void lab3_paced(void **state) { (void)state; paced(3); }
static void lab4_paced(void **state) { (void)state; paced(4); }
static void lab5_paced(void **state) { (void)state; paced(5); }

static void lab1_write_path(void **state)
{
  (void)state;
  student(1, answers[1]);
  /* The header page numbered as status and viz number pages (from 0)
   * is right too; another page is wrong, and said so. */
  assert_int_equal(sh(NULL, 0, "sed -i 's/^page_every_commit: .*/page_every_commit: 0/' "
                      "%s/labs/lab01-answers.txt", dir), 0);
  if (lab_check(1) != 0)
    fail_msg("page_every_commit: 0 (status's numbering) is refused:\n%s", out);
  assert_int_equal(sh(NULL, 0, "sed -i 's/^page_every_commit: .*/page_every_commit: 2/' "
                      "%s/labs/lab01-answers.txt", dir), 0);
  assert_int_not_equal(lab_check(1), 0);
  assert_non_null(strstr(out, "[wrong] page_every_commit"));
  assert_non_null(strstr(out, "table lab01 holds step 1's 100 committed rows"));
}

static void lab2_quorums(void **state)
{
  (void)state;
  student(2, answers[2]);
  /* The read in the stall: the writer is up, its data not durable; the
   * client says so, not "waiting for a writer". */
  if (sh(NULL, 0, "grep -qE 'the writer [0-9.:]+ is up but (its|the) data.* not durable: no "
         "write quorum \\(4 of 6\\)' %s/lab02.out", dir) != 0) {
    sh(out, OUT_SIZE, "grep -B2 -A6 'select count' %s/lab02.out", dir);
    fail_msg("the read in the stall does not say the writer is up, its data not durable:\n%s",
             out);
  }
  assert_int_not_equal(sh(NULL, 0, "grep -q 'waiting for a writer' %s/lab02.out", dir), 0);
  /* A friend's answers, from their own cluster: the constants are the
   * same, their stall's VDL is their run's, not this one's. */
  assert_int_equal(sh(NULL, 0, "cd %s/labs && cp lab02-answers.txt mine && "
                      "sed 's/^stall_vdl: .*/stall_vdl: 100000417/' mine > lab02-answers.txt", dir),
                   0);
  assert_int_not_equal(lab_check(2), 0);
  assert_non_null(failed_line(out, "stall_vdl"));
  assert_int_equal(sh(NULL, 0, "cd %s/labs && mv mine lab02-answers.txt", dir), 0);
}

static void lab3_crash_recovery(void **state)
{
  (void)state;
  student(3, answers[3]);
}

static void lab4_gossip(void **state)
{
  (void)state;
  student(4, answers[4]);
  /* The word is what this run's segment took from whom (its own counts,
   * journaled at the catch-up): any other is wrong, and the check does
   * not give the counts away then. */
  char was[64] = "";
  sh(was, sizeof was, "sed -n 's/^who_resends: //p' %s/labs/lab04-answers.txt", dir);
  const char *other = strncmp(was, "peers", 5) == 0 ? "both" : "peers";
  assert_int_equal(sh(NULL, 0, "sed -i 's/^who_resends: .*/who_resends: %s/' "
                      "%s/labs/lab04-answers.txt", other, dir), 0);
  assert_int_not_equal(lab_check(4), 0);
  assert_non_null(strstr(out, "[wrong] who_resends"));
  assert_null(strstr(out, "from its PG peers' gossip"));
}

static void lab5_fencing(void **state)
{
  (void)state;
  student(5, answers[5]);
  /* The slip the handout warns of: the late row sent without --engine
   * goes to the current writer and commits; the check says what
   * happened and how to redo it. */
  assert_int_equal(sh(NULL, 0, "%s sql --dir %s \"insert into lab05 values('first-after');\"",
                      bin, dir), 0);
  assert_int_not_equal(lab_check(5), 0);
  assert_non_null(strstr(out, "[wrong] the fenced writer's late row is not (1): the row went "
                              "to the current writer: send it to the first (fenced) writer "
                              "with `auralog sql --engine FIRST"));
  /* The lab's second engine is gone once the lab is done. */
  char pat[128];
  /* [e]: the pattern must not match the shell that runs pgrep */
  snprintf(pat, sizeof pat, "[e]ngine --listen 127.0.0.1:%d", base + ENGINE_PORT_OFFSET + 1);
  for (int i = 0; i < 50 && sh(NULL, 0, "pgrep -f '%s' > /dev/null", pat) == 0; i++)
    usleep(100000);
  assert_int_not_equal(sh(NULL, 0, "pgrep -f '%s' > /dev/null", pat), 0);
}

/* A student runs a lab's run.sh by hand, with nothing set: no
 * AURALOG_DIR, the cluster in ~/.auralog (HOME here is a directory whose
 * .auralog is this test's cluster). It runs (it stopped at once on
 * "AURALOG_DIR: unbound variable"). */
static void run_sh_by_hand_with_nothing_set(void **state)
{
  (void)state;
  int rc = sh(out, OUT_SIZE, "h=%s-home; mkdir -p $h && ln -sfn %s $h/.auralog && "
              "env -u AURALOG_DIR -u AURALOG_ENGINE -u AURALOG_COORD HOME=$h AURALOG=%s "
              "bash labs/%s/run.sh 2>&1; r=$?; rm -rf $h; exit $r", dir, dir, bin, folder[4]);
  if (rc != 0)
    fail_msg("lab 4's run.sh by hand:\n%s", out);
  assert_non_null(strstr(out, "gossip: "));      /* it read $AURALOG_DIR/log/C1.log */
}

/* Nonsense answers on a cluster where no fault was ever injected (the
 * issue's own examples): every check fails, on the steps and the answers. */
static void nonsense_without_faults_fails(void **state)
{
  (void)state;
  sql("create table lab01(id integer primary key, name text, n int);");
  for (int i = 1; i <= 20; i++) {
    char q[96];
    snprintf(q, sizeof q, "insert into lab01 values(%d, 'x', 0);", i);
    sql(q);
  }
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 1 --dir %s && %s lab start 3 --dir %s && "
                      "%s lab start 4 --dir %s", bin, dir, bin, dir, bin, dir), 0);
  /* Not 1000 (the example): the 20 inserts above may be in the
   * journal's samples, and a one-row insert ships about that much redo
   * per segment, so 1000 could be right. No transaction ships 1 byte. */
  lab_answers(1, "bytes_per_txn: 1\nrecords_per_update: 2\npage_every_commit: page 1\n");
  assert_int_not_equal(lab_check(1), 0);
  assert_non_null(failed_line(out, "bytes_per_txn"));
  assert_non_null(failed_line(out, "page_every_commit"));
  assert_non_null(strstr(out, "labs/lab01-answers.txt"));    /* the path it read */
  lab_answers(3, "epoch: 2\ntruncated_from: 100\nlost_acknowledged: yes, nothing was safe\n");
  assert_int_not_equal(lab_check(3), 0);
  assert_non_null(strstr(out, "[missing] the writer was crashed"));
  assert_non_null(failed_line(out, "lost_acknowledged"));
  lab_answers(4, "scl_behind: 0\nwho_resends: peers\nscl_meaning: whole pages are missing\n");
  assert_int_not_equal(lab_check(4), 0);
  assert_non_null(strstr(out, "[missing] an AZ was partitioned"));
  assert_non_null(strstr(out, "[wrong] scl_meaning"));     /* an answer, not the right one */
}

/* The instructor's demo run by a student: it never touches the student's
 * answers file, its reference answers go where it is told, and copied in
 * they do not pass: the steps happened in a demo, not in the lab. */
static void demo_then_check_fails(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 2 --dir %s", bin, dir), 0);
  lab_answers(2, "mine\n");
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab run 2 --dir %s --answers %s/labs/lab02-answers.txt"
                          " 2>&1", bin, dir, dir), 0);
  assert_non_null(strstr(out, "student's answers file"));
  int rc = sh(out, OUT_SIZE, "%s lab run 2 --dir %s --answers %s/ref02.txt 2>&1", bin, dir, dir);
  if (rc != 0)
    fail_msg("lab run 2:\n%s", out);
  assert_int_equal(sh(out, OUT_SIZE, "cat %s/labs/lab02-answers.txt", dir), 0);
  assert_string_equal(out, "mine\n");
  assert_int_equal(sh(out, OUT_SIZE, "grep -c . %s/ref02.txt", dir), 0);   /* answers written */
  assert_int_equal(sh(NULL, 0, "cp %s/ref02.txt %s/labs/lab02-answers.txt", dir, dir), 0);
  assert_int_not_equal(lab_check(2), 0);
  assert_non_null(strstr(out, "[missing] an AZ was down"));
  assert_non_null(strstr(out, "[missing] with an AZ and one more node down"));
  /* No run.sh holds answers any more. */
  assert_int_not_equal(sh(NULL, 0, "grep -l 'ANSWERS\\|write_loss\\|who_resends' labs/*/run.sh"),
                       0);
}

/* Answers copied from the handouts' examples, with nothing done. */
static void handout_answers_fail(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 5 --dir %s", bin, dir), 0);
  /* lab 5's handout shows "fenced by epoch N (writer has epoch N-1)" */
  lab_answers(5, "fenced_by: n\nold_epoch: n-1\nwho_refuses: nodes\n");
  assert_int_not_equal(lab_check(5), 0);
  assert_non_null(strstr(out, "[missing] a second writer"));
  assert_non_null(failed_line(out, "fenced_by"));
}

/* Lab 4 after an honest run: a new start, a gossip line forged in a node's
 * log (the old check read it) and a journal line pasted in again: it
 * fails, on the steps and on the journal's MAC. */
static void forged_gossip_fails(void **state)
{
  (void)state;
  assert_int_equal(sh(out, OUT_SIZE, "%s lab start 4 --dir %s", bin, dir), 0);
  assert_int_equal(sh(NULL, 0, "echo '12:00:00.000 node info: gossip: pulled 50 records from A1'"
                      " | tee -a %s/log/C1.log >> %s/log/C2.log", dir, dir), 0);
  assert_int_not_equal(lab_check(4), 0);
  assert_non_null(strstr(out, "[missing] they caught up after the heal"));
  assert_int_equal(sh(NULL, 0, "grep '\"kind\":\"caughtup\"' %s/data/coord/journal.jsonl | "
                      "tail -2 >> %s/data/coord/journal.jsonl", dir, dir), 0);
  assert_int_not_equal(lab_check(4), 0);
  assert_non_null(strstr(out, "[missing] every line of the lab's history carries"));
  assert_non_null(strstr(out, "[missing] they caught up after the heal"));
}

/* `lab verify`, offline, on lab 4's run directory that passed: it passes,
 * named as s1's; an answer edited in the excerpt breaks the MAC chain; an
 * answer changed afterwards no longer matches the check's seal; a copy
 * handed in as bob's is someone else's run; two copies are copies. */
static void verify_run_dirs(void **state)
{
  (void)state;
  const char *run = passed_run[4];
  if (!run[0])
    skip();
  int rc = sh(out, OUT_SIZE, "%s lab verify s1=%s 2>&1", bin, run);
  if (rc != 0)
    fail_msg("lab verify of a genuine run directory:\n%s", out);
  assert_non_null(strstr(out, ": ok: lab 4, student s1, passed"));
  assert_int_equal(sh(NULL, 0, "rm -rf %s/v1 %s/v2 && cp -r %s %s/v1 && cp -r %s %s/v2 && "
                      "sed -i '0,/\"kind\":\"behind\"/s/\"scl\":[0-9]*/\"scl\":4242/' "
                      "%s/v1/journal.jsonl && sed -i 's/^scl_behind: .*/scl_behind: 4242/' "
                      "%s/v1/answers.txt", dir, dir, run, dir, run, dir, dir, dir), 0);
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab verify %s/v1 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "line(s) of its journal excerpt fail the MAC chain"));
  /* An answer corrected after the check, with the check's MACs intact. */
  assert_int_equal(sh(NULL, 0, "rm -rf %s/v3 && cp -r %s %s/v3 && "
                      "sed -i 's/^who_resends: .*/who_resends: engine/' %s/v3/answers.txt",
                      dir, run, dir, dir), 0);
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab verify %s/v3 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "v3: FLAGGED: answers.txt or evidence.json is not what the check "
                              "read"));
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab verify bob=%s/v2 2>&1", bin, dir), 0);
  assert_non_null(strstr(out, "v2: FLAGGED: it is s1's run, not bob's"));
  assert_int_not_equal(sh(out, OUT_SIZE, "%s lab verify %s %s/v2 2>&1", bin, run, dir), 0);
  assert_non_null(strstr(out, "v2: FLAGGED: the same journal excerpt as"));
  assert_int_equal(sh(out, OUT_SIZE, "%s lab verify %s/labs 2>&1", bin, dir), 1);
  assert_non_null(strstr(out, "no evidence.json"));
}

/* The journal's last line: its seq, time and MAC. */
static void journal_tail(long *seq, long long *t, uint8_t mac[32])
{
  char path[600], line[8192], last[8192] = "";
  snprintf(path, sizeof path, "%s/data/coord/journal.jsonl", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  while (fgets(line, sizeof line, f))
    if (strstr(line, "\"mac\":\""))
      snprintf(last, sizeof last, "%s", line);
  fclose(f);
  assert_int_equal(sscanf(last, "{\"seq\":%ld,\"t\":%lld", seq, t), 2);
  const char *m = strstr(last, "\"mac\":\"") + 7;
  assert_int_equal(sodium_hex2bin(mac, 32, m, 64, NULL, NULL, NULL), 0);
}

/* What a forger's program does (the issue's ~20 lines of Python): lines
 * MAC'd under key, each over the one before, appended to the journal. */
static void forge(const uint8_t key[32], const char *const *ev, int n)
{
  char path[600], line[1024], hex[65];
  long seq;
  long long t;
  uint8_t prev[32];
  journal_tail(&seq, &t, prev);
  snprintf(path, sizeof path, "%s/data/coord/journal.jsonl", dir);
  FILE *f = fopen(path, "a");
  assert_non_null(f);
  for (int i = 0; i < n; i++) {
    int len = snprintf(line, sizeof line, "{\"seq\":%ld,\"t\":%lld,%s", seq + 1 + i,
                       t + 300 * (i + 1), ev[i]);
    crypto_generichash_state st;
    crypto_generichash_init(&st, key, 32, 32);
    crypto_generichash_update(&st, prev, 32);
    crypto_generichash_update(&st, (const uint8_t *)line, (size_t)len);
    crypto_generichash_final(&st, prev, 32);
    sodium_bin2hex(hex, sizeof hex, prev, 32);
    fprintf(f, "%s,\"mac\":\"%s\"}\n", line, hex);
  }
  fclose(f);
}

/* Lab 4 with nothing done but the rows, and the partition forged into the
 * journal: a partition of s1's AZ B, both its segments behind at 4242,
 * the heal, both caught up by gossip. With the cluster key (the old
 * journal's), no line verifies; with the journal's own key, read from the
 * coordinator's directory as a student with the machine could, every line
 * verifies, but the nodes never counted a partition and 4242 is no LSN
 * this writer reached. */
static void forged_journal_fails(void **state)
{
  (void)state;
  static const char *const ev[] = {
    "\"kind\":\"fault\",\"action\":\"partition\",\"az\":\"B\",\"node\":\"\",\"n\":0",
    "\"kind\":\"behind\",\"node\":\"B1\",\"az\":\"B\",\"volume_id\":1,\"pg\":0,\"scl\":4242",
    "\"kind\":\"behind\",\"node\":\"B2\",\"az\":\"B\",\"volume_id\":1,\"pg\":0,\"scl\":4242",
    "\"kind\":\"fault\",\"action\":\"heal\",\"az\":\"\",\"node\":\"\",\"n\":0",
    "\"kind\":\"caughtup\",\"node\":\"B1\",\"az\":\"B\",\"volume_id\":1,\"pg\":0,\"from\":4242,"
    "\"scl\":5000,\"ms\":2000,\"gossip_msgs\":3",
    "\"kind\":\"caughtup\",\"node\":\"B2\",\"az\":\"B\",\"volume_id\":1,\"pg\":0,\"from\":4242,"
    "\"scl\":5000,\"ms\":2000,\"gossip_msgs\":3",
  };
  const int n = (int)(sizeof ev / sizeof ev[0]);
  char why[256], path[600];
  lab_start(4);
  assert_string_equal(lab_assigned, "LAB_AZ=B");
  lab_answers(4, "scl_behind: 4242\nwho_resends: peers\nscl_meaning: hole\n");
  /* The cluster key: what the journal's MAC used to derive from. */
  const struct auth_key *ck = key_get(why, sizeof why);
  assert_non_null(ck);
  uint8_t k[32];
  static const char label[] = "auralog journal v1";
  crypto_generichash(k, 32, (const uint8_t *)label, sizeof label, ck->k, sizeof ck->k);
  forge(k, ev, n);
  assert_int_not_equal(lab_check(4), 0);
  assert_non_null(strstr(out, "[missing] every line of the lab's history carries"));
  assert_non_null(strstr(out, "[missing] an AZ was partitioned"));
  /* The journal's own key. The coordinator is stopped while the lines go
   * in (its next line would not chain on them) and started again. */
  lab_start(4);
  stop_member("coord", SIGTERM);
  snprintf(path, sizeof path, "%s/data/coord/journal.key", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_int_equal(fread(k, 1, 32, f), 32);
  fclose(f);
  forge(k, ev, n);
  assert_int_equal(sh(out, OUT_SIZE, "%s cluster up --dir %s 2>&1", bin, dir), 0);
  assert_int_not_equal(lab_check(4), 0);
  assert_non_null(strstr(out, "[ok] every line of the lab's history carries"));
  assert_non_null(strstr(out, "[ok] an AZ was partitioned (`auralog fault partition`): B"));
  assert_non_null(strstr(out, "[missing] AZ B's two nodes say themselves they were partitioned"));
  assert_non_null(strstr(out, "[missing] the SCL they stayed at (4242) is an LSN this writer"));
}

/* The handout's run.sh run by hand, even with the student's own AZ: it
 * marks itself a demo in the journal, and a demo is not the lab. `lab
 * run` prints no reference answers. */
static void run_sh_by_hand_is_a_demo(void **state)
{
  (void)state;
  lab_start(4);
  int rc = sh(out, OUT_SIZE, "export AURALOG=%s AURALOG_DIR=%s LAB_AZ=B; unset AURALOG_ENGINE "
              "AURALOG_COORD; bash labs/lab04-gossip/run.sh 2>&1", bin, dir);
  if (rc != 0)
    fail_msg("run.sh by hand:\n%s", out);
  assert_non_null(strstr(out, "(a demo: run by hand"));
  lab_answers(4, "scl_behind: 1\nwho_resends: peers\nscl_meaning: hole\n");
  assert_int_not_equal(lab_check(4), 0);
  /* The check says first why the steps read [missing]: a demo ran. */
  assert_non_null(strstr(out, "a demo (a run.sh run by hand, or auralog lab run) ran during "
                              "this lab (1 time): its steps never count"));
  assert_non_null(strstr(out, "[missing] an AZ was partitioned"));
  assert_int_equal(sh(out, OUT_SIZE, "grep -c '\"action\":\"lab-demo\".*\"n\":4,' "
                      "%s/labs/runs/latest/journal.jsonl", dir), 0);
  rc = sh(out, OUT_SIZE, "%s lab run 1 --dir %s 2>&1", bin, dir);
  if (rc != 0)
    fail_msg("lab run 1:\n%s", out);
  assert_non_null(strstr(out, "reference answers: not shown"));
  assert_null(strstr(out, "bytes_per_txn:"));
  assert_null(strstr(out, "page_every_commit:"));
}

/* Lab 6 builds network namespaces: it needs root. Where that is not
 * allowed, it is skipped with the reason. A student's run: `lab start 6`
 * on the usual cluster, the steps (a cluster of its own, whose
 * coordinator's journal the check reads), the answers from what they
 * printed. Two students do it at once on one machine: the second in a
 * directory of its own with a cluster of its own; each netns cluster's
 * namespaces, bridge and subnet come from its directory, so neither run
 * disturbs the other, and both checks pass. */
static void lab6(int students, const char *env)
{
  if (sh(out, OUT_SIZE, "ip netns add auralog-probe-%d 2>&1 && ip netns del auralog-probe-%d",
         (int)getpid(), (int)getpid()) != 0) {
    printf("# lab 6 skipped: cannot make network namespaces here: %s\n", out);
    skip();
  }
  char d[2][600];
  snprintf(d[0], sizeof d[0], "%s", dir);
  snprintf(d[1], sizeof d[1], "%s-second", dir);
  int port = free_block((int)getpid() * 3 + 1);
  if (students > 1 &&
      sh(out, OUT_SIZE, "unset AURALOG_KEY; %s cluster up --dir %s --base-port %d --replicas 0 2>&1", bin, d[1],
         port) != 0)
    fail_msg("the second student's cluster did not start:\n%s", out);
  for (int k = 0; k < students; k++)
    if (sh(out, OUT_SIZE, "%s%s lab start 6 --dir %s 2>&1", k ? "unset AURALOG_KEY; " : "", bin,
           d[k]) != 0)
      fail_msg("lab start 6 in %s:\n%s", d[k], out);
  /* Both students' steps at the same time, as typed (not run.sh's demo). */
  for (int k = 0; k < students; k++)   /* no second directory for one student */
    lab_typed(folder[6], d[k]);
  int rc = sh(NULL, 0, "export AURALOG=%s AURALOG_PACE_S=0 %s; unset AURALOG_ENGINE AURALOG_COORD; "
              "(AURALOG_DIR=%s bash %s/typed/%s/run.sh > %s/lab06.out 2>&1; echo $? > %s/lab06.rc) & "
              "[ %d = 1 ] || (unset AURALOG_KEY; AURALOG_DIR=%s bash %s/typed/%s/run.sh > %s/lab06.out 2>&1; echo $? > %s/lab06.rc) & "
              "wait; grep -qx 0 %s/lab06.rc && { [ %d = 1 ] || grep -qx 0 %s/lab06.rc; }", bin, env,
              d[0], d[0], folder[6], d[0], d[0], students, d[1], d[1], folder[6], d[1], d[1], d[0],
              students, d[1]);
  static char chk[2][1 << 16];
  int crc[2] = {-1, -1};
  for (int k = 0; k < students && rc == 0; k++) {
    char path[1300];
    snprintf(path, sizeof path, "%s/labs/lab06-answers.txt", d[k]);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("writes_during_cut: yes\n", f);
    fclose(f);
    sh(NULL, 0, "grep '^b_state_during_cut:' %s/lab06.out >> %s", d[k], path);
    /* The second cluster's key is its own, in its directory. The check
     * runs where the handout leaves the student: AURALOG_DIR is the
     * namespace cluster's directory. */
    crc[k] = sh(out, OUT_SIZE, "%sAURALOG_DIR=%s/netns %s lab check 6 2>&1",
                k ? "unset AURALOG_KEY; " : "", d[k], bin);
    size_t cl = strlen(out) < sizeof chk[k] - 1 ? strlen(out) : sizeof chk[k] - 1;
    memcpy(chk[k], out, cl);
    chk[k][cl] = 0;
  }
  char steps[1 << 14] = "";
  if (rc != 0) {
    sh(steps, sizeof steps, "tail -15 %s/lab06.out; echo ---; tail -15 %s/lab06.out; echo ---; "
       "tail -8 %s/netns/log/engine.log", d[0], d[1], d[0]);
    printf("lab 6's steps failed:\n%s\n", steps);    /* whole: fail_msg cuts it short */
  }
  for (int k = 0; k < students; k++)
    sh(NULL, 0, "%sscripts/netns-cluster.sh down %s/netns", k ? "unset AURALOG_KEY; " : "", d[k]);
  if (students > 1)
    sh(NULL, 0, "unset AURALOG_KEY; %s cluster down --dir %s; rm -rf %s", bin, d[1], d[1]);
  if (rc != 0)
    fail_msg("lab 6's steps failed:\n%s", steps);
  for (int k = 0; k < students; k++)
    if (crc[k] != 0)
      fail_msg("lab check 6 failed in %s (run at the same time as the other):\n%s", d[k],
               chk[k]);
  snprintf(out, OUT_SIZE, "%s", chk[0]);
  assert_non_null(strstr(out, "B1 and B2 down"));
  /* The seal landed in the namespace cluster's journal (its coordinator
   * knows that cluster's operator): lab verify can tell an edited answer. */
  assert_null(strstr(out, "did not take the check's seal"));
  assert_int_equal(sh(NULL, 0, "grep -q '\"action\":\"lab-seal\".*\"n\":6,' "
                      "%s/labs/runs/latest/journal.jsonl", dir), 0);
  run_dir_kept(6);
  assert_int_equal(sh(NULL, 0, "test -s %s/labs/runs/latest/logs/netns-coord.log", dir), 0);
}

static void lab6_across_machines_two_at_once(void **state)
{
  (void)state;
  lab6(2, "");
}

/* One student, at a person's pace. */
static void lab6_paced(void **state)
{
  (void)state;
  lab6(1, paced_env());
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_lab_not_done_does_not_pass),
    cmocka_unit_test(run_sh_by_hand_with_nothing_set),
    cmocka_unit_test(nonsense_without_faults_fails),
    cmocka_unit_test(handout_answers_fail),
    cmocka_unit_test(demo_then_check_fails),
    cmocka_unit_test(lab1_write_path),
    cmocka_unit_test(lab2_quorums),
    cmocka_unit_test(lab3_crash_recovery),
    cmocka_unit_test(lab4_gossip),
    cmocka_unit_test(verify_run_dirs),
    cmocka_unit_test(forged_gossip_fails),
    cmocka_unit_test(forged_journal_fails),
    cmocka_unit_test(run_sh_by_hand_is_a_demo),
    cmocka_unit_test(lab5_fencing),
    cmocka_unit_test(lab6_across_machines_two_at_once),
    /* At a person's pace: `make test` runs these in a lane of their own
     * (AURALOG_TEST_FILTER='*_paced'), and skips them in the others. */
    cmocka_unit_test(lab1_paced),
    cmocka_unit_test(lab2_paced),
    cmocka_unit_test(lab3_paced),
    cmocka_unit_test(lab4_paced),
    cmocka_unit_test(lab5_paced),
    cmocka_unit_test(lab6_paced),
    cmocka_unit_test(cluster_down_leaves_nothing),
  };
  /* AURALOG_TEST_FILTER=pattern (cmocka's) runs only the tests it names. */
  if (getenv("AURALOG_TEST_FILTER"))
    cmocka_set_test_filter(getenv("AURALOG_TEST_FILTER"));
  /* AURALOG_TEST_SKIP=pattern leaves out the tests it names ('*_paced':
   * make test's CPU lanes, while the paced lane runs them). */
  if (getenv("AURALOG_TEST_SKIP"))
    cmocka_set_skip_filter(getenv("AURALOG_TEST_SKIP"));
  return cmocka_run_group_tests_name("integration: labs", tests, setup, teardown);
}
