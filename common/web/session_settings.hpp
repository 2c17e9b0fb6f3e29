// The rider pages' session settings, parsed with the API's (ApiSettings::sessions).
#pragma once

#include <chrono>

#include "common/config/environment.hpp"

namespace rr::web {

struct SessionSettings {
  // SESSION_TTL seconds, default 43200 (12 h): how long a signed-in browser stays signed in.
  std::chrono::seconds ttl{43200};
  // SESSION_COOKIE_SECURE on|off, default off so the local demo works over http://; production
  // behind TLS turns it on, and browsers then send the cookie over https only.
  bool cookie_secure = false;

  static SessionSettings from_env(const config::Environment& env) {
    SessionSettings settings;
    settings.ttl = std::chrono::seconds(env.integer("SESSION_TTL", 43200, 1, 31536000));
    settings.cookie_secure = env.on_off("SESSION_COOKIE_SECURE", false);
    return settings;
  }
};

}  // namespace rr::web
