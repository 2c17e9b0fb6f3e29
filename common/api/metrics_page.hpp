// The Prometheus page: the process-wide registry plus one API's pool and runner. Served on
// METRICS_PORT (api/serve.cpp), never on the public port, where /metrics is a 404 like any
// unknown path; so it is no route of the table.
#pragma once

#include "common/db/connection_pool.hpp"
#include "common/http/message.hpp"
#include "common/idempotency/phase_runner.hpp"

namespace rr::api {

class MetricsPage {
 public:
  MetricsPage(const db::ConnectionPool& pool, const idempotency::PhaseRunner& runner) : pool_(pool), runner_(runner) {}

  http::Response render() const;

 private:
  const db::ConnectionPool& pool_;
  const idempotency::PhaseRunner& runner_;
};

}  // namespace rr::api
