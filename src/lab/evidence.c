/*
 * lab/evidence.c: what an observe lab's check rests on beyond the journal.
 *
 * The journal (journal.h) is MAC'd with the coordinator's own key, but a
 * student runs the coordinator as themselves and could, with a program,
 * append lines that MAC well. So a check does not take the journal's
 * word alone: what it says must agree with sources a program appending
 * lines does not move:
 *
 *   the coordinator's metadata   the volume's epoch and VDL now, its
 *                                truncation ranges (status)
 *   the nodes' own word          the epoch each segment heard, its SCL,
 *                                each node's count of partitions it was
 *                                told of and when its process started
 *                                (their heartbeats, via status)
 *   values that must fit         an epoch in the history is one the
 *                                coordinator and the segments know; a VDL
 *                                or SCL in it is at or below the VDL now;
 *                                the writer's commits now are at least
 *                                the history's last count
 *   the student's assignment     the id in the lab-start mark, and what
 *                                it assigns (lab/assign.c)
 *
 * Each check also records what it read from the cluster, the evidence:
 * the status snapshot(s) and every SQL answer, in order (ev_status,
 * ev_query); the run directory keeps it as evidence.json (lab/rundir.c),
 * and `auralog lab verify` replays it (x->offline: ev_sql_replay) to run
 * the same check again with no cluster (lab/verify.c). Once the check
 * is done, a hash of the answers it read and of that evidence goes into
 * the journal as a lab-seal mark (ev_seal), so an answer or a snapshot
 * edited in the run directory afterwards no longer matches its journal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lab/lab.h"

void ev_begin(struct labctx *x)
{
  if (x->offline)
    return;
  cJSON_Delete(x->evid);
  x->evid = cJSON_CreateObject();
  cJSON_AddArrayToObject(x->evid, "sql");
}

void ev_status(struct labctx *x)
{
  if (x->offline || x->evid == NULL || x->status == NULL)
    return;
  cJSON_DeleteItemFromObject(x->evid, "status");
  cJSON_AddItemToObject(x->evid, "status", cJSON_Duplicate(x->status, 1));
}

int ev_query(struct labctx *x, const char *sql, char *out, size_t n, int online_rc)
{
  (void)n;
  cJSON *arr = x->evid ? cJSON_GetObjectItem(x->evid, "sql") : NULL;
  if (arr) {
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "sql", sql);
    cJSON_AddStringToObject(q, "engine", x->engine);
    cJSON_AddNumberToObject(q, "rc", online_rc);
    cJSON_AddStringToObject(q, "out", out);
    cJSON_AddItemToArray(arr, q);
  }
  return online_rc;
}

/* Offline: the answer the check got to the same question, in the same
 * order (a check asks the same questions of the same evidence). */
int ev_sql_replay(struct labctx *x, const char *sql, char *out, size_t n)
{
  cJSON *q = cJSON_GetArrayItem(cJSON_GetObjectItem(x->evid, "sql"), x->nsql);
  const char *s = fstr(q, "sql");
  if (q == NULL || strcmp(s, sql) != 0) {
    snprintf(out, n, "the run directory recorded no answer to %s", sql);
    return -1;
  }
  x->nsql++;
  snprintf(out, n, "%s", fstr(q, "out"));
  return (int)fnum(q, "rc");
}

void lab_file(struct labctx *x, const char *name, char *out, size_t n)
{
  if (x->offline)
    snprintf(out, n, "%s/%s", x->rundir, name);
  else
    snprintf(out, n, "%s/labs/%s", x->dir, name);
}

