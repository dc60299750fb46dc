/*
 * binlogc.c: the binlog's registered consumers (issue 29, seed 003): the
 * coordinator keeps, per volume, each named consumer's position, so that
 * storage keeps what a consumer has not read yet (MySQL keeps binlog files
 * while a replica has not read them; Aurora's enhanced binlog the same).
 *
 * A position is a commit LSN: the consumer has every transaction committed
 * at or below it (`auralog binlog tail --name N` moves its own after each
 * batch it printed; `binlog apply --name N`, after each batch applied,
 * to the file's own position). The volume's keep point is the lowest
 * position of its consumers; every Assign the coordinator sends carries
 * each volume's (Assign.binlog_keep, coord.c coord_send_assign calls
 * blc_assign_fill), and no binlog segment releases a record above it
 * (node/nbinlog.c, R1). When a volume's lowest position changes, the nodes
 * of its binlog PG are sent an Assign, at most once per
 * BINLOG_KEEP_SEND_MS per volume (blc_tick): a consumer moving after every
 * batch costs the nodes one Assign a second, not one a batch.
 *
 * Requests (BinlogConsumer, answered with the volume's BinlogConsumers):
 *   C1. name, pos: register the consumer at pos, or move it there. A
 *       position never moves back: a request below the registered one is
 *       refused (ERR_CONFLICT, saying where it is), unless it says rewind.
 *       A consumer restored from an old copy of its output (a file from a
 *       backup) must say so, `--rewind`: then records between the two
 *       positions are kept again only if retention has not released them
 *       yet (the reader reports a gap if it has). Without the rule, a
 *       consumer started by mistake from an old position would silently
 *       hold retention back, and a stale one would undo a live one's moves.
 *   C2. forget: unregister it (the records only it held may then go).
 *       Operator only (net/proof.c role_needs_op, checked by coord_op
 *       before dispatch): it lets storage delete what a consumer has not
 *       read, as a drop deletes a volume.
 *   C3. list: change nothing.
 * Who may do what: registering, moving and rewinding need only the
 * cluster key (a member): a consumer is a tool of the cluster, as
 * `auralog status` is. Rewinding and registering low only make storage
 * keep more. Left open, said so: a member may move any consumer forward
 * (there is no consumer identity beyond its name), which lets retention
 * release what that consumer has not read: it then sees a gap, an error,
 * never silent loss of its place.
 *
 * Storage: the coordinator's metadata (meta.h), database ctr, one key per
 * consumer "binlog:<volume id, 16 hex digits>:<name>" -> BinlogPos, each
 * change one durable transaction before the answer (as meta.c's puts).
 * Keyed by the volume's id, not its name: a volume dropped and made again
 * starts with no consumers; a dropped volume's are deleted by blc_tick.
 * At most BINLOG_CONSUMERS_MAX per volume.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/binlogc.h"
#include "coord/coord.h"
#include "lib/log.h"
#include "param.h"

#define KEY_PRE "binlog:"
#define KEY_MAX (sizeof KEY_PRE + 17 + NAME_MAX_LEN + 1)

struct blc_vol {
  uint64_t vol;
  int sent_has;              /* what was last sent to its binlog nodes */
  uint64_t sent_keep;
  int sent;                  /* anything sent yet since start */
  unsigned long long sent_at;
};

struct blc {
  struct blc_vol *v;
  size_t n;
  unsigned long long swept_at;
};

static struct blc *state(struct coord *co)
{
  if (co->blc == NULL)
    co->blc = calloc(1, sizeof *co->blc);
  return co->blc;
}

void blc_free(struct coord *co)
{
  if (co->blc)
    free(co->blc->v);
  free(co->blc);
  co->blc = NULL;
}

static size_t vol_prefix(char *k, size_t n, uint64_t vol)
{
  return (size_t)snprintf(k, n, KEY_PRE "%016llx:", (unsigned long long)vol);
}

/* The consumers of vol, in name order (*out: free each, then the array).
 * Returns how many, or -1 (why). */
