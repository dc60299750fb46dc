/*
 * roles.c: what the coordinator takes from whom (invariant 9, DESIGN.md
 * §4; the proofs are proof.h's, their cryptography auth.h's).
 *
 * The cluster key makes a process a member, nothing more. A member holding
 * it (every node, replica and tool has it) could, before roles, open the
 * volume as its writer (a signed epoch of its own, then a signed
 * truncation that emptied the volume), drop a volume under its running
 * writer, or keep a lost writer "alive" with lease probes of its epoch.
 * Here each of those needs a role:
 *
 *   R1 A writer epoch goes only to the operator (op_sig: an engine started
 *      by `cluster up` or by the operator carries DIR/operator.key) or to
 *      the replica the coordinator itself chose to promote (failover.c
 *      fo_open_check: its address and the key it announced in its beats),
 *      or to the current epoch's own writer retrying its open (the same
 *      key: it already holds the epoch). Those two keys are public (beats
 *      and Volume answers carry them), so a conditional open proves it
 *      holds the key it names (coord_key_proved: writer_sig on this
 *      connection); before, any member could send the current writer's
 *      public key with if_epoch and move the volume to a new epoch, which
 *      fenced the writer. And a conditional open creates no volume
 *      (coord_create_ok): before, a member's open with if_epoch of a name
 *      not yet created made it, with the member as its writer.
 *   R2 Drops, faults, journal notes and manual failovers need op_sig.
 *   R3 A volume with a live writer is never dropped (no force from the
 *      wire), and a dropped name comes back only by an explicit create
 *      (OpenVolume.recreate, `engine --create`), never as a side effect of
 *      an open: a next writer's open must not silently make an empty
 *      volume where acknowledged rows were.
 *   R4 A lease probe or an engine report counts as the writer's only with
 *      writer_sig by the key its epoch's ticket names (Volume.writer_pk,
 *      stored with the epoch): no other member can hold off failover or
 *      report in the writer's name. A probe without it is still answered
 *      (the header is no secret, and a fenced writer learns from it that
 *      it is fenced), it just proves nothing.
 *
 * A coordinator started without the operator's public key (no --operator)
 * refuses every R2 request and every writer-open: the cluster then has no
 * operator, and says so.
 */
#include <stdio.h>
#include <string.h>

#include "coord/coord.h"
#include "lib/log.h"
#include "param.h"
#include "net/proof.h"

int coord_op(struct coord *co, struct ep *c, const Env *env)
{
  const char *what = role_needs_op(env);
  if (what == NULL)
    return 1;
  char why[300];
  uint8_t bind[AUTH_BIND_BYTES];
  io_binding(co->io, c, bind);
  if (!co->have_op_pk)
    snprintf(why, sizeof why, "only the operator may %s, and this coordinator knows no "
             "operator (start it with --operator DIR/operator.pub)", what);
  else if (env->op_sig.len == 0)
    snprintf(why, sizeof why, "only the operator may %s: the request carries no operator "
             "signature (DIR/operator.key, made by `auralog cluster up`)", what);
  else if (!role_op_ok(co->op_pk, bind, env))
    snprintf(why, sizeof why, "only the operator may %s: the operator signature does not "
             "hold for this request on this connection", what);
  else
    return 1;
  logwarn_rl("refused: %s", why);
  io_error(co->io, c, env->req, ERR_AUTH, why);
  return 0;
}

int coord_writer(struct coord *co, struct ep *c, const Env *env, const Auralog__Volume *v,
                 uint64_t epoch)
{
  if (epoch != v->epoch || v->writer_pk.len != AUTH_PK_BYTES || env->writer_sig.len == 0)
    return 0;
  uint8_t bind[AUTH_BIND_BYTES];
  io_binding(co->io, c, bind);
  return role_writer_ok(v->writer_pk.data, v->writer_pk.len, bind, v->id, epoch, env);
}

int coord_key_proved(struct coord *co, struct ep *c, const Env *env)
{
  const Auralog__OpenVolume *ov = env->open_volume;
  if (ov->writer_pk.len != AUTH_PK_BYTES || env->writer_sig.len == 0)
    return 0;
  uint8_t bind[AUTH_BIND_BYTES];
  io_binding(co->io, c, bind);
  return role_writer_ok(ov->writer_pk.data, ov->writer_pk.len, bind, 0, ov->if_epoch, env);
}

int coord_create_ok(struct coord *co, struct ep *c, uint64_t req,
                    const Auralog__OpenVolume *ov)
{
  char why[300];
  /* R1: a promotion takes the next epoch of a volume that has one; an
   * open with if_epoch never creates (it needs no operator: it would be
   * a way around R1 for a name not yet made). */
  if (ov->writer && ov->if_epoch) {
    snprintf(why, sizeof why, "no volume '%s': a conditional open (if_epoch) takes the next "
             "epoch of an existing volume, it creates none", ov->name);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return 0;
  }
  if (!ov->create) {
    snprintf(why, sizeof why, "no volume '%s'", ov->name);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return 0;
  }
  if (!ov->recreate && meta_dropped(&co->meta, ov->name, 0)) {
    snprintf(why, sizeof why, "volume '%s' was dropped: opening it again makes a new, empty "
             "volume, so only on purpose (auralog engine --create)", ov->name);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return 0;
  }
  if (ov->recreate)
    meta_dropped(&co->meta, ov->name, 1);
  return 1;
}

void coord_on_drop(struct coord *co, struct ep *c, uint64_t req, const Auralog__DropVolume *d)
{
  char why[300];
  size_t i;
  for (i = 0; i < co->nvols && strcmp(co->vols[i]->name, d->name) != 0; i++)
    ;
  if (i == co->nvols) {
    snprintf(why, sizeof why, "no volume '%s'", d->name);
    io_error(co->io, c, req, ERR_NOT_FOUND, why);
    return;
  }
  /* R3: a writer that reported lately holds the volume. Dropping it under
   * a running engine loses its acknowledged rows for good, so never: the
   * writer stops first (`force` on the wire is ignored). */
  struct ereport *er = &co->engines[i];
  unsigned long long age = io_now(co->io) - er->at;
  if (er->st && age < ENGINE_HOLD_MS) {
    snprintf(why, sizeof why, "volume '%s' is held by its writer (engine %s, epoch %llu, "
             "reported %llu ms ago): stop the writer first", d->name, er->st->addr,
             (unsigned long long)er->st->epoch, age);
    io_error(co->io, c, req, ERR_CONFLICT, why);
    return;
  }
  if (meta_del_volume(&co->meta, d->name, why, sizeof why) != 0) {
    io_error(co->io, c, req, ERR_INTERNAL, why);
    return;
  }
  char name[NAME_MAX_LEN + 1];
  snprintf(name, sizeof name, "%s", d->name);
  auralog__volume__free_unpacked(co->vols[i], NULL);
  if (co->engines[i].st)
    auralog__engine_stat__free_unpacked(co->engines[i].st, NULL);
  memmove(&co->vols[i], &co->vols[i + 1], (co->nvols - i - 1) * sizeof *co->vols);
  memmove(&co->engines[i], &co->engines[i + 1], (co->nvols - i - 1) * sizeof *co->engines);
  co->nvols--;
  loginfo("volume %s dropped by the operator (its segments stay on the nodes)", name);
  jn_event(co, "voldrop", "\"volume\":\"%s\"", name);
  coord_reply_ok(co, c, req);
}