double status_num(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

const cJSON *status_node(struct labctx *x, const char *id)
{
  const cJSON *n;
  cJSON_ArrayForEach(n, cJSON_GetObjectItem(x->status, "nodes"))
    if (!strcmp(fstr(n, "id"), id))
      return n;
  return NULL;
}

/* Whose run this is: the lab-start mark names the student (`lab start N
 * --student ID`) and the assignment the coordinator computed for them; it
 * must be the one their id gives (a mark from another lab or id pasted
 * in would not be). A demo has no student and no assignment. */
void who_and_assignment(struct labctx *x)
{
  x->student[0] = 0;
  x->has_assign = 0;
  if (x->demo || x->start < 0)
    return;
  const cJSON *m = hist_at(x, x->start);
  snprintf(x->student, sizeof x->student, "%s", fstr(m, "student"));
  int lab = (int)fnum(m, "n");
  ok(x, student_id_ok(x->student), "the lab was started by a named student (%s)",
     x->student[0] ? x->student : "no id: auralog lab start N --student ID");
  if (!student_id_ok(x->student))
    return;
  char text[160];
  int choice = assign_make(x->student, lab, &x->as) == 0;
  assign_text(&x->as, text, sizeof text);
  ok(x, !strcmp(text, fstr(m, "assign")), "the assignment in the lab-start mark is %s's: %s",
     x->student, text);
  x->has_assign = choice;
}

/* The checks every observe lab shares: the history's epochs, VDLs and
 * commits against the coordinator's and the nodes' view now. */
void agree(struct labctx *x)
{
  const cJSON *st = x->status, *pg, *s;
  if (st == NULL || x->start < 0)
    return;
  const char *vol = fstr(st, "volume");
  double epoch_now = status_num(st, "epoch"), vdl_now = status_num(st, "vdl");
  double commits_now = status_num(st, "commits"), heard = -1;
  cJSON_ArrayForEach(pg, cJSON_GetObjectItem(st, "pgs"))
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(pg, "segments"))
      heard = status_num(s, "epoch") > heard ? status_num(s, "epoch") : heard;
  double top_epoch = -1, top_vdl = -1, last_commits = -1;
  for (size_t i = 0; i < x->nev; i++) {
    const cJSON *e = x->ev[i];
    if (strcmp(fstr(e, "volume"), vol) != 0)
      continue;
    if (is(e, "epoch") || is(e, "engine") || is(e, "trunc"))
      top_epoch = fnum(e, "epoch") > top_epoch ? fnum(e, "epoch") : top_epoch;
    if (is(e, "engine") || is(e, "stall")) {
      top_vdl = fnum(e, "vdl") > top_vdl ? fnum(e, "vdl") : top_vdl;
      if (is(e, "engine") && fnum(e, "epoch") == epoch_now)
        last_commits = fnum(e, "commits");
    }
  }
  if (top_epoch < 0)
    return;                    /* a history with no writer in it: nothing to compare */
  ok(x, top_epoch <= epoch_now && top_epoch <= heard,
     "the epochs in the history (up to %.0f) are ones the coordinator (volume epoch %.0f) "
     "and the segments (heard up to %.0f) know", top_epoch, epoch_now, heard);
  ok(x, top_vdl <= vdl_now, "the VDLs in the history (up to %.0f) are at or below the "
     "writer's VDL now (%.0f)", top_vdl, vdl_now);
  ok(x, last_commits <= commits_now, "the writer's commits now (%.0f) are at least the "
     "history's last count (%.0f)", commits_now, last_commits < 0 ? 0 : last_commits);
}

/* BLAKE2b-128 of the answers file's bytes and the evidence's status and
 * SQL answers, as hex (32 characters: a fault note's name fits 64). */
void ev_seal(struct labctx *x, const char *answers, char out[33])
{
  crypto_generichash_state st;
  uint8_t h[16];
  char buf[4096];
  size_t n;
  crypto_generichash_init(&st, NULL, 0, sizeof h);
  FILE *f = fopen(answers, "r");
  crypto_generichash_update(&st, (const uint8_t *)"answers\n", 8);
  while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
    crypto_generichash_update(&st, (const uint8_t *)buf, n);
  if (f)
    fclose(f);
  static const char *parts[] = {"status", "sql"};
  for (int i = 0; i < 2; i++) {
    char *js = cJSON_PrintUnformatted(cJSON_GetObjectItem(x->evid, parts[i]));
    crypto_generichash_update(&st, (const uint8_t *)parts[i], strlen(parts[i]));
    if (js)
      crypto_generichash_update(&st, (const uint8_t *)js, strlen(js));
    free(js);
  }
  crypto_generichash_final(&st, h, sizeof h);
  sodium_bin2hex(out, 33, h, sizeof h);
}
