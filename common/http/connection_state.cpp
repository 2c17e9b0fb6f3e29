// Names of the connection states, for the log line of a move the table does not allow.
#include "common/http/connection_state.hpp"

namespace rr::http {

std::string_view state_name(ConnectionState state) {
  switch (state) {
    case ConnectionState::between_requests:
      return "between_requests";
    case ConnectionState::awaiting_request:
      return "awaiting_request";
    case ConnectionState::reading_request:
      return "reading_request";
    case ConnectionState::handling:
      return "handling";
    case ConnectionState::writing_answer:
      return "writing_answer";
    case ConnectionState::refusing:
      return "refusing";
    case ConnectionState::lingering:
      return "lingering";
    case ConnectionState::moving:
      return "moving";
    case ConnectionState::closed:
      return "closed";
  }
  return "unknown";
}

}  // namespace rr::http
