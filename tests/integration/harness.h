/*
 * harness.h: what the integration tests share: a local cluster of real
 * processes in a directory of its own, on ports of its own, started with
 * `auralog cluster up` and stopped with `cluster down`.
 */
#ifndef AURALOG_HARNESS_H
#define AURALOG_HARNESS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

extern const char *bin;        /* build/auralog (AURALOG_BIN) */
extern char dir[256];          /* the cluster directory */
extern int base;               /* its base port */
extern char coord[64];         /* coordinator address */
extern char engine[64];        /* engine address */

#define OUT_SIZE (16 << 20)
extern char out[OUT_SIZE];     /* what the last sql() printed */

/* Pick a directory and ports for this run (name distinguishes test files)
 * and start the cluster. Returns 0, or -1 with the output on stderr. */
/* A base port for a cluster (or a bench) of this test process: a block of
 * 128 ports (base .. base + ENGINE_PORT_OFFSET + 1 fit in it) all free
 * now, chosen from seed first (the pid), never overlapping another's. */
int free_block(int seed);

int cluster_start(const char *name);
/* The same, with more `cluster up` options (" --statement-timeout 0").
 * Both start it with --no-failover unless extra says --failover: a test
 * that crashes the engine and restarts it in place (`fault engine-crash`,
 * `cluster up`) is about recovery, and must not race a promotion.
 * cluster_start_as_user passes extra alone: the defaults a user gets
 * (failover on). */
int cluster_start_with(const char *name, const char *extra);
int cluster_start_as_user(const char *name, const char *extra);
/* Stop it and remove the directory (unless AURALOG_KEEP is set). */
void cluster_stop(void);

/* Labs, as a student does them: `auralog lab check N` on this test's
 * cluster (its exit status; what it printed in out), and lab N's answers
 * file (DIR/labs/labNN-answers.txt) written with text. */
int lab_check(int n);
void lab_answers(int n, const char *text);
/* `auralog lab start N`; then the handout's steps by hand (labs/FOLDER/
 * run.sh, with env, e.g. "X=1", before it; the output in DIR/labNN.out):
 * the test fails, showing the output's tail, if either fails. */
void lab_start(int n);
extern char lab_assigned[128];   /* the last lab_start's assignment: "LAB_AZ=B ..." */
/* where/typed/FOLDER/run.sh: a lab's steps as a student types them (run.sh
 * and lib.sh without the demo marks a run.sh run by hand makes). */
void lab_typed(const char *folder, const char *where);
void lab_steps(int n, const char *folder, const char *env);
/* The env for lab_steps of a paced run: the steps with a person's pause
 * before each ("AURALOG_PACE_S=3": $AURALOG_PACE_S if set, else 3 s).
 * Paced tests are named *_paced: `make test` runs them in a lane of their
 * own (scripts/run-integration.sh), since they mostly wait. */
const char *paced_env(void);

/* Run a shell command; return its exit status; output in out if given. */
int sh(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A check's failing line for an answer: "[missing] key" (no answer, or
 * nothing measured) or "[wrong] key" (an answer, not the right one). */
const char *failed_line(const char *text, const char *key);
/* Same, with stdin from a string. */
int sh_in(const char *in, char *out, size_t n, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* Run SQL through `auralog sql` on the cluster's engine; output in out.
 * sql_ok fails the test unless it succeeded (and printed want, if given). */
int sql(const char *text);
void sql_ok(const char *text, const char *want);

/* `auralog fault --dir DIR what`; fails the test if it fails. */
void fault(const char *what);

/* The last test of every file: `cluster down` stops everything it
 * started, and no member wrote a sanitizer report. */
void cluster_down_leaves_nothing(void **state);

pid_t pid_of(const char *member);
/* Is pid a live process (not a zombie)? */
int pid_alive(pid_t pid);
/* Send sig to a member and wait until it is gone (for SIGKILL/SIGTERM). */
void stop_member(const char *member, int sig);

/* `auralog status --json --volume volume` (caller frees). */
cJSON *status(const char *volume);
/* "up" or "down" for a node. */
const char *node_state(const char *node);
void wait_node_state(const char *node, const char *want, int ms);

/* Live processes whose command line names this cluster's directory or
 * engine address. */
int live_cluster_processes(void);
/* Fail the test if any member's log holds a sanitizer report. */
void assert_no_sanitizer_reports(void);

/* One SQL request on an open connection to an engine or replica (rpc.h):
 * 0 with its rows as a|b lines in o (and *lsn, if given, its commit LSN),
 * -1 with the error answer in o, -2 with no answer (o: why; a commit's
 * outcome is then unknown). */
struct rpc;
int rpc_sql(struct rpc *r, const char *text, char *o, size_t n, int timeout_ms, uint64_t *lsn);

#endif