static long load(struct coord *co, uint64_t vol, Auralog__BinlogPos ***out, char *why,
                 size_t whylen)
{
  struct meta *m = &co->meta;
  struct kv_txn *txn;
  struct kv_cursor *cur;
  *out = NULL;
  int rc = kv_begin(m->kv, KV_RDONLY, &txn);
  if (rc == 0 && (rc = kv_cursor(m->kv, txn, m->ctr, &cur)) != 0)
    kv_abort(m->kv, txn);
  if (rc != 0) {
    snprintf(why, whylen, "coordinator storage error while reading binlog consumers: %s",
             kv_strerror(m->kv, rc));
    return -1;
  }
  char k[KEY_MAX];
  size_t kl = vol_prefix(k, sizeof k, vol);
  struct kv_val key = {kl, k}, val;
  Auralog__BinlogPos **v = NULL;
  long n = 0;
  for (rc = kv_cursor_get(m->kv, cur, KV_SEEK, &key, &val); rc == 0;
       rc = kv_cursor_get(m->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len < kl || memcmp(key.data, k, kl) != 0)
      break;
    Auralog__BinlogPos *p = auralog__binlog_pos__unpack(NULL, val.len, val.data);
    if (p == NULL || !wire_name_ok(p->name)) {
      if (p)
        auralog__binlog_pos__free_unpacked(p, NULL);
      continue;              /* unreadable: not a consumer (never written so) */
    }
    v = realloc(v, (size_t)(n + 1) * sizeof *v);
    v[n++] = p;
  }
  kv_cursor_close(m->kv, cur);
  kv_abort(m->kv, txn);
  *out = v;
  return n;
}

static void load_free(Auralog__BinlogPos **v, long n)
{
  for (long i = 0; i < n; i++)
    auralog__binlog_pos__free_unpacked(v[i], NULL);
  free(v);
}

/* Store p as consumer p->name of vol (del: delete it), durably. */
static int store(struct coord *co, uint64_t vol, const Auralog__BinlogPos *p, int del,
                 char *why, size_t whylen)
{
  struct meta *m = &co->meta;
  char k[KEY_MAX];
  size_t kl = vol_prefix(k, sizeof k, vol);
  kl += (size_t)snprintf(k + kl, sizeof k - kl, "%s", p->name);
  uint8_t buf[256];
  size_t len = auralog__binlog_pos__get_packed_size(p);
  if (len > sizeof buf) {
    snprintf(why, whylen, "binlog consumer %s: too long to store", p->name);
    return -1;
  }
  auralog__binlog_pos__pack(p, buf);
  struct kv_txn *txn;
  int wrote, rc = kv_begin(m->kv, 0, &txn);
  if (rc == 0) {
    struct kv_val key = {kl, k}, val = {len, buf};
    rc = del ? kv_del(m->kv, txn, m->ctr, &key) : kv_put(m->kv, txn, m->ctr, &key, &val, 0);
    if (rc == KV_NOTFOUND)
      rc = 0;
    if (rc == 0)
      rc = kv_commit(m->kv, txn, &wrote);
    else
      kv_abort(m->kv, txn);
  }
  m->dirty |= m->batched;
  if (rc != 0) {
    snprintf(why, whylen, "coordinator storage error while storing binlog consumer %s: %s",
             p->name, kv_strerror(m->kv, rc));
    return -1;
  }
  return 0;
}

int blc_lowest(struct coord *co, uint64_t vol, uint64_t *keep)
{
  char why[256];
  Auralog__BinlogPos **v;
  long n = load(co, vol, &v, why, sizeof why);
  if (n < 0)
    logwarn_rl("%s", why);
  int has = 0;
  for (long i = 0; i < n; i++)
    if (!has || v[i]->pos < *keep) {
      *keep = v[i]->pos;
      has = 1;
    }
  load_free(v, n);
  return has;
}

/* ---- sending keep points --------------------------------------------------- */

static struct blc_vol *vol_state(struct coord *co, uint64_t vol)
{
  struct blc *b = state(co);
  for (size_t i = 0; i < b->n; i++)
    if (b->v[i].vol == vol)
      return &b->v[i];
  /* A node starts with no keep point: "none" is taken as told, so a
   * volume with no consumer costs its nodes no Assign (one with consumers
   * when the coordinator starts gets one at the first tick: its nodes
   * heard them with their registration's Assign, once more is harmless). */
  b->v = realloc(b->v, (b->n + 1) * sizeof *b->v);
  b->v[b->n] = (struct blc_vol){.vol = vol, .sent = 1};
  return &b->v[b->n++];
}

void blc_assign_fill(struct coord *co, Auralog__Assign *as)
{
  size_t n = 0;
  Auralog__BinlogKeep **p = calloc(co->nvols + 1, sizeof *p + sizeof **p);
  Auralog__BinlogKeep *k = (Auralog__BinlogKeep *)(p + co->nvols + 1);
  for (size_t i = 0; i < co->nvols; i++) {
    uint64_t keep;
    if (!blc_lowest(co, co->vols[i]->id, &keep))
      continue;
    auralog__binlog_keep__init(&k[n]);
    k[n].volume_id = co->vols[i]->id;
    k[n].keep = keep;
    p[n] = &k[n];
    n++;
  }
  as->binlog_keep = p;
  as->n_binlog_keep = n;
}

