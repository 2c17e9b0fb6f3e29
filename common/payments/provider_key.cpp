// HMAC-SHA256 derivation of provider idempotency keys. The format is fixed: the fault suite's
// checker recomputes it, and a changed format would change the keys of requests in flight.
#include "common/payments/provider_key.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>
#include <string>

#include "common/auth/tokens.hpp"

namespace rr::payments {
namespace {

std::string hmac_sha256_hex(std::string_view secret, const std::string& message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length)) {
    throw std::runtime_error("HMAC-SHA256 is not available from OpenSSL");
  }
  return auth::to_hex(std::string_view(reinterpret_cast<const char*>(digest), length));
}

std::string derive(std::string_view prefix, std::string_view operation, std::string_view secret, std::int64_t user_id,
                   std::string_view identity) {
  std::string message;
  message.reserve(operation.size() + identity.size() + 24);
  message.append(operation).append("\n").append(std::to_string(user_id)).append("\n").append(identity);
  return std::string(prefix) + hmac_sha256_hex(secret, message);
}

}  // namespace

std::string charge_provider_key(std::string_view secret, std::int64_t user_id, std::string_view client_key) {
  return derive("rr-ch-", "charge", secret, user_id, client_key);
}

std::string refund_provider_key(std::string_view secret, std::int64_t user_id, std::string_view charge_id) {
  return derive("rr-re-", "refund", secret, user_id, charge_id);
}

std::string provider_key_fingerprint(std::string_view secret) {
  // A fixed label, no request in it: the same secret gives the same fingerprint in every process.
  return hmac_sha256_hex(secret, "rocket-rides provider key fingerprint v1");
}

}  // namespace rr::payments
