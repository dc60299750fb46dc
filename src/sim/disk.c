/*
 * disk.c: the simulator's disk (see disk.h): the kv interface (kv.h) in
 * memory.
 *
 * Each database is a sorted array of pointers to items (key bytes then
 * value bytes, one allocation): a lookup is a binary search, an insert or
 * delete a memmove of pointers. For the tens of thousands of entries a
 * simulated node holds that beats a tree on both speed and lines of code,
 * and the order is the keys' alone, never an address's.
 *
 * Transactions change the arrays in place and keep an undo log: each
 * change notes the item it replaced (old, NULL for an insert) and the one
 * it put (new, NULL for a delete). Commit frees the olds and keeps the
 * news; abort (or a crash) walks the log backwards putting the olds back.
 * That makes reads inside the write transaction free (they see its
 * changes, as lmdb's do), and is why a read-only transaction may only be
 * open while no write transaction is: it would see uncommitted changes.
 *
 * Unsynced commits (kv_set_nosync, as a node's store uses lmdb beside its
 * hot log): a commit then keeps its undo entries instead of freeing the
 * olds, and marks where it ends; kv_sync frees them all. A crash undoes
 * the open transaction, then every unsynced commit after a prefix of them
 * (disk_crash: none of them kept; disk_crash_keep: a prefix chosen by r),
 * which is lmdb under MDB_NOSYNC after a power loss on a file system that
 * keeps the order of writes: the last transactions are lost, whole.
 *
 * Cursors remember the key they stand on, not just its index: after a
 * change in their database (a drain deletes under its cursor) they
 * find their place again by key, so KV_NEXT after a delete gives the
 * entry after the deleted one, as lmdb's cursors do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/disk.h"

#define DISK_MAXDB 8         /* as many named databases as kv_lmdb.c allows */

struct item {
  size_t klen, vlen;
  unsigned char b[];         /* key, then value */
};

struct db {
  char name[32];
  struct item **v;           /* sorted by key */
  size_t n, cap;
  uint64_t ver;              /* bumped by each insert and delete */
};

/* One change of the open write transaction (see the top). */
struct undo {
  unsigned db;
  struct item *old, *new;
};

struct kv_txn {
  int rdonly;
  int dead;                  /* a crash ended it: only abort (to free it) */
  struct kv_txn *next;       /* the disk's live handles */
};

struct kv_cursor {
  struct kv_txn *t;          /* NULL once its transaction ended */
  unsigned db;
  int pos;                   /* standing on an entry: i, key */
  size_t i;
  uint64_t ver;              /* the db's ver when i was right */
  unsigned char *key;
  size_t klen, kcap;
  struct kv_cursor *next;
};

struct disk {
  struct kv kv;
  struct db db[DISK_MAXDB];
  unsigned ndb;
  struct kv_txn *w;          /* the open write transaction, or NULL */
  unsigned readers;          /* open read-only transactions */
  struct undo *undo;
  size_t nundo, undocap;
  size_t ncommitted;         /* undo[0..ncommitted): commits not synced yet */
  size_t *marks;             /* where each of them ends in undo[] */
  size_t nmarks, capmarks;
  int nosync;                /* kv_set_nosync(1): commits do not sync */
  int wdirty;                /* w changed something (a db created counts) */
  struct kv_txn *txns;       /* every handle not freed yet */
  struct kv_cursor *curs;
  struct disk_stats st;
};

static const struct kv_ops disk_ops;

/* ---- sorted arrays ------------------------------------------------------- */

/* lmdb's default order: memcmp over the shorter length, then shorter first. */
static int keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
  int c = memcmp(a, b, alen < blen ? alen : blen);
  if (c != 0)
    return c;
  return alen < blen ? -1 : alen > blen;
}

