// The stand-in provider's request path: request ids and versions, latency, Bearer auth, injected
// failures and drops, and Stripe's idempotency-key semantics around the endpoints in customers.cpp,
// charges.cpp and refunds.cpp, retrieving their objects by id, and their lists (listing.cpp).
#include "tools/stripe_mock/mock.hpp"

#include <algorithm>
#include <optional>

#include "common/base/log.hpp"
#include "common/fiber/fiber.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "common/http/server.hpp"
#include "tools/stripe_mock/objects.hpp"
#include "tools/stripe_mock/stripe_errors.hpp"

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

http::Response unrecognized(const http::Request& request) {
  return stripe_error(404, "invalid_request_error",
                      "Unrecognized request URL (" + request.method + ": " + request.path + ").");
}

// The id in "/v1/charges/{id}", or nothing for another path.
std::optional<std::string> id_in(std::string_view path, std::string_view collection) {
  if (!path.starts_with(collection)) return std::nullopt;
  auto id = path.substr(collection.size());
  if (id.empty() || id.find('/') != std::string_view::npos) return std::nullopt;
  return std::string(id);
}

// Stripe names a wrong key by its last four characters only.
std::string redacted(std::string_view key) {
  if (key.size() <= 4) return "****";
  auto prefix_end = key.find('_', key.find('_') + 1);
  std::string shown = prefix_end != std::string_view::npos && prefix_end + 1 < key.size() - 4
                          ? std::string(key.substr(0, prefix_end + 1))
                          : std::string();
  return shown + "****" + std::string(key.substr(key.size() - 4));
}

std::uint64_t system_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) | device();
}

constexpr char kRequestIdAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

}  // namespace

std::uint64_t Mock::fault_seed(std::uint64_t seed) { return seed ^ 0x9e3779b97f4a7c15ULL; }

Mock::Mock(std::string api_key, Faults faults, std::uint64_t seed, std::size_t max_idempotency_keys)
    : api_key_(std::move(api_key)),
      initial_faults_(faults),
      seed_(seed),
      faults_(faults),
      fault_random_(fault_seed(seed)),
      request_random_(system_seed()),
      ledger_(seed),
      replays_(max_idempotency_keys) {}

http::Response Mock::handle(const http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  std::string request_id;
  {
    std::lock_guard lock(mutex_);
    request_id = new_request_id();
  }
  http::Response response;
  try {
    response = route(request, request_id);
  } catch (const std::exception& e) {
    log::error("stripe mock failed", {{"path", request.path}, {"error", e.what()}});
    response = stripe_error(500, "api_error", "An unknown error occurred.");
  }
  // On every answer, errors included, as Stripe does: clients report the id (stripe-node's
  // lastResponse.requestId), and the version tells them how to read the body.
  response.with_header("Request-Id", request_id);
  auto version = request.header("Stripe-Version");
  response.with_header("Stripe-Version", std::string(version && !version->empty() ? *version : kDefaultStripeVersion));
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  // Never the Authorization header: it carries the secret key.
  log::info("request", {{"method", request.method},
                        {"path", request.path},
                        {"status", response.status},
                        {"request_id", request_id},
                        {"replayed", has_header(response, "Idempotent-Replayed")},
                        {"dropped", has_header(response, http::kDropConnectionHeader)},
                        {"duration", elapsed}});
  return response;
}

http::Response Mock::route(const http::Request& request, const std::string& request_id) {
  if (request.path.starts_with("/_mock/")) return admin(request);
  if (request.path.starts_with("/v1/")) return api(request, request_id);
  return unrecognized(request);
}

bool Mock::held() {
  std::lock_guard lock(mutex_);
  return faults_.hold;
}

bool Mock::authorized(const http::Request& request) const {
  auto token = bearer_token(request);
  return token && (api_key_.empty() || *token == api_key_);
}

http::Response Mock::api(const http::Request& request, const std::string& request_id) {
  std::chrono::milliseconds latency;
  {
    std::lock_guard lock(mutex_);
    ++stats_.requests;
    latency = faults_.latency;
  }
  // Outside the lock: a slow provider is slow for everyone at once, not one request at a time.
  if (latency.count() > 0) fiber::sleep_for(latency);  // a fiber's sleep, or the worker's
  for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kMaxLatencyMs);
       held() && std::chrono::steady_clock::now() < until;) {
    fiber::sleep_for(kHoldPollInterval);
  }

  auto token = bearer_token(request);
  if (!token) {
    return stripe_error(401, "invalid_request_error",
                        "You did not provide an API key. You need to provide your API key in the Authorization "
                        "header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').");
  }
  if (!authorized(request)) {
    return stripe_error(401, "invalid_request_error", "Invalid API Key provided: " + redacted(*token));
  }
  if (request.method == "GET" && (request.path == "/v1/charges" || request.path == "/v1/refunds")) {
    return list(request);
  }
  if (request.method == "GET") return retrieve(request.path);
  return create(request, request_id, *token);
}

