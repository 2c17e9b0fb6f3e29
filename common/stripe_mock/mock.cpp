// The stand-in provider's request path: latency, Bearer auth, injected failures and drops, and
// Stripe's idempotency-key semantics around the endpoints in resources.cpp.
#include "common/stripe_mock/mock.hpp"

#include <algorithm>
#include <optional>
#include <thread>

#include "common/base/log.hpp"
#include "common/http/client.hpp"
#include "common/http/server.hpp"
#include "common/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

std::optional<std::string> bearer_token(const http::Request& request) {
  auto header = request.header("Authorization");
  if (!header || header->size() <= 7 || !http::iequals(header->substr(0, 7), "Bearer ")) return std::nullopt;
  return std::string(header->substr(7));
}

bool has_header(const http::Response& response, std::string_view name) {
  return std::any_of(response.headers.begin(), response.headers.end(),
                     [&](const auto& header) { return http::iequals(header.first, name); });
}

}  // namespace

Mock::Mock(std::string api_key, Faults faults, std::uint64_t seed)
    : api_key_(std::move(api_key)), initial_faults_(faults), seed_(seed), faults_(faults), random_(seed) {}

http::Response Mock::handle(const http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  http::Response response;
  try {
    response = route(request);
  } catch (const std::exception& e) {
    log::error("stripe mock failed", {{"path", request.path}, {"error", e.what()}});
    response = stripe_error(500, "api_error", "An unknown error occurred.");
  }
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  // Never the Authorization header: it carries the secret key.
  log::info("request", {{"method", request.method},
                        {"path", request.path},
                        {"status", response.status},
                        {"replayed", has_header(response, "Idempotent-Replayed")},
                        {"dropped", has_header(response, http::kDropConnectionHeader)},
                        {"duration", elapsed}});
  return response;
}

http::Response Mock::route(const http::Request& request) {
  if (request.path.starts_with("/_mock/")) return admin(request);
  if (request.path.starts_with("/v1/")) return api(request);
  return stripe_error(404, "invalid_request_error",
                      "Unrecognized request URL (" + request.method + ": " + request.path + ").");
}

bool Mock::authorized(const http::Request& request) const {
  auto token = bearer_token(request);
  return token && (api_key_.empty() || *token == api_key_);
}

http::Response Mock::api(const http::Request& request) {
  std::chrono::milliseconds latency;
  {
    std::lock_guard lock(mutex_);
    ++stats_.requests;
    latency = faults_.latency;
  }
  // Outside the lock: a slow provider is slow for everyone at once, not one request at a time.
  if (latency.count() > 0) std::this_thread::sleep_for(latency);

  auto token = bearer_token(request);
  if (!token) {
    return stripe_error(401, "invalid_request_error",
                        "You did not provide an API key. You need to provide your API key in the Authorization "
                        "header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').");
  }
  if (!authorized(request)) return stripe_error(401, "invalid_request_error", "Invalid API Key provided.");

  std::string endpoint = request.method + " " + request.path;
  bool is_charge = endpoint == "POST /v1/charges";
  if (!is_charge && endpoint != "POST /v1/customers") {
    return stripe_error(404, "invalid_request_error",
                        "Unrecognized request URL (" + request.method + ": " + request.path + ").");
  }
  Params params;
  if (!http::form_decode(request.body, params)) {
    return stripe_error(400, "invalid_request_error",
                        "Invalid request body: expected application/x-www-form-urlencoded parameters.");
  }
  std::sort(params.begin(), params.end());
  std::string key(request.header("Idempotency-Key").value_or(""));
  if (key.size() > 255) {
    return stripe_error(400, "invalid_request_error", "Idempotency-Key must be at most 255 characters long.");
  }

  std::lock_guard lock(mutex_);
  if (is_charge && roll(faults_.failure_rate)) {
    ++stats_.failures_injected;
    return stripe_error(500, "api_error", "An unknown error occurred (injected by rocket-rides-stripe-mock).");
  }

  http::Response response;
  // Stripe scopes keys to the account, which the API key stands for.
  std::string stored_key = *token + "\n" + key;
  auto stored = key.empty() ? stored_.end() : stored_.find(stored_key);
  if (stored != stored_.end()) {
    if (stored->second.endpoint != endpoint || stored->second.params != params) {
      return stripe_error(400, "idempotency_error",
                          "Keys for idempotent requests can only be used with the same parameters they were first "
                          "used with. Try using a key other than '" +
                              key + "' if you meant to execute a different request.");
    }
    ++stats_.replays;
    response.status = stored->second.status;
    response.body = stored->second.body;
    response.with_header("Idempotent-Replayed", "true");
  } else {
    response = is_charge ? create_charge(params, key) : create_customer(params);
    // Like Stripe, a request rejected by validation never started executing and is not saved.
    if (!key.empty() && response.status != 400) {
      stored_.emplace(stored_key, StoredResponse{endpoint, params, response.status, response.body});
    }
  }
  if (!key.empty()) response.with_header("Idempotency-Key", key);
  if (is_charge && roll(faults_.drop_rate)) {
    ++stats_.drops_injected;
    response.with_header(std::string(http::kDropConnectionHeader), "1");
  }
  return response;
}

bool Mock::roll(double rate) {
  if (rate <= 0) return false;
  return std::uniform_real_distribution<double>(0, 1)(random_) < rate;
}

std::string Mock::new_id(std::string_view prefix) {
  static constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kAlphabet - 2);
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(random_)];
  return id;
}

}  // namespace rr::stripe_mock
