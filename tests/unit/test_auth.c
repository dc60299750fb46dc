/*
 * test_auth.c: the cluster key's proofs, frame tags and signatures
 * (src/net/auth.c), as a peer trying to get in without the key would try them:
 *
 *  - a proof made with another key, reflected (the listener's proof sent
 *    back as the connector's), or relayed (made for a listener on another
 *    address) is refused, and a connector accepts only the address it
 *    dialed;
 *  - both ends of a handshake derive the same keys, one per direction;
 *  - a frame tag is refused for an altered frame, a replayed frame, frames
 *    out of order, or a frame from another connection;
 *  - a ticket, a truncation or a registration verifies only for exactly
 *    what was signed, and only under the signer's key;
 *  - a key file that others may read is refused, as is one that is not 64
 *    hex digits; cluster up's key_create never overwrites one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/auth.h"
#include "net/keyfile.h"
#include "lib/addr.h"

static void key_of(struct auth_key *k, uint8_t b)
{
  memset(k->k, b, sizeof k->k);
}

static void handshake(struct auth_hs *h, const char *addr)
{
  auth_random(h->ln, sizeof h->ln);
  auth_random(h->cn, sizeof h->cn);
  snprintf(h->addr, sizeof h->addr, "%s", addr);
}

static void proofs_need_the_key_and_cannot_be_reflected_or_relayed(void **state)
{
  (void)state;
  struct auth_key k, other;
  key_of(&k, 1);
  key_of(&other, 2);
  struct auth_hs h, h2;
  uint8_t p[AUTH_PROOF_BYTES];
  handshake(&h, "127.0.0.1:7401");

  auth_proof(&k, 0, &h, p);
  assert_true(auth_proof_ok(&k, 0, &h, p, sizeof p));
  assert_false(auth_proof_ok(&other, 0, &h, p, sizeof p));   /* wrong key */
  assert_false(auth_proof_ok(&k, 1, &h, p, sizeof p));       /* reflected */
  assert_false(auth_proof_ok(&k, 0, &h, p, sizeof p - 1));   /* short */
  h2 = h;
  h2.ln[0] ^= 1;
  assert_false(auth_proof_ok(&k, 0, &h2, p, sizeof p));      /* replayed */
  /* Relayed: the same nonces, but the listener serves another address. */
  h2 = h;
  snprintf(h2.addr, sizeof h2.addr, "127.0.0.1:7402");
  assert_false(auth_proof_ok(&k, 0, &h2, p, sizeof p));
  auth_proof(&k, 1, &h, p);
  assert_false(auth_proof_ok(&k, 1, &h2, p, sizeof p));

  /* The connector checks the address served is the one it dialed. */
  assert_true(addr_match("127.0.0.1:7401", "127.0.0.1:7401"));
  assert_true(addr_match("0.0.0.0:7401", "10.77.0.11:7401"));
  assert_true(addr_match("localhost:7401", "127.0.0.1:7401"));
  assert_false(addr_match("127.0.0.1:7402", "127.0.0.1:7401"));
  assert_false(addr_match("10.77.0.21:7401", "10.77.0.11:7401"));
  assert_false(addr_match("garbage", "127.0.0.1:7401"));
}

static void frames_are_tagged_in_order_per_connection(void **state)
{
  (void)state;
  struct auth_key k;
  key_of(&k, 1);
  struct auth_hs h;
  handshake(&h, "127.0.0.1:7401");
  struct auth_sess lis, con, other;
  auth_session(&k, 1, &h, &lis);
  auth_session(&k, 0, &h, &con);
  assert_memory_equal(lis.send_key, con.recv_key, 32);
  assert_memory_equal(lis.recv_key, con.send_key, 32);
  assert_memory_not_equal(lis.send_key, lis.recv_key, 32);

  uint8_t f1[] = "frame one", f2[] = "frame two", t1[AUTH_TAG_BYTES], t2[AUTH_TAG_BYTES];
  auth_seal(&con, f1, sizeof f1, t1);
  auth_seal(&con, f2, sizeof f2, t2);
  /* Out of order: the second first. */
  assert_false(auth_check(&lis, f2, sizeof f2, t2));
  /* Altered. */
  f1[0] ^= 1;
  assert_false(auth_check(&lis, f1, sizeof f1, t1));
  f1[0] ^= 1;
  assert_true(auth_check(&lis, f1, sizeof f1, t1));
  /* Replayed. */
  assert_false(auth_check(&lis, f1, sizeof f1, t1));
  assert_true(auth_check(&lis, f2, sizeof f2, t2));
  /* Another connection (other nonces) takes none of them. */
  h.cn[0] ^= 1;
  auth_session(&k, 1, &h, &other);
  assert_false(auth_check(&other, f1, sizeof f1, t1));
}

