/*
 * weed.h: SeaweedFS for the integration tests (weed.c), the S3-compatible
 * server scripts/seaweedfs.sh installs (`make test` runs it): started on
 * loopback in DIR/weed on ports PORT .. PORT + 7 of the test's own, with
 * two identities (AK/SK may do anything, READER_AK/READER_SK only read
 * and list), and stopped with its whole process group.
 *
 *   weed_where    where it lives and listens (before weed_up)
 *   weed_up       start it once and wait for its S3 gateway to answer a
 *                 signed request (the test fails, saying why, if it cannot;
 *                 if weed is not installed: run scripts/deps.sh --test)
 *   weed_down     stop it (kill its process group, remove its sockets)
 *   weed_keys     AURALOG_S3_ENDPOINT and the AWS_* keys in our environment,
 *                 which every process a test starts inherits
 */
#ifndef AURALOG_WEED_H
#define AURALOG_WEED_H

#include <sys/types.h>

#define WEED_DEFAULT "/usr/local/lib/auralog/seaweedfs-4.48/weed"
#define AK "auralogtest"
#define SK "s3cret-for-tests-only"
#define READER_AK "auralogreader"
#define READER_SK "reader-secret"

void weed_where(const char *dir, int port);
const char *weed_path(void);
const char *weed_endpoint(void);
void weed_up(void);
void weed_down(void);
pid_t weed_pid_now(void);      /* 0: not running */
void weed_keys(const char *ak, const char *sk);

#endif
