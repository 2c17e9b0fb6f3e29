// Configuration parsing: defaults, every kind of bad value, and the variable named in the error.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <thread>
#include <vector>

#include "common/api/connection_budget.hpp"
#include "common/api_app/api_settings.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/http/connection_limit.hpp"
#include "common/maintenance/reaper_settings.hpp"

using rr::config::ConfigError;
using rr::config::Environment;

namespace {

// Runs `parse` and returns the variable its ConfigError names, or "" when it did not throw.
template <typename F>
std::string failing_variable(F&& parse) {
  try {
    parse();
  } catch (const ConfigError& e) {
    return e.variable();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(configuration)

BOOST_AUTO_TEST_CASE(missing_database_url_is_named) {
  auto env = Environment::from_map({});
  BOOST_TEST(failing_variable([&] { rr::config::DatabaseSettings::from_env(env); }) == "DATABASE_URL");
}

BOOST_AUTO_TEST_CASE(empty_value_counts_as_missing) {
  auto env = Environment::from_map({{"DATABASE_URL", ""}});
  BOOST_TEST(failing_variable([&] { rr::config::DatabaseSettings::from_env(env); }) == "DATABASE_URL");
}

BOOST_AUTO_TEST_CASE(database_url_must_be_a_postgres_uri) {
  auto env = Environment::from_map({{"DATABASE_URL", "mysql://localhost/x"}});
  BOOST_TEST(failing_variable([&] { rr::config::DatabaseSettings::from_env(env); }) == "DATABASE_URL");
  auto good = Environment::from_map({{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"}});
  // Kept as given, with the TCP liveness parameters after it (common/db/tcp_keepalives.hpp).
  BOOST_TEST(
      rr::config::DatabaseSettings::from_env(good).url.starts_with("postgres://u@127.0.0.1:5432/db?keepalives=1&"));
}

BOOST_AUTO_TEST_CASE(url_errors_never_echo_the_value_which_may_hold_a_password) {
  auto env = Environment::from_map({{"DATABASE_URL", "mysql://user:s3cret@host/db"}});
  try {
    rr::config::DatabaseSettings::from_env(env);
    BOOST_FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("s3cret") == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(payment_settings_have_design_defaults) {
  auto env = Environment::from_map({{"STRIPE_API_KEY", "sk_test_x"}});
  auto settings = rr::config::PaymentSettings::from_env(env);
  BOOST_TEST(settings.api_base == "https://api.stripe.com");
  BOOST_TEST(settings.timeout.count() == 10000);
}

BOOST_AUTO_TEST_CASE(payment_base_loses_trailing_slashes) {
  auto env = Environment::from_map({{"STRIPE_API_KEY", "k"}, {"STRIPE_API_BASE", "http://127.0.0.1:9/"}});
  BOOST_TEST(rr::config::PaymentSettings::from_env(env).api_base == "http://127.0.0.1:9");
}

BOOST_AUTO_TEST_CASE(missing_stripe_key_is_named) {
  auto env = Environment::from_map({});
  BOOST_TEST(failing_variable([&] { rr::config::PaymentSettings::from_env(env); }) == "STRIPE_API_KEY");
}

BOOST_AUTO_TEST_CASE(a_live_stripe_key_refuses_a_missing_or_short_provider_key_secret) {
  for (const char* live : {"sk_live_abc", "rk_live_abc"}) {
    auto missing = Environment::from_map({{"STRIPE_API_KEY", live}});
    BOOST_TEST(failing_variable([&] { rr::config::PaymentSettings::from_env(missing); }) == "PROVIDER_KEY_SECRET",
               live);
    auto short_secret =
        Environment::from_map({{"STRIPE_API_KEY", live}, {"PROVIDER_KEY_SECRET", std::string(31, 's')}});
    BOOST_TEST(failing_variable([&] { rr::config::PaymentSettings::from_env(short_secret); }) == "PROVIDER_KEY_SECRET",
               live);
    auto enough = Environment::from_map({{"STRIPE_API_KEY", live}, {"PROVIDER_KEY_SECRET", std::string(32, 's')}});
    auto settings = rr::config::PaymentSettings::from_env(enough);
    BOOST_TEST(settings.provider_key_secret == std::string(32, 's'));
    BOOST_TEST(!settings.development_provider_key_secret);
  }
}

BOOST_AUTO_TEST_CASE(a_test_stripe_key_without_a_secret_derives_from_the_development_secret) {
  auto settings = rr::config::PaymentSettings::from_env(Environment::from_map({{"STRIPE_API_KEY", "sk_test_x"}}));
  BOOST_TEST(settings.provider_key_secret == rr::config::kDevelopmentProviderKeySecret);
  BOOST_TEST(settings.development_provider_key_secret);
  // A live-looking word elsewhere in a test key is not a live key.
  BOOST_TEST(!rr::config::is_live_stripe_key("sk_test_sk_live_"));
  BOOST_TEST(rr::config::is_live_stripe_key("sk_live_x"));
}

BOOST_AUTO_TEST_CASE(reaper_max_age_below_the_providers_key_window_is_refused_with_the_reason) {
  auto with_max_age = [](const char* seconds) {
    return Environment::from_map({{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"}, {"REAPER_MAX_AGE", seconds}});
  };
  for (const char* too_short : {"3600", "86400", "89999"}) {
    auto env = with_max_age(too_short);
    try {
      rr::maintenance::ReaperSettings::from_env(env);
      BOOST_ERROR(too_short << " was accepted");
    } catch (const ConfigError& e) {
      BOOST_TEST(e.variable() == "REAPER_MAX_AGE");
      BOOST_TEST(e.problem().find("24 h") != std::string::npos, e.problem());
    }
  }
  BOOST_TEST(rr::maintenance::ReaperSettings::from_env(with_max_age("90000")).max_age.count() == 90000 * 1000);
}

BOOST_AUTO_TEST_CASE(bad_seconds_values_are_rejected) {
  for (const char* bad : {"abc", "-1", "1e3", "0x10", "nan", "inf", "10s", " 5", "0"}) {
    auto env = Environment::from_map({{"IDEMPOTENCY_KEY_LOCK_TIMEOUT", bad}});
    BOOST_TEST(failing_variable([&] { rr::config::WorkflowSettings::from_env(env); }) == "IDEMPOTENCY_KEY_LOCK_TIMEOUT",
               "value " << bad);
  }
}

BOOST_AUTO_TEST_CASE(seconds_accept_decimals) {
  auto env = Environment::from_map({{"IDEMPOTENCY_KEY_LOCK_TIMEOUT", "1.5"}});
  BOOST_TEST(rr::config::WorkflowSettings::from_env(env).lock_timeout.count() == 1500);
  BOOST_TEST(rr::config::WorkflowSettings::from_env(Environment::from_map({})).lock_timeout.count() == 90000);
}

BOOST_AUTO_TEST_CASE(bad_integers_and_ports_are_rejected) {
  for (const char* bad : {"0", "-5", "1.5", "ten", "100001", "99999999999999999999"}) {
    auto env = Environment::from_map({{"ENQUEUER_BATCH_SIZE", bad}});
    BOOST_TEST(
        failing_variable([&] { rr::config::LoopSettings::from_env(env, "ENQUEUER", 1); }) == "ENQUEUER_BATCH_SIZE",
        "value " << bad);
  }
  for (const char* bad : {"0", "65536", "http", "-1"}) {
    auto env = Environment::from_map({{"METRICS_PORT", bad}});
    BOOST_TEST(failing_variable([&] { rr::config::LoopSettings::from_env(env, "REAPER", 1); }) == "METRICS_PORT",
               "value " << bad);
  }
}

BOOST_AUTO_TEST_CASE(loop_settings_defaults) {
  auto settings = rr::config::LoopSettings::from_env(Environment::from_map({}), "COMPLETER", 5);
  BOOST_TEST(settings.batch_size == 1000);
  BOOST_TEST(settings.idle_sleep.count() == 5000);
  BOOST_TEST(settings.metrics.port == 0);
  BOOST_TEST(settings.shutdown_timeout.count() == 25000);
}

BOOST_AUTO_TEST_CASE(finite_decimal_parser_is_strict) {
  using rr::config::parse_finite_decimal;
  BOOST_TEST(parse_finite_decimal("37.7749").value() == 37.7749);
  BOOST_TEST(parse_finite_decimal("-122").value() == -122.0);
  BOOST_TEST(parse_finite_decimal("+0.5").value() == 0.5);
  BOOST_TEST(parse_finite_decimal(".5").value() == 0.5);
  for (std::string bad : std::vector<std::string>{"", "-", ".", "1.2.3", "NaN", "inf", "0x1A", "1e5", "12abc", "1 ",
                                                  std::string("1\0", 2)}) {
    BOOST_TEST(!parse_finite_decimal(bad).has_value(), "value " << bad);
  }
}

BOOST_AUTO_TEST_CASE(api_threads_and_response_memory_have_defaults_and_bounds) {
  std::map<std::string, std::string> base{{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"}, {"STRIPE_API_KEY", "k"}};
  auto defaults = rr::api::ApiSettings::from_env(Environment::from_map(base));
  BOOST_TEST(defaults.io_threads ==
             static_cast<std::size_t>(std::clamp<int>(static_cast<int>(std::thread::hardware_concurrency()), 1, 8)));
  BOOST_TEST(defaults.response_cache_ttl.count() == 60000);
  BOOST_TEST(defaults.response_cache_size == 10000u);
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(base.begin(), base.end());
    return Environment::from_map(extra);
  };
  auto set = rr::api::ApiSettings::from_env(
      with({{"API_IO_THREADS", "3"}, {"RESPONSE_CACHE_TTL", "0"}, {"RESPONSE_CACHE_SIZE", "5"}}));
  BOOST_TEST(set.io_threads == 3u);
  BOOST_TEST(set.response_cache_ttl.count() == 0);
  BOOST_TEST(set.response_cache_size == 5u);
  for (const char* name : {"API_IO_THREADS", "RESPONSE_CACHE_TTL", "RESPONSE_CACHE_SIZE"}) {
    BOOST_TEST(failing_variable([&] { rr::api::ApiSettings::from_env(with({{name, "-1"}})); }) == name);
  }
  BOOST_TEST(failing_variable([&] {
               rr::api::ApiSettings::from_env(with({{"API_IO_THREADS", "0"}}));
             }) == "API_IO_THREADS");
}

BOOST_AUTO_TEST_CASE(shutdown_drain_is_seconds_between_0_and_3600_and_off_by_default) {
  std::map<std::string, std::string> base{{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"}, {"STRIPE_API_KEY", "k"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(base.begin(), base.end());
    return Environment::from_map(extra);
  };
  BOOST_TEST(rr::api::ApiSettings::from_env(with({})).shutdown_drain.count() == 0);
  BOOST_TEST(rr::api::ApiSettings::from_env(with({{"SHUTDOWN_DRAIN", "10"}})).shutdown_drain.count() == 10000);
  BOOST_TEST(rr::api::ApiSettings::from_env(with({{"SHUTDOWN_DRAIN", "0.25"}})).shutdown_drain.count() == 250);
  BOOST_TEST(rr::api::ApiSettings::from_env(with({{"SHUTDOWN_DRAIN", "3600"}})).shutdown_drain.count() == 3600000);
  for (const char* bad : {"-1", "3601", "ten", "1e3", "5s"}) {
    BOOST_TEST(failing_variable([&] {
                 rr::api::ApiSettings::from_env(with({{"SHUTDOWN_DRAIN", bad}}));
               }) == "SHUTDOWN_DRAIN",
               "value " << bad);
  }
}

BOOST_AUTO_TEST_CASE(idempotency_max_wait_is_whole_seconds_up_to_300_and_10_by_default) {
  std::map<std::string, std::string> base{{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"}, {"STRIPE_API_KEY", "k"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(base.begin(), base.end());
    return Environment::from_map(extra);
  };
  BOOST_TEST(rr::api::ApiSettings::from_env(with({})).idempotency_max_wait.count() == 10);
  BOOST_TEST(rr::api::ApiSettings::from_env(with({{"IDEMPOTENCY_MAX_WAIT", "0"}})).idempotency_max_wait.count() == 0);
  BOOST_TEST(rr::api::ApiSettings::from_env(with({{"IDEMPOTENCY_MAX_WAIT", "300"}})).idempotency_max_wait.count() ==
             300);
  for (const char* bad : {"-1", "301", "0.5", "ten", "5s"}) {
    BOOST_TEST(failing_variable([&] {
                 rr::api::ApiSettings::from_env(with({{"IDEMPOTENCY_MAX_WAIT", bad}}));
               }) == "IDEMPOTENCY_MAX_WAIT",
               "value " << bad);
  }
}

BOOST_AUTO_TEST_CASE(idempotency_max_waiters_per_user_is_64_by_default_and_at_most_the_processs_waiters) {
  std::map<std::string, std::string> base{{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"}, {"STRIPE_API_KEY", "k"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(base.begin(), base.end());
    return Environment::from_map(extra);
  };
  BOOST_TEST(rr::api::ApiSettings::from_env(with({})).idempotency_max_waiters_per_user == 64u);
  for (const char* good : {"1", "1024"}) {
    BOOST_TEST(rr::api::ApiSettings::from_env(with({{"IDEMPOTENCY_MAX_WAITERS_PER_USER", good}}))
                   .idempotency_max_waiters_per_user == std::stoul(good));
  }
  for (const char* bad : {"0", "-1", "1025", "ten", "1.5"}) {
    BOOST_TEST(failing_variable([&] {
                 rr::api::ApiSettings::from_env(with({{"IDEMPOTENCY_MAX_WAITERS_PER_USER", bad}}));
               }) == "IDEMPOTENCY_MAX_WAITERS_PER_USER",
               "value " << bad);
  }
}

BOOST_AUTO_TEST_CASE(hostile_client_limits_have_defaults_and_bounds) {
  std::map<std::string, std::string> base{{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"}, {"STRIPE_API_KEY", "k"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(base.begin(), base.end());
    return Environment::from_map(extra);
  };
  auto defaults = rr::api::ApiSettings::from_env(with({}));
  BOOST_TEST(defaults.max_in_flight_per_user == 8u);
  BOOST_TEST(defaults.max_queued_requests == 256u);
  // The default cap leaves the reserve free below this process's descriptor limit.
  auto limit = rr::http::descriptor_limit();
  BOOST_TEST(defaults.max_fibers == 256u);
  auto reserved = rr::api::reserved_descriptors(defaults.database_pool_size, defaults.worker_threads,
                                                defaults.max_fibers, defaults.io_threads);
  if (limit) BOOST_TEST(defaults.max_connections == *limit - reserved);
  auto set = rr::api::ApiSettings::from_env(
      with({{"API_MAX_CONNECTIONS", "100"}, {"API_MAX_IN_FLIGHT_PER_USER", "2"}, {"API_MAX_QUEUED_REQUESTS", "7"}}));
  BOOST_TEST(set.max_connections == 100u);
  BOOST_TEST(set.max_in_flight_per_user == 2u);
  BOOST_TEST(set.max_queued_requests == 7u);
  BOOST_TEST(rr::api::ApiSettings::from_env(with({{"API_FIBERS", "0"}})).max_fibers == 0u);
  BOOST_CHECK_THROW(rr::api::ApiSettings::from_env(with({{"API_FIBERS", "-1"}})), rr::config::ConfigError);
  for (const char* name : {"API_MAX_CONNECTIONS", "API_MAX_IN_FLIGHT_PER_USER", "API_MAX_QUEUED_REQUESTS"}) {
    for (const char* bad : {"0", "-1", "ten", "1.5"}) {
      BOOST_TEST(failing_variable([&] {
                   rr::api::ApiSettings::from_env(with({{name, bad}}));
                 }) == name,
                 name << "=" << bad);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_connection_cap_stays_below_the_descriptor_limit) {
  auto env = [](std::map<std::string, std::string> values) { return Environment::from_map(std::move(values)); };
  // 256 descriptors, 120 kept for the rest: 136 connections at most, and that is the default.
  BOOST_TEST(rr::api::connection_cap(env({}), 256, 120) == 136u);
  BOOST_TEST(rr::api::connection_cap(env({{"API_MAX_CONNECTIONS", "136"}}), 256, 120) == 136u);
  BOOST_TEST(rr::api::connection_cap(env({{"API_MAX_CONNECTIONS", "50"}}), 256, 120) == 50u);
  for (const char* bad : {"137", "256", "1000"}) {
    BOOST_TEST(failing_variable([&] {
                 rr::api::connection_cap(env({{"API_MAX_CONNECTIONS", bad}}), 256, 120);
               }) == "API_MAX_CONNECTIONS",
               "value " << bad);
  }
  // A limit that leaves (almost) nothing for clients stops the binary rather than starve them.
  BOOST_TEST(failing_variable([&] { rr::api::connection_cap(env({}), 130, 120); }) == "API_MAX_CONNECTIONS");
  // Unlimited descriptors: a fixed default, any positive value.
  BOOST_TEST(rr::api::connection_cap(env({}), std::nullopt, 120) == rr::api::kUnlimitedDefault);
  BOOST_TEST(rr::api::connection_cap(env({{"API_MAX_CONNECTIONS", "500000"}}), std::nullopt, 120) == 500000u);
}

BOOST_AUTO_TEST_SUITE_END()