/* The index of the first key >= key; *eq: it is key. */
static size_t lower(const struct db *b, const void *key, size_t klen, int *eq)
{
  size_t lo = 0, hi = b->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (keycmp(b->v[mid]->b, b->v[mid]->klen, key, klen) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (eq)
    *eq = lo < b->n && keycmp(b->v[lo]->b, b->v[lo]->klen, key, klen) == 0;
  return lo;
}

/* Room for one more entry. */
static int grow(struct db *b)
{
  if (b->n < b->cap)
    return 0;
  size_t cap = b->cap ? 2 * b->cap : 64;
  struct item **v = realloc(b->v, cap * sizeof *v);
  if (v == NULL)
    return ENOMEM;
  b->v = v;
  b->cap = cap;
  return 0;
}

/* Insert at i (grow() first). */
static void insert_at(struct db *b, size_t i, struct item *it)
{
  memmove(b->v + i + 1, b->v + i, (b->n - i) * sizeof *b->v);
  b->v[i] = it;
  b->n++;
  b->ver++;
}

static void remove_at(struct db *b, size_t i)
{
  memmove(b->v + i, b->v + i + 1, (b->n - i - 1) * sizeof *b->v);
  b->n--;
  b->ver++;
}

/* ---- handles ------------------------------------------------------------- */

static void unlink_txn(struct disk *d, struct kv_txn *t)
{
  for (struct kv_txn **p = &d->txns; *p; p = &(*p)->next)
    if (*p == t) {
      *p = t->next;
      break;
    }
  /* Its cursors outlive it only as handles to close. */
  for (struct kv_cursor *c = d->curs; c; c = c->next)
    if (c->t == t)
      c->t = NULL;
  free(t);
}

static int live(const struct kv_txn *t)
{
  return t != NULL && !t->dead;
}

/* Apply the undo log backwards down to entry base (abort: the open
 * transaction's; crash: unsynced commits' too). */
static void undo_to(struct disk *d, size_t base)
{
  while (d->nundo > base) {
    struct undo *u = &d->undo[--d->nundo];
    struct db *b = &d->db[u->db];
    const struct item *k = u->new ? u->new : u->old;
    int eq;
    size_t i = lower(b, k->b, k->klen, &eq);
    if (u->new) {                 /* it is there: take it out */
      if (u->old) {
        b->v[i] = u->old;         /* a replacement: same place */
      } else {
        remove_at(b, i);
      }
      free(u->new);
    } else {
      insert_at(b, i, u->old);    /* the room it left is still there */
    }
  }
}

/* The open transaction is over (its entries were undone or kept). */
static void end_write(struct disk *d)
{
  d->nundo = d->ncommitted;
  d->wdirty = 0;
  d->w = NULL;
}

/* Everything committed is durable now: the olds of the unsynced commits
 * can go (the open transaction's entries, if any, stay, moved down). */
static void make_durable(struct disk *d)
{
  for (size_t i = 0; i < d->ncommitted; i++)
    free(d->undo[i].old);
  if (d->nundo > d->ncommitted)   /* (an empty log may be NULL: no memmove) */
    memmove(d->undo, d->undo + d->ncommitted, (d->nundo - d->ncommitted) * sizeof *d->undo);
  d->nundo -= d->ncommitted;
  d->ncommitted = 0;
  d->nmarks = 0;
}

/* ---- kv operations ------------------------------------------------------- */

static int m_db(void *ctx, struct kv_txn *t, const char *name, unsigned *db)
{
  struct disk *d = ctx;
  if (!live(t))
    return KV_BADTXN;
  for (unsigned i = 0; i < d->ndb; i++)
    if (strcmp(d->db[i].name, name) == 0) {
      *db = i;
      return 0;
    }
  if (t->rdonly)
    return KV_NOTFOUND;
  if (d->ndb == DISK_MAXDB || strlen(name) >= sizeof d->db[0].name)
    return EINVAL;
  struct db *b = &d->db[d->ndb];
  memset(b, 0, sizeof *b);
  strcpy(b->name, name);
  *db = d->ndb++;
  d->wdirty = 1;
  return 0;
}

static int m_begin(void *ctx, unsigned flags, struct kv_txn **out)
{
  struct disk *d = ctx;
  *out = NULL;
  /* One writer; readers only while it is not open (the top says why). */
  if (d->w != NULL || (!(flags & KV_RDONLY) && d->readers > 0))
    return KV_BUSY;
  struct kv_txn *t = calloc(1, sizeof *t);
  if (t == NULL)
    return ENOMEM;
  t->rdonly = (flags & KV_RDONLY) != 0;
  t->next = d->txns;
  d->txns = t;
  if (t->rdonly)
    d->readers++;
  else
    d->w = t;
  *out = t;
  return 0;
}

static void m_abort(void *ctx, struct kv_txn *t)
{
  struct disk *d = ctx;
  if (t == NULL)
    return;
  if (!t->dead) {
    if (t->rdonly) {
      d->readers--;
    } else {
      undo_to(d, d->ncommitted);
      end_write(d);
    }
  }
  unlink_txn(d, t);
}

static int m_commit(void *ctx, struct kv_txn *t, int *wrote)
{
  struct disk *d = ctx;
  *wrote = 0;
  if (!live(t)) {
    m_abort(ctx, t);
    return KV_BADTXN;
  }
  if (!t->rdonly) {
    *wrote = d->wdirty;
    if (d->nosync && d->wdirty && d->nundo > d->ncommitted) {
      /* Committed, not durable: a crash may still undo it (the top). */
      if (d->nmarks == d->capmarks) {
        size_t cap = d->capmarks ? 2 * d->capmarks : 64;
        size_t *m = realloc(d->marks, cap * sizeof *m);
        if (m == NULL) {
          m_abort(ctx, t);
          *wrote = 0;
          return ENOMEM;
        }
        d->marks = m;
        d->capmarks = cap;
      }
      d->marks[d->nmarks++] = d->nundo;
      d->ncommitted = d->nundo;
      d->st.commits++;
    } else if (!d->nosync) {
      /* Durable from here, and so is every commit before it. */
      d->ncommitted = d->nundo;
      make_durable(d);
      if (d->wdirty) {
        d->st.commits++;
        d->st.syncs++;
      }
    }
    end_write(d);
  } else {
    d->readers--;
  }
  unlink_txn(d, t);
  return 0;
}

static int check(struct disk *d, struct kv_txn *t, unsigned db)
{
  if (!live(t))
    return KV_BADTXN;
  return db < d->ndb ? 0 : EINVAL;
}

static int m_get(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key,
                 struct kv_val *val)
{
  struct disk *d = ctx;
  int rc = check(d, t, db), eq;
  if (rc != 0)
    return rc;
  struct db *b = &d->db[db];
  size_t i = lower(b, key->data, key->len, &eq);
  if (!eq)
    return KV_NOTFOUND;
  *val = (struct kv_val){b->v[i]->vlen, b->v[i]->b + b->v[i]->klen};
  return 0;
}

/* Room in the undo log for one more change. */
static int grow_undo(struct disk *d)
{
  if (d->nundo < d->undocap)
    return 0;
  size_t cap = d->undocap ? 2 * d->undocap : 256;
  struct undo *u = realloc(d->undo, cap * sizeof *u);
  if (u == NULL)
    return ENOMEM;
  d->undo = u;
  d->undocap = cap;
  return 0;
}

/* Note a change (grow_undo() first). */
static void log_change(struct disk *d, unsigned db, struct item *old, struct item *new)
{
  d->undo[d->nundo++] = (struct undo){db, old, new};
  d->wdirty = 1;
}

static int m_put(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key,
                 struct kv_val *val, unsigned flags)
{
  struct disk *d = ctx;
  int rc = check(d, t, db), eq;
  if (rc != 0)
    return rc;
  if (t->rdonly)
    return EACCES;               /* as lmdb */
  struct db *b = &d->db[db];
  struct item *it;
  if (grow_undo(d) != 0 || grow(b) != 0 ||
      (it = malloc(sizeof *it + key->len + val->len)) == NULL)
    return ENOMEM;               /* nothing changed */
  it->klen = key->len;
  it->vlen = val->len;
  memcpy(it->b, key->data, key->len);
  if (flags & KV_RESERVE)
    memset(it->b + key->len, 0, val->len);   /* never last run's bytes */
  else if (val->len)
    memcpy(it->b + key->len, val->data, val->len);
  size_t i = lower(b, key->data, key->len, &eq);
  log_change(d, db, eq ? b->v[i] : NULL, it);
  if (eq)
    b->v[i] = it;                /* the same place: cursors keep theirs */
  else
    insert_at(b, i, it);
  if (flags & KV_RESERVE)
    val->data = it->b + it->klen;
  return 0;
}

static int del_at(struct disk *d, unsigned db, size_t i)
{
  struct db *b = &d->db[db];
  if (grow_undo(d) != 0)
    return ENOMEM;
  log_change(d, db, b->v[i], NULL);
  remove_at(b, i);
  return 0;
}

static int m_del(void *ctx, struct kv_txn *t, unsigned db, const struct kv_val *key)
{
  struct disk *d = ctx;
  int rc = check(d, t, db), eq;
  if (rc != 0)
    return rc;
  if (t->rdonly)
    return EACCES;
  size_t i = lower(&d->db[db], key->data, key->len, &eq);
  return eq ? del_at(d, db, i) : KV_NOTFOUND;
}

static int m_count(void *ctx, struct kv_txn *t, unsigned db, size_t *n)
{
  struct disk *d = ctx;
  int rc = check(d, t, db);
  *n = rc == 0 ? d->db[db].n : 0;
  return rc;
}

static int m_cursor(void *ctx, struct kv_txn *t, unsigned db, struct kv_cursor **out)
{
  struct disk *d = ctx;
  int rc = check(d, t, db);
  *out = NULL;
  if (rc != 0)
    return rc;
  struct kv_cursor *c = calloc(1, sizeof *c);
  if (c == NULL)
    return ENOMEM;
  c->t = t;
  c->db = db;
  c->next = d->curs;
  d->curs = c;
  *out = c;
  return 0;
}

/* Stand c on entry i and return it. */
static int stand(struct kv_cursor *c, struct db *b, size_t i, struct kv_val *key,
                 struct kv_val *val)
{
  struct item *it = b->v[i];
  if (it->klen > c->kcap) {
    unsigned char *k = realloc(c->key, it->klen);
    if (k == NULL)
      return ENOMEM;
    c->key = k;
    c->kcap = it->klen;
  }
  memcpy(c->key, it->b, it->klen);
  c->klen = it->klen;
  c->pos = 1;
  c->i = i;
  c->ver = b->ver;
  *key = (struct kv_val){it->klen, it->b};
  *val = (struct kv_val){it->vlen, it->b + it->klen};
  return 0;
}

static int m_cursor_get(void *ctx, struct kv_cursor *c, enum kv_op op,
                        struct kv_val *key, struct kv_val *val)
{
  struct disk *d = ctx;
  if (!live(c->t))
    return KV_BADTXN;
  struct db *b = &d->db[c->db];
  if (!c->pos && op == KV_NEXT)
    op = KV_FIRST;
  if (!c->pos && op == KV_PREV)
    op = KV_LAST;
  /* Where c stands now: i, if nothing moved since; else found by key
   * (*here: the entry is still there). */
  size_t i = c->i;
  int here = 1;
  if ((op == KV_NEXT || op == KV_PREV) && c->ver != b->ver)
    i = lower(b, c->key, c->klen, &here);
  switch (op) {
  case KV_FIRST:
    return b->n ? stand(c, b, 0, key, val) : KV_NOTFOUND;
  case KV_LAST:
    return b->n ? stand(c, b, b->n - 1, key, val) : KV_NOTFOUND;
  case KV_SEEK:
    i = lower(b, key->data, key->len, NULL);
    return i < b->n ? stand(c, b, i, key, val) : KV_NOTFOUND;
  case KV_NEXT:
    i += here;                    /* gone: the next one took its index */
    return i < b->n ? stand(c, b, i, key, val) : KV_NOTFOUND;
  case KV_PREV:
    return i > 0 ? stand(c, b, i - 1, key, val) : KV_NOTFOUND;
  }
  return EINVAL;
}

static int m_cursor_del(void *ctx, struct kv_cursor *c)
{
  struct disk *d = ctx;
  if (!live(c->t))
    return KV_BADTXN;
  if (c->t->rdonly)
    return EACCES;
  struct db *b = &d->db[c->db];
  int here = c->pos;
  size_t i = c->i;
  if (here && c->ver != b->ver)
    i = lower(b, c->key, c->klen, &here);
  if (!here)
    return KV_NOTFOUND;
  int rc = del_at(d, c->db, i);
  c->ver = b->ver - 1;            /* stale: the next move finds its place by key */
  return rc;
}

static void m_cursor_close(void *ctx, struct kv_cursor *c)
{
  struct disk *d = ctx;
  if (c == NULL)
    return;
  for (struct kv_cursor **p = &d->curs; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  free(c->key);
  free(c);
}

static const char *m_strerror(int rc)
{
  return rc > 0 ? strerror(rc) : "simulated disk error";
}

/* Nothing to do: the store aborted its transaction, and the disk keeps
 * its data. (Not even abort what is open: after a crash, a new store's
 * transaction may be the open one when the dead store is closed.) */
static void m_close(void *ctx)
{
  (void)ctx;
}

static int m_set_nosync(void *ctx, int on)
{
  struct disk *d = ctx;
  d->nosync = on != 0;
  d->kv.syncs_per_commit = d->nosync ? 0 : 1;
  return 0;
}

static int m_sync(void *ctx)
{
  struct disk *d = ctx;
  make_durable(d);
  d->st.syncs++;
  return 0;
}

static const struct kv_ops disk_ops = {
  .set_nosync = m_set_nosync, .sync = m_sync,
  .db = m_db, .begin = m_begin, .commit = m_commit, .abort = m_abort,
  .get = m_get, .put = m_put, .del = m_del, .count = m_count,
  .cursor = m_cursor, .cursor_get = m_cursor_get, .cursor_del = m_cursor_del,
  .cursor_close = m_cursor_close, .strerror = m_strerror, .close = m_close,
};

/* ---- the disk ------------------------------------------------------------ */

struct disk *disk_new(void)
{
  struct disk *d = calloc(1, sizeof *d);
  if (d == NULL)
    return NULL;
  d->kv.ops = &disk_ops;
  d->kv.ctx = d;
  d->kv.syncs_per_commit = 1;
  d->kv.syncs_per_sync = 1;
  return d;
}

struct kv *disk_kv(struct disk *d)
{
  return &d->kv;
}

void disk_crash_keep(struct disk *d, uint64_t r)
{
  d->st.crashes++;
  d->st.lost += d->nundo - d->ncommitted;
  undo_to(d, d->ncommitted);         /* the open transaction */
  /* Of the unsynced commits, a prefix reached the disk. */
  size_t keep = (size_t)(r % (d->nmarks + 1));
  size_t base = keep ? d->marks[keep - 1] : 0;
  d->st.lost += d->nundo - base;
  d->st.lost_commits += d->nmarks - keep;
  undo_to(d, base);
  d->ncommitted = d->nundo;          /* what is left is what the disk holds */
  make_durable(d);
  end_write(d);
  d->readers = 0;
  for (struct kv_txn *t = d->txns; t; t = t->next)
    t->dead = 1;
}

void disk_crash(struct disk *d)
{
  disk_crash_keep(d, 0);
}

void disk_free(struct disk *d)
{
  if (d == NULL)
    return;
  disk_crash(d);                  /* the open transaction never happened */
  while (d->curs)
    m_cursor_close(d, d->curs);
  while (d->txns) {
    struct kv_txn *t = d->txns;
    d->txns = t->next;
    free(t);
  }
  for (unsigned i = 0; i < d->ndb; i++) {
    for (size_t j = 0; j < d->db[i].n; j++)
      free(d->db[i].v[j]);
    free(d->db[i].v);
  }
  free(d->undo);
  free(d->marks);
  free(d);
}

int disk_corrupt_db(struct disk *d, const char *db, uint64_t r)
{
  struct db *b = NULL;
  for (unsigned i = 0; i < d->ndb; i++)
    if (strcmp(d->db[i].name, db) == 0)
      b = &d->db[i];
  if (b == NULL)
    return 0;
  size_t n = 0;                   /* values with a byte to damage */
  for (size_t i = 0; i < b->n; i++)
    n += b->v[i]->vlen > 0;
  if (n == 0)
    return 0;
  size_t pick = (size_t)(r % n);
  r /= n;
  for (size_t i = 0; i < b->n; i++) {
    struct item *it = b->v[i];
    if (it->vlen == 0 || pick-- > 0)
      continue;
    size_t byte = (size_t)(r % it->vlen);
    r /= it->vlen;
    it->b[it->klen + byte] ^= (unsigned char)(1u << (r % 8));
    break;
  }
  d->st.corruptions++;
  return 1;
}

int disk_corrupt(struct disk *d, uint64_t r)
{
  return disk_corrupt_db(d, "recs", r);
}

const struct disk_stats *disk_stats(const struct disk *d)
{
  return &d->st;
}

size_t disk_entries(const struct disk *d, const char *db)
{
  for (unsigned i = 0; i < d->ndb; i++)
    if (strcmp(d->db[i].name, db) == 0)
      return d->db[i].n;
  return 0;
}
