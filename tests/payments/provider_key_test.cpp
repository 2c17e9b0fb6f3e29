// The provider idempotency keys' derivation against vectors computed independently, with Python's
// hmac module (the format the fault suite's checker recomputes):
//   python3 -c 'import hmac,hashlib; print(hmac.new(b"0123456789abcdef0123456789abcdef",
//               b"charge\n42\norder-2026-11-26-0001", hashlib.sha256).hexdigest())'
#include <boost/test/unit_test.hpp>

#include "common/payments/provider_key.hpp"

namespace {
constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr const char* kClientKey = "order-2026-11-26-0001";
}  // namespace

BOOST_AUTO_TEST_SUITE(provider_key)

BOOST_AUTO_TEST_CASE(a_charge_key_is_the_hmac_of_user_and_client_key_in_lowercase_hex) {
  BOOST_TEST(rr::payments::charge_provider_key(kSecret, 42, kClientKey) ==
             "rr-ch-ebb406cd64b7ebc1905f40cbd6e1283bf39255f5a87e3034095c72b7c63f99a2");
}

BOOST_AUTO_TEST_CASE(a_refund_key_is_the_hmac_of_user_and_charge_id) {
  BOOST_TEST(rr::payments::refund_provider_key(kSecret, 42, "ch_1a2b3c4d5e6f") ==
             "rr-re-c6ec63d33d2c21f6ce23cc71dfbb088451773675e0c643164040b09699db48bd");
}

BOOST_AUTO_TEST_CASE(another_secret_or_another_user_gives_another_key) {
  BOOST_TEST(rr::payments::charge_provider_key("another-deployment-secret-of-32-bytes", 42, kClientKey) ==
             "rr-ch-81e612f2846853ab5b1321bf7623218667c515f53442ae8f73ebbfaf65b4f0a6");
  BOOST_TEST(rr::payments::charge_provider_key(kSecret, 43, kClientKey) ==
             "rr-ch-f6f9cdcdc5e5fbe70db44303c4fd019c014b2e22454e74262add86a4c94b26ad");
}

BOOST_AUTO_TEST_CASE(a_charge_and_a_refund_of_the_same_text_never_share_a_key) {
  // The operation is part of the message, not only of the prefix.
  auto charge = rr::payments::charge_provider_key(kSecret, 42, "ch_1a2b3c4d5e6f");
  auto refund = rr::payments::refund_provider_key(kSecret, 42, "ch_1a2b3c4d5e6f");
  BOOST_TEST(charge.substr(6) != refund.substr(6));
}

// The start-up check's fingerprint (provider_key_fingerprint.hpp): HMAC-SHA256 of a fixed label,
// computed independently with `openssl dgst -sha256 -hmac SECRET`.
BOOST_AUTO_TEST_CASE(the_fingerprint_is_the_hmac_of_a_fixed_label_and_never_the_secret) {
  const std::string fingerprint =
      rr::payments::provider_key_fingerprint("provider-key-fingerprint-test-0123456789abcdef");
  BOOST_TEST(fingerprint == "4d4fd1f7b2ab0fef33c9801ddaa6ed1264b7b24ed271f25b7f917b11df0b6b41");
  BOOST_TEST(rr::payments::provider_key_fingerprint("another-secret") != fingerprint);
}

BOOST_AUTO_TEST_SUITE_END()
