// Parsing of the shared settings; defaults follow the design.
#include "common/config/settings.hpp"

#include "common/config/database_tcp.hpp"

namespace rr::config {

DatabaseSettings DatabaseSettings::from_env(const Environment& env) {
  DatabaseSettings settings;
  settings.url = env.url("DATABASE_URL", std::nullopt, {"postgresql://", "postgres://"});
  settings.session.statements =
      env.on_off("DATABASE_PREPARED_STATEMENTS", true) ? db::StatementMode::prepared : db::StatementMode::unnamed;
  settings.session.statement_timeout = env.seconds("DATABASE_STATEMENT_TIMEOUT", 30, 0, 86400);
  settings.session.call_timeout = env.seconds("DATABASE_CALL_TIMEOUT", 35, 0, 86400);
  settings.url = with_database_tcp_settings(env, settings.url);
  return settings;
}

RedisSettings RedisSettings::from_env(const Environment& env) {
  return {env.url("REDIS_URL", std::nullopt, {"redis://", "unix://", "/"})};
}

PaymentSettings PaymentSettings::from_env(const Environment& env) {
  PaymentSettings settings;
  settings.api_base = env.url("STRIPE_API_BASE", "https://api.stripe.com", {"https://", "http://"});
  while (settings.api_base.ends_with('/')) settings.api_base.pop_back();
  settings.api_key = env.required_string("STRIPE_API_KEY");
  settings.timeout = env.seconds("STRIPE_TIMEOUT", 10, 0.05, 300);
  auto secret = env.get("PROVIDER_KEY_SECRET");
  if (is_live_stripe_key(settings.api_key) && (!secret || secret->size() < kMinProviderKeySecretBytes)) {
    // A short secret makes guessable provider keys, and a missing one would mean the development
    // secret, the same in every deployment: neither may charge real cards.
    std::string needed =
        "at least " + std::to_string(kMinProviderKeySecretBytes) +
        " bytes are required when STRIPE_API_KEY is a live key (it keys the provider idempotency keys)";
    throw ConfigError("PROVIDER_KEY_SECRET",
                      secret ? "is " + std::to_string(secret->size()) + " bytes; " + needed : "is not set; " + needed);
  }
  settings.provider_key_secret = secret.value_or(kDevelopmentProviderKeySecret);
  settings.development_provider_key_secret = !secret;
  return settings;
}

bool is_live_stripe_key(std::string_view api_key) {
  return api_key.starts_with("sk_live_") || api_key.starts_with("rk_live_");
}

WorkflowSettings WorkflowSettings::from_env(const Environment& env) {
  return {env.seconds("IDEMPOTENCY_KEY_LOCK_TIMEOUT", 90, 1, 86400)};
}

MetricsSettings MetricsSettings::from_env(const Environment& env) {
  MetricsSettings settings;
  settings.port = env.get("METRICS_PORT") ? env.port("METRICS_PORT", std::nullopt) : 0;
  settings.address = env.string_or("METRICS_ADDRESS", "127.0.0.1");
  return settings;
}

LoopSettings LoopSettings::from_env(const Environment& env, const std::string& prefix, double default_idle_sleep) {
  LoopSettings settings;
  settings.batch_size = env.integer(prefix + "_BATCH_SIZE", 1000, 1, 100000);
  settings.idle_sleep = env.seconds(prefix + "_IDLE_SLEEP", default_idle_sleep, 0.01, 3600);
  settings.max_backoff = env.seconds(prefix + "_MAX_BACKOFF", 30, 0.1, 3600);
  settings.metrics = MetricsSettings::from_env(env);
  settings.shutdown_timeout = env.seconds("SHUTDOWN_TIMEOUT", 25, 0, 3600);
  return settings;
}

}  // namespace rr::config
