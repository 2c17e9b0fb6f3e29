// The HTTP server's options for the tests that reach its limits with little traffic.
#pragma once

#include "common/http/server.hpp"

namespace rr::test {

// Four workers and a 1 KiB body limit: a handful of requests fills them.
inline http::ServerOptions small_options() {
  http::ServerOptions options;
  options.worker_threads = 4;
  options.body_limit = 1024;
  return options;
}

}  // namespace rr::test
