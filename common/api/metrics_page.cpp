// The registry's text plus gauges of this API's own pool, rendered here rather than registered so
// they never outlive it.
#include "common/api/metrics_page.hpp"

#include "common/metrics/registry.hpp"

namespace rr::api {

http::Response MetricsPage::render() const {
  auto stats = pool_.stats();
  std::string body = metrics::default_registry().render();
  body += "# HELP rocket_rides_db_pool_connections Database connections by state.\n";
  body += "# TYPE rocket_rides_db_pool_connections gauge\n";
  body += "rocket_rides_db_pool_connections{state=\"in_use\"} " + std::to_string(stats.in_use) + "\n";
  body += "rocket_rides_db_pool_connections{state=\"idle\"} " + std::to_string(stats.idle) + "\n";
  body += "rocket_rides_db_pool_connections{state=\"max\"} " + std::to_string(stats.size) + "\n";
  body += "# HELP rocket_rides_db_pool_waiting Requests waiting for a database connection.\n";
  body += "# TYPE rocket_rides_db_pool_waiting gauge\n";
  body += "rocket_rides_db_pool_waiting " + std::to_string(stats.waiting) + "\n";
  body +=
      "# HELP rocket_rides_serialization_retries_total Transactions retried after a serialization failure or "
      "deadlock.\n";
  body += "# TYPE rocket_rides_serialization_retries_total counter\n";
  body += "rocket_rides_serialization_retries_total " + std::to_string(runner_.serialization_retries()) + "\n";
  // Coalesced commits: calls / batches is the mean batch; a queue that stays long says the
  // database's round trip, not the API, bounds the rate.
  auto coalesced = runner_.coalesced_calls().totals();
  body += "# HELP rocket_rides_db_coalesced_batches_total Calls of a batch function carrying two requests or more.\n";
  body += "# TYPE rocket_rides_db_coalesced_batches_total counter\n";
  for (const auto& [function, totals] : coalesced) {
    body += "rocket_rides_db_coalesced_batches_total{function=\"" + function + "\"} " + std::to_string(totals.batches) +
            "\n";
  }
  body += "# HELP rocket_rides_db_coalesced_calls_total Requests' calls carried by those batches.\n";
  body += "# TYPE rocket_rides_db_coalesced_calls_total counter\n";
  for (const auto& [function, totals] : coalesced) {
    body += "rocket_rides_db_coalesced_calls_total{function=\"" + function + "\"} " +
            std::to_string(totals.batched_calls) + "\n";
  }
  body += "# HELP rocket_rides_db_coalesced_queued Requests' calls waiting for the batch in flight.\n";
  body += "# TYPE rocket_rides_db_coalesced_queued gauge\n";
  for (const auto& [function, totals] : coalesced) {
    body += "rocket_rides_db_coalesced_queued{function=\"" + function + "\"} " + std::to_string(totals.queued) + "\n";
  }
  return http::Response{200, "text/plain; version=0.0.4", {}, body};
}

}  // namespace rr::api
