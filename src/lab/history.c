/*
 * lab/history.c: a lab's history, from the cluster's event journal
 * (journal.h; what is recorded: coord/journal.c).
 *
 * A student begins a lab with `auralog lab start N`: the coordinator puts
 * a mark in the journal, and `lab check N` looks at what happened after
 * the last such mark, up to the next lab's start mark if one came after,
 * so each lab is checked on its own, whatever ran before or after (other
 * labs' faults do not count, and do not get in the way). `lab run N`, the instructor's demo, brackets its steps with
 * lab-demo and lab-demo-end marks, and so does a run.sh run by hand
 * (labs/lib.sh: `auralog lab note demo-begin`): a student's check leaves
 * those spans out (a demo is not the student's work), and the demo's
 * reference answers are computed from its own span.
 *
 * Lines that fail their MAC (edited by hand, or pasted from another
 * cluster) are left out; any such line in the lab's window fails its check.
 */
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "lab/lab.h"
#include "net/rpc.h"

int is(const cJSON *e, const char *kind)
{
  const cJSON *k = cJSON_GetObjectItem(e, "kind");
  return cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0;
}

double fnum(const cJSON *e, const char *key)
{
  const cJSON *v = cJSON_GetObjectItem(e, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

const char *fstr(const cJSON *e, const char *key)
{
  const cJSON *v = cJSON_GetObjectItem(e, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static int mark(const cJSON *e, const char *action, int lab)
{
  return is(e, "fault") && strcmp(fstr(e, "action"), action) == 0 &&
         (lab < 0 || (int)fnum(e, "n") == lab);
}

cJSON *hist_at(struct labctx *x, long i)
{
  return cJSON_GetArrayItem(x->journal, (int)i);
}

long hist_len(struct labctx *x)
{
  return x->journal ? cJSON_GetArraySize(x->journal) : 0;
}

long hist_index(struct labctx *x, const cJSON *e)
{
  (void)x;
  return (long)fnum(e, "seq");       /* hist_load made seq the position */
}

int hist_load(struct labctx *x, int lab, int demo)
{
  char p[PATH_MAX + 64], why[PATH_MAX + 160];
  snprintf(p, sizeof p, "%s/data/coord/journal.jsonl", x->dir);
  snprintf(x->jpath, sizeof x->jpath, "%s", p);
  int bad;
  x->journal = journal_read(p, x->jkey, &bad, why, sizeof why);
  return hist_window(x, lab, demo);
}

int hist_window(struct labctx *x, int lab, int demo)
{
  x->xfrom = x->bfrom = -1;
  x->tstart = -1;
  x->demo = demo;
  x->ndemo = 0;
  x->jbad = 0;                         /* only those in the lab's window count */
  x->start = -1;
  x->nev = 0;
  if (x->journal == NULL)
    return -1;
  /* Lines left out break the seq run: index by position instead. */
  long n = hist_len(x);
  x->ev = calloc((size_t)n + 1, sizeof *x->ev);
  long from = -1, to = n;
  for (long i = 0; i < n; i++) {
    cJSON *e = hist_at(x, i);
    if (cJSON_GetObjectItem(e, "seq"))
      cJSON_ReplaceItemInObject(e, "seq", cJSON_CreateNumber((double)i));
    else
      cJSON_AddNumberToObject(e, "seq", (double)i);
    if (!demo && mark(e, "lab-start", lab))
      from = i;
    if (demo && mark(e, "lab-demo", lab))
      from = i, to = n;
    if (demo && from >= 0 && mark(e, "lab-check", lab) && to == n)
      to = i;                /* the demo's span runs to its own sample, after its end */
  }
  if (from < 0)
    return 0;
  /* A student's lab ends where the next lab began: a lab checked again
   * after later ones (for a run directory to hand in) is checked on what
   * happened in it, not on their faults and commits. */
  for (long i = from + 1; !demo && i < n; i++)
    if (mark(hist_at(x, i), "lab-start", -1)) {
      to = i;
      break;
    }
  x->start = x->xfrom = from;
  /* The context the checks read before the mark (the writer's last
   * sample, the coordinator's start): back to its start, at most 400. */
  x->bfrom = from;
  while (x->bfrom > 0 && from - x->bfrom < 400 && !is(hist_at(x, x->bfrom), "start"))
    x->bfrom--;
  x->tstart = fnum(hist_at(x, from), "t");
  /* A start made while a demo ran (a hand-run run.sh marks its span:
   * labs/lib.sh) is in that demo until it ends. */
  int in_demo = 0;
  for (long i = 0; !demo && i < from; i++)
    if (mark(hist_at(x, i), "lab-demo", -1))
      in_demo = 1;
    else if (mark(hist_at(x, i), "lab-demo-end", -1))
      in_demo = 0;
  x->win = calloc((size_t)n + 1, 1);
  x->ndemo = in_demo;
  for (long i = from + 1; i < to; i++) {
    cJSON *e = hist_at(x, i);
    if (!demo && mark(e, "lab-demo", -1))
      in_demo = 1, x->ndemo++;
    else if (!demo && mark(e, "lab-demo-end", -1))
      in_demo = 0;
    else if (is(e, "bad"))
      x->jbad++;                         /* fails the check, demo or not */
    else if (!in_demo)
      x->ev[x->nev++] = e, x->win[i] = 1;
  }
  return 0;
}

/* Lab 6's history is in another coordinator's journal (the namespace
 * cluster's, which its script starts after `lab start 6`): the main
 * journal still says when the lab began and which spans were demos, and
 * path's events are in the window when their time is. Both coordinators
 * run on this machine, on one clock. Replaces the loaded history. */
int hist_follow(struct labctx *x, const char *path)
{
  char why[PATH_MAX + 160];
  double t0 = x->start >= 0 ? fnum(hist_at(x, x->start), "t") : -1, ex[32][2];
  double t1 = 1e300;         /* the next lab's start, as hist_window ends there */
  for (long i = x->start + 1; x->start >= 0 && !x->demo && i < hist_len(x); i++)
    if (mark(hist_at(x, i), "lab-start", -1)) {
      t1 = fnum(hist_at(x, i), "t");
      break;
    }
  int nex = 0, open = 0, jbad = x->jbad;
  for (long i = x->start + 1; x->start >= 0 && !x->demo && i < hist_len(x); i++) {
    cJSON *e = hist_at(x, i);
    if (mark(e, "lab-demo", -1) && !open && nex < 32)
      ex[nex][0] = fnum(e, "t"), ex[nex][1] = 1e300, open = 1;
    else if (mark(e, "lab-demo-end", -1) && open)
      ex[nex++][1] = fnum(e, "t"), open = 0;
  }
  nex += open;
  hist_free(x);
  snprintf(x->jpath, sizeof x->jpath, "%s", path);
  int bad;
  x->journal = journal_read(path, x->jkey, &bad, why, sizeof why);
  x->jbad = jbad;
  x->nev = 0;
  x->start = x->xfrom = -1;
  if (x->journal == NULL || t0 < 0)
    return -1;
  long n = hist_len(x), first = n;
  x->ev = calloc((size_t)n + 1, sizeof *x->ev);
  x->win = calloc((size_t)n + 1, 1);
  for (long i = 0; i < n; i++) {
    cJSON *e = hist_at(x, i);
    double t = fnum(e, "t");
    cJSON_ReplaceItemInObject(e, "seq", cJSON_CreateNumber((double)i));
    if ((t >= 0 && t <= t0) || (t < 0 && first == n))
      continue;                /* before the lab began (a bad line: before the first after) */
    if (t >= t1)
      break;                   /* after the next lab began */
    first = i < first ? i : first;
    int in_demo = 0;
    for (int d = 0; d < nex; d++)
      in_demo |= t >= ex[d][0] && t <= ex[d][1];
    if (is(e, "bad"))
      x->jbad++;
    else if (!in_demo)
      x->ev[x->nev++] = e, x->win[i] = 1;
  }
  x->xfrom = x->bfrom = first < n ? first : -1;
  x->start = first - 1;        /* the last event before the lab (sample_pairs' base) */
  return 0;
}

void hist_free(struct labctx *x)
{
  cJSON_Delete(x->journal);
  free(x->ev);
  free(x->win);
  x->win = NULL;
  x->journal = NULL;
  x->ev = NULL;
}

/* Which nodes are down and which AZs partitioned, event by event. */
void nodes_apply(struct nodes *s, const cJSON *e)
{
  if (is(e, "start")) {
    memset(s, 0, sizeof *s);            /* a coordinator restart: nodes register again */
    return;
  }
  if (is(e, "node")) {
    const char *id = fstr(e, "node");
    if (id[0] >= 'A' && id[0] <= 'C' && (id[1] == '1' || id[1] == '2') && !id[2])
      s->down[id[0] - 'A'][id[1] - '1'] = !cJSON_IsTrue(cJSON_GetObjectItem(e, "up"));
  } else if (is(e, "fault") && !strcmp(fstr(e, "action"), "partition")) {
    const char *az = fstr(e, "az");
    if (az[0] >= 'A' && az[0] <= 'C')
      s->part[az[0] - 'A'] = 1;
  } else if (is(e, "fault") && !strcmp(fstr(e, "action"), "heal")) {
    memset(s->part, 0, sizeof s->part);
  }
}

char nodes_az_down(const struct nodes *s)
{
  for (int a = 0; a < 3; a++)
    if (s->down[a][0] && s->down[a][1])
      return (char)('A' + a);
  return 0;
}

int nodes_ndown(const struct nodes *s)
{
  int n = 0;
  for (int a = 0; a < 3; a++)
    n += s->down[a][0] + s->down[a][1];
  return n;
}

int hist_quorum(struct labctx *x, int *copies, int *vw, int *vr)
{
  *copies = NCOPIES, *vw = VW, *vr = VR;
  for (long k = hist_len(x) - 1; k >= 0; k--)
    if (is(hist_at(x, k), "start")) {
      *copies = (int)fnum(hist_at(x, k), "copies");
      *vw = (int)fnum(hist_at(x, k), "vw");
      *vr = (int)fnum(hist_at(x, k), "vr");
      return 0;
    }
  return -1;
}

int hist_mark(struct labctx *x, const char *action, int lab, char *why, size_t n)
{
  Env req = AURALOG__ENVELOPE__INIT;
  Auralog__Fault f = AURALOG__FAULT__INIT;
  f.action = (char *)action;
  f.az = "";
  /* whose start; what a check read (lab/evidence.c ev_seal) */
  f.node = !strcmp(action, "lab-start") ? x->student : !strcmp(action, "lab-seal") ? x->seal : "";
  f.ms = (uint32_t)lab;
  req.body_case = AURALOG__ENVELOPE__BODY_FAULT;
  req.fault = &f;
  Env *rep = rpc_once(x->coord, &req, RPC_TIMEOUT_MS, why, n);
  int rc = rep && rpc_expect(rep, AURALOG__ENVELOPE__BODY_OK, why, n) == 0 ? 0 : -1;
  wire_free(rep);
  return rc;
}