void blc_assign_done(Auralog__Assign *as)
{
  free(as->binlog_keep);
  as->binlog_keep = NULL;
  as->n_binlog_keep = 0;
}

/* Tell v's binlog nodes its keep point if it changed, unless it was sent
 * less than BINLOG_KEEP_SEND_MS ago (then a later tick does). */
static void maybe_send(struct coord *co, const Auralog__Volume *v, unsigned long long now)
{
  if (v->binlog == NULL || v->binlog->n_segments == 0)
    return;                  /* no binlog PG: no node to tell (its Assigns carry it) */
  uint64_t keep = 0;
  int has = blc_lowest(co, v->id, &keep);
  struct blc_vol *s = vol_state(co, v->id);
  if (s->sent && s->sent_has == has && (!has || s->sent_keep == keep))
    return;
  if (s->sent && now - s->sent_at < BINLOG_KEEP_SEND_MS)
    return;
  for (size_t i = 0; i < v->binlog->n_segments; i++) {
    struct cnode *n = coord_node_find(co, v->binlog->segments[i]->node);
    if (n)
      coord_send_assign(co, n, 0);   /* carries every keep point (blc_assign_fill) */
  }
  *s = (struct blc_vol){v->id, has, keep, 1, now};
}

/* Forget the consumers of volumes that are gone (dropped): at most once a
 * minute, a read of the consumers' keys, and a write only if one is gone. */
static void sweep(struct coord *co)
{
  struct meta *m = &co->meta;
  struct kv_txn *txn;
  struct kv_cursor *cur;
  int rc = kv_begin(m->kv, KV_RDONLY, &txn);
  if (rc == 0 && (rc = kv_cursor(m->kv, txn, m->ctr, &cur)) != 0)
    kv_abort(m->kv, txn);
  if (rc != 0)
    return;
  struct kv_val key = {sizeof KEY_PRE - 1, KEY_PRE}, val;
  char (*gone)[KEY_MAX] = NULL;
  size_t ngone = 0;
  for (rc = kv_cursor_get(m->kv, cur, KV_SEEK, &key, &val); rc == 0;
       rc = kv_cursor_get(m->kv, cur, KV_NEXT, &key, &val)) {
    if (key.len < sizeof KEY_PRE + 16 || key.len >= KEY_MAX ||
        memcmp(key.data, KEY_PRE, sizeof KEY_PRE - 1) != 0)
      break;
    char hex[17];
    memcpy(hex, (char *)key.data + sizeof KEY_PRE - 1, 16);
    hex[16] = 0;
    uint64_t vol = strtoull(hex, NULL, 16);
    int known = 0;
    for (size_t i = 0; i < co->nvols && !known; i++)
      known = co->vols[i]->id == vol;
    if (!known) {
      gone = realloc(gone, (ngone + 1) * sizeof *gone);
      memcpy(gone[ngone], key.data, key.len);
      gone[ngone++][key.len] = 0;
    }
  }
  kv_cursor_close(m->kv, cur);
  kv_abort(m->kv, txn);
  int wrote;
  if (ngone && kv_begin(m->kv, 0, &txn) == 0) {
    rc = 0;
    for (size_t i = 0; i < ngone && (rc == 0 || rc == KV_NOTFOUND); i++) {
      struct kv_val k = {strlen(gone[i]), gone[i]};
      rc = kv_del(m->kv, txn, m->ctr, &k);
    }
    if ((rc == 0 || rc == KV_NOTFOUND) && kv_commit(m->kv, txn, &wrote) == 0) {
      m->dirty |= m->batched;
      loginfo("binlog: forgot %zu consumer%s of dropped volumes", ngone, ngone == 1 ? "" : "s");
    } else if (rc != 0 && rc != KV_NOTFOUND) {
      kv_abort(m->kv, txn);
    }
  }
  free(gone);
}

void blc_tick(struct coord *co)
{
  unsigned long long now = io_now(co->io);
  struct blc *b = state(co);
  for (size_t i = 0; i < co->nvols; i++)
    maybe_send(co, co->vols[i], now);
  if (b->swept_at == 0 || now - b->swept_at >= 60000) {
    b->swept_at = now ? now : 1;
    sweep(co);
  }
}

