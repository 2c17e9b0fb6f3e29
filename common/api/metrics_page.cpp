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
  auto by_function = [&](const std::string& name, const char* type, const char* help, auto value_of) {
    body += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [function, totals] : coalesced) {
      body += name + "{function=\"" + function + "\"} " + std::to_string(value_of(totals)) + "\n";
    }
  };
  using Totals = db::CoalescedCalls::Totals;
  by_function("rocket_rides_db_coalesced_batches_total", "counter",
              "Calls of a batch function carrying two requests or more.", [](const Totals& t) { return t.batches; });
  by_function("rocket_rides_db_coalesced_calls_total", "counter", "Requests' calls carried by those batches.",
              [](const Totals& t) { return t.batched_calls; });
  by_function("rocket_rides_db_coalesced_queued", "gauge", "Requests' calls waiting for the batch in flight.",
              [](const Totals& t) { return t.queued; });
  // Batches that did not answer every request from their rows, by what their requests got
  // instead: only "refused" and "unanswered" run single calls, each request's at most once.
  const std::string fallbacks = "rocket_rides_db_coalesced_fallbacks_total";
  body +=
      "# HELP " + fallbacks + " Coalesced batches that did not answer every request from their own rows, by cause.\n";
  body += "# TYPE " + fallbacks + " counter\n";
  for (const auto& [function, totals] : coalesced) {
    for (std::size_t cause = 0; cause < db::kCoalescedFallbacks; ++cause) {
      body += fallbacks + "{function=\"" + function + "\",cause=\"" +
              std::string(db::fallback_label(static_cast<db::CoalescedFallback>(cause))) + "\"} " +
              std::to_string(totals.fallbacks[cause]) + "\n";
    }
  }
  return http::Response{200, "text/plain; version=0.0.4", {}, body};
}

}  // namespace rr::api
