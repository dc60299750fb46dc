/*
 * promote.c: a read replica's side of failover (coord/failover.c has the
 * rules, F1-F5; paper §4.3 for recovery, seed 002 for Aurora's failover to
 * a replica).
 *
 * Every ENGINE_STAT_MS, on the replica's loop, a ReplicaBeat to the
 * coordinator (its address, read point and writer's epoch) on a conn of
 * its own, reconnected after RECONNECT_MS. The answer (Writer) names the
 * volume's writer: a replica whose writer moved (a failover elsewhere)
 * follows the new one (replica.c replica_writer_moved: subscribe there,
 * start over from storage, rvol.h R4). An answer with promote set makes
 * this replica the writer:
 *
 *   The process becomes `auralog engine` with the same volume, address,
 *   coordinator, key, cache and statement timeout, plus --if-epoch N (the
 *   lost writer's epoch), by exec: the same pid, so `auralog cluster`
 *   still knows it. So the promoted writer runs exactly the engine's own
 *   open (new epoch, the recovery of vfs/open.c, the read lease, the
 *   server) and nothing of the replica survives into it:
 *
 *   P1 Recovery works from storage only. The replica's buffer cache, its
 *      apply state and SQLite's page caches are gone with the old image;
 *      a replica that was behind (or whose stream broke) is promoted as
 *      safely as one that was current (failover.c F5). Reusing the cache
 *      would need it rebuilt as of the recovered VDL, which may be above
 *      the replica's read point (records it never applied) or below it
 *      (none: its read point never passes a VDL, and recovery keeps every
 *      record at or below a VDL any writer told, open.c).
 *   P2 One epoch to one writer: the open is conditional (if_epoch), so if
 *      another replica was promoted first, this open is refused and the
 *      process exits (`cluster up` brings it back as a replica).
 *   P3 Clients lose their connections (they were on a read-only replica,
 *      and its listener is the writer's now); `auralog sql` finds the
 *      writer through the coordinator.
 *
 * Interface (engine_int.h): promote_start(addr) once, before the loop
 * runs; promote_tick() from the replica's tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "net/net.h"
#include "param.h"
#include "net/proof.h"
#include "vfs/engine_int.h"
#include "vfs/rvol.h"

static struct {
  char addr[ADDR_MAX_LEN + 1];     /* where this replica serves SQL */
  char writer[ADDR_MAX_LEN + 1];   /* E.writer points here once it moved */
  struct conn *c;                  /* to the coordinator */
  unsigned long long retry_at;
  int promoting;
  /* The key this replica would write with: its beats announce it (and
   * prove it), the engine it becomes opens with it, and the coordinator
   * gives the epoch only to the key of the replica it chose
   * (coord/failover.c fo_open_check). */
  uint8_t seed[AUTH_SEED_BYTES];
  struct auth_signer signer;
} P;

/* Become the writer: exec `auralog engine` (P1-P3 above). Returns only if
 * exec failed. */
