// The rider pages' error boundary: what the API's boundary (api::failure_answer) makes of a
// failure, as a page rather than JSON, with the same status and Retry-After.
#pragma once

#include <exception>
#include <utility>

#include "common/http/message.hpp"

namespace rr::web {

http::Response failure_page(const std::exception& error);

template <typename Handle>
http::Response within_page_boundary(Handle&& handle) {
  try {
    return std::forward<Handle>(handle)();
  } catch (const std::exception& e) {
    return failure_page(e);
  }
}

}  // namespace rr::web
