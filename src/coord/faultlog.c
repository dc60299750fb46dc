/*
 * faultlog.c: the faults the coordinator heard of lately, for pictures.
 *
 * Some faults leave a state the status already shows (a node down, a
 * partition, a slow node, gossip off), but others are instants that leave
 * only their effects: `drop A2 5` loses five Appends and is over, a
 * writer crash is a process gone. A student looking at the dashboard
 * must see the cause beside the effect (the hole, the failover), so the
 * coordinator keeps the last FAULTS_SHOWN faults of every kind, played
 * (on_fault) or noted by `auralog fault` (a kill, a start), each with a
 * sequence number and its time; a Status carries them with their age,
 * oldest first. Lab marks and bench notes are not faults and are not kept.
 *
 * Interface (coord.h): flog_note when a fault is played or noted;
 * flog_status fills Status.faults (pointing into the coordinator's own
 * buffers, valid until the next call); flog_free at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"
#include "param.h"

struct flog_entry {
  uint32_t seq;
  char action[24];
  char az[NAME_MAX_LEN + 1];
  char node[NAME_MAX_LEN + 1];
  uint32_t n;
  unsigned long long at;     /* io_now when heard */
};

struct flog {
  struct flog_entry e[FAULTS_SHOWN];   /* a ring: seq % FAULTS_SHOWN */
  uint32_t seq;                        /* faults ever noted */
  Auralog__FaultSeen out[FAULTS_SHOWN];
  Auralog__FaultSeen *outp[FAULTS_SHOWN];
};

/* A fault, not a lab mark or a bench note (wire.c vets every action). */
static int is_fault(const char *action)
{
  return strncmp(action, "lab-", 4) != 0 && strcmp(action, "bench") != 0;
}

void flog_note(struct coord *co, const Auralog__Fault *f)
{
  if (f->action == NULL || !is_fault(f->action))
    return;
  if (co->flog == NULL)
    co->flog = calloc(1, sizeof *co->flog);
  struct flog *l = co->flog;
  struct flog_entry *x = &l->e[l->seq % FAULTS_SHOWN];
  x->seq = ++l->seq;
  snprintf(x->action, sizeof x->action, "%s", f->action);
  snprintf(x->az, sizeof x->az, "%s", f->az ? f->az : "");
  snprintf(x->node, sizeof x->node, "%s", f->node ? f->node : "");
  x->n = f->ms;
  x->at = io_now(co->io);
}

void flog_status(struct coord *co, Auralog__Status *st)
{
  struct flog *l = co->flog;
  st->n_faults = 0;
  if (l == NULL)
    return;
  unsigned long long now = io_now(co->io);
  uint32_t have = l->seq < FAULTS_SHOWN ? l->seq : FAULTS_SHOWN;
  for (uint32_t k = 0; k < have; k++) {
    const struct flog_entry *x = &l->e[(l->seq - have + k) % FAULTS_SHOWN];
    Auralog__FaultSeen *o = &l->out[k];
    auralog__fault_seen__init(o);
    o->seq = x->seq;
    o->action = (char *)x->action;
    o->az = (char *)x->az;
    o->node = (char *)x->node;
    o->n = x->n;
    o->age_ms = now - x->at;
    l->outp[k] = o;
  }
  st->faults = l->outp;
  st->n_faults = have;
}

void flog_free(struct coord *co)
{
  free(co->flog);
  co->flog = NULL;
}
