/* PLACEHOLDER (replaced before this lands): the s3 backend. */
#include <stdio.h>
#include "backup/objstore_int.h"
int s3_open(struct objstore *o, const char *bp, char *why, size_t whylen)
{
  (void)o;
  snprintf(why, whylen, "s3 backend for %s: not written yet", bp);
  return -1;
}
