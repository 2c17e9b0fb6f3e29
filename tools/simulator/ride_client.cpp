// The retrying POST /rides client.
#include "tools/simulator/ride_client.hpp"

#include "common/daemon/backoff.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"

namespace rr::client {

RideAttemptResult create_ride(const RideClientOptions& options, const std::string& idempotency_key,
                              const rides::RideParams& params,
                              const std::function<bool(std::chrono::milliseconds)>& sleep) {
  http::ClientRequest request;
  request.method = "POST";
  request.url = options.api_url + "/rides";
  request.timeout = options.request_timeout;
  request.headers = {{"Authorization", "Bearer " + options.token},
                     {"Idempotency-Key", idempotency_key},
                     {"Content-Type", "application/x-www-form-urlencoded"}};
  request.body = http::form_encode({{"origin_lat", rides::format_coordinate(params.origin_lat)},
                                    {"origin_lon", rides::format_coordinate(params.origin_lon)},
                                    {"target_lat", rides::format_coordinate(params.target_lat)},
                                    {"target_lon", rides::format_coordinate(params.target_lon)}});
  RideAttemptResult result;
  daemon::Backoff backoff(options.retry.base_delay, options.retry.max_delay);
  for (int attempt = 0; attempt < options.retry.max_attempts; ++attempt) {
    if (attempt > 0 && !sleep(backoff.next())) break;
    ++result.attempts;
    try {
      auto response = http::send(request);
      result.status = response.status;
      result.body = response.body;
      if (is_final_status(response.status)) {
        result.final = true;
        result.replayed = response.header("Idempotent-Replayed") == "true";
        return result;
      }
    } catch (const http::TransportError& e) {
      result.status = 0;
      result.body = e.what();
    }
  }
  return result;
}

}  // namespace rr::client
