/*
 * test_auth.c: the cluster key's proofs, frame tags and signatures
 * (src/auth.c), as a peer trying to get in without the key would try them:
 *
 *  - a proof made with another key, or reflected (the listener's proof
 *    sent back as the connector's), is refused;
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

#include "auth.h"
#include "keyfile.h"

static void key_of(struct auth_key *k, uint8_t b)
{
  memset(k->k, b, sizeof k->k);
}

static void proofs_need_the_key_and_cannot_be_reflected(void **state)
{
  (void)state;
  struct auth_key k, other;
  key_of(&k, 1);
  key_of(&other, 2);
  uint8_t ln[AUTH_NONCE_BYTES], cn[AUTH_NONCE_BYTES], p[AUTH_PROOF_BYTES];
  auth_random(ln, sizeof ln);
  auth_random(cn, sizeof cn);

  auth_proof(&k, 0, ln, cn, p);
  assert_true(auth_proof_ok(&k, 0, ln, cn, p, sizeof p));
  assert_false(auth_proof_ok(&other, 0, ln, cn, p, sizeof p));   /* wrong key */
  assert_false(auth_proof_ok(&k, 1, ln, cn, p, sizeof p));       /* reflected */
  assert_false(auth_proof_ok(&k, 0, ln, cn, p, sizeof p - 1));   /* short */
  uint8_t ln2[AUTH_NONCE_BYTES];
  memcpy(ln2, ln, sizeof ln2);
  ln2[0] ^= 1;
  assert_false(auth_proof_ok(&k, 0, ln2, cn, p, sizeof p));      /* replayed */
}

static void frames_are_tagged_in_order_per_connection(void **state)
{
  (void)state;
  struct auth_key k;
  key_of(&k, 1);
  uint8_t ln[AUTH_NONCE_BYTES], cn[AUTH_NONCE_BYTES];
  auth_random(ln, sizeof ln);
  auth_random(cn, sizeof cn);
  struct auth_sess lis, con, other;
  auth_session(&k, 1, ln, cn, &lis);
  auth_session(&k, 0, ln, cn, &con);
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
  cn[0] ^= 1;
  auth_session(&k, 1, ln, cn, &other);
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
    cmocka_unit_test(proofs_need_the_key_and_cannot_be_reflected),
    cmocka_unit_test(frames_are_tagged_in_order_per_connection),
    cmocka_unit_test(signatures_hold_only_for_what_was_signed),
    cmocka_unit_test(key_files_are_private_and_never_overwritten),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