static void signatures_hold_only_for_what_was_signed(void **state)
{
  (void)state;
  struct auth_signer coord, writer, stranger;
  uint8_t seed[AUTH_SEED_BYTES];
  memset(seed, 1, sizeof seed);
  auth_signer_seed(&coord, seed);
  memset(seed, 2, sizeof seed);
  auth_signer_seed(&writer, seed);
  auth_signer_new(&stranger);
  uint8_t sig[AUTH_SIG_BYTES];

  auth_ticket_sign(&coord, 7, 3, writer.pk, sig);
  assert_true(auth_ticket_ok(coord.pk, 7, 3, writer.pk, AUTH_PK_BYTES, sig, sizeof sig));
  assert_false(auth_ticket_ok(coord.pk, 7, 4, writer.pk, AUTH_PK_BYTES, sig, sizeof sig));
  assert_false(auth_ticket_ok(coord.pk, 8, 3, writer.pk, AUTH_PK_BYTES, sig, sizeof sig));
  assert_false(auth_ticket_ok(coord.pk, 7, 3, stranger.pk, AUTH_PK_BYTES, sig, sizeof sig));
  assert_false(auth_ticket_ok(stranger.pk, 7, 3, writer.pk, AUTH_PK_BYTES, sig, sizeof sig));
  assert_false(auth_ticket_ok(coord.pk, 7, 3, writer.pk, AUTH_PK_BYTES, NULL, 0));

  auth_trunc_sign(&writer, 7, 3, 100, 200, sig);
  assert_true(auth_trunc_ok(writer.pk, AUTH_PK_BYTES, 7, 3, 100, 200, sig, sizeof sig));
  assert_false(auth_trunc_ok(writer.pk, AUTH_PK_BYTES, 7, 3, 0, 200, sig, sizeof sig));
  assert_false(auth_trunc_ok(writer.pk, AUTH_PK_BYTES, 7, 3, 100, 300, sig, sizeof sig));
  assert_false(auth_trunc_ok(stranger.pk, AUTH_PK_BYTES, 7, 3, 100, 200, sig, sizeof sig));
  /* A ticket's signature is not a truncation's: labels differ. */
  auth_ticket_sign(&writer, 7, 3, writer.pk, sig);
  assert_false(auth_trunc_ok(writer.pk, AUTH_PK_BYTES, 7, 3, 100, 200, sig, sizeof sig));

  auth_id_sign(&writer, "A1", "A", "127.0.0.1:7401", sig);
  assert_true(auth_id_ok(writer.pk, AUTH_PK_BYTES, "A1", "A", "127.0.0.1:7401", sig, sizeof sig));
  assert_false(auth_id_ok(writer.pk, AUTH_PK_BYTES, "A1", "A", "127.0.0.1:9999", sig, sizeof sig));
  assert_false(auth_id_ok(writer.pk, AUTH_PK_BYTES, "A1A", "", "127.0.0.1:7401", sig, sizeof sig));
  assert_false(auth_id_ok(stranger.pk, AUTH_PK_BYTES, "A1", "A", "127.0.0.1:7401", sig, sizeof sig));
}

static void key_files_are_private_and_never_overwritten(void **state)
{
  (void)state;
  char path[64], why[512];
  snprintf(path, sizeof path, "/tmp/auralog-unit-auth-%d.key", (int)getpid());
  unlink(path);
  struct auth_key a, b;
  assert_int_equal(key_create(path, why, sizeof why), 0);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(key_read(path, &a, why, sizeof why), 0);
  assert_int_equal(key_create(path, why, sizeof why), 0);   /* there already: kept */
  assert_int_equal(key_read(path, &b, why, sizeof why), 0);
  assert_memory_equal(a.k, b.k, sizeof a.k);

  chmod(path, 0644);
  assert_int_equal(key_read(path, &a, why, sizeof why), -1);
  assert_non_null(strstr(why, "chmod 600"));
  chmod(path, 0600);
  FILE *f = fopen(path, "w");
  fputs("not a key\n", f);
  fclose(f);
  assert_int_equal(key_read(path, &a, why, sizeof why), -1);
  assert_non_null(strstr(why, "64 hex digits"));
  unlink(path);
}

int main(void)
{
  assert_int_equal(auth_init(), 0);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(proofs_need_the_key_and_cannot_be_reflected_or_relayed),
    cmocka_unit_test(frames_are_tagged_in_order_per_connection),
    cmocka_unit_test(signatures_hold_only_for_what_was_signed),
    cmocka_unit_test(key_files_are_private_and_never_overwritten),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
