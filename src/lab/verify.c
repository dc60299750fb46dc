/*
 * lab/verify.c: `auralog lab verify [ID=]RUNDIR...`: the instructor's
 * re-check of submitted run directories (lab/rundir.c), with no cluster.
 *
 * For each run directory:
 *   - its journal excerpt (before.jsonl, journal.jsonl) must verify as one
 *     MAC chain from the anchor evidence.json names, under journal.key,
 *     whose id evidence.json names: an edited line, a line moved or one
 *     pasted from elsewhere breaks it;
 *   - the lab's check runs again on it (the same code as `lab check`,
 *     lab/check*.c), with the cluster's answers replayed from
 *     evidence.json (lab/evidence.c) and the answers from answers.txt:
 *     the history, the answers, the coordinator's and nodes' view and the
 *     assignment must still agree, and the verdict must be the one the
 *     check recorded;
 *   - the answers and evidence must hash to the seal the check put in the
 *     journal (a lab-seal mark, lab/evidence.c ev_seal);
 *   - the student the lab-start mark names must be the one evidence.json
 *     names, and, given ID=RUNDIR, ID;
 * and across them: two run directories from one cluster (the same journal
 * key) under different students, or with the same journal excerpt or the
 * same evidence, are copies: both are flagged.
 *
 * One verdict line per run directory ("RUNDIR: ok ..." or "RUNDIR:
 * FLAGGED: why; why"); exit 0 only if every one is ok and passed.
 * Lab 6's history is the namespace cluster's journal, which holds no
 * start mark: its run directory gets the chain and copy checks only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "journal.h"
#include "lab/lab.h"

struct sub {
  char path[PATH_MAX];
  char want[STUDENT_MAX + 1];  /* ID=RUNDIR: whose it must be */
  char student[STUDENT_MAX + 1];
  char key_id[17];
  char jhash[65], ehash[65];   /* of journal.jsonl, and of the evidence read */
  int lab, passed, readable;
  char why[1024];
};

static void flag(struct sub *s, const char *fmt, const char *a, const char *b)
{
  size_t len = strlen(s->why);
  snprintf(s->why + len, sizeof s->why - len, "%s", len ? "; " : "");
  len = strlen(s->why);
  snprintf(s->why + len, sizeof s->why - len, fmt, a, b);
}

static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (cap - n < 2)
      buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[n] = 0;
  if (len)
    *len = n;
  return buf;
}

static void hash_hex(const char *data, size_t len, char out[65])
{
  uint8_t h[32];
  crypto_generichash(h, sizeof h, (const uint8_t *)data, len, NULL, 0);
  sodium_bin2hex(out, 65, h, sizeof h);
}

