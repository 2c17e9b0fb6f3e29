// Token generation and hashing.
#include "common/auth/tokens.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/random.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace rr::auth {
namespace {
constexpr std::string_view kPrefix = "rr_";
constexpr std::size_t kRandomBytes = 32;
}  // namespace

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

std::string generate_token() {
  std::string random(kRandomBytes, '\0');
  std::size_t filled = 0;
  while (filled < random.size()) {
    ssize_t n = getrandom(random.data() + filled, random.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    filled += static_cast<std::size_t>(n);
  }
  return std::string(kPrefix) + to_hex(random);
}

bool looks_like_token(std::string_view token) {
  if (token.size() != kPrefix.size() + kRandomBytes * 2 || !token.starts_with(kPrefix)) return false;
  for (char c : token.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string token_prefix(std::string_view token) { return std::string(token.substr(0, kTokenPrefixLength)); }

std::string sha256(std::string_view data) {
  // OpenSSL 3's SHA256() looks the algorithm up on every call (EVP_MD_fetch), which cost more than
  // hashing a token: every authenticated request hashes its token to find its user in the cache.
  // The context is each thread's own and reused (EVP_Digest makes and frees one per call).
  static EVP_MD* const algorithm = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  struct Context {
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(context); }
  };
  thread_local Context reused;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  unsigned int length = 0;
  if (!algorithm || !reused.context || EVP_DigestInit_ex2(reused.context, algorithm, nullptr) != 1 ||
      EVP_DigestUpdate(reused.context, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(reused.context, digest, &length) != 1) {
    throw std::runtime_error("SHA-256 is not available from OpenSSL");
  }
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string log_tag(std::string_view secret) { return to_hex(sha256(secret)).substr(0, 12); }

}  // namespace rr::auth