http::Response Mock::create(const http::Request& request, const std::string& request_id, const std::string& account) {
  std::string endpoint_name = request.method + " " + request.path;
  Endpoint endpoint;
  if (endpoint_name == "POST /v1/charges") {
    endpoint = Endpoint::charges;
  } else if (endpoint_name == "POST /v1/refunds") {
    endpoint = Endpoint::refunds;
  } else if (endpoint_name == "POST /v1/customers") {
    endpoint = Endpoint::customers;
  } else {
    return unrecognized(request);
  }
  bool faults_apply = endpoint != Endpoint::customers;  // the foreign mutations worth testing
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
  if (faults_apply && inject_failure()) {
    return stripe_error(500, "api_error", "An unknown error occurred (injected by rocket-rides-stripe-mock).");
  }

  http::Response response;
  auto digest = params_digest(params);
  auto now = now_epoch();
  // Stripe scopes keys to the account, which the API key stands for.
  const StoredRequest* stored = key.empty() ? nullptr : replays_.find(account, key, ledger_, now);
  if (stored) {
    if (stored->endpoint != endpoint || stored->params_digest != digest) {
      return stripe_error(400, "idempotency_error",
                          "Keys for idempotent requests can only be used with the same parameters they were first "
                          "used with. Try using a key other than '" +
                              key + "' if you meant to execute a different request.");
    }
    ++stats_.replays;
    response = replay(*stored);
    response.with_header("Idempotent-Replayed", "true");
    response.with_header("Original-Request", "req_" + std::string(stored->request_id.data(), kRequestIdLength));
  } else {
    Created created;
    switch (endpoint) {
      case Endpoint::charges:
        created = create_charge(params, key);
        break;
      case Endpoint::refunds:
        created = create_refund(params, key);
        break;
      case Endpoint::customers:
        created = create_customer(params, key);
        break;
    }
    response = std::move(created.response);
    // Like Stripe, a request that was refused (validation, unknown object) never started
    // executing and is not saved; what it did (an object, a decline) is.
    if (!key.empty() && created.object != kNoObject) {
      StoredRequest entry{.endpoint = endpoint,
                          .status = static_cast<std::uint16_t>(response.status),
                          .object = created.object,
                          .params_digest = digest};
      std::copy_n(request_id.begin() + 4, kRequestIdLength, entry.request_id.begin());
      replays_.add(account, key, entry, now);
    }
  }
  if (!key.empty()) response.with_header("Idempotency-Key", key);
  if (faults_apply && inject_drop()) response.with_header(std::string(http::kDropConnectionHeader), "1");
  return response;
}

http::Response Mock::replay(const StoredRequest& stored) const {
  http::Response response;
  switch (stored.endpoint) {
    case Endpoint::charges:
      if (stored.status == 402) return card_declined(ledger_.charge_id(ledger_.charge(stored.object)));
      // The charge as the first answer showed it: a refund since then is not part of that answer.
      response.body = charge_json(ledger_, stored.object, ChargeMoment::as_created);
      break;
    case Endpoint::refunds:
      response.body = refund_json(ledger_, stored.object);
      break;
    case Endpoint::customers:
      response.body = customer_json(ledger_.customer(stored.object));
      break;
  }
  return response;
}

http::Response Mock::list(const http::Request& request) {
  bool charges = request.path == "/v1/charges";
  auto query = parse_list_query(request.query, charges ? "customer" : "charge");
  if (auto* refused = std::get_if<http::Response>(&query)) return std::move(*refused);
  std::lock_guard lock(mutex_);
  // A listing fails and drops like the charges it lists: a reconciliation paging through them
  // must survive a provider that fails halfway.
  if (inject_failure()) {
    return stripe_error(500, "api_error", "An unknown error occurred (injected by rocket-rides-stripe-mock).");
  }
  auto response = charges ? list_charges(std::get<ListQuery>(query)) : list_refunds(std::get<ListQuery>(query));
  if (inject_drop()) response.with_header(std::string(http::kDropConnectionHeader), "1");
  return response;
}

http::Response Mock::retrieve(const std::string& path) {
  auto found = [](std::string body) {
    http::Response response;
    response.body = std::move(body);
    return response;
  };
  std::lock_guard lock(mutex_);
  if (auto id = id_in(path, "/v1/charges/")) {
    auto charge = ledger_.find_charge(*id);
    return charge ? found(charge_json(ledger_, *charge, ChargeMoment::now)) : no_such("charge", *id, "id");
  }
  if (auto id = id_in(path, "/v1/refunds/")) {
    auto refund = ledger_.find_refund(*id);
    return refund ? found(refund_json(ledger_, *refund)) : no_such("refund", *id, "id");
  }
  if (auto id = id_in(path, "/v1/customers/")) {
    auto customer = ledger_.find_customer(*id);
    return customer ? found(customer_json(ledger_.customer(*customer))) : no_such("customer", *id, "id");
  }
  return stripe_error(404, "invalid_request_error", "Unrecognized request URL (GET: " + path + ").");
}

bool Mock::inject_failure() {
  bool fail = faults_.fail_next > 0 || roll(faults_.failure_rate);
  if (!fail) return false;
  if (faults_.fail_next > 0) --faults_.fail_next;
  ++stats_.failures_injected;
  return true;
}

bool Mock::inject_drop() {
  bool drop = faults_.drop_next > 0 || roll(faults_.drop_rate);
  if (!drop) return false;
  if (faults_.drop_next > 0) --faults_.drop_next;
  ++stats_.drops_injected;
  return true;
}

bool Mock::roll(double rate) {
  if (rate <= 0) return false;
  return std::uniform_real_distribution<double>(0, 1)(fault_random_) < rate;
}

std::string Mock::new_request_id() {
  // Stripe's request ids: "req_" and 14 letters and digits.
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kRequestIdAlphabet - 2);
  std::string id("req_");
  for (int i = 0; i < 14; ++i) id += kRequestIdAlphabet[pick(request_random_)];
  return id;
}

}  // namespace rr::stripe_mock