/* Re-check one run directory; the check's lines go to stdout, indented. */
static void one(struct sub *s, void (*check)(int, struct labctx *))
{
  char p[PATH_MAX + 64], why[PATH_MAX + 160];
  size_t len;
  snprintf(p, sizeof p, "%s/evidence.json", s->path);
  char *text = slurp(p, NULL);
  cJSON *ev = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (ev == NULL) {
    flag(s, "no evidence.json%s%s: not a run directory of `auralog lab check`", "", "");
    return;
  }
  s->readable = 1;
  s->lab = (int)fnum(ev, "lab");
  snprintf(s->student, sizeof s->student, "%s", fstr(ev, "student"));
  char *st = cJSON_PrintUnformatted(cJSON_GetObjectItem(ev, "status"));
  char *sq = cJSON_PrintUnformatted(cJSON_GetObjectItem(ev, "sql"));
  char both[2 * 65];
  hash_hex(st ? st : "", st ? strlen(st) : 0, both);
  hash_hex(sq ? sq : "", sq ? strlen(sq) : 0, both + 65);
  hash_hex(both, sizeof both, s->ehash);
  free(st);
  free(sq);
  /* The key, and the chain from its anchor through both excerpts. */
  uint8_t key[32], anchor[JOURNAL_MAC_BYTES];
  size_t alen = 0;
  snprintf(p, sizeof p, "%s/journal.key", s->path);
  int fd = open(p, O_RDONLY);
  int have_key = fd >= 0 && read(fd, key, sizeof key) == (ssize_t)sizeof key;
  if (fd >= 0)
    close(fd);
  if (!have_key) {
    flag(s, "no journal.key%s%s: its MACs cannot be checked", "", "");
    cJSON_Delete(ev);
    return;
  }
  journal_key_id(key, s->key_id);
  if (strcmp(s->key_id, fstr(ev, "key_id")) != 0)
    flag(s, "journal.key is not the key evidence.json names (%s, %s)", s->key_id,
         fstr(ev, "key_id"));
  const char *ah = fstr(ev, "anchor");
  memset(anchor, 0, sizeof anchor);
  if (ah[0] && (sodium_hex2bin(anchor, sizeof anchor, ah, strlen(ah), NULL, &alen, NULL) != 0 ||
                alen != sizeof anchor))
    flag(s, "evidence.json's anchor is not a MAC%s%s", "", "");
  char tmp[] = "/tmp/auralog-verify-XXXXXX";
  int tfd = mkstemp(tmp);
  snprintf(p, sizeof p, "%s/before.jsonl", s->path);
  char *before = slurp(p, &len);
  if (tfd >= 0 && before && write(tfd, before, len) != (ssize_t)len)
    flag(s, "cannot copy before.jsonl%s%s", "", "");
  free(before);
  snprintf(p, sizeof p, "%s/journal.jsonl", s->path);
  char *jl = slurp(p, &len);
  if (jl == NULL)
    flag(s, "no journal.jsonl%s%s", "", "");
  else {
    hash_hex(jl, len, s->jhash);
    if (tfd >= 0 && write(tfd, jl, len) != (ssize_t)len)
      flag(s, "cannot copy journal.jsonl%s%s", "", "");
  }
  free(jl);
  if (tfd >= 0)
    close(tfd);
  int bad = 0;
  static struct labctx x;
  cJSON_Delete(x.status);
  memset(&x, 0, sizeof x);
  x.journal = journal_read_key(tmp, key, anchor, &bad, why, sizeof why);
  unlink(tmp);
  if (bad) {
    char nb[32];
    snprintf(nb, sizeof nb, "%d", bad);
    flag(s, "%s line(s) of its journal excerpt fail the MAC chain%s: edited or pasted", nb, "");
  }
  if (s->lab == 6) {
    s->passed = !strcmp(fstr(ev, "verdict"), "passed");
    printf("  (lab 6: the namespace cluster's history; its chain and copies checked only)\n");
    cJSON_Delete(x.journal);
    cJSON_Delete(ev);
    return;
  }
  /* The check again, on what the run directory kept. */
  x.offline = 1;
  x.evid = ev;
  x.status = cJSON_Duplicate(cJSON_GetObjectItem(ev, "status"), 1);
  snprintf(x.rundir, sizeof x.rundir, "%s", s->path);
  snprintf(x.dir, sizeof x.dir, "%s", s->path);
  snprintf(x.answers, sizeof x.answers, "%s/answers.txt", s->path);
  snprintf(x.jpath, sizeof x.jpath, "%s/journal.jsonl", s->path);
  if (x.status == NULL)
    flag(s, "evidence.json holds no status snapshot%s%s", "", "");
  hist_window(&x, s->lab, 0);
  x.jbad = bad;
  /* The seal the check put in the journal: the answers and evidence it read. */
  char seal[33], found[80] = "", *ans = slurp(x.answers, NULL);
  /* rundir.c writes this line in place of an answers file it did not find */
  int none = ans && !strncmp(ans, "# no answers file at ", 21);
  free(ans);
  ev_seal(&x, none ? "" : x.answers, seal);
  for (long i = x.start + 1; i < hist_len(&x); i++) {
    const cJSON *e = hist_at(&x, i);
    if (is(e, "fault") && !strcmp(fstr(e, "action"), "lab-seal") && fnum(e, "n") == s->lab)
      snprintf(found, sizeof found, "%s", fstr(e, "node"));
  }
  if (strcmp(found, seal) != 0)
    flag(s, "%s%s", found[0] ? "answers.txt or evidence.json is not what the check read "
         "(its seal in the journal differs)" : "its journal holds no seal of the check", "");
  /* A demo (`lab run`, or run.sh by hand) in the excerpt: its span was
   * left out, but a run directory with one is worth a look. */
  for (long i = 0; i < hist_len(&x); i++) {
    const cJSON *e = hist_at(&x, i);
    if (is(e, "fault") && !strcmp(fstr(e, "action"), "lab-demo") && i > x.start) {
      flag(s, "a demo ran during the lab (`lab run` or a run.sh by hand)%s%s", "", "");
      break;
    }
  }
  check(s->lab, &x);
  s->passed = !x.failed;
  if (strcmp(x.student, s->student) != 0)
    flag(s, "the lab-start mark names %s, evidence.json %s", x.student, s->student);
  if (s->want[0] && strcmp(s->want, x.student) != 0)
    flag(s, "it is %s's run, not %s's", x.student[0] ? x.student : "nobody", s->want);
  if (strcmp(fstr(ev, "verdict"), x.failed ? "not yet" : "passed") != 0)
    flag(s, "the check recorded '%s' but says '%s' again", fstr(ev, "verdict"),
         x.failed ? "not yet" : "passed");
  hist_free(&x);
  cJSON_Delete(x.status);
  x.status = NULL;
  x.evid = NULL;
  cJSON_Delete(ev);
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: auralog lab verify [ID=]RUNDIR...\n"
    "\n"
    "Re-check run directories of `auralog lab check` (DIR/labs/runs/labNN-*), with\n"
    "no cluster: each one's journal excerpt against its MAC chain, the lab's check\n"
    "again on what it kept (journal, evidence.json, answers.txt), and its student:\n"
    "ID=RUNDIR says it must be ID's. Run directories given together are compared:\n"
    "two from one cluster under different students, or the same evidence twice,\n"
    "are flagged as copies. One verdict line each; exit 0 only if all are ok and\n"
    "passed, 1 if any is not, 2 on bad usage.\n");
}