/* ---- requests -------------------------------------------------------------- */

static void answer(struct coord *co, struct ep *c, uint64_t req, uint64_t vol)
{
  char why[256];
  Auralog__BinlogPos **v;
  long n = load(co, vol, &v, why, sizeof why);
  if (n < 0) {
    io_error(co->io, c, req, ERR_INTERNAL, why);
    return;
  }
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__BinlogConsumers bc = AURALOG__BINLOG_CONSUMERS__INIT;
  bc.consumers = v;
  bc.n_consumers = (size_t)n;
  env.req = req;
  env.body_case = AURALOG__ENVELOPE__BODY_BINLOG_CONSUMERS;
  env.binlog_consumers = &bc;
  io_send(co->io, c, &env);
  load_free(v, n);
}

void blc_on_consumer(struct coord *co, struct ep *c, uint64_t req,
                     const Auralog__BinlogConsumer *bc)
{
  char why[320];
  Auralog__Volume **slot = coord_vol_slot(co, bc->volume);
  if (slot == NULL) {
    snprintf(why, sizeof why, "no volume '%s'", bc->volume);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return;
  }
  const Auralog__Volume *v = *slot;
  if (bc->list) {            /* C3 */
    answer(co, c, req, v->id);
    return;
  }
  Auralog__BinlogPos **all;
  long n = load(co, v->id, &all, why, sizeof why);
  if (n < 0) {
    io_error(co->io, c, req, ERR_INTERNAL, why);
    return;
  }
  const Auralog__BinlogPos *had = NULL;
  for (long i = 0; i < n && had == NULL; i++)
    if (strcmp(all[i]->name, bc->name) == 0)
      had = all[i];
  Auralog__BinlogPos p = AURALOG__BINLOG_POS__INIT;
  p.name = bc->name;
  p.pos = bc->pos;
  p.at_ms = bc->at_ms;
  p.pos_ms = bc->pos_ms;
  int rc = 0, del = 0, code = ERR_NONE;
  if (bc->forget) {          /* C2 (coord_op checked the operator's signature) */
    if (had == NULL) {
      snprintf(why, sizeof why, "volume %s has no binlog consumer '%s'", v->name, bc->name);
      code = ERR_NOT_FOUND;
    }
    del = 1;
  } else if (had && bc->pos < had->pos && !bc->rewind) {   /* C1 */
    snprintf(why, sizeof why, "binlog consumer '%s' of volume %s is at %llu: a position never "
             "moves back to %llu unless the request says rewind (--rewind)", bc->name, v->name,
             (unsigned long long)had->pos, (unsigned long long)bc->pos);
    code = ERR_CONFLICT;
  } else if (had == NULL && n >= BINLOG_CONSUMERS_MAX) {
    snprintf(why, sizeof why, "volume %s has %d binlog consumers, the most it keeps: forget "
             "one first (auralog binlog forget NAME)", v->name, BINLOG_CONSUMERS_MAX);
    code = ERR_UNAVAILABLE;
  } else if (had && had->pos == bc->pos && !bc->pos_ms && !bc->at_ms) {
    load_free(all, n);       /* nothing changes: no write */
    answer(co, c, req, v->id);
    return;
  }
  if (code != ERR_NONE) {
    load_free(all, n);
    io_error(co->io, c, req, (uint32_t)code, why);
    return;
  }
  if (had && had->pos == bc->pos && p.pos_ms == 0)
    p.pos_ms = had->pos_ms;  /* the same place: its commit time stays known */
  rc = store(co, v->id, &p, del, why, sizeof why);
  if (rc == 0 && del)
    loginfo("binlog of volume %s: consumer %s forgotten by the operator (it was at %llu)",
            v->name, bc->name, (unsigned long long)had->pos);
  else if (rc == 0 && had == NULL)
    loginfo("binlog of volume %s: consumer %s registered at %llu", v->name, bc->name,
            (unsigned long long)bc->pos);
  else if (rc == 0 && bc->pos < had->pos)
    loginfo("binlog of volume %s: consumer %s rewound from %llu to %llu", v->name, bc->name,
            (unsigned long long)had->pos, (unsigned long long)bc->pos);
  load_free(all, n);
  if (rc != 0) {
    io_error(co->io, c, req, ERR_INTERNAL, why);
    return;
  }
  answer(co, c, req, v->id);
  maybe_send(co, v, io_now(co->io));   /* the keep point, now if the pace allows */
}
