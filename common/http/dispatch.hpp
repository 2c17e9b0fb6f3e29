// Where a request goes, decided on the I/O thread before any worker sees it: answered there at
// once (health, errors that need no database, replays from memory), or handed to a lane. Lanes
// keep quick operator checks from waiting behind slow work: a request on the worker lane may wait
// seconds for the payment provider, one on the control lane never queues behind it.
#pragma once

#include <functional>
#include <optional>

#include "common/http/message.hpp"

namespace rr::http {

enum class Lane {
  workers,  // the handler pool: database and provider work, bounded queue, 503 when it is full
  control,  // a few threads of their own for short blocking checks such as readiness
  // A fiber on the connection's own I/O thread (common/fiber/fiber.hpp), for handlers whose waits
  // are fiber-aware (a pool checkout, a one-trip SQL call, the provider call) and whose other
  // blocking work goes through fiber::blocking: no hand-off to a worker and back, no thread held
  // while waiting. At ServerOptions::max_fibers, the worker lane instead.
  fibers,
};

struct Dispatch {
  std::optional<Response> answer;  // set: written at once on the I/O thread
  Lane lane = Lane::workers;       // otherwise the lane whose threads run the Handler
};

// Runs on the I/O thread and must never block. It may attach what the handler needs to know
// about the triage to the request (Request::admission).
using Triage = std::function<Dispatch(Request&)>;

}  // namespace rr::http