static void become_writer(uint64_t if_epoch)
{
  char buf[16384], epoch[32], *args[256];
  int fd = open("/proc/self/cmdline", O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n <= 0) {
    logwarn("promote: cannot read my command line: %s", strerror(errno));
    return;
  }
  buf[n] = 0;
  /* argv as started: auralog replica [options]. The replica's options are
   * the engine's, but --engine (its writer); the ones appended last win. */
  int na = 0;
  for (ssize_t i = 0; i < n && na < 240; i += (ssize_t)strlen(buf + i) + 1) {
    char *a = buf + i;
    if (strcmp(a, "--engine") == 0) {
      i += (ssize_t)strlen(a) + 1;   /* and its value */
      continue;
    }
    if (strncmp(a, "--engine=", 9) == 0)
      continue;
    char *arg = na == 1 && strcmp(a, "replica") == 0 ? "engine" : a;
    args[na++] = arg;
  }
  snprintf(epoch, sizeof epoch, "%llu", (unsigned long long)if_epoch);
  args[na++] = "--volume";
  args[na++] = E.volume;
  args[na++] = "--listen";
  args[na++] = P.addr;
  args[na++] = "--coord";
  args[na++] = (char *)E.coord;
  args[na++] = "--if-epoch";
  args[na++] = epoch;
  args[na] = NULL;
  char hex[2 * AUTH_SEED_BYTES + 1];
  auth_hex(P.seed, sizeof P.seed, hex);
  setenv("AURALOG_WRITER_SEED", hex, 1);   /* volume.c writer_signer */
  loginfo("promoted by the coordinator: becoming the writer of volume %s from epoch %llu "
          "(the cache is dropped: recovery works from storage)", E.volume,
          (unsigned long long)if_epoch);
  fflush(NULL);
  /* Nothing of the replica's survives the exec (P1): not its connections
   * to the nodes and the writer, nor descriptors inherited at its start. */
  long maxfd = sysconf(_SC_OPEN_MAX);
  for (long f = 3; f < (maxfd > 0 && maxfd < 65536 ? maxfd : 65536); f++)
    fcntl((int)f, F_SETFD, FD_CLOEXEC);
  execv("/proc/self/exe", args);
  logwarn("promote: cannot exec the engine: %s", strerror(errno));
}

static void on_answer(struct conn *c, const Env *env)
{
  (void)c;
  if (env->body_case == AURALOG__ENVELOPE__BODY_ERROR) {
    logwarn_rl("failover: the coordinator refused a beat: %s", env->error->msg);
    return;
  }
  if (env->body_case != AURALOG__ENVELOPE__BODY_WRITER)
    return;
  const Auralog__Writer *w = env->writer;
  if (w->promote && w->if_epoch && !P.promoting) {
    P.promoting = 1;
    become_writer(w->if_epoch);
    die("replica: promotion failed (see above)");
  }
  /* The writer moved (a failover): follow it (rvol.h R4 starts over). */
  if (w->addr[0] && strcmp(w->addr, E.writer) != 0 && strcmp(w->addr, P.addr) != 0) {
    loginfo("the writer of volume %s is now %s (epoch %llu): following it", E.volume, w->addr,
            (unsigned long long)w->epoch);
    snprintf(P.writer, sizeof P.writer, "%s", w->addr);
    E.writer = P.writer;
    replica_writer_moved();
  }
}

static void on_closed(struct conn *c)
{
  if (P.c != c)
    return;
  P.c = NULL;
  P.retry_at = now_ms() + RECONNECT_MS;
}

static void beat(void)
{
  if (P.c == NULL || !P.c->connected)
    return;
  struct rvol_stats st;
  rvol_get_stats(E.rvol, &st);
  Env env = AURALOG__ENVELOPE__INIT;
  Auralog__ReplicaBeat b = AURALOG__REPLICA_BEAT__INIT;
  b.volume = E.volume;
  b.addr = P.addr;
  b.applied = st.rp;
  b.epoch = st.epoch;
  b.writer_pk = (ProtobufCBinaryData){AUTH_PK_BYTES, P.signer.pk};
  env.req = 1;
  env.body_case = AURALOG__ENVELOPE__BODY_REPLICA_BEAT;
  env.replica_beat = &b;
  uint8_t sig[AUTH_SIG_BYTES];
  role_writer_seal(&env, &P.signer, P.c->bind, 0, 0, sig);   /* it holds the key */
  conn_send(P.c, &env);
}

static void on_connected(struct conn *c, int status)
{
  if (status == 0 && c == P.c)
    beat();
}

void promote_start(const char *addr)
{
  snprintf(P.addr, sizeof P.addr, "%s", addr);
  auth_init();
  auth_random(P.seed, sizeof P.seed);
  auth_signer_seed(&P.signer, P.seed);
}

void promote_tick(void)
{
  if (P.c == NULL) {
    if (now_ms() >= P.retry_at) {
      P.c = net_connect(E.loop, E.coord, on_connected, on_answer, on_closed, NULL);
      if (P.c == NULL)
        P.retry_at = now_ms() + RECONNECT_MS;
    }
    return;
  }
  beat();
}