int lab_verify_main(int argc, char **argv, void (*check)(int, struct labctx *))
{
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  int n = argc - 1, bad = 0;
  struct sub *s = calloc((size_t)n, sizeof *s);
  for (int i = 0; i < n; i++) {
    const char *a = argv[i + 1], *eq = strchr(a, '=');
    if (eq && (size_t)(eq - a) <= STUDENT_MAX) {
      snprintf(s[i].want, sizeof s[i].want, "%.*s", (int)(eq - a), a);
      a = eq + 1;
      if (!student_id_ok(s[i].want)) {
        fprintf(stderr, "auralog: lab verify: '%s' is not a student id\n", s[i].want);
        free(s);
        return 2;
      }
    }
    snprintf(s[i].path, sizeof s[i].path, "%s", a);
  }
  for (int i = 0; i < n; i++) {
    printf("== %s\n", s[i].path);
    fflush(stdout);
    one(&s[i], check);
  }
  /* Copies: one cluster's history under two students, the same evidence. */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < n; k++) {
      char ri[PATH_MAX], rk[PATH_MAX];
      if (i == k || !s[i].readable || !s[k].readable ||
          (realpath(s[i].path, ri) && realpath(s[k].path, rk) && !strcmp(ri, rk)))
        continue;                /* one directory named twice is not a copy */
      if (!strcmp(s[i].key_id, s[k].key_id) && strcmp(s[i].student, s[k].student))
        flag(&s[i], "from the same cluster as %s (student %s): a copy", s[k].path,
             s[k].student);
      else if (s[i].jhash[0] && !strcmp(s[i].jhash, s[k].jhash))
        flag(&s[i], "the same journal excerpt as %s%s: a copy", s[k].path, "");
      else if (!strcmp(s[i].ehash, s[k].ehash))
        flag(&s[i], "the same evidence as %s%s: a copy", s[k].path, "");
    }
  printf("\n");
  for (int i = 0; i < n; i++) {
    if (s[i].why[0])
      printf("%s: FLAGGED: %s\n", s[i].path, s[i].why);
    else
      printf("%s: ok: lab %d, student %s, %s\n", s[i].path, s[i].lab,
             s[i].student[0] ? s[i].student : "(none)",
             s[i].passed ? "passed"
                         : "not passed (the check's [missing] and [wrong] lines above)");
    bad |= s[i].why[0] || !s[i].passed;
  }
  free(s);
  return bad ? 1 : 0;
}
