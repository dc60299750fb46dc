/*
 * objstore_int.h: what a backend of objstore.h provides. objstore.c
 * checks keys and arguments, picks the backend from the url and calls
 * through this table; a backend sees only valid keys.
 *
 * Backends: objstore_dir.c (dir_open), objstore_s3.c (s3_open). The
 * simulator's store (sim/) is a third, in memory, with faults.
 */
#ifndef AURALOG_OBJSTORE_INT_H
#define AURALOG_OBJSTORE_INT_H

#include "backup/objstore.h"

struct obj_ops {
  int (*put)(void *impl, const char *key, const void *data, size_t len, char *why,
             size_t whylen);
  int (*get)(void *impl, const char *key, uint8_t **data, size_t *len, char *why,
             size_t whylen);
  int (*list)(void *impl, const char *prefix, obj_list_fn fn, void *arg, char *why,
              size_t whylen);
  int (*del)(void *impl, const char *key, char *why, size_t whylen);
  void (*close)(void *impl);
};

struct objstore {
  const struct obj_ops *ops;
  void *impl;
  char desc[300];
};

/* Each fills o (ops, impl, desc) from what follows its scheme in the url
 * ("dir:" stripped, or the whole plain path; "s3://" stripped): 0, or -1
 * with why. */
int dir_open(struct objstore *o, const char *path, char *why, size_t whylen);
int s3_open(struct objstore *o, const char *bucket_and_prefix, char *why, size_t whylen);

/* A listing as a backend gathers it (keys in any order, perhaps twice):
 * obj_keys_add one; obj_keys_emit sorts them, calls fn once per key in
 * byte order (until it returns nonzero, which it returns), and frees them;
 * obj_keys_free frees them without a call (a listing that failed).
 * Every backend's obj_list order is this one. */
struct obj_key {
  char *k;
  uint64_t size;
};
struct obj_keys {
  struct obj_key *v;
  size_t n, cap;
};
void obj_keys_add(struct obj_keys *ks, const char *key, uint64_t size);
int obj_keys_emit(struct obj_keys *ks, obj_list_fn fn, void *arg);
void obj_keys_free(struct obj_keys *ks);

/* A store from a backend's own table (the simulator's). */
struct objstore *obj_wrap(const struct obj_ops *ops, void *impl, const char *desc);

#endif
